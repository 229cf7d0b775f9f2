"""Stopped is not certified: what inference reports about the optimality of its answer,
and warnings that point at the caller's line."""

import warnings

import numpy as np
import pytest

from skstruct.datasets import grid_edges
from skstruct.energies import NearestStatistic
from skstruct.inference import (
    ConvergenceWarning,
    GraphBatch,
    InfeasibilityWarning,
    bethe_project,
    forward_backward,
    map_batch,
    map_inference,
    marginal_inference,
    viterbi,
)
from tests.brute import all_scores, score_of

NEG_INF = -np.inf


def spin_glass(seed, side=4):
    """A ``side x side`` grid of two-label nodes with couplings of random sign: cycles
    whose couplings multiply to a negative number are frustrated, and the LP relaxation
    of such a grid is in general not tight.  ``2 ** 16`` labellings: enumerable."""
    rng = np.random.default_rng(seed)
    edges = grid_edges(side, side)
    unary = rng.normal(scale=0.1, size=(side * side, 2))
    coupling = rng.normal(size=len(edges))
    pairwise = coupling[:, None, None] * np.array([[1.0, -1.0], [-1.0, 1.0]])
    return unary, edges, pairwise


def test_trws_stalled_on_a_loose_relaxation_is_converged_but_not_certified():
    unary, edges, pairwise = spin_glass(0)
    optimum = all_scores(unary, edges, pairwise)[1].max()
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        labels, bound, info = map_inference(unary, edges, pairwise, method="trws",
                                            return_bound=True, return_info=True)
    score = score_of(unary, edges, pairwise, labels)
    # the precondition: the relaxation is not tight, so no labelling meets the bound
    assert bound > optimum + 1.0
    # TRW-S stopped on its own test (a stalled bound), well before max_iter
    assert info.converged[0] and info.n_iter[0] < 100
    assert not info.certified[0]
    assert np.isclose(info.gap[0], bound - score) and info.gap[0] > 1.0
    assert score <= optimum + 1e-9


def test_auto_warns_with_the_gap_when_it_returns_an_uncertified_labelling():
    unary, edges, pairwise = spin_glass(0)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        labels, bound, info = map_inference(unary, edges, pairwise, return_bound=True,
                                            return_info=True)
    assert not info.certified[0]
    found = [w for w in caught if issubclass(w.category, ConvergenceWarning)]
    assert len(found) == 1
    message = str(found[0].message)
    assert "'trws'" in message and f"{info.gap[0]:.6g}" in message
    assert "return_info=True" not in message
    assert found[0].filename == __file__
    # without return_info, the warning says where the gap is; for one graph there is no
    # "which" to see
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        map_inference(unary, edges, pairwise)
    message = str(caught[0].message)
    assert "InferenceInfo.gap with return_info=True" in message and "which" not in message
    assert "sample" not in message
    # several graphs: it says how to see which
    batch = GraphBatch.from_graphs([len(unary)] * 2, [edges, edges])
    with pytest.warns(ConvergenceWarning, match=r"method='auto' ran 'trws' on graphs with "
                      r"cycles and returned 2 labelling\(s\).*pass return_info=True to see "
                      r"which"):
        map_batch(batch, np.vstack([unary, unary]), np.vstack([pairwise, pairwise]))


def test_the_iteration_warning_of_one_graph_names_the_method_and_no_samples():
    unary, edges, pairwise = spin_glass(0)
    for method, ran in (("trws", "'trws'"), ("max-product", "'max-product'")):
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            map_inference(unary, edges, pairwise, method=method, max_iter=2)
        message = str(caught[0].message)
        assert message.startswith("the graph did not converge within max_iter=2 iterations "
                                  f"of {ran}") and "sample" not in message
        assert "pass return_info=True for its InferenceInfo" in message
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            map_inference(unary, edges, pairwise, method=method, max_iter=2, return_info=True)
        assert "return_info" not in str(caught[0].message)


def test_auto_is_silent_when_every_labelling_is_certified():
    rng = np.random.default_rng(1)
    edges = grid_edges(3, 3)
    # attractive couplings: the relaxation of a binary submodular problem is tight
    unary = rng.normal(size=(9, 2))
    pairwise = np.array([[1.0, -1.0], [-1.0, 1.0]])
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        labels, info = map_inference(unary, edges, pairwise, return_info=True)
    assert info.certified[0] and 0 <= info.gap[0] <= 1e-6 * 10


def test_a_batch_mixes_certified_exact_samples_and_an_uncertified_loopy_one():
    unary, edges, pairwise = spin_glass(0)
    batch = GraphBatch.from_graphs([16, 3], [edges, np.array([[0, 1], [1, 2]])])
    u = np.vstack([unary, np.zeros((3, 2))])
    p = np.concatenate([pairwise, np.repeat(np.eye(2)[None], 2, axis=0)])
    with pytest.warns(ConvergenceWarning, match="1 labelling"):
        labels, bound, info = map_batch(batch, u, p, return_bound=True, return_info=True)
    assert info.certified.tolist() == [False, True]
    assert info.gap[1] == 0 and info.gap[0] > 1.0


def test_a_negative_gap_is_never_certified():
    from skstruct.inference._api import _certify

    bound = np.array([10.0, 10.0, 10.0, 10.0, NEG_INF, 5.0, np.inf])
    score = np.array([10.0, 10.0 - 5e-6, 10.0 + 1e-3, 10.0 + 1e-12, NEG_INF, NEG_INF, 3.0])
    gap, certified = _certify(bound, score, tol=1e-6)
    # equal; within tol relative; a "bound" below the score; below it only by rounding;
    # proven infeasible; no feasible labelling found; no bound
    assert certified.tolist() == [True, True, False, True, True, False, False]
    assert gap[2] < 0 and gap[4] == 0 and gap[5] == np.inf and gap[6] == np.inf
    assert not _certify(bound[:1], score[:1] - 1e-3, tol=0.0)[1][0]


def test_exact_marginals_are_certified_and_loopy_ones_are_not():
    unary, edges, pairwise = spin_glass(3, side=3)
    *_, info = marginal_inference(unary, edges, pairwise, method="exact", return_info=True)
    assert info.certified[0] and info.gap[0] == 0
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        *_, info = marginal_inference(unary, edges, pairwise, method="loopy",
                                      return_info=True)
    assert not info.certified[0] and np.isnan(info.gap[0])


# ---------------------------------------------------------- where warnings point

def caught(fn, *args, **kwargs):
    with warnings.catch_warnings(record=True) as record:
        warnings.simplefilter("always")
        fn(*args, **kwargs)
    assert record, "expected a warning"
    return record


def test_convergence_warnings_point_at_the_callers_line():
    unary, edges, pairwise = spin_glass(4)
    batch = GraphBatch.from_graphs([16], [edges])
    for w in (caught(map_inference, unary, edges, pairwise, method="max-product", max_iter=1)
              + caught(map_batch, batch, unary, pairwise, method="max-product", max_iter=1)
              + caught(marginal_inference, unary, edges, pairwise, method="loopy",
                       max_iter=1)):
        assert issubclass(w.category, ConvergenceWarning)
        # the iterative method that ran is named, and the hint is given without return_info
        assert "of 'max-product'" in str(w.message) or "of 'loopy'" in str(w.message)
        assert "return_info=True" in str(w.message)
        assert w.filename == __file__


def test_no_return_info_hint_when_return_info_was_passed():
    unary, edges, pairwise = spin_glass(4)
    for w in caught(map_inference, unary, edges, pairwise, method="max-product", max_iter=1,
                    return_info=True):
        assert "return_info" not in str(w.message) and w.filename == __file__


def test_infeasibility_warnings_point_at_the_callers_line():
    unary = np.zeros((4, 3))
    unary[1] = NEG_INF
    for w in (caught(viterbi, unary, np.eye(3))
              + caught(forward_backward, unary, np.eye(3))
              + caught(map_inference, unary, np.array([[0, 1], [1, 2], [0, 2]]), np.eye(3))):
        assert issubclass(w.category, InfeasibilityWarning)
        assert w.filename == __file__


def test_bethe_project_warnings_point_at_the_callers_line():
    rng = np.random.default_rng(5)
    energy = NearestStatistic("marginals").fit(rng.integers(3, size=8),
                                               GraphBatch.from_chains([4, 4]), 3)
    unary = rng.normal(size=(4, 3))
    unary[1] = NEG_INF
    record = caught(bethe_project, unary, np.eye(3)[None], energy,
                    batch=GraphBatch.from_chains([4]), max_iter=3)
    for w in record:
        assert w.filename == __file__
