"""Hypothesis strategies for small random graphical models."""

import numpy as np
from hypothesis import strategies as st


@st.composite
def models(draw, kind="any", max_nodes=6, max_states=3, allow_neginf=True, per_edge=None):
    """(unary, edges, pairwise) of a small random chain, tree or loopy graph."""
    if kind == "any":
        kind = draw(st.sampled_from(["chain", "tree", "loopy"]))
    n = draw(st.integers(1, max_nodes))
    K = draw(st.integers(1, max_states))
    seed = draw(st.integers(0, 2**32 - 1))
    rng = np.random.default_rng(seed)
    if kind == "chain":
        edges = np.stack([np.arange(n - 1), np.arange(1, n)], axis=1)
    else:
        edges = [sorted((int(rng.integers(0, i)), i)) for i in range(1, n)]
        # drop some tree edges to make forests
        edges = [e for e in edges if rng.random() < 0.85]
        if kind == "loopy":
            pairs = [(a, b) for a in range(n) for b in range(a + 1, n)]
            extra = [p for p in pairs if list(p) not in edges and rng.random() < 0.5]
            edges = edges + [list(p) for p in extra]
        edges = np.array(edges, dtype=np.int64).reshape(-1, 2)
        flip = rng.random(len(edges)) < 0.5
        edges[flip] = edges[flip][:, ::-1]
        perm = rng.permutation(n)
        edges = perm[edges]
    scale = draw(st.sampled_from([0.1, 1.0, 5.0]))
    unary = rng.normal(size=(n, K)) * scale
    if per_edge is None:
        per_edge = draw(st.booleans())
    pairwise = rng.normal(size=(len(edges), K, K) if per_edge else (K, K)) * scale
    if allow_neginf and draw(st.booleans()):
        unary[rng.random(unary.shape) < 0.25] = -np.inf
        pairwise[rng.random(pairwise.shape) < 0.25] = -np.inf
    return unary, edges, pairwise
