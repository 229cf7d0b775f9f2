"""Prediction under constraints (clamped labels, forbidden label pairs) and
``predict_marginals`` of the linear estimators, against enumeration of every labelling
scored by the model's own joint feature and ``coef_``."""

import itertools

import numpy as np
import pytest
from scipy.special import logsumexp

from skstruct import ApproxStructuredPredictor, StructuredPerceptron, StructuredSVM
from skstruct.models import ChainModel, GraphModel, MulticlassModel, MultiLabelModel
from tests.protocol_models import ProtocolChain

K = 3


def _data(kind, seed=0, n=12):
    """Small samples of each structure, labels 0..K-1 (2 for multi-label)."""
    rng = np.random.default_rng(seed)
    X, y = [], []
    if kind == "multilabel":
        Xm = rng.normal(size=(n, 3))
        Y = (Xm @ rng.normal(size=(3, 4)) + rng.normal(size=(n, 4)) > 0).astype(int)
        return Xm, Y, MultiLabelModel(edges="full")
    for _ in range(n):
        T = int(rng.integers(2, 6))
        x = rng.normal(size=(T, 3))
        if kind == "chain":
            X.append(x)
        elif kind == "tree":
            edges = np.array([[int(rng.integers(0, t)), t] for t in range(1, T)])
            X.append((x, edges))
        else:   # loopy: a cycle through every node plus a chord
            edges = [[t, (t + 1) % T] for t in range(T)] if T >= 3 else [[0, 1]]
            if T >= 4:
                edges.append([0, 2])
            X.append((x, np.array(edges)))
        y.append(rng.integers(0, K, T))
    y[0][:K] = np.arange(K)[:len(y[0])]
    X.append(rng.normal(size=(K, 3)) if kind == "chain" else
             (rng.normal(size=(K, 3)), np.array([[0, 1], [1, 2]])))
    y.append(np.arange(K))
    return X, y, ChainModel() if kind == "chain" else GraphModel()


def _labellings(est, x, n_nodes):
    """Every labelling (as values of ``classes_``) and its score ``coef_ . phi``."""
    labs = np.array(list(itertools.product(est.classes_, repeat=n_nodes)))
    scores = np.array([est.coef_ @ est.model_.joint_feature(x, lab) for lab in labs])
    return labs, scores


def _nodes(x):
    x = x[0] if isinstance(x, tuple) else x
    return 1 if np.ndim(x) == 1 else x.shape[0]


def _edges_of(est, x, n_nodes):
    if isinstance(x, tuple):
        return x[1]
    if isinstance(est.model_, MultiLabelModel):
        return est.model_.edges_
    return np.array([[t, t + 1] for t in range(n_nodes - 1)]).reshape(-1, 2)


def _satisfies(labs, edges, clamp, forbidden):
    ok = np.ones(len(labs), bool)
    for v, lab in (clamp or {}).items():
        ok &= labs[:, v] == lab
    for a, b in forbidden or ():
        for e in edges:
            ok &= ~((labs[:, e[0]] == a) & (labs[:, e[1]] == b))
    return ok


@pytest.mark.parametrize("kind", ["chain", "tree", "loopy", "multilabel"])
def test_constrained_predict_and_marginals_match_enumeration(kind):
    X, y, model = _data(kind)
    est = StructuredSVM(C=1.0, model=model, max_iter=30, random_state=0).fit(X, y)
    Xl = list(X)
    rng = np.random.default_rng(1)
    classes = est.classes_
    forbidden = [(classes[0], classes[1]), (classes[1], classes[1])]
    if kind == "multilabel":
        forbidden = forbidden[:1]
    clamp = []
    for x in Xl:
        T = _nodes(x) if kind != "multilabel" else y.shape[1]
        v = int(rng.integers(0, T))
        clamp.append(None if rng.random() < 0.3 else {v: classes[int(rng.integers(0, 2))]})
    Xp = Xl if kind != "multilabel" else X
    for cl, fb in ((None, None), (clamp, None), (None, forbidden), (clamp, forbidden)):
        cases = []
        for s, x in enumerate(Xl):
            T = _nodes(x) if kind != "multilabel" else y.shape[1]
            labs, scores = _labellings(est, x, T)
            ok = _satisfies(labs, _edges_of(est, x, T), None if cl is None else cl[s], fb)
            cases.append((T, labs, scores, ok))
        empty = [s for s, c in enumerate(cases) if not c[3].any()]
        if empty:
            # refused, naming the first sample the constraints leave without a labelling
            for call in (est.predict, est.predict_marginals):
                with pytest.raises(ValueError, match=f"sample {empty[0]}: no labelling"):
                    call(Xp, clamp=cl, forbidden=fb)
            continue
        pred = est.predict(Xp, clamp=cl, forbidden=fb)
        marg = est.predict_marginals(Xp, clamp=cl, forbidden=fb)
        for s, (T, labs, scores, ok) in enumerate(cases):
            best = scores[ok].max()
            got = np.asarray(pred[s])
            hit = np.flatnonzero(np.all(labs == got[None], axis=1))[0]
            assert ok[hit], (s, got)
            assert scores[hit] == pytest.approx(best, abs=1e-9)
            p = np.where(ok, np.exp(scores - logsumexp(scores[ok])), 0.0)
            want = np.stack([[p[labs[:, v] == c].sum() for c in classes] for v in range(T)])
            np.testing.assert_allclose(marg[s], want, atol=1e-6)


def test_clamp_formats_and_label_names():
    rng = np.random.default_rng(0)
    names = np.array(["B-NP", "I-NP", "O"])
    X = [rng.normal(size=(int(rng.integers(2, 6)), 3)) for _ in range(20)]
    y = [names[rng.integers(0, 3, len(x))] for x in X]
    est = StructuredSVM(C=1.0, max_iter=20, random_state=0).fit(X, y)
    base = est.predict(X)
    # a dict and a list with None at the free nodes say the same
    c_dict = [{0: "O"} for _ in X]
    c_list = [["O"] + [None] * (len(x) - 1) for x in X]
    a = est.predict(X, clamp=c_dict)
    b = est.predict(X, clamp=c_list)
    for p, q in zip(a, b):
        np.testing.assert_array_equal(p, q)
        assert p[0] == "O"
    # clamping a node to its predicted label changes nothing
    same = est.predict(X, clamp=[{0: p[0]} for p in base])
    for p, q in zip(same, base):
        np.testing.assert_array_equal(p, q)
    # BIO: no I-NP straight after O
    fb = est.predict(X, forbidden=[("O", "I-NP")])
    for p in fb:
        assert not any(a_ == "O" and b_ == "I-NP" for a_, b_ in zip(p[:-1], p[1:]))


def test_bad_constraints_are_refused_naming_the_problem():
    X, y, model = _data("chain")
    est = StructuredSVM(C=1.0, max_iter=5, random_state=0).fit(X, y)
    n = len(X)
    with pytest.raises(ValueError, match=r"clamp has 2 entries but X has"):
        est.predict(X, clamp=[None, None])
    with pytest.raises(ValueError, match=r"sample 3: the label clamped at node 1: 7 is not"):
        est.predict(X, clamp=[None] * 3 + [{1: 7}] + [None] * (n - 4))
    with pytest.raises(ValueError, match=r"sample 2: clamped node 99 is not a node index"):
        est.predict(X, clamp=[None] * 2 + [{99: 0}] + [None] * (n - 3))
    with pytest.raises(ValueError, match=r"sample 1: clamp must be None, a dict"):
        est.predict(X, clamp=[None, [0]] + [None] * (n - 2))
    with pytest.raises(ValueError, match=r"forbidden\[0\]\[1\]: 9 is not one of the labels"):
        est.predict(X, forbidden=[(0, 9)])
    with pytest.raises(ValueError, match=r"forbidden\[0\] must be a pair"):
        est.predict(X, forbidden=["ab"])
    # every transition forbidden: no sample of two nodes or more has a labelling
    every = [(a, b) for a in range(K) for b in range(K)]
    with pytest.raises(ValueError, match=r"sample 0: no labelling satisfies the constraints"):
        est.predict(X, forbidden=every)
    with pytest.raises(ValueError, match=r"sample 0: no labelling satisfies"):
        est.predict_marginals(X, forbidden=every)
    Xm = np.random.default_rng(0).normal(size=(20, 3))
    ym = np.arange(20) % 3
    mc = StructuredSVM(C=1.0, max_iter=5).fit(Xm, ym)
    with pytest.raises(ValueError, match="forbidden label pairs need a model whose samples"):
        mc.predict(Xm, forbidden=[(0, 1)])
    proto = StructuredSVM(model=ProtocolChain(), max_iter=2).fit(X, y)
    with pytest.raises(ValueError, match="need a built-in model"):
        proto.predict(X, clamp=[None] * n)
    with pytest.raises(ValueError, match="predict_marginals needs a built-in model"):
        proto.predict_marginals(X)


def test_other_estimators_decode_under_constraints():
    X, y, model = _data("chain")
    clamp = [{0: 2} for _ in X]
    for est in (StructuredPerceptron(max_iter=5, random_state=0),
                ApproxStructuredPredictor(max_iter=5)):
        est.fit(X, y)
        pred = est.predict(X, clamp=clamp, forbidden=[(2, 0)])
        for p in pred:
            assert p[0] == 2
            assert not np.any((p[:-1] == 2) & (p[1:] == 0))
    perc = StructuredPerceptron(max_iter=5, random_state=0).fit(X, y)
    marg = perc.predict_marginals(X)
    assert all(np.allclose(m.sum(axis=1), 1.0) for m in marg)
    # multiclass: one node per sample, the marginals are a softmax of the scores
    Xm = np.random.default_rng(0).normal(size=(30, 3))
    ym = np.arange(30) % 3
    mc = StructuredSVM(C=1.0, model=MulticlassModel(), max_iter=20).fit(Xm, ym)
    marg = np.vstack(mc.predict_marginals(Xm))
    assert marg.shape == (30, 3)
    np.testing.assert_array_equal(np.argmax(marg, axis=1), mc.predict(Xm))


@pytest.mark.parametrize("kind", ["chain", "tree"])
def test_predict_kbest_matches_enumeration(kind):
    X, y, model = _data(kind, seed=3)
    est = StructuredSVM(C=1.0, model=model, max_iter=30, random_state=0).fit(X, y)
    classes = est.classes_
    for cl, fb in ((None, None), ([{0: classes[1]}] * len(X), [(classes[2], classes[0])])):
        res = est.predict_kbest(X, 5, clamp=cl, forbidden=fb)
        pred = est.predict(X, clamp=cl, forbidden=fb)
        for s, x in enumerate(X):
            T = _nodes(x)
            labs, scores = _labellings(est, x, T)
            ok = _satisfies(labs, _edges_of(est, x, T), None if cl is None else cl[s], fb)
            want = np.sort(scores[ok])[::-1][:5]
            got_labels, got_scores = res[s]
            np.testing.assert_allclose(got_scores, want, atol=1e-9)
            for lab, sc in zip(got_labels, got_scores):
                hit = np.flatnonzero(np.all(labs == lab[None], axis=1))[0]
                assert ok[hit] and scores[hit] == pytest.approx(sc, abs=1e-9)
            assert est.coef_ @ est.model_.joint_feature(x, pred[s]) == pytest.approx(
                got_scores[0], abs=1e-9)
    loopy, yl, _ = _data("loopy")
    g = StructuredSVM(C=1.0, model=GraphModel(), max_iter=5).fit(loopy, yl)
    with pytest.raises(ValueError, match=r"sample 0"):
        g.predict_kbest(loopy, 3)


def test_nonlocal_crf_decodes_its_projected_model_under_constraints():
    """With an energy, constrained decoding reads the potentials of the projected model:
    an empty constraint set gives predict's answer, which the base CRF's differs from."""
    from skstruct import NonLocalCRF
    from skstruct.energies import NearestStatistic
    from skstruct.models._predict import design_potentials

    X, y, _ = _data("chain", seed=2, n=40)
    crf = NonLocalCRF(energy=NearestStatistic(), C=1.0, random_state=0).fit(X, y)
    free = crf.predict(X)
    none = crf.predict(X, forbidden=[])
    for p, q in zip(free, none):
        np.testing.assert_array_equal(p, q)
    design, _, (u, _, _) = crf._potentials(X)
    base = design_potentials(design, crf._W, crf._P)[0]
    assert not np.allclose(u, base)
