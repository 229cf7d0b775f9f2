"""Dual extragradient for the structured SVM's saddle point, one iteration per call.

Taskar, Lacoste-Julien & Jordan, "Structured Prediction, Dual Extragradient and
Bregman Projections", JMLR 7 (2006): Nesterov's dual extrapolation on

    min_w max_{z_i in Z_i}  L(w, z) = lam / 2 ||w||^2
                                      + 1/n sum_i [c_i . z_i + c0_i + w . (F_i z_i - phi_i)]

where ``z_i`` is a relaxed labelling of sample ``i`` (a point of its relaxed label
polytope ``Z_i``), ``F_i z_i`` its joint feature (linear in ``z_i``, ``phi(x_i, y)`` at
the vertex of ``y``), ``phi_i = phi(x_i, y_i)`` and ``c0_i + c_i . z(y)`` the loss of
``y``.  ``max_z L(w, z)`` is the primal ``lam / 2 ||w||^2 + 1/n sum_i H_i(w)`` with the
margin-rescaled hinge (exactly, when the polytope is integral: trees, matchings), and
``min_w L(w, z)`` is, in closed form at ``w(z) = (sum_i phi_i - F_i z_i) / (lam n)``, the
dual ``-lam / 2 ||w(z)||^2 + 1/n sum_i (c_i . z_i + c0_i)`` that BCFW ascends: the
same ``lambda = 1 / (C n)`` form as the other solvers, so objectives and gaps compare.

The regulariser is kept in ``L`` and ``w`` is unconstrained (rather than Taskar et
al.'s ball ``||w|| <= gamma``): the objective is then skstruct's own (no radius to
choose, the same optimum as BCFW at the same ``C``), the ``w``-step stays a plain
Euclidean step, and the dual has the closed form above, so that the gap function
(their eq. 11) ``G(w, z) = max_z' L(w, z') - min_w' L(w', z) = P(w) - D(z)`` is the
duality gap BCFW reports.

Iteration ``t`` (Algorithm 1 of the paper, from the prox-centre ``u_hat = (0,
z_hat)``; ``g = (grad_w L, -grad_z L)``, ``s`` accumulates ``-lambda_tau g(u^tau)``)::

    v   = T(u_hat, s)                       # look-ahead
    u^t = T(v, -lambda_t g(v))               # extragradient step
    s  <- s - lambda_t g(u^t)

and the returned point is the average of the ``u^t`` weighted by the steps
``lambda_t`` (with a constant step, the paper's uniform average): ``w_bar = W_sum /
Lambda``, ``W_sum = sum_t lambda_t w^t``, ``Lambda = sum_t lambda_t``.  ``T(u, s)``
is the prox step ``argmax_u' <s, u'> - d(u, u')`` for the distance ``d = beta / 2
||w - w'||^2 + 1/n sum_i d_i(z_i, z_i')``: a Euclidean step ``w' = w + s_w / beta``
and, per sample (the ``1/n`` of ``d`` cancels that of ``L``), a projection:

* chains and trees (the batched path, :class:`Extragradient`): ``d_i`` is the KL
  divergence of the distributions over labellings, so the prox step from
  log-potentials ``theta`` moves to the marginals of ``theta + lambda (c_i + F_i^T
  w)``, computed by sum-product (forward-backward on chains, the two-pass tree kernel
  on the other forests).  From the uniform prox-centre, ``v``'s log-potentials are
  ``Lambda c_i + F_i^T W_sum`` and ``u^t``'s add ``lambda_t (c_i + F_i^T v_w)``:
  nothing per sample is stored;
* models of the protocol with the relaxed interface (:class:`ProtocolExtragradient`):
  ``d_i`` is the squared Euclidean distance, ``v_i = project(z_hat_i + Lambda c_i +
  F_i^T W_sum)`` from the prox-centre ``z_hat_i = project(x_i, 0)``, and ``u_i =
  project(v_i + lambda_t (c_i + F_i^T v_w))``.

The dual only needs ``sum_i F_i z_bar_i`` and ``sum_i c_i . z_bar_i``, accumulated
along with ``W_sum``: on chains and trees the state is a few weight-sized arrays, whatever the
number of samples (BCFW keeps a block per sample).

Step sizes.  With ``||(w, z)||^2 = beta ||w||^2 + 1/n sum_i ||z_i||_i^2`` (``||.||_1``
of the distributions over labellings for the KL geometry, Euclidean for projections), the
operator ``g`` is Lipschitz with constant at most the norm of ``[[lam / beta, R /
sqrt(beta)], [R / sqrt(beta), 0]]``, ``L = (a + sqrt(a^2 + 4 b^2)) / 2``, where ``R``
bounds the coupling ``z -> 1/n sum_i F_i z_i``:

* KL geometry: ``R^2 = mean_i R_i^2`` with ``R_i = max_{y, y'} ||phi_i(y) -
  phi_i(y')|| / 2 <= sqrt(((sum_v ||x_v||)^2 + E_i^2) / 2)`` (a closed-form bound
  from the node feature norms and the number of edges ``E_i``: safe);
* Euclidean: ``R^2`` the largest eigenvalue of ``1/n sum_i F_i F_i^T``, by power
  iteration (20 products, each one pass of ``relaxed_scores`` and
  ``relaxed_joint_feature``), inflated by 10%.

``eta = 1 / L`` is the paper's step.  ``beta`` balances the two blocks of the
convergence bound ``L (beta ||w*||^2 / 2 + D_z)`` (``D_z = 1/n sum_i d_i(z(y_i),
z_hat_i)``, at most ``T_i log K`` for ``T_i`` nodes from uniform): with ``||w*||^2 <= 2
P(0) / lam`` it is ``beta = lam D_z / P(0)``.  Any ``beta > 0`` keeps the guarantee.

``eta`` is safe but worst-case: the iterates accept steps an order of magnitude larger
(``doc/benchmarks.md``).  So the step is backtracked (the default): the
analysis of dual extrapolation bounds the weighted gap of the average by ``max_u
d(u, u_hat) / Lambda`` plus the sum over iterations of the error term ``E_t =
D*(theta_v + b, theta_v) - <b, u^t - v>``, where ``theta_v`` is the dual point of the
look-ahead, ``b = -lambda_t g(u^t)`` the step's move of it and ``D*`` the Bregman
divergence of the conjugate of ``d`` (``E_t <= 0`` whenever ``lambda_t L <= 1``).
``E_t`` is computed exactly after each step: for the chains' blocks it is ``KL(u_i ||
v+_i) - KL(u_i || v_i)`` from the log partitions of the next look-ahead ``v+``, for
the Euclidean blocks it is read from the Moreau envelope ``<theta, project(theta)> -
||project(theta)||^2 / 2``, for ``w`` it is ``-beta / 2 ||u_w - v_w||^2 + lambda_t^2 /
(2 beta) ||g_w(v) - g_w(u)||^2``.  A step with ``E_t > 0`` is undone and halved
(never below ``eta``), an accepted one lets the next try ``1.25`` times larger
(doubling until the first failure): the guarantee stays, with ``Lambda`` as large as
the problem allows.

Certificate.  The look-ahead of the next iteration is swept at the end of each one;
its node potentials are ``Lambda`` times the loss-augmented scores at the average
``w_bar``, and a max-product pass over the same scores gives ``H_i(w_bar)``
exactly, hence ``P(w_bar)``.  The dual is the best of ``D(z_bar)`` (the averaged
labellings: the paper's gap function), ``D(z^t)`` (the last step) and ``D(z(v+))``
(the next look-ahead), all from sums already at hand: every feasible ``z`` bounds
the optimum from below, and the last iterates' duals are far tighter than the
average's, which carries the early iterations.  Each pass thus returns the duality
gap of the weights it leaves, at the price of one Viterbi pass (the protocol path
calls ``loss_augmented_inference`` once per sample).
"""

from typing import NamedTuple

import numba
import numpy as np
from numba import prange

from .._core import n_threads, segment_sum
from .._core._graph import Forest
from .._core._jit import jit, pjit
from ..inference._chain import _fb_log, exp_tables, maxplus_step
from ..inference._modes import (
    BOTH_WAYS,
    EDGES_NONE,
    EDGES_PER_TABLE,
    MAX_SUM,
    SUM_PRODUCT,
    UPWARD,
)
from ..inference._tree import TreeOut, TreeWork, tree_one, tree_work
from ..models._kernels import add_rows, expand_coef
from ._crf import _fb_rescaled
from ._design_solver import DesignSolver
from ._protocol import ProtocolSolver

SUPPORTED = ("solver='extragradient' supports chains and trees (ChainModel; GraphModel on "
             "samples without cycles, without real-valued edge features; MultiLabelModel with "
             "an acyclic label graph such as edges='tree'; MulticlassModel; KL projections by "
             "sum-product) and models of the protocol that define the relaxed "
             "interface relaxed_labels, relaxed_joint_feature, relaxed_scores, relaxed_loss and "
             "project (Euclidean projections; e.g. MatchingModel)")
RELAXED = ("relaxed_labels", "relaxed_joint_feature", "relaxed_scores", "relaxed_loss",
           "project")


class SweepGraph(NamedTuple):
    """The structure a sweep walks: which samples are chains, and the batch's forest
    order (dummies when every sample is a chain)."""

    is_chain: np.ndarray   # (S,) bool: forward-backward, else the tree kernel
    order: np.ndarray      # see skstruct._core._graph.Forest
    parent: np.ndarray
    parent_edge: np.ndarray


class TreeBuffers(NamedTuple):
    """The tree kernel's per-node arrays, indexed by global node (one row each when every
    sample is a chain: the chains never touch them)."""

    unary: np.ndarray      # (N, K) node log-potentials
    belief: np.ndarray     # (N, K)
    up_msg: np.ndarray     # (N, K)
    bp: np.ndarray         # (N, K) int64
    labels: np.ndarray     # (N,) int64


class Tables(NamedTuple):
    """The edge tables of one sweep."""

    log: np.ndarray        # (M, K, K) log-potentials of the sum-product pass
    epair: np.ndarray      # (M, K, K) their scaled exponentials (``exp_tables``)
    pmax: np.ndarray       # (M,) the scales
    bar: np.ndarray        # (M, K, K) ``inv_t * log``: the tables of the hinge's max-sum pass
    inv_t: float           # > 0: the hinges at the weights ``inv_t (Wc, log)`` are wanted


class SampleWork(NamedTuple):
    """Per-thread scratch of the sample kernels."""

    ucol: np.ndarray       # (C,) one node's parameter-column scores
    U: np.ndarray          # (M, K) node scores by position in the sample
    th: np.ndarray         # (M, K) node log-potentials by position (chains)
    eu: np.ndarray         # (M, K) forward-backward's scratch
    al: np.ndarray         # (M, K) node marginals by position (chains)
    sc: np.ndarray         # (M,) forward-backward's scales
    beta: np.ndarray       # (K,)
    nb: np.ndarray         # (K,)
    tmp: np.ndarray        # (K,)
    delta: np.ndarray      # (K,) the hinge's Viterbi scores
    best: np.ndarray       # (K,)
    stage4: np.ndarray     # (1, M, K, K) the sample's edge marginals per table
    tree: TreeWork         # the tree kernel's scratch (its ``xi`` shared with the chains')


class SweepBuffers(NamedTuple):
    """One buffer per thread chunk of a sweep."""

    W: np.ndarray          # (n_chunks, F, C) joint features' node part
    P: np.ndarray          # (n_chunks, M, K, K) their pairwise part
    sums: np.ndarray       # (n_chunks, 3) expected loss, log partition, hinge sums


class Settings(NamedTuple):
    """The constants of an extragradient run."""

    lam: float             # the regularisation (lambda form)
    beta: float            # weight of the w block in the prox distance
    step_min: float        # the safe step eta, which always passes the test
    grow: float            # step growth after an accepted step (1: constant steps)
    shrink: float          # step shrinkage after a failed test
    PhiW: np.ndarray       # sum_i phi(x_i, y_i): node part (F, C)
    PhiP: np.ndarray       # pairwise part (M, K, K)


class State(NamedTuple):
    """The state of dual extrapolation (the scalars as 0-d arrays, updated in place)."""

    Wsum: np.ndarray       # sum_t lambda_t w^t, node part (F, C)
    Psum: np.ndarray       # its pairwise part (M, K, K)
    GW: np.ndarray         # sum_t lambda_t sum_i F_i z_i^t
    GP: np.ndarray
    GvW: np.ndarray        # sum_i F_i z_i at the pending look-ahead v
    GvP: np.ndarray
    GuW: np.ndarray        # sum_i F_i z_i at the last step u^t
    GuP: np.ndarray
    n_iter: np.ndarray     # iterations run
    ell_sum: np.ndarray    # sum_t lambda_t sum_i c_i . z_i^t
    pending: np.ndarray    # the look-ahead of the next iteration has been swept
    hinge: np.ndarray      # sum_i H_i(w_bar) at the current average
    lam_sum: np.ndarray    # Lambda = sum_t lambda_t
    step: np.ndarray       # the next step to try
    logz_v: np.ndarray     # sum_i log Z_i at the look-ahead
    n_trials: np.ndarray   # steps tried
    ell_u: np.ndarray      # sum_i c_i . z_i at the last step
    ell_v: np.ndarray      # and at the look-ahead


def new_state(W_shape, P_shape, step):
    """A fresh :class:`State`: nothing accumulated, ``step`` the first step to try."""
    return State(Wsum=np.zeros(W_shape), Psum=np.zeros(P_shape), GW=np.zeros(W_shape),
                 GP=np.zeros(P_shape), GvW=np.zeros(W_shape), GvP=np.zeros(P_shape),
                 GuW=np.zeros(W_shape), GuP=np.zeros(P_shape), n_iter=np.zeros((), np.int64),
                 ell_sum=np.zeros(()), pending=np.zeros((), np.bool_), hinge=np.zeros(()),
                 lam_sum=np.zeros(()), step=np.full((), float(step)), logz_v=np.zeros(()),
                 n_trials=np.zeros((), np.int64), ell_u=np.zeros(()), ell_v=np.zeros(()))


class Work(NamedTuple):
    """Scratch of :func:`extragradient_pass`, weight-shaped unless said."""

    sweep: SweepBuffers
    VW: np.ndarray         # the look-ahead's weights v_w
    VP: np.ndarray
    UW: np.ndarray         # the step's weights u_w
    UP: np.ndarray
    W2: np.ndarray         # the trial's weight sums
    P2: np.ndarray
    GnW: np.ndarray        # sum_i F_i z_i at the next look-ahead
    GnP: np.ndarray


@jit
def _zero(a):
    f = a.ravel()
    for i in range(f.shape[0]):
        f[i] = 0.0


@jit
def _copy(src, dst):
    s = src.ravel()
    d = dst.ravel()
    for i in range(s.shape[0]):
        d[i] = s[i]


@jit
def _node_scores(D, n0, T, Wc, ident, a_c, ucol, U, out, o0):
    """``U[t, k]``: the score of class ``k`` at node ``n0 + t`` (``csign[k] x_v .
    Wc[:, cmap[k]]``); ``out[o0 + t, k]`` the same plus ``a_c`` times its loss.  ``ident``:
    the class map is the identity (one column per class, sign 1), read directly."""
    K = U.shape[1]
    C = ucol.shape[0]
    xdata, xind, xptr, xrow, xoff = D.xdata, D.xind, D.xptr, D.xrow, D.xoff
    y, lw, cmap, csign = D.y, D.loss_weight, D.cmap, D.csign
    for t in range(T):
        v = n0 + t
        r = xrow[v]
        c = a_c * lw[v]
        if ident:
            u = U[t]
            for k in range(K):
                u[k] = 0.0
            add_rows(u, Wc, xdata, xind, xptr[r], xptr[r + 1], xoff[v])
        else:
            for j in range(C):
                ucol[j] = 0.0
            add_rows(ucol, Wc, xdata, xind, xptr[r], xptr[r + 1], xoff[v])
            for k in range(K):
                U[t, k] = csign[k] * ucol[cmap[k]]
        for k in range(K):
            out[o0 + t, k] = U[t, k] + c
        out[o0 + t, y[v]] = U[t, y[v]]


@jit
def _add_node(GW, D, v, at, ident):
    """``GW += x_v (x) (node marginal at, through the class map)``."""
    K = at.shape[0]
    xdata, xind, xptr = D.xdata, D.xind, D.xptr
    cmap, csign = D.cmap, D.csign
    r = D.xrow[v]
    o = D.xoff[v]
    for p in range(xptr[r], xptr[r + 1]):
        g = GW[xind[p] + o]
        x = xdata[p]
        if ident:
            for k in range(K):
                g[k] += x * at[k]
        else:
            for k in range(K):
                g[cmap[k]] += csign[k] * x * at[k]


@jit
def _add_tables(GP, stage):
    for m in range(stage.shape[0]):
        for i in range(stage.shape[1]):
            for j in range(stage.shape[2]):
                GP[m, i, j] += stage[m, i, j]


@jit
def _chain_sample(D, n0, T, e0, ident, Wc, a_c, tab, w, GW, GP):
    """Marginals of the chain of nodes ``n0:n0 + T`` under the log-potentials ``scores(Wc)
    + a_c loss`` (nodes) and ``tab.log[pw_index[e]]`` (edges), their joint feature added
    into ``GW, GP`` (``tab`` the sweep's :class:`Tables`, ``w`` a :class:`SampleWork`).

    Returns the expected loss under the marginals, the log partition and, if ``tab.inv_t
    > 0``, the hinge at the weights ``inv_t (Wc, tab.log)`` (the max-product score of
    ``inv_t scores(Wc) + loss`` and ``tab.bar``, less that of the truth).
    """
    U, al, delta, best = w.U, w.al, w.delta, w.best
    K = U.shape[1]
    y, lw, pwi = D.y, D.loss_weight, D.pw_index
    inv_t = tab.inv_t
    _node_scores(D, n0, T, Wc, ident, a_c, w.ucol, U, w.th, 0)
    stage = w.stage4[0]
    _zero(stage)
    logz = _fb_rescaled(w.th, tab.epair, tab.pmax, pwi, e0, T, w.eu, al, w.sc, w.beta, w.nb,
                        w.tmp, stage)
    if np.isnan(logz):
        # the scaled recursion lost too much mass: log space (exact for any range)
        _zero(stage)
        logz = _fb_log(w.th, tab.log, pwi, 0, e0, T, al, EDGES_PER_TABLE, w.stage4, 0, w.beta,
                       w.nb, w.tmp, w.tree.xi)
    ell = 0.0
    for t in range(T):
        v = n0 + t
        ell += lw[v] * (1.0 - al[t, y[v]])
        _add_node(GW, D, v, al[t], ident)
    if T > 1:
        _add_tables(GP, stage)
    if not inv_t > 0.0:
        return ell, logz, 0.0
    w0 = lw[n0]
    for k in range(K):
        delta[k] = U[0, k] * inv_t + w0
    delta[y[n0]] = U[0, y[n0]] * inv_t
    truth = U[0, y[n0]] * inv_t
    for t in range(1, T):
        Pbar = tab.bar[pwi[e0 + t - 1]]
        maxplus_step(delta, Pbar, best)
        v = n0 + t
        wv = lw[v]
        yv = y[v]
        for k in range(K):
            delta[k] = best[k] + U[t, k] * inv_t + wv
        delta[yv] = best[yv] + U[t, yv] * inv_t
        truth += U[t, yv] * inv_t + Pbar[y[v - 1], yv]
    mx = delta[0]
    for k in range(1, K):
        mx = max(mx, delta[k])
    return ell, logz, max(mx - truth, 0.0)


@jit
def _tree_sample(D, forest, n0, T, e0, e1, ident, Wc, a_c, tab, tb, w, GW, GP):
    """:func:`_chain_sample` for a tree (or forest) sample of nodes ``n0:n0 + T`` and edges
    ``e0:e1``: sum-product and max-sum by :func:`~skstruct.inference._tree.tree_one`
    (``tb`` the :class:`TreeBuffers` it works in, indexed by global node)."""
    U = w.U
    K = U.shape[1]
    n1 = n0 + T
    y, lw, pwi, edges = D.y, D.loss_weight, D.pw_index, D.edges
    inv_t = tab.inv_t
    tun, tbel = tb.unary, tb.belief
    _node_scores(D, n0, T, Wc, ident, a_c, w.ucol, U, tun, n0)
    _zero(w.stage4)
    out = TreeOut(labels=tb.labels, belief=tbel, up_msg=tb.up_msg, bp=tb.bp, edge_out=w.stage4)
    logz = tree_one(n0, n1, edges, tun, tab.log, pwi, forest, SUM_PRODUCT, BOTH_WAYS,
                    EDGES_PER_TABLE, out, 0, w.tree)
    ell = 0.0
    for v in range(n0, n1):
        ell += lw[v] * (1.0 - tbel[v, y[v]])
        _add_node(GW, D, v, tbel[v], ident)
    if e1 > e0:
        _add_tables(GP, w.stage4[0])
    if not inv_t > 0.0:
        return ell, logz, 0.0
    truth = 0.0
    for t in range(T):
        v = n0 + t
        for k in range(K):
            tun[v, k] = U[t, k] * inv_t + lw[v]
        tun[v, y[v]] = U[t, y[v]] * inv_t
        truth += tun[v, y[v]]
    for e in range(e0, e1):
        truth += tab.bar[pwi[e], y[edges[e, 0]], y[edges[e, 1]]]
    mx = tree_one(n0, n1, edges, tun, tab.bar, pwi, forest, MAX_SUM, UPWARD, EDGES_NONE, out,
                  0, w.tree)
    return ell, logz, max(mx - truth, 0.0)


@jit
def _put_sums(buf, c, ell, logz, hinge):
    buf.sums[c, 0] = ell
    buf.sums[c, 1] = logz
    buf.sums[c, 2] = hinge


@jit
def _sample_work(C, M, K, n_tables):
    """A fresh :class:`SampleWork` (``M`` the longest sample's nodes)."""
    return SampleWork(ucol=np.empty(C), U=np.empty((M, K)), th=np.empty((M, K)),
                      eu=np.empty((M, K)), al=np.empty((M, K)), sc=np.empty(M),
                      beta=np.empty(K), nb=np.empty(K), tmp=np.empty(K), delta=np.empty(K),
                      best=np.empty(K), stage4=np.empty((1, n_tables, K, K)),
                      tree=tree_work(K))


@pjit
def _sample_sweep(D, graph, tb, chunks, Wc, a_c, tab, max_nodes, buf):
    """One sum-product sweep over every sample, parallel over ``chunks`` (one buffer
    each): chunk ``c`` adds its joint features into ``buf.W[c], buf.P[c]`` and writes its
    expected loss, log partition and hinge sums into ``buf.sums[c]``.  Chains run
    forward-backward, the other (forest) samples the tree kernel (``graph`` a
    :class:`SweepGraph`, ``tb`` the :class:`TreeBuffers`)."""
    cmap, csign = D.cmap, D.csign
    node_offsets, edge_offsets = D.node_offsets, D.edge_offsets
    K = cmap.shape[0]
    C = Wc.shape[1]
    M = max(max_nodes, 1)
    n_tables = tab.log.shape[0]
    is_chain = graph.is_chain
    forest = Forest(order=graph.order, parent=graph.parent, parent_edge=graph.parent_edge)
    bufW, bufP = buf.W, buf.P
    ident = C == K
    for k in range(K):
        ident = ident and cmap[k] == k and csign[k] == 1.0
    for c in prange(chunks.shape[0] - 1):
        w = _sample_work(C, M, K, n_tables)
        GW = bufW[c]
        GP = bufP[c]
        _zero(GW)
        _zero(GP)
        ell = 0.0
        logz = 0.0
        hinge = 0.0
        for s in range(chunks[c], chunks[c + 1]):
            n0 = node_offsets[s]
            T = node_offsets[s + 1] - n0
            if T == 0:
                continue
            if is_chain[s]:
                e, z, h = _chain_sample(D, n0, T, edge_offsets[s], ident, Wc, a_c, tab, w, GW,
                                        GP)
            else:
                e, z, h = _tree_sample(D, forest, n0, T, edge_offsets[s],
                                       edge_offsets[s + 1], ident, Wc, a_c, tab, tb, w, GW, GP)
            ell += e
            logz += z
            hinge += h
        # through a compiled helper: a parallel loop loses writes made through a named
        # tuple's fields in its own body
        _put_sums(buf, c, ell, logz, hinge)


@jit
def _sweep(D, graph, tb, chunks, Wc, Pc, a_c, inv_t, max_nodes, buf, outW, outP):
    """``outW, outP = sum_i F_i z_i`` for the marginals ``z_i`` of the log-potentials
    ``scores(Wc, Pc) + a_c loss`` (``Pc`` one table per edge type); returns ``sum_i c_i .
    z_i``, ``sum_i log Z_i`` and, if ``inv_t > 0`` (a Viterbi pass over the same scores),
    ``sum_i H_i`` at the weights ``inv_t (Wc, Pc)``."""
    Pbar3 = np.empty_like(Pc)
    fp = Pc.ravel()
    fb = Pbar3.ravel()
    for q in range(fp.shape[0]):
        fb[q] = inv_t * fp[q]
    epair, pmax = exp_tables(Pc)
    tab = Tables(log=Pc, epair=epair, pmax=pmax, bar=Pbar3, inv_t=inv_t)
    _sample_sweep(D, graph, tb, chunks, Wc, a_c, tab, max_nodes, buf)
    ow = outW.ravel()
    op = outP.ravel()
    _zero(ow)
    _zero(op)
    ell = 0.0
    logz = 0.0
    hinge = 0.0
    for c in range(chunks.shape[0] - 1):
        bw = buf.W[c].ravel()
        for q in range(ow.shape[0]):
            ow[q] += bw[q]
        bp = buf.P[c].ravel()
        for q in range(op.shape[0]):
            op[q] += bp[q]
        ell += buf.sums[c, 0]
        logz += buf.sums[c, 1]
        hinge += buf.sums[c, 2]
    return ell, logz, hinge


@jit
def _look_ahead(lam, beta, n, lam_sum, Wsum, Gsum, Phi, V):
    """``v_w = s_w / beta`` with ``s_w = -(lam W_sum + (G_sum - Lambda Phi) / n)`` (flat over
    one weight block)."""
    ws = Wsum.ravel()
    gs = Gsum.ravel()
    ph = Phi.ravel()
    v = V.ravel()
    for q in range(ws.shape[0]):
        v[q] = -(lam * ws[q] + (gs[q] - lam_sum * ph[q]) / n) / beta


@jit
def _step(lam, beta, n, step, V, Gv, Phi, Wsum, U, W2):
    """``u_w = v_w - (step / beta) g_w(v)``, ``g_w(v) = lam v_w + (G(v) - Phi) / n``, into
    ``U``; the weights ``W_sum + step v_w`` of the step's log-potentials into ``W2``."""
    v = V.ravel()
    gv = Gv.ravel()
    ph = Phi.ravel()
    ws = Wsum.ravel()
    u = U.ravel()
    w2 = W2.ravel()
    a = step / beta
    for q in range(v.shape[0]):
        u[q] = v[q] - a * (lam * v[q] + (gv[q] - ph[q]) / n)
        w2[q] = ws[q] + step * v[q]


@jit
def _axpy_into(x, a, d, out):
    """``out = x + a d``."""
    fx = x.ravel()
    fd = d.ravel()
    fo = out.ravel()
    for q in range(fx.shape[0]):
        fo[q] = fx[q] + a * fd[q]


@jit
def _error_w(lam, beta, n, step, V, U, Gv, Gu):
    """The ``w`` block's part of the step's error term, ``-beta / 2 ||u_w - v_w||^2 +
    step^2 / (2 beta) ||g_w(v) - g_w(u)||^2``, and ``u_w . G(u)`` (flat over one block)."""
    v = V.ravel()
    u = U.ravel()
    gv = Gv.ravel()
    gu = Gu.ravel()
    duv = 0.0
    dg = 0.0
    dot = 0.0
    for q in range(v.shape[0]):
        d = v[q] - u[q]
        duv += d * d
        g = lam * d + (gv[q] - gu[q]) / n
        dg += g * g
        dot += u[q] * gu[q]
    return -0.5 * beta * duv + 0.5 * step * step / beta * dg, dot


@jit
def extragradient_pass(D, graph, tb, chunks, n_iter, cfg, st, work, max_nodes):
    """``n_iter`` iterations of dual extrapolation on chains and trees (KL projections), in
    place.

    ``D`` is the design's :class:`~skstruct.models._design.DesignArrays`, ``graph`` and
    ``tb`` the sweep's :class:`SweepGraph` and :class:`TreeBuffers`, ``cfg`` the
    :class:`Settings`, ``st`` the :class:`State` and ``work`` a :class:`Work`.
    ``st.Wsum, st.Psum`` hold ``sum_t lambda_t w^t``, ``st.GW, st.GP`` ``sum_t lambda_t
    sum_i F_i z_i^t``; ``st.GvW, st.GvP`` hold ``sum_i F_i z_i`` at the pending look-ahead
    ``v`` (its log partitions in ``st.logz_v``) and ``st.hinge`` the hinge sum at the
    average ``Wsum / Lambda``.  Each trial of a step ``lambda``: the ``w``-step, the sweep
    of the step's marginals ``z(u)``, the sweep of the next look-ahead (with the hinges at
    the new average), and the test of the step's error term; a failed test halves
    ``lambda`` (down to ``cfg.step_min``, the safe step, which always passes) and tries
    again, a passed one commits and lets the next step grow by ``cfg.grow``.
    """
    n = D.node_offsets.shape[0] - 1
    lam, beta, step_min = cfg.lam, cfg.beta, cfg.step_min
    PhiW, PhiP = cfg.PhiW, cfg.PhiP
    Wsum, Psum, GW, GP = st.Wsum, st.Psum, st.GW, st.GP
    GvW, GvP, GuW, GuP = st.GvW, st.GvP, st.GuW, st.GuP
    VW, VP, UW, UP = work.VW, work.VP, work.UW, work.UP
    W2, P2, GnW, GnP = work.W2, work.P2, work.GnW, work.GnP
    buf = work.sweep
    for _ in range(n_iter):
        lam_sum = st.lam_sum[()]
        if not st.pending[()]:
            inv = 1.0 / lam_sum if lam_sum > 0.0 else 0.0
            ell_v, lz, h = _sweep(D, graph, tb, chunks, Wsum, Psum, lam_sum, inv, max_nodes,
                                  buf, GvW, GvP)
            st.hinge[()] = h
            st.logz_v[()] = lz
            st.ell_v[()] = ell_v
            st.pending[()] = True
        _look_ahead(lam, beta, n, lam_sum, Wsum, GW, PhiW, VW)
        _look_ahead(lam, beta, n, lam_sum, Psum, GP, PhiP, VP)
        step = st.step[()]
        while True:
            st.n_trials[()] += 1
            _step(lam, beta, n, step, VW, GvW, PhiW, Wsum, UW, W2)
            _step(lam, beta, n, step, VP, GvP, PhiP, Psum, UP, P2)
            ell_u, _, _ = _sweep(D, graph, tb, chunks, W2, P2, lam_sum + step, 0.0, max_nodes,
                                 buf, GuW, GuP)
            _axpy_into(Wsum, step, UW, W2)
            _axpy_into(Psum, step, UP, P2)
            new_sum = lam_sum + step
            ell_v, lz, h = _sweep(D, graph, tb, chunks, W2, P2, new_sum, 1.0 / new_sum,
                                  max_nodes, buf, GnW, GnP)
            ew, dw = _error_w(lam, beta, n, step, VW, UW, GvW, GuW)
            ep, dp = _error_w(lam, beta, n, step, VP, UP, GvP, GuP)
            # the z blocks' part: 1/n sum_i KL(u_i || v+_i) - KL(u_i || v_i)
            logz_v = st.logz_v[()]
            ez = (-step * (ell_u + dw + dp) + (lz - logz_v)) / n
            slack = 1e-12 * (abs(lz) + abs(logz_v)) / n
            if ew + ep + ez <= slack or step <= step_min:
                _copy(W2, Wsum)
                _copy(P2, Psum)
                _axpy_into(GW, step, GuW, GW)
                _axpy_into(GP, step, GuP, GP)
                _copy(GnW, GvW)
                _copy(GnP, GvP)
                st.ell_sum[()] += step * ell_u
                st.ell_u[()] = ell_u
                st.ell_v[()] = ell_v
                st.lam_sum[()] = new_sum
                st.logz_v[()] = lz
                st.hinge[()] = h
                st.n_iter[()] += 1
                # doubling until the first failed test finds the scale, then ``grow``
                if cfg.grow > 1.0 and st.n_trials[()] == st.n_iter[()]:
                    st.step[()] = 2.0 * cfg.grow * step
                else:
                    st.step[()] = cfg.grow * step
                break
            step = max(step * cfg.shrink, step_min)


def step_sizes(lam, R, D_z, P0, beta=None):
    """``(eta, beta)``: the safe step ``eta = 1 / L`` and the balance ``beta`` of the
    prox distance (default ``lam D_z / P0``, 1 where that is not positive); ``L`` the
    Lipschitz bound of the module docstring for the coupling norm ``R``."""
    if beta is None:
        beta = lam * D_z / P0 if P0 > 0 and D_z > 0 else 1.0
    beta = float(beta)
    if not beta > 0:
        raise ValueError(f"beta must be > 0, got {beta!r}")
    a = lam / beta
    b = R / np.sqrt(beta)
    L = 0.5 * (a + np.sqrt(a * a + 4.0 * b * b))
    return 1.0 / L, beta


def forest_arrays(batch, K):
    """``(graph, tb)`` of the sweep: its :class:`SweepGraph` and the tree kernel's
    :class:`TreeBuffers` (one row when every sample is a chain: the chains never touch
    them)."""
    chain = batch.is_chain
    if chain.all():
        rows = 1
        forest = Forest.dummy()
    else:
        rows = batch.n_nodes
        forest = batch.forest
    graph = SweepGraph(is_chain=np.ascontiguousarray(chain), order=forest.order,
                       parent=forest.parent, parent_edge=forest.parent_edge)
    tb = TreeBuffers(unary=np.zeros((rows, K)), belief=np.zeros((rows, K)),
                     up_msg=np.zeros((rows, K)), bp=np.zeros((rows, K), np.int64),
                     labels=np.zeros(rows, np.int64))
    return graph, tb


def design_error(design):
    """Why the KL path cannot train ``design`` (None if it can): every sample a forest
    (a chain, a tree or several) and every edge scored by a pairwise table of its own
    type (no edge features)."""
    b = design.batch
    if not np.all(b.is_forest):
        s = int(np.flatnonzero(~b.is_forest)[0])
        return f"sample {s} has a cycle"
    if b.n_edges and not design.tied:
        return "the model scores edges by edge features rather than by a table per edge type"
    if getattr(design, "submodular", False):
        return "submodular=True constrains the pairwise table, which the method does not"
    if getattr(design, "symmetric", False):
        return ("directed=False ties the two halves of the pairwise table, which the "
                "method does not")
    return None


class Extragradient(DesignSolver):
    """Dual extragradient on a chain or tree design (KL projections by sum-product).

    State: the :class:`State` named tuple ``state``: ``Wsum, Psum`` (the step-weighted sum
    of the iterates ``w^t``), ``GW, GP`` (that of ``sum_i F_i z_i^t``), ``GvW, GvP`` (the
    pending look-ahead's) and the scalars of the step schedule and the certificate.  One
    :meth:`run_pass` is one iteration: a sum-product sweep for the step, one for the next
    look-ahead fused with a Viterbi pass for the hinges at the new average, in one compiled
    call (and two more sweeps for every step that fails its test).  ``order`` is ignored (a
    batch method); an empty one only compiles.

    Parameters
    ----------
    design, loss_weight, lam, surrogate, averaging, inference_iter, n_jobs
        As :class:`DesignSolver`; ``surrogate`` must be ``"margin"`` and
        ``averaging`` True (the method returns Nesterov's average).
    beta : float or None
        Weight of the ``w`` block in the prox distance (see the module docstring);
        None: ``lam D_z / P(0)``.
    adaptive : bool
        Backtracking steps (from the safe step ``eta``, growing by ``grow`` after
        an accepted step and halved after a failed test); False: the constant
        safe step ``eta`` of the paper.
    """

    has_dual = True
    STATE = DesignSolver.STATE + ("state", "eta", "beta", "adaptive")
    GROW = 1.25
    SHRINK = 0.5

    def __init__(self, design, loss_weight, *, beta=None, adaptive=True, **kwargs):
        _check_settings(kwargs.get("surrogate"), kwargs.get("averaging"))
        why = design_error(design)
        if why is not None:
            raise ValueError(f"{SUPPORTED}; here {why}")
        super().__init__(design, loss_weight, **kwargs)
        d = design
        b = d.batch
        K = d.n_classes
        F = d.n_features_total
        C = self.W.shape[1]
        # one table per edge type; a model without edges keeps one unused table
        M = max(self.P.shape[0], 1)
        D = self.D
        # sum_i phi(x_i, y_i): the class map sends class k to column cmap[k] with sign
        # csign[k]
        coef = np.zeros((b.n_nodes, C))
        np.add.at(coef, (np.arange(b.n_nodes), D.cmap[D.y]), D.csign[D.y])
        self.PhiW = expand_coef(D.xdata, D.xind, D.xptr, D.xrow, D.xoff, coef, F)
        self.PhiP = np.zeros((M, K, K))
        if b.n_edges:
            np.add.at(self.PhiP, (D.pw_index, D.y[b.edges[:, 0]], D.y[b.edges[:, 1]]), 1.0)
        # the step sizes (module docstring)
        X = d.features
        node_norm = np.sqrt(np.asarray(X.multiply(X).sum(axis=1)).ravel())[d.xrow]
        sx = segment_sum(node_norm, b.node_offsets)
        T = b.lengths.astype(np.float64)
        E = np.diff(b.edge_offsets).astype(np.float64)
        S = max(b.n_samples, 1)
        # the largest change of a node's class vector, ||s_k e_c(k) - s_j e_c(j)||
        # (sqrt(2) for one column per class)
        vec = np.zeros((K, C))
        vec[np.arange(K), D.cmap] = D.csign
        a = max((float(np.linalg.norm(vec[k] - vec[j])) for k in range(K) for j in range(k)),
                default=0.0)
        self.R = float(np.sqrt(np.sum(((a * sx) ** 2 + 2.0 * E ** 2) / 4.0) / S))
        D_z = float(T.sum() * np.log(K) / S) if K > 1 else 0.0
        P0 = float(np.sum(D.loss_weight) / S)
        self.eta, self.beta = step_sizes(self.lam, self.R, D_z, P0, beta)
        self.adaptive = bool(adaptive)
        self.state = new_state((F, C), (M, K, K), self.eta)
        self._work = None
        self._graph, self._tree_buffers = forest_arrays(b, K)

    def key(self):
        return super().key() + (self.eta, self.beta, self.adaptive)

    def _work_for(self, n_chunks):
        W, P = self.state.Wsum.shape, self.state.Psum.shape
        if self._work is None or self._work.sweep.sums.shape[0] != n_chunks:
            sweep = SweepBuffers(W=np.zeros((n_chunks,) + W), P=np.zeros((n_chunks,) + P),
                                 sums=np.zeros((n_chunks, 3)))
            self._work = Work(sweep=sweep, VW=np.zeros(W), VP=np.zeros(P), UW=np.zeros(W),
                              UP=np.zeros(P), W2=np.zeros(W), P2=np.zeros(P), GnW=np.zeros(W),
                              GnP=np.zeros(P))
        return self._work

    def run_pass(self, order):
        """One iteration; returns the duality gap of the average it leaves (0 for an
        empty ``order``, which only compiles the kernels)."""
        n_iter = 1 if len(order) else 0
        b = self.design.batch
        grow, shrink = (self.GROW, self.SHRINK) if self.adaptive else (1.0, 1.0)
        cfg = Settings(lam=self.lam, beta=self.beta, step_min=self.eta, grow=grow,
                       shrink=shrink, PhiW=self.PhiW, PhiP=self.PhiP)
        with n_threads(self.n_jobs):
            chunks = b.chunks(numba.get_num_threads())
            extragradient_pass(self.D, self._graph, self._tree_buffers, chunks, n_iter, cfg,
                               self.state, self._work_for(chunks.shape[0] - 1),
                               self.design.max_nodes)
        if not n_iter:
            return 0.0
        return self.objective()[2]

    @property
    def step(self):
        """The step size the next iteration will try first."""
        return float(self.state.step)

    def weights(self):
        """The weighted average ``w_bar`` of the iterates (zeros before the first)."""
        st = self.state
        L = float(st.lam_sum)
        if L == 0:
            return np.zeros_like(self.W), np.zeros_like(self.P)
        P = st.Psum / L if self.P.shape[0] else np.zeros_like(self.P)
        return st.Wsum / L, P

    def _dual(self, GW, GP, ell):
        """``D(z) = -lam / 2 ||w(z)||^2 + ell / n`` from ``sum_i F_i z_i`` and ``ell = sum_i
        c_i . z_i``."""
        c = 1.0 / (self.lam * self.n_samples)
        wz = (self.PhiW - GW) * c
        pz = (self.PhiP - GP) * c
        return -0.5 * self.lam * float(np.sum(wz * wz) + np.sum(pz * pz)) + \
            ell / self.n_samples

    def duals(self):
        """``D`` at the average ``z_bar``, at the last iterate ``z^t`` and at the next
        look-ahead ``z(v)`` (NaN before the first iteration)."""
        st = self.state
        L = float(st.lam_sum)
        if L == 0:
            return np.nan, np.nan, np.nan
        return (self._dual(st.GW / L, st.GP / L, float(st.ell_sum) / L),
                self._dual(st.GuW, st.GuP, float(st.ell_u)),
                self._dual(st.GvW, st.GvP, float(st.ell_v)))

    def objective(self):
        """``(P(w_bar), D, gap)`` from the state (no pass over the data), ``D`` the best
        of :meth:`duals`: every feasible ``z`` bounds the optimum from below."""
        L = float(self.state.lam_sum)
        if L == 0:
            return super().objective()
        W, P = self.weights()
        primal = 0.5 * self.lam * float(np.sum(W * W) + np.sum(P * P)) + \
            float(self.state.hinge) / self.n_samples
        dual = max(self.duals())
        return primal, dual, primal - dual


def _check_settings(surrogate, averaging):
    if surrogate is not None and surrogate != "margin":
        raise ValueError(f"solver='extragradient' trains the margin-rescaled hinge "
                         f"(surrogate='margin'), got surrogate={surrogate!r}")
    if averaging is not None and not averaging:
        raise ValueError("solver='extragradient' returns Nesterov's average of its iterates "
                         "(its convergence guarantee is for the average): averaging=False is "
                         "not supported")


class ProtocolExtragradient(ProtocolSolver):
    """Dual extragradient for models of the protocol with the relaxed interface
    (Euclidean projections), one sample at a time.

    The model defines, for a flat float vector ``z`` per sample (a point of its
    relaxed label polytope): ``relaxed_labels(x, y)`` (the 0/1 ``z`` of ``y``),
    ``relaxed_joint_feature(x, z)`` (``F z``, linear), ``relaxed_scores(x, w)``
    (``F^T w``), ``relaxed_loss(x, y)`` (``(c, c0)``: ``loss(y, y') = c0 + c . z(y')``)
    and ``project(x, z)`` (the Euclidean projection onto the polytope).  The step and
    its test are those of :class:`Extragradient`, with the Euclidean prox: ``v_i =
    project(theta_i)`` for the dual point ``theta_i = z_hat_i + Lambda c_i + F_i^T
    W_sum`` and ``u_i = project(v_i + lambda (c_i + F_i^T v_w))`` (Taskar et al.'s
    ``Pi(v - eta (F v - a))``).  The look-ahead's points are kept between passes
    (one ``z`` per sample).  The primal objective is evaluated with
    ``loss_augmented_inference`` (one call per sample and pass), so it is exact as far
    as that is.

    Parameters
    ----------
    model, X, y, lam, averaging
        As :class:`ProtocolSolver` (``averaging`` must be True).
    beta, adaptive
        As :class:`Extragradient`.
    power_iter : int
        Power iterations of the coupling norm's estimate.
    """

    has_dual = True
    STATE = ProtocolSolver.STATE + ("Wsum", "Gsum", "ell_sum", "lam_sum", "step", "n_iter",
                                    "n_trials", "eta", "beta", "adaptive", "_pending",
                                    "_last", "_cache")
    GROW = Extragradient.GROW
    SHRINK = Extragradient.SHRINK

    def __init__(self, model, X, y, *, lam, averaging, beta=None, adaptive=True,
                 power_iter=20):
        missing = [m for m in RELAXED if not callable(getattr(model, m, None))]
        if missing:
            raise ValueError(f"{SUPPORTED}; {type(model).__name__} does not define "
                             f"{', '.join(missing)}")
        _check_settings("margin", averaging)
        super().__init__(model, X, y, lam=lam, averaging=averaging)
        n = self.n_samples
        d = self.w.shape[0]
        self.c, self.c0, self.z_hat = [], [], []
        D_z = 0.0
        for s in range(n):
            x, yi = X[s], y[s]
            zy = self._vec(model.relaxed_labels(x, yi), None, "relaxed_labels", s)
            m = zy.shape[0]
            c, c0 = model.relaxed_loss(x, yi)
            self.c.append(self._vec(c, m, "relaxed_loss's c", s))
            self.c0.append(float(c0))
            z_hat = self._vec(model.project(x, np.zeros(m)), m, "project", s)
            self.z_hat.append(z_hat)
            D_z += 0.5 * float(np.sum((zy - z_hat) ** 2))
        D_z /= n
        self.Phi = self.phi_true.sum(axis=0)
        P0 = float(np.mean(self.hinges(np.zeros(d))))
        self.R = self._coupling_norm(int(power_iter))
        self.eta, self.beta = step_sizes(self.lam, self.R, D_z, P0, beta)
        self.adaptive = bool(adaptive)
        self.Wsum = np.zeros(d)
        self.Gsum = np.zeros(d)
        self.ell_sum = 0.0
        self.lam_sum = 0.0
        self.step = self.eta
        self.n_iter = 0
        self.n_trials = 0
        # the pending look-ahead: (theta_i, v_i) per sample, sum_i F_i v_i, sum_i c_i . v_i
        # + c0_i, sum_i h*(theta_i); the last iterate's (sum_i F_i u_i, its loss sum)
        self._pending = None
        self._last = None
        self._cache = None

    def key(self):
        return super().key() + (self.eta, self.beta, self.adaptive)

    def _vec(self, a, size, what, s):
        a = np.asarray(a, dtype=np.float64).ravel()
        if size is not None and a.shape[0] != size:
            raise ValueError(f"sample {s}: the model's {what} has {a.shape[0]} entries; "
                             f"relaxed_labels has {size}")
        if not np.all(np.isfinite(a)):
            raise ValueError(f"sample {s}: the model's {what} is not finite")
        return a

    def _scores(self, s, w):
        return self._vec(self.model.relaxed_scores(self.X[s], w), self.c[s].shape[0],
                         "relaxed_scores", s)

    def _feature(self, s, z):
        f = np.asarray(self.model.relaxed_joint_feature(self.X[s], z), dtype=np.float64).ravel()
        if f.shape != self.w.shape:
            raise ValueError(f"sample {s}: relaxed_joint_feature returned {f.shape[0]} "
                             f"numbers; size_joint_feature is {self.w.shape[0]}")
        return f

    def _project(self, s, z):
        return self._vec(self.model.project(self.X[s], z), z.shape[0], "project", s)

    def _coupling_norm(self, n_iter):
        """``1.1 sqrt(lambda_max(1/n sum_i F_i F_i^T))`` by power iteration."""
        n = self.n_samples
        v = np.random.default_rng(0).standard_normal(self.w.shape[0])
        lam_max = 0.0
        for _ in range(max(n_iter, 1)):
            nv = float(np.linalg.norm(v))
            if nv == 0.0:
                break
            v /= nv
            Mv = np.zeros_like(v)
            for s in range(n):
                Mv += self._feature(s, self._scores(s, v))
            Mv /= n
            lam_max = float(v @ Mv)
            v = Mv
        return 1.1 * float(np.sqrt(max(lam_max, 0.0)))

    def _look_ahead(self, W, L):
        """The look-ahead at the dual point of ``(W, L)``: per sample ``theta_i =
        z_hat_i + L c_i + F_i^T W`` and ``v_i = project(theta_i)``, with ``sum_i F_i v_i``,
        ``sum_i c_i . v_i + c0_i`` and ``sum_i h*(theta_i)``."""
        thetas, vs = [], []
        G = np.zeros_like(self.w)
        ell = hs = 0.0
        for s in range(self.n_samples):
            theta = self.z_hat[s] + L * self.c[s] + self._scores(s, W)
            v = self._project(s, theta)
            thetas.append(theta)
            vs.append(v)
            G += self._feature(s, v)
            ell += float(self.c[s] @ v) + self.c0[s]
            hs += _moreau(theta, v)
        return thetas, vs, G, ell, hs

    def run_pass(self, order):
        """One iteration over all the samples (``order`` ignored; empty: nothing);
        returns the duality gap of the average it leaves."""
        if len(order) == 0:
            return 0.0
        n, lam, beta = self.n_samples, self.lam, self.beta
        L = self.lam_sum
        if self._pending is None:
            self._pending = self._look_ahead(self.Wsum, L)
        thetas, vs, Gv, _, hs_v = self._pending
        v_w = -(lam * self.Wsum + (self.Gsum - L * self.Phi) / n) / beta
        r = [self.c[s] + self._scores(s, v_w) for s in range(n)]
        step = self.step
        while True:
            self.n_trials += 1
            u_w = v_w - step / beta * (lam * v_w + (Gv - self.Phi) / n)
            Gu = np.zeros_like(self.w)
            ell_u = 0.0
            us = []
            for s in range(n):
                u = self._project(s, vs[s] + step * r[s])
                us.append(u)
                Gu += self._feature(s, u)
                ell_u += float(self.c[s] @ u) + self.c0[s]
            W_new = self.Wsum + step * u_w
            new = self._look_ahead(W_new, L + step)
            # the test: E = D*(theta_v + b, theta_v) - <b, u - v> over the blocks, b the
            # step's move of the dual point (module docstring); <b, v> cancels per sample
            bu = 0.0
            for s in range(n):
                b = new[0][s] - thetas[s]
                bu += float(b @ us[s])
            ez = (new[4] - hs_v - bu) / n
            g = lam * (v_w - u_w) + (Gv - Gu) / n
            ew = -0.5 * beta * float((u_w - v_w) @ (u_w - v_w)) + \
                0.5 * step * step / beta * float(g @ g)
            slack = 1e-12 * (abs(new[4]) + abs(hs_v)) / n
            if not self.adaptive or ew + ez <= slack or step <= self.eta:
                break
            step = max(step * self.SHRINK, self.eta)
        self.Wsum = W_new
        self.Gsum = self.Gsum + step * Gu
        self.ell_sum += step * ell_u
        self.lam_sum = L + step
        self._pending = new
        self._last = (Gu, ell_u)
        self.n_iter += 1
        if self.adaptive:
            first = self.n_trials == self.n_iter
            self.step = step * (2.0 * self.GROW if first else self.GROW)
        self._cache = None
        return self.objective()[2]

    def weights(self):
        return self.Wsum / self.lam_sum if self.lam_sum else np.zeros_like(self.w)

    def _dual(self, G, ell):
        wz = (self.Phi - G) / (self.lam * self.n_samples)
        return -0.5 * self.lam * float(wz @ wz) + ell / self.n_samples

    def duals(self):
        """As :meth:`Extragradient.duals`."""
        L = self.lam_sum
        if L == 0:
            return np.nan, np.nan, np.nan
        _, _, Gv, ell_v, _ = self._pending
        return (self._dual(self.Gsum / L, self.ell_sum / L), self._dual(*self._last),
                self._dual(Gv, ell_v))

    def objective(self):
        """As :meth:`Extragradient.objective`; the primal by one call of
        ``loss_augmented_inference`` per sample (cached until the next pass)."""
        if self.lam_sum == 0:
            return super().objective()
        if self._cache is None:
            primal, _ = self.primal()
            dual = max(self.duals())
            self._cache = (primal, dual, primal - dual)
        return self._cache


def _moreau(theta, z):
    """``h*(theta) = <theta, z> - ||z||^2 / 2`` at ``z = project(theta)``: the conjugate of
    the Euclidean prox-function restricted to the polytope."""
    return float(theta @ z) - 0.5 * float(z @ z)
