"""Reproduce pystruct 0.3.2's two latent-variable examples; export their data.

Runs under the Python 3.6 venv made by build_env.sh (Python 3.6 syntax,
numpy 1.19 API):

    benchmarks/.pystruct-venv/bin/python \
        benchmarks/pystruct/run_pystruct_latent.py OUT_DIR

Writes OUT_DIR/latent_crosses.npz, OUT_DIR/latent_nodes.npz and
OUT_DIR/latent_results.json. Every fit uses n_jobs=1 (the examples use
n_jobs=-1) and BLAS/OpenMP pools are limited to one thread, so the timings
are single-core. Each task is fitted 3 times on the same data, with the same
seeds; the reported fit time is the median of the 3 (wall: perf_counter,
CPU: process_time). Scores and predictions come from run 1; the JSON says
whether all 3 runs gave the same w.

pystruct 0.3.2 bug worked around: OneSlackSSVM.constraint_equal contains
``np.all(pw_m_1, pw_m_2)`` (should be ``np.all(pw_m_1 == pw_m_2)``), which
raises TypeError in the inference-cache update when two relaxed ('lp')
solutions with equal unary marginals are compared; unpatched,
plot_latent_node.py crashes in its 2nd CCCP round. The method is patched at
run time (see _constraint_equal_fixed); the JSON records this under
"patches". Paths that did not crash are unaffected by the patch.

Tasks
=====

latent_crosses_seeds
    The same task on nine more draws, generate_crosses(..., seed=s) for
    s = 1..9 (the example is seed 0): one fit each, accuracies and data
    (keys "s<seed>_...") exported, nothing timed.

latent_crosses  (examples/plot_latent_crf.py, "Latent Dynamics CRF")
    X, Y = generate_crosses(n_samples=20, noise=5, n_crosses=1,
                            total_size=8)       # seeds np.random with 0
    train_test_split(X, Y, test_size=.5, random_state=0)
    LatentGridCRF(n_states_per_label=[1, 2])    # inference_method=None ->
        # first of get_installed(['ad3', 'max-product', 'lp']), i.e. 'ad3'
    OneSlackSSVM(C=10., n_jobs=1, inference_cache=20, tol=.1)  # max_iter=10000
    LatentSSVM(base_ssvm)                        # latent_iter=5
    fit(X_train, Y_train) with no H_init: pystruct initialises H by k-means
    (sklearn KMeans with random_state=None, i.e. numpy's global RNG), so
    np.random.seed(0) is called right before every fit; the H_init it
    produced is exported (train_H_init).

    Features: X[i] has shape (8, 8, 2) float64; X[i][r, c, k] = 1 iff the
    NOISY pixel (label with 5 random flips inside the border) equals k, i.e.
    a one-hot of the noisy label, n_features = 2. GridCRF uses
    x.reshape(-1, 2), so node index = r * 8 + c (C order); edges are
    pystruct.utils.make_grid_edges(x, neighborhood=4): first all "right"
    edges (r*W+c, r*W+c+1) in row-major order of (r, c<W-1), then all "down"
    edges (r*W+c, (r+1)*W+c) in row-major order of (r<H-1, c): 56 + 56 = 112
    per 8x8 image. All edges share one symmetric pairwise table (no edge
    features, no direction).
    Latent states: n_states = 3, states_map = [0, 1, 1] (state 0 <-> label 0
    "background", states 1 and 2 <-> label 1 "cross").

latent_nodes  (examples/plot_latent_node.py, "Latent Variable Hierarchical
    CRF")
    train: X, Y = make_simple_2x2(seed=1)   (20 samples of 4x4, as the example)
    test:  X, Y = make_simple_2x2(seed=2)   (20 more; the example has no test)
    features x.reshape(-1, 1).astype(float): pixel value in {-1, +1}
    (noisy version of y: 4 random pixels set to random values), n_features=1.
    baseline: GraphCRF() (inference_method None -> 'ad3') +
        NSlackSSVM(max_iter=200, C=1, n_jobs=1) on make_grid_edges(x)
        (24 edges per 4x4 image, order as above).
    latent: LatentNodeCRF(n_labels=2, n_features=1, n_hidden_states=2,
        inference_method='lp') + OneSlackSSVM(max_iter=200, C=100, n_jobs=1,
        inference_cache=50) + LatentSSVM(ssvm)  (latent_iter=5).
        (The example also passes show_loss_every=10, which only records a
        training-loss curve; it is NOT used here, so timings exclude it.)
    Hidden node i (node index 16 + i, i = 0..3) is joined to the 4 pixels of
    the i-th 2x2 block, blocks (row0, col0) in itertools.product([0, 2],
    repeat=2) = (0,0), (0,2), (2,0), (2,2); edge rows are [16 + i, pixel],
    pixel = r * 4 + c. Each sample's full edge list (what pystruct gets) is
    vstack(grid edges (24), hidden edges (16)) = 40 edges, and
    x = (features (16, 1), edges (40, 2), 4).
    H_init (train only): np.random.seed(0) after generating both sets, then
    per train sample hstack([y.ravel(), np.random.randint(2, 4, size=4)]);
    hidden nodes' states use pystruct's numbering n_labels + k, i.e. values
    2 or 3 = hidden state k = 0 or 1.
    Model facts (pystruct source): visible nodes have unary w_u[y] . x
    (2 labels x 1 feature); hidden nodes have NO unary; one symmetric 4x4
    pairwise table over the joint state space {0, 1 (labels), 2, 3 (hidden
    states)} is shared by ALL 40 edges (grid and hidden); visible nodes are
    forbidden hidden states and hidden nodes visible states (by -100*max
    unaries), so effectively grid edges use the 2x2 label block and hidden
    edges the (hidden, label) block. Loss/score count visible nodes only.

NPZ format (both files; S = samples in the split, N = total nodes of the
split, E = total local edges of the split; all "edges" are LOCAL node
indices of their own sample, rows of consecutive samples concatenated;
split in {train, test})
==============================================================================
    task                       0-d str: "latent_crosses" / "latent_nodes"
    grid_height, grid_width    0-d int64: 8, 8 (crosses) / 4, 4 (nodes)
    n_features, n_labels       0-d int64
    {split}_features           (N, F) float64, node features, node r*W+c
    {split}_node_counts        (S,) int64 (visible nodes per sample: 64 / 16)
    {split}_labels             (N,) int64 ground-truth labels of those nodes
    {split}_edges              (E, 2) int64 4-neighbour grid edges
                               (make_grid_edges order, see above)
    {split}_edge_counts        (S,) int64 (112 / 24 per sample)
    {split}_sample_index       (S,) int64 index of each sample in the
                               generator's output (crosses: the
                               train_test_split permutation; nodes: 0..19)
    {split}_pystruct_pred      (N,) int64 pystruct's predicted labels (run 1)
    {split}_pystruct_pred_latent  crosses: (N,) int64 predicted latent state
                               per node; nodes: (S*(16+4),) int64 full
                               predicted h per sample (16 visible then 4
                               hidden, hidden values 2/3)
  latent_crosses only:
    {split}_X_raw              (S, 8, 8, 2) float64 the original grid input
    {split}_Y_raw              (S, 8, 8) int64
    n_states_per_label         (2,) int64 [1, 2]
    states_map                 (3,) int64 [0, 1, 1] latent state -> label
    train_H_init               (N_train,) int64 latent states (0..2) of
                               pystruct's k-means initialisation, node order
                               as train_features
  latent_nodes only:
    n_hidden                   0-d int64: 4 hidden nodes per sample
    n_hidden_states            0-d int64: 2
    {split}_n_visible          (S,) int64 (16 each)
    hidden_edges               (16, 2) int64 rows [16 + i, pixel], the same
                               for every sample (node 16+i = hidden node i)
    {split}_full_edges         (S*40, 2) int64 exactly the per-sample edge
                               list given to pystruct (grid edges then hidden)
    {split}_full_edge_counts   (S,) int64 (40 each)
    train_H_init               (S_train, 4) int64 hidden part of H_init in
                               pystruct numbering (2 or 3)
    train_H_init_hidden_state  (S_train, 4) int64 = train_H_init - n_labels
                               (hidden state 0 or 1)
    train_H_init_full          (S_train*20,) int64 the full H_init rows given
                               to LatentSSVM.fit (labels then hidden)
    {split}_baseline_pred      (N,) int64 baseline GraphCRF predictions

JSON (latent_results.json): {"pystruct_version", "python", "numpy",
"sklearn", "backends_importable", "get_installed", "n_runs",
"timing_note", "tasks": {"latent_crosses": {...}, "latent_nodes": {...}}};
per task: train_accuracy / test_accuracy (LatentSSVM.score, i.e. 1 -
Hamming loss over all visible nodes of the split), hamming_accuracy_check
(recomputed here from the predictions), fit_wall_seconds_median,
fit_cpu_seconds_median and the per-run lists, cccp_iterations (number of
base-SSVM fits done by LatentSSVM, = LatentSSVM-logger calls),
cccp_stopped_early (True if H stopped changing before latent_iter),
cutting_plane_iterations per CCCP round, inference_method (the model's
inference_method after fit), w, w_layout, inference_calls, warnings and
captured stdout lines, runs_identical_w; for latent_nodes also
baseline_train_accuracy, baseline_test_accuracy and baseline fit times.
"""

import os

for _v in ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS",
           "NUMEXPR_NUM_THREADS"):
    os.environ.setdefault(_v, "1")

import contextlib  # noqa: E402
import io  # noqa: E402
import itertools  # noqa: E402
import json  # noqa: E402
import platform  # noqa: E402
import sys  # noqa: E402
import time  # noqa: E402
import warnings  # noqa: E402

import numpy as np  # noqa: E402
import pystruct  # noqa: E402
import sklearn  # noqa: E402
from pystruct.datasets import generate_crosses, make_simple_2x2  # noqa: E402
from pystruct.inference import get_installed  # noqa: E402
from pystruct.learners import LatentSSVM, NSlackSSVM, OneSlackSSVM  # noqa: E402
from pystruct.models import GraphCRF, LatentGridCRF, LatentNodeCRF  # noqa: E402
from pystruct.utils import make_grid_edges  # noqa: E402

try:
    from sklearn.model_selection import train_test_split
except ImportError:  # pragma: no cover
    from sklearn.cross_validation import train_test_split

N_RUNS = 3


# ---- workaround for a pystruct 0.3.2 bug ---------------------------------
# OneSlackSSVM.constraint_equal compares two relaxed solutions with
# ``np.all(u_m_1 == u_m_2) and np.all(pw_m_1, pw_m_2)``: the second call
# passes pw_m_2 as numpy's ``axis`` argument and raises "TypeError: only
# integer scalar arrays can be converted to a scalar index" as soon as two
# relaxed unary marginals are equal. With inference_method='lp' every
# loss-augmented solution is relaxed (a tuple), so plot_latent_node.py crashes
# in the inference-cache update (_update_cache) of the 2nd CCCP round. The
# intended test (that of pystruct before the multi-type rewrite, PR #89) is
# ``np.all(pw_m_1 == pw_m_2)``; we patch the class method at run time with
# exactly that change (the installed package is left untouched).
_ORIG_CONSTRAINT_EQUAL = OneSlackSSVM.__dict__["constraint_equal"]


def _constraint_equal_fixed(cls, y_1, y_2):
    if (isinstance(y_1, tuple) and isinstance(y_2, tuple)
            and not isinstance(y_1[0], list)):
        u_m_1, pw_m_1 = y_1
        u_m_2, pw_m_2 = y_2
        return bool(np.all(u_m_1 == u_m_2) and np.all(pw_m_1 == pw_m_2))
    return _ORIG_CONSTRAINT_EQUAL.__func__(cls, y_1, y_2)


OneSlackSSVM.constraint_equal = classmethod(_constraint_equal_fixed)
PATCH_NOTE = ("OneSlackSSVM.constraint_equal patched at run time: "
              "np.all(pw_m_1, pw_m_2) -> np.all(pw_m_1 == pw_m_2) (pystruct "
              "0.3.2 bug; relaxed-vs-relaxed cache comparison otherwise "
              "raises TypeError; hit by LatentNodeCRF with 'lp')")


class _CountLogger(object):
    """Logger hook: counts calls; for a base SSVM, cutting-plane iterations."""

    def __init__(self):
        self.calls = []

    def __call__(self, learner, iteration=0):
        self.calls.append(iteration)

    def rounds(self):
        """Split base-SSVM logger calls into per-fit iteration counts."""
        out, n = [], 0
        for it in self.calls:
            if it == "final":
                out.append(n)
                n = 0
            else:
                n += 1
        return out


def _backends():
    res = {}
    for mod in ("ad3", "cvxopt", "pyqpbo", "opengm"):
        try:
            __import__(mod)
            res[mod] = True
        except Exception:
            res[mod] = False
    return res


def _timed_fit(fit):
    """Run fit() capturing warnings and stdout; return (wall, cpu, warns, out)."""
    buf = io.StringIO()
    with warnings.catch_warnings(record=True) as wlist:
        warnings.simplefilter("always")
        with contextlib.redirect_stdout(buf):
            t0w, t0c = time.perf_counter(), time.process_time()
            fit()
            wall = time.perf_counter() - t0w
            cpu = time.process_time() - t0c
    warns = sorted(set("%s: %s" % (w.category.__name__, str(w.message))
                       for w in wlist))
    lines = [l for l in buf.getvalue().splitlines() if l.strip()]
    return wall, cpu, warns, lines


def _summarise_lines(lines):
    counts = {}
    for l in lines:
        counts[l] = counts.get(l, 0) + 1
    return counts


def _hamming_acc(Y_true, Y_pred):
    t = np.concatenate([np.asarray(y).ravel() for y in Y_true])
    p = np.concatenate([np.asarray(y).ravel() for y in Y_pred])
    return float(np.mean(t == p))


def _stack_graph(feats, labels, edges):
    return dict(
        features=np.vstack(feats).astype(np.float64),
        node_counts=np.array([f.shape[0] for f in feats], dtype=np.int64),
        labels=np.concatenate([np.asarray(y).ravel()
                               for y in labels]).astype(np.int64),
        edges=np.vstack(edges).astype(np.int64).reshape(-1, 2),
        edge_counts=np.array([e.shape[0] for e in edges], dtype=np.int64),
    )


def _median(v):
    return float(np.median(np.asarray(v, dtype=np.float64)))


def _pairwise_layout(K, F, n_unary_states):
    return ("unary(%d states, F=%d) row-major: w[k*F+f]; then pairwise "
            "symmetric (K=%d, K) stored as lower triangle incl. diagonal in "
            "row-major order of np.tri(K) positions (0,0),(1,0),(1,1),(2,0),"
            "...; one table shared by all edges; size %d"
            % (n_unary_states, F, K, n_unary_states * F + K * (K + 1) // 2))


# --------------------------------------------------------------------------
def run_crosses():
    X, Y = generate_crosses(n_samples=20, noise=5, n_crosses=1, total_size=8)
    idx = np.arange(len(X))
    X_train, X_test, Y_train, Y_test, i_train, i_test = train_test_split(
        X, Y, idx, test_size=.5, random_state=0)

    runs = []
    for run in range(N_RUNS):
        crf = LatentGridCRF(n_states_per_label=[1, 2])
        base_log = _CountLogger()
        base_ssvm = OneSlackSSVM(model=crf, C=10., n_jobs=1,
                                 inference_cache=20, tol=.1, logger=base_log)
        lat_log = _CountLogger()
        clf = LatentSSVM(base_ssvm=base_ssvm, logger=lat_log)
        np.random.seed(0)   # k-means init of H uses numpy's global RNG
        wall, cpu, warns, lines = _timed_fit(
            lambda: clf.fit(X_train, Y_train))
        runs.append(dict(clf=clf, crf=crf, wall=wall, cpu=cpu, warns=warns,
                         lines=lines, base_log=base_log, lat_log=lat_log))

    r0 = runs[0]
    clf, crf = r0["clf"], r0["crf"]
    pred_train = clf.predict(X_train)
    pred_test = clf.predict(X_test)
    lat_train = clf.predict_latent(X_train)
    lat_test = clf.predict_latent(X_test)
    res = dict(
        example="examples/plot_latent_crf.py",
        data=("generate_crosses(n_samples=20, noise=5, n_crosses=1, "
              "total_size=8) [seed=0 inside]; train_test_split(test_size=.5, "
              "random_state=0)"),
        model="LatentGridCRF(n_states_per_label=[1, 2]) (neighborhood=4)",
        learner=("LatentSSVM(OneSlackSSVM(C=10., n_jobs=1, inference_cache=20,"
                 " tol=.1), latent_iter=5); np.random.seed(0) before each fit"),
        n_train=len(X_train), n_test=len(X_test),
        x_shape=list(X_train[0].shape),
        feature_description=("one-hot of the noisy pixel label: x[r,c,k]=1 "
                             "iff noisy label==k; n_features=2; node r*8+c"),
        train_accuracy=float(clf.score(X_train, Y_train)),
        test_accuracy=float(clf.score(X_test, Y_test)),
        hamming_accuracy_check=dict(train=_hamming_acc(Y_train, pred_train),
                                    test=_hamming_acc(Y_test, pred_test)),
        inference_method=repr(crf.inference_method),
        n_states=int(crf.n_states), n_features=int(crf.n_features),
        n_labels=int(crf.n_labels),
        states_map=[int(s) for s in crf._states_map],
        w=[float(v) for v in clf.w],
        w_layout=_pairwise_layout(int(crf.n_states), int(crf.n_features),
                                  int(crf.n_states)),
    )
    _fill_common(res, runs)
    data = dict(task=np.array("latent_crosses"),
                grid_height=np.int64(8), grid_width=np.int64(8),
                n_features=np.int64(2), n_labels=np.int64(2),
                n_states_per_label=np.array([1, 2], dtype=np.int64),
                states_map=np.asarray(crf._states_map, dtype=np.int64))
    for split, Xs, Ys, ids, pr, lt in (
            ("train", X_train, Y_train, i_train, pred_train, lat_train),
            ("test", X_test, Y_test, i_test, pred_test, lat_test)):
        feats = [crf._get_features(x) for x in Xs]
        edges = [crf._get_edges(x) for x in Xs]
        for e, x in zip(edges, Xs):
            assert np.array_equal(e, make_grid_edges(x, neighborhood=4))
        for k, v in _stack_graph(feats, Ys, edges).items():
            data[split + "_" + k] = v
        data[split + "_sample_index"] = np.asarray(ids, dtype=np.int64)
        data[split + "_X_raw"] = np.asarray(Xs, dtype=np.float64)
        data[split + "_Y_raw"] = np.asarray(Ys, dtype=np.int64)
        data[split + "_pystruct_pred"] = np.concatenate(
            [np.asarray(p).ravel() for p in pr]).astype(np.int64)
        data[split + "_pystruct_pred_latent"] = np.concatenate(
            [np.asarray(p).ravel() for p in lt]).astype(np.int64)
    data["train_H_init"] = np.concatenate(
        [np.asarray(h).ravel() for h in clf.H_init_]).astype(np.int64)
    res["H_init_identical_across_runs"] = all(
        np.array_equal(np.asarray(r["clf"].H_init_), np.asarray(clf.H_init_))
        for r in runs)
    return res, data


CROSSES_SEEDS = list(range(1, 10))


def run_crosses_seeds():
    """The crosses task on nine more draws of the data (generate_crosses(seed=s),
    s = 1..9; seed 0 is the example): one fit each, for accuracy only."""
    res, data = dict(seeds=CROSSES_SEEDS, train_accuracy=[], test_accuracy=[]), {}
    for seed in CROSSES_SEEDS:
        X, Y = generate_crosses(n_samples=20, noise=5, n_crosses=1, total_size=8,
                                seed=seed)
        X_train, X_test, Y_train, Y_test = train_test_split(
            X, Y, test_size=.5, random_state=0)
        crf = LatentGridCRF(n_states_per_label=[1, 2])
        clf = LatentSSVM(base_ssvm=OneSlackSSVM(model=crf, C=10., n_jobs=1,
                                                inference_cache=20, tol=.1))
        np.random.seed(0)
        _timed_fit(lambda: clf.fit(X_train, Y_train))
        res["train_accuracy"].append(float(clf.score(X_train, Y_train)))
        res["test_accuracy"].append(float(clf.score(X_test, Y_test)))
        for split, Xs, Ys in (("train", X_train, Y_train), ("test", X_test, Y_test)):
            stacked = _stack_graph([crf._get_features(x) for x in Xs], Ys,
                                   [crf._get_edges(x) for x in Xs])
            for k, v in stacked.items():
                data["s%d_%s_%s" % (seed, split, k)] = v
        data["s%d_train_H_init" % seed] = np.concatenate(
            [np.asarray(h).ravel() for h in clf.H_init_]).astype(np.int64)
    data["seeds"] = np.asarray(CROSSES_SEEDS, dtype=np.int64)
    return res, data


def _fill_common(res, runs):
    r0 = runs[0]
    res.update(
        fit_wall_seconds_median=_median([r["wall"] for r in runs]),
        fit_cpu_seconds_median=_median([r["cpu"] for r in runs]),
        fit_wall_seconds_runs=[r["wall"] for r in runs],
        fit_cpu_seconds_runs=[r["cpu"] for r in runs],
        cccp_iterations=len(r0["lat_log"].calls),
        cccp_iterations_runs=[len(r["lat_log"].calls) for r in runs],
        latent_iter=int(r0["clf"].latent_iter),
        cccp_stopped_early=len(r0["lat_log"].calls) < r0["clf"].latent_iter,
        cutting_plane_iterations_per_cccp=r0["base_log"].rounds(),
        inference_calls=int(r0["crf"].inference_calls),
        runs_identical_w=all(np.array_equal(r["clf"].w, r0["clf"].w)
                             for r in runs),
        warnings=sorted(set(w for r in runs for w in r["warns"])),
        stdout_lines_run1=_summarise_lines(r0["lines"]),
    )


# --------------------------------------------------------------------------
def _hidden_edges():
    edges = []
    node_indices = np.arange(4 * 4).reshape(4, 4)
    for i, (x, y) in enumerate(itertools.product([0, 2], repeat=2)):
        for j in range(x, x + 2):
            for k in range(y, y + 2):
                edges.append([i + 4 * 4, node_indices[j, k]])
    return np.array(edges, dtype=np.int64)


def run_nodes():
    X_tr, Y_tr = make_simple_2x2(seed=1)   # the example's data (seeds inside)
    X_te, Y_te = make_simple_2x2(seed=2)   # extra held-out set
    hidden = _hidden_edges()

    def prep(X, Y):
        X_flat = [x.reshape(-1, 1).astype(np.float64) for x in X]
        Y_flat = [np.asarray(y).ravel() for y in Y]
        G_grid = [make_grid_edges(x) for x in X]
        G_full = [np.vstack([g, hidden]) for g in G_grid]
        X_ = list(zip(X_flat, G_full, [2 * 2 for x in X_flat]))
        return X_flat, Y_flat, G_grid, G_full, X_

    Xf_tr, Yf_tr, Gg_tr, Gf_tr, X_tr_ = prep(X_tr, Y_tr)
    Xf_te, Yf_te, Gg_te, Gf_te, X_te_ = prep(X_te, Y_te)

    np.random.seed(0)
    H_init = [np.hstack([y.ravel(), np.random.randint(2, 4, size=2 * 2)])
              for y in Y_tr]

    # baseline: plain GraphCRF on the grid
    base_runs = []
    for run in range(N_RUNS):
        crf = GraphCRF()
        svm = NSlackSSVM(model=crf, max_iter=200, C=1, n_jobs=1)
        Xg_tr = list(zip(Xf_tr, Gg_tr))
        wall, cpu, warns, lines = _timed_fit(lambda: svm.fit(Xg_tr, Yf_tr))
        base_runs.append(dict(svm=svm, crf=crf, wall=wall, cpu=cpu,
                              warns=warns, lines=lines))
    svm, bcrf = base_runs[0]["svm"], base_runs[0]["crf"]
    Xg_tr, Xg_te = list(zip(Xf_tr, Gg_tr)), list(zip(Xf_te, Gg_te))
    bpred_tr, bpred_te = svm.predict(Xg_tr), svm.predict(Xg_te)

    runs = []
    for run in range(N_RUNS):
        latent_crf = LatentNodeCRF(n_labels=2, n_features=1,
                                   n_hidden_states=2, inference_method='lp')
        base_log = _CountLogger()
        ssvm = OneSlackSSVM(model=latent_crf, max_iter=200, C=100, n_jobs=1,
                            inference_cache=50, logger=base_log)
        lat_log = _CountLogger()
        latent_svm = LatentSSVM(ssvm, logger=lat_log)
        H_run = [h.copy() for h in H_init]
        wall, cpu, warns, lines = _timed_fit(
            lambda: latent_svm.fit(X_tr_, Yf_tr, H_run))
        runs.append(dict(clf=latent_svm, crf=latent_crf, wall=wall, cpu=cpu,
                         warns=warns, lines=lines, base_log=base_log,
                         lat_log=lat_log))
    clf, lcrf = runs[0]["clf"], runs[0]["crf"]
    pred_tr, pred_te = clf.predict(X_tr_), clf.predict(X_te_)
    lat_tr, lat_te = clf.predict_latent(X_tr_), clf.predict_latent(X_te_)

    res = dict(
        example="examples/plot_latent_node.py",
        data=("train: make_simple_2x2(seed=1) (20 samples, as the example); "
              "test: make_simple_2x2(seed=2) (20 samples, added); "
              "np.random.seed(0) then H_init hidden part "
              "np.random.randint(2, 4, size=4) per train sample"),
        model=("LatentNodeCRF(n_labels=2, n_features=1, n_hidden_states=2, "
               "inference_method='lp'); x = (features (16,1), edges (40,2), 4)"),
        learner=("LatentSSVM(OneSlackSSVM(max_iter=200, C=100, n_jobs=1, "
                 "inference_cache=50), latent_iter=5), fit with H_init "
                 "(example's show_loss_every=10 omitted)"),
        n_train=len(X_tr_), n_test=len(X_te_),
        train_accuracy=float(clf.score(X_tr_, Yf_tr)),
        test_accuracy=float(clf.score(X_te_, Yf_te)),
        hamming_accuracy_check=dict(train=_hamming_acc(Yf_tr, pred_tr),
                                    test=_hamming_acc(Yf_te, pred_te)),
        inference_method=repr(lcrf.inference_method),
        n_states=int(lcrf.n_states), n_features=int(lcrf.n_features),
        n_labels=int(lcrf.n_labels),
        w=[float(v) for v in clf.w],
        w_layout=_pairwise_layout(int(lcrf.n_states), int(lcrf.n_features),
                                  int(lcrf.n_input_states)) +
        " (unary only for the 2 visible labels; hidden nodes have none)",
        baseline=dict(
            model="GraphCRF() on 4-neighbour grid edges (24 per sample)",
            learner="NSlackSSVM(max_iter=200, C=1, n_jobs=1)",
            inference_method=repr(bcrf.inference_method),
            train_accuracy=float(svm.score(Xg_tr, Yf_tr)),
            test_accuracy=float(svm.score(Xg_te, Yf_te)),
            hamming_accuracy_check=dict(train=_hamming_acc(Yf_tr, bpred_tr),
                                        test=_hamming_acc(Yf_te, bpred_te)),
            fit_wall_seconds_median=_median([r["wall"] for r in base_runs]),
            fit_cpu_seconds_median=_median([r["cpu"] for r in base_runs]),
            fit_wall_seconds_runs=[r["wall"] for r in base_runs],
            fit_cpu_seconds_runs=[r["cpu"] for r in base_runs],
            n_iter=len(svm.objective_curve_) - 1,
            runs_identical_w=all(np.array_equal(r["svm"].w, svm.w)
                                 for r in base_runs),
            w=[float(v) for v in svm.w],
            warnings=sorted(set(w for r in base_runs for w in r["warns"])),
            stdout_lines_run1=_summarise_lines(base_runs[0]["lines"]),
        ),
    )
    res["baseline_train_accuracy"] = res["baseline"]["train_accuracy"]
    res["baseline_test_accuracy"] = res["baseline"]["test_accuracy"]
    _fill_common(res, runs)

    data = dict(task=np.array("latent_nodes"),
                grid_height=np.int64(4), grid_width=np.int64(4),
                n_features=np.int64(1), n_labels=np.int64(2),
                n_hidden=np.int64(4), n_hidden_states=np.int64(2),
                hidden_edges=hidden)
    for split, Xf, Yf, Gg, Gf, pr, lt, bp in (
            ("train", Xf_tr, Yf_tr, Gg_tr, Gf_tr, pred_tr, lat_tr, bpred_tr),
            ("test", Xf_te, Yf_te, Gg_te, Gf_te, pred_te, lat_te, bpred_te)):
        for k, v in _stack_graph(Xf, Yf, Gg).items():
            data[split + "_" + k] = v
        data[split + "_sample_index"] = np.arange(len(Xf), dtype=np.int64)
        data[split + "_n_visible"] = np.array([x.shape[0] for x in Xf],
                                              dtype=np.int64)
        data[split + "_full_edges"] = np.vstack(Gf).astype(np.int64)
        data[split + "_full_edge_counts"] = np.array(
            [g.shape[0] for g in Gf], dtype=np.int64)
        data[split + "_pystruct_pred"] = np.concatenate(
            [np.asarray(p).ravel() for p in pr]).astype(np.int64)
        data[split + "_pystruct_pred_latent"] = np.concatenate(
            [np.asarray(p).ravel() for p in lt]).astype(np.int64)
        data[split + "_baseline_pred"] = np.concatenate(
            [np.asarray(p).ravel() for p in bp]).astype(np.int64)
    H_hidden = np.array([h[16:] for h in H_init], dtype=np.int64)
    data["train_H_init"] = H_hidden
    data["train_H_init_hidden_state"] = H_hidden - 2
    data["train_H_init_full"] = np.concatenate(H_init).astype(np.int64)
    return res, data


def main(argv):
    if len(argv) != 2:
        print("usage: run_pystruct_latent.py OUT_DIR", file=sys.stderr)
        return 2
    out_dir = argv[1]
    if not os.path.isdir(out_dir):
        os.makedirs(out_dir)
    results = dict(
        pystruct_version=pystruct.__version__,
        python=platform.python_version(),
        numpy=np.__version__, sklearn=sklearn.__version__,
        backends_importable=_backends(),
        get_installed=get_installed(),
        n_runs=N_RUNS,
        patches=[PATCH_NOTE],
        timing_note=("fit only (LatentSSVM.fit incl. H init / NSlackSSVM.fit);"
                     " n_jobs=1; BLAS/OpenMP threads=1; median of %d runs; "
                     "wall=time.perf_counter, cpu=time.process_time" % N_RUNS),
        tasks={},
    )
    for name, fn in (("latent_crosses", run_crosses),
                     ("latent_crosses_seeds", run_crosses_seeds),
                     ("latent_nodes", run_nodes)):
        res, data = fn()
        np.savez(os.path.join(out_dir, name + ".npz"), **data)
        results["tasks"][name] = res
        if name == "latent_crosses_seeds":
            print("%s: test %s" % (name, res["test_accuracy"]))
            continue
        print("%s: train %.4f test %.4f  fit median wall %.3fs cpu %.3fs  "
              "cccp %d  inference %s"
              % (name, res["train_accuracy"], res["test_accuracy"],
                 res["fit_wall_seconds_median"], res["fit_cpu_seconds_median"],
                 res["cccp_iterations"], res["inference_method"]))
        if "baseline" in res:
            b = res["baseline"]
            print("  baseline GraphCRF: train %.4f test %.4f  fit median "
                  "wall %.3fs cpu %.3fs  inference %s"
                  % (b["train_accuracy"], b["test_accuracy"],
                     b["fit_wall_seconds_median"],
                     b["fit_cpu_seconds_median"], b["inference_method"]))
    with open(os.path.join(out_dir, "latent_results.json"), "w") as f:
        json.dump(results, f, indent=1, sort_keys=True)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
