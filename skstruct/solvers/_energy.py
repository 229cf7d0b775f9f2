"""Learning the weights ``psi`` of a non-local energy (Vilnis et al., UAI 2015, Section 7).

The surrogate likelihood ``sum_i log Q(y_i; mu_i)``, with ``Q`` the CRF at
``theta - grad L_psi(mu_i)`` and ``mu_i`` the Bethe projection of sample
``i``, is maximised in the energy weights ``V`` (``psi_i = max(Phi_i V^T,
0)``, ``Phi_i`` the sample's features) and, with ``fit_theta``, in the CRF's
weights ``w`` too:

* :class:`DoublyStochastic` (Algorithm 3): per mini-batch one projection and
  one AdaGrad step;
* :class:`Alternating` (Algorithm 2): projections of every sample, then
  L-BFGS on the :class:`Surrogate` with the ``mu_i`` fixed.

Both own their state (``V``, ``w`` and the step accumulators) and run one
epoch / outer iteration per :meth:`epoch` call.
"""

import numpy as np

from .._core import n_threads
from ..inference import bethe_project, marginals_batch
from ._crf import CRFObjective, fit_crf_lbfgs, random_blocks


def psi_of(V, Phi):
    """Per-sample energy weights ``max(Phi V^T, 0)`` (n_samples, n_terms)."""
    return np.maximum(Phi @ V.T, 0.0)


def edge_truth(design, shape):
    """One-hot (E, K, K) of the true label pairs of every edge."""
    out = np.zeros(shape)
    e = design.batch.edges
    out[np.arange(e.shape[0]), design.y[e[:, 0]], design.y[e[:, 1]]] = 1.0
    return out


class BetheProjector:
    """:func:`~skstruct.inference.bethe_project` with fixed settings, applied to
    the CRF of a :class:`~._crf.CRFObjective` at weights ``W, P``."""

    def __init__(self, energy, *, method, max_iter, tol, n_pieces, step_size, lipschitz):
        self.energy = energy
        self.options = dict(method=method, max_iter=max_iter, tol=tol, n_pieces=n_pieces,
                            step_size=step_size, lipschitz=lipschitz)

    def __call__(self, obj, W, P, psi, edges=False):
        theta_v, tables, pwi = obj.potentials(W, P)
        return bethe_project(theta_v, tables, self.energy, batch=obj.design.batch,
                             pw_index=pwi, psi=psi, edge_marginals=edges, **self.options)


class DoublyStochastic:
    """Algorithm 3: per mini-batch of ``batch_size`` samples, one Bethe
    projection and one AdaGrad step on ``V`` (and ``w`` with ``fit_theta``).

    Parameters
    ----------
    design : Design
        The training data.
    Phi : ndarray of shape (n_samples, n_psi_features)
    V : ndarray of shape (n_terms, n_psi_features)
        Initial energy weights.
    w : ndarray
        The CRF's flat weights.
    project : BetheProjector
    rng : RandomState
        Draws the mini-batch partition once, and their order per epoch.
    """

    def __init__(self, design, Phi, V, w, *, C, C_energy, learning_rate, batch_size, fit_theta,
                 project, rng):
        S = design.batch.n_samples
        self.parts = [(idx, CRFObjective(design.take(idx), C))
                      for idx in random_blocks(S, batch_size, rng)]
        self.S, self.Phi, self.V, self.w = S, Phi, V, w
        self.C, self.C_energy, self.lr = C, C_energy, learning_rate
        self.fit_theta, self.project, self.rng = bool(fit_theta), project, rng
        self.GV = np.full_like(V, 1e-8)
        self.Gw = np.full_like(w, 1e-8)

    def epoch(self):
        # projections and the energy's products alternate: n_threads keeps BLAS's idle
        # threads off the oracle's cores (the enclosing fit's thread count is kept)
        with n_threads(None):
            self._epoch()

    def _epoch(self):
        energy = self.project.energy
        V, w = self.V, self.w
        for b in self.rng.permutation(len(self.parts)):
            idx, sobj = self.parts[b]
            scale = self.S / idx.size
            W, P = sobj.split(w)
            PhiB = self.Phi[idx]
            psi_raw = PhiB @ V.T
            proj = self.project(sobj, W, P, np.maximum(psi_raw, 0.0),
                                edges=self.fit_theta or energy.uses_edges)
            sub = sobj.design
            node = proj.node_marginals
            d_node = -node
            d_node[np.arange(node.shape[0]), sub.y] += 1.0
            d_edge = None
            if energy.uses_edges:
                d_edge = edge_truth(sub, proj.edge_marginals.shape) - proj.edge_marginals
            # ascent direction of sum log Q in psi: -cross(mu, S(y) - mu), zero where
            # psi was clipped (the energy projected on: with n_pieces each sample's
            # chosen piece)
            gpsi = -proj.energy.cross(node, proj.edge_marginals, sub.batch, d_node, d_edge)
            gpsi *= psi_raw > 0
            gV = self.C_energy * scale * (gpsi.T @ PhiB) - V
            self.GV += gV * gV
            V = V + self.lr * gV / np.sqrt(self.GV)
            if self.fit_theta:
                gW = sobj.grad_W(-d_node)
                full = proj.edge_marginals
                gP = sobj.edge_residual_grad(sobj.sum_per_table(full) if sobj.tied else full)
                g = np.concatenate([self.C * scale * gW.ravel(),
                                    self.C * scale * gP.ravel()]) + w
                self.Gw += g * g
                w = w - self.lr * g / np.sqrt(self.Gw)
        self.V, self.w = V, w


class Alternating:
    """Algorithm 2: project every sample, then fit ``V`` (and ``w``) by L-BFGS
    on the :class:`Surrogate` with the projections fixed; one outer iteration
    per :meth:`epoch`."""

    def __init__(self, obj, Phi, V, w, *, C, C_energy, fit_theta, project):
        if project.energy.uses_edges:
            raise ValueError("learning='alternating' supports energies on node marginals "
                             "only; use learning='stochastic' for an energy with A_edge")
        self.obj, self.Phi, self.V, self.w = obj, Phi, V, w
        self.C, self.C_energy, self.fit_theta, self.project = C, C_energy, fit_theta, project

    def epoch(self):
        # the projection and the surrogate alternate the CRF's oracle and the energy's
        # products: see the other epoch
        with n_threads(None):
            W, P = self.obj.split(self.w)
            proj = self.project(self.obj, W, P, psi_of(self.V, self.Phi))
            sur = Surrogate(self.obj, self.project.energy, proj, self.Phi, C=self.C,
                            C_energy=self.C_energy, fit_theta=self.fit_theta, w=self.w)
            x, _, _ = fit_crf_lbfgs(sur, sur.pack(self.V, self.w), 30, 1e-9, memory=10,
                                    history_dtype=np.float64)
        self.V, self.w = sur.unpack(x)


class Surrogate:
    """Algorithm 2's M-step objective with the projections ``mu_i`` fixed:
    ``C sum_i -log Q(y_i; theta - grad L_psi(mu_i)) + ||w||^2 / 2 [theta] +
    ||V||^2 / (2 C_e / C)`` in the energy weights ``V`` (and ``w``).

    At fixed ``mu_i`` the energy's gradient ``sum_j psi_ij grad l_j(mu_i)`` is
    linear in ``psi``, and the derivative of ``-log Q`` in ``psi_ij`` is
    ``grad l_j(mu_i) . (S(y_i) - m_i)`` (``m_i`` the marginals of ``Q``): both
    are the energy's :meth:`~skstruct.energies.Energy.linearize` at ``mu_i``,
    so the objective keeps no per-term array (``O(n_nodes K)`` memory, plus
    what the energy caches, ``O(n_samples n_terms)`` for
    :class:`~skstruct.energies.LinearMeasurements`).

    Parameters
    ----------
    obj : CRFObjective
    energy : Energy
        The fitted energy (its ``n_terms`` sizes ``V``).
    proj : BetheProjection
        The projections ``mu_i`` (and the energy, or its chosen pieces).
    Phi : ndarray of shape (n_samples, n_psi_features)
    C, C_energy : float
    fit_theta : bool
        Optimise ``w`` too (else it stays at ``w``).
    w : ndarray
        The CRF's flat weights.
    """

    def __init__(self, obj, energy, proj, Phi, *, C, C_energy, fit_theta, w):
        self.obj, self.proj, self.Phi = obj, proj, Phi
        self.C, self.Ce = C, C_energy
        self.fit_theta = bool(fit_theta)
        self.V_shape = (energy.n_terms, Phi.shape[1])
        self.w_fixed = w.copy()
        self.linear = proj.energy.linearize(proj.node_marginals, proj.edge_marginals,
                                            obj.design.batch)
        # with w fixed the CRF's potentials are too: computed once, not per evaluation
        self.theta = None if self.fit_theta else obj.potentials(*obj.split(self.w_fixed))

    def pack(self, V, w):
        return np.concatenate([V.ravel(), w]) if self.fit_theta else V.ravel().copy()

    def unpack(self, x):
        nV = int(np.prod(self.V_shape))
        V = x[:nV].reshape(self.V_shape)
        w = x[nV:] if self.fit_theta else self.w_fixed
        return V, w

    def value_grad(self, x):
        obj = self.obj
        V, w = self.unpack(x)
        psi_raw = self.Phi @ V.T
        psi = np.maximum(psi_raw, 0.0)
        b = obj.design.batch
        offset = self.linear.grad(psi)[0]
        if self.fit_theta:
            obj.offset = offset
            try:
                val, gw, node = obj.value_grad_marginals(w)
            finally:
                obj.offset = None
        else:
            theta_v, tables, pwi = self.theta
            theta_v = theta_v - offset
            # the value and the gradient in psi read node marginals only
            node, _, logz = marginals_batch(b, theta_v, tables, pwi, edge_marginals=None)
            val = obj.C * float(np.sum(logz - obj.truth_scores(theta_v, tables, pwi)))
        # d(-log Q_i)/d psi_ij = grad l_j(mu_i) . (S(y_i) - m_i), zero where psi is clipped
        d = -node
        d[np.arange(b.n_nodes), obj.design.y] += 1.0
        gpsi = self.linear.cross(d) * (psi_raw > 0)
        r = self.C / self.Ce
        gV = obj.C * (gpsi.T @ self.Phi) + r * V
        val += 0.5 * r * float(np.sum(V * V))
        if self.fit_theta:
            return val, np.concatenate([gV.ravel(), gw])
        return val, gV.ravel()
