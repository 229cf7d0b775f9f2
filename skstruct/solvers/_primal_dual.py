"""Hazan & Urtasun's learner: primal-dual message passing with a parameter step.

Hazan & Urtasun, "A Primal-Dual Message-Passing Algorithm for Approximated
Large Scale Structured Prediction", NIPS 2010.  The message sweeps and the
per-sample objective are inference (:mod:`skstruct.inference._primal_dual`);
this module holds what learning adds: the objective and gradient in the
parameters (:func:`pd_gradient`, and :func:`fused_value` for line-search
trials), :class:`ParameterStep`, the parameter step with its memory, and
:class:`PrimalDual`, the solver over it that also owns the messages.
"""


import numpy as np

from .._core import n_chunks
from .._core._decoders import CHAIN, TREE
from .._core._graph import Adjacency
from .._core._jit import jit
from .._core._pool import for_chunks
from .._core._validation import check_memory
from ..inference._primal_dual import (
    BACK_AND_FORTH,
    BACKWARD_FIRST,
    FORWARD_FIRST,
    Counting,
    _node_belief,
    _node_update,
    _soft,
    _soft_belief,
    pd_objective,
    pd_sweeps,
)
from ..models._kernels import potentials
from ._lbfgs import two_loop


@jit
def _fused_value_chunks(D, adj, W, P, loss, counting, lam, chunks,
                        terms, truth, c0, c1):
    # the kernel of fused_value, over the chunks c0 <= c < c1
    node_offsets, edge_offsets, edges = D.node_offsets, D.edge_offsets, D.edges
    adj_offsets, adj_edge, adj_side = adj.offsets, adj.edge, adj.side
    xdata, xind, xptr, xrow, xoff = D.xdata, D.xind, D.xptr, D.xrow, D.xoff
    cmap, csign, tied, pwi = D.cmap, D.csign, D.tied, D.pw_index
    edata, eind, eptr, y, lw = D.edata, D.eind, D.eptr, D.y, D.loss_weight
    c_node, c_edge, eps = counting.node, counting.edge, counting.eps
    K = P.shape[1]
    Kp = W.shape[1]
    for c in range(c0, c1):
        acc = np.empty(Kp)
        x = np.empty(K)
        xe = np.empty(K * K)
        T = np.empty((K, K))
        t_truth = 0.0
        for s in range(chunks[c], chunks[c + 1]):
            total = 0.0
            for v in range(node_offsets[s], node_offsets[s + 1]):
                for q in range(Kp):
                    acc[q] = 0.0
                o = xoff[v]
                r = xrow[v]
                for p in range(xptr[r], xptr[r + 1]):
                    xv = xdata[p]
                    f = xind[p] + o
                    for q in range(Kp):
                        acc[q] += xv * W[f, q]
                yv = y[v]
                for k in range(K):
                    x[k] = csign[k] * acc[cmap[k]]
                if yv >= 0:
                    t_truth += x[yv]
                if loss:
                    for k in range(K):
                        if k != yv:
                            x[k] += lw[v]
                for p in range(adj_offsets[v], adj_offsets[v + 1]):
                    mrow = 2 * adj_edge[p] + adj_side[p]
                    for k in range(K):
                        x[k] -= lam[mrow, k]
                total += _soft(x, K, eps * c_node[v])
            for e in range(edge_offsets[s], edge_offsets[s + 1]):
                if tied:
                    f = pwi[e]
                    for a in range(K):
                        for b in range(K):
                            T[a, b] = P[f, a, b]
                else:
                    T[:, :] = 0.0
                    for p in range(eptr[e], eptr[e + 1]):
                        ev = edata[p]
                        f = eind[p]
                        for a in range(K):
                            for b in range(K):
                                T[a, b] += ev * P[f, a, b]
                ya = y[edges[e, 0]]
                yb = y[edges[e, 1]]
                if ya >= 0 and yb >= 0:
                    t_truth += T[ya, yb]
                for a in range(K):
                    for b in range(K):
                        xe[a * K + b] = T[a, b] + lam[2 * e, a] + lam[2 * e + 1, b]
                total += _soft(xe, K * K, eps * c_edge[e])
            terms[s] = total
        truth[c] = t_truth


def fused_value(D, adj, W, P, loss, counting, lam, chunks, terms, truth):
    """:func:`potentials` and :func:`~skstruct.inference._primal_dual.pd_objective`
    (without beliefs) in one pass: the objective terms per sample and the
    true labelling's score per chunk, with no (N, K) or (E, K, K) array
    written.  For the line search, which evaluates many trial weights once
    each.  ``D`` is the design's :class:`~skstruct.models._design.DesignArrays`, ``adj``
    the batch's :class:`~skstruct._core._graph.Adjacency`, ``counting`` a
    :class:`~skstruct.inference._primal_dual.Counting`.

    Runs on the threads in force (:func:`~skstruct._core._pool.for_chunks`).
    """
    def run(c0, c1):
        _fused_value_chunks(D, adj, W, P, loss, counting, lam, chunks,
                            terms, truth, c0, c1)

    for_chunks(run, chunks)


@jit
def _pd_gradient_chunks(D, adj, theta_v, pairwise, pw_index, counting,
                        lam, chunks, terms, gW_parts, gP_parts, c0, c1):
    # the kernel of pd_gradient, over the chunks c0 <= c < c1
    node_offsets, edge_offsets, edges = D.node_offsets, D.edge_offsets, D.edges
    adj_offsets, adj_edge, adj_side = adj.offsets, adj.edge, adj.side
    xdata, xind, xptr, xrow, xoff = D.xdata, D.xind, D.xptr, D.xrow, D.xoff
    cmap, csign, tied, y = D.cmap, D.csign, D.tied, D.y
    edata, eind, eptr = D.edata, D.eind, D.eptr
    c_node, c_edge, eps = counting.node, counting.edge, counting.eps
    K = theta_v.shape[1]
    for c in range(c0, c1):
        x = np.empty(K)
        b = np.empty(K)
        xe = np.empty(K * K)
        be = np.empty(K * K)
        be2 = np.empty(K * K)
        gW = gW_parts[c]
        gP = gP_parts[c]
        gW[:] = 0.0
        gP[:] = 0.0
        for s in range(chunks[c], chunks[c + 1]):
            total = 0.0
            for v in range(node_offsets[s], node_offsets[s + 1]):
                for k in range(K):
                    x[k] = theta_v[v, k]
                for p in range(adj_offsets[v], adj_offsets[v + 1]):
                    row = lam[2 * adj_edge[p] + adj_side[p]]
                    for k in range(K):
                        x[k] -= row[k]
                total += _node_belief(v, x, K, eps * c_node[v], counting, adj, pairwise,
                                      pw_index, lam, b, xe, be2)
                if y[v] >= 0:
                    b[y[v]] -= 1.0
                o = xoff[v]
                r = xrow[v]
                for p in range(xptr[r], xptr[r + 1]):
                    g = gW[xind[p] + o]
                    xv = xdata[p]
                    for k in range(K):
                        g[cmap[k]] += csign[k] * xv * b[k]
            for e in range(edge_offsets[s], edge_offsets[s + 1]):
                T = pairwise[pw_index[e]]
                la = lam[2 * e]
                lb = lam[2 * e + 1]
                for a in range(K):
                    for bb in range(K):
                        xe[a * K + bb] = T[a, bb] + la[a] + lb[bb]
                total += _soft_belief(xe, K * K, eps * c_edge[e], be)
                ya = y[edges[e, 0]]
                yb = y[edges[e, 1]]
                if ya >= 0 and yb >= 0:
                    be[ya * K + yb] -= 1.0
                if tied:
                    g = gP[pw_index[e]].ravel()
                    for q in range(K * K):
                        g[q] += be[q]
                else:
                    for p in range(eptr[e], eptr[e + 1]):
                        g = gP[eind[p]].ravel()
                        ev = edata[p]
                        for q in range(K * K):
                            g[q] += ev * be[q]
            terms[s] = total


def pd_gradient(D, adj, theta_v, pairwise, pw_index, counting, lam, chunks, terms,
                gW_parts, gP_parts):
    """Objective terms and the data part of the gradient, fused.

    Like :func:`pd_objective` with beliefs, but instead of storing the
    beliefs it accumulates ``sum_v x_v (x) (b_v - e_{y_v})`` (through the
    class-to-column map ``cmap``/``csign``) into ``gW_parts[c]`` (F, Kp) and
    ``sum_e ef_e (x) (b_e - e_{y_e})`` (or, ``tied``, per table
    ``pw_index[e]``) into ``gP_parts[c]`` (EF, K, K), one slice per chunk of
    samples, so that no (N, K) or (E, K, K) array is written.  ``D``, ``adj`` and
    ``counting`` as for :func:`fused_value`.

    Runs on the threads in force (:func:`~skstruct._core._pool.for_chunks`).
    """
    def run(c0, c1):
        _pd_gradient_chunks(D, adj, theta_v, pairwise, pw_index,
                            counting, lam, chunks, terms, gW_parts,
                            gP_parts, c0, c1)

    for_chunks(run, chunks)


@jit
def _pd_sweep_gradient_chunks(D, adj, theta_v, pairwise,
                              pw_index, counting, lam, forward,
                              max_degree, chunks, terms, gW_parts,
                              gP_parts, c0, c1):
    # the kernel of pd_sweep_gradient, over the chunks c0 <= c < c1
    node_offsets, edges = D.node_offsets, D.edges
    adj_offsets, adj_edge, adj_side = adj.offsets, adj.edge, adj.side
    xdata, xind, xptr, xrow, xoff = D.xdata, D.xind, D.xptr, D.xrow, D.xoff
    cmap, csign, tied, y = D.cmap, D.csign, D.tied, D.y
    edata, eind, eptr = D.edata, D.eind, D.eptr
    c_node, c_edge, eps = counting.node, counting.edge, counting.eps
    K = theta_v.shape[1]
    for c in range(c0, c1):
        mu = np.empty((max(max_degree, 1), K))
        tot = np.empty(K)
        buf = np.empty(K)
        x = np.empty(K)
        b = np.empty(K)
        xe = np.empty(K * K)
        be = np.empty(K * K)
        # this chunk's slices, taken once (views in the loops would cost atomic reference
        # counting, see skstruct.inference._primal_dual._node_update)
        gW = gW_parts[c]
        gP = gP_parts[c]
        gW[:] = 0.0
        gP[:] = 0.0
        for s in range(chunks[c], chunks[c + 1]):
            n0 = node_offsets[s]
            n1 = node_offsets[s + 1]
            total = 0.0
            for j in range(n1 - n0):
                v = n0 + j if forward else n1 - 1 - j
                p0 = adj_offsets[v]
                p1 = adj_offsets[v + 1]
                _node_update(v, adj_offsets, adj_edge, adj_side, theta_v, pairwise, pw_index,
                             c_node, c_edge, eps, lam, mu, tot, buf)
                for k in range(K):
                    x[k] = theta_v[v, k]
                for p in range(p0, p1):
                    row = 2 * adj_edge[p] + adj_side[p]
                    for k in range(K):
                        x[k] -= lam[row, k]
                total += _soft_belief(x, K, eps * c_node[v], b)
                if y[v] >= 0:
                    b[y[v]] -= 1.0
                o = xoff[v]
                r = xrow[v]
                for p in range(xptr[r], xptr[r + 1]):
                    f = xind[p] + o
                    xv = xdata[p]
                    for k in range(K):
                        gW[f, cmap[k]] += csign[k] * xv * b[k]
                for i in range(p1 - p0):
                    e = adj_edge[p0 + i]
                    side = adj_side[p0 + i]
                    u = edges[e, 1 - side]
                    # the edge is final once its later node (in this sweep's order) is
                    if (u > v) if forward else (u < v):
                        continue
                    pw = pw_index[e]
                    for a in range(K):
                        for bb in range(K):
                            xe[a * K + bb] = (pairwise[pw, a, bb] + lam[2 * e, a]
                                              + lam[2 * e + 1, bb])
                    total += _soft_belief(xe, K * K, eps * c_edge[e], be)
                    ya = y[edges[e, 0]]
                    yb = y[edges[e, 1]]
                    if ya >= 0 and yb >= 0:
                        be[ya * K + yb] -= 1.0
                    if tied:
                        f = pw_index[e]
                        for a in range(K):
                            for bb in range(K):
                                gP[f, a, bb] += be[a * K + bb]
                    else:
                        for p in range(eptr[e], eptr[e + 1]):
                            f = eind[p]
                            ev = edata[p]
                            for a in range(K):
                                for bb in range(K):
                                    gP[f, a, bb] += ev * be[a * K + bb]
            terms[s] = total


def pd_sweep_gradient(D, adj, theta_v, pairwise, pw_index, counting, lam,
                      forward, max_degree, chunks, terms, gW_parts, gP_parts):
    """One sweep of Lemma 1 in one direction, fused with :func:`pd_gradient` at the
    swept messages: what :func:`~skstruct.inference._primal_dual.pd_sweeps` (one sweep,
    index order if ``forward``, else reversed) then :func:`pd_gradient` compute, in one
    pass over the data (the same arithmetic up to rounding).

    A node's term and belief read only the messages out of the node, final once the sweep
    has updated it; an edge's read the messages of its two nodes, final once the sweep has
    updated the later of them.  So each node's share of the objective and gradient is
    taken right after its update, and each edge's right after the update of its later
    node.  Nodes with ``c_node == 0`` at ``eps > 0`` take their belief from an incident
    edge (see :func:`pd_gradient`), which may not be final yet: the caller uses this
    kernel only when there are none.  ``D``, ``adj``, ``counting`` and the outputs as for
    :func:`pd_gradient`.

    Runs on the threads in force (:func:`~skstruct._core._pool.for_chunks`).
    """
    def run(c0, c1):
        _pd_sweep_gradient_chunks(D, adj, theta_v, pairwise,
                                  pw_index, counting, lam,
                                  forward, max_degree, chunks,
                                  terms, gW_parts, gP_parts, c0,
                                  c1)

    for_chunks(run, chunks)


def counting_numbers(design, cn):
    """Counting numbers ``(c_node (N,), c_edge (E,))`` of a design."""
    b = design.batch
    N, E = b.n_nodes, b.n_edges
    edges = b.edges
    deg = np.bincount(edges.ravel(), minlength=N).astype(np.float64)
    if cn == "bethe":
        c_node, c_edge = 1.0 - deg, np.ones(E)
    elif cn == "convex":
        c_node, c_edge = np.ones(N), np.ones(E)
    elif cn == "trw":
        from scipy.sparse import coo_matrix
        from scipy.sparse.csgraph import connected_components

        g = coo_matrix((np.ones(E), (edges[:, 0], edges[:, 1])), shape=(N, N))
        _, comp = connected_components(g, directed=False)
        n_comp = np.bincount(comp).astype(np.float64)
        m_comp = np.bincount(comp[edges[:, 0]], minlength=n_comp.shape[0])
        rho = (n_comp[comp[edges[:, 0]]] - 1.0) / np.maximum(m_comp[comp[edges[:, 0]]], 1)
        c_edge = rho
        c_node = 1.0 - np.bincount(edges.ravel(), weights=np.repeat(rho, 2), minlength=N)
    elif callable(cn):
        c_node, c_edge = np.empty(N), np.empty(E)
        no, eo = b.node_offsets, b.edge_offsets
        for s in range(b.n_samples):
            local = edges[eo[s]:eo[s + 1]] - no[s]
            cv, ce = cn(int(no[s + 1] - no[s]), local)
            cv = np.asarray(cv, dtype=np.float64)
            ce = np.asarray(ce, dtype=np.float64)
            if cv.shape != (no[s + 1] - no[s],) or ce.shape != (eo[s + 1] - eo[s],) \
                    or not (np.all(np.isfinite(cv)) and np.all(np.isfinite(ce))):
                raise ValueError(f"counting_numbers: for sample {s} the callable must "
                                 f"return finite arrays of shapes ({no[s + 1] - no[s]},) "
                                 f"and ({eo[s + 1] - eo[s]},), got {cv.shape} and "
                                 f"{ce.shape}")
            c_node[no[s]:no[s + 1]] = cv
            c_edge[eo[s]:eo[s + 1]] = ce
    else:
        c_node, c_edge = np.full(N, float(cn[0])), np.full(E, float(cn[1]))
    chat = c_node + np.bincount(edges.ravel(), weights=np.repeat(c_edge, 2), minlength=N)
    # an isolated node's belief is a softmax at temperature epsilon * c_node: zero or negative
    # would divide by zero or pick the worst label
    bad = np.flatnonzero(~(chat > 0))
    if bad.size:
        v = int(bad[0])
        s = int(np.searchsorted(b.node_offsets, v, side="right") - 1)
        raise ValueError(f"counting_numbers {cn!r}: sample {s}, node {v - b.node_offsets[s]}"
                         f" has c_node + sum of its edges' c_edge = {chat[v]:.3g}; it must "
                         "be positive")
    return c_node, c_edge


class ParameterStep:
    """The parameter step of Hazan & Urtasun's learner, apart from the messages:
    the parameters ``W, P``, the regulariser ``sum |w| ** p / p`` and the
    step's memory (L-BFGS pairs, last step lengths).

    A subclass provides the objective at a trial (:meth:`value`), the
    messages a trial is judged at (:meth:`trial_messages`) and what keeping a
    trial's messages means (:meth:`adopt`); :class:`PrimalDual` holds the
    messages itself, a distributed fit keeps them on the machines that hold
    the samples.

    Parameters
    ----------
    W_shape, P_shape : tuple of int
        Shapes of the unary weights and of the pairwise tables.
    p, C : float
        Regulariser exponent, data weight.
    direction : {"lbfgs", "gradient"}
    step_size : float or None
        First trial step of the gradient direction's line search.
    """

    def __init__(self, W_shape, P_shape, *, p=2.0, C=1.0, direction="lbfgs", step_size=None):
        self.p, self.C = float(p), float(C)
        self.direction = direction
        self.W = np.zeros(W_shape)
        self.P = np.zeros(P_shape)
        self.step = step_size
        self.pairs = []
        self.g_prev = None
        self.n_iter = 0
        self.seconds = 0.0
        # times the state was partly reset (a distributed fit that lost a worker)
        self.restarts = 0

    def value(self, W, P, lam):
        """The objective at weights ``W, P`` and messages ``lam``."""
        raise NotImplementedError

    def trial_messages(self, W, P):
        """The messages a line-search trial at ``W, P`` is judged at."""
        raise NotImplementedError

    def adopt(self, lam):
        """Keep the messages ``lam`` of the accepted trial."""
        raise NotImplementedError

    def _reg(self, W, P):
        p = float(self.p)
        # with a large p, |w| ** p overflows as soon as a trial step takes a weight much
        # past 1: the regulariser is then +inf and the line search rejects the trial
        with np.errstate(over="ignore"):
            return (np.sum(np.abs(W) ** p) + np.sum(np.abs(P) ** p)) / p

    def regularised(self, W, P, value, gW, gP):
        """The objective and its gradient from the data term's: the regulariser added.

        Parameters
        ----------
        W, P : ndarray
            The weights.
        value : float
            The data term at ``W, P``.
        gW, gP : ndarray
            Its gradient.

        Returns
        -------
        value, gW, gP
            The objective and its gradient.
        """
        p = float(self.p)
        return (self._reg(W, P) + value, gW + np.abs(W) ** (p - 1.0) * np.sign(W),
                gP + np.abs(P) ** (p - 1.0) * np.sign(P))

    def weights(self):
        """Copies of the parameters ``W, P``."""
        return self.W.copy(), self.P.copy()

    def _direction(self, g):
        """Descent direction: ``-g``, or L-BFGS's two-loop estimate of
        ``-H^-1 g`` from the last ``memory`` steps (``-g`` if that is not a
        descent direction)."""
        pairs = self.pairs
        if self.direction == "gradient" or not pairs:
            return -g, False
        d = two_loop(pairs, g)
        if d @ g >= 0.0:
            pairs.clear()
            return -g, False
        return d, True

    def take_step(self, value, gW, gP):
        """The parameter step: Armijo backtracking along the descent direction.

        Parameters
        ----------
        value : float
            The objective at ``self.W, self.P``.
        gW, gP : ndarray
            Its gradient.

        Returns
        -------
        float
            The objective after the step (``value`` when no trial decreased it).
        """
        nW = gW.size
        g = np.concatenate([gW.ravel(), gP.ravel()])
        if self.g_prev is not None:
            # the curvature pair of the last accepted step
            s_ = self.s_prev
            y_ = g - self.g_prev
            sy = s_ @ y_
            if sy > 1e-10 * np.sqrt((s_ @ s_) * (y_ @ y_)):
                self.pairs.append((s_, y_, 1.0 / sy))
                del self.pairs[:-10]
        self.g_prev = None
        d, quasi_newton = self._direction(g)
        slope = float(g @ d)
        if slope == 0.0:
            return value
        if quasi_newton:
            # L-BFGS's natural step is 1; where the messages still move a lot
            # between iterations it is often too long, so start from twice the
            # last accepted one
            eta = min(1.0, 2.0 * getattr(self, "qn_step", 1.0))
        else:
            eta = self.step if self.step is not None else 1.0 / np.sqrt(-slope)
        dW = d[:nW].reshape(gW.shape)
        dP = d[nW:].reshape(gP.shape)
        first = True
        for _ in range(60):
            W = self.W + eta * dW
            P = self.P + eta * dP
            lam = self.trial_messages(W, P)
            trial = self.value(W, P, lam)
            if trial <= value + 1e-4 * eta * slope:
                self.W, self.P = W, P
                self.adopt(lam)
                if quasi_newton:
                    self.qn_step = eta
                else:
                    # grow the next trial only after a first-try success: each
                    # rejected trial costs a pass over the data
                    self.step = 1.5 * eta if first else eta
                self.g_prev = g
                self.s_prev = eta * d
                return trial
            first = False
            # the minimiser of the quadratic through value, slope and trial,
            # kept within [0.1, 0.5] of the step (halving when it is no help)
            denom = 2.0 * (trial - value - eta * slope)
            shrink = -slope * eta / denom if denom > 0.0 and np.isfinite(trial) else 0.5
            eta *= min(max(shrink, 0.1), 0.5)
        # no decrease along the direction: keep theta, forget the curvature
        self.pairs.clear()
        if not quasi_newton:
            self.step = eta
        return value


class PrimalDual(ParameterStep):
    """Hazan & Urtasun's learner on a built-in model's design: its state is
    the parameters ``W, P``, every sample's messages ``lam`` and the
    parameter step's memory (L-BFGS pairs, last step lengths).

    Parameters
    ----------
    design : Design
        The data (``design.y`` the true labels; all -1 to predict).
    loss_weight : ndarray of shape (n_nodes,)
        Hamming weight of every node (used when ``loss``).
    c_node, c_edge : ndarray
        Counting numbers (:func:`counting_numbers`).
    epsilon, p, C : float
        Temperature, regulariser exponent, data weight.
    loss : bool
        Add the loss to the node potentials.
    direction : {"lbfgs", "gradient"}
    step_size : float or None
        First trial step of the gradient direction's line search.
    message_passes : int
        Message sweeps per iteration.
    """

    def __init__(self, design, loss_weight, c_node, c_edge, *, epsilon, p=2.0, C=1.0,
                 loss=True, direction="lbfgs", step_size=None, message_passes=1):
        self.design = design
        self.D = design.args(design.y, loss_weight, 1)
        self.message_passes = int(message_passes)
        b = design.batch
        F, Kp, EF, K = (design.n_features_total, design.n_columns, design.n_edge_features,
                        design.n_classes)
        if not design.tied:
            # per-edge tables and beliefs: two (E, K, K)
            check_memory(2 * 8 * b.n_edges * K * K,
                         f"the per-edge ({K}, {K}) tables of {b.n_edges} edges",
                         "edge features give every edge its own table; drop them, merge "
                         "classes, or fit on fewer samples at a time")
        super().__init__((F, Kp), (EF, K, K), p=p, C=C, direction=direction,
                         step_size=step_size)
        self.lam = np.zeros((2 * b.n_edges, K))
        self.c_node, self.c_edge = c_node, c_edge
        self.nonconvex = bool(np.any(c_node < 0) or np.any(c_edge < 0))
        # chains and trees get a symmetric sweep (exact in one for Bethe)
        self.forests = bool(np.all(np.isin(design.kind, (CHAIN, TREE))))
        self.parity = 0
        self._cache = None
        self.eps = float(epsilon)
        self.loss = bool(loss)
        b = design.batch
        self.adj = b.adjacency if b.n_edges else Adjacency.dummy(b.n_nodes)
        self.max_degree = int(np.diff(self.adj.offsets).max()) if b.n_nodes else 0
        self.chunks = b.chunks(n_chunks())
        self.edge_index = np.arange(b.n_edges, dtype=np.int64)
        # a loopy sweep goes one way, so the gradient can be taken on the way (see
        # pd_sweep_gradient), except where a node's belief is an edge's marginal
        self.fused_sweep = not self.forests and (self.eps == 0.0 or bool(np.all(c_node != 0)))
        # the potentials' arrays, (N, K) and (E, K, K): filled anew for each new weights
        # rather than allocated, as they are as large as the data
        self._buffers = None

    def _theta(self, W, P):
        """Node potentials (loss-augmented if asked), edge tables with their index
        per edge, and the score of the true labelling."""
        # the sweep, the gradient and the next iteration's sweep all ask for the
        # potentials of the same (never mutated) weight arrays
        if self._cache is not None and self._cache[0] is W and self._cache[1] is P:
            return self._cache[2]
        D = self.D
        b = self.design.batch
        K = self.design.n_classes
        tied = bool(D.tied)
        if self._buffers is None:
            self._buffers = (np.empty((b.n_nodes, K)),
                             np.zeros((1, K, K)) if tied else np.empty((b.n_edges, K, K)))
        # the cache holds one set of weights, so the arrays it returns for earlier
        # weights are no longer read
        theta_v, PE = self._buffers
        truth = np.zeros(self.chunks.shape[0] - 1)
        T = np.ascontiguousarray(self.design.tables(P))
        potentials(D, np.ascontiguousarray(W), T, self.loss, self.chunks, theta_v, PE, truth)
        out = (theta_v, T if tied else PE, D.pw_index if tied else self.edge_index,
               float(truth.sum()))
        self._cache = (W, P, out)
        return out

    def sweep(self, W, P, lam, n):
        if lam.shape[0] == 0 or n == 0:
            return
        theta_v, tables, pwi, _ = self._theta(W, P)
        b = self.design.batch
        off, ae, side = self.adj.offsets, self.adj.edge, self.adj.side
        if self.forests:
            direction = BACK_AND_FORTH
        else:
            # loopy graphs: one direction per sweep, alternating across calls
            direction = FORWARD_FIRST if self.parity == 0 else BACKWARD_FIRST
            self.parity = (self.parity + n) % 2
        pd_sweeps(b.node_offsets, off, ae, side, theta_v, np.ascontiguousarray(tables), pwi,
                  self.c_node, self.c_edge, self.eps, lam, n, direction, self.max_degree,
                  self.chunks)

    def _terms(self, W, P, lam, beliefs):
        theta_v, tables, pwi, truth = self._theta(W, P)
        b = self.design.batch
        K = self.design.n_classes
        terms = np.zeros(b.n_samples)
        nb = np.zeros((b.n_nodes if beliefs else 1, K))
        eb = np.zeros((b.n_edges if beliefs else 1, K, K))
        pd_objective(b.node_offsets, b.edge_offsets, b.edges, self.adj, theta_v,
                     np.ascontiguousarray(tables), pwi, self._counting(), lam, self.chunks,
                     terms, nb, eb, beliefs)
        return truth, terms, nb, eb

    def _counting(self):
        return Counting(node=self.c_node, edge=self.c_edge, eps=self.eps)

    def value(self, W, P, lam):
        return self._reg(W, P) + self.data_value(W, P, lam)

    def data_value(self, W, P, lam):
        """``C`` times the data term at ``W, P, lam`` (no regulariser): what these
        samples add to the objective."""
        if self._cache is not None and self._cache[0] is W and self._cache[1] is P:
            truth, terms, _, _ = self._terms(W, P, lam, False)
        else:
            # new weights (a line-search trial): one fused pass, no big arrays
            b = self.design.batch
            terms = np.zeros(b.n_samples)
            parts = np.zeros(self.chunks.shape[0] - 1)
            fused_value(self.D, self.adj, np.ascontiguousarray(W), np.ascontiguousarray(P),
                        self.loss, self._counting(), lam, self.chunks, terms, parts)
            truth = float(parts.sum())
        return self.C * (float(terms.sum()) - truth)

    def beliefs(self, W, P, lam):
        return self._terms(W, P, lam, True)[2]

    def value_and_grad(self, W, P, lam):
        return self.regularised(W, P, *self.data_value_and_grad(W, P, lam))

    def data_value_and_grad(self, W, P, lam):
        """:meth:`data_value` and its gradient in ``W, P``."""
        theta_v, tables, pwi, truth = self._theta(W, P)
        b = self.design.batch
        n_chunks = self.chunks.shape[0] - 1
        terms = np.zeros(b.n_samples)
        gW_parts = np.zeros((n_chunks,) + W.shape)
        gP_parts = np.zeros((n_chunks,) + P.shape)
        pd_gradient(self.D, self.adj, theta_v, np.ascontiguousarray(tables), pwi,
                    self._counting(), lam, self.chunks, terms, gW_parts, gP_parts)
        C = self.C
        return (C * (float(terms.sum()) - truth), C * gW_parts.sum(axis=0),
                C * self.design.fold(gP_parts.sum(axis=0)))

    def sweep_value_and_grad(self, W, P, lam, n):
        """``n`` sweeps (:meth:`sweep`), then :meth:`data_value_and_grad` at the swept
        messages; on loopy graphs the last sweep and the gradient are one pass
        (:func:`pd_sweep_gradient`)."""
        if not self.fused_sweep or n == 0 or lam.shape[0] == 0:
            self.sweep(W, P, lam, n)
            return self.data_value_and_grad(W, P, lam)
        self.sweep(W, P, lam, n - 1)
        # the direction sweep() would take next
        forward = self.parity == 0
        self.parity = (self.parity + 1) % 2
        theta_v, tables, pwi, truth = self._theta(W, P)
        b = self.design.batch
        n_chunks = self.chunks.shape[0] - 1
        terms = np.zeros(b.n_samples)
        gW_parts = np.zeros((n_chunks,) + W.shape)
        gP_parts = np.zeros((n_chunks,) + P.shape)
        pd_sweep_gradient(self.D, self.adj, theta_v, np.ascontiguousarray(tables), pwi,
                          self._counting(), lam, forward, self.max_degree, self.chunks, terms,
                          gW_parts, gP_parts)
        C = self.C
        return (C * (float(terms.sum()) - truth), C * gW_parts.sum(axis=0),
                C * self.design.fold(gP_parts.sum(axis=0)))

    def key(self):
        """What a warm start must find unchanged."""
        b = self.design.batch
        return (b.n_samples, b.n_nodes, self.W.shape, self.P.shape)

    def carry(self, old):
        """Continue from ``old``'s weights, messages and step memory (a warm start)."""
        for name in ("W", "P", "lam", "step", "pairs", "g_prev", "s_prev", "qn_step", "n_iter",
                     "seconds"):
            if hasattr(old, name):
                setattr(self, name, getattr(old, name))

    def iterate(self):
        """One iteration: message sweeps, then one parameter step; returns the
        objective after it."""
        value, gW, gP = self.regularised(self.W, self.P, *self.sweep_value_and_grad(
            self.W, self.P, self.lam, self.message_passes))
        return self.take_step(value, gW, gP)

    def trial_messages(self, W, P, sweep=None):
        """The messages a line-search trial at ``W, P`` is judged at.

        Parameters
        ----------
        W, P : ndarray
            The trial weights.
        sweep : bool or None
            Sweep a copy of the messages for the trial (``message_passes``
            sweeps) rather than judge it at the current ones; None: when the
            counting numbers are not all non-negative (``nonconvex``).

        Returns
        -------
        ndarray
            The current messages, or the trial's copy (give it to :meth:`adopt`
            when the trial is accepted).
        """
        if not (self.nonconvex if sweep is None else sweep):
            return self.lam
        # with negative counting numbers F is not bounded below in the messages, so F
        # at stale messages is no upper bound and a step could exploit them: judge the
        # trial at messages swept for it
        lam = self.lam.copy()
        self.sweep(W, P, lam, self.message_passes)
        return lam

    def adopt(self, lam):
        """Keep the messages ``lam`` of the accepted trial (from :meth:`trial_messages`)."""
        self.lam = lam

    def data_round(self, W, P):
        """The messages' share of an iteration whose parameter step is taken
        elsewhere: ``message_passes`` sweeps at ``W, P``, then the data term.

        Parameters
        ----------
        W, P : ndarray
            The weights of the iteration.

        Returns
        -------
        value : float
            :meth:`data_value` at the swept messages.
        gW, gP : ndarray
            Its gradient in ``W, P``.
        """
        return self.sweep_value_and_grad(W, P, self.lam, self.message_passes)
