"""``inference_method="ilp"`` and ``"qpbo"`` as the learners' decoders: the models'
(loss-augmented) MAP against enumeration, and a structured SVM learning with them."""

import warnings

import numpy as np
import pytest

from skstruct import StructuredSVM
from skstruct.datasets import grid_edges
from skstruct.models import GraphModel

TRIANGLES = np.array([[0, 1], [1, 2], [2, 3], [3, 0], [0, 2]])


def loopy_data(K, n=8, seed=0):
    rng = np.random.default_rng(seed)
    X, y = [], []
    for i in range(n):
        edges = grid_edges(2, 3) if i % 2 else TRIANGLES
        m = int(edges.max()) + 1
        X.append((rng.normal(size=(m, 3)), edges))
        y.append(rng.integers(0, K, m))
    y[0][:K] = np.arange(K)
    return X, y


def fitted(method, X, y):
    return GraphModel(inference_method=method).fit(X, y)


def augmented_score(model, x, y, w, labels):
    return w @ model.joint_feature(x, labels) + model.loss(y, labels)


def test_the_ilp_decoder_is_the_exact_decoder():
    X, y = loopy_data(K=3)
    ilp, exact = fitted("ilp", X, y), fitted("exact", X, y)
    rng = np.random.default_rng(1)
    for _ in range(3):
        w = rng.normal(size=exact.size_joint_feature)
        for x, yy in zip(X, y):
            a = ilp.inference(x, w)
            b = exact.inference(x, w)
            assert np.isclose(w @ ilp.joint_feature(x, a), w @ exact.joint_feature(x, b))
            a = ilp.loss_augmented_inference(x, yy, w)
            b = exact.loss_augmented_inference(x, yy, w)
            assert np.isclose(augmented_score(ilp, x, yy, w, a),
                              augmented_score(exact, x, yy, w, b))


def test_a_structured_svm_learns_the_same_with_ilp_as_with_enumeration():
    X, y = loopy_data(K=3)
    fits = {}
    for method in ("exact", "ilp"):
        svm = StructuredSVM(model=GraphModel(inference_method=method), C=1.0, max_iter=300,
                            random_state=0)
        with warnings.catch_warnings():
            # both stop at max_iter short of tol: the comparison is what matters here
            warnings.simplefilter("ignore")
            fits[method] = svm.fit(X, y)
    exact, ilp = fits["exact"], fits["ilp"]
    # the same convex objective, decoded exactly: the same optimum, reached along paths
    # that differ only where tied labellings are broken differently
    assert np.isclose(ilp.history_["primal"][-1], exact.history_["primal"][-1], rtol=1e-3)
    assert np.allclose(ilp.coef_, exact.coef_, atol=0.02 * np.abs(exact.coef_).max())
    for a, b in zip(ilp.predict(X), exact.predict(X)):
        assert np.array_equal(a, b)


def test_the_qpbo_decoder_bounds_by_enumeration_and_is_exact_on_submodular_weights():
    X, y = loopy_data(K=2, seed=2)
    qpbo, exact = fitted("qpbo", X, y), fitted("exact", X, y)
    rng = np.random.default_rng(3)
    for attractive in (False, True):
        w = rng.normal(size=exact.size_joint_feature)
        if attractive:
            # the last K * K weights are the pairwise table: agreement rewarded, submodular
            w[-4:] = [1.0, -0.5, -0.5, 1.0]
        for x, yy in zip(X, y):
            a = qpbo.loss_augmented_inference(x, yy, w)
            b = exact.loss_augmented_inference(x, yy, w)
            sa = augmented_score(qpbo, x, yy, w, a)
            sb = augmented_score(exact, x, yy, w, b)
            assert sa <= sb + 1e-9
            if attractive:
                assert np.isclose(sa, sb)


def test_the_qpbo_decoder_refuses_more_than_two_labels():
    X, y = loopy_data(K=3)
    with pytest.raises(ValueError, match=r"inference_method='qpbo' needs two labels; the "
                                         r"model has 3: use 'trws'.*'ilp'.*'graphcut'"):
        StructuredSVM(model=GraphModel(inference_method="qpbo"), max_iter=1).fit(X, y)
