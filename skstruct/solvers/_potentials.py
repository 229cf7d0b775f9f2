"""Node and edge log-potentials of a whole design at given weights (one parallel call)."""

import numpy as np
from numba import prange

from ..inference._jit import pjit
from ..inference._primal_dual import _soft
from ._oracle import edge_tables, unary_scores


@pjit
def potentials(node_offsets, edge_offsets, edges, xdata, xind, xptr, xrow, xoff, W, cmap, csign,
               dense, tied, pwi, edata, eind, eptr, P, y, lw, loss, chunks, theta_v, PE,
               truth):
    """Node scores, loss-augmented when ``loss`` (``+ lw[v]`` on every label but
    ``y[v]``), into ``theta_v`` (N, K); edge tables into ``PE`` (E, K, K) unless
    the design is ``tied`` (edge ``e`` then scores ``P[pwi[e]]``); and the
    score of the labelling ``y`` (without the loss) summed per chunk of
    samples into ``truth``.  Nodes with ``y == -1`` add nothing to it."""
    K = theta_v.shape[1]
    for c in prange(chunks.shape[0] - 1):
        total = 0.0
        for s in range(chunks[c], chunks[c + 1]):
            n0 = node_offsets[s]
            n1 = node_offsets[s + 1]
            unary_scores(n0, n1, xdata, xind, xptr, xrow, xoff, W, cmap, csign, 1.0, theta_v,
                         dense)
            for v in range(n0, n1):
                yv = y[v]
                if yv >= 0:
                    total += theta_v[v, yv]
                if loss:
                    w = lw[v]
                    for k in range(K):
                        if k != yv:
                            theta_v[v, k] += w
            e0 = edge_offsets[s]
            e1 = edge_offsets[s + 1]
            if not tied:
                edge_tables(e0, e1, edata, eind, eptr, P, PE)
            for e in range(e0, e1):
                a = y[edges[e, 0]]
                b = y[edges[e, 1]]
                if a < 0 or b < 0:
                    continue
                total += P[pwi[e], a, b] if tied else PE[e, a, b]
        truth[c] = total


@pjit
def fused_value(node_offsets, edge_offsets, edges, adj_offsets, adj_edge, adj_side, xdata, xind,
                xptr, xrow, xoff, W, cmap, csign, tied, pwi, edata, eind, eptr, P, y, lw, loss,
                c_node, c_edge, eps, lam, chunks, terms, truth):
    """:func:`potentials` and :func:`~skstruct.inference._primal_dual.pd_objective`
    (without beliefs) in one pass: the objective terms per sample and the
    true labelling's score per chunk, with no (N, K) or (E, K, K) array
    written.  For the line search, which evaluates many trial weights once
    each."""
    K = P.shape[1]
    Kp = W.shape[1]
    for c in prange(chunks.shape[0] - 1):
        acc = np.empty(Kp)
        x = np.empty(K)
        xe = np.empty(K * K)
        T = np.empty((K, K))
        t_truth = 0.0
        for s in range(chunks[c], chunks[c + 1]):
            total = 0.0
            for v in range(node_offsets[s], node_offsets[s + 1]):
                for q in range(Kp):
                    acc[q] = 0.0
                o = xoff[v]
                r = xrow[v]
                for p in range(xptr[r], xptr[r + 1]):
                    xv = xdata[p]
                    row = W[xind[p] + o]
                    for q in range(Kp):
                        acc[q] += xv * row[q]
                yv = y[v]
                for k in range(K):
                    x[k] = csign[k] * acc[cmap[k]]
                if yv >= 0:
                    t_truth += x[yv]
                if loss:
                    for k in range(K):
                        if k != yv:
                            x[k] += lw[v]
                for p in range(adj_offsets[v], adj_offsets[v + 1]):
                    mrow = lam[2 * adj_edge[p] + adj_side[p]]
                    for k in range(K):
                        x[k] -= mrow[k]
                total += _soft(x, K, eps * c_node[v])
            for e in range(edge_offsets[s], edge_offsets[s + 1]):
                if tied:
                    T[:, :] = P[pwi[e]]
                else:
                    T[:, :] = 0.0
                    for p in range(eptr[e], eptr[e + 1]):
                        ev = edata[p]
                        Tf = P[eind[p]]
                        for a in range(K):
                            for b in range(K):
                                T[a, b] += ev * Tf[a, b]
                ya = y[edges[e, 0]]
                yb = y[edges[e, 1]]
                if ya >= 0 and yb >= 0:
                    t_truth += T[ya, yb]
                la = lam[2 * e]
                lb = lam[2 * e + 1]
                for a in range(K):
                    for b in range(K):
                        xe[a * K + b] = T[a, b] + la[a] + lb[b]
                total += _soft(xe, K * K, eps * c_edge[e])
            terms[s] = total
        truth[c] = t_truth
