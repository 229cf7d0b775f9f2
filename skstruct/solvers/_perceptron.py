"""The structured perceptron (Collins, EMNLP 2002), averaged, one epoch per call.

At each sample the model decodes ``y_hat = argmax_y w . phi(x, y)`` (with the
Hamming loss added for the loss-augmented variant) and, where ``y_hat`` differs
from the truth, steps ``w += phi(x, y) - phi(x, y_hat)``.  The average of the
iterates after every sample is kept lazily (Daume's trick): ``u`` accumulates
``t * step`` at the step that follows ``t`` others, and after ``T`` steps the
average is ``w - u / T``, so a step costs only the features of its sample.

The batched kernel uses the structured SVM's corner oracle (margin rescaling,
with zero loss weights for the plain perceptron): its corner ``phi(x, y) -
phi(x, y_hat)`` is exactly the perceptron's step, on every built-in model and
decoder.  :class:`ProtocolPerceptron` runs the same arithmetic through the model
protocol, one sample at a time.
"""

from typing import NamedTuple

import numpy as np

from .._core._jit import jit
from ..models._kernels import symmetric_into
from ..models._oracle import make_work, oracle_functions
from ._design_solver import DesignSolver
from ._protocol import ProtocolSolver


class State(NamedTuple):
    """The perceptron's counter, a 0-d array the kernel updates in place."""

    count: np.ndarray      # steps (samples visited) so far


class Average(NamedTuple):
    """The iterate and the accumulators of its lazy average."""

    W: np.ndarray
    P: np.ndarray
    Wu: np.ndarray
    Pu: np.ndarray


@jit
def perceptron_epoch(D, surrogate, order, it, state, sc, orc, dec, max_nodes, max_edges, mistakes,
                     Ps):
    """One epoch over ``order``; ``mistakes[s]`` is 1 where sample ``s`` was
    decoded wrongly (and stepped).  Returns the number of wrongly decoded nodes.
    ``it`` is the :class:`Average`, ``state`` the :class:`State`, ``sc`` the oracle's
    :class:`~skstruct.models._scratch.OracleScratch`, ``orc, dec`` the oracle and its
    decoders (:func:`~skstruct.models._oracle.oracle_functions`); ``Ps`` (shaped as ``P``)
    receives the tables of an undirected design."""
    W, P, Wu, Pu = it.W, it.P, it.Wu, it.Pu
    U, lab, Sc = sc.U, sc.lab, sc.Sc
    K = U.shape[1]
    Kp = W.shape[1]
    xdata, xind, xptr = D.xdata, D.xind, D.xptr
    edata, eind, eptr = D.edata, D.eind, D.eptr
    work = make_work(K, max_nodes, max_edges, sc.belief, sc.up)
    wrong = 0.0
    for i in range(order.shape[0]):
        s = order[i]
        c = state.count[()]
        if D.sym:
            symmetric_into(P, 1.0, Ps)
            Pc = Ps
        else:
            Pc = P
        _, _, n_trip = orc(D, s, surrogate, sc.sur_slack, sc.sur_poslearn, sc.sur_lp, 1.0, W,
                           Pc, sc, work, dec)
        n_wrong = 0
        for v in range(D.node_offsets[s], D.node_offsets[s + 1]):
            if lab[v] != D.y[v]:
                n_wrong += 1
        mistakes[s] = 1 if n_wrong > 0 else 0
        wrong += n_wrong
        if n_wrong > 0:
            for v in range(D.node_offsets[s], D.node_offsets[s + 1]):
                if lab[v] == D.y[v]:
                    continue            # its corner row is zero
                o = D.xoff[v]
                r = D.xrow[v]
                for p in range(xptr[r], xptr[r + 1]):
                    f = xind[p] + o
                    x = xdata[p]
                    for k in range(Kp):
                        d = x * Sc[v, k]
                        W[f, k] += d
                        Wu[f, k] += c * d
            for q in range(n_trip):
                e = work.trip_edge[q]
                ta = work.trip_a[q]
                tb = work.trip_b[q]
                wq = work.trip_w[q]
                for p in range(eptr[e], eptr[e + 1]):
                    d = wq * edata[p]
                    P[eind[p], ta, tb] += d
                    Pu[eind[p], ta, tb] += c * d
        state.count[()] = c + 1.0
    return wrong


class Perceptron(DesignSolver):
    """The averaged structured perceptron on a built-in model's design.

    The state: the weights ``W, P``, the accumulators ``Wu, Pu`` of the lazy
    average and the step counter.  ``loss_weight`` zero gives Collins'
    perceptron; Hamming weights give the loss-augmented ("margin") variant.
    """

    STATE = DesignSolver.STATE + ("Wu", "Pu", "state")

    def __init__(self, design, loss_weight, **kwargs):
        super().__init__(design, loss_weight, lam=1.0, surrogate="margin", **kwargs)
        self.Wu = np.zeros_like(self.W)
        self.Pu = np.zeros_like(self.P)
        self.Ps = np.zeros_like(self.P)
        self.state = State(count=np.zeros(()))
        self.mistakes = np.zeros(self.n_samples, np.int64)

    def run_pass(self, order):
        """One epoch over ``order``; returns ``(samples stepped, nodes decoded wrongly)``."""
        d = self.design
        it = Average(W=self.W, P=self.P, Wu=self.Wu, Pu=self.Pu)
        wrong = perceptron_epoch(self.D, self.code, order, it, self.state, self.scratch,
                                 *oracle_functions(self.D, self.scratch, self.W, self.P),
                                 d.max_nodes, d.max_edges, self.mistakes, self.Ps)
        return int(self.mistakes[order].sum()), int(wrong)

    def weights(self):
        """The average of the iterates, or the last iterate."""
        c = float(self.state.count)
        if self.averaging and c > 0.0:
            return self.W - self.Wu / c, self.P - self.Pu / c
        return self.W.copy(), self.P.copy()


class ProtocolPerceptron(ProtocolSolver):
    """The averaged structured perceptron through the model protocol: the
    model's ``inference`` (or ``loss_augmented_inference`` for the
    loss-augmented variant) and ``joint_feature``, one sample at a time."""

    STATE = ProtocolSolver.STATE + ("u", "count")

    def __init__(self, model, X, y, *, loss_augmented, **kwargs):
        super().__init__(model, X, y, lam=1.0, **kwargs)
        self.loss_augmented = bool(loss_augmented)
        self.u = np.zeros_like(self.w)
        self.count = 0.0

    def key(self):
        return super().key() + (self.loss_augmented,)

    def run_pass(self, order):
        """One epoch over ``order``; returns ``(samples stepped, their total loss)``."""
        stepped, total = 0, 0.0
        for s in order:
            x, y = self.X[s], self.y[s]
            if self.loss_augmented:
                y_hat = self.model.loss_augmented_inference(x, y, self.w)
            else:
                y_hat = self.model.inference(x, self.w)
            loss = float(self.model.loss(y, y_hat))
            if not np.isfinite(loss) or loss < 0:
                raise ValueError(f"sample {s}: the model's loss is {loss!r}; it must be a "
                                 "finite number >= 0")
            if loss > 0:
                step = self.phi_true[s] - self._phi(x, y_hat)
                self.w += step
                self.u += self.count * step
                stepped += 1
                total += loss
            self.count += 1.0
        return stepped, total

    def weights(self):
        if self.averaging and self.count > 0.0:
            return self.w - self.u / self.count
        return self.w.copy()
