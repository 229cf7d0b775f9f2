"""OWL-QN against a plain-numpy proximal-gradient reference on the same objective."""

import numpy as np
import pytest

from skstruct.solvers._lbfgs import lbfgs, owlqn, pseudo_gradient


def _logistic(seed, n=120, p=30, l2=0.1):
    rng = np.random.default_rng(seed)
    X = rng.standard_normal((n, p))
    w_true = np.zeros(p)
    w_true[:4] = 2.0
    y = np.where(X @ w_true + rng.standard_normal(n) > 0, 1.0, -1.0)

    def fun(w):
        m = y * (X @ w)
        return (float(np.logaddexp(0, -m).sum() + 0.5 * l2 * w @ w),
                X.T @ (-y / (1 + np.exp(m))) + l2 * w)

    lipschitz = np.linalg.norm(X, 2) ** 2 / 4 + l2
    return fun, lipschitz, p


def _ista(fun, lipschitz, p, l1, n_iter=20000):
    """Proximal gradient (soft thresholding) to high precision: the reference."""
    w = np.zeros(p)
    for _ in range(n_iter):
        z = w - fun(w)[1] / lipschitz
        w = np.sign(z) * np.maximum(np.abs(z) - l1 / lipschitz, 0.0)
    return w


@pytest.mark.parametrize("seed, l1", [(0, 3.0), (1, 0.5), (2, 12.0)])
def test_owlqn_reaches_the_proximal_gradient_optimum(seed, l1):
    fun, L, p = _logistic(seed)
    w, n_iter = owlqn(fun, np.zeros(p), 1000, 1e-13, l1=l1)
    ref = _ista(fun, L, p, l1)

    def F(v):
        return fun(v)[0] + l1 * np.abs(v).sum()

    assert F(w) <= F(ref) + 1e-8 * abs(F(ref))
    np.testing.assert_allclose(w, ref, atol=1e-5)
    # the same support, with exact zeros (not merely small weights)
    np.testing.assert_array_equal(w == 0, np.abs(ref) == 0)
    assert 0 < np.count_nonzero(w) < p
    # optimality: the pseudo-gradient vanishes
    assert np.max(np.abs(pseudo_gradient(w, fun(w)[1], l1))) < 1e-4


def test_owlqn_without_l1_is_lbfgs_optimum():
    fun, _, p = _logistic(3)
    a, _ = owlqn(fun, np.zeros(p), 1000, 1e-15, l1=0.0)
    b, _ = lbfgs(fun, np.zeros(p), 1000, 1e-15)
    np.testing.assert_allclose(a, b, atol=1e-6)


def test_pseudo_gradient_by_hand():
    x = np.array([1.0, -2.0, 0.0, 0.0, 0.0])
    g = np.array([0.5, 0.5, 2.0, -3.0, 0.4])
    # x > 0: g + l1; x < 0: g - l1; at 0: the descending side, or 0 inside [-l1, l1]
    np.testing.assert_array_equal(pseudo_gradient(x, g, 1.0), [1.5, -0.5, 1.0, -2.0, 0.0])


def test_period_and_epsilon_stop_earlier():
    fun, _, p = _logistic(4)
    seen = []
    _, n_full = owlqn(fun, np.zeros(p), 1000, 1e-15, l1=1.0)
    _, n_eps = owlqn(fun, np.zeros(p), 1000, 0.0, l1=1.0, epsilon=1e-2,
                     callback=seen.append)
    assert n_eps < n_full
    # over a period of 5 iterations a decrease of 1e-3 takes longer to fall under tol
    _, n1 = lbfgs(fun, np.zeros(p), 1000, 1e-3)
    _, n5 = lbfgs(fun, np.zeros(p), 1000, 1e-3, period=5)
    assert n5 > n1
