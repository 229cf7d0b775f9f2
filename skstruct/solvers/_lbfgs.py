"""L-BFGS: the one implementation of the package.

:func:`lbfgs` minimises a smooth function (the CRF log-likelihood of
:class:`skstruct.NonLocalCRF`, the surrogate likelihood of its energy);
:func:`two_loop` is its quasi-Newton direction from a list of correction pairs, for a
learner that runs its own line search on an objective that moves between steps (the
primal-dual learner of :class:`skstruct.ApproxStructuredPredictor`).  Both run the same
compiled two-loop recursion (Nocedal, "Updating Quasi-Newton Matrices with Limited
Storage", Mathematics of Computation 35 (1980)).
"""

import numpy as np

from .._core._jit import jit


@jit
def _direction(S, Y, rho, order, gamma, g, d, alpha):
    """``d = -H g`` by L-BFGS's two-loop recursion over the pairs ``order`` (newest
    first), each dot product fused with the previous update: two passes over
    every stored pair."""
    n = g.shape[0]
    L = order.shape[0]
    for i in range(n):
        d[i] = -g[i]
    if L == 0:
        for i in range(n):
            d[i] *= gamma
        return
    k = order[0]
    acc = 0.0
    for i in range(n):
        acc += S[k, i] * d[i]
    a = rho[k] * acc
    for q in range(L):
        k = order[q]
        alpha[k] = a
        if q + 1 < L:
            kn = order[q + 1]
            acc = 0.0
            for i in range(n):
                d[i] -= a * Y[k, i]
                acc += S[kn, i] * d[i]
            a = rho[kn] * acc
        else:
            acc = 0.0
            for i in range(n):
                d[i] = gamma * (d[i] - a * Y[k, i])
                acc += Y[k, i] * d[i]
    # acc is y_k . d for the oldest pair k = order[L - 1]
    for q in range(L - 1, -1, -1):
        k = order[q]
        c = alpha[k] - rho[k] * acc
        if q > 0:
            kn = order[q - 1]
            acc = 0.0
            for i in range(n):
                d[i] += c * S[k, i]
                acc += Y[kn, i] * d[i]
        else:
            for i in range(n):
                d[i] += c * S[k, i]


@jit
def _axpy(a, d, x):
    """``x += a * d`` in place."""
    for i in range(x.shape[0]):
        x[i] += a * d[i]


@jit
def _store_pair(step, d, g_new, g, s, y):
    """``s = step * d``, ``y = g_new - g`` (in the history's precision); returns
    ``s . y`` and ``y . y`` of the stored values."""
    ys = 0.0
    yy = 0.0
    for i in range(d.shape[0]):
        s[i] = step * d[i]
        y[i] = g_new[i] - g[i]
        si = np.float64(s[i])
        yi = np.float64(y[i])
        ys += si * yi
        yy += yi * yi
    return ys, yy


def lbfgs(fun, x0, max_iter, tol, memory=6, callback=None, max_linesearch=20,
          overwrite_x0=False, history_dtype=np.float64):
    """Minimise a smooth convex ``fun`` (returning value and gradient) by L-BFGS.

    What crfsuite runs (liblbfgs's defaults): ``memory`` correction pairs, a
    first step of length 1 along the steepest descent, then unit steps of the
    quasi-Newton direction, a line search for the Wolfe conditions (sufficient
    decrease 1e-4, curvature 0.9) by safeguarded quadratic interpolation and
    doubling, at most ``max_linesearch`` evaluations per iteration.  Stops
    after ``max_iter`` iterations, when the relative decrease ``(f_k - f_{k+1})
    / max(|f_k|, |f_{k+1}|, 1)`` is at most ``tol`` (scipy's ``ftol``), at a
    zero gradient, or when the line search fails (rounding at the optimum).

    Memory: the ``2 * memory`` vectors of the correction pairs, in
    ``history_dtype`` (float32 halves them; the pairs' products and the
    direction are still accumulated in float64, and the inverse-Hessian
    approximation stays consistent with the pairs as stored), and four float64
    vectors of ``x``'s size while ``fun`` runs: ``x`` (moved in place along
    the direction, so trial points need no copy), the gradient, the direction
    and ``fun``'s new gradient; one more for ``x0`` unless
    ``overwrite_x0``.  scipy's L-BFGS-B keeps ``2 * maxcor + 5`` float64
    vectors and runs its bound machinery, whose work per iteration rivals a
    CRF gradient on large problems.

    Returns ``(x, n_iter)``; ``callback(f)`` is called after every iteration.
    """
    x = np.asarray(x0, dtype=np.float64)
    if not (overwrite_x0 and x.flags.c_contiguous and x.flags.writeable) or x is not x0:
        x = np.array(x, dtype=np.float64, order="C")
    n = x.shape[0]
    f, g = fun(x)
    S = np.empty((memory, n), history_dtype)
    Y = np.empty((memory, n), history_dtype)
    rho = np.zeros(memory)
    alpha = np.zeros(memory)
    d = -g
    gnorm = float(np.sqrt(g @ g))
    step = 1.0 / gnorm if gnorm > 0 else 1.0
    n_stored, head, n_iter = 0, 0, 0
    gamma = 1.0
    c1, c2 = 1e-4, 0.9
    while n_iter < max_iter and gnorm > 0:
        gd = float(g @ d)
        if not gd < 0:
            # not a descent direction (rounding): restart from steepest descent
            np.negative(g, out=d)
            gd = -gnorm * gnorm
            n_stored = 0
        lo, hi, f_lo, gd_lo = 0.0, np.inf, f, gd
        ok = None
        at = 0.0            # x is the start point + at * d
        for _ in range(max_linesearch):
            _axpy(step - at, d, x)
            at = step
            f_new, g_new = fun(x)
            if not (np.isfinite(f_new) and f_new <= f + c1 * step * gd):
                hi, f_hi = step, f_new
                h = hi - lo
                den = 2.0 * (f_hi - f_lo - gd_lo * h) if np.isfinite(f_hi) else np.inf
                t = -gd_lo * h * h / den if den > 0 else 0.5 * h
                step = lo + min(max(t, 0.1 * h), 0.5 * h)
                del g_new
                continue
            gd_new = float(g_new @ d)
            ok = (step, f_new, g_new)
            if gd_new >= c2 * gd:
                break
            # still descending steeply: a longer step
            lo, f_lo, gd_lo = step, f_new, gd_new
            step = 2.0 * step if hi == np.inf else 0.5 * (lo + hi)
            del g_new
        if ok is None:
            _axpy(-at, d, x)
            break
        step, f_new, g_new = ok
        del ok
        if step != at:
            _axpy(step - at, d, x)
        n_iter += 1
        ys, yy = _store_pair(step, d, g_new, g, S[head], Y[head])
        g = g_new
        del g_new
        rel = (f - f_new) / max(abs(f), abs(f_new), 1.0)
        f = f_new
        gnorm = float(np.sqrt(g @ g))
        if callback is not None:
            callback(f)
        if rel <= tol:
            break
        if ys > 1e-16 * yy and yy > 0:
            rho[head] = 1.0 / ys
            gamma = ys / yy
            head = (head + 1) % memory
            n_stored = min(n_stored + 1, memory)
        else:
            # the slot of the oldest pair was overwritten by the rejected one
            n_stored = min(n_stored, memory - 1)
            if n_stored == 0:
                gamma = 1.0 / gnorm if gnorm > 0 else 1.0
        order = (head - 1 - np.arange(n_stored)) % memory
        _direction(S, Y, rho, order.astype(np.int64), gamma, g, d, alpha)
        step = 1.0
    return x, n_iter


def two_loop(pairs, g):
    """``-H g`` for the correction pairs ``pairs`` (a list of ``(s, y, rho)``, oldest
    first, ``rho = 1 / s . y``), the initial matrix scaled by ``s . y / y . y`` of the
    newest pair: the recursion :func:`lbfgs` runs."""
    L = len(pairs)
    n = g.shape[0]
    S = np.empty((L, n))
    Y = np.empty((L, n))
    rho = np.empty(L)
    for k, (s_, y_, r) in enumerate(pairs):
        S[k] = s_
        Y[k] = y_
        rho[k] = r
    s_, y_, _ = pairs[-1]
    gamma = float(s_ @ y_) / float(y_ @ y_)
    d = np.empty(n)
    _direction(S, Y, rho, np.arange(L - 1, -1, -1, dtype=np.int64), gamma,
               np.ascontiguousarray(g, dtype=np.float64), d, np.zeros(L))
    return d
