"""Regression tests for bad and edge-case inputs that used to crash, hang, mislead or
answer vaguely: each now gets a clear error naming the sample or the parameter, or the
right result."""

import warnings

import numpy as np
import pytest
from sklearn.feature_extraction import DictVectorizer
from sklearn.model_selection import GridSearchCV
from sklearn.pipeline import make_pipeline

from skstruct import NonLocalCRF, StructuredSVM
from skstruct.inference import GraphBatch, map_batch
from skstruct.models import GraphModel
from skstruct.preprocessing import NodeTransformer


def chains(n=4, seed=0):
    rng = np.random.default_rng(seed)
    X = [rng.normal(size=(3, 2)) for _ in range(n)]
    y = [np.array([0, 1, 0]) for _ in range(n)]
    return X, y


def graphs(n=4, seed=0, edge_features=False):
    rng = np.random.default_rng(seed)
    edges = np.array([[0, 1], [1, 2]])
    X = [(rng.normal(size=(3, 2)), edges) + ((rng.normal(size=(2, 2)),) if edge_features else ())
         for _ in range(n)]
    return X, [np.array([0, 1, 0]) for _ in range(n)]


@pytest.mark.parametrize("edges, match", [
    (np.array([[0, 1], [1, 10 ** 6]]), "out of range"),
    (np.array([[0, 1], [1, 1]]), "self-loop"),
    (np.array([[0, -1]]), "out of range"),
    (np.array([[0.5, 1.0]]), "integer"),
])
def test_graph_batch_from_graphs_validates_edges(edges, match):
    with pytest.raises(ValueError, match=f"sample 0: .*{match}"):
        GraphBatch.from_graphs([3], [edges])


@pytest.mark.parametrize("edges, match", [
    (np.array([[0, 1], [1, 10 ** 6]]), "leaves the sample"),
    (np.array([[0, 1], [2, 2]]), "self-loop"),
])
def test_a_hand_built_batch_is_checked_before_any_kernel_runs(edges, match):
    b = GraphBatch(np.array([0, 3]), edges, np.array([0, len(edges)]))
    for method in ("auto", "trws", "exact"):
        with pytest.raises(ValueError, match=f"sample 0: .*{match}"):
            map_batch(b, np.zeros((3, 2)), np.eye(2), method=method)


def test_edge_features_at_predict_when_fitted_without_them():
    X, y = graphs()
    est = StructuredSVM(max_iter=2).fit(X, y)
    Xe, _ = graphs(edge_features=True)
    with pytest.raises(ValueError, match="fitted without them"):
        est.predict(Xe)
    with pytest.raises(ValueError, match="fitted without them"):
        GraphModel().fit(X, y).design(Xe)


@pytest.mark.parametrize("y0, match", [
    (["a", "b", "a"], "sample 1 has number labels but sample 0 has string labels"),
    ([0, "B", 0], "sample 0: labels mix number and string"),
])
def test_mixed_label_types_are_refused(y0, match):
    X, y = chains()
    y = [np.asarray(y0) if isinstance(y0[0], str) else y0] + y[1:]
    with pytest.raises(ValueError, match=match):
        StructuredSVM(max_iter=1).fit(X, y)


def test_int_labels_come_back_as_ints():
    X, y = chains()
    pred = StructuredSVM(max_iter=2).fit(X, [list(v) for v in y]).predict(X)
    assert pred[0].dtype.kind == "i"


@pytest.mark.parametrize("transform, match", [
    (lambda x: x + 1j, "complex"),
    (lambda x: x * 1e200, "overflow"),
])
def test_features_that_cannot_be_learned_from_are_refused(transform, match):
    X, y = chains()
    with pytest.raises(ValueError, match=f"sample 0: node features .*{match}"):
        StructuredSVM(max_iter=1).fit([transform(x) for x in X], y)


def test_boolean_multilabel_is_predicted_as_bool():
    rng = np.random.default_rng(0)
    X = rng.normal(size=(20, 3))
    Y = X[:, :2] > 0
    pred = StructuredSVM(max_iter=3).fit(X, Y).predict(X)
    assert pred.dtype == bool and pred.shape == Y.shape


def test_generator_and_list_graph_and_dict_features_get_clear_messages():
    X, y = chains()
    with pytest.raises(ValueError, match=r"got generator: materialise it first"):
        StructuredSVM(max_iter=1).fit((x for x in X), y)
    Xg, yg = graphs()
    with pytest.raises(ValueError, match="must be a tuple"):
        StructuredSVM(max_iter=1).fit([list(s) for s in Xg], yg)
    words = [[{"w": "a"}, {"w": "b"}, {"w": "a"}]] * 4
    with pytest.raises(ValueError, match=r"NodeTransformer\(DictVectorizer\(\)\)"):
        StructuredSVM(max_iter=1).fit(words, y)


def test_nonlocal_crf_on_a_loopy_label_graph_says_so():
    rng = np.random.default_rng(0)
    X = rng.normal(size=(10, 3))
    Y = (rng.random((10, 3)) > 0.5).astype(int)
    with pytest.raises(ValueError, match=r"edges='tree'"):
        NonLocalCRF(max_iter=2).fit(X, Y)


def test_nested_model_parameters_need_a_model_object():
    X, y = chains()
    with pytest.raises(ValueError, match="model__bias needs a model object"):
        GridSearchCV(StructuredSVM(max_iter=2), {"model__bias": [True, False]}, cv=2).fit(X, y)


def test_a_column_y_is_read_as_one_label_with_a_warning():
    rng = np.random.default_rng(0)
    X = rng.normal(size=(12, 3))
    with pytest.warns(UserWarning, match=r"y.ravel\(\)"):
        StructuredSVM(max_iter=2).fit(X, (X[:, :1] > 0).astype(int))


def test_a_batch_of_empty_sentences_predicts_empty_sentences():
    X = [[{"w": "a"}, {"w": "b"}], [{"w": "a"}]]
    y = [["x", "y"], ["x"]]
    pipe = make_pipeline(NodeTransformer(DictVectorizer()), NonLocalCRF(max_iter=5)).fit(X, y)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        out = pipe.predict([[]])
    assert len(out) == 1 and out[0].shape == (0,)
    out = pipe.predict([[], [{"w": "a"}]])
    assert out[0].shape == (0,) and list(out[1]) == ["x"]


def test_dual_blocks_too_big_for_the_machine_are_refused_up_front(monkeypatch):
    from skstruct._core import _validation

    monkeypatch.setattr(_validation, "memory_limit", lambda: 100)
    X, y = chains()
    with pytest.raises(ValueError, match=r"BCFW's dual blocks .*solver='subgradient'"):
        StructuredSVM(max_iter=1).fit(X, y)
    StructuredSVM(solver="subgradient", max_iter=1).fit(X, y)  # keeps no blocks


def test_iterative_inference_reports_and_warns_when_it_does_not_converge():
    from skstruct.inference import ConvergenceWarning, map_inference, marginal_inference

    rng = np.random.default_rng(0)
    n = 16
    idx = np.arange(n).reshape(4, 4)
    edges = np.vstack([np.column_stack([idx[:, :-1].ravel(), idx[:, 1:].ravel()]),
                       np.column_stack([idx[:-1].ravel(), idx[1:].ravel()])])
    unary = rng.normal(size=(n, 3))
    pairwise = rng.normal(scale=2.0, size=(len(edges), 3, 3))
    for method in ("max-product", "trws"):
        with pytest.warns(ConvergenceWarning, match="did not converge within max_iter=1"):
            labels, info = map_inference(unary, edges, pairwise, method=method, max_iter=1,
                                         return_info=True)
        assert info.n_iter.tolist() == [1] and not info.converged[0]
        with warnings.catch_warnings():
            warnings.simplefilter("error")
            labels, info = map_inference(unary, edges, pairwise, method=method, max_iter=500,
                                         tol=1e-3, damping=0.5, return_info=True)
        assert info.converged[0] and 1 <= info.n_iter[0] < 500
    with pytest.warns(ConvergenceWarning):
        *_, info = marginal_inference(unary, edges, pairwise, method="loopy", max_iter=1,
                                      return_info=True)
    assert not info.converged[0]
    # exact methods: one pass, converged, no warning
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        _, info = map_inference(unary[:4], edges[:3], pairwise[:3], method="exact",
                                max_iter=1, return_info=True)
    assert info.converged.all() and info.n_iter.tolist() == [1]


def _tiny_memory(monkeypatch, n_bytes):
    from skstruct._core import _validation

    monkeypatch.setattr(_validation, "memory_limit", lambda: n_bytes)


def test_per_edge_tables_too_big_are_refused_up_front(monkeypatch):
    from skstruct import ApproxStructuredPredictor
    from skstruct.datasets import make_binary_denoising

    d = make_binary_denoising(2, 8, random_state=0)  # grids with edge features
    _tiny_memory(monkeypatch, 100)
    with pytest.raises(ValueError, match=r"per-edge \(2, 2\) tables of \d+ edges.*GiB.*edge "
                                         "features"):
        ApproxStructuredPredictor(max_iter=1).fit(d.X, d.y)
    X, y = graphs(edge_features=True)  # chains with edge features
    with pytest.raises(ValueError, match=r"per-edge \(2, 2\) tables of 8 edges.*edge "
                                         "features"):
        NonLocalCRF(max_iter=1).fit(X, y)


def test_alternating_energy_learning_needs_no_per_term_arrays(monkeypatch):
    from skstruct.energies import LinearMeasurements

    X, y = chains(6)
    J = 50
    A = np.random.default_rng(0).uniform(size=(J, 2))
    crf = NonLocalCRF(energy=LinearMeasurements(A), learning="alternating", max_iter=2,
                      energy_max_iter=1)
    # one (n_nodes, K) array per term used to be refused here; the surrogate now
    # keeps O(n_nodes K) whatever the number of terms
    _tiny_memory(monkeypatch, J * 18 * 2 * 8 - 1)
    crf.fit(X, y)
    assert crf.psi_coef_.shape == (J, 1) and np.all(np.isfinite(crf.psi_coef_))


def test_full_edge_marginals_too_big_are_refused_up_front(monkeypatch):
    from skstruct.inference import marginals_batch

    batch = GraphBatch.from_chains([50, 50])
    unary = np.zeros((100, 3))
    _tiny_memory(monkeypatch, 98 * 9 * 8 - 1)
    with pytest.raises(ValueError, match=r"edge marginals of 98 edges and 3 states.*"
                                         "edge_marginals='sum'"):
        marginals_batch(batch, unary, np.zeros((3, 3)))
    # the summed marginals of chains need no per-edge array
    node, edge, logz = marginals_batch(batch, unary, np.zeros((3, 3)), edge_marginals="sum")
    assert edge.shape == (1, 3, 3) and np.allclose(edge.sum(), 98)


def test_thousands_of_labels_fit_and_predict():
    # 2000 distinct labels on chains used to run for minutes; the chain
    # kernels are O(n K^2) and finish (here 200 nodes, 4 million-entry tables)
    rng = np.random.default_rng(0)
    K = 2000
    X = [rng.normal(size=(50, 3)) for _ in range(4)]
    y = [rng.integers(0, K, 50) for _ in range(4)]
    y[0][:K % 50] = 0
    crf = NonLocalCRF(max_iter=2).fit(X, y)
    assert np.isfinite(crf.history_["objective"]).all()
    pred = crf.predict(X)
    assert [p.shape for p in pred] == [(50,)] * 4
    assert np.isin(np.concatenate(pred), crf.classes_).all()
