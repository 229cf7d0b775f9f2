"""Letter alignment: match the letters of two handwritten renditions of one word."""

from numbers import Integral

import numpy as np
from sklearn.utils import Bunch, check_random_state

from ._load import load_letters

ALIGNMENT_FEATURES = (
    *(f"disagree_block_{r}{c}" for r in range(4) for c in range(2)),
    "overlap",
    "overlap_shifted",
    "overlap_blurred",
    "ink_difference",
    "row_profile_distance",
    "column_profile_distance",
    "row_centroid_distance",
    "column_centroid_distance",
)

# 16 x 8 images cut into 4 x 4 pixel blocks: 4 block rows, 2 block columns
_H, _W, _B = 16, 8, 4
_SHIFTS = tuple((dr, dc) for dr in (-1, 0, 1) for dc in (-1, 0, 1))


def _gauss(size, sigma=1.0):
    """The matrix of a Gaussian blur of one image axis (zero outside the image)."""
    pos = np.arange(size, dtype=np.float64)
    d = pos[:, None] - pos[None, :]
    k = np.exp(-0.5 * (d / sigma) ** 2)
    k[np.abs(d) > 4 * sigma] = 0.0
    return k / k[size // 2].sum()


_BLUR_ROWS, _BLUR_COLS = _gauss(_H), _gauss(_W)


def make_letter_alignment(*, n_distractors=0, random_state=None):
    """Align the letters of two handwritten renditions of the same word.

    A bipartite matching task with a known true alignment, made from the OCR
    letters data (:func:`load_letters`: 6877 renditions of 55 words by 150
    writers, each letter a 16x8 binary image; the data do not record who
    wrote which word).  Within each of the data's 10 folds, the renditions
    of each word are paired at random (each rendition used at most once;
    3302 pairs; words of one letter, none in these data, are left out).  The letters of the first
    rendition are the *left* items, in writing order; the letters of the
    second rendition, shuffled (plus ``n_distractors`` letters of other
    words), are the *right* items.  The task is to find, for every left
    letter image, its counterpart among the right images: a sample for
    :class:`~skstruct.models.MatchingModel`.

    Each candidate edge ``(i, j)`` (left image ``a``, right image ``b``) is
    described by 16 features (``feature_names``), all symmetric in the two
    images and in [0, 1]:

    * ``disagree_block_rc``: the fraction of the 16 pixels of the 4x4 block
      ``(r, c)`` (4 block rows, 2 block columns) where ``a`` and ``b``
      differ (8 features);
    * ``overlap``: the pixels inked in both, ``<a, b> / sqrt(|a| |b|)``
      (a cosine; 0 for an empty image); ``overlap_shifted``: the largest such
      overlap when ``a`` is shifted by at most one pixel in each direction;
      ``overlap_blurred``: the cosine of the two images blurred by a Gaussian
      of one pixel's standard deviation (robust to small deformations);
    * ``ink_difference``: ``| |a| - |b| | / max(|a|, |b|)``;
    * ``row_profile_distance``, ``column_profile_distance``: half the L1
      distance between the images' ink distributions over rows (over
      columns);
    * ``row_centroid_distance``, ``column_centroid_distance``: the distance
      between the images' centres of ink, divided by the height (width).

    The shuffle leaves no positional cue, and two writers' renditions of a
    letter differ (style, slant, position in the box, parts of the
    neighbouring strokes), so no feature decides an edge alone.  There is
    no bias feature: every matching of a sample has ``n_left`` edges, so a
    constant feature adds the same score to all of them.

    Repeated letters: the true alignment ``y`` pairs the letters in writing
    order (the k-th letter of the first rendition with the k-th letter of the
    second; with a repeated letter, its first occurrence with the first).
    It is exact and is what estimators' ``score`` counts, but the images
    alone often cannot tell two renditions of one letter apart: 40 of the 55
    words repeat a letter (``"poiling"``, ``"uzz"``), and 32% of all letters
    are a repeated letter of their word.  The letter-level accuracy, which
    counts a match right when the two letters agree (swapping two
    occurrences of a letter is then no error), is
    ``np.mean(np.concatenate([lr[yp] == ll for ll, lr, yp in
    zip(letters_left, letters_right, y_pred)]))``.  Distractors are never
    the truth.

    Parameters
    ----------
    n_distractors : int, default=0
        Letters of other words added to the right side of every pair (drawn
        at random from the same fold, never from the pair's two renditions),
        so that ``n_right = n_left + n_distractors``.
    random_state : None, int or RandomState
        The pairing, the shuffles and the distractors; the same value gives
        the same data.

    Returns
    -------
    data : sklearn.utils.Bunch
        ``X``: list of float64 arrays of shape ``(n_left_i, n_right_i, 16)``,
        the edge features; ``y``: list of int64 arrays of shape
        ``(n_left_i,)``, ``y[i][k]`` the right item that is left letter
        ``k``'s counterpart; ``folds``: int64 array (n_pairs,), the fold of
        both renditions (the standard 10-fold split of :func:`load_letters`:
        select a fold to hold out, no image is then in two splits);
        ``words``: the word of every pair; ``pairs``: int64 array
        (n_pairs, 2), the two renditions as indices into
        ``load_letters().X``; ``letters_left``, ``letters_right``: lists of
        int64 arrays, the letter code (0..25) of every left and right item;
        ``left_index``, ``right_index``: lists of int64 arrays, every item
        as an index into the letters of ``load_letters()`` stacked
        (``np.vstack(load_letters().X)[right_index[i]]`` are the right
        images of pair ``i``); ``feature_names``; ``target_names``: the 26
        letters.  Pairs come in random order.
    """
    if not isinstance(n_distractors, Integral) or isinstance(n_distractors, bool) \
            or n_distractors < 0:
        raise ValueError(f"n_distractors must be an integer >= 0, got {n_distractors!r}")
    n_distractors = int(n_distractors)
    rng = check_random_state(random_state)
    data = load_letters()
    lengths = np.array([y.shape[0] for y in data.y], dtype=np.int64)
    starts = np.concatenate([[0], np.cumsum(lengths)[:-1]])
    pixels = np.vstack(data.X)
    codes = np.concatenate(data.y)
    word_of_letter = np.repeat(np.arange(lengths.shape[0]), lengths)

    # pairs of renditions of one word within one fold; words of one letter have
    # nothing to align
    words, word_ids = np.unique(data.words, return_inverse=True)
    pairs = []
    for fold in np.unique(data.folds).tolist():
        in_fold = np.flatnonzero((data.folds == fold) & (lengths >= 2))
        for w in range(words.shape[0]):
            idx = in_fold[word_ids[in_fold] == w]
            idx = idx[rng.permutation(idx.shape[0])]
            half = idx.shape[0] // 2
            pairs.append(np.column_stack([idx[:half], idx[half:2 * half]]))
    pairs = np.concatenate(pairs).astype(np.int64)
    pairs = pairs[rng.permutation(pairs.shape[0])]
    n_pairs = pairs.shape[0]

    left_index, right_index, y = [], [], []
    fold_letters = {}
    for a, b in pairs.tolist():
        n = int(lengths[a])
        right = starts[b] + np.arange(n)
        if n_distractors:
            fold = int(data.folds[a])
            if fold not in fold_letters:
                fold_letters[fold] = np.flatnonzero(data.folds[word_of_letter] == fold)
            pool = fold_letters[fold]
            pool = pool[(word_of_letter[pool] != a) & (word_of_letter[pool] != b)]
            if pool.shape[0] < n_distractors:
                raise ValueError(f"n_distractors={n_distractors} is more than the "
                                 f"{pool.shape[0]} letters of fold {fold} available")
            right = np.concatenate([right, rng.choice(pool, n_distractors, replace=False)])
        order = rng.permutation(right.shape[0])
        left_index.append(starts[a] + np.arange(n))
        right_index.append(right[order])
        # left letter k is the second rendition's letter k, now at position j with
        # order[j] == k
        y.append(np.argsort(order)[:n].astype(np.int64))

    X = [None] * n_pairs
    sizes = np.array([[li.shape[0], ri.shape[0]] for li, ri in zip(left_index, right_index)])
    for size in np.unique(sizes, axis=0):
        group = np.flatnonzero(np.all(sizes == size, axis=1))
        A = pixels[np.stack([left_index[g] for g in group])]
        B = pixels[np.stack([right_index[g] for g in group])]
        F = _edge_features(A, B)
        for g, f in zip(group.tolist(), F):
            X[g] = f
    return Bunch(
        X=X,
        y=y,
        folds=data.folds[pairs[:, 0]].astype(np.int64),
        words=data.words[pairs[:, 0]],
        pairs=pairs,
        letters_left=[codes[li] for li in left_index],
        letters_right=[codes[ri] for ri in right_index],
        left_index=left_index,
        right_index=right_index,
        feature_names=np.array(ALIGNMENT_FEATURES),
        target_names=data.target_names,
    )


def _safe_ratio(num, den):
    out = np.zeros(np.broadcast_shapes(num.shape, den.shape))
    np.divide(num, den, out=out, where=np.broadcast_to(den > 0, out.shape))
    return out


def _edge_features(A, B):
    """Edge features of ``P`` pairs: left images ``A`` (P, n, 128), right images ``B``
    (P, r, 128), binary, row-major 16x8.  Returns (P, n, r, 16)."""
    P, n, _ = A.shape
    r = B.shape[1]
    # per-block ink and per-block overlaps, blocks of 4x4 pixels
    Ab = A.reshape(P, n, _H // _B, _B, _W // _B, _B).transpose(0, 2, 4, 1, 3, 5)
    Bb = B.reshape(P, r, _H // _B, _B, _W // _B, _B).transpose(0, 2, 4, 1, 3, 5)
    n_blocks = (_H // _B) * (_W // _B)
    Ab = Ab.reshape(P, n_blocks, n, _B * _B)
    Bb = Bb.reshape(P, n_blocks, r, _B * _B)
    both = Ab @ Bb.transpose(0, 1, 3, 2)                       # (P, 8, n, r)
    disagree = (Ab.sum(-1)[..., :, None] + Bb.sum(-1)[..., None, :] - 2.0 * both) / _B ** 2
    feats = [disagree.transpose(0, 2, 3, 1)]                    # (P, n, r, 8)

    ink_a = A.sum(-1)                                           # (P, n)
    ink_b = B.sum(-1)
    norm = np.sqrt(ink_a[:, :, None] * ink_b[:, None, :])
    overlap = both.sum(axis=1)
    shifted = overlap
    Ai = A.reshape(P, n, _H, _W)
    Bt = B.transpose(0, 2, 1)
    for dr, dc in _SHIFTS:
        if dr == 0 and dc == 0:
            continue
        S = np.zeros_like(Ai)
        S[:, :, max(dr, 0):_H + min(dr, 0), max(dc, 0):_W + min(dc, 0)] = \
            Ai[:, :, max(-dr, 0):_H + min(-dr, 0), max(-dc, 0):_W + min(-dc, 0)]
        shifted = np.maximum(shifted, S.reshape(P, n, _H * _W) @ Bt)
    feats.append(_safe_ratio(overlap, norm)[..., None])
    feats.append(_safe_ratio(shifted, norm)[..., None])
    Ag = (_BLUR_ROWS @ Ai @ _BLUR_COLS.T).reshape(P, n, _H * _W)
    Bg = (_BLUR_ROWS @ B.reshape(P, r, _H, _W) @ _BLUR_COLS.T).reshape(P, r, _H * _W)
    blurred = Ag @ Bg.transpose(0, 2, 1)
    cos = _safe_ratio(blurred, np.sqrt(np.sum(Ag * Ag, -1)[:, :, None]
                                       * np.sum(Bg * Bg, -1)[:, None, :]))
    # a cosine of real-valued images can round to just above 1 (by 2e-16, depending on the
    # BLAS kernel that summed it); the features are documented to lie in [0, 1]
    feats.append(np.minimum(cos, 1.0)[..., None])
    big = np.maximum(ink_a[:, :, None], ink_b[:, None, :])
    feats.append(_safe_ratio(np.abs(ink_a[:, :, None] - ink_b[:, None, :]), big)[..., None])

    rows_a = _safe_ratio(A.reshape(P, n, _H, _W).sum(-1), ink_a[..., None])
    rows_b = _safe_ratio(B.reshape(P, r, _H, _W).sum(-1), ink_b[..., None])
    cols_a = _safe_ratio(A.reshape(P, n, _H, _W).sum(-2), ink_a[..., None])
    cols_b = _safe_ratio(B.reshape(P, r, _H, _W).sum(-2), ink_b[..., None])
    for pa, pb in ((rows_a, rows_b), (cols_a, cols_b)):
        feats.append(0.5 * np.abs(pa[:, :, None, :] - pb[:, None, :, :]).sum(-1)[..., None])
    for pa, pb, size in ((rows_a, rows_b, _H), (cols_a, cols_b, _W)):
        pos = np.arange(size, dtype=np.float64)
        ca, cb = pa @ pos, pb @ pos
        feats.append((np.abs(ca[:, :, None] - cb[:, None, :]) / size)[..., None])
    return np.concatenate(feats, axis=-1)
