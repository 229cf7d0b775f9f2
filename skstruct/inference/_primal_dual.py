"""Hazan & Urtasun's approximated structured prediction: messages and objective.

Hazan & Urtasun, "A Primal-Dual Message-Passing Algorithm for Approximated
Large Scale Structured Prediction", NIPS 2010 (and its supplementary
proofs).  For one sample with node potentials
``theta_v`` (N, K) (the model's scores plus the loss ``e_y``) and edge
tables ``pairwise[pw_index[e]]`` (label of ``edges[e, 0]`` first), with
counting numbers ``c_node`` (N,) and ``c_edge`` (E,) and temperature
``eps >= 0``, the approximated program of Theorem 1 is, per sample,

    F(lam) = sum_v  soft_{eps c_v}(theta_v - sum_{a in N(v)} lam_{v->a})
           + sum_a  soft_{eps c_a}(theta_a + sum_{v in N(a)} lam_{v->a})

where ``soft_t(x) = t log sum exp(x / t)`` over the labels of the node
(resp. the label pairs of the edge): the log-partition for ``t = 1``, the
maximum for ``t = 0`` (the structured-SVM limit), a soft minimum for
``t < 0`` (the negative node counting numbers of the Bethe entropy).  The
estimator adds ``- theta . d`` and the regulariser.  Its partial derivatives
are the beliefs: ``dF / dtheta_v = b_v`` and ``dF / dtheta_a = b_a`` with
``b = softmax(x / t)`` (Lemma 2).  Where ``t == 0`` the term is a maximum and
any distribution over its maximisers is a subgradient: edges and, at
``eps == 0``, nodes take the first maximiser; a node with ``c_v == 0`` at
``eps > 0`` takes the marginal of an incident edge's belief, the choice
consistent with the marginalisation constraints that hold at converged
messages (on a Bethe tree its own scores are then all tied).

Messages ``lam`` are stored per edge and side, ``lam[2 e + side]`` being
``lam_{v->a}`` for ``v = edges[e, side]``.  :func:`pd_sweeps` runs Lemma 1's
block update at every node in turn (all messages out of the node at once,
each normalised to sum 0 over the labels), which minimises ``F`` exactly in
that block: with non-negative counting numbers ``F`` never increases
(Claim 2).  Samples are independent given the potentials, so every kernel
loops over chunks of samples in parallel.

Potentials must be finite (the estimator maps ``-inf`` to a large negative
number); ``c_v + sum_{a in N(v)} c_a`` must be positive at every node with
an edge.
"""

from typing import NamedTuple

import numpy as np

from .._core._jit import jit
from .._core._pool import for_chunks

# the node orders of pd_sweeps
BACK_AND_FORTH = 0     # every sweep in index order and back
FORWARD_FIRST = 1      # one direction per sweep, alternating, index order first
BACKWARD_FIRST = -1    # the same, reversed order first


class Counting(NamedTuple):
    """The counting numbers and the temperature of the program."""

    node: np.ndarray       # (N,) c_v
    edge: np.ndarray       # (E,) c_a
    eps: float             # the temperature


@jit
def _soft2(a, b, t):
    """``_soft`` of two values: one exponential and one ``log1p``."""
    if t == 0.0:
        return max(a, b)
    if t > 0.0:
        m = max(a, b)
        return m + t * np.log1p(np.exp(-abs(a - b) / t))
    m = min(a, b)
    return m + t * np.log1p(np.exp(abs(a - b) / t))


@jit
def _soft(x, n, t):
    """``t log sum_i exp(x[i] / t)`` over ``x[:n]``; the max when ``t == 0``."""
    if n == 2:
        return _soft2(x[0], x[1], t)
    m = x[0]
    best = 0
    if t >= 0.0:
        for i in range(1, n):
            if x[i] > m:
                m = x[i]
                best = i
    else:
        # a soft minimum: the smallest entry dominates
        for i in range(1, n):
            if x[i] < m:
                m = x[i]
                best = i
    if t == 0.0:
        return m
    # the dominant entry's exponential is 1: one call to exp fewer
    s = 1.0
    inv = 1.0 / t
    for i in range(n):
        if i != best:
            s += np.exp((x[i] - m) * inv)
    return m + t * np.log(s)


@jit
def _soft_belief(x, n, t, out):
    """``_soft(x, n, t)``, writing ``softmax(x / t)`` into ``out[:n]`` on the way
    (one-hot at the first maximiser when ``t == 0``)."""
    m = x[0]
    best = 0
    if t >= 0.0:
        for i in range(1, n):
            if x[i] > m:
                m = x[i]
                best = i
    else:
        for i in range(1, n):
            if x[i] < m:
                m = x[i]
                best = i
    if t == 0.0:
        for i in range(n):
            out[i] = 0.0
        out[best] = 1.0
        return m
    s = 1.0
    inv = 1.0 / t
    for i in range(n):
        if i == best:
            out[i] = 1.0
        else:
            z = np.exp((x[i] - m) * inv)
            out[i] = z
            s += z
    r = 1.0 / s
    for i in range(n):
        out[i] *= r
    return m + t * np.log(s)


@jit
def _edge_view(pairwise, pw, side, a, b):
    """Entry of the edge table with the label of side ``side`` equal to ``a``
    and the other one ``b``."""
    if side == 0:
        return pairwise[pw, a, b]
    return pairwise[pw, b, a]


@jit
def _node_update(v, adj_offsets, adj_edge, adj_side, theta_v, pairwise, pw_index, c_node,
                 c_edge, eps, lam, mu, tot, buf):
    """Lemma 1: every message out of node ``v`` minimising ``F`` jointly.

    The messages' rows are indexed rather than taken as views: a view in a parallel
    kernel's inner loop costs an atomic update of its array's reference count."""
    K = theta_v.shape[1]
    p0 = adj_offsets[v]
    p1 = adj_offsets[v + 1]
    if p1 == p0:
        return
    chat = c_node[v]
    for p in range(p0, p1):
        chat += c_edge[adj_edge[p]]
    for k in range(K):
        tot[k] = theta_v[v, k]
    for i in range(p1 - p0):
        e = adj_edge[p0 + i]
        side = adj_side[p0 + i]
        t = eps * c_edge[e]
        other = 2 * e + 1 - side
        pw = pw_index[e]
        for a in range(K):
            for b in range(K):
                buf[b] = _edge_view(pairwise, pw, side, a, b) + lam[other, b]
            mu[i, a] = _soft(buf, K, t)
            tot[a] += mu[i, a]
    for i in range(p1 - p0):
        e = adj_edge[p0 + i]
        out = 2 * e + adj_side[p0 + i]
        r = c_edge[e] / chat
        mean = 0.0
        for k in range(K):
            lam[out, k] = r * tot[k] - mu[i, k]
            mean += lam[out, k]
        mean /= K
        for k in range(K):
            lam[out, k] -= mean


@jit
def _pd_sweeps_chunks(node_offsets, adj_offsets, adj_edge, adj_side,
                      theta_v, pairwise, pw_index, c_node, c_edge, eps, lam,
                      n_sweeps, direction, max_degree, chunks, c0, c1):
    # the kernel of pd_sweeps, over the chunks c0 <= c < c1
    K = theta_v.shape[1]
    for c in range(c0, c1):
        mu = np.empty((max(max_degree, 1), K))
        tot = np.empty(K)
        buf = np.empty(K)
        for it in range(n_sweeps):
            up = direction == BACK_AND_FORTH or (it % 2 == 0) == (direction == FORWARD_FIRST)
            down = direction == BACK_AND_FORTH or not up
            for s in range(chunks[c], chunks[c + 1]):
                n0 = node_offsets[s]
                n1 = node_offsets[s + 1]
                if up:
                    for v in range(n0, n1):
                        _node_update(v, adj_offsets, adj_edge, adj_side, theta_v, pairwise,
                                     pw_index, c_node, c_edge, eps, lam, mu, tot, buf)
                if down:
                    for v in range(n1 - 1 - (1 if up else 0), n0 - 1, -1):
                        _node_update(v, adj_offsets, adj_edge, adj_side, theta_v, pairwise,
                                     pw_index, c_node, c_edge, eps, lam, mu, tot, buf)


def pd_sweeps(node_offsets, adj_offsets, adj_edge, adj_side, theta_v, pairwise,
              pw_index, c_node, c_edge, eps, lam, n_sweeps, direction, max_degree,
              chunks):
    """``n_sweeps`` sweeps of Lemma 1 over the nodes of every sample, in place
    on ``lam`` (2E, K); parallel over the sample ranges ``chunks``.

    ``direction`` ``BACK_AND_FORTH``: every sweep visits the nodes in index order and
    back, which carries information both ways along a chain or tree in one sweep, as
    forward-backward does; ``FORWARD_FIRST`` (or ``BACKWARD_FIRST``): one direction per
    sweep, alternating, the first in index order (or reversed), half the work per sweep
    for loopy graphs, where no single sweep converges anyway.

    Runs on the threads in force (:func:`~skstruct._core._pool.for_chunks`).
    """
    def run(c0, c1):
        _pd_sweeps_chunks(node_offsets, adj_offsets, adj_edge, adj_side,
                          theta_v, pairwise, pw_index, c_node, c_edge,
                          eps, lam, n_sweeps, direction, max_degree,
                          chunks, c0, c1)

    for_chunks(run, chunks)


@jit
def _pd_objective_chunks(node_offsets, edge_offsets, edges, adj,
                         theta_v, pairwise, pw_index, counting, lam,
                         chunks, terms, node_beliefs, edge_beliefs,
                         want_beliefs, c0, c1):
    # the kernel of pd_objective, over the chunks c0 <= c < c1
    K = theta_v.shape[1]
    adj_offsets, adj_edge, adj_side = adj.offsets, adj.edge, adj.side
    c_node, c_edge, eps = counting.node, counting.edge, counting.eps
    for c in range(c0, c1):
        x = np.empty(K)
        xe = np.empty(K * K)
        for s in range(chunks[c], chunks[c + 1]):
            total = 0.0
            for v in range(node_offsets[s], node_offsets[s + 1]):
                for k in range(K):
                    x[k] = theta_v[v, k]
                for p in range(adj_offsets[v], adj_offsets[v + 1]):
                    row = lam[2 * adj_edge[p] + adj_side[p]]
                    for k in range(K):
                        x[k] -= row[k]
                t = eps * c_node[v]
                if want_beliefs:
                    total += _soft_belief(x, K, t, node_beliefs[v])
                else:
                    total += _soft(x, K, t)
            for e in range(edge_offsets[s], edge_offsets[s + 1]):
                T = pairwise[pw_index[e]]
                la = lam[2 * e]
                lb = lam[2 * e + 1]
                for a in range(K):
                    for b in range(K):
                        xe[a * K + b] = T[a, b] + la[a] + lb[b]
                t = eps * c_edge[e]
                if want_beliefs:
                    total += _soft_belief(xe, K * K, t, edge_beliefs[e].ravel())
                else:
                    total += _soft(xe, K * K, t)
            if want_beliefs and eps > 0.0:
                # a node whose term is a plain max (c_v = 0: the leaves of a
                # Bethe tree) has a belief only up to its ties, and at
                # converged messages its scores are all tied; the marginal of
                # an incident smooth edge is the belief consistent with the rest
                for v in range(node_offsets[s], node_offsets[s + 1]):
                    if c_node[v] != 0.0:
                        continue
                    for p in range(adj_offsets[v], adj_offsets[v + 1]):
                        e = adj_edge[p]
                        if c_edge[e] == 0.0:
                            continue
                        B = edge_beliefs[e]
                        for k in range(K):
                            node_beliefs[v, k] = 0.0
                        for a in range(K):
                            for b in range(K):
                                if adj_side[p] == 0:
                                    node_beliefs[v, a] += B[a, b]
                                else:
                                    node_beliefs[v, b] += B[a, b]
                        break
            terms[s] = total


def pd_objective(node_offsets, edge_offsets, edges, adj, theta_v, pairwise,
                 pw_index, counting, lam, chunks, terms, node_beliefs,
                 edge_beliefs, want_beliefs):
    """Per-sample objective ``terms[s]`` (the two sums of ``F``) at messages
    ``lam``; with ``want_beliefs`` also the node beliefs (N, K) and the edge
    beliefs (E, K, K), the partial derivatives of ``F``.  ``adj`` is the batch's
    :class:`~skstruct._core._graph.Adjacency`, ``counting`` a :class:`Counting`.

    Runs on the threads in force (:func:`~skstruct._core._pool.for_chunks`).
    """
    def run(c0, c1):
        _pd_objective_chunks(node_offsets, edge_offsets, edges, adj,
                             theta_v, pairwise, pw_index, counting,
                             lam, chunks, terms, node_beliefs,
                             edge_beliefs, want_beliefs, c0, c1)

    for_chunks(run, chunks)


@jit
def _node_belief(v, x, K, t, counting, adj, pairwise, pw_index, lam, out, xe, be):
    """Node ``v``'s term (returned) and belief (``out``), with the belief of a
    ``c_v = 0`` node taken from its first smooth edge (see pd_objective)."""
    adj_offsets, adj_edge, adj_side = adj.offsets, adj.edge, adj.side
    c_node, c_edge, eps = counting.node, counting.edge, counting.eps
    val = _soft_belief(x, K, t, out)
    if eps > 0.0 and c_node[v] == 0.0:
        for p in range(adj_offsets[v], adj_offsets[v + 1]):
            e = adj_edge[p]
            if c_edge[e] == 0.0:
                continue
            T = pairwise[pw_index[e]]
            la = lam[2 * e]
            lb = lam[2 * e + 1]
            for a in range(K):
                for b in range(K):
                    xe[a * K + b] = T[a, b] + la[a] + lb[b]
            _soft_belief(xe, K * K, eps * c_edge[e], be)
            for k in range(K):
                out[k] = 0.0
            for a in range(K):
                for b in range(K):
                    if adj_side[p] == 0:
                        out[a] += be[a * K + b]
                    else:
                        out[b] += be[a * K + b]
            break
    return val


