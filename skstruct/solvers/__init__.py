"""The learning algorithms, each owning its state.

* :mod:`._bcfw` / :mod:`._bcfw_chain`: block-coordinate Frank-Wolfe on a
  built-in model's design (:mod:`._parallel_bcfw`: its passes as CoCoA+ rounds over
  partitions of the samples, on threads); :mod:`._subgradient`: stochastic subgradient
  descent on it (both over :class:`._design_solver.DesignSolver`);
* :mod:`._protocol`: the same two algorithms for any model of the protocol,
  one sample at a time;
* :mod:`._one_slack`: Joachims, Finley & Yu's 1-slack cutting-plane method
  (one oracle pass over all samples per iteration, a small QP over the working set of
  planes, an inference cache), batched and through the protocol;
* :mod:`._n_slack`: Tsochantaridis et al.'s n-slack cutting-plane method (a working set
  of planes per sample, the QP by block coordinate ascent), batched and through the
  protocol;
* :mod:`._frank_wolfe`: batch Frank-Wolfe on the dual (one step per pass, the exact
  duality gap for free), batched and through the protocol;
* :mod:`._extragradient`: Taskar et al.'s dual extragradient on the saddle
  point, on chains and trees (KL projections) and on protocol models with a relaxed
  interface (Euclidean projections);
* :mod:`._primal_dual`: Hazan & Urtasun's primal-dual message passing with
  the parameter step (gradient or L-BFGS direction, Armijo line search);
* :mod:`._crf`: the CRF likelihood (value, gradient, marginals) and its
  L-BFGS fit;
* :mod:`._online`: CRFsuite's online trainers of the chain CRF (averaged perceptron,
  passive-aggressive, AROW, calibrated L2 SGD), one compiled pass per epoch;
* :mod:`._perceptron`: the averaged structured perceptron, batched and
  through the protocol.

Registering a structured SVM solver: one module with a batched class and a
protocol class, and one line in :data:`SSVM_SOLVERS`.
"""

from ._bcfw import BCFW
from ._extragradient import Extragradient, ProtocolExtragradient
from ._frank_wolfe import FrankWolfe, ProtocolFrankWolfe
from ._n_slack import NSlack, ProtocolNSlack
from ._one_slack import OneSlack, ProtocolOneSlack
from ._parallel_bcfw import ParallelBCFW
from ._protocol import ProtocolBCFW, ProtocolSubgradient
from ._subgradient import Subgradient

SSVM_SOLVERS = {
    "bcfw": (BCFW, ProtocolBCFW),
    "subgradient": (Subgradient, ProtocolSubgradient),
    "extragradient": (Extragradient, ProtocolExtragradient),
    "one_slack": (OneSlack, ProtocolOneSlack),
    "n_slack": (NSlack, ProtocolNSlack),
    "fw": (FrankWolfe, ProtocolFrankWolfe),
}
"""The solvers of ``StructuredSVM(solver=name)`` by name: ``(solver for the built-in
models, solver for models of the protocol)``."""

__all__ = ["BCFW", "SSVM_SOLVERS", "Extragradient", "FrankWolfe", "NSlack", "OneSlack",
           "ParallelBCFW", "ProtocolBCFW", "ProtocolExtragradient", "ProtocolFrankWolfe",
           "ProtocolNSlack", "ProtocolOneSlack", "ProtocolSubgradient", "Subgradient"]
