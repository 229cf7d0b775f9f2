"""``predict_marginals(X, clamp=..., forbidden=...)`` of the estimators with marginals of
their own (NonLocalCRF, ApproxStructuredPredictor), against enumeration of every
labelling of the tiny samples, scored by the estimator's own potentials."""

import numpy as np
import pytest
from scipy.special import logsumexp

import skstruct._approx as approx_module
from skstruct import ApproxStructuredPredictor, NonLocalCRF
from skstruct.energies import LinearMeasurements, NearestStatistic
from skstruct.models import ChainModel, GraphModel
from tests.brute import all_scores

NAMES = np.array(["a", "b", "c"])
K = len(NAMES)


def _data(kind, seed=0, n=10):
    """Small samples (2 to 5 nodes) labelled with the names ``a, b, c``."""
    rng = np.random.default_rng(seed)
    X, y = [], []
    for _ in range(n):
        T = int(rng.integers(2, 6))
        x = rng.normal(size=(T, 3))
        if kind == "chain":
            X.append(x)
        elif kind == "tree":
            X.append((x, np.array([[int(rng.integers(0, t)), t] for t in range(1, T)])))
        else:   # loopy: a cycle through every node plus a chord
            edges = [[t, (t + 1) % T] for t in range(T)] if T >= 3 else [[0, 1]]
            if T >= 4:
                edges.append([0, 2])
            X.append((x, np.array(edges)))
        y.append(NAMES[rng.integers(0, K, T)])
    y[0][:2] = NAMES[:2]
    y[1][:2] = NAMES[1:]
    return X, y, ChainModel() if kind == "chain" else GraphModel()


def _edges(x):
    if isinstance(x, tuple):
        return np.asarray(x[1]).reshape(-1, 2)
    return np.array([[t, t + 1] for t in range(x.shape[0] - 1)]).reshape(-1, 2)


def _n_nodes(x):
    return (x[0] if isinstance(x, tuple) else x).shape[0]


def _constraints(X, seed=1):
    """A clamp per sample (some None, some dicts, some lists with None at the free
    nodes), and forbidden pairs, labels as names."""
    rng = np.random.default_rng(seed)
    clamp = []
    for s, x in enumerate(X):
        T = _n_nodes(x)
        v, lab = int(rng.integers(0, T)), NAMES[int(rng.integers(0, K))]
        if s % 4 == 3:
            clamp.append(None)
        elif s % 4 == 2:
            clamp.append([lab if u == v else None for u in range(T)])
        else:
            clamp.append({v: lab})
    return clamp, [("a", "b"), ("c", "c")]


def _clamp_dict(c):
    if c is None:
        return {}
    if isinstance(c, dict):
        return c
    return {v: lab for v, lab in enumerate(c) if lab is not None}


def _labellings(est, X):
    """Per sample, every labelling (codes, and values of ``classes_``) with its score
    under the estimator's own potentials (checked against ``coef_ . phi(x, y)``)."""
    from skstruct.models._predict import design_potentials

    design, _ = est.model_.design(X)
    unary, tables, pwi = design_potentials(design, *est._weights())
    no, eo = design.batch.node_offsets, design.batch.edge_offsets
    out = []
    for s, x in enumerate(X):
        codes, scores = all_scores(unary[no[s]:no[s + 1]], _edges(x),
                                   tables[pwi[eo[s]:eo[s + 1]]])
        out.append((codes, est.classes_[codes], scores))
    codes, labs, scores = out[0]
    for j in (0, len(labs) // 2, len(labs) - 1):
        assert scores[j] == pytest.approx(est.coef_ @ est.model_.joint_feature(X[0], labs[j]),
                                          abs=1e-9)
    return out


def _allowed(x, labs, clamp, forbidden):
    ok = np.ones(len(labs), bool)
    for v, lab in _clamp_dict(clamp).items():
        ok &= labs[:, v] == lab
    for a, b in forbidden or ():
        for e in _edges(x):
            ok &= ~((labs[:, e[0]] == a) & (labs[:, e[1]] == b))
    return ok


def _reference(labellings, x, clamp, forbidden):
    """Node marginals (n_nodes, K) of ``exp(score)`` restricted to the labellings that
    satisfy the constraints."""
    codes, labs, scores = labellings
    ok = _allowed(x, labs, clamp, forbidden)
    p = np.where(ok, np.exp(scores - logsumexp(scores[ok])), 0.0)
    return np.stack([[p[codes[:, v] == k].sum() for k in range(K)]
                     for v in range(codes.shape[1])])


def _check_shape_of_constrained(marg, X, pred, clamp, forbidden, classes):
    """Finite rows summing to 1, clamped nodes exactly one-hot, and the constrained
    labelling of ``predict`` satisfying the constraints with positive marginals."""
    for s, (m, x, p) in enumerate(zip(marg, X, pred)):
        assert m.shape == (_n_nodes(x), K)
        assert np.all(np.isfinite(m)) and np.all(m >= 0)
        np.testing.assert_allclose(m.sum(axis=1), 1.0, atol=1e-12)
        for v, lab in _clamp_dict(None if clamp is None else clamp[s]).items():
            want = (classes == lab).astype(float)
            np.testing.assert_array_equal(m[v], want)
            assert p[v] == lab
        for a, b in forbidden or ():
            for e in _edges(x):
                assert not (p[e[0]] == a and p[e[1]] == b)
        codes = np.searchsorted(classes, p)
        assert np.all(m[np.arange(len(p)), codes] > 0)


CASES = [("clamp", None), (None, "forbidden"), ("clamp", "forbidden")]


@pytest.mark.parametrize("kind", ["chain", "tree"])
def test_crf_constrained_marginals_match_enumeration(kind):
    X, y, model = _data(kind)
    crf = NonLocalCRF(model=model, C=1.0).fit(X, y)
    clamp, forbidden = _constraints(X)
    labellings = _labellings(crf, X)
    for cl, fb in CASES:
        cl = clamp if cl else None
        fb = forbidden if fb else None
        marg = crf.predict_marginals(X, clamp=cl, forbidden=fb)
        for s, x in enumerate(X):
            want = _reference(labellings[s], x, None if cl is None else cl[s], fb)
            np.testing.assert_allclose(marg[s], want, atol=1e-9)
        pred = crf.predict(X, clamp=cl, forbidden=fb)
        _check_shape_of_constrained(marg, X, pred, cl, fb, crf.classes_)
    # no constraint at all (an empty list of pairs): the unconstrained marginals
    for a, b in zip(crf.predict_marginals(X, forbidden=[]), crf.predict_marginals(X)):
        np.testing.assert_allclose(a, b, atol=1e-12)


@pytest.mark.parametrize("kind", ["chain", "tree"])
def test_approx_constrained_beliefs_match_enumeration_on_trees(kind):
    """Bethe counting numbers at epsilon = 1: the beliefs are exact marginals on
    chains and trees, with or without constraints."""
    X, y, model = _data(kind, seed=3)
    est = ApproxStructuredPredictor(epsilon=1.0, counting_numbers="bethe", loss=None, C=3.0,
                                    max_iter=20, model=model).fit(X, y)
    clamp, forbidden = _constraints(X, seed=4)
    labellings = _labellings(est, X)
    for cl, fb in CASES:
        cl = clamp if cl else None
        fb = forbidden if fb else None
        for n_sweeps in (3, 100):
            marg = est.predict_marginals(X, n_sweeps=n_sweeps, clamp=cl, forbidden=fb)
            for s, x in enumerate(X):
                want = _reference(labellings[s], x, None if cl is None else cl[s], fb)
                np.testing.assert_allclose(marg[s], want, atol=1e-9)
        pred = est.predict(X, clamp=cl, forbidden=fb)
        _check_shape_of_constrained(marg, X, pred, cl, fb, est.classes_)


@pytest.mark.parametrize("counting", ["convex", "trw", "bethe"])
def test_approx_constrained_beliefs_on_loopy_graphs_are_the_penalty_limit(counting,
                                                                         monkeypatch):
    """On loopy graphs the beliefs are not exact marginals; under constraints they are
    those of the restricted model: finite, clamped nodes one-hot, and unchanged when the
    penalty standing for the constraints grows much larger."""
    X, y, model = _data("loopy", seed=5)
    est = ApproxStructuredPredictor(epsilon=0.3, counting_numbers=counting, C=3.0,
                                    max_iter=15, model=model).fit(X, y)
    clamp, forbidden = _constraints(X, seed=6)
    free = est.predict_marginals(X, n_sweeps=50)
    for a, b in zip(est.predict_marginals(X, n_sweeps=50, forbidden=[]), free):
        np.testing.assert_array_equal(a, b)
    marg = est.predict_marginals(X, n_sweeps=50, clamp=clamp, forbidden=forbidden)
    pred = est.predict(X, clamp=clamp, forbidden=forbidden)
    _check_shape_of_constrained(marg, X, pred, clamp, forbidden, est.classes_)
    assert not all(np.allclose(a, b) for a, b in zip(marg, free))
    monkeypatch.setattr(approx_module, "_PENALTY_MARGIN", 10 * approx_module._PENALTY_MARGIN)
    larger = est.predict_marginals(X, n_sweeps=50, clamp=clamp, forbidden=forbidden)
    for a, b in zip(marg, larger):
        np.testing.assert_allclose(a, b, atol=1e-10)


def _measurement_reference(crf, X, clamp, forbidden):
    """The Bethe projection of the constrained CRF, sample by sample, for a one-term
    LinearMeasurements energy: its gradient is ``c A`` on every node (``c A_edge`` on
    every edge) with ``c = psi h'(m)`` one number per sample, so ``mu*`` is the marginal
    vector of the constrained CRF at ``theta - c A`` whose measurement gives back ``c``.
    ``c - psi h'(m(c))`` increases from ``-psi`` to 0: one root, found by bisection,
    every labelling enumerated and scored by ``coef_``."""
    en = crf.energy_
    design, _ = crf._design(X)
    psi = crf._psi(crf.psi_coef_, crf._psi_features(X, design, fitting=False))[:, 0]
    A, Ae, b = en.A_[0], None if en.A_edge_ is None else en.A_edge_[0], en.b_[0]
    out = []
    for s, (x, (codes, labs, scores)) in enumerate(zip(X, _labellings(crf, X))):
        T = _n_nodes(x)
        ok = _allowed(x, labs, None if clamp is None else clamp[s], forbidden)
        meas = A[codes].sum(axis=1)
        for e in _edges(x) if Ae is not None else ():
            meas = meas + Ae[codes[:, e[0]], codes[:, e[1]]]
        scores, codes, meas = scores[ok], codes[ok], meas[ok]

        def dist(c, scores=scores, meas=meas):
            return np.exp(scores - c * meas - logsumexp(scores - c * meas))

        lo, hi = -psi[s], 0.0
        for _ in range(80):
            mid = 0.5 * (lo + hi)
            if mid - psi[s] * en._dh(dist(mid) @ meas + b) > 0:
                hi = mid
            else:
                lo = mid
        p = dist(0.5 * (lo + hi))
        out.append(np.stack([[p[codes[:, v] == k].sum() for k in range(K)]
                             for v in range(T)]))
    return out


@pytest.mark.parametrize("edge_term", [False, True])
@pytest.mark.parametrize("kind", ["chain", "tree"])
def test_nonlocal_energy_marginals_are_the_projection_of_the_constrained_crf(kind, edge_term):
    """With an energy, mu* is the Bethe projection of the constrained CRF (the energy
    convex, so its projection is unique), not the projected model constrained
    afterwards."""
    from skstruct._decoding import constrained_marginals

    X, y, model = _data(kind, seed=7, n=16)
    energy = LinearMeasurements(A=[{"a": 1.0}], b=[-0.5],
                                A_edge=[{("b", "a"): 1.0}] if edge_term else None)
    crf = NonLocalCRF(model=model, energy=energy, C=1.0, inference_method="md",
                      max_oracle_calls=300, inference_tol=1e-13, energy_max_iter=2,
                      random_state=0).fit(X, y)
    clamp, forbidden = _constraints(X, seed=8)
    free = crf.predict_marginals(X)
    for a, b in zip(crf.predict_marginals(X, forbidden=[]), free):
        np.testing.assert_allclose(a, b, atol=1e-12)
    for m, w in zip(free, _measurement_reference(crf, X, None, None)):
        np.testing.assert_allclose(m, w, atol=1e-8)
    for cl, fb in CASES:
        cl = clamp if cl else None
        fb = forbidden if fb else None
        marg = crf.predict_marginals(X, clamp=cl, forbidden=fb)
        for m, w in zip(marg, _measurement_reference(crf, X, cl, fb)):
            np.testing.assert_allclose(m, w, atol=1e-8)
        design, _, pots = crf._constrained_potentials(X, cl, fb)
        after = np.split(constrained_marginals(design, *pots), design.batch.node_offsets[1:-1])
        assert max(np.abs(m - a).max() for m, a in zip(marg, after)) > 1e-3
        pred = crf.predict(X, clamp=cl, forbidden=fb)
        _check_shape_of_constrained(marg, X, pred, cl, fb, crf.classes_)


def test_nonlocal_nearest_statistic_constrained_marginals():
    X, y, model = _data("chain", seed=9, n=20)
    crf = NonLocalCRF(energy=NearestStatistic(), C=1.0, energy_max_iter=2,
                      random_state=0).fit(X, y)
    clamp, forbidden = _constraints(X, seed=10)
    marg = crf.predict_marginals(X, clamp=clamp, forbidden=forbidden)
    pred = crf.predict(X, clamp=clamp, forbidden=forbidden)
    _check_shape_of_constrained(marg, X, pred, clamp, forbidden, crf.classes_)


def test_unsatisfiable_and_bad_constraints_are_refused():
    X, y, model = _data("chain", seed=11)
    X = [X[0][:1]] + X[1:]           # sample 0 has no edge: every pair forbidden leaves it
    y = [y[0][:1]] + y[1:]
    every = [(a, b) for a in NAMES for b in NAMES]
    # a chain whose first two nodes are clamped to a forbidden pair
    clash = [None, {0: "a", 1: "b"}] + [None] * (len(X) - 2)
    estimators = [NonLocalCRF(C=1.0).fit(X, y),
                  NonLocalCRF(energy=NearestStatistic(), energy_max_iter=1,
                              random_state=0).fit(X, y),
                  ApproxStructuredPredictor(max_iter=5).fit(X, y)]
    for est in estimators:
        with pytest.raises(ValueError, match=r"sample 1: no labelling satisfies"):
            est.predict_marginals(X, forbidden=every)
        with pytest.raises(ValueError, match=r"sample 1: no labelling satisfies"):
            est.predict_marginals(X, clamp=clash, forbidden=[("a", "b")])
        with pytest.raises(ValueError, match=r"sample 1: no labelling satisfies"):
            est.predict(X, clamp=clash, forbidden=[("a", "b")])
        with pytest.raises(ValueError, match=r"sample 2: the label clamped at node 0: 'z' is"):
            est.predict_marginals(X, clamp=[None, None, {0: "z"}] + [None] * (len(X) - 3))
        with pytest.raises(ValueError, match=r"clamp has 1 entries but X has"):
            est.predict_marginals(X, clamp=[None])
        with pytest.raises(ValueError, match=r"forbidden\[0\] must be a pair"):
            est.predict_marginals(X, forbidden=["ab"])
    est = estimators[2]
    with pytest.raises(ValueError, match="n_sweeps must be a positive integer"):
        est.predict_marginals(X, n_sweeps=0, clamp=[{0: "a"}] * len(X))
    eps0 = ApproxStructuredPredictor(epsilon=0.0, max_iter=2).fit(X, y)
    with pytest.raises(ValueError, match="epsilon > 0"):
        eps0.predict_marginals(X, clamp=[{0: "a"}] * len(X))
    # predict still decodes at epsilon = 0 under constraints
    for p in eps0.predict(X, clamp=[{0: "a"}] * len(X)):
        assert p[0] == "a"
