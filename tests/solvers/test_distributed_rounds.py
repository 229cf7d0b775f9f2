"""The solvers' public rounds a distributed fit runs on each partition, against the
solvers' own passes and iterations on the same data.

* :meth:`BCFW.local_round`: with one partition, adding every round's move is the
  sequential pass; a step of 0 takes the last round's move back;
* :meth:`Subgradient.corner_sum` and :meth:`Subgradient.pegasos_step`: the epoch;
* :meth:`PrimalDual.data_round` with the parameter step of :class:`ParameterStep`
  (trial messages and adoption through the public methods): the iteration.
"""

import numpy as np
import pytest

from skstruct.models import ChainModel, GraphModel
from skstruct.solvers import BCFW, Subgradient
from skstruct.solvers._primal_dual import ParameterStep, PrimalDual, counting_numbers
from tests.solvers.test_solvers import graphs


def _design(case):
    if case == "graphs":
        X, y = graphs(seed=1)
        model = GraphModel(inference_method="exact")
    else:
        rng = np.random.default_rng(5)
        X = [rng.normal(size=(int(rng.integers(1, 7)), 4)) for _ in range(12)]
        y = [rng.integers(0, 3, len(x)) for x in X]
        model = ChainModel()
    model = model.fit(X, y)
    return model.design(X, y)[0]


def _solver(kind, design, **kw):
    return kind(design, np.ones(design.batch.n_nodes), lam=1.0 / (0.8 * design.batch.n_samples),
                surrogate="margin", averaging=False, inference_iter=10, **kw)


@pytest.mark.parametrize("case", ["graphs", "chains"])
def test_bcfw_local_rounds_of_one_partition_are_the_sequential_passes(case):
    design = _design(case)
    seq, par = _solver(BCFW, design), _solver(BCFW, design)
    # chains run the fused kernel sequentially; the rounds keep dense blocks
    assert seq.fused_chain == (case == "chains")
    W, P = np.zeros_like(seq.W), np.zeros_like(seq.P)
    ell = 0.0
    rng = np.random.default_rng(0)
    for _ in range(5):
        order = rng.permutation(seq.n_samples).astype(np.int64)
        gap_seq = seq.run_pass(order)
        W_before = W.copy()
        gap, dW, dP, d_ell = par.local_round(W, P, order, 1.0)
        np.testing.assert_array_equal(W, W_before)  # the coordinator's weights stay
        W, P, ell = W + dW, P + dP, ell + d_ell
        assert not par.fused_chain
        np.testing.assert_allclose(gap, gap_seq, rtol=1e-9, atol=1e-12)
        np.testing.assert_allclose(W, seq.W, rtol=1e-9, atol=1e-12)
        np.testing.assert_allclose(P, seq.P, rtol=1e-9, atol=1e-12)
        np.testing.assert_allclose(ell, seq.state[1], rtol=1e-9, atol=1e-12)
        np.testing.assert_allclose(par.pairwise_blocks(), seq.pairwise_blocks(), rtol=1e-9,
                                   atol=1e-12)


def test_bcfw_a_step_of_zero_takes_the_last_move_back():
    design = _design("graphs")
    s = _solver(BCFW, design)
    W, P = np.zeros_like(s.W), np.zeros_like(s.P)
    order = np.arange(s.n_samples, dtype=np.int64)
    first = s.local_round(W, P, order, 1.0)
    assert np.any(first[1] != 0.0) and first[3] > 0.0
    again = s.local_round(W, P, order, 0.0)
    for a, b in zip(first, again):
        np.testing.assert_allclose(a, b, rtol=1e-12, atol=1e-14)


def test_pegasos_steps_on_summed_corners_are_the_epoch():
    design = _design("graphs")
    B = 3
    epoch = _solver(Subgradient, design, batch_size=B)
    share = _solver(Subgradient, design, batch_size=B)
    nW = epoch.W.size
    w = np.zeros(nW + epoch.P.size)
    t = 0
    rng = np.random.default_rng(1)
    for _ in range(4):
        order = rng.permutation(epoch.n_samples).astype(np.int64)
        epoch.run_pass(order)
        for start in range(0, order.shape[0], B):
            idx = order[start:start + B]
            _, gW, gP = share.corner_sum(w[:nW].reshape(epoch.W.shape),
                                         w[nW:].reshape(epoch.P.shape), idx)
            w = Subgradient.pegasos_step(w, np.concatenate([gW.ravel(), gP.ravel()]), t,
                                         share.lam, idx.shape[0])
            t += 1
        W, P = epoch.weights()
        assert np.any(W != 0.0)
        np.testing.assert_allclose(w, np.concatenate([W.ravel(), P.ravel()]), rtol=1e-9,
                                   atol=1e-12)


class _SplitStep(ParameterStep):
    """The parameter step apart from a :class:`PrimalDual` that holds the messages, as a
    distributed fit takes it."""

    def __init__(self, pd):
        super().__init__(pd.W.shape, pd.P.shape, p=pd.p, C=pd.C, direction=pd.direction,
                         step_size=pd.step)
        self.pd = pd

    def value(self, W, P, lam):
        return self._reg(W, P) + self.pd.data_value(W, P, lam)

    def trial_messages(self, W, P):
        return self.pd.trial_messages(W, P)

    def adopt(self, lam):
        self.pd.adopt(lam)

    def iterate(self):
        data = self.pd.data_round(self.W, self.P)
        return self.take_step(*self.regularised(self.W, self.P, *data))


@pytest.mark.parametrize("cn, direction", [("bethe", "lbfgs"), ("convex", "gradient")])
def test_primal_dual_round_and_parameter_step_are_the_iteration(cn, direction):
    X, y = graphs(seed=3, kinds=("tree", "cycle4", "random", "chain"))
    design = GraphModel().fit(X, y).design(X, y)[0]
    c_node, c_edge = counting_numbers(design, cn)

    def make():
        return PrimalDual(design, np.ones(design.batch.n_nodes), c_node, c_edge, epsilon=0.7,
                          C=1.0, direction=direction)

    whole, split = make(), _SplitStep(make())
    # Bethe's counting numbers on loopy graphs: trials are judged at their own messages
    assert whole.nonconvex == (cn == "bethe")
    for _ in range(6):
        np.testing.assert_allclose(split.iterate(), whole.iterate(), rtol=1e-12)
        np.testing.assert_allclose(split.W, whole.W, rtol=1e-12, atol=1e-14)
        np.testing.assert_allclose(split.P, whole.P, rtol=1e-12, atol=1e-14)
        np.testing.assert_allclose(split.pd.lam, whole.lam, rtol=1e-12, atol=1e-14)
    assert np.any(whole.W != 0.0)


def test_trial_messages_sweep_a_copy_only_when_asked():
    X, y = graphs(seed=3, kinds=("cycle4", "random"))
    design = GraphModel().fit(X, y).design(X, y)[0]
    pd = PrimalDual(design, np.ones(design.batch.n_nodes),
                    *counting_numbers(design, "convex"), epsilon=0.7)
    W = np.random.default_rng(0).normal(size=pd.W.shape)
    assert pd.trial_messages(W, pd.P) is pd.lam
    lam = pd.trial_messages(W, pd.P, sweep=True)
    assert lam is not pd.lam and np.any(lam != 0.0) and not np.any(pd.lam)
    pd.adopt(lam)
    assert pd.lam is lam
