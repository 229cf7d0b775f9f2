"""Tests of the TRW-S kernels against brute-force enumeration."""

import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st

from skstruct.inference._loopy import loopy_bp_batch
from skstruct.inference._trws import (
    TRWSOut,
    dual_bound_batch,
    labelling_scores_batch,
    trws_batch,
)
from tests.inference.kernel_cases import (
    FOREST_KINDS,
    LOOPY_KINDS,
    NEG_INF,
    adjacency,
    assert_close,
    batch_strategy,
    brute_force,
    build_batch,
    labelling_score,
    reversed_batch,
)

# ---------------------------------------------------------------- runners


def run_trws(batch, adj, max_iter=300, tol=1e-12, messages=None, window=1, relative=True):
    n_nodes, n_labels = batch[3].shape
    n_samples = len(batch[0]) - 1
    if messages is None:
        messages = np.zeros((2 * batch[2].shape[0], n_labels))
    labels = np.full(n_nodes, -1, np.int64)
    bound = np.full(n_samples, np.nan)
    n_iter = np.full(n_samples, -1, np.int64)
    converged = np.zeros(n_samples, bool)
    score = np.full(n_samples, np.nan)
    out = TRWSOut(labels=labels, bound=bound, n_iter=n_iter, converged=converged, score=score)
    trws_batch(*batch, *adj, messages, max_iter, tol, window, relative, out)
    # the reported score is the returned labelling's
    np.testing.assert_allclose(score, scores_of(batch, labels), rtol=1e-12, atol=1e-12)
    # a sample that used its whole budget may still have met a stopping rule
    assert converged[n_iter < max_iter].all()
    return messages, labels, bound, n_iter


def scores_of(batch, labels):
    out = np.full(len(batch[0]) - 1, np.nan)
    labelling_scores_batch(*batch, labels, out)
    return out


def kinds_strategy(kinds):
    return st.lists(st.sampled_from(kinds), min_size=1, max_size=4)


def check_valid(batch, samples, n_labels, labels, bound):
    """Labels in range, score consistent, bound above labelling and optimum."""
    assert ((labels >= 0) & (labels < n_labels)).all()
    assert not np.isnan(bound).any() and not (bound == np.inf).any()
    scores = scores_of(batch, labels)
    bests = []
    for i, sample in enumerate(samples):
        best = brute_force(sample, n_labels)[0]
        local = labels[batch[0][i]:batch[0][i + 1]]
        assert_close(scores[i], labelling_score(sample, local), 1e-9, 1e-12)
        slack = 1e-9 * max(1.0, abs(best)) if np.isfinite(best) else 0.0
        assert bound[i] >= scores[i] - slack or scores[i] == NEG_INF
        assert bound[i] >= best - slack
        if sample["n"] == 0:
            assert bound[i] == 0.0 and scores[i] == 0.0
        bests.append(best)
    return scores, np.array(bests)


# ---------------------------------------------------------------- tests


@settings(max_examples=40, deadline=None)
@given(kinds=kinds_strategy(FOREST_KINDS + LOOPY_KINDS), **batch_strategy)
def test_bound_is_valid(kinds, seed, n_labels, shared, p_ninf):
    rng = np.random.default_rng(seed)
    batch, samples = build_batch(rng, kinds, n_labels, shared, p_ninf)
    adj = adjacency(batch)
    messages, labels, bound, _ = run_trws(batch, adj, max_iter=int(rng.integers(0, 40)))
    assert not np.isnan(messages).any() and not (messages == np.inf).any()
    check_valid(batch, samples, n_labels, labels, bound)


@settings(max_examples=40, deadline=None)
@given(kinds=kinds_strategy(FOREST_KINDS), **batch_strategy)
def test_forests_optimal_and_bound_tight(kinds, seed, n_labels, shared, p_ninf):
    rng = np.random.default_rng(seed)
    batch, samples = build_batch(rng, kinds, n_labels, shared, p_ninf)
    adj = adjacency(batch)
    _, labels, bound, n_iter = run_trws(batch, adj)
    assert (n_iter < 300).all()
    scores, bests = check_valid(batch, samples, n_labels, labels, bound)
    for score, best, b in zip(scores, bests, bound):
        assert_close(score, best, 1e-9, 1e-9)
        assert_close(b, best, 1e-6, 1e-6)


@settings(max_examples=20, deadline=None)
@given(n_labels=st.integers(1, 3), seed=st.integers(0, 2**32 - 1))
def test_index_chain_exact_after_one_iteration(n_labels, seed):
    # a chain in node order is one monotonic chain: the bound is the exact
    # maximum for any messages and one iteration is exact max-product
    rng = np.random.default_rng(seed)
    batch, samples = build_batch(rng, ["index_chain", "index_chain"], n_labels, False, 0.0)
    adj = adjacency(batch)
    messages = rng.normal(size=(2 * batch[2].shape[0], n_labels))
    _, labels, bound, _ = run_trws(batch, adj, max_iter=0, messages=messages)
    bests = [brute_force(s, n_labels)[0] for s in samples]
    np.testing.assert_allclose(bound, bests, rtol=1e-9, atol=1e-9)
    _, labels, bound, _ = run_trws(batch, adj, max_iter=1)
    np.testing.assert_allclose(scores_of(batch, labels), bests, rtol=1e-9, atol=1e-9)


@settings(max_examples=30, deadline=None)
@given(kinds=kinds_strategy(FOREST_KINDS + LOOPY_KINDS), **batch_strategy)
def test_bound_valid_for_arbitrary_finite_messages(kinds, seed, n_labels, shared, p_ninf):
    rng = np.random.default_rng(seed)
    batch, samples = build_batch(rng, kinds, n_labels, shared, p_ninf)
    adj = adjacency(batch)
    messages = rng.normal(scale=3.0, size=(2 * batch[2].shape[0], n_labels))
    _, labels, bound, _ = run_trws(batch, adj, max_iter=int(rng.integers(0, 3)),
                                   messages=messages)
    check_valid(batch, samples, n_labels, labels, bound)


@settings(max_examples=30, deadline=None)
@given(kinds=kinds_strategy(FOREST_KINDS + LOOPY_KINDS), **batch_strategy)
def test_edge_reversal_invariance(kinds, seed, n_labels, shared, p_ninf):
    rng = np.random.default_rng(seed)
    batch, _ = build_batch(rng, kinds, n_labels, shared, p_ninf)
    edges = batch[2]
    batch2, flip = reversed_batch(rng, batch)
    m1, labels1, bound1, n_iter1 = run_trws(batch, adjacency(batch), max_iter=25)
    m2, labels2, bound2, n_iter2 = run_trws(batch2, adjacency(batch2), max_iter=25)
    swapped = m2.reshape(len(edges), 2, n_labels).copy()
    swapped[flip] = swapped[flip][:, ::-1]
    np.testing.assert_allclose(swapped.reshape(m1.shape), m1, atol=1e-9)
    np.testing.assert_allclose(bound2, bound1, rtol=1e-12, atol=1e-12)
    np.testing.assert_allclose(scores_of(batch2, labels2), scores_of(batch, labels1),
                               rtol=1e-12, atol=1e-12)
    np.testing.assert_array_equal(n_iter2, n_iter1)


@settings(max_examples=30, deadline=None)
@given(kinds=kinds_strategy(FOREST_KINDS + LOOPY_KINDS), **batch_strategy)
def test_warm_start_from_converged_messages(kinds, seed, n_labels, shared, p_ninf):
    rng = np.random.default_rng(seed)
    batch, samples = build_batch(rng, kinds, n_labels, shared, p_ninf)
    adj = adjacency(batch)
    messages, labels, bound, n_iter = run_trws(batch, adj, max_iter=500)
    _, labels2, bound2, n_iter2 = run_trws(batch, adj, max_iter=500,
                                           messages=messages.copy())
    done = n_iter < 500
    assert (n_iter2[done] <= 1).all()
    np.testing.assert_allclose(bound2[done], bound[done], rtol=1e-9, atol=1e-9)
    forest = np.array([sample["kind"] in FOREST_KINDS for sample in samples])
    keep = done & forest
    np.testing.assert_allclose(scores_of(batch, labels2)[keep], scores_of(batch, labels)[keep],
                               rtol=1e-9, atol=1e-9)
    check_valid(batch, samples, batch[3].shape[1], labels2, bound2)
    # the bound and the labelling carry over; the messages themselves
    # are not compared: once the bound has stopped moving they may still slide
    # along a flat face of the dual (even on forests, where the bound is tight)
    _, _, bound0, n_iter0 = run_trws(batch, adj, max_iter=0, messages=messages.copy())
    assert (n_iter0 == 0).all()
    np.testing.assert_allclose(bound0[done], bound[done], rtol=1e-9, atol=1e-9)


@settings(max_examples=20, deadline=None)
@given(kinds=kinds_strategy(FOREST_KINDS + LOOPY_KINDS), **batch_strategy)
def test_labelling_scores_match_enumeration(kinds, seed, n_labels, shared, p_ninf):
    rng = np.random.default_rng(seed)
    batch, samples = build_batch(rng, kinds, n_labels, shared, p_ninf)
    labels = rng.integers(0, n_labels, size=batch[3].shape[0])
    scores = scores_of(batch, labels)
    for i, sample in enumerate(samples):
        local = labels[batch[0][i]:batch[0][i + 1]]
        assert_close(scores[i], labelling_score(sample, local), 1e-12, 1e-12)


@settings(max_examples=30, deadline=None)
@given(kinds=kinds_strategy(FOREST_KINDS + LOOPY_KINDS), **batch_strategy)
def test_dual_bound_batch(kinds, seed, n_labels, shared, p_ninf):
    # the stand-alone bound matches trws_batch's and certifies max-product BP
    rng = np.random.default_rng(seed)
    batch, samples = build_batch(rng, kinds, n_labels, shared, p_ninf)
    adj = adjacency(batch)
    n_samples = len(batch[0]) - 1
    messages = np.zeros((2 * batch[2].shape[0], n_labels))
    loopy_bp_batch(*batch, *adj, messages, True, 20, 0.3, 1e-9, np.zeros(n_samples, np.int64))
    bound = np.full(n_samples, np.nan)
    dual_bound_batch(*batch, *adj, messages, bound)
    _, labels, bound0, _ = run_trws(batch, adj, max_iter=0, messages=messages.copy())
    np.testing.assert_array_equal(bound, bound0)
    check_valid(batch, samples, n_labels, labels, bound)


def test_single_label_single_node_and_empty():
    node_offsets = np.array([0, 1, 1, 4], np.int64)
    edge_offsets = np.array([0, 0, 0, 3], np.int64)
    edges = np.array([[1, 2], [3, 2], [1, 3]], np.int64)
    unary = np.array([[0.5], [1.0], [-2.0], [0.25]])
    pairwise = np.array([[[0.3]], [[-0.7]], [[0.1]]])
    pw_index = np.array([0, 1, 2], np.int64)
    batch = (node_offsets, edge_offsets, edges, unary, pairwise, pw_index)
    _, labels, bound, n_iter = run_trws(batch, adjacency(batch))
    np.testing.assert_array_equal(labels, 0)
    np.testing.assert_allclose(bound, [0.5, 0.0, 1.0 - 2.0 + 0.25 + 0.3 - 0.7 + 0.1])
    assert n_iter[1] == 0

    single = (np.array([0, 1], np.int64), np.array([0, 0], np.int64),
              np.zeros((0, 2), np.int64), np.array([[0.0, 2.0, NEG_INF]]),
              np.zeros((0, 3, 3)), np.zeros(0, np.int64))
    _, labels, bound, _ = run_trws(single, adjacency(single))
    assert labels[0] == 1 and bound[0] == 2.0

    empty = (np.array([0, 0], np.int64), np.array([0, 0], np.int64),
             np.zeros((0, 2), np.int64), np.zeros((0, 2)), np.zeros((0, 2, 2)),
             np.zeros(0, np.int64))
    _, _, bound, n_iter = run_trws(empty, adjacency(empty))
    assert bound[0] == 0.0 and n_iter[0] == 0


def test_infeasible_sample():
    table = np.array([[NEG_INF, 0.0], [NEG_INF, 0.0]])  # middle label must be 1
    table2 = np.array([[0.0, 0.0], [NEG_INF, NEG_INF]])  # middle label must be 0
    batch = (np.array([0, 3, 4], np.int64), np.array([0, 2, 2], np.int64),
             np.array([[0, 1], [1, 2]], np.int64), np.zeros((4, 2)),
             np.array([table, table2]), np.array([0, 1], np.int64))
    messages, labels, bound, _ = run_trws(batch, adjacency(batch))
    assert not np.isnan(messages).any()
    assert bound[0] == NEG_INF and bound[1] == 0.0
    assert ((labels >= 0) & (labels < 2)).all()
