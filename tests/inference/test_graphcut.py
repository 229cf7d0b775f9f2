"""Graph-cut MAP against brute force and TRW-S."""

import numpy as np
import pytest

from skstruct._core import GraphBatch
from skstruct.datasets import grid_edges
from skstruct.inference import map_batch, map_inference
from tests.brute import brute_force, score_of


def supermodular_tables(rng, n_tables, K):
    """Random tables supermodular in the label order: a concave function of the
    label difference plus arbitrary terms of each label alone."""
    a = np.arange(K)[:, None]
    b = np.arange(K)[None, :]
    out = []
    for _ in range(n_tables):
        power = rng.choice([1, 2])
        out.append(-rng.random() * np.abs(a - b) ** power + rng.normal(size=(K, 1))
                   + rng.normal(size=(1, K)))
    return np.array(out).reshape(n_tables, K, K)


def random_graph(rng, n, density=0.5):
    pairs = [(i, j) if rng.random() < 0.5 else (j, i)
             for i in range(n) for j in range(i + 1, n) if rng.random() < density]
    return np.array(pairs, dtype=np.int64).reshape(-1, 2)


@pytest.mark.parametrize("seed", range(6))
def test_exact_against_brute_force_on_loopy_graphs(seed):
    rng = np.random.default_rng(seed)
    for _ in range(40):
        n = int(rng.integers(1, 7))
        K = int(rng.integers(2, 5))
        edges = random_graph(rng, n)
        unary = rng.normal(size=(n, K))
        if rng.random() < 0.3:
            unary[rng.integers(n), rng.integers(K)] = -np.inf   # a forbidden label
        pairwise = supermodular_tables(rng, len(edges), K)
        labels, bound = map_inference(unary, edges, pairwise, method="graphcut",
                                      return_bound=True)
        best = brute_force(unary, edges, pairwise)[0]
        assert score_of(unary, edges, pairwise, labels) == pytest.approx(best, abs=1e-9)
        assert bound == pytest.approx(best, abs=1e-9)


def test_loss_augmented_batch_with_a_mask_and_tied_tables():
    rng = np.random.default_rng(7)
    sizes = [4, 1, 5, 3]
    edges = [random_graph(rng, n, 0.7) for n in sizes]
    batch = GraphBatch.from_graphs(sizes, edges)
    K = 3
    unary = rng.normal(size=(batch.n_nodes, K))
    tables = supermodular_tables(rng, 2, K)
    pw_index = rng.integers(0, 2, batch.n_edges)
    y = rng.integers(0, K, batch.n_nodes)
    w = np.array([1.0, 2.0, 0.5])
    labels, bound = map_batch(batch, unary, tables, pw_index, method="graphcut", y=y,
                              loss_weights=w, return_bound=True)
    ref = map_batch(batch, unary, tables, pw_index, method="exact", y=y, loss_weights=w,
                    return_bound=True)[1]
    np.testing.assert_allclose(bound, ref, atol=1e-9)
    aug = unary + w[y][:, None] * (np.arange(K)[None, :] != y[:, None])
    for s in range(batch.n_samples):
        n0, n1 = batch.node_offsets[s], batch.node_offsets[s + 1]
        e0, e1 = batch.edge_offsets[s], batch.edge_offsets[s + 1]
        local = batch.edges[e0:e1] - n0
        got = score_of(aug[n0:n1], local, tables[pw_index[e0:e1]], labels[n0:n1])
        assert got == pytest.approx(ref[s], abs=1e-9)


def test_binary_grid_matches_or_beats_trws_within_its_bound():
    rng = np.random.default_rng(0)
    side = 40
    edges = grid_edges(side, side)
    unary = np.zeros((side * side, 2))
    unary[:, 1] = rng.normal(size=side * side)
    potts = np.array([[0.8, 0.0], [0.0, 0.8]])
    labels, bound = map_inference(unary, edges, potts, method="graphcut", return_bound=True)
    t_labels, t_bound = map_inference(unary, edges, potts, method="trws", max_iter=200,
                                      tol=0, return_bound=True)
    ours = score_of(unary, edges, potts, labels)
    theirs = score_of(unary, edges, potts, t_labels)
    assert ours >= theirs - 1e-9          # exact: never worse than TRW-S's labelling
    assert ours <= t_bound + 1e-9         # and never above TRW-S's upper bound
    assert bound == pytest.approx(ours)


@pytest.mark.parametrize("table, match", [
    (np.array([[1.0, 0.0, 0.0], [0.0, 1.0, 0.0], [0.0, 0.0, 1.0]]), "not supermodular"),
    (np.array([[0.0, 1.0], [1.0, 0.0]]), r"P\[0, 0\] \+ P\[1, 1\]"),
    (np.array([[0.0, -np.inf], [-np.inf, 0.0]]), "non-finite"),
])
def test_tables_it_cannot_cut_are_refused_naming_the_edge(table, match):
    K = table.shape[0]
    edges = np.array([[0, 1], [1, 2]])
    pairwise = np.stack([supermodular_tables(np.random.default_rng(0), 1, K)[0], table])
    with pytest.raises(ValueError, match=match) as info:
        map_inference(np.zeros((3, K)), edges, pairwise, method="graphcut")
    assert "edge 1 (sample 0)" in str(info.value)


@pytest.mark.parametrize("seed", range(4))
def test_boykov_kolmogorov_flow_value_matches_scipy(seed):
    """The maximum-flow kernel alone, on random dense and sparse directed graphs
    with integer capacities, against scipy's exact (integer) maximum flow."""
    import scipy.sparse as sp
    from scipy.sparse.csgraph import maximum_flow

    from skstruct.inference._graphcut import _group_by_tail, bk_max_flow

    rng = np.random.default_rng(seed)
    for _ in range(30):
        n = int(rng.integers(1, 12))
        density = rng.choice([0.2, 0.6])
        arcs = [(i, j) for i in range(n) for j in range(n)
                if i != j and rng.random() < density]
        caps = rng.integers(0, 6, len(arcs)).astype(float)
        src_cap = rng.integers(0, 6, n) * (rng.random(n) < 0.5)
        snk_cap = rng.integers(0, 6, n) * (rng.random(n) < 0.5)
        m = 2 * len(arcs)
        tail = np.empty(m, np.int64)
        head = np.empty(m, np.int64)
        cap = np.zeros(m)
        for k, (i, j) in enumerate(arcs):
            tail[2 * k], head[2 * k], cap[2 * k] = i, j, caps[k]
            tail[2 * k + 1], head[2 * k + 1] = j, i
        offsets = np.empty(n + 1, np.int64)
        order = np.empty(m, np.int64)
        scratch = [np.empty(n, np.int64) for _ in range(3)]
        _group_by_tail(n, tail, m, offsets, order, scratch[0])
        tr = (src_cap - snk_cap).astype(float)
        tree = np.empty(n, np.int8)
        flow = bk_max_flow(n, tr, tail, head, cap, offsets, order, 1e-12, tree, *scratch,
                           np.empty(n + 1, np.int64), np.empty(n, np.bool_),
                           np.empty(n, np.int64))
        # the part of the terminal capacities cancelled before any search
        flow += np.minimum(src_cap, snk_cap).sum()
        # scipy: source n, sink n + 1
        rows = [i for i, _ in arcs] + [n] * n + list(range(n))
        cols = [j for _, j in arcs] + list(range(n)) + [n + 1] * n
        vals = np.concatenate([caps, src_cap, snk_cap]).astype(np.int32)
        M = sp.csr_matrix((vals, (rows, cols)), shape=(n + 2, n + 2))
        ref = maximum_flow(M, n, n + 1).flow_value
        assert flow == pytest.approx(ref)
        # the source tree is the source side of a minimum cut: its capacity is the flow
        side = np.append(tree == 1, [True, False])
        cut = sum(c for (i, j), c in zip(arcs, caps) if side[i] and not side[j])
        cut += src_cap[~side[:n]].sum() + snk_cap[side[:n]].sum()
        assert cut == pytest.approx(ref)
