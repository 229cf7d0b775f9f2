"""MPLP's dual bound of the MAP LP against brute force and the LP itself.

The bound ``U(messages)`` is an upper bound of the MAP score at any
messages; MPLP's sweeps are block-coordinate descent on it, so it never
increases; the LP relaxation is tight on forests, where MPLP reaches the
MAP score; on loopy graphs it stays above the LP optimum (computed here by
scipy's ``linprog`` on the local polytope).
"""

import numpy as np
import pytest
from scipy.optimize import linprog

from skstruct._core._graph import build_adjacency
from skstruct.inference._mplp import lp_bound_one, mplp_sweeps
from tests.brute import all_scores
from tests.inference.kernel_cases import random_graph


def _bound(n, edges, unary, tables, msgs):
    K = unary.shape[1]
    off, ae, _, side = build_adjacency(n, edges)
    pwi = np.arange(len(edges), dtype=np.int64)
    return lp_bound_one(0, n, 0, len(edges), edges, unary, tables, pwi, off, ae, side, msgs,
                        np.empty(K), np.empty(n, np.int64), np.empty(max(len(edges), 1),
                                                                     np.int64))


def _sweep(n, edges, unary, tables, msgs, k):
    K = unary.shape[1]
    off, ae, _, side = build_adjacency(n, edges)
    pwi = np.arange(len(edges), dtype=np.int64)
    mplp_sweeps(0, len(edges), edges, unary, tables, pwi, off, ae, side, msgs, k,
                np.empty(K), np.empty(K))


def _lp_value(n, edges, unary, tables):
    """max <theta, mu> over the local polytope."""
    K = unary.shape[1]
    m = len(edges)
    nv = n * K + m * K * K
    c = -np.concatenate([unary.ravel(), tables.ravel()])
    A, b = [], []
    for v in range(n):
        row = np.zeros(nv)
        row[v * K:(v + 1) * K] = 1
        A.append(row)
        b.append(1.0)
    for e, (i, j) in enumerate(edges):
        base = n * K + e * K * K
        for a in range(K):
            row = np.zeros(nv)
            row[base + a * K: base + (a + 1) * K] = 1
            row[i * K + a] = -1
            A.append(row)
            b.append(0.0)
        for bb in range(K):
            row = np.zeros(nv)
            row[base + bb: base + K * K: K] = 1
            row[j * K + bb] = -1
            A.append(row)
            b.append(0.0)
    res = linprog(c, A_eq=np.array(A), b_eq=np.array(b), bounds=(0, None), method="highs")
    return -res.fun


@pytest.mark.parametrize("kind", ["chain", "tree", "forest", "cycle4", "complete", "random"])
@pytest.mark.parametrize("seed", range(4))
def test_mplp_bound(kind, seed):
    rng = np.random.default_rng(seed)
    n, edges = random_graph(rng, kind)
    K = 3
    unary = rng.normal(size=(n, K))
    tables = rng.normal(size=(len(edges), K, K))
    _, scores = all_scores(unary, edges, tables)
    best = scores.max()
    msgs = rng.normal(size=(2 * len(edges), K))  # any messages give a bound
    values = [_bound(n, edges, unary, tables, msgs)]
    for _ in range(30):
        _sweep(n, edges, unary, tables, msgs, 1)
        values.append(_bound(n, edges, unary, tables, msgs))
    values = np.array(values)
    assert np.all(values >= best - 1e-9)
    assert np.all(np.diff(values) <= 1e-9)  # coordinate descent on the dual
    lp = _lp_value(n, edges, unary, tables)
    assert values[-1] >= lp - 1e-7
    if kind in ("chain", "tree", "forest"):
        _sweep(n, edges, unary, tables, msgs, 200)
        assert _bound(n, edges, unary, tables, msgs) == pytest.approx(best, abs=1e-6)
