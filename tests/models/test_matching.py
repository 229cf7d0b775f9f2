"""MatchingModel against brute force over all matchings, its projection against a
reference QP, learning on the letter alignment data, and its validation."""

import itertools

import numpy as np
import pytest
from scipy.optimize import linear_sum_assignment, minimize
from sklearn.exceptions import NotFittedError

from skstruct import StructuredPerceptron, StructuredSVM
from skstruct.datasets import load_letters, make_letter_alignment
from skstruct.models import MatchingModel
from tests.sklearn_checks import PARAMETER_CHECKS, run_check


def random_samples(seed, n=6, n_features=3, max_items=5):
    rng = np.random.default_rng(seed)
    X, y = [], []
    for _ in range(n):
        n_left = int(rng.integers(1, max_items + 1))
        n_right = int(rng.integers(n_left, max_items + 1))
        X.append(rng.normal(size=(n_left, n_right, n_features)))
        y.append(rng.permutation(n_right)[:n_left])
    return X, y


def matchings(n_left, n_right):
    return [np.array(p) for p in itertools.permutations(range(n_right), n_left)]


def vertex(y, n_right):
    Z = np.zeros((len(y), n_right))
    Z[np.arange(len(y)), y] = 1.0
    return Z.ravel()


# ------------------------------------------------------- protocol vs brute force


@pytest.mark.parametrize("seed", range(4))
def test_inference_and_loss_augmented_inference_against_enumeration(seed):
    X, y = random_samples(seed)
    X.append(np.random.default_rng(seed).normal(size=(2, 5, 3)))     # n_left < n_right
    y.append(np.array([4, 1]))
    model = MatchingModel().fit(X, y)
    w = np.random.default_rng(100 + seed).normal(size=model.size_joint_feature)
    for x, yi in zip(X, y):
        cands = matchings(*x.shape[:2])
        scores = np.array([model.joint_feature(x, c) @ w for c in cands])
        best = model.inference(x, w)
        assert best.shape == yi.shape and best.dtype == np.int64
        assert len(set(best.tolist())) == len(best)
        assert model.joint_feature(x, best) @ w == pytest.approx(scores.max(), abs=1e-10)
        aug = scores + np.array([model.loss(yi, c) for c in cands])
        y_hat = model.loss_augmented_inference(x, yi, w)
        assert model.joint_feature(x, y_hat) @ w + model.loss(yi, y_hat) == pytest.approx(
            aug.max(), abs=1e-10)


def test_joint_feature_and_loss_definitions():
    rng = np.random.default_rng(0)
    x = rng.normal(size=(3, 4, 2))
    model = MatchingModel().fit([x], [np.array([0, 1, 2])])
    assert model.size_joint_feature == model.n_features_ == 2
    y = np.array([3, 0, 1])
    np.testing.assert_allclose(model.joint_feature(x, y), x[0, 3] + x[1, 0] + x[2, 1])
    # the L1 distance of the assignment matrices: twice the left items matched differently
    assert model.loss(y, y) == 0.0
    assert model.loss(y, [3, 1, 0]) == 4.0
    assert model.loss(y, [2, 0, 1]) == 2.0
    assert model.loss(y, [2, 1, 0]) == np.abs(vertex(y, 4) - vertex([2, 1, 0], 4)).sum() == 6.0


@pytest.mark.parametrize("seed", range(3))
def test_relaxed_interface_at_the_vertices(seed):
    X, y = random_samples(seed)
    model = MatchingModel().fit(X, y)
    w = np.random.default_rng(seed).normal(size=model.size_joint_feature)
    for x, yi in zip(X, y):
        n_left, n_right = x.shape[:2]
        z = model.relaxed_labels(x, yi)
        np.testing.assert_array_equal(z, vertex(yi, n_right))
        c, c0 = model.relaxed_loss(x, yi)
        assert c0 == n_left and c.shape == (n_left * n_right,)
        s = model.relaxed_scores(x, w)
        for cand in matchings(n_left, n_right):
            zc = model.relaxed_labels(x, cand)
            assert model.loss(yi, cand) == pytest.approx(c0 + c @ zc, abs=1e-12)
            np.testing.assert_allclose(model.relaxed_joint_feature(x, zc),
                                       model.joint_feature(x, cand), atol=1e-12)
            assert zc @ s == pytest.approx(model.joint_feature(x, cand) @ w, abs=1e-10)
        # linear in z: a mixture of two vertices
        other = matchings(n_left, n_right)[-1]
        zm = 0.3 * z + 0.7 * model.relaxed_labels(x, other)
        np.testing.assert_allclose(model.relaxed_joint_feature(x, zm),
                                   0.3 * model.joint_feature(x, yi)
                                   + 0.7 * model.joint_feature(x, other), atol=1e-12)


# ------------------------------------------------------------------ projection


def reference_projection(V):
    m, n = V.shape
    cons = [{"type": "eq", "fun": lambda z: z.reshape(m, n).sum(axis=1) - 1.0},
            {"type": "ineq", "fun": lambda z: 1.0 - z.reshape(m, n).sum(axis=0)}]
    res = minimize(lambda z: 0.5 * np.sum((z - V.ravel()) ** 2), np.full(m * n, 1.0 / n),
                   jac=lambda z: z - V.ravel(), bounds=[(0.0, None)] * (m * n),
                   constraints=cons, method="SLSQP", options={"ftol": 1e-15, "maxiter": 500})
    return res.x.reshape(m, n)


def check_projection(V, Z, tol=1e-9):
    """Feasibility, and optimality by the variational inequality <V - Z, Y - Z> <= 0
    over the polytope's vertices (the matchings), i.e. at the best one."""
    scale = max(1.0, np.abs(V).max())
    assert Z.min() >= -tol * scale
    np.testing.assert_allclose(Z.sum(axis=1), 1.0, atol=tol * scale)
    assert Z.sum(axis=0).max() <= 1.0 + tol * scale
    G = V - Z
    rows, cols = linear_sum_assignment(G, maximize=True)
    assert G[rows, cols].sum() <= np.sum(G * Z) + tol * scale * Z.size


def test_project_against_a_reference_qp():
    rng = np.random.default_rng(0)
    model = MatchingModel()
    for t in range(40):
        m = int(rng.integers(1, 5))
        n = int(rng.integers(m, 5))
        V = rng.normal(size=(m, n)) * 10.0 ** rng.integers(-1, 2)
        if t % 4 == 0:
            V = np.round(V)                 # ties
        model.fit([np.zeros((m, n, 1))], [np.arange(m)])
        Z = model.project(np.zeros((m, n, 1)), V.ravel()).reshape(m, n)
        check_projection(V, Z)
        R = reference_projection(V)
        np.testing.assert_allclose(Z, R, atol=1e-6)
        # at least as close to V as the reference's point
        assert np.sum((Z - V) ** 2) <= np.sum((R - V) ** 2) + 1e-9


@pytest.mark.parametrize("kind", ["normal", "large", "ties", "near_vertex", "constant"])
def test_project_is_optimal_on_larger_cases(kind):
    rng = np.random.default_rng(1)
    model = MatchingModel()
    for _ in range(30):
        m = int(rng.integers(1, 15))
        n = int(rng.integers(m, 16))
        V = rng.normal(size=(m, n))
        if kind == "large":
            V *= 10.0 ** rng.uniform(1, 3)
        elif kind == "ties":
            V = np.round(2 * V)
        elif kind == "near_vertex":
            V = 0.2 * V + vertex(rng.permutation(n)[:m], n).reshape(m, n)
        elif kind == "constant":
            V = np.full((m, n), rng.normal())
        x = np.zeros((m, n, 1))
        model.fit([x], [np.arange(m)])
        check_projection(V, model.project(x, V.ravel()).reshape(m, n))


def test_project_leaves_feasible_points_unchanged():
    rng = np.random.default_rng(2)
    model = MatchingModel()
    for _ in range(30):
        m = int(rng.integers(1, 7))
        n = int(rng.integers(m, 8))
        x = np.zeros((m, n, 1))
        model.fit([x], [np.arange(m)])
        weights = rng.dirichlet(np.ones(4))
        z = sum(wk * vertex(rng.permutation(n)[:m], n) for wk in weights)
        np.testing.assert_allclose(model.project(x, z), z, atol=1e-12)
        y = rng.permutation(n)[:m]
        np.testing.assert_array_equal(model.project(x, vertex(y, n)), vertex(y, n))


# ------------------------------------------------------------- learning


@pytest.fixture(scope="module")
def alignment():
    d = make_letter_alignment(random_state=0)
    train = np.flatnonzero(d.folds == 0)[:80]
    test = np.flatnonzero(d.folds == 1)[:150]
    return ([d.X[i] for i in train], [d.y[i] for i in train],
            [d.X[i] for i in test], [d.y[i] for i in test])


def chance(y):
    """Expected accuracy of a uniformly random matching: 1 / n_right per left item."""
    return np.mean(np.concatenate([np.full(len(yi), 1.0 / len(yi)) for yi in y]))


def test_structured_svm_bcfw_learns_the_alignment(alignment):
    X, y, X_test, y_test = alignment
    tol = 1e-3
    svm = StructuredSVM(model=MatchingModel(), C=1.0, tol=tol, max_iter=300,
                        random_state=0).fit(X, y)
    assert svm.history_["gap"][-1] <= tol
    assert svm.coef_.shape == (X[0].shape[2],)
    pred = svm.predict(X_test)
    assert isinstance(pred, list) and all(p.shape == t.shape for p, t in zip(pred, y_test))
    acc = svm.score(X_test, y_test)
    # the score is the fraction of left items matched to their true right item
    right = np.concatenate([p == t for p, t in zip(pred, y_test)])
    assert acc == pytest.approx(right.mean())
    assert acc > 0.4 > 2.5 * chance(y_test)


def test_subgradient_and_perceptron_learn_the_alignment(alignment):
    X, y, X_test, y_test = alignment
    sub = StructuredSVM(model=MatchingModel(), C=1.0, solver="subgradient", max_iter=20,
                        random_state=0).fit(X, y)
    assert sub.score(X_test, y_test) > 0.4
    for loss_augmented in (False, True):
        perc = StructuredPerceptron(model=MatchingModel(), max_iter=10,
                                    loss_augmented=loss_augmented, random_state=0).fit(X, y)
        assert perc.score(X_test, y_test) > 0.4


# ----------------------------------------------------------------- the data


def test_letter_alignment_data():
    d = make_letter_alignment(random_state=3)
    n = len(d.X)
    assert n > 3000 and len(d.y) == len(d.words) == n and d.pairs.shape == (n, 2)
    assert len(d.feature_names) == 16 and d.feature_names[8] == "overlap"
    assert np.array_equal(np.unique(d.folds), np.arange(10))
    for x, yi, ll, lr, word in zip(d.X, d.y, d.letters_left, d.letters_right, d.words):
        assert x.shape == (len(word), len(word), 16) and x.dtype == np.float64
        assert sorted(yi.tolist()) == list(range(len(word)))
        assert "".join(d.target_names[ll]) == word
        np.testing.assert_array_equal(lr[yi], ll)            # the truth matches letters
        assert x.min() >= 0.0 and x.max() <= 1.0
    # both renditions of a pair are of the same word, in the same fold; each is used once
    letters = load_letters()
    assert np.all(letters.words[d.pairs[:, 0]] == letters.words[d.pairs[:, 1]])
    assert np.all(letters.folds[d.pairs[:, 0]] == d.folds)
    assert np.all(letters.folds[d.pairs[:, 1]] == d.folds)
    assert len(np.unique(d.pairs)) == 2 * n
    again = make_letter_alignment(random_state=3)
    assert all(np.array_equal(a, b) for a, b in zip(d.X, again.X))
    assert all(np.array_equal(a, b) for a, b in zip(d.y, again.y))
    other = make_letter_alignment(random_state=4)
    assert not np.array_equal(d.pairs, other.pairs)


def test_letter_alignment_with_distractors():
    d = make_letter_alignment(n_distractors=2, random_state=0)
    letters = load_letters()
    lengths = np.array([len(y) for y in letters.y])
    word_of_letter = np.repeat(np.arange(len(lengths)), lengths)
    starts = np.concatenate([[0], np.cumsum(lengths)[:-1]])
    for x, yi, ll, lr, li, ri, (a, b) in zip(d.X[:300], d.y, d.letters_left, d.letters_right,
                                             d.left_index, d.right_index, d.pairs):
        assert x.shape[1] == x.shape[0] + 2 and len(ri) == x.shape[1]
        np.testing.assert_array_equal(lr[yi], ll)
        np.testing.assert_array_equal(li, starts[a] + np.arange(len(li)))
        np.testing.assert_array_equal(ri[yi], starts[b] + np.arange(len(li)))
        distractors = np.delete(ri, yi)
        assert not np.isin(word_of_letter[distractors], [a, b]).any()
        assert np.all(letters.folds[word_of_letter[distractors]] == letters.folds[a])
    model = MatchingModel().fit(d.X[:20], d.y[:20])
    assert model.inference(d.X[0], np.ones(16)).shape == d.y[0].shape
    with pytest.raises(ValueError, match="n_distractors"):
        make_letter_alignment(n_distractors=-1)


# ------------------------------------------------------------------ validation


def _bad(case):
    X, y = random_samples(0, n=3)
    X = [x.copy() for x in X]
    if case == "ndim":
        X[1] = X[1][..., 0]
        return X, y, r"sample 1: edge features must be 3-D"
    if case == "n_left":
        X[1] = np.zeros((3, 2, 3))
        y[1] = np.array([0, 1, 0])
        return X, y, r"sample 1: 3 left items but only 2 right items"
    if case == "n_features":
        X[1] = X[1][..., :2]
        return X, y, r"sample 1: 2 edge features but sample 0 has 3"
    if case == "nan":
        X[1][0, 0, 0] = np.nan
        return X, y, r"sample 1: edge features contain NaN"
    if case == "inf":
        X[1][0, 0, 1] = -np.inf
        return X, y, r"sample 1: edge features contain NaN or infinite"
    if case == "y_length":
        y[1] = np.append(y[1], 0)
        return X, y, r"sample 1: \d+ labels for \d+ left items"
    if case == "y_range":
        y[1] = y[1].copy()
        y[1][0] = X[1].shape[1]
        return X, y, r"sample 1: y\[0\] = \d+ is out of range"
    if case == "y_negative":
        y[1] = y[1].copy()
        y[1][-1] = -1
        return X, y, r"sample 1: y\[\d+\] = -1 is out of range"
    if case == "y_repeated":
        X[1] = np.zeros((3, 4, 3))
        y[1] = np.array([2, 0, 2])
        return X, y, r"sample 1: right item 2 is matched to left items 0 and 2"
    if case == "y_float":
        y[1] = y[1] + 0.5
        return X, y, r"sample 1: .*integer"
    if case == "y_2d":
        y[1] = y[1][:, None]
        return X, y, r"sample 1: .*1-D"
    if case == "y_count":
        return X, y[:2], r"X has 3 samples but y has 2"
    raise AssertionError(case)


BAD = ["ndim", "n_left", "n_features", "nan", "inf", "y_length", "y_range", "y_negative",
       "y_repeated", "y_float", "y_2d", "y_count"]


@pytest.mark.parametrize("case", BAD)
def test_bad_training_data_is_refused_naming_the_sample(case):
    X, y, match = _bad(case)
    with pytest.raises(ValueError, match=match):
        MatchingModel().fit(X, y)
    with pytest.raises(ValueError, match=match):
        StructuredSVM(model=MatchingModel(), max_iter=1).fit(X, y)
    with pytest.raises(ValueError, match=match):
        StructuredPerceptron(model=MatchingModel(), max_iter=1).fit(X, y)


def test_integral_float_labels_are_accepted():
    X, y = random_samples(0, n=3)
    model = MatchingModel().fit(X, [yi.astype(float) for yi in y])
    assert model.loss(y[0], y[0].astype(float)) == 0.0


def test_single_sample_methods_validate_their_input():
    X, y = random_samples(0, n=3)
    model = MatchingModel().fit(X, y)
    x, yi = X[0], y[0]
    w = np.ones(3)
    with pytest.raises(ValueError, match="edge features must be 3-D"):
        model.inference(x[..., 0], w)
    with pytest.raises(ValueError, match="2 edge features but the data seen in fit has 3"):
        model.joint_feature(x[..., :2], yi)
    bad = x.copy()
    bad[0, 0, 0] = np.inf
    with pytest.raises(ValueError, match="NaN or infinite"):
        model.relaxed_scores(bad, w)
    with pytest.raises(ValueError, match="right item .* matched to left items"):
        model.loss_augmented_inference(np.zeros((2, 3, 3)), [1, 1], w)
    with pytest.raises(ValueError, match=r"w must have shape \(3,\)"):
        model.inference(x, np.ones(4))
    with pytest.raises(ValueError, match=r"\bw\b.*NaN"):
        model.inference(x, np.array([1.0, np.nan, 0.0]))
    with pytest.raises(ValueError, match=r"z must have shape"):
        model.project(x, np.zeros(x.shape[0] * x.shape[1] + 1))
    with pytest.raises(ValueError, match=r"z contains NaN"):
        model.relaxed_joint_feature(x, np.full(x.shape[0] * x.shape[1], np.nan))
    with pytest.raises(ValueError, match="y matches 2 left items but y_hat matches 3"):
        model.loss([0, 1], [0, 1, 2])
    with pytest.raises(ValueError, match="integer"):
        model.loss([0, 1], [0.5, 1])


@pytest.mark.parametrize("method", ["joint_feature", "inference", "loss_augmented_inference",
                                    "size_joint_feature", "project"])
def test_methods_before_fit_raise_not_fitted(method):
    x, y, model = np.zeros((2, 2, 1)), np.array([0, 1]), MatchingModel()
    calls = {
        "joint_feature": lambda: model.joint_feature(x, y),
        "inference": lambda: model.inference(x, np.zeros(1)),
        "loss_augmented_inference": lambda: model.loss_augmented_inference(x, y, np.zeros(1)),
        "size_joint_feature": lambda: model.size_joint_feature,
        "project": lambda: model.project(x, np.zeros(4)),
    }
    with pytest.raises(NotFittedError):
        calls[method]()


@pytest.mark.parametrize("check", PARAMETER_CHECKS)
def test_sklearn_parameter_checks(check):
    run_check(check, MatchingModel())
