"""The structured SVM on a cluster: the subgradient's mini-batches, and CoCoA+'s
parallel BCFW rounds."""

import numpy as np

from ..solvers import BCFW, Subgradient
from ._transport import _history, _setup, _shapes, _Workers
from ._workers import _make, _naming, _partition_design, _sparse_rows, _split


class _SSVMPart:
    """A partition's structured SVM oracles (and, for BCFW, its dual blocks)."""

    def __init__(self, part, index, est, lam, n_total, sigma=1.0):
        design, _ = _partition_design(est.model_.design, part, index)
        with _naming(index):
            design, lw = est._prepared(est.model_, design)
        if design.submodular:
            raise ValueError("StructuredSVM on a dask Bag does not keep pairwise tables "
                             "supermodular (GraphModel(submodular=True)): give lists")
        kind = BCFW if est.solver == "bcfw" else Subgradient
        n = design.batch.n_samples
        # BCFW's pass scales a block by 1 / (lam n) and its loss by 1 / n, with n this
        # partition's samples: at lam * n_total / n its steps are those of the whole
        # problem's dual, whose linear term is then this one's times n / n_total.
        # With sigma (the partitions' count), the pass solves CoCoA+'s local problem
        # (Ma et al., ICML 2015): its quadratic term counted sigma times, as if every
        # partition moved as this one does, so that the moves can be added.  In the
        # pass's units the blocks and the weights' move are sigma times the real ones,
        # and the oracle reads w + sigma * move, the local problem's gradient point.
        self.scale = n / n_total if n else 1.0
        self.sigma = float(sigma)
        s = kind(design, lw, lam=lam / (self.scale * self.sigma), surrogate=est.surrogate,
                 averaging=False, inference_iter=est.inference_iter, n_jobs=None)
        self.s = s
        self.shapes = (s.W.shape, s.P.shape)

    def info(self):
        return False

    def hinges(self, w):
        W, P = _split(w, self.shapes)
        return float(self.s.hinges(W, P)[0].sum())

    def corners(self, w, idx):
        """Subgradient: the hinges and summed descent direction of samples ``idx``."""
        W, P = _split(w, self.shapes)
        hinge, gW, gP = self.s.corner_sum(W, P, idx)
        return hinge, _sparse_rows(gW), gP

    def bcfw_round(self, w, idx, gamma):
        """Parallel BCFW: the round of :meth:`~skstruct.solvers.BCFW.local_round` over
        ``idx`` from ``w``; returns the block gaps met, and the move of the weights
        and of the dual's linear term, in the whole problem's units."""
        W, P = _split(w, self.shapes)
        gap, dW, dP, d_ell = self.s.local_round(W, P, idx, gamma)
        inv = 1.0 / self.sigma
        return self.scale * gap, _sparse_rows(inv * dW), inv * dP, self.scale * d_ell


class _RemoteSSVM:
    """The client's side of a distributed structured SVM solver: the weights (and
    their average), and for BCFW each partition's share of them; the oracles and dual
    blocks are on the workers.  Speaks the solver protocol ``StructuredSVM`` loops
    over (``run_pass``, ``objective``, ``weights``)."""

    def __init__(self, workers, counts, shapes, est, lam):
        self.workers = workers
        self.offsets = np.concatenate([[0], np.cumsum(counts)])
        self.n_samples = int(self.offsets[-1])
        self.has_dual = est.solver == "bcfw"
        self.batch_size = min(int(est.batch_size), self.n_samples)
        self.averaging = bool(est.average)
        self.lam = lam
        self.shapes = shapes
        n = int(np.prod(shapes[0])) + int(np.prod(shapes[1]))
        self.w = np.zeros(n)
        self.w_avg = np.zeros(n)
        self.ell = self.ell_avg = 0.0
        self.t = 0
        self.n_pass = 0
        self.seconds = 0.0
        K = counts.shape[0]
        if self.has_dual:
            self.share = np.zeros((K, n))
            self.share_ell = np.zeros(K)
            self.gamma = np.zeros(K)

    def _local(self, order):
        """``order`` split by partition: ``{partition: local indices}``, in order."""
        part = np.searchsorted(self.offsets, order, side="right") - 1
        return {int(k): order[part == k] - self.offsets[k] for k in np.unique(part)}

    def _dense(self, rows_vals, gP):
        (rows, vals) = rows_vals
        nW = int(np.prod(self.shapes[0]))
        g = np.zeros_like(self.w)
        g[:nW].reshape(self.shapes[0])[rows] = vals
        g[nW:] = gP.ravel()
        return g

    def run_pass(self, order):
        if order.shape[0] == 0:
            # builds every partition's state, outside the timed loop
            self.workers.call("info")
            return 0.0
        if self.has_dual:
            return self._bcfw_round(order)
        total = 0.0
        B = self.batch_size
        for start in range(0, order.shape[0], B):
            batch = order[start:start + B]
            res, _ = self.workers.call("corners", (self.w,),
                                       {k: (idx,) for k, idx in self._local(batch).items()})
            g = np.zeros_like(self.w)
            for hinge, rows_vals, gP in res.values():
                total += hinge
                g += self._dense(rows_vals, gP)
            t = self.t
            self.t += 1
            self.w = Subgradient.pegasos_step(self.w, g, t, self.lam, batch.shape[0])
            self._average(t)
        return total / order.shape[0]

    def _average(self, t):
        if not self.averaging:
            return
        if t == 0:
            self.w_avg, self.ell_avg = self.w.copy(), self.ell
        else:
            rho = 2.0 / (t + 2.0)
            self.w_avg = (1.0 - rho) * self.w_avg + rho * self.w
            self.ell_avg = (1.0 - rho) * self.ell_avg + rho * self.ell

    def _bcfw_round(self, order):
        local = self._local(order)
        K = self.share.shape[0]
        each = {k: (local.get(k, np.zeros(0, np.int64)), self.gamma[k]) for k in range(K)}
        res, rebuilt = self.workers.call("bcfw_round", (self.w,), each)
        for k in rebuilt:
            # a rebuilt partition's blocks are 0 again: take its share out of the weights,
            # and its move of this round (made from a state it no longer has) is dropped
            self.w -= self.share[k]
            self.ell -= self.share_ell[k]
            self.share[k] = 0.0
            self.share_ell[k] = 0.0
        moves = {k: (self._dense(r[1], r[2]), r[3]) for k, r in res.items()
                 if k not in rebuilt}
        d = sum((m for m, _ in moves.values()), np.zeros_like(self.w))
        d_ell = sum(dl for _, dl in moves.values())
        dd = float(d @ d)
        # the dual -lam/2 ||w + g d||^2 + ell + g d_ell is largest at this g; within
        # [0, 1] every block stays in its feasible set
        gamma = 0.0 if dd <= 0.0 else min(max(
            (d_ell - self.lam * float(self.w @ d)) / (self.lam * dd), 0.0), 1.0)
        self.w += gamma * d
        self.ell += gamma * d_ell
        for k, (m, dl) in moves.items():
            self.share[k] += gamma * m
            self.share_ell[k] += gamma * dl
        self.gamma[:] = 0.0
        self.gamma[list(moves)] = gamma
        self._average(self.t)
        self.t += 1
        return float(sum(r[0] for r in res.values()))

    def weights(self):
        w = self.w_avg if self.averaging and self.t > 0 else self.w
        W, P = _split(w, self.shapes)
        return W.copy(), P.copy()

    def objective(self):
        W, P = self.weights()
        w = np.concatenate([W.ravel(), P.ravel()])
        res, _ = self.workers.call("hinges", (w,))
        sq = float(w @ w)
        primal = 0.5 * self.lam * sq + sum(res.values()) / self.n_samples
        if not self.has_dual:
            return primal, np.nan, np.nan
        ell = self.ell_avg if self.averaging and self.t > 0 else self.ell
        dual = -0.5 * self.lam * sq + ell
        return primal, dual, primal - dual


def fit_ssvm(est, X, y):
    """:meth:`StructuredSVM.fit` on dask Bags (see the module notes)."""
    from ..models import ChainModel, GraphModel

    if est.solver not in ("bcfw", "subgradient"):
        raise ValueError(f"StructuredSVM on a dask Bag supports solver='bcfw' (a parallel "
                         f"variant) and solver='subgradient', not {est.solver!r}")
    if est.warm_start:
        raise ValueError("warm_start is not available on a dask Bag: the dual blocks do not "
                         "outlive the fit on the workers")
    client, data, model, made, counts = _setup(est, X, y, (ChainModel, GraphModel))
    lam = 1.0 / (est.C * int(counts.sum()))
    workers = _Workers(client, data, _make(_SSVMPart, est, lam, int(counts.sum()),
                                           float(counts.shape[0])), est.n_jobs)
    try:
        solver = _RemoteSSVM(workers, counts, _shapes(made), est, lam)
        est._learn(model, solver)
    finally:
        workers.close()
    est._solver = None
    _history(est.history_, workers, len(est.history_["pass"]), est.n_iter_)
    return est


