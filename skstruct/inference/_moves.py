"""Move-making MAP by graph cuts: alpha-expansion and alpha-beta swap.

Both minimise the energy ``E(y) = -score(y)`` by a sequence of moves, each the best
labelling within a large neighbourhood of the current one, found exactly by one minimum
cut on a graph of two-label variables (Y. Boykov, O. Veksler and R. Zabih, "Fast
approximate energy minimization via graph cuts", IEEE TPAMI 23(11), 2001):

- an *expansion* move on label ``a`` lets every node keep its label or take ``a``;
- a *swap* move on labels ``a, b`` lets the nodes labelled ``a`` or ``b`` exchange them.

A cycle tries every label (every pair of labels) once; the moves stop after a cycle that
lowers the energy by no more than rounding, or after ``max_iter`` cycles.  The energy
never increases.  Each move's binary energy is ``sum_v c_v t_v + sum_uv l_uv t_v (1 -
t_u)`` plus a constant, with ``t_v = 1`` for the new label: for an edge with energies
``A = V(t_u=0, t_v=0)``, ``B = V(0, 1)``, ``C = V(1, 0)``, ``D = V(1, 1)``,
``V(t_u, t_v) = A + (C - A) t_u + (D - C) t_v + (B + C - A - D) (1 - t_u) t_v``, a graph
cut when ``l_uv = B + C - A - D >= 0`` for every edge.  That holds for every move when
each table is a *metric* (expansion: ``V(b, c) + V(a, a) <= V(b, a) + V(a, c)`` for all
labels ``a, b, c``) or a *semi-metric* (swap: ``V(a, a) + V(b, b) <= V(a, b) + V(b, a)``);
Potts and truncated linear tables are metrics, truncated quadratic ones semi-metrics.
On Potts tables an expansion local optimum is within a factor of 2 of the optimum's
energy (when the energies are non-negative; Boykov, Veksler and Zabih, Theorem 6.1).

The cuts run on :func:`~skstruct.inference._graphcut.bk_max_flow` (Boykov and
Kolmogorov's algorithm), one node per variable of the move.
"""

import numpy as np

from .._core._jit import jit
from .._core._pool import for_chunks
from ._graphcut import _S, _group_by_tail, _push_arc, bk_max_flow, cut_scratch

# what a kernel reports per sample besides its labels
OK = 0
NOT_METRIC = 1       # a move met B + C - A - D < 0 (status[s, 1:] the edge and labels)


@jit
def _node_energies(n0, n1, unary, De):
    """``De[v - n0, k] = -unary[v, k]``, a forbidden label (``-inf`` score) at an energy
    larger than any finite labelling's; returns that energy's scale."""
    K = unary.shape[1]
    finite = 0.0
    for v in range(n0, n1):
        for k in range(K):
            if unary[v, k] > -np.inf:
                finite += abs(unary[v, k])
    big = 2.0 * finite + 1.0
    for v in range(n0, n1):
        for k in range(K):
            u = unary[v, k]
            De[v - n0, k] = -u if u > -np.inf else big
    return big


@jit
def _energy(n0, e0, e1, edges, De, pair, pwi, lab):
    """The energy of ``lab`` (``De`` node energies, ``-pair`` edge energies)."""
    total = 0.0
    for v in range(De.shape[0]):
        total += De[v, lab[n0 + v]]
    for e in range(e0, e1):
        total -= pair[pwi[e], lab[edges[e, 0]], lab[edges[e, 1]]]
    return total


@jit
def _start(n0, n1, unary, lab, warm):
    """The node energies of the sample of nodes ``n0:n1`` (:func:`_node_energies`), and,
    unless ``warm``, each node's best unary label into ``lab``."""
    K = unary.shape[1]
    nv = n1 - n0
    De = np.empty((nv, K))
    _node_energies(n0, n1, unary, De)
    if not warm:
        for v in range(nv):
            best = 0
            for k in range(1, K):
                if De[v, k] < De[v, best]:
                    best = k
            lab[n0 + v] = best
    return De


@jit
def _cut(n, tr, tail, head, cap, m, offsets, order, tree, pa, ts, dist, queue, queued,
         orphans):
    """A minimum cut of the move's graph of ``n`` nodes and ``m`` arcs: ``tree[v] == _S``
    for the nodes that take the new label."""
    total = 0.0
    for a in range(m):
        total += cap[a]
    for v in range(n):
        total += abs(tr[v])
    eps = 1e-12 * max(total, 1.0)
    _group_by_tail(n, tail, m, offsets, order, pa)
    bk_max_flow(n, tr, tail, head, cap, offsets, order, eps, tree, pa, ts, dist, queue,
                queued, orphans)


@jit
def expansion_one(n0, n1, e0, e1, edges, unary, pair, pwi, lab, warm, max_iter, strict,
                  status):
    """Alpha-expansion on the sample of nodes ``n0:n1`` and edges ``e0:e1``.

    Starts from ``lab`` (``warm``) or from each node's best unary label; returns the
    number of cycles run and whether the last one lowered the energy by no more than
    rounding.  With ``strict``, ``status`` (5,) gets ``NOT_METRIC, e, a, b, c`` when a move
    on label ``a`` met edge ``e`` labelled ``(b, c)``, a configuration its table makes
    non-submodular (the labels are then those before that move).  Without, such a term is
    left out of the move's cut (the move then approximates the best one; it is still kept
    only if it lowers the energy): the learners' decoder, whose tables are learned."""
    K = unary.shape[1]
    nv = n1 - n0
    status[0] = OK
    if nv == 0:
        return 0, True
    De = _start(n0, n1, unary, lab, warm)
    # unpacked once: a field read per edge would cost atomic reference counts
    tail, head, cap, order, offsets, tr, tree, pa, ts, dist, queue, queued, orphans = \
        cut_scratch(nv, 2 * max(e1 - e0, 1))
    energy = _energy(n0, e0, e1, edges, De, pair, pwi, lab)
    cycles = 0
    converged = False
    while cycles < max_iter and not converged:
        cycles += 1
        start = energy
        for a in range(K):
            for v in range(nv):
                y = lab[n0 + v]
                tr[v] = -(De[v, a] - De[v, y])
            m = 0
            for e in range(e0, e1):
                P = pair[pwi[e]]
                u = edges[e, 0] - n0
                w = edges[e, 1] - n0
                yu = lab[n0 + u]
                yw = lab[n0 + w]
                if yu == a and yw == a:
                    continue
                # energies of (keep, keep), (keep, a), (a, keep), (a, a)
                A = -P[yu, yw]
                B = -P[yu, a]
                C = -P[a, yw]
                D = -P[a, a]
                tr[u] -= C - A
                tr[w] -= D - C
                lam = B + C - A - D
                if strict and lam < -1e-9 * (1.0 + abs(A) + abs(B) + abs(C) + abs(D)):
                    status[0] = NOT_METRIC
                    status[1] = e
                    status[2] = a
                    status[3] = yu
                    status[4] = yw
                    return cycles, False
                if lam > 0.0:
                    # paid when w takes a and u keeps its label: the arc w -> u
                    m = _push_arc(w, u, lam, 0.0, tail, head, cap, m)
            _cut(nv, tr, tail, head, cap, m, offsets, order, tree, pa, ts, dist, queue,
                 queued, orphans)
            changed = False
            for v in range(nv):
                if tree[v] == _S and lab[n0 + v] != a:
                    changed = True
                    break
            if not changed:
                continue
            # the move, kept only if it lowers the energy (the cut is exact up to rounding)
            for v in range(nv):
                # tree doubles as the old label's store: the cut is read once
                if tree[v] == _S:
                    pa[v] = lab[n0 + v]
                    lab[n0 + v] = a
                else:
                    pa[v] = -1
            new = _energy(n0, e0, e1, edges, De, pair, pwi, lab)
            if new < energy:
                energy = new
            else:
                for v in range(nv):
                    if pa[v] >= 0:
                        lab[n0 + v] = pa[v]
        converged = not (energy < start - 1e-12 * max(1.0, abs(start)))
    return cycles, converged


@jit
def swap_one(n0, n1, e0, e1, edges, unary, pair, pwi, adj_offsets, adj_edge, adj_nbr,
             adj_side, lab, warm, max_iter, strict, status):
    """Alpha-beta swap on the sample of nodes ``n0:n1`` and edges ``e0:e1`` (see
    :func:`expansion_one`); ``adj_*`` the batch's adjacency.  With ``strict``, ``status``
    gets ``NOT_METRIC, e, a, b`` when a move on labels ``a, b`` met edge ``e`` with
    ``V(a, a) + V(b, b) > V(a, b) + V(b, a)``; without, that term is left out of the
    move's cut."""
    K = unary.shape[1]
    nv = n1 - n0
    status[0] = OK
    if nv == 0:
        return 0, True
    De = _start(n0, n1, unary, lab, warm)
    # unpacked once: a field read per edge would cost atomic reference counts
    tail, head, cap, order, offsets, tr, tree, pa, ts, dist, queue, queued, orphans = \
        cut_scratch(nv, 2 * max(e1 - e0, 1))
    local = np.full(nv, -1, np.int64)     # the move's variable of a node, or -1
    member = np.empty(nv, np.int64)       # the node of a variable
    energy = _energy(n0, e0, e1, edges, De, pair, pwi, lab)
    cycles = 0
    converged = False
    while cycles < max_iter and not converged:
        cycles += 1
        start = energy
        for a in range(K):
            for b in range(a + 1, K):
                n = 0
                for v in range(nv):
                    y = lab[n0 + v]
                    if y == a or y == b:
                        local[v] = n
                        member[n] = v
                        n += 1
                if n == 0:
                    continue
                # t = 1: label a, t = 0: label b; edges to nodes outside the move are
                # node terms
                m = 0
                for i in range(n):
                    v = member[i]
                    c = De[v, a] - De[v, b]
                    for p in range(adj_offsets[n0 + v], adj_offsets[n0 + v + 1]):
                        x = adj_nbr[p] - n0
                        if local[x] >= 0:
                            continue
                        P = pair[pwi[adj_edge[p]]]
                        yx = lab[n0 + x]
                        if adj_side[p] == 0:
                            c -= P[a, yx] - P[b, yx]
                        else:
                            c -= P[yx, a] - P[yx, b]
                    tr[i] = -c
                for i in range(n):
                    v = member[i]
                    for p in range(adj_offsets[n0 + v], adj_offsets[n0 + v + 1]):
                        if adj_side[p] != 0:
                            continue
                        x = adj_nbr[p] - n0
                        j = local[x]
                        if j < 0:
                            continue
                        P = pair[pwi[adj_edge[p]]]
                        A = -P[b, b]
                        B = -P[b, a]
                        C = -P[a, b]
                        D = -P[a, a]
                        tr[i] -= C - A
                        tr[j] -= D - C
                        lam = B + C - A - D
                        if strict and lam < -1e-9 * (1.0 + abs(A) + abs(B) + abs(C)
                                                     + abs(D)):
                            status[0] = NOT_METRIC
                            status[1] = adj_edge[p]
                            status[2] = a
                            status[3] = b
                            for q in range(nv):
                                local[q] = -1
                            return cycles, False
                        if lam > 0.0:
                            m = _push_arc(j, i, lam, 0.0, tail, head, cap, m)
                _cut(n, tr, tail, head, cap, m, offsets, order, tree, pa, ts, dist, queue,
                     queued, orphans)
                changed = False
                for i in range(n):
                    v = member[i]
                    if lab[n0 + v] != (a if tree[i] == _S else b):
                        changed = True
                        break
                if changed:
                    for i in range(n):
                        v = member[i]
                        pa[i] = lab[n0 + v]
                        lab[n0 + v] = a if tree[i] == _S else b
                    new = _energy(n0, e0, e1, edges, De, pair, pwi, lab)
                    if new < energy:
                        energy = new
                    else:
                        for i in range(n):
                            lab[n0 + member[i]] = pa[i]
                for i in range(n):
                    local[member[i]] = -1
        converged = not (energy < start - 1e-12 * max(1.0, abs(start)))
    return cycles, converged


@jit
def _moves_chunks(swap, node_offsets, edge_offsets, edges, unary, pairwise, pw_index,
                  adj_offsets, adj_edge, adj_nbr, adj_side, mask, chunks, warm, max_iter,
                  labels, n_iter, converged, status, c0, c1):
    # the kernel of moves_batch, over the chunks c0 <= c < c1
    for c in range(c0, c1):
        for s in range(chunks[c], chunks[c + 1]):
            if not mask[s]:
                continue
            n0, n1 = node_offsets[s], node_offsets[s + 1]
            e0, e1 = edge_offsets[s], edge_offsets[s + 1]
            if swap:
                it, ok = swap_one(n0, n1, e0, e1, edges, unary, pairwise, pw_index,
                                  adj_offsets, adj_edge, adj_nbr, adj_side, labels, warm,
                                  max_iter, True, status[s])
            else:
                it, ok = expansion_one(n0, n1, e0, e1, edges, unary, pairwise, pw_index,
                                       labels, warm, max_iter, True, status[s])
            n_iter[s] = it
            converged[s] = ok


def moves_batch(swap, batch, unary, pairwise, pw_index, mask, chunks, warm, max_iter, labels,
                n_iter, converged, status):
    """Alpha-expansion (``swap`` false) or alpha-beta swap on every sample of ``mask``:
    labels into ``labels`` (from them, with ``warm``), cycles into ``n_iter``, whether the
    last cycle left the energy unchanged into ``converged`` and each sample's
    :func:`expansion_one` / :func:`swap_one` status into ``status`` (S, 5).

    Runs on the threads in force (:func:`~skstruct._core._pool.for_chunks`)."""
    adj = batch.adjacency

    def run(c0, c1):
        _moves_chunks(bool(swap), batch.node_offsets, batch.edge_offsets, batch.edges, unary,
                      pairwise, pw_index, adj.offsets, adj.edge, adj.nbr, adj.side, mask,
                      chunks, bool(warm), int(max_iter), labels, n_iter, converged, status,
                      c0, c1)

    for_chunks(run, chunks)


@jit
def _first_violation(pairwise, used, swap, tol, out):
    """The first table of ``used`` that is not a metric (``swap`` false:
    ``P[b, c] + P[a, a] >= P[b, a] + P[a, c]``) or not a semi-metric (``swap``:
    ``P[a, a] + P[b, b] >= P[a, b] + P[b, a]``) in scores: ``out = (table, a, b, c)``
    and its shortfall returned, or 0 when every table is one."""
    K = pairwise.shape[1]
    for i in range(used.shape[0]):
        P = pairwise[used[i]]
        scale = 0.0
        for x in range(K):
            for y in range(K):
                scale = max(scale, abs(P[x, y]))
        slack = tol * (1.0 + scale)
        for a in range(K):
            if swap:
                for b in range(a + 1, K):
                    d = P[a, a] + P[b, b] - P[a, b] - P[b, a]
                    if d < -slack:
                        out[0], out[1], out[2], out[3] = used[i], a, b, -1
                        return -d
            else:
                for b in range(K):
                    for c in range(K):
                        d = P[b, c] + P[a, a] - P[b, a] - P[a, c]
                        if d < -slack:
                            out[0], out[1], out[2], out[3] = used[i], a, b, c
                            return -d
    return 0.0


# above this many table entries times labels, the tables are not checked ahead of the moves
# (each move still checks the configurations it meets)
CHECK_BUDGET = 50_000_000


def _edge_of_table(batch, pw_index, mask, t):
    edge_mask = np.repeat(mask, np.diff(batch.edge_offsets))
    e = int(np.flatnonzero(edge_mask & (pw_index == t))[0])
    s = int(np.searchsorted(batch.edge_offsets, e, side="right") - 1)
    return e, s


def _what_applies(pairwise, t, K):
    """The methods that would decode a table ``pairwise[t]`` that a move refused."""
    semi = _first_violation(pairwise, np.array([t], np.int64), True, 1e-9,
                            np.zeros(4, np.int64)) == 0.0
    alt = "method='swap' (its tables are semi-metrics), " if semi else ""
    two = "'qpbo' (two labels), " if K == 2 else ""
    return f"use {alt}{two}'trws' (with its bound) or 'ilp' (exact)"


def check_moves(name, batch, pairwise, pw_index, mask):
    """Refuse tables the moves of ``name`` (``"expansion"`` or ``"swap"``) cannot cut:
    non-finite scores, and (within :data:`CHECK_BUDGET`) tables that are not metrics
    (expansion) or semi-metrics (swap), naming the edge, its sample and the labels."""
    if batch.n_edges == 0 or not mask.any():
        return
    edge_mask = np.repeat(mask, np.diff(batch.edge_offsets))
    used = np.unique(pw_index[edge_mask])
    finite = np.isfinite(pairwise[used]).all(axis=(1, 2))
    if not finite.all():
        e, s = _edge_of_table(batch, pw_index, mask, int(used[np.argmin(finite)]))
        raise ValueError(f"method={name!r} needs finite pairwise scores; the table of edge {e} "
                         f"(sample {s}) holds a non-finite score: use method='trws' or 'ilp'")
    K = pairwise.shape[1]
    if used.size * K ** (2 if name == "swap" else 3) > CHECK_BUDGET:
        return
    out = np.zeros(4, np.int64)
    gap = _first_violation(np.ascontiguousarray(pairwise), used.astype(np.int64),
                           name == "swap", 1e-9, out)
    if gap > 0.0:
        t, a, b, c = (int(x) for x in out)
        e, s = _edge_of_table(batch, pw_index, mask, t)
        raise ValueError(refusal(name, pairwise, t, e, s, a, b, c))


def refusal(name, pairwise, t, e, s, a, b, c=-1):
    """The message refusing table ``t`` (of edge ``e``, sample ``s``) for ``name`` at labels
    ``a, b`` (swap) or ``a, b, c`` (expansion)."""
    P = pairwise[t]
    K = pairwise.shape[1]
    if name == "swap":
        what = (f"is not a semi-metric at labels ({a}, {b}): P[{a}, {a}] + P[{b}, {b}] = "
                f"{P[a, a] + P[b, b]:.6g} < P[{a}, {b}] + P[{b}, {a}] = "
                f"{P[a, b] + P[b, a]:.6g}")
        alt = ("use " + ("'qpbo' (two labels), " if K == 2 else "")
               + "'trws' (with its bound) or 'ilp' (exact)")
    else:
        what = (f"is not a metric at labels (a, b, c) = ({a}, {b}, {c}): P[{b}, {c}] + "
                f"P[{a}, {a}] = {P[b, c] + P[a, a]:.6g} < P[{b}, {a}] + P[{a}, {c}] = "
                f"{P[b, a] + P[a, c]:.6g}")
        alt = _what_applies(pairwise, t, K)
    return (f"method={name!r} cuts only pairwise tables that are "
            f"{'semi-metrics' if name == 'swap' else 'metrics'} in energy (-score); the table "
            f"of edge {e} (sample {s}) {what}: {alt}")


def _run(name, batch, unary, pairwise, pw_index, mask, labels, bound, options):
    from .._core import n_chunks

    check_moves(name, batch, pairwise, pw_index, mask)
    S = batch.n_samples
    n_iter = np.zeros(S, np.int64)
    converged = np.zeros(S, bool)
    status = np.zeros((S, 5), np.int64)
    moves_batch(name == "swap", batch, np.ascontiguousarray(options.augmented),
                np.ascontiguousarray(pairwise), pw_index, mask, batch.chunks(n_chunks()),
                False, options.max_iter, labels, n_iter, converged, status)
    bad = np.flatnonzero(status[:, 0] != OK)
    if bad.size:
        s = int(bad[0])
        e, a, b, c = (int(x) for x in status[s, 1:])
        raise ValueError(refusal(name, pairwise, int(pw_index[e]), e, s, a, b, c))
    bound[mask] = np.inf
    return n_iter, converged


def run_expansion(batch, unary, pairwise, pw_index, mask, labels, bound, options):
    """The runner of ``method="expansion"`` (see :mod:`skstruct._core._decoders`)."""
    return _run("expansion", batch, unary, pairwise, pw_index, mask, labels, bound, options)


def run_swap(batch, unary, pairwise, pw_index, mask, labels, bound, options):
    """The runner of ``method="swap"`` (see :mod:`skstruct._core._decoders`)."""
    return _run("swap", batch, unary, pairwise, pw_index, mask, labels, bound, options)
