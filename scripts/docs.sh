#!/usr/bin/env bash
# Builds the documentation site into build/docs/html: Sphinx with MyST-NB from docs/ (the
# guides, the user's notebook pages in docs/tutorials/, the API reference in docs/api/) and
# examples/*.py (each a notebook page, read through jupytext). Every notebook is executed
# during the build; warnings are errors (a broken cross-reference, a cell that raises, a public
# name without a docstring). Then docs/_tools/check_pages.py compares the printed lines of the
# three user pages with the pages' lines.
#
# Sets everything up first (scripts/setup.sh, which installs the docs extra), unless
# RAPTOR_DOCS_SKIP_SETUP=1 (scripts/test.sh's docs step: setup already ran) or RAPTOR_DOCS_PYTHON
# names the Python to build with (a developer build: PYTHONPATH=build/site).
#
# Executed notebooks are cached (jupyter-cache) in build/docs/jupyter_cache/<key>, the key a
# hash of python/ and cpp/: a rebuild with the same sources and notebooks executes nothing, a
# change to raptor executes every page again. Kernels compile into $RAPTOR_CACHE_DIR (default
# build/docs/kcache), kept between builds. RAPTOR_DOCS_EXECUTE=force executes every page.
# Environment: JOBS (parallel Sphinx readers, default nproc).
set -euo pipefail

ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "$ROOT"
START=$SECONDS

if [[ -n "${RAPTOR_DOCS_PYTHON:-}" ]]; then
  PY="$RAPTOR_DOCS_PYTHON"
else
  [[ "${RAPTOR_DOCS_SKIP_SETUP:-}" == 1 ]] || bash "$ROOT/scripts/setup.sh"
  PY="$ROOT/.venv/bin/python"
  export PATH="$ROOT/.venv/bin:$PATH"
fi
"$PY" -c "import sphinx, myst_nb, jupytext, furo, ipykernel" 2>/dev/null \
  || { echo "[docs] ERROR: $PY lacks the docs tools: pip install '.[docs]' (scripts/setup.sh installs them)" >&2; exit 1; }

key="$(cd "$ROOT" && find python cpp -type f \( -name '*.py' -o -name '*.cpp' -o -name '*.hpp' -o -name '*.h' \) \
  -not -path '*/__pycache__/*' -print0 | LC_ALL=C sort -z | xargs -0 sha1sum | sha1sum | cut -c1-16)"
export RAPTOR_DOCS_CACHE="$ROOT/build/docs/jupyter_cache/$key"
export RAPTOR_CACHE_DIR="${RAPTOR_CACHE_DIR:-$ROOT/build/docs/kcache}"
# The pages draw with matplotlib's notebook backend: an inherited MPLBACKEND=Agg would hide
# their figures.
unset MPLBACKEND
# Old execution caches (other sources) are dropped; the kernels' cache is raptor's own.
if [[ -d "$ROOT/build/docs/jupyter_cache" ]]; then
  find "$ROOT/build/docs/jupyter_cache" -mindepth 1 -maxdepth 1 -type d ! -name "$key" -exec rm -rf {} +
fi

echo "[docs] sphinx-build (execution cache build/docs/jupyter_cache/$key, kernels in $RAPTOR_CACHE_DIR)"
"$PY" -m sphinx -b html -j "${JOBS:-$(nproc)}" -W --keep-going -q docs "$ROOT/build/docs/html"
"$PY" "$ROOT/docs/_tools/check_pages.py" "$ROOT/build/docs/html"
echo "[docs] built build/docs/html/index.html in $((SECONDS - START))s"
