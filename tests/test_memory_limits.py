"""The memory guards read the limit that applies to the process, and name it."""

import os
import subprocess
import sys

import pytest

from skstruct._core import _validation
from skstruct._core._validation import memory_limits, tightest_memory_limit

GiB = 2 ** 30
ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def _fake_root(tmp_path, cgroup, files, vmsize_kb=None):
    (tmp_path / "proc/self").mkdir(parents=True)
    (tmp_path / "proc/self/cgroup").write_text(cgroup)
    if vmsize_kb is not None:
        (tmp_path / "proc/self/status").write_text(
            f"Name:\tpython\nVmPeak:\t{vmsize_kb + 10} kB\nVmSize:\t{vmsize_kb} kB\n")
    for path, text in files.items():
        f = tmp_path / "sys/fs/cgroup" / path
        f.parent.mkdir(parents=True, exist_ok=True)
        f.write_text(text)
    return str(tmp_path)


def _cgroup_entries(root):
    return sorted((n, name) for n, name in memory_limits(root) if "cgroup" in name)


def test_cgroup_v2_limits_of_the_group_and_its_ancestors(tmp_path):
    root = _fake_root(tmp_path, "0::/user.slice/job-7\n", {
        "user.slice/job-7/memory.max": "1073741824\n",
        "user.slice/memory.max": "max\n",  # no limit there
        "memory.max": "3221225472\n",
    })
    assert _cgroup_entries(root) == [
        (GiB, "the cgroup v2 memory.max limit of /user.slice/job-7"),
        (3 * GiB, "the cgroup v2 memory.max limit of /")]
    assert tightest_memory_limit(root)[1] == "the cgroup v2 memory.max limit of /user.slice/job-7"


def test_cgroup_v2_in_a_hybrid_hierarchy(tmp_path):
    root = _fake_root(tmp_path, "0::/\n", {"unified/memory.max": "2147483648"})
    assert _cgroup_entries(root) == [(2 * GiB, "the cgroup v2 memory.max limit of /")]


def test_cgroup_v1_limit_seen_from_inside_a_container(tmp_path):
    # the group's path is the host's; the container mounts its own group as the root
    root = _fake_root(tmp_path, "5:cpu,cpuacct:/docker/abc\n4:memory:/docker/abc\n0::/\n", {
        "memory/memory.limit_in_bytes": str(512 * 2 ** 20),
        "cpu/memory.limit_in_bytes": "1",  # another controller's hierarchy: not read
    })
    assert _cgroup_entries(root) == [
        (512 * 2 ** 20, "the cgroup v1 memory.limit_in_bytes limit of /")]
    assert tightest_memory_limit(root) == (512 * 2 ** 20, _cgroup_entries(root)[0][1])


def test_unlimited_missing_and_garbled_cgroup_files_are_ignored(tmp_path):
    root = _fake_root(tmp_path, "garbage\n4:memory:/a\n0::/a\n", {
        "memory/a/memory.limit_in_bytes": "9223372036854771712",  # v1's "unlimited"
        "memory/memory.limit_in_bytes": "not a number",
        "a/memory.max": "max",
    })
    assert _cgroup_entries(root) == []
    assert _cgroup_entries(str(tmp_path / "nowhere")) == []


def test_address_space_limit_counts_what_is_already_mapped(tmp_path, monkeypatch):
    import resource

    root = _fake_root(tmp_path, "0::/\n", {}, vmsize_kb=1024 * 1024)  # 1 GiB mapped
    monkeypatch.setattr(resource, "getrlimit", lambda which: (4 * GiB, resource.RLIM_INFINITY))
    entries = [e for e in memory_limits(root) if "RLIMIT_AS" in e[1]]
    assert entries == [(3 * GiB, "the address-space limit RLIMIT_AS (4.0 GiB, 3.0 GiB of it "
                                 "not yet mapped)")]
    monkeypatch.setattr(resource, "getrlimit",
                        lambda which: (resource.RLIM_INFINITY, resource.RLIM_INFINITY))
    assert not [e for e in memory_limits(root) if "RLIMIT_AS" in e[1]]


def test_the_guard_names_the_tightest_limit(monkeypatch):
    monkeypatch.setattr(_validation, "memory_limits", lambda root="/": [
        (64 * GiB, "physical memory"), (2 * GiB, "the cgroup v2 memory.max limit of /")])
    _validation.check_memory(GiB, "an array", "use less")  # exactly half: allowed
    with pytest.raises(ValueError, match=r"an array would need 1\.5 GiB, more than the 1\.0 "
                                         r"GiB one allocation may take \(half of the cgroup v2 "
                                         r"memory\.max limit of /\): use less"):
        _validation.check_memory(3 * GiB // 2, "an array", "use less")


CHILD = """
import resource
resource.setrlimit(resource.RLIMIT_AS, (4 << 30, resource.RLIM_INFINITY))
import numpy as np
from skstruct import NonLocalCRF
from skstruct.models import GraphModel

# 5000 labels over 500 samples; one chain of 10 nodes with real-valued edge features, so
# that each of its 9 edges needs its own (5000, 5000) tables: 3 x 9 x 200 MB = 5 GiB
rng = np.random.default_rng(0)
K, n = 5000, 10
X, y = [], []
for s in range(K // n):
    edges, ef = np.zeros((0, 2), np.int64), np.zeros((0, 2))
    if s == 0:
        edges = np.column_stack([np.arange(n - 1), np.arange(1, n)])
        ef = rng.uniform(0.5, 1.0, size=(n - 1, 2))
    X.append((rng.normal(size=(n, 2)), edges, ef))
    y.append(np.arange(s * n, (s + 1) * n))
try:
    NonLocalCRF(model=GraphModel(), max_iter=1).fit(X, y)
    print("FITTED")
except ValueError as exc:
    print("REFUSED:", exc)
status = open("/proc/self/status").read()
print("VmHWM", int(status.split("VmHWM:")[1].split()[0]) * 1024)
"""


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="reads /proc")
def test_fit_under_an_address_space_limit_is_refused_before_allocating():
    tight = min(n for n, _ in memory_limits())
    if tight < 6 * GiB:
        pytest.skip("another memory limit of this machine is already tighter than 4 GiB of "
                    "address space would be")
    env = dict(os.environ, PYTHONPATH=ROOT)
    out = subprocess.run([sys.executable, "-c", CHILD], env=env, capture_output=True,
                         text=True, timeout=600, cwd=ROOT)
    assert out.returncode == 0, out.stderr[-3000:]
    lines = out.stdout.splitlines()
    assert lines[0].startswith("REFUSED: the per-edge (5000, 5000) tables of 9 edges would "
                               "need 5.0 GiB"), out.stdout
    assert "half of the address-space limit RLIMIT_AS (4.0 GiB" in lines[0]
    # refused before the tables were allocated: the process never held even one of them
    peak = int(lines[1].split()[1])
    assert peak < GiB, peak
