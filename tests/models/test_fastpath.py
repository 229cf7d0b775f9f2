"""Chain prediction in one compiled call gives the general path's labels and errors.

``predict`` of a ``CRF`` or a ``StructuredSVM`` over a plain ``ChainModel`` validates, packs
and decodes CSR or dense float64 samples in one compiled call
(``skstruct.models._fastpath``); the general path packs a design and runs the batched
kernels.  On many random inputs and weights (integer ones, so that ties are frequent and
tie-breaking is compared too) both must give the same labels, and bad input the same error.
"""

import numpy as np
import pytest
import scipy.sparse as sp
from sklearn.exceptions import ConvergenceWarning

from skstruct import CRF, StructuredSVM
from skstruct.models import ChainModel
from skstruct.models._fastpath import chain_predict

# the fits are a few passes long: only their weights' shapes matter
pytestmark = pytest.mark.filterwarnings("ignore", category=ConvergenceWarning)


def _data(rng, n_samples, n_features, K, density, integer=False, empty=True):
    lengths = rng.integers(0 if empty else 1, 9, size=n_samples)
    lengths[0] = max(lengths[0], K)
    X = []
    for n in lengths:
        x = rng.integers(-2, 3, size=(n, n_features)).astype(float) if integer else \
            rng.normal(size=(n, n_features))
        x[rng.random(size=x.shape) > density] = 0.0
        X.append(x)
    y = [rng.integers(0, K, size=n) for n in lengths]
    y[0][:K] = np.arange(K)
    return X, y


def _general(est, X):
    est._fast_chains = lambda: False
    try:
        return est.predict(X)
    finally:
        del est._fast_chains


def _same(a, b):
    assert len(a) == len(b)
    for p, q in zip(a, b):
        assert p.dtype == q.dtype and p.shape == q.shape
        np.testing.assert_array_equal(p, q)


@pytest.fixture(scope="module")
def fitted():
    rng = np.random.default_rng(0)
    X, y = _data(rng, 12, 6, 4, 0.7)
    names = np.array(["B", "I", "O", "X"])
    y = [names[t] for t in y]
    svm = StructuredSVM(C=1.0, max_iter=2, random_state=0).fit(X, y)
    crf = CRF(C=1.0, max_iter=2).fit(X, y)
    return svm, crf


@pytest.mark.parametrize("which", ["svm", "crf"])
@pytest.mark.parametrize("seed", range(6))
def test_fast_labels_equal_general_labels(fitted, which, seed):
    est = fitted[0] if which == "svm" else fitted[1]
    rng = np.random.default_rng(seed)
    W, P = est._weights()
    W0, P0 = W.copy(), P.copy()
    try:
        integer = seed % 2 == 0
        draw = (lambda size: rng.integers(-2, 3, size=size).astype(float)) if integer else \
            (lambda size: rng.normal(size=size))
        W[...] = draw(W.shape)
        P[...] = draw(P.shape)
        for density in (0.2, 0.9):
            X, _ = _data(rng, 15, 6, 4, density, integer=integer)
            for batch in (X[:1], X, [X[3]], [x for x in X if len(x) == 0] or X[:2]):
                for kind in ("dense", "csr", "csr_array"):
                    Xk = batch if kind == "dense" else [
                        (sp.csr_matrix if kind == "csr" else sp.csr_array)(x) for x in batch]
                    assert chain_predict(est.model_, Xk, W, P) is not None
                    _same(est.predict(Xk), _general(est, Xk))
    finally:
        W[...] = W0
        P[...] = P0


def test_parallel_batches_equal_serial(fitted):
    svm = fitted[0]
    rng = np.random.default_rng(7)
    X, _ = _data(rng, 40, 6, 4, 0.5)
    serial = svm.predict(X)
    svm.set_params(n_jobs=2)
    try:
        _same(svm.predict(X), serial)
        _same(svm.predict([sp.csr_matrix(x) for x in X]), serial)
    finally:
        svm.set_params(n_jobs=None)
    _same(serial, _general(svm, X))


def _message(fn, X):
    with pytest.raises(ValueError) as info:
        fn(X)
    return str(info.value)


@pytest.mark.parametrize("kind", ["dense", "csr"])
def test_bad_input_gets_the_general_error(fitted, kind):
    svm = fitted[0]
    rng = np.random.default_rng(1)
    X, _ = _data(rng, 4, 6, 4, 0.9, empty=False)
    for bad_value in (np.nan, np.inf, 1e200):
        Xb = [x.copy() for x in X]
        Xb[2][0, 1] = bad_value
        if kind == "csr":
            Xb = [sp.csr_matrix(x) for x in Xb]
        msg = _message(svm.predict, Xb)
        assert msg.startswith("sample 2:")
        assert msg == _message(lambda X: _general(svm, X), Xb)
    # the wrong number of features
    Xb = [x for x in X]
    Xb[1] = np.zeros((3, 5))
    if kind == "csr":
        Xb = [sp.csr_matrix(x) for x in Xb]
    msg = _message(svm.predict, Xb)
    assert "sample 1" in msg and msg == _message(lambda X: _general(svm, X), Xb)


def test_inputs_left_to_the_general_path(fitted):
    svm = fitted[0]
    rng = np.random.default_rng(2)
    X, _ = _data(rng, 3, 6, 4, 0.6, empty=False)
    W, P = svm._weights()
    # an explicitly stored zero, unsorted columns: the general path packs them its way
    zero = sp.csr_matrix(X[0])
    zero.data[0] = 0.0
    unsorted = sp.csr_matrix(X[1])
    unsorted.indices[:2] = unsorted.indices[:2][::-1].copy()
    unsorted.data[:2] = unsorted.data[:2][::-1].copy()
    unsorted.has_sorted_indices = False
    for Xb in ([zero], [unsorted], [X[0].astype(np.float32)], [X[0].tolist()], tuple(X)):
        assert chain_predict(svm.model_, Xb, W, P) is None
        _same(svm.predict(Xb), _general(svm, Xb))
    # models with extra node features, or decoded by enumeration
    for model in (ChainModel(bias=True), ChainModel(inference_method="exact")):
        Xs, ys = _data(rng, 4, 3, 2, 0.8, empty=False)
        est = StructuredSVM(model=model, max_iter=2, random_state=0).fit(Xs, ys)
        assert chain_predict(est.model_, Xs, *est._weights()) is None
        _same(est.predict(Xs), _general(est, Xs))


def test_one_sample_is_decoded_outside_the_thread_context(fitted, monkeypatch):
    """One chain sample touches no thread pool, so ``predict`` decodes it before setting
    the pools up (a service tags one sentence per call); a batch still runs inside the
    context, and an invalid ``n_jobs`` still raises."""
    import skstruct._base as base

    svm, crf = fitted
    rng = np.random.default_rng(3)
    X, _ = _data(rng, 4, 6, 4, 0.6, empty=False)
    expect = {id(est): [_general(est, [x])[0] for x in X] for est in fitted}

    def no_context(n_jobs):
        raise AssertionError("thread context entered")

    monkeypatch.setattr(base, "n_threads", no_context)
    for est in fitted:
        for x, e in zip(X, expect[id(est)]):
            for xk in (x, sp.csr_matrix(x)):
                out = est.predict([xk])
                assert len(out) == 1
                np.testing.assert_array_equal(out[0], e)
        with pytest.raises(AssertionError, match="thread context"):
            est.predict(X)
    monkeypatch.undo()
    svm.n_jobs = 0
    try:
        with pytest.raises(ValueError, match="n_jobs"):
            svm.predict(X[:1])
    finally:
        svm.n_jobs = None
