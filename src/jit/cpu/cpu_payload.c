/*
** cpu_payload.c -- see cpu_payload.h.
*/
#include "cpu_payload.h"

#include <string.h>

static uint32_t get32(const unsigned char *b) {
  return (uint32_t)b[0] | (uint32_t)b[1] << 8 | (uint32_t)b[2] << 16 | (uint32_t)b[3] << 24;
}
static uint64_t get64(const unsigned char *b) { return (uint64_t)get32(b) | (uint64_t)get32(b + 4) << 32; }
static void put32(unsigned char *b, uint32_t v) {
  for (int i = 0; i < 4; i++) b[i] = (unsigned char)(v >> (8 * i));
}

bool cpu_payload_parse(const unsigned char *b, size_t n, int ntasks, cpu_payload *out) {
  if (n < CPU_PAYLOAD_HEADER || ntasks < 0 || get32(b) != (uint32_t)ntasks || get32(b + 4) > 1) return false;
  uint32_t nobj = get32(b + 8);
  if (nobj < 1 || nobj > CPU_PAYLOAD_MAX_OBJECTS || (ntasks > 0 && nobj > (uint32_t)ntasks)) return false;
  out->needs_runtime = get32(b + 4) != 0;
  out->nobjects = (int)nobj;
  size_t at = CPU_PAYLOAD_HEADER;
  for (uint32_t i = 0; i < nobj; i++) {
    if (n - at < 8) return false;
    uint64_t size = get64(b + at);
    at += 8;
    if (size < 4 || size > n - at || memcmp(b + at, "\177ELF", 4) != 0) return false;
    out->object[i] = b + at;
    out->size[i] = (size_t)size;
    at += (size_t)size;
  }
  return at == n;
}

size_t cpu_payload_bytes(int nobjects, size_t object_bytes) {
  return CPU_PAYLOAD_HEADER + 8 * (size_t)nobjects + object_bytes;
}

size_t cpu_payload_put_header(unsigned char *b, int ntasks, bool needs_runtime, int nobjects) {
  put32(b, (uint32_t)ntasks);
  put32(b + 4, needs_runtime ? 1 : 0);
  put32(b + 8, (uint32_t)nobjects);
  return CPU_PAYLOAD_HEADER;
}

size_t cpu_payload_put_object(unsigned char *b, size_t at, const void *object, size_t size) {
  put32(b + at, (uint32_t)size);
  put32(b + at + 4, (uint32_t)((uint64_t)size >> 32));
  memcpy(b + at + 8, object, size);
  return at + 8 + size;
}
