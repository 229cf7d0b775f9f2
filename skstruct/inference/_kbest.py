"""The ``k`` best labellings of chains and forests: k-best max-sum dynamic programming.

Max-sum on a forest keeps, for each node ``v`` and label ``x``, the best score of
``v``'s subtree given ``x_v = x``.  Its k-best generalisation keeps the ``k`` best
such scores, sorted, with backpointers: on a chain this is list Viterbi
(N. Seshadri and C.-E. W. Sundberg, "List Viterbi decoding algorithms with
applications", IEEE Trans. Communications 1994), on a tree the same recursion
with the children's lists merged into their parent's one at a time.  Two
operations build every list:

* the *message* of a child ``c`` to its parent ``p``, for each parent label,
  is the k best of ``L[c, x_c, j] + P(x_p, x_c)`` over the child's labels and
  ranks: a K-way merge of the child's sorted lists;
* *merging* a message into the parent's list is the k best of the pairwise
  sums of two sorted lists (a frontier walk over the grid of sums).

A component's roots, and every tree of a forest, are merged the same way into
one list of a virtual super-root with a single label, so a forest needs no
special case.  Only finite scores are stored: a ``-inf`` entry is a forbidden
labelling, and a list shorter than ``k`` means fewer feasible ones.

Backtracking a labelling replays the merges.  Children are merged leaves to
roots, i.e. in reverse breadth-first order, so walking the breadth-first order
forwards meets the children of every node in the reverse order of their merges
and can unwind them one at a time: ``cur[p]`` starts as the rank in ``p``'s
final list and each child's merge record turns it into the rank in the list
before that child was merged.

Ties are broken by fixed rules (smaller rank of the running list first, then
smaller child label), so the output is deterministic and a sample gets the
same result alone or in any batch.

Layout of the per-chunk tables (local node ``i = v - n0``): ``L`` (n, K, k)
scores and ``Ln`` (n, K) their counts; ``msg[i, x_p, b]`` packs the child
label and child rank of entry ``b`` of node ``i``'s message as ``x_c * k + j``;
``stage[i, x_p, r]`` packs the ranks ``a * k + b`` (running list, message) of
entry ``r`` of the parent's list right after ``i`` was merged.  Roots use
``x_p = 0`` (the super-root's one label).
"""

from typing import NamedTuple

import numpy as np

from .._core._jit import jit
from .._core._pool import for_chunks


@jit
def _message(L, Ln, c, P, fwd, xp, k, out, ptr, head):
    """The k best ``L[c, xc, j] + P(xp, xc)`` over ``(xc, j)`` for parent label ``xp``.

    ``P`` is the edge's table, read ``P[xc, xp]`` when ``fwd`` (the child is
    the edge's first node) and ``P[xp, xc]`` otherwise.  A K-way merge of the
    child's sorted lists by a linear scan of their heads rather than a
    binary heap: for label counts in the tens the heap's branches cost more
    than the scan's compares.  Ties go to the smaller
    child label.  Returns the number of entries written to ``out`` / ``ptr``.
    """
    K = Ln.shape[1]
    for xc in range(K):
        head[xc] = 0
    n = 0
    while n < k:
        best = -np.inf
        arg = -1
        for xc in range(K):
            h = head[xc]
            if h < Ln[c, xc]:
                x = L[c, xc, h] + (P[xc, xp] if fwd else P[xp, xc])
                # a -inf pair never wins: lists only take finite scores
                if x > best:
                    best = x
                    arg = xc
        if arg < 0:
            break
        out[n] = best
        ptr[n] = arg * k + head[arg]
        head[arg] += 1
        n += 1
    return n


@jit
def _merge(A, na, B, nb, k, out, ptr, pos):
    """The k best ``A[a] + B[b]`` of two lists sorted in decreasing order.

    ``pos[a]`` is the next ``b`` to pair with ``A[a]``; it never increases with
    ``a``, so the scan can stop at the first row still at ``b = 0``: the rows
    below it are dominated.  Returns the number of entries written.
    """
    for a in range(na):
        pos[a] = 0
    n = 0
    while n < k:
        best = -np.inf
        arg = -1
        for a in range(na):
            b = pos[a]
            if b < nb:
                x = A[a] + B[b]
                if x > best:
                    best = x
                    arg = a
            if b == 0:
                break
        if arg < 0:
            break
        out[n] = best
        ptr[n] = arg * k + pos[arg]
        pos[arg] += 1
        n += 1
    return n


class KBestWork(NamedTuple):
    """Scratch of :func:`kbest_one`: the first five indexed by local node."""

    L: np.ndarray          # (n, K, k) the k best scores below each node and label
    Ln: np.ndarray         # (n, K) int64 how many there are
    msg: np.ndarray        # (n, K, k) int64 the messages' back-pointers
    stage: np.ndarray      # (n, K, k) int64 the merges' back-pointers
    cur: np.ndarray        # (n,) int64 the rank each node is decoded at
    mval: np.ndarray       # (k,) a message's scores
    mptr: np.ndarray       # (k,) int64 and back-pointers
    tmp: np.ndarray        # (k,) a merge's scores
    tptr: np.ndarray       # (k,) int64 and back-pointers
    pos: np.ndarray        # (k,) int64
    head: np.ndarray       # (K,) int64
    zero: np.ndarray       # (K, 1) zeros: the super-root's table
    root: np.ndarray       # (k,) the super-root's scores


@jit
def kbest_one(n0, n1, edges, unary, pairwise, pw_index, forest, k, w, labels, scores,
              out_row):
    """The k best labellings of one forest sample (nodes ``n0:n1``).

    Writes the ``j``-th best labelling of the sample to ``labels[j, n0:n1]``
    and its score to ``scores[out_row, j]``; returns how many exist (at most
    ``k``).  ``forest`` is the batch's :class:`~skstruct._core._graph.Forest`, ``w``
    a :class:`KBestWork` with room for ``n1 - n0`` nodes.
    """
    K = unary.shape[1]
    order, parent, parent_edge = forest.order, forest.parent, forest.parent_edge
    L, Ln, msg, stage, cur = w.L, w.Ln, w.msg, w.stage, w.cur
    mval, mptr, tmp, tptr, pos = w.mval, w.mptr, w.tmp, w.tptr, w.pos
    head, zero, root = w.head, w.zero, w.root
    for v in range(n0, n1):
        i = v - n0
        for x in range(K):
            if unary[v, x] > -np.inf:
                L[i, x, 0] = unary[v, x]
                Ln[i, x] = 1
            else:
                Ln[i, x] = 0
    root[0] = 0.0
    n_root = 1
    for q in range(n1 - 1, n0 - 1, -1):
        v = order[q]
        i = v - n0
        p = parent[v]
        if p < 0:
            # the super-root: one label, a zero "pairwise" score
            m = _message(L, Ln, i, zero, True, 0, k, mval, mptr, head)
            for b in range(m):
                msg[i, 0, b] = mptr[b]
            n = _merge(root, n_root, mval, m, k, tmp, tptr, pos)
            for r in range(n):
                root[r] = tmp[r]
                stage[i, 0, r] = tptr[r]
            n_root = n
            continue
        e = parent_edge[v]
        P = pairwise[pw_index[e]]
        # the child is edges[e, 0] when the table reads (child, parent)
        fwd = edges[e, 0] == v
        j = p - n0
        for xp in range(K):
            na = Ln[j, xp]
            if na == 0:
                continue
            m = _message(L, Ln, i, P, fwd, xp, k, mval, mptr, head)
            for b in range(m):
                msg[i, xp, b] = mptr[b]
            n = _merge(L[j, xp], na, mval, m, k, tmp, tptr, pos)
            for r in range(n):
                L[j, xp, r] = tmp[r]
                stage[i, xp, r] = tptr[r]
            Ln[j, xp] = n
    for t in range(n_root):
        scores[out_row, t] = root[t]
        rank_root = t
        for q in range(n0, n1):
            v = order[q]
            i = v - n0
            p = parent[v]
            if p < 0:
                packed = stage[i, 0, rank_root]
                rank_root = packed // k
                entry = msg[i, 0, packed % k]
            else:
                j = p - n0
                xp = labels[t, p]
                packed = stage[i, xp, cur[j]]
                cur[j] = packed // k
                entry = msg[i, xp, packed % k]
            labels[t, v] = entry // k
            cur[i] = entry % k
    return n_root


@jit
def _kbest_batch_chunks(node_offsets, edges, unary, pairwise, pw_index,
                        forest, chunks, k, labels, scores, n_found, c0, c1):
    # the kernel of kbest_batch, over the chunks c0 <= c < c1
    K = unary.shape[1]
    for c in range(c0, c1):
        s0 = chunks[c]
        s1 = chunks[c + 1]
        n_max = 0
        for s in range(s0, s1):
            n_max = max(n_max, node_offsets[s + 1] - node_offsets[s])
        w = KBestWork(L=np.empty((n_max, K, k)), Ln=np.empty((n_max, K), np.int64),
                      msg=np.empty((n_max, K, k), np.int64),
                      stage=np.empty((n_max, K, k), np.int64), cur=np.empty(n_max, np.int64),
                      mval=np.empty(k), mptr=np.empty(k, np.int64), tmp=np.empty(k),
                      tptr=np.empty(k, np.int64), pos=np.empty(k, np.int64),
                      head=np.empty(K, np.int64), zero=np.zeros((K, 1)), root=np.empty(k))
        for s in range(s0, s1):
            n_found[s] = kbest_one(node_offsets[s], node_offsets[s + 1], edges, unary,
                                   pairwise, pw_index, forest, k, w, labels, scores, s)


def kbest_batch(node_offsets, edges, unary, pairwise, pw_index, forest, chunks, k,
                labels, scores, n_found):
    """The k best labellings of every forest sample of a packed batch.

    Parameters
    ----------
    node_offsets, edges, unary, pairwise, pw_index : the packed
        batch and its scores (see :mod:`skstruct._core._graph`).
    forest : Forest
        The batch's forest ordering (``GraphBatch.forest``).
    chunks : int64 (n_tasks + 1,)
        Sample ranges, one ``prange`` iteration each; the DP tables are
        allocated per chunk for its largest sample, so memory follows the
        chunk, not the batch.
    k : int
        Labellings wanted per sample.
    labels : int64 (k, N)
        Out: row ``j`` holds the ``j``-th best labelling of every sample
        (rows past a sample's count are left untouched).
    scores : float64 (n_samples, k)
        Out: their scores (entries past a sample's count left untouched).
    n_found : int64 (n_samples,)
        Out: how many labellings each sample has, at most ``k``.

    Runs on the threads in force (:func:`~skstruct._core._pool.for_chunks`).
    """
    def run(c0, c1):
        _kbest_batch_chunks(node_offsets, edges, unary, pairwise,
                            pw_index, forest, chunks, k, labels, scores,
                            n_found, c0, c1)

    for_chunks(run, chunks)
