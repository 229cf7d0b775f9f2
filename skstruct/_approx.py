"""Hazan & Urtasun's approximated structured prediction (primal-dual message passing)."""

import numbers
from numbers import Integral, Real

import numpy as np
from sklearn.base import BaseEstimator
from sklearn.utils.validation import check_is_fitted

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
from ._core import n_threads
from ._core._params import Interval, InvalidParameterError, Options, validate_params
from .models import StructuredModel

_COUNTING = ("bethe", "convex", "trw")

# how far, in units of the message passing's largest temperature, a constraint's penalty
# lies below every labelling's score: exp(-60) is below double precision's rounding
_PENALTY_MARGIN = 60.0


def _penalised(batch, unary, tables, pw_index, temperature):
    """``unary`` and ``tables`` with their ``-inf`` entries (constraints) replaced by
    ``-M``: the message updates normalise messages by their mean, which ``-inf`` turns
    into NaN.  ``M = 2 S + temperature * (n log K + _PENALTY_MARGIN)``, with ``S`` the
    largest ``sum_v max |unary_v| + sum_e max |table_e|`` of a sample (over finite
    entries) and ``n`` its most nodes: every labelling that takes a penalised entry
    scores at least ``M - 2 S`` below every one that takes none, so together they weigh
    less than ``exp(-_PENALTY_MARGIN)`` of the others at that temperature.  Where the
    beliefs are exact marginals (Bethe counting numbers at ``epsilon = 1`` on forests)
    they are then those of the model restricted to the labellings that satisfy the
    constraints, up to rounding; elsewhere they are the penalised model's, which no
    longer move as the margin grows (the restricted model is their limit)."""
    no, eo = batch.node_offsets, batch.edge_offsets
    K = unary.shape[1]
    node_max = np.max(np.where(np.isfinite(unary), np.abs(unary), 0.0), axis=1,
                      initial=0.0)
    per_sample = np.diff(np.concatenate([[0.0], np.cumsum(node_max)])[no])
    if batch.n_edges:
        table_max = np.max(np.where(np.isfinite(tables), np.abs(tables), 0.0), axis=(1, 2),
                           initial=0.0)
        edge_max = table_max[pw_index]
        per_sample = per_sample + np.diff(np.concatenate([[0.0], np.cumsum(edge_max)])[eo])
    S = float(np.max(per_sample, initial=0.0))
    n = int(np.max(batch.lengths, initial=1))
    M = 2.0 * S + temperature * (n * np.log(max(K, 2)) + _PENALTY_MARGIN)
    if not np.isfinite(M) or M > 1e300:
        raise ValueError("the potentials are too large to apply constraints to the beliefs "
                         f"(a penalty of {M:.3g} would be needed)")
    return (np.where(np.isneginf(unary), -M, unary),
            np.where(np.isneginf(tables), -M, tables))


class ApproxStructuredPredictor(StructuredEstimatorMixin, BaseEstimator):
    """Structured prediction from CRF to structured SVM by primal-dual message passing.

    Hazan & Urtasun (NIPS 2010).  Minimises, jointly over the parameters
    ``theta`` and per-sample messages ``lam``,

        (1/p) ||theta||_p^p + C * sum_i [F_i(lam_i, theta) - theta . phi(x_i, y_i)]

    where ``F_i`` is the approximated soft-max of Theorem 1 (see
    :mod:`skstruct.inference._primal_dual`): the log-partition under the
    counting numbers' entropy approximation at ``epsilon = 1`` (a CRF; exact
    on trees with Bethe counting numbers and ``loss=None``), tending to the
    loss-augmented maximum, the structured SVM's hinge, as ``epsilon -> 0``.
    This is the paper's program divided by its ``C``: the paper's ``C`` is
    ``1 / C`` here (sklearn's convention, as in
    :class:`~skstruct.StructuredSVM`: larger ``C``, less regularisation).

    Learning never runs inference to convergence: each iteration makes
    ``message_passes`` block-coordinate sweeps of Lemma 1 over every node of
    every sample (messages kept between iterations), then one step on ``theta``
    (Lemma 2) at the current messages: by default (``solver="lbfgs"``) an
    L-BFGS step, ``solver="gradient"`` a gradient step, each with a
    backtracking line search on the objective.

    Parameters
    ----------
    epsilon : float, default=1.0
        Temperature (>= 0).  ``1`` is a CRF, ``0`` the max (structured SVM)
        limit, computed with maxima rather than by dividing by zero; the
        objective is then non-smooth and the line search may stop early.
    p : float, default=2
        Exponent of the regulariser (> 1); its gradient is
        ``|theta|^(p-1) sign(theta)``.
    C : float, default=1.0
        Weight of the data term, between ``1e-100`` and ``1e100`` (beyond,
        the gradients overflow).
    counting_numbers : {"bethe", "convex", "trw"}, (float, float) or callable, \
            default="bethe"
        Entropy approximation.  ``"bethe"``: ``c_edge = 1``, ``c_node = 1 -
        degree`` (exact on trees; non-convex on loopy graphs).
        ``"convex"``: ``c_edge = c_node = 1`` (every counting number positive,
        so the objective is convex and never increases, Claim 2).  ``"trw"``:
        tree-reweighted, with the edge appearance probability of every edge of
        a connected component ``(n_nodes - 1) / n_edges`` (the uniform
        spanning-tree value for edge-transitive graphs such as grids and cycles;
        1 on trees, where it is Bethe) and ``c_node = 1 - sum`` of those of its
        edges.  A pair ``(c_node, c_edge)`` sets them to constants; a callable
        ``f(n_nodes, edges) -> (c_node (n_nodes,), c_edge (n_edges,))`` gives
        explicit per-node and per-edge values for each sample (``edges`` in the
        sample's own node numbering), for training and prediction alike.
        ``c_node + sum`` of the node's ``c_edge`` must be positive at every
        node (``c_node`` itself at a node without edges).
    loss : {"hamming"} or None, default="hamming"
        The loss added to the node potentials (loss-augmented soft-max, as in
        the paper); ``None`` gives the plain (approximate) likelihood.
    class_weight : dict, "balanced" or None, default=None
        Weights of the Hamming loss per true class.
    model : "auto" or a model from :mod:`skstruct.models`, default="auto"
        As in :class:`~skstruct.StructuredSVM`.
    max_iter : int, default=100
        Outer iterations (message sweeps plus one parameter step).
    message_passes : int, default=1
        Message sweeps over every sample per parameter step.
    tol : float, default=1e-6
        Stop when an iteration (sweeps and step) lowers the objective by less
        than ``tol`` times its magnitude (at least 1), or not at all; a fit
        that runs ``max_iter`` iterations without meeting it issues a
        :class:`~skstruct.exceptions.ConvergenceWarning`.
    solver : {"lbfgs", "gradient"}, default="lbfgs"
        The parameter step's direction: the negative gradient (the paper's
        Lemma 2 step), or the L-BFGS estimate from the last 10 steps'
        gradients (far fewer iterations on ill-conditioned problems such as
        CRFs; it falls back to the gradient whenever its estimate is not a
        descent direction).  Either way the step length comes from the Armijo
        backtracking line search, so every accepted step lowers the objective.
    step_size : float or None, default=None
        First trial step of the gradient direction's line search (``None``:
        one over the norm of the first gradient); each later search starts
        from the last accepted step, grown by half when it was accepted at the
        first trial.  L-BFGS searches start at twice the last accepted L-BFGS
        step, at most 1.
    warm_start : bool, default=False
        Continue from the previous fit's parameters and messages (same data).
    n_jobs : int or None, default=None
        Threads for the message sweeps and the objective (parallel over
        samples), and for ``predict``.
    random_state : None, int or RandomState, default=None
        Unused: the algorithm is deterministic.  Accepted for API symmetry.
    verbose : int, default=0
        Print one line per iteration.

    Attributes
    ----------
    coef_ : ndarray of shape (n_params,)
        ``theta``: the unary weights ``(n_features, n_columns)`` then the
        pairwise tables, flattened.
    classes_ : ndarray
        Labels, in the order of the classes of ``coef_``.
    model_ : the fitted joint feature map.
    n_iter_ : int
    fit_seconds_ : float
        Wall time of the last fit's iterations (compilation excluded).
    unary_coef_ : ndarray of shape (n_classes, n_features)
        ``theta``'s unary weights, one row per class.
    pairwise_coef_ : ndarray of shape (n_edge_features, n_classes, n_classes)
    n_features_in_ : int
        Node features of the training data.
    history_ : dict of arrays
        ``"objective"`` (the objective above, per iteration, after its
        parameter step) and ``"seconds"`` (cumulative training time); fitted
        on a dask Bag, also ``"bytes_sent"`` and ``"bytes_received"``, the
        payload per iteration (mean).

    Examples
    --------
    >>> from skstruct import ApproxStructuredPredictor
    >>> from skstruct.datasets import make_binary_denoising
    >>> train = make_binary_denoising(4, 24, noise=1.0, random_state=0)
    >>> est = ApproxStructuredPredictor(epsilon=0.1, counting_numbers="convex", C=0.5,
    ...                                 max_iter=20).fit(train.X, train.y)
    >>> est.pairwise_coef_.shape[1:]
    (2, 2)
    >>> bool(est.history_["objective"][-1] < est.history_["objective"][0])
    True
    """

    _parameter_constraints = shared_constraints(
        epsilon=[Interval(Real, 0)],
        p=[Interval(Real, 1, None, closed="neither")],
        C=SHARED,
        counting_numbers=[Options(*_COUNTING), tuple, callable],
        loss=[Options("hamming", None)],
        class_weight=[None, Options("balanced"), dict],
        model=[Options("auto"), StructuredModel],
        max_iter=SHARED,
        message_passes=[Interval(Integral, 1)],
        tol=SHARED,
        solver=[Options("lbfgs", "gradient")],
        step_size=[None, Interval(Real, 0, None, closed="neither")],
        warm_start=SHARED,
        n_jobs=SHARED,
        random_state=SHARED,
        verbose=SHARED,
    )

    # its fit never runs the learners' oracle: predictions take the decoders-only kernel
    _predict_kernel = "decode"

    def __init__(self, *, epsilon=1.0, p=2.0, C=1.0, counting_numbers="bethe", loss="hamming",
                 class_weight=None, model="auto", max_iter=100, message_passes=1, tol=1e-6,
                 solver="lbfgs", step_size=None, warm_start=False, n_jobs=None,
                 random_state=None, verbose=0):
        self.epsilon = epsilon
        self.p = p
        self.C = C
        self.counting_numbers = counting_numbers
        self.loss = loss
        self.class_weight = class_weight
        self.model = model
        self.max_iter = max_iter
        self.message_passes = message_passes
        self.tol = tol
        self.solver = solver
        self.step_size = step_size
        self.warm_start = warm_start
        self.n_jobs = n_jobs
        self.random_state = random_state
        self.verbose = verbose

    # ------------------------------------------------------------------ checks
    def _check_params(self):
        validate_params(self)
        cn = self.counting_numbers
        if isinstance(cn, tuple) and not (len(cn) == 2 and all(
                isinstance(c, numbers.Real) and np.isfinite(c) for c in cn)):
            raise InvalidParameterError(f"counting_numbers must be one of {_COUNTING}, a "
                                        f"pair of numbers (c_node, c_edge) or a callable, "
                                        f"got {cn!r}")

    # --------------------------------------------------------------------- fit
    def fit(self, X, y):
        """Learn ``theta`` (and the messages of every training sample).

        Parameters
        ----------
        X, y : as for :meth:`skstruct.StructuredSVM.fit`; or dask Bags of samples and
            label arrays, partitioned alike, to fit on a dask cluster (the messages live
            on the workers; see the user guide's "Training on a dask cluster").

        Returns
        -------
        self
        """
        from .solvers._primal_dual import PrimalDual, counting_numbers

        self._check_params()
        if _is_bag(X):
            return bag_operation("ApproxStructuredPredictor")(self, X, y)
        model, (design, _) = resolve_model(self.model, X, y, batched_only=True, design=True)
        self._check_model(model)
        self._check_labels(design)
        self.model_ = model
        self.classes_ = model.classes_
        c_node, c_edge = counting_numbers(design, self.counting_numbers)
        solver = PrimalDual(design, self._context_lw(design), c_node, c_edge,
                            **self._solver_params())
        old = getattr(self, "_solver", None)
        if self.warm_start and old is not None and old.key() == solver.key():
            solver.carry(old)
        # one call compiles (or loads) every kernel, outside the timed loop
        solver.value_and_grad(solver.W, solver.P, solver.lam)
        self._run(solver)
        self._solver = solver
        return self

    def _check_model(self, model):
        if getattr(model, "latent", False):
            raise ValueError("ApproxStructuredPredictor does not learn hidden states or hidden "
                             "nodes: use LatentStructuredSVM, or NonLocalCRF on chains and "
                             "trees")

    def _check_labels(self, design):
        if np.any(design.y < 0):
            v = int(np.flatnonzero(design.y < 0)[0])
            s = int(np.searchsorted(design.batch.node_offsets, v, side="right") - 1)
            raise ValueError(f"sample {s}: node {v - design.batch.node_offsets[s]} has an "
                             "unknown label (None); ApproxStructuredPredictor needs every "
                             "label: use NonLocalCRF (marginalises unknown labels), "
                             "StructuredSVM or LatentStructuredSVM")

    def _solver_params(self):
        """:class:`~skstruct.solvers._primal_dual.PrimalDual`'s settings."""
        return dict(epsilon=self.epsilon, p=self.p, C=self.C, loss=self.loss is not None,
                    direction=self.solver, step_size=self.step_size,
                    message_passes=self.message_passes)

    def _run(self, solver):
        """Iterate ``solver`` to ``tol`` or ``max_iter`` and store the fitted attributes
        (``model_`` and ``classes_`` already set)."""
        log = _FitLog(self, ("objective", "seconds"), unit="iteration")
        prev = decrease = None
        converged = False
        restarts, start = solver.restarts, solver.n_iter
        for _ in range(self.max_iter):
            log.start()
            with n_threads(self.n_jobs):
                new_value = solver.iterate()
            solver.seconds += log.stop()
            solver.n_iter += 1
            log.record(new_value, solver.seconds)
            log.say(solver.n_iter, solver.seconds, objective=float(new_value))
            if solver.restarts != restarts:
                # part of the messages started anew: the objective jumped, which says
                # nothing about convergence
                restarts, prev, decrease = solver.restarts, None, None
                continue
            if prev is not None:
                decrease = (prev - new_value) / max(abs(new_value), 1.0)
                if decrease <= self.tol:
                    converged = True
                    break
            prev = new_value
        log.finish(converged=converged, n_iter=solver.n_iter - start, tol=self.tol,
                   criterion="the relative decrease of the objective in the last iteration",
                   value=decrease,
                   advice="Raise max_iter (or message_passes), or tol.")
        self._W, self._P = solver.weights()
        self.coef_ = np.concatenate([self._W.ravel(), self._P.ravel()])
        self.n_iter_ = solver.n_iter
        _set_n_features_in(self, self.model_)
        self.history_ = log.history()
        return self

    def _context_lw(self, design):
        """Hamming weight of every node's true class."""
        return loss_weights(self.class_weight, self.classes_, design.y)[design.y]

    def _weights(self):
        return self._W, self._P

    def predict_marginals(self, X, *, n_sweeps=100, clamp=None, forbidden=None):
        """Node beliefs of the learned model (no loss) after ``n_sweeps`` sweeps.

        Parameters
        ----------
        X : samples in the format of the fitted model.
        n_sweeps : int, default=100
            Message sweeps from zero messages (exact marginals on trees with
            Bethe counting numbers at ``epsilon = 1``).

            Changed: keyword-only (it was the second positional parameter).
        clamp, forbidden : optional
            Constraints, as for :meth:`predict`.  The beliefs are those of the
            same message passing on the model restricted to the labellings
            that satisfy them: every label a constraint excludes gets a
            penalty larger than any score difference of the sample by a margin
            that makes its weight vanish in double precision at every
            temperature of the message passing (the message updates do not
            take ``-inf``), and the labels excluded at a clamped node then
            get belief exactly 0.  At ``epsilon = 1`` with Bethe counting
            numbers on chains and trees these are the exact marginals of the
            distribution restricted to the labellings that satisfy the
            constraints.  A sample that no labelling satisfies raises a
            ``ValueError`` naming it (decided as :meth:`predict` decides it).

        Returns
        -------
        list of arrays (n_nodes_i, n_classes)
            Beliefs per sample, columns in the order of ``classes_``.

        Raises
        ------
        ValueError
            At ``epsilon == 0`` (the beliefs are then maximisers, not
            marginals).
        """
        check_is_fitted(self, "coef_")
        # the sweep kernel is compiled for an integer count: anything else would fail
        # inside numba, or loop a negative / fractional number of times silently
        if (not isinstance(n_sweeps, Integral) or isinstance(n_sweeps, bool)
                or n_sweeps < 1):
            raise ValueError(f"n_sweeps must be a positive integer, got {n_sweeps!r}")
        if self.epsilon == 0:
            raise ValueError("predict_marginals needs epsilon > 0")
        from .solvers._primal_dual import PrimalDual, counting_numbers

        design, _ = self.model_.design(X)
        N = design.batch.n_nodes
        design.y = np.full(N, -1, np.int64)
        c_node, c_edge = counting_numbers(design, self.counting_numbers)
        pd = PrimalDual(design, np.zeros(N), c_node, c_edge, epsilon=self.epsilon, loss=False)
        excluded = None
        with n_threads(self.n_jobs):
            if clamp is not None or forbidden is not None:
                excluded = self._constrain(pd, clamp, forbidden)
            pd.sweep(self._W, self._P, pd.lam, n_sweeps)
            nb = pd.beliefs(self._W, self._P, pd.lam)
        if excluded is not None and excluded.any():
            # the penalised labels' beliefs are below rounding already; a clamped node's
            # row is then exactly one-hot
            rows = np.flatnonzero(excluded.any(axis=1))
            nb[excluded] = 0.0
            nb[rows] /= nb[rows].sum(axis=1, keepdims=True)
        off = design.batch.node_offsets
        return [nb[off[s]:off[s + 1]] for s in range(design.batch.n_samples)]

    def _constrain(self, pd, clamp, forbidden):
        """Put the constraints into the potentials ``pd`` sweeps with (finite penalties,
        see :func:`_penalised`), after refusing a sample no labelling satisfies; returns
        the (N, K) mask of the labels excluded at their node (the clamps)."""
        from ._decoding import constrained_map, constrained_potentials

        theta_v, tables, pwi, truth = pd._theta(self._W, self._P)
        design = pd.design
        u, t = constrained_potentials(design, theta_v, tables, np.asarray(self.classes_),
                                      clamp, forbidden)
        constrained_map(design, u, t, pwi)
        temperature = pd.eps * max(1.0, np.max(np.abs(pd.c_node), initial=0.0),
                                   np.max(np.abs(pd.c_edge), initial=0.0),
                                   np.max(pd.c_node + np.bincount(
                                       design.batch.edges.ravel(),
                                       weights=np.repeat(pd.c_edge, 2),
                                       minlength=design.batch.n_nodes), initial=0.0))
        excluded = np.isneginf(u)
        u, t = _penalised(design.batch, u, t, pwi, temperature)
        # the sweeps and the beliefs read the potentials of these weights from this cache
        pd._cache = (self._W, self._P, (u, t, pwi, truth))
        return excluded

    def __getstate__(self):
        state = super().__getstate__()
        state.pop("_solver", None)
        return state
