"""Grid graphs."""

import numpy as np


def make_grid_edges(x, neighborhood=4, return_lists=False):
    """Edges of the grid of an image ``x`` of shape ``(height, width, ...)``.

    Pixels are numbered row by row.

    Parameters
    ----------
    x : ndarray of shape (height, width, ...)
    neighborhood : {4, 8}, default=4
        4: edges to the right neighbour, then down; 8: also the two diagonals
        (from the lower-left to the upper-right neighbour, then down-right).
    return_lists : bool, default=False
        Return one edge array per direction instead of their concatenation.

    Returns
    -------
    edges : ndarray of int64 of shape (n_edges, 2), or a list of them
    """
    if neighborhood not in (4, 8):
        raise ValueError(f"neighborhood can only be '4' or '8', got {neighborhood!r}")
    x = np.asarray(x)
    if x.ndim < 2:
        raise ValueError(f"x must have shape (height, width, ...), got shape {x.shape}")
    inds = np.arange(x.shape[0] * x.shape[1], dtype=np.int64).reshape(x.shape[:2])
    right = np.column_stack([inds[:, :-1].ravel(), inds[:, 1:].ravel()])
    down = np.column_stack([inds[:-1, :].ravel(), inds[1:, :].ravel()])
    edges = [right, down]
    if neighborhood == 8:
        upright = np.column_stack([inds[1:, :-1].ravel(), inds[:-1, 1:].ravel()])
        downright = np.column_stack([inds[:-1, :-1].ravel(), inds[1:, 1:].ravel()])
        edges += [upright, downright]
    return edges if return_lists else np.vstack(edges)


def edge_list_to_features(edge_list):
    """Edge features marking the first list's edges and the others'.

    Parameters
    ----------
    edge_list : list of ndarray of shape (n_edges_i, 2)
        As :func:`make_grid_edges` returns with ``return_lists=True``.

    Returns
    -------
    edge_features : ndarray of shape (n_edges, 2)
        ``[1, 0]`` for the edges of ``edge_list[0]`` (horizontal), ``[0, 1]``
        for the others.
    """
    n_first = len(edge_list[0])
    n_edges = sum(len(e) for e in edge_list)
    edge_features = np.zeros((n_edges, 2))
    edge_features[:n_first, 0] = 1
    edge_features[n_first:, 1] = 1
    return edge_features
