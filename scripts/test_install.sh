#!/usr/bin/env bash
# Installs raptor as a user would, in scratch venvs with pip's default build isolation, and
# checks that what got installed works, JAX bridge included:
#   1. `pip wheel` of packaging/raptor-hawk and packaging/raptor-eagle (isolated builds), then
#      a fresh venv runs the pages' line `pip install raptor-eagle raptor-hawk` against those
#      wheels (--find-links) and the smoke test;
#   2. `pip install ".[jax]"` of the repository root (the README's one-step install), isolated,
#      into another fresh venv, and the same smoke test.
# The two run side by side. Called by scripts/test.sh (step "install"); needs the package
# index (numpy, jax, jaxlib's headers as a build requirement). Scratch space:
# build/install-check (removed first).
set -euo pipefail

ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
PY="${1:-$ROOT/.venv/bin/python}"
BASE="$("$PY" -c 'import sys; print(sys._base_executable)')"
WORK="$ROOT/build/install-check"
rm -rf "$WORK"
mkdir -p "$WORK"
export PIP_DISABLE_PIP_VERSION_CHECK=1
# These venvs run one smoke test: their packages are not compiled to bytecode at install
# (--no-compile; Python compiles what it imports when it imports it).

log() { printf '[install] %s\n' "$*"; }

smoke() {  # <venv python> <name>: a kernel compiled, launched, and called under jax.jit(jax.grad)
  # From a file: hawk compiles a kernel from its source text, which stdin does not keep.
  local dir="$WORK/smoke-$2"
  mkdir -p "$dir"
  cat >"$dir/smoke.py" <<'PYEOF'
import numpy as np
import jax, jax.numpy as jnp
jax.config.update("jax_enable_x64", True)
import hawk, eagle, eagle.plan
from hawk import Mutable, Param, Vector
from eagle.frameworks import jax as eagle_jax

@hawk.kernel
def scale(v: Vector[3], c: Param, out: Mutable[Vector[3]]):
    out = c * v * v

(plan,) = eagle.plan.auto([scale])
v = np.arange(12.0).reshape(3, 4); out = np.zeros_like(v)
plan.bind(v=v, c=2.0, out=out).launch()
assert np.array_equal(out, 2.0 * v * v), out
f = eagle_jax.function(scale, wrt=("v", "c"))
y = f(jnp.asarray(v), 2.0)  # one Mutable: one array
assert np.array_equal(np.asarray(y), 2.0 * v * v), y
g = jax.jit(jax.grad(lambda c: f(jnp.asarray(v), c).sum()))(3.0)
assert abs(float(g) - float((v * v).sum())) < 1e-9, g
print("smoke: ok", eagle.__file__)
PYEOF
  (cd "$dir" && RAPTOR_CACHE_DIR="$dir/cache" "$1" "$dir/smoke.py")
}

# The two installs run side by side (each in its own venvs and folders; their logs are
# printed in order after both end): their downloads, venvs and pip resolves overlap the other's
# compile, which saved about a minute of the step on 2 cores.
install_pages() {
  log "1. pip wheel packaging/raptor-hawk packaging/raptor-eagle (build isolation)"
  "$BASE" -m venv "$WORK/venv-build"
  "$WORK/venv-build/bin/python" -m pip install -q --upgrade pip
  "$WORK/venv-build/bin/python" -m pip wheel -q --no-deps -w "$WORK/wheels" \
    "$ROOT/packaging/raptor-hawk" "$ROOT/packaging/raptor-eagle"
  ls "$WORK/wheels"
  "$BASE" -m venv "$WORK/venv-pages"
  log "   pip install raptor-eagle raptor-hawk (from those wheels) into a fresh venv"
  # The package index has other projects' raptor-hawk/raptor-eagle (0.7.x): the dependencies
  # come from the index first, then these two from the wheels alone (--no-index), so pip
  # cannot pick the index's distributions of the same names.
  "$WORK/venv-pages/bin/python" -m pip install -q --no-compile "numpy>=2.1" "jax>=0.11.2" flatbuffers
  (cd "$WORK" && "$WORK/venv-pages/bin/python" -m pip install -q --no-compile --no-index \
    --find-links "$WORK/wheels" raptor-eagle raptor-hawk)
  "$WORK/venv-pages/bin/python" -m pip show raptor-hawk raptor-eagle | grep -E '^(Name|Version|Location)'
  smoke "$WORK/venv-pages/bin/python" pages
}

install_root() {
  log "2. pip install \".[jax]\" from the repository root (build isolation) into a fresh venv"
  "$BASE" -m venv "$WORK/venv-root"
  "$WORK/venv-root/bin/python" -m pip install -q --upgrade pip
  (cd "$ROOT" && "$WORK/venv-root/bin/python" -m pip install -q --no-compile ".[jax]")
  smoke "$WORK/venv-root/bin/python" root
}

( set -e; install_pages ) >"$WORK/pages.log" 2>&1 &
pages=$!
( set -e; install_root ) >"$WORK/root.log" 2>&1 &
root=$!
rc_pages=0 rc_root=0
wait "$pages" || rc_pages=$?
wait "$root" || rc_root=$?
cat "$WORK/pages.log" "$WORK/root.log"
if (( rc_pages != 0 || rc_root != 0 )); then
  log "FAILED: the pages' install exited $rc_pages, the root install $rc_root (logs above)"
  exit 1
fi
log "both installs work"
