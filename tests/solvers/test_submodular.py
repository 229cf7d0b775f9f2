"""Learning with supermodular pairwise tables: the projection, the constrained
structured SVM against a QP solved by scipy, and the graph-cut oracle."""

import itertools

import numpy as np
import pytest
from scipy.optimize import minimize

from skstruct import StructuredPerceptron, StructuredSVM
from skstruct.models import GraphModel
from skstruct.models._submodular import project_tables, supermodular_violation


def qp_projection(T):
    """The projection of one table onto the cone, as a QP solved by SLSQP."""
    K = T.shape[0]
    t0 = T.ravel()

    def block(t, a, b):
        M = t.reshape(K, K)
        return M[a, b] + M[a + 1, b + 1] - M[a, b + 1] - M[a + 1, b]

    cons = [{"type": "ineq", "fun": block, "args": (a, b)}
            for a in range(K - 1) for b in range(K - 1)]
    return minimize(lambda t: 0.5 * np.sum((t - t0) ** 2), t0, jac=lambda t: t - t0,
                    constraints=cons, method="SLSQP",
                    options={"ftol": 1e-14, "maxiter": 500}).x.reshape(K, K)


def test_projection_is_the_euclidean_projection_onto_the_cone():
    rng = np.random.default_rng(0)
    for K in (2, 3, 4):
        P = rng.normal(size=(3, K, K)) * 3
        Q = project_tables(P)
        assert supermodular_violation(Q)[0] <= 1e-12
        for f in range(3):
            np.testing.assert_allclose(Q[f], qp_projection(P[f]), atol=1e-6)
        # a feasible table is its own projection; scaling commutes with it
        np.testing.assert_allclose(project_tables(Q), Q, atol=1e-12)
        np.testing.assert_allclose(project_tables(2.5 * P), 2.5 * Q, atol=1e-10)


def repulsive_grids(seed, n=6, side=2):
    """Tiny loopy grids whose labels alternate (a checkerboard), which only a
    repulsive (non-supermodular) table explains, with noisy node features."""
    rng = np.random.default_rng(seed)
    from skstruct.datasets import grid_edges

    edges = grid_edges(side, side + 1)
    X, y = [], []
    for _ in range(n):
        lab = (np.add.outer(np.arange(side), np.arange(side + 1)) + rng.integers(2)) % 2
        lab = lab.ravel()
        flip = rng.random(lab.size) < 0.3
        obs = np.where(flip, 1 - lab, lab) + 0.3 * rng.normal(size=lab.size)
        X.append((np.column_stack([obs, np.ones_like(obs)]), edges))
        y.append(lab)
    return X, y


def constrained_reference(X, y, C):
    """The structured SVM with supermodular tables as an explicit QP over (w, xi):
    every labelling of every sample is a constraint (tiny graphs), solved by SLSQP."""
    model = GraphModel(submodular=True, inference_method="exact").fit(X, y)
    n = len(X)
    lam = 1.0 / (C * n)
    d = model.size_joint_feature
    rows, losses, owner = [], [], []
    for i, (x, yi) in enumerate(zip(X, y)):
        phi_true = model.joint_feature(x, yi)
        for lab in itertools.product(range(2), repeat=len(yi)):
            lab = np.array(lab)
            rows.append(model.joint_feature(x, lab) - phi_true)
            losses.append(float(np.sum(lab != yi)))
            owner.append(i)
    Psi = np.array(rows)
    losses = np.array(losses)
    owner = np.array(owner)
    F = d - 4    # the unary part; the last 4 numbers are the 2 x 2 table

    def obj(z):
        w = z[:d]
        return 0.5 * lam * w @ w + z[d:].sum() / n

    def jac(z):
        return np.concatenate([lam * z[:d], np.full(n, 1.0 / n)])

    cons = [{"type": "ineq", "fun": lambda z: z[d:][owner] - losses - Psi @ z[:d],
             "jac": lambda z: np.hstack([-Psi, np.eye(n)[owner]])},
            {"type": "ineq", "fun": lambda z: np.array([z[F] + z[F + 3] - z[F + 1] - z[F + 2]]),
             "jac": lambda z: np.concatenate([np.zeros(F), [1.0, -1.0, -1.0, 1.0],
                                              np.zeros(n)])[None, :]},
            {"type": "ineq", "fun": lambda z: z[d:], "jac": lambda z: np.eye(d + n)[d:]}]
    z0 = np.concatenate([np.zeros(d), np.full(n, float(max(len(v) for v in y)))])
    res = minimize(obj, z0, jac=jac, constraints=cons, method="SLSQP",
                   options={"ftol": 1e-12, "maxiter": 1000})
    assert res.success, res.message
    return res.fun, res.x[:d]


@pytest.mark.parametrize("solver", ["bcfw", "subgradient"])
def test_constrained_svm_reaches_the_qp_optimum_with_feasible_tables(solver):
    X, y = repulsive_grids(0)
    C = 1.0
    ref_obj, ref_w = constrained_reference(X, y, C)
    kw = dict(max_iter=3000, tol=5e-4) if solver == "bcfw" else dict(max_iter=3000,
                                                                     check_every=3000)
    svm = StructuredSVM(C=C, model=GraphModel(submodular=True), solver=solver, random_state=0,
                        **kw).fit(X, y)
    assert supermodular_violation(svm.pairwise_coef_)[0] <= 1e-12
    # the primal objective of the returned (feasible) weights against the QP's optimum
    primal = svm.history_["primal"][-1]
    assert primal >= ref_obj - 1e-6
    if solver == "bcfw":
        # the certificate: the gap bounds the distance to the optimum, and is small
        gap = svm.history_["gap"][-1]
        assert gap <= 5e-4
        assert primal - ref_obj <= gap + 1e-6
    else:
        assert primal == pytest.approx(ref_obj, rel=0.01)
    # the data want a repulsive table: the constraint is active at the optimum
    unconstrained = StructuredSVM(C=C, model=GraphModel(inference_method="exact"),
                                  max_iter=3000, tol=1e-4, random_state=0).fit(X, y)
    assert unconstrained.history_["primal"][-1] < ref_obj - 0.1
    assert supermodular_violation(unconstrained.pairwise_coef_)[0] > 0.1


def test_graph_cut_oracle_follows_the_exact_oracle():
    """The same constrained fit with the graph cut and with enumeration as the
    oracle: both exact, so the iterates agree."""
    X, y = repulsive_grids(1)
    fits = [StructuredSVM(C=1.0, model=GraphModel(submodular=True, inference_method=m),
                          max_iter=50, random_state=0, check_every=50).fit(X, y)
            for m in ("graphcut", "exact")]
    assert fits[0].history_["primal"][-1] == pytest.approx(fits[1].history_["primal"][-1],
                                                           rel=1e-9)
    np.testing.assert_allclose(fits[0].coef_, fits[1].coef_, atol=1e-9)


def test_what_cannot_be_kept_supermodular_is_refused():
    X, y = repulsive_grids(2)
    with pytest.raises(ValueError, match="needs submodular=True"):
        StructuredSVM(model=GraphModel(inference_method="graphcut")).fit(X, y)
    neg = [(x[0], x[1], np.column_stack([np.ones(len(x[1])), -np.ones(len(x[1]))]))
           for x in X]
    with pytest.raises(ValueError, match="sample 0: edge 0 has a negative edge feature"):
        StructuredSVM(model=GraphModel(submodular=True)).fit(neg, y)
    with pytest.raises(ValueError, match="does not keep the pairwise tables supermodular"):
        StructuredPerceptron(model=GraphModel(submodular=True)).fit(X, y)
    # weights from elsewhere are checked before a cut decodes them
    model = GraphModel(submodular=True).fit(X, y)
    w = np.zeros(model.size_joint_feature)
    w[-4:] = [0.0, 1.0, 1.0, 0.0]          # rewards disagreement
    with pytest.raises(ValueError, match="not supermodular"):
        model.inference(X[0], w)
    with pytest.raises(ValueError, match="not supermodular"):
        model.loss_augmented_inference(X[0], y[0], w)
