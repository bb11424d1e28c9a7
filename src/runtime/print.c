/*
** print.c -- print(...) in kernels: records in one buffer (device runtime).
**
** Threads reserve records with an atomic add on print_used; the host formats
** them in buffer order after the kernel ends (src/lang/builtins_host.c).
** A record that does not fit is counted in print_dropped, never written.
*/
#include "builtins.h"

char *rt_print_reserve(rt_context *ctx, int32_t string, int32_t nvalues) {
  rt_builtins *b = ctx->builtins;
  if (!b || !b->print_data) return 0;
  uint64_t bytes = sizeof(rt_print_header) + (uint64_t)nvalues * sizeof(rt_print_slot);
  uint64_t start = __atomic_fetch_add(&b->print_used, bytes, __ATOMIC_RELAXED);
  if (start > b->print_cap || bytes > b->print_cap - start) {
    /* the one record that crosses the end marks where the records end (no
    ** later one is written), so the host does not read the unwritten rest */
    if (start < b->print_cap && b->print_cap - start >= sizeof(rt_print_header)) {
      rt_print_header *end = (rt_print_header *)(b->print_data + start);
      end->bytes = (uint32_t)(b->print_cap - start);
      end->string = -1;
      end->nvalues = end->unused = 0;
    }
    __atomic_fetch_add(&b->print_dropped, 1, __ATOMIC_RELAXED);
    return 0;
  }
  rt_print_header *h = (rt_print_header *)(b->print_data + start);
  h->bytes = (uint32_t)bytes;
  h->string = string;
  h->nvalues = nvalues;
  h->unused = 0;
  return (char *)(h + 1);
}
