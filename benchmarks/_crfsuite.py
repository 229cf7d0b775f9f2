"""python-crfsuite's L-BFGS linear-chain CRF, the reference of the CoNLL-2000 benchmark.

:func:`run_crfsuite` trains ``pycrfsuite.Trainer(algorithm="lbfgs")`` on the
feature dicts of :func:`skstruct.datasets.conll_features`, tags a test set and
returns the predictions with crfsuite's own figures (iterations, final loss,
attribute and feature counts).  Importing this module has no side effects;
``pycrfsuite`` (``pip install python-crfsuite``, tested with 0.9.12) is only
imported when the function is called.

Objective and the equivalent ``C``
----------------------------------
crfsuite (``lib/crf/src/train_lbfgs.c``, ``lbfgs_evaluate``) adds the L2 term
to the negative log-likelihood as ``c2 * ||w||^2``, *without* a factor 1/2::

    /* L2 regularization. */
    if (0 < lbfgsi->c2) {
        const floatval_t c22 = lbfgsi->c2 * 2.;
        for (i = 0;i < n;++i) {
            g[i] += (c22 * x[i]);
            norm += x[i] * x[i];
        }
        f += (lbfgsi->c2 * norm);
    }

and ``f`` there is the negative log-likelihood *summed* (not averaged) over the
training sentences (``lib/crf/src/crf1d_encode.c``,
``encoder_objective_and_gradients_batch``: ``logl += logp;`` per sentence,
then ``*f = -logl;``).  So crfsuite minimises::

    F(w) = -sum_i log p(y_i | x_i; w) + c2 * ||w||^2

(the value logged as ``Loss:`` each iteration, returned here as
``objective``).  The sklearn-style objective ``C * (-loglik) + 0.5 * ||w||^2``
equals ``C * F(w)`` when::

    C = 1 / (2 * c2)        (c2 = 1 / (2 * C)),

so both have the same minimiser, and an objective value of crfsuite converts
as ``C * F``.  (crfsuite's default is c2 = 1.0, i.e. C = 0.5.  Very old
crfsuite releases used ``regularization.sigma`` with ``f += norm / (2 sigma^2)``
instead; python-crfsuite 0.9.12 bundles the c1/c2 version quoted above, whose
log prints ``Loss: %f`` of ``fx``.)  c1 is set to 0, so no OWL-QN / L1 term.

Stopping rule
-------------
crfsuite passes its options to liblbfgs (``lbfgsparam.epsilon = opt.epsilon;
lbfgsparam.past = opt.stop; lbfgsparam.delta = opt.delta;
lbfgsparam.max_iterations = opt.max_iterations;``) with defaults
``epsilon = 1e-5``, ``period = 10``, ``delta = 1e-5``, ``max_iterations =
INT_MAX``, ``num_memories = 6``, line search ``MoreThuente`` (at most 20
trials).  After every iteration ``k`` (counted from 1) liblbfgs stops when

* ``||g|| / max(1, ||w||) <= epsilon`` (gradient of the regularised F;
  "L-BFGS resulted in convergence"), or
* ``k >= period`` and ``|F_{k-period} - F_k| / F_k < delta`` (relative
  decrease over the last ``period`` iterations; "terminated with the stopping
  criteria"), or
* ``max_iterations < k + 1`` (so exactly ``max_iterations`` iterations are
  run and logged).

The weights kept are those of the last logged iteration.

Feature encoding
----------------
python-crfsuite (``_pycrfsuite.pyx``, ``to_item``) turns a dict item into
crfsuite attributes so:

* ``str`` value -> attribute ``"key:value"`` with value 1.0;
* any other scalar (``float``, ``int``, ``bool``) -> attribute ``"key"`` with
  value ``float(value)``; so ``True`` -> 1.0 and ``False`` -> 0.0 under the
  *same* attribute ``"key"``;
* nested dicts / lists / sets -> prefixed attributes (not used here).

That already matches sklearn's ``DictVectorizer`` (``"key=value"`` one-hot for
strings, ``"key"`` numeric for numbers and bools) up to the separator.  A
False boolean does not create a spurious attribute with value 1: it is an
occurrence of attribute ``"key"`` with value 0.0, which adds nothing to the
score nor to the gradient; an attribute seen only with False (still in
``DictVectorizer``'s vocabulary) gets an all-zero weight column and is pruned
from the saved model (see ``n_active_attributes``).  Checked with
``ItemSequence([{"a": True, "b": False, "c": "x", "d": 2.5}]).items()`` ->
``[{'a': 1.0, 'b': 0.0, 'c:x': 1.0, 'd': 2.5}]``.  To be independent of those
conventions and to get ``DictVectorizer``'s attribute names, the dicts are
nevertheless converted here before they reach crfsuite: strings to
``{"key=value": 1.0}``, everything else to ``{"key": float(value)}`` (zeros
kept, so that the attribute set is ``DictVectorizer``'s vocabulary of the
training dicts).  With ``possible_states`` and ``possible_transitions`` both
True crfsuite's feature set is dense: ``n_features = n_attributes * n_labels +
n_labels ** 2`` (no start/end transition features), as in a dense
attribute-by-label weight matrix plus a label-by-label transition matrix.
"""

import os
import re
import tempfile
import time

__all__ = ["run_crfsuite", "to_crfsuite_item"]


def to_crfsuite_item(features):
    """One token's feature dict as ``{attribute: float}`` in ``DictVectorizer``'s encoding.

    Strings become ``{"key=value": 1.0}``; numbers and booleans ``{"key":
    float(value)}`` (False gives 0.0, kept).
    """
    item = {}
    for key, value in features.items():
        if isinstance(value, str):
            item[f"{key}={value}"] = 1.0
        else:
            item[key] = float(value)
    return item


def _convert(feats):
    return [[to_crfsuite_item(f) for f in sentence] for sentence in feats]


def _log_count(log, pattern):
    """``(active, total)`` from crfsuite's "Number of active ...: J (K)" line, or None."""
    m = re.search(pattern + r": (\d+) \((\d+)\)", log)
    return (int(m.group(1)), int(m.group(2))) if m else (None, None)


def run_crfsuite(train_feats, y_train, test_feats, *, c2=None, max_iterations=None,
                 epsilon=None, possible_states=True, possible_transitions=True, model_path=None,
                 algorithm="lbfgs"):
    """Train crfsuite's L-BFGS CRF (c1 = 0, L2 ``c2``), or its averaged
    perceptron (``algorithm="ap"``, no regularisation), and tag ``test_feats``.

    Parameters
    ----------
    train_feats, test_feats : list of list of dict
        Sentences of per-token feature dicts, as
        :func:`skstruct.datasets.conll_features` returns them.
    y_train : list of sequence of str
        The tags of every training sentence.
    c2 : float
        crfsuite's L2 coefficient: it minimises ``-loglik + c2 * ||w||^2``,
        i.e. ``C = 1 / (2 * c2)`` in the form ``C * (-loglik) + ||w||^2 / 2``.
    max_iterations, epsilon : int or float, optional
        crfsuite's ``max_iterations`` and ``epsilon``; its defaults (INT_MAX,
        1e-5) when None.  ``delta`` and ``period`` keep their defaults (1e-5,
        10).
    possible_states, possible_transitions : bool, default=True
        crfsuite's ``feature.possible_states`` / ``feature.possible_transitions``:
        with both True every attribute x label and label x label feature
        exists (the dense feature set), not only those seen in training.
    model_path : str, optional
        Where to write the model; by default a temporary file, deleted
        afterwards.
    algorithm : {"lbfgs", "ap"}, default="lbfgs"
        With ``"ap"``, ``max_iterations`` counts passes over the data and
        ``epsilon`` is crfsuite's stopping threshold on the pass's loss (the
        fraction of wrongly tagged items); ``c2`` must be None.

    Returns
    -------
    result : dict
        ``pred``: list of lists of str, the Viterbi tags of ``test_feats``;
        ``fit_seconds``: wall time of ``Trainer.train`` (feature generation,
        L-BFGS and writing the model); ``train_cpu_seconds`` and
        ``train_wall_seconds``: CPU and wall time of the whole training (the
        conversion of the dicts and ``Trainer.append`` included, the test
        set's conversion and tagging not); ``optim_seconds``: crfsuite's own
        (CPU) time of the L-BFGS part; ``n_iter``: L-BFGS iterations logged;
        ``objective``: the last iteration's loss ``-loglik + c2 ||w||^2``;
        ``loss_curve``: the loss of every iteration; ``stop_reason``:
        crfsuite's termination line; ``n_attributes``, ``n_features``,
        ``n_labels``: the sizes of crfsuite's feature space;
        ``n_active_attributes``, ``n_active_features``: those with a non-zero
        weight (kept in the model).
    """
    import pycrfsuite

    if len(train_feats) != len(y_train):
        raise ValueError(f"{len(train_feats)} training sentences but {len(y_train)} label "
                         "sequences")
    cpu0, wall0 = time.process_time(), time.perf_counter()
    if algorithm not in ("lbfgs", "ap") or (algorithm == "ap") != (c2 is None):
        raise ValueError("algorithm 'lbfgs' needs c2; 'ap' takes none")
    trainer = pycrfsuite.Trainer(algorithm=algorithm, verbose=False)
    for i, (x, y) in enumerate(zip(train_feats, y_train)):
        y = [str(tag) for tag in y]
        if len(x) != len(y):
            raise ValueError(f"training sentence {i}: {len(x)} tokens but {len(y)} labels")
        if y:
            trainer.append([to_crfsuite_item(f) for f in x], y)
    params = {"feature.possible_states": bool(possible_states),
              "feature.possible_transitions": bool(possible_transitions)}
    if algorithm == "lbfgs":
        params.update({"c1": 0.0, "c2": float(c2)})
    if max_iterations is not None:
        params["max_iterations"] = int(max_iterations)
    if epsilon is not None:
        params["epsilon"] = float(epsilon)
    trainer.set_params(params)

    if model_path is None:
        fd, path = tempfile.mkstemp(suffix=".crfsuite")
        os.close(fd)
    else:
        path = os.fspath(model_path)
    try:
        start = time.perf_counter()
        trainer.train(path)
        fit_seconds = time.perf_counter() - start
        train_cpu, train_wall = time.process_time() - cpu0, time.perf_counter() - wall0
        test_items = _convert(test_feats)
        tagger = pycrfsuite.Tagger()
        tagger.open(path)
        try:
            pred = [list(tagger.tag(x)) if x else [] for x in test_items]
        finally:
            tagger.close()
    finally:
        if model_path is None and os.path.exists(path):
            os.unlink(path)

    lp = trainer.logparser
    log = "".join(lp.log)
    n_active_features, n_features = _log_count(log, "Number of active features")
    n_active_attributes, n_attributes = _log_count(log, "Number of active attributes")
    _, n_labels = _log_count(log, "Number of active labels")
    stop = re.search(r"^L-BFGS (.*)$", log[log.rfind("***** Iteration"):], re.MULTILINE)
    return {
        "pred": pred,
        "fit_seconds": fit_seconds,
        "train_cpu_seconds": train_cpu,
        "train_wall_seconds": train_wall,
        "optim_seconds": lp.training_seconds,
        "n_iter": len(lp.iterations),
        "objective": lp.iterations[-1].get("loss") if lp.iterations else None,
        "loss_curve": [it.get("loss") for it in lp.iterations],
        "stop_reason": stop.group(0) if stop else None,
        "n_attributes": n_attributes,
        "n_features": n_features if n_features is not None else lp.featgen_num_features,
        "n_labels": n_labels,
        "n_active_attributes": n_active_attributes,
        "n_active_features": n_active_features,
    }


def train_crfsuite(train_feats, y_train, test_feats, algorithm, params):
    """Train python-crfsuite's ``algorithm`` with ``params`` (its own names; crfsuite's
    defaults otherwise, its default feature set) and tag ``test_feats``.

    Returns a dict: ``pred``, ``train_cpu_seconds`` and ``train_wall_seconds`` (dict
    conversion, ``append`` and ``train``), ``n_iter`` (iterations or epochs logged),
    ``loss`` (crfsuite's last logged loss), ``state_features`` ({(attribute, label):
    weight}) and ``transitions`` ({(from, to): weight}) of the saved model, whose
    attribute names are ``DictVectorizer``'s (see :func:`to_crfsuite_item`).
    """
    import pycrfsuite

    cpu0, wall0 = time.process_time(), time.perf_counter()
    trainer = pycrfsuite.Trainer(algorithm=algorithm, verbose=False)
    for x, y in zip(train_feats, y_train):
        if len(y):
            trainer.append([to_crfsuite_item(f) for f in x], [str(t) for t in y])
    trainer.set_params(dict(params))
    fd, path = tempfile.mkstemp(suffix=".crfsuite")
    os.close(fd)
    try:
        trainer.train(path)
        train_cpu, train_wall = time.process_time() - cpu0, time.perf_counter() - wall0
        tagger = pycrfsuite.Tagger()
        tagger.open(path)
        try:
            pred = [list(tagger.tag(x)) if x else [] for x in _convert(test_feats)]
            info = tagger.info()
            state, trans = dict(info.state_features), dict(info.transitions)
        finally:
            tagger.close()
    finally:
        os.unlink(path)
    lp = trainer.logparser
    return {"pred": pred, "train_cpu_seconds": train_cpu, "train_wall_seconds": train_wall,
            "n_iter": len(lp.iterations),
            "loss": lp.iterations[-1].get("loss") if lp.iterations else None,
            "state_features": state, "transitions": trans}
