"""Non-local energies ``L_psi(mu)`` on the marginals of a chain or tree CRF.

Vilnis, Belanger, Sheldon & McCallum, "Bethe Projections for Non-Local
Inference" (UAI 2015).  Every energy here is a weighted sum of ``J`` terms,

    L_psi(mu_s) = sum_j psi_sj * l_j(mu_s),

for sample ``s`` with marginal vector ``mu_s`` (its node marginals, and for
some energies its edge marginals).  ``psi`` is per sample, so it can depend on
the input (``NonLocalCRF(psi="mean_map")``).  An energy works on a whole
packed batch at once (see :class:`skstruct.inference.GraphBatch`): node
marginals ``node`` of shape (N, K), edge marginals ``edge`` of shape (E, K, K)
(or ``None`` for energies whose ``uses_edges`` is False) and ``psi`` of shape
(n_samples, n_terms).  It provides

* :meth:`value` -- ``L_psi(mu_s)`` per sample;
* :meth:`grad` -- its gradient in ``mu`` (what Bethe projections need);
* :meth:`terms` -- ``l_j(mu_s)``, the gradient of the value in ``psi``;
* :meth:`cross` -- ``grad_mu l_j(mu_s) . d_s`` for directions ``d``: the
  derivative in ``psi`` of ``grad_mu L_psi . d``, which is how the surrogate
  likelihood of the learning algorithms (eq. 14-17) depends on ``psi``;
* :meth:`linearize` -- ``grad`` and ``cross`` at fixed marginals, where the
  gradient is linear in ``psi`` (what Algorithm 2's M-step evaluates many
  times, with whatever the energy can compute once at ``mu`` cached).

Every energy shipped here computes ``cross`` in closed form, in the time of
one gradient whatever the number of terms; ``Energy._cross`` is the
generic fallback for a subclass that defines none (one gradient per term).

Energies are sklearn estimators (``get_params``, ``clone``): ``fit`` learns
whatever the energy needs from training labellings (the dictionary of
:class:`NearestStatistic`); :class:`skstruct.NonLocalCRF` fits a clone.
"""

import numbers
from collections.abc import Mapping

import numpy as np
from sklearn.base import BaseEstimator

from ._core import check_psi, segment_sum

__all__ = ["Energy", "LinearMeasurements", "Linearization", "NearestStatistic", "PoissonCounts",
           "segment_sum"]


def _real_array(value, name):
    """``value`` as a float64 array, refusing what a cast would silently mangle."""
    a = np.asarray(value)
    # astype(float64) drops imaginary parts (only a warning) and parses numeric strings
    if a.dtype.kind in "cSUV" or (a.dtype.kind == "O" and any(
            isinstance(v, (complex, np.complexfloating, str, bytes)) for v in a.flat)):
        raise TypeError(f"{name} must hold real numbers, got dtype {a.dtype}")
    try:
        return a.astype(np.float64)
    except (TypeError, ValueError) as exc:
        raise TypeError(f"{name} must hold real numbers, got dtype {a.dtype}") from exc


def _class_index(classes, n_classes):
    """``{label: column}`` for the columns of the marginals (``classes`` in their order)."""
    classes = np.asarray(classes)
    if classes.ndim != 1 or classes.shape[0] != n_classes:
        raise ValueError(f"classes must hold one label per state ({n_classes}), got shape "
                         f"{classes.shape}")
    return {c: k for k, c in enumerate(classes.tolist())}


def _label_column(label, index, where):
    try:
        return index[label]
    except (KeyError, TypeError):
        pass
    names = list(index)
    shown = ", ".join(map(repr, names[:30])) + (", ..." if len(names) > 30 else "")
    raise ValueError(f"{where} names the label {label!r}, which is not one of the "
                     f"{len(names)} classes of the training labels ({shown})")


def _named_row(row, where, n_classes, index, pairs):
    """One row of weights given as ``{label: weight}`` (``{(label, next label): weight}``
    with ``pairs``), as an array over the columns of ``classes``."""
    K = n_classes
    out = np.zeros((K, K) if pairs else K)
    if index is None:
        raise ValueError(f"{where} names labels, which needs the classes: fit(y, batch, "
                         "n_classes, classes=...) (NonLocalCRF passes its classes_); or give "
                         "the weights by column position, an array")
    for key, weight in row.items():
        w = _real_array(weight, f"{where}[{key!r}]")
        if w.ndim != 0 or not np.isfinite(w):
            raise ValueError(f"{where}[{key!r}] must be one finite number, got {weight!r}")
        if pairs:
            if not isinstance(key, tuple) or len(key) != 2:
                raise ValueError(f"{where} must be keyed by (label, next label) pairs, got the "
                                 f"key {key!r}")
            out[_label_column(key[0], index, where), _label_column(key[1], index, where)] += w
        else:
            out[_label_column(key, index, where)] += w
    return out


def _weight_rows(value, name, n_classes, classes, pairs=False):
    """``A`` (``A_edge`` with ``pairs``) as a float array, its rows given by column position
    (arrays) or by label name (mappings, resolved against ``classes``)."""
    if isinstance(value, Mapping):
        raise ValueError(f"{name} must be a list of rows, one per term; got a single mapping "
                         f"(write [{{...}}] for one term)")
    if not (isinstance(value, (list, tuple)) and any(isinstance(r, Mapping) for r in value)):
        return _real_array(value, name)
    K = int(n_classes)
    index = None if classes is None else _class_index(classes, K)
    shape = (K, K) if pairs else (K,)
    rows = []
    for j, row in enumerate(value):
        if isinstance(row, Mapping):
            rows.append(_named_row(row, f"{name}[{j}]", K, index, pairs))
            continue
        r = _real_array(row, f"{name}[{j}]")
        if r.shape != shape:
            raise ValueError(f"{name}[{j}] must be a mapping from labels to weights or an "
                             f"array of shape {shape} (columns in the order of the classes), "
                             f"got shape {r.shape}")
        rows.append(r)
    return np.stack(rows) if rows else np.zeros((0,) + shape)


def _check_codes(y, batch, n_classes):
    """Training labels ``y`` as int64 codes in ``0..n_classes-1``, one per node."""
    y = np.asarray(y)
    if y.shape != (batch.n_nodes,):
        raise ValueError(f"y must have shape ({batch.n_nodes},), one label per node of the "
                         f"batch, got shape {y.shape}")
    K = int(n_classes)
    if y.dtype.kind not in "biuf":
        raise TypeError(f"y must hold integer labels in 0..{K - 1}, got dtype {y.dtype}")
    if y.dtype.kind == "f":
        # a cast to int64 would truncate 0.5 to 0 (and NaN to anything)
        bad = ~(np.isfinite(y) & (y == np.round(y)))
        if bad.any():
            raise ValueError(f"y must hold integer labels in 0..{K - 1}, got {y[bad][0]} "
                             f"(node {int(np.flatnonzero(bad)[0])})")
    codes = y.astype(np.int64)
    # a label >= K would index out of range, a negative one wrap around
    bad = (codes < 0) | (codes >= K)
    if bad.any():
        raise ValueError(f"y must hold labels in 0..{K - 1}, got {codes[bad][0]} (node "
                         f"{int(np.flatnonzero(bad)[0])})")
    return codes


def _dot_per_sample(gn, ge, batch, d_node, d_edge):
    """``<g_s, d_s>`` per sample: node parts, plus edge parts where both exist."""
    out = segment_sum(np.einsum("vk,vk->v", gn, d_node), batch.node_offsets)
    if ge is not None and d_edge is not None:
        out += segment_sum(np.einsum("eab,eab->e", ge, d_edge), batch.edge_offsets)
    return out


def _one_term_cross(energy, node, edge, batch, d_node, d_edge):
    """:meth:`Energy.cross` of a one-term energy: its gradient at ``psi = 1`` is
    ``grad_mu l_1``, so one ``_grad`` call."""
    gn, ge = energy._grad(node, edge, batch, np.ones((batch.n_samples, 1)))
    return _dot_per_sample(gn, ge, batch, d_node, d_edge)[:, None]


class Linearization:
    """An energy's gradient at fixed marginals ``mu``, as a function of ``psi``
    (see :meth:`Energy.linearize`).

    This generic one calls the energy's :meth:`~Energy.grad` and
    :meth:`~Energy.cross` at ``mu`` on every call; energies return their own
    when they can cache what does not depend on ``psi``.

    Parameters
    ----------
    energy : Energy
        Fitted.
    node, edge : arrays (N, K) and (E, K, K) or None
    batch : GraphBatch
    """

    def __init__(self, energy, node, edge, batch):
        self.energy, self.node, self.edge, self.batch = energy, node, edge, batch

    def grad(self, psi):
        """``sum_j psi_sj grad_mu l_j(mu_s)``: ``(g_node, g_edge or None)``."""
        return self.energy.grad(self.node, self.edge, self.batch, psi)

    def cross(self, d_node, d_edge=None):
        """``grad_mu l_j(mu_s) . d_s``, shape (n_samples, n_terms)."""
        return self.energy.cross(self.node, self.edge, self.batch, d_node, d_edge)


class Energy(BaseEstimator):
    """Base class of the non-local energies.

    Subclasses set ``convex`` and ``uses_edges`` and implement ``_terms(node,
    edge, batch)`` (the ``l_j(mu_s)``, (n_samples, n_terms)) and ``_grad(node,
    edge, batch, psi)`` (the gradient in ``mu`` of ``sum_s L_psi(mu_s)``,
    linear in ``psi``).  They may override ``_cross`` with a closed form (the
    fallback calls ``_grad`` once per term) and ``_linearize`` with one that
    caches what does not depend on ``psi``.
    """

    convex = True
    uses_edges = False

    def fit(self, y, batch, n_classes, classes=None):
        """Learn from training labellings (codes ``y`` (N,) in ``0..n_classes-1``).

        ``classes`` (optional) holds the label of every code, in code order (the
        estimator's ``classes_``), for energies whose parameters name labels.
        Returns self.  The base implementation only records ``n_classes_``.
        """
        self.n_classes_ = int(n_classes)
        return self

    @property
    def n_terms(self):
        return 1

    def _check_fitted(self):
        if not hasattr(self, "n_classes_"):
            raise ValueError(f"{type(self).__name__} is not fitted: call fit(y, batch, "
                             "n_classes) first (NonLocalCRF does it)")

    def value(self, node, edge, batch, psi):
        """``L_psi(mu_s)`` per sample, shape (n_samples,)."""
        psi = check_psi(psi, batch.n_samples, self.n_terms)
        return np.sum(psi * self.terms(node, edge, batch), axis=1)

    def terms(self, node, edge, batch):
        """``l_j(mu_s)``, shape (n_samples, n_terms): the gradient of :meth:`value`
        in ``psi``."""
        self._check_fitted()
        return self._terms(node, edge, batch)

    def grad(self, node, edge, batch, psi):
        """Gradient of ``sum_s L_psi(mu_s)`` in ``mu``: ``(g_node (N, K), g_edge
        (E, K, K) or None)``."""
        self._check_fitted()
        psi = check_psi(psi, batch.n_samples, self.n_terms)
        return self._grad(node, edge, batch, psi)

    def cross(self, node, edge, batch, d_node, d_edge=None):
        """``grad_mu l_j(mu_s) . d_s`` per sample and term.

        Parameters
        ----------
        node, edge : arrays (N, K) and (E, K, K) or None
            The marginals ``mu``.
        batch : GraphBatch
        d_node : array (N, K)
            Node part of the direction ``d``.
        d_edge : array (E, K, K) or None, default=None
            Edge part of ``d`` (ignored by energies on node marginals).

        Returns
        -------
        array (n_samples, n_terms)
        """
        self._check_fitted()
        return self._cross(node, edge, batch, d_node, d_edge)

    def _cross(self, node, edge, batch, d_node, d_edge):
        """Generic fallback of :meth:`cross`: one ``_grad`` per term, at a one-hot
        ``psi`` (``n_terms`` gradients, each of the batch's size).

        Subclasses that know ``grad_mu l_j`` in closed form override it: the
        energies of this module all do.
        """
        S, J = batch.n_samples, self.n_terms
        out = np.empty((S, J))
        for j in range(J):
            onehot = np.zeros((S, J))
            onehot[:, j] = 1.0
            gn, ge = self._grad(node, edge, batch, onehot)
            out[:, j] = _dot_per_sample(gn, ge, batch, d_node, d_edge)
        return out

    def linearize(self, node, edge, batch):
        """The gradient at fixed marginals, a linear function of ``psi``.

        Parameters
        ----------
        node, edge : arrays (N, K) and (E, K, K) or None
            The fixed marginals ``mu``.
        batch : GraphBatch

        Returns
        -------
        Linearization
            With ``grad(psi)`` (this energy's :meth:`grad` at ``mu``) and
            ``cross(d_node, d_edge=None)`` (its :meth:`cross` at ``mu``).
        """
        self._check_fitted()
        return self._linearize(node, edge, batch)

    def _linearize(self, node, edge, batch):
        return Linearization(self, node, edge, batch)

    def lipschitz(self, psi, batch):
        """A bound on the Lipschitz constant of ``grad_mu L_psi`` over the samples
        of ``batch`` (inf if the gradient is not Lipschitz)."""
        return np.inf


# --------------------------------------------------------------------------- energies

class LinearMeasurements(Energy):
    """Soft global constraints: a smoothed hinge on linear measurements (eq. 18-20).

    Measurement ``j`` of sample ``s`` is ``m_sj = sum_v A[j] . mu_v +
    sum_e <A_edge[j], mu_e> + b[j]`` (expected label counts, and optionally
    expected transition counts, combined linearly).  The term is the smoothed
    hinge ``l_j = h(m_sj)`` with ``h(m) = 0`` for ``m >= 1``, ``(1 - m)^2 /
    (2 gamma)`` for ``1 - gamma <= m < 1`` and ``1 - m - gamma / 2`` below: it
    penalises ``m_sj < 1``, i.e. soft constraints ``a_j . S(y) + b_j >= 1``.
    With ``psi_j >= 0`` (:class:`~skstruct.NonLocalCRF` clips negative
    ``psi`` to 0, as the paper ignores terms with ``c_j < 0``) the energy is
    convex with a ``(1 / gamma) ||a_j||^2``-Lipschitz gradient.

    Labels can be named.  Every row of ``A`` (one per term) is either an
    array of ``n_classes`` weights by column position (classes in the order of
    the estimator's ``classes_``, which exists only after fitting), or a
    mapping ``{label: weight}`` with the labels as they appear in ``y``
    (unnamed labels weigh 0), resolved against the classes when the energy is
    fitted: an unknown label raises a ``ValueError`` naming it.  Rows of
    ``A_edge`` are ``(n_classes, n_classes)`` arrays or mappings ``{(label,
    next label): weight}``.  Two common soft constraints on counts:

    * label ``"B-NP"`` at most once: ``2 - count >= 1``, the row ``{"B-NP":
      -1}`` with ``b = 2``;
    * ``"B-PP"`` present implies ``"B-NP"`` present, as "at least as many
      ``B-NP`` as ``B-PP``": ``count_NP - count_PP + 1 >= 1``, the row
      ``{"B-NP": 1, "B-PP": -1}`` with ``b = 1``.

    Parameters
    ----------
    A : array of shape (n_terms, n_classes), or list of n_terms rows
        Weight of each class's expected count in each measurement: an array
        (columns in the order of the estimator's ``classes_``), or a list whose
        rows are such arrays or mappings ``{label: weight}``.
    b : array of shape (n_terms,), default=None (zeros)
    A_edge : array of shape (n_terms, n_classes, n_classes), list of n_terms rows, \
default=None
        Weight of each transition's expected count (edge marginals), by
        position or as mappings ``{(label, next label): weight}``.
    smoothing : float, default=1.0
        ``gamma`` > 0; smaller is closer to the hinge, less smooth.

    Attributes
    ----------
    A_ : ndarray of shape (n_terms, n_classes)
        ``A`` with named rows resolved to columns.
    b_ : ndarray of shape (n_terms,)
    A_edge_ : ndarray of shape (n_terms, n_classes, n_classes) or None

    Examples
    --------
    >>> from skstruct.energies import LinearMeasurements
    >>> at_most_one_np = LinearMeasurements([{"B-NP": -1.0}], b=[2.0])
    >>> pp_needs_np = LinearMeasurements([{"B-NP": 1.0, "B-PP": -1.0}], b=[1.0])
    """

    def __init__(self, A, b=None, A_edge=None, smoothing=1.0):
        self.A = A
        self.b = b
        self.A_edge = A_edge
        self.smoothing = smoothing

    @property
    def uses_edges(self):
        return self.A_edge is not None

    def fit(self, y, batch, n_classes, classes=None):
        """Check and resolve the weights (``classes``: the label of every column,
        needed for rows that name labels)."""
        A = _weight_rows(self.A, "A", n_classes, classes)
        if A.ndim != 2 or A.shape[1] != n_classes:
            raise ValueError(f"A must have shape (n_terms, {n_classes}), got {A.shape}")
        J = A.shape[0]
        b = np.zeros(J) if self.b is None else _real_array(self.b, "b").reshape(-1)
        if b.shape != (J,):
            raise ValueError(f"b must have shape ({J},), got {b.shape}")
        Ae = None
        if self.A_edge is not None:
            Ae = _weight_rows(self.A_edge, "A_edge", n_classes, classes, pairs=True)
            if Ae.shape != (J, n_classes, n_classes):
                raise ValueError(f"A_edge must have shape ({J}, {n_classes}, {n_classes}), "
                                 f"got {Ae.shape}")
        for name, a in (("A", A), ("b", b), ("A_edge", Ae)):
            if a is not None and not np.all(np.isfinite(a)):
                raise ValueError(f"{name} contains NaN or infinite values")
        g = self.smoothing
        if isinstance(g, bool) or not isinstance(g, numbers.Real) or not g > 0:
            raise ValueError(f"smoothing must be a number > 0, got {g!r}")
        self.A_, self.b_, self.A_edge_ = A, b, Ae
        self.n_classes_ = int(n_classes)
        return self

    @property
    def n_terms(self):
        if isinstance(self.A, (list, tuple)):
            return len(self.A)
        return np.asarray(self.A).shape[0]

    def measurements(self, node, edge, batch):
        """``m_sj``, shape (n_samples, n_terms)."""
        m = segment_sum(node, batch.node_offsets) @ self.A_.T + self.b_
        if self.A_edge_ is not None:
            if edge is None:
                raise ValueError("this LinearMeasurements has A_edge: edge marginals are needed")
            K = self.n_classes_
            es = segment_sum(edge.reshape(-1, K * K), batch.edge_offsets)
            m += es @ self.A_edge_.reshape(-1, K * K).T
        return m

    def _h(self, m):
        g = float(self.smoothing)
        u = 1.0 - m
        return np.where(u <= 0, 0.0, np.where(u <= g, u * u / (2 * g), u - g / 2))

    def _dh(self, m):
        g = float(self.smoothing)
        u = 1.0 - m
        return -np.clip(u / g, 0.0, 1.0)

    def _terms(self, node, edge, batch):
        return self._h(self.measurements(node, edge, batch))

    def _grad(self, node, edge, batch, psi):
        return self._grad_at(self._dh(self.measurements(node, edge, batch)), batch, psi)

    def _cross(self, node, edge, batch, d_node, d_edge):
        return self._cross_at(self._dh(self.measurements(node, edge, batch)), batch, d_node,
                              d_edge)

    def _linearize(self, node, edge, batch):
        return _LinearizedMeasurements(self, self._dh(self.measurements(node, edge, batch)),
                                       batch)

    # grad_mu l_j(mu_s) is h'(m_sj) a_j on every node of s (A_edge[j] on every edge): all
    # of grad and cross is h'(m) (S, J) and products with A, never a per-term array
    def _grad_at(self, dh, batch, psi):
        coef = psi * dh                                              # (S, J)
        per_sample = coef @ self.A_                                  # (S, K)
        gn = np.repeat(per_sample, batch.lengths, axis=0)
        ge = None
        if self.A_edge_ is not None:
            K = self.n_classes_
            pe = (coef @ self.A_edge_.reshape(-1, K * K)).reshape(-1, K, K)
            ge = np.repeat(pe, np.diff(batch.edge_offsets), axis=0)
        return gn, ge

    def _cross_at(self, dh, batch, d_node, d_edge):
        proj = segment_sum(d_node, batch.node_offsets) @ self.A_.T  # (S, J)
        if self.A_edge_ is not None and d_edge is not None:
            K = self.n_classes_
            de = segment_sum(d_edge.reshape(-1, K * K), batch.edge_offsets)
            proj += de @ self.A_edge_.reshape(-1, K * K).T
        return dh * proj

    def lipschitz(self, psi, batch):
        self._check_fitted()
        psi = np.maximum(check_psi(psi, batch.n_samples, self.n_terms), 0.0)
        # the Hessian of psi_j h(m_j) is psi_j h'' a_j a_j^T with a_j repeated over the
        # sample's nodes (and edges): its norm is psi_j / gamma * ||a_j||^2
        n = batch.lengths.astype(np.float64)[:, None]
        norm2 = n * np.sum(self.A_ ** 2, axis=1)[None]
        if self.A_edge_ is not None:
            ne = np.diff(batch.edge_offsets).astype(np.float64)[:, None]
            norm2 = norm2 + ne * np.sum(self.A_edge_ ** 2, axis=(1, 2))[None]
        # terms add up: sum over j bounds the sum's Hessian norm
        per_sample = np.sum(psi * norm2, axis=1) / float(self.smoothing)
        return float(per_sample.max()) if per_sample.size else 0.0


class _LinearizedMeasurements(Linearization):
    """:class:`LinearMeasurements` at fixed marginals: only ``h'(m)`` (n_samples,
    n_terms) of the fixed measurements is kept."""

    def __init__(self, energy, dh, batch):
        self.energy, self.dh, self.batch = energy, dh, batch

    def grad(self, psi):
        psi = check_psi(psi, self.batch.n_samples, self.energy.n_terms)
        return self.energy._grad_at(self.dh, self.batch, psi)

    def cross(self, d_node, d_edge=None):
        return self.energy._cross_at(self.dh, self.batch, d_node, d_edge)


class NearestStatistic(Energy):
    """Distance to the nearest training labelling: ``psi * min_i ||u_i - T(mu)||_1``.

    Non-convex.  Eq. 21-22 of Vilnis et al.: the learned energy that pulls
    inference towards the "dictionary" of labellings seen in training (the
    OCR words).

    Parameters
    ----------
    statistic : {"unigram", "marginals"}, default="marginals"
        ``"unigram"`` (``L^u``): ``T(mu) = sum_v mu_v``, the expected label
        counts, compared with the label counts ``u_i`` of every distinct
        training labelling.  ``"marginals"`` (``L^w``): ``T(mu)`` is the whole
        node-marginal vector, compared with the one-hot vectors ``w_i`` of the
        distinct training labellings *of the same length*; a sample whose
        length no training labelling has gets no energy (value and gradient 0).
    same_length : bool, default=False
        ``"unigram"`` only: compare with the counts of training labellings of the
        sample's own length (the paper's ``L^u`` compares with all of them;
        ``"marginals"`` always compares equal lengths).

    Attributes
    ----------
    dictionary_ : list of arrays
        ``"unigram"``: one array (n_words, n_classes) of counts (``lengths_``
        their lengths); ``"marginals"``: one (n_words_n, n) array of label codes
        per length n (``lengths_`` lists the lengths).
    """

    convex = False

    def __init__(self, statistic="marginals", same_length=False):
        self.statistic = statistic
        self.same_length = same_length

    def fit(self, y, batch, n_classes, classes=None):
        if self.statistic not in ("unigram", "marginals"):
            raise ValueError(f"statistic must be 'unigram' or 'marginals', got "
                             f"{self.statistic!r}")
        y = _check_codes(y, batch, n_classes)
        off = batch.node_offsets
        lengths = batch.lengths
        K = int(n_classes)
        if not isinstance(self.same_length, (bool, np.bool_)):
            raise ValueError(f"same_length must be a bool, got {self.same_length!r}")
        if self.statistic == "unigram":
            S = batch.n_samples
            counts = np.zeros((S, K))
            sample = np.repeat(np.arange(S), lengths)
            np.add.at(counts, (sample, y), 1.0)
            self.dictionary_ = [np.unique(counts[lengths > 0], axis=0)]
            self.lengths_ = self.dictionary_[0].sum(axis=1).astype(np.int64)
        else:
            self.lengths_ = np.unique(lengths[lengths > 0])
            words = []
            for n in self.lengths_:
                idx = np.flatnonzero(lengths == n)
                rows = y[off[idx][:, None] + np.arange(n)]
                words.append(np.unique(rows, axis=0))
            self.dictionary_ = words
        self.n_classes_ = K
        return self

    @property
    def n_entries(self):
        """Number of dictionary entries (all lengths together)."""
        return int(sum(len(w) for w in self.dictionary_))

    def distances(self, node, batch):
        """``||u_i - T(mu_s)||_1`` for every sample ``s`` and dictionary entry ``i``.

        Returns an array (n_samples, n_entries), ``inf`` where entry ``i`` is
        not compared with sample ``s`` (another length, for ``"marginals"`` and
        ``same_length=True``).  Entries are numbered in the order of
        ``dictionary_`` (all lengths one after the other for ``"marginals"``).
        """
        self._check_fitted()
        S = batch.n_samples
        lengths = batch.lengths
        if self.statistic == "unigram":
            U = segment_sum(node, batch.node_offsets)        # (S, K)
            D = self.dictionary_[0]
            dist = np.abs(U[:, None, :] - D[None, :, :]).sum(axis=2)
            if self.same_length:
                dist[lengths[:, None] != self.lengths_[None, :]] = np.inf
            return dist
        dist = np.full((S, self.n_entries), np.inf)
        off = batch.node_offsets
        rowsum = node.sum(axis=1)
        first = 0
        for n, words in zip(self.lengths_, self.dictionary_):
            idx = np.flatnonzero(lengths == n)
            if idx.size:
                rows = off[idx][:, None] + np.arange(n)                 # (s, n)
                # ||w - mu_v||_1 = (1 - mu_v[w]) + (rowsum_v - mu_v[w]) for one-hot w
                # and 0 <= mu <= 1: only the marginal of the word's letter is needed
                picked = node[rows[:, None, :], words[None, :, :]]     # (s, d, n)
                dist[idx, first:first + len(words)] = (
                    n + rowsum[rows].sum(axis=1)[:, None] - 2.0 * picked.sum(axis=2))
            first += len(words)
        return dist

    # the nearest dictionary entry of every sample (-1: none), and the distance to it
    def _nearest(self, node, batch):
        dist = self.distances(node, batch)
        S = batch.n_samples
        if dist.shape[1] == 0:
            return np.zeros(S), np.full(S, -1, np.int64)
        best = np.argmin(dist, axis=1)
        d = dist[np.arange(S), best]
        none = ~np.isfinite(d)
        best[none] = -1
        d[none] = 0.0
        return d, best

    def _targets(self, entries, batch):
        """The statistic ``T`` of entry ``entries[s]`` for every sample (-1: none):
        label counts (S, K; a row of NaN: none) for ``"unigram"``, one label code
        per node (-1: none) for ``"marginals"``."""
        if self.statistic == "unigram":
            D = self.dictionary_[0]
            out = np.full((entries.size, self.n_classes_), np.nan)    # NaN row: none
            has = entries >= 0
            out[has] = D[entries[has]]
            return out
        codes = np.full(batch.n_nodes, -1, np.int64)
        off = batch.node_offsets
        first = 0
        for n, words in zip(self.lengths_, self.dictionary_):
            idx = np.flatnonzero((entries >= first) & (entries < first + len(words)))
            if idx.size:
                rows = off[idx][:, None] + np.arange(n)
                codes[rows] = words[entries[idx] - first]
            first += len(words)
        return codes

    def _terms(self, node, edge, batch):
        return self._nearest(node, batch)[0][:, None]

    def _grad(self, node, edge, batch, psi):
        _, best = self._nearest(node, batch)
        return _target_grad(self.statistic, node, batch, self._targets(best, batch),
                            np.where(best >= 0, psi[:, 0], 0.0))

    def _cross(self, node, edge, batch, d_node, d_edge):
        return _one_term_cross(self, node, edge, batch, d_node, d_edge)

    def _linearize(self, node, edge, batch):
        # at fixed mu the nearest entries are fixed: the energy's gradient there is
        # that of those entries' pieces, without the distances to every entry
        _, best = self._nearest(node, batch)
        return Linearization(self.piece(best, batch), node, edge, batch)

    def pieces(self, node, batch, n_pieces=None):
        """The energy as a minimum of convex pieces, for global inference.

        ``min_i ||u_i - T(mu)||_1`` is the minimum over dictionary entries ``i``
        of the convex ``||u_i - T(mu)||_1``, so the minimum of the non-convex
        projection objective is the smallest of the minima of one convex
        projection per entry (:func:`skstruct.inference.bethe_project` with
        ``n_pieces``).

        Parameters
        ----------
        node : array (N, K)
            Marginals ranking the entries (the prox centre).
        batch : GraphBatch
        n_pieces : int or None
            Keep the ``n_pieces`` entries nearest to ``node`` for every sample
            (ties: the lower entry number); ``None`` keeps every entry the
            sample is compared with.

        Returns
        -------
        owner : array of int (R,)
            The sample of every piece, ascending; a sample compared with no
            entry gets one piece without energy.
        entries : array of int (R,)
            The dictionary entry of every piece (-1: none).
        """
        dist = self.distances(node, batch)
        S, P = dist.shape
        if P == 0:
            return np.arange(S, dtype=np.int64), np.full(S, -1, np.int64)
        k = P if n_pieces is None else min(int(n_pieces), P)
        order = np.argsort(dist, axis=1, kind="stable")[:, :k]
        ok = np.isfinite(np.take_along_axis(dist, order, axis=1))
        order[~ok] = -1
        # a sample without any entry keeps one piece without energy
        ok[:, 0] |= ~ok.any(axis=1)
        owner = np.repeat(np.arange(S), ok.sum(axis=1))
        return owner, order[ok].astype(np.int64)

    def piece(self, entries, batch):
        """The convex energy ``||u_{entries[s]} - T(mu_s)||_1`` of every sample of
        ``batch`` (entry -1: no energy), fitted."""
        return _Target(self.statistic, self._targets(np.asarray(entries, np.int64), batch),
                       self.n_classes_)


def _target_grad(statistic, node, batch, targets, w):
    """Gradient in ``mu`` of ``w_s ||t_s - T(mu_s)||_1`` (a subgradient: sign 0 at
    equality)."""
    if statistic == "unigram":
        U = segment_sum(node, batch.node_offsets)
        has = ~np.isnan(targets[:, 0])
        sgn = np.sign(U - np.where(has[:, None], targets, 0.0)) * np.where(has, w, 0.0)[:, None]
        return np.repeat(sgn, batch.lengths, axis=0), None
    hot = np.zeros_like(node)
    has = targets >= 0
    hot[np.flatnonzero(has), targets[has]] = 1.0
    g = np.sign(node - hot)
    g *= (np.repeat(w, batch.lengths) * has)[:, None]
    return g, None


class _Target(Energy):
    """``psi_s ||t_s - T(mu_s)||_1`` with a fixed target per sample: one convex piece
    of :class:`NearestStatistic` for every sample (see ``NearestStatistic.pieces``)."""

    def __init__(self, statistic, targets, n_classes):
        self.statistic = statistic
        self.targets = targets
        self.n_classes_ = int(n_classes)

    def _terms(self, node, edge, batch):
        t = self.targets
        if self.statistic == "unigram":
            U = segment_sum(node, batch.node_offsets)
            d = np.abs(U - t).sum(axis=1)
            return np.where(np.isnan(d), 0.0, d)[:, None]
        has = t >= 0
        # ||w - mu_v||_1 for one-hot w: 1 + rowsum - 2 mu_v[w]
        d = np.where(has, 1.0 + node.sum(axis=1)
                     - 2.0 * node[np.arange(node.shape[0]), np.maximum(t, 0)], 0.0)
        return segment_sum(d, batch.node_offsets)[:, None]

    def _grad(self, node, edge, batch, psi):
        return _target_grad(self.statistic, node, batch, self.targets, psi[:, 0])

    def _cross(self, node, edge, batch, d_node, d_edge):
        return _one_term_cross(self, node, edge, batch, d_node, d_edge)


class PoissonCounts(Energy):
    """Poisson count likelihood of a collective graphical model (eq. 23).

    A population of ``population`` (``M``) individuals moves along the chain;
    ``counts[v, k]`` individuals are observed in state ``k`` at node ``v``,
    each present individual being seen with probability ``rate``
    (``alpha``): ``counts[v, k] ~ Poisson(alpha M mu_vk)``.  The energy is the
    negative log-likelihood per individual (constants dropped),

        l(mu) = sum_{v, k} [alpha mu_vk - (counts_vk / M) log(alpha M mu_vk)],

    so that ``-<theta, mu> - H_B(mu) + psi l(mu)`` at ``psi = 1`` is Sheldon et
    al.'s approximate MAP objective divided by ``M``.  Convex; its gradient
    ``psi (alpha - counts / (M mu))`` is not Lipschitz near ``mu = 0``.

    Parameters
    ----------
    counts : array of shape (N, n_classes), or list of (n_nodes_i, n_classes)
        Observed counts (>= 0) for every node of the batch it is used on.
    population : float, default=1.0
    rate : float, default=1.0
    """

    def __init__(self, counts, population=1.0, rate=1.0):
        self.counts = counts
        self.population = population
        self.rate = rate

    def fit(self, y=None, batch=None, n_classes=None, classes=None):
        c = self.counts
        if isinstance(c, (list, tuple)):
            c = np.concatenate([_real_array(a, "counts").reshape(len(a), -1) for a in c])
        c = _real_array(c, "counts")
        if c.ndim != 2:
            raise ValueError(f"counts must be 2-D (n_nodes, n_classes), got shape {c.shape}")
        if not np.all(np.isfinite(c)) or np.any(c < 0):
            raise ValueError("counts must be finite and >= 0")
        if n_classes is not None and c.shape[1] != n_classes:
            raise ValueError(f"counts has {c.shape[1]} columns for {n_classes} states")
        if batch is not None and c.shape[0] != batch.n_nodes:
            raise ValueError(f"counts has {c.shape[0]} rows for {batch.n_nodes} nodes")
        for name in ("population", "rate"):
            v = getattr(self, name)
            if isinstance(v, bool) or not isinstance(v, numbers.Real) or not v > 0:
                raise ValueError(f"{name} must be a number > 0, got {v!r}")
        self.counts_ = c
        self.n_classes_ = c.shape[1]
        return self

    def _check_nodes(self, node):
        if node.shape != self.counts_.shape:
            raise ValueError(f"PoissonCounts was given counts of shape {self.counts_.shape} "
                             f"but the marginals have shape {node.shape}")

    def _terms(self, node, edge, batch):
        self._check_nodes(node)
        a, M = float(self.rate), float(self.population)
        Y = self.counts_
        seen = Y > 0
        t = a * node
        with np.errstate(divide="ignore"):
            t[seen] -= (Y[seen] / M) * np.log(a * M * node[seen])
        return segment_sum(t.sum(axis=1), batch.node_offsets)[:, None]

    def _grad(self, node, edge, batch, psi):
        self._check_nodes(node)
        a, M = float(self.rate), float(self.population)
        # marginals of finite potentials are > 0; the floor only keeps a hard zero
        # (a -inf potential) from turning the gradient into -inf
        g = a - self.counts_ / (M * np.maximum(node, 1e-300))
        g = np.maximum(g, -1e300)
        return g * np.repeat(psi[:, 0], batch.lengths)[:, None], None

    def _cross(self, node, edge, batch, d_node, d_edge):
        return _one_term_cross(self, node, edge, batch, d_node, d_edge)
