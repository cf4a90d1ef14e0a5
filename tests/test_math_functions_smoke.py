"""Smoke test of benchmarks/math_functions.py (raptor's own pow, hypot, tan, asin and acos in a
kernel beside Numba's and NumPy's): one small run (N = 4096, one round; Numba where installed)
exits 0, which means every arm's result was within 4 ulps of NumPy's, and writes a JSON with a
time for every arm, function, dtype and N, which benchmarks/render_docs.py renders. The
timings themselves are not checked.
"""

from __future__ import annotations

import importlib.util
import json
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
SCRIPT = ROOT / "benchmarks" / "math_functions.py"


def test_a_small_run_agrees_and_renders(tmp_path):
    systems = ["raptor", "numpy"] + (["numba"] if importlib.util.find_spec("numba") else [])
    out = tmp_path / "math_functions.json"
    r = subprocess.run([sys.executable, str(SCRIPT), "--ns", "4096", "--rounds", "1",
                        "--systems", ",".join(systems), "--json", str(out)],
                       capture_output=True, text=True, timeout=600)
    assert r.returncode == 0, r.stderr[-4000:]
    res = json.loads(out.read_text())
    assert res["systems"] == systems
    cells = {(row["function"], row["dtype"], row["n"]) for row in res["rows"]}
    assert cells == {(f, d, 4096) for f in ("pow", "hypot", "tan", "asin", "acos")
                     for d in ("float64", "float32")}
    for row in res["rows"]:
        assert set(row["us"]) == set(systems) and all(v > 0 for v in row["us"].values())
    spec = importlib.util.spec_from_file_location("render_docs_under_test",
                                                  ROOT / "benchmarks" / "render_docs.py")
    rd = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(rd)
    table = rd.render_math(res)
    assert "| `pow` | float64 | 2^12 |" in table and "NumPy / raptor" in table


def test_systems_without_raptor_or_unknown_are_refused():
    """Every time is shown over raptor's, so a run without raptor, or with a system the script
    does not know, stops before any work with argparse's usage error (exit status 2)."""
    for systems, unknown in (("numba,numpy", ""), ("raptor,nump", "nump unknown; ")):
        r = subprocess.run([sys.executable, str(SCRIPT), "--systems", systems],
                           capture_output=True, text=True, timeout=120)
        assert r.returncode == 2
        assert (f"error: --systems: {unknown}the systems are raptor, numba, numpy, raptor among them "
                "(every time is shown over raptor's)") in r.stderr
