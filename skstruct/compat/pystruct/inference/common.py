"""Checks shared by the inference functions, and the score of a labelling."""

import numpy as np

from ....inference import check_edges, check_unary


def _validate_params(unary_potentials, pairwise_potentials, edges):
    """``(n_states, pairwise (n_edges, K, K))`` from one table or one per edge."""
    unary_potentials = np.asarray(unary_potentials)
    n_states = unary_potentials.shape[-1]
    pairwise = np.asarray(pairwise_potentials, dtype=np.float64)
    n_edges = len(edges)
    if pairwise.shape == (n_states, n_states):
        pairwise = np.broadcast_to(pairwise, (n_edges, n_states, n_states))
    elif pairwise.shape != (n_edges, n_states, n_states):
        raise ValueError("Expected pairwise_params either to be of shape n_states x n_states "
                         f"or n_edges x n_states x n_states, but got shape {pairwise.shape}")
    return n_states, pairwise


def _flat_inputs(unary_potentials, pairwise_potentials, edges):
    """Unary ``(n_nodes, K)`` floats, edges ``(n_edges, 2)`` int64, pairwise
    ``(n_edges, K, K)``, and the shape of one label per node of the input."""
    unary = np.asarray(unary_potentials, dtype=np.float64)
    if unary.ndim < 2:
        raise ValueError(f"unary_potentials must have shape (n_nodes, n_states), got shape "
                         f"{unary.shape}")
    shape = unary.shape[:-1]
    unary = check_unary(unary.reshape(-1, unary.shape[-1]))
    edges = check_edges(edges, unary.shape[0])
    _, pairwise = _validate_params(unary, pairwise_potentials, edges)
    return unary, pairwise, edges, shape


def compute_energy(unary_potentials, pairwise_potentials, edges, labels):
    """Score of a labelling: the sum of its unary and pairwise potentials.

    The same quantity the inference functions maximise, so that their
    solutions can be compared.

    Parameters
    ----------
    unary_potentials : ndarray of shape (n_nodes, n_states)
    pairwise_potentials : ndarray of shape (n_states, n_states) or (n_edges, n_states, n_states)
        ``pairwise_potentials[e][a, b]`` scores label ``a`` at ``edges[e, 0]``
        and ``b`` at ``edges[e, 1]``; one table is shared by every edge.
    edges : ndarray of int of shape (n_edges, 2)
    labels : ndarray of int of shape (n_nodes,)

    Returns
    -------
    energy : float
        ``sum_i unary[i, labels[i]] + sum_e pairwise[e][labels[u], labels[v]]``.
    """
    unary, pairwise, edges, _ = _flat_inputs(unary_potentials, pairwise_potentials, edges)
    labels = np.asarray(labels).ravel().astype(np.int64)
    if labels.shape[0] != unary.shape[0]:
        raise ValueError(f"labels holds {labels.shape[0]} labels for {unary.shape[0]} nodes")
    energy = unary[np.arange(unary.shape[0]), labels].sum()
    if len(edges):
        energy += pairwise[np.arange(len(edges)), labels[edges[:, 0]], labels[edges[:, 1]]].sum()
    return energy
