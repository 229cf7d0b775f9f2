"""The linear-chain / tree conditional random field trained by maximum likelihood."""

import time
from numbers import Integral, Real
from typing import NamedTuple

import numpy as np
from sklearn.base import BaseEstimator
from sklearn.utils import check_random_state
from sklearn.utils.metaestimators import available_if
from sklearn.utils.validation import check_is_fitted

from ._backends import bag_operation
from ._base import (
    SHARED,
    StructuredEstimatorMixin,
    _FitLog,
    _is_bag,
    _refuse_latent_constraints,
    _set_n_features_in,
    resolve_model,
    shared_constraints,
    warn_stopped,
)
from ._core import n_threads
from ._core._decoders import CHAIN, TREE
from ._core._params import Interval, InvalidParameterError, Options, validate_params
from .models import StructuredModel

_SOLVERS = ("lbfgs", "sgd", "l2sgd", "perceptron", "pa", "arow")
# solvers that take one step per sample (or mini-batch) and so can continue on new data
_ONLINE = ("sgd", "l2sgd", "perceptron", "pa", "arow")
_LBFGS_OPTIONS = {"memory": 6, "period": 1, "epsilon": 0.0, "max_linesearch": 20}
_FEATURE_PAIRS = ("all", "seen")


# the online solvers of skstruct.solvers._online (AdaGrad's "sgd" is the CRF's own)
_KERNEL_ONLINE = ("l2sgd", "perceptron", "pa", "arow")


def _declared_classes(classes, declared, name):
    """The sorted union of ``classes`` and the ``declared`` labels, or a ``ValueError``
    naming a label that does not sort with them."""
    union = _union_classes(classes, np.asarray(declared))
    if union is None:
        bad = [v for v in np.asarray(declared).tolist()
               if _union_classes(classes, np.asarray([v])) is None]
        raise ValueError(f"{name}: label {bad[0] if bad else declared!r} does not sort with "
                         f"the classes {list(np.asarray(classes).tolist())}; give every "
                         "label one type (all strings or all numbers)")
    return union


def _same_classes(a, b):
    a, b = np.asarray(a), np.asarray(b)
    return a.shape == b.shape and bool(np.all(a == b))


def _union_classes(old, new):
    """The sorted union of two class arrays, or None when their labels do not compare
    (then the previous fit's classes must equal the new ones)."""
    old, new = np.asarray(old), np.asarray(new)
    if old.size and new.size and (old.dtype.kind in "biuf") != (new.dtype.kind in "biuf"):
        # numpy would turn the numbers into strings
        return None
    try:
        return np.unique(np.concatenate([old, new]))
    except TypeError:
        return None


def _old_to_new(old, new):
    """Where each of the ``old`` classes sits in ``new`` (a superset), or None."""
    old, new = np.asarray(old), np.asarray(new)
    try:
        idx = np.searchsorted(new, old)
    except TypeError:
        return None
    idx = np.minimum(idx, max(new.shape[0] - 1, 0))
    if new.shape[0] == 0 or not np.all(new[idx] == old):
        return None
    return idx.astype(np.int64)


def _set_model_classes(model, classes, name):
    """Give a fitted model more classes (a grown label set), or refuse naming the
    labels the model cannot add."""
    F, Kp, EF, K = model.param_shapes_
    if Kp != K or not hasattr(model, "_labels"):
        raise ValueError(f"{name}: {type(model).__name__} cannot add classes to a fitted "
                         f"model; fit with every class present (labels "
                         f"{list(np.asarray(classes).tolist())})")
    model.classes_ = np.asarray(classes)
    model.param_shapes_ = (F, len(classes), EF, len(classes))


def _grow_coef(coef, old_to_new, shapes, obj):
    """A previous fit's flat weights (full layout, ``shapes``) in ``obj``'s grown
    classes, new classes' weights 0, then in ``obj``'s layout (its pairs)."""
    from .solvers._online import grow_layout

    (F, K_old), (M, _, _) = shapes[0], shapes[1]
    K_new = obj.P_shape[1]
    return grow_layout(coef, old_to_new, K_old, K_new, F, M, 0.0)


class _FirstValue:
    """An objective that remembers the value of its first evaluation (the starting
    point's), which the convergence check needs when L-BFGS ran one iteration."""

    def __init__(self, obj):
        self.obj = obj
        self.first = None

    def value_grad(self, w):
        f, g = self.obj.value_grad(w)
        if self.first is None:
            self.first = float(f)
        return f, g


class Scores(NamedTuple):
    """The samples prediction decodes, and their potentials."""

    design: object         # the Design of the samples
    packed: object         # the packed samples
    unary: np.ndarray      # (N, K) node potentials
    tables: np.ndarray     # the edge tables
    pw_index: np.ndarray   # (E,) table of each edge
    projection: object     # what produced them beyond the CRF (NonLocalCRF's Bethe
    #                        projection), None for the plain CRF


class CRF(StructuredEstimatorMixin, BaseEstimator):
    """A linear-chain or tree conditional random field trained by maximum likelihood.

    Lafferty, McCallum & Pereira, "Conditional Random Fields: Probabilistic
    Models for Segmenting and Labeling Sequence Data" (ICML 2001).  The model
    is ``p(y | x) = exp(score(x, y)) / Z(x)`` with ``score`` linear in the
    weights: node weights per feature and class, and one transition table (or
    one table per edge feature).  Marginals and the log partition are exact
    (forward-backward on chains, sum-product on trees and forests); every
    graph must be a chain, a tree or a forest.

    The counterpart of ``sklearn_crfsuite.CRF``: behind
    ``NodeTransformer(DictVectorizer())`` it takes the same per-token feature
    dicts, and with ``feature_pairs="seen"`` it learns crfsuite's default
    feature set.  :class:`~skstruct.NonLocalCRF` is this model plus a learned
    non-local energy on its marginals.

    Parameters
    ----------
    model : "auto" or a model from :mod:`skstruct.models`, default="auto"
        The joint feature map; ``"auto"`` is :class:`~skstruct.models.ChainModel`
        for lists of arrays, :class:`~skstruct.models.GraphModel` for graph
        tuples (every graph must be a tree or forest).  With
        :class:`~skstruct.models.HiddenStatesModel` or
        :class:`~skstruct.models.HiddenNodesModel` (on trees), and for
        unknown labels (``None`` in ``y``), the unobserved states are
        marginalised: the likelihood is that of the labellings consistent
        with the observed labels (``solver="lbfgs"`` and
        ``feature_pairs="all"`` only; not convex).  Hidden-variable models
        start from small random weights drawn with ``random_state``.
    C : float, default=1.0
        Inverse regularisation: the CRF minimises ``C * sum_i -log
        p(y_i | x_i) + l1_ratio * ||w||_1 + (1 - l1_ratio) * ||w||^2 / 2``
        (scikit-learn's elastic net, as in ``LogisticRegression``).  CRFsuite
        minimises ``-loglik + c1 ||w||_1 + c2 ||w||^2``: the same minimiser at
        ``C = 1 / (c1 + 2 c2)`` and ``l1_ratio = c1 / (c1 + 2 c2)``; conversely
        ``c1 = l1_ratio / C`` and ``c2 = (1 - l1_ratio) / (2 C)`` (CRFsuite's
        tutorial setting ``c1 = c2 = 0.1`` is ``C = 10 / 3, l1_ratio = 1 / 3``).
        Between ``1e-100`` and ``1e100`` (beyond, L-BFGS's steps overflow or
        underflow).  ``solver="l2sgd"`` reads it as CRFsuite's ``c2 = 1 / (2
        C)`` and ``solver="pa"`` as the aggressiveness ``c`` of PA-I and
        PA-II; ``"perceptron"`` and ``"arow"`` do not read it.
    l1_ratio : float in [0, 1], default=0.0
        The L1 share of the regulariser.  Above 0 the weights are trained by
        OWL-QN (Andrew & Gao, "Scalable Training of L1-Regularized Log-Linear
        Models", ICML 2007), as CRFsuite does for ``c1 > 0``, and many come out
        exactly 0 (``n_nonzero_``); ``solver="lbfgs"`` only.
    solver : {"lbfgs", "sgd", "l2sgd", "perceptron", "pa", "arow"}, default="lbfgs"
        - ``"lbfgs"``: L-BFGS on the whole objective (CRFsuite's settings: 6
          correction pairs, here stored in single precision, and a Wolfe line
          search), OWL-QN with a backtracking line search when
          ``l1_ratio > 0``.
        - ``"sgd"``: AdaGrad steps on mini-batches of ``batch_size`` samples.
        - ``"l2sgd"``: CRFsuite's stochastic gradient descent on the
          L2-regularised likelihood, one sample per step, step ``1 / (lambda
          (t0 + t))`` with ``t0`` calibrated on a sample of the data as
          CRFsuite does (Bottou's schedule).
        - ``"perceptron"``: the averaged perceptron (CRFsuite's ``ap``;
          Collins, "Discriminative Training Methods for Hidden Markov Models",
          EMNLP 2002).
        - ``"pa"``: passive-aggressive steps (Crammer, Dekel, Keshet,
          Shalev-Shwartz & Singer, "Online Passive-Aggressive Algorithms",
          JMLR 7, 2006), types PA, PA-I and PA-II.
        - ``"arow"``: adaptive regularisation of weights (Mejer & Crammer,
          "Confidence in Structured-Prediction using Confidence-Weighted
          Models", EMNLP 2010), with a diagonal covariance.

        The last five are online and offer :meth:`partial_fit`; the last four
        need chains (CRFsuite's setting).  The perceptron, PA and AROW learn
        from Viterbi decodings, not the likelihood: their weights still give
        marginals, but uncalibrated ones.
    solver_options : dict or None, default=None
        Options of the solver, CRFsuite's names and defaults:

        - ``"lbfgs"``: ``memory`` (6, correction pairs), ``period`` (1) and
          ``tol``: stop when the relative decrease of the objective over the
          last ``period`` iterations is at most ``tol`` (CRFsuite's ``period``
          and ``delta``); ``epsilon`` (0, off): also stop when ``||g|| /
          max(1, ||w||) <= epsilon``; ``max_linesearch`` (20).
        - ``"l2sgd"``: ``calibration_eta`` (0.1), ``calibration_rate`` (2),
          ``calibration_samples`` (1000), ``calibration_candidates`` (10),
          ``calibration_max_trials`` (20); ``period`` (10) and ``delta``
          (1e-6): stop when the objective improved by less than ``delta``
          (relative) over ``period`` epochs.
        - ``"perceptron"``: ``average`` (True).
        - ``"pa"``: ``type`` (1: PA-I; 0: PA, 2: PA-II), ``error_sensitive``
          (True: the margin asked for grows with the square root of the
          number of wrong labels), ``average`` (True).
        - ``"arow"``: ``variance`` (1, the initial variance of every
          weight), ``gamma`` (1, the regularisation of each step).
        - ``"sgd"``: none.

        An unknown option raises a ``ValueError`` that lists the solver's
        options.
    max_iter : int, default=100
        L-BFGS iterations, or epochs (passes over the data) of the other
        solvers.
    tol : float, default=1e-6
        L-BFGS stops when the relative decrease of the objective falls below
        ``tol`` (as scipy's ``ftol``; over ``period`` iterations, see
        ``solver_options``); a fit that reaches ``max_iter`` first issues a
        :class:`~skstruct.exceptions.ConvergenceWarning`.  The perceptron, PA
        and AROW stop after a pass whose share of wrongly decoded samples is
        at most ``tol`` (a pass without mistakes, by default), and warn
        likewise at ``max_iter``.  ``"sgd"`` runs its ``max_iter`` epochs.
    feature_pairs : {"all", "seen"}, default="all"
        Which node weights are learned.  ``"all"``: one weight per feature and
        class (the ``(n_classes, n_features)`` table).  ``"seen"``: only the
        feature-class pairs that occur in the training data (a non-zero
        feature on a node of that class), crfsuite's default feature set
        (``feature.possible_states=False``); the weights of the other pairs
        are fixed at exactly 0.  Far fewer weights on sparse features (on
        CoNLL-2000 chunking, 0.1 million instead of 1.2 million), so less
        memory and faster training; the model can no longer raise a class for
        a feature never seen with it (or lower the others).  ``unary_coef_``
        and ``coef_`` keep their full shapes, with zeros at the unseen pairs.
    warm_start : bool, default=False
        Start from the previous fit's ``coef_`` instead of zero (or, for a
        hidden-variable model, small random weights).  The new data must give
        the same kind of model, the same ``classes_`` and the same weight
        shapes (features, edge features); otherwise ``fit`` raises a
        ``ValueError``.  With ``feature_pairs="seen"`` the previous weights
        of the pairs seen in the new data are kept.
    learning_rate : float, default=0.1
        AdaGrad's step (``solver="sgd"``).
    batch_size : int, default=64
        Samples per AdaGrad step (``solver="sgd"``).
    n_jobs : int, default=None
        Threads of the compiled kernels.
    random_state : int, RandomState or None, default=None
        The mini-batches and their order (``solver="sgd"``) and the starting
        weights of hidden-variable models.
    verbose : int, default=0
        Print the objective after every iteration or epoch.

    Attributes
    ----------
    model_ : fitted clone of ``model``
    classes_ : ndarray
        The labels seen in ``fit``, in the order of the class axes.
    coef_ : ndarray
        All weights, flat: node weights then edge tables.
    unary_coef_ : ndarray (n_classes, n_features)
    pairwise_coef_ : ndarray (n_edge_features, n_classes, n_classes)
        One table (``n_edge_features = 1``) without edge features.
    n_nonzero_ : int
        The number of non-zero entries of ``coef_`` (with ``l1_ratio > 0``,
        the weights that survived the L1 penalty).
    n_iter_ : int
        L-BFGS iterations or epochs run.
    fit_seconds_ : float
        Wall time of the training.
    history_ : dict of arrays
        ``"objective"`` per iteration and ``"seconds"``, the training time up
        to it (cumulative); fitted on a dask Bag, also ``"bytes_sent"`` and
        ``"bytes_received"``, the payload per iteration (mean).
    n_features_in_ : int
        Node features of the training data.

    See Also
    --------
    NonLocalCRF : this CRF plus a learned non-local energy.
    ApproxStructuredPredictor : CRFs on loopy graphs (approximate marginals).

    Notes
    -----
    ``fit``, ``predict``, ``predict_marginals`` and ``score`` also accept
    :class:`dask.bag.Bag` samples (see :mod:`skstruct.distributed`): L-BFGS
    on the objective summed over the partitions, fully labelled samples of
    :class:`~skstruct.models.ChainModel` or :class:`~skstruct.models.GraphModel`
    only.

    Examples
    --------
    A linear-chain CRF on handwritten words:

    >>> from skstruct import CRF
    >>> from skstruct.datasets import load_letters
    >>> d = load_letters()
    >>> crf = CRF(C=1.0, max_iter=200).fit(d.X[:300], d.y[:300])
    >>> K = len(crf.classes_)                # letters seen in these words
    >>> crf.unary_coef_.shape == (K, 128), crf.pairwise_coef_.shape == (1, K, K)
    (True, True)
    >>> marginals = crf.predict_marginals(d.X[300:302])
    >>> [m.shape for m in marginals] == [(len(x), K) for x in d.X[300:302]]
    True
    >>> best, = crf.predict_kbest(d.X[300:301], k=2)
    >>> labels, scores = best
    >>> labels.shape == (2, len(d.X[300])), bool(scores[0] >= scores[1])
    (True, True)
    """

    _parameter_constraints = shared_constraints(
        model=[Options("auto"), StructuredModel],
        C=SHARED,
        l1_ratio=[Interval(Real, 0, 1, closed="both")],
        solver=[Options(*_SOLVERS)],
        solver_options=[None, dict],
        max_iter=SHARED,
        tol=SHARED,
        feature_pairs=[Options(*_FEATURE_PAIRS)],
        warm_start=SHARED,
        learning_rate=[Interval(Real, 0, None, closed="neither")],
        batch_size=[Interval(Integral, 1)],
        n_jobs=SHARED,
        random_state=SHARED,
        verbose=SHARED,
    )

    def __init__(self, *, model="auto", C=1.0, l1_ratio=0.0, solver="lbfgs",
                 solver_options=None, max_iter=100, tol=1e-6, feature_pairs="all",
                 warm_start=False, learning_rate=0.1, batch_size=64, n_jobs=None,
                 random_state=None, verbose=0):
        self.model = model
        self.C = C
        self.l1_ratio = l1_ratio
        self.solver = solver
        self.solver_options = solver_options
        self.max_iter = max_iter
        self.tol = tol
        self.feature_pairs = feature_pairs
        self.warm_start = warm_start
        self.learning_rate = learning_rate
        self.batch_size = batch_size
        self.n_jobs = n_jobs
        self.random_state = random_state
        self.verbose = verbose

    # ------------------------------------------------------------ validation
    def _check_params(self):
        validate_params(self)
        if self.l1_ratio > 0 and self.solver != "lbfgs":
            raise InvalidParameterError(
                f"l1_ratio={self.l1_ratio!r} needs solver='lbfgs' (OWL-QN); "
                f"solver={self.solver!r} trains the L2-regularised objective only")
        self._options = self._solver_options()

    def _solver_options(self):
        """``solver_options`` checked, with the solver's defaults filled in."""
        given = {} if self.solver_options is None else dict(self.solver_options)
        if self.solver in ("lbfgs", "sgd"):
            defaults = _LBFGS_OPTIONS if self.solver == "lbfgs" else {}
            unknown = sorted(set(given) - set(defaults))
            if unknown:
                raise InvalidParameterError(
                    f"solver_options: {unknown[0]!r} is not an option of solver="
                    f"{self.solver!r}, which takes {sorted(defaults) or 'none'}")
            opts = {**defaults, **given}
            for key in ("memory", "period", "max_linesearch"):
                if key in given and not (isinstance(given[key], Integral)
                                         and not isinstance(given[key], bool)
                                         and given[key] >= 1):
                    raise InvalidParameterError(f"solver_options[{key!r}] must be an int >= "
                                                f"1, got {given[key]!r}")
            if "epsilon" in given and not (isinstance(given["epsilon"], Real)
                                           and np.isfinite(given["epsilon"])
                                           and given["epsilon"] >= 0):
                raise InvalidParameterError(f"solver_options['epsilon'] must be a float >= "
                                            f"0, got {given['epsilon']!r}")
            return opts
        from .solvers._online import check_options

        try:
            return check_options(self.solver, given)
        except ValueError as e:
            raise InvalidParameterError(f"solver_options: {e}") from None

    def _design(self, X, y=None, made=None):
        design, packed = self.model_.design(X, y) if made is None else made
        bad = np.flatnonzero(~np.isin(design.kind, (CHAIN, TREE)))
        name = type(self).__name__
        if bad.size and hasattr(self.model_, "edges_"):
            raise ValueError(f"the label graph of {self.model_!r} has a cycle: {name} needs "
                             "chains or trees (exact marginals); use "
                             "MultiLabelModel(edges='tree') or edges='independent'")
        if bad.size:
            raise ValueError(f"sample {bad[0]} has a cycle: {name} needs chains or trees "
                             "(exact marginal inference)")
        return design, packed

    def _marginalising_conflicts(self):
        """``(refused, what is needed)`` pairs of the settings that cannot
        marginalise unobserved states."""
        return ((self.feature_pairs != "all", "feature_pairs='all'"),
                (self.solver != "lbfgs", "solver='lbfgs'"))

    def _allowed(self, model, design):
        """The states each training node may take, when some are not observed (unknown
        labels, hidden states or hidden nodes: marginalised), else None."""
        from .models._latent import allowed_states

        if not (getattr(model, "latent", False) or np.any(design.y < 0)):
            return None
        what = ("a model with hidden states or hidden nodes"
                if getattr(model, "latent", False) else "unknown labels (None in y)")
        for bad, why in self._marginalising_conflicts():
            if bad:
                raise ValueError(f"{what}: {type(self).__name__} marginalises the unobserved "
                                 f"states with {why} only")
        return allowed_states(model, design)[0]

    # ------------------------------------------------------------------- fit
    def fit(self, X, y):
        """Fit the CRF's weights by maximum likelihood.

        Parameters
        ----------
        X : list of samples (see :mod:`skstruct.models`), chains or trees, or a
            :class:`dask.bag.Bag` of them.
        y : list of label arrays (``None`` marks an unknown label), or a Bag of
            them partitioned as ``X``.

        Returns
        -------
        self
        """
        if _is_bag(X):
            return bag_operation("CRF")(self, X, y)
        self._check_params()
        rng = check_random_state(self.random_state)
        previous = self._warm_source()
        design = self._fit_model(X, y, previous)
        if self.solver in _KERNEL_ONLINE:
            self._fit_online(design, rng, previous)
        else:
            self._fit_base(design, rng, previous)
        return self

    def _fit_model(self, X, y, previous=None):
        """Fit the model (``model_``, ``classes_``, ``n_features_in_``); returns the
        training design.  A warm start keeps the previous fit's classes, adding the
        new data's (the model grows)."""
        model, made = resolve_model(self.model, X, y, batched_only=True, design=True)
        if previous is not None and type(model) is previous[0]:
            union = _union_classes(previous[1], model.classes_)
            if union is not None and not _same_classes(union, model.classes_):
                _set_model_classes(model, union, type(self).__name__)
                made = model.design(X, y)
        self.model_ = model
        self.classes_ = model.classes_
        _set_n_features_in(self, model)
        return self._design(X, y, made)[0]

    def _fit_base(self, design, rng, previous=None):
        """Train the CRF on ``design``; sets ``coef_``, ``n_iter_``, ``fit_seconds_``
        and ``history_`` and returns the objective (in the layout of the trained
        pairs)."""
        from .solvers._crf import CRFObjective

        allowed = self._allowed(self.model_, design)
        pairs = None
        if self.feature_pairs == "seen":
            from .solvers._crf import seen_pairs

            pairs = seen_pairs(design)
        obj = CRFObjective(design, self.C, pairs=pairs, allowed=allowed,
                           l2=1.0 - self.l1_ratio)
        w0 = self._initial_weights(obj, previous, rng)
        with n_threads(self.n_jobs):
            if self.solver == "lbfgs":
                w, n_iter, hist, seconds = self._run_lbfgs(obj, w0)
            else:
                t0 = time.perf_counter()
                w, n_iter, hist = self._fit_sgd(design, w0, rng, pairs)
                seconds = time.perf_counter() - t0
        del w0
        self._set_base_fit(obj, w, n_iter, hist, seconds)
        return obj

    def _warm_source(self):
        """What a warm start continues from: ``(model type, classes, weight shapes,
        coef_)`` of the previous fit, or None."""
        if not self.warm_start or not hasattr(self, "coef_"):
            return None
        W, P = self._weights()
        return type(self.model_), np.asarray(self.classes_).copy(), (W.shape, P.shape), \
            self.coef_.copy()

    def _initial_weights(self, obj, previous, rng):
        """The starting weights in ``obj``'s layout: the previous fit's (warm start),
        small random ones for a hidden-variable model, else zeros."""
        if previous is not None:
            kind, classes, shapes, coef = previous
            name = type(self).__name__
            what = None
            if type(self.model_) is not kind:
                what = (f"the model is a {type(self.model_).__name__}, the previous fit's a "
                        f"{kind.__name__}")
            elif not _same_classes(classes, self.classes_):
                what = (f"the classes are {list(np.asarray(self.classes_).tolist())}, the "
                        f"previous fit's {list(classes.tolist())}")
                grown = _old_to_new(classes, self.classes_)
                if grown is not None and shapes[0][0] == obj.W_shape[0] and \
                        shapes[1][0] == obj.P_shape[0]:
                    what = None
                    coef = _grow_coef(coef, grown, shapes, obj)
            elif shapes != (obj.W_shape, obj.P_shape):
                what = (f"the weights are node {obj.W_shape} and edge {obj.P_shape}, the "
                        f"previous fit's {shapes[0]} and {shapes[1]}")
            if what is None and (obj.W_shape[0], obj.P_shape[0]) != \
                    (shapes[0][0], shapes[1][0]):
                what = (f"the weights are node {obj.W_shape} and edge {obj.P_shape}, the "
                        f"previous fit's {shapes[0]} and {shapes[1]}")
            if what is not None:
                raise ValueError(f"{name}(warm_start=True) continues from the previous fit's "
                                 f"weights, but {what}: fit with warm_start=False")
            if obj.pairs is None:
                return coef
            wptr, wlab = obj.pairs
            nF = obj.W_shape[0] * obj.W_shape[1]
            W = coef[:nF].reshape(obj.W_shape)
            rows = np.repeat(np.arange(wptr.shape[0] - 1), np.diff(wptr))
            return np.concatenate([W[rows, wlab], coef[nF:]])
        w0 = np.zeros(obj.n_weights)
        if getattr(self.model_, "latent", False) and rng is not None:
            # zero weights are a saddle point where the states of a label stay alike
            w0 += 0.1 * rng.standard_normal(obj.n_weights)
        return w0

    def _run_lbfgs(self, obj, w0):
        """L-BFGS from ``w0`` (overwritten) on ``obj`` (anything with ``value_grad``);
        returns ``(w, n_iter, history, seconds)`` and warns when ``max_iter`` ran out
        before ``tol`` was met."""
        from .solvers._crf import fit_crf_lbfgs

        opts = getattr(self, "_options", None) or self._solver_options()
        l1 = float(self.l1_ratio)
        tracked = _FirstValue(obj)
        t0 = time.perf_counter()
        w, n_iter, hist = fit_crf_lbfgs(tracked, w0, self.max_iter, self.tol, self.verbose,
                                        overwrite_w0=True, l1=l1, memory=opts["memory"],
                                        period=opts["period"], epsilon=opts["epsilon"],
                                        max_linesearch=opts["max_linesearch"])
        seconds = time.perf_counter() - t0
        f = hist["objective"]
        if n_iter >= self.max_iter and f.size:
            period = opts["period"]
            before = f[-1 - period] if f.size > period else tracked.first
            if f.size <= period and l1 > 0:
                before = tracked.first + l1 * float(np.abs(w0).sum())
            rel = (before - f[-1]) / max(abs(before), abs(f[-1]), 1.0)
            if rel > self.tol:
                # one more evaluation, only when warning: the gradient at the last iterate
                g = obj.value_grad(w)[1]
                what = "gradient"
                if l1 > 0:
                    from .solvers._lbfgs import pseudo_gradient

                    g = pseudo_gradient(w, g, l1)
                    what = "pseudo-gradient"
                span = "last relative decrease" if period == 1 else \
                    f"relative decrease over the last {period} iterations"
                warn_stopped(self, "iteration", f"L-BFGS's {span} of the objective", rel,
                             self.tol, f"The {what} norm is {float(np.sqrt(g @ g)):.3g}; "
                             "increase max_iter.")
        return w, n_iter, hist, seconds

    def _set_base_fit(self, obj, w, n_iter, hist, seconds):
        """Store the trained weights and the record of their training."""
        self._set_theta(obj, w)
        self.n_nonzero_ = int(np.count_nonzero(self.coef_))
        self.n_iter_ = int(n_iter)
        self.fit_seconds_ = float(seconds)
        self.history_ = {k: np.asarray(v, np.float64) for k, v in hist.items()}

    def _set_theta(self, obj, w):
        # the full layout (node weights then edge tables), whatever the pairs trained;
        # the tables the kernels read are views of coef_ (one copy of the weights)
        coef = np.ascontiguousarray(obj.full_weights(w), dtype=np.float64)
        nF = obj.W_shape[0] * obj.W_shape[1]
        self.coef_ = coef
        self._W, self._P = coef[:nF].reshape(obj.W_shape), coef[nF:].reshape(obj.P_shape)

    def _weights(self):
        return self._W, self._P

    def __getstate__(self):
        state = super().__getstate__()
        if "_W" in state:
            # the tables are views of coef_: pickle the weights once, and make them views
            # again on loading
            state = dict(state)
            W, P = state.pop("_W"), state.pop("_P")
            state["_table_shapes"] = (W.shape, P.shape)
        return state

    def __setstate__(self, state):
        state = dict(state)
        shapes = state.pop("_table_shapes", None)
        super().__setstate__(state)
        if shapes is not None:
            n = int(np.prod(shapes[0]))
            self._W = self.coef_[:n].reshape(shapes[0])
            self._P = self.coef_[n:].reshape(shapes[1])

    # ------------------------------------------------------------ online solvers
    def _seen_mask(self, design, mask=None):
        """The (F, K) node-weight pairs the training data has (``feature_pairs="seen"``),
        or'ed into ``mask``; None for every pair."""
        if self.feature_pairs != "seen":
            return None
        from .solvers._crf import seen_pairs

        wptr, wlab = seen_pairs(design)
        F, K = design.n_features_total, design.n_columns
        out = np.zeros((F, K), np.bool_) if mask is None else mask
        out[np.repeat(np.arange(F), np.diff(wptr)), wlab] = True
        return out

    def _fit_online(self, design, rng, previous):
        """``fit`` by one of the online solvers: epochs until the solver's stopping test
        or ``max_iter``."""
        from .solvers._crf import CRFObjective
        from .solvers._online import OnlineCRF, init_state

        self._allowed(self.model_, design)
        layout = CRFObjective(design, self.C)
        w0 = None if previous is None else self._initial_weights(layout, previous, None)
        mask = self._seen_mask(design)
        solver = OnlineCRF(design, self.solver, C=self.C, options=self._options, mask=mask)
        state = init_state(self.solver, self._options, solver.n_weights, w0)
        self._online = {"state": state, "mask": mask, "rng": rng, "solver": self.solver}
        self.history_ = None
        self._online_epochs(solver, layout, self.max_iter, fitting=True)

    def _online_epochs(self, solver, layout, n_epochs, *, fitting):
        """Run ``n_epochs`` epochs of ``solver`` from the kept state; sets ``coef_`` and
        appends to ``history_``.  ``fitting``: stop by the solver's test and warn at
        ``max_iter`` (``fit``), rather than run exactly the epochs asked
        (``partial_fit``)."""
        from .solvers._online import l2sgd_converged

        on = self._online
        state, rng = on["state"], on["rng"]
        sgd = self.solver == "l2sgd"
        S = solver.n_samples
        before = 0.0 if fitting or self.history_ is None else self.fit_seconds_
        keys = ("objective", "loss", "seconds") if sgd else ("loss", "mistakes", "seconds")
        log = _FitLog(self, keys, int_keys=("mistakes",), unit="epoch", seconds=before)
        if sgd and not float(state.t0) > 0.0:
            log.start()
            solver.calibrate(state, rng)
            log.stop()
        best, objectives, converged, value, it = None, [], False, None, 0
        opts = self._options
        for it in range(n_epochs):
            order = rng.permutation(S).astype(np.int64)
            log.start()
            stats = solver.epoch(state, order)
            log.stop()
            if sgd:
                # CRFsuite's objective is the CRF's divided by C
                f = stats.objective * self.C
                objectives.append(f)
                log.record(f, stats.loss, log.seconds)
                log.say(it + 1, objective=f)
                if fitting and (best is None or f < best[0]):
                    # CRFsuite keeps the weights of the best epoch
                    best = (f, solver.weights(state))
                converged = l2sgd_converged(objectives, opts["period"], opts["delta"])
                if len(objectives) > opts["period"]:
                    value = (objectives[-1 - opts["period"]] - f) / abs(f) if f else 0.0
            else:
                log.record(stats.loss, stats.mistakes, log.seconds)
                log.say(it + 1, loss=stats.loss, mistakes=stats.mistakes)
                value = stats.mistakes / max(S, 1)
                converged = value <= self.tol
            if fitting and converged:
                break
        w = best[1] if best is not None else solver.weights(state)
        n_iter = it + 1 if n_epochs else 0
        if fitting:
            if sgd:
                log.finish(converged=converged, n_iter=n_iter,
                           criterion=f"the objective's relative improvement over the last "
                                     f"{opts['period']} epochs",
                           value=value, tol=opts["delta"],
                           advice="Increase max_iter, or solver_options['delta'].")
            else:
                log.finish(converged=converged, n_iter=n_iter,
                           criterion="the share of samples decoded wrongly in the last epoch",
                           value=value, tol=self.tol,
                           advice="Increase max_iter or tol; data that no weights separate "
                                  "never reach 0.")
            seconds = self.fit_seconds_
        else:
            seconds = log.seconds
        hist = log.history()
        if self.history_ is not None and not fitting:
            hist = {k: np.concatenate([self.history_[k], hist[k]]) for k in hist}
            n_iter += self.n_iter_
        self._set_base_fit(layout, w, n_iter, hist, seconds)

    def _check_online(self):
        if self.solver not in _ONLINE:
            raise AttributeError(f"partial_fit needs an online solver ({', '.join(_ONLINE)}), "
                                 f"not solver={self.solver!r}")
        return True

    @available_if(_check_online)
    def partial_fit(self, X, y, classes=None):
        """One epoch of the online solver over ``(X, y)``, continuing from the previous
        call (or ``fit``).

        Available when ``solver`` is online (``"sgd"``, ``"l2sgd"``,
        ``"perceptron"``, ``"pa"``, ``"arow"``).  The first call fits the model
        on ``(X, y)``; later calls need samples with the same number of
        features.  A label not seen before extends the model: the label set
        grows, sorted as ``classes_``, with zero weights for the new label
        (and, for ``"arow"``, its initial variance).  ``"l2sgd"`` calibrates
        its step on the first call's samples and spreads its regulariser over
        each call's samples (``lambda = 1 / (C n_samples)``); ``"sgd"`` needs
        ``feature_pairs="all"`` here.

        Parameters
        ----------
        X : list of chains (the samples of :class:`~skstruct.models.ChainModel`)
        y : list of label arrays
        classes : array-like, optional
            Labels to declare beyond those of ``y`` (on any call): they get
            weights, all zero until a sample with them is seen.

        Returns
        -------
        self
        """
        if _is_bag(X):
            raise ValueError(f"{type(self).__name__}.partial_fit takes samples in memory, "
                             "not a dask Bag")
        if getattr(self, "_online", None) is None or self._online["solver"] != self.solver:
            return self._first_partial_fit(X, y, classes)
        design, packed = self._partial_design(X, y, classes)
        with n_threads(self.n_jobs):
            self._partial_epoch(design)
        return self

    def _first_partial_fit(self, X, y, classes):
        self._check_params()
        if self.solver == "sgd" and self.feature_pairs != "all":
            raise InvalidParameterError("partial_fit with solver='sgd' needs "
                                        "feature_pairs='all'")
        model, made = resolve_model(self.model, X, y, batched_only=True, design=True)
        if classes is not None:
            union = _declared_classes(model.classes_, classes, type(self).__name__)
            if not _same_classes(union, model.classes_):
                _set_model_classes(model, union, type(self).__name__)
                made = model.design(X, y)
        self.model_ = model
        self.classes_ = model.classes_
        _set_n_features_in(self, model)
        design = self._design(X, y, made)[0]
        self._allowed(self.model_, design)
        F, K, M = design.n_features_total, design.n_columns, design.n_edge_features
        n = F * K + M * K * K
        if self.solver == "sgd":
            state = {"w": np.zeros(n), "G": np.full(n, 1e-8)}
        else:
            from .solvers._online import init_state

            state = init_state(self.solver, self._options, n)
        mask = np.zeros((F, K), np.bool_) if self.feature_pairs == "seen" else None
        self._online = {"state": state, "mask": mask, "solver": self.solver,
                        "rng": check_random_state(self.random_state)}
        self.history_ = None
        self.n_iter_ = 0
        self.fit_seconds_ = 0.0
        with n_threads(self.n_jobs):
            self._partial_epoch(design)
        return self

    def _partial_design(self, X, y, classes):
        """The design of a later ``partial_fit`` call, the model grown to its labels."""
        from .models._base import encode_labels
        from .solvers._online import grow_layout, grow_state

        check_is_fitted(self, "coef_")
        model = self.model_
        name = type(self).__name__
        packed = model._pack(X, fitting=False)
        labels = model._labels(y, packed)
        known = np.asarray([v for v in np.asarray(labels, dtype=object).ravel()
                            if v is not None], dtype=object)
        new = [v for v in dict.fromkeys(known.tolist()) if not np.any(self.classes_ == v)]
        if classes is not None:
            new += [v for v in np.asarray(classes).tolist()
                    if not np.any(self.classes_ == v) and v not in new]
        if new:
            union = _declared_classes(self.classes_, np.asarray(new), name)
            old_to_new = _old_to_new(self.classes_, union)
            d0 = model._design(model._pack(model._first_samples(X), fitting=False))
            F, M = d0.n_features_total, d0.n_edge_features
            K_old, K_new = len(self.classes_), len(union)
            _set_model_classes(model, union, name)
            on = self._online
            if self.solver == "sgd":
                st = on["state"]
                on["state"] = {"w": grow_layout(st["w"], old_to_new, K_old, K_new, F, M, 0.0),
                               "G": grow_layout(st["G"], old_to_new, K_old, K_new, F, M,
                                                1e-8)}
            else:
                on["state"] = grow_state(on["state"], self.solver, self._options,
                                         old_to_new, K_new, F, M)
            if on["mask"] is not None:
                mask = np.zeros((F, K_new), np.bool_)
                mask[:, old_to_new] = on["mask"]
                on["mask"] = mask
            self.classes_ = model.classes_
        d = model._design(packed)
        d.y = encode_labels(labels, self.classes_)
        return self._design(X, y, (d, packed))

    def _partial_epoch(self, design):
        """One epoch of ``partial_fit`` over ``design``."""
        from .solvers._crf import CRFObjective

        on = self._online
        layout = CRFObjective(design, self.C)
        if self.solver == "sgd":
            return self._partial_adagrad(design, layout)
        from .solvers._online import OnlineCRF

        on["mask"] = self._seen_mask(design, on["mask"])
        solver = OnlineCRF(design, self.solver, C=self.C, options=self._options,
                           mask=on["mask"])
        self._online_epochs(solver, layout, 1, fitting=False)

    def _partial_adagrad(self, design, layout):
        """One AdaGrad epoch over ``design`` (``partial_fit`` with ``solver="sgd"``)."""
        from .solvers._crf import AdaGradCRF

        on = self._online
        st = on["state"]
        solver = AdaGradCRF(design, self.C, batch_size=self.batch_size,
                            learning_rate=self.learning_rate, rng=on["rng"])
        solver.G = st["G"]
        before = 0.0 if self.history_ is None else self.fit_seconds_
        t0 = time.perf_counter()
        solver.epoch(st["w"])
        seconds = before + time.perf_counter() - t0
        f = solver.objective(st["w"])
        hist = {"objective": np.array([f]), "seconds": np.array([seconds])}
        if self.history_ is not None:
            hist = {k: np.concatenate([self.history_[k], hist[k]]) for k in hist}
        self._set_base_fit(layout, st["w"].copy(), self.n_iter_ + 1, hist, seconds)

    def _fit_sgd(self, design, w0, rng, pairs=None):
        """AdaGrad on mini-batches of the CRF objective."""
        from .solvers._crf import AdaGradCRF

        solver = AdaGradCRF(design, self.C, batch_size=self.batch_size,
                            learning_rate=self.learning_rate, rng=rng, pairs=pairs)
        w = w0.copy()
        hist = {"objective": [], "seconds": []}
        seconds = 0.0
        for epoch in range(self.max_iter):
            t0 = time.perf_counter()
            solver.epoch(w)
            seconds += time.perf_counter() - t0
            hist["objective"].append(solver.objective(w))
            hist["seconds"].append(seconds)
            if self.verbose:
                print(f"epoch {epoch + 1:4d}  objective {hist['objective'][-1]:.8g}",
                      flush=True)
        return w, self.max_iter, hist

    # -------------------------------------------------------------- predict
    def _projected(self):
        """Whether prediction decodes other potentials than the CRF's own."""
        return False

    def _fast_chains(self):
        return not self._projected()

    def _scores(self, X, made=None):
        """The design, packed ``X`` and the potentials prediction decodes, as
        :class:`Scores` (``made``: the design and packed ``X`` if already made)."""
        from .solvers._crf import CRFObjective

        check_is_fitted(self, "coef_")
        design, packed = self._design(X) if made is None else made
        design.y = np.zeros(design.batch.n_nodes, np.int64)
        theta_v, tables, pwi = CRFObjective(design, self.C).potentials(self._W, self._P)
        return Scores(design=design, packed=packed, unary=theta_v, tables=tables,
                      pw_index=pwi, projection=None)

    def _potentials(self, X):
        with n_threads(self.n_jobs):
            sc = self._scores(X)
        return sc.design, sc.packed, (sc.unary, sc.tables, sc.pw_index)

    def _decode(self, X):
        from .inference import map_batch
        from .models._chain import is_plain_chain
        from .models._predict import predict_labels

        check_is_fitted(self, "coef_")
        made = self._design(X)
        if not self._projected() and is_plain_chain(made[0]):
            # the CRF's MAP is the linear model's: Viterbi with the unary scores made
            # chain by chain, no (n_nodes, n_classes) array of potentials
            with n_threads(self.n_jobs):
                return predict_labels(made[0], self._W, self._P, 0), made[1]
        with n_threads(self.n_jobs):
            sc = self._scores(X, made)
            labels = map_batch(sc.design.batch, sc.unary, sc.tables, sc.pw_index)
        return labels, sc.packed

    def _node_marginals(self, sc):
        """Node marginals of the potentials :meth:`_scores` gave (a :class:`Scores`)."""
        from .inference import marginals_batch

        return marginals_batch(sc.design.batch, sc.unary, sc.tables, sc.pw_index,
                               edge_marginals=None)[0]

    def predict_marginals(self, X, *, clamp=None, forbidden=None):
        """Node marginals of every sample under the CRF.

        Parameters
        ----------
        X : samples in the format of the fitted model
        clamp, forbidden : optional
            Constraints, as for :meth:`predict`: the marginals of the CRF
            restricted to the labellings that satisfy them.  A sample that no
            labelling satisfies raises a ``ValueError`` naming it.

        Returns
        -------
        list of arrays (n_nodes_i, n_classes), columns in the order of
        ``classes_``.  For :class:`~skstruct.models.MultiLabelModel` an array
        ``(n_labels, 2)`` per sample (off, on); for
        :class:`~skstruct.models.MulticlassModel` ``(1, n_classes)``.
        """
        if _is_bag(X):
            return bag_operation("map_predict")(self, X, "predict_marginals", clamp=clamp,
                                                forbidden=forbidden)
        if clamp is not None or forbidden is not None:
            _refuse_latent_constraints(self)
            return self._constrained_marginals(X, clamp, forbidden)
        with n_threads(self.n_jobs):
            sc = self._scores(X)
            node = self._node_marginals(sc)
        design = sc.design
        if getattr(self.model_, "latent", False):
            return self.model_.label_marginals(node, design)
        # by the design's offsets: tabular models' ``packed`` is the bare array X
        return np.split(node, design.batch.node_offsets[1:-1])

    def _constrained_node_marginals(self, X, design, u, t, i, node):
        """The node marginals under constraints, from the constrained potentials and
        their marginals ``node``."""
        return node

    def _constrained_marginals(self, X, clamp, forbidden):
        """:meth:`predict_marginals` under constraints: those of the CRF's potentials
        with ``-inf`` entries at the excluded states and transitions."""
        from ._decoding import constrained_marginals, constrained_potentials
        from .solvers._crf import CRFObjective

        check_is_fitted(self, "coef_")
        design, _ = self._design(X)
        design.y = np.zeros(design.batch.n_nodes, np.int64)
        with n_threads(self.n_jobs):
            u, t, i = CRFObjective(design, self.C).potentials(self._W, self._P)
            u, t = constrained_potentials(design, u, t, np.asarray(self.classes_), clamp,
                                          forbidden)
            # refuses a sample no labelling satisfies (exact: chains and trees)
            node = constrained_marginals(design, u, t, i)
            node = self._constrained_node_marginals(X, design, u, t, i, node)
        # a clamped node's row exactly one-hot (normalising leaves it an ulp off 1)
        excluded = np.isneginf(u)
        rows = np.flatnonzero(excluded.any(axis=1))
        if rows.size:
            node[excluded] = 0.0
            node[rows] /= node[rows].sum(axis=1, keepdims=True)
        return np.split(node, design.batch.node_offsets[1:-1])

    def __sklearn_tags__(self):
        tags = super().__sklearn_tags__()
        tags.non_deterministic = False
        return tags
