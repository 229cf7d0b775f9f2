"""
Chunking CoNLL-2000 with a CRF on token feature dicts
=====================================================

Text chunking, the CoNLL-2000 shared task (Erik F. Tjong Kim Sang and Sabine
Buchholz, "Introduction to the CoNLL-2000 Shared Task: Chunking", CoNLL-2000
and LLL-2000, 2000): split a sentence into non-overlapping phrases (noun
phrases, verb phrases, prepositional phrases, ...) by tagging every token
``B-X`` (first token of a phrase of type X), ``I-X`` (inside it) or ``O``
(outside any phrase).

This is the task of sklearn-crfsuite's tutorial, and the pipeline is the one
its users know: per-token feature dicts (the word, its suffixes, its shape,
its part-of-speech tag and those of its neighbours), vectorised by
scikit-learn's ``DictVectorizer`` and fed to a linear-chain conditional random
field (Lafferty, McCallum & Pereira, "Conditional Random Fields: Probabilistic
Models for Segmenting and Labeling Sequence Data", ICML 2001), trained with
the tutorial's elastic-net penalty by OWL-QN (Andrew & Gao, "Scalable
Training of L1-Regularized Log-Linear Models", ICML 2007), as CRFsuite
(Okazaki, "CRFsuite: a fast implementation of Conditional Random Fields
(CRFs)", software, 2007) trains it.  The model is scored by chunk F1, as the shared task's
``conlleval`` script computes it, and then read: which features weigh for
and against each tag, which tag may follow which, and why one sentence was
tagged the way it was.
"""

from collections import Counter

import matplotlib.pyplot as plt
import numpy as np
from sklearn.feature_extraction import DictVectorizer
from sklearn.pipeline import make_pipeline

from skstruct import CRF
from skstruct.datasets import conll_features, fetch_conll2000
from skstruct.inspection import explain_prediction, explain_weights
from skstruct.metrics import segment_f1, segments
from skstruct.preprocessing import NodeTransformer

# %%
# Data and features
# -----------------
# :func:`~skstruct.datasets.fetch_conll2000` downloads the Wall Street Journal
# sentences of the shared task once and keeps them in skstruct's data
# directory (``~/skstruct_data``, or ``$SKSTRUCT_DATA``).  Each sentence comes
# as an array of (word, part-of-speech tag) rows and an array of chunk tags.
# :func:`~skstruct.datasets.conll_features` turns each token into the feature
# dict of sklearn-crfsuite's tutorial.  To keep this page quick the CRF
# trains on the first 3000 of the 8936 training sentences; it is tested on
# the whole test set.
train = fetch_conll2000("train")
test = fetch_conll2000("test")
n_train = 3000
X_train = conll_features(train.tokens[:n_train])
y_train = train.y[:n_train]
X_test = conll_features(test.tokens)
y_test = test.y
print(f"{n_train} training sentences ({sum(len(y) for y in y_train)} tokens), "
      f"{len(X_test)} test sentences ({sum(len(y) for y in y_test)} tokens)")
print(" ".join(f"{w}/{t}" for w, t in zip(train.tokens[0][:8, 0], y_train[0][:8])))
# the features of the second token that describe the token itself (others
# describe its neighbours: "-1:...", "+1:...")
print({k: v for k, v in X_train[0][1].items() if k[0] not in "+-"})

# %%
# The pipeline
# ------------
# :class:`~skstruct.preprocessing.NodeTransformer` applies the
# ``DictVectorizer`` to every token of every sentence, so the pipeline takes
# lists of feature dicts and returns lists of tags.  CRFsuite's penalty
# ``c1 ||w||_1 + c2 ||w||^2`` is :class:`~skstruct.CRF`'s ``C`` and
# ``l1_ratio``: ``C = 1 / (c1 + 2 c2)`` and ``l1_ratio = c1 / (c1 + 2 c2)``,
# so the tutorial's ``c1 = c2 = 0.1`` is ``C = 10/3`` and ``l1_ratio = 1/3``.
# ``feature_pairs="seen"`` keeps only the feature-tag pairs seen in training,
# CRFsuite's default feature set; 100 iterations are the tutorial's
# ``max_iterations`` (the CRF warns that the objective is still decreasing).
crf = make_pipeline(
    NodeTransformer(DictVectorizer()),
    CRF(C=10 / 3, l1_ratio=1 / 3, max_iter=100, feature_pairs="seen"),
)
crf.fit(X_train, y_train)
y_pred = crf.predict(X_test)
print(f"{crf[-1].n_nonzero_} non-zero weights; test chunk F1 {segment_f1(y_test, y_pred):.4f}")

# %%
# On the whole training set, with the same features, penalty and number of
# iterations, the benchmarks page records a chunk F1 of 92.95 for this CRF
# and 92.94 for CRFsuite's own training (measured on 2026-11-27, section
# "CoNLL-2000 chunking: every training algorithm against CRFsuite's").
#
# Chunk F1 by phrase type
# -----------------------
# A predicted chunk counts only if a true chunk has the same type, the same
# first token and the same last token.  :func:`~skstruct.metrics.segments`
# reads the chunks of a tag sequence as ``conlleval`` does, so the score of
# each phrase type takes a few lines.
true_n, pred_n, right_n = Counter(), Counter(), Counter()
for t, p in zip(y_test, y_pred):
    true_chunks, pred_chunks = segments(t), segments(p)
    true_n.update(c[0] for c in true_chunks)
    pred_n.update(c[0] for c in pred_chunks)
    right_n.update(c[0] for c in true_chunks & pred_chunks)
types = sorted(true_n, key=true_n.get)
f1 = np.array([2 * right_n[k] / (true_n[k] + pred_n[k]) for k in types])
for k, v in zip(types[::-1], f1[::-1]):
    print(f"{k:6s} F1 {v:.3f}  ({true_n[k]} chunks in the test set)")

fig, ax = plt.subplots(figsize=(7, 4.5))
bars = ax.barh(types, f1, color="tab:blue")
for bar, k in zip(bars, types):
    ax.text(bar.get_width() + 0.01, bar.get_y() + bar.get_height() / 2,
            f"{bar.get_width():.2f}  (n={true_n[k]})", va="center", fontsize=8)
ax.axvline(segment_f1(y_test, y_pred), color="0.3", ls="--", lw=1,
           label=f"all chunks: {segment_f1(y_test, y_pred):.3f}")
ax.set_xlim(0, 1.25)
ax.set_xlabel("chunk F1 on the test set")
ax.set_title(f"CRF trained on {n_train} CoNLL-2000 sentences")
ax.legend(loc="lower right")
fig.tight_layout()
plt.show()

# %%
# The rare types (``CONJP``, ``LST``, ``INTJ``) have a handful of test
# chunks, and few training examples: their scores are noisy.  Noun,
# prepositional and verb phrases, nine test chunks in ten, are found well.
#
# What the model learned
# ----------------------
# :func:`~skstruct.inspection.explain_weights` reads the weights through the
# pipeline, so the features carry the ``DictVectorizer``'s names.  The
# transition table scores a tag followed by the next one: ``I-X`` may only
# follow ``B-X`` or ``I-X``, which the CRF has learned (no rule was given to
# it): large positive weights from ``B-X`` and ``I-X`` to ``I-X``, negative
# ones from ``O`` and from the other types.
weights = explain_weights(crf, top=8)
for label in ("B-NP", "B-VP"):
    target = weights.targets[label]
    print(f"{label}: strongest for  " + ", ".join(
        f"{f.name} ({f.weight:+.2f})" for f in target.positive[:4]))
    print(f"{label}: strongest against " + ", ".join(
        f"{f.name} ({f.weight:+.2f})" for f in target.negative[:4]))

names = [str(c) for c in weights.classes]
lim = np.abs(weights.transitions).max()
fig, ax = plt.subplots(figsize=(8, 7))
im = ax.imshow(weights.transitions, cmap="RdBu_r", vmin=-lim, vmax=lim)
ax.set_xticks(range(len(names)), names, rotation=90, fontsize=8)
ax.set_yticks(range(len(names)), names, fontsize=8)
ax.set_xlabel("next tag")
ax.set_ylabel("tag")
ax.set_title("learned transition weights (red: favoured, blue: penalised)")
fig.colorbar(im, ax=ax, shrink=0.7)
fig.tight_layout()
plt.show()

# %%
# The features behind three tags: the eight largest positive and the eight
# largest negative weights of each.
fig, axes = plt.subplots(1, 3, figsize=(13, 5))
for ax, label in zip(axes, ("B-NP", "B-PP", "B-VP")):
    target = weights.targets[label]
    feats = list(target.negative[::-1]) + list(target.positive[::-1])
    vals = [f.weight for f in feats]
    ax.barh(range(len(feats)), vals, color=["tab:red" if v > 0 else "tab:blue" for v in vals])
    ax.set_yticks(range(len(feats)), [f.name for f in feats], fontsize=8)
    ax.axvline(0, color="0.3", lw=0.8)
    ax.set_title(label)
    ax.set_xlabel("weight")
fig.tight_layout()
plt.show()

# %%
# Why one sentence was tagged as it was
# -------------------------------------
# A linear-chain CRF scores a tagging as a sum over tokens: the weights of
# each token's features for its tag, plus the transition weight from the
# previous tag.  :func:`~skstruct.inspection.explain_prediction` splits the
# score of the predicted tagging that way, token by token, with the marginal
# probability of each predicted tag.  Here, the first test sentence of 10 to
# 16 tokens with a tagging error.
pick = next(i for i, (t, p) in enumerate(zip(y_test, y_pred))
            if 10 <= len(t) <= 16 and (t != p).any())
expl = explain_prediction(crf, X_test[pick], top=4)
words = test.tokens[pick][:, 0]
truth = y_test[pick]
print(" ".join(words))
for tok in expl.tokens:
    mark = "" if tok.label == truth[tok.index] else f"   <- true tag {truth[tok.index]}"
    print(f"{words[tok.index]:>12s}  {tok.label:7s} p={tok.probability:.2f}  "
          f"features {tok.feature_score:+6.2f}  transition {tok.transition:+6.2f}{mark}")

# %%
# The tokens the CRF got wrong, with the features that decided them:
for tok in expl.tokens:
    if tok.label != truth[tok.index]:
        print(f"{str(words[tok.index])!r}: predicted {tok.label}, true {truth[tok.index]}, "
              f"probability {tok.probability:.2f}")
        for f in tok.features:
            print(f"    {f.contribution:+.3f}  {f.name}")

pos = np.arange(len(words))
feat = np.array([tok.feature_score for tok in expl.tokens])
trans = np.array([tok.transition for tok in expl.tokens])
prob = np.array([tok.probability for tok in expl.tokens])
wrong = np.array([tok.label != truth[tok.index] for tok in expl.tokens])
fig, (ax, bx) = plt.subplots(2, 1, figsize=(11, 6.5), sharex=True,
                             gridspec_kw={"height_ratios": [3, 1]})
ax.bar(pos, feat, color="tab:gray", label="token features")
# a transition adds on top of the features when positive, below zero when negative
ax.bar(pos, trans, bottom=np.where(trans > 0, np.maximum(feat, 0), np.minimum(feat, 0)),
       color="tab:orange", label="transition from the previous tag")
ax.axhline(0, color="0.3", lw=0.8)
ax.set_ylabel("score of the predicted tag")
ax.legend(fontsize=8, loc="upper left")
ax.set_title(f"test sentence {pick}: the predicted tag above each token (red: wrong)")
height = np.maximum(feat, 0) + np.maximum(trans, 0)
for i, tok in enumerate(expl.tokens):
    ax.text(i, height[i] + 0.3, tok.label, ha="center", va="bottom", fontsize=8,
            color="red" if wrong[i] else "black")
ax.set_ylim(top=1.12 * height.max())
bx.bar(pos, prob, color=np.where(wrong, "tab:red", "tab:green"))
bx.set_ylim(0, 1)
bx.set_ylabel("marginal\nprobability")
bx.set_xticks(pos, [f"{w}\n({t})" for w, t in zip(words, truth)], fontsize=8, rotation=60)
bx.set_xlabel("token (true tag)")
fig.tight_layout()
plt.show()
