"""Every Python code block of README.md and of the documentation runs as written.

The blocks of one file run in order in one fresh interpreter, in a shared namespace, as a
reader pasting them one after the other would run them; the working directory is a temporary
one.  A block whose first line is ``# requires: <module>`` runs only where that module
imports (the pystruct side of the migration guide needs pystruct's Python 3.6 environment:
it runs there when ``PYSTRUCT_PYTHON`` names that interpreter).  ``bash``, ``text`` and
``pycon`` blocks are not run.

These tests take minutes, so the default run leaves them out (marker ``docs``); run them
with ``python -m pytest -m docs`` (CI does, with the documentation build).

Data that cannot be bundled (CoNLL-2000) is read through ``skstruct.datasets`` fetchers:
when a copy of the data sits beside the repository (``../shared/data``) it seeds a
temporary data home, otherwise the fetcher downloads it, and the file is skipped (saying
why) when neither is possible.
"""

import os
import re
import shutil
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
DOC_FILES = sorted(
    [ROOT / "README.md"]
    + [p for p in (ROOT / "doc").rglob("*.md") if "_build" not in p.parts]
    + [p for p in (ROOT / "doc").rglob("*.rst") if "_build" not in p.parts
       and "generated" not in p.parts and "auto_examples" not in p.parts]
) if (ROOT / "doc").is_dir() else []

# ```python fences in Markdown; ``.. code-block:: python`` in reST.
_MD_BLOCK = re.compile(r"^(?P<indent>[ \t]*)```(?:\{code-block\}\s*)?(?P<lang>[\w-]*)[^\n]*\n"
                       r"(?P<body>.*?)^(?P=indent)```[ \t]*$", re.M | re.S)
_RST_BLOCK = re.compile(r"^(?P<indent>[ \t]*)\.\. code-block:: (?P<lang>\w+)[^\n]*\n"
                        r"(?:(?P=indent)[ \t]+:[^\n]*\n)*\n"
                        r"(?P<body>(?:(?P=indent)[ \t]+[^\n]*\n|[ \t]*\n)+)", re.M)
_REQUIRES = re.compile(r"^#\s*requires:\s*([\w.]+)\s*$")


def python_blocks(path):
    """The Python blocks of a Markdown or reST file, as (line number, source) pairs."""
    text = path.read_text(encoding="utf-8")
    pattern = _RST_BLOCK if path.suffix == ".rst" else _MD_BLOCK
    blocks = []
    for m in pattern.finditer(text):
        if m.group("lang") not in ("python", "py"):
            continue
        body = textwrap.dedent(m.group("body"))
        if path.suffix == ".md" and m.group("indent"):
            body = textwrap.dedent(body)
        # MyST directive options (":caption: ...") open some blocks
        body = re.sub(r"\A(?::[\w-]+:[^\n]*\n)+", "", body)
        blocks.append((text.count("\n", 0, m.start()) + 2, body))
    return blocks


def _importable(module, python=sys.executable):
    return subprocess.run([python, "-c", f"import {module}"], capture_output=True).returncode == 0


def _data_home(tmp_path):
    """A data home holding CoNLL-2000 when a local copy exists, else the user's own."""
    shared = ROOT.parent / "shared" / "data" / "conll2000"
    if not (shared / "train.txt").is_file():
        return None
    home = tmp_path / "skstruct_data" / "conll2000"
    home.mkdir(parents=True)
    for name in ("train.txt", "test.txt"):
        shutil.copy(shared / name, home / name)
    return home.parent


def _needs_conll(source):
    return "fetch_conll2000" in source


pytestmark = pytest.mark.docs


@pytest.mark.parametrize("path", DOC_FILES, ids=lambda p: str(p.relative_to(ROOT)))
def test_code_blocks_run(path, tmp_path):
    blocks = python_blocks(path)
    if not blocks:
        pytest.skip("no Python code block")
    env = dict(os.environ, MPLBACKEND="Agg", PYTHONWARNINGS="ignore::DeprecationWarning")
    home = _data_home(tmp_path)
    if home is not None:
        env["SKSTRUCT_DATA"] = str(home)
    elif any(_needs_conll(b) for _, b in blocks):
        from skstruct.datasets import fetch_conll2000

        try:
            fetch_conll2000("test")
        except OSError:  # no network and no cached copy
            home = os.environ.get("SKSTRUCT_DATA") or os.path.join("~", "skstruct_data")
            pytest.skip(f"CoNLL-2000 is not in the data home and cannot be downloaded; place "
                        f"train.txt and test.txt in {os.path.join(home, 'conll2000')}")

    groups = {}  # interpreter -> blocks, in file order
    skipped = []
    for line, body in blocks:
        first = body.splitlines()[0] if body.strip() else ""
        req = _REQUIRES.match(first)
        python = sys.executable
        if req and req.group(1) == "pystruct":
            python = os.environ.get("PYSTRUCT_PYTHON", "")
            if not python or not _importable("pystruct", python):
                skipped.append((line, "pystruct"))
                continue
        elif req and not _importable(req.group(1)):
            skipped.append((line, req.group(1)))
            continue
        groups.setdefault(python, []).append((line, body))

    for python, group in groups.items():
        # each block is compiled with its own file name and line so a failure points at it
        script = "\n".join(
            f"exec(compile({body!r}, {f'{path.name}, line {line}'!r}, 'exec'))"
            for line, body in group)
        proc = subprocess.run([python, "-c", script], cwd=tmp_path, env=env,
                              capture_output=True, text=True, timeout=900)
        assert proc.returncode == 0, (
            f"{path.relative_to(ROOT)}: a code block failed\n{proc.stdout[-3000:]}\n"
            f"{proc.stderr[-5000:]}")
    if skipped and not groups:
        pytest.skip(f"every block needs a missing module: {skipped}")
