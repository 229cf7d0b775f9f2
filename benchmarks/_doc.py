"""A benchmark's own section of ``doc/benchmarks.md``, between its two markers."""

import os

DOC = os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "doc",
                   "benchmarks.md")


def write_section(name, lines, path=DOC):
    """Replace the text between ``<!-- name:start -->`` and ``<!-- name:end -->``
    by ``lines`` (appending the markers at the end when absent)."""
    start = f"<!-- {name}:start -->"
    end = f"<!-- {name}:end -->"
    body = "\n".join([start, *lines, end])
    text = open(path).read() if os.path.exists(path) else "# Benchmarks\n"
    if start in text:
        text = text[:text.index(start)] + body + text[text.index(end) + len(end):]
    else:
        text = text.rstrip() + "\n\n" + body + "\n"
    with open(path, "w") as f:
        f.write(text)
