"""The package reads top-down: each layer imports only the layers below it, and no
module imports itself back through others.

core <- inference <- models, energies <- solvers <- estimators (with
preprocessing, metrics and datasets beside them) <- distributed <- the package's
entry points.  Checked on the source (every ``import`` statement, module level or
inside a function), so a lazy import that would close a cycle fails here too.
"""

import ast
import pathlib
import subprocess
import sys

import pytest

import skstruct

ROOT = pathlib.Path(skstruct.__file__).parent

# layer of each part of the package; a module may import its own layer and below
LAYERS = {
    "_core": 0, "_backends": 0,
    "inference": 1,
    "models": 2,
    "energies": 2,
    "solvers": 3,
    "_base": 4, "_svm": 4, "_latent": 4, "_approx": 4, "_nonlocal": 4, "_perceptron": 4,
    "_crf": 4, "_decoding": 4,
    "preprocessing": 4, "metrics": 4, "datasets": 4, "exceptions": 4,
    # above the estimators: its drivers run their fitting steps on a cluster
    "distributed": 5,
    # reads fitted estimators' weights
    "inspection": 5,
    "__init__": 6, "__main__": 6, "_persist": 6, "_warmup": 6,
    # drop-in interfaces of other libraries, over the estimators
    "compat": 6,
}


def _part(path):
    rel = path.relative_to(ROOT)
    return rel.parts[0].removesuffix(".py")


def _imported_parts(path):
    """Parts of skstruct imported by the module at ``path`` (relative or absolute)."""
    tree = ast.parse(path.read_text())
    pkg = list(path.relative_to(ROOT).parent.parts)
    out = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.ImportFrom):
            if node.level:
                base = pkg[:len(pkg) - node.level + 1] if node.level > 1 else list(pkg)
                mod = base + (node.module.split(".") if node.module else [])
                if not mod:  # "from . import x" at the top: x itself is the part
                    mod = [a.name for a in node.names]
                out.add(mod[0])
            elif node.module and node.module.split(".")[0] == "skstruct":
                out.add(node.module.split(".")[1] if "." in node.module else "__init__")
        elif isinstance(node, ast.Import):
            for a in node.names:
                if a.name.startswith("skstruct."):
                    out.add(a.name.split(".")[1])
    return {p.removesuffix(".py") for p in out}


def test_every_module_imports_only_its_layer_and_below():
    bad = []
    for path in ROOT.rglob("*.py"):
        part = _part(path)
        assert part in LAYERS, f"{path}: place it in a layer of tests/test_layers.py"
        for dep in _imported_parts(path):
            if dep != part and LAYERS.get(dep, 99) > LAYERS[part]:
                bad.append(f"{path.relative_to(ROOT)} imports {dep}")
    assert not bad, "\n".join(bad)


def test_core_imports_nothing_of_skstruct_above_it():
    for path in (ROOT / "_core").rglob("*.py"):
        assert _imported_parts(path) <= {"_core"}, path
    assert _imported_parts(ROOT / "_backends.py") == set()


def test_no_learning_code_in_inference():
    """Inference kernels see potentials, never feature arrays or weights."""
    for path in (ROOT / "inference").rglob("*.py"):
        text = path.read_text()
        for word in ("xdata", "xptr", "gW", "coef"):
            assert word not in text, f"{path.name} mentions {word}"


# ------------------------------------------------------------------ import cycles
def _module_name(root, path):
    parts = list(path.relative_to(root.parent).with_suffix("").parts)
    if parts[-1] == "__init__":
        parts.pop()
    return ".".join(parts)


def import_graph(root):
    """The modules of the package at ``root`` and, for each, the modules of the
    package its ``import`` statements name (anywhere in the module: at module level
    or inside a function; relative or absolute; ``from . import x`` naming the
    submodule ``x`` when there is one, else the package)."""
    root = pathlib.Path(root)
    paths = {_module_name(root, p): p for p in sorted(root.rglob("*.py"))}
    graph = {}
    for name, path in paths.items():
        package = name.split(".") if path.name == "__init__.py" else name.split(".")[:-1]
        deps = set()
        for node in ast.walk(ast.parse(path.read_text(), str(path))):
            if isinstance(node, ast.ImportFrom):
                if node.level:
                    base = package[:len(package) - node.level + 1]
                    target = ".".join(base + ([node.module] if node.module else []))
                else:
                    target = node.module
                for alias in node.names:
                    if f"{target}.{alias.name}" in paths:
                        deps.add(f"{target}.{alias.name}")
                    elif target in paths:
                        deps.add(target)
            elif isinstance(node, ast.Import):
                deps.update(a.name for a in node.names if a.name in paths)
        deps.discard(name)
        graph[name] = deps
    return graph


def find_cycle(graph):
    """A cycle of ``graph`` (its modules in order, the first repeated at the end), or
    None."""
    state = {}

    def visit(node, path):
        state[node] = "open"
        path.append(node)
        for dep in sorted(graph.get(node, ())):
            if state.get(dep) == "open":
                return path[path.index(dep):] + [dep]
            if dep not in state:
                found = visit(dep, path)
                if found:
                    return found
        path.pop()
        state[node] = "done"
        return None

    for node in sorted(graph):
        if node not in state:
            found = visit(node, [])
            if found:
                return found
    return None


def test_the_package_has_no_import_cycle():
    graph = import_graph(ROOT)
    # the graph sees the package: every module, and the imports that tie the layers
    assert "skstruct.distributed._transport" in graph
    assert "skstruct._backends" in graph["skstruct._svm"]
    assert "skstruct.solvers._bcfw_state" in graph["skstruct.solvers._bcfw_chain"]
    # the drivers the distributed layer imports on first use, inside functions
    assert "skstruct.distributed._ssvm" in graph["skstruct.distributed"]
    cycle = find_cycle(graph)
    assert cycle is None, "import cycle: " + " -> ".join(cycle)


def _tree(tmp_path, a, b):
    pkg = tmp_path / "pkg"
    pkg.mkdir()
    (pkg / "__init__.py").write_text("")
    (pkg / "a.py").write_text(a)
    (pkg / "b.py").write_text(b)
    (pkg / "c.py").write_text("import os\nfrom . import a\n")
    return pkg


@pytest.mark.parametrize("a, b", [
    ("from .b import f\n", "from .a import g\n"),
    ("from . import b\n", "def g():\n    from pkg.a import h\n    return h\n"),
    ("import pkg.b\n", "class K:\n    def m(self):\n        from . import a\n"),
], ids=["module level", "lazy", "absolute"])
def test_the_cycle_check_finds_a_planted_cycle(tmp_path, a, b):
    cycle = find_cycle(import_graph(_tree(tmp_path, a, b)))
    assert cycle is not None and cycle[0] == cycle[-1]
    assert set(cycle) == {"pkg.a", "pkg.b"}


def test_the_cycle_check_passes_a_tree_without_one(tmp_path):
    graph = import_graph(_tree(tmp_path, "from . import b\n", "import numpy\n"))
    assert graph["pkg.a"] == {"pkg.b"} and graph["pkg.c"] == {"pkg.a"}
    assert find_cycle(graph) is None


# ------------------------------------------------ the estimators' dask Bag backend
def test_importing_skstruct_registers_the_bag_backend_without_dask():
    code = ("import sys, skstruct\n"
            "from skstruct._backends import bag_operation\n"
            "for name in ('CRF', 'ApproxStructuredPredictor', 'StructuredSVM',\n"
            "             'map_predict', 'score'):\n"
            "    assert callable(bag_operation(name)), name\n"
            "assert 'dask' not in sys.modules, 'import skstruct imported dask'\n")
    subprocess.run([sys.executable, "-c", code], check=True)


def test_an_estimator_without_bag_support_is_named():
    from skstruct._backends import bag_operation

    with pytest.raises(ValueError, match="Nothing has no dask Bag support"):
        bag_operation("Nothing")
