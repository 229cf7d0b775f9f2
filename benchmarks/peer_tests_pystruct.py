"""Run pystruct 0.3.2's own test suite (and, optionally, its examples) on
skstruct.compat.pystruct.

Downloads pystruct 0.3.2's source distribution from the package index (its page
``https://pypi.org/simple/pystruct/`` gives the link; the archive's sha256 is
checked), extracts ``pystruct/tests`` into a temporary directory, rewrites only the
lines that import pystruct (``from pystruct.models import ChainCRF`` becomes ``from
skstruct.compat.pystruct.models import ChainCRF``), puts a stand-in for ``nose`` (the
test runner pystruct's tests were written for: ``SkipTest`` and the ``assert_*``
helpers of ``nose.tools``, a few lines over :mod:`unittest`) on the path, restores
numpy's aliases ``np.int``, ``np.float``, ``np.bool`` and ``np.object`` (the builtins,
removed in numpy 1.24, which the tests use; ``--no-numpy-aliases`` leaves them out),
and runs pytest on them in a subprocess with this checkout's ``skstruct`` first on the
path.
Prints the number of tests passed, failed (errors included) and skipped, and each
test that did not pass with a one-line reason read from pytest's JUnit XML report.

With ``--examples`` it also runs pystruct's ``examples/*.py`` from the same archive,
with only their import lines changed (matplotlib's ``Agg`` backend, a timeout per
example), and prints the scores each printed; with ``--reference-python PATH`` the
unmodified examples also run under that interpreter (one with pystruct 0.3.2
installed), and the table shows both side by side.  ``--examples-json FILE`` records each
example's row as it finishes and skips examples already recorded there, so that a run of
all the examples (hours on two cores) can be resumed.  numpy 1.x's object arrays for
ragged lists, which some examples build, are restored for the examples only.

Usage::

    python benchmarks/peer_tests_pystruct.py                     # the test suite
    python benchmarks/peer_tests_pystruct.py --sdist pystruct-0.3.2.tar.gz
    python benchmarks/peer_tests_pystruct.py --min-passed 120    # CI: fail below 120
    python benchmarks/peer_tests_pystruct.py --examples --reference-python /path/python
    python benchmarks/peer_tests_pystruct.py --only-examples --examples-json ex.json

Exit status: 0, or 1 when fewer than ``--min-passed`` tests passed (or none ran), 3
when the package index could not be reached (nothing was tested).  pystruct's code
is not copied into this repository: it is fetched at each run.
"""

import argparse
import hashlib
import json
import os
import pathlib
import re
import shutil
import subprocess
import sys
import tarfile
import tempfile
import time
import urllib.error
import urllib.parse
import urllib.request
import xml.etree.ElementTree as ET

ROOT = pathlib.Path(__file__).resolve().parent.parent
VERSION = "0.3.2"
SDIST = f"pystruct-{VERSION}.tar.gz"
SHA256 = "713ff8a9669260a7ff756c6df6087bfbb54c5ca4ce0395081235202161b43e76"
INDEX = "https://pypi.org/simple/pystruct/"
DROPIN = "skstruct.compat.pystruct"
# the exit status when the package index cannot be reached (nothing was tested)
UNREACHABLE = 3

# ``from pystruct import x`` and ``from pystruct.sub.mod import x``
_FROM = re.compile(r"^(\s*)from pystruct((?:\.\w+)*) import\b")
# ``import pystruct.sub as x``
_IMPORT_AS = re.compile(r"^(\s*)import pystruct((?:\.\w+)*) as (\w+)\s*$")
# ``import pystruct`` and ``import pystruct.sub``: the name ``pystruct`` must stay bound
_IMPORT = re.compile(r"^(\s*)import pystruct((?:\.\w+)*)\s*$")

# the stand-in for nose: its SkipTest and the assert_* helpers of nose.tools, which
# nose generated from unittest.TestCase's assertion methods
_NOSE_INIT = '''"""A stand-in for nose (written by peer_tests_pystruct.py)."""
from unittest import SkipTest  # noqa: F401
'''
_NOSE_TOOLS = '''"""A stand-in for nose.tools (written by peer_tests_pystruct.py)."""
import re
import unittest

_case = unittest.TestCase("__init__")
_case.maxDiff = None
for _name in dir(_case):
    if _name.startswith("assert") and "_" not in _name:
        globals()[re.sub(r"([A-Z])", r"_\\1", _name).lower()] = getattr(_case, _name)


def raises(*exceptions):
    """nose's decorator: the test must raise one of ``exceptions``."""
    def decorate(func):
        def wrapped(*args, **kwargs):
            with _case.assertRaises(exceptions):
                func(*args, **kwargs)
        wrapped.__name__ = func.__name__
        return wrapped
    return decorate
'''

# numpy 1.24 removed the aliases np.int, np.float, np.bool and np.object, which were the
# builtins themselves; pystruct's tests and examples (written for numpy 1.x) use them.
# Restoring them changes no computation, only lets that code run as it was written.
_NUMPY_ALIASES = '''"""peer_tests_pystruct.py: numpy 1.x behaviour numpy 1.24 removed."""
import numpy

for _name, _value in (("int", int), ("float", float), ("bool", bool), ("object", object)):
    if _name not in numpy.__dict__:
        setattr(numpy, _name, _value)

# numpy 1.24 also turned np.array() of ragged nested sequences (an object array, with a
# deprecation warning, in numpy 1.x) into a ValueError; pystruct's examples build their
# lists of samples that way.  Only the examples' runs ask for this (the tests do not need
# it, and it must not turn an error the tests expect into an object array).
import os

_array = numpy.array


def _array_1x(obj, *args, **kwargs):
    try:
        return _array(obj, *args, **kwargs)
    except ValueError as e:
        if args or kwargs.get("dtype") is not None or "inhomogeneous" not in str(e):
            raise
        return _array(obj, dtype=object, **kwargs)


if os.environ.get("PEER_NUMPY_RAGGED_ARRAYS") == "1":
    numpy.array = _array_1x
'''

# a printed line that reports a result: a score, accuracy, loss or error, or a line
# that opens with "Objective:" or "Gap:" (plot_learning's) or "Train:" / "Test:"; the
# learners' verbose progress lines (objectives and gaps per pass) are not results
_SCORE = re.compile(r"(score|accuracy|loss|error)|^\s*(objective|gap|train|test)\s*:",
                    re.IGNORECASE)
_NUMBER = re.compile(r"-?\d+\.\d+(?:e[-+]?\d+)?|-?\d+e[-+]?\d+", re.IGNORECASE)


# ------------------------------------------------------------------- the sdist
def _fetch(url, timeout=60):
    with urllib.request.urlopen(url, timeout=timeout) as r:
        return r.read()


def sdist_link(page, base=INDEX):
    """The URL of pystruct 0.3.2's sdist in the index page ``page`` (HTML text)."""
    for href in re.findall(r'href="([^"]+)"', page):
        path = urllib.parse.urlsplit(href).path
        if path.rsplit("/", 1)[-1] == SDIST:
            return urllib.parse.urljoin(base, href)
    raise SystemExit(f"{INDEX} lists no {SDIST}")


def download(dest):
    """Download pystruct 0.3.2's sdist into ``dest``; returns its path."""
    try:
        page = _fetch(INDEX).decode("utf-8", "replace")
        url = sdist_link(page)
        data = _fetch(url, timeout=300)
    except (urllib.error.URLError, OSError) as e:
        print(f"could not reach the package index ({INDEX}): {e}", file=sys.stderr)
        raise SystemExit(UNREACHABLE) from None
    path = pathlib.Path(dest) / SDIST
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_bytes(data)
    return path


def check_sha256(path, expected=None):
    """Refuse an archive that is not pystruct 0.3.2's sdist (SystemExit)."""
    expected = SHA256 if expected is None else expected
    digest = hashlib.sha256(pathlib.Path(path).read_bytes()).hexdigest()
    if digest != expected:
        raise SystemExit(f"{path}: sha256 {digest}, expected {expected}")


def extract(sdist, dest, folder):
    """Extract the sdist's ``<top>/<folder>/`` into ``dest``; returns ``dest``."""
    dest = pathlib.Path(dest)
    want = pathlib.PurePosixPath(folder).parts
    with tarfile.open(sdist) as tar:
        for member in tar.getmembers():
            parts = pathlib.PurePosixPath(member.name).parts
            if not member.isfile() or parts[1:1 + len(want)] != want:
                continue
            rest = parts[1 + len(want):]
            if not rest or any(p in ("..", "") for p in rest) or member.name.startswith("/"):
                continue
            target = dest.joinpath(*rest)
            target.parent.mkdir(parents=True, exist_ok=True)
            target.write_bytes(tar.extractfile(member).read())
    if not any(dest.rglob("*.py")):
        raise SystemExit(f"{sdist} has no {folder}/*.py")
    return dest


# ------------------------------------------------------------ import rewriting
def rewrite_line(line):
    """The line with its pystruct import pointed at the drop-in (other lines as they are)."""
    m = _FROM.match(line)
    if m:
        return f"{m.group(1)}from {DROPIN}{m.group(2)} import" + line[m.end():]
    m = _IMPORT_AS.match(line)
    if m:
        return f"{m.group(1)}import {DROPIN}{m.group(2)} as {m.group(3)}"
    m = _IMPORT.match(line)
    if m:
        sub = f"; import {DROPIN}{m.group(2)}" if m.group(2) else ""
        return f"{m.group(1)}from skstruct.compat import pystruct{sub}"
    return line


def rewrite_imports(folder):
    """Rewrite the import lines of every ``.py`` file under ``folder``; returns the
    changed lines as ``file:line: old  ->  new``."""
    changed = []
    folder = pathlib.Path(folder)
    for path in sorted(folder.rglob("*.py")):
        lines = path.read_text(encoding="utf-8").splitlines(keepends=True)
        for i, line in enumerate(lines):
            body = line.rstrip("\r\n")
            new = rewrite_line(body)
            if new != body:
                lines[i] = new + line[len(body):]
                changed.append(f"{path.relative_to(folder)}:{i + 1}: {body.strip()}  ->  "
                               f"{new.strip()}")
        path.write_text("".join(lines), encoding="utf-8")
    return changed


def write_nose(dest, numpy_aliases=True):
    """Write the nose stand-in package into ``dest`` (and, with ``numpy_aliases``, a
    ``sitecustomize`` that restores numpy's removed aliases at interpreter start);
    returns ``dest``."""
    nose = pathlib.Path(dest) / "nose"
    nose.mkdir(parents=True, exist_ok=True)
    (nose / "__init__.py").write_text(_NOSE_INIT)
    (nose / "tools.py").write_text(_NOSE_TOOLS)
    if numpy_aliases:
        (pathlib.Path(dest) / "sitecustomize.py").write_text(_NUMPY_ALIASES)
    return pathlib.Path(dest)


# ------------------------------------------------------------------ the tests
def _one_line(text, limit=160):
    text = " ".join((text or "").split())
    return text if len(text) <= limit else text[:limit - 3] + "..."


def _reason(node):
    """One line saying why a test did not pass: pytest's ``E`` line that names the
    exception (the last one), else the report's message."""
    text = node.text or ""
    raised = [line[1:].strip() for line in text.splitlines() if line.startswith("E ")]
    named = [line for line in raised if re.match(r"[\w.]+(Error|Exception|Warning|"
                                                 r"Exit|Interrupt|Test|Implemented)\b",
                                                 line)]
    message = node.get("message") or ""
    if named:
        return named[-1]
    if raised and message in ("", "collection failure"):
        return raised[-1]
    return message or (text.strip().splitlines() or [""])[-1]


def parse_junit(xml_path):
    """``(test, outcome, reason)`` of every test case of a JUnit XML report; outcome
    one of passed, failed, error, skipped."""
    out = []
    for case in ET.parse(xml_path).getroot().iter("testcase"):
        name = f"{case.get('classname', '')}::{case.get('name', '')}".lstrip(":")
        outcome, reason = "passed", ""
        for tag in ("failure", "error", "skipped"):
            child = case.find(tag)
            if child is not None:
                outcome = {"failure": "failed"}.get(tag, tag)
                reason = _reason(child)
                break
        out.append((name, outcome, _one_line(reason)))
    return out


def summary(results):
    """The counts of a run's outcomes: total, passed, failed (errors included), skipped."""
    return {"total": len(results),
            "passed": sum(o == "passed" for _, o, _ in results),
            "failed": sum(o in ("failed", "error") for _, o, _ in results),
            "skipped": sum(o == "skipped" for _, o, _ in results)}


def print_summary(results, out=sys.stdout):
    counts = summary(results)
    print(f"\n{counts['total']} tests: {counts['passed']} passed, {counts['failed']} failed, "
          f"{counts['skipped']} skipped", file=out)
    for name, outcome, reason in results:
        if outcome != "passed":
            print(f"  {outcome:8s} {name}: {reason}", file=out)
    return counts


def run_tests(work, env, pytest_args=(), timeout=None):
    """Run pytest on ``work/pystruct_tests`` (its output shown as it runs); returns the
    results read from its JUnit XML report."""
    report = work / "junit.xml"
    paths = [a for a in pytest_args if a.startswith("pystruct_tests")]
    cmd = [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider",
           "--continue-on-collection-errors", f"--junitxml={report}",
           *([] if paths else ["pystruct_tests"]), *pytest_args]
    sys.stdout.flush()
    try:
        # pytest's own output goes straight through, so that a long run shows progress
        subprocess.run(cmd, cwd=work, env=env, timeout=timeout)
    except subprocess.TimeoutExpired:
        print(f"pytest did not finish within {timeout} s", file=sys.stderr)
    if not report.exists():
        return []
    return parse_junit(report)


# --------------------------------------------------------------- the examples
def scores(stdout):
    """``(label, value)`` of every printed line that names a score, accuracy, loss or
    error and holds a number: the label is the line without its numbers."""
    found = []
    for line in stdout.splitlines():
        if not _SCORE.search(line):
            continue
        numbers = _NUMBER.findall(line)
        if not numbers:
            continue
        label = " ".join(_NUMBER.sub("#", line).split())
        # a label printed again (e.g. "Test: #" for each of two models) is numbered
        seen = sum(1 for k, _ in found if k == label or k.startswith(label + " ("))
        found.append((f"{label} ({seen + 1})" if seen else label, float(numbers[0])))
    return found


def run_example(python, path, env, timeout):
    """Run one example; returns ``(status, seconds, scores, last error line)``."""
    start = time.perf_counter()
    try:
        proc = subprocess.run([python, path.name], cwd=path.parent, env=env,
                              capture_output=True, text=True, timeout=timeout)
    except subprocess.TimeoutExpired as e:
        out = e.stdout.decode() if isinstance(e.stdout, bytes) else (e.stdout or "")
        return "timeout", time.perf_counter() - start, scores(out), f"over {timeout} s"
    seconds = time.perf_counter() - start
    err = [line for line in proc.stderr.splitlines() if line.strip()]
    status = "ok" if proc.returncode == 0 else "failed"
    return status, seconds, scores(proc.stdout), _one_line(err[-1] if err else "", 100)


def _load_rows(path):
    if path is None or not pathlib.Path(path).exists():
        return []
    return [(name, tuple(ours), tuple(theirs) if theirs else None)
            for name, ours, theirs in json.loads(pathlib.Path(path).read_text())]


def run_examples(sdist, work, env, reference, timeout, only=None, record=None):
    """Run the examples with the drop-in (and under ``reference``); returns rows.

    With ``record`` (a JSON file), each example's row is written there as soon as it
    has run, and examples already recorded there are not run again: a long run can be
    resumed, and an interrupted one keeps what it measured."""
    dropin = extract(sdist, work / "examples_dropin", "examples")
    rewrite_imports(dropin)
    original = extract(sdist, work / "examples_pystruct", "examples") if reference else None
    ref_env = {k: v for k, v in env.items() if k != "PYTHONPATH"}
    ref_env["MPLBACKEND"] = "Agg"
    env = dict(env, PEER_NUMPY_RAGGED_ARRAYS="1")
    rows = _load_rows(record)
    done = {name for name, _, _ in rows}
    for path in sorted(dropin.glob("*.py")):
        if only and path.stem not in only or path.stem in done:
            continue
        print(f"example {path.name} ...", flush=True)
        ours = run_example(sys.executable, path, env, timeout)
        theirs = (run_example(reference, original / path.name, ref_env, timeout)
                  if reference else None)
        rows.append((path.stem, ours, theirs))
        print_examples(rows[-1:])
        if record is not None:
            pathlib.Path(record).write_text(json.dumps(rows, indent=1))
    return rows


def _fmt(v):
    return f"{v:.4f}" if isinstance(v, float) else "-"


def print_examples(rows, out=sys.stdout):
    """The examples' table in Markdown: per printed score, pystruct's value and the
    drop-in's, the seconds each took, and each side's status."""
    print("\n| example | score | pystruct | drop-in | pystruct s | drop-in s | status |",
          file=out)
    print("|---|---|---|---|---|---|---|", file=out)
    for name, ours, theirs in rows:
        # rows recorded by an earlier version of ``scores`` are read the same way
        our_scores = {k: v for k, v in ours[2] if _SCORE.search(k)}
        their_scores = {k: v for k, v in theirs[2] if _SCORE.search(k)} if theirs else {}
        labels = list(dict.fromkeys(list(their_scores) + list(our_scores))) or [""]
        status = ours[0] if not theirs else f"{theirs[0]}/{ours[0]}"
        notes = [f"{side}: {row[3]}" for side, row in (("pystruct", theirs), ("drop-in", ours))
                 if row is not None and row[0] != "ok" and row[3]]
        note = "; ".join(notes).replace("|", "/")
        for i, label in enumerate(labels):
            t_ref = f"{theirs[1]:.1f}" if theirs and i == 0 else ""
            t_our = f"{ours[1]:.1f}" if i == 0 else ""
            print(f"| {'`' + name + '`' if i == 0 else ''} | "
                  f"{_one_line(label, 70).replace('|', '/')} | "
                  f"{_fmt(their_scores.get(label))} | {_fmt(our_scores.get(label))} | "
                  f"{t_ref} | {t_our} | {status if i == 0 else ''}"
                  f"{' (' + note + ')' if note and i == 0 else ''} |", file=out)


# ------------------------------------------------------------------------ main
def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sdist", help=f"a local {SDIST} instead of downloading it")
    parser.add_argument("--min-passed", type=int, default=None,
                        help="exit with status 1 when fewer tests pass")
    parser.add_argument("--timeout", type=float, default=3600,
                        help="seconds the whole test run may take (default 3600)")
    parser.add_argument("--examples", action="store_true",
                        help="also run pystruct's examples on the drop-in")
    parser.add_argument("--only-examples", action="store_true",
                        help="run the examples only, not the tests")
    parser.add_argument("--example", action="append", default=None,
                        help="run only this example (its file name without .py; repeatable)")
    parser.add_argument("--example-timeout", type=float, default=600,
                        help="seconds each example may take (default 600)")
    parser.add_argument("--examples-json",
                        help="a JSON file where each example's result is recorded as it "
                             "runs; examples already there are not run again")
    parser.add_argument("--examples-table-from", metavar="JSON",
                        help="print the examples' table recorded in this --examples-json "
                             "file and exit (nothing is run)")
    parser.add_argument("--reference-python",
                        help="an interpreter with pystruct 0.3.2 installed: run the "
                             "unmodified examples there too")
    parser.add_argument("--no-numpy-aliases", action="store_true",
                        help="do not restore np.int, np.float, np.bool and np.object (removed "
                             "in numpy 1.24; pystruct's tests use them)")
    parser.add_argument("--keep", action="store_true", help="keep the temporary directory")
    parser.add_argument("pytest_args", nargs="*",
                        help="passed to pytest (after --), e.g. -k one_slack")
    args = parser.parse_args(argv)
    if args.examples_table_from:
        print_examples(_load_rows(args.examples_table_from))
        return 0

    work = pathlib.Path(tempfile.mkdtemp(prefix="peer_pystruct_"))
    results, rows = [], []
    try:
        sdist = pathlib.Path(args.sdist) if args.sdist else download(work / "dist")
        check_sha256(sdist)
        env = dict(os.environ)
        shim = write_nose(work / "shim", numpy_aliases=not args.no_numpy_aliases)
        if not args.no_numpy_aliases:
            print("numpy's removed aliases np.int, np.float, np.bool, np.object restored as "
                  "the builtins they were (--no-numpy-aliases to run without)")
        env["PYTHONPATH"] = os.pathsep.join(
            [str(ROOT), str(shim)]
            + [p for p in env.get("PYTHONPATH", "").split(os.pathsep) if p])
        env["MPLBACKEND"] = "Agg"
        if not args.only_examples:
            tests = extract(sdist, work / "pystruct_tests", "pystruct/tests")
            (work / "pytest.ini").write_text("[pytest]\n")
            changed = rewrite_imports(tests)
            print(f"{sdist.name}: {len(changed)} import lines rewritten")
            results = run_tests(work, env, args.pytest_args, args.timeout)
        if args.examples or args.only_examples:
            rows = run_examples(sdist, work, env, args.reference_python,
                                args.example_timeout, args.example, args.examples_json)
    finally:
        if args.keep:
            print(f"kept {work}")
        else:
            shutil.rmtree(work, ignore_errors=True)

    status = 0
    if not args.only_examples:
        counts = print_summary(results)
        if not results:
            status = 1
        elif args.min_passed is not None and counts["passed"] < args.min_passed:
            print(f"only {counts['passed']} passed, fewer than --min-passed "
                  f"{args.min_passed}")
            status = 1
    if rows:
        print_examples(rows)
    return status


if __name__ == "__main__":
    sys.exit(main())
