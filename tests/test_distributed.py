"""Fitting and predicting on a dask cluster (a LocalCluster of two worker processes on
loopback): the distributed fit against the local fit on the same data."""

import pickle

import numpy as np
import pytest
from sklearn.model_selection import GridSearchCV

from skstruct import NonLocalCRF, StructuredSVM
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

    from skstruct import distributed as skd

    monkeypatch.setitem(sys.modules, "distributed", None)
    with pytest.raises(ImportError, match=r"skstruct\[dask\]"):
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


def test_bad_bags_and_unsupported_settings(client):
    X, y = data()
    Xb, yb = bags(X, y, 3)
    with pytest.raises(ValueError, match="y must be one too"):
        NonLocalCRF(max_iter=2).fit(Xb, y)
    with pytest.raises(ValueError, match="partitions"):
        NonLocalCRF(max_iter=2).fit(Xb, db.from_sequence(y, npartitions=2))
    with pytest.raises(ValueError, match="energy=None"):
        NonLocalCRF(max_iter=2, energy=NearestStatistic()).fit(Xb, yb)
    with pytest.raises(ValueError, match="NonLocalCRF without an energy only"):
        StructuredSVM(max_iter=2).fit(Xb, yb)
    with pytest.raises(ValueError, match="fully labelled"):
        NonLocalCRF(max_iter=2).fit(Xb, db.from_sequence(hide(y[:1], [[0]]) + y[1:],
                                                          npartitions=3))


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
