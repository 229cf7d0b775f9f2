"""Validation shared by every layer: scores, edges, numbers, thread counts.

Everything here is plain numpy, but for the compiled pass over score arrays
(``_scan.py``, imported on first use); nothing imports the rest of skstruct.
"""

import functools
import os
import sys
import threading
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


def n_threads(n_jobs):
    """A context in which skstruct's work runs on ``n_jobs`` threads; the previous
    settings are restored on leaving it.

    It governs every thread pool a call touches: skstruct's own (most batch kernels,
    see :mod:`._pool`), numba's (the others), any OpenMP runtime's, and BLAS's (numpy's
    and scipy's linear algebra, through threadpoolctl).  The kernels get ``n`` threads;
    BLAS gets one: its calls
    inside skstruct are small and alternate with the kernels', and its idle
    threads spin on the cores the kernels need, which slows both, so that a
    fit with ``n_jobs=1`` keeps exactly one core busy and one with
    ``n_jobs=n`` at most ``n``.

    ``n`` follows scikit-learn's convention: a positive count (capped at
    numba's pool size, ``NUMBA_NUM_THREADS``), ``-1`` every thread of the
    pool, ``-2`` all but one, and so on.  ``None`` means the count of the
    enclosing ``n_threads`` context if there is one, else the ``n_jobs`` of an
    enclosing ``joblib.parallel_config(n_jobs=...)`` if one sets it, else
    numba's current setting for the calling thread: every core by default,
    ``NUMBA_NUM_THREADS`` or ``numba.set_num_threads`` if set, and in a worker
    process of joblib's ``loky`` backend (``GridSearchCV(n_jobs=k)``) the
    share of the cores joblib gives it.

    Nested contexts are cheap (one asking for the thread count already in force
    changes nothing).  The BLAS and OpenMP limits are the libraries' own, for
    the whole process: they are held while any context is open, at the count
    of the most recent one, and restored when the last one closes.
    """
    return _Threads(thread_count(check_n_jobs(n_jobs)))


def thread_count(n_jobs):
    """The number of threads ``n_jobs`` stands for (see :func:`n_threads`)."""
    import numba

    if n_jobs is None:
        stack = _LOCAL.__dict__.get("stack")
        if stack:
            # inside an open context: its count
            return stack[-1]
        n_jobs = _joblib_n_jobs()
        if n_jobs is None:
            return numba.get_num_threads()
    n_max = numba.config.NUMBA_NUM_THREADS
    n = n_jobs if n_jobs > 0 else max(1, n_max + 1 + n_jobs)
    return min(n, n_max)


def _joblib_n_jobs():
    """The ``n_jobs`` an enclosing ``joblib.parallel_config`` sets, or None."""
    parallel = sys.modules.get("joblib.parallel")
    if parallel is None:
        # joblib not even imported: no context can be open
        return None
    try:
        n_jobs = parallel.get_active_backend()[1]
    except Exception:   # an unknown backend's error is not ours to raise here
        return None
    if isinstance(n_jobs, Integral) and not isinstance(n_jobs, bool) and n_jobs != 0:
        return int(n_jobs)
    return None


# the open contexts' thread counts, per thread of the caller
_LOCAL = threading.local()
# the process-wide pools (BLAS, OpenMP): the libraries' controllers, looked up again
# when modules have been imported since (a new library can come only with one), the
# limits found before the first context opened, and the open contexts' requests
_POOLS_LOCK = threading.Lock()
_POOLS = {"modules": -1, "libs": (), "saved": None, "now": None, "open": []}


def _libraries():
    """threadpoolctl's controllers of the BLAS and OpenMP libraries loaded."""
    n_modules = len(sys.modules)
    if _POOLS["modules"] != n_modules:
        # inspecting the loaded libraries takes a millisecond or more: done once per
        # set of imported modules, not per call
        from threadpoolctl import ThreadpoolController

        _POOLS["libs"] = tuple(lib for lib in ThreadpoolController().lib_controllers
                               if lib.user_api in ("blas", "openmp"))
        _POOLS["modules"] = len(sys.modules)
    return _POOLS["libs"]


def _set_pools(n):
    # under _POOLS_LOCK; "now" holds the counts last set (or found), so that no library
    # is asked for its count on every call
    now = _POOLS["now"]
    for i, lib in enumerate(_POOLS["libs"]):
        want = 1 if lib.user_api == "blas" else n
        if now[i] != want:
            lib.set_num_threads(want)
            now[i] = want


class _Threads:
    """The context :func:`n_threads` returns."""

    __slots__ = ("n", "numba_old", "token")

    def __init__(self, n):
        self.n = n
        self.numba_old = None
        self.token = None

    def __enter__(self):
        n = self.n
        stack = _LOCAL.__dict__.setdefault("stack", [])
        if stack and stack[-1] == n:
            # nested in a context of the same count: everything is set already
            stack.append(n)
            return self
        import numba

        self.numba_old = old = numba.get_num_threads()
        if old != n:
            numba.set_num_threads(n)
        self.token = object()
        with _POOLS_LOCK:
            if not _POOLS["open"]:
                libs = _libraries()
                _POOLS["saved"] = [lib.get_num_threads() for lib in libs]
                _POOLS["now"] = list(_POOLS["saved"])
            _POOLS["open"].append((self.token, n))
            try:
                _set_pools(n)
            except BaseException:
                self._close_pools()
                numba.set_num_threads(old)
                raise
        stack.append(n)
        return self

    def _close_pools(self):
        # under _POOLS_LOCK
        opened = _POOLS["open"]
        opened[:] = [(t, k) for t, k in opened if t is not self.token]
        if opened:
            _set_pools(opened[-1][1])
            return
        for lib, old, now in zip(_POOLS["libs"], _POOLS["saved"], _POOLS["now"]):
            if now != old:
                lib.set_num_threads(old)
        _POOLS["saved"] = _POOLS["now"] = None

    def __exit__(self, *exc):
        _LOCAL.stack.pop()
        if self.token is None:
            return False
        import numba

        try:
            with _POOLS_LOCK:
                self._close_pools()
        finally:
            if self.numba_old != self.n:
                numba.set_num_threads(self.numba_old)
        return False


def n_chunks():
    """Tasks a parallel kernel splits a batch into: a few per thread, to balance load."""
    import numba

    return 4 * numba.get_num_threads()


def scan_scores(a, name, ndim):
    """Validate a score array in one pass and describe it.

    Returns ``(a, largest, constrained)``: ``a`` as C-contiguous float64 (the
    array itself when it already is one, never a copy), the largest finite
    ``|a|`` (0.0 if none) and whether any entry is ``-inf``.  NaN and ``+inf``
    raise a ``ValueError`` naming the first such entry.
    """
    a = np.asarray(a)
    if a.dtype.kind not in "biuf":
        raise ValueError(f"{name} must be numeric, got dtype {a.dtype}")
    a = np.ascontiguousarray(a, dtype=np.float64)
    if a.ndim != ndim:
        raise ValueError(f"{name} must be {ndim}-D, got shape {a.shape}")
    if a.size == 0:
        return a, 0.0, False
    n_bad, n_neg, largest = _scan_bits()(a.reshape(-1).view(np.int64))
    if n_bad:
        flat = int(np.flatnonzero(~(np.isfinite(a) | np.isneginf(a)).reshape(-1))[0])
        where = tuple(int(i) for i in np.unravel_index(flat, a.shape))
        x = a[where]
        at = f"{name}[{', '.join(map(str, where))}]"
        if np.isnan(x):
            raise ValueError(f"{name} contains NaN (first at {at})")
        raise ValueError(f"{name} contains +inf (first at {at}; only -inf, a hard "
                         "constraint, is allowed)")
    return a, largest, bool(n_neg)


def _scan_bits():
    # imported on first use: importing skstruct must not import numba
    from ._scan import scan_bits

    return scan_bits


def scan_unary(unary):
    """:func:`check_unary`, also returning the largest finite ``|unary|`` and
    whether any entry is ``-inf`` (see :func:`scan_scores`)."""
    unary, largest, constrained = scan_scores(unary, "unary", 2)
    if unary.shape[1] < 1:
        raise ValueError("unary must have at least one state (column)")
    return unary, largest, constrained


def check_unary(unary):
    """Validate node scores: float64 (n_nodes, n_states), no NaN, no +inf."""
    return scan_unary(unary)[0]


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
    return scan_pairwise(pairwise, n_states, n_edges, pw_index)[:2]


def scan_pairwise(pairwise, n_states, n_edges, pw_index=None):
    """:func:`check_pairwise`, also returning the largest finite ``|pairwise|``
    and whether any entry is ``-inf`` (see :func:`scan_scores`)."""
    pairwise = np.asarray(pairwise)
    # scanned in the shape given, so that an error names the entry the caller knows
    pairwise, largest, constrained = scan_scores(pairwise, "pairwise",
                                                 2 if pairwise.ndim == 2 else 3)
    if pairwise.ndim == 2:
        pairwise = pairwise[None]
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
    return pairwise, pw_index, largest, constrained


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


_UNLIMITED = 1 << 62  # cgroup v1 writes "no limit" as a number near 2 ** 63


def _read_int(path):
    """The integer in a one-line file, None if it is missing, unreadable or ``max``."""
    try:
        with open(path) as f:
            text = f.read().strip()
    except OSError:
        return None
    try:
        value = int(text)
    except ValueError:
        return None
    return value if 0 <= value < _UNLIMITED else None


def _cgroup_limits(root):
    """``(bytes, name)`` of the cgroup memory limits of this process.

    Each line of ``/proc/self/cgroup`` is ``id:controllers:path``; ``0::path`` is
    the cgroup v2 hierarchy, a line whose controllers include ``memory`` the v1
    one.  The limit of the process's group and of every ancestor applies; a
    container usually sees its own group as the root of the mount, so the path
    is walked up to the mount point and every file found is read.
    """
    try:
        with open(os.path.join(root, "proc/self/cgroup")) as f:
            lines = f.read().splitlines()
    except OSError:
        return []
    cg = os.path.join(root, "sys/fs/cgroup")
    out = []
    for line in lines:
        parts = line.split(":", 2)
        if len(parts) != 3:
            continue
        ident, controllers, path = parts
        if ident == "0" and controllers == "":
            mounts, fname, name = [cg, os.path.join(cg, "unified")], "memory.max", \
                "cgroup v2 memory.max"
        elif "memory" in controllers.split(","):
            mounts, fname, name = [os.path.join(cg, "memory")], "memory.limit_in_bytes", \
                "cgroup v1 memory.limit_in_bytes"
        else:
            continue
        rel = path.strip("/").split("/") if path.strip("/") else []
        for mount in mounts:
            if not os.path.isdir(mount):
                continue
            for depth in range(len(rel), -1, -1):
                value = _read_int(os.path.join(mount, *rel[:depth], fname))
                if value is not None:
                    where = "/" + "/".join(rel[:depth])
                    out.append((value, f"the {name} limit of {where}"))
    return out


def _mapped_bytes(root):
    """Address space the process already maps (``VmSize`` of /proc/self/status)."""
    try:
        with open(os.path.join(root, "proc/self/status")) as f:
            for line in f:
                if line.startswith("VmSize:"):
                    return int(line.split()[1]) * 1024
    except (OSError, ValueError, IndexError):
        pass
    return 0


@functools.lru_cache(maxsize=8)
def _fixed_limits(root):
    """Physical memory and the cgroup limits, read once per process: a guard runs on
    every oracle call, and reading a dozen files each time would cost more than a short
    chain's decoding."""
    out = []
    try:
        out.append((os.sysconf("SC_PHYS_PAGES") * os.sysconf("SC_PAGE_SIZE"),
                    "physical memory"))
    except (AttributeError, ValueError, OSError):
        pass
    return tuple(out + _cgroup_limits(root))


def memory_limits(root="/"):
    """The memory limits that apply to this process, as ``(bytes, name)`` pairs.

    Physical memory; the cgroup v2 (``memory.max``) and v1
    (``memory.limit_in_bytes``) limits of the process's control group and its
    ancestors; and what the address-space limit ``RLIMIT_AS`` leaves beyond the
    process's current ``VmSize``.  ``root`` is where ``proc/`` and ``sys/`` are
    read from (``"/"``; another directory holds fake ones).  Physical memory and
    the cgroup limits are read once per process and root; ``RLIMIT_AS`` and
    ``VmSize`` on every call.
    """
    out = list(_fixed_limits(root))
    try:
        import resource
    except ImportError:  # not on Windows
        return out
    soft = resource.getrlimit(resource.RLIMIT_AS)[0]
    if soft != resource.RLIM_INFINITY and soft >= 0:
        left = max(soft - _mapped_bytes(root), 0)
        out.append((left, f"the address-space limit RLIMIT_AS ({soft / 2 ** 30:.1f} GiB, "
                          f"{left / 2 ** 30:.1f} GiB of it not yet mapped)"))
    return out


def tightest_memory_limit(root="/"):
    """The smallest of :func:`memory_limits` as ``(bytes, name)``; 8 GiB where the
    system reports nothing."""
    limits = memory_limits(root)
    if not limits:
        return 8 * 2 ** 30, "a default of 8 GiB, the system reporting no memory size"
    return min(limits)


def memory_limit(root="/"):
    """Bytes one array (or a solver's state) may take: half of the tightest
    limit on this process's memory (see :func:`memory_limits`)."""
    return tightest_memory_limit(root)[0] // 2


def check_memory(n_bytes, what, advice):
    """Raise a ``ValueError`` before allocating more than :func:`memory_limit`.

    ``what`` names the allocation and ``advice`` the parameter to change, so
    that a too large problem fails at once with a remedy, naming the limit that
    applies, instead of after minutes of swapping or with a ``MemoryError``
    inside a kernel.
    """
    limit = memory_limit()
    if n_bytes > limit:
        total, name = tightest_memory_limit()
        source = f"half of {name}" if total // 2 == limit else "the memory limit"
        raise ValueError(f"{what} would need {n_bytes / 2 ** 30:.1f} GiB, more than the "
                         f"{limit / 2 ** 30:.1f} GiB one allocation may take ({source}): "
                         f"{advice}")
