"""CoNLL-2000 chunking: every training algorithm of CRFsuite against skstruct's.

Each of python-crfsuite's training algorithms beside skstruct's ``CRF`` with the
same-named solver and the same settings, side by side in one run: the same data
(the CoNLL-2000 chunking files, 8936 training and 2012 test sentences), the
same feature dicts (the sklearn-crfsuite tutorial's, from
:func:`skstruct.datasets.conll_features`), CRFsuite's default feature set on
both sides (the attribute-label pairs seen in training: ``feature_pairs="seen"``)
and CRFsuite's default stopping rules.

=================  ===========================================  ==================================
row                CRFsuite                                      skstruct ``CRF``
=================  ===========================================  ==================================
lbfgs L2           ``lbfgs``, c1 = 0, c2 = 1 (its default)        C = 0.5, l1_ratio = 0
lbfgs c1=c2=0.1    ``lbfgs``, c1 = c2 = 0.1 (the tutorial's)      C = 10/3, l1_ratio = 1/3 (OWL-QN)
lbfgs L1           ``lbfgs``, c1 = 1, c2 = 0                      C = 1, l1_ratio = 1 (OWL-QN)
l2sgd              ``l2sgd``, c2 = 1                              ``solver="l2sgd"``, C = 0.5
ap                 ``ap``                                         ``solver="perceptron"``
pa                 ``pa`` (PA-I, c = 1)                           ``solver="pa"``, C = 1
arow               ``arow``                                       ``solver="arow"``
=================  ===========================================  ==================================

Every row has the sklearn-crfsuite tutorial's budget, ``max_iterations=100``
(CRFsuite's default for the perceptron, PA and AROW; without it, CRFsuite's
OWL-QN at c1 = c2 = 0.1 runs 1205 iterations and 17 CPU minutes here).  Within
it, L-BFGS on both sides stops as CRFsuite does by default: the objective's
relative decrease over 10 iterations below 1e-5, or ``||g|| / max(1, ||w||) <=
1e-5`` (``tol=1e-5, solver_options={"period": 10, "epsilon": 1e-5}``); ``l2sgd``
by its own period and delta (10, 1e-6).

Every configuration runs in its own subprocess with one thread
(``NUMBA_NUM_THREADS``, ``OMP_NUM_THREADS``, ``OPENBLAS_NUM_THREADS`` and
``MKL_NUM_THREADS`` set to 1, ``n_jobs=1``).  Reported: chunk F1 on the test
set; CPU seconds of the training (skstruct: ``NodeTransformer(DictVectorizer())``
and ``fit``, its kernels compiled beforehand on a small slice; CRFsuite: the
dict conversion, ``append`` and ``train``); the subprocess's peak resident set
size (data and feature dicts included, the same for both); the non-zero weights
of the model; and for the L-BFGS rows the objective ``-loglik + c1 ||w||_1 + c2
||w||^2`` of both weight vectors, evaluated by the same code on the training set
(CRFsuite's weights read from its model file through ``Tagger.info()``).

Usage::

    python benchmarks/bench_crfsuite_algorithms.py [--rows lbfgs-l2 ...] [--write-doc]

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
THREAD_VARS = ("NUMBA_NUM_THREADS", "OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS",
               "MKL_NUM_THREADS")
# CRFsuite's L-BFGS stopping rule, and the tutorial's budget of 100 iterations (to
# convergence, CRFsuite's OWL-QN at c1 = c2 = 0.1 runs 1205 iterations, 17 CPU minutes)
LBFGS_STOP = {"tol": 1e-5, "solver_options": {"period": 10, "epsilon": 1e-5},
              "max_iter": 100}
MAX_ITER = 100
# row -> (CRFsuite algorithm, CRFsuite params, skstruct CRF params, (c1, c2) or None)
ROWS = {
    "lbfgs-l2": ("lbfgs", {"c1": 0.0, "c2": 1.0, "max_iterations": MAX_ITER},
                 dict(C=0.5, l1_ratio=0.0, **LBFGS_STOP), (0.0, 1.0)),
    "lbfgs-tutorial": ("lbfgs", {"c1": 0.1, "c2": 0.1, "max_iterations": MAX_ITER},
                       dict(C=1 / 0.3, l1_ratio=1 / 3, **LBFGS_STOP), (0.1, 0.1)),
    "lbfgs-l1": ("lbfgs", {"c1": 1.0, "c2": 0.0, "max_iterations": MAX_ITER},
                 dict(C=1.0, l1_ratio=1.0, **LBFGS_STOP), (1.0, 0.0)),
    "l2sgd": ("l2sgd", {"c2": 1.0, "max_iterations": MAX_ITER},
              dict(solver="l2sgd", C=0.5, max_iter=MAX_ITER), None),
    "ap": ("ap", {}, dict(solver="perceptron", max_iter=100), None),
    "pa": ("pa", {}, dict(solver="pa", C=1.0, max_iter=100), None),
    "arow": ("arow", {}, dict(solver="arow", max_iter=100), None),
}


def _peak_mb():
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024.0


def _objective(design, coef, c1, c2):
    """CRFsuite's objective ``-loglik + c1 ||w||_1 + c2 ||w||^2`` at ``coef``."""
    import numpy as np

    from skstruct.solvers._crf import CRFObjective

    nll = CRFObjective(design, 1.0, l2=0.0).value_grad(coef)[0]
    return float(nll + c1 * np.abs(coef).sum() + c2 * coef @ coef)


def worker(row, side, data):
    """Run one row on one side in this process; return its figures."""
    sys.path.insert(0, os.path.dirname(HERE))
    sys.path.insert(0, HERE)
    import warnings

    import numpy as np
    from sklearn.feature_extraction import DictVectorizer

    from skstruct import CRF
    from skstruct.datasets import conll_features, load_conll
    from skstruct.metrics import segment_f1
    from skstruct.preprocessing import NodeTransformer

    algorithm, cs_params, sk_params, penalty = ROWS[row]
    train = load_conll(os.path.join(data, "train.txt"))
    test = load_conll(os.path.join(data, "test.txt"))
    ftr, fte = conll_features(train.tokens), conll_features(test.tokens)
    out = {"row": row, "side": side}
    if side == "skstruct":
        params = dict(sk_params, feature_pairs="seen", n_jobs=1, random_state=0)
        # compile (or load) the kernels on a small slice, outside the timings
        small = NodeTransformer(DictVectorizer()).fit(ftr[:50])
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            CRF(**dict(params, max_iter=2)).fit(small.transform(ftr[:50]), train.y[:50])
        cpu0, wall0 = time.process_time(), time.perf_counter()
        vec = NodeTransformer(DictVectorizer())
        Xtr = vec.fit_transform(ftr)
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            crf = CRF(**params).fit(Xtr, train.y)
        cpu, wall = time.process_time() - cpu0, time.perf_counter() - wall0
        pred = crf.predict(vec.transform(fte))
        coef = crf.coef_
        out.update(n_iter=int(crf.n_iter_), nnz=int(crf.n_nonzero_),
                   warned=[str(w.message)[:200] for w in caught])
        design = crf.model_.design(Xtr, train.y)[0]
    else:
        from _crfsuite import train_crfsuite

        ref = train_crfsuite(ftr, train.y, fte, algorithm, cs_params)
        cpu, wall = ref["train_cpu_seconds"], ref["train_wall_seconds"]
        pred = [np.asarray(p) for p in ref["pred"]]
        out.update(n_iter=ref["n_iter"],
                   nnz=sum(1 for v in ref["state_features"].values() if v != 0)
                   + sum(1 for v in ref["transitions"].values() if v != 0))
        coef = design = None
        if penalty is not None:
            # CRFsuite's weights in skstruct's layout, for the objective
            from skstruct.models import ChainModel

            vec = NodeTransformer(DictVectorizer()).fit(ftr)
            Xtr = vec.transform(ftr)
            design = ChainModel().fit_design(Xtr, train.y)[0]
            classes = np.unique(np.concatenate(train.y))
            cols = {c: k for k, c in enumerate(classes.tolist())}
            vocab = vec.transformer_.vocabulary_
            W = np.zeros((len(vocab), len(classes)))
            for (attr, lab), v in ref["state_features"].items():
                W[vocab[attr], cols[lab]] = v
            P = np.zeros((1, len(classes), len(classes)))
            for (a, b), v in ref["transitions"].items():
                P[0, cols[a], cols[b]] = v
            coef = np.concatenate([W.ravel(), P.ravel()])
    if penalty is not None:
        out["objective"] = _objective(design, coef, *penalty)
    out.update(cpu=cpu, wall=wall, peak_mb=_peak_mb(), f1=100.0 * segment_f1(test.y, pred))
    return out


def run_subprocess(row, side, data):
    env = dict(os.environ, **{v: "1" for v in THREAD_VARS})
    cmd = [sys.executable, os.path.abspath(__file__), "--worker", row, side, "--data", data]
    res = subprocess.run(cmd, env=env, capture_output=True, text=True)
    if res.returncode:
        raise RuntimeError(f"{row} {side} failed:\n{res.stderr}")
    return json.loads(res.stdout.strip().splitlines()[-1])


def table(runs, rows):
    import numba
    import numpy

    by = {(r["row"], r["side"]): r for r in runs}
    lines = [
        "## CoNLL-2000 chunking: every training algorithm against CRFsuite's",
        "",
        f"`python benchmarks/bench_crfsuite_algorithms.py`; {platform.machine()}, "
        f"{os.cpu_count()} CPUs, Python {platform.python_version()}, numpy "
        f"{numpy.__version__}, numba {numba.__version__}, {platform.system()} "
        f"{platform.release()}; each configuration in its own process with one thread, "
        "one run, 100 iterations or epochs at most (the tutorial's `max_iterations`). "
        "Both sides train CRFsuite's default feature set (the attribute-label "
        "pairs seen in training) with CRFsuite's default stopping rules; skstruct's "
        "settings are CRFsuite's through the parameter mapping of the module docstring. "
        "F1: chunk F1 on the test set. CPU: seconds of training (vectorising included "
        "for skstruct, converting the dicts for CRFsuite). Peak: the process's peak RSS, "
        "data included. Objective: `-loglik + c1 ||w||_1 + c2 ||w||^2` of each side's "
        "weights on the training set, by the same code. Ratios are skstruct / CRFsuite.",
        "",
        "| algorithm | side | iterations | F1 | CPU s | peak MB | non-zero weights "
        "| objective | F1 difference | CPU ratio | non-zero ratio |",
        "|---|---|---|---|---|---|---|---|---|---|---|",
    ]
    for row in rows:
        cs, sk = by.get((row, "crfsuite")), by.get((row, "skstruct"))
        for side, r in (("CRFsuite", cs), ("skstruct", sk)):
            if r is None:
                continue
            obj = f"{r['objective']:.1f}" if "objective" in r else ""
            if side == "skstruct" and cs is not None:
                extra = (f"{r['f1'] - cs['f1']:+.2f} | {r['cpu'] / cs['cpu']:.2f} | "
                         f"{r['nnz'] / cs['nnz']:.2f}")
            else:
                extra = " | | "
            name = {"ap": "ap / perceptron"}.get(row, row)
            lines.append(f"| {name} | {side} | {r['n_iter']} | {r['f1']:.2f} | "
                         f"{r['cpu']:.1f} | {r['peak_mb']:.0f} | {r['nnz']} | {obj} | {extra} |")
    return lines


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--rows", nargs="+", default=list(ROWS), choices=list(ROWS))
    ap.add_argument("--data", default=DATA)
    ap.add_argument("--write-doc", action="store_true")
    ap.add_argument("--worker", nargs=2, help=argparse.SUPPRESS)
    args = ap.parse_args()
    if args.worker:
        print(json.dumps(worker(args.worker[0], args.worker[1], args.data)))
        return
    runs = []
    for row in args.rows:
        for side in ("crfsuite", "skstruct"):
            r = run_subprocess(row, side, args.data)
            runs.append(r)
            print(f"{row} {side}: F1 {r['f1']:.2f}, CPU {r['cpu']:.1f} s, "
                  f"{r['n_iter']} iterations, nnz {r['nnz']}, objective "
                  f"{r.get('objective', float('nan')):.2f}, peak {r['peak_mb']:.0f} MB "
                  f"{r.get('warned', '')}", flush=True)
    lines = table(runs, args.rows)
    print("\n".join(lines))
    if args.write_doc:
        sys.path.insert(0, HERE)
        from _doc import write_section

        write_section("crfsuite-algorithms", lines)


if __name__ == "__main__":
    main()
