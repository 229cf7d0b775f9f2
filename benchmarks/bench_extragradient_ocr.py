"""Dual extragradient against BCFW at the same C: OCR chains, scene label trees and
letter alignment.

Three tasks, every run in its own fresh subprocess with one thread (numba compilation
excluded: the estimator compiles before its first timed pass):

* OCR letters (``load_letters``), train on fold 1 (704 words), test on the other nine
  folds, ``ChainModel``, C = 0.1, the Hamming loss: ``StructuredSVM(solver="bcfw")`` and
  ``StructuredSVM(solver="extragradient")``, ``--passes`` passes each (``tol=0``, the
  duality gap at every pass: ``check_every=1``);
* scene (``load_scene``, its standard split: 1211 training images, 1196 test images, 6
  labels), ``MultiLabelModel(edges="tree")`` (the Chow-Liu tree of the training labels:
  KL projections by the tree recursion, one pairwise table per label pair), C = 0.1,
  ``--scene-passes`` passes each;
* letter alignment (``make_letter_alignment(random_state=0)``), train on fold 1 (338
  pairs of renditions of a word), test on the other folds, ``MatchingModel``, C = 0.1:
  the same two solvers through the model protocol, ``--match-passes`` passes each.

Reported per solver: the passes and the solver seconds (``history_["seconds"]``: the
passes alone; BCFW's gap checks excluded, extragradient's certificate included since it
is computed inside its passes) at which the duality gap first falls below 1, 0.1, 0.03
and 0.01; the primal objective and gap after the last pass; the test accuracy (letters
right; scene labels right; left items matched to their counterpart); the whole fit's wall time.  For
extragradient, also the paper's gap function ``P(w_bar) - D(z_bar)`` at a few passes
(the reported gap uses the best dual at hand: see
:mod:`skstruct.solvers._extragradient`), read from the solver after every pass.
Timings come from a shared machine: they are noisy, a few tens of percent.  Nothing is
asserted; ``--write`` writes the tables into ``doc/benchmarks.md`` (section
``extragradient``).

Usage::

    python benchmarks/bench_extragradient_ocr.py [--passes 500] [--scene-passes 500]
        [--match-passes 100] [--write]
"""

import argparse
import json
import os
import subprocess
import sys
import time

import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.dirname(HERE))
sys.path.insert(0, HERE)
THREAD_VARS = ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS",
               "NUMBA_NUM_THREADS")
C = 0.1
THRESHOLDS = (1.0, 0.1, 0.03, 0.01)
CHECKPOINTS = (10, 30, 100, 300, 1000)


def _data(task):
    if task == "scene":
        from skstruct.datasets import load_scene

        d = load_scene()
        return d.X_train, d.y_train, d.X_test, d.y_test
    if task == "ocr":
        from skstruct.datasets import load_letters

        d = load_letters()
    else:
        from skstruct.datasets import make_letter_alignment

        d = make_letter_alignment(random_state=0)
    tr = d.folds == 1
    pick = [(x, y) for x, y, t in zip(d.X, d.y, tr) if t]
    rest = [(x, y) for x, y, t in zip(d.X, d.y, tr) if not t]
    return [p[0] for p in pick], [p[1] for p in pick], [p[0] for p in rest], \
        [p[1] for p in rest]


def _estimator(task, solver, passes, **kw):
    from skstruct import StructuredSVM

    model = "auto"
    if task == "match":
        from skstruct.models import MatchingModel

        model = MatchingModel()
    elif task == "scene":
        from skstruct.models import MultiLabelModel

        model = MultiLabelModel(edges="tree")
    return StructuredSVM(C=C, model=model, solver=solver, max_iter=passes, tol=0.0,
                         check_every=1, random_state=0, **kw)


def worker(task, solver, passes):
    X, y, Xt, yt = _data(task)
    # compile (or load) the kernels outside the timed fit
    _estimator(task, solver, 1).fit(X[:5], y[:5])
    paper = {}
    if solver == "extragradient":
        # record the gap function at the averaged labellings after every pass (the
        # primal is cached by the pass, the duals are sums at hand: no data pass)
        from skstruct.solvers import SSVM_SOLVERS

        for cls in SSVM_SOLVERS[solver]:
            def run_pass(self, order, _run=cls.run_pass):
                gap = _run(self, order)
                if len(order):
                    paper[self.n_pass + 1] = self.objective()[0] - self.duals()[0]
                return gap

            cls.run_pass = run_pass
    t0 = time.perf_counter()
    est = _estimator(task, solver, passes).fit(X, y)
    hist = {k: v.tolist() for k, v in est.history_.items()}
    fit_seconds = time.perf_counter() - t0
    paper = {p: paper[p] for p in CHECKPOINTS if p in paper}
    return dict(task=task, solver=solver, history=hist, fit_seconds=fit_seconds,
                score=float(est.score(Xt, yt)), paper_gap=paper,
                n_train=len(X), n_test=len(Xt))


def run_subprocess(task, solver, passes):
    env = dict(os.environ, **{v: "1" for v in THREAD_VARS})
    cmd = [sys.executable, os.path.abspath(__file__), "--worker", task, solver, str(passes)]
    res = subprocess.run(cmd, env=env, capture_output=True, text=True)
    if res.returncode:
        raise RuntimeError(f"{task} {solver} failed:\n{res.stderr}")
    return json.loads(res.stdout.strip().splitlines()[-1])


def _reach(r, g):
    h = r["history"]
    gaps = np.asarray(h["gap"])
    hit = np.flatnonzero(gaps <= g)
    if not hit.size:
        return "not reached"
    i = int(hit[0])
    return f"{h['pass'][i]} / {h['seconds'][i]:.2f} s"


def table(title, runs, score_name):
    bc, eg = runs
    last = lambda r, k: r["history"][k][-1]  # noqa: E731
    lines = [f"**{title}** ({bc['n_train']} training samples, {bc['n_test']} test samples, "
             f"C = {C}, one thread)", "",
             "| | BCFW | extragradient |", "|---|---|---|"]
    for g in THRESHOLDS:
        lines.append(f"| passes / solver seconds to gap <= {g:g} | {_reach(bc, g)} | "
                     f"{_reach(eg, g)} |")
    for name, key, fmt in (("passes run", "pass", "{}"), ("primal after them", "primal",
                                                            "{:.5f}"),
                           ("duality gap after them", "gap", "{:.4g}"),
                           ("solver seconds", "seconds", "{:.2f}")):
        lines.append(f"| {name} | {fmt.format(last(bc, key))} | {fmt.format(last(eg, key))} |")
    ms = [1e3 * last(r, "seconds") / last(r, "pass") for r in runs]
    lines.append(f"| ms per pass | {ms[0]:.2f} | {ms[1]:.2f} |")
    lines.append(f"| fit wall seconds (gap checks included) | {bc['fit_seconds']:.2f} | "
                 f"{eg['fit_seconds']:.2f} |")
    lines.append(f"| {score_name} | {100 * bc['score']:.2f}% | {100 * eg['score']:.2f}% |")
    paper = ", ".join(f"{p} passes: {v:.3g}" for p, v in eg["paper_gap"].items())
    lines += ["", f"Extragradient's gap function at the averaged labellings, "
              f"P(w_bar) - D(z_bar): {paper}."]
    return lines


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--passes", type=int, default=500)
    ap.add_argument("--scene-passes", type=int, default=500)
    ap.add_argument("--match-passes", type=int, default=100)
    ap.add_argument("--write", action="store_true")
    ap.add_argument("--worker", nargs=3, help=argparse.SUPPRESS)
    args = ap.parse_args()
    if args.worker:
        task, solver, passes = args.worker
        print(json.dumps(worker(task, solver, int(passes))))
        return
    results = {}
    for task, passes in (("ocr", args.passes), ("scene", args.scene_passes),
                         ("match", args.match_passes)):
        for solver in ("bcfw", "extragradient"):
            r = run_subprocess(task, solver, passes)
            h = r["history"]
            print(f"{task:5s} {solver:13s} {h['pass'][-1]} passes {h['seconds'][-1]:7.2f} s  "
                  f"primal {h['primal'][-1]:.5f}  gap {h['gap'][-1]:.4g}  score "
                  f"{r['score']:.4f}", flush=True)
            results[task, solver] = r
    lines = [
        "## Dual extragradient against BCFW (`benchmarks/bench_extragradient_ocr.py`)",
        "",
        "`python benchmarks/bench_extragradient_ocr.py`: "
        "`StructuredSVM(solver=\"extragradient\")` (Taskar et al.'s dual extragradient, "
        "backtracked steps) against BCFW at the same C, every run in its own process with "
        "one thread, the duality gap (lambda form) at every pass. Solver seconds are those "
        "of the passes (BCFW's gap checks excluded; extragradient computes its gap inside "
        "its passes). A pass of extragradient is one iteration over all the samples (two "
        "sum-product sweeps on chains and trees, two projections per sample through the "
        "protocol, plus two more for every rejected step). One run of each.",
        "",
    ]
    lines += table("OCR letters, train fold 1, ChainModel",
                   [results["ocr", "bcfw"], results["ocr", "extragradient"]],
                   "test letter accuracy")
    lines += [""]
    lines += table("Scene, standard split, MultiLabelModel(edges=\"tree\")",
                   [results["scene", "bcfw"], results["scene", "extragradient"]],
                   "test label accuracy (Hamming)")
    lines += [""]
    lines += table("Letter alignment, train fold 1, MatchingModel",
                   [results["match", "bcfw"], results["match", "extragradient"]],
                   "test accuracy (left items matched right)")
    print()
    print("\n".join(lines))
    if args.write:
        from _doc import write_section

        write_section("extragradient", lines)


if __name__ == "__main__":
    main()
