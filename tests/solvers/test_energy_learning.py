"""The energy learners of :mod:`skstruct.solvers._energy`: Algorithm 2's
surrogate against its per-term definition and finite differences, and its
memory, which no longer grows with the number of energy terms."""

import tracemalloc

import numpy as np
import pytest
from scipy.optimize import check_grad

from skstruct import NonLocalCRF
from skstruct.energies import Energy, LinearMeasurements, NearestStatistic, segment_sum
from skstruct.models import ChainModel
from skstruct.solvers._crf import CRFObjective
from skstruct.solvers._energy import BetheProjector, Surrogate, psi_of
from tests.models.test_energies import _SquaredCounts
from tests.test_nonlocal import chains


def _problem(energy, fit_theta, seed=0):
    """A small surrogate: fixed projections at random weights, random psi features."""
    X, y = chains(seed, n=12, max_len=6)
    design, _ = ChainModel().fit(X, y).design(X, y)
    obj = CRFObjective(design, 0.8)
    rng = np.random.default_rng(seed)
    w = 0.3 * rng.normal(size=obj.W_shape[0] * obj.W_shape[1] + int(np.prod(obj.P_shape)))
    energy = energy.fit(design.y, design.batch, design.n_classes)
    S = design.batch.n_samples
    Phi = np.hstack([np.ones((S, 1)), rng.normal(size=(S, 2))])
    V = rng.normal(size=(energy.n_terms, 3))
    # psi = V0 + V1 phi_1 + ...: mostly positive, some clipped to 0
    V[:, 0] = 0.7
    V[:, 1] = 1.0 + np.abs(V[:, 1])
    project = BetheProjector(energy, method="rda", max_iter=10, tol=1e-6, n_pieces=None,
                             step_size=1.0, lipschitz=None)
    W, P = obj.split(w)
    proj = project(obj, W, P, psi_of(V, Phi))
    sur = Surrogate(obj, energy, proj, Phi, C=obj.C, C_energy=0.5, fit_theta=fit_theta, w=w)
    return sur, sur.pack(V, w)


def _per_term_value_grad(sur, x):
    """The surrogate as it was first written: one (N, K) gradient direction per term."""
    obj, proj = sur.obj, sur.proj
    b = obj.design.batch
    S, J = b.n_samples, sur.V_shape[0]
    dirs = []
    for j in range(J):
        onehot = np.zeros((S, J))
        onehot[:, j] = 1.0
        dirs.append(proj.energy.grad(proj.node_marginals, None, b, onehot)[0])
    V, w = sur.unpack(x)
    psi_raw = sur.Phi @ V.T
    psi = np.maximum(psi_raw, 0.0)
    offset = np.zeros((b.n_nodes, obj.K))
    for j, g in enumerate(dirs):
        offset += g * np.repeat(psi[:, j], b.lengths)[:, None]
    if sur.fit_theta:
        obj.offset = offset
        try:
            val, gw, node = obj.value_grad_marginals(w)
        finally:
            obj.offset = None
    else:
        W, P = obj.split(w)
        node, _, logz, score = obj.nll_parts(W, P, offset)
        val = obj.C * float(np.sum(logz - score))
    d = -node
    d[np.arange(b.n_nodes), obj.design.y] += 1.0
    gpsi = np.column_stack([segment_sum(np.sum(g * d, axis=1), b.node_offsets)
                            for g in dirs]) * (psi_raw > 0)
    r = sur.C / sur.Ce
    gV = obj.C * (gpsi.T @ sur.Phi) + r * V
    val += 0.5 * r * float(np.sum(V * V))
    return val, (np.concatenate([gV.ravel(), gw]) if sur.fit_theta else gV.ravel())


def _energy(name):
    rng = np.random.default_rng(3)
    if name == "linear":
        return LinearMeasurements(rng.uniform(-1, 1, size=(7, 3)), rng.uniform(0, 1, size=7),
                                  smoothing=0.5)
    return NearestStatistic(name)


@pytest.mark.parametrize("fit_theta", [False, True])
@pytest.mark.parametrize("name", ["linear", "unigram", "marginals"])
def test_surrogate_equals_its_per_term_definition(name, fit_theta):
    sur, x = _problem(_energy(name), fit_theta)
    assert not hasattr(sur, "dirs")
    # clipped and unclipped psi both occur, so the comparison covers the clipping
    psi_raw = sur.Phi @ sur.unpack(x)[0].T
    assert np.any(psi_raw <= 0) and np.any(psi_raw > 0)
    rng = np.random.default_rng(1)
    for t in range(3):
        xt = x + 0.3 * t * rng.normal(size=x.shape)
        f, g = sur.value_grad(xt)
        f0, g0 = _per_term_value_grad(sur, xt)
        assert np.isclose(f, f0, rtol=1e-12, atol=0)
        assert np.allclose(g, g0, rtol=1e-10, atol=1e-12)


@pytest.mark.parametrize("fit_theta", [False, True])
@pytest.mark.parametrize("name", ["linear", "marginals"])
def test_surrogate_gradient_against_finite_differences(name, fit_theta):
    sur, x = _problem(_energy(name), fit_theta, seed=2)
    f = lambda z: sur.value_grad(z)[0]      # noqa: E731
    g = lambda z: sur.value_grad(z)[1]      # noqa: E731
    err = check_grad(f, g, x, epsilon=1e-6)
    assert err <= 1e-4 * max(1.0, np.linalg.norm(g(x)))
    assert np.linalg.norm(g(x)) > 1e-3       # a non-trivial gradient


def test_alternating_with_thousands_of_terms_allocates_no_per_term_array(monkeypatch):
    from skstruct._core import _validation

    rng = np.random.default_rng(0)
    S, n, K, J = 200, 30, 40, 2000
    X, y = [], []
    for _ in range(S):
        lab = rng.integers(0, K, n)
        X.append(np.eye(K)[lab] + rng.normal(scale=1.0, size=(n, K)))
        y.append(lab)
    A = rng.uniform(size=(J, K)) * (rng.uniform(size=(J, K)) < 0.1)
    b = 1.0 - 0.8 * n / K * A.sum(axis=1)          # a_j . counts + b_j >= 1 on most labellings
    N = S * n
    per_term = 8 * J * N * K                       # the old surrogate's directions: 3.8 GB
    assert per_term > 3 * 2 ** 30
    # the memory guard that refused this is gone, and nothing else needs that much
    monkeypatch.setattr(_validation, "memory_limit", lambda: per_term - 1)
    crf = NonLocalCRF(energy=LinearMeasurements(A, b), learning="alternating", max_iter=5,
                      energy_max_iter=1, max_oracle_calls=5, random_state=0)
    tracemalloc.start()
    try:
        crf.fit(X, y)
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    # a few (N, K) and (S, J) arrays: 2 MB and 3 MB each
    assert peak < per_term / 20
    assert crf.psi_coef_.shape == (J, 1) and np.all(np.isfinite(crf.psi_coef_))
    assert not np.allclose(crf.psi_coef_, 1.0)      # the M-step moved psi


@pytest.mark.parametrize("learning", ["stochastic", "alternating"])
def test_user_energy_without_closed_form_learns_through_the_fallback(learning, monkeypatch):
    X, y = chains(5, n=20)
    rng = np.random.default_rng(0)
    energy = _SquaredCounts(0.3 * rng.normal(size=(3, 3)), rng.uniform(0, 2, size=3))
    calls = []
    fallback = Energy._cross

    def counted(self, *args):
        calls.append(type(self))
        return fallback(self, *args)

    monkeypatch.setattr(Energy, "_cross", counted)
    crf = NonLocalCRF(energy=energy, learning=learning, max_iter=10, energy_max_iter=2,
                      batch_size=5, random_state=0).fit(X, y)
    assert calls and set(calls) == {_SquaredCounts}
    assert crf.psi_coef_.shape == (3, 1) and np.all(np.isfinite(crf.psi_coef_))
    assert not np.allclose(crf.psi_coef_, 1.0)
    pred = crf.predict(X)
    assert [len(p) for p in pred] == [len(x) for x in X]
