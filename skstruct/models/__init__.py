"""Joint feature maps (structures) the estimators learn with.

:class:`StructuredModel` is the model protocol (pystruct's: ``initialize``,
``size_joint_feature``, ``joint_feature``, ``inference``,
``loss_augmented_inference``, ``loss``): subclass it to write a model of your
own.  The built-in models (:class:`DesignModel` subclasses) implement the
protocol and a batched fast path.

Each model is an sklearn ``BaseEstimator`` holding only its parameters, so
``GridSearchCV`` can tune e.g. ``model__edges``; estimators fit a clone into
``model_`` and never mutate the object you pass.
"""

from ._base import DesignModel, StructuredModel
from ._design import Design
from ._grid import GridModel, auto_model, grid_edges
from ._latent import HiddenNodesModel, HiddenStatesModel
from ._matching import MatchingModel
from ._models import (
                      ChainModel,
                      GraphModel,
                      MulticlassModel,
                      MultiLabelModel,
                      chow_liu_tree,
)

__all__ = ["ChainModel", "Design", "DesignModel", "GraphModel", "GridModel", "HiddenNodesModel",
           "HiddenStatesModel", "MatchingModel",
           "MultiLabelModel", "MulticlassModel", "StructuredModel", "auto_model", "chow_liu_tree",
           "grid_edges"]
