"""The disk cache of the kernels is validated against every kernel module of the package,
so that editing a called kernel's file cannot leave a caller's stale compiled copy in use."""

import pytest

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
    from skstruct.inference._chain import viterbi_batch

    locator = viterbi_batch._cache._impl.locator
    assert type(locator).__name__.startswith("SkstructPackage")
    assert locator.get_source_stamp() == _jit.package_stamp()
