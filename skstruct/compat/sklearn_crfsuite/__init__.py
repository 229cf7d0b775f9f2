"""sklearn-crfsuite's interface over skstruct's CRF.

A drop-in replacement for sklearn-crfsuite 0.5: replace ``import sklearn_crfsuite``
by ``from skstruct.compat import sklearn_crfsuite`` (or ``from sklearn_crfsuite import
CRF, metrics`` by ``from skstruct.compat.sklearn_crfsuite import CRF, metrics``) and the
rest of the code runs unchanged, trained and decoded by :class:`skstruct.CRF` instead
of CRFsuite.  :class:`CRF` documents, parameter by parameter, what corresponds to what
and where the two differ.

Submodules: :mod:`~skstruct.compat.sklearn_crfsuite.metrics` (token-level and
sequence-level scores), :mod:`~skstruct.compat.sklearn_crfsuite.scorers` (the same as
scikit-learn scorers) and :mod:`~skstruct.compat.sklearn_crfsuite.utils`.
"""

from . import estimator, metrics, scorers, utils
from .estimator import CRF

__all__ = ["CRF", "estimator", "metrics", "scorers", "utils"]
