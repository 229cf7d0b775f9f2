"""What a second thread buys: ``n_jobs=1`` against ``n_jobs=2``, before and after.

Run::

    python benchmarks/bench_scaling.py [--quick] [--repeats 2] [--base 3decb23]
                                       [--no-base] [--only CASE ...] [--write-doc]

Cases (each timed with ``n_jobs=1`` and ``n_jobs=2`` in the same process, alternately,
``--repeats`` rounds, best wall time kept with the CPU time of that run):

* ``crf_conll``: ``CRF`` fit on CoNLL-2000, the first 4000 training sentences (the
  sklearn-crfsuite tutorial's features, ``NodeTransformer(DictVectorizer())``, not timed),
  30 L-BFGS iterations;
* ``viterbi`` and ``forward_backward``: ``map_batch`` and ``marginals_batch`` (summed
  edge marginals) on 20,000 chains of 30 nodes, 26 labels (600,000 nodes);
* ``trws_grid``: ``map_batch(method="trws", max_iter=20)`` on the 330 x 330 stereo-like grid
  of ``bench_trws_stopping.py`` (108,900 nodes, 16 labels): one sample;
* ``approx_grid``: an outer iteration (message sweep and parameter step) of
  ``ApproxStructuredPredictor`` on 100 denoising images of 100 x 100 (10^6 binary
  variables, ``bench_approx_grid.py``'s setting), 3 iterations, the wall and CPU time of the
  fit loop (``history_``'s clock) divided by the iterations;
* ``one_slack_oracle``: one-slack's oracle batch, the loss-augmented decoding of every OCR
  word (6877) at trained weights;
* ``predict``: ``StructuredSVM.predict`` on the 6877 OCR words.

Then BCFW on threads (``solver_options={"parallel_blocks": 2}``) against sequential BCFW,
both with ``n_jobs=2``, on OCR (fold 1 for training, 704 words, C = 0.1) and scene
(1211 images, full label graph, C = 0.1): the duality gap, relative to the primal, against
the training seconds (``history_``, every pass checked).

Every case runs in a fresh subprocess, with ``NUMBA_NUM_THREADS`` and the BLAS / OpenMP thread
variables unset (so that only ``n_jobs`` limits anything), on the working tree and, unless
``--no-base``, on the base revision (default ``3decb23``, the revision before ``n_jobs``
governed BLAS), checked out once as a git worktree under ``benchmarks/.revisions`` as
``bench_revisions.py`` does, each tree with its compiled kernels in its own
``__pycache__``.  CPU seconds are the process's (every thread's) time: above the wall
time, more than one core was busy.

Where the work is a batch of independent samples and the speed-up on 2 threads is below 1.8,
a row says which part of the work runs on one thread.
A full run should take about 10 minutes on an idle 2-core machine once the kernels are
compiled (a cold numba cache adds a few minutes per tree); every child process is stopped after
``--timeout`` seconds (30 minutes by default), so the run is bounded.  ``--quick`` shrinks
every case to a smoke test of a few minutes, whose figures mean little.  ``--write-doc``
writes this tree's tables into ``doc/benchmarks.md`` (section ``bench_scaling``) and, with
the base revision, the side-by-side table into the same section of
``benchmarks/HISTORY.md``.  Nothing here is asserted.
"""

import argparse
import json
import os
import platform
import subprocess
import sys
import tempfile
import textwrap
import time

from _doc import HISTORY, write_section

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)


def _conll():
    # the data sit in shared/data beside the repository (or beside one of its parents, for a
    # worktree checked out deeper)
    d = ROOT
    while True:
        path = os.path.join(os.path.dirname(d), "shared", "data", "conll2000")
        if os.path.isdir(path) or os.path.dirname(d) == d:
            return path
        d = os.path.dirname(d)


CONLL = _conll()
MARK = "@@bench_scaling "
# below this speed-up on 2 threads, a row says what runs on one thread
NEAR_LINEAR = 1.8
THREAD_VARS = ("NUMBA_NUM_THREADS", "OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS",
               "MKL_NUM_THREADS", "BLIS_NUM_THREADS", "VECLIB_MAXIMUM_THREADS")

PRELUDE = """
import json
import os
import sys
import time

import numpy as np

import skstruct

P = json.loads(sys.argv[1])


def ocr(fold1=False):
    from skstruct.datasets import load_letters

    d = load_letters()
    keep = d.folds == 1 if fold1 else np.ones(len(d.y), bool)
    n = P.get("n_words")
    X = [x for x, k in zip(d.X, keep) if k][:n]
    y = [t for t, k in zip(d.y, keep) if k][:n]
    return X, y


def loop_clock():
    # the CPU time spent inside the estimators' fit loops (between _FitLog.start and
    # stop), beside the wall time history_ records
    from skstruct import _base

    clock = {"cpu": 0.0}
    start, stop = _base._FitLog.start, _base._FitLog.stop

    def start_(self):
        clock["t0"] = time.process_time()
        return start(self)

    def stop_(self):
        out = stop(self)
        clock["cpu"] += time.process_time() - clock["t0"]
        return out

    _base._FitLog.start, _base._FitLog.stop = start_, stop_
    return clock
"""

DRIVER = """
state = setup()
for n in (1, 2):
    run(state, n)                      # compiles (or loads) the kernels, warms the caches
best = {}
for _ in range(P["repeats"]):
    for n in (1, 2):
        c0, t0 = time.process_time(), time.perf_counter()
        out = run(state, n)
        wall, cpu = time.perf_counter() - t0, time.process_time() - c0
        if isinstance(out, dict) and "wall" in out:
            wall, cpu = out["wall"], out["cpu"]
        if n not in best or wall < best[n]["wall"]:
            best[n] = {"wall": wall, "cpu": cpu,
                       "check": out.get("check") if isinstance(out, dict) else None}
print(MARK + json.dumps({"best": best, "file": skstruct.__file__}), flush=True)
"""

CHAINS = """
from skstruct.inference import GraphBatch, map_batch, marginals_batch


def setup():
    rng = np.random.default_rng(0)
    batch = GraphBatch.from_chains(np.full(P["n_chains"], 30))
    return batch, rng.normal(size=(batch.n_nodes, 26)), rng.normal(size=(26, 26))
"""

# name -> (what is timed, child code, full params, quick params, a batch of independent
# samples?, what runs on one thread)
CASES = {
    "crf_conll": ("CRF fit, CoNLL-2000, {n_sent} sentences, {iters} L-BFGS iterations", """
from sklearn.feature_extraction import DictVectorizer

from skstruct import CRF
from skstruct.datasets import conll_features, load_conll
from skstruct.preprocessing import NodeTransformer


def setup():
    train = load_conll(os.path.join(P["data"], "train.txt"))
    feats = conll_features(train.tokens[:P["n_sent"]])
    X = NodeTransformer(DictVectorizer()).fit_transform(feats)
    return X, train.y[:P["n_sent"]]


def run(state, n):
    X, y = state
    crf = CRF(C=0.5, max_iter=P["iters"], tol=0.0, n_jobs=n).fit(X, y)
    return {"check": float(crf.history_["objective"][-1])}
""", dict(n_sent=4000, iters=30), dict(n_sent=500, iters=5), True,
        "L-BFGS's steps between the parallel objective evaluations are sequential"),

    "viterbi": ("batched Viterbi, {n_chains} chains of 30 nodes, 26 labels", CHAINS + """

def run(state, n):
    return {"check": int(map_batch(*state, n_jobs=n).sum())}
""", dict(n_chains=20000), dict(n_chains=2000), True, ""),

    "forward_backward": ("batched forward-backward, {n_chains} chains of 30 nodes, 26 labels",
                         CHAINS + """

def run(state, n):
    return {"check": float(marginals_batch(*state, edge_marginals="sum", n_jobs=n)[2].sum())}
""", dict(n_chains=20000), dict(n_chains=2000), True, ""),

    "trws_grid": ("TRW-S, 20 iterations, {side} x {side} stereo-like grid, 16 labels", """
sys.path.insert(0, P["helpers"])
from bench_trws_stopping import stereo

from skstruct.inference import GraphBatch, map_batch


def setup():
    unary, edges, pairwise = stereo(P["side"])
    return GraphBatch.from_graphs([len(unary)], [edges]), unary, pairwise[0]


def run(state, n):
    batch, unary, pairwise = state
    labels = map_batch(batch, unary, pairwise, method="trws", max_iter=20, tol=0.0, n_jobs=n)
    return {"check": int(labels.sum())}
""", dict(side=330), dict(side=100), False,
        "one sample: the kernels split a batch by sample, so one grid runs on one thread"),

    "approx_grid": ("ApproxStructuredPredictor, one outer iteration, {n_images} images of "
                    "100 x 100", """
from skstruct import ApproxStructuredPredictor
from skstruct.datasets import make_binary_denoising
from skstruct.models import GraphModel

clock = loop_clock()


def setup():
    return make_binary_denoising(P["n_images"], 100, noise=1.0, random_state=0)


def run(train, n):
    clock["cpu"] = 0.0
    est = ApproxStructuredPredictor(epsilon=1.0, counting_numbers="convex",
                                    C=1.0 / P["n_images"], model=GraphModel(), tol=0.0,
                                    max_iter=P["iters"], n_jobs=n).fit(train.X, train.y)
    k = int(est.n_iter_)
    return {"wall": float(est.history_["seconds"][-1]) / k, "cpu": clock["cpu"] / k,
            "check": float(est.history_["objective"][-1])}
""", dict(n_images=100, iters=3), dict(n_images=10, iters=2), True,
        "the parameter step and its line search between the sweeps are sequential"),

    "one_slack_oracle": ("one-slack's oracle batch, loss-augmented Viterbi of {n_words} OCR "
                         "words", """
from skstruct import StructuredSVM


def setup():
    X, y = ocr()
    return StructuredSVM(C=0.1, solver="one_slack", max_iter=3).fit(X, y)._solver


def run(solver, n):
    solver.n_jobs = n
    reps = P["reps"]
    for _ in range(reps):
        hinge = solver._oracle_plane()[2]
    return {"check": float(hinge)}
""", dict(n_words=None, reps=20), dict(n_words=2000, reps=3), True, ""),

    "predict": ("StructuredSVM.predict on {n_words} OCR words", """
from skstruct import StructuredSVM


def setup():
    X, y = ocr()
    return StructuredSVM(C=0.1, max_iter=5, random_state=0).fit(X, y), X


def run(state, n):
    est, X = state
    est.set_params(n_jobs=n)
    for _ in range(P["reps"]):
        pred = est.predict(X)
    return {"check": int(sum(int(p.sum()) for p in pred))}
""", dict(n_words=None, reps=20), dict(n_words=2000, reps=3), True,
        "per-sample Python work around the kernel (packing, splitting the labels)"),
}

BCFW_CASE = """
from skstruct import StructuredSVM


def data(name):
    if name == "ocr":
        from skstruct.datasets import load_letters

        d = load_letters()
        X = [x for x, f in zip(d.X, d.folds) if f == 1]
        y = [t for t, f in zip(d.y, d.folds) if f == 1]
        return X, y, "auto"
    from skstruct.datasets import load_scene
    from skstruct.models import MultiLabelModel

    d = load_scene()
    return d.X_train, d.y_train, MultiLabelModel(edges="full")


out = {}
for name in P["sets"]:
    X, y, model = data(name)
    runs = {}
    for label, opts in (("sequential", None), ("parallel_blocks=2", {"parallel_blocks": 2})):
        def fit(max_iter):
            return StructuredSVM(model=model, C=0.1, max_iter=max_iter, tol=0.0,
                                 check_every=1, random_state=0, n_jobs=2,
                                 solver_options=opts).fit(X, y)

        fit(2)                                           # compiles (or loads) the kernels
        est = fit(P["passes"])
        h = est.history_
        runs[label] = {"seconds": h["seconds"].tolist(),
                       "rel_gap": (h["gap"] / np.abs(h["primal"])).tolist(),
                       "primal": h["primal"].tolist()}
    out[name] = runs
print(MARK + json.dumps({"bcfw": out, "file": skstruct.__file__}), flush=True)
"""


# ---------------------------------------------------------------------- children
def run_child(code, params, tree, timeout):
    # each tree keeps its compiled kernels in its own __pycache__ (numba's default)
    env = {k: v for k, v in os.environ.items() if k not in THREAD_VARS + ("NUMBA_CACHE_DIR",)}
    env.update(PYTHONPATH=os.pathsep.join([tree, *filter(None, [os.environ.get("PYTHONPATH")])]))
    with tempfile.TemporaryDirectory() as tmp:
        try:
            proc = subprocess.run([sys.executable, "-c", code, json.dumps(params)], cwd=tmp,
                                  env=env, capture_output=True, text=True, timeout=timeout)
        except subprocess.TimeoutExpired:
            return {"error": f"timed out after {timeout:.0f} s"}
    lines = [ln for ln in proc.stdout.splitlines() if ln.startswith(MARK)]
    if proc.returncode != 0 or not lines:
        err = [ln for ln in proc.stderr.strip().splitlines() if ln.strip()][-6:]
        return {"error": f"exit status {proc.returncode}: " + " / ".join(err)}
    rec = json.loads(lines[-1][len(MARK):])
    expected = os.path.join(os.path.realpath(tree), "skstruct")
    if not os.path.realpath(rec["file"]).startswith(expected + os.sep):
        return {"error": f"imported {rec['file']}, not the package under {tree}"}
    return rec


def run_case(name, tree, args):
    what, code, full, quick, _, _ = CASES[name]
    params = dict(quick if args.quick else full, repeats=args.repeats, data=CONLL,
                  helpers=HERE)
    code = PRELUDE + f"MARK = {MARK!r}\n" + textwrap.dedent(code) + DRIVER
    return run_child(code, params, tree, args.timeout)


# ------------------------------------------------------------------------ report
def machine():
    import numba
    import numpy

    return (f"{os.cpu_count()} CPUs, Python {platform.python_version()}, numpy "
            f"{numpy.__version__}, numba {numba.__version__}, {platform.system()} "
            f"{platform.release()}")


def why_below(name, speedup):
    batch, why = CASES[name][4], CASES[name][5]
    if not batch or speedup < NEAR_LINEAR:
        return why
    return ""


def scaling_table(results, trees, params_of, page=False):
    """Every tree's rows, or (``page``) the last tree's alone without the tree column."""
    if page:
        trees = trees[-1:]
        lines = ["| case | n_jobs=1 wall (s) | n_jobs=2 wall (s) | speed-up | "
                 "n_jobs=1 CPU (s) | n_jobs=2 CPU (s) | why below 2x |",
                 "|---|---|---|---|---|---|---|"]
    else:
        lines = ["| case | tree | n_jobs=1 wall (s) | n_jobs=2 wall (s) | speed-up | "
                 "n_jobs=1 CPU (s) | n_jobs=2 CPU (s) | why below 2x |",
                 "|---|---|---|---|---|---|---|---|"]
    for name in results:
        # n_words=None is every word of the OCR set
        what = CASES[name][0].format(**{k: ("all 6877" if k == "n_words" and v is None else v)
                                        for k, v in params_of(name).items()})
        for label in trees:
            rec = results[name].get(label)
            if rec is None:
                continue
            tree = "" if page else f" {label} |"
            if "error" in rec:
                lines.append(f"| {what} |{tree} failed: {rec['error'][:120]} |||||")
                continue
            one, two = rec["best"]["1"], rec["best"]["2"]
            s = one["wall"] / two["wall"]
            lines.append(f"| {what} |{tree} {one['wall']:.3f} | {two['wall']:.3f} | "
                         f"{s:.2f}x | {one['cpu']:.3f} | {two['cpu']:.3f} | "
                         f"{why_below(name, s)} |")
    return lines


def time_to(seconds, gaps, level):
    for t, g in zip(seconds, gaps):
        if g <= level:
            return t
    return None


def bcfw_table(rec):
    levels = (1e-1, 1e-2, 1e-3)
    lines = ["| data | solver (n_jobs=2) | passes | seconds | final relative gap | "
             + " | ".join(f"seconds to gap <= {lv:g}" for lv in levels) + " |",
             "|---|---|---|---|---|" + "---|" * len(levels)]
    verdicts = []
    for name, runs in rec.items():
        reach = {}
        for label, r in runs.items():
            cells = [time_to(r["seconds"], r["rel_gap"], lv) for lv in levels]
            reach[label] = cells
            lines.append(f"| {name} | {label} | {len(r['seconds'])} | {r['seconds'][-1]:.2f} | "
                         f"{r['rel_gap'][-1]:.2e} | "
                         + " | ".join("-" if c is None else f"{c:.2f}" for c in cells) + " |")
        seq, par = reach["sequential"], reach["parallel_blocks=2"]
        first = ["threads" if p is not None and (s is None or p < s) else
                 "sequential" if s is not None else "neither" for s, p in zip(seq, par)]
        verdicts.append(f"- {name}: first to a relative gap of "
                        + ", ".join(f"{lv:g}: {w}" for lv, w in zip(levels, first)))
    return lines + [""] + verdicts


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--quick", action="store_true")
    ap.add_argument("--repeats", type=int, default=2)
    ap.add_argument("--base", default="3decb23")
    ap.add_argument("--no-base", action="store_true")
    ap.add_argument("--only", nargs="*", choices=[*CASES, "bcfw"])
    ap.add_argument("--timeout", type=float, default=1800.0)
    ap.add_argument("--write-doc", action="store_true")
    args = ap.parse_args()
    if args.quick:
        args.repeats = 1
    sys.path.insert(0, HERE)
    from bench_revisions import tree_of

    trees = {}
    if not args.no_base:
        label, path, _ = tree_of(args.base)
        trees[f"before ({label[:7]})"] = path
    trees["after (this tree)"] = tree_of(None)[1]
    labels = list(trees)
    names = [n for n in CASES if not args.only or n in args.only]
    t_start = time.perf_counter()
    results = {}
    for name in names:
        results[name] = {}
        for label, path in trees.items():
            t0 = time.perf_counter()
            results[name][label] = rec = run_case(name, path, args)
            status = rec.get("error", "ok")
            print(f"[{name} on {label}: {time.perf_counter() - t0:.0f} s, {status}]",
                  file=sys.stderr, flush=True)

    def params_of(name):
        return CASES[name][3 if args.quick else 2]

    lines = scaling_table(results, labels, params_of) if names else []
    page = scaling_table(results, labels, params_of, page=True) if names else []
    bcfw = None
    if not args.only or "bcfw" in args.only:
        params = dict(sets=["ocr", "scene"], passes=8 if args.quick else 60)
        code = PRELUDE + f"MARK = {MARK!r}\n" + textwrap.dedent(BCFW_CASE)
        bcfw = run_child(code, params, trees["after (this tree)"], args.timeout)
        print(f"[bcfw: {bcfw.get('error', 'ok')}]", file=sys.stderr, flush=True)
    elapsed = time.perf_counter() - t_start
    head = ["Machine: " + machine() + f". Run took {elapsed / 60:.1f} minutes"
            + (" (--quick: smoke-test sizes, figures not comparable)." if args.quick else "."),
            ""]
    what = (f"Wall and CPU seconds (best of {args.repeats} rounds, each case in a fresh "
            "process) at `n_jobs=1` and `n_jobs=2`; CPU above wall means more than one "
            "busy core:")
    out, hist, tail = list(head), list(head), []
    if lines:
        out += [what, "", *page, ""]
        hist += [what, "", *lines, ""]
    if bcfw is not None:
        if "error" in bcfw:
            tail += [f"BCFW on threads: failed ({bcfw['error']})", ""]
        else:
            tail += ["BCFW on threads (CoCoA+ rounds over 2 partitions) against sequential "
                    "BCFW, both `n_jobs=2`; gap relative to the primal, seconds of the fit "
                    "loop:", "", *bcfw_table(bcfw["bcfw"]), ""]
    out += tail
    print("\n".join(hist + tail))
    if args.write_doc:
        cmd = "python benchmarks/bench_scaling.py" + (" --quick" if args.quick else "")
        write_section("bench_scaling", ["## Threads: n_jobs=1 against n_jobs=2", "",
                                        f"Measured by `{cmd} --write-doc`.", "", *out])
        if len(labels) > 1:
            write_section("bench_scaling", [
                "## Threads, side by side with a revision (`benchmarks/bench_scaling.py`)", "",
                f"Measured by `{cmd} --write-doc`.", "", *hist], HISTORY)


if __name__ == "__main__":
    main()
