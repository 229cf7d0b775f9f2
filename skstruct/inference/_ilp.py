"""Exact MAP by integer linear programming on the local polytope, and the polytope's
linear programming relaxation.

A labelling of ``n`` nodes with ``K`` labels and ``E`` edges is written as indicator
variables: ``mu[v, k]`` (label ``k`` at node ``v``) and ``mu[e, a, b]`` (labels ``a``
and ``b`` at the ends of edge ``e``), constrained by

* ``sum_k mu[v, k] = 1`` for every node,
* ``sum_b mu[e, a, b] = mu[u, a]`` and ``sum_a mu[e, a, b] = mu[v, b]`` for every edge
  ``e = (u, v)`` (marginalisation), and ``0 <= mu <= 1``.

The score is linear in ``mu``: ``sum unary[v, k] mu[v, k] + sum pairwise_e[a, b]
mu[e, a, b]``.  With the node variables integral, the marginalisation constraints
force each edge's variables to the product of its ends' indicators, so the optimum of
this mixed-integer program is the MAP labelling; with every variable continuous it is
the LP relaxation over the local polytope (M. J. Wainwright and M. I. Jordan,
"Graphical Models, Exponential Families, and Variational Inference", Foundations and
Trends in Machine Learning 1(1-2), 2008, section 8.4), tight on forests, and the
relaxation whose dual TRW-S maximises.  MAP is decided first by a branch and bound over
TRW-S's bound (:func:`trws_branch_and_bound`); both programs are solved by HiGHS (Q.
Huangfu and J. A. J. Hall, "Parallelizing the dual revised simplex method", Mathematical
Programming Computation 10, 2018) through :func:`scipy.optimize.milp` and
:func:`scipy.optimize.linprog`.  A ``-inf`` score fixes its variable to 0: forbidden
labels and label pairs are hard constraints, and a sample none of whose labellings
satisfies them is reported infeasible.
"""

from typing import NamedTuple

import numpy as np
from numba import objmode

from .._core._jit import jit
from ._loopy import _gather

# the largest program built for one sample: its constraint matrix and HiGHS's copies
# of it grow with the variables, and branch and bound on more is rarely practical
MAX_VARIABLES = 1_000_000


def n_variables(n_nodes, n_edges, K):
    """Variables of the local polytope of a graph: ``n_nodes K + n_edges K^2``."""
    return n_nodes * K + n_edges * K * K


def check_size(n_nodes, n_edges, K, where, what="method='ilp'"):
    """Refuse a program of more than :data:`MAX_VARIABLES` variables (``where`` names
    the sample)."""
    size = n_variables(n_nodes, n_edges, K)
    if size > MAX_VARIABLES:
        raise ValueError(f"{what}: {where} has {n_nodes} nodes, {n_edges} edges and "
                         f"{K} states, {size} variables, more than the {MAX_VARIABLES} a "
                         "linear program is built for; use 'trws' (approximate, with a "
                         "bound) or, for two labels, 'qpbo'")


def _program(unary, edges, tables):
    """The local polytope of one graph: ``(cost, upper, A, b)``, to minimise ``cost @ mu``
    subject to ``A mu = b`` and ``0 <= mu <= upper``.

    ``tables`` (E, K, K) holds each edge's pairwise scores.  Node variable ``(v, k)`` is
    column ``v K + k``, edge variable ``(e, a, b)`` column ``n K + e K^2 + a K + b``.
    """
    import scipy.sparse as sp

    n, K = unary.shape
    E = edges.shape[0]
    n_node = n * K
    scores = np.concatenate([unary.ravel(), tables.ravel()])
    allowed = scores > -np.inf
    cost = np.where(allowed, -scores, 0.0)
    upper = allowed.astype(np.float64)
    # rows: n normalisations, then E K "sum over b" rows, then E K "sum over a" rows
    node_rows = np.repeat(np.arange(n), K)
    node_cols = np.arange(n_node)
    e, a, b = (x.ravel() for x in np.meshgrid(np.arange(E), np.arange(K), np.arange(K),
                                              indexing="ij"))
    edge_cols = n_node + np.arange(E * K * K)
    u, v = edges[:, 0], edges[:, 1]
    ek = (np.arange(E)[:, None] * K + np.arange(K)[None, :]).ravel()
    rows = np.concatenate([node_rows,
                           n + e * K + a, n + E * K + e * K + b,
                           n + ek, n + E * K + ek])
    cols = np.concatenate([node_cols,
                           edge_cols, edge_cols,
                           (u[:, None] * K + np.arange(K)).ravel(),
                           (v[:, None] * K + np.arange(K)).ravel()])
    vals = np.concatenate([np.ones(n_node), np.ones(2 * E * K * K), -np.ones(2 * E * K)])
    A = sp.csr_matrix((vals, (rows, cols)), shape=(n + 2 * E * K, n_node + E * K * K))
    rhs = np.concatenate([np.ones(n), np.zeros(2 * E * K)])
    return cost, upper, A, rhs


def _labelling_score(unary, edges, tables, labels):
    s = unary[np.arange(unary.shape[0]), labels].sum()
    if edges.shape[0]:
        s += tables[np.arange(edges.shape[0]), labels[edges[:, 0]], labels[edges[:, 1]]].sum()
    return float(s)


def ilp_map(unary, edges, tables):
    """The MAP labelling of one graph by branch and bound: ``(labels, score)``.

    ``unary`` (n, K), ``edges`` (E, 2) with node indices local to the graph, ``tables``
    (E, K, K).  ``score`` is ``-inf`` (labels all 0) when every labelling breaks a hard
    constraint.
    """
    from scipy.optimize import Bounds, LinearConstraint, milp

    n, K = unary.shape
    if n == 0:
        return np.zeros(0, np.int64), 0.0
    cost, upper, A, rhs = _program(unary, edges, tables)
    integrality = np.zeros(cost.shape[0], np.uint8)
    integrality[:n * K] = 1
    # the default relative gap (1e-4) would stop short of the optimum
    res = milp(cost, integrality=integrality, bounds=Bounds(0.0, upper),
               constraints=LinearConstraint(A, rhs, rhs), options={"mip_rel_gap": 1e-12})
    if res.status == 2:
        return np.zeros(n, np.int64), -np.inf
    if res.x is None:
        raise RuntimeError(f"HiGHS stopped without a solution: {res.message}")
    labels = np.argmax(res.x[:n * K].reshape(n, K), axis=1).astype(np.int64)
    return labels, _labelling_score(unary, edges, tables, labels)


# TRW-S iterations tried before branch and bound, and the relative gap that certifies
# its labelling (rounding only: HiGHS's own tolerances are looser)
CERTIFY_ITER = 100
CERTIFY_TOL = 1e-10


# nodes of TRW-S's branch and bound (one TRW-S run each, milliseconds on the graphs
# learning meets) before the integer program takes over
BB_MAX_NODES = 1000


@jit
def _branch_choice(unary, adj_offsets, adj_edge, adj_side, messages):
    """The node to branch on and its label: of the nodes with two or more labels left,
    the one whose two best reparametrised scores (its unary plus TRW-S's messages) are
    closest, and its best label.  ``(-1, -1)`` when every node has one label left."""
    n, K = unary.shape
    belief = np.empty(K)
    best_v, best_k, best_margin = -1, -1, np.inf
    for v in range(n):
        _gather(v, unary, adj_offsets, adj_edge, adj_side, messages, -1, belief)
        top, second, top_k, allowed = -np.inf, -np.inf, -1, 0
        for k in range(K):
            if unary[v, k] == -np.inf:
                continue
            allowed += 1
            if top_k < 0 or belief[k] > top:
                second, top, top_k = top, belief[k], k
            elif belief[k] > second:
                second = belief[k]
        # (a second best of -inf gives an infinite margin: still a node to split)
        if allowed >= 2 and (best_v < 0 or top - second < best_margin):
            best_v, best_k, best_margin = v, top_k, top - second
    return best_v, best_k


def trws_branch_and_bound(unary, edges, pairwise, pw_index, max_nodes=None):
    """Exact MAP of one graph by depth-first branch and bound on TRW-S's bound.

    Each node of the search runs TRW-S (:data:`CERTIFY_ITER` iterations, warm-started
    from its parent's messages) on the graph with some labels forbidden (a ``-inf``
    unary score); its bound, an upper bound of every labelling the node allows, prunes
    the node when it does not exceed the best score found by more than
    :data:`CERTIFY_TOL` (relative), and its labelling is a candidate.  A node is split
    on the node whose two best reparametrised scores are closest: that node takes its
    best label (searched first) or any other.  On a tight relaxation the search ends at
    its root: TRW-S's labelling, certified optimal by its bound (on the graphs learning
    meets, a few hundred nodes whose local polytope is tight or nearly so once the weights
    are good, this settles most samples in microseconds; a closed gap is as much a proof
    of optimality as the search's).  ``max_nodes=1`` asks for that certificate alone.

    Returns ``(labels, score)``, optimal up to :data:`CERTIFY_TOL`, or ``None`` when
    ``max_nodes`` nodes (default :data:`BB_MAX_NODES`) did not close the search: the
    caller then solves the integer program.  On the loss-augmented problems of learning
    on small grids, where the local polytope is often not tight, the search takes tens
    of milliseconds where HiGHS's branch and bound on the integer program takes
    seconds.
    """
    from .._core._graph import Adjacency, build_adjacency
    from ._trws import trws_one

    max_nodes = BB_MAX_NODES if max_nodes is None else max_nodes
    n, K = unary.shape
    E = edges.shape[0]
    adj = Adjacency(*build_adjacency(n, edges))
    best_score, best_labels = -np.inf, None
    stack = [(np.array(unary, np.float64), np.zeros((2 * E, K)))]
    labels = np.zeros(n, np.int64)
    explored = 0
    while stack:
        if explored == max_nodes:
            return None
        explored += 1
        node_unary, messages = stack.pop()
        bound, _, _, score = trws_one(0, n, 0, E, edges, node_unary, pairwise, pw_index, adj,
                                      messages, CERTIFY_ITER, CERTIFY_TOL, 10, False, labels)
        if score > best_score:
            best_score, best_labels = float(score), labels.copy()
        if bound <= best_score + CERTIFY_TOL * max(1.0, abs(bound)):
            continue
        v, k = _branch_choice(node_unary, adj.offsets, adj.edge, adj.side, messages)
        if v < 0:
            continue
        other = node_unary.copy()
        other[v, k] = -np.inf
        fixed = node_unary.copy()
        fixed[v, :k] = -np.inf
        fixed[v, k + 1:] = -np.inf
        stack.append((other, messages.copy()))
        stack.append((fixed, messages))
    if best_labels is None:
        # every labelling breaks a hard constraint
        return np.zeros(n, np.int64), -np.inf
    return best_labels, best_score


def ilp_sample(n0, n1, e0, e1, edges, unary, pairwise, pw_index, labels):
    """:func:`ilp_map` of the sample of nodes ``n0:n1`` and edges ``e0:e1`` of a packed
    batch (edge ``e`` scored by ``pairwise[pw_index[e]]``), its labels written into
    ``labels[n0:n1]``; returns its score.

    :func:`trws_branch_and_bound` solves the sample first (at its root, a labelling
    TRW-S certifies optimal is taken as it is); the integer program runs only on the
    samples whose search exceeds :data:`BB_MAX_NODES` nodes.
    """
    local = np.ascontiguousarray(edges[e0:e1], np.int64) - n0
    unary_s = np.ascontiguousarray(unary[n0:n1], np.float64)
    pw = np.ascontiguousarray(pw_index[e0:e1], np.int64)
    pairwise = np.ascontiguousarray(pairwise, np.float64)
    found = trws_branch_and_bound(unary_s, local, pairwise, pw) if local.shape[0] else None
    if found is None:
        found = ilp_map(unary_s, local, pairwise[pw])
    lab, score = found
    labels[n0:n1] = lab
    return score


@jit(nogil=False)
def ilp_one(n0, n1, e0, e1, edges, unary, pair, pwi, labels):
    """:func:`ilp_sample` called from compiled code (the learners' decoders): the
    solver is Python, entered with the interpreter's lock held."""
    with objmode(score="float64"):
        score = ilp_sample(n0, n1, e0, e1, edges, unary, pair, pwi, labels)
    return score


def run_map(batch, unary, pairwise, pw_index, mask, labels, bound, options):
    """The runner of ``method="ilp"`` (see :mod:`skstruct._core._decoders`): one program
    per sample of ``mask``, its optimum into ``bound`` (``-inf`` when infeasible)."""
    K = unary.shape[1]
    lengths = np.diff(batch.node_offsets)
    n_edges = np.diff(batch.edge_offsets)
    todo = np.flatnonzero(mask)
    for s in todo:
        check_size(int(lengths[s]), int(n_edges[s]), K, f"sample {s}")
    aug = options.augmented
    for s in todo:
        bound[s] = ilp_sample(batch.node_offsets[s], batch.node_offsets[s + 1],
                              batch.edge_offsets[s], batch.edge_offsets[s + 1], batch.edges,
                              aug, pairwise, pw_index, labels)


class LPRelaxation(NamedTuple):
    """The LP relaxation of MAP over the local polytope (:func:`lp_relaxation`).

    Attributes
    ----------
    node_marginals : ndarray of shape (n_nodes, K)
        Its optimal ``mu[v, k]``: each row sums to 1; one-hot rows where the relaxation
        is integral, fractional ones (often halves on frustrated cycles) elsewhere.
    edge_marginals : ndarray of shape (n_edges, K, K)
        Its optimal ``mu[e, a, b]``, oriented as ``edges``; each table's row and column
        sums are its ends' node marginals.
    value : float
        The relaxation's optimum, an upper bound on the best labelling's score, equal
        to it when the relaxation is tight (always on forests); ``-inf`` when the hard
        constraints leave the polytope empty (the marginals are then zero).
    """

    node_marginals: np.ndarray
    edge_marginals: np.ndarray
    value: float


def lp_relaxation_one(unary, edges, tables):
    """:class:`LPRelaxation` of one validated graph (``tables`` (E, K, K))."""
    from scipy.optimize import linprog

    n, K = unary.shape
    E = edges.shape[0]
    if n == 0:
        return LPRelaxation(np.zeros((0, K)), np.zeros((E, K, K)), 0.0)
    cost, upper, A, rhs = _program(unary, edges, tables)
    res = linprog(cost, A_eq=A, b_eq=rhs, bounds=np.stack([np.zeros_like(upper), upper], 1),
                  method="highs")
    if res.status == 2:
        return LPRelaxation(np.zeros((n, K)), np.zeros((E, K, K)), -np.inf)
    if res.x is None:
        raise RuntimeError(f"HiGHS stopped without a solution: {res.message}")
    # HiGHS's solution is feasible to its tolerance (about 1e-7): clip the round-off
    x = np.clip(res.x, 0.0, upper)
    return LPRelaxation(x[:n * K].reshape(n, K), x[n * K:].reshape(E, K, K), float(-res.fun))

