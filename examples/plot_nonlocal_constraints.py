"""
Soft constraints on letter counts, learned on held-out words
============================================================

A chain CRF reads a handwritten word letter by letter, each letter scored with
its neighbours only; facts about the whole word, such as "a ``q`` comes with a
``u``" or "a word has a vowel", are out of its reach.  Vilnis, Belanger,
Sheldon & McCallum, "Bethe Projections for Non-Local Inference", UAI 2015, add
such facts as soft constraints on the CRF's marginals: a smoothed hinge on a
linear measurement of the expected label counts (their eq. 18-20, here
:class:`~skstruct.energies.LinearMeasurements`), weighted by learned weights.

Following their citation-extraction protocol, the base CRF is trained on a
training part and frozen, and the constraint weights are learned on held-out
words (``energy_fit="held_out"``).  The constraints name their labels
(``{"u": 1.0, "q": -1.0}``), resolved against the classes at fit time.  The
data are the OCR letters of B. Taskar, C. Guestrin and D. Koller, "Max-Margin
Markov Networks", NIPS 2003 (one fold of 704 words to train, 2000 words of the
other folds to test).

The figure shows, for each constraint, how many test words break it: in the
true letters, in the plain CRF's predictions and in the predictions with the
learned constraints, and the weight each constraint received.
"""

import time

import matplotlib.pyplot as plt
import numpy as np

from skstruct import NonLocalCRF
from skstruct.datasets import load_letters
from skstruct.energies import LinearMeasurements

t_start = time.perf_counter()

# %%
# Data
# ----
# Labels are the letters themselves, so that constraints can name them.
d = load_letters()
alphabet = np.array(list("abcdefghijklmnopqrstuvwxyz"))
tr = np.flatnonzero(d.folds == 1)
te = np.flatnonzero(d.folds != 1)[:2000]
X_tr, y_tr = [d.X[i] for i in tr], [alphabet[d.y[i]] for i in tr]
X_te, y_te = [d.X[i] for i in te], [alphabet[d.y[i]] for i in te]
every_y = [alphabet[y] for y in d.y]
n_train, n_test = len(X_tr), len(X_te)

# %%
# Constraints
# -----------
# A soft constraint reads ``a . counts + b >= 1`` for the label counts of a
# word (expected counts under the marginals, during inference).  Two kinds:
#
# * "at most one": ``2 - count(label) >= 1``, a row ``{label: -1}`` with ``b = 2``;
# * "A present implies B present", written as "at least as many B as A":
#   ``count(B) - count(A) + 1 >= 1``, a row ``{B: 1, A: -1}`` with ``b = 1``;
#
# and "at least one vowel": ``count(a) + count(e) + ... >= 1``, ``b = 0``.
# Each holds in most words of the data (printed below), not in all: the
# constraints are soft, and the learned weights say how much each one is worth.
at_most_one = ["j", "k", "v", "w", "z"]
implies = [("q", "u")]
vowels = list("aeiouy")
rows = [{label: -1.0} for label in at_most_one] + [{b: 1.0, a: -1.0} for a, b in implies]
offsets = [2.0] * len(at_most_one) + [1.0] * len(implies)
names = [f"at most one {label}" for label in at_most_one] + [f"{a} => {b}" for a, b in implies]
rows.append({v: 1.0 for v in vowels})
offsets.append(0.0)
names.append("at least one vowel")
energy = LinearMeasurements(rows, b=offsets, smoothing=0.5)


def violations(y):
    """Number of words breaking each constraint (on their letter counts)."""
    counts = {label: np.array([np.sum(w == label) for w in y]) for label in alphabet}
    out = [np.sum(counts[label] > 1) for label in at_most_one]
    out += [np.sum(counts[b] < counts[a]) for a, b in implies]
    out += [np.sum(sum(counts[v] for v in vowels) < 1)]
    return np.array(out)


# %%
# Two models with the same base CRF
# ---------------------------------
# With ``energy_fit="held_out"`` the base CRF is trained on the training part
# only, so the plain CRF trained on that part (``held_out_indices_`` tells
# which words were held out) is exactly the base of the model with
# constraints: the comparison isolates the constraints.
nl = NonLocalCRF(C=1.0, max_iter=80, energy=energy, energy_fit="held_out",
                 validation_fraction=1 / 3, energy_max_iter=5, batch_size=16,
                 learning_rate=0.5, random_state=0).fit(X_tr, y_tr)
train_part = np.setdiff1d(np.arange(n_train), nl.held_out_indices_)
crf = NonLocalCRF(C=1.0, max_iter=80).fit([X_tr[i] for i in train_part],
                                          [y_tr[i] for i in train_part])
print("same base CRF:", np.allclose(crf.coef_, nl.coef_))

held_all = 1 - violations(every_y) / len(every_y)
p_crf, p_nl = crf.predict(X_te), nl.predict(X_te)
truth = np.concatenate(y_te)
acc = {name: np.mean(np.concatenate(p) == truth)
       for name, p in (("CRF", p_crf), ("CRF + constraints", p_nl))}
for name, a in acc.items():
    print(f"{name:18s} tag accuracy {a:.4f}")
v_true, v_crf, v_nl = violations(y_te), violations(p_crf), violations(p_nl)
psi = np.maximum(nl.psi_coef_[:, 0], 0.0)
print(f"{'constraint':22s} {'holds':>6s}  words breaking it: {'truth':>6s} {'CRF':>5s} "
      f"{'+constr':>8s}  {'weight':>6s}")
for row in zip(names, held_all, v_true, v_crf, v_nl, psi):
    print("{:22s} {:6.3f} {:29d} {:5d} {:8d}  {:6.3f}".format(*row))
print(f"run time {time.perf_counter() - t_start:.1f} s")

# %%
# Violations and weights
# ----------------------
fig, (ax, ax_w) = plt.subplots(1, 2, figsize=(11, 4.2), width_ratios=(3, 1), sharey=True)
pos = np.arange(len(names))
h = 0.27
ax.barh(pos - h, v_true, h, label="true tags", color="0.6")
ax.barh(pos, v_crf, h, label=f"CRF (accuracy {acc['CRF']:.3f})", color="tab:blue")
ax.barh(pos + h, v_nl, h, color="tab:orange",
        label=f"CRF + constraints (accuracy {acc['CRF + constraints']:.3f})")
ax.set_yticks(pos, names)
ax.invert_yaxis()
ax.set_xlabel(f"test words breaking the constraint (of {n_test})")
ax.legend(loc="upper right", fontsize=8)
ax_w.barh(pos, psi, 0.5, color="tab:green")
ax_w.set_xlabel("learned weight psi")
fig.suptitle("OCR letters: soft constraints learned on held-out words")
fig.tight_layout()
plt.show()

# %%
# A constraint only acts where the chain's marginals break it, so the weights
# learned on held-out words measure how much each one corrects this chain, not
# how often it holds.  On these words the chain already keeps them nearly as
# well as the data does ("at most one z" is broken less often by the chain than
# by the true words), and where it breaks them ("at most one k", ten test words)
# its marginals are confident enough that a small weight moves nothing: the
# learned weights stay near zero and the predictions do not change.  Learning
# on held-out words says so, instead of fitting weights to the training words
# the chain already fits better than it will fit new ones (what
# ``energy_fit="joint"`` would do).
