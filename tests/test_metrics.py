import warnings

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st
from sklearn.base import BaseEstimator
from sklearn.model_selection import GridSearchCV, KFold, cross_val_score, cross_validate

from skstruct.metrics import (
    SCORERS,
    hamming_accuracy,
    hamming_scorer,
    segment_f1,
    segment_f1_scorer,
    segments,
    sequence_accuracy,
    sequence_scorer,
)

A = np.array


# ---------------------------------------------------------------- hamming / sequence


def test_hamming_counts_nodes_over_all_samples():
    y_true = [A([0, 1, 2]), A([1]), A([2, 2, 2, 2])]
    y_pred = [A([0, 1, 1]), A([0]), A([2, 2, 2, 2])]
    assert hamming_accuracy(y_true, y_pred) == pytest.approx(6 / 8)
    assert sequence_accuracy(y_true, y_pred) == pytest.approx(1 / 3)


def test_hamming_averaged_over_samples():
    y_true = [A([0, 1, 2]), A([1]), A([], dtype=int), A([2, 2, 2, 2])]
    y_pred = [A([0, 1, 1]), A([0]), A([], dtype=int), A([2, 2, 2, 2])]
    # (2/3 + 0 + 1) / 3: the empty sample is left out
    assert hamming_accuracy(y_true, y_pred, average="samples") == pytest.approx(5 / 9)
    assert hamming_accuracy(y_true, y_pred, average="nodes") == pytest.approx(6 / 8)
    Y = np.array([[0, 1], [1, 1], [0, 0]])
    P = np.array([[0, 0], [1, 1], [1, 1]])
    assert hamming_accuracy(Y, P, average="samples") == pytest.approx(0.5)
    with pytest.raises(ValueError, match="average"):
        hamming_accuracy(Y, P, average="micro")


def test_string_labels_and_labels_never_seen_are_just_errors():
    y_true = [A(["a", "b"]), A(["c"])]
    y_pred = [A(["a", "z"]), A(["c"])]
    assert hamming_accuracy(y_true, y_pred) == pytest.approx(2 / 3)
    # Predictions of another type than the truth compare unequal, never crash.
    assert hamming_accuracy(y_true, [A([0, 1]), A([2])]) == 0.0
    assert hamming_accuracy([["a", "b"], ["c"]], [["a", "b"], ["c"]]) == 1.0


def test_empty_samples_add_nothing_and_count_as_right():
    y_true = [A([1, 2]), A([], dtype=int), A(["x"], dtype=object)[:0], A([3])]
    y_pred = [A([1, 0]), A([], dtype=int), A([]), A([3])]
    assert hamming_accuracy(y_true, y_pred) == pytest.approx(2 / 3)
    assert sequence_accuracy(y_true, y_pred) == pytest.approx(3 / 4)
    # Empty samples do not turn string labels into another type.
    assert hamming_accuracy([A([]), A(["a"])], [A(["a"])[:0], A(["a"])]) == 1.0


def test_no_nodes_at_all_is_an_error():
    with pytest.raises(ValueError, match="every sample is empty"):
        hamming_accuracy([A([])], [A([])])
    assert sequence_accuracy([A([])], [A([])]) == 1.0
    with pytest.raises(ValueError, match="no samples"):
        sequence_accuracy([], [])


def test_multilabel_and_multiclass_formats():
    y_true = A([[1, 0, 1], [0, 0, 1]])
    y_pred = A([[1, 1, 1], [0, 0, 1]])
    assert hamming_accuracy(y_true, y_pred) == pytest.approx(5 / 6)
    assert sequence_accuracy(y_true, y_pred) == pytest.approx(1 / 2)
    # The formats mix as long as the node counts agree.
    assert hamming_accuracy(list(y_true), y_pred) == pytest.approx(5 / 6)
    assert hamming_accuracy(A([1, 2, 3]), A([1, 2, 0])) == pytest.approx(2 / 3)
    assert sequence_accuracy(["a", "b"], A(["a", "c"])) == pytest.approx(1 / 2)


def test_mismatched_samples_are_named():
    with pytest.raises(ValueError, match="y_true has 2 samples but y_pred has 1"):
        hamming_accuracy([A([1]), A([2])], [A([1])])
    with pytest.raises(ValueError, match="sample 1: y_true has 2 labels but y_pred has 3"):
        sequence_accuracy([A([1]), A([2, 3])], [A([1]), A([2, 3, 4])])
    with pytest.raises(ValueError, match="y_pred: sample 0 must be a 1-D"):
        hamming_accuracy([A([1, 2])], [A([[1, 2]])])
    with pytest.raises(ValueError, match="list of 1-D label arrays"):
        hamming_accuracy("abc", "abc")
    with pytest.raises(ValueError, match="shape"):
        hamming_accuracy(np.zeros((2, 2, 2)), np.zeros((2, 2, 2)))


# ---------------------------------------------------------------- chunks


def test_segments_follow_conlleval():
    assert segments(["B-NP", "I-NP", "O", "B-VP"]) == {("NP", 0, 2), ("VP", 3, 4)}
    # B- always opens a chunk, even after a chunk of the same type.
    assert segments(["B-NP", "B-NP", "I-NP"]) == {("NP", 0, 1), ("NP", 1, 3)}
    # An I- after O, or after another type, opens a chunk (IOB1 reads like IOB2).
    assert segments(["I-NP", "I-NP", "I-VP", "O", "I-PP"]) == {
        ("NP", 0, 2), ("VP", 2, 3), ("PP", 4, 5)}
    assert segments(["I-NP", "B-NP", "O"], scheme="iob1") == {("NP", 0, 1), ("NP", 1, 2)}
    # A chunk runs to the end of the sequence; types may contain hyphens.
    assert segments(["O", "B-B-X", "I-B-X"]) == {("B-X", 1, 3)}
    assert segments(["B", "I", "O", "I"]) == {("", 0, 2), ("", 3, 4)}
    assert segments([]) == set()
    assert segments(["O", "O"]) == set()


def test_segments_bioes():
    tags = ["S-NP", "B-VP", "I-VP", "E-VP", "S-VP", "O", "B-NP", "E-NP", "E-NP"]
    expected = {("NP", 0, 1), ("VP", 1, 4), ("VP", 4, 5), ("NP", 6, 8), ("NP", 8, 9)}
    assert segments(tags, scheme="bioes") == expected
    assert segments(tags, scheme="iobes") == expected
    assert segments(tags) == expected
    # E- followed by I- of the same type starts a new chunk (conlleval's rule).
    assert segments(["B-X", "E-X", "I-X", "E-X"]) == {("X", 0, 2), ("X", 2, 4)}


def test_scheme_decides_the_allowed_prefixes():
    with pytest.raises(ValueError, match="'S-NP' is not"):
        segments(["S-NP"], scheme="iob2")
    with pytest.raises(ValueError, match="'X-NP' is not"):
        segments(["X-NP"])
    with pytest.raises(ValueError, match="scheme must be one of"):
        segments(["O"], scheme="bilou")
    with pytest.raises(ValueError, match="y_pred sample 1: tag 'Q' is not"):
        segment_f1([["O"], ["O"]], [["O"], ["Q"]])
    with pytest.raises(ValueError, match="must be strings"):
        segment_f1([A([1])], [A([1])])


def test_segment_f1_hand_computed():
    y_true = [["B-NP", "I-NP", "O", "B-VP"]]
    assert segment_f1(y_true, y_true) == 1.0
    # 1 of 3 predicted right, 1 of 2 true found: P = 1/3, R = 1/2, F = 0.4.
    assert segment_f1(y_true, [["B-NP", "B-NP", "O", "B-VP"]]) == pytest.approx(0.4)
    # A chunk with a wrong end is wrong; a wrong type is wrong.
    assert segment_f1(y_true, [["B-NP", "O", "O", "B-VP"]]) == pytest.approx(0.5)
    assert segment_f1(y_true, [["B-PP", "I-PP", "O", "B-VP"]]) == pytest.approx(0.5)
    # IOB1 predictions against IOB2 truth: the same chunks read alike.
    assert segment_f1(y_true, [["I-NP", "I-NP", "O", "I-VP"]]) == 1.0
    # Several samples: counts are summed (micro average).
    y_true2 = y_true + [["B-PP", "B-NP", "I-NP"]]
    y_pred2 = [["B-NP", "I-NP", "O", "O"], ["B-PP", "B-NP", "O"]]
    # 4 true chunks, 3 predicted, 2 correct: P = 2/3, R = 2/4.
    p, r = 2 / 3, 2 / 4
    assert segment_f1(y_true2, y_pred2) == pytest.approx(2 * p * r / (p + r))


def test_segment_f1_without_chunks_is_zero_like_conlleval():
    assert segment_f1([["O", "O"]], [["O", "O"]]) == 0.0
    assert segment_f1([["B-NP"]], [["O"]]) == 0.0
    assert segment_f1([["O"]], [["B-NP"]]) == 0.0


def test_chunks_never_cross_samples():
    y_true = [A(["O", "B-NP"]), A(["I-NP", "O"])]
    # Joined, these would be one chunk; per sample they are two.
    assert segments(["O", "B-NP", "I-NP", "O"]) == {("NP", 1, 3)}
    assert segment_f1(y_true, [A(["O", "B-NP"]), A(["B-NP", "O"])]) == 1.0
    assert segment_f1(y_true, y_true) == 1.0


@st.composite
def chunkings(draw):
    """A sequence length and non-overlapping (type, start, end) chunks."""
    n = draw(st.integers(0, 12))
    chunks, pos = [], 0
    while pos < n:
        if draw(st.booleans()):
            end = draw(st.integers(pos + 1, n))
            chunks.append((draw(st.sampled_from(["NP", "VP"])), pos, end))
            pos = end
        else:
            pos += 1
    return n, chunks


def _encode(n, chunks, scheme):
    tags = ["O"] * n
    prev_end = {}
    for kind, start, end in chunks:
        for t in range(start, end):
            tags[t] = "I-" + kind
        if scheme == "iob2" or prev_end.get(kind) == start:
            tags[start] = "B-" + kind
        if scheme == "bioes":
            tags[start] = ("S-" if end - start == 1 else "B-") + kind
            if end - start > 1:
                tags[end - 1] = "E-" + kind
        prev_end = {kind: end}
    return tags


@given(chunkings(), st.sampled_from(["iob1", "iob2", "bioes"]))
def test_segments_recover_the_chunks_of_every_scheme(chunking, scheme):
    n, chunks = chunking
    tags = _encode(n, chunks, scheme)
    assert segments(tags, scheme=scheme) == set(chunks)
    assert segments(tags) == set(chunks)


# ---------------------------------------------------------------- scorers


class _Memorizer(BaseEstimator):
    """Predicts each training sample's labels (looked up by its first feature), or 'O'."""

    def __init__(self, flip=0):
        self.flip = flip

    def fit(self, X, y):
        self.table_ = {float(x[0, 0]): np.asarray(yi) for x, yi in zip(X, y)}
        return self

    def predict(self, X):
        out = []
        for x in X:
            yi = self.table_.get(float(x[0, 0]))
            yi = np.full(len(x), "O") if yi is None else yi.copy()
            if self.flip and len(yi):
                yi[0] = "O"
            out.append(yi)
        return out


def _toy_chunks(n=12):
    rng = np.random.default_rng(0)
    X, y = [], []
    for i in range(n):
        length = int(rng.integers(1, 6))
        X.append(np.full((length, 2), float(i)))
        y.append(np.array(rng.choice(["B-NP", "I-NP", "O"], size=length)))
    return X, y


@pytest.mark.parametrize("scoring", [hamming_scorer, sequence_scorer, segment_f1_scorer])
def test_scorers_work_in_cross_validation_on_ragged_y(scoring):
    X, y = _toy_chunks()
    est = _Memorizer().fit(X, y)
    assert scoring(est, X, y) == 1.0
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        scores = cross_val_score(_Memorizer(), X, y, scoring=scoring, cv=3,
                                 error_score="raise")
    assert not np.isnan(scores).any()
    assert np.all((scores >= 0) & (scores <= 1))


def test_scorers_dict_in_grid_search():
    X, y = _toy_chunks()
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        search = GridSearchCV(_Memorizer(), {"flip": [1, 0]}, scoring=SCORERS,
                              refit="hamming_accuracy", cv=KFold(3), error_score="raise")
        search.fit(X + X, y + y)
        res = cross_validate(_Memorizer(), X, y, scoring=SCORERS, cv=2)
    assert search.best_params_ == {"flip": 0}
    for name in SCORERS:
        assert not np.isnan(search.cv_results_[f"mean_test_{name}"]).any()
        assert not np.isnan(res[f"test_{name}"]).any()
    assert search.score(X, y) == 1.0
