"""Training and prediction on a dask cluster (the ``dask`` extra: ``pip install ".[dask]"``).

The estimators accept a :class:`dask.bag.Bag` of samples for ``X`` (and a Bag
of label arrays, partitioned alike, for ``y``) when a
:class:`dask.distributed.Client` is running.  Each partition is computed and
packed on the worker that holds it, and its state (the packed samples, and
the messages or dual blocks of the algorithm) stays there between
iterations; an iteration sends the weights out and brings back sums.  The
fitted estimator is an ordinary one (numpy weights, picklable, usable
without a cluster).

What is distributed:

- :class:`~skstruct.CRF` (and :class:`~skstruct.NonLocalCRF` without an
  energy): L-BFGS on the summed objective, the local fit's iterates up to the
  order of floating-point sums.
- :class:`~skstruct.ApproxStructuredPredictor`: the messages of every
  partition's samples live on its worker; each iteration sweeps them there
  and gathers the objective and its gradient, and the client takes the
  parameter step (its line-search trials are evaluated on the workers too).
  The local fit's iterates, up to rounding.
- :class:`~skstruct.StructuredSVM` with ``solver="subgradient"``: each
  mini-batch's oracles run on the workers that hold its samples, and the
  client takes the step with their summed subgradient.  The same mini-batches
  and steps as the local fit.
- :class:`~skstruct.StructuredSVM` with ``solver="bcfw"``: a parallel variant.
  In a round, every partition makes one block-coordinate Frank-Wolfe pass
  over its own samples from the current weights, on its worker, on the local
  problem of CoCoA+ (Ma, Smith, Jaggi, Jordan, Richtarik & Takac, "Adding vs.
  Averaging in Distributed Primal-Dual Optimization", ICML 2015): the dual's
  quadratic term counted once per partition, as if every partition moved as
  this one does.  The client adds the partitions' moves and scales the sum by
  the step that maximises the dual along it (in ``[0, 1]``, so every dual
  block stays feasible and the dual never decreases), then tells each
  partition that step at the next round.  With one partition it is the
  sequential solver.

A worker lost during a fit is survived: dask recomputes its partitions from
the Bag's graph on the remaining workers, and the state is rebuilt there (the
messages start again from zero; a partition's dual blocks are reset to the
feasible point ``0`` and its share is taken out of the weights, so that the
weights stay the sum of the blocks).

Inside a task, kernels run on ``n_jobs`` threads (one when ``n_jobs`` is
None, dask's own convention: a worker runs as many tasks at once as it has
threads).
"""

from .._backends import register_bag

__all__ = []


# the drivers are imported on first use: import skstruct stays cheap and needs no dask
def _fit_crf(est, X, y):
    from ._crf import fit_crf

    return fit_crf(est, X, y)


def _fit_approx(est, X, y):
    from ._approx import fit_approx

    return fit_approx(est, X, y)


def _fit_ssvm(est, X, y):
    from ._ssvm import fit_ssvm

    return fit_ssvm(est, X, y)


def _map_predict(est, X, method, **kwargs):
    from ._predict import map_predict

    return map_predict(est, X, method, **kwargs)


def _score(est, X, y):
    from ._predict import score

    return score(est, X, y)


# what the estimators find under their names when handed a dask Bag
register_bag("CRF", _fit_crf)
register_bag("ApproxStructuredPredictor", _fit_approx)
register_bag("StructuredSVM", _fit_ssvm)
register_bag("map_predict", _map_predict)
register_bag("score", _score)
