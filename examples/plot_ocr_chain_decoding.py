"""Chain decoding of handwritten words (OCR letters data set).

A per-letter classifier (linear discriminant analysis on the 16x8 pixels) labels
each letter on its own; batched Viterbi then decodes every test word at once
with letter-bigram scores learned from the training words, fixing letters the
independent classifier gets wrong.  Saves ``ocr_chain_decoding.png``: test words
with the independent ("ind") and the chain ("chain") prediction under each letter (red:
wrong).

Run: ``python examples/plot_ocr_chain_decoding.py [output_dir]``.
"""

import sys
from pathlib import Path

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402
import numpy as np  # noqa: E402
from sklearn.discriminant_analysis import LinearDiscriminantAnalysis  # noqa: E402

from skstruct.datasets import load_letters  # noqa: E402
from skstruct.inference import GraphBatch, map_batch  # noqa: E402


def main(out_dir="."):
    data = load_letters()
    test = data.folds == 0
    X_tr = [x for x, t in zip(data.X, test) if not t]
    y_tr = [y for y, t in zip(data.y, test) if not t]
    X_te = [x for x, t in zip(data.X, test) if t]
    y_te = [y for y, t in zip(data.y, test) if t]

    clf = LinearDiscriminantAnalysis().fit(np.concatenate(X_tr), np.concatenate(y_tr))
    counts = np.ones((26, 26))
    for y in y_tr:
        np.add.at(counts, (y[:-1], y[1:]), 1.0)
    pairwise = np.log(counts / counts.sum(axis=1, keepdims=True))

    batch = GraphBatch.from_chains([len(x) for x in X_te])
    unary = clf.predict_log_proba(np.concatenate(X_te))
    independent = np.split(unary.argmax(axis=1), batch.node_offsets[1:-1])
    chain = np.split(map_batch(batch, unary, pairwise), batch.node_offsets[1:-1])
    y_all = np.concatenate(y_te)
    acc_ind = np.mean(np.concatenate(independent) == y_all)
    acc_chain = np.mean(np.concatenate(chain) == y_all)

    # show the words where decoding changed the most letters
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
    out = Path(out_dir) / "ocr_chain_decoding.png"
    fig.savefig(out, dpi=110)
    print(f"independent {acc_ind:.4f}, chain {acc_chain:.4f}; wrote {out}")


if __name__ == "__main__":
    main(*sys.argv[1:])
