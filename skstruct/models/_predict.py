"""MAP decoding of a whole design at given weights (one parallel compiled call)."""


import numpy as np

from .._core import n_chunks
from ._chain import chain_pass, is_plain_chain
from ._oracle import SURROGATES, decode_pass, hinge_pass
from ._scratch import check_cuttable, scratch


def predict_labels(design, W, P, trws_iter, kernel="oracle"):
    """MAP labels (N,) of every node of ``design`` under weights ``W``, ``P``.

    ``kernel`` names the compiled kernel that decodes samples other than plain chains:
    ``"oracle"``, the learners' oracle pass (the structured SVMs, whose fits compile it
    anyway), or ``"decode"``, a kernel holding the decoders only (the estimators whose
    fits never run the oracle).  Both give the same labels."""
    check_cuttable(design, P)
    P = design.tables(P)
    N, S = design.batch.n_nodes, design.batch.n_samples
    y0 = np.zeros(N, np.int64)
    # no loss weights: the loss-augmented scores are the scores themselves
    D = design.args(y0, np.zeros(N), trws_iter)
    chunks = design.batch.chunks(n_chunks())
    if is_plain_chain(design):
        # the commonest case has a small kernel of its own, so that a first fit on chains
        # does not wait for the general one to compile
        out = np.zeros(N, np.int64)
        chain_pass(D.node_offsets, D.xdata, D.xind, D.xptr, D.xrow, D.xoff, y0, np.zeros(N),
                   np.ascontiguousarray(W), np.ascontiguousarray(P[0]), design.max_nodes,
                   chunks, np.zeros(S), np.zeros(S), out)
        return out
    sc = scratch(design)
    if kernel == "decode":
        decode_pass(D, np.ascontiguousarray(W), np.ascontiguousarray(P), sc, design.max_nodes,
                    design.max_edges, chunks)
        return sc.lab
    # the learners' oracle kernel decodes, with nothing added to the scores: a fit and its
    # predictions then compile one kernel holding the decoders, not two
    hinge_pass(D, SURROGATES["margin"], 1.0, np.ascontiguousarray(W), np.ascontiguousarray(P),
               sc, design.max_nodes, design.max_edges, chunks, np.zeros(S), np.zeros(S))
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
