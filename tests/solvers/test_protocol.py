"""The structured SVM's protocol path: user models trained one sample at a time.

A chain written only with the model protocol follows the same iterates as
the built-in :class:`ChainModel`'s compiled batched path (same data, same
sample order), and so does a built-in model forced through the protocol
by a subclass that overrides a protocol method.
"""

import numpy as np
import pytest

from skstruct import StructuredSVM
from skstruct.models import ChainModel
from tests.protocol_models import ProtocolChain


def chains(seed=0, n=12, F=4, K=3, max_len=7):
    rng = np.random.default_rng(seed)
    Wt = rng.normal(size=(F, K))
    X, y = [], []
    for _ in range(n):
        x = rng.normal(size=(rng.integers(1, max_len + 1), F))
        X.append(x)
        y.append(np.argmax(x @ Wt + rng.normal(scale=0.8, size=(len(x), K)), axis=1))
    y[0][:K] = np.arange(K)[:len(y[0])]
    # every class present, so that both paths have the same K
    X.append(rng.normal(size=(K, F)))
    y.append(np.arange(K))
    return X, y


class HammingChain(ChainModel):
    """The built-in chain with its loss overridden (by the same Hamming loss):
    an override must be honoured, so this model goes through the protocol."""

    def loss(self, y, y_hat):
        return float(np.sum(np.asarray(y) != np.asarray(y_hat)))


@pytest.mark.parametrize("solver, extra", [("bcfw", {}), ("bcfw", {"average": False}),
                                           ("subgradient", {}),
                                           ("subgradient", {"batch_size": 4})])
@pytest.mark.parametrize("Model", [ProtocolChain, HammingChain])
def test_protocol_path_follows_the_batched_path(Model, solver, extra):
    X, y = chains()
    common = dict(C=0.7, solver=solver, max_iter=8, tol=0.0, check_every=1, random_state=3,
                  **extra)
    fast = StructuredSVM(model=ChainModel(), **common).fit(X, y)
    slow = StructuredSVM(model=Model(), **common).fit(X, y)
    assert fast.model_.has_batched_path() and not slow.model_.has_batched_path()
    np.testing.assert_allclose(slow.history_["primal"], fast.history_["primal"], rtol=1e-8,
                               atol=1e-10)
    np.testing.assert_allclose(slow.coef_, fast.coef_, rtol=1e-7, atol=1e-9)
    if solver == "bcfw":
        np.testing.assert_allclose(slow.history_["gap"], fast.history_["gap"], rtol=1e-7,
                                   atol=1e-9)
    for a, b in zip(slow.predict(X), fast.predict(X)):
        np.testing.assert_array_equal(a, b)


def test_user_model_reports_a_closing_duality_gap():
    X, y = chains(seed=1, n=20)
    est = StructuredSVM(model=ProtocolChain(), C=1.0, max_iter=60, tol=1e-4, check_every=1,
                        random_state=0).fit(X, y)
    gap = est.history_["gap"]
    assert np.all(gap >= -1e-10)
    assert gap[-1] < 0.05 * gap[0]
    # the primal is the hinge objective evaluated independently here
    lam = 1.0 / (est.C * len(X))
    w = est.coef_
    m = est.model_
    hinge = [max(0.0, m.loss(yi, yh) + w @ (m.joint_feature(x, yh) - m.joint_feature(x, yi)))
             for x, yi in zip(X, y)
             for yh in [m.loss_augmented_inference(x, yi, w)]]
    assert est.history_["primal"][-1] == pytest.approx(0.5 * lam * w @ w + np.mean(hinge),
                                                       rel=1e-10)
    sg = StructuredSVM(model=ProtocolChain(), solver="subgradient", C=1.0, max_iter=60,
                       check_every=60, random_state=0).fit(X, y)
    # both solvers reach the optimum within BCFW's certificate (and a little slack)
    assert sg.history_["primal"][-1] <= est.history_["primal"][-1] + 3 * gap[-1] + 1e-3
    assert sg.history_["primal"][-1] >= est.history_["dual"][-1] - 1e-9
    ref = StructuredSVM(model=ChainModel(), C=1.0, max_iter=60, tol=1e-4,
                        random_state=0).fit(X, y)
    assert est.score(X, y) == ref.score(X, y) > 0.5  # chance: 1/3


def test_protocol_models_refuse_settings_of_the_batched_losses():
    X, y = chains(n=4)
    for params in ({"surrogate": "slack"}, {"loss": "normalized_hamming"},
                   {"class_weight": "balanced"}):
        with pytest.raises(ValueError, match=next(iter(params))):
            StructuredSVM(model=ProtocolChain(), max_iter=1, **params).fit(X, y)
    with pytest.raises(ValueError, match="X has 5 samples but y has 4"):
        StructuredSVM(model=ProtocolChain(), max_iter=1).fit(X, y[:4])
    est = StructuredSVM(model=ProtocolChain(), max_iter=1).fit(X, y)
    with pytest.raises(AttributeError, match="coef_"):
        est.unary_coef_  # noqa: B018


def test_wrong_joint_feature_size_is_named():
    class Bad(ProtocolChain):
        def joint_feature(self, x, y):
            return super().joint_feature(x, y)[:-1]

    X, y = chains(n=3)
    with pytest.raises(ValueError, match="size_joint_feature"):
        StructuredSVM(model=Bad(), max_iter=1).fit(X, y)
