"""Vilnis et al.'s CRF with learned non-local energies (Bethe projections)."""

import math
import time
from numbers import Integral, Real
from typing import NamedTuple

import numpy as np
from sklearn.base import BaseEstimator, clone
from sklearn.utils import check_random_state
from sklearn.utils.validation import check_is_fitted, has_fit_parameter

from ._base import (
    C_RANGE,
    StructuredEstimatorMixin,
    _is_bag,
    _refuse_latent_constraints,
    _set_n_features_in,
    resolve_model,
)
from ._core import n_threads
from ._core._decoders import TREE, VITERBI
from ._core._params import Interval, Options, validate_params
from .energies import Energy
from .models import StructuredModel

_SOLVERS = ("lbfgs", "sgd")
_PSI = ("bias", "mean_map")
_LEARNING = ("stochastic", "alternating")
# Bethe projection algorithms (skstruct.inference.bethe_project's methods)
_INFERENCE = ("rda", "md", "accelerated")
_FEATURE_PAIRS = ("all", "seen")
_ENERGY_FIT = ("joint", "held_out")


# candidate dictionary entries of n_pieces="auto": 95.8% against 96.1% for all 55 OCR
# words at psi = 3 (doc/nonlocal.md), at a fifth of the work
_AUTO_PIECES = 10


class Tilde(NamedTuple):
    """A prediction design and the potentials of Proposition 1's CRF on it."""

    design: object         # the Design of the samples
    packed: object         # the packed samples
    unary: np.ndarray      # (N, K) node potentials
    tables: np.ndarray     # the edge tables
    pw_index: np.ndarray   # (E,) table of each edge
    projection: object     # the BetheProjection (None without an energy)


class NonLocalCRF(StructuredEstimatorMixin, BaseEstimator):
    """A chain or tree CRF plus a learned non-local energy on its marginals.

    Vilnis, Belanger, Sheldon & McCallum, "Bethe Projections for Non-Local
    Inference" (UAI 2015).  Inference solves

        mu* = argmin_{mu in M}  -<theta(x), mu> - H_B(mu) + L_psi(x)(mu)

    by Bethe projections (:func:`skstruct.inference.bethe_project`: repeated
    calls of the CRF's own forward-backward / tree sum-product oracle), and
    :meth:`predict` returns the MAP labelling of the CRF with potentials
    ``theta - grad L(mu*)`` (Proposition 1).

    With ``energy=None`` this is a plain linear-chain (or tree) CRF trained by
    maximum likelihood, a drop-in replacement for sklearn-crfsuite: it
    accepts sparse node features (e.g. ``NodeTransformer(DictVectorizer())``
    on the feature dicts of :func:`skstruct.datasets.conll_features`).

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
    solver : {"lbfgs", "sgd"}, default="lbfgs"
        Base CRF training: L-BFGS on the whole objective (crfsuite's settings:
        6 correction pairs, here stored in single precision, and a Wolfe line
        search), or AdaGrad steps on mini-batches of ``batch_size`` samples.
    max_iter : int, default=100
        L-BFGS iterations, or SGD epochs.
    tol : float, default=1e-6
        L-BFGS stops when the relative decrease of the objective falls below
        ``tol`` (as scipy's ``ftol``).
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
    inference : {"rda", "md", "accelerated"}, default="rda"
        Bethe-RDA (Algorithm 1), Bethe-MD (Algorithm 4) or accelerated
        Bethe-RDA (Algorithm 5, smooth energies only).
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
        ``inference="rda"`` or ``"md"``, else None.  Learning and prediction
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
        (``(n_classes, n_classes)`` for one shared transition table).
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
    A plain linear-chain CRF on handwritten words:

    >>> from skstruct import NonLocalCRF
    >>> from skstruct.datasets import load_letters
    >>> d = load_letters()
    >>> crf = NonLocalCRF(C=1.0, max_iter=30).fit(d.X[:300], d.y[:300])
    >>> K = len(crf.classes_)                # letters seen in these words
    >>> crf.unary_coef_.shape == (K, 128), crf.pairwise_coef_.shape == (1, K, K)
    (True, True)
    >>> marginals = crf.predict_marginals(d.X[300:302])
    >>> [m.shape for m in marginals] == [(len(x), K) for x in d.X[300:302]]
    True
    """

    _parameter_constraints = {
        "model": [Options("auto"), StructuredModel],
        "C": [Interval(Real, *C_RANGE)],
        "solver": [Options(*_SOLVERS)],
        "max_iter": [Interval(Integral, 1)],
        "tol": [Interval(Real, 0)],
        "feature_pairs": [Options(*_FEATURE_PAIRS)],
        "energy": [None, Energy],
        "energy_fit": [Options(*_ENERGY_FIT)],
        "validation_fraction": [Interval(Real, 0, 1, closed="neither")],
        "psi": [Options(*_PSI)],
        "n_components": [Interval(Integral, 1)],
        "gamma": [Options("scale"), Interval(Real, 0, None, closed="neither")],
        "psi_init": [Interval(Real)],
        "inference": [Options(*_INFERENCE)],
        "max_oracle_calls": [Interval(Integral, 1)],
        "n_pieces": [Options("auto", "all", None), Interval(Integral, 1)],
        "inference_tol": [Interval(Real, 0)],
        "step_size": [Interval(Real, 0, None, closed="neither")],
        "lipschitz": [None, Interval(Real, 0, None, closed="neither")],
        "learning": [Options(*_LEARNING)],
        "energy_max_iter": [Interval(Integral, 0)],
        "learning_rate": [Interval(Real, 0, None, closed="neither")],
        "batch_size": [Interval(Integral, 1)],
        "fit_theta": ["boolean"],
        "C_energy": [None, Interval(Real, *C_RANGE)],
        "n_jobs": [None, Interval(Integral)],
        "random_state": ["random_state"],
        "verbose": [Interval(Integral, 0), "boolean"],
    }

    def __init__(self, *, model="auto", C=1.0, solver="lbfgs", max_iter=100, tol=1e-6,
                 feature_pairs="all", energy=None, energy_fit="joint",
                 validation_fraction=0.2, psi="bias", n_components=1000,
                 gamma="scale", psi_init=1.0, inference="rda", max_oracle_calls=20,
                 n_pieces="auto", inference_tol=1e-4, step_size=1.0, lipschitz=None,
                 learning="stochastic", energy_max_iter=5, learning_rate=0.1, batch_size=64,
                 fit_theta=False, C_energy=None, n_jobs=None, random_state=None, verbose=0):
        self.model = model
        self.C = C
        self.solver = solver
        self.max_iter = max_iter
        self.tol = tol
        self.feature_pairs = feature_pairs
        self.energy = energy
        self.energy_fit = energy_fit
        self.validation_fraction = validation_fraction
        self.psi = psi
        self.n_components = n_components
        self.gamma = gamma
        self.psi_init = psi_init
        self.inference = inference
        self.max_oracle_calls = max_oracle_calls
        self.n_pieces = n_pieces
        self.inference_tol = inference_tol
        self.step_size = step_size
        self.lipschitz = lipschitz
        self.learning = learning
        self.energy_max_iter = energy_max_iter
        self.learning_rate = learning_rate
        self.batch_size = batch_size
        self.fit_theta = fit_theta
        self.C_energy = C_energy
        self.n_jobs = n_jobs
        self.random_state = random_state
        self.verbose = verbose

    # ------------------------------------------------------------ validation
    def _check_params(self):
        validate_params(self)
        k = self.n_pieces
        if k not in ("auto", None) and self.energy is not None and not hasattr(self.energy,
                                                                               "pieces"):
            raise ValueError(f"n_pieces={k!r} needs an energy that is a minimum of convex "
                             f"pieces (NearestStatistic); {type(self.energy).__name__} is not "
                             "(use n_pieces='auto' or None)")
        if k not in ("auto", None) and self.inference == "accelerated":
            raise ValueError("n_pieces is for inference='rda' or 'md'")
        if self.feature_pairs == "seen" and self.energy is not None and self.fit_theta:
            raise ValueError("feature_pairs='seen' fixes the unseen pairs' weights at 0, but "
                             "fit_theta=True would move them: use feature_pairs='all' or "
                             "fit_theta=False")
        if self.energy_fit == "held_out" and self.energy is not None and self.fit_theta:
            raise ValueError("energy_fit='held_out' keeps the base CRF trained on the training "
                             "part fixed, but fit_theta=True would retrain it on the held-out "
                             "part: use fit_theta=False or energy_fit='joint'")

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
        if self.inference != "accelerated" and hasattr(self.energy, "pieces"):
            return _AUTO_PIECES
        return None

    def _design(self, X, y=None, made=None):
        design, packed = self.model_.design(X, y) if made is None else made
        bad = np.flatnonzero(~np.isin(design.kind, (VITERBI, TREE)))
        if bad.size and hasattr(self.model_, "edges_"):
            raise ValueError(f"the label graph of {self.model_!r} has a cycle: NonLocalCRF "
                             "needs chains or trees (exact marginals); use "
                             "MultiLabelModel(edges='tree') or edges='independent'")
        if bad.size:
            raise ValueError(f"sample {bad[0]} has a cycle: NonLocalCRF needs chains or trees "
                             "(exact marginal inference)")
        return design, packed

    # ------------------------------------------------------------------- fit
    def fit(self, X, y, *, X_val=None, y_val=None):
        """Fit the base CRF, then (with an energy) the energy's weights.

        Parameters
        ----------
        X : list of samples (see :mod:`skstruct.models`), chains or trees.
        y : list of label arrays.
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
        from .solvers._crf import CRFObjective, fit_crf_lbfgs, seen_pairs

        if _is_bag(X):
            if X_val is not None or y_val is not None:
                raise ValueError("X_val and y_val are not supported with a dask Bag")
            from .distributed import fit_crf

            return fit_crf(self, X, y)
        self._check_params()
        given_val = self._check_validation_data(X_val, y_val)
        rng = check_random_state(self.random_state)
        model, made = resolve_model(self.model, X, y, batched_only=True, design=True)
        self.model_ = model
        self.classes_ = model.classes_
        _set_n_features_in(self, model)
        design = self._design(X, y, made)[0]
        del made
        # the energy's weights are learned on energy_design (all of X, or the held-out part)
        energy_design = design
        self.held_out_indices_ = None
        if self.energy is not None and self.energy_fit == "held_out":
            if given_val:
                energy_design = self._design_of_validation(X_val, y_val)
            else:
                train, held = self._held_out_split(design.batch.n_samples, rng)
                design, energy_design = design.take(train), design.take(held)
                self.held_out_indices_ = held
        allowed = self._allowed(model, design)
        pairs = seen_pairs(design) if self.feature_pairs == "seen" else None
        obj = CRFObjective(design, self.C, pairs=pairs, allowed=allowed)
        w0 = np.zeros(obj.n_weights)
        if getattr(model, "latent", False):
            # zero weights are a saddle point where the states of a label stay alike
            w0 += 0.1 * rng.standard_normal(obj.n_weights)
        t0 = time.perf_counter()
        with n_threads(self.n_jobs):
            if self.solver == "lbfgs":
                w, n_iter, hist = fit_crf_lbfgs(obj, w0, self.max_iter, self.tol, self.verbose,
                                                overwrite_w0=True)
            else:
                w, n_iter, hist = self._fit_sgd(design, w0, rng, pairs)
        del w0
        self.fit_seconds_ = time.perf_counter() - t0
        self._set_theta(obj, w)
        del w
        self.n_iter_ = n_iter
        self.energy_ = None
        self.psi_coef_ = None
        self.mean_map_ = None
        if self.energy is not None:
            if pairs is not None or energy_design is not design:
                # the energy's learners read the full weight layout of coef_, on the samples
                # they learn from
                obj = CRFObjective(energy_design, self.C)
            with n_threads(self.n_jobs):
                self._fit_energy(energy_design, obj, rng, hist, train_design=design)
        self.history_ = {k: np.asarray(v, np.float64) for k, v in hist.items()}
        return self

    def _allowed(self, model, design):
        """The states each training node may take, when some are not observed (unknown
        labels, hidden states or hidden nodes: marginalised), else None."""
        from .models._latent import allowed_states

        if not (getattr(model, "latent", False) or np.any(design.y < 0)):
            return None
        what = ("a model with hidden states or hidden nodes"
                if getattr(model, "latent", False) else "unknown labels (None in y)")
        for bad, why in ((self.energy is not None, "energy=None"),
                         (self.feature_pairs != "all", "feature_pairs='all'"),
                         (self.solver != "lbfgs", "solver='lbfgs'")):
            if bad:
                raise ValueError(f"{what}: NonLocalCRF marginalises the unobserved states "
                                 f"with {why} only")
        return allowed_states(model, design)[0]

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

    def _set_theta(self, obj, w):
        # the full layout (node weights then edge tables), whatever the pairs trained;
        # the tables the kernels read are views of coef_ (one copy of the weights)
        coef = np.ascontiguousarray(obj.full_weights(w), dtype=np.float64)
        nF = obj.W_shape[0] * obj.W_shape[1]
        self.coef_ = coef
        self._W, self._P = coef[:nF].reshape(obj.W_shape), coef[nF:].reshape(obj.P_shape)

    def _weights(self):
        return self._W, self._P

    def _fit_sgd(self, design, w0, rng, pairs=None):
        """AdaGrad on mini-batches of the base CRF objective."""
        from .solvers._crf import AdaGradCRF

        solver = AdaGradCRF(design, self.C, batch_size=self.batch_size,
                            learning_rate=self.learning_rate, rng=rng, pairs=pairs)
        w = w0.copy()
        hist = {"objective": [], "seconds": []}
        seconds = 0.0
        for epoch in range(self.max_iter):
            t0 = time.perf_counter()
            solver.epoch(w)
            seconds += time.perf_counter() - t0
            hist["objective"].append(solver.objective(w))
            hist["seconds"].append(seconds)
            if self.verbose:
                print(f"epoch {epoch + 1:4d}  objective {hist['objective'][-1]:.8g}",
                      flush=True)
        return w, self.max_iter, hist

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

        return BetheProjector(self.energy_, method=self.inference,
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
    def _theta_tilde(self, X, made=None):
        """Design, and the potentials of Proposition 1's CRF for every sample, as a
        :class:`Tilde` (``made``: the design and packed ``X`` if already made)."""
        from .solvers._crf import CRFObjective

        check_is_fitted(self, "coef_")
        design, packed = self._design(X) if made is None else made
        design.y = np.zeros(design.batch.n_nodes, np.int64)
        obj = CRFObjective(design, self.C)
        if self.energy_ is None:
            theta_v, tables, pwi = obj.potentials(self._W, self._P)
            return Tilde(design=design, packed=packed, unary=theta_v, tables=tables,
                         pw_index=pwi, projection=None)
        Phi = self._psi_features(X, design, fitting=False)
        proj = self._project(obj, self._W, self._P, self._psi(self.psi_coef_, Phi))
        return Tilde(design=design, packed=packed, unary=proj.unary, tables=proj.pairwise,
                     pw_index=proj.pw_index, projection=proj)

    def _potentials(self, X):
        """With an energy, the potentials of Proposition 1's CRF (the Bethe projection,
        computed without prediction-time constraints), else the CRF's own."""
        with n_threads(self.n_jobs):
            design, packed, u, t, i, _ = self._theta_tilde(X)
        return design, packed, (u, t, i)

    def _decode(self, X):
        from .inference import map_batch
        from .models._chain import is_plain_chain
        from .models._predict import predict_labels

        check_is_fitted(self, "coef_")
        made = self._design(X)
        if self.energy_ is None and is_plain_chain(made[0]):
            # the CRF's MAP is the linear model's: Viterbi with the unary scores made
            # chain by chain, no (n_nodes, n_classes) array of potentials
            with n_threads(self.n_jobs):
                return predict_labels(made[0], self._W, self._P, 0), made[1]
        with n_threads(self.n_jobs):
            design, packed, u, t, i, _ = self._theta_tilde(X, made)
            labels = map_batch(design.batch, u, t, i)
        return labels, packed

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
        if _is_bag(X):
            from .distributed import map_predict

            return map_predict(self, X, "predict_marginals", clamp=clamp, forbidden=forbidden)
        from .inference import marginals_batch

        if clamp is not None or forbidden is not None:
            _refuse_latent_constraints(self)
            return self._constrained_marginals(X, clamp, forbidden)
        with n_threads(self.n_jobs):
            design, packed, u, t, i, proj = self._theta_tilde(X)
            if proj is None:
                node = marginals_batch(design.batch, u, t, i, edge_marginals=None)[0]
            else:
                node = proj.node_marginals
        if getattr(self.model_, "latent", False):
            return self.model_.label_marginals(node, design)
        # by the design's offsets: tabular models' ``packed`` is the bare array X
        return np.split(node, design.batch.node_offsets[1:-1])

    def _constrained_marginals(self, X, clamp, forbidden):
        """:meth:`predict_marginals` under constraints: those of the base CRF's
        potentials (``-inf`` entries), then with an energy their Bethe projection."""
        from ._decoding import constrained_marginals, constrained_potentials
        from .inference import bethe_project
        from .solvers._crf import CRFObjective

        check_is_fitted(self, "coef_")
        design, _ = self._design(X)
        design.y = np.zeros(design.batch.n_nodes, np.int64)
        with n_threads(self.n_jobs):
            u, t, i = CRFObjective(design, self.C).potentials(self._W, self._P)
            u, t = constrained_potentials(design, u, t, np.asarray(self.classes_), clamp,
                                          forbidden)
            # refuses a sample no labelling satisfies (exact: chains and trees)
            node = constrained_marginals(design, u, t, i)
            if self.energy_ is not None:
                Phi = self._psi_features(X, design, fitting=False)
                proj = self._projector()
                node = bethe_project(u, t, proj.energy, batch=design.batch, pw_index=i,
                                     psi=self._psi(self.psi_coef_, Phi),
                                     **proj.options).node_marginals
        # a clamped node's row exactly one-hot (normalising leaves it an ulp off 1)
        excluded = np.isneginf(u)
        rows = np.flatnonzero(excluded.any(axis=1))
        if rows.size:
            node[excluded] = 0.0
            node[rows] /= node[rows].sum(axis=1, keepdims=True)
        return np.split(node, design.batch.node_offsets[1:-1])

    def __sklearn_tags__(self):
        tags = super().__sklearn_tags__()
        tags.non_deterministic = False
        return tags
