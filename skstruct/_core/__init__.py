"""The core every other layer builds on, and which imports nothing of skstruct.

* :class:`GraphBatch`: a batch of graphs packed into flat CSR-style arrays,
  the one format every kernel reads; :func:`segment_sum` over its offsets;
* :mod:`._packing`: validation of user samples (chains, graphs, edge
  features, labels of any type) and their packing into a batch;
* :mod:`._validation`: checks of scores, edges and numbers shared by the
  inference API, the models and the estimators, and the thread settings;
* :mod:`._params`: the declarative parameter tables of the estimators;
* :mod:`._decoders`: the registry of inference methods (names, codes, capabilities);
* :mod:`._jit`: the one place that sets numba's compilation flags.
* :mod:`._pool`: the threads a batch kernel's chunks of samples run on.

Importing this package imports neither numba nor scipy (the inference API
must stay cheap to import): the packing of samples, which needs
``scipy.sparse``, is imported from :mod:`._packing` where it is used.
"""

from ._batch import GraphBatch, segment_sum
from ._validation import (
    check_edges,
    check_pairwise,
    check_psi,
    check_unary,
    n_chunks,
    n_threads,
)

__all__ = [
    "GraphBatch",
    "check_edges",
    "check_pairwise",
    "check_psi",
    "check_unary",
    "n_chunks",
    "n_threads",
    "segment_sum",
]
