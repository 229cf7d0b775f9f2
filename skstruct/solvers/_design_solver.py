"""What the structured SVM's batched solvers share: a design, its scratch
arrays, the lambda form of the objective, and its evaluation.

A solver owns its algorithm's state.  The interface the estimator loops over:

* ``run_pass(order)``: one pass over the samples in ``order``;
* ``objective()``: ``(primal, dual, gap)`` of the iterate ``weights()``
  would return, in the lambda form ``lambda / 2 ||w||^2 + 1/n sum_i H_i(w)``
  (``dual`` and ``gap`` are NaN where the algorithm has no certificate);
* ``weights()``: ``(W (F, Kp), P (EF, K, K))``, the weights to return;
* ``n_pass`` and ``seconds``: passes run and time spent in them, kept across
  warm starts;
* ``key()`` and ``carry(old)``: a warm start builds the solver of the new data
  and, where the keys agree, carries the old one's state over.
"""

import numpy as np

from .._core import n_chunks, n_threads
from ..models._chain import chain_pass, is_plain_chain
from ..models._oracle import SURROGATES, hinge_pass
from ..models._scratch import scratch


class DesignSolver:
    """Base of the solvers that run compiled passes over a model's design.

    Parameters
    ----------
    design : Design
        The training data, packed by a built-in model (``design.y`` set).
    loss_weight : ndarray of shape (n_nodes,)
        Hamming loss weight of every node.
    lam : float
        Regularisation of the lambda form, ``1 / (C n_samples)``.
    surrogate : {"margin", "slack", "poslearn", "lp"}
    averaging : bool
        Return the weighted average of the iterates.
    inference_iter : int
        TRW-S iterations (MPLP sweeps) per oracle call on loopy samples.
    n_jobs : int or None
        Threads of the parallel kernels.
    """

    has_dual = False
    # what a warm start carries over to a solver of new data of the same shape
    STATE = ("W", "P", "n_pass", "seconds")

    def __init__(self, design, loss_weight, *, lam, surrogate, averaging, inference_iter,
                 n_jobs=None):
        self.design = design
        self.D = design.args(design.y, loss_weight, inference_iter)
        self.lam = float(lam)
        self.surrogate = surrogate
        self.code = SURROGATES[surrogate]
        # margin rescaling on plain chains: the hinges come from a kernel of their own
        self.plain_chain = surrogate == "margin" and is_plain_chain(design)
        self.averaging = bool(averaging)
        self.n_jobs = n_jobs
        self.scratch = scratch(design, surrogate=surrogate)
        F, Kp, EF, K = (design.n_features_total, design.n_columns, design.n_edge_features,
                        design.n_classes)
        self.W = np.zeros((F, Kp))
        self.P = np.zeros((EF, K, K))
        self.n_pass = 0
        self.seconds = 0.0

    @property
    def n_samples(self):
        return self.design.batch.n_samples

    def key(self):
        """What a warm start must find unchanged: the data's shape and the settings."""
        d = self.design
        return (type(self).__name__, d.batch.n_samples, d.batch.n_nodes, self.W.shape,
                self.P.shape, self.lam, self.surrogate, d.submodular, d.symmetric)

    def carry(self, old):
        """Continue from ``old``'s state (a warm start; ``old.key() == self.key()``);
        TRW-S / MPLP messages are kept too."""
        for name in self.STATE:
            setattr(self, name, getattr(old, name))
        self.scratch = self.scratch._replace(msgs=old.scratch.msgs)

    def relabel(self, old, y_old):
        """Continue from ``old``'s state (the same data, settings and shapes) after the truth
        of the training design moved from ``y_old`` to ``self.design.y`` with every
        node's loss unchanged: CCCP's next convex step, whose imputed states stand
        for the same labels.  A primal method's state (weights, step schedule) is
        valid for the new truth as it is."""
        self.carry(old)

    def weights(self):
        raise NotImplementedError

    def hinges(self, W, P):
        """Surrogate value and corner loss of every sample at ``W, P`` (one
        parallel pass; the learner's messages are not disturbed)."""
        sc = self.scratch
        d = self.design
        S = self.n_samples
        hinge = np.zeros(S)
        ell = np.zeros(S)
        D = self.D
        if self.plain_chain:
            with n_threads(self.n_jobs):
                chain_pass(D.node_offsets, D.xdata, D.xind, D.xptr, D.xrow, D.xoff, D.y,
                           D.loss_weight, W, np.ascontiguousarray(P[0]), d.max_nodes,
                           d.batch.chunks(n_chunks()), hinge, ell,
                           np.zeros(d.batch.n_nodes, np.int64))
            return hinge, ell
        with n_threads(self.n_jobs):
            hinge_pass(self.D, self.code, 1.0, W, d.tables(P),
                       sc._replace(msgs=None if sc.msgs is None else sc.msgs.copy(),
                                   lab=sc.lab.copy()), d.max_nodes,
                       d.max_edges, d.batch.chunks(n_chunks()), hinge, ell)
        return hinge, ell

    def primal(self):
        W, P = self.weights()
        hinge, _ = self.hinges(W, P)
        sq = float(np.sum(W * W) + np.sum(P * P))
        return 0.5 * self.lam * sq + hinge.sum() / self.n_samples, sq

    def objective(self):
        primal, _ = self.primal()
        return primal, np.nan, np.nan
