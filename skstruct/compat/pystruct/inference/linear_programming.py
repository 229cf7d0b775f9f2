"""The linear programming relaxation of MAP on the local polytope."""

import numpy as np

from ....inference import check_edges, check_unary

__all__ = ["lp_general_graph", "relaxed_marginals"]


def relaxed_marginals(unary, pairwise, edges):
    """Solve the local-polytope relaxation of maximising the score.

    Runs :func:`skstruct.inference.lp_relaxation` (scipy's HiGHS).

    Parameters
    ----------
    unary : ndarray of shape (n_nodes, n_states)
    pairwise : ndarray of shape (n_edges, n_states, n_states)
    edges : ndarray of int of shape (n_edges, 2)

    Returns
    -------
    unary_marginals : ndarray of shape (n_nodes, n_states)
    pairwise_marginals : ndarray of shape (n_edges, n_states ** 2)
        Row-major ``(a, b)`` pairs, ``a`` the label of ``edges[e, 0]``.
    score : float
        The relaxation's optimum, ``sum unary * unary_marginals + sum
        pairwise * pairwise_marginals``.
    """
    from ....inference import lp_relaxation

    n_nodes, K = unary.shape
    if n_nodes == 0:
        return np.zeros((0, K)), np.zeros((len(edges), K * K)), 0.0
    lp = lp_relaxation(unary, edges, pairwise)
    node = np.asarray(lp.node_marginals, dtype=np.float64)
    edge = np.asarray(lp.edge_marginals, dtype=np.float64).reshape(len(edges), K * K)
    # the score of the marginals returned, whatever rounding the solver's own value carries
    score = float(np.sum(unary * node) + np.sum(pairwise.reshape(len(edges), K * K) * edge))
    return node, edge, score


def lp_general_graph(unaries, edges, edge_weights):
    """Minimise a pairwise energy over the local polytope.

    The relaxation of MAP inference as a linear program: one variable per node
    and label, one per edge and label pair, summing to one per node and edge,
    each edge's consistent with its nodes'.  Solved by
    :func:`skstruct.inference.lp_relaxation` (scipy's HiGHS) on the negated
    costs.

    Parameters
    ----------
    unaries : ndarray of shape (n_nodes, n_states)
        Cost of each label at each node (an energy: lower is better).
    edges : ndarray of int of shape (n_edges, 2)
    edge_weights : ndarray of shape (n_edges, n_states, n_states)
        Cost of each label pair on each edge.

    Returns
    -------
    unary_variables : ndarray of shape (n_nodes, n_states)
    pairwise_variables : ndarray of shape (n_edges, n_states ** 2)
    energy : float
        The optimal value of the linear program (its minimum cost).
    """
    unaries = check_unary(np.asarray(unaries, dtype=np.float64))
    edge_weights = np.asarray(edge_weights, dtype=np.float64)
    if edge_weights.ndim != 3 or unaries.shape[1] != edge_weights.shape[1]:
        raise ValueError("incompatible shapes of unaries and edge_weights: "
                         f"{unaries.shape} and {edge_weights.shape}")
    if edge_weights.shape[1] != edge_weights.shape[2]:
        raise ValueError(f"Edge weights not square: shape {edge_weights.shape}")
    edges = check_edges(edges, unaries.shape[0])
    if edge_weights.shape[0] != edges.shape[0]:
        raise ValueError(f"{edge_weights.shape[0]} edge weights for {edges.shape[0]} edges")
    node, edge, score = relaxed_marginals(-unaries, -edge_weights, edges)
    return node, edge, -score
