"""Chain kernels: Viterbi, forward-backward and max-marginals on packed chains.

A batch of chains is described by ``node_offsets`` (S + 1,) and
``edge_offsets`` (S + 1,): chain ``s`` has nodes ``n0 = node_offsets[s]`` to
``node_offsets[s + 1]`` and its ``t``-th transition (between its nodes ``t``
and ``t + 1``) is edge ``edge_offsets[s] + t``, scored by
``pairwise[pw_index[edge], a, b]`` (label ``a`` then ``b``).  Only samples with
``active[s]`` set are processed, so a mixed batch can send its chains here and
its other graphs elsewhere.  Every batch kernel loops over ``chunks`` (sample
ranges, one ``prange`` iteration each) so the per-sample scratch is allocated
once per chunk and summed outputs get one buffer per chunk.
"""

from typing import NamedTuple

import numpy as np

from .._core._jit import jit
from .._core._pool import for_chunks
from ._modes import EDGES_EACH, EDGES_NONE, EDGES_PER_TABLE

# Below this, a scaled forward-backward step has lost too much mass relative
# to double precision; the chain is then redone in log space.
_TINY = 1e-150


class FBWork(NamedTuple):
    """Scratch of the scaled forward-backward of one chain."""

    eu: np.ndarray         # (T, K) the exponentiated unaries
    scale: np.ndarray      # (T,) the forward pass's scales
    beta: np.ndarray       # (K,) backward message
    nbeta: np.ndarray      # (K,)
    tmp: np.ndarray        # (K,)
    xi: np.ndarray         # (K, K) an edge marginal


@jit
def _aug_row(unary, y, loss_weights, v, row):
    """Unary scores of node ``v``, plus the Hamming loss when ``y`` is given."""
    K = unary.shape[1]
    for k in range(K):
        row[k] = unary[v, k]
    if y.shape[0] > 0:
        w = loss_weights[y[v]]
        for k in range(K):
            if k != y[v]:
                row[k] += w


@jit
def _maxplus4(delta, P, j0, best, arg):
    """``best[j] = max_i delta[i] + P[i, j]`` and its first argmax, for ``j0..j0+3``.

    Four columns in scalar locals stay in registers for the whole loop over
    ``i`` (LLVM packs them into one vector), where a loop over all ``K``
    columns would load and store ``best`` and ``arg`` at every ``i``.  A float
    index keeps the select in the same vector lanes as the scores.
    """
    K = delta.shape[0]
    d = delta[0]
    b0 = d + P[0, j0]
    b1 = d + P[0, j0 + 1]
    b2 = d + P[0, j0 + 2]
    b3 = d + P[0, j0 + 3]
    a0 = a1 = a2 = a3 = 0.0
    for i in range(1, K):
        d = delta[i]
        fi = float(i)
        v0 = d + P[i, j0]
        v1 = d + P[i, j0 + 1]
        v2 = d + P[i, j0 + 2]
        v3 = d + P[i, j0 + 3]
        if v0 > b0:
            b0 = v0
            a0 = fi
        if v1 > b1:
            b1 = v1
            a1 = fi
        if v2 > b2:
            b2 = v2
            a2 = fi
        if v3 > b3:
            b3 = v3
            a3 = fi
    best[j0] = b0
    best[j0 + 1] = b1
    best[j0 + 2] = b2
    best[j0 + 3] = b3
    arg[j0] = a0
    arg[j0 + 1] = a1
    arg[j0 + 2] = a2
    arg[j0 + 3] = a3


@jit
def _viterbi_one(unary, y, loss_weights, pairwise, pw_index, n0, e0, T, bp, labels,
                 delta, best, arg, row):
    K = unary.shape[1]
    _aug_row(unary, y, loss_weights, n0, delta)
    for t in range(1, T):
        P = pairwise[pw_index[e0 + t - 1]]
        for j0 in range(0, K - K % 4, 4):
            _maxplus4(delta, P, j0, best, arg)
        for j in range(K - K % 4, K):
            b = delta[0] + P[0, j]
            a = 0.0
            for i in range(1, K):
                v = delta[i] + P[i, j]
                if v > b:
                    b = v
                    a = float(i)
            best[j] = b
            arg[j] = a
        _aug_row(unary, y, loss_weights, n0 + t, row)
        for j in range(K):
            delta[j] = best[j] + row[j]
            bp[n0 + t, j] = int(arg[j])
    k = 0
    for j in range(1, K):
        if delta[j] > delta[k]:
            k = j
    score = delta[k]
    labels[n0 + T - 1] = k
    for t in range(T - 1, 0, -1):
        k = bp[n0 + t, k]
        labels[n0 + t - 1] = k
    return score


@jit
def _viterbi_batch_chunks(node_offsets, edge_offsets, unary,
                          pairwise, pw_index, y, loss_weights, active,
                          chunks, bp, labels, scores, c0, c1):
    # the kernel of viterbi_batch, over the chunks c0 <= c < c1
    K = unary.shape[1]
    for c in range(c0, c1):
        delta = np.empty(K)
        best = np.empty(K)
        arg = np.empty(K)
        row = np.empty(K)
        for s in range(chunks[c], chunks[c + 1]):
            if not active[s]:
                continue
            n0 = node_offsets[s]
            T = node_offsets[s + 1] - n0
            if T == 0:
                scores[s] = 0.0
                continue
            scores[s] = _viterbi_one(unary, y, loss_weights, pairwise, pw_index, n0,
                                     edge_offsets[s], T, bp, labels, delta, best, arg, row)


def viterbi_batch(node_offsets, edge_offsets, unary, pairwise, pw_index, y,
                  loss_weights, active, chunks, bp, labels, scores):
    """Max-sum decoding of every active chain.

    ``y`` (N,) int64 true labels and ``loss_weights`` (K,) add the weighted
    Hamming loss to the unary scores (loss-augmented decoding); pass an empty
    ``y`` for plain MAP.  ``bp`` is an (N, K) integer scratch array (uint8 is
    enough for K <= 256).  Writes ``labels`` (N,) and ``scores`` (S,).

    Runs on the threads in force (:func:`~skstruct._core._pool.for_chunks`).
    """
    def run(c0, c1):
        _viterbi_batch_chunks(node_offsets, edge_offsets, unary,
                              pairwise, pw_index, y, loss_weights,
                              active, chunks, bp, labels, scores, c0,
                              c1)

    for_chunks(run, chunks)


@jit
def viterbi_chain(unary, pairwise, pw_index, bp, labels):
    """Max-sum decoding of one chain (nodes ``0..T-1``, transition ``t`` scored by
    ``pairwise[pw_index[t]]``): the serial path of a single chain, without the
    batch's offsets, chunks and thread pool.  ``bp`` is a (T, K) integer
    scratch (uint8 for K <= 256); writes ``labels`` (T,), returns the score.
    """
    T, K = unary.shape
    if T == 0:
        return 0.0
    y = np.zeros(0, np.int64)
    w = np.ones(K)
    return _viterbi_one(unary, y, w, pairwise, pw_index, 0, 0, T, bp, labels, np.empty(K),
                        np.empty(K), np.empty(K), np.empty(K))


@jit
def _logsumexp(x):
    m = -np.inf
    for k in range(x.shape[0]):
        if x[k] > m:
            m = x[k]
    if m == -np.inf:
        return -np.inf
    s = 0.0
    for k in range(x.shape[0]):
        s += np.exp(x[k] - m)
    return m + np.log(s)


@jit
def _exp_row(unary, v, erow):
    """exp(unary[v] - max) into ``erow``; returns the max (``-inf`` if none)."""
    K = unary.shape[1]
    m = -np.inf
    for k in range(K):
        if unary[v, k] > m:
            m = unary[v, k]
    if m == -np.inf:
        for k in range(K):
            erow[k] = 0.0
        return m
    for k in range(K):
        erow[k] = np.exp(unary[v, k] - m)
    return m


@jit
def _write_edge(edge_mode, edge_out, c, pw_index, e, xi, scale):
    K = xi.shape[0]
    if edge_mode == EDGES_EACH:
        for i in range(K):
            for j in range(K):
                edge_out[0, e, i, j] = xi[i, j] * scale
    else:
        m = pw_index[e]
        for i in range(K):
            for j in range(K):
                edge_out[c, m, i, j] += xi[i, j] * scale


@jit
def forward_step(alpha, Pe, eu, out):
    """``out[j] = eu[j] * sum_i alpha[i] Pe[i, j]``: one step of the scaled
    forward recursion (``Pe`` the exponentiated pairwise table)."""
    K = out.shape[0]
    for j in range(K):
        out[j] = 0.0
    # four rows of Pe a sweep over out (see maxplus_step)
    i = 0
    while i + 3 < K:
        a0 = alpha[i]
        a1 = alpha[i + 1]
        a2 = alpha[i + 2]
        a3 = alpha[i + 3]
        r0 = Pe[i]
        r1 = Pe[i + 1]
        r2 = Pe[i + 2]
        r3 = Pe[i + 3]
        for j in range(K):
            out[j] += (a0 * r0[j] + a1 * r1[j]) + (a2 * r2[j] + a3 * r3[j])
        i += 4
    while i < K:
        a0 = alpha[i]
        r0 = Pe[i]
        for j in range(K):
            out[j] += a0 * r0[j]
        i += 1
    for j in range(K):
        out[j] *= eu[j]


@jit
def maxplus_step(prev, P, out):
    """``out[j] = max_i prev[i] + P[i, j]``: one step of the Viterbi recursion.

    Four rows of ``P`` a sweep over ``out``: a row at a time, the loop is
    bound by loading and storing ``out`` once per row, not by the arithmetic.
    """
    K = out.shape[0]
    for j in range(K):
        out[j] = prev[0] + P[0, j]
    i = 1
    while i + 3 < K:
        d0 = prev[i]
        d1 = prev[i + 1]
        d2 = prev[i + 2]
        d3 = prev[i + 3]
        r0 = P[i]
        r1 = P[i + 1]
        r2 = P[i + 2]
        r3 = P[i + 3]
        for j in range(K):
            out[j] = max(max(out[j], max(d0 + r0[j], d1 + r1[j])),
                         max(d2 + r2[j], d3 + r3[j]))
        i += 4
    while i < K:
        d0 = prev[i]
        r0 = P[i]
        for j in range(K):
            out[j] = max(out[j], d0 + r0[j])
        i += 1


@jit
def scaled_forward(unary, n0, epair, pmax, pw_index, e0, T, eu, alpha, scale, tmp):
    """The forward pass of the scaled recursion on nodes ``n0:n0 + T``.

    ``alpha[t]`` (rows from 0) receives the forward message of node ``t``
    normalised to sum 1, ``scale[t]`` its sum before normalising, ``eu[t]``
    the node's exponentiated unaries (``exp(unary - max)``).  Returns the log
    partition, or NaN as soon as some step has lost too much mass to be
    trusted.
    """
    K = unary.shape[1]
    logz = 0.0
    for t in range(T):
        m = _exp_row(unary, n0 + t, eu[t])
        if m == -np.inf:
            return np.nan
        if t == 0:
            for j in range(K):
                tmp[j] = eu[0, j]
        else:
            e = pw_index[e0 + t - 1]
            m += pmax[e]
            forward_step(alpha[t - 1], epair[e], eu[t], tmp)
        s = 0.0
        for j in range(K):
            s += tmp[j]
        if not s >= _TINY:
            return np.nan
        logz += m + np.log(s)
        scale[t] = s
        inv = 1.0 / s
        for j in range(K):
            alpha[t, j] = tmp[j] * inv
    return logz


@jit
def _fb_scaled(unary, epair, pmax, pw_index, n0, e0, T, node_out, edge_mode, edge_out, c, w):
    """Forward-backward in scaled probability space.

    Returns the log partition, or NaN as soon as some step has lost too much
    mass to be trusted; the caller then redoes the chain in log space.
    ``w`` is an :class:`FBWork`: ``w.eu`` a (T, K) scratch for the exponentiated
    unaries, so each is computed once, ``w.scale`` a (T,) scratch.
    """
    eu, scale, beta, nbeta, tmp, xi = w.eu, w.scale, w.beta, w.nbeta, w.tmp, w.xi
    K = unary.shape[1]
    # forward: node_out rows hold the alphas, normalised to sum 1
    logz = scaled_forward(unary, n0, epair, pmax, pw_index, e0, T, eu, node_out[n0:n0 + T],
                          scale, tmp)
    if np.isnan(logz):
        return logz
    # backward, finishing node t + 1 and edge (t, t + 1) on the way
    for k in range(K):
        beta[k] = 1.0
    for t in range(T - 2, -1, -1):
        Pe = epair[pw_index[e0 + t]]
        for j in range(K):
            tmp[j] = eu[t + 1, j] * beta[j]
        tot = 0.0
        if edge_mode == EDGES_NONE:
            for i in range(K):
                acc = 0.0
                for j in range(K):
                    acc += Pe[i, j] * tmp[j]
                nbeta[i] = acc
                tot += node_out[n0 + t, i] * acc
        else:
            for i in range(K):
                a = node_out[n0 + t, i]
                acc = 0.0
                for j in range(K):
                    p = Pe[i, j] * tmp[j]
                    xi[i, j] = a * p
                    acc += p
                nbeta[i] = acc
                tot += a * acc
        if not tot >= _TINY:
            return np.nan
        if edge_mode != EDGES_NONE:
            _write_edge(edge_mode, edge_out, c, pw_index, e0 + t, xi, 1.0 / tot)
        s = 0.0
        for j in range(K):
            node_out[n0 + t + 1, j] *= beta[j]
            s += node_out[n0 + t + 1, j]
        inv = 1.0 / s
        for j in range(K):
            node_out[n0 + t + 1, j] *= inv
        bs = 0.0
        for i in range(K):
            bs += nbeta[i]
        if not bs >= _TINY:
            return np.nan
        inv = 1.0 / bs
        for i in range(K):
            beta[i] = nbeta[i] * inv
    s = 0.0
    for j in range(K):
        node_out[n0, j] *= beta[j]
        s += node_out[n0, j]
    for j in range(K):
        node_out[n0, j] /= s
    return logz


@jit
def _fb_log(unary, pairwise, pw_index, n0, e0, T, node_out, edge_mode, edge_out, c,
            beta, nbeta, tmp, xi):
    """Forward-backward in log space: slower, exact whatever the dynamic range."""
    K = unary.shape[1]
    for k in range(K):
        node_out[n0, k] = unary[n0, k]
    for t in range(1, T):
        P = pairwise[pw_index[e0 + t - 1]]
        for j in range(K):
            for i in range(K):
                tmp[i] = node_out[n0 + t - 1, i] + P[i, j]
            node_out[n0 + t, j] = _logsumexp(tmp) + unary[n0 + t, j]
    logz = _logsumexp(node_out[n0 + T - 1])
    if logz == -np.inf:
        return logz
    for k in range(K):
        beta[k] = 0.0
    for t in range(T - 2, -1, -1):
        P = pairwise[pw_index[e0 + t]]
        if edge_mode != 0:
            for i in range(K):
                a = node_out[n0 + t, i]
                for j in range(K):
                    xi[i, j] = np.exp(a + P[i, j] + unary[n0 + t + 1, j] + beta[j] - logz)
            _write_edge(edge_mode, edge_out, c, pw_index, e0 + t, xi, 1.0)
        for i in range(K):
            for j in range(K):
                tmp[j] = P[i, j] + unary[n0 + t + 1, j] + beta[j]
            nbeta[i] = _logsumexp(tmp)
        for j in range(K):
            node_out[n0 + t + 1, j] = np.exp(node_out[n0 + t + 1, j] + beta[j] - logz)
            beta[j] = nbeta[j]
    for j in range(K):
        node_out[n0, j] = np.exp(node_out[n0, j] + beta[j] - logz)
    return logz


@jit
def exp_tables(pairwise):
    """``exp(pairwise[m] - max_m)`` for every table ``m`` and the maxima (0 for a
    table that is all ``-inf``): the scaled forward-backward's transition tables."""
    K = pairwise.shape[1]
    M = pairwise.shape[0]
    pmax = np.empty(M)
    epair = np.empty_like(pairwise)
    for m in range(M):
        mx = -np.inf
        for i in range(K):
            for j in range(K):
                if pairwise[m, i, j] > mx:
                    mx = pairwise[m, i, j]
        pmax[m] = mx if mx > -np.inf else 0.0
        for i in range(K):
            for j in range(K):
                epair[m, i, j] = np.exp(pairwise[m, i, j] - pmax[m])
    return epair, pmax


@jit
def _fb_chunk(node_offsets, edge_offsets, unary, pairwise, epair, pmax, pw_index, active,
              lo, hi, edge_mode, node_out, edge_out, c, logz_out, use_log):
    """Sum-product over samples ``lo:hi``; returns whether a scaled pass failed
    after writing edge sums (which then have to be rebuilt)."""
    K = unary.shape[1]
    tmax = 0
    for s in range(lo, hi):
        tmax = max(tmax, node_offsets[s + 1] - node_offsets[s])
    w = FBWork(eu=np.empty((tmax, K)), scale=np.empty(tmax), beta=np.empty(K),
               nbeta=np.empty(K), tmp=np.empty(K), xi=np.empty((K, K)))
    dirty = False
    for s in range(lo, hi):
        if not active[s]:
            continue
        n0 = node_offsets[s]
        T = node_offsets[s + 1] - n0
        e0 = edge_offsets[s]
        if T == 0:
            logz_out[s] = 0.0
            continue
        logz = np.nan
        if not use_log[s]:
            logz = _fb_scaled(unary, epair, pmax, pw_index, n0, e0, T, node_out, edge_mode,
                              edge_out, c, w)
            if np.isnan(logz):
                use_log[s] = True
                if edge_mode == EDGES_PER_TABLE:
                    dirty = True
                    continue
        if use_log[s]:
            logz = _fb_log(unary, pairwise, pw_index, n0, e0, T, node_out, edge_mode,
                           edge_out, c, w.beta, w.nbeta, w.tmp, w.xi)
        if logz == -np.inf:
            node_out[n0:n0 + T] = 0.0
            if edge_mode == EDGES_EACH:
                edge_out[0, e0:e0 + T - 1] = 0.0
        logz_out[s] = logz
    return dirty


@jit
def _fb_chunks(node_offsets, edge_offsets, unary, pairwise, epair, pmax, pw_index, active,
               chunks, edge_mode, node_out, edge_out, logz_out, use_log, c0, c1):
    # the kernel of forward_backward_batch, over the chunks c0 <= c < c1
    for c in range(c0, c1):
        dirty = _fb_chunk(node_offsets, edge_offsets, unary, pairwise, epair, pmax, pw_index,
                          active, chunks[c], chunks[c + 1], edge_mode, node_out, edge_out, c,
                          logz_out, use_log)
        if dirty:
            # rare: rebuild this chunk's sums, the failed chains now in log space
            edge_out[c] = 0.0
            _fb_chunk(node_offsets, edge_offsets, unary, pairwise, epair, pmax, pw_index,
                      active, chunks[c], chunks[c + 1], edge_mode, node_out, edge_out, c,
                      logz_out, use_log)


def forward_backward_batch(node_offsets, edge_offsets, unary, pairwise, pw_index, active,
                           chunks, edge_mode, node_out, edge_out, logz_out):
    """Sum-product on every active chain.

    ``edge_out`` is 4-D: with ``edge_mode`` 0 it is ignored; 1 writes the
    marginal of every edge into ``edge_out[0]`` (shape (1, E, K, K)); 2 sums
    them per pairwise matrix into ``edge_out[chunk, pw_index[e]]`` (shape
    (n_chunks, M, K, K), zeroed by the caller), which is what a gradient with
    tied parameters needs.  An infeasible chain (every labelling scores
    ``-inf``) gets ``logz = -inf`` and all-zero marginals.  Runs on the threads in
    force (:func:`~skstruct._core._pool.for_chunks`).
    """
    epair, pmax = exp_tables(pairwise)
    use_log = np.zeros(node_offsets.shape[0] - 1, np.bool_)

    def run(c0, c1):
        _fb_chunks(node_offsets, edge_offsets, unary, pairwise, epair, pmax, pw_index, active,
                   chunks, edge_mode, node_out, edge_out, logz_out, use_log, c0, c1)

    for_chunks(run, chunks)


@jit
def forward_backward_chain(unary, pairwise, pw_index, edge_mode, node_out, edge_out):
    """Sum-product on one chain, serially (see :func:`forward_backward_batch` for
    ``edge_mode`` and ``edge_out``); returns the log partition."""
    T, K = unary.shape
    epair, pmax = exp_tables(pairwise)
    node_offsets = np.array([0, T], np.int64)
    edge_offsets = np.array([0, max(T - 1, 0)], np.int64)
    active = np.ones(1, np.bool_)
    use_log = np.zeros(1, np.bool_)
    logz = np.zeros(1)
    if _fb_chunk(node_offsets, edge_offsets, unary, pairwise, epair, pmax, pw_index, active,
                 0, 1, edge_mode, node_out, edge_out, 0, logz, use_log):
        edge_out[0] = 0.0
        _fb_chunk(node_offsets, edge_offsets, unary, pairwise, epair, pmax, pw_index, active,
                  0, 1, edge_mode, node_out, edge_out, 0, logz, use_log)
    return logz[0]


@jit
def _max_marginals_batch_chunks(node_offsets, edge_offsets,
                                unary, pairwise, pw_index, active,
                                chunks, out, c0, c1):
    # the kernel of max_marginals_batch, over the chunks c0 <= c < c1
    K = unary.shape[1]
    for c in range(c0, c1):
        beta = np.empty(K)
        nbeta = np.empty(K)
        for s in range(chunks[c], chunks[c + 1]):
            if not active[s]:
                continue
            n0 = node_offsets[s]
            T = node_offsets[s + 1] - n0
            e0 = edge_offsets[s]
            if T == 0:
                continue
            for k in range(K):
                out[n0, k] = unary[n0, k]
            for t in range(1, T):
                P = pairwise[pw_index[e0 + t - 1]]
                for j in range(K):
                    out[n0 + t, j] = -np.inf
                for i in range(K):
                    a = out[n0 + t - 1, i]
                    for j in range(K):
                        v = a + P[i, j]
                        if v > out[n0 + t, j]:
                            out[n0 + t, j] = v
                for j in range(K):
                    out[n0 + t, j] += unary[n0 + t, j]
            for k in range(K):
                beta[k] = 0.0
            for t in range(T - 2, -1, -1):
                P = pairwise[pw_index[e0 + t]]
                for i in range(K):
                    m = -np.inf
                    for j in range(K):
                        v = P[i, j] + unary[n0 + t + 1, j] + beta[j]
                        if v > m:
                            m = v
                    nbeta[i] = m
                for j in range(K):
                    out[n0 + t + 1, j] += beta[j]
                    beta[j] = nbeta[j]
            for j in range(K):
                out[n0, j] += beta[j]


def max_marginals_batch(node_offsets, edge_offsets, unary, pairwise,
                        pw_index, active, chunks, out):
    """Max-marginals of every active chain: ``out[v, k]`` is the best score of a
    labelling of the chain that gives node ``v`` label ``k``.

    Runs on the threads in force (:func:`~skstruct._core._pool.for_chunks`).
    """
    def run(c0, c1):
        _max_marginals_batch_chunks(node_offsets, edge_offsets,
                                    unary, pairwise, pw_index,
                                    active, chunks, out, c0, c1)

    for_chunks(run, chunks)
