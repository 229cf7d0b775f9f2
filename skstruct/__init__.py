"""skstruct: structured prediction for scikit-learn users.

Importing skstruct is cheap: numba kernels compile on first use (and are cached
on disk), and subpackages load when first touched.
"""

import importlib

# registers the dask Bag operations the estimators look up (imports no dask)
from . import distributed  # noqa: F401
from ._persist import trusted_types

__version__ = "0.1.0.dev0"

_SUBMODULES = ("datasets", "energies", "exceptions", "inference", "inspection", "metrics",
               "models", "preprocessing", "solvers")
_ESTIMATORS = {
    "ApproxStructuredPredictor": "._approx",
    "CRF": "._crf",
    "LatentStructuredSVM": "._latent",
    "NonLocalCRF": "._nonlocal",
    "StructuredPerceptron": "._perceptron",
    "StructuredSVM": "._svm",
}

__all__ = ["__version__", *_SUBMODULES, *_ESTIMATORS, "trusted_types"]


def __getattr__(name):
    if name in _SUBMODULES:
        return importlib.import_module(f"{__name__}.{name}")
    if name in _ESTIMATORS:
        return getattr(importlib.import_module(_ESTIMATORS[name], __name__), name)
    raise AttributeError(f"module 'skstruct' has no attribute {name!r}")


def __dir__():
    return sorted(__all__)
