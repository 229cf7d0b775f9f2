"""Tiny fits that exercise every compiled path: ``python -m skstruct compile``.

Each target is one estimator, one solver and one kind of model (chain, tree, loopy
graph decoded by TRW-S, graph cut on supermodular tables, edge features,
multi-label) fitted for a couple of iterations on a few random samples, then used
to predict.  Running a target compiles (or loads from the disk cache) every kernel
such a fit of any size needs, since the kernels are specialised on the types of
their arguments, never on the sizes.

The targets import only skstruct's public names, so a benchmark can run them
against another revision of the package.
"""

import warnings
from collections.abc import Callable
from typing import NamedTuple

import numpy as np

KINDS = ("chain", "tree", "loopy", "graphcut", "edge_features", "multilabel")
SSVM_SOLVERS = ("bcfw", "subgradient", "one_slack", "extragradient", "n_slack", "fw")
CRF_SOLVERS = ("lbfgs", "sgd", "l2sgd", "perceptron", "pa", "arow")


class Target(NamedTuple):
    """One warm-up fit: ``run()`` fits and predicts."""

    estimator: str
    solver: str
    kind: str
    run: Callable[[], object]

    @property
    def name(self):
        return f"{self.estimator}/{self.solver}/{self.kind}"


# ---------------------------------------------------------------------------- data
def _classes(rng, n, K):
    """``n`` labels in ``0 .. K-1``, every label present."""
    y = rng.integers(0, K, size=n)
    y[:K] = np.arange(K)
    return rng.permutation(y)


def _chain_data(K=3):
    rng = np.random.default_rng(0)
    lengths = (3, 4, 5, 3)
    y = np.split(_classes(rng, sum(lengths), K), np.cumsum(lengths)[:-1])
    X = [rng.normal(size=(n, 4)) + yy[:, None] for n, yy in zip(lengths, y)]
    return X, y


def _graph_data(edges, n_nodes, K, edge_features=0, n_samples=4):
    rng = np.random.default_rng(1)
    X, y = [], []
    for _ in range(n_samples):
        yy = _classes(rng, n_nodes, K)
        x = rng.normal(size=(n_nodes, 4)) + yy[:, None]
        if edge_features:
            # non-negative, so that the same samples suit supermodular tables
            X.append((x, edges, rng.uniform(size=(len(edges), edge_features))))
        else:
            X.append((x, edges))
        y.append(yy)
    return X, y


# a branching tree: not a chain, so the tree decoder (not Viterbi) runs
_TREE = np.array([[0, 1], [0, 2], [0, 3], [3, 4], [3, 5]])


def _grid(side):
    idx = np.arange(side * side).reshape(side, side)
    return np.concatenate([np.stack([idx[:, :-1].ravel(), idx[:, 1:].ravel()], 1),
                           np.stack([idx[:-1].ravel(), idx[1:].ravel()], 1)])


def _data(kind):
    """``(X, y, model)`` of a kind (``model`` None for the estimator's default)."""
    from skstruct.models import GraphModel, MultiLabelModel

    if kind == "chain":
        return (*_chain_data(), None)
    if kind == "tree":
        return (*_graph_data(_TREE, 6, 3), GraphModel(inference_method="tree"))
    if kind == "loopy":
        # 3 ** 9 labellings: too many to enumerate, so TRW-S
        return (*_graph_data(_grid(3), 9, 3), GraphModel(inference_method="trws"))
    if kind == "graphcut":
        return (*_graph_data(_grid(3), 9, 2),
                GraphModel(submodular=True, inference_method="graphcut"))
    if kind == "edge_features":
        return (*_graph_data(_TREE, 6, 3, edge_features=2), GraphModel())
    if kind == "multilabel":
        rng = np.random.default_rng(2)
        X = rng.normal(size=(8, 4))
        Y = (X[:, :4] + 0.5 * rng.normal(size=(8, 4)) > 0).astype(np.int64)
        Y[0], Y[1] = 0, 1
        return X, Y, MultiLabelModel(edges="full")
    raise ValueError(f"unknown kind of model {kind!r}")


# ------------------------------------------------------------------------ targets
def _fit_predict(make, kind, latent=False):
    def run():
        X, y, model = _data(kind)
        if latent:
            from skstruct.models import HiddenStatesModel

            model = HiddenStatesModel(model, n_states_per_label=2)
        est = make(model)
        with warnings.catch_warnings():
            # two iterations do not converge, by design
            warnings.simplefilter("ignore")
            est.fit(X, y)
        return est.predict(X[:2])
    return run


def _ssvm(solver, kind):
    from skstruct import StructuredSVM

    def make(model):
        return StructuredSVM(model="auto" if model is None else model, solver=solver,
                             max_iter=2, random_state=0)
    return _fit_predict(make, kind)


def _perceptron(kind):
    from skstruct import StructuredPerceptron

    def make(model):
        return StructuredPerceptron(model="auto" if model is None else model, max_iter=2,
                                    random_state=0)
    return _fit_predict(make, kind)


def _crf(solver, kind):
    from skstruct import CRF
    from skstruct.models import MultiLabelModel

    def make(model):
        if isinstance(model, MultiLabelModel):
            # the likelihood needs exact marginals: a tree over the labels
            model = MultiLabelModel(edges="tree")
        return CRF(model="auto" if model is None else model, solver=solver, max_iter=2,
                   random_state=0)
    return _fit_predict(make, kind)


def _nonlocal(kind):
    from skstruct import NonLocalCRF
    from skstruct.energies import NearestStatistic

    def make(model):
        return NonLocalCRF(model="auto" if model is None else model, max_iter=2,
                           energy=NearestStatistic("marginals"), energy_max_iter=1,
                           n_components=8, random_state=0)
    return _fit_predict(make, kind)


def _approx(solver, kind):
    from skstruct import ApproxStructuredPredictor

    def make(model):
        return ApproxStructuredPredictor(model="auto" if model is None else model,
                                         solver=solver, max_iter=2, random_state=0)
    return _fit_predict(make, kind)


def _latent(solver, kind):
    from skstruct import LatentStructuredSVM, StructuredSVM

    def make(model):
        svm = StructuredSVM(model=model, solver=solver, max_iter=2, random_state=0)
        return LatentStructuredSVM(estimator=svm, max_iter=1, random_state=0)
    return _fit_predict(make, kind, latent=True)


def _valid_ssvm(solver, kind):
    # the dual extragradient's projections need forests with a pairwise table per edge
    # type; one-slack's QP does not keep tables supermodular
    if solver == "extragradient":
        return kind in ("chain", "tree")
    if solver == "one_slack":
        return kind != "graphcut"
    return True


def _targets():
    out = []
    for solver in SSVM_SOLVERS:
        for kind in KINDS:
            if _valid_ssvm(solver, kind):
                out.append(Target("StructuredSVM", solver, kind, _ssvm(solver, kind)))
    for kind in KINDS:
        out.append(Target("StructuredPerceptron", "perceptron", kind, _perceptron(kind)))
    # the likelihood needs exact marginals: chains and trees (also with edge features, and
    # a tree over the labels); CRFsuite's online trainers are for chains
    for kind in ("chain", "tree", "edge_features", "multilabel"):
        out.append(Target("CRF", "lbfgs", kind, _crf("lbfgs", kind)))
    for solver in CRF_SOLVERS[1:]:
        out.append(Target("CRF", solver, "chain", _crf(solver, "chain")))
    out.append(Target("NonLocalCRF", "lbfgs", "chain", _nonlocal("chain")))
    for kind in ("chain", "tree", "loopy", "edge_features", "multilabel"):
        out.append(Target("ApproxStructuredPredictor", "lbfgs", kind, _approx("lbfgs", kind)))
    out.append(Target("ApproxStructuredPredictor", "gradient", "loopy",
                      _approx("gradient", "loopy")))
    for solver in ("bcfw", "subgradient", "one_slack"):
        out.append(Target("LatentStructuredSVM", solver, "chain", _latent(solver, "chain")))
    out.append(Target("LatentStructuredSVM", "bcfw", "loopy", _latent("bcfw", "loopy")))
    return {t.name: t for t in out}


TARGETS = _targets()


def select(names):
    """The targets named by ``names`` (all for none), in table order.

    A name is a target's full name (``"StructuredSVM/one_slack/loopy"``) or any of its
    parts and their combinations (``"CRF"``, ``"loopy"``, ``"StructuredSVM/bcfw"``,
    ``"one_slack/multilabel"``), matched without regard to case.
    """
    if not names:
        return list(TARGETS.values())
    chosen = []
    for name in names:
        parts = [p for p in name.lower().split("/") if p]
        hits = [t for t in TARGETS.values()
                if parts and all(p in (t.estimator.lower(), t.solver, t.kind) for p in parts)]
        if not hits:
            raise ValueError(f"no compile target matches {name!r}; see --list")
        chosen += [t for t in hits if t not in chosen]
    return sorted(chosen, key=list(TARGETS.values()).index)
