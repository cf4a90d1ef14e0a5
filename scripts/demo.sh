#!/usr/bin/env bash
# Sets everything up (scripts/setup.sh) and runs every examples/*.py in sorted order, from
# within examples/, with MPLBACKEND=Agg. Examples write their PNGs into the directory named by
# $RAPTOR_EXAMPLES_OUT (examples/out/). Fails if any example fails.
set -euo pipefail

ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "$ROOT"

bash "$ROOT/scripts/setup.sh"

PY="$ROOT/.venv/bin/python"
OUT="$ROOT/examples/out"
mkdir -p "$OUT"
export MPLBACKEND=Agg
export RAPTOR_EXAMPLES_OUT="$OUT"

shopt -s nullglob
examples=("$ROOT"/examples/*.py)
shopt -u nullglob
if (( ${#examples[@]} == 0 )); then
  echo "[demo] FAIL: no examples/*.py to run" >&2
  exit 1
fi
mapfile -t examples < <(printf '%s\n' "${examples[@]}" | LC_ALL=C sort)

marker="$(mktemp)"
trap 'rm -f "$marker"' EXIT
failed=()
cd "$ROOT/examples"
for ex in "${examples[@]}"; do
  name="$(basename "$ex")"
  echo
  echo "[demo] ==== $name"
  t0=$SECONDS
  if "$PY" "$name"; then
    echo "[demo] $name: ok ($((SECONDS - t0))s)"
  else
    echo "[demo] $name: FAILED ($((SECONDS - t0))s)"
    failed+=("$name")
  fi
done

echo
echo "[demo] PNGs written:"
written=0
while IFS= read -r png; do
  echo "  $png"
  written=$((written + 1))
done < <(find "$OUT" -name '*.png' -newer "$marker" | LC_ALL=C sort)
(( written > 0 )) || echo "  (none)"

if (( ${#failed[@]} )); then
  echo "[demo] FAILED: ${failed[*]}" >&2
  exit 1
fi
echo "[demo] all ${#examples[@]} examples ran; ${written} PNGs in $OUT"
