"""Peak memory of a CRF fit on CoNLL-2000 against python-crfsuite's.

The documented pipeline ``make_pipeline(NodeTransformer(DictVectorizer()), CRF(...))``
fitted on the CoNLL-2000 chunking training set (8936 sentences, the sklearn-crfsuite
tutorial's feature dicts of :func:`skstruct.datasets.conll_features`), 100 L-BFGS
iterations, one thread, against python-crfsuite's ``Trainer`` (L-BFGS, the same
feature dicts encoded as ``DictVectorizer`` encodes them, see ``benchmarks/_crfsuite.py``,
the same objective: ``c2 = 1 / (2 C)``, 100 iterations), each in a fresh process whose
peak resident set size (``ru_maxrss``) is reported.  Two feature sets: *all* (every
attribute x label pair: ``CRF(feature_pairs="all")``, the CRF's default, against
``feature.possible_states=True``) and *seen* (the pairs seen in training:
``feature_pairs="seen"`` against crfsuite's default).

Every process first loads the data and builds the feature dicts of the training set
(with skstruct's reader loaded on its own, so that the crfsuite process imports neither
skstruct's package nor numba); the row *data and feature dicts* is that part alone, the
common floor of both sides.  skstruct's process then fits the pipeline on 50 sentences
(numba's kernels loaded from its cache, which a first process fills beforehand, so
compilation is not measured) and then on the whole set.  *numba's runtime* is the fixed
memory a process pays for numba: the peak after ``import numba`` and compiling one
trivial kernel, minus the peak after importing numpy and scipy alone.

With ``--base REV`` (default: 3decb23, the revision before the memory work) the skstruct
rows are also measured on that revision, checked out once as a detached worktree under
``benchmarks/.revisions/`` (as ``bench_revisions.py`` does), so that the table shows the
figures before and after.

Usage::

    python benchmarks/bench_memory.py [--C 0.5] [--iters 100] [--repeat 1]
                                      [--base 3decb23 | --base none] [--quick]
                                      [--write-doc]

Runs about 10 minutes on an idle 2-core machine with ``--repeat 1`` and a base revision
(eleven processes, each loading the data for about 20 s; each fit about 25 s, each crfsuite
run 30-45 s; the kernels of each tree compiled once, a minute or two), and at most
``--timeout`` seconds (default 1800) per process; ``--quick`` fits 10 iterations on 1000
sentences, a smoke test of a few minutes whose figures are not the benchmark's.  Prints a
markdown table; ``--write-doc`` also writes this tree's table into ``doc/benchmarks.md``
(section ``bench_memory``) and, with a base revision, the side-by-side table into the same
section of ``benchmarks/HISTORY.md``.  Nothing is asserted.  Needs ``pip install python-crfsuite``.
"""

import argparse
import importlib.util
import json
import os
import platform
import resource
import subprocess
import sys
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)


def _find_data():
    """``shared/data/conll2000`` beside the repository or beside one of its parents (a git
    worktree of the repository may sit deeper)."""
    here = ROOT
    while True:
        here = os.path.dirname(here)
        path = os.path.join(here, "shared", "data", "conll2000")
        if os.path.isdir(path) or os.path.dirname(here) == here:
            return path


DATA = _find_data()
THREAD_VARS = ("NUMBA_NUM_THREADS", "OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS",
               "MKL_NUM_THREADS")
BASE = "3decb23"
QUICK = dict(n_sentences=1000, iters=10)


def _peak_mb():
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024.0


def _rss_mb():
    with open("/proc/self/statm") as f:
        return int(f.read().split()[1]) * resource.getpagesize() / 2.0 ** 20


def _reader(tree):
    """skstruct's CoNLL reader, loaded from its file without importing the package."""
    path = os.path.join(tree, "skstruct", "datasets", "_load.py")
    spec = importlib.util.spec_from_file_location("_conll_reader", path)
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


def _training_data(tree, data, n_sentences):
    reader = _reader(tree)
    train = reader.load_conll(os.path.join(data, "train.txt"))
    tokens, y = train.tokens, train.y
    if n_sentences:
        tokens, y = tokens[:n_sentences], y[:n_sentences]
    return reader.conll_features(tokens), y


def worker(config, args):
    """Run one configuration in this process; return its figures."""
    out = dict(config=config)
    if config == "python":
        import numpy  # noqa: F401
        import scipy.sparse  # noqa: F401
    elif config == "numba":
        import numba
        import numpy  # noqa: F401
        import scipy.sparse  # noqa: F401

        @numba.njit(cache=False)
        def one(x):
            return x + 1

        one(1)
    else:
        tree = args.tree
        feats, y = _training_data(tree, args.data, args.n_sentences)
        out["data_mb"] = _rss_mb()
        side, pairs = (config.split() + ["all"])[:2]
        if side == "skstruct":
            sys.path.insert(0, tree)
            import numpy as np
            from sklearn.feature_extraction import DictVectorizer
            from sklearn.pipeline import make_pipeline

            import skstruct
            from skstruct import CRF
            from skstruct.preprocessing import NodeTransformer

            out["package"] = os.path.dirname(os.path.dirname(skstruct.__file__))
            # numba's kernels loaded from the cache (or compiled) on a few sentences
            make_pipeline(NodeTransformer(DictVectorizer()),
                          CRF(C=args.C, max_iter=2, feature_pairs=pairs, n_jobs=1)).fit(
                feats[:50], y[:50])
            out["warm_mb"] = _rss_mb()
            if not args.warm_only:
                pipe = make_pipeline(NodeTransformer(DictVectorizer()),
                                     CRF(C=args.C, max_iter=args.iters, tol=0.0,
                                         feature_pairs=pairs, n_jobs=1))
                pipe.fit(feats, y)
                crf = pipe[-1]
                n_weights = crf.coef_.size
                if pairs == "seen":
                    # coef_ keeps the full layout: count the trained (non-zero) node weights
                    n_weights = int(np.count_nonzero(crf.unary_coef_)) + crf.pairwise_coef_.size
                out.update(n_iter=int(crf.n_iter_), n_weights=int(n_weights),
                           objective=float(crf.history_["objective"][-1]))
        elif side == "crfsuite":
            sys.path.insert(0, HERE)
            from _crfsuite import run_crfsuite

            ref = run_crfsuite(feats, y, [], c2=1.0 / (2.0 * args.C),
                               max_iterations=args.iters, possible_states=pairs == "all")
            out.update(n_iter=ref["n_iter"], n_weights=ref["n_features"],
                       objective=args.C * ref["objective"])
    out["peak_mb"] = _peak_mb()
    return out


def run(config, args, tree, cache, warm_only=False):
    env = dict(os.environ, **{v: "1" for v in THREAD_VARS}, NUMBA_CACHE_DIR=cache)
    env.pop("PYTHONPATH", None)
    cmd = [sys.executable, os.path.abspath(__file__), "--worker", config, "--tree", tree,
           "--C", str(args.C), "--iters", str(args.iters), "--data", args.data,
           "--n-sentences", str(args.n_sentences)]
    if warm_only:
        cmd.append("--warm-only")
    with tempfile.TemporaryDirectory() as tmp:
        # a temporary cwd: the package is imported from ``tree`` alone
        res = subprocess.run(cmd, env=env, capture_output=True, text=True, cwd=tmp,
                             timeout=args.timeout)
    if res.returncode:
        raise RuntimeError(f"{config} ({tree}) failed:\n{res.stderr[-3000:]}")
    return json.loads(res.stdout.strip().splitlines()[-1])


def base_tree(rev):
    """Path of a detached worktree of ``rev`` (``bench_revisions.py``'s, made once)."""
    sys.path.insert(0, HERE)
    from bench_revisions import worktree

    return worktree(rev)


def _machine():
    import numba
    import numpy

    return (f"{platform.machine()}, {os.cpu_count()} CPUs, Python "
            f"{platform.python_version()}, numpy {numpy.__version__}, numba "
            f"{numba.__version__}, {platform.system()} {platform.release()}")


def table(rows, args, base_label):
    """The markdown lines of the results ``rows`` (config -> figures, largest peak); without
    ``base_label``, this tree's rows alone."""
    numba_mb = rows["numba"]["peak_mb"] - rows["python"]["peak_mb"]
    runs = "one run" if args.repeat == 1 else f"largest of {args.repeat} runs"
    data_mb = rows["data"]["peak_mb"]
    what = (f"{args.n_sentences} sentences, {args.iters} iterations (a smoke run)"
            if args.quick else f"the training set, {args.iters} L-BFGS iterations")
    lines = [
        "## Peak memory of a CRF fit on CoNLL-2000 against python-crfsuite",
        "",
        f"`python benchmarks/bench_memory.py{' --quick' if args.quick else ''}`; "
        f"{_machine()}; every configuration in its own process with one thread, peak RSS "
        f"(`ru_maxrss`, {runs}). CoNLL-2000 chunking, {what}, the "
        "sklearn-crfsuite tutorial's feature dicts; skstruct: "
        "`make_pipeline(NodeTransformer(DictVectorizer()), CRF(C=" f"{args.C:g}, "
        f"max_iter={args.iters}, n_jobs=1))` (kernels loaded from numba's cache); "
        f"crfsuite: `pycrfsuite.Trainer` (L-BFGS, `c2 = 1 / (2 C) = {1 / (2 * args.C):g}`). "
        "*all*: every attribute x label pair (`feature_pairs=\"all\"`, "
        "`feature.possible_states=True`); *seen*: the pairs seen in training (weights: "
        "crfsuite's feature count, skstruct's non-zero weights). Every process "
        f"holds the data and feature dicts ({data_mb:.0f} MB). numba's fixed runtime: "
        f"{numba_mb:.0f} MB (`import numba` and one trivial kernel, beyond numpy and "
        "scipy).",
        "",
        "| configuration | weights | iterations | peak MB | above the data MB |",
        "|---|---|---|---|---|",
    ]
    for pairs in ("all", "seen"):
        ref = rows.get(f"crfsuite {pairs}")
        if ref is None:
            continue
        lines.append(f"| crfsuite {pairs} | {ref['n_weights']} | {ref['n_iter']} | "
                     f"{ref['peak_mb']:.0f} | {ref['peak_mb'] - data_mb:.0f} |")
        labels = [f"skstruct {pairs}"] + ([f"skstruct {pairs} ({base_label})"] if base_label
                                          else [])
        for label in labels:
            r = rows.get(label)
            if r is None:
                continue
            lines.append(f"| {label} | {r['n_weights']} | {r['n_iter']} | "
                         f"{r['peak_mb']:.0f} | {r['peak_mb'] - data_mb:.0f} |")
    return lines


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--C", type=float, default=0.5)
    ap.add_argument("--iters", type=int, default=100)
    ap.add_argument("--repeat", type=int, default=1)
    ap.add_argument("--base", default=BASE,
                    help="revision measured beside the working tree ('none': skip)")
    ap.add_argument("--data", default=DATA)
    ap.add_argument("--quick", action="store_true")
    ap.add_argument("--timeout", type=float, default=1800)
    ap.add_argument("--write-doc", action="store_true",
                    help="also write the table into doc/benchmarks.md")
    ap.add_argument("--worker", help=argparse.SUPPRESS)
    ap.add_argument("--tree", default=ROOT, help=argparse.SUPPRESS)
    ap.add_argument("--n-sentences", type=int, default=0, help=argparse.SUPPRESS)
    ap.add_argument("--warm-only", action="store_true", help=argparse.SUPPRESS)
    args = ap.parse_args()
    if args.worker:
        print(json.dumps(worker(args.worker, args)))
        return
    if args.quick:
        args.n_sentences, args.iters = QUICK["n_sentences"], QUICK["iters"]
    caches = os.path.join(HERE, ".revisions", "numba-cache")
    trees = [("", ROOT, os.path.join(caches, "worktree"))]
    base_label = None
    if args.base.lower() != "none":
        sha, path = base_tree(args.base)
        base_label = f"before, {sha[:7]}"
        trees.append((f" ({base_label})", path, os.path.join(caches, sha)))
    for _, tree, cache in trees:
        # fill each tree's numba cache, so that no measured process compiles
        for pairs in ("all", "seen"):
            run(f"skstruct {pairs}", args, tree, cache, warm_only=True)
    configs = [("python", ROOT, trees[0][2]), ("numba", ROOT, trees[0][2]),
               ("data", ROOT, trees[0][2])]
    for pairs in ("all", "seen"):
        configs.append((f"crfsuite {pairs}", ROOT, trees[0][2]))
        configs += [(f"skstruct {pairs}", tree, cache, suffix) for suffix, tree, cache in trees]
    rows = {}
    for rep in range(args.repeat):
        for entry in configs:
            config, tree, cache = entry[:3]
            label = config + (entry[3] if len(entry) > 3 else "")
            r = run(config, args, tree, cache)
            if label not in rows or r["peak_mb"] > rows[label]["peak_mb"]:
                rows[label] = r
            print(f"run {rep + 1} {label}: peak {r['peak_mb']:.0f} MB", flush=True)
    lines = table(rows, args, base_label)
    print("\n".join(lines))
    if args.write_doc:
        from _doc import HISTORY, write_section

        write_section("bench_memory", table(rows, args, None))
        if base_label:
            write_section("bench_memory", lines, HISTORY)


if __name__ == "__main__":
    main()
