#!/usr/bin/env bash
# Sets up <repo>/.venv (Python >= 3.12) and installs raptor into it with the test, examples
# and docs extras. Safe to run again: the venv is reused and the C++ build in build/py is
# incremental.
#
# Python: $RAPTOR_PYTHON if set, else the newest CPython >= 3.12 found among pyenv's
# versions and python3.* on PATH.
set -euo pipefail

ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
VENV="$ROOT/.venv"
MIN_MAJOR=3
MIN_MINOR=12

log() { printf '[setup] %s\n' "$*"; }
die() { printf '[setup] ERROR: %s\n' "$*" >&2; exit 1; }

# Prints "MAJOR MINOR MICRO" for a Python interpreter, or nothing if it does not run or is a
# free-threaded build (few wheels exist for those).
py_version() {
  "$1" -c 'import sys, sysconfig
if not sysconfig.get_config_var("Py_GIL_DISABLED"):
    print(*sys.version_info[:3])' 2>/dev/null || true
}

version_ok() {  # major minor
  [[ "$1" -gt "$MIN_MAJOR" || ( "$1" -eq "$MIN_MAJOR" && "$2" -ge "$MIN_MINOR" ) ]]
}

find_python() {
  local candidates=() c v best="" best_key=0 major minor micro key
  if [[ -n "${RAPTOR_PYTHON:-}" ]]; then
    candidates+=("$RAPTOR_PYTHON")
  else
    local roots=()
    [[ -n "${PYENV_ROOT:-}" ]] && roots+=("$PYENV_ROOT")
    if command -v pyenv >/dev/null 2>&1; then
      roots+=("$(pyenv root 2>/dev/null || true)")
    fi
    roots+=("$HOME/.pyenv" "/root/.pyenv")
    local r
    for r in "${roots[@]}"; do
      [[ -n "$r" && -d "$r/versions" ]] || continue
      for c in "$r"/versions/*/bin/python3; do
        [[ -x "$c" ]] && candidates+=("$c")
      done
    done
    for c in python3.14 python3.13 python3.12 python3; do
      if command -v "$c" >/dev/null 2>&1; then candidates+=("$(command -v "$c")"); fi
    done
  fi
  for c in "${candidates[@]}"; do
    v="$(py_version "$c")"
    [[ -n "$v" ]] || continue
    read -r major minor micro <<<"$v"
    version_ok "$major" "$minor" || continue
    key=$((major * 1000000 + minor * 1000 + micro))
    if (( key > best_key )); then best_key=$key; best="$c"; fi
  done
  [[ -n "$best" ]] || die "no Python >= ${MIN_MAJOR}.${MIN_MINOR} found (looked in pyenv versions \
and python3.* on PATH; JAX >= 0.11 needs Python >= 3.12). Install one (e.g. 'pyenv install 3.13') \
or set RAPTOR_PYTHON=/path/to/python3.12+."
  printf '%s\n' "$best"
}

# 1. The virtual environment: reuse it if it runs a Python >= 3.12, else (re)create it.
if [[ -x "$VENV/bin/python" ]]; then
  v="$(py_version "$VENV/bin/python")"
  if [[ -n "$v" ]] && version_ok ${v% *} && "$VENV/bin/python" -m pip --version >/dev/null 2>&1; then
    log "reusing $VENV (Python ${v// /.})"
  else
    log "$VENV is unusable or older than ${MIN_MAJOR}.${MIN_MINOR} (${v:-broken}); recreating it"
    rm -rf "$VENV"
  fi
fi
if [[ ! -x "$VENV/bin/python" ]]; then
  PY="$(find_python)"
  log "creating $VENV with $PY ($("$PY" --version 2>&1))"
  "$PY" -m venv "$VENV"
fi
PY="$VENV/bin/python"
export PATH="$VENV/bin:$PATH"
export PIP_DISABLE_PIP_VERSION_CHECK=1

# 2. Build requirements, installed into the venv so that rebuilds need no isolated env.
build_reqs=("scikit-build-core>=0.10" "nanobind>=2.4")
cmake_version="$(cmake --version 2>/dev/null | awk 'NR==1 {print $3}' || true)"
if [[ -z "$cmake_version" || "$(printf '%s\n' 3.20 "$cmake_version" | sort -V | head -1)" != 3.20 ]]; then
  build_reqs+=("cmake>=3.20")
fi
command -v ninja >/dev/null 2>&1 || build_reqs+=("ninja")
log "installing build requirements: ${build_reqs[*]}"
"$PY" -m pip install -q "${build_reqs[@]}"

# 3. raptor itself (hawk, eagle, raptor_core) with the test, examples and docs extras. The CMake
#    build dir is persistent (build/py) so that rebuilds are incremental; it is cleared when
#    the venv's Python changes, as its cache holds the interpreter's paths.
BUILD_DIR="$ROOT/build/py"
stamp="$("$PY" -c 'import sys; print(sys.prefix, sys.version)')"
if [[ -f "$BUILD_DIR/.raptor-python" && "$(cat "$BUILD_DIR/.raptor-python")" != "$stamp" ]]; then
  log "Python changed since the last build: clearing $BUILD_DIR"
  rm -rf "$BUILD_DIR"
fi
mkdir -p "$BUILD_DIR"
printf '%s\n' "$stamp" >"$BUILD_DIR/.raptor-python"

log "pip install --no-build-isolation .[test,examples,docs] (build dir: build/py)"
cd "$ROOT"
"$PY" -m pip install --no-build-isolation -Cbuild-dir="$BUILD_DIR" ".[test,examples,docs]" \
  | { grep -v "^Requirement already satisfied" || true; }
"$PY" - <<'PYEOF' || die "raptor was installed, but hawk, eagle or raptor_core is missing from the venv"
import importlib.util, sys
missing = [n for n in ("hawk", "eagle", "raptor_core") if importlib.util.find_spec(n) is None]
if missing:
    sys.exit("missing packages: " + ", ".join(missing))
import raptor_core._core  # the compiled module must load
PYEOF
log "ready: $PY ($("$PY" --version 2>&1)) with hawk, eagle and raptor_core installed"
