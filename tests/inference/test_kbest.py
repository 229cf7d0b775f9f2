"""k-best labellings of chains and forests against brute-force enumeration."""

import numpy as np
import pytest

from skstruct.inference import (
    GraphBatch,
    KBest,
    KBestBatch,
    chain_edges,
    kbest,
    map_inference,
)
from tests.brute import all_scores, pairwise_stack

KINDS = ("chain", "star", "tree", "forest")


def random_graph(rng, kind, n):
    """Edges of a random ``kind`` graph on ``n`` nodes, shuffled and randomly oriented."""
    if kind == "chain":
        return chain_edges(n)
    if kind == "star":
        edges = [(0, i) for i in range(1, n)]
    else:
        edges = [(int(rng.integers(0, i)), i) for i in range(1, n)]
        if kind == "forest":
            edges = [e for e in edges if rng.random() < 0.6]
    edges = np.array(edges, dtype=np.int64).reshape(-1, 2)
    flip = rng.random(len(edges)) < 0.5
    edges[flip] = edges[flip][:, ::-1]
    perm = rng.permutation(n)
    return perm[edges][rng.permutation(len(edges))]


def random_model(rng, kind, n=None, K=None, neginf=0.0, per_edge=None):
    n = int(rng.integers(1, 7)) if n is None else n
    K = int(rng.integers(1, 5)) if K is None else K
    edges = random_graph(rng, kind, n)
    unary = rng.normal(size=(n, K))
    if per_edge is None:
        per_edge = bool(rng.random() < 0.5)
    pairwise = rng.normal(size=(len(edges), K, K) if per_edge else (K, K))
    if neginf:
        unary[rng.random(unary.shape) < neginf] = -np.inf
        pairwise[rng.random(pairwise.shape) < neginf] = -np.inf
    return unary, edges, pairwise


def check_against_brute(unary, edges, pairwise, k, result):
    """``result`` holds the k best feasible labellings (ties aside) with their scores."""
    labs, scores = all_scores(unary, edges, pairwise)
    feasible = np.isfinite(scores)
    top = np.sort(scores[feasible])[::-1][:k]
    r = top.shape[0]
    assert isinstance(result, KBest)
    assert result.labels.shape == (r, unary.shape[0])
    assert result.scores.shape == (r,)
    assert result.labels.dtype == np.int64
    np.testing.assert_allclose(result.scores, top, rtol=1e-10, atol=1e-10)
    # every row is a distinct feasible labelling whose true score is the one reported
    assert len({tuple(x) for x in result.labels}) == r
    index = {tuple(x): i for i, x in enumerate(labs)}
    true = np.array([scores[index[tuple(x)]] for x in result.labels]).reshape(-1)
    np.testing.assert_allclose(true, result.scores, rtol=1e-10, atol=1e-10)
    assert np.all(np.diff(result.scores) <= 0)


@pytest.mark.parametrize("kind", KINDS)
@pytest.mark.parametrize("neginf", [0.0, 0.2])
def test_matches_brute_force(kind, neginf):
    rng = np.random.default_rng(10 * KINDS.index(kind) + int(10 * neginf))
    for _ in range(40):
        unary, edges, pairwise = random_model(rng, kind, neginf=neginf)
        k = int(rng.integers(1, 12))
        check_against_brute(unary, edges, pairwise, k, kbest(unary, edges, pairwise, k))


@pytest.mark.parametrize("kind", KINDS)
def test_k_beyond_the_number_of_labellings(kind):
    rng = np.random.default_rng(7)
    for _ in range(10):
        unary, edges, pairwise = random_model(rng, kind, n=int(rng.integers(1, 5)),
                                              K=int(rng.integers(1, 4)))
        n, K = unary.shape
        result = kbest(unary, edges, pairwise, K ** n + 5)
        assert result.scores.shape == (K ** n,)
        check_against_brute(unary, edges, pairwise, K ** n + 5, result)
    # a k far beyond anything enumerable allocates nothing of its size
    unary, edges, pairwise = random_model(rng, "tree", n=3, K=2)
    assert kbest(unary, edges, pairwise, 10 ** 12).scores.shape == (8,)


def test_forbidden_labellings_never_returned():
    rng = np.random.default_rng(3)
    unary = rng.normal(size=(5, 3))
    pairwise = rng.normal(size=(3, 3))
    pairwise[0, 1] = pairwise[2, 2] = -np.inf
    unary[2, 0] = -np.inf
    result = kbest(unary, chain_edges(5), pairwise, 500)
    x = result.labels
    assert np.isfinite(result.scores).all()
    assert not np.any((x[:, :-1] == 0) & (x[:, 1:] == 1))
    assert not np.any((x[:, :-1] == 2) & (x[:, 1:] == 2))
    assert not np.any(x[:, 2] == 0)
    check_against_brute(unary, chain_edges(5), pairwise, 500, result)


def test_infeasible_and_empty_graphs():
    differ = np.array([[-np.inf, 0.0], [0.0, -np.inf]])
    same = np.array([[0.0, -np.inf], [-np.inf, 0.0]])
    star = np.array([[0, 1], [0, 2], [1, 3]])
    # nodes 2 and 3 must equal node 0 and node 1, which must differ: 2 labellings
    pw = np.stack([differ, same, same])
    result = kbest(np.zeros((4, 2)), star, pw, 5)
    assert result.scores.tolist() == [0.0, 0.0]
    assert sorted(map(tuple, result.labels)) == [(0, 1, 0, 1), (1, 0, 1, 0)]
    unary = np.zeros((4, 2))
    unary[2] = [-np.inf, 0.0]
    unary[3] = [-np.inf, 0.0]
    result = kbest(unary, star, pw, 5)
    assert result.labels.shape == (0, 4) and result.scores.shape == (0,)
    result = kbest(np.zeros((0, 3)), np.zeros((0, 2)), np.zeros((3, 3)), 4)
    assert result.labels.shape == (1, 0) and result.scores.tolist() == [0.0]


@pytest.mark.parametrize("kind", KINDS)
def test_k1_is_map(kind):
    rng = np.random.default_rng(11)
    for _ in range(20):
        unary, edges, pairwise = random_model(rng, kind, neginf=0.1)
        best = kbest(unary, edges, pairwise, 1)
        if best.scores.shape[0]:
            labels, bound = map_inference(unary, edges, pairwise, return_bound=True)
            np.testing.assert_array_equal(best.labels[0], labels)
            assert np.isclose(best.scores[0], bound)


def test_ties_are_deterministic():
    # every labelling scores 0: all 3 ** 4 of them, each once, the same way twice
    edges = np.array([[0, 1], [1, 2], [1, 3]])
    a = kbest(np.zeros((4, 3)), edges, np.zeros((3, 3)), 100)
    b = kbest(np.zeros((4, 3)), edges, np.zeros((3, 3)), 100)
    assert a.labels.shape == (81, 4) and np.all(a.scores == 0)
    assert len({tuple(x) for x in a.labels}) == 81
    np.testing.assert_array_equal(a.labels, b.labels)


def test_batch_agrees_with_one_by_one():
    rng = np.random.default_rng(5)
    models = [random_model(rng, KINDS[i % 4], K=3, neginf=0.1, per_edge=True)
              for i in range(24)]
    models.append((np.zeros((0, 3)), np.zeros((0, 2), np.int64), np.zeros((0, 3, 3))))
    # an infeasible sample in the middle of the batch
    u, e, p = random_model(rng, "chain", n=3, K=3, per_edge=True)
    u[1] = -np.inf
    models.insert(10, (u, e, p))
    batch = GraphBatch.from_graphs([m[0].shape[0] for m in models], [m[1] for m in models])
    unary = np.vstack([m[0] for m in models])
    pairwise = np.concatenate([pairwise_stack(m[2], len(m[1])) for m in models])
    # the same tables through pw_index, in reverse order
    tables = pairwise[::-1].copy()
    pw_index = np.arange(len(pairwise))[::-1].copy()
    for k in (1, 4, 30):
        result = kbest(unary, batch, tables, k, pw_index=pw_index, n_jobs=2)
        assert isinstance(result, KBestBatch) and len(result) == len(models)
        assert result.labels.shape == (result.scores.shape[1], batch.n_nodes)
        assert result.scores.shape[1] == result.n_found.max() <= k
        assert result.n_found[10] == 0
        for s, (u, e, p) in enumerate(models):
            alone = kbest(u, e, p, k)
            got = result[s]
            np.testing.assert_array_equal(got.labels, alone.labels)
            np.testing.assert_array_equal(got.scores, alone.scores)
            r = result.n_found[s]
            n0, n1 = batch.node_offsets[s], batch.node_offsets[s + 1]
            assert np.all(result.labels[r:, n0:n1] == -1)
            assert np.all(result.scores[s, r:] == -np.inf)
        assert [x.scores.tolist() for x in result] == [result[s].scores.tolist()
                                                       for s in range(len(models))]
    assert result[-1].labels.shape == (1, 0)
    with pytest.raises(IndexError):
        result[len(models)]


def test_chain_batch():
    rng = np.random.default_rng(9)
    lengths = [4, 1, 6, 3]
    batch = GraphBatch.from_chains(lengths)
    unary = rng.normal(size=(batch.n_nodes, 4))
    pairwise = rng.normal(size=(4, 4))
    result = kbest(unary, batch, pairwise, 6)
    for s, n in enumerate(lengths):
        n0 = batch.node_offsets[s]
        u = unary[n0:n0 + n]
        check_against_brute(u, chain_edges(n), pairwise, 6, result[s])


def test_errors():
    unary = np.zeros((3, 2))
    triangle = np.array([[0, 1], [1, 2], [2, 0]])
    with pytest.raises(ValueError, match="forests only; the graph has a cycle"):
        kbest(unary, triangle, np.zeros((2, 2)), 2)
    batch = GraphBatch.from_graphs([2, 3], [[[0, 1]], triangle])
    with pytest.raises(ValueError, match="sample 1 has a cycle"):
        kbest(np.zeros((5, 2)), batch, np.zeros((2, 2)), 2)
    edges = chain_edges(3)
    for k in (0, -1, 1.5, True, "2", None):
        with pytest.raises(ValueError, match="k must be a positive integer"):
            kbest(unary, edges, np.zeros((2, 2)), k)
    with pytest.raises(ValueError, match="unary must be 2-D"):
        kbest(np.zeros(3), edges, np.zeros((2, 2)), 2)
    with pytest.raises(ValueError, match=r"pairwise must have shape \(2, 2\)"):
        kbest(unary, edges, np.zeros((3, 3)), 2)
    with pytest.raises(ValueError, match="pairwise holds 3 matrices for 2 edges"):
        kbest(unary, edges, np.zeros((3, 2, 2)), 2)
    with pytest.raises(ValueError, match="pw_index has 1 entries for 2 edges"):
        kbest(unary, edges, np.zeros((3, 2, 2)), 2, pw_index=[0])
    with pytest.raises(ValueError, match="edges must have shape"):
        kbest(unary, np.zeros((2, 3), np.int64), np.zeros((2, 2)), 2)
    with pytest.raises(ValueError, match="out of range"):
        kbest(unary, [[0, 3]], np.zeros((2, 2)), 2)
    with pytest.raises(ValueError, match="unary has 4 rows for a batch of 5 nodes"):
        kbest(np.zeros((4, 2)), batch, np.zeros((2, 2)), 2)
    with pytest.raises(ValueError, match="NaN"):
        kbest(np.full((3, 2), np.nan), edges, np.zeros((2, 2)), 2)
