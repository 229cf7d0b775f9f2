"""Token-level (flat) and sequence-level scores of label sequences.

The ``flat_*`` functions concatenate the sequences of ``y_true`` and of ``y_pred``
and apply the scikit-learn metric of the same name to the two flat lists, passing
every keyword argument on (``average``, ``labels``, ``zero_division``, ...).
:func:`sequence_accuracy_score` counts whole sequences.  Each takes ``y_true`` and
``y_pred`` as lists of label sequences (lists or arrays), one per sentence.
"""

from sklearn import metrics as _sk

from .utils import flatten

__all__ = [
    "flat_accuracy_score",
    "flat_classification_report",
    "flat_f1_score",
    "flat_fbeta_score",
    "flat_precision_score",
    "flat_recall_score",
    "sequence_accuracy_score",
]


def _flat(metric):
    """``metric`` applied to the concatenated sequences of ``y_true`` and ``y_pred``."""

    def flat_metric(y_true, y_pred, *args, **kwargs):
        return metric(flatten(y_true), flatten(y_pred), *args, **kwargs)

    flat_metric.__doc__ = (
        f"scikit-learn's ``{metric.__name__}`` on the concatenated label sequences.\n\n"
        "Parameters\n----------\n"
        "y_true, y_pred : list of label sequences, one per sentence\n"
        "    The sequences of the two must have the same lengths in total.\n"
        f"*args, **kwargs\n    Passed on to ``sklearn.metrics.{metric.__name__}``.\n\n"
        "Returns\n-------\n"
        "float or ndarray\n"
        f"    What ``sklearn.metrics.{metric.__name__}`` returns on the flat lists.\n")
    flat_metric.__name__ = f"flat_{metric.__name__}"
    flat_metric.__qualname__ = flat_metric.__name__
    flat_metric.__module__ = __name__
    return flat_metric


flat_accuracy_score = _flat(_sk.accuracy_score)
flat_precision_score = _flat(_sk.precision_score)
flat_recall_score = _flat(_sk.recall_score)
flat_f1_score = _flat(_sk.f1_score)
flat_fbeta_score = _flat(_sk.fbeta_score)


def flat_classification_report(y_true, y_pred, labels=None, **kwargs):
    """scikit-learn's ``classification_report`` on the concatenated label sequences.

    Parameters
    ----------
    y_true, y_pred : list of label sequences, one per sentence
    labels : list, optional
        The labels to report, in this order (all labels by default).
    **kwargs
        Passed on to ``sklearn.metrics.classification_report`` (``digits``,
        ``output_dict``, ``zero_division``, ...).

    Returns
    -------
    str or dict
        The report.
    """
    return _sk.classification_report(flatten(y_true), flatten(y_pred), labels=labels,
                                     **kwargs)


def sequence_accuracy_score(y_true, y_pred):
    """The fraction of sequences predicted entirely right.

    Parameters
    ----------
    y_true, y_pred : list of label sequences, one per sentence
        Compared pairwise; a predicted sequence of another length is wrong.

    Returns
    -------
    float
        Sequences equal label for label, over the number of sequences (0.0 for no
        sequences).

    Examples
    --------
    >>> sequence_accuracy_score([["A", "B"], ["C"]], [["A", "B"], ["A"]])
    0.5
    """
    y_true, y_pred = list(y_true), list(y_pred)
    if len(y_true) != len(y_pred):
        raise ValueError(f"y_true has {len(y_true)} sequences, y_pred {len(y_pred)}")
    if not y_true:
        return 0.0
    right = sum(list(a) == list(b) for a, b in zip(y_true, y_pred))
    return right / len(y_true)
