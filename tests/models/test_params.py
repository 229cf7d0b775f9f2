"""The models' parameter tables: bad values named at fit, never in __init__."""

import numpy as np
import pytest

from skstruct.models import ChainModel, GraphModel, MulticlassModel, MultiLabelModel

CHAIN = ([np.ones((2, 2))], [np.array([0, 1])])
TAB = (np.ones((3, 2)), np.eye(3, dtype=int))


@pytest.mark.parametrize("model, data, name", [
    (ChainModel(bias="yes"), CHAIN, "bias"),
    (ChainModel(start_end=1), CHAIN, "start_end"),
    (ChainModel(inference_method="trws"), CHAIN, "inference_method"),
    (GraphModel(inference_method="bp"), ([(np.ones((2, 2)), np.array([[0, 1]]))],
                                         [np.array([0, 1])]), "inference_method"),
    (MultiLabelModel(edges="bogus"), TAB, "edges"),
    (MultiLabelModel(edges=5), TAB, "edges"),
    (MulticlassModel(inference_method=None), (np.ones((3, 2)), np.array([0, 1, 0])),
     "inference_method"),
])
def test_bad_parameters_are_named_at_fit(model, data, name):
    with pytest.raises(ValueError, match=rf"^{name} must be") as err:
        model.fit(*data)
    assert isinstance(err.value, TypeError)
