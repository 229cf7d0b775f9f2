"""Joint-feature arithmetic of the built-in models on a packed design.

Node scores ``x_v @ W`` through the class-to-column map, edge tables from
edge features, the score of a labelling, node coefficients expanded into
weights, and the log-potentials of a whole design in one parallel call.
See :mod:`skstruct.models._design` for the array conventions.
"""

import numpy as np

from .._core._jit import jit
from .._core._pool import for_chunks


@jit
def add_rows(out, W, xdata, xind, p0, p1, o):
    """``out += sum_p xdata[p] * W[xind[p] + o]`` over ``p0 <= p < p1``.

    Four rows a sweep over ``out``: a row at a time, the loop is bound by
    loading and storing ``out`` once per row rather than by the arithmetic.
    """
    K = out.shape[0]
    p = p0
    while p + 3 < p1:
        x0 = xdata[p]
        x1 = xdata[p + 1]
        x2 = xdata[p + 2]
        x3 = xdata[p + 3]
        r0 = W[xind[p] + o]
        r1 = W[xind[p + 1] + o]
        r2 = W[xind[p + 2] + o]
        r3 = W[xind[p + 3] + o]
        for c in range(K):
            out[c] += (x0 * r0[c] + x1 * r1[c]) + (x2 * r2[c] + x3 * r3[c])
        p += 4
    while p < p1:
        x0 = xdata[p]
        r0 = W[xind[p] + o]
        for c in range(K):
            out[c] += x0 * r0[c]
        p += 1


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
        add_rows(acc, W, xdata, xind, xptr[r], xptr[r + 1], xoff[v])
        if ident:
            for k in range(K):
                U[v, k] = scale * acc[k]
        else:
            for k in range(K):
                U[v, k] = scale * csign[k] * acc[cmap[k]]


@jit(inline="always")
def node_scores(D, n0, n1, W, scale, U):
    """:func:`unary_scores` of nodes ``n0:n1`` of design ``D``, plus its fixed node
    potentials if it has any."""
    unary_scores(n0, n1, D.xdata, D.xind, D.xptr, D.xrow, D.xoff, W, D.cmap, D.csign, scale, U,
                 D.dense)
    if D.has_offset:
        off = D.node_offset
        for v in range(n0, n1):
            for k in range(U.shape[1]):
                U[v, k] += off[v, k]


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
def symmetric_into(P, a, out):
    """``out = a * (triu(P) + triu(P, 1).T)`` table by table: the symmetric scoring
    tables of an undirected design's upper-triangular parameters (see
    :meth:`~skstruct.models._design.Design.tables`), scaled by ``a``."""
    K = P.shape[1]
    for f in range(P.shape[0]):
        for i in range(K):
            for j in range(i, K):
                x = a * P[f, i, j]
                out[f, i, j] = x
                out[f, j, i] = x


@jit
def labelling_score(n0, n1, e0, e1, edges, U, pair, pwi, lab):
    total = 0.0
    for v in range(n0, n1):
        total += U[v, lab[v]]
    for e in range(e0, e1):
        total += pair[pwi[e], lab[edges[e, 0]], lab[edges[e, 1]]]
    return total


@jit
def _tables(D, s, P, PE):
    """Pairwise tables of sample ``s``: ``P`` itself when tied, else ``PE``."""
    if D.tied:
        return P
    edge_tables(D.edge_offsets[s], D.edge_offsets[s + 1], D.edata, D.eind, D.eptr, P, PE)
    return PE


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
def _potentials_chunks(D, W, P, loss, chunks, theta_v, PE, truth, c0,
                       c1):
    # the kernel of potentials, over the chunks c0 <= c < c1
    node_offsets, edge_offsets, edges = D.node_offsets, D.edge_offsets, D.edges
    xdata, xind, xptr, xrow, xoff = D.xdata, D.xind, D.xptr, D.xrow, D.xoff
    cmap, csign, dense, tied, pwi = D.cmap, D.csign, D.dense, D.tied, D.pw_index
    edata, eind, eptr, y, lw = D.edata, D.eind, D.eptr, D.y, D.loss_weight
    K = theta_v.shape[1]
    for c in range(c0, c1):
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


def potentials(D, W, P, loss, chunks, theta_v, PE, truth):
    """Node scores of the design ``D`` (:class:`~skstruct.models._design.DesignArrays`),
    loss-augmented when ``loss`` (``+ D.loss_weight[v]`` on every label but ``D.y[v]``),
    into ``theta_v`` (N, K); edge tables into ``PE`` (E, K, K) unless the design is
    ``D.tied`` (edge ``e`` then scores ``P[D.pw_index[e]]``); and the score of the
    labelling ``D.y`` (without the loss) summed per chunk of samples into ``truth``.
    Nodes with ``y == -1`` add nothing to it.

    Runs on the threads in force (:func:`~skstruct._core._pool.for_chunks`).
    """
    def run(c0, c1):
        _potentials_chunks(D, W, P, loss, chunks, theta_v, PE, truth, c0,
                           c1)

    for_chunks(run, chunks)
