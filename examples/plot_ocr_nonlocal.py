"""
A non-local energy corrects the words a chain CRF misreads
==========================================================

The ``L^w`` energy of Vilnis, Belanger, Sheldon & McCallum, "Bethe
Projections for Non-Local Inference", UAI 2015, pulls the node marginals of
a word towards the nearest training word of the same length; prediction is
then Viterbi in the chain at the projection's potentials
``theta - grad L(mu*)`` (Proposition 1 of the paper).  Both a plain chain
CRF and one with the learned energy (:class:`~skstruct.NonLocalCRF`) are
trained on folds 1-9 of the OCR letters data set and tested on fold 0.  The
figure shows test words the plain chain CRF got wrong, with the CRF's
reading and the reading with the energy under the letter images (red: wrong
letter).
"""

import matplotlib.pyplot as plt
import numpy as np

from skstruct import NonLocalCRF
from skstruct.datasets import load_letters
from skstruct.energies import NearestStatistic
from skstruct.metrics import sequence_accuracy

# %%
# Data
# ----
# Train on folds 1-9, test on the 626 words of fold 0.  The data set holds
# only 55 distinct words, written by many people, and every word of fold 0
# also appears in folds 1-9: the nearest training word is a strong prior.
data = load_letters()
test = data.folds == 0
X_tr = [x for x, t in zip(data.X, test) if not t]
y_tr = [y for y, t in zip(data.y, test) if not t]
X_te = [x for x, t in zip(data.X, test) if t]
y_te = [y for y, t in zip(data.y, test) if t]

# %%
# Two models
# ----------
# The plain chain CRF, and the same CRF with the ``L^w`` energy
# (:class:`~skstruct.energies.NearestStatistic` on the marginals), whose
# weight ``psi`` is learned.
crf = NonLocalCRF(C=1.0, max_iter=100).fit(X_tr, y_tr)
nl = NonLocalCRF(C=1.0, max_iter=100, energy=NearestStatistic("marginals"),
                 energy_max_iter=5, random_state=0).fit(X_tr, y_tr)
p_crf, p_nl = crf.predict(X_te), nl.predict(X_te)
psi = float(nl.psi_coef_[0, 0])
for name, p in (("chain CRF", p_crf), ("CRF + L^w energy", p_nl)):
    acc = np.mean(np.concatenate(p) == np.concatenate(y_te))
    print(f"{name:18s} letter accuracy {acc:.4f}, words right "
          f"{sequence_accuracy(y_te, p):.4f}")
print(f"learned psi = {psi:.3f}")

# %%
# Misread words
# -------------
# Ten test words drawn at random among those the chain CRF misread: the
# CRF's reading on the first line, the reading with the energy on the second.
letters = data.target_names
wrong = [i for i in range(len(X_te)) if np.any(p_crf[i] != y_te[i])]
rng = np.random.RandomState(0)
show = rng.choice(wrong, min(10, len(wrong)), replace=False)
width = max(len(y_te[w]) for w in show)
fig, axes = plt.subplots(len(show), 1, figsize=(0.62 * width + 3, 1.15 * len(show)))
for ax, w in zip(np.atleast_1d(axes), show):
    n = len(y_te[w])
    strip = np.ones((16, 9 * width)) * np.nan
    for c in range(n):
        strip[:, 9 * c:9 * c + 8] = X_te[w][c].reshape(16, 8)
    ax.imshow(strip, cmap="gray_r", vmin=0, vmax=1, interpolation="nearest")
    for pred, y0 in ((p_crf[w], 20), (p_nl[w], 30)):
        for c in range(n):
            ok = pred[c] == y_te[w][c]
            ax.text(9 * c + 3.5, y0, letters[pred[c]], ha="center", va="top",
                    fontsize=10, family="monospace", color="black" if ok else "red",
                    fontweight="normal" if ok else "bold")
    ax.text(-2, 21.5, "CRF", ha="right", fontsize=8, color="0.4")
    ax.text(-2, 31.5, "+L^w", ha="right", fontsize=8, color="0.4")
    ax.set_ylim(38, -0.5)
    ax.set_xlim(-14, 9 * width)
    ax.axis("off")
fig.suptitle(f"OCR fold 0, words the chain CRF misread: CRF reading, then with the "
             f"learned L^w energy (psi = {psi:.2f}); red = wrong letter", fontsize=10)
plt.show()
