"""The CRF's elastic net (OWL-QN) against the enumerated objective's optimality
conditions, CRFsuite's parametrisation, and its options."""

import warnings

import numpy as np
import pytest

from skstruct import CRF
from skstruct._core._warnings import ConvergenceWarning
from tests.test_crf import brute_objective, chains


def _smooth(X, y, C, l2, classes, F=3, K=3):
    """``C * nll + l2 ||w||^2 / 2`` by enumeration, as a function of the flat weights."""
    def f(v):
        W, P = v[:F * K].reshape(F, K), v[F * K:].reshape(1, K, K)
        reg = 0.5 * (np.sum(W * W) + np.sum(P * P))
        return brute_objective(X, y, W, P, C, classes) - reg + l2 * reg
    return f


@pytest.mark.parametrize("C, l1_ratio", [(2.0, 0.5), (3.0, 1.0), (10 / 3, 1 / 3)])
def test_fitted_weights_meet_the_elastic_net_optimality_conditions(C, l1_ratio):
    X, y = chains(3, n=6, max_len=4)
    crf = CRF(C=C, l1_ratio=l1_ratio, max_iter=1000, tol=1e-14).fit(X, y)
    w = crf.coef_
    f = _smooth(X, y, C, 1.0 - l1_ratio, crf.classes_)
    full = f(w) + l1_ratio * np.abs(w).sum()
    assert np.isclose(crf.history_["objective"][-1], full, rtol=1e-10)
    eps = 1e-6
    g = np.array([(f(w + eps * e) - f(w - eps * e)) / (2 * eps) for e in np.eye(w.size)])
    nz = w != 0
    # convex objective: these (sub)gradient conditions certify the global minimum
    assert np.max(np.abs(g[nz] + l1_ratio * np.sign(w[nz]))) < 1e-4
    assert np.all(np.abs(g[~nz]) <= l1_ratio + 1e-4)
    assert 0 < crf.n_nonzero_ == np.count_nonzero(w) < w.size


def test_crfsuite_parametrisation_has_the_same_minimiser():
    """``-loglik + c1 ||w||_1 + c2 ||w||^2`` is the CRF's objective divided by C."""
    X, y = chains(4, n=6, max_len=4)
    c1, c2 = 0.1, 0.1
    crf = CRF(C=1 / (c1 + 2 * c2), l1_ratio=c1 / (c1 + 2 * c2), max_iter=1000,
              tol=1e-14).fit(X, y)
    w = crf.coef_

    def crfsuite(v):
        W, P = v[:9].reshape(3, 3), v[9:].reshape(1, 3, 3)
        nll = brute_objective(X, y, W, P, 1.0, crf.classes_) - 0.5 * np.sum(v * v)
        return nll + c1 * np.abs(v).sum() + c2 * np.sum(v * v)

    f0 = crfsuite(w)
    rng = np.random.default_rng(0)
    for _ in range(20):
        step = 1e-3 * rng.normal(size=w.size)
        assert crfsuite(w + step) > f0
    assert np.isclose(crf.history_["objective"][-1] / crf.C, f0, rtol=1e-10)


def test_l1_makes_the_model_sparser():
    X, y = chains(5, n=30, F=8, max_len=6)
    ridge = CRF(C=1.0, max_iter=500).fit(X, y)
    lasso = CRF(C=1.0, l1_ratio=1.0, max_iter=500).fit(X, y)
    assert ridge.n_nonzero_ == ridge.coef_.size
    stronger = CRF(C=0.2, l1_ratio=1.0, max_iter=500).fit(X, y)
    assert stronger.n_nonzero_ < lasso.n_nonzero_ < ridge.n_nonzero_
    assert lasso.coef_.shape == ridge.coef_.shape


def test_l1_ratio_zero_is_the_l2_fit_bit_for_bit():
    X, y = chains(6, n=8)
    a = CRF(C=0.5, max_iter=200).fit(X, y)
    b = CRF(C=0.5, l1_ratio=0.0, solver_options={"memory": 6}).fit(X, y)
    np.testing.assert_array_equal(a.coef_, b.coef_)


def test_warning_at_max_iter_names_the_pseudo_gradient():
    X, y = chains(7, n=20, F=6)
    with pytest.warns(ConvergenceWarning, match="pseudo-gradient"):
        CRF(C=5.0, l1_ratio=0.5, max_iter=2).fit(X, y)


def test_period_stops_on_the_decrease_over_several_iterations():
    X, y = chains(8, n=20, F=6)
    with warnings.catch_warnings():
        warnings.simplefilter("error", ConvergenceWarning)
        one = CRF(C=5.0, l1_ratio=0.5, tol=1e-4, max_iter=500).fit(X, y)
        ten = CRF(C=5.0, l1_ratio=0.5, tol=1e-4, max_iter=500,
                  solver_options={"period": 10}).fit(X, y)
    f = ten.history_["objective"]
    assert ten.n_iter_ > one.n_iter_
    assert (f[-11] - f[-1]) / abs(f[-1]) <= 1e-4 < (f[-12] - f[-2]) / abs(f[-2])


@pytest.mark.parametrize("params, match", [
    (dict(l1_ratio=1.5), "l1_ratio must be"),
    (dict(l1_ratio=-0.1), "l1_ratio must be"),
    (dict(l1_ratio=0.5, solver="sgd"), "l1_ratio=0.5 needs solver='lbfgs'"),
    (dict(solver_options={"memroy": 5}), "'memroy' is not an option of solver='lbfgs'"),
    (dict(solver_options={"period": 0}), r"solver_options\['period'\] must be"),
    (dict(solver_options={"epsilon": -1.0}), r"solver_options\['epsilon'\] must be"),
    (dict(solver="sgd", solver_options={"period": 3}), "takes none"),
    (dict(solver_options=[("period", 3)]), "solver_options must be"),
])
def test_bad_elastic_net_parameters(params, match):
    X, y = chains(9, n=6)
    with pytest.raises(ValueError, match=match):
        CRF(**params).fit(X, y)
