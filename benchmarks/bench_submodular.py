"""Submodular learning with graph cuts against unconstrained learning with TRW-S,
on binary segmentation of real photographs.

Run: ``python benchmarks/bench_submodular.py [--n-images 100] [--passes 20]
[--noise 1.0] [--write-doc]``.

Data: :func:`skstruct.datasets.make_binary_denoising`, ``n_images`` training
images of 100 x 100 pixels (10^6 pixels for 100 images: crops of
scikit-learn's two sample photographs binarised at their median, observed
through Gaussian noise), 4-connected grids, per-pixel features (the
observation and a constant) and per-edge features (a constant and the
contrast ``exp(-|o_u - o_v|)``, both non-negative); 20 other images for the
test.  Both learners are :class:`~skstruct.StructuredSVM` (BCFW, the same C
and number of passes, no early stop, ``random_state=0``):

* ``GraphModel(submodular=True)``: pairwise tables projected onto the
  supermodular cone after every step, the loss-augmented oracle an exact
  minimum cut (Boykov-Kolmogorov in numba);
* ``GraphModel()``: unconstrained tables, the oracle TRW-S (approximate, its
  messages warm-started between passes; ``inference_iter`` iterations per
  call, skstruct's default).

Reported: seconds per training pass over the 10^6 pixels (one thread,
compilation excluded), the time of one MAP decoding pass over the same pixels
at the learned weights (graph cut against 50 TRW-S iterations), the last
primal objective and duality gap (the TRW-S learner's oracle is not exact, so
its gap is not a certificate), and the test pixel accuracy of each, with the
per-pixel logistic regression (no edges) as the floor.  Nothing is asserted.
"""

import argparse
import os
import sys
import time

import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.dirname(HERE))


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--n-images", type=int, default=100)
    ap.add_argument("--passes", type=int, default=20)
    ap.add_argument("--noise", type=float, default=1.0)
    ap.add_argument("--C", type=float, default=0.1)
    ap.add_argument("--write-doc", action="store_true")
    args = ap.parse_args()

    from sklearn.linear_model import LogisticRegression

    from skstruct import StructuredSVM
    from skstruct._core import n_threads
    from skstruct.datasets import make_binary_denoising
    from skstruct.inference import map_inference
    from skstruct.models import GraphModel

    train = make_binary_denoising(args.n_images, 100, noise=args.noise, random_state=0)
    test = make_binary_denoising(20, 100, noise=args.noise, random_state=1)
    n_pixels = sum(len(y) for y in train.y)
    y_test = np.concatenate(test.y)
    rows = []
    for name, model in (("graph cut, submodular", GraphModel(submodular=True)),
                        ("TRW-S, unconstrained", GraphModel())):
        params = dict(C=args.C, model=model, tol=0.0, random_state=0, check_every=args.passes,
                      n_jobs=1)
        StructuredSVM(max_iter=2, **params).fit(train.X[:2], train.y[:2])   # compile
        with n_threads(1):
            t0 = time.perf_counter()
            svm = StructuredSVM(max_iter=args.passes, **params).fit(train.X, train.y)
            fit = time.perf_counter() - t0
        per_pass = svm._solver.seconds / svm.n_iter_
        acc = float(np.mean(np.concatenate(svm.predict(test.X)) == y_test))
        # one MAP pass over the training pixels at the learned weights
        P = svm.pairwise_coef_
        W = svm.unary_coef_
        t_map = 0.0
        for (feat, edges, ef) in train.X:
            unary = feat @ W.T
            tables = np.einsum("ef,fab->eab", ef, P)
            t0 = time.perf_counter()
            if model.submodular:
                map_inference(unary, edges, tables, method="graphcut")
            else:
                map_inference(unary, edges, tables, method="trws", max_iter=50, tol=0)
            t_map += time.perf_counter() - t0
        h = svm.history_
        rows.append(dict(name=name, per_pass=per_pass, fit=fit, map=t_map,
                         primal=float(h["primal"][-1]), gap=float(h["gap"][-1]), acc=acc,
                         table=np.round(P, 3).tolist()))
        print(rows[-1], flush=True)
    Xf = np.vstack([x[0] for x in train.X])
    lr = LogisticRegression().fit(Xf, np.concatenate(train.y))
    floor = float(np.mean(lr.predict(np.vstack([x[0] for x in test.X])) == y_test))
    print("per-pixel logistic regression", floor)

    lines = [
        "## Submodular learning with graph cuts (`benchmarks/bench_submodular.py`)",
        "",
        f"Binary segmentation of real photographs: {args.n_images} training images of 100 x "
        f"100 pixels ({n_pixels} pixels), noise {args.noise}, 20 test images "
        "(`make_binary_denoising`); StructuredSVM, BCFW, "
        f"C = {args.C}, {args.passes} passes, one thread. Pass: seconds per training pass "
        "over all pixels (oracle and updates). MAP: one decoding pass over the training "
        "pixels at the learned weights (graph cut; TRW-S 50 iterations). The TRW-S "
        "learner's gap is not a certificate (its oracle is approximate).",
        "",
        "| learner | s / pass | MAP pass s | primal | gap | test pixel accuracy |",
        "|---|---|---|---|---|---|",
    ]
    for r in rows:
        lines.append(f"| {r['name']} | {r['per_pass']:.2f} | {r['map']:.2f} | "
                     f"{r['primal']:.4f} | {r['gap']:.4f} | {100 * r['acc']:.2f}% |")
    lines.append(f"| per-pixel logistic regression (no edges) | | | | | {100 * floor:.2f}% |")
    print("\n".join(lines))
    if args.write_doc:
        sys.path.insert(0, HERE)
        from _doc import write_section

        write_section("submodular", lines)


if __name__ == "__main__":
    main()
