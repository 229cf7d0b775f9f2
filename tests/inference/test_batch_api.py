"""Batched oracles: mixed batches in one call, loss-augmented decoding, summed edge
marginals, warm starts, and the API's input errors."""

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from skstruct.inference import (
    GraphBatch,
    loss_augment,
    map_batch,
    map_inference,
    marginal_inference,
    marginals_batch,
    max_marginals_batch,
    viterbi,
)
from tests.brute import brute_force, close_or_both_neginf, score_of
from tests.strategies import models

# random models with -inf scores are often infeasible on purpose; the warning
# itself is tested in test_reporting.py
pytestmark = pytest.mark.filterwarnings(
    "ignore::skstruct.inference.InfeasibilityWarning")


def _pack(samples):
    """Stack single-graph models (sharing K) into one batch with per-edge pairwise."""
    K = samples[0][0].shape[1]
    n_nodes = [u.shape[0] for u, _, _ in samples]
    batch = GraphBatch.from_graphs(n_nodes, [e for _, e, _ in samples])
    unary = np.concatenate([u for u, _, _ in samples])
    pw = [np.repeat(p[None], len(e), 0) if p.ndim == 2 else p for _, e, p in samples]
    pairwise = np.concatenate(pw) if pw else np.zeros((0, K, K))
    return batch, unary, pairwise.reshape(-1, K, K)


@st.composite
def batches(draw, kinds=("chain", "tree")):
    K = draw(st.integers(1, 3))
    samples = []
    for _ in range(draw(st.integers(1, 5))):
        u, e, p = draw(models(kind=draw(st.sampled_from(kinds)), max_states=K))
        if u.shape[1] != K:
            continue
        samples.append((u, e, p))
    if not samples:
        samples.append((np.zeros((0, K)), np.zeros((0, 2), np.int64), np.zeros((K, K))))
    return samples


@settings(max_examples=60, deadline=None)
@given(batches(), st.integers(0, 2**31 - 1))
def test_mixed_forest_batch_matches_brute_force_per_sample(samples, seed):
    batch, unary, pairwise = _pack(samples)
    K = unary.shape[1]
    rng = np.random.default_rng(seed)
    y = rng.integers(0, K, size=unary.shape[0])
    w = rng.uniform(0.5, 2.0, size=K)
    labels, best = map_batch(batch, unary, pairwise, return_bound=True)
    aug_labels, aug_best = map_batch(batch, unary, pairwise, y=y, loss_weights=w,
                                     return_bound=True)
    node, edge, logz = marginals_batch(batch, unary, pairwise)
    _, esum, _ = marginals_batch(batch, unary, pairwise, edge_marginals="sum")
    mm = max_marginals_batch(batch, unary, pairwise)
    aug = loss_augment(unary, y, w)
    no, eo = batch.node_offsets, batch.edge_offsets
    for s, (u, e, p) in enumerate(samples):
        ns, es = slice(no[s], no[s + 1]), slice(eo[s], eo[s + 1])
        b, z, n, ed, m = brute_force(u, e, p)
        assert close_or_both_neginf(best[s], b)
        if np.isfinite(b):
            assert np.isclose(score_of(u, e, p, labels[ns]), b)
        ba, *_ = brute_force(aug[ns], e, p)
        assert close_or_both_neginf(aug_best[s], ba)
        assert close_or_both_neginf(logz[s], z)
        np.testing.assert_allclose(node[ns], n, atol=1e-9)
        np.testing.assert_allclose(edge[es], ed, atol=1e-9)
        assert close_or_both_neginf(mm[ns], m)
    np.testing.assert_allclose(esum, edge, atol=1e-12)  # one matrix per edge here


def test_summed_edge_marginals_with_a_shared_matrix():
    rng = np.random.default_rng(0)
    lengths = rng.integers(0, 9, size=40)
    batch = GraphBatch.from_chains(lengths)
    unary = rng.normal(size=(batch.n_nodes, 4))
    pairwise = rng.normal(size=(4, 4))
    _, full, _ = marginals_batch(batch, unary, pairwise, edge_marginals="full")
    _, summed, _ = marginals_batch(batch, unary, pairwise, edge_marginals="sum")
    assert summed.shape == (1, 4, 4)
    np.testing.assert_allclose(summed[0], full.sum(0), rtol=1e-12)
    assert np.isclose(summed.sum(), batch.n_edges)


def test_pw_index_ties_edges_to_matrices():
    rng = np.random.default_rng(1)
    batch = GraphBatch.from_chains([5, 4])
    unary = rng.normal(size=(9, 3))
    mats = rng.normal(size=(2, 3, 3))
    pw_index = np.array([0, 1, 0, 1, 1, 0, 1])
    labels, best = map_batch(batch, unary, mats, pw_index, return_bound=True)
    labels2, best2 = map_batch(batch, unary, mats[pw_index], return_bound=True)
    np.testing.assert_array_equal(labels, labels2)
    np.testing.assert_allclose(best, best2)
    _, summed, _ = marginals_batch(batch, unary, mats, pw_index, edge_marginals="sum")
    _, full, _ = marginals_batch(batch, unary, mats[pw_index])
    np.testing.assert_allclose(summed[0], full[pw_index == 0].sum(0), atol=1e-12)
    np.testing.assert_allclose(summed[1], full[pw_index == 1].sum(0), atol=1e-12)


def test_loss_augmented_viterbi_equals_viterbi_on_augmented_unary():
    rng = np.random.default_rng(2)
    batch = GraphBatch.from_chains([6, 1, 0, 9])
    unary = rng.normal(size=(batch.n_nodes, 5))
    pairwise = rng.normal(size=(5, 5))
    y = rng.integers(0, 5, size=batch.n_nodes)
    w = rng.uniform(0, 3, size=5)
    labels, best = map_batch(batch, unary, pairwise, y=y, loss_weights=w, return_bound=True)
    aug = loss_augment(unary, y, w)
    for s in range(batch.n_samples):
        sl = slice(batch.node_offsets[s], batch.node_offsets[s + 1])
        ref, score = viterbi(aug[sl], pairwise)
        assert np.isclose(best[s], score) or (sl.start == sl.stop and best[s] == 0)
        np.testing.assert_array_equal(labels[sl], ref)


def test_n_jobs_does_not_change_results_and_restores_threads():
    import numba

    rng = np.random.default_rng(3)
    batch = GraphBatch.from_chains(rng.integers(1, 12, size=300))
    unary = rng.normal(size=(batch.n_nodes, 6))
    pairwise = rng.normal(size=(6, 6))
    before = numba.get_num_threads()
    a = map_batch(batch, unary, pairwise, n_jobs=1)
    b = map_batch(batch, unary, pairwise, n_jobs=-1)
    assert numba.get_num_threads() == before
    np.testing.assert_array_equal(a, b)
    with pytest.raises(ValueError, match="n_jobs must be"):
        map_batch(batch, unary, pairwise, n_jobs=0)


@pytest.mark.parametrize("kwargs, message", [
    (dict(unary=np.array([[np.nan, 0.0]])), "unary contains NaN"),
    (dict(unary=np.array([[np.inf, 0.0]])), r"unary contains \+inf"),
    (dict(unary=np.zeros(3)), "unary must be 2-D"),
    (dict(unary=np.zeros((2, 0))), "at least one state"),
    (dict(pairwise=np.zeros((3, 3))), r"pairwise must have shape \(2, 2\)"),
    (dict(pairwise=np.zeros((3, 2, 2))), "pairwise holds 3 matrices for 1 edges"),
    (dict(pairwise=np.array([[0.0, np.nan], [0, 0]])), "pairwise contains NaN"),
    (dict(edges=np.array([[0, 2]])), "out of range"),
    (dict(edges=np.array([[1, 1]])), "self-loop"),
    (dict(method="bogus"), "method must be one of"),
    (dict(max_iter=0, method="trws"), "max_iter must be a positive integer"),
])
def test_map_inference_input_errors(kwargs, message):
    args = dict(unary=np.zeros((2, 2)), edges=np.array([[0, 1]]), pairwise=np.zeros((2, 2)))
    args.update(kwargs)
    with pytest.raises(ValueError, match=message):
        map_inference(**args)


def test_method_requirements():
    cycle = np.array([[0, 1], [1, 2], [2, 0]])
    with pytest.raises(ValueError, match="sample 0 has a cycle"):
        map_inference(np.zeros((3, 2)), cycle, np.zeros((2, 2)), method="tree")
    with pytest.raises(ValueError, match="sample 0 is not a chain"):
        map_inference(np.zeros((3, 2)), cycle, np.zeros((2, 2)), method="chain")
    with pytest.raises(ValueError, match="too many"):
        map_inference(np.zeros((40, 3)), np.zeros((0, 2), int), np.zeros((3, 3)),
                      method="exact")


def test_loss_augment_checks_labels():
    with pytest.raises(ValueError, match="labels outside"):
        loss_augment(np.zeros((2, 3)), np.array([0, 3]))
    with pytest.raises(ValueError, match="loss_weights"):
        loss_augment(np.zeros((2, 3)), np.array([0, 1]), np.array([1.0, -1.0, 1.0]))


@settings(max_examples=60, deadline=None)
@given(batches(kinds=("chain", "tree", "loopy")))
def test_auto_on_mixed_batches_with_cycles(samples):
    batch, unary, pairwise = _pack(samples)
    labels, bound = map_batch(batch, unary, pairwise, return_bound=True, max_iter=200)
    node, edge, logz = marginals_batch(batch, unary, pairwise, max_iter=200)
    no, eo = batch.node_offsets, batch.edge_offsets
    for s, (u, e, p) in enumerate(samples):
        ns, es = slice(no[s], no[s + 1]), slice(eo[s], eo[s + 1])
        b, z, n, ed, _ = brute_force(u, e, p)
        got = score_of(u, e, p, labels[ns])
        # an upper bound on the optimum, attained exactly on forests
        assert bound[s] >= b - 1e-9 or (b == -np.inf)
        assert bound[s] >= got - 1e-9 or got == -np.inf
        if batch.is_forest[s]:
            assert close_or_both_neginf(got, b) and close_or_both_neginf(bound[s], b)
            assert close_or_both_neginf(logz[s], z)
            np.testing.assert_allclose(node[ns], n, atol=1e-9)
        assert not np.isnan(node[ns]).any() and not np.isnan(edge[es]).any()
        assert not np.isnan(logz[s])
        if np.isfinite(logz[s]):
            np.testing.assert_allclose(node[ns].sum(1), 1.0, atol=1e-9)


@settings(max_examples=60, deadline=None)
@given(models(kind="tree", allow_neginf=False))
def test_loopy_methods_are_exact_on_trees(model):
    unary, edges, pairwise = model
    best, logz, node, edge, _ = brute_force(unary, edges, pairwise)
    n, e, z = marginal_inference(unary, edges, pairwise, method="loopy", max_iter=500,
                                 tol=1e-12)
    assert np.isclose(z, logz, atol=1e-7)
    np.testing.assert_allclose(n, node, atol=1e-7)
    np.testing.assert_allclose(e, edge, atol=1e-7)
    for method in ("trws", "max-product"):
        labels, bound = map_inference(unary, edges, pairwise, method=method, max_iter=500,
                                      tol=1e-12, return_bound=True)
        assert np.isclose(score_of(unary, edges, pairwise, labels), best)
    labels, bound = map_inference(unary, edges, pairwise, method="trws", max_iter=500,
                                  tol=1e-12, return_bound=True)
    assert np.isclose(bound, best)


def test_warm_start_messages_are_kept_between_calls():
    rng = np.random.default_rng(5)
    side = 6
    idx = np.arange(side * side).reshape(side, side)
    edges = np.concatenate([np.stack([idx[:, :-1].ravel(), idx[:, 1:].ravel()], 1),
                            np.stack([idx[:-1].ravel(), idx[1:].ravel()], 1)])
    batch = GraphBatch.from_graphs([side * side], [edges])
    unary = rng.normal(size=(side * side, 3))
    pairwise = rng.normal(size=(3, 3))
    msgs = np.zeros((2 * len(edges), 3))
    _, b1 = map_batch(batch, unary, pairwise, method="trws", max_iter=3, tol=0.0,
                      messages=msgs, return_bound=True)
    assert np.any(msgs != 0)
    _, b2 = map_batch(batch, unary, pairwise, method="trws", max_iter=3, tol=0.0,
                      messages=msgs, return_bound=True)
    _, b6 = map_batch(batch, unary, pairwise, method="trws", max_iter=6, tol=0.0,
                      return_bound=True)
    # three more iterations from the kept messages = six from scratch
    assert b2[0] <= b1[0] + 1e-9
    assert np.isclose(b2[0], b6[0])
    with pytest.raises(ValueError, match="messages must be"):
        map_batch(batch, unary, pairwise, method="trws", messages=np.zeros((3, 3)))


def test_one_sample_runs_on_one_thread():
    # kernels parallelise over samples: a single sample must not wake the pool
    from skstruct.inference._api import _jobs

    assert _jobs(GraphBatch.from_chains([5]), None) == 1
    assert _jobs(GraphBatch.from_chains([5]), -1) == 1
    assert _jobs(GraphBatch.from_chains([5, 3]), None) is None
    assert _jobs(GraphBatch.from_chains([5, 3]), 2) == 2
    # a one-sample batch still refuses a bad n_jobs
    with pytest.raises(ValueError, match="n_jobs"):
        _jobs(GraphBatch.from_chains([5]), 0)
