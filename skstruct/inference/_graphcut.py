"""Exact MAP of pairwise models whose pairwise scores are supermodular in the
label order, by one minimum s-t cut per sample.

Energy ``E(y) = -score(y)``.  Each node ``v`` gets ``K - 1`` binary variables
``x[v, k] = [y_v >= k]`` (k = 1 .. K-1), monotone in ``k``.  Any function of
two labels splits as (the "layered" or Ishikawa construction, in the general
submodular form of Schlesinger & Flach, "Transforming an arbitrary MinSum
problem into a binary one", TU Dresden TR 2006)::

    f(a, b) = f(0, 0) + sum_{i <= a} [f(i, 0) - f(i-1, 0)]
                      + sum_{j <= b} [f(0, j) - f(0, j-1)]
                      + sum_{i <= a, j <= b} d(i, j),
    d(i, j) = f(i, j) - f(i-1, j) - f(i, j-1) + f(i-1, j-1),

so ``f`` is linear terms in the ``x`` plus ``d(i, j) x[u, i] x[v, j]``.
Submodular energies have ``d <= 0``: ``d x x' = d x + |d| x (1 - x')``, an
arc ``(u, i) -> (v, j)`` of capacity ``|d|``.  A linear term ``c x`` is an
arc to the sink of capacity ``c`` (``c >= 0``) or from the source of capacity
``-c`` (plus the constant ``c``).  Arcs ``(v, k+1) -> (v, k)`` of a capacity
larger than any finite cut keep every cut monotone.  A node on the source side
has ``x = 1``; ``y_v`` is the number of its variables there.

The maximum flow is Boykov & Kolmogorov's augmenting-path algorithm (Y. Boykov
and V. Kolmogorov, "An experimental comparison of min-cut/max-flow algorithms
for energy minimization in vision", IEEE TPAMI 2004): two search trees, grown
from the source and from the sink and repaired after each augmentation rather
than rebuilt, which suits the short augmenting paths of image grids
(``doc/benchmarks.md`` compares it with other maximum-flow codes).  The
terminal arcs of a node are kept as one number, the source capacity minus the
sink capacity.  Capacities are floats: residuals below ``eps`` (a relative
``1e-12`` of the total capacity) count as saturated.
"""

import numpy as np

from .._core._jit import jit


@jit
def _push_arc(u, v, c_uv, c_vu, tail, head, cap, m):
    """Add the arc pair ``u -> v`` (capacity ``c_uv``) and ``v -> u`` (``c_vu``)."""
    tail[m] = u
    head[m] = v
    cap[m] = c_uv
    tail[m + 1] = v
    head[m + 1] = u
    cap[m + 1] = c_vu
    return m + 2


@jit
def _group_by_tail(n, tail, m, offsets, order, fill):
    """``order[offsets[v]:offsets[v + 1]]``: the arcs leaving ``v`` (a counting sort)."""
    for v in range(n + 1):
        offsets[v] = 0
    for a in range(m):
        offsets[tail[a] + 1] += 1
    for v in range(n):
        offsets[v + 1] += offsets[v]
    for v in range(n):
        fill[v] = offsets[v]
    for a in range(m):
        v = tail[a]
        order[fill[v]] = a
        fill[v] += 1


_FREE = 0
_S = 1
_T = 2
_TERMINAL = -1
_ORPHAN = -2
_NONE = -3


@jit
def _origin_distance(w, tree_w, pa, tail, head, ts, dist, time):
    """Distance from ``w`` to its tree's terminal along parent arcs (``-1`` if
    the path meets an orphan), with the paths found marked by ``time``."""
    d = 0
    x = w
    while True:
        if ts[x] == time:
            d += dist[x]
            break
        d += 1
        p = pa[x]
        if p == _TERMINAL:
            ts[x] = time
            dist[x] = 1
            break
        if p < 0:
            return -1
        x = tail[p] if tree_w == _S else head[p]
    # label the path, so that later searches stop early
    x = w
    dd = d
    while ts[x] != time:
        ts[x] = time
        dist[x] = dd
        dd -= 1
        p = pa[x]
        x = tail[p] if tree_w == _S else head[p]
    return d


@jit
def bk_max_flow(n, tr, tail, head, cap, offsets, order, eps, tree, pa, ts, dist, queue,
                queued, orphans):
    """Boykov & Kolmogorov's maximum flow ("An experimental comparison of
    min-cut/max-flow algorithms for energy minimization in vision", IEEE TPAMI
    2004) on ``n`` nodes: ``tr[v] > 0`` is the residual capacity of the arc
    source -> v, ``tr[v] < 0`` minus that of v -> sink; ``cap`` the residual
    capacities of the arcs ``tail -> head`` (arc ``a ^ 1`` is ``a``'s reverse),
    grouped by tail through ``offsets``/``order``.  On return ``tree[v] == 1``
    marks the source side of a minimum cut (the nodes reachable from the
    source in the residual graph).  Returns the flow through the node-node arcs
    and the terminal arcs."""
    flow = 0.0
    qh = 0
    qt = 0
    for v in range(n):
        queued[v] = False
        ts[v] = 0
        dist[v] = 0
        if tr[v] > eps:
            tree[v] = _S
            pa[v] = _TERMINAL
        elif tr[v] < -eps:
            tree[v] = _T
            pa[v] = _TERMINAL
        else:
            tree[v] = _FREE
            pa[v] = _NONE
            continue
        dist[v] = 1
        queue[qt] = v
        qt += 1
        queued[v] = True
    size = n + 1
    time = 0
    cur = -1
    while True:
        # growth: from an active node, until a path source -> sink is found
        if cur >= 0 and tree[cur] == _FREE:
            cur = -1
        mid = -1
        while True:
            if cur < 0:
                if qh == qt:
                    break
                cur = queue[qh]
                qh = (qh + 1) % size
                queued[cur] = False
                if tree[cur] == _FREE:
                    cur = -1
                    continue
            u = cur
            if tree[u] == _S:
                for p in range(offsets[u], offsets[u + 1]):
                    a = order[p]
                    if cap[a] > eps:
                        w = head[a]
                        if tree[w] == _FREE:
                            tree[w] = _S
                            pa[w] = a
                            ts[w] = ts[u]
                            dist[w] = dist[u] + 1
                            if not queued[w]:
                                queue[qt] = w
                                qt = (qt + 1) % size
                                queued[w] = True
                        elif tree[w] == _T:
                            mid = a
                            break
            else:
                for p in range(offsets[u], offsets[u + 1]):
                    a = order[p]
                    b = a ^ 1
                    if cap[b] > eps:
                        w = head[a]
                        if tree[w] == _FREE:
                            tree[w] = _T
                            pa[w] = b
                            ts[w] = ts[u]
                            dist[w] = dist[u] + 1
                            if not queued[w]:
                                queue[qt] = w
                                qt = (qt + 1) % size
                                queued[w] = True
                        elif tree[w] == _S:
                            mid = b
                            break
            if mid >= 0:
                break
            cur = -1
        if mid < 0:
            return flow
        # augmentation along the path through the arc ``mid``
        time += 1
        bott = cap[mid]
        x = tail[mid]
        while pa[x] != _TERMINAL:
            a = pa[x]
            if cap[a] < bott:
                bott = cap[a]
            x = tail[a]
        if tr[x] < bott:
            bott = tr[x]
        x = head[mid]
        while pa[x] != _TERMINAL:
            a = pa[x]
            if cap[a] < bott:
                bott = cap[a]
            x = head[a]
        if -tr[x] < bott:
            bott = -tr[x]
        cap[mid] -= bott
        cap[mid ^ 1] += bott
        n_orphans = 0
        x = tail[mid]
        while pa[x] != _TERMINAL:
            a = pa[x]
            cap[a] -= bott
            cap[a ^ 1] += bott
            nxt = tail[a]
            if cap[a] <= eps:
                pa[x] = _ORPHAN
                orphans[n_orphans] = x
                n_orphans += 1
            x = nxt
        tr[x] -= bott
        if tr[x] <= eps:
            pa[x] = _ORPHAN
            orphans[n_orphans] = x
            n_orphans += 1
        x = head[mid]
        while pa[x] != _TERMINAL:
            a = pa[x]
            cap[a] -= bott
            cap[a ^ 1] += bott
            nxt = head[a]
            if cap[a] <= eps:
                pa[x] = _ORPHAN
                orphans[n_orphans] = x
                n_orphans += 1
            x = nxt
        tr[x] += bott
        if tr[x] >= -eps:
            pa[x] = _ORPHAN
            orphans[n_orphans] = x
            n_orphans += 1
        flow += bott
        # adoption: a new parent for every orphan, or it leaves its tree
        while n_orphans > 0:
            n_orphans -= 1
            u = orphans[n_orphans]
            side = tree[u]
            best = -1
            best_d = 0
            for p in range(offsets[u], offsets[u + 1]):
                a = order[p]
                w = head[a]
                if tree[w] != side:
                    continue
                # the arc from the candidate parent must keep residual capacity
                arc = a ^ 1 if side == _S else a
                if cap[arc] <= eps:
                    continue
                d = _origin_distance(w, side, pa, tail, head, ts, dist, time)
                if d >= 0 and (best < 0 or d < best_d):
                    best = arc
                    best_d = d
            if best >= 0:
                pa[u] = best
                ts[u] = time
                dist[u] = best_d + 1
                continue
            for p in range(offsets[u], offsets[u + 1]):
                a = order[p]
                w = head[a]
                if tree[w] != side:
                    continue
                arc = a ^ 1 if side == _S else a
                if cap[arc] > eps and not queued[w]:
                    queue[qt] = w
                    qt = (qt + 1) % size
                    queued[w] = True
                # children of u (their parent arc touches u) become orphans
                if pa[w] == (a if side == _S else a ^ 1):
                    pa[w] = _ORPHAN
                    orphans[n_orphans] = w
                    n_orphans += 1
            tree[u] = _FREE
            pa[u] = _NONE


@jit
def cut_scratch(n, m_max):
    """The arrays of :func:`bk_max_flow` on ``n`` nodes and up to ``m_max`` arcs, with the
    arc lists it reads: ``(tail, head, cap, order, offsets, tr, tree, pa, ts, dist, queue,
    queued, orphans)``."""
    return (np.empty(m_max, np.int64), np.empty(m_max, np.int64), np.empty(m_max),
            np.empty(m_max, np.int64), np.empty(n + 1, np.int64), np.empty(n),
            np.empty(n, np.int8), np.empty(n, np.int64), np.empty(n, np.int64),
            np.empty(n, np.int64), np.empty(n + 1, np.int64), np.empty(n, np.bool_),
            np.empty(n, np.int64))


@jit
def graphcut_one(n0, n1, e0, e1, edges, unary, pair, pwi, labels):
    """Exact MAP labels of the sample of nodes ``n0:n1`` and edges ``e0:e1``
    (edge ``e`` scores ``pair[pwi[e]]``, supermodular in the label order: the
    caller checks), into ``labels``; returns their score.  Unary scores may be
    ``-inf``."""
    K = unary.shape[1]
    L = K - 1
    nv = n1 - n0
    if nv == 0:
        return 0.0
    if L == 0:
        total = 0.0
        for v in range(n0, n1):
            labels[v] = 0
            total += unary[v, 0]
        for e in range(e0, e1):
            total += pair[pwi[e], 0, 0]
        return total
    n = nv * L
    # arc pairs: a monotonicity pair per node and layer, an arc per layer pair per edge
    tail, head, cap, order, offsets, tr, tree, pa, ts, dist, queue, queued, orphans = \
        cut_scratch(n, 2 * (n + (e1 - e0) * L * L))
    node_e = np.empty((nv, K))
    # energies; a -inf score (a forbidden label) becomes a finite energy larger
    # than any finite labelling's, so that the cut avoids it where it can
    finite = 0.0
    for v in range(n0, n1):
        for k in range(K):
            if unary[v, k] > -np.inf:
                finite += abs(unary[v, k])
    for e in range(e0, e1):
        P = pair[pwi[e]]
        for a in range(K):
            for b in range(K):
                finite += abs(P[a, b])
    big = 2.0 * finite + 1.0
    for v in range(nv):
        for k in range(K):
            u = unary[n0 + v, k]
            node_e[v, k] = -u if u > -np.inf else big
    # a linear term c x[v] is a terminal arc: to the sink (c > 0) or from the
    # source (c < 0); tr holds their difference, the part flow cannot cancel
    for v in range(nv):
        for k in range(1, K):
            tr[v * L + k - 1] = -(node_e[v, k] - node_e[v, k - 1])
    m = 0
    # the pairwise terms: linear parts on each end, |d| arcs between the layers
    for e in range(e0, e1):
        P = pair[pwi[e]]
        i = edges[e, 0] - n0
        j = edges[e, 1] - n0
        for a in range(1, K):
            tr[i * L + a - 1] += P[a, 0] - P[a - 1, 0]
        for b in range(1, K):
            tr[j * L + b - 1] += P[0, b] - P[0, b - 1]
        for a in range(1, K):
            for b in range(1, K):
                d = -(P[a, b] - P[a - 1, b] - P[a, b - 1] + P[a - 1, b - 1])
                if d < 0.0:
                    # d x x' = d x + |d| x (1 - x')
                    tr[i * L + a - 1] -= d
                    m = _push_arc(i * L + a - 1, j * L + b - 1, -d, 0.0, tail, head, cap, m)
    total = 0.0
    for a in range(m):
        total += cap[a]
    for v in range(n):
        total += abs(tr[v])
    inf_cap = 2.0 * total + 1.0
    for v in range(nv):
        for k in range(1, L):
            # x[v, k+1] = 1 and x[v, k] = 0 would cut this arc
            m = _push_arc(v * L + k, v * L + k - 1, inf_cap, 0.0, tail, head, cap, m)
    eps = 1e-12 * max(total, 1.0)
    _group_by_tail(n, tail, m, offsets, order, pa)
    bk_max_flow(n, tr, tail, head, cap, offsets, order, eps, tree, pa, ts, dist, queue,
                queued, orphans)
    # the source side of the cut (x = 1): the source's search tree
    for v in range(nv):
        lab = 0
        for k in range(L):
            if tree[v * L + k] == _S:
                lab += 1
        labels[n0 + v] = lab
    # the score of the labels found (exact: the cut's value up to rounding)
    score = 0.0
    for v in range(n0, n1):
        score += unary[v, labels[v]]
    for e in range(e0, e1):
        score += pair[pwi[e], labels[edges[e, 0]], labels[edges[e, 1]]]
    return score


@jit
def graphcut_batch(node_offsets, edge_offsets, edges, unary, pairwise, pw_index, mask, labels,
                   bound):
    """:func:`graphcut_one` on every sample of ``mask``, the scores into ``bound``."""
    for s in range(node_offsets.shape[0] - 1):
        if mask[s]:
            bound[s] = graphcut_one(node_offsets[s], node_offsets[s + 1], edge_offsets[s],
                                    edge_offsets[s + 1], edges, unary, pairwise, pw_index,
                                    labels)
