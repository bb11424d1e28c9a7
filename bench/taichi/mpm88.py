"""mpm88.py -- the Taichi half of bench/run.sh's mpm88 rows: Taichi's own
mpm88 (one kernel `substep` of four top-level loops: clear the grid, P2G with
atomic adds, grid update, G2P) with the constants of examples/mpm88.lua and
the initial particles of bench/mpm88_init.h (8192 particles, 128^2 grid, 50
substeps a frame).
    python bench/taichi/mpm88.py [--threads T] [--fast-math on|off] --bench FRAMES
Prints, like examples/mpm88.lua --bench and bench/mpm88.c:
    mpm88_ti_import_ms MS        from the script's start to the end of `import taichi`
    mpm88_ti_first_frame_ms MS   from the script's start to the end of the first
                                 frame (ti.init and the kernel's compilation included)
    mpm88_ti_ms MS               the median of FRAMES more frames
    mpm88_ti_mean_x / _y         the particles' mean position at the end
"""
import time

t_start = time.perf_counter()
import os  # noqa: E402
import sys  # noqa: E402

sys.dont_write_bytecode = True   # no __pycache__ in the source tree
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from common import options, init, median  # noqa: E402

import numpy as np  # noqa: E402
import taichi as ti  # noqa: E402

t_import = time.perf_counter()
opts = options("bench/taichi/mpm88.py",
               lambda p: p.add_argument("--bench", type=int, required=True, metavar="FRAMES"))
init(ti, opts)

n_particles, n_grid = 8192, 128
SUBSTEPS = 50
dx, inv_dx, dt = 1 / n_grid, float(n_grid), 2e-4
p_vol, p_rho = (dx * 0.5) ** 2, 1
p_mass = p_vol * p_rho
gravity, bound, E = 9.8, 3, 400

x = ti.Vector.field(2, ti.f32, n_particles)      # position
v = ti.Vector.field(2, ti.f32, n_particles)      # velocity
C = ti.Matrix.field(2, 2, ti.f32, n_particles)   # affine velocity field
J = ti.field(ti.f32, n_particles)                # volume ratio
grid_v = ti.Vector.field(2, ti.f32, (n_grid, n_grid))
grid_m = ti.field(ti.f32, (n_grid, n_grid))


@ti.kernel
def substep():
    for i, j in grid_m:
        grid_v[i, j] = [0, 0]
        grid_m[i, j] = 0
    for p in x:
        X = x[p] * inv_dx
        base = int(X - 0.5)
        fx = X - base
        w = [0.5 * (1.5 - fx) ** 2, 0.75 - (fx - 1) ** 2, 0.5 * (fx - 0.5) ** 2]
        stress = -dt * 4 * E * p_vol * (J[p] - 1) * inv_dx * inv_dx
        affine = ti.Matrix([[stress, 0], [0, stress]]) + p_mass * C[p]
        mv = p_mass * v[p]
        for i, j in ti.static(ti.ndrange(3, 3)):
            offset = ti.Vector([i, j])
            dpos = (offset - fx) * dx
            weight = w[i].x * w[j].y
            grid_v[base + offset] += weight * (mv + affine @ dpos)
            grid_m[base + offset] += weight * p_mass
    for i, j in grid_m:
        gv = grid_v[i, j]
        m = grid_m[i, j]
        if m > 0:
            gv = gv / m
        gv.y -= dt * gravity
        if i < bound and gv.x < 0:
            gv.x = 0
        if i > n_grid - bound and gv.x > 0:
            gv.x = 0
        if j < bound and gv.y < 0:
            gv.y = 0
        if j > n_grid - bound and gv.y > 0:
            gv.y = 0
        grid_v[i, j] = gv
    for p in x:
        X = x[p] * inv_dx
        base = int(X - 0.5)
        fx = X - base
        w = [0.5 * (1.5 - fx) ** 2, 0.75 - (fx - 1) ** 2, 0.5 * (fx - 0.5) ** 2]
        new_v = ti.Vector.zero(ti.f32, 2)
        new_C = ti.Matrix.zero(ti.f32, 2, 2)
        for i, j in ti.static(ti.ndrange(3, 3)):
            dpos = (ti.Vector([i, j]) - fx) * dx
            weight = w[i].x * w[j].y
            g = grid_v[base + ti.Vector([i, j])]
            new_v += weight * g
            new_C += (4 * weight * inv_dx * inv_dx) * g.outer_product(dpos)
        v[p] = new_v
        x[p] += dt * new_v
        J[p] *= 1 + dt * new_C.trace()
        C[p] = new_C


def init_positions():
    """mpm88_init.h: xorshift32 from the seed, two draws per particle, each
    0.2f + 0.4f * (float)(s >> 8) / 16777216.0f in single precision."""
    s, draws = 2463534242, np.empty(2 * n_particles, dtype=np.uint32)
    for k in range(2 * n_particles):
        s ^= (s << 13) & 0xffffffff
        s ^= s >> 17
        s ^= (s << 5) & 0xffffffff
        draws[k] = s >> 8
    f = np.float32
    pos = f(0.2) + f(0.4) * draws.astype(np.float32) / f(16777216.0)
    return pos.reshape(n_particles, 2)


x.from_numpy(init_positions())
v.fill([0, -1])
J.fill(1)


def frame():
    for _ in range(SUBSTEPS):
        substep()
    ti.sync()


frame()
t_first = time.perf_counter()
times = []
for _ in range(opts.bench):
    t0 = time.perf_counter()
    frame()
    times.append((time.perf_counter() - t0) * 1e3)
mean = x.to_numpy().astype(np.float64).mean(axis=0)
print(f"mpm88_ti_import_ms {(t_import - t_start) * 1e3:.3f}")
print(f"mpm88_ti_first_frame_ms {(t_first - t_start) * 1e3:.3f}")
print(f"mpm88_ti_ms {median(times):.4f}")
print(f"mpm88_ti_mean_x {mean[0]:.6f}\nmpm88_ti_mean_y {mean[1]:.6f}")
