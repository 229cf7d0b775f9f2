"""A saved estimator records the skstruct version that saved it; loading it with another
version (or a state that records none) warns with :class:`InconsistentVersionWarning`.

scikit-learn's convention for its own estimators (``_sklearn_version``), for skstruct's:
pickle, joblib and ``skops.io`` all store ``__getstate__`` and restore through
``__setstate__``, where the version is written and read.
"""

import io
import pickle
import warnings

import joblib
import numpy as np
import pytest
from sklearn.pipeline import make_pipeline
from sklearn.preprocessing import StandardScaler

import skstruct
from skstruct import (
    CRF,
    ApproxStructuredPredictor,
    LatentStructuredSVM,
    NonLocalCRF,
    StructuredPerceptron,
    StructuredSVM,
)
from skstruct.datasets import load_letters
from skstruct.exceptions import ConvergenceWarning, InconsistentVersionWarning
from skstruct.preprocessing import NodeTransformer

KEY = "_skstruct_version"
ESTIMATORS = [StructuredSVM(), ApproxStructuredPredictor(), CRF(), NonLocalCRF(),
              StructuredPerceptron(), LatentStructuredSVM(), NodeTransformer(StandardScaler())]


@pytest.fixture(scope="module")
def letters():
    d = load_letters()
    return d.X[:30], d.y[:30], d.X[30:40]


@pytest.fixture(scope="module")
def fitted(letters):
    """Estimators whose state has a ``__getstate__`` of their own, fitted on short words
    (a few iterations: what is saved matters here, not the optimum)."""
    X, y, _ = letters
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ConvergenceWarning)
        return {
            "StructuredSVM": StructuredSVM(C=0.1, max_iter=5, random_state=0).fit(X, y),
            "CRF": CRF(C=1.0, max_iter=20).fit(X, y),
            "ApproxStructuredPredictor": ApproxStructuredPredictor(max_iter=5).fit(X, y),
        }


def _load_quietly(data):
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        return pickle.loads(data)


def _dumped_by(version, est, monkeypatch):
    with monkeypatch.context() as m:
        m.setattr(skstruct, "__version__", version)
        return pickle.dumps(est)


def test_every_estimator_records_the_version():
    for est in ESTIMATORS:
        cls = type(est)
        assert est.__getstate__()[KEY] == skstruct.__version__, cls.__name__
        # the state is a copy: saving adds nothing to the estimator
        assert KEY not in vars(est)
        loaded = _load_quietly(pickle.dumps(est))
        assert KEY not in vars(loaded) and type(loaded) is cls
        assert loaded.get_params().keys() == est.get_params().keys()


@pytest.mark.parametrize("name", ["StructuredSVM", "CRF", "ApproxStructuredPredictor"])
def test_pickle_round_trip_records_the_version_and_predicts_the_same(name, fitted, letters):
    est = fitted[name]
    _, _, X_test = letters
    data = pickle.dumps(est)
    assert pickle.loads(data).__getstate__()[KEY] == skstruct.__version__
    loaded = _load_quietly(data)
    assert KEY not in vars(loaded) and KEY not in vars(est)
    for a, b in zip(est.predict(X_test), loaded.predict(X_test)):
        np.testing.assert_array_equal(a, b)
    np.testing.assert_array_equal(est.coef_, loaded.coef_)


def test_joblib_round_trip_is_quiet(fitted, letters):
    buffer = io.BytesIO()
    joblib.dump(fitted["CRF"], buffer)
    buffer.seek(0)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        loaded = joblib.load(buffer)
    _, _, X_test = letters
    for a, b in zip(fitted["CRF"].predict(X_test), loaded.predict(X_test)):
        np.testing.assert_array_equal(a, b)


@pytest.mark.parametrize("name", ["StructuredSVM", "CRF", "ApproxStructuredPredictor"])
def test_another_version_warns_naming_both(name, fitted, letters, monkeypatch):
    est = fitted[name]
    data = _dumped_by("0.0.1", est, monkeypatch)
    with pytest.warns(InconsistentVersionWarning) as record:
        loaded = pickle.loads(data)
    (w,) = [r.message for r in record if isinstance(r.message, InconsistentVersionWarning)]
    assert (w.estimator_name, w.original_version, w.current_version) == (
        name, "0.0.1", skstruct.__version__)
    message = str(w)
    assert name in message and "0.0.1" in message and skstruct.__version__ in message
    # loaded all the same, with its weights
    _, _, X_test = letters
    for a, b in zip(est.predict(X_test), loaded.predict(X_test)):
        np.testing.assert_array_equal(a, b)


def test_the_warning_points_at_the_line_that_loads(fitted, monkeypatch):
    data = _dumped_by("0.0.1", fitted["CRF"], monkeypatch)
    with pytest.warns(InconsistentVersionWarning) as record:
        pickle.loads(data)
    assert record[0].filename == __file__


def test_a_state_without_a_version_warns_and_loads(fitted, letters):
    """A state saved before skstruct recorded its version: loaded, with the warning (its
    ``original_version`` is None)."""
    est = fitted["CRF"]
    state = est.__getstate__()
    del state[KEY]
    old = CRF.__new__(CRF)
    with pytest.warns(InconsistentVersionWarning, match="did not record its version") as record:
        old.__setstate__(state)
    assert record[0].message.original_version is None
    _, _, X_test = letters
    for a, b in zip(est.predict(X_test), old.predict(X_test)):
        np.testing.assert_array_equal(a, b)


def test_a_pipeline_warns_for_each_skstruct_step(letters, monkeypatch):
    X, y, _ = letters
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ConvergenceWarning)
        pipe = make_pipeline(NodeTransformer(StandardScaler()), CRF(max_iter=5)).fit(X, y)
    data = _dumped_by("0.0.1", pipe, monkeypatch)
    with pytest.warns(InconsistentVersionWarning) as record:
        pickle.loads(data)
    names = sorted(r.message.estimator_name for r in record
                   if isinstance(r.message, InconsistentVersionWarning))
    assert names == ["CRF", "NodeTransformer"]


def test_the_warning_is_a_user_warning_exported_by_exceptions():
    assert issubclass(InconsistentVersionWarning, UserWarning)
    assert "InconsistentVersionWarning" in skstruct.exceptions.__all__
    w = InconsistentVersionWarning(estimator_name="CRF", original_version="0.0.1",
                                   current_version="0.2")
    assert "CRF" in str(w) and "0.0.1" in str(w) and "0.2" in str(w)


def test_skops_records_and_checks_the_version(fitted, letters, tmp_path, monkeypatch):
    sio = pytest.importorskip("skops.io")
    est = fitted["StructuredSVM"]
    path = tmp_path / "model.skops"
    sio.dump(est, path)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        loaded = sio.load(path, trusted=skstruct.trusted_types())
    assert KEY not in vars(loaded)
    _, _, X_test = letters
    for a, b in zip(est.predict(X_test), loaded.predict(X_test)):
        np.testing.assert_array_equal(a, b)
    with monkeypatch.context() as m:
        m.setattr(skstruct, "__version__", "0.0.1")
        sio.dump(est, path)
    with pytest.warns(InconsistentVersionWarning, match="0.0.1"):
        sio.load(path, trusted=skstruct.trusted_types())
