"""The inference methods of the registry (:mod:`skstruct._core._decoders`), as users
see them, and their runners."""

from importlib import import_module
from typing import NamedTuple

from .._core._decoders import METHODS


class Capabilities(NamedTuple):
    """What an inference method can do (:func:`available_methods`).

    Attributes
    ----------
    exact : bool
        Whether it returns an optimal labelling (exact marginals) on every graph it
        accepts; otherwise it is an approximation.
    graphs : {"chain", "forest", "any"}
        The graphs it accepts: chains (edges ``(i, i + 1)`` in node order), forests
        (no cycle), or any graph.  Others raise a ``ValueError`` naming the sample.
    bound : bool
        Whether ``return_bound=True`` gives an upper bound on the best score (the
        optimum itself for an exact method).  Without one the bound reported is
        ``+inf``.
    constraints : {"any", "unary", "none"}
        Which ``-inf`` scores it honours as hard constraints: ``"any"`` (forbidden
        labels and forbidden label pairs), ``"unary"`` (forbidden labels only, e.g.
        clamped nodes; its pairwise tables must be finite, or are refused).  An exact
        method that honours a constraint never returns a labelling of score ``-inf``
        when a feasible one exists; an approximate one may miss a feasible labelling,
        which it reports (``InferenceInfo.feasible`` false and an
        ``InfeasibilityWarning``).
    map : bool
        Available as ``method=`` of :func:`map_inference` and :func:`map_batch`.
    marginals : bool
        Available as ``method=`` of :func:`marginal_inference` and
        :func:`marginals_batch`.
    decoder : bool
        Available as ``inference_method`` of the built-in models (the learners'
        loss-augmented decoding).
    summary : str
        What it is.
    """

    exact: bool
    graphs: str
    bound: bool
    constraints: str
    map: bool
    marginals: bool
    decoder: bool
    summary: str


def available_methods():
    """The inference methods of :mod:`skstruct.inference` and what each can do.

    ``method="auto"`` is not one of them: it picks, per sample, ``"chain"`` on
    chains, ``"tree"`` on other forests and ``"trws"`` (MAP) or ``"loopy"``
    (marginals) on graphs with cycles.

    Returns
    -------
    methods : dict of str to Capabilities
        Method name (the ``method=`` argument) to its :class:`Capabilities`.

    Examples
    --------
    >>> from skstruct.inference import available_methods
    >>> methods = available_methods()
    >>> methods["trws"].exact, methods["trws"].bound
    (False, True)
    >>> sorted(name for name, m in methods.items() if m.exact and m.graphs == "any")
    ['exact', 'graphcut', 'ilp']
    """
    return {name: Capabilities(m.exact, m.graphs, m.bound, m.constraints, m.map is not None,
                               m.marginals is not None, m.decoder, m.summary)
            for name, m in METHODS.items()}


def runner(name, task):
    """The runner of method ``name`` for ``task`` (``"map"`` or ``"marginals"``)."""
    module, function = getattr(METHODS[name], task).split(":")
    return getattr(import_module(f".{module}", __package__), function)
