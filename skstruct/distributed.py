"""Training and prediction on a dask cluster (``pip install "skstruct[dask]"``).

The estimators accept a :class:`dask.bag.Bag` of samples for ``X`` (and a Bag
of label arrays, partitioned alike, for ``y``) when a
:class:`dask.distributed.Client` is running.  Each partition is packed once,
on the worker that holds it, and stays there; an iteration sends the weights
out and brings back one objective value and one gradient per partition.  The
fitted estimator is an ordinary one (numpy weights, picklable, usable without
a cluster).

Supported so far: :class:`~skstruct.NonLocalCRF` without an energy
(L-BFGS on the summed objective: the same iterates as the local fit, up to
the order of floating-point sums), and ``predict``, ``predict_marginals`` and
``score`` of every estimator on a Bag.
"""

import time

import numpy as np

__all__ = ["is_bag"]


def _dask():
    try:
        import dask.bag
        import distributed
    except ImportError as exc:
        raise ImportError("skstruct's dask support needs dask and distributed: "
                          "pip install \"skstruct[dask]\"") from exc
    return dask.bag, distributed


def is_bag(X):
    """Whether ``X`` is a :class:`dask.bag.Bag` (False when dask is not installed)."""
    from ._base import _is_bag

    return _is_bag(X)


def _client():
    _, distributed = _dask()
    try:
        return distributed.get_client()
    except ValueError:
        raise ValueError("X is a dask Bag but no dask.distributed Client is running: start "
                         "one (Client() or Client(LocalCluster(...))) before fit") from None


def _pairs(X, y):
    """The bag of ``(x, y)`` pairs, checked to be partitioned alike."""
    if not is_bag(y):
        raise ValueError(f"X is a dask Bag, so y must be one too (got {type(y).__name__})")
    if X.npartitions != y.npartitions:
        raise ValueError(f"X has {X.npartitions} partitions but y has {y.npartitions}: "
                         "partition them alike (one label array per sample)")
    bag, _ = _dask()
    return bag.zip(X, y)


# ------------------------------------------------------------------ on workers
def _as_list(part):
    return part if isinstance(part, list) else list(part)


def _cover(part):
    """Samples of a partition that together hold all its labels (a sample is kept
    when it brings a new one), with the partition's size."""
    part = _as_list(part)
    seen, keep = set(), []
    for x, lab in part:
        arr = np.asarray(lab, dtype=object).ravel()
        new = {v for v in arr.tolist() if v is not None} - seen
        if new or not keep:
            keep.append((x, lab))
            seen |= new
    return keep, len(part)


class _Partition:
    """One partition's CRF objective, built and kept on its worker."""

    def __init__(self, part, model, C, check):
        part = _as_list(part)
        X = [x for x, _ in part]
        y = [lab for _, lab in part]
        design, _ = model.design(X, y)
        check(design)
        from .solvers._crf import CRFObjective

        self.obj = CRFObjective(design, C)
        self.n_samples = len(part)

    def value_grad(self, w):
        f, g = self.obj.value_grad(w)
        # every partition's objective carries the regulariser: the client adds it once
        return f - 0.5 * float(w @ w), g - w


def _build(part, model, C, check):
    return _Partition(part, model, C, check)


def _value_grad(p, w):
    return p.value_grad(w)


# ------------------------------------------------------------------- the client
class _DistributedObjective:
    """``value_grad`` of the CRF objective summed over partitions on the cluster."""

    def __init__(self, client, parts):
        self.client = client
        self.parts = parts
        self.n_calls = 0
        self.bytes_out = 0

    def value_grad(self, w):
        w = np.array(w, dtype=np.float64, copy=True)
        wf = self.client.scatter(w, broadcast=True)
        res = self.client.gather(self.client.map(_value_grad, self.parts, w=wf, pure=False))
        self.client.cancel(wf)
        self.n_calls += 1
        self.bytes_out += w.nbytes
        f = 0.5 * float(w @ w) + sum(r[0] for r in res)
        g = w.copy()
        for r in res:
            g += r[1]
        return f, g


def fit_crf(est, X, y):
    """:meth:`NonLocalCRF.fit` on dask Bags (see the module notes)."""
    from ._base import _set_n_features_in, resolve_model
    from .models import ChainModel, GraphModel
    from .solvers._crf import CRFObjective, fit_crf_lbfgs

    est._check_params()
    client = _client()
    for bad, why in ((est.energy is not None, "energy=None"),
                     (est.solver != "lbfgs", "solver='lbfgs'"),
                     (est.feature_pairs != "all", "feature_pairs='all'")):
        if bad:
            raise ValueError(f"NonLocalCRF on a dask Bag needs {why}")
    pairs = _pairs(X, y)
    delayed = pairs.to_delayed()
    data = client.compute(delayed)          # the partitions, computed where they live
    covers = client.gather(client.map(_cover, data))
    probe = [s for keep, _ in covers for s in keep]
    n_samples = sum(n for _, n in covers)
    if n_samples == 0:
        raise ValueError("the Bag holds no samples")
    Xp, yp = [x for x, _ in probe], [lab for _, lab in probe]
    model, made = resolve_model(est.model, Xp, yp, batched_only=True, design=True)
    if type(model) not in (ChainModel, GraphModel):
        raise ValueError(f"NonLocalCRF on a dask Bag supports ChainModel and GraphModel, not "
                         f"{type(model).__name__} (whose fit reads all the samples)")
    if getattr(model, "latent", False) or np.any(made[0].y < 0):
        raise ValueError("NonLocalCRF on a dask Bag needs fully labelled samples (no hidden "
                         "states, no None labels)")
    est.model_ = model
    est.classes_ = model.classes_
    _set_n_features_in(est, model)
    local = CRFObjective(est._design(Xp, yp, made)[0], est.C)
    parts = client.map(_build, data, model=model, C=est.C, check=_check_exact, pure=False)
    obj = _DistributedObjective(client, parts)
    t0 = time.perf_counter()
    w, n_iter, hist = fit_crf_lbfgs(obj, np.zeros(local.n_weights), est.max_iter, est.tol,
                                    est.verbose, overwrite_w0=True)
    est.fit_seconds_ = time.perf_counter() - t0
    client.cancel(parts)
    client.cancel(data)
    est._set_theta(local, w)
    est.n_iter_ = n_iter
    est.held_out_indices_ = None
    est.energy_ = None
    est.psi_coef_ = None
    est.mean_map_ = None
    hist["bytes_sent"] = np.full(len(hist["objective"]), float(w.nbytes))
    est.history_ = {k: np.asarray(v, np.float64) for k, v in hist.items()}
    return est


def _check_exact(design):
    from ._core._decoders import TREE, VITERBI

    bad = np.flatnonzero(~np.isin(design.kind, (VITERBI, TREE)))
    if bad.size:
        raise ValueError(f"a sample has a cycle (sample {bad[0]} of its partition): "
                         "NonLocalCRF needs chains or trees (exact marginals)")


# ------------------------------------------------------------------ prediction
def _predict_part(part, est, method, kwargs):
    return list(getattr(est, method)(_as_list(part), **kwargs))


def map_predict(est, X, method, **kwargs):
    """``est.method(X)`` partition by partition: a Bag of per-sample results."""
    _dask()
    return X.map_partitions(_predict_part, est, method, kwargs)


def _score_part(part, est):
    from .metrics import hamming_accuracy

    part = _as_list(part)
    if not part:
        return [(0.0, 0)]
    X = [x for x, _ in part]
    y = [lab for _, lab in part]
    n = sum(int(sum(v is not None for v in np.asarray(lab, dtype=object).ravel().tolist()))
            for lab in y)
    return [(hamming_accuracy(y, est.predict(X)) * n, n)]


def score(est, X, y):
    """Hamming accuracy over a Bag, summed on the workers: one number."""
    res = _pairs(X, y).map_partitions(_score_part, est).compute()
    total = sum(n for _, n in res)
    if total == 0:
        raise ValueError("the Bag holds no labelled nodes")
    return sum(c for c, _ in res) / total
