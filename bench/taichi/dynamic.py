"""dynamic.py -- the Taichi half of bench/run.sh's dynamic-list row (bench/
dynamic.lua is the Lattice half: the same particles, lists and checksum):
    ti.root.pointer(ti.ij, 32).dynamic(ti.k, 1024, chunk_size=64).place(l)
an append of 262144 particle ids to the list of their cell, then a struct-for
over the lists summing each cell's ids.
    python bench/taichi/dynamic.py [--threads T] [--reps R] [--fast-math on|off]
Prints dynamic_ti_append_ms, dynamic_ti_sum_ms, dynamic_ti_count,
dynamic_ti_max and dynamic_ti_sum (see bench/dynamic.lua).
"""
import os
import sys

sys.dont_write_bytecode = True   # no __pycache__ in the source tree
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from common import options, init, median, ms, check  # noqa: E402

import numpy as np  # noqa: E402
import taichi as ti  # noqa: E402

opts = options("bench/taichi/dynamic.py")
init(ti, opts)
NP, G, CAP, CHUNK = 262144, 32, 1024, 64


def fmix32(h):
    """MurmurHash3's finaliser on a uint32 array (wrapping multiplies)."""
    h = h ^ (h >> np.uint32(16))
    h = h * np.uint32(0x85ebca6b)
    h = h ^ (h >> np.uint32(13))
    h = h * np.uint32(0xc2b2ae35)
    return h ^ (h >> np.uint32(16))


p = np.arange(NP, dtype=np.uint32)
hx = fmix32(np.uint32(2) * p + np.uint32(1)) >> np.uint32(8)
hy = fmix32(np.uint32(2) * p + np.uint32(2)) >> np.uint32(8)
ci, cj = (hx >> np.uint32(19)).astype(np.int64), (hy >> np.uint32(19)).astype(np.int64)
want = int(np.sum(p.astype(np.int64) * ((ci % 7 + 1) * (cj % 5 + 1))))

px, py = ti.field(ti.f32, NP), ti.field(ti.f32, NP)
l = ti.field(ti.i32)
cells = ti.root.pointer(ti.ij, G)
cells.dynamic(ti.k, CAP, chunk_size=CHUNK).place(l)
sums = ti.field(ti.i64, (G, G))
px.from_numpy((hx.astype(np.float64) / 16777216.0).astype(np.float32))
py.from_numpy((hy.astype(np.float64) / 16777216.0).astype(np.float32))


@ti.kernel
def fill():
    for q in range(NP):
        ti.append(l.parent(), [int(px[q] * G), int(py[q] * G)], q)


@ti.kernel
def total():
    for i, j, k in l:
        sums[i, j] += ti.cast(l[i, j, k], ti.i64)


@ti.kernel
def lengths(out: ti.types.ndarray()):
    for i, j in ti.ndrange(G, G):
        out[i, j] = ti.length(l.parent(), [i, j])


fill()   # compile and warm up
cells.deactivate_all()
t_fill = []
for r in range(opts.reps):
    t_fill.append(ms(ti, fill))
    if r < opts.reps - 1:
        cells.deactivate_all()
total()  # compile and warm up
t_sum = []
for r in range(opts.reps):
    sums.fill(0)
    t_sum.append(ms(ti, total))

n = np.zeros((G, G), dtype=np.int32)
lengths(n)
s = sums.to_numpy()
w = (np.arange(G)[:, None] % 7 + 1) * (np.arange(G)[None, :] % 5 + 1)
got = int(np.sum(s * w))
check("elements in the lists", int(n.sum()), NP)
check("checksum", got, want)
print(f"dynamic_ti_append_ms {median(t_fill):.4f}")
print(f"dynamic_ti_sum_ms {median(t_sum):.4f}")
print(f"dynamic_ti_count {int(n.sum())}")
print(f"dynamic_ti_max {int(n.max())}")
print(f"dynamic_ti_sum {got}")
