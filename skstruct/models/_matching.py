"""Bipartite matching (alignment) as a structured model, with its saddle-point interface."""

import numpy as np
from scipy.optimize import linear_sum_assignment
from sklearn.utils.validation import check_is_fitted

from .._core._packing import MAX_FEATURE, check_sequence
from .._core._validation import check_vector
from ._base import StructuredModel

# tolerance of the projection's row sums (its other KKT conditions hold by construction);
# raised to the rounding level of the point's magnitude when that is larger
_PROJECT_TOL = 1e-10
_PROJECT_MAX_ITER = 500


class MatchingModel(StructuredModel):
    """Bipartite matching: align every left item with a distinct right item.

    The structured model of word alignment and other assignment problems, as
    learned by Taskar, Lacoste-Julien & Jordan [1]_.  A sample has ``n_left``
    left and ``n_right >= n_left`` right items; every left item is matched to
    one right item, and no right item to two left items.  Each candidate edge
    ``(i, j)`` is described by a feature vector, and a matching scores the sum
    of ``w . x[i, j]`` over its edges.

    * A sample ``x`` is a float array of shape ``(n_left, n_right,
      n_features)``, the features of every candidate edge, ``1 <= n_left <=
      n_right``.  The item counts may differ between samples, ``n_features``
      may not.
    * A label ``y`` is an int array of shape ``(n_left,)``: ``y[i]`` is the
      right item matched to left item ``i``; its entries are distinct.

    ``X`` and ``y`` given to an estimator's ``fit`` are lists of such
    samples; ``predict`` returns a list of ``y`` arrays, and ``score`` (the
    Hamming accuracy of the estimators) is then the fraction of left items
    matched to their true right item.

    The joint feature map is ``phi(x, y) = sum_i x[i, y[i]]``
    (``size_joint_feature = n_features``).  Inference is exact: the
    maximum-score matching, an assignment problem solved by
    :func:`scipy.optimize.linear_sum_assignment` (the matching polytope is
    integral).

    The loss is the Hamming (L1) distance between the 0/1 assignment matrices
    of ``y`` and ``y_hat``, that is **twice** the number of left items
    matched differently (an item matched elsewhere removes one edge and adds
    another).  Writing ``Y`` for the assignment matrix of ``y`` and ``c = 1 -
    2 Y``, ``loss(y, y') = n_left + sum_ij c_ij Y'_ij`` for every matching
    ``y'``, so loss-augmented inference is the same assignment problem on
    ``x @ w + c``, exact too.

    Besides the model protocol, the model gives the relaxed (saddle-point)
    interface of the dual extragradient method, in which a labelling is a
    point ``z`` of the matching polytope ``{Z >= 0, every row of Z sums to 1,
    every column to at most 1}``, ``Z`` of shape ``(n_left, n_right)``
    flattened row-major: :meth:`relaxed_labels`, :meth:`relaxed_scores`,
    :meth:`relaxed_joint_feature`, :meth:`relaxed_loss` and the Euclidean
    projection :meth:`project`.

    The model has no parameters.  Train it with any learner of the model
    protocol, e.g. ``StructuredSVM(model=MatchingModel(), C=1.0).fit(X, y)``
    or ``StructuredPerceptron(model=MatchingModel()).fit(X,
    y)``; then ``predict(X_test)`` gives a list of matchings.
    :func:`skstruct.datasets.make_letter_alignment` makes a real alignment
    task in this format.

    Attributes
    ----------
    n_features_ : int
        Edge features per candidate edge, seen in ``fit``.
    size_joint_feature : int
        The length of ``joint_feature``'s vector: ``n_features_``.

    Notes
    -----
    Every method validates what it receives and raises a ``ValueError``
    naming the problem; at ``fit``, naming the sample by its index in ``X``.

    References
    ----------
    .. [1] B. Taskar, S. Lacoste-Julien and M. I. Jordan, "Structured
       Prediction, Dual Extragradient and Bregman Projections", Journal of
       Machine Learning Research 7, pp. 1627-1653, 2006.
    """

    # ------------------------------------------------------------- fitting
    def initialize(self, X, y):
        """Check the training data and learn the number of edge features."""
        check_sequence(X, "X")
        check_sequence(y, "y")
        if len(X) != len(y):
            raise ValueError(f"X has {len(X)} samples but y has {len(y)}")
        if len(X) == 0:
            raise ValueError("X holds no samples")
        n_features = None
        for i in range(len(X)):
            x = _check_x(X[i], n_features, f"sample {i}: ", "sample 0")
            n_features = x.shape[2]
            _check_y(y[i], x.shape[0], x.shape[1], f"sample {i}: ")
        self.n_features_ = int(n_features)

    @property
    def size_joint_feature(self):
        self._check_fitted()
        return self.n_features_

    def _check_fitted(self):
        check_is_fitted(self, "n_features_")

    def _x(self, x):
        self._check_fitted()
        return _check_x(x, self.n_features_, "", "the data seen in fit")

    def _w(self, w):
        return check_vector(w, self.n_features_, "w")

    def _scores(self, x, w):
        scores = x @ self._w(w)
        if not np.all(np.isfinite(scores)):
            raise ValueError("the edge scores x @ w overflow (inf or NaN): scale the features "
                             "or the weights")
        return scores

    # ------------------------------------------------------------ protocol
    def joint_feature(self, x, y):
        """``phi(x, y) = sum_i x[i, y[i]]``, of shape ``(n_features,)``."""
        x = self._x(x)
        y = _check_y(y, x.shape[0], x.shape[1], "")
        return x[np.arange(x.shape[0]), y].sum(axis=0)

    def inference(self, x, w):
        """The maximum-score matching under weights ``w``: ``y`` of shape ``(n_left,)``."""
        x = self._x(x)
        return _assign(self._scores(x, w))

    def loss_augmented_inference(self, x, y, w):
        """``argmax_y' loss(y, y') + w . phi(x, y')``, exactly (an assignment problem)."""
        x = self._x(x)
        y = _check_y(y, x.shape[0], x.shape[1], "")
        scores = self._scores(x, w) + 1.0
        scores[np.arange(y.shape[0]), y] -= 2.0
        return _assign(scores)

    def loss(self, y, y_hat):
        """Hamming distance of the assignment matrices: 2 x the left items matched differently."""
        y = _check_labels(y, "y: ")
        y_hat = _check_labels(y_hat, "y_hat: ")
        if y.shape != y_hat.shape:
            raise ValueError(f"y matches {y.shape[0]} left items but y_hat matches "
                             f"{y_hat.shape[0]}")
        return 2.0 * float(np.count_nonzero(y != y_hat))

    # ---------------------------------------- relaxed (saddle-point) interface
    def relaxed_labels(self, x, y):
        """The 0/1 assignment matrix of ``y``, flattened: a vertex ``z`` of the polytope."""
        x = self._x(x)
        n_left, n_right = x.shape[:2]
        y = _check_y(y, n_left, n_right, "")
        z = np.zeros((n_left, n_right))
        z[np.arange(n_left), y] = 1.0
        return z.ravel()

    def relaxed_joint_feature(self, x, z):
        """``sum_ij Z_ij x[i, j]``: linear in ``z``, ``joint_feature`` at the vertices."""
        x = self._x(x)
        z = _check_z(z, x.shape[0] * x.shape[1])
        return z @ x.reshape(-1, x.shape[2])

    def relaxed_scores(self, x, w):
        """The score of every edge, ``(x @ w).ravel()``: ``z @ relaxed_scores(x, w)`` is
        ``w . relaxed_joint_feature(x, z)``."""
        x = self._x(x)
        return self._scores(x, w).ravel()

    def relaxed_loss(self, x, y):
        """``(c, c0)`` with ``loss(y, y') = c0 + c @ z(y')`` at every vertex ``z(y')``:
        ``c = (1 - 2 Y).ravel()``, ``c0 = n_left``."""
        x = self._x(x)
        z = self.relaxed_labels(x, y)
        return 1.0 - 2.0 * z, float(x.shape[0])

    def project(self, x, z):
        """Euclidean projection of any vector ``z`` onto the matching polytope of ``x``.

        The polytope is ``{Z >= 0, rows of Z sum to 1, columns to at most 1}``
        (``Z = z.reshape(n_left, n_right)``).  Solved on the dual (a free
        multiplier per row, a non-negative one per column, the latter
        minimised out in closed form by sorting) by a semismooth Newton
        method with line search, to KKT conditions satisfied within ``1e-10``
        (every row sums to 1, every column to at most 1, exactly 1 where its
        multiplier is positive) for ``|z|`` up to about ``1e4``; beyond, within
        about ``1e-12 max|z|``, the rounding of numbers that large.  A point of
        the polytope is returned unchanged.

        Returns
        -------
        z_proj : ndarray of shape (n_left * n_right,)
        """
        x = self._x(x)
        n_left, n_right = x.shape[:2]
        z = _check_z(z, n_left * n_right)
        return project_matching(z.reshape(n_left, n_right)).ravel()


# ----------------------------------------------------------------- helpers
def _assign(scores):
    rows, cols = linear_sum_assignment(scores, maximize=True)
    y = np.empty(scores.shape[0], np.int64)
    y[rows] = cols
    return y


def _check_x(x, n_features, where, ref):
    """``x`` as a float64 array ``(n_left, n_right, n_features)``, or a ValueError that
    starts with ``where`` (``"sample 3: "``)."""
    try:
        raw = x if isinstance(x, np.ndarray) else np.asarray(x)
        complex_ = raw.dtype.kind == "c"
        if not complex_:
            x = np.asarray(raw, dtype=np.float64)
    except (TypeError, ValueError) as exc:
        raise ValueError(f"{where}edge features must be numeric ({exc})") from None
    if complex_:
        raise ValueError(f"{where}edge features are complex numbers; give real features")
    if x.ndim != 3:
        raise ValueError(f"{where}edge features must be 3-D (n_left, n_right, n_features), "
                         f"got shape {x.shape}")
    n_left, n_right, F = x.shape
    if n_left == 0 or n_right == 0:
        raise ValueError(f"{where}edge features of shape {x.shape}: a matching needs at least "
                         "one left and one right item")
    if n_left > n_right:
        raise ValueError(f"{where}{n_left} left items but only {n_right} right items: every "
                         "left item must be matched to a distinct right item (n_left <= "
                         "n_right)")
    if n_features is None and F == 0:
        raise ValueError(f"{where}edge features of shape {x.shape} have no features")
    if n_features is not None and F != n_features:
        raise ValueError(f"{where}{F} edge features but {ref} has {n_features}")
    if not np.all(np.isfinite(x)):
        raise ValueError(f"{where}edge features contain NaN or infinite values")
    top = float(np.abs(x).max())
    if top > MAX_FEATURE:
        raise ValueError(f"{where}edge features reach {top:.3g}; values above "
                         f"{MAX_FEATURE:g} overflow the scores: scale them")
    return x


def _check_labels(y, where):
    """``y`` as a 1-D int64 array, or a ValueError starting with ``where``."""
    a = np.asarray(y)
    if a.ndim != 1:
        raise ValueError(f"{where}a matching must be a 1-D array (the right item of each left "
                         f"item), got shape {a.shape}")
    integral = a.dtype.kind in "iu" or (
        a.dtype.kind == "f" and np.all(np.isfinite(a)) and np.all(np.mod(a, 1) == 0))
    if not integral:
        raise ValueError(f"{where}a matching must hold integer right-item indices, got dtype "
                         f"{a.dtype}" + (" with non-integral values" if a.dtype.kind == "f"
                                         else ""))
    return a


def _check_y(y, n_left, n_right, where):
    """``y`` as a valid matching of ``n_left`` into ``n_right`` items, or a ValueError."""
    a = _check_labels(y, where)
    if a.shape[0] != n_left:
        raise ValueError(f"{where}{a.shape[0]} labels for {n_left} left items")
    out = np.flatnonzero((a < 0) | (a >= n_right))
    if out.size:
        k = int(out[0])
        raise ValueError(f"{where}y[{k}] = {a[k]} is out of range for {n_right} right items "
                         f"(0..{n_right - 1})")
    a = a.astype(np.int64)
    order = np.argsort(a, kind="stable")
    dup = np.flatnonzero(a[order[1:]] == a[order[:-1]])
    if dup.size:
        first, second = sorted((int(order[dup[0]]), int(order[dup[0] + 1])))
        raise ValueError(f"{where}right item {a[first]} is matched to left items {first} and "
                         f"{second}; a matching uses each right item at most once")
    return a


def _check_z(z, size):
    return check_vector(z, size, "z", " (n_left * n_right)")


def _thresholds(U):
    """``tau`` per row of ``U`` (k, n) with ``sum_j max(U_j - tau, 0) = 1`` (the
    threshold of the Euclidean projection of the row onto the probability simplex)."""
    S = np.sort(U, axis=1)[:, ::-1]
    css = S.cumsum(axis=1)
    css -= 1.0
    # the condition holds on a prefix of the sorted row, its first entry at least
    rho = (S * np.arange(1.0, U.shape[1] + 1.0) > css).sum(axis=1)
    return css[np.arange(U.shape[0]), rho - 1] / rho


def _dual(V, alpha):
    """The dual at row multipliers ``alpha``, the column multipliers minimised out.

    Returns ``(phi, Z, beta, g)``: the value of the reduced dual ``phi(alpha) =
    1/2 sum_ij max(V_ij + alpha_i - beta_j, 0)^2 - sum_i alpha_i + sum_j beta_j``
    at its best ``beta >= 0`` (every column sums to at most 1, to exactly 1 where
    ``beta_j > 0``), ``Z`` the primal point, ``beta``, and the gradient
    ``g = Z 1 - 1``.
    """
    U = V + alpha[:, None]
    beta = np.maximum(_thresholds(U.T), 0.0)
    Z = np.maximum(U - beta[None, :], 0.0)
    phi = 0.5 * float(np.sum(Z * Z)) - float(alpha.sum()) + float(beta.sum())
    return phi, Z, beta, Z.sum(axis=1) - 1.0


def _assignment_alpha(V):
    """Row multipliers that make the best assignment ``sigma`` of ``V`` the projection
    when it is one (large ``V``): ``Z_i,sigma(i) = V + alpha_i - beta_sigma(i) = 1``
    and every other entry <= 0, the column multipliers ``beta >= 0`` (0 on
    unmatched columns) being the longest-path potentials of those difference
    constraints (Bellman-Ford, ``n_left`` rounds at most).  Otherwise still a
    start near the solution's dual."""
    rows, sigma = linear_sum_assignment(V, maximize=True)
    gain = V[rows, sigma]
    # beta_j >= beta_sigma(i) + 1 + V_ij - V_i,sigma(i) for every row i
    W = 1.0 + V - gain[:, None]
    matched = np.zeros(V.shape[1], bool)
    matched[sigma] = True
    beta = np.zeros(V.shape[1])
    for _ in range(V.shape[0]):
        new = np.maximum((beta[sigma][:, None] + W).max(axis=0), 0.0)
        new[~matched] = 0.0
        if (new == beta).all():
            break
        beta = new
    return 1.0 - gain + beta[sigma]


def _line_search(V, alpha, d, phi, slope, err, t_max):
    """A step ``t`` in ``(0, t_max]`` along ``d`` and the dual there.

    ``phi(alpha + t d)`` is convex and piecewise quadratic in ``t``, its
    derivative ``psi(t) = g(alpha + t d) . d`` nondecreasing and piecewise
    linear, ``psi(0) = slope < 0``.  Takes ``t_max`` (the Newton step, or the
    cap) if ``psi`` is still <= 0 there; otherwise brackets the root of ``psi``
    and narrows it by regula falsi (Illinois variant), exact on a linear
    piece, until ``|psi(t)| <= |slope| / 10``.  A step must decrease ``phi``
    (Armijo) or, where that decrease is below the rounding of ``phi``, the
    largest row-sum error ``err``.  Returns None if there is no such step.
    """
    def good(t, trial):
        if trial[0] <= phi + 1e-4 * t * slope:
            return True
        return (-t * slope <= 1e-12 * (abs(phi) + 1.0)
                and float(np.abs(trial[3]).max()) < 0.9 * err)

    lo, psi_lo = 0.0, slope
    hi = t_max
    trial = _dual(V, alpha + hi * d)
    psi_hi = float(trial[3] @ d)
    if psi_hi <= 0.1 * abs(slope) and good(hi, trial):
        return hi, trial
    if psi_hi <= 0.0:
        return None
    side = 0
    for _ in range(60):
        t = lo - psi_lo * (hi - lo) / (psi_hi - psi_lo)
        if not lo < t < hi:
            t = 0.5 * (lo + hi)
        trial = _dual(V, alpha + t * d)
        psi = float(trial[3] @ d)
        if abs(psi) <= 0.1 * abs(slope) and good(t, trial):
            return t, trial
        if psi < 0.0:
            lo, psi_lo = t, psi
            if side == -1:
                psi_hi *= 0.5
            side = -1
        else:
            hi, psi_hi = t, psi
            if side == 1:
                psi_lo *= 0.5
            side = 1
        if hi - lo <= 1e-15 * hi:
            break
    return None


def project_matching(V):
    """Euclidean projection of ``V`` (n_left, n_right), ``n_left <= n_right``, onto
    ``{Z >= 0, Z 1 = 1, Z^T 1 <= 1}``.

    The dual of the projection has a free multiplier ``alpha_i`` per row and
    ``beta_j >= 0`` per column, and ``Z = max(V + alpha 1^T - 1 beta^T, 0)``.
    The column multipliers are minimised out in closed form (a sorting-based
    threshold per column), which leaves a convex, piecewise quadratic and
    continuously differentiable function of ``alpha`` whose gradient is the
    row sums of ``Z`` minus 1.  It is minimised by a semismooth Newton method
    with a line search along the Newton direction: on the active set of the
    solution (support of ``Z``, columns with ``beta_j > 0``) the function is
    quadratic and one Newton step lands on the exact solution; where it is
    linear, the line search goes to the next kink.  Of two starts, the
    row-by-row simplex projection and the dual of the best assignment, the
    one of lower dual value is taken.  Stops when every row sums
    to 1 within ``1e-10`` (or within the rounding of ``V``'s magnitude,
    ``4 n_right max|V|`` machine epsilons, if that is larger); the column
    conditions hold by construction.
    """
    V = np.asarray(V, dtype=np.float64)
    m, n = V.shape
    scale = max(1.0, float(np.abs(V).max()))
    tol = max(_PROJECT_TOL, 4.0 * n * scale * np.finfo(np.float64).eps)
    # two starts: each row projected onto the simplex alone (best for small
    # V), and the dual of the best assignment (near the solution for large V,
    # where Z is close to that vertex): the one of lower dual value
    starts = [-_thresholds(V), _assignment_alpha(V)]
    duals = [_dual(V, a) for a in starts]
    k = int(duals[1][0] < duals[0][0])
    alpha, (phi, Z, beta, g) = starts[k], duals[k]
    diag = np.arange(m)
    # the multipliers at the solution lie within the range of V (plus 1) of the
    # start: no step needs to move them further
    reach = 2.0 * (float(V.max() - V.min()) + 1.0)
    best = (float(np.abs(g).max()), Z)
    for _ in range(_PROJECT_MAX_ITER):
        if best[0] <= tol:
            break
        S = Z > 0
        T = beta > 0
        ST = S[:, T].astype(np.float64)
        H = -(ST / ST.sum(axis=0)) @ ST.T
        nr = S.sum(axis=1)
        # (the ridge keeps H definite where the dual is flat or linear, e.g. along
        # rows that share tight columns and nothing else, where the line search
        # then goes to the next kink; it is large enough that rounding noise in
        # those directions is not blown up)
        H[diag, diag] += np.where(nr > 0, nr, 1.0) + 1e-6
        d = -np.linalg.solve(H, g)
        empty = nr == 0
        if empty.any():
            # a row without support is linear in its multiplier: its step is the
            # exact minimisation over that multiplier alone, which gives it support
            d[empty] = -_thresholds(V[empty] - beta[None, :]) - alpha[empty]
        slope = float(g @ d)
        if not slope < 0.0:
            break
        found = _line_search(V, alpha, d, phi, slope, best[0],
                             min(1.0, reach / max(float(np.abs(d).max()), 1e-300)))
        if found is None:
            break
        t, (phi, Z, beta, g) = found
        alpha = alpha + t * d
        err = float(np.abs(g).max())
        if err < best[0]:
            best = (err, Z)
    return best[1]
