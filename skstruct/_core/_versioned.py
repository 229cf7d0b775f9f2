"""The version a saved estimator records, and the warning when another version loads it.

:class:`VersionedState` makes an estimator's saved state (pickle, joblib and skops
alike go through ``__getstate__``/``__setstate__``) record the skstruct version that
saved it, and loading it with another version warn.
"""

import sys

from ._warnings import InconsistentVersionWarning, warn_user


def _running_version():
    # The package is imported before any of its modules, so it is in sys.modules; reading it
    # there keeps the core from importing the package's entry point (a cycle).
    return sys.modules[__name__.split(".")[0]].__version__


# the key of the saved state that holds the version (scikit-learn's is "_sklearn_version")
VERSION_KEY = "_skstruct_version"


class VersionedState:
    """Saved states record ``skstruct.__version__``; loading another version warns.

    scikit-learn's convention (``BaseEstimator`` stores ``_sklearn_version`` for its own
    estimators only): the state carries the version under :data:`VERSION_KEY`, and
    ``__setstate__`` takes it out and issues an
    :class:`~skstruct.exceptions.InconsistentVersionWarning` when it differs from the
    running version or is absent.  The attribute never reaches the instance.  Placed
    before ``BaseEstimator`` in the bases, whose methods it extends.
    """

    def __getstate__(self):
        # a new dict: object.__getstate__ may return the instance's own __dict__
        return dict(super().__getstate__(), **{VERSION_KEY: _running_version()})

    def __setstate__(self, state):
        state = dict(state)
        saved = state.pop(VERSION_KEY, None)
        current = _running_version()
        if saved != current:
            # reported at the caller's line that loads (pickle.load, joblib.load, ...)
            warn_user(InconsistentVersionWarning(
                estimator_name=type(self).__name__, original_version=saved,
                current_version=current), None)
        super().__setstate__(state)
