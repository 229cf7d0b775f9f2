"""Stochastic subgradient descent with the Pegasos step, one epoch per call.

Shalev-Shwartz, Singer & Srebro, "Pegasos", ICML 2007: step ``1 / (lambda
(t + 1))`` on ``lambda / 2 ||w||^2 + 1 / n sum_i H_i(w)``, with the weighted
averaging ``w_avg <- t / (t + 2) w_avg + 2 / (t + 2) w`` of Lacoste-Julien,
Schmidt & Bach (2012).  Sparse steps stay sparse: ``w = a * v`` and
``w_avg = A v + B z`` with scalars ``a, A, B`` (see the module code for the
recurrences), so a step costs the features of the samples it touches.
Within a mini-batch the oracles run in parallel at the same ``w``.
"""

import numpy as np
from numba import prange

from .._core import n_threads
from .._core._jit import jit, pjit
from ..models._kernels import symmetric_into
from ..models._oracle import _corner, make_work
from ..models._submodular import project_supermodular
from ._design_solver import DesignSolver

# state slots
A_SCALE, AVG_A, AVG_B, STEP = 0, 1, 2, 3


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
def _sample(D, s, j, a, Wv, Preal, U, Ua, PE, msgs, bp, lab, Sc, work, surrogate, trips,
            n_trips, hinge):
    """Corner of sample ``s`` at ``a * Wv, Preal``, its triplets copied to slot ``j``."""
    _, hinge[j], n_trip = _corner(D, s, a, Wv, Preal, U, Ua, PE, msgs, bp, lab, Sc, work,
                                  surrogate)
    n_trips[j] = n_trip
    for q in range(n_trip):
        trips[j, 0, q] = work.trip_edge[q]
        trips[j, 1, q] = work.trip_a[q]
        trips[j, 2, q] = work.trip_b[q]
        trips[j, 3, q] = work.trip_w[q]


@jit
def _add_corner(D, s, j, coef, zc, Wv, Wz, Pv, Pz, Sc, trips, n_trips):
    """``Wv, Pv += coef * d`` and ``Wz, Pz += zc * d``, ``d`` the direction of sample
    ``s``'s corner (node coefficients ``Sc``, triplets in slot ``j``)."""
    Kp = Wv.shape[1]
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
        e = int(trips[j, 0, q])
        ta = int(trips[j, 1, q])
        tb = int(trips[j, 2, q])
        wq = trips[j, 3, q]
        for p in range(eptr[e], eptr[e + 1]):
            d = wq * edata[p]
            Pv[eind[p], ta, tb] += coef * d
            Pz[eind[p], ta, tb] += zc * d


@pjit
def subgradient_sum(D, surrogate, idx, W, Preal, U, Ua, PE, msgs, bp, lab, Sc, trips, n_trips,
                    hinge, belief, up, max_nodes, max_edges, gW, gP):
    """The corners of the samples ``idx`` at ``W, Preal`` (the tables), in parallel:
    their hinges into ``hinge`` and the sum of their descent directions into ``gW, gP``
    (``P``'s form).  A mini-batch's share for a step taken elsewhere."""
    K = U.shape[1]
    B = idx.shape[0]
    for j in prange(B):
        work = make_work(K, max_nodes, max_edges, belief, up)
        _sample(D, idx[j], j, 1.0, W, Preal, U, Ua, PE, msgs, bp, lab, Sc, work, surrogate,
                trips, n_trips, hinge)
    for j in range(B):
        _add_corner(D, idx[j], j, 1.0, 0.0, gW, gW, gP, gP, Sc, trips, n_trips)


@pjit
def subgradient_epoch(D, surrogate, order, batch_size, lam, averaging, Wv, Pv, Wz, Pz, state,
                      Preal, U, Ua, PE, msgs, bp, lab, Sc, trips, n_trips, belief, up,
                      max_nodes, max_edges, project, mu):
    """One epoch over ``order`` in mini-batches; returns the mean surrogate value
    met along the way (computed at the iterates, not at the final ``w``).

    With ``project`` every step ends with the Euclidean projection of the
    pairwise tables onto the supermodular cone (projected subgradient
    descent); the cone is closed under positive scaling, so the projection
    of ``a * Pv`` is ``a`` times that of ``Pv``, and the averages of
    feasible iterates stay feasible."""
    n_order = order.shape[0]
    K = U.shape[1]
    hinge = np.zeros(batch_size)
    work1 = make_work(K, max_nodes, max_edges, belief, up)
    total = 0.0
    for start in range(0, n_order, batch_size):
        stop = min(start + batch_size, n_order)
        B = stop - start
        a = state[A_SCALE]
        if D.sym:
            # undirected: Pv holds the upper triangles, the oracle scores the tables
            symmetric_into(Pv, a, Preal)
        else:
            _scaled_copy(Pv, a, Preal)
        if B == 1:
            # a parallel region per sample would cost more than the sample
            _sample(D, order[start], 0, a, Wv, Preal, U, Ua, PE, msgs, bp, lab, Sc, work1,
                    surrogate, trips, n_trips, hinge)
        else:
            for j in prange(B):
                work = make_work(K, max_nodes, max_edges, belief, up)
                _sample(D, order[start + j], j, a, Wv, Preal, U, Ua, PE, msgs, bp, lab, Sc,
                        work, surrogate, trips, n_trips, hinge)
        for j in range(B):
            total += hinge[j]
        t = state[STEP]
        state[STEP] = t + 1.0
        eta = 1.0 / (lam * (t + 1.0))
        shrink = 1.0 - 1.0 / (t + 1.0)
        if shrink == 0.0:
            _scale(Wv, 0.0)
            _scale(Pv, 0.0)
            a = 1.0
        else:
            a *= shrink
        coef = eta / (B * a)
        # z receives -(A / B) * delta; with no average yet (t == 0) it restarts
        if averaging and t > 0.0:
            zc = -state[AVG_A] / state[AVG_B] * coef
        else:
            zc = 0.0
        for j in range(B):
            _add_corner(D, order[start + j], j, coef, zc, Wv, Wz, Pv, Pz, Sc, trips, n_trips)
        if project:
            # the move to the cone, in v-units, is offset in z like a step
            project_supermodular(Pv, Preal, mu)
            pv = Pv.ravel()
            pr = Preal.ravel()
            pz = Pz.ravel()
            zp = -state[AVG_A] / state[AVG_B] if averaging and t > 0.0 else 0.0
            for q in range(pv.shape[0]):
                dq = pr[q] - pv[q]
                pz[q] += zp * dq
                pv[q] = pr[q]
        if averaging:
            if t == 0.0:
                _scale(Wz, 0.0)
                _scale(Pz, 0.0)
                state[AVG_A] = a
                state[AVG_B] = 1.0
            else:
                rho = 2.0 / (t + 2.0)
                state[AVG_A] = (1.0 - rho) * state[AVG_A] + rho * a
                state[AVG_B] *= 1.0 - rho
                if state[AVG_B] < 1e-150:
                    _scale(Wz, state[AVG_B])
                    _scale(Pz, state[AVG_B])
                    state[AVG_B] = 1.0
        if a < 1e-100:
            _scale(Wv, a)
            _scale(Pv, a)
            state[AVG_A] /= a
            a = 1.0
        state[A_SCALE] = a
    return total / max(n_order, 1)


class Subgradient(DesignSolver):
    """Stochastic subgradient descent (Pegasos step) on a built-in model's design.

    The state: the weights as ``a * (Wv, Pv)``, the running average as
    ``A (Wv, Pv) + B (Wz, Pz)`` (``state`` holds ``a, A, B`` and the step
    count), and the per-slot corner triplets of a mini-batch.

    Parameters
    ----------
    batch_size : int
        Samples per step; their oracles run in parallel at the same weights.
    **kwargs
        Those of :class:`DesignSolver`.
    """

    STATE = DesignSolver.STATE + ("Wz", "Pz", "state")

    def __init__(self, design, loss_weight, *, batch_size=1, **kwargs):
        super().__init__(design, loss_weight, **kwargs)
        d = design
        self.batch_size = min(int(batch_size), self.n_samples)
        self.Wz = np.zeros_like(self.W)
        self.Pz = np.zeros_like(self.P)
        self.Preal = np.zeros_like(self.P)
        K = self.P.shape[1]
        self.mu = np.zeros((max(K - 1, 0), max(K - 1, 0)))
        self.state = np.array([1.0, 1.0, 1.0, 0.0])
        n_trip = 2 * d.max_edges * max(1, d.max_nodes) + 2
        self.trips = np.zeros((self.batch_size, 4, n_trip))
        self.n_trips = np.zeros(self.batch_size, np.int64)

    def key(self):
        return super().key() + (self.batch_size,)

    def run_pass(self, order):
        """One epoch over ``order`` in mini-batches; returns the mean surrogate
        value met along the way."""
        sc = self.scratch
        d = self.design
        with n_threads(self.n_jobs):
            return subgradient_epoch(self.D, self.code, order, self.batch_size, self.lam,
                                     self.averaging, self.W, self.P, self.Wz, self.Pz,
                                     self.state, self.Preal, sc["U"], sc["Ua"], sc["PE"],
                                     sc["msgs"], sc["bp"], sc["lab"], sc["Sc"], self.trips,
                                     self.n_trips, sc["belief"], sc["up"], d.max_nodes,
                                     d.max_edges, bool(d.submodular), self.mu)

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
        if idx.shape[0] > self.trips.shape[0]:
            self.trips = np.zeros((idx.shape[0],) + self.trips.shape[1:])
            self.n_trips = np.zeros(idx.shape[0], np.int64)
        sc = self.scratch
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
            subgradient_sum(self.D, self.code, idx, np.ascontiguousarray(W), Preal, sc["U"],
                            sc["Ua"], sc["PE"], sc["msgs"], sc["bp"], sc["lab"], sc["Sc"],
                            self.trips, self.n_trips, hinge, sc["belief"], sc["up"],
                            d.max_nodes, d.max_edges, gW, gP)
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
        a, A, B = self.state[:3]
        if self.averaging and self.state[STEP] > 0:
            return A * self.W + B * self.Wz, A * self.P + B * self.Pz
        return a * self.W, a * self.P
