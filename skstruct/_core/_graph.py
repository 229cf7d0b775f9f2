"""Structure kernels: adjacency lists and forest orderings of a packed batch.

Conventions shared by every graph kernel
----------------------------------------
A batch of ``S`` graphs with ``N`` nodes and ``E`` edges in total is given by

* ``node_offsets`` int64 ``(S + 1,)``: sample ``s`` owns nodes
  ``node_offsets[s]:node_offsets[s + 1]``;
* ``edges`` int64 ``(E, 2)`` of *global* node indices; the edges of sample
  ``s`` are ``edge_offsets[s]:edge_offsets[s + 1]`` and stay inside its nodes;
* ``unary`` float64 ``(N, K)``: score of each label at each node;
* ``pairwise`` float64 ``(M, K, K)`` and ``pw_index`` int64 ``(E,)``: edge
  ``e`` scores ``pairwise[pw_index[e], a, b]`` for label ``a`` at
  ``edges[e, 0]`` and label ``b`` at ``edges[e, 1]``.

Scores are maximised (energy = -score).  Messages live in a ``(2 E, K)``
array: row ``2 e`` is the message from ``edges[e, 0]`` to ``edges[e, 1]``
(a function of the label of ``edges[e, 1]``), row ``2 e + 1`` the message
in the other direction.
"""

from typing import NamedTuple

import numpy as np

from ._jit import jit


class Adjacency(NamedTuple):
    """CSR adjacency of a batch (see :func:`build_adjacency`)."""

    offsets: np.ndarray   # (N + 1,) the neighbours of node v: offsets[v]:offsets[v + 1]
    edge: np.ndarray      # (2 E,) the edge each neighbour is reached through
    nbr: np.ndarray       # (2 E,) the neighbour
    side: np.ndarray      # (2 E,) 0 when v is edges[e, 0], 1 when it is edges[e, 1]

    @classmethod
    def dummy(cls, n_nodes):
        """A stand-in for kernels that walk no neighbour list: ``n_nodes`` nodes without
        neighbours (one-entry neighbour arrays, so every call compiles to the same types)."""
        z = np.zeros(1, np.int64)
        return cls(offsets=np.zeros(n_nodes + 1, np.int64), edge=z, nbr=z.copy(),
                   side=z.copy())


class Forest(NamedTuple):
    """Breadth-first forest order of a batch (see :func:`forest_order`; whether each
    sample is a forest is ``GraphBatch.is_forest``).

    Bundles the kernels read are flat (named tuples of arrays and numbers, none nested):
    a parallel kernel cannot take a nested one into its parallel loop.
    """

    order: np.ndarray        # (N,) every node after its parent, inside its sample's range
    parent: np.ndarray       # (N,) parent node (-1: a root)
    parent_edge: np.ndarray  # (N,) the edge to the parent (-1: a root)

    @classmethod
    def dummy(cls):
        """A stand-in for kernels that read no forest (no tree sample): one-entry arrays,
        so that every call compiles to the same types."""
        z = np.zeros(1, np.int64)
        return cls(order=z, parent=z.copy(), parent_edge=z.copy())


@jit
def build_adjacency(n_nodes, edges):
    """CSR adjacency of a graph given by its edge list.

    Returns ``(adj_offsets (n_nodes + 1,), adj_edge (2E,), adj_nbr (2E,),
    adj_side (2E,))``: the neighbours of node ``v`` are
    ``adj_nbr[adj_offsets[v]:adj_offsets[v + 1]]``, reached through edge
    ``adj_edge[...]``; ``adj_side`` is 0 when ``v`` is ``edges[e, 0]`` and 1
    when it is ``edges[e, 1]``.  Neighbours are listed in edge order.
    """
    n_edges = edges.shape[0]
    deg = np.zeros(n_nodes + 1, np.int64)
    for e in range(n_edges):
        deg[edges[e, 0] + 1] += 1
        deg[edges[e, 1] + 1] += 1
    adj_offsets = np.cumsum(deg)
    fill = adj_offsets[:-1].copy()
    adj_edge = np.empty(2 * n_edges, np.int64)
    adj_nbr = np.empty(2 * n_edges, np.int64)
    adj_side = np.empty(2 * n_edges, np.int64)
    for e in range(n_edges):
        u = edges[e, 0]
        v = edges[e, 1]
        p = fill[u]
        adj_edge[p] = e
        adj_nbr[p] = v
        adj_side[p] = 0
        fill[u] += 1
        p = fill[v]
        adj_edge[p] = e
        adj_nbr[p] = u
        adj_side[p] = 1
        fill[v] += 1
    return adj_offsets, adj_edge, adj_nbr, adj_side


@jit
def forest_order(node_offsets, adj_offsets, adj_edge, adj_nbr):
    """Breadth-first order of every sample's graph, and whether it is a forest.

    Returns ``(order (N,), parent (N,), parent_edge (N,), is_forest (S,))``.
    ``order`` lists the nodes of each sample (inside its node range) so that
    every node comes after its parent; roots have ``parent == -1``.  A sample
    whose graph has a cycle (or a repeated edge) gets ``is_forest = False``;
    its ordering is then still a valid BFS spanning forest.
    """
    n_samples = node_offsets.shape[0] - 1
    n_nodes = adj_offsets.shape[0] - 1
    order = np.empty(n_nodes, np.int64)
    parent = np.full(n_nodes, -1, np.int64)
    parent_edge = np.full(n_nodes, -1, np.int64)
    seen = np.zeros(n_nodes, np.bool_)
    is_forest = np.ones(n_samples, np.bool_)
    for s in range(n_samples):
        head = node_offsets[s]
        tail = head
        for r in range(node_offsets[s], node_offsets[s + 1]):
            if seen[r]:
                continue
            seen[r] = True
            order[tail] = r
            tail += 1
            while head < tail:
                v = order[head]
                head += 1
                for p in range(adj_offsets[v], adj_offsets[v + 1]):
                    e = adj_edge[p]
                    if e == parent_edge[v]:
                        continue
                    w = adj_nbr[p]
                    if seen[w]:
                        is_forest[s] = False
                        continue
                    seen[w] = True
                    parent[w] = v
                    parent_edge[w] = e
                    order[tail] = w
                    tail += 1
    return order, parent, parent_edge, is_forest


@jit
def chain_flags(node_offsets, edge_offsets, edges):
    """Whether each sample's edge list is exactly ``(i, i + 1)`` in node order."""
    n_samples = node_offsets.shape[0] - 1
    out = np.zeros(n_samples, np.bool_)
    for s in range(n_samples):
        n0 = node_offsets[s]
        n = node_offsets[s + 1] - n0
        e0 = edge_offsets[s]
        m = edge_offsets[s + 1] - e0
        if m != max(n - 1, 0):
            continue
        ok = True
        for t in range(m):
            if edges[e0 + t, 0] != n0 + t or edges[e0 + t, 1] != n0 + t + 1:
                ok = False
                break
        out[s] = ok
    return out
