"""Inference oracles: compiled kernels behind a validated Python API.

Single graphs: :func:`viterbi`, :func:`forward_backward`, :func:`map_inference`,
:func:`marginal_inference`, :func:`max_marginals`.  Whole packed batches in one
compiled call each: :class:`GraphBatch` with :func:`map_batch` (including
loss-augmented decoding), :func:`marginals_batch` and
:func:`max_marginals_batch`; marginal inference with a non-local energy
on the marginals, :func:`bethe_project`.  The methods and what each can do:
:func:`available_methods`.  The k best labellings of chains and
forests, of one graph or a whole batch: :func:`kbest`.  The linear programming
relaxation of MAP with its fractional marginals: :func:`lp_relaxation`.  Nothing is compiled at
import; each kernel compiles on first use and is cached on disk.
"""

from .._core import GraphBatch
from .._core._validation import check_edges, check_pairwise, check_unary, n_threads
from .._core._warnings import InfeasibilityWarning
from ._api import (
    InferenceInfo,
    KBest,
    KBestBatch,
    chain_edges,
    forward_backward,
    kbest,
    loss_augment,
    lp_relaxation,
    map_batch,
    map_inference,
    marginal_inference,
    marginals_batch,
    max_marginals,
    max_marginals_batch,
    viterbi,
)
from ._bethe import BetheProjection, bethe_entropy, bethe_project
from ._ilp import LPRelaxation
from ._methods import Capabilities, available_methods

__all__ = [
    "BetheProjection",
    "Capabilities",
    "ConvergenceWarning",
    "InfeasibilityWarning",
    "InferenceInfo",
    "GraphBatch",
    "KBest",
    "KBestBatch",
    "LPRelaxation",
    "available_methods",
    "bethe_entropy",
    "bethe_project",
    "chain_edges",
    "check_edges",
    "check_pairwise",
    "check_unary",
    "forward_backward",
    "kbest",
    "loss_augment",
    "lp_relaxation",
    "map_batch",
    "map_inference",
    "marginal_inference",
    "marginals_batch",
    "max_marginals",
    "max_marginals_batch",
    "n_threads",
    "viterbi",
]


def __getattr__(name):
    # made on first access: it subclasses scikit-learn's, whose import loads scipy
    if name == "ConvergenceWarning":
        from .._core import _warnings

        return _warnings.ConvergenceWarning
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
