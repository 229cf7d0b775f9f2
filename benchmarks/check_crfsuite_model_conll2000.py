"""Check that a model trained by CRFsuite, loaded by the drop-in, tags as CRFsuite does.

Trains python-crfsuite's L-BFGS CRF on CoNLL-2000 chunking (the features of
sklearn-crfsuite's tutorial, :func:`skstruct.datasets.conll_features`), saves the
model, loads the file with ``skstruct.compat.sklearn_crfsuite.CRF(model_filename=path)``
(which reads CRFsuite's labels and weights into :class:`skstruct.CRF`) and compares,
on the test sentences, skstruct's predictions, marginals and sequence probabilities
with those of python-crfsuite's ``Tagger`` on the same file.  Exits with status 1 if
a sentence is tagged differently or a marginal differs by more than ``--atol``.
``Tagger.info()`` gives the weights with 6 decimals, so marginals and probabilities
agree to about 1e-6, not to the last bit.

Usage::

    python benchmarks/check_crfsuite_model_conll2000.py --data /path/to/conll2000

``--data`` is a folder holding CoNLL-2000's ``train.txt`` and ``test.txt``; without
it they are fetched by :func:`skstruct.datasets.fetch_conll2000`.  Needs
python-crfsuite (the ``bench`` extra: ``python -m pip install ".[bench]"``).
"""

import argparse
import os
import sys
import tempfile
import time

import numpy as np

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, ROOT)   # this checkout's skstruct, not an installed one

from skstruct.compat.sklearn_crfsuite import CRF  # noqa: E402
from skstruct.datasets import conll_features, fetch_conll2000, load_conll  # noqa: E402


def data(folder, part):
    if folder is None:
        return fetch_conll2000(part)
    return load_conll(os.path.join(folder, f"{part}.txt"))


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--data", help="folder of CoNLL-2000's train.txt and test.txt")
    parser.add_argument("--c1", type=float, default=0.1)
    parser.add_argument("--c2", type=float, default=0.1)
    parser.add_argument("--max-iterations", type=int, default=50)
    parser.add_argument("--n-probability", type=int, default=300,
                        help="test sentences whose sequence probability is compared")
    parser.add_argument("--atol", type=float, default=1e-5,
                        help="largest difference of marginals accepted")
    args = parser.parse_args()
    import pycrfsuite

    train, test = data(args.data, "train"), data(args.data, "test")
    X_train, X_test = conll_features(train.tokens), conll_features(test.tokens)
    y_train = [y.tolist() for y in train.y]
    y_test = [y.tolist() for y in test.y]

    with tempfile.TemporaryDirectory() as tmp:
        path = os.path.join(tmp, "conll2000.crfsuite")
        trainer = pycrfsuite.Trainer(algorithm="lbfgs", verbose=False)
        for xseq, yseq in zip(X_train, y_train):
            trainer.append(xseq, yseq)
        trainer.set_params({"c1": args.c1, "c2": args.c2,
                            "max_iterations": args.max_iterations})
        t0 = time.perf_counter()
        trainer.train(path)
        train_s = time.perf_counter() - t0
        tagger = pycrfsuite.Tagger()
        tagger.open(path)

        t0 = time.perf_counter()
        crf = CRF(model_filename=path)
        ours = crf.predict(X_test)
        marg = crf.predict_marginals(X_test)
        ours_s = time.perf_counter() - t0

        theirs, worst, n_same = [], 0.0, 0
        for i, xseq in enumerate(X_test):
            tags = tagger.tag(xseq)
            theirs.append(tags)
            n_same += list(ours[i]) == tags
            for t, m in enumerate(marg[i]):
                for label in tagger.labels():
                    worst = max(worst, abs(m[label] - tagger.marginal(label, t)))
        rel = 0.0
        for xseq, tags in zip(X_test[:args.n_probability], theirs):
            tagger.set(xseq)
            p = tagger.probability(tags)
            crf.tagger_.set(xseq)
            rel = max(rel, abs(crf.tagger_.probability(tags) - p) / p)
        info = tagger.info()
        tagger.close()

    flat_t = [label for seq in y_test for label in seq]
    acc_ours = np.mean([a == b for a, b in zip(flat_t, (t for s in ours for t in s))])
    acc_theirs = np.mean([a == b for a, b in zip(flat_t, (t for s in theirs for t in s))])
    n_state = sum(w != 0 for w in info.state_features.values())
    print(f"CoNLL-2000: {len(X_train)} training sentences, {len(X_test)} test sentences "
          f"({len(flat_t)} tokens)")
    print(f"CRFsuite L-BFGS, c1={args.c1}, c2={args.c2}, {args.max_iterations} iterations: "
          f"{len(info.labels)} labels, {len(info.attributes)} attributes, {n_state} non-zero "
          f"state features, {len(info.transitions)} transitions; trained in {train_s:.1f} s")
    print(f"loaded by the drop-in: {crf.num_attributes_} attributes, "
          f"{len(crf.state_features_)} non-zero state features, "
          f"{len(crf.transition_features_)} non-zero transitions; loading and tagging the "
          f"test set took {ours_s:.1f} s")
    print(f"sentences tagged identically: {n_same} of {len(X_test)}")
    print(f"token accuracy: CRFsuite {acc_theirs:.4f}, drop-in {acc_ours:.4f}")
    print(f"largest difference of a marginal: {worst:.2e}")
    print(f"largest relative difference of a sequence probability "
          f"({min(args.n_probability, len(X_test))} sentences): {rel:.2e}")
    ok = n_same == len(X_test) and worst <= args.atol
    print("OK" if ok else "MISMATCH")
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
