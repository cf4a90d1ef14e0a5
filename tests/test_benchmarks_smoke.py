"""Smoke tests of benchmarks/peers.py (raptor beside Numba, Warp and plain JAX): a tiny
``--quick`` run on raptor (host launch and inside jax.jit) and plain JAX prints the table and
writes its JSON and the PNG plots; a peer that is not installed is skipped with the install command; the
table's ratios are peer time over raptor's on the same side. The timings themselves are not
checked (a benchmark, not a timed test); every system's numbers are checked against NumPy
inside peers.py before they are timed, so a run that exits 0 has agreed with the reference.
"""

from __future__ import annotations

import importlib.util
import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
PEERS = ROOT / "benchmarks" / "peers.py"
CASES = ("drag", "osc", "pend")  # benchmarks/_peers/cases.py's, every one run by default
PNG_MAGIC = b"\x89PNG\r\n\x1a\n"


def _needs(*modules: str) -> None:
    for m in modules:
        if importlib.util.find_spec(m) is None:
            pytest.skip(f"{m} not installed")


def test_quick_run_prints_the_table_and_writes_the_plots(tmp_path):
    _needs("jax", "matplotlib")
    out = tmp_path / "out"
    env = dict(os.environ, RAPTOR_SKIP_NVRTC_CHECK="1")
    r = subprocess.run([sys.executable, str(PEERS), "--quick", "--systems", "raptor,raptor-jax,jax", "--n-max", "11",
                        "--repeat", "2", "--min-round", "0.001", "--out", str(out), "--json", str(tmp_path / "peers.json")],
                       capture_output=True, text=True, env=env, timeout=600)
    assert r.returncode == 0, r.stdout + r.stderr
    written = json.loads((tmp_path / "peers.json").read_text())
    assert written["benchmark"] == "peers" and written["systems"] == ["raptor", "raptor-jax", "jax"]
    assert {(x["system"], x["case"], x["dtype"], x["n"]) for x in written["records"]} == {
        (s, c, d, 1 << 10) for s in ("raptor", "raptor-jax", "jax") for c in CASES for d in ("float64", "float32")}
    assert all(x["seconds"] > 0 for x in written["records"])
    lines = r.stdout.splitlines()
    header = next(i for i, line in enumerate(lines) if line.startswith("case"))
    assert lines[header].split()[:3] == ["case", "dtype", "N"]
    assert "raptor us" in lines[header] and "raptor-jit us" in lines[header] and "jax.numpy" in lines[header]
    rows = [line.split() for line in lines[header + 1:header + 1 + 2 * len(CASES)]]
    assert sorted((row[0], row[1], row[2]) for row in rows) == sorted(
        (c, d, "2^10") for c in CASES for d in ("float64", "float32"))
    for row in rows:
        assert float(row[3]) > 0 and float(row[4]) > 0  # raptor's times, microseconds
        assert row[5].endswith("x") and float(row[5][:-1]) > 0  # jax.numpy over raptor in jit
    assert "load average" in r.stdout
    pngs = sorted(p.name for p in out.iterdir())
    assert pngs == sorted(f"peers_{c}_{d}.png" for c in CASES for d in ("float32", "float64"))
    for p in out.iterdir():
        assert p.read_bytes()[:8] == PNG_MAGIC


def test_a_missing_peer_is_skipped_with_its_install_command(monkeypatch, tmp_path, capsys, benchmark_module):
    _needs("matplotlib")
    peers = benchmark_module("peers")
    real = importlib.util.find_spec
    monkeypatch.setattr(importlib.util, "find_spec", lambda name, *a: None if name in ("numba", "warp") else real(name, *a))
    assert peers.missing("numba") == "numba: numba not installed: pip install 'raptor[bench]'"
    assert peers.missing("warp-jax") == "warp-jax: warp-lang not installed: pip install 'raptor[bench]'"
    assert peers.missing("raptor") is None
    monkeypatch.setenv("RAPTOR_SKIP_NVRTC_CHECK", "1")
    rc = peers.main(["--systems", "raptor,numba,warp", "--cases", "drag", "--dtypes", "float64", "--n-max", "10",
                     "--repeat", "1", "--min-round", "0.001", "--out", str(tmp_path), "--json", str(tmp_path / "p.json")])
    text = capsys.readouterr().out
    assert rc == 0, text
    assert "skipped numba: numba not installed: pip install 'raptor[bench]'" in text
    assert "skipped warp: warp-lang not installed: pip install 'raptor[bench]'" in text
    header = next(line for line in text.splitlines() if line.startswith("case"))
    assert "raptor us" in header and "Numba" not in header and "Warp" not in header
    assert (tmp_path / "peers_drag_float64.png").exists()


def test_the_table_gives_each_peer_over_raptor_on_its_side(benchmark_module):
    peers = benchmark_module("peers")
    from _peers import report

    rec = [dict(system=s, case="drag", dtype="float64", n=1 << 20, seconds=t, side="")
           for s, t in (("raptor", 2e-3), ("numba", 3e-3), ("raptor-jax", 4e-3), ("jax", 1e-3))]
    lines = report.table(rec, ["raptor", "numba", "raptor-jax", "jax"]).splitlines()
    assert lines[0].split()[3:] == ["raptor", "us", "Numba", "raptor-jit", "us", "jax.numpy"]
    assert lines[1].split() == ["drag", "float64", "2^20", "2000.0", "1.50x", "4000.0", "0.25x"]
    assert peers.HOST_SYSTEMS == report.HOST and peers.JAX_SYSTEMS == report.JAX


def test_a_host_difference_within_the_process_spread_is_marked(benchmark_module):
    benchmark_module("peers")
    from _peers import report

    assert report.within_spread(0.95, 1.06, 1.02) and report.within_spread(1.05, 1.02, 1.06)
    assert not report.within_spread(0.90, 1.06, 1.02) and not report.within_spread(0.95, None, None)
    rec = [dict(system="raptor", case="drag", dtype="float64", n=1 << 18, seconds=4e-4, spread=1.08),
           dict(system="numba", case="drag", dtype="float64", n=1 << 18, seconds=3.8e-4, spread=1.03),
           dict(system="raptor", case="drag", dtype="float64", n=1 << 20, seconds=2e-3, spread=1.02),
           dict(system="numba", case="drag", dtype="float64", n=1 << 20, seconds=2.4e-3, spread=1.05)]
    lines = report.table(rec, ["raptor", "numba"]).splitlines()
    assert lines[1].split() == ["drag", "float64", "2^18", "400.0", "0.95x~"]  # within raptor's 1.08x
    assert lines[2].split() == ["drag", "float64", "2^20", "2000.0", "1.20x"]  # beyond both spreads
    assert lines[-1] == "widest spread between one system's processes: Numba 1.05x, raptor 1.08x"


def test_the_cpp_stepping_baseline_steps_as_until_done_does(tmp_path):
    """benchmarks/stepping.py's hand-written C++ loop (benchmarks/baselines/osc_loop.cpp) takes
    the same steps and gives the same numbers (1e-12) as eagle.until_done on 3,000
    oscillators; against_cpp asserts both before it times anything."""
    _needs("jax")
    code = f"""
import sys, tempfile
sys.path.insert(0, {str(ROOT / 'benchmarks')!r})
import numpy as np, eagle.plan, stepping
stepping.N = 3000
rng = np.random.default_rng(1)
start = dict(x=rng.uniform(0.5, 1.5, 3000), v=rng.uniform(-0.2, 0.3, 3000), t=np.zeros(3000),
             corr=np.zeros(3000), t_final=rng.uniform(0.5, 2.0, 3000))
(plan,) = eagle.plan.auto([stepping.osc], targets=("host",), cache_dir={str(tmp_path / 'cache')!r})
with tempfile.TemporaryDirectory() as work:
    t_eagle, t_cpp = stepping.against_cpp(plan, start, 2, work, rounds=1)
print("ok", t_eagle > 0 and t_cpp > 0)
"""
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=600)
    assert out.returncode == 0, out.stderr[-3000:]
    assert out.stdout.strip().endswith("ok True"), out.stdout


def test_triad_benchmark_runs_and_prints_both_bandwidths():
    """benchmarks/triad.py at a small N: the triad builds and runs, the launch agrees with
    NumPy (checked inside before timing), and the ratio line is printed."""
    env = dict(os.environ, RAPTOR_SKIP_NVRTC_CHECK="1")
    r = subprocess.run([sys.executable, str(ROOT / "benchmarks" / "triad.py"), "--log2n", "14"],
                       capture_output=True, text=True, env=env, timeout=600)
    assert r.returncode == 0, r.stdout + r.stderr
    assert "STREAM-like triad" in r.stdout and "GB/s" in r.stdout
    ratio = next(line for line in r.stdout.splitlines() if line.startswith("launch / triad bandwidth"))
    assert float(ratio.split(":")[1].split()[0]) > 0


def test_a_host_worker_answers_each_request_with_one_line(monkeypatch):
    """peers.py's host worker (``_peers.host.serve``): a prepared item is checked against
    NumPy and timed round by round; a bad request or an unknown case gets an error reply
    naming it, and the worker goes on answering."""
    import io
    import json

    monkeypatch.setattr(sys, "path", [str(ROOT / "benchmarks")] + list(sys.path))
    from _peers.host import serve

    requests = [
        {"cmd": "round"},  # nothing prepared yet
        {"cmd": "prepare", "case": "osc", "dtype": "float32", "n": 1024},
        {"cmd": "round"},
        {"cmd": "prepare", "case": "nope", "dtype": "float64", "n": 64},
        {"cmd": "prepare", "case": "drag", "dtype": "float64", "n": 256},
        {"cmd": "round"},
    ]
    out = io.StringIO()
    serve("raptor", 0.001, io.StringIO("".join(json.dumps(r) + "\n" for r in requests)), out)
    replies = [json.loads(line) for line in out.getvalue().splitlines()]
    assert len(replies) == len(requests)
    assert "unexpected request" in replies[0]["error"]
    assert replies[1]["number"] >= 1 and replies[2]["seconds"] > 0
    assert "unknown case 'nope'" in replies[3]["error"]
    assert replies[4]["number"] >= 1 and replies[5]["seconds"] > 0


def test_settle_waits_for_this_process_threads_to_go_idle(monkeypatch):
    """peers.py's rounds start on an idle machine: ``_peers.timing.settle`` returns only once a
    thread of this process that still spins (as a pool's worker does after its job) has
    stopped, and at once when nothing runs."""
    import threading
    import time

    monkeypatch.setattr(sys, "path", [str(ROOT / "benchmarks")] + list(sys.path))
    from _peers.timing import SETTLE_MAX_S, settle

    spin_s = 0.05
    started = threading.Event()
    ended: list[float] = []

    def spin() -> None:
        started.set()
        t0 = time.perf_counter()
        while time.perf_counter() - t0 < spin_s:
            pass
        ended.append(time.perf_counter())

    worker = threading.Thread(target=spin)
    worker.start()
    started.wait()
    waited = settle()
    returned = time.perf_counter()
    worker.join()
    assert ended[0] <= returned  # it returned after the spinning stopped, not during it
    assert spin_s * 0.5 <= waited < SETTLE_MAX_S
    assert settle() < 0.05  # idle: one or a few windows of 2 ms
