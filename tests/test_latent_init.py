"""LatentStructuredSVM's clustered initial states (latent_init="kmeans", the default for the
hidden-variable models)."""

import warnings

import numpy as np
import pytest
from sklearn.datasets import load_digits

from skstruct import LatentStructuredSVM, StructuredSVM
from skstruct.models import ChainModel, GraphModel, HiddenNodesModel, HiddenStatesModel


def _initial_states(model, X, y, latent_init="kmeans", random_state=0):
    est = LatentStructuredSVM(latent_init=latent_init, random_state=random_state)
    fitted = model.fit(X, y)
    design, _, codes, allowed = est._constraints(fitted, X, y)
    H = est._initial(design, allowed, None, np.random.RandomState(random_state), fitted, codes)
    return H, codes, allowed


def _two_blobs_per_label(seed=0, n=40):
    """Single-node samples; label 0 lives in two far apart blobs, label 1 in one."""
    rng = np.random.RandomState(seed)
    centres = np.array([[0.0, 0.0], [10.0, 0.0], [0.0, 10.0]])
    which = rng.randint(3, size=n)
    feats = centres[which] + 0.3 * rng.normal(size=(n, 2))
    X = [(f[None, :], np.zeros((0, 2), np.int64)) for f in feats]
    y = [np.array([int(w == 2)]) for w in which]
    return X, y, which


def test_kmeans_splits_each_label_by_its_features():
    X, y, which = _two_blobs_per_label()
    model = HiddenStatesModel(GraphModel(), n_states_per_label=[2, 3])
    H, codes, allowed = _initial_states(model, X, y)
    assert allowed[np.arange(len(H)), H].all()
    # label 0 owns states 0 and 1: one per blob
    zero = codes == 0
    assert set(H[zero].tolist()) == {0, 1}
    for blob in (0, 1):
        assert len(set(H[zero & (which == blob)].tolist())) == 1
    assert H[which == 0][0] != H[which == 1][0]
    # label 1 (states 2..4) is one blob: split three ways all the same, within its states
    assert set(H[codes == 1].tolist()) <= {2, 3, 4}
    # reproducible under random_state
    again, _, _ = _initial_states(model, X, y)
    np.testing.assert_array_equal(H, again)


def test_neighbours_labels_separate_nodes_with_equal_features():
    # a chain 0 0 0 1 1 1 with constant features: the label-0 nodes next to a 1 differ
    # from the others only by their neighbours' labels
    X = [np.ones((6, 1))] * 4
    y = [np.array([0, 0, 0, 1, 1, 1])] * 4
    model = HiddenStatesModel(ChainModel(), n_states_per_label=2)
    H, codes, _ = _initial_states(model, X, y)
    H = H.reshape(4, 6)
    assert (H == H[0]).all()
    assert H[0, 0] == H[0, 1] != H[0, 2]
    assert H[0, 4] == H[0, 5] != H[0, 3]


def test_fewer_nodes_than_sub_states():
    X = [np.array([[0.0], [1.0], [2.0]])]
    y = [np.array([0, 1, 1])]
    model = HiddenStatesModel(ChainModel(), n_states_per_label=4)
    H, _, allowed = _initial_states(model, X, y)
    assert H[0] in range(4) and H[1] != H[2] and set(H[1:].tolist()) <= set(range(4, 8))
    assert allowed[np.arange(3), H].all()
    # duplicate rows: as many sub-states used as the data allow, without an error
    X = [np.zeros((5, 1))]
    y = [np.zeros(5, np.int64)]
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        H, _, _ = _initial_states(HiddenStatesModel(ChainModel(), n_states_per_label=3), X, y)
    assert set(H.tolist()) <= {0, 1, 2}


def test_hidden_nodes_clustered_by_their_neighbours_labels():
    # two visible nodes per sample, each linked to its own hidden node; the hidden node
    # of a label-0 node and that of a label-1 node start in different states
    X, y = [], []
    for k in range(6):
        X.append((np.array([[1.0], [1.0]]), np.array([[0, 2], [1, 3]]), 2))
        y.append(np.array([0, 1]) if k % 2 else np.array([1, 0]))
    model = HiddenNodesModel(n_hidden_states=2)
    H, codes, allowed = _initial_states(model, X, y)
    H = H.reshape(6, 4)
    assert allowed[np.arange(24), H.ravel()].all()
    np.testing.assert_array_equal(H[:, :2], np.array(y))
    hidden_of_zero = [H[k, 2 + int(np.flatnonzero(y[k] == 0)[0])] for k in range(6)]
    hidden_of_one = [H[k, 2 + int(np.flatnonzero(y[k] == 1)[0])] for k in range(6)]
    assert len(set(hidden_of_zero)) == 1 and len(set(hidden_of_one)) == 1
    assert hidden_of_zero[0] != hidden_of_one[0] and {hidden_of_zero[0], hidden_of_one[0]} == {2, 3}


def test_defaults_and_refusal():
    assert LatentStructuredSVM().latent_init == "auto"
    X = [np.ones((3, 1))]
    y = [np.array([0, None, 1], dtype=object)]
    with pytest.raises(ValueError, match="latent_init='kmeans' clusters the sub-states"):
        _initial_states(ChainModel(), X, y)
    # "auto" on a plain model: the unknown labels drawn at random
    H, codes, allowed = _initial_states(ChainModel(), X, y, latent_init="auto")
    assert allowed[np.arange(3), H].all()


def test_kmeans_start_learns_odd_and_even_digits_at_least_as_well_as_random():
    # the latent SVM as a CRF of one node: odd against even digits, five sub-states each
    d = load_digits()
    rng = np.random.RandomState(0)
    idx = rng.permutation(d.target.shape[0])[:600]
    X = [(x[None, :] / 16.0, np.zeros((0, 2), np.int64)) for x in d.data[idx]]
    y = [np.array([t % 2]) for t in d.target[idx]]
    scores = {}
    for init in ("kmeans", "random"):
        scores[init] = []
        for seed in range(3):
            svm = StructuredSVM(model=HiddenStatesModel(GraphModel(), n_states_per_label=5),
                                C=1.0, max_iter=30)
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")
                lat = LatentStructuredSVM(estimator=svm, max_iter=3, latent_init=init,
                                          random_state=seed).fit(X[:300], y[:300])
            scores[init].append(lat.score(X[300:], y[300:]))
    assert np.mean(scores["kmeans"]) >= np.mean(scores["random"])
    assert min(scores["kmeans"]) > 0.93
