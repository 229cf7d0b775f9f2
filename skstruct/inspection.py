"""Explanations of a fitted linear-chain or tree model: its weights and its predictions.

:func:`explain_weights` lists the transition weights and, for every label, the features that
raise and lower its score most; :func:`explain_prediction` shows, token by token, the label
a sample is given and the features and the transition that scored it.  Both read the fitted
weights (``unary_coef_``, ``pairwise_coef_``, ``classes_``) of :class:`~skstruct.CRF`,
:class:`~skstruct.NonLocalCRF`, :class:`~skstruct.StructuredSVM` or
:class:`~skstruct.StructuredPerceptron` on a :class:`~skstruct.models.ChainModel` or
:class:`~skstruct.models.GraphModel`, alone or as the last step of a
:class:`~sklearn.pipeline.Pipeline` (for instance behind
``NodeTransformer(DictVectorizer())``, whose feature names they use).  The results print as
aligned text and render as HTML tables in notebooks.
"""

import html
from dataclasses import dataclass
from numbers import Integral
from typing import NamedTuple

import numpy as np
import scipy.sparse as sp
from sklearn.pipeline import Pipeline
from sklearn.utils.validation import check_is_fitted

__all__ = ["FeatureContribution", "FeatureWeight", "PredictionExplanation", "TargetWeights",
           "TokenExplanation", "WeightsExplanation", "explain_prediction", "explain_weights"]


# ----------------------------------------------------------------------------- results
class FeatureWeight(NamedTuple):
    """A feature and its weight for one label."""

    name: str
    weight: float


class TargetWeights(NamedTuple):
    """The strongest weights of one label.

    Attributes
    ----------
    positive : tuple of FeatureWeight
        The largest positive weights, largest first (ties by feature name).
    negative : tuple of FeatureWeight
        The most negative weights, most negative first (ties by feature name).
    n_positive, n_negative : int
        How many weights of the label are positive and negative in all (the lists hold at
        most ``top`` of each).
    """

    positive: tuple
    negative: tuple
    n_positive: int
    n_negative: int


class FeatureContribution(NamedTuple):
    """What one feature of a token adds to the score of its predicted label:
    ``contribution = value * weight``."""

    name: str
    value: float
    weight: float
    contribution: float


class TokenExplanation(NamedTuple):
    """The score of one token's predicted label.

    Attributes
    ----------
    index : int
        The token's position in the sample.
    label : object
        The predicted label (a value of ``classes``).
    features : tuple of FeatureContribution
        The largest contributions by absolute value (at most ``top``; ties by feature
        name).
    n_features : int
        How many of the token's features contribute (non-zero value and weight).
    feature_score : float
        The sum of all the token's feature contributions (not only the listed ones): the
        node score of its label.
    previous : tuple of int
        The tokens whose edges end at this one: the previous token in a chain (none for
        the first token).
    transition : float
        The score of those edges at the predicted labels (0 without any).
    total : float
        ``feature_score + transition``; the totals of all tokens sum to the score of the
        predicted labelling.
    probability : float or None
        The marginal probability of the predicted label, when the estimator gives marginals.
    """

    index: int
    label: object
    features: tuple
    n_features: int
    feature_score: float
    previous: tuple
    transition: float
    total: float
    probability: object


@dataclass(frozen=True, eq=False)
class WeightsExplanation:
    """The weights of a fitted model, as :func:`explain_weights` reads them.

    ``str()`` and :meth:`to_text` give it as aligned text, :meth:`to_html` as an HTML
    table, which notebooks show on their own.

    Attributes
    ----------
    classes : ndarray of shape (n_classes,)
        The labels, in the order of the rows and columns of the tables.
    transitions : ndarray of shape (n_classes, n_classes)
        ``transitions[a, b]`` scores label ``a`` followed by label ``b`` (on a graph: ``a``
        at an edge's first node, ``b`` at its second); with edge features, the table of
        the first edge feature.
    tables : ndarray of shape (n_edge_features, n_classes, n_classes)
        Every edge table (one without edge features), as the model scores them.
    targets : dict
        For each explained label, its :class:`TargetWeights`.
    n_nonzero : int
        The number of non-zero weights of the model (node weights and edge tables).
    feature_names : ndarray of str
        The names of the node weights' columns.
    """

    classes: np.ndarray
    transitions: np.ndarray
    tables: np.ndarray
    targets: dict
    n_nonzero: int
    feature_names: np.ndarray

    def to_text(self):
        """The explanation as aligned plain text: the transition table, then each label's
        top positive and negative weights.

        Returns
        -------
        text : str
        """
        names = [str(c) for c in self.classes.tolist()]
        lines = [f"Transition weights (row: from, column: to; {self.n_nonzero} non-zero "
                 "weights in the model):"]
        cells = [[_fmt(v, sign=False) for v in row] for row in self.transitions]
        width = max([len(n) for n in names] + [len(c) for row in cells for c in row])
        lines.append(" " * width + "  " + "  ".join(n.rjust(width) for n in names))
        for name, row in zip(names, cells):
            lines.append(name.rjust(width) + "  " + "  ".join(c.rjust(width) for c in row))
        for label, t in self.targets.items():
            lines.append("")
            lines.append(f"y={label!r} top features")
            rows = _target_rows(t)
            if not rows:
                lines.append("  (no non-zero weight)")
                continue
            w = max(len(r[0]) for r in rows)
            lines.append("  " + "Weight".rjust(w) + "  Feature")
            lines += ["  " + a.rjust(w) + "  " + b for a, b in rows]
        return "\n".join(lines)

    def to_html(self):
        """The explanation as a self-contained HTML fragment (inline styles, escaped names).

        Returns
        -------
        html : str
        """
        e = html.escape
        names = [e(str(c)) for c in self.classes.tolist()]
        parts = [f"<div class=\"skstruct-explanation\"><p>Transition weights (row: from, "
                 f"column: to; {self.n_nonzero} non-zero weights in the model)</p>",
                 f"<table style=\"{_TABLE}\"><tr><th style=\"{_TH}\">from \\ to</th>"]
        parts += [f"<th style=\"{_TH}\">{n}</th>" for n in names]
        parts.append("</tr>")
        scale = max(float(np.abs(self.transitions).max(initial=0.0)), 1e-300)
        for name, row in zip(names, self.transitions):
            parts.append(f"<tr><th style=\"{_TH}\">{name}</th>")
            parts += [f"<td style=\"{_TD}{_colour(v, scale)}\">{_fmt(v, sign=False)}</td>"
                      for v in row]
            parts.append("</tr>")
        parts.append("</table>")
        for label, t in self.targets.items():
            parts.append(f"<p>y={e(repr(label))} top features</p>")
            parts.append(f"<table style=\"{_TABLE}\"><tr><th style=\"{_TH}\">Weight</th>"
                         f"<th style=\"{_TH}\">Feature</th></tr>")
            scale = max([abs(f.weight) for f in t.positive + t.negative] + [1e-300])
            for f in t.positive:
                parts.append(_weight_row(f.weight, f.name, scale))
            if t.n_positive > len(t.positive):
                parts.append(_more_row(t.n_positive - len(t.positive), "positive"))
            if t.n_negative > len(t.negative):
                parts.append(_more_row(t.n_negative - len(t.negative), "negative"))
            for f in t.negative[::-1]:
                parts.append(_weight_row(f.weight, f.name, scale))
            parts.append("</table>")
        parts.append("</div>")
        return "".join(parts)

    def _repr_html_(self):
        return self.to_html()

    def __str__(self):
        return self.to_text()


@dataclass(frozen=True, eq=False)
class PredictionExplanation:
    """One sample's prediction, as :func:`explain_prediction` reads it.

    ``str()`` and :meth:`to_text` give it as text, :meth:`to_html` as HTML tables, which
    notebooks show on their own.

    Attributes
    ----------
    classes : ndarray of shape (n_classes,)
        The model's labels.
    labels : ndarray of shape (n_tokens,)
        The predicted labels.
    tokens : tuple of TokenExplanation
        For each token, the contributions to its predicted label's score.
    score : float
        The score of the predicted labelling: the sum of the tokens' totals.
    """

    classes: np.ndarray
    labels: np.ndarray
    tokens: tuple
    score: float

    def to_text(self):
        """The explanation as plain text: per token, its label, its score and the features
        that made it.

        Returns
        -------
        text : str
        """
        lines = [f"Predicted labelling, score {_fmt(self.score)}:"]
        for tok in self.tokens:
            lines.append("")
            lines.append(_token_title(tok))
            rows = [(_fmt(f.contribution), f"{f.name} (value {_fmt(f.value, sign=False)}, "
                     f"weight {_fmt(f.weight)})") for f in tok.features]
            if tok.n_features > len(tok.features):
                rows.append(("", f"... {tok.n_features - len(tok.features)} more features ..."))
            if not rows:
                lines.append("  (no contributing feature)")
                continue
            w = max(len("Contribution"), *(len(r[0]) for r in rows))
            lines.append("  " + "Contribution".rjust(w) + "  Feature")
            lines += ["  " + a.rjust(w) + "  " + b for a, b in rows]
        return "\n".join(lines)

    def to_html(self):
        """The explanation as a self-contained HTML fragment (inline styles, escaped names).

        Returns
        -------
        html : str
        """
        e = html.escape
        parts = [f"<div class=\"skstruct-explanation\"><p>Predicted labelling, score "
                 f"{_fmt(self.score)}</p>"]
        for tok in self.tokens:
            parts.append(f"<p>{e(_token_title(tok))}</p>")
            parts.append(f"<table style=\"{_TABLE}\"><tr><th style=\"{_TH}\">Contribution</th>"
                         f"<th style=\"{_TH}\">Feature</th><th style=\"{_TH}\">Value</th>"
                         f"<th style=\"{_TH}\">Weight</th></tr>")
            scale = max([abs(f.contribution) for f in tok.features] + [1e-300])
            for f in tok.features:
                parts.append(f"<tr><td style=\"{_TD}{_colour(f.contribution, scale)}\">"
                             f"{_fmt(f.contribution)}</td><td style=\"{_TDL}\">{e(f.name)}</td>"
                             f"<td style=\"{_TD}\">{_fmt(f.value, sign=False)}</td>"
                             f"<td style=\"{_TD}\">{_fmt(f.weight)}</td></tr>")
            if tok.n_features > len(tok.features):
                parts.append(f"<tr><td style=\"{_TD}\"></td><td style=\"{_TDL}\" colspan=\"3\">"
                             f"<i>... {tok.n_features - len(tok.features)} more features ..."
                             "</i></td></tr>")
            parts.append("</table>")
        parts.append("</div>")
        return "".join(parts)

    def _repr_html_(self):
        return self.to_html()

    def __str__(self):
        return self.to_text()


_TABLE = "border-collapse: collapse; margin-bottom: 1em; font-family: monospace;"
_TH = "border: 1px solid #ccc; padding: 2px 6px; text-align: center;"
_TD = "border: 1px solid #ccc; padding: 2px 6px; text-align: right;"
_TDL = "border: 1px solid #ccc; padding: 2px 6px; text-align: left;"


def _fmt(v, sign=True):
    return f"{v:+.3f}" if sign else f"{v:.3f}"


def _colour(v, scale):
    """A background shading a cell by its value's sign and size (green up, red down)."""
    a = min(abs(float(v)) / scale, 1.0)
    rgb = "0, 128, 0" if v > 0 else "200, 0, 0"
    return f" background-color: rgba({rgb}, {0.08 + 0.5 * a:.2f});" if v != 0 else ""


def _target_rows(t):
    rows = [(_fmt(f.weight), f.name) for f in t.positive]
    if t.n_positive > len(t.positive):
        rows.append(("", f"... {t.n_positive - len(t.positive)} more positive ..."))
    if t.n_negative > len(t.negative):
        rows.append(("", f"... {t.n_negative - len(t.negative)} more negative ..."))
    rows += [(_fmt(f.weight), f.name) for f in t.negative[::-1]]
    return rows


def _weight_row(w, name, scale):
    return (f"<tr><td style=\"{_TD}{_colour(w, scale)}\">{_fmt(w)}</td>"
            f"<td style=\"{_TDL}\">{html.escape(name)}</td></tr>")


def _more_row(n, kind):
    return (f"<tr><td style=\"{_TD}\"></td><td style=\"{_TDL}\"><i>... {n} more {kind} ..."
            "</i></td></tr>")


def _token_title(tok):
    prob = "" if tok.probability is None else f", probability {tok.probability:.3f}"
    head = f"token {tok.index}: y={tok.label!r}{prob}; score {_fmt(tok.total)}"
    if not tok.previous:
        return f"{head} = features {_fmt(tok.feature_score)} (no incoming edge)"
    if len(tok.previous) == 1:
        edge = f"transition from token {tok.previous[0]}"
    else:
        edge = "edges from tokens " + ", ".join(str(p) for p in tok.previous)
    return f"{head} = features {_fmt(tok.feature_score)} + {edge} {_fmt(tok.transition)}"


# ------------------------------------------------------------------- reading estimators
class _Fitted(NamedTuple):
    estimator: object      # the structured estimator (a pipeline's last step)
    head: object           # the pipeline's earlier steps, or None
    classes: np.ndarray
    unary: np.ndarray      # (K, F + extra) node weights, as the model scores them
    tables: np.ndarray     # (M, K, K) edge tables, as the model scores them
    n_nonzero: int
    names: np.ndarray      # names of the F + extra columns of ``unary``
    n_features: int        # F: the input features (the rest are the model's own)


def _check_top(top):
    if isinstance(top, bool) or not isinstance(top, Integral) or top < 1:
        raise ValueError(f"top must be a positive integer, got {top!r}")
    return int(top)


def _read(estimator, feature_names):
    """The fitted weights of ``estimator`` (or of a pipeline's last step) and the names of
    their columns."""
    from .models import ChainModel, GraphModel

    head = None
    final = estimator
    if isinstance(estimator, Pipeline):
        final = estimator.steps[-1][1]
        head = estimator[:-1] if len(estimator.steps) > 1 else None
    name = type(final).__name__
    check_is_fitted(final, "coef_")
    model = getattr(final, "model_", None)
    if not isinstance(model, (ChainModel, GraphModel)) or getattr(model, "latent", False):
        raise ValueError(f"explanations read the weights of a ChainModel or a GraphModel; the "
                         f"fitted {name}'s model is {type(model).__name__}")
    try:
        unary, pairwise = final.unary_coef_, final.pairwise_coef_
    except AttributeError:
        if not hasattr(final, "_weights"):
            raise ValueError(f"{name} exposes no unary_coef_ and pairwise_coef_ to explain") \
                from None
        W, pairwise = final._weights()
        unary = np.asarray(W).T
    classes = np.asarray(final.classes_)
    unary = np.asarray(unary, dtype=np.float64)
    pairwise = np.asarray(pairwise, dtype=np.float64)
    K = classes.shape[0]
    if unary.ndim != 2 or unary.shape[0] != K or pairwise.ndim != 3 \
            or pairwise.shape[1:] != (K, K):
        raise ValueError(f"{name}'s weights are node {unary.shape} and edge {pairwise.shape}, "
                         f"not one row and one table axis per class of its {K} classes")
    n_nonzero = int(np.count_nonzero(unary) + np.count_nonzero(pairwise))
    tables = pairwise
    if not getattr(model, "directed", True):
        # an undirected model scores pair (a, b) by the weight stored at (min, max)
        tables = np.triu(pairwise) + np.swapaxes(np.triu(pairwise, 1), 1, 2)
    F = int(getattr(model, "n_features_", unary.shape[1]))
    extra = _extra_names(model)
    if F + len(extra) != unary.shape[1]:
        raise ValueError(f"{name}'s node weights have {unary.shape[1]} columns for {F} "
                         f"features and {len(extra)} of the model's own")
    if feature_names is None and head is not None:
        try:
            feature_names = head.get_feature_names_out()
        except (AttributeError, ValueError, TypeError):
            feature_names = None
        if feature_names is not None and len(feature_names) != F:
            feature_names = None  # names of another stage's output
    if feature_names is None:
        names = [f"x{j}" for j in range(F)]
    else:
        if isinstance(feature_names, str) or not hasattr(feature_names, "__len__"):
            raise ValueError("feature_names must be a sequence of strings, got "
                             f"{type(feature_names).__name__}")
        if len(feature_names) != F:
            raise ValueError(f"feature_names has {len(feature_names)} names but {name} was "
                             f"fitted on {F} features")
        names = [str(n) for n in feature_names]
    names = np.array(names + extra, dtype=object)
    return _Fitted(estimator=final, head=head, classes=classes, unary=unary, tables=tables,
                   n_nonzero=n_nonzero, names=names, n_features=F)


def _extra_names(model):
    """Names of the node features a model adds to the user's (ChainModel's bias and chain
    ends), in the order of its columns."""
    extra = []
    if getattr(model, "bias", False):
        extra.append("<BIAS>")
    if getattr(model, "start_end", False):
        extra += ["<START>", "<END>"]
    return extra


# ------------------------------------------------------------------------ the functions
def explain_weights(estimator, *, top=20, feature_names=None, labels=None):
    """The transition weights and, for each label, the features weighing most for and
    against it.

    Parameters
    ----------
    estimator : fitted estimator or Pipeline
        A :class:`~skstruct.CRF`, :class:`~skstruct.NonLocalCRF`,
        :class:`~skstruct.StructuredSVM` or :class:`~skstruct.StructuredPerceptron` on a
        :class:`~skstruct.models.ChainModel` or :class:`~skstruct.models.GraphModel`, or a
        pipeline ending in one (its earlier steps, for instance
        ``NodeTransformer(DictVectorizer())``, name the features).
    top : int, default=20
        How many positive and how many negative weights to list per label.
    feature_names : sequence of str, optional
        The names of the node features, one per feature the estimator was fitted on.  By
        default the pipeline's ``get_feature_names_out()``, else ``"x0"``, ``"x1"``, ...
        A model's own features are named ``"<BIAS>"``, ``"<START>"`` and ``"<END>"``.
    labels : sequence, optional
        The labels to explain (values of ``classes_``), in that order; all by default.

    Returns
    -------
    explanation : WeightsExplanation
        Printable (``to_text()``) and shown as a table in notebooks (``to_html()``).

    Raises
    ------
    sklearn.exceptions.NotFittedError
        When the estimator is not fitted.
    ValueError
        When ``feature_names`` has not one name per feature, a label is not one of the
        estimator's, or the model is not one whose weights are explained.

    Examples
    --------
    >>> import numpy as np
    >>> from skstruct import CRF
    >>> from skstruct.inspection import explain_weights
    >>> X = [np.array([[1.0, 0.0], [0.0, 1.0]]), np.array([[0.0, 1.0], [1.0, 0.0]])]
    >>> y = [np.array(["a", "b"]), np.array(["b", "a"])]
    >>> crf = CRF(C=10.0).fit(X, y)
    >>> exp = explain_weights(crf, feature_names=["is_a", "is_b"])
    >>> exp.targets["a"].positive[0].name
    'is_a'
    >>> print(exp.to_text().splitlines()[0])
    Transition weights (row: from, column: to; 8 non-zero weights in the model):
    """
    top = _check_top(top)
    fitted = _read(estimator, feature_names)
    classes = fitted.classes
    keys = classes.tolist()
    index = {c: k for k, c in enumerate(keys)}
    if labels is None:
        chosen = list(range(classes.shape[0]))
    else:
        if isinstance(labels, str) or not hasattr(labels, "__iter__"):
            raise ValueError(f"labels must be a sequence of labels, got {labels!r}")
        chosen = []
        for lab in labels:
            lab = lab.item() if isinstance(lab, np.generic) else lab
            if lab not in index:
                raise ValueError(f"label {lab!r} is not one of the estimator's classes "
                                 f"{classes.tolist()}")
            chosen.append(index[lab])
    names = fitted.names
    # ties by name: a stable sort by name first, then by weight
    by_name = np.argsort(names.astype(str), kind="stable")
    targets = {}
    for k in chosen:
        w = fitted.unary[k]
        order = by_name[np.argsort(-w[by_name], kind="stable")]
        pos = order[w[order] > 0]
        order = by_name[np.argsort(w[by_name], kind="stable")]
        neg = order[w[order] < 0]
        targets[keys[k]] = TargetWeights(
            positive=tuple(FeatureWeight(str(names[j]), float(w[j])) for j in pos[:top]),
            negative=tuple(FeatureWeight(str(names[j]), float(w[j])) for j in neg[:top]),
            n_positive=int(pos.size), n_negative=int(neg.size))
    tables = fitted.tables.copy()
    return WeightsExplanation(classes=classes.copy(), transitions=tables[0], tables=tables,
                              targets=targets, n_nonzero=fitted.n_nonzero,
                              feature_names=names.astype(str))


def _sample_parts(fitted, x):
    """The transformed sample, its node features (CSR, with the model's own columns), its
    edges and edge features (or None)."""
    from .models import GraphModel

    est = fitted.estimator
    sample = x
    if fitted.head is not None:
        sample = fitted.head.transform([x])[0]
    graph = isinstance(est.model_, GraphModel)
    if graph != isinstance(sample, tuple):
        want = "a tuple (node_features, edges[, edge_features])" if graph else \
            "one node feature array (n_tokens, n_features)"
        raise ValueError(f"x: {type(est).__name__}'s {type(est.model_).__name__} takes {want} "
                         f"per sample, got {type(sample).__name__}")
    nodes = sample[0] if graph else sample
    if not sp.issparse(nodes) and np.ndim(nodes) != 2:
        raise ValueError(f"x: the node features must be 2-D (n_tokens, n_features), got "
                         f"{np.ndim(nodes)} dimensions")
    try:
        feats = sp.csr_matrix(nodes, dtype=np.float64)
    except (TypeError, ValueError) as exc:
        raise ValueError(f"x: the node features are not a numeric 2-D array ({exc})") from None
    if feats.ndim != 2 or feats.shape[1] != fitted.n_features:
        raise ValueError(f"x: node features of shape {feats.shape}; {type(est).__name__} was "
                         f"fitted on {fitted.n_features} features")
    n = feats.shape[0]
    if graph:
        edges = np.asarray(sample[1], dtype=np.int64).reshape(-1, 2)
        ef = None if len(sample) < 3 or sample[2] is None else \
            np.asarray(sp.csr_matrix(sample[2], dtype=np.float64).toarray())
    else:
        edges = np.column_stack([np.arange(n - 1), np.arange(1, n)]).astype(np.int64) \
            if n > 1 else np.zeros((0, 2), np.int64)
        ef = None
    extra = []
    model = est.model_
    if getattr(model, "bias", False):
        extra.append(np.ones(n))
    if getattr(model, "start_end", False):
        first, last = np.zeros(n), np.zeros(n)
        if n:
            first[0] = last[-1] = 1.0
        extra += [first, last]
    if extra:
        feats = sp.hstack([feats, sp.csr_matrix(np.column_stack(extra))], format="csr")
    feats.sum_duplicates()
    return sample, feats, edges, ef


def explain_prediction(estimator, x, *, top=10, feature_names=None):
    """The predicted labels of one sample and, per token, what scored them.

    A linear model scores a labelling as the sum over tokens of ``unary_coef_[label] @ x``
    plus the transition weight of every edge; this splits that score by token: the token's
    features times their weights for its predicted label, and the edges that end at it
    (from the previous token, on a chain).

    Parameters
    ----------
    estimator : fitted estimator or Pipeline
        As for :func:`explain_weights`.
    x : one sample
        What ``estimator.predict`` takes for one sample: for a pipeline the raw sample (for
        instance a list of per-token feature dicts), else a node feature array
        ``(n_tokens, n_features)`` (a chain) or a tuple ``(node_features, edges[,
        edge_features])`` (a graph).
    top : int, default=10
        How many features to list per token, by absolute contribution.
    feature_names : sequence of str, optional
        As for :func:`explain_weights`.

    Returns
    -------
    explanation : PredictionExplanation
        Printable (``to_text()``) and shown as tables in notebooks (``to_html()``).

    Raises
    ------
    sklearn.exceptions.NotFittedError
        When the estimator is not fitted.
    ValueError
        When ``x`` is not one sample of the estimator's format, or ``feature_names`` has not
        one name per feature.

    Notes
    -----
    The labels are the estimator's prediction.  For :class:`~skstruct.NonLocalCRF`, which
    decodes projected potentials, the scores shown are those of its CRF part.

    Examples
    --------
    >>> import numpy as np
    >>> from skstruct import CRF
    >>> from skstruct.inspection import explain_prediction
    >>> X = [np.array([[1.0, 0.0], [0.0, 1.0]]), np.array([[0.0, 1.0], [1.0, 0.0]])]
    >>> y = [np.array(["a", "b"]), np.array(["b", "a"])]
    >>> crf = CRF(C=10.0).fit(X, y)
    >>> exp = explain_prediction(crf, X[0], feature_names=["is_a", "is_b"])
    >>> exp.labels.tolist()
    ['a', 'b']
    >>> first = exp.tokens[0]
    >>> first.features[0].name, first.previous
    ('is_a', ())
    >>> bool(first.probability > 0.5)
    True
    """
    top = _check_top(top)
    fitted = _read(estimator, feature_names)
    est = fitted.estimator
    sample, feats, edges, ef = _sample_parts(fitted, x)
    labels = np.asarray(est.predict([sample])[0])
    n = feats.shape[0]
    if labels.shape != (n,):
        raise ValueError(f"x: {type(est).__name__} predicted {labels.shape} labels for {n} "
                         "nodes")
    index = {c: k for k, c in enumerate(fitted.classes.tolist())}
    ks = np.array([index[lab] for lab in labels.tolist()], dtype=np.int64)
    probs = None
    if hasattr(est, "predict_marginals"):
        try:
            probs = np.asarray(est.predict_marginals([sample])[0])[np.arange(n), ks]
        except (ValueError, AttributeError):
            probs = None
    # scores as the model computes them: feature rows times the weight rows of the labels
    U = fitted.unary
    trans = np.zeros(n)
    incoming = [[] for _ in range(n)]
    for e, (a, b) in enumerate(edges):
        if ef is None:
            s = fitted.tables[0, ks[a], ks[b]]
        else:
            s = ef[e] @ fitted.tables[:, ks[a], ks[b]]
        trans[b] += s
        incoming[b].append(int(a))
    names = fitted.names
    label_list = labels.tolist()
    tokens = []
    for t in range(n):
        lo, hi = feats.indptr[t], feats.indptr[t + 1]
        cols, vals = feats.indices[lo:hi], feats.data[lo:hi]
        w = U[ks[t], cols]
        contrib = vals * w
        # the node score over every feature, as the model sums it: a row times a weight row
        node = float(vals @ w)
        keep = contrib != 0
        cols, vals, w, contrib = cols[keep], vals[keep], w[keep], contrib[keep]
        order = np.argsort(names[cols].astype(str), kind="stable")
        order = order[np.argsort(-np.abs(contrib[order]), kind="stable")][:top]
        feats_t = tuple(FeatureContribution(str(names[cols[i]]), float(vals[i]), float(w[i]),
                                            float(contrib[i])) for i in order)
        tokens.append(TokenExplanation(
            index=t, label=label_list[t], features=feats_t, n_features=int(contrib.size),
            feature_score=node, previous=tuple(incoming[t]),
            transition=float(trans[t]), total=node + float(trans[t]),
            probability=None if probs is None else float(probs[t])))
    return PredictionExplanation(classes=fitted.classes.copy(), labels=labels,
                                 tokens=tuple(tokens),
                                 score=float(sum(tok.total for tok in tokens)))
