"""Exact inference by enumerating every labelling: the reference for tiny graphs."""

import numpy as np
from numba import prange

from ._jit import jit, pjit


@jit
def _sample_score(n0, n1, e0, e1, edges, unary, pairwise, pw_index, labels, off):
    """Score of one sample's labelling (``-inf`` if it breaks a constraint).

    Node ``v`` has label ``labels[v - off]``.
    """
    total = 0.0
    for v in range(n0, n1):
        total += unary[v, labels[v - off]]
    for e in range(e0, e1):
        total += pairwise[pw_index[e], labels[edges[e, 0] - off], labels[edges[e, 1] - off]]
    return total


@jit
def _next(lab, K):
    """Advance an odometer over labellings; False once it wraps around."""
    for i in range(lab.shape[0]):
        lab[i] += 1
        if lab[i] < K:
            return True
        lab[i] = 0
    return False


@jit
def exact_map_one(n0, n1, e0, e1, edges, unary, pairwise, pw_index, lab, labels):
    """Best labelling of one sample by enumeration into ``labels[n0:n1]``.

    ``lab`` is an int64 scratch of length ``n1 - n0``.  Returns the best
    score; the first maximiser in odometer order wins ties.  The score is
    updated incrementally: an odometer step only rescores the nodes whose
    label changed and their edges.
    """
    K = unary.shape[1]
    n = n1 - n0
    m = e1 - e0
    # local incidence lists, so a relabelled node finds its edges directly
    deg = np.zeros(n + 1, np.int64)
    for e in range(e0, e1):
        deg[edges[e, 0] - n0 + 1] += 1
        deg[edges[e, 1] - n0 + 1] += 1
    for v in range(n):
        deg[v + 1] += deg[v]
    inc = np.empty(2 * m, np.int64)
    fill = deg[:n].copy()
    for e in range(e0, e1):
        a = edges[e, 0] - n0
        b = edges[e, 1] - n0
        inc[fill[a]] = e
        fill[a] += 1
        inc[fill[b]] = e
        fill[b] += 1
    lab[:] = 0
    labels[n0:n1] = 0
    score = _sample_score(n0, n1, e0, e1, edges, unary, pairwise, pw_index, lab, n0)
    best = score
    finite = score > -np.inf
    while True:
        # advance the odometer, rescoring each digit that changes
        i = 0
        while i < n:
            old = lab[i]
            new = old + 1 if old + 1 < K else 0
            if finite:
                v = n0 + i
                delta = unary[v, new] - unary[v, old]
                for q in range(deg[i], deg[i + 1]):
                    e = inc[q]
                    T = pairwise[pw_index[e]]
                    a = edges[e, 0] - n0
                    b = edges[e, 1] - n0
                    if a == i:
                        delta += T[new, lab[b]] - T[old, lab[b]]
                    else:
                        delta += T[lab[a], new] - T[lab[a], old]
                lab[i] = new
                score += delta
            else:
                lab[i] = new
            if new != 0:
                break
            i += 1
        if i == n:
            break
        if not finite or score != score:
            # -inf terms make differences undefined: rescore from scratch
            score = _sample_score(n0, n1, e0, e1, edges, unary, pairwise, pw_index, lab, n0)
            finite = score > -np.inf
        if score > best:
            best = score
            for v in range(n):
                labels[n0 + v] = lab[v]
    return best


@pjit
def exact_batch(node_offsets, edge_offsets, edges, unary, pairwise, pw_index, active,
                marginals, labels, best_out, logz_out, node_out, edge_out):
    """Enumerate all ``K ** n`` labellings of every active sample.

    Writes the argmax labelling into ``labels`` and its score into
    ``best_out``; with ``marginals`` also the log partition into ``logz_out``
    and exact node (N, K) and edge (E, K, K) marginals (zero when the sample is
    infeasible).  The first maximiser in odometer order wins ties.
    """
    K = unary.shape[1]
    for s in prange(node_offsets.shape[0] - 1):
        if not active[s]:
            continue
        n0 = node_offsets[s]
        n1 = node_offsets[s + 1]
        e0 = edge_offsets[s]
        e1 = edge_offsets[s + 1]
        lab = np.zeros(n1 - n0, np.int64)
        best = exact_map_one(n0, n1, e0, e1, edges, unary, pairwise, pw_index, lab, labels)
        best_out[s] = best
        if not marginals:
            continue
        node_out[n0:n1] = 0.0
        edge_out[e0:e1] = 0.0
        if best == -np.inf:
            logz_out[s] = -np.inf
            continue
        lab[:] = 0
        z = 0.0
        while True:
            x = _sample_score(n0, n1, e0, e1, edges, unary, pairwise, pw_index, lab, n0)
            p = np.exp(x - best)
            z += p
            for v in range(n0, n1):
                node_out[v, lab[v - n0]] += p
            for e in range(e0, e1):
                edge_out[e, lab[edges[e, 0] - n0], lab[edges[e, 1] - n0]] += p
            if not _next(lab, K):
                break
        logz_out[s] = best + np.log(z)
        node_out[n0:n1] /= z
        edge_out[e0:e1] /= z
