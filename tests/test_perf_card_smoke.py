"""Smoke tests of benchmarks/perf_card.py (the performance card: RK4 oscillators until done in
raptor beside the published eagle 0.7.1, Numba, JAX and the hand-written C++ lanes): one
``--quick`` run (N = 1e3, one round, every arm installed here) exits 0, which means every
arm's final x, v, k agreed with raptor's, and writes a JSON with a figure for every arm that
ran and a PNG chart. An arm that is not installed (the published venv, Numba, JAX, g++) is
skipped by the script with a message, and its test here is skipped, not failed. A
disagreement makes the exit status 1. The timings themselves are not checked.
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
CARD = ROOT / "benchmarks" / "perf_card.py"
PNG_MAGIC = b"\x89PNG\r\n\x1a\n"
ARMS = ("raptor", "published", "numba", "jax", "cpp")


def _load_card(name: str = "perf_card_under_test"):
    """benchmarks/perf_card.py as a module (importing it does no work), registered under
    ``name`` (its dataclasses look their module up)."""
    if name in sys.modules:
        return sys.modules[name]
    spec = importlib.util.spec_from_file_location(name, CARD)
    mod = importlib.util.module_from_spec(spec)
    sys.modules[name] = mod
    spec.loader.exec_module(mod)
    return mod


@pytest.fixture(scope="module")
def quick_run(tmp_path_factory):
    """One ``--quick`` run into a temporary JSON and PNG: (the finished process, the JSON)."""
    tmp = tmp_path_factory.mktemp("perf_card")
    env = dict(os.environ, RAPTOR_SKIP_NVRTC_CHECK="1", RAPTOR_CACHE_DIR=str(tmp / "cache"))
    out, png = tmp / "card.json", tmp / "card.png"
    r = subprocess.run([sys.executable, str(CARD), "--quick", "--json", str(out), "--png", str(png)],
                       capture_output=True, text=True, env=env, timeout=600)
    data = json.loads(out.read_text()) if out.exists() else None
    return r, data, png


def test_the_quick_run_agrees_and_writes_the_json_and_the_chart(quick_run):
    r, data, png = quick_run
    assert r.returncode == 0, r.stdout + r.stderr
    assert "all agree" in r.stdout
    assert data is not None and data["ok"] is True
    assert "raptor" in data["arms"]
    cells = sorted((rec["cell"], rec["dtype"]) for rec in data["records"])
    assert cells == sorted((c, d) for c in ("spread10", "spread100", "spread1000", "uniform1000") for d in ("float64", "float32"))
    assert all(rec["n"] == 1000 for rec in data["records"])
    assert data["machine"]["cores"] >= 1 and data["versions"]["python"]
    assert data["protocol"]["rounds"] == 1 and data["protocol"]["repeat"] == 3
    header = next(line for line in r.stdout.splitlines() if line.strip().startswith("N "))
    for arm in data["arms"]:
        assert f"{arm} ms" in header
    assert "re-entry" in r.stdout and "set-up" in r.stdout
    assert png.read_bytes()[:8] == PNG_MAGIC


@pytest.mark.parametrize("arm", ARMS)
def test_each_installed_arm_has_a_figure_that_agreed(quick_run, arm):
    why = _load_card().why_not(arm)
    r, data, _ = quick_run
    if why is not None:
        assert f"skipped {arm}: {why}" in r.stdout
        pytest.skip(f"{arm}: {why}")
    assert data is not None, r.stdout + r.stderr
    assert arm in data["arms"]
    for rec in data["records"]:
        entry = rec["arms"][arm]
        assert entry["ms"] > 0 and len(entry["process_ms"]) == 1
        assert entry["agree"] and all(c["k_exact"] for c in entry["checks"])
    if arm == "raptor":
        entry = data["records"][0]["arms"]["raptor"]
        assert entry["setup_ms"] > 0 and entry["reentry_us"] > 0


def test_a_disagreement_makes_the_exit_status_nonzero(monkeypatch, tmp_path, capsys):
    """Two raptor processes, compared with a tolerance nothing meets: the run reports the
    disagreement and returns 1."""
    card = _load_card("perf_card_disagreeing")
    monkeypatch.setenv("RAPTOR_SKIP_NVRTC_CHECK", "1")
    monkeypatch.setenv("RAPTOR_CACHE_DIR", str(tmp_path / "cache"))
    monkeypatch.setattr(card, "TOLERANCE", {"float64": -1.0, "float32": -1.0})
    rc = card.main(["--ns", "1000", "--cells", "spread100", "--dtypes", "float64", "--arms", "raptor",
                    "--rounds", "2", "--repeat", "1", "--json", str(tmp_path / "c.json"),
                    "--png", str(tmp_path / "c.png")])
    text = capsys.readouterr().out
    assert rc == 1, text
    assert "DISAGREES" in text
    assert json.loads((tmp_path / "c.json").read_text())["ok"] is False


def test_a_missing_published_venv_skips_its_arm(monkeypatch, tmp_path, capsys):
    """Without .venv-published the published arm is skipped with a message naming the venv,
    and the run goes on (exit 0) with the other arms."""
    card = _load_card("perf_card_unpublished")
    monkeypatch.setenv("RAPTOR_SKIP_NVRTC_CHECK", "1")
    monkeypatch.setenv("RAPTOR_CACHE_DIR", str(tmp_path / "cache"))
    monkeypatch.setattr(card, "PUBLISHED_PYTHON", str(tmp_path / "no-venv" / "bin" / "python"))
    card.arm_python.cache_clear()
    rc = card.main(["--ns", "1000", "--cells", "spread100", "--dtypes", "float64", "--arms", "raptor,published",
                    "--rounds", "1", "--repeat", "1", "--json", str(tmp_path / "c.json"),
                    "--png", str(tmp_path / "c.png")])
    text = capsys.readouterr().out
    assert rc == 0, text
    assert f"skipped published: {tmp_path / 'no-venv' / 'bin' / 'python'} not found" in text
    data = json.loads((tmp_path / "c.json").read_text())
    assert data["arms"] == ["raptor"] and "published" in data["skipped"]
    assert list(data["records"][0]["arms"]) == ["raptor"]
