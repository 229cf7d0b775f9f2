"""Exact max-sum and sum-product on forests (any sample whose graph has no cycle).

The kernels walk the breadth-first order of :func:`._graph.forest_order`:
leaves to roots to collect messages, roots to leaves to distribute them.
Everything is in log space, so ``-inf`` potentials are exact hard constraints.
Subtracting a message from a belief uses :func:`_sub`, which treats
``-inf - -inf`` as ``-inf``: where the child's message is ``-inf`` every
labelling through that parent label is infeasible anyway.
"""

from typing import NamedTuple

import numpy as np

from .._core._jit import jit
from .._core._pool import for_chunks
from ._modes import EDGES_EACH, EDGES_NONE


class TreeOut(NamedTuple):
    """What the tree kernels write, per node (global index) unless said."""

    labels: np.ndarray    # (N,) int64: the argmax labelling (max-sum)
    belief: np.ndarray    # (N, K): beliefs, then (max-)marginals after a downward pass
    up_msg: np.ndarray    # (N, K): the message each node sends its parent
    bp: np.ndarray        # (N, K) int64: backpointers (max-sum; (0, K) otherwise)
    edge_out: np.ndarray  # (C, E or M, K, K): edge marginals (see the edge modes)


class TreeWork(NamedTuple):
    """Per-thread scratch of :func:`tree_one`."""

    arg: np.ndarray       # (K,) int64
    scratch: np.ndarray   # (K,)
    down: np.ndarray      # (K,)
    excl: np.ndarray      # (K,)
    xi: np.ndarray        # (K, K)


@jit
def tree_work(K):
    """Fresh :class:`TreeWork` for ``K`` labels."""
    return TreeWork(arg=np.empty(K, np.int64), scratch=np.empty(K), down=np.empty(K),
                    excl=np.empty(K), xi=np.empty((K, K)))


@jit
def _sub(a, b):
    if b == -np.inf:
        return -np.inf
    return a - b


@jit
def _send(pairwise, pw_index, edges, e, v, bv, use_max, out, arg, scratch):
    """Message from ``v`` (belief ``bv``) over edge ``e``, as a function of the
    other end's label; ``arg`` gets the maximising label of ``v`` (max only)."""
    K = bv.shape[0]
    P = pairwise[pw_index[e]]
    fwd = edges[e, 0] == v
    for xw in range(K):
        m = -np.inf
        a = 0
        for xv in range(K):
            x = bv[xv] + (P[xv, xw] if fwd else P[xw, xv])
            scratch[xv] = x
            if x > m:
                m = x
                a = xv
        arg[xw] = a
        if use_max or m == -np.inf:
            out[xw] = m
        else:
            acc = 0.0
            for xv in range(K):
                acc += np.exp(scratch[xv] - m)
            out[xw] = m + np.log(acc)


@jit
def _reduce(x, use_max):
    m = -np.inf
    for k in range(x.shape[0]):
        if x[k] > m:
            m = x[k]
    if use_max or m == -np.inf:
        return m
    acc = 0.0
    for k in range(x.shape[0]):
        acc += np.exp(x[k] - m)
    return m + np.log(acc)


@jit
def _edge_marginal(pairwise, pw_index, edges, e, v, bv, bp_excl, xi):
    """Marginal of edge ``e`` between child ``v`` (upward belief ``bv``) and
    its parent (belief without ``v``'s message, ``bp_excl``), oriented as
    ``edges[e]``; normalised locally, which equals dividing by the
    component's partition function."""
    K = bv.shape[0]
    P = pairwise[pw_index[e]]
    fwd = edges[e, 0] == v
    m = -np.inf
    for a in range(K):
        for b in range(K):
            if fwd:
                x = bv[a] + bp_excl[b] + P[a, b]
            else:
                x = bp_excl[a] + bv[b] + P[a, b]
            xi[a, b] = x
            if x > m:
                m = x
    acc = 0.0
    for a in range(K):
        for b in range(K):
            xi[a, b] = np.exp(xi[a, b] - m)
            acc += xi[a, b]
    for a in range(K):
        for b in range(K):
            xi[a, b] /= acc


@jit
def tree_one(n0, n1, edges, unary, pairwise, pw_index, forest, use_max, full, edge_mode, out,
             c, work):
    """Exact inference on one forest sample (nodes ``n0:n1``); see :func:`tree_batch`.

    ``forest`` is the batch's :class:`~skstruct._core._graph.Forest`, ``out`` a
    :class:`TreeOut`, ``work`` a :class:`TreeWork`; ``c`` is the row of ``out.edge_out``
    summed into with ``EDGES_PER_TABLE``.  Returns the max score (``use_max``) or log
    partition.
    """
    K = unary.shape[1]
    order, parent, parent_edge = forest.order, forest.parent, forest.parent_edge
    labels, belief, up_msg, bp, edge_out = (out.labels, out.belief, out.up_msg, out.bp,
                                            out.edge_out)
    arg, scratch, down, excl, xi = work.arg, work.scratch, work.down, work.excl, work.xi
    for v in range(n0, n1):
        for k in range(K):
            belief[v, k] = unary[v, k]
    # leaves to roots
    for q in range(n1 - 1, n0 - 1, -1):
        v = order[q]
        p = parent[v]
        if p < 0:
            continue
        _send(pairwise, pw_index, edges, parent_edge[v], v, belief[v], use_max,
              up_msg[v], arg, scratch)
        for k in range(K):
            belief[p, k] += up_msg[v, k]
            if use_max:
                bp[v, k] = arg[k]
    total = 0.0
    for q in range(n0, n1):
        v = order[q]
        if parent[v] < 0:
            total += _reduce(belief[v], use_max)
    if use_max:
        for q in range(n0, n1):
            v = order[q]
            p = parent[v]
            if p < 0:
                best = 0
                for k in range(1, K):
                    if belief[v, k] > belief[v, best]:
                        best = k
                labels[v] = best
            else:
                labels[v] = bp[v, labels[p]]
    if not full:
        return total
    # roots to leaves: belief[p] is final when its children are reached
    for q in range(n0, n1):
        v = order[q]
        p = parent[v]
        if p < 0:
            continue
        e = parent_edge[v]
        for k in range(K):
            excl[k] = _sub(belief[p, k], up_msg[v, k])
        _send(pairwise, pw_index, edges, e, p, excl, use_max, down, arg, scratch)
        if not use_max and edge_mode != EDGES_NONE and total > -np.inf:
            _edge_marginal(pairwise, pw_index, edges, e, v, belief[v], excl, xi)
            # element loops: an array assigned into a slice would compile numba's
            # shape-mismatch message (its string formatting: seconds of a first fit)
            if edge_mode == EDGES_EACH:
                eo = edge_out[0, e]
                for a in range(K):
                    for b in range(K):
                        eo[a, b] = xi[a, b]
            else:
                eo = edge_out[c, pw_index[e]]
                for a in range(K):
                    for b in range(K):
                        eo[a, b] += xi[a, b]
        for k in range(K):
            belief[v, k] += down[k]
    if use_max:
        # a forest's max-marginal adds the best scores of the other trees
        cur = 0.0
        for q in range(n0, n1):
            v = order[q]
            if parent[v] < 0:
                cur = _reduce(belief[v], True)
            for k in range(K):
                if total == -np.inf:
                    belief[v, k] = -np.inf
                else:
                    belief[v, k] += total - cur
    else:
        for v in range(n0, n1):
            z = _reduce(belief[v], False)
            for k in range(K):
                belief[v, k] = 0.0 if total == -np.inf else np.exp(belief[v, k] - z)
    return total


@jit
def _tree_batch_chunks(node_offsets, edges, unary, pairwise, pw_index,
                       forest, active, chunks, use_max, full, edge_mode, out,
                       value_out, c0, c1):
    # the kernel of tree_batch, over the chunks c0 <= c < c1
    K = unary.shape[1]
    for c in range(c0, c1):
        work = tree_work(K)
        for s in range(chunks[c], chunks[c + 1]):
            if not active[s]:
                continue
            n0 = node_offsets[s]
            n1 = node_offsets[s + 1]
            value_out[s] = tree_one(n0, n1, edges, unary, pairwise, pw_index, forest, use_max,
                                    full, edge_mode, out, c, work)


def tree_batch(node_offsets, edges, unary, pairwise, pw_index, forest, active,
               chunks, use_max, full, edge_mode, out, value_out):
    """Exact inference on every active forest sample.

    Upward pass: ``out.belief[v]`` = unary plus messages from the children,
    ``out.up_msg[v]`` the message ``v`` sends its parent.  With ``use_max`` (``MAX_SUM``)
    this is max-sum: ``value_out[s]`` is the best score and ``out.labels`` the argmax
    (backpointers in ``out.bp``, (N, K) int64).  Otherwise (``SUM_PRODUCT``)
    ``value_out[s]`` is the log partition.  With ``full`` (``BOTH_WAYS``) a downward pass
    follows and ``out.belief`` ends as the max-marginals (max) or the node marginals (sum,
    normalised; all zero when the sample is infeasible).  In sum mode ``edge_mode``
    ``EDGES_EACH`` writes every edge marginal into ``out.edge_out[0, e]``,
    ``EDGES_PER_TABLE`` sums them into ``out.edge_out[chunk, pw_index[e]]`` (see
    ``forward_backward_batch``).  ``forest`` is the batch's
    :class:`~skstruct._core._graph.Forest`, ``out`` a :class:`TreeOut`.

    Runs on the threads in force (:func:`~skstruct._core._pool.for_chunks`).
    """
    def run(c0, c1):
        _tree_batch_chunks(node_offsets, edges, unary, pairwise,
                           pw_index, forest, active, chunks, use_max,
                           full, edge_mode, out, value_out, c0, c1)

    for_chunks(run, chunks)
