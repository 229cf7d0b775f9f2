"""The metrics of :mod:`~skstruct.compat.sklearn_crfsuite.metrics` as scikit-learn scorers.

For ``GridSearchCV(scoring=...)``, ``cross_val_score(scoring=...)`` and the like:
:data:`flat_accuracy` and :data:`sequence_accuracy`, as in sklearn-crfsuite, and
:data:`flat_precision`, :data:`flat_recall` and :data:`flat_f1`, averaged over the
labels weighted by their support (``average="weighted"``).  For another average or
a subset of the labels, make a scorer of your own:
``make_scorer(metrics.flat_f1_score, average="macro", labels=labels)``.
"""

from sklearn.metrics import make_scorer

from . import metrics

__all__ = ["flat_accuracy", "flat_f1", "flat_precision", "flat_recall", "make_scorer",
           "sequence_accuracy"]

flat_accuracy = make_scorer(metrics.flat_accuracy_score)
"""Token accuracy of ``predict``."""
sequence_accuracy = make_scorer(metrics.sequence_accuracy_score)
"""Fraction of sequences ``predict`` gets entirely right."""
flat_precision = make_scorer(metrics.flat_precision_score, average="weighted")
"""Token precision of ``predict``, averaged over the labels weighted by support."""
flat_recall = make_scorer(metrics.flat_recall_score, average="weighted")
"""Token recall of ``predict``, averaged over the labels weighted by support."""
flat_f1 = make_scorer(metrics.flat_f1_score, average="weighted")
"""Token F1 of ``predict``, averaged over the labels weighted by support."""
