"""BCFW specialised to chains with one shared transition table.

The same algorithm and the same arithmetic as :func:`._bcfw.bcfw_pass` with
margin rescaling, for the commonest case (sequence labelling: every sample a
chain, ``Kp == K``, one tied pairwise table, every sample small enough for
its Gram matrix), with the oracle, the corner and the line search fused into
one loop.  The general kernel spends most of a step on bookkeeping that this
case does not need (triplet lists, edge tables, decoder dispatch); here a
step is the unary scores, one loss-augmented Viterbi and a few short vector
loops.  The state is the general kernel's except for the pairwise blocks, which are
kept sparse (see :class:`SparseBlocks`).
"""

from typing import NamedTuple

import numpy as np

from .._core._jit import jit
from .._core._validation import check_memory
from ..models._chain import chain_oracle as _chain_oracle
from ._bcfw_state import advance_average


class ChainBlocks(NamedTuple):
    """The dual blocks of the fused kernel: node coefficients dense, pairwise parts as
    short lists (:class:`SparseBlocks`), and the lazy average's increments."""

    A: np.ndarray          # (N, K) node coefficients of every block
    idx: np.ndarray        # (S, cap) int64 flat indices of each block's pairwise entries
    val: np.ndarray        # (S, cap) their values
    cnt: np.ndarray        # (S,) int64 entries in use
    ell_i: np.ndarray      # (S,) every block's loss term
    En: np.ndarray         # (N, K) node coefficients of w_tilde
    Pt: np.ndarray         # (K, K) pairwise part of w_tilde


class ChainWork(NamedTuple):
    """Per-step scratch of :func:`_fw_step`, indexed by position in the chain."""

    U: np.ndarray          # (M, K) node scores
    fwd: np.ndarray        # (M, K) Viterbi scores
    lab: np.ndarray        # (M,) int64 the corner's labels
    Dn: np.ndarray         # (M, K) the direction's node part
    best: np.ndarray       # (K,)
    corr: np.ndarray       # (2 M,) the pairwise direction's corrections
    cidx: np.ndarray       # (2 M,) int64 their entries
    cslot: np.ndarray      # (2 M,) int64 their places in the block's list


@jit
def _find(idx, cnt, q):
    """Position of ``q`` among the first ``cnt`` entries of ``idx``, or -1."""
    # no early exit: a select per entry vectorises, a branch per entry does not
    j = -1
    for i in range(cnt):
        j = i if idx[i] == q else j
    return j


@jit
def _fw_step(D, s, n0, n1, lam, inv, avg_scale, W, P, blocks, gram, gofs, w):
    """One block step on sample ``s``: oracle, closed-form line search, updates.

    ``blocks`` are the :class:`ChainBlocks` (the caller leaves room for ``2 (n1 - n0 -
    1)`` new entries in the block's list), ``w`` the :class:`ChainWork`: ``corr, cidx``
    hold the sparse part of the pairwise direction and ``cslot`` their places in the
    block's list.  The average's node
    coefficients ``En`` move by ``avg_scale * gamma * d`` (0 leaves them alone), and
    ``Pt`` by its pairwise part.  Returns ``(gap, d_ell)``: the block's
    Frank-Wolfe gap and its change of the loss term.
    """
    K = W.shape[1]
    m = n1 - n0
    xdata, xind, xptr, xrow, xoff = D.xdata, D.xind, D.xptr, D.xrow, D.xoff
    y, lw = D.y, D.loss_weight
    A, pidx, pval, pcnt = blocks.A, blocks.idx, blocks.val, blocks.cnt
    ell_i, En, Pt = blocks.ell_i, blocks.En, blocks.Pt
    U, fwd, lab, Dn, best = w.U, w.fwd, w.lab, w.Dn, w.best
    corr, cidx, cslot = w.corr, w.cidx, w.cslot
    ell_s = _chain_oracle(n0, n1, xdata, xind, xptr, xrow, xoff, y, lw, W, P, U, fwd, lab,
                          best) * (lam * inv)
    # node part of d = w_i - w_s: A_v - inv (e_y - e_lab)
    dot = 0.0
    for t in range(m):
        av = A[n0 + t]
        dv = Dn[t]
        uv = U[t]
        for c in range(K):
            d = av[c]
            dv[c] = d
            dot += d * uv[c]
        a = y[n0 + t]
        b = lab[t]
        if a != b:
            dv[a] -= inv
            dv[b] += inv
            dot += inv * (uv[b] - uv[a])
    # pairwise part dp = Pi[s] - inv (counts(y) - counts(lab)), kept implicit:
    # the sums run over the block's entries, the few corrected ones are fixed after
    pf = P.ravel()
    idx = pidx[s]
    val = pval[s]
    cnt = pcnt[s]
    sq = 0.0
    for j in range(cnt):
        d = val[j]
        dot += d * pf[idx[j]]
        sq += d * d
    # the corrections, entry by entry (a transition may repeat in a word)
    n_corr = 0
    for t in range(1, m):
        a0 = y[n0 + t - 1] * K + y[n0 + t]
        a1 = lab[t - 1] * K + lab[t]
        if a0 != a1:
            cidx[n_corr] = a0
            corr[n_corr] = -inv
            cidx[n_corr + 1] = a1
            corr[n_corr + 1] = inv
            n_corr += 2
    for c in range(n_corr):
        q = cidx[c]
        j = _find(idx, cnt, q)
        cslot[c] = j
        # the entry's value before this correction, with the earlier ones
        old = val[j] if j >= 0 else 0.0
        for c2 in range(c):
            if cidx[c2] == q:
                old += corr[c2]
        new = old + corr[c]
        dot += corr[c] * pf[q]
        sq += new * new - old * old
    # || sum_v x_v (x) d_v ||^2 from the sample's Gram matrix
    g0 = gofs[s]
    for a in range(m):
        da = Dn[a]
        for b in range(a, m):
            db = Dn[b]
            dd = 0.0
            for c in range(K):
                dd += da[c] * db[c]
            sq += (1.0 if a == b else 2.0) * gram[g0 + a * m + b] * dd
    gap = lam * dot - ell_i[s] + ell_s
    if sq <= 0.0:
        return gap, 0.0
    gamma = min(max(gap / (lam * sq), 0.0), 1.0)
    if gamma == 0.0:
        return gap, 0.0
    g = gamma * avg_scale
    for t in range(m):
        v = n0 + t
        dv = Dn[t]
        o = xoff[v]
        r = xrow[v]
        for p in range(xptr[r], xptr[r + 1]):
            wrow = W[xind[p] + o]
            gx = gamma * xdata[p]
            for c in range(K):
                wrow[c] -= gx * dv[c]
        av = A[v]
        ev = En[v]
        # (with avg_scale 0, En moves by zero)
        for c in range(K):
            av[c] -= gamma * dv[c]
            ev[c] += g * dv[c]
    ptf = Pt.ravel()
    # P -= gamma dp, Pi[s] -= gamma dp, Pt += g dp: the block's entries, then
    # the corrections (new entries join the block's list)
    keep = 1.0 - gamma
    for j in range(cnt):
        q = idx[j]
        d = val[j]
        pf[q] -= gamma * d
        ptf[q] += g * d
        val[j] = keep * d
    for c in range(n_corr):
        q = cidx[c]
        d = corr[c]
        pf[q] -= gamma * d
        ptf[q] += g * d
        j = cslot[c]
        if j < 0:
            j = _find(idx, cnt, q)
            if j < 0:
                j = cnt
                idx[j] = q
                val[j] = 0.0
                cnt += 1
        val[j] -= gamma * d
    pcnt[s] = cnt
    d_ell = gamma * (ell_s - ell_i[s])
    ell_i[s] += d_ell
    return gap, d_ell


@jit
def bcfw_chain_pass(D, order, lam, averaging, W, P, blocks, state, gram, gofs, max_nodes):
    """One BCFW pass (margin rescaling) over the chains in ``order``.

    ``P`` (K, K) is the shared transition table, ``blocks`` the :class:`ChainBlocks`
    (``blocks.Pt`` (K, K) the lazy average's); the other arguments are those of
    :func:`._bcfw.bcfw_pass`;
    ``max_nodes`` is the length of the longest chain.  Returns the sum of
    the per-block gaps and the number of steps taken: fewer than
    ``len(order)`` when a block's list is full (the caller grows the lists
    and goes on from there).
    """
    node_offsets = D.node_offsets
    n = node_offsets.shape[0] - 1
    K = W.shape[1]
    pcnt = blocks.cnt
    cap = blocks.idx.shape[1]
    inv = 1.0 / (lam * n)
    # per-step scratch, indexed by position in the chain so that it stays in
    # cache whatever the order of the samples
    M = max(max_nodes, 1)
    w = ChainWork(U=np.empty((M, K)), fwd=np.empty((M, K)), lab=np.empty(M, np.int64),
                  Dn=np.empty((M, K)), best=np.empty(K), corr=np.empty(2 * M),
                  cidx=np.empty(2 * M, np.int64), cslot=np.empty(2 * M, np.int64))
    gap_sum = 0.0
    for i in range(order.shape[0]):
        s = order[i]
        n0 = node_offsets[s]
        n1 = node_offsets[s + 1]
        if n1 == n0:
            continue
        if cap < K * K and pcnt[s] + 2 * (n1 - n0 - 1) > cap:
            return gap_sum, i
        k = state.step[()]
        state.step[()] = k + 1.0
        avg_scale = 1.0 / state.sigma[()] if averaging and k > 0.0 else 0.0
        gap, d_ell = _fw_step(D, s, n0, n1, lam, inv, avg_scale, W, P, blocks, gram, gofs, w)
        gap_sum += gap
        state.ell[()] += d_ell
        if averaging:
            advance_average(state, k, blocks.En, blocks.Pt)
    return gap_sum, order.shape[0]


class SparseBlocks:
    """The pairwise parts of the dual blocks, one short list per sample.

    A block's pairwise part is the combination of the transition counts of
    the labellings its steps have met, a few dozen of the ``K^2`` entries;
    a dense ``(n_samples, K, K)`` array makes every step stream ``K^2``
    numbers through the cache for them.  Block ``s`` holds its entries at
    flat indices ``idx[s, :cnt[s]]`` with values ``val[s, :cnt[s]]``; the
    lists grow (doubling, up to ``K^2``) when a step could overflow them.

    Parameters
    ----------
    n_samples, n_classes : int
    capacity : int
        Initial length of every list.
    """

    def __init__(self, n_samples, n_classes, capacity):
        self.n_classes = n_classes
        cap = min(max(capacity, 1), n_classes * n_classes)
        self.idx = np.zeros((n_samples, cap), np.int64)
        self.val = np.zeros((n_samples, cap))
        self.cnt = np.zeros(n_samples, np.int64)

    def grow(self, need):
        """Room for at least ``need`` entries in every list."""
        cap = self.idx.shape[1]
        new = min(max(2 * cap, need), self.n_classes ** 2)
        S = self.cnt.shape[0]
        check_memory(16 * S * new, f"BCFW's pairwise dual blocks ({S} samples x {new} "
                     "entries)", "use solver='subgradient', which keeps no per-sample blocks")
        idx = np.zeros((S, new), np.int64)
        val = np.zeros((S, new))
        idx[:, :cap] = self.idx
        val[:, :cap] = self.val
        self.idx, self.val = idx, val

    def dense(self):
        """The blocks as an ``(n_samples, K, K)`` array."""
        S, K = self.cnt.shape[0], self.n_classes
        out = np.zeros((S, K * K))
        used = np.arange(self.idx.shape[1]) < self.cnt[:, None]
        out[np.nonzero(used)[0], self.idx[used]] = self.val[used]
        return out.reshape(S, K, K)
