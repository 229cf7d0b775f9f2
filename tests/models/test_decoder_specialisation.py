"""Designs decoded only by Viterbi, tree max-sum or enumeration run kernels compiled without
the other decoders (their scratch has no message array), and designs decoded by none of the
minimum cut, the ILP and QPBO kernels compiled without those (no ``cut`` array); those kernels
answer exactly as the general ones.  So does the decoders-only prediction kernel."""

import numpy as np
import pytest

from skstruct._core._decoders import CHAIN, EXACT, GRAPHCUT, TREE, TRWS
from skstruct.models import ChainModel, GraphModel, MultiLabelModel
from skstruct.models._oracle import SURROGATES, hinge_pass
from skstruct.models._predict import predict_labels
from skstruct.models._scratch import ALL_DECODERS, Decoders, Surrogates, scratch

TREE_EDGES = np.array([[0, 1], [0, 2], [2, 3]])
GRID_EDGES = np.array([[0, 1], [1, 3], [3, 2], [2, 0]])


def _graphs(edges, n, K, seed):
    rng = np.random.default_rng(seed)
    X = [(rng.normal(size=(n, 3)), edges) for _ in range(3)]
    y = [rng.integers(0, K, n) for _ in range(3)]
    y[0][:K] = np.arange(K)
    return X, y


def _design(kind):
    rng = np.random.default_rng(0)
    if kind == "chain":
        X = [rng.normal(size=(n, 3)) for n in (2, 4, 3)]
        y = [np.arange(n) % 3 for n in (2, 4, 3)]
        model = ChainModel()
    elif kind == "multilabel":
        X = rng.normal(size=(5, 3))
        y = (rng.normal(size=(5, 3)) > 0).astype(int)
        y[0], y[1] = 0, 1
        model = MultiLabelModel(edges="full")
    elif kind == "tree":
        (X, y), model = _graphs(TREE_EDGES, 4, 3, 1), GraphModel()
    elif kind == "loopy":
        (X, y), model = _graphs(GRID_EDGES, 4, 3, 2), GraphModel(inference_method="trws")
    else:
        (X, y), model = _graphs(GRID_EDGES, 4, 2, 3), GraphModel(submodular=True,
                                                              inference_method="graphcut")
    model.fit(X, y)
    design, _ = model.design(X, y)
    return design


@pytest.mark.parametrize("kind, decoders, common", [
    ("chain", {CHAIN}, True), ("tree", {TREE}, True), ("multilabel", {EXACT}, True),
    ("loopy", {TRWS}, False), ("graphcut", {GRAPHCUT}, False)])
def test_scratch_has_messages_only_for_the_other_decoders(kind, decoders, common):
    design = _design(kind)
    assert set(design.kind.tolist()) == decoders
    assert (scratch(design).msgs is None) == common
    assert (scratch(design, decode_only=True).msgs is None) == common
    # the groups of decoders flagged: exactly those the samples use
    sc = scratch(design)
    used = {"chain": "chain", "tree": "tree", "multilabel": "exact", "loopy": "trws",
            "graphcut": "cut"}[kind]
    assert [f for f in Decoders._fields if getattr(sc, "dec_" + f) is not None] == [used]


def _hinges(design, D, W, P, surrogate, general):
    S = design.batch.n_samples
    sc = scratch(design, surrogate=surrogate)
    assert sc.msgs is None
    if general:
        # a message array and every group's flag select the kernel compiled with every
        # decoder
        sc = sc._replace(msgs=np.zeros((1, design.n_classes)), **ALL_DECODERS,
                         **{"sur_" + f: np.zeros(1) for f in Surrogates._fields})
    hinge, ell = np.full(S, np.nan), np.full(S, np.nan)
    hinge_pass(D, SURROGATES[surrogate], 1.0, W, P, sc, design.max_nodes, design.max_edges,
               design.batch.chunks(2), hinge, ell)
    return hinge, ell, sc.lab.copy()


@pytest.mark.parametrize("kind", ["tree", "multilabel"])
def test_kernels_without_the_other_decoders_answer_as_the_general_ones(kind):
    design = _design(kind)
    rng = np.random.default_rng(4)
    W = rng.normal(size=(design.n_features_total, design.n_columns))
    P = rng.normal(size=(design.n_edge_features, design.n_classes, design.n_classes))
    P = np.ascontiguousarray(design.tables(P))
    N = design.batch.n_nodes
    D = design.args(design.y, rng.uniform(0.5, 2.0, N), 10)
    for surrogate in ("margin", "poslearn"):
        special = _hinges(design, D, W, P, surrogate, general=False)
        general = _hinges(design, D, W, P, surrogate, general=True)
        assert np.all(np.isfinite(special[0]))
        assert special[0].max() > 0  # random weights violate some margin
        for a, b in zip(special, general):
            np.testing.assert_array_equal(a, b)
    # prediction decodes in the same kernel with no loss added: the general kernel's MAP
    D0 = design.args(np.zeros(N, np.int64), np.zeros(N), 10)
    _, _, lab = _hinges(design, D0, W, P, "margin", general=True)
    np.testing.assert_array_equal(predict_labels(design, W, P, 10), lab)


@pytest.mark.parametrize("kind", ["tree", "multilabel", "loopy", "graphcut"])
def test_decoders_only_kernel_predicts_as_the_oracle(kind):
    """``predict_labels``' two kernels, on random weights: the same labels, and the
    loopy design's, decoded by TRW-S alone, equal to those of the kernel compiled with
    every decoder."""
    design = _design(kind)
    rng = np.random.default_rng(5)
    W = rng.normal(size=(design.n_features_total, design.n_columns))
    P = rng.normal(size=(design.n_edge_features, design.n_classes, design.n_classes))
    if kind == "graphcut":
        # a minimum cut needs supermodular tables: reward agreement
        P = np.abs(P) * np.eye(design.n_classes)
    oracle = predict_labels(design, W, P, 10, "oracle")
    decode = predict_labels(design, W, P, 10, "decode")
    np.testing.assert_array_equal(oracle, decode)
    assert oracle.shape == (design.batch.n_nodes,)
    if kind == "loopy":
        N = design.batch.n_nodes
        D0 = design.args(np.zeros(N, np.int64), np.zeros(N), 10)
        sc = scratch(design)
        assert sc.dec_cut is None and sc.dec_tree is None
        sc = sc._replace(**ALL_DECODERS)
        S = design.batch.n_samples
        Pt = np.ascontiguousarray(design.tables(P))
        hinge_pass(D0, SURROGATES["margin"], 1.0, W, Pt, sc, design.max_nodes,
                   design.max_edges, design.batch.chunks(2), np.zeros(S), np.zeros(S))
        np.testing.assert_array_equal(sc.lab, oracle)


def test_scratch_flags_only_the_solvers_surrogate():
    """A solver's scratch compiles its own surrogate into the oracle (besides margin
    rescaling), and ``hinge_pass`` refuses a surrogate its scratch was not made for
    rather than run a kernel without its code."""
    design = _design("loopy")
    for name in ("margin", "slack", "poslearn", "lp"):
        sc = scratch(design, surrogate=name)
        flagged = [f for f in Surrogates._fields if getattr(sc, "sur_" + f) is not None]
        assert flagged == ([] if name == "margin" else [name])
    N, S = design.batch.n_nodes, design.batch.n_samples
    D = design.args(design.y, np.ones(N), 10)
    P = np.ascontiguousarray(design.tables(np.zeros((design.n_edge_features,
                                                     design.n_classes, design.n_classes))))
    W = np.zeros((design.n_features_total, design.n_columns))
    with pytest.raises(ValueError, match="without surrogate"):
        hinge_pass(D, SURROGATES["poslearn"], 1.0, W, P, scratch(design), design.max_nodes,
                   design.max_edges, design.batch.chunks(1), np.zeros(S), np.zeros(S))


@pytest.mark.parametrize("kind", ["tree", "multilabel", "loopy"])
def test_first_class_oracle_answers_as_the_linked_one(kind):
    """The kernels call the oracle and its decoders through first-class functions
    (compiled once, shared by every kernel); compiled into the kernel instead, as for
    designs with graph cuts, they give the same hinges, losses and labels."""
    from skstruct.models._oracle import (
        _FirstClass,
        _hinge_chunks,
        corner,
        decode,
        oracle_functions,
    )

    design = _design(kind)
    rng = np.random.default_rng(6)
    W = rng.normal(size=(design.n_features_total, design.n_columns))
    P = rng.normal(size=(design.n_edge_features, design.n_classes, design.n_classes))
    P = np.ascontiguousarray(design.tables(P))
    N, S = design.batch.n_nodes, design.batch.n_samples
    D = design.args(design.y, rng.uniform(0.5, 2.0, N), 10)
    chunks = design.batch.chunks(1)
    for surrogate in ("margin", "poslearn"):
        out = []
        for first_class in (True, False):
            sc = scratch(design, surrogate=surrogate)
            fns = oracle_functions(D, sc, W, P)
            assert all(isinstance(f, _FirstClass) for f in fns)
            hinge, ell = np.full(S, np.nan), np.full(S, np.nan)
            orc, dec = fns if first_class else (corner, decode)
            _hinge_chunks(D, SURROGATES[surrogate], 1.0, W, P, sc, orc, dec, design.max_nodes,
                          design.max_edges, chunks, 0, 1, hinge, ell)
            out.append((hinge, ell, sc.lab.copy()))
        assert np.all(np.isfinite(out[0][0])) and out[0][0].max() > 0
        for a, b in zip(*out):
            np.testing.assert_allclose(a, b, rtol=0, atol=1e-12)


def test_cut_designs_compile_the_oracle_into_the_kernel():
    """The minimum cut, ILP and QPBO group may raise from HiGHS, which a first-class call
    could not pass on: designs that use it get the dispatchers."""
    from skstruct.models._oracle import corner, decode, oracle_functions

    design = _design("graphcut")
    sc = scratch(design)
    P = np.ascontiguousarray(design.tables(np.zeros((design.n_edge_features,
                                                     design.n_classes, design.n_classes))))
    W = np.zeros((design.n_features_total, design.n_columns))
    D = design.args(design.y, np.ones(design.batch.n_nodes), 10)
    assert oracle_functions(D, sc, W, P) == (corner, decode)
