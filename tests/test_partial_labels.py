"""Partial labels: ``None`` in ``y`` marks a node whose label is unknown.

The parsing (masked labels), the labelled part a structured SVM learns on
(``Design.drop_unknown``), the marginal likelihood a CRF maximises
(``CRFObjective(allowed=...)``) and the imputation of :class:`LatentStructuredSVM`
with a plain model, each against a reference built independently: the samples
reduced by hand, or every labelling of tiny samples enumerated and scored by a
joint feature map written out here.
"""

import itertools

import numpy as np
import pytest
from scipy.special import logsumexp

from skstruct import LatentStructuredSVM, NonLocalCRF, StructuredSVM
from skstruct._core._decoders import CHAIN, TREE
from skstruct._core._packing import check_y, encode_labels, fit_classes, pack_X
from skstruct.energies import NearestStatistic
from skstruct.models import ChainModel, GraphModel
from skstruct.models._latent import allowed_states
from skstruct.solvers._crf import CRFObjective

NAMES = np.array(["p", "q", "r"])


# ------------------------------------------------------------------ references
def chain_edges(T):
    return np.array([[t, t + 1] for t in range(T - 1)], dtype=np.int64).reshape(-1, 2)


def phi(feats, edges, h, K, edge_feats=None):
    """The joint feature of a labelling ``h`` (codes 0..K-1) in the built-in models'
    layout: ``(F, K)`` unary block (node ``v`` adds its features to column ``h[v]``;
    nodes beyond the feature rows, hidden nodes, have none), then one ``(K, K)``
    table per edge feature (one shared table without them)."""
    F = feats.shape[1]
    U = np.zeros((F, K))
    for v in range(min(len(h), feats.shape[0])):
        U[:, h[v]] += feats[v]
    EF = 1 if edge_feats is None else edge_feats.shape[1]
    P = np.zeros((EF, K, K))
    for e, (a, b) in enumerate(np.asarray(edges).reshape(-1, 2)):
        P[:, h[a], h[b]] += 1.0 if edge_feats is None else edge_feats[e]
    return np.concatenate([U.ravel(), P.ravel()])


def labellings(n, K, allowed=None):
    """Every labelling of ``n`` nodes with ``K`` classes, (r, n); with ``allowed`` (n, K)
    only those whose every node takes an allowed class."""
    labs = np.array(list(itertools.product(range(K), repeat=n)), dtype=np.int64)
    labs = labs.reshape(-1, n)
    if allowed is not None:
        labs = labs[allowed[np.arange(n)[None, :], labs].all(axis=1)]
    return labs


def crf_brute(samples, allowed, base, K, w, C):
    """``C sum_i (log Z_i - log Z_i(allowed)) + |w|^2 / 2`` and its gradient by
    enumeration; ``samples`` are ``(feats, edges, n_nodes)``, ``allowed`` and ``base``
    (the states a node may take at all) per-sample (n, K) masks."""
    value, grad = 0.5 * w @ w, w.copy()
    for (feats, edges, n), ok, b in zip(samples, allowed, base):
        labs = labellings(n, K, b)
        Phi = np.array([phi(feats, edges, h, K) for h in labs]).reshape(len(labs), -1)
        s = Phi @ w
        sel = ok[np.arange(n)[None, :], labs].all(axis=1)
        lz, lzc = logsumexp(s), logsumexp(s[sel])
        value += C * (lz - lzc)
        p = np.exp(s - lz)
        pc = np.zeros_like(p)
        pc[sel] = np.exp(s[sel] - lzc)
        grad += C * (p - pc) @ Phi
    return value, grad


def ssvm_primal(w, samples, truth, weights, group, K, C, base=None):
    """The structured SVM's primal in the lambda form ``lambda/2 |w|^2 + 1/n sum_i
    max_h (loss_i(h) + w.phi(h) - w.phi(truth_i))``, ``lambda = 1/(C n)``, by
    enumeration; the loss of node ``v`` is ``weights_i[v]`` when ``group[h_v]`` differs
    from ``group[truth_v]``."""
    n = len(samples)
    total = 0.0
    for i, ((feats, edges, nn), t, lw) in enumerate(zip(samples, truth, weights)):
        labs = labellings(nn, K, None if base is None else base[i])
        Phi = np.array([phi(feats, edges, h, K) for h in labs]).reshape(len(labs), -1)
        loss = ((group[labs] != group[t][None, :]) * lw[None, :]).sum(axis=1)
        total += np.max(loss + Phi @ w) - phi(feats, edges, t, K) @ w
    lam = 1.0 / (C * n)
    return 0.5 * lam * w @ w + total / n


def split_flat(flat, design):
    off = design.batch.node_offsets
    return [flat[off[s]:off[s + 1]] for s in range(design.batch.n_samples)]


# ------------------------------------------------------------------------ data
def chain_data(seed=0, lengths=(5, 4, 4, 3, 5, 4), K=3, F=3):
    rng = np.random.default_rng(seed)
    X, y = [], []
    for T in lengths:
        lab = rng.integers(0, K, T)
        x = rng.normal(size=(T, F))
        x[np.arange(T), lab % F] += 1.0
        X.append(x)
        y.append(NAMES[lab])
    return X, y


# unknown nodes of each sample of chain_data: a gap, the first node, the last node,
# every node, two gaps, none
UNKNOWN = [[2], [0], [3], [0, 1, 2], [1, 3], []]


def hide(y, unknown=UNKNOWN):
    out = []
    for lab, u in zip(y, unknown):
        lab = np.array(lab, dtype=object)
        lab[list(u)] = None
        out.append(lab)
    return out


def split_chains(X, y_partial):
    """Every run of labelled nodes as a chain of its own."""
    Xs, ys = [], []
    for x, lab in zip(X, y_partial):
        run = []
        for t, v in enumerate(list(lab) + [None]):
            if v is None:
                if run:
                    Xs.append(x[run])
                    ys.append(np.array([lab[r] for r in run]))
                run = []
            else:
                run.append(t)
    return Xs, ys


def graph_data(seed=0):
    """Tiny graphs with two edge features: a triangle with a tail, a chain-shaped
    graph, a star and a 4-cycle; three labels."""
    rng = np.random.default_rng(seed)
    edges = [np.array([[0, 1], [1, 2], [2, 0], [2, 3]]),
             np.array([[0, 1], [1, 2], [2, 3]]),
             np.array([[0, 1], [0, 2], [0, 3], [3, 4]]),
             np.array([[0, 1], [1, 2], [2, 3], [3, 0]])]
    X, y = [], []
    for e in edges:
        n = int(e.max()) + 1
        X.append((rng.normal(size=(n, 2)), e, rng.uniform(0.5, 1.5, size=(len(e), 2))))
        y.append(NAMES[rng.integers(0, 3, n)])
    y[0][:3] = NAMES  # every label occurs
    return X, y


GRAPH_UNKNOWN = [[2], [1], [0], [1, 3]]


def reduce_graphs(X, y_partial):
    """Each graph without its unknown nodes and the edges touching them."""
    Xr, yr = [], []
    for (f, e, ef), lab in zip(X, y_partial):
        keep = np.array([v is not None for v in lab])
        new = np.cumsum(keep) - 1
        ek = keep[e[:, 0]] & keep[e[:, 1]]
        Xr.append((f[keep], new[e[ek]].reshape(-1, 2), ef[ek]))
        yr.append(np.array([v for v in lab if v is not None]))
    return Xr, yr


# --------------------------------------------------------------------- parsing
@pytest.mark.parametrize("form", ["list", "object_array"])
@pytest.mark.parametrize("kind", ["string", "int"])
def test_none_marks_unknown_labels(form, kind):
    X = [np.zeros((3, 1)), np.zeros((4, 1)), np.zeros((2, 1))]
    vals = {"string": ["B", "I", "O"], "int": [0, 1, 2]}[kind]
    raw = [[vals[0], None, vals[1]], [None, vals[2], vals[2], None], [vals[1], vals[0]]]
    y = raw if form == "list" else [np.array(r, dtype=object) for r in raw]
    labels = check_y(y, pack_X(X))
    assert isinstance(labels, np.ma.MaskedArray)
    mask = [v is None for r in raw for v in r]
    np.testing.assert_array_equal(np.ma.getmaskarray(labels), mask)
    known = [v for r in raw for v in r if v is not None]
    assert labels.compressed().tolist() == known
    classes = fit_classes(labels)
    assert classes.tolist() == sorted(vals)
    codes = encode_labels(labels, classes)
    want = [-1 if v is None else sorted(vals).index(v) for r in raw for v in r]
    assert codes.tolist() == want


def test_fully_labelled_y_stays_a_plain_array():
    X = [np.zeros((2, 1))]
    assert not isinstance(check_y([np.array([0, 1], dtype=object)], pack_X(X)),
                          np.ma.MaskedArray)


def test_a_wholly_unknown_sample_is_valid_but_not_all_samples():
    X = [np.zeros((3, 1)), np.zeros((2, 1))]
    labels = check_y([[None, None, None], ["a", "b"]], pack_X(X))
    assert np.ma.getmaskarray(labels).tolist() == [True] * 3 + [False] * 2
    assert fit_classes(labels).tolist() == ["a", "b"]
    # numbers stay numbers after a wholly unknown sample
    labels = check_y([[None, None, None], [3, 1]], pack_X(X))
    assert labels.compressed().dtype.kind == "i"
    with pytest.raises(ValueError, match="no known label"):
        check_y([[None] * 3, [None] * 2], pack_X(X))


@pytest.mark.parametrize("y, match", [
    ([["a", None, "b"], [1, None]], "sample 1 has number labels but sample 0 has string"),
    ([["a", None, 1], ["a", "b"]], "sample 0: labels mix number and string"),
    ([[0, 1, 2], [None, "a"]], "sample 1 has string labels but sample 0 has number"),
    ([[True, None, False], [0, 1]], "sample 1 has number labels but sample 0 has bool"),
    ([["a", None], ["a", "b"]], "sample 0: 2 labels for 3 nodes"),
])
def test_mixed_or_miscounted_labels_with_none_are_refused(y, match):
    X = [np.zeros((3, 1)), np.zeros((2, 1))]
    with pytest.raises(ValueError, match=match):
        check_y(y, pack_X(X))


def test_estimators_classes_exclude_none():
    X, y = chain_data()
    yp = hide(y)
    known = sorted({v for lab in yp for v in lab if v is not None})
    svm = StructuredSVM(max_iter=3).fit(X, yp)
    assert svm.classes_.tolist() == known
    pred = svm.predict(X)
    assert [len(p) for p in pred] == [len(x) for x in X]
    assert all(set(p) <= set(known) for p in pred)
    # score() leaves the unknown nodes out
    flat_p = np.concatenate(pred)
    flat_y = np.concatenate(yp)
    sel = np.array([v is not None for v in flat_y])
    assert svm.score(X, yp) == pytest.approx(np.mean(flat_p[sel] == flat_y[sel].astype(str)))


# -------------------------------------------------------------- drop_unknown
def test_drop_unknown_of_chains_matches_the_hand_reduced_batch():
    X, y = chain_data()
    yp = hide(y)
    model = ChainModel()
    design, _ = model.fit_design(X, yp)
    codes = encode_labels(check_y(yp, pack_X(X)), model.classes_)
    np.testing.assert_array_equal(design.y, codes)
    red = design.drop_unknown()
    # by hand: the labelled nodes, the edges between two of them, in sample order
    keep = [[t for t in range(len(x)) if yp[s][t] is not None] for s, x in enumerate(X)]
    lengths = [len(k) for k in keep]
    node_offsets = np.concatenate([[0], np.cumsum(lengths)])
    edges, edge_counts = [], []
    for s, k in enumerate(keep):
        local = [(k.index(t), k.index(t + 1)) for t in range(len(X[s]) - 1)
                 if t in k and t + 1 in k]
        edges += [(a + node_offsets[s], b + node_offsets[s]) for a, b in local]
        edge_counts.append(len(local))
    b = red.batch
    np.testing.assert_array_equal(b.node_offsets, node_offsets)
    np.testing.assert_array_equal(b.edges, np.array(edges).reshape(-1, 2))
    np.testing.assert_array_equal(b.edge_offsets, np.concatenate([[0], np.cumsum(edge_counts)]))
    feats = np.vstack([X[s][k] for s, k in enumerate(keep)])
    np.testing.assert_allclose(red.features[red.xrow].toarray(), feats)
    np.testing.assert_array_equal(red.y, codes[codes >= 0])
    assert red.edge_features.shape[0] == len(edges) and red.tied
    # a chain with a gap is a forest (tree max-sum), the others stay Viterbi chains
    gap = [any(t not in k for t in range(min(k), max(k) + 1)) if k else False for k in keep]
    assert gap == [True, False, False, False, True, False]
    np.testing.assert_array_equal(red.kind, np.where(gap, TREE, CHAIN))
    assert (red.n_classes, red.cmap.tolist()) == (design.n_classes, design.cmap.tolist())


def test_drop_unknown_is_the_design_itself_when_every_label_is_known():
    X, y = chain_data()
    design, _ = ChainModel().fit_design(X, y)
    assert design.drop_unknown() is design


def test_drop_unknown_of_graphs_matches_the_design_of_the_reduced_graphs():
    X, y = graph_data()
    yp = hide(y, GRAPH_UNKNOWN)
    model = GraphModel()
    design, _ = model.fit_design(X, yp)
    red = design.drop_unknown()
    Xr, yr = reduce_graphs(X, yp)
    ref, _ = model.design(Xr, yr)
    for name in ("node_offsets", "edges", "edge_offsets"):
        np.testing.assert_array_equal(getattr(red.batch, name), getattr(ref.batch, name))
    np.testing.assert_allclose(red.features[red.xrow].toarray(),
                               ref.features[ref.xrow].toarray())
    np.testing.assert_allclose(red.edge_features.toarray(), ref.edge_features.toarray())
    np.testing.assert_array_equal(red.y, ref.y)
    assert red.tied == ref.tied
    # decoders: the chain-shaped graph with a gap becomes a forest; the others keep theirs
    want = design.kind.copy()
    assert want[1] == CHAIN
    want[1] = TREE
    np.testing.assert_array_equal(red.kind, want)


# -------------------------------------------------- StructuredSVM on partial y
@pytest.mark.parametrize("solver, kw, atol", [
    ("one_slack", dict(tol=1e-8, max_iter=500), 1e-6),
    ("bcfw", dict(tol=1e-7, max_iter=600, check_every=10), 2e-2),
])
def test_ssvm_on_partial_chains_equals_ssvm_on_their_labelled_runs(solver, kw, atol):
    """A chain with gaps scores like its labelled runs as separate chains (the hinge is
    a sum over the forest's components) and C multiplies the sum of the hinges: one
    objective, one minimiser."""
    X, y = chain_data(seed=1)
    yp = hide(y)
    Xs, ys = split_chains(X, yp)
    a = StructuredSVM(C=2.0, solver=solver, random_state=0, **kw).fit(X, yp)
    b = StructuredSVM(C=2.0, solver=solver, random_state=0, **kw).fit(Xs, ys)
    assert a.classes_.tolist() == b.classes_.tolist()
    np.testing.assert_allclose(a.coef_, b.coef_, atol=atol)
    # the weights are not those of the full labels
    full = StructuredSVM(C=2.0, solver=solver, random_state=0, **kw).fit(X, y)
    assert np.abs(full.coef_ - a.coef_).max() > 10 * atol


def test_ssvm_on_partial_graphs_equals_ssvm_on_the_reduced_graphs():
    X, y = graph_data(seed=2)
    yp = hide(y, GRAPH_UNKNOWN)
    Xr, yr = reduce_graphs(X, yp)
    kw = dict(C=5.0, solver="one_slack", tol=1e-8, max_iter=500)
    a = StructuredSVM(**kw).fit(X, yp)
    b = StructuredSVM(**kw).fit(Xr, yr)
    np.testing.assert_allclose(a.coef_, b.coef_, atol=1e-6)
    # and its primal is the enumerated one of the reduced graphs
    K = 3
    samples = [(f, e, len(f)) for f, e, _ in Xr]
    truth = [np.searchsorted(a.classes_, lab) for lab in yr]
    w = a.coef_
    primal = 0.0
    for (f, e, n), t, (_, _, ef) in zip(samples, truth, Xr):
        labs = labellings(n, K)
        Phi = np.array([phi(f, e, h, K, ef) for h in labs])
        primal += np.max((labs != t).sum(axis=1) + Phi @ w) - phi(f, e, t, K, ef) @ w
    lam = 1.0 / (kw["C"] * len(X))
    assert a.history_["primal"][-1] == pytest.approx(0.5 * lam * w @ w + primal / len(X),
                                                     rel=1e-9)


# ------------------------------------------------- the CRF's marginal likelihood
def _crf_setup(kind, seed=0):
    if kind == "chain":
        X, y = chain_data(seed=seed)
        yp = hide(y)
        model = ChainModel()
        samples = [(x, chain_edges(len(x)), len(x)) for x in X]
    else:   # trees (exact marginals)
        rng = np.random.default_rng(seed)
        X, yp = [], []
        for n, u in [(4, [1]), (5, [0, 3]), (3, []), (4, [0, 1, 2, 3])]:
            e = np.array([[int(rng.integers(0, t)), t] for t in range(1, n)])
            X.append((rng.normal(size=(n, 2)), e))
            lab = np.array(NAMES[rng.integers(0, 3, n)], dtype=object)
            lab[u] = None
            yp.append(lab)
        yp[2][:] = NAMES
        model = GraphModel()
        samples = [(f, e, len(f)) for f, e in X]
    design, _ = model.fit_design(X, yp)
    allowed = allowed_states(model, design)[0]
    return X, yp, model, design, allowed, samples


@pytest.mark.parametrize("kind", ["chain", "tree"])
def test_crf_objective_with_unknown_labels_matches_enumeration(kind):
    X, yp, model, design, allowed, samples = _crf_setup(kind)
    K = design.n_classes
    # the allowed labels: every class at an unknown node, the label elsewhere
    codes = design.y
    np.testing.assert_array_equal(allowed[codes < 0], True)
    np.testing.assert_array_equal(allowed[codes >= 0],
                                  np.eye(K, dtype=bool)[codes[codes >= 0]])
    C = 0.7
    obj = CRFObjective(design, C, allowed=allowed)
    al = split_flat(allowed, design)
    base = [np.ones_like(a) for a in al]
    rng = np.random.default_rng(1)
    for _ in range(3):
        w = rng.normal(size=obj.n_weights)
        value, grad = obj.value_grad(w)
        ref_v, ref_g = crf_brute(samples, al, base, K, w, C)
        assert value == pytest.approx(ref_v, rel=1e-10)
        np.testing.assert_allclose(grad, ref_g, atol=1e-9)
        # and the gradient is the objective's (central differences)
        for _ in range(3):
            d = rng.normal(size=w.shape)
            eps = 1e-5
            fd = (obj.value_grad(w + eps * d)[0] - obj.value_grad(w - eps * d)[0]) / (2 * eps)
            assert fd == pytest.approx(grad @ d, rel=1e-5, abs=1e-6)


def test_crf_objective_with_known_labels_is_the_ordinary_likelihood():
    X, y = chain_data(seed=3)
    model = ChainModel()
    design, _ = model.fit_design(X, y)
    allowed, codes = allowed_states(model, design)
    np.testing.assert_array_equal(allowed, np.eye(design.n_classes, dtype=bool)[design.y])
    plain = CRFObjective(design, 1.3)
    marg = CRFObjective(design, 1.3, allowed=allowed)
    assert plain.fused and not marg.fused
    rng = np.random.default_rng(0)
    for _ in range(3):
        w = rng.normal(size=plain.n_weights)
        v0, g0 = plain.value_grad(w)
        v1, g1 = marg.value_grad(w)
        assert v1 == pytest.approx(v0, rel=1e-10)
        np.testing.assert_allclose(g1, g0, atol=1e-9)


@pytest.mark.parametrize("kind", ["chain", "tree"])
def test_nonlocal_crf_on_partial_labels_reaches_a_minimum_of_the_marginal_likelihood(kind):
    X, yp, model, design, allowed, _ = _crf_setup(kind, seed=4)
    C = 1.0
    crf = NonLocalCRF(model=model, C=C, tol=1e-12, max_iter=500).fit(X, yp)
    obj = CRFObjective(design, C, allowed=allowed)
    w = crf.coef_.copy()
    value, grad = obj.value_grad(w)
    g0 = obj.value_grad(np.zeros_like(w))[1]
    assert np.linalg.norm(grad) <= 1e-4 * np.linalg.norm(g0)
    rng = np.random.default_rng(0)
    for _ in range(10):
        d = rng.normal(size=w.shape)
        d *= 1e-2 / np.linalg.norm(d)
        assert obj.value_grad(w + d)[0] >= value - 1e-12
    pred = crf.predict(X)
    assert [len(p) for p in pred] == [len(x[0] if isinstance(x, tuple) else x) for x in X]
    # not the minimum of the likelihood with the unknown nodes left out of the samples
    # altogether: their neighbours' transitions still count
    assert np.linalg.norm(grad) < 1e-2 * np.linalg.norm(
        CRFObjective(design.drop_unknown(), C).value_grad(w)[1])


@pytest.mark.parametrize("kw, what", [
    (dict(energy=NearestStatistic("marginals")), "energy=None"),
    (dict(feature_pairs="seen"), "feature_pairs='all'"),
    (dict(solver="sgd"), "solver='lbfgs'"),
])
def test_nonlocal_crf_refuses_unknown_labels_it_cannot_marginalise(kw, what):
    X, y = chain_data()
    with pytest.raises(ValueError, match=r"unknown labels \(None in y\).*" + what):
        NonLocalCRF(**kw).fit(X, hide(y))
    NonLocalCRF(max_iter=2, **kw).fit(X, y)   # full labels: fine


# ------------------------------------- LatentStructuredSVM with a plain model
def _latent_plain(seed=0, solver="one_slack"):
    X, y = chain_data(seed=seed, K=2)
    yp = hide(y)
    kw = dict(tol=1e-8, max_iter=500) if solver == "one_slack" else dict(max_iter=50)
    lat = LatentStructuredSVM(estimator=StructuredSVM(model=ChainModel(), C=3.0, solver=solver,
                                                      **kw),
                              max_iter=10, random_state=seed).fit(X, yp)
    return X, y, yp, lat


@pytest.mark.parametrize("solver", ["one_slack", "bcfw", "subgradient"])
def test_latent_ssvm_imputes_the_best_labels_consistent_with_the_known_ones(solver):
    X, y, yp, lat = _latent_plain(solver=solver)
    classes = lat.classes_
    K = len(classes)
    imputed = lat.latent(X, yp)
    for x, lab, got in zip(X, yp, imputed):
        T = len(x)
        ok = np.ones((T, K), bool)
        for t, v in enumerate(lab):
            if v is not None:
                ok[t] = classes == v
        labs = labellings(T, K, ok)
        scores = np.array([phi(x, chain_edges(T), h, K) @ lat.coef_ for h in labs])
        best = labs[np.argmax(scores)]
        if len(labs) > 1:   # no tie
            assert np.diff(np.sort(scores)[-2:])[0] > 1e-9
        np.testing.assert_array_equal(got, classes[best])
        known = np.array([v is not None for v in lab])
        np.testing.assert_array_equal(got[known], np.asarray(lab)[known].astype(str))


def test_latent_ssvm_imputed_labels_weigh_nothing_in_the_loss():
    """At the end of CCCP the convex step's primal is that of the imputed labels as the
    truth with a zero loss at the imputed nodes (and it is not the one that counts
    them)."""
    X, y, yp, lat = _latent_plain()
    assert lat.history_["n_changed"][-1] == 0
    classes = lat.classes_
    K = len(classes)
    H = [np.searchsorted(classes, h) for h in lat.latent(X, yp)]
    samples = [(x, chain_edges(len(x)), len(x)) for x in X]
    zero = [np.array([0.0 if v is None else 1.0 for v in lab]) for lab in yp]
    ones = [np.ones(len(lab)) for lab in yp]
    group = np.arange(K)
    want = ssvm_primal(lat.coef_, samples, H, zero, group, K, 3.0)
    counted = ssvm_primal(lat.coef_, samples, H, ones, group, K, 3.0)
    assert lat.history_["primal"][-1] == pytest.approx(want, rel=1e-7)
    assert counted - want > 1e-3


def test_latent_ssvm_with_full_labels_is_the_plain_ssvm():
    X, y = chain_data(seed=5)
    for solver, kw in [("one_slack", dict(tol=1e-8, max_iter=300)),
                       ("bcfw", dict(max_iter=30)), ("subgradient", dict(max_iter=20))]:
        svm = StructuredSVM(model=ChainModel(), C=2.0, solver=solver, random_state=3, **kw)
        lat = LatentStructuredSVM(estimator=svm, random_state=0).fit(X, y)
        ref = StructuredSVM(model=ChainModel(), C=2.0, solver=solver, random_state=3,
                            **kw).fit(X, y)
        assert lat.n_iter_ == 1 and lat.history_["n_changed"].tolist() == [0]
        np.testing.assert_allclose(lat.coef_, ref.coef_, rtol=1e-12, atol=1e-12)
        for a, b in zip(lat.predict(X), ref.predict(X)):
            np.testing.assert_array_equal(a, b)
        for a, b in zip(lat.latent(X, y), y):
            np.testing.assert_array_equal(a, b)


@pytest.mark.parametrize("kw", [dict(surrogate="slack"), dict(surrogate="poslearn"),
                                dict(solver="extragradient")])
def test_latent_ssvm_refuses_slack_rescaling_with_a_plain_model(kw):
    # slack rescaling counts every node's error with unit weight: the imputed labels
    # would count in the loss
    X, y = chain_data()
    with pytest.raises(ValueError, match="LatentStructuredSVM needs"):
        LatentStructuredSVM(estimator=StructuredSVM(model=ChainModel(), max_iter=3, **kw),
                            max_iter=2).fit(X, hide(y))
