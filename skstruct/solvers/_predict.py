"""MAP decoding of a whole design at given weights (one parallel compiled call)."""

import numpy as np
from numba import prange

from ..inference._api import _n_chunks
from ..inference._jit import pjit
from ._bcfw import _tables
from ._oracle import decode, make_work, unary_scores


@pjit
def _predict_kernel(D, W, P, U, PE, msgs, bp, lab, belief, up, max_nodes, max_edges, chunks):
    K = U.shape[1]
    for c in prange(chunks.shape[0] - 1):
        work = make_work(K, max_nodes, max_edges, belief, up)
        for s in range(chunks[c], chunks[c + 1]):
            n0 = D[0][s]
            n1 = D[0][s + 1]
            unary_scores(n0, n1, D[3], D[4], D[5], D[25], D[26], W, D[13], D[14], 1.0, U,
                         D[27])
            pair = _tables(D, s, P, PE)
            decode(D[16][s], n0, n1, D[1][s], D[1][s + 1], D[2], U, pair, D[10], D[12],
                   D[17], D[18], D[19], D[20], D[21], D[22], D[23], msgs, D[24], bp, lab,
                   work)


def scratch(design, decode_only=False):
    """The shared per-node / per-edge scratch arrays of the kernels.

    Arrays a kernel will not touch for this design are allocated with one row
    (message arrays without TRW-S or MPLP samples, tree beliefs without tree
    samples, the learner's arrays when only decoding).
    """
    b = design.batch
    K = design.n_classes
    N = b.n_nodes
    E = b.n_edges
    need_tree = bool(np.any(design.kind == 1))
    need_msgs = bool(np.any(design.kind == 3))
    nl = 1 if decode_only else N
    return dict(
        U=np.zeros((N, K)), Ua=np.zeros((nl, K)),
        PE=np.zeros((1, K, K)) if design.tied else np.zeros((E, K, K)),
        msgs=np.zeros((2 * E if need_msgs else 1, K)),
        bp=np.zeros((N, K), np.uint8 if K <= 256 else np.int64), lab=np.zeros(N, np.int64),
        Sc=np.zeros((nl, design.n_columns)),
        belief=np.zeros((N if need_tree else 1, K)), up=np.zeros((N if need_tree else 1, K)))


def predict_labels(design, W, P, trws_iter):
    """MAP labels (N,) of every node of ``design`` under weights ``W``, ``P``."""
    y0 = np.zeros(design.batch.n_nodes, np.int64)
    D = design.args(y0, np.ones(design.batch.n_nodes), trws_iter)
    sc = scratch(design, decode_only=True)
    _predict_kernel(D, np.ascontiguousarray(W), np.ascontiguousarray(P), sc["U"], sc["PE"],
                    sc["msgs"], sc["bp"], sc["lab"], sc["belief"], sc["up"],
                    design.max_nodes, design.max_edges, design.batch.chunks(_n_chunks()))
    return sc["lab"]
