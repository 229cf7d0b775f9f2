"""The workers' side of a distributed fit: each partition's state (the samples
packed, and the algorithm's messages or dual blocks), kept on the worker that
holds the partition between the rounds of a fit, and the tasks that run its
methods."""

import contextlib
import functools
import threading
import uuid

import numpy as np


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


# the states of the fits running on this worker process: (fit, partition) -> state
_STATES = {}
_LOCK = threading.Lock()


def _run_state(part, key, index, generation, make, threads, method, args):
    """A task: ``method(*args)`` of partition ``index``'s state on this worker.

    The state is built from the partition when this worker has none of the
    generation the client knows (the first call; a lost worker's partition,
    recomputed here; a task dask moved): its new generation tells the client."""
    from .._core import n_threads

    with _LOCK:
        state = _STATES.get((key, index))
    if state is None or (generation is not None and state.generation != generation):
        state = make(_as_list(part), index)
        state.generation = uuid.uuid4().hex
        with _LOCK:
            _STATES[(key, index)] = state
    with n_threads(threads):
        out = getattr(state, method)(*args)
    from distributed import get_worker

    return state.generation, get_worker().address, out


def _given(a):
    return a


def _drop(key):
    with _LOCK:
        for k in [k for k in _STATES if k[0] == key]:
            del _STATES[k]


@contextlib.contextmanager
def _naming(index):
    """Errors about a partition's samples name the partition (their sample numbers
    count within it)."""
    try:
        yield
    except ValueError as exc:
        raise ValueError(f"partition {index}: {exc}") from None


def _partition_design(design, part, index):
    """``design(X, y)`` of a partition."""
    with _naming(index):
        return design([x for x, _ in part], [lab for _, lab in part])


def _split(w, shapes):
    """``W, P`` as views of the flat weight vector ``w``."""
    (F, Kp), shape_p = shapes
    return w[:F * Kp].reshape(F, Kp), w[F * Kp:].reshape(shape_p)


def _sparse_rows(G):
    """The rows of ``G`` that are not zero, and their indices: a partition's share of
    a sum touches the features of its own samples only."""
    rows = np.flatnonzero(np.any(G != 0.0, axis=1))
    return rows, G[rows]



def _construct(kind, args, part, index):
    return kind(part, index, *args)


def _make(kind, *args):
    """The factory of a partition's state: ``make(part, index)``."""
    return functools.partial(_construct, kind, args)
