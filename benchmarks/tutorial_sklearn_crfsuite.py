"""Run sklearn-crfsuite's tutorial on the drop-in and on sklearn-crfsuite, and compare.

Downloads sklearn-crfsuite 0.5.0's source distribution with ``pip download``, reads
the tutorial ``docs/CoNLL2002.rst`` (a named-entity tagger trained on CoNLL-2002
Spanish), collects its ``.. code:: python`` blocks in order and runs them as notebook
cells twice, each time in a subprocess of its own: with sklearn-crfsuite (the
reference) and with ``skstruct.compat.sklearn_crfsuite``.  The Spanish corpus comes
with NLTK's data, not from the package index, so the tutorial runs on CoNLL-2000
chunking (Tjong Kim Sang & Buchholz, "Introduction to the CoNLL-2000 Shared Task:
Chunking", CoNLL-2000) instead, whose files hold the same (word, POS tag, label)
triples per token.

The blocks are changed mechanically, by these rules only (each change is printed):

1. IPython magics (``%matplotlib inline``, ``%%time``) are dropped; matplotlib runs
   with its Agg backend.
2. ``sklearn.cross_validation`` and ``sklearn.grid_search``, removed from
   scikit-learn in version 0.20, become ``sklearn.model_selection``.
3. ``import nltk`` is dropped.
4. For the drop-in only: ``import sklearn_crfsuite`` becomes ``import
   skstruct.compat.sklearn_crfsuite as sklearn_crfsuite`` and ``from sklearn_crfsuite
   import X`` becomes ``from skstruct.compat.sklearn_crfsuite import X``.
5. Data: ``nltk.corpus.conll2002.fileids()`` becomes the list of CoNLL-2000's files,
   ``iob_sents('esp.train')`` and ``iob_sents('esp.testb')`` read CoNLL-2000's
   ``train.txt`` and ``test.txt`` into the same format, lists of (word, POS tag,
   label) triples; the reader is inserted in the first cell that loads data.
6. The cell that plots ``rs.grid_scores_`` is skipped on both sides: scikit-learn
   removed that attribute in version 0.20 (``cv_results_`` replaced it), so the cell
   fails with sklearn-crfsuite as well, and rewriting it is neither an import nor a
   data change.

Cells that only display a value (``train_sents[0]``) run unchanged, their value printed
as a notebook would.  ``numpy.random.seed(0)`` is called before the first cell on both
sides: ``RandomizedSearchCV`` and ``scipy.stats.expon`` draw from NumPy's global
generator, so both sides search the same candidates of ``c1`` and ``c2`` (checked, and
printed).  After the cells, the script reads from each run: the test set's flat F1
(weighted over the labels but ``O``, as the tutorial computes it) of the ``c1 = c2 =
0.1`` model and of the search's best estimator, the search's best parameters and best
cross-validated score, and the wall times of the two training cells.  The F1 scores are
recomputed with :func:`sklearn.metrics.f1_score` on the flattened labels, independently
of both packages' ``metrics``.  Exits with status 1 if a cell fails or an F1 differs by
more than ``--tolerance`` points.

Usage::

    python benchmarks/tutorial_sklearn_crfsuite.py                  # the tutorial
    python benchmarks/tutorial_sklearn_crfsuite.py --n-iter 2 --train-sents 500
    python benchmarks/tutorial_sklearn_crfsuite.py --write-doc      # and the table of
                                                    # doc/migration/crfsuite_tests.md

``--n-iter`` replaces the search's ``n_iter=50`` and ``--train-sents`` keeps the first
N training sentences; both are printed as deviations from the tutorial.  ``--side``
runs one side only, and the results of each side are kept in ``--results`` so that a
later call can compare them (``--side none``).  sklearn-crfsuite's tutorial is not
copied into this repository: it is fetched at each run.
"""

import argparse
import ast
import datetime
import json
import os
import pathlib
import platform
import pprint
import re
import subprocess
import sys
import tarfile
import tempfile
import textwrap
import time
import traceback
import warnings

ROOT = pathlib.Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "benchmarks"))

from _doc import write_section  # noqa: E402
from peer_tests_sklearn_crfsuite import download  # noqa: E402

DOC = ROOT / "doc" / "migration" / "crfsuite_tests.md"
TUTORIAL = "docs/CoNLL2002.rst"
DROPIN = "skstruct.compat.sklearn_crfsuite"
SIDES = ("reference", "skstruct")
DATA = pathlib.Path("/work/shared/data/conll2000")

# the data reader inserted before the first cell that loads data (rule 5)
READER = '''import os

CONLL2000 = {data!r}


def conll2000_sents(name):
    """The sentences of a CoNLL-2000 file: lists of (word, postag, label) triples."""
    sents, sent = [], []
    with open(os.path.join(CONLL2000, name), encoding="utf-8") as f:
        for line in f:
            fields = tuple(line.split())
            if fields:
                sent.append(fields)
            elif sent:
                sents.append(sent)
                sent = []
    if sent:
        sents.append(sent)
    return sents
'''

# (rule number, pattern, replacement, sides): line rewrites; a replacement of None drops
# the line
_LINE_RULES = [
    (1, re.compile(r"^\s*%.*$"), None, SIDES),
    (2, re.compile(r"^(\s*from )sklearn\.(?:cross_validation|grid_search)( import .+)$"),
     r"\1sklearn.model_selection\2", SIDES),
    (3, re.compile(r"^\s*import nltk\s*$"), None, SIDES),
    (4, re.compile(r"^(\s*)import sklearn_crfsuite\s*$"),
     rf"\1import {DROPIN} as sklearn_crfsuite", ("skstruct",)),
    (4, re.compile(r"^(\s*)from sklearn_crfsuite import (.+)$"),
     rf"\1from {DROPIN} import \2", ("skstruct",)),
]
_CORPUS = {"esp.train": "train.txt", "esp.testb": "test.txt"}
_FILEIDS = re.compile(r"nltk\.corpus\.conll2002\.fileids\(\)")
_IOB = re.compile(r"list\(nltk\.corpus\.conll2002\.iob_sents\('([^']+)'\)\)")


# ------------------------------------------------------------------ the tutorial
def tutorial_text(sdist):
    """The text of ``docs/CoNLL2002.rst`` in the sdist."""
    with tarfile.open(sdist) as tar:
        for member in tar.getmembers():
            parts = pathlib.PurePosixPath(member.name).parts
            if "/".join(parts[1:]) == TUTORIAL:
                return tar.extractfile(member).read().decode("utf-8")
    raise SystemExit(f"{sdist} has no {TUTORIAL}")


def code_blocks(text):
    """The ``.. code:: python`` blocks of a reStructuredText document, in order."""
    lines = text.splitlines()
    blocks = []
    i = 0
    while i < len(lines):
        if lines[i].strip() != ".. code:: python":
            i += 1
            continue
        i += 1
        body = []
        while i < len(lines) and (not lines[i].strip() or lines[i].startswith("    ")):
            body.append(lines[i][4:])
            i += 1
        while body and not body[-1].strip():
            body.pop()
        while body and not body[0].strip():
            body.pop(0)
        blocks.append("\n".join(line.rstrip() for line in body))
    if not blocks:
        raise SystemExit(f"{TUTORIAL} has no '.. code:: python' block")
    return blocks


def _role(cell):
    """What the script reads after a cell (None: nothing)."""
    if "grid_scores_" in cell:
        return "grid_scores"
    if "RandomizedSearchCV(" in cell and ".fit(" in cell:
        return "search"
    if "c1=0.1" in cell and ".fit(" in cell:
        return "fit"
    if "flat_f1_score(y_test, y_pred" in cell:
        return "f1"
    if re.search(r"^crf = rs\.best_estimator_$", cell, re.M) and ".predict(" in cell:
        return "best"
    return None


def transform(blocks, side, data, n_iter=None, train_sents=None):
    """The cells one side runs, as ``(index, role, source)``, and the changes made, as
    ``(index, rule, before, after)``; the skipped cell is not among the cells."""
    cells, changes = [], []
    reader_done = False
    for k, block in enumerate(blocks, 1):
        role = _role(block)
        if role == "grid_scores":
            changes.append((k, 6, "the cell plotting rs.grid_scores_", "skipped"))
            continue
        out = []
        for line in block.splitlines():
            new = line
            for _rule, pattern, repl, sides in _LINE_RULES:
                if side in sides and pattern.match(new):
                    new = None if repl is None else pattern.sub(repl, new)
                    break
            if new is not None:
                new = _FILEIDS.sub("sorted(os.listdir(CONLL2000))", new)
                new = _IOB.sub(lambda m: f"conll2000_sents({_CORPUS[m.group(1)]!r})", new)
                if "nltk" in new:
                    raise SystemExit(f"cell {k}: no rule for {line.strip()!r}")
            if new != line:
                rule = next((r for r, p, _, s in _LINE_RULES if side in s and p.match(line)),
                            5)
                changes.append((k, rule, line.strip(), "dropped" if new is None
                                else new.strip()))
            if new is not None:
                out.append(new)
        src = "\n".join(out)
        if "CONLL2000" in src and not reader_done:
            reader = READER.format(data=str(data))
            src = reader + "\n\n" + src
            changes.append((k, 5, "", "the CoNLL-2000 reader inserted before the cell"))
            reader_done = True
        if train_sents is not None and "train_sents = " in src:
            src += f"\ntrain_sents = train_sents[:{train_sents}]"
            changes.append((k, "dev", "", f"train_sents = train_sents[:{train_sents}]"))
        if n_iter is not None and role == "search":
            src, n = re.subn(r"\bn_iter=50\b", f"n_iter={n_iter}", src)
            if n != 1:
                raise SystemExit(f"cell {k}: no 'n_iter=50' to replace")
            changes.append((k, "dev", "n_iter=50", f"n_iter={n_iter}"))
        if src.strip():
            cells.append((k, role, src))
    roles = [r for _, r, _ in cells]
    for needed in ("fit", "f1", "search", "best"):
        if roles.count(needed) != 1:
            raise SystemExit(f"{TUTORIAL}: expected one cell of role {needed!r}, found "
                             f"{roles.count(needed)}")
    return cells, changes


# ------------------------------------------------------------------ one side (child)
def _flat_f1(ns):
    """The weighted F1 over ``labels`` of the flattened ``y_test`` and ``y_pred``,
    computed by scikit-learn rather than by either package's metrics."""
    from sklearn.metrics import f1_score

    y_true = [t for s in ns["y_test"] for t in s]
    y_pred = [t for s in ns["y_pred"] for t in s]
    with warnings.catch_warnings():
        # the tutorial's own cell has shown the warnings of labels never seen
        warnings.simplefilter("ignore")
        return float(f1_score(y_true, y_pred, average="weighted", labels=ns["labels"]))


def _display(value):
    if value is not None:
        print(pprint.pformat(value))


def run_cell(src, ns):
    """Run a cell as a notebook does: its last expression's value is displayed (and
    returned)."""
    tree = ast.parse(src)
    last = None
    if tree.body and isinstance(tree.body[-1], ast.Expr):
        last = ast.Expression(tree.body.pop().value)
    exec(compile(tree, "<cell>", "exec"), ns)
    if last is None:
        return None
    value = eval(compile(last, "<cell>", "eval"), ns)
    _display(value)
    return value


def child(side, cells_path, out_path):
    import matplotlib

    matplotlib.use("Agg")
    import numpy as np

    cells = json.loads(pathlib.Path(cells_path).read_text())
    # RandomizedSearchCV and scipy.stats draw from NumPy's global (legacy) generator
    np.random.seed(0)  # noqa: NPY002
    ns = {"__name__": "__main__"}
    out = {"side": side, "cells": [], "failed": [], "warnings": {}}
    show = warnings.showwarning
    current = [None]

    def record(message, category, *rest, **kwargs):
        # which cells warned, and of what (the warnings are shown as usual)
        out["warnings"].setdefault(category.__name__, []).append(current[0])
        show(message, category, *rest, **kwargs)

    warnings.showwarning = record
    for k, role, src in cells:
        current[0] = k
        print(f"\n----- [{side}] cell {k}" + (f" ({role})" if role else ""), flush=True)
        t0 = time.perf_counter()
        try:
            value = run_cell(src, ns)
        except Exception:
            tb = traceback.format_exc()
            print(tb, flush=True)
            out["failed"].append({"cell": k, "role": role, "error": tb.strip().splitlines()[-1],
                                  "traceback": tb})
            out["cells"].append({"cell": k, "role": role, "seconds": time.perf_counter() - t0})
            continue
        seconds = time.perf_counter() - t0
        out["cells"].append({"cell": k, "role": role, "seconds": seconds})
        sys.stdout.flush()
        if role == "fit":
            out["fit_seconds"] = seconds
            log = getattr(ns.get("crf"), "training_log_", None)
            if log is not None and getattr(log, "iterations", None) is not None:
                out["fit_iterations"] = len(log.iterations)
        elif role == "f1":
            out["f1_tutorial"] = float(value)
            out["f1"] = _flat_f1(ns)
        elif role == "search":
            rs = ns["rs"]
            out["search_seconds"] = seconds
            out["best_params"] = {k: float(v) for k, v in rs.best_params_.items()}
            out["best_cv"] = float(rs.best_score_)
            out["candidates"] = [{k: float(v) for k, v in p.items()}
                                 for p in rs.cv_results_["params"]]
            out["cv_scores"] = [float(s) for s in rs.cv_results_["mean_test_score"]]
            out["size_mb"] = rs.best_estimator_.size_ / 1e6
        elif role == "best":
            out["best_f1"] = _flat_f1(ns)
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")
                out["best_f1_tutorial"] = float(ns["metrics"].flat_f1_score(
                    ns["y_test"], ns["y_pred"], average="weighted", labels=ns["labels"]))
    out["n_train"] = len(ns.get("train_sents", ()))
    out["n_test"] = len(ns.get("test_sents", ()))
    import importlib.metadata as md

    out["versions"] = {p: md.version(p) for p in
                       ("scikit-learn", "numpy", "scipy", "numba", "sklearn-crfsuite",
                        "python-crfsuite")}
    out["versions"]["python"] = platform.python_version()
    pathlib.Path(out_path).write_text(json.dumps(out, indent=1))


# ------------------------------------------------------------------ both sides
def run_side(side, cells, results):
    cells_path = results / f"{side}_cells.json"
    cells_path.write_text(json.dumps(cells))
    out_path = results / f"{side}.json"
    if out_path.exists():
        out_path.unlink()
    env = dict(os.environ)
    env["MPLBACKEND"] = "Agg"
    # this checkout's skstruct, also in the search's worker processes
    env["PYTHONPATH"] = os.pathsep.join(
        [str(ROOT)] + [p for p in env.get("PYTHONPATH", "").split(os.pathsep) if p])
    print(f"\n===== {side}: {len(cells)} cells", flush=True)
    t0 = time.perf_counter()
    proc = subprocess.run([sys.executable, str(pathlib.Path(__file__).resolve()), "--child",
                           side, str(cells_path), str(out_path)], cwd=ROOT, env=env)
    print(f"===== {side}: exit status {proc.returncode} after "
          f"{time.perf_counter() - t0:.0f} s", flush=True)
    if proc.returncode != 0 or not out_path.exists():
        return {"side": side, "failed": [{"cell": None, "role": None,
                                          "error": f"exit status {proc.returncode}"}],
                "cells": []}
    return json.loads(out_path.read_text())


def _fmt_params(p):
    return ", ".join(f"{k}={p[k]:.4g}" for k in sorted(p)) if p else "-"


def _num(r, key, fmt):
    return format(r[key], fmt) if key in r else "-"


def compare(ref, sks, tolerance):
    """Rows ``(quantity, reference, skstruct, difference)`` and whether the F1 scores
    agree within ``tolerance`` points."""
    ok = not ref["failed"] and not sks["failed"]
    rows = []
    for key, name in (("f1", "test F1, c1 = c2 = 0.1"), ("best_cv", "best CV F1 of the search"),
                      ("best_f1", "test F1, the search's best estimator")):
        if key in ref and key in sks:
            d = 100 * (sks[key] - ref[key])
            if key != "best_cv" and abs(d) > tolerance:
                ok = False
            rows.append((name, f"{ref[key]:.4f}", f"{sks[key]:.4f}", f"{d:+.2f} points"))
        else:
            ok = False
            rows.append((name, _num(ref, key, ".4f"), _num(sks, key, ".4f"), "-"))
    rows.append(("best c1, c2", _fmt_params(ref.get("best_params")),
                 _fmt_params(sks.get("best_params")), ""))
    rows.append(("model size of the best estimator (`size_`, MB)", _num(ref, "size_mb", ".2f"),
                 _num(sks, "size_mb", ".2f"), ""))
    rows.append(("iterations of L-BFGS, c1 = c2 = 0.1", _num(ref, "fit_iterations", "d"),
                 _num(sks, "fit_iterations", "d"), ""))
    for key, name in (("fit_seconds", "training, c1 = c2 = 0.1 (s)"),
                      ("search_seconds", "the search (s)")):
        rows.append((name, _num(ref, key, ".0f"), _num(sks, key, ".0f"), ""))
    return rows, ok


def same_candidates(ref, sks):
    a, b = ref.get("candidates"), sks.get("candidates")
    if a is None or b is None:
        return None
    return len(a) == len(b) and all(
        p.keys() == q.keys() and all(abs(p[k] - q[k]) <= 1e-12 * abs(p[k]) for k in p)
        for p, q in zip(a, b))


def _wrap(text):
    return textwrap.wrap(text, width=92, break_long_words=False, break_on_hyphens=False)


def doc_lines(ref, sks, rows, args, changes, same, overlap):
    """The section of the documentation: the changes to the cells and the results."""
    v = ref.get("versions") or sks.get("versions") or {}
    n_iter = args.n_iter if args.n_iter is not None else 50
    pairs = []
    for _, rule, before, after in changes:
        if before and rule in (1, 2, 3, 4, 5) and (before, after) not in pairs:
            pairs.append((before, after))
    width = max(len(b) for b, _ in pairs)
    failed = ref["failed"] + sks["failed"]
    lines = _wrap(
        "`benchmarks/tutorial_sklearn_crfsuite.py` downloads sklearn-crfsuite 0.5.0's source "
        "distribution, takes the code cells of its tutorial (`docs/CoNLL2002.rst`) and runs "
        "them twice, each time in a fresh process: with sklearn-crfsuite and with the drop-in. "
        "The tutorial's corpus, CoNLL-2002 Spanish, comes with NLTK's data; the script reads "
        "CoNLL-2000 chunking instead, into the same (word, POS tag, label) triples. The cells "
        "change only in their imports and their data loading (the lines of the drop-in's "
        "run; sklearn-crfsuite's keeps `import sklearn_crfsuite`):")
    lines = ["## sklearn-crfsuite's tutorial", ""] + lines + ["", "```text"]
    lines += [f"{b:{width}s}  ->  {a}" for b, a in pairs]
    lines += ["```", ""]
    lines += _wrap(
        "`conll2000_sents`, a reader of CoNLL-2000's files, is inserted before the first cell "
        "that loads data. One cell is left out on both sides: the plot of `rs.grid_scores_`, "
        "an attribute scikit-learn removed in version 0.20 (its successor is `cv_results_`), "
        "and the cell fails with sklearn-crfsuite too. "
        + ("Every other cell runs, with only the changes above, on both sides. "
           if not failed else "")
        + "`numpy.random.seed(0)` runs before the first cell, so that the randomized search "
        "draws the same values of `c1` and `c2` on both sides"
        + (" (it did: the candidates are identical)." if same else "."))
    dev = []
    if args.n_iter is not None:
        dev.append(f"`n_iter={args.n_iter}` instead of the tutorial's 50")
    if args.train_sents is not None:
        dev.append(f"the first {args.train_sents} training sentences only")
    n_train = ref.get("n_train") or sks.get("n_train")
    n_test = ref.get("n_test") or sks.get("n_test")
    lines.append("")
    lines += _wrap(
        f"Result ({datetime.date.today().isoformat()}; {n_train} training and {n_test} test "
        f"sentences; the search over {n_iter} candidate{'s' if n_iter != 1 else ''}, 3-fold, "
        f"with `n_jobs=-1` on {os.cpu_count()} cores; scikit-learn {v.get('scikit-learn')}, "
        f"NumPy {v.get('numpy')}, numba {v.get('numba')}, python-crfsuite "
        f"{v.get('python-crfsuite')}, Python {v.get('python')})"
        + (", deviating from the tutorial: " + "; ".join(dev) if dev else "") + ":")
    lines += ["", "| | sklearn-crfsuite | the drop-in (skstruct) | difference |",
              "|---|---:|---:|---:|"]
    for name, a, b, d in rows:
        lines.append(f"| {name} | {a} | {b} | {d} |")
    lines.append("")
    lines += _wrap(
        "F1 is the tutorial's: weighted over the chunk labels other than `O`, on the "
        "flattened tokens of the test set. The times are wall-clock times of the training "
        "cells, on cores that other work used as well"
        + (" (and the two runs, which ran partly at the same time)" if overlap else "")
        + ", so they are indicative only; the drop-in's first fit includes loading numba's "
        "compiled kernels. `size_` is "
        "the size of the saved model: CRFsuite's file of the non-zero weights, and the "
        "drop-in's own format (see `model_filename` of "
        "{py:class}`~skstruct.compat.sklearn_crfsuite.CRF`), so the two differ.")
    warned = sorted(set(sks.get("warnings", {}).get("ConvergenceWarning", ())))
    if warned and not ref.get("warnings", {}).get("ConvergenceWarning"):
        its = ref.get("fit_iterations")
        lines.append("")
        lines += _wrap(
            "The drop-in issues a `ConvergenceWarning` in the cells that train: L-BFGS stops "
            "at the tutorial's `max_iterations=100` short of its tolerance. CRFsuite "
            + ("stops after 100 iterations of the first fit as well, silently." if its == 100
               else "warns of nothing."))
    if failed:
        lines += ["", "Cells that failed:", ""]
        for side, r in (("sklearn-crfsuite", ref), ("the drop-in", sks)):
            for f in r["failed"]:
                lines.append(f"- {side}, cell {f['cell']}: `{f['error']}`")
    return lines


def main():
    if len(sys.argv) == 5 and sys.argv[1] == "--child":
        child(*sys.argv[2:])
        return 0
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--data", default=str(DATA),
                        help="folder of CoNLL-2000's train.txt and test.txt")
    parser.add_argument("--n-iter", type=int, help="candidates of the search (tutorial: 50)")
    parser.add_argument("--train-sents", type=int,
                        help="keep the first N training sentences (tutorial: all)")
    parser.add_argument("--side", choices=("both", "none") + SIDES, default="both",
                        help="the sides to run; the others are read from --results")
    parser.add_argument("--results", help="folder of each side's results (default: a "
                                          "temporary folder)")
    parser.add_argument("--sdist", help="a local sklearn_crfsuite-0.5.0.tar.gz instead "
                                        "of downloading it")
    parser.add_argument("--tolerance", type=float, default=0.5,
                        help="largest difference of the test F1 accepted, in points")
    parser.add_argument("--write-doc", action="store_true",
                        help=f"write the section 'tutorial' of {DOC.relative_to(ROOT)}")
    args = parser.parse_args()
    data = pathlib.Path(args.data).resolve()
    for name in ("train.txt", "test.txt"):
        if not (data / name).is_file():
            raise SystemExit(f"--data {data}: no {name}")

    tmp = pathlib.Path(tempfile.mkdtemp(prefix="tutorial_sklearn_crfsuite_"))
    results = pathlib.Path(args.results) if args.results else tmp
    results.mkdir(parents=True, exist_ok=True)
    sdist = pathlib.Path(args.sdist) if args.sdist else download(tmp / "dist")
    blocks = code_blocks(tutorial_text(sdist))
    print(f"{sdist.name}: {TUTORIAL} has {len(blocks)} code cells")

    out = {}
    all_changes = {}
    for side in SIDES:
        cells, changes = transform(blocks, side, data, args.n_iter, args.train_sents)
        all_changes[side] = changes
        print(f"\nchanges for the {side} run:")
        for k, rule, before, after in changes:
            what = f"rule {rule}" if rule != "dev" else "DEVIATION"
            print(f"  cell {k:2d} {what:9s} {before}  ->  {after}" if before
                  else f"  cell {k:2d} {what:9s} {after}")
        if args.side in (side, "both"):
            out[side] = run_side(side, cells, results)
    for side in SIDES:
        path = results / f"{side}.json"
        if side not in out and path.exists():
            out[side] = json.loads(path.read_text())
            print(f"{side}: results read from {path}")
    print(f"\nresults kept in {results}")
    if len(out) < 2:
        print(f"no results of the {' and the '.join(set(SIDES) - set(out))} run in "
              f"{results} yet: nothing to compare")
        return 0 if all(not r["failed"] for r in out.values()) else 1
    ref, sks = out["reference"], out["skstruct"]
    # each side ran from the writing of its cells to the writing of its results
    spans = [((results / f"{side}_cells.json").stat().st_mtime,
              (results / f"{side}.json").stat().st_mtime) for side in SIDES]
    overlap = spans[0][0] < spans[1][1] and spans[1][0] < spans[0][1]
    print(f"the two sides ran at the same time (in part): {overlap}")

    rows, ok = compare(ref, sks, args.tolerance)
    same = same_candidates(ref, sks)
    print("\n" + "=" * 100)
    if args.n_iter is not None:
        print(f"DEVIATION: n_iter={args.n_iter} instead of the tutorial's 50")
    if args.train_sents is not None:
        print(f"DEVIATION: the first {args.train_sents} training sentences only")
    print(f"{'':48s} {'sklearn-crfsuite':>22s} {'drop-in (skstruct)':>22s} {'difference':>14s}")
    for name, a, b, d in rows:
        print(f"{name:48s} {a:>22s} {b:>22s} {d:>14s}")
    for key, name in (("f1", "c1 = c2 = 0.1"), ("best_f1", "best estimator")):
        for side, r in out.items():
            tut = r.get(key + "_tutorial")
            if tut is not None and abs(tut - r[key]) > 1e-9:
                ok = False
                print(f"{side}, {name}: the tutorial's flat_f1_score {tut:.6f} differs from "
                      f"scikit-learn's f1_score {r[key]:.6f}")
    for side, r in out.items():
        for category, where in sorted(r.get("warnings", {}).items()):
            print(f"{side}: {category} in cells {sorted(set(where))}")
    print(f"same candidates of the search on both sides: {same}")
    if same is False:
        ok = False
    for side, r in out.items():
        for f in r["failed"]:
            print(f"FAILED {side} cell {f['cell']} ({f['role']}): {f['error']}")
    print(f"\nF1 within {args.tolerance} points, every cell run: {'yes' if ok else 'NO'}")
    if args.write_doc:
        write_section("tutorial", doc_lines(ref, sks, rows, args, all_changes["skstruct"],
                                            same, overlap), path=str(DOC))
        print(f"wrote the section 'tutorial' of {DOC}")
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
