import subprocess
import sys

CODE = """
import sys
import skstruct
assert "numba" not in sys.modules, "import skstruct must not import numba"
from skstruct.inference import _chain, _tree, _exact
from skstruct._core import _graph
import skstruct.inference as inf
kernels = [_chain._viterbi_batch_chunks, _chain._fb_chunks, _tree._tree_batch_chunks,
           _exact._exact_batch_range, _graph.build_adjacency]
assert all(k.signatures == [] for k in kernels), "a kernel was compiled at import"
assert all(k._cache.__class__.__name__ == "FunctionCache" for k in kernels), "cache=True"
"""


def test_import_compiles_nothing_and_kernels_are_cached():
    subprocess.run([sys.executable, "-c", CODE], check=True)


def test_inference_api_imports_neither_scipy_nor_numba():
    code = ("import sys, skstruct.inference, skstruct._core\n"
            "assert 'scipy' not in sys.modules, 'skstruct.inference imported scipy'\n"
            "assert 'numba' not in sys.modules, 'skstruct.inference imported numba'\n")
    subprocess.run([sys.executable, "-c", code], check=True)
