"""Run a pystruct script unchanged on skstruct's drop-in.

    python benchmarks/pystruct/as_dropin.py SCRIPT.py [ARGS...]

Every ``import pystruct...`` of the script (and of what it imports) resolves to the
same module path under :mod:`skstruct.compat.pystruct`, so the file that runs under
pystruct 0.3.2 in its Python 3.6 environment runs here byte for byte.
"""

import importlib
import importlib.abc
import importlib.util
import os
import runpy
import sys


class _PystructAlias(importlib.abc.MetaPathFinder, importlib.abc.Loader):
    """``pystruct.x.y`` is ``skstruct.compat.pystruct.x.y``."""

    def find_spec(self, name, path=None, target=None):
        if name == "pystruct" or name.startswith("pystruct."):
            return importlib.util.spec_from_loader(name, self)
        return None

    def create_module(self, spec):
        return importlib.import_module("skstruct.compat." + spec.name)

    def exec_module(self, module):
        pass


def main():
    if len(sys.argv) < 2:
        raise SystemExit(__doc__)
    sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.dirname(
        os.path.abspath(__file__)))))
    sys.meta_path.insert(0, _PystructAlias())
    script = sys.argv[1]
    sys.argv = sys.argv[1:]
    sys.path.insert(0, os.path.dirname(os.path.abspath(script)))
    runpy.run_path(script, run_name="__main__")


if __name__ == "__main__":
    main()
