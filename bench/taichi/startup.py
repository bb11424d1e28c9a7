"""startup.py -- Taichi's start-up, timed from outside by bench/startup.c (as
bench/startup.lua is Lattice's): import taichi, ti.init on the CPU (offline
cache off), a field, and a first trivial kernel, compiled and run.
    python bench/taichi/startup.py
"""
import taichi as ti

ti.init(arch=ti.cpu, offline_cache=False, log_level=ti.ERROR)
x = ti.field(ti.f32, 16)


@ti.kernel
def k():
    for i in range(16):
        x[i] = i


k()
assert x[15] == 15
