"""What the batched kernels' callers share: the per-node / per-edge scratch arrays,
and the check that a minimum cut decodes the given tables exactly."""

from typing import NamedTuple

import numpy as np

from .._core._decoders import CHAIN, EXACT, EXPANSION, GRAPHCUT, ILP, QPBO, SWAP, TREE
from ._submodular import supermodular_violation

# the decoders ``decode`` (skstruct/models/_oracle.py) compiles without the others
COMMON_DECODERS = (CHAIN, TREE, EXACT)
# the decoders compiled together, each group only for designs that use it (see Decoders)
CUT_DECODERS = (GRAPHCUT, ILP, QPBO, EXPANSION, SWAP)
_GROUPS = {"chain": (CHAIN,), "tree": (TREE,), "exact": (EXACT,), "cut": CUT_DECODERS}


class Decoders(NamedTuple):
    """Which groups of decoders a design's samples use: each field a one-element array
    where some sample uses the group, else None.  :func:`~._oracle.decode` branches on
    them as arguments, so numba compiles the kernel once per combination and prunes the
    branches of the groups set to None, leaving their code out of the kernel.  The
    :class:`OracleScratch` holds them as its fields ``dec_chain`` ... ``dec_trws`` (numba's
    parallel loops take no tuple nested in a tuple), and the kernels rebuild the bundle
    (:func:`~._oracle.decoders_in`)."""

    chain: np.ndarray      # Viterbi
    tree: np.ndarray       # tree max-sum
    exact: np.ndarray      # enumeration
    cut: np.ndarray        # a minimum cut, the ILP, QPBO or the move-making cuts
    trws: np.ndarray       # TRW-S: every other decoder's samples


def decoders_of(kind):
    """The :class:`OracleScratch` fields ``dec_*`` of the decoder codes ``kind`` (one per
    sample), as a dict."""
    used = set(np.unique(kind).tolist())
    flags = {"dec_" + name: (np.zeros(1) if used & set(codes) else None)
             for name, codes in _GROUPS.items()}
    other = used - {c for codes in _GROUPS.values() for c in codes}
    return dict(flags, dec_trws=np.zeros(1) if other else None)


class Surrogates(NamedTuple):
    """Which surrogates other than margin rescaling a solver asks the oracle for: a
    one-element array for its own, None for the others, whose code numba then leaves out
    of the oracle (see :class:`Decoders`).  The :class:`OracleScratch` holds them as its
    fields ``sur_slack``, ``sur_poslearn`` and ``sur_lp``."""

    slack: np.ndarray
    poslearn: np.ndarray
    lp: np.ndarray


def surrogates_of(surrogate):
    """The :class:`OracleScratch` fields ``sur_*`` of a solver of ``surrogate`` (a name of
    ``SURROGATES``), as a dict."""
    return {"sur_" + name: (np.zeros(1) if name == surrogate else None)
            for name in Surrogates._fields}


# every group: the kernel compiled with every decoder
ALL_DECODERS = {"dec_" + name: np.zeros(1) for name in Decoders._fields}


class OracleScratch(NamedTuple):
    """The shared scratch arrays of the oracle kernels (see :func:`scratch`), as the
    compiled kernels read them."""

    U: np.ndarray          # (N, K) node scores
    Ua: np.ndarray         # (N, K) loss-augmented node scores
    PE: np.ndarray         # (E, K, K) per-edge tables ((1, K, K) when tied)
    msgs: np.ndarray       # (2 E, K) TRW-S / MPLP messages, warm-started across calls;
    #                        None when every sample is a chain, a forest or enumerated
    dec_chain: np.ndarray  # the groups of decoders the samples use (see Decoders)
    dec_tree: np.ndarray
    dec_exact: np.ndarray
    dec_cut: np.ndarray
    dec_trws: np.ndarray
    sur_slack: np.ndarray  # the surrogates asked for besides margin rescaling (Surrogates)
    sur_poslearn: np.ndarray
    sur_lp: np.ndarray
    bp: np.ndarray         # (N, K) Viterbi backpointers
    lab: np.ndarray        # (N,) int64 labels decoded
    Sc: np.ndarray         # (N, Kp) a corner's node coefficients
    belief: np.ndarray     # (N, K) tree max-sum beliefs
    up: np.ndarray         # (N, K) tree max-sum upward messages


def scratch(design, decode_only=False, surrogate="margin"):
    """The shared per-node / per-edge scratch arrays of the kernels, an
    :class:`OracleScratch`.

    Arrays a kernel will not touch for this design are allocated with one row
    (message arrays without TRW-S or MPLP samples, tree beliefs without tree
    samples, the learner's arrays when only decoding).  When every sample is
    decoded by Viterbi, tree max-sum or enumeration, ``msgs`` is None: the kernels
    compiled for that type leave the other decoders out, which shortens a first
    fit's compilation by their share.  Likewise the fields ``dec_*`` (see
    :class:`Decoders`) name the groups of decoders in use, and the kernels leave the others
    out; ``surrogate`` (a name of the oracle's ``SURROGATES``) is the one surrogate the
    kernels will be asked for besides margin rescaling, and the others are left out too
    (see :class:`Surrogates`).
    """
    b = design.batch
    K = design.n_classes
    N = b.n_nodes
    E = b.n_edges
    need_tree = design.uses_forest_order
    need_msgs = design.uses_messages
    nl = 1 if decode_only else N
    return OracleScratch(
        U=np.zeros((N, K)), Ua=np.zeros((nl, K)),
        PE=np.zeros((1, K, K)) if design.tied else np.zeros((E, K, K)),
        msgs=(None if np.isin(design.kind, COMMON_DECODERS).all()
              else np.zeros((2 * E if need_msgs else 1, K))),
        **decoders_of(design.kind), **surrogates_of(surrogate),
        bp=np.zeros((N, K), np.uint8 if K <= 256 else np.int64), lab=np.zeros(N, np.int64),
        Sc=np.zeros((nl, design.n_columns)),
        belief=np.zeros((N if need_tree else 1, K)), up=np.zeros((N if need_tree else 1, K)))


def check_cuttable(design, P):
    """Refuse tables a minimum cut cannot decode exactly, when the design cuts:
    weights from outside the learners (a user's ``w``, a warm start from
    another model) would otherwise be decoded silently wrong."""
    if not np.any(design.kind == GRAPHCUT):
        return
    bad, f = supermodular_violation(P)
    if bad > 1e-9 * (1.0 + float(np.abs(P).max(initial=0.0))):
        raise ValueError(f"pairwise table {f} is not supermodular in the label order (a 2 x 2 "
                         f"block misses by {bad:.3g}); graph-cut decoding needs "
                         "P[a, b] + P[a+1, b+1] >= P[a, b+1] + P[a+1, b]")
