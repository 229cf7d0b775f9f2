"""The same benchmarks on two revisions of skstruct, side by side in one run.

Measures the skstruct side of every script in ``benchmarks/`` (inference oracles,
StructuredSVM on OCR / scene / snakes, ApproxStructuredPredictor on the grid and on OCR,
NonLocalCRF on CoNLL-2000 and on one OCR fold, the CGM Bethe-MD projection) on a base
revision and on a new one, to show that a refactor leaves speed and results unchanged.

Run::

    python benchmarks/bench_revisions.py [--base 6ae5633] [--new REV] [--repeats 3]
                                         [--quick] [--only NAME ...] [--write-doc]

The base revision is checked out once as a detached git worktree under
``benchmarks/.revisions/<sha>`` and reused; the new code is the working tree (the repository
root), or another revision's worktree with ``--new REV`` (``--new`` equal to ``--base`` checks
the harness itself: the ratios should be 1 within noise and the results identical).  Every
case runs in a fresh ``python -c`` subprocess with that tree first on ``PYTHONPATH`` and a
temporary directory as cwd, so ``import skstruct`` loads that tree's package rather than the
editable install (checked: the child reports ``skstruct.__file__``), with a numba cache of its
own per tree (``NUMBA_CACHE_DIR``) and ``NUMBA_NUM_THREADS=2``.  The child loads its data, makes
a warm-up call (compilation excluded), times the call ``k`` times, and prints one JSON line
with the times and the case's result figures (objective, accuracy, ...).  Revisions alternate
(base, new, base, new, ... for ``--repeats`` rounds) so that machine noise falls on both.

Reported per case: best time of each revision over all rounds, new / base, and the spread of
each (slowest over fastest round); then the result figures of both, with any relative
difference above 1e-6 flagged.  A case that fails (the working tree may be mid-refactor) is
reported with the child's last stderr lines and the run goes on.  ``--write-doc`` puts the
tables into ``benchmarks/HISTORY.md`` (section ``bench_revisions``; developer notes, not the
site).  ``--quick`` shrinks every
case to a smoke test of a couple of minutes; its times are not comparable with a full run's.
Nothing here is asserted.
"""

import argparse
import datetime
import json
import math
import os
import subprocess
import sys
import tempfile
import textwrap
import time

from _doc import HISTORY, write_section

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)
REVISIONS = os.path.join(HERE, ".revisions")
# bench_crfsuite.py's location of the data, taken from this tree: a base worktree lives
# deeper, so its own relative path would miss it
CONLL = os.path.join(os.path.dirname(ROOT), "shared", "data", "conll2000")
MARK = "@@bench_revisions "
RTOL = 1e-6

# --------------------------------------------------------------------- child code
# Shared by every case.  Constructors get keyword arguments only (the refactor makes them
# keyword-only); ``make`` also passes a model's decoder under the name the tree uses.
PRELUDE = """
import json
import os
import sys
import time

import numpy as np

import skstruct

P = json.loads(sys.argv[1])


def make(cls, **params):
    if "inference" in params:
        names = cls().get_params(deep=False)
        if "inference" not in names and "inference_method" in names:
            params["inference_method"] = params.pop("inference")
    return cls(**params)


def pick(seq, mask):
    return [a for a, m in zip(seq, mask) if m]


def ocr_split(fold1):
    from skstruct.datasets import load_letters

    d = load_letters()
    train = d.folds == 1 if fold1 else d.folds != 0
    X, y = pick(d.X, train), pick(d.y, train)
    Xt, yt = pick(d.X, ~train), pick(d.y, ~train)
    n, m = P.get("n_train"), P.get("n_test")
    return X[:n], y[:n], Xt[:m], yt[:m]


def chain_edges_of(lengths):
    # computed here rather than read from GraphBatch, whose attributes may move
    n = int(np.sum(lengths))
    keep = np.ones(max(n - 1, 0), bool)
    keep[np.cumsum(lengths)[:-1] - 1] = False
    t = np.arange(n - 1)[keep]
    return np.stack([t, t + 1], 1)


def grid(side):
    idx = np.arange(side * side).reshape(side, side)
    return np.concatenate([np.stack([idx[:, :-1].ravel(), idx[:, 1:].ravel()], 1),
                           np.stack([idx[:-1].ravel(), idx[1:].ravel()], 1)])


def labelling_score(unary, pairwise, edges, labels):
    return float(unary[np.arange(len(labels)), labels].sum()
                 + pairwise[labels[edges[:, 0]], labels[edges[:, 1]]].sum())


def ssvm_quality(est, X, Xt, yt, C):
    return {"primal (C form)": float(est.history_["primal"][-1]) * C * len(X),
            "test accuracy": float(est.score(Xt, yt)), "passes": int(est.n_iter_)}
"""

DRIVER = """
_warm = globals().get("warm", run)
_t0 = time.perf_counter()
_warm()
_warm_seconds = time.perf_counter() - _t0
_times = []
for _ in range(P["k"]):
    _t0 = time.perf_counter()
    _out = run()
    _wall = time.perf_counter() - _t0
    _times.append(timed_seconds(_out, _wall) if "timed_seconds" in globals() else _wall)
print(MARK + json.dumps({"times": _times, "quality": quality(_out), "warmup": _warm_seconds,
                         "file": skstruct.__file__}), flush=True)
"""

OCR_BATCH = """
from skstruct.datasets import load_letters
from skstruct.inference import GraphBatch, {fn}

lengths = np.array([len(y) for y in load_letters().y])
batch = GraphBatch.from_chains(lengths)
rng = np.random.default_rng(0)
unary = rng.normal(size=(int(lengths.sum()), 26))
pairwise = rng.normal(size=(26, 26))
"""

# name -> (group, description with {params}, code, full params, quick params); ``k`` is the
# number of timed calls (best of k), fewer for the slow cases
CASES = {
    "viterbi": ("inference", "Viterbi, T = {T}, K = 26", """
from skstruct.inference import viterbi

rng = np.random.default_rng(0)
unary = rng.normal(size=(P["T"], 26))
pairwise = rng.normal(size=(26, 26))


def run():
    return viterbi(unary, pairwise)


def quality(out):
    return {"score": float(out[1])}
""", dict(T=10**6, k=5), dict(T=10**5, k=3)),

    "viterbi_ocr": ("inference", "batched Viterbi, OCR 6877 words, K = 26",
                    OCR_BATCH.format(fn="map_batch") + """

def run():
    return map_batch(batch, unary, pairwise)


def quality(labels):
    return {"score": labelling_score(unary, pairwise, chain_edges_of(lengths), labels)}
""", dict(k=10), dict(k=3)),

    "fb_ocr": ("inference", "batched forward-backward (summed edges), OCR, K = 26",
               OCR_BATCH.format(fn="marginals_batch") + """

def run():
    return marginals_batch(batch, unary, pairwise, edge_marginals="sum")


def quality(out):
    return {"sum log Z": float(np.sum(out[2])), "edge marginals sum": float(np.sum(out[1]))}
""", dict(k=10), dict(k=3)),

    "trws_grid": ("inference", "TRW-S, one iteration, {side}x{side} grid, K = 2", """
from skstruct.inference import map_inference

rng = np.random.default_rng(0)
edges = grid(P["side"])
unary = rng.normal(size=(P["side"] ** 2, 2))
pairwise = rng.normal(size=(2, 2))


def run():
    return map_inference(unary, edges, pairwise, method="trws", max_iter=1, tol=0.0)


def quality(labels):
    return {"score": labelling_score(unary, pairwise, edges, labels)}
""", dict(side=100, k=10), dict(side=100, k=3)),

    "loopy_grid": ("inference", "loopy sum-product, one iteration, {side}x{side} grid, K = 2",
                   """
from skstruct.inference import marginal_inference

rng = np.random.default_rng(0)
edges = grid(P["side"])
unary = rng.normal(size=(P["side"] ** 2, 2))
pairwise = rng.normal(size=(2, 2))


def run():
    return marginal_inference(unary, edges, pairwise, method="loopy", max_iter=1, tol=0.0)


def quality(out):
    return {"Bethe log Z": float(out[2])}
""", dict(side=100, k=10), dict(side=100, k=3)),

    "ssvm_ocr": ("ssvm", "StructuredSVM fit, OCR train fold 1, C = 0.1, {passes} passes", """
from skstruct import StructuredSVM
from skstruct.models import ChainModel

X, y, Xt, yt = ocr_split(fold1=True)
C = 0.1


def run():
    return make(StructuredSVM, C=C, model=make(ChainModel), solver="bcfw",
                max_iter=P["passes"], check_every=10, tol=0.0, random_state=0).fit(X, y)


def quality(est):
    return ssvm_quality(est, X, Xt, yt, C)
""", dict(passes=200, k=3), dict(passes=20, n_train=150, n_test=500, k=1)),

    "ssvm_ocr_subgradient": ("ssvm", "StructuredSVM fit, OCR train fold 1, C = 0.1, "
                             "subgradient, mini-batches of 16, {passes} passes", """
from skstruct import StructuredSVM
from skstruct.models import ChainModel

X, y, Xt, yt = ocr_split(fold1=True)
C = 0.1


def run():
    return make(StructuredSVM, C=C, model=make(ChainModel), solver="subgradient",
                batch_size=16, max_iter=P["passes"], check_every=P["passes"], tol=0.0,
                random_state=0).fit(X, y)


def quality(est):
    return ssvm_quality(est, X, Xt, yt, C)
""", dict(passes=100, k=3), dict(passes=10, n_train=150, n_test=500, k=1)),

    "ssvm_ocr_full": ("ssvm", "StructuredSVM fit, OCR folds 1-9, lambda = 0.01, {passes} "
                      "passes (normalised Hamming, bias, start/end)", """
from skstruct import StructuredSVM
from skstruct.models import ChainModel

X, y, Xt, yt = ocr_split(fold1=False)
C = 1.0 / (0.01 * len(X))


def run():
    return make(StructuredSVM, C=C, model=make(ChainModel, bias=True, start_end=True),
                solver="bcfw", max_iter=P["passes"], check_every=1, tol=0.0,
                loss="normalized_hamming", random_state=0).fit(X, y)


def quality(est):
    return ssvm_quality(est, X, Xt, yt, C)
""", dict(passes=15, k=3), dict(passes=3, n_train=400, n_test=300, k=1)),

    "ssvm_scene": ("ssvm", "StructuredSVM fit, scene, full label graph, C = 0.1", """
from skstruct import StructuredSVM
from skstruct.datasets import load_scene
from skstruct.models import MultiLabelModel

d = load_scene()
X, y = d.X_train[:P.get("n_train")], d.y_train[:P.get("n_train")]
C = 0.1


def run():
    return make(StructuredSVM, C=C, model=make(MultiLabelModel, edges="full"),
                solver="bcfw", max_iter=P["passes"], check_every=10, tol=1e-3,
                random_state=0).fit(X, y)


def quality(est):
    return ssvm_quality(est, X, d.X_test, d.y_test, C)
""", dict(passes=50, k=3), dict(passes=10, n_train=200, k=1)),

    # TRW-S named explicitly: it is what "auto" picks on these loopy grids, and naming it
    # keeps the decoder fixed whatever the refactor does to "auto"
    "ssvm_snakes": ("ssvm", "StructuredSVM fit, snakes with edge features, C = 0.1", """
from skstruct import StructuredSVM
from skstruct.datasets import load_snakes
from skstruct.models import GraphModel

d = load_snakes()
X, y = d.X_train[:P.get("n_train")], d.y_train[:P.get("n_train")]
C = 0.1


def run():
    return make(StructuredSVM, C=C, model=make(GraphModel, inference="trws"), solver="bcfw",
                max_iter=P["passes"], check_every=10, tol=1e-3, random_state=0).fit(X, y)


def quality(est):
    return ssvm_quality(est, X, d.X_test, d.y_test, C)
""", dict(passes=50, k=2), dict(passes=5, n_train=40, k=1)),

    "approx_grid": ("approx", "ApproxStructuredPredictor, grid denoising, {n_images} images "
                    "100x100, {iters} iterations: seconds per iteration", """
from skstruct import ApproxStructuredPredictor
from skstruct.datasets import make_binary_denoising
from skstruct.models import GraphModel

train = make_binary_denoising(n_images=P["n_images"], size=100, noise=1.0, random_state=0)
test = make_binary_denoising(n_images=5, size=100, noise=1.0, random_state=1)


def run():
    return make(ApproxStructuredPredictor, epsilon=1.0, counting_numbers="convex",
                C=1.0 / P["n_images"], model=make(GraphModel), tol=0.0,
                max_iter=P["iters"]).fit(train.X, train.y)


def timed_seconds(est, wall):
    # the script's figure: training time per outer iteration, setup excluded
    return float(est.history_["seconds"][-1]) / int(est.n_iter_)


def quality(est):
    return {"objective": float(est.history_["objective"][-1]),
            "test accuracy": float(est.score(test.X, test.y)), "iterations": int(est.n_iter_)}
""", dict(n_images=20, iters=5, k=3), dict(n_images=3, iters=2, k=1)),

    "approx_ocr": ("approx", "ApproxStructuredPredictor fit, OCR fold 1, epsilon = 1, Bethe, "
                   "no loss, C = 1, {iters} iterations", """
from skstruct import ApproxStructuredPredictor
from skstruct.models import ChainModel

X, y, Xt, yt = ocr_split(fold1=True)


def fit(n_iter, n_words=None):
    return make(ApproxStructuredPredictor, epsilon=1.0, C=1.0, counting_numbers="bethe",
                loss=None, model=make(ChainModel), max_iter=n_iter,
                tol=0.0).fit(X[:n_words], y[:n_words])


def warm():
    # the same kernels on fewer words: a full fit costs as much as a timed one
    fit(3, 50)


def run():
    return fit(P["iters"])


def quality(est):
    return {"objective": float(est.history_["objective"][-1]),
            "test accuracy": float(est.score(Xt, yt)), "iterations": int(est.n_iter_)}
""", dict(iters=25, k=2), dict(iters=5, n_train=150, n_test=500, k=1)),

    "crf_conll": ("nonlocal", "NonLocalCRF fit, CoNLL-2000 chunking, C = 0.5, {iters} "
                  "L-BFGS iterations", """
from sklearn.feature_extraction import DictVectorizer

from skstruct import NonLocalCRF
from skstruct.datasets import conll_features, load_conll
from skstruct.metrics import segment_f1
from skstruct.preprocessing import NodeTransformer

train = load_conll(os.path.join(P["data"], "train.txt"))
test = load_conll(os.path.join(P["data"], "test.txt"))
ftr, ytr = conll_features(train.tokens[:P.get("n_train")]), train.y[:P.get("n_train")]
yte = test.y[:P.get("n_test")]
vec = make(NodeTransformer, transformer=DictVectorizer())
Xtr = vec.fit_transform(ftr)
Xte = vec.transform(conll_features(test.tokens[:P.get("n_test")]))
C = 0.5


def warm():
    # bench_crfsuite.py's warm-up: a full fit is too long to run twice
    small = make(NodeTransformer, transformer=DictVectorizer()).fit(ftr[:50])
    make(NonLocalCRF, C=C, max_iter=2).fit(small.transform(ftr[:50]), ytr[:50])


def run():
    return make(NonLocalCRF, C=C, max_iter=P["iters"], tol=0.0).fit(Xtr, ytr)


def quality(crf):
    return {"objective": float(crf.history_["objective"][-1]),
            "test F1": float(segment_f1(yte, crf.predict(Xte))), "iterations": int(crf.n_iter_)}
""", dict(iters=100, k=1), dict(iters=10, n_train=300, n_test=200, k=1)),

    "nonlocal_ocr": ("nonlocal", "NonLocalCRF fit + predict, OCR fold 0, L^w mean-map psi "
                     "(NearestStatistic('marginals'))", """
from skstruct import NonLocalCRF
from skstruct.energies import NearestStatistic

X, y, Xt, yt = ocr_split(fold1=False)


def model(**over):
    # bench_nonlocal_ocr.py's best model (Lw_mm); its inference_method="rda" is the default, left
    # out so that a renamed estimator parameter cannot break the case
    params = dict(C=1.0, max_iter=P["max_iter"], learning="stochastic",
                  energy_max_iter=P["energy_max_iter"], batch_size=64, max_oracle_calls=20,
                  random_state=0, psi="mean_map", n_components=P["n_components"],
                  n_pieces="auto")
    params.update(over)
    return make(NonLocalCRF, energy=make(NearestStatistic, statistic="marginals"), **params)


def warm():
    model(max_iter=2, energy_max_iter=1).fit(X[:50], y[:50]).predict(X[:50])


def run():
    est = model().fit(X, y)
    return est, est.predict(Xt)


def quality(out):
    est, pred = out
    return {"test accuracy": float(np.mean(np.concatenate(pred) == np.concatenate(yt))),
            "base objective": float(est.history_["objective"][-1])}
""", dict(max_iter=100, energy_max_iter=5, n_components=1000, k=1),
        dict(max_iter=10, energy_max_iter=1, n_components=100, n_train=300, n_test=100, k=1)),

    "cgm_md": ("nonlocal", "bethe_project Bethe-MD, chain CGM T = 10, K = {K} (s = K^2)", """
sys.path.append(P["helpers"])
from _cgm import make_cgm, objective

from skstruct.energies import PoissonCounts
from skstruct.inference import GraphBatch, bethe_project

p = make_cgm(P["K"])
T = p["theta_node"].shape[0]


def run():
    energy = make(PoissonCounts, counts=p["Y"], population=p["M"], rate=p["alpha"]).fit()
    return bethe_project(p["theta_node"], p["theta_edge"], energy,
                         batch=GraphBatch.from_chains([T]), pw_index=np.arange(T - 1),
                         method="md", max_iter=10000, tol=1e-6, edge_marginals=True, n_jobs=1)


def quality(res):
    f = objective(p["theta_node"], p["theta_edge"], p["Y"], p["M"], p["alpha"],
                  res.node_marginals, res.edge_marginals)
    return {"objective": float(f), "oracle calls": int(res.n_iter)}
""", dict(K=224, k=10), dict(K=25, k=3)),
}
GROUPS = sorted({group for group, *_ in CASES.values()})


# ------------------------------------------------------------------------ trees
def git(*args, cwd=ROOT):
    # --no-optional-locks: never rewrite the index behind the back of whoever is editing
    return subprocess.run(["git", "--no-optional-locks", *args], cwd=cwd, check=True,
                          capture_output=True, text=True).stdout.strip()


def worktree(rev):
    """Path of a detached worktree of ``rev`` under ``benchmarks/.revisions`` (made once)."""
    sha = git("rev-parse", "--verify", f"{rev}^{{commit}}")
    path = os.path.join(REVISIONS, sha)
    if not os.path.isdir(path):
        os.makedirs(REVISIONS, exist_ok=True)
        git("worktree", "add", "--detach", path, sha)
    elif git("rev-parse", "HEAD", cwd=path) != sha:
        raise SystemExit(f"{path} is not at {sha}: remove it (git worktree remove) and rerun")
    return sha, path


def tree_of(rev):
    """``(label, tree path, numba cache dir)`` of a revision, or of the working tree."""
    if rev is None:
        head = git("rev-parse", "--short", "HEAD")
        dirty = subprocess.run(["git", "--no-optional-locks", "diff", "--quiet", "HEAD", "--"],
                               cwd=ROOT).returncode != 0
        label = f"working tree (HEAD {head}{', uncommitted changes' if dirty else ''})"
        return label, ROOT, os.path.join(REVISIONS, "numba-cache", "worktree")
    sha, path = worktree(rev)
    return sha[:12], path, os.path.join(REVISIONS, "numba-cache", sha)


# ------------------------------------------------------------------------- runs
def run_case(name, tree, cache, quick, timeout):
    """One child process; returns its JSON record, or ``{"error": ...}``."""
    params = dict(CASES[name][4 if quick else 3], data=CONLL, helpers=HERE)
    code = PRELUDE + f"MARK = {MARK!r}\n" + textwrap.dedent(CASES[name][2]) + DRIVER
    env = dict(os.environ, PYTHONPATH=os.pathsep.join(
        [tree, *filter(None, [os.environ.get("PYTHONPATH")])]),
        NUMBA_CACHE_DIR=cache, NUMBA_NUM_THREADS="2")
    os.makedirs(cache, exist_ok=True)
    t0 = time.perf_counter()
    with tempfile.TemporaryDirectory() as tmp:
        try:
            proc = subprocess.run([sys.executable, "-c", code, json.dumps(params)], cwd=tmp,
                                  env=env, capture_output=True, text=True, timeout=timeout)
        except subprocess.TimeoutExpired as exc:
            err = exc.stderr or ""
            err = err.decode(errors="replace") if isinstance(err, bytes) else err
            return dict(error=f"timed out after {timeout:.0f} s", tail=tail(err))
    elapsed = time.perf_counter() - t0
    lines = [ln for ln in proc.stdout.splitlines() if ln.startswith(MARK)]
    if proc.returncode != 0 or not lines:
        return dict(error=f"exit status {proc.returncode}", tail=tail(proc.stderr))
    rec = json.loads(lines[-1][len(MARK):])
    rec["elapsed"] = elapsed
    expected = os.path.join(os.path.realpath(tree), "skstruct")
    if not os.path.realpath(rec["file"]).startswith(expected + os.sep):
        return dict(error=f"imported {rec['file']}, not the tree's package under {tree}",
                    tail=[])
    return rec


def tail(text, n=8):
    return [ln for ln in text.strip().splitlines() if ln.strip()][-n:]


# ----------------------------------------------------------------------- report
def fmt_seconds(s):
    if s is None or not math.isfinite(s):
        return "n/a"
    return f"{s * 1e3:.2f} ms" if s < 1.0 else f"{s:.3f} s"


def fmt_value(v):
    return str(v) if isinstance(v, int) else f"{v:.10g}"


def rel_diff(a, b):
    if a == b:
        return 0.0
    return abs(a - b) / max(abs(a), abs(b), 1e-300)


def summarise(records):
    """Best time, spread over rounds and the first round's figures of one revision."""
    ok = [r for r in records if "error" not in r]
    if not ok:
        return None
    bests = [min(r["times"]) for r in ok]
    # a revision whose own rounds disagree is not deterministic: worth a flag too
    steady = all(rel_diff(r["quality"][k], v) <= RTOL
                 for r in ok[1:] for k, v in ok[0]["quality"].items() if k in r["quality"])
    return dict(best=min(bests), spread=max(bests) / min(bests), quality=ok[0]["quality"],
                steady=steady, rounds=len(ok))


def report(results, names, labels, meta):
    lines = [
        "| case | base | new | new / base | spread base | spread new | same result |",
        "|---|---:|---:|---:|---:|---:|---|",
    ]
    figures = ["| case | figure | base | new | rel. diff. |", "|---|---|---:|---:|---:|"]
    failures = []
    for name in names:
        desc = CASES[name][1].format(**CASES[name][4 if meta["quick"] else 3])
        s = {side: summarise(results[name][side]) for side in ("base", "new")}
        for side in ("base", "new"):
            for r in results[name][side]:
                if "error" in r:
                    failures.append((name, side, r))
                    break
        b, n = s["base"], s["new"]
        if b and n:
            keys = [k for k in b["quality"] if k in n["quality"]]
            worst = max((rel_diff(b["quality"][k], n["quality"][k]) for k in keys), default=0.0)
            same = "yes" if worst <= RTOL and keys else f"**NO** ({worst:.1e})"
            if not (b["steady"] and n["steady"]):
                same += " (varies between rounds)"
            ratio = f"{n['best'] / b['best']:.3f}"
            for k in keys:
                d = rel_diff(b["quality"][k], n["quality"][k])
                flag = f"**{d:.1e}**" if d > RTOL else f"{d:.1e}"
                figures.append(f"| {name} | {k} | {fmt_value(b['quality'][k])} | "
                               f"{fmt_value(n['quality'][k])} | {flag} |")
        else:
            same, ratio = "**FAILED**", "n/a"
            for side, x in (("base", b), ("new", n)):
                for k, v in (x["quality"] if x else {}).items():
                    figures.append(f"| {name} | {k} | {fmt_value(v) if side == 'base' else ''}"
                                   f" | {fmt_value(v) if side == 'new' else ''} | |")
        cell = {side: ("failed" if x is None else fmt_seconds(x["best"]))
                for side, x in (("base", b), ("new", n))}
        spread = {side: ("" if x is None else f"{x['spread']:.2f}")
                  for side, x in (("base", b), ("new", n))}
        lines.append(f"| {name}: {desc} | {cell['base']} | {cell['new']} | {ratio} | "
                     f"{spread['base']} | {spread['new']} | {same} |")
    head = [
        f"Base: {labels['base']}; new: {labels['new']}; measured {meta['date']} "
        f"({meta['repeats']} round{'s' if meta['repeats'] > 1 else ''}, revisions "
        f"alternating{', --quick sizes' if meta['quick'] else ''}, {meta['minutes']:.1f} min).",
        "",
        "Times: best over all rounds of each round's best of k calls after a warm-up call "
        "(numba compilation excluded), each case in a fresh process per revision; spread: "
        "slowest round's best / fastest round's best; same result: every figure below within "
        f"{RTOL:g} (relative).",
        "",
    ]
    out = head + lines + ["", "Result figures (first round of each revision):", ""] + figures
    for name, side, r in failures:
        out += ["", f"{name} failed on {side} ({r['error']}); last stderr lines:", "", "```",
                *r["tail"], "```"]
    return out


# ------------------------------------------------------------------------- main
def select(only):
    if not only:
        return list(CASES)
    names = [n for n in CASES if n in only or CASES[n][0] in only]
    unknown = set(only) - set(CASES) - set(GROUPS)
    if unknown:
        raise SystemExit(f"unknown case or group {sorted(unknown)}; cases: {list(CASES)}, "
                         f"groups: {GROUPS}")
    return names


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--base", default="6ae5633", help="base revision (default: %(default)s)")
    ap.add_argument("--new", default=None,
                    help="new revision (default: the working tree, uncommitted edits included)")
    ap.add_argument("--repeats", type=int, default=3, help="rounds of base, new")
    ap.add_argument("--quick", action="store_true", help="small sizes: a smoke test")
    ap.add_argument("--only", nargs="+", metavar="NAME",
                    help=f"cases or groups ({', '.join(GROUPS)}) to run")
    ap.add_argument("--timeout", type=float, default=None,
                    help="seconds per child process (default 1800, 600 with --quick)")
    ap.add_argument("--write-doc", action="store_true",
                    help="write the tables into benchmarks/HISTORY.md")
    args = ap.parse_args()
    names = select(args.only)
    timeout = args.timeout or (600.0 if args.quick else 1800.0)

    labels, trees = {}, {}
    for side, rev in (("base", args.base), ("new", args.new)):
        labels[side], tree, cache = tree_of(rev)
        trees[side] = (tree, cache)
        print(f"{side}: {labels[side]} at {tree}", flush=True)

    t_start = time.perf_counter()
    results = {n: {"base": [], "new": []} for n in names}
    checked = set()
    for rnd in range(args.repeats):
        for name in names:
            for side in ("base", "new"):
                # a side that failed once would fail again: do not spend its time twice
                if any("error" in r for r in results[name][side]):
                    continue
                rec = run_case(name, *trees[side], args.quick, timeout)
                results[name][side].append(rec)
                if "error" in rec:
                    print(f"round {rnd + 1} {name:14s} {side:4s} FAILED: {rec['error']}",
                          flush=True)
                    for ln in rec["tail"]:
                        print(f"    {ln}", flush=True)
                    continue
                if side not in checked:
                    checked.add(side)
                    print(f"  ({side} child imports skstruct from {rec['file']})", flush=True)
                q = ", ".join(f"{k} {fmt_value(v)}" for k, v in rec["quality"].items())
                best = fmt_seconds(min(rec["times"]))
                print(f"round {rnd + 1} {name:14s} {side:4s} best {best:>10s} "
                      f"(warm-up {rec['warmup']:.1f} s, process {rec['elapsed']:.1f} s)  {q}",
                      flush=True)
    meta = dict(date=datetime.date.today().isoformat(), repeats=args.repeats, quick=args.quick,
                minutes=(time.perf_counter() - t_start) / 60)
    lines = report(results, names, labels, meta)
    print()
    print("\n".join(lines))
    if args.write_doc:
        cmd = " ".join(["python benchmarks/bench_revisions.py", *sys.argv[1:]])
        write_section("bench_revisions", [
            "## Speed across a refactor: two revisions side by side", "",
            f"Measured by `{cmd}` on the 2-core machine.", "", *lines], path=HISTORY)


if __name__ == "__main__":
    main()
