"""Integer linear programming (``method="ilp"``), the LP relaxation and roof duality
(``method="qpbo"``) against enumeration on small graphs."""

import itertools
import warnings

import numpy as np
import pytest

from skstruct.datasets import grid_edges
from skstruct.inference import (
    GraphBatch,
    InfeasibilityWarning,
    loss_augment,
    lp_relaxation,
    map_batch,
    map_inference,
)
from tests.brute import all_scores, score_of

NEG_INF = -np.inf


def cycle(n):
    return np.array([[i, (i + 1) % n] for i in range(n)], np.int64)


def graphs(rng):
    """Small loopy graphs: cycles, grids, and a random graph with a chord-rich core."""
    yield cycle(int(rng.integers(3, 7)))
    yield grid_edges(2, 3)
    yield grid_edges(3, 3)
    n = 6
    pairs = np.array(list(itertools.combinations(range(n), 2)), np.int64)
    yield pairs[rng.random(len(pairs)) < 0.5]


def n_nodes(edges):
    return int(edges.max()) + 1 if len(edges) else 1


# ------------------------------------------------------------------------ ILP

@pytest.mark.parametrize("K", [2, 3, 4])
def test_ilp_is_the_optimum_of_enumeration(K):
    rng = np.random.default_rng(K)
    for edges in graphs(rng):
        n = n_nodes(edges)
        if K ** n > 70000:
            continue
        unary = rng.normal(size=(n, K))
        pairwise = rng.normal(scale=1.5, size=(len(edges), K, K))
        labels, bound, info = map_inference(unary, edges, pairwise, method="ilp",
                                            return_bound=True, return_info=True)
        best = all_scores(unary, edges, pairwise)[1].max()
        assert np.isclose(score_of(unary, edges, pairwise, labels), best)
        assert np.isclose(bound, best)
        assert info.certified[0] and info.feasible[0] and not info.unlabelled.any()


def test_ilp_honours_forbidden_labels_and_pairs():
    rng = np.random.default_rng(10)
    n_feasible = n_infeasible = 0
    for _ in range(30):
        K = int(rng.integers(2, 4))
        edges = cycle(int(rng.integers(3, 6)))
        n = len(edges)
        unary = rng.normal(size=(n, K))
        unary[rng.random((n, K)) < 0.3] = NEG_INF
        pairwise = rng.normal(size=(n, K, K))
        pairwise[rng.random(pairwise.shape) < 0.4] = NEG_INF
        best = all_scores(unary, edges, pairwise)[1].max()
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            labels, bound, info = map_inference(unary, edges, pairwise, method="ilp",
                                                return_bound=True, return_info=True)
        if best > NEG_INF:
            n_feasible += 1
            assert np.isclose(score_of(unary, edges, pairwise, labels), best)
            assert np.isclose(bound, best) and info.feasible[0]
            assert not caught
        else:
            n_infeasible += 1
            # proven: the bound is -inf, the warning says so
            assert bound == NEG_INF and not info.feasible[0] and info.certified[0]
            assert any(issubclass(w.category, InfeasibilityWarning)
                       and "are infeasible" in str(w.message) for w in caught)
    assert n_feasible >= 5 and n_infeasible >= 5


def test_ilp_infeasible_by_pairs_alone():
    # two labels cannot all differ around a triangle
    differ = np.array([[NEG_INF, 0.0], [0.0, NEG_INF]])
    with pytest.warns(InfeasibilityWarning, match="are infeasible"):
        labels, bound, info = map_inference(np.zeros((3, 2)), cycle(3), differ,
                                            method="ilp", return_bound=True,
                                            return_info=True)
    assert bound == NEG_INF and not info.feasible[0]


def test_ilp_batch_matches_one_graph_at_a_time_and_decodes_loss_augmented():
    rng = np.random.default_rng(11)
    problems = []
    for edges in (cycle(4), grid_edges(2, 3), cycle(5)):
        n = n_nodes(edges)
        problems.append((rng.normal(size=(n, 3)), edges,
                         rng.normal(size=(len(edges), 3, 3))))
    batch = GraphBatch.from_graphs([p[0].shape[0] for p in problems], [p[1] for p in problems])
    unary = np.vstack([p[0] for p in problems])
    pairwise = np.concatenate([p[2] for p in problems])
    labels, bound = map_batch(batch, unary, pairwise, method="ilp", return_bound=True)
    offsets = batch.node_offsets
    for s, (u, e, p) in enumerate(problems):
        assert np.isclose(bound[s], all_scores(u, e, p)[1].max())
        assert np.isclose(score_of(u, e, p, labels[offsets[s]:offsets[s + 1]]), bound[s])
    y = rng.integers(3, size=batch.n_nodes)
    aug, aug_bound = map_batch(batch, unary, pairwise, method="ilp", y=y, return_bound=True)
    ref, ref_bound = map_batch(batch, loss_augment(unary, y), pairwise, method="exact",
                               return_bound=True)
    assert np.allclose(aug_bound, ref_bound)


def test_ilp_refuses_enormous_programs():
    # 250001 nodes of 4 states: just over a million variables
    with pytest.raises(ValueError, match=r"sample 0 has 250001 nodes.*more than the 1000000"):
        map_inference(np.zeros((250_001, 4)), np.zeros((0, 2), np.int64), np.zeros((4, 4)),
                      method="ilp")


# ------------------------------------------------------------- LP relaxation

def check_polytope(lp, edges):
    node, edge = lp.node_marginals, lp.edge_marginals
    assert np.all(node >= 0) and np.all(edge >= 0)
    assert np.allclose(node.sum(axis=1), 1, atol=1e-7)
    assert np.allclose(edge.sum(axis=2), node[edges[:, 0]], atol=1e-7)
    assert np.allclose(edge.sum(axis=1), node[edges[:, 1]], atol=1e-7)


def test_lp_relaxation_is_tight_on_trees():
    rng = np.random.default_rng(12)
    for _ in range(10):
        n, K = int(rng.integers(2, 8)), int(rng.integers(2, 4))
        edges = np.array([[rng.integers(i), i] for i in range(1, n)], np.int64)
        unary = rng.normal(size=(n, K))
        pairwise = rng.normal(size=(n - 1, K, K))
        lp = lp_relaxation(unary, edges, pairwise)
        best_labels, best = map_inference(unary, edges, pairwise, method="ilp",
                                          return_bound=True)
        assert np.isclose(lp.value, best)
        check_polytope(lp, edges)
        # a unique optimum (continuous random scores): the marginals are its indicators
        assert np.allclose(lp.node_marginals, np.eye(K)[best_labels], atol=1e-7)


@pytest.mark.parametrize("K", [2, 3])
def test_both_routes_of_ilp_are_the_optimum_of_enumeration(K):
    """``method="ilp"`` takes TRW-S's labelling when its bound closes the gap, and runs
    branch and bound otherwise: each route alone is checked against enumeration, on
    graphs where TRW-S certifies (tight) and on frustrated ones where it cannot."""
    from skstruct.inference._ilp import ilp_map, trws_branch_and_bound

    rng = np.random.default_rng(7 + K)
    n_certified = 0
    for trial in range(12):
        for edges in graphs(rng):
            n = n_nodes(edges)
            if K ** n > 70000 or not len(edges):
                continue
            unary = rng.normal(size=(n, K))
            # alternate attractive (TRW-S usually tight) and random (often loose) tables
            scale = 0.3 if trial % 2 else 1.5
            pairwise = rng.normal(scale=scale, size=(len(edges), K, K))
            if trial % 2:
                pairwise += 2.0 * np.eye(K)
            best = all_scores(unary, edges, pairwise)[1].max()
            labels, score = ilp_map(unary, edges, pairwise)
            assert np.isclose(score, best) and np.isclose(
                score_of(unary, edges, pairwise, labels), best)
            found = trws_branch_and_bound(unary, edges, pairwise, np.arange(len(edges)),
                                          max_nodes=1)
            if found is None:
                continue
            n_certified += 1
            assert np.isclose(found[1], best)
            assert np.isclose(score_of(unary, edges, pairwise, found[0]), best)
    # the certificate is used (refusals are checked on frustrated cycles below)
    assert n_certified >= 5


def test_ilp_on_frustrated_cycles_needs_branch_and_bound():
    """Odd cycles rewarding disagreement: TRW-S's bound stays above the optimum, so the
    certificate is refused and branch and bound gives the optimum."""
    from skstruct.inference._ilp import trws_branch_and_bound

    rng = np.random.default_rng(3)
    for n in (3, 5, 7):
        edges = cycle(n)
        unary = rng.normal(scale=0.01, size=(n, 2))
        pairwise = np.tile(np.array([[0.0, 1.0], [1.0, 0.0]]), (n, 1, 1))
        assert trws_branch_and_bound(unary, edges, pairwise, np.arange(n), max_nodes=1) is None
        labels = map_inference(unary, edges, pairwise, method="ilp")
        best = all_scores(unary, edges, pairwise)[1].max()
        assert np.isclose(score_of(unary, edges, pairwise, labels), best)


def frustrated(rng, n, K):
    """A complete graph on ``n > K`` nodes rewarding disagreement on every edge: no
    labelling satisfies every edge, and the local polytope (uniform marginals) is loose."""
    edges = np.array(list(itertools.combinations(range(n), 2)), np.int64)
    unary = rng.normal(scale=0.05, size=(n, K))
    pairwise = (rng.uniform(0.5, 1.5, size=(len(edges), 1, 1)) * (1.0 - np.eye(K))
                + rng.normal(scale=0.1, size=(len(edges), K, K)))
    return unary, edges, pairwise


@pytest.mark.parametrize("K", [2, 3, 4])
def test_trws_branch_and_bound_is_the_optimum_of_enumeration(K):
    """The search over TRW-S's bound, on its own, against enumeration: frustrated
    graphs (where the root's certificate is refused and the search branches) and random
    loopy ones, forbidden labels and forbidden pairs included."""
    from skstruct.inference._ilp import trws_branch_and_bound

    rng = np.random.default_rng(40 + K)
    problems = [frustrated(rng, K + 1 + t % 2, K) for t in range(6)]
    for edges in itertools.chain(graphs(rng), graphs(rng)):
        n = n_nodes(edges)
        if K ** n <= 70000 and len(edges):
            problems.append((rng.normal(size=(n, K)), edges,
                             rng.normal(scale=1.5, size=(len(edges), K, K))))
    n_branched = 0
    for i, (unary, edges, pairwise) in enumerate(problems):
        unary, pairwise = unary.copy(), pairwise.copy()
        n = unary.shape[0]
        if i % 3 == 1:
            unary[rng.random((n, K)) < 0.2] = NEG_INF
            unary[np.arange(n), rng.integers(K, size=n)] = 0.0
        if i % 3 == 2:
            pairwise[rng.random(pairwise.shape) < 0.15] = NEG_INF
        pw = np.arange(len(edges))
        found = trws_branch_and_bound(unary, edges, pairwise, pw)
        assert found is not None
        labels, score = found
        best = all_scores(unary, edges, pairwise)[1].max()
        if best == NEG_INF:
            assert score == NEG_INF
            continue
        assert np.isclose(score, best) and np.isclose(
            score_of(unary, edges, pairwise, labels), best)
        n_branched += trws_branch_and_bound(unary, edges, pairwise, pw, max_nodes=1) is None
    # the search itself is exercised, not only its root
    assert n_branched >= 4


def test_branch_and_bound_hands_over_to_the_integer_program(monkeypatch):
    """A search that exceeds its node budget returns None, and ``method="ilp"`` then
    solves the integer program: still the optimum."""
    import skstruct.inference._ilp as ilp

    unary, edges, pairwise = frustrated(np.random.default_rng(5), 5, 3)
    pw = np.arange(len(edges))
    # (one node: the root's certificate alone, refused here)
    assert ilp.trws_branch_and_bound(unary, edges, pairwise, pw, max_nodes=1) is None
    calls = []
    solve = ilp.ilp_map

    def counted(*args):
        calls.append(1)
        return solve(*args)

    monkeypatch.setattr(ilp, "BB_MAX_NODES", 1)
    monkeypatch.setattr(ilp, "ilp_map", counted)
    labels = map_inference(unary, edges, pairwise, method="ilp")
    best = all_scores(unary, edges, pairwise)[1].max()
    assert calls and np.isclose(score_of(unary, edges, pairwise, labels), best)


def test_lp_relaxation_bounds_the_ilp_and_is_loose_on_frustrated_cycles():
    rng = np.random.default_rng(13)
    n_loose = 0
    for _ in range(15):
        edges = cycle(int(rng.choice([3, 5, 7])))
        n = len(edges)
        unary = rng.normal(scale=0.1, size=(n, 2))
        # disagreement rewarded on an odd cycle is frustrated
        pairwise = rng.uniform(0.5, 1.5, size=(n, 1, 1)) * np.array([[0.0, 1.0], [1.0, 0.0]])
        lp = lp_relaxation(unary, edges, pairwise)
        best = map_inference(unary, edges, pairwise, method="ilp", return_bound=True)[1]
        check_polytope(lp, edges)
        assert lp.value >= best - 1e-7
        # its value is the score of its marginals
        assert np.isclose(lp.value, (unary * lp.node_marginals).sum()
                          + (pairwise * lp.edge_marginals).sum())
        n_loose += lp.value > best + 1e-6
    assert n_loose >= 10


def test_lp_relaxation_of_the_triangle_is_half_integral():
    disagree = np.array([[0.0, 1.0], [1.0, 0.0]])
    lp = lp_relaxation(np.zeros((3, 2)), cycle(3), disagree)
    assert np.isclose(lp.value, 3.0)
    assert np.allclose(lp.node_marginals, 0.5)
    assert np.allclose(lp.edge_marginals, [[0.0, 0.5], [0.5, 0.0]])


def test_lp_relaxation_of_an_empty_polytope():
    differ = np.array([[NEG_INF, 0.0], [0.0, NEG_INF]])
    unary = np.zeros((2, 2))
    unary[0, 1] = unary[1, 1] = NEG_INF
    with pytest.warns(InfeasibilityWarning):
        lp = lp_relaxation(unary, np.array([[0, 1]]), differ)
    assert lp.value == NEG_INF and not lp.node_marginals.any()


# ---------------------------------------------------------------------- QPBO

def submodular_binary(rng, n_edges):
    """Tables with ``P[0, 0] + P[1, 1] >= P[0, 1] + P[1, 0]``."""
    P = rng.normal(size=(n_edges, 2, 2))
    d = P[:, 0, 0] + P[:, 1, 1] - P[:, 0, 1] - P[:, 1, 0]
    P[:, 1, 1] += np.where(d < 0, -d, 0.0) + rng.uniform(0, 0.5, n_edges)
    return P


def test_qpbo_on_submodular_tables_labels_every_node_optimally():
    rng = np.random.default_rng(14)
    for _ in range(4):
        for edges in graphs(rng):
            n = n_nodes(edges)
            unary = rng.normal(size=(n, 2))
            pairwise = submodular_binary(rng, len(edges))
            labels, bound, info = map_inference(unary, edges, pairwise, method="qpbo",
                                                return_bound=True, return_info=True)
            best = all_scores(unary, edges, pairwise)[1].max()
            assert not info.unlabelled.any()
            assert np.isclose(score_of(unary, edges, pairwise, labels), best)
            assert np.isclose(bound, best) and info.certified[0]


def test_qpbo_labels_persistently_and_bounds_the_optimum():
    rng = np.random.default_rng(15)
    n_partial = n_some_labelled = 0
    for _ in range(6):
        for edges in graphs(rng):
            n = n_nodes(edges)
            unary = rng.normal(scale=0.5, size=(n, 2))
            # Ising couplings of either sign (frustrated cycles) plus noise: tables of
            # every kind, and partial labellings among the results
            J = rng.choice([-1, 1], size=len(edges)) * rng.uniform(0.5, 1.5, len(edges))
            pairwise = rng.normal(scale=0.3, size=(len(edges), 2, 2))
            pairwise[:, 0, 0] += J
            pairwise[:, 1, 1] += J
            labels, bound, info = map_inference(unary, edges, pairwise, method="qpbo",
                                                return_bound=True, return_info=True)
            labs, scores = all_scores(unary, edges, pairwise)
            best = scores.max()
            score = score_of(unary, edges, pairwise, labels)
            assert bound >= best - 1e-9 and score <= best + 1e-9
            # for two labels roof duality is the LP relaxation over the local polytope
            assert np.isclose(bound, lp_relaxation(unary, edges, pairwise).value)
            assert np.isclose(info.gap[0], bound - score)
            fixed = ~info.unlabelled
            # persistency: the best labelling agreeing with the labelled nodes is optimal
            agree = (labs[:, fixed] == labels[fixed]).all(axis=1)
            assert np.isclose(scores[agree].max(), best)
            if info.certified[0]:
                assert np.isclose(score, best)
            # the completion is a local optimum of the unlabelled nodes
            for v in np.flatnonzero(info.unlabelled):
                other = labels.copy()
                other[v] = 1 - other[v]
                assert score_of(unary, edges, pairwise, other) <= score + 1e-12
            n_partial += info.unlabelled.any()
            n_some_labelled += fixed.any() and info.unlabelled.any()
    # the checks above met partial labellings, not only complete or empty ones
    assert n_partial >= 3 and n_some_labelled >= 1


def test_qpbo_every_node_unlabelled_on_a_frustrated_triangle():
    disagree = np.array([[0.0, 1.0], [1.0, 0.0]])
    labels, bound, info = map_inference(np.zeros((3, 2)), cycle(3), disagree, method="qpbo",
                                        return_bound=True, return_info=True)
    # roof duality is the LP relaxation for two labels: 3, the optimum 2
    assert info.unlabelled.all() and np.isclose(bound, 3.0)
    assert score_of(np.zeros((3, 2)), cycle(3), disagree, labels) == 2.0
    assert not info.certified[0] and np.isclose(info.gap[0], 1.0)


def test_qpbo_honours_forbidden_labels():
    rng = np.random.default_rng(16)
    for _ in range(10):
        edges = grid_edges(2, 3)
        unary = rng.normal(size=(6, 2))
        unary[np.arange(6), rng.integers(2, size=6)] = np.where(rng.random(6) < 0.5,
                                                                NEG_INF, 0.0)
        pairwise = rng.normal(size=(len(edges), 2, 2))
        labels, bound, info = map_inference(unary, edges, pairwise, method="qpbo",
                                            return_bound=True, return_info=True)
        best = all_scores(unary, edges, pairwise)[1].max()
        assert score_of(unary, edges, pairwise, labels) > NEG_INF and info.feasible[0]
        assert bound >= best - 1e-9
    unary = np.zeros((3, 2))
    unary[1] = NEG_INF
    with pytest.warns(InfeasibilityWarning, match="are infeasible"):
        _, bound = map_inference(unary, cycle(3), np.eye(2), method="qpbo", return_bound=True)
    assert bound == NEG_INF


def test_qpbo_batch_matches_one_graph_at_a_time():
    rng = np.random.default_rng(17)
    problems = [(rng.normal(size=(n_nodes(e), 2)), e, rng.normal(size=(len(e), 2, 2)))
                for e in (cycle(5), grid_edges(3, 3), cycle(3))]
    batch = GraphBatch.from_graphs([p[0].shape[0] for p in problems], [p[1] for p in problems])
    unary = np.vstack([p[0] for p in problems])
    pairwise = np.concatenate([p[2] for p in problems])
    labels, bound, info = map_batch(batch, unary, pairwise, method="qpbo", return_bound=True,
                                    return_info=True)
    o = batch.node_offsets
    for s, (u, e, p) in enumerate(problems):
        one, b, one_info = map_inference(u, e, p, method="qpbo", return_bound=True,
                                         return_info=True)
        assert np.array_equal(labels[o[s]:o[s + 1]], one) and np.isclose(bound[s], b)
        assert np.array_equal(info.unlabelled[o[s]:o[s + 1]], one_info.unlabelled)


def test_qpbo_refuses_more_than_two_labels_and_forbidden_pairs():
    with pytest.raises(ValueError, match=r"sample 0 has 3: use 'trws'.*'ilp'.*'graphcut'"):
        map_inference(np.zeros((3, 3)), cycle(3), np.eye(3), method="qpbo")
    forbid = np.array([[0.0, NEG_INF], [0.0, 0.0]])
    with pytest.raises(ValueError, match=r"finite pairwise.*edge 0 \(sample 0\)"):
        map_inference(np.zeros((3, 2)), cycle(3), forbid, method="qpbo")


# ----------------------------------------------------- other libraries' names

@pytest.mark.parametrize("name, hint", [
    ("ad3", r"'ilp' \(exact, branch and bound\) or 'trws'"),
    (("ad3", {"branch_and_bound": True}), r"'ilp'"),
    ("ogm", r"'trws' or 'max-product'.*'ilp'.*'qpbo'"),
    ("lp", r"'ilp'.*lp_relaxation"),
])
def test_other_libraries_method_names_are_refused_with_the_replacement(name, hint):
    batch = GraphBatch.from_chains([3])
    with pytest.raises(ValueError, match=f"method must be one of .*: use method={hint}"):
        map_batch(batch, np.zeros((3, 2)), np.eye(2), method=name)
    from skstruct.inference import marginals_batch

    with pytest.raises(ValueError, match="method must be one of"):
        marginals_batch(batch, np.zeros((3, 2)), np.eye(2), method=name)


def test_the_models_refuse_other_libraries_names_with_the_replacement():
    from skstruct import StructuredSVM
    from skstruct.models import GraphModel

    X = [(np.ones((3, 1)), cycle(3))]
    y = [np.array([0, 1, 0])]
    with pytest.raises(ValueError, match=r"inference_method must be .*'ad3'.*use method='ilp'"):
        StructuredSVM(model=GraphModel(inference_method="ad3"), max_iter=1).fit(X, y)


# ------------------------------------------------- graphs too large to enumerate

def test_ilp_is_the_reference_for_trws_on_a_grid_too_large_to_enumerate():
    rng = np.random.default_rng(18)
    edges = grid_edges(6, 6)
    unary = rng.normal(size=(36, 3))
    pairwise = rng.normal(size=(len(edges), 3, 3))
    best, optimum = map_inference(unary, edges, pairwise, method="ilp", return_bound=True)
    assert np.isclose(score_of(unary, edges, pairwise, best), optimum)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        labels, bound = map_inference(unary, edges, pairwise, method="trws", max_iter=200,
                                      return_bound=True)
    # TRW-S's labelling scores at most the optimum, its bound at least
    assert score_of(unary, edges, pairwise, labels) <= optimum + 1e-9
    assert bound >= optimum - 1e-9
    assert lp_relaxation(unary, edges, pairwise).value <= bound + 1e-6


def test_qpbo_is_the_minimum_cut_on_a_large_submodular_grid():
    rng = np.random.default_rng(19)
    edges = grid_edges(30, 30)
    unary = rng.normal(size=(900, 2))
    pairwise = submodular_binary(rng, len(edges))
    labels, bound, info = map_inference(unary, edges, pairwise, method="qpbo",
                                        return_bound=True, return_info=True)
    cut, optimum = map_inference(unary, edges, pairwise, method="graphcut", return_bound=True)
    assert not info.unlabelled.any() and info.certified[0]
    assert np.isclose(score_of(unary, edges, pairwise, labels), optimum)
    assert np.isclose(bound, optimum)
