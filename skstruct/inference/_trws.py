"""Sequential tree-reweighted message passing (TRW-S) in max-sum form.

Implements Kolmogorov, "Convergent tree-reweighted message passing for energy
minimization", IEEE TPAMI 28(10), 2006, with scores maximised instead of
energies minimised.  Batch conventions are those of
:mod:`skstruct.inference._graph`; the adjacency arrays come from
:func:`~skstruct.inference._graph.build_adjacency`.

Within a sample the node order is the global index order.  The graph is
covered by monotonic chains: at node ``s`` the ``i``-th edge to a lower
neighbour is continued by the ``i``-th edge to a higher neighbour (both in
adjacency, i.e. edge, order), so every edge lies in exactly one chain and
``n_s = max(#lower, #higher)`` chains (1 for an isolated node) pass through
``s``; ``gamma_s = 1 / n_s``.

The upper bound is the tree-decomposition bound of those chains under the
current reparametrisation ``theta_hat_s = unary_s + sum of incoming
messages``, ``theta_hat_st(a, b) = theta_st(a, b) - m_{s->t}(b) -
m_{t->s}(a)``: chain ``T`` gets ``gamma_s theta_hat_s`` at each of its nodes
and ``theta_hat_st`` at each of its edges, and the bound is the sum over
chains of the chain's maximum (one Viterbi pass per chain).  The pieces add up
to the original score of every labelling, so the bound holds for any finite
messages.  ``-inf`` message entries are hard constraints; they are valid as
long as they only rule out labels that no feasible labelling uses, which is
the case for zero-initialised messages and for every message TRW-S computes
from them (a ``-inf`` arises only by arc-consistency style propagation of
``-inf`` potentials).
"""

from typing import NamedTuple

import numpy as np

from .._core._jit import jit, leaf
from .._core._pool import for_range
from ._exact import _sample_score
from ._loopy import _adopt, _decode, _gather_row, maxplus_t

NEG_INF = -np.inf


class ChainOrder(NamedTuple):
    """A sample's decomposition into monotonic chains (see :func:`_chain_structure`)."""

    n_lo: np.ndarray       # (n,) int64 lower neighbours of each node
    n_hi: np.ndarray       # (n,) int64 higher neighbours
    hi_pos: np.ndarray     # adjacency positions of each node's higher edges, by slot
    lo_rank: np.ndarray    # the chain slot each edge continues at its higher end
    gamma: np.ndarray      # (n,) each node's share of its potential per chain


class TRWSOut(NamedTuple):
    """What :func:`trws_batch` writes."""

    labels: np.ndarray     # (N,) int64 the best labelling decoded
    bound: np.ndarray      # (S,) the best upper bound
    n_iter: np.ndarray     # (S,) int64 iterations run
    converged: np.ndarray  # (S,) bool a stopping rule was met
    score: np.ndarray      # (S,) the labelling's score


@leaf
def _send(v, p, gamma, theta_hat, lv, adj_edge, adj_side, pairwise, pw_index, messages, h,
          out, shapes, dt):
    """TRW-S update of the message from ``v`` along adjacency position ``p``.

    ``m_{v->t}(x_t) = max_x [gamma theta_hat_v(x) - m_{t->v}(x) + theta(x, x_t)]``,
    shifted to max 0.  Where ``theta_hat_v`` is ``-inf`` the label is ruled
    out, so the term is ``-inf`` (this also avoids ``-inf - -inf`` when the
    ``-inf`` came from ``m_{t->v}`` itself).  ``theta_hat[lv]`` is ``v``'s (indexed in
    place: a row view costs atomic reference counts per message).  ``shapes``: see
    :func:`~skstruct.inference._loopy.maxplus_t`.
    """
    n_labels = h.shape[0]
    e = adj_edge[p]
    side = adj_side[p]
    in_row = 2 * e + 1 - side
    out_row = 2 * e + side
    for k in range(n_labels):
        th = theta_hat[lv, k]
        h[k] = NEG_INF if th == NEG_INF else gamma * th - messages[in_row, k]
    maxplus_t(h, pairwise, pw_index[e], side, out, shapes, dt)
    m = NEG_INF
    for k in range(n_labels):
        m = max(m, out[k])
    if m == NEG_INF:
        for k in range(n_labels):
            messages[out_row, k] = NEG_INF
    else:
        for k in range(n_labels):
            messages[out_row, k] = out[k] - m


@jit
def _labelling_scores_batch_range(node_offsets, edge_offsets, edges, unary, pairwise, pw_index,
                                  labels, out, s0, s1):
    # the kernel of labelling_scores_batch, over the samples s0 <= s < s1
    for s in range(s0, s1):
        out[s] = _sample_score(node_offsets[s], node_offsets[s + 1], edge_offsets[s],
                               edge_offsets[s + 1], edges, unary, pairwise, pw_index, labels, 0)


def labelling_scores_batch(node_offsets, edge_offsets, edges, unary, pairwise, pw_index, labels,
                           out):
    """Score of a given labelling for every sample.

    Runs on the threads in force (:func:`~skstruct._core._pool.for_range`).

    Parameters
    ----------
    node_offsets, edge_offsets : int64 ndarray of shape (S + 1,)
        Node and edge ranges of each sample.
    edges : int64 ndarray of shape (E, 2)
        Global node indices of each edge.
    unary : float64 ndarray of shape (N, K)
        Node scores.
    pairwise : float64 ndarray of shape (M, K, K)
        Edge score tables.
    pw_index : int64 ndarray of shape (E,)
        Table used by each edge.
    labels : int64 ndarray of shape (N,)
        Label of every node.
    out : float64 ndarray of shape (S,)
        Written with ``sum_v unary[v, x_v] + sum_e pairwise[pw_index[e], x_u,
        x_v]`` per sample (0 for an empty sample, ``-inf`` for a labelling that
        violates a hard constraint).
    """
    def run(s0, s1):
        _labelling_scores_batch_range(node_offsets, edge_offsets, edges, unary, pairwise, pw_index,
                                      labels, out, s0, s1)

    for_range(run, node_offsets.shape[0] - 1)


@jit
def _chain_structure(n0, n1, e0, e1, adj_offsets, adj_edge, adj_nbr, adj_side):
    """Monotonic chains of one sample.

    Returns ``(n_lo, n_hi, hi_pos, lo_rank, gamma)``: per node the number of
    lower and higher neighbours and ``gamma``; ``hi_pos[adj_offsets[v] - a0 +
    i]`` is the adjacency position of the ``i``-th higher edge of ``v`` and
    ``lo_rank[p - a0]`` the chain slot in which the edge at position ``p``
    enters its other end (its rank among that node's lower edges), with
    ``a0 = adj_offsets[n0]``.
    """
    n = n1 - n0
    a0 = adj_offsets[n0]
    a1 = adj_offsets[n1]
    n_lo = np.zeros(n, np.int64)
    n_hi = np.zeros(n, np.int64)
    hi_pos = np.empty(a1 - a0, np.int64)
    rank = np.zeros(a1 - a0, np.int64)
    lo_rank = np.zeros(a1 - a0, np.int64)
    rev_pos = np.empty(max(2 * (e1 - e0), 1), np.int64)
    for v in range(n0, n1):
        lv = v - n0
        for p in range(adj_offsets[v], adj_offsets[v + 1]):
            t = adj_nbr[p]
            rev_pos[2 * (adj_edge[p] - e0) + adj_side[p]] = p
            if t > v:
                hi_pos[adj_offsets[v] - a0 + n_hi[lv]] = p
                rank[p - a0] = n_hi[lv]
                n_hi[lv] += 1
            elif t < v:
                rank[p - a0] = n_lo[lv]
                n_lo[lv] += 1
    for p in range(a0, a1):
        other = rev_pos[2 * (adj_edge[p] - e0) + 1 - adj_side[p]]
        lo_rank[p - a0] = rank[other - a0]
    gamma = np.empty(n)
    for lv in range(n):
        gamma[lv] = 1.0 / max(n_lo[lv], n_hi[lv], 1)
    return ChainOrder(n_lo=n_lo, n_hi=n_hi, hi_pos=hi_pos, lo_rank=lo_rank, gamma=gamma)


@leaf
def _chain_bound(n0, n1, theta_hat, chains, a0, adj, pairwise, pw_index, messages, f, g, f2,
                 shapes, dt):
    """Sum over the monotonic chains of the chain maximum (the TRW bound).

    ``theta_hat`` is ``(n, K)`` for the sample's nodes, ``chains`` the sample's
    :class:`ChainOrder`.  Each chain starts at a node ``v`` with chain slot ``i >=
    n_lo[v]`` (no lower edge feeds it) and follows slot ``i`` through successive higher
    edges.
    """
    adj_offsets, adj_edge, adj_nbr, adj_side = adj.offsets, adj.edge, adj.nbr, adj.side
    n_lo, n_hi, hi_pos, lo_rank, gamma = (chains.n_lo, chains.n_hi, chains.hi_pos,
                                          chains.lo_rank, chains.gamma)
    n_labels = theta_hat.shape[1]
    bound = 0.0
    for v in range(n0, n1):
        lv = v - n0
        n_chain = max(n_lo[lv], n_hi[lv], 1)
        for slot in range(n_lo[lv], n_chain):
            cur = v
            gc = gamma[lv]
            for k in range(n_labels):
                f[k] = gc * theta_hat[lv, k]
            while slot < n_hi[cur - n0]:
                p = hi_pos[adj_offsets[cur] - a0 + slot]
                e = adj_edge[p]
                side = adj_side[p]
                t = adj_nbr[p]
                lt = t - n0
                in_row = 2 * e + 1 - side
                out_row = 2 * e + side
                # f[a] finite implies theta_hat_cur(a), hence every message
                # into cur at a, is finite: no inf - inf below
                for k in range(n_labels):
                    fk = f[k]
                    g[k] = NEG_INF if fk == NEG_INF else fk - messages[in_row, k]
                maxplus_t(g, pairwise, pw_index[e], side, f2, shapes, dt)
                gt = gamma[lt]
                for k in range(n_labels):
                    th = theta_hat[lt, k]
                    fk = f2[k]
                    f[k] = (NEG_INF if th == NEG_INF or fk == NEG_INF
                            else fk + gt * th - messages[out_row, k])
                slot = lo_rank[p - a0]
                cur = t
            m = NEG_INF
            for k in range(n_labels):
                m = max(m, f[k])
            bound += m
    return bound


@jit
def trws_one(n0, n1, e0, e1, edges, unary, pairwise, pw_index, adj, messages, max_iter, tol,
             window, relative, labels_out, shapes=None):
    """TRW-S on one sample (nodes ``n0:n1``, edges ``e0:e1``); see :func:`trws_batch`.

    Returns ``(bound, n_iter, converged, score)``: the best bound, the
    iterations run, whether a stopping rule was met, and the score of the
    labelling written to ``labels_out``.
    """
    adj_offsets, adj_edge, adj_nbr, adj_side = adj.offsets, adj.edge, adj.nbr, adj.side
    n_labels = unary.shape[1]
    n = n1 - n0
    if n == 0:
        return 0.0, 0, True, 0.0
    window = max(window, 1)
    history = np.empty(window)
    n_done = 0
    a0 = adj_offsets[n0]
    chains = _chain_structure(n0, n1, e0, e1, adj_offsets, adj_edge, adj_nbr, adj_side)

    theta_hat = np.empty((n, n_labels))
    h = np.empty(n_labels)
    out = np.empty(n_labels)
    f = np.empty(n_labels)
    f2 = np.empty(n_labels)
    cand = np.empty(n_labels)
    dt = np.empty(2 * n_labels + 1)
    labels = np.zeros(n, np.int64)

    for v in range(n0, n1):
        _gather_row(v, unary, adj_offsets, adj_edge, adj_side, messages, theta_hat, v - n0)
    bound = _chain_bound(n0, n1, theta_hat, chains, a0, adj, pairwise, pw_index, messages, f,
                         h, f2, shapes, dt)
    best_bound = bound
    _decode(n0, n1, unary, pairwise, pw_index, adj_offsets, adj_edge, adj_nbr, adj_side,
            messages, labels, cand)
    best_score = _sample_score(n0, n1, e0, e1, edges, unary, pairwise, pw_index, labels,
                               n0)
    for v in range(n0, n1):
        labels_out[v] = labels[v - n0]
    history[0] = bound
    converged = False

    # taken out of the tuple once: a field read per message costs atomic reference counts
    gamma = chains.gamma
    for it in range(max_iter):
        for v in range(n0, n1):
            lv = v - n0
            _gather_row(v, unary, adj_offsets, adj_edge, adj_side, messages, theta_hat, lv)
            for p in range(adj_offsets[v], adj_offsets[v + 1]):
                if adj_nbr[p] > v:
                    _send(v, p, gamma[lv], theta_hat, lv, adj_edge, adj_side, pairwise,
                          pw_index, messages, h, out, shapes, dt)
        # in the backward pass the messages into v are final once v is
        # visited, so theta_hat is left ready for the bound
        for v in range(n1 - 1, n0 - 1, -1):
            lv = v - n0
            _gather_row(v, unary, adj_offsets, adj_edge, adj_side, messages, theta_hat, lv)
            for p in range(adj_offsets[v], adj_offsets[v + 1]):
                if adj_nbr[p] < v:
                    _send(v, p, gamma[lv], theta_hat, lv, adj_edge, adj_side, pairwise,
                          pw_index, messages, h, out, shapes, dt)
        n_done = it + 1
        new_bound = _chain_bound(n0, n1, theta_hat, chains, a0, adj, pairwise, pw_index,
                                 messages, f, h, f2, shapes, dt)
        best_bound = min(best_bound, new_bound)
        _decode(n0, n1, unary, pairwise, pw_index, adj_offsets, adj_edge, adj_nbr,
                adj_side, messages, labels, cand)
        best_score = _adopt(n0, n1, e0, e1, edges, unary, pairwise, pw_index, labels,
                            best_score, labels_out)
        # stop on a certified optimum (the gap closed to tol, relative) or on
        # a stalled bound: over the last `window` iterations it moved by less
        # than tol (absolute unless `relative`; equal bounds, -inf against
        # -inf included, count as stalled)
        scale = tol * max(1.0, abs(best_bound))
        old = history[(it + 1) % window] if it + 1 >= window else history[0]
        stall = scale if relative else tol
        stalled = it + 1 >= window and (new_bound == old or abs(new_bound - old) < stall)
        closed = best_bound - best_score <= scale
        history[(it + 1) % window] = new_bound
        if stalled or closed:
            converged = True
            break
    return best_bound, n_done, converged, best_score


@jit
def _trws_batch_range(node_offsets, edge_offsets, edges, unary, pairwise, pw_index, adj,
                      active, messages, max_iter, tol, window, relative, out, shapes, s0, s1):
    # the kernel of trws_batch, over the samples s0 <= s < s1
    for s in range(s0, s1):
        if not active[s]:
            continue
        _store(out, s, trws_one(node_offsets[s], node_offsets[s + 1], edge_offsets[s],
                                edge_offsets[s + 1], edges, unary, pairwise, pw_index, adj,
                                messages, max_iter, tol, window, relative, out.labels, shapes))


def trws_batch(node_offsets, edge_offsets, edges, unary, pairwise, pw_index, adj, active, messages,
               max_iter, tol, window, relative, out, shapes=None):
    """TRW-S max-sum inference: labelling, upper bound, messages in place.

    Runs on the threads in force (:func:`~skstruct._core._pool.for_range`).

    Parameters
    ----------
    node_offsets, edge_offsets : int64 ndarray of shape (S + 1,)
        Node and edge ranges of each sample.
    edges : int64 ndarray of shape (E, 2)
        Global node indices of each edge.
    unary : float64 ndarray of shape (N, K)
        Node scores (maximised).
    pairwise : float64 ndarray of shape (M, K, K)
        Edge score tables.
    pw_index : int64 ndarray of shape (E,)
        Table used by each edge.
    adj : Adjacency
        The batch's adjacency (``GraphBatch.adjacency``, see
        :func:`~skstruct._core._graph.build_adjacency`).
    active : bool ndarray of shape (S,)
        Samples to process; the others are left untouched.
    messages : float64 ndarray of shape (2 E, K)
        Max-sum messages, read as the starting point (zeros for a fresh
        start, previous output for a warm start) and overwritten.  ``-inf``
        entries must only rule out labels no feasible labelling uses (see the
        module docstring); any finite values are allowed.
    max_iter : int
        Maximum number of iterations (one forward plus one backward pass).
    tol : float
        A sample stops once the gap between its best bound and its best
        labelling's score is at most ``tol * max(1, |bound|)`` (optimality
        certified), or once its bound has moved by less than ``tol`` over
        the last ``window`` iterations (a stalled bound).
    window : int
        Number of iterations over which a stall is judged (at least 1).  The
        bound of a large grid creeps down for many iterations while the
        labelling still improves, so a one-iteration test stops too early.
    relative : bool
        Judge a stall against ``tol * max(1, |bound|)`` instead of ``tol``.
        A relative stall test stops a grid of 10^5 nodes, whose bound is in
        the millions, while its gap is still in the hundreds.
    out : TRWSOut
        Written: ``out.labels`` int64 (N,) the best-scoring labelling decoded so far
        (decoding is done from the initial messages and after every iteration);
        ``out.bound`` float64 (S,) an upper bound on each sample's maximum score, the
        smallest chain-decomposition bound met (initial messages included; ``-inf``
        proves infeasibility; 0 for an empty sample); ``out.n_iter`` int64 (S,) the
        iterations performed by each sample; ``out.converged`` bool (S,) whether a
        stopping rule was met within ``max_iter``; ``out.score`` float64 (S,) the score
        of the labelling in ``out.labels`` (``-inf`` when no labelling found satisfies
        the hard constraints).
    shapes : ndarray of shape (M, 4) or None
        The tables' shapes (:func:`~skstruct.inference._shapes.table_shapes`): messages
        and bound in O(K) per edge for Potts and truncated tables.  None: every table
        dense.

    Notes
    -----
    The bound is exact at any point on a sample whose edges are the chain
    ``(i, i + 1)`` in node order (a single monotonic chain).  Reversing an
    edge (swapping ``edges[e]`` and transposing its table) changes nothing
    but the storage of its two messages.  Self-loops are not supported.
    """
    def run(s0, s1):
        _trws_batch_range(node_offsets, edge_offsets, edges, unary, pairwise, pw_index, adj, active,
                          messages, max_iter, tol, window, relative, out, shapes, s0, s1)

    for_range(run, node_offsets.shape[0] - 1)


@jit
def _store(out, s, res):
    """Sample ``s``'s results ``(bound, n_iter, converged, score)`` into ``out``."""
    out.bound[s] = res[0]
    out.n_iter[s] = res[1]
    out.converged[s] = res[2]
    out.score[s] = res[3]


@jit
def _dual_bound_batch_range(node_offsets, edge_offsets, edges, unary, pairwise, pw_index, adj,
                            active, messages, bound_out, shapes, s0, s1):
    # the kernel of dual_bound_batch, over the samples s0 <= s < s1
    adj_offsets, adj_edge, adj_nbr, adj_side = adj.offsets, adj.edge, adj.nbr, adj.side
    n_labels = unary.shape[1]
    for s in range(s0, s1):
        if not active[s]:
            continue
        n0 = node_offsets[s]
        n1 = node_offsets[s + 1]
        n = n1 - n0
        if n == 0:
            bound_out[s] = 0.0
            continue
        chains = _chain_structure(n0, n1, edge_offsets[s], edge_offsets[s + 1], adj_offsets,
                                  adj_edge, adj_nbr, adj_side)
        theta_hat = np.empty((n, n_labels))
        for v in range(n0, n1):
            _gather_row(v, unary, adj_offsets, adj_edge, adj_side, messages, theta_hat, v - n0)
        f = np.empty(n_labels)
        g = np.empty(n_labels)
        f2 = np.empty(n_labels)
        dt = np.empty(2 * n_labels + 1)
        bound_out[s] = _chain_bound(n0, n1, theta_hat, chains, adj_offsets[n0], adj, pairwise,
                                    pw_index, messages, f, g, f2, shapes, dt)


def dual_bound_batch(node_offsets, edge_offsets, edges, unary, pairwise, pw_index, adj, active,
                     messages, bound_out, shapes=None):
    """Monotonic-chain upper bound on each sample's max score for given messages.

    The bound :func:`trws_batch` reports, evaluated once for ``messages``
    (read only) without running any iteration, e.g. to certify max-product
    loopy BP messages.  Arguments are as in :func:`trws_batch`; ``bound_out``
    float64 ``(S,)`` is written (0 for an empty sample).  Valid for any finite
    messages; ``-inf`` entries must only rule out labels that no feasible
    labelling uses, which holds for messages computed by max-product BP or
    TRW-S from zeros.  ``shapes``: as in :func:`trws_batch`.

    Runs on the threads in force (:func:`~skstruct._core._pool.for_range`).
    """
    def run(s0, s1):
        _dual_bound_batch_range(node_offsets, edge_offsets, edges, unary, pairwise, pw_index, adj,
                                active, messages, bound_out, shapes, s0, s1)

    for_range(run, node_offsets.shape[0] - 1)
