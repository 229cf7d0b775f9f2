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


class _Stopping:
    """The stopping tests of :func:`lbfgs` and :func:`owlqn`: the relative decrease over
    ``period`` iterations at most ``tol``, or ``||g|| / max(1, ||x||) <= epsilon``."""

    def __init__(self, tol, period, epsilon, f0):
        self.tol, self.period, self.epsilon = tol, max(int(period), 1), epsilon
        self.past = [f0]

    def __call__(self, f, gnorm, x):
        past = self.past
        past.append(f)
        if len(past) > self.period + 1:
            del past[0]
        if len(past) == self.period + 1:
            before = past[0]
            if (before - f) / max(abs(before), abs(f), 1.0) <= self.tol:
                return True
        if self.epsilon > 0:
            return gnorm / max(1.0, float(np.sqrt(x @ x))) <= self.epsilon
        return False

    def decrease(self):
        """The last relative decrease over ``period`` iterations (or as many as ran)."""
        before, f = self.past[0], self.past[-1]
        return (before - f) / max(abs(before), abs(f), 1.0)


def lbfgs(fun, x0, max_iter, tol, memory=6, callback=None, max_linesearch=20,
          overwrite_x0=False, history_dtype=np.float64, period=1, epsilon=0.0):
    """Minimise a smooth convex ``fun`` (returning value and gradient) by L-BFGS.

    What crfsuite runs (liblbfgs's defaults): ``memory`` correction pairs, a
    first step of length 1 along the steepest descent, then unit steps of the
    quasi-Newton direction, a line search for the Wolfe conditions (sufficient
    decrease 1e-4, curvature 0.9) by safeguarded quadratic interpolation and
    doubling, at most ``max_linesearch`` evaluations per iteration.  Stops
    after ``max_iter`` iterations, when the relative decrease ``(f_k - f_{k+1})
    / max(|f_k|, |f_{k+1}|, 1)`` is at most ``tol`` (scipy's ``ftol``), at a
    zero gradient, or when the line search fails (rounding at the optimum).
    With ``period > 1`` the decrease is that over the last ``period``
    iterations, ``(f_{k-period} - f_k) / max(|f_{k-period}|, |f_k|, 1)``
    (CRFsuite's ``period`` and ``delta``); with ``epsilon > 0`` it also stops
    when ``||g|| / max(1, ||x||) <= epsilon`` (CRFsuite's ``epsilon``).

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
    stop = _Stopping(tol, period, epsilon, f)
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
        f = f_new
        gnorm = float(np.sqrt(g @ g))
        if callback is not None:
            callback(f)
        if stop(f, gnorm, x):
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


@jit
def _pseudo_gradient(x, g, l1, pg):
    """The pseudo-gradient of ``f(x) + l1 ||x||_1`` (Andrew & Gao): the gradient where
    ``x_i != 0``, else the one-sided derivative that descends, or 0 at a kink both of
    whose sides ascend.  Returns its squared norm."""
    acc = 0.0
    for i in range(x.shape[0]):
        xi = x[i]
        gi = g[i]
        if xi > 0.0:
            p = gi + l1
        elif xi < 0.0:
            p = gi - l1
        elif gi + l1 < 0.0:
            p = gi + l1
        elif gi - l1 > 0.0:
            p = gi - l1
        else:
            p = 0.0
        pg[i] = p
        acc += p * p
    return acc


@jit
def _constrain(d, pg):
    """Zero the direction's components that do not descend along the pseudo-gradient
    (``d_i pg_i >= 0``); returns ``pg . d`` after."""
    acc = 0.0
    for i in range(d.shape[0]):
        if d[i] * pg[i] >= 0.0:
            d[i] = 0.0
        else:
            acc += d[i] * pg[i]
    return acc


@jit
def _orthant_step(x0, d, step, pg, x):
    """``x = x0 + step d`` projected onto the orthant of ``x0`` (for a zero ``x0_i``,
    the sign of ``-pg_i``): a component that would cross zero stays at 0.  Returns
    ``(||x||_1, pg . (x - x0))``."""
    l1n = 0.0
    dec = 0.0
    for i in range(x0.shape[0]):
        xi = x0[i]
        if xi != 0.0:
            sgn = 1.0 if xi > 0.0 else -1.0
        elif pg[i] < 0.0:
            sgn = 1.0
        elif pg[i] > 0.0:
            sgn = -1.0
        else:
            sgn = 0.0
        v = xi + step * d[i]
        if v * sgn <= 0.0:
            v = 0.0
        x[i] = v
        l1n += abs(v)
        dec += pg[i] * (v - xi)
    return l1n, dec


@jit
def _pair(x, x0, g_new, g, s, y):
    """``s = x - x0``, ``y = g_new - g`` (in the history's precision); returns ``s . y``
    and ``y . y`` of the stored values."""
    ys = 0.0
    yy = 0.0
    for i in range(x.shape[0]):
        s[i] = x[i] - x0[i]
        y[i] = g_new[i] - g[i]
        si = np.float64(s[i])
        yi = np.float64(y[i])
        ys += si * yi
        yy += yi * yi
    return ys, yy


def owlqn(fun, x0, max_iter, tol, l1=0.0, memory=6, callback=None, max_linesearch=20,
          overwrite_x0=False, history_dtype=np.float64, period=1, epsilon=0.0):
    """Minimise ``fun(x) + l1 ||x||_1`` (``fun`` smooth and convex, returning value and
    gradient) by orthant-wise limited-memory quasi-Newton (OWL-QN).

    Andrew & Gao, "Scalable Training of L1-Regularized Log-Linear Models" (ICML
    2007), the optimiser CRFsuite runs for L1 (``c1 > 0``).  Each iteration
    computes the pseudo-gradient of the whole objective, takes the L-BFGS
    direction of the smooth part's curvature pairs (the same two-loop recursion
    as :func:`lbfgs`) applied to it, zeroes the components that disagree in
    sign with the steepest pseudo-descent, and backtracks (halving the step,
    at most ``max_linesearch`` evaluations) along the path projected onto the
    current orthant until the objective decreases sufficiently (1e-4 times the
    pseudo-gradient's directional derivative).  A weight that would cross zero
    stops at exactly 0, which is what makes the solution sparse.

    Stops as :func:`lbfgs` does (``tol`` over ``period`` iterations,
    ``epsilon`` on the pseudo-gradient's norm), at a zero pseudo-gradient (the
    optimality conditions hold exactly), or when the line search fails.
    Returns ``(x, n_iter)``; ``callback(F)`` gets the whole objective after
    every iteration.  ``l1 = 0`` is plain L-BFGS with a backtracking line
    search.
    """
    x = np.asarray(x0, dtype=np.float64)
    if not (overwrite_x0 and x.flags.c_contiguous and x.flags.writeable) or x is not x0:
        x = np.array(x, dtype=np.float64, order="C")
    l1 = float(l1)
    n = x.shape[0]
    f, g = fun(x)
    F = f + l1 * float(np.abs(x).sum())
    g = np.array(g, dtype=np.float64)
    pg = np.empty(n)
    pgnorm = float(np.sqrt(_pseudo_gradient(x, g, l1, pg)))
    S = np.empty((memory, n), history_dtype)
    Y = np.empty((memory, n), history_dtype)
    rho = np.zeros(memory)
    alpha = np.zeros(memory)
    d = -pg
    x_new = np.empty(n)
    step = 1.0 / pgnorm if pgnorm > 0 else 1.0
    n_stored, head, n_iter = 0, 0, 0
    gamma = 1.0
    c1 = 1e-4
    stop = _Stopping(tol, period, epsilon, F)
    while n_iter < max_iter and pgnorm > 0:
        gd = _constrain(d, pg)
        if not gd < 0:
            # no descent left in the quasi-Newton direction: restart from steepest
            np.negative(pg, out=d)
            gd = -pgnorm * pgnorm
            n_stored = 0
            gamma = 1.0 / pgnorm
            step = 1.0 / pgnorm
        accepted = False
        for _ in range(max_linesearch):
            l1n, dec = _orthant_step(x, d, step, pg, x_new)
            f_new, g_new = fun(x_new)
            F_new = f_new + l1 * l1n
            if np.isfinite(F_new) and F_new <= F + c1 * dec:
                accepted = True
                break
            del g_new
            step *= 0.5
        if not accepted:
            break
        n_iter += 1
        ys, yy = _pair(x_new, x, g_new, g, S[head], Y[head])
        x, x_new = x_new, x
        g[:] = g_new
        del g_new
        F = F_new
        pgnorm = float(np.sqrt(_pseudo_gradient(x, g, l1, pg)))
        if callback is not None:
            callback(F)
        if stop(F, pgnorm, x):
            break
        if ys > 1e-16 * yy and yy > 0:
            rho[head] = 1.0 / ys
            gamma = ys / yy
            head = (head + 1) % memory
            n_stored = min(n_stored + 1, memory)
        else:
            n_stored = min(n_stored, memory - 1)
            if n_stored == 0:
                gamma = 1.0 / pgnorm if pgnorm > 0 else 1.0
        order = (head - 1 - np.arange(n_stored)) % memory
        _direction(S, Y, rho, order.astype(np.int64), gamma, pg, d, alpha)
        step = 1.0
    if x is not x0 and overwrite_x0 and x0.shape == x.shape and x0.flags.writeable \
            and x0.dtype == np.float64:
        x0[:] = x
        x = x0
    return x, n_iter


def pseudo_gradient(x, g, l1):
    """The pseudo-gradient of ``f + l1 ||x||_1`` at ``x`` given ``g``, the gradient of
    ``f`` there (see :func:`owlqn`); a new array."""
    x = np.ascontiguousarray(x, dtype=np.float64)
    pg = np.empty_like(x)
    _pseudo_gradient(x, np.ascontiguousarray(g, dtype=np.float64), float(l1), pg)
    return pg
