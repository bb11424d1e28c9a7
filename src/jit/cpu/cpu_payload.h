/*
** cpu_payload.h -- the payload of a CPU kernel's entry in the offline cache
** (kcache.c holds it opaquely; docs/cache.md):
**
**   u32 ntasks, u32 needs_runtime (0 or 1), u32 nobjects (1..ntasks, at most
**   CPU_PAYLOAD_MAX_OBJECTS), then per object a u64 size and the object file
**
** all little-endian, the objects' sizes adding up to exactly the payload.
** Pure C without LLVM, so the fuzz harness of the cache reader parses every
** payload it gets out of an entry (tests/fuzz/fuzz_cache.c).
*/
#ifndef LATTICE_CPU_PAYLOAD_H
#define LATTICE_CPU_PAYLOAD_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#define CPU_PAYLOAD_MAX_OBJECTS 8
#define CPU_PAYLOAD_HEADER 12   /* bytes before the first object's size */

typedef struct {
  bool needs_runtime;
  int nobjects;
  const unsigned char *object[CPU_PAYLOAD_MAX_OBJECTS];   /* into the parsed bytes */
  size_t size[CPU_PAYLOAD_MAX_OBJECTS];
} cpu_payload;

/* Whether the n bytes at b are a payload for a kernel of ntasks tasks (every
** count in range, the sizes adding up to n, each object an ELF file by its
** magic), and if so its parts in *out. What is inside an object is not
** checked: an entry is trusted like the Lattice binary, and one the JIT
** cannot link is compiled afresh. */
bool cpu_payload_parse(const unsigned char *b, size_t n, int ntasks, cpu_payload *out);

/* Bytes of a payload of nobjects objects whose sizes add up to object_bytes. */
size_t cpu_payload_bytes(int nobjects, size_t object_bytes);
/* Writes the header at b; returns where the first object's size goes. */
size_t cpu_payload_put_header(unsigned char *b, int ntasks, bool needs_runtime, int nobjects);
/* Writes one object (its size, then its bytes) at b + at; returns the offset after it. */
size_t cpu_payload_put_object(unsigned char *b, size_t at, const void *object, size_t size);

#endif
