/*
** test_rt_print.c -- the print buffer's reservations (src/runtime/print.c):
** records lie back to back; one that does not fit is dropped and counted,
** and the record crossing the end leaves an end mark (string -1) where the
** records end, so the host never reads the unwritten rest of the buffer
** (which held a stale record from an earlier launch, printed as a line
** of nils before the mark existed).
*/
#include <stdint.h>
#include <string.h>

#include "check.h"
#include "runtime/builtins.h"

int main(void) {
  /* records of 3 values: 16 + 3 * 16 = 64 bytes; 4 fit in 300, 44 bytes stay */
  static char buf[300];
  rt_builtins b = {.print_data = buf, .print_cap = sizeof buf};
  rt_context ctx = {0};
  ctx.builtins = &b;
  /* stale data: what an earlier launch left, a plausible record at 256 */
  memset(buf, 0x5a, sizeof buf);
  rt_print_header stale = {.bytes = 32, .string = 0, .nvalues = 1};
  memcpy(buf + 256, &stale, sizeof stale);
  for (int i = 0; i < 4; i++) {
    char *slots = rt_print_reserve(&ctx, 7, 3);
    CHECK(slots == buf + 64 * i + (int)sizeof(rt_print_header));
  }
  CHECK(rt_print_reserve(&ctx, 7, 3) == NULL);   /* crosses the end */
  CHECK(rt_print_reserve(&ctx, 7, 1) == NULL);   /* after it: dropped too */
  CHECK(b.print_dropped == 2 && b.print_used == 4 * 64 + 64 + 32);
  rt_print_header end;
  memcpy(&end, buf + 256, sizeof end);
  CHECK(end.string == -1 && end.bytes == sizeof buf - 256 && end.nvalues == 0);
  for (int i = 0; i < 4; i++) {
    rt_print_header h;
    memcpy(&h, buf + 64 * i, sizeof h);
    CHECK(h.bytes == 64 && h.string == 7 && h.nvalues == 3);
  }

  /* less than a header left: no mark (the host stops there anyway) */
  static char small[70];
  rt_builtins s = {.print_data = small, .print_cap = sizeof small};
  ctx.builtins = &s;
  CHECK(rt_print_reserve(&ctx, 1, 3) == small + sizeof(rt_print_header));
  memset(small + 64, 0x5a, 6);
  CHECK(rt_print_reserve(&ctx, 1, 3) == NULL);
  CHECK((unsigned char)small[64] == 0x5a && s.print_dropped == 1);
  return check_finish("test_rt_print");
}
