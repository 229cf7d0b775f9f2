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

import numpy as np

from .._core._jit import jit
from .._core._validation import check_memory
from ..models._chain import chain_oracle as _chain_oracle
from ._bcfw_state import ELL, SIGMA, STEP, advance_average


@jit
def _find(idx, cnt, q):
    """Position of ``q`` among the first ``cnt`` entries of ``idx``, or -1."""
    # no early exit: a select per entry vectorises, a branch per entry does not
    j = -1
    for i in range(cnt):
        j = i if idx[i] == q else j
    return j


@jit
def _fw_step(s, n0, n1, xdata, xind, xptr, xrow, xoff, y, lw, lam, inv, avg_scale, W, P,
             A, pidx, pval, pcnt, ell_i, En, Pt, gram, gofs, U, fwd, lab, Dn, best, corr,
             cidx, cslot):
    """One block step on sample ``s``: oracle, closed-form line search, updates.

    ``U, fwd, Dn`` (max_nodes, K) and ``lab`` (max_nodes,) are scratch
    indexed by position in the chain, ``corr, cidx`` (2 max_nodes) hold the
    sparse part of the pairwise direction and ``cslot`` their places in the
    block's list (``pidx, pval, pcnt``: see :class:`SparseBlocks`; the caller
    leaves room for ``2 (n1 - n0 - 1)`` new entries).  The average's node
    coefficients ``En`` move by ``avg_scale * gamma * d`` (0 leaves them alone), and
    ``Pt`` by its pairwise part.  Returns ``(gap, d_ell)``: the block's
    Frank-Wolfe gap and its change of the loss term.
    """
    K = W.shape[1]
    m = n1 - n0
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
def bcfw_chain_pass(node_offsets, xdata, xind, xptr, xrow, xoff, y, lw, order, lam, averaging,
                    W, P, A, pidx, pval, pcnt, ell_i, En, Pt, state, gram, gofs, max_nodes):
    """One BCFW pass (margin rescaling) over the chains in ``order``.

    ``P`` (K, K) is the shared transition table, ``pidx, pval, pcnt`` the
    sparse pairwise blocks (:class:`SparseBlocks`) and ``Pt`` (K, K) the lazy
    average's; the other arguments are those of :func:`._bcfw.bcfw_pass`;
    ``max_nodes`` is the length of the longest chain.  Returns the sum of
    the per-block gaps and the number of steps taken: fewer than
    ``len(order)`` when a block's list is full (the caller grows the lists
    and goes on from there).
    """
    n = node_offsets.shape[0] - 1
    K = W.shape[1]
    cap = pidx.shape[1]
    inv = 1.0 / (lam * n)
    best = np.empty(K)
    # per-step scratch, indexed by position in the chain so that it stays in
    # cache whatever the order of the samples
    M = max(max_nodes, 1)
    U = np.empty((M, K))
    fwd = np.empty((M, K))
    Dn = np.empty((M, K))
    lab = np.empty(M, np.int64)
    corr = np.empty(2 * M)
    cidx = np.empty(2 * M, np.int64)
    cslot = np.empty(2 * M, np.int64)
    gap_sum = 0.0
    for i in range(order.shape[0]):
        s = order[i]
        n0 = node_offsets[s]
        n1 = node_offsets[s + 1]
        if n1 == n0:
            continue
        if cap < K * K and pcnt[s] + 2 * (n1 - n0 - 1) > cap:
            return gap_sum, i
        k = state[STEP]
        state[STEP] = k + 1.0
        avg_scale = 1.0 / state[SIGMA] if averaging and k > 0.0 else 0.0
        gap, d_ell = _fw_step(s, n0, n1, xdata, xind, xptr, xrow, xoff, y, lw, lam, inv,
                              avg_scale, W, P, A, pidx, pval, pcnt, ell_i, En, Pt, gram, gofs,
                              U, fwd, lab, Dn, best, corr, cidx, cslot)
        gap_sum += gap
        state[ELL] += d_ell
        if averaging:
            advance_average(state, k, En, Pt)
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
