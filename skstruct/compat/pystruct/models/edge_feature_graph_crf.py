"""Pairwise CRF with features on the edges."""

import numpy as np

from .base import NativeEquivalent, unary_index
from .crf import CRF
from .graph_crf import GraphCRF

__all__ = ["EdgeFeatureGraphCRF"]


class EdgeFeatureGraphCRF(GraphCRF):
    """Pairwise CRF whose edge potentials are linear in per-edge features.

    A sample ``x`` is ``(node_features (n_nodes, n_features), edges (n_edges,
    2), edge_features (n_edges, n_edge_features))``, its labels ``y`` an int
    array ``(n_nodes,)``.  Edge ``e`` scores label pair ``(a, b)`` by ``sum_f
    edge_features[e, f] * P_f[a, b]``, one full table ``P_f`` per edge feature
    (e.g. contrast-sensitive or direction-dependent interactions).  Weights:
    the unary table ``(n_states, n_features)`` row-major, then the tables
    ``(n_edge_features, n_states, n_states)``.

    Parameters
    ----------
    n_states : int, optional
        Number of labels; by default the number of distinct labels in the data.
    n_features : int, optional
        Node features; by default read from the data.
    n_edge_features : int, optional
        Edge features; by default read from the data.
    inference_method : str or (str, dict), optional
        See :func:`~skstruct.compat.pystruct.inference.inference_dispatch`;
        default ``'ad3'``.
    class_weight : array-like of shape (n_states,), optional
        Weight of each true label in the Hamming loss.
    symmetric_edge_features : list of int, optional
        Edge features whose table is symmetric (the joint feature counts
        ``(a, b)`` and ``(b, a)`` alike, so learned tables are symmetric).
    antisymmetric_edge_features : list of int, optional
        Edge features whose table is antisymmetric.
    """

    def __init__(self, n_states=None, n_features=None, n_edge_features=None,
                 inference_method=None, class_weight=None, symmetric_edge_features=None,
                 antisymmetric_edge_features=None):
        self.n_edge_features = n_edge_features
        if symmetric_edge_features is None:
            symmetric_edge_features = []
        if antisymmetric_edge_features is None:
            antisymmetric_edge_features = []
        self.symmetric_edge_features = symmetric_edge_features
        self.antisymmetric_edge_features = antisymmetric_edge_features
        GraphCRF.__init__(self, n_states, n_features, inference_method,
                          class_weight=class_weight)

    def _set_size_joint_feature(self):
        if None not in (self.n_states, self.n_features, self.n_edge_features):
            self.size_joint_feature = (self.n_states * self.n_features
                                       + self.n_edge_features * self.n_states ** 2)
        else:
            self.size_joint_feature = getattr(self, "size_joint_feature", None)
        if self.n_edge_features is not None:
            chosen = list(self.symmetric_edge_features) + list(self.antisymmetric_edge_features)
            if any(not 0 <= int(i) < self.n_edge_features for i in chosen):
                raise ValueError("Got (anti) symmetric edge feature index that is larger than "
                                 f"n_edge_features ({self.n_edge_features}) or negative.")
            if not set(self.symmetric_edge_features).isdisjoint(
                    self.antisymmetric_edge_features):
                raise ValueError("symmetric_edge_features and antisymmetric_edge_features "
                                 "share an entry")

    def initialize(self, X, Y):
        """Read ``n_edge_features``, ``n_features`` and ``n_states`` from the data."""
        if len(X) == 0:
            raise ValueError("X holds no samples")
        n_edge_features = np.shape(self._get_edge_features(X[0]))[1]
        if self.n_edge_features is None:
            self.n_edge_features = n_edge_features
        elif self.n_edge_features != n_edge_features:
            raise ValueError(f"Expected {self.n_edge_features} edge features, got "
                             f"{n_edge_features}")
        CRF.initialize(self, X, Y)

    def __repr__(self):
        return (f"{type(self).__name__}(n_states: {self.n_states}, inference_method: "
                f"{self.inference_method}, n_features: {self.n_features}, "
                f"n_edge_features: {self.n_edge_features})")

    def _check_sample(self, i, x, y):
        labels = CRF._check_sample(self, i, x, y)
        edges, edge_features = np.shape(self._get_edges(x)), np.shape(self._get_edge_features(x))
        if edges[0] != edge_features[0]:
            raise ValueError(f"sample {i}: {edges[0]} edges but {edge_features[0]} rows of "
                             "edge features")
        if edge_features[1] != self.n_edge_features:
            raise ValueError(f"sample {i}: {edge_features[1]} edge features, expected "
                             f"{self.n_edge_features}")
        return labels

    def _check_size_x(self, x):
        GraphCRF._check_size_x(self, x)
        edges, edge_features = self._get_edges(x), self._get_edge_features(x)
        if edges.shape[0] != edge_features.shape[0]:
            raise ValueError(f"Got {edges.shape[0]} edges but {edge_features.shape[0]} edge "
                             "features.")
        if edge_features.shape[1] != self.n_edge_features:
            raise ValueError(f"Got edge features of size {edge_features.shape[1]}, but "
                             f"expected {self.n_edge_features}.")

    def _get_edge_features(self, x):
        return x[2]

    def _get_pairwise_potentials(self, x, w):
        """Pairwise potentials ``(n_edges, n_states, n_states)`` of ``w``."""
        self._check_size_w(w)
        self._check_size_x(x)
        edge_features = np.asarray(self._get_edge_features(x), dtype=np.float64)
        pairwise = np.asarray(w[self.n_states * self.n_features:]).reshape(
            self.n_edge_features, -1)
        return (edge_features @ pairwise).reshape(edge_features.shape[0], self.n_states,
                                                  self.n_states)

    def joint_feature(self, x, y):
        """The joint feature of ``(x, y)``: ``w . joint_feature(x, y)`` is the score.

        Parameters
        ----------
        x : (node_features, edges, edge_features)
        y : ndarray of int of shape (n_nodes,), or (unary_marginals, pairwise_marginals)
            A labelling, or relaxed marginals (node ``(n_nodes, n_states)``,
            edge ``(n_edges, n_states ** 2)``).

        Returns
        -------
        ndarray of shape (size_joint_feature,)
        """
        self._check_size_x(x)
        features = np.asarray(self._get_features(x), dtype=np.float64)
        edges = np.asarray(self._get_edges(x)).reshape(-1, 2).astype(np.int64)
        edge_features = np.asarray(self._get_edge_features(x), dtype=np.float64)
        n_nodes, K = features.shape[0], self.n_states
        if isinstance(y, tuple):
            unary_marginals, pw = y
            unary_marginals = np.asarray(unary_marginals).reshape(n_nodes, K)
            pw = np.asarray(pw).reshape(len(edges), K * K)
        else:
            y = np.asarray(y).reshape(n_nodes).astype(np.int64)
            unary_marginals = np.zeros((n_nodes, K))
            unary_marginals[np.arange(n_nodes), y] = 1
            pw = np.zeros((len(edges), K * K))
            pw[np.arange(len(edges)), y[edges[:, 0]] * K + y[edges[:, 1]]] = 1
        pw = edge_features.T @ pw
        for i in self.symmetric_edge_features:
            table = pw[i].reshape(K, K)
            pw[i] = ((table + table.T) / 2.).ravel()
        for i in self.antisymmetric_edge_features:
            table = pw[i].reshape(K, K)
            pw[i] = ((table - table.T) / 2.).ravel()
        return np.hstack([(unary_marginals.T @ features).ravel(), pw.ravel()])

    def _native_sample(self, x):
        return (np.asarray(self._get_features(x), dtype=np.float64),
                np.asarray(self._get_edges(x)),
                np.asarray(self._get_edge_features(x), dtype=np.float64))

    def _skstruct_native(self, X, Y):
        """skstruct's :class:`~skstruct.models.GraphModel` with edge features (directed),
        when no edge feature is (anti)symmetric; otherwise ``None`` (see
        :class:`StructuredModel`)."""
        from ....models import GraphModel

        if self.size_joint_feature is None:
            self.initialize(X, Y)
        if len(self.symmetric_edge_features) or len(self.antisymmetric_edge_features):
            return None
        if not self._native_classes_ok(Y) or not self._native_decodes_alike(X):
            return None
        K, F, EF = self.n_states, self.n_features, self.n_edge_features
        index = np.concatenate([unary_index(K, F), K * F + np.arange(EF * K * K)])
        decoder = self._native_decoder() or "auto"
        return NativeEquivalent(GraphModel(directed=True, inference_method=decoder),
                                [self._native_sample(x) for x in X],
                                [self._native_labels(y) for y in Y], index,
                                K * F + EF * K * K)
