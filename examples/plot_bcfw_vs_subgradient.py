"""Block-coordinate Frank-Wolfe against stochastic subgradient descent.

The structured SVM objective on OCR fold 1 (704 words, C=0.1), in the lambda
form ``lambda/2 ||w||^2 + 1/n sum_i H_i(w)`` with ``lambda = 1 / (C n)``,
minimised by ``StructuredSVM`` with BCFW (Lacoste-Julien et al. 2013: exact
line search on the dual, a duality gap as certificate) and with the
subgradient solver (Pegasos step ``1 / (lambda (t + 1))``), each returning
the weighted average of its iterates (``averaging=True``, the default) or the
last iterate.  ``check_every=1`` records the objective after every pass.
Saves ``bcfw_vs_subgradient.png``: the primal suboptimality (primal minus the
best primal value found, log scale) against passes over the data and against
training seconds (one thread, objective checks excluded), with BCFW's duality gap, an
upper bound on its suboptimality; the subgradient solver has no such bound.

Run: ``python examples/plot_bcfw_vs_subgradient.py [output_dir]``.
"""

import sys
from pathlib import Path

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402
import numpy as np  # noqa: E402

from skstruct import StructuredSVM  # noqa: E402
from skstruct.datasets import load_letters  # noqa: E402

PASSES = 100
RUNS = {
    "BCFW": dict(solver="bcfw"),
    "BCFW, last iterate": dict(solver="bcfw", averaging=False),
    "subgradient, averaged": dict(solver="subgradient"),
    "subgradient, last iterate": dict(solver="subgradient", averaging=False),
}
STYLE = {"BCFW": ("tab:blue", "-"), "BCFW, last iterate": ("tab:blue", ":"),
         "subgradient, averaged": ("tab:orange", "-"),
         "subgradient, last iterate": ("tab:orange", ":")}


def main(out_dir="."):
    data = load_letters()
    train = data.folds == 1
    X = [x for x, t in zip(data.X, train) if t]
    y = [y for y, t in zip(data.y, train) if t]

    histories = {}
    for name, kw in RUNS.items():
        # history_["seconds"] counts from the start of fit, so a first call would
        # include numba's compilation (or loading) of the kernels: do it up front
        StructuredSVM(C=0.1, max_iter=1, check_every=1, n_jobs=1, **kw).fit(X[:3], y[:3])
        # one thread: both solvers visit one sample at a time (with batch_size=1 the
        # subgradient solver would enter a parallel region per sample, which is slow
        # and erratic when the cores are shared)
        svm = StructuredSVM(C=0.1, max_iter=PASSES, tol=0, check_every=1, n_jobs=1,
                            random_state=0, **kw)
        histories[name] = svm.fit(X, y).history_
    # a long BCFW run for the reference value
    ref = StructuredSVM(C=0.1, max_iter=5 * PASSES, tol=0, check_every=5 * PASSES,
                        random_state=1).fit(X, y).history_
    best = min(min(h["primal"].min() for h in histories.values()), ref["primal"][-1])
    lower = max(ref["dual"][-1], max(h["dual"].max() for h in histories.values() if "dual" in h))
    print(f"OCR fold 1, {len(X)} words, C=0.1; best primal found {best:.5f}, best dual "
          f"{lower:.5f} (so the optimum is within {best - lower:.2g})")
    for name, h in histories.items():
        i10 = np.searchsorted(h["pass"], 10)
        gap = f", duality gap {h['gap'][-1]:.3g}" if "gap" in h else ""
        print(f"{name:>26}: primal - best after 10 passes {h['primal'][i10] - best:.3g}, after "
              f"{h['pass'][-1]} passes {h['primal'][-1] - best:.3g} ({h['seconds'][-1]:.2f} s)"
              f"{gap}")

    fig, axes = plt.subplots(1, 2, figsize=(12, 4.8), sharey=True, layout="constrained")
    panels = ((axes[0], "pass", "passes over the data"),
              (axes[1], "seconds", "training time (s, one thread, checks excluded)"))
    for ax, x_key, x_label in panels:
        for name, h in histories.items():
            colour, dash = STYLE[name]
            sub = h["primal"] - best
            keep = sub > 0
            ax.plot(h[x_key][keep], sub[keep], color=colour, ls=dash, label=f"{name}: primal")
        h = histories["BCFW"]
        ax.plot(h[x_key], h["gap"], color="tab:green", ls="--", label="BCFW: duality gap")
        ax.set_yscale("log")
        ax.set_xlabel(x_label)
        ax.grid(True, which="major", alpha=0.3)
    axes[0].set_ylabel("primal - best primal found (lambda form)")
    axes[0].legend(fontsize=8)
    fig.suptitle(f"Structured SVM on OCR fold 1 ({len(X)} words), C=0.1: BCFW vs subgradient")
    out = Path(out_dir) / "bcfw_vs_subgradient.png"
    fig.savefig(out, dpi=100)
    print(f"wrote {out}")


if __name__ == "__main__":
    main(*sys.argv[1:])
