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

The maximum flow is Dinic's algorithm (level graph by breadth-first search,
blocking flow by depth-first search with current-arc pointers), on
float capacities: residuals below ``eps`` (a relative ``1e-12`` of the total
capacity) count as saturated.
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
def _add_linear(node, c, src, snk, tail, head, cap, m):
    """The term ``c * x[node]`` up to a constant (the labels need only the
    arcs); returns the new arc count."""
    if c > 0.0:
        return _push_arc(node, snk, c, 0.0, tail, head, cap, m)
    if c < 0.0:
        return _push_arc(src, node, -c, 0.0, tail, head, cap, m)
    return m


@jit
def _reach(n, src, offsets, order, head, cap, eps, level, queue):
    """Breadth-first levels (``-1``: unreached) of the nodes reachable from
    ``src`` along arcs of residual capacity above ``eps``."""
    for v in range(n):
        level[v] = -1
    level[src] = 0
    qh = 0
    qt = 1
    queue[0] = src
    while qh < qt:
        u = queue[qh]
        qh += 1
        for p in range(offsets[u], offsets[u + 1]):
            a = order[p]
            w = head[a]
            if level[w] < 0 and cap[a] > eps:
                level[w] = level[u] + 1
                queue[qt] = w
                qt += 1


@jit
def max_flow(n, src, snk, tail, head, cap, m, eps, level, queue, it, order, offsets, stack):
    """Dinic's maximum flow from ``src`` to ``snk`` on ``n`` nodes and the
    ``m`` arcs ``tail -> head`` (arc ``a ^ 1`` is ``a``'s reverse); ``cap``
    holds residual capacities on return.  Returns the flow value."""
    # arcs grouped by tail (counting sort), visited through ``order``
    for v in range(n + 1):
        offsets[v] = 0
    for a in range(m):
        offsets[tail[a] + 1] += 1
    for v in range(n):
        offsets[v + 1] += offsets[v]
    for v in range(n):
        it[v] = offsets[v]
    for a in range(m):
        v = tail[a]
        order[it[v]] = a
        it[v] += 1
    flow = 0.0
    while True:
        _reach(n, src, offsets, order, head, cap, eps, level, queue)
        if level[snk] < 0:
            return flow
        for v in range(n):
            it[v] = offsets[v]
        # blocking flow: depth-first paths along the level graph
        depth = 0
        u = src
        while True:
            if u == snk:
                bottleneck = np.inf
                for k in range(depth):
                    if cap[stack[k]] < bottleneck:
                        bottleneck = cap[stack[k]]
                back = depth
                for k in range(depth):
                    a = stack[k]
                    cap[a] -= bottleneck
                    cap[a ^ 1] += bottleneck
                    if cap[a] <= eps and k < back:
                        back = k
                flow += bottleneck
                depth = back
                u = src if depth == 0 else head[stack[depth - 1]]
                continue
            advanced = False
            while it[u] < offsets[u + 1]:
                a = order[it[u]]
                w = head[a]
                if cap[a] > eps and level[w] == level[u] + 1:
                    stack[depth] = a
                    depth += 1
                    u = w
                    advanced = True
                    break
                it[u] += 1
            if advanced:
                continue
            # a dead end: no path to the sink through u at this level
            level[u] = -1
            if depth == 0:
                break
            depth -= 1
            u = tail[stack[depth]]
            it[u] += 1


@jit
def graphcut_batch(node_offsets, edge_offsets, edges, unary, pairwise, pw_index, mask, labels,
                   bound):
    """Exact MAP labels of every sample of ``mask`` (supermodular pairwise
    scores in the label order, checked by the caller; unary scores may be
    ``-inf``), and the best score into ``bound``."""
    K = unary.shape[1]
    L = K - 1
    S = node_offsets.shape[0] - 1
    max_n = 0
    max_e = 0
    for s in range(S):
        if mask[s]:
            max_n = max(max_n, node_offsets[s + 1] - node_offsets[s])
            max_e = max(max_e, edge_offsets[s + 1] - edge_offsets[s])
    n_max = max_n * L + 2
    # arc pairs: a linear term per layer and a monotonicity pair per node; per edge
    # a linear term per layer on each end and, per layer pair, a linear term and an arc
    m_max = 2 * (max_n * 2 * L + max_e * (2 * L + 2 * L * L))
    tail = np.empty(m_max, np.int64)
    head = np.empty(m_max, np.int64)
    cap = np.empty(m_max)
    level = np.empty(n_max, np.int64)
    queue = np.empty(n_max, np.int64)
    it = np.empty(n_max, np.int64)
    order = np.empty(m_max, np.int64)
    offsets = np.empty(n_max + 1, np.int64)
    stack = np.empty(n_max, np.int64)
    node_e = np.empty((max(max_n, 1), K))
    for s in range(S):
        if not mask[s]:
            continue
        n0 = node_offsets[s]
        n1 = node_offsets[s + 1]
        nv = n1 - n0
        if nv == 0:
            bound[s] = 0.0
            continue
        if L == 0:
            total = 0.0
            for v in range(n0, n1):
                labels[v] = 0
                total += unary[v, 0]
            for e in range(edge_offsets[s], edge_offsets[s + 1]):
                total += pairwise[pw_index[e], 0, 0]
            bound[s] = total
            continue
        # energies; a -inf score (a forbidden label) becomes a finite energy larger
        # than any finite labelling's, so that the cut avoids it where it can
        finite = 0.0
        for v in range(n0, n1):
            for k in range(K):
                if unary[v, k] > -np.inf:
                    finite += abs(unary[v, k])
        for e in range(edge_offsets[s], edge_offsets[s + 1]):
            P = pairwise[pw_index[e]]
            for a in range(K):
                for b in range(K):
                    finite += abs(P[a, b])
        big = 2.0 * finite + 1.0
        for v in range(nv):
            for k in range(K):
                u = unary[n0 + v, k]
                node_e[v, k] = -u if u > -np.inf else big
        src = nv * L
        snk = src + 1
        m = 0
        # the linear terms of the nodes, and the monotonicity arcs
        for v in range(nv):
            for k in range(1, K):
                m = _add_linear(v * L + k - 1, node_e[v, k] - node_e[v, k - 1], src, snk,
                                tail, head, cap, m)
        # the pairwise terms: linear parts on each end, |d| arcs between the layers
        for e in range(edge_offsets[s], edge_offsets[s + 1]):
            P = pairwise[pw_index[e]]
            i = edges[e, 0] - n0
            j = edges[e, 1] - n0
            for a in range(1, K):
                m = _add_linear(i * L + a - 1, -(P[a, 0] - P[a - 1, 0]), src, snk, tail,
                                head, cap, m)
            for b in range(1, K):
                m = _add_linear(j * L + b - 1, -(P[0, b] - P[0, b - 1]), src, snk, tail,
                                head, cap, m)
            for a in range(1, K):
                for b in range(1, K):
                    d = -(P[a, b] - P[a - 1, b] - P[a, b - 1] + P[a - 1, b - 1])
                    if d < 0.0:
                        # d x x' = d x + |d| x (1 - x')
                        m = _add_linear(i * L + a - 1, d, src, snk, tail, head, cap, m)
                        m = _push_arc(i * L + a - 1, j * L + b - 1, -d, 0.0, tail, head, cap,
                                      m)
        total = 0.0
        for a in range(m):
            total += cap[a]
        inf_cap = 2.0 * total + 1.0
        for v in range(nv):
            for k in range(1, L):
                # x[v, k+1] = 1 and x[v, k] = 0 would cut this arc
                m = _push_arc(v * L + k, v * L + k - 1, inf_cap, 0.0, tail, head, cap, m)
        eps = 1e-12 * max(total, 1.0)
        n = nv * L + 2
        max_flow(n, src, snk, tail, head, cap, m, eps, level, queue, it, order, offsets, stack)
        # the source side: nodes still reachable from the source in the residual graph
        _reach(n, src, offsets, order, head, cap, eps, level, queue)
        for v in range(nv):
            lab = 0
            for k in range(L):
                if level[v * L + k] >= 0:
                    lab += 1
            labels[n0 + v] = lab
        # the score of the labels found (exact: the cut's value up to rounding)
        score = 0.0
        for v in range(n0, n1):
            score += unary[v, labels[v]]
        for e in range(edge_offsets[s], edge_offsets[s + 1]):
            score += pairwise[pw_index[e], labels[edges[e, 0]], labels[edges[e, 1]]]
        bound[s] = score
