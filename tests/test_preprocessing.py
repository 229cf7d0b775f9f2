import pickle

import numpy as np
import pytest
import scipy.sparse as sp
from sklearn.base import clone
from sklearn.decomposition import PCA
from sklearn.exceptions import NotFittedError
from sklearn.feature_extraction import DictVectorizer
from sklearn.feature_selection import SelectKBest, f_classif
from sklearn.pipeline import Pipeline
from sklearn.preprocessing import FunctionTransformer, StandardScaler
from sklearn.utils.estimator_checks import (
    check_do_not_raise_errors_in_init_or_set_params,
    check_estimator_repr,
    check_get_params_invariance,
    check_no_attributes_set_in_init,
    check_set_params,
)

from skstruct.datasets import load_letters
from skstruct.preprocessing import NodeTransformer


@pytest.fixture(scope="module")
def letters():
    d = load_letters()
    return d.X[:300], d.y[:300]


def _graphs(rng, n=5, n_features=3):
    X = []
    for i in range(n):
        n_nodes = int(rng.integers(0, 6)) if i else 4
        edges = np.column_stack([np.arange(n_nodes - 1), np.arange(1, n_nodes)])
        X.append((rng.normal(size=(n_nodes, n_features)), edges, rng.normal(size=(len(edges), 2))))
    return X


def test_standard_scaler_on_letters_scales_over_all_nodes(letters):
    X, _ = letters
    nt = NodeTransformer(StandardScaler())
    Xt = nt.fit_transform(X)
    assert isinstance(Xt, list) and len(Xt) == len(X)
    assert [x.shape for x in Xt] == [x.shape for x in X]
    stacked = np.concatenate(Xt)
    assert np.allclose(stacked.mean(axis=0), 0, atol=1e-10)
    std = stacked.std(axis=0)
    assert np.allclose(std[std > 0], 1)
    assert nt.n_features_in_ == 128
    for a, b in zip(nt.transform(X), Xt):
        np.testing.assert_allclose(a, b)


def test_graphs_keep_their_edges():
    X = _graphs(np.random.default_rng(0))
    Xt = NodeTransformer(PCA(n_components=2)).fit(X).transform(X)
    for (f, e, ef), (ft, et, eft) in zip(X, Xt):
        assert et is e and eft is ef
        assert ft.shape == (f.shape[0], 2)
    X2 = [(f, e) for f, e, _ in X]
    Xt2 = NodeTransformer(StandardScaler()).fit_transform(X2)
    assert all(len(t) == 2 and t[1] is s[1] for t, s in zip(Xt2, X2))


def test_pca_equals_pca_on_stacked_nodes(letters):
    X, _ = letters
    Xt = NodeTransformer(PCA(n_components=5, random_state=0)).fit_transform(X)
    ref = PCA(n_components=5, random_state=0).fit_transform(np.concatenate(X))
    np.testing.assert_allclose(np.concatenate(Xt), ref, atol=1e-8)


def test_sparse_input_and_output(letters):
    X = [sp.csr_matrix(x) for x in letters[0][:50]]
    X[3] = X[3].tocoo()
    X[4] = letters[0][4]  # dense and sparse samples stack together
    Xt = NodeTransformer(StandardScaler(with_mean=False)).fit_transform(X)
    assert all(sp.issparse(x) and x.format == "csr" for x in Xt)
    assert [x.shape for x in Xt] == [x.shape for x in X]
    stacked = sp.vstack(Xt).toarray()
    std = stacked.std(axis=0)
    assert np.allclose(std[std > 0], 1)


def test_dict_vectorizer_on_token_dicts():
    X = [[{"w": "the"}, {"w": "cat", "len": 3}], [], [{"w": "sat"}]]
    nt = NodeTransformer(DictVectorizer())
    Xt = nt.fit_transform(X)
    assert [x.shape for x in Xt] == [(2, 4), (0, 4), (1, 4)]
    assert all(sp.issparse(x) and x.format == "csr" for x in Xt)
    names = list(nt.get_feature_names_out())
    assert names == ["len", "w=cat", "w=sat", "w=the"]
    assert Xt[0].toarray().tolist() == [[0, 0, 0, 1], [3, 1, 0, 0]]
    assert not hasattr(nt, "n_features_in_")
    # Graph samples with list node containers.
    G = [(x, np.zeros((0, 2), int)) for x in X]
    Gt = nt.transform(G)
    assert all((g[0] != x).nnz == 0 for g, x in zip(Gt, Xt))


def test_single_table_is_transformed_directly():
    X = np.arange(12.0).reshape(4, 3)
    nt = NodeTransformer(StandardScaler())
    out = nt.fit_transform(X)
    np.testing.assert_allclose(out, StandardScaler().fit_transform(X))
    np.testing.assert_allclose(nt.transform(X), out)
    assert nt.n_features_in_ == 3
    sparse_out = NodeTransformer(StandardScaler(with_mean=False)).fit_transform(sp.csr_matrix(X))
    assert sp.issparse(sparse_out) and sparse_out.shape == (4, 3)


def test_node_labels_reach_supervised_transformers(letters):
    X, y = letters
    nt = NodeTransformer(SelectKBest(f_classif, k=7)).fit(X, y)
    ref = SelectKBest(f_classif, k=7).fit(np.concatenate(X), np.concatenate(y))
    np.testing.assert_array_equal(nt.transformer_.get_support(), ref.get_support())
    with pytest.raises(ValueError, match="sample 1: labels of shape"):
        NodeTransformer(SelectKBest(k=2)).fit(X[:2], [y[0], y[1][:-1]])
    # and through fit_transform; a DictVectorizer reads no labels (none are stacked for
    # it), but they are checked all the same
    Xt = NodeTransformer(SelectKBest(f_classif, k=7)).fit_transform(X, y)
    np.testing.assert_array_equal(np.concatenate(Xt), ref.transform(np.concatenate(X)))
    dicts = [[{"w": "a"}, {"w": "b"}], [{"w": "c"}]]
    for fit in ("fit", "fit_transform"):
        with pytest.raises(ValueError, match="sample 1: labels of shape"):
            getattr(NodeTransformer(DictVectorizer()), fit)(dicts, [["x", "y"], ["x", "y"]])
        with pytest.raises(ValueError, match="X has 2 samples but y has 1"):
            getattr(NodeTransformer(DictVectorizer()), fit)(dicts, [["x", "y"]])


def test_sklearn_api(letters):
    X, _ = letters
    nt = NodeTransformer(StandardScaler())
    name = "NodeTransformer"
    check_get_params_invariance(name, nt)
    check_set_params(name, nt)
    check_no_attributes_set_in_init(name, nt)
    check_estimator_repr(name, nt)
    check_do_not_raise_errors_in_init_or_set_params(name, nt)
    c = clone(nt)
    assert c.transformer is not nt.transformer and not hasattr(c, "transformer_")
    assert nt.__sklearn_tags__().input_tags.two_d_array is False
    nt.fit(X)
    assert not hasattr(nt.transformer, "mean_")  # the parameter is not fitted
    back = pickle.loads(pickle.dumps(nt))
    for a, b in zip(back.transform(X[:5]), nt.transform(X[:5])):
        np.testing.assert_array_equal(a, b)
    pipe = Pipeline([("nt", NodeTransformer(StandardScaler())),
                     ("pca", NodeTransformer(PCA(n_components=3)))])
    Xt = pipe.fit_transform(X)
    assert [x.shape for x in Xt] == [(len(x), 3) for x in X]
    pipe.set_params(nt__transformer__with_std=False)
    assert pipe.get_params()["nt__transformer__with_std"] is False


def test_feature_names_come_from_the_transformer(letters):
    X, _ = letters
    nt = NodeTransformer(PCA(n_components=2)).fit(X)
    assert list(nt.get_feature_names_out()) == ["pca0", "pca1"]
    # Without names in the transformer, there are none here either.
    assert not hasattr(NodeTransformer(FunctionTransformer()), "get_feature_names_out")
    with pytest.raises(NotFittedError):
        NodeTransformer(PCA()).get_feature_names_out()


def test_errors(letters):
    X, _ = letters
    with pytest.raises(NotFittedError):
        NodeTransformer(StandardScaler()).transform(X)
    nt = NodeTransformer(StandardScaler())
    with pytest.raises(ValueError, match="list of samples"):
        nt.fit(3)
    with pytest.raises(ValueError, match="list of samples"):
        nt.fit("text")
    with pytest.raises(ValueError, match="no samples"):
        nt.fit([])
    with pytest.raises(ValueError, match="sample 1: the node features .* have no length"):
        nt.fit([(X[0], None), (3.0, None)])
    with pytest.raises(ValueError, match="sample 1 is not a tuple"):
        nt.fit([(X[0], None), X[1]])
    with pytest.raises(ValueError, match="sample 1 is a tuple but sample 0 is not"):
        nt.fit([X[0], (X[1], None)])
    with pytest.raises(ValueError, match="sample 2: node features must be an array"):
        nt.fit([X[0], X[1], {"a": 1}])
    with pytest.raises(ValueError, match="sample 1: node features are a list but sample 0's"):
        NodeTransformer(DictVectorizer()).fit([X[0], [{"a": 1}]])
    drop_one = FunctionTransformer(lambda a: a[1:])
    with pytest.raises(ValueError, match="returned 11 rows for 12 nodes"):
        NodeTransformer(drop_one).fit_transform([X[0][:5], X[1][:7]])
    nt.fit(X)
    with pytest.raises(ValueError, match="features"):
        nt.transform([x[:, :5] for x in X])
