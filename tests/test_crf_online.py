"""The CRF's online solvers through the estimator: against StructuredPerceptron (an
independent implementation), partial_fit, label growth and warm starts."""

import pickle
import warnings

import numpy as np
import pytest

from skstruct import CRF, StructuredPerceptron
from skstruct._core._warnings import ConvergenceWarning
from tests.test_crf import chains, trees

ONLINE = ["l2sgd", "perceptron", "pa", "arow"]


def _separable(seed=0, n=40, K=3, F=6):
    """Chains whose label is a one-hot feature of the node: learnable without error."""
    rng = np.random.default_rng(seed)
    X, y = [], []
    for _ in range(n):
        T = int(rng.integers(2, 6))
        lab = rng.integers(0, K, T)
        x = 0.1 * rng.normal(size=(T, F))
        x[np.arange(T), lab] += 1.0
        X.append(x)
        y.append(lab)
    return X, y


@pytest.mark.parametrize("average", [False, True])
def test_perceptron_solver_equals_structured_perceptron(average):
    X, y = chains(3, n=30, F=5, max_len=6)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ConvergenceWarning)
        a = CRF(solver="perceptron", solver_options={"average": average}, max_iter=5,
                random_state=0).fit(X, y)
        b = StructuredPerceptron(average=average, max_iter=5, random_state=0).fit(X, y)
    np.testing.assert_allclose(a.coef_, b.coef_, atol=1e-12)
    np.testing.assert_array_equal(a.history_["mistakes"], b.history_["mistakes"])


@pytest.mark.parametrize("solver", ONLINE)
def test_online_solvers_learn_a_separable_problem(solver):
    X, y = _separable()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ConvergenceWarning)
        crf = CRF(solver=solver, max_iter=50, random_state=0).fit(X, y)
    acc = np.mean(np.concatenate([p == t for p, t in zip(crf.predict(X), y)]))
    assert acc == 1.0
    # the weights still define a CRF: marginals sum to one
    for m in crf.predict_marginals(X[:3]):
        np.testing.assert_allclose(m.sum(axis=1), 1.0)
    assert crf.n_nonzero_ == np.count_nonzero(crf.coef_)


def test_stopping_and_history():
    X, y = _separable(1)
    crf = CRF(solver="pa", max_iter=100, random_state=0).fit(X, y)
    assert crf.history_["mistakes"][-1] == 0 < crf.history_["mistakes"][0]
    assert crf.n_iter_ == crf.history_["mistakes"].size < 100
    assert set(crf.history_) == {"loss", "mistakes", "seconds"}
    Xn, yn = chains(4, n=20)
    with pytest.warns(ConvergenceWarning, match="share of samples decoded wrongly"):
        CRF(solver="arow", max_iter=3, random_state=0).fit(Xn, yn)
    with pytest.warns(ConvergenceWarning, match="relative improvement over the last 10"):
        CRF(solver="l2sgd", max_iter=3, random_state=0).fit(Xn, yn)


def test_l2sgd_approaches_the_lbfgs_optimum():
    X, y = chains(5, n=60, F=4, max_len=6)
    exact = CRF(C=1.0, max_iter=500, tol=1e-12).fit(X, y)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ConvergenceWarning)
        sgd = CRF(C=1.0, solver="l2sgd", max_iter=200, random_state=0).fit(X, y)
    from skstruct.solvers._crf import CRFObjective

    obj = CRFObjective(exact.model_.design(X, y)[0], 1.0)
    f_exact = obj.value_grad(exact.coef_)[0]
    f_sgd = obj.value_grad(sgd.coef_)[0]
    assert f_exact <= f_sgd <= f_exact * 1.01


def test_seen_pairs_keep_unseen_weights_at_zero():
    X, y = chains(6, n=20, F=5)
    X = [x * (np.arange(5) != 4) for x in X]     # feature 4 never fires
    for x, lab in zip(X, y):
        x[lab == 2, 3] = 0.0                       # feature 3 never fires with class 2
    crf = CRF(solver="pa", feature_pairs="seen", max_iter=5, random_state=0)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ConvergenceWarning)
        crf.fit(X, y)
    assert np.all(crf.unary_coef_[:, 4] == 0)
    assert crf.unary_coef_[2, 3] == 0
    assert np.count_nonzero(crf.unary_coef_[:, :3]) > 0


def test_partial_fit_only_for_online_solvers():
    assert not hasattr(CRF(), "partial_fit")
    assert not hasattr(CRF(solver="lbfgs"), "partial_fit")
    for solver in ONLINE + ["sgd"]:
        assert hasattr(CRF(solver=solver), "partial_fit")


@pytest.mark.parametrize("solver", ONLINE + ["sgd"])
def test_partial_fit_grows_the_label_set(solver):
    X, y = _separable(2, K=4)
    first = [i for i, lab in enumerate(y) if not np.any(lab == 3)][:15]
    rest = [i for i in range(len(X)) if i not in first]
    crf = CRF(solver=solver, random_state=0)
    crf.partial_fit([X[i] for i in first], [y[i] for i in first])
    np.testing.assert_array_equal(crf.classes_, [0, 1, 2])
    before = crf.unary_coef_.copy()
    crf.partial_fit([X[i] for i in rest], [y[i] for i in rest])
    np.testing.assert_array_equal(crf.classes_, [0, 1, 2, 3])
    assert crf.unary_coef_.shape == (4, 6) and crf.pairwise_coef_.shape == (1, 4, 4)
    assert crf.n_iter_ == 2 and crf.history_["seconds"].size == 2
    for _ in range(30):
        crf.partial_fit([X[i] for i in rest], [y[i] for i in rest])
    pred = np.concatenate(crf.predict([X[i] for i in rest]))
    truth = np.concatenate([y[i] for i in rest])
    assert np.mean(pred == truth) > 0.9
    assert np.any(pred == 3)
    assert before.shape == (3, 6)


def test_growth_places_old_weights_under_their_labels():
    X, y = _separable(3, K=3)
    ys = [np.array(["b", "c", "d"])[lab] for lab in y]
    crf = CRF(solver="perceptron", solver_options={"average": False}, random_state=0)
    crf.partial_fit(X, ys)
    old = crf.unary_coef_.copy()
    # a label sorting first moves every old class one row down; declared, not seen
    crf.partial_fit(X[:0] + X[:1], ys[:1], classes=["a"])
    np.testing.assert_array_equal(crf.classes_, ["a", "b", "c", "d"])
    grown = crf.unary_coef_
    # the one-sample epoch may have changed weights only if it was decoded wrongly
    if crf.history_["mistakes"][-1] == 0:
        np.testing.assert_array_equal(grown[1:], old)
        np.testing.assert_array_equal(grown[0], 0.0)


def test_declared_classes_on_the_first_call_and_bad_labels():
    X, y = _separable(4, K=3)
    crf = CRF(solver="arow", random_state=0).partial_fit(X, y, classes=[0, 1, 2, 7])
    np.testing.assert_array_equal(crf.classes_, [0, 1, 2, 7])
    with pytest.raises(ValueError, match="does not sort with the classes"):
        crf.partial_fit(X[:2], [np.array(["x"] * len(X[0])), np.array(["x"] * len(X[1]))])


def test_partial_fit_refuses_other_features_and_trees():
    X, y = _separable(5)
    crf = CRF(solver="pa").partial_fit(X, y)
    with pytest.raises(ValueError, match="features"):
        crf.partial_fit([x[:, :4] for x in X], y)
    Xt, yt = trees(0)
    with pytest.raises(ValueError, match="not a chain"):
        CRF(solver="pa").fit(Xt, yt)


def test_partial_fit_continues_after_pickling():
    X, y = _separable(6)
    a = CRF(solver="l2sgd", random_state=0).partial_fit(X[:20], y[:20])
    b = pickle.loads(pickle.dumps(a))
    a.partial_fit(X[20:], y[20:])
    b.partial_fit(X[20:], y[20:])
    np.testing.assert_array_equal(a.coef_, b.coef_)


def test_fit_then_partial_fit_continues_the_same_state():
    X, y = _separable(7)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ConvergenceWarning)
        a = CRF(solver="perceptron", solver_options={"average": False}, max_iter=2,
                tol=0.0, random_state=0).fit(X, y)
        b = CRF(solver="perceptron", solver_options={"average": False}, max_iter=3,
                tol=0.0, random_state=0).fit(X, y)
    a.partial_fit(X, y)
    # the third epoch's order comes from the same generator either way
    np.testing.assert_allclose(a.coef_, b.coef_, atol=1e-12)


def test_warm_start_grows_the_label_set_for_lbfgs():
    X, y = _separable(8, K=4)
    without = [i for i, lab in enumerate(y) if not np.any(lab == 3)]
    warm = CRF(warm_start=True, max_iter=300, tol=1e-12)
    warm.fit([X[i] for i in without], [y[i] for i in without])
    np.testing.assert_array_equal(warm.classes_, [0, 1, 2])
    warm.fit(X, y)
    cold = CRF(max_iter=300, tol=1e-12).fit(X, y)
    np.testing.assert_array_equal(warm.classes_, cold.classes_)
    np.testing.assert_allclose(warm.coef_, cold.coef_, atol=1e-4)


@pytest.mark.parametrize("solver, options, match", [
    ("pa", {"type": 3}, "type"),
    ("arow", {"variance": -1.0}, "variance"),
    ("perceptron", {"memory": 3}, "memory"),
    ("l2sgd", {"calibration_rate": 1.0}, "calibration_rate"),
])
def test_bad_online_options(solver, options, match):
    X, y = _separable(9)
    with pytest.raises(ValueError, match=match):
        CRF(solver=solver, solver_options=options).fit(X, y)
