"""Run sklearn-crfsuite 0.5.0's own test suite on skstruct.compat.sklearn_crfsuite.

Downloads sklearn-crfsuite 0.5.0's source distribution with ``pip download``,
extracts its ``tests/`` into a temporary directory, rewrites only the lines that
import the package (``from sklearn_crfsuite import ...`` and ``import
sklearn_crfsuite``) to import the drop-in instead, and runs pytest on them in a
subprocess, with this checkout's ``skstruct`` first on the path.  Prints the number
of tests passed, failed, skipped, expected to fail and unexpectedly passing, and
each test that did not pass with its reason; exits with status 1 when a test failed,
3 when the sdist could not be downloaded.

Usage::

    python benchmarks/peer_tests_sklearn_crfsuite.py            # the whole suite
    python benchmarks/peer_tests_sklearn_crfsuite.py --quick    # lbfgs only, no
                                                                # 5-process cross-val
    python benchmarks/peer_tests_sklearn_crfsuite.py --sdist sklearn_crfsuite-0.5.0.tar.gz

The suite's tests are not copied into this repository: they are fetched at each run.
"""

import argparse
import os
import pathlib
import re
import subprocess
import sys
import tarfile
import tempfile

ROOT = pathlib.Path(__file__).resolve().parent.parent
PACKAGE = "sklearn-crfsuite==0.5.0"
DROPIN = "skstruct.compat.sklearn_crfsuite"

_FROM = re.compile(r"^(\s*)from sklearn_crfsuite import (.+)$")
_IMPORT = re.compile(r"^(\s*)import sklearn_crfsuite\s*$")
# the other algorithms' parametrisations, left out by --quick
_OTHER = re.compile(r"[\[-](l2sgd|ap|pa|arow)[\]-]")
# the exit status when the package index cannot be reached (nothing was tested)
UNREACHABLE = 3
_OUTCOMES = ("PASSED", "FAILED", "ERROR", "XFAIL", "XPASS", "SKIPPED")


def download(dest):
    """The path of sklearn-crfsuite 0.5.0's sdist, downloaded into ``dest``."""
    got = subprocess.run([sys.executable, "-m", "pip", "download", "--no-deps", "--no-binary",
                          ":all:", "--quiet", PACKAGE, "-d", str(dest)])
    if got.returncode:
        print(f"could not download {PACKAGE} from the package index", file=sys.stderr)
        raise SystemExit(UNREACHABLE)
    found = sorted(pathlib.Path(dest).glob("sklearn_crfsuite-0.5.0.tar.gz")) or \
        sorted(pathlib.Path(dest).glob("sklearn*crfsuite-0.5.0*"))
    if not found:
        raise SystemExit(f"pip download left no sdist of {PACKAGE} in {dest}")
    return found[0]


def extract_tests(sdist, dest):
    """Extract the sdist's ``tests/`` into ``dest/tests``; returns that folder."""
    out = pathlib.Path(dest) / "tests"
    out.mkdir(parents=True)
    with tarfile.open(sdist) as tar:
        for member in tar.getmembers():
            parts = pathlib.PurePosixPath(member.name).parts
            if len(parts) > 2 and parts[1] == "tests" and member.isfile():
                target = out.joinpath(*parts[2:])
                target.parent.mkdir(parents=True, exist_ok=True)
                target.write_bytes(tar.extractfile(member).read())
    if not any(out.glob("test_*.py")):
        raise SystemExit(f"{sdist} has no tests/test_*.py")
    return out


def rewrite_imports(tests):
    """Point the import lines of the suite at the drop-in; returns the changed lines."""
    changed = []
    for path in sorted(tests.rglob("*.py")):
        lines = path.read_text(encoding="utf-8").splitlines(keepends=True)
        for i, line in enumerate(lines):
            body = line.rstrip("\r\n")
            new = _FROM.sub(rf"\1from {DROPIN} import \2", body)
            new = _IMPORT.sub(r"\1from skstruct.compat import sklearn_crfsuite", new)
            if new != body:
                lines[i] = new + line[len(body):]
                changed.append(f"{path.name}:{i + 1}: {body.strip()}  ->  {new.strip()}")
        path.write_text("".join(lines), encoding="utf-8")
    return changed


def collect(tests, env):
    out = subprocess.run([sys.executable, "-m", "pytest", "--collect-only", "-q",
                          "-p", "no:cacheprovider", str(tests)], cwd=tests.parent, env=env,
                         capture_output=True, text=True)
    return [line for line in out.stdout.splitlines() if "::" in line]


def run(tests, env, quick):
    """Run pytest on the suite (its output shown); returns ``(test, outcome, reason)``
    of every test, read from pytest's summary of all outcomes (``-rA``)."""
    cmd = [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", "-rA"]
    if quick:
        cmd += [i for i in collect(tests, env)
                if not _OTHER.search(i) and "test_cross_validation" not in i]
    else:
        cmd.append(str(tests.name))
    proc = subprocess.run(cmd, cwd=tests.parent, env=env, capture_output=True, text=True)
    print(proc.stdout[-20000:], proc.stderr[-5000:], sep="\n")
    out = []
    for line in proc.stdout.splitlines():
        outcome, _, rest = line.partition(" ")
        if outcome not in _OUTCOMES or not rest:
            continue
        if outcome == "SKIPPED":   # "[1] file:line: reason"
            test, _, reason = rest.partition(": ")
        else:                      # "file::test" or "file::test - reason"
            test, _, reason = rest.partition(" - ")
        out.append((test.strip(), outcome.lower(), reason.strip()))
    return out


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true",
                        help="only the lbfgs cases and the tests without an algorithm, "
                             "and not the 5-process cross-validation")
    parser.add_argument("--sdist", help="a local sklearn_crfsuite-0.5.0.tar.gz instead "
                                        "of downloading it")
    parser.add_argument("--keep", action="store_true", help="keep the temporary directory")
    args = parser.parse_args()

    tmp = pathlib.Path(tempfile.mkdtemp(prefix="peer_sklearn_crfsuite_"))
    try:
        sdist = pathlib.Path(args.sdist) if args.sdist else download(tmp / "dist")
        tests = extract_tests(sdist, tmp / "suite")
        # an empty configuration: neither this repository's nor the sdist's options
        (tmp / "suite" / "pytest.ini").write_text("[pytest]\n")
        changed = rewrite_imports(tests)
        print(f"{sdist.name}: {len(changed)} import lines rewritten")
        for line in changed:
            print("  " + line)
        env = dict(os.environ)
        env["PYTHONPATH"] = os.pathsep.join(
            [str(ROOT)] + [p for p in env.get("PYTHONPATH", "").split(os.pathsep) if p])
        results = run(tests, env, args.quick)
    finally:
        if args.keep:
            print(f"kept {tmp}")
        else:
            import shutil

            shutil.rmtree(tmp, ignore_errors=True)

    counts = {k: sum(o == k for _, o, _ in results)
              for k in ("passed", "failed", "error", "skipped", "xfail", "xpass")}
    print("\n" + ", ".join(f"{n} {k}" for k, n in counts.items()) + f" of {len(results)}")
    for name, outcome, reason in results:
        if outcome != "passed":
            print(f"  {outcome:8s} {name}: {reason}")
    return 1 if counts["failed"] or counts["error"] or not results else 0


if __name__ == "__main__":
    sys.exit(main())
