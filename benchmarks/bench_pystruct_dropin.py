"""pystruct 0.3.2 against skstruct's pystruct drop-in: one pystruct script, run by both.

Run: ``python benchmarks/bench_pystruct_dropin.py [--rows ocr,scene,snakes,snakes_pystruct]
[--write-doc]``.

``benchmarks/pystruct/run_pystruct.py`` is a pystruct program: it builds pystruct's model
and learner from a task file, fits, predicts and reports.  This script runs that same file
twice on the same arrays: under pystruct 0.3.2 in its Python 3.6 environment
(``benchmarks/pystruct/build_env.sh``), and under this Python with every ``pystruct``
import resolved to :mod:`skstruct.compat.pystruct` (``benchmarks/pystruct/as_dropin.py``;
the file is not edited).  The drop-in runs twice and the second run is reported, so that
numba's compilation (cached on disk by the first) is excluded while loading the cache is
included.  Both weight vectors are scored by the same code (skstruct's oracles) on the
same objective, ``1/2 ||w||^2 + C sum_i H_i(w)``.  Nothing is asserted; figures go to
stdout and, with ``--write-doc``, into ``doc/benchmarks.md``.
"""

import argparse
import json
import os
import subprocess
import sys
import tempfile

import bench_pystruct as bp
from _doc import write_section

HERE = os.path.dirname(os.path.abspath(__file__))
RUNNER = os.path.join(HERE, "pystruct", "run_pystruct.py")
AS_DROPIN = os.path.join(HERE, "pystruct", "as_dropin.py")

# load_snakes' edge-feature layout of pystruct's snakes example since 2018
PYSTRUCT_SNAKES = "neighbours_directional"

ROWS = {
    "ocr": dict(bp.ROWS["ocr"], title="OCR letters, `FrankWolfeSSVM(ChainCRF(), C=0.1, "
                "max_iter=200)`, train fold 1 / test folds 0, 2-9"),
    "scene": dict(bp.ROWS["scene"], title="Scene, `OneSlackSSVM(MultiLabelClf(edges=full, "
                  "inference_method='ad3'), C=0.1, tol=0.01, inference_cache=50)`"),
    "snakes": dict(bp.ROWS["snakes"], title="Snakes, `OneSlackSSVM(EdgeFeatureGraphCRF("
                   "inference_method='ad3'), C=0.1, tol=0.1, inference_cache=50, "
                   "switch_to=('ad3', {'branch_and_bound': True}))`, skstruct's "
                   "`load_snakes()` edge features"),
    "snakes_pystruct": dict(bp.ROWS["snakes"], data="snakes_pystruct",
                            title="Snakes, the same learner, with the edge features of "
                            "pystruct's current snakes example "
                            f"(`load_snakes(edge_features=\"{PYSTRUCT_SNAKES}\")`)"),
}


def load(name):
    if name != "snakes_pystruct":
        return bp.load(name)
    from skstruct.datasets import load_snakes

    d = load_snakes(edge_features=PYSTRUCT_SNAKES)
    return d.X_train, d.y_train, d.X_test, d.y_test, "edge_feature_graph"


def run(python, prefix, row_name, tmp, tag):
    row = ROWS[row_name]
    data = load(row["data"])
    config = dict(row["pystruct"], C=bp.c_of(row, len(data[1])))
    inp = os.path.join(tmp, f"{row_name}_in.npz")
    out = os.path.join(tmp, f"{row_name}_{tag}.json")
    bp.to_npz(inp, data, config)
    # the runner's own primal pass is skipped: both weight vectors are scored below by
    # one evaluator (through the model's per-sample inference the drop-in's exact
    # 'ad3' would solve 200 integer programs one by one, minutes that no table shows)
    env = dict(os.environ, OMP_NUM_THREADS="1", OPENBLAS_NUM_THREADS="1", MKL_NUM_THREADS="1",
               RUN_PYSTRUCT_NO_PRIMAL="1")
    subprocess.run([python, *prefix, RUNNER, inp, out], check=True, env=env)
    with open(out) as f:
        res = json.load(f)
    res["primal_C_eval"] = bp.primal_of_data(data, config["C"], res["w"])
    return res


def fmt(name, ps, dr):
    lines = [f"### {ROWS[name]['title']}", "",
             "| | pystruct 0.3.2 | skstruct.compat.pystruct | ratio |", "|---|---|---|---|"]

    def add(label, key, f, ratio=False):
        a, b = ps.get(key), dr.get(key)
        r = ""
        if ratio and a and b:
            r = f"**{a / b:.1f}x faster**" if a >= b else f"{b / a:.1f}x slower"
        lines.append(f"| {label} | {f.format(a)} | {f.format(b)} | {r} |")

    add("fit time (s)", "fit_seconds", "{:.3f}", ratio=True)
    add("predict time, test set (s)", "predict_seconds", "{:.3f}", ratio=True)
    add("iterations", "n_iter", "{}")
    add("primal objective, C form (same evaluator)", "primal_C_eval", "{:.4f}")
    add("train accuracy (Hamming)", "train_accuracy", "{:.4f}")
    add("test accuracy (Hamming)", "test_accuracy", "{:.4f}")
    add("peak RSS (MB)", "peak_rss_mb", "{:.0f}")
    lines.append(f"| inference after fit | `{ps.get('inference_method_final')}` | "
                 f"`{dr.get('inference_method_final')}` | |")
    return "\n".join(lines) + "\n"


def recorded_rows():
    """The rows' tables in the script's section of ``doc/benchmarks.md``, by row name."""
    from _doc import DOC

    start, end = "<!-- bench_pystruct_dropin:start -->", "<!-- bench_pystruct_dropin:end -->"
    text = open(DOC).read() if os.path.exists(DOC) else ""
    if start not in text:
        return {}
    body = text[text.index(start) + len(start):text.index(end)]
    titles = {f"### {row['title']}": name for name, row in ROWS.items()}
    rows = {}
    for block in body.split("\n### ")[1:]:
        block = "### " + block.strip() + "\n"
        name = titles.get(block.splitlines()[0])
        if name is not None:
            rows[name] = block
    return rows


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--rows", default=",".join(ROWS))
    ap.add_argument("--write-doc", action="store_true")
    args = ap.parse_args()
    pystruct_python = bp.ensure_pystruct()
    # rows not run now keep their last recorded table (each row's two sides are from
    # one run)
    kept = recorded_rows()
    with tempfile.TemporaryDirectory() as tmp:
        for name in args.rows.split(","):
            ps = run(pystruct_python, [], name, tmp, "pystruct")
            run(sys.executable, [AS_DROPIN], name, tmp, "dropin_cold")
            dr = run(sys.executable, [AS_DROPIN], name, tmp, "dropin")
            text = fmt(name, ps, dr)
            print(text, flush=True)
            kept[name] = text
    sections = [kept[name] for name in ROWS if name in kept]
    if args.write_doc:
        notes = [
            "Measured by `python benchmarks/bench_pystruct_dropin.py --write-doc` "
            "in one run: the same pystruct program "
            "(`benchmarks/pystruct/run_pystruct.py`) under pystruct 0.3.2 (Python 3.6) and, "
            "unedited, under skstruct's drop-in (every `pystruct` import resolved to "
            "`skstruct.compat.pystruct`), on the same arrays, one thread each for BLAS.",
            "",
            "- The drop-in's figures are from its second run (numba's compiled kernels "
            "loaded from the disk cache; compilation excluded, loading included).",
            "- Both weight vectors are scored by the same evaluator on the same C-form "
            "objective.",
            "- Each row's two sides are measured in one run; rows may come from different "
            "runs of the script.",
            "- On the scene data the drop-in predicts one sample at a time through the "
            "model's own inference (`'ad3'`: TRW-S on the full label graph), hence its "
            "slower prediction there.",
            "- On the snakes the learners end on `('ad3', {'branch_and_bound': True})`, "
            "which the drop-in decides exactly, sample by sample, as `method=\"ilp\"` "
            "does: a branch and bound over TRW-S's bound (HiGHS's integer program past "
            "1,000 nodes).  Both learners switch once their first method's cutting planes "
            "stop; the drop-in's second phase then runs until the exact oracle certifies "
            "its gap.",
            "",
        ]
        write_section("bench_pystruct_dropin", ["## pystruct programs on the drop-in", "",
                                                *notes, *sections])


if __name__ == "__main__":
    main()
