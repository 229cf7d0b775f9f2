"""Message updates in O(K) for pairwise tables of a known shape.

A message update ``out[b] = max_a h[a] + theta(a, b)`` costs ``K ** 2`` for a dense
table.  For the tables of vision's smoothness terms it costs ``K`` (P. F. Felzenszwalb
and D. P. Huttenlocher, "Efficient Belief Propagation for Early Vision", International
Journal of Computer Vision 70(1), 2006):

- *Potts*, ``theta(a, b) = d`` on the diagonal and ``o`` off it:
  ``max(h[b] + d, max_{a != b} h[a] + o)``, from the two largest entries of ``h``;
- *truncated linear*, ``theta(a, b) = c - min(w |a - b|, T)`` (``w >= 0``): the
  distance transform ``max_a h[a] - w |a - b|`` in a forward and a backward pass, then
  ``max(that, max_a h[a] - T) + c``;
- *truncated quadratic*, ``theta(a, b) = c - min(w (a - b) ** 2, T)``: the lower
  envelope of parabolas of Felzenszwalb and Huttenlocher's Algorithm 1, then the same
  truncation.

A truncation that starts within ``K / 4`` labels of the diagonal is taken as a band
instead (``max`` over the ``2 m + 1`` nearest labels and the truncation), whose shifted
copies of ``h`` vectorise where the transforms' passes are sequential.  Every maximum is a
select rather than a branch, and the kernels are compiled without reference counting
(:func:`~skstruct._core._jit.leaf`): at 16 labels an update costs less than the atomic
reference counts numba would add around it.

For sum-product, a Potts table's update is ``K`` too: ``log(e^o sum_{a != b} e^{h[a]} +
e^d e^{h[b]})``, the sum over ``a != b`` from prefix and suffix sums (no cancellation).
Truncated tables keep the dense sum-product update.

:func:`table_shapes` recognises the shape of every table (to a relative ``1e-12``), or
checks the one a caller declares; the kernels take the result, or None for dense tables
only, which numba compiles without any of this.
"""

import numpy as np

from .._core._jit import jit, leaf

DENSE = 0
POTTS = 1
LINEAR = 2       # truncated linear
QUADRATIC = 3    # truncated quadratic

# the shapes each declared structure admits (a Potts table is both truncated kinds)
_DECLARED = {"potts": (POTTS,), "truncated_linear": (POTTS, LINEAR),
             "truncated_quadratic": (POTTS, QUADRATIC)}
_NAMES = {DENSE: "dense", POTTS: "Potts", LINEAR: "truncated linear",
          QUADRATIC: "truncated quadratic"}


@jit
def _recognise(P, tol, kind, par):
    """The shape of every table of ``P`` (M, K, K) into ``kind`` and its parameters into
    ``par`` (see :func:`table_shapes`)."""
    M, K = P.shape[0], P.shape[1]
    for t in range(M):
        T_ = P[t]
        kind[t] = DENSE
        scale = 0.0
        finite = True
        for a in range(K):
            for b in range(K):
                x = T_[a, b]
                if not np.isfinite(x):
                    finite = False
                scale = max(scale, abs(x))
        if not finite or K < 2:
            continue
        eps = tol * (1.0 + scale)
        c = T_[0, 0]
        off = T_[0, 1]
        potts = True
        for a in range(K):
            for b in range(K):
                want = c if a == b else off
                if abs(T_[a, b] - want) > eps:
                    potts = False
        if potts:
            kind[t] = POTTS
            par[t, 0] = c
            par[t, 1] = off
            par[t, 2] = 0.0
            continue
        w = c - off
        low = T_[0, 0]
        for a in range(K):
            for b in range(K):
                low = min(low, T_[a, b])
        cut = c - low
        if w < 0.0 or cut < 0.0:
            continue
        for shape in (LINEAR, QUADRATIC):
            ok = True
            for a in range(K):
                for b in range(K):
                    d = abs(a - b)
                    dist = w * d if shape == LINEAR else w * d * d
                    if abs(T_[a, b] - (c - min(dist, cut))) > eps:
                        ok = False
                        break
                if not ok:
                    break
            if ok:
                kind[t] = shape
                par[t, 0] = c
                par[t, 1] = w
                par[t, 2] = cut
                break


def table_shapes(pairwise, structure="auto", used=None):
    """The shapes of the tables ``pairwise`` (M, K, K) as the kernels read them: an
    (M, 4) array, row ``t`` the kind of table ``t`` (DENSE, POTTS, LINEAR or QUADRATIC,
    as a float) and its parameters (Potts: diagonal, off-diagonal, 0; truncated: ``c,
    w, T``); or None when every table is dense (or ``structure="dense"``).

    ``structure`` ``"auto"`` recognises each table's shape; ``"potts"``,
    ``"truncated_linear"`` or ``"truncated_quadratic"`` declares it, and a table of
    another shape raises a ``ValueError`` naming it (``used``: the tables the edges
    use, default all)."""
    if structure == "dense" or pairwise.shape[1] < 3:
        # two labels: a dense update is four additions
        return None
    M = pairwise.shape[0]
    kind = np.zeros(M, np.int8)
    par = np.zeros((M, 3))
    _recognise(np.ascontiguousarray(pairwise, dtype=np.float64), 1e-12, kind, par)
    if structure != "auto":
        idx = np.arange(M) if used is None else used
        bad = idx[~np.isin(kind[idx], _DECLARED[structure])]
        if bad.size:
            t = int(bad[0])
            raise ValueError(f"structure={structure!r} declares every pairwise table "
                             f"{structure.replace('_', ' ')}, but table {t} is "
                             f"{_NAMES[int(kind[t])]}: its scores are not "
                             f"{_formula(structure)}")
    if not kind.any():
        return None
    # one array, which the kernels index for scalars: arrays taken out of a tuple cost
    # two atomic reference counts at every message update
    return np.ascontiguousarray(np.column_stack([kind.astype(np.float64), par]))


def _formula(structure):
    return {"potts": "d on the diagonal and o off it",
            "truncated_linear": "c - min(w |a - b|, T) with w, T >= 0",
            "truncated_quadratic": "c - min(w (a - b) ** 2, T) with w, T >= 0"}[structure]


@leaf
def potts_maxplus(h, d, o, out):
    """``out[b] = max(h[b] + d, max_{a != b} h[a] + o)``: a Potts table's update."""
    # the two largest entries (equal on a tie), by selects: random scores mispredict
    # branches
    top = -np.inf
    second = -np.inf
    for a in range(h.shape[0]):
        x = h[a]
        lo = x if x < top else top
        second = lo if lo > second else second
        top = x if x > top else top
    for b in range(h.shape[0]):
        # the best other label: the runner-up where h[b] is the top (ties included)
        other = (second if h[b] == top else top) + o
        x = h[b] + d
        out[b] = x if x > other else other


@leaf
def truncated_maxplus(h, kind, c, w, cut, out, dt):
    """``out[b] = max_a h[a] + c - min(w |a - b|, cut)`` (``kind`` LINEAR) or ``... - min(w
    (a - b) ** 2, cut)`` (QUADRATIC); ``dt`` (2 K + 1,) is scratch.

    A truncation that starts within a few labels of the diagonal is taken as a band
    (``m`` shifted copies of ``h``, which vectorise) rather than by the distance
    transform's sequential passes."""
    K = h.shape[0]
    top = -np.inf
    for a in range(K):
        x = h[a]
        top = x if x > top else top
    if top == -np.inf:
        for b in range(K):
            out[b] = -np.inf
        return
    floor = top - cut
    # the labels within reach of the truncation: w d < cut (w d ** 2 < cut)
    if w > 0.0:
        reach = cut / w if kind == LINEAR else np.sqrt(cut / w)
        m = int(np.ceil(reach)) - 1 if reach < K else K
    else:
        m = K
    if 4 * m + 2 <= K:
        for b in range(K):
            x = h[b]
            out[b] = x if x > floor else floor
        for delta in range(1, m + 1):
            pen = w * delta if kind == LINEAR else w * delta * delta
            for b in range(delta, K):
                x = h[b - delta] - pen
                out[b] = x if x > out[b] else out[b]
            for b in range(K - delta):
                x = h[b + delta] - pen
                out[b] = x if x > out[b] else out[b]
        for b in range(K):
            out[b] += c
        return
    if kind == LINEAR:
        out[0] = h[0]
        for b in range(1, K):
            x = out[b - 1] - w
            out[b] = x if x > h[b] else h[b]
        for b in range(K - 2, -1, -1):
            x = out[b + 1] - w
            out[b] = x if x > out[b] else out[b]
    elif w == 0.0:
        for b in range(K):
            out[b] = top
    else:
        _parabola_envelope(h, w, out, dt)
    for b in range(K):
        x = out[b]
        out[b] = (x if x > floor else floor) + c


@jit
def shaped_maxplus(h, kind, p0, p1, p2, out, dt):
    """``out[b] = max_a h[a] + theta(a, b)`` for a table of shape ``kind`` (not DENSE)
    with parameters ``p0, p1, p2`` (a row of :func:`table_shapes`); ``dt`` (2 K + 1,) is
    scratch.
    ``-inf`` entries of ``h`` are labels ruled out."""
    if kind == POTTS:
        potts_maxplus(h, p0, p1, out)
    else:
        truncated_maxplus(h, kind, p0, p1, p2, out, dt)


@leaf
def _parabola_envelope(h, w, out, dt):
    """``out[b] = max_a h[a] - w (a - b) ** 2`` (``w > 0``): Felzenszwalb and
    Huttenlocher's lower envelope of the parabolas ``-h[a] / w + (b - a) ** 2``, over the
    labels ``a`` with a finite ``h[a]``; ``dt`` holds the envelope's parabolas (``K``) and
    boundaries (``K + 1``)."""
    K = h.shape[0]
    v = dt[:K]
    z = dt[K:]
    k = -1
    for q in range(K):
        if h[q] == -np.inf:
            continue
        fq = -h[q] / w + q * q
        if k < 0:
            k = 0
            v[0] = q
            z[0] = -np.inf
            z[1] = np.inf
            continue
        p = int(v[k])
        s = (fq - (-h[p] / w + p * p)) / (2.0 * (q - p))
        # z[0] = -inf: the first parabola kept is never dropped
        while s <= z[k]:
            k -= 1
            p = int(v[k])
            s = (fq - (-h[p] / w + p * p)) / (2.0 * (q - p))
        k += 1
        v[k] = q
        z[k] = s
        z[k + 1] = np.inf
    j = 0
    for b in range(K):
        while z[j + 1] < b:
            j += 1
        p = int(v[j])
        out[b] = h[p] - w * (b - p) * (b - p)


@leaf
def shaped_logsumexp(h, kind, p0, p1, out, dt):
    """``out[b] = log sum_a exp(h[a] + theta(a, b))`` for a Potts table (``kind`` POTTS,
    diagonal ``p0``, off-diagonal ``p1``); ``dt`` (2 K + 1,) is scratch.  Returns False,
    leaving ``out`` alone, for other shapes (the caller takes the dense update)."""
    if kind != POTTS:
        return False
    K = h.shape[0]
    d, o = p0, p1
    top = -np.inf
    for a in range(K):
        top = max(top, h[a])
    if top == -np.inf:
        for b in range(K):
            out[b] = -np.inf
        return True
    # prefix sums dt[a] = sum_{a' < a} e^{h[a'] - top}; the suffix sums on the way back
    acc = 0.0
    for a in range(K):
        dt[a] = acc
        acc += np.exp(h[a] - top)
    after = 0.0
    ratio = np.exp(d - o)
    for b in range(K - 1, -1, -1):
        x = np.exp(h[b] - top)
        rest = dt[b] + after
        out[b] = top + o + np.log(rest + ratio * x)
        after += x
    return True
