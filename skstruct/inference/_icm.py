"""Iterated conditional modes (J. Besag, "On the Statistical Analysis of Dirty
Pictures", Journal of the Royal Statistical Society B 48(3), 1986).

Every node starts at the best label of its unary scores; sweeps over the nodes then
set each node to its best label given its neighbours' current labels, until a sweep
changes nothing (a labelling no single-node change improves) or ``max_iter`` sweeps.
A label changes only for a strictly better score, so the score never decreases and
the sweeps stop.  Approximate, without a bound; forbidden labels (``-inf`` unary
scores) are honoured whenever a node has an allowed one, forbidden pairs are not.
"""

import numpy as np

from .._core._jit import jit
from .._core._pool import for_chunks


@jit
def _icm_batch_chunks(node_offsets, unary, pairwise, pw_index, adj, mask,
                      chunks, max_iter, labels, n_iter, converged, c0, c1):
    # the kernel of icm_batch, over the chunks c0 <= c < c1
    adj_offsets, adj_edge, adj_nbr, adj_side = adj.offsets, adj.edge, adj.nbr, adj.side
    K = unary.shape[1]
    for c in range(c0, c1):
        score = np.empty(K)
        for s in range(chunks[c], chunks[c + 1]):
            if not mask[s]:
                continue
            n0 = node_offsets[s]
            n1 = node_offsets[s + 1]
            for v in range(n0, n1):
                best = 0
                for k in range(1, K):
                    if unary[v, k] > unary[v, best]:
                        best = k
                labels[v] = best
            changed = True
            it = 0
            while changed and it < max_iter:
                changed = False
                it += 1
                for v in range(n0, n1):
                    for k in range(K):
                        score[k] = unary[v, k]
                    for a in range(adj_offsets[v], adj_offsets[v + 1]):
                        P = pairwise[pw_index[adj_edge[a]]]
                        u = labels[adj_nbr[a]]
                        if adj_side[a] == 0:
                            for k in range(K):
                                score[k] += P[k, u]
                        else:
                            for k in range(K):
                                score[k] += P[u, k]
                    cur = labels[v]
                    best = cur
                    for k in range(K):
                        if score[k] > score[best]:
                            best = k
                    if best != cur:
                        labels[v] = best
                        changed = True
            n_iter[s] = it
            converged[s] = not changed


def icm_batch(node_offsets, unary, pairwise, pw_index, adj, mask, chunks, max_iter,
              labels, n_iter, converged):
    """ICM on every sample of ``mask``: labels into ``labels`` (N,), sweeps run into
    ``n_iter`` and whether a sweep changed nothing into ``converged`` (S,).

    ``adj`` is the batch's :class:`~skstruct._core._graph.Adjacency`.

    Runs on the threads in force (:func:`~skstruct._core._pool.for_chunks`).
    """
    def run(c0, c1):
        _icm_batch_chunks(node_offsets, unary, pairwise, pw_index, adj,
                          mask, chunks, max_iter, labels, n_iter,
                          converged, c0, c1)

    for_chunks(run, chunks)


def run_map(batch, unary, pairwise, pw_index, mask, labels, bound, options):
    """The runner of ``method="icm"`` (see :mod:`skstruct._core._decoders`)."""
    from .._core import n_chunks

    S = batch.n_samples
    n_iter = np.zeros(S, np.int64)
    converged = np.zeros(S, bool)
    icm_batch(batch.node_offsets, options.augmented, pairwise, pw_index, batch.adjacency, mask,
              batch.chunks(n_chunks()), options.max_iter, labels, n_iter, converged)
    bound[mask] = np.inf
    return n_iter, converged
