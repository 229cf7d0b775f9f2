"""``inference_method="expansion"`` and ``"swap"`` as the learners' decoders: the models'
(loss-augmented) MAP is the labelling ``map_inference`` returns on the same scores when the
tables are metrics, no move improves it otherwise, and a structured SVM learns with them."""

import warnings

import numpy as np
import pytest

from skstruct import StructuredSVM
from skstruct.datasets import grid_edges
from skstruct.inference import map_inference
from skstruct.models import GraphModel


def grid_data(K, n=6, side=4, seed=0):
    rng = np.random.default_rng(seed)
    edges = grid_edges(side, side)
    X, y = [], []
    for _ in range(n):
        labels = np.repeat(rng.integers(K, size=side), side)
        X.append((np.eye(K)[labels] + rng.normal(0, 0.5, (side * side, K)), edges))
        y.append(labels)
    y[0][:K] = np.arange(K)
    return X, y


def scores(model, x, w):
    """The node scores and the (K, K) table the model's weights give sample ``x``."""
    feats, edges = x
    W, P = model.split_weights(w)
    assert W.shape[0] == feats.shape[1] and P.shape[0] == 1
    return feats @ W, edges, P[0]


@pytest.mark.parametrize("method", ["expansion", "swap"])
def test_the_decoder_answers_as_map_inference_on_metric_weights(method):
    X, y = grid_data(K=3)
    model = GraphModel(inference_method=method).fit(X, y)
    rng = np.random.default_rng(1)
    K = 3
    for _ in range(3):
        w = rng.normal(size=model.size_joint_feature)
        # a Potts table rewarding agreement: a metric in energy
        w[-K * K:] = np.where(np.eye(K, dtype=bool), 1.0, 0.0).ravel() * rng.uniform(0.5, 2)
        for x in X:
            unary, edges, table = scores(model, x, w)
            ours = model.inference(x, w)
            ref = map_inference(unary, edges, table, method=method)
            assert np.array_equal(ours, ref)


@pytest.mark.parametrize("method", ["expansion", "swap"])
def test_on_tables_that_are_not_metrics_the_decoder_still_answers(method):
    # learned tables need not be metrics: the decoder leaves out what a move cannot cut
    # and never lowers the score of its starting labelling
    X, y = grid_data(K=3, seed=2)
    model = GraphModel(inference_method=method).fit(X, y)
    w = np.random.default_rng(3).normal(size=model.size_joint_feature) * 2.0
    for x, yy in zip(X, y):
        labels = model.inference(x, w)
        unary, edges, table = scores(model, x, w)
        start = unary.argmax(axis=1)
        assert w @ model.joint_feature(x, labels) >= w @ model.joint_feature(x, start) - 1e-9
        loss_aug = model.loss_augmented_inference(x, yy, w)
        assert loss_aug.shape == yy.shape


def test_a_structured_svm_learns_with_the_move_decoders():
    X, y = grid_data(K=3, n=8, seed=4)
    fits = {}
    for method in ("trws", "expansion", "swap"):
        svm = StructuredSVM(model=GraphModel(inference_method=method), C=1.0, max_iter=40,
                            random_state=0)
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            fits[method] = svm.fit(X, y)
    for method, svm in fits.items():
        accuracy = np.mean(np.concatenate([a == b for a, b in zip(svm.predict(X), y)]))
        assert accuracy > 0.9, (method, accuracy)
    # the approximate decoders reach nearly the objective of TRW-S's decoding
    ref = fits["trws"].history_["primal"][-1]
    for method in ("expansion", "swap"):
        assert fits[method].history_["primal"][-1] <= 1.05 * ref, method
