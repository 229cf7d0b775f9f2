"""The first fit as a new user sees it: every estimator, solver and kind of model, each with an
empty numba cache.

Each cell is one target of ``python -m skstruct compile`` (``skstruct/_warmup.py``: one
estimator, one solver, one kind of model -- chain, tree, loopy graph with TRW-S, graph cut on
supermodular tables, edge features, multi-label -- fitted for two iterations on a few random
samples, then used to predict), plus the row ``demo``: ``python -m skstruct demo`` (a
structured SVM on the OCR letters).  A cell runs in a fresh interpreter with
``NUMBA_CACHE_DIR`` pointing at a new empty directory, so every kernel it needs is compiled;
then once more in a new interpreter with that cache filled.  Reported: the wall seconds of
each process (start-up, ``import skstruct``, fit and predict) with an empty and with a filled
cache, and the kernels that took longest to compile (numba's compile events, top-level
compilations only).

Cells run one at a time (two at once would share the two cores and time neither honestly).
With ``--base REV`` (default: 3decb23, the revision before the compile-time work) every cell
also runs on that revision, checked out once as a detached git worktree under
``benchmarks/.revisions/`` (as ``bench_revisions.py`` does), or given as the path of a
checked-out tree, with the same cell definitions (this tree's ``skstruct/_warmup.py``,
which uses only public names); ``--base none`` skips it.

Bounded time: a cell is stopped after ``--timeout`` seconds (default 300) and reported as
such.  A full run (about 57 cells, both revisions, cold and warm) takes about an hour on a
2-core machine; without the base revision about half; ``--quick`` (five cells, no base
revision) a few minutes.  Nothing here is asserted.

Usage::

    python benchmarks/bench_cold_start.py [--cells NAME ...] [--base REV|none] [--quick]
                                          [--timeout 300] [--list] [--pytest] [--write-doc]

``--cells`` takes target names or parts of them as ``python -m skstruct compile`` does
(``StructuredSVM/one_slack``, ``loopy``, ``CRF``; ``demo`` for the demo).  ``--pytest`` also
times a cold ``python -m pytest`` (many minutes).  ``--write-doc`` writes this tree's tables
into ``doc/benchmarks.md`` (section ``bench_cold_start``) and, with a base revision, the
side-by-side table into the same section of ``benchmarks/HISTORY.md``.
"""

import argparse
import importlib.util
import json
import os
import platform
import subprocess
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)
sys.path.insert(0, HERE)
from bench_revisions import worktree  # noqa: E402

BASE = "3decb23"
WARMUP = os.path.join(ROOT, "skstruct", "_warmup.py")
QUICK = ["demo", "StructuredSVM/bcfw/chain", "StructuredSVM/one_slack/multilabel",
         "StructuredSVM/bcfw/loopy", "CRF/lbfgs/chain"]
MARK = "@@cold_start "

# Runs one cell inside the child, recording numba's compile events of top-level kernels.
_CHILD = r"""
import collections, importlib.util, json, os, runpy, sys, time
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
cell, warmup, mark = sys.argv[1:4]
if cell == "demo":
    sys.argv = ["skstruct", "demo"]
    try:
        runpy.run_module("skstruct", run_name="__main__")
    except SystemExit:
        pass
else:
    # this tree's cell definitions, run against whichever skstruct is on the path
    spec = importlib.util.spec_from_file_location("_cells", warmup)
    cells = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(cells)
    cells.TARGETS[cell].run()
import skstruct
print(mark + json.dumps({"compile": times, "file": skstruct.__file__}))
"""


def _cells_module():
    spec = importlib.util.spec_from_file_location("_cells", WARMUP)
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


def run_cell(cell, tree, cache, timeout):
    """Wall seconds of one fresh interpreter running ``cell`` on ``tree``, and the compile
    times of its kernels; ``{"error": ...}`` when it fails or times out."""
    env = dict(os.environ, NUMBA_CACHE_DIR=cache, PYTHONPATH=os.pathsep.join(
        [tree, *filter(None, [os.environ.get("PYTHONPATH")])]))
    with tempfile.TemporaryDirectory() as tmp:
        t0 = time.perf_counter()
        try:
            proc = subprocess.run([sys.executable, "-c", _CHILD, cell, WARMUP, MARK], cwd=tmp,
                                  env=env, capture_output=True, text=True, timeout=timeout)
        except subprocess.TimeoutExpired:
            return {"error": f"timed out after {timeout:.0f} s"}
        wall = time.perf_counter() - t0
    lines = [ln for ln in proc.stdout.splitlines() if ln.startswith(MARK)]
    if proc.returncode != 0 or not lines:
        tail = [ln for ln in proc.stderr.strip().splitlines() if ln.strip()][-1:]
        return {"error": f"exit status {proc.returncode}: {' '.join(tail)[:200]}"}
    rec = json.loads(lines[-1][len(MARK):])
    expected = os.path.join(os.path.realpath(tree), "skstruct")
    if not os.path.realpath(rec["file"]).startswith(expected + os.sep):
        return {"error": f"imported {rec['file']}, not the package of {tree}"}
    return {"wall": wall, "compile": rec["compile"]}


def measure(cell, tree, timeout):
    """Cold (empty cache) then warm (that cache filled) runs of one cell."""
    with tempfile.TemporaryDirectory() as cache:
        cold = run_cell(cell, tree, cache, timeout)
        warm = run_cell(cell, tree, cache, timeout) if "error" not in cold else cold
    return cold, warm


def _fmt(rec, key="wall"):
    return f"{rec[key]:.1f}" if "error" not in rec else "failed"


def _top(rec, n=3):
    if "error" in rec:
        return ""
    items = sorted(rec["compile"].items(), key=lambda kv: -kv[1])[:n]
    return ", ".join(f"`{k.removeprefix('skstruct.')}` {v:.1f}" for k, v in items)


def table(results, base_label):
    """The markdown lines of the table, one row per cell; with ``base_label``, the base
    revision's figures beside this tree's."""
    head = ["| cell | empty cache s | cache filled s |"]
    rule = ["|---|---|---|"]
    if base_label:
        head = [f"| cell | before ({base_label}): empty cache s | after: empty cache s | "
                "before: cache filled s | after: cache filled s |"]
        rule = ["|---|---|---|---|---|"]
    lines = head + rule
    for cell, res in results.items():
        cold, warm = res["new"]
        if base_label:
            bcold, bwarm = res["base"]
            lines.append(f"| `{cell}` | {_fmt(bcold)} | {_fmt(cold)} | {_fmt(bwarm)} | "
                         f"{_fmt(warm)} |")
        else:
            lines.append(f"| `{cell}` | {_fmt(cold)} | {_fmt(warm)} |")
    failed = [f"`{c}`: {r['new'][0]['error']}" for c, r in results.items()
              if "error" in r["new"][0]]
    if failed:
        lines += ["", "Failed: " + "; ".join(failed) + "."]
    lines += ["", "Kernels that took longest to compile in each cell's first run (seconds):",
              "", "| cell | kernels |", "|---|---|"]
    for cell, res in results.items():
        lines.append(f"| `{cell}` | {_top(res['new'][0])} |")
    return lines


def machine():
    import numba
    import numpy

    return (f"{os.cpu_count()} CPUs, Python {platform.python_version()}, numpy "
            f"{numpy.__version__}, numba {numba.__version__}, {platform.system()} "
            f"{platform.release()}")


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--cells", nargs="+", default=None)
    ap.add_argument("--base", default=BASE,
                    help="revision (or checked-out tree) to compare with, or 'none'")
    ap.add_argument("--quick", action="store_true")
    ap.add_argument("--timeout", type=float, default=300.0)
    ap.add_argument("--list", action="store_true")
    ap.add_argument("--pytest", action="store_true")
    ap.add_argument("--write-doc", action="store_true")
    args = ap.parse_args()
    cells_mod = _cells_module()
    if args.quick and not args.cells:
        args.cells = QUICK
        args.base = "none"
    names = ["demo"] + list(cells_mod.TARGETS)
    if args.cells:
        want = [c for c in args.cells if c != "demo"]
        try:
            chosen = [t.name for t in cells_mod.select(want)] if want else []
        except ValueError as exc:
            ap.error(str(exc))
        names = (["demo"] if "demo" in args.cells else []) + chosen
    if args.list:
        print("\n".join(names))
        return
    base = None if args.base.lower() == "none" else args.base
    trees = {"new": ROOT}
    base_label = None
    if base and os.path.isdir(base):
        # a checked-out tree of the base revision
        trees["base"] = os.path.abspath(base)
        base_label = subprocess.run(["git", "--no-optional-locks", "rev-parse", "--short",
                                     "HEAD"], cwd=base, capture_output=True,
                                    text=True).stdout.strip() or base
    elif base:
        sha, path = worktree(base)
        trees["base"] = path
        base_label = sha[:7]
    print(machine())
    print(f"{len(names)} cell(s), {'both revisions' if base else 'this tree only'}, one at a "
          f"time", flush=True)
    results = {}
    t_all = time.perf_counter()
    for cell in names:
        results[cell] = {}
        for side, tree in trees.items():
            results[cell][side] = measure(cell, tree, args.timeout)
        cold, warm = results[cell]["new"]
        before = ""
        if base:
            before = f"before {_fmt(results[cell]['base'][0])} s, "
        print(f"{cell}: {before}cold {_fmt(cold)} s, warm {_fmt(warm)} s; "
              f"{_top(cold)}", flush=True)
    print(f"\n({time.perf_counter() - t_all:.0f} s in all)\n")
    lines = table(results, base_label)
    print("\n".join(lines))
    page = table(results, None)
    extra = []
    if args.pytest:
        with tempfile.TemporaryDirectory() as cache:
            env = dict(os.environ, NUMBA_CACHE_DIR=cache)
            t0 = time.perf_counter()
            proc = subprocess.run([sys.executable, "-m", "pytest", "-q", "-p",
                                   "no:cacheprovider"], cwd=ROOT, env=env,
                                  capture_output=True, text=True)
            wall = time.perf_counter() - t0
        last = (proc.stdout.strip().splitlines() or ["no output"])[-1]
        extra = ["", f"A cold `python -m pytest`: {wall:.0f} s wall; {last}"]
        print("\n".join(extra))
    if args.write_doc:
        from _doc import HISTORY, write_section

        n_all = 1 + len(cells_mod.TARGETS)
        every = len(names) == n_all
        which = "every cell" if every else f"{len(names) - ('demo' in names)} of the " \
            f"{n_all - 1} cells"
        intro = ["## The first fit (`benchmarks/bench_cold_start.py`)", "",
                 f"`python benchmarks/bench_cold_start.py{'' if every else ' --cells ...'}`: "
                 f"{which} of `python -m skstruct compile` (estimators x solvers x kinds of "
                 "model: two iterations on a few random samples, then a prediction) and "
                 "`python -m skstruct demo`, each in a fresh interpreter with an empty numba "
                 "cache, then again with the cache filled; wall seconds of the whole process "
                 "(start-up, import, fit, predict), one cell at a time, one run.", "",
                 f"Machine: {machine()}.", ""]
        write_section("bench_cold_start", intro + page + extra)
        if base_label:
            write_section("bench_cold_start", [
                "## The first fit, side by side with a revision "
                "(`benchmarks/bench_cold_start.py`)", "", *intro[2:], *lines], HISTORY)


if __name__ == "__main__":
    main()
