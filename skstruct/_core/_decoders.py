"""The registry of MAP decoders the learners' oracles dispatch on.

Every sample of a design carries the code of the decoder that solves its
(loss-augmented) MAP problem.  Kernels compare against these module-level
constants (numba freezes them at compile time), Python code uses the names.
Adding a decoder: a kernel in :mod:`skstruct.inference`, a code here, and one
branch in :func:`skstruct.models._oracle.decode`.
"""

VITERBI = 0   # chains: Viterbi
TREE = 1      # forests: exact max-sum
EXACT = 2     # tiny loopy graphs: enumeration
TRWS = 3      # loopy graphs: TRW-S (approximate, warm-started messages)
GRAPHCUT = 4  # supermodular tables on any graph: a minimum cut (exact)

DECODERS = {"viterbi": VITERBI, "tree": TREE, "exact": EXACT, "trws": TRWS,
            "graphcut": GRAPHCUT}
NAMES = {code: name for name, code in DECODERS.items()}
# decoders whose answer is the exact maximiser
EXACT_DECODERS = (VITERBI, TREE, EXACT, GRAPHCUT)
