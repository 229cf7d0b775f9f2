"""The CRF log-likelihood of a whole design and its gradient, in a few compiled calls.

Used by :class:`skstruct.NonLocalCRF` for its base model and for the energy's
surrogate likelihood (Algorithm 2 of Vilnis et al.), both of which are CRF
likelihoods at node potentials shifted per node (``offset``).
"""

import numpy as np
import scipy.sparse as sp
from numba import prange

from .._core import n_chunks, segment_sum
from .._core._jit import pjit
from .._core._validation import check_memory
from ..inference._api import marginals_batch
from ..inference._chain import _fb_log, _fb_scaled, exp_tables
from ..models._kernels import unary_scores


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


@pjit
def chain_value_grad(node_offsets, edge_offsets, xdata, xind, xptr, xrow, xoff, W, cmap, csign,
                     dense, P, pwi, y, chunks, theta, node, G, GP, nll):
    """The chain CRF's negative log-likelihood and its gradient in one pass.

    Per chunk ``c`` of samples: node scores into ``theta``, forward-backward
    (scaled, or in log space where scaling fails) into ``node``, and the
    gradient ``sum_v x_v (mu_v - e_{y_v})`` accumulated into ``G[c]`` (F, K)
    and ``GP[c]`` (M, K, K) while the sample's rows are still in cache;
    ``nll[c]`` gets ``sum (log Z - score(y))`` of the chunk (``inf`` if a true
    labelling is impossible).  Identity class-to-column map only.
    """
    K = P.shape[1]
    M = P.shape[0]
    epair, pmax = exp_tables(P)
    for c in prange(chunks.shape[0] - 1):
        tmax = 1
        for s in range(chunks[c], chunks[c + 1]):
            tmax = max(tmax, node_offsets[s + 1] - node_offsets[s])
        eu = np.empty((tmax, K))
        beta = np.empty(K)
        nbeta = np.empty(K)
        tmp = np.empty(K)
        xi = np.empty((K, K))
        stage = np.zeros((1, M, K, K))
        r = np.empty(K)
        total = 0.0
        for s in range(chunks[c], chunks[c + 1]):
            n0 = node_offsets[s]
            n1 = node_offsets[s + 1]
            T = n1 - n0
            if T == 0:
                continue
            e0 = edge_offsets[s]
            unary_scores(n0, n1, xdata, xind, xptr, xrow, xoff, W, cmap, csign, 1.0, theta,
                         dense)
            score = 0.0
            for v in range(n0, n1):
                score += theta[v, y[v]]
            for t in range(T - 1):
                score += P[pwi[e0 + t], y[n0 + t], y[n0 + t + 1]]
            stage[:] = 0.0
            logz = _fb_scaled(theta, epair, pmax, pwi, n0, e0, T, node, 2, stage, 0, eu, beta,
                              nbeta, tmp, xi)
            if np.isnan(logz):
                stage[:] = 0.0
                logz = _fb_log(theta, P, pwi, n0, e0, T, node, 2, stage, 0, beta, nbeta, tmp,
                               xi)
            if logz == -np.inf or score == -np.inf:
                total = np.inf
                continue
            total += logz - score
            GP[c] += stage[0]
            for t in range(T - 1):
                GP[c, pwi[e0 + t], y[n0 + t], y[n0 + t + 1]] -= 1.0
            Gc = G[c]
            for v in range(n0, n1):
                for k in range(K):
                    r[k] = node[v, k]
                r[y[v]] -= 1.0
                o = xoff[v]
                row = xrow[v]
                for p in range(xptr[row], xptr[row + 1]):
                    xv = xdata[p]
                    g = Gc[xind[p] + o]
                    for k in range(K):
                        g[k] += xv * r[k]
        nll[c] = total


class CRFObjective:
    """``C * sum_i w_i (log Z_i - score_i(y_i)) + ||W||^2 / 2 + ||P||^2 / 2``.

    ``W`` (F, Kp) are the node weights of the design's feature map, ``P`` (EF,
    K, K) the edge tables.  ``sample_weight`` (n_samples,) multiplies each
    sample's negative log-likelihood.  Node potentials are ``X W`` plus an
    optional fixed per-node ``offset`` (N, K): the non-local energy's
    ``-grad L(mu_i)`` in the surrogate likelihood.
    """

    def __init__(self, design, C, sample_weight=None):
        self.design = design
        self.C = float(C)
        b = design.batch
        N, K = b.n_nodes, design.n_classes
        self.K = K
        self.N = N
        y = design.y
        self.D = design.args(y, np.zeros(N), 1)
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
        # the node feature matrix as the gradient reads it: row v = the features of
        # node v at their column offset (one row per node even when rows are shared)
        X = design.features
        if not (np.array_equal(design.xrow, np.arange(N)) and not design.xoff.any()):
            X = X[design.xrow]
            X = sp.csr_matrix((X.data, X.indices + np.repeat(design.xoff, np.diff(X.indptr)),
                               X.indptr), shape=(N, design.n_features_total))
        self.dense_X = X.toarray() if design.dense_rows else None
        if self.dense_X is None:
            Xt = sp.csr_matrix(X.T)
            Xt.sort_indices()
            self.Xt = (Xt.indptr.astype(np.int64), Xt.indices.astype(np.int64),
                       Xt.data.astype(np.float64))
        # empirical edge statistics of the truth
        e = b.edges
        self.ya = y[e[:, 0]] if b.n_edges else np.zeros(0, np.int64)
        self.yb = y[e[:, 1]] if b.n_edges else np.zeros(0, np.int64)
        if not self.tied:
            self.EFt = sp.csr_matrix(design.edge_features.T)
        self.offset = None
        self.n_evals = 0

    # ------------------------------------------------------------ pieces
    def split(self, w):
        nW = self.W_shape[0] * self.W_shape[1]
        return w[:nW].reshape(self.W_shape), w[nW:].reshape(self.P_shape)

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
        potentials(b.node_offsets, b.edge_offsets, b.edges, D.xdata, D.xind, D.xptr, D.xrow,
                   D.xoff, np.ascontiguousarray(W), D.cmap, D.csign, D.dense, self.tied,
                   D.pw_index, D.edata, D.eind, D.eptr, np.ascontiguousarray(P), D.y,
                   D.loss_weight, False, self.chunks, theta_v, PE, truth)
        if self.tied:
            return theta_v, np.ascontiguousarray(P), D.pw_index
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
            return G
        R = edge_marg.copy()
        R[np.arange(b.n_edges), self.ya, self.yb] -= 1.0
        if self.edge_w is not None:
            R *= self.edge_w[:, None, None]
        return np.asarray(self.EFt @ R.reshape(b.n_edges, K * K)).reshape(self.P_shape)

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
                and bool(np.all(d.kind == 0)))

    def _value_grad_fused(self, w):
        import numba

        W, P = self.split(w)
        D = self.D
        b = self.design.batch
        chunks = b.chunks(numba.get_num_threads())
        n_chunks = chunks.shape[0] - 1
        G = np.zeros((n_chunks,) + self.W_shape)
        GP = np.zeros((n_chunks,) + self.P_shape)
        nll = np.zeros(n_chunks)
        chain_value_grad(b.node_offsets, b.edge_offsets, D.xdata, D.xind, D.xptr, D.xrow, D.xoff,
                         np.ascontiguousarray(W), D.cmap, D.csign, D.dense, np.ascontiguousarray(P),
                         D.pw_index, D.y, chunks, np.empty((self.N, self.K)),
                         np.empty((self.N, self.K)), G, GP, nll)
        if not np.all(np.isfinite(nll)):
            raise ValueError("a sample's true labelling has probability 0 under the model (a "
                             "-inf potential forbids it)")
        C = self.C
        value = C * float(nll.sum()) + 0.5 * float(w @ w)
        g = np.concatenate([C * G.sum(axis=0).ravel(), C * GP.sum(axis=0).ravel()]) + w
        return value, g

    def value_grad(self, w):
        """Objective and gradient at flat weights ``w`` (what L-BFGS calls)."""
        self.n_evals += 1
        if self.fused:
            return self._value_grad_fused(w)
        return self.value_grad_marginals(w)[:2]

    def value_grad_marginals(self, w):
        """Objective, gradient and node marginals (N, K) at ``w`` (never fused)."""
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
        gP = self.edge_residual_grad(edge)
        C = self.C
        value = C * float(nll.sum()) + 0.5 * float(w @ w)
        g = np.concatenate([C * gW.ravel(), C * gP.ravel()]) + w
        return value, g, node


def fit_lbfgs(obj, w0, max_iter, tol, verbose=False):
    """Minimise ``obj`` with scipy's L-BFGS-B.

    Returns
    -------
    w : ndarray
    n_iter : int
    history : dict of ndarray
        ``"objective"`` after each iteration and ``"seconds"``, the time
        since the start at that point.
    """
    import time

    from scipy.optimize import minimize

    hist = {"objective": [], "seconds": []}
    t0 = time.perf_counter()

    def callback(intermediate_result):
        hist["objective"].append(float(intermediate_result.fun))
        hist["seconds"].append(time.perf_counter() - t0)
        if verbose:
            print(f"iter {len(hist['objective']):4d}  objective "
                  f"{hist['objective'][-1]:.8g}", flush=True)

    res = minimize(obj.value_grad, w0, jac=True, method="L-BFGS-B", callback=callback,
                   options=dict(maxiter=int(max_iter), ftol=float(tol), gtol=0.0,
                                maxcor=10))
    return res.x, int(res.nit), {k: np.asarray(v, np.float64) for k, v in hist.items()}


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
    """

    def __init__(self, design, C, *, batch_size, learning_rate, rng):
        S = design.batch.n_samples
        self.blocks = [CRFObjective(design.take(idx), C * S / idx.size)
                       for idx in random_blocks(S, batch_size, rng)]
        self.full = CRFObjective(design, C)
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
