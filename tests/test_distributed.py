"""Fitting and predicting on a dask cluster (a LocalCluster of two worker processes on
loopback): the distributed fit against the local fit on the same data."""

import os
import pickle
import signal

import numpy as np
import pytest
from sklearn.model_selection import GridSearchCV

from skstruct import ApproxStructuredPredictor, LatentStructuredSVM, NonLocalCRF, StructuredSVM
from skstruct.energies import NearestStatistic
from tests.test_partial_labels import chain_data, hide

db = pytest.importorskip("dask.bag")
distributed = pytest.importorskip("distributed")

LENGTHS = tuple(int(n) for n in np.random.default_rng(3).integers(2, 9, 60))


def data():
    return chain_data(seed=5, lengths=LENGTHS, K=3, F=4)


def bags(X, y, npartitions=5):
    return db.from_sequence(X, npartitions=npartitions), db.from_sequence(y,
                                                                          npartitions=npartitions)


def test_a_bag_without_a_client_is_refused():
    # first in the file: the module's cluster does not exist yet
    X, y = data()
    with pytest.raises(ValueError, match="no dask.distributed Client"):
        NonLocalCRF(max_iter=3).fit(*bags(X, y))


def test_without_dask_the_error_names_the_extra(monkeypatch):
    import sys

    from skstruct.distributed import _transport as skd

    monkeypatch.setitem(sys.modules, "distributed", None)
    with pytest.raises(ImportError, match=r"the dask extra \(python -m pip install \"\.\[dask\]\""):
        skd._dask()


@pytest.fixture(scope="module")
def client():
    # compile (or load) the kernels once in this process: the workers read the cache
    X, y = data()
    NonLocalCRF(max_iter=2).fit(X, y).predict_marginals(X)
    with distributed.LocalCluster(n_workers=2, threads_per_worker=1, processes=True,
                                  host="127.0.0.1", dashboard_address=None) as cluster, \
            distributed.Client(cluster) as c:
        yield c


@pytest.mark.parametrize("npartitions", [1, 4, 7])
def test_distributed_lbfgs_follows_the_local_fit(client, npartitions):
    """The same objective at every iteration (to 1e-6 relative) and the same weights:
    the partitions' sums are the local objective's."""
    X, y = data()
    local = NonLocalCRF(C=2.0, max_iter=25, tol=0.0).fit(X, y)
    dist = NonLocalCRF(C=2.0, max_iter=25, tol=0.0).fit(*bags(X, y, npartitions))
    assert dist.n_iter_ == local.n_iter_
    np.testing.assert_allclose(dist.history_["objective"], local.history_["objective"],
                               rtol=1e-6)
    np.testing.assert_allclose(dist.coef_, local.coef_, rtol=1e-5, atol=1e-8)
    np.testing.assert_array_equal(dist.classes_, local.classes_)
    assert dist.n_features_in_ == local.n_features_in_


def test_the_fitted_estimator_is_an_ordinary_one(client):
    X, y = data()
    dist = NonLocalCRF(C=1.0, max_iter=10).fit(*bags(X, y))
    assert isinstance(dist.coef_, np.ndarray)
    again = pickle.loads(pickle.dumps(dist))
    pred = again.predict(X)
    assert all(np.array_equal(a, b) for a, b in zip(pred, dist.predict(X)))


def test_predict_marginals_and_score_on_a_bag(client):
    X, y = data()
    est = NonLocalCRF(C=1.0, max_iter=15).fit(X, y)
    Xb, yb = bags(X, y, 3)
    pred = est.predict(Xb)
    assert isinstance(pred, db.Bag)
    got = pred.compute()
    assert len(got) == len(X)
    assert all(np.array_equal(a, b) for a, b in zip(got, est.predict(X)))
    marg = est.predict_marginals(Xb).compute()
    for a, b in zip(marg, est.predict_marginals(X)):
        np.testing.assert_allclose(a, b)
    assert est.score(Xb, yb) == pytest.approx(est.score(X, y), rel=1e-12)
    svm = StructuredSVM(C=1.0, max_iter=20, random_state=0).fit(X, y)
    assert svm.score(Xb, yb) == pytest.approx(svm.score(X, y), rel=1e-12)
    # a clamp per sample is split along the partitions; forbidden pairs go whole
    clamp = [{0: lab[0]} if i % 3 == 0 else None for i, lab in enumerate(y)]
    forbidden = [(est.classes_[0], est.classes_[1])]
    got = est.predict(Xb, clamp=clamp, forbidden=forbidden).compute()
    want = est.predict(X, clamp=clamp, forbidden=forbidden)
    assert all(np.array_equal(a, b) for a, b in zip(got, want))
    with pytest.raises(ValueError, match="one entry per sample of the Bag"):
        est.predict(Xb, clamp=clamp[:-1])


def test_bad_bags_and_unsupported_settings(client):
    X, y = data()
    Xb, yb = bags(X, y, 3)
    with pytest.raises(ValueError, match="y must be one too"):
        NonLocalCRF(max_iter=2).fit(Xb, y)
    with pytest.raises(ValueError, match="partitions"):
        NonLocalCRF(max_iter=2).fit(Xb, db.from_sequence(y, npartitions=2))
    # as many partitions, but not alike: no sample may be dropped silently
    y_shifted = db.from_sequence(y, partition_size=25)
    assert y_shifted.npartitions == 3
    with pytest.raises(ValueError, match=r"partition \d holds 20 samples in X but (25|10) label"):
        NonLocalCRF(max_iter=2).fit(Xb, y_shifted)
    with pytest.raises(ValueError, match=r"partition \d holds 20 samples in X but (25|10) label"):
        NonLocalCRF(max_iter=2).fit(X, y).score(Xb, y_shifted)
    with pytest.raises(ValueError, match="energy=None"):
        NonLocalCRF(max_iter=2, energy=NearestStatistic()).fit(Xb, yb)
    with pytest.raises(ValueError, match="solver='bcfw'"):
        StructuredSVM(max_iter=2, solver="one_slack").fit(Xb, yb)
    with pytest.raises(ValueError, match="warm_start"):
        StructuredSVM(max_iter=2, warm_start=True).fit(Xb, yb)
    with pytest.raises(ValueError, match="warm_start"):
        ApproxStructuredPredictor(max_iter=2, warm_start=True).fit(Xb, yb)
    with pytest.raises(ValueError, match="balanced"):
        ApproxStructuredPredictor(max_iter=2, class_weight="balanced").fit(Xb, yb)
    with pytest.raises(ValueError, match="supported by CRF, NonLocalCRF without an energy, "):
        LatentStructuredSVM(estimator=StructuredSVM(), max_iter=2).fit(Xb, yb)
    # an unknown label deep in a partition: the error names the partition and the sample
    y_bad = list(y)
    y_bad[21] = hide([y[21]], [[0]])[0]
    with pytest.raises(ValueError, match=r"partition 1: sample 1: node 0 has an unknown"):
        NonLocalCRF(max_iter=2).fit(Xb, db.from_sequence(y_bad, npartitions=3))
    with pytest.raises(ValueError, match=r"partition 1: sample 1: node 0 has an unknown label"):
        y_bad = list(y)
        y_bad[21] = hide([y[21]], [[0]])[0]
        ApproxStructuredPredictor(max_iter=2).fit(Xb, db.from_sequence(y_bad, npartitions=3))
    with pytest.raises(ValueError, match="fully labelled"):
        NonLocalCRF(max_iter=2).fit(Xb, db.from_sequence(hide(y[:1], [[0]]) + y[1:],
                                                          npartitions=3))


@pytest.mark.parametrize("settings", [
    dict(epsilon=1.0, counting_numbers="bethe", loss=None),      # a CRF; trial sweeps
    dict(epsilon=0.1, counting_numbers="convex", C=0.5),
])
def test_distributed_primal_dual_follows_the_local_fit(client, settings):
    """Messages on the workers, the step on the client: the local fit's objective at
    every iteration, its iteration count and weights."""
    X, y = data()
    local = ApproxStructuredPredictor(max_iter=20, tol=0.0, **settings).fit(X, y)
    dist = ApproxStructuredPredictor(max_iter=20, tol=0.0, **settings).fit(*bags(X, y, 4))
    assert dist.n_iter_ == local.n_iter_ == 20
    np.testing.assert_allclose(dist.history_["objective"], local.history_["objective"],
                               rtol=1e-6)
    np.testing.assert_allclose(dist.coef_, local.coef_, rtol=1e-5, atol=1e-7)
    assert np.all(dist.history_["bytes_sent"] > 0)


def test_distributed_primal_dual_on_grids(client):
    """Loopy graphs (one sweep direction per iteration, alternating on every worker as
    locally)."""
    from skstruct.datasets import make_binary_denoising

    g = make_binary_denoising(6, 12, noise=1.0, random_state=0)
    X, y = list(g.X), list(g.y)
    settings = dict(epsilon=0.5, counting_numbers="trw", max_iter=15, tol=0.0)
    local = ApproxStructuredPredictor(**settings).fit(X, y)
    dist = ApproxStructuredPredictor(**settings).fit(*bags(X, y, 3))
    np.testing.assert_allclose(dist.history_["objective"], local.history_["objective"],
                               rtol=1e-6)


@pytest.mark.parametrize("average", [False, True])
def test_distributed_subgradient_takes_the_local_steps(client, average):
    """The same mini-batches (drawn by the client as the local fit draws them), their
    oracles on the workers, the step on the client: the local primal at every pass."""
    X, y = data()
    settings = dict(solver="subgradient", batch_size=8, shuffle=True, max_iter=6,
                    check_every=1, average=average, random_state=0, C=2.0)
    local = StructuredSVM(**settings).fit(X, y)
    dist = StructuredSVM(**settings).fit(*bags(X, y, 3))
    np.testing.assert_allclose(dist.history_["primal"], local.history_["primal"], rtol=1e-6)
    np.testing.assert_allclose(dist.coef_, local.coef_, rtol=1e-6, atol=1e-9)


def test_parallel_bcfw_on_one_partition_is_the_sequential_solver(client):
    X, y = data()
    settings = dict(solver="bcfw", C=1.0, max_iter=30, check_every=5, random_state=0,
                    tol=0.0, average=False)
    seq = StructuredSVM(**settings).fit(X, y)
    par = StructuredSVM(**settings).fit(*bags(X, y, 1))
    for key in ("primal", "dual"):
        np.testing.assert_allclose(par.history_[key], seq.history_[key], rtol=1e-6)


def test_parallel_bcfw_brackets_the_sequential_optimum(client):
    """The parallel variant's dual never decreases, and its certified interval [dual,
    primal] and the sequential solver's both contain the optimum: they overlap, and
    each is within 2% of it."""
    X, y = data()
    settings = dict(solver="bcfw", C=1.0, max_iter=250, check_every=10, random_state=0,
                    tol=0.0, average=False)
    seq = StructuredSVM(**settings).fit(X, y)
    par = StructuredSVM(**settings).fit(*bags(X, y, 4))
    dual = par.history_["dual"]
    assert np.all(np.diff(dual) >= -1e-9 * abs(dual[-1]))
    lo = max(seq.history_["dual"][-1], dual[-1])
    hi = min(seq.history_["primal"][-1], par.history_["primal"][-1])
    assert lo <= hi + 1e-9
    for est in (seq, par):
        assert est.history_["gap"][-1] <= 0.02 * est.history_["primal"][-1]


def test_grid_search_on_the_cluster(client):
    """GridSearchCV under joblib's dask backend: the estimators travel to the workers
    and back, and choose as the local search does."""
    import joblib

    X, y = data()
    grid = {"C": [0.01, 1.0]}
    local = GridSearchCV(NonLocalCRF(max_iter=20), grid, cv=3).fit(X, y)
    with joblib.parallel_backend("dask"):
        dist = GridSearchCV(NonLocalCRF(max_iter=20), grid, cv=3, n_jobs=2).fit(X, y)
    assert dist.best_params_ == local.best_params_
    np.testing.assert_allclose(dist.cv_results_["mean_test_score"],
                               local.cv_results_["mean_test_score"], rtol=1e-9)


# ------------------------------------------------------- losing a worker (runs last: the
# cluster's nannies restart the killed worker, on a new address)
def kill_at(round_, partition=0):
    """A hook that kills, after round ``round_``, the worker process holding
    ``partition``'s state (SIGKILL: no goodbye to the scheduler)."""
    seen = {}

    def hook(workers):
        seen["workers"] = workers
        if workers.n_rounds == round_:
            where = workers.where[partition]
            pid = workers.client.run(os.getpid, workers=[where])[where]
            os.kill(pid, signal.SIGKILL)
            seen["killed"] = where
    return hook, seen


@pytest.fixture
def lose_a_worker(monkeypatch):
    from skstruct.distributed import _transport as skd

    monkeypatch.setattr(skd, "_PATIENCE", 0.5)

    def arm(round_):
        hook, seen = kill_at(round_)
        monkeypatch.setattr(skd, "_after_call", hook)
        return seen
    return arm


def test_a_lost_worker_does_not_change_the_crf(client, lose_a_worker):
    """Its partitions are recomputed from the Bag's graph and packed again elsewhere;
    the L-BFGS iterates do not notice."""
    X, y = data()
    local = NonLocalCRF(C=2.0, max_iter=25, tol=0.0).fit(X, y)
    seen = lose_a_worker(6)
    dist = NonLocalCRF(C=2.0, max_iter=25, tol=0.0).fit(*bags(X, y, 4))
    assert "killed" in seen and seen["workers"].restarts >= 1
    np.testing.assert_allclose(dist.history_["objective"], local.history_["objective"],
                               rtol=1e-6)


def test_a_lost_worker_restarts_its_messages(client, lose_a_worker):
    """The messages of the lost partitions start again from zero; the fit converges to
    the local fit's optimum (convex counting numbers: one optimum)."""
    X, y = data()
    settings = dict(epsilon=1.0, counting_numbers="convex", max_iter=300, tol=1e-10)
    local = ApproxStructuredPredictor(**settings).fit(X, y)
    seen = lose_a_worker(8)
    dist = ApproxStructuredPredictor(**settings).fit(*bags(X, y, 4))
    assert "killed" in seen and seen["workers"].restarts >= 1
    assert dist.history_["objective"][-1] == pytest.approx(local.history_["objective"][-1],
                                                           rel=1e-6)


def test_a_lost_worker_keeps_the_weights_the_sum_of_the_blocks(client, lose_a_worker):
    """The lost partitions' dual blocks are reset to 0 and their share taken out of the
    weights: the dual stays a valid lower bound, and the fit still brackets the
    sequential optimum."""
    X, y = data()
    settings = dict(solver="bcfw", C=1.0, max_iter=250, check_every=10, random_state=0,
                    tol=0.0, average=False)
    seq = StructuredSVM(**settings).fit(X, y)
    seen = lose_a_worker(40)
    par = StructuredSVM(**settings).fit(*bags(X, y, 4))
    assert "killed" in seen and seen["workers"].restarts >= 1
    assert max(seq.history_["dual"][-1], par.history_["dual"][-1]) <= min(
        seq.history_["primal"][-1], par.history_["primal"][-1]) + 1e-9
    assert par.history_["gap"][-1] <= 0.02 * par.history_["primal"][-1]
