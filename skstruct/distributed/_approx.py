"""Hazan & Urtasun's learner on a cluster: the messages of every partition live on
its worker, the client takes the parameter step."""

import itertools

import numpy as np

from ..solvers._primal_dual import ParameterStep
from ._transport import _history, _setup, _shapes, _Workers
from ._workers import _make, _naming, _partition_design, _split


class _PrimalDualPart:
    """A partition's Hazan-Urtasun messages and data term."""

    def __init__(self, part, index, est):
        from ..solvers._primal_dual import PrimalDual, counting_numbers

        design, _ = _partition_design(est.model_.design, part, index)
        with _naming(index):
            est._check_labels(design)
            c_node, c_edge = counting_numbers(design, est.counting_numbers)
        self.pd = PrimalDual(design, est._context_lw(design), c_node, c_edge,
                             **est._solver_params())
        self.shapes = (self.pd.W.shape, self.pd.P.shape)
        self.pending = {}

    def info(self):
        return self.pd.nonconvex

    def iterate(self, w, adopt):
        """The messages of the accepted trial (if kept), ``message_passes`` sweeps, then
        the data term and its gradient."""
        pd = self.pd
        if adopt in self.pending:
            pd.adopt(self.pending[adopt])
        self.pending.clear()
        W, P = _split(w, self.shapes)
        value, gW, gP = pd.data_round(W, P)
        return value, np.concatenate([gW.ravel(), gP.ravel()])

    def trial(self, w, token):
        """The data term at a line-search trial: at the current messages, or (``token``
        not None) at messages swept for the trial, kept under ``token``."""
        pd = self.pd
        W, P = _split(w, self.shapes)
        lam = pd.trial_messages(W, P, sweep=token is not None)
        if token is not None:
            self.pending[token] = lam
        return pd.data_value(W, P, lam)


class _Restart(Exception):
    """Part of the messages were rebuilt during a line search."""


class _RemotePrimalDual(ParameterStep):
    """Hazan & Urtasun's parameter step with the messages and the data on the
    workers: the client keeps the parameters and the step's memory, and takes
    :class:`~skstruct.solvers._primal_dual.PrimalDual`'s step."""

    def __init__(self, workers, shapes, nonconvex, est):
        super().__init__(shapes[0], shapes[1], p=est.p, C=est.C, direction=est.solver,
                         step_size=est.step_size)
        self.workers = workers
        self.shapes = shapes
        self.nonconvex = nonconvex
        self._tokens = itertools.count()
        self._kept = None

    def _flat(self, W, P):
        return np.concatenate([W.ravel(), P.ravel()])

    def iterate(self):
        res, rebuilt = self.workers.call("iterate", (self._flat(self.W, self.P),),
                                         [(self._kept,)] * len(self.workers.data))
        self._kept = None
        if rebuilt:
            self._restarted()
        gW, gP = _split(sum(r[1] for r in res.values()), self.shapes)
        value, gW, gP = self.regularised(self.W, self.P, sum(r[0] for r in res.values()),
                                         gW, gP)
        try:
            return self.take_step(value, gW, gP)
        except _Restart:
            self._restarted()
            return value

    def _restarted(self):
        """Some messages started again from zero: the step's curvature pairs no longer
        describe this objective."""
        self.restarts += 1
        self.pairs.clear()
        self.g_prev = None

    def trial_messages(self, W, P):
        """A token naming the messages the workers sweep for the trial (None: judge it
        at the current ones)."""
        return next(self._tokens) if self.nonconvex else None

    def value(self, W, P, lam):
        res, rebuilt = self.workers.call("trial", (self._flat(W, P),),
                                         [(lam,)] * len(self.workers.data))
        if rebuilt:
            raise _Restart
        return self._reg(W, P) + sum(res.values())

    def adopt(self, lam):
        """The workers keep the accepted trial's messages at the next iteration."""
        self._kept = lam


def fit_approx(est, X, y):
    """:meth:`ApproxStructuredPredictor.fit` on dask Bags (see the module notes)."""
    from ..models import ChainModel, GraphModel

    if est.warm_start:
        raise ValueError("warm_start is not available on a dask Bag: the messages do not "
                         "outlive the fit on the workers")
    client, data, model, made, _ = _setup(est, X, y, (ChainModel, GraphModel))
    est._check_labels(made[0])
    workers = _Workers(client, data, _make(_PrimalDualPart, est), est.n_jobs)
    try:
        # builds every partition's state, outside the timed loop
        info, _ = workers.call("info")
        solver = _RemotePrimalDual(workers, _shapes(made), any(info.values()), est)
        est._run(solver)
    finally:
        workers.close()
    est._solver = None
    _history(est.history_, workers, len(est.history_["objective"]), est.n_iter_)
    return est


