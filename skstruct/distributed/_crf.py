"""The distributed CRF: L-BFGS on the objective summed over the partitions."""

import numpy as np

from ._transport import _history, _setup, _Workers
from ._workers import _make, _partition_design, _sparse_rows


class _CRFPart:
    """A partition's CRF objective (without the regulariser, which the client adds once)."""

    def __init__(self, part, index, est):
        from ..solvers._crf import CRFObjective

        design, _ = _partition_design(est._design, part, index)
        if np.any(design.y < 0):
            v = int(np.flatnonzero(design.y < 0)[0])
            s = int(np.searchsorted(design.batch.node_offsets, v, side="right") - 1)
            raise ValueError(f"partition {index}: sample {s}: node "
                             f"{v - design.batch.node_offsets[s]} has an unknown label (None); "
                             f"{type(est).__name__} on a dask Bag needs fully labelled "
                             "samples")
        self.obj = CRFObjective(design, est.C)
        self.n_unary = design.n_features_total * design.n_columns
        self.n_columns = design.n_columns

    def value_grad(self, w):
        """The partition's data term and its gradient: the unary part as its non-zero
        rows (the features this partition's samples have), the rest dense."""
        f, g = self.obj.value_grad(w)
        g -= w
        n = self.n_unary
        return f - 0.5 * float(w @ w), _sparse_rows(g[:n].reshape(-1, self.n_columns)), g[n:]



class _DistributedObjective:
    """``value_grad`` of the CRF objective summed over partitions on the cluster."""

    def __init__(self, workers, l2=1.0):
        self.workers = workers
        self.l2 = l2

    def value_grad(self, w):
        w = np.array(w, dtype=np.float64, copy=True)
        res, _ = self.workers.call("value_grad", (w,))
        f = 0.5 * self.l2 * float(w @ w) + sum(r[0] for r in res.values())
        g = self.l2 * w
        for _, (rows, vals), rest in res.values():
            n = g.shape[0] - rest.shape[0]
            g[:n].reshape(-1, vals.shape[1])[rows] += vals
            g[n:] += rest
        return f, g


def fit_crf(est, X, y):
    """:meth:`CRF.fit` (and :meth:`NonLocalCRF.fit` without an energy) on dask Bags
    (see the module notes)."""
    from ..models import ChainModel, GraphModel
    from ..solvers._crf import CRFObjective

    est._check_params()
    name = type(est).__name__
    for bad, why in ((getattr(est, "energy", None) is not None, "energy=None"),
                     (est.solver != "lbfgs", "solver='lbfgs'"),
                     (est.feature_pairs != "all", "feature_pairs='all'")):
        if bad:
            raise ValueError(f"{name} on a dask Bag needs {why}")
    previous = est._warm_source()
    client, data, model, made, _ = _setup(est, X, y, (ChainModel, GraphModel))
    if np.any(made[0].y < 0):
        client.cancel(data)
        raise ValueError(f"{name} on a dask Bag needs fully labelled samples (no None "
                         "labels)")
    local = CRFObjective(est._design(None, None, made)[0], est.C, l2=1.0 - est.l1_ratio)
    try:
        w0 = est._initial_weights(local, previous, None)
    except ValueError:
        client.cancel(data)
        raise
    workers = _Workers(client, data, _make(_CRFPart, est), est.n_jobs)
    try:
        w, n_iter, hist, seconds = est._run_lbfgs(_DistributedObjective(workers,
                                                                        1.0 - est.l1_ratio), w0)
    finally:
        workers.close()
    est._set_base_fit(local, w, n_iter, hist, seconds)
    _history(est.history_, workers, len(est.history_["objective"]), est.n_iter_)
    return est
