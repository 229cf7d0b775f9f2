"""Hundreds of linear-measurement terms: NonLocalCRF's energy learning against the base CRF.

Run: ``python benchmarks/bench_energy_terms.py [--n-chains 1500] [--length 28]
[--labels 40] [--terms 400] [--repeat 3] [--n-jobs N] [--write-doc]``.

What 400 soft constraints (:class:`~skstruct.energies.LinearMeasurements`) learned on
1500 synthetic chains of 28 nodes and 40 labels add to the base CRF's fit time and memory.

Data (fixed seed): labels follow a sticky Markov chain (stay with
probability 0.3, else uniform); node features are the label's one-hot vector
(times 2) plus unit Gaussian noise, and 8 features of pure noise.  Constraints: row
``j`` of ``A`` has about 4 nonzero weights in ``[0, 1)`` and ``b_j`` is set so
that ``a_j . counts(y) + b_j >= 1`` holds on 90% of the training labellings
(the soft constraints the truth mostly satisfies).

Every configuration runs in its own process (so that its peak RSS is its
own), after a warm-up fit on 40 chains that loads the compiled kernels, and
reports the best of ``--repeat`` fits (3): the
base CRF (``NonLocalCRF(energy=None)``), then the energy with Algorithm 3
(``learning="stochastic"``, the default) and with Algorithm 2
(``learning="alternating"``), each with NonLocalCRF's default energy-learning
settings (below).  The parent process also times one
:meth:`~skstruct.energies.Energy.cross` call in closed form against the
generic per-term loop (``Energy._cross``, run once) on one mini-batch of 64
chains (what Algorithm 3 calls per step) and on the whole training set, on
one BLAS thread as the learners run it.
``--write-doc`` puts the table into ``doc/benchmarks.md``.
"""

import argparse
import json
import os
import platform
import resource
import subprocess
import sys
import time

import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.dirname(HERE))
sys.path.insert(0, HERE)

from _doc import write_section  # noqa: E402

BASE = dict(C=1.0, max_iter=100, random_state=0)
# NonLocalCRF's defaults, spelled out
ENERGY = dict(energy_max_iter=5, batch_size=64, learning_rate=0.1, inference_method="rda",
              max_oracle_calls=20, inference_tol=1e-4, psi="bias", psi_init=1.0)
CONFIGS = ("base", "stochastic", "alternating")


def make_data(n_chains, length, K, J, seed=0):
    """Chains ``X, y`` and soft constraints ``A, b`` (see the module docstring)."""
    rng = np.random.default_rng(seed)
    X, y = [], []
    for _ in range(n_chains):
        lab = np.empty(length, np.int64)
        lab[0] = rng.integers(K)
        for t in range(1, length):
            lab[t] = lab[t - 1] if rng.uniform() < 0.3 else rng.integers(K)
        X.append(np.hstack([2.0 * np.eye(K)[lab] + rng.normal(size=(length, K)),
                            rng.normal(size=(length, 8))]))
        y.append(lab)
    A = rng.uniform(size=(J, K)) * (rng.uniform(size=(J, K)) < 4.0 / K)
    counts = np.stack([np.bincount(lab, minlength=K) for lab in y]).astype(np.float64)
    b = 1.0 - np.quantile(counts @ A.T, 0.1, axis=0)
    return X, y, A, b


def make(config, A, b, n_jobs=None):
    from skstruct import NonLocalCRF
    from skstruct.energies import LinearMeasurements

    if config == "base":
        return NonLocalCRF(**BASE, n_jobs=n_jobs)
    return NonLocalCRF(**BASE, **ENERGY, energy=LinearMeasurements(A, b), learning=config,
                       n_jobs=n_jobs)


def child(args):
    """One configuration in this process: warm-up, timed fit, peak RSS; JSON out."""
    X, y, A, b = make_data(args.n_chains, args.length, args.labels, args.terms)
    # load (or compile) every kernel the fit calls, outside the timing
    make(args.child, A, b, args.n_jobs).set_params(max_iter=2, energy_max_iter=1).fit(
        X[:40], y[:40])
    # the best of a few fits: other processes share the 2 cores
    fits = []
    for _ in range(args.repeat):
        t0 = time.perf_counter()
        est = make(args.child, A, b, args.n_jobs).fit(X, y)
        fits.append((time.perf_counter() - t0, est.fit_seconds_,
                     float(est.history_["energy_seconds"][-1]) if est.energy_ else None))
    total, base, energy = min(fits)
    out = dict(config=args.child, total=total, base=base, totals=[f[0] for f in fits],
               peak_mib=resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024,
               n_iter=int(est.n_iter_))
    if est.energy_ is not None:
        out["energy"] = energy
        out["psi_mean"] = float(est.history_["psi_mean"][-1])
    pred = np.concatenate(est.predict(X[:300]))
    out["accuracy_300"] = float(np.mean(pred == np.concatenate(y[:300])))
    print(json.dumps(out))


def run_child(config, args):
    cmd = [sys.executable, os.path.abspath(__file__), "--child", config,
           "--n-chains", str(args.n_chains), "--length", str(args.length),
           "--labels", str(args.labels), "--terms", str(args.terms), "--repeat",
           str(args.repeat)] + ([] if args.n_jobs is None else ["--n-jobs", str(args.n_jobs)])
    res = subprocess.run(cmd, capture_output=True, text=True)
    if res.returncode:
        sys.exit(f"{config} failed:\n{res.stderr}")
    return json.loads(res.stdout.strip().splitlines()[-1])


def time_cross(args):
    """Closed-form ``cross`` against the per-term loop, on 64 chains and on all."""
    from skstruct.energies import Energy, LinearMeasurements
    from skstruct.inference import GraphBatch
    from skstruct.inference._bethe import one_blas_thread

    X, y, A, b = make_data(args.n_chains, args.length, args.labels, args.terms)
    K = args.labels
    out = {}
    rng = np.random.default_rng(1)
    for name, n in (("minibatch", 64), ("all", args.n_chains)):
        batch = GraphBatch.from_chains([args.length] * n)
        en = LinearMeasurements(A, b).fit(None, batch, K)
        node = rng.dirichlet(np.ones(K), size=batch.n_nodes)
        d = rng.normal(size=node.shape)
        # as the learners call it: on one BLAS thread
        with one_blas_thread():
            en.cross(node, None, batch, d)
            reps = 20
            t0 = time.perf_counter()
            for _ in range(reps):
                fast = en.cross(node, None, batch, d)
            t_fast = (time.perf_counter() - t0) / reps
            t0 = time.perf_counter()
            loop = Energy._cross(en, node, None, batch, d, None)
            t_loop = time.perf_counter() - t0
        assert np.allclose(fast, loop, rtol=0, atol=1e-8)
        out[name] = dict(chains=n, fast=t_fast, loop=t_loop)
    return out


def table(res, cross, args):
    base = res["base"]["total"]
    # the fit with an energy starts with the same base CRF fit: its own base part is the
    # fairest denominator (the same process, the same moment), the base-only fit a check
    lines = ["| configuration | fit (s) | base CRF part (s) | energy learning (s) | "
             "fit / its base CRF part | fit / base-only fit | peak RSS (MiB) | "
             "accuracy, 300 train chains |",
             "|---|---|---|---|---|---|---|---|"]
    for c in CONFIGS:
        r = res[c]
        energy = f"{r['energy']:.2f}" if "energy" in r else "-"
        acc = f"{100 * r['accuracy_300']:.1f}%" if "accuracy_300" in r else "-"
        label = {"base": "base CRF (`energy=None`)",
                 "stochastic": f"{args.terms} terms, `learning=\"stochastic\"` (default)",
                 "alternating": f"{args.terms} terms, `learning=\"alternating\"`"}[c]
        lines.append(f"| {label} | {r['total']:.2f} | {r['base']:.2f} | {energy} | "
                     f"{r['total'] / r['base']:.2f}x | {r['total'] / base:.2f}x | "
                     f"{r['peak_mib']:.0f} | {acc} |")
    lines += ["", f"| one `cross` call, {args.terms} terms | closed form | per-term loop (the "
              "fallback for energies without a closed form) | speed-up |", "|---|---|---|---|"]
    for name in ("minibatch", "all"):
        c = cross[name]
        lines.append(f"| {c['chains']} chains x {args.length} nodes | {1e3 * c['fast']:.1f} ms "
                     f"| {c['loop']:.2f} s | {c['loop'] / c['fast']:.0f}x |")
    return lines


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--n-chains", type=int, default=1500)
    ap.add_argument("--length", type=int, default=28)
    ap.add_argument("--labels", type=int, default=40)
    ap.add_argument("--terms", type=int, default=400)
    ap.add_argument("--repeat", type=int, default=3, help="fits per configuration (best)")
    ap.add_argument("--n-jobs", type=int, default=None, help="NonLocalCRF's n_jobs")
    ap.add_argument("--child", choices=CONFIGS, help=argparse.SUPPRESS)
    ap.add_argument("--write-doc", action="store_true")
    args = ap.parse_args()
    if args.child:
        child(args)
        return
    res = {}
    for c in CONFIGS:
        res[c] = run_child(c, args)
        print(json.dumps(res[c]), flush=True)
    cross = time_cross(args)
    print(json.dumps(cross), flush=True)
    lines = table(res, cross, args)
    print("\n".join(lines))
    if args.write_doc:
        write_section("energy-terms", [
            "## Hundreds of soft constraints: NonLocalCRF with 400 linear-measurement terms",
            "",
            f"`python benchmarks/bench_energy_terms.py --write-doc`; {platform.machine()}, "
            f"{os.cpu_count()} CPUs, numba compilation excluded (a warm-up fit on 40 chains). "
            f"{args.n_chains} synthetic chains of {args.length} nodes and {args.labels} labels "
            f"(sticky Markov labels, noisy one-hot features), {args.terms} random soft "
            "constraints `a_j . counts(y) + b_j >= 1` that 90% of the training labellings "
            f"satisfy. Base CRF: `{BASE}`; energy learning: NonLocalCRF's defaults `{ENERGY}`; "
            f"`n_jobs={args.n_jobs}`. "
            "Each configuration runs in its own process (its own peak RSS); times are the best "
            f"of {args.repeat} fits.",
            "", *lines])


if __name__ == "__main__":
    main()
