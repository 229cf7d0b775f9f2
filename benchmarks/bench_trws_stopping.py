"""When TRW-S and max-product stop, and what they return then.

Run: ``python benchmarks/bench_trws_stopping.py [--quick] [--write-doc]``.

1. TRW-S's stopping rule on a stereo-like grid (330 x 330 nodes, 16 disparity
   labels, truncated-linear smoothness; a synthetic scene of constant-disparity
   rectangles with noisy data costs, as no stereo model ships with the data
   sets): the former rule (relative bound change over one iteration) against
   the current one (gap closed, or bound stalled over 10 iterations), each at
   ``max_iter=100``, and the current one with a larger budget.  Gap is bound
   minus the score of the returned labelling.
2. Loopy max-product on frustrated 10 x 10 tori: the score of the last
   iterate's labelling against the best one seen (what ``map_inference``
   returns), after 100 and 1000 sweeps.

Nothing here is asserted: tests never time anything.  ``--write-doc`` writes the tables into
``benchmarks/HISTORY.md`` (section ``bench_trws_stopping``; developer notes, not the site).
"""

import argparse
import os
import sys
import time
import warnings

import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.dirname(HERE))

from skstruct.inference import GraphBatch, map_inference  # noqa: E402
from skstruct.inference._loopy import loopy_bp_batch, max_beliefs_decode_batch  # noqa: E402
from skstruct.inference._trws import TRWSOut, labelling_scores_batch, trws_batch  # noqa: E402


def stereo(side, K=16, seed=0):
    rng = np.random.default_rng(seed)
    truth = np.zeros((side, side), int)
    for _ in range(30):
        r, c, s = rng.integers(0, side), rng.integers(0, side), rng.integers(10, 80)
        truth[r:r + s, c:c + s] = rng.integers(0, K)
    unary = -np.abs(np.arange(K)[None, :]
                    - (truth.ravel()[:, None] + rng.normal(0, 3, (side * side, 1))))
    unary = np.minimum(unary, 0) * 10 + rng.normal(0, 5, (side * side, K))
    idx = np.arange(side * side).reshape(side, side)
    edges = np.concatenate([np.stack([idx[:, :-1].ravel(), idx[:, 1:].ravel()], 1),
                            np.stack([idx[:-1].ravel(), idx[1:].ravel()], 1)])
    d = np.abs(np.arange(K)[:, None] - np.arange(K)[None, :])
    return unary, edges, (-20.0 * np.minimum(d, 3))[None]


def run_trws(batch, unary, pairwise, max_iter, window, relative, tol=1e-6):
    S, N, K = batch.n_samples, batch.n_nodes, unary.shape[1]
    labels, bound, score = np.zeros(N, np.int64), np.zeros(S), np.zeros(S)
    n_iter, conv = np.zeros(S, np.int64), np.zeros(S, bool)
    t0 = time.perf_counter()
    out = TRWSOut(labels=labels, bound=bound, n_iter=n_iter, converged=conv, score=score)
    trws_batch(batch.node_offsets, batch.edge_offsets, batch.edges, unary, pairwise,
               np.zeros(batch.n_edges, np.int64), batch.adjacency, np.ones(S, bool),
               np.zeros((2 * batch.n_edges, K)), max_iter, tol, window, relative, out)
    return n_iter[0], bound[0], score[0], time.perf_counter() - t0


def trws_table(side):
    unary, edges, pairwise = stereo(side)
    batch = GraphBatch.from_graphs([len(unary)], [edges])
    run_trws(batch, unary[:1].copy(), pairwise, 1, 1, True)  # compile
    rows = [("former: relative change over 1 iteration", 100, 1, True),
            ("current: gap or stall over 10 iterations", 100, 10, False),
            ("current, max_iter=1000", 1000, 10, False)]
    lines = [f"TRW-S on a {side} x {side} stereo-like grid ({side * side} nodes, 16 labels), "
             "tol=1e-6:", "",
             "| stopping rule | max_iter | iterations | bound | gap | seconds |",
             "|---|---|---|---|---|---|"]
    for name, max_iter, window, relative in rows:
        it, bound, score, sec = run_trws(batch, unary, pairwise, max_iter, window, relative)
        lines.append(f"| {name} | {max_iter} | {it} | {bound:.1f} | {bound - score:.2f} | "
                     f"{sec:.1f} |")
    return lines


def torus(seed, side=10, K=3):
    rng = np.random.default_rng(seed)
    idx = np.arange(side * side).reshape(side, side)
    edges = np.vstack([np.column_stack([idx.ravel(), np.roll(idx, -1, 1).ravel()]),
                       np.column_stack([idx.ravel(), np.roll(idx, -1, 0).ravel()])])
    return rng.normal(size=(side * side, K)), edges, rng.normal(scale=1.5,
                                                                 size=(len(edges), K, K))


def max_product_table(n_models):
    lines = ["", f"Loopy max-product (damping 0.5, tol=0) on {n_models} frustrated 10 x 10 "
             "tori, 3 labels: mean score of the returned labelling", "",
             "| sweeps | last iterate | best seen (returned) | models where last < best |",
             "|---|---|---|---|"]
    for sweeps in (100, 1000):
        last, best, worse = [], [], 0
        for seed in range(n_models):
            unary, edges, pw = torus(seed)
            b = GraphBatch.from_graphs([len(unary)], [edges])
            args = (b.node_offsets, b.edge_offsets, b.edges, unary, pw, np.arange(len(edges)),
                    b.adjacency, np.ones(1, bool))
            msgs = np.zeros((2 * len(edges), 3))
            loopy_bp_batch(*args, msgs, True, sweeps, 0.5, 0.0, np.zeros(1, np.int64))
            lab = np.zeros(len(unary), np.int64)
            max_beliefs_decode_batch(*args, msgs, lab)
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")
                ret = map_inference(unary, edges, pw, method="max-product", max_iter=sweeps,
                                    tol=0.0)
            s = np.zeros((2, 1))
            for i, x in enumerate((lab, ret)):
                labelling_scores_batch(*args[:6], x, s[i])
            last.append(s[0, 0])
            best.append(s[1, 0])
            worse += s[0, 0] < s[1, 0] - 1e-9
        lines.append(f"| {sweeps} | {np.mean(last):.3f} | {np.mean(best):.3f} | "
                     f"{worse} of {n_models} |")
    return lines


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--quick", action="store_true")
    ap.add_argument("--write-doc", action="store_true")
    args = ap.parse_args()
    lines = trws_table(120 if args.quick else 330) + max_product_table(5 if args.quick else 20)
    print("\n".join(lines))
    if args.write_doc and not args.quick:
        from _doc import HISTORY, write_section

        write_section("bench_trws_stopping", lines, path=HISTORY)


if __name__ == "__main__":
    main()
