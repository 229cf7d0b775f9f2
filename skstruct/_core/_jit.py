"""The one place that decides how skstruct's kernels are compiled.

Every numba kernel in :mod:`skstruct.inference` is declared with :func:`jit` or
:func:`pjit` from this module, so compilation flags are set once.

The fastmath flags deliberately leave out ``nnan`` and ``ninf``: log-potentials
use ``-inf`` for hard constraints, and with those flags LLVM may fold
``max(-inf, -inf)`` or ``-inf - -inf`` into garbage.  ``reassoc`` and
``contract`` let LLVM vectorise the max-plus and sum-product inner loops.

Kernels are compiled lazily on first call and cached on disk (``cache=True``);
set ``NUMBA_CACHE_DIR`` to a writable directory when the package is installed
read-only.
"""

import numba

FASTMATH = frozenset({"nsz", "arcp", "contract", "afn", "reassoc"})


def jit(func=None, **kwargs):
    """Compile ``func`` as a serial, cached, nopython kernel."""
    opts = {"cache": True, "nogil": True, "fastmath": set(FASTMATH), "error_model": "numpy"}
    opts.update(kwargs)
    if func is None:
        return lambda f: numba.njit(**opts)(f)
    return numba.njit(**opts)(func)


def pjit(func=None, **kwargs):
    """Compile ``func`` as a parallel (``prange``) cached kernel."""
    return jit(func, parallel=True, **kwargs)
