"""The state the two BCFW kernels share: the slots of their ``state`` vector and
the weighted averaging step (:func:`._bcfw.bcfw_pass` and
:func:`._bcfw_chain.bcfw_chain_pass` run on the same state)."""

from .._core._jit import jit

# state slots
SIGMA, ELL, ELL_AVG, STEP = 0, 1, 2, 3


@jit
def advance_average(state, k, En, Pt):
    """Weighted averaging after step ``k``: ``rho = 2 / (k + 2)``."""
    if k == 0.0:
        En[:] = 0.0
        Pt[:] = 0.0
        state[SIGMA] = 1.0
        state[ELL_AVG] = state[ELL]
        return
    rho = 2.0 / (k + 2.0)
    state[SIGMA] *= 1.0 - rho
    state[ELL_AVG] = (1.0 - rho) * state[ELL_AVG] + rho * state[ELL]
    if state[SIGMA] < 1e-150:
        En *= state[SIGMA]
        Pt *= state[SIGMA]
        state[SIGMA] = 1.0
