"""sklearn-crfsuite's ``CRF`` estimator, trained and decoded by :class:`skstruct.CRF`."""

import os
import pickle
from collections import namedtuple
from fractions import Fraction
from numbers import Number

import numpy as np
import scipy.sparse as sp
from sklearn.base import BaseEstimator

from skstruct._crf import CRF as _SkCRF

__all__ = ["CRF", "Tagger", "TaggerInfo", "TrainingLog", "LabelScore"]

_ALGORITHMS = ("lbfgs", "l2sgd", "ap", "pa", "arow")
_LINESEARCH = ("MoreThuente", "Backtracking", "StrongBacktracking")
_SOLVER = {"lbfgs": "lbfgs", "l2sgd": "l2sgd", "ap": "perceptron", "pa": "pa",
           "arow": "arow"}

# CRFsuite's defaults (python-crfsuite's ``Trainer(algorithm).get_params()``), per
# algorithm; an algorithm accepts only its own parameters, as CRFsuite does
_DEFAULTS = {
    "lbfgs": {"c1": 0.0, "c2": 1.0, "max_iterations": 2147483647, "num_memories": 6,
              "epsilon": 1e-5, "period": 10, "delta": 1e-5, "linesearch": "MoreThuente",
              "max_linesearch": 20},
    "l2sgd": {"c2": 1.0, "max_iterations": 1000, "period": 10, "delta": 1e-6,
              "calibration_eta": 0.1, "calibration_rate": 2.0, "calibration_samples": 1000,
              "calibration_candidates": 10, "calibration_max_trials": 20},
    "ap": {"max_iterations": 100, "epsilon": 0.0},
    "pa": {"pa_type": 1, "c": 1.0, "error_sensitive": True, "averaging": True,
           "max_iterations": 100, "epsilon": 0.0},
    "arow": {"variance": 1.0, "gamma": 1.0, "max_iterations": 100, "epsilon": 0.0},
}

# C when c1 = c2 = 0 (no regularisation): large enough that the penalty is negligible,
# small enough that L-BFGS's single-precision correction pairs do not overflow
_UNREGULARISED_C = 1e12

_MAGIC = "skstruct.compat.sklearn_crfsuite"

LabelScore = namedtuple("LabelScore", "match model ref precision recall f1")
LabelScore.__doc__ = """Scores of one label on the held-out data: tokens tagged with it
right (``match``), tagged with it (``model``), truly of it (``ref``), and the precision,
recall and F1 they give."""


# ------------------------------------------------------------------ features
def _key(k, where):
    if isinstance(k, bytes):
        return k.decode("utf-8")
    if isinstance(k, str):
        return k
    raise ValueError(f"{where}: feature names must be strings, got {k!r}")


def _add(out, prefix, v, where):
    """Add the features of value ``v`` named ``prefix`` to ``out``."""
    if isinstance(v, (bool, np.bool_)):
        out[prefix] = 1.0 if v else 0.0
    elif isinstance(v, Number) and not isinstance(v, complex):
        out[prefix] = float(v)
    elif isinstance(v, (str, bytes)):
        out[f"{prefix}:{_key(v, where)}"] = 1.0
    elif isinstance(v, dict):
        for k, sub in v.items():
            _add(out, f"{prefix}:{_key(k, where)}", sub, where)
    elif isinstance(v, (list, tuple, set, frozenset)):
        for s in v:
            if not isinstance(s, (str, bytes)):
                raise ValueError(f"{where}: the list of feature {prefix!r} must hold "
                                 f"strings, got {s!r}")
            out[f"{prefix}:{_key(s, where)}"] = 1.0
    else:
        raise ValueError(f"{where}: feature {prefix!r} has a value of type "
                         f"{type(v).__name__}; expected a number, a bool, a string, a dict "
                         "or a list of strings")


def _item(item, where):
    """A token's features as python-crfsuite reads them: ``{attribute: value}``."""
    out = {}
    if isinstance(item, dict):
        for k, v in item.items():
            _add(out, _key(k, where), v, where)
    elif isinstance(item, (list, tuple, set, frozenset)):
        for s in item:
            if not isinstance(s, (str, bytes)):
                raise ValueError(f"{where}: a token given as a list holds feature names "
                                 f"(strings), got {s!r}")
            out[_key(s, where)] = 1.0
    else:
        raise ValueError(f"{where}: a token must be a dict of features or a list of "
                         f"feature names, got {type(item).__name__}")
    return out


def _sequences(X, name="X"):
    """``X`` as lists of per-token ``{attribute: value}`` dicts."""
    if isinstance(X, (str, bytes, dict)) or not hasattr(X, "__len__"):
        raise ValueError(f"{name} must be a list of sequences, each a list of tokens")
    out = []
    for i, xseq in enumerate(X):
        if isinstance(xseq, (str, bytes, dict)) or not hasattr(xseq, "__iter__"):
            raise ValueError(f"{name}[{i}]: a sequence must be a list of tokens, got "
                             f"{type(xseq).__name__}")
        out.append([_item(item, f"{name}[{i}][{t}]") for t, item in enumerate(xseq)])
    return out


def _labels(y, X, name="y"):
    """``y`` as lists of str, checked against the sequences of ``X``."""
    if isinstance(y, (str, bytes)) or not hasattr(y, "__len__") or len(y) != len(X):
        n = len(y) if hasattr(y, "__len__") else "no"
        raise ValueError(f"{name} must hold one label sequence per sequence of X: "
                         f"{len(X)} sequences, {n} label sequences")
    out = []
    for i, (yseq, xseq) in enumerate(zip(y, X)):
        yseq = list(yseq)
        if len(yseq) != len(xseq):
            raise ValueError(f"{name}[{i}] has {len(yseq)} labels for {len(xseq)} tokens")
        for t, label in enumerate(yseq):
            if not isinstance(label, str):
                raise ValueError(f"{name}[{i}][{t}]: labels must be strings, got {label!r}")
        if not yseq:
            raise ValueError(f"{name}[{i}]: a training sequence must have tokens")
        out.append(yseq)
    return out


def _matrix(items, index):
    """The (n_tokens, n_attributes) CSR matrix of a sequence; unknown attributes are
    left out, as CRFsuite ignores them."""
    indptr, cols, vals = [0], [], []
    for feats in items:
        for a, v in feats.items():
            j = index.get(a)
            if j is not None:
                cols.append(j)
                vals.append(v)
        indptr.append(len(cols))
    return sp.csr_matrix((np.asarray(vals, np.float64), np.asarray(cols, np.int64),
                          np.asarray(indptr, np.int64)), shape=(len(items), len(index)))


# ---------------------------------------------------------------- the model
class _Model:
    """A trained model: the attributes (features) by column, the labels in CRFsuite's
    order (first seen in training), and the fitted :class:`skstruct.CRF`."""

    def __init__(self, attributes, labels, crf, log=None):
        self.attributes = list(attributes)
        self.index = {a: j for j, a in enumerate(self.attributes)}
        self.labels = list(labels)
        self.crf = crf
        self.log = log

    def __getstate__(self):
        # what a saved model holds: the weights that are not 0 (CRFsuite's model file
        # keeps only those too), no index (rebuilt), no state for continuing training
        state = self.crf.__getstate__()
        state.pop("_online", None)
        coef = state.pop("coef_")
        nz = np.flatnonzero(coef)
        return {"attributes": self.attributes, "labels": self.labels, "log": self.log,
                "crf_class": type(self.crf), "crf_state": state,
                "coef": (coef.shape[0], nz.astype(np.int64), coef[nz])}

    def __setstate__(self, state):
        n, nz, values = state["coef"]
        coef = np.zeros(n)
        coef[nz] = values
        crf = state["crf_class"].__new__(state["crf_class"])
        crf.__setstate__(dict(state["crf_state"], coef_=coef))
        self.__init__(state["attributes"], state["labels"], crf, state["log"])

    def matrices(self, X, name="X"):
        return [_matrix(items, self.index) for items in _sequences(X, name)]

    def predict(self, mats):
        return [[str(v) for v in p] for p in self.crf.predict(mats)]

    def marginals(self, mats):
        names = [str(c) for c in self.crf.classes_]
        return [[dict(zip(names, row.tolist())) for row in m]
                for m in self.crf.predict_marginals(mats)]

    def tables(self):
        """Node weights ``(n_attributes, n_labels)`` and transitions ``(n_labels,
        n_labels)``, labels in the order of ``crf.classes_``."""
        return self.crf.unary_coef_.T, self.crf.pairwise_coef_[0]

    def state_features(self):
        W, _ = self.tables()
        classes = [str(c) for c in self.crf.classes_]
        rows, cols = np.nonzero(W)
        return {(self.attributes[r], classes[c]): float(W[r, c]) for r, c in zip(rows, cols)}

    def transition_features(self):
        _, P = self.tables()
        classes = [str(c) for c in self.crf.classes_]
        rows, cols = np.nonzero(P)
        return {(classes[a], classes[b]): float(P[a, b]) for a, b in zip(rows, cols)}


def _crf_from_weights(attributes, labels, state_features, transitions):
    """A fitted :class:`skstruct.CRF` with the given weights (CRFsuite's)."""
    F, K = len(attributes), len(labels)
    crf = _SkCRF(feature_pairs="all", max_iter=1)
    # one single-token sequence per label and no non-zero feature: the fit learns
    # nothing (zero gradient) and sets up the labels, the feature count and the layout
    X = [sp.csr_matrix((1, F)) for _ in labels]
    crf.fit(X, [np.array([label]) for label in labels])
    col = {str(c): k for k, c in enumerate(crf.classes_)}
    attr = {a: j for j, a in enumerate(attributes)}
    W = np.zeros((F, K))
    for (a, label), w in state_features.items():
        W[attr[a], col[label]] = w
    P = np.zeros((K, K))
    for (a, b), w in transitions.items():
        P[col[a], col[b]] = w
    # coef_ is the node weights (F, K) row-major then the transition table; the
    # tables the CRF decodes with are views of it
    crf.coef_[:] = np.concatenate([W.ravel(), P.ravel()])
    return crf


def _load_crfsuite(path):
    try:
        import pycrfsuite
    except ImportError:
        raise ValueError(f"{path} is a CRFsuite model: reading it needs python-crfsuite "
                         "(pip install python-crfsuite)") from None
    tagger = pycrfsuite.Tagger()
    tagger.open(path)
    try:
        info = tagger.info()
    finally:
        tagger.close()
    labels = sorted(info.labels, key=lambda a: int(info.labels[a]))
    attributes = sorted(info.attributes, key=lambda a: int(info.attributes[a]))
    crf = _crf_from_weights(attributes, labels, info.state_features, info.transitions)
    return _Model(attributes, labels, crf)


def _load(path):
    with open(path, "rb") as f:
        head = f.read(4)
    if head == b"lCRF":
        return _load_crfsuite(path)
    with open(path, "rb") as f:
        try:
            state = pickle.load(f)
        except Exception as e:
            raise ValueError(f"{path} is neither a model saved by "
                             f"skstruct.compat.sklearn_crfsuite.CRF nor a CRFsuite model: "
                             f"{e}") from None
    if not (isinstance(state, dict) and state.get("format") == _MAGIC):
        raise ValueError(f"{path} is not a model saved by "
                         "skstruct.compat.sklearn_crfsuite.CRF")
    return state["model"]


# ------------------------------------------------------ tagger and training log
class TaggerInfo:
    """What a model holds, as python-crfsuite's ``Tagger.info()`` gives it.

    Attributes
    ----------
    header : dict
    labels : dict
        ``{label: id}``, ids as strings.
    attributes : dict
        ``{attribute: id}``, ids as strings.
    transitions : dict
        ``{(label_from, label_to): weight}``.
    state_features : dict
        ``{(attribute, label): weight}``.
    """

    def __init__(self, model):
        self.header = {"type": "skstruct.CRF", "num_labels": str(len(model.labels)),
                       "num_attrs": str(len(model.attributes))}
        self.labels = {label: str(i) for i, label in enumerate(model.labels)}
        self.attributes = {a: str(i) for i, a in enumerate(model.attributes)}
        self.transitions = model.transition_features()
        self.state_features = model.state_features()


class Tagger:
    """The reading methods of python-crfsuite's ``Tagger``, over the fitted model.

    :meth:`set` (or :meth:`tag` with a sequence) sets the sequence that
    :meth:`probability` and :meth:`marginal` then read.
    """

    def __init__(self, model):
        self._model = model
        self._x = None
        self._marg = None

    def labels(self):
        """The labels, in the model's order."""
        return list(self._model.labels)

    def info(self):
        """The model's labels, attributes and weights (a :class:`TaggerInfo`)."""
        return TaggerInfo(self._model)

    def set(self, xseq):
        """Set the sequence (a list of token features) to tag."""
        self._x = self._model.matrices([xseq], "xseq")[0]
        self._marg = None

    def _current(self):
        if self._x is None:
            raise ValueError("no sequence set: call set(xseq) or tag(xseq) first")
        return self._x

    def tag(self, xseq=None):
        """The most probable labels of ``xseq`` (or of the sequence set last)."""
        if xseq is not None:
            self.set(xseq)
        return self._model.predict([self._current()])[0]

    def _log_partition(self, unary, P):
        alpha = unary[0].copy()
        for t in range(1, unary.shape[0]):
            s = alpha[:, None] + P
            m = s.max(axis=0)
            alpha = m + np.log(np.exp(s - m).sum(axis=0)) + unary[t]
        m = alpha.max()
        return m + np.log(np.exp(alpha - m).sum())

    def probability(self, yseq):
        """The probability of the labels ``yseq`` for the sequence set."""
        x = self._current()
        if len(yseq) != x.shape[0]:
            raise ValueError(f"yseq has {len(yseq)} labels for {x.shape[0]} tokens")
        W, P = self._model.tables()
        col = {str(c): k for k, c in enumerate(self._model.crf.classes_)}
        try:
            y = np.array([col[label] for label in yseq], np.int64)
        except KeyError as e:
            raise ValueError(f"unknown label {e.args[0]!r}") from None
        if not y.size:
            return 1.0
        unary = np.asarray(x @ W)
        score = unary[np.arange(y.size), y].sum() + P[y[:-1], y[1:]].sum()
        return float(np.exp(score - self._log_partition(unary, P)))

    def marginal(self, y, pos):
        """The marginal probability of label ``y`` at position ``pos`` of the
        sequence set."""
        x = self._current()
        if self._marg is None:
            self._marg = self._model.marginals([x])[0]
        if not 0 <= pos < len(self._marg):
            raise ValueError(f"position {pos} is outside the sequence of {len(self._marg)} "
                             "tokens")
        if y not in self._marg[pos]:
            raise ValueError(f"unknown label {y!r}")
        return self._marg[pos][y]


class TrainingLog:
    """The record of a training, as sklearn-crfsuite's ``training_log_`` offers it.

    Attributes
    ----------
    iterations : list of dict
        One record per iteration (epoch for the online algorithms): ``num`` (from 1),
        ``loss`` (for ``lbfgs`` and ``l2sgd`` CRFsuite's objective, the negative
        log-likelihood plus the penalty; for ``ap``, ``pa`` and ``arow`` the
        algorithm's loss summed over the epoch's sequences), ``time`` (seconds of
        this iteration) and ``scores`` (``{}``).  The last record
        also has ``feature_norm`` and ``active_features`` (non-zero weights) and, when
        ``fit`` had held-out data, its evaluation: ``scores`` (a :class:`LabelScore`
        per label), ``avg_precision``, ``avg_recall``, ``avg_f1`` (means over the
        labels), ``item_accuracy`` (a ``Fraction``) and ``instance_accuracy`` (whole
        sequences), each also as ``..._float``.
    training_seconds : float
    """

    def __init__(self, iterations, training_seconds):
        self.iterations = iterations
        self.training_seconds = training_seconds

    @property
    def last_iteration(self):
        """The last record of :attr:`iterations` (an empty dict if there is none)."""
        return self.iterations[-1] if self.iterations else {}


def _evaluation(y_true, y_pred, labels):
    """CRFsuite's evaluation of predictions on held-out data."""
    flat_t = [label for seq in y_true for label in seq]
    flat_p = [label for seq in y_pred for label in seq]
    scores = {}
    for label in labels:
        match = sum(a == b == label for a, b in zip(flat_t, flat_p))
        model = flat_p.count(label)
        ref = flat_t.count(label)
        p = match / model if model else 0.0
        r = match / ref if ref else 0.0
        f = 2 * p * r / (p + r) if p + r else 0.0
        scores[label] = LabelScore(match, model, ref, p, r, f)
    n = len(scores) or 1
    items = Fraction(sum(a == b for a, b in zip(flat_t, flat_p)), max(len(flat_t), 1))
    seqs = Fraction(sum(list(a) == list(b) for a, b in zip(y_true, y_pred)),
                    max(len(y_true), 1))
    return {"scores": scores,
            "avg_precision": sum(s.precision for s in scores.values()) / n,
            "avg_recall": sum(s.recall for s in scores.values()) / n,
            "avg_f1": sum(s.f1 for s in scores.values()) / n,
            "item_accuracy": items, "item_accuracy_float": float(items),
            "instance_accuracy": seqs, "instance_accuracy_float": float(seqs)}


# ---------------------------------------------------------------- estimator
class CRF(BaseEstimator):
    """sklearn-crfsuite's linear-chain CRF, trained and decoded by :class:`skstruct.CRF`.

    A drop-in replacement for ``sklearn_crfsuite.CRF`` (version 0.5): the same
    constructor, methods and fitted attributes, the same input (for every sentence a
    list of tokens, each a dict of features or a list of feature names) and the same
    output (labels as strings).  The features are turned into a sparse matrix the way
    python-crfsuite reads them: a number or a bool is the value of the attribute of
    its name; a string value ``v`` of key ``k`` is the attribute ``"k:v"`` of value
    1; a nested dict or list under key ``k`` prefixes its attributes with ``"k:"``;
    a token given as a list of strings has each as an attribute of value 1.
    Attributes unseen in training are ignored at prediction.

    Every ``None`` default means CRFsuite's default for the algorithm, written in
    the table below.  As in CRFsuite, a parameter the algorithm does not read (``c1``
    with ``"ap"``, ...) is refused when set.

    Parameters
    ----------
    algorithm : {"lbfgs", "l2sgd", "ap", "pa", "arow"}, default="lbfgs"
    min_freq : float, default=0
    all_possible_states : bool, default=False
    all_possible_transitions : bool, default=False
    c1, c2 : float, default=0 and 1
    max_iterations : int, default: per algorithm
    num_memories : int, default=6
    epsilon : float, default=1e-5 (lbfgs) or 0 (ap, pa, arow)
    period : int, default=10
    delta : float, default=1e-5 (lbfgs) or 1e-6 (l2sgd)
    linesearch : {"MoreThuente", "Backtracking", "StrongBacktracking"}, default="MoreThuente"
    max_linesearch : int, default=20
    calibration_eta, calibration_rate : float, default=0.1 and 2.0
    calibration_samples, calibration_candidates, calibration_max_trials : int, \
default=1000, 10 and 20
    pa_type : {0, 1, 2}, default=1
    c : float, default=1
    error_sensitive, averaging : bool, default=True
    variance, gamma : float, default=1
    verbose : bool, default=False
        Print the objective after every iteration (and the evaluation on the
        held-out data at the end of training).
    model_filename : str, optional
        Where :meth:`fit` saves the model; a ``CRF(model_filename=path)`` that is not
        fitted loads the model from there on first use (see Notes).
    keep_tempfiles : bool, default=False
        No effect (no temporary files are written).
    trainer_cls : None
        Must be None (the training is skstruct's, not a python-crfsuite trainer's).

    Attributes
    ----------
    classes_ : list of str
        The labels, in the order first seen in training.
    tagger_ : Tagger
        python-crfsuite's tagger interface (``labels()``, ``tag(xseq)``,
        ``set(xseq)``, ``probability(yseq)``, ``marginal(y, pos)``, ``info()``) over
        the fitted model.
    size_ : int
        Bytes of the saved model.
    num_attributes_ : int
    attributes_ : list of str
        The attributes (features) seen in training, in the order first seen.
    state_features_ : dict
        ``{(attribute, label): weight}`` of the non-zero node weights.
    transition_features_ : dict
        ``{(label_from, label_to): weight}`` of the non-zero transition weights.
    training_log_ : TrainingLog
        The iterations' records (``iterations``, ``last_iteration``).
    crf_ : skstruct.CRF
        The fitted skstruct estimator (its ``classes_`` are sorted).

    All of them are None before :meth:`fit` (unless ``model_filename`` names a
    saved model).

    Notes
    -----
    skstruct's CRF (:class:`skstruct.CRF`) minimises ``C * sum_i -log p(y_i | x_i) +
    l1_ratio ||w||_1 + (1 - l1_ratio) / 2 ||w||^2``, CRFsuite's L-BFGS ``-loglik +
    c1 ||w||_1 + c2 ||w||^2``: the same minimiser at ``C = 1 / (c1 + 2 c2)`` and
    ``l1_ratio = c1 / (c1 + 2 c2)``.  Each parameter's counterpart:

    ==============================  ====================================================
    sklearn-crfsuite                :class:`skstruct.CRF`
    ==============================  ====================================================
    ``algorithm="lbfgs"``           ``solver="lbfgs"`` (OWL-QN when ``c1 > 0``)
    ``algorithm="l2sgd"``           ``solver="l2sgd"``, ``C = 1 / (2 c2)`` (``c2 > 0``)
    ``algorithm="ap"``              ``solver="perceptron"``
    ``algorithm="pa"``              ``solver="pa"``, ``C = c``
    ``algorithm="arow"``            ``solver="arow"``
    ``c1``, ``c2`` (lbfgs)          ``C``, ``l1_ratio`` as above; ``c1 = c2 = 0`` (no
                                    penalty) is ``C = 1e12``, ``l1_ratio = 0``
    ``max_iterations``              ``max_iter`` (lbfgs's default 2147483647: it stops by
                                    ``delta`` / ``epsilon``)
    ``delta``                       ``tol``
    ``epsilon`` (lbfgs)             ``solver_options["epsilon"]``
    ``epsilon`` (ap, pa, arow)      ``tol`` (a different measure, see below)
    ``period``                      ``solver_options["period"]``
    ``num_memories``                ``solver_options["memory"]``
    ``max_linesearch``              ``solver_options["max_linesearch"]``
    ``linesearch``                  no effect (see below)
    ``calibration_*``               ``solver_options["calibration_*"]``
    ``pa_type``                     ``solver_options["type"]``
    ``error_sensitive``             ``solver_options["error_sensitive"]``
    ``averaging``                   ``solver_options["average"]``
    ``variance``, ``gamma``         ``solver_options["variance"]``, ``["gamma"]``
    ``all_possible_states``         ``feature_pairs="all"`` (True) or ``"seen"`` (False)
    ``all_possible_transitions``    no counterpart (see below)
    ``min_freq``                    applied to the attributes here (see below)
    ``verbose``                     ``verbose``
    ``model_filename``              saved and loaded here (see below)
    ``keep_tempfiles``              no effect
    ``trainer_cls``                 refused unless None
    ==============================  ====================================================

    Where the two differ:

    * ``linesearch``: skstruct's L-BFGS always searches for a step meeting the Wolfe
      conditions (sufficient decrease 1e-4, curvature 0.9) in at most
      ``max_linesearch`` evaluations; CRFsuite's three methods are accepted and
      change nothing.  The line search changes the path, not the objective or its
      minimiser.
    * ``all_possible_transitions``: skstruct's CRF always learns the full table of
      transitions between labels; ``False`` (CRFsuite's default) would fix the
      transitions never seen in training at 0.  On the training data a pair never
      seen gets a negative weight here, so ``transition_features_`` has more entries
      than CRFsuite's.
    * ``min_freq``: CRFsuite drops each feature (attribute and label, and each
      transition) whose frequency in the training data, the sum of the attribute's
      values over the tokens of that label, is below ``min_freq``.  Here an
      attribute is left out of the model when all its frequencies (with every label)
      are below ``min_freq``, which drops the same state features for it; a
      frequent attribute keeps its pairs with the labels it is rare with, and the
      transitions are all kept.
    * ``fit(X_dev=..., y_dev=...)``: the held-out data are evaluated once, after
      training (the last record of ``training_log_``), not after every iteration.
    * ``epsilon`` of ``ap``, ``pa`` and ``arow``: skstruct stops after an epoch in
      which the share of sequences decoded wrongly is at most ``epsilon``;
      CRFsuite measures the ratio of wrong labels (``ap``) or the mean loss (``pa``,
      ``arow``).  Both are 0 after an epoch without mistakes, but the numbers of
      epochs can differ: on a sequence both learn without a mistake, CRFsuite's
      ``pa`` still runs its 100 epochs, skstruct's stops after the first epoch
      without a mistake.
    * A fit that stops at ``max_iterations`` before its stopping test (``delta``,
      ``epsilon``) is met issues skstruct's
      :class:`~skstruct.exceptions.ConvergenceWarning`; CRFsuite stops silently.
    * ``classes_`` lists the labels in the order first seen in training, as
      CRFsuite; the columns of ``crf_.unary_coef_`` follow ``crf_.classes_``
      (sorted).

    ``model_filename``: :meth:`fit` saves the model there in skstruct's own format
    (a pickle: load only files you trust).  A ``CRF(model_filename=path)`` that is
    not fitted loads the file on first use: one saved by this class, or a model
    trained by CRFsuite (a file starting with ``b"lCRF"``, read through
    python-crfsuite's ``Tagger.info()`` when python-crfsuite is installed), whose
    labels and weights then make the same predictions as CRFsuite's tagger.

    Examples
    --------
    >>> from skstruct.compat.sklearn_crfsuite import CRF
    >>> X = [[{"w": "the"}, {"w": "dog"}], [{"w": "a"}, {"w": "cat"}]]
    >>> y = [["DT", "NN"], ["DT", "NN"]]
    >>> crf = CRF(c1=0.0, c2=0.1, max_iterations=50).fit(X, y)
    >>> crf.classes_
    ['DT', 'NN']
    >>> crf.predict([[{"w": "the"}, {"w": "cat"}]]).tolist()
    [['DT', 'NN']]
    """

    def __init__(self, algorithm=None, min_freq=None, all_possible_states=None,
                 all_possible_transitions=None, c1=None, c2=None, max_iterations=None,
                 num_memories=None, epsilon=None, period=None, delta=None, linesearch=None,
                 max_linesearch=None, calibration_eta=None, calibration_rate=None,
                 calibration_samples=None, calibration_candidates=None,
                 calibration_max_trials=None, pa_type=None, c=None, error_sensitive=None,
                 averaging=None, variance=None, gamma=None, verbose=False,
                 model_filename=None, keep_tempfiles=False, trainer_cls=None):
        self.algorithm = algorithm
        self.min_freq = min_freq
        self.all_possible_states = all_possible_states
        self.all_possible_transitions = all_possible_transitions
        self.c1 = c1
        self.c2 = c2
        self.max_iterations = max_iterations
        self.num_memories = num_memories
        self.epsilon = epsilon
        self.period = period
        self.delta = delta
        self.linesearch = linesearch
        self.max_linesearch = max_linesearch
        self.calibration_eta = calibration_eta
        self.calibration_rate = calibration_rate
        self.calibration_samples = calibration_samples
        self.calibration_candidates = calibration_candidates
        self.calibration_max_trials = calibration_max_trials
        self.pa_type = pa_type
        self.c = c
        self.error_sensitive = error_sensitive
        self.averaging = averaging
        self.variance = variance
        self.gamma = gamma
        self.verbose = verbose
        self.model_filename = model_filename
        self.keep_tempfiles = keep_tempfiles
        self.trainer_cls = trainer_cls

    # ------------------------------------------------------------- settings
    def _settings(self):
        """CRFsuite's settings of the algorithm: the parameters set, else its
        defaults; refuses a parameter the algorithm does not read."""
        algorithm = "lbfgs" if self.algorithm is None else self.algorithm
        if algorithm not in _ALGORITHMS:
            raise ValueError(f"algorithm must be one of {', '.join(_ALGORITHMS)}; got "
                             f"{algorithm!r}")
        if self.trainer_cls is not None:
            raise ValueError("trainer_cls must be None: skstruct trains the CRF itself, "
                             "not through a python-crfsuite trainer")
        own = _DEFAULTS[algorithm]
        settings = dict(own)
        params = self.get_params()
        for name in ("c1", "c2", "max_iterations", "num_memories", "epsilon", "period",
                     "delta", "linesearch", "max_linesearch", "calibration_eta",
                     "calibration_rate", "calibration_samples", "calibration_candidates",
                     "calibration_max_trials", "pa_type", "c", "error_sensitive",
                     "averaging", "variance", "gamma"):
            value = params[name]
            if value is None:
                continue
            if name not in own:
                raise ValueError(f"algorithm={algorithm!r} has no parameter {name} "
                                 f"(set to {value!r}); its parameters are "
                                 f"{', '.join(own)}")
            settings[name] = value
        if settings.get("linesearch", "MoreThuente") not in _LINESEARCH:
            raise ValueError(f"linesearch must be one of {', '.join(_LINESEARCH)}; got "
                             f"{settings['linesearch']!r}")
        min_freq = 0.0 if self.min_freq is None else self.min_freq
        if not isinstance(min_freq, Number) or min_freq < 0:
            raise ValueError(f"min_freq must be a number >= 0; got {min_freq!r}")
        return algorithm, settings

    def _crf_params(self, algorithm, s):
        """The parameters of :class:`skstruct.CRF` for CRFsuite's settings ``s``."""
        p = {"solver": _SOLVER[algorithm], "max_iter": int(s["max_iterations"]),
             "feature_pairs": "all" if self.all_possible_states else "seen",
             "verbose": int(bool(self.verbose))}
        if algorithm == "lbfgs":
            c1, c2 = float(s["c1"]), float(s["c2"])
            if c1 < 0 or c2 < 0:
                raise ValueError(f"c1 and c2 must be >= 0; got c1={c1}, c2={c2}")
            scale = c1 + 2 * c2
            p.update(C=1 / scale if scale > 0 else _UNREGULARISED_C,
                     l1_ratio=c1 / scale if scale > 0 else 0.0, tol=float(s["delta"]),
                     solver_options={"memory": int(s["num_memories"]),
                                     "period": int(s["period"]),
                                     "epsilon": float(s["epsilon"]),
                                     "max_linesearch": int(s["max_linesearch"])})
        elif algorithm == "l2sgd":
            if not s["c2"] > 0:
                raise ValueError(f"algorithm='l2sgd' needs c2 > 0; got c2={s['c2']}")
            p.update(C=1 / (2 * float(s["c2"])), tol=float(s["delta"]),
                     solver_options={"calibration_eta": float(s["calibration_eta"]),
                                     "calibration_rate": float(s["calibration_rate"]),
                                     "calibration_samples": int(s["calibration_samples"]),
                                     "calibration_candidates":
                                         int(s["calibration_candidates"]),
                                     "calibration_max_trials":
                                         int(s["calibration_max_trials"]),
                                     "period": int(s["period"]),
                                     "delta": float(s["delta"])})
        elif algorithm == "ap":
            p.update(tol=float(s["epsilon"]), solver_options={"average": True})
        elif algorithm == "pa":
            p.update(C=float(s["c"]), tol=float(s["epsilon"]),
                     solver_options={"type": int(s["pa_type"]),
                                     "error_sensitive": bool(s["error_sensitive"]),
                                     "average": bool(s["averaging"])})
        else:
            p.update(tol=float(s["epsilon"]),
                     solver_options={"variance": float(s["variance"]),
                                     "gamma": float(s["gamma"])})
        return p

    # ------------------------------------------------------------------ fit
    def fit(self, X, y, X_dev=None, y_dev=None):
        """Train the CRF on the sequences ``X`` labelled ``y``.

        Parameters
        ----------
        X : list of sequences
            Each a list of tokens: a dict of features or a list of feature names.
        y : list of label sequences
            Each a list of strings, one per token of the sequence of ``X``.
        X_dev, y_dev : optional
            Held-out sequences and their labels, evaluated after training (the last
            record of ``training_log_``, printed when ``verbose``).  Give both or
            neither.

        Returns
        -------
        self
        """
        if (X_dev is None) != (y_dev is None):
            raise ValueError("pass both X_dev and y_dev to evaluate on held-out data "
                             "(one of them is None)")
        algorithm, settings = self._settings()
        params = self._crf_params(algorithm, settings)
        seqs = _sequences(X)
        labels = _labels(y, seqs)
        dev = None
        if X_dev is not None:
            dev_seqs = _sequences(X_dev, "X_dev")
            dev = (dev_seqs, _labels(y_dev, dev_seqs, "y_dev"))

        attributes = self._attributes(seqs, labels)
        order = list(dict.fromkeys(label for yseq in labels for label in yseq))
        index = {a: j for j, a in enumerate(attributes)}
        mats = [_matrix(items, index) for items in seqs]
        crf = _SkCRF(**params)
        crf.fit(mats, [np.array(yseq) for yseq in labels])
        model = _Model(attributes, order, crf)
        model.log = self._log(crf, algorithm, params, model, dev)
        self._model = model
        self._size = None
        if self.model_filename is not None:
            self._save(self.model_filename)
        return self

    def _attributes(self, seqs, labels):
        """The attributes of the training data in the order first seen, less those
        whose frequency with every label is below ``min_freq``."""
        min_freq = 0.0 if self.min_freq is None else float(self.min_freq)
        freq = {}
        for items, yseq in zip(seqs, labels):
            for feats, label in zip(items, yseq):
                for a, v in feats.items():
                    f = freq.setdefault(a, {})
                    f[label] = f.get(label, 0.0) + v
        if min_freq <= 0:
            return list(freq)
        return [a for a, f in freq.items() if max(f.values()) >= min_freq]

    def _log(self, crf, algorithm, params, model, dev):
        hist = getattr(crf, "history_", {}) or {}
        if "objective" in hist:
            # lbfgs, l2sgd: skstruct's objective is C times CRFsuite's (-loglik + penalty)
            loss = np.asarray(hist["objective"], np.float64) / params["C"]
        else:
            # ap, pa, arow: the algorithm's loss summed over the epoch's sequences
            loss = np.asarray(hist.get("loss", []), np.float64)
        seconds = np.asarray(hist.get("seconds", np.zeros(loss.size)), np.float64)
        times = np.diff(np.concatenate([[0.0], seconds])) if seconds.size else seconds
        iterations = [{"num": i + 1, "scores": {}, "loss": float(f), "time": float(t)}
                      for i, (f, t) in enumerate(zip(loss, times))]
        if not iterations:
            iterations = [{"num": 1, "scores": {}}]
        last = iterations[-1]
        last["feature_norm"] = float(np.linalg.norm(crf.coef_))
        last["active_features"] = int(np.count_nonzero(crf.coef_))
        if dev is not None:
            pred = model.predict(model.matrices(dev[0], "X_dev"))
            last.update(_evaluation(dev[1], pred, model.labels))
            if self.verbose:
                print(f"held-out data: item accuracy {last['item_accuracy_float']:.4f}, "
                      f"instance accuracy {last['instance_accuracy_float']:.4f}, macro F1 "
                      f"{last['avg_f1']:.4f}", flush=True)
        return TrainingLog(iterations, float(getattr(crf, "fit_seconds_", 0.0)))

    # ---------------------------------------------------------- persistence
    def _save(self, path):
        with open(path, "wb") as f:
            pickle.dump({"format": _MAGIC, "version": 1, "model": self._model}, f,
                        protocol=pickle.HIGHEST_PROTOCOL)
        self._size = os.path.getsize(path)

    def _loaded(self):
        """The fitted model, loaded from ``model_filename`` on first use; None when
        there is none."""
        model = self.__dict__.get("_model")
        if model is None and self.model_filename is not None \
                and os.path.exists(self.model_filename):
            model = self._model = _load(self.model_filename)
            self._size = os.path.getsize(self.model_filename)
        return model

    def _fitted(self):
        model = self._loaded()
        if model is None:
            raise ValueError(f"this {type(self).__name__} is not fitted: call fit first "
                             "(or give model_filename of a saved model)")
        return model

    def __sklearn_is_fitted__(self):
        return self._loaded() is not None

    # ----------------------------------------------------------- prediction
    def predict(self, X):
        """The most probable labels of every sequence.

        Parameters
        ----------
        X : list of sequences of token features

        Returns
        -------
        ndarray of dtype object
            ``numpy.array(labels, dtype=object)`` of the lists of labels (str), one
            per sequence, as sklearn-crfsuite 0.5 returns them.
        """
        model = self._fitted()
        return np.array(model.predict(model.matrices(X)), dtype=object)

    def predict_single(self, xseq):
        """The most probable labels of one sequence, a list of str."""
        model = self._fitted()
        return model.predict(model.matrices([xseq], "xseq"))[0]

    def predict_marginals(self, X):
        """The marginal probability of every label at every token.

        Parameters
        ----------
        X : list of sequences of token features

        Returns
        -------
        ndarray of dtype object
            ``numpy.array(marginals, dtype=object)`` of, per sequence, a list of
            ``{label: probability}`` dicts, one per token, as sklearn-crfsuite 0.5
            returns them.
        """
        model = self._fitted()
        return np.array(model.marginals(model.matrices(X)), dtype=object)

    def predict_marginals_single(self, xseq):
        """The marginals of one sequence: a list of ``{label: probability}`` dicts."""
        model = self._fitted()
        return model.marginals(model.matrices([xseq], "xseq"))[0]

    def score(self, X, y):
        """Token accuracy of :meth:`predict` on ``X`` against ``y``."""
        model = self._fitted()
        pred = model.predict(model.matrices(X))
        flat_p = [label for seq in pred for label in seq]
        flat_t = [label for seq in y for label in seq]
        if len(flat_p) != len(flat_t):
            raise ValueError(f"y has {len(flat_t)} labels for {len(flat_p)} tokens of X")
        return float(np.mean([a == b for a, b in zip(flat_t, flat_p)])) if flat_t else 0.0

    # ------------------------------------------------------ fitted attributes
    @property
    def crf_(self):
        model = self._loaded()
        return None if model is None else model.crf

    @property
    def classes_(self):
        model = self._loaded()
        return None if model is None else list(model.labels)

    @property
    def tagger_(self):
        model = self._loaded()
        if model is None:
            return None
        # one tagger per model: the sequence set on it stays set between calls
        tagger = self.__dict__.get("_tagger")
        if tagger is None or tagger._model is not model:
            tagger = self._tagger = Tagger(model)
        return tagger

    @property
    def size_(self):
        model = self._loaded()
        if model is None:
            return None
        if self.__dict__.get("_size") is None:
            self._size = len(pickle.dumps({"format": _MAGIC, "version": 1, "model": model},
                                          protocol=pickle.HIGHEST_PROTOCOL))
        return self._size

    @property
    def num_attributes_(self):
        model = self._loaded()
        return None if model is None else len(model.attributes)

    @property
    def attributes_(self):
        model = self._loaded()
        return None if model is None else list(model.attributes)

    @property
    def state_features_(self):
        model = self._loaded()
        return None if model is None else model.state_features()

    @property
    def transition_features_(self):
        model = self._loaded()
        return None if model is None else model.transition_features()

    @property
    def training_log_(self):
        model = self._loaded()
        return None if model is None else model.log

    def __sklearn_tags__(self):
        tags = super().__sklearn_tags__()
        # sequences of token-feature dicts, not a table
        tags.input_tags.two_d_array = False
        tags.input_tags.dict = True
        return tags

