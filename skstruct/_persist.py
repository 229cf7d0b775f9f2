"""Saving fitted estimators without pickle: the skstruct types a skops file may hold.

:func:`trusted_types` lists the skstruct classes that a fitted estimator (or a
``Pipeline`` around one) stores, by the names ``skops.io`` gives them, so that a
file can be loaded with ``skops.io.load(path, trusted=skstruct.trusted_types())``
instead of trusting every type the file names.
"""


def _persisted_classes():
    """Every skstruct class whose instances a fitted estimator holds.

    The estimators, the models they fit a clone of into ``model_``, the energies
    of ``NonLocalCRF`` (``energy`` and ``energy_``) and the pipeline step
    ``NodeTransformer``.  Base classes (``StructuredModel``, ``DesignModel``,
    ``Energy``) are not listed: a file holds instances of concrete classes, and a
    model of your own is yours to trust.  Imported here, not at module level, so
    that ``import skstruct`` stays cheap.
    """
    from ._approx import ApproxStructuredPredictor
    from ._crf import CRF
    from ._latent import LatentStructuredSVM
    from ._nonlocal import NonLocalCRF
    from ._perceptron import StructuredPerceptron
    from ._svm import StructuredSVM
    from .energies import LinearMeasurements, NearestStatistic, PoissonCounts
    from .models import (
        ChainModel,
        GraphModel,
        GridModel,
        HiddenNodesModel,
        HiddenStatesModel,
        MatchingModel,
        MulticlassModel,
        MultiLabelModel,
    )
    from .preprocessing import NodeTransformer

    return (ApproxStructuredPredictor, CRF, LatentStructuredSVM, NonLocalCRF, StructuredPerceptron,
            StructuredSVM, ChainModel, GraphModel, GridModel, HiddenNodesModel, HiddenStatesModel,
            MatchingModel, MulticlassModel, MultiLabelModel,
            LinearMeasurements, NearestStatistic, PoissonCounts, NodeTransformer)


def trusted_types():
    """Names of the skstruct types to trust when loading a fitted estimator with skops.

    A file written by ``skops.io.dump`` records every object by its type, and
    ``skops.io.load`` builds only the types it is told to trust (NumPy, SciPy
    and scikit-learn types, and Python's containers and numbers, are trusted by
    skops itself).  Every fitted skstruct estimator holds only such objects and
    instances of the classes listed here: plain data (parameters, weights,
    classes, label graphs), never compiled code, functions or solver state.

    Returns
    -------
    names : list of str
        Sorted ``"module.ClassName"`` names, as ``skops.io.get_untrusted_types``
        reports them: the six estimators, the built-in models, the energies of
        :class:`~skstruct.NonLocalCRF` and
        :class:`~skstruct.preprocessing.NodeTransformer`.

    Notes
    -----
    Pass the list as ``trusted`` to ``skops.io.load``.  Any other type the file
    names is still refused: check ``skops.io.get_untrusted_types(file=path)``
    before loading a file from elsewhere.  A model of your own, or a function
    given as a parameter (``counting_numbers`` of
    :class:`~skstruct.ApproxStructuredPredictor`), is named in the file by its
    module and name: add that name to the list only if you trust the module.
    A lambda or a nested function cannot be loaded at all, as it has no
    importable name.

    Examples
    --------
    >>> import skstruct
    >>> names = skstruct.trusted_types()
    >>> "skstruct._svm.StructuredSVM" in names
    True
    >>> [n for n in names if n.endswith("ChainModel")]
    ['skstruct.models._models.ChainModel']
    """
    # skops names an object by the module that defines its class
    return sorted(f"{cls.__module__}.{cls.__name__}" for cls in _persisted_classes())
