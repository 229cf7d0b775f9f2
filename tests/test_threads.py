"""``n_jobs`` governs every thread pool a fit or a prediction touches: numba's
(the compiled kernels), BLAS's (numpy's and scipy's linear algebra) and OpenMP's."""

import numba
import numpy as np
import pytest
from threadpoolctl import threadpool_info, threadpool_limits

from skstruct import (
    CRF,
    ApproxStructuredPredictor,
    LatentStructuredSVM,
    NonLocalCRF,
    StructuredPerceptron,
    StructuredSVM,
)
from skstruct._base import THREADED, _FitLog
from skstruct.inference import GraphBatch, _api, map_batch, marginals_batch, n_threads
from skstruct.models import ChainModel, HiddenStatesModel, _fastpath
from skstruct.models._base import DesignModel
from skstruct.solvers._crf import CRFObjective

POOL = numba.config.NUMBA_NUM_THREADS
needs_two = pytest.mark.skipif(POOL < 2, reason="numba's pool has one thread")


def pools():
    """numba's thread count for this thread, and the set of BLAS libraries' counts."""
    blas = {d["num_threads"] for d in threadpool_info() if d["user_api"] == "blas"}
    return numba.get_num_threads(), blas


@pytest.fixture
def busy_pools():
    """Every pool at two threads (or numba's pool size), as on an idle two-core machine;
    yields that state, and checks on the way out that nothing changed it."""
    old = numba.get_num_threads()
    numba.set_num_threads(min(2, POOL))
    with threadpool_limits(2, user_api="blas"):
        before = pools()
        assert before[1] == {2}
        yield before
        assert pools() == before
    numba.set_num_threads(old)


@pytest.fixture
def spy(monkeypatch):
    """Records ``(where, numba threads, BLAS threads)`` at the entry of the CRF's
    objective, of every model's design (fit and prediction), of every fit loop's
    iteration and of the inference runners."""
    seen = []

    def wrap(owner, name):
        original = getattr(owner, name)

        def recorded(*args, **kwargs):
            seen.append((name,) + pools())
            return original(*args, **kwargs)

        monkeypatch.setattr(owner, name, recorded)

    for owner, name in ((CRFObjective, "value_grad"), (DesignModel, "design"),
                        (HiddenStatesModel, "design"), (DesignModel, "fit_design"),
                        (_FitLog, "start"), (_fastpath, "chain_predict")):
        wrap(owner, name)
    runner = _api.runner

    def recorded_runner(kind, task):
        run = runner(kind, task)

        def go(*args, **kwargs):
            seen.append(("runner",) + pools())
            return run(*args, **kwargs)

        return go

    monkeypatch.setattr(_api, "runner", recorded_runner)
    return seen


def chains(seed=0, n=12, F=3, K=3):
    rng = np.random.default_rng(seed)
    X = [rng.normal(size=(int(rng.integers(2, 6)), F)) for _ in range(n)]
    y = [rng.integers(0, K, len(x)) for x in X]
    for k in range(K):
        y[k][0] = k
    return X, y


def test_crf_fit_with_one_job_keeps_numba_and_blas_on_one_thread(busy_pools, spy):
    X, y = chains()
    crf = CRF(max_iter=5, n_jobs=1).fit(X, y)
    assert {w for w, *_ in spy} >= {"value_grad", "fit_design"}
    assert all((n, blas) == (1, {1}) for _, n, blas in spy), spy
    # and a prediction's
    spy.clear()
    crf.predict(X)
    assert spy and all((n, blas) == (1, {1}) for _, n, blas in spy), spy


@needs_two
def test_crf_fit_with_two_jobs_gives_numba_two_threads_and_blas_one(busy_pools, spy):
    # BLAS's idle threads spin on the cores the kernels need: one thread for it
    X, y = chains()
    CRF(max_iter=5, n_jobs=2).fit(X, y)
    assert any(w == "value_grad" for w, *_ in spy)
    assert all((n, blas) == (2, {1}) for _, n, blas in spy), spy


def _latent():
    svm = StructuredSVM(model=HiddenStatesModel(ChainModel(), n_states_per_label=[2, 1, 1]),
                        max_iter=3, n_jobs=1)
    return LatentStructuredSVM(estimator=svm, max_iter=2, random_state=0)


ESTIMATORS = {
    "CRF": lambda: CRF(max_iter=3, n_jobs=1),
    "NonLocalCRF": lambda: NonLocalCRF(max_iter=3, n_jobs=1),
    "StructuredSVM": lambda: StructuredSVM(max_iter=3, n_jobs=1),
    "ApproxStructuredPredictor": lambda: ApproxStructuredPredictor(max_iter=2, n_jobs=1),
    "StructuredPerceptron": lambda: StructuredPerceptron(max_iter=2, n_jobs=1),
    "LatentStructuredSVM": _latent,
}


@pytest.mark.parametrize("name", list(ESTIMATORS))
def test_every_estimator_method_runs_inside_its_thread_setting(name, busy_pools, spy):
    X, y = chains(1)
    est = ESTIMATORS[name]()
    assert est.n_jobs == 1
    calls = [("fit", lambda: est.fit(X, y)), ("predict", lambda: est.predict(X)),
             ("predict_marginals", lambda: est.predict_marginals(X)),
             ("score", lambda: est.score(X, y))]
    for method, call in calls:
        spy.clear()
        call()
        assert spy, f"{name}.{method} reached no recorded entry point"
        assert all((n, blas) == (1, {1}) for _, n, blas in spy), (method, spy)
        assert pools() == busy_pools
    # every public method that does work is wrapped, the inherited ones included
    for method in THREADED:
        if hasattr(type(est), method):
            assert getattr(getattr(type(est), method), "_threaded", False), method


@pytest.mark.parametrize("n_jobs", [1, pytest.param(2, marks=needs_two)])
def test_batched_inference_runs_inside_its_thread_setting(n_jobs, busy_pools, spy):
    rng = np.random.default_rng(0)
    batch = GraphBatch.from_chains([4, 3, 5])
    unary, pairwise = rng.normal(size=(12, 3)), rng.normal(size=(3, 3))
    map_batch(batch, unary, pairwise, n_jobs=n_jobs)
    marginals_batch(batch, unary, pairwise, n_jobs=n_jobs)
    assert len(spy) == 2
    assert all((n, blas) == (n_jobs, {1}) for _, n, blas in spy), spy


@needs_two
def test_n_threads_nests_restores_and_resolves_none(busy_pools):
    from joblib import parallel_config

    with n_threads(None):
        # None: numba's current setting; BLAS on one thread
        assert pools() == (2, {1})
        with n_threads(1):
            assert pools() == (1, {1})
            with n_threads(None):       # inherits the enclosing count
                assert pools() == (1, {1})
            with pytest.raises(RuntimeError):
                with n_threads(-1):
                    assert pools() == (2, {1})
                    raise RuntimeError
            assert pools() == (1, {1})
        assert pools() == (2, {1})
    assert pools() == busy_pools
    # an enclosing joblib.parallel_config's n_jobs is scikit-learn's meaning of None
    with parallel_config(n_jobs=1):
        with n_threads(None):
            assert pools() == (1, {1})
    assert pools() == busy_pools
    with pytest.raises(ValueError, match="n_jobs"):
        n_threads(0)
