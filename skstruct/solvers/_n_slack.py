"""The n-slack cutting-plane method for the structured SVM.

I. Tsochantaridis, T. Joachims, T. Hofmann and Y. Altun, "Large Margin Methods for
Structured and Interdependent Output Variables", JMLR 6:1453-1484, 2005 (margin
rescaling).  In the ``lambda = 1 / (C n)`` form of the other solvers the problem is

    min_{w, xi}  lam / 2 ||w||^2 + sum_i xi_i   s.t.  xi_i >= b_i(y) - w . g_i(y),

one slack per sample and one constraint per labelling ``y`` of it, with ``b_i(y) =
loss(y_i, y) / n`` and ``g_i(y) = (phi(x_i, y_i) - phi(x_i, y)) / n``.  Each sample
keeps a working set of such planes, which always holds its zero plane (``y = y_i``,
so ``xi_i >= 0``).  Over the working sets the dual is

    max_a  sum_ij a_ij b_ij - 1 / (2 lam) ||sum_ij a_ij g_ij||^2,   a_i in a simplex,

one simplex per sample, with ``w(a) = 1/lam sum_ij a_ij g_ij``.  It is solved by
block coordinate ascent: each sample's block is the small simplex QP of the one-slack
solver (:func:`~skstruct.solvers._one_slack.simplex_qp`, with the other blocks' part
of ``w`` folded into its linear term), warm-started, sweeping the blocks until the sum
of their Frank-Wolfe gaps, which bounds the QP's suboptimality, is at most ``1e-9``
relative.  Any ``a`` bounds the optimum from below, so ``P(w(a)) - D(a)`` is a duality
gap whatever the QP's accuracy.

A pass calls the loss-augmented oracle on every sample, in batches of ``batch_size``
samples (``None``: all of them at once, in one parallel compiled pass for the built-in
models, which then also gives the exact primal and gap of the pass's starting weights
for free); each sample's most violated plane joins its working set when it is violated
beyond the sample's slack, and the QP is re-solved after each batch.  Planes inactive
for ``inactive_window`` solves are dropped, as in the one-slack solver.
"""

import time

import numpy as np

from .._core import n_chunks, n_threads
from .._core._jit import jit
from ..models._chain import chain_pass
from ..models._oracle import hinge_pass
from ._one_slack import OneSlack, ProtocolOneSlack, WorkingSet, plane_from_labels, simplex_qp

# the QP's sweeps over the blocks stop at this relative accuracy, or after MAX_SWEEPS
RTOL = 1e-9
MAX_SWEEPS = 1000


@jit
def qp_sweeps(planes, off, gram, goff, b, alpha, v, lam, rtol, gap_floor, max_sweeps,
              qp_iter):
    """Block coordinate ascent on the n-slack QP over packed working sets.

    Block ``k`` holds planes ``off[k]:off[k + 1]`` (rows of ``planes``, entries of ``b``
    and ``alpha``) and its Gram matrix, row-major at ``gram[goff[k]:]``.  Each block's
    simplex QP is solved with the other blocks' part of ``v = sum_ij a_ij g_ij`` folded
    into its linear term; ``alpha``, ``v`` and ``qp_iter`` (per block) are updated in
    place.  Sweeps stop once the sum of the blocks' Frank-Wolfe gaps met in a sweep is at
    most ``max(rtol * max(|D|, max |b|), gap_floor)``, or after ``max_sweeps``.  Returns
    the number of sweeps.
    """
    n_blocks = off.shape[0] - 1
    dim = v.shape[0]
    inv = 1.0 / lam
    lin = 0.0
    for j in range(b.shape[0]):
        lin += alpha[j] * b[j]
    sweeps = 0
    while sweeps < max_sweeps:
        sweeps += 1
        gap = 0.0
        bmax = 0.0
        for k in range(n_blocks):
            s = off[k]
            m = off[k + 1] - s
            G = gram[goff[k]:goff[k] + m * m].reshape((m, m))
            grad = np.empty(m)
            gmax = -np.inf
            ag = 0.0
            for j in range(m):
                acc = 0.0
                for d in range(dim):
                    acc += planes[s + j, d] * v[d]
                grad[j] = b[s + j] - acc * inv
                gmax = max(gmax, grad[j])
                ag += alpha[s + j] * grad[j]
                bmax = max(bmax, abs(b[s + j]))
            block_gap = gmax - ag
            gap += block_gap
            if block_gap <= 0.0:
                continue
            a_old = alpha[s:s + m].copy()
            # the block's QP with the other blocks' part of v folded into b
            lin_k = np.empty(m)
            for i in range(m):
                acc = 0.0
                for j in range(m):
                    acc += G[i, j] * a_old[j]
                lin_k[i] = grad[i] + acc * inv
            _, it = simplex_qp(G, lin_k, lam, alpha[s:s + m], m, rtol, 200 * m + 10000)
            qp_iter[k] += it
            for j in range(m):
                step = alpha[s + j] - a_old[j]
                if step != 0.0:
                    lin += step * b[s + j]
                    for d in range(dim):
                        v[d] += step * planes[s + j, d]
        vv = 0.0
        for d in range(dim):
            vv += v[d] * v[d]
        dual = lin - 0.5 * inv * vv
        if gap <= max(rtol * max(abs(dual), bmax, 1e-300), gap_floor):
            break
    return sweeps


class _NSlack:
    """The working sets, the QP and the pass; the paths supply ``_oracle(samples)``,
    ``_sample_plane(i, found)``, ``_flat`` and ``_set_weights``."""

    has_dual = True
    NS_STATE = ("sets", "v", "value", "ns_pending", "ns_oracle", "qp_sweeps", "last_gap")

    def _init_sets(self, dim, batch_size, inactive_window, inactive_threshold):
        S = self.n_samples
        self.batch_size = S if batch_size in (None, -1) else min(int(batch_size), S)
        self.sets = [WorkingSet(dim, self.lam, inactive_window, "n-slack working sets",
                                inactive_threshold, capacity=4) for _ in range(S)]
        # lam * w(a) = sum_ij a_ij g_ij
        self.v = np.zeros(dim)
        self.value = 0.0
        # the oracle over all samples at the current weights, when known: (found,
        # primal, seconds spent by a check on it, or 0 when the pass called it)
        self.ns_pending = None
        self.ns_oracle = 0
        self.qp_sweeps = 0
        # the last duality gap certified by an oracle call over all samples
        self.last_gap = np.inf

    def key(self):
        return super().key() + (self.batch_size,)

    def _certify(self):
        hinge, found = self._oracle(None)
        self.ns_oracle += 1
        w = self._flat()
        primal = 0.5 * self.lam * float(w @ w) + hinge.sum() / self.n_samples
        self.last_gap = max(primal - self.value, 0.0)
        self.ns_pending = [found, primal, 0.0]

    def _add(self, i, g, b):
        """Add the plane ``(g, b)`` to sample ``i``'s working set if it is violated at
        ``w`` beyond the sample's slack; returns the violation beyond it (0 if not)."""
        ws = self.sets[i]
        m = ws.m
        row = ws.dots(g)
        inv = 1.0 / self.lam
        # b_j - w . g_j for the set's planes, and the new one's
        slack = max(float(np.max(ws.b[:m] - ws.planes[:m] @ self.v * inv)), 0.0)
        excess = b - float(g @ self.v) * inv - slack
        if excess <= 1e-12 * max(abs(b), 1e-300):
            return 0.0
        ws.add(g, b, row)
        return excess

    def _solve(self):
        """Block coordinate ascent on the QP, then the pruning of inactive planes; sets
        ``v``, the weights and ``value``.

        The sweeps stop when the sum of the blocks' Frank-Wolfe gaps met in a sweep
        (each at the weights of its update) is at most ``RTOL`` relative, or a
        hundredth of the last certified duality gap: the QP need not be solved beyond
        what the next plane changes, and a pass without a new plane solves it
        further."""
        lam = self.lam
        sets = [ws for ws in self.sets if ws.m > 1]
        if sets:
            # one compiled call sweeps every block until the QP is solved: the sets are
            # packed for it (a copy of the planes per solve, far less than the sweeps)
            ms = np.array([ws.m for ws in sets], dtype=np.int64)
            off = np.zeros(len(sets) + 1, dtype=np.int64)
            np.cumsum(ms, out=off[1:])
            goff = np.zeros(len(sets) + 1, dtype=np.int64)
            np.cumsum(ms * ms, out=goff[1:])
            planes = np.concatenate([ws.planes[:ws.m] for ws in sets])
            gram = np.concatenate([ws.gram[:ws.m, :ws.m].ravel() for ws in sets])
            b = np.concatenate([ws.b[:ws.m] for ws in sets])
            alpha = np.concatenate([ws.alpha[:ws.m] for ws in sets])
            qp_iter = np.zeros(len(sets), dtype=np.int64)
            v = np.array(self.v, dtype=np.float64)
            self.qp_sweeps += qp_sweeps(planes, off, gram, goff, b, alpha, v, lam, RTOL,
                                        0.01 * self.last_gap, MAX_SWEEPS, qp_iter)
            self.v = v
            for k, ws in enumerate(sets):
                ws.alpha[:ws.m] = alpha[off[k]:off[k + 1]]
                ws.qp_iter += int(qp_iter[k])
        moved = False
        for ws in sets:
            ws.mark_idle()
            if ws.inactive_window:
                moved |= ws._prune()
        if moved:
            # a dropped plane's multiplier went to its zero plane
            self.v = np.zeros_like(self.v)
            for ws in sets:
                self.v += ws.alpha[:ws.m] @ ws.planes[:ws.m]
        self.value = self._dual()
        self._set_weights(self.v / lam)

    def _dual(self):
        lin = sum(float(ws.alpha[:ws.m] @ ws.b[:ws.m]) for ws in self.sets if ws.m > 1)
        return lin - 0.5 / self.lam * float(self.v @ self.v)

    def run_pass(self, order):
        """One pass over ``order`` (an empty one only compiles the kernels).  With one
        batch, returns the duality gap of the weights the pass started from; else the
        sum of the violations beyond the slacks met along the way (no gap is known
        without an oracle call at fixed weights)."""
        if len(order) == 0:
            self._compile()
            return 0.0
        order = np.asarray(order, dtype=np.int64)
        S = self.n_samples
        B = self.batch_size
        if B >= S:
            if self.ns_pending is None:
                self._certify()
            found, primal, seconds = self.ns_pending
            self.ns_pending = None
            self.seconds += seconds
            estimate = primal - self.value
            for i in order:
                self._add(i, *self._sample_plane(i, found))
            # without a new plane, the QP is solved further
            self._solve()
            return estimate
        estimate = 0.0
        for start in range(0, len(order), B):
            batch = order[start:start + B]
            if start == 0 and self.ns_pending is not None:
                # a check's oracle call at these weights serves the first batch
                found, _, seconds = self.ns_pending
                self.seconds += seconds
            else:
                _, found = self._oracle(batch)
            self.ns_pending = None
            for i in batch:
                estimate += self._add(i, *self._sample_plane(i, found))
            self._solve()
        return estimate

    def objective(self):
        """``(P(w), D(a), gap)``: the oracle over all samples at the current weights
        (kept for the next pass) and the QP's value."""
        if self.ns_pending is None:
            t0 = time.perf_counter()
            self._certify()
            self.ns_pending[2] = time.perf_counter() - t0
        primal = self.ns_pending[1]
        return primal, self.value, primal - self.value


class NSlack(_NSlack, OneSlack):
    """The n-slack cutting-plane method on a built-in model's design.

    Each sample's working set holds dense planes of ``n_features_total x n_columns +
    n_edge_features x K^2`` numbers.  The oracle over all samples is one parallel
    compiled pass (the plain-chain Viterbi kernel on chains with one transition
    table); over a batch, one compiled call per sample.

    Parameters
    ----------
    design, loss_weight, lam, surrogate, averaging, inference_iter, n_jobs
        As :class:`~skstruct.solvers._design_solver.DesignSolver`; ``surrogate`` must
        be ``"margin"``; ``averaging`` does not apply (the iterate is the QP's
        solution).
    batch_size : int or None
        Samples whose oracle calls precede each solve of the QP (None or -1: all).
    inactive_window, inactive_threshold
        As :class:`~skstruct.solvers.OneSlack`, per sample.
    """

    STATE = OneSlack.STATE + _NSlack.NS_STATE
    NAME = "n_slack"

    def __init__(self, design, loss_weight, *, batch_size=None, inactive_window=50,
                 inactive_threshold=0.0, **kwargs):
        super().__init__(design, loss_weight, inference_cache=0, inactive_window=0, **kwargs)
        self._init_sets(self.W.size + self.P.size, batch_size, inactive_window,
                        inactive_threshold)

    def _oracle(self, samples):
        """The loss-augmented labels of ``samples`` (None: all) at the current weights,
        and the hinges ``(S,)`` (zero outside ``samples``)."""
        d = self.design
        D = self.D
        S = self.n_samples
        hinge = np.zeros(S)
        ell = np.zeros(S)
        if samples is None:
            runs = [d.batch.chunks(n_chunks())]
        else:
            runs = [np.array([s, s + 1], np.int64) for s in samples]
        with n_threads(self.n_jobs):
            for chunks in runs:
                if self.plain_chain:
                    lab = self._lab
                    chain_pass(D.node_offsets, D.xdata, D.xind, D.xptr, D.xrow, D.xoff, D.y,
                               D.loss_weight, self.W, np.ascontiguousarray(self.P[0]),
                               d.max_nodes, chunks, hinge, ell, lab)
                else:
                    sc = self.scratch
                    hinge_pass(D, self.code, 1.0, self.W, d.tables(self.P), sc, d.max_nodes,
                               d.max_edges, chunks, hinge, ell)
                    lab = sc.lab
        return hinge, lab.copy()

    def _sample_plane(self, i, lab):
        g = np.zeros(self.ws.dim)
        GW, GP = self._split(g)
        D = self.D
        b = plane_from_labels(D, lab, D.node_offsets[i], D.node_offsets[i + 1],
                              D.edge_offsets[i], D.edge_offsets[i + 1], 1.0 / self.n_samples,
                              GW, GP)
        return g, b

    def _flat(self):
        return np.concatenate([self.W.ravel(), self.P.ravel()])


class ProtocolNSlack(_NSlack, ProtocolOneSlack):
    """The n-slack cutting-plane method for models of the protocol
    (``loss_augmented_inference`` once per sample and pass).

    Parameters
    ----------
    model, X, y, lam, averaging
        As :class:`~skstruct.solvers._protocol.ProtocolSolver` (``averaging`` does not
        apply).
    batch_size, inactive_window, inactive_threshold
        As :class:`NSlack`.
    """

    STATE = ProtocolOneSlack.STATE + _NSlack.NS_STATE

    def __init__(self, model, X, y, *, batch_size=None, inactive_window=50,
                 inactive_threshold=0.0, **kwargs):
        super().__init__(model, X, y, inference_cache=0, inactive_window=0, **kwargs)
        self._init_sets(self.w.shape[0], batch_size, inactive_window, inactive_threshold)

    def _oracle(self, samples):
        S = self.n_samples
        hinge = np.zeros(S)
        found = {}
        w = self.w
        for s in range(S) if samples is None else samples:
            psi, loss = self.corner(int(s), w)
            hinge[s] = max(0.0, loss - w @ psi)
            found[int(s)] = (psi, loss)
        return hinge, found

    def _sample_plane(self, i, found):
        psi, loss = found[int(i)]
        n = self.n_samples
        return psi / n, loss / n

    def _flat(self):
        return self.w
