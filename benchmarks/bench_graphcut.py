"""Exact binary MAP on grids: skstruct's graph cut against TRW-S and other max-flow codes.

Binary denoising-style grids (4-connected, ``side x side`` pixels, unary scores of label 1
drawn from N(0, 1), a Potts table rewarding agreement by 0.8), at 10^4, 10^5 and 10^6
pixels.  Rows: ``map_inference(method="graphcut")`` (its Boykov-Kolmogorov maximum flow in
numba, the graph built inside the compiled call), ``map_inference(method="trws")`` (50 iterations,
the best labelling it decodes, and its bound), and, for the choice of the maximum-flow
code, the same s-t graph solved by PyMaxflow's Boykov-Kolmogorov implementation (the
authors' C++ code; ``pip install PyMaxflow``; float capacities) and by
``scipy.sparse.csgraph.maximum_flow``
(Dinic, integer capacities: the scores scaled by 10^6 and rounded, so not exact).  Times
are wall seconds of one call after a warm-up on a small grid (numba compilation excluded),
one thread.  Nothing is asserted; ``--write-doc`` writes the table into
``doc/benchmarks.md``.

Usage::

    python benchmarks/bench_graphcut.py [--sides 100 316 1000] [--write-doc]
"""

import argparse
import os
import sys
import time

import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.dirname(HERE))
sys.path.insert(0, HERE)


def problem(side, seed=0):
    from skstruct.datasets import grid_edges

    rng = np.random.default_rng(seed)
    n = side * side
    unary = np.zeros((n, 2))
    unary[:, 1] = rng.normal(size=n)
    return unary, grid_edges(side, side), np.array([[0.8, 0.0], [0.0, 0.8]])


def score(unary, edges, table, labels):
    return float(unary[np.arange(len(labels)), labels].sum()
                 + table[labels[edges[:, 0]], labels[edges[:, 1]]].sum())


def run_pymaxflow(unary, edges):
    import maxflow

    n = unary.shape[0]
    t0 = time.perf_counter()
    g = maxflow.Graph[float](n, len(edges))
    nodes = g.add_nodes(n)
    w = np.full(len(edges), 0.8)
    g.add_edges(edges[:, 0], edges[:, 1], w, w)
    gain = unary[:, 1] - unary[:, 0]
    # source side = label 1: cutting to the sink costs the lost gain, from the source its loss
    g.add_grid_tedges(nodes, np.maximum(gain, 0), np.maximum(-gain, 0))
    g.maxflow()
    labels = 1 - g.get_grid_segments(nodes).astype(np.int64)
    return time.perf_counter() - t0, labels


def run_scipy(unary, edges):
    import scipy.sparse as sp
    from scipy.sparse.csgraph import maximum_flow

    n = unary.shape[0]
    t0 = time.perf_counter()
    gain = unary[:, 1] - unary[:, 0]
    rows = np.concatenate([edges[:, 0], edges[:, 1], np.full(n, n), np.arange(n)])
    cols = np.concatenate([edges[:, 1], edges[:, 0], np.arange(n), np.full(n, n + 1)])
    cap = np.concatenate([np.full(2 * len(edges), 0.8), np.maximum(gain, 0),
                          np.maximum(-gain, 0)])
    M = sp.csr_matrix((np.round(cap * 1e6).astype(np.int32), (rows, cols)), shape=(n + 2, n + 2))
    maximum_flow(M, n, n + 1, method="dinic")
    return time.perf_counter() - t0


def main():
    from skstruct.inference import map_inference

    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--sides", type=int, nargs="+", default=[100, 316, 1000])
    ap.add_argument("--write-doc", action="store_true")
    args = ap.parse_args()
    u, e, t = problem(20)
    map_inference(u, e, t, method="graphcut")
    map_inference(u, e, t, method="trws", max_iter=2, tol=0)
    rows = []
    for side in args.sides:
        unary, edges, table = problem(side)
        t0 = time.perf_counter()
        labels = map_inference(unary, edges, table, method="graphcut")
        t_gc = time.perf_counter() - t0
        t0 = time.perf_counter()
        t_labels, t_bound = map_inference(unary, edges, table, method="trws", max_iter=50,
                                          tol=0, return_bound=True)
        t_trws = time.perf_counter() - t0
        row = dict(pixels=side * side, gc=t_gc, gc_score=score(unary, edges, table, labels),
                   trws=t_trws, trws_score=score(unary, edges, table, t_labels),
                   trws_bound=float(t_bound))
        try:
            row["bk"], bk_labels = run_pymaxflow(unary, edges)
            row["bk_score"] = score(unary, edges, table, bk_labels)
        except ImportError:
            row["bk"] = row["bk_score"] = None
        row["scipy"] = run_scipy(unary, edges)
        rows.append(row)
        print(row, flush=True)

    def fmt(v, spec=".3f"):
        return "n/a" if v is None else format(v, spec)

    lines = [
        "## Exact binary MAP on grids: graph cut (`benchmarks/bench_graphcut.py`)",
        "",
        "`python benchmarks/bench_graphcut.py`: 4-connected grids, unary scores of label 1 from"
        " N(0, 1), a Potts table rewarding agreement by 0.8; wall seconds of one call (one "
        "run), one thread, compilation excluded. Scores are those of the labelling returned "
        "(higher is better); the graph cut's is the optimum. PyMaxflow (Boykov and Kolmogorov's"
        " C++ code) and scipy (Dinic on integer capacities, scores scaled by 10^6) solve the "
        "same s-t graph, for the choice of the max-flow code. skstruct's maximum flow is the "
        "Boykov-Kolmogorov algorithm, ported to numba.",
        "",
        "| pixels | graphcut s | graphcut score | TRW-S (50 it.) s | TRW-S score | TRW-S bound "
        "| PyMaxflow BK s | BK score | scipy Dinic (int) s |",
        "|---|---|---|---|---|---|---|---|---|",
    ]
    for r in rows:
        lines.append(f"| {r['pixels']} | {r['gc']:.3f} | {r['gc_score']:.4f} | {r['trws']:.3f} "
                     f"| {r['trws_score']:.4f} | {r['trws_bound']:.4f} | {fmt(r['bk'])} | "
                     f"{fmt(r['bk_score'], '.4f')} | "
                     f"{r['scipy']:.3f} |")
    print("\n".join(lines))
    if args.write_doc:
        from _doc import write_section

        write_section("graphcut", lines)


if __name__ == "__main__":
    main()
