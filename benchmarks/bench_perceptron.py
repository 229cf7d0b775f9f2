"""The averaged structured perceptron against BCFW and against CRFsuite's ``ap``.

Two tasks, every configuration in its own fresh subprocess with one thread:

* OCR letters, train on fold 1 (704 words), test on the other nine folds:
  ``StructuredPerceptron`` (averaged) and pystruct 0.3.2's ``StructuredPerceptron``
  (``average=True``, its ``ChainCRF``; in its own Python 3.6 environment, built by
  ``benchmarks/pystruct/build_env.sh``) for 10 and 50 passes, and
  ``StructuredSVM`` (BCFW, C = 0.1) for 10 and 200 passes;
* CoNLL-2000 chunking with ``skstruct.datasets.conll_features`` (the CRFsuite
  tutorial's features) vectorised by ``DictVectorizer``: ``StructuredPerceptron``
  and python-crfsuite's averaged perceptron (``algorithm="ap"``, its feature set
  of seen pairs) for 10 passes each, and ``StructuredSVM`` (BCFW, C = 0.1) for
  10 passes.

CPU seconds are those of the fit, feature vectorisation included for CoNLL
(crfsuite converts and stores the dicts inside its training time too), numba
compilation excluded (a warm-up fit on a few samples runs first).  Scores:
letter accuracy (OCR), chunk F1 (CoNLL, ``skstruct.metrics.segment_f1``).
Nothing is asserted; ``--write-doc`` writes the table into ``doc/benchmarks.md``.

Usage::

    python benchmarks/bench_perceptron.py [--write-doc]
"""

import argparse
import json
import os
import subprocess
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.dirname(HERE))
sys.path.insert(0, HERE)
DATA = os.path.join(os.path.dirname(os.path.dirname(HERE)), "shared", "data", "conll2000")
THREAD_VARS = ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS",
               "NUMBA_NUM_THREADS")

# name: (task, learner, passes)
CONFIGS = {
    "ocr perceptron 10": ("ocr", "perceptron", 10),
    "ocr perceptron 50": ("ocr", "perceptron", 50),
    "ocr pystruct 10": ("ocr", "pystruct", 10),
    "ocr pystruct 50": ("ocr", "pystruct", 50),
    "ocr bcfw 10": ("ocr", "bcfw", 10),
    "ocr bcfw 200": ("ocr", "bcfw", 200),
    "conll perceptron 10": ("conll", "perceptron", 10),
    "conll crfsuite-ap 10": ("conll", "crfsuite-ap", 10),
    "conll bcfw 10": ("conll", "bcfw", 10),
}


def _estimator(learner, passes):
    from skstruct import StructuredPerceptron, StructuredSVM

    if learner == "perceptron":
        return StructuredPerceptron(max_iter=passes, random_state=0, n_jobs=1)
    return StructuredSVM(C=0.1, max_iter=passes, check_every=0, random_state=0, n_jobs=1)


def run_pystruct(passes):
    """pystruct's averaged perceptron on OCR fold 1, through the head-to-head
    benchmark's runner (same arrays, its own process and environment)."""
    import tempfile

    import bench_pystruct

    data = bench_pystruct.load("ocr1")
    config = dict(model="chain", learner="perceptron", max_iter=passes, average=True,
                  inference="max-product", C=None)
    with tempfile.TemporaryDirectory() as tmp:
        inp, out = os.path.join(tmp, "in.npz"), os.path.join(tmp, "out.json")
        bench_pystruct.to_npz(inp, data, config)
        env = dict(os.environ, **{v: "1" for v in THREAD_VARS})
        subprocess.run([bench_pystruct.ensure_pystruct(),
                        os.path.join(HERE, "pystruct", "run_pystruct.py"), inp, out],
                       check=True, env=env)
        with open(out) as f:
            res = json.load(f)
    # wall seconds of pystruct's fit (its process runs one thread, no I/O inside)
    return dict(cpu=res["fit_seconds"], score=100.0 * res["test_accuracy"],
                passes=res["n_iter"])


def worker(name, data):
    task, learner, passes = CONFIGS[name]
    if learner == "pystruct":
        return dict(config=name, **run_pystruct(passes))
    if task == "ocr":
        from skstruct.datasets import load_letters

        d = load_letters()
        tr = d.folds == 1
        X = [x for x, t in zip(d.X, tr) if t]
        y = [v for v, t in zip(d.y, tr) if t]
        Xt = [x for x, t in zip(d.X, tr) if not t]
        yt = [v for v, t in zip(d.y, tr) if not t]
        _estimator(learner, 1).fit(X[:5], y[:5])
        cpu0 = time.process_time()
        est = _estimator(learner, passes).fit(X, y)
        cpu = time.process_time() - cpu0
        return dict(config=name, cpu=cpu, score=100.0 * est.score(Xt, yt),
                    passes=int(est.n_iter_))
    from skstruct.datasets import conll_features, load_conll
    from skstruct.metrics import segment_f1

    train = load_conll(os.path.join(data, "train.txt"))
    test = load_conll(os.path.join(data, "test.txt"))
    ftr, fte = conll_features(train.tokens), conll_features(test.tokens)
    if learner == "crfsuite-ap":
        import numpy as np
        from _crfsuite import run_crfsuite

        ref = run_crfsuite(ftr, train.y, fte, algorithm="ap", max_iterations=passes,
                           possible_states=False, possible_transitions=False)
        pred = [np.asarray(p) for p in ref["pred"]]
        return dict(config=name, cpu=ref["train_cpu_seconds"],
                    score=100.0 * segment_f1(test.y, pred), passes=ref["n_iter"])
    from sklearn.feature_extraction import DictVectorizer

    from skstruct.preprocessing import NodeTransformer

    small = NodeTransformer(DictVectorizer()).fit(ftr[:50])
    _estimator(learner, 1).fit(small.transform(ftr[:50]), train.y[:50])
    cpu0 = time.process_time()
    vec = NodeTransformer(DictVectorizer())
    Xtr = vec.fit_transform(ftr)
    est = _estimator(learner, passes).fit(Xtr, train.y)
    cpu = time.process_time() - cpu0
    pred = est.predict(vec.transform(fte))
    return dict(config=name, cpu=cpu, score=100.0 * segment_f1(test.y, pred),
                passes=int(est.n_iter_))


def run_subprocess(name, data):
    env = dict(os.environ, **{v: "1" for v in THREAD_VARS})
    cmd = [sys.executable, os.path.abspath(__file__), "--worker", name, "--data", data]
    res = subprocess.run(cmd, env=env, capture_output=True, text=True)
    if res.returncode:
        raise RuntimeError(f"{name} failed:\n{res.stderr}")
    return json.loads(res.stdout.strip().splitlines()[-1])


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--data", default=DATA)
    ap.add_argument("--write-doc", action="store_true")
    ap.add_argument("--worker", choices=CONFIGS, help=argparse.SUPPRESS)
    args = ap.parse_args()
    if args.worker:
        print(json.dumps(worker(args.worker, args.data)))
        return
    rows = []
    for name in CONFIGS:
        r = run_subprocess(name, args.data)
        print(f"{name:24s} CPU {r['cpu']:7.2f} s  score {r['score']:.2f}  passes {r['passes']}",
              flush=True)
        rows.append(r)
    lines = [
        "## The structured perceptron (`benchmarks/bench_perceptron.py`)",
        "",
        "Every configuration in its own process with one thread; CPU seconds of the fit "
        "(CoNLL: vectorising the feature dicts included, as crfsuite's training time includes "
        "converting them), numba compilation excluded. OCR: train fold 1, test folds 0 and "
        "2-9, letter accuracy. CoNLL-2000 chunking: the tutorial features, chunk F1 on the "
        "test set. BCFW at C = 0.1 without gap checks.",
        "",
        "| task | learner | passes | CPU s | score |",
        "|---|---|---|---|---|",
    ]
    labels = {"perceptron": "StructuredPerceptron (averaged)",
              "pystruct": "pystruct 0.3.2 StructuredPerceptron (averaged; wall s)",
              "crfsuite-ap": "python-crfsuite `ap` (averaged perceptron)",
              "bcfw": "StructuredSVM, BCFW, C = 0.1"}
    for r in rows:
        task, learner, _ = CONFIGS[r["config"]]
        lines.append(f"| {'OCR' if task == 'ocr' else 'CoNLL-2000'} | {labels[learner]} | "
                     f"{r['passes']} | {r['cpu']:.2f} | {r['score']:.2f} |")
    print("\n".join(lines))
    if args.write_doc:
        from _doc import write_section

        write_section("perceptron", lines)


if __name__ == "__main__":
    main()
