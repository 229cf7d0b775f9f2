"""CRF: its objective against brute-force enumeration, the same fit as NonLocalCRF
without an energy, warm starts, the convergence warning, sklearn citizenship,
persistence and dask Bags."""

import inspect
import itertools
import pickle
import warnings

import numpy as np
import pytest
from scipy.special import logsumexp
from sklearn.base import clone
from sklearn.model_selection import GridSearchCV

import skstruct
from skstruct import CRF, NonLocalCRF
from skstruct._core._warnings import ConvergenceWarning
from skstruct.models import ChainModel, GraphModel, HiddenStatesModel
from tests.sklearn_checks import PARAMETER_CHECKS, run_check
from tests.test_partial_labels import chain_data, hide


def chains(seed=0, n=10, F=3, K=3, max_len=5):
    rng = np.random.default_rng(seed)
    X = [rng.normal(size=(int(rng.integers(1, max_len + 1)), F)) for _ in range(n)]
    y = [rng.integers(0, K, len(x)) for x in X]
    for k in range(K):
        y[k][0] = k
    return X, y


def trees(seed=0, n=8, F=2, K=2):
    rng = np.random.default_rng(seed)
    shapes = [np.array([[0, 1], [1, 2], [1, 3]]), np.array([[0, 1], [0, 2]]),
              np.array([[0, 1], [2, 3]])]                       # the last one a forest
    X, y = [], []
    for i in range(n):
        e = shapes[i % len(shapes)]
        N = int(e.max()) + 1
        X.append((rng.normal(size=(N, F)), e))
        y.append(rng.integers(0, K, N))
    y[0][:2] = [0, 1]
    return X, y


def brute_objective(X, y, W, P, C, classes):
    """``C * sum_i -log p(y_i | x_i) + ||w||^2 / 2`` by enumerating every labelling of
    every chain (one transition table); a ``None`` label is marginalised."""
    K = len(classes)
    index = {c: k for k, c in enumerate(classes.tolist())}
    total = 0.0
    for x, lab in zip(X, y):
        T = len(x)
        scores, agree = [], []
        for z in itertools.product(range(K), repeat=T):
            scores.append(sum(x[t] @ W[:, z[t]] for t in range(T))
                          + sum(P[0, z[t], z[t + 1]] for t in range(T - 1)))
            agree.append(all(v is None or index[v] == z[t] for t, v in enumerate(lab)))
        scores = np.array(scores)
        total += logsumexp(scores) - logsumexp(scores[np.array(agree)])
    return C * total + 0.5 * (np.sum(W * W) + np.sum(P * P))


# ------------------------------------------------------------------ the objective
@pytest.mark.parametrize("partial", [False, True])
def test_fitted_objective_is_the_enumerated_likelihood_at_a_stationary_point(partial):
    X, y = chains(1, n=6, max_len=4)
    if partial:
        y = [np.array(lab, dtype=object) for lab in y]
        y[3][0] = None
        y[5][-1] = None
    C = 0.7
    crf = CRF(C=C, max_iter=500, tol=1e-14).fit(X, y)
    W = crf.coef_[:3 * 3].reshape(3, 3)            # (features, classes)
    P = crf.pairwise_coef_
    f_ref = brute_objective(X, y, W, P, C, crf.classes_)
    assert np.isclose(crf.history_["objective"][-1], f_ref, rtol=1e-10)
    # the gradient of the enumerated objective vanishes at the fitted weights
    eps = 1e-5
    w = crf.coef_

    def f(v):
        return brute_objective(X, y, v[:9].reshape(3, 3), v[9:].reshape(1, 3, 3), C,
                               crf.classes_)

    grad = np.array([(f(w + eps * e) - f(w - eps * e)) / (2 * eps) for e in np.eye(w.size)])
    assert np.max(np.abs(grad)) < 1e-4
    assert np.max(np.abs(w)) > 0.05                # a non-trivial optimum


def test_the_optimum_is_a_minimum_of_the_enumerated_objective():
    X, y = chains(2, n=5, max_len=3)
    crf = CRF(C=2.0, max_iter=500, tol=1e-14).fit(X, y)
    w = crf.coef_
    rng = np.random.default_rng(0)

    def f(v):
        return brute_objective(X, y, v[:9].reshape(3, 3), v[9:].reshape(1, 3, 3), 2.0,
                               crf.classes_)

    f0 = f(w)
    assert all(f(w + 0.01 * rng.normal(size=w.size)) > f0 for _ in range(5))


# ------------------------------------------------- the same fit as NonLocalCRF
def _same_fit(a, b, X):
    np.testing.assert_array_equal(a.coef_, b.coef_)
    np.testing.assert_array_equal(a.history_["objective"], b.history_["objective"])
    assert a.n_iter_ == b.n_iter_
    np.testing.assert_array_equal(a.classes_, b.classes_)
    for p, q in zip(a.predict(X), b.predict(X)):
        np.testing.assert_array_equal(p, q)
    for p, q in zip(a.predict_marginals(X), b.predict_marginals(X)):
        np.testing.assert_array_equal(p, q)


@pytest.mark.parametrize("data, params", [
    ("chains", dict(C=0.5, max_iter=200, tol=1e-10)),
    ("chains", dict(C=0.5, max_iter=200, tol=1e-10, feature_pairs="seen")),
    ("chains", dict(C=0.5, solver="sgd", max_iter=5, batch_size=3, random_state=0)),
    ("trees", dict(C=1.0, max_iter=200, tol=1e-10)),
    ("partial", dict(C=1.0, max_iter=200, tol=1e-10)),
    ("hidden", dict(C=1.0, max_iter=100, tol=1e-10, random_state=0,
                    model=HiddenStatesModel(ChainModel(), n_states_per_label=2))),
])
def test_crf_equals_nonlocal_crf_without_an_energy(data, params):
    if data == "chains" or data == "hidden":
        X, y = chains(3, n=12)
    elif data == "trees":
        X, y = trees(4)
    else:
        X, y = chain_data(seed=6)
        y = hide(y)
    a = CRF(**params).fit(X, y)
    b = NonLocalCRF(**params).fit(X, y)
    _same_fit(a, b, X)
    assert b.energy_ is None and b.psi_coef_ is None
    assert a.score(X, y if data != "partial" else chain_data(seed=6)[1]) == \
        b.score(X, y if data != "partial" else chain_data(seed=6)[1])
    if data == "trees":
        assert isinstance(a.model_, GraphModel)


def test_constraints_and_kbest_equal_nonlocal_crf():
    X, y = chains(5, n=10)
    a = CRF(C=1.0, max_iter=100).fit(X, y)
    b = NonLocalCRF(C=1.0, max_iter=100).fit(X, y)
    clamp = [{0: 2}] + [None] * (len(X) - 1)
    forbidden = [(0, 1)]
    for p, q in zip(a.predict(X, clamp=clamp, forbidden=forbidden),
                    b.predict(X, clamp=clamp, forbidden=forbidden)):
        np.testing.assert_array_equal(p, q)
    pa = a.predict(X, clamp=clamp, forbidden=forbidden)
    assert pa[0][0] == 2
    assert all(not np.any((p[:-1] == 0) & (p[1:] == 1)) for p in pa)
    ma = a.predict_marginals(X, clamp=clamp, forbidden=forbidden)
    mb = b.predict_marginals(X, clamp=clamp, forbidden=forbidden)
    for p, q in zip(ma, mb):
        np.testing.assert_array_equal(p, q)
    np.testing.assert_array_equal(ma[0][0], [0.0, 0.0, 1.0])
    ka, kb = a.predict_kbest(X[:3], 4), b.predict_kbest(X[:3], 4)
    for (la, sa), (lb, sb) in zip(ka, kb):
        np.testing.assert_array_equal(la, lb)
        np.testing.assert_array_equal(sa, sb)
        assert np.all(np.diff(sa) <= 0)


def test_cycles_are_refused_naming_the_sample():
    X, y = trees(7, n=3)
    X.append((np.zeros((3, 2)), np.array([[0, 1], [1, 2], [2, 0]])))
    y.append(np.zeros(3, int))
    with pytest.raises(ValueError, match="sample 3 has a cycle: CRF needs chains or trees"):
        CRF().fit(X, y)


def test_marginalising_needs_lbfgs_and_all_pairs():
    X, y = chain_data(seed=6)
    for kw, why in ((dict(solver="sgd"), "solver='lbfgs'"),
                    (dict(feature_pairs="seen"), "feature_pairs='all'")):
        with pytest.raises(ValueError, match=f"CRF marginalises the unobserved states with "
                                             f"{why}"):
            CRF(**kw).fit(X, hide(y))


# ------------------------------------------------------------------ warm starts
def test_warm_start_continues_to_the_same_optimum_in_fewer_iterations():
    X, y = chains(8, n=20)
    cold = CRF(C=1.0, max_iter=500, tol=1e-10).fit(X, y)
    est = CRF(C=1.0, max_iter=500, tol=1e-10, warm_start=True).fit(X, y)
    np.testing.assert_array_equal(est.coef_, cold.coef_)    # no previous fit: from zero
    first = est.coef_.copy()
    est.set_params(C=1.05).fit(X, y)                     # a neighbouring problem
    ref = CRF(C=1.05, max_iter=500, tol=1e-10).fit(X, y)
    assert est.n_iter_ < ref.n_iter_
    np.testing.assert_allclose(est.coef_, ref.coef_, atol=1e-4)
    assert not np.allclose(est.coef_, first, atol=1e-4)
    assert est.history_["objective"][-1] <= ref.history_["objective"][-1] + 1e-8
    # the first objective of a warm fit is already near the optimum
    assert est.history_["objective"][0] < ref.history_["objective"][0]


def test_warm_start_from_a_stopped_fit_reaches_the_cold_optimum():
    X, y = chains(9, n=20)
    ref = CRF(C=1.0, max_iter=500, tol=1e-12).fit(X, y)
    est = CRF(C=1.0, max_iter=3, tol=1e-12, warm_start=True)
    with pytest.warns(ConvergenceWarning):
        est.fit(X, y)
    est.set_params(max_iter=500).fit(X, y)
    np.testing.assert_allclose(est.coef_, ref.coef_, atol=1e-5)
    assert est.n_iter_ < ref.n_iter_


def test_warm_start_with_seen_pairs_keeps_unseen_weights_at_zero():
    X, y = chains(10, n=20)
    for x, lab in zip(X, y):
        x[lab != 0, 2] = 0.0          # feature 2 is seen with class 0 only
    est = CRF(max_iter=500, tol=1e-12, feature_pairs="seen", warm_start=True).fit(X, y)
    again = clone(est).set_params(warm_start=False).fit(X, y)
    est.fit(X, y)
    assert est.n_iter_ < again.n_iter_
    np.testing.assert_allclose(est.coef_, again.coef_, atol=1e-5)
    assert np.all(est.unary_coef_[1:, 2] == 0) and np.all(est.unary_coef_[0, :] != 0)


def test_warm_start_refuses_another_layout():
    X, y = chains(11, n=12)
    est = CRF(max_iter=20, warm_start=True).fit(X, y)
    fewer = [lab % 2 for lab in y]
    # a warm start keeps the previous fit's classes (labels can only be added)
    assert est.fit(X, fewer).classes_.tolist() == [0, 1, 2]
    est = CRF(max_iter=20, warm_start=True).fit(X, y)
    words = [np.array(["a", "b", "c"])[lab] for lab in y]
    with pytest.raises(ValueError, match=r"warm_start=True.*classes are \['a', 'b', 'c'\], "
                                         r"the previous fit's \[0, 1, 2\].*warm_start=False"):
        est.fit(X, words)
    est = CRF(max_iter=20, warm_start=True).fit(X, y)
    with pytest.raises(ValueError, match=r"weights are node \(4, 3\).*\(3, 3\)"):
        est.fit([np.hstack([x, x[:, :1]]) for x in X], y)
    est = CRF(max_iter=20, warm_start=True).fit(X, y)
    graphs = [(x, np.c_[np.arange(len(x) - 1), np.arange(1, len(x))].reshape(-1, 2))
              for x in X]
    with pytest.raises(ValueError, match="the model is a GraphModel, the previous fit's a "
                                         "ChainModel"):
        est.fit(graphs, y)
    # without warm_start another layout is simply a new fit
    assert CRF(max_iter=20).fit(X, y).fit(X, fewer).classes_.tolist() == [0, 1]


# -------------------------------------------------------------- convergence warning
def test_convergence_warning_names_the_estimator_max_iter_and_gradient():
    X, y = chains(12, n=10)
    with pytest.warns(ConvergenceWarning, match=r"^CRF stopped after max_iter=1 iterations "
                                                r"short of its tolerance.*tol 1e-06.*"
                                                r"gradient norm is \d"):
        est = CRF(max_iter=1).fit(X, y)
    assert est.n_iter_ == 1
    with pytest.warns(ConvergenceWarning, match="NonLocalCRF stopped after max_iter=1 "):
        NonLocalCRF(max_iter=1).fit(X, y)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        CRF(max_iter=500, tol=1e-6).fit(X, y)
        CRF(solver="sgd", max_iter=2, random_state=0).fit(X, y)   # epochs, no tolerance


# ----------------------------------------------------------------- sklearn rules
def test_every_parameter_is_keyword_only():
    sig = inspect.signature(CRF.__init__)
    params = [p for p in sig.parameters.values() if p.name != "self"]
    assert params and all(p.kind is inspect.Parameter.KEYWORD_ONLY for p in params)
    assert {p.name for p in params} == {
        "model", "C", "l1_ratio", "solver", "solver_options", "max_iter", "tol",
        "feature_pairs", "warm_start", "learning_rate", "batch_size", "n_jobs",
        "random_state", "verbose"}
    with pytest.raises(TypeError):
        CRF("auto")
    # NonLocalCRF keeps every CRF parameter, with the same default
    nl = NonLocalCRF().get_params()
    assert all(nl[k] == v for k, v in CRF().get_params().items())
    assert "inference_method" in nl and "inference" not in nl


def test_sklearn_parameter_checks_and_search():
    for check in PARAMETER_CHECKS:
        run_check(check, CRF(C=0.5, max_iter=30), NonLocalCRF(C=0.5, max_iter=30))
    X, y = chains(13, n=24)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        search = GridSearchCV(CRF(max_iter=300), {"C": [0.1, 1.0]}, cv=3).fit(X, y)
    assert np.all(np.isfinite(search.cv_results_["mean_test_score"]))
    est = CRF(C=0.5)
    est.fit(X, y)
    assert est.get_params()["C"] == 0.5 and est.model == "auto"
    assert est.n_features_in_ == 3 and est.fit_seconds_ >= 0
    assert set(est.history_) == {"objective", "seconds"}
    assert est.history_["objective"].shape == (est.n_iter_,)


@pytest.mark.parametrize("params, match", [
    (dict(C=0), "C must be"), (dict(solver="newton"), "solver"),
    (dict(max_iter=0), "max_iter"), (dict(tol=-1.0), "tol"),
    (dict(feature_pairs="some"), "feature_pairs"), (dict(warm_start="yes"), "warm_start"),
    (dict(learning_rate=0.0), "learning_rate"), (dict(batch_size=0), "batch_size"),
    (dict(random_state="seed"), "random_state"), (dict(model="chain"), "model"),
])
def test_bad_parameters(params, match):
    X, y = chains(14, n=6)
    with pytest.raises(ValueError, match=match):
        CRF(**params).fit(X, y)


def test_bad_input_names_the_sample():
    X, y = chains(15, n=6)
    bad = list(X)
    bad[3] = bad[3].copy()
    bad[3][0, 0] = np.nan
    with pytest.raises(ValueError, match="sample 3"):
        CRF().fit(bad, y)


# --------------------------------------------------------------------- persistence
def test_exported_and_trusted():
    assert "CRF" in skstruct.__all__ and skstruct.CRF is CRF
    assert "skstruct._crf.CRF" in skstruct.trusted_types()


def test_pickle_and_skops_round_trip(tmp_path):
    X, y = chains(16, n=12)
    est = CRF(C=0.5, max_iter=50, feature_pairs="seen").fit(X, y)
    again = pickle.loads(pickle.dumps(est))
    np.testing.assert_array_equal(again.coef_, est.coef_)
    for p, q in zip(again.predict(X), est.predict(X)):
        np.testing.assert_array_equal(p, q)
    sio = pytest.importorskip("skops.io")
    path = tmp_path / "crf.skops"
    sio.dump(est, path)
    assert set(sio.get_untrusted_types(file=path)) <= set(skstruct.trusted_types())
    loaded = sio.load(path, trusted=skstruct.trusted_types())
    assert type(loaded) is CRF and repr(loaded) == repr(est)
    np.testing.assert_array_equal(loaded.pairwise_coef_, est.pairwise_coef_)
    for p, q in zip(loaded.predict_marginals(X), est.predict_marginals(X)):
        np.testing.assert_array_equal(p, q)


# --------------------------------------------------------------------- dask Bags
@pytest.mark.filterwarnings("ignore::DeprecationWarning")
def test_a_bag_fit_follows_the_local_fit():
    db = pytest.importorskip("dask.bag")
    distributed = pytest.importorskip("distributed")
    X, y = chain_data(seed=5, lengths=tuple(range(2, 9)) * 3, K=3, F=4)
    local = CRF(C=2.0, max_iter=15, tol=0.0)
    with pytest.warns(ConvergenceWarning):
        local.fit(X, y)
    with distributed.LocalCluster(n_workers=1, threads_per_worker=1, processes=False,
                                  dashboard_address=":0") as cluster, \
            distributed.Client(cluster):
        Xb, yb = db.from_sequence(X, npartitions=3), db.from_sequence(y, npartitions=3)
        dist = CRF(C=2.0, max_iter=15, tol=0.0)
        with pytest.warns(ConvergenceWarning, match="CRF stopped after max_iter=15 "):
            dist.fit(Xb, yb)
        assert dist.n_iter_ == local.n_iter_
        np.testing.assert_allclose(dist.history_["objective"], local.history_["objective"],
                                   rtol=1e-6)
        np.testing.assert_allclose(dist.coef_, local.coef_, rtol=1e-5, atol=1e-8)
        assert "bytes_sent" in dist.history_
        assert not hasattr(dist, "energy_")
        pred = dist.predict(Xb).compute()
        for p, q in zip(pred, local.predict(X)):
            np.testing.assert_array_equal(p, q)
        assert np.isclose(dist.score(Xb, yb), local.score(X, y))
        # a warm start on the Bag continues from the fitted weights
        cold = CRF(C=2.0, max_iter=200, tol=1e-10).fit(X, y)
        dist.set_params(warm_start=True, max_iter=200, tol=1e-10).fit(Xb, yb)
        np.testing.assert_allclose(dist.coef_, cold.coef_, atol=1e-4)
        assert dist.n_iter_ < cold.n_iter_
        with pytest.raises(ValueError, match="CRF on a dask Bag needs solver='lbfgs'"):
            CRF(solver="sgd").fit(Xb, yb)
