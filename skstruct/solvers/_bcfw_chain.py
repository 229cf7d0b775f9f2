"""BCFW specialised to chains with one shared transition table.

The same algorithm and the same arithmetic as :func:`._bcfw.bcfw_pass` with
margin rescaling, for the commonest case (sequence labelling: every sample a
chain, ``Kp == K``, one tied pairwise table, every sample small enough for
its Gram matrix), with the oracle, the corner and the line search fused into
one loop.  The general kernel spends most of a step on bookkeeping that this
case does not need (triplet lists, edge tables, decoder dispatch); here a
step is the unary scores, one loss-augmented Viterbi and a few short vector
loops.  The state layout is the general kernel's, so the two can alternate.
"""

import numpy as np

from .._core._jit import jit
from ..models._chain import chain_oracle as _chain_oracle
from ._bcfw import ELL, SIGMA, STEP, advance_average


@jit
def _fw_step(s, n0, n1, xdata, xind, xptr, xrow, xoff, y, lw, lam, inv, avg_scale, W, P,
             A, Pi, ell_i, En, Pt, gram, gofs, U, fwd, lab, Dn, best, corr, cidx):
    """One block step on sample ``s``: oracle, closed-form line search, updates.

    ``U, fwd, Dn`` (max_nodes, K) and ``lab`` (max_nodes,) are scratch
    indexed by position in the chain, ``corr, cidx`` (2 max_nodes) hold the
    sparse part of the pairwise direction.  The average's node coefficients
    ``En`` move by ``avg_scale * gamma * d`` (0 leaves them alone), and
    ``Pt`` by its pairwise part.  Returns ``(gap, d_ell)``: the block's
    Frank-Wolfe gap and its change of the loss term.
    """
    K = W.shape[1]
    KK = K * K
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
    # the dense sums run over Pi[s], the few corrected entries are fixed after
    pf = P.ravel()
    pi = Pi[s].ravel()
    sq = 0.0
    for q in range(KK):
        d = pi[q]
        dot += d * pf[q]
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
        # the entry's value before this correction, with the earlier ones
        old = pi[q]
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
        for c in range(K):
            av[c] -= gamma * dv[c]
    ptf = Pt.ravel()
    g = gamma * avg_scale
    if avg_scale != 0.0:
        for t in range(m):
            dv = Dn[t]
            ev = En[n0 + t]
            for c in range(K):
                ev[c] += g * dv[c]
    # P -= gamma dp, Pi[s] -= gamma dp, Pt += g dp: dense part, then corrections
    keep = 1.0 - gamma
    for q in range(KK):
        d = pi[q]
        pf[q] -= gamma * d
        ptf[q] += g * d
        pi[q] = keep * d
    for c in range(n_corr):
        q = cidx[c]
        d = corr[c]
        pf[q] -= gamma * d
        ptf[q] += g * d
        pi[q] -= gamma * d
    d_ell = gamma * (ell_s - ell_i[s])
    ell_i[s] += d_ell
    return gap, d_ell


@jit
def bcfw_chain_pass(node_offsets, xdata, xind, xptr, xrow, xoff, y, lw, order, lam, averaging,
                    W, P, A, Pi, ell_i, En, Pt, state, gram, gofs, max_nodes):
    """One BCFW pass (margin rescaling) over the chains in ``order``.

    ``P`` (K, K) is the shared transition table, ``Pi`` (S, K, K) the
    pairwise part of each block and ``Pt`` (K, K) the lazy average's; the
    other arguments are those of :func:`._bcfw.bcfw_pass`; ``max_nodes`` is
    the length of the longest chain.  Returns the sum of the per-block gaps.
    """
    n = node_offsets.shape[0] - 1
    K = W.shape[1]
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
    gap_sum = 0.0
    for s in order:
        n0 = node_offsets[s]
        n1 = node_offsets[s + 1]
        if n1 == n0:
            continue
        k = state[STEP]
        state[STEP] = k + 1.0
        avg_scale = 1.0 / state[SIGMA] if averaging and k > 0.0 else 0.0
        gap, d_ell = _fw_step(s, n0, n1, xdata, xind, xptr, xrow, xoff, y, lw, lam, inv,
                              avg_scale, W, P, A, Pi, ell_i, En, Pt, gram, gofs, U, fwd, lab,
                              Dn, best, corr, cidx)
        gap_sum += gap
        state[ELL] += d_ell
        if averaging:
            advance_average(state, k, En, Pt)
    return gap_sum
