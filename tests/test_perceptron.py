"""StructuredPerceptron against a brute-force reference perceptron."""

import itertools
import pickle

import numpy as np
import pytest
from sklearn.base import clone
from sklearn.model_selection import GridSearchCV

from skstruct import StructuredPerceptron
from skstruct.models import ChainModel, GraphModel, MultiLabelModel

from .protocol_models import ProtocolChain
from .sklearn_checks import PARAMETER_CHECKS, run_check
from .test_svm import synthetic_chains, synthetic_graphs


def reference_perceptron(model, X, y, passes, average, loss_augmented):
    """Collins's perceptron written plainly: decoding by enumerating every
    labelling of the fitted ``model``'s ``joint_feature``, the average as the
    mean of the weights after every sample (no lazy trick)."""
    classes = np.arange(model.n_classes_) if hasattr(model, "n_classes_") else None
    w = np.zeros(model.size_joint_feature)
    total = np.zeros_like(w)
    count = 0
    for _ in range(passes):
        for x, yi in zip(X, y):
            yi = np.asarray(yi)
            labels = classes if classes is not None else np.arange(2)
            best, best_y = -np.inf, None
            for cand in itertools.product(labels.tolist(), repeat=yi.shape[0]):
                cand = np.array(cand).reshape(yi.shape)
                score = w @ model.joint_feature(x, cand)
                if loss_augmented:
                    score += float(np.sum(cand != yi))
                if score > best + 1e-12:
                    best, best_y = score, cand
            if np.any(best_y != yi):
                w = w + model.joint_feature(x, yi) - model.joint_feature(x, best_y)
            total += w
            count += 1
    return total / count if average else w


@pytest.mark.parametrize("loss_augmented", [False, True])
@pytest.mark.parametrize("average", [True, False])
def test_chains_follow_the_reference_on_both_paths(average, loss_augmented):
    X, y = synthetic_chains(seed=3, n=12, max_len=4)
    kw = dict(max_iter=3, average=average, loss_augmented=loss_augmented, shuffle=False)
    fast = StructuredPerceptron(model=ChainModel(), **kw).fit(X, y)
    slow = StructuredPerceptron(model=ProtocolChain(), **kw).fit(X, y)
    assert fast.n_iter_ == 3 and slow.n_iter_ == 3
    ref = reference_perceptron(fast.model_, X, y, 3, average, loss_augmented)
    np.testing.assert_allclose(fast.coef_, ref, atol=1e-10)
    np.testing.assert_allclose(slow.coef_, ref, atol=1e-10)
    np.testing.assert_array_equal(fast.history_["mistakes"], slow.history_["mistakes"])
    np.testing.assert_allclose(fast.history_["errors"], slow.history_["errors"])
    for a, b in zip(fast.predict(X), slow.predict(X)):
        np.testing.assert_array_equal(a, b)


@pytest.mark.parametrize("make", [
    lambda: (GraphModel(), *synthetic_graphs(seed=2, n=8)),
    lambda: (MultiLabelModel(edges="full"), *_multilabel()),
])
def test_other_models_follow_the_reference(make):
    model, X, y = make()
    est = StructuredPerceptron(model=model, max_iter=3, shuffle=False).fit(X, y)
    ref = reference_perceptron(est.model_, X, y, est.n_iter_, True, False)
    np.testing.assert_allclose(est.coef_, ref, atol=1e-10)


def _multilabel(seed=0, n=15, F=4, L=3):
    rng = np.random.default_rng(seed)
    X = rng.normal(size=(n, F))
    Y = (X @ rng.normal(size=(F, L)) + 0.3 * rng.normal(size=(n, L)) > 0).astype(int)
    return X, Y


def test_separable_data_stop_after_a_pass_without_mistakes():
    rng = np.random.default_rng(0)
    W = rng.normal(size=(5, 3))
    X = [rng.normal(size=(int(rng.integers(2, 6)), 5)) for _ in range(40)]
    y = [np.argmax(x @ W, axis=1) for x in X]      # separable by the unary weights alone
    est = StructuredPerceptron(max_iter=200, random_state=0).fit(X, y)
    assert est.n_iter_ < 200
    assert est.history_["mistakes"][-1] == 0 and np.all(est.history_["mistakes"][:-1] > 0)
    # the last weights separate the data; the average of the iterates nearly does
    last = StructuredPerceptron(max_iter=200, average=False, random_state=0).fit(X, y)
    assert last.score(X, y) == 1.0
    assert est.score(X, y) > 0.95
    assert list(est.history_) == ["pass", "mistakes", "errors", "seconds"]
    assert np.all(np.diff(est.history_["seconds"]) >= 0)


def test_shuffle_follows_random_state():
    X, y = synthetic_chains(seed=4, n=20)
    a = StructuredPerceptron(max_iter=4, random_state=1).fit(X, y)
    b = StructuredPerceptron(max_iter=4, random_state=1).fit(X, y)
    c = StructuredPerceptron(max_iter=4, random_state=2).fit(X, y)
    np.testing.assert_array_equal(a.coef_, b.coef_)
    assert not np.array_equal(a.coef_, c.coef_)


def test_string_labels_sklearn_tools_and_pickle():
    X, y = synthetic_chains(seed=5, n=30)
    names = np.array(["DET", "NOUN", "VERB"])
    ys = [names[a] for a in y]
    est = StructuredPerceptron(max_iter=5, random_state=0)
    search = GridSearchCV(est, {"average": [True, False]}, cv=3).fit(X, ys)
    assert search.best_estimator_.predict(X[:2])[0].dtype.kind == "U"
    fitted = clone(est).fit(X, ys)
    again = pickle.loads(pickle.dumps(fitted))
    for a, b in zip(fitted.predict(X), again.predict(X)):
        np.testing.assert_array_equal(a, b)
    assert fitted.unary_coef_.shape == (3, 4) and fitted.pairwise_coef_.shape == (1, 3, 3)
    assert est.get_params()["max_iter"] == 5          # fit did not touch the parameters


@pytest.mark.parametrize("params, match", [
    (dict(max_iter=0), "max_iter"),
    (dict(average="yes"), "average"),
    (dict(model="chain"), "model"),
    (dict(n_jobs=0), "n_jobs"),
])
def test_bad_parameters(params, match):
    X, y = synthetic_chains(n=5)
    with pytest.raises(ValueError, match=match) as err:
        StructuredPerceptron(**params).fit(X, y)
    assert isinstance(err.value, TypeError)


def test_bad_input_names_the_sample():
    X, y = synthetic_chains(n=5)
    y[3] = y[3][:-1] if len(y[3]) > 1 else np.array([0, 1])
    with pytest.raises(ValueError, match="sample 3"):
        StructuredPerceptron().fit(X, y)


@pytest.mark.parametrize("check", PARAMETER_CHECKS)
def test_sklearn_estimator_checks(check):
    run_check(check, StructuredPerceptron(),
              StructuredPerceptron(model=MultiLabelModel(edges="tree")))
