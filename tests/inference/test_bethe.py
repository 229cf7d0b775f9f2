"""Bethe projections against brute force over all labellings of small chains and trees."""

import itertools

import numpy as np
import pytest
from scipy.optimize import minimize

from skstruct.energies import LinearMeasurements, NearestStatistic, PoissonCounts
from skstruct.inference import GraphBatch, bethe_entropy, bethe_project, marginals_batch

# random models with -inf scores are often infeasible on purpose; the warning
# itself is tested in test_reporting.py
pytestmark = pytest.mark.filterwarnings(
    "ignore::skstruct.inference.InfeasibilityWarning")


def _brute_optimum(batch, unary, P, energy, psi, K, seed=0):
    """min over joint distributions q of -E_q[score] - H(q) + L(mu(q)), one graph;
    on a tree min over q with fixed marginals of -H(q) is -H_B(mu), so this is
    the same optimum as eq. 2."""
    n = batch.n_nodes
    labs = np.array(list(itertools.product(range(K), repeat=n)))
    e = batch.edges
    S = unary[np.arange(n), labs].sum(1) + P[labs[:, e[:, 0]], labs[:, e[:, 1]]].sum(1)

    def mus(q):
        node = np.stack([np.bincount(labs[:, v], q, K) for v in range(n)])
        edge = np.stack([np.bincount(labs[:, a] * K + labs[:, b], q, K * K).reshape(K, K)
                         for a, b in e]).reshape(-1, K, K)
        return node, edge

    def F(z):
        q = np.exp(z - z.max())
        q /= q.sum()
        node, edge = mus(q)
        ed = edge if energy.uses_edges else None
        f = -(q @ S) + (q * np.log(q + 1e-300)).sum() + energy.value(node, ed, batch, psi)[0]
        gn, ge = energy.grad(node, ed, batch, psi)
        g = -S + np.log(q + 1e-300) + 1.0 + gn[np.arange(n), labs].sum(1)
        if ge is not None:
            g += ge[np.arange(batch.n_edges), labs[:, e[:, 0]], labs[:, e[:, 1]]].sum(1)
        return f, q * (g - q @ g)

    rng = np.random.default_rng(seed)
    res = minimize(F, 0.1 * rng.normal(size=len(labs)), jac=True, method="L-BFGS-B",
                   options=dict(maxiter=5000, ftol=1e-15, gtol=1e-10))
    return res.fun


def _case(seed, tree=False):
    rng = np.random.default_rng(seed)
    K = 3
    if tree:
        batch = GraphBatch.from_graphs([5], [np.array([[0, 1], [1, 2], [1, 3], [3, 4]])])
    else:
        batch = GraphBatch.from_chains([4])
    unary = rng.normal(size=(batch.n_nodes, K))
    P = rng.normal(size=(K, K))
    return rng, batch, unary, P, K


@pytest.mark.parametrize("method", ["rda", "md", "accelerated"])
@pytest.mark.parametrize("tree", [False, True])
def test_linear_measurements_reach_the_brute_force_optimum(method, tree):
    rng, batch, unary, P, K = _case(0, tree)
    en = LinearMeasurements(rng.normal(size=(2, K)), b=[0.3, -0.2],
                            A_edge=rng.normal(size=(2, K, K)) * 0.5,
                            smoothing=0.5).fit(None, batch, K)
    psi = np.array([2.0, 1.5])
    best = _brute_optimum(batch, unary, P, en, psi, K)
    # constant-step mirror descent needs eta below 1 / (the gradient's Lipschitz constant)
    # (the accelerated method takes the energy's own Lipschitz bound)
    kw = {} if method == "accelerated" else dict(step_size=0.05)
    r = bethe_project(unary, P, en, batch=batch, psi=psi, method=method, max_iter=1500,
                      tol=1e-12, return_history=True, n_jobs=1, **kw)
    f = r.history["objective"]
    # O(log t / t) for RDA, O(1 / t^2) accelerated, linear for MD at this step
    assert abs(f[-1] - best) < (1e-3 if method == "rda" else 1e-5)
    assert f[-1] >= best - 1e-6
    if method == "accelerated":
        # the bound: psi_j / gamma * (n ||a_j||^2 + n_edges ||a_edge_j||^2), summed
        ref = sum(psi[j] / 0.5 * (batch.n_nodes * (en.A_[j] ** 2).sum()
                                  + batch.n_edges * (en.A_edge_[j] ** 2).sum()) for j in range(2))
        assert np.isclose(en.lipschitz(psi, batch), ref)
    if method == "md":
        # the safeguarded step never increases the objective
        assert np.all(np.diff(f) <= 1e-12 * np.abs(f[1:]))
    # every iterate is a feasible marginal vector: rows are distributions and the
    # edge marginals agree with the node marginals
    assert np.allclose(r.node_marginals.sum(1), 1.0)
    e = batch.edges
    assert np.allclose(r.edge_marginals.sum(2), r.node_marginals[e[:, 0]])
    assert np.allclose(r.edge_marginals.sum(1), r.node_marginals[e[:, 1]])


@pytest.mark.parametrize("method", ["md"])
def test_proposition_1_theta_tilde_reproduces_mu(method):
    rng, batch, unary, P, K = _case(1)
    Y = rng.poisson(3.0, size=(batch.n_nodes, K))
    en = PoissonCounts(Y, population=10.0, rate=0.7).fit(None, batch, K)
    r = bethe_project(unary, P, en, batch=batch, method=method, max_iter=2000, tol=1e-11,
                      edge_marginals=True, n_jobs=1)
    assert r.converged
    # the CRF at theta - grad L(mu*) has marginals mu*
    node, _, _ = marginals_batch(batch, unary - en.grad(r.node_marginals, None, batch, 1.0)[0],
                                 P[None], np.zeros(batch.n_edges, np.int64))
    assert np.allclose(node, r.node_marginals, atol=1e-7)
    best = _brute_optimum(batch, unary, P, en, 1.0, K)
    lin = (unary * r.node_marginals).sum() + (P[None] * r.edge_marginals).sum()
    f = -lin - bethe_entropy(batch, r.node_marginals, r.edge_marginals)[0] + en.value(
        r.node_marginals, None, batch, 1.0)[0]
    assert abs(f - best) < 1e-6


def _objective_at(batch, unary, P, energy, psi, r):
    lin = (unary * r.node_marginals).sum() + (P[None] * r.edge_marginals).sum()
    return -lin - bethe_entropy(batch, r.node_marginals, r.edge_marginals)[0] + energy.value(
        r.node_marginals, None, batch, psi)[0]


@pytest.mark.parametrize("seed", [0, 2, 5])
def test_pieces_find_the_global_minimum_of_nearest_statistic(seed):
    # L^u at psi = 2 on a 3-letter chain: the paper's algorithm stops in a local minimum
    # (on these seeds), the projection per dictionary word finds the global one
    rng = np.random.default_rng(seed)
    K = 3
    batch = GraphBatch.from_chains([3])
    unary = rng.normal(size=(3, K))
    P = rng.normal(size=(K, K))
    ytr = np.array([0, 0, 1, 2, 2, 2, 1, 1])
    en = NearestStatistic("unigram").fit(ytr, GraphBatch.from_chains([3, 3, 2]), K)
    # reference: the best of 20 random starts of L-BFGS over joint distributions
    ref = min(_brute_optimum(batch, unary, P, en, 2.0, K, seed=s) for s in range(20))
    kw = dict(batch=batch, psi=2.0, max_iter=3000, tol=1e-12, edge_marginals=True, n_jobs=1)
    g = bethe_project(unary, P, en, n_pieces="all", **kw)
    local = bethe_project(unary, P, en, **kw)
    f = _objective_at(batch, unary, P, en, 2.0, g)
    assert f <= g.objective[0] + 1e-9            # the chosen piece bounds the energy
    assert abs(g.objective[0] - ref) < 1e-3       # RDA's O(log t / t) on a kink
    assert _objective_at(batch, unary, P, en, 2.0, local) > ref + 0.1
    # every piece kept (3 entries): the same as n_pieces="all"
    k = bethe_project(unary, P, en, n_pieces=5, **kw)
    assert np.allclose(k.node_marginals, g.node_marginals)
    # Proposition 1 holds for the chosen piece
    node, _, _ = marginals_batch(batch, g.unary, g.pairwise, g.pw_index)
    assert np.allclose(node, g.node_marginals, atol=1e-9)


def test_pieces_on_a_batch_equal_samples_one_by_one(monkeypatch):
    rng = np.random.default_rng(11)
    K = 4
    lengths = [3, 1, 5, 2, 0]
    batch = GraphBatch.from_chains(lengths)
    unary = rng.normal(size=(batch.n_nodes, K))
    P = rng.normal(size=(K, K))
    train = GraphBatch.from_chains([3, 3, 2, 1, 3])
    ytr = rng.integers(0, K, train.n_nodes)
    psi = np.array([[1.0], [0.5], [2.0], [3.0], [1.0]])
    off = batch.node_offsets
    for stat in ("unigram", "marginals"):      # "marginals": no 5-letter word
        en = NearestStatistic(stat).fit(ytr, train, K)
        r = bethe_project(unary, P, en, batch=batch, psi=psi, n_pieces=2, max_iter=30,
                          tol=0.0, method="md", n_jobs=1)
        assert r.objective.shape == (5,) and np.all(np.isfinite(r.objective))
        for s in range(5):
            one = bethe_project(unary[off[s]:off[s + 1]], P, en,
                                batch=GraphBatch.from_chains([lengths[s]]), psi=psi[s:s + 1],
                                n_pieces=2, max_iter=30, tol=0.0, method="md", n_jobs=1)
            assert np.allclose(one.node_marginals, r.node_marginals[off[s]:off[s + 1]])
            assert np.isclose(one.objective[0], r.objective[s])
        # runs of at most 6 replica nodes (memory bound): the same result
        from skstruct.inference import _bethe

        monkeypatch.setattr(_bethe, "PIECE_NODES", 6)
        c = bethe_project(unary, P, en, batch=batch, psi=psi, n_pieces=2, max_iter=30,
                          tol=0.0, method="md", edge_marginals=True, n_jobs=1)
        monkeypatch.undo()
        assert np.allclose(c.node_marginals, r.node_marginals)
        assert np.allclose(c.unary, r.unary) and np.allclose(c.objective, r.objective)
        assert np.allclose(c.edge_marginals.sum(2), c.node_marginals[batch.edges[:, 0]])


def test_batch_equals_samples_one_by_one():
    rng = np.random.default_rng(3)
    K = 4
    lengths = [3, 1, 5, 2]
    batch = GraphBatch.from_chains(lengths)
    unary = rng.normal(size=(batch.n_nodes, K))
    P = rng.normal(size=(K, K))
    ytr = rng.integers(0, K, batch.n_nodes)
    en = NearestStatistic("marginals").fit(ytr, batch, K)
    psi = np.array([[1.0], [0.5], [2.0], [0.0]])
    r = bethe_project(unary, P, en, batch=batch, psi=psi, max_iter=15, tol=0.0, n_jobs=1)
    off = batch.node_offsets
    for s in range(4):
        sub = GraphBatch.from_chains([lengths[s]])
        # the single sample's dictionary entries are those of its length
        one = bethe_project(unary[off[s]:off[s + 1]], P, en, batch=sub, psi=psi[s:s + 1],
                            max_iter=15, tol=0.0, n_jobs=1)
        assert np.allclose(one.node_marginals, r.node_marginals[off[s]:off[s + 1]])
    # psi = 0: the plain CRF marginals
    plain, _, _ = marginals_batch(batch, unary, P[None], np.zeros(batch.n_edges, np.int64))
    assert np.allclose(r.node_marginals[off[3]:], plain[off[3]:])


def test_neg_inf_potentials_stay_finite():
    rng, batch, unary, P, K = _case(4)
    unary[1, 0] = -np.inf
    P[2, 1] = -np.inf
    Y = rng.poisson(2.0, size=(4, K))
    Y[1, 0] = 0     # no count where a hard constraint forbids the state
    en = PoissonCounts(Y, population=5.0).fit(None, batch, K)
    r = bethe_project(unary, P, en, batch=batch, method="md", max_iter=200,
                      return_history=True, n_jobs=1)
    assert np.all(np.isfinite(r.node_marginals))
    assert r.node_marginals[1, 0] == 0.0
    assert np.all(np.isfinite(r.history["objective"]))


@pytest.mark.parametrize("statistic", ["unigram", "marginals"])
def test_pieces_with_neg_inf_potentials_stay_finite(statistic):
    rng = np.random.default_rng(0)
    K = 3
    batch = GraphBatch.from_chains([3, 2, 3])
    unary = rng.normal(size=(8, K))
    P = rng.normal(size=(K, K))
    unary[0, 1] = -np.inf
    P[2, 0] = -np.inf
    unary[3] = -np.inf                   # sample 1 has no feasible labelling
    en = NearestStatistic(statistic).fit(np.array([0, 1, 2, 2, 2, 1, 1, 0]),
                                         GraphBatch.from_chains([3, 3, 2]), K)
    r = bethe_project(unary, P, en, batch=batch, psi=2.0, n_pieces="all", max_iter=50,
                      edge_marginals=True)
    assert np.all(np.isfinite(r.node_marginals)) and np.all(np.isfinite(r.objective))
    assert r.node_marginals[0, 1] == 0.0 and np.all(r.node_marginals[3:5] == 0.0)
    assert np.allclose(r.node_marginals[[0, 1, 2, 5, 6, 7]].sum(1), 1.0)
    assert np.all(r.edge_marginals[:, 2, 0] == 0.0)


def test_bethe_project_errors():
    rng, batch, unary, P, K = _case(5)
    en = NearestStatistic().fit(np.zeros(4, int), batch, K)
    with pytest.raises(ValueError, match="method"):
        bethe_project(unary, P, en, method="newton")
    with pytest.raises(ValueError, match="Lipschitz"):
        bethe_project(unary, P, en, method="accelerated")
    with pytest.raises(ValueError, match="max_iter"):
        bethe_project(unary, P, en, max_iter=0)
    with pytest.raises(ValueError, match="n_pieces must be"):
        bethe_project(unary, P, en, n_pieces=0)
    with pytest.raises(ValueError, match="rda' or 'md'"):
        bethe_project(unary, P, en, n_pieces=2, method="accelerated", lipschitz=1.0)
    with pytest.raises(ValueError, match="return_history"):
        bethe_project(unary, P, en, n_pieces=2, return_history=True)
    lin = LinearMeasurements(np.ones((1, K))).fit(None, batch, K)
    with pytest.raises(ValueError, match="minimum of convex pieces"):
        bethe_project(unary, P, lin, n_pieces=2)
    with pytest.raises(ValueError, match="NaN"):
        bad = unary.copy()
        bad[0, 0] = np.nan
        bethe_project(bad, P, en)
    cyc = GraphBatch.from_graphs([3], [np.array([[0, 1], [1, 2], [2, 0]])])
    with pytest.raises(ValueError, match="cycle"):
        bethe_project(unary[:3], P, en, batch=cyc)


def test_projections_run_blas_on_one_thread_and_restore_it():
    # the energy's products and numba's oracle threads fight for the cores otherwise
    from threadpoolctl import threadpool_info, threadpool_limits

    def blas_threads():
        return {d["num_threads"] for d in threadpool_info() if d["user_api"] == "blas"}

    seen = []

    class Spy(LinearMeasurements):
        fail = False

        def _grad(self, node, edge, batch, psi):
            seen.append(blas_threads())
            if self.fail:
                raise RuntimeError
            return super()._grad(node, edge, batch, psi)

    batch = GraphBatch.from_chains([3, 2])
    energy = Spy(np.ones((2, 2))).fit(None, batch, 2)
    unary = np.random.default_rng(0).normal(size=(5, 2))
    with threadpool_limits(2, user_api="blas"):
        before = blas_threads()
        bethe_project(unary, np.zeros((2, 2)), energy, batch=batch, max_iter=3)
        assert seen and all(s == {1} for s in seen)
        assert blas_threads() == before
        # a failing projection restores the limit too
        energy.fail = True
        with pytest.raises(RuntimeError):
            bethe_project(unary, np.zeros((2, 2)), energy, batch=batch, max_iter=3)
        assert blas_threads() == before
