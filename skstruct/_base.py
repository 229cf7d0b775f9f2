"""What every skstruct estimator shares: models, class weights, predict, score, tags."""

import numbers

import numpy as np
from sklearn.base import clone
from sklearn.utils.validation import check_is_fitted

from .inference._api import n_threads
from .models import StructuredModel, auto_model


def resolve_model(model, X, y):
    """A fitted clone of ``model`` (``"auto"`` picks one from the data)."""
    if isinstance(model, str):
        if model != "auto":
            raise ValueError(f"model must be 'auto' or a model from skstruct.models, got "
                             f"{model!r}")
        model = auto_model(X, y)
    elif not isinstance(model, StructuredModel):
        raise ValueError(f"model must be 'auto' or a model from skstruct.models, got "
                         f"{type(model).__name__}")
    return clone(model).fit(X, y)


def check_number(est, name, low=0, strict=True, integer=False):
    """Raise a ``ValueError`` naming parameter ``name`` of ``est`` unless it is a
    finite number (an integer if ``integer``; never a bool) above ``low``
    (or equal to it when not ``strict``)."""
    v = getattr(est, name)
    kind = numbers.Integral if integer else numbers.Real
    if isinstance(v, bool) or not isinstance(v, kind) or not np.isfinite(v) or (
            v <= low if strict else v < low):
        raise ValueError(f"{name} must be {'an integer' if integer else 'a number'} "
                         f"{'>' if strict else '>='} {low}, got {v!r}")


def loss_weights(class_weight, classes, codes):
    """Hamming weight of each true class, in the order of ``classes``."""
    K = classes.shape[0]
    if class_weight is None:
        return np.ones(K)
    if isinstance(class_weight, str):
        if class_weight != "balanced":
            raise ValueError(f"class_weight must be None, 'balanced' or a dict, got "
                             f"{class_weight!r}")
        counts = np.bincount(codes[codes >= 0], minlength=K).astype(np.float64)
        # sklearn's "balanced": n_nodes / (n_classes * count); unseen classes weigh 1
        w = np.ones(K)
        seen = counts > 0
        w[seen] = codes.shape[0] / (seen.sum() * counts[seen])
        return w
    if not isinstance(class_weight, dict):
        raise ValueError(f"class_weight must be None, 'balanced' or a dict, got "
                         f"{type(class_weight).__name__}")
    w = np.ones(K)
    lookup = {c: i for i, c in enumerate(classes.tolist())}
    for label, value in class_weight.items():
        if label not in lookup:
            raise ValueError(f"class_weight has label {label!r} not present in y")
        if not isinstance(value, numbers.Real) or not np.isfinite(value) or value < 0:
            raise ValueError(f"class_weight[{label!r}] must be a finite number >= 0, got "
                             f"{value!r}")
        w[lookup[label]] = float(value)
    return w


class StructuredEstimatorMixin:
    """``predict``/``score``/tags for estimators with a fitted ``model_`` and weights.

    Subclasses provide ``_weights()`` returning ``(W (F, Kp), P (EF, K, K))``.
    """

    def _decode(self, X):
        from .solvers._predict import predict_labels

        check_is_fitted(self, "coef_")
        design, packed = self.model_.design(X)
        W, P = self._weights()
        with n_threads(self.n_jobs):
            labels = predict_labels(design, W, P, self._predict_iter())
        return labels, packed

    def _predict_iter(self):
        return 100

    def predict(self, X):
        """Most likely labelling of every sample (MAP; TRW-S on loopy graphs).

        Parameters
        ----------
        X : samples in the format of the fitted model (see ``skstruct.models``)

        Returns
        -------
        y_pred : same structure as the ``y`` given to ``fit``: a list of
            ``(n_nodes_i,)`` arrays for chains and graphs, an array
            ``(n_samples, n_labels)`` for multi-label, ``(n_samples,)`` for
            multiclass.
        """
        labels, packed = self._decode(X)
        return self.model_._format(labels, packed)

    def score(self, X, y):
        """Hamming accuracy: the fraction of nodes (labels) predicted right.

        A label never seen in ``fit`` counts as an error.
        """
        from .metrics import hamming_accuracy

        return hamming_accuracy(y, self.predict(X))

    def __sklearn_tags__(self):
        tags = super().__sklearn_tags__()
        tags.input_tags.two_d_array = False
        tags.input_tags.sparse = True
        tags.target_tags.required = True
        tags.target_tags.one_d_labels = False
        tags.non_deterministic = False
        return tags
