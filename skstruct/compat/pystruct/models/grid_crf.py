"""Pairwise CRFs on 2-D grids."""

import numpy as np

from ..utils import make_grid_edges
from .crf import CRF
from .edge_feature_graph_crf import EdgeFeatureGraphCRF
from .graph_crf import GraphCRF

__all__ = ["DirectionalGridCRF", "GridCRF"]


def _check_grid(i, x):
    x = np.asarray(x)
    if x.ndim != 3:
        raise ValueError(f"sample {i}: a grid sample must have shape (height, width, "
                         f"n_features), got shape {x.shape}")
    return x


class GridCRF(GraphCRF):
    """Pairwise CRF on a 2-D grid, one symmetric pairwise table.

    A sample ``x`` is an array ``(height, width, n_features)`` (sizes may
    vary), its labels ``y`` an int array ``(height, width)``.  Weights as
    :class:`GraphCRF`'s with ``directed=False``.

    Parameters
    ----------
    n_states : int, optional
        Number of labels; by default the number of distinct labels in the data.
    n_features : int, optional
        Features per pixel; by default read from the data.
    inference_method : str or (str, dict), optional
        See :func:`~skstruct.compat.pystruct.inference.inference_dispatch`;
        default ``'ad3'``.
    neighborhood : {4, 8}, default=4
        Each pixel's neighbours (8: the diagonals too).
    """

    def __init__(self, n_states=None, n_features=None, inference_method=None, neighborhood=4):
        self.neighborhood = neighborhood
        GraphCRF.__init__(self, n_states=n_states, n_features=n_features,
                          inference_method=inference_method)

    def _n_features_of(self, x):
        return _check_grid(0, x).shape[-1]

    def _check_sample(self, i, x, y):
        x = _check_grid(i, x)
        y = np.asarray(y)
        if y.shape != x.shape[:2]:
            raise ValueError(f"sample {i}: labels of shape {y.shape} for a grid of shape "
                             f"{x.shape[:2]}")
        return GraphCRF._check_sample(self, i, x, y)

    def _get_edges(self, x):
        return make_grid_edges(x, neighborhood=self.neighborhood)

    def _get_features(self, x):
        x = np.asarray(x)
        return x.reshape(-1, x.shape[-1] if self.n_features is None else self.n_features)

    def _reshape_y(self, y, shape_x, return_energy):
        if return_energy:
            y, energy = y
        if isinstance(y, tuple):
            y = (y[0].reshape(shape_x[0], shape_x[1], y[0].shape[-1]), y[1])
        else:
            y = y.reshape(shape_x[:-1])
        return (y, energy) if return_energy else y

    def inference(self, x, w, relaxed=False, return_energy=False):
        """:meth:`GraphCRF.inference`, labels of shape ``(height, width)``."""
        y = GraphCRF.inference(self, x, w, relaxed=relaxed, return_energy=return_energy)
        return self._reshape_y(y, np.shape(x), return_energy)

    def loss_augmented_inference(self, x, y, w, relaxed=False, return_energy=False):
        """:meth:`GraphCRF.loss_augmented_inference`, labels of shape ``(height, width)``."""
        y_hat = GraphCRF.loss_augmented_inference(self, x, np.asarray(y).ravel(), w,
                                                  relaxed=relaxed, return_energy=return_energy)
        return self._reshape_y(y_hat, np.shape(x), return_energy)

    def continuous_loss(self, y, y_hat):
        """:meth:`GraphCRF.continuous_loss` of grid marginals ``(height, width, n_states)``."""
        y_hat = np.asarray(y_hat)
        return GraphCRF.continuous_loss(self, np.asarray(y).ravel(),
                                        y_hat.reshape(-1, y_hat.shape[-1]))

    def _native_sample(self, x):
        return (np.asarray(self._get_features(x), dtype=np.float64), self._get_edges(x))


class DirectionalGridCRF(GridCRF, EdgeFeatureGraphCRF):
    """Pairwise CRF on a 2-D grid with a full pairwise table per edge direction.

    Samples as :class:`GridCRF`'s.  Weights: the unary table ``(n_states,
    n_features)``, then one ``(n_states, n_states)`` table per direction:
    horizontal, vertical (and with ``neighborhood=8`` the two diagonals, up-right
    then down-right), ``[a, b]`` scoring label ``a`` at the left (upper) pixel.

    Parameters
    ----------
    n_states : int, optional
        Number of labels; by default the number of distinct labels in the data.
    n_features : int, optional
        Features per pixel; by default read from the data.
    inference_method : str or (str, dict), optional
        See :func:`~skstruct.compat.pystruct.inference.inference_dispatch`;
        default ``'ad3'``.
    neighborhood : {4, 8}, default=4
        Each pixel's neighbours (8: the diagonals too).
    """

    def __init__(self, n_states=None, n_features=None, inference_method=None, neighborhood=4):
        self.neighborhood = neighborhood
        n_edge_features = 2 if neighborhood == 4 else 4
        EdgeFeatureGraphCRF.__init__(self, n_states, n_features, n_edge_features,
                                     inference_method=inference_method)

    def _set_size_joint_feature(self):
        if self.n_features is not None and self.n_states is not None:
            self.size_joint_feature = (self.n_states * self.n_features
                                       + self.n_edge_features * self.n_states ** 2)
        else:
            self.size_joint_feature = getattr(self, "size_joint_feature", None)

    def _check_size_x(self, x):
        GridCRF._check_size_x(self, x)

    def _check_sample(self, i, x, y):
        return GridCRF._check_sample(self, i, x, y)

    def initialize(self, X, Y):
        """Read ``n_features`` and ``n_states`` from the data (the edge features are
        the directions)."""
        CRF.initialize(self, X, Y)

    def _get_edges(self, x, flat=True):
        return make_grid_edges(x, neighborhood=self.neighborhood, return_lists=not flat)

    def joint_feature(self, x, y):
        """The joint feature of ``(x, y)`` (see :meth:`EdgeFeatureGraphCRF.joint_feature`);
        ``y`` of shape ``(height, width)``, or relaxed marginals."""
        return EdgeFeatureGraphCRF.joint_feature(self, x, y)

    def _get_edge_features(self, x):
        # one indicator per direction: pystruct's two columns (horizontal, vertical)
        # with four neighbours, one column per diagonal too with eight
        lists = self._get_edges(x, flat=False)
        sizes = [len(e) for e in lists]
        features = np.zeros((sum(sizes), len(lists)))
        features[np.arange(sum(sizes)), np.repeat(np.arange(len(lists)), sizes)] = 1
        return features

    def _native_sample(self, x):
        return (np.asarray(self._get_features(x), dtype=np.float64), self._get_edges(x),
                self._get_edge_features(x))
