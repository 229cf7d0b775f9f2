"""The disk cache of the kernels is validated against every kernel module of the package,
so that editing a called kernel's file cannot leave a caller's stale compiled copy in use."""

import os
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest
from numba import prange

import skstruct
from skstruct._core import _jit


@pytest.fixture
def fake_package(tmp_path, monkeypatch):
    (tmp_path / "sub").mkdir()
    (tmp_path / "kernels.py").write_text("from ._jit import jit\n")
    (tmp_path / "sub" / "callee.py").write_text("import numba\nX = 1\n")
    (tmp_path / "plain.py").write_text("Y = 1\n")
    monkeypatch.setattr(_jit, "_PACKAGE", str(tmp_path))
    _jit.package_stamp.cache_clear()
    yield tmp_path
    _jit.package_stamp.cache_clear()


def test_stamp_follows_every_kernel_module(fake_package):
    before = _jit.package_stamp()
    (fake_package / "sub" / "callee.py").write_text("import numba\nX = 2\n")
    _jit.package_stamp.cache_clear()
    assert _jit.package_stamp() != before


def test_stamp_ignores_modules_without_kernels(fake_package):
    before = _jit.package_stamp()
    (fake_package / "plain.py").write_text("Y = 2\n")
    _jit.package_stamp.cache_clear()
    assert _jit.package_stamp() == before


def test_skstruct_kernels_use_the_package_stamp():
    from skstruct.inference._chain import _viterbi_batch_chunks as viterbi_batch

    locator = viterbi_batch._cache._impl.locator
    assert type(locator).__name__.startswith("SkstructPackage")
    assert locator.get_source_stamp() == _jit.package_stamp()


# one compilation per argument type: a kernel called from other kernels with constants
# and prange indices is compiled once, for the plain types


@_jit.jit(cache=False)
def _scaled(a, i, double):
    return a[i] * (2.0 if double else 1.0)


@_jit.jit(cache=False)
def _constants(a):
    return _scaled(a, 0, True) + _scaled(a, 1, False) + _scaled(a, 2, True)


@_jit.pjit(cache=False)
def _loop(a, out):
    for j in prange(a.shape[0]):
        out[j] = _scaled(a, j, False)


@_jit.jit(cache=False)
def _pick(t, i):
    return t[i]


@_jit.jit(cache=False)
def _from_tuple(x):
    # a heterogeneous tuple is indexed by a literal only
    return _pick((x, 2.5), 1) + _pick((x, 2.5), 0)


def test_constants_and_loop_indices_compile_one_signature():
    a = np.array([1.0, 2.0, 3.0])
    out = np.zeros(3)
    assert _constants(a) == 2.0 + 2.0 + 6.0
    _loop(a, out)
    np.testing.assert_array_equal(out, a)
    assert len(_scaled.signatures) == 1
    sig = _scaled.signatures[0]
    assert (str(sig[1]), str(sig[2])) == ("int64", "bool")


def test_a_kernel_that_needs_the_literal_still_gets_it():
    assert _from_tuple(1) == 3.5
    assert {str(s[1]) for s in _pick.signatures} == {"Literal[int](0)", "Literal[int](1)"}


def _index_naming_a_missing_class(tmp_path, stamp):
    """An index file as numba writes it, whose entries name a class that no longer
    exists (a kernel's argument type removed since the cache was written)."""
    import pickle
    import sys
    import types

    import numba
    from numba.core import caching

    module = types.ModuleType("_skstruct_gone")
    gone = type("Gone", (), {"__module__": "_skstruct_gone"})
    module.Gone = gone
    sys.modules["_skstruct_gone"] = module
    try:
        data = pickle.dumps((stamp, {gone(): "entry"}))
    finally:
        del sys.modules["_skstruct_gone"]
    cache_file = caching.IndexDataCacheFile(str(tmp_path), "kernel-1.py311", stamp)
    with open(cache_file._index_path, "wb") as f:
        pickle.dump(numba.__version__, f)
        f.write(data)
    return cache_file


def test_an_index_naming_a_removed_class_is_a_cache_miss(tmp_path):
    # skstruct's own index: read as empty, and the kernel recompiles
    ours = _index_naming_a_missing_class(tmp_path, _jit.package_stamp())
    assert ours._load_index() == {}
    # another package's index raises as numba does
    other = _index_naming_a_missing_class(tmp_path, b"another stamp")
    with pytest.raises((AttributeError, ModuleNotFoundError)):
        other._load_index()


_KERNEL_TAKING_A_KERNEL = '''
from skstruct._core._jit import jit


@jit
def callee(x):
    return x + 1


@jit
def caller(x, f):
    return f(x) * 2


print(caller(1.0, callee), sum(caller.stats.cache_hits.values()))
'''


def test_a_kernel_taking_a_kernel_hits_the_cache_in_the_next_process(tmp_path):
    """A kernel passed as an argument is named the same in every process: the caller's
    entry is found again instead of compiled and appended once per process."""
    (tmp_path / "kernels_taking_kernels.py").write_text(_KERNEL_TAKING_A_KERNEL)
    env = dict(os.environ, NUMBA_CACHE_DIR=str(tmp_path / "cache"),
               PYTHONPATH=os.pathsep.join([str(Path(skstruct.__file__).parents[1]),
                                           str(tmp_path)]))
    runs = [subprocess.run([sys.executable, "-c", "import kernels_taking_kernels"], env=env,
                           capture_output=True, text=True, check=True).stdout.split()
            for _ in range(3)]
    assert runs == [["4.0", "0"], ["4.0", "1"], ["4.0", "1"]]
    assert len(list((tmp_path / "cache").rglob("*caller*.nbc"))) == 1


def test_kernels_under_one_name_keep_distinct_identities():
    first = _jit.jit(lambda x: x)
    second = _jit.jit(lambda x: x)
    assert first._uuid != second._uuid
    named = _jit.jit(_from_tuple.py_func)   # the module already has a kernel of this name
    assert named._uuid != _from_tuple._uuid
    assert _from_tuple._uuid == f"skstruct:{__name__}._from_tuple"
