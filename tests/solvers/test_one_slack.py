"""``StructuredSVM(solver="one_slack")``: Joachims et al.'s 1-slack cutting planes.

* the working set's QP solver against scipy's SLSQP on the same QP, and the converged
  weights against the explicit QP over every labelling of every sample (brute force,
  solved by SLSQP);
* convergence to BCFW's certified optimum on chains and on a multi-label problem;
* the inference cache replaces oracle calls (counted) without moving the optimum;
* the protocol path on a toy protocol model;
* the settings the method does not support raise a ``ValueError``.
"""

import itertools

import numpy as np
import pytest
from scipy.optimize import minimize

from skstruct import StructuredSVM
from skstruct.models import ChainModel, GraphModel, MultiLabelModel
from skstruct.solvers import OneSlack, ProtocolOneSlack
from skstruct.solvers._one_slack import simplex_qp
from tests.protocol_models import ProtocolChain
from tests.solvers.test_extragradient import (
    bcfw_reference,
    check_bracket,
    multilabel,
    small_data,
    tiny_chains,
)


def _slsqp_simplex(G, b, lam):
    m = len(b)
    res = minimize(lambda a: a @ G @ a / (2 * lam) - a @ b, np.full(m, 1.0 / m),
                   jac=lambda a: G @ a / lam - b, method="SLSQP", bounds=[(0, None)] * m,
                   constraints=[{"type": "eq", "fun": lambda a: a.sum() - 1.0,
                                 "jac": lambda a: np.ones(m)}],
                   options=dict(ftol=1e-15, maxiter=1000))
    a = res.x
    return a @ b - a @ G @ a / (2 * lam)


def _brute_force(X, y, lam, K):
    """The n-slack primal over every labelling of every (tiny) chain, by SLSQP:
    ``(w*, P(w*))``, ``w`` laid out as ``W (F, K)`` then ``P (K, K)``."""
    F = X[0].shape[1]
    rows = []
    n = len(X)
    for i, (x, yi) in enumerate(zip(X, y)):
        T = len(yi)
        for lab in itertools.product(range(K), repeat=T):
            lab = np.array(lab)
            psi = np.zeros(F * K + K * K)
            for t in range(T):
                psi[:F * K].reshape(F, K)[:, yi[t]] += x[t]
                psi[:F * K].reshape(F, K)[:, lab[t]] -= x[t]
            for t in range(1, T):
                psi[F * K:].reshape(K, K)[yi[t - 1], yi[t]] += 1.0
                psi[F * K:].reshape(K, K)[lab[t - 1], lab[t]] -= 1.0
            rows.append((i, psi, float(np.sum(lab != yi))))
    d = F * K + K * K

    def fun(z):
        w = z[:d]
        return 0.5 * lam * w @ w + z[d:].mean()

    def jac(z):
        return np.concatenate([lam * z[:d], np.full(n, 1.0 / n)])

    cons = [{"type": "ineq", "fun": lambda z, i=i, p=p, lo=lo: z[d + i] - lo + z[:d] @ p,
             "jac": lambda z, i=i, p=p: np.concatenate([p, np.eye(n)[i]])}
            for i, p, lo in rows]
    z0 = np.concatenate([np.zeros(d), np.full(n, 10.0)])
    res = minimize(fun, z0, jac=jac, constraints=cons, method="SLSQP",
                   options=dict(ftol=1e-15, maxiter=2000))
    w = res.x[:d]
    hinge = np.zeros(n)
    for i, p, lo in rows:
        hinge[i] = max(hinge[i], lo - w @ p)
    return w, 0.5 * lam * w @ w + hinge.mean()


def test_qp_solver_matches_slsqp_on_the_working_set():
    """The SMO solver's value on the working sets of a real fit is SLSQP's to 1e-8."""
    X, y = small_data(n=20)
    svm = StructuredSVM(C=1.0, solver="one_slack", max_iter=25, tol=0.0,
                        check_every=0).fit(X, y)
    ws = svm._solver.ws
    m = ws.m
    assert m > 10
    G, b = ws.gram[:m, :m].copy(), ws.b[:m].copy()
    ref = _slsqp_simplex(G, b, ws.lam)
    alpha = np.zeros(m)
    alpha[0] = 1.0
    value, _ = simplex_qp(G, b, ws.lam, alpha, m, 1e-10, 10 ** 6)
    assert value == pytest.approx(ref, rel=1e-8)
    assert value >= ref - 1e-10 * abs(ref)        # SLSQP is no better
    assert np.all(alpha >= 0) and alpha.sum() == pytest.approx(1.0, abs=1e-12)
    np.testing.assert_allclose(value, alpha @ b - alpha @ G @ alpha / (2 * ws.lam), rtol=1e-12)


@pytest.mark.parametrize("seed", [0, 1])
def test_converges_to_the_explicit_qp_over_all_labellings(seed):
    X, y = tiny_chains(seed, n=5, K=3)
    C = 1.0
    lam = 1.0 / (C * len(X))
    w_ref, p_ref = _brute_force(X, y, lam, 3)
    svm = StructuredSVM(C=C, solver="one_slack", max_iter=500, tol=1e-7,
                        check_every=1).fit(X, y)
    h = svm.history_
    assert h["gap"][-1] <= 1e-7 and svm.n_iter_ < 500
    assert h["primal"][-1] == pytest.approx(p_ref, rel=1e-7, abs=1e-9)
    # the duals are lower bounds, the primal objectives upper bounds, of the optimum
    assert h["dual"].max() <= p_ref + 1e-8 and h["primal"].min() >= p_ref - 1e-8
    # strong convexity: ||w - w*||^2 <= 2 gap / lam, and SLSQP's own accuracy
    np.testing.assert_allclose(svm.coef_, w_ref, atol=1e-4)


def _check_optimum(svm, tol, reference):
    check_bracket(svm, tol, reference)
    # the QP's value never decreases while no plane is dropped
    assert np.all(np.diff(svm.history_["dual"]) >= -1e-9)


def test_chains_reach_the_bcfw_optimum():
    X, y = small_data()
    tol = 1e-3
    ref = bcfw_reference(X, y, 1.0, tol)
    svm = StructuredSVM(C=1.0, solver="one_slack", max_iter=500, tol=tol,
                        check_every=1).fit(X, y)
    _check_optimum(svm, tol, ref)


def test_multilabel_reaches_the_bcfw_optimum():
    X, Y = multilabel(n=60, L=5)
    tol = 1e-3
    model = MultiLabelModel(edges="full")
    ref = bcfw_reference(X, Y, 1.0, tol, model=model)
    svm = StructuredSVM(C=1.0, solver="one_slack", model=model, max_iter=500, tol=tol,
                        check_every=1).fit(X, Y)
    _check_optimum(svm, tol, ref)


def test_edge_feature_graphs_reach_the_bcfw_optimum():
    rng = np.random.default_rng(3)
    X, y = [], []
    for _ in range(15):
        T = int(rng.integers(2, 6))
        x = rng.normal(size=(T, 3))
        edges = np.array([[t, t + 1] for t in range(T - 1)])
        ef = np.abs(rng.normal(size=(T - 1, 2)))
        X.append((x, edges, ef))
        y.append(rng.integers(0, 3, T))
    model = GraphModel()
    tol = 1e-3
    ref = bcfw_reference(X, y, 1.0, tol, model=model)
    svm = StructuredSVM(C=1.0, solver="one_slack", model=model, max_iter=500, tol=tol,
                        check_every=1).fit(X, y)
    _check_optimum(svm, tol, ref)


def test_the_inference_cache_replaces_oracle_calls():
    X, y = small_data(seed=2)
    calls = {"n": 0}
    original = OneSlack._oracle_plane

    def counted(self):
        calls["n"] += 1
        return original(self)

    OneSlack._oracle_plane = counted
    try:
        # without checks only the passes call the oracle
        svm = StructuredSVM(C=1.0, solver="one_slack", max_iter=40, tol=0.0,
                            check_every=0).fit(X, y)
    finally:
        OneSlack._oracle_plane = original
    sv = svm._solver
    assert calls["n"] == sv.n_oracle
    assert sv.n_cached > 0 and sv.n_oracle + sv.n_cached == 40
    assert sv.cache_n.max() <= sv.cache.shape[0] and sv.cache_n.sum() > 0
    # every cached labelling is a loss-augmented labelling the oracle returned: not the truth
    D = sv.D
    for s in np.flatnonzero(sv.cache_n):
        n0, n1 = D.node_offsets[s], D.node_offsets[s + 1]
        for k in range(sv.cache_n[s]):
            assert np.any(sv.cache[k, n0:n1] != D.y[n0:n1])
    # a cache of one labelling per sample, and none: the same optimum is certified
    tol = 1e-4
    fits = []
    for k in (0, 1, 50):
        model = ChainModel().fit(X, y)
        design, _ = model.design(X, y)
        solver = OneSlack(design, np.ones(design.batch.n_nodes), lam=1.0 / len(X),
                          surrogate="margin", averaging=True, inference_iter=10,
                          inference_cache=k)
        solver.run_pass(np.zeros(0, np.int64))
        for _ in range(500):
            solver.run_pass(np.arange(len(X)))
            primal, dual, gap = solver.objective()
            if gap <= tol:
                break
        assert gap <= tol
        fits.append((primal, solver.n_cached))
    assert fits[0][1] == 0
    for primal, _ in fits[1:]:
        assert abs(primal - fits[0][0]) <= 2 * tol


def test_an_oracle_pass_within_tol_certifies_and_ends_the_fit():
    """Without scheduled checks, the pass whose own oracle call shows its starting
    weights within tol keeps those weights and ends the fit: no extra oracle call, no
    ConvergenceWarning, and the recorded gap is the exact gap of the returned weights."""
    import warnings

    from sklearn.exceptions import ConvergenceWarning

    X, y = small_data(seed=2)
    tol = 1e-3
    with warnings.catch_warnings():
        warnings.simplefilter("error", ConvergenceWarning)
        svm = StructuredSVM(C=1.0, solver="one_slack", max_iter=2000, tol=tol,
                            check_every=10_000,
                            solver_options={"inference_cache": 5}).fit(X, y)
    sv = svm._solver
    assert svm.n_iter_ < 2000 and sv.certified is not None
    primal, dual, gap = sv.certified
    assert 0.0 <= gap <= tol and svm.history_["gap"][-1] == gap
    # the certified primal is the primal of the returned weights: a fresh oracle call
    # at them finds the same value
    _, _, hinge, _ = sv._oracle_plane()
    w = sv.ws.weights()
    np.testing.assert_allclose(np.concatenate([a.ravel() for a in sv.weights()]),
                               svm.coef_)
    assert 0.5 * sv.lam * float(w @ w) + hinge == pytest.approx(primal, rel=1e-10)


def test_protocol_path_counts_its_oracle_calls_and_reaches_the_optimum():
    X, y = small_data(seed=3, n=12, max_len=4)

    class Counting(ProtocolChain):
        def loss_augmented_inference(self, x, yi, w):
            Counting.calls += 1
            return super().loss_augmented_inference(x, yi, w)

    Counting.calls = 0
    tol = 1e-4
    ref = StructuredSVM(C=1.0, solver="one_slack", max_iter=500, tol=tol,
                        check_every=1).fit(X, y)
    svm = StructuredSVM(C=1.0, solver="one_slack", model=Counting(), max_iter=500, tol=tol,
                        check_every=1).fit(X, y)
    sv = svm._solver
    assert isinstance(sv, ProtocolOneSlack)
    # one oracle call per sample per pass (checks become the next pass's plane)
    assert Counting.calls == len(X) * sv.n_oracle
    assert svm.history_["gap"][-1] <= tol
    assert svm.history_["primal"][-1] == pytest.approx(ref.history_["primal"][-1],
                                                       abs=2 * tol)
    # the same iterations as the batched path, plane for plane
    np.testing.assert_allclose(svm.history_["primal"], ref.history_["primal"], rtol=1e-8)
    # the cache in the protocol path, without checks
    Counting.calls = 0
    svm = StructuredSVM(C=1.0, solver="one_slack", model=Counting(), max_iter=20, tol=0.0,
                        check_every=0).fit(X, y)
    sv = svm._solver
    assert sv.n_cached > 0 and Counting.calls == len(X) * sv.n_oracle < 20 * len(X)


def test_warm_start_continues_on_the_same_data_only():
    X, y = small_data(seed=1, n=10)
    common = dict(C=0.5, solver="one_slack", tol=0.0, check_every=1)
    one = StructuredSVM(max_iter=10, **common).fit(X, y)
    two = StructuredSVM(max_iter=5, warm_start=True, **common).fit(X, y)
    two.fit(X, y)
    assert two.n_iter_ == 10
    np.testing.assert_allclose(two.coef_, one.coef_, rtol=1e-9, atol=1e-12)
    X2 = [x + 1.0 for x in X]
    two.set_params(max_iter=3).fit(X2, y)
    assert two.n_iter_ == 3             # other data: afresh, the planes belong to X


def test_unsupported_settings_raise():
    X, y = small_data(n=4)
    for surrogate in ("slack", "poslearn"):
        with pytest.raises(ValueError, match="surrogate='margin'"):
            StructuredSVM(solver="one_slack", surrogate=surrogate, max_iter=2).fit(X, y)
    with pytest.raises(ValueError, match="surrogate"):
        StructuredSVM(solver="one_slack", surrogate="lp", max_iter=2).fit(X, y)
    graphs = [(x, np.array([[i, i + 1] for i in range(len(x) - 1)]).reshape(-1, 2)) for x in X]
    with pytest.raises(ValueError, match="supermodular"):
        StructuredSVM(solver="one_slack", model=GraphModel(submodular=True),
                      max_iter=2).fit(graphs, [yi % 2 for yi in y])
    with pytest.raises(ValueError, match="surrogate"):
        StructuredSVM(solver="one_slack", model=ProtocolChain(), surrogate="slack",
                      max_iter=2).fit(X, y)
