"""Exact oracles (enumeration, chain, forest) against brute force."""

import numpy as np
import pytest
from hypothesis import given, settings

from skstruct.inference import (
    chain_edges,
    forward_backward,
    map_inference,
    marginal_inference,
    max_marginals,
    viterbi,
)
from tests.brute import brute_force, close_or_both_neginf, score_of
from tests.strategies import models

# random models with -inf scores are often infeasible on purpose; the warning
# itself is tested in test_reporting.py
pytestmark = pytest.mark.filterwarnings(
    "ignore::skstruct.inference.InfeasibilityWarning")

SETTINGS = settings(max_examples=150, deadline=None)


@SETTINGS
@given(models(kind="chain"))
def test_viterbi_and_forward_backward_match_brute_force(model):
    unary, edges, pairwise = model
    best, logz, node, edge, mm = brute_force(unary, edges, pairwise)
    labels, score = viterbi(unary, pairwise)
    assert close_or_both_neginf(score, best)
    if np.isfinite(best):
        assert np.isclose(score_of(unary, edges, pairwise, labels), best)
    n, e, z = forward_backward(unary, pairwise)
    assert close_or_both_neginf(z, logz)
    np.testing.assert_allclose(n, node, atol=1e-9)
    np.testing.assert_allclose(e, edge, atol=1e-9)
    assert e.shape == (max(unary.shape[0] - 1, 0), unary.shape[1], unary.shape[1])


@SETTINGS
@given(models(kind="tree"))
def test_forest_oracles_match_brute_force(model):
    unary, edges, pairwise = model
    best, logz, node, edge, mm = brute_force(unary, edges, pairwise)
    for method in ("tree", "exact", "auto"):
        labels, bound = map_inference(unary, edges, pairwise, method=method, return_bound=True)
        assert close_or_both_neginf(bound, best)
        if np.isfinite(best):
            assert np.isclose(score_of(unary, edges, pairwise, labels), best)
    for method in ("tree", "exact", "auto"):
        n, e, z = marginal_inference(unary, edges, pairwise, method=method)
        assert close_or_both_neginf(z, logz)
        np.testing.assert_allclose(n, node, atol=1e-9)
        np.testing.assert_allclose(e, edge, atol=1e-9)
    np.testing.assert_array_equal(np.isneginf(max_marginals(unary, edges, pairwise)),
                                  np.isneginf(mm))
    assert close_or_both_neginf(max_marginals(unary, edges, pairwise), mm)


@SETTINGS
@given(models(kind="loopy", max_nodes=5))
def test_exact_enumeration_on_loopy_graphs(model):
    unary, edges, pairwise = model
    best, logz, node, edge, _ = brute_force(unary, edges, pairwise)
    labels, bound = map_inference(unary, edges, pairwise, method="exact", return_bound=True)
    assert close_or_both_neginf(bound, best)
    n, e, z = marginal_inference(unary, edges, pairwise, method="exact")
    assert close_or_both_neginf(z, logz)
    np.testing.assert_allclose(n, node, atol=1e-9)
    np.testing.assert_allclose(e, edge, atol=1e-9)


@SETTINGS
@given(models(kind="chain"))
def test_chain_max_marginals(model):
    unary, edges, pairwise = model
    *_, mm = brute_force(unary, edges, pairwise)
    out = max_marginals(unary, chain_edges(unary.shape[0]), pairwise)
    assert close_or_both_neginf(out, mm)


@SETTINGS
@given(models(kind="tree", allow_neginf=False, per_edge=True))
def test_reversing_an_edge_and_transposing_its_matrix_changes_nothing(model):
    unary, edges, pairwise = model
    if len(edges) == 0:
        return
    rev = edges.copy()
    rev[0] = rev[0, ::-1]
    pw = pairwise.copy()
    pw[0] = pw[0].T
    l1, b1 = map_inference(unary, edges, pairwise, return_bound=True)
    l2, b2 = map_inference(unary, rev, pw, return_bound=True)
    assert np.isclose(b1, b2)
    n1, e1, z1 = marginal_inference(unary, edges, pairwise)
    n2, e2, z2 = marginal_inference(unary, rev, pw)
    assert np.isclose(z1, z2)
    np.testing.assert_allclose(n1, n2, atol=1e-10)
    np.testing.assert_allclose(e1[0], e2[0].T, atol=1e-10)
    np.testing.assert_allclose(e1[1:], e2[1:], atol=1e-10)


def test_forward_backward_wide_dynamic_range_uses_exact_fallback():
    # the only feasible path runs through a transition scored -1000: scaled
    # probabilities underflow there, the log-space fallback must take over
    K = 3
    unary = np.array([[0.0, -np.inf, -np.inf], [-np.inf, 0.0, -np.inf], [0.0, 0.0, 0.0]])
    pairwise = np.zeros((K, K))
    pairwise[0, 1] = -1000.0
    best, logz, node, edge, _ = brute_force(unary, chain_edges(3), pairwise)
    n, e, z = forward_backward(unary, pairwise)
    assert np.isclose(z, logz) and np.isclose(z, -1000 + np.log(3))
    np.testing.assert_allclose(n, node, atol=1e-12)
    np.testing.assert_allclose(e, edge, atol=1e-12)


def test_infeasible_chain_is_finite_or_neginf():
    unary = np.array([[0.0, -np.inf], [-np.inf, 0.0]])
    pairwise = np.array([[0.0, -np.inf], [0.0, 0.0]])
    labels, score = viterbi(unary, pairwise)
    assert score == -np.inf and labels.shape == (2,)
    n, e, z = forward_backward(unary, pairwise)
    assert z == -np.inf
    assert np.all(n == 0) and np.all(e == 0)


@pytest.mark.parametrize("T", [1, 2, 7])
def test_single_state(T):
    unary = np.arange(T, dtype=float)[:, None]
    pairwise = np.array([[0.5]])
    labels, score = viterbi(unary, pairwise)
    assert np.all(labels == 0) and np.isclose(score, unary.sum() + 0.5 * (T - 1))
    n, e, z = forward_backward(unary, pairwise)
    assert np.isclose(z, score) and np.all(n == 1) and np.all(e == 1)


def test_single_node_graph():
    unary = np.array([[0.0, 2.0, 1.0]])
    for method in ("exact", "tree", "chain", "trws", "max-product", "auto"):
        labels = map_inference(unary, np.zeros((0, 2), int), np.zeros((3, 3)), method=method)
        assert labels.tolist() == [1]
    n, e, z = marginal_inference(unary, np.zeros((0, 2), int), np.zeros((3, 3)))
    assert np.isclose(z, np.log(np.exp(unary).sum())) and e.shape == (0, 3, 3)


def test_long_chain_matches_log_space_reference():
    rng = np.random.default_rng(0)
    T, K = 2000, 5
    unary = rng.normal(size=(T, K)) * 3
    pairwise = rng.normal(size=(K, K)) * 3
    _, _, z = forward_backward(unary, pairwise)
    alpha = unary[0]
    for t in range(1, T):
        alpha = np.logaddexp.reduce(alpha[:, None] + pairwise, axis=0) + unary[t]
    assert np.isclose(z, np.logaddexp.reduce(alpha), rtol=1e-12)
