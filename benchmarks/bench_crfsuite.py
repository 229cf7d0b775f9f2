"""CoNLL-2000 chunking: skstruct's plain CRF against python-crfsuite's L-BFGS.

Same data (the CoNLL-2000 chunking files, 8936 training and 2012 test
sentences), same features (the sklearn-crfsuite tutorial's feature dicts from
:func:`skstruct.datasets.conll_features`, vectorised by ``DictVectorizer`` for
skstruct and encoded identically for crfsuite: see ``benchmarks/_crfsuite.py``),
same model (every attribute x label and label x label weight: crfsuite with
``feature.possible_states`` and ``feature.possible_transitions`` on), same
objective (``-loglik + c2 ||w||^2``, i.e. ``C = 1 / (2 c2)``), same budget of
L-BFGS iterations.  Both run in this process, one after the other.

Usage::

    python benchmarks/bench_crfsuite.py [--c2 1.0] [--iters 100] [--no-doc]

Needs ``pip install python-crfsuite``.  Writes its section of
``doc/benchmarks.md``.
"""

import argparse
import os
import platform
import sys
import time

import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.dirname(HERE))
sys.path.insert(0, HERE)

from _crfsuite import run_crfsuite  # noqa: E402
from _doc import write_section  # noqa: E402
from sklearn.feature_extraction import DictVectorizer  # noqa: E402

from skstruct import NonLocalCRF  # noqa: E402
from skstruct.datasets import conll_features, load_conll  # noqa: E402
from skstruct.metrics import segment_f1  # noqa: E402
from skstruct.preprocessing import NodeTransformer  # noqa: E402

DATA = os.path.join(os.path.dirname(os.path.dirname(HERE)), "shared", "data", "conll2000")


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--c2", type=float, default=1.0)
    ap.add_argument("--iters", type=int, default=100)
    ap.add_argument("--no-doc", action="store_true")
    args = ap.parse_args()
    train = load_conll(os.path.join(DATA, "train.txt"))
    test = load_conll(os.path.join(DATA, "test.txt"))
    ftr, fte = conll_features(train.tokens), conll_features(test.tokens)
    C = 1.0 / (2.0 * args.c2)

    # compile (or load) the kernels on a small slice, outside the timings
    small = NodeTransformer(DictVectorizer()).fit(ftr[:50])
    NonLocalCRF(C=C, max_iter=2).fit(small.transform(ftr[:50]), train.y[:50])

    t0 = time.perf_counter()
    vec = NodeTransformer(DictVectorizer())
    Xtr = vec.fit_transform(ftr)
    t_vec = time.perf_counter() - t0
    t0 = time.perf_counter()
    crf = NonLocalCRF(C=C, max_iter=args.iters, tol=0.0).fit(Xtr, train.y)
    t_fit = time.perf_counter() - t0
    pred = crf.predict(vec.transform(fte))
    f1_ours = segment_f1(test.y, pred)
    obj_ours = crf.history_["objective"][-1]
    print(f"skstruct: vectorise {t_vec:.1f} s, fit {t_fit:.1f} s ({crf.n_iter_} iterations), "
          f"F1 {100 * f1_ours:.2f}, objective {obj_ours:.6g}", flush=True)

    ref = run_crfsuite(ftr, train.y, fte, c2=args.c2, max_iterations=args.iters)
    f1_ref = segment_f1(test.y, [np.asarray(p) for p in ref["pred"]])
    print(f"crfsuite: fit {ref['fit_seconds']:.1f} s ({ref['n_iter']} iterations), F1 "
          f"{100 * f1_ref:.2f}, objective {C * ref['objective']:.6g} (C * its loss)",
          flush=True)
    n_params = crf.coef_.size
    ratio = ref["fit_seconds"] / (t_vec + t_fit)
    lines = [
        "## CoNLL-2000 chunking: plain CRF against python-crfsuite",
        "",
        f"`benchmarks/bench_crfsuite.py --c2 {args.c2} --iters {args.iters}`; "
        f"{platform.machine()}, {os.cpu_count()} CPUs, both in one process. Same feature dicts "
        f"(sklearn-crfsuite tutorial), same dense model ({n_params} weights: every attribute "
        f"x label and label x label pair), same objective (`-loglik + c2 ||w||^2`, "
        f"`C = 1 / (2 c2) = {C:g}`), {args.iters} L-BFGS iterations each. skstruct's time "
        "includes `DictVectorizer`; crfsuite's includes its own attribute encoding.",
        "",
        "| | chunk F1 (test) | training time | iterations | final objective (C x crfsuite's"
        " loss) |",
        "|---|---|---|---|---|",
        f"| python-crfsuite 0.9.12 L-BFGS | {100 * f1_ref:.2f} | {ref['fit_seconds']:.1f} s | "
        f"{ref['n_iter']} | {C * ref['objective']:.1f} |",
        f"| skstruct `NonLocalCRF(energy=None)` | {100 * f1_ours:.2f} | {t_vec + t_fit:.1f} s "
        f"({t_vec:.1f} vectorising + {t_fit:.1f} fit) | {crf.n_iter_} | {obj_ours:.1f} |",
        "",
        f"F1 difference {100 * (f1_ours - f1_ref):+.2f} points; crfsuite / skstruct time "
        f"{ratio:.2f}x.",
    ]
    print("\n".join(lines))
    if not args.no_doc:
        write_section("crfsuite", lines)


if __name__ == "__main__":
    main()
