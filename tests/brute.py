"""Brute-force references for the oracles: plain numpy, every labelling enumerated."""

import itertools

import numpy as np
from scipy.special import logsumexp


def pairwise_stack(pairwise, n_edges):
    pairwise = np.asarray(pairwise, dtype=float)
    if pairwise.ndim == 2:
        return np.repeat(pairwise[None], n_edges, axis=0)
    return pairwise


def all_scores(unary, edges, pairwise):
    n, K = unary.shape
    edges = np.asarray(edges, dtype=np.int64).reshape(-1, 2)
    P = pairwise_stack(pairwise, len(edges))
    combos = list(itertools.product(range(K), repeat=n))
    labs = np.array(combos, dtype=np.int64).reshape(len(combos), n)
    scores = unary[np.arange(n), labs].sum(axis=1) if n else np.zeros(len(labs))
    for e, (a, b) in enumerate(edges):
        scores = scores + P[e][labs[:, a], labs[:, b]]
    return labs, scores


def score_of(unary, edges, pairwise, labels):
    edges = np.asarray(edges, dtype=np.int64).reshape(-1, 2)
    P = pairwise_stack(pairwise, len(edges))
    s = unary[np.arange(unary.shape[0]), labels].sum()
    for e, (a, b) in enumerate(edges):
        s += P[e][labels[a], labels[b]]
    return s


def brute_force(unary, edges, pairwise):
    """Max score, log partition, node marginals, edge marginals, max-marginals."""
    n, K = unary.shape
    edges = np.asarray(edges, dtype=np.int64).reshape(-1, 2)
    labs, scores = all_scores(unary, edges, pairwise)
    best = scores.max()
    logz = logsumexp(scores) if np.isfinite(best) else -np.inf
    node = np.zeros((n, K))
    edge = np.zeros((len(edges), K, K))
    mm = np.full((n, K), -np.inf)
    for v in range(n):
        for k in range(K):
            sel = labs[:, v] == k
            if sel.any():
                mm[v, k] = scores[sel].max()
    if np.isfinite(logz):
        p = np.exp(scores - logz)
        for v in range(n):
            np.add.at(node[v], labs[:, v], p)
        for e, (a, b) in enumerate(edges):
            np.add.at(edge[e], (labs[:, a], labs[:, b]), p)
    return best, logz, node, edge, mm


def close_or_both_neginf(a, b, **kw):
    a = np.asarray(a, dtype=float)
    b = np.asarray(b, dtype=float)
    both = np.isneginf(a) & np.isneginf(b)
    return bool(np.all(both | np.isclose(a, b, **kw)))
