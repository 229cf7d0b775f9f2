"""Positional arguments to estimators and models raise a TypeError that names the fix."""

import pickle

import pytest
from sklearn.base import clone

from skstruct import (
    CRF,
    ApproxStructuredPredictor,
    LatentStructuredSVM,
    NonLocalCRF,
    StructuredPerceptron,
    StructuredSVM,
)
from skstruct.models import ChainModel, GraphModel, HiddenNodesModel, HiddenStatesModel


@pytest.mark.parametrize("make, fix", [
    (lambda: StructuredSVM(ChainModel()), r"StructuredSVM\(model=ChainModel\(\.\.\.\)\)"),
    (lambda: StructuredSVM(0.1), r"StructuredSVM\(C=0\.1\)"),
    (lambda: CRF(ChainModel(), 1.0), r"CRF\(model=ChainModel\(\.\.\.\)\)"),
    (lambda: NonLocalCRF(GraphModel()), r"NonLocalCRF\(model=GraphModel\(\.\.\.\)\)"),
    (lambda: StructuredPerceptron(ChainModel()),
     r"StructuredPerceptron\(model=ChainModel\(\.\.\.\)\)"),
    (lambda: ApproxStructuredPredictor(10.0), r"ApproxStructuredPredictor\(C=10\.0\)"),
    (lambda: LatentStructuredSVM(StructuredSVM()),
     r"LatentStructuredSVM\(estimator=StructuredSVM\(\.\.\.\)\)"),
    (lambda: GraphModel("trws"), r"GraphModel\(inference_method='trws'\)"),
    (lambda: HiddenNodesModel(3), r"HiddenNodesModel\(<parameter>=\.\.\.\)"),
])
def test_positional_arguments_name_the_keyword(make, fix):
    with pytest.raises(TypeError, match="takes keyword arguments only: use " + fix) as info:
        make()
    # the message lists the parameters, so the right one can be found
    assert "its parameters: " in str(info.value)


def test_a_positional_parameter_is_still_accepted():
    model = HiddenStatesModel(GraphModel(), n_states_per_label=3)
    assert model.get_params()["n_states_per_label"] == 3
    with pytest.raises(TypeError, match=r"HiddenStatesModel takes at most 1 positional argument "
                       r"\(base\), the others by keyword: use "
                       r"HiddenStatesModel\(n_states_per_label=3\)"):
        HiddenStatesModel(GraphModel(), 3)


def test_clone_pickle_and_get_params_are_unaffected():
    svm = StructuredSVM(model=GraphModel(directed=False), C=2.0)
    twin = clone(svm)
    assert twin.get_params()["C"] == 2.0 and twin.model.directed is False
    back = pickle.loads(pickle.dumps(svm))
    assert back.get_params(deep=True)["model__directed"] is False
    latent = LatentStructuredSVM(estimator=StructuredSVM(model=HiddenStatesModel(GraphModel())))
    assert clone(latent).get_params()["estimator__model__n_states_per_label"] == 2
