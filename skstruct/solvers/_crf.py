"""The CRF log-likelihood of a whole design and its gradient, in a few compiled calls.

Used by :class:`skstruct.NonLocalCRF` for its base model and for the energy's
surrogate likelihood (Algorithm 2 of Vilnis et al.), both of which are CRF
likelihoods at node potentials shifted per node (``offset``).

Node weights are either the full ``(F, Kp)`` table or, with ``pairs`` (see
:func:`seen_pairs`), only the feature-column pairs of a CSR-style map: weight
``j`` belongs to feature ``f`` (``pairs[0][f] <= j < pairs[0][f + 1]``) and
column ``pairs[1][j]``; every other pair's weight is fixed at 0 (crfsuite's
default feature set: the attribute-label pairs seen in training).
"""

from functools import partial
from typing import NamedTuple

import numpy as np
import scipy.sparse as sp
from numba import prange

from .._core import n_chunks, segment_sum
from .._core._decoders import CHAIN
from .._core._jit import jit, pjit
from .._core._pool import for_chunks
from .._core._validation import check_memory
from ..inference._api import marginals_batch
from ..inference._chain import _fb_log, exp_tables, scaled_forward
from ..inference._modes import EDGES_PER_TABLE
from ..models._design import column_indices
from ._lbfgs import lbfgs, owlqn

# the scaled forward-backward hands a chain to the log-space one when a forward step
# keeps too little mass (see scaled_forward) or a backward message exceeds _HUGE
_HUGE = 1e250


@pjit
def xt_dot(tptr, tind, tdata, R, out):
    """``out = X.T @ R`` from the CSR arrays of ``X.T`` (rows are features), one
    feature row per task, so no two threads write the same row."""
    Kp = R.shape[1]
    for f in prange(tptr.shape[0] - 1):
        for q in range(Kp):
            out[f, q] = 0.0
        for p in range(tptr[f], tptr[f + 1]):
            xv = tdata[p]
            r = R[tind[p]]
            for q in range(Kp):
                out[f, q] += xv * r[q]


@jit
def _mark_pairs(xdata, xind, xptr, xrow, xoff, y, cmap, mark):
    """``mark[f, cmap[y_v]] = True`` for every node ``v`` with a non-zero feature ``f``."""
    for v in range(y.shape[0]):
        if y[v] < 0:
            continue
        q = cmap[y[v]]
        r = xrow[v]
        o = xoff[v]
        for p in range(xptr[r], xptr[r + 1]):
            if xdata[p] != 0.0:
                mark[xind[p] + o, q] = True


def seen_pairs(design):
    """The feature-column pairs of the training data: ``(wptr, wlab)``, a CSR map.

    Pair ``(f, q)`` is *seen* when some node of class ``k`` with ``cmap[k] = q``
    has a non-zero value of feature ``f`` (crfsuite's state features without
    ``feature.possible_states``).  Weight ``j`` of the compact vector is pair
    ``(f, wlab[j])`` for the ``f`` with ``wptr[f] <= j < wptr[f + 1]``; columns
    increase within a feature.
    """
    X = design.features
    F, Kp = design.n_features_total, design.n_columns
    mark = np.zeros((F, Kp), np.bool_)
    _mark_pairs(X.data, X.indices, X.indptr, design.xrow, design.xoff,
                np.asarray(design.y, np.int64), design.cmap, mark)
    rows, cols = np.nonzero(mark)
    wptr = np.zeros(F + 1, np.int64)
    np.cumsum(np.bincount(rows, minlength=F), out=wptr[1:])
    return wptr, cols.astype(np.int64)


@jit
def _fb_rescaled(th, epair, pmax, pwi, e0, T, eu, al, sc, beta, nb, tmp, stage):
    """Forward-backward of one chain with Rabiner's scaling, marginals in place.

    ``th`` (>= T, K) the node scores; on return ``al[:T]`` holds the node
    marginals and ``stage[m]`` has the edge marginals of the chain's edges of
    table ``m`` added.  The forward pass normalises ``alpha_t`` by its sum
    ``s_t``; the backward messages are divided by the same ``s_{t+1}``, so
    ``alpha_t * beta_t`` is already the marginal and the edge marginal
    ``alpha_t(i) P(i, j) e_{t+1}(j) beta_{t+1}(j) / s_{t+1}`` needs no
    normalisation: one pass over each table per edge and direction.  Returns
    the log partition, or NaN when the scaling cannot be trusted (the caller
    redoes the chain in log space).
    """
    K = th.shape[1]
    logz = scaled_forward(th, 0, epair, pmax, pwi, e0, T, eu, al, sc, tmp)
    if np.isnan(logz):
        return logz
    for t in range(T - 2, -1, -1):
        e = pwi[e0 + t]
        Pe = epair[e]
        St = stage[e]
        inv = 1.0 / sc[t + 1]
        if t == T - 2:
            for j in range(K):
                tmp[j] = eu[t + 1, j] * inv
        else:
            for j in range(K):
                tmp[j] = eu[t + 1, j] * beta[j] * inv
        bmax = 0.0
        for i in range(K):
            a = al[t, i]
            acc = 0.0
            for j in range(K):
                p = Pe[i, j] * tmp[j]
                acc += p
                St[i, j] += a * p
            nb[i] = acc
            if acc > bmax:
                bmax = acc
        if not bmax <= _HUGE:
            return np.nan
        for i in range(K):
            beta[i] = nb[i]
            al[t, i] *= nb[i]
    return logz


class ChainArrays(NamedTuple):
    """What :func:`chain_value_grad` reads of a chain design."""

    node_offsets: np.ndarray
    edge_offsets: np.ndarray
    xdata: np.ndarray          # node features, CSR
    xind: np.ndarray
    xptr: np.ndarray
    xrow: np.ndarray           # (N,) feature row of each node
    xoff: np.ndarray           # (N,) column shift of each node's features
    wptr: np.ndarray           # the weights' feature-column pairs (compact), else dummies
    wlab: np.ndarray
    compact: bool              # the node weights are those of the pairs only
    pw_index: np.ndarray       # (E,) table of each edge
    y: np.ndarray              # (N,) true labels


@jit
def _chain_value_grad_chunks(A, w, P, chunks, G, nll, c0, c1):
    # the kernel of chain_value_grad, over the chunks c0 <= c < c1
    node_offsets, edge_offsets = A.node_offsets, A.edge_offsets
    xdata, xind, xptr, xrow, xoff = A.xdata, A.xind, A.xptr, A.xrow, A.xoff
    wptr, wlab, compact, pwi, y = A.wptr, A.wlab, A.compact, A.pw_index, A.y
    K = P.shape[1]
    M = P.shape[0]
    nW = w.shape[0]
    epair, pmax = exp_tables(P)
    for c in range(c0, c1):
        tmax = 1
        for s in range(chunks[c], chunks[c + 1]):
            tmax = max(tmax, node_offsets[s + 1] - node_offsets[s])
        th = np.empty((tmax, K))
        eu = np.empty((tmax, K))
        al = np.empty((tmax, K))
        sc = np.empty(tmax)
        beta = np.empty(K)
        nb = np.empty(K)
        tmp = np.empty(K)
        r = np.empty(K)
        xi = np.empty((K, K))
        stage4 = np.zeros((1, M, K, K))
        stage = stage4[0]
        Gc = G[c]
        total = 0.0
        for s in range(chunks[c], chunks[c + 1]):
            n0 = node_offsets[s]
            T = node_offsets[s + 1] - n0
            if T == 0:
                continue
            e0 = edge_offsets[s]
            for t in range(T):
                for k in range(K):
                    th[t, k] = 0.0
                row = xrow[n0 + t]
                o = xoff[n0 + t]
                for p in range(xptr[row], xptr[row + 1]):
                    xv = xdata[p]
                    if xv == 0.0:
                        continue
                    f = xind[p] + o
                    if compact:
                        for j in range(wptr[f], wptr[f + 1]):
                            th[t, wlab[j]] += xv * w[j]
                    else:
                        b = f * K
                        for k in range(K):
                            th[t, k] += xv * w[b + k]
            score = 0.0
            for t in range(T):
                score += th[t, y[n0 + t]]
            for t in range(T - 1):
                score += P[pwi[e0 + t], y[n0 + t], y[n0 + t + 1]]
            stage[:] = 0.0
            logz = _fb_rescaled(th, epair, pmax, pwi, e0, T, eu, al, sc, beta, nb, tmp, stage)
            if np.isnan(logz):
                stage[:] = 0.0
                logz = _fb_log(th, P, pwi, 0, e0, T, al, EDGES_PER_TABLE, stage4, 0, beta, nb,
                               tmp, xi)
            if logz == -np.inf or score == -np.inf:
                total = np.inf
                continue
            total += logz - score
            for m in range(M):
                for i in range(K):
                    for j in range(K):
                        Gc[nW + (m * K + i) * K + j] += stage[m, i, j]
            for t in range(T - 1):
                Gc[nW + (pwi[e0 + t] * K + y[n0 + t]) * K + y[n0 + t + 1]] -= 1.0
            for t in range(T):
                for k in range(K):
                    r[k] = al[t, k]
                r[y[n0 + t]] -= 1.0
                row = xrow[n0 + t]
                o = xoff[n0 + t]
                for p in range(xptr[row], xptr[row + 1]):
                    xv = xdata[p]
                    if xv == 0.0:
                        continue
                    f = xind[p] + o
                    if compact:
                        for j in range(wptr[f], wptr[f + 1]):
                            Gc[j] += xv * r[wlab[j]]
                    else:
                        b = f * K
                        for k in range(K):
                            Gc[b + k] += xv * r[k]
        nll[c] = total


def chain_value_grad(A, w, P, chunks, G, nll):
    """The chain CRF's negative log-likelihood and its gradient in one pass.

    ``A`` are the design's :class:`ChainArrays`; ``w`` the node weights, flat: the
    ``(F, K)`` table row by row, or with ``A.compact`` the weights of the pairs
    ``A.wptr``/``A.wlab`` (:func:`seen_pairs`).
    Per chunk ``c`` of samples, and per sample: node scores, forward-backward
    (scaled, or in log space where scaling fails) and the gradient ``sum_v
    x_v (mu_v - e_{y_v})`` into ``G[c, :w.size]``, the edge tables' into
    ``G[c, w.size:]`` (``(M, K, K)`` flat), all in scratch of the longest
    sample's size; ``nll[c]`` gets ``sum (log Z - score(y))`` of the chunk
    (``inf`` if a true labelling is impossible).  Stored zeros are skipped.
    Identity class-to-column map only.

    Runs on the threads in force (:func:`~skstruct._core._pool.for_chunks`).
    """
    def run(c0, c1):
        _chain_value_grad_chunks(A, w, P, chunks, G, nll, c0, c1)

    for_chunks(run, chunks)


class CRFObjective:
    """``C * sum_i w_i (log Z_i - score_i(y_i)) + l2 (||W||^2 + ||P||^2) / 2``.

    ``W`` (F, Kp) are the node weights of the design's feature map, ``P`` (EF,
    K, K) the edge tables.  ``sample_weight`` (n_samples,) multiplies each
    sample's negative log-likelihood.  Node potentials are ``X W`` plus an
    optional fixed per-node ``offset`` (N, K): the non-local energy's
    ``-grad L(mu_i)`` in the surrogate likelihood.

    ``allowed`` (N, K) bool (default None: the labels ``design.y``) makes the
    likelihood that of the allowed labellings, ``log Z - log Z_allowed``, whose
    gradient is the difference of the two models' expected features: unknown
    labels and hidden states are marginalised (Quattoni et al., "Hidden
    Conditional Random Fields", IEEE TPAMI 2007).  Not convex in general.

    ``pairs`` (``(wptr, wlab)`` of :func:`seen_pairs`, default None: every
    pair) restricts ``W`` to those feature-column pairs: the flat weight
    vector ``w`` is then the pairs' weights followed by ``P``, and the other
    entries of ``W`` are 0.  :meth:`split` always returns the full ``W``.
    """

    def __init__(self, design, C, sample_weight=None, pairs=None, allowed=None, l2=1.0):
        self.design = design
        # the weight of ||w||^2 / 2 (1 - l1_ratio under the elastic net, whose L1 part the
        # orthant-wise optimiser adds)
        self.l2 = float(l2)
        # hidden states or unknown labels: the truth is the set of labellings whose
        # states are allowed, and its score the log partition restricted to it
        self.allowed = allowed
        self.C = float(C)
        b = design.batch
        N, K = b.n_nodes, design.n_classes
        self.K = K
        self.N = N
        self.chunks = b.chunks(n_chunks())
        self.tied = bool(design.tied)
        if not self.tied:
            # per-edge tables, their marginals and the residual: three (E, K, K)
            check_memory(3 * 8 * b.n_edges * K * K,
                         f"the per-edge ({K}, {K}) tables of {b.n_edges} edges",
                         "edge features give every edge its own table; drop them, merge "
                         "classes, or fit on fewer samples at a time")
        self.W_shape = (design.n_features_total, design.n_columns)
        self.P_shape = (design.n_edge_features, K, K)
        self.pairs = None
        if pairs is not None:
            wptr, wlab = pairs
            self.pairs = (np.asarray(wptr, np.int64), np.asarray(wlab, np.int64))
        self.n_node_weights = (self.W_shape[0] * self.W_shape[1] if self.pairs is None
                               else self.pairs[1].shape[0])
        self.n_weights = self.n_node_weights + int(np.prod(self.P_shape))
        self.sw = None if sample_weight is None else np.asarray(sample_weight, np.float64)
        # node weight: the sample weight repeated over its nodes (and edges)
        if self.sw is not None:
            self.node_w = np.repeat(self.sw, b.lengths)
            self.edge_w = np.repeat(self.sw, np.diff(b.edge_offsets))
        else:
            self.node_w = self.edge_w = None
        # (K, Kp) map of class scores onto weight columns (identity for chains)
        Mc = np.zeros((K, design.n_columns))
        Mc[np.arange(K), design.cmap] = design.csign
        self.identity = K == design.n_columns and np.array_equal(Mc, np.eye(K))
        self.Mc = Mc
        # empirical edge statistics of the truth
        y = design.y
        e = b.edges
        self.ya = y[e[:, 0]] if b.n_edges else np.zeros(0, np.int64)
        self.yb = y[e[:, 1]] if b.n_edges else np.zeros(0, np.int64)
        if not self.tied:
            self.EFt = sp.csr_matrix(design.edge_features.T)
        self.offset = None
        self.n_evals = 0
        # built when first needed: the one-pass chain kernel reads none of them
        self._D = self._Xt = self._dense_X = self._pair_rows = None

    # ------------------------------------------------------------ pieces
    @property
    def D(self):
        """The design's kernel arrays (:meth:`Design.args`) at the true labels."""
        if self._D is None:
            self._D = self.design.args(self.design.y, np.zeros(self.N), 1)
        return self._D

    def _node_matrix(self):
        """The node feature matrix as the gradient reads it: row v = the features
        of node v at their column offset (one row per node even when rows are
        shared)."""
        d = self.design
        X = d.features
        if not (np.array_equal(d.xrow, np.arange(self.N)) and not d.xoff.any()):
            X = X[d.xrow]
            X = sp.csr_matrix((X.data, X.indices + np.repeat(d.xoff, np.diff(X.indptr)),
                               X.indptr), shape=(self.N, d.n_features_total))
        return X

    @property
    def dense_X(self):
        if self._dense_X is None and self.design.dense_rows:
            self._dense_X = self._node_matrix().toarray()
        return self._dense_X

    @property
    def Xt(self):
        """CSR arrays of the node feature matrix's transpose (for :meth:`grad_W`)."""
        if self._Xt is None:
            Xt = sp.csr_matrix(self._node_matrix().T)
            Xt.sort_indices()
            self._Xt = (Xt.indptr.astype(np.int64), Xt.indices.astype(np.int64),
                        Xt.data.astype(np.float64, copy=False))
        return self._Xt

    def _rows(self):
        """Feature of every pair weight (``pairs`` only)."""
        if self._pair_rows is None:
            wptr = self.pairs[0]
            self._pair_rows = np.repeat(np.arange(wptr.shape[0] - 1), np.diff(wptr))
        return self._pair_rows

    def split(self, w):
        """``(W (F, Kp), P (EF, K, K))`` of flat weights: views without ``pairs``, the
        full ``W`` (zeros off the pairs) with them."""
        nW = self.n_node_weights
        P = w[nW:].reshape(self.P_shape)
        if self.pairs is None:
            return w[:nW].reshape(self.W_shape), P
        W = np.zeros(self.W_shape)
        W[self._rows(), self.pairs[1]] = w[:nW]
        return W, P

    def full_weights(self, w):
        """The flat weights in the full layout (``W`` row by row, then ``P``): ``w``
        itself without ``pairs``, else one new vector with zeros off the pairs."""
        if self.pairs is None:
            return w
        nW = self.n_node_weights
        nF = self.W_shape[0] * self.W_shape[1]
        out = np.zeros(nF + w.shape[0] - nW)
        out[self._rows() * self.W_shape[1] + self.pairs[1]] = w[:nW]
        out[nF:] = w[nW:]
        return out

    def potentials(self, W, P):
        """Node potentials (N, K) (plus ``offset``), the edge tables with their
        index per edge, and the score of the truth at ``W``, ``P`` (without the
        offset, per sample)."""
        from ..models._kernels import potentials

        D = self.D
        b = self.design.batch
        theta_v = np.empty((self.N, self.K))
        PE = np.zeros((1, self.K, self.K)) if self.tied else np.empty((b.n_edges, self.K,
                                                                       self.K))
        truth = np.zeros(self.chunks.shape[0] - 1)
        P = np.ascontiguousarray(self.design.tables(P))
        potentials(D, np.ascontiguousarray(W), P, False, self.chunks, theta_v, PE, truth)
        if self.design.node_offset is not None:
            theta_v += self.design.node_offset
        if self.tied:
            return theta_v, P, D.pw_index
        return theta_v, PE, np.arange(b.n_edges, dtype=np.int64)

    def grad_W(self, R):
        """Gradient in ``W`` of ``sum_v R[v] . theta_v`` for node residuals R (N, K)."""
        if not self.identity:
            R = R @ self.Mc
        if self.dense_X is not None:
            return self.dense_X.T @ R
        out = np.empty(self.W_shape)
        xt_dot(*self.Xt, np.ascontiguousarray(R), out)
        return out

    def edge_residual_grad(self, edge_marg):
        """Gradient in ``P`` of the edge part: marginals minus the truth."""
        b = self.design.batch
        K = self.K
        if self.tied:
            G = edge_marg.copy()  # summed per table already
            pwi = self.D.pw_index
            if self.edge_w is None:
                np.add.at(G, (pwi, self.ya, self.yb), -1.0)
            else:
                np.add.at(G, (pwi, self.ya, self.yb), -self.edge_w)
            return self.design.fold(G)
        R = edge_marg.copy()
        R[np.arange(b.n_edges), self.ya, self.yb] -= 1.0
        if self.edge_w is not None:
            R *= self.edge_w[:, None, None]
        return self.design.fold(
            np.asarray(self.EFt @ R.reshape(b.n_edges, K * K)).reshape(self.P_shape))

    def nll_parts(self, W, P, offset=None):
        """Marginals, log-partitions and true scores at ``W``, ``P`` (+ offset)."""
        theta_v, tables, pwi = self.potentials(W, P)
        if offset is not None:
            theta_v -= offset
        b = self.design.batch
        mode = "sum" if (self.tied and self.edge_w is None) else "full"
        node, edge, logz = marginals_batch(b, theta_v, tables, pwi, edge_marginals=mode)
        if self.tied and mode == "full":
            edge = self.sum_per_table(edge, self.edge_w)
        score = self.truth_scores(theta_v, tables, pwi)
        return node, edge, logz, score

    def sum_per_table(self, edge, weights=None):
        """Full edge marginals (E, K, K), optionally weighted per edge, summed per
        tied table (what the tied tables' gradient reads)."""
        summed = np.zeros(self.P_shape)
        np.add.at(summed, self.D.pw_index,
                  edge if weights is None else edge * weights[:, None, None])
        return summed

    def truth_scores(self, theta_v, tables, pwi):
        """Score of the true labelling of every sample under given potentials."""
        b = self.design.batch
        y = self.design.y
        node_s = theta_v[np.arange(self.N), y]
        edge_s = tables[pwi, self.ya, self.yb] if b.n_edges else np.zeros(0)
        return segment_sum(node_s, b.node_offsets) + segment_sum(edge_s, b.edge_offsets)

    @property
    def fused(self):
        """Whether the one-pass chain kernel applies (chains, tied tables, classes
        mapped one to one onto weight columns, no sample weights, no offset)."""
        d = self.design
        return (self.tied and self.identity and self.sw is None and self.offset is None
                and self.allowed is None and d.node_offset is None and not d.symmetric
                and bool(np.all(d.kind == CHAIN)))

    def _fused_arrays(self):
        """What :func:`chain_value_grad` reads of the design, without copies: the
        CSR arrays as they are (int32 column indices stay int32)."""
        d = self.design
        X = d.features
        xind = column_indices(X)
        xptr = X.indptr.astype(np.int64, copy=False)
        ef = d.edge_features
        pwi = ef.indices.astype(np.int64)
        y = np.asarray(d.y, np.int64)
        if self.pairs is None:
            wptr = wlab = np.zeros(1, np.int64)
        else:
            wptr, wlab = self.pairs
        b = d.batch
        return ChainArrays(node_offsets=b.node_offsets, edge_offsets=b.edge_offsets,
                           xdata=X.data, xind=xind, xptr=xptr, xrow=d.xrow, xoff=d.xoff,
                           wptr=wptr, wlab=wlab, compact=self.pairs is not None, pw_index=pwi,
                           y=y)

    def _value_grad_fused(self, w):
        import numba

        nW = self.n_node_weights
        b = self.design.batch
        A = self._fused_arrays()
        # one chunk (and one gradient buffer) per thread
        chunks = b.chunks(numba.get_num_threads())
        n_chunks = chunks.shape[0] - 1
        G = np.zeros((n_chunks, w.shape[0]))
        nll = np.zeros(n_chunks)
        w = np.ascontiguousarray(w, dtype=np.float64)
        P = w[nW:].reshape(self.P_shape)
        chain_value_grad(A, w[:nW], P, chunks, G, nll)
        if not np.all(np.isfinite(nll)):
            raise ValueError("a sample's true labelling has probability 0 under the model (a "
                             "-inf potential forbids it)")
        C = self.C
        value = C * float(nll.sum()) + 0.5 * self.l2 * float(w @ w)
        g = G[0] if n_chunks == 1 else G.sum(axis=0)
        g *= C
        if self.l2 == 1.0:
            g += w
        else:
            g += self.l2 * w
        return value, g

    def value_grad(self, w):
        """Objective and gradient at flat weights ``w`` (what L-BFGS calls)."""
        self.n_evals += 1
        if self.fused:
            return self._value_grad_fused(w)
        return self.value_grad_marginals(w)[:2]

    def _value_grad_allowed(self, w):
        """:meth:`value_grad_marginals` with the truth the set of allowed labellings."""
        W, P = self.split(w)
        theta_v, tables, pwi = self.potentials(W, P)
        if self.offset is not None:
            theta_v -= self.offset
        b = self.design.batch
        node, edge, logz = marginals_batch(b, theta_v, tables, pwi, edge_marginals="full")
        theta_v[~self.allowed] = -np.inf
        node_c, edge_c, logz_c = marginals_batch(b, theta_v, tables, pwi,
                                                 edge_marginals="full")
        del theta_v
        nll = logz - logz_c
        if self.sw is not None:
            nll = nll * self.sw
        if not np.all(np.isfinite(nll)):
            bad = int(np.flatnonzero(~np.isfinite(nll))[0])
            raise ValueError(f"sample {bad}: no labelling consistent with its labels has "
                             "positive probability under the model (a -inf potential "
                             "forbids them all)")
        R = node - node_c
        RE = edge - edge_c
        if self.node_w is not None:
            R *= self.node_w[:, None]
            RE *= self.edge_w[:, None, None]
        gW = self.grad_W(R)
        if self.pairs is not None:
            gW = gW[self._rows(), self.pairs[1]]
        if self.tied:
            gP = self.sum_per_table(RE)
        else:
            gP = np.asarray(self.EFt @ RE.reshape(b.n_edges, -1)).reshape(self.P_shape)
        gP = self.design.fold(gP)
        C = self.C
        value = C * float(nll.sum()) + 0.5 * self.l2 * float(w @ w)
        g = np.concatenate([C * gW.ravel(), C * gP.ravel()]) + self.l2 * w
        return value, g, node

    def value_grad_marginals(self, w):
        """Objective, gradient and node marginals (N, K) at ``w`` (never fused)."""
        if self.allowed is not None:
            return self._value_grad_allowed(w)
        W, P = self.split(w)
        node, edge, logz, score = self.nll_parts(W, P, self.offset)
        nll = logz - score
        if self.sw is not None:
            nll = nll * self.sw
        if not np.all(np.isfinite(nll)):
            bad = int(np.flatnonzero(~np.isfinite(nll))[0])
            raise ValueError(f"sample {bad}: its true labelling has probability 0 under the "
                             "model (a -inf potential forbids it)")
        R = node.copy()
        R[np.arange(self.N), self.design.y] -= 1.0
        if self.node_w is not None:
            R *= self.node_w[:, None]
        gW = self.grad_W(R)
        if self.pairs is not None:
            gW = gW[self._rows(), self.pairs[1]]
        gP = self.edge_residual_grad(edge)
        C = self.C
        value = C * float(nll.sum()) + 0.5 * self.l2 * float(w @ w)
        g = np.concatenate([C * gW.ravel(), C * gP.ravel()]) + self.l2 * w
        return value, g, node


def fit_crf_lbfgs(obj, w0, max_iter, tol, verbose=False, memory=6, overwrite_w0=False,
                  history_dtype=np.float32, l1=0.0, period=1, epsilon=0.0,
                  max_linesearch=20):
    """:func:`~skstruct.solvers._lbfgs.lbfgs` on a :class:`CRFObjective` (or anything with
    a ``value_grad``), or :func:`~skstruct.solvers._lbfgs.owlqn` on it plus ``l1 ||w||_1``
    when ``l1 > 0``; ``overwrite_w0``: iterate in ``w0``'s memory; the correction pairs
    in single precision by default.

    Returns
    -------
    w : ndarray
    n_iter : int
    history : dict of ndarray
        ``"objective"`` after each iteration and ``"seconds"``, the time
        since the start at that point.
    """
    import time

    hist = {"objective": [], "seconds": []}
    t0 = time.perf_counter()

    def callback(f):
        hist["objective"].append(float(f))
        hist["seconds"].append(time.perf_counter() - t0)
        if verbose:
            print(f"iter {len(hist['objective']):4d}  objective "
                  f"{hist['objective'][-1]:.8g}", flush=True)

    run = lbfgs if l1 == 0 else partial(owlqn, l1=l1)
    w, n_iter = run(obj.value_grad, w0, max_iter, tol, memory=memory, callback=callback,
                    overwrite_x0=overwrite_w0, history_dtype=history_dtype, period=period,
                    epsilon=epsilon, max_linesearch=max_linesearch)
    return w, n_iter, {k: np.asarray(v, np.float64) for k, v in hist.items()}


def random_blocks(n_samples, batch_size, rng):
    """Sample indices (sorted) of ``batch_size``-sample blocks: a random partition."""
    perm = rng.permutation(n_samples)
    return [np.sort(perm[i:i + batch_size]) for i in range(0, n_samples, batch_size)]


class AdaGradCRF:
    """AdaGrad on mini-batches of the CRF objective ``C sum_i -log p(y_i | x_i)
    + ||w||^2 / 2``: each mini-batch's objective is scaled to the whole data
    set's, the partition is drawn once and its order every epoch.

    Parameters
    ----------
    design : Design
    C : float
    batch_size : int
    learning_rate : float
    rng : RandomState
    pairs : tuple or None
        The node weights' pairs (:class:`CRFObjective`), those of the whole
        design.
    """

    def __init__(self, design, C, *, batch_size, learning_rate, rng, pairs=None):
        S = design.batch.n_samples
        self.blocks = [CRFObjective(design.take(idx), C * S / idx.size, pairs=pairs)
                       for idx in random_blocks(S, batch_size, rng)]
        self.full = CRFObjective(design, C, pairs=pairs)
        self.learning_rate, self.rng = learning_rate, rng
        self.G = None

    def epoch(self, w):
        """One pass over the mini-batches in a random order, in place on ``w``;
        returns the full objective after it."""
        if self.G is None:
            self.G = np.full_like(w, 1e-8)
        for b in self.rng.permutation(len(self.blocks)):
            _, g = self.blocks[b].value_grad(w)
            self.G += g * g
            w -= self.learning_rate * g / np.sqrt(self.G)
        return w

    def objective(self, w):
        return self.full.value_grad(w)[0]
