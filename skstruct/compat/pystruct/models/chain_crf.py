"""Linear-chain CRF."""

import numpy as np

from ....inference import chain_edges
from .base import NativeEquivalent, unary_index
from .graph_crf import GraphCRF, pairwise_index

__all__ = ["ChainCRF", "make_chain_edges"]


def make_chain_edges(x):
    """Edges ``(t, t + 1)`` of a chain with one node per row of ``x``."""
    return chain_edges(np.shape(x)[0])


class ChainCRF(GraphCRF):
    """Linear-chain CRF, one pairwise table shared by every transition.

    A sample ``x`` is an array ``(n_nodes, n_features)`` (lengths may vary),
    its labels ``y`` an int array ``(n_nodes,)``.  Weights as
    :class:`GraphCRF`'s; the pairwise table is a full one by default
    (``directed=True``: ``[a, b]`` scores label ``a`` followed by ``b``).

    Parameters
    ----------
    n_states : int, optional
        Number of labels; by default the number of distinct labels in the data.
    n_features : int, optional
        Features per node; by default read from the data.
    inference_method : str or (str, dict), default='max-product'
        Viterbi decodes chains exactly under ``'max-product'``.
    class_weight : array-like of shape (n_states,), optional
        Weight of each true label in the Hamming loss.
    directed : bool, default=True
        A full pairwise table, or a symmetric one.
    """

    def __init__(self, n_states=None, n_features=None, inference_method=None,
                 class_weight=None, directed=True):
        if inference_method is None:
            inference_method = "max-product"
        GraphCRF.__init__(self, n_states=n_states, n_features=n_features,
                          inference_method=inference_method, class_weight=class_weight,
                          directed=directed)

    def _get_edges(self, x):
        return make_chain_edges(x)

    def _get_features(self, x):
        return x

    def _skstruct_native(self, X, Y):
        """skstruct's :class:`~skstruct.models.ChainModel` (a directed chain) or
        :class:`~skstruct.models.GraphModel` with ``directed=False`` on chain edges,
        or ``None`` (see :class:`StructuredModel`)."""
        from ....models import ChainModel

        if not self.directed:
            return GraphCRF._skstruct_native(self, X, Y)
        if self.size_joint_feature is None:
            self.initialize(X, Y)
        if not self._native_classes_ok(Y) or not self._native_decodes_alike(X):
            return None
        K, F = self.n_states, self.n_features
        index = np.concatenate([unary_index(K, F), pairwise_index(K, True, K * F)])
        return NativeEquivalent(ChainModel(), [np.asarray(x, dtype=np.float64) for x in X],
                                [self._native_labels(y) for y in Y], index, K * F + K * K)
