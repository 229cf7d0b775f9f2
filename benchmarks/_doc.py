"""A benchmark's own section of ``doc/benchmarks.md`` (or of ``benchmarks/HISTORY.md``),
between its two markers."""

import datetime
import os

DOC = os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "doc",
                   "benchmarks.md")
# developer notes: revision comparisons and design measurements, not part of the site
HISTORY = os.path.join(os.path.dirname(os.path.abspath(__file__)), "HISTORY.md")


def write_section(name, lines, path=DOC):
    """Replace the text between ``<!-- name:start -->`` and ``<!-- name:end -->``
    by ``lines`` (appending the markers at the end when absent), with today's date under
    the section's heading (or above the lines when they have none)."""
    start = f"<!-- {name}:start -->"
    end = f"<!-- {name}:end -->"
    # every section says when it was measured, under its heading when it has one
    stamp = f"*Measured on {datetime.date.today().isoformat()}.*"
    lines = list(lines)
    if lines and lines[0].startswith("#"):
        lines[1:1] = ["", stamp]
    else:
        lines[0:0] = [stamp, ""]
    body = "\n".join([start, *lines, end])
    text = open(path).read() if os.path.exists(path) else "# Benchmarks\n"
    if start in text:
        text = text[:text.index(start)] + body + text[text.index(end) + len(end):]
    else:
        text = text.rstrip() + "\n\n" + body + "\n"
    with open(path, "w") as f:
        f.write(text)
