"""
Aligning handwritten letters: bipartite matching, BCFW and dual extragradient
=============================================================================

Two people wrote the same word; the letters of the second rendition come
shuffled.  Which letter image of the second word is each letter of the
first?  :func:`~skstruct.datasets.make_letter_alignment` builds this task
from the OCR letters: every candidate pair (left letter, right letter) has
16 similarity features, and the label matches each left letter to a
distinct right one.  :class:`~skstruct.models.MatchingModel` scores a
matching by the sum of ``w . x[i, y_i]`` over its pairs; prediction is an
assignment problem, exact (:func:`scipy.optimize.linear_sum_assignment`).

The structured SVM is trained twice at the same C: by block-coordinate
Frank-Wolfe and by B. Taskar, S. Lacoste-Julien and M. I. Jordan's dual
extragradient ("Structured Prediction, Dual Extragradient and Bregman
Projections", JMLR 2006), which plays the weights against relaxed matchings
(points of the matching polytope, with Euclidean projections).  Both report
the same duality gap; the figure shows it per pass and per second, and the
held-out accuracy of each.
"""

import matplotlib.pyplot as plt
import numpy as np

from skstruct import StructuredSVM
from skstruct.datasets import make_letter_alignment
from skstruct.models import MatchingModel

# %%
# Data
# ----
# 100 word pairs of fold 0 to train, 300 of fold 1 to test.
d = make_letter_alignment(random_state=0)
train = np.flatnonzero(d.folds == 0)[:100]
test = np.flatnonzero(d.folds == 1)[:300]
X_train, y_train = [d.X[i] for i in train], [d.y[i] for i in train]
X_test, y_test = [d.X[i] for i in test], [d.y[i] for i in test]
print(f"{len(train)} training pairs, {sum(len(v) for v in y_train)} letters to align")

# %%
# Two solvers, one objective
# --------------------------
runs = {}
for solver in ("bcfw", "extragradient"):
    svm = StructuredSVM(C=1.0, model=MatchingModel(), solver=solver, max_iter=30, tol=0.0,
                        check_every=1, random_state=0).fit(X_train, y_train)
    runs[solver] = svm
    h = svm.history_
    print(f"{solver}: primal {h['primal'][-1]:.4f}, gap {h['gap'][-1]:.2e}, "
          f"{h['seconds'][-1]:.2f} s, held-out letters matched {svm.score(X_test, y_test):.3f}")

# %%
# Without the one-to-one constraint
# ---------------------------------
# The BCFW weights, each left letter taking its best-scoring right letter.
w = runs["bcfw"].coef_
free = np.mean(np.concatenate([np.argmax(x @ w, axis=1) == t for x, t in zip(X_test, y_test)]))
print(f"same weights, no one-to-one constraint: {free:.3f}")

# %%
# Duality gap per pass and per second
# -----------------------------------
fig, axes = plt.subplots(1, 2, figsize=(10, 3.8))
for solver, svm in runs.items():
    h = svm.history_
    label = f"{solver} (held-out {svm.score(X_test, y_test):.3f})"
    axes[0].plot(h["pass"], h["gap"], label=label)
    axes[1].plot(h["seconds"], h["gap"], label=label)
axes[0].set_xlabel("pass")
axes[1].set_xlabel("seconds")
for ax in axes:
    ax.set_yscale("log")
    ax.set_ylabel("duality gap")
    ax.legend(fontsize=8)
fig.suptitle(f"Letter alignment, C = 1 (no one-to-one constraint: {free:.3f})", fontsize=10)
fig.tight_layout()
plt.show()
