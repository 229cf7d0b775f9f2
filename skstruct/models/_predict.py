"""MAP decoding of a whole design at given weights (one parallel compiled call)."""


import numpy as np
from numba import prange

from .._core import n_chunks
from .._core._jit import pjit
from ._chain import chain_pass, is_plain_chain
from ._kernels import _tables, node_scores
from ._oracle import decode, make_work
from ._scratch import check_cuttable, scratch


@pjit
def _predict_kernel(D, W, P, sc, max_nodes, max_edges, chunks):
    """MAP labels of every sample into ``sc.lab`` (``sc`` an :class:`OracleScratch`)."""
    # the arrays are taken out of the named tuple before the parallel loop, which would
    # lose writes made through its fields
    U, PE, msgs, bp, lab, belief, up = sc.U, sc.PE, sc.msgs, sc.bp, sc.lab, sc.belief, sc.up
    K = U.shape[1]
    for c in prange(chunks.shape[0] - 1):
        work = make_work(K, max_nodes, max_edges, belief, up)
        for s in range(chunks[c], chunks[c + 1]):
            n0 = D.node_offsets[s]
            n1 = D.node_offsets[s + 1]
            node_scores(D, n0, n1, W, 1.0, U)
            pair = _tables(D, s, P, PE)
            decode(D, s, U, pair, msgs, bp, lab, work)


def predict_labels(design, W, P, trws_iter):
    """MAP labels (N,) of every node of ``design`` under weights ``W``, ``P``."""
    check_cuttable(design, P)
    P = design.tables(P)
    y0 = np.zeros(design.batch.n_nodes, np.int64)
    D = design.args(y0, np.ones(design.batch.n_nodes), trws_iter)
    if is_plain_chain(design):
        # the commonest case has a small kernel of its own, so that a first fit on chains
        # does not wait for the general one to compile
        N, S = design.batch.n_nodes, design.batch.n_samples
        out = np.zeros(N, np.int64)
        chain_pass(D.node_offsets, D.xdata, D.xind, D.xptr, D.xrow, D.xoff, y0, np.zeros(N),
                   np.ascontiguousarray(W), np.ascontiguousarray(P[0]), design.max_nodes,
                   design.batch.chunks(n_chunks()), np.zeros(S), np.zeros(S), out)
        return out
    sc = scratch(design, decode_only=True)
    _predict_kernel(D, np.ascontiguousarray(W), np.ascontiguousarray(P), sc, design.max_nodes,
                    design.max_edges, design.batch.chunks(n_chunks()))
    return sc.lab


def design_potentials(design, W, P):
    """The node potentials (N, K) and the edge tables with their index per edge of every
    sample of ``design`` under weights ``W``, ``P``: ``(unary, tables, pw_index)`` in the
    form :mod:`skstruct.inference` reads (one table per edge type when edges carry no
    real-valued features, else one per edge)."""
    from ._kernels import potentials

    b = design.batch
    N, E, K = b.n_nodes, b.n_edges, design.n_classes
    y0 = np.zeros(N, np.int64)
    D = design.args(y0, np.zeros(N), 1)
    chunks = b.chunks(n_chunks())
    unary = np.empty((N, K))
    PE = np.zeros((1, K, K)) if design.tied else np.empty((E, K, K))
    P = np.ascontiguousarray(design.tables(P), dtype=np.float64)
    potentials(D, np.ascontiguousarray(W), P, False, chunks, unary, PE,
               np.zeros(chunks.shape[0] - 1))
    if design.node_offset is not None:
        unary += design.node_offset
    if design.tied:
        if P.shape[0] == 0:
            return unary, np.zeros((1, K, K)), np.zeros(E, np.int64)
        return unary, P, np.ascontiguousarray(D.pw_index)
    return unary, PE, np.arange(E, dtype=np.int64)
