"""MPLP: block-coordinate descent on the node/edge dual of the MAP LP relaxation.

Globerson & Jaakkola, "Fixing max-product: convergent message passing
algorithms for MAP LP-relaxations", NIPS 2007 (the edge-based update).  The dual
is Franc's ``U(phi)``:

    U = sum_v max_a [unary_v(a) + sum_{e at v} m_{e->v}(a)]
      + sum_{e=(s,t)} max_{a,b} [theta_e(a, b) - m_{e->s}(a) - m_{e->t}(b)]

an upper bound on the best score for any messages, equal to the LP optimum at
its minimum (the best score on trees).  Updating the two messages of one edge
to the closed-form minimiser never increases ``U``.  Messages use the batch
layout of :mod:`._graph`: row ``2 e`` holds ``m_{e -> edges[e, 1]}``, row
``2 e + 1`` holds ``m_{e -> edges[e, 0]}``.  Scores must be finite.
"""

import numpy as np

from .._core._jit import jit
from ._loopy import _gather


@jit
def mplp_sweeps(e0, e1, edges, unary, pairwise, pw_index, adj_offsets, adj_edge,
                adj_side, messages, n_sweeps, di, dj):
    """``n_sweeps`` passes of edge updates over edges ``e0:e1`` (in place).

    ``di``, ``dj`` are (K,) scratch arrays.
    """
    K = unary.shape[1]
    for _ in range(n_sweeps):
        for e in range(e0, e1):
            i = edges[e, 0]
            j = edges[e, 1]
            # node beliefs without this edge's own message
            _gather(i, unary, adj_offsets, adj_edge, adj_side, messages, e, di)
            _gather(j, unary, adj_offsets, adj_edge, adj_side, messages, e, dj)
            T = pairwise[pw_index[e]]
            for a in range(K):
                best = -np.inf
                for b in range(K):
                    val = T[a, b] + dj[b]
                    if val > best:
                        best = val
                messages[2 * e + 1, a] = 0.5 * (best - di[a])
            for b in range(K):
                best = -np.inf
                for a in range(K):
                    val = T[a, b] + di[a]
                    if val > best:
                        best = val
                messages[2 * e, b] = 0.5 * (best - dj[b])


@jit
def lp_bound_one(n0, n1, e0, e1, edges, unary, pairwise, pw_index, adj_offsets, adj_edge,
                 adj_side, messages, h, node_arg, edge_arg):
    """``U`` at the current messages, with the maximiser of every node term
    (``node_arg[v - n0]``) and edge term (``edge_arg[e - e0] = a * K + b``)."""
    K = unary.shape[1]
    bound = 0.0
    for v in range(n0, n1):
        _gather(v, unary, adj_offsets, adj_edge, adj_side, messages, -1, h)
        best = 0
        for k in range(1, K):
            if h[k] > h[best]:
                best = k
        node_arg[v - n0] = best
        bound += h[best]
    for e in range(e0, e1):
        T = pairwise[pw_index[e]]
        best_val = -np.inf
        arg = 0
        for a in range(K):
            ma = messages[2 * e + 1, a]
            for b in range(K):
                val = T[a, b] - ma - messages[2 * e, b]
                if val > best_val:
                    best_val = val
                    arg = a * K + b
        edge_arg[e - e0] = arg
        bound += best_val
    return bound
