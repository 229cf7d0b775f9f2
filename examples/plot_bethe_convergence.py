"""
Convergence of Bethe-RDA, Bethe-MD and accelerated Bethe-RDA on OCR words
=========================================================================

A chain CRF is trained on folds 1-9 of the OCR letters data set; its
potentials on the 626 words of fold 0 are then projected with two energies,
by the algorithms of Vilnis, Belanger, Sheldon & McCallum, "Bethe
Projections for Non-Local Inference", UAI 2015.

* Convex and smooth: a soft constraint "at least two vowels per word" on the
  expected letter counts (:class:`~skstruct.energies.LinearMeasurements` with
  a smoothed hinge, ``psi = 5``).  All three algorithms apply; the left panel
  shows ``F_t - F*`` (summed over the words) against marginal-oracle calls,
  ``F*`` being the lowest objective any run reaches.  The accelerated method
  is run with the energy's Lipschitz bound (its guarantee, ``4 L D^2 / t^2``,
  is slow for a bound this large: its first iterates are the CRF at a high
  temperature) and with a small hand-picked ``L``.
* Non-convex: ``L^w`` (:class:`~skstruct.energies.NearestStatistic`, the
  nearest training word, ``psi = 3``); it is not smooth, so there is no
  accelerated method.  The right panel shows the objective itself.

To keep the example quick, each run makes at most 100 oracle calls and the
reference ``F*`` comes from 300 Bethe-RDA steps.
"""

import matplotlib.pyplot as plt
import numpy as np

from skstruct import NonLocalCRF
from skstruct.datasets import load_letters
from skstruct.energies import LinearMeasurements, NearestStatistic
from skstruct.inference import bethe_project
from skstruct.solvers._crf import CRFObjective

# %%
# The chain CRF and its potentials
# --------------------------------
# A plain chain CRF (no energy) is fitted on folds 1-9.  Its node and edge
# potentials on the test words (fold 0) are what the Bethe projections start
# from.
data = load_letters()
test = data.folds == 0
X_tr = [x for x, t in zip(data.X, test) if not t]
y_tr = [y for y, t in zip(data.y, test) if not t]
X_te = [x for x, t in zip(data.X, test) if t]
crf = NonLocalCRF(C=1.0, max_iter=100).fit(X_tr, y_tr)
design, _ = crf.model_.design(X_te)
design.y = np.zeros(design.batch.n_nodes, np.int64)
unary, tables, pwi = CRFObjective(design, 1.0).potentials(*crf._weights())
batch = design.batch
K = unary.shape[1]

# %%
# The two energies
# ----------------
# The measurement is the expected number of vowels minus one, penalised
# (smoothly) below 1.  The nearest-word energy is fitted on the training
# words.
vowels = np.isin(data.target_names, list("aeiou")).astype(float)[None]
soft = LinearMeasurements(vowels, b=[-1.0], smoothing=0.5).fit(None, batch, K)
words_tr, _ = crf.model_.design(X_tr, y_tr)
nearest = NearestStatistic("marginals").fit(words_tr.y, words_tr.batch, K)


def run(energy, psi, method, n, **kw):
    """The objective after each of ``n`` marginal-oracle calls."""
    r = bethe_project(unary, tables, energy, batch=batch, pw_index=pwi, psi=psi,
                      method=method, max_iter=n, tol=0.0, return_history=True, **kw)
    return r.history["objective"]


# %%
# Convex energy: the three algorithms
# -----------------------------------
# ``F*`` is the best objective reached by any run, in practice that of a
# 300-step Bethe-RDA run.
CALLS = 100
ref = run(soft, 5.0, "rda", 300)
L = soft.lipschitz(5.0, batch)
runs = (("Bethe-RDA", "rda", {}, "-"), ("Bethe-MD (eta = 1)", "md", {}, "--"),
        (f"accelerated, L = {L:.0f} (the energy's bound)", "accelerated", {}, ":"),
        ("accelerated, L = 1 (tuned, no guarantee)", "accelerated",
         dict(lipschitz=1.0), "-."))
curves = [(label, run(soft, 5.0, method, CALLS, **kw), style)
          for label, method, kw, style in runs]
f_star = min(ref.min(), min(f.min() for _, f, _ in curves))
for label, f, _ in curves:
    gap = np.maximum(f - f_star, 1e-12)
    print(f"vowel constraint, {label:45s}: F - F* after 10 / 50 / {f.size} calls "
          f"{gap[9]:.3g} / {gap[49]:.3g} / {gap[-1]:.3g}")

# %%
# Non-convex energy
# -----------------
# Bethe-RDA and Bethe-MD on ``L^w``, for at most 60 calls each; a run stops
# as soon as no marginal moves any more.
lw_curves = [(method, run(nearest, 3.0, method, 60), style)
             for method, style in (("rda", "-"), ("md", "--"))]
for method, f, _ in lw_curves:
    print(f"L^w energy, {method:3s}: objective {f[0]:.5g} at the prox-centre, "
          f"{f[-1]:.5g} after {f.size} calls")

# %%
# Convergence
# -----------
# Left, the suboptimality on the convex energy (log-log); right, the
# objective on the non-convex one.
fig, (a1, a2) = plt.subplots(1, 2, figsize=(12, 4.5))
for label, f, style in curves:
    a1.semilogy(np.arange(1, f.size + 1), np.maximum(f - f_star, 1e-12), style, label=label)
a1.set_xscale("log")
a1.set_xlabel("marginal-oracle calls")
a1.set_ylabel(f"F_t - F*  (sum over {len(X_te)} words)")
a1.set_title("convex, smooth: soft 'at least two vowels' constraint, psi = 5")
a1.legend()
for method, f, style in lw_curves:
    a2.plot(np.arange(1, f.size + 1), f, style, label=f"Bethe-{method.upper()}")
a2.set_xlabel("marginal-oracle calls")
a2.set_ylabel(f"objective F_t (sum over {len(X_te)} words)")
a2.set_title("non-convex: nearest training word (L^w), psi = 3")
a2.legend()
fig.suptitle("Bethe projections of a chain CRF's potentials on OCR fold 0")
fig.tight_layout()
plt.show()
