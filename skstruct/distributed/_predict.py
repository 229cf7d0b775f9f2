"""Prediction and scoring on a Bag, partition by partition."""

import numpy as np

from ._transport import _dask, _pairs
from ._workers import _as_list


def _predict_part(part, est, method, kwargs):
    return list(getattr(est, method)(_as_list(part), **kwargs))


def map_predict(est, X, method, **kwargs):
    """``est.method(X)`` partition by partition: a Bag of per-sample results.  A
    ``clamp`` list (one entry per sample) is split along the partitions; the other
    arguments go whole to every partition."""
    bag, _ = _dask()
    clamp = kwargs.pop("clamp", None)
    if clamp is None:
        return X.map_partitions(_predict_part, est, method, kwargs)
    import dask

    lengths = X.map_partitions(lambda p: [len(_as_list(p))]).compute()
    total = int(sum(lengths))
    if isinstance(clamp, (str, bytes, dict)) or not hasattr(clamp, "__len__") \
            or len(clamp) != total:
        raise ValueError(f"clamp must hold one entry per sample of the Bag ({total}), got "
                         f"{len(clamp) if hasattr(clamp, '__len__') else type(clamp).__name__}")
    offsets = np.concatenate([[0], np.cumsum(lengths)]).astype(int)
    parts = [dask.delayed(_predict_part)(d, est, method,
                                         {**kwargs, "clamp": clamp[offsets[i]:offsets[i + 1]]})
             for i, d in enumerate(X.to_delayed())]
    return bag.from_delayed(parts)


def _score_part(part, est):
    from ..metrics import hamming_accuracy

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
