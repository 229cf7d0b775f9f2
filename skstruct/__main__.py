"""Command line: ``python -m skstruct demo``."""

import argparse
import sys
import time


def demo(args):
    """Chain decoding of the OCR letters data set.

    A per-letter linear discriminant analysis (fast, closed form) gives unary
    scores (log-probabilities);
    letter bigram log-frequencies of the training words give the pairwise
    scores.  Batched Viterbi over all test words then corrects letters the
    independent classifier gets wrong.
    """
    import numpy as np
    from sklearn.discriminant_analysis import LinearDiscriminantAnalysis

    from skstruct.datasets import load_letters
    from skstruct.inference import GraphBatch, map_batch, marginals_batch

    data = load_letters()
    test = data.folds == args.fold
    X_tr = np.concatenate([x for x, t in zip(data.X, test) if not t])
    y_tr = [y for y, t in zip(data.y, test) if not t]
    X_te = [x for x, t in zip(data.X, test) if t]
    y_te = np.concatenate([y for y, t in zip(data.y, test) if t])
    print(f"OCR letters: {len(y_tr)} training words, {len(X_te)} test words (fold {args.fold})")

    t0 = time.perf_counter()
    clf = LinearDiscriminantAnalysis().fit(X_tr, np.concatenate(y_tr))
    print(f"per-letter classifier (LDA) trained in {time.perf_counter() - t0:.1f} s")

    K = 26
    counts = np.ones((K, K))
    for y in y_tr:
        np.add.at(counts, (y[:-1], y[1:]), 1.0)
    pairwise = np.log(counts / counts.sum(axis=1, keepdims=True))

    batch = GraphBatch.from_chains([len(x) for x in X_te])
    unary = clf.predict_log_proba(np.concatenate(X_te))
    independent = unary.argmax(axis=1)
    map_batch(batch, unary, pairwise)  # first call compiles (or loads the cache)
    t0 = time.perf_counter()
    labels = map_batch(batch, unary, pairwise)
    t_vit = time.perf_counter() - t0
    node, _, _ = marginals_batch(batch, unary, pairwise, edge_marginals=None)
    t0 = time.perf_counter()
    node, _, _ = marginals_batch(batch, unary, pairwise, edge_marginals=None)
    t_fb = time.perf_counter() - t0

    print(f"letter accuracy, independent classifier : {np.mean(independent == y_te):.4f}")
    print(f"letter accuracy, chain MAP (Viterbi)    : {np.mean(labels == y_te):.4f}"
          f"   ({t_vit * 1e3:.1f} ms for {batch.n_samples} words)")
    print(f"letter accuracy, max marginal           : {np.mean(node.argmax(1) == y_te):.4f}"
          f"   ({t_fb * 1e3:.1f} ms forward-backward)")
    letters = data.target_names
    for i in range(3):
        sl = slice(batch.node_offsets[i], batch.node_offsets[i + 1])
        true, ind, vit = ("".join(letters[a[sl]]) for a in (y_te, independent, labels))
        print(f"  true {true:>14}  independent {ind:>14}  viterbi {vit:>14}")
    return 0


def main(argv=None):
    parser = argparse.ArgumentParser(prog="python -m skstruct")
    sub = parser.add_subparsers(dest="command", required=True)
    p = sub.add_parser("demo", help="chain inference on the OCR letters data set")
    p.add_argument("--fold", type=int, default=0, help="test fold (0-9)")
    args = parser.parse_args(argv)
    return demo(args)


if __name__ == "__main__":
    sys.exit(main())
