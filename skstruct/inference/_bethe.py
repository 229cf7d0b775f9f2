"""Bethe projections: marginal inference with a non-local energy on the marginals.

Vilnis, Belanger, Sheldon & McCallum (UAI 2015) solve

    mu* = argmin_{mu in M}  -<theta, mu> - H_B(mu) + L(mu)          (eq. 2)

over the marginal polytope of a chain or tree CRF by non-Euclidean proximal
gradient with the Bethe entropy as distance: every step is one call of the
CRF's own marginal oracle at modified potentials, so every iterate is a
feasible marginal vector (an anytime algorithm).  Each iteration here is one
batched oracle call over all samples (:func:`marginals_batch`) plus the
energy's vectorised gradient.

* ``"rda"``: Bethe-RDA, Algorithm 1: ``theta_t = theta - t / (t + beta) *
  mean(grad L(mu_0..mu_{t-1}))``.
* ``"md"``: Bethe-MD, Algorithm 4 (composite mirror descent).  In natural
  parameters its step is ``theta_t = (theta_{t-1} + eta (theta - grad
  L(mu_{t-1}))) / (1 + eta)``: the paper's ``grad H_B(mu_{t-1})`` *is*
  ``theta_{t-1}`` up to the constraints' null space, by conjugate duality.
* ``"accelerated"``: accelerated Bethe-RDA, Algorithm 5, for energies with an
  ``lipschitz``-Lipschitz gradient; its iterates ``mu_t`` are convex
  combinations of oracle outputs (still feasible).

The energy's node gradient shifts the node potentials; an energy that reads
edge marginals also gets one modified table per edge.

An energy that is a minimum of convex pieces (``NearestStatistic``: the
distance to the nearest dictionary entry) can be minimised globally with
``n_pieces``: one convex projection per (sample, candidate piece), all in the
same batched run, and each sample keeps its best.
"""

from dataclasses import dataclass, field
from numbers import Integral, Real

import numpy as np

from .._core import GraphBatch, check_psi, n_threads, segment_sum
from ._api import _check_batch, marginals_batch

METHODS = ("rda", "md", "accelerated")


@dataclass
class BetheProjection:
    """Result of :func:`bethe_project`.

    Attributes
    ----------
    node_marginals : ndarray (N, K)
    edge_marginals : ndarray (E, K, K) or None
        Computed when the energy reads them, or when asked for.
    unary, pairwise, pw_index : the potentials ``theta_tilde`` of Proposition 1,
        the CRF whose marginals are ``mu*`` at convergence: MAP in it is the
        paper's prediction.  ``pairwise`` is per edge (pw_index ``arange(E)``)
        when the energy reads edge marginals, else the input tables.
    n_iter : int
        Oracle calls made (the prox-centre call included); with ``n_pieces``,
        batched calls over all pieces.
    converged : bool
        Whether the largest change of a node marginal in the last iteration was
        at most ``tol``.
    energy : the energy projected on: the input energy, or with ``n_pieces``
        the convex piece chosen for each sample.
    objective : ndarray (n_samples,) or None
        The objective of every sample at the result (Bethe-RDA and -MD; None
        for the accelerated method, whose iterate is an average).  With
        ``n_pieces``, that of the chosen piece: an upper bound on the energy's
        objective at ``mu*``, equal where the piece is the nearest entry.
    history : dict of arrays
        ``"objective"`` (the objective summed over samples, per iteration; only
        with ``return_history=True``) and ``"change"`` (the largest change of a
        node marginal per iteration).
    """

    node_marginals: np.ndarray
    edge_marginals: np.ndarray
    unary: np.ndarray
    pairwise: np.ndarray
    pw_index: np.ndarray
    n_iter: int
    converged: bool
    energy: object = None
    objective: np.ndarray = None
    history: dict = field(default_factory=dict)


def _xlogx(p):
    with np.errstate(divide="ignore", invalid="ignore"):
        return np.where(p > 0, p * np.log(np.where(p > 0, p, 1.0)), 0.0)


def bethe_entropy(batch, node, edge):
    """Bethe entropy of every sample, ``sum_e H(mu_e) - sum_v (deg_v - 1) H(mu_v)``
    (the exact entropy on trees), shape (n_samples,)."""
    deg = np.bincount(batch.edges.ravel(), minlength=batch.n_nodes).astype(np.float64)
    hv = -_xlogx(node).sum(axis=1)
    out = -segment_sum((deg - 1.0) * hv, batch.node_offsets)
    if batch.n_edges:
        he = -_xlogx(edge).sum(axis=(1, 2))
        out += segment_sum(he, batch.edge_offsets)
    return out


def _linear(batch, unary, tables, pw_index, node, edge):
    """``<theta, mu>`` per sample, ignoring entries with zero marginal (where a
    ``-inf`` potential meets a zero marginal)."""
    with np.errstate(invalid="ignore"):
        tn = np.where(node > 0, unary * node, 0.0).sum(axis=1)
        out = segment_sum(tn, batch.node_offsets)
        if batch.n_edges:
            T = tables[pw_index]
            te = np.where(edge > 0, T * edge, 0.0).sum(axis=(1, 2))
            out += segment_sum(te, batch.edge_offsets)
    return out


def bethe_project(unary, pairwise, energy, *, batch=None, pw_index=None, psi=1.0,
                  method="rda", max_iter=50, tol=1e-6, step_size=1.0, lipschitz=None,
                  beta=0.0, n_pieces=None, edge_marginals=False, return_history=False,
                  n_jobs=None):
    """Marginal inference in a chain or tree CRF plus a non-local energy (eq. 2).

    Minimises ``-<theta, mu> - H_B(mu) + L_psi(mu)`` over the marginal polytope
    of each sample of a batch, by one of the paper's three proximal
    algorithms.  All scores are log-potentials to be *maximised* (as everywhere
    in :mod:`skstruct.inference`).  Non-convex energies
    (:class:`~skstruct.energies.NearestStatistic`) get the same updates, which
    then find a stationary point, not necessarily the global minimum -- unless
    ``n_pieces`` is given: an energy that is a minimum of convex pieces is then
    minimised piece by piece (below).

    Parameters
    ----------
    unary : array (N, K)
        Node log-potentials ``theta`` of all samples of ``batch``.
    pairwise : array (K, K), (M, K, K) with ``pw_index``, or (E, K, K)
        Edge log-potentials.
    energy : a fitted energy from :mod:`skstruct.energies`
        (or any object with its ``grad``/``value``/``uses_edges``/
        ``lipschitz`` interface).
    batch : GraphBatch, default=None
        The samples' structure (chains or trees); ``None`` means a single chain
        of ``N`` nodes.
    pw_index : array (E,), default=None
        Table of each edge (as in :func:`map_batch`).
    psi : float, array (n_terms,) or (n_samples, n_terms), default=1.0
        The energy's weights.
    method : {"rda", "md", "accelerated"}, default="rda"
    max_iter : int, default=50
        Maximum number of marginal-oracle calls, the prox-centre included.
    tol : float, default=1e-6
        Stop when no node marginal changed by more than ``tol``.
    step_size : float, default=1.0
        ``eta`` of Bethe-MD (> 0); large steps approach the plain fixed-point
        iteration ``theta_t = theta - grad L(mu_{t-1})``.  Safeguarded: a
        sample whose objective would increase keeps its iterate and retries
        with a quarter of its step (which then doubles back, up to
        ``step_size``, on each accepted step), so Bethe-MD never increases
        the objective even where ``grad L`` is not Lipschitz (Poisson counts
        near zero).
    lipschitz : float, default=None
        Lipschitz constant of ``grad L`` for the accelerated method; ``None``
        asks the energy (an error if it is not smooth, e.g. Poisson counts).
    beta : float, default=0.0
        ``beta_t`` of Bethe-RDA (>= 0); 0 is the paper's choice.
    n_pieces : int, "all" or None, default=None
        Global minimisation for energies that are a minimum of convex pieces
        (those with ``pieces`` and ``piece`` methods, pieces on the node
        marginals: ``NearestStatistic``, ``min_i ||u_i - T(mu)||_1``).  Their
        objective's minimum is the smallest of the minima of the convex
        objectives with one piece each, so every sample is
        projected once per piece (each a convex problem, solved by ``method``
        in one batched run over all samples and pieces) and keeps the
        projection of smallest objective.  An int keeps, per sample, the
        ``n_pieces`` pieces nearest to the prox centre (the CRF's own
        marginals); ``"all"`` keeps every piece and finds the global minimum.
        Costs ``n_pieces`` times the memory and oracle work.  ``None``: the
        paper's algorithm on the energy itself.
    edge_marginals : bool, default=False
        Also return the edge marginals (always computed if the energy reads
        them).
    return_history : bool, default=False
        Record the objective at every iterate (costs edge marginals and an
        entropy per iteration).
    n_jobs : int, default=None
        Threads of the marginal oracle.

    Returns
    -------
    BetheProjection
    """
    if method not in METHODS:
        raise ValueError(f"method must be one of {METHODS}, got {method!r}")
    if isinstance(max_iter, bool) or not isinstance(max_iter, Integral) or max_iter < 1:
        raise ValueError(f"max_iter must be a positive integer, got {max_iter!r}")
    for name, v, low in (("tol", tol, 0.0), ("beta", beta, 0.0)):
        if isinstance(v, bool) or not isinstance(v, Real) or not v >= low:
            raise ValueError(f"{name} must be a number >= {low}, got {v!r}")
    if isinstance(step_size, bool) or not isinstance(step_size, Real) or not step_size > 0:
        raise ValueError(f"step_size must be a number > 0, got {step_size!r}")
    unary = np.asarray(unary, dtype=np.float64)
    if batch is None:
        if unary.ndim != 2:
            raise ValueError(f"unary must be 2-D (n_nodes, n_states), got shape {unary.shape}")
        batch = GraphBatch.from_chains([unary.shape[0]])
    pairwise = np.asarray(pairwise, dtype=np.float64)
    if pairwise.ndim == 2:
        pairwise = pairwise[None]
        if pw_index is None:
            pw_index = np.zeros(batch.n_edges, np.int64)
    elif pw_index is None and pairwise.shape[0] == batch.n_edges:
        pw_index = np.arange(batch.n_edges, dtype=np.int64)
    unary, pairwise, pw_index = _check_batch(batch, unary, pairwise, pw_index)
    _check_energy(energy, unary.shape[1])
    bad = np.flatnonzero(~batch.is_forest)
    if bad.size:
        raise ValueError(f"sample {bad[0]} has a cycle: Bethe projections need chains or "
                         "trees (an exact marginal oracle)")
    if method == "accelerated":
        L = energy.lipschitz(psi, batch) if lipschitz is None else lipschitz
        if isinstance(L, bool) or not isinstance(L, Real) or not np.isfinite(L) or L < 0:
            raise ValueError(f"method='accelerated' needs a finite Lipschitz constant >= 0 of "
                             f"the energy's gradient; got {L!r} (pass lipschitz=...)")
        L = float(L)
    else:
        L = None
    if n_pieces is not None:
        if not hasattr(energy, "pieces"):
            raise ValueError(f"n_pieces needs an energy that is a minimum of convex pieces "
                             f"(with a pieces method, e.g. NearestStatistic); "
                             f"{type(energy).__name__} is not")
        if n_pieces != "all" and (isinstance(n_pieces, bool) or not isinstance(
                n_pieces, Integral) or n_pieces < 1):
            raise ValueError(f"n_pieces must be a positive integer, 'all' or None, got "
                             f"{n_pieces!r}")
        if return_history:
            raise ValueError("return_history is not available with n_pieces (the pieces' "
                             "objectives are not the energy's); see BetheProjection.objective")
        if method == "accelerated":
            raise ValueError("n_pieces is for method='rda' or 'md': the pieces of a minimum of "
                             "distances are not smooth")
        with n_threads(n_jobs):
            return _project_pieces(batch, unary, pairwise, pw_index, energy, psi,
                                   None if n_pieces == "all" else int(n_pieces), method,
                                   max_iter, tol, step_size, beta, edge_marginals, n_jobs)
    # the projection alternates the compiled oracle with the energy's numpy products:
    # n_threads keeps BLAS on one thread, whose idle threads would take the oracle's cores
    with n_threads(n_jobs):
        return _project(batch, unary, pairwise, pw_index, energy, psi, method, max_iter, tol,
                        step_size, L, beta, edge_marginals, return_history, n_jobs)


class _Problem:
    """One batched projection problem: the CRF oracle, the energy's gradient and
    the objective ``F = -<theta, mu> - H_B(mu) + L(mu)`` per sample."""

    def __init__(self, batch, unary, pairwise, pw_index, energy, psi, want_edges, n_jobs):
        self.batch, self.unary, self.pairwise, self.pw_index = batch, unary, pairwise, pw_index
        self.energy, self.psi, self.n_jobs = energy, psi, n_jobs
        self.uses_edges = bool(energy.uses_edges)
        self.want_edges = want_edges
        self.base_e = pairwise[pw_index] if self.uses_edges else None

    def oracle(self, theta_v, theta_e):
        """Node and edge marginals and log-partition of the CRF ``theta``."""
        if theta_e is None:
            tables, idx = self.pairwise, self.pw_index
        else:
            tables = _saturate(theta_e, self.batch.n_edges)
            idx = np.arange(self.batch.n_edges, dtype=np.int64)
        return marginals_batch(self.batch, _saturate(theta_v, self.batch.n_nodes), tables, idx,
                               edge_marginals="full" if self.want_edges else None,
                               n_jobs=self.n_jobs)

    def egrad(self, node, edge):
        return self.energy.grad(node, edge if self.uses_edges else None, self.batch, self.psi)

    def exact_terms(self, node, edge, logz, theta_v, theta_e):
        """Per-sample ``F`` at exact marginals of ``theta``, from the potentials'
        difference only (no edge marginals needed unless the energy moves edges)."""
        b = self.batch
        with np.errstate(invalid="ignore"):
            d = np.where(node > 0, (theta_v - self.unary) * node, 0.0).sum(axis=1)
            f = segment_sum(d, b.node_offsets) - logz
            if theta_e is not None and b.n_edges:
                de = np.where(edge > 0, (theta_e - self.base_e) * edge, 0.0).sum(axis=(1, 2))
                f += segment_sum(de, b.edge_offsets)
        f += self.energy.value(node, edge if self.uses_edges else None, b, self.psi)
        return np.where(np.isfinite(logz), f, 0.0)

    def objective(self, node, edge, logz, theta_v, theta_e, exact):
        """``F`` summed over the feasible samples (``exact``: ``mu`` are the
        marginals of ``theta``, so the shortcut of :meth:`exact_terms` holds)."""
        if exact:
            return float(self.exact_terms(node, edge, logz, theta_v, theta_e).sum())
        b = self.batch
        f = (-_linear(b, self.unary, self.pairwise, self.pw_index, node, edge)
             - bethe_entropy(b, node, edge)
             + self.energy.value(node, edge if self.uses_edges else None, b, self.psi))
        return float(np.sum(f[np.isfinite(logz)]))


class _RDA:
    """Bethe-RDA (Algorithm 1): ``theta_t = theta - (t + beta)^-1 sum_s grad L(mu_s)``."""

    exact = True

    def __init__(self, pb, node, edge, logz, *, beta, **_):
        self.pb, self.beta = pb, beta
        self.theta_v = pb.unary.copy()
        self.theta_e = None if pb.base_e is None else pb.base_e.copy()
        self.gsum_n = np.zeros_like(pb.unary)
        self.gsum_e = None if pb.base_e is None else np.zeros_like(pb.base_e)
        self.node, self.edge = node, edge

    def step(self, t):
        pb = self.pb
        gn, ge = pb.egrad(self.node, self.edge)
        self.gsum_n += gn
        w = 1.0 / (t + self.beta)      # t / (t + beta) times the mean of t gradients
        self.theta_v = pb.unary - w * self.gsum_n
        if pb.base_e is not None:
            self.gsum_e += ge
            self.theta_e = pb.base_e - w * self.gsum_e
        self.node, self.edge, logz = pb.oracle(self.theta_v, self.theta_e)
        return self.node, self.edge, logz, False


class _MirrorDescent:
    """Bethe-MD (Algorithm 4): ``theta_{t+1} = (theta_t + eta (theta - grad L(mu_t))) /
    (1 + eta)``, with a per-sample safeguard: a sample whose objective went up
    keeps its iterate and retries with a quarter of its step."""

    exact = True

    def __init__(self, pb, node, edge, logz, *, step_size, **_):
        self.pb = pb
        self.step_size = float(step_size)
        self.theta_v = pb.unary.copy()
        self.theta_e = None if pb.base_e is None else pb.base_e.copy()
        self.node, self.edge, self.logz = node, edge, logz
        self.eta = np.full(pb.batch.n_samples, self.step_size)
        self.f_cur = pb.exact_terms(node, edge, logz, self.theta_v, self.theta_e)

    def step(self, t):
        pb = self.pb
        b = pb.batch
        lengths = b.lengths
        n_edges = np.diff(b.edge_offsets)
        gn, ge = pb.egrad(self.node, self.edge)
        en_ = np.repeat(self.eta, lengths)[:, None]
        cand_v = (self.theta_v + en_ * (pb.unary - gn)) / (1.0 + en_)
        cand_e = None
        if pb.base_e is not None:
            ee_ = np.repeat(self.eta, n_edges)[:, None, None]
            cand_e = (self.theta_e + ee_ * (pb.base_e - ge)) / (1.0 + ee_)
        new_n, new_e, new_z = pb.oracle(cand_v, cand_e)
        f_new = pb.exact_terms(new_n, new_e, new_z, cand_v, cand_e)
        ok = ~(f_new > self.f_cur + 1e-12 * np.abs(self.f_cur)) & np.isfinite(f_new)
        okn = np.repeat(ok, lengths)
        new_n = np.where(okn[:, None], new_n, self.node)
        self.theta_v = np.where(okn[:, None], cand_v, self.theta_v)
        if new_e is not None:
            oke = np.repeat(ok, n_edges)[:, None, None]
            new_e = np.where(oke, new_e, self.edge)
            if cand_e is not None:
                self.theta_e = np.where(oke, cand_e, self.theta_e)
        new_z = np.where(ok, new_z, self.logz)
        self.f_cur = np.where(ok, f_new, self.f_cur)
        self.eta = np.where(ok, np.minimum(2.0 * self.eta, self.step_size), self.eta / 4.0)
        self.node, self.edge, self.logz = new_n, new_e, new_z
        return new_n, new_e, new_z, not ok.all()


class _Accelerated:
    """Accelerated Bethe-RDA (Algorithm 5), with the Lipschitz constant ``L``;
    its iterates ``mu`` are averages, not marginals of ``theta``."""

    exact = False

    def __init__(self, pb, node, edge, logz, *, L, **_):
        self.pb, self.L = pb, L
        self.theta_v = pb.unary.copy()
        self.theta_e = None if pb.base_e is None else pb.base_e.copy()
        self.mu_n, self.mu_e = node, edge
        self.nu_n, self.nu_e = node, edge
        self.gbar_n = np.zeros_like(pb.unary)
        self.gbar_e = None if pb.base_e is None else np.zeros_like(pb.base_e)

    def step(self, t):
        pb = self.pb
        c = 2.0 / (t + 1.0)
        u_n = (1 - c) * self.mu_n + c * self.nu_n
        u_e = None if self.mu_e is None else (1 - c) * self.mu_e + c * self.nu_e
        gn, ge = pb.egrad(u_n, u_e)
        self.gbar_n = (1 - c) * self.gbar_n + c * gn
        if self.gbar_e is not None:
            self.gbar_e = (1 - c) * self.gbar_e + c * ge
        scale = t * (t + 1.0) / (4.0 * self.L + t * (t + 1.0))
        self.theta_v = scale * (pb.unary - self.gbar_n)
        self.theta_e = None if pb.base_e is None else scale * (pb.base_e - self.gbar_e)
        self.nu_n, self.nu_e, logz = pb.oracle(self.theta_v, self.theta_e)
        self.mu_n = (1 - c) * self.mu_n + c * self.nu_n
        self.mu_e = None if self.mu_e is None else (1 - c) * self.mu_e + c * self.nu_e
        return self.mu_n, self.mu_e, logz, False


_ALGORITHMS = {"rda": _RDA, "md": _MirrorDescent, "accelerated": _Accelerated}


def _project(batch, unary, pairwise, pw_index, energy, psi, method, max_iter, tol, step_size,
             L, beta, edge_marginals, return_history, n_jobs):
    """:func:`bethe_project` on validated arguments: the loop shared by the
    three algorithms of :data:`_ALGORITHMS`."""
    want_edges = bool(energy.uses_edges) or edge_marginals or return_history
    pb = _Problem(batch, unary, pairwise, pw_index, energy, psi, want_edges, n_jobs)
    hist = {"objective": [], "change": []}
    node, edge, logz = pb.oracle(unary.copy(), None if pb.base_e is None else pb.base_e.copy())
    algo = _ALGORITHMS[method](pb, node, edge, logz, step_size=step_size, L=L, beta=beta)
    n_calls = 1
    if return_history:
        hist["objective"].append(pb.objective(node, edge, logz, algo.theta_v, algo.theta_e,
                                              True))
    converged = False
    t = 0
    with np.errstate(invalid="ignore"):
        while n_calls < max_iter:
            t += 1
            new_n, new_e, logz, rejected = algo.step(t)
            n_calls += 1
            change = float(np.max(np.abs(new_n - node))) if new_n.size else 0.0
            hist["change"].append(change)
            node, edge = new_n, new_e
            if return_history:
                hist["objective"].append(pb.objective(node, edge, logz, algo.theta_v,
                                                      algo.theta_e, algo.exact))
            if change <= tol and not rejected:
                converged = True
                break
    theta_v, theta_e = algo.theta_v, algo.theta_e
    if not algo.exact:
        # Proposition 1: the CRF whose marginals mu* are is theta - grad L(mu*)
        gn, ge = pb.egrad(node, edge)
        theta_v = unary - gn
        theta_e = None if pb.base_e is None else pb.base_e - ge
    if theta_e is None:
        tables, idx = pairwise, pw_index
    else:
        tables, idx = theta_e, np.arange(batch.n_edges, dtype=np.int64)
    history = {k: np.asarray(v, np.float64) for k, v in hist.items() if v or k == "change"}
    # rda and md end on an oracle output (node, logz) of theta_t: exact per-sample values
    f = pb.exact_terms(node, edge, logz, theta_v, theta_e) if algo.exact else None
    return BetheProjection(node, edge if (edge_marginals or pb.uses_edges) else None, theta_v,
                           tables, idx, n_calls, converged, energy, f, history)


# replica nodes per batched run of _project_pieces: bounds its memory (about ten (N, K)
# arrays of this many rows) whatever the number of samples
PIECE_NODES = 1 << 20


def _check_energy(energy, K):
    """An energy object fitted for ``K`` states (the layer below energies
    cannot import them, so the protocol is checked by its methods)."""
    if not all(hasattr(energy, m) for m in ("value", "grad", "n_terms", "uses_edges")):
        raise TypeError(f"energy must be a fitted energy from skstruct.energies, got "
                        f"{type(energy).__name__}")
    if hasattr(energy, "_check_fitted"):
        energy._check_fitted()
    fitted_k = getattr(energy, "n_classes_", K)
    if fitted_k != K:
        raise ValueError(f"energy was fitted for {fitted_k} classes but unary has {K} states")


def _saturate(theta, n):
    """``theta`` with finite entries clipped to ``+-0.4e300 / n`` (``-inf`` kept).

    An energy's gradient can blow up as a marginal nears 0 (a Poisson
    count's ``y / mu``); potentials that large are already certainties, and
    clipping them keeps every labelling's score summable without overflow.
    """
    cap = 0.4e300 / max(n, 1)
    # two reductions and no temporary in the usual case, every oracle call
    if theta.size == 0 or (theta.max() <= cap and theta.min() >= -cap):
        return theta
    out = np.minimum(theta, cap)
    out[(out < -cap) & np.isfinite(out)] = -cap
    return out


def _project_pieces(batch, unary, pairwise, pw_index, energy, psi, n_pieces, method, max_iter,
                    tol, step_size, beta, edge_marginals, n_jobs):
    """Global projection for an energy ``min_i l_i(mu)`` of convex pieces ``l_i``:
    ``min_mu min_i F_i(mu) = min_i min_mu F_i(mu)``, one convex projection per
    (sample, piece) in one batched run (per run of samples with at most
    ``PIECE_NODES`` replica nodes), then each sample's best."""
    S = batch.n_samples
    psi = check_psi(psi, S, energy.n_terms)
    centre = marginals_batch(batch, unary, pairwise, pw_index, edge_marginals=None,
                             n_jobs=n_jobs)[0]
    owner, entries = energy.pieces(centre, batch, n_pieces)
    node = np.empty_like(unary)
    theta_v = np.empty_like(unary)
    K = unary.shape[1]
    edge = np.empty((batch.n_edges, K, K)) if edge_marginals else None
    objective = np.empty(S)
    chosen = np.empty(S, np.int64)
    n_iter, converged, changes = 0, True, []
    # runs of whole samples (owner is ascending: a sample's replicas are contiguous)
    per_sample = np.bincount(owner, weights=batch.lengths[owner], minlength=S)
    cum = np.cumsum(per_sample)
    s0 = 0
    while s0 < S:
        s1 = max(s0 + 1, int(np.searchsorted(cum, cum[s0] - per_sample[s0] + PIECE_NODES,
                                             side="right")))
        r0, r1 = np.searchsorted(owner, [s0, s1])
        sel = np.arange(r0, r1)
        rep, nrows, erows = batch.take(owner[sel])
        piece = energy.piece(entries[sel], rep)
        res = _project(rep, unary[nrows], pairwise, pw_index[erows], piece, psi[owner[sel]],
                       method, max_iter, tol, step_size, None, beta, edge_marginals, False,
                       n_jobs)
        # each sample's piece of smallest objective
        own = owner[sel]
        order = np.lexsort((res.objective, own))
        first = np.ones(order.size, bool)
        first[1:] = own[order[1:]] != own[order[:-1]]
        best = order[first]
        samples = own[best]
        _, bn, be = rep.take(best)
        _, dn, de = batch.take(samples)
        node[dn] = res.node_marginals[bn]
        theta_v[dn] = res.unary[bn]
        if edge is not None:
            edge[de] = res.edge_marginals[be]
        objective[samples] = res.objective[best]
        chosen[samples] = entries[sel][best]
        n_iter = max(n_iter, res.n_iter)
        converged &= res.converged
        changes.append(res.history["change"])
        s0 = s1
    # the largest change over all runs, per iteration
    change = np.zeros(max((c.size for c in changes), default=0))
    for c in changes:
        change[:c.size] = np.maximum(change[:c.size], c)
    # pieces read node marginals only: the edge tables are the input ones
    return BetheProjection(node, edge, theta_v, pairwise, pw_index, n_iter + 1, converged,
                           energy.piece(chosen, batch), objective, {"change": change})
