"""CITATION.cff is Citation File Format 1.2.0 and names the running version of skstruct.

Parsed with PyYAML when it is installed; otherwise its top-level keys and its version are
read line by line.  The structural checks follow the CFF 1.2.0 JSON schema: required keys,
the keys a reference may have (those this file uses), and the integer fields.
"""

import importlib.util
import re
import sys
from pathlib import Path

import pytest

import skstruct

ROOT = Path(__file__).resolve().parents[1]
CFF = ROOT / "CITATION.cff"
pytestmark = pytest.mark.skipif(not CFF.is_file(), reason="CITATION.cff is not in this tree")

REQUIRED = {"cff-version", "message", "title", "authors"}
TOP_LEVEL = {"abstract", "authors", "cff-version", "commit", "contact", "date-released", "doi",
             "identifiers", "keywords", "license", "license-url", "message",
             "preferred-citation", "references", "repository", "repository-artifact",
             "repository-code", "title", "type", "url", "version"}
REFERENCE = {"abbreviation", "abstract", "authors", "collection-title", "collection-type",
             "conference", "doi", "end", "issue", "journal", "publisher", "start", "title",
             "type", "url", "volume", "year"}
REFERENCE_TYPES = {"article", "book", "conference-paper", "proceedings", "report", "software",
                   "thesis", "generic"}
INTEGERS = ("year", "volume", "start", "end")
PERSON = {"family-names", "given-names", "name-particle", "name-suffix", "affiliation",
          "orcid", "email", "website"}


def _yaml():
    if importlib.util.find_spec("yaml") is None:
        return None
    import yaml

    return yaml.safe_load(CFF.read_text(encoding="utf-8"))


def _scalar(key):
    """A top-level scalar, read from the text (no YAML parser needed)."""
    match = re.search(rf"^{re.escape(key)}:\s*(.+?)\s*$", CFF.read_text(encoding="utf-8"),
                      flags=re.MULTILINE)
    assert match, f"no top-level {key}"
    return match.group(1).strip("\"'")


def test_version_is_the_package_version():
    assert _scalar("version") == skstruct.__version__
    data = _yaml()
    if data is not None:
        assert str(data["version"]) == skstruct.__version__


def test_top_level_keys():
    text = CFF.read_text(encoding="utf-8")
    keys = set(re.findall(r"^([a-z][a-z-]*):", text, flags=re.MULTILINE))
    assert REQUIRED <= keys
    assert keys <= TOP_LEVEL, keys - TOP_LEVEL
    assert _scalar("cff-version") == "1.2.0"
    assert _scalar("license") == "BSD-3-Clause"


def test_repository_matches_the_project_urls():
    if sys.version_info < (3, 11):
        pytest.skip("tomllib is Python 3.11's")
    import tomllib

    urls = tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))["project"]["urls"]
    assert _scalar("repository-code") == urls["Source"]


def test_structure():
    data = _yaml()
    if data is None:
        pytest.skip("PyYAML is not installed: the line-based checks above ran")
    assert REQUIRED <= data.keys() <= TOP_LEVEL
    assert data["type"] == "software"
    assert data["authors"] == [{"name": "skstruct developers"}]
    refs = data["references"]
    assert refs and len({r["title"] for r in refs}) == len(refs)
    for ref in refs:
        assert {"type", "title", "authors", "year"} <= ref.keys() <= REFERENCE, ref["title"]
        assert ref["type"] in REFERENCE_TYPES
        for key in INTEGERS:
            assert isinstance(ref.get(key, 0), int), (ref["title"], key)
        if "start" in ref:
            assert ref["start"] <= ref["end"], ref["title"]
        for author in ref["authors"]:
            assert author.keys() <= PERSON and author.get("family-names"), ref["title"]
        for entity in ("conference", "publisher"):
            if entity in ref:
                assert set(ref[entity]) == {"name"}, ref["title"]
        assert ref["type"] != "article" or {"journal", "volume"} <= ref.keys(), ref["title"]


def test_cites_the_methods_papers():
    text = CFF.read_text(encoding="utf-8")
    for title in ("Block-Coordinate Frank-Wolfe Optimization for Structural SVMs",
                  "Learning Structural SVMs with Latent Variables",
                  "Cutting-plane training of structural SVMs",
                  "Convergent Tree-Reweighted Message Passing for Energy Minimization",
                  "Bethe Projections for Non-Local Inference"):
        assert title in text
