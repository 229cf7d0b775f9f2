"""The structured perceptron estimator."""

from numbers import Integral

import numpy as np
from sklearn.base import BaseEstimator
from sklearn.utils import check_random_state

from ._base import (
    SHARED,
    StructuredEstimatorMixin,
    _FitLog,
    _set_n_features_in,
    resolve_model,
    shared_constraints,
)
from ._core._params import Interval, Options, validate_params
from ._core._validation import check_n_jobs
from .models import StructuredModel


class StructuredPerceptron(StructuredEstimatorMixin, BaseEstimator):
    """Averaged structured perceptron.

    Collins's perceptron (M. Collins, "Discriminative Training Methods for
    Hidden Markov Models: Theory and Experiments with Perceptron Algorithms",
    EMNLP 2002): for each sample in turn, decode ``y_hat = argmax_y w .
    phi(x, y)`` with the current weights and, where ``y_hat`` is wrong, step
    ``w += phi(x, y) - phi(x, y_hat)``.  The returned weights are the average
    of the weights after every sample (``average=True``, the "averaged
    perceptron" of the paper, CRFsuite's ``ap`` and seqlearn's default),
    kept lazily so that a step costs only its sample's features.

    No regularisation, no step size, no probabilities: the baseline to beat,
    and often a strong one.  ``loss_augmented=True`` decodes with the Hamming
    loss added (``argmax_y [loss(y_i, y) + w . phi(x, y)]``), so that samples
    decoded right but by a margin smaller than their loss still step: the
    subgradient step of the structured hinge without its regulariser.

    Parameters
    ----------
    model : "auto" or StructuredModel, default="auto"
        The joint feature map (see :mod:`skstruct.models`); ``"auto"`` picks
        one from the data as :class:`~skstruct.StructuredSVM` does.  Built-in
        models train by one compiled call per pass; any other model of the
        protocol through its ``inference`` (``loss_augmented_inference``),
        ``joint_feature`` and ``loss``, one sample at a time.
    max_iter : int, default=10
        Maximum number of passes over the data.  ``fit`` stops earlier after a
        pass without a single wrong decoding (the weights can no longer
        change): that is the perceptron's convergence, and a fit whose
        ``max_iter``-th pass still decoded a sample wrongly issues a
        :class:`~skstruct.exceptions.ConvergenceWarning` (on data that no
        weights separate, every fit does: silence it, or use
        ``StructuredSVM``).
    average : bool, default=True
        Return the average of the weights after every step (robust to the
        order of the last samples) instead of the last weights.
    loss_augmented : bool, default=False
        Decode with the Hamming loss added during training (see above).
    shuffle : bool, default=True
        Visit the samples in a fresh random order each pass (in the given
        order otherwise).
    inference_iter : int, default=10
        TRW-S iterations per decoding on loopy graphs.
    n_jobs : int or None, default=None
        Threads of ``predict`` (a pass is sequential: each step needs the
        weights the previous one left).
    random_state : int, RandomState or None, default=None
        The order of the samples (``shuffle=True``).
    verbose : int, default=0
        Print one line per pass.

    Attributes
    ----------
    coef_ : ndarray
        All weights: ``unary`` then ``pairwise`` raveled (built-in models),
        or the model's own ``size_joint_feature`` layout.
    unary_coef_, pairwise_coef_ : ndarray
        As in :class:`~skstruct.StructuredSVM` (built-in models).
    classes_ : ndarray
        Node labels seen in ``fit``.
    model_ : model
        The fitted joint feature map.
    n_iter_ : int
        Passes run.
    n_features_in_ : int
        Node features of the training data (for models that have them).
    fit_seconds_ : float
        Wall time of the last fit's passes (compilation excluded).
    history_ : dict of ndarray
        Per pass: ``"pass"``, ``"mistakes"`` (samples decoded wrongly, hence
        stepped, during the pass), ``"errors"`` (wrongly decoded nodes, or
        for a protocol model the sum of its loss, during the pass) and
        ``"seconds"`` (cumulative training time).

    See Also
    --------
    StructuredSVM : the regularised max-margin learner (BCFW); the perceptron
        is its unregularised, step-size-free relative.

    Examples
    --------
    >>> from skstruct import StructuredPerceptron
    >>> from skstruct.datasets import load_letters
    >>> d = load_letters()
    >>> clf = StructuredPerceptron(max_iter=5, random_state=0).fit(d.X[:300], d.y[:300])
    >>> bool(clf.history_["mistakes"][-1] < clf.history_["mistakes"][0])
    True
    >>> round(clf.score(d.X[300:600], d.y[300:600]), 2) > 0.5
    True
    """

    _parameter_constraints = shared_constraints(
        model=[Options("auto"), StructuredModel],
        max_iter=SHARED,
        average=SHARED,
        loss_augmented=["boolean"],
        shuffle=SHARED,
        inference_iter=[Interval(Integral, 1)],
        n_jobs=SHARED,
        random_state=SHARED,
        verbose=SHARED,
    )


    # its fit never runs the learners' oracle pass: predictions take the decoders-only kernel
    _predict_kernel = "decode"

    def __init__(self, *, model="auto", max_iter=10, average=True, loss_augmented=False,
                 shuffle=True, inference_iter=10, n_jobs=None, random_state=None, verbose=0):
        self.model = model
        self.max_iter = max_iter
        self.average = average
        self.loss_augmented = loss_augmented
        self.shuffle = shuffle
        self.inference_iter = inference_iter
        self.n_jobs = n_jobs
        self.random_state = random_state
        self.verbose = verbose

    def _make_solver(self, model, X, y, design):
        from ._svm import _sample_lists
        from .solvers._perceptron import Perceptron, ProtocolPerceptron

        if design is not None:
            if not design.plain_loss:
                raise ValueError("StructuredPerceptron does not learn hidden states or hidden "
                                 "nodes: use LatentStructuredSVM")
            # partly labelled samples: learn on their labelled parts
            design = design.drop_unknown()
            N = design.batch.n_nodes
            lw = np.ones(N) if self.loss_augmented else np.zeros(N)
            return Perceptron(design, lw, averaging=self.average,
                              inference_iter=self.inference_iter, n_jobs=self.n_jobs)
        X, y = _sample_lists(X, y)
        return ProtocolPerceptron(model, X, y, averaging=self.average,
                                  loss_augmented=self.loss_augmented)

    def fit(self, X, y):
        """Learn the weights.

        Parameters
        ----------
        X, y : training samples and their labels, in the formats of
            :meth:`StructuredSVM.fit <skstruct.StructuredSVM.fit>`.

        Returns
        -------
        self
        """
        validate_params(self)
        check_n_jobs(self.n_jobs)
        if isinstance(self.model, StructuredModel) and not self.model.has_batched_path():
            from ._svm import _sample_lists

            _sample_lists(X, y)
        model, made = resolve_model(self.model, X, y, design=True)
        solver = self._make_solver(model, X, y, None if made is None else made[0])
        del made
        S = solver.n_samples
        rng = check_random_state(self.random_state)
        self.model_ = model
        if hasattr(model, "classes_"):
            self.classes_ = model.classes_
        # an empty pass compiles (or loads) the kernel outside the recorded times
        solver.run_pass(np.zeros(0, np.int64))
        log = _FitLog(self, ("pass", "mistakes", "errors", "seconds"),
                      int_keys=("pass", "mistakes"), unit="pass")
        for it in range(self.max_iter):
            order = (rng.permutation(S) if self.shuffle else np.arange(S)).astype(np.int64)
            log.start()
            stepped, errors = solver.run_pass(order)
            log.stop()
            log.record(it + 1, stepped, errors, log.seconds)
            log.say(it + 1, mistakes=int(stepped), errors=float(errors))
            if stepped == 0:
                break
        log.finish(converged=stepped == 0, n_iter=it + 1,
                   criterion="the count of samples decoded wrongly in the last pass",
                   value=stepped, tol="0 (a pass without mistakes)",
                   advice="Raise max_iter; data that no weights separate never converge.")
        if model.has_batched_path():
            W, P = solver.weights()
            self._W, self._P = W, P
            self.coef_ = np.concatenate([W.ravel(), P.ravel()])
        else:
            self.coef_ = solver.weights()
        self.n_iter_ = it + 1
        _set_n_features_in(self, model)
        self.history_ = log.history()
        return self

    def _weights(self):
        return self._W, self._P

    def _predict_iter(self):
        return max(50, 5 * self.inference_iter)
