"""Shared scaffolding of the message-passing kernel tests: random batches in the raw
kernel format and a brute-force reference."""

import itertools

import numpy as np
from hypothesis import strategies as st

from skstruct._core._graph import Adjacency, build_adjacency

NEG_INF = -np.inf
FOREST_KINDS = ("empty", "single", "chain", "index_chain", "tree", "forest")
LOOPY_KINDS = ("cycle4", "complete", "random")


def random_graph(rng, kind):
    """Number of nodes and local edge list (m, 2) of a random graph of ``kind``."""
    if kind == "empty":
        return 0, np.zeros((0, 2), np.int64)
    if kind == "single":
        return 1, np.zeros((0, 2), np.int64)
    if kind == "index_chain":
        n = int(rng.integers(2, 7))
        return n, np.array([[i, i + 1] for i in range(n - 1)], np.int64)
    if kind == "cycle4":
        n = 4
        perm = rng.permutation(n)
        pairs = [(perm[i], perm[(i + 1) % n]) for i in range(n)]
    elif kind == "complete":
        n = int(rng.integers(3, 6))
        pairs = list(itertools.combinations(range(n), 2))
    elif kind == "random":
        n = int(rng.integers(3, 7))
        perm = rng.permutation(n)
        pairs = [(perm[0], perm[1]), (perm[1], perm[2]), (perm[2], perm[0])]
        pairs += [p for p in itertools.combinations(range(n), 2)
                  if rng.random() < 0.4 and p not in pairs and p[::-1] not in pairs]
    else:
        n = int(rng.integers(2, 7))
        perm = rng.permutation(n)
        pairs = []
        for i in range(1, n):
            if kind == "chain":
                pairs.append((perm[i - 1], perm[i]))
            elif kind == "tree" or rng.random() < 0.7:  # forest: some new roots
                pairs.append((perm[int(rng.integers(0, i))], perm[i]))
    edges = np.array(pairs, np.int64).reshape(-1, 2)
    flip = rng.random(len(edges)) < 0.5
    edges[flip] = edges[flip][:, ::-1]
    return n, edges[rng.permutation(len(edges))]


def build_batch(rng, kinds, n_labels, shared, p_ninf):
    """Pack random samples into the batch layout; also return them one by one."""
    samples = []
    shared_table = rng.normal(size=(1, n_labels, n_labels))
    for kind in kinds:
        n, edges = random_graph(rng, kind)
        unary = rng.normal(size=(n, n_labels))
        if shared:
            tables = shared_table.copy()
            pwi = np.zeros(len(edges), np.int64)
        else:
            tables = rng.normal(size=(len(edges), n_labels, n_labels))
            pwi = np.arange(len(edges), dtype=np.int64)
        if p_ninf > 0:
            unary[rng.random(unary.shape) < p_ninf] = NEG_INF
            tables[rng.random(tables.shape) < p_ninf] = NEG_INF
            if shared:
                shared_table = tables
        samples.append({"kind": kind, "n": n, "edges": edges, "unary": unary,
                        "tables": tables, "pwi": pwi})
    node_offsets = np.cumsum([0] + [s["n"] for s in samples]).astype(np.int64)
    edge_offsets = np.cumsum([0] + [len(s["edges"]) for s in samples]).astype(np.int64)
    edges = np.concatenate([s["edges"] + node_offsets[i] for i, s in enumerate(samples)])
    unary = np.concatenate([s["unary"] for s in samples]).reshape(-1, n_labels)
    if shared:
        pairwise = shared_table
        pw_index = np.zeros(len(edges), np.int64)
    else:
        pairwise = np.concatenate([s["tables"] for s in samples]).reshape(-1, n_labels, n_labels)
        pw_index = np.arange(len(edges), dtype=np.int64)
    for s in samples:
        s["tables"] = [pairwise[0] if shared else t for t in s["tables"][s["pwi"]]]
    batch = (node_offsets, edge_offsets, edges.astype(np.int64).reshape(-1, 2), unary,
             np.ascontiguousarray(pairwise), pw_index)
    return batch, samples


def adjacency(batch):
    """The batch's ``Adjacency`` plus the all-True sample mask the kernels take next."""
    active = np.ones(batch[0].shape[0] - 1, np.bool_)
    off, edge, nbr, side = build_adjacency(batch[3].shape[0], batch[2])
    return Adjacency(offsets=off, edge=edge, nbr=nbr, side=side), active


def brute_force(sample, n_labels):
    """Exhaustive max score, log partition and exact node / edge marginals."""
    n, edges, unary, tables = sample["n"], sample["edges"], sample["unary"], sample["tables"]
    labs = np.array(list(itertools.product(range(n_labels), repeat=n)), np.int64)
    labs = labs.reshape(n_labels**n, n)
    scores = np.zeros(len(labs))
    for v in range(n):
        scores += unary[v, labs[:, v]]
    for e, (u, v) in enumerate(edges):
        scores += tables[e][labs[:, u], labs[:, v]]
    best = scores.max()
    node_marg = np.zeros((n, n_labels))
    edge_marg = np.zeros((len(edges), n_labels, n_labels))
    if best == NEG_INF:
        return best, NEG_INF, node_marg, edge_marg
    p = np.exp(scores - best)
    z = p.sum()
    p /= z
    for v in range(n):
        np.add.at(node_marg[v], labs[:, v], p)
    for e, (u, v) in enumerate(edges):
        np.add.at(edge_marg[e], (labs[:, u], labs[:, v]), p)
    return best, best + np.log(z), node_marg, edge_marg


def labelling_score(sample, labels):
    total = 0.0
    for v in range(sample["n"]):
        total += sample["unary"][v, labels[v]]
    for e, (u, v) in enumerate(sample["edges"]):
        total += sample["tables"][e][labels[u], labels[v]]
    return total


def assert_close(actual, expected, atol, rtol=0.0):
    """Equal -inf, or both finite and close."""
    if expected == NEG_INF:
        assert actual == NEG_INF, (actual, expected)
    else:
        assert np.isfinite(actual), (actual, expected)
        assert abs(actual - expected) <= atol + rtol * abs(expected), (actual, expected)


batch_strategy = {
    "seed": st.integers(0, 2**32 - 1),
    "n_labels": st.integers(1, 3),
    "shared": st.booleans(),
    "p_ninf": st.sampled_from([0.0, 0.0, 0.1, 0.3]),
}


def reversed_batch(rng, batch):
    """The same models with a random half of the edges reversed and their
    matrices transposed; returns ``(batch2, flip)``."""
    node_offsets, edge_offsets, edges, unary, pairwise, pw_index = batch
    flip = rng.random(len(edges)) < 0.5
    edges2 = edges.copy()
    edges2[flip] = edges[flip][:, ::-1]
    pairwise2 = np.ascontiguousarray(np.concatenate([pairwise, pairwise.transpose(0, 2, 1)]))
    pw_index2 = pw_index + len(pairwise) * flip
    return (node_offsets, edge_offsets, edges2, unary, pairwise2, pw_index2), flip
