"""Loopy belief propagation kernels (sum-product and max-product, log space).

All kernels follow the batch conventions of :mod:`skstruct.inference._graph`:
a packed batch of ``S`` graphs, global node indices in ``edges``, scores that
are maximised, and messages stored in a ``(2 E, K)`` array whose row ``2 e``
goes from ``edges[e, 0]`` to ``edges[e, 1]`` and row ``2 e + 1`` back.  The
adjacency arrays come from :func:`skstruct.inference._graph.build_adjacency`.

For a node ``v`` seen at adjacency position ``p`` (edge ``e = adj_edge[p]``,
side ``adj_side[p]``), the message *into* ``v`` along ``e`` is row
``2 e + 1 - side`` and the message *out of* ``v`` is row ``2 e + side``.

Hard constraints are ``-inf`` log-potentials.  Every kernel keeps its outputs
finite or ``-inf``: an all ``-inf`` message stays all ``-inf`` rather than
being normalised into NaN.

Samples are independent and are processed in parallel (``prange``); inside a
sample the work is sequential, so a sweep always sees the latest messages.
"""

import numpy as np
from numba import prange

from .._core._jit import jit, leaf, pjit
from ._exact import _sample_score
from ._shapes import DENSE, POTTS, potts_maxplus, shaped_logsumexp, truncated_maxplus

NEG_INF = -np.inf


@leaf
def _gather(v, unary, adj_offsets, adj_edge, adj_side, messages, skip_edge, out):
    """Write ``unary[v]`` plus the messages into ``v`` except along ``skip_edge``.

    ``skip_edge = -1`` keeps every incoming message.  Skipping by edge index
    (not by neighbour) keeps parallel edges between the same nodes distinct.
    """
    n_labels = unary.shape[1]
    for k in range(n_labels):
        out[k] = unary[v, k]
    for p in range(adj_offsets[v], adj_offsets[v + 1]):
        e = adj_edge[p]
        if e == skip_edge:
            continue
        row = 2 * e + 1 - adj_side[p]
        for k in range(n_labels):
            out[k] += messages[row, k]


@leaf
def _gather_row(v, unary, adj_offsets, adj_edge, adj_side, messages, out, row):
    """:func:`_gather` of every message into ``v`` into ``out[row]`` (indexed in place: a
    row view costs atomic reference counts per node)."""
    n_labels = unary.shape[1]
    for k in range(n_labels):
        out[row, k] = unary[v, k]
    for p in range(adj_offsets[v], adj_offsets[v + 1]):
        r = 2 * adj_edge[p] + 1 - adj_side[p]
        for k in range(n_labels):
            out[row, k] += messages[r, k]


@leaf
def _maxplus(h, pairwise, pw, side, out):
    """``out[b] = max_a h[a] + theta(a, b)``, ``theta`` seen from the sender.

    ``side`` is the sender's side of the edge: with side 0 the sender is
    ``edges[e, 0]`` and ``theta(a, b) = pairwise[pw, a, b]``, otherwise the
    matrix is read transposed.  The loop nest is chosen so that the innermost
    loop walks ``pairwise`` contiguously in both cases.
    """
    n_labels = h.shape[0]
    # select-style maxima let LLVM vectorise both loop nests; the table is indexed in
    # place, as a row view per label would cost two atomic reference counts each
    if side == 0:
        for b in range(n_labels):
            out[b] = NEG_INF
        for a in range(n_labels):
            ha = h[a]
            for b in range(n_labels):
                val = ha + pairwise[pw, a, b]
                out[b] = val if val > out[b] else out[b]
    else:
        # a maximum over a row: four running maxima, as LLVM may not reorder a floating
        # maximum without assuming no NaN (one chain of dependent maxima is 4x slower)
        n4 = n_labels - n_labels % 4
        for b in range(n_labels):
            m0 = NEG_INF
            m1 = NEG_INF
            m2 = NEG_INF
            m3 = NEG_INF
            for a in range(0, n4, 4):
                v0 = h[a] + pairwise[pw, b, a]
                v1 = h[a + 1] + pairwise[pw, b, a + 1]
                v2 = h[a + 2] + pairwise[pw, b, a + 2]
                v3 = h[a + 3] + pairwise[pw, b, a + 3]
                m0 = v0 if v0 > m0 else m0
                m1 = v1 if v1 > m1 else m1
                m2 = v2 if v2 > m2 else m2
                m3 = v3 if v3 > m3 else m3
            for a in range(n4, n_labels):
                v0 = h[a] + pairwise[pw, b, a]
                m0 = v0 if v0 > m0 else m0
            m0 = m1 if m1 > m0 else m0
            m2 = m3 if m3 > m2 else m2
            out[b] = m2 if m2 > m0 else m0


@leaf
def maxplus_t(h, pairwise, pw, side, out, shapes, dt):
    """:func:`_maxplus`, in O(K) when ``shapes`` (the tables' shapes of
    :func:`~skstruct.inference._shapes.table_shapes`, or None: every table dense) says
    table ``pw`` has a known shape; ``dt`` (2 K + 1,) is scratch."""
    if shapes is not None:
        kind = int(shapes[pw, 0])
        # one call per shape, each small enough to inline
        if kind == POTTS:
            potts_maxplus(h, shapes[pw, 1], shapes[pw, 2], out)
            return
        if kind != DENSE:
            truncated_maxplus(h, kind, shapes[pw, 1], shapes[pw, 2], shapes[pw, 3], out, dt)
            return
    _maxplus(h, pairwise, pw, side, out)


@jit
def _logsumexp_product(h, pairwise, pw, side, out, acc):
    """``out[b] = log sum_a exp(h[a] + theta(a, b))``; ``acc`` is scratch.

    The per-column maximum is taken first (via :func:`_maxplus`) so that the
    exponentials never overflow, and an all ``-inf`` column stays ``-inf``.
    """
    n_labels = h.shape[0]
    _maxplus(h, pairwise, pw, side, out)
    for b in range(n_labels):
        acc[b] = 0.0
    if side == 0:
        for a in range(n_labels):
            ha = h[a]
            if ha == NEG_INF:
                continue
            for b in range(n_labels):
                if out[b] != NEG_INF:
                    acc[b] += np.exp(ha + pairwise[pw, a, b] - out[b])
    else:
        for b in range(n_labels):
            mb = out[b]
            if mb == NEG_INF:
                continue
            total = 0.0
            for a in range(n_labels):
                total += np.exp(h[a] + pairwise[pw, b, a] - mb)
            acc[b] = total
    for b in range(n_labels):
        if out[b] != NEG_INF:
            out[b] += np.log(acc[b])


@jit
def _normalise(msg, use_max):
    """Shift ``msg`` so its max (max-product) or logsumexp (sum-product) is 0."""
    n_labels = msg.shape[0]
    m = NEG_INF
    for k in range(n_labels):
        m = max(m, msg[k])
    if m == NEG_INF:
        return
    if not use_max:
        total = 0.0
        for k in range(n_labels):
            total += np.exp(msg[k] - m)
        m += np.log(total)
    for k in range(n_labels):
        msg[k] -= m


@jit
def _update_message(row, msg, messages, damping, use_max):
    """Damp ``msg`` towards the stored row, store it, return the max change.

    Damping mixes in log space.  A ``-inf`` in the new message is a hard
    constraint and is kept; a ``-inf`` in the old message carries no
    magnitude to mix, so the new value is taken undamped (mixing would pin the
    entry at ``-inf`` forever).
    """
    n_labels = msg.shape[0]
    if damping > 0.0:
        for k in range(n_labels):
            old = messages[row, k]
            if msg[k] != NEG_INF and old != NEG_INF:
                msg[k] = (1.0 - damping) * msg[k] + damping * old
        _normalise(msg, use_max)
    delta = 0.0
    for k in range(n_labels):
        old = messages[row, k]
        new = msg[k]
        # equal values (in particular -inf against -inf) are no change
        if new != old:
            d = abs(new - old)
            if not d <= delta:
                delta = d
        messages[row, k] = new
    return delta


@jit
def _sweep(e0, e1, edges, unary, pairwise, pw_index, adj_offsets, adj_edge, adj_side,
           messages, use_max, damping, h, msg, acc, shapes, dt):
    """One Gauss-Seidel sweep over edges ``e0:e1``; returns the largest message change.
    ``shapes``: see :func:`maxplus_t`."""
    delta = 0.0
    for e in range(e0, e1):
        pw = pw_index[e]
        for side in range(2):
            sender = edges[e, side]
            _gather(sender, unary, adj_offsets, adj_edge, adj_side, messages, e, h)
            if use_max:
                maxplus_t(h, pairwise, pw, side, msg, shapes, dt)
            elif shapes is None or not shaped_logsumexp(h, int(shapes[pw, 0]), shapes[pw, 1],
                                                        shapes[pw, 2], msg, dt):
                _logsumexp_product(h, pairwise, pw, side, msg, acc)
            _normalise(msg, use_max)
            d = _update_message(2 * e + side, msg, messages, damping, use_max)
            if not d <= delta:
                delta = d
    return delta


@pjit
def loopy_bp_batch(node_offsets, edge_offsets, edges, unary, pairwise, pw_index, adj, active,
                   messages, use_max, max_iter, damping, tol, n_iter_out, shapes=None):
    """Damped loopy belief propagation in log space, messages updated in place.

    Parameters
    ----------
    node_offsets, edge_offsets : int64 ndarray of shape (S + 1,)
        Node and edge ranges of each sample.
    edges : int64 ndarray of shape (E, 2)
        Global node indices of each edge.
    unary : float64 ndarray of shape (N, K)
        Node log-potentials (scores).
    pairwise : float64 ndarray of shape (M, K, K)
        Edge log-potential tables.
    pw_index : int64 ndarray of shape (E,)
        Table used by each edge.
    adj : Adjacency
        The batch's adjacency (``GraphBatch.adjacency``, see
        :func:`~skstruct._core._graph.build_adjacency`).
    active : bool ndarray of shape (S,)
        Samples to process; the others are left untouched.
    messages : float64 ndarray of shape (2 E, K)
        Log-messages, read as the starting point (zeros for a fresh start,
        previous messages for a warm start) and overwritten with the result.
    use_max : bool
        Max-product (max-sum) when true, sum-product otherwise.
    max_iter : int
        Maximum number of sweeps per sample.
    damping : float
        Weight of the old message, ``new = (1 - damping) * computed +
        damping * old`` in log space; 0 disables damping.
    tol : float
        A sample stops after a sweep whose largest absolute message change is
        below ``tol`` (``-inf`` against ``-inf`` counts as no change).
    n_iter_out : int64 ndarray of shape (S,)
        Written with the number of sweeps performed by each sample.
    shapes : ndarray of shape (M, 4) or None
        The tables' shapes (:func:`~skstruct.inference._shapes.table_shapes`): updates
        in O(K) for the tables of a known shape (max-product: Potts and truncated
        tables; sum-product: Potts).  None: every table dense.

    Returns
    -------
    converged : bool ndarray of shape (S,)
        Whether each sample met the tolerance within ``max_iter`` sweeps.
        Samples without edges converge after 0 sweeps.

    Notes
    -----
    One sweep visits the sample's edges in edge order and recomputes both
    directions of each edge from the latest messages (Gauss-Seidel order).
    Each message is normalised to max 0 (max-product) or logsumexp 0
    (sum-product); an all ``-inf`` message, which signals an infeasible
    sample, is left as is.
    """
    adj_offsets, adj_edge, adj_side = adj.offsets, adj.edge, adj.side
    n_samples = node_offsets.shape[0] - 1
    n_labels = unary.shape[1]
    converged = np.zeros(n_samples, np.bool_)
    for s in prange(n_samples):
        if not active[s]:
            continue
        e0 = edge_offsets[s]
        e1 = edge_offsets[s + 1]
        n_iter_out[s] = 0
        if e1 == e0:
            converged[s] = True
            continue
        h = np.empty(n_labels)
        msg = np.empty(n_labels)
        acc = np.empty(n_labels)
        dt = np.empty(2 * n_labels + 1)
        for it in range(max_iter):
            delta = _sweep(e0, e1, edges, unary, pairwise, pw_index, adj_offsets, adj_edge,
                           adj_side, messages, use_max, damping, h, msg, acc, shapes, dt)
            n_iter_out[s] = it + 1
            if delta < tol:
                converged[s] = True
                break
    return converged


@jit
def _plogp_energy(prob, logp, theta):
    """Return ``(sum prob * theta, -sum prob * logp)`` with ``0 * x = 0``."""
    energy = 0.0
    entropy = 0.0
    for k in range(prob.shape[0]):
        if prob[k] > 0.0:
            energy += prob[k] * theta[k]
            entropy -= prob[k] * logp[k]
    return energy, entropy


@pjit
def bp_beliefs_batch(node_offsets, edge_offsets, edges, unary, pairwise, pw_index, adj, active,
                     messages, node_out, edge_out, logz_out):
    """Node and edge beliefs and the Bethe log partition from sum-product messages.

    Parameters
    ----------
    node_offsets, edge_offsets, edges, unary, pairwise, pw_index : ndarray
        The batch, as in :func:`loopy_bp_batch`.
    adj : Adjacency
        The batch's adjacency (``GraphBatch.adjacency``, see
        :func:`~skstruct._core._graph.build_adjacency`).
    active : bool ndarray of shape (S,)
        Samples to process; the others are left untouched.
    messages : float64 ndarray of shape (2 E, K)
        Sum-product log-messages (read only).
    node_out : float64 ndarray of shape (N, K)
        Written with the node beliefs, each row summing to 1.
    edge_out : float64 ndarray of shape (E, K, K)
        Written with the edge beliefs, ``edge_out[e, a, b]`` for label ``a`` at
        ``edges[e, 0]`` and ``b`` at ``edges[e, 1]``, each summing to 1.
    logz_out : float64 ndarray of shape (S,)
        Written with the Bethe approximation of each sample's log partition.

    Notes
    -----
    ``logZ_Bethe = sum_v <b_v, theta_v> + sum_e <b_e, theta_e> + sum_e H(b_e)
    + sum_v (1 - deg_v) H(b_v)`` with ``0 * log 0 = 0 * -inf = 0``.  At a
    fixed point on a forest it is the exact log partition.  A sample with an
    all ``-inf`` belief is infeasible: its beliefs are set to 0 and its log
    partition to ``-inf``.  A sample with no nodes has log partition 0.
    """
    adj_offsets, adj_edge, adj_side = adj.offsets, adj.edge, adj.side
    n_samples = node_offsets.shape[0] - 1
    n_labels = unary.shape[1]
    for s in prange(n_samples):
        if not active[s]:
            continue
        n0 = node_offsets[s]
        n1 = node_offsets[s + 1]
        e0 = edge_offsets[s]
        e1 = edge_offsets[s + 1]
        h = np.empty(n_labels)
        hv = np.empty(n_labels)
        logp = np.empty(n_labels)
        logz = 0.0
        feasible = True
        for v in range(n0, n1):
            _gather(v, unary, adj_offsets, adj_edge, adj_side, messages, -1, h)
            m = NEG_INF
            for k in range(n_labels):
                m = max(m, h[k])
            if m == NEG_INF:
                feasible = False
                break
            total = 0.0
            for k in range(n_labels):
                total += np.exp(h[k] - m)
            lse = m + np.log(total)
            for k in range(n_labels):
                logp[k] = h[k] - lse
                node_out[v, k] = np.exp(logp[k])
            energy, entropy = _plogp_energy(node_out[v], logp, unary[v])
            deg = adj_offsets[v + 1] - adj_offsets[v]
            logz += energy + (1 - deg) * entropy
        if feasible:
            for e in range(e0, e1):
                u = edges[e, 0]
                v = edges[e, 1]
                pw = pw_index[e]
                _gather(u, unary, adj_offsets, adj_edge, adj_side, messages, e, h)
                _gather(v, unary, adj_offsets, adj_edge, adj_side, messages, e, hv)
                b_e = edge_out[e]
                m = NEG_INF
                for a in range(n_labels):
                    for b in range(n_labels):
                        val = pairwise[pw, a, b] + h[a] + hv[b]
                        b_e[a, b] = val
                        m = max(m, val)
                if m == NEG_INF:
                    feasible = False
                    break
                total = 0.0
                for a in range(n_labels):
                    for b in range(n_labels):
                        total += np.exp(b_e[a, b] - m)
                lse = m + np.log(total)
                for a in range(n_labels):
                    for b in range(n_labels):
                        lp = b_e[a, b] - lse
                        pr = np.exp(lp)
                        b_e[a, b] = pr
                        if pr > 0.0:
                            logz += pr * (pairwise[pw, a, b] - lp)
        if feasible:
            logz_out[s] = logz
        else:
            logz_out[s] = NEG_INF
            for v in range(n0, n1):
                for k in range(n_labels):
                    node_out[v, k] = 0.0
            for e in range(e0, e1):
                for a in range(n_labels):
                    for b in range(n_labels):
                        edge_out[e, a, b] = 0.0


@pjit
def max_beliefs_decode_batch(node_offsets, edge_offsets, edges, unary, pairwise, pw_index, adj,
                             active, messages, labels_out):
    """Label every node by the argmax of its max-product belief.

    Parameters
    ----------
    node_offsets, edge_offsets, edges, unary, pairwise, pw_index : ndarray
        The batch, as in :func:`loopy_bp_batch` (only ``node_offsets`` and
        ``unary`` are read; the rest keeps the kernel signatures uniform).
    adj : Adjacency
        The batch's adjacency (``GraphBatch.adjacency``, see
        :func:`~skstruct._core._graph.build_adjacency`).
    active : bool ndarray of shape (S,)
        Samples to process; the others are left untouched.
    messages : float64 ndarray of shape (2 E, K)
        Max-product log-messages (read only).
    labels_out : int64 ndarray of shape (N,)
        Written with ``argmax_k unary[v, k] + sum of incoming messages``; ties
        (and all ``-inf`` beliefs) go to the lowest label.

    Notes
    -----
    On a forest with a unique optimum the result is the MAP labelling.  With
    ties between optima the per-node argmaxes may mix different optima.
    """
    adj_offsets, adj_edge, adj_side = adj.offsets, adj.edge, adj.side
    n_samples = node_offsets.shape[0] - 1
    n_labels = unary.shape[1]
    for s in prange(n_samples):
        if not active[s]:
            continue
        n0 = node_offsets[s]
        _decode_beliefs(n0, node_offsets[s + 1], unary, adj_offsets, adj_edge, adj_side,
                        messages, np.empty(n_labels), labels_out[n0:])


@jit
def _decode_beliefs(n0, n1, unary, adj_offsets, adj_edge, adj_side, messages, h, labels):
    """``labels[v - n0] = argmax`` of node ``v``'s max-product belief (lowest on ties)."""
    n_labels = unary.shape[1]
    for v in range(n0, n1):
        _gather(v, unary, adj_offsets, adj_edge, adj_side, messages, -1, h)
        best = 0
        for k in range(1, n_labels):
            if h[k] > h[best]:
                best = k
        labels[v - n0] = best


@jit
def _keep_best(n0, n1, e0, e1, edges, unary, pairwise, pw_index, adj, messages, h, cand, best,
               labels_out):
    """Decode one sample two ways, keep a strictly better labelling; the best score.

    The belief argmax is max-product's own decoding; the sequential decoding
    (conditioning each node on its already labelled neighbours) breaks ties
    between optima consistently, which the independent argmaxes cannot.
    """
    adj_offsets, adj_edge, adj_nbr, adj_side = adj.offsets, adj.edge, adj.nbr, adj.side
    for way in range(2):
        if way == 0:
            _decode_beliefs(n0, n1, unary, adj_offsets, adj_edge, adj_side, messages, h, cand)
        else:
            _decode(n0, n1, unary, pairwise, pw_index, adj_offsets, adj_edge, adj_nbr,
                    adj_side, messages, cand, h)
        best = _adopt(n0, n1, e0, e1, edges, unary, pairwise, pw_index, cand, best, labels_out)
    return best


@jit
def _adopt(n0, n1, e0, e1, edges, unary, pairwise, pw_index, cand, best, labels_out):
    """Copy the labelling ``cand`` (local indices) into ``labels_out`` if it
    scores strictly above ``best``; return the best score."""
    score = _sample_score(n0, n1, e0, e1, edges, unary, pairwise, pw_index, cand, n0)
    if score > best:
        for v in range(n0, n1):
            labels_out[v] = cand[v - n0]
        return score
    return best


@pjit
def max_product_batch(node_offsets, edge_offsets, edges, unary, pairwise, pw_index, adj, active,
                      messages, max_iter, damping, tol, labels_out, score_out, n_iter_out,
                      shapes=None):
    """Loopy max-product that keeps the best labelling it has seen.

    Runs the sweeps of :func:`loopy_bp_batch` with ``use_max=True`` and, from
    the starting messages and after every sweep, decodes two labellings (the
    belief argmax of :func:`max_beliefs_decode_batch` and TRW-S's sequential
    decoding) and scores them; a sample's labelling is replaced only by a
    strictly better one.  Max-product on a
    graph with cycles need not improve monotonically (it can oscillate), so
    the last iterate alone may be much worse than an earlier one.

    Parameters
    ----------
    node_offsets, ..., messages, max_iter, damping, tol, n_iter_out, shapes
        As in :func:`loopy_bp_batch`.
    labels_out : int64 ndarray of shape (N,)
        Written with the best labelling seen for every active sample.
    score_out : float64 ndarray of shape (S,)
        Written with its score (``-inf`` when every labelling seen breaks a
        hard constraint; 0 for an empty sample).

    Returns
    -------
    converged : bool ndarray of shape (S,)
        As in :func:`loopy_bp_batch`.
    """
    adj_offsets, adj_edge, adj_side = adj.offsets, adj.edge, adj.side
    n_samples = node_offsets.shape[0] - 1
    n_labels = unary.shape[1]
    converged = np.zeros(n_samples, np.bool_)
    for s in prange(n_samples):
        if not active[s]:
            continue
        n0 = node_offsets[s]
        n1 = node_offsets[s + 1]
        e0 = edge_offsets[s]
        e1 = edge_offsets[s + 1]
        h = np.empty(n_labels)
        msg = np.empty(n_labels)
        acc = np.empty(n_labels)
        dt = np.empty(2 * n_labels + 1)
        cand = np.zeros(n1 - n0, np.int64)
        best = NEG_INF
        for v in range(n0, n1):
            labels_out[v] = 0
        best = _keep_best(n0, n1, e0, e1, edges, unary, pairwise, pw_index, adj, messages, h,
                          cand, best, labels_out)
        n_iter_out[s] = 0
        if e1 == e0:
            converged[s] = True
        else:
            for it in range(max_iter):
                delta = _sweep(e0, e1, edges, unary, pairwise, pw_index, adj_offsets,
                               adj_edge, adj_side, messages, True, damping, h, msg, acc,
                               shapes, dt)
                n_iter_out[s] = it + 1
                best = _keep_best(n0, n1, e0, e1, edges, unary, pairwise, pw_index, adj,
                                  messages, h, cand, best, labels_out)
                if delta < tol:
                    converged[s] = True
                    break
        score_out[s] = best
    return converged


@leaf
def _decode(n0, n1, unary, pairwise, pw_index, adj_offsets, adj_edge, adj_nbr, adj_side,
            messages, labels, acc):
    """Kolmogorov's sequential decoding of one sample into ``labels[v - n0]``.

    In node order, ``x_s`` maximises ``unary_s + sum over labelled (lower)
    neighbours u of theta_us(x_u, .) + sum over unlabelled (higher) neighbours
    of m_{u->s}``.  Ties and all ``-inf`` rows go to the lowest label.
    """
    n_labels = unary.shape[1]
    for v in range(n0, n1):
        for k in range(n_labels):
            acc[k] = unary[v, k]
        for p in range(adj_offsets[v], adj_offsets[v + 1]):
            u = adj_nbr[p]
            e = adj_edge[p]
            side = adj_side[p]
            if u < v:
                xu = labels[u - n0]
                pw = pw_index[e]
                if side == 0:
                    for k in range(n_labels):
                        acc[k] += pairwise[pw, k, xu]
                else:
                    for k in range(n_labels):
                        acc[k] += pairwise[pw, xu, k]
            elif u > v:
                row = 2 * e + 1 - side
                for k in range(n_labels):
                    acc[k] += messages[row, k]
        best = 0
        for k in range(1, n_labels):
            if acc[k] > acc[best]:
                best = k
        labels[v - n0] = best
