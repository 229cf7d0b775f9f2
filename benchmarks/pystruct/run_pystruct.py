"""Run pystruct 0.3.2 on a task given as a neutral .npz file; write JSON results.

Runs under the Python 3.6 venv made by build_env.sh (Python 3.6 syntax,
numpy 1.19 API):

    benchmarks/.pystruct-venv/bin/python benchmarks/pystruct/run_pystruct.py IN.npz OUT.json

Input format (see the benchmark docs / brief):
  config               0-d unicode array holding a JSON object: model, learner,
                       C, max_iter, tol, inference, check_dual_every,
                       random_state, inference_cache, n_jobs, switch_to,
                       symmetric_edge_features, antisymmetric_edge_features,
                       directed (optional, chain/graph only).
  chain/graph/edge_feature_graph, for split in {train, test}:
      {split}_features (N,F) f8, {split}_node_counts (S,) i8,
      {split}_labels (N,) i8, {split}_edges (E,2) i8 (local node indices),
      {split}_edge_counts (S,) i8, {split}_edge_features (E,EF) f8.
  multilabel: {split}_X (n,F) f8, {split}_Y (n,L) i8 in {0,1},
      ml_edges (M,2) i8 (or train_ml_edges); 0 rows / absent -> independent.

Facts about pystruct 0.3.2, read from its installed source:

* Loss. ``StructuredModel.loss(y, y_hat) = sum(class_weight[y] * (y != y_hat))``:
  an UNNORMALISED Hamming count per sample (number of wrong nodes / wrong
  label entries), weighted by class_weight of the TRUE label. We never pass
  class_weight, so all weights are 1 (for MultiLabelClf class_weight has
  length n_labels but is indexed by the 0/1 label value; still all ones).
  For relaxed (fractional, ad3/lp with relaxed=True) solutions the learners
  use ``continuous_loss = sum(1 - mu_i[y_i])``.

* Objective curves are in the C-FORM
      primal = 1/2 ||w||^2 + C * sum_i H_i(w),
      H_i(w) = max_y [loss(y_i, y) + w.psi(x_i, y) - w.psi(x_i, y_i)]
  (SUM over samples, not the mean; the lambda form is primal / (C * n) with
  lambda = 1 / (C * n)).
  - FrankWolfeSSVM: every ``check_dual_every`` passes (and always at pass 0)
    ``_calc_dual_gap`` appends primal_objective_curve_ (= dual + duality gap,
    from a relaxed loss-augmented pass at the averaged w) and
    objective_curve_ (the BCFW dual value -1/2||w||^2 + C*n*l); after the
    loop one more entry: primal = ``_objective`` (n-slack variant, relaxed
    inference), dual = copy of the previous dual.
  - OneSlackSSVM: per cutting-plane iteration, primal_objective_curve_ =
    1/2||w||^2 + C*n*max(mean slack of the new 1-slack constraint, 0)
    (evaluated at the w BEFORE the QP re-solve), objective_curve_ = value of
    the cutting-plane QP after the re-solve (cvxopt, C*n scaling as
    svm-struct); final entry primal = ``_objective`` (one-slack variant).
    cached_constraint_ tells which iterations used the inference cache.
  - NSlackSSVM: per pass, primal = C * sum_i slack_i + 1/2||w||^2 (slacks
    found during the pass), objective_curve_ = n-slack QP dual; final
    entry as above.
  - timestamps_: pystruct stores time.time() (absolute epoch) as element 0
    and seconds since the start of fit after that; we drop element 0, so
    curve["timestamps_"][k] is the time (s since fit start) of
    curve["primal_objective_curve_"][k] / curve["objective_curve_"][k].

* primal_objective_C_form (computed here at the final w on the training set,
  None when the environment sets RUN_PYSTRUCT_NO_PRIMAL)
  uses the model's own loss_augmented_inference (relaxed=False, i.e.
  integral, with the model's inference_method after fit: if switch_to fired,
  that is the switched-to method), joint_feature and loss. Each H_i is clipped
  at 0 (y = y_i attains 0, so this is exact for exact inference and a valid
  lower bound of the max otherwise).

* Weight layouts (w_layout in the output): see _w_layout below.
"""

import json
import os
import resource
import sys
import time
import warnings

warnings.filterwarnings("ignore")

import numpy as np  # noqa: E402
import pystruct  # noqa: E402
from pystruct.learners import FrankWolfeSSVM, NSlackSSVM, OneSlackSSVM, StructuredPerceptron  # noqa: E402
from pystruct.models import ChainCRF, EdgeFeatureGraphCRF, GraphCRF, MultiLabelClf  # noqa: E402


class _IterLogger:
    """pystruct logger hook: records the last iteration index seen."""

    def __init__(self):
        self.last_iteration = -1

    def __call__(self, learner, iteration=0):
        if iteration != "final":
            self.last_iteration = int(iteration)



def current_rss_mb():
    """Resident memory of this process now (MB), from /proc/self/statm."""
    with open("/proc/self/statm") as f:
        pages = int(f.read().split()[1])
    return pages * resource.getpagesize() / 2.0 ** 20

def _inference_spec(spec):
    """Config value -> pystruct inference_method / switch_to value."""
    if spec is None:
        return None
    if isinstance(spec, (list, tuple)):
        return (str(spec[0]), dict(spec[1]) if len(spec) > 1 else {})
    spec = str(spec)
    if spec in ("bb", "ad3-bb", "ad3+bb", "ad3_bb"):
        return ("ad3", {"branch_and_bound": True})
    return spec


def _split_rows(arr, counts):
    offsets = np.concatenate([[0], np.cumsum(counts)]).astype(np.int64)
    return [arr[offsets[i]:offsets[i + 1]] for i in range(len(counts))]


def _load_structured(data, split, model_name):
    features = np.asarray(data[split + "_features"], dtype=np.float64)
    node_counts = np.asarray(data[split + "_node_counts"], dtype=np.int64)
    labels = np.asarray(data[split + "_labels"], dtype=np.int64)
    feats = _split_rows(features, node_counts)
    Y = _split_rows(labels, node_counts)
    if model_name == "chain":
        return feats, Y
    edge_counts = np.asarray(data[split + "_edge_counts"], dtype=np.int64)
    edges = _split_rows(np.asarray(data[split + "_edges"],
                                   dtype=np.int64).reshape(-1, 2),
                        edge_counts)
    if model_name == "graph":
        return list(zip(feats, edges)), Y
    efeat = np.asarray(data[split + "_edge_features"], dtype=np.float64)
    efeat = _split_rows(efeat.reshape(len(efeat), -1), edge_counts)
    return list(zip(feats, edges, efeat)), Y


def _load_multilabel(data, split):
    X = np.asarray(data[split + "_X"], dtype=np.float64)
    Y = np.asarray(data[split + "_Y"], dtype=np.int64)
    return X, Y


def _ml_edges(data):
    for key in ("ml_edges", "train_ml_edges"):
        if key in data.files:
            e = np.asarray(data[key], dtype=np.int64).reshape(-1, 2)
            return e if e.shape[0] > 0 else None
    return None


def _make_model(cfg, data):
    name = cfg["model"]
    inf = _inference_spec(cfg.get("inference"))
    kw = {}
    if inf is not None:
        kw["inference_method"] = inf
    if name == "chain":
        if "directed" in cfg:
            kw["directed"] = bool(cfg["directed"])
        return ChainCRF(**kw)
    if name == "graph":
        if "directed" in cfg:
            kw["directed"] = bool(cfg["directed"])
        return GraphCRF(**kw)
    if name == "edge_feature_graph":
        return EdgeFeatureGraphCRF(
            symmetric_edge_features=list(
                cfg.get("symmetric_edge_features") or []),
            antisymmetric_edge_features=list(
                cfg.get("antisymmetric_edge_features") or []),
            **kw)
    if name == "multilabel":
        return MultiLabelClf(edges=_ml_edges(data), **kw)
    raise ValueError("unknown model %r" % name)


def _make_learner(cfg, model, logger):
    name = cfg["learner"]
    if name == "perceptron":
        # Collins's perceptron: no C; samples in the given order
        return StructuredPerceptron(model, max_iter=int(cfg["max_iter"]),
                                    average=bool(cfg.get("average", True)), verbose=0)
    C = float(cfg["C"])
    max_iter = int(cfg["max_iter"])
    if name == "frankwolfe":
        kw = dict(C=C, max_iter=max_iter,
                  check_dual_every=int(cfg.get("check_dual_every", 10)),
                  random_state=cfg.get("random_state"), verbose=0,
                  logger=logger)
        if cfg.get("tol") is not None:
            kw["tol"] = float(cfg["tol"])
        return FrankWolfeSSVM(model, **kw)
    kw = dict(C=C, max_iter=max_iter, n_jobs=int(cfg.get("n_jobs", 1)),
              switch_to=_inference_spec(cfg.get("switch_to")), verbose=0,
              logger=logger)
    if cfg.get("tol") is not None:
        kw["tol"] = float(cfg["tol"])
    if name == "oneslack":
        return OneSlackSSVM(model,
                            inference_cache=int(cfg.get("inference_cache", 0)),
                            **kw)
    if name == "nslack":
        # NSlackSSVM has no inference cache.
        return NSlackSSVM(model, **kw)
    raise ValueError("unknown learner %r" % name)


def _w_layout(model, name):
    if name == "multilabel":
        L, F, M = model.n_labels, model.n_features, model.edges.shape[0]
        return ("unary(L=%d,F=%d) row-major: w[l*F+f]; joint feature of label "
                "l is (2*y_l-1)*x, so label l on scores +w_l.x and off "
                "scores -w_l.x; then for each label-graph edge m=0..M-1 "
                "(M=%d, in the given ml_edges order) a full 2x2 table "
                "P_m[y_a, y_b] row-major with a=ml_edges[m,0], "
                "b=ml_edges[m,1]: 4 params per edge, NOT symmetrised; "
                "size L*F + 4*M = %d" % (L, F, M, L * F + 4 * M))
    K, F = model.n_states, model.n_features
    unary = ("unary(K=%d,F=%d) row-major: w[k*F+f] = weight of node feature "
             "f for state k" % (K, F))
    if name == "edge_feature_graph":
        E = model.n_edge_features
        return (unary + "; then pairwise(EF=%d,K,K) row-major: for each edge "
                "feature e a full KxK table P_e[a,b], a = label of "
                "edges[:,0], b = label of edges[:,1]; edge potential = "
                "sum_e ef[e]*P_e; K*K params per edge feature whatever the "
                "(anti)symmetry: for symmetric_edge_features=%s the joint "
                "feature block is symmetrised (M+M^T)/2, for "
                "antisymmetric_edge_features=%s it is (M-M^T)/2 (so w stays "
                "(anti)symmetric from w=0 but is stored full); size "
                "K*F + EF*K*K = %d"
                % (E, list(model.symmetric_edge_features),
                   list(model.antisymmetric_edge_features),
                   K * F + E * K * K))
    if model.directed:
        return (unary + "; then pairwise(K,K) row-major, directed/full: "
                "P[a,b] scores label a at edges[:,0] (chain: position t) and "
                "b at edges[:,1] (chain: t+1); size K*F + K*K = %d"
                % (K * F + K * K))
    return (unary + "; then pairwise symmetric (K,K) stored as its lower "
            "triangle incl. diagonal in row-major order of np.tri(K) "
            "positions (0,0),(1,0),(1,1),(2,0),(2,1),(2,2),...: entry (a,b), "
            "a>=b, is P[a,b]=P[b,a]; joint feature compress_sym(N+N^T-diag N) "
            "so an edge labelled {a,b} counts once; size K*F + K*(K+1)/2 = %d"
            % (K * F + K * (K + 1) // 2))


def _as_labels(y):
    """Prediction -> integer label array (relaxed tuples -> argmax)."""
    if isinstance(y, tuple):
        return np.argmax(np.asarray(y[0]), axis=-1)
    return np.asarray(y)


def _accuracy(Y_true, Y_pred):
    t = np.concatenate([np.asarray(y).ravel() for y in Y_true])
    p = np.concatenate([_as_labels(y).astype(np.float64).ravel()
                        for y in Y_pred])
    if t.size == 0 or t.shape != p.shape:
        return float("nan")
    # NaN predictions compare unequal, so they count as errors.
    return float(np.mean(p == t.astype(np.float64)))


def _primal_c_form(model, w, C, X, Y):
    slack_sum = 0.0
    for x, y in zip(X, Y):
        y_hat = model.loss_augmented_inference(x, y, w, relaxed=False)
        dpsi = model.joint_feature(x, y_hat) - model.joint_feature(x, y)
        h = float(model.loss(y, y_hat)) + float(np.dot(w, dpsi))
        slack_sum += max(h, 0.0)
    return 0.5 * float(np.dot(w, w)) + C * slack_sum


def _floats(seq):
    return [float(v) for v in seq]


def main(argv):
    if len(argv) != 3:
        print("usage: run_pystruct.py IN.npz OUT.json", file=sys.stderr)
        return 2
    data = np.load(argv[1], allow_pickle=False)
    cfg = json.loads(str(data["config"].item()))
    name = cfg["model"]
    if name == "multilabel":
        X_train, Y_train = _load_multilabel(data, "train")
        X_test, Y_test = _load_multilabel(data, "test")
    else:
        X_train, Y_train = _load_structured(data, "train", name)
        X_test, Y_test = _load_structured(data, "test", name)

    model = _make_model(cfg, data)
    logger = _IterLogger()
    learner = _make_learner(cfg, model, logger)

    rss_before_fit = current_rss_mb()
    t0 = time.perf_counter()
    learner.fit(X_train, Y_train)
    fit_seconds = time.perf_counter() - t0
    inference_calls = int(getattr(model, "inference_calls", -1))

    t0 = time.perf_counter()
    pred_test = learner.predict(X_test)
    predict_seconds = time.perf_counter() - t0
    pred_train = learner.predict(X_train)

    w = np.asarray(learner.w, dtype=np.float64)
    test_acc = _accuracy(Y_test, pred_test)
    train_acc = _accuracy(Y_train, pred_train)

    curve = {}
    for attr in ("primal_objective_curve_", "objective_curve_",
                 "loss_curve_"):
        if hasattr(learner, attr):
            curve[attr] = _floats(getattr(learner, attr))
    if hasattr(learner, "timestamps_"):
        curve["timestamps_"] = _floats(learner.timestamps_[1:])
    if hasattr(learner, "cached_constraint_"):
        curve["cached_constraint_"] = [bool(c)
                                       for c in learner.cached_constraint_]

    if cfg["learner"] == "frankwolfe" and logger.last_iteration >= 0:
        # logger is called once per pass (before the tol check).
        n_iter = logger.last_iteration + 1
    elif hasattr(learner, "n_iter_"):
        # a learner that calls its logger only at the end reports its passes itself
        n_iter = int(learner.n_iter_)
    elif cfg["learner"] == "perceptron":
        n_iter = len(learner.loss_curve_)
    else:
        # one entry per cutting-plane iteration (one-slack: per QP solve,
        # n-slack: per pass) plus the final one.
        n_iter = len(learner.objective_curve_) - 1

    out = {
        "pystruct_version": pystruct.__version__,
        "config": cfg,
        "model_repr": repr(model),
        "fit_seconds": fit_seconds,
        "rss_before_fit_mb": rss_before_fit,
        "predict_seconds": predict_seconds,
        "n_iter": n_iter,
        "inference_calls": inference_calls,
        "inference_method_final": repr(model.inference_method),
        "w": _floats(w),
        "n_features_w": int(w.size),
        "w_layout": _w_layout(model, name),
        "n_states": int(model.n_states),
        "n_features": int(model.n_features),
        "test_accuracy": test_acc,
        "test_hamming_loss": 1.0 - test_acc,
        "train_accuracy": train_acc,
        "curve": curve,
        # a caller that scores w with its own evaluator can skip this pass
        "primal_objective_C_form": (
            None if cfg.get("C") is None or os.environ.get("RUN_PYSTRUCT_NO_PRIMAL")
            else _primal_c_form(model, w, float(cfg["C"]), X_train, Y_train)),
        "n_train_samples": int(len(X_train)),
        "n_test_samples": int(len(X_test)),
    }
    if name == "multilabel":
        out["n_labels"] = int(model.n_labels)
        out["n_ml_edges"] = int(model.edges.shape[0])
    if name == "edge_feature_graph":
        out["n_edge_features"] = int(model.n_edge_features)
    out["peak_rss_mb"] = (resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
                          / 1024.0)
    with open(argv[2], "w") as f:
        json.dump(out, f)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
