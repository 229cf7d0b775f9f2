"""Prediction latency of one sample, and throughput of a batch, beside python-crfsuite.

What users wait for at prediction time: ``predict([sample])`` on one sentence, image or
word as it arrives, and ``predict(samples)`` on a batch.  Four cases, each timed through
its whole pipeline (where there is one) and through the estimator step alone on samples
already transformed:

* ``CRF`` on CoNLL-2000 chunking (E. F. Tjong Kim Sang and S. Buchholz, "Introduction to
  the CoNLL-2000 Shared Task: Chunking", CoNLL 2000), with the feature dicts of the
  sklearn-crfsuite tutorial (:func:`skstruct.datasets.conll_features`), the documented
  pipeline ``make_pipeline(NodeTransformer(DictVectorizer()), CRF(...))``, trained on the
  first 3000 training sentences and timed on the first 600 test sentences; beside it
  python-crfsuite's ``Tagger.tag`` on the same dicts (crfsuite reads them itself), its
  model trained by L-BFGS on the same sentences with the same number of iterations and
  the same L2 weight (``c2 = 1 / (2 C)``), crfsuite's default feature set, and timed in
  the same process and rounds as each tree's CRF;
* ``StructuredSVM`` with a ``ChainModel`` on the same data and pipeline;
* ``StructuredSVM`` with a ``ChainModel`` on the OCR letters (dense pixel features, 600
  test words), estimator only;
* ``StructuredSVM`` with a ``GraphModel`` on the snakes (4-connected grids with edge
  features, decoded by TRW-S; the 100 test images), estimator only.

Everything runs on one thread: ``NUMBA_NUM_THREADS``, ``OMP_NUM_THREADS``,
``OPENBLAS_NUM_THREADS`` and ``MKL_NUM_THREADS`` are set to 1 before anything is imported
and threadpoolctl limits every pool to 1.  Per sample: every test sample is predicted on its
own (``predict([x])``), the sweep is timed as a whole and divided by the number of samples
(microseconds per call, total / N), best of 7 rounds.  Batch: one ``predict`` of all test
samples, best of 7 rounds, as nodes (tokens, letters, pixels) per second.  Within a round
the sweeps of the pipeline, the estimator and crfsuite run back to back; the comparison
with crfsuite is the median over the rounds of each round's ratio, which the machine's load
moves less than a ratio of two bests taken at different moments.  A warm-up call of each
kind comes first, so no compilation is timed.

The models are trained once, in this process, and pickled; every measurement of skstruct
runs in a fresh subprocess that loads them.  With ``--revision REV`` the same
measurements also run on revision ``REV`` of skstruct (checked out once as a detached git
worktree under ``benchmarks/.revisions/<sha>`` and put first on ``PYTHONPATH`` of its
subprocess), side by side with the working tree, and the predictions of the two are
compared.  Nothing is asserted: the script reports.

Run::

    python benchmarks/bench_latency.py [--revision 3decb23] [--quick] [--write-doc]

Bounded time: about 5 minutes with cached kernels on two cores (training included; a
cold numba cache adds the compilation of the kernels of each tree, a few minutes more);
``--quick`` trains on fewer samples with fewer iterations and times 60 samples once, a
smoke run of about a minute whose figures are not comparable with a full run's.
``--write-doc`` writes the working tree's table into section ``bench_latency`` of
``doc/benchmarks.md`` and, with ``--revision``, the side-by-side table into the same section
of ``benchmarks/HISTORY.md``.
"""

import os

for _var in ("NUMBA_NUM_THREADS", "OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS",
             "MKL_NUM_THREADS"):
    os.environ[_var] = "1"

import argparse  # noqa: E402
import datetime  # noqa: E402
import hashlib  # noqa: E402
import json  # noqa: E402
import pickle  # noqa: E402
import platform  # noqa: E402
import subprocess  # noqa: E402
import sys  # noqa: E402
import tempfile  # noqa: E402
import time  # noqa: E402

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)
REVISIONS = os.path.join(HERE, ".revisions")
MARK = "@@bench_latency "
C_CRF = 0.5     # crfsuite's default c2 = 1.0


def _find_conll():
    d = ROOT
    while True:
        path = os.path.join(d, "shared", "data", "conll2000")
        if os.path.isdir(path):
            return path
        if os.path.dirname(d) == d:
            return os.path.join(os.path.dirname(ROOT), "shared", "data", "conll2000")
        d = os.path.dirname(d)


# ------------------------------------------------------------------ measurement
def _rounds(timed, rounds):
    """Each of ``timed`` (name -> (call, inputs, per_sample)) run once as a warm-up, then
    ``rounds`` times in turn, the calls of one round back to back, so that what the
    machine's load does to one it does to the others; name -> seconds of each round
    (per sample: ``call([x])`` on every input, total / N; else ``call(inputs)``)."""
    out = {name: [] for name in timed}
    for call, X, per_sample in timed.values():
        call([X[0]]) if per_sample else call(X)
    for _ in range(rounds):
        for name, (call, X, per_sample) in timed.items():
            t0 = time.perf_counter()
            if per_sample:
                for x in X:
                    call([x])
                out[name].append((time.perf_counter() - t0) / len(X))
            else:
                call(X)
                out[name].append(time.perf_counter() - t0)
    return out


def _digest(pred):
    h = hashlib.sha256()
    for p in pred:
        h.update(repr(list(map(str, p))).encode())
    return h.hexdigest()[:16]


def child(path, rounds, crfsuite_model):
    """Measure every case of the pickle ``path`` with the skstruct on ``sys.path``, and
    python-crfsuite's tagger ``crfsuite_model`` in the same rounds as the CRF."""
    import statistics

    from threadpoolctl import threadpool_limits

    import skstruct

    threadpool_limits(1)
    with open(path, "rb") as f:
        cases = pickle.load(f)
    out = {"file": skstruct.__file__}
    for name, case in cases.items():
        est, pipe, X = case["estimator"], case["pipeline"], case["X"]
        Xe = pipe[0].transform(X) if pipe is not None else X
        row = {"n_samples": len(X), "n_nodes": case["n_nodes"]}
        timed = {"est_us": (est.predict, Xe, True)}
        tagger = None
        if pipe is not None:
            timed["pipe_us"] = (pipe.predict, X, True)
        if name.startswith("CRF") and crfsuite_model:
            import pycrfsuite

            tagger = pycrfsuite.Tagger()
            tagger.open(crfsuite_model)

            def tag_all(xs, tag=tagger.tag):
                return [tag(x) for x in xs]

            timed["crfsuite_us"] = (tag_all, X, True)
        per = _rounds(timed, rounds)
        for key, times in per.items():
            row[key] = 1e6 * min(times)
        if "crfsuite_us" in per:
            # the ratio of each round, its two sweeps back to back: steadier than the
            # ratio of two bests taken in different rounds
            row["pipe_vs_crfsuite"] = statistics.median(
                a / b for a, b in zip(per["pipe_us"], per["crfsuite_us"]))
        timed = {"est_nodes_s": (est.predict, Xe, False)}
        if pipe is not None:
            timed["pipe_nodes_s"] = (pipe.predict, X, False)
        if tagger is not None:
            timed["crfsuite_nodes_s"] = (tag_all, X, False)
        per = _rounds(timed, rounds)
        for key, times in per.items():
            row[key] = case["n_nodes"] / min(times)
        if tagger is not None:
            # (seconds per round: crfsuite's time over ours is our throughput over its)
            row["pipe_vs_crfsuite_batch"] = statistics.median(
                b / a for a, b in zip(per["pipe_nodes_s"], per["crfsuite_nodes_s"]))
            tagger.close()
        row["digest"] = _digest(est.predict(Xe))
        out[name] = row
    print(MARK + json.dumps(out), flush=True)


def _run_child(tree, path, rounds, crfsuite_model):
    env = dict(os.environ)
    env["PYTHONPATH"] = tree + os.pathsep + env.get("PYTHONPATH", "")
    with tempfile.TemporaryDirectory() as cwd:
        proc = subprocess.run([sys.executable, os.path.abspath(__file__), "--child", path,
                               "--rounds", str(rounds), "--crfsuite-model", crfsuite_model],
                              cwd=cwd, env=env,
                              capture_output=True, text=True)
    for line in proc.stdout.splitlines():
        if line.startswith(MARK):
            return json.loads(line[len(MARK):])
    tail = "\n".join(proc.stderr.strip().splitlines()[-15:])
    print(f"measurement on {tree} failed:\n{tail}", file=sys.stderr)
    return None


def _revision_tree(rev):
    sha = subprocess.run(["git", "-C", ROOT, "rev-parse", rev], check=True, capture_output=True,
                         text=True).stdout.strip()
    tree = os.path.join(REVISIONS, sha[:12])
    if not os.path.isdir(tree):
        os.makedirs(REVISIONS, exist_ok=True)
        subprocess.run(["git", "-C", ROOT, "worktree", "add", "--detach", tree, sha],
                       check=True, capture_output=True)
    return tree, sha[:12]


# ------------------------------------------------------------------ training
def _crfsuite(ftr, ytr, iters, path):
    """python-crfsuite trained on the same dicts, its model written to ``path``."""
    import pycrfsuite

    trainer = pycrfsuite.Trainer(algorithm="lbfgs", verbose=False)
    for x, y in zip(ftr, ytr):
        if len(y):
            trainer.append(x, [str(t) for t in y])
    trainer.set_params({"c1": 0.0, "c2": 1.0 / (2.0 * C_CRF), "max_iterations": iters})
    trainer.train(path)


def train(quick, data):
    """The fitted cases, and crfsuite's figures."""
    import warnings

    import numpy as np
    from sklearn.exceptions import ConvergenceWarning
    from sklearn.feature_extraction import DictVectorizer
    from sklearn.pipeline import make_pipeline

    from skstruct import CRF, StructuredSVM
    from skstruct.datasets import conll_features, load_conll, load_letters, load_snakes
    from skstruct.models import ChainModel, GraphModel
    from skstruct.preprocessing import NodeTransformer

    # the fits are stopped at fixed budgets: prediction's cost does not depend on them
    warnings.filterwarnings("ignore", category=ConvergenceWarning)
    n_train, n_test = (300, 60) if quick else (3000, 600)
    crf_iter = 10 if quick else 50
    train_ = load_conll(os.path.join(data, "train.txt"))
    test = load_conll(os.path.join(data, "test.txt"))
    ftr, ytr = conll_features(train_.tokens[:n_train]), train_.y[:n_train]
    fte = conll_features(test.tokens[:n_test])
    n_tokens = sum(len(s) for s in fte)
    cases = {}
    pipe = make_pipeline(NodeTransformer(DictVectorizer()),
                         CRF(C=C_CRF, max_iter=crf_iter, tol=0.0)).fit(ftr, ytr)
    cases["CRF, CoNLL-2000"] = dict(pipeline=pipe, estimator=pipe[-1], X=fte,
                                    n_nodes=n_tokens, unit="tokens")
    pipe = make_pipeline(NodeTransformer(DictVectorizer()),
                         StructuredSVM(C=0.1, model=ChainModel(), max_iter=2 if quick else 5,
                                       random_state=0)).fit(ftr, ytr)
    cases["StructuredSVM chain, CoNLL-2000"] = dict(pipeline=pipe, estimator=pipe[-1], X=fte,
                                                    n_nodes=n_tokens, unit="tokens")
    d = load_letters()
    train_words = np.flatnonzero(d.folds != 0)[:150 if quick else 1500]
    test_words = np.flatnonzero(d.folds == 0)[:n_test]
    svm = StructuredSVM(C=0.1, model=ChainModel(), max_iter=5 if quick else 20,
                        random_state=0).fit([d.X[i] for i in train_words],
                                            [d.y[i] for i in train_words])
    Xo = [d.X[i] for i in test_words]
    cases["StructuredSVM chain, OCR letters"] = dict(
        pipeline=None, estimator=svm, X=Xo, n_nodes=sum(len(x) for x in Xo), unit="letters")
    s = load_snakes()
    n_img = 40 if quick else 200
    svm = StructuredSVM(C=0.1, model=GraphModel(inference_method="trws"),
                        max_iter=3 if quick else 10, random_state=0).fit(s.X_train[:n_img],
                                                                         s.y_train[:n_img])
    Xs = s.X_test[:30] if quick else s.X_test
    cases["StructuredSVM GraphModel (TRW-S), snakes"] = dict(
        pipeline=None, estimator=svm, X=Xs, n_nodes=sum(x[0].shape[0] for x in Xs),
        unit="pixels")
    return cases, (ftr, ytr, fte, crf_iter)


# ------------------------------------------------------------------ report
def _fmt(v):
    return "—" if v is None else f"{v:,.0f}"


def report(cases, results, names):
    lines = []
    head = "| case | tree | per sample, pipeline (us) | per sample, estimator (us) | " \
           "batch, pipeline (nodes/s) | batch, estimator (nodes/s) |"
    lines += [head, "|---|---|---:|---:|---:|---:|"]
    for name, case in cases.items():
        for tree, res in zip(names, results):
            if res is None:
                lines.append(f"| {name} | {tree} | failed | | | |")
                continue
            r = res[name]
            lines.append(f"| {name} ({r['n_samples']} samples, {r['n_nodes']} "
                         f"{case['unit']}) | {tree} | {_fmt(r.get('pipe_us'))} | "
                         f"{_fmt(r['est_us'])} | {_fmt(r.get('pipe_nodes_s'))} | "
                         f"{_fmt(r['est_nodes_s'])} |")
            if "crfsuite_us" in r:
                lines.append(f"| {name}, in the same rounds | python-crfsuite `Tagger.tag` | "
                             f"{_fmt(r['crfsuite_us'])} | | {_fmt(r['crfsuite_nodes_s'])} | |")
    lines.append("")
    if len(results) == 2 and all(results):
        same = [n for n in cases if results[0][n]["digest"] == results[1][n]["digest"]]
        lines.append(f"Batch predictions identical on both trees: {len(same)} of "
                     f"{len(cases)} cases" + ("" if len(same) == len(cases) else
                                              f" (differ: {sorted(set(cases) - set(same))})"))
        lines.append("")
    return lines


def page_report(cases, res):
    """The working tree's rows alone, python-crfsuite's beside the CRF's, for the page."""
    lines = ["| case | per sample, pipeline (us) | per sample, estimator (us) | "
             "batch, pipeline (nodes/s) | batch, estimator (nodes/s) |",
             "|---|---:|---:|---:|---:|"]
    for name, case in cases.items():
        r = res[name]
        lines.append(f"| {name} ({r['n_samples']} samples, {r['n_nodes']} {case['unit']}) | "
                     f"{_fmt(r.get('pipe_us'))} | {_fmt(r['est_us'])} | "
                     f"{_fmt(r.get('pipe_nodes_s'))} | {_fmt(r['est_nodes_s'])} |")
        if "crfsuite_us" in r:
            data = name.split(", ", 1)[-1]
            lines.append(f"| python-crfsuite `Tagger.tag`, {data}, in the same rounds | "
                         f"{_fmt(r['crfsuite_us'])} | | {_fmt(r['crfsuite_nodes_s'])} | |")
    lines.append("")
    r = res.get("CRF, CoNLL-2000", {})
    if "crfsuite_us" in r:
        lines += ["Against python-crfsuite, the median of the rounds' ratios: one sentence "
                  f"through the pipeline in {r['pipe_vs_crfsuite']:.2f}x crfsuite's time, a "
                  f"batch of {r['n_samples']} sentences at {r['pipe_vs_crfsuite_batch']:.2f}x "
                  "its throughput.", ""]
    return lines


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--revision", help="also measure this revision of skstruct")
    ap.add_argument("--quick", action="store_true", help="smoke run")
    ap.add_argument("--write-doc", action="store_true")
    ap.add_argument("--data", default=_find_conll(), help="CoNLL-2000 folder")
    ap.add_argument("--child", help=argparse.SUPPRESS)
    ap.add_argument("--rounds", type=int, default=3, help=argparse.SUPPRESS)
    ap.add_argument("--crfsuite-model", default="", help=argparse.SUPPRESS)
    args = ap.parse_args()
    if args.child:
        child(args.child, args.rounds, args.crfsuite_model)
        return
    sys.path.insert(0, ROOT)
    import numba
    import numpy as np
    from threadpoolctl import threadpool_limits

    threadpool_limits(1)
    rounds = 1 if args.quick else 7
    t0 = time.perf_counter()
    cases, (ftr, ytr, fte, iters) = train(args.quick, args.data)
    trees, names = [ROOT], ["working tree"]
    if args.revision:
        tree, sha = _revision_tree(args.revision)
        trees.append(tree)
        names.append(f"revision {sha[:7]}")
    with tempfile.TemporaryDirectory() as tmp:
        path = os.path.join(tmp, "cases.pkl")
        with open(path, "wb") as f:
            pickle.dump({k: {kk: vv for kk, vv in v.items() if kk != "unit"}
                         for k, v in cases.items()}, f)
        model = os.path.join(tmp, "crfsuite.model")
        _crfsuite(ftr, ytr, iters, model)
        results = [_run_child(tree, path, rounds, model) for tree in trees]
    seconds = time.perf_counter() - t0
    machine = (f"{platform.system()} {platform.release()}, {platform.machine()}, "
               f"{os.cpu_count()} CPUs; Python {platform.python_version()}, numpy "
               f"{np.__version__}, numba {numba.__version__}")
    method = (f"{datetime.date.today().isoformat()}; {machine}.  One thread for everything "
              "(numba, OpenMP and BLAS pools set to 1).  Per sample: `predict([x])` on each "
              f"test sample in turn, total time / N, best of {rounds} rounds; batch: one "
              f"`predict` of all test samples, best of {rounds} rounds; python-crfsuite is "
              "timed in the same process and rounds as the CRF, each round's sweeps back to "
              "back.")
    lines = [
        f"`python benchmarks/bench_latency.py{' --quick' if args.quick else ''}"
        f"{' --revision ' + args.revision if args.revision else ''}`, {method}  "
        f"Run in {seconds:.0f} s.",
        "",
        *report(cases, results, names),
    ]
    print("\n".join(lines))
    if args.write_doc and results[0] is not None:
        from _doc import HISTORY, write_section

        # the page shows this tree's figures; a side-by-side with a revision is a
        # developer's note
        write_section("bench_latency", [
            f"`python benchmarks/bench_latency.py`, {method}  *Pipeline*: the documented "
            "`make_pipeline(NodeTransformer(DictVectorizer()), CRF(...))` from feature dicts; "
            "*estimator*: the fitted estimator alone on arrays.", "",
            *page_report(cases, results[0])])
        if args.revision:
            write_section("bench_latency", ["## Prediction latency, side by side with a "
                                            "revision (`benchmarks/bench_latency.py`)", "",
                                            *lines], HISTORY)


if __name__ == "__main__":
    main()
