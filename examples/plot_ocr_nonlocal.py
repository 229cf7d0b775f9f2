"""A non-local energy corrects the words a chain CRF misreads (OCR letters).

Vilnis et al.'s ``L^w`` energy pulls the node marginals of a word towards the
nearest training word of the same length; prediction is then Viterbi in the
chain at the projection's potentials ``theta - grad L(mu*)``
(Proposition 1).  Train on folds 1-9, test on fold 0.  Saves
``ocr_nonlocal.png``: test words the plain chain CRF got wrong, with the CRF's
reading and the reading with the energy under the letter images (red: wrong
letter), and the learned weight ``psi``.

Run: ``python examples/plot_ocr_nonlocal.py [output_dir]``.
"""

import sys
from pathlib import Path

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402
import numpy as np  # noqa: E402

from skstruct import NonLocalCRF  # noqa: E402
from skstruct.datasets import load_letters  # noqa: E402
from skstruct.energies import NearestStatistic  # noqa: E402
from skstruct.metrics import sequence_accuracy  # noqa: E402


def main(out_dir="."):
    data = load_letters()
    test = data.folds == 0
    X_tr = [x for x, t in zip(data.X, test) if not t]
    y_tr = [y for y, t in zip(data.y, test) if not t]
    X_te = [x for x, t in zip(data.X, test) if t]
    y_te = [y for y, t in zip(data.y, test) if t]

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
    out = Path(out_dir) / "ocr_nonlocal.png"
    fig.savefig(out, dpi=100, bbox_inches="tight")
    print(f"wrote {out}")


if __name__ == "__main__":
    main(*sys.argv[1:])
