/*
** builtins.h -- device-side state of the kernel builtins: the random number
** generator's key and the print buffer (docs/runtime.md, "Random numbers"
** and "The print buffer").
**
** One rt_builtins per program, reached through rt_context.builtins. It holds
** no per-thread state: lt.random is counter-based (a hash of seed, launch
** number, site, stream and draw number), so it needs nothing but the key,
** and the print buffer is one array that threads reserve records in with an
** atomic add. Both work unchanged for one CPU worker or for 10^6 GPU threads;
** on CUDA the struct and the buffer live in device memory.
** Freestanding C (compiled to bitcode and natively), like runtime.h.
*/
#ifndef LATTICE_RT_BUILTINS_H
#define LATTICE_RT_BUILTINS_H

#include <stdint.h>

#include "context.h"

typedef struct rt_builtins {
  uint64_t seed;                 /* lt.init{seed = ...} */
  uint64_t launch;               /* number of the current launch in the program
                                    (the host counts launches) */
  char *print_data;              /* print records, print_cap bytes */
  uint64_t print_cap;
  uint64_t print_used;           /* bytes reserved (atomic; may pass print_cap) */
  uint64_t print_dropped;        /* records that did not fit (atomic) */
} rt_builtins;

/* ---- random.c ------------------------------------------------------------ */
/* 64 random bits for draw `draw` of stream `stream` at site `site` of the
** current launch: a pure function of (seed, launch, site, stream, draw). */
uint64_t rt_random_bits(rt_context *ctx, int32_t site, int32_t stream, int32_t draw);
/* The same without a context (host side: lt.random in Lua scope). */
uint64_t rt_random_hash(uint64_t seed, uint64_t launch, uint32_t site, uint32_t stream, uint32_t draw);

/* ---- print.c ----------------------------------------------------------------
** A record is a header followed by nvalues value slots:
**   header: u32 bytes (of the whole record), i32 string (the format in the
**           kernel's string table), i32 nvalues, i32 unused
**   slot:   u32 type (ir_type number), u32 unused, u64 bits (integers sign-
**           or zero-extended, f32 as its 32-bit pattern, f64 as its bits)
** Records are reserved with one atomic add, so the buffer holds them in the
** order threads reserved them: each thread's records in program order. A
** record that does not fit is dropped (counted), and so is every later one;
** the one that crosses the end leaves a header with string -1 there (when
** one fits), the end of the records. */
typedef struct {
  uint32_t bytes;
  int32_t string, nvalues, unused;
} rt_print_header;
typedef struct {
  uint32_t type, unused;
  uint64_t bits;
} rt_print_slot;

/* The slots of a new record (header filled), or 0 when the buffer is full. */
char *rt_print_reserve(rt_context *ctx, int32_t string, int32_t nvalues);

#endif
