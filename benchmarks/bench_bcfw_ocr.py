"""BCFW on OCR against pystruct's FrankWolfeSSVM, with StructuredSVM's default settings.

OCR letters, train on fold 1 (704 words), C = 0.1, 200 passes: pystruct 0.3.2's
``FrankWolfeSSVM`` (its example's settings, duality gap every 10 passes) against
``StructuredSVM(C=0.1, max_iter=200)`` with nothing else set, each in its own process, three
times; the median fit times and their ratio are reported, with the microseconds per block
step against an arithmetic floor derived from the data.

The floor counts the floating-point work one block step cannot avoid on this data: the unary
scores of the word (``nnz`` non-zero pixels times ``K`` labels, one multiply-add each), the
loss-augmented Viterbi recursion (``(T - 1) K^2`` add-and-max pairs), and the sparse weight
update of the step (``nnz K`` multiply-adds for the word's feature rows); it divides that
count by the rate this machine reaches on a vectorised multiply-add loop of the same shape,
measured here.  Nothing else (data movement, the line search, the averaging) is counted, so
the floor is optimistic.

Usage::

    python benchmarks/bench_bcfw_ocr.py [--repeats 3] [--no-pystruct]
"""

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time

import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.dirname(HERE))
sys.path.insert(0, HERE)

import bench_pystruct  # noqa: E402

ROW = "ocr_default"


def _floor_us():
    """Arithmetic floor of one block step on OCR fold 1, in microseconds."""
    import numba

    from skstruct.datasets import load_letters

    d = load_letters()
    X = [x for x, f in zip(d.X, d.folds) if f == 1]
    K = 26
    nnz = np.mean([np.count_nonzero(x) for x in X])
    T = np.mean([len(x) for x in X])
    flops = 2 * nnz * K + 2 * (T - 1) * K * K + 2 * nnz * K

    @numba.njit(fastmath=True, cache=False)
    def fma(W, rows, x, out, reps):
        # the shape of the unary scores: rows of W scaled and added into a K-vector
        for _ in range(reps):
            for i in range(rows.shape[0]):
                r = W[rows[i]]
                xi = x[i]
                for k in range(out.shape[0]):
                    out[k] += xi * r[k]
        return out

    rng = np.random.default_rng(0)
    W = rng.normal(size=(128, K))
    rows = rng.integers(0, 128, size=int(nnz))
    x = rng.normal(size=rows.shape[0])
    out = np.zeros(K)
    fma(W, rows, x, out, 1)
    reps = 20000
    t0 = time.perf_counter()
    fma(W, rows, x, out, reps)
    rate = 2 * rows.shape[0] * K * reps / (time.perf_counter() - t0)  # flop/s
    return flops / rate * 1e6, dict(nnz=nnz, T=T, flops=flops, gflops=rate / 1e9)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--repeats", type=int, default=3)
    ap.add_argument("--no-pystruct", action="store_true")
    args = ap.parse_args()
    sk, ps = [], []
    with tempfile.TemporaryDirectory() as tmp:
        for r in range(args.repeats):
            out = os.path.join(tmp, f"sk{r}.json")
            subprocess.run([sys.executable, bench_pystruct.__file__, "--skstruct-child", ROW,
                            out], check=True)
            with open(out) as f:
                sk.append(json.load(f))
            if not args.no_pystruct:
                ps.append(bench_pystruct.run_pystruct(ROW, tmp))
            line = f"run {r + 1}: skstruct {sk[-1]['fit_seconds']:.3f} s"
            if ps:
                line += f", pystruct {ps[-1]['fit_seconds']:.1f} s"
            print(line, flush=True)
    sk_t = float(np.median([s["fit_seconds"] for s in sk]))
    n_steps = sk[0]["n_iter"] * 704
    per_step = sk_t / n_steps * 1e6
    floor, parts = _floor_us()
    solver_s = float(np.median([s["curve"]["seconds"][-1] for s in sk]))
    print()
    print("| | pystruct 0.3.2 | skstruct (defaults) | ratio |")
    print("|---|---|---|---|")
    if ps:
        ps_t = float(np.median([p["fit_seconds"] for p in ps]))
        print(f"| fit seconds (median of {args.repeats}) | {ps_t:.1f} | {sk_t:.3f} | "
              f"{ps_t / sk_t:.1f}x |")
        print(f"| test accuracy | {ps[0]['test_accuracy']:.4f} | {sk[0]['test_accuracy']:.4f}"
              " | |")
        print(f"| primal (C form, skstruct's oracles) | {ps[0]['primal_C_skstruct_eval']:.3f} | "
              f"{sk[0]['primal_C']:.3f} | |")
    else:
        print(f"| fit seconds (median of {args.repeats}) | | {sk_t:.3f} | |")
    print(f"| passes, gap checks | | {sk[0]['n_iter']}, {len(sk[0]['gaps_lambda'])} | |")
    print()
    print(f"per block step: {per_step:.2f} us with the gap checks, "
          f"{solver_s / n_steps * 1e6:.2f} us in the passes alone; arithmetic floor "
          f"{floor:.2f} us ({parts['flops']:.0f} flops: {parts['nnz']:.0f} non-zero pixels "
          f"x 26 labels twice, {parts['T']:.1f} letters of Viterbi; "
          f"{parts['gflops']:.1f} Gflop/s measured)")


if __name__ == "__main__":
    main()
