"""Vilnis et al.'s CRF with learned non-local energies (Bethe projections)."""

import math
import time
from numbers import Integral, Real

import numpy as np
from sklearn.base import clone
from sklearn.utils import check_random_state
from sklearn.utils.validation import check_is_fitted, has_fit_parameter

from ._base import C_RANGE, _is_bag
from ._core import n_threads
from ._core._params import Interval, InvalidParameterError, Options, validate_params
from ._crf import CRF, Scores
from .energies import Energy

_PSI = ("bias", "mean_map")
_LEARNING = ("stochastic", "alternating")
# Bethe projection algorithms (skstruct.inference.bethe_project's methods)
_INFERENCE = ("rda", "md", "accelerated")
_ENERGY_FIT = ("joint", "held_out")


# candidate dictionary entries of n_pieces="auto": 95.8% against 96.1% for all 55 OCR
# words at psi = 3 (doc/nonlocal.md), at a fifth of the work
_AUTO_PIECES = 10

class NonLocalCRF(CRF):
    """A chain or tree CRF plus a learned non-local energy on its marginals.

    Vilnis, Belanger, Sheldon & McCallum, "Bethe Projections for Non-Local
    Inference" (UAI 2015).  Inference solves

        mu* = argmin_{mu in M}  -<theta(x), mu> - H_B(mu) + L_psi(x)(mu)

    by Bethe projections (:func:`skstruct.inference.bethe_project`: repeated
    calls of the CRF's own forward-backward / tree sum-product oracle), and
    :meth:`predict` returns the MAP labelling of the CRF with potentials
    ``theta - grad L(mu*)`` (Proposition 1).

    The base CRF is :class:`~skstruct.CRF`, with its parameters; with
    ``energy=None`` this estimator fits and predicts as :class:`~skstruct.CRF`
    does (use :class:`~skstruct.CRF` for a plain CRF).

    Training first fits the base CRF, then the energy's weights ``psi`` (and,
    with ``fit_theta=True``, the CRF's weights again) on the surrogate
    likelihood ``sum_i log Q(y_i; mu_i)`` of Section 7, where ``Q`` is the CRF
    at ``theta - grad L_psi(mu_i)`` and ``mu_i`` the Bethe projection of
    sample ``i``: by the doubly stochastic Algorithm 3 (``learning=
    "stochastic"``: one projection and one gradient step per mini-batch) or
    by Algorithm 2 (``"alternating"``: projections of every sample, then
    L-BFGS on the surrogate with the ``mu_i`` fixed).

    With ``energy_fit="held_out"`` the two stages see different samples, the
    protocol of the paper's citation-extraction experiment: the base CRF is
    trained on the training part only and then frozen, and ``psi`` is learned
    on a held-out part, ``validation_fraction`` of the samples drawn with
    ``random_state`` or the ``X_val, y_val`` given to :meth:`fit`.

    Parameters
    ----------
    model : "auto" or a model from :mod:`skstruct.models`, default="auto"
        The joint feature map; ``"auto"`` is :class:`~skstruct.models.ChainModel`
        for lists of arrays, :class:`~skstruct.models.GraphModel` for graph
        tuples (every graph must be a tree or forest).  With
        :class:`~skstruct.models.HiddenStatesModel` or
        :class:`~skstruct.models.HiddenNodesModel` (on trees), and for
        unknown labels (``None`` in ``y``), the unobserved states are
        marginalised: the likelihood is that of the labellings consistent
        with the observed labels (``energy=None``, ``solver="lbfgs"`` and
        ``feature_pairs="all"`` only; not convex).  Hidden-variable models
        start from small random weights drawn with ``random_state``.
    C : float, default=1.0
        Inverse regularisation: the base CRF minimises ``C * sum_i -log
        p(y_i | x_i) + ||w||^2 / 2``.  crfsuite's L-BFGS minimises ``-loglik
        + c2 ||w||^2``, the same minimiser at ``C = 1 / (2 c2)``.  Between
        ``1e-100`` and ``1e100`` (beyond, L-BFGS's steps overflow or underflow).
    l1_ratio : float in [0, 1], default=0.0
        The elastic-net mix of the base CRF's regulariser, as for
        :class:`~skstruct.CRF` (``solver="lbfgs"``, trained by OWL-QN when
        positive).
    solver : {"lbfgs", "sgd"}, default="lbfgs"
        Base CRF training: L-BFGS on the whole objective (crfsuite's settings:
        6 correction pairs, here stored in single precision, and a Wolfe line
        search), or AdaGrad steps on mini-batches of ``batch_size`` samples.
    solver_options : dict or None, default=None
        Options of the base CRF's solver, as for :class:`~skstruct.CRF`.
    max_iter : int, default=100
        L-BFGS iterations, or SGD epochs.
    tol : float, default=1e-6
        L-BFGS stops when the relative decrease of the objective falls below
        ``tol`` (as scipy's ``ftol``); a fit that reaches ``max_iter`` first
        issues a :class:`~skstruct.exceptions.ConvergenceWarning`.
    feature_pairs : {"all", "seen"}, default="all"
        Which node weights the base CRF learns.  ``"all"``: one weight per
        feature and class (the ``(n_classes, n_features)`` table).  ``"seen"``:
        only the feature-class pairs that occur in the training data (a
        non-zero feature on a node of that class), crfsuite's default feature
        set (``feature.possible_states=False``); the weights of the other
        pairs are fixed at exactly 0.  Far fewer weights on sparse features
        (on CoNLL-2000 chunking, 0.1 million instead of 1.2 million), so less
        memory and faster training; the model can no longer raise a class
        for a feature never seen with it (or lower the others).
        ``unary_coef_`` and ``coef_`` keep their full shapes, with zeros at
        the unseen pairs.  Not with ``fit_theta=True`` (the energy's learning
        would move the fixed weights).
    warm_start : bool, default=False
        Start the base CRF from the previous fit's ``coef_`` (same kind of
        model, ``classes_`` and weight shapes, else ``fit`` raises a
        ``ValueError``); the energy's weights start afresh.
    energy : energy from :mod:`skstruct.energies`, or None, default=None
        The non-local energy (cloned and fitted on the training labels; with
        ``energy_fit="held_out"`` on those of the training part).  Its
        parameters may name labels as they appear in ``y`` (e.g. the rows of
        :class:`~skstruct.energies.LinearMeasurements`): they are resolved
        against ``classes_`` at fit time.
    energy_fit : {"joint", "held_out"}, default="joint"
        Which samples train which part.  ``"joint"``: the base CRF and the
        energy's weights ``psi`` are both learned on all of ``X, y``.
        ``"held_out"``: the base CRF is learned on the training part only and
        kept fixed; ``psi`` is learned on the held-out part (the ``X_val,
        y_val`` passed to :meth:`fit`, else ``validation_fraction`` of the
        samples, drawn with ``random_state``), so the energy learns how much to
        correct a CRF on samples that CRF has not seen.  Not with
        ``fit_theta=True`` (which would retrain the CRF on the held-out part).
        Without an energy every sample trains the CRF.
    validation_fraction : float, default=0.2
        Fraction of the samples held out for learning ``psi`` with
        ``energy_fit="held_out"`` and no ``X_val`` (rounded up to whole
        samples, as in :func:`sklearn.model_selection.train_test_split`).
        Strictly between 0 and 1; ignored otherwise.
    psi : {"bias", "mean_map"}, default="bias"
        How the energy's weights depend on ``x``: one learned constant per
        term, or a linear function (plus constant) of the mean over the
        sample's nodes of ``n_components`` random Fourier features of the node
        features (sklearn's :class:`~sklearn.kernel_approximation.RBFSampler`,
        an approximate RBF kernel mean map).  Negative weights are clipped to 0
        when used (the paper drops terms with negative weight).
    n_components : int, default=1000
        Random Fourier features for ``psi="mean_map"``.
    gamma : float or "scale", default="scale"
        RBF kernel width of the mean map; ``"scale"`` is ``1 / (n_features *
        X.var())`` as in sklearn's SVC.
    psi_init : float, default=1.0
        Initial constant weight of every term.
    inference_method : {"rda", "md", "accelerated"}, default="rda"
        Bethe-RDA (Algorithm 1), Bethe-MD (Algorithm 4) or accelerated
        Bethe-RDA (Algorithm 5, smooth energies only).

        Changed: this parameter was called ``inference``; it is named
        ``inference_method`` as in the other estimators and the models.
    max_oracle_calls : int, default=20
        Marginal-oracle calls per projection (the paper finds 5-10 enough).
    n_pieces : int, "all", "auto" or None, default="auto"
        Global inference for energies that are a minimum of convex pieces
        (:class:`~skstruct.energies.NearestStatistic`: the distance to the
        *nearest* dictionary entry): every sample is projected once per
        candidate entry, a convex problem each, and keeps the best (see
        :func:`~skstruct.inference.bethe_project`).  An int keeps the
        ``n_pieces`` entries nearest to the CRF's own marginals, ``"all"``
        every entry (the exact global minimum); ``None`` runs the paper's
        algorithm on the non-convex energy, which stops at the local minimum
        its first steps lead to.  ``"auto"``: 10 for such energies with
        ``inference_method="rda"`` or ``"md"``, else None.  Learning and prediction
        use the same inference.
    inference_tol : float, default=1e-4
        A projection stops when no node marginal moves by more than this.
    step_size : float, default=1.0
        Bethe-MD's ``eta``.
    lipschitz : float, default=None
        Lipschitz constant for the accelerated method (``None``: the energy's).
    learning : {"stochastic", "alternating"}, default="stochastic"
        Algorithm 3 or Algorithm 2.
    energy_max_iter : int, default=5
        Epochs of Algorithm 3, or outer (projection) iterations of Algorithm 2.
    learning_rate : float, default=0.1
        AdaGrad step of the stochastic algorithms (energy and SGD).
    batch_size : int, default=64
        Samples per stochastic step (1 is the paper's Algorithm 3 exactly).
    fit_theta : bool, default=False
        Also update the CRF weights while learning the energy (``energy_fit=
        "joint"`` only).
    C_energy : float, default=None
        Inverse L2 regularisation of the energy's weights (``None``: ``C``),
        in the range of ``C``.
    n_jobs : int, default=None
        Threads of the compiled kernels.
    random_state : int, RandomState or None, default=None
        Random Fourier features, sample order of the stochastic algorithms and the
        held-out split of ``energy_fit="held_out"``.
    verbose : int, default=0

    Attributes
    ----------
    model_ : fitted clone of ``model``
    classes_ : ndarray
    coef_ : ndarray
        The CRF's weights, flat (node weights then edge tables).
    unary_coef_ : ndarray (n_classes, n_features)
    pairwise_coef_ : ndarray (n_edge_features, n_classes, n_classes)
        One table (``n_edge_features = 1``) without edge features.
    energy_ : fitted clone of ``energy``, or None
    psi_coef_ : ndarray (n_terms, n_psi_features) or None
        Energy weights: column 0 the constant, then one per random feature.
    held_out_indices_ : ndarray of int or None
        With ``energy_fit="held_out"`` and no ``X_val``: the (sorted) indices
        of the samples of ``X`` that ``psi`` was learned on; the others trained
        the base CRF.  None otherwise.
    mean_map_ : fitted RBFSampler or None
    n_iter_ : int
        Base CRF iterations (L-BFGS) or epochs (SGD).
    fit_seconds_ : float
        Wall time of the base CRF's training.
    history_ : dict of arrays
        ``"objective"`` of the base CRF per iteration and ``"seconds"``, the
        training time up to it (cumulative); with an energy also
        ``"psi_mean"``, the mean weight over training samples per epoch / outer
        iteration, and ``"energy_seconds"``, the energy learning's time up to it;
        fitted on a dask Bag, also ``"bytes_sent"`` and ``"bytes_received"``, the
        payload per iteration (mean).
    n_features_in_ : int
        Node features of the training data.

    Examples
    --------
    A chain CRF on handwritten words with the energy of the nearest dictionary
    word (the training words) on its marginals:

    >>> from skstruct import NonLocalCRF
    >>> from skstruct.datasets import load_letters
    >>> from skstruct.energies import NearestStatistic
    >>> d = load_letters()
    >>> nl = NonLocalCRF(C=1.0, max_iter=200, energy=NearestStatistic("marginals"),
    ...                  energy_max_iter=1, random_state=0).fit(d.X[:300], d.y[:300])
    >>> K = len(nl.classes_)                 # letters seen in these words
    >>> nl.unary_coef_.shape == (K, 128), nl.psi_coef_.shape[0] == nl.energy_.n_terms
    (True, True)
    >>> marginals = nl.predict_marginals(d.X[300:302])
    >>> [m.shape for m in marginals] == [(len(x), K) for x in d.X[300:302]]
    True
    """

    _parameter_constraints = {
        **CRF._parameter_constraints,
        # the energy stage reads the base CRF's marginals: a likelihood-trained CRF
        "solver": [Options("lbfgs", "sgd")],
        "energy": [None, Energy],
        "energy_fit": [Options(*_ENERGY_FIT)],
        "validation_fraction": [Interval(Real, 0, 1, closed="neither")],
        "psi": [Options(*_PSI)],
        "n_components": [Interval(Integral, 1)],
        "gamma": [Options("scale"), Interval(Real, 0, None, closed="neither")],
        "psi_init": [Interval(Real)],
        "inference_method": [Options(*_INFERENCE)],
        "max_oracle_calls": [Interval(Integral, 1)],
        "n_pieces": [Options("auto", "all", None), Interval(Integral, 1)],
        "inference_tol": [Interval(Real, 0)],
        "step_size": [Interval(Real, 0, None, closed="neither")],
        "lipschitz": [None, Interval(Real, 0, None, closed="neither")],
        "learning": [Options(*_LEARNING)],
        "energy_max_iter": [Interval(Integral, 0)],
        "fit_theta": ["boolean"],
        "C_energy": [None, Interval(Real, *C_RANGE)],
    }

    def __init__(self, *, model="auto", C=1.0, l1_ratio=0.0, solver="lbfgs",
                 solver_options=None, max_iter=100, tol=1e-6, feature_pairs="all",
                 warm_start=False, energy=None, energy_fit="joint",
                 validation_fraction=0.2, psi="bias", n_components=1000,
                 gamma="scale", psi_init=1.0, inference_method="rda", max_oracle_calls=20,
                 n_pieces="auto", inference_tol=1e-4, step_size=1.0, lipschitz=None,
                 learning="stochastic", energy_max_iter=5, learning_rate=0.1, batch_size=64,
                 fit_theta=False, C_energy=None, n_jobs=None, random_state=None, verbose=0):
        super().__init__(model=model, C=C, l1_ratio=l1_ratio, solver=solver,
                         solver_options=solver_options, max_iter=max_iter, tol=tol,
                         feature_pairs=feature_pairs, warm_start=warm_start,
                         learning_rate=learning_rate, batch_size=batch_size, n_jobs=n_jobs,
                         random_state=random_state, verbose=verbose)
        self.energy = energy
        self.energy_fit = energy_fit
        self.validation_fraction = validation_fraction
        self.psi = psi
        self.n_components = n_components
        self.gamma = gamma
        self.psi_init = psi_init
        self.inference_method = inference_method
        self.max_oracle_calls = max_oracle_calls
        self.n_pieces = n_pieces
        self.inference_tol = inference_tol
        self.step_size = step_size
        self.lipschitz = lipschitz
        self.learning = learning
        self.energy_max_iter = energy_max_iter
        self.fit_theta = fit_theta
        self.C_energy = C_energy

    # ------------------------------------------------------------ validation
    def _check_params(self):
        validate_params(self)
        k = self.n_pieces
        if k not in ("auto", None) and self.energy is not None and not hasattr(self.energy,
                                                                               "pieces"):
            raise InvalidParameterError(
                f"n_pieces={k!r} needs an energy that is a minimum of convex pieces "
                f"(NearestStatistic); {type(self.energy).__name__} is not (use "
                "n_pieces='auto' or None)")
        if k not in ("auto", None) and self.inference_method == "accelerated":
            raise InvalidParameterError("n_pieces is for inference_method='rda' or 'md'")
        if self.feature_pairs == "seen" and self.energy is not None and self.fit_theta:
            raise InvalidParameterError(
                "feature_pairs='seen' fixes the unseen pairs' weights at 0, but fit_theta=True "
                "would move them: use feature_pairs='all' or fit_theta=False")
        if self.energy_fit == "held_out" and self.energy is not None and self.fit_theta:
            raise InvalidParameterError(
                "energy_fit='held_out' keeps the base CRF trained on the training part fixed, "
                "but fit_theta=True would retrain it on the held-out part: use "
                "fit_theta=False or energy_fit='joint'")

    def _check_validation_data(self, X_val, y_val):
        """Whether ``X_val, y_val`` are given, refusing data that would go unused."""
        if (X_val is None) != (y_val is None):
            given, missing = ("X_val", "y_val") if y_val is None else ("y_val", "X_val")
            raise ValueError(f"{given} was given without {missing}: pass both or neither")
        if X_val is None:
            return False
        if self.energy is None or self.energy_fit != "held_out":
            raise ValueError("X_val and y_val are the held-out samples the energy's weights "
                             "are learned on: they need an energy and energy_fit='held_out' "
                             f"(got energy={self.energy!r}, energy_fit={self.energy_fit!r})")
        return True

    def _held_out_split(self, n_samples, rng):
        """Sorted indices of the training and the held-out part of ``n_samples``."""
        frac = float(self.validation_fraction)
        n_val = math.ceil(frac * n_samples)
        if n_val < 1 or n_val >= n_samples:
            raise ValueError(f"energy_fit='held_out' with validation_fraction={frac!r} leaves "
                             f"{n_samples - n_val} training and {n_val} held-out samples of "
                             f"{n_samples}: both parts need at least one (pass more samples, "
                             "another validation_fraction, or X_val and y_val)")
        perm = rng.permutation(n_samples)
        return np.sort(perm[n_val:]), np.sort(perm[:n_val])

    def _n_pieces(self):
        """The resolved ``n_pieces`` for :func:`bethe_project`."""
        if self.n_pieces != "auto":
            return self.n_pieces
        if self.inference_method != "accelerated" and hasattr(self.energy, "pieces"):
            return _AUTO_PIECES
        return None

    # ------------------------------------------------------------------- fit
    def fit(self, X, y, *, X_val=None, y_val=None):
        """Fit the base CRF, then (with an energy) the energy's weights.

        Parameters
        ----------
        X : list of samples (see :mod:`skstruct.models`), chains or trees, or
            (without an energy) a :class:`dask.bag.Bag` of them.
        y : list of label arrays, or a Bag of them partitioned as ``X``.
        X_val, y_val : held-out samples and their labels, default=None
            With ``energy_fit="held_out"``: the samples the energy's weights
            are learned on, while all of ``X, y`` trains the base CRF (then
            ``validation_fraction`` is ignored).  Their labels must occur in
            ``y``.  In a :class:`~sklearn.pipeline.Pipeline` they would skip
            the earlier steps: prefer ``validation_fraction`` there.

        Returns
        -------
        self
        """
        from .solvers._crf import CRFObjective

        if _is_bag(X):
            if X_val is not None or y_val is not None:
                raise ValueError("X_val and y_val are not supported with a dask Bag")
            self._check_params()
            if self.energy is not None:
                raise InvalidParameterError("NonLocalCRF on a dask Bag needs energy=None")
            super().fit(X, y)
            self._no_energy()
            return self
        self._check_params()
        given_val = self._check_validation_data(X_val, y_val)
        rng = check_random_state(self.random_state)
        previous = self._warm_source()
        design = self._fit_model(X, y, previous)
        # the energy's weights are learned on energy_design (all of X, or the held-out part)
        energy_design = design
        held_out = None
        if self.energy is not None and self.energy_fit == "held_out":
            if given_val:
                energy_design = self._design_of_validation(X_val, y_val)
            else:
                train, held_out = self._held_out_split(design.batch.n_samples, rng)
                design, energy_design = design.take(train), design.take(held_out)
        obj = self._fit_base(design, rng, previous)
        self._no_energy()
        self.held_out_indices_ = held_out
        if self.energy is not None:
            if obj.pairs is not None or energy_design is not design:
                # the energy's learners read the full weight layout of coef_, on the samples
                # they learn from
                obj = CRFObjective(energy_design, self.C)
            hist = dict(self.history_)
            with n_threads(self.n_jobs):
                self._fit_energy(energy_design, obj, rng, hist, train_design=design)
            self.history_ = {k: np.asarray(v, np.float64) for k, v in hist.items()}
        return self

    def _no_energy(self):
        """The fitted attributes of the energy stage, as the base CRF alone leaves them."""
        self.held_out_indices_ = None
        self.energy_ = None
        self.psi_coef_ = None
        self.mean_map_ = None

    def _marginalising_conflicts(self):
        return ((self.energy is not None, "energy=None"), *super()._marginalising_conflicts())

    def _design_of_validation(self, X_val, y_val):
        """The design of the explicit held-out samples, labels checked against ``classes_``."""
        from ._core._packing import check_sequence

        check_sequence(X_val, "X_val")
        check_sequence(y_val, "y_val")
        if len(X_val) != len(y_val):
            raise ValueError(f"X_val has {len(X_val)} samples but y_val has {len(y_val)}")
        if len(X_val) == 0:
            raise ValueError("X_val and y_val hold no samples")
        seen = set(np.asarray(self.classes_).tolist())
        for i, labels in enumerate(y_val):
            arr = np.asarray(labels)
            for lab in np.unique(arr.ravel()).tolist() if arr.size else ():
                if lab not in seen:
                    raise ValueError(f"y_val[{i}] holds the label {lab!r}, which y does not: the "
                                     "base CRF is trained on X, y and knows only its labels")
        return self._design(X_val, y_val)[0]

    # ------------------------------------------------------------ the energy
    def _psi_features(self, X, design, fitting):
        """Per-sample features psi is linear in: a constant, then the mean map."""
        b = design.batch
        S = b.n_samples
        if self.psi == "bias":
            return np.ones((S, 1))
        from sklearn.kernel_approximation import RBFSampler

        from .energies import segment_sum

        Xn = design.features
        if fitting:
            gamma = self.gamma
            if isinstance(gamma, str):
                # sklearn SVC's "scale": 1 / (n_features * variance of all entries);
                # the design's node features are always one CSR matrix
                var = float(Xn.multiply(Xn).mean() - Xn.mean() ** 2) if Xn.size else 0.0
                gamma = 1.0 / (Xn.shape[1] * var) if var > 0 else 1.0
            self.mean_map_ = RBFSampler(gamma=gamma, n_components=self.n_components,
                                        random_state=self._rff_seed).fit(Xn)
        if Xn.shape[0]:
            Z = self.mean_map_.transform(Xn)
        else:
            # a batch of empty samples: RBFSampler refuses an array of 0 rows
            Z = np.zeros((0, self.mean_map_.n_components))
        if Z.shape[0] != b.n_nodes:
            # multi-label designs store one feature row per sample, shared by its
            # nodes (``xrow``): the mean over the nodes is that row's map
            Z = Z[design.xrow]
        lengths = np.maximum(b.lengths, 1)
        M = segment_sum(Z, b.node_offsets) / lengths[:, None]
        return np.hstack([np.ones((S, 1)), M])

    def _psi(self, V, Phi):
        from .solvers._energy import psi_of

        return psi_of(V, Phi)

    def _projector(self):
        """Bethe projections with this estimator's inference settings."""
        from .solvers._energy import BetheProjector

        return BetheProjector(self.energy_, method=self.inference_method,
                              max_iter=self.max_oracle_calls, tol=self.inference_tol,
                              n_pieces=self._n_pieces(), step_size=self.step_size,
                              lipschitz=self.lipschitz)

    def _project(self, obj, W, P, psi, edges=False):
        """Bethe projection of every sample of ``obj``'s design."""
        return self._projector()(obj, W, P, psi, edges)

    def _fit_energy(self, design, obj, rng, hist, train_design=None):
        """Learn the energy's weights on ``design`` by Algorithm 3 or 2 (``learning``);
        the energy itself (e.g. a dictionary of labellings) is fitted on
        ``train_design`` (default ``design``)."""
        from .solvers._energy import Alternating, DoublyStochastic

        # a dictionary built from the held-out labels would contain every held-out
        # labelling: psi would learn to trust it more than it deserves on new data
        fd = design if train_design is None else train_design
        energy = clone(self.energy)
        named = {"classes": self.classes_} if has_fit_parameter(energy, "classes") else {}
        energy.fit(fd.y, fd.batch, fd.n_classes, **named)
        self.energy_ = energy
        self._rff_seed = rng.randint(np.iinfo(np.int32).max)
        Phi = self._psi_features(None, design, fitting=True)
        V = np.zeros((energy.n_terms, Phi.shape[1]))
        V[:, 0] = float(self.psi_init)
        Ce = self.C if self.C_energy is None else self.C_energy
        common = dict(C=self.C, C_energy=Ce, fit_theta=self.fit_theta,
                      project=self._projector())
        if self.learning == "stochastic":
            solver = DoublyStochastic(design, Phi, V, self.coef_.copy(),
                                      learning_rate=self.learning_rate,
                                      batch_size=self.batch_size, rng=rng, **common)
        else:
            solver = Alternating(obj, Phi, V, self.coef_.copy(), **common)
        hist["psi_mean"] = []
        hist["energy_seconds"] = []
        seconds = 0.0
        for it in range(self.energy_max_iter):
            t0 = time.perf_counter()
            solver.epoch()
            seconds += time.perf_counter() - t0
            hist["psi_mean"].append(float(self._psi(solver.V, Phi).mean()))
            hist["energy_seconds"].append(seconds)
            if self.verbose:
                print(f"{'epoch' if self.learning == 'stochastic' else 'outer'} {it + 1:3d}  "
                      f"mean psi {hist['psi_mean'][-1]:.4g}", flush=True)
        if self.fit_theta:
            self._set_theta(obj, solver.w)
        self.psi_coef_ = solver.V

    # -------------------------------------------------------------- predict
    def _projected(self):
        return self.energy_ is not None

    def _scores(self, X, made=None):
        """The potentials of Proposition 1's CRF for every sample, as
        :class:`~skstruct._crf.Scores` with the Bethe projection they come from
        (``made``: the design and packed ``X`` if already made)."""
        from .solvers._crf import CRFObjective

        check_is_fitted(self, "coef_")
        if self.energy_ is None:
            return super()._scores(X, made)
        design, packed = self._design(X) if made is None else made
        design.y = np.zeros(design.batch.n_nodes, np.int64)
        obj = CRFObjective(design, self.C)
        Phi = self._psi_features(X, design, fitting=False)
        proj = self._project(obj, self._W, self._P, self._psi(self.psi_coef_, Phi))
        return Scores(design=design, packed=packed, unary=proj.unary, tables=proj.pairwise,
                      pw_index=proj.pw_index, projection=proj)

    def _node_marginals(self, sc):
        if sc.projection is None:
            return super()._node_marginals(sc)
        return sc.projection.node_marginals

    def predict_marginals(self, X, *, clamp=None, forbidden=None):
        """Node marginals of every sample: the Bethe projection ``mu*`` with an
        energy, the CRF's own marginals without.

        Parameters
        ----------
        X : samples in the format of the fitted model
        clamp, forbidden : optional
            Constraints, as for :meth:`predict`.  Without an energy, the
            marginals of the CRF restricted to the labellings that satisfy
            them.  With an energy, the Bethe projection of the constrained
            CRF: the constraints are ``-inf`` potentials of the base CRF, so
            ``mu*`` minimises the projection's objective over the marginals of
            distributions on those labellings only.  (:meth:`predict` with
            constraints decodes the model projected without them, restricted
            to the labellings that satisfy them.)  A sample that no labelling
            satisfies raises a ``ValueError`` naming it.

        Returns
        -------
        list of arrays (n_nodes_i, n_classes), columns in the order of
        ``classes_``.  For :class:`~skstruct.models.MultiLabelModel` an array
        ``(n_labels, 2)`` per sample (off, on); for
        :class:`~skstruct.models.MulticlassModel` ``(1, n_classes)``.
        """
        return super().predict_marginals(X, clamp=clamp, forbidden=forbidden)

    def _constrained_node_marginals(self, X, design, u, t, i, node):
        """With an energy, the Bethe projection of the constrained CRF."""
        from .inference import bethe_project

        if self.energy_ is None:
            return node
        Phi = self._psi_features(X, design, fitting=False)
        proj = self._projector()
        return bethe_project(u, t, proj.energy, batch=design.batch, pw_index=i,
                             psi=self._psi(self.psi_coef_, Phi), **proj.options).node_marginals
