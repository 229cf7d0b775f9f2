"""Node and edge log-potentials of a whole design at given weights (one parallel call)."""

import numpy as np
from numba import prange

from ..inference._jit import pjit
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


def empty_tables(K):
    """A placeholder for ``PE`` when the design is tied."""
    return np.zeros((1, K, K))
