"""Joint feature maps: how samples become the flat *design* the kernels learn on.

A model object only holds its parameters (it is an sklearn ``BaseEstimator``,
so ``get_params``/``set_params``/``clone`` work and ``GridSearchCV`` can tune
``model__edges``).  Estimators never mutate it: they fit a clone into
``model_`` with :meth:`StructuredModel.fit`, which learns whatever the
structure needs from the training data (the classes, a Chow-Liu tree, the
feature counts).
"""

from dataclasses import dataclass

import numpy as np
import scipy.sparse as sp
from sklearn.base import BaseEstimator

from .._packing import encode_labels, fit_classes
from ..inference import GraphBatch

_INFERENCE = ("auto", "chain", "tree", "exact", "trws")
# tiny loopy samples are decoded exactly: K ** n_nodes labellings at most
EXACT_LIMIT = 4096


@dataclass
class Design:
    """A batch in the form the learning kernels read (see ``solvers._oracle``).

    ``features`` (N, F) CSR node features; ``batch`` the structure;
    ``edge_features`` (E, EF) CSR; ``tied`` when every edge has exactly one
    edge feature of value 1 (then no per-edge table is built); ``y`` (N,)
    encoded labels (-1 for unknown); ``cmap``/``csign`` (K,) the class to
    parameter-column map; ``kind`` (S,) the decoder of each sample.
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

    def __post_init__(self):
        N = self.batch.n_nodes
        if self.xrow is None:
            self.xrow = np.arange(N, dtype=np.int64)
            self.xoff = np.zeros(N, np.int64)
            self.n_features_total = self.features.shape[1]

    @property
    def n_columns(self):
        return int(self.cmap.max()) + 1

    @property
    def n_edge_features(self):
        return self.edge_features.shape[1]

    def args(self, y, loss_weights, trws_iter):
        """The tuple ``D`` of flat arrays the kernels unpack (order matters).

        ``loss_weights`` is the (N,) Hamming weight of each node.
        """
        b = self.batch
        K = self.n_classes
        need_tree = bool(np.any(self.kind == 1))
        need_trws = bool(np.any(self.kind == 3))
        if need_tree:
            order, parent, parent_edge, _ = b.forest
        else:
            order = parent = parent_edge = np.zeros(1, np.int64)
        if need_trws:
            adj = b.adjacency
        else:
            adj = (np.zeros(b.n_nodes + 1, np.int64),) + (np.zeros(1, np.int64),) * 3
        ef = self.edge_features
        pwi = (ef.indices.astype(np.int64) if self.tied
               else np.arange(b.n_edges, dtype=np.int64))
        col_rep = np.zeros(self.n_columns, np.int64)
        for k in range(K - 1, -1, -1):
            col_rep[self.cmap[k]] = k
        X = self.features
        return (b.node_offsets, b.edge_offsets, b.edges,
                X.data.astype(np.float64, copy=False), X.indices.astype(np.int64),
                X.indptr.astype(np.int64),
                ef.data.astype(np.float64, copy=False), ef.indices.astype(np.int64),
                ef.indptr.astype(np.int64), bool(self.tied), pwi,
                np.asarray(y, np.int64), np.asarray(loss_weights, np.float64),
                self.cmap, self.csign, col_rep, self.kind, order, parent, parent_edge,
                *adj, int(trws_iter), self.xrow, self.xoff, bool(self.dense_rows))

    @property
    def max_nodes(self):
        lengths = self.batch.lengths
        return int(lengths.max()) if lengths.shape[0] else 1

    @property
    def max_edges(self):
        eo = self.batch.edge_offsets
        return int(np.diff(eo).max()) if eo.shape[0] > 1 else 1


def decoders(batch, n_classes, inference):
    """Decoder of each sample: 0 Viterbi, 1 tree max-sum, 2 enumeration, 3 TRW-S."""
    S = batch.n_samples
    lengths = batch.lengths
    if inference == "chain":
        bad = np.flatnonzero(~batch.is_chain)
        if bad.size:
            raise ValueError(f"inference='chain' but sample {bad[0]} is not a chain")
        return np.zeros(S, np.int64)
    if inference == "tree":
        bad = np.flatnonzero(~batch.is_forest)
        if bad.size:
            raise ValueError(f"inference='tree' but sample {bad[0]} has a cycle")
        return np.where(batch.is_chain, 0, 1).astype(np.int64)
    if inference == "exact":
        with np.errstate(over="ignore"):
            big = np.flatnonzero(float(n_classes) ** lengths > 2 ** 22)
        if big.size:
            raise ValueError(f"inference='exact': sample {big[0]} has {n_classes}^"
                             f"{lengths[big[0]]} labellings, too many to enumerate")
        return np.full(S, 2, np.int64)
    if inference == "trws":
        return np.full(S, 3, np.int64)
    kind = np.full(S, 3, np.int64)
    with np.errstate(over="ignore"):
        tiny = float(n_classes) ** lengths.astype(np.float64) <= EXACT_LIMIT
    kind[tiny] = 2
    kind[batch.is_forest] = 1
    kind[batch.is_chain] = 0
    return kind


class StructuredModel(BaseEstimator):
    """Base class of the joint feature maps.

    Subclasses implement ``_pack(X)`` (validate and pack ``X`` into node
    features, structure and edge features), ``_labels(y, n_nodes)``
    (concatenated node labels of ``y``) and ``_format(labels, packed)``
    (predictions in the structure of ``y``).
    """

    inference = "auto"

    # --- fitting the structure -------------------------------------------
    def fit(self, X, y):
        """Learn the classes and feature counts from training data; returns self."""
        self._check_params()
        packed = self._pack(X, fitting=True)
        labels = self._labels(y, packed)
        self.classes_ = fit_classes(labels)
        self._learn_structure(X, y, packed, labels)
        return self

    def _check_params(self):
        if self.inference not in _INFERENCE:
            raise ValueError(f"inference must be one of {_INFERENCE}, got {self.inference!r}")

    def _learn_structure(self, X, y, packed, labels):
        pass

    @property
    def n_classes_(self):
        return self.classes_.shape[0]

    def design(self, X, y=None):
        """Pack ``X`` (and encode ``y``) into a :class:`Design`."""
        packed = self._pack(X, fitting=False)
        d = self._design(packed)
        if y is not None:
            labels = self._labels(y, packed)
            d.y = encode_labels(labels, self.classes_)
        return d, packed

    def unary_view(self, W):
        """Unary weights ``(F, Kp)`` as users read them: one row per class."""
        return W.T

    # --- helpers for subclasses -------------------------------------------
    def _make_design(self, features, batch, edge_features, tied, cmap=None, csign=None,
                     xrow=None, xoff=None, n_features_total=None):
        K = self.n_classes_
        if cmap is None:
            cmap = np.arange(K, dtype=np.int64)
            csign = np.ones(K)
        dense = False
        if not sp.issparse(features):
            features = np.ascontiguousarray(features, dtype=np.float64)
            n, F = features.shape
            dense = n > 0 and F > 0 and np.count_nonzero(features) >= 0.5 * features.size
            if dense:
                # mostly non-zero: keep every entry, so that rows are contiguous and
                # the kernels' dot products vectorise (flag ``dense_rows``)
                features = sp.csr_matrix(
                    (features.ravel(), np.tile(np.arange(F, dtype=np.int32), n),
                     np.arange(0, n * F + 1, F, dtype=np.int64)), shape=(n, F))
        if not dense:
            features = sp.csr_matrix(features, dtype=np.float64)
            features.sum_duplicates()
        edge_features = sp.csr_matrix(edge_features, dtype=np.float64)
        edge_features.eliminate_zeros()
        edge_features.sum_duplicates()
        tied = tied or is_tied(edge_features)
        kind = decoders(batch, K, self.inference)
        d = Design(features, batch, edge_features, tied, K, np.asarray(cmap, np.int64),
                   np.asarray(csign, np.float64), kind, None, xrow, xoff, n_features_total)
        d.dense_rows = dense
        return d


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
