"""Training on a dask cluster: time and bytes per round against the number of workers.

Run: ``python benchmarks/bench_distributed.py [--workers 1 2 4 8] [--iters 6]
[--write-doc]``.

Every cluster is a ``LocalCluster`` of ``n`` worker processes with one thread
each on this machine (loopback TCP; beyond 2 workers the 2 cores are
oversubscribed), the Bag in one partition per worker.  A *round* is one
task per partition and the client's wait for all of them: one objective and
gradient evaluation (the CRF, and Hazan & Urtasun's sweep-and-gradient
step), or one line-search trial.  Measured per round, after the first
(which packs the partitions):

* seconds (median);
* payload bytes: the arrays sent with the tasks (the weights, to every
  worker) and returned by them (a value and a gradient per partition);
* loopback bytes: everything the processes sent each other over TCP in the
  round (client, scheduler, workers; dask's own messages included), read
  from the kernel's counters of the ``lo`` interface.

Tasks:

* ``grid``: :class:`~skstruct.ApproxStructuredPredictor` (epsilon 1, convex
  counting numbers) on 100 noisy 100 x 100 binary images (10^6 variables),
  generated on the workers (the Bag's graph holds only their seeds);
* ``conll``: :class:`~skstruct.NonLocalCRF` (L-BFGS, ``feature_pairs="all"``)
  on CoNLL-2000's 8,936 training sentences with the sklearn-crfsuite
  tutorial's features, vectorised on the client;
* ``bcfw``: the parallel BCFW variant against the sequential solver on OCR
  words (folds 1-4): the duality gap after the same number of passes over the
  data (a pass of the parallel variant is a round: every partition's samples
  once), on a 2-worker cluster with 2, 4 and 8 partitions.

The local reference is the same fit in this process on one thread.
Each task's figures are kept in ``benchmarks/.results/`` so that ``--tasks``
can measure one again alone; ``--write-doc`` puts the tables of every task
measured into ``doc/benchmarks.md``.
"""

import argparse
import json
import logging
import os
import sys
import time
import warnings

import numpy as np
from _doc import write_section

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)
sys.path.insert(0, ROOT)
DATA = os.path.join(os.path.dirname(ROOT), "shared", "data", "conll2000")
RESULTS = os.path.join(HERE, ".results", "bench_distributed.json")


def _image(seed):
    from skstruct.datasets import make_binary_denoising

    d = make_binary_denoising(1, 100, noise=1.0, random_state=seed)
    return d.X[0], d.y[0]


class Rounds:
    """Times and loopback counters at the end of every round of tasks."""

    def __init__(self):
        self.marks = []

    def __call__(self, workers):
        import psutil

        lo = psutil.net_io_counters(pernic=True)["lo"].bytes_sent
        self.marks.append((time.perf_counter(), lo, workers.bytes_out, workers.bytes_in))

    def summary(self):
        m = np.array(self.marks[1:], dtype=np.float64)   # after the packing round
        d = np.diff(m, axis=0)
        return dict(rounds=len(self.marks), seconds=float(np.median(d[:, 0])),
                    lo=float(d[:, 1].mean()), lo_rounds=d[:, 1].tolist(),
                    out=float(d[:, 2].mean()), back=float(d[:, 3].mean()))


def per_iteration(est):
    """Median seconds of an iteration (from ``history_``: packing excluded)."""
    return float(np.median(np.diff(np.concatenate([[0.0], est.history_["seconds"]]))))


def cluster(n):
    from distributed import Client, LocalCluster

    lc = LocalCluster(n_workers=n, threads_per_worker=1, processes=True, host="127.0.0.1",
                      dashboard_address=None, silence_logs=logging.ERROR)
    return lc, Client(lc)


def run(fit, n_workers):
    from skstruct.distributed import _transport as skd

    rows = []
    for n in n_workers:
        lc, client = cluster(n)
        try:
            rec = Rounds()
            skd._after_call = rec
            est = fit(client, n)
            skd._after_call = None
            s = rec.summary()
            s.update(workers=n, n_iter=est.n_iter_, per_iteration=per_iteration(est),
                     objective=float(est.history_["objective"][-1]))
            rows.append(s)
            print(s, flush=True)
        finally:
            client.close()
            lc.close()
    return rows


def grid(args):
    import dask.bag as db

    from skstruct import ApproxStructuredPredictor
    from skstruct.models import GraphModel

    n = args.grid_images
    params = dict(epsilon=1.0, counting_numbers="convex", C=1.0 / n, model=GraphModel(),
                  tol=0.0, max_iter=args.iters)
    data = [_image(s) for s in range(n)]
    X, y = [d[0] for d in data], [d[1] for d in data]
    ApproxStructuredPredictor(**{**params, "max_iter": 2}).fit(X[:2], y[:2])
    local = ApproxStructuredPredictor(n_jobs=1, **params).fit(X, y)
    local_s = per_iteration(local)
    n_vars = sum(len(v) for v in y)
    del data, X, y

    def fit(client, k):
        seeds = db.from_sequence(range(n), npartitions=k).map(_image)
        return ApproxStructuredPredictor(**params).fit(seeds.pluck(0), seeds.pluck(1))

    rows = run(fit, args.workers)
    return dict(local_seconds=local_s, local_objective=float(local.history_["objective"][-1]),
                iters=args.iters, n_vars=n_vars, n_weights=local.coef_.size, rows=rows)


def conll(args):
    import dask.bag as db
    from sklearn.feature_extraction import DictVectorizer

    from skstruct import NonLocalCRF
    from skstruct.datasets import conll_features, load_conll
    from skstruct.preprocessing import NodeTransformer

    train = load_conll(os.path.join(DATA, "train.txt"))
    X = NodeTransformer(DictVectorizer()).fit_transform(conll_features(train.tokens))
    y = list(train.y)
    params = dict(C=1.0, max_iter=args.iters, tol=0.0)
    NonLocalCRF(**{**params, "max_iter": 2}).fit(X[:50], y[:50])
    local = NonLocalCRF(n_jobs=1, **params).fit(X, y)
    local_s = per_iteration(local)

    def fit(client, k):
        with warnings.catch_warnings():
            # the sentences travel in the Bag's graph (tens of MB), once
            warnings.filterwarnings("ignore", message="Sending large graph")
            return NonLocalCRF(**params).fit(db.from_sequence(X, npartitions=k),
                                             db.from_sequence(y, npartitions=k))

    rows = run(fit, args.workers)
    return dict(local_seconds=local_s, local_objective=float(local.history_["objective"][-1]),
                iters=args.iters, n_sentences=len(X), n_weights=local.coef_.size, rows=rows)


def bcfw(args):
    import dask.bag as db

    from skstruct import StructuredSVM
    from skstruct.datasets import load_letters

    letters = load_letters()
    idx = np.flatnonzero(np.isin(letters.folds, [1, 2, 3, 4]))
    X = [letters.X[i] for i in idx]
    y = [letters.y[i] for i in idx]
    params = dict(solver="bcfw", C=1.0, max_iter=args.bcfw_passes, check_every=10, tol=0.0,
                  random_state=0, average=False)
    t0 = time.perf_counter()
    seq = StructuredSVM(n_jobs=1, **params).fit(X, y)
    out = dict(n_words=len(X), sequential=dict(
        passes=seq.history_["pass"].tolist(), gap=seq.history_["gap"].tolist(),
        primal=seq.history_["primal"].tolist(), seconds=time.perf_counter() - t0))
    lc, client = cluster(2)
    try:
        for k in (2, 4, 8):
            t0 = time.perf_counter()
            par = StructuredSVM(**params).fit(db.from_sequence(X, npartitions=k),
                                              db.from_sequence(y, npartitions=k))
            out[k] = dict(passes=par.history_["pass"].tolist(), gap=par.history_["gap"].tolist(),
                          primal=par.history_["primal"].tolist(),
                          seconds=time.perf_counter() - t0)
            print(k, out[k]["gap"][-1], out[k]["seconds"], flush=True)
    finally:
        client.close()
        lc.close()
    return out


def size(b):
    return f"{b:.0f} B" if b < 1e5 else f"{b / 2 ** 20:.2f} MB"


def tables(res, args):
    lines = [
        "## Training on a dask cluster (`benchmarks/bench_distributed.py`)",
        "",
        "`python benchmarks/bench_distributed.py --write-doc`: a `LocalCluster` of 1, 2, 4 "
        "and 8 worker processes with one thread each on this 2-core machine (loopback TCP; "
        "beyond 2 workers the cores are oversubscribed), one partition per worker. A round "
        "is one task per partition (an objective and gradient evaluation, or a line-search "
        "trial) and the client's wait for them; figures per round after the first, which "
        "packs the partitions. Payload: the arrays sent with the tasks (the weights, to "
        "every worker) and returned (a value and a gradient per partition). Loopback: all "
        "bytes the processes sent each other over TCP during the round, dask's own "
        "messages included (the kernel's counters of `lo`). Local: the same fit in one "
        "process on one thread.",
        "",
    ]
    for key, title, about in (
            ("grid", "ApproxStructuredPredictor, 100 binary 100 x 100 images (10^6 variables), "
                     "epsilon 1, convex counting numbers",
             lambda r: f"{r['n_vars']:,} variables, {r['n_weights']} weights"),
            ("conll", "NonLocalCRF (L-BFGS, `feature_pairs=\"all\"`), CoNLL-2000 training set",
             lambda r: f"{r['n_sentences']:,} sentences, {r['n_weights']:,} weights")):
        if key not in res:
            continue
        r = res[key]
        lines += [f"### {title}", "",
                  f"{about(r)}; {r['iters']} iterations. Local, one thread: "
                  f"{r['local_seconds']:.3f} s per iteration (median).", "",
                  "| workers | s per iteration (median) | s per round (median) | rounds per "
                  "iteration | payload out / back per round | loopback per round | "
                  "final objective, cluster / local |",
                  "|---|---|---|---|---|---|---|"]
        for row in r["rows"]:
            per_iter = (row["rounds"] - 1) / max(row["n_iter"], 1)
            lines.append(f"| {row['workers']} | {row['per_iteration']:.3f} | "
                         f"{row['seconds']:.3f} | {per_iter:.2f} | "
                         f"{size(row['out'])} / {size(row['back'])} | {size(row['lo'])} | "
                         f"{row['objective']:.6f} / {r['local_objective']:.6f} |")
        lines.append("")
    if "bcfw" in res:
        b = res["bcfw"]
        seq = b["sequential"]
        lines += ["### Parallel BCFW against sequential BCFW (OCR, folds 1-4)", "",
                  f"{b['n_words']:,} words, C = 1, no averaging; the relative duality gap "
                  "(gap / primal) after the same number of passes over the data. The "
                  "parallel variant on a 2-worker cluster with 2, 4 and 8 partitions "
                  "(a pass is a round: every partition's samples once from the same "
                  "weights, then the client's step on their summed move).", "",
                  "| passes | sequential | " + " | ".join(
                      f"parallel, {k} partitions" for k in (2, 4, 8)) + " |",
                  "|---|---|---|---|---|"]
        for i, p in enumerate(seq["passes"]):
            cells = [f"{seq['gap'][i] / seq['primal'][i]:.2e}"]
            for k in (2, 4, 8):
                r = b[str(k)] if str(k) in b else b[k]
                cells.append(f"{r['gap'][i] / r['primal'][i]:.2e}")
            lines.append(f"| {p} | " + " | ".join(cells) + " |")
        lines += ["", "Fit seconds: sequential " + f"{seq['seconds']:.1f}" + "; parallel " +
                  ", ".join(f"{k} partitions {(b[k] if k in b else b[str(k)])['seconds']:.1f}"
                            for k in (2, 4, 8)) + ".", ""]
    return lines


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--workers", type=int, nargs="+", default=[1, 2, 4, 8])
    ap.add_argument("--iters", type=int, default=6)
    ap.add_argument("--grid-images", type=int, default=100)
    ap.add_argument("--bcfw-passes", type=int, default=100)
    ap.add_argument("--tasks", nargs="*", default=["grid", "conll", "bcfw"],
                    help="tasks to measure (none: write the kept figures only)")
    ap.add_argument("--write-doc", action="store_true")
    args = ap.parse_args()
    # each task's figures are kept, so that a task can be measured again alone
    res = {}
    if os.path.exists(RESULTS):
        with open(RESULTS) as f:
            res = json.load(f)
    for task in args.tasks:
        res[task] = json.loads(json.dumps(globals()[task](args)))
        os.makedirs(os.path.dirname(RESULTS), exist_ok=True)
        with open(RESULTS, "w") as f:
            json.dump(res, f)
    lines = tables(res, args)
    print("\n".join(lines))
    if args.write_doc:
        write_section("bench_distributed", lines)


if __name__ == "__main__":
    main()
