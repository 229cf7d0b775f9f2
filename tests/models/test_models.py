"""The model objects: parameters, automatic choice, Chow-Liu trees, label-graph
validation and the decoder each sample gets."""

import inspect
import itertools
import warnings

import numpy as np
import pytest
import scipy.sparse as sp
from sklearn.base import clone
from sklearn.utils.estimator_checks import (
    check_get_params_invariance,
    check_no_attributes_set_in_init,
    check_parameters_default_constructible,
    check_set_params,
)

from skstruct.models import (
    ChainModel,
    GraphModel,
    MulticlassModel,
    MultiLabelModel,
    StructuredModel,
    auto_model,
    chow_liu_tree,
)
from skstruct.models._design import EXACT_LIMIT

MODELS = [ChainModel, GraphModel, MultiLabelModel, MulticlassModel]


def rng_(seed=0):
    return np.random.default_rng(seed)


def grid_edges(h, w):
    idx = np.arange(h * w).reshape(h, w)
    return np.vstack([np.column_stack([idx[:, :-1].ravel(), idx[:, 1:].ravel()]),
                      np.column_stack([idx[:-1].ravel(), idx[1:].ravel()])])


# ---------------------------------------------------------------- parameters


@pytest.mark.parametrize("Model", MODELS)
def test_params_are_the_constructor_arguments(Model):
    model = Model()
    names = [p for p in inspect.signature(Model).parameters]
    params = model.get_params()
    assert sorted(params) == sorted(names)
    for name, p in inspect.signature(Model).parameters.items():
        assert params[name] == p.default
    assert params["inference_method"] == "auto"
    assert isinstance(model, StructuredModel)
    # set_params round trip, clone, repr
    model.set_params(inference_method="exact")
    assert model.get_params()["inference_method"] == "exact"
    c = clone(model)
    assert c.get_params() == model.get_params() and c is not model
    assert "inference_method='exact'" in repr(model)


@pytest.mark.parametrize("Model", MODELS)
@pytest.mark.parametrize("check", [check_get_params_invariance, check_set_params,
                                   check_parameters_default_constructible,
                                   check_no_attributes_set_in_init])
def test_sklearn_parameter_checks(Model, check):
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        check(Model.__name__, Model())


def test_chain_model_options_are_params():
    m = ChainModel(bias=True, start_end=True)
    assert m.get_params() == {"bias": True, "start_end": True, "inference_method": "auto"}
    assert MultiLabelModel(edges="tree").get_params()["edges"] == "tree"


def test_invalid_inference_is_rejected_at_fit_only():
    X = [rng_().normal(size=(3, 2))]
    m = ChainModel(inference_method="viterbi")  # no error here
    with pytest.raises(ValueError, match="inference"):
        m.fit(X, [np.array([0, 1, 0])])
    with pytest.raises(ValueError, match="inference"):
        MultiLabelModel(inference_method="bogus").fit(np.ones((3, 2)), np.eye(3, dtype=int))


# ---------------------------------------------------------------- fitting


def test_fit_learns_classes_and_counts():
    rng = rng_()
    X = [rng.normal(size=(n, 4)) for n in (3, 1, 5)]
    y = [np.array(["b", "a", "c"]), np.array(["a"]), np.array(["c"] * 5)]
    m = ChainModel()
    assert m.fit(X, y) is m
    np.testing.assert_array_equal(m.classes_, ["a", "b", "c"])
    assert m.n_features_ == 4 and m.n_classes_ == 3
    d, _ = m.design(X, y)
    np.testing.assert_array_equal(d.y, [1, 0, 2, 0, 2, 2, 2, 2, 2])
    assert d.n_classes == 3
    d2, _ = m.design(X)
    assert d2.y is None
    # an unseen label is coded -1 (an error, never a crash)
    d3, _ = m.design(X, [np.array(["b", "z", "c"]), np.array(["a"]), np.array(["c"] * 5)])
    assert d3.y[1] == -1


def test_wrong_formats_point_to_the_right_model():
    rng = rng_()
    graphs = [(rng.normal(size=(2, 3)), np.array([[0, 1]]))]
    chains = [rng.normal(size=(2, 3))]
    y = [np.array([0, 1])]
    with pytest.raises(ValueError, match="GraphModel"):
        ChainModel().fit(graphs, y)
    with pytest.raises(ValueError, match="ChainModel"):
        GraphModel().fit(chains, y)
    with pytest.raises(ValueError, match="1-D"):
        MulticlassModel().fit(rng.normal(size=(4, 2)), np.zeros((4, 2)))
    with pytest.raises(ValueError, match="2-D"):
        MultiLabelModel().fit(rng.normal(size=(4, 2)), np.zeros(4))
    with pytest.raises(ValueError, match="sample 1"):
        MultiLabelModel().fit(rng.normal(size=(3, 2)), np.array([[0, 1], [2, 0], [1, 1]]))
    m = MultiLabelModel().fit(rng.normal(size=(3, 2)), np.eye(3, dtype=int))
    with pytest.raises(ValueError, match="labels"):
        m.design(rng.normal(size=(3, 2)), np.ones((3, 4), int))
    with pytest.raises(ValueError, match="features"):
        m.design(rng.normal(size=(3, 5)))


def test_chain_bias_and_start_end_features():
    rng = rng_()
    X = [rng.normal(size=(n, 2)) for n in (3, 1, 0, 4)]
    y = [np.zeros(len(x), int) for x in X]
    y[0][1] = 1
    base, _ = ChainModel().fit(X, y).design(X)
    d, _ = ChainModel(bias=True, start_end=True).fit(X, y).design(X)
    assert base.features.shape == (8, 2)
    assert d.features.shape == (8, 5)
    extra = d.features.toarray()[:, 2:]
    np.testing.assert_array_equal(d.features.toarray()[:, :2], base.features.toarray())
    no = d.batch.node_offsets
    first = np.zeros(8)
    last = np.zeros(8)
    for s in range(4):
        if no[s + 1] > no[s]:
            first[no[s]] = 1
            last[no[s + 1] - 1] = 1
    cols = sorted(map(tuple, extra.T.tolist()))
    assert cols == sorted([tuple(np.ones(8)), tuple(first), tuple(last)])
    d_b, _ = ChainModel(bias=True).fit(X, y).design(X)
    np.testing.assert_array_equal(d_b.features.toarray()[:, 2], np.ones(8))


# ---------------------------------------------------------------- auto_model


def test_auto_model_warns_about_a_label_column():
    X = np.random.default_rng(0).normal(size=(5, 2))
    with pytest.warns(UserWarning, match=r"y is a column of shape \(n_samples, 1\)"):
        m = auto_model(X, np.zeros((5, 1), int))
    assert type(m) is MultiLabelModel


def test_auto_model_choices():
    rng = rng_()
    X2 = rng.normal(size=(5, 3))
    assert type(auto_model([rng.normal(size=(2, 3))], [np.zeros(2)])) is ChainModel
    graph = [(rng.normal(size=(2, 3)), np.array([[0, 1]]))]
    assert type(auto_model(graph, [np.zeros(2)])) is GraphModel
    graph_ef = [(rng.normal(size=(2, 3)), np.array([[0, 1]]), np.ones((1, 2)))]
    assert type(auto_model(graph_ef, [np.zeros(2)])) is GraphModel
    assert type(auto_model(X2, rng.integers(0, 3, 5))) is MulticlassModel
    assert type(auto_model(sp.csr_matrix(X2), rng.integers(0, 3, 5))) is MulticlassModel
    m = auto_model(X2, rng.integers(0, 2, (5, 12)))
    assert type(m) is MultiLabelModel and m.edges == "full"
    m = auto_model(X2, rng.integers(0, 2, (5, 13)))
    assert type(m) is MultiLabelModel and m.edges == "tree"
    m = auto_model(sp.csr_matrix(X2), rng.integers(0, 2, (5, 4)))
    assert type(m) is MultiLabelModel
    # unfitted: auto_model only chooses
    assert not hasattr(m, "classes_")


# ---------------------------------------------------------------- Chow-Liu


def sample_tree(rng, n, edges, flip, root_p=0.5):
    """Binary labels from a tree-structured Markov model: each label copies its
    parent's, flipped with the edge's probability."""
    L = len(edges) + 1
    Y = np.zeros((n, L), bool)
    Y[:, 0] = rng.random(n) < root_p
    for (a, b), p in zip(edges, flip):  # edges listed parent first, top-down
        Y[:, b] = Y[:, a] ^ (rng.random(n) < p)
    return Y.astype(int)


@pytest.mark.parametrize("seed", [0, 1, 2])
def test_chow_liu_recovers_a_known_tree(seed):
    rng = rng_(seed)
    L = 7
    # a random tree over a random relabelling of the nodes
    perm = rng.permutation(L)
    edges = [(perm[int(rng.integers(0, i))], perm[i]) for i in range(1, L)]
    flip = rng.uniform(0.03, 0.2, L - 1)
    Y = np.zeros((4000, L), int)
    Y[:, perm] = sample_tree(rng, 4000, [(int(np.flatnonzero(perm == a)[0]),
                                           int(np.flatnonzero(perm == b)[0]))
                                          for a, b in edges], flip)
    got = chow_liu_tree(Y)
    assert got.dtype == np.int64 and got.shape == (L - 1, 2)
    assert np.all(got[:, 0] < got[:, 1])
    assert [tuple(e) for e in got] == sorted(tuple(sorted(map(int, e))) for e in edges)
    # the model learns the same tree
    m = MultiLabelModel(edges="tree").fit(rng.normal(size=(4000, 2)), Y)
    np.testing.assert_array_equal(m.edges_, got)


def test_chow_liu_edge_cases():
    rng = rng_()
    assert chow_liu_tree(rng.integers(0, 2, (10, 1))).shape == (0, 2)
    np.testing.assert_array_equal(chow_liu_tree(rng.integers(0, 2, (10, 2))), [[0, 1]])
    # independent or constant columns still give a spanning tree
    for Y in (rng.integers(0, 2, (50, 5)), np.zeros((50, 5), int)):
        t = chow_liu_tree(Y)
        assert t.shape == (4, 2)
        nodes = {0}
        for _ in range(4):
            for a, b in t:
                if (a in nodes) != (b in nodes):
                    nodes |= {int(a), int(b)}
        assert nodes == set(range(5))
    # identical columns are tied to each other before anything else
    base = rng.integers(0, 2, (200, 1))
    Y = np.hstack([base, rng.integers(0, 2, (200, 1)), base, rng.integers(0, 2, (200, 1))])
    assert [0, 2] in chow_liu_tree(Y).tolist()


# ---------------------------------------------------------------- label graphs


def test_multilabel_explicit_edges():
    rng = rng_()
    X, Y = rng.normal(size=(6, 2)), rng.integers(0, 2, (6, 4))
    edges = np.array([[0, 1], [1, 2], [3, 0]])
    m = MultiLabelModel(edges=edges).fit(X, Y)
    np.testing.assert_array_equal(m.edges_, edges)
    np.testing.assert_array_equal(m.edges, [[0, 1], [1, 2], [3, 0]])  # not mutated
    m2 = MultiLabelModel(edges=[[0, 1], [2, 3]]).fit(X, Y)
    assert m2.edges_.dtype == np.int64
    m3 = MultiLabelModel(edges=np.array([[0.0, 3.0]])).fit(X, Y)
    np.testing.assert_array_equal(m3.edges_, [[0, 3]])
    m4 = MultiLabelModel(edges=np.zeros((0, 2), int)).fit(X, Y)
    assert m4.edges_.shape == (0, 2)
    d, _ = m.design(X, Y)
    assert d.batch.n_samples == 6 and d.batch.n_nodes == 24 and d.batch.n_edges == 18


@pytest.mark.parametrize("edges,match", [
    (np.array([[0, 4]]), "out of range"),
    (np.array([[-1, 2]]), "out of range"),
    (np.array([[1, 1]]), "self-loop"),
    (np.array([[0, 1, 2]]), "shape"),
    (np.array([0, 1]), "shape"),
    (np.array([[0.5, 1.0]]), "integer"),
    ("chain", "edges"),
])
def test_multilabel_edges_validation(edges, match):
    rng = rng_()
    X, Y = rng.normal(size=(6, 2)), rng.integers(0, 2, (6, 4))
    m = MultiLabelModel(edges=edges)
    with pytest.raises(ValueError, match=match):
        m.fit(X, Y)
    assert not hasattr(m, "edges_")


# ---------------------------------------------------------------- decoders


def _kinds(model, X, K):
    y = [np.arange(len(x[0] if isinstance(x, tuple) else x)) % K for x in X]
    pad = X[0]
    # a padding sample makes sure every class appears
    if isinstance(pad, tuple):
        pad = (np.zeros((K, pad[0].shape[1])), np.zeros((0, 2), int))
    else:
        pad = np.zeros((K, pad.shape[1]))
    model.fit(list(X) + [pad], list(y) + [np.arange(K)])
    assert model.n_classes_ == K
    d, _ = model.design(X)
    return d.kind


def test_decoder_choice_by_shape():
    rng = rng_()
    F = 2
    chain = (rng.normal(size=(5, F)), np.array([[i, i + 1] for i in range(4)]))
    path = (rng.normal(size=(5, F)), np.array([[1, 0], [2, 1], [2, 3], [4, 3]]))
    tree = (rng.normal(size=(5, F)), np.array([[0, 1], [0, 2], [2, 3], [2, 4]]))
    forest = (rng.normal(size=(5, F)), np.array([[0, 1], [3, 4]]))
    single = (rng.normal(size=(1, F)), np.zeros((0, 2), int))
    cycle = (rng.normal(size=(4, F)), np.array([[0, 1], [1, 2], [2, 3], [3, 0]]))
    grid = (rng.normal(size=(16, F)), grid_edges(4, 4))  # 3 ** 16 labellings
    kinds = _kinds(GraphModel(), [chain, path, tree, forest, single, cycle, grid], 3)
    np.testing.assert_array_equal(kinds, [0, 1, 1, 1, 0, 2, 3])
    # ChainModel: always Viterbi
    kinds = _kinds(ChainModel(), [rng.normal(size=(n, F)) for n in (1, 4, 9)], 3)
    np.testing.assert_array_equal(kinds, [0, 0, 0])


def test_exact_enumeration_limit():
    # tiny loopy graphs are enumerated up to EXACT_LIMIT labellings, then TRW-S
    rng = rng_()
    n_ok = int(np.floor(np.log(EXACT_LIMIT) / np.log(2) + 1e-9))

    def ring(n):
        return (rng.normal(size=(n, 2)), np.array([[i, (i + 1) % n] for i in range(n)]))

    kinds = _kinds(GraphModel(), [ring(n_ok), ring(n_ok + 1)], 2)
    np.testing.assert_array_equal(kinds, [2, 3])
    # multi-label: the full graph over 12 labels is enumerated, over 13 it is not
    X = rng.normal(size=(5, 2))
    for L, kind in ((3, 2), (12, 2), (13, 3)):
        Y = rng.integers(0, 2, (5, L))
        Y[0], Y[1] = 0, 1
        d, _ = MultiLabelModel(edges="full").fit(X, Y).design(X)
        assert np.all(d.kind == kind), (L, d.kind)
    Y = rng.integers(0, 2, (5, 13))
    Y[0], Y[1] = 0, 1
    for edges in ("tree", "independent"):
        d, _ = MultiLabelModel(edges=edges).fit(X, Y).design(X)
        assert np.all(d.kind <= 1)
    d, _ = MulticlassModel().fit(X, np.array([0, 1, 2, 0, 1])).design(X)
    assert np.all(d.kind == 0)


def test_forced_decoders():
    rng = rng_()
    tree = (rng.normal(size=(4, 2)), np.array([[0, 1], [1, 2], [1, 3]]))
    cycle = (rng.normal(size=(4, 2)), np.array([[0, 1], [1, 2], [2, 3], [3, 0]]))
    chain = (rng.normal(size=(3, 2)), np.array([[0, 1], [1, 2]]))
    np.testing.assert_array_equal(_kinds(GraphModel(inference_method="trws"), [tree, cycle], 2),
                                  [3, 3])
    np.testing.assert_array_equal(_kinds(GraphModel(inference_method="exact"), [tree, cycle], 2),
                                  [2, 2])
    np.testing.assert_array_equal(_kinds(GraphModel(inference_method="tree"), [chain, tree], 2),
                                  [0, 1])
    with pytest.raises(ValueError, match="sample 1"):
        _kinds(GraphModel(inference_method="tree"), [tree, cycle], 2)
    with pytest.raises(ValueError, match="sample 0"):
        _kinds(GraphModel(inference_method="chain"), [tree], 2)
    big = (rng.normal(size=(36, 2)), grid_edges(6, 6))  # 3 ** 36 labellings
    with pytest.raises(ValueError, match="too many"):
        _kinds(GraphModel(inference_method="exact"), [big], 3)


def test_label_graph_of_every_multilabel_sample_is_the_same():
    rng = rng_()
    X, Y = rng.normal(size=(4, 2)), rng.integers(0, 2, (4, 5))
    m = MultiLabelModel(edges="full").fit(X, Y)
    d, _ = m.design(X, Y)
    E = np.array(list(itertools.combinations(range(5), 2)))
    np.testing.assert_array_equal(m.edges_, E)
    eo, no = d.batch.edge_offsets, d.batch.node_offsets
    for s in range(4):
        np.testing.assert_array_equal(d.batch.edges[eo[s]:eo[s + 1]] - no[s], E)
    np.testing.assert_array_equal(d.y, Y.ravel())
