"""doc/api.rst lists every public name of skstruct, and only public names.

A public module is one that ``pkgutil.walk_packages`` finds under ``skstruct`` with no
component of its dotted name starting with ``_``; its public names are its ``__all__``
(``__version__`` aside).  The reference's entries are the lines of its ``autosummary``
directives and the names of its ``py:function``, ``py:class``, ``py:data`` ... directives (for
the objects of other libraries that a module holds), read relative to the ``currentmodule`` in
force.

* Every public name has an entry.  A name re-exported by several public modules (the same
  object: ``skstruct.inference.ConvergenceWarning`` is ``skstruct.exceptions``'s, the
  pystruct drop-in's ``models.ChainCRF`` is ``models.chain_crf.ChainCRF``) needs one entry,
  under any of them.  A public module listed in an ``__all__`` (``skstruct.datasets``) is
  covered by the entries under it or a ``currentmodule``/``automodule`` naming it.
* A public module whose ``__all__`` is empty (``skstruct.distributed``) is named by a
  ``currentmodule`` or ``automodule`` directive: it has a section of its own.
* Every entry names a public name: importable, and in its module's ``__all__``.
"""

import importlib
import pkgutil
import re
import types
from pathlib import Path

import pytest

import skstruct

API_RST = Path(__file__).resolve().parents[1] / "doc" / "api.rst"

_MODULE_DIRECTIVE = re.compile(
    r"^\s*\.\. (?:py:)?(?:currentmodule|module|automodule)::\s*(\S+)\s*$")
_AUTOSUMMARY = re.compile(r"^(\s*)\.\. autosummary::\s*$")
# a name described by hand (another library's object that a module holds)
_OBJECT = re.compile(
    r"^\s*\.\. py:(?:function|class|exception|data|attribute)::\s*([\w.]+)")
# values equal by coincidence are not re-exports: only these are matched by identity
_SCALARS = (str, bytes, int, float, complex, bool, type(None), tuple, frozenset)


# ----------------------------------------------------------------------- the package
def public_modules():
    """Names of skstruct's public modules, the package itself first."""
    names = ["skstruct"]
    for info in pkgutil.walk_packages(skstruct.__path__, "skstruct."):
        if not any(part.startswith("_") for part in info.name.split(".")):
            names.append(info.name)
    return names


def public_names(modules=None):
    """``{"module.name": object}`` over the ``__all__`` of every public module, and the
    public modules whose ``__all__`` is empty."""
    names, empty = {}, []
    for modname in public_modules() if modules is None else modules:
        module = importlib.import_module(modname)
        if not hasattr(module, "__all__"):
            continue
        exported = [n for n in module.__all__ if n != "__version__"]
        if not exported:
            empty.append(modname)
        for name in exported:
            names[f"{modname}.{name}"] = getattr(module, name)
    return names, empty


# ----------------------------------------------------------------------- the page
def parse_api(text):
    """The entries of a reST text and the modules its directives name.

    Returns ``(entries, modules)``: ``entries`` a list of ``(full name, line number)``, the
    lines of its autosummary directives and the names of its Python object directives, each
    prefixed with the ``currentmodule`` in force; ``modules`` the set of module names of its
    ``currentmodule``, ``module`` and ``automodule`` directives.
    """
    entries, modules = [], set()
    current = None
    lines = text.splitlines()

    def qualified(name):
        if current is not None and not name.startswith(f"{current}."):
            return f"{current}.{name}"
        return name

    i = 0
    while i < len(lines):
        directive = _MODULE_DIRECTIVE.match(lines[i])
        block = _AUTOSUMMARY.match(lines[i])
        described = _OBJECT.match(lines[i])
        i += 1
        if described:
            entries.append((qualified(described.group(1)), i))
        elif directive:
            current = None if directive.group(1) == "None" else directive.group(1)
            if current is not None:
                modules.add(current)
        elif block:
            indent = len(block.group(1))
            while i < len(lines):
                line = lines[i]
                stripped = line.strip()
                if stripped and len(line) - len(line.lstrip()) <= indent:
                    break           # the directive's body has ended
                i += 1
                if not stripped or stripped.startswith(":"):
                    continue        # blank line or an option (:toctree:, :nosignatures:)
                entries.append((qualified(stripped.lstrip("~")), i))
    return entries, modules


def resolve(fullname):
    """What an entry documents: ``(module name, attribute or None, object)``.

    Read as ``module.attribute`` first, as Sphinx's autosummary reads it, then as a
    module.  Raises ``LookupError`` when it is neither.
    """
    modname, _, attr = fullname.rpartition(".")
    if modname:
        try:
            module = importlib.import_module(modname)
        except ImportError:
            module = None
        if module is not None and hasattr(module, attr):
            return modname, attr, getattr(module, attr)
    try:
        return fullname, None, importlib.import_module(fullname)
    except ImportError:
        raise LookupError(f"{fullname} cannot be imported") from None


def _is_public_module(modname):
    return modname.split(".")[0] == "skstruct" and not any(
        part.startswith("_") for part in modname.split("."))


def not_public(entries):
    """Entries that name nothing public, with the reason."""
    problems = []
    for fullname, line in entries:
        try:
            modname, attr, _ = resolve(fullname)
        except LookupError as exc:
            problems.append(f"line {line}: {exc}")
            continue
        if not _is_public_module(modname):
            problems.append(f"line {line}: {fullname} is not in a public module of skstruct")
        elif attr is not None and attr not in getattr(
                importlib.import_module(modname), "__all__", ()):
            problems.append(f"line {line}: {fullname}: {attr!r} is not in {modname}.__all__")
    return problems


def missing(entries, modules, names, empty):
    """Public names without an entry, and public modules with an empty ``__all__`` that
    no directive names."""
    documented = set()
    documented_ids = set()
    for fullname, _ in entries:
        try:
            _, _, obj = resolve(fullname)
        except LookupError:
            continue
        documented.add(fullname)
        if not isinstance(obj, _SCALARS):
            documented_ids.add(id(obj))
    out = []
    for fullname, obj in names.items():
        if fullname in documented:
            continue
        if isinstance(obj, types.ModuleType):
            if obj.__name__ in modules or any(
                    d.startswith(f"{obj.__name__}.") for d in documented):
                continue
        elif not isinstance(obj, _SCALARS) and id(obj) in documented_ids:
            continue
        out.append(fullname)
    out.extend(f"{m} (module without names: no section)" for m in empty if m not in modules)
    return out


# ----------------------------------------------------------------------- the checks
@pytest.fixture(scope="module")
def api():
    return parse_api(API_RST.read_text(encoding="utf-8"))


@pytest.fixture(scope="module")
def package():
    return public_names()


def test_every_public_name_has_an_entry(api, package):
    entries, modules = api
    absent = missing(entries, modules, *package)
    assert not absent, "doc/api.rst lacks these public names:\n  " + "\n  ".join(absent)


def test_every_entry_is_public(api):
    entries, _ = api
    problems = not_public(entries)
    assert not problems, "doc/api.rst names what is not public:\n  " + "\n  ".join(problems)


def test_no_entry_is_listed_twice(api):
    entries, _ = api
    seen, twice = set(), []
    for fullname, line in entries:
        if fullname in seen:
            twice.append(f"line {line}: {fullname}")
        seen.add(fullname)
    assert not twice, twice


def test_walk_finds_the_public_modules():
    modules = public_modules()
    for name in ("skstruct", "skstruct.exceptions", "skstruct.solvers", "skstruct.distributed",
                 "skstruct.compat.sklearn_crfsuite", "skstruct.compat.pystruct.models.grid_crf"):
        assert name in modules
    assert not any("._" in m for m in modules)


# ---------------------------------------------------- the checks can fail: small texts
PAGE = """
Estimators
==========

.. currentmodule:: skstruct

.. autosummary::
   :toctree: generated/
   :nosignatures:

   StructuredSVM
   CRF

Some text.

.. py:class:: compat.sklearn_crfsuite.utils.chain

   Python's itertools.chain.

.. currentmodule:: skstruct.solvers

.. autosummary::
   :toctree: generated/

   BCFW
{extra}
"""


def test_parser_reads_entries_under_their_current_module():
    entries, modules = parse_api(PAGE.format(extra=""))
    assert [e for e, _ in entries] == ["skstruct.StructuredSVM", "skstruct.CRF",
                                       "skstruct.compat.sklearn_crfsuite.utils.chain",
                                       "skstruct.solvers.BCFW"]
    assert modules == {"skstruct", "skstruct.solvers"}
    # the text after a block is not an entry, nor are its options
    assert all("Some" not in e and ":toctree:" not in e and "Python" not in e
               for e, _ in entries)


@pytest.mark.parametrize("extra, problem", [
    ("   OneSlack", None),
    ("   NoSuchSolver", "cannot be imported"),
    ("   DesignSolver", None),                   # defined in a private module, not exported
    ("   _bcfw.BCFW", "not in a public module"),
    ("   BCFW.fit", "cannot be imported"),
])
def test_an_entry_that_is_not_public_is_reported(extra, problem, monkeypatch):
    import skstruct.solvers as solvers

    if extra.strip() == "DesignSolver":
        # a name importable from the module but missing from its __all__
        from skstruct.solvers._design_solver import DesignSolver

        monkeypatch.setattr(solvers, "DesignSolver", DesignSolver, raising=False)
        problem = "not in skstruct.solvers.__all__"
    entries, _ = parse_api(PAGE.format(extra=extra))
    problems = not_public(entries)
    if problem is None:
        assert problems == []
    else:
        assert len(problems) == 1 and problem in problems[0], problems


@pytest.mark.parametrize("listed, absent", [
    (["BCFW", "OneSlack"], ["skstruct.solvers.SSVM_SOLVERS", "skstruct.solvers.Subgradient"]),
    (["BCFW", "SSVM_SOLVERS", "OneSlack"], ["skstruct.solvers.Subgradient"]),
])
def test_a_public_name_without_an_entry_is_reported(listed, absent):
    text = ".. currentmodule:: skstruct.solvers\n\n.. autosummary::\n\n" + "".join(
        f"   {name}\n" for name in listed)
    entries, modules = parse_api(text)
    names, empty = public_names(["skstruct.solvers"])
    found = missing(entries, modules, names, empty)
    assert set(absent) <= set(found)
    assert not {f"skstruct.solvers.{n}" for n in listed} & set(found)


def test_a_re_export_is_covered_by_the_entry_of_its_object():
    text = (".. currentmodule:: skstruct.exceptions\n\n.. autosummary::\n\n"
            "   ConvergenceWarning\n   InfeasibilityWarning\n")
    entries, modules = parse_api(text)
    names, empty = public_names(["skstruct.inference"])
    found = missing(entries, modules, names, empty)
    assert "skstruct.inference.ConvergenceWarning" not in found
    assert "skstruct.inference.viterbi" in found


def test_a_module_without_names_needs_a_section():
    names, empty = public_names(["skstruct.distributed"])
    assert empty == ["skstruct.distributed"]
    assert missing([], set(), names, empty) == [
        "skstruct.distributed (module without names: no section)"]
    entries, modules = parse_api(".. automodule:: skstruct.distributed\n   :no-members:\n")
    assert missing(entries, modules, names, empty) == []
