"""Kernels for the commonest design: chains with one transition table.

Sequence labelling (every sample a chain, one parameter column per class, one tied
transition table) is what most users fit.  The general kernels of :mod:`._oracle` and
:mod:`._predict` dispatch over every decoder and surrogate, so their first compilation takes
most of a minute; these fuse the unary scores and (loss-augmented) Viterbi into one short loop
and compile in a few seconds, which is what a first fit on chains waits for.  The arithmetic
is that of the general kernels (tests compare the two).
"""

import numpy as np

from .._core._decoders import CHAIN
from .._core._jit import jit
from .._core._pool import for_chunks
from ..inference._chain import maxplus_step
from ._kernels import add_rows


def is_plain_chain(design):
    """Every sample a chain decoded by Viterbi, one tied transition table, and one parameter
    column per class with the identity class map."""
    K = design.n_classes
    return bool(design.plain_loss and not design.symmetric and np.all(design.kind == CHAIN)
                and design.tied
                and design.n_edge_features == 1 and design.n_columns == K
                and np.array_equal(design.cmap, np.arange(K)) and np.all(design.csign == 1))


@jit
def chain_oracle(n0, n1, xdata, xind, xptr, xrow, xoff, y, lw, W, P, U, fwd, lab, best):
    """Unary scores of nodes ``n0:n1`` into ``U`` and their loss-augmented
    Viterbi labelling into ``lab`` (``fwd`` holds the forward scores); returns
    the loss of that labelling.  ``U``, ``fwd`` and ``lab`` are indexed by
    the node's position in the chain."""
    K = W.shape[1]
    m = n1 - n0
    for t in range(m):
        v = n0 + t
        uv = U[t]
        for c in range(K):
            uv[c] = 0.0
        r = xrow[v]
        add_rows(uv, W, xdata, xind, xptr[r], xptr[r + 1], xoff[v])
    # Viterbi on U + loss.  The forward pass keeps every node's scores
    # instead of back-pointers: a pure max-plus loop vectorises twice as
    # well, and the backtrack recomputes one argmax per node
    w = lw[n0]
    f0 = fwd[0]
    for k in range(K):
        f0[k] = U[0, k] + w
    f0[y[n0]] -= w
    for t in range(1, m):
        prev = fwd[t - 1]
        cur = fwd[t]
        maxplus_step(prev, P, best)
        w = lw[n0 + t]
        uv = U[t]
        for j in range(K):
            cur[j] = best[j] + uv[j] + w
        cur[y[n0 + t]] -= w
    last = fwd[m - 1]
    k = 0
    for j in range(1, K):
        if last[j] > last[k]:
            k = j
    lab[m - 1] = k
    for t in range(m - 1, 0, -1):
        prev = fwd[t - 1]
        # the predecessor that attains the forward max (first one on ties)
        b = 0
        bv = prev[0] + P[0, k]
        for i in range(1, K):
            val = prev[i] + P[i, k]
            if val > bv:
                bv = val
                b = i
        k = b
        lab[t - 1] = k
    ell = 0.0
    for t in range(m):
        if lab[t] != y[n0 + t]:
            ell += lw[n0 + t]
    return ell



@jit
def _chain_margin(n0, n1, y, U, P, lab):
    """``score(lab) - score(y)`` of the chain of nodes ``n0:n1`` (``U`` indexed by the
    node's position in the chain)."""
    d = 0.0
    for t in range(n1 - n0):
        d += U[t, lab[t]] - U[t, y[n0 + t]]
    for t in range(1, n1 - n0):
        d += P[lab[t - 1], lab[t]] - P[y[n0 + t - 1], y[n0 + t]]
    return d


@jit
def _chain_pass_chunks(node_offsets, xdata, xind, xptr, xrow, xoff, y,
                       lw, W, P, max_nodes, chunks, hinge, ell, out, c0, c1):
    # the kernel of chain_pass, over the chunks c0 <= c < c1
    K = W.shape[1]
    M = max(max_nodes, 1)
    for c in range(c0, c1):
        U = np.empty((M, K))
        fwd = np.empty((M, K))
        lab = np.empty(M, np.int64)
        best = np.empty(K)
        for s in range(chunks[c], chunks[c + 1]):
            n0 = node_offsets[s]
            n1 = node_offsets[s + 1]
            if n1 == n0:
                hinge[s] = 0.0
                ell[s] = 0.0
                continue
            e = chain_oracle(n0, n1, xdata, xind, xptr, xrow, xoff, y, lw, W, P, U, fwd, lab,
                             best)
            ell[s] = e
            hinge[s] = max(0.0, e + _chain_margin(n0, n1, y, U, P, lab))
            for t in range(n1 - n0):
                out[n0 + t] = lab[t]


def chain_pass(node_offsets, xdata, xind, xptr, xrow, xoff, y, lw, W, P, max_nodes,
               chunks, hinge, ell, out):
    """Loss-augmented Viterbi on every chain at weights ``W`` (F, K), ``P`` (K, K),
    parallel over chunks: labels ``out`` (N,), margin-rescaled hinge ``hinge[s]`` and loss
    ``ell[s]`` per sample.  With zero loss weights ``lw`` the labels are the plain Viterbi
    ones (prediction; one kernel serves both, so a first fit compiles it once).

    Runs on the threads in force (:func:`~skstruct._core._pool.for_chunks`).
    """
    def run(c0, c1):
        _chain_pass_chunks(node_offsets, xdata, xind, xptr, xrow, xoff,
                           y, lw, W, P, max_nodes, chunks, hinge, ell,
                           out, c0, c1)

    for_chunks(run, chunks)
