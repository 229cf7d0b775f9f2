"""The structure of a packed batch of graphs, shared by every batched oracle."""

from functools import cached_property

import numpy as np


class GraphBatch:
    """Structure of a batch of graphs packed into flat CSR-style arrays.

    Sample ``s`` owns nodes ``node_offsets[s]:node_offsets[s + 1]`` and edges
    ``edge_offsets[s]:edge_offsets[s + 1]`` of ``edges``, which holds *global*
    node indices.  Derived structure (adjacency, forest orderings, which
    samples are chains or forests) is computed once, on first use, by compiled
    kernels, and kept: estimators build one ``GraphBatch`` per data set and
    call the oracles on it many times.

    Build it with :meth:`from_chains` or :meth:`from_graphs`; the constructor
    trusts its arguments.

    Parameters
    ----------
    node_offsets : ndarray of int64, shape (n_samples + 1,)
    edges : ndarray of int64, shape (n_edges, 2)
    edge_offsets : ndarray of int64, shape (n_samples + 1,)
    """

    def __init__(self, node_offsets, edges, edge_offsets):
        self.node_offsets = np.ascontiguousarray(node_offsets, dtype=np.int64)
        self.edges = np.ascontiguousarray(edges, dtype=np.int64).reshape(-1, 2)
        self.edge_offsets = np.ascontiguousarray(edge_offsets, dtype=np.int64)

    @classmethod
    def from_chains(cls, lengths):
        """Batch of chains of the given lengths (edges ``(t, t + 1)``)."""
        lengths = _counts(lengths, "chain lengths")
        node_offsets = np.zeros(lengths.shape[0] + 1, np.int64)
        np.cumsum(lengths, out=node_offsets[1:])
        n_trans = np.maximum(lengths - 1, 0)
        edge_offsets = np.zeros_like(node_offsets)
        np.cumsum(n_trans, out=edge_offsets[1:])
        # global index of the first node of each transition
        # written in place, one temporary at a time (CoNLL-2000: 200k edges)
        edges = np.empty((int(edge_offsets[-1]), 2), np.int64)
        edges[:, 0] = np.repeat(node_offsets[:-1] - edge_offsets[:-1], n_trans)
        edges[:, 0] += np.arange(edges.shape[0], dtype=np.int64)
        np.add(edges[:, 0], 1, out=edges[:, 1])
        batch = cls(node_offsets, edges, edge_offsets)
        batch.__dict__["is_chain"] = np.ones(lengths.shape[0], bool)
        return batch

    @classmethod
    def from_graphs(cls, n_nodes, edges, *, validate=True):
        """Batch from per-sample node counts and *local* edge arrays.

        Every edge array is checked (integers, shape (n_edges_i, 2), in range
        for its sample, no self-loop), so that no kernel ever reads outside
        a sample; a ``ValueError`` names the sample.  ``validate=False`` is
        for callers that have checked them already (the sample packing).
        """
        if validate:
            from ._validation import check_edges

            n_nodes = _counts(n_nodes, "node counts")
            if len(edges) != n_nodes.shape[0]:
                raise ValueError(f"{n_nodes.shape[0]} node counts but {len(edges)} edge arrays")
            checked = []
            for s, e in enumerate(edges):
                try:
                    checked.append(check_edges(e, int(n_nodes[s])))
                except ValueError as exc:
                    raise ValueError(f"sample {s}: {exc}") from None
            edges = checked
        else:
            n_nodes = np.asarray(n_nodes, dtype=np.int64).reshape(-1)
        node_offsets = np.zeros(n_nodes.shape[0] + 1, np.int64)
        np.cumsum(n_nodes, out=node_offsets[1:])
        n_edges = np.array([len(e) for e in edges], dtype=np.int64)
        edge_offsets = np.zeros_like(node_offsets)
        np.cumsum(n_edges, out=edge_offsets[1:])
        if len(edges):
            flat = np.concatenate([np.asarray(e, np.int64).reshape(-1, 2) for e in edges])
        else:
            flat = np.zeros((0, 2), np.int64)
        flat += np.repeat(node_offsets[:-1], n_edges)[:, None]
        return cls(node_offsets, flat, edge_offsets)

    @cached_property
    def checked(self):
        """Validate the structure once (offsets consistent, every edge inside its
        own sample, no self-loop); ``True``, or a ``ValueError`` naming the
        sample.  The inference API checks every batch it is given, so a batch
        built by hand can never make a kernel read out of bounds."""
        no, eo, edges = self.node_offsets, self.edge_offsets, self.edges
        if no.ndim != 1 or eo.shape != no.shape or no.shape[0] < 1:
            raise ValueError("node_offsets and edge_offsets must be 1-D of the same length "
                             "n_samples + 1")
        if no[0] != 0 or eo[0] != 0 or np.any(np.diff(no) < 0) or np.any(np.diff(eo) < 0):
            raise ValueError("offsets must start at 0 and never decrease")
        if eo[-1] != edges.shape[0]:
            raise ValueError(f"edge_offsets end at {eo[-1]} but there are {edges.shape[0]} "
                             "edges")
        if edges.shape[0]:
            owner = np.repeat(np.arange(self.n_samples), np.diff(eo))
            lo = no[owner][:, None]
            hi = no[owner + 1][:, None]
            bad = np.flatnonzero(((edges < lo) | (edges >= hi)).any(axis=1)
                                 | (edges[:, 0] == edges[:, 1]))
            if bad.size:
                e = int(bad[0])
                s = int(owner[e])
                what = "is a self-loop" if edges[e, 0] == edges[e, 1] else \
                    f"leaves the sample's nodes {no[s]}..{no[s + 1] - 1}"
                raise ValueError(f"sample {s}: edge {edges[e].tolist()} (global node numbers) "
                                 f"{what}")
        return True

    @property
    def n_samples(self):
        return self.node_offsets.shape[0] - 1

    @property
    def n_nodes(self):
        return int(self.node_offsets[-1])

    @property
    def n_edges(self):
        return int(self.edge_offsets[-1])

    @property
    def lengths(self):
        """Number of nodes of each sample."""
        return np.diff(self.node_offsets)

    @cached_property
    def adjacency(self):
        """The :class:`~skstruct._core._graph.Adjacency` named tuple ``(offsets, edge, nbr,
        side)``, see ``_graph.build_adjacency``."""
        from ._graph import Adjacency, build_adjacency

        offsets, edge, nbr, side = build_adjacency(self.n_nodes, self.edges)
        return Adjacency(offsets=offsets, edge=edge, nbr=nbr, side=side)

    @cached_property
    def forest(self):
        """The :class:`~skstruct._core._graph.Forest` named tuple ``(order, parent,
        parent_edge)``, see ``_graph.forest_order``."""
        self._forest_order()
        return self.__dict__["forest"]

    def _forest_order(self):
        from ._graph import Forest, forest_order

        adj = self.adjacency
        order, parent, parent_edge, is_forest = forest_order(self.node_offsets, adj.offsets,
                                                             adj.edge, adj.nbr)
        self.__dict__["forest"] = Forest(order=order, parent=parent, parent_edge=parent_edge)
        self.__dict__.setdefault("is_forest", is_forest)

    @cached_property
    def is_forest(self):
        """Whether each sample's graph has no cycle."""
        if "is_chain" in self.__dict__ and self.__dict__["is_chain"].all():
            return np.ones(self.n_samples, bool)
        self._forest_order()
        return self.__dict__["is_forest"]

    @cached_property
    def is_chain(self):
        """Whether each sample's edges are exactly ``(i, i + 1)`` in node order."""
        from ._graph import chain_flags

        return chain_flags(self.node_offsets, self.edge_offsets, self.edges)

    def take(self, idx):
        """The batch of samples ``idx`` (any order, repeats allowed).

        Returns
        -------
        batch : GraphBatch
        node_rows, edge_rows : ndarray of int64
            The node and edge of ``self`` each node and edge of ``batch`` is.
        """
        idx = np.asarray(idx, dtype=np.int64).reshape(-1)
        n_len = self.lengths[idx]
        e_len = np.diff(self.edge_offsets)[idx]
        n_off = np.zeros(idx.size + 1, np.int64)
        np.cumsum(n_len, out=n_off[1:])
        e_off = np.zeros(idx.size + 1, np.int64)
        np.cumsum(e_len, out=e_off[1:])
        node_rows = _ranges(self.node_offsets[idx], n_len, n_off)
        edge_rows = _ranges(self.edge_offsets[idx], e_len, e_off)
        # global node numbers of self -> of the new batch
        shift = np.repeat(n_off[:-1] - self.node_offsets[idx], e_len)
        batch = GraphBatch(n_off, self.edges[edge_rows] + shift[:, None], e_off)
        for name in ("is_chain", "is_forest"):
            if name in self.__dict__:
                batch.__dict__[name] = self.__dict__[name][idx]
        return batch, node_rows, edge_rows

    def chunks(self, n_chunks):
        """Sample boundaries splitting the batch into ``n_chunks`` runs of about
        equal node counts (what a parallel kernel hands to each task)."""
        n_chunks = max(1, min(int(n_chunks), self.n_samples))
        targets = np.linspace(0, self.n_nodes, n_chunks + 1)
        cut = np.searchsorted(self.node_offsets, targets[1:-1], side="left")
        bounds = np.unique(np.concatenate([[0], cut, [self.n_samples]]))
        return bounds.astype(np.int64)

    def __repr__(self):
        return (f"GraphBatch(n_samples={self.n_samples}, n_nodes={self.n_nodes}, "
                f"n_edges={self.n_edges})")


def _counts(counts, name):
    """Per-sample counts as int64, refusing what is not a non-negative integer
    (a float such as 2.7 would otherwise be truncated without a word)."""
    c = np.asarray(counts)
    if c.dtype == object or c.dtype.kind not in "iuf":
        raise ValueError(f"{name} must be integers >= 0, got dtype {c.dtype}")
    c = c.reshape(-1)
    bad = ~np.isfinite(c) | (c < 0) | (np.mod(c, 1) != 0) if c.dtype.kind == "f" else c < 0
    if bad.any():
        s = int(np.flatnonzero(bad)[0])
        raise ValueError(f"{name} must be integers >= 0; sample {s} has {c[s].item()!r}")
    return c.astype(np.int64)


def _ranges(starts, counts, offsets):
    """Concatenated ``arange(starts[i], starts[i] + counts[i])``; ``offsets`` are the
    cumulative counts (length ``len(counts) + 1``)."""
    return np.repeat(starts - offsets[:-1], counts) + np.arange(offsets[-1], dtype=np.int64)


def segment_sum(a, offsets):
    """Sums of the rows of ``a`` over ``offsets[s]:offsets[s + 1]`` (empty runs give 0).

    Each run is summed on its own (``np.add.reduceat`` over the non-empty
    runs): differences of one running sum would let an infinity, or a large
    value's rounding, spill into every later run.
    """
    a = np.asarray(a, np.float64)
    offsets = np.asarray(offsets, np.int64)
    out = np.zeros((offsets.shape[0] - 1,) + a.shape[1:])
    full = np.flatnonzero(offsets[1:] > offsets[:-1])
    if full.size:
        out[full] = np.add.reduceat(a[:offsets[-1]], offsets[full], axis=0)
    return out
