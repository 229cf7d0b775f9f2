"""Block-coordinate Frank-Wolfe on several threads of one machine: CoCoA+'s rounds.

The samples are dealt into ``k`` partitions.  A round runs, on ``k`` threads at once,
one BCFW pass over each partition from the same weights, each on CoCoA+'s local
problem (its quadratic term counted ``k`` times, as if every partition moved as this
one does, so that the moves can be added); the weights then move along the sum of
the partitions' moves by the step that maximises the dual (its exact line search: the
dual is quadratic along the sum), and each partition's blocks keep that share of
their move.  Ma, Smith, Jaggi, Jordan, Richtarik & Takac, "Adding vs. Averaging in
Distributed Primal-Dual Optimization", ICML 2015; the local solver is the BCFW of
Lacoste-Julien, Jaggi, Schmidt & Pletscher, ICML 2013.

A round costs a pass of sequential BCFW divided by ``k`` (the kernels release the
interpreter's lock), but its steps are taken from staler weights and the local
problems' curvature is ``k`` times the real one, so a round gains less than a pass:
it pays where a block step is expensive (loopy or densely connected samples, many
labels) and loses where a step takes microseconds (short chains).
"""

from concurrent.futures import ThreadPoolExecutor

import numpy as np

from .._core._validation import check_memory, thread_count
from ._bcfw import BCFW
from ._design_solver import DesignSolver


class ParallelBCFW(DesignSolver):
    """BCFW's passes run as CoCoA+ rounds over ``parallel_blocks`` partitions of the
    samples, on as many threads (at most the thread count ``n_jobs`` stands for).

    The iterate and the dual's linear term are kept here; each partition's dual
    blocks by a :class:`BCFW` over its samples (:meth:`BCFW.local_round`).  The
    result does not depend on the number of threads, only on ``parallel_blocks``.

    Parameters
    ----------
    design, loss_weight, lam, surrogate, averaging, inference_iter, n_jobs
        As for :class:`BCFW`.
    parallel_blocks : int
        Partitions of the samples (capped at the number of samples).
    """

    has_dual = True
    # what a warm start carries over, beside every partition's blocks (see carry)
    STATE = DesignSolver.STATE + ("gammas", "ell", "ell_avg", "W_avg", "P_avg", "t")

    def __init__(self, design, loss_weight, *, parallel_blocks, **kwargs):
        super().__init__(design, loss_weight, **kwargs)
        if design.submodular:
            raise ValueError("parallel_blocks > 1 does not keep pairwise tables supermodular "
                             "(GraphModel(submodular=True)): use parallel_blocks=1")
        S = self.n_samples
        k = max(1, min(int(parallel_blocks), S))
        self.k = k
        # dealt round-robin: neighbouring samples (often of alike size) spread evenly
        self.members = [np.arange(j, S, k, dtype=np.int64) for j in range(k)]
        self.parts = []
        for idx in self.members:
            sub = design.take(idx)
            nodes = design.batch.take(idx)[1]
            scale = idx.shape[0] / S
            # in the partition's units the blocks are k times the real ones and its loss
            # term is scale times the real one (see BCFW.local_round)
            solver = BCFW(sub, np.asarray(loss_weight)[nodes], lam=self.lam / (scale * k),
                          surrogate=self.surrogate, averaging=False,
                          inference_iter=kwargs["inference_iter"], n_jobs=1)
            if solver.fused_chain:
                # the rounds scale every block's move: the pairwise blocks are kept dense
                # (as BCFW.local_round would make them)
                check_memory(8 * sub.batch.n_samples * self.P.size,
                             f"BCFW's dual blocks ({sub.batch.n_samples} samples x "
                             f"{self.P.shape[0]} pairwise table(s) of {self.P.shape[1]} x "
                             f"{self.P.shape[2]} labels)", "use parallel_blocks=1")
                solver.fused_chain, solver.pairs = False, None
                solver.Pi = np.zeros((sub.batch.n_samples,) + self.P.shape)
            self.parts.append((solver, scale))
        self.gammas = np.zeros(k)
        self.ell = 0.0
        self.ell_avg = 0.0
        self.W_avg = np.zeros_like(self.W)
        self.P_avg = np.zeros_like(self.P)
        self.t = 0

    def key(self):
        return super().key() + (self.k,)

    def carry(self, old):
        """Continue from ``old``'s state (a warm start on data of the same shape): the
        iterate, its average, and every partition's blocks and last move."""
        super().carry(old)
        for (new, _), (prev, _) in zip(self.parts, old.parts):
            new.carry(prev)
            new.moved = prev.moved

    def relabel(self, old, y_old):
        """A new truth starts the partitions' blocks anew (see :meth:`BCFW.relabel`)."""

    def _orders(self, order):
        """``order`` split by partition, in partition-local indices, in order."""
        part = order % self.k
        return [np.ascontiguousarray(order[part == j] // self.k) for j in range(self.k)]

    def run_pass(self, order):
        """One round: a pass over each partition's samples of ``order`` on its own
        thread, then the step along the sum of their moves.  Returns the sum of the
        per-block Frank-Wolfe gaps met (a stale gap estimate, as :class:`BCFW`'s)."""
        order = np.asarray(order, dtype=np.int64)
        if order.shape[0] == 0:
            # compiles (or loads) the kernels of every partition, outside the timed loop
            for solver, _ in self.parts:
                solver.run_pass(order)
            return 0.0
        orders = self._orders(order)
        W, P = self.W, self.P

        def one(j):
            solver, _ = self.parts[j]
            return solver.local_round(W, P, orders[j], self.gammas[j])

        workers = min(self.k, thread_count(self.n_jobs))
        if workers > 1:
            with ThreadPoolExecutor(max_workers=workers) as pool:
                results = list(pool.map(one, range(self.k)))
        else:
            results = [one(j) for j in range(self.k)]
        k = float(self.k)
        dW = np.zeros_like(W)
        dP = np.zeros_like(P)
        d_ell = 0.0
        gap = 0.0
        for (g, mW, mP, m_ell), (_, scale) in zip(results, self.parts):
            dW += mW
            dP += mP
            d_ell += scale * m_ell
            gap += scale * g
        dW /= k
        dP /= k
        dd = float(np.sum(dW * dW) + np.sum(dP * dP))
        wd = float(np.sum(W * dW) + np.sum(P * dP))
        # the dual -lam/2 ||w + g d||^2 + ell + g d_ell is largest at this g; within
        # [0, 1] every block stays in its feasible set
        gamma = 0.0 if dd <= 0.0 else min(max((d_ell - self.lam * wd) / (self.lam * dd),
                                              0.0), 1.0)
        self.W = W + gamma * dW
        self.P = P + gamma * dP
        self.ell += gamma * d_ell
        self.gammas[:] = gamma
        self._average()
        return gap

    def _average(self):
        # Lacoste-Julien et al.'s weighted average, over rounds: rho = 2 / (t + 2)
        if self.t == 0:
            self.W_avg, self.P_avg, self.ell_avg = self.W.copy(), self.P.copy(), self.ell
        else:
            rho = 2.0 / (self.t + 2.0)
            self.W_avg = (1.0 - rho) * self.W_avg + rho * self.W
            self.P_avg = (1.0 - rho) * self.P_avg + rho * self.P
            self.ell_avg = (1.0 - rho) * self.ell_avg + rho * self.ell
        self.t += 1

    def _averaged(self):
        return self.averaging and self.t > 0

    def weights(self):
        """The weighted average of the rounds' iterates, or the last iterate."""
        if self._averaged():
            return self.W_avg.copy(), self.P_avg.copy()
        return self.W.copy(), self.P.copy()

    def objective(self):
        primal, sq = self.primal()
        ell = self.ell_avg if self._averaged() else self.ell
        dual = -0.5 * self.lam * sq + ell
        return primal, dual, primal - dual
