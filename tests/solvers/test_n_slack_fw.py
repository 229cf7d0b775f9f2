"""``StructuredSVM(solver="n_slack")`` (Tsochantaridis et al.'s n-slack cutting planes)
and ``solver="fw"`` (batch Frank-Wolfe on the dual), and what every certified solver
shares: a negative duality gap certifies nothing.

* both reach the explicit QP over every labelling of tiny chains (brute force), and
  BCFW's certified optimum on chains, edge-feature graphs and multiclass data, batched
  and through the protocol;
* their duals never exceed their primals, n-slack's QP value does not decrease while no
  plane is dropped, and batch Frank-Wolfe's dual increases at every pass;
* the protocol and batched paths follow the same iterates;
* a model whose loss-augmented inference misses the most violating labellings yields a
  negative gap: one warning that the weights are uncertified, and the fit stops there.
"""

import warnings

import numpy as np
import pytest

from skstruct import StructuredSVM
from skstruct.exceptions import ConvergenceWarning
from skstruct.models import GraphModel
from skstruct.solvers import FrankWolfe, NSlack, ProtocolFrankWolfe, ProtocolNSlack
from tests.protocol_models import ProtocolChain
from tests.solvers.test_extragradient import (
    check_bracket,
    multiclass,
    small_data,
    tiny_chains,
)
from tests.solvers.test_one_slack import _brute_force
from tests.solvers.test_subgradient_schedules import ProtocolMulticlass


def reference(X, y, C, **kw):
    """The one-slack solver's ``(primal, dual)`` and weights at a gap of at most 1e-7
    (its convergence to BCFW's optimum and to brute force is tested on its own)."""
    svm = StructuredSVM(C=C, solver="one_slack", max_iter=3000, tol=1e-7, check_every=1,
                        **kw).fit(X, y)
    h = svm.history_
    assert h["gap"][-1] <= 1e-7
    return (h["primal"][-1], h["dual"][-1]), svm.coef_


N_SLACK = [("n_slack", None), ("n_slack", {"batch_size": 3})]


@pytest.mark.parametrize("solver,options", N_SLACK + [("fw", None)])
def test_tiny_chains_reach_the_explicit_qp(solver, options):
    X, y = tiny_chains(0, n=5, K=3)
    lam = 1.0 / len(X)
    w_ref, p_ref = _brute_force(X, y, lam, 3)
    tol = 1e-6 if solver == "n_slack" else 2e-3
    svm = StructuredSVM(C=1.0, solver=solver, solver_options=options, max_iter=20000,
                        tol=tol, check_every=1 if solver == "n_slack" else 25).fit(X, y)
    h = svm.history_
    assert h["gap"][-1] <= tol and svm.n_iter_ < svm.max_iter
    assert h["dual"].max() <= p_ref + 1e-8 and h["primal"].min() >= p_ref - 1e-8
    assert h["primal"][-1] == pytest.approx(p_ref, abs=tol + 1e-8)
    # strong convexity: ||w - w*||^2 <= 2 gap / lam
    assert np.linalg.norm(svm.coef_ - w_ref) <= np.sqrt(2 * tol / lam) + 1e-4


def _graphs():
    rng = np.random.default_rng(3)
    X, y = [], []
    for _ in range(12):
        T = int(rng.integers(2, 6))
        x = rng.normal(size=(T, 3))
        edges = np.array([[t, t + 1] for t in range(T - 1)])
        ef = np.abs(rng.normal(size=(T - 1, 2)))
        X.append((x, edges, ef))
        y.append(rng.integers(0, 3, T))
    return X, y


CASES = {
    "chains": lambda: (small_data(n=12), {}),
    "graphs": lambda: (_graphs(), {"model": GraphModel()}),
    "multiclass": lambda: (multiclass(n=30), {}),
}


@pytest.mark.parametrize("case", sorted(CASES))
@pytest.mark.parametrize("solver,options", N_SLACK + [("fw", None)])
def test_batched_reaches_the_bcfw_optimum(case, solver, options):
    (X, y), kw = CASES[case]()
    tol = 1e-4 if solver == "n_slack" else 1e-2
    ref, w_ref = reference(X, y, 1.0, **kw)
    svm = StructuredSVM(C=1.0, solver=solver, solver_options=options, max_iter=5000,
                        tol=tol, check_every=1, **kw).fit(X, y)
    assert isinstance(svm._solver, NSlack if solver == "n_slack" else FrankWolfe)
    check_bracket(svm, tol, ref)
    # strong convexity: ||w - w*||^2 <= 2 gap / lam, for both fits
    lam = 1.0 / len(X)
    assert np.linalg.norm(svm.coef_ - w_ref) <= np.sqrt(2 * (tol + 1e-7) / lam)
    h = svm.history_
    assert np.all(h["primal"] >= h["dual"] - 1e-12)
    if solver == "fw":
        # the line search maximises the dual along each step: it never decreases
        assert np.all(np.diff(h["dual"]) >= -1e-12)
        np.testing.assert_allclose(svm.gap_estimates_[1:], h["gap"][:-1], rtol=1e-9,
                                   atol=1e-12)
    else:
        # block coordinate ascent from the last multipliers, and only planes of zero
        # multiplier pruned (inactive_threshold=0): the QP's value never decreases
        assert np.all(np.diff(h["dual"]) >= -1e-9 * max(1.0, abs(h["dual"][-1])))


@pytest.mark.parametrize("solver,options", N_SLACK + [("fw", None)])
def test_protocol_path_follows_the_batched_iterates(solver, options):
    X, y = small_data(seed=3, n=8, max_len=4)
    common = dict(C=1.0, solver=solver, solver_options=options, max_iter=8, tol=0.0,
                  check_every=1, shuffle=False)
    with warnings.catch_warnings():
        # tol=0: a fixed number of passes, compared pass by pass
        warnings.simplefilter("ignore", ConvergenceWarning)
        ref = StructuredSVM(**common).fit(X, y)
        svm = StructuredSVM(model=ProtocolChain(), **common).fit(X, y)
    assert isinstance(svm._solver, ProtocolNSlack if solver == "n_slack"
                      else ProtocolFrankWolfe)
    # the two paths' planes agree to rounding; the n-slack QP, solved to a hundredth of
    # the last gap, may stop a sweep apart on them
    np.testing.assert_allclose(svm.history_["primal"], ref.history_["primal"], rtol=1e-6)
    np.testing.assert_allclose(svm.history_["dual"], ref.history_["dual"], rtol=1e-6,
                               atol=1e-12)


def test_protocol_multiclass_reaches_the_bcfw_optimum():
    X, y = multiclass(n=30)
    ref, _ = reference(X, y, 1.0)
    for solver in ("n_slack", "fw"):
        tol = 1e-4 if solver == "n_slack" else 1e-2
        svm = StructuredSVM(model=ProtocolMulticlass(), solver=solver, max_iter=5000,
                            tol=tol, check_every=1).fit(X, y)
        check_bracket(svm, tol, ref)


def test_n_slack_prunes_inactive_planes_and_keeps_the_optimum():
    X, y = small_data(seed=1, n=10)
    tol = 1e-3
    fits = {}
    for window, threshold in ((0, 0.0), (2, 0.0), (2, 1e-3)):
        svm = StructuredSVM(C=1.0, solver="n_slack", max_iter=2000, tol=tol, check_every=1,
                            solver_options={"inactive_window": window,
                                            "inactive_threshold": threshold}).fit(X, y)
        assert svm.history_["gap"][-1] <= tol
        sets = svm._solver.sets
        fits[window, threshold] = (svm.history_["primal"][-1], sum(ws.m for ws in sets))
        for ws in sets:
            # multipliers stay on each sample's simplex
            assert ws.alpha[:ws.m].min() >= 0.0
            assert ws.alpha[:ws.m].sum() == pytest.approx(1.0, abs=1e-12)
    kept = {k: v[1] for k, v in fits.items()}
    assert kept[2, 0.0] < kept[0, 0.0] and kept[2, 1e-3] <= kept[2, 0.0]
    for primal, _ in fits.values():
        assert primal == pytest.approx(fits[0, 0.0][0], abs=2 * tol)


class Lapsing(ProtocolChain):
    """A chain whose loss-augmented inference is exact for its first ``budget`` calls
    and then returns the truth: the hinges it reports from then on are zero, below the
    true ones, so the primal is underestimated while the dual keeps what the exact
    calls certified."""

    calls = 0
    budget = 0

    def loss_augmented_inference(self, x, y, w):
        Lapsing.calls += 1
        if Lapsing.calls > Lapsing.budget:
            return np.array(y, copy=True)
        return super().loss_augmented_inference(x, y, w)


# C at which the working set's slack is positive when the oracle lapses (a zero slack
# gives a zero gap)
@pytest.mark.parametrize("solver,C", [("bcfw", 1.0), ("fw", 1.0), ("one_slack", 0.1),
                                      ("n_slack", 1.0)])
def test_negative_gap_warns_and_stops_uncertified(solver, C):
    X, y = small_data(seed=5, n=8, max_len=4)
    Lapsing.calls, Lapsing.budget = 0, 6 * len(X)
    est = StructuredSVM(model=Lapsing(), solver=solver, C=C, max_iter=12, tol=1e-3,
                        check_every=1)
    with pytest.warns(ConvergenceWarning) as record:
        est.fit(X, y)
    messages = [str(r.message) for r in record]
    # one warning, saying the weights are not certified, and none about max_iter
    assert sum("certifies nothing" in m and "not certified" in m for m in messages) == 1
    assert not any("max_iter=12" in m for m in messages)
    assert est.n_iter_ < 12
    assert est.history_["gap"][-1] < -1e-6
    assert (est.history_["gap"][:-1] >= -1e-6).all()


def test_one_slack_short_of_tol_warns():
    X, y = small_data(n=10)
    with pytest.warns(ConvergenceWarning, match="max_iter=2 .*duality gap"):
        est = StructuredSVM(solver="one_slack", max_iter=2, tol=1e-9, check_every=1).fit(X, y)
    assert est.n_iter_ == 2 and est.history_["gap"][-1] > 1e-9


@pytest.mark.filterwarnings("ignore::sklearn.exceptions.ConvergenceWarning")
def test_one_slack_records_which_planes_came_from_the_cache():
    X, y = small_data(seed=2)
    est = StructuredSVM(solver="one_slack", max_iter=30, tol=0.0, check_every=0).fit(X, y)
    rec = est.cached_planes_
    sv = est._solver
    assert rec.dtype == bool and rec.shape == (est.n_iter_,)
    assert rec.sum() == sv.n_cached > 0 and not rec[0]
    no_cache = StructuredSVM(solver="one_slack", max_iter=10, tol=0.0, check_every=0,
                             solver_options={"inference_cache": 0}).fit(X, y)
    assert not no_cache.cached_planes_.any() and no_cache.cached_planes_.shape == (10,)
    # a cache tolerance above every violation: the cache is never used
    never = StructuredSVM(solver="one_slack", max_iter=10, tol=0.0, check_every=0,
                          solver_options={"cache_tol": 1e9}).fit(X, y)
    assert not never.cached_planes_.any()
    assert not hasattr(StructuredSVM(max_iter=2).fit(X, y), "cached_planes_")


def test_packed_sweeps_reach_the_joint_qp_optimum():
    # three blocks of planes; the joint QP max b.a - 1/(2 lam) ||sum a_j g_j||^2 over a
    # product of simplices, solved by scipy's SLSQP as the reference
    from scipy.optimize import minimize

    from skstruct.solvers._n_slack import qp_sweeps

    rng = np.random.RandomState(0)
    sizes = [3, 2, 4]
    dim, lam = 5, 0.3
    planes = rng.randn(sum(sizes), dim)
    b = rng.rand(sum(sizes))
    off = np.concatenate([[0], np.cumsum(sizes)]).astype(np.int64)
    goff = np.concatenate([[0], np.cumsum(np.square(sizes))]).astype(np.int64)
    gram = np.concatenate([(planes[s:e] @ planes[s:e].T).ravel()
                           for s, e in zip(off[:-1], off[1:])])
    alpha = np.zeros(sum(sizes))
    alpha[off[:-1]] = 1.0
    v = alpha @ planes
    qp_iter = np.zeros(3, dtype=np.int64)
    sweeps = qp_sweeps(planes, off, gram, goff, b, alpha, v, lam, 1e-12, 0.0, 10000,
                       qp_iter)

    def neg_dual(a):
        return -(b @ a - 0.5 / lam * np.sum((a @ planes) ** 2))

    cons = [{"type": "eq", "fun": (lambda a, s=s, e=e: a[s:e].sum() - 1.0)}
            for s, e in zip(off[:-1], off[1:])]
    ref = minimize(neg_dual, np.full(sum(sizes), 0.4), method="SLSQP", constraints=cons,
                   bounds=[(0, 1)] * sum(sizes), options={"ftol": 1e-14, "maxiter": 1000})
    assert 1 <= sweeps < 10000 and qp_iter.sum() > 0
    np.testing.assert_allclose(v, alpha @ planes, atol=1e-12)
    for s, e in zip(off[:-1], off[1:]):
        assert abs(alpha[s:e].sum() - 1.0) < 1e-12 and alpha[s:e].min() >= 0.0
    np.testing.assert_allclose(-neg_dual(alpha), -ref.fun, rtol=1e-8)
