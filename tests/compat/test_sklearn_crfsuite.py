"""skstruct.compat.sklearn_crfsuite: sklearn-crfsuite's interface over skstruct's CRF.

Checked against brute force (marginals and sequence probabilities enumerated over
every labelling) and, when python-crfsuite / sklearn-crfsuite are installed, against
CRFsuite itself: the same objective gives the same weights, a CRFsuite model loaded
here tags as CRFsuite does, the features are read as python-crfsuite reads them.
"""

import inspect
import itertools
import pickle

import numpy as np
import pytest
from sklearn.base import clone
from sklearn.model_selection import GridSearchCV, RandomizedSearchCV, cross_val_score

from skstruct.compat import sklearn_crfsuite
from skstruct.compat.sklearn_crfsuite import CRF, metrics, scorers, utils
from skstruct.compat.sklearn_crfsuite.estimator import _item

ALGORITHMS = ["lbfgs", "l2sgd", "ap", "pa", "arow"]

# the constructor of sklearn-crfsuite 0.5, in its order, with its defaults
ORIGINAL_SIGNATURE = [
    ("algorithm", None), ("min_freq", None), ("all_possible_states", None),
    ("all_possible_transitions", None), ("c1", None), ("c2", None),
    ("max_iterations", None), ("num_memories", None), ("epsilon", None), ("period", None),
    ("delta", None), ("linesearch", None), ("max_linesearch", None),
    ("calibration_eta", None), ("calibration_rate", None), ("calibration_samples", None),
    ("calibration_candidates", None), ("calibration_max_trials", None), ("pa_type", None),
    ("c", None), ("error_sensitive", None), ("averaging", None), ("variance", None),
    ("gamma", None), ("verbose", False), ("model_filename", None),
    ("keep_tempfiles", False), ("trainer_cls", None),
]


def weather():
    X = [{"walk": 1, "shop": 0.5}, {"walk": 1}, {"walk": 1, "clean": 0.5},
         {"shop": 0.5, "clean": 0.5}, {"walk": 0.5, "clean": 1}, {"clean": 1, "shop": 0.1},
         {"walk": 1, "shop": 0.5}, {}, {"clean": 1}, {"sky": "grey", "clean": 1}]
    y = ["sunny"] * 3 + ["rainy"] * 3 + ["sunny"] * 2 + ["rainy"] * 2
    return X, y


def chunks(n=12, seed=0):
    """Small random sequences with string features and three labels."""
    rng = np.random.default_rng(seed)
    words = ["the", "a", "dog", "cat", "runs", "sees", "big", "red"]
    tags = {"the": "D", "a": "D", "dog": "N", "cat": "N", "runs": "V", "sees": "V",
            "big": "A", "red": "A"}
    X, y = [], []
    for _ in range(n):
        sent = rng.choice(words, size=rng.integers(2, 6)).tolist()
        X.append([{"w": w, "suffix": w[-2:], "bias": 1.0,
                   "prev": sent[i - 1] if i else "BOS"} for i, w in enumerate(sent)])
        y.append([tags[w] for w in sent])
    return X, y


def fitted(**kw):
    X, y = weather()
    return CRF(**kw).fit([X], [y])


def needs(module):
    return pytest.importorskip(module)


# ------------------------------------------------------------- the interface
def test_constructor_is_sklearn_crfsuites_in_its_order():
    sig = inspect.signature(CRF)
    assert [(n, p.default) for n, p in sig.parameters.items()] == ORIGINAL_SIGNATURE
    assert CRF("l2sgd").algorithm == "l2sgd"        # positional, as the original


def test_constructor_matches_the_installed_original():
    original = needs("sklearn_crfsuite")
    ours = inspect.signature(CRF).parameters
    theirs = inspect.signature(original.CRF).parameters
    assert [(n, p.default) for n, p in ours.items()] == \
        [(n, p.default) for n, p in theirs.items()]


def test_package_exports_the_originals_submodules():
    assert sklearn_crfsuite.CRF is CRF
    for name in ("metrics", "scorers", "utils"):
        assert getattr(sklearn_crfsuite, name).__name__.endswith(name)


@pytest.mark.parametrize("name", ["classes_", "tagger_", "size_", "num_attributes_",
                                  "attributes_", "state_features_",
                                  "transition_features_", "training_log_"])
def test_attributes_are_none_before_fit(name):
    assert getattr(CRF(), name) is None


def test_predict_before_fit_raises():
    X, _ = weather()
    with pytest.raises(ValueError, match="not fitted"):
        CRF().predict([X])


# ---------------------------------------------------- parameters and mapping
def params(**kw):
    crf = CRF(**kw)
    return crf._crf_params(*crf._settings())


def test_lbfgs_maps_c1_c2_to_C_and_l1_ratio():
    p = params(c1=0.1, c2=0.2, max_iterations=30, delta=1e-4, epsilon=1e-3, period=5,
               num_memories=4, max_linesearch=7)
    assert p["solver"] == "lbfgs" and p["max_iter"] == 30 and p["tol"] == 1e-4
    assert p["C"] == pytest.approx(1 / 0.5) and p["l1_ratio"] == pytest.approx(0.2)
    assert p["solver_options"] == {"memory": 4, "period": 5, "epsilon": 1e-3,
                                   "max_linesearch": 7}
    # CRFsuite's defaults: c2=1 (C = 1/2), no iteration limit, period 10, delta 1e-5
    p = params()
    assert p["C"] == 0.5 and p["l1_ratio"] == 0.0 and p["max_iter"] == 2147483647
    assert p["tol"] == 1e-5 and p["solver_options"]["period"] == 10
    assert p["solver_options"]["epsilon"] == 1e-5 and p["feature_pairs"] == "seen"
    assert params(c1=0, c2=0)["C"] == 1e12
    assert params(all_possible_states=True)["feature_pairs"] == "all"


def test_the_other_algorithms_map_to_the_solvers():
    p = params(algorithm="l2sgd", c2=0.25, calibration_eta=0.2)
    assert (p["solver"], p["C"], p["max_iter"]) == ("l2sgd", 2.0, 1000)
    assert p["solver_options"]["calibration_eta"] == 0.2
    assert p["solver_options"]["delta"] == 1e-6
    p = params(algorithm="ap", max_iterations=7)
    assert (p["solver"], p["max_iter"], p["tol"]) == ("perceptron", 7, 0.0)
    assert p["solver_options"] == {"average": True}
    p = params(algorithm="pa", c=3.0, pa_type=2, error_sensitive=False, averaging=False)
    assert (p["solver"], p["C"]) == ("pa", 3.0)
    assert p["solver_options"] == {"type": 2, "error_sensitive": False, "average": False}
    p = params(algorithm="arow", variance=2.0, gamma=0.5, epsilon=0.1)
    assert (p["solver"], p["tol"]) == ("arow", 0.1)
    assert p["solver_options"] == {"variance": 2.0, "gamma": 0.5}


@pytest.mark.parametrize("kw, match", [
    ({"algorithm": "ap", "c1": 0.1}, "no parameter c1"),
    ({"algorithm": "lbfgs", "pa_type": 2}, "no parameter pa_type"),
    ({"algorithm": "bogus"}, "algorithm must be one of"),
    ({"linesearch": "Bogus"}, "linesearch must be one of"),
    ({"trainer_cls": object}, "trainer_cls must be None"),
    ({"algorithm": "l2sgd", "c2": 0.0}, "needs c2 > 0"),
    ({"c1": -1.0}, "must be >= 0"),
    ({"min_freq": -1}, "min_freq"),
])
def test_bad_parameters_are_refused(kw, match):
    X, y = weather()
    with pytest.raises(ValueError, match=match):
        CRF(**kw).fit([X], [y])


@pytest.mark.parametrize("linesearch", ["MoreThuente", "Backtracking", "StrongBacktracking"])
def test_linesearch_names_are_accepted(linesearch):
    assert params(linesearch=linesearch) == params()


# ------------------------------------------------------------------ features
def test_features_read_as_python_crfsuite_reads_them():
    item = {"t": True, "f": False, "l": ["a", "b"], "st": {"c"}, "i": 3, "z": 0.0,
            "n": {"p": 2, "q": {"r": "z"}}, "s": "x", "b": "не светит".encode()}
    expected = {"t": 1.0, "f": 0.0, "l:a": 1.0, "l:b": 1.0, "st:c": 1.0, "i": 3.0,
                "z": 0.0, "n:p": 2.0, "n:q:r:z": 1.0, "s:x": 1.0, "b:не светит": 1.0}
    assert _item(item, "x") == expected
    assert _item(["a", "b", "a"], "x") == {"a": 1.0, "b": 1.0}


def test_features_equal_python_crfsuites_item_sequence():
    pycrfsuite = needs("pycrfsuite")
    items = [{"t": True, "f": False, "l": ["a", "b"], "n": {"p": 2, "q": {"r": "z"}},
              "s": "x", "v": 0.25}, ["u", "w"], {}]
    assert [_item(it, "x") for it in items] == pycrfsuite.ItemSequence(items).items()


@pytest.mark.parametrize("X, match", [
    ([[{"a": None}]], r"X\[0\]\[0\].*NoneType"),
    ([[{"a": 1}, "token"]], r"X\[0\]\[1\].*str"),
    ([[{1: 1.0}]], r"X\[0\]\[0\].*names must be strings"),
    ([[{"a": [1, 2]}]], r"X\[0\]\[0\].*must hold strings"),
    (["abc"], r"X\[0\].*list of tokens"),
])
def test_bad_tokens_are_refused_naming_them(X, match):
    with pytest.raises(ValueError, match=match):
        CRF().fit(X, [["A"] * 3])


def test_bad_labels_are_refused_naming_them():
    X, y = weather()
    with pytest.raises(ValueError, match=r"y\[0\] has 9 labels for 10 tokens"):
        CRF().fit([X], [y[:-1]])
    with pytest.raises(ValueError, match=r"y\[0\]\[2\].*strings"):
        CRF().fit([X], [y[:2] + [3] + y[3:]])
    with pytest.raises(ValueError, match="one label sequence per sequence"):
        CRF().fit([X, X], [y])


def test_dev_data_needs_both_halves():
    X, y = weather()
    with pytest.raises(ValueError, match="pass both X_dev and y_dev"):
        CRF().fit([X], [y], [X])
    with pytest.raises(ValueError, match="pass both X_dev and y_dev"):
        CRF().fit([X], [y], y_dev=[y])


@pytest.mark.filterwarnings("ignore::sklearn.exceptions.ConvergenceWarning")
def test_min_freq_drops_the_attributes_rare_with_every_label():
    # frequencies (sums of values per label): a: A 6; b: A 1.5, B 3, C 3; d: B 0.5; c: C 3
    X = [[{"a": 1.0, "b": 0.5}, {"b": 1, "d": 0.5 / 3}]] * 3 + \
        [[{"a": 1}, {"c": 1, "b": 1}]] * 3
    y = [["A", "B"]] * 3 + [["A", "C"]] * 3
    assert CRF(max_iterations=5).fit(X, y).attributes_ == ["a", "b", "d", "c"]
    assert CRF(min_freq=0.6, max_iterations=5).fit(X, y).attributes_ == ["a", "b", "c"]
    assert CRF(min_freq=3, max_iterations=5).fit(X, y).attributes_ == ["a", "b", "c"]
    assert CRF(min_freq=3.5, max_iterations=5).fit(X, y).attributes_ == ["a"]
    assert CRF(min_freq=7, max_iterations=5).fit(X, y).attributes_ == []


# ------------------------------------------------------- fit, predict, oracle
def brute_force(crf, xseq):
    """``{labelling: probability}`` of every labelling, from the fitted weights."""
    labels = crf.classes_
    feats = crf.tagger_._model.matrices([xseq])[0].toarray()
    attrs = crf.attributes_
    scores = {}
    for ys in itertools.product(labels, repeat=len(xseq)):
        s = sum(feats[t, j] * crf.state_features_.get((a, ys[t]), 0.0)
                for t in range(len(xseq)) for j, a in enumerate(attrs))
        s += sum(crf.transition_features_.get((ys[t - 1], ys[t]), 0.0)
                 for t in range(1, len(xseq)))
        scores[ys] = s
    z = np.logaddexp.reduce(list(scores.values()))
    return {ys: float(np.exp(s - z)) for ys, s in scores.items()}


def test_lbfgs_fits_predicts_and_scores():
    X, y = weather()
    crf = CRF(c2=0.1, max_iterations=100).fit([X], [y])
    pred = crf.predict([X])
    assert pred.dtype == object and (pred == [y]).all()
    assert crf.predict_single(X) == y
    assert crf.score([X], [y]) == 1.0
    assert set(crf.classes_) == {"sunny", "rainy"} and crf.classes_[0] == "sunny"
    assert crf.attributes_ == ["walk", "shop", "clean", "sky:grey"]
    assert crf.num_attributes_ == 4 and crf.size_ > 0
    assert all(isinstance(w, float) and w != 0 for w in crf.state_features_.values())
    assert {label for _, label in crf.transition_features_} <= set(crf.classes_)
    # all_possible_states=False: "sky:grey" is only seen with "rainy"
    assert ("sky:grey", "rainy") in crf.state_features_
    assert ("sky:grey", "sunny") not in crf.state_features_


def test_marginals_and_probabilities_equal_brute_force():
    X, y = chunks(12)
    crf = CRF(c2=0.05, max_iterations=100, all_possible_states=True).fit(X, y)
    xseq = X[0][:4]
    probs = brute_force(crf, xseq)
    marg = crf.predict_marginals_single(xseq)
    assert len(marg) == len(xseq)
    for t, m in enumerate(marg):
        assert set(m) == set(crf.classes_)
        for label in crf.classes_:
            expect = sum(p for ys, p in probs.items() if ys[t] == label)
            assert m[label] == pytest.approx(expect, abs=1e-9)
    tagger = crf.tagger_
    best = max(probs, key=probs.get)
    assert tagger.tag(xseq) == list(best) == crf.predict_single(xseq)
    for ys in list(probs)[:20]:
        assert tagger.probability(list(ys)) == pytest.approx(probs[ys], rel=1e-9)
    assert tagger.marginal(crf.classes_[1], 2) == pytest.approx(marg[2][crf.classes_[1]])
    assert tagger.labels() == crf.classes_
    info = tagger.info()
    assert info.state_features == crf.state_features_
    assert info.labels == {label: str(i) for i, label in enumerate(crf.classes_)}
    whole = crf.predict_marginals([xseq, X[1]])
    assert len(whole) == 2 and whole[0] == marg


def test_same_objective_as_crfsuite_gives_the_same_weights():
    needs("sklearn_crfsuite")
    import sklearn_crfsuite as original

    X, y = chunks(20, seed=1)
    kw = dict(c1=0.0, c2=0.05, all_possible_states=True, all_possible_transitions=True,
              epsilon=1e-8, delta=1e-10, max_iterations=1000)
    ref = original.CRF(**kw).fit(X, y)
    ours = CRF(**kw).fit(X, y)
    for key, w in ref.state_features_.items():
        # CRFsuite prints its weights with 6 decimals
        assert ours.state_features_.get(key, 0.0) == pytest.approx(w, abs=2e-4), key
    for key, w in ref.transition_features_.items():
        assert ours.transition_features_[key] == pytest.approx(w, abs=2e-4), key
    assert ours.training_log_.last_iteration["loss"] == pytest.approx(
        ref.training_log_.last_iteration["loss"], rel=1e-5)


def test_l1_gives_crfsuites_sparse_weights():
    needs("sklearn_crfsuite")
    import sklearn_crfsuite as original

    X, y = chunks(20, seed=2)
    kw = dict(c1=0.5, c2=0.01, all_possible_states=True, all_possible_transitions=True,
              epsilon=1e-8, delta=1e-10, max_iterations=1000)
    ref = original.CRF(**kw).fit(X, y)
    ours = CRF(**kw).fit(X, y)
    assert ours.training_log_.last_iteration["loss"] == pytest.approx(
        ref.training_log_.last_iteration["loss"], rel=1e-4)
    n_weights = len(ours.attributes_) * len(ours.classes_)
    assert len(ours.state_features_) < n_weights      # L1 zeroes some weights exactly


@pytest.mark.filterwarnings("ignore::sklearn.exceptions.ConvergenceWarning")
@pytest.mark.parametrize("algorithm", ALGORITHMS)
def test_every_algorithm_learns_the_example(algorithm):
    X, y = weather()
    crf = CRF(algorithm).fit([X, X], [y, y])
    assert crf.crf_.get_params()["solver"] == {"ap": "perceptron"}.get(algorithm,
                                                                       algorithm)
    if algorithm != "ap":   # the averaged perceptron is too regularised to fit it all
        assert crf.score([X], [y]) == 1.0
    else:
        assert crf.score([X], [y]) > 0.8
    marg = crf.predict_marginals([X])[0]
    assert all(abs(sum(m.values()) - 1) < 1e-9 for m in marg)
    log = crf.training_log_.iterations
    assert len(log) == crf.crf_.n_iter_ and all(np.isfinite(it["loss"]) for it in log)


def test_training_log_and_dev_evaluation(capsys):
    X, y = chunks(12)
    Xd, yd = chunks(5, seed=3)
    crf = CRF(c2=0.1, max_iterations=30, verbose=True).fit(X, y, X_dev=Xd, y_dev=yd)
    log = crf.training_log_
    assert [it["num"] for it in log.iterations] == list(range(1, len(log.iterations) + 1))
    losses = [it["loss"] for it in log.iterations]
    assert losses[-1] <= losses[0]
    assert np.allclose(losses, crf.crf_.history_["objective"] / crf.crf_.C)
    last = log.last_iteration
    assert last is log.iterations[-1] and last["active_features"] > 0
    pred = crf.predict(Xd)
    flat_t, flat_p = utils.flatten(yd), utils.flatten(pred)
    assert last["item_accuracy_float"] == pytest.approx(np.mean(
        [a == b for a, b in zip(flat_t, flat_p)]))
    for label, s in last["scores"].items():
        assert s.ref == flat_t.count(label) and s.model == flat_p.count(label)
    assert "held-out data" in capsys.readouterr().out


# --------------------------------------------------------------- persistence
def test_pickling_keeps_the_model():
    X, y = weather()
    crf = fitted(algorithm="lbfgs", c2=0.1)
    again = pickle.loads(pickle.dumps(crf, protocol=pickle.HIGHEST_PROTOCOL))
    assert again.algorithm == "lbfgs" and again.state_features_ == crf.state_features_
    assert (again.predict([X]) == crf.predict([X])).all()


def test_model_filename_saves_and_loads_on_first_use(tmp_path):
    X, y = weather()
    path = tmp_path / "model.crfsuite"
    crf = CRF(c2=0.1, model_filename=str(path)).fit([X], [y])
    assert path.exists() and crf.size_ == path.stat().st_size
    loaded = CRF(model_filename=str(path))
    assert loaded.score([X], [y]) == 1.0
    assert loaded.state_features_ == crf.state_features_
    assert loaded.classes_ == crf.classes_ and loaded.size_ == crf.size_
    assert CRF(model_filename=str(tmp_path / "none")).classes_ is None
    (tmp_path / "junk").write_bytes(b"not a model")
    with pytest.raises(ValueError, match="neither a model saved"):
        CRF(model_filename=str(tmp_path / "junk")).predict([X])


def test_a_crfsuite_model_tags_as_crfsuite(tmp_path):
    pycrfsuite = needs("pycrfsuite")
    X, y = chunks(15, seed=4)
    trainer = pycrfsuite.Trainer(verbose=False)
    for xseq, yseq in zip(X, y):
        trainer.append(xseq, yseq)
    trainer.set_params({"c1": 0.1, "c2": 0.01, "max_iterations": 50})
    path = str(tmp_path / "trained.crfsuite")
    trainer.train(path)
    tagger = pycrfsuite.Tagger()
    tagger.open(path)
    crf = CRF(model_filename=path)
    Xt, _ = chunks(10, seed=5)
    assert crf.classes_ == tagger.labels()
    for xseq in Xt:
        assert crf.predict_single(xseq) == tagger.tag(xseq)
        ours = crf.predict_marginals_single(xseq)
        for t, m in enumerate(ours):
            for label in tagger.labels():
                assert m[label] == pytest.approx(tagger.marginal(label, t), abs=1e-5)
        yseq = tagger.tag(xseq)
        assert crf.tagger_.tag(xseq) == yseq
        assert crf.tagger_.probability(yseq) == pytest.approx(tagger.probability(yseq),
                                                              rel=1e-4)
    info = tagger.info()
    assert crf.state_features_ == pytest.approx(
        {k: v for k, v in info.state_features.items() if v != 0})
    tagger.close()


# ------------------------------------------------------- model selection
def test_clone_cross_val_score_and_searches():
    X, y = chunks(20)
    crf = CRF(c2=0.1, max_iterations=50)
    assert clone(crf).get_params() == crf.get_params() and clone(crf).classes_ is None
    before = crf.get_params()
    scores = cross_val_score(crf, X, y, cv=3)
    assert scores.shape == (3,) and np.all(scores > 0.9)
    assert crf.get_params() == before
    assert np.all(cross_val_score(crf, X, y, cv=3, scoring=scorers.flat_f1) > 0.9)
    grid = GridSearchCV(crf, {"c2": [0.01, 1.0]}, cv=3,
                        scoring=scorers.sequence_accuracy).fit(X, y)
    assert grid.best_params_["c2"] in (0.01, 1.0) and grid.best_estimator_.classes_
    rand = RandomizedSearchCV(crf, {"c1": [0.0, 0.1], "c2": [0.05, 0.2]}, n_iter=2, cv=3,
                              random_state=0, scoring=scorers.flat_accuracy).fit(X, y)
    assert 0.9 < rand.best_score_ <= 1.0


# ------------------------------------------------------------------ metrics
Y1 = [["x", "z", "y"], ["x", "x"]]
Y2 = [["y", "z", "y"], ["x", "y"]]


def test_flat_metrics():
    assert metrics.flat_accuracy_score(Y1, Y2) == 3 / 5
    assert metrics.flat_precision_score(Y1, Y2, average="micro") == 3 / 5
    assert metrics.flat_recall_score(Y1, Y2, average="micro") == 3 / 5
    # per label: x P 1 R 1/3, y P 1/3 R 1, z P 1 R 1 -> F1 1/2, 1/2, 1
    assert metrics.flat_f1_score(Y1, Y2, average="macro") == pytest.approx(2 / 3)
    assert metrics.flat_fbeta_score(Y1, Y2, beta=1, average="macro") == \
        pytest.approx(2 / 3)
    report = metrics.flat_classification_report(Y1, Y2, labels=["x", "z"], digits=3)
    assert "0.333" in report and "y " not in report
    assert metrics.flat_classification_report(Y1, Y2, output_dict=True)["z"]["f1-score"] \
        == 1.0


def test_metrics_equal_the_originals():
    original = needs("sklearn_crfsuite.metrics")
    for name in ("flat_accuracy_score", "sequence_accuracy_score"):
        assert getattr(metrics, name)(Y1, Y2) == getattr(original, name)(Y1, Y2)
    for name in ("flat_precision_score", "flat_recall_score", "flat_f1_score"):
        for average in ("micro", "macro", "weighted"):
            assert getattr(metrics, name)(Y1, Y2, average=average) == \
                getattr(original, name)(Y1, Y2, average=average)
    assert metrics.flat_classification_report(Y1, Y2) == \
        original.flat_classification_report(Y1, Y2)


def test_sequence_accuracy():
    assert metrics.sequence_accuracy_score(Y1, Y2) == 0
    assert metrics.sequence_accuracy_score([], []) == 0
    assert metrics.sequence_accuracy_score([[1, 2], [3], [4]], [[1, 2], [4], [4]]) == 2 / 3
    assert metrics.sequence_accuracy_score([[1, 2], [3]], [[3], [1, 2]]) == 0
    with pytest.raises(ValueError, match="2 sequences"):
        metrics.sequence_accuracy_score(Y1, Y2[:1])


def test_flatten():
    assert utils.flatten([["a", "b"], [], ["c"]]) == ["a", "b", "c"]
    assert utils.flatten([]) == []
