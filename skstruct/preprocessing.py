"""Apply an ordinary scikit-learn transformer to the nodes of structured samples."""

import weakref
from bisect import bisect_right
from itertools import accumulate, chain, islice

import numpy as np
import scipy.sparse as sp
import sklearn.utils
from sklearn import get_config
from sklearn.base import BaseEstimator, TransformerMixin, clone
from sklearn.utils import get_tags
from sklearn.utils.metaestimators import available_if
from sklearn.utils.validation import check_is_fitted

from ._core._rows import coded_rows
from ._core._versioned import VersionedState

__all__ = ["NodeTransformer"]


def _is_tabular(X):
    return sp.issparse(X) or (isinstance(X, np.ndarray) and X.ndim == 2 and X.dtype != object)


def _n_nodes(nodes, i):
    if sp.issparse(nodes):
        return nodes.shape[0]
    if isinstance(nodes, np.ndarray):
        if nodes.ndim == 0:
            raise ValueError(f"sample {i}: node features are a 0-d array, not one row per node")
        return nodes.shape[0]
    if isinstance(nodes, (str, bytes, dict)) or not hasattr(nodes, "__len__"):
        raise ValueError(f"sample {i}: node features must be an array, a sparse matrix or a "
                         f"list with one entry per node, got {type(nodes).__name__}")
    return len(nodes)


def _unpack(X):
    """Node containers of every sample, and whether the samples are graph tuples."""
    if isinstance(X, (str, bytes, dict)) or not hasattr(X, "__len__"):
        raise ValueError("X must be a list of samples (node feature arrays for chains, tuples "
                         "(node_features, edges[, edge_features]) for graphs) or a 2-D array "
                         f"with one row per sample, got {type(X).__name__}")
    if len(X) == 0:
        raise ValueError("X holds no samples")
    graph = isinstance(X[0], tuple)
    nodes = []
    for i, sample in enumerate(X):
        if isinstance(sample, tuple) != graph:
            this, first = ("not a tuple", "is") if graph else ("a tuple", "is not")
            raise ValueError(f"sample {i} is {this} but sample 0 {first}: mixed chain and "
                             "graph formats")
        if graph:
            if len(sample) == 0:
                raise ValueError(f"sample {i} is an empty tuple; expected (node_features, "
                                 "edges[, edge_features])")
            if isinstance(sample[0], (str, bytes)) or not (
                    sp.issparse(sample[0]) or hasattr(sample[0], "__len__")):
                raise ValueError(f"sample {i}: the node features (first element of the tuple) "
                                 f"have no length, got {type(sample[0]).__name__}")
            nodes.append(sample[0])
        else:
            nodes.append(sample)
    return nodes, graph


def _stack(nodes):
    """All nodes in one container, and the row offsets of the samples."""
    counts = np.array([_n_nodes(f, i) for i, f in enumerate(nodes)], dtype=np.int64)
    offsets = np.concatenate([[0], np.cumsum(counts)])
    is_list = [not (sp.issparse(f) or isinstance(f, np.ndarray)) for f in nodes]
    if any(is_list):
        if not all(is_list):
            i = is_list.index(not is_list[0])
            kinds = ["an array or sparse matrix", "a list"]
            raise ValueError(f"sample {i}: node features are {kinds[is_list[i]]} but sample 0's "
                             f"are {kinds[is_list[0]]}: use one kind of container")
        stacked = [node for f in nodes for node in f]
    elif any(sp.issparse(f) for f in nodes):
        stacked = sp.vstack(nodes, format="csr")
    else:
        try:
            stacked = np.concatenate(nodes)
        except ValueError as exc:
            raise ValueError(f"node features of different samples cannot be stacked ({exc})") \
                from None
    return stacked, offsets


def _check_y(y, offsets):
    """The samples' label arrays, checked against their node counts (None without y)."""
    if y is None:
        return None
    if len(y) != offsets.shape[0] - 1:
        raise ValueError(f"X has {offsets.shape[0] - 1} samples but y has {len(y)}")
    parts = [np.asarray(yi) for yi in y]
    for i, yi in enumerate(parts):
        if yi.ndim != 1 or yi.shape[0] != offsets[i + 1] - offsets[i]:
            raise ValueError(f"sample {i}: labels of shape {yi.shape} for "
                             f"{offsets[i + 1] - offsets[i]} nodes")
    return parts


def _stack_y(parts):
    """The node labels of :func:`_check_y`'s arrays, stacked for the transformer."""
    return None if parts is None else np.concatenate(parts)


def _split(out, offsets):
    """Cut the transformer's output back into one block of rows per sample."""
    n_rows = out.shape[0] if hasattr(out, "shape") else len(out)
    if n_rows != offsets[-1]:
        raise ValueError(f"the transformer returned {n_rows} rows for {offsets[-1]} nodes; "
                         "it must transform every node into one row")
    if isinstance(out, np.ndarray):
        return np.split(out, offsets[1:-1])
    if sp.issparse(out):
        out = out.tocsr()
        return _split_csr(out, offsets)
    if hasattr(out, "iloc"):
        out = out.iloc
    bounds = offsets.tolist()
    return [out[lo:hi] for lo, hi in zip(bounds[:-1], bounds[1:])]


def _split_csr(out, offsets):
    """One CSR block per sample, each a view of ``out``'s arrays (only its row
    pointers are new): no copy of the values, as ``np.split`` of an array."""
    data, indices, indptr = out.data, out.indices, out.indptr
    n_cols = out.shape[1]
    cls = type(out)
    sorted_ = bool(out.has_sorted_indices)
    parts = []
    bounds = offsets.tolist()
    for lo, hi in zip(bounds[:-1], bounds[1:]):
        p0, p1 = indptr[lo], indptr[hi]
        # scipy's (data, indices, indptr) constructor copies a view much smaller than
        # its base: build the empty block and give it the views (a valid CSR slice)
        part = cls((hi - lo, n_cols), dtype=data.dtype)
        part.data = data[p0:p1]
        part.indices = indices[p0:p1]
        part.indptr = (indptr[lo:hi + 1] - p0).astype(indptr.dtype, copy=False)
        part.has_sorted_indices = sorted_
        parts.append(part)
    return parts


def _vectorize_dicts(transformer, dicts, fitting):
    """``DictVectorizer``'s ``fit_transform`` (``fitting``) or ``transform`` of a
    list of dicts: the same matrix (without explicitly stored zeros, and with
    int32 indices where sklearn's column permutation leaves int64) and the same
    fitted attributes, or None when the fast path does not apply (sklearn then
    does the work).

    sklearn collects one numpy scalar per value in a Python list (40 bytes
    each) and permutes the columns by fancy indexing (a copy of the matrix):
    on the 4 million entries of CoNLL-2000 chunking, a transient 300 MB.  Here
    the values go into typed arrays (12 bytes an entry) and the columns are
    renumbered in place.  Only string and plain ``int``/``float``/``bool``
    values, float64 output, sparse output; anything else (iterables of
    strings, None, other dtypes) is left to sklearn, as are its errors.
    """
    from array import array

    from sklearn.feature_extraction import DictVectorizer

    t = transformer
    if (type(t) is not DictVectorizer or not t.sparse or t.dtype not in (np.float64, float)
            or not isinstance(dicts, list) or not dicts):
        return None
    if fitting:
        t._validate_params()
        names, vocab = [], {}
    else:
        check_is_fitted(t, ["feature_names_", "vocabulary_"])
        names, vocab = t.feature_names_, t.vocabulary_
    sep = t.separator
    indices = array("i")
    values = array("d")
    indptr = array("q", [0])
    for x in dicts:
        if not isinstance(x, dict):
            return None
        for f, v in x.items():
            if isinstance(v, str):
                name = f"{f}{sep}{v}"
                v = 1.0
            elif isinstance(v, (int, float)):
                name = f
            else:
                return None
            j = vocab.get(name)
            if j is None:
                if not fitting:
                    continue
                j = vocab[name] = len(names)
                names.append(name)
            if v == 0:
                # sklearn stores a False boolean as an explicit zero: a third of the
                # entries of the CoNLL tutorial's features, read by every kernel for
                # nothing (the feature's name is still learned, as sklearn does)
                continue
            indices.append(j)
            values.append(v)
        indptr.append(len(indices))
    indices = np.frombuffer(indices, dtype=np.intc)
    values = np.frombuffer(values, dtype=np.float64)
    indptr = np.frombuffer(indptr, dtype=np.int64)
    if indptr[-1] < np.iinfo(np.int32).max:
        indptr = indptr.astype(np.int32)
    if fitting and t.sort:
        names.sort()
        new = np.empty(len(names), dtype=np.intc)
        for i, name in enumerate(names):
            new[vocab[name]] = i
            vocab[name] = i
        indices = new[indices]
    X = sp.csr_array((values, indices, indptr), shape=(indptr.shape[0] - 1, len(vocab)),
                     copy=False)
    X.sort_indices()
    if fitting:
        t.feature_names_ = names
        t.vocabulary_ = vocab
    try:
        from sklearn.utils import _align_api_if_sparse
    except ImportError:     # sklearn < 1.8 returns sparse matrices
        return sp.csr_matrix(X)
    return _align_api_if_sparse(X)


# the feature -> value -> column tables of fitted DictVectorizers, built on first use and
# dropped with the vectoriser (nothing is stored on the estimators, nor pickled)
_TABLES = weakref.WeakKeyDictionary()
# the code of a number whose column the table does not say (looked up by name), and of an
# item the general path must code
_MISS = -2
_OTHER = -3
_NUMBER_TYPES = (bool, int, float)
_INT32_MAX = 2 ** 31 - 1
_NO_VALUES = np.zeros(0)
# whether sklearn's configuration chooses the sparse class (sklearn >= 1.8)
_SPARSE_INTERFACE = hasattr(sklearn.utils, "_align_api_if_sparse")


class _Values(dict):
    """``value -> column`` of one feature (-1: no entry), read as ``table[f][v]`` with no
    Python call for a value it holds.  A value it does not hold is a string never seen
    with this feature in ``fit`` (-1), a number (:data:`_MISS`: coded where its value is
    known) or anything else (:data:`_OTHER`: the general path codes it, or raises as
    sklearn does)."""

    __slots__ = ()

    def __missing__(self, v):
        if type(v) is str:
            return -1
        return _MISS if type(v) in _NUMBER_TYPES else _OTHER


class _OtherKeys(dict):
    """The values of a key that is not a string: every item goes to the general path."""

    __slots__ = ()

    def __missing__(self, v):
        return _OTHER


# the values of a string feature never seen in fit, and of a key that is not a string
# (empty: only read)
_UNSEEN = _Values()
_OTHER_KEY = _OtherKeys()


def _pair_table(t):
    """The ``feature -> _Values`` table of a fitted ``DictVectorizer`` ``t``, so that a
    token's items are coded by two look-ups each in dicts of string keys (CPython's
    fastest path), with no name to build and no tuple to hash: every way to cut a
    vocabulary name ``f + separator + v`` into a string feature and its value, and the
    values ``True`` (column) and ``False`` (-1: no entry) of the names without a
    separator, which numbers and booleans use (``1``, ``1.0``, ``0`` and ``0.0`` equal
    them, and so take the same codes).  What it does not hold is coded as
    :func:`_vectorize_dicts` codes it."""
    vocab, sep = t.vocabulary_, t.separator
    entry = _TABLES.get(t)
    if entry is not None and entry[0] is vocab and entry[1] == len(vocab) and entry[2] == sep:
        return entry[3]
    table = {}
    n = len(sep)
    for name, j in vocab.items():
        if not isinstance(name, str):
            continue
        j = int(j)
        i = name.find(sep)
        if i < 0:
            values = table.setdefault(name, _Values())
            values[True] = j
            values[False] = -1
        while i >= 0:
            table.setdefault(name[:i], _Values())[name[i + n:]] = j
            i = name.find(sep, i + 1)
    _TABLES[t] = (vocab, len(vocab), sep, table)
    return table


def _sparse_type():
    """The sparse class sklearn's configuration makes transformers return."""
    if not _SPARSE_INTERFACE:     # sklearn < 1.8 returns sparse matrices
        return sp.csr_matrix
    return sp.csr_array if get_config().get("sparse_interface") == "sparray" else sp.csr_matrix


# per CSR class, the attributes of a valid matrix other than its arrays and shape
_CSR_STATE = {}
_CSR_ARRAYS = ("_shape", "data", "indices", "indptr")


def _new_csr(cls, data, indices, indptr, shape):
    """``cls((data, indices, indptr), shape=shape)`` for arrays already known to form a
    canonical CSR matrix (sorted indices): scipy's constructor checks them again, which
    costs more than the rest of a one-sentence transform.  The first matrix of a class
    is made by the constructor, and lends its other attributes to the next ones."""
    state = _CSR_STATE.get(cls)
    if state is None or indices.dtype != np.int32 or indptr.dtype != np.int32:
        m = cls((data, indices, indptr), shape=shape, copy=False)
        m.has_sorted_indices = True
        if (set(m.__dict__) <= {*_CSR_ARRAYS, "maxprint", "_has_sorted_indices"}
                and m.shape == shape and m.indices.dtype == indices.dtype
                and m.indptr.dtype == indptr.dtype and m.data.dtype == data.dtype):
            _CSR_STATE[cls] = {k: v for k, v in m.__dict__.items() if k not in _CSR_ARRAYS}
        return m
    m = cls.__new__(cls)
    m.__dict__.update(state)
    m.data, m.indices, m.indptr, m._shape = data, indices, indptr, shape
    return m


def _csr_blocks(out, offsets):
    """:func:`_split_csr` of a canonical CSR matrix, each block made by :func:`_new_csr`."""
    data, indices, indptr = out.data, out.indices, out.indptr
    cls = type(out)
    n_cols = out.shape[1]
    bounds = offsets.tolist()
    parts = []
    for lo, hi in zip(bounds[:-1], bounds[1:]):
        p0, p1 = indptr[lo], indptr[hi]
        parts.append(_new_csr(cls, data[p0:p1], indices[p0:p1], indptr[lo:hi + 1] - p0,
                              (hi - lo, n_cols)))
    return parts


def _transform_dicts_fast(t, X):
    """:meth:`NodeTransformer.transform` of chains of feature dicts by a fitted
    ``DictVectorizer`` (sparse, float64): the same list of CSR blocks, from two dict
    look-ups per item and one compiled pass, or None when the general path must answer
    (other input, types or transformers; items sharing a column).

    Nothing is scanned ahead: whatever the table cannot code exactly (a key that is not
    a string, a value of another type, a token that is not a mapping) shows as a code or
    an error of the look-ups themselves, and sends the whole call to the general path."""
    from sklearn.feature_extraction import DictVectorizer

    if (type(t) is not DictVectorizer or not t.sparse or t.dtype not in (np.float64, float)
            or type(X) is not list or not X or not isinstance(t.separator, str)
            or not t.separator or not hasattr(t, "vocabulary_")):
        return None
    if len(X) == 1:
        if type(X[0]) is not list:
            return None
        tokens = X[0]
    else:
        if set(map(type, X)) != {list}:
            return None
        tokens = list(chain.from_iterable(X))
    if not tokens:
        return None
    table = _pair_table(t)
    try:
        try:
            codes = [table[f][v] for tok in tokens for f, v in tok.items()]
        except KeyError:
            # a feature fit never saw, or a key that is not a string: no vocabulary name
            # starts with a string one and a separator, so its strings have no column
            # (its numbers are looked up by name: "a=b" may be a number's own name)
            get = table.get
            codes = [get(f, _UNSEEN if type(f) is str else _OTHER_KEY)[v]
                     for tok in tokens for f, v in tok.items()]
    except (AttributeError, TypeError):
        # a token without items(), or a value that cannot be a dict key
        return None
    n_items = len(codes)
    if n_items >= _INT32_MAX:
        return None
    coded = np.fromiter(codes, np.int64, n_items)
    lengths = np.fromiter(map(len, tokens), np.int64, len(tokens))
    # (int32 row pointers, as _vectorize_dicts gives below 2 ** 31 entries)
    indptr = np.empty(len(tokens) + 1, np.int32)
    indices, data, status = coded_rows(coded, _NO_VALUES, lengths, indptr)
    if status == -2:
        if _OTHER in codes:
            return None
        # numbers whose columns the table does not say: coded here, with their values
        values = np.ones(n_items)
        vocab = t.vocabulary_
        ends = list(accumulate(lengths.tolist()))
        p = codes.index(_MISS)
        while True:
            tok = bisect_right(ends, p)
            k = p - (ends[tok] - len(tokens[tok]))
            f, v = next(islice(tokens[tok].items(), k, None))
            j = vocab.get(f)
            if j is not None and v == 0:
                j = None
            values[p] = v
            coded[p] = -1 if j is None else j
            try:
                p = codes.index(_MISS, p + 1)
            except ValueError:
                break
        indices, data, status = coded_rows(coded, values, lengths, indptr)
    if status != -1:
        return None
    out = _new_csr(_sparse_type(), data, indices, indptr, (len(tokens), len(t.vocabulary_)))
    if len(X) == 1:
        return [out]
    return _csr_blocks(out, np.cumsum([0, *map(len, X)]))


class NodeTransformer(VersionedState, TransformerMixin, BaseEstimator,
                      auto_wrap_output_keys=None):
    """Fit and apply a transformer to the nodes of all samples together.

    The transformer sees one table: the node features of all samples stacked
    (so a ``StandardScaler`` learns per-feature statistics over all nodes),
    and its output is cut back into samples of the input's structure.  This
    is how feature scaling, PCA or ``DictVectorizer`` go in front of a
    structured model in a ``Pipeline``.

    Parameters
    ----------
    transformer : estimator
        A scikit-learn transformer for tables with one row per node.  It is
        cloned in :meth:`fit`; the fitted clone is ``transformer_``.

    Attributes
    ----------
    transformer_ : estimator
        The fitted clone of ``transformer``.
    n_features_in_ : int
        Number of node features seen in :meth:`fit`; only set when the node
        features are numeric 2-D arrays or sparse matrices.

    Notes
    -----
    ``X`` is given in one of these forms:

    * chains: list of length n_samples of node containers, each an array of
      shape (n_nodes_i, n_features), a sparse matrix of that shape, or a list
      of length n_nodes_i (e.g. a dict per token for ``DictVectorizer``, or a
      string per node for a text vectoriser).  All samples use arrays or
      sparse matrices, or all use lists;
    * graphs: list of length n_samples of tuple (node_features, edges) or
      (node_features, edges, edge_features), with node_features a node
      container as above;
    * one table: array or sparse matrix of shape (n_samples, n_features), the
      multi-label and multiclass format, whose rows are the samples.  The
      transformer is applied to it directly.

    Examples
    --------
    >>> import numpy as np
    >>> from sklearn.preprocessing import StandardScaler
    >>> X = [np.array([[0.0], [2.0]]), np.array([[4.0]])]
    >>> Xt = NodeTransformer(StandardScaler()).fit_transform(X)
    >>> [x.ravel().round(3).tolist() for x in Xt]
    [[-1.225, 0.0], [1.225]]
    """

    def __init__(self, transformer):
        self.transformer = transformer

    def __sklearn_tags__(self):
        tags = super().__sklearn_tags__()
        # Samples are lists of node blocks or graph tuples, not one table: this
        # makes sklearn's common checks skip the tabular tests.
        tags.input_tags.two_d_array = False
        try:
            inner = get_tags(self.transformer)
        except (AttributeError, TypeError, ValueError):
            return tags
        tags.input_tags.sparse = inner.input_tags.sparse
        tags.input_tags.allow_nan = inner.input_tags.allow_nan
        if inner.transformer_tags is not None:
            tags.transformer_tags.preserves_dtype = inner.transformer_tags.preserves_dtype
        return tags

    def _set_n_features(self, stacked):
        if hasattr(self, "n_features_in_"):
            del self.n_features_in_
        numeric = sp.issparse(stacked) or (
            isinstance(stacked, np.ndarray) and stacked.ndim == 2 and stacked.dtype.kind in "biuf")
        if numeric:
            self.n_features_in_ = stacked.shape[1]

    def fit(self, X, y=None):
        """Fit the transformer on the nodes of all samples.

        Parameters
        ----------
        X : list of length n_samples of node containers or of graph tuples, \
                or array of shape (n_samples, n_features)
            See the class notes for the accepted forms.
        y : list of length n_samples of array of shape (n_nodes_i,), optional
            Node labels; stacked like the nodes and passed to the
            transformer's ``fit`` (for supervised transformers such as
            ``SelectKBest``).  With a single table ``X``, passed unchanged.

        Returns
        -------
        self : NodeTransformer
        """
        self._fit(X, y, transform=False)
        return self

    def fit_transform(self, X, y=None):
        """Fit the transformer on the nodes of all samples and transform them.

        Equivalent to ``fit(X, y).transform(X)``, but stacks the nodes only
        once (and uses the transformer's own ``fit_transform``).

        Parameters
        ----------
        X, y : see :meth:`fit`.

        Returns
        -------
        Xt : same structure as ``X``
            See :meth:`transform`.
        """
        return self._fit(X, y, transform=True)

    def _fit(self, X, y, transform):
        transformer = clone(self.transformer)
        if _is_tabular(X):
            self._set_n_features(X)
            self.transformer_ = transformer
            if transform:
                return transformer.fit_transform(X, y)
            transformer.fit(X, y)
            return None
        nodes, graph = _unpack(X)
        stacked, offsets = _stack(nodes)
        y_parts = _check_y(y, offsets)
        self._set_n_features(stacked)
        self.transformer_ = transformer
        if not transform:
            transformer.fit(stacked, _stack_y(y_parts))
            return None
        # (DictVectorizer reads no labels: the fast path stacks none; CoNLL-2000's
        # labels come as wide text arrays, 36 MB stacked)
        out = _vectorize_dicts(transformer, stacked, fitting=True)
        if out is None:
            out = transformer.fit_transform(stacked, _stack_y(y_parts))
        return self._rebuild(X, graph, out, offsets)

    def transform(self, X):
        """Transform the nodes of every sample.

        Parameters
        ----------
        X : list of length n_samples of node containers or of graph tuples, \
                or array of shape (n_samples, n_features)
            See the class notes for the accepted forms.

        Returns
        -------
        Xt : list of length n_samples, or the transformer's output
            For chains, a list of the transformed node features, each of
            shape (n_nodes_i, n_output_features): arrays, or CSR matrices if
            the transformer's output is sparse.  For graphs, a list of tuples
            (transformed node features, edges[, edge_features]) whose edges
            and edge features are the very objects of ``X``.  For a single
            table ``X``, the transformer's output as it is.
        """
        if "transformer_" not in self.__dict__:
            check_is_fitted(self)
        if _is_tabular(X):
            return self.transformer_.transform(X)
        fast = _transform_dicts_fast(self.transformer_, X)
        if fast is not None:
            return fast
        nodes, graph = _unpack(X)
        stacked, offsets = _stack(nodes)
        if offsets[-1] == 0:
            # only empty samples (a batch of empty sentences): most transformers refuse
            # an empty table, so build the empty output of the fitted width directly
            return self._rebuild(X, graph, self._empty_output(), offsets)
        out = _vectorize_dicts(self.transformer_, stacked, fitting=False)
        if out is None:
            out = self.transformer_.transform(stacked)
        return self._rebuild(X, graph, out, offsets)

    def _empty_output(self):
        t = self.transformer_
        if not hasattr(t, "get_feature_names_out"):
            raise ValueError("every sample is empty and the transformer cannot say its "
                             "output width (it has no get_feature_names_out)")
        n_out = len(t.get_feature_names_out())
        return sp.csr_matrix((0, n_out)) if getattr(t, "sparse", False) else np.zeros((0, n_out))

    @staticmethod
    def _rebuild(X, graph, out, offsets):
        parts = _split(out, offsets)
        if not graph:
            return parts
        return [(part, *sample[1:]) for part, sample in zip(parts, X)]

    @available_if(lambda self: hasattr(self.transformer, "get_feature_names_out"))
    def get_feature_names_out(self, input_features=None):
        """Output feature names, from the fitted transformer.

        Parameters
        ----------
        input_features : array-like of str, optional
            Passed to the transformer's ``get_feature_names_out``.

        Returns
        -------
        feature_names_out : ndarray of str
        """
        check_is_fitted(self)
        return self.transformer_.get_feature_names_out(input_features)
