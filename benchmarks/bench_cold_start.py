"""The first run as a new user sees it: ``python -m skstruct demo`` with an empty numba cache.

Runs the demo in a fresh interpreter with ``NUMBA_CACHE_DIR`` pointing at a new empty
directory (so every kernel it uses is compiled), then once more with that cache filled, and
reports wall and CPU time of each, and the compile time of every kernel the first run
compiled (numba's compile events, top-level calls only).  ``--pytest`` also times a cold
``python -m pytest`` the same way (minutes).

Usage::

    python benchmarks/bench_cold_start.py [--repeats 2] [--pytest]
"""

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))

# Runs the demo inside the child, recording numba's compile events.
_CHILD = r"""
import collections, json, runpy, sys, time
from numba.core import event
times = collections.defaultdict(float)
class Listener(event.Listener):
    def __init__(self):
        self.stack = []
    def on_start(self, ev):
        self.stack.append(time.perf_counter())
    def on_end(self, ev):
        t = time.perf_counter() - self.stack.pop()
        if not self.stack:
            f = ev.data["dispatcher"].py_func
            times[f.__module__ + "." + f.__qualname__] += t
event.register("numba:compile", Listener())
sys.argv = ["skstruct", "demo"]
try:
    runpy.run_module("skstruct", run_name="__main__")
except SystemExit:
    pass
print("COMPILE " + json.dumps(times))
"""


def _run(cmd, cache):
    env = dict(os.environ, NUMBA_CACHE_DIR=cache)
    t0 = time.perf_counter()
    c0 = os.times()
    proc = subprocess.run(cmd, env=env, capture_output=True, text=True, cwd=ROOT)
    c1 = os.times()
    wall = time.perf_counter() - t0
    cpu = (c1.children_user - c0.children_user) + (c1.children_system - c0.children_system)
    if proc.returncode not in (0,):
        sys.exit(f"{cmd} failed:\n{proc.stdout[-2000:]}\n{proc.stderr[-2000:]}")
    return wall, cpu, proc.stdout


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--repeats", type=int, default=2)
    ap.add_argument("--pytest", action="store_true")
    args = ap.parse_args()
    print(f"python {sys.version.split()[0]}, {os.cpu_count()} cores")
    rows = []
    for r in range(args.repeats):
        with tempfile.TemporaryDirectory() as cache:
            cold = _run([sys.executable, "-c", _CHILD], cache)
            warm = _run([sys.executable, "-m", "skstruct", "demo"], cache)
        compile_times = json.loads(cold[2].rsplit("COMPILE ", 1)[1])
        rows.append((cold, warm, compile_times))
        print(f"run {r + 1}: cold {cold[0]:.1f} s wall / {cold[1]:.1f} s CPU, "
              f"warm {warm[0]:.1f} s wall / {warm[1]:.1f} s CPU", flush=True)
    print("\n| run | demo, empty cache: wall s | CPU s | demo, cache filled: wall s | CPU s |")
    print("|---|---|---|---|---|")
    for i, (cold, warm, _) in enumerate(rows, 1):
        print(f"| {i} | {cold[0]:.1f} | {cold[1]:.1f} | {warm[0]:.1f} | {warm[1]:.1f} |")
    print("\nKernels compiled by the first run (seconds, top-level compilations):\n")
    print("| kernel | compile s |")
    print("|---|---|")
    for name, t in sorted(rows[-1][2].items(), key=lambda kv: -kv[1]):
        print(f"| `{name.removeprefix('skstruct.')}` | {t:.2f} |")
    if args.pytest:
        with tempfile.TemporaryDirectory() as cache:
            wall, cpu, out = _run([sys.executable, "-m", "pytest", "-q", "-p",
                                   "no:cacheprovider"], cache)
        print(f"\ncold python -m pytest: {wall:.0f} s wall, {cpu:.0f} s CPU; "
              f"{out.strip().splitlines()[-1]}")


if __name__ == "__main__":
    main()
