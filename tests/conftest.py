"""Test configuration: deterministic hypothesis runs on CI, random ones elsewhere; numba's
disk cache shared safely by the processes of a parallel run (pytest-xdist)."""

import contextlib
import os

from hypothesis import settings

# CI must not turn red on a case no one has seen before: there the examples are
# derived from the test itself.  Locally every run explores new cases.
settings.register_profile("ci", derandomize=True, print_blob=True)
settings.register_profile("dev", print_blob=True)
settings.load_profile("ci" if os.environ.get("CI") else "dev")


def _share_numba_cache():
    """Make numba's disk cache safe for several processes writing it at once.

    numba saves a newly compiled signature by reading the kernel's index, adding an entry
    numbered after the existing ones, writing the index back and then the data file.  Two
    processes saving two signatures of one kernel at the same moment can both pick the same
    number, and the index may then name one signature's machine code for the other.  The
    workers of a parallel run (pytest-xdist) therefore hold a lock on the cache folder
    around each save (exclusive) and each load (shared).
    """
    try:
        import fcntl
    except ImportError:  # no flock (Windows): run the suite in one process there
        return
    from numba.core import caching

    cls = caching.IndexDataCacheFile
    save, load = cls.save, cls.load

    @contextlib.contextmanager
    def locked(cache, mode):
        try:
            f = open(os.path.join(cache._cache_path, "skstruct-tests.lock"), "a")
        except OSError:  # a folder numba cannot write to holds no cache to protect
            yield
            return
        with f:
            fcntl.flock(f, mode)
            try:
                yield
            finally:
                fcntl.flock(f, fcntl.LOCK_UN)

    def save_locked(self, key, data):
        with locked(self, fcntl.LOCK_EX):
            return save(self, key, data)

    def load_locked(self, key):
        with locked(self, fcntl.LOCK_SH):
            return load(self, key)

    cls.save, cls.load = save_locked, load_locked


def pytest_configure(config):
    if os.environ.get("PYTEST_XDIST_WORKER"):
        _share_numba_cache()
