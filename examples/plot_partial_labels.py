"""
Learning from partly labelled words
===================================

Annotating every token of a corpus is expensive; often only some tokens of a
sequence carry a label.  skstruct takes such data as it is: ``None`` in a
sample's label array marks a node whose label is unknown.  Each learner does
what its objective allows:

* :class:`~skstruct.NonLocalCRF` (a CRF) *marginalises* the unknown labels:
  it maximises the probability of the labellings that agree with the known
  ones, ``log Z(x; observed) - log Z(x)``;
* :class:`~skstruct.StructuredSVM` learns on the *labelled parts*: unknown
  nodes and their edges are left out of its loss and constraints, so a word
  with a gap becomes two shorter chains;
* :class:`~skstruct.LatentStructuredSVM` *imputes* them (CCCP: the best
  labels consistent with the known ones, then a structured SVM, repeated).

The data are the OCR letters of B. Taskar, C. Guestrin and D. Koller,
"Max-Margin Markov Networks", NIPS 2003: 704 training words of one fold, of
which a growing share of the letters is hidden at random, and 2000 words of
the other folds to test on.  The figure shows the test accuracy of each
learner against the fraction of training letters that keep their label.
"""

import time

import matplotlib.pyplot as plt
import numpy as np

from skstruct import LatentStructuredSVM, NonLocalCRF, StructuredSVM
from skstruct.datasets import load_letters
from skstruct.models import ChainModel

t_start = time.perf_counter()

# %%
# Data
# ----
d = load_letters()
tr = np.flatnonzero(d.folds == 1)
te = np.flatnonzero(d.folds != 1)[:2000]
X_tr, y_tr = [d.X[i] for i in tr], [d.y[i] for i in tr]
X_te, y_te = [d.X[i] for i in te], [d.y[i] for i in te]
rng = np.random.RandomState(0)


def hide(y, keep):
    """Each label kept with probability ``keep``, else ``None``."""
    out = []
    for labels in y:
        a = labels.astype(object)
        a[rng.random_sample(a.shape[0]) >= keep] = None
        out.append(a)
    return out


# %%
# Learning at several annotation rates
# ------------------------------------
# The same ``C`` for every rate; the CRF's ``C`` and the SVM's are on their own
# scales (a likelihood and a hinge loss).
fractions = [1.0, 0.6, 0.3, 0.15]
learners = {
    "CRF, unknown labels marginalised": lambda: NonLocalCRF(C=1.0, max_iter=60),
    "SSVM on the labelled parts": lambda: StructuredSVM(model=ChainModel(), C=0.1,
                                                        max_iter=30, random_state=0),
    "latent SSVM, unknown labels imputed": lambda: LatentStructuredSVM(
        estimator=StructuredSVM(model=ChainModel(), C=0.1, max_iter=30, random_state=0),
        max_iter=3, random_state=0),
}
scores = {name: [] for name in learners}
for keep in fractions:
    y_part = hide(y_tr, keep)
    n_known = sum(int(np.sum([v is not None for v in a])) for a in y_part)
    for name, make in learners.items():
        est = make().fit(X_tr, y_part)
        scores[name].append(est.score(X_te, y_te))
        print(f"{keep:4.0%} of the labels ({n_known:5d} letters)  {name:38s} "
              f"test accuracy {scores[name][-1]:.3f}")

# %%
# The picture
# -----------
fig, ax = plt.subplots(figsize=(6, 4))
for (name, s), marker in zip(scores.items(), "osd"):
    ax.plot(fractions, s, marker=marker, label=name)
ax.set_xlabel("fraction of training letters labelled")
ax.set_ylabel("test letter accuracy")
ax.invert_xaxis()
ax.grid(alpha=0.3)
ax.legend()
ax.set_title("OCR words with unknown labels")
fig.tight_layout()
plt.show()

print(f"example run time: {time.perf_counter() - t_start:.1f} s")
