"""MAP decoding of a whole design at given weights (one parallel compiled call)."""

from typing import NamedTuple

import numpy as np
from numba import prange

from .._core import n_chunks
from .._core._decoders import GRAPHCUT, TREE, TRWS
from .._core._jit import pjit
from ._chain import chain_pass, is_plain_chain
from ._kernels import _tables, node_scores
from ._oracle import decode, make_work
from ._submodular import supermodular_violation


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


class OracleScratch(NamedTuple):
    """The shared scratch arrays of the oracle kernels (see :func:`scratch`), as the
    compiled kernels read them."""

    U: np.ndarray          # (N, K) node scores
    Ua: np.ndarray         # (N, K) loss-augmented node scores
    PE: np.ndarray         # (E, K, K) per-edge tables ((1, K, K) when tied)
    msgs: np.ndarray       # (2 E, K) TRW-S / MPLP messages, warm-started across calls
    bp: np.ndarray         # (N, K) Viterbi backpointers
    lab: np.ndarray        # (N,) int64 labels decoded
    Sc: np.ndarray         # (N, Kp) a corner's node coefficients
    belief: np.ndarray     # (N, K) tree max-sum beliefs
    up: np.ndarray         # (N, K) tree max-sum upward messages


def scratch(design, decode_only=False):
    """The shared per-node / per-edge scratch arrays of the kernels, an
    :class:`OracleScratch`.

    Arrays a kernel will not touch for this design are allocated with one row
    (message arrays without TRW-S or MPLP samples, tree beliefs without tree
    samples, the learner's arrays when only decoding).
    """
    b = design.batch
    K = design.n_classes
    N = b.n_nodes
    E = b.n_edges
    need_tree = bool(np.any(design.kind == TREE))
    need_msgs = bool(np.any(design.kind == TRWS))
    nl = 1 if decode_only else N
    return OracleScratch(
        U=np.zeros((N, K)), Ua=np.zeros((nl, K)),
        PE=np.zeros((1, K, K)) if design.tied else np.zeros((E, K, K)),
        msgs=np.zeros((2 * E if need_msgs else 1, K)),
        bp=np.zeros((N, K), np.uint8 if K <= 256 else np.int64), lab=np.zeros(N, np.int64),
        Sc=np.zeros((nl, design.n_columns)),
        belief=np.zeros((N if need_tree else 1, K)), up=np.zeros((N if need_tree else 1, K)))


def check_cuttable(design, P):
    """Refuse tables a minimum cut cannot decode exactly, when the design cuts:
    weights from outside the learners (a user's ``w``, a warm start from
    another model) would otherwise be decoded silently wrong."""
    if not np.any(design.kind == GRAPHCUT):
        return
    bad, f = supermodular_violation(P)
    if bad > 1e-9 * (1.0 + float(np.abs(P).max(initial=0.0))):
        raise ValueError(f"pairwise table {f} is not supermodular in the label order (a 2 x 2 "
                         f"block misses by {bad:.3g}); graph-cut decoding needs "
                         "P[a, b] + P[a+1, b+1] >= P[a, b+1] + P[a+1, b]")


def predict_labels(design, W, P, trws_iter):
    """MAP labels (N,) of every node of ``design`` under weights ``W``, ``P``."""
    check_cuttable(design, P)
    P = design.tables(P)
    y0 = np.zeros(design.batch.n_nodes, np.int64)
    D = design.args(y0, np.ones(design.batch.n_nodes), trws_iter)
    if is_plain_chain(design):
        # the commonest case has a kernel of its own, seconds to compile instead of most of
        # a minute for the general one
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
