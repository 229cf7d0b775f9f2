"""The online CRF trainers of :mod:`skstruct.solvers._online` against plain-numpy
references on small random chains: dense joint feature vectors, a numpy Viterbi with the
kernel's tie-breaking, and the likelihood's value and gradient by enumerating every
labelling."""

import dataclasses
import itertools

import numpy as np
import pytest
import scipy.sparse as sp
from scipy.special import logsumexp

from skstruct.models import ChainModel, GraphModel
from skstruct.solvers._online import (
    OPTION_DEFAULTS,
    OnlineCRF,
    OnlineState,
    check_options,
    grow_state,
    init_state,
    l2sgd_converged,
)

K, F = 3, 5


class Problem:
    """Random chains, their design (one or two transition tables) and the dense
    reference arithmetic."""

    def __init__(self, seed=0, n=7, M=1, masked=False, two_class_tail=False, signal=0.0):
        rng = np.random.default_rng(seed)
        self.X = [rng.normal(size=(int(rng.integers(1, 6)), F)) for _ in range(n)]
        self.y = [rng.integers(0, K, len(x)) for x in self.X]
        for k in range(K):
            self.y[k][0] = k
        if two_class_tail:
            # the samples after the first K have no label K - 1
            self.y[K:] = [lab % (K - 1) for lab in self.y[K:]]
        for x, lab in zip(self.X, self.y):
            x[np.arange(len(lab)), lab] += signal
        design, _ = ChainModel().fit_design(self.X, self.y)
        assert design.n_features_total == F and design.n_classes == K
        np.testing.assert_array_equal(design.features.toarray(), np.vstack(self.X))
        # the table of each transition
        self.tab = [rng.integers(0, M, len(x) - 1) for x in self.X]
        if M > 1:
            tab = np.concatenate(self.tab)
            ef = sp.csr_matrix((np.ones(tab.size), tab, np.arange(tab.size + 1)),
                               shape=(tab.size, M))
            design = dataclasses.replace(design, edge_features=ef)
        else:
            self.tab = [np.zeros(len(x) - 1, np.int64) for x in self.X]
        self.design, self.M, self.n = design, M, n
        self.nW = F * K
        self.n_w = F * K + M * K * K
        self.mask = rng.random((F, K)) < 0.6 if masked else None
        node_mask = np.ones(F * K) if self.mask is None else self.mask.ravel().astype(float)
        self.keep = np.concatenate([node_mask, np.ones(M * K * K)])
        # every labelling's features, per sample (for the likelihood)
        self.all_labels, self.all_phi = [], []
        for i, x in enumerate(self.X):
            labs = np.array(list(itertools.product(range(K), repeat=len(x))))
            self.all_labels.append(labs)
            self.all_phi.append(np.array([self.phi(i, lab) for lab in labs]))

    def phi(self, i, lab):
        x = self.X[i]
        out = np.zeros(self.n_w)
        W = out[:self.nW].reshape(F, K)
        P = out[self.nW:].reshape(self.M, K, K)
        for t in range(len(lab)):
            W[:, lab[t]] += x[t]
        for t in range(len(lab) - 1):
            P[self.tab[i][t], lab[t], lab[t + 1]] += 1.0
        return out

    def viterbi(self, i, w):
        th = self.X[i] @ w[:self.nW].reshape(F, K)
        P = w[self.nW:].reshape(self.M, K, K)
        delta = th[0].copy()
        back = []
        for t in range(1, len(th)):
            cand = delta[:, None] + P[self.tab[i][t - 1]]
            arg = cand.argmax(axis=0)
            back.append(arg)
            delta = cand[arg, np.arange(K)] + th[t]
        lab = [int(delta.argmax())]
        for arg in reversed(back):
            lab.append(int(arg[lab[-1]]))
        return np.array(lab[::-1])

    def nll_grad(self, i, w):
        """``-log p(y_i | x_i)`` and its gradient (masked) by enumeration."""
        Phi = self.all_phi[i]
        s = Phi @ w
        logz = logsumexp(s)
        p = np.exp(s - logz)
        fy = self.phi(i, self.y[i])
        return logz - fy @ w, (p @ Phi - fy) * self.keep


def reference_margin(pb, solver, opts, C, order, epochs, w=None):
    """The perceptron, PA or AROW by the dense formulas; returns the final iterate, the
    average of the weights after every sample, and (loss, mistakes) per epoch."""
    w = np.zeros(pb.n_w) if w is None else w.copy()
    sigma = np.full(pb.n_w, opts.get("variance", 1.0))
    after, stats = [], []
    for _ in range(epochs):
        loss, mistakes = 0.0, 0
        for i in order:
            yhat = pb.viterbi(i, w)
            d = int(np.sum(yhat != pb.y[i]))
            if d:
                mistakes += 1
                fy, fh = pb.phi(i, pb.y[i]), pb.phi(i, yhat)
                delta = (fy - fh) * pb.keep
                margin = w @ fh - w @ fy
                sq = delta @ delta
                if solver == "perceptron":
                    loss += d
                    w = w + delta
                elif solver == "pa":
                    cost = margin + (np.sqrt(d) if opts["error_sensitive"] else 1.0)
                    loss += cost
                    if sq > 0:
                        tau = {0: cost / sq, 1: min(C, cost / sq),
                               2: cost / (sq + 1 / (2 * C))}[opts["type"]]
                        w = w + tau * delta
                else:
                    cost = margin + d
                    loss += cost
                    beta = 1.0 / (sigma @ delta ** 2 + opts["gamma"])
                    alpha = max(0.0, cost) * beta
                    w = w + alpha * sigma * delta
                    sigma = sigma - beta * sigma ** 2 * delta ** 2
            after.append(w.copy())
        stats.append((loss, mistakes))
    return w, np.mean(after, axis=0), stats, sigma


def reference_sgd(pb, lam, t0, order, epochs, n_norm, w=None, t=0):
    """L2 SGD with ``eta = 1 / (lam (t0 + t))``; returns the weights, (loss, objective)
    per epoch and the sample count."""
    w = np.zeros(pb.n_w) if w is None else w.copy()
    stats = []
    for _ in range(epochs):
        loss = 0.0
        for i in order:
            eta = 1.0 / (lam * (t0 + t))
            t += 1
            li, g = pb.nll_grad(i, w)
            loss += li
            w = (1.0 - eta * lam) * w - eta * g
        stats.append((loss, loss + 0.5 * lam * n_norm * w @ w))
    return w, stats, t


def reference_calibration(pb, lam, opts, rng):
    """CRFsuite's search for the initial rate, trial by trial."""
    S = min(opts["calibration_samples"], pb.n)
    order = rng.permutation(pb.n)[:S]
    init = sum(pb.nll_grad(i, np.zeros(pb.n_w))[0] for i in order)
    tried = []

    def trial(eta):
        _, stats, _ = reference_sgd(pb, lam, 1.0 / (lam * eta), order, 1, S)
        tried.append((stats[0][1], eta))
        return stats[0][1]

    eta, accepted = opts["calibration_eta"], 0
    # growing while the loss stays below the initial one
    while len(tried) < opts["calibration_max_trials"]:
        loss = trial(eta)
        if not loss < init:
            break
        accepted += 1
        if accepted == opts["calibration_candidates"]:
            break
        eta *= opts["calibration_rate"]
    # then shrinking from the first rate divided once
    eta, accepted = opts["calibration_eta"] / opts["calibration_rate"], 0
    while len(tried) < opts["calibration_max_trials"] and accepted < \
            opts["calibration_candidates"]:
        accepted += trial(eta) < init
        eta /= opts["calibration_rate"]
    loss, eta = min(tried, key=lambda p: p[0])
    return eta, [(e, f) for f, e in tried]


ORDER = np.array([3, 0, 6, 2, 5, 1, 4], np.int64)


def _run(pb, solver, opts, C=1.0, epochs=2):
    trainer = OnlineCRF(pb.design, solver, C=C, options=opts, mask=pb.mask)
    state = init_state(solver, opts, trainer.n_weights)
    stats = [trainer.epoch(state, ORDER) for _ in range(epochs)]
    return trainer, state, stats


@pytest.mark.parametrize("masked", [False, True])
@pytest.mark.parametrize("M", [1, 2])
@pytest.mark.parametrize("average", [True, False])
def test_perceptron_matches_the_dense_reference(average, M, masked):
    pb = Problem(seed=1, M=M, masked=masked)
    opts = {"average": average}
    trainer, state, stats = _run(pb, "perceptron", opts)
    w, avg, ref_stats, _ = reference_margin(pb, "perceptron", opts, 1.0, ORDER, 2)
    np.testing.assert_allclose(state.w, w, atol=1e-10)
    np.testing.assert_allclose(trainer.weights(state), avg if average else w, atol=1e-10)
    assert [(s.loss, s.mistakes) for s in stats] == ref_stats
    assert all(np.isnan(s.objective) for s in stats)
    assert ref_stats[0][1] > 0 and np.any(w != 0)
    if masked:
        assert np.all(state.w[:pb.nW].reshape(F, K)[~pb.mask] == 0)


@pytest.mark.parametrize("masked", [False, True])
@pytest.mark.parametrize("average", [True, False])
@pytest.mark.parametrize("sensitive", [True, False])
@pytest.mark.parametrize("kind", [0, 1, 2])
def test_passive_aggressive_matches_the_dense_reference(kind, sensitive, average, masked):
    pb = Problem(seed=2, M=2 if kind == 1 else 1, masked=masked)
    opts = {"type": kind, "error_sensitive": sensitive, "average": average}
    # a small C makes PA-I's clipping bite
    C = 0.05 if kind == 1 else 0.7
    trainer, state, stats = _run(pb, "pa", opts, C=C)
    w, avg, ref_stats, _ = reference_margin(pb, "pa", opts, C, ORDER, 2)
    np.testing.assert_allclose(state.w, w, rtol=1e-9, atol=1e-10)
    np.testing.assert_allclose(trainer.weights(state), avg if average else w, rtol=1e-9,
                               atol=1e-10)
    for s, (loss, mistakes) in zip(stats, ref_stats):
        assert s.mistakes == mistakes
        np.testing.assert_allclose(s.loss, loss, rtol=1e-9)
    assert ref_stats[0][1] > 0


@pytest.mark.parametrize("masked", [False, True])
@pytest.mark.parametrize("M", [1, 2])
def test_arow_matches_the_dense_reference(M, masked):
    pb = Problem(seed=3, M=M, masked=masked)
    opts = {"variance": 0.8, "gamma": 1.5}
    trainer, state, stats = _run(pb, "arow", opts)
    w, _, ref_stats, sigma = reference_margin(pb, "arow", check_options("arow", opts), 1.0,
                                              ORDER, 2)
    np.testing.assert_allclose(state.w, w, rtol=1e-9, atol=1e-10)
    np.testing.assert_allclose(state.sigma, sigma, rtol=1e-9, atol=1e-12)
    np.testing.assert_allclose(trainer.weights(state), w, rtol=1e-9, atol=1e-10)
    for s, (loss, mistakes) in zip(stats, ref_stats):
        assert s.mistakes == mistakes
        np.testing.assert_allclose(s.loss, loss, rtol=1e-9)
    assert np.any(sigma < 0.8)
    assert state.ws.shape == (0,)


@pytest.mark.parametrize("masked", [False, True])
@pytest.mark.parametrize("M", [1, 2])
@pytest.mark.parametrize("t0", [0.7, 1.0, 40.0])
def test_l2sgd_epochs_at_a_fixed_t0_match_numpy_sgd(t0, M, masked):
    # t0 = 1 makes the first decay factor exactly 0, t0 = 0.7 a negative one
    pb = Problem(seed=4, M=M, masked=masked)
    C = 2.0
    trainer = OnlineCRF(pb.design, "l2sgd", C=C, options=None, mask=pb.mask)
    state = init_state("l2sgd", None, trainer.n_weights)
    state.t0[()] = t0
    stats = [trainer.epoch(state, ORDER) for _ in range(2)]
    lam = 1.0 / (C * pb.n)
    w, ref_stats, t = reference_sgd(pb, lam, t0, ORDER, 2, pb.n)
    np.testing.assert_allclose(trainer.weights(state), w, rtol=1e-8, atol=1e-10)
    assert float(state.t) == t
    for s, (loss, objective) in zip(stats, ref_stats):
        assert s.mistakes == 0
        np.testing.assert_allclose([s.loss, s.objective], [loss, objective], rtol=1e-9)
    if masked:
        assert np.all(trainer.weights(state)[:pb.nW].reshape(F, K)[~pb.mask] == 0)


def test_l2sgd_objective_is_the_crf_objective_divided_by_c():
    from skstruct.solvers._crf import CRFObjective

    pb = Problem(seed=5)
    C = 3.0
    trainer = OnlineCRF(pb.design, "l2sgd", C=C, options=None)
    state = init_state("l2sgd", None, trainer.n_weights)
    state.t0[()] = 20.0
    trainer.epoch(state, ORDER)
    w = trainer.weights(state)
    # at fixed weights (t0 huge: steps of ~0) the pass's summed losses are those at w
    frozen = init_state("l2sgd", None, trainer.n_weights, w0=w)
    frozen.t0[()] = 1e300
    stats = trainer.epoch(frozen, ORDER)
    np.testing.assert_allclose(stats.objective,
                               CRFObjective(pb.design, C).value_grad(w)[0] / C, rtol=1e-9)


@pytest.mark.parametrize("opts", [
    {"calibration_samples": 5},
    {"calibration_samples": 1000, "calibration_eta": 5.0, "calibration_rate": 3.0},
    {"calibration_samples": 4, "calibration_candidates": 2, "calibration_max_trials": 6},
    {"calibration_eta": 1e-4, "calibration_max_trials": 3},
])
@pytest.mark.parametrize("seed, signal", [(6, 2.0), (12, 1.5)])
def test_calibration_picks_the_rate_the_reference_picks(opts, seed, signal):
    # labels the features predict: learning beats the zero weights for some rates
    pb = Problem(seed=seed, signal=signal)
    C = 0.5
    trainer = OnlineCRF(pb.design, "l2sgd", C=C, options=opts)
    state = init_state("l2sgd", opts, trainer.n_weights)
    eta = trainer.calibrate(state, np.random.default_rng(11))
    lam = 1.0 / (C * pb.n)
    ref_eta, tried = reference_calibration(pb, lam, check_options("l2sgd", opts),
                                           np.random.default_rng(11))
    assert eta == pytest.approx(ref_eta, rel=1e-12)
    assert float(state.t0) == pytest.approx(1.0 / (lam * ref_eta), rel=1e-12)
    np.testing.assert_allclose(trainer.calibration_trials, tried, rtol=1e-9)
    assert len(tried) <= check_options("l2sgd", opts)["calibration_max_trials"]
    # calibration leaves the weights and the sample count alone
    assert not state.w.any() and float(state.t) == 0.0


def test_calibration_is_a_no_op_for_the_margin_solvers():
    pb = Problem(seed=6)
    trainer = OnlineCRF(pb.design, "pa", C=1.0, options=None)
    state = init_state("pa", None, trainer.n_weights)
    assert trainer.calibrate(state, np.random.default_rng(0)) is None
    assert float(state.t0) == 0.0


def test_l2sgd_needs_t0():
    pb = Problem(seed=6)
    trainer = OnlineCRF(pb.design, "l2sgd", C=1.0, options=None)
    with pytest.raises(ValueError, match="calibrate"):
        trainer.epoch(init_state("l2sgd", None, trainer.n_weights), ORDER)


def test_l2sgd_converged_compares_with_the_objective_period_epochs_back():
    assert not l2sgd_converged([5.0, 4.0], period=2, delta=1e-3)
    assert not l2sgd_converged([5.0, 4.0, 3.0], period=2, delta=1e-3)
    assert l2sgd_converged([5.0, 3.0, 3.0, 2.9999], period=2, delta=1e-3)
    assert not l2sgd_converged([5.0, 3.0, 3.0, 2.9], period=2, delta=1e-3)
    assert l2sgd_converged([1.0, 0.5, 0.0], period=1, delta=1e-3)


@pytest.mark.parametrize("solver", ["perceptron", "pa"])
def test_a_separable_problem_is_learned(solver):
    rng = np.random.default_rng(7)
    X, y = [], []
    for _ in range(12):
        lab = rng.integers(0, K, int(rng.integers(2, 7)))
        x = 0.2 * rng.normal(size=(len(lab), F))
        x[np.arange(len(lab)), lab] += 2.0
        X.append(x)
        y.append(lab)
    design, _ = ChainModel().fit_design(X, y)
    trainer = OnlineCRF(design, solver, C=1.0, options=None)
    state = init_state(solver, None, trainer.n_weights)
    mistakes = [trainer.epoch(state, np.arange(12)).mistakes for _ in range(10)]
    assert mistakes[0] > 0 and mistakes[-1] == 0
    pb = Problem.__new__(Problem)
    pb.nW, pb.M, pb.tab = F * K, 1, [np.zeros(len(x) - 1, np.int64) for x in X]
    pb.X = X
    w = trainer.weights(state)
    for i in range(12):
        np.testing.assert_array_equal(pb.viterbi(i, w), y[i])


def test_counters_run_across_calls_and_orders_can_repeat_samples():
    pb = Problem(seed=8)
    opts = {"average": True}
    trainer = OnlineCRF(pb.design, "perceptron", C=1.0, options=opts)
    state = init_state("perceptron", opts, trainer.n_weights)
    order = np.array([1, 1, 4, 2], np.int64)
    trainer.epoch(state, order)
    trainer.epoch(state, order[:2])
    w, avg, _, _ = reference_margin(pb, "perceptron", opts, 1.0, [1, 1, 4, 2, 1, 1], 1)
    assert float(state.t) == 6.0
    np.testing.assert_allclose(state.w, w, atol=1e-10)
    np.testing.assert_allclose(trainer.weights(state), avg, atol=1e-10)


@pytest.mark.parametrize("average", [True, False])
def test_a_warm_start_continues_from_w0(average):
    pb = Problem(seed=9)
    w0 = np.random.default_rng(0).normal(size=pb.n_w)
    opts = {"type": 2, "error_sensitive": True, "average": average}
    trainer = OnlineCRF(pb.design, "pa", C=1.0, options=opts)
    state = init_state("pa", opts, trainer.n_weights, w0=w0)
    trainer.epoch(state, ORDER)
    w, avg, _, _ = reference_margin(pb, "pa", opts, 1.0, ORDER, 1, w=w0)
    np.testing.assert_allclose(trainer.weights(state), avg if average else w, rtol=1e-9,
                               atol=1e-10)
    assert not np.array_equal(w, w0)
    # the initial weights were copied, not trained in place
    assert not np.shares_memory(state.w, w0)


@pytest.mark.parametrize("solver", ["perceptron", "arow", "l2sgd"])
def test_grow_state_places_old_weights_at_their_new_classes(solver):
    F_, M, K_old, K_new = 4, 2, 3, 5
    o2n = np.array([3, 0, 1])
    n_old = F_ * K_old + M * K_old * K_old
    rng = np.random.default_rng(0)
    opts = {"variance": 2.0} if solver == "arow" else None
    state = init_state(solver, opts, n_old, w0=rng.normal(size=n_old))
    if state.ws.size:
        state.ws[:] = rng.normal(size=n_old)
    if state.sigma.size:
        state.sigma[:] = rng.uniform(0.1, 1.0, size=n_old)
    state.t[()], state.t0[()], state.scale[()] = 7.0, 3.0, 0.5
    new = grow_state(state, solver, opts, o2n, K_new, F_, M)
    assert isinstance(new, OnlineState)
    n_new = F_ * K_new + M * K_new * K_new

    def split(v, Kc):
        return v[:F_ * Kc].reshape(F_, Kc), v[F_ * Kc:].reshape(M, Kc, Kc)

    others = np.setdiff1d(np.arange(K_new), o2n)
    fields = [("w", 0.0, 0.5)]
    if state.ws.size:
        fields.append(("ws", 0.0, 1.0))
    if state.sigma.size:
        fields.append(("sigma", 2.0, 1.0))
    for name, fill, factor in fields:
        old, grown = getattr(state, name), getattr(new, name)
        assert grown.shape == (n_new,)
        W0, P0 = split(old, K_old)
        W1, P1 = split(grown, K_new)
        np.testing.assert_array_equal(W1[:, o2n], factor * W0)
        np.testing.assert_array_equal(P1[:, o2n[:, None], o2n[None, :]], factor * P0)
        assert np.all(W1[:, others] == fill)
        assert np.all(P1[:, others, :] == fill) and np.all(P1[:, :, others] == fill)
    if not state.sigma.size:
        assert new.sigma.shape == (0,)
    assert (float(new.t), float(new.t0), float(new.scale)) == (7.0, 3.0, 1.0)
    with pytest.raises(ValueError, match="weights"):
        grow_state(state, solver, opts, o2n, K_new, F_ + 1, M)
    with pytest.raises(ValueError, match="distinct"):
        grow_state(state, solver, opts, np.array([0, 0, 1]), K_new, F_, M)


def test_training_goes_on_after_growth():
    pb = Problem(seed=10, two_class_tail=True)
    # a model of classes {0, 1} first, trained on samples without class 2
    design2 = dataclasses.replace(pb.design)
    keep = [i for i in range(pb.n) if 2 not in pb.y[i]]
    assert len(keep) >= 4
    sub = pb.design.take(np.array(keep))
    sub = dataclasses.replace(sub, n_classes=2, cmap=np.arange(2), csign=np.ones(2))
    opts = {"average": True}
    small = OnlineCRF(sub, "perceptron", C=1.0, options=opts)
    state = init_state("perceptron", opts, small.n_weights)
    small.epoch(state, np.arange(len(keep)))
    grown = grow_state(state, "perceptron", opts, np.arange(2), K, F, 1)
    big = OnlineCRF(design2, "perceptron", C=1.0, options=opts)
    big.epoch(grown, ORDER)
    # the reference: the same samples, in one model of three classes from the start
    w_small, avg_small, _, _ = reference_margin(pb, "perceptron", opts, 1.0, keep, 1)
    assert not np.any(w_small[:pb.nW].reshape(F, K)[:, 2])
    w, avg, _, _ = reference_margin(pb, "perceptron", opts, 1.0, list(keep) + list(ORDER), 1)
    np.testing.assert_allclose(grown.w, w, atol=1e-10)
    np.testing.assert_allclose(big.weights(grown), avg, atol=1e-10)


def test_check_options_fills_defaults_and_names_bad_keys():
    for solver, defaults in OPTION_DEFAULTS.items():
        assert check_options(solver, None) == defaults
        filled = check_options(solver, {})
        filled[next(iter(filled))] = "changed"
        assert OPTION_DEFAULTS[solver] == check_options(solver, None) != filled
    assert check_options("pa", {"type": 2})["type"] == 2
    assert check_options("pa", {"type": np.int64(0)})["error_sensitive"] is True
    with pytest.raises(ValueError, match=r"'momentum'.*'l2sgd'.*'calibration_eta'"):
        check_options("l2sgd", {"momentum": 0.9})
    with pytest.raises(ValueError, match=r"'variance'.*'perceptron'.*'average'"):
        check_options("perceptron", {"variance": 1.0})
    with pytest.raises(ValueError, match="unknown online solver 'lbfgs'"):
        check_options("lbfgs", None)
    with pytest.raises(ValueError, match="dict"):
        check_options("pa", [("type", 1)])


@pytest.mark.parametrize("solver, key, value", [
    ("pa", "type", 3), ("pa", "type", True), ("pa", "average", 1), ("pa", "error_sensitive",
                                                                     "yes"),
    ("perceptron", "average", None), ("arow", "variance", 0.0), ("arow", "gamma", -1.0),
    ("arow", "gamma", np.inf), ("l2sgd", "calibration_eta", 0), ("l2sgd", "calibration_rate",
                                                                  1.0),
    ("l2sgd", "calibration_samples", 0), ("l2sgd", "calibration_samples", 2.5),
    ("l2sgd", "calibration_candidates", 0), ("l2sgd", "calibration_max_trials", False),
    ("l2sgd", "period", 0), ("l2sgd", "delta", -1e-3),
])
def test_check_options_refuses_bad_values(solver, key, value):
    with pytest.raises(ValueError, match=f"option '{key}' of solver '{solver}'"):
        check_options(solver, {key: value})


def test_bad_designs_and_arguments_are_refused():
    rng = np.random.default_rng(0)
    chain = np.array([[0, 1], [1, 2]])
    triangle = np.array([[0, 1], [1, 2], [2, 0]])
    X = [(rng.normal(size=(3, 2)), chain), (rng.normal(size=(3, 2)), triangle)]
    y = [np.array([0, 1, 0]), np.array([1, 0, 1])]
    design, _ = GraphModel().fit_design(X, y)
    with pytest.raises(ValueError, match="sample 1 is not a chain"):
        OnlineCRF(design, "perceptron", C=1.0, options=None)
    pb = Problem(seed=0)
    y_unknown = [np.asarray(lab, dtype=object) for lab in pb.y]
    y_unknown[4][1] = None
    unknown, _ = ChainModel().fit_design(pb.X, y_unknown)
    with pytest.raises(ValueError, match="sample 4 has an unknown label"):
        OnlineCRF(unknown, "pa", C=1.0, options=None)
    with pytest.raises(ValueError, match="mask"):
        OnlineCRF(pb.design, "pa", C=1.0, options=None, mask=np.ones((F, K + 1), bool))
    with pytest.raises(ValueError, match="C must be"):
        OnlineCRF(pb.design, "pa", C=0.0, options=None)
    with pytest.raises(ValueError, match="unknown option 'typ'"):
        OnlineCRF(pb.design, "pa", C=1.0, options={"typ": 1})
    trainer = OnlineCRF(pb.design, "perceptron", C=1.0, options=None)
    with pytest.raises(ValueError, match="order"):
        trainer.epoch(init_state("perceptron", None, trainer.n_weights), np.array([0, 7]))
    with pytest.raises(ValueError, match="weights"):
        trainer.epoch(init_state("perceptron", None, trainer.n_weights + 1), ORDER)
    with pytest.raises(ValueError, match="w0"):
        init_state("perceptron", None, 4, w0=np.zeros(5))
