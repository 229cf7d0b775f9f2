"""Alpha-expansion and alpha-beta swap against enumeration on small graphs: each returns a
labelling no move of its kind improves (every move enumerated), expansion stays within
its factor of 2 on Potts tables, and tables the moves cannot cut are refused."""

import itertools
import warnings

import numpy as np
import pytest

from skstruct.inference import GraphBatch, _moves, map_batch, map_inference

NEG_INF = -np.inf


def grid(h, w):
    idx = np.arange(h * w).reshape(h, w)
    right = np.stack([idx[:, :-1].ravel(), idx[:, 1:].ravel()], 1)
    down = np.stack([idx[:-1].ravel(), idx[1:].ravel()], 1)
    return np.vstack([right, down]).astype(np.int64)


def distance_table(K, kind, weight=1.0, cut=2):
    """Score tables ``-weight * V(a, b)``: Potts, truncated linear or truncated quadratic."""
    d = np.abs(np.arange(K)[:, None] - np.arange(K)[None, :])
    V = {"potts": (d > 0).astype(float), "linear": np.minimum(d, cut).astype(float),
         "quadratic": np.minimum(d ** 2, cut ** 2).astype(float)}[kind]
    return -weight * V


def energy(unary, edges, pairwise, labels):
    pw = pairwise if pairwise.ndim == 3 else np.broadcast_to(pairwise, (len(edges),) +
                                                            pairwise.shape)
    return -(unary[np.arange(len(labels)), labels].sum()
             + pw[np.arange(len(edges)), labels[edges[:, 0]], labels[edges[:, 1]]].sum())


def expansion_moves(labels, K):
    """Every labelling one expansion move reaches from ``labels``."""
    n = labels.shape[0]
    for a in range(K):
        for t in itertools.product((False, True), repeat=n):
            yield np.where(np.array(t), a, labels)


def swap_moves(labels, K):
    for a in range(K):
        for b in range(a + 1, K):
            idx = np.flatnonzero((labels == a) | (labels == b))
            for t in itertools.product((False, True), repeat=idx.size):
                out = labels.copy()
                out[idx] = np.where(np.array(t, bool), a, b)
                yield out


def small_problem(rng, kind, K, per_edge):
    edges = grid(3, 3)
    unary = rng.normal(size=(9, K))
    if per_edge:
        pairwise = np.stack([distance_table(K, kind, rng.uniform(0.1, 2.0))
                             for _ in range(len(edges))])
    else:
        pairwise = distance_table(K, kind, rng.uniform(0.1, 2.0))
    return unary, edges, pairwise


@pytest.mark.parametrize("method, moves, tables", [
    ("expansion", expansion_moves, ("potts", "linear")),
    ("swap", swap_moves, ("potts", "linear", "quadratic")),
])
def test_no_move_improves_the_labelling(method, moves, tables):
    rng = np.random.default_rng(0)
    for trial in range(12):
        kind = tables[trial % len(tables)]
        K = 3 if trial % 2 else 4
        unary, edges, pairwise = small_problem(rng, kind, K, per_edge=trial % 3 == 0)
        labels, bound, info = map_inference(unary, edges, pairwise, method=method,
                                            return_bound=True, return_info=True)
        e = energy(unary, edges, pairwise, labels)
        best_move = min(energy(unary, edges, pairwise, y) for y in moves(labels, K))
        assert best_move >= e - 1e-9, (trial, kind)
        assert info.converged[0] and bound == np.inf and not info.certified[0]


def test_expansion_is_within_a_factor_of_two_on_potts():
    rng = np.random.default_rng(1)
    for _ in range(10):
        K = 3
        edges = grid(3, 3)
        # non-negative energies: data costs in [0, 2], a Potts penalty
        unary = -rng.uniform(0, 2, size=(9, K))
        pairwise = distance_table(K, "potts", rng.uniform(0.5, 3.0))
        labels = map_inference(unary, edges, pairwise, method="expansion")
        opt = map_inference(unary, edges, pairwise, method="exact")
        e, e_opt = (energy(unary, edges, pairwise, y) for y in (labels, opt))
        assert e_opt - 1e-12 <= e <= 2 * e_opt + 1e-12


def test_two_labels_with_submodular_tables_reach_the_optimum():
    # with two labels a metric table is submodular, and an expansion-optimal labelling of a
    # binary submodular energy is a global optimum here (the graph cut decides it exactly)
    rng = np.random.default_rng(2)
    for _ in range(10):
        edges = grid(4, 4)
        unary = rng.normal(size=(16, 2))
        pairwise = distance_table(2, "potts", rng.uniform(0.1, 2.0))
        for method in ("expansion", "swap"):
            labels = map_inference(unary, edges, pairwise, method=method)
            opt = map_inference(unary, edges, pairwise, method="graphcut")
            assert np.isclose(energy(unary, edges, pairwise, labels),
                              energy(unary, edges, pairwise, opt))


def test_forbidden_labels_are_honoured():
    rng = np.random.default_rng(3)
    unary, edges, pairwise = small_problem(rng, "potts", 3, per_edge=False)
    unary[rng.random(unary.shape) < 0.4] = NEG_INF
    unary[np.arange(9), rng.integers(3, size=9)] = 0.0
    for method in ("expansion", "swap"):
        labels, info = map_inference(unary, edges, pairwise, method=method, return_info=True)
        assert np.all(unary[np.arange(9), labels] > NEG_INF) and info.feasible[0]


def test_a_table_that_is_not_a_metric_is_refused_with_the_labels_and_the_alternative():
    rng = np.random.default_rng(4)
    edges = grid(3, 3)
    unary = rng.normal(size=(9, 4))
    # truncated quadratic: a semi-metric, not a metric (1 + 1 < 4)
    pairwise = distance_table(4, "quadratic", 1.0, cut=3)
    with pytest.raises(ValueError, match=r"method='expansion' cuts only pairwise tables that "
                       r"are metrics.*edge 0 \(sample 0\).*labels \(a, b, c\).*"
                       r"use method='swap'"):
        map_inference(unary, edges, pairwise, method="expansion")
    # swap takes it, and returns a labelling no swap improves
    labels = map_inference(unary, edges, pairwise, method="swap")
    e = energy(unary, edges, pairwise, labels)
    assert min(energy(unary, edges, pairwise, y) for y in swap_moves(labels, 4)) >= e - 1e-9
    bad = rng.normal(size=(4, 4))
    with pytest.raises(ValueError, match=r"method='swap' cuts only.*not a semi-metric at "
                       r"labels \(\d, \d\).*'trws'"):
        map_inference(unary, edges, bad, method="swap")


def test_non_finite_pairwise_scores_are_refused():
    pairwise = distance_table(3, "potts")
    pairwise[0, 1] = NEG_INF
    for method in ("expansion", "swap"):
        with pytest.raises(ValueError, match=f"method='{method}' needs finite pairwise"):
            map_inference(np.zeros((9, 3)), grid(3, 3), pairwise, method=method)


def test_a_table_past_the_check_budget_is_refused_by_the_move_that_meets_it(monkeypatch):
    # too many tables to check ahead: the move that meets a configuration it cannot cut
    # refuses it, naming the edge and the labels it met
    monkeypatch.setattr(_moves, "CHECK_BUDGET", 0)
    edges = grid(3, 3)
    pairwise = np.stack([distance_table(3, "potts") for _ in range(len(edges))])
    # rewards disagreement: no move that puts both ends of edge 5 in play can be cut
    pairwise[5] = np.array([[-5.0, 5.0, 5.0], [5.0, -5.0, 5.0], [5.0, 5.0, -5.0]])
    for method, labels in (("expansion", r"\(a, b, c\) = \(1, 0, 0\)"),
                           ("swap", r"labels \(0, 1\)")):
        with pytest.raises(ValueError, match=rf"method='{method}' cuts only.*edge 5 "
                           rf"\(sample 0\).*{labels}"):
            map_inference(np.zeros((9, 3)), edges, pairwise, method=method)


def test_a_batch_on_two_threads_matches_each_sample_alone():
    rng = np.random.default_rng(6)
    problems = [small_problem(rng, "linear", 4, per_edge=True) for _ in range(6)]
    batch = GraphBatch.from_graphs([9] * 6, [p[1] for p in problems])
    unary = np.vstack([p[0] for p in problems])
    pairwise = np.vstack([p[2] for p in problems])
    for method in ("expansion", "swap"):
        labels = map_batch(batch, unary, pairwise, method=method, n_jobs=2)
        alone = np.concatenate([map_inference(*p, method=method) for p in problems])
        assert np.array_equal(labels, alone)


def test_stopping_at_max_iter_warns():
    rng = np.random.default_rng(7)
    edges = grid(6, 6)
    unary = rng.normal(size=(36, 5))
    pairwise = distance_table(5, "linear", 1.5, cut=3)
    with pytest.warns(Warning, match="did not converge within max_iter=1 iterations of "
                      "'expansion'"):
        _, info = map_inference(unary, edges, pairwise, method="expansion", max_iter=1,
                                return_info=True)
    assert not info.converged[0] and info.n_iter[0] == 1
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        map_inference(unary, edges, pairwise, method="expansion", max_iter=50)


# ------------------------------------------------- map_inference's pw_index and messages

def test_map_inference_takes_pw_index_as_map_batch_does():
    rng = np.random.default_rng(8)
    edges = grid(3, 4)
    unary = rng.normal(size=(12, 3))
    tables = np.stack([distance_table(3, "potts", w) for w in (0.5, 1.0, 2.0)])
    pw_index = rng.integers(3, size=len(edges))
    batch = GraphBatch.from_graphs([12], [edges])
    for method in ("trws", "expansion", "swap", "icm", "exact"):
        labels, bound = map_inference(unary, edges, tables, method=method, pw_index=pw_index,
                                      return_bound=True)
        ref, ref_bound = map_batch(batch, unary, tables, pw_index, method=method,
                                   return_bound=True)
        assert np.array_equal(labels, ref) and bound == ref_bound[0]
        # the same as the stack of per-edge tables
        assert np.array_equal(labels, map_inference(unary, edges, tables[pw_index],
                                                    method=method))
    with pytest.raises(ValueError, match="pw_index"):
        map_inference(unary, edges, tables, pw_index=np.full(len(edges), 3))


def test_map_inference_warm_starts_messages_as_map_batch_does():
    rng = np.random.default_rng(9)
    edges = grid(5, 5)
    unary = rng.normal(size=(25, 4))
    pairwise = rng.normal(scale=2.0, size=(len(edges), 4, 4))
    batch = GraphBatch.from_graphs([25], [edges])
    for method in ("trws", "max-product"):
        mine = np.zeros((2 * len(edges), 4))
        ref = np.zeros((2 * len(edges), 4))
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            for _ in range(3):
                a, ba, ia = map_inference(unary, edges, pairwise, method=method, max_iter=5,
                                          messages=mine, return_bound=True, return_info=True)
                b, bb, ib = map_batch(batch, unary, pairwise, method=method, max_iter=5,
                                      messages=ref, return_bound=True, return_info=True)
                assert np.array_equal(a, b) and ba == bb[0]
                assert np.array_equal(mine, ref) and np.any(mine != 0)
        # warm-started: the bound after three calls of 5 iterations is that of one of 15
        cold = map_inference(unary, edges, pairwise, method="trws", max_iter=15,
                             return_bound=True)[1] if method == "trws" else None
        if method == "trws":
            assert np.isclose(ba, cold)
    with pytest.raises(ValueError, match="messages"):
        map_inference(unary, edges, pairwise, method="trws", messages=np.zeros((3, 4)))
