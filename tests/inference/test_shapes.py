"""Message updates in O(K) for Potts and truncated tables: each shape is recognised
exactly, each update equals the dense one (brute force over the table), and TRW-S,
max-product and loopy BP leave the same messages, bounds and labels as with the dense
updates."""

import warnings

import numpy as np
import pytest
from scipy.special import logsumexp

from skstruct.inference import GraphBatch, map_batch, map_inference, marginals_batch
from skstruct.inference._shapes import (
    DENSE,
    LINEAR,
    POTTS,
    QUADRATIC,
    shaped_logsumexp,
    shaped_maxplus,
    table_shapes,
)

NEG_INF = -np.inf


def distances(K):
    return np.abs(np.arange(K)[:, None] - np.arange(K)[None, :])


def potts(K, d, o):
    return np.where(distances(K) == 0, d, o).astype(float)


def truncated(K, c, w, cut, power):
    return c - np.minimum(w * distances(K) ** power, cut)


def grid(h, w):
    idx = np.arange(h * w).reshape(h, w)
    return np.vstack([np.stack([idx[:, :-1].ravel(), idx[:, 1:].ravel()], 1),
                      np.stack([idx[:-1].ravel(), idx[1:].ravel()], 1)]).astype(np.int64)


def test_each_shape_is_recognised_with_its_parameters():
    K = 7
    tables = np.stack([potts(K, 1.0, -2.0), potts(K, -1.0, 3.0), truncated(K, 0.5, 1.5, 4.0, 1),
                       truncated(K, 0.0, 0.5, 30.0, 1), truncated(K, 2.0, 0.7, 5.0, 2),
                       np.random.default_rng(0).normal(size=(K, K))])
    shapes = table_shapes(tables)
    assert shapes[:, 0].tolist() == [POTTS, POTTS, LINEAR, LINEAR, QUADRATIC, DENSE]
    assert np.allclose(shapes[0, 1:3], [1.0, -2.0]) and np.allclose(shapes[2, 1:], [0.5, 1.5, 4.0])
    assert np.allclose(shapes[4, 1:], [2.0, 0.7, 5.0])
    # a table that is nearly, but not, of a shape is dense
    almost = truncated(K, 0.0, 1.0, 3.0, 1)
    almost[2, 5] += 1e-6
    assert table_shapes(almost[None]) is None
    # -inf entries, and two labels, are left to the dense update
    forbidding = potts(K, 0.0, -1.0)
    forbidding[0, 1] = NEG_INF
    assert table_shapes(forbidding[None]) is None
    assert table_shapes(potts(2, 1.0, 0.0)[None]) is None
    assert table_shapes(tables, "dense") is None


def test_a_declared_shape_is_checked():
    K = 5
    tables = np.stack([potts(K, 0.0, -1.0), truncated(K, 0.0, 1.0, 2.0, 1)])
    assert table_shapes(tables, "truncated_linear")[:, 0].tolist() == [POTTS, LINEAR]
    with pytest.raises(ValueError, match="structure='potts' declares every pairwise table "
                       "potts, but table 1 is truncated linear"):
        table_shapes(tables, "potts")
    with pytest.raises(ValueError, match="table 1 is truncated linear"):
        map_inference(np.zeros((4, K)), grid(2, 2), tables, pw_index=np.array([0, 1, 0, 1]),
                      structure="truncated_quadratic")
    with pytest.raises(ValueError, match="structure must be one of"):
        map_inference(np.zeros((4, K)), grid(2, 2), tables[0], structure="l1")


@pytest.mark.parametrize("K", [3, 8, 16, 40])
def test_each_update_equals_the_dense_one(K):
    rng = np.random.default_rng(K)
    for _ in range(60):
        tables = [potts(K, rng.normal(), rng.normal()),
                  truncated(K, rng.normal(), rng.uniform(0, 3), rng.uniform(0, 40), 1),
                  truncated(K, rng.normal(), rng.uniform(0, 3), rng.uniform(0, 400), 2),
                  # truncation within a label or two: the banded update
                  truncated(K, 0.0, rng.uniform(5, 10), rng.uniform(5, 20), 1),
                  truncated(K, 0.0, rng.uniform(5, 10), rng.uniform(5, 40), 2)]
        for T in tables:
            shapes = table_shapes(T[None])
            assert shapes is not None
            h = rng.normal(scale=5.0, size=K)
            h[rng.random(K) < 0.25] = NEG_INF
            out = np.empty(K)
            shaped_maxplus(h, int(shapes[0, 0]), *shapes[0, 1:], out, np.empty(2 * K + 1))
            with np.errstate(invalid="ignore"):
                ref = (h[:, None] + T).max(axis=0)
            assert np.array_equal(np.isfinite(out), np.isfinite(ref))
            assert np.allclose(out[np.isfinite(ref)], ref[np.isfinite(ref)], rtol=0,
                               atol=1e-9)
            if shapes[0, 0] == POTTS:
                assert shaped_logsumexp(h, POTTS, shapes[0, 1], shapes[0, 2], out,
                                        np.empty(2 * K + 1))
                ref = logsumexp(h[:, None] + T, axis=0)
                assert np.allclose(out[np.isfinite(ref)], ref[np.isfinite(ref)], atol=1e-9)
    # every label ruled out: every output is -inf
    out = np.zeros(K)
    shaped_maxplus(np.full(K, NEG_INF), LINEAR, 0.0, 1.0, 2.0, out, np.empty(2 * K + 1))
    assert np.all(out == NEG_INF)


def stereo_like(rng, side, K, kind, per_edge):
    edges = grid(side, side)
    truth = rng.integers(K, size=(side, side))
    unary = -np.abs(np.arange(K)[None] - truth.reshape(-1, 1)) + rng.normal(size=(side ** 2, K))
    unary[rng.random(unary.shape) < 0.05] = NEG_INF
    unary[np.arange(side ** 2), truth.ravel()] = 0.0
    base = {"potts": potts(K, 0.0, -1.0), "linear": truncated(K, 0.0, 1.0, 3.0, 1),
            "quadratic": truncated(K, 0.0, 0.5, 4.0, 2)}[kind]
    if per_edge:
        return unary, edges, rng.uniform(0.2, 2.0, size=(len(edges), 1, 1)) * base
    return unary, edges, base


@pytest.mark.parametrize("kind", ["potts", "linear", "quadratic"])
@pytest.mark.parametrize("method", ["trws", "max-product"])
def test_message_passing_leaves_the_dense_messages(kind, method):
    rng = np.random.default_rng(1)
    K = 6
    for per_edge in (False, True):
        unary, edges, pairwise = stereo_like(rng, 6, K, kind, per_edge)
        out = {}
        for structure in ("dense", "auto"):
            msgs = np.zeros((2 * len(edges), K))
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")
                labels, bound = map_inference(unary, edges, pairwise, method=method,
                                              max_iter=15, messages=msgs,
                                              structure=structure, return_bound=True)
            out[structure] = labels, bound, msgs
        (la, ba, ma), (lb, bb, mb) = out["dense"], out["auto"]
        assert np.array_equal(np.isfinite(ma), np.isfinite(mb))
        assert np.allclose(ma[np.isfinite(ma)], mb[np.isfinite(mb)], rtol=0, atol=1e-9)
        assert np.isclose(ba, bb, rtol=1e-12, atol=1e-9) and np.array_equal(la, lb)


def test_loopy_bp_with_potts_tables_leaves_the_dense_marginals():
    rng = np.random.default_rng(2)
    K = 5
    problems = [stereo_like(rng, 5, K, "potts", per_edge) for per_edge in (False, True)]
    batch = GraphBatch.from_graphs([25, 25], [p[1] for p in problems])
    unary = np.vstack([p[0] for p in problems])
    tables = [np.broadcast_to(p[2], (len(p[1]), K, K)) for p in problems]
    pairwise = np.vstack(tables)
    res = {}
    for structure in ("dense", "auto"):
        msgs = np.zeros((2 * batch.n_edges, K))
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            res[structure] = marginals_batch(batch, unary, pairwise, max_iter=30,
                                             messages=msgs, structure=structure) + (msgs,)
    for a, b in zip(res["dense"], res["auto"]):
        fin = np.isfinite(a)
        assert np.array_equal(fin, np.isfinite(b)) and np.allclose(a[fin], b[fin], atol=1e-9)


def test_map_batch_with_many_tables_and_pw_index():
    # a few tables shared by many edges, some of a shape and some not: each edge takes
    # its own table's update
    rng = np.random.default_rng(3)
    K = 8
    unary, edges, _ = stereo_like(rng, 8, K, "potts", False)
    tables = np.stack([potts(K, 0.0, -1.5), truncated(K, 0.0, 1.0, 3.0, 1),
                       rng.normal(size=(K, K)), truncated(K, 0.0, 0.3, 5.0, 2)])
    pw_index = rng.integers(4, size=len(edges))
    batch = GraphBatch.from_graphs([64], [edges])
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        dense = map_batch(batch, unary, tables, pw_index, method="trws", max_iter=20,
                          structure="dense", return_bound=True)
        auto = map_batch(batch, unary, tables, pw_index, method="trws", max_iter=20,
                         return_bound=True)
    assert np.array_equal(dense[0], auto[0]) and np.isclose(dense[1][0], auto[1][0])
