"""Hazan & Urtasun's message passing against brute-force enumeration."""

import numpy as np
import pytest

from skstruct._core._graph import Adjacency, build_adjacency
from skstruct.inference._primal_dual import (
    BACK_AND_FORTH,
    Counting,
    pd_objective,
    pd_sweeps,
)
from tests.brute import brute_force
from tests.inference.kernel_cases import random_graph


def _sample(rng, kind, K):
    n, edges = random_graph(rng, kind)
    unary = rng.normal(size=(n, K))
    tables = rng.normal(size=(len(edges), K, K))
    return n, edges, unary, tables


def _counting(n, edges, which):
    deg = np.bincount(edges.ravel(), minlength=n).astype(float)
    c_edge = np.ones(len(edges))
    if which == "bethe":
        return 1.0 - deg, c_edge
    # convex: every counting number positive
    return np.full(n, 0.5), 0.5 * c_edge


class Problem:
    """One sample in the kernels' layout."""

    def __init__(self, n, edges, unary, tables, c_node, c_edge, eps):
        self.n, self.edges, self.unary, self.tables = n, edges, unary, tables
        self.node_offsets = np.array([0, n], np.int64)
        self.edge_offsets = np.array([0, len(edges)], np.int64)
        off, ae, nbr, side = build_adjacency(n, edges)
        self.adj = Adjacency(offsets=off, edge=ae, nbr=nbr, side=side)
        self.pw = np.arange(len(edges), dtype=np.int64)
        self.c_node, self.c_edge, self.eps = c_node, c_edge, eps
        self.lam = np.zeros((2 * len(edges), unary.shape[1]))
        self.chunks = np.array([0, 1], np.int64)
        self.max_degree = int(np.diff(self.adj.offsets).max()) if n else 0

    def sweep(self, k=1):
        adj = self.adj
        pd_sweeps(self.node_offsets, adj.offsets, adj.edge, adj.side, self.unary, self.tables,
                  self.pw, self.c_node, self.c_edge, self.eps, self.lam, k, BACK_AND_FORTH,
                  self.max_degree,
                  self.chunks)

    def objective(self, unary=None, tables=None):
        unary = self.unary if unary is None else unary
        tables = self.tables if tables is None else tables
        K = unary.shape[1]
        terms = np.zeros(1)
        nb = np.zeros((self.n, K))
        eb = np.zeros((len(self.edges), K, K))
        counting = Counting(node=self.c_node, edge=self.c_edge, eps=self.eps)
        pd_objective(self.node_offsets, self.edge_offsets, self.edges, self.adj, unary, tables,
                     self.pw, counting, self.lam, self.chunks, terms, nb, eb, True)
        return terms[0], nb, eb


@pytest.mark.parametrize("kind", ["index_chain", "chain", "tree", "forest"])
@pytest.mark.parametrize("seed", range(4))
@pytest.mark.parametrize("K", [2, 3])
def test_bethe_at_eps_1_is_the_log_partition_on_trees(kind, seed, K):
    rng = np.random.default_rng(seed)
    n, edges, unary, tables = _sample(rng, kind, K)
    pb = Problem(n, edges, unary, tables, *_counting(n, edges, "bethe"), 1.0)
    pb.sweep(30)
    value, nb, eb = pb.objective()
    _, logz, node, edge, _ = brute_force(unary, edges, tables)
    assert value == pytest.approx(logz, abs=1e-8)
    # leaves (c_v = 0) included: their belief is their edge's marginal
    np.testing.assert_allclose(nb, node, atol=1e-8)
    np.testing.assert_allclose(eb, edge, atol=1e-8)


@pytest.mark.parametrize("kind", ["index_chain", "chain", "tree"])
@pytest.mark.parametrize("seed", range(4))
def test_eps_0_is_the_map_score_on_trees(kind, seed):
    rng = np.random.default_rng(seed)
    n, edges, unary, tables = _sample(rng, kind, 3)
    pb = Problem(n, edges, unary, tables, *_counting(n, edges, "convex"), 0.0)
    best = brute_force(unary, edges, tables)[0]
    for _ in range(40):
        pb.sweep()
        # a dual bound at any messages
        assert pb.objective()[0] >= best - 1e-9
    assert pb.objective()[0] == pytest.approx(best, abs=1e-7)


@pytest.mark.parametrize("kind", ["cycle4", "complete", "random", "tree"])
@pytest.mark.parametrize("eps", [1.0, 0.1])
@pytest.mark.parametrize("seed", range(3))
def test_convex_counting_numbers_never_increase_the_objective(kind, eps, seed):
    rng = np.random.default_rng(seed)
    n, edges, unary, tables = _sample(rng, kind, 3)
    pb = Problem(n, edges, unary, tables, *_counting(n, edges, "convex"), eps)
    values = [pb.objective()[0]]
    for _ in range(25):
        pb.sweep()
        values.append(pb.objective()[0])
    assert np.all(np.diff(values) <= 1e-10), values
    # convex entropies upper-bound eps log Z scaled suitably; at least the
    # value must stay above the eps-free maximum, a lower bound of every soft-max
    assert values[-1] >= brute_force(unary, edges, tables)[0] - 1e-9


@pytest.mark.parametrize("which,eps", [("bethe", 1.0), ("convex", 0.3)])
def test_beliefs_are_the_partial_derivatives(which, eps):
    rng = np.random.default_rng(7)
    n, edges, unary, tables = _sample(rng, "random", 3)
    pb = Problem(n, edges, unary, tables, *_counting(n, edges, which), eps)
    pb.lam[:] = rng.normal(size=pb.lam.shape)  # any messages, not only converged ones
    _, nb, eb = pb.objective()
    h = 1e-6
    for v, k in [(0, 0), (1, 2), (n - 1, 1)]:
        up = unary.copy()
        up[v, k] += h
        dn = unary.copy()
        dn[v, k] -= h
        fd = (pb.objective(unary=up)[0] - pb.objective(unary=dn)[0]) / (2 * h)
        assert fd == pytest.approx(nb[v, k], abs=1e-6)
    for e, a, b in [(0, 0, 1), (len(edges) - 1, 2, 2)]:
        up = tables.copy()
        up[e, a, b] += h
        dn = tables.copy()
        dn[e, a, b] -= h
        fd = (pb.objective(tables=up)[0] - pb.objective(tables=dn)[0]) / (2 * h)
        assert fd == pytest.approx(eb[e, a, b], abs=1e-6)
