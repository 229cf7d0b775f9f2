#!/usr/bin/env bash
# Build a Python 3.6 virtualenv holding pystruct 0.3.2 (+ ad3) for benchmarking.
# Usage: benchmarks/pystruct/build_env.sh [VENV_DIR]
#   VENV_DIR defaults to benchmarks/.pystruct-venv relative to the repo root.
# Idempotent: returns at once if VENV_DIR already imports pystruct and ad3.
set -euo pipefail

here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
repo_root="$(cd "$here/../.." && pwd)"
venv="${1:-$repo_root/benchmarks/.pystruct-venv}"

if [ -x "$venv/bin/python" ] && "$venv/bin/python" -c "import pystruct, ad3" >/dev/null 2>&1; then
    echo "pystruct venv already ready at $venv"
    exit 0
fi

py36="$(pyenv root)/versions/3.6.15/bin/python"
if [ ! -x "$py36" ]; then
    echo "error: $py36 not found (need pyenv's Python 3.6.15)" >&2
    exit 1
fi

"$py36" -m venv "$venv"
pip="$venv/bin/pip"
"$pip" install --upgrade "pip<22"
"$pip" install numpy==1.19.5 scipy==1.5.4 joblib==1.1.1 threadpoolctl==3.1.0 \
    scikit-learn==0.22.2.post1 cvxopt==1.2.7 "cython<3"
# pystruct and ad3 build C extensions against the numpy/cython installed above.
"$pip" install --no-build-isolation pystruct==0.3.2 ad3==2.2.1

"$venv/bin/python" -c "import pystruct, ad3; print('pystruct', pystruct.__version__, 'ad3 ok')"
