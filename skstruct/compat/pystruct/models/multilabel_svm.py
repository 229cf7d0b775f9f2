"""Multi-label classification as a graph over the labels."""

import itertools

import numpy as np

from .base import NativeEquivalent
from .crf import CRF

__all__ = ["MultiLabelClf"]


class MultiLabelClf(CRF):
    """Multi-label classification: one binary node per label, optionally linked.

    A sample ``x`` is a feature vector ``(n_features,)``, its labels ``y`` a
    0/1 array ``(n_labels,)``.  Label ``l`` scores ``+w_l . x`` when on and
    ``-w_l . x`` when off; each edge of the label graph has its own 2x2 table.
    Weights: ``(n_labels, n_features)`` row-major, then ``(n_edges, 2, 2)``.

    Parameters
    ----------
    n_labels : int, optional
        Number of labels; by default read from the data.
    n_features : int, optional
        Number of features; by default read from the data.
    edges : array-like of shape (n_edges, 2), 'full', 'tree' or None
        The label graph: ``None`` independent labels, ``'full'`` every pair,
        ``'tree'`` the Chow-Liu tree of the training labels (maximum mutual
        information, :func:`skstruct.models.chow_liu_tree`), or explicit pairs.
    inference_method : str or (str, dict), optional
        See :func:`~skstruct.compat.pystruct.inference.inference_dispatch`;
        default ``'ad3'``.
    """

    def __init__(self, n_labels=None, n_features=None, edges=None, inference_method=None):
        self.n_labels = n_labels
        self.edges = edges
        CRF.__init__(self, 2, n_features, inference_method)

    def _set_size_joint_feature(self):
        if isinstance(self.edges, str):
            if self.edges == "full" and self.n_labels is not None:
                self.edges = np.array(list(itertools.combinations(range(self.n_labels), 2)),
                                      dtype=np.int64).reshape(-1, 2)
            elif self.edges not in ("full", "tree"):
                raise ValueError(f"edges must be None, 'full', 'tree' or an array of label "
                                 f"pairs, got {self.edges!r}")
        if self.edges is None:
            self.edges = np.zeros((0, 2), dtype=np.int64)
        if (self.n_features is not None and self.n_labels is not None
                and not isinstance(self.edges, str)):
            self.edges = np.asarray(self.edges, dtype=np.int64).reshape(-1, 2)
            self.size_joint_feature = self.n_features * self.n_labels + 4 * len(self.edges)
        else:
            self.size_joint_feature = getattr(self, "size_joint_feature", None)

    def initialize(self, X, Y):
        """Read ``n_features`` and ``n_labels`` from ``X (n_samples, n_features)`` and
        ``Y (n_samples, n_labels)`` (or check them)."""
        X, Y = np.asarray(X), np.asarray(Y)
        if X.ndim != 2 or Y.ndim != 2:
            raise ValueError(f"X and Y must be 2-D (n_samples, n_features) and (n_samples, "
                             f"n_labels), got shapes {X.shape} and {Y.shape}")
        if X.shape[0] != Y.shape[0]:
            raise ValueError(f"X has {X.shape[0]} samples but Y has {Y.shape[0]}")
        bad = ~np.isin(Y, (0, 1))
        if bad.any():
            i = int(np.flatnonzero(bad.any(axis=1))[0])
            raise ValueError(f"sample {i}: labels must be 0 or 1, got {Y[i]}")
        if self.n_features is None:
            self.n_features = X.shape[1]
        elif self.n_features != X.shape[1]:
            raise ValueError(f"Expected {self.n_features} features, got {X.shape[1]}")
        if self.n_labels is None:
            self.n_labels = Y.shape[1]
        elif self.n_labels != Y.shape[1]:
            raise ValueError(f"Expected {self.n_labels} labels, got {Y.shape[1]}")
        if isinstance(self.edges, str) and self.edges == "tree":
            from ....models import chow_liu_tree

            self.edges = chow_liu_tree(Y)
        self._set_size_joint_feature()
        self._set_class_weight()

    def _check_size_x(self, x):
        if np.shape(x) != (self.n_features,):
            raise ValueError(f"x must have shape ({self.n_features},), got {np.shape(x)}")

    def _get_edges(self, x):
        return self.edges

    def _get_features(self, x):
        return np.atleast_2d(x)

    def _get_unary_potentials(self, x, w):
        """``(n_labels, 2)``: ``-w_l . x`` for off, ``+w_l . x`` for on."""
        self._check_size_x(x)
        unary_params = np.asarray(w[:self.n_labels * self.n_features]).reshape(
            self.n_labels, self.n_features)
        u = unary_params @ np.asarray(x, dtype=np.float64)
        return np.column_stack([-u, u])

    def _get_pairwise_potentials(self, x, w):
        """``(n_edges, 2, 2)``: one table per edge of the label graph."""
        return np.asarray(w[self.n_labels * self.n_features:]).reshape(len(self.edges), 2, 2)

    def joint_feature(self, x, y):
        """The joint feature of ``(x, y)``.

        Parameters
        ----------
        x : ndarray of shape (n_features,)
        y : ndarray of 0/1 of shape (n_labels,), or (unary_marginals, pairwise_marginals)
            Labels, or relaxed marginals (``(n_labels, 2)`` and ``(n_edges, 2, 2)``
            or ``(2 n_edges, 2)``).

        Returns
        -------
        ndarray of shape (size_joint_feature,)
        """
        x = np.asarray(x, dtype=np.float64)
        if isinstance(y, tuple):
            y_cont, pairwise_marginals = y
            signs = 2 * np.asarray(y_cont)[:, 1] - 1
            pairwise = np.asarray(pairwise_marginals, dtype=np.float64).ravel()
        else:
            y = np.asarray(y).astype(np.int64)
            signs = 2 * y - 1
            pairwise = np.zeros((len(self.edges), 4))
            pairwise[np.arange(len(self.edges)), 2 * y[self.edges[:, 0]]
                     + y[self.edges[:, 1]]] = 1
            pairwise = pairwise.ravel()
        unary = signs[:, None] * x[None, :]
        return np.hstack([unary.ravel(), pairwise])

    def _skstruct_native(self, X, Y):
        """skstruct's :class:`~skstruct.models.MultiLabelModel` with these edges; its
        weights are this model's, in the same order."""
        from ....models import MultiLabelModel

        if self.size_joint_feature is None:
            self.initialize(X, Y)
        if not getattr(self, "uniform_class_weight", True):
            return None
        if not self._native_decodes_alike([None]):
            return None
        edges = self.edges if len(self.edges) else "independent"
        return NativeEquivalent(MultiLabelModel(edges=edges), np.asarray(X, dtype=np.float64),
                                np.asarray(Y).astype(np.int64),
                                np.arange(self.size_joint_feature), self.size_joint_feature)
