"""The cone of supermodular pairwise tables, and the Euclidean projection onto it.

A table ``P (K, K)`` is supermodular in the label order when every 2 x 2
block of neighbouring labels has ``P[a, b] + P[a+1, b+1] - P[a, b+1] -
P[a+1, b] >= 0``: its energy ``-P`` is submodular, so MAP is a minimum cut
(Franc's lecture "Structured Output SVM", section 8.B, states these linear
constraints on the pairwise weights).  The set is a polyhedral convex cone,
closed under sums and non-negative scaling.
"""

import numpy as np

from .._core._jit import jit

# Hildreth's sweeps stop when no dual variable moves by more than this
# fraction of the table's size
_TOL = 1e-15
_MAX_SWEEPS = 100_000


@jit
def project_supermodular(P, out, mu):
    """``out[f]``: the Euclidean projection of every table ``P[f]`` onto the cone.

    Hildreth's method (C. Hildreth, "A quadratic programming procedure",
    Naval Research Logistics Quarterly 1957): cyclic coordinate ascent on
    the dual of ``min ||T - P[f]||^2`` subject to the ``(K-1)^2`` half-spaces,
    one multiplier per constraint in ``mu`` ``(K-1, K-1)``.  It converges to
    the projection; with two labels (one constraint) one sweep is exact.
    ``out`` may be ``P`` itself.
    """
    EF, K = P.shape[0], P.shape[1]
    for f in range(EF):
        T = out[f]
        scale = 0.0
        for a in range(K):
            for b in range(K):
                T[a, b] = P[f, a, b]
                scale = max(scale, abs(T[a, b]))
        for a in range(K - 1):
            for b in range(K - 1):
                mu[a, b] = 0.0
        tol = _TOL * max(scale, 1.0)
        for _ in range(_MAX_SWEEPS):
            change = 0.0
            for a in range(K - 1):
                for b in range(K - 1):
                    g = T[a, b] + T[a + 1, b + 1] - T[a, b + 1] - T[a + 1, b]
                    # the constraint's normal has four entries of +-1: squared norm 4
                    delta = max(-mu[a, b], -0.25 * g)
                    if delta != 0.0:
                        mu[a, b] += delta
                        T[a, b] += delta
                        T[a + 1, b + 1] += delta
                        T[a, b + 1] -= delta
                        T[a + 1, b] -= delta
                        change = max(change, abs(delta))
            if change <= tol:
                break


def supermodular_violation(P):
    """The largest violation ``max(0, -(P[a, b] + P[a+1, b+1] - P[a, b+1] -
    P[a+1, b]))`` over the tables ``P (EF, K, K)``, and the table it is in."""
    P = np.asarray(P, dtype=np.float64)
    if P.shape[1] < 2 or P.shape[0] == 0:
        return 0.0, 0
    g = P[:, :-1, :-1] + P[:, 1:, 1:] - P[:, :-1, 1:] - P[:, 1:, :-1]
    worst = (-g).reshape(P.shape[0], -1).max(axis=1)
    f = int(np.argmax(worst))
    return max(float(worst[f]), 0.0), f


def project_tables(P):
    """A projected copy of the tables ``P (EF, K, K)``."""
    P = np.ascontiguousarray(P, dtype=np.float64)
    out = np.empty_like(P)
    K = P.shape[1]
    project_supermodular(P, out, np.zeros((max(K - 1, 0), max(K - 1, 0))))
    return out
