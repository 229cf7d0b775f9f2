"""The one-chain API validates its scores once, in one pass, without copying them."""

import warnings

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from hypothesis.extra import numpy as hnp

from skstruct._core import _scan
from skstruct._core._validation import scan_scores
from skstruct.inference import (
    GraphBatch,
    InfeasibilityWarning,
    _chain,
    forward_backward,
    map_batch,
    marginals_batch,
    viterbi,
)


def _reference_scan(a):
    finite = a[np.isfinite(a)]
    return (float(np.abs(finite).max()) if finite.size else 0.0), bool(np.isneginf(a).any())


CASES = {
    "normal": np.random.default_rng(0).normal(size=(7, 5)),
    "constraints": np.where(np.random.default_rng(1).random((6, 4)) < 0.3, -np.inf,
                            np.random.default_rng(2).normal(scale=1e3, size=(6, 4))),
    "all -inf": np.full((3, 2), -np.inf),
    "negative largest": np.array([[-7.5, 2.0], [-np.inf, 3.0]]),
    "tiny and signed zeros": np.array([[5e-324, -0.0], [0.0, -2e-310]]),
    "huge": np.array([[1.7e308, -1.79e308], [-np.inf, 0.0]]),
    "integers": np.arange(12).reshape(3, 4) - 6,
    "booleans": np.eye(3, dtype=bool),
    "strided": np.random.default_rng(3).normal(size=(5, 8))[:, ::3],
    "float32": np.random.default_rng(4).normal(size=(4, 4)).astype(np.float32),
}


@pytest.mark.parametrize("name", sorted(CASES))
def test_one_pass_scan_matches_numpy(name):
    a = CASES[name]
    out, largest, constrained = scan_scores(a, "x", 2)
    ref = np.asarray(a, dtype=np.float64)
    np.testing.assert_array_equal(out, ref)
    assert out.flags.c_contiguous and out.dtype == np.float64
    assert (largest, constrained) == _reference_scan(ref)


@pytest.mark.parametrize("bad, what", [(np.nan, "NaN"), (np.inf, r"\+inf")])
def test_the_first_bad_entry_is_named(bad, what):
    u = np.zeros((5, 3))
    u[3, 2] = bad
    u[4, 0] = np.nan  # a later one is not the one reported
    with pytest.raises(ValueError, match=rf"unary contains {what} \(first at unary\[3, 2\]"):
        viterbi(u, np.zeros((3, 3)))
    p = np.zeros((4, 3, 3))
    p[2, 0, 1] = bad
    with pytest.raises(ValueError, match=rf"pairwise contains {what} \(first at "
                                         r"pairwise\[2, 0, 1\]"):
        forward_backward(np.zeros((5, 3)), p)
    with pytest.raises(ValueError, match=rf"pairwise contains {what} \(first at "
                                         r"pairwise\[1, 0\]"):
        viterbi(np.zeros((5, 3)), p[2].T)


def test_scores_too_large_are_refused_with_constraints_present():
    u = np.full((4, 2), 1e300)
    u[0, 0] = -np.inf
    with pytest.raises(ValueError, match=r"max \|unary\| = 1e\+300 over 4 nodes"):
        viterbi(u, np.zeros((2, 2)))
    with pytest.raises(ValueError, match="scores too large"):
        map_batch(GraphBatch.from_chains([4]), u, np.zeros((2, 2)))


def _spy(monkeypatch, module, name):
    calls = []
    original = getattr(module, name)

    def spy(*args):
        calls.append(args)
        return original(*args)

    monkeypatch.setattr(module, name, spy)
    return calls


@pytest.mark.parametrize("per_edge", [False, True])
def test_contiguous_scores_reach_the_kernel_uncopied_and_are_scanned_once(monkeypatch,
                                                                           per_edge):
    rng = np.random.default_rng(5)
    T, K = 9, 4
    unary = rng.normal(size=(T, K))
    pairwise = rng.normal(size=(T - 1, K, K) if per_edge else (K, K))
    scans = _spy(monkeypatch, _scan, "scan_bits")
    vit = _spy(monkeypatch, _chain, "viterbi_chain")
    fb = _spy(monkeypatch, _chain, "forward_backward_chain")

    labels, score = viterbi(unary, pairwise)
    assert len(vit) == 1 and len(scans) == 2  # unary and pairwise, one pass each
    assert vit[0][0] is unary and np.shares_memory(vit[0][1], pairwise)
    assert np.shares_memory(scans[0][0], unary) and np.shares_memory(scans[1][0], pairwise)

    node, edge, logz = forward_backward(unary, pairwise)
    assert len(fb) == 1 and len(scans) == 4
    assert fb[0][0] is unary and np.shares_memory(fb[0][1], pairwise)

    # the same results as the batch oracles on a one-chain batch
    batch = GraphBatch.from_chains([T])
    ref_labels, ref_score = map_batch(batch, unary, pairwise, method="chain",
                                      return_bound=True)
    np.testing.assert_array_equal(labels, ref_labels)
    assert score == pytest.approx(ref_score[0], rel=1e-12)
    ref_node, ref_edge, ref_logz = marginals_batch(batch, unary, pairwise, method="chain")
    np.testing.assert_allclose(node, ref_node, atol=1e-12)
    np.testing.assert_allclose(edge, ref_edge, atol=1e-12)
    assert logz == pytest.approx(ref_logz[0], rel=1e-12)


def test_other_inputs_are_converted_once():
    rng = np.random.default_rng(6)
    u64 = rng.normal(size=(6, 3))
    ref_labels, ref_score = viterbi(u64, np.eye(3))
    for u, p in [(np.asfortranarray(u64), np.eye(3)), (u64.tolist(), np.eye(3, dtype=int)),
                 (u64.astype(np.float32).astype(np.float64), np.eye(3, dtype=bool))]:
        labels, score = viterbi(u, p)
        assert labels.tolist() == ref_labels.tolist() and score == pytest.approx(ref_score)


@pytest.mark.parametrize("T", [0, 1, 2])
def test_short_chains(T):
    u = np.arange(T * 3, dtype=float).reshape(T, 3)
    labels, score = viterbi(u, np.zeros((3, 3)))
    assert labels.tolist() == [2] * T and score == pytest.approx(u[:, 2].sum())
    node, edge, logz = forward_backward(u, np.zeros((max(T - 1, 0), 3, 3)))
    assert node.shape == (T, 3) and edge.shape == (max(T - 1, 0), 3, 3)
    if T:
        np.testing.assert_allclose(node.sum(1), 1.0)
        assert logz == pytest.approx(np.log(np.exp(u).sum(1)).sum())
    else:
        assert logz == 0.0


def test_infeasible_chain_warns_at_the_callers_line():
    u = np.zeros((3, 2))
    p = np.full((2, 2), -np.inf)  # no transition is allowed
    for f in (viterbi, forward_backward):
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            out = f(u, p)
        assert out[-1] == -np.inf
        assert [w.category for w in caught] == [InfeasibilityWarning]
        assert caught[0].filename == __file__


@settings(max_examples=200, deadline=None)
@given(hnp.arrays(np.float64, hnp.array_shapes(min_dims=2, max_dims=2, max_side=6),
                  elements=st.floats(allow_nan=True, allow_infinity=True)))
def test_one_pass_scan_against_numpy_on_any_doubles(a):
    bad = np.isnan(a) | np.isposinf(a)
    if bad.any():
        r, c = np.unravel_index(int(np.flatnonzero(bad.ravel())[0]), a.shape)
        with pytest.raises(ValueError, match=rf"first at x\[{r}, {c}\]"):
            scan_scores(a, "x", 2)
    else:
        out, largest, constrained = scan_scores(a, "x", 2)
        assert out is a
        assert (largest, constrained) == _reference_scan(a)
