"""Tests of the loopy belief propagation kernels against brute-force enumeration."""

import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st

from skstruct.inference._loopy import (
    bp_beliefs_batch,
    loopy_bp_batch,
    max_beliefs_decode_batch,
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


def run_bp(batch, adj, use_max, max_iter=500, damping=0.0, tol=1e-13, messages=None):
    n_edges = batch[2].shape[0]
    n_labels = batch[3].shape[1]
    if messages is None:
        messages = np.zeros((2 * n_edges, n_labels))
    n_iter = np.full(len(batch[0]) - 1, -1, np.int64)
    converged = loopy_bp_batch(*batch, *adj, messages, use_max, max_iter, damping, tol, n_iter)
    return messages, n_iter, converged


def beliefs(batch, adj, messages):
    n_nodes, n_labels = batch[3].shape
    node = np.full((n_nodes, n_labels), np.nan)
    edge = np.full((batch[2].shape[0], n_labels, n_labels), np.nan)
    logz = np.full(len(batch[0]) - 1, np.nan)
    bp_beliefs_batch(*batch, *adj, messages, node, edge, logz)
    return node, edge, logz


def decode(batch, adj, messages):
    labels = np.full(batch[3].shape[0], -1, np.int64)
    max_beliefs_decode_batch(*batch, *adj, messages, labels)
    return labels


def kinds_strategy(kinds):
    return st.lists(st.sampled_from(kinds), min_size=1, max_size=4)


# ---------------------------------------------------------------- tests


@settings(max_examples=40, deadline=None)
@given(kinds=kinds_strategy(FOREST_KINDS), damping=st.sampled_from([0.0, 0.0, 0.4]),
       **batch_strategy)
def test_sum_product_exact_on_forests(kinds, damping, seed, n_labels, shared, p_ninf):
    rng = np.random.default_rng(seed)
    batch, samples = build_batch(rng, kinds, n_labels, shared, p_ninf)
    adj = adjacency(batch)
    messages, _, converged = run_bp(batch, adj, False, damping=damping)
    assert converged.all()
    assert not np.isnan(messages).any()
    node, edge, logz = beliefs(batch, adj, messages)
    for i, sample in enumerate(samples):
        _, exact_logz, node_marg, edge_marg = brute_force(sample, n_labels)
        assert_close(logz[i], exact_logz, 1e-6)
        n0, n1 = batch[0][i], batch[0][i + 1]
        e0, e1 = batch[1][i], batch[1][i + 1]
        np.testing.assert_allclose(node[n0:n1], node_marg, atol=1e-6)
        np.testing.assert_allclose(edge[e0:e1], edge_marg, atol=1e-6)


@settings(max_examples=40, deadline=None)
@given(kinds=kinds_strategy(FOREST_KINDS + LOOPY_KINDS), damping=st.sampled_from([0.0, 0.5]),
       use_max=st.booleans(), **batch_strategy)
def test_loopy_outputs_are_sane(kinds, damping, use_max, seed, n_labels, shared, p_ninf):
    rng = np.random.default_rng(seed)
    batch, samples = build_batch(rng, kinds, n_labels, shared, p_ninf)
    adj = adjacency(batch)
    messages, n_iter, converged = run_bp(batch, adj, use_max, max_iter=30, damping=damping)
    assert not np.isnan(messages).any()
    assert not (messages == np.inf).any()
    assert ((n_iter >= 0) & (n_iter <= 30)).all()
    assert (converged == (n_iter < 30) | converged).all()
    if not use_max:
        node, edge, logz = beliefs(batch, adj, messages)
        for arr in (node, edge):
            assert np.isfinite(arr).all()
            assert ((arr >= 0) & (arr <= 1 + 1e-12)).all()
        for i in range(len(samples)):
            assert not np.isnan(logz[i]) and logz[i] != np.inf
            n0, n1 = batch[0][i], batch[0][i + 1]
            e0, e1 = batch[1][i], batch[1][i + 1]
            target = 0.0 if logz[i] == NEG_INF else 1.0
            np.testing.assert_allclose(node[n0:n1].sum(axis=1), target, atol=1e-9)
            np.testing.assert_allclose(edge[e0:e1].sum(axis=(1, 2)), target, atol=1e-9)
            if samples[i]["n"] == 0:
                assert logz[i] == 0.0
    labels = decode(batch, adj, messages)
    assert ((labels >= 0) & (labels < n_labels)).all()


@settings(max_examples=40, deadline=None)
@given(kinds=kinds_strategy(FOREST_KINDS), damping=st.sampled_from([0.0, 0.3]),
       **batch_strategy)
def test_max_product_optimal_on_forests(kinds, damping, seed, n_labels, shared, p_ninf):
    rng = np.random.default_rng(seed)
    batch, samples = build_batch(rng, kinds, n_labels, shared, p_ninf)
    adj = adjacency(batch)
    messages, _, converged = run_bp(batch, adj, True, damping=damping)
    assert converged.all()
    assert not np.isnan(messages).any()
    labels = decode(batch, adj, messages)
    for i, sample in enumerate(samples):
        best = brute_force(sample, n_labels)[0]
        local = labels[batch[0][i]:batch[0][i + 1]]
        assert_close(labelling_score(sample, local), best, 1e-9, 1e-9)


@settings(max_examples=30, deadline=None)
@given(kinds=kinds_strategy(FOREST_KINDS + LOOPY_KINDS), use_max=st.booleans(),
       **batch_strategy)
def test_warm_start_from_converged_messages(kinds, use_max, seed, n_labels, shared, p_ninf):
    rng = np.random.default_rng(seed)
    batch, samples = build_batch(rng, kinds, n_labels, shared, p_ninf)
    adj = adjacency(batch)
    messages, _, converged = run_bp(batch, adj, use_max, max_iter=300, damping=0.5, tol=1e-11)
    again, n_iter, _ = run_bp(batch, adj, use_max, max_iter=300, damping=0.5,
                              tol=1e-11, messages=messages.copy())
    for i in np.flatnonzero(converged):
        rows = slice(2 * batch[1][i], 2 * batch[1][i + 1])
        np.testing.assert_allclose(again[rows], messages[rows], atol=1e-9)
        # on loopy graphs the changes need not shrink monotonically, so a
        # sweep below tol can be followed by one just above it
        if samples[i]["kind"] in FOREST_KINDS:
            assert n_iter[i] <= 1


@settings(max_examples=20, deadline=None)
@given(kinds=kinds_strategy(FOREST_KINDS + LOOPY_KINDS), **batch_strategy)
def test_edge_reversal_invariance(kinds, seed, n_labels, shared, p_ninf):
    rng = np.random.default_rng(seed)
    batch, _ = build_batch(rng, kinds, n_labels, shared, p_ninf)
    edges = batch[2]
    batch2, flip = reversed_batch(rng, batch)
    adj, adj2 = adjacency(batch), adjacency(batch2)
    m1, _, _ = run_bp(batch, adj, False, max_iter=20, damping=0.2)
    m2, _, _ = run_bp(batch2, adj2, False, max_iter=20, damping=0.2)
    swapped = m2.reshape(len(edges), 2, n_labels).copy()
    swapped[flip] = swapped[flip][:, ::-1]
    np.testing.assert_allclose(swapped.reshape(m1.shape), m1, atol=1e-9)
    node1, edge1, logz1 = beliefs(batch, adj, m1)
    node2, edge2, logz2 = beliefs(batch2, adj2, m2)
    edge2[flip] = edge2[flip].transpose(0, 2, 1)
    np.testing.assert_allclose(node2, node1, atol=1e-9)
    np.testing.assert_allclose(edge2, edge1, atol=1e-9)
    np.testing.assert_allclose(logz2, logz1, atol=1e-9)


def test_single_label_and_single_node():
    # K = 1: one labelling, its score is the log partition; beliefs are 1
    node_offsets = np.array([0, 1, 1, 4], np.int64)
    edge_offsets = np.array([0, 0, 0, 2], np.int64)
    edges = np.array([[1, 2], [3, 2]], np.int64)
    unary = np.array([[0.5], [1.0], [-2.0], [0.25]])
    pairwise = np.array([[[0.3]], [[-0.7]]])
    pw_index = np.array([0, 1], np.int64)
    batch = (node_offsets, edge_offsets, edges, unary, pairwise, pw_index)
    adj = adjacency(batch)
    messages, n_iter, converged = run_bp(batch, adj, False)
    assert converged.all()
    assert n_iter[0] == 0 and n_iter[1] == 0
    node, edge, logz = beliefs(batch, adj, messages)
    np.testing.assert_allclose(logz, [0.5, 0.0, 1.0 - 2.0 + 0.25 + 0.3 - 0.7], atol=1e-12)
    np.testing.assert_allclose(node, 1.0)
    np.testing.assert_allclose(edge, 1.0)
    labels = decode(batch, adj, run_bp(batch, adj, True)[0])
    np.testing.assert_array_equal(labels, 0)


def test_single_node_log_partition():
    batch = (np.array([0, 1], np.int64), np.array([0, 0], np.int64), np.zeros((0, 2), np.int64),
             np.array([[0.0, np.log(3.0), NEG_INF]]), np.zeros((0, 3, 3)),
             np.zeros(0, np.int64))
    adj = adjacency(batch)
    messages, _, _ = run_bp(batch, adj, False)
    node, _, logz = beliefs(batch, adj, messages)
    np.testing.assert_allclose(logz, [np.log(4.0)])
    np.testing.assert_allclose(node, [[0.25, 0.75, 0.0]])
    assert decode(batch, adj, messages)[0] == 1


def test_infeasible_sample_gives_zero_beliefs_and_minus_inf():
    # a 3-chain whose two tables forbid every pair through the middle label set,
    # next to a feasible single node
    table = np.array([[NEG_INF, 0.0], [NEG_INF, 0.0]])  # middle must be 1
    table2 = np.array([[0.0, 0.0], [NEG_INF, NEG_INF]])  # middle must be 0
    batch = (np.array([0, 3, 4], np.int64), np.array([0, 2, 2], np.int64),
             np.array([[0, 1], [1, 2]], np.int64), np.zeros((4, 2)),
             np.array([table, table2]), np.array([0, 1], np.int64))
    adj = adjacency(batch)
    for damping in (0.0, 0.5):
        for use_max in (False, True):
            messages, _, converged = run_bp(batch, adj, use_max, damping=damping)
            assert converged.all()
            assert not np.isnan(messages).any()
        node, edge, logz = beliefs(batch, adj, messages)
        assert logz[0] == NEG_INF
        np.testing.assert_allclose(logz[1], np.log(2.0))
        np.testing.assert_array_equal(node[:3], 0.0)
        np.testing.assert_array_equal(edge, 0.0)
        np.testing.assert_allclose(node[3], 0.5)


def test_empty_batch_member_only():
    batch = (np.array([0, 0], np.int64), np.array([0, 0], np.int64), np.zeros((0, 2), np.int64),
             np.zeros((0, 2)), np.zeros((0, 2, 2)), np.zeros(0, np.int64))
    adj = adjacency(batch)
    messages, n_iter, converged = run_bp(batch, adj, False)
    _, _, logz = beliefs(batch, adj, messages)
    assert converged.all() and n_iter[0] == 0
    np.testing.assert_array_equal(logz, [0.0])
