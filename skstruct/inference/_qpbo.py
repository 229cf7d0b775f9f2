"""Roof duality (QPBO) for pairwise models with two labels: a partial labelling that
every node it labels shares with some optimum, and an upper bound on the best score.

Energy ``E(x) = -score(x)`` of binary ``x``, written as ``C + sum_v l_v x_v + sum_e d_e
x_u x_v``.  Each node ``v`` gets a twin ``v'`` meant to hold ``1 - x_v``, and every term
is split in half between the node's and the twin's copies so that the doubled energy
``E'(x, z)`` is submodular (P. L. Hammer, P. Hansen and B. Simeone, "Roof duality,
complementation and persistency in quadratic 0-1 optimization", Mathematical Programming
28, 1984; V. Kolmogorov and C. Rother, "Minimizing Nonsubmodular Functions with Graph
Cuts - A Review", IEEE TPAMI 29(7), 2007)::

    l x_v                      ->  l / 2 (x_v + 1 - z_v)
    d x_u x_v,  d <= 0         ->  d / 2 (x_u x_v + (1 - z_u)(1 - z_v))
    d x_u x_v,  d > 0          ->  d / 2 (x_u (1 - z_v) + (1 - z_u) x_v)

``E'(x, 1 - x) = E(x)``, so the minimum of ``E'`` (one minimum cut on ``2 n`` nodes, by
the Boykov-Kolmogorov maximum flow of :mod:`skstruct.inference._graphcut`) is a lower
bound on the minimum energy: its negation bounds the best score from above.  Where the
minimum cut gives ``z_v = 1 - x_v`` the node is labelled ``x_v``, and the labelling is
persistent: fixing every labelled node, the best completion of the others is a global
optimum.  Submodular tables (``P[0, 0] + P[1, 1] >= P[0, 1] + P[1, 0]``) leave no node
unlabelled.  The unlabelled nodes are completed by iterated conditional modes over them
alone, the labelled nodes held fixed: each starts at its best label given the unary
scores, then sweeps set each to its best label given its neighbours until no sweep
changes anything.
"""

import numpy as np

from .._core._jit import jit
from ._graphcut import _S, _group_by_tail, _push_arc, bk_max_flow

UNLABELLED = -1
# ICM sweeps over the unlabelled nodes (each strictly improves the score, so they stop
# long before this on any graph that fits in memory)
MAX_SWEEPS = 1000


@jit
def _linear(v, twin, slope, c, const):
    """Add the linear term ``slope x_v`` of the energy, halved between ``v`` and its twin:
    ``slope / 2 (x_v + 1 - z_v)``; returns the constant."""
    c[v] += 0.5 * slope
    c[twin] -= 0.5 * slope
    return const + 0.5 * slope


@jit
def qpbo_one(n0, n1, e0, e1, edges, unary, pair, pwi, labels, persistent):
    """Roof duality on the two-label sample of nodes ``n0:n1`` and edges ``e0:e1`` (edge
    ``e`` scored by ``pair[pwi[e]]``, finite): labels into ``labels``, whether each node
    is persistent into ``persistent``; returns the upper bound on the best score.

    A node with both labels forbidden (``-inf``) makes the sample infeasible: labels 0,
    bound ``-inf``.  One forbidden label costs the energy a finite penalty larger than
    any feasible labelling's energy, so that the cut avoids it.
    """
    nv = n1 - n0
    if nv == 0:
        return 0.0
    finite = 0.0
    for v in range(n0, n1):
        if unary[v, 0] == -np.inf and unary[v, 1] == -np.inf:
            for w in range(n0, n1):
                labels[w] = 0
                persistent[w - n0] = True
            return -np.inf
        for k in range(2):
            if unary[v, k] > -np.inf:
                finite += abs(unary[v, k])
    for e in range(e0, e1):
        P = pair[pwi[e]]
        for a in range(2):
            for b in range(2):
                finite += abs(P[a, b])
    big = 2.0 * finite + 1.0
    n = 2 * nv
    # per edge at most two arc pairs
    m_max = 4 * (e1 - e0)
    tail = np.empty(max(m_max, 1), np.int64)
    head = np.empty(max(m_max, 1), np.int64)
    cap = np.empty(max(m_max, 1))
    order = np.empty(max(m_max, 1), np.int64)
    offsets = np.empty(n + 1, np.int64)
    c = np.zeros(n)
    tree = np.empty(n, np.int8)
    pa = np.empty(n, np.int64)
    ts = np.empty(n, np.int64)
    dist = np.empty(n, np.int64)
    queue = np.empty(n + 1, np.int64)
    queued = np.empty(n, np.bool_)
    orphans = np.empty(n, np.int64)
    const = 0.0
    for v in range(nv):
        t0 = -unary[n0 + v, 0] if unary[n0 + v, 0] > -np.inf else big
        t1 = -unary[n0 + v, 1] if unary[n0 + v, 1] > -np.inf else big
        const += t0
        const = _linear(v, nv + v, t1 - t0, c, const)
    m = 0
    for e in range(e0, e1):
        P = pair[pwi[e]]
        i = edges[e, 0] - n0
        j = edges[e, 1] - n0
        t00 = -P[0, 0]
        t01 = -P[0, 1]
        t10 = -P[1, 0]
        t11 = -P[1, 1]
        const += t00
        const = _linear(i, nv + i, t10 - t00, c, const)
        const = _linear(j, nv + j, t01 - t00, c, const)
        d = t00 + t11 - t01 - t10
        h = 0.5 * d
        if d < 0.0:
            # h x_i x_j = h x_i + |h| x_i (1 - x_j): an arc i -> j
            c[i] += h
            m = _push_arc(i, j, -h, 0.0, tail, head, cap, m)
            # h (1 - z_i)(1 - z_j) = h (1 - z_i) + |h| (1 - z_i) z_j: an arc j' -> i'
            const += h
            c[nv + i] -= h
            m = _push_arc(nv + j, nv + i, -h, 0.0, tail, head, cap, m)
        elif d > 0.0:
            # h x_i (1 - z_j) and h (1 - z_i) x_j: arcs i -> j' and j -> i'
            m = _push_arc(i, nv + j, h, 0.0, tail, head, cap, m)
            m = _push_arc(j, nv + i, h, 0.0, tail, head, cap, m)
    # a term c x is cut as c x (c >= 0, an arc to the sink) or |c| (1 - x) (c < 0, from
    # the source, plus the constant c); tr is the source capacity minus the sink's
    tr = np.empty(n)
    total = 0.0
    for v in range(n):
        tr[v] = -c[v]
        total += abs(c[v])
        if c[v] < 0.0:
            const += c[v]
    for a in range(m):
        total += cap[a]
    eps = 1e-12 * max(total, 1.0)
    _group_by_tail(n, tail, m, offsets, order, pa)
    flow = bk_max_flow(n, tr, tail, head, cap, offsets, order, eps, tree, pa, ts, dist, queue,
                       queued, orphans)
    # the source side of the minimum cut is x = 1 (z = 1 for a twin)
    for v in range(nv):
        x = tree[v] == _S
        z = tree[nv + v] == _S
        if x != z:
            labels[n0 + v] = 1 if x else 0
            persistent[v] = True
        else:
            labels[n0 + v] = UNLABELLED
            persistent[v] = False
    _complete(n0, n1, e0, e1, edges, unary, pair, pwi, labels, persistent)
    return -(flow + const)


@jit
def _complete(n0, n1, e0, e1, edges, unary, pair, pwi, labels, persistent):
    """ICM over the unlabelled nodes of the sample, the persistent ones held fixed."""
    nv = n1 - n0
    any_free = False
    for v in range(nv):
        if not persistent[v]:
            any_free = True
            labels[n0 + v] = 0 if unary[n0 + v, 0] >= unary[n0 + v, 1] else 1
    if not any_free:
        return
    # the edges at each node: counting sort of both ends (edge e as 2 e and 2 e + 1)
    offsets = np.zeros(nv + 1, np.int64)
    nbr = np.empty(2 * (e1 - e0), np.int64)
    for e in range(e0, e1):
        offsets[edges[e, 0] - n0 + 1] += 1
        offsets[edges[e, 1] - n0 + 1] += 1
    for v in range(nv):
        offsets[v + 1] += offsets[v]
    fill = offsets[:nv].copy()
    for e in range(e0, e1):
        for side in range(2):
            v = edges[e, side] - n0
            nbr[fill[v]] = 2 * (e - e0) + side
            fill[v] += 1
    for _ in range(MAX_SWEEPS):
        changed = False
        for v in range(nv):
            if persistent[v]:
                continue
            s0 = unary[n0 + v, 0]
            s1 = unary[n0 + v, 1]
            for p in range(offsets[v], offsets[v + 1]):
                e = e0 + nbr[p] // 2
                P = pair[pwi[e]]
                if nbr[p] % 2 == 0:
                    u = labels[edges[e, 1]]
                    s0 += P[0, u]
                    s1 += P[1, u]
                else:
                    u = labels[edges[e, 0]]
                    s0 += P[u, 0]
                    s1 += P[u, 1]
            # a label changes only for a strictly better score: the sweeps stop
            if labels[n0 + v] == 0 and s1 > s0:
                labels[n0 + v] = 1
                changed = True
            elif labels[n0 + v] == 1 and s0 > s1:
                labels[n0 + v] = 0
                changed = True
        if not changed:
            break


@jit
def qpbo_batch(node_offsets, edge_offsets, edges, unary, pairwise, pw_index, mask, labels,
               bound, persistent):
    """:func:`qpbo_one` on every sample of ``mask``; ``persistent`` (N,) per node."""
    for s in range(node_offsets.shape[0] - 1):
        if mask[s]:
            n0 = node_offsets[s]
            n1 = node_offsets[s + 1]
            bound[s] = qpbo_one(n0, n1, edge_offsets[s], edge_offsets[s + 1], edges, unary,
                                pairwise, pw_index, labels, persistent[n0:n1])


def check_binary(K, where, what="method='qpbo'"):
    """Refuse ``K != 2`` labels (``where`` names the sample)."""
    if K != 2:
        raise ValueError(f"{what} needs two labels; {where} has {K}: use 'trws' "
                         "(approximate, with a bound), 'ilp' (exact) or 'graphcut' (exact on "
                         "supermodular tables)")


def check_finite_tables(batch, pairwise, pw_index, mask):
    """Refuse a non-finite pairwise score on an edge of ``mask``'s samples, naming it."""
    edge_mask = np.repeat(mask, np.diff(batch.edge_offsets))
    bad_table = ~np.isfinite(pairwise).all(axis=(1, 2))
    bad = np.flatnonzero(edge_mask & bad_table[pw_index]) if bad_table.any() else []
    if len(bad):
        e = int(bad[0])
        s = int(np.searchsorted(batch.edge_offsets, e, side="right") - 1)
        raise ValueError(f"method='qpbo' needs finite pairwise scores (forbidden labels, "
                         f"-inf unary scores, are allowed); the table of edge {e} (sample "
                         f"{s}) holds -inf: use 'ilp' or 'trws', which honour forbidden "
                         "label pairs")


def run_map(batch, unary, pairwise, pw_index, mask, labels, bound, options):
    """The runner of ``method="qpbo"`` (see :mod:`skstruct._core._decoders`): labels and
    bounds of the samples of ``mask``, the nodes it left unlabelled (completed by ICM)
    into ``options.unlabelled``."""
    S = batch.n_samples
    if mask.any():
        check_binary(unary.shape[1], f"sample {int(np.flatnonzero(mask)[0])}")
    check_finite_tables(batch, pairwise, pw_index, mask)
    persistent = np.ones(batch.n_nodes, bool)
    qpbo_batch(batch.node_offsets, batch.edge_offsets, batch.edges, options.augmented,
               pairwise, pw_index, mask, labels, bound, persistent)
    options.unlabelled |= ~persistent
    return np.ones(S, np.int64), np.ones(S, bool)
