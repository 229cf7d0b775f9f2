"""The client's side of the transport of a distributed fit: the Bag's partitions
computed where they live, the tasks of a round pinned to the workers that hold the
partitions' states (:mod:`._workers`), the generations that tell a state rebuilt
after a lost worker, and the payload the tasks carry counted."""

import uuid

import numpy as np

from ._workers import _as_list, _cover, _drop, _given, _run_state

# called by the client with the fit's partitions after every round of tasks (tests use it to
# lose a worker in the middle of a fit)
_after_call = None


def _dask():
    try:
        import dask.bag
        import distributed
    except ImportError as exc:
        raise ImportError("skstruct's dask support needs dask and distributed: "
                          "install the dask extra (python -m pip install \".[dask]\" from a "
                          "clone of skstruct)") from exc
    return dask.bag, distributed


def _client():
    _, distributed = _dask()
    try:
        return distributed.get_client()
    except ValueError:
        raise ValueError("X is a dask Bag but no dask.distributed Client is running: start "
                         "one (Client() or Client(LocalCluster(...))) before fit") from None


def _pairs(X, y):
    """The bag of ``(x, y)`` pairs, checked to be partitioned alike."""
    from .._base import _is_bag

    if not _is_bag(y):
        raise ValueError(f"X is a dask Bag, so y must be one too (got {type(y).__name__})")
    if X.npartitions != y.npartitions:
        raise ValueError(f"X has {X.npartitions} partitions but y has {y.npartitions}: "
                         "partition them alike (one label array per sample)")
    bag, _ = _dask()
    import dask

    # dask.bag.zip drops the extra elements of the longer partition: check instead
    return bag.from_delayed([dask.delayed(_zip_part)(a, b, i) for i, (a, b) in
                             enumerate(zip(X.to_delayed(), y.to_delayed()))])


def _zip_part(xs, ys, index):
    xs, ys = _as_list(xs), _as_list(ys)
    if len(xs) != len(ys):
        raise ValueError(f"partition {index} holds {len(xs)} samples in X but {len(ys)} label "
                         "arrays in y: partition them alike")
    return list(zip(xs, ys))


# arrays up to this size travel inside the tasks; larger ones once, as a task of their own
_INLINE = 1 << 16

# seconds between checks that the workers a round's tasks wait for are still there
_PATIENCE = 2.0


def _worker_addresses(dask_scheduler):
    return list(dask_scheduler.workers)


class _Workers:
    """The partitions of one fit on the cluster, each with its state on a worker.

    ``bytes_out`` / ``bytes_in`` count the payload sent with and returned by
    the tasks (arrays only; dask's own messages come on top)."""

    def __init__(self, client, data, make, n_jobs):
        self.client = client
        self.data = data
        self.key = uuid.uuid4().hex
        self.generations = [None] * len(data)
        self.where = [None] * len(data)
        self.threads = 1 if n_jobs is None else n_jobs
        self.make = self._share(make)
        # the workers the scheduler knows, asked again when a round waits too long
        self.alive = set(client.run_on_scheduler(_worker_addresses))
        self.n_rounds = 0
        self.bytes_out = 0
        self.bytes_in = 0
        self.restarts = 0

    def call(self, method, shared=(), each=None):
        """``state.method(*shared, *each[i])`` on every partition ``i`` (on those in
        ``each`` when it is a dict); returns ``{i: output}`` and the partitions
        rebuilt since the last call."""
        client = self.client
        n_workers = max(1, len(self.alive))
        sent, args = [], []
        for a in shared:
            if isinstance(a, np.ndarray) and a.nbytes > _INLINE:
                f = self._share(a)
                sent.append(f)
                self.bytes_out += a.nbytes * n_workers
                args.append(f)
            else:
                if isinstance(a, np.ndarray):
                    self.bytes_out += a.nbytes * len(self.data)
                args.append(a)
        parts = range(len(self.data)) if each is None or not isinstance(each, dict) \
            else sorted(each)
        tasks = {}
        for i in parts:
            extra = () if each is None else tuple(each[i])
            self.bytes_out += sum(a.nbytes for a in extra if isinstance(a, np.ndarray))
            tasks[i] = (_run_state, self.data[i], self.key, i, self.generations[i], self.make,
                        self.threads, method, tuple(args) + extra)
        results = self._run(tasks)
        client.cancel(sent)
        rebuilt = []
        out = {}
        for i, (gen, where, res) in results.items():
            if self.generations[i] is not None and gen != self.generations[i]:
                rebuilt.append(i)
            self.generations[i] = gen
            self.where[i] = where
            out[i] = res
            self.bytes_in += _nbytes(res)
        if not set(self.where) <= self.alive:
            # a partition now lives on a worker that joined since
            self.alive = set(client.run_on_scheduler(_worker_addresses))
        self.restarts += len(rebuilt)
        self.n_rounds += 1
        if _after_call is not None:
            _after_call(self)
        return out, rebuilt

    def _share(self, a):
        """``a`` for the tasks of a round: a task that returns it, so that the scheduler
        places it (workers fetch it from each other) and can run it again if its
        worker is lost.  (``Client.scatter`` sends to the workers directly, and stalls
        on a worker that died since the scheduler last heard from it.)"""
        return self.client.submit(_given, a, pure=False)

    def _run(self, tasks):
        """Run ``tasks`` (partition: task tuple), each on the worker that holds its
        partition's state: dask would otherwise move a task to an idle worker, where
        the state would have to be built anew.  A task whose worker left is run
        anywhere (its state is rebuilt there)."""
        _, distributed = _dask()
        client = self.client

        def submit(i, pinned):
            where = self.where[i]
            return client.submit(*tasks[i], pure=False,
                                 workers=[where] if pinned and where in self.alive else None,
                                 allow_other_workers=False)

        futures = {i: submit(i, True) for i in tasks}
        while True:
            try:
                distributed.wait(list(futures.values()), timeout=_PATIENCE)
                break
            except distributed.TimeoutError:
                self.alive = set(client.run_on_scheduler(_worker_addresses))
                for i, f in futures.items():
                    if not f.done() and self.where[i] is not None \
                            and self.where[i] not in self.alive:
                        f.cancel()
                        futures[i] = submit(i, False)
        return dict(zip(futures, client.gather(list(futures.values()))))

    def close(self):
        try:
            self.client.run(_drop, self.key)
        except Exception:  # noqa: BLE001 - a worker gone at the end leaves nothing to drop
            pass
        self.client.cancel(list(self.data) + [self.make])


def _nbytes(obj):
    if isinstance(obj, np.ndarray):
        return obj.nbytes
    if isinstance(obj, (tuple, list)):
        return sum(_nbytes(o) for o in obj)
    return 8


def _setup(est, X, y, models):
    """Compute the Bag's partitions where they live, fit the model's classes from a
    few samples per partition that cover its labels; returns ``(client, data, model,
    probe design, samples per partition)``."""
    from .._base import _set_n_features_in, resolve_model

    client = _client()
    data = client.compute(_pairs(X, y).to_delayed())
    covers = client.gather(client.map(_cover, data))
    counts = np.array([n for _, n in covers], dtype=np.int64)
    if counts.sum() == 0:
        client.cancel(data)
        raise ValueError("the Bag holds no samples")
    probe = [s for keep, _ in covers for s in keep]
    Xp, yp = [x for x, _ in probe], [lab for _, lab in probe]
    model, made = resolve_model(est.model, Xp, yp, batched_only=True, design=True)
    if type(model) not in models:
        client.cancel(data)
        raise ValueError(f"{type(est).__name__} on a dask Bag supports "
                         f"{' and '.join(m.__name__ for m in models)}, not "
                         f"{type(model).__name__} (whose fit reads all the samples)")
    if getattr(model, "latent", False):
        client.cancel(data)
        raise ValueError(f"{type(est).__name__} on a dask Bag does not learn hidden states")
    if getattr(est, "class_weight", None) == "balanced":
        client.cancel(data)
        raise ValueError("class_weight='balanced' counts the labels of every sample: on a "
                         "dask Bag give the weights as a dict")
    est.model_ = model
    est.classes_ = model.classes_
    _set_n_features_in(est, model)
    return client, data, model, made, counts


def _history(hist, workers, n_entries, n_iter):
    """The payload bytes of the fit's ``n_iter`` iterations (or passes), as their mean
    per iteration (the packing round, line-search trials and objective checks
    included), for ``history_``'s ``n_entries`` entries."""
    hist["bytes_sent"] = np.full(n_entries, workers.bytes_out / max(n_iter, 1))
    hist["bytes_received"] = np.full(n_entries, workers.bytes_in / max(n_iter, 1))



def _shapes(made):
    """``(W.shape, P.shape)`` of the weights, from the probe's design."""
    design = made[0]
    return ((design.n_features_total, design.n_columns),
            (design.n_edge_features, design.n_classes, design.n_classes))


