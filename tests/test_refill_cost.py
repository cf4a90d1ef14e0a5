"""Smoke test of benchmarks/refill_cost.py (where the refilled lanes' time goes): a small run
checks, inside the script, its driver's results bit for bit against eagle.until_done and its
counting build against the plain one; here its JSON is checked against NumPy's count of the
sample-steps, and the instrumentation's refusal of a kernel without its hooks. The timings
themselves are not checked (a benchmark, not a timed test)."""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

ROOT = Path(__file__).resolve().parents[1]
SCRIPT = ROOT / "benchmarks" / "refill_cost.py"


@pytest.mark.skipif(shutil.which("g++") is None, reason="g++ not found (the harness is compiled with it)")
def test_a_small_run_counts_every_sample_step(tmp_path, benchmark_module):
    out = tmp_path / "refill.json"
    n = 3000
    r = subprocess.run([sys.executable, str(SCRIPT), "--n", str(n), "--rounds", "1", "--repeat", "1", "--warmup", "0",
                        "--json", str(out)], capture_output=True, text=True, timeout=600)
    assert r.returncode == 0, r.stdout + r.stderr
    res = json.loads(out.read_text())
    mod = benchmark_module("refill_cost")
    assert res["benchmark"] == "refill_cost" and res["threads"] == 1 and res["n"] == n
    assert {(row["dtype"], row["cell"]) for row in res["rows"]} == {
        (d, c) for d in ("float64", "float32") for c in mod.CELLS}
    for row in res["rows"]:
        s = mod.perf_card.sample_steps_cap(row["cell"])
        nstop = mod.perf_card.make_inputs(n, row["cell"])["nstop"]
        assert row["sample_steps"] == np.minimum(nstop, s).sum()  # every step of every sample, counted by k
        assert row["finished"] == n  # nstop <= S: each sample finishes in the call
        # 64 lanes, periods of at most 32 steps, a step run again masked at most once
        assert row["sample_steps"] <= row["lane_steps"] <= 2 * 64 * 32 * row["periods"]
        assert row["periods"] > 0 and 0 < row["due"] <= n  # AVX2 code also refills within periods
        assert row["ticks_stepping"] > 0 and row["ticks_between"] > 0
        assert sum(row["split_ms"].values()) == pytest.approx(row["ms"], rel=1e-9)
        assert row["ms"] == pytest.approx(row["perfect_ms"] * row["compaction"], rel=1e-9)
    for dtype in ("float64", "float32"):
        (dense,) = [row for row in res["rows"] if row["dtype"] == dtype and row["cell"] == "uniform1000"]
        assert dense["compaction"] == 1.0
    header = next(line for line in r.stdout.splitlines() if line.startswith("dtype"))
    assert header.split() == ["dtype", "cell", "ms", "perfect", "compact.", "lane/sample-steps", "periods", "steps",
                              "idle", "between", "ns/sample"]
    assert res["fused_steps"] == 1024  # eagle.loop.FUSED of a one-step kernel, as until_done runs it


def test_a_kernel_without_the_hooks_is_refused_naming_them(benchmark_module):
    mod = benchmark_module("refill_cost")
    with pytest.raises(ValueError) as e:
        mod.instrument("// step r: st_ -> pp_\n#pragma GCC ivdep\nfor (;;) {}\n")
    assert str(e.value).startswith("refill_cost: the generated kernel has 1 step loops after '// step r' comments "
                                   "(expected 2 or more) and not exactly one of each of ['for (int j = 0; j < W; ++j) "
                                   "take(j, 0, false);', 'while (occupied > 0) {', 'step += R;', 'const int ran_r = R;', "
                                   "'a->finished = finished;']")
    assert str(e.value).endswith("codegen/host_driver.cpp's refill_body changed; update HOOKS")
