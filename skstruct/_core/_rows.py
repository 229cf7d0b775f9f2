"""CSR rows from the column codes of feature dicts, in one compiled pass."""

from ._jit import jit


@jit
def coded_rows(codes, values, lengths, indptr, indices, data):
    """The CSR rows of items coded by column.

    Row ``r`` owns the next ``lengths[r]`` items of ``codes`` and ``values``; an
    item of code ``j >= 0`` is the entry ``(r, j)`` of value ``values[p]``, a negative
    code is no entry.  Writes ``indptr`` (n_rows + 1,) and the first ``indptr[-1]``
    entries of ``indices`` and ``data``, columns increasing within each row.  Returns
    -1, or the first row where two items share a column (whose order scipy's sort
    leaves unspecified: the caller then takes the general path).
    """
    p = 0
    q = 0
    indptr[0] = 0
    for r in range(lengths.shape[0]):
        start = q
        for _ in range(lengths[r]):
            c = codes[p]
            if c >= 0:
                # insertion into the sorted row: a row holds a few dozen entries
                k = q
                while k > start and indices[k - 1] > c:
                    indices[k] = indices[k - 1]
                    data[k] = data[k - 1]
                    k -= 1
                if k > start and indices[k - 1] == c:
                    return r
                indices[k] = c
                data[k] = values[p]
                q += 1
            p += 1
        indptr[r + 1] = q
    return -1
