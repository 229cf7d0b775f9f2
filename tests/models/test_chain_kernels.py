"""The plain-chain kernel gives what the general oracle and decoder give.

Chains with one transition table have a kernel of their own (``models/_chain.py``), which
compiles in seconds; the general kernels dispatch over every decoder and surrogate.  On the
same designs and weights the two must agree: labels, hinges and losses.
"""

import numpy as np
import pytest
import scipy.sparse as sp

from skstruct._core import n_chunks
from skstruct.models import ChainModel, GraphModel, MultiLabelModel
from skstruct.models._chain import chain_pass, is_plain_chain
from skstruct.models._oracle import SURROGATES, hinge_pass
from skstruct.models._predict import predict_labels, scratch


def _chains(rng, n_features, K, lengths, sparse=False):
    X = [rng.normal(size=(n, n_features)) for n in lengths]
    if sparse:
        X = [sp.csr_matrix(np.where(np.abs(x) > 0.8, x, 0.0)) for x in X]
    y = [rng.integers(0, K, size=n) for n in lengths]
    for k in range(K):  # every class present
        y[0][k % len(y[0])] = k
    return X, y


@pytest.mark.parametrize("sparse", [False, True])
@pytest.mark.parametrize("bias", [False, True])
def test_chain_kernel_matches_general(sparse, bias):
    rng = np.random.default_rng(3)
    K = 4
    X, y = _chains(rng, 5, K, [6, 1, 0, 9, 3, 7], sparse)
    model = ChainModel(bias=bias, start_end=bias).fit(X, y)
    d, _ = model.design(X, y)
    assert is_plain_chain(d)
    F = d.n_features_total
    W = rng.normal(size=(F, K))
    P = rng.normal(size=(1, K, K))
    N, S = d.batch.n_nodes, d.batch.n_samples
    lw = rng.uniform(0.5, 2.0, size=N)
    D = d.args(d.y, lw, 10)
    chunks = d.batch.chunks(n_chunks())

    hinge, ell, lab = np.zeros(S), np.zeros(S), np.zeros(N, np.int64)
    chain_pass(D.node_offsets, D.xdata, D.xind, D.xptr, D.xrow, D.xoff, D.y, D.loss_weight,
               W, P[0].copy(), d.max_nodes, chunks, hinge, ell, lab)
    sc = scratch(d)
    ref_h, ref_e = np.zeros(S), np.zeros(S)
    hinge_pass(D, SURROGATES["margin"], 1.0, W, P, sc, d.max_nodes, d.max_edges, chunks,
               ref_h, ref_e)
    np.testing.assert_allclose(hinge, ref_h, rtol=1e-12, atol=1e-12)
    np.testing.assert_allclose(ell, ref_e, rtol=1e-12, atol=1e-12)
    np.testing.assert_array_equal(lab, sc.lab)
    assert np.all(hinge >= 0) and hinge.max() > 0

    # prediction: the plain path against the general decoder (no loss added)
    pred = predict_labels(d, W, P, 10)
    sc = scratch(d)
    D0 = d.args(np.zeros(N, np.int64), np.zeros(N), 10)
    hinge_pass(D0, SURROGATES["margin"], 1.0, W, P, sc, d.max_nodes, d.max_edges, chunks,
               np.zeros(S), np.zeros(S))
    np.testing.assert_array_equal(pred, sc.lab)


def test_not_plain_chain():
    rng = np.random.default_rng(0)
    X, y = _chains(rng, 3, 3, [4, 5])
    edges = np.array([[0, 1], [1, 2], [2, 0]])
    Xg = [(x[:3], edges) for x in X]
    yg = [t[:3] for t in y]
    d, _ = GraphModel().fit(Xg, yg).design(Xg, yg)
    assert not is_plain_chain(d)        # cycles: TRW-S
    Xm = rng.normal(size=(6, 3))
    ym = rng.integers(0, 2, size=(6, 3))
    d, _ = MultiLabelModel(edges="tree").fit(Xm, ym).design(Xm, ym)
    assert not is_plain_chain(d)        # on/off columns: the class map is not the identity
