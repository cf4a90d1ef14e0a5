#!/usr/bin/env bash
# The GPU check: on a machine with an NVIDIA GPU and NO network, builds raptor offline into a
# fresh venv and runs everything that needs the GPU, in under 8 minutes, ending with ONE line
#   gpu_check: N passed, M failed, K skipped
# Expects preinstalled (system Python 3.12): jax 0.11.2 + jax-cuda13-plugin, cupy-cuda13x,
# nanobind, scikit-build-core, cmake, ninja, pytest, and nvcc 13 (the CUDA toolkit: NVRTC).
# Without a visible GPU it stops at once with "no NVIDIA GPU visible".
#
#   bash scripts/gpu_check.sh            # from the repository root
#   PYTHON=python3.12 bash scripts/gpu_check.sh
#
# Steps: nvidia-smi -L; a venv with --system-site-packages; `pip install --no-build-isolation
# --no-deps .` (RAPTOR_XLA_FFI_INCLUDE from the installed jaxlib when the 0.11.2 headers are
# not in build/py); tests/test_gpu.py and the GPU-relevant page tests; benchmarks/gpu.py.
set -uo pipefail

ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
PY="${PYTHON:-python3}"
WORK="${GPU_CHECK_DIR:-$ROOT/build/gpu_check}"
START=$SECONDS
deadline() { timeout "$1" "${@:2}"; }

if ! command -v nvidia-smi >/dev/null 2>&1 || ! nvidia-smi -L 2>/dev/null | grep -q "^GPU"; then
  echo "gpu_check: no NVIDIA GPU visible (nvidia-smi -L lists none); run this on a machine with one"
  echo "gpu_check: 0 passed, 1 failed, 0 skipped"
  exit 2
fi
nvidia-smi -L

mkdir -p "$WORK"
VENV="$WORK/venv"
if [[ ! -x "$VENV/bin/python" ]]; then
  "$PY" -m venv --system-site-packages "$VENV" || { echo "gpu_check: cannot make a venv with $PY"; echo "gpu_check: 0 passed, 1 failed, 0 skipped"; exit 1; }
fi
VPY="$VENV/bin/python"
# When $PY is itself a venv's Python, --system-site-packages sees the base interpreter's
# packages, not that venv's: a .pth file adds the venv's own (jax, cupy, nanobind, ...).
"$PY" -c 'import site, sys; sys.exit(0 if sys.prefix != sys.base_prefix else 1)' 2>/dev/null &&
  "$PY" -c 'import site; print("\n".join(site.getsitepackages()))' >"$("$VPY" -c 'import site; print(site.getsitepackages()[0])')/raptor_parent_venv.pth"

# XLA FFI headers: the fetched 0.11.2 ones when present, else the installed jaxlib's.
if [[ -z "${RAPTOR_XLA_FFI_INCLUDE:-}" ]]; then
  for inc in "$ROOT"/build/py/xla-ffi-*; do
    [[ -f "$inc/xla/ffi/api/ffi.h" ]] && export RAPTOR_XLA_FFI_INCLUDE="$inc"
  done
fi
if [[ -z "${RAPTOR_XLA_FFI_INCLUDE:-}" ]]; then
  inc="$("$VPY" -c 'import jax.ffi, os; print(jax.ffi.include_dir())' 2>/dev/null)"
  [[ -n "$inc" && -f "$inc/xla/ffi/api/ffi.h" ]] && export RAPTOR_XLA_FFI_INCLUDE="$inc"
fi
echo "gpu_check: XLA FFI headers: ${RAPTOR_XLA_FFI_INCLUDE:-none found (the JAX handlers are not built)}"
cfg=()
[[ -n "${RAPTOR_XLA_FFI_INCLUDE:-}" ]] && cfg=(--config-settings="cmake.define.RAPTOR_XLA_FFI_INCLUDE=$RAPTOR_XLA_FFI_INCLUDE")

echo "gpu_check: building raptor (offline)"
if ! deadline 300 env PIP_NO_INDEX=1 "$VPY" -m pip install -q --no-build-isolation --no-deps "${cfg[@]}" "$ROOT" >"$WORK/build.log" 2>&1; then
  tail -n 40 "$WORK/build.log"
  echo "gpu_check: the build failed (log: $WORK/build.log)"
  echo "gpu_check: 0 passed, 1 failed, 0 skipped"
  exit 1
fi
"$VPY" -c 'import eagle.cuda, json; print("gpu_check: probe", json.dumps(eagle.cuda.probe()))'

passed=0 failed=0 skipped=0
count() {  # adds pytest's summary counts from a junit file
  read -r p f s < <("$VPY" - "$1" <<'PYEOF'
import sys, xml.etree.ElementTree as ET
try:
    root = ET.parse(sys.argv[1]).getroot()
except Exception:
    print(0, 1, 0); raise SystemExit
suites = [root] if root.tag == "testsuite" else list(root)
t = sum(int(s.get("tests", 0)) for s in suites)
f = sum(int(s.get("failures", 0)) + int(s.get("errors", 0)) for s in suites)
k = sum(int(s.get("skipped", 0)) for s in suites)
print(t - f - k, f, k)
PYEOF
)
  passed=$((passed + p)) failed=$((failed + f)) skipped=$((skipped + s))
}

# Run from a copy of tests/ outside the source tree so the installed packages are imported.
rm -rf "$WORK/tests" && cp -r "$ROOT/tests" "$WORK/tests"
cd "$WORK"
# PYTHONFAULTHANDLER: a crash prints the Python stack of every thread (the log keeps it).
export XLA_PYTHON_CLIENT_PREALLOCATE=false RAPTOR_CACHE_DIR="$WORK/cache" RAPTOR_SKIP_NVRTC_CHECK=1 PYTHONFAULTHANDLER=1
for t in tests/test_gpu.py tests/test_jax_pages.py tests/test_graphs.py tests/test_reverse.py; do
  left=$((420 - (SECONDS - START)))
  if ((left < 30)); then echo "gpu_check: out of time before $t"; failed=$((failed + 1)); continue; fi
  echo "gpu_check: $t"
  log="$WORK/$(basename "$t" .py).log"
  # -rfEs: each failure, error and skip in one line; the whole output stays in $log.
  deadline "$left" "$VPY" -m pytest -q -p no:cacheprovider -rfEs --junitxml="$WORK/$(basename "$t" .py).xml" "$t" > "$log" 2>&1
  grep -E "^(FAILED|ERROR) " "$log" | head -n 20
  if grep -q "Fatal Python error" "$log"; then  # a crash: its stack, which a tail would cut
    grep -A 30 "Fatal Python error" "$log" | head -n 40
  else
    tail -n 5 "$log"
  fi
  count "$WORK/$(basename "$t" .py).xml"
done

left=$((470 - (SECONDS - START)))
echo "gpu_check: benchmarks/gpu.py"
if ((left > 20)) && deadline "$left" "$VPY" "$ROOT/benchmarks/gpu.py"; then
  passed=$((passed + 1))
else
  echo "gpu_check: benchmarks/gpu.py failed or ran out of time"
  failed=$((failed + 1))
fi
echo "gpu_check: $passed passed, $failed failed, $skipped skipped"
((failed == 0))
