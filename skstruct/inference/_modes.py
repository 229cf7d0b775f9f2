"""The modes the inference kernels are called with, named once.

Kernels receive them as plain integers (numba compiles one version for all of them);
callers pass these names, never the numbers.
"""

# what a pass over a tree or chain computes
SUM_PRODUCT = 0     # log partitions and marginals
MAX_SUM = 1         # best scores, labellings and max-marginals

# how far a tree pass goes
UPWARD = 0          # leaves to roots: the scores only
BOTH_WAYS = 1       # and back: the (max-)marginals of every node

# which edge marginals a sum-product pass writes
EDGES_NONE = 0      # none
EDGES_EACH = 1      # every edge's (K, K) marginal, by edge
EDGES_PER_TABLE = 2  # summed per pairwise table (per thread chunk)

# the pairwise tables' shapes a caller may declare (``structure=``; see _shapes.py)
STRUCTURES = ("auto", "dense", "potts", "truncated_linear", "truncated_quadratic")
