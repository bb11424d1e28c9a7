"""common.py -- what the Taichi halves of bench/run.sh share (the Taichi
counterpart of bench/common.lua): the command line, ti.init with the options
every script uses, and the timing helpers.

    from common import options, init, median, ms
    opts = options("bench/taichi/NAME.py")   # --threads T --reps R --fast-math on|off

Every script prints "key value" lines for run.sh on stdout (Taichi's own
banner lines start with "[Taichi]" and are ignored). The offline cache is off
(as LT_CACHE=off is for Lattice), so a first call always compiles.
"""
import argparse
import os
import sys
import time


def options(script, extra=None):
    p = argparse.ArgumentParser(prog=script)
    p.add_argument("--threads", type=int, default=0, help="CPU threads (0: one per core)")
    p.add_argument("--reps", type=int, default=15, help="timed repetitions")
    p.add_argument("--fast-math", choices=("on", "off"), default="off",
                   help="ti.init(fast_math=...): Taichi's default is on; off rounds every operation")
    if extra:
        extra(p)
    opts = p.parse_args()
    if opts.threads < 0 or opts.reps < 1:
        p.error("bad --threads or --reps")
    opts.fast_math = opts.fast_math == "on"
    return opts


def init(ti, opts, **kw):
    """ti.init on the CPU with the run's threads and maths mode."""
    threads = opts.threads or os.cpu_count()
    ti.init(arch=ti.cpu, cpu_max_num_threads=threads, fast_math=opts.fast_math,
            offline_cache=False, log_level=ti.ERROR, **kw)


def median(t):
    t = sorted(t)
    return t[(len(t) - 1) // 2]


def ms(ti, f, *args):
    """Milliseconds one call of f(*args) takes, to the end of its work."""
    t0 = time.perf_counter()
    f(*args)
    ti.sync()
    return (time.perf_counter() - t0) * 1e3


def check(what, got, want):
    if got != want:
        sys.exit(f"taichi bench: {what} is {got}, expected {want}")
