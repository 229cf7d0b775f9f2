"""skstruct.compat.pystruct's models, inference and utilities.

The joint features are checked against scores written out from the documented
weight layouts, the inference methods against enumeration where they are exact,
the relaxed solutions against the local polytope's constraints, and the built-in
equivalents (``_skstruct_native``) by scores and by training: the compat model
through the protocol and its native model through the compiled path follow the
same iterates.
"""

import itertools
import pickle
import warnings

import numpy as np
import pytest

from skstruct import StructuredSVM
from skstruct.compat.pystruct import inference as pinf
from skstruct.compat.pystruct import models, utils
from skstruct.compat.pystruct.inference.maxprod import (
    is_chain,
    is_forest,
    iterative_max_product,
)
from skstruct.inference import available_methods


def _has_lp():
    try:
        from skstruct.inference import lp_relaxation  # noqa: F401
    except ImportError:
        return False
    return True


needs_lp = pytest.mark.skipif(not _has_lp(), reason="skstruct.inference.lp_relaxation missing")
needs_ilp = pytest.mark.skipif("ilp" not in available_methods(), reason="no 'ilp' method")
needs_qpbo = pytest.mark.skipif("qpbo" not in available_methods(), reason="no 'qpbo' method")


# --------------------------------------------------------------------------- helpers

def _score(unary_w, pair, features, edges, y, edge_features=None):
    """``sum_i unary_w[y_i] . x_i + sum_e pair_e[y_u, y_v]`` from the weight tables."""
    y = np.asarray(y).ravel()
    total = sum(unary_w[y[i]] @ features[i] for i in range(len(y)))
    for e, (u, v) in enumerate(edges):
        table = pair if edge_features is None else np.tensordot(edge_features[e], pair, 1)
        total += table[y[u], y[v]]
    return total


def _sym_from_lower(lower, K):
    P = np.zeros((K, K))
    P[np.tri(K, dtype=bool)] = lower
    return P + P.T - np.diag(np.diag(P))


def _brute(unary, pairwise, edges):
    """Best labelling and score by enumeration."""
    n, K = unary.shape
    pairwise = np.broadcast_to(pairwise, (len(edges), K, K))
    best, best_y = -np.inf, None
    for y in itertools.product(range(K), repeat=n):
        y = np.array(y)
        s = pinf.compute_energy(unary, pairwise, edges, y)
        if s > best + 1e-12:
            best, best_y = s, y
    return best_y, best


def _tree_edges(rng, n):
    return np.array([[int(rng.integers(0, v)), v] for v in range(1, n)])


def _cycle_edges(n):
    return np.array([[i, (i + 1) % n] for i in range(n)])


def _chains(rng, n_samples=12, K=3, F=4):
    X = [rng.normal(size=(int(rng.integers(3, 7)), F)) for _ in range(n_samples)]
    Y = [rng.integers(0, K, size=len(x)) for x in X]
    for k in range(K):  # every label occurs
        Y[0][k] = k
    return X, Y


# ---------------------------------------------------------------------- joint features

@pytest.mark.parametrize("directed", [False, True])
def test_graph_crf_joint_feature_scores(directed):
    rng = np.random.default_rng(0)
    K, F = 3, 4
    crf = models.GraphCRF(n_states=K, n_features=F, directed=directed)
    assert crf.size_joint_feature == K * F + (K * K if directed else K * (K + 1) // 2)
    for _ in range(5):
        x = (rng.normal(size=(6, F)), _cycle_edges(6))
        y = rng.integers(0, K, size=6)
        w = rng.normal(size=crf.size_joint_feature)
        U = w[:K * F].reshape(K, F)
        P = w[K * F:].reshape(K, K) if directed else _sym_from_lower(w[K * F:], K)
        assert np.dot(w, crf.joint_feature(x, y)) == pytest.approx(
            _score(U, P, x[0], x[1], y))
        # the potentials score the same labelling the same
        assert pinf.compute_energy(crf._get_unary_potentials(x, w),
                                   crf._get_pairwise_potentials(x, w), x[1], y) == \
            pytest.approx(np.dot(w, crf.joint_feature(x, y)))


def test_relaxed_joint_feature_of_one_hot_marginals_is_the_labelling():
    rng = np.random.default_rng(1)
    K, F = 3, 2
    x = (rng.normal(size=(5, F)), _cycle_edges(5))
    y = rng.integers(0, K, size=5)
    one_hot = np.eye(K)[y]
    edge = np.einsum("ea,eb->eab", one_hot[x[1][:, 0]], one_hot[x[1][:, 1]])
    for directed in (False, True):
        crf = models.GraphCRF(n_states=K, n_features=F, directed=directed)
        np.testing.assert_allclose(crf.joint_feature(x, (one_hot, edge)),
                                   crf.joint_feature(x, y))
        np.testing.assert_allclose(crf.joint_feature(x, (one_hot, edge.reshape(5, K * K))),
                                   crf.joint_feature(x, y))


def test_chain_and_grid_joint_features():
    rng = np.random.default_rng(2)
    K, F = 3, 2
    chain = models.ChainCRF(n_states=K, n_features=F)
    x = rng.normal(size=(5, F))
    y = rng.integers(0, K, size=5)
    w = rng.normal(size=chain.size_joint_feature)
    edges = np.c_[np.arange(4), np.arange(1, 5)]
    assert np.dot(w, chain.joint_feature(x, y)) == pytest.approx(
        _score(w[:K * F].reshape(K, F), w[K * F:].reshape(K, K), x, edges, y))

    for neighborhood in (4, 8):
        grid = models.GridCRF(n_states=K, n_features=F, neighborhood=neighborhood)
        xg = rng.normal(size=(3, 4, F))
        yg = rng.integers(0, K, size=(3, 4))
        w = rng.normal(size=grid.size_joint_feature)
        edges = utils.make_grid_edges(xg, neighborhood)
        assert len(edges) == (17 if neighborhood == 4 else 29)
        assert np.dot(w, grid.joint_feature(xg, yg)) == pytest.approx(
            _score(w[:K * F].reshape(K, F), _sym_from_lower(w[K * F:], K),
                   xg.reshape(-1, F), edges, yg))

        directional = models.DirectionalGridCRF(n_states=K, n_features=F,
                                                neighborhood=neighborhood)
        D = neighborhood // 2
        assert directional.size_joint_feature == K * F + D * K * K
        w = rng.normal(size=directional.size_joint_feature)
        lists = utils.make_grid_edges(xg, neighborhood, return_lists=True)
        ef = np.zeros((len(edges), D))
        ef[np.arange(len(edges)), np.repeat(np.arange(D), [len(e) for e in lists])] = 1
        assert np.dot(w, directional.joint_feature(xg, yg)) == pytest.approx(
            _score(w[:K * F].reshape(K, F), w[K * F:].reshape(D, K, K), xg.reshape(-1, F),
                   edges, yg, ef))


def test_edge_feature_joint_feature_with_symmetric_and_antisymmetric_tables():
    rng = np.random.default_rng(3)
    K, F, EF = 3, 2, 3
    crf = models.EdgeFeatureGraphCRF(n_states=K, n_features=F, n_edge_features=EF,
                                     symmetric_edge_features=[0],
                                     antisymmetric_edge_features=[2])
    edges = _cycle_edges(5)
    x = (rng.normal(size=(5, F)), edges, rng.normal(size=(5, EF)))
    w = rng.normal(size=crf.size_joint_feature)
    P = w[K * F:].reshape(EF, K, K).copy()
    # the joint feature projects tables 0 and 2 on the (anti)symmetric ones
    P[0] = (P[0] + P[0].T) / 2
    P[2] = (P[2] - P[2].T) / 2
    for _ in range(4):
        y = rng.integers(0, K, size=5)
        assert np.dot(w, crf.joint_feature(x, y)) == pytest.approx(
            _score(w[:K * F].reshape(K, F), P, x[0], edges, y, x[2]))
    with pytest.raises(ValueError, match="share an entry"):
        models.EdgeFeatureGraphCRF(n_edge_features=2, symmetric_edge_features=[1],
                                   antisymmetric_edge_features=[1])
    with pytest.raises(ValueError, match="larger than n_edge_features"):
        models.EdgeFeatureGraphCRF(n_edge_features=2, symmetric_edge_features=[2])


def test_multilabel_joint_feature_and_inference():
    rng = np.random.default_rng(4)
    L, F = 4, 3
    edges = np.array(list(itertools.combinations(range(L), 2)))
    model = models.MultiLabelClf(n_labels=L, n_features=F, edges=edges)
    assert model.size_joint_feature == L * F + 4 * len(edges)
    x = rng.normal(size=F)
    w = rng.normal(size=model.size_joint_feature)
    W = w[:L * F].reshape(L, F)
    P = w[L * F:].reshape(len(edges), 2, 2)
    best, best_y = -np.inf, None
    for y in itertools.product((0, 1), repeat=L):
        y = np.array(y)
        s = sum((2 * y[i] - 1) * W[i] @ x for i in range(L)) + \
            sum(P[e][y[u], y[v]] for e, (u, v) in enumerate(edges))
        assert np.dot(w, model.joint_feature(x, y)) == pytest.approx(s)
        if s > best:
            best, best_y = s, y
    exact = models.MultiLabelClf(n_labels=L, n_features=F, edges=edges,
                                 inference_method=("ad3", {"branch_and_bound": True}))
    if "ilp" in available_methods():
        np.testing.assert_array_equal(exact.inference(x, w), best_y)
    # independent labels: the sign of each score
    independent = models.MultiLabelClf(n_labels=L, n_features=F)
    w0 = rng.normal(size=L * F)
    np.testing.assert_array_equal(independent.inference(x, w0),
                                  (w0.reshape(L, F) @ x > 0).astype(int))


def test_multiclass_and_binary_models():
    rng = np.random.default_rng(5)
    X = rng.normal(size=(30, 4))
    y = rng.integers(0, 3, size=30)
    model = models.MultiClassClf(class_weight=[1.0, 2.0, 0.5])
    model.initialize(X, y)
    w = rng.normal(size=model.size_joint_feature)
    W = w.reshape(3, 4)
    np.testing.assert_array_equal(model.batch_inference(X, w), np.argmax(X @ W.T, axis=1))
    for x, yi in zip(X, y):
        scores = W @ x + model.class_weight[yi] * (np.arange(3) != yi)
        assert model.loss_augmented_inference(x, yi, w) == np.argmax(scores)
    np.testing.assert_array_equal(model.batch_loss_augmented_inference(X, y, w),
                                  [model.loss_augmented_inference(x, yi, w)
                                   for x, yi in zip(X, y)])
    np.testing.assert_allclose(model.batch_joint_feature(X, y),
                               sum(model.joint_feature(x, yi) for x, yi in zip(X, y)))

    binary = models.BinaryClf()
    yb = np.where(X[:, 0] > 0, 1, -1)
    binary.initialize(X, yb)
    wb = rng.normal(size=4)
    for x, yi in zip(X, yb):
        options = [(float(yi != c) + wb @ binary.joint_feature(x, c), c) for c in (-1, 1)]
        best = max(s for s, _ in options)
        assert (float(yi != binary.loss_augmented_inference(x, yi, wb))
                + wb @ binary.joint_feature(x, binary.loss_augmented_inference(x, yi, wb))
                == pytest.approx(best))
    assert binary._skstruct_native(X, yb) is None


# --------------------------------------------------------------------------- inference

@pytest.mark.parametrize("seed", range(4))
def test_exact_methods_match_enumeration_on_trees(seed):
    rng = np.random.default_rng(seed)
    n, K = 6, 3
    edges = _tree_edges(rng, n)
    unary = rng.normal(size=(n, K))
    pairwise = rng.normal(size=(n - 1, K, K))
    y_best, best = _brute(unary, pairwise, edges)
    methods = ["max-product", "ad3", ("ogm", {"alg": "dyn"}), ("ogm", {"alg": "trws"})]
    if "ilp" in available_methods():
        methods.append(("ad3", {"branch_and_bound": True}))
    if _has_lp():
        methods.append("lp")  # the local polytope is tight on trees
    for method in methods:
        y, energy = pinf.inference_dispatch(unary, pairwise, edges, method, return_energy=True)
        np.testing.assert_array_equal(y, y_best, err_msg=str(method))
        assert energy == pytest.approx(-best)


@needs_ilp
@pytest.mark.parametrize("seed", range(3))
def test_branch_and_bound_is_exact_on_loopy_graphs(seed):
    rng = np.random.default_rng(10 + seed)
    n, K = 6, 3
    edges = np.vstack([_cycle_edges(n), [[0, 3], [1, 4]]])
    unary = rng.normal(size=(n, K))
    pairwise = rng.normal(size=(len(edges), K, K)) * 2
    _, best = _brute(unary, pairwise, edges)
    y = pinf.inference_ad3(unary, pairwise, edges, branch_and_bound=True)
    assert pinf.compute_energy(unary, pairwise, edges, y) == pytest.approx(best)


def test_approximate_methods_return_valid_labellings_on_loopy_graphs():
    rng = np.random.default_rng(20)
    n, K = 6, 3
    edges = np.vstack([_cycle_edges(n), [[0, 3]]])
    unary = rng.normal(size=(n, K))
    pairwise = rng.normal(size=(len(edges), K, K))
    _, best = _brute(unary, pairwise, edges)
    for method in ["ad3", "max-product", "ogm", ("ogm", {"alg": "bp"}), "unary"]:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            y, energy = pinf.inference_dispatch(unary, pairwise, edges, method,
                                                return_energy=True)
        assert y.shape == (n,) and y.min() >= 0 and y.max() < K
        score = pinf.compute_energy(unary, pairwise, edges, y)
        assert score <= best + 1e-9
        assert energy == pytest.approx(-score)
    # unary: each node's best label
    np.testing.assert_array_equal(pinf.inference_dispatch(unary, pairwise, edges, "unary"),
                                  unary.argmax(1))


def test_qpbo_on_supermodular_multilabel_tables_is_an_exact_cut():
    rng = np.random.default_rng(21)
    n, K = 6, 3
    edges = np.vstack([_cycle_edges(n), [[1, 4]]])
    unary = rng.normal(size=(n, K))
    a, b = np.indices((K, K))
    pairwise = -np.abs(a - b)[None] * rng.uniform(0.2, 1.5, size=(len(edges), 1, 1))
    _, best = _brute(unary, pairwise, edges)
    y = pinf.inference_qpbo(unary, pairwise, edges)
    assert pinf.compute_energy(unary, pairwise, edges, y) == pytest.approx(best)


@needs_qpbo
def test_qpbo_two_labels_on_submodular_tables_is_exact():
    rng = np.random.default_rng(22)
    n = 7
    edges = np.vstack([_cycle_edges(n), [[0, 4]]])
    unary = rng.normal(size=(n, 2))
    pairwise = np.zeros((len(edges), 2, 2))
    pairwise[:, 0, 0] = pairwise[:, 1, 1] = rng.uniform(0, 1, size=len(edges))
    _, best = _brute(unary, pairwise, edges)
    y = pinf.inference_dispatch(unary, pairwise, edges, "qpbo")
    assert pinf.compute_energy(unary, pairwise, edges, y) == pytest.approx(best)


def test_grid_inference_and_loss_augmented_inference_match_enumeration():
    rng = np.random.default_rng(23)
    K, F = 2, 2
    crf = models.GridCRF(n_states=K, n_features=F, inference_method="max-product")
    crf_lines = models.GridCRF(n_states=K, n_features=F, inference_method="ad3")
    for _ in range(3):
        # a 1 x 5 grid is a chain: exact under both
        x = rng.normal(size=(1, 5, F))
        y = rng.integers(0, K, size=(1, 5))
        w = rng.normal(size=crf.size_joint_feature)
        for model in (crf, crf_lines):
            np.testing.assert_array_equal(model.inference(x, w),
                                          utils.exhaustive_inference(model, x, w))
            np.testing.assert_array_equal(model.loss_augmented_inference(x, y, w),
                                          utils.exhaustive_loss_augmented_inference(
                                              model, x, y, w))


def test_class_weights_enter_loss_augmented_inference():
    rng = np.random.default_rng(24)
    K, F = 3, 2
    edges = _tree_edges(rng, 5)
    crf = models.GraphCRF(n_states=K, n_features=F, class_weight=[1.0, 0.2, 3.0],
                          inference_method="max-product")
    for _ in range(4):
        x = (rng.normal(size=(5, F)), edges)
        y = rng.integers(0, K, size=5)
        w = rng.normal(size=crf.size_joint_feature)
        y_hat, energy = crf.loss_augmented_inference(x, y, w, return_energy=True)
        y_ex = utils.exhaustive_loss_augmented_inference(crf, x, y, w)
        value = crf.loss(y, y_hat) + w @ crf.joint_feature(x, y_hat)
        assert value == pytest.approx(crf.loss(y, y_ex) + w @ crf.joint_feature(x, y_ex))
        assert energy == pytest.approx(-value)
        assert crf.loss(y, y_hat) == pytest.approx(
            sum(crf.class_weight[a] for a, b in zip(y, y_hat) if a != b))


@needs_lp
@pytest.mark.parametrize("method", ["lp", "ad3"])
def test_relaxed_inference_is_a_point_of_the_local_polytope(method):
    rng = np.random.default_rng(30)
    K, F = 3, 3
    crf = models.GridCRF(n_states=K, n_features=F, inference_method=method)
    x = rng.normal(size=(3, 3, F))
    w = rng.normal(size=crf.size_joint_feature)
    (node, edge), energy = crf.inference(x, w, relaxed=True, return_energy=True)
    edges = utils.make_grid_edges(x)
    assert node.shape == (3, 3, K) and edge.shape == (len(edges), K * K)
    node = node.reshape(-1, K)
    edge = edge.reshape(-1, K, K)
    assert np.all(node >= -1e-7) and np.all(edge >= -1e-7)
    np.testing.assert_allclose(node.sum(1), 1, atol=1e-6)
    np.testing.assert_allclose(edge.sum(2), node[edges[:, 0]], atol=1e-6)
    np.testing.assert_allclose(edge.sum(1), node[edges[:, 1]], atol=1e-6)
    assert energy == pytest.approx(-w @ crf.joint_feature(x, (node.reshape(3, 3, K), edge)))
    # the relaxation bounds every labelling's score
    y = crf.inference(x, w)
    assert -energy >= w @ crf.joint_feature(x, y) - 1e-6


@needs_lp
def test_lp_general_graph_minimises_costs():
    rng = np.random.default_rng(31)
    edges = _tree_edges(rng, 5)
    unary = rng.normal(size=(5, 3))
    pairwise = rng.normal(size=(4, 3, 3))
    y_best, best = _brute(-unary, -pairwise, edges)
    from skstruct.compat.pystruct.inference.linear_programming import lp_general_graph

    node, edge, energy = lp_general_graph(unary, edges, pairwise)
    assert energy == pytest.approx(-best)
    np.testing.assert_array_equal(node.argmax(1), y_best)


# ------------------------------------------------------------------ the method names

def test_method_names_and_refusals():
    installed = pinf.get_installed()
    assert {"max-product", "ad3", "ogm"} <= set(installed)
    assert "ad3+" not in installed
    assert ("lp" in installed) == _has_lp()
    assert ("qpbo" in installed) == ("qpbo" in available_methods())
    assert pinf.get_installed([("ogm", {"alg": "lf"}), "unary"]) == ["unary"]
    unary, pairwise, edges = np.zeros((3, 2)), np.zeros((2, 2)), np.array([[0, 1], [1, 2]])
    with pytest.raises(NotImplementedError, match="trws"):
        pinf.inference_dispatch(unary, pairwise, edges, ("ogm", {"alg": "gibbs"}))
    with pytest.raises(NotImplementedError, match="-inf unary"):
        pinf.inference_dispatch(unary, pairwise, edges, "ad3+")
    with pytest.raises(ValueError, match="inference_method must be"):
        pinf.inference_dispatch(unary, pairwise, edges, "cplex")
    with pytest.raises(ValueError, match="without cycles"):
        pinf.inference_dispatch(np.zeros((3, 2)), pairwise, _cycle_edges(3),
                                ("ogm", {"alg": "dyn"}))
    crf = models.GraphCRF(n_states=2, n_features=2)
    with pytest.raises(NotImplementedError, match="constraints"):
        crf.inference((np.zeros((3, 2)), edges), np.zeros(crf.size_joint_feature),
                      constraints=[("XOR", [0, 1], 1, False)])
    assert crf.inference_method == "ad3"
    assert models.ChainCRF().inference_method == "max-product"


def test_graph_tests():
    chain = np.c_[np.arange(4), np.arange(1, 5)]
    assert is_chain(chain, 5) and not is_chain(chain[::-1], 5) and not is_chain(chain, 6)
    assert is_forest(chain) and is_forest(np.vstack([chain, chain + 5]), 10)
    assert not is_forest(_cycle_edges(4))
    assert not is_forest(np.vstack([chain, chain[:1, ::-1]]))  # a repeated edge
    assert is_forest(np.zeros((0, 2), int), 3)


def test_iterative_max_product_on_a_chain_is_exact():
    rng = np.random.default_rng(40)
    chain = np.c_[np.arange(5), np.arange(1, 6)]
    unary = rng.normal(size=(6, 3))
    pairwise = rng.normal(size=(5, 3, 3))
    y_best, _ = _brute(unary, pairwise, chain)
    with warnings.catch_warnings():
        # messages settle to within max-product's tolerance more slowly than the labels do
        warnings.simplefilter("ignore")
        y = iterative_max_product(unary, pairwise, chain, max_iter=20)
    np.testing.assert_array_equal(y, y_best)


# --------------------------------------------------------------------- native models

def _native_cases(rng):
    X, Y = _chains(rng)
    trees = [(x, _tree_edges(rng, len(x))) for x in X]
    grids = [rng.normal(size=(3, 4, 2)) for _ in range(6)]
    Yg = [rng.integers(0, 3, size=(3, 4)) for _ in grids]
    Yg[0].ravel()[:3] = [0, 1, 2]
    ef = [(x, e, rng.normal(size=(len(e), 2))) for x, e in trees]
    Xm = rng.normal(size=(20, 3))
    Ym = rng.integers(0, 2, size=(20, 4))
    ym = rng.integers(0, 3, size=20)
    ym[:3] = [0, 1, 2]
    return [
        (models.ChainCRF(), X, Y),
        (models.ChainCRF(directed=False), X, Y),
        (models.GraphCRF(), trees, Y),
        (models.GraphCRF(directed=True), trees, Y),
        (models.EdgeFeatureGraphCRF(), ef, Y),
        (models.GridCRF(), grids, Yg),
        (models.GridCRF(neighborhood=8), grids, Yg),
        (models.DirectionalGridCRF(), grids, Yg),
        (models.MultiLabelClf(), Xm, Ym),
        (models.MultiLabelClf(edges=np.array([[0, 1], [1, 2], [0, 3]])), Xm, Ym),
        (models.MultiClassClf(), Xm, ym),
    ]


class _Fitted:
    def __init__(self, coef):
        self.coef_ = coef


def test_native_equivalents_score_alike():
    rng = np.random.default_rng(50)
    for model, X, Y in _native_cases(rng):
        model.initialize(X, Y)
        native = model._skstruct_native(X, Y)
        assert native is not None, model
        native.model.fit(native.X, native.y)
        assert native.model.size_joint_feature == native.n_native
        for _ in range(3):
            w = rng.normal(size=model.size_joint_feature)
            coef = native.from_w(w)
            # a selection of coordinates: the regulariser is the same
            assert coef @ coef == pytest.approx(w @ w)
            np.testing.assert_array_equal(native.to_w(_Fitted(coef)), w)
            for i in range(3):
                y = Y[i]
                y_native = native.y[i]
                x_native = native.X[i]
                assert w @ model.joint_feature(X[i], y) == pytest.approx(
                    coef @ native.model.joint_feature(x_native, y_native)), model


def test_no_native_equivalent_when_it_would_differ():
    rng = np.random.default_rng(51)
    X, Y = _chains(rng)
    missing = [np.where(y == 2, 1, y) for y in Y]
    # sizes given: the model is not re-initialised on data lacking label 2
    assert models.ChainCRF(n_states=3, n_features=4)._skstruct_native(X, missing) is None
    assert models.ChainCRF(class_weight=[1, 2, 1])._skstruct_native(X, Y) is None
    trees = [(x, _tree_edges(rng, len(x)), np.ones((len(x) - 1, 2))) for x in X]
    sym = models.EdgeFeatureGraphCRF(symmetric_edge_features=[0])
    assert sym._skstruct_native(trees, Y) is None
    # decoding by the unary potentials alone ignores the edges the native model scores
    assert models.GraphCRF(inference_method="unary")._skstruct_native(
        [(x, _tree_edges(rng, len(x))) for x in X], Y) is None
    assert models.GraphCRF(inference_method="unary")._skstruct_native(
        [(x, np.zeros((0, 2), int)) for x in X], Y) is not None
    assert models.MultiLabelClf(inference_method="unary")._skstruct_native(
        rng.normal(size=(4, 2)), np.array([[0, 1], [1, 0], [1, 1], [0, 0]])) is not None
    assert models.MultiClassClf(rescale_C=True)._skstruct_native(
        rng.normal(size=(6, 2)), np.array([0, 1, 2, 0, 1, 2])) is None


@pytest.mark.parametrize("case", ["chain", "graph"])
def test_protocol_and_native_fits_follow_the_same_iterates(case):
    rng = np.random.default_rng(52)
    X, Y = _chains(rng)
    if case == "chain":
        model = models.ChainCRF()
    else:
        model = models.GraphCRF(inference_method="max-product")
        X = [(x, _tree_edges(rng, len(x))) for x in X]
    model.initialize(X, Y)
    native = model._skstruct_native(X, Y)
    assert native.model.inference_method == "auto"
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        fast = StructuredSVM(model=native.model, C=1.0, max_iter=6, random_state=0)
        fast.fit(native.X, native.y)
        slow = StructuredSVM(model=model, C=1.0, max_iter=6, random_state=0).fit(X, Y)
    w = native.to_w(fast)
    np.testing.assert_allclose(w, slow.coef_, atol=1e-10)
    assert fast.history_["primal"][-1] == pytest.approx(slow.history_["primal"][-1])
    for x, p in zip(X, fast.predict(native.X)):
        np.testing.assert_array_equal(model.inference(x, w), p)


@needs_ilp
def test_protocol_and_native_fits_reach_the_same_objective_on_loopy_graphs():
    # exact decoding on both sides (branch and bound here, enumeration in the native
    # model), whose ties may be broken differently: the duality gaps certify how far
    # each primal value is from the common optimum
    rng = np.random.default_rng(54)
    X = [(rng.normal(size=(4, 3)), _cycle_edges(4)) for _ in range(6)]
    Y = [rng.integers(0, 3, size=4) for _ in X]
    Y[0][:3] = [0, 1, 2]
    model = models.GraphCRF(inference_method=("ad3", {"branch_and_bound": True}))
    model.initialize(X, Y)
    native = model._skstruct_native(X, Y)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        fast = StructuredSVM(model=native.model, C=0.1, max_iter=30, random_state=0)
        fast.fit(native.X, native.y)
        slow = StructuredSVM(model=model, C=0.1, max_iter=30, random_state=0).fit(X, Y)
    gaps = [fast.history_["gap"][-1], slow.history_["gap"][-1]]
    assert max(gaps) < 0.05
    assert abs(fast.history_["primal"][-1] - slow.history_["primal"][-1]) <= max(gaps) + 1e-9


# ------------------------------------------------------------------- input checking

def test_initialize_reads_and_checks_sizes():
    rng = np.random.default_rng(60)
    X, Y = _chains(rng)
    crf = models.ChainCRF()
    crf.initialize(X, Y)
    assert (crf.n_states, crf.n_features, crf.size_joint_feature) == (3, 4, 21)
    with pytest.raises(ValueError, match="Expected 2 states"):
        models.ChainCRF(n_states=2).initialize(X, Y)
    with pytest.raises(ValueError, match="Expected 5 features"):
        models.ChainCRF(n_features=5).initialize(X, Y)
    bad = list(Y)
    bad[2] = bad[2][:-1]
    with pytest.raises(ValueError, match="sample 2: .* labels for .* nodes"):
        models.ChainCRF().initialize(X, bad)
    # three distinct labels, but not 0, 1, 2
    with pytest.raises(ValueError, match=r"sample 0: label 5 is outside 0\.\.2"):
        models.ChainCRF().initialize(X, [np.where(y == 2, 5, y) for y in Y])
    grids = [rng.normal(size=(2, 3, 2)), rng.normal(size=(2, 3))]
    with pytest.raises(ValueError, match="sample 1: a grid sample"):
        models.GridCRF().initialize(grids, [np.zeros((2, 3), int)] * 2)
    with pytest.raises(ValueError, match="wrong shape"):
        crf.inference(X[0], np.zeros(5))
    with pytest.raises(ValueError, match="sample 0: labels must be 0 or 1"):
        models.MultiLabelClf().initialize(np.zeros((2, 3)), np.array([[0, 2], [1, 0]]))


def test_utils():
    rng = np.random.default_rng(70)
    A = rng.normal(size=(4, 4))
    A = A + A.T
    np.testing.assert_array_equal(utils.expand_sym(utils.compress_sym(A, False)), A)
    upper = np.triu(A)
    np.testing.assert_allclose(utils.expand_sym(utils.compress_sym(upper)), A)
    lists = utils.make_grid_edges(np.zeros((2, 3)), return_lists=True)
    ef = utils.edge_list_to_features(lists)
    assert ef.shape == (7, 2) and ef[:4, 0].all() and ef[4:, 1].all()
    with pytest.raises(ValueError, match="neighborhood"):
        utils.make_grid_edges(np.zeros((2, 2)), neighborhood=6)
    # the primal objective is C * sum of slacks + ||w||^2 / 2
    X, Y = _chains(rng, n_samples=4)
    crf = models.ChainCRF()
    crf.initialize(X, Y)
    w = rng.normal(size=crf.size_joint_feature)
    slacks = [utils.find_constraint(crf, x, y, w)[2] for x, y in zip(X, Y)]
    assert utils.objective_primal(crf, w, X, Y, C=2.0) == pytest.approx(
        2.0 * sum(slacks) + w @ w / 2)
    y_hat, delta, slack, loss = utils.find_constraint(crf, X[0], Y[0], w)
    assert slack == pytest.approx(max(0, loss - w @ delta))


def test_models_are_estimators_of_the_protocol():
    from sklearn.base import clone

    from skstruct.models import StructuredModel

    rng = np.random.default_rng(80)
    for model, X, Y in _native_cases(rng) + [(models.BinaryClf(), rng.normal(size=(4, 2)),
                                              np.array([1, -1, 1, -1]))]:
        assert isinstance(model, StructuredModel)
        model.initialize(X, Y)
        params = model.get_params()
        assert set(params) <= set(vars(model)) | {"n_classes"}
        copy = clone(model)
        assert copy is not model and repr(copy) == repr(model)
        assert copy.size_joint_feature == model.size_joint_feature


def test_save_logger_round_trip(tmp_path):
    crf = models.GraphCRF(n_states=3, n_features=2)
    logger = utils.SaveLogger(str(tmp_path / "model_%d.pkl"), save_every=2)
    logger(crf, iteration=4)
    logger(crf, iteration=3)
    assert sorted(p.name for p in tmp_path.iterdir()) == ["model_4.pkl"]
    loaded = pickle.loads((tmp_path / "model_4.pkl").read_bytes())
    assert repr(loaded) == repr(crf) == "GraphCRF(n_states: 3, inference_method: ad3)"


def test_multilabel_loss_augmented_inference_matches_enumeration():
    from skstruct.compat.pystruct.models import MultiLabelClf
    from skstruct.compat.pystruct.utils import exhaustive_loss_augmented_inference

    rng = np.random.RandomState(0)
    X, Y = rng.randn(12, 4), (rng.rand(12, 3) > 0.5).astype(int)
    model = MultiLabelClf(edges=np.array([[0, 1], [1, 2], [0, 2]]))
    model.initialize(X, Y)
    w = rng.randn(model.size_joint_feature)
    for x, y in zip(X, Y):
        np.testing.assert_array_equal(model.loss_augmented_inference(x, y, w),
                                      exhaustive_loss_augmented_inference(model, x, y, w))
