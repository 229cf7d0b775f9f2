"""Binary and multiclass classification as structured models."""

import numpy as np

from .base import NativeEquivalent, StructuredModel, unary_index

__all__ = ["BinaryClf", "MultiClassClf"]


class BinaryClf(StructuredModel):
    """A linear binary SVM as a structured model: labels ``-1`` and ``+1``.

    ``joint_feature(x, y) = y * x / 2``, so ``w . x`` is the margin.  No
    intercept is learned: append a constant feature to learn one.

    Parameters
    ----------
    n_features : int, optional
        Number of features; by default read from the data.

    Notes
    -----
    It has no exact built-in skstruct equivalent (``_skstruct_native``
    returns ``None``): :class:`skstruct.models.MulticlassModel` on two
    classes learns one weight vector per class, whose difference is ``w``
    but whose squared norm is half of ``||w||^2``, a different objective at
    the same ``C``.
    """

    def __init__(self, n_features=None):
        self.n_features = n_features
        self.size_joint_feature = n_features
        self.n_states = 2
        self.inference_calls = 0

    def initialize(self, X, Y):
        """Read ``n_features`` from ``X (n_samples, n_features)`` (or check it)."""
        X, Y = np.asarray(X), np.asarray(Y)
        if X.ndim != 2:
            raise ValueError(f"X must be 2-D (n_samples, n_features), got shape {X.shape}")
        bad = ~np.isin(Y.ravel(), (-1, 1))
        if bad.any():
            i = int(np.flatnonzero(bad)[0])
            raise ValueError(f"sample {i}: label must be -1 or +1, got {Y.ravel()[i]!r}")
        if self.size_joint_feature is None:
            self.size_joint_feature = X.shape[1]
        elif self.size_joint_feature != X.shape[1]:
            raise ValueError(f"Expected {self.size_joint_feature} features, got {X.shape[1]}")

    def __repr__(self):
        return f"{type(self).__name__}, n_features: {self.size_joint_feature}"

    def joint_feature(self, x, y):
        """``y * x / 2``.

        Parameters
        ----------
        x : ndarray of shape (n_features,)
        y : {-1, 1}

        Returns
        -------
        ndarray of shape (n_features,)
        """
        if y not in (-1, 1):
            raise ValueError(f"y has to be either -1 or +1, got {y!r}")
        return y * np.asarray(x, dtype=np.float64) / 2.

    def batch_joint_feature(self, X, Y):
        """Sum of the joint features of the samples."""
        return np.sum(np.asarray(X) * np.asarray(Y)[:, None] / 2., axis=0)

    def inference(self, x, w, relaxed=None):
        """``+1`` if ``w . x >= 0``, else ``-1``."""
        self.inference_calls += 1
        return 2 * int(np.dot(x, w) >= 0) - 1

    def batch_inference(self, X, w):
        """:meth:`inference` of every row of ``X``."""
        return 2 * (np.dot(X, w) >= 0) - 1

    def _augmented(self, margin, y):
        # the best of loss + score: -y when w . x < y (the hinge is active), y otherwise;
        # at w . x == y both score the same and the true label is returned
        return np.where(margin - y == 0, y, np.sign(margin - y)).astype(np.int64)

    def loss_augmented_inference(self, x, y, w, relaxed=None):
        """The label maximising ``[y_hat != y] + w . joint_feature(x, y_hat)``."""
        self.inference_calls += 1
        return int(self._augmented(np.dot(x, w), y))

    def batch_loss_augmented_inference(self, X, Y, w, relaxed=None):
        """:meth:`loss_augmented_inference` of every row of ``X``."""
        return self._augmented(np.dot(X, w), np.asarray(Y))

    def batch_loss(self, Y, Y_hat):
        """Zero-one loss of every sample."""
        return np.asarray(Y) != np.asarray(Y_hat)


class MultiClassClf(StructuredModel):
    """Crammer and Singer's multiclass SVM as a structured model.

    Labels are ``0 .. n_classes - 1``; ``joint_feature(x, y)`` puts ``x`` in
    the ``y``-th block of ``n_classes`` blocks, so ``w`` is ``(n_classes,
    n_features)`` row-major.  No intercept is learned: append a constant
    feature to learn one.

    Parameters
    ----------
    n_features : int, optional
        Number of features; by default read from the data.
    n_classes : int, optional
        Number of classes; by default the number of distinct labels.
    class_weight : array-like of shape (n_classes,), optional
        Weight of each true class in the loss.
    rescale_C : bool, default=False
        Weight each sample's constraint by its class weight (liblinear's way)
        instead of weighting the loss.
    """

    def __init__(self, n_features=None, n_classes=None, class_weight=None, rescale_C=False):
        self.n_states = n_classes
        self.n_features = n_features
        self.rescale_C = rescale_C
        self.class_weight = class_weight
        self.inference_calls = 0
        self.size_joint_feature = None
        self._set_size_joint_feature()
        self._set_class_weight()

    @property
    def n_classes(self):
        """The number of classes (``n_states``, as the other models call it)."""
        return self.n_states

    @n_classes.setter
    def n_classes(self, value):
        self.n_states = value

    def _set_size_joint_feature(self):
        if None not in (self.n_states, self.n_features):
            self.size_joint_feature = self.n_states * self.n_features

    def initialize(self, X, Y):
        """Read ``n_features`` and ``n_classes`` from the data (or check them)."""
        X, Y = np.asarray(X), np.asarray(Y)
        if X.ndim != 2:
            raise ValueError(f"X must be 2-D (n_samples, n_features), got shape {X.shape}")
        if X.shape[0] != Y.shape[0]:
            raise ValueError(f"X has {X.shape[0]} samples but Y has {Y.shape[0]}")
        if self.n_features is None:
            self.n_features = X.shape[1]
        elif self.n_features != X.shape[1]:
            raise ValueError(f"Expected {self.n_features} features, got {X.shape[1]}")
        n_classes = len(np.unique(Y.ravel()))
        if self.n_states is None:
            self.n_states = n_classes
        elif self.n_states != n_classes:
            raise ValueError(f"Expected {self.n_states} classes, got {n_classes}")
        y = Y.ravel()
        bad = (y < 0) | (y >= self.n_states) | (np.mod(y, 1) != 0)
        if bad.any():
            i = int(np.flatnonzero(bad)[0])
            raise ValueError(f"sample {i}: label {y[i]!r} is not one of 0..{self.n_states - 1}")
        self._set_size_joint_feature()
        self._set_class_weight()

    def __repr__(self):
        return f"{type(self).__name__}(n_features={self.n_features}, n_classes={self.n_states})"

    def joint_feature(self, x, y, y_true=None):
        """``x`` in block ``y`` (times ``class_weight[y_true]`` with ``rescale_C``)."""
        result = np.zeros((self.n_states, self.n_features))
        result[y, :] = x
        if self.rescale_C:
            if y_true is None:
                raise ValueError("rescale_C is true, but no y_true was passed to joint_feature.")
            result *= self.class_weight[y_true]
        return result.ravel()

    def batch_joint_feature(self, X, Y, Y_true=None):
        """Sum of the joint features of the samples."""
        X, Y = np.asarray(X, dtype=np.float64), np.asarray(Y).astype(np.int64)
        weights = np.ones(len(Y))
        if self.rescale_C:
            if Y_true is None:
                raise ValueError("rescale_C is true, but no y_true was passed to joint_feature.")
            weights = self.class_weight[np.asarray(Y_true)]
        onehot = np.zeros((len(Y), self.n_states))
        onehot[np.arange(len(Y)), Y] = weights
        return (onehot.T @ X).ravel()

    def _scores(self, X, w):
        return np.asarray(X, dtype=np.float64) @ np.asarray(w).reshape(self.n_states, -1).T

    def inference(self, x, w, relaxed=None, return_energy=False):
        """The class of the largest score ``w_k . x`` (and that score)."""
        self.inference_calls += 1
        scores = self._scores(x, w)
        k = int(np.argmax(scores))
        return (k, scores[k]) if return_energy else k

    def loss_augmented_inference(self, x, y, w, relaxed=None, return_energy=False):
        """The class maximising ``w_k . x + loss(y, k)`` (and that value)."""
        self.inference_calls += 1
        scores = self._scores(x, w)
        other = np.arange(self.n_states) != y
        scores[other] += 1 if self.rescale_C else self.class_weight[y]
        k = int(np.argmax(scores))
        return (k, scores[k]) if return_energy else k

    def batch_loss_augmented_inference(self, X, Y, w, relaxed=None):
        """:meth:`loss_augmented_inference` of every row of ``X``."""
        Y = np.asarray(Y).astype(np.int64)
        scores = self._scores(X, w)
        other = np.arange(self.n_states) != Y[:, None]
        bonus = 1.0 if self.rescale_C else self.class_weight[Y][:, None]
        scores = scores + other * bonus
        return np.argmax(scores, axis=1)

    def batch_inference(self, X, w, relaxed=None):
        """:meth:`inference` of every row of ``X``."""
        return np.argmax(self._scores(X, w), axis=1)

    def batch_loss(self, Y, Y_hat):
        """Weighted zero-one loss of every sample."""
        Y = np.asarray(Y)
        return self.class_weight[Y] * (Y != np.asarray(Y_hat))

    def loss(self, y, y_hat):
        """``class_weight[y]`` if ``y_hat != y``, else 0."""
        return self.class_weight[y] * (y != y_hat)

    def _skstruct_native(self, X, Y):
        """skstruct's :class:`~skstruct.models.MulticlassModel`, when every class occurs
        in ``Y``, the classes are unweighted and ``rescale_C`` is off; otherwise ``None``."""
        from ....models import MulticlassModel

        if self.size_joint_feature is None:
            self.initialize(X, Y)
        if self.rescale_C or not self.uniform_class_weight:
            return None
        y = np.asarray(Y).ravel().astype(np.int64)
        if not np.array_equal(np.unique(y), np.arange(self.n_states)):
            return None
        K, F = self.n_states, self.n_features
        return NativeEquivalent(MulticlassModel(), np.asarray(X, dtype=np.float64), y,
                                unary_index(K, F), K * F)
