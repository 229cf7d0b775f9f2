"""CSR rows from the column codes of feature dicts, in one compiled pass."""

import numpy as np

from ._jit import jit


@jit
def coded_rows(codes, values, lengths, indptr):
    """The CSR rows of items coded by column.

    Row ``r`` owns the next ``lengths[r]`` items of ``codes``; an item of code ``j >= 0``
    is the entry ``(r, j)`` of value ``values[p]`` (1.0 when ``values`` is empty), a
    negative code is no entry.  Writes the row pointers ``indptr`` (n_rows + 1,) and
    returns ``(indices, data, status)``: the entries, columns increasing within each row,
    and -1; or nothing and -2 if a code is below -1 (an item the caller codes itself
    first); or the first row where two items share a column (whose order scipy's sort
    leaves unspecified: the caller then takes the general path).
    """
    nnz = 0
    for p in range(codes.shape[0]):
        if codes[p] >= 0:
            nnz += 1
        elif codes[p] < -1:
            return np.empty(0, np.int32), np.empty(0), -2
    indices = np.empty(nnz, np.int32)
    data = np.empty(nnz)
    ones = values.shape[0] == 0
    p = 0
    q = 0
    indptr[0] = 0
    for r in range(lengths.shape[0]):
        start = q
        for _ in range(lengths[r]):
            c = codes[p]
            if c >= 0:
                x = 1.0 if ones else values[p]
                # insertion into the sorted row: a row holds a few dozen entries
                k = q
                while k > start and indices[k - 1] > c:
                    indices[k] = indices[k - 1]
                    data[k] = data[k - 1]
                    k -= 1
                if k > start and indices[k - 1] == c:
                    return indices, data, r
                indices[k] = c
                data[k] = x
                q += 1
            p += 1
        indptr[r + 1] = q
    return indices, data, -1
