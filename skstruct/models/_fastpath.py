"""Prediction on chains in one compiled call: validate, pack and decode.

A call of ``predict`` on a sentence or two spends most of its time outside the
decoder: the samples are validated and packed into a :class:`~._design.Design` in many
small numpy steps, each a few microseconds, before a Viterbi pass of a few microseconds.
For the commonest case (a :class:`~._models.ChainModel` without extra node features, its
samples CSR matrices or float64 arrays) the kernels here check every number the general
path checks (row pointers, column range, finite and not overflowing values) and decode the
samples in the same compiled call, through the very kernel of the general path
(:func:`~._chain.chain_oracle`), so the labels are the general path's.

They answer only for input they can read exactly as the general path does; anything else
(an explicitly stored zero, unsorted or repeated columns, a NaN, another dtype) returns a
status that sends the call to the general path, which raises its own error naming the
sample, or packs the input its own way.
"""

import numpy as np

from .._core._jit import jit
from .._core._packing import MAX_FEATURE
from ._chain import chain_oracle
from ._models import ChainModel

# statuses of the kernels: the samples are valid (the labels are written), or the
# general path must answer
OK = -1


@jit
def _decode_serial(node_offsets, xdata, xind, xptr, W, P, out):
    """Viterbi labels of every chain into ``out``, one sample after another (the
    arithmetic of :func:`~._chain.chain_pass` at zero loss weights)."""
    S = node_offsets.shape[0] - 1
    N = node_offsets[S]
    K = W.shape[1]
    M = 1
    for s in range(S):
        M = max(M, node_offsets[s + 1] - node_offsets[s])
    U = np.empty((M, K))
    fwd = np.empty((M, K))
    lab = np.empty(M, np.int64)
    best = np.empty(K)
    xrow = np.arange(N)
    xoff = np.zeros(N, np.int64)
    y = np.zeros(N, np.int64)
    lw = np.zeros(N)
    for s in range(S):
        n0 = node_offsets[s]
        n1 = node_offsets[s + 1]
        if n1 == n0:
            continue
        chain_oracle(n0, n1, xdata, xind, xptr, xrow, xoff, y, lw, W, P, U, fwd, lab, best)
        for t in range(n1 - n0):
            out[n0 + t] = lab[t]


@jit
def _check_rows(data, indices, indptr, ip, base, m, n_features, xptr, x0):
    """Check the ``m`` rows of one CSR sample, whose row pointers (from 0) are
    ``indptr[ip:ip + m + 1]`` and entries ``data[base:]``, ``indices[base:]``, and write
    their global row pointers into ``xptr[x0 + 1:x0 + m + 1]``; False at the first
    malformed row pointer, column out of range or not strictly increasing in its row,
    stored zero, NaN or value above ``MAX_FEATURE``."""
    if indptr[ip] != 0:
        return False
    for r in range(m):
        a = indptr[ip + r]
        b = indptr[ip + r + 1]
        if b < a:
            return False
        prev = -1
        for p in range(base + a, base + b):
            j = indices[p]
            x = data[p]
            if j <= prev or j >= n_features or x == 0.0 or not abs(x) <= MAX_FEATURE:
                return False
            prev = j
        xptr[x0 + r + 1] = base + b
    return True


@jit
def csr_one_labels(data, indices, indptr, n_features, W, P):
    """:func:`csr_chain_labels` of one sample given as its own CSR arrays: returns
    ``(status, labels)``."""
    m = indptr.shape[0] - 1
    out = np.zeros(m, np.int64)
    xptr = np.empty(m + 1, np.int64)
    xptr[0] = 0
    if indptr[m] != data.shape[0] or not _check_rows(data, indices, indptr, 0, 0, m,
                                                     n_features, xptr, 0):
        return 0, out
    node_offsets = np.zeros(2, np.int64)
    node_offsets[1] = m
    _decode_serial(node_offsets, data, indices, xptr, W, P, out)
    return OK, out


@jit
def csr_chain_labels(data, indices, indptr, node_offsets, nnz_offsets, n_features, W, P,
                     decode, xptr, out):
    """Check the CSR blocks of chain samples, concatenated, and decode them.

    Sample ``s`` has rows ``node_offsets[s]:node_offsets[s + 1]``, its entries at
    ``nnz_offsets[s]:nnz_offsets[s + 1]`` of ``data`` and ``indices``, and its own row
    pointers (from 0) at ``indptr[node_offsets[s] + s:node_offsets[s + 1] + s + 1]``.
    Writes the global row pointers ``xptr`` (N + 1,) and, with ``decode``, the Viterbi
    labels ``out`` (N,).  Returns :data:`OK`, or the first sample the general path must
    read: malformed row pointers, a column out of range, columns not strictly increasing
    in a row, a stored zero, a NaN or a value above ``MAX_FEATURE``.
    """
    S = node_offsets.shape[0] - 1
    xptr[0] = 0
    for s in range(S):
        n0 = node_offsets[s]
        m = node_offsets[s + 1] - n0
        base = nnz_offsets[s]
        ip = n0 + s
        if indptr[ip + m] != nnz_offsets[s + 1] - base or not _check_rows(
                data, indices, indptr, ip, base, m, n_features, xptr, n0):
            return s
    if decode:
        _decode_serial(node_offsets, data, indices, xptr, W, P, out)
    return OK


@jit
def dense_chain_labels(X, node_offsets, store_all, W, P, decode, xdata, xind, xptr, out):
    """Check the stacked dense node features ``X`` (N, F) of chain samples, store them
    as the general path does (every entry with ``store_all``, else the non-zero ones,
    in column order) into ``xdata``, ``xind``, ``xptr``, and with ``decode`` write the
    Viterbi labels into ``out``.  Returns :data:`OK`, or the first sample holding a NaN
    or a value above ``MAX_FEATURE`` (the general path names it)."""
    S = node_offsets.shape[0] - 1
    F = X.shape[1]
    q = 0
    xptr[0] = 0
    # checked as they are copied: one read of X (a copy cut short by a bad value is not
    # used; ``xdata`` holds every non-zero entry, NaN included, so it never overflows)
    for s in range(S):
        for v in range(node_offsets[s], node_offsets[s + 1]):
            for j in range(F):
                x = X[v, j]
                if not abs(x) <= MAX_FEATURE:
                    return s
                if store_all or x != 0.0:
                    xdata[q] = x
                    xind[q] = j
                    q += 1
            xptr[v + 1] = q
    if decode:
        _decode_serial(node_offsets, xdata, xind, xptr, W, P, out)
    return OK


def _chunks(node_offsets, n_chunks):
    """:meth:`GraphBatch.chunks` of the chains of ``node_offsets``."""
    S = node_offsets.shape[0] - 1
    n_chunks = max(1, min(int(n_chunks), S))
    targets = np.linspace(0, node_offsets[-1], n_chunks + 1)
    cut = np.searchsorted(node_offsets, targets[1:-1], side="left")
    return np.unique(np.concatenate([[0], cut, [S]])).astype(np.int64)


def _offsets(counts):
    offsets = np.zeros(len(counts) + 1, np.int64)
    np.cumsum(np.array(counts, np.int64), out=offsets[1:])
    return offsets


def _csr_stack(X, n_features):
    """The concatenated arrays of CSR float64 samples, or None when a sample is of
    another kind (the general path reads it)."""
    datas, inds, ptrs, rows = [], [], [], []
    for f in X:
        if type(f) not in _CSR:
            return None
        d, i, p = f.data, f.indices, f.indptr
        n, F = f.shape
        if (F != n_features or d.dtype != np.float64 or d.ndim != 1 or i.ndim != 1
                or i.shape[0] != d.shape[0] or p.ndim != 1 or p.shape[0] != n + 1):
            return None
        datas.append(d)
        inds.append(i)
        ptrs.append(p)
        rows.append(n)
    nnz = _offsets([d.shape[0] for d in datas])
    data, ind, ptr = np.concatenate(datas), np.concatenate(inds), np.concatenate(ptrs)
    return (data, ind.astype(np.int32, copy=False), ptr.astype(np.int64, copy=False),
            _offsets(rows), nnz)


def _dense_stack(X, n_features):
    for f in X:
        if (type(f) is not np.ndarray or f.dtype != np.float64 or f.ndim != 2
                or f.shape[1] != n_features):
            return None
    stack = np.ascontiguousarray(X[0]) if len(X) == 1 else np.concatenate(X)
    return stack, _offsets([f.shape[0] for f in X])


_CSR = ()


def _threads():
    import numba

    return numba.get_num_threads()


def _csr_types():
    global _CSR
    if not _CSR:
        import scipy.sparse as sp

        _CSR = (sp.csr_matrix,) + ((sp.csr_array,) if hasattr(sp, "csr_array") else ())
    return _CSR


def chain_predict(model, X, W, P):
    """Predictions of a fitted :class:`~._models.ChainModel` on the chain samples ``X``
    (a list of CSR float64 matrices, or of float64 arrays) at weights ``W`` (F, K) and
    ``P`` (1, K, K): the list of label arrays the general path returns, or None when
    the general path must answer (another model or input, or input it refuses)."""
    if (type(model) is not ChainModel or model.bias or model.start_end
            or model.inference_method not in ("auto", "chain") or type(X) is not list or not X
            or "param_shapes_" not in model.__dict__):
        return None
    F = model.n_features_
    classes = model.classes_
    K = classes.shape[0]
    if W.shape != (F, K) or P.shape != (1, K, K):
        return None
    W = np.ascontiguousarray(W)
    P0 = np.ascontiguousarray(P[0])
    _csr_types()
    parallel = len(X) > 1 and _threads() > 1
    if type(X[0]) is np.ndarray:
        stacked = _dense_stack(X, F)
        if stacked is None:
            return None
        A, node_offsets = stacked
        N = A.shape[0]
        nnz = np.count_nonzero(A)
        store_all = bool(N > 0 and F > 0 and nnz >= 0.5 * A.size)
        n_max = A.size if store_all else nnz
        xdata = np.empty(n_max)
        xind = np.empty(n_max, np.int32)
        xptr = np.empty(N + 1, np.int64)
        out = np.empty(N, np.int64)
        status = dense_chain_labels(A, node_offsets, store_all, W, P0, not parallel, xdata,
                                    xind, xptr, out)
    elif len(X) == 1:
        f = X[0]
        if type(f) not in _CSR:
            return None
        d, i, p = f.data, f.indices, f.indptr
        n, F1 = f.shape
        if (F1 != F or d.dtype != np.float64 or d.ndim != 1 or i.ndim != 1
                or i.shape[0] != d.shape[0] or p.ndim != 1 or p.shape[0] != n + 1
                or i.dtype.kind not in "iu" or p.dtype.kind not in "iu"):
            return None
        status, out = csr_one_labels(d, i, p, F, W, P0)
        if status != OK:
            return None
        return [classes[out]]
    else:
        stacked = _csr_stack(X, F)
        if stacked is None:
            return None
        xdata, xind, ptr, node_offsets, nnz = stacked
        N = int(node_offsets[-1])
        xptr = np.empty(N + 1, np.int64)
        out = np.empty(N, np.int64)
        status = csr_chain_labels(xdata, xind, ptr, node_offsets, nnz, F, W, P0, not parallel,
                                  xptr, out)
    if status != OK:
        return None
    if parallel:
        from .._core import n_chunks
        from ._chain import chain_pass

        S = node_offsets.shape[0] - 1
        M = int(np.diff(node_offsets).max())
        chain_pass(node_offsets, xdata, xind, xptr, np.arange(N, dtype=np.int64),
                   np.zeros(N, np.int64), np.zeros(N, np.int64), np.zeros(N), W, P0, M,
                   _chunks(node_offsets, n_chunks()), np.zeros(S), np.zeros(S), out)
    labels = classes[out]
    if len(X) == 1:
        return [labels]
    bounds = node_offsets.tolist()
    return [labels[a:b] for a, b in zip(bounds[:-1], bounds[1:])]
