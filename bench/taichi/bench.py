"""bench.py -- the Taichi half of bench/run.sh's triad and JIT latency rows
(bench/bench.lua is the Lattice half, bench/triad.c the C reference).
    python bench/taichi/bench.py [--threads T] [--reps R] [--fast-math on|off]
Prints:
    triad_ti_ms MS        a[i] = b[i] + s*c[i] over 2^24 f32, median of R calls
    jit_ti_ms NAME MS     first call minus second call of a fresh kernel
                          (julia_paint, heat_init, heat_step: bench.lua's kernels)
"""
import os
import sys

sys.dont_write_bytecode = True   # no __pycache__ in the source tree
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from common import options, init, median, ms, check  # noqa: E402

import taichi as ti  # noqa: E402

opts = options("bench/taichi/bench.py")
init(ti, opts)

# (a) dense triad, the loop of bench/triad.c and bench.lua
N = 1 << 24
A, B, C = (ti.field(ti.f32, N) for _ in range(3))


@ti.kernel
def triad_init():
    for i in range(N):
        B[i] = (i % 1000) * 0.5
        C[i] = 1.0


@ti.kernel
def triad(s: ti.f32):
    for i in range(N):
        A[i] = B[i] + s * C[i]


triad_init()
triad(3.0)   # compile and warm up
times = [ms(ti, triad, 3.0) for _ in range(opts.reps)]
a = A.to_numpy()
for k in range(1001):
    i = min(N - 1, k * (N // 1000) + k % 7)
    check(f"triad a[{i}]", float(a[i]), (i % 1000) * 0.5 + 3)
print(f"triad_ti_ms {median(times):.4f}")

# (b) JIT latency: each rep defines the kernel anew. Taichi keeps the code of
# every kernel it compiled in memory, keyed by the kernel's IR (also with the
# offline cache off), so each rep's kernel adds its own `nonce - nonce` to an
# index: a new key, folded away before code generation. (Without it, a
# "fresh" kernel of the same text costs Taichi 5-10 ms: no LLVM at all.)
W, H = 640, 320
iters = ti.field(ti.i32, (W, H))
u, v = ti.field(ti.f32, (200, 200)), ti.field(ti.f32, (200, 200))


def julia_paint(nonce):
    @ti.kernel
    def k(t: ti.f32):
        for i, j in ti.ndrange(W, H):
            zr, zi = (i / H - 1) * 2, (j / H - 0.5) * 2
            cr, ci = -0.8, ti.cos(t) * 0.2
            n = 0
            while zr * zr + zi * zi < 4 and n < 50:
                zr, zi = zr * zr - zi * zi + cr, 2 * zr * zi + ci
                n += 1
            iters[i, j + nonce - nonce] = n
    return lambda: k(0.5)


def heat_init(nonce):
    @ti.kernel
    def k():
        for i, j in ti.ndrange(200, 200):
            t = 0.0
            if j + nonce - nonce == 199 and i >= 66 and i < 134:
                t = 1.0
            u[i, j] = t
    return k


def heat_step(nonce):
    @ti.kernel
    def k():
        for i, j in ti.ndrange(198, 198):
            x, y = i + 1, j + 1 + nonce - nonce
            c = u[x, y]
            v[x, y] = c + 0.24 * (u[x - 1, y] + u[x + 1, y] + u[x, y - 1] + u[x, y + 1] - 4 * c)
    return k


for name, make in (("julia_paint", julia_paint), ("heat_init", heat_init), ("heat_step", heat_step)):
    lat = []
    for r in range(9):
        call = make(r + 1)
        first = ms(ti, call)
        second = ms(ti, call)
        lat.append(first - second)
    print(f"jit_ti_ms {name} {median(lat):.3f}")
