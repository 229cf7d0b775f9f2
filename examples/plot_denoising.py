"""
Denoising binary images, from CRF to structured SVM
===================================================

The denoising experiment of Hazan & Urtasun, "A Primal-Dual Message-Passing
Algorithm for Approximated Large Scale Structured Prediction", NIPS 2010, on
real images: 100 x 100 crops of scikit-learn's two sample photographs,
binarised at their median and observed through Gaussian noise
(:func:`~skstruct.datasets.make_binary_denoising`).  Every pixel is a node of
a 4-connected grid; its features are the noisy observation and a constant,
and each edge has a constant and the contrast ``exp(-|o_u - o_v|)`` as
features, so the model learns how much to smooth across weak and strong
edges.

:class:`~skstruct.ApproxStructuredPredictor` (convex counting numbers, one
message sweep and one parameter step per iteration) is trained on 20 images
at three temperatures: ``epsilon = 1`` (a CRF under a convex entropy
approximation), ``0.1`` and ``0`` (the structured SVM's max).  The figure
shows a held-out image (clean, noisy, a per-pixel threshold and the three
predictions) and the objective of each run against the iteration.
"""

import matplotlib.pyplot as plt
import numpy as np

from skstruct import ApproxStructuredPredictor
from skstruct.datasets import make_binary_denoising
from skstruct.models import GraphModel

# %%
# Noisy images
# ------------
# 20 training and 5 held-out images of 100 x 100 pixels, noise of standard
# deviation 1 (the labels are 0 and 1): 2 x 10^5 training variables.
train = make_binary_denoising(20, 100, noise=1.0, random_state=0)
test = make_binary_denoising(5, 100, noise=1.0, random_state=1)

# %%
# Three temperatures
# ------------------
# 40 iterations each, C=0.05.  The held-out score is the pixel accuracy.
runs = {}
for eps in (1.0, 0.1, 0.0):
    est = ApproxStructuredPredictor(epsilon=eps, counting_numbers="convex", C=0.05,
                                    model=GraphModel(), max_iter=40, tol=0.0)
    est.fit(train.X, train.y)
    runs[eps] = est
    print(f"epsilon {eps}: held-out pixel accuracy {est.score(test.X, test.y):.4f}, "
          f"{est.n_iter_} iterations in {est.history_['seconds'][-1]:.1f} s")

# %%
# A baseline without structure
# ----------------------------
# Each pixel on its own: the noisy observation thresholded at 0.5.
threshold = [(x[0][:, 0] > 0.5).astype(int) for x in test.X]
acc_thr = np.mean(np.concatenate([t == y for t, y in zip(threshold, test.y)]))
print(f"per-pixel threshold at 0.5: {acc_thr:.4f}")

# %%
# Predictions and objectives
# --------------------------
# Top left, the first held-out image, its noisy observation and the
# threshold; bottom left, the three models' predictions (their accuracy on
# the five held-out images in brackets).  Right, the objective that each run
# minimises (Theorem 1 of the paper, in scikit-learn's C form) after every
# iteration.
i = 0
size = test.clean.shape[1]
fig = plt.figure(figsize=(13, 5.2))
panels = [("clean", test.clean[i]), ("noisy observation", test.noisy[i]),
          (f"threshold ({acc_thr:.3f} on 5 images)", threshold[i].reshape(size, size))]
for eps, est in runs.items():
    pred = est.predict(test.X[i:i + 1])[0].reshape(size, size)
    panels.append((f"epsilon = {eps:g} ({est.score(test.X, test.y):.3f})", pred))
for k, (title, img) in enumerate(panels):
    ax = fig.add_subplot(2, 6, (k + 1) if k < 3 else k + 4)
    ax.imshow(img, cmap="gray", interpolation="nearest")
    ax.set_title(title, fontsize=8)
    ax.axis("off")
ax = fig.add_subplot(1, 2, 2)
for eps, est in runs.items():
    h = est.history_["objective"]
    ax.plot(np.arange(1, h.shape[0] + 1), h, label=f"epsilon = {eps:g}")
ax.set_xlabel("iteration (one message sweep + one parameter step)")
ax.set_ylabel("objective (Theorem 1, sklearn's C form)")
ax.set_yscale("log")
ax.legend()
ax.set_title("Objective per iteration, 20 training images (2 x 10^5 variables)", fontsize=9)
fig.tight_layout()
plt.show()
