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

numba validates a cached kernel against its own source file only, but a kernel
compiled into it the kernels it calls from other files: after an edit to a
callee (a ``git pull`` in an editable install), the caller's cache would load
the old callee and answer wrongly without a sign.  skstruct's kernels are
therefore validated against one stamp: the hash of every source file of the
package that defines kernels, so that changing any of them recompiles them all.
"""

import functools
import hashlib
import os
import pickle

import numba
from numba.core import caching, errors, types

FASTMATH = frozenset({"nsz", "arcp", "contract", "afn", "reassoc"})


def jit(func=None, **kwargs):
    """Compile ``func`` as a serial, cached, nopython kernel."""
    opts = {"cache": True, "nogil": True, "fastmath": set(FASTMATH), "error_model": "numpy"}
    opts.update(kwargs)
    if func is None:
        return lambda f: _one_per_type(_stable_identity(numba.njit(**opts)(f)))
    return _one_per_type(_stable_identity(numba.njit(**opts)(func)))


def _stable_identity(dispatcher):
    """Name ``dispatcher`` the same way in every process.

    A kernel may take another kernel as an argument (the learners pass their decoder to
    the oracle's kernels).  numba writes such an argument's type into the cache index with
    the dispatcher's identity, by default a random one per process: in the next process
    the type no longer equals the live kernel's, so the entry never hits, every process
    compiles again and appends another entry and another file to the cache, and once
    numba has let go of the objects it rebuilt for those stale entries, saving the index
    fails ("ReferenceError: underlying object has vanished").  Named by its module and
    qualified name, the argument's type is the same in every process and the entry hits.
    A kernel defined inside a function, or a second kernel under a name already taken,
    keeps numba's random identity: two kernels must never share one.
    """
    func = dispatcher.py_func
    name = f"skstruct:{func.__module__}.{func.__qualname__}"
    if "<locals>" not in func.__qualname__ and name not in type(dispatcher)._memo:
        dispatcher._set_uuid(name)
    return dispatcher


def _plain(t):
    """The argument type a kernel called from another kernel is compiled for."""
    t = types.unliteral(t)
    # a prange loop's index is unsigned; kernels take indices as int64
    return types.int64 if t == types.uint64 else t


def _one_per_type(dispatcher):
    """Compile ``dispatcher``'s kernel once per argument *type* when other kernels call it.

    numba compiles a kernel called from another kernel for the exact types at the call
    site: a constant argument (``f(x, 0)``) as its literal value, and a ``prange`` loop's
    index as an unsigned integer.  Every call site with another constant or loop then
    compiles the kernel, and with it everything it calls, once more: one entry of the
    subgradient solver was compiled six times.  Here such arguments are compiled as their
    plain types (``int64``, ``bool``), and the call site converts its value.  A kernel whose
    typing needs the literal value (a constant index into a heterogeneous tuple) falls back
    to numba's own choice.
    """
    exact = dispatcher.get_call_template

    def get_call_template(args, kws):
        plain = tuple(_plain(a) for a in args)
        plain_kws = {k: _plain(v) for k, v in kws.items()}
        if plain != tuple(args) or plain_kws != kws:
            try:
                return exact(plain, plain_kws)
            except errors.TypingError:
                pass
        return exact(args, kws)

    dispatcher.get_call_template = get_call_template
    return dispatcher


def variant(func, name):
    """A copy of the Python function ``func`` named ``name``, to compile ``func``'s code a
    second way (serially and in parallel, say) with its own entry in numba's cache, which
    names entries by the function's qualified name."""
    import types as pytypes

    copy = pytypes.FunctionType(func.__code__, func.__globals__, name, func.__defaults__,
                                func.__closure__)
    copy.__qualname__ = name
    copy.__module__ = func.__module__
    copy.__doc__ = func.__doc__
    return copy


def leaf(func=None, **kwargs):
    """Compile ``func`` as :func:`jit` does, without numba's reference counting: for the
    small kernels called once per message or per edge, which allocate nothing.

    numba counts references to every array a kernel receives or takes a view of, with
    atomic increments and decrements that LLVM cannot remove across calls; on a message
    update of 16 labels they cost more than the update (a TRW-S iteration on a grid of
    10^5 nodes spent a fifth of its time in them).  A kernel compiled this way cannot
    allocate an array."""
    return jit(func, _nrt=False, **kwargs)


def pjit(func=None, **kwargs):
    """Compile ``func`` as a parallel (``prange``) cached kernel."""
    return jit(func, parallel=True, **kwargs)


_PACKAGE = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


@functools.cache
def package_stamp():
    """The hash of the contents of every module of skstruct that compiles kernels
    (those that import numba or this module), in path order."""
    digest = hashlib.sha256()
    for root, dirs, files in os.walk(_PACKAGE):
        dirs[:] = sorted(d for d in dirs if d != "__pycache__")
        for name in sorted(files):
            if not name.endswith(".py"):
                continue
            path = os.path.join(root, name)
            with open(path, "rb") as f:
                text = f.read()
            if b"numba" in text or b"_jit" in text:
                digest.update(os.path.relpath(path, _PACKAGE).encode())
                digest.update(text)
    return digest.digest()


def _package_locator(base):
    """``base`` (one of numba's cache locators) for skstruct's files, stamped with
    :func:`package_stamp` instead of the kernel's own file."""

    class Locator(base):
        @classmethod
        def from_function(cls, py_func, py_file):
            if not os.path.abspath(py_file).startswith(_PACKAGE + os.sep):
                return None
            return super().from_function(py_func, py_file)

        def get_source_stamp(self):
            return package_stamp()

    Locator.__name__ = Locator.__qualname__ = f"SkstructPackage{base.__name__}"
    return Locator


def _install_locators():
    classes = caching.CacheImpl._locator_classes
    if not any(c.__name__.startswith("SkstructPackage") for c in classes):
        ours = [_package_locator(c) for c in classes
                if issubclass(c, caching._SourceFileBackedLocatorMixin)]
        classes[:0] = ours


def _tolerant_index_loader(load):
    """numba's ``IndexDataCacheFile._load_index``, reading an index of skstruct's that
    cannot be unpickled as empty (a cache miss).

    numba unpickles an index before it compares its stamp, and the index names the
    argument types of every entry: an index written by an older skstruct whose kernels
    took a class that no longer exists raises ``AttributeError`` at the first call of the
    kernel, where it should simply recompile (as numba does for a stale stamp).  Other
    packages' indexes are read as numba reads them."""

    def _load_index(self):
        try:
            return load(self)
        except (AttributeError, ImportError, EOFError, pickle.UnpicklingError, TypeError):
            if self._source_stamp != package_stamp():
                raise
            return {}

    _load_index.skstruct = True
    return _load_index


def _install_tolerant_index():
    cls = caching.IndexDataCacheFile
    if not getattr(cls._load_index, "skstruct", False):
        cls._load_index = _tolerant_index_loader(cls._load_index)


_install_locators()
_install_tolerant_index()
