#!/usr/bin/env bash
# Developer shortcut: builds the Python module raptor_core._core from this work tree into
# build/<name> (default: dev) and lays out build/<name>/site with raptor_core, hawk and eagle,
# so the tree's Python code and C++ core run without a `pip install`:
#
#   bash scripts/dev_python.sh mywork
#   PYTHONPATH=build/mywork/site .venv/bin/python -m pytest -q tests/test_runtime.py
#
# hawk and eagle in the site folder are links to python/hawk and python/eagle, so edits to
# Python files need no rebuild; edits to C++ need this script again (incremental). Several
# build names can be used at once without disturbing each other or the venv's own install.
# Needs scripts/setup.sh to have run once (the venv, its nanobind and the XLA FFI headers).
set -euo pipefail

ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
NAME="${1:-dev}"
BUILD="$ROOT/build/$NAME"
PY="$ROOT/.venv/bin/python"
[[ -x "$PY" ]] || { echo "[dev_python] run scripts/setup.sh first (no $PY)" >&2; exit 1; }

ffi_args=()
for inc in "$ROOT"/build/py/xla-ffi-*; do
  [[ -f "$inc/xla/ffi/api/ffi.h" ]] && ffi_args=(-DRAPTOR_XLA_FFI_INCLUDE="$inc")
done
gen=()
command -v ninja >/dev/null 2>&1 && gen=(-G Ninja)
if [[ ! -f "$BUILD/CMakeCache.txt" ]]; then
  cmake -S "$ROOT" -B "$BUILD" "${gen[@]}" -DCMAKE_BUILD_TYPE=Release -DRAPTOR_BUILD_PYTHON=ON \
    -DRAPTOR_BUILD_TESTS=OFF -DPython_EXECUTABLE="$PY" "${ffi_args[@]}" >/dev/null
fi
cmake --build "$BUILD" -j "${JOBS:-2}" --target _core

SITE="$BUILD/site"
mkdir -p "$SITE/raptor_core"
cp "$ROOT/python/raptor_core/__init__.py" "$SITE/raptor_core/__init__.py"
so="$(ls "$BUILD"/_core*.so | head -n 1)"
ln -sf "$so" "$SITE/raptor_core/$(basename "$so")"
ln -sfn "$ROOT/python/hawk" "$SITE/hawk"
ln -sfn "$ROOT/python/eagle" "$SITE/eagle"
echo "[dev_python] ready: PYTHONPATH=$SITE"
