"""ApproxStructuredPredictor at scale: 10^6 binary variables on 4-connected grids.

Run: ``python benchmarks/bench_approx_grid.py [--n-images 100] [--iters 10]
[--write-doc]``.

The training set is ``n_images`` noisy 100 x 100 binary images (10^6
variables for 100 images) from :func:`skstruct.datasets.make_binary_denoising`
(crops of scikit-learn's sample photographs, binarised, plus Gaussian noise;
per-pixel features: the observation and a constant; edge features: a constant
and the contrast ``exp(-|o_u - o_v|)``).  The script reports the time of each
outer iteration (one message sweep over every sample plus one parameter step
with its line search), the peak memory of the process, and the held-out pixel
accuracy against the independent per-pixel classifier (logistic regression on
the pixel features, the best any model without edges can do here) on 20 other
images.  ``--write-doc`` puts the table into ``doc/benchmarks.md``.
"""

import argparse
import json
import os
import resource
import sys
import time

import numpy as np
from _doc import write_section

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)
sys.path.insert(0, ROOT)


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--n-images", type=int, default=100)
    ap.add_argument("--iters", type=int, default=10)
    ap.add_argument("--epsilon", type=float, default=1.0)
    ap.add_argument("--write-doc", action="store_true")
    args = ap.parse_args()

    from sklearn.linear_model import LogisticRegression

    from skstruct import ApproxStructuredPredictor
    from skstruct.datasets import make_binary_denoising
    from skstruct.models import GraphModel

    train = make_binary_denoising(args.n_images, 100, noise=1.0, random_state=0)
    test = make_binary_denoising(20, 100, noise=1.0, random_state=1)
    n_vars = sum(len(y) for y in train.y)
    params = dict(epsilon=args.epsilon, counting_numbers="convex", C=1.0 / args.n_images,
                  model=GraphModel(), tol=0.0)
    # compile (or load) every kernel before timing
    ApproxStructuredPredictor(max_iter=2, **params).fit(train.X[:2], train.y[:2])
    with open("/proc/self/statm") as f:
        rss_before = int(f.read().split()[1]) * resource.getpagesize() / 2.0 ** 20
    t0 = time.perf_counter()
    est = ApproxStructuredPredictor(max_iter=args.iters, **params).fit(train.X, train.y)
    fit_seconds = time.perf_counter() - t0
    per_iter = np.diff(np.concatenate([[0.0], est.history_["seconds"]]))
    peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    acc = est.score(test.X, test.y)
    # the independent classifier: every pixel alone, from the same pixel features
    Xp = np.concatenate([x[0] for x in train.X[:20]])
    yp = np.concatenate(train.y[:20])
    lr = LogisticRegression().fit(Xp, yp)
    ind = float(np.mean(np.concatenate(
        [lr.predict(x[0]) == y for x, y in zip(test.X, test.y)])))
    res = dict(n_images=args.n_images, n_variables=n_vars, n_iter=int(est.n_iter_),
               fit_seconds=fit_seconds, seconds_per_iteration=per_iter.tolist(),
               median_iteration=float(np.median(per_iter)), max_iteration=float(per_iter.max()),
               peak_rss_mb=peak, rss_before_fit_mb=rss_before, test_accuracy=acc,
               independent_accuracy=ind, objective=est.history_["objective"].tolist())
    table = "\n".join([
        f"### Grid denoising: {args.n_images} images of 100 x 100 = {n_vars:,} binary variables, "
        f"epsilon = {args.epsilon}, convex counting numbers",
        "",
        "| | value |",
        "|---|---|",
        f"| outer iteration (sweep + parameter step), median / max (s) | "
        f"{res['median_iteration']:.3f} / {res['max_iteration']:.3f} |",
        f"| fit, {res['n_iter']} iterations (s) | {fit_seconds:.2f} |",
        f"| peak RSS of the process (MB) | {peak:.0f} |",
        f"| memory added by fit (MB) | {peak - rss_before:.0f} |",
        f"| held-out pixel accuracy (20 images) | {acc:.4f} |",
        f"| independent per-pixel classifier (logistic regression) | {ind:.4f} |",
        "",
        "Objective per iteration: " + ", ".join(f"{v:.6g}" for v in res["objective"]),
        "",
    ])
    print(table)
    print(json.dumps(res))
    if args.write_doc:
        write_doc(table, args.iters)


def write_doc(table, iters):
    write_section("bench_approx_grid", [
        "## ApproxStructuredPredictor at scale", "",
        "Measured by `python benchmarks/bench_approx_grid.py --write-doc` (one fit of "
        f"{iters} iterations; numba compilation excluded).", "", table])


if __name__ == "__main__":
    main()
