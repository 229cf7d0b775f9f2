"""Multi-label scene classification with three label graphs.

The scene data set (1211 training and 1196 test images, 294 colour features,
six labels: beach, sunset, fall foliage, field, mountain, urban; an image may
carry several).  ``StructuredSVM`` with ``MultiLabelModel`` and C=0.1 learns
the labels with no edges between them ("independent", six separate binary
SVMs trained jointly), on the Chow-Liu tree of the training labels ("tree",
exact tree decoding) and on all 15 label pairs ("full", exact enumeration of
the 64 labellings).  Each edge has its own 2x2 weight table; its coupling
``w[1, 1] - w[1, 0] - w[0, 1] + w[0, 0]`` tells how much the model favours
(positive) or penalises (negative) the two labels being on together, the
rest of the table acting as per-label offsets.  Saves
``scene_multilabel.png``: the test Hamming loss of each label graph and the
couplings learned on the tree and the full graph.

Run: ``python examples/plot_scene_multilabel.py [output_dir]``.
"""

import sys
from pathlib import Path

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402
import numpy as np  # noqa: E402

from skstruct import StructuredSVM  # noqa: E402
from skstruct.datasets import load_scene  # noqa: E402
from skstruct.models import MultiLabelModel  # noqa: E402


def coupling_matrix(svm, n_labels):
    """The coupling of every edge of the fitted label graph, as a symmetric matrix."""
    P = svm.pairwise_coef_
    M = np.full((n_labels, n_labels), np.nan)
    for (a, b), t in zip(svm.model_.edges_, P):
        M[a, b] = M[b, a] = t[1, 1] - t[1, 0] - t[0, 1] + t[0, 0]
    return M


def main(out_dir="."):
    data = load_scene()
    names = data.target_names
    L = len(names)
    print(f"{data.X_train.shape[0]} training and {data.X_test.shape[0]} test images, "
          f"{data.X_train.shape[1]} features, {L} labels "
          f"({data.y_train.sum(axis=1).mean():.2f} per training image)")
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

    fig, axes = plt.subplots(1, 3, figsize=(15, 4.8), layout="constrained",
                             gridspec_kw={"width_ratios": [0.8, 1, 1]})
    ax = axes[0]
    bars = ax.bar(graphs, [losses[g] for g in graphs], color=["0.6", "tab:blue", "tab:orange"])
    ax.bar_label(bars, fmt="%.4f")
    ax.set_ylim(0, max(losses.values()) * 1.15)
    ax.set_ylabel("test Hamming loss (fraction of wrong labels)")
    ax.set_title("label graph vs test error (C=0.1)")

    couplings = {g: coupling_matrix(fitted[g], L) for g in ("tree", "full")}
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
    out = Path(out_dir) / "scene_multilabel.png"
    fig.savefig(out, dpi=100, bbox_inches="tight")
    print(f"wrote {out}")


if __name__ == "__main__":
    main(*sys.argv[1:])
