"""Online trainers of the chain CRF, as CRFsuite implements them: one compiled pass each.

Four algorithms learn the weights of a linear-chain CRF one sample at a time:

* ``"perceptron"``: the averaged structured perceptron (M. Collins, "Discriminative
  Training Methods for Hidden Markov Models: Theory and Experiments with Perceptron
  Algorithms", Proceedings of EMNLP 2002);
* ``"pa"``: the passive-aggressive updates PA, PA-I and PA-II (K. Crammer, O. Dekel,
  J. Keshet, S. Shalev-Shwartz and Y. Singer, "Online Passive-Aggressive Algorithms",
  Journal of Machine Learning Research 7, 2006), optionally averaged;
* ``"arow"``: adaptive regularisation of weight vectors with a diagonal covariance
  (A. Mejer and K. Crammer, "Confidence in Structured-Prediction using
  Confidence-Weighted Models", Proceedings of EMNLP 2010);
* ``"l2sgd"``: stochastic gradient descent on the L2-regularised log-likelihood with the
  step ``1 / (lambda (t0 + t))`` and ``t0`` calibrated on a sample of the data (L. Bottou,
  "Stochastic Gradient Descent Tricks", Neural Networks: Tricks of the Trade, Springer,
  2012), as in N. Okazaki, "CRFsuite: a fast implementation of Conditional Random Fields",
  2007.

The first three decode each sample with Viterbi at the current weights and, when the
labelling ``y*`` differs from the truth ``y`` at ``d > 0`` positions, step along
``delta = phi(x, y) - phi(x, y*)``: the node features of the positions that differ (at the
true label ``+x``, at the predicted one ``-x``) and the transitions (``+1`` / ``-1``).
Entries that occur on both sides cancel, so ``delta`` is gathered in a scratch vector with
the list of the entries it touched before it is used; an update costs the features of the
sample's wrong positions, nothing that grows with the model.

Weights are always in the full layout of :class:`~skstruct.solvers._crf.CRFObjective`
without ``pairs``: the node weights ``W`` (F, K) row by row, then the edge tables ``P``
(M, K, K).  An optional ``mask`` (F, K) bool restricts the node weights that are trained
(CRFsuite's default feature set: the attribute-label pairs seen in training, see
:func:`~skstruct.solvers._crf.seen_pairs`); the others are never updated.

The averaged variants return the average of the weights after every sample seen, across
epochs and calls, kept lazily: ``ws`` accumulates ``u * step`` at a step that follows ``u``
other samples, and the average after ``u`` samples is ``w - ws / u``.

``l2sgd`` minimises, per sample, ``loss_i(w) + lambda / 2 ||w||^2`` with ``lambda = 1 / (C
N)`` (``N`` the design's samples): ``w <- (1 - eta lambda) w - eta grad loss_i(w)``.  The
decay is kept as a scalar factor (``w = scale * v``), so a step costs the sample's features
and the transition tables.  Its objective is CRFsuite's, ``sum_i loss_i + lambda N / 2
||w||^2``, the CRF's objective divided by ``C``, with the losses summed as the pass meets
them.
"""

import numbers
from typing import NamedTuple

import numpy as np

from .._core._decoders import CHAIN
from .._core._jit import jit
from ..inference._chain import _fb_log, _viterbi_one
from ..inference._modes import EDGES_PER_TABLE
from ..models._design import column_indices
from ._crf import ChainArrays, _fb_rescaled

ONLINE_SOLVERS = ("perceptron", "pa", "arow", "l2sgd")

OPTION_DEFAULTS = {
    "perceptron": {"average": True},
    "pa": {"type": 1, "error_sensitive": True, "average": True},
    "arow": {"variance": 1.0, "gamma": 1.0},
    "l2sgd": {"calibration_eta": 0.1, "calibration_rate": 2.0, "calibration_samples": 1000,
              "calibration_candidates": 10, "calibration_max_trials": 20, "period": 10,
              "delta": 1e-6},
}

# algorithm codes of the margin kernel
_PERCEPTRON, _PA, _AROW = 0, 1, 2
_CODES = {"perceptron": _PERCEPTRON, "pa": _PA, "arow": _AROW}

# below this magnitude the decay factor of l2sgd is folded into the weights, before the
# division by it loses precision
_TINY_SCALE = 1e-9


def _is_bool(v):
    return isinstance(v, (bool, np.bool_))


def _is_int(v):
    return isinstance(v, numbers.Integral) and not _is_bool(v)


def _is_real(v):
    return isinstance(v, numbers.Real) and not _is_bool(v) and np.isfinite(v)


# option -> (test, what a valid value is)
_CHECKS = {
    "average": (_is_bool, "a bool"),
    "error_sensitive": (_is_bool, "a bool"),
    "type": (lambda v: _is_int(v) and v in (0, 1, 2), "0 (PA), 1 (PA-I) or 2 (PA-II)"),
    "variance": (lambda v: _is_real(v) and v > 0, "a real number > 0"),
    "gamma": (lambda v: _is_real(v) and v > 0, "a real number > 0"),
    "calibration_eta": (lambda v: _is_real(v) and v > 0, "a real number > 0"),
    "calibration_rate": (lambda v: _is_real(v) and v > 1, "a real number > 1"),
    "calibration_samples": (lambda v: _is_int(v) and v >= 1, "an int >= 1"),
    "calibration_candidates": (lambda v: _is_int(v) and v >= 1, "an int >= 1"),
    "calibration_max_trials": (lambda v: _is_int(v) and v >= 1, "an int >= 1"),
    "period": (lambda v: _is_int(v) and v >= 1, "an int >= 1"),
    "delta": (lambda v: _is_real(v) and v >= 0, "a real number >= 0"),
}


def _check_solver(solver):
    if solver not in ONLINE_SOLVERS:
        raise ValueError(f"unknown online solver {solver!r}; expected one of "
                         f"{', '.join(map(repr, ONLINE_SOLVERS))}")


def check_options(solver, options):
    """The options of ``solver`` with the defaults filled in.

    Parameters
    ----------
    solver : {"perceptron", "pa", "arow", "l2sgd"}
    options : dict or None
        Values of some of the keys of ``OPTION_DEFAULTS[solver]``.

    Returns
    -------
    dict
        Every option of the solver (a new dict).

    Raises
    ------
    ValueError
        For an unknown solver, an unknown key (naming it, the solver and the accepted
        keys) or a value out of range.
    """
    _check_solver(solver)
    defaults = OPTION_DEFAULTS[solver]
    out = dict(defaults)
    if options is None:
        return out
    if not isinstance(options, dict):
        raise ValueError(f"solver_options of solver {solver!r} must be a dict or None, got "
                         f"{type(options).__name__}")
    for key, value in options.items():
        if key not in defaults:
            raise ValueError(f"unknown option {key!r} of solver {solver!r}; accepted keys: "
                             f"{', '.join(map(repr, defaults))}")
        test, what = _CHECKS[key]
        if not test(value):
            raise ValueError(f"option {key!r} of solver {solver!r} must be {what}, got "
                             f"{value!r}")
        out[key] = value
    return out


def _averaging(solver, options):
    return solver in ("perceptron", "pa") and bool(options["average"])


class OnlineState(NamedTuple):
    """Everything an online trainer changes, in the full weight layout.

    Arrays not used by the solver are empty; scalars are 0-d float64 arrays the kernels
    update in place.
    """

    w: np.ndarray        # (n_weights,) the iterate (l2sgd: the weights are scale * w)
    ws: np.ndarray       # (n_weights,) or (0,): the lazy average's sum of u * step
    sigma: np.ndarray    # (n_weights,) or (0,): AROW's diagonal covariance
    t: np.ndarray        # samples seen, across epochs and calls
    t0: np.ndarray       # l2sgd's step offset (0: not calibrated)
    scale: np.ndarray    # l2sgd's decay factor


def init_state(solver, options, n_weights, w0=None):
    """A new state of ``n_weights`` weights (``w0``, copied, or zeros).

    Parameters
    ----------
    solver : str
    options : dict or None
        Checked by :func:`check_options`.
    n_weights : int
        ``F * K + M * K * K``.
    w0 : ndarray of shape (n_weights,), optional
        Initial weights (a warm start).

    Returns
    -------
    OnlineState
    """
    options = check_options(solver, options)
    n = int(n_weights)
    if w0 is None:
        w = np.zeros(n)
    else:
        w = np.array(w0, dtype=np.float64).ravel()
        if w.shape[0] != n:
            raise ValueError(f"w0 has {w.shape[0]} weights, the layout has {n}")
    ws = np.zeros(n if _averaging(solver, options) else 0)
    sigma = (np.full(n, float(options["variance"])) if solver == "arow" else np.zeros(0))
    return OnlineState(w=w, ws=ws, sigma=sigma, t=np.zeros(()), t0=np.zeros(()),
                       scale=np.ones(()))


def grow_layout(v, old_to_new, K_old, K_new, F, M, fill):
    """``v`` of layout (F, K_old) + (M, K_old, K_old) in layout (F, K_new) + (M, K_new,
    K_new), old class ``k`` at ``old_to_new[k]``, ``fill`` elsewhere."""
    W = np.full((F, K_new), fill)
    P = np.full((M, K_new, K_new), fill)
    W[:, old_to_new] = v[:F * K_old].reshape(F, K_old)
    P[:, old_to_new[:, None], old_to_new[None, :]] = v[F * K_old:].reshape(M, K_old, K_old)
    return np.concatenate([W.ravel(), P.ravel()])


def grow_state(state, solver, options, old_to_new, n_classes_new, n_features, n_tables):
    """The state re-indexed for more classes: old class ``k`` becomes ``old_to_new[k]``.

    The new classes' weights (and averaging sums) are 0 and their AROW variances
    ``options["variance"]``; the counters are kept.  ``n_features`` (F) and ``n_tables``
    (M) are those of both layouts.

    Returns
    -------
    OnlineState
        A new state in the layout (F, n_classes_new) + (M, n_classes_new, n_classes_new).
    """
    options = check_options(solver, options)
    o2n = np.asarray(old_to_new, dtype=np.int64).ravel()
    K_old, K_new, F, M = o2n.shape[0], int(n_classes_new), int(n_features), int(n_tables)
    n_old = F * K_old + M * K_old * K_old
    if state.w.shape[0] != n_old:
        raise ValueError(f"the state has {state.w.shape[0]} weights; {F} features, {M} "
                         f"tables and {K_old} classes make {n_old}")
    if (o2n.size and (o2n.min() < 0 or o2n.max() >= K_new)) or np.unique(o2n).size != K_old:
        raise ValueError(f"old_to_new must map the {K_old} old classes to distinct classes "
                         f"in [0, {K_new}); got {o2n.tolist()}")
    # the decay factor is folded into the weights so the new state starts at scale 1
    w = grow_layout(state.w * float(state.scale), o2n, K_old, K_new, F, M, 0.0)
    ws = (grow_layout(state.ws, o2n, K_old, K_new, F, M, 0.0) if state.ws.shape[0]
          else np.zeros(0))
    sigma = (grow_layout(state.sigma, o2n, K_old, K_new, F, M, float(options["variance"]))
             if state.sigma.shape[0] else np.zeros(0))
    return OnlineState(w=w, ws=ws, sigma=sigma, t=state.t.copy(), t0=state.t0.copy(),
                       scale=np.ones(()))


class EpochStats(NamedTuple):
    """What one pass reports."""

    loss: float      # the algorithm's loss summed over the pass's samples
    mistakes: int    # samples whose Viterbi labelling was wrong (0 for l2sgd)
    objective: float  # l2sgd: CRFsuite's objective after the pass; others: nan


# ---------------------------------------------------------------- kernels
@jit
def _node_scores(A, n0, T, w, scale, th):
    """``th[t, k] = scale * sum_f x_{n0+t, f} w[f K + k]`` for the chain's T nodes."""
    K = th.shape[1]
    for t in range(T):
        for k in range(K):
            th[t, k] = 0.0
        row = A.xrow[n0 + t]
        o = A.xoff[n0 + t]
        for p in range(A.xptr[row], A.xptr[row + 1]):
            xv = A.xdata[p]
            if xv == 0.0:
                continue
            b = (A.xind[p] + o) * K
            for k in range(K):
                th[t, k] += xv * w[b + k]
        if scale != 1.0:
            for k in range(K):
                th[t, k] *= scale


@jit
def _gather(idx, v, dacc, mark, touched, n):
    """``dacc[idx] += v``, recording ``idx`` in ``touched[:n]`` the first time."""
    if not mark[idx]:
        mark[idx] = True
        touched[n] = idx
        n += 1
    dacc[idx] += v
    return n


@jit
def _max_length(node_offsets, order):
    tmax = 1
    for i in range(order.shape[0]):
        s = order[i]
        tmax = max(tmax, node_offsets[s + 1] - node_offsets[s])
    return tmax


@jit
def margin_epoch(A, mask, has_mask, algo, average, C, pa_type, sensitive, gamma, order,
                 w, P, ws, sigma, t, stats):
    """One pass of the perceptron, PA or AROW over the samples ``order``, in place.

    ``w`` are the full-layout weights and ``P`` the view of their edge tables (M, K, K);
    ``ws`` the averaging sums (used when ``average``), ``sigma`` AROW's variances, ``t``
    (0-d) the samples seen.  ``stats`` receives the summed loss and the mistakes.
    """
    node_offsets, edge_offsets, pwi, y = A.node_offsets, A.edge_offsets, A.pw_index, A.y
    K = P.shape[1]
    M = P.shape[0]
    n_w = w.shape[0]
    nW = n_w - M * K * K
    tmax = _max_length(node_offsets, order)
    th = np.empty((tmax, K))
    bp = np.zeros((tmax, K), np.int64)
    lab = np.zeros(tmax, np.int64)
    dl = np.empty(K)
    best = np.empty(K)
    arg = np.empty(K)
    row = np.empty(K)
    no_y = np.zeros(0, np.int64)
    lw = np.ones(K)
    dacc = np.zeros(n_w)
    mark = np.zeros(n_w, np.bool_)
    touched = np.empty(n_w, np.int64)
    loss = 0.0
    mistakes = 0
    for i in range(order.shape[0]):
        s = order[i]
        n0 = node_offsets[s]
        T = node_offsets[s + 1] - n0
        e0 = edge_offsets[s]
        u = t[()]
        t[()] = u + 1.0
        if T == 0:
            continue
        _node_scores(A, n0, T, w, 1.0, th)
        s_star = _viterbi_one(th, no_y, lw, P, pwi, 0, e0, T, bp, lab, dl, best, arg, row)
        d = 0
        for j in range(T):
            if lab[j] != y[n0 + j]:
                d += 1
        if d == 0:
            continue
        mistakes += 1
        s_true = 0.0
        for j in range(T):
            s_true += th[j, y[n0 + j]]
        for j in range(T - 1):
            s_true += P[pwi[e0 + j], y[n0 + j], y[n0 + j + 1]]
        n = 0
        for j in range(T):
            a = y[n0 + j]
            b = lab[j]
            if a == b:
                continue
            r = A.xrow[n0 + j]
            o = A.xoff[n0 + j]
            for p in range(A.xptr[r], A.xptr[r + 1]):
                xv = A.xdata[p]
                if xv == 0.0:
                    continue
                f = A.xind[p] + o
                if not has_mask or mask[f, a]:
                    n = _gather(f * K + a, xv, dacc, mark, touched, n)
                if not has_mask or mask[f, b]:
                    n = _gather(f * K + b, -xv, dacc, mark, touched, n)
        for j in range(T - 1):
            a0 = y[n0 + j]
            a1 = y[n0 + j + 1]
            b0 = lab[j]
            b1 = lab[j + 1]
            if a0 == b0 and a1 == b1:
                continue
            base = nW + pwi[e0 + j] * K * K
            n = _gather(base + a0 * K + a1, 1.0, dacc, mark, touched, n)
            n = _gather(base + b0 * K + b1, -1.0, dacc, mark, touched, n)
        sq = 0.0
        for q in range(n):
            sq += dacc[touched[q]] ** 2
        margin = s_star - s_true
        if algo == 2:  # AROW
            cost = margin + d
            loss += cost
            v = 0.0
            for q in range(n):
                k = touched[q]
                v += sigma[k] * dacc[k] ** 2
            beta = 1.0 / (v + gamma)
            alpha = max(0.0, cost) * beta
            for q in range(n):
                k = touched[q]
                dk = dacc[k]
                sk = sigma[k]
                w[k] += alpha * sk * dk
                sigma[k] = sk - beta * sk * sk * dk * dk
        else:
            if algo == 0:  # perceptron
                tau = 1.0
                loss += d
            else:  # PA
                cost = margin + (np.sqrt(d) if sensitive else 1.0)
                loss += cost
                tau = 0.0
                if sq > 0.0:
                    if pa_type == 0:
                        tau = cost / sq
                    elif pa_type == 1:
                        tau = min(C, cost / sq)
                    else:
                        tau = cost / (sq + 0.5 / C)
            if tau != 0.0:
                for q in range(n):
                    k = touched[q]
                    step = tau * dacc[k]
                    w[k] += step
                    if average:
                        ws[k] += u * step
        for q in range(n):
            k = touched[q]
            dacc[k] = 0.0
            mark[k] = False
    stats[0] = loss
    stats[1] = mistakes


@jit
def _exp_tables_into(Pv, scale, Pt, epair, pmax):
    """``Pt = scale * Pv`` and its exponentiated tables (as :func:`exp_tables`)."""
    M, K = Pv.shape[0], Pv.shape[1]
    for m in range(M):
        mx = -np.inf
        for i in range(K):
            for j in range(K):
                x = scale * Pv[m, i, j]
                Pt[m, i, j] = x
                if x > mx:
                    mx = x
        pmax[m] = mx if mx > -np.inf else 0.0
        for i in range(K):
            for j in range(K):
                epair[m, i, j] = np.exp(Pt[m, i, j] - pmax[m])


@jit
def sgd_epoch(A, mask, has_mask, lam, n_norm, order, v, Pv, t, t0, scale, stats):
    """One pass of L2-regularised SGD over the samples ``order``, in place.

    The weights are ``scale * v`` (``Pv`` the view of ``v``'s edge tables); the step at
    the ``t``-th sample seen is ``eta = 1 / (lam (t0 + t))``.  On return the decay is
    folded into ``v`` (``scale`` 1), ``stats[0]`` holds the summed negative
    log-likelihoods met during the pass and ``stats[1]`` CRFsuite's objective, that sum
    plus ``lam n_norm / 2 ||v||^2``.
    """
    node_offsets, edge_offsets, pwi, y = A.node_offsets, A.edge_offsets, A.pw_index, A.y
    M = Pv.shape[0]
    K = Pv.shape[1]
    nW = v.shape[0] - M * K * K
    tmax = _max_length(node_offsets, order)
    th = np.empty((tmax, K))
    eu = np.empty((tmax, K))
    al = np.empty((tmax, K))
    sc = np.empty(tmax)
    beta = np.empty(K)
    nb = np.empty(K)
    tmp = np.empty(K)
    r = np.empty(K)
    xi = np.empty((K, K))
    stage4 = np.zeros((1, M, K, K))
    stage = stage4[0]
    Pt = np.empty((M, K, K))
    epair = np.empty((M, K, K))
    pmax = np.empty(M)
    loss = 0.0
    for i in range(order.shape[0]):
        s = order[i]
        n0 = node_offsets[s]
        T = node_offsets[s + 1] - n0
        e0 = edge_offsets[s]
        eta = 1.0 / (lam * (t0[()] + t[()]))
        t[()] += 1.0
        cur = scale[()]
        li = 0.0
        if T > 0:
            _node_scores(A, n0, T, v, cur, th)
            _exp_tables_into(Pv, cur, Pt, epair, pmax)
            score = 0.0
            for j in range(T):
                score += th[j, y[n0 + j]]
            for j in range(T - 1):
                score += Pt[pwi[e0 + j], y[n0 + j], y[n0 + j + 1]]
            stage[:] = 0.0
            logz = _fb_rescaled(th, epair, pmax, pwi, e0, T, eu, al, sc, beta, nb, tmp, stage)
            if np.isnan(logz):
                stage[:] = 0.0
                logz = _fb_log(th, Pt, pwi, 0, e0, T, al, EDGES_PER_TABLE, stage4, 0, beta,
                               nb, tmp, xi)
            li = logz - score
            if not np.isfinite(li):
                # a forbidden true labelling: no gradient to follow
                loss = np.inf
                continue
            loss += li
        new = cur * (1.0 - eta * lam)
        if abs(new) < _TINY_SCALE:
            for k in range(v.shape[0]):
                v[k] *= new
            new = 1.0
        scale[()] = new
        if T == 0:
            continue
        g = eta / new
        for j in range(T):
            for k in range(K):
                r[k] = al[j, k]
            r[y[n0 + j]] -= 1.0
            row = A.xrow[n0 + j]
            o = A.xoff[n0 + j]
            for p in range(A.xptr[row], A.xptr[row + 1]):
                xv = A.xdata[p]
                if xv == 0.0:
                    continue
                f = A.xind[p] + o
                b = f * K
                gx = g * xv
                for k in range(K):
                    if has_mask and not mask[f, k]:
                        continue
                    v[b + k] -= gx * r[k]
        for m in range(M):
            for a in range(K):
                for b in range(K):
                    if stage[m, a, b] != 0.0:
                        v[nW + (m * K + a) * K + b] -= g * stage[m, a, b]
        for j in range(T - 1):
            v[nW + (pwi[e0 + j] * K + y[n0 + j]) * K + y[n0 + j + 1]] += g
    cur = scale[()]
    norm2 = 0.0
    for k in range(v.shape[0]):
        v[k] *= cur
        norm2 += v[k] * v[k]
    scale[()] = 1.0
    stats[0] = loss
    stats[1] = loss + 0.5 * lam * n_norm * norm2


# ---------------------------------------------------------------- the trainer
def l2sgd_converged(objectives, period, delta):
    """CRFsuite's stopping test of ``l2sgd`` after the last of ``objectives`` (one per
    epoch): the relative improvement over the last ``period`` epochs is below
    ``delta`` (never before ``period + 1`` epochs)."""
    if len(objectives) <= period:
        return False
    now = float(objectives[-1])
    if now == 0.0:
        # a perfect fit: nothing left to improve
        return True
    return bool((float(objectives[-1 - period]) - now) / now < delta)


class OnlineCRF:
    """The online trainers of a chain CRF's full-layout weights.

    Parameters
    ----------
    design : Design
        Chains only, with known labels, tied edge tables and classes mapped one to one
        onto weight columns.
    solver : {"perceptron", "pa", "arow", "l2sgd"}
    C : float
        PA-I / PA-II's aggressiveness; l2sgd's ``lambda = 1 / (C N)``.  Not read by the
        perceptron and AROW.
    options : dict or None
        See :data:`OPTION_DEFAULTS`.
    mask : ndarray of shape (F, K) of bool, optional
        The node weights that are trained; the others are never updated.
    """

    def __init__(self, design, solver, *, C, options, mask=None):
        self.solver = solver
        self.options = check_options(solver, options)
        if not (_is_real(C) and C > 0):
            raise ValueError(f"C must be a real number > 0, got {C!r}")
        self.C = float(C)
        kind = np.asarray(design.kind)
        bad = np.flatnonzero(kind != CHAIN)
        if bad.size:
            raise ValueError(f"sample {bad[0]} is not a chain: the online CRF trainers "
                             "learn on chains only")
        K = int(design.n_classes)
        if (design.n_columns != K or not np.array_equal(design.cmap, np.arange(K))
                or not np.all(np.asarray(design.csign) == 1)):
            raise ValueError("the online CRF trainers need each class scored by its own "
                             "weight column (identity class-to-column map)")
        if (not design.tied or design.symmetric or design.node_offset is not None
                or design.lgroup is not None):
            raise ValueError("the online CRF trainers need tied edge tables, directed "
                             "edges and no fixed node potentials")
        b = design.batch
        y = np.asarray(design.y, np.int64)
        unknown = np.flatnonzero(y < 0)
        if unknown.size:
            s = int(np.searchsorted(b.node_offsets, unknown[0], side="right") - 1)
            raise ValueError(f"sample {s} has an unknown label: the online CRF trainers "
                             "need every label")
        F, M = int(design.n_features_total), int(design.n_edge_features)
        self.K, self.F, self.M = K, F, M
        self.n_samples = int(b.n_samples)
        self.n_weights = F * K + M * K * K
        if mask is None:
            self.mask, self.has_mask = np.zeros((1, 1), np.bool_), False
        else:
            mask = np.asarray(mask)
            if mask.shape != (F, K) or mask.dtype != np.bool_:
                raise ValueError(f"mask must be a bool array of shape ({F}, {K}), got "
                                 f"{mask.dtype} of shape {mask.shape}")
            self.mask, self.has_mask = np.ascontiguousarray(mask), True
        X = design.features
        dummy = np.zeros(1, np.int64)
        self.arrays = ChainArrays(
            node_offsets=b.node_offsets, edge_offsets=b.edge_offsets,
            xdata=X.data.astype(np.float64, copy=False), xind=column_indices(X),
            xptr=X.indptr.astype(np.int64, copy=False), xrow=design.xrow, xoff=design.xoff,
            wptr=dummy, wlab=dummy, compact=False,
            pw_index=design.edge_features.indices.astype(np.int64), y=y)
        self.lam = 1.0 / (self.C * self.n_samples) if self.n_samples else np.inf
        self.calibration_trials = []

    # ------------------------------------------------------------ helpers
    def _check_state(self, state):
        if state.w.shape[0] != self.n_weights:
            raise ValueError(f"the state has {state.w.shape[0]} weights; this design's "
                             f"layout has {self.n_weights}")

    def _order(self, order):
        order = np.ascontiguousarray(order, dtype=np.int64).ravel()
        if order.size and (order.min() < 0 or order.max() >= self.n_samples):
            raise ValueError(f"order must hold sample indices in [0, {self.n_samples})")
        return order

    def _tables(self, w):
        return w[self.F * self.K:].reshape(self.M, self.K, self.K)

    def _sgd(self, state, order, n_norm):
        stats = np.zeros(2)
        sgd_epoch(self.arrays, self.mask, self.has_mask, self.lam, float(n_norm), order,
                  state.w, self._tables(state.w), state.t, state.t0, state.scale, stats)
        return stats

    # ------------------------------------------------------------ interface
    def calibrate(self, state, rng):
        """Set ``state.t0`` by CRFsuite's calibration (``l2sgd`` only; a no-op otherwise).

        Candidate rates ``eta`` are tried, each by one epoch from zero weights with ``t0 =
        1 / (lambda eta)`` over the first ``calibration_samples`` samples of a permutation
        drawn from ``rng``: ``eta`` grows by ``calibration_rate`` from
        ``calibration_eta`` while the objective on those samples stays below its value at
        zero weights (up to ``calibration_candidates`` such rates), then shrinks from
        ``calibration_eta / calibration_rate``, at most ``calibration_max_trials`` trials
        in all.  The rate of the lowest objective sets ``t0 = 1 / (lambda eta)``.

        Returns
        -------
        float
            The chosen ``eta``; every trial's ``(eta, objective)`` is in
            ``self.calibration_trials``.
        """
        self.calibration_trials = []
        if self.solver != "l2sgd":
            return None
        self._check_state(state)
        opt = self.options
        S = min(int(opt["calibration_samples"]), self.n_samples)
        order = np.ascontiguousarray(rng.permutation(self.n_samples)[:S], dtype=np.int64)
        # at zero weights every labelling of a chain is equally likely: the loss of a
        # sample of T nodes is T log K
        lengths = np.diff(self.arrays.node_offsets)[order]
        init_loss = float(lengths.sum()) * np.log(self.K)
        eta0 = float(opt["calibration_eta"])
        rate = float(opt["calibration_rate"])
        eta, best_eta, best_loss = eta0, eta0, np.inf
        candidates = int(opt["calibration_candidates"])
        decreasing = False
        trials = 0
        while candidates > 0 or not decreasing:
            trial = init_state("l2sgd", opt, self.n_weights)
            trial.t0[()] = 1.0 / (self.lam * eta)
            loss = float(self._sgd(trial, order, S)[1])
            self.calibration_trials.append((eta, loss))
            ok = np.isfinite(loss) and loss < init_loss
            if ok:
                candidates -= 1
            if np.isfinite(loss) and loss < best_loss:
                best_loss, best_eta = loss, eta
            if not decreasing:
                if ok and candidates > 0:
                    eta *= rate
                else:
                    decreasing = True
                    candidates = int(opt["calibration_candidates"])
                    eta = eta0 / rate
            else:
                eta /= rate
            trials += 1
            if trials >= int(opt["calibration_max_trials"]):
                break
        state.t0[()] = 1.0 / (self.lam * best_eta)
        return best_eta

    def epoch(self, state, order):
        """One pass over the samples ``order`` (int64 indices), updating ``state`` in place.

        Returns
        -------
        EpochStats
            ``loss``: the perceptron's wrong positions, PA's and AROW's costs (margin
            violation plus the error term) of the wrong samples, or l2sgd's negative
            log-likelihoods, summed over the pass; ``mistakes``: samples decoded wrongly;
            ``objective``: l2sgd's CRFsuite objective after the pass, else nan.
        """
        self._check_state(state)
        order = self._order(order)
        if self.solver == "l2sgd":
            if not float(state.t0) > 0.0:
                raise ValueError("l2sgd needs its step offset t0: call calibrate(state, rng) "
                                 "or set state.t0 first")
            stats = self._sgd(state, order, self.n_samples)
            return EpochStats(loss=float(stats[0]), mistakes=0, objective=float(stats[1]))
        opt = self.options
        stats = np.zeros(2)
        margin_epoch(self.arrays, self.mask, self.has_mask, _CODES[self.solver],
                     _averaging(self.solver, opt), self.C,
                     int(opt.get("type", 1)), bool(opt.get("error_sensitive", True)),
                     float(opt.get("gamma", 1.0)), order, state.w, self._tables(state.w),
                     state.ws, state.sigma, state.t, stats)
        return EpochStats(loss=float(stats[0]), mistakes=int(stats[1]), objective=np.nan)

    def weights(self, state):
        """The flat full-layout weights the model predicts with (a new array): the
        average where averaging applies, the decay applied for l2sgd."""
        self._check_state(state)
        if state.ws.shape[0] and float(state.t) > 0.0:
            return state.w - state.ws / float(state.t)
        return state.w * float(state.scale)
