"""The built-in models' protocol methods against brute force.

``joint_feature(x, y) @ coef_`` is the score the batched kernels give the
labelling, ``inference`` is the best labelling by enumeration, and
``loss_augmented_inference`` the best of score plus Hamming loss.
"""

import itertools

import numpy as np
import pytest

from skstruct.models import ChainModel, GraphModel, MulticlassModel, MultiLabelModel


def _labellings(model, x):
    if isinstance(model, MultiLabelModel):
        return [np.array(c) for c in itertools.product([0, 1], repeat=model.n_labels_)]
    if isinstance(model, MulticlassModel):
        return list(model.classes_)
    n = (x[0] if isinstance(x, tuple) else x).shape[0]
    return [model.classes_[list(c)] for c in itertools.product(range(model.n_classes_),
                                                                repeat=n)]


def _cases():
    rng = np.random.default_rng(0)
    chain_X = [rng.normal(size=(n, 3)) for n in (3, 4, 2)]
    chain_y = [rng.choice(["a", "b", "c"], n) for n in (3, 4, 2)]
    chain_y[0] = np.array(["a", "b", "c"])
    cyc = np.array([[0, 1], [1, 2], [2, 0], [2, 3]])
    graph_X = [(rng.normal(size=(4, 3)), cyc, rng.normal(size=(4, 2))) for _ in range(3)]
    graph_y = [rng.integers(0, 3, 4) for _ in range(3)]
    graph_y[0] = np.array([0, 1, 2, 0])
    tab_X = rng.normal(size=(6, 3))
    return [
        (ChainModel(bias=True), chain_X, chain_y),
        (GraphModel(), graph_X, graph_y),
        (GraphModel(inference_method="trws"), [g[:2] for g in graph_X], graph_y),
        (MultiLabelModel(edges="full"), tab_X, rng.integers(0, 2, (6, 3))),
        (MulticlassModel(), tab_X, np.array([0, 1, 2, 1, 0, 2])),
    ]


@pytest.mark.parametrize("case", range(5))
def test_protocol_methods_against_enumeration(case):
    model, X, y = _cases()[case]
    model.fit(X, y)
    rng = np.random.default_rng(case)
    w = rng.normal(size=model.size_joint_feature)
    for i in range(len(y)):
        x, yi = X[i], y[i]
        cands = _labellings(model, x)
        scores = np.array([model.joint_feature(x, c) @ w for c in cands])
        best = cands[int(np.argmax(scores))]
        np.testing.assert_array_equal(model.inference(x, w), best)
        aug = scores + np.array([model.loss(yi, c) for c in cands])
        y_hat = model.loss_augmented_inference(x, yi, w)
        assert model.joint_feature(x, y_hat) @ w + model.loss(yi, y_hat) == pytest.approx(
            aug.max(), abs=1e-9)


def test_joint_feature_matches_the_batched_scores():
    """``joint_feature(x, y) @ w`` is the score the learners' kernels compute."""
    model, X, y = _cases()[1]
    model.fit(X, y)
    w = np.random.default_rng(1).normal(size=model.size_joint_feature)
    W, P = model.split_weights(w)
    x = X[0]
    unary = x[0] @ W
    tables = np.einsum("ef,fab->eab", x[2], P)
    lab = np.searchsorted(model.classes_, y[0])
    ref = unary[np.arange(4), lab].sum() + sum(
        tables[e, lab[a], lab[b]] for e, (a, b) in enumerate(x[1]))
    assert model.joint_feature(x, y[0]) @ w == pytest.approx(ref, rel=1e-12)


def test_unseen_label_and_wrong_weight_size_are_named():
    model, X, y = _cases()[0]
    model.fit(X, y)
    with pytest.raises(ValueError, match="not fitted with"):
        model.joint_feature(X[0], np.array(["a", "z", "a"]))
    with pytest.raises(ValueError, match="w must have shape"):
        model.inference(X[0], np.zeros(3))
