"""The state the two BCFW kernels share: BCFW's scalars as a named tuple and the
weighted averaging step (:func:`._bcfw.bcfw_pass` and
:func:`._bcfw_chain.bcfw_chain_pass` run on the same state)."""

from typing import NamedTuple

import numpy as np

from .._core._jit import jit


class State(NamedTuple):
    """BCFW's scalars, as 0-d arrays the kernels update in place."""

    sigma: np.ndarray      # the lazy average's scale: w_avg = w + sigma w_tilde
    ell: np.ndarray        # the dual's loss term, sum_i ell_i
    ell_avg: np.ndarray    # the weighted average's loss term
    step: np.ndarray       # block steps taken, k

    @classmethod
    def new(cls):
        return cls(sigma=np.ones(()), ell=np.zeros(()), ell_avg=np.zeros(()),
                   step=np.zeros(()))

    def copy(self):
        return State(sigma=self.sigma.copy(), ell=self.ell.copy(),
                     ell_avg=self.ell_avg.copy(), step=self.step.copy())


@jit
def advance_average(state, k, En, Pt):
    """Weighted averaging after step ``k``: ``rho = 2 / (k + 2)``."""
    if k == 0.0:
        En[:] = 0.0
        Pt[:] = 0.0
        state.sigma[()] = 1.0
        state.ell_avg[()] = state.ell[()]
        return
    rho = 2.0 / (k + 2.0)
    state.sigma[()] *= 1.0 - rho
    state.ell_avg[()] = (1.0 - rho) * state.ell_avg[()] + rho * state.ell[()]
    sigma = state.sigma[()]
    if sigma < 1e-150:
        En *= sigma
        Pt *= sigma
        state.sigma[()] = 1.0
