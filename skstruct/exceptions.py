"""The exceptions and warnings skstruct raises.

* :class:`InvalidParameterError`: a parameter of an estimator or a model has a value it
  does not accept (raised by ``fit``); both a ``ValueError`` and a ``TypeError``, as
  scikit-learn's parameter errors are.
* :class:`ConvergenceWarning`: an iterative method (a learner's ``fit``, or an inference
  method) stopped at ``max_iter`` short of its tolerance; a subclass of
  :class:`sklearn.exceptions.ConvergenceWarning`.
* :class:`InfeasibilityWarning`: inference met a sample without a labelling of finite
  score.
* :class:`InconsistentVersionWarning`: an estimator saved by another version of skstruct
  was loaded (pickle, joblib or ``skops.io``).
"""

from ._core._params import InvalidParameterError
from ._core._warnings import ConvergenceWarning, InconsistentVersionWarning, InfeasibilityWarning

__all__ = ["ConvergenceWarning", "InconsistentVersionWarning", "InfeasibilityWarning",
           "InvalidParameterError"]
