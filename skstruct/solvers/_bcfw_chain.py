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

from ..inference._jit import jit
from ._bcfw import ELL, SIGMA, STEP, advance_average


@jit
def _chain_oracle(n0, n1, xdata, xind, xptr, xrow, xoff, y, lw, W, P, U, fwd, lab, best):
    """Unary scores of nodes ``n0:n1`` into ``U`` and their loss-augmented
    Viterbi labelling into ``lab`` (``fwd`` holds the forward scores); returns
    the loss of that labelling."""
    K = W.shape[1]
    for v in range(n0, n1):
        uv = U[v]
        for c in range(K):
            uv[c] = 0.0
        o = xoff[v]
        r = xrow[v]
        for p in range(xptr[r], xptr[r + 1]):
            x = xdata[p]
            wrow = W[xind[p] + o]
            for c in range(K):
                uv[c] += x * wrow[c]
    # Viterbi on U + loss; the forward pass keeps every node's scores (in
    # ``bp``, which is float here) instead of back-pointers: a pure max-plus
    # loop vectorises twice as well, and the backtrack recomputes one argmax
    # per node
    yv = y[n0]
    w = lw[n0]
    d0v = fwd[n0]
    for k in range(K):
        d0v[k] = U[n0, k] + w
    d0v[yv] -= w
    for t in range(1, n1 - n0):
        v = n0 + t
        prev = fwd[v - 1]
        cur = fwd[v]
        for j in range(K):
            best[j] = prev[0] + P[0, j]
        for i in range(1, K):
            d = prev[i]
            Pi = P[i]
            for j in range(K):
                best[j] = max(best[j], d + Pi[j])
        w = lw[v]
        uv = U[v]
        for j in range(K):
            cur[j] = best[j] + uv[j] + w
        cur[y[v]] -= w
    last = fwd[n1 - 1]
    k = 0
    for j in range(1, K):
        if last[j] > last[k]:
            k = j
    lab[n1 - 1] = k
    for v in range(n1 - 1, n0, -1):
        prev = fwd[v - 1]
        # the predecessor that attains the forward max (first one on ties)
        b = 0
        bv = prev[0] + P[0, k]
        for i in range(1, K):
            val = prev[i] + P[i, k]
            if val > bv:
                bv = val
                b = i
        k = b
        lab[v - 1] = k
    ell = 0.0
    for v in range(n0, n1):
        if lab[v] != y[v]:
            ell += lw[v]
    return ell


@jit
def _fw_step(s, n0, n1, xdata, xind, xptr, xrow, xoff, y, lw, lam, inv, avg_scale, W, P,
             A, Pi, ell_i, En, Pt, gram, gofs, U, fwd, lab, Dn, DP, best):
    """One block step on sample ``s``: oracle, closed-form line search, updates.

    The average's node coefficients ``En`` move by ``avg_scale * gamma * d``
    (0 leaves them alone), and ``Pt`` by its pairwise part.  Returns
    ``(gap, d_ell)``: the block's Frank-Wolfe gap and its change of the loss
    term.
    """
    K = W.shape[1]
    KK = K * K
    ell_s = _chain_oracle(n0, n1, xdata, xind, xptr, xrow, xoff, y, lw, W, P, U, fwd, lab,
                          best) * (lam * inv)
    # node part of d = w_i - w_s: A_v - inv (e_y - e_lab)
    dot = 0.0
    for v in range(n0, n1):
        av = A[v]
        dv = Dn[v]
        uv = U[v]
        for c in range(K):
            d = av[c]
            dv[c] = d
            dot += d * uv[c]
        a = y[v]
        b = lab[v]
        if a != b:
            dv[a] -= inv
            dv[b] += inv
            dot += inv * (uv[b] - uv[a])
    # pairwise part: Pi[s] - inv (counts(y) - counts(lab))
    pf = P.ravel()
    dp = DP.ravel()
    pi = Pi[s].ravel()
    for q in range(KK):
        dp[q] = pi[q]
    for v in range(n0 + 1, n1):
        a0 = y[v - 1] * K + y[v]
        a1 = lab[v - 1] * K + lab[v]
        if a0 != a1:
            dp[a0] -= inv
            dp[a1] += inv
    sq = 0.0
    for q in range(KK):
        d = dp[q]
        dot += d * pf[q]
        sq += d * d
    # || sum_v x_v (x) d_v ||^2 from the sample's Gram matrix
    g0 = gofs[s]
    m = n1 - n0
    for a in range(m):
        da = Dn[n0 + a]
        for b in range(a, m):
            db = Dn[n0 + b]
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
    for v in range(n0, n1):
        dv = Dn[v]
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
    if avg_scale != 0.0:
        g = gamma * avg_scale
        for v in range(n0, n1):
            dv = Dn[v]
            ev = En[v]
            for c in range(K):
                ev[c] += g * dv[c]
        for q in range(KK):
            d = dp[q]
            pf[q] -= gamma * d
            pi[q] -= gamma * d
            ptf[q] += g * d
    else:
        for q in range(KK):
            d = dp[q]
            pf[q] -= gamma * d
            pi[q] -= gamma * d
    d_ell = gamma * (ell_s - ell_i[s])
    ell_i[s] += d_ell
    return gap, d_ell


@jit
def bcfw_chain_pass(node_offsets, xdata, xind, xptr, xrow, xoff, y, lw, order, lam, averaging,
                    W, P, A, Pi, ell_i, En, Pt, state, gram, gofs, U, fwd, lab, Dn, DP):
    """One BCFW pass (margin rescaling) over the chains in ``order``.

    ``P`` (K, K) is the shared transition table, ``Pi`` (S, K, K) the
    pairwise part of each block and ``Pt`` (K, K) the lazy average's; the
    other arguments are those of :func:`._bcfw.bcfw_pass`.  ``fwd``, ``Dn``
    (N, K) and ``DP`` (K, K) are scratch.  Returns the sum of the per-block
    gaps.
    """
    n = node_offsets.shape[0] - 1
    K = W.shape[1]
    inv = 1.0 / (lam * n)
    best = np.empty(K)
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
                              Dn, DP, best)
        gap_sum += gap
        state[ELL] += d_ell
        if averaging:
            advance_average(state, k, En, Pt)
    return gap_sum
