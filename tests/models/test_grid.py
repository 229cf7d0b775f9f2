"""GridModel: images as (height, width, n_features) samples, the same model as GraphModel on
the flattened pixels with grid edges."""

import warnings

import numpy as np
import pytest

from skstruct import StructuredSVM
from skstruct.datasets import make_blocks_multinomial
from skstruct.models import GraphModel, GridModel, auto_model, grid_edges


def _images(n=4, h=5, w=6, seed=0):
    X, y = make_blocks_multinomial(n, height=h, width=w, noise=1.0, random_state=seed)
    return X, y


def _flat(X, neighborhood=4, directions=False):
    out = []
    for x in X:
        h, w, F = x.shape
        edges, d = grid_edges(h, w, neighborhood, return_directions=True)
        sample = (x.reshape(h * w, F), edges)
        if directions:
            sample += (np.eye(d.max() + 1)[d],)
        out.append(sample)
    return out


def _fit(model, X, y):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return StructuredSVM(model=model, C=1.0, max_iter=4, check_every=1,
                             random_state=0).fit(X, y)


def test_grid_edges_order_and_directions():
    edges, d = grid_edges(2, 3, 8, return_directions=True)
    assert edges.tolist() == [[0, 1], [1, 2], [3, 4], [4, 5],   # right
                              [0, 3], [1, 4], [2, 5],           # down
                              [3, 1], [4, 2],                   # up-right
                              [0, 4], [1, 5]]                   # down-right
    assert d.tolist() == [0] * 4 + [1] * 3 + [2] * 2 + [3] * 2
    np.testing.assert_array_equal(grid_edges(2, 3), edges[:7])
    # every edge joins pixels of the 3x3 window, and no edge is repeated
    for h, w in ((1, 1), (1, 4), (4, 1), (3, 5)):
        e = grid_edges(h, w, 8)
        r, c = np.divmod(e, w)
        assert np.all(np.abs(r[:, 0] - r[:, 1]) <= 1) and np.all(np.abs(c[:, 0] - c[:, 1]) <= 1)
        assert len({tuple(sorted(p)) for p in e.tolist()}) == len(e)
        assert len(e) == h * (w - 1) + (h - 1) * w + 2 * (h - 1) * (w - 1)
    with pytest.raises(ValueError, match="neighborhood must be 4 or 8"):
        grid_edges(2, 2, 6)


@pytest.mark.parametrize("neighborhood, directional", [(4, False), (4, True), (8, True),
                                                       (8, False)])
def test_equals_graph_model_on_flattened_images(neighborhood, directional):
    X, y = _images()
    grid = _fit(GridModel(neighborhood=neighborhood, directional=directional), X, y)
    graph = _fit(GraphModel(), _flat(X, neighborhood, directional), [v.ravel() for v in y])
    np.testing.assert_allclose(grid.coef_, graph.coef_, rtol=0, atol=1e-8)
    np.testing.assert_allclose(grid.history_["primal"], graph.history_["primal"], atol=1e-8)
    n_tables = (2 if neighborhood == 4 else 4) if directional else 1
    assert grid.pairwise_coef_.shape == (n_tables, 3, 3)
    pred = grid.predict(X)
    assert isinstance(pred, list) and all(p.shape == (5, 6) for p in pred)
    flat = graph.predict(_flat(X, neighborhood, directional))
    for p, q in zip(pred, flat):
        np.testing.assert_array_equal(p.ravel(), q)
    assert grid.score(X, y) == graph.score(_flat(X, neighborhood, directional),
                                           [v.ravel() for v in y])


def test_joint_feature_matches_graph_model():
    X, y = _images(n=2)
    grid = GridModel(directional=True).fit(X, y)
    graph = GraphModel().fit(_flat(X, 4, True), [v.ravel() for v in y])
    np.testing.assert_array_equal(grid.joint_feature(X[1], y[1]),
                                  graph.joint_feature(_flat(X[1:], 4, True)[0], y[1].ravel()))
    assert grid.size_joint_feature == graph.size_joint_feature == 3 * 3 + 2 * 9


def test_images_of_different_sizes_round_trip():
    X1, y1 = _images(n=2, h=4, w=6, seed=1)
    X2, y2 = _images(n=2, h=3, w=5, seed=2)
    X, y = [X1[0], X2[0], X1[1], X2[1]], [y1[0], y2[0], y1[1], y2[1]]
    svm = _fit(GridModel(), X, y)
    assert [p.shape for p in svm.predict(X)] == [(4, 6), (3, 5), (4, 6), (3, 5)]
    assert 0.0 <= svm.score(X, y) <= 1.0
    assert [m.shape for m in svm.predict_marginals(X[:2])] == [(24, 3), (15, 3)]


def test_auto_recognises_images():
    X, y = _images(n=2)
    assert isinstance(auto_model(X, y), GridModel)
    assert isinstance(auto_model(list(X), list(y)), GridModel)
    assert isinstance(_fit("auto", X, y).model_, GridModel)
    assert isinstance(auto_model([x.reshape(-1, 3) for x in X], [v.ravel() for v in y]),
                      type(auto_model([np.zeros((2, 3))], [np.zeros(2)])))


def test_bad_shapes_name_the_sample():
    X, y = _images(n=3)
    model = GridModel()
    with pytest.raises(ValueError, match=r"sample 1: GridModel takes each sample as a \(height, "
                       r"width, n_features\) array, got shape \(30, 3\)"):
        model.fit([X[0], X[1].reshape(30, 3), X[2]], y)
    with pytest.raises(ValueError, match="4-D array"):
        model.fit(X[..., 0], y)
    with pytest.raises(ValueError, match=r"sample 2: labels must have the image's shape "
                       r"\(5, 6\) \(height, width\), got shape \(30,\)"):
        model.fit(X, [y[0], y[1], y[2].ravel()])
    with pytest.raises(ValueError, match="X has 3 samples but y has 2"):
        model.fit(X, y[:2])
    with pytest.raises(ValueError, match="sample 0: GridModel takes each sample .* got a tuple"):
        model.fit(_flat(X), y)
    bad = X.copy()
    bad[2, 1, 1, 0] = np.nan
    with pytest.raises(ValueError, match="sample 2: .*NaN"):
        model.fit(bad, y)
    fitted = model.fit(X, y)
    with pytest.raises(ValueError, match="features"):
        fitted.design(X[..., :2])
    with pytest.raises(ValueError, match="neighborhood must be 4 or 8"):
        GridModel(neighborhood=6).fit(X, y)


def test_hidden_states_over_a_grid_give_images_back():
    from skstruct import LatentStructuredSVM
    from skstruct.datasets import make_crosses
    from skstruct.models import HiddenStatesModel

    X, y = make_crosses(n_samples=6, noise=3, n_crosses=1, size=8, random_state=0)
    svm = StructuredSVM(model=HiddenStatesModel(GridModel(), n_states_per_label=[1, 2]),
                        C=1.0, max_iter=5)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        lat = LatentStructuredSVM(estimator=svm, max_iter=2, random_state=0).fit(X, y)
    assert [p.shape for p in lat.predict(X[:2])] == [(8, 8), (8, 8)]
    states = lat.predict_latent(X[:2])
    assert states[0].shape == (8, 8)
    np.testing.assert_array_equal(lat.model_.state_label_[states[0]], lat.predict(X[:1])[0])
    assert 0.0 <= lat.score(X, y) <= 1.0
    assert isinstance(HiddenStatesModel().fit(X, y).base_, GridModel)
