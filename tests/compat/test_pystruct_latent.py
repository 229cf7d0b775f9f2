"""skstruct.compat.pystruct's latent and typed models against brute force.

LatentGraphCRF / LatentGridCRF / LatentDirectionalGridCRF (hidden sub-states of
labels), LatentNodeCRF / EdgeFeatureLatentNodeCRF (hidden nodes) and
NodeTypeEdgeFeatureGraphCRF (typed nodes): their joint features against the
scores read off their potentials by explicit loops, the constrained imputation
``latent(x, y, w)`` and the (loss-augmented) inference against enumeration of
every admissible labelling, the k-means initialisation on data whose clusters are
known, the typed layout's round trips and the errors on bad input.
"""

import itertools

import numpy as np
import pytest

from skstruct.compat.pystruct.models import (
    EdgeFeatureLatentNodeCRF,
    GraphCRF,
    GridCRF,
    LatentDirectionalGridCRF,
    LatentGraphCRF,
    LatentGridCRF,
    LatentNodeCRF,
    NodeTypeEdgeFeatureGraphCRF,
)
from skstruct.compat.pystruct.models.latent_grid_crf import kmeans_init
from skstruct.compat.pystruct.models.typed_crf import InconsistentLabel
from skstruct.models import StructuredModel

# trees, so that the default inference is exact and comparable with enumeration
TREE5 = np.array([[0, 1], [1, 2], [1, 3], [3, 4]])


def score_from_potentials(unary, pairwise, edges, h):
    """The score of labelling ``h`` read off the potentials by explicit loops."""
    s = sum(unary[i, h[i]] for i in range(len(h)))
    for e, (i, j) in enumerate(edges):
        table = pairwise if np.ndim(pairwise) == 2 else pairwise[e]
        s += table[h[i], h[j]]
    return s


def best_by_enumeration(model, x, w, candidates, extra=None):
    best, best_score = None, -np.inf
    for h in candidates:
        h = np.array(h)
        s = w @ model.joint_feature(x, h) + (extra(h) if extra else 0.0)
        if s > best_score + 1e-12:
            best, best_score = h, s
    return best, best_score


# -- LatentGraphCRF ------------------------------------------------------------------


def graph_problem(seed, n_labels=2, spl=(2, 2), n_features=3):
    rng = np.random.default_rng(seed)
    crf = LatentGraphCRF(n_labels=n_labels, n_features=n_features,
                         n_states_per_label=list(spl))
    x = (rng.normal(size=(5, n_features)), TREE5)
    w = rng.normal(size=crf.size_joint_feature)
    return crf, x, w, rng


def test_latent_graph_is_a_structured_model_and_sizes():
    crf = LatentGraphCRF(n_labels=3, n_features=4, n_states_per_label=[1, 2, 3])
    assert isinstance(crf, StructuredModel)
    assert crf.n_states == 6
    assert crf.size_joint_feature == 6 * 4 + 6 * 7 // 2
    assert crf.label_from_latent(np.arange(6)).tolist() == [0, 1, 1, 2, 2, 2]
    # the parameter is kept as given
    assert crf.n_states_per_label == [1, 2, 3]


@pytest.mark.parametrize("model", [LatentGraphCRF(n_labels=2, n_features=2),
                                   LatentGridCRF(n_labels=2, n_features=2),
                                   LatentDirectionalGridCRF(n_labels=2, n_features=2),
                                   LatentNodeCRF(n_labels=2, n_features=2),
                                   EdgeFeatureLatentNodeCRF(n_labels=2, n_features=2)])
def test_latent_models_claim_no_native_equivalent(model):
    # the base models' built-in equivalents learn labels, not hidden states
    X = [(np.zeros((2, 2)), np.array([[0, 1]]))]
    assert model._skstruct_native(X, [np.array([0, 1])]) is None


@pytest.mark.parametrize("seed", range(3))
def test_latent_graph_joint_feature_matches_potentials(seed):
    crf, x, w, rng = graph_problem(seed)
    unary = crf._get_unary_potentials(x, w)
    pairwise = crf._get_pairwise_potentials(x, w)
    for _ in range(5):
        h = rng.integers(crf.n_states, size=5)
        assert np.isclose(w @ crf.joint_feature(x, h),
                          score_from_potentials(unary, pairwise, x[1], h))


@pytest.mark.parametrize("seed", range(4))
def test_latent_graph_latent_is_best_consistent_states(seed):
    crf, x, w, rng = graph_problem(seed, n_labels=2, spl=(2, 3))
    y = rng.integers(2, size=5)
    h = crf.latent(x, y, w)
    assert crf.label_from_latent(h).tolist() == y.tolist()
    states = [np.flatnonzero(crf.label_from_latent(np.arange(crf.n_states)) == label)
              for label in y]
    _, best = best_by_enumeration(crf, x, w, itertools.product(*states))
    assert np.isclose(w @ crf.joint_feature(x, h), best)


@pytest.mark.parametrize("seed", range(4))
def test_latent_graph_loss_augmented_inference_by_enumeration(seed):
    crf, x, w, rng = graph_problem(seed)
    h_true = rng.integers(crf.n_states, size=5)
    h_hat, energy = crf.loss_augmented_inference(x, h_true, w, return_energy=True)
    _, best = best_by_enumeration(crf, x, w, itertools.product(range(crf.n_states), repeat=5),
                                  extra=lambda h: crf.loss(h_true, h))
    got = w @ crf.joint_feature(x, h_hat) + crf.loss(h_true, h_hat)
    assert np.isclose(got, best)
    assert np.isclose(-energy, best)
    # the loss compares labels: states of the same label cost nothing
    same_label = crf._first_state[crf.label_from_latent(h_true)]
    assert crf.loss(h_true, same_label) == 0


def test_latent_graph_inference_returns_states():
    crf, x, w, _ = graph_problem(0)
    h = crf.inference(x, w)
    _, best = best_by_enumeration(crf, x, w, itertools.product(range(crf.n_states), repeat=5))
    assert np.isclose(w @ crf.joint_feature(x, h), best)


def test_latent_graph_initialize_and_errors():
    rng = np.random.default_rng(0)
    X = [(rng.normal(size=(4, 3)), TREE5[:3]) for _ in range(2)]
    Y = [np.array([0, 1, 2, 1]), np.array([2, 2, 0, 1])]
    crf = LatentGraphCRF(n_states_per_label=2)
    crf.initialize(X, Y)
    assert (crf.n_labels, crf.n_features, crf.n_states) == (3, 3, 6)
    with pytest.raises(ValueError, match="Expected 2 labels, got label 2 in sample 0"):
        LatentGraphCRF(n_labels=2).initialize(X, Y)
    with pytest.raises(ValueError, match="Expected 4 features, got 3"):
        LatentGraphCRF(n_features=4).initialize(X, Y)
    with pytest.raises(ValueError, match="one entry per label"):
        LatentGraphCRF(n_labels=3, n_features=3, n_states_per_label=[1, 2])
    crf = LatentGraphCRF(n_labels=2, n_features=3)
    with pytest.raises(ValueError, match="labels must lie in"):
        crf.latent(X[0], np.array([0, 1, 2, 0]), np.zeros(crf.size_joint_feature))


def test_latent_graph_continuous_loss_sums_states_per_label():
    crf = LatentGraphCRF(n_labels=2, n_features=1, n_states_per_label=[1, 2])
    h = np.array([0, 2])
    marginals = np.array([[0.5, 0.25, 0.25], [0.1, 0.6, 0.3]])
    # node 0 keeps 0.5 on label 0; node 1 keeps 0.9 on label 1
    assert np.isclose(crf.continuous_loss(h, marginals), 0.5 + 0.1)


# -- k-means initialisation ----------------------------------------------------------


def test_kmeans_init_recovers_known_sub_clusters():
    rng = np.random.default_rng(0)
    X, Y, truth = [], [], []
    for _ in range(4):
        y = rng.integers(2, size=12)
        sub = rng.integers(2, size=12)
        # two well-separated clusters of features inside each label
        x = np.column_stack([10.0 * sub + rng.normal(scale=0.1, size=12),
                             rng.normal(scale=0.1, size=12)])
        X.append(x)
        Y.append(y)
        truth.append(2 * y + sub)
    edges = [[np.zeros((0, 2), dtype=int)] for _ in X]
    H = np.concatenate(kmeans_init(X, Y, edges, n_labels=2, n_states_per_label=[2, 2]))
    truth, Yc = np.concatenate(truth), np.concatenate(Y)
    assert (H // 2 == Yc).all()
    # the same partition as the truth within each label, up to renaming the states
    for label in (0, 1):
        mine = Yc == label
        pairs = set(zip(H[mine].tolist(), truth[mine].tolist()))
        assert len(pairs) == 2
    # one state per label: the labels themselves
    H1 = kmeans_init(X, Y, edges, n_labels=2, n_states_per_label=[1, 1])
    assert all((h == y).all() for h, y in zip(H1, Y))


def test_kmeans_init_uses_neighbour_labels():
    # identical features; the state separates nodes by their neighbours' labels
    x = np.zeros((6, 1))
    y = np.array([0, 0, 1, 1, 1, 1])
    edges = np.array([[0, 2], [1, 3], [4, 5]])
    H = kmeans_init([x], [y], [[edges]], n_labels=2, n_states_per_label=[1, 2])[0]
    assert H[:2].tolist() == [0, 0]
    assert H[2] == H[3] and H[4] == H[5] and H[2] != H[4]


def test_latent_grid_init_latent_shapes():
    rng = np.random.default_rng(1)
    X = rng.normal(size=(3, 4, 5, 2))
    Y = (X[..., 0] > 0).astype(int)
    crf = LatentGridCRF(n_labels=2, n_features=2, n_states_per_label=[1, 3])
    H = crf.init_latent(X, Y)
    assert H.shape == Y.shape
    assert (crf.label_from_latent(H) == Y).all()
    d = LatentDirectionalGridCRF(n_labels=2, n_features=2, n_states_per_label=1)
    assert (d.init_latent(X, Y) == Y).all()


# -- grids ---------------------------------------------------------------------------


def grid_edges(h, w):
    idx = np.arange(h * w).reshape(h, w)
    return np.vstack([np.column_stack([idx[:, :-1].ravel(), idx[:, 1:].ravel()]),
                      np.column_stack([idx[:-1].ravel(), idx[1:].ravel()])])


def test_latent_grid_matches_latent_graph_on_the_same_graph():
    rng = np.random.default_rng(2)
    x = rng.normal(size=(1, 4, 2))  # a chain: exact inference
    y = rng.integers(2, size=(1, 4))
    grid = LatentGridCRF(n_labels=2, n_features=2, n_states_per_label=2)
    graph = LatentGraphCRF(n_labels=2, n_features=2, n_states_per_label=2)
    xg = (x.reshape(-1, 2), grid_edges(1, 4))
    w = rng.normal(size=grid.size_joint_feature)
    h = grid.latent(x, y, w)
    assert h.shape == (1, 4)
    assert (h.ravel() == graph.latent(xg, y.ravel(), w)).all()
    assert (grid.inference(x, w).ravel() == graph.inference(xg, w)).all()
    assert np.allclose(grid.joint_feature(x, h), graph.joint_feature(xg, h.ravel()))
    la = grid.loss_augmented_inference(x, h, w)
    assert la.shape == (1, 4)
    assert (la.ravel() == graph.loss_augmented_inference(xg, h.ravel(), w)).all()


def test_one_state_per_label_is_the_grid_crf():
    rng = np.random.default_rng(6)
    X = rng.normal(size=(3, 2, 3, 2))
    Y = rng.integers(3, size=(3, 2, 3))
    latent = LatentGridCRF(n_states_per_label=1)
    latent.initialize(X, Y)
    grid = GridCRF()
    grid.initialize(X, Y)
    assert latent.size_joint_feature == grid.size_joint_feature
    w = rng.normal(size=grid.size_joint_feature)
    for x, y in zip(X, Y):
        assert np.allclose(latent.joint_feature(x, y), grid.joint_feature(x, y))
        assert (latent.inference(x, w) == grid.inference(x, w)).all()
        assert (latent.loss_augmented_inference(x, y, w)
                == grid.loss_augmented_inference(x, y, w)).all()
        assert (latent.latent(x, y, w) == y).all()
    assert (np.array(latent.init_latent(X, Y)) == Y).all()


def test_latent_directional_grid_latent_by_enumeration():
    rng = np.random.default_rng(3)
    x = rng.normal(size=(1, 4, 2))
    y = np.array([[0, 1, 1, 0]])
    crf = LatentDirectionalGridCRF(n_labels=2, n_features=2, n_states_per_label=2)
    assert crf.size_joint_feature == 4 * 2 + 2 * 16
    w = rng.normal(size=crf.size_joint_feature)
    h = crf.latent(x, y, w)
    assert (crf.label_from_latent(h) == y).all()
    states = [[2 * label, 2 * label + 1] for label in y.ravel()]
    _, best = best_by_enumeration(crf, x, w, (np.array(c).reshape(1, 4)
                                              for c in itertools.product(*states)))
    assert np.isclose(w @ crf.joint_feature(x, h), best)


# -- LatentNodeCRF -------------------------------------------------------------------

# visible nodes 0..3, hidden nodes 4, 5: a tree
NODE_EDGES = np.array([[0, 1], [0, 4], [2, 4], [3, 5], [4, 5]])


def node_problem(seed, latent_node_features=False):
    rng = np.random.default_rng(seed)
    crf = LatentNodeCRF(n_labels=2, n_features=2, n_hidden_states=3,
                        latent_node_features=latent_node_features)
    n_rows = 6 if latent_node_features else 4
    x = (rng.normal(size=(n_rows, 2)), NODE_EDGES, 2)
    w = rng.normal(size=crf.size_joint_feature)
    return crf, x, w, rng


def admissible(n_visible, n_hidden, n_labels, n_hidden_states, y=None):
    visible = [[v] for v in y] if y is not None else [range(n_labels)] * n_visible
    hidden = [range(n_labels, n_labels + n_hidden_states)] * n_hidden
    return itertools.product(*visible, *hidden)


@pytest.mark.parametrize("lnf", [False, True])
def test_latent_node_joint_feature_matches_potentials(lnf):
    crf, x, w, rng = node_problem(0, lnf)
    assert crf.size_joint_feature == (5 if lnf else 2) * 2 + 5 * 6 // 2
    unary = crf._get_unary_potentials(x, w)
    assert np.isneginf(unary[:4, 2:]).all() and np.isneginf(unary[4:, :2]).all()
    pairwise = crf._get_pairwise_potentials(x, w)
    assert np.allclose(pairwise, pairwise.T)
    for h in itertools.islice(admissible(4, 2, 2, 3), 0, None, 7):
        h = np.array(h)
        assert np.isclose(w @ crf.joint_feature(x, h),
                          score_from_potentials(unary, pairwise, NODE_EDGES, h))


@pytest.mark.parametrize("seed", range(3))
def test_latent_node_latent_and_inference_by_enumeration(seed):
    crf, x, w, rng = node_problem(seed)
    y = rng.integers(2, size=4)
    h = crf.latent(x, y, w)
    assert h[:4].tolist() == y.tolist()
    assert crf.label_from_latent(h).tolist() == y.tolist()
    _, best = best_by_enumeration(crf, x, w, admissible(4, 2, 2, 3, y))
    assert np.isclose(w @ crf.joint_feature(x, h), best)

    h_hat, energy = crf.inference(x, w, return_energy=True)
    _, best = best_by_enumeration(crf, x, w, admissible(4, 2, 2, 3))
    assert np.isclose(w @ crf.joint_feature(x, h_hat), best)
    assert np.isclose(-energy, best)

    h_la = crf.loss_augmented_inference(x, h, w)
    _, best = best_by_enumeration(crf, x, w, admissible(4, 2, 2, 3),
                                  extra=lambda g: crf.loss(h, g))
    assert np.isclose(w @ crf.joint_feature(x, h_la) + crf.loss(h, h_la), best)


def test_latent_node_without_hidden_nodes_is_a_graph_crf():
    rng = np.random.default_rng(4)
    f, y = rng.normal(size=(5, 3)), rng.integers(2, size=5)
    latent = LatentNodeCRF(n_labels=2, n_features=3, n_hidden_states=0)
    graph = GraphCRF(n_states=2, n_features=3)
    assert latent.size_joint_feature == graph.size_joint_feature
    assert np.allclose(latent.joint_feature((f, TREE5, 0), y), graph.joint_feature((f, TREE5), y))
    w = rng.normal(size=graph.size_joint_feature)
    assert (latent.inference((f, TREE5, 0), w) == graph.inference((f, TREE5), w)).all()
    assert (latent.latent((f, TREE5, 0), y, w) == y).all()
    with pytest.raises(ValueError, match="2 hidden nodes but n_hidden_states=0"):
        latent.inference((f, TREE5, 2), w)


def test_latent_node_initialize_and_errors():
    x = (np.zeros((3, 2)), np.array([[0, 3], [1, 3]]), 1)
    crf = LatentNodeCRF(n_hidden_states=2)
    crf.initialize([x], [np.array([0, 2, 1])])
    assert (crf.n_labels, crf.n_states, crf.n_features) == (3, 5, 2)
    with pytest.raises(ValueError, match="Expected 2 labels, got label 2 in sample 0"):
        LatentNodeCRF(n_labels=2).initialize([x], [np.array([0, 2, 1])])
    with pytest.raises(ValueError, match="sample 0: labels of shape"):
        LatentNodeCRF().initialize([x], [np.array([0, 1])])
    crf = LatentNodeCRF(n_labels=2, n_features=2)
    bad = (np.zeros((3, 2)), np.array([[0, 4]]), 1)
    with pytest.raises(ValueError, match="edges must join nodes 0..3"):
        crf.inference(bad, np.zeros(crf.size_joint_feature))


def test_latent_node_init_latent_groups_hidden_nodes_by_neighbours():
    # hidden nodes 4, 5 see only label 0, hidden nodes 6, 7 only label 1
    x = (np.zeros((4, 1)), np.array([[0, 4], [1, 5], [2, 6], [3, 7]]), 4)
    y = np.array([0, 0, 1, 1])
    crf = LatentNodeCRF(n_labels=2, n_features=1, n_hidden_states=2)
    h = crf.init_latent([x], [y])[0]
    assert h[:4].tolist() == y.tolist()
    assert set(h[4:]) <= {2, 3}
    assert h[4] == h[5] and h[6] == h[7] and h[4] != h[6]


def test_edge_feature_latent_node_by_enumeration():
    rng = np.random.default_rng(5)
    crf = EdgeFeatureLatentNodeCRF(n_labels=2, n_features=2, n_edge_features=2,
                                   n_hidden_states=2)
    assert crf.size_joint_feature == 2 * 2 + 2 * 16
    ef = rng.normal(size=(len(NODE_EDGES), 2))
    x = (rng.normal(size=(4, 2)), NODE_EDGES, ef, 2)
    w = rng.normal(size=crf.size_joint_feature)
    unary = crf._get_unary_potentials(x, w)
    pairwise = crf._get_pairwise_potentials(x, w)
    assert pairwise.shape == (len(NODE_EDGES), 4, 4)
    for h in admissible(4, 2, 2, 2):
        h = np.array(h)
        assert np.isclose(w @ crf.joint_feature(x, h),
                          score_from_potentials(unary, pairwise, NODE_EDGES, h))
    y = np.array([1, 0, 0, 1])
    h = crf.latent(x, y, w)
    _, best = best_by_enumeration(crf, x, w, admissible(4, 2, 2, 2, y))
    assert np.isclose(w @ crf.joint_feature(x, h), best)
    with pytest.raises(ValueError, match="share"):
        EdgeFeatureLatentNodeCRF(n_edge_features=2, symmetric_edge_features=[0],
                                 antisymmetric_edge_features=[0])
    with pytest.raises(ValueError, match="edge features of size 1, but expected 2"):
        crf.joint_feature((x[0], NODE_EDGES, ef[:, :1], 2), h)


# -- NodeTypeEdgeFeatureGraphCRF -----------------------------------------------------


def typed_problem(seed):
    """Two types (2 and 3 labels, 2 and 1 features), a tree over 4 nodes."""
    rng = np.random.default_rng(seed)
    crf = NodeTypeEdgeFeatureGraphCRF(2, [2, 3], [2, 1], np.array([[1, 2], [2, 0]]))
    node_f = [rng.normal(size=(2, 2)), rng.normal(size=(2, 1))]
    edges = [np.array([[0, 1]]), np.array([[0, 0], [1, 1]]), None, None]
    edge_f = [rng.normal(size=(1, 1)), rng.normal(size=(2, 2)), None, None]
    x = (node_f, edges, edge_f)
    w = rng.normal(size=crf.size_joint_feature)
    return crf, x, w, rng


def typed_score(crf, x, w, y):
    """The score of flat labelling ``y`` by explicit loops over nodes and edges."""
    unary = crf._get_unary_potentials(x, w)
    pairwise = crf._get_pairwise_potentials(x, w)
    offsets = np.cumsum([0] + [len(f) for f in x[0]])
    starts = np.cumsum([0] + crf.l_n_states)
    s = 0.0
    for t in range(crf.n_types):
        for i in range(len(x[0][t])):
            s += unary[t][i, y[offsets[t] + i] - starts[t]]
    for p, (t1, t2) in enumerate(itertools.product(range(2), repeat=2)):
        if x[1][p] is None:
            continue
        for e, (i, j) in enumerate(x[1][p]):
            s += pairwise[p][e, y[offsets[t1] + i] - starts[t1], y[offsets[t2] + j] - starts[t2]]
    return s


def typed_labellings():
    return (np.array(c) for c in itertools.product([0, 1], [0, 1], [2, 3, 4], [2, 3, 4]))


def test_node_type_sizes_and_layout():
    crf, x, w, _ = typed_problem(0)
    assert crf.size_unaries == 2 * 2 + 3 * 1
    assert crf.size_pairwise == 1 * 4 + 2 * 6 + 2 * 6
    assert crf.size_joint_feature == crf.size_unaries + crf.size_pairwise
    assert isinstance(crf, StructuredModel)
    # the unary weights of type 1 follow type 0's
    w = np.zeros(crf.size_joint_feature)
    w[4:7] = [1.0, 2.0, 3.0]
    assert np.allclose(crf._get_unary_potentials(x, w)[1], x[0][1] * [1.0, 2.0, 3.0])
    assert crf._get_pairwise_potentials(x, w)[3].size == 0


@pytest.mark.parametrize("seed", range(3))
def test_node_type_joint_feature_and_inference_by_enumeration(seed):
    crf, x, w, rng = typed_problem(seed)
    for y in typed_labellings():
        assert np.isclose(w @ crf.joint_feature(x, y), typed_score(crf, x, w, y))
    y_hat, energy = crf.inference(x, w, return_energy=True)
    _, best = best_by_enumeration(crf, x, w, typed_labellings())
    assert np.isclose(w @ crf.joint_feature(x, y_hat), best)
    assert np.isclose(-energy, best)
    y = np.array([1, 0, 4, 2])
    y_la = crf.loss_augmented_inference(x, y, w)
    _, best = best_by_enumeration(crf, x, w, typed_labellings(),
                                  extra=lambda g: crf.loss(y, g))
    assert np.isclose(w @ crf.joint_feature(x, y_la) + crf.loss(y, y_la), best)


def test_node_type_flatten_round_trip():
    crf, x, _, _ = typed_problem(0)
    per_type = [np.array([1, 0]), np.array([2, 0])]
    flat = crf.flattenY(per_type)
    assert flat.tolist() == [1, 0, 4, 2]
    assert all((a == b).all() for a, b in zip(crf.unflattenY(x, flat), per_type))
    with pytest.raises(ValueError, match="does not match the total number of nodes"):
        crf.unflattenY(x, flat[:3])


def test_node_type_errors():
    with pytest.raises(ValueError, match="symmetric"):
        NodeTypeEdgeFeatureGraphCRF(2, [2, 3], [4, 5], np.array([[1, 2], [99, 4]]))
    with pytest.raises(ValueError, match="shape"):
        NodeTypeEdgeFeatureGraphCRF(2, [2, 3], [4, 5], np.array([[1, 2, 3], [2, 3, 4]]))
    with pytest.raises(ValueError, match="per node type"):
        NodeTypeEdgeFeatureGraphCRF(2, [2, 3], [4, 5, 3], np.array([[1, 2], [2, 4]]))
    crf, x, w, _ = typed_problem(0)
    with pytest.raises(InconsistentLabel, match="labels of type 1 start at 2"):
        crf.joint_feature(x, np.array([0, 1, 1, 2]))
    with pytest.raises(ValueError, match="Expected 1 label for each of the 4 nodes"):
        crf.initialize(x, np.array([0, 1, 2]))
    bad_edges = [np.array([[0, 2]])] + list(x[1][1:])
    with pytest.raises(ValueError, match="non-existing node index: type 0 to type 0"):
        crf.inference((x[0], bad_edges, x[2]), w)
    bad_f = [x[2][0], np.ones((2, 3)), None, None]
    with pytest.raises(ValueError, match="Types 0 x 1: bad number of edge features"):
        crf.inference((x[0], x[1], bad_f), w)
    with pytest.raises(ValueError, match="sample 1: "):
        crf.initialize([x, (x[0], bad_edges, x[2])])
