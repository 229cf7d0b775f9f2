"""``StructuredSVM(solver="extragradient")``: Taskar et al.'s dual extragradient.

* the batched path on chains and trees (KL projections by sum-product, in one compiled
  call per pass) and the protocol path (Euclidean projections through the model's relaxed
  interface) against a plain numpy reference of the same algorithm over explicit
  labellings: every labelling of every sample enumerated, distributions over them
  (KL; the chain marginals are their marginals) or points of the simplex
  (Euclidean), the step's test from explicit KL divergences, the primal by brute
  force over the labellings and the dual at the explicit averaged labellings;
* convergence to BCFW's optimum on chains, on trees, on a toy protocol model and on
  :class:`~skstruct.models.MatchingModel`;
* the models and settings the method does not support raise a ``ValueError``.
"""

import itertools

import numpy as np
import pytest
from scipy.special import logsumexp

from skstruct import StructuredSVM
from skstruct.models import (
    ChainModel,
    GraphModel,
    MulticlassModel,
    MultiLabelModel,
    StructuredModel,
)
from skstruct.solvers import Extragradient, ProtocolExtragradient
from skstruct.solvers._extragradient import SweepBuffers, _sweep, forest_arrays
from tests.protocol_models import ProtocolChain


def project_simplex(v):
    """Euclidean projection onto the probability simplex (sorting)."""
    u = np.sort(v)[::-1]
    css = np.cumsum(u) - 1.0
    rho = np.count_nonzero(u - css / np.arange(1, v.shape[0] + 1) > 0)
    return np.maximum(v - css[rho - 1] / rho, 0.0)


class RelaxedMulticlass(StructuredModel):
    """Multiclass with the relaxed interface: ``z`` on the simplex of the classes."""

    def initialize(self, X, y):
        self.n_features = np.asarray(X).shape[1]
        self.n_classes = int(np.max(y)) + 1
        self.size_joint_feature = self.n_features * self.n_classes

    def _W(self, w):
        return np.asarray(w).reshape(self.n_classes, self.n_features)

    def joint_feature(self, x, y):
        out = np.zeros((self.n_classes, self.n_features))
        out[y] = x
        return out.ravel()

    def inference(self, x, w):
        return int(np.argmax(self._W(w) @ x))

    def loss_augmented_inference(self, x, y, w):
        s = self._W(w) @ x + 1.0
        s[y] -= 1.0
        return int(np.argmax(s))

    def loss(self, y, y_hat):
        return float(y != y_hat)

    def relaxed_labels(self, x, y):
        return np.eye(self.n_classes)[y]

    def relaxed_joint_feature(self, x, z):
        return np.outer(z, x).ravel()

    def relaxed_scores(self, x, w):
        return self._W(w) @ x

    def relaxed_loss(self, x, y):
        return 1.0 - np.eye(self.n_classes)[y], 0.0

    def project(self, x, z):
        return project_simplex(np.asarray(z, dtype=np.float64))


# ------------------------------------------------------------------ reference
def chain_labellings(x, y, lw, K, edges=None):
    """Every labelling of a chain (or of the graph ``edges``): joint features (W (F, K)
    then P (K, K), flat), losses and the true labelling's joint feature."""
    T, F = x.shape
    if edges is None:
        edges = np.array([[t - 1, t] for t in range(1, T)]).reshape(-1, 2)
    labs = np.array(list(itertools.product(range(K), repeat=T))).reshape(-1, T)
    Phi = np.zeros((labs.shape[0], F * K + K * K))
    for m, lab in enumerate(labs):
        W = np.zeros((F, K))
        P = np.zeros((K, K))
        for t in range(T):
            W[:, lab[t]] += x[t]
        for a, c in edges:
            P[lab[a], lab[c]] += 1.0
        Phi[m] = np.concatenate([W.ravel(), P.ravel()])
    loss = ((labs != y[None]) * lw[None]).sum(axis=1)
    truth = int(np.flatnonzero((labs == y[None]).all(axis=1))[0])
    return Phi, loss, Phi[truth]


def model_labellings(model, x, y, lw):
    """Every labelling of a multi-label sample by the model's own joint feature."""
    labs = np.array(list(itertools.product((0, 1), repeat=len(y))))
    Phi = np.stack([model.joint_feature(x, lab) for lab in labs])
    loss = ((labs != y[None]) * lw[None]).sum(axis=1)
    return Phi, loss, model.joint_feature(x, y)


class Reference:
    """The solvers' algorithm on explicit labellings.

    ``samples``: ``(Phi_i (M_i, d), loss_i (M_i,), phi_i (d,))``; a relaxed labelling is
    a point ``z_i`` of the simplex of the ``M_i`` labellings (``F_i z_i = Phi_i^T z_i``).
    ``geometry="kl"``: the prox steps are softmaxes of the dual points, the step's test
    compares the explicit divergences ``KL(u || v+)`` and ``KL(u || v)``; ``"euclid"``:
    projections onto the simplex from ``z_hat`` (uniform), the test by the Moreau
    envelope.
    """

    def __init__(self, samples, lam, beta, eta, geometry, adaptive, grow=1.25,
                 shrink=0.5):
        self.samples = samples
        self.n = len(samples)
        self.lam, self.beta, self.eta = lam, beta, eta
        self.geometry, self.adaptive, self.grow, self.shrink = geometry, adaptive, grow, \
            shrink
        d = samples[0][0].shape[1]
        self.Phi = sum(s[2] for s in samples)
        self.Wsum = np.zeros(d)
        self.L = 0.0
        self.step = eta
        self.n_iter = self.n_trials = 0
        # the explicit labellings: weighted sum of the z^t, the last one, the look-ahead
        self.zsum = [np.zeros(s[1].shape[0]) for s in samples]
        self.z_last = None

    def dual_point(self, W, L):
        return [L * lo + Ph @ W for Ph, lo, _ in self.samples]

    def prox(self, theta):
        if self.geometry == "kl":
            return np.exp(theta - logsumexp(theta))
        return project_simplex(theta)

    def look_ahead(self, W, L):
        thetas = self.dual_point(W, L)
        if self.geometry == "euclid":
            thetas = [t + 1.0 / t.shape[0] for t in thetas]   # z_hat = project(0)
        return thetas, [self.prox(t) for t in thetas]

    def G(self, zs):
        return sum(Ph.T @ z for (Ph, _, _), z in zip(self.samples, zs))

    def dual(self, zs):
        wz = (self.Phi - self.G(zs)) / (self.lam * self.n)
        ell = sum(z @ lo for (_, lo, _), z in zip(self.samples, zs))
        return -0.5 * self.lam * wz @ wz + ell / self.n

    def iterate(self):
        n, lam, beta = self.n, self.lam, self.beta
        Gsum = sum(Ph.T @ z for (Ph, _, _), z in zip(self.samples, self.zsum))
        thetas, vs = self.look_ahead(self.Wsum, self.L)
        Gv = self.G(vs)
        v_w = -(lam * self.Wsum + (Gsum - self.L * self.Phi) / n) / beta
        step = self.step
        while True:
            self.n_trials += 1
            u_w = v_w - step / beta * (lam * v_w + (Gv - self.Phi) / n)
            r = [lo + Ph @ v_w for Ph, lo, _ in self.samples]
            if self.geometry == "kl":
                us = [self.prox(t + step * ri) for t, ri in zip(thetas, r)]
            else:
                us = [self.prox(v + step * ri) for v, ri in zip(vs, r)]
            W_new = self.Wsum + step * u_w
            new_thetas, new_vs = self.look_ahead(W_new, self.L + step)
            if self.geometry == "kl":
                def kl(p, q):
                    m = p > 0
                    return float(np.sum(p[m] * (np.log(p[m]) - np.log(q[m]))))
                ez = sum(kl(u, vp) - kl(u, v) for u, v, vp in zip(us, vs, new_vs)) / n
            else:
                def moreau(t, z):
                    return t @ z - 0.5 * z @ z
                ez = sum(moreau(tp, vp) - moreau(t, v) - (tp - t) @ u for t, v, tp, vp, u in
                         zip(thetas, vs, new_thetas, new_vs, us)) / n
            g = lam * (v_w - u_w) + (Gv - self.G(us)) / n
            ew = -0.5 * beta * (u_w - v_w) @ (u_w - v_w) + 0.5 * step ** 2 / beta * g @ g
            if not self.adaptive or ew + ez <= 1e-12 or step <= self.eta:
                break
            step = max(step * self.shrink, self.eta)
        self.Wsum = W_new
        self.zsum = [zs + step * u for zs, u in zip(self.zsum, us)]
        self.L += step
        self.z_last = us
        self.n_iter += 1
        if self.adaptive:
            self.step = step * (2 * self.grow if self.n_trials == self.n_iter else self.grow)

    def weights(self):
        return self.Wsum / self.L

    def objective(self):
        w = self.weights()
        hinge = sum(np.max(lo + Ph @ w) - ph @ w for Ph, lo, ph in self.samples)
        primal = 0.5 * self.lam * w @ w + hinge / self.n
        duals = (self.dual([z / self.L for z in self.zsum]), self.dual(self.z_last),
                 self.dual(self.look_ahead(self.Wsum, self.L)[1]))
        return primal, duals


# ---------------------------------------------------------------------- data
def tiny_chains(seed, n=7, F=2, K=3):
    rng = np.random.default_rng(seed)
    X = [rng.normal(size=(int(rng.integers(1, 4)), F)) for _ in range(n)]
    y = [rng.integers(0, K, len(x)) for x in X]
    y[0] = np.arange(K)[:len(y[0])]
    X.append(rng.normal(size=(K, F)))
    y.append(np.arange(K))
    return X, y


def random_forest_edges(rng, T):
    """A random tree on ``T`` nodes (a forest of two when ``T >= 4``), edges in random
    order and orientation: rarely a chain."""
    edges = [[int(rng.integers(0, t)), t] for t in range(1, T)]
    if T >= 4:
        edges.pop(int(rng.integers(0, len(edges))))
    edges = np.array(edges, dtype=np.int64).reshape(-1, 2)
    flip = rng.random(len(edges)) < 0.5
    edges[flip] = edges[flip][:, ::-1]
    return edges[rng.permutation(len(edges))]


def tiny_trees(seed, n=7, F=2, K=3):
    """Graph samples ``(x, edges)`` of 1 to 5 nodes: stars, branching trees, forests."""
    rng = np.random.default_rng(seed)
    X, y = [], []
    for _ in range(n):
        T = int(rng.integers(1, 6))
        X.append((rng.normal(size=(T, F)), random_forest_edges(rng, T)))
        y.append(rng.integers(0, K, T))
    # a star (node 0 the hub), with every class present
    X.append((rng.normal(size=(4, F)), np.array([[0, 1], [2, 0], [0, 3]])))
    y.append(np.array([0, 1, 2, 1]))
    return X, y


def small_data(seed=0, n=30, F=5, K=4, max_len=6, trees=False):
    """Chains (or, with ``trees``, graph samples of random trees and forests) whose labels
    follow a linear score plus noise."""
    rng = np.random.default_rng(seed)
    Wt = rng.normal(size=(F, K))
    X, y = [], []
    for _ in range(n):
        T = int(rng.integers(1, max_len + 1))
        x = rng.normal(size=(T, F))
        X.append((x, random_forest_edges(rng, T)) if trees else x)
        y.append(np.argmax(x @ Wt + rng.normal(scale=1.0, size=(T, K)), axis=1))
    x = rng.normal(size=(K, F))
    X.append((x, np.array([[1, 0], [1, 2], [1, 3]])) if trees else x)
    y.append(np.arange(K))
    return X, y


def multilabel(seed=0, n=40, F=3, L=4):
    rng = np.random.default_rng(seed)
    X = rng.normal(size=(n, F))
    Z = X @ rng.normal(size=(F, L)) + rng.normal(size=(n, L))
    Z[:, 1] += 1.5 * Z[:, 0]        # correlated labels: a non-trivial tree
    return X, (Z > 0).astype(int)


def multiclass(seed=0, n=40, F=4, K=4):
    rng = np.random.default_rng(seed)
    X = rng.normal(size=(n, F))
    y = np.argmax(X @ rng.normal(size=(F, K)) + rng.normal(size=(n, K)), axis=1)
    y[:K] = np.arange(K)
    return X, y


# --------------------------------------------------------------------- tests
@pytest.mark.parametrize("adaptive", [False, True])
@pytest.mark.parametrize("case", ["chains", "trees", "multiclass", "multilabel",
                                  "multilabel chain"])
def test_batched_path_follows_the_reference(case, adaptive):
    """Weights, primal (brute force over labellings), the three duals and the step
    sizes of the compiled path agree with the reference, pass after pass.  The
    multi-label cases have a table per label pair (of a Chow-Liu tree, or of the chain
    of labels: forward-backward with several tables) and one weight column scoring
    the two classes with opposite signs."""
    rng = np.random.default_rng(4)
    edges = None
    if case.startswith("multilabel"):
        Xm, Ym = multilabel(n=10)
        label_graph = "tree" if case == "multilabel" else [[0, 1], [1, 2], [2, 3]]
        model = MultiLabelModel(edges=label_graph).fit(Xm, Ym)
        design, _ = model.design(Xm, Ym)
        assert design.n_edge_features == 3
        assert design.batch.is_chain.all() == (case != "multilabel")
        lw = rng.uniform(0.5, 2.0, design.batch.n_nodes).reshape(Ym.shape)
        samples = [model_labellings(model, x, yi, lwi) for x, yi, lwi in zip(Xm, Ym, lw)]
        X = Xm
        lw = lw.ravel()
    elif case == "chains":
        X, y = tiny_chains(seed=2)
        model = ChainModel().fit(X, y)
    elif case == "trees":
        X, y = tiny_trees(seed=2)
        model = GraphModel().fit(X, y)
        edges = [e for _, e in X]
        X = [x for x, _ in X]
    else:
        Xm, y = multiclass(n=12, F=3, K=3)
        X = [x[None] for x in Xm]
        y = [np.array([v]) for v in y]
        model = MulticlassModel().fit(Xm, np.concatenate(y))
    K = 3
    if case == "multiclass":
        design, _ = model.design(np.vstack(X), np.concatenate(y))
    elif not case.startswith("multilabel"):
        design, _ = model.design(X if edges is None else list(zip(X, edges)), y)
    if case == "trees":
        assert not design.batch.is_chain.all() and design.batch.is_forest.all()
    if not case.startswith("multilabel"):
        lw = rng.uniform(0.5, 2.0, design.batch.n_nodes)
    lam = 1.0 / (0.7 * len(X))
    fast = Extragradient(design, lw, lam=lam, surrogate="margin", averaging=True,
                         inference_iter=10, adaptive=adaptive)
    offs = design.batch.node_offsets
    if not case.startswith("multilabel"):
        samples = [chain_labellings(x, yi, lw[offs[i]:offs[i + 1]], K,
                                    None if edges is None else edges[i])
                   for i, (x, yi) in enumerate(zip(X, y))]
    if case == "multiclass":
        # no transition table: drop its (unused) columns
        samples = [(Ph[:, :-K * K], lo, ph[:-K * K]) for Ph, lo, ph in samples]
    ref = Reference(samples, lam, fast.beta, fast.eta, "kl", adaptive)
    fast.run_pass(np.zeros(0, np.int64))        # compiles, changes nothing
    assert fast.objective()[0] == pytest.approx(
        np.mean([lo.max() for _, lo, _ in samples]))
    for _ in range(12):
        gap = fast.run_pass(np.arange(len(X)))
        ref.iterate()
        W, P = fast.weights()
        w = np.concatenate([W.ravel(), P.ravel()])
        np.testing.assert_allclose(w, ref.weights(), rtol=1e-8, atol=1e-10)
        primal, duals = ref.objective()
        np.testing.assert_allclose(fast.duals(), duals, rtol=1e-8, atol=1e-10)
        p, dual, g = fast.objective()
        assert p == pytest.approx(primal, rel=1e-9, abs=1e-11)
        assert p == pytest.approx(fast.primal()[0], rel=1e-9, abs=1e-11)
        assert dual == pytest.approx(max(duals), rel=1e-9, abs=1e-11)
        assert g == gap and g >= -1e-12
        assert fast.step == pytest.approx(ref.step, rel=1e-12)
    assert fast.state.n_trials == ref.n_trials     # the same steps accepted
    if adaptive:
        assert ref.n_trials > ref.n_iter and ref.step > ref.eta


@pytest.mark.parametrize("adaptive", [False, True])
def test_protocol_path_follows_the_reference(adaptive):
    X, y = multiclass(n=15, F=3, K=3)
    model = RelaxedMulticlass().fit(X, y)
    lam = 1.0 / (0.7 * len(X))
    slow = ProtocolExtragradient(model, list(X), list(y), lam=lam, averaging=True,
                                 adaptive=adaptive)
    samples = []
    for x, yi in zip(X, y):
        Phi = np.stack([model.joint_feature(x, k) for k in range(3)])
        samples.append((Phi, 1.0 - np.eye(3)[yi], Phi[yi]))
    ref = Reference(samples, lam, slow.beta, slow.eta, "euclid", adaptive)
    for _ in range(12):
        gap = slow.run_pass(np.arange(len(X)))
        ref.iterate()
        np.testing.assert_allclose(slow.weights(), ref.weights(), rtol=1e-8, atol=1e-10)
        primal, duals = ref.objective()
        np.testing.assert_allclose(slow.duals(), duals, rtol=1e-8, atol=1e-10)
        p, dual, g = slow.objective()
        assert p == pytest.approx(primal, rel=1e-9, abs=1e-11)
        assert dual == pytest.approx(max(duals), rel=1e-9, abs=1e-11)
        assert g == gap and g >= -1e-12
    assert slow.n_trials == ref.n_trials


def bcfw_reference(X, y, C, tol, **kw):
    """BCFW's ``(primal, dual)`` at a gap of at most ``tol``."""
    svm = StructuredSVM(C=C, max_iter=5000, tol=tol, check_every=5, random_state=0,
                        **kw).fit(X, y)
    h = svm.history_
    assert h["gap"][-1] <= tol
    return h["primal"][-1], h["dual"][-1]


def check_bracket(svm, tol, reference):
    """``svm`` stopped at a gap of at most ``tol``; its certificate and BCFW's
    ``reference`` bound the same optimum: the primal objectives agree within the gaps."""
    h = svm.history_
    assert svm.n_iter_ < svm.max_iter and h["gap"][-1] <= tol
    assert np.all(h["gap"] >= -1e-12)
    primal, dual = reference
    assert h["dual"].max() <= primal + 1e-12 and dual <= h["primal"].min() + 1e-12
    assert abs(h["primal"][-1] - primal) <= max(tol, primal - dual) + 1e-12


def _check_optimum(svm, tol, reference):
    """:func:`check_bracket`, and extragradient's gap estimates are its exact gaps."""
    check_bracket(svm, tol, reference)
    np.testing.assert_array_equal(svm.gap_estimates_, svm.history_["gap"])


def test_chains_reach_the_bcfw_optimum():
    X, y = small_data()
    tol = 1e-3
    ref = bcfw_reference(X, y, 1.0, tol)
    svm = StructuredSVM(C=1.0, solver="extragradient", max_iter=2000, tol=tol, check_every=1,
                        random_state=0).fit(X, y)
    _check_optimum(svm, tol, ref)
    bc = StructuredSVM(C=1.0, max_iter=100, random_state=0).fit(X, y)
    assert np.mean(np.concatenate(svm.predict(X)) == np.concatenate(bc.predict(X))) > 0.95


def test_trees_reach_the_bcfw_optimum():
    X, y = small_data(max_len=7, trees=True)
    tol = 1e-3
    model = GraphModel()
    ref = bcfw_reference(X, y, 1.0, tol, model=model)
    svm = StructuredSVM(C=1.0, solver="extragradient", model=model, max_iter=2000, tol=tol,
                        check_every=1, random_state=0).fit(X, y)
    _check_optimum(svm, tol, ref)
    bc = StructuredSVM(C=1.0, model=model, max_iter=100, random_state=0).fit(X, y)
    assert np.mean(np.concatenate(svm.predict(X)) == np.concatenate(bc.predict(X))) > 0.95


def test_multilabel_tree_reaches_the_bcfw_optimum():
    X, Y = multilabel(n=60, L=5)
    tol = 1e-3
    model = MultiLabelModel(edges="tree")
    ref = bcfw_reference(X, Y, 1.0, tol, model=model)
    svm = StructuredSVM(C=1.0, solver="extragradient", model=model, max_iter=2000, tol=tol,
                        check_every=1).fit(X, Y)
    _check_optimum(svm, tol, ref)


def test_protocol_toy_reaches_the_bcfw_optimum():
    X, y = multiclass()
    tol = 1e-4
    ref = bcfw_reference(list(X), list(y), 1.0, tol, model=RelaxedMulticlass())
    common = dict(C=1.0, solver="extragradient", max_iter=2000, tol=tol, check_every=1)
    svm = StructuredSVM(model=RelaxedMulticlass(), **common).fit(list(X), list(y))
    _check_optimum(svm, tol, ref)
    # the same problem through the batched path (KL projections on the simplex)
    _check_optimum(StructuredSVM(**common).fit(X, y), tol, ref)


def test_matching_model():
    try:
        from skstruct.models import MatchingModel
    except ImportError:
        pytest.skip("skstruct.models.MatchingModel is not there")
    rng = np.random.default_rng(0)
    F = 4
    w_true = rng.normal(size=F)
    X, y = [], []
    for _ in range(20):
        n_left = int(rng.integers(2, 5))
        x = rng.normal(size=(n_left, n_left + int(rng.integers(0, 2)), F))
        y.append(MatchingModel().fit([x], [np.arange(n_left)]).inference(
            x + 0.3 * rng.normal(size=x.shape), w_true))
        X.append(x)
    tol = 1e-3
    ref = bcfw_reference(X, y, 1.0, tol, model=MatchingModel())
    svm = StructuredSVM(C=1.0, solver="extragradient", model=MatchingModel(), max_iter=1000,
                        tol=tol, check_every=1).fit(X, y)
    _check_optimum(svm, tol, ref)
    assert svm.score(X, y) > 0.7


@pytest.mark.parametrize("graph", ["chains", "trees"])
@pytest.mark.parametrize("case", ["wide range", "-inf"])
def test_sweep_against_brute_force(case, graph):
    """One sweep of the compiled kernel (marginals' joint features, expected loss, log
    partition, hinges) against enumeration, on chains (forward-backward) and on trees
    and forests (the tree kernel), with potentials whose range defeats the scaled
    forward-backward (the log-space recursion takes over) or with forbidden
    transitions (``-inf``)."""
    K = 3
    if graph == "chains":
        X, y = tiny_chains(seed=5)
        model = ChainModel().fit(X, y)
        edges = [None] * len(X)
        design, _ = model.design(X, y)
    else:
        Xg, y = tiny_trees(seed=5)
        design, _ = GraphModel().fit(Xg, y).design(Xg, y)
        X = [x for x, _ in Xg]
        edges = [e for _, e in Xg]
        assert not design.batch.is_chain.all()
    b = design.batch
    rng = np.random.default_rng(1)
    lw = rng.uniform(0.5, 2.0, b.n_nodes)
    scale = 300.0 if case == "wide range" else 1.0
    W = scale * rng.normal(size=(2, K))
    P = scale * rng.normal(size=(K, K))
    if case == "-inf":
        # forbid two transitions the true labellings do not take
        if graph == "chains":
            used = {(a, c) for yi in y for a, c in zip(yi[:-1], yi[1:])}
        else:
            used = {(yi[a], yi[c]) for yi, e in zip(y, edges) for a, c in e}
        free = [q for q in itertools.product(range(K), repeat=2) if q not in used]
        assert len(free) >= 2
        for q in free[:2]:
            P[q] = -np.inf
    a_c = 2.0 * scale
    chunks = b.chunks(2)
    nc = chunks.shape[0] - 1
    graph, tb = forest_arrays(b, K)
    outW, outP = np.zeros((2, K)), np.zeros((K, K))
    D = design.args(design.y, lw, 1)._replace(pw_index=np.zeros(b.n_edges, np.int64),
                                               cmap=np.arange(K), csign=np.ones(K))
    buf = SweepBuffers(W=np.zeros((nc, 2, K)), P=np.zeros((nc, 1, K, K)), sums=np.zeros((nc, 3)))
    ell, logz, hinge = _sweep(D, graph, tb, chunks, W, P[None], a_c, 1.0 / a_c,
                              design.max_nodes, buf, outW, outP[None])
    GW, GP = np.zeros((2, K)), np.zeros((K, K))
    e_ref = z_ref = h_ref = 0.0
    offs = b.node_offsets
    for i, (x, yi) in enumerate(zip(X, y)):
        Phi, loss, ph = chain_labellings(x, yi, lw[offs[i]:offs[i + 1]], K, edges[i])
        counts = Phi[:, 2 * K:].reshape(-1, K, K)
        with np.errstate(invalid="ignore"):
            pair = np.where(counts > 0, counts * P, 0.0).sum(axis=(1, 2))
        theta = Phi[:, :2 * K] @ W.ravel() + pair + a_c * loss
        p = np.exp(theta - logsumexp(theta))
        GW += (p @ Phi[:, :2 * K]).reshape(2, K)
        GP += (p @ Phi[:, 2 * K:]).reshape(K, K)
        e_ref += p @ loss
        z_ref += logsumexp(theta)
        h_ref += max(0.0, (theta.max() - theta[np.flatnonzero(loss == 0)[0]]) / a_c)
    for got, want in ((outW, GW), (outP, GP), (ell, e_ref), (logz, z_ref), (hinge, h_ref)):
        assert np.all(np.isfinite(got))
        np.testing.assert_allclose(got, want, rtol=1e-9, atol=1e-9)


def test_warm_start_continues_the_iterations():
    X, y = small_data(seed=1, n=10)
    common = dict(C=0.5, solver="extragradient", tol=0.0, check_every=1)
    one = StructuredSVM(max_iter=10, **common).fit(X, y)
    two = StructuredSVM(max_iter=5, warm_start=True, **common).fit(X, y)
    two.fit(X, y)
    assert two.n_iter_ == 10
    np.testing.assert_allclose(two.coef_, one.coef_, rtol=1e-12, atol=1e-14)
    np.testing.assert_allclose(two.history_["gap"], one.history_["gap"][5:], rtol=1e-12)


def test_unsupported_models_and_settings_raise():
    X, y = small_data(n=4)
    with pytest.raises(ValueError, match="relaxed_labels"):
        StructuredSVM(solver="extragradient", model=ProtocolChain(), max_iter=2).fit(X, y)
    loopy = [(x, np.array([[i, (i + 1) % len(x)] for i in range(len(x))]))
             for x in X if len(x) >= 3]
    yl = [yi for x, yi in zip(X, y) if len(x) >= 3]
    with pytest.raises(ValueError, match="supports chains and trees.*sample 0 has a cycle"):
        StructuredSVM(solver="extragradient", model=GraphModel(), max_iter=2).fit(loopy, yl)
    rng = np.random.default_rng(0)
    Xm = rng.normal(size=(10, 3))
    ym = (rng.normal(size=(10, 3)) > 0).astype(int)
    with pytest.raises(ValueError, match="supports chains and trees.*sample 0 has a cycle"):
        StructuredSVM(solver="extragradient", model=MultiLabelModel(), max_iter=2).fit(Xm, ym)
    # real-valued edge features: the edges are not scored by a table per edge type
    with_features = [(x, np.array([[0, 1]]), np.array([[0.5, 2.0]])) for x in X if len(x) >= 2]
    yf = [yi for x, yi in zip(X, y) if len(x) >= 2]
    with pytest.raises(ValueError, match="supports chains and trees.*edge features"):
        StructuredSVM(solver="extragradient", model=GraphModel(), max_iter=2).fit(with_features,
                                                                                   yf)
    with pytest.raises(ValueError, match="surrogate='margin'"):
        StructuredSVM(solver="extragradient", surrogate="poslearn", max_iter=2).fit(X, y)
    with pytest.raises(ValueError, match="average=False"):
        StructuredSVM(solver="extragradient", average=False, max_iter=2).fit(X, y)
    with pytest.raises(ValueError, match="average=False"):
        StructuredSVM(solver="extragradient", model=RelaxedMulticlass(), average=False,
                      max_iter=2).fit(list(Xm), list(np.argmax(ym, axis=1)))
