"""NodeTransformer's direct vocabulary look-up gives the general path's matrices.

A fitted ``DictVectorizer`` transforms chains of feature dicts through one dict look-up
per item and one compiled pass (``skstruct.preprocessing._transform_dicts_fast``); every
other input takes the general path.  Both must return the same blocks: same type, dtypes,
shape, stored entries and flags, and the same matrix as sklearn's own ``DictVectorizer``.
"""

import numpy as np
import pytest
import scipy.sparse as sp
from sklearn.feature_extraction import DictVectorizer

import skstruct.preprocessing as pre
from skstruct.preprocessing import NodeTransformer

WORDS = ["the", "a=b", "x==y", "=", "", "dog", "Dog", "7", "True", "b=", "=c"]


def _token(rng, unseen):
    f = {}
    for _ in range(int(rng.integers(0, 7))):
        kind = rng.integers(0, 6)
        key = ["w", "w=1", "p", "n", "b", "=k", "k="][int(rng.integers(0, 7))]
        if unseen and rng.random() < 0.3:
            key = key + "?"
        if kind <= 1:
            value = WORDS[int(rng.integers(0, len(WORDS)))]
            if unseen and rng.random() < 0.3:
                value += "!"
        elif kind == 2:
            value = bool(rng.integers(0, 2))
        elif kind == 3:
            value = int(rng.integers(-2, 3))
        elif kind == 4:
            value = float(rng.choice([0.0, -0.0, 1.0, 2.5, -1.0, np.nan]))
        else:
            value = 1.0
        f[key] = value
    return f


def _sentences(rng, n, unseen=False, empty=True):
    return [[_token(rng, unseen) for _ in range(int(rng.integers(0 if empty else 1, 6)))]
            for _ in range(n)]


def _general(nt, X, monkeypatch):
    with monkeypatch.context() as m:
        m.setattr(pre, "_transform_dicts_fast", lambda t, X: None)
        return nt.transform(X)


def _same_block(a, b):
    assert type(a) is type(b)
    assert a.shape == b.shape
    assert a.dtype == b.dtype
    assert a.indices.dtype == b.indices.dtype and a.indptr.dtype == b.indptr.dtype
    np.testing.assert_array_equal(a.indptr, b.indptr)
    np.testing.assert_array_equal(a.indices, b.indices)
    np.testing.assert_array_equal(a.data, b.data)      # NaN where NaN (equal_nan)
    assert a.has_sorted_indices and b.has_sorted_indices


@pytest.mark.parametrize("seed", range(12))
def test_fast_transform_equals_general_path(seed, monkeypatch):
    rng = np.random.default_rng(seed)
    train = _sentences(rng, 30)
    nt = NodeTransformer(DictVectorizer()).fit(train)
    for X in (_sentences(rng, 1, unseen=True, empty=False), _sentences(rng, 8, unseen=True),
              train[:1], train):
        if not any(X):
            continue
        fast = pre._transform_dicts_fast(nt.transformer_, X)
        assert fast is not None                       # the fast path answered
        assert nt.transform(X)[0] is not None
        general = _general(nt, X, monkeypatch)
        assert len(fast) == len(general) == len(X)
        for a, b in zip(fast, general):
            _same_block(a, b)
        # and both are sklearn's own matrix of the stacked tokens
        tokens = [tok for sentence in X for tok in sentence]
        ref = nt.transformer_.transform(tokens)
        np.testing.assert_array_equal(sp.vstack(fast).toarray(), ref.toarray())


def test_string_numeric_unseen_and_empty():
    train = [[{"w": "a", "n": 2.0, "b": True}, {"w": "b=c", "b": False}], []]
    nt = NodeTransformer(DictVectorizer()).fit(train)
    names = list(nt.transformer_.feature_names_)
    X = [[{"w": "b=c", "n": 3, "b": True, "unseen": "z", "w2": 1.0},
          {"w": "zz", "n": 0, "b": False}], [], [{"n": -1.5}]]
    out = nt.transform(X)
    assert pre._transform_dicts_fast(nt.transformer_, X) is not None
    assert [o.shape for o in out] == [(2, len(names)), (0, len(names)), (1, len(names))]
    dense = out[0].toarray()
    expect = np.zeros((2, len(names)))
    expect[0, names.index("w=b=c")] = 1.0
    expect[0, names.index("n")] = 3.0
    expect[0, names.index("b")] = 1.0
    np.testing.assert_array_equal(dense, expect)
    assert out[0].nnz == 3 and out[2].toarray()[0, names.index("n")] == -1.5
    # one empty sentence on its own: the general path's empty block
    assert nt.transform([[]])[0].shape == (0, len(names))


def test_general_path_where_the_fast_one_does_not_apply(monkeypatch):
    train = [[{"a": "x", "a=x": 1.0, "k": 1.0}]]
    nt = NodeTransformer(DictVectorizer()).fit(train)
    # two items of one token in one column: left to the general path (sklearn's order)
    X = [[{"a": "x", "a=x": 2.0}]]
    assert pre._transform_dicts_fast(nt.transformer_, X) is None
    np.testing.assert_array_equal(nt.transform(X)[0].toarray(),
                                  nt.transformer_.transform(X[0]).toarray())
    # other value types (numpy scalars), keys that are not strings, graph tuples
    for X in ([[{"k": np.float32(2.0)}]], [[{1: "x"}]],
              [([{"k": 1.0}], np.zeros((0, 2), int))]):
        assert pre._transform_dicts_fast(nt.transformer_, X) is None
    # a vectoriser without sparse output or of another dtype
    for t in (DictVectorizer(sparse=False), DictVectorizer(dtype=np.float32)):
        nt2 = NodeTransformer(t).fit(train)
        assert pre._transform_dicts_fast(nt2.transformer_, [[{"k": 1.0}]]) is None


def test_refit_rebuilds_the_table():
    nt = NodeTransformer(DictVectorizer()).fit([[{"w": "a"}]])
    assert nt.transform([[{"w": "a"}, {"w": "b"}]])[0].toarray().tolist() == [[1.0], [0.0]]
    nt.fit([[{"w": "b"}, {"w": "c"}]])
    assert nt.transform([[{"w": "a"}, {"w": "b"}]])[0].toarray().tolist() == [[0.0, 0.0],
                                                                              [1.0, 0.0]]


def test_values_sklearn_reads_otherwise_take_the_general_path():
    # a tuple of strings is one column per string for sklearn; None is a number's name
    train = [[{"a": "x", "n": 2.0}, {"a": "y"}]]
    nt = NodeTransformer(DictVectorizer()).fit(train)
    for X in ([[{"a": ("x", "y")}]], [[{"a": "x", "n": None}]], [[{"a": ["x"]}]],
              [[{"a": "x"}, [("a", "x")]]]):
        assert pre._transform_dicts_fast(nt.transformer_, X) is None
    out = nt.transform([[{"a": ("x", "y")}]])[0].toarray()
    np.testing.assert_array_equal(out, nt.transformer_.transform([{"a": ("x", "y")}]).toarray())
    # features never seen in fit, among known ones, in one sentence and in a batch
    X = [[{"a": "x", "zz": "x", "n": 3}, {"zz": 1.0, "a": "q"}]]
    for batch in (X, X + X):
        fast = pre._transform_dicts_fast(nt.transformer_, batch)
        assert fast is not None
        ref = nt.transformer_.transform([t for s in batch for t in s]).toarray()
        np.testing.assert_array_equal(sp.vstack(fast).toarray(), ref)
