"""
Chain decoding of handwritten words
===================================

A per-letter classifier (linear discriminant analysis on the 16x8 pixels of
the OCR letters data set) labels each letter on its own; batched Viterbi then
decodes every test word at once with letter-bigram scores counted on the
training words, and fixes letters the independent classifier gets wrong.
The figure shows the test words where decoding changed the most letters,
with the independent ("ind") and the chain ("chain") prediction under each
letter image (red: wrong).
"""

import matplotlib.pyplot as plt
import numpy as np
from sklearn.discriminant_analysis import LinearDiscriminantAnalysis

from skstruct.datasets import load_letters
from skstruct.inference import GraphBatch, map_batch

# %%
# Data
# ----
# Train on folds 1-9, test on the 626 words of fold 0.
data = load_letters()
test = data.folds == 0
X_tr = [x for x, t in zip(data.X, test) if not t]
y_tr = [y for y, t in zip(data.y, test) if not t]
X_te = [x for x, t in zip(data.X, test) if t]
y_te = [y for y, t in zip(data.y, test) if t]

# %%
# Node and edge scores
# --------------------
# The node scores are the classifier's log-probabilities of each letter; the
# edge scores are the log-probabilities of the next letter given the current
# one, counted on the training words (add-one smoothing).
clf = LinearDiscriminantAnalysis().fit(np.concatenate(X_tr), np.concatenate(y_tr))
counts = np.ones((26, 26))
for y in y_tr:
    np.add.at(counts, (y[:-1], y[1:]), 1.0)
pairwise = np.log(counts / counts.sum(axis=1, keepdims=True))

# %%
# Decoding
# --------
# :class:`~skstruct.inference.GraphBatch` puts all the test words into one
# batch of chains, and :func:`~skstruct.inference.map_batch` decodes them all
# in one call.  The independent prediction is the best letter of each node.
batch = GraphBatch.from_chains([len(x) for x in X_te])
unary = clf.predict_log_proba(np.concatenate(X_te))
independent = np.split(unary.argmax(axis=1), batch.node_offsets[1:-1])
chain = np.split(map_batch(batch, unary, pairwise), batch.node_offsets[1:-1])
y_all = np.concatenate(y_te)
acc_ind = np.mean(np.concatenate(independent) == y_all)
acc_chain = np.mean(np.concatenate(chain) == y_all)
print(f"test letter accuracy: independent {acc_ind:.4f}, chain {acc_chain:.4f}")

# %%
# The words that gained most
# --------------------------
# The six test words where the chain fixed the most letters.
gain = np.array([np.sum(c == y) - np.sum(i == y)
                 for c, i, y in zip(chain, independent, y_te)])
show = np.argsort(-gain, kind="stable")[:6]
letters = data.target_names
width = max(len(y_te[i]) for i in show)
fig, axes = plt.subplots(len(show), width, figsize=(width * 0.9, len(show) * 1.7))
for r, w in enumerate(show):
    for c in range(width):
        ax = axes[r, c]
        ax.set_xticks([])
        ax.set_yticks([])
        if c >= len(y_te[w]):
            ax.axis("off")
            continue
        ax.imshow(X_te[w][c].reshape(16, 8), cmap="gray_r")
        truth = y_te[w][c]
        for k, (pred, name) in enumerate(((independent[w][c], "ind"),
                                          (chain[w][c], "chain"))):
            ax.text(0.5, -0.25 - 0.3 * k, f"{name} {letters[pred]}",
                    transform=ax.transAxes, ha="center", va="top", fontsize=8,
                    color="black" if pred == truth else "red")
fig.suptitle(f"OCR test fold 0: independent letters {acc_ind:.3f}, "
             f"chain (Viterbi) {acc_chain:.3f} letter accuracy")
fig.tight_layout()
plt.show()
