"""skstruct's own threads for batches of independent samples (``skstruct._core._pool``):
every chunk run once, on as many threads as ``n_jobs`` says, and the same answer on one
thread as on two."""

import threading
import time

import numpy as np
import pytest

from skstruct import StructuredSVM
from skstruct._core import n_threads
from skstruct._core._pool import for_chunks, for_range, split_range
from skstruct.models import GraphModel


@pytest.mark.parametrize("m", [1, 2, 3, 7, 8, 33])
@pytest.mark.parametrize("n", [1, 2, 3, 16])
def test_split_range_covers_every_index_once_in_order(m, n):
    parts = split_range(m, n)
    assert len(parts) == min(m, n)
    assert [i for a, b in parts for i in range(a, b)] == list(range(m))
    sizes = [b - a for a, b in parts]
    assert max(sizes) - min(sizes) <= 1


def _recorder():
    seen = []
    lock = threading.Lock()

    def run(c0, c1):
        time.sleep(0.05)  # long enough for the other thread to start its part
        with lock:
            seen.append((c0, c1, threading.get_ident()))

    return seen, run


def test_one_thread_runs_everything_in_the_calling_thread():
    seen, run = _recorder()
    with n_threads(1):
        for_chunks(run, np.array([0, 3, 5, 9, 10]))
    assert seen == [(0, 4, threading.get_ident())]


def test_two_threads_split_the_chunks_between_two_threads():
    seen, run = _recorder()
    with n_threads(2):
        for_chunks(run, np.arange(9))
    assert sorted((a, b) for a, b, _ in seen) == [(0, 4), (4, 8)]
    assert len({t for _, _, t in seen}) == 2
    assert threading.get_ident() in {t for _, _, t in seen}


def test_an_error_in_a_helper_thread_is_raised_after_every_part_finished():
    done = []

    def run(i0, i1):
        if i0 > 0:
            raise ValueError(f"part {i0}")
        time.sleep(0.05)
        done.append(i0)

    with pytest.raises(ValueError, match="part 2"):
        for_range(run, 4, n=2)
    assert done == [0]


@pytest.mark.filterwarnings("ignore::sklearn.exceptions.ConvergenceWarning")
def test_a_loopy_fit_and_its_predictions_do_not_depend_on_n_jobs():
    """The general oracle (``hinge_pass``) on a thread per chunk run: the same weights,
    hinges and labels with one thread and with two."""
    rng = np.random.RandomState(0)
    X, y = [], []
    for _ in range(12):
        n = 6
        feats = rng.randn(n, 3)
        edges = np.array([[i, (i + 1) % n] for i in range(n)] + [[0, 3]])
        X.append((feats, edges))
        y.append((feats[:, 0] > 0).astype(int))
    fits = []
    for n_jobs in (1, 2):
        est = StructuredSVM(model=GraphModel(inference_method="trws"), C=1.0, max_iter=5,
                            solver="one_slack", random_state=0, n_jobs=n_jobs)
        est.fit(X, y)
        fits.append((est.coef_.copy(), est.predict(X)))
    np.testing.assert_array_equal(fits[0][0], fits[1][0])
    for a, b in zip(fits[0][1], fits[1][1]):
        np.testing.assert_array_equal(a, b)
