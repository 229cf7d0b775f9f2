"""Hazan & Urtasun's approximated structured prediction (primal-dual message passing)."""

import numbers
import time

import numpy as np
from sklearn.base import BaseEstimator
from sklearn.utils.validation import check_is_fitted

from ._base import StructuredEstimatorMixin, check_number, loss_weights, resolve_model
from .inference._api import _n_chunks, n_threads

_COUNTING = ("bethe", "convex", "trw")


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
    every sample (messages kept between iterations), then one gradient step on
    ``theta`` (Lemma 2) with an Armijo backtracking line search on the
    objective at the current messages.

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
        Weight of the data term.
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
        node with an edge.
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
        than ``tol`` times its magnitude (or not at all).
    direction : {"lbfgs", "gradient"}, default="lbfgs"
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
    history_ : dict of arrays
        ``"objective"`` (the objective above, per iteration, after its
        parameter step) and ``"seconds"`` (cumulative training time).
    """

    def __init__(self, epsilon=1.0, p=2.0, C=1.0, counting_numbers="bethe", loss="hamming",
                 class_weight=None, model="auto", max_iter=100, message_passes=1, tol=1e-6,
                 direction="lbfgs", step_size=None, warm_start=False, n_jobs=None,
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
        self.direction = direction
        self.step_size = step_size
        self.warm_start = warm_start
        self.n_jobs = n_jobs
        self.random_state = random_state
        self.verbose = verbose

    # ------------------------------------------------------------------ checks
    def _check_params(self):
        check_number(self, "epsilon", 0, False)
        check_number(self, "p", 1)
        check_number(self, "C")
        check_number(self, "max_iter", integer=True)
        check_number(self, "message_passes", integer=True)
        check_number(self, "tol", 0, False)
        if self.step_size is not None:
            check_number(self, "step_size")
        if self.direction not in ("lbfgs", "gradient"):
            raise ValueError(f"direction must be 'lbfgs' or 'gradient', got {self.direction!r}")
        if self.loss not in ("hamming", None):
            raise ValueError(f"loss must be 'hamming' or None, got {self.loss!r}")
        cn = self.counting_numbers
        if isinstance(cn, str):
            if cn not in _COUNTING:
                raise ValueError(f"counting_numbers must be one of {_COUNTING} or a pair "
                                 f"(c_node, c_edge), got {cn!r}")
        elif not callable(cn) and not (isinstance(cn, tuple) and len(cn) == 2 and all(
                isinstance(c, numbers.Real) and np.isfinite(c) for c in cn)):
            raise ValueError(f"counting_numbers must be one of {_COUNTING}, a pair of "
                             f"numbers (c_node, c_edge) or a callable, got {cn!r}")

    # -------------------------------------------------------------- structure
    def _counting(self, design):
        """Counting numbers ``(c_node (N,), c_edge (E,))`` of a design."""
        b = design.batch
        N, E = b.n_nodes, b.n_edges
        edges = b.edges
        deg = np.bincount(edges.ravel(), minlength=N).astype(np.float64)
        cn = self.counting_numbers
        if cn == "bethe":
            c_node, c_edge = 1.0 - deg, np.ones(E)
        elif cn == "convex":
            c_node, c_edge = np.ones(N), np.ones(E)
        elif cn == "trw":
            from scipy.sparse import coo_matrix
            from scipy.sparse.csgraph import connected_components

            g = coo_matrix((np.ones(E), (edges[:, 0], edges[:, 1])), shape=(N, N))
            _, comp = connected_components(g, directed=False)
            n_comp = np.bincount(comp).astype(np.float64)
            m_comp = np.bincount(comp[edges[:, 0]], minlength=n_comp.shape[0])
            rho = (n_comp[comp[edges[:, 0]]] - 1.0) / np.maximum(m_comp[comp[edges[:, 0]]], 1)
            c_edge = rho
            c_node = 1.0 - np.bincount(edges.ravel(), weights=np.repeat(rho, 2), minlength=N)
        elif callable(cn):
            c_node, c_edge = np.empty(N), np.empty(E)
            no, eo = b.node_offsets, b.edge_offsets
            for s in range(b.n_samples):
                local = edges[eo[s]:eo[s + 1]] - no[s]
                cv, ce = cn(int(no[s + 1] - no[s]), local)
                cv = np.asarray(cv, dtype=np.float64)
                ce = np.asarray(ce, dtype=np.float64)
                if cv.shape != (no[s + 1] - no[s],) or ce.shape != (eo[s + 1] - eo[s],) \
                        or not (np.all(np.isfinite(cv)) and np.all(np.isfinite(ce))):
                    raise ValueError(f"counting_numbers: for sample {s} the callable must "
                                     f"return finite arrays of shapes ({no[s + 1] - no[s]},) "
                                     f"and ({eo[s + 1] - eo[s]},), got {cv.shape} and "
                                     f"{ce.shape}")
                c_node[no[s]:no[s + 1]] = cv
                c_edge[eo[s]:eo[s + 1]] = ce
        else:
            c_node, c_edge = np.full(N, float(cn[0])), np.full(E, float(cn[1]))
        chat = c_node + np.bincount(edges.ravel(), weights=np.repeat(c_edge, 2), minlength=N)
        bad = np.flatnonzero((deg > 0) & ~(chat > 0))
        if bad.size:
            v = int(bad[0])
            s = int(np.searchsorted(b.node_offsets, v, side="right") - 1)
            raise ValueError(f"counting_numbers {cn!r}: sample {s}, node {v - b.node_offsets[s]}"
                             f" has c_node + sum of its edges' c_edge = {chat[v]:.3g}; it must "
                             "be positive")
        return c_node, c_edge

    # --------------------------------------------------------------------- fit
    def fit(self, X, y):
        """Learn ``theta`` (and the messages of every training sample).

        Parameters
        ----------
        X, y : as for :meth:`skstruct.StructuredSVM.fit`.

        Returns
        -------
        self
        """
        self._check_params()
        model = resolve_model(self.model, X, y)
        design, _ = model.design(X, y)
        K = design.n_classes
        self.model_ = model
        self.classes_ = model.classes_
        D = design.args(design.y, self._context_lw(design), 1)
        c_node, c_edge = self._counting(design)
        b = design.batch
        F, Kp, EF = design.n_features_total, design.n_columns, design.n_edge_features
        shape = (b.n_samples, b.n_nodes, F, Kp, EF, K)
        warm = self.warm_start and getattr(self, "_state", {}).get("shape") == shape
        if warm:
            st = self._state
        else:
            st = dict(shape=shape, W=np.zeros((F, Kp)), P=np.zeros((EF, K, K)),
                      lam=np.zeros((2 * b.n_edges, K)), step=self.step_size, seconds=0.0,
                      n_iter=0, pairs=[], g_prev=None)
        ctx = _Context(self, design, D, c_node, c_edge)
        hist = {"objective": [], "seconds": []}
        # one call compiles (or loads) every kernel, outside the timed loop
        ctx.value_and_grad(st["W"], st["P"], st["lam"])
        seconds = st["seconds"]
        prev = None
        for _ in range(self.max_iter):
            t0 = time.perf_counter()
            with n_threads(self.n_jobs):
                ctx.sweep(st["W"], st["P"], st["lam"], self.message_passes)
                value, gW, gP = ctx.value_and_grad(st["W"], st["P"], st["lam"])
                new_value = self._step(ctx, st, value, gW, gP)
            seconds += time.perf_counter() - t0
            st["n_iter"] += 1
            hist["objective"].append(new_value)
            hist["seconds"].append(seconds)
            if self.verbose:
                print(f"iter {st['n_iter']:4d}  {seconds:8.3f} s  objective {new_value:.8g}",
                      flush=True)
            if prev is not None and prev - new_value <= self.tol * max(abs(new_value), 1.0):
                break
            prev = new_value
        st["seconds"] = seconds
        self._state = st
        self._W, self._P = st["W"].copy(), st["P"].copy()
        self.coef_ = np.concatenate([self._W.ravel(), self._P.ravel()])
        self.n_iter_ = st["n_iter"]
        self.history_ = {k: np.asarray(v, dtype=np.float64) for k, v in hist.items()}
        return self

    def _context_lw(self, design):
        """Hamming weight of every node's true class."""
        return loss_weights(self.class_weight, self.classes_, design.y)[design.y]

    def _direction(self, st, g):
        """Descent direction: ``-g``, or L-BFGS's two-loop estimate of
        ``-H^-1 g`` from the last ``memory`` steps (``-g`` if that is not a
        descent direction)."""
        pairs = st["pairs"]
        if self.direction == "gradient" or not pairs:
            return -g, False
        q = g.copy()
        alphas = []
        for s_, y_, rho in reversed(pairs):
            a = rho * (s_ @ q)
            alphas.append(a)
            q -= a * y_
        s_, y_, _ = pairs[-1]
        q *= (s_ @ y_) / (y_ @ y_)
        for (s_, y_, rho), a in zip(pairs, reversed(alphas)):
            q += (a - rho * (y_ @ q)) * s_
        d = -q
        if d @ g >= 0.0:
            pairs.clear()
            return -g, False
        return d, True

    def _step(self, ctx, st, value, gW, gP):
        """Armijo backtracking along the descent direction; returns the new value."""
        nW = gW.size
        g = np.concatenate([gW.ravel(), gP.ravel()])
        if "g_prev" in st and st["g_prev"] is not None:
            # the curvature pair of the last accepted step
            s_ = st["s_prev"]
            y_ = g - st["g_prev"]
            sy = s_ @ y_
            if sy > 1e-10 * np.sqrt((s_ @ s_) * (y_ @ y_)):
                st["pairs"].append((s_, y_, 1.0 / sy))
                del st["pairs"][:-10]
        st["g_prev"] = None
        d, quasi_newton = self._direction(st, g)
        slope = float(g @ d)
        if slope == 0.0:
            return value
        if quasi_newton:
            # L-BFGS's natural step is 1; where the messages still move a lot
            # between iterations it is often too long, so start from twice the
            # last accepted one
            eta = min(1.0, 2.0 * st.get("qn_step", 1.0))
        else:
            eta = st["step"] if st["step"] is not None else 1.0 / np.sqrt(-slope)
        dW = d[:nW].reshape(gW.shape)
        dP = d[nW:].reshape(gP.shape)
        first = True
        for _ in range(60):
            W = st["W"] + eta * dW
            P = st["P"] + eta * dP
            lam = st["lam"]
            if ctx.nonconvex:
                # with negative counting numbers F is not bounded below in the
                # messages, so F at stale messages is no upper bound and a step
                # could exploit them: judge the trial at messages swept for it
                lam = lam.copy()
                ctx.sweep(W, P, lam, self.message_passes)
            trial = ctx.value(W, P, lam)
            if trial <= value + 1e-4 * eta * slope:
                st["W"], st["P"], st["lam"] = W, P, lam
                if quasi_newton:
                    st["qn_step"] = eta
                else:
                    # grow the next trial only after a first-try success: each
                    # rejected trial costs a pass over the data
                    st["step"] = 1.5 * eta if first else eta
                st["g_prev"] = g
                st["s_prev"] = eta * d
                return trial
            first = False
            # the minimiser of the quadratic through value, slope and trial,
            # kept within [0.1, 0.5] of the step (halving when it is no help)
            denom = 2.0 * (trial - value - eta * slope)
            shrink = -slope * eta / denom if denom > 0.0 and np.isfinite(trial) else 0.5
            eta *= min(max(shrink, 0.1), 0.5)
        # no decrease along the direction: keep theta, forget the curvature
        st["pairs"].clear()
        if not quasi_newton:
            st["step"] = eta
        return value

    def _weights(self):
        return self._W, self._P

    def predict_marginals(self, X, n_sweeps=100):
        """Node beliefs of the learned model (no loss) after ``n_sweeps`` sweeps.

        Parameters
        ----------
        X : samples in the format of the fitted model.
        n_sweeps : int, default=100
            Message sweeps from zero messages (exact marginals on trees with
            Bethe counting numbers at ``epsilon = 1``).

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
        if self.epsilon == 0:
            raise ValueError("predict_marginals needs epsilon > 0")
        design, _ = self.model_.design(X)
        N = design.batch.n_nodes
        D = design.args(np.zeros(N, np.int64), np.zeros(N), 1)
        c_node, c_edge = self._counting(design)
        ctx = _Context(self, design, D, c_node, c_edge, loss=False)
        lam = np.zeros((2 * design.batch.n_edges, design.n_classes))
        with n_threads(self.n_jobs):
            ctx.sweep(self._W, self._P, lam, n_sweeps)
            nb = ctx.beliefs(self._W, self._P, lam)
        off = design.batch.node_offsets
        return [nb[off[s]:off[s + 1]] for s in range(design.batch.n_samples)]

    def __getstate__(self):
        state = self.__dict__.copy()
        state.pop("_state", None)
        return state


class _Context:
    """The arrays of one design and the estimator's settings, for the kernels."""

    def __init__(self, est, design, D, c_node, c_edge, loss=None):
        self.est, self.design, self.D = est, design, D
        self.c_node, self.c_edge = c_node, c_edge
        self.nonconvex = bool(np.any(c_node < 0) or np.any(c_edge < 0))
        # chains and trees get a symmetric sweep (exact in one for Bethe)
        self.forests = bool(np.all(design.kind <= 1))
        self.parity = 0
        self._cache = None
        self.eps = float(est.epsilon)
        self.loss = est.loss is not None if loss is None else loss
        b = design.batch
        self.adj = b.adjacency if b.n_edges else (np.zeros(b.n_nodes + 1, np.int64),
                                                  np.zeros(0, np.int64),
                                                  np.zeros(0, np.int64),
                                                  np.zeros(0, np.int64))
        self.max_degree = int(np.diff(self.adj[0]).max()) if b.n_nodes else 0
        self.chunks = b.chunks(_n_chunks())
        self.edge_index = np.arange(b.n_edges, dtype=np.int64)

    def _theta(self, W, P):
        """Node potentials (loss-augmented if asked), edge tables with their index
        per edge, and the score of the true labelling."""
        from .solvers._potentials import potentials

        # the sweep, the gradient and the next iteration's sweep all ask for the
        # potentials of the same (never mutated) weight arrays
        if self._cache is not None and self._cache[0] is W and self._cache[1] is P:
            return self._cache[2]
        D = self.D
        b = self.design.batch
        K = self.design.n_classes
        theta_v = np.empty((b.n_nodes, K))
        tied = bool(D[9])
        PE = np.zeros((1, K, K)) if tied else np.empty((b.n_edges, K, K))
        truth = np.zeros(self.chunks.shape[0] - 1)
        potentials(b.node_offsets, b.edge_offsets, b.edges, D[3], D[4], D[5], D[25], D[26],
                   np.ascontiguousarray(W), D[13], D[14], D[27], tied, D[10], D[6], D[7], D[8],
                   np.ascontiguousarray(P), D[11], D[12], self.loss, self.chunks, theta_v, PE,
                   truth)
        out = (theta_v, P if tied else PE, D[10] if tied else self.edge_index,
               float(truth.sum()))
        self._cache = (W, P, out)
        return out

    def sweep(self, W, P, lam, n):
        from .inference._primal_dual import pd_sweeps

        if lam.shape[0] == 0 or n == 0:
            return
        theta_v, tables, pwi, _ = self._theta(W, P)
        b = self.design.batch
        off, ae, _, side = self.adj
        if self.forests:
            direction = 0
        else:
            # loopy graphs: one direction per sweep, alternating across calls
            direction = 1 if self.parity == 0 else -1
            self.parity = (self.parity + n) % 2
        pd_sweeps(b.node_offsets, off, ae, side, theta_v, np.ascontiguousarray(tables), pwi,
                  self.c_node, self.c_edge, self.eps, lam, n, direction, self.max_degree,
                  self.chunks)

    def _terms(self, W, P, lam, beliefs):
        from .inference._primal_dual import pd_objective

        theta_v, tables, pwi, truth = self._theta(W, P)
        b = self.design.batch
        K = self.design.n_classes
        off, ae, _, side = self.adj
        terms = np.zeros(b.n_samples)
        nb = np.zeros((b.n_nodes if beliefs else 1, K))
        eb = np.zeros((b.n_edges if beliefs else 1, K, K))
        pd_objective(b.node_offsets, b.edge_offsets, b.edges, off, ae, side, theta_v,
                     np.ascontiguousarray(tables), pwi, self.c_node, self.c_edge, self.eps,
                     lam, self.chunks, terms, nb, eb, beliefs)
        return truth, terms, nb, eb

    def _reg(self, W, P):
        p = float(self.est.p)
        return (np.sum(np.abs(W) ** p) + np.sum(np.abs(P) ** p)) / p

    def value(self, W, P, lam):
        from .solvers._potentials import fused_value

        if self._cache is not None and self._cache[0] is W and self._cache[1] is P:
            truth, terms, _, _ = self._terms(W, P, lam, False)
        else:
            # new weights (a line-search trial): one fused pass, no big arrays
            D = self.D
            b = self.design.batch
            off, ae, _, side = self.adj
            terms = np.zeros(b.n_samples)
            parts = np.zeros(self.chunks.shape[0] - 1)
            fused_value(b.node_offsets, b.edge_offsets, b.edges, off, ae, side, D[3], D[4], D[5],
                        D[25], D[26], np.ascontiguousarray(W), D[13], D[14], bool(D[9]), D[10],
                        D[6], D[7], D[8], np.ascontiguousarray(P), D[11], D[12], self.loss,
                        self.c_node, self.c_edge, self.eps, lam, self.chunks, terms, parts)
            truth = float(parts.sum())
        return self._reg(W, P) + self.est.C * (float(terms.sum()) - truth)

    def beliefs(self, W, P, lam):
        return self._terms(W, P, lam, True)[2]

    def value_and_grad(self, W, P, lam):
        from .inference._primal_dual import pd_gradient

        theta_v, tables, pwi, truth = self._theta(W, P)
        D = self.D
        b = self.design.batch
        off, ae, _, side = self.adj
        n_chunks = self.chunks.shape[0] - 1
        terms = np.zeros(b.n_samples)
        gW_parts = np.zeros((n_chunks,) + W.shape)
        gP_parts = np.zeros((n_chunks,) + P.shape)
        pd_gradient(b.node_offsets, b.edge_offsets, b.edges, off, ae, side, theta_v,
                    np.ascontiguousarray(tables), pwi, self.c_node, self.c_edge, self.eps, lam,
                    D[11], D[3], D[4], D[5], D[25], D[26], D[13], D[14], bool(D[9]), D[6],
                    D[7], D[8], self.chunks, terms, gW_parts, gP_parts)
        C = self.est.C
        p = float(self.est.p)
        value = self._reg(W, P) + C * (float(terms.sum()) - truth)
        gW = C * gW_parts.sum(axis=0) + np.abs(W) ** (p - 1.0) * np.sign(W)
        gP = C * gP_parts.sum(axis=0) + np.abs(P) ** (p - 1.0) * np.sign(P)
        return value, gW, gP
