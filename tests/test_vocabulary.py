"""scikit-learn's vocabulary across the estimators: parameter errors, convergence
warnings, one name per concept, keyword-only parameters, the shared fit bookkeeping."""

import inspect
import warnings

import numpy as np
import pytest
import sklearn.exceptions

from skstruct import (
    CRF,
    ApproxStructuredPredictor,
    LatentStructuredSVM,
    NonLocalCRF,
    StructuredPerceptron,
    StructuredSVM,
)
from skstruct.exceptions import ConvergenceWarning, InvalidParameterError
from skstruct.models import ChainModel, HiddenStatesModel

SKL_WARNING = sklearn.exceptions.ConvergenceWarning
ESTIMATORS = (StructuredSVM, ApproxStructuredPredictor, NonLocalCRF, StructuredPerceptron,
              LatentStructuredSVM)
LEARNERS = (StructuredSVM, ApproxStructuredPredictor, StructuredPerceptron,
            LatentStructuredSVM)


def separable_chains(seed=0, n=12, F=3, K=3, max_len=5):
    """Chains whose labels are the arg max of a linear score of their features: a
    perceptron separates them, and a max-margin learner meets a tight tolerance fast."""
    rng = np.random.default_rng(seed)
    W = 3.0 * np.eye(F, K)
    X, y = [], []
    for _ in range(n):
        x = rng.normal(size=(int(rng.integers(1, max_len + 1)), F))
        X.append(x)
        y.append(np.argmax(x @ W, axis=1))
    return X, y


def _convergence_warnings(fit):
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        out = fit()
    return out, [w for w in caught if issubclass(w.category, SKL_WARNING)]


# ------------------------------------------------------------ parameter errors
def test_invalid_parameter_error_is_a_value_and_a_type_error():
    assert issubclass(InvalidParameterError, ValueError)
    assert issubclass(InvalidParameterError, TypeError)


@pytest.mark.parametrize("est, name", [
    (StructuredSVM(C=-1.0), "C"),
    (StructuredSVM(shuffle="perm"), "shuffle"),
    (StructuredSVM(surrogate="lp", solver="bcfw"), "surrogate"),          # between parameters
    (StructuredSVM(surrogate="slack", loss="normalized_hamming"), "surrogate"),
    (StructuredSVM(solver="extragradient", average=False), "average"),
    (StructuredSVM(class_weight="auto"), "class_weight"),
    (StructuredSVM(class_weight={0: -1.0}), "class_weight"),
    (ApproxStructuredPredictor(tol=-1.0), "tol"),
    (ApproxStructuredPredictor(counting_numbers=(1.0, "a")), "counting_numbers"),
    (StructuredPerceptron(shuffle="yes"), "shuffle"),
    (StructuredPerceptron(n_jobs=0), "n_jobs"),
    (LatentStructuredSVM(max_iter=0), "max_iter"),
    (LatentStructuredSVM(estimator=StructuredSVM(model=HiddenStatesModel(ChainModel()),
                                                 warm_start=True)), "warm_start"),
    (LatentStructuredSVM(estimator=StructuredSVM(model=HiddenStatesModel(ChainModel()),
                                                 solver="extragradient")), "solver"),
    (StructuredSVM(model=ChainModel(inference_method="bogus")), "inference_method"),
    (NonLocalCRF(C=0.0), "C"),
])
def test_parameter_errors_are_value_and_type_errors_naming_the_parameter(est, name):
    X, y = separable_chains(n=4)
    for exc in (ValueError, TypeError, InvalidParameterError):
        with pytest.raises(exc, match=rf"\b{name}\b"):
            est.fit(X, y)
    assert not hasattr(est, "coef_")


def test_a_problem_of_the_data_stays_a_plain_value_error():
    X, y = separable_chains(n=4)
    with pytest.raises(ValueError, match="not present in y") as err:
        StructuredSVM(class_weight={99: 1.0}).fit(X, y)
    assert not isinstance(err.value, TypeError)


def test_shared_parameters_are_declared_alike():
    shared = ("C", "max_iter", "tol", "warm_start", "n_jobs", "random_state", "verbose",
              "average", "shuffle")
    for name in shared:
        described = {str([str(c) for c in cls._parameter_constraints[name]])
                     for cls in LEARNERS if name in cls._parameter_constraints
                     and not (cls is StructuredSVM and name == "shuffle")}
        assert len(described) <= 1, name


# ------------------------------------------------------------ convergence warnings
def test_convergence_warning_is_sklearns_and_a_user_warning():
    import skstruct.inference

    assert issubclass(ConvergenceWarning, SKL_WARNING)
    assert issubclass(ConvergenceWarning, UserWarning)
    assert skstruct.inference.ConvergenceWarning is ConvergenceWarning
    assert ConvergenceWarning.__name__ == "ConvergenceWarning"


def _latent(**kw):
    # convex steps that meet their tolerance, so that only CCCP's own warning is tested
    svm = StructuredSVM(model=HiddenStatesModel(ChainModel(), n_states_per_label=2), C=0.1,
                        tol=1e-2, max_iter=kw.pop("inner_iter", 1000), random_state=0)
    return LatentStructuredSVM(estimator=svm, random_state=0, **kw)


SHORT = {
    "bcfw": lambda: StructuredSVM(solver="bcfw", max_iter=1, random_state=0),
    "subgradient": lambda: StructuredSVM(solver="subgradient", max_iter=1, random_state=0),
    "one_slack": lambda: StructuredSVM(solver="one_slack", max_iter=1, random_state=0),
    "n_slack": lambda: StructuredSVM(solver="n_slack", max_iter=1, random_state=0),
    "fw": lambda: StructuredSVM(solver="fw", max_iter=1, random_state=0),
    "extragradient": lambda: StructuredSVM(solver="extragradient", max_iter=1,
                                           random_state=0),
    "perceptron": lambda: StructuredPerceptron(max_iter=1, random_state=0),
    "latent": lambda: _latent(max_iter=1),
    "approx": lambda: ApproxStructuredPredictor(max_iter=1),
    "crf": lambda: CRF(max_iter=1),
    "nonlocal": lambda: NonLocalCRF(max_iter=1),
}


@pytest.mark.parametrize("which", list(SHORT))
def test_a_max_iter_1_fit_is_an_error_under_sklearns_filter(which):
    X, y = separable_chains(seed=1)
    est = SHORT[which]()
    name = type(est).__name__
    with warnings.catch_warnings():
        warnings.simplefilter("error", SKL_WARNING)
        with pytest.raises(ConvergenceWarning, match=rf"{name} stopped after max_iter=1 "
                                                     r".*short of its tolerance.*tol "):
            est.fit(X, y)


CONVERGING = {
    "bcfw": lambda: StructuredSVM(solver="bcfw", C=0.1, max_iter=500, random_state=0),
    "one_slack": lambda: StructuredSVM(solver="one_slack", C=0.1, max_iter=500,
                                       random_state=0),
    "n_slack": lambda: StructuredSVM(solver="n_slack", C=0.1, max_iter=500, random_state=0),
    "fw": lambda: StructuredSVM(solver="fw", C=0.1, max_iter=5000, tol=1e-2, random_state=0),
    "extragradient": lambda: StructuredSVM(solver="extragradient", C=0.1, max_iter=2000,
                                           tol=1e-2, random_state=0),
    "perceptron": lambda: StructuredPerceptron(max_iter=100, random_state=0),
    "latent": lambda: _latent(max_iter=30),
    "approx": lambda: ApproxStructuredPredictor(max_iter=2000, tol=1e-5),
    "crf": lambda: CRF(max_iter=1000),
}


@pytest.mark.parametrize("which", list(CONVERGING))
def test_a_fit_that_converges_does_not_warn(which):
    X, y = separable_chains(seed=2)
    est, caught = _convergence_warnings(lambda: CONVERGING[which]().fit(X, y))
    assert not caught, [str(w.message) for w in caught]
    # and it did converge, by the criterion each documents, before max_iter
    assert est.n_iter_ <= est.max_iter
    if which == "perceptron":
        assert est.history_["mistakes"][-1] == 0
    elif which == "latent":
        assert est.history_["n_changed"][-1] == 0
    elif which == "crf":
        assert est.n_iter_ < est.max_iter
    elif which == "approx":
        obj = est.history_["objective"]
        assert est.n_iter_ < est.max_iter
        assert obj[-2] - obj[-1] <= est.tol * max(abs(obj[-1]), 1.0)
    else:
        assert est.history_["gap"][-1] <= est.tol


def test_bcfw_warns_exactly_when_the_last_gap_is_above_tol():
    X, y = separable_chains(seed=3)
    est, caught = _convergence_warnings(lambda: StructuredSVM(
        C=1.0, max_iter=3, check_every=1, tol=0.0, random_state=0).fit(X, y))
    gap = est.history_["gap"][-1]
    assert est.n_iter_ == 3 and gap > 0 and len(caught) == 1
    assert "max_iter=3" in str(caught[0].message) and f"{gap:.3g}" in str(caught[0].message)
    # the same passes with a tolerance just above the gap reached: no warning (converged at
    # the last pass), just below: the warning
    for tol, warned in ((gap * 1.001, False), (gap * 0.999, True)):
        _, caught = _convergence_warnings(lambda tol=tol: StructuredSVM(
            C=1.0, max_iter=3, check_every=1, tol=tol, random_state=0).fit(X, y))
        assert bool(caught) == warned
    # checks off: the gap is never computed, nothing to warn about
    _, caught = _convergence_warnings(lambda: StructuredSVM(
        C=1.0, max_iter=3, check_every=0, random_state=0).fit(X, y))
    assert not caught


def test_subgradient_warns_exactly_when_the_last_pass_moved_the_weights_beyond_tol():
    X, y = separable_chains(seed=4)
    kw = dict(solver="subgradient", C=0.1, random_state=0)
    T = 40
    before = StructuredSVM(max_iter=T - 1, **kw).fit(X, y).coef_
    after = StructuredSVM(max_iter=T, **kw).fit(X, y).coef_
    moved = np.linalg.norm(after - before) / np.linalg.norm(after)
    assert 0 < moved < 1
    for tol, warned in ((moved * 1.001, False), (moved * 0.999, True)):
        est, caught = _convergence_warnings(
            lambda tol=tol: StructuredSVM(max_iter=T, tol=tol, **kw).fit(X, y))
        assert bool(caught) == warned
        assert est.n_iter_ == T              # the tolerance never stops the subgradient
        np.testing.assert_array_equal(est.coef_, after)


def test_perceptron_warns_when_its_last_pass_still_made_mistakes():
    X, y = separable_chains(seed=5)
    y[0] = y[0].copy()
    X[1], y[1] = X[0], (y[0] + 1) % 3         # the same features, other labels: inseparable
    est, caught = _convergence_warnings(
        lambda: StructuredPerceptron(max_iter=4, random_state=0).fit(X, y))
    assert est.history_["mistakes"][-1] > 0 and len(caught) == 1
    assert f"is {est.history_['mistakes'][-1]}," in str(caught[0].message)


def test_latent_convex_steps_warn_naming_the_cccp_iteration():
    X, y = separable_chains(seed=6)
    _, caught = _convergence_warnings(lambda: _latent(max_iter=2, inner_iter=1).fit(X, y))
    inner = [str(w.message) for w in caught if "CCCP iteration" in str(w.message)
             and "StructuredSVM stopped" in str(w.message)]
    assert inner and inner[0].startswith("In CCCP iteration 1 of LatentStructuredSVM: ")


# ------------------------------------------------------------ one name per concept
def test_one_name_per_concept():
    svm, perceptron = StructuredSVM().get_params(), StructuredPerceptron().get_params()
    for name in ("average", "shuffle", "random_state", "max_iter", "verbose", "n_jobs"):
        assert name in svm and name in perceptron
    assert svm["average"] is True and svm["shuffle"] is True
    for old in ("averaging", "sample_order"):
        assert old not in svm
        with pytest.raises(TypeError):
            StructuredSVM(**{old: True})


def test_shuffle_false_visits_the_given_order():
    X, y = separable_chains(seed=7)
    fits = [StructuredSVM(shuffle=s, max_iter=3, check_every=0, random_state=r).fit(X, y)
            for s, r in ((False, 0), (False, 1), (True, 0), (True, 1), ("uniform", 0))]
    np.testing.assert_array_equal(fits[0].coef_, fits[1].coef_)   # no randomness left
    assert not np.array_equal(fits[2].coef_, fits[3].coef_)
    assert not np.array_equal(fits[2].coef_, fits[4].coef_)


def test_every_constructor_parameter_and_predict_option_is_keyword_only():
    for cls in ESTIMATORS:
        params = list(inspect.signature(cls.__init__).parameters.values())[1:]
        assert all(p.kind is p.KEYWORD_ONLY for p in params), cls.__name__
        for name, method in inspect.getmembers(cls, inspect.isfunction):
            if name.startswith("predict"):
                sig = list(inspect.signature(method).parameters.values())[1:]
                options = [p for p in sig if p.default is not p.empty]
                assert all(p.kind is p.KEYWORD_ONLY for p in options), (cls.__name__, name)
    with pytest.raises(TypeError):
        LatentStructuredSVM(StructuredSVM())


def test_latent_fit_takes_initial_states_not_the_constructors_name():
    fit = inspect.signature(LatentStructuredSVM.fit).parameters
    assert fit["initial_states"].kind is inspect.Parameter.KEYWORD_ONLY
    assert "latent_init" not in fit
    assert LatentStructuredSVM().get_params()["latent_init"] == "auto"


# ------------------------------------------------------------ the fit's bookkeeping
@pytest.mark.parametrize("make, keys", [
    (lambda: StructuredSVM(max_iter=3, check_every=1, random_state=0),
     ("pass", "primal", "dual", "gap", "seconds")),
    (lambda: StructuredSVM(solver="subgradient", max_iter=3, check_every=1, random_state=0),
     ("pass", "primal", "seconds")),
    (lambda: StructuredPerceptron(max_iter=3, random_state=0),
     ("pass", "mistakes", "errors", "seconds")),
    (lambda: _latent(max_iter=2, inner_iter=5), ("primal", "n_changed", "n_passes", "seconds")),
    (lambda: ApproxStructuredPredictor(max_iter=3), ("objective", "seconds")),
])
def test_history_keys_fit_seconds_and_verbose_lines(make, keys, capsys):
    X, y = separable_chains(seed=8)
    est, _ = _convergence_warnings(lambda: make().set_params(verbose=1).fit(X, y))
    assert tuple(est.history_) == keys
    n = len(est.history_["seconds"])
    assert n >= 1 and all(len(v) == n for v in est.history_.values())
    assert np.all(np.diff(est.history_["seconds"]) >= 0)
    assert est.fit_seconds_ >= est.history_["seconds"][-1] - est.history_["seconds"][0]
    lines = [ln for ln in capsys.readouterr().out.splitlines()
             if ln.startswith(("pass ", "iteration ", "CCCP iteration "))]
    outer = [ln for ln in lines if ln.startswith("CCCP")] if keys[0] == "primal" else lines
    assert len(outer) == est.n_iter_ and all(" s  " in ln for ln in outer)


def test_every_estimator_is_covered_by_the_max_iter_check():
    import skstruct

    covered = {type(make()).__name__ for make in SHORT.values()}
    assert covered == set(skstruct._ESTIMATORS)


@pytest.mark.parametrize("which", ["bcfw", "crf", "approx"])
def test_a_fit_warning_points_at_the_users_line(which):
    X, y = separable_chains(seed=1)
    est = SHORT[which]()
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        est.fit(X, y)
    ours = [w for w in caught if issubclass(w.category, ConvergenceWarning)]
    assert ours, "the max_iter=1 fit did not warn"
    assert all(w.filename == __file__ for w in ours), [w.filename for w in ours]
