"""The synthetic grid tasks: shapes, labels, encodings, noise, determinism, bad arguments."""

import numpy as np
import pytest

from skstruct.datasets import (
    make_bars,
    make_blocks,
    make_blocks_multinomial,
    make_checker,
    make_checker_multinomial,
    make_crosses,
    make_easy,
    make_simple_2x2,
    make_square_with_hole,
)

# (generator, keyword arguments, n_features, labels it may use)
CASES = [
    (make_blocks, {}, 2, {0, 1}),
    (make_blocks_multinomial, {}, 3, {0, 1, 2}),
    (make_blocks_multinomial, {"n_classes": 4, "width": 13}, 4, {0, 1, 2, 3}),
    (make_checker, {}, 2, {0, 1}),
    (make_checker, {"field_size": 3, "height": 9, "width": 9}, 2, {0, 1}),
    (make_checker_multinomial, {}, 3, {0, 1, 2}),
    (make_easy, {}, 2, {0, 1}),
    (make_bars, {}, 3, {0, 1, 2}),
    (make_bars, {"separate_labels": False}, 2, {0, 1}),
    (make_square_with_hole, {}, 2, {0, 1}),
    (make_crosses, {}, 2, {0, 1}),
    (make_crosses, {"explicit": True, "size": 9}, 3, {0, 1, 2}),
    (make_simple_2x2, {}, 1, {0, 1}),
]


@pytest.mark.parametrize("make, kw, n_features, labels", CASES)
def test_shapes_labels_and_determinism(make, kw, n_features, labels):
    X, y = make(6, **kw, random_state=3)
    assert X.ndim == 4 and X.shape[:3] == y.shape and X.shape[0] == 6
    assert X.shape[3] == n_features
    assert X.dtype == np.float64 and y.dtype == np.int64
    assert set(np.unique(y).tolist()) <= labels
    assert np.isfinite(X).all()
    X2, y2 = make(6, **kw, random_state=np.random.RandomState(3))
    np.testing.assert_array_equal(X, X2)
    np.testing.assert_array_equal(y, y2)
    X3, _ = make(6, **kw, random_state=4)
    assert not np.array_equal(X, X3)


def test_blocks_encoding_and_noise_level():
    X, y = make_blocks(200, noise=0.0, random_state=0)
    assert (y[:, :, :6] == 0).all() and (y[:, :, 6:] == 1).all()
    clean = np.stack([1.0 - 2 * y, 2.0 * y - 1], axis=-1)
    np.testing.assert_array_equal(X, clean)
    Xn, yn = make_blocks(200, noise=1.5, random_state=0)
    np.testing.assert_array_equal(yn, y)
    residual = Xn - clean
    # one noise draw per pixel, shared (with opposite signs) by the two features
    np.testing.assert_allclose(residual[..., 0], -residual[..., 1])
    assert abs(residual[..., 1].std() - 1.5) < 0.02
    assert abs(residual[..., 1].mean()) < 0.02


def test_blocks_multinomial_stripes_and_independent_noise():
    _, y = make_blocks_multinomial(1, width=8, height=6, noise=0.0, random_state=0)
    assert y[0, 0].tolist() == [0, 0, 1, 1, 1, 1, 2, 2]
    _, y = make_blocks_multinomial(1, n_classes=4, width=12, random_state=0)
    assert y[0, 0].tolist() == [0, 0, 0, 1, 1, 1, 2, 2, 2, 3, 3, 3]
    X, y = make_blocks_multinomial(300, noise=0.5, random_state=1)
    residual = X - (y[..., None] == np.arange(3))
    assert abs(residual.std() - 0.5) < 0.01
    corr = np.corrcoef(residual.reshape(-1, 3).T)
    assert np.abs(corr[np.triu_indices(3, 1)]).max() < 0.02


def test_checker_fields():
    _, y = make_checker(1, height=3, width=3, random_state=0)
    assert y[0].tolist() == [[0, 1, 0], [1, 0, 1], [0, 1, 0]]
    _, y = make_checker(1, height=9, width=9, field_size=3, random_state=0)
    assert (y[0, :3, :3] == 0).all() and (y[0, :3, 3:6] == 1).all() and (y[0, 3:6, 3:6] == 0).all()
    X, y = make_checker_multinomial(1, height=4, width=4, noise=0.0, random_state=0)
    assert y[0].tolist() == [[0, 2, 0, 2], [2, 1, 2, 1], [0, 2, 0, 2], [2, 1, 2, 1]]
    assert X[0, 0, 0].tolist() == [1.0, -1.0, 0.0]
    assert X[0, 1, 1].tolist() == [-1.0, 1.0, 0.0]
    assert X[0, 0, 1].tolist() == [-1.0, -1.0, 0.0]


@pytest.mark.parametrize("make, kw, n_classes", [
    (make_easy, {}, 2), (make_bars, {}, 3), (make_square_with_hole, {}, 2),
    (make_crosses, {"noise": 6}, 2)])
def test_flip_noise_changes_at_most_noise_pixels(make, kw, n_classes):
    noise = kw.pop("noise", 5)
    X, y = make(40, noise=noise, **kw, random_state=0)
    # every observation is one-hot
    np.testing.assert_array_equal(X.sum(axis=-1), 1.0)
    observed = X.argmax(axis=-1)
    changed = (observed != y).sum(axis=(1, 2))
    assert changed.max() <= noise and changed.sum() > 0
    X0, y0 = make(40, noise=0, **kw, random_state=0)
    np.testing.assert_array_equal(X0.argmax(axis=-1), y0)


def test_shapes_of_the_drawn_objects():
    _, y = make_easy(30, noise=0, random_state=0)
    # one or two 3x3 boxes, never touching the top or left border
    assert set(y.sum(axis=(1, 2)).tolist()) <= set(range(9, 19))
    assert not y[:, 0].any() and not y[:, :, 0].any()
    _, y = make_square_with_hole(30, noise=0, random_state=0)
    for img in y:
        r, c = np.argwhere(img).min(axis=0)
        assert img[r:r + 3, c:c + 3].sum() == 8 and img[r + 1, c + 1] == 0
    _, y = make_crosses(30, n_crosses=1, size=8, noise=0, random_state=0)
    assert (y.sum(axis=(1, 2)) == 5).all()
    _, y = make_crosses(30, n_crosses=1, size=8, noise=0, explicit=True, random_state=0)
    assert ((y == 2).sum(axis=(1, 2)) == 1).all() and ((y == 1).sum(axis=(1, 2)) == 4).all()
    _, y = make_bars(30, noise=0, random_state=0)
    horizontal = y == 1
    # horizontal bars extend along rows, vertical ones along columns
    assert (horizontal[:, :, :-1] & horizontal[:, :, 1:]).any()
    assert ((y == 2)[:, :-1] & (y == 2)[:, 1:]).any()
    X, y = make_simple_2x2(30, n_flips=0, random_state=0)
    quadrants = y.reshape(30, 2, 2, 2, 2).sum(axis=(2, 4))
    assert (np.sort(quadrants.reshape(30, 4), axis=1) == [0, 0, 0, 4]).all()
    np.testing.assert_array_equal(X[..., 0], 2.0 * y - 1)


@pytest.mark.parametrize("call, match", [
    (lambda: make_blocks(0), "n_samples must be an int >= 1"),
    (lambda: make_blocks(2, noise=-1.0), "noise must be a finite number >= 0"),
    (lambda: make_blocks_multinomial(2, n_classes=1), "n_classes must be an int >= 2"),
    (lambda: make_blocks_multinomial(2, n_classes=5, width=4), "width must be at least"),
    (lambda: make_checker(2, field_size=0), "field_size must be an int >= 1"),
    (lambda: make_easy(2, noise=1.5), "noise must be an int >= 0"),
    (lambda: make_easy(2, size=4), "size must be more than box_size"),
    (lambda: make_crosses(2, size=4), "size must be at least 5"),
    (lambda: make_simple_2x2(2, n_flips=-1), "n_flips must be an int >= 0"),
])
def test_bad_arguments(call, match):
    with pytest.raises(ValueError, match=match):
        call()


def test_draws_follow_pystructs_generators():
    # values read off pystruct 0.3.2's generate_blocks_multinomial(noise=2, n_samples=10,
    # seed=1), generate_blocks(n_samples=3, seed=0), generate_crosses(n_samples=10, noise=5,
    # n_crosses=1, total_size=8, seed=0), generate_bars() and make_simple_2x2(seed=1,
    # n_samples=40): the same seed gives the same data, so that results compare
    X, _ = make_blocks_multinomial(10, noise=2.0, random_state=1)
    np.testing.assert_allclose(X[0, 0, 0], [4.2486907273, -1.2235128273, -1.0563435045],
                               atol=1e-9)
    np.testing.assert_allclose(X[9, 9, 11], [0.4515344063, -2.1781742928, 3.560116193],
                               atol=1e-9)
    X, _ = make_blocks(3, random_state=0)
    np.testing.assert_allclose(X[2, 3, 4], [1.1658109858, -1.1658109858], atol=1e-9)
    X, y = make_crosses(10, noise=5, n_crosses=1, size=8, random_state=0)
    assert y[0].sum() == 5 and np.argwhere(y[0])[0].tolist() == [1, 5]
    assert X[0, ..., 1].sum() == 8.0
    _, y = make_bars(random_state=0)
    assert np.argwhere(y[1]).tolist() == [[4, 4], [4, 5], [4, 6]] and (y[1][4, 4:7] == 1).all()
    X, _ = make_simple_2x2(40, random_state=1)
    assert X[0, ..., 0].tolist() == [[1, -1, -1, -1], [1, -1, -1, 1], [-1, -1, 1, 1],
                                     [-1, -1, 1, 1]]


def test_crosses_on_small_images_fall_back_where_no_corner_is_three_apart():
    # on a 9 x 9 image a cross with its corner at (3, 3) leaves no corner 3 apart in a
    # row or a column: the next cross goes anywhere (pystruct's plot_grid_crf data)
    _, y = make_crosses(50, size=9, n_crosses=2, noise=0, explicit=True, random_state=0)
    centres = [np.argwhere(img == 2) for img in y]
    assert all(1 <= len(c) <= 2 for c in centres)
    # some image met the fallback: its crosses' corners are not 3 apart, or they overlap
    close = [len(c) < 2 or (np.abs(c[0] - c[1]) <= 2).all() for c in centres]
    assert any(close)
    # elsewhere the corners are 3 apart in a row or a column, as drawn
    assert not all(close)
