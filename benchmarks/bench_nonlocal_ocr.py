"""OCR letters, 10-fold cross-validation of NonLocalCRF as in Vilnis et al., Table 4.

The paper follows Weiss et al. (2012): the 10 folds of the OCR data set
(Taskar et al.), train on 9, test on the 10th, character accuracy averaged
over the 10 test folds.  Models: the base chain CRF (pixels on the nodes, one
transition table), and the CRF plus the learned non-convex energies
``L^u`` (nearest unigram-count vector of a training word) and ``L^w``
(nearest node-marginal vector of a training word of the same length), with
``psi`` a learned constant ("bias") or a linear function of a random Fourier
feature mean map ("mean_map", 1000 features).  Every model is trained from
scratch on every fold (its base CRF included) and timed.

Inference (in learning and prediction) is global by default: both energies
are a minimum over dictionary words of convex distances, and every word is
projected on once per candidate word (``n_pieces``, 10 nearest to the
chain's own marginals).  The ``*_local`` rows run the paper's Bethe-RDA on the
non-convex energy itself (``n_pieces=None``), which stops in the local minimum
its first steps lead to.

Usage::

    python benchmarks/bench_nonlocal_ocr.py [--models base,Lu,Lw,Lw_mm] [--folds 0-9]
                                            [--no-doc]
"""

import argparse
import os
import platform
import sys
import time

import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.dirname(HERE))
sys.path.insert(0, HERE)

from _doc import write_section  # noqa: E402

from skstruct import NonLocalCRF  # noqa: E402
from skstruct.datasets import load_letters  # noqa: E402
from skstruct.energies import NearestStatistic  # noqa: E402

PAPER = {"base": 84.93, "Lu": 94.01, "Lu_local": 94.01, "Lu_same": None, "Lu_mm": 94.96,
         "Lw": 98.26, "Lw_local": 98.26, "Lw_mm": 98.83}
LABELS = {"base": "2-gram chain CRF (base model)", "Lu": "L^u, bias psi",
          "Lu_local": "L^u, bias psi, local inference (`n_pieces=None`)",
          "Lu_same": "L^u over same-length words (`same_length=True`), bias psi",
          "Lu_mm": "L^u, mean-map psi", "Lw": "L^w, bias psi",
          "Lw_local": "L^w, bias psi, local inference (`n_pieces=None`)",
          "Lw_mm": "L^w, mean-map psi"}
BASE = dict(C=1.0, max_iter=100)
ENERGY = dict(learning="stochastic", energy_max_iter=5, batch_size=64, inference_method="rda",
              max_oracle_calls=20, random_state=0)


def make(name):
    if name == "base":
        return NonLocalCRF(**BASE)
    stat = "unigram" if name.startswith("Lu") else "marginals"
    psi = "mean_map" if name.endswith("_mm") else "bias"
    energy = NearestStatistic(stat, same_length=name.endswith("_same"))
    pieces = None if name.endswith("_local") else "auto"
    return NonLocalCRF(**BASE, **ENERGY, energy=energy, psi=psi, n_components=1000,
                       n_pieces=pieces)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--models", default="base,Lu,Lu_local,Lu_same,Lw,Lw_local,Lw_mm")
    ap.add_argument("--folds", default="0-9")
    ap.add_argument("--no-doc", action="store_true")
    args = ap.parse_args()
    lo, hi = (int(v) for v in args.folds.split("-"))
    folds = list(range(lo, hi + 1))
    names = args.models.split(",")
    d = load_letters()
    # compile (or load) every kernel once, outside the timings
    small = d.folds == 0
    Xs = [x for x, t in zip(d.X, small) if t][:50]
    ys = [y for y, t in zip(d.y, small) if t][:50]
    make("Lw").set_params(max_iter=2, energy_max_iter=1).fit(Xs, ys).predict(Xs)
    results = {n: {"acc": [], "seconds": []} for n in names}
    for f in folds:
        test = d.folds == f
        Xtr = [x for x, t in zip(d.X, test) if not t]
        ytr = [y for y, t in zip(d.y, test) if not t]
        Xte = [x for x, t in zip(d.X, test) if t]
        yte = [y for y, t in zip(d.y, test) if t]
        for n in names:
            t0 = time.perf_counter()
            est = make(n).fit(Xtr, ytr)
            pred = est.predict(Xte)
            sec = time.perf_counter() - t0
            acc = float(np.mean(np.concatenate(pred) == np.concatenate(yte)))
            results[n]["acc"].append(acc)
            results[n]["seconds"].append(sec)
            extra = ("" if est.psi_coef_ is None
                     else f", mean psi {est.history_['psi_mean'][-1]:.3g}")
            print(f"fold {f}  {n:6s}  accuracy {100 * acc:.2f}  {sec:6.1f} s{extra}", flush=True)
    lines = [
        "## OCR letters: NonLocalCRF, 10-fold cross-validation (Vilnis et al., Table 4)",
        "",
        f"`python benchmarks/bench_nonlocal_ocr.py`; {platform.machine()}, {os.cpu_count()} "
        "CPUs; one fit per fold. *paper*: Vilnis, Belanger, Sheldon and McCallum, \"Bethe "
        "Projections for Non-Local Inference\", UAI 2015, Table 4. "
        f"Folds {folds[0]}-{folds[-1]}: train on the other nine, test on that one; character "
        "accuracy averaged over the test folds. Every model is trained from scratch on every "
        f"fold, its base CRF included. Base CRF: `{BASE}`; energies learned by Algorithm 3 "
        f"(mini-batches): `{ENERGY}`; mean map: 1000 random Fourier features. Inference "
        "in learning and prediction: global over the 10 dictionary words nearest to the "
        "chain's marginals (`n_pieces='auto'`), except the *local* rows (the paper's "
        "Bethe-RDA on the non-convex energy, `n_pieces=None`).",
        "",
        "| model | paper | skstruct (mean over folds) | min / max fold | total time "
        "(fit + predict, all folds) |",
        "|---|---|---|---|---|",
    ]
    for n in names:
        acc = 100 * np.array(results[n]["acc"])
        paper = "-" if PAPER[n] is None else f"{PAPER[n]:.2f}"
        lines.append(f"| {LABELS[n]} | {paper} | **{acc.mean():.2f}** | "
                     f"{acc.min():.2f} / {acc.max():.2f} | "
                     f"{sum(results[n]['seconds']) / 60:.1f} min |")
    lines += ["", "Per fold (accuracy %):", "",
              "| model | " + " | ".join(str(f) for f in folds) + " |",
              "|---|" + "---|" * len(folds)]
    for n in names:
        lines.append(f"| {n} | " + " | ".join(f"{100 * a:.2f}" for a in results[n]["acc"])
                     + " |")
    print("\n".join(lines))
    if not args.no_doc:
        write_section("nonlocal-ocr", lines)


if __name__ == "__main__":
    main()
