"""BCFW's fused chain kernel against the dense per-sample BCFW of the model protocol.

:class:`~skstruct.solvers.ProtocolBCFW` keeps every block ``w_i`` as a dense vector and
reaches the model only through ``joint_feature`` and ``loss_augmented_inference``: a
slow, plain reference of the same algorithm (Lacoste-Julien et al., ICML 2013,
Algorithm 3 with weighted averaging).  Fed the same sample orders, the fused kernel of
:class:`~skstruct.solvers.BCFW` on plain chains must follow it iterate for iterate.
"""

import numpy as np
import pytest
import scipy.sparse as sp

from skstruct import StructuredSVM
from skstruct.models import ChainModel
from skstruct.solvers import BCFW, ProtocolBCFW
from skstruct.solvers._bcfw_chain import SparseBlocks


def _words(kind, seed, n=30, F=12, K=5):
    """Chains of 1 to 9 nodes: sparse binary pixels (as the OCR letters) or dense reals,
    labels with repeated transitions inside a word."""
    rng = np.random.default_rng(seed)
    X, y = [], []
    for _ in range(n):
        m = int(rng.integers(1, 10))
        if kind == "binary":
            x = (rng.random((m, F)) < 0.3).astype(np.float64)
            x[:, 0] = 1.0           # no all-zero node
            X.append(sp.csr_matrix(x))
        else:
            X.append(rng.normal(size=(m, F)))
        lab = rng.integers(0, K, m)
        if m > 3:
            lab[1:4] = lab[1]       # a transition met twice in the word
        y.append(lab)
    y[0] = np.arange(len(y[0])) % K
    return X, y


@pytest.mark.parametrize("kind", ["binary", "dense"])
@pytest.mark.parametrize("averaging", [True, False])
def test_fused_chain_pass_follows_the_protocol_bcfw(kind, averaging):
    X, y = _words(kind, seed=3)
    model = ChainModel().fit(X, y)
    design, _ = model.design(X, y)
    lam = 1.0 / (0.5 * len(X))
    fast = BCFW(design, np.ones(design.batch.n_nodes), lam=lam, surrogate="margin",
                averaging=averaging, inference_iter=10)
    ref = ProtocolBCFW(model, X, y, lam=lam, averaging=averaging)
    assert fast.fused_chain
    # lists of one entry: the pass stops and grows them again and again
    fast.pairs = SparseBlocks(fast.n_samples, len(model.classes_), 1)
    rng = np.random.default_rng(0)
    for _ in range(12):
        order = rng.permutation(fast.n_samples).astype(np.int64)
        gap_fast = fast.run_pass(order)
        gap_ref = ref.run_pass(order)
        W, P = fast.weights()
        np.testing.assert_allclose(np.concatenate([W.ravel(), P.ravel()]), ref.weights(),
                                   rtol=1e-10, atol=1e-12)
        np.testing.assert_allclose(gap_fast, gap_ref, rtol=1e-9, atol=1e-12)
        np.testing.assert_allclose(fast.ell_i, ref.ell_i, rtol=1e-10, atol=1e-12)
        np.testing.assert_allclose(fast.objective(), ref.objective(), rtol=1e-10,
                                   atol=1e-12)
    # every block, node and pairwise parts: w_i = sum_v x_v (x) A_v (+) Pi_i
    F, K = W.shape
    Xs = design.features.toarray()
    offsets = design.batch.node_offsets
    for s in range(fast.n_samples):
        node = Xs[offsets[s]:offsets[s + 1]].T @ fast.A[offsets[s]:offsets[s + 1]]
        block = np.concatenate([node.ravel(), fast.pairwise_blocks()[s].ravel()])
        np.testing.assert_allclose(block, ref.w_i[s], rtol=1e-9, atol=1e-12)
    primal, dual, gap = fast.objective()
    assert primal > dual and gap >= -1e-12


def test_default_fit_on_chains_takes_the_fused_kernel_and_reaches_the_reference():
    """``StructuredSVM()`` with its defaults on chains: the fused kernel, the weights of
    the protocol BCFW run on the estimator's own sample orders."""
    X, y = _words("binary", seed=8, n=25)
    est = StructuredSVM(C=0.3, max_iter=15, check_every=0, random_state=4).fit(X, y)
    assert est._solver.fused_chain
    model = ChainModel().fit(X, y)
    ref = ProtocolBCFW(model, X, y, lam=1.0 / (0.3 * len(X)), averaging=True)
    rng = np.random.RandomState(4)
    for _ in range(15):
        ref.run_pass(est._order(rng, len(X)))
    np.testing.assert_allclose(est.coef_, ref.weights(), rtol=1e-10, atol=1e-12)
