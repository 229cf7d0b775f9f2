"""skstruct's warnings.

:class:`ConvergenceWarning` subclasses scikit-learn's, so that a filter written for
scikit-learn (``warnings.filterwarnings("error", category=
sklearn.exceptions.ConvergenceWarning)``) catches skstruct's too.  Importing
scikit-learn imports scipy, which the inference API must not load at import: the class
is therefore made on first access (module ``__getattr__``), once.
"""


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
