"""NonLocalCRF: the CRF against brute force and another solver, the energy learners,
and sklearn citizenship."""

import itertools
import pickle
import warnings

import numpy as np
import pytest
from sklearn.base import clone
from sklearn.feature_extraction import DictVectorizer
from sklearn.model_selection import GridSearchCV, cross_val_score
from sklearn.pipeline import Pipeline
from sklearn.utils.estimator_checks import (
    check_do_not_raise_errors_in_init_or_set_params,
    check_get_params_invariance,
    check_no_attributes_set_in_init,
    check_parameters_default_constructible,
    check_set_params,
)

from skstruct import ApproxStructuredPredictor, NonLocalCRF
from skstruct.energies import LinearMeasurements, NearestStatistic
from skstruct.inference import map_batch, marginals_batch
from skstruct.models import ChainModel, GraphModel
from skstruct.preprocessing import NodeTransformer
from skstruct.solvers._crf import CRFObjective
from skstruct.solvers._energy import Surrogate


def chains(seed=0, n=10, F=3, K=3, max_len=5):
    rng = np.random.default_rng(seed)
    X = [rng.normal(size=(int(rng.integers(1, max_len + 1)), F)) for _ in range(n)]
    y = [rng.integers(0, K, len(x)) for x in X]
    for k in range(K):
        y[k][0] = k
    return X, y


def dictionary_words(seed=0, n=120, noise=1.2):
    """Noisy letters of a few dictionary words: the setting of L^w."""
    rng = np.random.default_rng(seed)
    words = [np.array(w) for w in ([0, 1, 2, 3], [3, 2, 1, 0], [1, 1, 2, 2], [0, 3, 0],
                                   [2, 0, 1])]
    K, F = 4, 6
    centres = rng.normal(size=(K, F))
    X, y = [], []
    for _ in range(n):
        w = words[rng.integers(len(words))]
        X.append(centres[w] + noise * rng.normal(size=(len(w), F)))
        y.append(w.copy())
    return X, y


def test_crf_objective_against_brute_force():
    X, y = chains(1, n=5, max_len=4)
    model = ChainModel().fit(X, y)
    design, _ = model.design(X, y)
    obj = CRFObjective(design, C=0.7, sample_weight=np.arange(1, 6) / 3.0)
    rng = np.random.default_rng(0)
    w = 0.4 * rng.normal(size=3 * 3 + 9)
    f, g = obj.value_grad(w)
    W, P = obj.split(w)
    ref = 0.5 * w @ w
    def sc(x, lab):
        return sum(x[t] @ W[:, lab[t]] for t in range(len(x))) + sum(
            P[0, lab[t], lab[t + 1]] for t in range(len(x) - 1))

    for i, (x, yy) in enumerate(zip(X, y)):
        labs = itertools.product(range(3), repeat=len(x))
        logz = np.logaddexp.reduce([sc(x, lab) for lab in labs])
        ref += 0.7 * (i + 1) / 3.0 * (logz - sc(x, yy))
    assert np.isclose(f, ref)
    eps = 1e-6
    fd = np.array([(obj.value_grad(w + eps * e)[0] - obj.value_grad(w - eps * e)[0]) / (2 * eps)
                   for e in np.eye(w.size)])
    assert np.allclose(g, fd, atol=1e-5)


def test_plain_crf_matches_approx_predictor_at_temperature_one():
    # Hazan & Urtasun's program at epsilon = 1, p = 2, no loss is the same CRF
    # objective on chains: two different solvers, one optimum
    X, y = chains(2)
    crf = NonLocalCRF(C=2.0, max_iter=500, tol=1e-12).fit(X, y)
    ref = ApproxStructuredPredictor(epsilon=1.0, C=2.0, loss=None, max_iter=500,
                                    tol=1e-13).fit(X, y)
    assert np.allclose(crf.coef_, ref.coef_, atol=2e-4)
    assert np.array_equal(np.concatenate(crf.predict(X)), np.concatenate(ref.predict(X)))


def test_sgd_approaches_the_lbfgs_optimum():
    X, y = chains(3, n=40)
    full = NonLocalCRF(C=1.0, max_iter=300, tol=1e-12).fit(X, y)
    sgd = NonLocalCRF(C=1.0, solver="sgd", max_iter=60, batch_size=8, learning_rate=0.3,
                      random_state=0).fit(X, y)
    f_opt = full.history_["objective"][-1]
    assert sgd.history_["objective"][-1] <= 1.02 * f_opt
    assert sgd.history_["objective"][-1] >= f_opt - 1e-6


def test_trees_and_the_cycle_error():
    rng = np.random.default_rng(4)
    tree = np.array([[0, 1], [1, 2], [1, 3]])
    X = [(rng.normal(size=(4, 2)), tree) for _ in range(6)]
    y = [rng.integers(0, 2, 4) for _ in range(6)]
    crf = NonLocalCRF(max_iter=50).fit(X, y)
    marg = crf.predict_marginals(X)
    assert all(np.allclose(m.sum(1), 1.0) for m in marg)
    cyc = X[:2] + [(rng.normal(size=(3, 2)), np.array([[0, 1], [1, 2], [2, 0]]))]
    with pytest.raises(ValueError, match="sample 2 has a cycle"):
        NonLocalCRF().fit(cyc, y[:2] + [np.zeros(3, int)])
    assert isinstance(crf.model_, GraphModel)


@pytest.mark.parametrize("learning", ["stochastic", "alternating"])
def test_nearest_word_energy_corrects_the_chain(learning):
    Xtr, ytr = dictionary_words(0, n=150)
    Xte, yte = dictionary_words(1, n=150)
    base = NonLocalCRF(C=0.1).fit(Xtr, ytr)
    est = NonLocalCRF(C=0.1, energy=NearestStatistic("marginals"), learning=learning,
                      energy_max_iter=3, batch_size=16, random_state=0).fit(Xtr, ytr)
    assert est.psi_coef_.shape == (1, 1) and est.psi_coef_[0, 0] > 0
    assert est.score(Xte, yte) > base.score(Xte, yte) + 0.02
    # Proposition 1: predict is MAP in the CRF at the projection's potentials
    design, _ = est.model_.design(Xte)
    design.y = np.zeros(design.batch.n_nodes, np.int64)
    sc = est._scores(Xte)
    u, t, i = sc.unary, sc.tables, sc.pw_index
    lab = map_batch(design.batch, u, t, i)
    assert np.array_equal(est.classes_[lab], np.concatenate(est.predict(Xte)))
    marg = est.predict_marginals(Xte)
    assert all(np.allclose(m.sum(1), 1.0) and np.all(m >= 0) for m in marg)


def test_pieces_give_global_projections_in_the_estimator():
    Xtr, ytr = dictionary_words(4, n=80, noise=1.6)
    est = NonLocalCRF(C=0.1, energy=NearestStatistic("unigram"), psi_init=3.0,
                      energy_max_iter=0, max_oracle_calls=300, inference_tol=0.0,
                      random_state=0).fit(Xtr, ytr)
    assert est._n_pieces() == 10
    design, _ = est._design(Xtr, ytr)
    obj = CRFObjective(design, est.C)
    W, P = est._weights()
    psi = np.full((len(Xtr), 1), 3.0)
    glob = est.set_params(n_pieces="all")._project(obj, W, P, psi)
    local = est.set_params(n_pieces=None)._project(obj, W, P, psi)
    # the global minimum is never above the local one (up to RDA's convergence on kinks),
    # and below it where the paper's algorithm stops in a local minimum
    assert np.all(glob.objective <= local.objective + 1e-3)
    assert np.any(glob.objective < local.objective - 0.1)
    # prediction goes through the same projection
    est.set_params(n_pieces="all")
    u = est._scores(Xtr).unary
    assert np.allclose(u, glob.unary)
    # a convex energy has no pieces: "auto" is None
    lin = NonLocalCRF(energy=LinearMeasurements(np.ones((1, 4))))
    assert lin._n_pieces() is None


def test_mean_map_psi_and_fit_theta():
    Xtr, ytr = dictionary_words(2, n=100)
    est = NonLocalCRF(C=0.1, energy=NearestStatistic("unigram"), psi="mean_map",
                      n_components=20, energy_max_iter=2, fit_theta=True, batch_size=20,
                      random_state=0).fit(Xtr, ytr)
    assert est.psi_coef_.shape == (1, 21)
    assert est.mean_map_.n_components == 20
    base = NonLocalCRF(C=0.1).fit(Xtr, ytr)
    assert not np.allclose(est.coef_, base.coef_)     # theta moved
    assert np.all(np.isfinite(est.coef_))
    # the same random_state gives the same model
    again = clone(est).fit(Xtr, ytr)
    assert np.array_equal(again.psi_coef_, est.psi_coef_)


def test_surrogate_gradient_against_finite_differences():
    Xtr, ytr = dictionary_words(3, n=12)
    est = NonLocalCRF(C=0.5, energy=NearestStatistic("marginals"), psi="mean_map",
                      n_components=4, energy_max_iter=1, learning="alternating",
                      fit_theta=True, random_state=0).fit(Xtr, ytr)
    design, _ = est._design(Xtr, ytr)
    obj = CRFObjective(design, est.C)
    W, P = est._weights()
    Phi = est._psi_features(Xtr, design, fitting=False)
    proj = est._project(obj, W, P, est._psi(est.psi_coef_, Phi))
    sur = Surrogate(obj, est.energy_, proj, Phi, C=est.C, C_energy=0.3, fit_theta=est.fit_theta,
                    w=est.coef_)
    rng = np.random.default_rng(0)
    x = sur.pack(np.abs(rng.normal(size=est.psi_coef_.shape)) + 0.5, est.coef_)
    f, g = sur.value_grad(x)
    eps = 1e-6
    for k in list(range(5)) + list(rng.choice(x.size, 8, replace=False)):
        e = np.zeros_like(x)
        e[k] = eps
        fd = (sur.value_grad(x + e)[0] - sur.value_grad(x - e)[0]) / (2 * eps)
        assert np.isclose(g[k], fd, rtol=1e-4, atol=1e-5)


def test_linear_measurements_through_the_estimator():
    # a soft constraint "at least one label 0 per sequence"
    X, y = chains(5, n=30)
    en = LinearMeasurements(A=[[1.0, 0.0, 0.0]], A_edge=np.zeros((1, 3, 3)))
    est = NonLocalCRF(energy=en, energy_max_iter=2, batch_size=10, random_state=0).fit(X, y)
    marg = est.predict_marginals(X)
    base = NonLocalCRF().fit(X, y).predict_marginals(X)
    # the constraint's energy pushes the expected count of label 0 up
    assert sum(m[:, 0].sum() for m in marg) >= sum(m[:, 0].sum() for m in base) - 1e-9


def test_subset_design_equals_a_fresh_design():
    X, y = chains(6, n=9)
    model = ChainModel(bias=True).fit(X, y)
    design, _ = model.design(X, y)
    idx = np.array([1, 4, 5, 8])
    sub = design.take(idx)
    fresh, _ = model.design([X[i] for i in idx], [y[i] for i in idx])
    rng = np.random.default_rng(0)
    a, b = CRFObjective(sub, 1.0), CRFObjective(fresh, 1.0)
    w = rng.normal(size=a.W_shape[0] * a.W_shape[1] + 9)
    fa, ga = a.value_grad(w)
    fb, gb = b.value_grad(w)
    assert np.isclose(fa, fb) and np.allclose(ga, gb)


def test_sklearn_citizenship():
    X, y = chains(7, n=24)
    est = NonLocalCRF(C=0.5, max_iter=30)
    for check in (check_no_attributes_set_in_init, check_get_params_invariance,
                  check_set_params, check_do_not_raise_errors_in_init_or_set_params,
                  check_parameters_default_constructible):
        check("NonLocalCRF", est)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        search = GridSearchCV(est, {"C": [0.1, 1.0]}, cv=3).fit(X, y)
        scores = cross_val_score(NonLocalCRF(energy=NearestStatistic(), energy_max_iter=1),
                                 X, y, cv=3)
    assert np.all(np.isfinite(search.cv_results_["mean_test_score"]))
    assert np.all(np.isfinite(scores))
    fitted = NonLocalCRF(energy=NearestStatistic(), energy_max_iter=1).fit(X, y)
    again = pickle.loads(pickle.dumps(fitted))
    assert all(np.array_equal(a, b) for a, b in zip(again.predict(X), fitted.predict(X)))
    assert est.get_params()["C"] == 0.5 and not hasattr(est, "coef_")


def test_pipeline_with_sparse_dict_features():
    rng = np.random.default_rng(8)
    words = ["the", "cat", "sat", "on", "mat", "a", "dog"]
    tags = {"the": "D", "a": "D", "cat": "N", "mat": "N", "dog": "N", "sat": "V", "on": "P"}
    X, y = [], []
    for _ in range(30):
        sent = list(rng.choice(words, size=int(rng.integers(2, 7))))
        X.append([{"w": w, "suffix": w[-2:], "upper": w.isupper()} for w in sent])
        y.append(np.array([tags[w] for w in sent]))
    pipe = Pipeline([("vec", NodeTransformer(DictVectorizer())),
                     ("crf", NonLocalCRF(C=10.0))]).fit(X, y)
    assert pipe.score(X, y) == 1.0
    assert pipe.predict(X)[0].dtype.kind == "U"
    # a mean-map psi on sparse features, gamma="scale" as sklearn's SVC computes it
    nl = Pipeline([("vec", NodeTransformer(DictVectorizer())),
                   ("crf", NonLocalCRF(C=10.0, energy=NearestStatistic(), psi="mean_map",
                                       n_components=8, energy_max_iter=1,
                                       random_state=0))]).fit(X, y)
    Xv = nl[0].transform(X)
    Z = np.vstack([x.toarray() for x in Xv])
    assert np.isclose(nl[-1].mean_map_.gamma, 1.0 / (Z.shape[1] * Z.var()))
    assert nl.score(X, y) == 1.0


@pytest.mark.parametrize("params, match", [
    (dict(C=0), "C must be"), (dict(solver="newton"), "solver"), (dict(psi="rbf"), "psi"),
    (dict(inference_method="bp"), "inference_method"), (dict(learning="em"), "learning"),
    (dict(energy="words"), "energy must be"), (dict(max_oracle_calls=0), "max_oracle_calls"),
    (dict(batch_size=0), "batch_size"), (dict(gamma=-1.0), "gamma"),
    (dict(psi_init=np.nan), "psi_init"), (dict(fit_theta="yes"), "fit_theta"),
    (dict(n_pieces=0), "n_pieces"), (dict(n_pieces="some"), "n_pieces"),
    (dict(energy=LinearMeasurements(np.ones((1, 3))), n_pieces=3), "minimum of convex pieces"),
    (dict(energy=NearestStatistic(), inference_method="accelerated", n_pieces=3),
     "rda' or 'md'"),
])
def test_bad_parameters(params, match):
    X, y = chains(9, n=6)
    with pytest.raises(ValueError, match=match):
        NonLocalCRF(**params).fit(X, y)


def test_bad_inputs_name_the_sample():
    X, y = chains(10, n=6)
    bad = list(X)
    bad[3] = bad[3].copy()
    bad[3][0, 0] = np.nan
    with pytest.raises(ValueError, match="sample 3"):
        NonLocalCRF().fit(bad, y)
    est = NonLocalCRF(max_iter=5).fit(X, y)
    with pytest.raises(ValueError, match="sample 0 has 2 node features"):
        est.predict([np.zeros((2, 2))])


def test_marginals_without_energy_are_the_crf_marginals():
    X, y = chains(11, n=8)
    est = NonLocalCRF(max_iter=50).fit(X, y)
    design, _ = est.model_.design(X)
    design.y = np.zeros(design.batch.n_nodes, np.int64)
    obj = CRFObjective(design, 1.0)
    u, t, i = obj.potentials(*est._weights())
    node = marginals_batch(design.batch, u, t, i)[0]
    assert np.allclose(np.concatenate(est.predict_marginals(X)), node)


@pytest.mark.parametrize("pairs", ["all", "seen"])
def test_chain_predict_is_the_map_of_the_crf_potentials(pairs):
    """Without an energy, chains are decoded by the linear model's fused Viterbi: the
    labels must be the MAP of the CRF's own potentials (brute force on short chains)."""
    X, y = sparse_chains(5, n=30)
    est = NonLocalCRF(max_iter=40, feature_pairs=pairs, C=10.0).fit(X, y)
    design, _ = est.model_.design(X)
    design.y = np.zeros(design.batch.n_nodes, np.int64)
    u, t, i = CRFObjective(design, 1.0).potentials(*est._weights())
    pred = est.predict(X)
    off = design.batch.node_offsets
    for s, p in enumerate(pred):
        U, T = u[off[s]:off[s + 1]], t[0]
        best = max(itertools.product(range(U.shape[1]), repeat=U.shape[0]),
                   key=lambda lab: U[np.arange(len(lab)), lab].sum()
                   + sum(T[a, b] for a, b in zip(lab[:-1], lab[1:])))
        assert np.array_equal(np.searchsorted(est.classes_, p), best), s


# ------------------------------------------------- feature_pairs="seen" and memory

def sparse_chains(seed=0, n=25, F=8, K=3, max_len=6):
    """Chains of sparse features, each on about a third of the nodes, never feature
    ``f`` on a node of class ``k`` with ``(f + k) % 3 == 0`` (unseen pairs), some
    stored as explicit zeros (as DictVectorizer stores a False boolean)."""
    import scipy.sparse as sp

    rng = np.random.default_rng(seed)
    X, y = [], []
    for i in range(n):
        T = int(rng.integers(1, max_len + 1))
        lab = rng.integers(0, K, T)
        if i < K:
            lab[0] = i
        allowed = (np.arange(F)[None, :] + lab[:, None]) % 3 != 0
        dense = rng.normal(size=(T, F)) * (rng.random((T, F)) < 0.5) * allowed
        x = sp.csr_matrix(dense)
        if x.nnz:
            x.data[rng.random(x.nnz) < 0.2] = 0.0      # explicit zeros, kept stored
        X.append(x)
        y.append(lab)
    return X, y


def seen_mask(X, y, classes):
    """(K, F) True where feature f is non-zero on some node of class k."""
    mask = np.zeros((len(classes), X[0].shape[1]), bool)
    for x, yy in zip(X, y):
        d = x.toarray() != 0
        for t, lab in enumerate(yy):
            mask[np.searchsorted(classes, lab)] |= d[t]
    return mask


def test_seen_pairs_equal_all_when_every_pair_is_seen():
    X, y = chains(12, n=30)        # dense features: every feature on every node
    full = NonLocalCRF(C=1.0, max_iter=200, tol=1e-12).fit(X, y)
    seen = NonLocalCRF(C=1.0, max_iter=200, tol=1e-12, feature_pairs="seen").fit(X, y)
    assert np.allclose(seen.coef_, full.coef_, atol=1e-6)
    assert seen.unary_coef_.shape == full.unary_coef_.shape
    assert np.array_equal(np.concatenate(seen.predict(X)), np.concatenate(full.predict(X)))


@pytest.mark.parametrize("solver", ["lbfgs", "sgd"])
def test_unseen_pairs_keep_weight_exactly_zero(solver):
    X, y = sparse_chains(13)
    est = NonLocalCRF(C=5.0, max_iter=60, solver=solver, feature_pairs="seen", batch_size=5,
                      random_state=0).fit(X, y)
    mask = seen_mask(X, y, est.classes_)
    assert not mask.all() and mask.any()
    assert np.all(est.unary_coef_[~mask] == 0.0)
    assert np.all(est.unary_coef_[mask] != 0.0)
    full = NonLocalCRF(C=5.0, max_iter=60, solver=solver, batch_size=5,
                       random_state=0).fit(X, y)
    assert np.any(full.unary_coef_[~mask] != 0.0)     # "all" learns the unseen pairs
    assert est.coef_.shape == full.coef_.shape


@pytest.mark.parametrize("weighted", [False, True])
def test_seen_objective_is_the_full_one_with_unseen_weights_at_zero(weighted):
    from skstruct.solvers._crf import seen_pairs

    X, y = sparse_chains(14, n=12)
    model = ChainModel().fit(X, y)
    design, _ = model.design(X, y)
    sw = np.linspace(0.5, 2.0, len(X)) if weighted else None   # weighted: not fused
    pairs = seen_pairs(design)
    obj = CRFObjective(design, C=0.8, sample_weight=sw, pairs=pairs)
    full = CRFObjective(design, C=0.8, sample_weight=sw)
    assert obj.fused == (not weighted)
    mask = seen_mask(X, y, model.classes_).T          # (F, K) as W
    assert obj.n_node_weights == mask.sum()
    rng = np.random.default_rng(1)
    w = 0.5 * rng.normal(size=obj.n_weights)
    W, P = obj.split(w)
    assert np.all(W[~mask] == 0.0)
    f, g = obj.value_grad(w)
    wf = np.concatenate([W.ravel(), P.ravel()])
    ff, gf = full.value_grad(wf)
    assert np.isclose(f, ff)
    gW, gP = full.split(gf)
    assert np.allclose(g[:obj.n_node_weights], gW[mask])
    assert np.allclose(g[obj.n_node_weights:], gP.ravel())
    eps = 1e-6
    fd = np.array([(obj.value_grad(w + eps * e)[0] - obj.value_grad(w - eps * e)[0]) / (2 * eps)
                   for e in np.eye(w.size)])
    assert np.allclose(g, fd, atol=1e-5)


def test_fused_pass_matches_the_marginal_path_in_both_layouts():
    from skstruct.solvers._crf import seen_pairs

    X, y = sparse_chains(15, n=20, max_len=9)
    model = ChainModel().fit(X, y)
    design, _ = model.design(X, y)
    rng = np.random.default_rng(2)
    for pairs in (None, seen_pairs(design)):
        obj = CRFObjective(design, C=1.3, pairs=pairs)
        assert obj.fused
        w = rng.normal(size=obj.n_weights)
        for scale in (1.0, 400.0):     # 400: the scaled pass hands chains to log space
            f, g = obj.value_grad(scale * w)
            f2, g2, _ = obj.value_grad_marginals(scale * w)
            assert np.isclose(f, f2, rtol=1e-10)
            assert np.allclose(g, g2, rtol=1e-8, atol=1e-8 * scale)


def test_feature_pairs_parameter_checks():
    X, y = chains(16, n=6)
    with pytest.raises(ValueError, match="feature_pairs"):
        NonLocalCRF(feature_pairs="some").fit(X, y)
    with pytest.raises(ValueError, match="fit_theta"):
        NonLocalCRF(feature_pairs="seen", energy=NearestStatistic(), fit_theta=True).fit(X, y)
    # with a fixed theta the energy learns on top of the seen-pairs CRF
    est = NonLocalCRF(feature_pairs="seen", energy=NearestStatistic(), energy_max_iter=1,
                      max_iter=20, random_state=0).fit(X, y)
    assert np.all(np.isfinite(est.psi_coef_))


def test_lbfgs_minimises_a_quadratic():
    from skstruct.solvers._lbfgs import lbfgs

    rng = np.random.default_rng(3)
    A = rng.normal(size=(30, 30))
    H = A @ A.T + np.eye(30)
    b = rng.normal(size=30)
    x0 = np.zeros(30)
    x, n_iter = lbfgs(lambda x: (0.5 * x @ H @ x - b @ x, H @ x - b), x0, 500, 0.0)
    assert np.allclose(x, np.linalg.solve(H, b), atol=1e-6)
    assert np.all(x0 == 0.0) and 0 < n_iter <= 500   # x0 untouched without overwrite_x0


def test_dict_features_are_vectorised_as_sklearn_does_and_packed_without_copies():
    import scipy.sparse as sp

    from skstruct._core._packing import pack_X

    rng = np.random.default_rng(17)
    words = ["The", "cat", "SAT", "on", "7", "mat"]
    X = [[{"w": str(rng.choice(words)), "n": float(rng.normal()), "up": bool(rng.random() < .5),
           "i": int(rng.integers(3)), 3: "x"} for _ in range(int(rng.integers(0, 5)))]
         for _ in range(15)]
    X[0] = [{"w": "a"}]
    nt = NodeTransformer(DictVectorizer())
    parts = nt.fit_transform(X)
    ref = DictVectorizer().fit([f for s in X for f in s])
    assert nt.transformer_.feature_names_ == ref.feature_names_
    assert nt.transformer_.vocabulary_ == ref.vocabulary_
    stacked = ref.transform([f for s in X for f in s])
    mine = sp.vstack(parts)
    assert mine.shape == stacked.shape and abs(mine - stacked).max() == 0
    assert mine.nnz == stacked.count_nonzero() < stacked.nnz   # explicit zeros dropped
    assert all(p.shape[0] == len(s) for p, s in zip(parts, X))
    # the blocks are views of one matrix, and so is the packed batch
    packed = pack_X(parts)
    assert np.shares_memory(packed.features.data, parts[0].data)
    assert abs(packed.features - stacked).max() == 0
    # transform of new dicts (unknown features dropped), and the fallback to sklearn
    new = [[{"w": "dog", "n": 1.0}], [{"w": "cat", "zz": 2.0}]]
    assert abs(sp.vstack(nt.transform(new)) - ref.transform([f for s in new for f in s])
               ).max() == 0
    odd = [[{"w": ["a", "b"]}], [{"w": ["c"]}]]          # iterables: sklearn's own path
    assert sp.vstack(NodeTransformer(DictVectorizer()).fit_transform(odd)).shape == (2, 3)


# ------------------------------------------------ constraints written by label name

def labelled_chains(seed=0, n=30, names=("B-NP", "I-NP", "O")):
    X, y = chains(seed, n=n, K=len(names))
    return X, [np.asarray(names, dtype=object)[yy].astype(str) for yy in y]


def test_named_rows_equal_the_positional_ones():
    X, y = labelled_chains(20)
    # classes_ sort the labels: B-NP, I-NP, O
    named = LinearMeasurements([{"B-NP": -1.0}, {"O": 1.0, "B-NP": -0.5}], b=[2.0, 1.0],
                               A_edge=[{("B-NP", "I-NP"): 1.0}, np.zeros((3, 3))])
    A = np.array([[-1.0, 0.0, 0.0], [-0.5, 0.0, 1.0]])
    Ae = np.zeros((2, 3, 3))
    Ae[0, 0, 1] = 1.0
    positional = LinearMeasurements(A, b=[2.0, 1.0], A_edge=Ae)
    kw = dict(energy_max_iter=2, batch_size=10, random_state=0, max_iter=30)
    a = NonLocalCRF(energy=named, **kw).fit(X, y)
    b = NonLocalCRF(energy=positional, **kw).fit(X, y)
    assert list(a.classes_) == ["B-NP", "I-NP", "O"]
    assert np.array_equal(a.energy_.A_, A) and np.array_equal(a.energy_.A_edge_, Ae)
    assert np.array_equal(a.psi_coef_, b.psi_coef_)
    assert all(np.array_equal(p, q) for p, q in zip(a.predict(X), b.predict(X)))
    # the parameter is left as written
    assert named.A == [{"B-NP": -1.0}, {"O": 1.0, "B-NP": -0.5}]


def test_integer_labels_are_names_not_positions():
    X, y = chains(21, n=20)
    y = [np.array([3, 7, 9])[yy] for yy in y]
    est = NonLocalCRF(energy=LinearMeasurements([{7: 1.0}, [0.0, 0.0, 2.0]]), energy_max_iter=1,
                      max_iter=10, random_state=0).fit(X, y)
    assert np.array_equal(est.energy_.A_, [[0.0, 1.0, 0.0], [0.0, 0.0, 2.0]])
    with pytest.raises(ValueError, match=r"A\[0\] names the label 1, which is not one of the 3 "
                                         r"classes of the training labels \(3, 7, 9\)"):
        NonLocalCRF(energy=LinearMeasurements([{1: 1.0}])).fit(X, y)


@pytest.mark.parametrize("energy, match", [
    (LinearMeasurements([{"B-VP": 1.0}]), r"A\[0\] names the label 'B-VP', which is not one"),
    (LinearMeasurements([[1.0, 0.0, 0.0], {"I-NP": 1.0, "X": 2.0}]), r"A\[1\] names .*'X'"),
    (LinearMeasurements([{"O": 1.0}], A_edge=[{("O", "B-PP"): 1.0}]),
     r"A_edge\[0\] names the label 'B-PP'"),
    (LinearMeasurements([{"O": 1.0}], A_edge=[{"O": 1.0}]), r"\(label, next label\) pairs"),
    (LinearMeasurements({"O": 1.0}), "list of rows, one per term"),
    (LinearMeasurements([{"O": 1.0}, [1.0, 2.0]]), r"A\[1\] must be a mapping .* shape \(3,\)"),
    (LinearMeasurements([{"O": np.nan}]), r"A\[0\]\['O'\] must be one finite number"),
    (LinearMeasurements([{"O": "1"}]), r"A\[0\]\['O'\] must hold real numbers"),
])
def test_bad_named_constraints_are_refused_naming_them(energy, match):
    X, y = labelled_chains(22, n=8)
    with pytest.raises((ValueError, TypeError), match=match):
        NonLocalCRF(energy=energy, max_iter=3).fit(X, y)


def test_named_rows_need_the_classes_outside_the_estimator():
    from skstruct.inference import GraphBatch

    batch = GraphBatch.from_chains([2])
    en = LinearMeasurements([{"O": 1.0}])
    with pytest.raises(ValueError, match="needs the classes"):
        en.fit(None, batch, 3)
    en.fit(None, batch, 3, classes=np.array(["B-NP", "I-NP", "O"]))
    assert np.array_equal(en.A_, [[0.0, 0.0, 1.0]]) and en.n_terms == 1


def test_a_user_energy_without_a_classes_argument_still_fits():
    from skstruct.energies import Energy

    class Plain(Energy):
        def fit(self, y, batch, n_classes):
            self.n_classes_ = int(n_classes)
            return self

        def _terms(self, node, edge, batch):
            return np.zeros((batch.n_samples, 1))

        def _grad(self, node, edge, batch, psi):
            return np.zeros_like(node), None

    X, y = labelled_chains(23, n=8)
    est = NonLocalCRF(energy=Plain(), energy_max_iter=1, max_iter=3, random_state=0).fit(X, y)
    assert est.energy_.n_classes_ == 3
