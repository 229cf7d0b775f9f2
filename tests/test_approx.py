"""ApproxStructuredPredictor: the identities of Hazan & Urtasun's program."""

import pickle
import warnings

import numpy as np
import pytest
from sklearn.base import clone
from sklearn.exceptions import ConvergenceWarning
from sklearn.model_selection import GridSearchCV

from skstruct import ApproxStructuredPredictor
from skstruct.exceptions import InvalidParameterError
from skstruct.inference import forward_backward
from skstruct.models import ChainModel, GraphModel, MultiLabelModel
from skstruct.solvers._primal_dual import PrimalDual, counting_numbers
from tests.brute import all_scores, score_of
from tests.inference.kernel_cases import random_graph

from .sklearn_checks import PARAMETER_CHECKS, run_check


def chains(seed=0, n=8, F=3, K=3, max_len=5):
    rng = np.random.default_rng(seed)
    X = [rng.normal(size=(int(rng.integers(1, max_len + 1)), F)) for _ in range(n)]
    y = [rng.integers(0, K, len(x)) for x in X]
    y[0][:] = np.arange(len(y[0])) % K
    y[1] = np.arange(len(y[1])) % K if len(y[1]) >= K else y[1]
    for k in range(K):
        y[2 + k % (n - 2)][0] = k
    return X, y


def graphs(seed=0, kinds=("cycle4", "random", "complete", "tree"), K=3, F=2):
    rng = np.random.default_rng(seed)
    X, y = [], []
    for i in range(8):
        n, edges = random_graph(rng, kinds[i % len(kinds)])
        X.append((rng.normal(size=(n, F)), edges))
        y.append(np.arange(n) % K)
    return X, y


def context(est, X, y, theta_scale=0.7, seed=1):
    """A fitted estimator's context with random parameters."""
    est.set_params(max_iter=1).fit(X, y)
    st = est._solver
    rng = np.random.default_rng(seed)
    W = theta_scale * rng.normal(size=st.W.shape)
    P = theta_scale * rng.normal(size=st.P.shape)
    design, _ = est.model_.design(X, y)
    ctx = PrimalDual(design, est._context_lw(design),
                     *counting_numbers(design, est.counting_numbers), epsilon=est.epsilon,
                     p=est.p, C=est.C, loss=est.loss is not None)
    return ctx, design, W, P


def test_eps_1_bethe_chains_is_the_crf_objective_and_gradient():
    X, y = chains()
    C = 0.7
    est = ApproxStructuredPredictor(epsilon=1.0, counting_numbers="bethe", loss=None, C=C,
                                    model=ChainModel())
    ctx, design, W, P = context(est, X, y)
    lam = np.zeros((2 * design.batch.n_edges, design.n_classes))
    ctx.sweep(W, P, lam, 50)
    value, gW, gP = ctx.value_and_grad(W, P, lam)
    # the CRF by forward-backward
    logz, truth = 0.0, 0.0
    gW_ref = np.zeros_like(W)
    gP_ref = np.zeros_like(P)
    for x, yi in zip(X, y):
        codes = np.searchsorted(est.classes_, yi)
        U = x @ W
        node, edge, lz = forward_backward(U, P[0])
        logz += lz
        truth += score_of(U, np.column_stack([np.arange(len(x) - 1), np.arange(1, len(x))]),
                          P[0], codes)
        onehot = np.eye(W.shape[1])[codes]
        gW_ref += x.T @ (node - onehot)
        gP_ref[0] += edge.sum(axis=0)
        for t in range(len(x) - 1):
            gP_ref[0, codes[t], codes[t + 1]] -= 1.0
    reg = 0.5 * (np.sum(W ** 2) + np.sum(P ** 2))
    assert value == pytest.approx(reg + C * (logz - truth), rel=1e-9)
    np.testing.assert_allclose(gW, C * gW_ref + W, atol=1e-7)
    np.testing.assert_allclose(gP, C * gP_ref + P, atol=1e-7)
    # finite differences of the CRF objective itself (messages re-converged)
    h = 1e-5

    def converged_value(W_):
        lam_ = np.zeros_like(lam)
        ctx.sweep(W_, P, lam_, 50)
        return ctx.value(W_, P, lam_)

    for idx in [(0, 0), (2, 1)]:
        Wp, Wm = W.copy(), W.copy()
        Wp[idx] += h
        Wm[idx] -= h
        fd = (converged_value(Wp) - converged_value(Wm)) / (2 * h)
        assert fd == pytest.approx(gW[idx], abs=1e-5)


def _hinge_objective(X, y, edges_of, est, W, P, C):
    """``1/2 ||theta||^2 + C sum_i max_yhat (hamming + score) - score(y)``."""
    total = 0.0
    for x, yi in zip(X, y):
        feats, edges = edges_of(x)
        codes = np.searchsorted(est.classes_, yi)
        U = feats @ W
        tables = np.repeat(P[:1], len(edges), axis=0)
        labs, scores = all_scores(U, edges, tables)
        total += np.max(scores + (labs != codes[None]).sum(axis=1)) - score_of(
            U, edges, tables, codes)
    return 0.5 * (np.sum(W ** 2) + np.sum(P ** 2)) + C * total


@pytest.mark.parametrize("structure", ["chain", "tree"])
def test_eps_0_is_the_structured_hinge_on_trees(structure):
    if structure == "chain":
        X, y = chains(seed=2)
        model = ChainModel()

        def edges_of(x):
            return x, np.column_stack([np.arange(len(x) - 1), np.arange(1, len(x))])
    else:
        X, y = graphs(seed=3, kinds=("tree", "chain", "forest"))
        model = GraphModel()

        def edges_of(x):
            return x[0], np.asarray(x[1]).reshape(-1, 2)
    C = 1.3
    est = ApproxStructuredPredictor(epsilon=0.0, counting_numbers="convex", C=C, model=model)
    ctx, design, W, P = context(est, X, y)
    lam = np.zeros((2 * design.batch.n_edges, design.n_classes))
    ref = _hinge_objective(X, y, edges_of, est, W, P, C)
    assert ctx.value(W, P, lam) >= ref - 1e-9  # an upper bound at any messages
    ctx.sweep(W, P, lam, 60)
    assert ctx.value(W, P, lam) == pytest.approx(ref, rel=1e-7)


@pytest.mark.parametrize("eps", [1.0, 0.2])
def test_convex_counting_numbers_never_increase_the_objective(eps):
    X, y = graphs(seed=4)
    est = ApproxStructuredPredictor(epsilon=eps, counting_numbers="convex", C=2.0,
                                    max_iter=40, tol=0.0).fit(X, y)
    obj = est.history_["objective"]
    assert obj.shape[0] >= 10
    assert np.all(np.diff(obj) <= 1e-9 * np.abs(obj[1:]))
    assert obj[-1] < obj[0]


@pytest.mark.parametrize("p", [1.5, 3.0])
def test_p_norm_gradient_matches_finite_differences(p):
    X, y = graphs(seed=5)
    # positive counting numbers: F is smooth in theta at any messages
    est = ApproxStructuredPredictor(epsilon=0.5, p=p, counting_numbers="convex", C=0.8)
    ctx, design, W, P = context(est, X, y)
    lam = np.random.default_rng(0).normal(size=(2 * design.batch.n_edges, design.n_classes))
    value, gW, gP = ctx.value_and_grad(W, P, lam)
    h = 1e-6
    for idx in [(0, 0), (1, 2)]:
        Wp, Wm = W.copy(), W.copy()
        Wp[idx] += h
        Wm[idx] -= h
        fd = (ctx.value(Wp, P, lam) - ctx.value(Wm, P, lam)) / (2 * h)
        assert fd == pytest.approx(gW[idx], rel=1e-5, abs=1e-6)
    idx = (0, 1, 2)
    Pp, Pm = P.copy(), P.copy()
    Pp[idx] += h
    Pm[idx] -= h
    fd = (ctx.value(W, Pp, lam) - ctx.value(W, Pm, lam)) / (2 * h)
    assert fd == pytest.approx(gP[idx], rel=1e-5, abs=1e-6)


def test_learns_ocr_words(letters_small):
    Xtr, ytr, Xte, yte = letters_small
    est = ApproxStructuredPredictor(epsilon=1.0, C=1.0, max_iter=60).fit(Xtr, ytr)
    assert est.score(Xte, yte) > 0.5
    marg = est.predict_marginals(Xte[:3])
    assert [m.shape for m in marg] == [(len(x), len(est.classes_)) for x in Xte[:3]]
    for m in marg:
        np.testing.assert_allclose(m.sum(axis=1), 1.0, atol=1e-9)


@pytest.fixture(scope="module")
def letters_small():
    from skstruct.datasets import load_letters

    d = load_letters()
    tr = np.flatnonzero(d.folds == 0)[:80]
    te = np.flatnonzero(d.folds == 1)[:80]
    return ([d.X[i] for i in tr], [d.y[i] for i in tr], [d.X[i] for i in te],
            [d.y[i] for i in te])


def test_sklearn_citizenship(letters_small):
    Xtr, ytr, _, _ = letters_small
    est = ApproxStructuredPredictor(max_iter=5)
    assert clone(est).get_params() == est.get_params()
    fitted = est.fit(Xtr[:30], ytr[:30])
    again = pickle.loads(pickle.dumps(fitted))
    assert [np.array_equal(a, b) for a, b in zip(again.predict(Xtr[:5]),
                                                 fitted.predict(Xtr[:5]))] == [True] * 5
    gs = GridSearchCV(ApproxStructuredPredictor(max_iter=3), {"C": [0.1, 1.0]}, cv=2)
    gs.fit(Xtr[:30], ytr[:30])
    assert np.all(np.isfinite(gs.cv_results_["mean_test_score"]))


@pytest.mark.parametrize("params,match", [
    (dict(epsilon=-1.0), "epsilon"), (dict(p=1.0), "p must"), (dict(C=0.0), "C must"),
    (dict(counting_numbers="bogus"), "counting_numbers"),
    (dict(counting_numbers=(1.0, "a")), "counting_numbers"),
    (dict(loss="squared"), "loss"),
])
def test_bad_parameters_are_named(params, match):
    X, y = graphs(seed=6)
    with pytest.raises(InvalidParameterError, match=match) as err:
        ApproxStructuredPredictor(max_iter=1, **params).fit(X, y)
    assert isinstance(err.value, ValueError) and isinstance(err.value, TypeError)


def test_counting_numbers_bad_at_a_node_are_a_value_error():
    # whether the sum at a node is positive depends on the graph: a ValueError of the data
    X, y = graphs(seed=6)
    with pytest.raises(ValueError, match="must be positive"):
        ApproxStructuredPredictor(max_iter=1, counting_numbers=(-3.0, 1.0)).fit(X, y)


def test_eps_1_bethe_learning_reaches_the_exact_crf_optimum():
    """Against a CRF trained by L-BFGS on the exact objective (forward-backward)."""
    from scipy.optimize import minimize

    X, y = chains(seed=8, n=10, F=3, K=3)
    C = 2.0
    est = ApproxStructuredPredictor(epsilon=1.0, counting_numbers="bethe", loss=None, C=C,
                                    model=ChainModel(), max_iter=3000, tol=1e-12).fit(X, y)
    F, K = est._W.shape
    codes = [np.searchsorted(est.classes_, yi) for yi in y]

    def crf(theta):
        W = theta[:F * K].reshape(F, K)
        P = theta[F * K:].reshape(K, K)
        value = 0.5 * theta @ theta
        grad = theta.copy()
        for x, c in zip(X, codes):
            U = x @ W
            node, edge, logz = forward_backward(U, P)
            value += C * (logz - U[np.arange(len(c)), c].sum() - P[c[:-1], c[1:]].sum())
            gW = x.T @ (node - np.eye(K)[c])
            gP = edge.sum(axis=0)
            np.add.at(gP, (c[:-1], c[1:]), -1.0)
            grad += C * np.concatenate([gW.ravel(), gP.ravel()])
        return value, grad

    ref = minimize(crf, np.zeros(F * K + K * K), jac=True, method="L-BFGS-B",
                   options=dict(gtol=1e-10, maxiter=2000))
    ours = crf(est.coef_)[0]
    assert est.history_["objective"][-1] == pytest.approx(ours, rel=1e-9)
    assert ours == pytest.approx(ref.fun, rel=1e-6)
    np.testing.assert_allclose(est.coef_, ref.x, atol=1e-3)


@pytest.mark.parametrize("check", PARAMETER_CHECKS)
def test_sklearn_estimator_checks(check):
    run_check(check, ApproxStructuredPredictor(),
              ApproxStructuredPredictor(model=MultiLabelModel(edges="tree"), epsilon=0.1))


def test_multilabel_and_edge_features_learn():
    from skstruct.datasets import load_scene, make_binary_denoising

    d = load_scene()
    est = ApproxStructuredPredictor(epsilon=0.1, counting_numbers="convex", C=0.1, max_iter=40,
                                    model=MultiLabelModel(edges="full"))
    est.fit(d.X_train, d.y_train)
    assert est.predict(d.X_test[:5]).shape == (5, d.y_test.shape[1])
    # well below the loss of predicting every label absent
    assert 1 - est.score(d.X_test, d.y_test) < d.y_test.mean() - 0.04
    obj = est.history_["objective"]
    assert np.all(np.diff(obj) <= 1e-9 * np.abs(obj[1:]))
    # grids with edge features: better than thresholding each pixel
    tr = make_binary_denoising(4, 30, noise=1.0, random_state=0)
    te = make_binary_denoising(4, 30, noise=1.0, random_state=1)
    est = ApproxStructuredPredictor(epsilon=1.0, counting_numbers="convex", C=0.5, max_iter=20,
                                    model=GraphModel()).fit(tr.X, tr.y)
    threshold = np.mean(np.concatenate([(x[0][:, 0] > 0.5) == y for x, y in zip(te.X, te.y)]))
    assert est.score(te.X, te.y) > threshold + 0.1
    marg = est.predict_marginals(te.X[:1])[0]
    assert marg.shape == (900, 2) and np.allclose(marg.sum(axis=1), 1.0)


def test_warm_start_continues_and_class_weight_changes_the_objective():
    X, y = chains(seed=9)
    a = ApproxStructuredPredictor(max_iter=6, tol=0.0, warm_start=True).fit(X, y)
    first = a.history_["objective"][-1]
    a.fit(X, y)
    assert a.n_iter_ == 12 and a.history_["objective"][0] <= first + 1e-12
    b = ApproxStructuredPredictor(max_iter=6, tol=0.0, class_weight={0: 3.0}).fit(X, y)
    assert b.history_["objective"][-1] != pytest.approx(first)
    with pytest.raises(ValueError, match="epsilon > 0"):
        ApproxStructuredPredictor(epsilon=0.0, max_iter=2).fit(X, y).predict_marginals(X)


def test_pipeline_with_node_transformer(letters_small):
    from sklearn.pipeline import Pipeline
    from sklearn.preprocessing import StandardScaler

    from skstruct.preprocessing import NodeTransformer

    Xtr, ytr, Xte, yte = letters_small
    pipe = Pipeline([("scale", NodeTransformer(StandardScaler())),
                     ("crf", ApproxStructuredPredictor(max_iter=15))])
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        # short fits by design: that they stop at max_iter is not what is tested
        warnings.simplefilter("ignore", ConvergenceWarning)
        pipe.fit(Xtr[:40], ytr[:40])
        assert 0.3 < pipe.score(Xte[:40], yte[:40]) <= 1.0


def test_explicit_counting_numbers_per_node_and_edge():
    X, y = graphs(seed=10)

    def bethe(n, edges):
        deg = np.bincount(edges.ravel(), minlength=n)
        return 1.0 - deg, np.ones(len(edges))

    a = ApproxStructuredPredictor(counting_numbers=bethe, max_iter=5, tol=0.0).fit(X, y)
    b = ApproxStructuredPredictor(counting_numbers="bethe", max_iter=5, tol=0.0).fit(X, y)
    np.testing.assert_allclose(a.coef_, b.coef_)
    with pytest.raises(ValueError, match="sample 0"):
        ApproxStructuredPredictor(counting_numbers=lambda n, e: (np.ones(n + 1), np.ones(len(e))),
                                  max_iter=1).fit(X, y)


@pytest.mark.parametrize("case", ["chains", "graphs", "edge_features", "multilabel"])
@pytest.mark.parametrize("loss", ["hamming", None])
def test_fused_trial_value_equals_the_two_pass_value(case, loss):
    from skstruct.datasets import load_scene, make_binary_denoising

    if case == "chains":
        X, y = chains(seed=11)
        model = ChainModel(bias=True)
    elif case == "graphs":
        X, y = graphs(seed=11)
        model = GraphModel()
    elif case == "edge_features":
        d = make_binary_denoising(2, 12, random_state=0)
        X, y = d.X, d.y
        model = GraphModel()
    else:
        d = load_scene()
        X, y = d.X_train[:40], d.y_train[:40]
        model = MultiLabelModel(edges="tree")
    est = ApproxStructuredPredictor(epsilon=0.7, counting_numbers="trw", loss=loss, model=model)
    ctx, design, W, P = context(est, X, y, theta_scale=0.2)
    lam = np.random.default_rng(2).normal(size=(2 * design.batch.n_edges, design.n_classes))
    ctx._theta(W, P)  # cached: value() takes the two-pass route
    two_pass = ctx.value(W, P, lam)
    fused = ctx.value(W.copy(), P.copy(), lam)
    assert fused == pytest.approx(two_pass, rel=1e-12)
    assert ctx.value_and_grad(W, P, lam)[0] == pytest.approx(two_pass, rel=1e-12)


def test_eps_0_matches_structured_svm_reported_primal():
    """At StructuredSVM's weights, epsilon = 0 gives the primal StructuredSVM reports."""
    from skstruct import StructuredSVM

    X, y = chains(seed=12)
    C = 0.8
    svm = StructuredSVM(C=C, max_iter=30, check_every=30, random_state=0,
                        model=ChainModel()).fit(X, y)
    primal_C = svm.history_["primal"][-1] * C * len(X)  # lambda form -> C form
    est = ApproxStructuredPredictor(epsilon=0.0, counting_numbers="convex", C=C,
                                    model=ChainModel())
    ctx, design, _, _ = context(est, X, y)
    W, P = svm._weights()
    lam = np.zeros((2 * design.batch.n_edges, design.n_classes))
    ctx.sweep(W, P, lam, 60)
    assert ctx.value(W, P, lam) == pytest.approx(primal_C, rel=1e-9)
