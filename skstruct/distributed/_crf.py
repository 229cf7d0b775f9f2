"""The distributed CRF: L-BFGS on the objective summed over the partitions."""

import time

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
                             "NonLocalCRF on a dask Bag needs fully labelled samples")
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

    def __init__(self, workers):
        self.workers = workers

    def value_grad(self, w):
        w = np.array(w, dtype=np.float64, copy=True)
        res, _ = self.workers.call("value_grad", (w,))
        f = 0.5 * float(w @ w) + sum(r[0] for r in res.values())
        g = w.copy()
        for _, (rows, vals), rest in res.values():
            n = g.shape[0] - rest.shape[0]
            g[:n].reshape(-1, vals.shape[1])[rows] += vals
            g[n:] += rest
        return f, g


def fit_crf(est, X, y):
    """:meth:`NonLocalCRF.fit` on dask Bags (see the module notes)."""
    from ..models import ChainModel, GraphModel
    from ..solvers._crf import CRFObjective, fit_crf_lbfgs

    est._check_params()
    for bad, why in ((est.energy is not None, "energy=None"),
                     (est.solver != "lbfgs", "solver='lbfgs'"),
                     (est.feature_pairs != "all", "feature_pairs='all'")):
        if bad:
            raise ValueError(f"NonLocalCRF on a dask Bag needs {why}")
    client, data, model, made, _ = _setup(est, X, y, (ChainModel, GraphModel))
    if np.any(made[0].y < 0):
        client.cancel(data)
        raise ValueError("NonLocalCRF on a dask Bag needs fully labelled samples (no None "
                         "labels)")
    local = CRFObjective(est._design(None, None, made)[0], est.C)
    workers = _Workers(client, data, _make(_CRFPart, est), est.n_jobs)
    try:
        obj = _DistributedObjective(workers)
        t0 = time.perf_counter()
        w, n_iter, hist = fit_crf_lbfgs(obj, np.zeros(local.n_weights), est.max_iter, est.tol,
                                        est.verbose, overwrite_w0=True)
        est.fit_seconds_ = time.perf_counter() - t0
    finally:
        workers.close()
    est._set_theta(local, w)
    est.n_iter_ = n_iter
    est.held_out_indices_ = None
    est.energy_ = None
    est.psi_coef_ = None
    est.mean_map_ = None
    est.history_ = {k: np.asarray(v, np.float64) for k, v in hist.items()}
    _history(est.history_, workers, len(est.history_["objective"]), est.n_iter_)
    return est


