"""Batches of independent samples on several threads, without numba's parallel compiler.

A kernel over a batch loops over its ``chunks`` (sample boundaries, see
:meth:`GraphBatch.chunks`) one after another and releases the GIL (every kernel is
compiled ``nogil``); :func:`for_chunks` hands contiguous runs of the chunks to
``n`` threads, the calling thread taking the first.  This is what numba's ``prange``
over the chunks would do, but the kernel is compiled once, serially: numba compiles
a ``prange`` loop as a second function holding the loop's body and every kernel it
calls, which for the learners' oracle (every decoder and surrogate) cost three
times the serial kernel's compilation (26.5 s against 7.4 s for a tree model's,
measured on a 2-core machine with an empty cache).

``n`` is the thread count in force (:func:`~skstruct._core.n_threads`'s context, i.e.
the estimator's ``n_jobs``), read in the calling thread; the pool's threads are
started once, on first use, and reused.
"""

import threading

_POOL = {"executor": None, "size": 0}
_LOCK = threading.Lock()


def _executor(n_workers):
    """The process's pool of helper threads, with at least ``n_workers`` threads."""
    with _LOCK:
        if _POOL["size"] < n_workers:
            from concurrent.futures import ThreadPoolExecutor

            # an older, smaller pool is left to finish its tasks and is not reused
            _POOL["executor"] = ThreadPoolExecutor(max_workers=n_workers,
                                                   thread_name_prefix="skstruct")
            _POOL["size"] = n_workers
        return _POOL["executor"]


def split_range(m, n):
    """``range(m)`` cut into at most ``n`` contiguous runs of about equal length, as
    ``(start, stop)`` pairs."""
    n = max(1, min(n, m))
    cuts = [round(i * m / n) for i in range(n + 1)]
    return [(cuts[i], cuts[i + 1]) for i in range(n) if cuts[i + 1] > cuts[i]]


def for_chunks(run, chunks, n=None):
    """Call ``run(c0, c1)`` for contiguous runs ``c0 <= c < c1`` of the chunks of
    ``chunks`` (``m + 1`` sample boundaries of ``m`` chunks), on ``n`` threads.

    ``run`` must only write what its chunks own (a compiled kernel looping over
    ``range(c0, c1)``).  ``n`` defaults to the thread count in force; with one thread,
    or one chunk, ``run(0, m)`` is called directly, so a single sample pays no
    hand-over.  An exception raised by any run is raised here, after every run has
    finished (they write into the caller's arrays).
    """
    for_range(run, chunks.shape[0] - 1, n)


def for_range(run, m, n=None):
    """Call ``run(i0, i1)`` for contiguous runs of ``range(m)`` on ``n`` threads, as
    :func:`for_chunks` does for chunks."""
    if n is None:
        from ._validation import thread_count

        n = thread_count(None)
    parts = split_range(m, n)
    if len(parts) <= 1:
        run(0, m)
        return
    ex = _executor(len(parts) - 1)
    futures = [ex.submit(run, c0, c1) for c0, c1 in parts[1:]]
    error = None
    try:
        run(*parts[0])
    except BaseException as e:
        error = e
    for f in futures:
        try:
            f.result()
        except BaseException as e:
            error = error or e
    if error is not None:
        raise error
