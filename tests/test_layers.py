"""The package reads top-down: each layer imports only the layers below it.

core <- inference <- models, energies <- solvers <- estimators, with
preprocessing, metrics and datasets beside the estimators.  Checked on the
source (every ``import`` statement, module level or inside a function), so a
lazy import that would close a cycle fails here too.
"""

import ast
import pathlib

import skstruct

ROOT = pathlib.Path(skstruct.__file__).parent

# layer of each part of the package; a module may import its own layer and below
LAYERS = {
    "_core": 0,
    "inference": 1,
    "models": 2,
    "energies": 2,
    "solvers": 3,
    "_base": 4, "_svm": 4, "_latent": 4, "_approx": 4, "_nonlocal": 4, "_perceptron": 4,
    "_decoding": 4, "distributed": 4,
    "preprocessing": 4, "metrics": 4, "datasets": 4, "exceptions": 4,
    "__init__": 5, "__main__": 5, "_persist": 5,
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


def test_no_learning_code_in_inference():
    """Inference kernels see potentials, never feature arrays or weights."""
    for path in (ROOT / "inference").rglob("*.py"):
        text = path.read_text()
        for word in ("xdata", "xptr", "gW", "coef"):
            assert word not in text, f"{path.name} mentions {word}"
