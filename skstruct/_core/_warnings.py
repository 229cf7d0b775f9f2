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


class InconsistentVersionWarning(UserWarning):
    """An estimator was loaded by another version of skstruct than the one that saved it.

    Issued by unpickling (``pickle``, ``joblib``, ``skops.io``) a skstruct estimator whose
    saved state names another ``skstruct.__version__`` than the running one, or none (a
    state saved before skstruct recorded its version).  A fitted estimator's attributes
    may change between versions: predictions of the loaded estimator are then not
    guaranteed.  Refit it with the running version, or load it with the version that
    saved it.

    Parameters
    ----------
    estimator_name : str
        The class of the loaded estimator.
    original_version : str or None
        The version of skstruct that saved it; None if the state records none.
    current_version : str
        The running version of skstruct.
    """

    def __init__(self, *, estimator_name, original_version, current_version):
        self.estimator_name = estimator_name
        self.original_version = original_version
        self.current_version = current_version
        super().__init__(estimator_name, original_version, current_version)

    def __str__(self):
        saved = ("a version of skstruct that did not record its version"
                 if self.original_version is None else f"skstruct {self.original_version}")
        return (f"Loading {self.estimator_name} saved by {saved} with skstruct "
                f"{self.current_version}: its fitted attributes may not be what this "
                "version expects, and its predictions are not guaranteed. Refit it with "
                f"skstruct {self.current_version}, or load it with the version that saved it.")


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
