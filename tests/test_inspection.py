"""Explanations of weights and predictions (skstruct.inspection) against the fitted
weights they read and against brute force over the labellings of small samples."""

import itertools
import math

import numpy as np
import pytest
import scipy.sparse as sp
from sklearn.exceptions import NotFittedError
from sklearn.feature_extraction import DictVectorizer
from sklearn.pipeline import make_pipeline

from skstruct import CRF, StructuredPerceptron, StructuredSVM
from skstruct.inspection import (
    PredictionExplanation,
    WeightsExplanation,
    explain_prediction,
    explain_weights,
)
from skstruct.models import ChainModel, GraphModel
from skstruct.preprocessing import NodeTransformer

# ------------------------------------------------------------------------------ data
# CoNLL-2000-like sentences: (word, POS tag, chunk tag)
SENTENCES = [
    [("He", "PRP", "B-NP"), ("reckons", "VBZ", "B-VP"), ("the", "DT", "B-NP"),
     ("current", "JJ", "I-NP"), ("deficit", "NN", "I-NP"), (".", ".", "O")],
    [("The", "DT", "B-NP"), ("pound", "NN", "I-NP"), ("rose", "VBD", "B-VP"),
     ("sharply", "RB", "B-ADVP"), (".", ".", "O")],
    [("Sales", "NNS", "B-NP"), ("will", "MD", "B-VP"), ("rise", "VB", "I-VP"),
     ("in", "IN", "B-PP"), ("March", "NNP", "B-NP"), (".", ".", "O")],
    [("Traders", "NNS", "B-NP"), ("expect", "VBP", "B-VP"), ("a", "DT", "B-NP"),
     ("rise", "NN", "I-NP"), ("in", "IN", "B-PP"), ("the", "DT", "B-NP"),
     ("pound", "NN", "I-NP"), (".", ".", "O")],
    [("It", "PRP", "B-NP"), ("fell", "VBD", "B-VP"), ("in", "IN", "B-PP"),
     ("June", "NNP", "B-NP"), (",", ",", "O"), ("analysts", "NNS", "B-NP"),
     ("said", "VBD", "B-VP"), (".", ".", "O")],
]


def token_features(sent, i):
    word, pos, _ = sent[i]
    f = {"bias": 1.0, "word.lower()": word.lower(), "word.istitle()": word.istitle(),
         "postag": pos}
    if i > 0:
        f["-1:postag"] = sent[i - 1][1]
    else:
        f["BOS"] = True
    if i + 1 < len(sent):
        f["+1:postag"] = sent[i + 1][1]
    else:
        f["EOS"] = True
    return f


def conll_like():
    X = [[token_features(s, i) for i in range(len(s))] for s in SENTENCES]
    y = [[t[2] for t in s] for s in SENTENCES]
    return X, y


@pytest.fixture(scope="module")
def pipeline():
    X, y = conll_like()
    pipe = make_pipeline(NodeTransformer(DictVectorizer()), CRF(C=10.0, max_iter=200))
    return pipe.fit(X, y), X, y


def marker_data(seed=0, n_samples=12):
    """Chains over labels A, B, C and features only_a (present exactly on the A nodes),
    common (on every node) and two noise features."""
    rng = np.random.default_rng(seed)
    X, y = [], []
    for _ in range(n_samples):
        n = int(rng.integers(3, 6))
        labels = rng.choice(np.array(["A", "B", "C"]), size=n)
        x = np.column_stack([(labels == "A").astype(float), np.ones(n),
                             rng.random(n), rng.random(n)])
        X.append(x)
        y.append(labels)
    return X, y


MARKER_NAMES = ["only_a", "common", "noise1", "noise2"]


@pytest.fixture(scope="module")
def marker_crf():
    X, y = marker_data()
    return CRF(C=10.0, max_iter=200).fit(X, y), X, y


def brute_force_best(unary, edges, tables, ef=None):
    """The best labelling and its score, over every labelling of a small sample."""
    n, K = unary.shape
    best, best_score = None, -np.inf
    for lab in itertools.product(range(K), repeat=n):
        lab = np.array(lab)
        s = unary[np.arange(n), lab].sum()
        for e, (a, b) in enumerate(edges):
            s += tables[0, lab[a], lab[b]] if ef is None else ef[e] @ tables[:, lab[a], lab[b]]
        if s > best_score:
            best, best_score = lab, s
    return best, best_score


# -------------------------------------------------------------------- explain_weights
def test_a_feature_seen_only_with_a_label_is_its_largest_weight(marker_crf):
    crf, _, _ = marker_crf
    exp = explain_weights(crf, feature_names=MARKER_NAMES)
    assert isinstance(exp, WeightsExplanation)
    assert list(exp.targets) == ["A", "B", "C"]
    assert exp.targets["A"].positive[0].name == "only_a"
    # and it speaks against the other labels
    for other in ("B", "C"):
        assert "only_a" in [f.name for f in exp.targets[other].negative]
    k = list(crf.classes_).index("A")
    assert exp.targets["A"].positive[0].weight == crf.unary_coef_[k, 0]


def test_weights_are_the_fitted_ones_in_order(marker_crf):
    crf, _, _ = marker_crf
    U = crf.unary_coef_
    exp = explain_weights(crf, top=2, feature_names=MARKER_NAMES)
    np.testing.assert_array_equal(exp.classes, crf.classes_)
    np.testing.assert_array_equal(exp.tables, crf.pairwise_coef_)
    np.testing.assert_array_equal(exp.transitions, crf.pairwise_coef_[0])
    assert exp.n_nonzero == np.count_nonzero(crf.coef_)
    for k, label in enumerate(crf.classes_):
        t = exp.targets[label]
        assert t.n_positive == np.sum(U[k] > 0) and t.n_negative == np.sum(U[k] < 0)
        assert len(t.positive) == min(2, t.n_positive)
        assert len(t.negative) == min(2, t.n_negative)
        pos = np.sort(U[k][U[k] > 0])[::-1][:2]
        neg = np.sort(U[k][U[k] < 0])[:2]
        np.testing.assert_array_equal([f.weight for f in t.positive], pos)
        np.testing.assert_array_equal([f.weight for f in t.negative], neg)
        for f in t.positive + t.negative:
            assert U[k, MARKER_NAMES.index(f.name)] == f.weight


def test_top_larger_than_the_number_of_features(marker_crf):
    crf, _, _ = marker_crf
    exp = explain_weights(crf, top=100, feature_names=MARKER_NAMES)
    for k, label in enumerate(crf.classes_):
        t = exp.targets[label]
        assert len(t.positive) == t.n_positive and len(t.negative) == t.n_negative
        assert len(t.positive) + len(t.negative) == np.count_nonzero(crf.unary_coef_[k])
        assert sorted(f.name for f in t.positive + t.negative) == sorted(
            np.array(MARKER_NAMES)[crf.unary_coef_[k] != 0])
    assert "more positive" not in exp.to_text() and "more negative" not in exp.to_text()
    one = explain_weights(crf, top=1, feature_names=MARKER_NAMES)
    hidden = sum(t.n_positive - 1 for t in one.targets.values() if t.n_positive > 1)
    assert hidden > 0
    assert one.to_text().count("more positive") == sum(
        t.n_positive > 1 for t in one.targets.values())


def test_ties_are_broken_by_name():
    # two identical columns get identical weights (their gradients are equal at every step)
    X, y = marker_data(1)
    X = [np.column_stack([x[:, 0], x[:, 0], x[:, 1:]]) for x in X]
    crf = CRF(C=10.0, max_iter=200).fit(X, y)
    np.testing.assert_array_equal(crf.unary_coef_[:, 0], crf.unary_coef_[:, 1])
    exp = explain_weights(crf, feature_names=["zeta", "alpha", "common", "n1", "n2"])
    assert [f.name for f in exp.targets["A"].positive[:2]] == ["alpha", "zeta"]
    neg = [f.name for f in exp.targets["B"].negative]
    assert neg.index("alpha") + 1 == neg.index("zeta")


def test_labels_selects_and_orders_the_targets(marker_crf):
    crf, _, _ = marker_crf
    exp = explain_weights(crf, labels=["C", "A"])
    assert list(exp.targets) == ["C", "A"]
    with pytest.raises(ValueError, match="'D' is not one of the estimator's classes"):
        explain_weights(crf, labels=["D"])


def test_default_feature_names(marker_crf):
    crf, _, _ = marker_crf
    exp = explain_weights(crf, top=100)
    assert set(exp.feature_names) == {"x0", "x1", "x2", "x3"}
    assert exp.targets["A"].positive[0].name == "x0"


def test_text_layout(marker_crf):
    crf, _, _ = marker_crf
    text = explain_weights(crf, feature_names=MARKER_NAMES).to_text()
    lines = text.splitlines()
    table = lines[1:5]          # the header and one row per class
    assert len({len(line) for line in table}) == 1
    assert table[0].split() == ["A", "B", "C"]
    for row, k in zip(table[1:], range(3)):
        assert row.split()[0] == crf.classes_[k]
        np.testing.assert_allclose([float(v) for v in row.split()[1:]],
                                   crf.pairwise_coef_[0, k], atol=5e-4)
    assert "y='A' top features" in text and "only_a" in text


def test_html_escapes_names_and_labels():
    X, y = marker_data(2)
    y = [np.where(lab == "A", "<A>", lab) for lab in y]
    crf = CRF(C=10.0, max_iter=100).fit(X, y)
    names = ["<b>", "a&b", "noise1", "noise2"]
    exp = explain_weights(crf, feature_names=names)
    out = exp.to_html()
    assert exp._repr_html_() == out
    assert "<b>" not in out and "&lt;b&gt;" in out and "a&amp;b" in out
    assert "<A>" not in out and "&lt;A&gt;" in out
    assert out.startswith("<div") and out.endswith("</div>")
    assert out.count("<table") == out.count("</table>") == 1 + len(crf.classes_)
    pred = explain_prediction(crf, X[0], feature_names=names)
    out = pred.to_html()
    assert pred._repr_html_() == out
    assert "<b>" not in out and "&lt;b&gt;" in out
    assert "<A>" not in out
    assert out.count("<table") == X[0].shape[0]


# ------------------------------------------------------------------ explain_prediction
def _check_identity(est, x, exp):
    """Each token's listed contributions sum to its node score, and node score plus
    transition are the potentials the estimator decodes."""
    design, _, (unary, tables, pwi) = est._potentials([x])
    K = len(est.classes_)
    ks = np.searchsorted(est.classes_, exp.labels)
    n = unary.shape[0]
    assert len(exp.tokens) == n
    node_ref = unary[np.arange(n), ks]
    trans_ref = np.zeros(n)
    b = design.batch
    for e in range(b.n_edges):
        a, c = b.edges[e]
        trans_ref[c] += tables[pwi[e], ks[a], ks[c]]
    for t, tok in enumerate(exp.tokens):
        assert tok.n_features == len(tok.features)       # top covers every feature here
        assert math.isclose(math.fsum(f.contribution for f in tok.features),
                            tok.feature_score, rel_tol=1e-12, abs_tol=1e-12)
        for f in tok.features:
            assert f.contribution == f.value * f.weight
        assert math.isclose(tok.feature_score, node_ref[t], rel_tol=1e-12, abs_tol=1e-12)
        assert math.isclose(tok.transition, trans_ref[t], rel_tol=1e-12, abs_tol=1e-12)
        assert tok.total == tok.feature_score + tok.transition
        assert tok.label == exp.labels[t]
        assert 0 <= ks[t] < K
    assert math.isclose(exp.score, node_ref.sum() + trans_ref.sum(), rel_tol=1e-12,
                        abs_tol=1e-12)


def test_contributions_add_up_to_the_decoded_potentials(marker_crf):
    crf, X, _ = marker_crf
    for x in X[:4]:
        exp = explain_prediction(crf, x, top=100, feature_names=MARKER_NAMES)
        assert isinstance(exp, PredictionExplanation)
        np.testing.assert_array_equal(exp.labels, crf.predict([x])[0])
        _check_identity(crf, x, exp)
        # the same scores, from the public weights: unary_coef_ @ x plus a transition row
        ks = np.searchsorted(crf.classes_, exp.labels)
        for t, tok in enumerate(exp.tokens):
            ref = crf.unary_coef_[ks[t]] @ x[t]
            if t:
                ref += crf.pairwise_coef_[0, ks[t - 1], ks[t]]
            assert math.isclose(tok.total, ref, rel_tol=1e-12, abs_tol=1e-12)
            assert tok.previous == ((t - 1,) if t else ())
        # the predicted labelling is the best under these scores
        U = x @ crf.unary_coef_.T
        edges = np.column_stack([np.arange(len(x) - 1), np.arange(1, len(x))])
        best, best_score = brute_force_best(U, edges, crf.pairwise_coef_)
        assert math.isclose(exp.score, best_score, rel_tol=1e-9)


def test_marginal_probability_of_the_predicted_label(marker_crf):
    crf, X, _ = marker_crf
    exp = explain_prediction(crf, X[0])
    m = crf.predict_marginals([X[0]])[0]
    ks = np.searchsorted(crf.classes_, exp.labels)
    np.testing.assert_allclose([tok.probability for tok in exp.tokens],
                               m[np.arange(len(ks)), ks], rtol=0, atol=0)


def test_top_limits_the_listed_features_not_the_score(marker_crf):
    crf, X, _ = marker_crf
    full = explain_prediction(crf, X[0], top=100)
    short = explain_prediction(crf, X[0], top=1)
    for a, b in zip(full.tokens, short.tokens):
        assert len(b.features) == 1 and b.n_features == a.n_features
        assert b.feature_score == a.feature_score and b.total == a.total
        assert abs(b.features[0].contribution) == max(abs(f.contribution) for f in a.features)
    text = short.to_text()
    assert "more features" in text
    assert sum(line.startswith("token ") for line in text.splitlines()) == len(X[0])


def test_pipeline_of_dict_features(pipeline):
    pipe, X, y = pipeline
    vec = pipe[0].transformer_
    crf = pipe[-1]
    exp = explain_weights(pipe, top=5)
    names = list(pipe[0].get_feature_names_out())
    assert list(exp.feature_names) == names
    for k, label in enumerate(crf.classes_):
        for f in exp.targets[label].positive + exp.targets[label].negative:
            assert crf.unary_coef_[k, vec.vocabulary_[f.name]] == f.weight
    # "." is always tagged O, and every O is a "." or ","
    assert {"postag=.", "word.lower()=."} & {f.name for f in exp.targets["O"].positive[:3]}
    assert exp.targets["B-NP"].positive[0].weight == max(crf.unary_coef_[
        list(crf.classes_).index("B-NP")])

    for x in X:
        pred = explain_prediction(pipe, x, top=1000)
        np.testing.assert_array_equal(pred.labels, pipe.predict([x])[0])
        _check_identity(crf, pipe[:-1].transform([x])[0], pred)
        for tok, feats in zip(pred.tokens, x):
            # a feature listed is one the token has, with its value
            for f in tok.features:
                key, _, value = f.name.partition("=")
                assert key in feats and (value == "" or feats[key] == value)
    assert pred.tokens[-1].features   # the last token has contributing features


def test_feature_names_override_the_pipelines(pipeline):
    pipe, _, _ = pipeline
    n = pipe[-1].n_features_in_
    exp = explain_weights(pipe, feature_names=[f"f{j}" for j in range(n)])
    assert exp.feature_names[0] == "f0"


# ---------------------------------------------------------------- other estimators
@pytest.mark.filterwarnings("ignore::sklearn.exceptions.ConvergenceWarning")
@pytest.mark.parametrize("make", [
    lambda: StructuredPerceptron(max_iter=10, random_state=0),
    lambda: StructuredSVM(C=1.0, max_iter=20, random_state=0),
    lambda: CRF(model=ChainModel(bias=True, start_end=True), C=10.0, max_iter=100),
])
def test_other_estimators_and_model_features(make):
    X, y = marker_data(3)
    est = make().fit(X, y)
    exp = explain_weights(est, top=100, feature_names=MARKER_NAMES)
    extra = list(exp.feature_names[4:])
    model = est.model_
    assert extra == (["<BIAS>", "<START>", "<END>"] if getattr(model, "bias", False) else [])
    for k, label in enumerate(est.classes_):
        t = exp.targets[label]
        assert len(t.positive) + len(t.negative) == np.count_nonzero(est.unary_coef_[k])
    for x in X[:3]:
        pred = explain_prediction(est, x, top=100, feature_names=MARKER_NAMES)
        np.testing.assert_array_equal(pred.labels, est.predict([x])[0])
        _check_identity(est, x, pred)
    if extra:
        first = {f.name for f in pred.tokens[0].features}
        last = {f.name for f in pred.tokens[-1].features}
        assert "<START>" in first and "<END>" not in first
        assert "<END>" in last and "<START>" not in last


def test_nonlocal_crf_is_explained_by_its_crf_part():
    from skstruct import NonLocalCRF
    from skstruct.energies import NearestStatistic

    X, y = marker_data(5)
    nl = NonLocalCRF(C=10.0, max_iter=50, energy=NearestStatistic("marginals"),
                     energy_max_iter=1, random_state=0).fit(X, y)
    exp = explain_weights(nl, feature_names=MARKER_NAMES)
    assert exp.targets["A"].positive[0].name == "only_a"
    np.testing.assert_array_equal(exp.tables, nl.pairwise_coef_)
    pred = explain_prediction(nl, X[0], top=100)
    np.testing.assert_array_equal(pred.labels, nl.predict([X[0]])[0])
    m = nl.predict_marginals([X[0]])[0]
    ks = np.searchsorted(nl.classes_, pred.labels)
    np.testing.assert_array_equal([t.probability for t in pred.tokens], m[np.arange(len(ks)), ks])
    for t, tok in enumerate(pred.tokens):
        ref = nl.unary_coef_[ks[t]] @ X[0][t]
        if t:
            ref += nl.pairwise_coef_[0, ks[t - 1], ks[t]]
        assert math.isclose(tok.total, ref, rel_tol=1e-12, abs_tol=1e-12)


def test_tree_with_edge_features_and_an_undirected_model():
    rng = np.random.default_rng(4)
    X, y = [], []
    for _ in range(10):
        n = 5
        parent = np.array([rng.integers(0, v) for v in range(1, n)])
        edges = np.column_stack([parent, np.arange(1, n)])
        ef = rng.random((n - 1, 2))
        labels = rng.integers(0, 3, size=n)
        x = np.column_stack([np.eye(3)[labels] + 0.3 * rng.random((n, 3)), np.ones(n)])
        X.append((x, edges, ef))
        y.append(labels)
    for model in (GraphModel(), GraphModel(directed=False)):
        crf = CRF(model=model, C=1.0, max_iter=100).fit(X, y)
        exp = explain_weights(crf)
        assert exp.tables.shape == (2, 3, 3)
        np.testing.assert_array_equal(exp.transitions, exp.tables[0])
        if not model.directed:
            np.testing.assert_array_equal(exp.tables, np.swapaxes(exp.tables, 1, 2))
        for sample in X[:3]:
            pred = explain_prediction(crf, sample, top=100)
            _check_identity(crf, sample, pred)
            best, best_score = brute_force_best(sample[0] @ crf.unary_coef_.T, sample[1],
                                                exp.tables, sample[2])
            assert math.isclose(pred.score, best_score, rel_tol=1e-9)
            for v, tok in enumerate(pred.tokens):
                assert tok.previous == tuple(sample[1][sample[1][:, 1] == v, 0])


def test_sparse_sample(marker_crf):
    crf, X, _ = marker_crf
    dense = explain_prediction(crf, X[0])
    sparse = explain_prediction(crf, sp.csr_matrix(X[0]))
    assert [t.total for t in dense.tokens] == pytest.approx([t.total for t in sparse.tokens])


# ----------------------------------------------------------------------- bad input
def test_not_fitted():
    with pytest.raises(NotFittedError):
        explain_weights(CRF())
    with pytest.raises(NotFittedError):
        explain_prediction(CRF(), np.ones((2, 3)))
    with pytest.raises(NotFittedError):
        explain_weights(make_pipeline(NodeTransformer(DictVectorizer()), CRF()))


def test_feature_names_of_the_wrong_length(marker_crf):
    crf, X, _ = marker_crf
    with pytest.raises(ValueError, match="feature_names has 3 names but CRF was fitted on 4 "
                                         "features"):
        explain_weights(crf, feature_names=["a", "b", "c"])
    with pytest.raises(ValueError, match="has 5 names .* 4 features"):
        explain_prediction(crf, X[0], feature_names=list("abcde"))
    with pytest.raises(ValueError, match="sequence of strings"):
        explain_weights(crf, feature_names="abcd")


@pytest.mark.parametrize("top", [0, -1, 2.5, True, "3"])
def test_bad_top(marker_crf, top):
    crf, X, _ = marker_crf
    with pytest.raises(ValueError, match="top must be a positive integer"):
        explain_weights(crf, top=top)
    with pytest.raises(ValueError, match="top must be a positive integer"):
        explain_prediction(crf, X[0], top=top)


def test_bad_samples(marker_crf):
    crf, X, _ = marker_crf
    with pytest.raises(ValueError, match="x: node features of shape \\(3, 2\\); CRF was "
                                         "fitted on 4 features"):
        explain_prediction(crf, np.ones((3, 2)))
    with pytest.raises(ValueError, match="x: the node features must be 2-D"):
        explain_prediction(crf, np.ones(4))
    with pytest.raises(ValueError, match="x: CRF's ChainModel takes one node feature array"):
        explain_prediction(crf, (X[0], np.array([[0, 1]])))


@pytest.mark.filterwarnings("ignore::sklearn.exceptions.ConvergenceWarning")
def test_models_without_per_class_node_weights():
    from skstruct.models import MultiLabelModel

    Y = np.array([[0, 1], [1, 0], [1, 1], [0, 0]])
    X = np.array([[0.0, 1.0], [1.0, 0.0], [1.0, 1.0], [0.0, 0.0]])
    svm = StructuredSVM(model=MultiLabelModel(), max_iter=5).fit(X, Y)
    with pytest.raises(ValueError, match="ChainModel or a GraphModel.*MultiLabelModel"):
        explain_weights(svm)
