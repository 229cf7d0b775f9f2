"""pystruct's data sets: its synthetic grid generators, with pystruct's signatures,
over :mod:`skstruct.datasets`, and its loaders' dictionary layouts.

The generators draw from ``seed`` as pystruct's did (``np.random.seed(seed)``
where pystruct seeded the global generator, the global generator itself where
it did not), so a script's repeated calls behave alike; the samples drawn are
skstruct's, not pystruct's bit for bit.
"""

import numpy as np

from skstruct import datasets as _sk

__all__ = ["generate_blocks", "generate_blocks_multinomial", "generate_bars",
           "generate_crosses_explicit", "binary", "multinomial", "load_scene",
           "make_simple_2x2", "generate_easy", "generate_crosses", "generate_checker",
           "generate_checker_multinomial", "generate_big_checker", "generate_square_with_hole",
           "load_letters", "load_snakes"]


def _rng(seed):
    """pystruct seeded numpy's global generator; ``None`` kept its current state."""
    if seed is not None:
        # scripts written for pystruct draw their own numbers after a generator call
        # and expect them reproducible, as pystruct's global reseeding made them
        np.random.seed(seed)  # noqa: NPY002
    return np.random.mtrand._rand


def _pystruct_y(y, dtype=np.int32):
    return np.asarray(y).astype(dtype)


def generate_blocks(n_samples=10, noise=1.5, seed=0):
    """Two vertical blocks on a 10x12 grid, features ``(-v, v)`` with Gaussian noise.

    Returns
    -------
    X : ndarray of shape (n_samples, 10, 12, 2)
    Y : ndarray of int32 of shape (n_samples, 10, 12)
    """
    X, y = _sk.make_blocks(n_samples, noise=noise, random_state=_rng(seed))
    return X, _pystruct_y(y)


def generate_checker(n_samples=10, noise=1.5):
    """A 11x13 checkerboard of single pixels observed through Gaussian noise,
    features ``(-v, 0)``.

    Returns
    -------
    X : ndarray of shape (n_samples, 11, 13, 2)
    Y : ndarray of int32 of shape (n_samples, 11, 13)
    """
    X, y = _sk.make_checker(n_samples, noise=noise, random_state=_rng(0))
    # pystruct's second feature is constant zero: only the first one informs
    X[..., 1] = 0.0
    return X, _pystruct_y(y)


def generate_big_checker(n_samples=20, noise=0.5, n_fields=3, field_size=3):
    """A checkerboard of ``n_fields x n_fields`` fields of ``field_size`` pixels;
    the top left field is labelled 1, as in pystruct.

    Returns
    -------
    X : ndarray of shape (n_samples, s, s, 2), ``s = n_fields * field_size``
    Y : ndarray of int32 of shape (n_samples, s, s)
    """
    s = int(n_fields) * int(field_size)
    X, y = _sk.make_checker(n_samples, height=s, width=s, field_size=field_size, noise=noise,
                            random_state=_rng(0))
    # skstruct labels the top left field 0; swapping the labels swaps the features
    return np.ascontiguousarray(X[..., ::-1]), _pystruct_y(1 - y)


def make_simple_2x2(seed=0, n_flips=4, n_samples=20):
    """A 2x2 block in one quadrant of a 4x4 image, observed through flipped pixels.

    Returns
    -------
    X : list of n_samples int arrays (4, 4), values -1 and 1
    Y : list of n_samples int arrays (4, 4), labels 0 and 1
    """
    X, y = _sk.make_simple_2x2(n_samples, n_flips=n_flips, random_state=_rng(seed))
    return [x[..., 0].astype(np.int64) for x in X], [v.astype(np.int64) for v in y]


def generate_easy(n_samples=5, noise=5, box_size=3, total_size=8, seed=0):
    """Boxes on a background, observed through flipped pixels (binary).

    Returns
    -------
    X : ndarray of shape (n_samples, total_size, total_size, 2)
    Y : ndarray of int64 of shape (n_samples, total_size, total_size)
    """
    X, y = _sk.make_easy(n_samples, box_size=box_size, size=total_size, noise=noise,
                         random_state=_rng(seed))
    return X, _pystruct_y(y, np.int64)


def generate_bars(n_samples=5, noise=5, bars_size=3, total_size=8, random_seed=0,
                  separate_labels=True):
    """Horizontal and vertical bars, observed through flipped pixels.

    Returns
    -------
    X : ndarray of shape (n_samples, total_size, total_size, n_states)
    Y : ndarray of int64 of shape (n_samples, total_size, total_size)
    """
    X, y = _sk.make_bars(n_samples, bar_size=bars_size, size=total_size, noise=noise,
                         separate_labels=separate_labels, random_state=_rng(random_seed))
    return X, _pystruct_y(y, np.int64)


def generate_square_with_hole(n_samples=5, noise=5, total_size=8):
    """A square with a hole, observed through flipped pixels.

    Returns
    -------
    X : ndarray of shape (n_samples, total_size, total_size, 2)
    Y : ndarray of int64 of shape (n_samples, total_size, total_size)
    """
    X, y = _sk.make_square_with_hole(n_samples, size=total_size, noise=noise,
                                     random_state=_rng(0))
    return X, _pystruct_y(y, np.int64)


def generate_crosses(n_samples=5, noise=30, total_size=10, n_crosses=2, seed=0):
    """Crosses on a background, observed through flipped pixels.

    Returns
    -------
    X : ndarray of shape (n_samples, total_size, total_size, 2)
    Y : ndarray of int64 of shape (n_samples, total_size, total_size)
    """
    X, y = _sk.make_crosses(n_samples, size=total_size, n_crosses=n_crosses, noise=noise,
                            random_state=_rng(seed))
    return X, _pystruct_y(y, np.int64)


def generate_crosses_explicit(n_samples=5, noise=30, size=9, n_crosses=2):
    """Crosses whose centres are labelled 2, observed only as cross or background.

    Returns
    -------
    X : ndarray of shape (n_samples, size, size, 3)
    Y : ndarray of int64 of shape (n_samples, size, size)
    """
    X, y = _sk.make_crosses(n_samples, size=size, n_crosses=n_crosses, noise=noise,
                            explicit=True, random_state=_rng(0))
    return X, _pystruct_y(y, np.int64)


def generate_blocks_multinomial(n_samples=20, noise=0.5, seed=None, size_x=12):
    """Three vertical stripes on a ``(size_x - 2) x size_x`` grid, one-hot
    features with Gaussian noise.

    Returns
    -------
    X : ndarray of shape (n_samples, size_x - 2, size_x, 3)
    Y : ndarray of int32 of shape (n_samples, size_x - 2, size_x)
    """
    X, y = _sk.make_blocks_multinomial(n_samples, height=size_x - 2, width=size_x,
                                       noise=noise, random_state=_rng(seed))
    return X, _pystruct_y(y)


def generate_checker_multinomial(n_samples=20, noise=1.5, size_x=12):
    """A three-label checkerboard on a ``(size_x - 2) x size_x`` grid.

    Returns
    -------
    X : ndarray of shape (n_samples, size_x - 2, size_x, 3)
    Y : ndarray of int32 of shape (n_samples, size_x - 2, size_x)
    """
    X, y = _sk.make_checker_multinomial(n_samples, height=size_x - 2, width=size_x,
                                        noise=noise, random_state=_rng(None))
    return X, _pystruct_y(y)


binary = [generate_blocks, generate_checker, generate_big_checker, generate_easy]
"""The generators of binary grid tasks, as pystruct lists them."""

multinomial = [generate_blocks_multinomial, generate_checker_multinomial]
"""The generators of multi-class grid tasks, as pystruct lists them."""


def load_letters():
    """The OCR letters data set in pystruct's layout.

    Returns
    -------
    data : dict
        ``"data"``: list of uint8 arrays (n_letters_i, 128), each letter's 16x8
        pixels row-major; ``"labels"``: list of int64 arrays of letter codes
        0..25; ``"folds"``: int64 array (6877,); ``"word"``: list of the words
        spelled out; ``"images"``: list of uint8 arrays (16, 8 n_letters_i),
        the letters side by side.
    """
    d = _sk.load_letters()
    data = [x.astype(np.uint8) for x in d.X]
    return {
        "folds": np.asarray(d.folds, dtype=np.int64),
        "labels": [np.asarray(y, dtype=np.int64) for y in d.y],
        "data": data,
        "word": [str(w) for w in d.words],
        "images": [np.hstack([letter.reshape(16, 8) for letter in word]) for word in data],
    }


def load_scene():
    """The scene multi-label data set in pystruct's layout.

    Returns
    -------
    data : dict
        ``"X_train"`` float64 (1211, 294), ``"y_train"`` int64 (1211, 6),
        ``"X_test"`` float64 (1196, 294), ``"y_test"`` int64 (1196, 6).
    """
    d = _sk.load_scene()
    return {k: d[k] for k in ("X_train", "y_train", "X_test", "y_test")}


def load_snakes():
    """The snakes data set in pystruct's raw layout.

    Returns
    -------
    data : dict
        ``"X_train"``, ``"X_test"``: lists of 200 and 100 uint8 images
        (h_i, w_i, 3) of values 0 and 255; ``"Y_train"``, ``"Y_test"``: lists
        of uint8 label images (h_i, w_i), 0 the background and 1..10 the
        position along the snake.
    """
    d = _sk.load_snakes(edge_features=None)
    out = {}
    for split in ("train", "test"):
        out[f"X_{split}"] = [np.asarray(im, dtype=np.uint8) for im in d[f"images_{split}"]]
        out[f"Y_{split}"] = [np.asarray(y, dtype=np.uint8).reshape(tuple(s))
                             for y, s in zip(d[f"y_{split}"], d[f"shapes_{split}"])]
    return out
