"""Denoising binary images with ApproxStructuredPredictor, from CRF to structured SVM.

Hazan & Urtasun's denoising experiment on real images: 100 x 100 crops of
scikit-learn's two sample photographs, binarised at their median and observed
through Gaussian noise (``skstruct.datasets.make_binary_denoising``).  Every
pixel is a node of a 4-connected grid; its features are the noisy observation
and a constant, and each edge has a constant and the contrast
``exp(-|o_u - o_v|)`` as features, so the model learns how much to smooth
across weak and strong edges.

``ApproxStructuredPredictor`` (convex counting numbers, one message sweep and
one parameter step per iteration) is trained on 20 images at three
temperatures: ``epsilon = 1`` (a CRF under a convex entropy approximation),
``0.1`` and ``0`` (the structured SVM's max).  Saves ``denoising.png``: a
held-out image (clean, noisy, the per-pixel threshold, and the three
predictions) and the objective of each run against the iteration.

Run: ``python examples/plot_denoising.py [output_dir]`` (needs matplotlib and Pillow: the
``examples`` and ``images`` extras).
"""

import sys
from pathlib import Path

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402
import numpy as np  # noqa: E402

from skstruct import ApproxStructuredPredictor  # noqa: E402
from skstruct.datasets import make_binary_denoising  # noqa: E402
from skstruct.models import GraphModel  # noqa: E402


def main(out_dir="."):
    train = make_binary_denoising(20, 100, noise=1.0, random_state=0)
    test = make_binary_denoising(5, 100, noise=1.0, random_state=1)
    runs = {}
    for eps in (1.0, 0.1, 0.0):
        est = ApproxStructuredPredictor(epsilon=eps, counting_numbers="convex", C=0.05,
                                        model=GraphModel(), max_iter=40, tol=0.0)
        est.fit(train.X, train.y)
        runs[eps] = est
        print(f"epsilon {eps}: held-out pixel accuracy {est.score(test.X, test.y):.4f}, "
              f"{est.n_iter_} iterations in {est.history_['seconds'][-1]:.1f} s")
    threshold = [(x[0][:, 0] > 0.5).astype(int) for x in test.X]
    acc_thr = np.mean(np.concatenate([t == y for t, y in zip(threshold, test.y)]))
    print(f"per-pixel threshold at 0.5: {acc_thr:.4f}")

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
    ax.set_title("Objective per iteration, 20 training images (2 x 10^5 variables)",
                 fontsize=9)
    fig.tight_layout()
    path = Path(out_dir) / "denoising.png"
    fig.savefig(path, dpi=100)
    print(f"saved {path}")


if __name__ == "__main__":
    main(sys.argv[1] if len(sys.argv) > 1 else ".")
