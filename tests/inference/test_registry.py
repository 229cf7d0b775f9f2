"""The registry of inference methods: every method listed, and what each says it can do
checked against what it does (brute force on small graphs)."""

import re
import warnings
from pathlib import Path

import numpy as np
import pytest

from skstruct._core._decoders import BY_CODE, METHODS
from skstruct.inference import (
    GraphBatch,
    available_methods,
    chain_edges,
    map_batch,
    map_inference,
    marginal_inference,
    marginals_batch,
)
from skstruct.models._base import INFERENCE_METHODS
from tests.brute import all_scores, brute_force, score_of

ROOT = Path(__file__).resolve().parents[2]
NEG_INF = -np.inf


def random_graph(rng, kind, n):
    """Edges of a random graph of ``n`` nodes: a chain, a forest (a random tree with
    some edges dropped) or a graph with cycles (``n >= 3``)."""
    if kind == "chain":
        return chain_edges(n)
    if kind == "forest":
        edges = np.array([[rng.integers(i), i] for i in range(1, n)], np.int64).reshape(-1, 2)
        keep = rng.random(len(edges)) < 0.8
        edges = edges[keep]
        # either orientation: an edge's direction does not make it less of a tree
        flip = rng.random(len(edges)) < 0.5
        edges[flip] = edges[flip][:, ::-1]
        return edges
    pairs = np.array([(a, b) for a in range(n) for b in range(a + 1, n)], np.int64)
    cycle = np.array([[0, 1], [1, 2], [0, 2]], np.int64)
    extra = pairs[rng.random(len(pairs)) < 0.5]
    return np.unique(np.vstack([cycle, extra]), axis=0)


def graph_kinds(graphs):
    return {"chain": ("chain",), "forest": ("chain", "forest"),
            "any": ("chain", "forest", "loopy")}[graphs]


def supermodular(rng, n_edges, K):
    """Tables ``P[a, b] + P[a+1, b+1] >= P[a, b+1] + P[a+1, b]``: a penalty on the
    label distance ``-c |a - b|`` (convex in ``a - b``) plus a separable part."""
    labels = np.arange(K)
    distance = np.abs(labels[:, None] - labels[None, :])
    penalty = -rng.uniform(0.1, 1.5, size=(n_edges, 1, 1)) * distance
    return penalty + rng.normal(size=(n_edges, K, 1)) + rng.normal(size=(n_edges, 1, K))


def metric(rng, n_edges, K):
    """Tables whose energies (``-P``) are metrics: weighted truncated-linear label distances
    (Potts when the truncation is 1) plus a separable part, which the metric inequality
    does not see."""
    labels = np.arange(K)
    cut = rng.integers(1, K + 1, size=(n_edges, 1, 1))
    distance = np.minimum(np.abs(labels[:, None] - labels[None, :])[None], cut)
    penalty = -rng.uniform(0.1, 1.5, size=(n_edges, 1, 1)) * distance
    return penalty + rng.normal(size=(n_edges, K, 1)) + rng.normal(size=(n_edges, 1, K))


# what each method's tables must be, where it refuses others
TABLES = {"graphcut": supermodular, "expansion": metric, "swap": metric}


def problem(rng, method, kind, n, K):
    n = max(n, 3) if kind == "loopy" else n
    # roof duality is for two labels
    K = 2 if method == "qpbo" else K
    edges = random_graph(rng, kind, n)
    unary = rng.normal(size=(n, K))
    if method in TABLES:
        pairwise = TABLES[method](rng, len(edges), K)
    else:
        pairwise = rng.normal(scale=1.5, size=(len(edges), K, K))
    return unary, edges, pairwise


def test_available_methods_lists_the_registry():
    methods = available_methods()
    assert set(methods) == set(METHODS)
    assert {"chain", "tree", "exact", "trws", "max-product", "graphcut", "icm",
            "loopy", "ilp", "qpbo", "expansion", "swap"} <= set(methods)
    for name, caps in methods.items():
        m = METHODS[name]
        assert caps.graphs in ("chain", "forest", "any")
        assert caps.constraints in ("any", "unary", "none")
        assert caps.map == (m.map is not None) and caps.marginals == (m.marginals is not None)
        assert BY_CODE[m.code] is m
        # a learners' decoder decodes (MAP) and its kernel takes the code
        assert not caps.decoder or caps.map
    # "viterbi" is the chain method's algorithm, not a second name for it
    assert "viterbi" not in methods
    # the models accept the learners' decoders of the registry
    assert set(INFERENCE_METHODS) - {"auto"} <= {n for n, c in methods.items() if c.decoder}


def test_the_api_accepts_exactly_the_registrys_methods():
    rng = np.random.default_rng(0)
    batch = GraphBatch.from_chains([3])
    unary, pairwise = rng.normal(size=(3, 2)), np.eye(2)
    for name, caps in available_methods().items():
        if caps.map:
            assert map_batch(batch, unary, pairwise, method=name).shape == (3,)
        else:
            with pytest.raises(ValueError, match="method must be one of"):
                map_batch(batch, unary, pairwise, method=name)
        if caps.marginals:
            node = marginals_batch(batch, unary, pairwise, method=name)[0]
            assert np.allclose(node.sum(axis=1), 1)
        else:
            with pytest.raises(ValueError, match="method must be one of"):
                marginals_batch(batch, unary, pairwise, method=name)
    with pytest.raises(ValueError, match="method must be one of"):
        map_batch(batch, unary, pairwise, method="viterbi")


@pytest.mark.parametrize("name", [n for n, c in available_methods().items() if c.graphs != "any"])
def test_a_method_refuses_the_graphs_it_does_not_accept(name):
    triangle = np.array([[0, 1], [1, 2], [0, 2]])
    task = map_inference if available_methods()[name].map else marginal_inference
    with pytest.raises(ValueError, match=f"method='{name}' needs"):
        task(np.zeros((3, 2)), triangle, np.eye(2), method=name)


EXACT_MAP = [n for n, c in available_methods().items() if c.exact and c.map]
EXACT_MARGINALS = [n for n, c in available_methods().items() if c.exact and c.marginals]


@pytest.mark.parametrize("name", EXACT_MAP)
def test_exact_map_methods_match_enumeration(name):
    caps = available_methods()[name]
    rng = np.random.default_rng(1)
    for kind in graph_kinds(caps.graphs):
        for _ in range(8):
            n, K = int(rng.integers(2, 6)), int(rng.integers(2, 4))
            unary, edges, pairwise = problem(rng, name, kind, n, K)
            labels, bound, info = map_inference(unary, edges, pairwise, method=name,
                                                return_bound=True, return_info=True)
            best = all_scores(unary, edges, pairwise)[1].max()
            assert np.isclose(score_of(unary, edges, pairwise, labels), best)
            assert np.isclose(bound, best)
            assert info.certified[0] and info.gap[0] == 0


@pytest.mark.parametrize("name", EXACT_MARGINALS)
def test_exact_marginal_methods_match_enumeration(name):
    caps = available_methods()[name]
    rng = np.random.default_rng(2)
    for kind in graph_kinds(caps.graphs):
        for _ in range(6):
            n, K = int(rng.integers(2, 6)), int(rng.integers(2, 4))
            unary, edges, pairwise = problem(rng, name, kind, n, K)
            node, edge, logz, info = marginal_inference(unary, edges, pairwise, method=name,
                                                        return_info=True)
            _, logz_b, node_b, edge_b, _ = brute_force(unary, edges, pairwise)
            assert np.isclose(logz, logz_b)
            assert np.allclose(node, node_b, atol=1e-9)
            assert np.allclose(edge, edge_b, atol=1e-9)
            assert info.certified[0]


BOUNDED = [n for n, c in available_methods().items() if c.bound and c.map]


@pytest.mark.parametrize("name", BOUNDED)
def test_a_bound_is_an_upper_bound_on_the_optimum(name):
    caps = available_methods()[name]
    rng = np.random.default_rng(3)
    for kind in graph_kinds(caps.graphs):
        for _ in range(8):
            n, K = int(rng.integers(2, 6)), int(rng.integers(2, 4))
            unary, edges, pairwise = problem(rng, name, kind, n, K)
            labels, bound, info = map_inference(unary, edges, pairwise, method=name,
                                                max_iter=50, return_bound=True,
                                                return_info=True)
            best = all_scores(unary, edges, pairwise)[1].max()
            score = score_of(unary, edges, pairwise, labels)
            assert bound >= best - 1e-9 * max(1.0, abs(best))
            assert np.isclose(info.gap[0], bound - score) or info.gap[0] == 0
            # certified means proven optimal
            if info.certified[0]:
                assert np.isclose(score, best)


def test_a_method_without_a_bound_reports_none():
    for name, caps in available_methods().items():
        if caps.map and not caps.bound:
            unary, edges, pairwise = problem(np.random.default_rng(4), name, "loopy", 5, 3)
            _, bound, info = map_inference(unary, edges, pairwise, method=name,
                                           return_bound=True, return_info=True)
            assert bound == np.inf and info.gap[0] == np.inf and not info.certified[0]


def constrained_problem(rng, kind, n, K, pairs):
    """Random scores with forbidden labels (``-inf`` unary) and, with ``pairs``, forbidden
    label pairs; about half of these problems are feasible."""
    n = max(n, 3) if kind == "loopy" else n
    edges = random_graph(rng, kind, n)
    unary = rng.normal(size=(n, K))
    unary[rng.random((n, K)) < 0.3] = NEG_INF
    unary[np.arange(n), rng.integers(K, size=n)] = rng.normal(size=n)
    pairwise = rng.normal(size=(len(edges), K, K))
    if pairs:
        pairwise[rng.random(pairwise.shape) < 0.35] = NEG_INF
    return unary, edges, pairwise


@pytest.mark.parametrize("name", [n for n, c in available_methods().items()
                                  if c.map and c.constraints != "none"])
def test_methods_honour_the_constraints_they_take(name):
    caps = available_methods()[name]
    rng = np.random.default_rng(5)
    n_feasible = n_infeasible = 0
    for kind in graph_kinds(caps.graphs):
        for _ in range(12):
            n, K = int(rng.integers(2, 6)), int(rng.integers(2, 4))
            K = 2 if name == "qpbo" else K
            unary, edges, pairwise = constrained_problem(rng, kind, n, K,
                                                         caps.constraints == "any")
            n = unary.shape[0]
            if name in TABLES:
                pairwise = TABLES[name](rng, len(edges), K)
            feasible = all_scores(unary, edges, pairwise)[1].max() > NEG_INF
            # infeasible samples warn; what is checked here is what is reported
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")
                labels, info = map_inference(unary, edges, pairwise, method=name,
                                             return_info=True)
            score = score_of(unary, edges, pairwise, labels)
            if caps.exact or caps.constraints == "unary":
                # exact: the optimum; "unary" with finite tables: every node keeps an
                # allowed label
                assert (score > NEG_INF) == feasible
            # whatever the method, what it reports is true
            assert info.feasible[0] == (score > NEG_INF)
            n_feasible += feasible
            n_infeasible += not feasible
    assert n_feasible and (n_infeasible or caps.constraints == "unary")


def test_infeasibility_is_proven_by_the_exact_methods():
    # a chain (which every method accepts) whose middle node has no allowed label
    unary = np.zeros((3, 2))
    unary[1] = NEG_INF
    for name in EXACT_MAP:
        with pytest.warns(Warning, match="are infeasible"):
            labels, bound, info = map_inference(unary, chain_edges(3), np.eye(2), method=name,
                                                return_bound=True, return_info=True)
        assert bound == NEG_INF and not info.feasible[0] and info.certified[0]


# ------------------------------------------------------------------- ICM

@pytest.mark.parametrize("kind", ["chain", "forest", "loopy"])
def test_icm_reaches_a_labelling_no_single_node_change_improves(kind):
    rng = np.random.default_rng(6)
    for _ in range(20):
        n, K = int(rng.integers(2, 7)), int(rng.integers(2, 4))
        unary, edges, pairwise = problem(rng, "icm", kind, n, K)
        n = unary.shape[0]
        labels, info = map_inference(unary, edges, pairwise, method="icm", max_iter=1000,
                                     return_info=True)
        assert info.converged[0] and 1 <= info.n_iter[0] < 1000
        score = score_of(unary, edges, pairwise, labels)
        for v in range(n):
            for k in range(K):
                other = labels.copy()
                other[v] = k
                assert score_of(unary, edges, pairwise, other) <= score + 1e-12
        # it improves on where it starts: every node at its best unary label
        assert score >= score_of(unary, edges, pairwise, unary.argmax(axis=1)) - 1e-12


def test_icm_stops_at_max_iter_and_says_so():
    # two nodes repelling with a strong coupling: one sweep moves a node, the next is quiet
    unary = np.array([[1.0, 0.0], [1.0, 0.0]])
    repel = np.array([[-5.0, 0.0], [0.0, 0.0]])
    edges = np.array([[0, 1]])
    with pytest.warns(Warning, match=r"max_iter=1 iterations of 'icm'"):
        labels, info = map_inference(unary, edges, repel, method="icm", max_iter=1,
                                     return_info=True)
    assert info.n_iter[0] == 1 and not info.converged[0]
    labels, info = map_inference(unary, edges, repel, method="icm", return_info=True)
    assert info.converged[0] and info.n_iter[0] == 2 and labels.tolist() == [1, 0]


def test_icm_in_a_batch_matches_one_graph_at_a_time():
    rng = np.random.default_rng(7)
    problems = [problem(rng, "icm", kind, 5, 3) for kind in ("chain", "forest", "loopy")]
    batch = GraphBatch.from_graphs([5, 5, 5], [p[1] for p in problems])
    unary = np.vstack([p[0] for p in problems])
    pairwise = np.concatenate([p[2] for p in problems])
    labels = map_batch(batch, unary, pairwise, method="icm")
    for s, (u, e, p) in enumerate(problems):
        assert np.array_equal(labels[5 * s:5 * s + 5], map_inference(u, e, p, method="icm"))


def test_icm_loss_augmented_decodes_the_augmented_scores():
    rng = np.random.default_rng(8)
    unary, edges, pairwise = problem(rng, "icm", "loopy", 5, 3)
    batch = GraphBatch.from_graphs([5], [edges])
    y = rng.integers(3, size=5)
    from skstruct.inference import loss_augment

    assert np.array_equal(map_batch(batch, unary, pairwise, method="icm", y=y),
                          map_batch(batch, loss_augment(unary, y), pairwise, method="icm"))


# --------------------------------------------------------------- the docs' tables

def _table_rows(text, header):
    start = text.index(header)
    rows = {}
    for line in text[start:].splitlines()[2:]:
        if not line.startswith("|"):
            break
        cells = [c.strip() for c in line.strip("|").split("|")]
        name = re.fullmatch(r'`"([a-z-]+)"`(?: \(default\))?', cells[0])
        rows[name.group(1)] = cells[1:]
    return rows


def test_the_user_guides_table_lists_every_method_and_what_it_does():
    text = (ROOT / "doc/user_guide/inference.md").read_text()
    rows = _table_rows(text, "| `method` | MAP")
    assert set(rows) - {"auto"} == set(available_methods())
    for name, caps in available_methods().items():
        map_cell, marginal_cell = rows[name]
        assert (map_cell != "-") == caps.map, name
        assert (marginal_cell != "-") == caps.marginals, name


def test_the_readmes_table_lists_every_method():
    text = (ROOT / "README.md").read_text()
    for task, flag in (("map_inference", "map"), ("marginal_inference", "marginals")):
        line = next(x for x in text.splitlines() if x.startswith(f"| `{task}("))
        listed = set(re.findall(r'`"([a-z-]+)"`', line)) - {"auto"}
        assert listed == {n for n, c in available_methods().items() if getattr(c, flag)}


def test_the_architecture_pages_worked_example_is_the_real_entry():
    text = (ROOT / "doc/architecture.md").read_text()
    entry = text[text.index('Method("icm"'):]
    entry = entry[:entry.index(")\n")]
    icm = METHODS["icm"]
    for field, value in re.findall(r"(\w+)=([^,\s]+)", entry):
        if field != "summary":
            assert repr(getattr(icm, field)) == value.replace('"', "'"), field
    assert "ICM" in entry and icm.code == 7
