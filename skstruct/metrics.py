"""Scores for structured predictions, and scorers for model selection.

Three formats of ``y`` are understood, for ``y_true`` and ``y_pred`` alike:

* ragged: a sequence of length n_samples of 1-D label arrays, sample ``i``
  of shape (n_nodes_i,); the labels may be of any type (ints, strings);
* multi-label: a 2-D array of shape (n_samples, n_labels), each row a sample
  whose nodes are its labels;
* multiclass: a 1-D array of shape (n_samples,), one node per sample.

A sample with no nodes is valid and adds nothing to node counts.

Labels are compared with ``==`` and never encoded, so a label that the model
never saw in training is simply an error, not a crash or a NaN.

The scorers (:data:`hamming_scorer`, :data:`sequence_scorer`,
:data:`segment_f1_scorer`, and the dict :data:`SCORERS`) plug into
``GridSearchCV(scoring=...)`` and ``cross_val_score(scoring=...)``.  Do not
rely on ``scoring="accuracy"`` with ragged ``y``: sklearn's accuracy cannot
read it, and cross-validation then reports NaN.
"""

import numpy as np
import scipy.sparse as sp
from sklearn.metrics import make_scorer

__all__ = [
    "SCORERS",
    "hamming_accuracy",
    "hamming_scorer",
    "segment_f1",
    "segment_f1_scorer",
    "segments",
    "sequence_accuracy",
    "sequence_scorer",
]


def _flatten(y, name):
    """Per-sample node counts and all labels concatenated.

    Returns
    -------
    lengths : ndarray of shape (n_samples,)
    flat : ndarray of shape (lengths.sum(),)
    """
    if sp.issparse(y):
        y = y.toarray()
    if isinstance(y, np.ndarray) and y.dtype != object:
        if y.ndim == 1:
            return np.ones(y.shape[0], np.int64), y
        if y.ndim == 2:
            return np.full(y.shape[0], y.shape[1], np.int64), y.reshape(-1)
        raise ValueError(f"{name} must be 1-D, 2-D or a list of 1-D arrays, got shape {y.shape}")
    if isinstance(y, (str, bytes, dict)) or not hasattr(y, "__len__"):
        raise ValueError(f"{name} must be a list of 1-D label arrays, one per sample")
    parts = []
    for i, yi in enumerate(y):
        a = np.asarray(yi)
        if a.ndim == 0:
            # A list of scalars is the multiclass format: one node per sample.
            a = a.reshape(1)
        elif a.ndim != 1:
            raise ValueError(f"{name}: sample {i} must be a 1-D label array, got shape {a.shape}")
        parts.append(a)
    lengths = np.array([a.shape[0] for a in parts], dtype=np.int64)
    # Empty samples come as float arrays; left in, they would turn string labels
    # into objects.
    parts = [a for a in parts if a.shape[0]]
    if not parts:
        return lengths, np.zeros(0)
    try:
        flat = np.concatenate(parts)
    except (TypeError, ValueError):
        flat = np.concatenate([a.astype(object) for a in parts])
    return lengths, flat


def _check_pair(y_true, y_pred):
    lt, ft = _flatten(y_true, "y_true")
    lp, fp = _flatten(y_pred, "y_pred")
    if lt.shape[0] != lp.shape[0]:
        raise ValueError(f"y_true has {lt.shape[0]} samples but y_pred has {lp.shape[0]}")
    bad = np.flatnonzero(lt != lp)
    if bad.size:
        i = int(bad[0])
        raise ValueError(f"sample {i}: y_true has {lt[i]} labels but y_pred has {lp[i]}")
    return lt, ft, fp


def _known(flat):
    """Where a flat label array holds a label rather than ``None`` (an unknown label),
    or None when every label is known."""
    if flat.dtype != object:
        return None
    known = np.fromiter((v is not None for v in flat.tolist()), bool, count=flat.shape[0])
    return None if known.all() else known


def _equal(a, b):
    """Elementwise ``a == b`` that never raises on labels of different types."""
    try:
        eq = a == b
    except (TypeError, ValueError):
        eq = None
    if not isinstance(eq, np.ndarray) or eq.shape != a.shape:
        # Arrays whose dtypes numpy cannot compare (e.g. str against int): compare
        # the Python objects, so that different labels are just different.
        eq = np.array([x == z for x, z in zip(a.tolist(), b.tolist())], dtype=bool)
    return eq.astype(bool, copy=False)


def hamming_accuracy(y_true, y_pred, average="nodes"):
    """Fraction of nodes labelled right.

    Parameters
    ----------
    y_true, y_pred : list of length n_samples of array of shape (n_nodes_i,), \
            or array of shape (n_samples, n_labels), or array of shape (n_samples,)
        True and predicted labels (see the module doc for the formats).  The two
        need not share a format, only the node counts of every sample.
        ``None`` in ``y_true`` marks an unknown label: that node is not
        scored.
    average : {"nodes", "samples"}, default="nodes"
        ``"nodes"`` pools all nodes of all samples (every node counts the
        same).  ``"samples"`` averages each sample's own fraction (every sample
        counts the same; empty samples are left out): one minus the mean
        normalised Hamming loss, the loss that ``loss="normalized_hamming"``
        trains for and the test error Lacoste-Julien et al.'s reference code
        reports.

    Returns
    -------
    score : float in [0, 1]

    Raises
    ------
    ValueError
        If the sample counts or the node counts of a sample differ (the
        message names the sample), or if there are no nodes at all.

    Examples
    --------
    >>> import numpy as np
    >>> y_true = [np.array([0, 1, 2]), np.array([1])]
    >>> y_pred = [np.array([0, 1, 1]), np.array([1])]
    >>> hamming_accuracy(y_true, y_pred)
    0.75
    >>> round(hamming_accuracy(y_true, y_pred, average="samples"), 4)
    0.8333
    """
    if average not in ("nodes", "samples"):
        raise ValueError(f'average must be "nodes" or "samples", got {average!r}')
    lengths, ft, fp = _check_pair(y_true, y_pred)
    known = _known(ft)
    if known is not None:
        # unknown true labels (None) are not scored
        owner = np.repeat(np.arange(lengths.shape[0]), lengths)
        lengths = np.bincount(owner[known], minlength=lengths.shape[0])
        ft, fp = ft[known], fp[known]
    if ft.shape[0] == 0:
        raise ValueError("no nodes to score: every sample is empty")
    right = _equal(ft, fp)
    if average == "nodes":
        return float(np.mean(right))
    owner = np.repeat(np.arange(lengths.shape[0]), lengths)
    n_right = np.bincount(owner, weights=right, minlength=lengths.shape[0])
    keep = lengths > 0
    return float(np.mean(n_right[keep] / lengths[keep]))


def sequence_accuracy(y_true, y_pred):
    """Fraction of samples whose nodes are all labelled right.

    Parameters
    ----------
    y_true, y_pred : list of length n_samples of array of shape (n_nodes_i,), \
            or array of shape (n_samples, n_labels), or array of shape (n_samples,)
        True and predicted labels (see the module doc for the formats).

    Returns
    -------
    score : float in [0, 1]
        An empty sample counts as predicted right.  For multi-label ``y`` this
        is the subset accuracy.

    Raises
    ------
    ValueError
        If the sample counts or the node counts of a sample differ, or if
        there are no samples.
    """
    lengths, ft, fp = _check_pair(y_true, y_pred)
    n = lengths.shape[0]
    if n == 0:
        raise ValueError("no samples to score")
    owner = np.repeat(np.arange(n), lengths)
    n_wrong = np.bincount(owner, weights=~_equal(ft, fp), minlength=n)
    return float(np.mean(n_wrong == 0))


# Chunk extraction follows conlleval.pl (CoNLL-2000), extended to BIOES the way
# its Python ports do (E- and S- close a chunk, B- and S- always open one).  On
# IOB1 and IOB2 data the rules for E- and S- never fire, so the result is
# exactly conlleval's.
_SCHEME_PREFIXES = {
    "iob1": ("B", "I"),
    "iob2": ("B", "I"),
    "bioes": ("B", "I", "E", "S"),
    "iobes": ("B", "I", "E", "S"),
    "auto": ("B", "I", "E", "S"),
}


def _split_tag(tag, scheme, where):
    if not isinstance(tag, str):
        raise ValueError(f"{where}: tags must be strings like 'B-NP' or 'O', got {tag!r}")
    if tag == "O":
        return "O", ""
    prefix, _, kind = tag.partition("-")
    if prefix not in _SCHEME_PREFIXES[scheme]:
        allowed = "/".join(_SCHEME_PREFIXES[scheme])
        raise ValueError(f"{where}: tag {tag!r} is not 'O' or {allowed} followed by "
                         f"'-TYPE' in the {scheme!r} scheme")
    return prefix, kind


def _end_of_chunk(prev_tag, tag, prev_type, type_):
    if prev_tag in ("E", "S"):
        return True
    if prev_tag in ("B", "I") and tag in ("B", "S", "O"):
        return True
    return prev_tag != "O" and prev_type != type_


def _start_of_chunk(prev_tag, tag, prev_type, type_):
    if tag in ("B", "S"):
        return True
    if prev_tag in ("E", "S", "O") and tag in ("E", "I"):
        return True
    return tag != "O" and prev_type != type_


def _check_scheme(scheme):
    if scheme not in _SCHEME_PREFIXES:
        raise ValueError(f"scheme must be one of {sorted(_SCHEME_PREFIXES)}, got {scheme!r}")


def _segments(tags, scheme, where):
    chunks = set()
    prev_tag, prev_type, start = "O", "", None
    for pos, raw in enumerate(tags):
        tag, type_ = _split_tag(raw, scheme, where)
        if start is not None and _end_of_chunk(prev_tag, tag, prev_type, type_):
            chunks.add((prev_type, start, pos))
            start = None
        if _start_of_chunk(prev_tag, tag, prev_type, type_):
            start = pos
        prev_tag, prev_type = tag, type_
    if start is not None:
        chunks.add((prev_type, start, len(tags)))
    return chunks


def segments(tags, scheme="auto"):
    """The chunks of one tagged sequence, as conlleval.pl reads them.

    A chunk starts at ``B-X`` (or ``S-X``), or at ``I-X`` / ``E-X`` when the
    previous tag is ``O``, ends a chunk, or is of another type; it ends before
    ``O``, ``B-``, ``S-``, a tag of another type, or after ``E-`` / ``S-``.
    These are conlleval's ``startOfChunk`` / ``endOfChunk`` rules, which read
    IOB1 and IOB2 alike, extended to BIOES.

    Parameters
    ----------
    tags : sequence of str of length n_tokens
        Tags such as ``"B-NP"``, ``"I-VP"``, ``"O"`` (a bare ``"B"`` / ``"I"``
        is a chunk with the empty type).
    scheme : {"auto", "iob1", "iob2", "bioes", "iobes"}, default="auto"
        The tag scheme.  Chunks are read the same way in all of them, as
        conlleval does; the scheme decides which prefixes are allowed (``B``,
        ``I``, ``O`` for IOB1 and IOB2; also ``E`` and ``S`` for BIOES, of
        which ``"iobes"`` is an alias; ``"auto"`` allows all five).

    Returns
    -------
    chunks : set of tuple (type, start, end)
        ``end`` is exclusive: the chunk covers ``tags[start:end]``.

    Raises
    ------
    ValueError
        On an unknown scheme, or a tag that is not a string of the form
        ``PREFIX-TYPE`` or ``O`` with a prefix allowed by the scheme.
    TypeError
        If ``tags`` is not a sequence (e.g. None, a number or a single str).

    Examples
    --------
    >>> sorted(segments(["B-NP", "I-NP", "O", "I-VP", "B-VP"]))
    [('NP', 0, 2), ('VP', 3, 4), ('VP', 4, 5)]
    """
    _check_scheme(scheme)
    # a str would iterate as one-letter tags; None or a number not at all
    if isinstance(tags, (str, bytes)) or not hasattr(tags, "__iter__"):
        raise TypeError(f"tags must be a sequence of str tags, got {type(tags).__name__}")
    return _segments(list(tags), scheme, "tags")


def segment_f1(y_true, y_pred, scheme="auto"):
    """Chunk F1 score, as computed by conlleval.pl (CoNLL-2000 shared task).

    A predicted chunk is correct only if a true chunk has the same type and
    the same start and end.  Chunks never cross samples: each sample's
    chunks are extracted on their own (see :func:`segments`) and the counts
    of all samples are summed before precision and recall are computed
    (micro-averaged, as conlleval's overall score).

    Parameters
    ----------
    y_true, y_pred : list of length n_samples of sequence of str of length n_tokens_i
        True and predicted tags of every sample.
    scheme : {"auto", "iob1", "iob2", "bioes", "iobes"}, default="auto"
        Which tag prefixes are allowed; see :func:`segments`.

    Returns
    -------
    f1 : float in [0, 1]
        ``2 * precision * recall / (precision + recall)``.  When there are no
        predicted chunks or no true chunks (so that precision or recall is
        undefined), or no correct chunk, the score is 0, as conlleval reports
        it; this holds even when both are empty.

    Raises
    ------
    ValueError
        If the sample counts or the token counts of a sample differ, or on a
        tag that the scheme does not allow (naming the sample).

    Examples
    --------
    >>> segment_f1([["B-NP", "I-NP", "O", "B-VP"]], [["B-NP", "B-NP", "O", "B-VP"]])
    0.4
    """
    _check_scheme(scheme)
    lengths, ft, fp = _check_pair(y_true, y_pred)
    bounds = np.concatenate([[0], np.cumsum(lengths)]).tolist()
    ft, fp = ft.tolist(), fp.tolist()
    n_true = n_pred = n_correct = 0
    for i in range(lengths.shape[0]):
        lo, hi = bounds[i], bounds[i + 1]
        true = _segments(ft[lo:hi], scheme, f"y_true sample {i}")
        pred = _segments(fp[lo:hi], scheme, f"y_pred sample {i}")
        n_true += len(true)
        n_pred += len(pred)
        n_correct += len(true & pred)
    if n_correct == 0:
        return 0.0
    precision = n_correct / n_pred
    recall = n_correct / n_true
    return 2 * precision * recall / (precision + recall)


hamming_scorer = make_scorer(hamming_accuracy, response_method="predict")
"""Scorer for :func:`hamming_accuracy` (``scoring=hamming_scorer``)."""

sequence_scorer = make_scorer(sequence_accuracy, response_method="predict")
"""Scorer for :func:`sequence_accuracy`."""

segment_f1_scorer = make_scorer(segment_f1, response_method="predict")
"""Scorer for :func:`segment_f1` with ``scheme="auto"``."""

SCORERS = {
    "hamming_accuracy": hamming_scorer,
    "sequence_accuracy": sequence_scorer,
    "segment_f1": segment_f1_scorer,
}
"""The scorers by name, e.g. ``GridSearchCV(scoring=SCORERS)`` with ``refit=...``."""
