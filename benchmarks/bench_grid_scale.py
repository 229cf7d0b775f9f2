"""Time and memory of ApproxStructuredPredictor and TRW-S against the size of the grid.

Run: ``python benchmarks/bench_grid_scale.py [--quick] [--base REV] [--no-base]
[--write-doc]``.

The data are ``n_images`` noisy 100 x 100 binary images from
:func:`skstruct.datasets.make_binary_denoising` (per-pixel features: the observation and a
constant; edge features: a constant and the contrast ``exp(-|o_u - o_v|)``), 10, 100 and
1000 images: 10^5, 10^6 and 10^7 binary variables on 4-connected grids.  Every
measurement runs in a fresh subprocess, so that its peak memory is its own:

- ``ApproxStructuredPredictor(epsilon=1, counting_numbers="convex", C=1 / n_images)``
  at ``n_jobs`` 1 and 2: the seconds of each outer iteration (one message sweep over
  every sample, the objective and its gradient, and the parameter step's line search;
  numba compilation excluded), the peak resident memory of the process (data, packed
  design and fit) and the objective after each iteration;
- TRW-S MAP (:func:`skstruct.inference.map_batch`, ``method="trws"``) on the same grids
  at ``n_jobs`` 1 and 2, with the potentials of fixed weights (the observation for the
  unary, a contrast-sensitive Potts table per edge): the seconds per iteration (one
  forward and one backward pass with the decoding and the bound) and the peak memory;
- with ``--base REV`` (default ``3decb23``, the revision before the scale work), the
  largest ApproxStructuredPredictor case again on that revision, checked out once as a
  detached git worktree under ``benchmarks/.revisions/`` (as ``bench_revisions.py`` does)
  with a numba cache of its own: before and after side by side, objectives included.

The script prints its tables, writes the plot ``doc/img/grid_scale.png`` (time per iteration
and peak memory against the number of variables) and, with ``--write-doc``, its section of
``doc/benchmarks.md`` (the sizes) and of ``benchmarks/HISTORY.md`` (the base revision side
by side, and float32 messages against float64, a measurement behind a design choice). The
full run is expected to take 10 to 15 minutes on an idle 2-core machine (the base revision's
kernels compile once, into their own cache); every child has a time limit (10 minutes, 20
for the base revision), and a child that fails or runs out of time is reported as such.
``--quick`` (10^4 and 10^5 variables, two iterations, no base revision) is a smoke run of
about a minute.  Nothing is asserted.
"""

import argparse
import json
import os
import platform
import resource
import subprocess
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)
MARK = "@@bench_grid_scale "
BASE = "3decb23"


# ----------------------------------------------------------------------- children
def _rss_mb():
    with open("/proc/self/statm") as f:
        return int(f.read().split()[1]) * resource.getpagesize() / 2.0 ** 20


def _peak_mb():
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024.0


def child_approx(n_images, n_jobs, iters):
    """Fit ``iters`` outer iterations; the seconds of each, the objective, the memory."""
    import numpy as np

    import skstruct
    from skstruct import ApproxStructuredPredictor
    from skstruct.datasets import make_binary_denoising
    from skstruct.models import GraphModel

    t0 = time.perf_counter()
    train = make_binary_denoising(n_images, 100, noise=1.0, random_state=0)
    data_seconds = time.perf_counter() - t0
    params = dict(epsilon=1.0, counting_numbers="convex", C=1.0 / n_images,
                  model=GraphModel(), tol=0.0, n_jobs=n_jobs)
    # compile (or load) every kernel before timing
    ApproxStructuredPredictor(max_iter=2, **params).fit(train.X[:2], train.y[:2])
    rss_before = _rss_mb()
    t0 = time.perf_counter()
    est = ApproxStructuredPredictor(max_iter=iters, **params).fit(train.X, train.y)
    fit_seconds = time.perf_counter() - t0
    per_iter = np.diff(np.concatenate([[0.0], est.history_["seconds"]]))
    return dict(n_variables=int(sum(len(y) for y in train.y)), n_jobs=n_jobs,
                seconds=per_iter.tolist(), fit_seconds=fit_seconds,
                setup_seconds=fit_seconds - float(est.history_["seconds"][-1]),
                data_seconds=data_seconds, rss_before_fit_mb=rss_before, peak_mb=_peak_mb(),
                objective=est.history_["objective"].tolist(), skstruct=skstruct.__file__)


def child_trws(n_images, n_jobs, iters):
    """TRW-S: ``iters`` timed iterations warm-started from one (which includes building the
    adjacency); the seconds per iteration and the memory."""
    import warnings

    import numpy as np

    import skstruct
    from skstruct.datasets import make_binary_denoising
    from skstruct.inference import GraphBatch, map_batch

    data = make_binary_denoising(n_images, 100, noise=1.0, random_state=0)
    n = [x[0].shape[0] for x in data.X]
    batch = GraphBatch.from_graphs(n, [x[1] for x in data.X])
    obs = np.concatenate([x[0][:, 0] for x in data.X])
    contrast = np.concatenate([x[2][:, 1] for x in data.X])
    del data
    unary = np.column_stack([np.zeros_like(obs), 2.0 * obs - 1.0])
    pairwise = (0.5 + 1.5 * contrast)[:, None, None] * np.eye(2)
    del obs, contrast
    small = GraphBatch.from_graphs(n[:1], [batch.edges[:batch.edge_offsets[1]]])
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        # compile (or load) the kernels
        map_batch(small, unary[:n[0]], pairwise[:small.n_edges], method="trws", max_iter=2,
                  tol=0.0, n_jobs=n_jobs)
        msgs = np.zeros((2 * batch.n_edges, 2))
        t0 = time.perf_counter()
        map_batch(batch, unary, pairwise, method="trws", max_iter=1, tol=0.0, messages=msgs,
                  n_jobs=n_jobs)
        first = time.perf_counter() - t0
        rss_before = _rss_mb()
        t0 = time.perf_counter()
        labels, bound = map_batch(batch, unary, pairwise, method="trws", max_iter=iters,
                                  tol=0.0, messages=msgs, return_bound=True, n_jobs=n_jobs)
        seconds = time.perf_counter() - t0
    return dict(n_variables=int(batch.n_nodes), n_jobs=n_jobs, first_call_seconds=first,
                seconds_per_iteration=seconds / iters, iters=iters, bound=float(bound.sum()),
                rss_before_mb=rss_before, peak_mb=_peak_mb(), skstruct=skstruct.__file__)


def child_float32(n_images, n_jobs, iters):
    """Message sweeps with float32 potentials and messages against float64: the seconds
    per sweep, the bytes of the arrays the sweeps read and write, and how far the
    objective and the beliefs (both evaluated in float64) move."""
    import numpy as np

    from skstruct import ApproxStructuredPredictor
    from skstruct._core import n_threads
    from skstruct.datasets import make_binary_denoising
    from skstruct.inference._primal_dual import Counting, pd_objective, pd_sweeps
    from skstruct.models import GraphModel
    from skstruct.solvers._primal_dual import PrimalDual, counting_numbers

    train = make_binary_denoising(n_images, 100, noise=1.0, random_state=0)
    params = dict(epsilon=1.0, counting_numbers="convex", C=1.0 / n_images,
                  model=GraphModel(), tol=0.0, n_jobs=n_jobs)
    # weights of a short fit on a tenth of the data: the potentials of a learned model
    k = max(1, n_images // 10)
    est = ApproxStructuredPredictor(max_iter=5, **params).fit(train.X[:k], train.y[:k])
    design, _ = est.model_.design(train.X, train.y)
    del train
    c_node, c_edge = counting_numbers(design, "convex")
    pd = PrimalDual(design, np.ones(design.batch.n_nodes), c_node, c_edge, epsilon=1.0,
                    loss=False)
    theta_v, tables, pwi, _ = pd._theta(*est._weights())
    b, adj = design.batch, pd.adj
    out = dict(n_variables=int(b.n_nodes), n_jobs=n_jobs, sweeps=iters)
    results = {}
    with n_threads(n_jobs):
        for dtype in (np.float64, np.float32):
            th = theta_v.astype(dtype)
            tb = np.ascontiguousarray(tables, dtype=dtype)
            lam = np.zeros(pd.lam.shape, dtype)
            # compile (or load) this precision's kernel on the first sample only
            pd_sweeps(b.node_offsets[:2], adj.offsets, adj.edge, adj.side, th, tb, pwi,
                      c_node, c_edge, 1.0, lam, 1, 1, pd.max_degree,
                      np.array([0, 1], np.int64))
            lam[:] = 0.0
            t0 = time.perf_counter()
            for it in range(iters):
                pd_sweeps(b.node_offsets, adj.offsets, adj.edge, adj.side, th, tb, pwi,
                          c_node, c_edge, 1.0, lam, 1, 1 if it % 2 == 0 else -1,
                          pd.max_degree, pd.chunks)
            seconds = (time.perf_counter() - t0) / iters
            # the objective and the node beliefs at these messages, in float64
            terms = np.zeros(b.n_samples)
            nb = np.zeros((b.n_nodes, theta_v.shape[1]))
            eb = np.zeros((b.n_edges,) + tables.shape[1:])
            pd_objective(b.node_offsets, b.edge_offsets, b.edges, adj, theta_v, tables, pwi,
                         Counting(node=c_node, edge=c_edge, eps=1.0),
                         lam.astype(np.float64), pd.chunks, terms, nb, eb, True)
            del eb
            name = np.dtype(dtype).name
            results[name] = (float(terms.sum()), nb)
            out[name + "_seconds_per_sweep"] = seconds
            out[name + "_array_mb"] = (th.nbytes + (tb.nbytes if not design.tied else 0)
                                       + lam.nbytes) / 2.0 ** 20
    (f64, b64), (f32, b32) = results["float64"], results["float32"]
    out["objective_float64"] = f64
    out["objective_rel_diff"] = abs(f32 - f64) / max(abs(f64), 1.0)
    out["belief_max_abs_diff"] = float(np.max(np.abs(b32 - b64), initial=0.0))
    return out


# ------------------------------------------------------------------------- parent
def run_child(kind, n_images, n_jobs, iters, tree=ROOT, cache=None, timeout=600):
    """One measurement in a fresh process with ``tree`` first on ``sys.path``."""
    env = dict(os.environ, PYTHONPATH=os.pathsep.join(
        [tree, *filter(None, [os.environ.get("PYTHONPATH")])]))
    # the BLAS pools follow n_jobs too, so that nothing outside numba takes more threads
    for var in ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS"):
        env[var] = str(n_jobs)
    if cache is not None:
        env["NUMBA_CACHE_DIR"] = cache
        os.makedirs(cache, exist_ok=True)
    cmd = [sys.executable, os.path.abspath(__file__), "--child", kind, "--n-images",
           str(n_images), "--n-jobs", str(n_jobs), "--iters", str(iters)]
    t0 = time.perf_counter()
    try:
        # a temporary cwd: the child must import skstruct from ``tree``, not from the cwd
        with tempfile.TemporaryDirectory() as cwd:
            proc = subprocess.run(cmd, env=env, cwd=cwd, capture_output=True, text=True,
                                  timeout=timeout)
    except subprocess.TimeoutExpired:
        return {"error": f"no result within {timeout} s"}
    for line in proc.stdout.splitlines():
        if line.startswith(MARK):
            out = json.loads(line[len(MARK):])
            out["wall_seconds"] = time.perf_counter() - t0
            return out
    return {"error": "exit code {}: {}".format(
        proc.returncode, " | ".join(proc.stderr.strip().splitlines()[-3:]))}


def base_tree(rev):
    """``(short sha, tree, numba cache)`` of ``rev``'s worktree (bench_revisions.py's)."""
    sys.path.insert(0, HERE)
    from bench_revisions import tree_of

    return tree_of(rev)


def machine():
    import numba
    import numpy

    return (f"{os.cpu_count()} CPUs ({platform.processor() or platform.machine()}), "
            f"Python {platform.python_version()}, numpy {numpy.__version__}, "
            f"numba {numba.__version__}, {platform.system()} {platform.release()}")


def _median(xs):
    xs = sorted(xs)
    m = len(xs) // 2
    return xs[m] if len(xs) % 2 else 0.5 * (xs[m - 1] + xs[m])


def tables(approx, trws, base, base_label, largest, f32):
    """The page's tables and the developer notes' (the base revision, float32)."""
    lines = ["### ApproxStructuredPredictor, one outer iteration", "",
             "| variables | n_jobs | outer iteration, median / max (s) | peak memory (GB) | "
             "objective after the last iteration |", "|---|---|---|---|---|"]
    for r in approx:
        if "error" in r:
            lines.append(f"| {r['n_variables_asked']:.0e} | {r['n_jobs']} | failed: "
                         f"{r['error']} | | |")
            continue
        med, mx = _median(r["seconds"][1:] or r["seconds"]), max(r["seconds"])
        gb = r["peak_mb"] / 1024.0
        lines.append(f"| {r['n_variables']:,} | {r['n_jobs']} | {med:.3f} / {mx:.3f} | "
                     f"{gb:.2f} | {r['objective'][-1]:.10g} |")
    notes = []
    if base:
        notes += [f"Before and after at {largest:,} variables, n_jobs = 2 (the same "
                  "data and settings; before: revision " + base_label + "):", "",
                  "| revision | outer iteration, median / max (s) | peak memory (GB) | "
                  "objective per iteration |", "|---|---|---|---|"]
        new = [r for r in approx if r.get("n_variables") == largest and r["n_jobs"] == 2]
        for label, r in [("before", base)] + [("after", r) for r in new]:
            if "error" in r:
                notes.append(f"| {label} | failed: {r['error']} | | |")
                continue
            med = _median(r["seconds"][1:] or r["seconds"])
            notes.append(f"| {label} | {med:.3f} / {max(r['seconds']):.3f} | "
                         f"{r['peak_mb'] / 1024.0:.2f} | "
                         + ", ".join(f"{v:.10g}" for v in r["objective"]) + " |")
    notes += ["", f"### float32 messages and potentials ({f32.get('n_variables', 0):,} "
              f"variables, n_jobs = 2, {f32.get('sweeps', 0)} sweeps from zero messages at the "
              "weights of a short fit)", ""]
    if "error" in f32:
        notes.append(f"failed: {f32['error']}")
    else:
        notes += ["| | float64 | float32 |", "|---|---|---|",
                  f"| seconds per sweep | {f32['float64_seconds_per_sweep']:.3f} | "
                  f"{f32['float32_seconds_per_sweep']:.3f} |",
                  f"| messages and potentials (MB) | {f32['float64_array_mb']:.0f} | "
                  f"{f32['float32_array_mb']:.0f} |",
                  f"| objective (evaluated in float64) | {f32['objective_float64']:.10g} | "
                  f"relative difference {f32['objective_rel_diff']:.2e} |",
                  f"| node beliefs | | largest difference {f32['belief_max_abs_diff']:.2e} |"]
    lines += ["", "### TRW-S MAP (`map_batch(method=\"trws\")`)", "",
              "| variables | n_jobs | iteration (s) | peak memory (GB) |", "|---|---|---|---|"]
    for r in trws:
        if "error" in r:
            lines.append(f"| {r['n_variables_asked']:.0e} | {r['n_jobs']} | failed: "
                         f"{r['error']} | |")
            continue
        lines.append(f"| {r['n_variables']:,} | {r['n_jobs']} | "
                     f"{r['seconds_per_iteration']:.3f} | {r['peak_mb'] / 1024.0:.2f} |")
    return lines, notes


def plot(approx, trws, path):
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, (ax_t, ax_m) = plt.subplots(1, 2, figsize=(10, 4))
    for rows, name, marker in ((approx, "ApproxStructuredPredictor", "o"),
                               (trws, "TRW-S", "s")):
        for jobs, style in ((1, "--"), (2, "-")):
            ok = [r for r in rows if "error" not in r and r["n_jobs"] == jobs]
            if not ok:
                continue
            n = [r["n_variables"] for r in ok]
            t = [_median(r["seconds"][1:] or r["seconds"]) if "seconds" in r
                 else r["seconds_per_iteration"] for r in ok]
            label = f"{name}, n_jobs={jobs}"
            ax_t.loglog(n, t, style, marker=marker, label=label)
            ax_m.loglog(n, [r["peak_mb"] / 1024.0 for r in ok], style, marker=marker,
                        label=label)
    ax_t.set(xlabel="binary variables", ylabel="seconds per iteration",
             title="time per (outer) iteration")
    ax_m.set(xlabel="binary variables", ylabel="peak resident memory (GB)",
             title="peak memory of the process")
    ax_t.legend(fontsize=8)
    for ax in (ax_t, ax_m):
        ax.grid(True, which="both", lw=0.3)
    fig.tight_layout()
    os.makedirs(os.path.dirname(path), exist_ok=True)
    fig.savefig(path, dpi=100)
    plt.close(fig)


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--quick", action="store_true")
    ap.add_argument("--base", default=BASE, help="revision measured before (default %(default)s)")
    ap.add_argument("--no-base", action="store_true", help="skip the base revision")
    ap.add_argument("--write-doc", action="store_true")
    ap.add_argument("--plot", default=os.path.join(ROOT, "doc", "img", "grid_scale.png"))
    ap.add_argument("--child", choices=("approx", "trws", "float32"),
                    help=argparse.SUPPRESS)
    ap.add_argument("--n-images", type=int, default=10, help=argparse.SUPPRESS)
    ap.add_argument("--n-jobs", type=int, default=1, help=argparse.SUPPRESS)
    ap.add_argument("--iters", type=int, default=3, help=argparse.SUPPRESS)
    args = ap.parse_args()

    if args.child:
        run = {"approx": child_approx, "trws": child_trws, "float32": child_float32}[
            args.child]
        print(MARK + json.dumps(run(args.n_images, args.n_jobs, args.iters)), flush=True)
        return

    # (n_images, outer iterations, TRW-S iterations)
    sizes = [(1, 2, 2), (10, 2, 2)] if args.quick else [(10, 5, 10), (100, 5, 5),
                                                          (1000, 3, 3)]
    largest = 10 ** 4 * sizes[-1][0]
    approx, trws = [], []
    for n_images, iters, trws_iters in sizes:
        for jobs in (1, 2):
            for kind, k, rows in (("approx", iters, approx), ("trws", trws_iters, trws)):
                r = run_child(kind, n_images, jobs, k)
                r.setdefault("n_jobs", jobs)
                r["n_variables_asked"] = 10 ** 4 * n_images
                rows.append(r)
                print(f"{kind} {10 ** 4 * n_images:.0e} variables, n_jobs={jobs}: "
                      + json.dumps({key: r[key] for key in r if key != "objective"}),
                      flush=True)
    f32 = run_child("float32", sizes[-1][0], 2, 2 if args.quick else 5)
    print("float32: " + json.dumps(f32), flush=True)
    base, base_label = None, ""
    if not (args.quick or args.no_base):
        base_label, tree, cache = base_tree(args.base)
        base = run_child("approx", sizes[-1][0], 2, sizes[-1][1], tree=tree, cache=cache,
                         timeout=1200)
        base.setdefault("n_jobs", 2)
        print("base: " + json.dumps(base), flush=True)
    lines, notes = tables(approx, trws, base, base_label, largest, f32)
    print("\n".join(lines + [""] + notes))
    plot(approx, trws, args.plot)
    print(f"plot: {args.plot}")
    if args.write_doc:
        rel = os.path.relpath(args.plot, os.path.join(ROOT, "doc"))
        write_doc(lines, rel, notes)


def write_doc(lines, image, notes=()):
    from _doc import HISTORY, write_section

    write_section("bench_grid_scale", [
        "## Grid size: ApproxStructuredPredictor and TRW-S from 10^5 to 10^7 variables", "",
        "Measured by `python benchmarks/bench_grid_scale.py --write-doc` on " + machine()
        + ". Each row is a fresh process (peak memory: its data, packed design and fit); "
        "numba compilation excluded; `n_jobs` threads for numba and BLAS. "
        "ApproxStructuredPredictor: `epsilon=1`, convex counting numbers, `C = 1 / n_images`, "
        "binary labels, 100 x 100 images; the median leaves out the first iteration, which "
        "also touches the fit's arrays for the first time.", "",
        f"![time per iteration and peak memory against the number of variables]({image})", "",
        *lines, ""])
    if notes:
        write_section("bench_grid_scale", [
            "## Grid size: the base revision and float32 (`benchmarks/bench_grid_scale.py`)",
            "", *notes, ""], HISTORY)


if __name__ == "__main__":
    main()
