"""Smoke test of benchmarks/stream_stores.py (plain against non-temporal stores by size): a
small run checks, inside the script, that both modes give the same bits and NumPy's step;
here its JSON is checked for every size and dtype asked, the threshold it reports against
the runtime's, and what the default does at each size against that threshold. The timings
themselves are not checked (a benchmark, not a timed test)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

from raptor_core import _core

ROOT = Path(__file__).resolve().parents[1]
SCRIPT = ROOT / "benchmarks" / "stream_stores.py"


def test_a_small_run_reports_both_modes_and_the_default(tmp_path, benchmark_module):
    out = tmp_path / "stream.json"
    r = subprocess.run([sys.executable, str(SCRIPT), "--log2n", "10,12", "--rounds", "2", "--json", str(out)],
                       capture_output=True, text=True, timeout=600)
    assert r.returncode == 0, r.stdout + r.stderr
    res = json.loads(out.read_text())
    assert res["benchmark"] == "stream_stores" and res["rounds"] == 2
    assert [(row["dtype"], row["log2n"]) for row in res["rows"]] == [
        (d, e) for d in ("float64", "float32") for e in (10, 12)]
    threshold = res["default_stream_bytes"]
    assert threshold == _core.default_stream_bytes() > 0
    for row in res["rows"]:
        assert row["plane_bytes"] == 2 * 3 * (1 << row["log2n"]) * (8 if row["dtype"] == "float64" else 4)
        assert row["plain_us"] > 0 and row["stream_us"] > 0
        assert abs(row["plain_over_stream"] - row["plain_us"] / row["stream_us"]) < 1e-9
        assert row["default_streams"] == (row["plane_bytes"] >= threshold)
    levels = [c["level"] for c in res["machine"]["caches"]["sysfs"]]
    assert levels == sorted(levels)  # as sysfs numbers them (empty where there is no sysfs)
    rd = benchmark_module("render_docs")
    table = rd.render_stream(res)
    assert table.count("\n| float") == 4 and f"streams from {threshold / 2**20:.1f} MiB" in table.replace("\n", " ")


def test_the_runtime_reads_its_threshold_from_the_environment(tmp_path):
    """$RAPTOR_STREAM_BYTES sets the threshold (read once per process); a bad value is refused
    with a message naming it."""
    code = "from raptor_core import _core; print(_core.default_stream_bytes())"
    p = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                       env={**os.environ, "RAPTOR_STREAM_BYTES": "12345"}, timeout=60)
    assert p.returncode == 0 and p.stdout.strip() == "12345", p.stderr
    p = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                       env={**os.environ, "RAPTOR_STREAM_BYTES": "lots"}, timeout=60)
    assert p.returncode != 0 and "RAPTOR_STREAM_BYTES='lots' is not a byte count (an integer >= 0)" in p.stderr
