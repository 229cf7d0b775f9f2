"""Each solver run directly, against a reference on the same objective.

* :class:`BCFW` (the general ``bcfw_pass`` kernel, edge features, trees and
  tiny loopy graphs decoded exactly) and :class:`Subgradient`
  (``subgradient_epoch``, mini-batches) against the dense per-sample
  implementations of the same algorithms in :mod:`skstruct.solvers._protocol`,
  fed the same sample orders;
* ``pd_gradient`` against the beliefs of ``pd_objective`` assembled into the
  gradient in numpy, and :class:`PrimalDual`'s gradient against finite
  differences.
"""

import numpy as np
import pytest
import scipy.sparse as sp

from skstruct.inference._primal_dual import Counting, pd_objective
from skstruct.models import ChainModel, GraphModel, MultiLabelModel
from skstruct.solvers import BCFW, ProtocolBCFW, ProtocolSubgradient, Subgradient
from skstruct.solvers._bcfw_chain import SparseBlocks
from skstruct.solvers._primal_dual import PrimalDual, counting_numbers, pd_gradient
from tests.inference.kernel_cases import random_graph


def graphs(seed, kinds=("tree", "chain", "forest", "cycle4", "random"), n=10, F=3, K=3,
           EF=2):
    rng = np.random.default_rng(seed)
    X, y = [], []
    for i in range(n):
        m, edges = random_graph(rng, kinds[i % len(kinds)])
        X.append((rng.normal(size=(m, F)), edges, rng.normal(size=(len(edges), EF))))
        y.append(rng.integers(0, K, m))
    y[0][:] = np.arange(len(y[0])) % K
    X.append((rng.normal(size=(K, F)), np.array([[0, 1]]), rng.normal(size=(1, EF))))
    y.append(np.arange(K))
    return X, y


def _pair(model, X, y, Solver, Reference, **kw):
    model = model.fit(X, y)
    design, _ = model.design(X, y)
    lam = 1.0 / (0.8 * len(X))
    fast = Solver(design, np.ones(design.batch.n_nodes), lam=lam, surrogate="margin",
                  averaging=True, inference_iter=10, **kw)
    ref = Reference(model, X, y, lam=lam, averaging=True, **kw)
    return fast, ref


@pytest.mark.parametrize("case", ["graphs", "multilabel"])
@pytest.mark.parametrize("which", ["bcfw", "subgradient"])
def test_batched_solver_matches_the_dense_reference(case, which):
    if case == "graphs":
        X, y = graphs(seed=1)
        model = GraphModel(inference_method="exact")
    else:
        rng = np.random.default_rng(2)
        X = rng.normal(size=(15, 4))
        y = (X @ rng.normal(size=(4, 4)) + rng.normal(size=(15, 4)) > 0).astype(int)
        model = MultiLabelModel(edges="full")
    Solver, Reference = (BCFW, ProtocolBCFW) if which == "bcfw" else (Subgradient,
                                                                     ProtocolSubgradient)
    kw = {} if which == "bcfw" else {"batch_size": 3}
    fast, ref = _pair(model, X, y, Solver, Reference, **kw)
    if which == "bcfw":
        assert not fast.fused_chain  # the general kernel
    rng = np.random.default_rng(0)
    for _ in range(6):
        order = rng.permutation(fast.n_samples).astype(np.int64)
        fast.run_pass(order)
        ref.run_pass(order)
        W, P = fast.weights()
        np.testing.assert_allclose(np.concatenate([W.ravel(), P.ravel()]), ref.weights(),
                                   rtol=1e-9, atol=1e-11)
        np.testing.assert_allclose(fast.objective(), ref.objective(), rtol=1e-9, atol=1e-11,
                                   equal_nan=True)
    if which == "bcfw":
        primal, dual, gap = fast.objective()
        assert gap >= -1e-12 and primal > dual


def test_fused_chain_kernel_matches_the_general_one(monkeypatch):
    """The fused chain kernel (oracle, line search and updates in one loop) follows the
    general kernel step for step on the same state, warm start included."""
    rng = np.random.default_rng(5)
    K, F = 6, 5
    X = [rng.normal(size=(int(rng.integers(1, 9)), F)) for _ in range(25)]
    y = [rng.integers(0, K, len(x)) for x in X]
    model = ChainModel().fit(X, y)
    design, _ = model.design(X, y)
    lam = 1.0 / (0.3 * len(X))
    kw = dict(lam=lam, surrogate="margin", averaging=True, inference_iter=10)

    def make():
        return BCFW(design, np.ones(design.batch.n_nodes), **kw)

    fused = make()
    with monkeypatch.context() as m:
        m.setattr(BCFW, "_fused_chain_applies", lambda self: False)
        general = make()
    assert fused.fused_chain and not general.fused_chain
    S = fused.n_samples
    # lists of one entry: the pass stops and grows them many times
    fused.pairs = SparseBlocks(S, K, 1)
    for it in range(8):
        order = rng.permutation(S).astype(np.int64)
        fused.run_pass(order)
        general.run_pass(order)
        Wf, Pf = fused.weights()
        Wg, Pg = general.weights()
        np.testing.assert_allclose(Wf, Wg, rtol=1e-10, atol=1e-12)
        np.testing.assert_allclose(Pf, Pg, rtol=1e-10, atol=1e-12)
        np.testing.assert_allclose(fused.objective(), general.objective(), rtol=1e-10,
                                   atol=1e-12)
        np.testing.assert_allclose(fused.pairwise_blocks(), general.pairwise_blocks(),
                                   rtol=1e-10, atol=1e-12)
        if it == 3:
            # a warm start hands the state over to a new solver
            new = make()
            new.carry(fused)
            fused = new


def test_pd_gradient_is_the_beliefs_minus_the_truth():
    X, y = graphs(seed=3, kinds=("tree", "cycle4", "random", "chain"))
    model = GraphModel().fit(X, y)
    design, _ = model.design(X, y)
    c_node, c_edge = counting_numbers(design, "convex")
    pd = PrimalDual(design, np.ones(design.batch.n_nodes), c_node, c_edge, epsilon=0.7,
                    C=1.0, loss=True)
    rng = np.random.default_rng(0)
    W = rng.normal(size=pd.W.shape)
    P = rng.normal(size=pd.P.shape)
    lam = rng.normal(scale=0.3, size=pd.lam.shape)
    theta_v, tables, pwi, _ = pd._theta(W, P)
    b = design.batch
    n_chunks = pd.chunks.shape[0] - 1
    terms = np.zeros(b.n_samples)
    gW = np.zeros((n_chunks,) + W.shape)
    gP = np.zeros((n_chunks,) + P.shape)
    counting = Counting(node=c_node, edge=c_edge, eps=0.7)
    pd_gradient(pd.D, pd.adj, theta_v, tables, pwi, counting, lam, pd.chunks, terms, gW, gP)
    # the reference: the beliefs of pd_objective, minus the truth, through the features
    terms_ref = np.zeros(b.n_samples)
    nb = np.zeros((b.n_nodes, design.n_classes))
    eb = np.zeros((b.n_edges,) + P.shape[1:])
    pd_objective(b.node_offsets, b.edge_offsets, b.edges, pd.adj, theta_v, tables, pwi,
                 counting, lam, pd.chunks, terms_ref, nb, eb, True)
    np.testing.assert_allclose(terms, terms_ref, rtol=1e-12)
    K = design.n_classes
    Y = np.eye(K)[design.y]
    gW_ref = sp.csr_matrix(design.features).T @ (nb - Y)
    Ye = np.einsum("ea,eb->eab", Y[b.edges[:, 0]], Y[b.edges[:, 1]])
    gP_ref = np.einsum("ef,eab->fab", design.edge_features.toarray(), eb - Ye)
    np.testing.assert_allclose(gW.sum(axis=0), gW_ref, atol=1e-10)
    np.testing.assert_allclose(gP.sum(axis=0), gP_ref, atol=1e-10)


def test_primal_dual_gradient_against_finite_differences():
    X, y = graphs(seed=4, kinds=("tree", "cycle4"), n=6)
    model = GraphModel().fit(X, y)
    design, _ = model.design(X, y)
    pd = PrimalDual(design, np.ones(design.batch.n_nodes),
                    *counting_numbers(design, "convex"), epsilon=0.5, C=0.7, loss=True)
    rng = np.random.default_rng(1)
    W = rng.normal(size=pd.W.shape)
    P = rng.normal(size=pd.P.shape)
    lam = rng.normal(scale=0.2, size=pd.lam.shape)
    value, gW, gP = pd.value_and_grad(W, P, lam)
    assert value == pytest.approx(pd.value(W.copy(), P.copy(), lam), rel=1e-12)
    h = 1e-6
    for idx in [(0, 0), (1, 2), (2, 1)]:
        Wp, Wm = W.copy(), W.copy()
        Wp[idx] += h
        Wm[idx] -= h
        fd = (pd.value(Wp, P, lam) - pd.value(Wm, P, lam)) / (2 * h)
        assert gW[idx] == pytest.approx(fd, rel=1e-5, abs=1e-7)
    for idx in [(0, 0, 1), (1, 2, 2)]:
        Pp, Pm = P.copy(), P.copy()
        Pp[idx] += h
        Pm[idx] -= h
        fd = (pd.value(W, Pp, lam) - pd.value(W, Pm, lam)) / (2 * h)
        assert gP[idx] == pytest.approx(fd, rel=1e-5, abs=1e-7)


def test_primal_dual_iterations_lower_the_convex_objective():
    X, y = graphs(seed=5, kinds=("cycle4", "random"), n=6)
    model = GraphModel().fit(X, y)
    design, _ = model.design(X, y)
    pd = PrimalDual(design, np.ones(design.batch.n_nodes),
                    *counting_numbers(design, "convex"), epsilon=1.0, C=1.0, loss=True)
    values = [pd.iterate() for _ in range(15)]
    assert np.all(np.diff(values) <= 1e-10)
    assert values[-1] < values[0]


@pytest.mark.parametrize("solver", ["bcfw", "subgradient"])
def test_warm_start_on_new_data_of_the_same_shape_learns_from_the_new_data(solver):
    from skstruct import StructuredSVM

    X1, y1 = graphs(seed=6)
    X2 = [(x[0] + 1.0, x[1], x[2]) for x in X1]
    y2 = [yi[::-1].copy() for yi in y1]
    est = StructuredSVM(solver=solver, max_iter=3, tol=0.0, check_every=1, warm_start=True,
                        random_state=0, model=GraphModel(inference_method="exact"))
    est.fit(X1, y1)
    est.set_params(max_iter=1).fit(X2, y2)
    assert est.n_iter_ == 4  # continued
    # the objective reported is that of the new data at the returned weights
    model = GraphModel(inference_method="exact").fit(X2, y2)
    design, _ = model.design(X2, y2)
    ref = BCFW(design, np.ones(design.batch.n_nodes), lam=1.0 / len(X2), surrogate="margin",
               averaging=True, inference_iter=10)
    hinge, _ = ref.hinges(est._W, est._P)
    W, P = est._W, est._P
    primal = 0.5 / len(X2) * (np.sum(W * W) + np.sum(P * P)) + hinge.mean()
    assert est.history_["primal"][-1] == pytest.approx(primal, rel=1e-10)
