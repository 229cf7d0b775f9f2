"""The documentation's browser check (doc/check_site.py) passes a sound page and fails a bad one.

Needs Chromium, its driver and Selenium (Debian's chromium and chromium-driver, the docs
extra); CI installs them before building the site and runs this file then.
"""

import importlib.util
import shutil
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
pytestmark = pytest.mark.skipif(
    not (ROOT / "doc" / "check_site.py").is_file()
    or importlib.util.find_spec("selenium") is None
    or not shutil.which("chromedriver")
    or not (shutil.which("chromium") or shutil.which("chromium-browser")),
    reason="needs doc/check_site.py, selenium, chromium and chromedriver")

# a 1x1 PNG
PIXEL = bytes.fromhex(
    "89504e470d0a1a0a0000000d4948445200000001000000010806000000"
    "1f15c4890000000d49444154789c6360000002000100e221bc330000000049454e44ae426082")


@pytest.fixture(scope="module")
def check_site():
    spec = importlib.util.spec_from_file_location("check_site", ROOT / "doc" / "check_site.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def _page(body):
    return f"<html><head><title>t</title></head><body>{body}</body></html>"


def test_sound_site_passes(check_site, tmp_path, capsys):
    (tmp_path / "a.png").write_bytes(PIXEL)
    (tmp_path / "sub").mkdir()
    (tmp_path / "sub" / "page.html").write_text(_page('<p id="part">x</p>'))
    (tmp_path / "index.html").write_text(_page(
        '<img src="a.png"><a href="sub/page.html#part">p</a><a href="#top" id="top">t</a>'
        '<a href="https://example.org/elsewhere">outbound links are not checked</a>'))
    assert check_site.main([str(tmp_path), "index.html"]) == 0
    assert "1 images, 2 internal links checked" in capsys.readouterr().out


@pytest.mark.parametrize("body, problem", [
    ('<img src="missing.png">', "broken image"),
    ('<img src="notapng.png">', "broken image"),
    ('<a href="nowhere.html">x</a>', "broken link"),
    ('<a href="index.html#nothere">x</a>', "missing anchor"),
])
def test_bad_site_fails(check_site, tmp_path, capsys, body, problem):
    (tmp_path / "notapng.png").write_text("this is text, the browser cannot decode it")
    (tmp_path / "index.html").write_text(_page(body))
    assert check_site.main([str(tmp_path), "index.html"]) == 1
    assert problem in capsys.readouterr().out


def test_missing_page_fails(check_site, tmp_path, capsys):
    (tmp_path / "index.html").write_text(_page("x"))
    assert check_site.main([str(tmp_path), "gone.html"]) == 1
    assert "did not load" in capsys.readouterr().out
