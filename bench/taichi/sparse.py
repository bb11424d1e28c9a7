"""sparse.py -- the Taichi half of bench/run.sh's sparse rows (bench/sparse.lua
is the Lattice half, bench/sparse_laplace.c and sparse_activate.c the C
references): the same grid, the same blocks (sparse_blocks.h's generator),
the same kernels and checksums.
    python bench/taichi/sparse.py [--threads T] [--reps R] [--fast-math on|off]
Prints:
    laplace_ti_ms PCT MS     5-point Laplacian as a struct-for over
                             ti.root.pointer(ti.ij, 256).dense(ti.ij, 16), PCT% active
    laplace_ti_sum PCT S     its checksum (sparse_laplace.c prints the same)
    activate_ti_ms MS        activation throughput (sparse_activate.c's loop),
    activate_ti_writes / _blocks / _sum   and what it wrote
"""
import os
import sys

sys.dont_write_bytecode = True   # no __pycache__ in the source tree
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from common import options, init, median, ms, check  # noqa: E402

import numpy as np  # noqa: E402
import taichi as ti  # noqa: E402

opts = options("bench/taichi/sparse.py")
N, B = 4096, 16
NB = N // B
SEED = 2463534242
PCTS = (1, 10, 50)
W, ACT_PCT = 4, 50


def choose_blocks(pct, sort):
    """sparse_blocks.h's choice: pct% of the NB*NB blocks, a partial
    Fisher-Yates shuffle (xorshift32) of the interior blocks."""
    n, count = (NB - 2) * (NB - 2), pct * NB * NB // 100
    ids = [(1 + m // (NB - 2)) * NB + 1 + m % (NB - 2) for m in range(n)]
    s = SEED
    for k in range(count):
        s ^= (s << 13) & 0xffffffff
        s ^= s >> 17
        s ^= (s << 5) & 0xffffffff
        j = k + s % (n - k)
        ids[k], ids[j] = ids[j], ids[k]
    out = ids[:count]
    return sorted(out) if sort else out


def list_field(lst):
    f = ti.field(ti.i32, len(lst))
    f.from_numpy(np.array(lst, dtype=np.int32))
    return f


def laplace_at(pct):
    init(ti, opts)               # a program of its own for each occupancy
    lst = choose_blocks(pct, True)
    nblk = len(lst)
    blist = list_field(lst)
    total = ti.field(ti.i64, ())
    u, lap = ti.field(ti.f32), ti.field(ti.f32)
    blk = ti.root.pointer(ti.ij, NB)
    blk.dense(ti.ij, B).place(u, lap)

    # activate the blocks one by one in list order, as sparse.lua and
    # sparse_laplace.c lay them out (placement decides much of a sweep's speed)
    @ti.kernel
    def activate():
        ti.loop_config(serialize=True)
        for k in range(nblk):
            bid = blist[k]
            u[bid // NB * B, bid % NB * B] = 0.0

    @ti.kernel
    def fill():
        for k in range(nblk * B * B):
            bid, c = blist[k // (B * B)], k % (B * B)
            i, j = bid // NB * B + c // B, bid % NB * B + c % B
            u[i, j] = ((i * 7 + j * 13) % 17) * 0.25

    @ti.kernel
    def laplace():
        for i, j in u:
            lap[i, j] = u[i + 1, j] + u[i - 1, j] + u[i, j + 1] + u[i, j - 1] - 4 * u[i, j]

    @ti.kernel
    def checksum():
        for i, j in lap:
            total[None] += ti.cast(lap[i, j] * 4, ti.i64) * ((i % 7 + 1) * (j % 5 + 1))

    @ti.kernel
    def count_blocks() -> ti.i32:
        n = 0
        for i, j in blk:
            n += 1
        return n

    activate()
    fill()
    check(f"active blocks after filling {pct}%", count_blocks(), nblk)
    laplace()   # compile and warm up
    times = [ms(ti, laplace) for _ in range(opts.reps)]
    check(f"active blocks after the Laplacian at {pct}%", count_blocks(), nblk)
    checksum()
    print(f"laplace_ti_ms {pct} {median(times):.4f}")
    print(f"laplace_ti_sum {pct} {total[None]}")


def activation():
    init(ti, opts)
    lst = choose_blocks(ACT_PCT, False)
    nblk = len(lst)
    blist = list_field(lst)
    total = ti.field(ti.i64, ())
    v = ti.field(ti.f32)
    blk = ti.root.pointer(ti.ij, NB)
    blk.dense(ti.ij, B).place(v)

    @ti.kernel
    def write():
        for k in range(nblk * W):
            bid, c = blist[k // W], ((k % W) * 85 + 7) % (B * B)
            v[bid // NB * B + c // B, bid % NB * B + c % B] = ti.cast(k + 1, ti.f32)

    @ti.kernel
    def checksum():
        for i, j in v:
            total[None] += ti.cast(v[i, j], ti.i64) * ((i % 7 + 1) * (j % 5 + 1))

    @ti.kernel
    def count_blocks() -> ti.i32:
        n = 0
        for i, j in blk:
            n += 1
        return n

    write()     # compile and warm up
    blk.deactivate_all()
    times = []
    for r in range(opts.reps):
        times.append(ms(ti, write))
        if r < opts.reps - 1:
            blk.deactivate_all()
    nact = count_blocks()
    check("active blocks after activation", nact, nblk)
    checksum()
    print(f"activate_ti_ms {median(times):.4f}")
    print(f"activate_ti_writes {nblk * W}")
    print(f"activate_ti_blocks {nact}")
    print(f"activate_ti_sum {total[None]}")


for p in PCTS:
    laplace_at(p)
activation()
