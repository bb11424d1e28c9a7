"""compile.py -- the Taichi half of bench/run.sh's compile-time row (bench/
compile.lua is the Lattice half): one kernel writing N fields of 64 f32 in
one parallel loop, the fields unrolled while Taichi transforms the kernel
(ti.static):
    for i in range(64): for k in ti.static(range(N)): fs[k][i] = i * (k + 1)
The figure is the process CPU time of the kernel's first call (Python AST
transform, Taichi's IR passes, LLVM, and the run itself: negligible), as
compile.lua takes os.clock; the offline cache is off.
    python bench/taichi/compile.py N
Prints "compile_ti_ms N ms", after checking a spread of the written values.
"""
import os
import sys
import time

sys.dont_write_bytecode = True   # no __pycache__ in the source tree
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from common import init, check  # noqa: E402

import taichi as ti  # noqa: E402


class Opts:
    threads, fast_math = 0, False


N = int(sys.argv[1]) if len(sys.argv) == 2 and sys.argv[1].isdigit() else 0
if N < 1:
    sys.exit("usage: python bench/taichi/compile.py N")
init(ti, Opts, unrolling_limit=0)   # no warning about unrolling N loops
fs = [ti.field(ti.f32, 64) for _ in range(N)]


@ti.kernel
def kern():
    for i in range(64):
        for k in ti.static(range(N)):
            fs[k][i] = i * (k + 1)


t0 = time.process_time()
kern()
ti.sync()
dt = (time.process_time() - t0) * 1e3
for k in range(0, N, max(1, N // 17)):
    for i in (0, 5, 63):
        check(f"field {k + 1}, cell {i}", fs[k][i], float(i * (k + 1)))
print(f"compile_ti_ms {N} {dt:.1f}")
