"""Exact inference by enumerating every labelling: the reference for tiny graphs."""

import numpy as np

from .._core._jit import jit
from .._core._pool import for_range


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
    score; the first maximiser in odometer order (node ``n0`` the fastest
    digit) wins ties.

    The scores of all ``K ** n`` labellings are built node by node in one
    table: adding node ``j`` copies the table of the first ``j`` nodes once
    per label of ``j`` and adds, for each edge back to an earlier node ``a``,
    the table entry of ``a``'s label, which is constant over runs of
    ``K ** a`` consecutive labellings.  No branch depends on the labelling,
    the inner loops run over contiguous memory, and ``-inf`` scores need no
    special case (nothing is subtracted).
    """
    K = unary.shape[1]
    n = n1 - n0
    if n == 0:
        return 0.0
    total = 1
    for _ in range(n):
        total *= K
    S = np.empty(total)
    size = 1
    for j in range(n):
        v = n0 + j
        # extend: S[l + size * k] = S[l] + unary[v, k]; k = 0 last, in place
        for k in range(K - 1, -1, -1):
            u = unary[v, k]
            blk = S[size * k:size * (k + 1)]
            if j == 0:
                blk[0] = u
            else:
                for q in range(size):
                    blk[q] = S[q] + u
        for e in range(e0, e1):
            a = edges[e, 0] - n0
            b = edges[e, 1] - n0
            if max(a, b) != j:
                continue
            T = pairwise[pw_index[e]]
            if a == b:
                for k in range(K):
                    t = T[k, k]
                    blk = S[size * k:size * (k + 1)]
                    for q in range(size):
                        blk[q] += t
                continue
            other = b if a == j else a
            stride = 1
            for _ in range(other):
                stride *= K
            for k in range(K):
                blk = S[size * k:size * (k + 1)]
                for hi in range(0, size, stride * K):
                    for d in range(K):
                        t = T[k, d] if a == j else T[d, k]
                        run = blk[hi + d * stride:hi + (d + 1) * stride]
                        for q in range(stride):
                            run[q] += t
        size *= K
    best_i = 0
    best = S[0]
    for i in range(1, total):
        if S[i] > best:
            best = S[i]
            best_i = i
    for j in range(n):
        labels[n0 + j] = best_i % K
        best_i //= K
    return best


@jit
def _exact_batch_range(node_offsets, edge_offsets, edges, unary, pairwise, pw_index, active,
                       marginals, labels, best_out, logz_out, node_out, edge_out, s0, s1):
    # the kernel of exact_batch, over the samples s0 <= s < s1
    K = unary.shape[1]
    for s in range(s0, s1):
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


def exact_batch(node_offsets, edge_offsets, edges, unary, pairwise, pw_index, active, marginals,
                labels, best_out, logz_out, node_out, edge_out):
    """Enumerate all ``K ** n`` labellings of every active sample.

    Writes the argmax labelling into ``labels`` and its score into
    ``best_out``; with ``marginals`` also the log partition into ``logz_out``
    and exact node (N, K) and edge (E, K, K) marginals (zero when the sample is
    infeasible).  The first maximiser in odometer order wins ties.

    Runs on the threads in force (:func:`~skstruct._core._pool.for_range`).
    """
    def run(s0, s1):
        _exact_batch_range(node_offsets, edge_offsets, edges, unary, pairwise, pw_index, active,
                           marginals, labels, best_out, logz_out, node_out, edge_out, s0, s1)

    for_range(run, node_offsets.shape[0] - 1)
