"""Training and prediction on a dask cluster (``pip install "skstruct[dask]"``).

The estimators accept a :class:`dask.bag.Bag` of samples for ``X`` (and a Bag
of label arrays, partitioned alike, for ``y``) when a
:class:`dask.distributed.Client` is running.  Each partition is computed and
packed on the worker that holds it, and its state (the packed samples, and
the messages or dual blocks of the algorithm) stays there between
iterations; an iteration sends the weights out and brings back sums.  The
fitted estimator is an ordinary one (numpy weights, picklable, usable
without a cluster).

What is distributed:

- :class:`~skstruct.NonLocalCRF` without an energy: L-BFGS on the summed
  objective, the local fit's iterates up to the order of floating-point sums.
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

import contextlib
import functools
import itertools
import threading
import time
import uuid

import numpy as np

from .solvers._primal_dual import PrimalDual

__all__ = []

# called by the client with the fit's partitions after every round of tasks (tests use it to
# lose a worker in the middle of a fit)
_after_call = None


def _dask():
    try:
        import dask.bag
        import distributed
    except ImportError as exc:
        raise ImportError("skstruct's dask support needs dask and distributed: "
                          "pip install \"skstruct[dask]\"") from exc
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
    from ._base import _is_bag

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


# arrays up to this size travel inside the tasks; larger ones once, as a task of their own
_INLINE = 1 << 16

# seconds between checks that the workers a round's tasks wait for are still there
_PATIENCE = 2.0


def _worker_addresses(dask_scheduler):
    return list(dask_scheduler.workers)


# the states of the fits running on this worker process: (fit, partition) -> state
_STATES = {}
_LOCK = threading.Lock()


def _run_state(part, key, index, generation, make, threads, method, args):
    """A task: ``method(*args)`` of partition ``index``'s state on this worker.

    The state is built from the partition when this worker has none of the
    generation the client knows (the first call; a lost worker's partition,
    recomputed here; a task dask moved): its new generation tells the client."""
    from ._core import n_threads

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


class _CRFPart:
    """A partition's CRF objective (without the regulariser, which the client adds once)."""

    def __init__(self, part, index, est):
        from .solvers._crf import CRFObjective

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


class _PrimalDualPart:
    """A partition's Hazan-Urtasun messages and data term."""

    def __init__(self, part, index, est):
        from .solvers._primal_dual import PrimalDual, counting_numbers

        design, _ = _partition_design(est.model_.design, part, index)
        with _naming(index):
            est._check_labels(design)
            c_node, c_edge = counting_numbers(design, est.counting_numbers)
        self.pd = PrimalDual(design, est._context_lw(design), c_node, c_edge,
                             **est._solver_params())
        self.shapes = (self.pd.W.shape, self.pd.P.shape)
        self.pending = {}

    def info(self):
        return self.pd.nonconvex

    def iterate(self, w, adopt):
        """The messages of the accepted trial (if kept), ``message_passes`` sweeps, then
        the data term and its gradient."""
        pd = self.pd
        if adopt in self.pending:
            pd.lam = self.pending[adopt]
        self.pending.clear()
        W, P = _split(w, self.shapes)
        pd.sweep(W, P, pd.lam, pd.message_passes)
        value, gW, gP = pd.data_value_and_grad(W, P, pd.lam)
        return value, np.concatenate([gW.ravel(), gP.ravel()])

    def trial(self, w, token):
        """The data term at a line-search trial: at the current messages, or (``token``
        not None) at messages swept for the trial, kept under ``token``."""
        pd = self.pd
        W, P = _split(w, self.shapes)
        lam = pd.lam
        if token is not None:
            lam = lam.copy()
            pd.sweep(W, P, lam, pd.message_passes)
            self.pending[token] = lam
        return pd.data_value(W, P, lam)


class _SSVMPart:
    """A partition's structured SVM oracles (and, for BCFW, its dual blocks)."""

    def __init__(self, part, index, est, lam, n_total, sigma=1.0):
        from .solvers import BCFW, Subgradient

        design, _ = _partition_design(est.model_.design, part, index)
        with _naming(index):
            design, lw = est._prepared(est.model_, design)
        if design.submodular:
            raise ValueError("StructuredSVM on a dask Bag does not keep pairwise tables "
                             "supermodular (GraphModel(submodular=True)): give lists")
        kind = BCFW if est.solver == "bcfw" else Subgradient
        n = design.batch.n_samples
        # BCFW's pass scales a block by 1 / (lam n) and its loss by 1 / n, with n this
        # partition's samples: at lam * n_total / n its steps are those of the whole
        # problem's dual, whose linear term is then this one's times n / n_total.
        # With sigma (the partitions' count), the pass solves CoCoA+'s local problem
        # (Ma et al., ICML 2015): its quadratic term counted sigma times, as if every
        # partition moved as this one does, so that the moves can be added.  In the
        # pass's units the blocks and the weights' move are sigma times the real ones,
        # and the oracle reads w + sigma * move, the local problem's gradient point.
        self.scale = n / n_total if n else 1.0
        self.sigma = float(sigma)
        s = kind(design, lw, lam=lam / (self.scale * self.sigma), surrogate=est.surrogate,
                 averaging=False, inference_iter=est.inference_iter, n_jobs=None)
        if est.solver == "bcfw" and s.fused_chain:
            # the parallel rounds scale every block's move: keep them dense
            s.fused_chain, s.pairs = False, None
            s.Pi = np.zeros((s.n_samples,) + s.P.shape)
        self.s = s
        self.shapes = (s.W.shape, s.P.shape)
        self.moved = None

    def info(self):
        return False

    def hinges(self, w):
        W, P = _split(w, self.shapes)
        return float(self.s.hinges(W, P)[0].sum())

    def corners(self, w, idx):
        """Subgradient: the hinges and summed descent direction of samples ``idx``."""
        W, P = _split(w, self.shapes)
        hinge, gW, gP = self.s.corner_sum(W, P, idx)
        return hinge, _sparse_rows(gW), gP

    def bcfw_round(self, w, idx, gamma):
        """Parallel BCFW: scale the last round's move of the blocks by ``gamma`` (the
        client's step), then one pass over ``idx`` from ``w``; returns the block gaps
        met, and the move of the weights and of the dual's linear term."""
        s = self.s
        if self.moved is not None:
            A, Pi, ell_i = self.moved
            s.A = A + gamma * (s.A - A)
            s.Pi = Pi + gamma * (s.Pi - Pi)
            s.ell_i = ell_i + gamma * (s.ell_i - ell_i)
        self.moved = (s.A.copy(), s.Pi.copy(), s.ell_i.copy())
        W, P = _split(w, self.shapes)
        s.W, s.P = W.copy(), P.copy()
        ell0 = float(s.ell_i.sum())
        s.state.ell[()] = ell0
        gap = s.run_pass(np.ascontiguousarray(idx, dtype=np.int64))
        inv = 1.0 / self.sigma
        return (self.scale * gap, _sparse_rows(inv * (s.W - W)), inv * (s.P - P),
                self.scale * (float(s.state.ell) - ell0))


def _construct(kind, args, part, index):
    return kind(part, index, *args)


def _make(kind, *args):
    """The factory of a partition's state: ``make(part, index)``."""
    return functools.partial(_construct, kind, args)


# ------------------------------------------------------------------- the client
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
    from ._base import _set_n_features_in, resolve_model

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


# --------------------------------------------------------------------- the CRF
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
    from .models import ChainModel, GraphModel
    from .solvers._crf import CRFObjective, fit_crf_lbfgs

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


# ---------------------------------------------------- Hazan & Urtasun's learner
class _Restart(Exception):
    """Part of the messages were rebuilt during a line search."""


class _RemotePrimalDual(PrimalDual):
    """:class:`PrimalDual` whose messages and data live on the workers: the
    client keeps the parameters and the step's memory, and runs the same
    step."""

    def __init__(self, workers, shapes, nonconvex, est):
        self.workers = workers
        self.shapes = shapes
        self.W, self.P = np.zeros(shapes[0]), np.zeros(shapes[1])
        self.lam = None
        self.p, self.C = float(est.p), float(est.C)
        self.direction = est.solver
        self.message_passes = int(est.message_passes)
        self.step = est.step_size
        self.pairs = []
        self.g_prev = None
        self.n_iter = 0
        self.seconds = 0.0
        self.restarts = 0
        self.nonconvex = nonconvex
        self._tokens = itertools.count()
        self._kept = None

    def _flat(self, W, P):
        return np.concatenate([W.ravel(), P.ravel()])

    def iterate(self):
        res, rebuilt = self.workers.call("iterate", (self._flat(self.W, self.P),),
                                         [(self._kept,)] * len(self.workers.data))
        self._kept = None
        if rebuilt:
            self._restarted()
        gW, gP = _split(sum(r[1] for r in res.values()), self.shapes)
        value, gW, gP = self._regularised(self.W, self.P, sum(r[0] for r in res.values()),
                                          gW, gP)
        try:
            return self._step(value, gW, gP)
        except _Restart:
            self._restarted()
            return value

    def _restarted(self):
        """Some messages started again from zero: the step's curvature pairs no longer
        describe this objective."""
        self.restarts += 1
        self.pairs.clear()
        self.g_prev = None

    def _trial_messages(self, W, P):
        return next(self._tokens) if self.nonconvex else None

    def value(self, W, P, lam):
        res, rebuilt = self.workers.call("trial", (self._flat(W, P),),
                                         [(lam,)] * len(self.workers.data))
        if rebuilt:
            raise _Restart
        return self._reg(W, P) + sum(res.values())

    def _adopt(self, lam):
        self._kept = lam


def fit_approx(est, X, y):
    """:meth:`ApproxStructuredPredictor.fit` on dask Bags (see the module notes)."""
    from .models import ChainModel, GraphModel

    if est.warm_start:
        raise ValueError("warm_start is not available on a dask Bag: the messages do not "
                         "outlive the fit on the workers")
    client, data, model, made, _ = _setup(est, X, y, (ChainModel, GraphModel))
    est._check_labels(made[0])
    workers = _Workers(client, data, _make(_PrimalDualPart, est), est.n_jobs)
    try:
        # builds every partition's state, outside the timed loop
        info, _ = workers.call("info")
        solver = _RemotePrimalDual(workers, _shapes(made), any(info.values()), est)
        est._run(solver)
    finally:
        workers.close()
    est._solver = None
    _history(est.history_, workers, len(est.history_["objective"]), est.n_iter_)
    return est


# --------------------------------------------------------------- structured SVM
class _RemoteSSVM:
    """The client's side of a distributed structured SVM solver: the weights (and
    their average), and for BCFW each partition's share of them; the oracles and dual
    blocks are on the workers.  Speaks the solver protocol ``StructuredSVM`` loops
    over (``run_pass``, ``objective``, ``weights``)."""

    def __init__(self, workers, counts, shapes, est, lam):
        self.workers = workers
        self.offsets = np.concatenate([[0], np.cumsum(counts)])
        self.n_samples = int(self.offsets[-1])
        self.has_dual = est.solver == "bcfw"
        self.batch_size = min(int(est.batch_size), self.n_samples)
        self.averaging = bool(est.averaging)
        self.lam = lam
        self.shapes = shapes
        n = int(np.prod(shapes[0])) + int(np.prod(shapes[1]))
        self.w = np.zeros(n)
        self.w_avg = np.zeros(n)
        self.ell = self.ell_avg = 0.0
        self.t = 0
        self.n_pass = 0
        self.seconds = 0.0
        K = counts.shape[0]
        if self.has_dual:
            self.share = np.zeros((K, n))
            self.share_ell = np.zeros(K)
            self.gamma = np.zeros(K)

    def _local(self, order):
        """``order`` split by partition: ``{partition: local indices}``, in order."""
        part = np.searchsorted(self.offsets, order, side="right") - 1
        return {int(k): order[part == k] - self.offsets[k] for k in np.unique(part)}

    def _dense(self, rows_vals, gP):
        (rows, vals) = rows_vals
        nW = int(np.prod(self.shapes[0]))
        g = np.zeros_like(self.w)
        g[:nW].reshape(self.shapes[0])[rows] = vals
        g[nW:] = gP.ravel()
        return g

    def run_pass(self, order):
        if order.shape[0] == 0:
            # builds every partition's state, outside the timed loop
            self.workers.call("info")
            return 0.0
        if self.has_dual:
            return self._bcfw_round(order)
        total = 0.0
        B = self.batch_size
        for start in range(0, order.shape[0], B):
            batch = order[start:start + B]
            res, _ = self.workers.call("corners", (self.w,),
                                       {k: (idx,) for k, idx in self._local(batch).items()})
            g = np.zeros_like(self.w)
            for hinge, rows_vals, gP in res.values():
                total += hinge
                g += self._dense(rows_vals, gP)
            # Pegasos' step (as the local solver takes it)
            t = self.t
            self.t += 1
            eta = 1.0 / (self.lam * (t + 1.0))
            self.w = (1.0 - 1.0 / (t + 1.0)) * self.w + (eta / batch.shape[0]) * g
            self._average(t)
        return total / order.shape[0]

    def _average(self, t):
        if not self.averaging:
            return
        if t == 0:
            self.w_avg, self.ell_avg = self.w.copy(), self.ell
        else:
            rho = 2.0 / (t + 2.0)
            self.w_avg = (1.0 - rho) * self.w_avg + rho * self.w
            self.ell_avg = (1.0 - rho) * self.ell_avg + rho * self.ell

    def _bcfw_round(self, order):
        local = self._local(order)
        K = self.share.shape[0]
        each = {k: (local.get(k, np.zeros(0, np.int64)), self.gamma[k]) for k in range(K)}
        res, rebuilt = self.workers.call("bcfw_round", (self.w,), each)
        for k in rebuilt:
            # a rebuilt partition's blocks are 0 again: take its share out of the weights,
            # and its move of this round (made from a state it no longer has) is dropped
            self.w -= self.share[k]
            self.ell -= self.share_ell[k]
            self.share[k] = 0.0
            self.share_ell[k] = 0.0
        moves = {k: (self._dense(r[1], r[2]), r[3]) for k, r in res.items()
                 if k not in rebuilt}
        d = sum((m for m, _ in moves.values()), np.zeros_like(self.w))
        d_ell = sum(dl for _, dl in moves.values())
        dd = float(d @ d)
        # the dual -lam/2 ||w + g d||^2 + ell + g d_ell is largest at this g; within
        # [0, 1] every block stays in its feasible set
        gamma = 0.0 if dd <= 0.0 else min(max(
            (d_ell - self.lam * float(self.w @ d)) / (self.lam * dd), 0.0), 1.0)
        self.w += gamma * d
        self.ell += gamma * d_ell
        for k, (m, dl) in moves.items():
            self.share[k] += gamma * m
            self.share_ell[k] += gamma * dl
        self.gamma[:] = 0.0
        self.gamma[list(moves)] = gamma
        self._average(self.t)
        self.t += 1
        return float(sum(r[0] for r in res.values()))

    def weights(self):
        w = self.w_avg if self.averaging and self.t > 0 else self.w
        W, P = _split(w, self.shapes)
        return W.copy(), P.copy()

    def objective(self):
        W, P = self.weights()
        w = np.concatenate([W.ravel(), P.ravel()])
        res, _ = self.workers.call("hinges", (w,))
        sq = float(w @ w)
        primal = 0.5 * self.lam * sq + sum(res.values()) / self.n_samples
        if not self.has_dual:
            return primal, np.nan, np.nan
        ell = self.ell_avg if self.averaging and self.t > 0 else self.ell
        dual = -0.5 * self.lam * sq + ell
        return primal, dual, primal - dual


def fit_ssvm(est, X, y):
    """:meth:`StructuredSVM.fit` on dask Bags (see the module notes)."""
    from .models import ChainModel, GraphModel

    if est.solver not in ("bcfw", "subgradient"):
        raise ValueError(f"StructuredSVM on a dask Bag supports solver='bcfw' (a parallel "
                         f"variant) and solver='subgradient', not {est.solver!r}")
    if est.warm_start:
        raise ValueError("warm_start is not available on a dask Bag: the dual blocks do not "
                         "outlive the fit on the workers")
    client, data, model, made, counts = _setup(est, X, y, (ChainModel, GraphModel))
    lam = 1.0 / (est.C * int(counts.sum()))
    workers = _Workers(client, data, _make(_SSVMPart, est, lam, int(counts.sum()),
                                           float(counts.shape[0])), est.n_jobs)
    try:
        solver = _RemoteSSVM(workers, counts, _shapes(made), est, lam)
        est._learn(model, solver)
    finally:
        workers.close()
    est._solver = None
    _history(est.history_, workers, len(est.history_["pass"]), est.n_iter_)
    return est


def _shapes(made):
    """``(W.shape, P.shape)`` of the weights, from the probe's design."""
    design = made[0]
    return ((design.n_features_total, design.n_columns),
            (design.n_edge_features, design.n_classes, design.n_classes))


# ------------------------------------------------------------------ prediction
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
