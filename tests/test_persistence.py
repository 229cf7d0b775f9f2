"""Fitted estimators round-trip through skops.io, trusting only skstruct.trusted_types().

Every estimator is fitted on small real data with each built-in model it accepts,
written with ``skops.io.dump``, read back with ``skops.io.load(path,
trusted=skstruct.trusted_types())``, and compared with the original: predictions,
scores and every fitted attribute (recursively, dtypes included).  A file naming any
other type (a function, a class of another package, a model of the user's) is still
refused unless that type is trusted explicitly.
"""

import os

import numpy as np
import pytest
import scipy.sparse as sp
from sklearn.base import BaseEstimator
from sklearn.pipeline import make_pipeline
from sklearn.preprocessing import StandardScaler

import skstruct
from skstruct import (
    CRF,
    ApproxStructuredPredictor,
    NonLocalCRF,
    StructuredPerceptron,
    StructuredSVM,
    trusted_types,
)
from skstruct.datasets import load_letters, load_scene, make_letter_alignment
from skstruct.energies import Energy, LinearMeasurements, NearestStatistic
from skstruct.models import (
    ChainModel,
    DesignModel,
    GraphModel,
    MatchingModel,
    MulticlassModel,
    MultiLabelModel,
    StructuredModel,
)
from skstruct.preprocessing import NodeTransformer

sio = pytest.importorskip("skops.io")
from skops.io.exceptions import UntrustedTypesFoundException  # noqa: E402


# ----------------------------------------------------------------------------- data
def _chain_edges(n, cycle=False):
    e = np.column_stack([np.arange(n - 1), np.arange(1, n)]).astype(np.int64)
    if cycle and n >= 3:
        e = np.vstack([e, [[n - 1, 0]]])
    return e


@pytest.fixture(scope="module")
def data():
    """Small train/test splits of real data, one per built-in model."""
    letters = load_letters()
    X, y = letters.X[:40], letters.y[:40]
    scene = load_scene()
    Xs, ys = scene.X_train[:80], scene.y_train[:80]
    Xs_test = scene.X_test[:20]
    align = make_letter_alignment(random_state=0)

    def graphs(words, cycle=False, edge_features=False):
        out = []
        for x in words:
            e = _chain_edges(len(x), cycle)
            if edge_features:
                # a constant and the mean ink of the edge's two letters
                ink = x.mean(axis=1)
                ef = np.column_stack([np.ones(len(e)), 0.5 * (ink[e[:, 0]] + ink[e[:, 1]])])
                out.append((x, e, ef))
            else:
                out.append((x, e))
        return out

    return {
        "chain": (X[:30], y[:30], X[30:]),
        "graph_tree": (graphs(X[:30]), y[:30], graphs(X[30:])),
        "graph_loopy": (graphs(X[:30], cycle=True), y[:30], graphs(X[30:], cycle=True)),
        "graph_edge_features": (graphs(X[:30], edge_features=True), y[:30],
                                graphs(X[30:], edge_features=True)),
        "multilabel": (Xs, ys, Xs_test),
        "multilabel_bool": (Xs, ys.astype(bool), Xs_test),
        "multiclass": (Xs, ys.argmax(axis=1), Xs_test),
        "matching": (align.X[:8], align.y[:8], align.X[8:12]),
    }


MODELS = {
    "chain": lambda: ChainModel(bias=True),
    "graph_tree": lambda: GraphModel(),
    "graph_loopy": lambda: GraphModel(),
    "graph_edge_features": lambda: GraphModel(),
    "multilabel": lambda: MultiLabelModel(edges="tree"),
    "multilabel_bool": lambda: MultiLabelModel(edges="full"),
    "multiclass": lambda: MulticlassModel(),
    "matching": lambda: MatchingModel(),
}

ESTIMATORS = {
    "svm_bcfw": lambda m: StructuredSVM(model=m, C=0.1, max_iter=5, check_every=1,
                                        random_state=0),
    "svm_subgradient": lambda m: StructuredSVM(model=m, C=0.1, solver="subgradient",
                                               max_iter=3, random_state=0),
    "perceptron": lambda m: StructuredPerceptron(model=m, max_iter=3, random_state=0),
    "approx": lambda m: ApproxStructuredPredictor(model=m, C=0.1, max_iter=5),
    "nonlocal": lambda m: NonLocalCRF(model=m, C=0.1, max_iter=5),
    "crf": lambda m: CRF(model=m, C=0.1, max_iter=5),
}

# what each estimator cannot train (it raises at fit: not a skops matter)
_UNSUPPORTED = {
    ("approx", "matching"), ("nonlocal", "matching"),  # batched built-in models only
    ("nonlocal", "graph_loopy"), ("nonlocal", "multilabel_bool"),  # chains and trees only
    ("crf", "matching"), ("crf", "graph_loopy"), ("crf", "multilabel_bool"),
}

CASES = [pytest.param(e, m, id=f"{e}-{m}") for e in ESTIMATORS for m in MODELS
         if (e, m) not in _UNSUPPORTED]


# ------------------------------------------------------------------------ helpers
def _round_trip(est, tmp_path, trusted=None):
    """Dump ``est`` to a file, check what it names, and load it with ``trusted``."""
    path = tmp_path / "model.skops"
    sio.dump(est, path)
    untrusted = sio.get_untrusted_types(file=path)
    outside = sorted(set(untrusted) - set(trusted_types()))
    assert not outside, f"types outside skstruct.trusted_types(): {outside}"
    return sio.load(path, trusted=trusted_types() if trusted is None else trusted)


def _state(obj):
    """What pickle (and skops) store of ``obj``: its ``__getstate__``."""
    state = obj.__getstate__() if hasattr(obj, "__getstate__") else vars(obj)
    return state if isinstance(state, dict) else vars(obj)


def _assert_same(a, b, where="estimator"):
    """``b`` is a faithful copy of ``a``: same types, dtypes, shapes and values."""
    if isinstance(a, type):
        assert a is b, where
        return
    assert type(a) is type(b), f"{where}: {type(a).__name__} != {type(b).__name__}"
    if isinstance(a, np.ndarray):
        assert a.dtype == b.dtype and a.shape == b.shape, where
        np.testing.assert_array_equal(a, b, err_msg=where)
    elif sp.issparse(a):
        assert a.dtype == b.dtype and a.shape == b.shape, where
        assert (a != b).nnz == 0, where
    elif isinstance(a, dict):
        assert a.keys() == b.keys(), where
        for k in a:
            _assert_same(a[k], b[k], f"{where}[{k!r}]")
    elif isinstance(a, (list, tuple)):
        assert len(a) == len(b), where
        for i, (u, v) in enumerate(zip(a, b)):
            _assert_same(u, v, f"{where}[{i}]")
    elif isinstance(a, np.random.RandomState):
        _assert_same(a.get_state(legacy=False), b.get_state(legacy=False), where)
    elif isinstance(a, (float, np.floating)):
        assert a == b or (np.isnan(a) and np.isnan(b)), where
    elif hasattr(a, "__dict__") and not callable(a):
        _assert_same(_state(a), _state(b), f"{where}.__dict__")
    else:
        assert a == b, where


def _assert_same_predictions(a, b):
    _assert_same(a, b, "predictions")


def _fit(estimator, model, data):
    X, y, X_test = data[model]
    est = ESTIMATORS[estimator](MODELS[model]())
    return est.fit(X, y), X, y, X_test


# -------------------------------------------------------------------------- tests
@pytest.mark.parametrize("estimator, model", CASES)
def test_round_trip_with_trusted_types(estimator, model, data, tmp_path):
    est, X, y, X_test = _fit(estimator, model, data)
    loaded = _round_trip(est, tmp_path)

    assert type(loaded) is type(est)
    assert repr(loaded) == repr(est)
    # every fitted attribute, the fitted model_ and its own attributes included
    _assert_same(_state(est), _state(loaded))
    assert "_solver" not in vars(loaded)          # dropped as for pickle
    np.testing.assert_array_equal(loaded.coef_, est.coef_)
    for Z in (X, X_test):
        _assert_same_predictions(est.predict(Z), loaded.predict(Z))
    assert loaded.score(X, y) == est.score(X, y)
    if model != "matching":      # a model of the protocol: weights in coef_ only
        if hasattr(est, "predict_marginals"):
            _assert_same(est.predict_marginals(X_test), loaded.predict_marginals(X_test))
        np.testing.assert_array_equal(loaded.unary_coef_, est.unary_coef_)
        np.testing.assert_array_equal(loaded.pairwise_coef_, est.pairwise_coef_)


@pytest.mark.parametrize("model", ["chain", "matching"])
def test_round_trip_extragradient(model, data, tmp_path):
    X, y, X_test = data[model]
    est = StructuredSVM(model=MODELS[model](), solver="extragradient", C=0.1,
                        max_iter=3).fit(X, y)
    loaded = _round_trip(est, tmp_path)
    _assert_same(_state(est), _state(loaded))
    _assert_same_predictions(est.predict(X_test), loaded.predict(X_test))


def test_round_trip_auto_model_string_labels_and_options(data, tmp_path):
    """``model="auto"``, labels that are strings, a class-weight dict keyed by them and
    a RandomState parameter."""
    X, y, X_test = data["chain"]
    names = np.array(list("abcdefghijklmnopqrstuvwxyz"))
    y_str = [names[v] for v in y]
    seen = np.unique(np.concatenate(y_str)).tolist()
    est = StructuredSVM(C=0.1, max_iter=3, class_weight={seen[0]: 2.0, seen[-1]: 0.5},
                        random_state=np.random.RandomState(0)).fit(X, y_str)
    loaded = _round_trip(est, tmp_path)
    _assert_same(_state(est), _state(loaded))
    assert loaded.classes_.dtype.kind == "U"
    _assert_same_predictions(est.predict(X_test), loaded.predict(X_test))


@pytest.mark.parametrize("energy", [
    pytest.param(lambda K: NearestStatistic(), id="nearest_statistic"),
    pytest.param(lambda K: LinearMeasurements(np.ones((1, K))), id="linear_measurements"),
])
@pytest.mark.parametrize("psi", ["bias", "mean_map"])
def test_round_trip_nonlocal_energies(energy, psi, data, tmp_path):
    """The fitted energy ``energy_``, ``psi_coef_`` and the random features
    ``mean_map_`` (a scikit-learn ``RBFSampler``, trusted by skops itself)."""
    X, y, X_test = data["chain"]
    K = np.unique(np.concatenate(y)).shape[0]
    est = NonLocalCRF(model=ChainModel(), C=0.1, max_iter=5, energy=energy(K), psi=psi,
                      n_components=16, energy_max_iter=1, random_state=0).fit(X, y)
    loaded = _round_trip(est, tmp_path)
    _assert_same(_state(est), _state(loaded))
    _assert_same_predictions(est.predict(X_test), loaded.predict(X_test))
    _assert_same(est.predict_marginals(X_test), loaded.predict_marginals(X_test))


def test_round_trip_pipeline(data, tmp_path):
    X, y, X_test = data["chain"]
    pipe = make_pipeline(NodeTransformer(StandardScaler()),
                         StructuredSVM(C=0.1, max_iter=3, random_state=0)).fit(X, y)
    loaded = _round_trip(pipe, tmp_path)
    _assert_same_predictions(pipe.predict(X_test), loaded.predict(X_test))
    np.testing.assert_array_equal(loaded[-1].coef_, pipe[-1].coef_)


def test_warm_start_after_loading_starts_afresh(data, tmp_path):
    X, y, _ = data["chain"]
    est = StructuredSVM(C=0.1, max_iter=3, warm_start=True, random_state=0).fit(X, y)
    loaded = _round_trip(est, tmp_path)
    fresh = StructuredSVM(C=0.1, max_iter=3, warm_start=True, random_state=0).fit(X, y)
    np.testing.assert_array_equal(loaded.fit(X, y).coef_, fresh.coef_)


# ------------------------------------------------------------- what stays refused
def test_foreign_function_is_refused(data, tmp_path):
    """A file that names any type outside the list (here a function of the
    operating system) does not load with the trusted types."""
    X, y, _ = data["chain"]
    est = StructuredPerceptron(max_iter=1, random_state=0).fit(X, y)
    est.history_["callback"] = os.system
    path = tmp_path / "tampered.skops"
    sio.dump(est, path)
    foreign = sorted(set(sio.get_untrusted_types(file=path)) - set(trusted_types()))
    assert foreign == [f"{os.system.__module__}.system"]
    with pytest.raises(UntrustedTypesFoundException, match="system"):
        sio.load(path, trusted=trusted_types())


def uniform_counting_numbers(n_nodes, edges):
    """Counting numbers ``c_node = c_edge = 1`` (a parameter given as a function)."""
    return np.ones(n_nodes), np.ones(len(edges))


def test_function_parameter_is_refused_until_trusted(data, tmp_path):
    X, y, X_test = data["chain"]
    est = ApproxStructuredPredictor(C=0.1, max_iter=3,
                                    counting_numbers=uniform_counting_numbers).fit(X, y)
    path = tmp_path / "approx.skops"
    sio.dump(est, path)
    name = f"{__name__}.uniform_counting_numbers"
    assert sorted(set(sio.get_untrusted_types(file=path)) - set(trusted_types())) == [name]
    with pytest.raises(UntrustedTypesFoundException, match="uniform_counting_numbers"):
        sio.load(path, trusted=trusted_types())
    loaded = sio.load(path, trusted=trusted_types() + [name])
    assert loaded.counting_numbers is uniform_counting_numbers
    _assert_same_predictions(est.predict(X_test), loaded.predict(X_test))


def test_lambda_parameter_cannot_be_loaded(data, tmp_path):
    """A lambda has no importable name: skops refuses it, and cannot build it even
    when told to trust it."""
    X, y, _ = data["chain"]
    est = ApproxStructuredPredictor(C=0.1, max_iter=1, counting_numbers=lambda n, e: (
        np.ones(n), np.ones(len(e)))).fit(X, y)
    path = tmp_path / "lambda.skops"
    sio.dump(est, path)
    foreign = sorted(set(sio.get_untrusted_types(file=path)) - set(trusted_types()))
    assert foreign == [f"{__name__}.<lambda>"]
    with pytest.raises(UntrustedTypesFoundException):
        sio.load(path, trusted=trusted_types())
    with pytest.raises(AttributeError):
        sio.load(path, trusted=trusted_types() + foreign)


class CountingMulticlass(StructuredModel):
    """A model of the protocol written by a user (the one of StructuredModel's docstring)."""

    def initialize(self, X, y):
        self.n_classes, self.n_features = int(max(y)) + 1, X.shape[1]
        self.size_joint_feature = self.n_classes * self.n_features

    def joint_feature(self, x, y):
        phi = np.zeros((self.n_classes, self.n_features))
        phi[y] = x
        return phi.ravel()

    def inference(self, x, w):
        return int(np.argmax(w.reshape(self.n_classes, -1) @ x))

    def loss_augmented_inference(self, x, y, w):
        scores = w.reshape(self.n_classes, -1) @ x + 1.0
        scores[y] -= 1.0
        return int(np.argmax(scores))


def test_model_of_your_own_is_refused_until_trusted(data, tmp_path):
    X, y, X_test = data["multiclass"]
    est = StructuredSVM(model=CountingMulticlass(), C=0.1, max_iter=3,
                        random_state=0).fit(X, y)
    path = tmp_path / "own.skops"
    sio.dump(est, path)
    name = f"{__name__}.CountingMulticlass"
    assert sorted(set(sio.get_untrusted_types(file=path)) - set(trusted_types())) == [name]
    with pytest.raises(UntrustedTypesFoundException, match="CountingMulticlass"):
        sio.load(path, trusted=trusted_types())
    loaded = sio.load(path, trusted=trusted_types() + [name])
    _assert_same(_state(est), _state(loaded))
    _assert_same_predictions(est.predict(X_test), loaded.predict(X_test))


# ------------------------------------------------------------------ the helper
def _public_classes():
    from skstruct import energies, models, preprocessing

    found = {getattr(skstruct, n) for n in ("ApproxStructuredPredictor", "CRF",
                                            "LatentStructuredSVM",
                                            "NonLocalCRF", "StructuredPerceptron",
                                            "StructuredSVM")}
    for module in (models, energies, preprocessing):
        names = getattr(module, "__all__", [n for n in dir(module) if not n.startswith("_")])
        for n in names:
            obj = getattr(module, n)
            if isinstance(obj, type) and issubclass(obj, BaseEstimator) \
                    and obj.__module__.startswith("skstruct"):
                found.add(obj)
    # bases: never instantiated as such, a subclass of one is the user's own
    return found - {StructuredModel, DesignModel, Energy}


def test_trusted_types_lists_every_public_estimator_model_and_energy():
    names = trusted_types()
    assert names == sorted(set(names))
    expected = {f"{c.__module__}.{c.__name__}" for c in _public_classes()}
    assert set(names) == expected
    assert all(n.startswith("skstruct.") for n in names)


def test_trusted_types_returns_a_new_list():
    names = trusted_types()
    names.append("builtins.eval")
    assert "builtins.eval" not in trusted_types()


def test_trusted_types_is_exported():
    assert "trusted_types" in skstruct.__all__
    assert skstruct.trusted_types is trusted_types


@pytest.mark.parametrize("which", ["latent_ssvm", "latent_crf", "hidden_nodes"])
def test_round_trip_hidden_variable_models(which, data, tmp_path):
    from skstruct import LatentStructuredSVM
    from skstruct.models import HiddenNodesModel, HiddenStatesModel

    X, y, X_test = data["chain"]
    if which == "hidden_nodes":
        def with_hidden(Z):
            out = []
            for x in Z:
                n = x.shape[0]
                chain = np.c_[np.arange(n - 1), np.arange(1, n)].reshape(-1, 2)
                out.append((x, np.vstack([chain, [[n, 0]]]), 1))
            return out
        X, X_test = with_hidden(X), with_hidden(X_test)
        est = LatentStructuredSVM(estimator=StructuredSVM(model=HiddenNodesModel(), max_iter=5),
                                  max_iter=2, random_state=0)
    elif which == "latent_ssvm":
        est = LatentStructuredSVM(estimator=StructuredSVM(model=HiddenStatesModel(ChainModel()),
                                                max_iter=5), max_iter=2, random_state=0)
    else:
        est = NonLocalCRF(model=HiddenStatesModel(ChainModel()), max_iter=5, random_state=0)
    est.fit(X, y)
    loaded = _round_trip(est, tmp_path)
    _assert_same(_state(est), _state(loaded))
    for Z in (X, X_test):
        _assert_same_predictions(est.predict(Z), loaded.predict(Z))
    _assert_same(est.predict_marginals(X_test), loaded.predict_marginals(X_test))
