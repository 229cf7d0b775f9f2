"""The subgradient solvers' step-size schedules and momentum
(``StructuredSVM(solver_options=...)``) against a plain-numpy reference of the update
``d <- (1 - m) (psi_mean - lambda w) + m d``, ``w <- w + eta_t d`` with ``eta_t =
eta0 / (t0 + t) ** e``, on the same samples in the same order, through the protocol and
through the batched kernels."""

import numpy as np
import pytest

from skstruct import StructuredSVM
from skstruct.exceptions import InvalidParameterError
from skstruct.models import StructuredModel

# a few passes, far from convergence: the iterates are what is compared
pytestmark = pytest.mark.filterwarnings("ignore::sklearn.exceptions.ConvergenceWarning")


class ProtocolMulticlass(StructuredModel):
    """Crammer-Singer multiclass written with the protocol: the weight block of class
    ``y`` scores ``x``; loss-augmented inference takes the first best class."""

    def initialize(self, X, y):
        self.n_features = X.shape[1]
        self.n_states = int(np.max(y)) + 1
        self.size_joint_feature = self.n_features * self.n_states

    def joint_feature(self, x, y):
        out = np.zeros((self.n_states, self.n_features))
        out[y] = x
        return out.ravel()

    def inference(self, x, w):
        return int(np.argmax(w.reshape(self.n_states, -1) @ x))

    def loss_augmented_inference(self, x, y, w):
        scores = w.reshape(self.n_states, -1) @ x + 1.0
        scores[y] -= 1.0
        return int(np.argmax(scores))

    def loss(self, y, y_hat):
        return float(y != y_hat)


def reference(model, X, y, C, passes, batch_size=1, learning_rate=None, t0=10.0, e=1.0,
              momentum=0.0, average=False):
    """The update, step by step in numpy (``learning_rate=None``: Pegasos)."""
    n = len(X)
    lam = 1.0 / (C * n)
    w = np.zeros(model.size_joint_feature)
    d = np.zeros_like(w)
    w_avg = np.zeros_like(w)
    t = 0
    for _ in range(passes):
        for start in range(0, n, batch_size):
            idx = range(start, min(start + batch_size, n))
            psi = np.zeros_like(w)
            for i in idx:
                y_hat = model.loss_augmented_inference(X[i], y[i], w)
                psi += model.joint_feature(X[i], y[i]) - model.joint_feature(X[i], y_hat)
            g = psi / len(idx) - lam * w
            if learning_rate is None:
                eta = 1.0 / (lam * (t + 1.0))
            else:
                eta = learning_rate / (t0 + t) ** e
            d = (1.0 - momentum) * g + momentum * d
            w = w + eta * d
            w_avg = w.copy() if t == 0 else (1 - 2.0 / (t + 2)) * w_avg + 2.0 / (t + 2) * w
            t += 1
    return w_avg if average else w


@pytest.fixture(scope="module")
def data():
    rng = np.random.default_rng(0)
    X = rng.normal(size=(9, 3))
    y = np.array([0, 1, 2] * 3)
    model = ProtocolMulticlass()
    model.initialize(X, y)
    return X, y, model


CASES = [
    ({}, dict()),
    ({"learning_rate": 0.1}, dict(learning_rate=0.1)),
    ({"learning_rate": 0.3, "decay_exponent": 0.5, "decay_t0": 2.0},
     dict(learning_rate=0.3, e=0.5, t0=2.0)),
    ({"learning_rate": 0.05, "decay_exponent": 0.0}, dict(learning_rate=0.05, e=0.0)),
    ({"learning_rate": 0.1, "momentum": 0.6}, dict(learning_rate=0.1, momentum=0.6)),
    ({"momentum": 0.3}, dict(momentum=0.3)),
    # steps with eta_t lambda > 1: the weights' scale turns negative
    ({"learning_rate": 100.0}, dict(learning_rate=100.0)),
]


@pytest.mark.parametrize("options,ref", CASES)
@pytest.mark.parametrize("batch_size", [1, 4])
@pytest.mark.parametrize("average", [False, True])
def test_protocol_iterates_are_the_reference(data, options, ref, batch_size, average):
    X, y, model = data
    est = StructuredSVM(model=ProtocolMulticlass(), solver="subgradient", C=0.7, max_iter=3,
                        shuffle=False, batch_size=batch_size, average=average,
                        solver_options=options).fit(X, y)
    expect = reference(model, X, y, 0.7, 3, batch_size=batch_size, average=average, **ref)
    np.testing.assert_allclose(est.coef_, expect, rtol=1e-10, atol=1e-12)
    assert np.abs(expect).max() > 1e-3


def test_auto_is_eta0_one_over_lambda(data):
    X, y, model = data
    est = StructuredSVM(model=ProtocolMulticlass(), solver="subgradient", C=0.7, max_iter=2,
                        shuffle=False, average=False,
                        solver_options={"learning_rate": "auto", "decay_t0": 3.0}).fit(X, y)
    expect = reference(model, X, y, 0.7, 2, learning_rate=0.7 * len(X), t0=3.0)
    np.testing.assert_allclose(est.coef_, expect, rtol=1e-10, atol=1e-12)


@pytest.mark.parametrize("options,ref", CASES)
def test_batched_kernels_follow_the_same_iterates(data, options, ref):
    """The built-in multiclass model (scaled sparse steps, or dense moves with momentum)
    against the reference: its coefficients are the reference's blocks transposed."""
    X, y, model = data
    for batch_size, average in ((1, False), (3, True)):
        est = StructuredSVM(solver="subgradient", C=0.7, max_iter=3, shuffle=False,
                            batch_size=batch_size, average=average,
                            solver_options=options).fit(X, y)
        expect = reference(model, X, y, 0.7, 3, batch_size=batch_size, average=average, **ref)
        K, F = model.n_states, model.n_features
        got = est.coef_[:F * K].reshape(F, K).T.ravel()
        np.testing.assert_allclose(got, expect, rtol=1e-9, atol=1e-12)


@pytest.mark.parametrize("options,match", [
    ({"step": 1}, "'step' is not an option of solver='subgradient'.*'decay_exponent'"),
    ({"learning_rate": -1.0}, "learning_rate"),
    ({"learning_rate": "fast"}, "learning_rate"),
    ({"momentum": 1.0}, "momentum"),
    ({"decay_t0": 0.0, "learning_rate": 1.0}, "decay_t0"),
    ({"decay_t0": 5.0}, "applies to a float or 'auto' learning_rate"),
])
def test_bad_options_are_refused(data, options, match):
    X, y, _ = data
    est = StructuredSVM(solver="subgradient", max_iter=1, solver_options=options)
    with pytest.raises(InvalidParameterError, match=match):
        est.fit(X, y)
    assert est.solver_options == options          # fit does not mutate it


@pytest.mark.parametrize("solver,options,match", [
    ("bcfw", {"learning_rate": 0.1}, "'learning_rate' is not an option.*'parallel_blocks'"),
    ("one_slack", {"batch_size": 3}, "'batch_size' is not an option.*'cache_tol'"),
    ("one_slack", {"inference_cache": -1}, "inference_cache"),
    ("one_slack", {"cache_tol": "sometimes"}, "cache_tol"),
    ("n_slack", {"batch_size": 0}, "batch_size"),
    ("n_slack", {"inactive_threshold": 1.5}, "inactive_threshold"),
    ("fw", {"inference_cache": 3}, "takes none"),
])
def test_other_solvers_options_are_checked(data, solver, options, match):
    X, y, _ = data
    with pytest.raises(InvalidParameterError, match=match):
        StructuredSVM(solver=solver, max_iter=1, solver_options=options).fit(X, y)
