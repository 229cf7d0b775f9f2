"""Approximate MAP in a chain collective graphical model (CGM), and a generic solver for it.

The problem of Vilnis et al. (UAI 2015), section 8.3 (after Sheldon et al., ICML 2013): on a
chain of ``T`` nodes with ``K`` states each, minimise over chain marginals ``mu = (m, x)``

    F(mu) = -<theta, mu> - H_B(mu) + L(m)

with

* ``<theta, mu> = sum_t <theta_node[t], m[t]> + sum_t <theta_edge[t], x[t]>``,
* ``H_B(mu) = sum_{t=0}^{T-2} H(x[t]) - sum_{t=1}^{T-2} H(m[t])``, ``H(p) = -sum p log p``
  (``0 log 0 = 0``), the Bethe entropy of a chain (its exact entropy),
* ``L(m) = sum_{t,k} [alpha m[t,k] - (Y[t,k] / M) log(alpha M m[t,k])]`` (terms with
  ``Y[t,k] = 0`` have no log): ``-1/M`` times the Poisson log-likelihood of the observed
  counts ``Y[t,k] ~ Poisson(alpha M m[t,k])`` without the constants ``log Y!``.

``mu`` ranges over the local (for a chain, the marginal) polytope: ``x >= 0``,
``sum x[0] = 1``, ``m[t] = x[t].sum(1)`` for ``t < T-1`` and ``m[t+1] = x[t].sum(0)``.

* :func:`make_cgm` draws a bird-migration-like instance,
* :func:`objective` evaluates ``F`` exactly,
* :func:`solve_scipy` solves it with ``scipy.optimize.minimize(method="trust-constr")``
  (an interior-point / barrier method, like the IP baseline of the paper),
* :func:`kkt_check` certifies a solution: at the optimum the exact chain marginals of
  ``theta - grad L(m)`` are ``mu`` itself, and their KL divergence is a duality gap.
"""

import contextlib
import time

import numpy as np
import scipy.sparse.linalg
from scipy import optimize, sparse
from scipy.sparse.linalg import LinearOperator
from scipy.special import logsumexp

# chain length used for all three sizes of Table 5 (the paper does not give it); with it
# solve_scipy reaches a certified relative accuracy of 1e-6 at K = 224 (s ~ 50,000) in about
# two minutes on a 2-core machine
DEFAULT_T = 10
# population per state and detection rate of make_cgm
POPULATION_PER_STATE = 10
DEFAULT_RATE = 0.5


# ------------------------------------------------------------------------- instances

def _grid_coords(K):
    """Cell coordinates (K, 2) of the most nearly square r x c grid with r * c = K.

    A prime ``K`` has no such grid (r = 1): its states are then a 1-D ring, and the
    coordinates are ``None``.
    """
    r = int(np.floor(np.sqrt(K)))
    while r > 1 and K % r:
        r -= 1
    if r == 1:
        return None
    c = K // r
    rows, cols = np.divmod(np.arange(K), c)
    return np.stack([rows, cols], axis=1).astype(float)


def _squared_distances(K):
    coords = _grid_coords(K)
    if coords is None:  # ring
        k = np.arange(K)
        d = np.abs(k[:, None] - k[None, :])
        return np.minimum(d, K - d).astype(float) ** 2
    diff = coords[:, None, :] - coords[None, :, :]
    return (diff ** 2).sum(-1)


def _chain_marginals(theta_node, theta_edge):
    """Exact node and edge marginals and log partition function of a chain (log space)."""
    T, K = theta_node.shape
    alpha = np.empty((T, K))  # forward log-messages including the node's own score
    beta = np.zeros((T, K))  # backward log-messages
    alpha[0] = theta_node[0]
    for t in range(T - 1):
        alpha[t + 1] = theta_node[t + 1] + logsumexp(alpha[t][:, None] + theta_edge[t], axis=0)
    for t in range(T - 2, -1, -1):
        beta[t] = logsumexp(theta_edge[t] + (theta_node[t + 1] + beta[t + 1])[None, :], axis=1)
    logz = float(logsumexp(alpha[-1]))
    m = np.exp(alpha + beta - logz)
    x = np.exp(alpha[:-1, :, None] + theta_edge + (theta_node[1:] + beta[1:])[:, None, :] - logz)
    return m, x, logz


def make_cgm(K, T=DEFAULT_T, population=None, rate=DEFAULT_RATE, sigma=1.5, edge_noise=0.1,
             node_scale=0.5, random_state=0):
    """A chain CGM shaped like bird migration.

    The ``K`` states are the cells of the most nearly square grid with ``K`` cells (5 x 5
    for 25, 10 x 10 for 100, 14 x 16 for 224; a ring for prime ``K``).  Edge log-potentials
    favour short moves: ``theta_edge[t, i, j] = -d(i, j)^2 / (2 sigma^2) + edge_noise * N(0, 1)``
    with ``d`` the Euclidean distance of the cells; node log-potentials are
    ``node_scale * N(0, 1)``.  ``population`` individuals (default ``10 * K``) are drawn from
    the chain model (multinomial start, multinomial moves), and each cell's count at each
    step is observed as ``Y ~ Poisson(rate * true count)``.  Deterministic given the seed
    (``numpy.random.default_rng(random_state)``).

    Returns
    -------
    dict with ``theta_node`` (T, K), ``theta_edge`` (T-1, K, K), ``Y`` (T, K) float counts,
    ``M`` (population), ``alpha`` (rate) and, for reference, ``true_counts`` (T, K) and
    ``true_flows`` (T-1, K, K) of the sampled population.
    """
    if T < 2:
        raise ValueError("T must be at least 2")
    rng = np.random.default_rng(random_state)
    M = POPULATION_PER_STATE * K if population is None else population
    d2 = _squared_distances(K)
    theta_edge = -d2 / (2.0 * sigma ** 2) + edge_noise * rng.standard_normal((T - 1, K, K))
    theta_node = node_scale * rng.standard_normal((T, K))
    m, x, _ = _chain_marginals(theta_node, theta_edge)

    counts = np.empty((T, K), dtype=np.int64)
    flows = np.empty((T - 1, K, K), dtype=np.int64)
    p0 = m[0] / m[0].sum()
    counts[0] = rng.multinomial(M, p0)
    for t in range(T - 1):
        cond = x[t] / x[t].sum(axis=1, keepdims=True)
        flows[t] = rng.multinomial(counts[t], cond)
        counts[t + 1] = flows[t].sum(axis=0)
    Y = rng.poisson(rate * counts).astype(float)
    return dict(theta_node=theta_node, theta_edge=theta_edge, Y=Y, M=float(M),
                alpha=float(rate), true_counts=counts, true_flows=flows)


# ------------------------------------------------------------------------- objective

def _xlogx_sum(p):
    p = np.asarray(p, dtype=float)
    pos = p > 0
    return float(np.sum(p[pos] * np.log(p[pos])))


def objective(theta_node, theta_edge, Y, M, alpha, m, x):
    """``F(m, x) = -<theta, mu> - H_B(mu) + L(m)`` exactly (see the module docstring).

    ``0 log 0 = 0`` in the entropies; ``+inf`` if some ``m[t, k] <= 0`` where
    ``Y[t, k] > 0`` (or if a marginal is negative).  ``m`` and ``x`` are taken as given:
    no consistency between them is assumed or checked.
    """
    theta_node = np.asarray(theta_node, dtype=float)
    theta_edge = np.asarray(theta_edge, dtype=float)
    Y = np.asarray(Y, dtype=float)
    m = np.asarray(m, dtype=float)
    x = np.asarray(x, dtype=float)
    T = m.shape[0]
    if np.any(m < 0) or np.any(x < 0):
        return np.inf
    obs = Y > 0
    if np.any(m[obs] <= 0):
        return np.inf
    linear = float(np.sum(theta_node * m) + np.sum(theta_edge * x))
    # -H_B = sum_t sum x log x - sum_{t=1}^{T-2} sum m log m
    neg_bethe = _xlogx_sum(x) - (_xlogx_sum(m[1:T - 1]) if T > 2 else 0.0)
    energy = alpha * float(np.sum(m)) - float(np.sum(Y[obs] / M * np.log(alpha * M * m[obs])))
    return -linear + neg_bethe + energy


# ------------------------------------------------------------------------- scipy solver

class _EdgeProblem:
    """``F`` as a function of the flattened edge marginals ``x`` alone.

    Node marginals are eliminated as ``m[t] = x[t].sum(1)`` for ``t < T-1`` and
    ``m[T-1] = x[T-2].sum(0)``.  With this choice every term ``-H(x[t]) + H(x[t].sum(1))``
    is a negative conditional entropy, convex on the whole positive orthant, so the
    function (and the Hessian below) is convex there, not only on the polytope.
    """

    def __init__(self, theta_node, theta_edge, Y, M, alpha):
        self.theta_node = np.asarray(theta_node, dtype=float)
        self.theta_edge = np.asarray(theta_edge, dtype=float)
        self.Y = np.asarray(Y, dtype=float)
        self.M = float(M)
        self.alpha = float(alpha)
        self.T, self.K = self.theta_node.shape
        self.c = self.Y / self.M  # observed counts per individual
        self.obs = self.Y > 0
        self.log_const = np.where(self.obs, np.log(self.alpha * self.M), 0.0)
        # node t in 1..T-2 carries +H(m_t) in -H_B
        self.inner = np.zeros(self.T, bool)
        self.inner[1:self.T - 1] = True
        self.n = (self.T - 1) * self.K * self.K

    def unflatten(self, xf):
        return xf.reshape(self.T - 1, self.K, self.K)

    def nodes(self, x):
        m = np.empty((self.T, self.K))
        m[:-1] = x.sum(axis=2)
        m[-1] = x[-1].sum(axis=0)
        return m

    def fun(self, xf):
        x = self.unflatten(xf)
        m = self.nodes(x)
        if np.any(x < 0) or np.any(m[self.obs] <= 0):
            return np.inf
        val = -np.sum(self.theta_edge * x) - np.sum(self.theta_node * m)
        val += _xlogx_sum(x) - _xlogx_sum(m[self.inner])
        val += self.alpha * np.sum(m)
        val -= np.sum(self.c[self.obs] * (np.log(m[self.obs]) + self.log_const[self.obs]))
        return float(val)

    def grad(self, xf):
        x = self.unflatten(xf)
        m = self.nodes(x)
        with np.errstate(divide="ignore"):
            gm = -self.theta_node + self.alpha - self.c / np.where(self.obs, m, 1.0)
            gm[self.inner] -= np.log(m[self.inner]) + 1.0
            g = -self.theta_edge + np.log(x) + 1.0
        g += gm[:-1, :, None]
        g[-1] += gm[-1][None, :]
        return g.ravel()

    def hess_operator(self, xf):
        x = self.unflatten(xf)
        m = self.nodes(x)
        inv_x = 1.0 / x
        with np.errstate(divide="ignore", invalid="ignore"):
            cm = np.where(self.obs, self.c / m ** 2, 0.0)
            cm[self.inner] -= 1.0 / m[self.inner]

        def matvec(v):
            v = np.asarray(v).reshape(x.shape)
            out = v * inv_x
            out += (cm[:-1] * v.sum(axis=2))[:, :, None]
            out[-1] += (cm[-1] * v[-1].sum(axis=0))[None, :]
            return out.ravel()

        return LinearOperator((self.n, self.n), matvec=matvec, rmatvec=matvec, dtype=float)

    def constraint_matrix(self):
        """Rows: ``sum x[0] = 1``; ``x[t].sum(0)[k] - x[t+1].sum(1)[k] = 0``, t < T-2."""
        T, K = self.T, self.K
        idx = np.arange(self.n).reshape(T - 1, K, K)
        rows = [np.zeros(K * K, np.int64)]
        cols = [idx[0].ravel()]
        vals = [np.ones(K * K)]
        for t in range(T - 2):
            r = 1 + t * K
            # x[t][:, k] summed over the first index
            rows.append(r + np.tile(np.arange(K), K))
            cols.append(idx[t].ravel())
            vals.append(np.ones(K * K))
            # x[t+1][k, :] summed over the second index
            rows.append(r + np.repeat(np.arange(K), K))
            cols.append(idx[t + 1].ravel())
            vals.append(-np.ones(K * K))
        n_rows = 1 + (T - 2) * K
        A = sparse.coo_array((np.concatenate(vals), (np.concatenate(rows), np.concatenate(cols))),
                             shape=(n_rows, self.n)).tocsr()
        b = np.zeros(n_rows)
        b[0] = 1.0
        return A, b


@contextlib.contextmanager
def _sparse_lu_ordering(ordering):
    """Make ``scipy.sparse.linalg.factorized`` use SuperLU with column ordering ``ordering``.

    trust-constr factorises the augmented system ``[[I, J.T], [J, 0]]`` of its (barrier)
    constraint Jacobian with ``factorized``, i.e. SuperLU with its default COLAMD ordering,
    which fills in catastrophically on this symmetric saddle-point matrix (about 10^8
    factor entries and 90 s per factorisation at K = 100, T = 6).  A symmetric ordering
    (``"MMD_AT_PLUS_A"``) gives 10^6 entries and 0.25 s.  Only the fill-reducing ordering of
    the linear algebra changes, not the optimisation algorithm.  ``None`` leaves scipy as is.
    """
    if ordering is None:
        yield
        return
    linalg = scipy.sparse.linalg
    original = linalg.factorized

    def factorized(A):
        return linalg.splu(sparse.csc_array(A), permc_spec=ordering).solve

    linalg.factorized = factorized
    try:
        yield
    finally:
        linalg.factorized = original


@contextlib.contextmanager
def _blas_limit(n_threads):
    """Limit BLAS threads: the solver's BLAS calls are level-1 vector operations, which a
    multi-threaded OpenBLAS slows down a hundredfold on a busy machine."""
    if n_threads is None:
        yield
        return
    from threadpoolctl import threadpool_limits

    with threadpool_limits(limits=n_threads, user_api="blas"):
        yield


def _problem_args(problem):
    return (problem["theta_node"], problem["theta_edge"], problem["Y"], problem["M"],
            problem["alpha"])


def solve_scipy(problem, tol=1e-10, maxiter=1000, verbose=0, stop_rel_gap=1e-6, monitor=False,
                mix=None, initial_barrier_parameter=1e-12, barrier_tol=None,
                initial_tr_radius=1.0, ordering="MMD_AT_PLUS_A", blas_threads=1):
    """Solve the CGM MAP problem with ``scipy.optimize.minimize(method="trust-constr")``.

    The variables are the flattened edge marginals ``x`` (node marginals eliminated); the
    consistency and normalisation constraints form one sparse ``LinearConstraint`` and
    ``Bounds(0, inf, keep_feasible=True)`` the non-negativity, which trust-constr's
    interior-point (barrier) method handles with slack variables; gradient and
    Hessian-vector product (a ``LinearOperator``) are exact.

    Parameters
    ----------
    problem : dict from :func:`make_cgm`.
    tol : float
        ``gtol`` and ``xtol`` of trust-constr (and ``barrier_tol`` unless given).
    maxiter : int
    verbose : int, trust-constr's ``verbose``.
    stop_rel_gap : float or None
        Stop as soon as the certified relative accuracy ``gap / |F|`` (see
        :func:`kkt_check`; ``gap >= F - F*``) of an iterate is at most this.  The
        certificate is computed in trust-constr's callback after every iteration and its
        time is excluded from ``seconds``.  ``None`` leaves the stopping to trust-constr's
        own tests (``gtol``), which on this problem say little about the objective's
        accuracy: its optimality measure is blind to the many tiny edge marginals.
    monitor : bool
        Record the certificate after every iteration in ``history`` (implied by
        ``stop_rel_gap``).
    mix : float or None
        The start is ``(1 - mix) * (marginals of theta alone) + mix * uniform``, a feasible
        interior point; ``None`` means ``1e-12 * K**2`` (a floor of ``1e-12`` on every
        edge marginal).  A large ``mix`` (say 0.01) lifts the tiny optimal edge marginals
        (down to 1e-38 at K = 224) far above their optimum and slows convergence; ``0``
        leaves them at 1e-38, where round-off in the null-space projections makes trial
        points infeasible and steps get rejected.
    initial_barrier_parameter : float
        Barrier parameter, kept fixed: with ``tol`` small the barrier subproblem is not
        solved to its tolerance before ``stop_rel_gap`` (or ``gtol``) stops the run.  Its
        bias on ``F`` is at most about ``mu * (T - 1) * K**2``, 4.5e-7 at K = 224, T = 10.
    initial_tr_radius : float
    ordering : str or None
        SuperLU column ordering for trust-constr's sparse factorisations (see
        :func:`_sparse_lu_ordering`); ``None`` keeps scipy's COLAMD (hopelessly slow here).
    blas_threads : int or None
        BLAS thread limit during the solve (threadpoolctl); ``None`` leaves it.

    Returns
    -------
    dict with ``m`` (T, K), ``x`` (T-1, K, K), ``objective`` (:func:`objective` at
    ``(m, x)``), ``seconds`` (wall time of ``minimize`` less ``check_seconds``, the time
    of the certificates), ``nit``, ``status``, ``message``, ``constr_violation`` (max abs
    residual of the equality constraints), ``optimality`` (trust-constr's), ``history``
    (per iteration: ``nit``, ``seconds``, ``objective``, ``gap``, ``rel_gap``; empty
    without monitoring), ``T`` and ``K``.
    """
    prob = _EdgeProblem(*_problem_args(problem))
    T, K = prob.T, prob.K
    A, b = prob.constraint_matrix()
    _, x_fb, _ = _chain_marginals(prob.theta_node, prob.theta_edge)
    if mix is None:
        mix = min(1e-12 * K * K, 0.5)
    x0 = ((1.0 - mix) * x_fb + mix / (K * K)).ravel()
    constraint = optimize.LinearConstraint(A, b, b)
    bounds = optimize.Bounds(np.zeros(prob.n), np.full(prob.n, np.inf), keep_feasible=True)
    options = dict(gtol=tol, xtol=tol, barrier_tol=tol if barrier_tol is None else barrier_tol,
                   initial_barrier_parameter=initial_barrier_parameter,
                   initial_barrier_tolerance=initial_barrier_parameter,
                   initial_tr_radius=initial_tr_radius, maxiter=maxiter, verbose=verbose,
                   sparse_jacobian=True)
    history = []
    check_seconds = 0.0
    monitor = monitor or stop_rel_gap is not None

    def callback(intermediate_result):
        nonlocal check_seconds
        t_in = time.perf_counter()
        xk = prob.unflatten(np.asarray(intermediate_result.x))
        cert = kkt_check(problem, prob.nodes(xk), xk)
        rel_gap = cert["gap"] / abs(cert["primal"])
        history.append(dict(nit=int(intermediate_result.nit),
                            seconds=t_in - t0 - check_seconds, objective=cert["primal"],
                            gap=cert["gap"], rel_gap=rel_gap))
        check_seconds += time.perf_counter() - t_in
        if stop_rel_gap is not None and rel_gap <= stop_rel_gap:
            raise StopIteration

    t0 = time.perf_counter()
    with _sparse_lu_ordering(ordering), _blas_limit(blas_threads):
        res = optimize.minimize(prob.fun, x0, method="trust-constr", jac=prob.grad,
                                hess=prob.hess_operator, constraints=[constraint],
                                bounds=bounds, options=options,
                                callback=callback if monitor else None)
    seconds = time.perf_counter() - t0 - check_seconds
    x = prob.unflatten(res.x).copy()
    m = prob.nodes(x)
    return dict(m=m, x=x, objective=objective(*_problem_args(problem), m, x), seconds=seconds,
                nit=int(res.nit), status=int(res.status), message=res.message,
                constr_violation=float(np.max(np.abs(A @ res.x - b))),
                optimality=float(res.optimality), T=T, K=K, history=history,
                check_seconds=check_seconds)


# ------------------------------------------------------------------------- checks

def kkt_check(problem, m, x):
    """Optimality certificate of chain marginals ``(m, x)``.

    At the optimum the exact chain marginals of ``theta_tilde = (theta_node - grad L(m),
    theta_edge)``, ``grad L(m) = alpha - Y / (M m)``, are ``(m, x)`` again.  Computed with
    :func:`skstruct.inference.forward_backward`.  Also returns the duality gap
    ``F(m, x) - D(lambda)`` at ``lambda = grad L(m)``, with the Fenchel dual
    ``D(lambda) = -log Z(theta_node - lambda, theta_edge) - L*(lambda)``: an upper bound on
    ``F(m, x) - F*`` (for consistent ``(m, x)`` it is the KL divergence between the chain
    distribution with marginals ``(m, x)`` and the one of ``theta_tilde``).
    """
    from skstruct.inference import forward_backward

    theta_node, theta_edge, Y, M, alpha = _problem_args(problem)
    m = np.asarray(m, dtype=float)
    x = np.asarray(x, dtype=float)
    c = np.asarray(Y, dtype=float) / M
    obs = c > 0
    lam = alpha - np.where(obs, c / np.where(obs, m, 1.0), 0.0)
    m_fb, x_fb, logz = forward_backward(theta_node - lam, theta_edge)
    l_conj = float(np.sum(c[obs] * (np.log(alpha * M * m[obs]) - 1.0)))
    primal = objective(theta_node, theta_edge, Y, M, alpha, m, x)
    dual = -logz - l_conj
    return dict(max_abs_m=float(np.max(np.abs(m_fb - m))),
                max_abs_x=float(np.max(np.abs(x_fb - x))),
                max_rel_m=float(np.max(np.abs(m_fb - m) / np.maximum(m_fb, 1e-300))),
                l1_x=float(np.sum(np.abs(x_fb - x))),
                primal=primal, dual=float(dual), gap=float(primal - dual),
                objective_at_fb=objective(theta_node, theta_edge, Y, M, alpha, m_fb, x_fb))
