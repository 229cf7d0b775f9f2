"""Hidden-variable models (hidden sub-states, hidden nodes) and their learners:
:class:`LatentStructuredSVM` (CCCP) and :class:`NonLocalCRF` (marginalised states).

References are enumerations of every state labelling of tiny samples, scored with
the joint feature map written out in :mod:`tests.test_partial_labels`, and the
plain models the latent ones reduce to.
"""

import numpy as np
import pytest
from sklearn.base import clone
from sklearn.model_selection import GridSearchCV

from skstruct import LatentStructuredSVM, NonLocalCRF, StructuredSVM
from skstruct.energies import NearestStatistic
from skstruct.models import (
    ChainModel,
    GraphModel,
    HiddenNodesModel,
    HiddenStatesModel,
    MulticlassModel,
)
from skstruct.models._latent import allowed_states
from skstruct.models._oracle import loss_augmented_labels
from skstruct.solvers._crf import CRFObjective
from tests.test_partial_labels import (
    chain_data,
    chain_edges,
    crf_brute,
    labellings,
    phi,
    split_flat,
    ssvm_primal,
)

LABELS = np.array(["p", "q"])


# ------------------------------------------------------------------------ data
def states_data(seed=0, lengths=(5, 4, 4, 3, 5, 4)):
    """Chains labelled p/q."""
    return chain_data(seed=seed, lengths=lengths, K=2)


def hidden_nodes_data(seed=0, n=5):
    """Samples of 3 visible nodes (2 features) and 0 to 2 hidden nodes; every graph a
    tree over the visible and hidden nodes."""
    rng = np.random.default_rng(seed)
    shapes = [(2, [[0, 3], [1, 3], [2, 4], [3, 4]]),
              (1, [[0, 3], [1, 3], [2, 3]]),
              (0, [[0, 1], [1, 2]]),
              (2, [[3, 0], [3, 1], [4, 3], [4, 2]]),
              (1, [[0, 1], [1, 3], [3, 2]])]
    X, y = [], []
    for i in range(n):
        h, e = shapes[i % len(shapes)]
        lab = rng.integers(0, 2, 3)
        f = rng.normal(size=(3, 2))
        f[:, 0] += 1.5 * lab
        X.append((f, np.array(e), h))
        y.append(LABELS[lab])
    y[0][:2] = LABELS
    return X, y


def hn_samples(X):
    return [(f, e, len(f) + h) for f, e, h in X]


def st_samples(X):
    return [(x, chain_edges(len(x)), len(x)) for x in X]


def best_score(sample, w, K, allowed=None):
    """The best score of a state labelling of ``sample`` (``allowed``: (n, K) mask)."""
    f, e, n = sample
    return max(phi(f, e, h, K) @ w for h in labellings(n, K, allowed))


def assert_map(samples, w, K, got, allowed=None):
    """Every ``got[i]`` is a best state labelling of sample ``i`` among the allowed
    ones (ties allowed)."""
    for i, ((f, e, n), g) in enumerate(zip(samples, got)):
        a = None if allowed is None else allowed[i]
        g = np.asarray(g)
        assert g.shape == (n,)
        if a is not None:
            assert a[np.arange(n), g].all()
        best = best_score((f, e, n), w, K, a)
        assert phi(f, e, g, K) @ w >= best - 1e-8 * (1 + abs(best))


def assert_map_labels(samples, w, K, labels, state_label, base=None):
    """Every ``labels[i]`` (codes, visible nodes first) is the label sequence of a best
    state labelling of sample ``i``."""
    for i, (sample, lab) in enumerate(zip(samples, labels)):
        b = None if base is None else base[i]
        best = best_score(sample, w, K, b)
        ok = consistent([lab], state_label, None if b is None else [b])[0]
        assert best_score(sample, w, K, ok) >= best - 1e-8 * (1 + abs(best))


def visible_allowed(X, L, H):
    """What HiddenNodesModel lets each node take: labels on visible nodes, hidden
    states on hidden ones."""
    out = []
    for f, _, h in X:
        a = np.zeros((len(f) + h, L + H), bool)
        a[:len(f), :L] = True
        a[len(f):, L:] = True
        out.append(a)
    return out


def consistent(y, state_label, base=None):
    """Per sample (n, n_states): the states consistent with the labels ``y`` (codes;
    hidden nodes, beyond ``len(y_i)``, free within ``base``)."""
    out = []
    for i, lab in enumerate(y):
        n = len(lab) if base is None else base[i].shape[0]
        a = np.ones((n, len(state_label)), bool) if base is None else base[i].copy()
        for v, c in enumerate(lab):
            a[v] &= state_label == c
        out.append(a)
    return out


# ---------------------------------------------------------------- the models
def test_hidden_states_model_states_design_and_allowed_states():
    X, y = states_data()
    m = HiddenStatesModel(ChainModel(), n_states_per_label=[2, 3])
    design, _ = m.fit_design(X, y)
    assert m.classes_.tolist() == ["p", "q"] and m.n_states_ == 5
    np.testing.assert_array_equal(m.state_label_, [0, 0, 1, 1, 1])
    assert design.n_classes == 5
    np.testing.assert_array_equal(design.lgroup, [0, 0, 1, 1, 1])
    assert design.node_offset is None
    codes = np.searchsorted(m.classes_, np.concatenate(y))
    np.testing.assert_array_equal(design.y, np.where(codes == 0, 0, 2))
    allowed, got_codes = allowed_states(m, design)
    np.testing.assert_array_equal(got_codes, codes)
    np.testing.assert_array_equal(allowed, m.state_label_[None, :] == codes[:, None])
    # weights over the states: (F, 5) unary and one (5, 5) transition table
    assert m.size_joint_feature == 3 * 5 + 25
    assert HiddenStatesModel(ChainModel(), n_states_per_label=3).fit(X, y).n_states_ == 6


@pytest.mark.parametrize("n, match", [([2, 2, 2], "2 ints"), ([2, 0], ">= 1"),
                                      ([1.5, 2.0], "2 ints")])
def test_hidden_states_model_refuses_bad_state_counts(n, match):
    X, y = states_data()
    with pytest.raises(ValueError, match=match):
        HiddenStatesModel(ChainModel(), n_states_per_label=n).fit(X, y)


def test_hidden_states_model_refuses_other_bases():
    X, y = states_data()
    Xm = np.vstack(X)
    with pytest.raises(ValueError, match="base"):
        HiddenStatesModel(MulticlassModel()).fit(Xm, np.concatenate(y))


def test_hidden_nodes_model_design_forbids_the_other_kind_of_state():
    X, y = hidden_nodes_data()
    m = HiddenNodesModel(n_hidden_states=3)
    design, _ = m.fit_design(X, y)
    L, H = 2, 3
    np.testing.assert_array_equal(m.state_label_, [0, 1, -1, -1, -1])
    assert design.n_classes == L + H
    want = np.vstack(visible_allowed(X, L, H))
    np.testing.assert_array_equal(np.isfinite(design.node_offset), want)
    np.testing.assert_array_equal(design.node_offset[want], 0.0)
    # visible nodes: their label; hidden nodes: -1
    want_y = np.concatenate([np.r_[np.searchsorted(LABELS, lab), -np.ones(h, int)]
                             for lab, (_, _, h) in zip(y, X)])
    np.testing.assert_array_equal(design.y, want_y)
    allowed, codes = allowed_states(m, design)
    np.testing.assert_array_equal(codes, want_y)
    ref = np.vstack(consistent([np.searchsorted(LABELS, lab) for lab in y], m.state_label_,
                               visible_allowed(X, L, H)))
    np.testing.assert_array_equal(allowed, ref)
    # hidden nodes have no features, never a loss
    np.testing.assert_array_equal(design.lgroup, [0, 1, 2, 2, 2])
    rows = design.features[design.xrow].toarray()
    np.testing.assert_array_equal(rows[want_y < 0], 0.0)


@pytest.mark.parametrize("bad, match", [
    (lambda X, y: ([X[0], X[1][:2]] + X[2:], y), "sample 1: HiddenNodesModel needs a tuple"),
    (lambda X, y: ([X[0], (X[1][0], X[1][1], -1)] + X[2:], y), "sample 1: n_hidden"),
    (lambda X, y: (X, [y[0], y[1][:2]] + y[2:]), "sample 1: y must label its 3 visible"),
    (lambda X, y: ([X[0], X[1][0]] + X[2:], y), "sample 1"),
])
def test_hidden_nodes_model_refuses_malformed_samples(bad, match):
    X, y = hidden_nodes_data()
    Xb, yb = bad(list(X), list(y))
    with pytest.raises(ValueError, match=match):
        HiddenNodesModel().fit(Xb, yb)


# ------------------------------------- the oracle: labels, not states, lose
@pytest.mark.parametrize("kind", ["states", "nodes"])
def test_loss_augmented_oracle_counts_label_errors_only(kind):
    if kind == "states":
        X, y = states_data(seed=1)
        m = HiddenStatesModel(ChainModel(), n_states_per_label=[2, 2])
        samples, base = st_samples(X), None
    else:
        X, y = hidden_nodes_data(seed=1)
        m = HiddenNodesModel(n_hidden_states=2)
        samples, base = hn_samples(X), visible_allowed(X, 2, 2)
    design, _ = m.fit_design(X, y)
    K = design.n_classes
    # the truth: a state for every node (hidden nodes: the first hidden state)
    design.y = np.where(design.y < 0, 2, design.y)
    rng = np.random.default_rng(0)
    group = design.lgroup
    n_same_label_changes = n_state_loss_differs = 0
    for _ in range(4):
        W = 1.5 * rng.normal(size=(design.n_features_total, K))
        P = 1.5 * rng.normal(size=(1, K, K))
        w = np.concatenate([W.ravel(), P.ravel()])
        got = split_flat(loss_augmented_labels(design, W, P, 10).copy(), design)
        for i, ((f, e, n), t) in enumerate(zip(samples, split_flat(design.y, design))):
            labs = labellings(n, K, None if base is None else base[i])
            loss = (group[labs] != group[t][None, :]).sum(axis=1)
            s = np.array([phi(f, e, h, K) @ w for h in labs]) + loss
            order = np.argsort(s)
            assert s[order[-1]] - s[order[-2]] > 1e-9
            np.testing.assert_array_equal(got[i], labs[order[-1]])
            n_same_label_changes += int(np.sum((got[i] != t) & (group[got[i]] == group[t])))
            # under a loss over states the answer would differ somewhere
            s_state = s - loss + (labs != t[None, :]).sum(axis=1)
            n_state_loss_differs += int(np.any(labs[np.argmax(s_state)] != got[i]))
    # a change of sub-state alone happens, and costs nothing
    assert n_same_label_changes > 0 and n_state_loss_differs > 0


# ----------------------------------------------- the CRF's marginal likelihood
@pytest.mark.parametrize("kind", ["states", "nodes"])
def test_latent_crf_objective_matches_enumeration(kind):
    if kind == "states":
        X, y = states_data(seed=2)
        m = HiddenStatesModel(ChainModel(), n_states_per_label=[2, 1])
        samples = st_samples(X)
    else:
        X, y = hidden_nodes_data(seed=2)
        m = HiddenNodesModel(n_hidden_states=2)
        samples = hn_samples(X)
    design, _ = m.fit_design(X, y)
    allowed = allowed_states(m, design)[0]
    K = design.n_classes
    base = (split_flat(np.isfinite(design.node_offset), design) if kind == "nodes"
            else [np.ones((n, K), bool) for _, _, n in samples])
    C = 0.8
    obj = CRFObjective(design, C, allowed=allowed)
    rng = np.random.default_rng(3)
    for _ in range(3):
        w = rng.normal(size=obj.n_weights)
        value, grad = obj.value_grad(w)
        ref_v, ref_g = crf_brute(samples, split_flat(allowed, design), base, K, w, C)
        assert value == pytest.approx(ref_v, rel=1e-10)
        np.testing.assert_allclose(grad, ref_g, atol=1e-9)


def test_latent_crf_reaches_a_stationary_point_and_predicts_labels_of_map_states():
    X, y = states_data(seed=3)
    m = HiddenStatesModel(ChainModel(), n_states_per_label=[2, 1])
    crf = NonLocalCRF(model=m, C=1.0, tol=1e-12, max_iter=500, random_state=0).fit(X, y)
    # the same seed, the same start and the same weights; zero weights would be a
    # saddle point where the sub-states stay alike
    again = NonLocalCRF(model=m, C=1.0, tol=1e-12, max_iter=500, random_state=0).fit(X, y)
    np.testing.assert_array_equal(crf.coef_, again.coef_)
    W = crf.unary_coef_
    assert np.abs(W[0] - W[1]).max() > 1e-3
    design, _ = crf.model_.design(X, y)
    obj = CRFObjective(design, 1.0, allowed=allowed_states(crf.model_, design)[0])
    value, grad = obj.value_grad(crf.coef_.copy())
    assert np.linalg.norm(grad) <= 1e-4 * np.linalg.norm(obj.value_grad(0 * crf.coef_)[1])
    rng = np.random.default_rng(0)
    for _ in range(10):
        d = rng.normal(size=crf.coef_.shape)
        assert obj.value_grad(crf.coef_ + 1e-2 * d / np.linalg.norm(d))[0] >= value - 1e-12
    # predictions: the labels of the best states
    pred = crf.predict(X)
    assert [len(p) for p in pred] == [len(x) for x in X]
    assert_map_labels(st_samples(X), crf.coef_, 3,
                      [np.searchsorted(crf.classes_, p) for p in pred], crf.model_.state_label_)


@pytest.mark.parametrize("kw, what", [
    (dict(energy=NearestStatistic("marginals")), "energy=None"),
    (dict(feature_pairs="seen"), "feature_pairs='all'"),
    (dict(solver="sgd"), "solver='lbfgs'"),
])
def test_latent_crf_refuses_what_cannot_marginalise(kw, what):
    X, y = states_data()
    with pytest.raises(ValueError, match="hidden states or hidden nodes.*" + what):
        NonLocalCRF(model=HiddenStatesModel(ChainModel()), **kw).fit(X, y)


def test_latent_crf_with_hidden_nodes_predicts_visible_nodes():
    X, y = hidden_nodes_data(seed=4)
    crf = NonLocalCRF(model=HiddenNodesModel(n_hidden_states=2), C=1.0, random_state=0,
                      tol=1e-10, max_iter=300).fit(X, y)
    pred = crf.predict(X)
    assert [len(p) for p in pred] == [len(f) for f, _, _ in X]
    assert_map_labels(hn_samples(X), crf.coef_, 4,
                      [np.searchsorted(crf.classes_, p) for p in pred], crf.model_.state_label_,
                      visible_allowed(X, 2, 2))


# -------------------------------------------------------- LatentStructuredSVM
def _fit_states(solver="one_slack", seed=0, n_states=(2, 1), **kw):
    X, y = states_data(seed=seed)
    opts = dict(one_slack=dict(tol=1e-8, max_iter=300), bcfw=dict(max_iter=100),
                subgradient=dict(max_iter=30))[solver]
    svm = StructuredSVM(model=HiddenStatesModel(ChainModel(), n_states_per_label=list(n_states)),
                        C=3.0, solver=solver, **opts)
    return X, y, LatentStructuredSVM(estimator=svm, random_state=seed, **kw).fit(X, y)


@pytest.mark.parametrize("solver", ["one_slack", "bcfw", "subgradient"])
def test_latent_ssvm_states_imputation_and_prediction_against_enumeration(solver):
    X, y, lat = _fit_states(solver)
    m = lat.model_
    K = m.n_states_
    samples = st_samples(X)
    # CCCP stopped because nothing changed, or ran out of iterations
    h = lat.history_
    assert len(h["primal"]) == len(h["n_changed"]) == len(h["seconds"]) == lat.n_iter_
    assert h["n_changed"][-1] == 0 or lat.n_iter_ == lat.max_iter
    assert np.all(np.diff(h["seconds"]) >= 0)
    np.testing.assert_array_equal(lat.coef_, lat.estimator_.coef_)
    # predict_latent: the best states; predict: their labels
    states = lat.predict_latent(X)
    assert_map(samples, lat.coef_, K, states)
    for s, p in zip(states, lat.predict(X)):
        np.testing.assert_array_equal(p, lat.classes_[m.state_label_[s]])
    # latent: the best states consistent with the labels
    codes = [np.searchsorted(lat.classes_, lab) for lab in y]
    ok = consistent(codes, m.state_label_)
    imputed = lat.latent(X, y)
    assert_map(samples, lat.coef_, K, imputed, ok)
    for s, c in zip(imputed, codes):
        np.testing.assert_array_equal(m.state_label_[s], c)


def test_latent_ssvm_hidden_nodes_against_enumeration():
    X, y = hidden_nodes_data(seed=5, n=5)
    svm = StructuredSVM(model=HiddenNodesModel(n_hidden_states=2), C=3.0, solver="one_slack",
                        tol=1e-8, max_iter=300)
    lat = LatentStructuredSVM(estimator=svm, random_state=0).fit(X, y)
    m = lat.model_
    base = visible_allowed(X, 2, 2)
    states = lat.predict_latent(X)
    assert_map(hn_samples(X), lat.coef_, 4, states, base)
    for s, p, (f, _, h) in zip(states, lat.predict(X), X):
        assert len(s) == len(f) + h and len(p) == len(f)
        assert np.all(s[:len(f)] < 2) and np.all(s[len(f):] >= 2)
        np.testing.assert_array_equal(p, lat.classes_[s[:len(f)]])
    codes = [np.searchsorted(lat.classes_, lab) for lab in y]
    imputed = lat.latent(X, y)
    assert_map(hn_samples(X), lat.coef_, 4, imputed, consistent(codes, m.state_label_, base))
    for s, c in zip(imputed, codes):
        np.testing.assert_array_equal(s[:len(c)], c)


@pytest.mark.parametrize("solver", ["one_slack", "bcfw", "subgradient"])
def test_convex_step_is_the_ssvm_of_the_given_states_with_a_label_loss(solver):
    """``initial_states`` and one iteration: the primal reported is the enumerated one of
    those states as the truth under the label loss (not the state loss); with a
    certified solver its weights minimise it (a convex objective: no nearby point
    does better)."""
    X, y = states_data(seed=6)
    C = 3.0
    sl = np.array([0, 0, 1])
    rng = np.random.default_rng(0)
    codes = [np.searchsorted(LABELS, lab) for lab in y]
    H0 = [np.where(c == 0, rng.integers(0, 2, len(c)), 2) for c in codes]
    opts = dict(one_slack=dict(tol=1e-8, max_iter=300), bcfw=dict(tol=1e-6, max_iter=300),
                subgradient=dict(max_iter=30))[solver]
    svm = StructuredSVM(model=HiddenStatesModel(ChainModel(), n_states_per_label=[2, 1]), C=C,
                        solver=solver, random_state=0, **opts)
    lat = LatentStructuredSVM(estimator=svm, max_iter=1).fit(X, y, initial_states=H0)
    assert lat.n_iter_ == 1
    samples = st_samples(X)
    ones = [np.ones(len(c)) for c in codes]
    w = lat.coef_
    want = ssvm_primal(w, samples, H0, ones, sl, 3, C)
    assert lat.history_["primal"][0] == pytest.approx(want, rel=1e-7)
    assert ssvm_primal(w, samples, H0, ones, np.arange(3), 3, C) - want > 1e-2
    if solver != "subgradient":
        for _ in range(10):
            d = rng.normal(size=w.shape)
            assert ssvm_primal(w + 0.1 * d / np.linalg.norm(d), samples, H0, ones, sl, 3,
                               C) > want


def test_latent_init_first_starts_from_the_first_state_of_each_label():
    X, y = states_data(seed=6)
    m = HiddenStatesModel(ChainModel(), n_states_per_label=[2, 2])
    svm = StructuredSVM(model=m, C=3.0, solver="one_slack", tol=1e-8, max_iter=300)
    first = LatentStructuredSVM(estimator=svm, max_iter=1, latent_init="first").fit(X, y)
    H = [np.where(lab == "p", 0, 2) for lab in y]
    given = LatentStructuredSVM(estimator=svm, max_iter=1).fit(X, y, initial_states=H)
    np.testing.assert_allclose(first.coef_, given.coef_, atol=1e-12)
    # random: states drawn among the consistent ones, reproducibly
    a = LatentStructuredSVM(estimator=svm, max_iter=1, random_state=5).fit(X, y)
    b = LatentStructuredSVM(estimator=svm, max_iter=1, random_state=5).fit(X, y)
    np.testing.assert_array_equal(a.coef_, b.coef_)
    assert np.abs(a.coef_ - first.coef_).max() > 1e-3


def test_one_state_per_label_is_the_plain_chain_ssvm():
    X, y = states_data(seed=7)
    for solver, kw in [("one_slack", dict(tol=1e-8, max_iter=300)), ("bcfw", dict(max_iter=40))]:
        m = HiddenStatesModel(ChainModel(), n_states_per_label=1)
        lat = LatentStructuredSVM(estimator=StructuredSVM(model=m, C=2.0, solver=solver,
                                                          random_state=1, **kw)).fit(X, y)
        ref = StructuredSVM(model=ChainModel(), C=2.0, solver=solver, random_state=1,
                            **kw).fit(X, y)
        assert lat.n_iter_ == 1
        np.testing.assert_allclose(lat.coef_, ref.coef_, rtol=1e-10, atol=1e-12)
        for a, b in zip(lat.predict(X), ref.predict(X)):
            np.testing.assert_array_equal(a, b)


def test_hidden_nodes_model_without_hidden_nodes_is_the_plain_graph_ssvm():
    X, y = hidden_nodes_data(seed=8)
    X0 = [(f, e[(e < len(f)).all(axis=1)], 0) for f, e, _ in X]
    lat = LatentStructuredSVM(estimator=StructuredSVM(
        model=HiddenNodesModel(n_hidden_states=2), C=2.0, solver="one_slack", tol=1e-8,
        max_iter=300)).fit(X0, y)
    ref = StructuredSVM(model=GraphModel(), C=2.0, solver="one_slack", tol=1e-8,
                        max_iter=300).fit([(f, e) for f, e, _ in X0], y)
    W, P = lat.unary_coef_, lat.pairwise_coef_
    np.testing.assert_allclose(W[:2], ref.unary_coef_, atol=1e-6)
    np.testing.assert_allclose(P[:, :2, :2], ref.pairwise_coef_, atol=1e-6)
    # the hidden states are never taken: their weights stay 0
    np.testing.assert_array_equal(W[2:], 0.0)
    np.testing.assert_array_equal(P[:, 2:], 0.0)
    np.testing.assert_array_equal(P[:, :, 2:], 0.0)


def test_hidden_states_with_unknown_labels():
    """None in y with hidden sub-states: an unknown node may take every state, the CRF
    marginalises them all and CCCP imputes them at no loss."""
    X, y = states_data(seed=10)
    yp = [np.array(lab, dtype=object) for lab in y]
    yp[0][1] = None
    yp[3][:] = None
    yp[4][[0, 4]] = None
    m = HiddenStatesModel(ChainModel(), n_states_per_label=[2, 1])
    design, _ = m.fit_design(X, yp)
    allowed, codes = allowed_states(m, design)
    np.testing.assert_array_equal(allowed[codes < 0], True)
    samples = st_samples(X)
    obj = CRFObjective(design, 1.0, allowed=allowed)
    w = np.random.default_rng(0).normal(size=obj.n_weights)
    value, grad = obj.value_grad(w)
    ref_v, ref_g = crf_brute(samples, split_flat(allowed, design),
                             [np.ones((n, 3), bool) for _, _, n in samples], 3, w, 1.0)
    assert value == pytest.approx(ref_v, rel=1e-10)
    np.testing.assert_allclose(grad, ref_g, atol=1e-9)
    C = 3.0
    lat = LatentStructuredSVM(estimator=StructuredSVM(model=m, C=C, solver="one_slack", tol=1e-8,
                                            max_iter=300), random_state=0).fit(X, yp)
    assert lat.history_["n_changed"][-1] == 0
    H = lat.latent(X, yp)
    assert_map(samples, lat.coef_, 3, H, split_flat(allowed, design))
    known = [np.array([v is not None for v in lab]) for lab in yp]
    want = ssvm_primal(lat.coef_, samples, H, [k.astype(float) for k in known],
                       lat.model_.state_label_, 3, C)
    assert lat.history_["primal"][-1] == pytest.approx(want, rel=1e-7)
    counted = ssvm_primal(lat.coef_, samples, H, [np.ones(len(k)) for k in known],
                          lat.model_.state_label_, 3, C)
    assert counted - want > 1e-3


@pytest.mark.parametrize("kind", ["states", "nodes"])
def test_predict_marginals_of_a_latent_model_are_label_marginals(kind):
    """The states of each label summed, hidden nodes left out, against enumeration."""
    if kind == "states":
        X, y, lat = _fit_states("bcfw", n_states=(2, 2))
        samples, base, visible = st_samples(X), None, [len(x) for x in X]
    else:
        X, y = hidden_nodes_data(seed=11)
        svm = StructuredSVM(model=HiddenNodesModel(n_hidden_states=2), C=3.0, max_iter=50)
        lat = LatentStructuredSVM(estimator=svm, random_state=0).fit(X, y)
        samples, base = hn_samples(X), visible_allowed(X, 2, 2)
        visible = [len(f) for f, _, _ in X]
    K = lat.model_.n_states_
    sl = lat.model_.state_label_
    marg = lat.predict_marginals(X)
    for i, ((f, e, n), mg, nv) in enumerate(zip(samples, marg, visible)):
        labs = labellings(n, K, None if base is None else base[i])
        s = np.array([phi(f, e, h, K) @ lat.coef_ for h in labs])
        p = np.exp(s - s.max())
        p /= p.sum()
        want = np.array([[p[sl[labs[:, v]] == c].sum() for c in range(2)] for v in range(nv)])
        np.testing.assert_allclose(mg, want, atol=1e-10)


def test_constraints_are_refused_with_a_latent_model():
    X, y, lat = _fit_states("bcfw")
    with pytest.raises(ValueError, match="not available with HiddenStatesModel"):
        lat.predict(X, clamp=[{0: "q"}] + [None] * (len(X) - 1))
    with pytest.raises(ValueError, match="not available with HiddenStatesModel"):
        lat.predict(X, forbidden=[("p", "q")])
    with pytest.raises(ValueError, match="not available with HiddenStatesModel"):
        lat.predict_kbest(X, 2)


# ---------------------------------------------------------------- refusals
@pytest.mark.parametrize("kw", [dict(surrogate="slack"), dict(surrogate="poslearn"),
                                dict(solver="extragradient")])
@pytest.mark.parametrize("model", ["states", "nodes"])
def test_latent_ssvm_refuses_solvers_that_do_not_read_the_label_loss(kw, model):
    if model == "states":
        X, y = states_data()
        m = HiddenStatesModel(ChainModel())
    else:
        X, y = hidden_nodes_data()
        m = HiddenNodesModel()
    with pytest.raises(TypeError, match="LatentStructuredSVM needs an estimator with"):
        LatentStructuredSVM(estimator=StructuredSVM(model=m, max_iter=3, **kw),
                            max_iter=2).fit(X, y)


@pytest.mark.parametrize("estimator, match", [
    (StructuredSVM(model=HiddenStatesModel(ChainModel()), warm_start=True), "warm_start"),
    (StructuredSVM(model=GraphModel(submodular=True)), "submodular"),
])
def test_latent_ssvm_refuses_bad_estimators(estimator, match):
    X, y = states_data()
    if isinstance(estimator.model, GraphModel):
        X = [(x, chain_edges(len(x))) for x in X]
    with pytest.raises(ValueError, match=match) as err:
        LatentStructuredSVM(estimator=estimator, max_iter=1).fit(X, y)
    assert isinstance(err.value, TypeError)       # a parameter error, as in scikit-learn


def test_initial_states_are_validated():
    X, y = states_data()
    svm = StructuredSVM(model=HiddenStatesModel(ChainModel(), n_states_per_label=[2, 1]),
                        max_iter=3)
    lat = LatentStructuredSVM(estimator=svm, max_iter=1)
    good = [np.where(lab == "p", 0, 2) for lab in y]
    lat.fit(X, y, initial_states=good)
    with pytest.raises(ValueError, match="holds 24 states for 25 nodes"):
        lat.fit(X, y, initial_states=[good[0][:-1]] + good[1:])
    with pytest.raises(ValueError, match=r"states must be in 0\.\.2"):
        lat.fit(X, y, initial_states=[good[0] + 3] + good[1:])
    bad = [g.copy() for g in good]
    v = int(np.flatnonzero(y[2] == "q")[0])
    bad[2][v] = 1           # a state of p at a node labelled q
    with pytest.raises(ValueError, match=f"sample 2, node {v}: state 1 is not consistent"):
        lat.fit(X, y, initial_states=bad)
    # hidden nodes: a label state at a hidden node
    Xh, yh = hidden_nodes_data()
    hl = LatentStructuredSVM(estimator=StructuredSVM(model=HiddenNodesModel(), max_iter=3),
                             max_iter=1)
    init = [np.r_[np.searchsorted(LABELS, lab), np.full(h, 2)] for lab, (_, _, h) in zip(yh, Xh)]
    hl.fit(Xh, yh, initial_states=init)
    init[0][-1] = 0
    with pytest.raises(ValueError, match="sample 0, node 4: state 0 is not consistent"):
        hl.fit(Xh, yh, initial_states=init)


# ------------------------------------------------------------- learnability
def _runs_of_two(n, rng):
    """Label 1 comes in runs of exactly two and only the first node of a run says so;
    one transition table over the labels cannot count to two, two sub-states can."""
    X, y = [], []
    for _ in range(n):
        lab = []
        while len(lab) < 10:
            lab += [0] * int(rng.integers(1, 4)) + [1, 1]
        lab = np.array(lab[:10])
        start = np.r_[lab[0] == 1, (lab[1:] == 1) & (lab[:-1] == 0)].astype(float)
        X.append(np.column_stack([start + 0.1 * rng.normal(size=10), np.ones(10)]))
        y.append(lab)
    return X, y


@pytest.mark.parametrize("seed", [0, 1])
def test_hidden_sub_states_learn_what_one_state_per_label_cannot(seed):
    rng = np.random.default_rng(seed)
    Xtr, ytr = _runs_of_two(20, rng)
    Xte, yte = _runs_of_two(30, rng)
    truth = np.concatenate(yte)

    def acc(est):
        return np.mean(np.concatenate(est.predict(Xte)) == truth)

    plain = StructuredSVM(model=ChainModel(), C=10.0, tol=1e-4, random_state=0).fit(Xtr, ytr)
    m = HiddenStatesModel(ChainModel(), n_states_per_label=[1, 2])
    lat = LatentStructuredSVM(estimator=StructuredSVM(model=m, C=10.0, tol=1e-4),
                              random_state=seed).fit(Xtr, ytr)
    crf = NonLocalCRF(model=m, C=10.0, random_state=seed).fit(Xtr, ytr)
    assert acc(plain) < 0.9
    assert acc(lat) > 0.98 and acc(crf) > 0.98


# ------------------------------------------------------------------- sklearn
def test_clone_params_and_grid_search():
    X, y = states_data(seed=9, lengths=(4,) * 8)
    est = LatentStructuredSVM(estimator=StructuredSVM(model=HiddenStatesModel(ChainModel()), C=1.0,
                                            max_iter=20), max_iter=3, random_state=0)
    params = est.get_params()
    assert params["estimator__C"] == 1.0 and params["estimator__model__n_states_per_label"] == 2
    c = clone(est)
    assert c is not est and c.estimator is not est.estimator
    assert c.get_params()["estimator__C"] == 1.0
    c.set_params(estimator__C=4.0, estimator__model__n_states_per_label=[1, 2], max_iter=2)
    assert c.estimator.C == 4.0 and c.estimator.model.n_states_per_label == [1, 2]
    assert est.estimator.C == 1.0
    c.fit(X, y)
    assert c.estimator_.C == 4.0 and c.model_.n_states_ == 3 and c.n_iter_ <= 2
    gs = GridSearchCV(est, {"estimator__C": [0.1, 10.0]}, cv=2).fit(X, y)
    assert np.all(np.isfinite(gs.cv_results_["mean_test_score"]))
    assert gs.best_estimator_.estimator_.C == gs.best_params_["estimator__C"]
    assert gs.best_estimator_.model_.n_states_ == 4
    assert [len(p) for p in gs.predict(X)] == [len(x) for x in X]
    assert not hasattr(est, "coef_")


# ------------------------------------------------------------ the protocol
def test_latent_models_joint_feature_is_that_of_the_states():
    X, y = states_data()
    m = HiddenStatesModel(ChainModel(), n_states_per_label=[2, 1]).fit(X, y)
    rng = np.random.default_rng(0)
    for x in X[:3]:
        h = rng.integers(0, 3, len(x))
        np.testing.assert_allclose(m.joint_feature(x, h), phi(x, chain_edges(len(x)), h, 3))
    assert m.size_joint_feature == len(m.joint_feature(X[0], np.zeros(5, int)))
    Xh, yh = hidden_nodes_data()
    hm = HiddenNodesModel(n_hidden_states=2).fit(Xh, yh)
    for f, e, nh in Xh[:3]:
        h = np.r_[rng.integers(0, 2, len(f)), rng.integers(2, 4, nh)]
        np.testing.assert_allclose(hm.joint_feature((f, e, nh), h), phi(f, e, h, 4))


@pytest.mark.parametrize("method", ["inference", "loss_augmented_inference"])
def test_latent_model_protocol_methods(method):
    X, y = states_data()
    m = HiddenStatesModel(ChainModel(), n_states_per_label=[2, 1]).fit(X, y)
    w = np.random.default_rng(0).normal(size=m.size_joint_feature)
    if method == "inference":
        pred = m.inference(X[0], w)
        assert_map_labels(st_samples(X[:1]), w, 3, [np.searchsorted(m.classes_, pred)],
                          m.state_label_)
    else:
        pred = m.loss_augmented_inference(X[0], y[0], w)
        assert len(pred) == len(X[0])


@pytest.mark.parametrize("solver", ["one_slack", "bcfw"])
def test_warm_steps_reach_the_cold_steps_optimum(solver):
    """Two CCCP iterations from the same initial states: the first steps are the same
    problem, so are the second ones (the same imputed states); started warm or cold,
    each certified to a tight gap, the second step's optimum is the same."""
    X, y = states_data(seed=6)
    rng = np.random.default_rng(0)
    codes = [np.searchsorted(LABELS, lab) for lab in y]
    H0 = [np.where(c == 0, rng.integers(0, 2, len(c)), 2) for c in codes]
    opts = dict(one_slack=dict(tol=1e-9, max_iter=500), bcfw=dict(tol=1e-8, max_iter=3000))
    fits = []
    for warm in (False, True):
        svm = StructuredSVM(model=HiddenStatesModel(ChainModel(), n_states_per_label=[2, 1]),
                            C=3.0, solver=solver, random_state=0, **opts[solver])
        fits.append(LatentStructuredSVM(estimator=svm, max_iter=2, warm_steps=warm).fit(
            X, y, initial_states=H0))
    cold, warm = fits
    assert cold.history_["n_changed"][0] > 0
    np.testing.assert_allclose(warm.history_["primal"], cold.history_["primal"], rtol=1e-4)
    np.testing.assert_allclose(warm.coef_, cold.coef_, atol=1e-2)


def test_bcfw_relabel_carries_a_valid_dual():
    """The blocks moved to the new truth still sum to the weights, and their dual
    value bounds the new problem's primal from below."""
    from skstruct.models._kernels import expand_coef
    from skstruct.solvers._bcfw import BCFW

    X, y = states_data(seed=6)
    model = HiddenStatesModel(GraphModel(), n_states_per_label=[2, 1]).fit(
        [(x, chain_edges(len(x))) for x in X], y)
    Xg = [(x, chain_edges(len(x))) for x in X]
    design, _ = model.design(Xg, y)
    N = design.batch.n_nodes
    lw = np.ones(N)
    old = BCFW(design, lw, lam=0.05, surrogate="margin", averaging=False, inference_iter=10)
    rng = np.random.default_rng(1)
    for _ in range(20):
        old.run_pass(rng.integers(0, old.n_samples, old.n_samples))
    y_old = design.y.copy()
    y_new = y_old.copy()
    flip = np.flatnonzero(y_old < 2)[::2]
    y_new[flip] = 1 - y_new[flip]
    design.y = y_new
    new = BCFW(design, lw, lam=0.05, surrogate="margin", averaging=False, inference_iter=10)
    new.relabel(old, y_old)
    D = new.D
    np.testing.assert_allclose(
        new.W, expand_coef(D.xdata, D.xind, D.xptr, D.xrow, D.xoff, new.A, new.W.shape[0]),
        atol=1e-12)
    np.testing.assert_allclose(new.P, new.Pi.sum(axis=0), atol=1e-12)
    primal, dual, _ = new.objective()
    assert dual <= primal + 1e-12
    # and the solver goes on from there to the new problem's optimum
    cold = BCFW(design, lw, lam=0.05, surrogate="margin", averaging=False, inference_iter=10)
    for s in (new, cold):
        for _ in range(400):
            s.run_pass(rng.integers(0, s.n_samples, s.n_samples))
    # both primal values lie within their certified gaps above the same optimum
    p_new, d_new, _ = new.objective()
    p_cold, d_cold, _ = cold.objective()
    assert max(d_new, d_cold) <= min(p_new, p_cold) + 1e-12
    assert p_new - d_cold < 0.05 * p_cold


@pytest.mark.parametrize("inference, expected", [("auto", True), ("trws", False)])
def test_auto_warm_steps_follow_the_exactness_of_inference(inference, expected):
    """``warm_steps="auto"`` warm-starts when every sample is decoded exactly (chains here)
    and starts each step from zero under TRW-S; ``history_`` counts each step's passes."""
    X, y = states_data(seed=6)
    Xg = [(x, chain_edges(len(x))) for x in X]
    model = HiddenStatesModel(GraphModel(inference_method=inference), n_states_per_label=[2, 1])
    svm = StructuredSVM(model=model, C=3.0, solver="one_slack", tol=1e-6, max_iter=200,
                        random_state=0)
    est = LatentStructuredSVM(estimator=svm, max_iter=3, random_state=0).fit(Xg, y)
    assert est.warm_steps_ is expected
    assert est.history_["n_passes"].shape == (est.n_iter_,)
    assert np.all(est.history_["n_passes"] >= 1)
    forced = LatentStructuredSVM(estimator=svm, max_iter=3, random_state=0, warm_steps=not expected)
    assert forced.fit(Xg, y).warm_steps_ is (not expected)
