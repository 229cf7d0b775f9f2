"""Where an estimator finds the code that fits or predicts on a dask Bag.

The estimators do not import ``skstruct.distributed``: it sits above them (its
drivers call the estimators' fitting steps).  When imported (``import skstruct``
imports it) it registers its operations here under a name, and an estimator
handed a Bag looks its operation up: its own class name for ``fit``,
``"map_predict"`` and ``"score"`` for the prediction methods.
"""

_BAG = {}


def register_bag(name, operation):
    """Register ``operation`` as the Bag backend's ``name``.

    Parameters
    ----------
    name : str
        An estimator's class name (its ``fit`` on Bags, called as
        ``operation(estimator, X, y)``), ``"map_predict"`` (called as
        ``operation(estimator, X, method, **kwargs)``) or ``"score"`` (called as
        ``operation(estimator, X, y)``).
    operation : callable
    """
    _BAG[name] = operation


def bag_operation(name):
    """The Bag backend's operation registered under ``name``.

    Raises
    ------
    ValueError
        When nothing is registered under ``name``.
    """
    try:
        return _BAG[name]
    except KeyError:
        raise ValueError(f"{name} has no dask Bag support (import skstruct.distributed, which "
                         "import skstruct does, registers it)") from None
