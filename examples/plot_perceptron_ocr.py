"""
The structured perceptron against the structured SVM on handwritten words
=========================================================================

The OCR letters (Taskar, Guestrin & Koller, "Max-margin Markov Networks",
NIPS 2003), trained on fold 1 (704 words) and tested on the other nine folds
(6173 words), as in pystruct's example.  Three learners share one chain model
(a weight per letter and pixel, one letter-to-letter transition table):

* :class:`~skstruct.StructuredPerceptron`, Collins's perceptron, with the
  average of its iterates (the default) and with its last weights;
* the perceptron with loss-augmented decoding (``loss_augmented=True``);
* :class:`~skstruct.StructuredSVM` trained by block-coordinate Frank-Wolfe at
  ``C=0.1``.

Each is fitted with 1, 2, 4, ... 64 passes; the figure shows the test letter
accuracy after each budget, and the training time.  The perceptron's average
matters more than anything else: its last weights jump with the last samples
they saw.
"""

import time

import matplotlib.pyplot as plt
import numpy as np

from skstruct import StructuredPerceptron, StructuredSVM
from skstruct.datasets import load_letters

data = load_letters()
train = data.folds == 1
X_tr = [x for x, t in zip(data.X, train) if t]
y_tr = [y for y, t in zip(data.y, train) if t]
X_te = [x for x, t in zip(data.X, train) if not t]
y_te = [y for y, t in zip(data.y, train) if not t]
print(f"{len(X_tr)} training words, {len(X_te)} test words")

# %%
# Accuracy against passes
# -----------------------
# The first fit of each learner compiles (or loads) its kernels; a warm-up on
# three words keeps that out of the timings.
learners = {
    "perceptron, averaged": lambda n: StructuredPerceptron(max_iter=n, random_state=0),
    "perceptron, last weights": lambda n: StructuredPerceptron(max_iter=n, average=False,
                                                               random_state=0),
    "perceptron, loss-augmented, averaged": lambda n: StructuredPerceptron(
        max_iter=n, loss_augmented=True, random_state=0),
    "structured SVM (BCFW, C=0.1)": lambda n: StructuredSVM(C=0.1, max_iter=n,
                                                            check_every=0, random_state=0),
}
budgets = [1, 2, 4, 8, 16, 32, 64]
results = {}
for name, make in learners.items():
    make(1).fit(X_tr[:3], y_tr[:3])
    accs, secs = [], []
    for n in budgets:
        t0 = time.process_time()
        est = make(n).fit(X_tr, y_tr)
        secs.append(time.process_time() - t0)
        accs.append(est.score(X_te, y_te))
    results[name] = (np.array(accs), np.array(secs))
    print(f"{name:40s} accuracy after {budgets[-1]} passes {accs[-1]:.4f} "
          f"({secs[-1]:.2f} s of CPU)")

# %%
# The figure
# ----------
fig, (ax, bx) = plt.subplots(1, 2, figsize=(12, 4.5))
for name, (accs, secs) in results.items():
    ax.semilogx(budgets, accs, marker="o", label=name)
    bx.loglog(budgets, secs, marker="o", label=name)
ax.set_xlabel("passes over the 704 training words")
ax.set_ylabel("test letter accuracy")
ax.set_xticks(budgets, [str(b) for b in budgets])
ax.grid(alpha=0.3)
ax.legend(fontsize=8)
bx.set_xlabel("passes")
bx.set_ylabel("training CPU seconds")
bx.set_xticks(budgets, [str(b) for b in budgets])
bx.grid(alpha=0.3)
fig.tight_layout()
plt.show()
