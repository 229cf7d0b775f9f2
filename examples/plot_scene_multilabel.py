"""
Multi-label scene classification with three label graphs
========================================================

The scene data set (Boutell, Luo, Shen & Brown, "Learning multi-label scene
classification", Pattern Recognition, 2004): 1211 training and 1196 test
images, 294 colour features, six labels (beach, sunset, fall foliage, field,
mountain, urban), and an image may carry several.
:class:`~skstruct.StructuredSVM` with :class:`~skstruct.models.MultiLabelModel`
and C=0.1 learns the labels

* with no edges between them ("independent": six separate binary SVMs
  trained jointly),
* on the Chow-Liu tree of the training labels ("tree", exact tree decoding;
  Chow & Liu, "Approximating discrete probability distributions with
  dependence trees", IEEE Transactions on Information Theory, 1968),
* and on all 15 label pairs ("full", exact enumeration of the 64
  labellings).

Each edge has its own 2x2 weight table; its coupling
``w[1, 1] - w[1, 0] - w[0, 1] + w[0, 0]`` tells how much the model favours
(positive) or penalises (negative) the two labels being on together, the
rest of the table acting as per-label offsets.  The figure shows the test
Hamming loss of each label graph and the couplings learned on the tree and
on the full graph.
"""

import matplotlib.pyplot as plt
import numpy as np

from skstruct import StructuredSVM
from skstruct.datasets import load_scene
from skstruct.models import MultiLabelModel

# %%
# Data
# ----
data = load_scene()
names = data.target_names
L = len(names)
print(f"{data.X_train.shape[0]} training and {data.X_test.shape[0]} test images, "
      f"{data.X_train.shape[1]} features, {L} labels "
      f"({data.y_train.sum(axis=1).mean():.2f} per training image)")

# %%
# Three label graphs
# ------------------
# 100 passes of block-coordinate Frank-Wolfe each.  The Hamming loss is the
# fraction of wrong labels over all test images and labels.
graphs = ("independent", "tree", "full")
losses, fitted = {}, {}
for edges in graphs:
    svm = StructuredSVM(C=0.1, model=MultiLabelModel(edges=edges), max_iter=100,
                        check_every=10, random_state=0)
    svm.fit(data.X_train, data.y_train)
    losses[edges] = np.mean(svm.predict(data.X_test) != data.y_test)
    fitted[edges] = svm
    print(f"{edges:>11}: {len(svm.model_.edges_):2d} edges, test Hamming loss "
          f"{losses[edges]:.4f}  ({svm.n_iter_} passes, duality gap "
          f"{svm.history_['gap'][-1]:.3g})")
tree = fitted["tree"].model_.edges_
print("Chow-Liu tree: " + ", ".join(f"{names[a]}-{names[b]}" for a, b in tree))


# %%
# Couplings
# ---------
# The coupling of every edge of a fitted label graph, as a symmetric matrix
# (blank where the graph has no edge).
def coupling_matrix(svm, n_labels):
    """The coupling of every edge of the fitted label graph, as a symmetric matrix."""
    M = np.full((n_labels, n_labels), np.nan)
    for (a, b), t in zip(svm.model_.edges_, svm.pairwise_coef_):
        M[a, b] = M[b, a] = t[1, 1] - t[1, 0] - t[0, 1] + t[0, 0]
    return M


couplings = {g: coupling_matrix(fitted[g], L) for g in ("tree", "full")}

# %%
# Test error and couplings
# ------------------------
# Left, the test Hamming loss of each label graph; middle and right, the
# couplings of the tree and of the full graph, on one colour scale.
fig, axes = plt.subplots(1, 3, figsize=(15, 4.8), layout="constrained",
                         gridspec_kw={"width_ratios": [0.8, 1, 1]})
ax = axes[0]
bars = ax.bar(graphs, [losses[g] for g in graphs], color=["0.6", "tab:blue", "tab:orange"])
ax.bar_label(bars, fmt="%.4f")
ax.set_ylim(0, max(losses.values()) * 1.15)
ax.set_ylabel("test Hamming loss (fraction of wrong labels)")
ax.set_title("label graph vs test error (C=0.1)")

lim = max(np.nanmax(np.abs(m)) for m in couplings.values())
for ax, g in zip(axes[1:], ("tree", "full")):
    M = couplings[g]
    im = ax.imshow(M, cmap="RdBu_r", vmin=-lim, vmax=lim)
    for a in range(L):
        for b in range(L):
            if not np.isnan(M[a, b]):
                ax.text(b, a, f"{M[a, b]:.2f}", ha="center", va="center", fontsize=8,
                        color="white" if abs(M[a, b]) > 0.6 * lim else "black")
    ax.set_xticks(range(L), names, rotation=40, ha="right")
    ax.set_yticks(range(L), names if g == "tree" else [])
    ax.set_title(f"couplings, {g} graph" + (" (Chow-Liu)" if g == "tree" else ""))
fig.colorbar(im, ax=axes[1:], shrink=0.8,
             label="w[1,1] - w[1,0] - w[0,1] + w[0,0]  (blank: no edge)")
plt.show()
