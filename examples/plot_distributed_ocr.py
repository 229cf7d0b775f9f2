"""
Training a chain CRF on a dask cluster
======================================

:class:`~skstruct.CRF` accepts a
:class:`dask.bag.Bag` of words for ``X`` and a Bag of label arrays,
partitioned alike, for ``y`` once a :class:`dask.distributed.Client` is
running.  The fit on a Bag runs the same L-BFGS iterations as a local fit:
each partition is packed once, on the worker that holds it, and stays there;
every iteration sends the weights out and brings back one objective value and
one gradient per partition, which the client sums before taking the step.
Here a chain CRF is trained on folds 1 and 2 of the OCR letters data set,
once on lists and once on Bags spread over a two-worker local cluster, and
both are tested on fold 0.  The objectives agree at every iteration up to the
order of floating-point sums.
"""

import warnings

import dask.bag as db
import matplotlib.pyplot as plt
import numpy as np
from distributed import Client, LocalCluster

from skstruct import CRF
from skstruct.datasets import load_letters

# %%
# Data
# ----
# Train on the words of folds 1 and 2, test on the 626 words of fold 0.
letters = load_letters()
train = np.flatnonzero(np.isin(letters.folds, (1, 2)))
test = np.flatnonzero(letters.folds == 0)
X_tr = [letters.X[i] for i in train]
y_tr = [letters.y[i] for i in train]
X_te = [letters.X[i] for i in test]
y_te = [letters.y[i] for i in test]
print(f"{len(X_tr)} training words, {len(X_te)} test words")

C, max_iter = 1.0, 50

# %%
# Local fit
# ---------
# The reference: the same estimator fitted on lists in this process.
local = CRF(C=C, max_iter=max_iter).fit(X_tr, y_tr)
acc_local = local.score(X_te, y_te)

# %%
# Fit on a cluster
# ----------------
# A local cluster of two workers running as threads of this process (on a real
# cluster, ``Client("scheduler-host:8786")``).  The training and test words
# become Bags of four partitions; ``fit``, ``predict`` and ``score`` run on the
# workers, and the fitted estimator is an ordinary one afterwards.  The words
# travel inside the task graph here, which dask flags as slow for graphs over
# 10 MiB; with more data, build the Bags where the data live (for instance
# ``db.from_delayed`` of loaders), so that each worker reads its own partitions.
with LocalCluster(n_workers=2, threads_per_worker=1, processes=False,
                  dashboard_address=None) as cluster, Client(cluster), \
        warnings.catch_warnings():
    warnings.filterwarnings("ignore", message="Sending large graph", category=UserWarning)
    Xb_tr = db.from_sequence(X_tr, npartitions=4)
    yb_tr = db.from_sequence(y_tr, npartitions=4)
    Xb_te = db.from_sequence(X_te, npartitions=4)
    yb_te = db.from_sequence(y_te, npartitions=4)
    crf = CRF(C=C, max_iter=max_iter).fit(Xb_tr, yb_tr)
    acc_dist = crf.score(Xb_te, yb_te)
    pred_dist = crf.predict(Xb_te).compute()   # a Bag, computed on the workers

f_local = local.history_["objective"]
f_dist = crf.history_["objective"]
n = min(len(f_local), len(f_dist))
rel = np.abs(f_dist[:n] - f_local[:n]) / np.abs(f_local[:n])
print(f"local fit:       {local.n_iter_} iterations, {local.fit_seconds_:.2f} s, "
      f"test letter accuracy {acc_local:.4f}")
print(f"fit on the Bags: {crf.n_iter_} iterations, {crf.fit_seconds_:.2f} s, "
      f"test letter accuracy {acc_dist:.4f}")
print(f"max relative difference of the objectives per iteration: {rel.max():.2e}")
print(f"largest weight difference: {np.abs(crf.coef_ - local.coef_).max():.2e}")
print(f"same test predictions: "
      f"{all(np.array_equal(a, b) for a, b in zip(pred_dist, local.predict(X_te)))}")

# %%
# Convergence and time
# --------------------
# Left: the objective at each L-BFGS iteration; the two curves lie on top of
# each other.  Right: the training time up to each iteration.  On one machine
# the cluster's round trips (scattering the weights, gathering the gradients)
# cost more than they save: a cluster pays off when the partitions are spread
# over machines, or the data are too large for one.
label_local, label_dist = "local (lists)", "dask (4 partitions, 2 workers)"
fig, (ax0, ax1) = plt.subplots(1, 2, figsize=(10, 4))
ax0.semilogy(np.arange(1, len(f_local) + 1), f_local, lw=4, alpha=0.4, label=label_local)
ax0.semilogy(np.arange(1, len(f_dist) + 1), f_dist, "k--", lw=1, label=label_dist)
ax0.set_xlabel("L-BFGS iteration")
ax0.set_ylabel("objective")
ax0.set_title(f"objective (max relative difference {rel.max():.1e})")
ax0.legend()
ax1.plot(np.arange(1, len(f_local) + 1), local.history_["seconds"], lw=4, alpha=0.4,
         label=label_local)
ax1.plot(np.arange(1, len(f_dist) + 1), crf.history_["seconds"], "k--", lw=1,
         label=label_dist)
ax1.set_xlabel("L-BFGS iteration")
ax1.set_ylabel("training time (s, cumulative)")
ax1.set_title(f"test letter accuracy {acc_local:.3f} (local), {acc_dist:.3f} (dask)")
ax1.legend()
fig.suptitle(f"Chain CRF on OCR folds 1-2 ({len(X_tr)} words), C = {C}, "
             f"max_iter = {max_iter}", fontsize=11)
fig.tight_layout()
plt.show()
