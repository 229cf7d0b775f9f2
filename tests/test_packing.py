"""The data model: accepted formats, packing, label encoding, and every input error."""

import numpy as np
import pytest
import scipy.sparse as sp

from skstruct._core._packing import check_y, encode_labels, fit_classes, pack_X


def chains(lengths, n_features=3, seed=0):
    rng = np.random.default_rng(seed)
    return [rng.normal(size=(n, n_features)) for n in lengths]


def test_chain_packing_offsets_and_edges():
    p = pack_X(chains([3, 0, 2]))
    assert p.kind == "chain"
    assert p.batch.node_offsets.tolist() == [0, 3, 3, 5]
    assert p.batch.edge_offsets.tolist() == [0, 2, 2, 3]
    assert p.batch.edges.tolist() == [[0, 1], [1, 2], [3, 4]]
    assert p.features.shape == (5, 3) and p.features.flags.c_contiguous
    assert p.batch.is_chain.all()


def test_graph_packing_makes_edges_global_and_keeps_edge_features():
    X = [(np.ones((3, 2)), np.array([[0, 1], [2, 1]]), np.ones((2, 4))),
         (np.zeros((2, 2)), np.array([[1, 0]]), np.zeros((1, 4)))]
    p = pack_X(X)
    assert p.kind == "graph"
    assert p.batch.edges.tolist() == [[0, 1], [2, 1], [4, 3]]
    assert p.edge_features.shape == (3, 4) and p.n_edge_features == 4
    assert p.batch.is_forest.all() and not p.batch.is_chain.any()


def test_sparse_node_features_stay_sparse():
    X = [sp.random(4, 10**6, density=1e-5, format="csr", random_state=0),
         sp.random(3, 10**6, density=1e-5, format="coo", random_state=1)]
    p = pack_X(X)
    assert sp.issparse(p.features) and p.features.format == "csr"
    assert p.features.shape == (7, 10**6)


def test_split_inverts_packing():
    X = chains([2, 0, 3])
    p = pack_X(X)
    parts = p.split(np.arange(5))
    assert [a.tolist() for a in parts] == [[0, 1], [], [2, 3, 4]]


def test_string_labels_are_encoded_and_unseen_labels_get_minus_one():
    X = chains([2, 2])
    y = [np.array(["B-NP", "I-NP"]), np.array(["O", "B-NP"])]
    labels = check_y(y, pack_X(X))
    classes = fit_classes(labels)
    assert classes.tolist() == ["B-NP", "I-NP", "O"]
    assert encode_labels(labels, classes).tolist() == [0, 1, 2, 0]
    assert encode_labels(np.array(["B-VP", "O"]), classes).tolist() == [-1, 2]
    assert encode_labels(np.array([3, 0]), classes).tolist() == [-1, -1]


@pytest.mark.parametrize("X, message", [
    ([np.ones((2, 3)), np.ones((2, 4))], "sample 1 has 4 node features but sample 0 has 3"),
    ([np.ones((2, 3)), np.ones(3)], "sample 1: node features must be 2-D"),
    ([np.ones((2, 3)), np.array([[0, np.nan, 1]])], "sample 1: node features contain NaN"),
    ([np.ones((2, 3)), np.array([[0, np.inf, 1]])], "sample 1: node features contain NaN"),
    ([np.array([["a", "b"]])], "sample 0: node features must be numeric"),
    ([(np.ones((3, 2)), np.array([[0, 1]])), (np.ones((3, 2)), np.array([[0, 3]]))],
     r"sample 1: edges\[0\] = \[0, 3\] is out of range"),
    ([(np.ones((3, 2)), np.array([[0, 1]])), (np.ones((3, 2)), np.array([[-1, 0]]))],
     "sample 1: edges.* out of range"),
    ([(np.ones((3, 2)), np.array([[2, 2]]))], r"sample 0: edges\[0\] = \[2, 2\] is a self-loop"),
    ([(np.ones((3, 2)), np.array([0, 1]))], r"sample 0: edges must have shape \(n_edges, 2\)"),
    ([(np.ones((3, 2)), np.array([[0.5, 1]]))], "sample 0: edges must hold integer"),
    ([(np.ones((3, 2)), np.array([[0, 1]]), np.ones((2, 1)))],
     "sample 0: 2 rows of edge features for 1 edges"),
    ([(np.ones((3, 2)), np.array([[0, 1]]), np.ones((1, 1))),
      (np.ones((3, 2)), np.array([[0, 1]]))], "sample 1 has 2 parts but sample 0 has 3"),
    ([(np.ones((3, 2)), np.array([[0, 1]]), np.ones((1, 1))),
      (np.ones((3, 2)), np.array([[0, 1]]), np.ones((1, 2)))],
     "sample 1 has 2 edge features, expected 1"),
    ([np.ones((2, 3)), (np.ones((2, 3)), np.array([[0, 1]]))], "sample 1 is a tuple"),
    ([(np.ones((2, 3)), np.array([[0, 1]])), np.ones((2, 3))], "sample 1 must be a tuple"),
    ([], "X holds no samples"),
    (np.ones((4, 3)), "got a single 2-D array"),
    ("abc", "X must be a list"),
])
def test_bad_X_raises_naming_the_sample(X, message):
    with pytest.raises(ValueError, match=message):
        pack_X(X)


def test_feature_count_checked_against_fit():
    with pytest.raises(ValueError, match="sample 0 has 3 node features but the data seen in fit"):
        pack_X(chains([2]), n_features=4)
    with pytest.raises(ValueError, match="chain format but the estimator was fitted on the graph"):
        pack_X(chains([2]), kind="graph")


@pytest.mark.parametrize("y, message", [
    ([np.array([0, 1])], "X has 2 samples but y has 1"),
    ([np.array([0, 1]), np.array([0, 1])], "sample 1: 2 labels for 3 nodes"),
    ([np.array([0, 1]), np.array([[0, 1, 2]])], "sample 1: labels must be 1-D"),
    ([np.array([0, 1.0]), np.array([0, np.nan, 1])], "sample 1: labels contain NaN"),
])
def test_bad_y_raises_naming_the_sample(y, message):
    with pytest.raises(ValueError, match=message):
        check_y(y, pack_X(chains([2, 3])))


def test_empty_sample_is_allowed_and_all_empty_has_no_classes():
    p = pack_X(chains([0, 0]))
    labels = check_y([np.array([], int), np.array([], int)], p)
    with pytest.raises(ValueError, match="no labels"):
        fit_classes(labels)


def test_mixed_label_types_raise():
    p = pack_X(chains([1, 1]))
    # object arrays of different label types are refused naming the sample
    with pytest.raises(ValueError, match="sample 1 has number labels but sample 0 has string"):
        check_y([np.array(["a"], object), np.array([1], object)], p)
    with pytest.raises(ValueError, match="one comparable type"):
        fit_classes(np.array(["a", 1], object))
