"""Throughput of the inference oracles, in nanoseconds per transition (T * K^2).

Run: ``python benchmarks/bench_inference.py [--quick]``.  Prints one table; every
figure is the best of several timed calls after a warm-up call (compilation
excluded).  The scalar C Viterbi is compiled here with gcc (``-O2
-fno-tree-vectorize``) and timed in the same run, so the ratio is measured side by
side.  Nothing here is asserted: tests never time anything.
"""

import argparse
import ctypes
import functools
import os
import shutil
import subprocess
import sys
import tempfile
import time

import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.dirname(HERE))


def best_of(f, repeat, *args, **kwargs):
    """Best wall time of ``f(*args, **kwargs)`` over ``repeat`` calls after a warm-up."""
    if args or kwargs:
        f = functools.partial(f, *args, **kwargs)
    f()
    times = []
    for _ in range(repeat):
        t0 = time.perf_counter()
        f()
        times.append(time.perf_counter() - t0)
    return min(times)


def alternate(fs, repeat):
    """Best wall time of each of ``fs``, called in turn ``repeat`` times after a warm-up."""
    for f in fs:
        f()
    best = [float("inf")] * len(fs)
    for _ in range(repeat):
        for i, f in enumerate(fs):
            t0 = time.perf_counter()
            f()
            best[i] = min(best[i], time.perf_counter() - t0)
    return best


def c_viterbi():
    cc = shutil.which("gcc") or shutil.which("cc")
    if cc is None:
        return None
    out = os.path.join(tempfile.mkdtemp(), "viterbi_scalar.so")
    subprocess.run([cc, "-O2", "-fno-tree-vectorize", "-shared", "-fPIC", "-o", out,
                    os.path.join(HERE, "c", "viterbi_scalar.c"), "-lm"], check=True)
    lib = ctypes.CDLL(out)
    lib.viterbi_scalar.restype = ctypes.c_double
    ptr = ctypes.POINTER(ctypes.c_double)
    lib.viterbi_scalar.argtypes = [ptr, ptr, ctypes.c_int64, ctypes.c_int64,
                                   ctypes.POINTER(ctypes.c_int64)]

    def run(unary, pairwise, labels):
        return lib.viterbi_scalar(unary.ctypes.data_as(ptr), pairwise.ctypes.data_as(ptr),
                                  unary.shape[0], unary.shape[1],
                                  labels.ctypes.data_as(ctypes.POINTER(ctypes.c_int64)))
    return run


def import_time():
    code = "import time; t=time.perf_counter(); import skstruct; print(time.perf_counter()-t)"
    code2 = ("import time; t=time.perf_counter(); import skstruct.inference; "
             "print(time.perf_counter()-t)")
    env = dict(os.environ, PYTHONPATH=os.path.dirname(HERE))
    a = min(float(subprocess.check_output([sys.executable, "-c", code], env=env))
            for _ in range(3))
    b = min(float(subprocess.check_output([sys.executable, "-c", code2], env=env))
            for _ in range(3))
    return a, b


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--quick", action="store_true", help="T = 10^5 instead of 10^6")
    parser.add_argument("--repeat", type=int, default=5)
    args = parser.parse_args()

    import numba

    from skstruct.datasets import load_letters
    from skstruct.inference import (
        GraphBatch,
        forward_backward,
        map_batch,
        marginals_batch,
        viterbi,
    )

    rows = []

    def row(name, seconds, transitions, note=""):
        ns = seconds / transitions * 1e9 if transitions else float("nan")
        rows.append((name, seconds * 1e3, ns, note))

    T, K = (10**5 if args.quick else 10**6), 26
    rng = np.random.default_rng(0)
    unary = rng.normal(size=(T, K))
    pairwise = rng.normal(size=(K, K))
    trans = (T - 1) * K * K
    chain = GraphBatch.from_chains([T])
    labels = np.empty(T, np.int64)

    run_c = c_viterbi()
    public = [("viterbi() public", lambda: viterbi(unary, pairwise)),
              ("map_batch(method='chain')", lambda: map_batch(chain, unary, pairwise,
                                                             method="chain"))]
    if run_c is not None:
        # alternating calls in one run, so that a load change on a shared machine hits
        # both sides; the best of each is compared
        best = alternate([lambda: run_c(unary, pairwise, labels)] + [f for _, f in public],
                         args.repeat)
        t_c = best[0]
        row("viterbi, scalar C (gcc -O2, no vectorisation)", t_c, trans, f"T={T}, K={K}")
        for (name, _), t in zip(public, best[1:]):
            row(f"viterbi (skstruct, {name})", t, trans, f"C/skstruct = {t_c / t:.2f}")
        t_v = best[2]
    else:
        t_v = best_of(public[1][1], args.repeat)
        row("viterbi (skstruct)", t_v, trans, f"T={T}, K={K}")
    t_v1 = best_of(lambda: map_batch(chain, unary, pairwise, method="chain", n_jobs=1),
                   args.repeat)
    row("viterbi (skstruct, 1 thread)", t_v1, trans, "one chain: one thread anyway")
    for mode in (None, "sum"):
        t = best_of(lambda mode=mode: marginals_batch(chain, unary, pairwise, method="chain",
                                                      edge_marginals=mode), args.repeat)
        row(f"forward-backward, edge marginals={mode}", t, trans,
            f"{t / t_v:.2f}x viterbi")
    # one sentence: what a per-call latency budget sees
    us, ps = rng.normal(size=(20, 20)), rng.normal(size=(20, 20))
    for name, f in (("viterbi", viterbi), ("forward_backward", forward_backward)):
        t = best_of(lambda f=f: [f(us, ps) for _ in range(200)], args.repeat) / 200
        rows.append((f"{name}() public, one sentence T=20, K=20", t * 1e3,
                     t / (19 * 20 * 20) * 1e9, f"{t * 1e6:.1f} us per call"))
    Tf = min(T, 10**5)
    t = best_of(lambda: forward_backward(unary[:Tf], pairwise), args.repeat)
    row("forward_backward() public, full (T-1,K,K) edges", t, (Tf - 1) * K * K,
        f"T={Tf}: the full output is (T-1)*K*K floats")

    data = load_letters()
    lengths = np.array([len(y) for y in data.y])
    batch = GraphBatch.from_chains(lengths)
    u = rng.normal(size=(batch.n_nodes, K))
    trans_b = int(np.maximum(lengths - 1, 0).sum()) * K * K
    for n_jobs in (1, None):
        tag = "1 thread" if n_jobs == 1 else f"{numba.get_num_threads()} threads"
        t = best_of(lambda n_jobs=n_jobs: map_batch(batch, u, pairwise, n_jobs=n_jobs),
                    args.repeat)
        row(f"batched viterbi, OCR 6877 words ({tag})", t, trans_b)
        t = best_of(map_batch, args.repeat, batch, u, pairwise, y=np.concatenate(data.y),
                    n_jobs=n_jobs)
        row(f"batched loss-augmented viterbi, OCR ({tag})", t, trans_b)
        t = best_of(lambda n_jobs=n_jobs: marginals_batch(batch, u, pairwise,
                                                          edge_marginals="sum",
                                                          n_jobs=n_jobs), args.repeat)
        row(f"batched forward-backward (summed edges), OCR ({tag})", t, trans_b)

    try:
        grid_rows(rows, rng, args.repeat)
    except ImportError as exc:  # the loopy kernels are optional for this table
        print(f"(skipping loopy benchmarks: {exc})")

    a, b = import_time()
    print(f"\nimport skstruct: {a * 1e3:.0f} ms; import skstruct.inference (numba): "
          f"{b * 1e3:.0f} ms; nothing is compiled at import")
    print(f"\n{'benchmark':58s} {'ms':>10s} {'ns/trans':>9s}  note")
    for name, ms, ns, note in rows:
        print(f"{name:58s} {ms:10.2f} {ns:9.3f}  {note}")


def grid_rows(rows, rng, repeat):
    from skstruct.inference import GraphBatch, map_batch, marginals_batch

    side = 100
    idx = np.arange(side * side).reshape(side, side)
    edges = np.concatenate([np.stack([idx[:, :-1].ravel(), idx[:, 1:].ravel()], 1),
                            np.stack([idx[:-1].ravel(), idx[1:].ravel()], 1)])
    batch = GraphBatch.from_graphs([side * side], [edges])
    for K in (2, 26):
        unary = rng.normal(size=(side * side, K))
        pairwise = rng.normal(size=(K, K))
        trans = len(edges) * K * K
        for method in ("trws", "max-product"):
            t = best_of(map_batch, repeat, batch, unary, pairwise, method=method, max_iter=1,
                        tol=0.0)
            rows.append((f"{method}, one iteration, 100x100 grid, K={K}", t * 1e3,
                         t / trans * 1e9, "per directed pass over all edges"))
        t = best_of(marginals_batch, repeat, batch, unary, pairwise, method="loopy",
                    max_iter=1, tol=0.0)
        rows.append((f"loopy sum-product, one iteration, grid, K={K}", t * 1e3,
                     t / trans * 1e9, "incl. beliefs and Bethe log Z"))


if __name__ == "__main__":
    main()
