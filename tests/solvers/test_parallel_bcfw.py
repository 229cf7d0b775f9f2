"""BCFW on threads (CoCoA+'s rounds over partitions of the samples) against the
sequential BCFW on the same objective."""

import numpy as np
import pytest

from skstruct import StructuredSVM
from skstruct.exceptions import InvalidParameterError
from skstruct.solvers import BCFW, ParallelBCFW
from tests.protocol_models import ProtocolChain
from tests.solvers.test_distributed_rounds import _design, _solver


def _run(solver, n_pass, seed=0):
    rng = np.random.default_rng(seed)
    duals = []
    for _ in range(n_pass):
        solver.run_pass(rng.permutation(solver.n_samples).astype(np.int64))
        duals.append(solver.objective()[1])
    return np.array(duals)


@pytest.mark.parametrize("case", ["graphs", "chains"])
@pytest.mark.parametrize("k", [2, 3])
def test_rounds_reach_the_optimum_of_sequential_bcfw(case, k):
    design = _design(case)
    seq = _solver(BCFW, design)
    par = _solver(ParallelBCFW, design, parallel_blocks=k, n_jobs=2)
    _run(seq, 200)
    duals = _run(par, 200)
    p_seq, d_seq, g_seq = seq.objective()
    p_par, d_par, g_par = par.objective()
    # the line search along the summed moves never lowers the dual
    assert np.all(np.diff(duals) >= -1e-12 * np.abs(duals[1:]))
    # weak duality, also across the two solvers: each primal bounds the other's dual
    assert g_seq >= -1e-12 and g_par >= -1e-12
    assert d_par <= p_seq + 1e-12 and d_seq <= p_par + 1e-12
    # both near the one optimum p*, which lies within each one's certificate
    assert g_par < 5e-2 * abs(p_par) and g_seq < 5e-2 * abs(p_seq)
    assert abs(p_par - p_seq) <= max(g_seq, g_par) + 1e-12
    # lambda / 2 ||w - w*||^2 <= gap (strong convexity): the weights agree within that
    W_seq, P_seq = seq.weights()
    W_par, P_par = par.weights()
    dist = np.sqrt(np.sum((W_par - W_seq) ** 2) + np.sum((P_par - P_seq) ** 2))
    bound = np.sqrt(2.0 * g_seq / seq.lam) + np.sqrt(2.0 * g_par / seq.lam)
    assert dist <= bound + 1e-9, (dist, bound)


def test_rounds_do_not_depend_on_the_thread_count():
    design = _design("graphs")
    one = _solver(ParallelBCFW, design, parallel_blocks=3, n_jobs=1)
    two = _solver(ParallelBCFW, design, parallel_blocks=3, n_jobs=2)
    np.testing.assert_array_equal(_run(one, 5), _run(two, 5))
    for a, b in zip(one.weights(), two.weights()):
        np.testing.assert_array_equal(a, b)


def test_estimator_option_and_its_errors():
    rng = np.random.default_rng(3)
    X = [rng.normal(size=(int(rng.integers(2, 6)), 3)) for _ in range(30)]
    y = [rng.integers(0, 3, len(x)) for x in X]
    kw = dict(C=1.0, max_iter=200, tol=0.0, random_state=0, check_every=5)
    seq = StructuredSVM(**kw).fit(X, y)
    par = StructuredSVM(solver_options={"parallel_blocks": 2}, n_jobs=2, **kw).fit(X, y)
    assert isinstance(par._solver, ParallelBCFW) and isinstance(seq._solver, BCFW)
    (p_seq, g_seq), (p_par, g_par) = ((e.history_["primal"][-1], e.history_["gap"][-1])
                                      for e in (seq, par))
    assert 0.0 <= g_par < 5e-2 * p_par and 0.0 <= g_seq < 5e-2 * p_seq
    assert abs(p_par - p_seq) <= max(g_seq, g_par)
    for bad in (0, 1.5, "two"):
        with pytest.raises(InvalidParameterError, match="parallel_blocks"):
            StructuredSVM(solver_options={"parallel_blocks": bad}).fit(X, y)
    with pytest.raises(InvalidParameterError, match="parallel_blocks.*built-in model"):
        StructuredSVM(model=ProtocolChain(), max_iter=2,
                      solver_options={"parallel_blocks": 2}).fit(X, y)


def test_warm_start_continues_from_the_previous_rounds():
    rng = np.random.default_rng(4)
    X = [rng.normal(size=(int(rng.integers(2, 6)), 3)) for _ in range(20)]
    y = [rng.integers(0, 3, len(x)) for x in X]
    est = StructuredSVM(C=1.0, max_iter=5, tol=0.0, check_every=1, average=False,
                        warm_start=True, random_state=0, solver_options={"parallel_blocks": 2})
    first = est.fit(X, y).history_["dual"].copy()
    second = est.fit(X, y).history_["dual"]
    # the dual never falls along the rounds, across the two fits too
    duals = np.concatenate([first, second])
    assert np.all(np.diff(duals) >= -1e-12 * np.abs(duals[1:]))
    assert second[-1] > first[-1]
    assert est.n_iter_ == 10
