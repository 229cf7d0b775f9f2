"""The primal-dual learner's fused passes against the separate kernels they replace.

* ``_soft`` and ``_soft_belief`` (one exponential fewer: the dominant entry's) against
  numpy's log-sum-exp and softmax, ties, soft minima and maxima included;
* :func:`pd_sweep_gradient` (one loopy sweep with the objective and gradient taken on the
  way) against ``pd_sweeps`` then ``pd_gradient`` on the same messages, to 1e-12;
* whole learning runs with and without the fused pass, and the reuse of the potentials'
  arrays from one set of weights to the next.
"""

import numpy as np
import pytest

from skstruct.datasets import make_binary_denoising
from skstruct.inference._primal_dual import _soft, _soft_belief
from skstruct.models import GraphModel
from skstruct.solvers._primal_dual import PrimalDual, counting_numbers
from tests.inference.kernel_cases import random_graph


def _reference(x, t):
    if t == 0.0:
        b = np.zeros_like(x)
        b[np.argmax(x)] = 1.0
        return x.max(), b
    z = x / t
    m = z.max()
    w = np.exp(z - m)
    return t * (m + np.log(w.sum())), w / w.sum()


@pytest.mark.parametrize("n", [2, 3, 4, 9])
@pytest.mark.parametrize("t", [1.0, 0.3, 2.5, -0.7, -3.0, 0.0])
def test_soft_and_soft_belief_against_numpy(n, t):
    rng = np.random.default_rng(n)
    for trial in range(20):
        x = rng.normal(scale=3.0, size=n)
        if trial % 4 == 1:
            # ties at the dominant entry
            x[-1] = x.max() if t >= 0 else x.min()
        if trial % 4 == 2:
            x[:] = x[0]
        value, belief = _reference(x, t)
        assert _soft(x, n, t) == pytest.approx(value, rel=1e-12, abs=1e-12)
        out = np.empty(n)
        assert _soft_belief(x, n, t, out) == pytest.approx(value, rel=1e-12, abs=1e-12)
        if t != 0.0:
            np.testing.assert_allclose(out, belief, rtol=1e-12, atol=1e-15)
        else:
            # the first maximiser
            np.testing.assert_array_equal(out, belief)


def _graphs(seed, K, n=8, edge_features=True):
    rng = np.random.default_rng(seed)
    X, y = [], []
    for i in range(n):
        m, edges = random_graph(rng, ("cycle4", "random", "complete", "tree", "chain")[i % 5])
        x = rng.normal(size=(m, 3))
        X.append((x, edges, rng.normal(size=(len(edges), 2))) if edge_features
                 else (x, edges))
        y.append(rng.integers(0, K, m))
    y[0][:] = np.arange(len(y[0])) % K
    X.append((rng.normal(size=(K, 3)), np.array([[0, 1]]), rng.normal(size=(1, 2)))
             if edge_features else (rng.normal(size=(K, 3)), np.array([[0, 1]])))
    y.append(np.arange(K))
    return X, y


def _grid(K):
    d = make_binary_denoising(3, 7, random_state=0)
    if K == 2:
        return d.X, d.y
    # more labels on the same grids: quantised observations
    return d.X, [np.clip((x[0][:, 0] * K / 2.0 + 1).astype(np.int64), 0, K - 1)
                 for x in d.X]


def _solver(X, y, cn, eps, loss):
    model = GraphModel().fit(X, y)
    design, _ = model.design(X, y)
    c_node, c_edge = counting_numbers(design, cn)
    rng = np.random.default_rng(1)
    lw = rng.uniform(0.5, 2.0, size=design.batch.n_nodes)
    return PrimalDual(design, lw, c_node, c_edge, epsilon=eps, C=0.9, loss=loss)


CASES = [("grid", 2, True), ("grid", 3, True), ("graphs", 3, True), ("graphs", 2, False)]


@pytest.mark.parametrize("data,K,edge_features", CASES)
@pytest.mark.parametrize("cn", ["convex", "bethe", "trw", (0.5, 0.7), (1.0, 0.0), (3.0, -0.2)])
@pytest.mark.parametrize("eps", [1.0, 0.4, 0.0])
def test_fused_sweep_gradient_equals_sweep_then_gradient(data, K, edge_features, cn, eps):
    X, y = _grid(K) if data == "grid" else _graphs(K, K, edge_features=edge_features)
    pd = _solver(X, y, cn, eps, loss=K != 3)
    if cn == "bethe" and data == "graphs" and eps > 0:
        # the trees' leaves have c_node = 0: their belief is an edge's marginal, which the
        # fused sweep cannot take on the way
        assert not pd.fused_sweep
    if cn in ("convex", (0.5, 0.7)):
        assert pd.fused_sweep
    if not pd.fused_sweep:
        return
    rng = np.random.default_rng(3)
    W = 0.5 * rng.normal(size=pd.W.shape)
    P = 0.5 * rng.normal(size=pd.P.shape)
    lam = rng.normal(scale=0.3, size=pd.lam.shape)
    for n in (1, 2, 3):
        lam_ref, lam_new = lam.copy(), lam.copy()
        parity = pd.parity
        pd.sweep(W, P, lam_ref, n)
        ref = pd.data_value_and_grad(W, P, lam_ref)
        pd.parity = parity
        new = pd.sweep_value_and_grad(W, P, lam_new, n)
        assert pd.parity == (parity + n) % 2
        np.testing.assert_allclose(lam_new, lam_ref, rtol=1e-12, atol=1e-13)
        assert new[0] == pytest.approx(ref[0], rel=1e-12, abs=1e-12)
        np.testing.assert_allclose(new[1], ref[1], rtol=1e-12, atol=1e-12)
        np.testing.assert_allclose(new[2], ref[2], rtol=1e-12, atol=1e-12)
        lam = lam_ref


@pytest.mark.parametrize("cn", ["convex", "bethe"])
def test_learning_with_the_fused_pass_follows_the_separate_passes(cn):
    X, y = _grid(2)
    runs = []
    for fused in (True, False):
        pd = _solver(X, y, cn, 0.8, loss=True)
        assert pd.fused_sweep
        pd.fused_sweep = fused
        values = [pd.iterate() for _ in range(6)]
        runs.append((np.array(values), *pd.weights(), pd.lam.copy()))
    for a, b in zip(*runs):
        np.testing.assert_allclose(a, b, rtol=1e-11, atol=1e-12)


def test_potentials_arrays_are_reused_and_hold_the_latest_weights():
    X, y = _grid(2)
    pd = _solver(X, y, "convex", 1.0, loss=True)
    rng = np.random.default_rng(0)
    W1, P1 = rng.normal(size=pd.W.shape), rng.normal(size=pd.P.shape)
    W2, P2 = rng.normal(size=pd.W.shape), rng.normal(size=pd.P.shape)
    first = [np.copy(a) if isinstance(a, np.ndarray) else a for a in pd._theta(W1, P1)]
    fresh = _solver(X, y, "convex", 1.0, loss=True)
    theta2 = pd._theta(W2, P2)
    assert theta2[0] is pd._buffers[0]
    np.testing.assert_array_equal(theta2[0], fresh._theta(W2, P2)[0])
    np.testing.assert_array_equal(theta2[1], fresh._theta(W2, P2)[1])
    # back to the first weights (new arrays, so not a cache hit): recomputed in place
    again = pd._theta(W1.copy(), P1.copy())
    assert again[0] is theta2[0]
    for a, b in zip(again, first):
        np.testing.assert_array_equal(a, b)
