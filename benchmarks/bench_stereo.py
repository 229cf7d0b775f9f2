"""Vision-scale energies: TRW-S (dense and O(K) messages), max-product, alpha-expansion and
alpha-beta swap against PyMaxflow's on a stereo-like grid.

The grid is that of ``bench_trws_stopping.py``: 330 x 330 pixels (108,900 nodes, 217,140
edges, 4-connected), a synthetic scene of constant-disparity rectangles whose data
scores are ``-10 |label - (disparity + N(0, 3))|`` clipped at 0 plus N(0, 5) noise,
at 16 and 64 labels, with Potts smoothness ``-20 [a != b]`` and truncated-linear
smoothness ``-20 min(|a - b|, 3)``.  Rows, each in its own process (its peak memory
above the process's after the data is made, numba's compilation done beforehand):

- ``map_inference(method="trws", structure="dense")`` and ``structure="auto"`` (the O(K)
  updates), ``--trws-iter`` iterations with ``tol=0``; their bound is the certificate
  every row's gap is measured against (the lowest of the two, which agree to rounding);
- ``method="max-product"`` (O(K) updates), ``--mp-iter`` sweeps;
- ``method="expansion"`` and ``method="swap"``, to convergence;
- PyMaxflow's ``fastmin.aexpansion_grid`` and ``abswap_grid`` (the authors' C++
  Boykov-Kolmogorov maximum flow; ``pip install PyMaxflow``, an optional benchmark
  dependency) on the same energies, in the same run.

Energy is ``-score``; the gap is ``(energy - bound energy) / |bound energy|``.  One
thread.  Nothing is asserted; ``--write-doc`` writes the table into ``doc/benchmarks.md``.

Usage::

    python benchmarks/bench_stereo.py [--labels 16 64] [--trws-iter 100] [--write-doc]
"""

import argparse
import json
import os
import platform
import subprocess
import sys
import time

import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)
MARK = "@@bench_stereo "

CHILD = r"""
import json, os, resource, sys, time, warnings
import numpy as np
sys.path.insert(0, {root!r})
sys.path.insert(0, {here!r})
warnings.simplefilter("ignore")
P = json.loads(sys.argv[1])
from bench_stereo import problem, energy
unary, edges, table = problem(P["side"], P["K"], P["smooth"])

def rss_mb():
    with open("/proc/self/statm") as f:
        return int(f.read().split()[1]) * os.sysconf("SC_PAGE_SIZE") / 2 ** 20

def peak_mb():
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024.0

row = dict(P)
if P["method"].startswith("pymaxflow"):
    import maxflow
    D = np.ascontiguousarray((-unary).reshape(P["side"], P["side"], P["K"]))
    V = np.ascontiguousarray(-table)
    fn = maxflow.fastmin.aexpansion_grid if P["method"] == "pymaxflow-expansion" else \
        maxflow.fastmin.abswap_grid
    fn(D[:8, :8].copy(), V)
    base = rss_mb()
    t = time.perf_counter()
    labels = fn(D, V).ravel().astype(np.int64)
    row["seconds"] = time.perf_counter() - t
else:
    from skstruct.inference import map_inference
    kw = dict(P["kw"])
    # compile (or load) the kernels on a small grid first
    small = problem(8, P["K"], P["smooth"])
    map_inference(*small, method=P["method"], **dict(kw, max_iter=2))
    base = rss_mb()
    t = time.perf_counter()
    labels, bound, info = map_inference(unary, edges, table, method=P["method"],
                                        return_bound=True, return_info=True, **kw)
    row["seconds"] = time.perf_counter() - t
    row["bound_energy"] = -float(bound) if np.isfinite(bound) else None
    row["n_iter"] = int(info.n_iter[0])
row["energy"] = energy(unary, edges, table, labels)
row["memory_mb"] = max(peak_mb() - base, 0.0)
print({mark!r} + json.dumps(row))
"""


def problem(side, K, smooth, seed=0):
    """The stereo-like grid's scores (``bench_trws_stopping.stereo``'s): unary (side ** 2,
    K), edges, and the (K, K) table of the smoothness ``smooth``."""
    from bench_trws_stopping import stereo

    unary, edges, linear = stereo(side, K, seed)
    d = np.abs(np.arange(K)[:, None] - np.arange(K)[None, :])
    table = -20.0 * (d > 0) if smooth == "potts" else linear[0]
    return unary, edges, np.ascontiguousarray(table, dtype=float)


def energy(unary, edges, table, labels):
    return -float(unary[np.arange(len(labels)), labels].sum()
                  + table[labels[edges[:, 0]], labels[edges[:, 1]]].sum())


def run(params, timeout=3600):
    code = CHILD.format(root=ROOT, here=HERE, mark=MARK)
    env = dict(os.environ)
    for var in ("NUMBA_NUM_THREADS", "OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS",
                "MKL_NUM_THREADS"):
        env[var] = "1"
    out = subprocess.run([sys.executable, "-c", code, json.dumps(params)], capture_output=True,
                         text=True, env=env, timeout=timeout)
    for line in out.stdout.splitlines():
        if line.startswith(MARK):
            return json.loads(line[len(MARK):])
    return dict(params, error=(out.stderr.strip().splitlines() or ["no output"])[-1])


def machine():
    import numba

    return (f"{platform.system()} {platform.release()}, {platform.machine()}, "
            f"{os.cpu_count()} CPUs; Python {platform.python_version()}, numpy "
            f"{np.__version__}, numba {numba.__version__}")


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--labels", type=int, nargs="+", default=[16, 64])
    ap.add_argument("--side", type=int, default=330)
    ap.add_argument("--trws-iter", type=int, default=100)
    ap.add_argument("--mp-iter", type=int, default=100)
    ap.add_argument("--no-pymaxflow", action="store_true")
    ap.add_argument("--write-doc", action="store_true")
    args = ap.parse_args()
    try:
        import maxflow  # noqa: F401
        have_pmf = not args.no_pymaxflow
    except ImportError:
        have_pmf = False
        print("PyMaxflow is not installed (pip install PyMaxflow): its rows are skipped")
    t_run = time.perf_counter()
    methods = [("TRW-S, dense messages", "trws", dict(structure="dense", max_iter=args.trws_iter,
                                                        tol=0.0)),
               ("TRW-S, O(K) messages", "trws", dict(structure="auto", max_iter=args.trws_iter,
                                                      tol=0.0)),
               ("max-product, O(K) messages", "max-product", dict(max_iter=args.mp_iter,
                                                                   tol=0.0)),
               ("alpha-expansion", "expansion", dict(max_iter=100)),
               ("alpha-beta swap", "swap", dict(max_iter=100))]
    if have_pmf:
        methods += [("PyMaxflow `aexpansion_grid`", "pymaxflow-expansion", {}),
                    ("PyMaxflow `abswap_grid`", "pymaxflow-swap", {})]
    results = []
    for K in args.labels:
        for smooth in ("potts", "linear"):
            rows = []
            for name, method, kw in methods:
                r = run(dict(side=args.side, K=K, smooth=smooth, method=method, kw=kw))
                r["name"] = name
                print(json.dumps(r), flush=True)
                rows.append(r)
            bounds = [r["bound_energy"] for r in rows if r.get("bound_energy") is not None
                      and r["method"] == "trws"]
            best = max(bounds) if bounds else None
            for r in rows:
                r["bound"] = best
            results.append((K, smooth, rows))
    seconds = time.perf_counter() - t_run
    lines = table_lines(results, args, seconds)
    print("\n".join(lines))
    if args.write_doc:
        sys.path.insert(0, HERE)
        from _doc import write_section

        write_section("bench_stereo", lines)


def table_lines(results, args, seconds):
    n = args.side * args.side
    lines = [
        "## Stereo-like energies: move-making and O(K) messages (`benchmarks/bench_stereo.py`)",
        "",
        f"`python benchmarks/bench_stereo.py --trws-iter {args.trws_iter} --mp-iter "
        f"{args.mp_iter} --write-doc`, {time.strftime('%Y-%m-%d')}; {machine()}.  One "
        f"thread.  A {args.side} x {args.side} grid ({n:,} pixels), the data and smoothness "
        "terms described in the script; Potts smoothness `-20 [a != b]`, truncated linear "
        "`-20 min(|a - b|, 3)`.  Energy is minus the score; the gap is against the best "
        "TRW-S bound of the run (the two TRW-S rows agree on it to rounding).  Memory: the "
        "peak of the row's process above its memory once the data was made.  Each row ran "
        f"in its own process, all in one run ({seconds / 60:.0f} minutes).",
        "",
        "| labels | smoothness | method | energy | bound | gap | seconds | per iteration (s) "
        "| memory (MB) |",
        "|---|---|---|---:|---:|---:|---:|---:|---:|",
    ]
    for K, smooth, rows in results:
        for r in rows:
            if "error" in r:
                lines.append(f"| {K} | {smooth} | {r['name']} | failed: {r['error']} "
                             "| | | | | |")
                continue
            bound = r["bound"]
            gap = ("" if bound is None else
                   f"{100 * (r['energy'] - bound) / abs(bound):.4f}%")
            per_it = (f"{r['seconds'] / r['n_iter']:.4f}" if r["method"] in
                      ("trws", "max-product") and r.get("n_iter") else "")
            own_bound = (f"{r['bound_energy']:,.1f}" if r.get("bound_energy") is not None
                         else "")
            lines.append(f"| {K} | {'Potts' if smooth == 'potts' else 'truncated linear'} | "
                         f"{r['name']} | {r['energy']:,.1f} | {own_bound} | {gap} | "
                         f"{r['seconds']:.2f} | {per_it} | {r['memory_mb']:.0f} |")
    lines += ["", *ratios(results)]
    return lines


def ratios(results):
    """Expansion's gap to the bound and its time against PyMaxflow's; TRW-S's dense iteration
    against the O(K) one."""
    out = ["| labels | smoothness | expansion's gap | expansion s / PyMaxflow s | "
           "TRW-S per iteration, dense / O(K) |", "|---|---|---:|---:|---:|"]
    for K, smooth, rows in results:
        by = {r["name"]: r for r in rows if "error" not in r}
        exp = by.get("alpha-expansion")
        pmf = by.get("PyMaxflow `aexpansion_grid`")
        dense = by.get("TRW-S, dense messages")
        fast = by.get("TRW-S, O(K) messages")
        gap = (f"{100 * (exp['energy'] - exp['bound']) / abs(exp['bound']):.4f}%"
               if exp and exp["bound"] else "-")
        ratio = f"{exp['seconds'] / pmf['seconds']:.2f}" if exp and pmf else "-"
        speed = (f"{(dense['seconds'] / dense['n_iter']) / (fast['seconds'] / fast['n_iter']):.2f}"
                 if dense and fast else "-")
        out.append(f"| {K} | {'Potts' if smooth == 'potts' else 'truncated linear'} | {gap} | "
                   f"{ratio} | {speed} |")
    return out


if __name__ == "__main__":
    main()
