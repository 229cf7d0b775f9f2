"""What every skstruct estimator shares: models, class weights, predict, score, tags."""

import functools
import numbers
import time
from numbers import Integral, Real

import numpy as np
from sklearn.base import clone
from sklearn.utils.validation import check_is_fitted

from ._backends import bag_operation
from ._core import n_threads
from ._core._packing import check_sequence
from ._core._params import Interval, InvalidParameterError, KeywordOnly
from ._core._validation import check_n_jobs
from ._core._versioned import VersionedState
from .models import StructuredModel, _fastpath, auto_model

# the range of C (and C_energy) the learners accept: beyond it the weights or the
# gradients, scaled by C, overflow their squared norms to inf (or underflow them to 0,
# which breaks L-BFGS's first step), and no problem needs such a C
C_RANGE = (1e-100, 1e100)

# the parameters several estimators share, declared once; ``shared_constraints`` merges
# them into an estimator's table
SHARED = object()
_SHARED_CONSTRAINTS = {
    "C": [Interval(Real, *C_RANGE)],
    "max_iter": [Interval(Integral, 1)],
    "tol": [Interval(Real, 0)],
    "average": ["boolean"],
    "shuffle": ["boolean"],
    "warm_start": ["boolean"],
    "n_jobs": [None, Interval(Integral)],
    "random_state": ["random_state"],
    "verbose": [Interval(Integral, 0), "boolean"],
}


def shared_constraints(**table):
    """An estimator's ``_parameter_constraints``, in the order given: a parameter given
    :data:`SHARED` takes the shared declaration of its name."""
    return {k: list(_SHARED_CONSTRAINTS[k]) if v is SHARED else v for k, v in table.items()}


class _FitLog:
    """The bookkeeping of an estimator's fit loop, one format for all.

    Make it once the kernels are compiled: ``fit_seconds_`` counts from then.  Times the
    iterations (``seconds``: cumulative, from ``seconds`` given, counting only what runs
    between :meth:`start` and :meth:`stop`), records one row per recorded
    iteration into ``history_``, prints the verbose lines and, at the end, sets
    ``fit_seconds_`` and warns when the fit stopped at ``max_iter`` short of its
    tolerance.

    Parameters
    ----------
    est : estimator
        Its ``verbose`` and ``max_iter`` are read; its fitted attributes written.
    keys : sequence of str
        The columns of ``history_``, in order.
    int_keys : sequence of str
        The columns stored as integers (the others as floats).
    unit : str
        What an iteration is called in the verbose lines and the warning ("pass",
        "iteration").
    seconds : float
        Training time already spent (a warm start continues its clock).
    """

    def __init__(self, est, keys, *, int_keys=(), unit="iteration", seconds=0.0):
        self.est = est
        self.rows = {k: [] for k in keys}
        self.int_keys = set(int_keys)
        self.unit = unit
        self.seconds = float(seconds)
        self._wall = time.perf_counter()
        self._t0 = None

    def start(self):
        """Start timing an iteration's work."""
        self._t0 = time.perf_counter()

    def stop(self):
        """Stop timing; returns the seconds since :meth:`start`, added to ``seconds``."""
        dt = time.perf_counter() - self._t0
        self.seconds += dt
        return dt

    def elapsed(self):
        """Wall seconds since the log was made."""
        return time.perf_counter() - self._wall

    def record(self, *values):
        """Append one row to the history: a value per column, in the order of ``keys``."""
        for k, v in zip(self.rows, values, strict=True):
            self.rows[k].append(v)

    def say(self, n, seconds=None, **fields):
        """The verbose line of iteration ``n``: ``unit n  seconds s`` then
        ``name value`` for each field not None (floats to 6 significant digits)."""
        if not self.est.verbose:
            return
        seconds = self.seconds if seconds is None else seconds
        line = f"{self.unit} {n:4d}  {seconds:8.3f} s"
        for name, v in fields.items():
            if v is None:
                continue
            text = f"{v:.6g}" if isinstance(v, (float, np.floating)) else str(v)
            line += f"  {name.replace('_', ' ')} {text}"
        print(line, flush=True)

    def history(self):
        """The recorded rows as ``history_``: a dict of arrays."""
        return {k: np.asarray(v, dtype=np.int64 if k in self.int_keys else np.float64)
                for k, v in self.rows.items()}

    def finish(self, *, converged, n_iter, criterion, value, tol, advice, context=""):
        """Set ``fit_seconds_`` and, when the fit ran ``max_iter`` iterations (``n_iter``
        in this fit) without ``converged``, issue a
        :class:`~skstruct.exceptions.ConvergenceWarning` naming the estimator,
        ``max_iter``, the stopping criterion and its last ``value`` (None: not measured
        yet), the tolerance ``tol`` (a number, or a text such as ``"0 (none)"``) and
        ``advice`` (what to do); ``context`` prefixes the message.  The warning
        points at the user's call."""
        est = self.est
        est.fit_seconds_ = self.elapsed()
        if converged or n_iter < est.max_iter:
            return
        warn_stopped(est, self.unit, criterion, value, tol, advice, context=context)


def warn_stopped(est, unit, criterion, value, tol, advice, *, context=""):
    """The one :class:`~skstruct.exceptions.ConvergenceWarning` every estimator issues
    when its fit ran ``max_iter`` iterations (``unit``: "pass", "iteration") short of
    its tolerance: the estimator, ``max_iter``, the stopping ``criterion`` and its last
    ``value`` (None: not measured yet), ``tol`` (a number or a text) and ``advice``."""
    from ._core._warnings import ConvergenceWarning, warn_user

    reached = "not measured yet" if value is None or np.isnan(value) else f"{value:.3g}"
    units = unit + ("es" if unit.endswith("s") else "s")
    tol = tol if isinstance(tol, str) else f"{tol:g}"
    warn_user(f"{context}{type(est).__name__} stopped after max_iter={est.max_iter} "
              f"{units} short of its tolerance: {criterion} is {reached}, tol "
              f"{tol}. {advice}", ConvergenceWarning)


def resolve_model(model, X, y, batched_only=False, design=False, submodular=False):
    """A fitted clone of ``model`` (``"auto"`` picks one from the data).

    ``batched_only``: the estimator needs a built-in model's design (its
    algorithms read marginals, which the model protocol does not give).
    ``design``: return ``(model, (design, packed))`` for a built-in model,
    ``(model, None)`` for one of the protocol.  ``submodular``: the
    estimator keeps a model's pairwise tables supermodular when it asks for
    it; the others refuse such a model rather than ignore the request."""
    refuse_bags(X, y)
    check_sequence(X, "X")
    check_sequence(y, "y")
    if isinstance(model, str):
        if model != "auto":
            raise InvalidParameterError(f"model must be 'auto' or a model from "
                                        f"skstruct.models, got {model!r}")
        model = auto_model(X, y)
    elif not isinstance(model, StructuredModel):
        raise InvalidParameterError(f"model must be 'auto' or a model from skstruct.models, "
                                    f"got {type(model).__name__}")
    if batched_only and not model.has_batched_path():
        raise ValueError(f"model {type(model).__name__} is not a built-in model (or overrides "
                         "a protocol method); this estimator needs the batched models of "
                         "skstruct.models")
    if getattr(model, "submodular", False) is True:
        if not submodular:
            raise ValueError(f"{type(model).__name__}(submodular=True): this estimator does "
                             "not keep the pairwise tables supermodular; train such a model "
                             "with StructuredSVM")
        if not model.has_batched_path():
            raise ValueError(f"{type(model).__name__}(submodular=True) overrides a protocol "
                             "method, so it would be trained through the model protocol, "
                             "which does not keep the pairwise tables supermodular")
    model = clone(model)
    if not design:
        return model.fit(X, y)
    if model.has_batched_path():
        return model, model.fit_design(X, y)
    return model.fit(X, y), None


def refuse_bags(X, y):
    """A clear error for an estimator that does not fit on dask Bags."""
    if _is_bag(X) or _is_bag(y):
        raise ValueError("fitting on a dask Bag is supported by CRF, NonLocalCRF without "
                         "an energy, ApproxStructuredPredictor and StructuredSVM (solver 'bcfw' "
                         "or 'subgradient') only (see skstruct.distributed); give this "
                         "estimator lists")


def _is_bag(X):
    """Whether ``X`` is a :class:`dask.bag.Bag` (checked by type name: dask need not be
    installed)."""
    t = type(X)
    return t.__name__ == "Bag" and t.__module__.startswith("dask.bag")


def _set_n_features_in(est, model):
    """``n_features_in_``: the node features the model was fitted with, when it has them."""
    n = getattr(model, "n_features_", None)
    if n is not None:
        est.n_features_in_ = int(n)


def loss_weights(class_weight, classes, codes):
    """Hamming weight of each true class, in the order of ``classes``."""
    K = classes.shape[0]
    if class_weight is None:
        return np.ones(K)
    if isinstance(class_weight, str):
        if class_weight != "balanced":
            raise InvalidParameterError(f"class_weight must be None, 'balanced' or a dict, "
                                        f"got {class_weight!r}")
        counts = np.bincount(codes[codes >= 0], minlength=K).astype(np.float64)
        # sklearn's "balanced": n_nodes / (n_classes * count); unseen classes weigh 1
        w = np.ones(K)
        seen = counts > 0
        w[seen] = codes.shape[0] / (seen.sum() * counts[seen])
        return w
    if not isinstance(class_weight, dict):
        raise InvalidParameterError(f"class_weight must be None, 'balanced' or a dict, got "
                                    f"{type(class_weight).__name__}")
    w = np.ones(K)
    lookup = {c: i for i, c in enumerate(classes.tolist())}
    for label, value in class_weight.items():
        if label not in lookup:
            raise ValueError(f"class_weight has label {label!r} not present in y")
        if not isinstance(value, numbers.Real) or not np.isfinite(value) or value < 0:
            raise InvalidParameterError(f"class_weight[{label!r}] must be a finite number "
                                        f">= 0, got {value!r}")
        w[lookup[label]] = float(value)
    return w


def _refuse_latent_constraints(est):
    """Constraints name labels; a hidden-variable model decodes states."""
    if getattr(getattr(est, "model_", None), "latent", False):
        raise ValueError(f"clamp, forbidden and predict_kbest are not available with "
                         f"{type(est.model_).__name__}: its decoders work on hidden states, "
                         "not labels")


# the public methods of an estimator that do its work: each runs inside
# ``n_threads(self.n_jobs)``, so that ``n_jobs`` governs every thread pool they touch
# (the compiled kernels', BLAS's, OpenMP's), the work outside the kernels included
THREADED = ("fit", "partial_fit", "predict", "predict_marginals", "predict_kbest", "score",
            "predict_latent", "latent")


def _threaded(method):
    """``method`` run inside ``n_threads(self.n_jobs)``."""
    if getattr(method, "_threaded", False):
        return method

    @functools.wraps(method)
    def run(self, *args, **kwargs):
        n_jobs = getattr(self, "n_jobs", None)
        try:
            check_n_jobs(n_jobs)
        except ValueError:
            # the method's own parameter validation names the problem
            return method(self, *args, **kwargs)
        with n_threads(n_jobs):
            return method(self, *args, **kwargs)

    run._threaded = True
    return run


def _thread_methods(cls):
    for name in THREADED:
        method = cls.__dict__.get(name)
        if callable(method):
            setattr(cls, name, _threaded(method))
        elif callable(getattr(method, "fn", None)):
            # a method behind scikit-learn's available_if: the function it guards
            method.fn = _threaded(method.fn)


class StructuredEstimatorMixin(VersionedState, KeywordOnly):
    """``predict``/``score``/tags for estimators with a fitted ``model_`` and weights.

    A saved estimator records the skstruct version that saved it (:class:`VersionedState`).

    Subclasses provide ``_weights()`` returning ``(W (F, Kp), P (EF, K, K))``.
    A ``model_`` of the model protocol without the batched path predicts
    through its own ``inference`` with ``coef_``.

    Every subclass's methods named in :data:`THREADED` run inside
    ``n_threads(self.n_jobs)``.
    """

    def __init_subclass__(cls, **kwargs):
        super().__init_subclass__(**kwargs)
        _thread_methods(cls)

    def set_params(self, **params):
        """Set parameters; ``model__*`` ones need a model object, not ``"auto"``."""
        model = params.get("model", getattr(self, "model", None))
        nested = sorted(k for k in params if k.startswith("model__"))
        if nested and isinstance(model, str):
            raise ValueError(f"{nested[0]} needs a model object: set model=ChainModel(), "
                             f"GraphModel(), MultiLabelModel() ... (model={model!r} has no "
                             "parameters to set)")
        return super().set_params(**params)

    def _batched(self):
        return self.model_.has_batched_path()

    # the compiled kernel that decodes samples other than plain chains (see
    # skstruct.models._predict.predict_labels): the learners' oracle, which a structured
    # SVM's fit has compiled already
    _predict_kernel = "oracle"

    def _decode(self, X):
        from .models._predict import predict_labels

        check_is_fitted(self, "coef_")
        design, packed = self.model_.design(X)
        W, P = self._weights()
        with n_threads(self.n_jobs):
            labels = predict_labels(design, W, P, self._predict_iter(), self._predict_kernel)
        return labels, packed

    def _predict_iter(self):
        return 100

    def __sklearn_is_fitted__(self):
        # what predict reads; sklearn's default scans every attribute for a trailing
        # underscore, at each predict of a Pipeline
        return hasattr(self, "coef_")

    def _fast_chains(self):
        """Whether ``predict`` decodes the fitted model's own scores, so that chain
        samples may take the single compiled call of ``skstruct.models._fastpath``."""
        return False

    def _predict_chains(self, X):
        """:meth:`predict` of chain samples in one compiled call (validation, packing
        and Viterbi), or None where the general path must answer: another model or
        input, input it refuses (its error names the sample), or an unfitted
        estimator."""
        if "coef_" not in self.__dict__ or not self._fast_chains():
            return None
        if type(X) is list and len(X) == 1:
            # one sample: :meth:`_predict_one` tried it before this context was entered
            return None
        if self.n_jobs is None:
            return _fastpath.chain_predict(self.model_, X, *self._weights())
        with n_threads(self.n_jobs):
            return _fastpath.chain_predict(self.model_, X, *self._weights())

    def _predict_one(self, X, clamp=None, forbidden=None):
        """:meth:`predict` of one chain sample by the compiled fast path, or None.

        It runs before ``predict`` enters its ``n_threads`` context: one sample is
        decoded serially and touches no thread pool, and setting the pools up and back
        costs as much as the decoding itself (a service tags one sentence per call).
        """
        if (clamp is not None or forbidden is not None or type(X) is not list or len(X) != 1
                or "coef_" not in self.__dict__ or not self._fast_chains()):
            return None
        # (the error every other call raises from its thread context)
        check_n_jobs(getattr(self, "n_jobs", None))
        return _fastpath.chain_predict(self.model_, X, *self._weights())

    def predict(self, X, *, clamp=None, forbidden=None):
        """Most likely labelling of every sample (MAP; TRW-S on loopy graphs).

        Parameters
        ----------
        X : samples in the format of the fitted model (see ``skstruct.models``)
        clamp : sequence, optional
            Labels known in advance: one entry per sample, ``None`` (no
            constraint), a dict ``{node: label}`` or a sequence of ``n_nodes``
            labels with ``None`` at the free nodes.  Labels are values of
            ``classes_`` (for :class:`~skstruct.models.MultiLabelModel` the
            nodes are the labels and the values 0/1).
        forbidden : iterable of label pairs, optional
            Pairs ``(a, b)`` no edge may take: ``a`` at the edge's first node
            and ``b`` at its second (on chains, the transition from ``a`` to
            ``b``).  With either constraint the labelling is the best one that
            satisfies it: Viterbi on chains, exact max-sum on other trees,
            enumeration where the model enumerates and TRW-S on other loopy
            graphs (so approximate there); a sample no labelling satisfies
            raises a ``ValueError`` naming it.

        Returns
        -------
        y_pred : same structure as the ``y`` given to ``fit``: a list of
            ``(n_nodes_i,)`` arrays for chains and graphs, an array
            ``(n_samples, n_labels)`` for multi-label, ``(n_samples,)`` for
            multiclass.
        """
        if _is_bag(X):
            return bag_operation("map_predict")(self, X, "predict", clamp=clamp,
                                                forbidden=forbidden)
        if clamp is None and forbidden is None:
            fast = self._predict_chains(X)
            if fast is not None:
                return fast
        check_is_fitted(self, "coef_")
        if clamp is not None or forbidden is not None:
            from ._decoding import constrained_map

            design, packed, pots = self._constrained_potentials(X, clamp, forbidden)
            with n_threads(self.n_jobs):
                labels = constrained_map(design, *pots)
            return self.model_._format(labels, packed)
        if not self._batched():
            return [self.model_.inference(x, self.coef_) for x in X]
        labels, packed = self._decode(X)
        return self.model_._format(labels, packed)

    def _potentials(self, X):
        """The design, packed ``X`` and ``(unary, tables, pw_index)`` of the fitted
        model's scores."""
        from .models._predict import design_potentials

        design, packed = self.model_.design(X)
        W, P = self._weights()
        with n_threads(self.n_jobs):
            return design, packed, design_potentials(design, W, P)

    def _constrained_potentials(self, X, clamp, forbidden):
        from ._decoding import constrained_potentials

        _refuse_latent_constraints(self)
        if not self._batched():
            raise ValueError(f"clamp and forbidden need a built-in model (skstruct.models); "
                             f"{type(self.model_).__name__} decodes through its own inference")
        design, packed, (u, t, i) = self._potentials(X)
        u, t = constrained_potentials(design, u, t, np.asarray(self.classes_), clamp, forbidden)
        return design, packed, (u, t, i)

    def predict_kbest(self, X, k, *, clamp=None, forbidden=None):
        """The ``k`` best labellings of every chain or tree sample, best first, with
        their scores under the learned weights.

        Parameters
        ----------
        X : samples in the format of the fitted model; every sample a chain or a
            forest (a ``ValueError`` names a sample with a cycle)
        k : int
            Labellings wanted per sample.
        clamp, forbidden : optional
            Constraints, as for :meth:`predict`: only labellings that satisfy
            them are listed.

        Returns
        -------
        list of (labels, scores), one per sample: ``labels`` an array ``(r,
        n_nodes)`` of values of ``classes_`` (row 0 is :meth:`predict`'s answer up
        to ties), ``scores`` ``(r,)`` non-increasing; ``r = k``, or fewer when the
        sample has fewer labellings (that satisfy the constraints).
        """
        from .inference import kbest

        check_is_fitted(self, "coef_")
        _refuse_latent_constraints(self)
        if not self._batched():
            raise ValueError(f"predict_kbest needs a built-in model (skstruct.models); "
                             f"{type(self.model_).__name__} decodes through its own inference")
        if clamp is not None or forbidden is not None:
            design, _, (u, t, i) = self._constrained_potentials(X, clamp, forbidden)
        else:
            design, _, (u, t, i) = self._potentials(X)
        res = kbest(u, design.batch, t, k, pw_index=i, n_jobs=self.n_jobs)
        classes = np.asarray(self.classes_)
        return [(classes[r.labels], r.scores) for r in res]

    def predict_marginals(self, X, *, clamp=None, forbidden=None):
        """Node marginals of the distribution ``p(y | x)`` proportional to
        ``exp(score(x, y))`` of the learned scores.

        A max-margin or perceptron model is not trained as a probability model:
        these are the marginals of the conditional random field whose
        potentials are the learned scores (their arg max is not always the MAP
        labelling, and their scale follows ``C``), useful to rank the nodes by
        confidence.  Exact on chains and trees (forward-backward, sum-product)
        and where the model enumerates; loopy belief propagation elsewhere.

        Parameters
        ----------
        X : samples in the format of the fitted model
        clamp, forbidden : optional
            Constraints, as for :meth:`predict`: the marginals are those of the
            distribution restricted to the labellings that satisfy them.

        Returns
        -------
        list of arrays (n_nodes_i, n_classes), columns in the order of
        ``classes_`` (for :class:`~skstruct.models.MultiLabelModel` an array
        ``(n_labels, 2)`` per sample: off, on).
        """
        if _is_bag(X):
            return bag_operation("map_predict")(self, X, "predict_marginals", clamp=clamp,
                                                forbidden=forbidden)
        from ._decoding import constrained_marginals

        check_is_fitted(self, "coef_")
        if clamp is not None or forbidden is not None:
            design, _, pots = self._constrained_potentials(X, clamp, forbidden)
        else:
            if not self._batched():
                raise ValueError(f"predict_marginals needs a built-in model (skstruct.models); "
                                 f"{type(self.model_).__name__} defines no marginals")
            design, _, pots = self._potentials(X)
        with n_threads(self.n_jobs):
            node = constrained_marginals(design, *pots)
        if getattr(self.model_, "latent", False):
            return self.model_.label_marginals(node, design)
        return np.split(node, design.batch.node_offsets[1:-1])

    @property
    def unary_coef_(self):
        """Unary weights, one row per class: ``(n_classes, n_features)`` (for
        :class:`~skstruct.models.MultiLabelModel`, ``(n_labels, n_features)``:
        label ``l`` scores ``+/- unary_coef_[l] @ x``)."""
        check_is_fitted(self, "coef_")
        if not self._batched():
            raise AttributeError("unary_coef_ is defined for the built-in models; this model's "
                                 "weights are coef_, in the layout of its joint_feature")
        return self.model_.unary_view(self._weights()[0])

    @property
    def pairwise_coef_(self):
        """Pairwise tables ``(n_edge_features, n_classes, n_classes)``: edge ``e``
        scores ``sum_f edge_features[e, f] * pairwise_coef_[f, a, b]`` for label
        ``a`` at its first node and ``b`` at its second (one table, ``f = 0``,
        without edge features)."""
        check_is_fitted(self, "coef_")
        if not self._batched():
            raise AttributeError("pairwise_coef_ is defined for the built-in models; this "
                                 "model's weights are coef_, in the layout of its "
                                 "joint_feature")
        return self._weights()[1]

    def score(self, X, y):
        """Hamming accuracy: the fraction of nodes (labels) predicted right.

        A label never seen in ``fit`` counts as an error.
        """
        if _is_bag(X):
            return bag_operation("score")(self, X, y)
        from .metrics import hamming_accuracy

        y_pred = self.predict(X)
        # a grid model's labels are images: scored pixel by pixel
        ravel = getattr(getattr(self, "model_", None), "_ravel_labels", None)
        if ravel is not None:
            y, y_pred = ravel(y), ravel(y_pred)
        return hamming_accuracy(y, y_pred)

    def __sklearn_tags__(self):
        tags = super().__sklearn_tags__()
        tags.input_tags.two_d_array = False
        tags.input_tags.sparse = True
        tags.target_tags.required = True
        tags.target_tags.one_d_labels = False
        tags.non_deterministic = False
        return tags


_thread_methods(StructuredEstimatorMixin)


def _one_sample_first(threaded):
    """The mixin's ``predict`` (``threaded``, run inside ``n_threads``) preceded by
    :meth:`~StructuredEstimatorMixin._predict_one`, outside the context.  Subclasses
    that define their own ``predict`` do not get the shortcut (theirs may differ)."""

    @functools.wraps(threaded)
    def predict(self, X, *, clamp=None, forbidden=None):
        out = self._predict_one(X, clamp, forbidden)
        if out is not None:
            return out
        return threaded(self, X, clamp=clamp, forbidden=forbidden)

    predict._threaded = True
    return predict


StructuredEstimatorMixin.predict = _one_sample_first(StructuredEstimatorMixin.predict)
