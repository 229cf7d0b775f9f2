"""Validation shared by every layer: scores, edges, numbers, thread counts.

Everything here is plain numpy; nothing imports the rest of skstruct.
"""

import contextlib
import os
from numbers import Integral

import numpy as np


def check_n_jobs(n_jobs):
    """``n_jobs`` itself if it is None or a non-zero integer, else a ValueError."""
    if n_jobs is not None and (not isinstance(n_jobs, Integral) or isinstance(n_jobs, bool)
                               or n_jobs == 0):
        from ._params import InvalidParameterError

        raise InvalidParameterError(f"n_jobs must be None or a non-zero integer, got "
                                    f"{n_jobs!r}")
    return n_jobs


@contextlib.contextmanager
def n_threads(n_jobs):
    """Run the enclosed kernels on ``n_jobs`` threads, then restore the setting.

    sklearn's convention: ``None`` leaves numba's current setting, a positive
    count is capped at numba's pool size, ``-1`` means every thread of the
    pool, ``-2`` all but one, and so on.
    """
    import numba

    if check_n_jobs(n_jobs) is None:
        yield
        return
    n_max = numba.config.NUMBA_NUM_THREADS
    n = n_jobs if n_jobs > 0 else max(1, n_max + 1 + n_jobs)
    n = min(n, n_max)
    old = numba.get_num_threads()
    numba.set_num_threads(n)
    try:
        yield
    finally:
        numba.set_num_threads(old)


def n_chunks():
    """Tasks a parallel kernel splits a batch into: a few per thread, to balance load."""
    import numba

    return 4 * numba.get_num_threads()


def _check_scores(a, name, ndim):
    a = np.asarray(a)
    if a.dtype.kind not in "biuf":
        raise ValueError(f"{name} must be numeric, got dtype {a.dtype}")
    a = np.ascontiguousarray(a, dtype=np.float64)
    if a.ndim != ndim:
        raise ValueError(f"{name} must be {ndim}-D, got shape {a.shape}")
    if np.isnan(a).any():
        raise ValueError(f"{name} contains NaN")
    if np.isposinf(a).any():
        raise ValueError(f"{name} contains +inf (only -inf, a hard constraint, is allowed)")
    return a


def check_unary(unary):
    """Validate node scores: float64 (n_nodes, n_states), no NaN, no +inf."""
    unary = _check_scores(unary, "unary", 2)
    if unary.shape[1] < 1:
        raise ValueError("unary must have at least one state (column)")
    return unary


def check_edges(edges, n_nodes, name="edges"):
    """Validate an edge list: int (n_edges, 2), in range, no self-loops."""
    edges = np.asarray(edges)
    if edges.size == 0:
        return np.zeros((0, 2), np.int64)
    if edges.ndim != 2 or edges.shape[1] != 2:
        raise ValueError(f"{name} must have shape (n_edges, 2), got {edges.shape}")
    integral = edges.dtype.kind in "iu" or (
        edges.dtype.kind == "f" and np.isfinite(edges).all() and np.all(np.mod(edges, 1) == 0))
    if not integral:
        raise ValueError(f"{name} must hold integer node indices, got dtype {edges.dtype}"
                         + (" with non-integral values" if edges.dtype.kind == "f" else ""))
    # the range is checked on the values given, before any cast could wrap them
    out = (edges < 0) | (edges >= n_nodes)
    if out.any():
        bad = np.flatnonzero(out.any(1))[0]
        raise ValueError(f"{name}[{bad}] = {edges[bad].tolist()} is out of range for a graph "
                         f"with {n_nodes} nodes")
    edges = np.ascontiguousarray(edges, dtype=np.int64)
    loops = np.flatnonzero(edges[:, 0] == edges[:, 1])
    if loops.size:
        raise ValueError(f"{name}[{loops[0]}] = {edges[loops[0]].tolist()} is a self-loop")
    return edges


def check_pairwise(pairwise, n_states, n_edges, pw_index=None):
    """Validate edge scores and return ``(pairwise (M, K, K), pw_index (E,))``.

    ``pairwise`` is one (K, K) matrix for every edge, an (n_edges, K, K)
    stack, or, with ``pw_index``, an (M, K, K) stack indexed per edge.
    """
    pairwise = np.asarray(pairwise)
    if pairwise.ndim == 2:
        pairwise = pairwise[None]
    pairwise = _check_scores(pairwise, "pairwise", 3)
    K = n_states
    if pairwise.shape[1:] != (K, K):
        raise ValueError(f"pairwise must have shape ({K}, {K}) or (n, {K}, {K}) for {K} states, "
                         f"got {pairwise.shape}")
    if pw_index is None:
        if pairwise.shape[0] == 1:
            pw_index = np.zeros(n_edges, np.int64)
        elif pairwise.shape[0] == n_edges:
            pw_index = np.arange(n_edges, dtype=np.int64)
        else:
            raise ValueError(f"pairwise holds {pairwise.shape[0]} matrices for {n_edges} edges: "
                             "give one matrix, one per edge, or a pw_index")
    else:
        pw = np.asarray(pw_index)
        if pw.dtype.kind not in "iu":
            raise ValueError(f"pw_index must hold integer matrix indices, got dtype {pw.dtype}")
        pw = pw.reshape(-1)
        if pw.shape[0] != n_edges:
            raise ValueError(f"pw_index has {pw.shape[0]} entries for {n_edges} edges")
        out = (pw < 0) | (pw >= pairwise.shape[0])
        if out.any():
            e = int(np.flatnonzero(out)[0])
            raise ValueError(f"pw_index[{e}] = {pw[e]} refers to a pairwise matrix that does "
                             f"not exist (there are {pairwise.shape[0]})")
        pw_index = np.ascontiguousarray(pw, dtype=np.int64)
    return pairwise, pw_index


def check_vector(v, size, name, note=""):
    """``v`` as a finite float64 vector of length ``size``, or a ValueError naming
    ``name`` (``note`` explains the length).  A NaN or infinite weight would make
    every score NaN/inf, and the decoders return an arbitrary labelling then."""
    try:
        v = np.asarray(v, dtype=np.float64)
    except (TypeError, ValueError) as exc:
        raise ValueError(f"{name} must be a numeric vector ({exc})") from None
    if v.shape != (size,):
        raise ValueError(f"{name} must have shape ({size},){note}, got {v.shape}")
    if not np.all(np.isfinite(v)):
        raise ValueError(f"{name} contains NaN or infinite values")
    return v


def check_psi(psi, n_samples, n_terms):
    psi = np.asarray(psi, dtype=np.float64)
    if psi.ndim == 0:
        psi = np.full((n_samples, n_terms), float(psi))
    elif psi.ndim == 1 and psi.shape[0] == n_terms:
        psi = np.broadcast_to(psi, (n_samples, n_terms))
    if psi.shape != (n_samples, n_terms):
        raise ValueError(f"psi must be a scalar, ({n_terms},) or ({n_samples}, {n_terms}); "
                         f"got shape {psi.shape}")
    if not np.all(np.isfinite(psi)):
        raise ValueError("psi contains NaN or infinite values")
    return psi


def memory_limit():
    """Bytes one array (or a solver's state) may take: half the machine's
    memory (4 GiB where the system does not say)."""
    try:
        return os.sysconf("SC_PHYS_PAGES") * os.sysconf("SC_PAGE_SIZE") // 2
    except (AttributeError, ValueError, OSError):
        return 4 * 2 ** 30


def check_memory(n_bytes, what, advice):
    """Raise a ``ValueError`` before allocating more than :func:`memory_limit`.

    ``what`` names the allocation and ``advice`` the parameter to change, so
    that a too large problem fails at once with a remedy instead of after
    minutes of swapping or inside a kernel.
    """
    limit = memory_limit()
    if n_bytes > limit:
        raise ValueError(f"{what} would need {n_bytes / 2 ** 30:.1f} GiB (this machine allows "
                         f"{limit / 2 ** 30:.1f} GiB): {advice}")
