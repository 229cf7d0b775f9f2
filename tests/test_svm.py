"""StructuredSVM: solvers against each other and against exact references, the
surrogates on real data, every data format, and scikit-learn citizenship."""

import copy
import pickle
import warnings

import numpy as np
import pytest
import scipy.sparse as sp
from scipy.optimize import minimize
from scipy.stats import loguniform
from sklearn.base import ClassifierMixin, clone
from sklearn.exceptions import ConvergenceWarning
from sklearn.model_selection import (
    GridSearchCV,
    KFold,
    RandomizedSearchCV,
    cross_val_score,
    cross_validate,
)
from sklearn.pipeline import Pipeline
from sklearn.preprocessing import StandardScaler
from sklearn.utils import get_tags

from skstruct import StructuredSVM
from skstruct.datasets import load_letters, load_scene, load_snakes
from skstruct.metrics import (
    SCORERS,
    hamming_accuracy,
    hamming_scorer,
    sequence_accuracy,
    sequence_scorer,
)
from skstruct.models import ChainModel, GraphModel, MulticlassModel, MultiLabelModel
from skstruct.preprocessing import NodeTransformer
from skstruct.solvers import BCFW
from tests.brute import all_scores, score_of
from tests.inference.kernel_cases import random_graph

from .sklearn_checks import PARAMETER_CHECKS, run_check

# ---------------------------------------------------------------- data


def synthetic_chains(seed=0, n=20, F=4, K=3, max_len=5):
    rng = np.random.default_rng(seed)
    W = rng.normal(size=(F, K))
    X, y = [], []
    for _ in range(n):
        m = int(rng.integers(1, max_len + 1))
        x = rng.normal(size=(m, F))
        X.append(x)
        y.append(np.argmax(x @ W + rng.normal(size=(m, K)), axis=1))
    return X, y


def synthetic_graphs(seed=0, n=12, F=3, K=3, n_ef=2):
    """Tiny graphs (forests and loopy ones small enough to enumerate) with
    dense edge features."""
    rng = np.random.default_rng(seed)
    kinds = ["single", "index_chain", "tree", "forest", "cycle4", "random"]
    X, y = [], []
    for i in range(n):
        m, edges = random_graph(rng, kinds[i % len(kinds)])
        X.append((rng.normal(size=(m, F)), edges, rng.normal(size=(len(edges), n_ef))))
        y.append(rng.integers(0, K, m))
    y[0] = np.arange(K)[:len(y[0])]
    return X, y


@pytest.fixture(scope="module")
def letters():
    return load_letters()


def _words(data, fold, n):
    idx = np.flatnonzero(data.folds == fold)[:n]
    return [data.X[i] for i in idx], [data.y[i] for i in idx]


@pytest.fixture(scope="module")
def ocr(letters):
    """60 training words of fold 0 and 60 test words of fold 1."""
    return (*_words(letters, 0, 60), *_words(letters, 1, 60))


# ---------------------------------------------------------------- brute-force primal


def _hinge(unary, edges, tables, y, weights):
    labs, scores = all_scores(unary, edges, tables)
    s_true = score_of(unary, edges, tables, y)
    return float(np.max(((labs != y[None]) * weights[None]).sum(axis=1) + scores) - s_true)


def brute_primal(est, X, y):
    """``lambda/2 ||w||^2 + 1/n sum_i H_i(w)`` at ``coef_``, every labelling of
    every sample enumerated (margin rescaling; the Hamming loss weighted by a
    ``class_weight`` dict and normalised by the sample size for
    ``loss="normalized_hamming"``)."""
    U = est.unary_coef_  # (n_classes, n_features)
    P = est.pairwise_coef_  # (n_edge_features, n_classes, n_classes)
    codes = {c: k for k, c in enumerate(est.classes_.tolist())}
    cw = np.ones(len(codes))
    for label, w in (est.class_weight or {}).items():
        cw[codes[label]] = w
    total = 0.0
    for xi, yi in zip(X, y):
        yi = np.array([codes[c] for c in yi.tolist()], np.int64)
        if isinstance(xi, tuple):
            feats, edges = xi[0], np.asarray(xi[1]).reshape(-1, 2)
            if len(xi) == 3:
                tables = np.einsum("ef,fab->eab", xi[2], P)
            else:
                tables = np.repeat(P[:1], len(edges), axis=0)
        else:
            feats = xi
            edges = np.column_stack([np.arange(len(xi) - 1), np.arange(1, len(xi))])
            tables = np.repeat(P[:1], len(edges), axis=0)
        weights = cw[yi]
        if est.loss == "normalized_hamming":
            weights = weights / max(len(yi), 1)
        if len(yi):
            total += _hinge(feats @ U.T, edges, tables, yi, weights)
    n = len(X)
    lam = 1.0 / (est.C * n)
    return 0.5 * lam * float(est.coef_ @ est.coef_) + total / n


# ---------------------------------------------------------------- solvers


@pytest.fixture(scope="module")
def chain_fits():
    X, y = synthetic_chains()
    common = dict(C=1.0, random_state=0)
    fits = {
        "bcfw": StructuredSVM(max_iter=300, tol=1e-6, check_every=1, **common).fit(X, y),
        "bcfw_last": StructuredSVM(max_iter=300, tol=1e-6, average=False, check_every=1,
                                **common).fit(X, y),
        "sg": StructuredSVM(solver="subgradient", max_iter=300, check_every=50,
                            **common).fit(X, y),
        "sg_batch": StructuredSVM(solver="subgradient", max_iter=300, check_every=50,
                                  batch_size=4, shuffle="uniform", **common).fit(X, y),
    }
    return X, y, fits


def test_solvers_reach_the_same_objective(chain_fits):
    _, _, fits = chain_fits
    primal = {k: f.history_["primal"][-1] for k, f in fits.items()}
    best_dual = max(fits["bcfw"].history_["dual"].max(),
                    fits["bcfw_last"].history_["dual"].max())
    for name, p in primal.items():
        # weak duality: no primal value below any dual value
        assert p >= best_dual - 1e-9, (name, p, best_dual)
        # BCFW certifies its own optimality; the subgradient iterates get close
        rtol = 0.005 if name.startswith("bcfw") else 0.02
        assert p <= best_dual + rtol * abs(best_dual), (name, p, best_dual)
    np.testing.assert_allclose(primal["bcfw"], primal["sg"], rtol=0.01)
    np.testing.assert_allclose(primal["bcfw"], primal["bcfw_last"], rtol=0.005)


@pytest.mark.parametrize("params", [
    dict(),
    dict(average=False),
    dict(loss="normalized_hamming", class_weight={0: 2.0, 2: 0.5}),
    dict(model=ChainModel(bias=True, start_end=True), shuffle="uniform"),
])
def test_chain_fast_path_repeats_the_general_kernel(monkeypatch, params):
    """The fused chain kernel makes the same steps as the general one."""
    X, y = synthetic_chains(seed=3, n=15, F=3, K=4, max_len=6)
    X.insert(4, np.zeros((0, 3)))
    y.insert(4, np.zeros(0, np.int64))
    common = dict(C=0.5, max_iter=6, tol=0.0, random_state=1, **params)
    fast = StructuredSVM(**common).fit(X, y)
    assert (fast.surrogate, fast._solver.fused_chain) == ("margin", True)
    monkeypatch.setattr(BCFW, "_fused_chain_applies", lambda self: False)
    general = StructuredSVM(**common).fit(X, y)
    np.testing.assert_allclose(fast.coef_, general.coef_, rtol=1e-9, atol=1e-12)
    for key in ("primal", "dual", "gap"):
        np.testing.assert_allclose(fast.history_[key], general.history_[key], rtol=1e-9,
                                   atol=1e-12)


def test_chain_fast_path_is_only_taken_where_it_applies():
    X, y = synthetic_chains(seed=3, n=8, F=3, K=3, max_len=4)
    est = StructuredSVM(max_iter=1, random_state=0)
    assert est.fit(X, y)._solver.fused_chain
    assert not est.set_params(surrogate="slack").fit(X, y)._solver.fused_chain
    long_X = X + [np.ones((70, 3))]
    long_y = y + [np.zeros(70, np.int64)]
    # no Gram matrix for a 70-node sample: the general kernel takes over
    assert not StructuredSVM(max_iter=1).fit(long_X, long_y)._solver.fused_chain
    Xg, yg = synthetic_graphs(n=6)
    assert not StructuredSVM(max_iter=1).fit(Xg, yg)._solver.fused_chain


@pytest.mark.parametrize("name", ["bcfw", "bcfw_last"])
def test_bcfw_duality_gap(chain_fits, name):
    _, _, fits = chain_fits
    h = fits[name].history_
    assert set(h) == {"pass", "primal", "dual", "gap", "seconds"}
    np.testing.assert_array_equal(h["pass"], np.arange(1, len(h["pass"]) + 1))
    assert np.all(h["gap"] >= -1e-9)
    assert np.all(h["dual"] <= h["primal"] + 1e-9)
    np.testing.assert_allclose(h["gap"], h["primal"] - h["dual"], atol=1e-12)
    # decreasing overall (not monotone: the gap of single iterates fluctuates)
    g = h["gap"]
    q = len(g) // 4
    assert g[-1] < 0.05 * g[0]
    assert g[-q:].max() < g[:q].min()
    assert np.all(np.diff(h["seconds"]) >= 0)
    if name == "bcfw_last":
        # exact line search on each block: the dual of the last iterate never decreases
        assert np.all(np.diff(h["dual"]) >= -1e-12)


@pytest.mark.parametrize("name", ["bcfw", "bcfw_last", "sg", "sg_batch"])
def test_reported_primal_is_the_brute_force_primal_at_coef(chain_fits, name):
    X, y, fits = chain_fits
    est = fits[name]
    assert est.coef_.shape == (4 * 3 + 3 * 3,)
    assert est.unary_coef_.shape == (3, 4) and est.pairwise_coef_.shape == (1, 3, 3)
    assert est.history_["primal"][-1] == pytest.approx(brute_primal(est, X, y), rel=1e-9,
                                                       abs=1e-12)
    if name.startswith("sg"):
        assert set(est.history_) == {"pass", "primal", "seconds"}


def test_brute_force_primal_with_edge_features():
    X, y = synthetic_graphs()
    est = StructuredSVM(C=0.3, max_iter=20, random_state=0).fit(X, y)
    assert isinstance(est.model_, GraphModel)
    assert np.all(est.model_.design(X)[0].kind <= 2)  # all exact
    assert est.pairwise_coef_.shape == (2, 3, 3)
    assert est.history_["primal"][-1] == pytest.approx(brute_primal(est, X, y), rel=1e-9)
    assert np.all(est.history_["dual"] <= est.history_["primal"] + 1e-9)


@pytest.mark.parametrize("loss", ["hamming", "normalized_hamming"])
@pytest.mark.parametrize("class_weight", [None, {0: 2.0, 2: 0.5}])
def test_brute_force_primal_with_weighted_losses(loss, class_weight):
    X, y = synthetic_chains(n=10)
    for solver in ("bcfw", "subgradient"):
        est = StructuredSVM(max_iter=5, loss=loss, class_weight=class_weight, solver=solver,
                            check_every=1, random_state=0).fit(X, y)
        assert est.history_["primal"][-1] == pytest.approx(brute_primal(est, X, y), rel=1e-9)


def test_normalized_loss_scales_the_hinge():
    # at w = 0 the hinge is the largest weighted loss: n_i, or 1 when normalised
    X, y = synthetic_chains(n=8)
    for loss, expect in (("hamming", np.mean([len(a) for a in y])),
                         ("normalized_hamming", 1.0)):
        est = StructuredSVM(C=1e-12, max_iter=1, loss=loss, random_state=0).fit(X, y)
        assert est.history_["primal"][0] == pytest.approx(expect, rel=1e-6)


def test_bcfw_stops_at_tol():
    X, y = synthetic_chains(seed=1, n=10)
    est = StructuredSVM(max_iter=1000, tol=1e-2, check_every=10, random_state=0).fit(X, y)
    assert est.n_iter_ < 1000 and est.n_iter_ % 10 == 0
    np.testing.assert_array_equal(est.history_["pass"], np.arange(10, est.n_iter_ + 1, 10))
    assert est.history_["gap"][-1] <= 1e-2
    assert np.all(est.history_["gap"][:-1] > 1e-2)


def test_default_checks_start_when_the_free_estimate_nears_tol():
    """check_every=None: no exact gap while the per-pass estimate is above 2 tol, then every
    10 passes from the pass it first gets there; the fit stops at the first checked pass
    whose exact gap is at most tol, as a fit checking every pass from then on would."""
    X, y = synthetic_chains(seed=1, n=10)
    every = StructuredSVM(max_iter=1000, tol=0, check_every=1, random_state=0).fit(X, y)
    est = StructuredSVM(max_iter=1000, tol=1e-2, random_state=0).fit(X, y)
    # the same iterates: the estimates are those of the fit checked at every pass
    np.testing.assert_allclose(est.gap_estimates_, every.gap_estimates_[:est.n_iter_],
                               rtol=1e-12)
    assert est.gap_estimates_.shape == (est.n_iter_,)
    armed = int(np.flatnonzero(est.gap_estimates_ <= 2e-2)[0]) + 1
    assert armed > 10             # the early checks are skipped
    np.testing.assert_array_equal(est.history_["pass"], np.arange(armed, est.n_iter_ + 1, 10))
    np.testing.assert_allclose(est.history_["gap"], every.history_["gap"][est.history_["pass"] - 1],
                               rtol=1e-9)
    assert est.history_["gap"][-1] <= 1e-2 and np.all(est.history_["gap"][:-1] > 1e-2)
    # the estimate sums the block gaps at their own steps: within a factor of two of the
    # exact gap (of the averaged weights) once past the first passes
    ratio = every.history_["gap"][20:] / every.gap_estimates_[20:]
    assert np.all((ratio > 0.5) & (ratio < 2.5))
    # a fit that cannot meet tol pays for the last pass's check only
    short = StructuredSVM(max_iter=30, tol=1e-6, random_state=0).fit(X, y)
    np.testing.assert_array_equal(short.history_["pass"], [30])


# ---------------------------------------------------------------- Crammer-Singer


def crammer_singer_qp(X, y, K, C):
    """``min 1/2 ||W||^2 + C sum xi`` s.t. ``xi_i >= [k != y_i] + w_k.x_i - w_{y_i}.x_i``,
    solved as a QP by SLSQP; returns ``(objective, W (K, F))``."""
    n, F = X.shape
    rows, rhs = [], []
    for i in range(n):
        for k in range(K):
            a = np.zeros(K * F + n)
            a[K * F + i] = 1.0
            if k != y[i]:
                a[k * F:(k + 1) * F] -= X[i]
                a[y[i] * F:(y[i] + 1) * F] += X[i]
            rows.append(a)
            rhs.append(0.0 if k == y[i] else 1.0)
    A, b = np.array(rows), np.array(rhs)
    d = K * F

    def f(z):
        return 0.5 * z[:d] @ z[:d] + C * z[d:].sum()

    def g(z):
        return np.r_[z[:d], np.full(n, C)]

    res = minimize(f, np.r_[np.zeros(d), np.ones(n)], jac=g, method="SLSQP",
                   constraints=[{"type": "ineq", "fun": lambda z: A @ z - b,
                                 "jac": lambda z: A}],
                   options={"maxiter": 2000, "ftol": 1e-12})
    assert res.success, res.message
    return res.fun, res.x[:d].reshape(K, F)


def test_multiclass_matches_crammer_singer_qp():
    rng = np.random.default_rng(0)
    n, F, K, C = 30, 3, 3, 0.5
    X = rng.normal(size=(n, F))
    y = rng.integers(0, K, n)
    X[:, 0] += y
    ref, W_ref = crammer_singer_qp(X, y, K, C)
    est = StructuredSVM(C=C, max_iter=1000, tol=1e-9, average=False, check_every=50,
                        random_state=0).fit(X, y)
    assert isinstance(est.model_, MulticlassModel)
    scale = C * n  # lambda form -> 1/2 ||w||^2 + C sum H
    primal = est.history_["primal"][-1] * scale
    dual = est.history_["dual"][-1] * scale
    assert primal <= ref + 1e-3
    assert primal >= ref - 1e-6  # the QP solution is optimal
    assert dual <= ref + 1e-6  # weak duality
    np.testing.assert_allclose(est.unary_coef_, W_ref, atol=5e-3)
    # the subgradient solver approaches it too
    sg = StructuredSVM(C=C, solver="subgradient", max_iter=300, check_every=300,
                       random_state=0).fit(X, y)
    assert sg.history_["primal"][-1] * scale == pytest.approx(ref, rel=0.02)


# ---------------------------------------------------------------- surrogates on OCR


@pytest.mark.parametrize("surrogate,solver", [("margin", "bcfw"), ("slack", "bcfw"),
                                              ("poslearn", "bcfw"), ("margin", "subgradient"),
                                              ("lp", "subgradient")])
def test_surrogates_learn_ocr(ocr, surrogate, solver):
    Xtr, ytr, Xte, yte = ocr
    est = StructuredSVM(surrogate=surrogate, solver=solver, max_iter=10, check_every=5,
                        random_state=0).fit(Xtr, ytr)
    h = est.history_
    assert all(np.all(np.isfinite(v)) for v in h.values())
    assert np.all(np.diff(h["primal"]) < 0) or h["primal"][-1] < h["primal"][0]
    if solver == "bcfw":
        assert np.all(h["gap"] >= -1e-9)
    acc = est.score(Xte, yte)
    assert 0.5 < acc <= 1.0  # chance is 1/26
    assert est.score(Xtr, ytr) > acc - 0.05


def test_slack_and_poslearn_reject_unsupported_structures():
    X, y = synthetic_graphs(n=6)  # a tree among them
    with pytest.raises(ValueError, match="surrogate='slack'.*sample 2"):
        StructuredSVM(surrogate="slack", max_iter=1).fit(X, y)
    snakes = load_snakes(edge_features=None)
    with pytest.raises(ValueError, match="surrogate='poslearn'.*sample 0 is loopy"):
        StructuredSVM(surrogate="poslearn", max_iter=1).fit(snakes.X_train[:2],
                                                            snakes.y_train[:2])
    with pytest.raises(ValueError, match="surrogate='lp'.*solver='subgradient'"):
        StructuredSVM(surrogate="lp", solver="bcfw", max_iter=1).fit(X, y)
    with pytest.raises(ValueError, match="class_weight"):
        Xc, yc = synthetic_chains(n=3)
        StructuredSVM(surrogate="slack", class_weight="balanced", max_iter=1).fit(Xc, yc)


def test_poslearn_with_a_single_class_is_solved_at_zero():
    X, _ = synthetic_chains(n=5)
    y = [np.zeros(len(x), np.int64) for x in X]
    est = StructuredSVM(surrogate="poslearn", max_iter=3, random_state=0).fit(X, y)
    assert est.history_["primal"][-1] == pytest.approx(0.0, abs=1e-12)


def test_lp_objective_on_chains_is_the_margin_objective():
    X, y = synthetic_chains(n=8)
    est = StructuredSVM(surrogate="lp", solver="subgradient", max_iter=3, check_every=1,
                        inference_iter=50, random_state=0).fit(X, y)
    assert est.history_["primal"][-1] == pytest.approx(brute_primal(est, X, y), rel=1e-6)


# ---------------------------------------------------------------- formats


def test_graphs_with_edge_features_snakes():
    snakes = load_snakes()
    X, y = snakes.X_train[:20], snakes.y_train[:20]
    est = StructuredSVM(C=1.0, max_iter=3, random_state=0).fit(X, y)
    assert isinstance(est.model_, GraphModel)
    assert est.pairwise_coef_.shape == (X[0][2].shape[1], 11, 11)
    pred = est.predict(snakes.X_test[:10])
    assert isinstance(pred, list) and len(pred) == 10
    for p, t in zip(pred, snakes.y_test[:10]):
        assert p.shape == t.shape and np.isin(p, est.classes_).all()
    assert np.isfinite(est.score(snakes.X_test[:10], snakes.y_test[:10]))
    assert np.all(np.isfinite(est.history_["primal"]))
    # one-hot (direction) edge features, and lp through the subgradient solver
    sd = load_snakes(edge_features="direction")
    for kw in ({}, {"solver": "subgradient", "surrogate": "lp"}):
        e2 = StructuredSVM(max_iter=2, random_state=0, **kw).fit(sd.X_train[:10],
                                                                 sd.y_train[:10])
        assert e2.pairwise_coef_.shape == (2, 11, 11)
        assert 0.0 <= e2.score(sd.X_test[:5], sd.y_test[:5]) <= 1.0


@pytest.fixture(scope="module")
def scene_subset():
    s = load_scene()
    rng = np.random.default_rng(0)
    tr = rng.choice(len(s.X_train), 150, replace=False)
    te = rng.choice(len(s.X_test), 100, replace=False)
    return s.X_train[tr], s.y_train[tr], s.X_test[te], s.y_test[te]


@pytest.mark.parametrize("edges", ["auto", "full", "tree", "independent"])
def test_multilabel_scene(scene_subset, edges):
    Xtr, Ytr, Xte, Yte = scene_subset
    model = "auto" if edges == "auto" else MultiLabelModel(edges=edges)
    est = StructuredSVM(model=model, max_iter=10, random_state=0).fit(Xtr, Ytr)
    assert isinstance(est.model_, MultiLabelModel)
    pred = est.predict(Xte)
    assert pred.shape == Yte.shape and set(np.unique(pred)) <= {0, 1}
    # label l scores +unary_coef_[l] @ x when on, - when off
    assert est.unary_coef_.shape == (Ytr.shape[1], Xtr.shape[1])
    acc = est.score(Xte, Yte)
    assert acc > (Yte == 0).mean() - 0.02  # at least the all-off baseline
    assert acc == pytest.approx(hamming_accuracy(Yte, pred))


def test_multiclass_iris():
    from sklearn.datasets import load_iris

    X, y = load_iris(return_X_y=True)
    X = np.c_[X, np.ones(len(X))]
    names = np.array(["setosa", "versicolor", "virginica"])[y]
    est = StructuredSVM(C=10.0, max_iter=50, random_state=0).fit(X, names)
    pred = est.predict(X)
    assert pred.shape == (150,) and pred.dtype == names.dtype
    np.testing.assert_array_equal(est.classes_, np.unique(names))
    assert est.score(X, names) > 0.9
    assert est.score(X, names) == pytest.approx(np.mean(pred == names))


def test_string_labels_round_trip(letters, ocr):
    Xtr, ytr, Xte, yte = ocr
    names = letters.target_names
    ytr_s = [names[v] for v in ytr]
    yte_s = [names[v] for v in yte]
    num = StructuredSVM(max_iter=5, random_state=0).fit(Xtr, ytr)
    txt = StructuredSVM(max_iter=5, random_state=0).fit(Xtr, ytr_s)
    np.testing.assert_array_equal(txt.classes_, names[num.classes_])
    np.testing.assert_array_equal(txt.coef_, num.coef_)
    pred_s = txt.predict(Xte)
    pred_n = num.predict(Xte)
    for ps, pn in zip(pred_s, pred_n):
        assert ps.dtype.kind == "U"
        np.testing.assert_array_equal(ps, names[pn])
    assert txt.score(Xte, yte_s) == num.score(Xte, yte)


def test_unseen_test_label_is_an_error_not_a_crash(ocr):
    Xtr, ytr, Xte, yte = ocr
    est = StructuredSVM(max_iter=5, random_state=0).fit(Xtr, ytr)
    yte = [a.copy() for a in yte]
    yte[0][0] = 99  # never a letter code
    seen = np.concatenate(ytr)
    unseen = ~np.isin(np.concatenate(yte), seen)
    assert unseen.any()
    pred = np.concatenate(est.predict(Xte))
    truth = np.concatenate(yte)
    assert not np.any(pred[unseen] == truth[unseen])
    score = est.score(Xte, yte)
    assert np.isfinite(score) and score == pytest.approx(np.mean(pred == truth))
    # strings, with a label of another type altogether
    txt = StructuredSVM(max_iter=2, random_state=0).fit(
        Xtr, [np.array(list("abcdefghijklmnopqrstuvwxyz"))[a] for a in ytr])
    y_bad = [np.array(["?"] * len(x)) for x in Xte]
    assert txt.score(Xte, y_bad) == 0.0


# ---------------------------------------------------------------- sklearn citizenship


def test_is_not_a_classifier_mixin_and_declares_non_tabular_input():
    est = StructuredSVM()
    assert not isinstance(est, ClassifierMixin)
    tags = get_tags(est)
    assert tags.input_tags.two_d_array is False


@pytest.mark.parametrize("check", PARAMETER_CHECKS)
def test_sklearn_estimator_checks(check):
    run_check(check, StructuredSVM(), StructuredSVM(model=MultiLabelModel(edges="tree"), C=0.5))


def test_get_set_params_and_clone_with_nested_model():
    est = StructuredSVM(model=MultiLabelModel(), C=2.0)
    params = est.get_params(deep=True)
    assert params["C"] == 2.0 and params["model__edges"] == "full"
    est.set_params(model__edges="tree", model__inference_method="exact", max_iter=7)
    assert est.model.edges == "tree" and est.model.inference_method == "exact"
    assert est.max_iter == 7
    c = clone(est)
    assert c.model is not est.model
    assert c.get_params(deep=True).keys() == est.get_params(deep=True).keys()
    assert all(c.get_params()[k] == v for k, v in est.get_params(deep=False).items()
               if k != "model")
    assert repr(c) == repr(est)
    assert not hasattr(c, "coef_")


def _same_dict(a, b):
    assert a.keys() == b.keys()
    for k in a:
        if isinstance(a[k], np.ndarray):
            np.testing.assert_array_equal(a[k], b[k])
        else:
            assert a[k] == b[k] or (a[k] is b[k]), k


@pytest.mark.parametrize("make", [
    lambda: (MultiLabelModel(edges=np.array([[0, 1], [1, 2]])), "multilabel"),
    lambda: (MultiLabelModel(edges="tree"), "multilabel"),
    lambda: (ChainModel(), "chain"),
    lambda: (GraphModel(inference_method="exact"), "graph"),
])
def test_fit_does_not_mutate_the_model(make, scene_subset):
    model, kind = make()
    if kind == "multilabel":
        X, Y = scene_subset[0][:40], scene_subset[1][:40, :3]
    elif kind == "chain":
        X, Y = synthetic_chains(n=6)
    else:
        X, Y = synthetic_graphs(n=6)
    before_params = copy.deepcopy(model.get_params())
    before_dict = copy.deepcopy(model.__dict__)
    est = StructuredSVM(model=model, max_iter=2, random_state=0).fit(X, Y)
    assert est.model is model and est.model_ is not model
    _same_dict(model.get_params(), before_params)
    _same_dict(model.__dict__, before_dict)
    assert not hasattr(model, "classes_")
    est.predict(X)
    _same_dict(model.__dict__, before_dict)


@pytest.mark.parametrize("solver", ["bcfw", "subgradient"])
def test_refit_is_deterministic_and_starts_afresh(solver):
    X, y = synthetic_chains(n=12)
    X2, y2 = synthetic_chains(seed=5, n=9)
    est = StructuredSVM(solver=solver, max_iter=4, random_state=3)
    first = est.fit(X, y).coef_.copy()
    hist = {k: v.copy() for k, v in est.history_.items()}
    est.fit(X2, y2)
    est.fit(X, y)
    np.testing.assert_array_equal(est.coef_, first)
    assert est.n_iter_ == 4
    np.testing.assert_array_equal(est.history_["primal"], hist["primal"])
    np.testing.assert_array_equal(clone(est).fit(X, y).coef_, first)
    # a RandomState instance is consumed, an int seed is not
    rs = np.random.RandomState(0)
    est_rs = StructuredSVM(solver=solver, max_iter=4, random_state=rs)
    a = est_rs.fit(X, y).coef_.copy()
    assert isinstance(est_rs.random_state, np.random.RandomState)
    assert np.all(np.isfinite(a))


@pytest.mark.parametrize("solver", ["bcfw", "subgradient"])
def test_warm_start_continues(solver):
    X, y = synthetic_chains(n=12)
    est = StructuredSVM(solver=solver, max_iter=3, tol=0.0, check_every=1, warm_start=True,
                        random_state=0).fit(X, y)
    first = est.history_["primal"].copy()
    assert est.n_iter_ == 3
    est.fit(X, y)
    assert est.n_iter_ == 6
    np.testing.assert_array_equal(est.history_["pass"], [4, 5, 6])
    # continued, not restarted: better than where the first fit began
    assert est.history_["primal"][0] < first[0]
    cold = StructuredSVM(solver=solver, max_iter=6, tol=0.0, check_every=1,
                         random_state=0).fit(X, y)
    assert est.history_["primal"][-1] == pytest.approx(cold.history_["primal"][-1], rel=0.2)
    # new training data of another shape: BCFW's dual blocks do not fit, start afresh
    X2, y2 = synthetic_chains(seed=5, n=9)
    est.fit(X2, y2)
    if solver == "bcfw":
        assert est.n_iter_ == 3
    assert np.all(np.isfinite(est.coef_))


def test_pickle_round_trip(ocr):
    Xtr, ytr, Xte, _ = ocr
    est = StructuredSVM(max_iter=3, random_state=0).fit(Xtr[:20], ytr[:20])
    blob = pickle.dumps(est)
    back = pickle.loads(blob)
    for a, b in zip(est.predict(Xte), back.predict(Xte)):
        np.testing.assert_array_equal(a, b)
    np.testing.assert_array_equal(back.coef_, est.coef_)
    assert back.get_params(deep=False).keys() == est.get_params(deep=False).keys()
    # solver state is not pickled; refitting the copy works
    back.fit(Xtr[:20], ytr[:20])
    np.testing.assert_array_equal(back.coef_, est.coef_)


@pytest.fixture(scope="module")
def cv_words(letters):
    """45 words, 3 contiguous folds, with letters absent from some training folds."""
    X, y = _words(letters, 2, 45)
    cv = KFold(3)
    missing = 0
    for tr, te in cv.split(X):
        seen = np.unique(np.concatenate([y[i] for i in tr]))
        test = np.unique(np.concatenate([y[i] for i in te]))
        missing += np.setdiff1d(test, seen).size
    assert missing > 0
    return X, y, cv


def test_grid_search_and_cross_val_score_without_warnings_or_nan(cv_words):
    X, y, cv = cv_words
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        # short fits by design: that they stop at max_iter is not what is tested
        warnings.simplefilter("ignore", ConvergenceWarning)
        scores = cross_val_score(StructuredSVM(max_iter=5, random_state=0), X, y, cv=cv,
                                 error_score="raise")
        assert scores.shape == (3,) and np.all(np.isfinite(scores))
        assert np.all((scores > 0.3) & (scores < 1.0))
        gs = GridSearchCV(StructuredSVM(max_iter=5, random_state=0), {"C": [0.1, 1.0]},
                          cv=cv, error_score="raise").fit(X, y)
        assert np.all(np.isfinite(gs.cv_results_["mean_test_score"]))
        assert gs.best_params_["C"] in (0.1, 1.0)
        assert np.isfinite(gs.score(X, y))
        gs2 = GridSearchCV(StructuredSVM(max_iter=3, random_state=0),
                           {"surrogate": ["margin", "poslearn"]}, cv=cv,
                           scoring={k: SCORERS[k] for k in ("hamming_accuracy",
                                                            "sequence_accuracy")},
                           refit="hamming_accuracy",
                           error_score="raise").fit(X, y)
        for key in ("hamming_accuracy", "sequence_accuracy"):
            assert np.all(np.isfinite(gs2.cv_results_[f"mean_test_{key}"]))


def test_randomized_search_and_cross_validate(cv_words):
    X, y, cv = cv_words
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        # short fits by design: that they stop at max_iter is not what is tested
        warnings.simplefilter("ignore", ConvergenceWarning)
        rs = RandomizedSearchCV(StructuredSVM(max_iter=3, random_state=0),
                                {"C": loguniform(0.01, 10.0)}, n_iter=2, cv=cv,
                                scoring=hamming_scorer, random_state=0,
                                error_score="raise").fit(X, y)
        assert np.all(np.isfinite(rs.cv_results_["mean_test_score"]))
        res = cross_validate(StructuredSVM(max_iter=3, random_state=0), X, y, cv=cv,
                             scoring={"hamming": hamming_scorer, "sequence": sequence_scorer},
                             return_train_score=True, error_score="raise")
        for key in ("test_hamming", "test_sequence", "train_hamming"):
            assert np.all(np.isfinite(res[key])), key
        assert np.all(res["test_sequence"] <= res["test_hamming"])
    est = StructuredSVM(max_iter=3, random_state=0).fit(X[:30], y[:30])
    assert hamming_scorer(est, X[30:], y[30:]) == pytest.approx(est.score(X[30:], y[30:]))
    assert sequence_scorer(est, X[30:], y[30:]) == pytest.approx(
        sequence_accuracy(y[30:], est.predict(X[30:])))


def test_pipeline_with_node_transformer(ocr):
    Xtr, ytr, Xte, yte = ocr
    pipe = Pipeline([("scale", NodeTransformer(StandardScaler())),
                     ("svm", StructuredSVM(max_iter=5, random_state=0))])
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        # short fits by design: that they stop at max_iter is not what is tested
        warnings.simplefilter("ignore", ConvergenceWarning)
        pipe.fit(Xtr, ytr)
        pred = pipe.predict(Xte)
        assert [len(p) for p in pred] == [len(t) for t in yte]
        assert pipe.score(Xte, yte) > 0.5
        gs = GridSearchCV(pipe, {"svm__C": [0.1, 1.0]}, cv=2, error_score="raise")
        gs.fit(Xtr[:30], ytr[:30])
    assert np.isfinite(gs.best_score_)


# ---------------------------------------------------------------- bad input


@pytest.mark.parametrize("params,name", [
    ({"C": 0}, "C"), ({"C": -1.0}, "C"), ({"C": np.inf}, "C"), ({"C": "1"}, "C"),
    ({"solver": "sgd"}, "solver"), ({"surrogate": "hinge"}, "surrogate"),
    ({"max_iter": 0}, "max_iter"), ({"max_iter": 2.5}, "max_iter"),
    ({"tol": -1.0}, "tol"), ({"batch_size": 0}, "batch_size"),
    ({"inference_iter": 0}, "inference_iter"), ({"check_every": -1}, "check_every"),
    ({"shuffle": "random"}, "shuffle"),
    ({"class_weight": "auto"}, "class_weight"), ({"class_weight": [1.0, 2.0]}, "class_weight"),
    ({"class_weight": {99: 1.0}}, "class_weight"), ({"class_weight": {0: -1.0}}, "class_weight"),
    ({"class_weight": {0: np.nan}}, "class_weight"), ({"model": "chain"}, "model"),
    ({"model": StandardScaler()}, "model"),
])
def test_invalid_params_raise_at_fit_naming_the_parameter(params, name):
    X, y = synthetic_chains(n=4)
    est = StructuredSVM(**params)  # never in __init__
    StructuredSVM().set_params(**params)  # nor in set_params
    with pytest.raises(ValueError, match=rf"\b{name}\b") as err:
        est.fit(X, y)
    assert not hasattr(est, "coef_")
    # a value no data could make valid is a parameter error, also a TypeError (as in
    # scikit-learn); a class_weight label absent from y is a mismatch with the data
    assert isinstance(err.value, TypeError) != (params == {"class_weight": {99: 1.0}})


def test_nan_features_name_the_sample():
    X, y = synthetic_chains(n=5)
    X[3] = X[3].copy()
    X[3][0, 1] = np.nan
    with pytest.raises(ValueError, match="sample 3"):
        StructuredSVM(max_iter=1).fit(X, y)
    G, gy = synthetic_graphs(n=6)
    feats, edges, ef = G[4]
    ef = ef.copy()
    if len(ef):
        ef[0, 0] = np.inf
        G[4] = (feats, edges, ef)
        with pytest.raises(ValueError, match="sample 4"):
            StructuredSVM(max_iter=1).fit(G, gy)
    Xm = np.random.default_rng(0).normal(size=(6, 3))
    Xm[2, 1] = np.nan
    with pytest.raises(ValueError, match="sample 2"):
        StructuredSVM(max_iter=1).fit(Xm, np.array([0, 1, 0, 1, 0, 1]))
    with pytest.raises(ValueError, match="sample 2"):
        StructuredSVM(max_iter=1).fit(Xm, np.eye(6, 3, dtype=int))
    # at predict time too
    X, y = synthetic_chains(n=5)
    est = StructuredSVM(max_iter=1).fit(X, y)
    X[1] = X[1] * np.nan
    with pytest.raises(ValueError, match="sample 1"):
        est.predict(X)


def test_wrong_label_counts_name_the_sample():
    X, y = synthetic_chains(n=5, max_len=4)
    y = list(y)
    y[2] = np.r_[y[2], 0]
    with pytest.raises(ValueError, match="sample 2"):
        StructuredSVM(max_iter=1).fit(X, y)
    with pytest.raises(ValueError, match="5 samples but y has 4"):
        StructuredSVM(max_iter=1).fit(X, y[:4])
    Xm = np.random.default_rng(0).normal(size=(6, 3))
    with pytest.raises(ValueError, match="6 samples but y has 5"):
        StructuredSVM(max_iter=1).fit(Xm, np.arange(5))


def test_predict_with_another_number_of_features():
    X, y = synthetic_chains(n=5)
    est = StructuredSVM(max_iter=1).fit(X, y)
    with pytest.raises(ValueError, match="features"):
        est.predict([x[:, :3] for x in X])
    G, gy = synthetic_graphs(n=6)
    gest = StructuredSVM(max_iter=1).fit(G, gy)
    with pytest.raises(ValueError, match="features"):
        gest.predict([(f[:, :2], e, ef) for f, e, ef in G])
    with pytest.raises(ValueError, match="edge features"):
        gest.predict([(f, e, ef[:, :1]) for f, e, ef in G])
    Xm = np.random.default_rng(0).normal(size=(6, 3))
    mest = StructuredSVM(max_iter=1).fit(Xm, np.array([0, 1, 2, 0, 1, 2]))
    with pytest.raises(ValueError, match="features"):
        mest.predict(Xm[:, :2])
    with pytest.raises(ValueError, match="format"):
        est.predict(G)


def test_predict_before_fit():
    from sklearn.exceptions import NotFittedError

    with pytest.raises(NotFittedError):
        StructuredSVM().predict([np.zeros((2, 3))])


# ---------------------------------------------------------------- numerics


@pytest.mark.parametrize("kw", [{}, {"average": False}, {"solver": "subgradient",
                                                           "check_every": 2},
                                {"solver": "subgradient", "average": False, "batch_size": 3,
                                 "check_every": 1},
                                {"class_weight": "balanced"}, {"shuffle": "uniform"}])
def test_no_nan_in_history_or_predictions(kw):
    X, y = synthetic_chains(n=10)
    X = [1e3 * x for x in X]  # large scores
    y = [np.array([0.5, 1.5, 2.5])[v] for v in y]  # float labels
    est = StructuredSVM(C=100.0, max_iter=4, random_state=0, **kw).fit(X, y)
    for k, v in est.history_.items():
        assert v.shape == (len(est.history_["pass"]),)
        assert np.all(np.isfinite(v)), k
    assert np.all(np.isfinite(est.coef_))
    pred = est.predict(X)
    assert all(np.all(np.isfinite(p)) and np.isin(p, est.classes_).all() for p in pred)
    with_threads = StructuredSVM(C=100.0, max_iter=4, random_state=0, n_jobs=2, **kw).fit(X, y)
    np.testing.assert_array_equal(with_threads.coef_, est.coef_)


def test_sparse_features_give_the_dense_result(scene_subset):
    X, y = synthetic_chains(n=8)
    X[0][:, 1] = 0.0
    dense = StructuredSVM(max_iter=5, random_state=0).fit(X, y)
    for fmt in (sp.csr_matrix, sp.csc_matrix, sp.coo_matrix):
        sparse = StructuredSVM(max_iter=5, random_state=0).fit([fmt(x) for x in X], y)
        np.testing.assert_allclose(sparse.coef_, dense.coef_, rtol=1e-12, atol=1e-14)
        for a, b in zip(sparse.predict([fmt(x) for x in X]), dense.predict(X)):
            np.testing.assert_array_equal(a, b)
    Xtr, Ytr = scene_subset[0][:60], scene_subset[1][:60]
    d = StructuredSVM(max_iter=5, random_state=0).fit(Xtr, Ytr)
    s = StructuredSVM(max_iter=5, random_state=0).fit(sp.csr_matrix(Xtr), Ytr)
    np.testing.assert_allclose(s.coef_, d.coef_, rtol=1e-12, atol=1e-14)
    np.testing.assert_array_equal(s.predict(sp.csr_matrix(Xtr)), d.predict(Xtr))


def test_verbose_prints_one_line_per_pass(capsys):
    X, y = synthetic_chains(n=5)
    StructuredSVM(max_iter=4, check_every=2, tol=0, verbose=1, random_state=0).fit(X, y)
    lines = [ln for ln in capsys.readouterr().out.splitlines() if ln.strip()]
    assert len(lines) == 4
    # objective values on the checked passes (2 and 4) only
    assert ["primal" in ln for ln in lines] == [False, True, False, True]
    assert all("gap" in ln for ln in lines[1::2])


def test_empty_samples_and_no_checks():
    X, y = synthetic_chains(n=6)
    X = [np.zeros((0, 4))] + X + [np.zeros((0, 4))]
    y = [np.zeros(0, np.int64)] + y + [np.zeros(0, np.int64)]
    est = StructuredSVM(max_iter=3, check_every=0, random_state=0).fit(X, y)
    assert all(len(v) == 0 for v in est.history_.values())
    pred = est.predict(X)
    assert pred[0].shape == (0,) and pred[-1].shape == (0,)
    assert np.isfinite(est.score(X, y))
