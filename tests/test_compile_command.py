"""``python -m skstruct compile``: the targets it offers, and that it fills the disk cache
which a later process then loads instead of compiling."""

import os
import pathlib
import re
import subprocess
import sys

import pytest

from skstruct.__main__ import main
from skstruct._warmup import KINDS, SSVM_SOLVERS, TARGETS, select

ROOT = pathlib.Path(__file__).resolve().parents[1]


def test_list_names_every_target(capsys):
    assert main(["compile", "--list"]) == 0
    listed = [line.split()[0] for line in capsys.readouterr().out.splitlines()]
    assert listed == list(TARGETS)
    # every structured SVM solver and every kind of model has a target
    parts = {tuple(name.split("/")) for name in listed}
    assert {s for e, s, k in parts if e == "StructuredSVM"} == set(SSVM_SOLVERS)
    assert {k for e, s, k in parts if e == "StructuredSVM"} == set(KINDS)


def test_select_by_parts():
    assert [t.name for t in select(["structuredsvm/ONE_SLACK/loopy"])] == [
        "StructuredSVM/one_slack/loopy"]
    crf = select(["CRF"])
    assert crf and all(t.estimator == "CRF" for t in crf)
    both = select(["extragradient", "StructuredSVM/extragradient/chain"])
    assert [t.name for t in both] == ["StructuredSVM/extragradient/chain",
                                      "StructuredSVM/extragradient/tree"]
    assert len(select([])) == len(TARGETS)
    with pytest.raises(ValueError, match="no compile target matches 'nope'"):
        select(["nope"])


def test_unknown_target_is_an_error(capsys):
    assert main(["compile", "StructuredSVM/nope"]) == 2
    assert "StructuredSVM/nope" in capsys.readouterr().err


def _compile(cache, *names):
    env = dict(os.environ, NUMBA_CACHE_DIR=str(cache))
    return subprocess.run([sys.executable, "-m", "skstruct", "compile", *names], cwd=ROOT,
                          env=env, capture_output=True, text=True, timeout=600)


def _compiled(out, name):
    m = re.search(rf"^{re.escape(name)}: [0-9.]+ s, (\d+) kernel\(s\) compiled", out, re.M)
    assert m, out
    return int(m.group(1))


def test_compile_fills_the_cache_a_new_process_loads(tmp_path):
    name = "StructuredSVM/bcfw/chain"
    first = _compile(tmp_path, name)
    assert first.returncode == 0, first.stderr
    assert _compiled(first.stdout, name) > 0
    files = [p.name for p in tmp_path.rglob("*")]
    assert any(f.endswith(".nbi") for f in files) and any(f.endswith(".nbc") for f in files)
    # a second process finds every kernel of the target in the cache
    second = _compile(tmp_path, name)
    assert second.returncode == 0, second.stderr
    assert _compiled(second.stdout, name) == 0
