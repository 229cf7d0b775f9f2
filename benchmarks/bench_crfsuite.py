"""CoNLL-2000 chunking: skstruct's plain CRF against python-crfsuite's L-BFGS.

Same data (the CoNLL-2000 chunking files, 8936 training and 2012 test
sentences), same features (the sklearn-crfsuite tutorial's feature dicts from
:func:`skstruct.datasets.conll_features`, vectorised by ``DictVectorizer`` for
skstruct and encoded identically for crfsuite: see ``benchmarks/_crfsuite.py``),
same objective (``-loglik + c2 ||w||^2``, i.e. ``C = 1 / (2 c2)``), same budget of
L-BFGS iterations, each side with one thread.

Four configurations, each in its own fresh subprocess (so that peak memory is
that run's alone) with ``NUMBA_NUM_THREADS``, ``OMP_NUM_THREADS``,
``OPENBLAS_NUM_THREADS`` and ``MKL_NUM_THREADS`` set to 1 (and
``NonLocalCRF(n_jobs=1)``):

* ``skstruct all``: ``NonLocalCRF(feature_pairs="all")``, a weight for every
  attribute x label pair;
* ``skstruct seen``: ``NonLocalCRF(feature_pairs="seen")``, weights only for the
  pairs seen in training;
* ``crfsuite all``: ``feature.possible_states=True`` (every attribute x label
  pair, the dense model of ``skstruct all``);
* ``crfsuite seen``: ``feature.possible_states=False``, crfsuite's default (the
  pairs seen in training).

Every subprocess loads the data and builds the feature dicts of both sets
first (not timed; the same for all).  CPU and wall seconds cover training:
for skstruct ``NodeTransformer(DictVectorizer()).fit_transform`` and
``NonLocalCRF.fit`` (its kernels compiled or loaded from numba's cache on a
small slice beforehand), for crfsuite the conversion of the dicts,
``Trainer.append`` and ``Trainer.train``.  Peak memory is the subprocess's
peak resident set size (``ru_maxrss``), data and feature dicts included; F1
is the chunk F1 on the test set.  Ratios are skstruct / crfsuite all, then
skstruct / crfsuite seen.

Usage::

    python benchmarks/bench_crfsuite.py [--c2 1.0] [--iters 100] [--repeat 2]
                                        [--write-doc]

Prints a markdown table (best CPU and wall time over the repeats, largest
peak); with ``--write-doc`` also writes its section of ``doc/benchmarks.md``.
Needs ``pip install python-crfsuite``.
"""

import argparse
import json
import os
import platform
import resource
import subprocess
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
DATA = os.path.join(os.path.dirname(os.path.dirname(HERE)), "shared", "data", "conll2000")
CONFIGS = ("skstruct all", "skstruct seen", "crfsuite all", "crfsuite seen")
THREAD_VARS = ("NUMBA_NUM_THREADS", "OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS",
               "MKL_NUM_THREADS")


def _peak_mb():
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024.0


def worker(config, c2, iters, data):
    """Run one configuration in this process; return its figures."""
    sys.path.insert(0, os.path.dirname(HERE))
    sys.path.insert(0, HERE)
    import numpy as np

    from skstruct.datasets import conll_features, load_conll
    from skstruct.metrics import segment_f1

    train = load_conll(os.path.join(data, "train.txt"))
    test = load_conll(os.path.join(data, "test.txt"))
    ftr, fte = conll_features(train.tokens), conll_features(test.tokens)
    C = 1.0 / (2.0 * c2)
    side, pairs = config.split()
    if side == "skstruct":
        from sklearn.feature_extraction import DictVectorizer

        from skstruct import NonLocalCRF
        from skstruct.preprocessing import NodeTransformer

        # compile (or load) the kernels on a small slice, outside the timings
        small = NodeTransformer(DictVectorizer()).fit(ftr[:50])
        NonLocalCRF(C=C, max_iter=2, feature_pairs=pairs, n_jobs=1).fit(
            small.transform(ftr[:50]), train.y[:50])
        cpu0, wall0 = time.process_time(), time.perf_counter()
        vec = NodeTransformer(DictVectorizer())
        Xtr = vec.fit_transform(ftr)
        crf = NonLocalCRF(C=C, max_iter=iters, tol=0.0, feature_pairs=pairs, n_jobs=1)
        crf.fit(Xtr, train.y)
        cpu, wall = time.process_time() - cpu0, time.perf_counter() - wall0
        pred = crf.predict(vec.transform(fte))
        peak = _peak_mb()
        n_weights = crf.coef_.size
        if pairs == "seen":
            # the weights trained: pairs (feature, class) of a non-zero feature value
            seen = np.zeros(crf.unary_coef_.shape, bool)
            for x, yy in zip(Xtr, train.y):
                rows = np.repeat(np.searchsorted(crf.classes_, yy), np.diff(x.indptr))
                nz = x.data != 0
                seen[rows[nz], x.indices[nz]] = True
            n_weights -= int((~seen).sum())
        out = dict(n_iter=int(crf.n_iter_), objective=float(crf.history_["objective"][-1]),
                   n_weights=n_weights)
    else:
        from _crfsuite import run_crfsuite

        ref = run_crfsuite(ftr, train.y, fte, c2=c2, max_iterations=iters,
                           possible_states=pairs == "all")
        cpu, wall = ref["train_cpu_seconds"], ref["train_wall_seconds"]
        peak = _peak_mb()
        pred = [np.asarray(p) for p in ref["pred"]]
        out = dict(n_iter=ref["n_iter"], objective=C * ref["objective"],
                   n_weights=ref["n_features"])
    out.update(config=config, cpu=cpu, wall=wall, peak_mb=peak,
               f1=100.0 * segment_f1(test.y, pred))
    return out


def run_subprocess(config, args):
    env = dict(os.environ, **{v: "1" for v in THREAD_VARS})
    cmd = [sys.executable, os.path.abspath(__file__), "--worker", config, "--c2",
           str(args.c2), "--iters", str(args.iters), "--data", args.data]
    res = subprocess.run(cmd, env=env, capture_output=True, text=True)
    if res.returncode:
        raise RuntimeError(f"{config} failed:\n{res.stderr}")
    return json.loads(res.stdout.strip().splitlines()[-1])


def table(runs, args):
    best = {}
    for c in CONFIGS:
        rs = [r for r in runs if r["config"] == c]
        if rs:
            best[c] = dict(rs[0], cpu=min(r["cpu"] for r in rs),
                           wall=min(r["wall"] for r in rs),
                           peak_mb=max(r["peak_mb"] for r in rs), n_runs=len(rs))
    lines = [
        "## CoNLL-2000 chunking: plain CRF against python-crfsuite",
        "",
        f"`python benchmarks/bench_crfsuite.py --c2 {args.c2} --iters {args.iters} --repeat "
        f"{args.repeat}`; {platform.machine()}, {os.cpu_count()} CPUs; every configuration "
        "in its own subprocess with one thread. Same feature dicts (sklearn-crfsuite "
        f"tutorial), same objective (`-loglik + c2 ||w||^2`, `C = 1 / (2 c2) = "
        f"{1 / (2 * args.c2):g}`), {args.iters} L-BFGS iterations. Training time: "
        "vectorising + fit for skstruct, dict conversion + append + train for crfsuite "
        "(best of the repeats). Peak: the subprocess's peak RSS, data and feature dicts "
        "(about 650 MB) included, test-set tagging too. Ratios: skstruct / crfsuite all, then "
        "/ crfsuite seen (*all*: every attribute x label pair; *seen*: the pairs seen in "
        "training, crfsuite's and sklearn-crfsuite's default).",
        "",
        "| configuration | weights | CPU s | wall s | peak MB | chunk F1 | final objective "
        "| CPU ratio | wall ratio | peak ratio |",
        "|---|---|---|---|---|---|---|---|---|---|",
    ]
    for c, r in best.items():
        refs = [best.get(f"crfsuite {p}") for p in ("all", "seen")]
        if c.startswith("skstruct") and all(refs):
            ratios = " | ".join(" / ".join(f"{r[k] / ref[k]:.2f}" for ref in refs)
                                for k in ("cpu", "wall", "peak_mb"))
        else:
            ratios = " | | "
        lines.append(f"| {c} | {r['n_weights']} | {r['cpu']:.1f} | {r['wall']:.1f} | "
                     f"{r['peak_mb']:.0f} | {r['f1']:.2f} | {r['objective']:.1f} | {ratios} |")
    return lines


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--c2", type=float, default=1.0)
    ap.add_argument("--iters", type=int, default=100)
    ap.add_argument("--repeat", type=int, default=2)
    ap.add_argument("--configs", nargs="+", default=list(CONFIGS), choices=CONFIGS)
    ap.add_argument("--data", default=DATA)
    ap.add_argument("--write-doc", action="store_true",
                    help="also write the table into doc/benchmarks.md")
    ap.add_argument("--worker", choices=CONFIGS, help=argparse.SUPPRESS)
    args = ap.parse_args()
    if args.worker:
        print(json.dumps(worker(args.worker, args.c2, args.iters, args.data)))
        return
    runs = []
    for rep in range(args.repeat):
        for config in args.configs:
            r = run_subprocess(config, args)
            runs.append(r)
            print(f"run {rep + 1} {config}: CPU {r['cpu']:.1f} s, wall {r['wall']:.1f} s, "
                  f"peak {r['peak_mb']:.0f} MB, F1 {r['f1']:.2f}, {r['n_iter']} iterations",
                  flush=True)
    lines = table(runs, args)
    print("\n".join(lines))
    if args.write_doc:
        sys.path.insert(0, HERE)
        from _doc import write_section

        write_section("crfsuite", lines)


if __name__ == "__main__":
    main()
