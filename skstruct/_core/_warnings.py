"""skstruct's warnings.

:class:`ConvergenceWarning` subclasses scikit-learn's, so that a filter written for
scikit-learn (``warnings.filterwarnings("error", category=
sklearn.exceptions.ConvergenceWarning)``) catches skstruct's too.  Importing
scikit-learn imports scipy, which the inference API must not load at import: the class
is therefore made on first access (module ``__getattr__``), once.
"""

import os
import sys
import warnings

# the package's folder: frames from files below it are skstruct's own
_PACKAGE = os.path.dirname(os.path.dirname(os.path.abspath(__file__))) + os.sep


def warn_user(message, category):
    """``warnings.warn`` pointing at the first caller outside skstruct: a warning reports
    the user's line (their ``fit`` or inference call), however deep in the package it is
    raised, so that filters by module and the printed location are the user's."""
    frame, level = sys._getframe(1), 2
    while frame is not None and os.path.abspath(frame.f_code.co_filename).startswith(_PACKAGE):
        frame, level = frame.f_back, level + 1
    warnings.warn(message, category, stacklevel=level)


class InfeasibilityWarning(UserWarning):
    """Inference returned a labelling (or marginals) for a sample that has no
    labelling of finite score, or could not find one."""


def _make_convergence_warning():
    from sklearn.exceptions import ConvergenceWarning as SklearnConvergenceWarning

    class ConvergenceWarning(SklearnConvergenceWarning):
        """An iterative method stopped at its iteration budget before meeting its tolerance.

        A subclass of :class:`sklearn.exceptions.ConvergenceWarning` (itself a
        ``UserWarning``): filters written for scikit-learn's warning apply to it.
        """

    ConvergenceWarning.__module__ = "skstruct.exceptions"
    ConvergenceWarning.__qualname__ = "ConvergenceWarning"
    return ConvergenceWarning


def __getattr__(name):
    if name == "ConvergenceWarning":
        cls = _make_convergence_warning()
        globals()[name] = cls
        return cls
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
