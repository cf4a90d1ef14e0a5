"""The order of sums over samples on the host (docs/language.md "Sums over samples"): a
launch's chunks (runtime/launch.cpp), in each chunk 16 lanes (sample s into lane s % 16, each
lane in sample order), the lanes added in a fixed tree, the chunks in chunk order. The order
depends on the launch alone, so the bits do not depend on the machine's vector width.

1. A launch's hawk.sum equals, bit for bit, a NumPy restatement of that order (``lane_sum``),
   in float64 and float32, under where= and a Terminated mask, at sizes that end chunks,
   blocks (256 samples) and lanes at odd places.
2. Builds of one kernel for x86-64 (SSE2), x86-64-v2, x86-64-v3 (AVX2), x86-64-v4 (AVX-512) and
   the default flags give the same bits (each ISA this machine can run): a hawk.sum, and an
   adjoint kernel's Param cotangents (the gradient of a reverse pass).
3. A Guard(active_set=True) launch (through the index map of live samples) equals the masked
   launch over every sample bit for bit where both are one chunk: the lanes follow the
   sample's index, not its place in the map.
4. The reference interpreter adds in the same order (ir/combine.hpp): its sums equal
   ``lane_sum``'s, so the differential fuzzer compares launches' sums with it bit for bit.
5. A kernel of 40 sums (an adjoint's Param cotangents), stored in smaller blocks, equals the
   interpreter bit for bit.
"""

from __future__ import annotations

import re

import numpy as np
import pytest

import hawk
import hawk.math as hm
from hawk import Guard, Mutable, Param, Scalar, Terminated

from conftest import plan_kernels
from raptor_core import _core

K = 0.7


@hawk.kernel
def stats(x: Scalar, k: Param, done: Terminated, e: Mutable[Param], pos: Mutable[Param], y: Mutable[Scalar]):
    y = k * x
    e = hawk.sum(0.5 * k * x * x - x)
    pos = hawk.sum(x, where=x > 0.0)
    done = x > 2.0


@hawk.kernel(guard=Guard(active_set=True))
def stats_active(x: Scalar, k: Param, done: Terminated, e: Mutable[Param], pos: Mutable[Param], y: Mutable[Scalar]):
    y = k * x
    e = hawk.sum(0.5 * k * x * x - x)
    pos = hawk.sum(x, where=x > 0.0)
    done = x > 2.0


@hawk.kernel
def model(x: Scalar, a: Param, b: Param, c: Param, f: Mutable[Scalar]):
    f = a * x * x + b * hm.sin(x) + c * hm.exp(-x * x)


def lane_sum(terms: np.ndarray, sum_entries: int) -> float:
    """The documented order, restated: chunks of max(4096, ceil(n / 16), sum_entries) samples
    rounded up to 64 (launch.cpp); in a chunk, lane s % 16 adds its samples in order from -0.0,
    then lane j + 8, j + 4, j + 2, j + 1 into lane j; the chunk's partial (0.0 + the tree) added
    in chunk order onto 0.0."""
    n = len(terms)
    chunk = max(4096, -(-n // 16), sum_entries)
    chunk = -(-chunk // 64) * 64
    total = np.float64(0.0)
    for c0 in range(0, n, chunk):
        t = terms[c0:c0 + chunk].astype(np.float64)
        t = np.concatenate([t, np.full((-len(t)) % 16, -0.0)]).reshape(-1, 16)
        lanes = np.add.accumulate(t, axis=0)[-1].copy()  # sequential, row after row
        for w in (8, 4, 2, 1):
            lanes[:w] = lanes[:w] + lanes[w:2 * w]
        total = total + (np.float64(0.0) + lanes[0])
    return float(total)


def _values(n: int, dtype) -> tuple[np.ndarray, np.ndarray]:
    rng = np.random.default_rng(n + 11)
    x = (rng.standard_normal(n) * 1.5).astype(dtype)
    done = rng.random(n) < 0.2  # a fifth of the samples finished before the launch
    return x, done


def _launch(plan, x: np.ndarray, done: np.ndarray) -> tuple[float, float]:
    dt = x.dtype.type
    e, pos = np.zeros(1, dt), np.zeros(1, dt)
    b = plan.bind(x=x, k=K, done=done.copy(), e=e, pos=pos, y=np.zeros_like(x))
    b.launch()
    return float(e[0]), float(pos[0])


def _expected(x: np.ndarray, done: np.ndarray) -> tuple[float, float]:
    """The kernel's terms in its dtype and its operations' order, 0.0 for a sample left out."""
    dt = x.dtype.type
    k = dt(K)
    live = ~done
    e_terms = np.where(live, ((dt(0.5) * k) * x) * x - x, dt(0.0))
    pos_terms = np.where(live & (x > dt(0.0)), x, dt(0.0))
    e, pos = lane_sum(e_terms, 2), lane_sum(pos_terms, 2)
    return float(dt(e)), float(dt(pos))


@pytest.mark.parametrize("dtype", [np.float64, np.float32])
@pytest.mark.parametrize("n", [1, 15, 17, 255, 257, 1000, 4097, 70_001, 300_000])
def test_sums_follow_the_documented_order(tmp_path, dtype, n):
    plan = plan_kernels([stats], str(tmp_path))["stats"]
    x, done = _values(n, dtype)
    got = _launch(plan, x, done)
    want = _expected(x, done)
    assert [v.hex() for v in got] == [v.hex() for v in want], (n, np.dtype(dtype).name)


def _can_run(march: str) -> bool:
    """Whether this machine runs code built with -march=`march`."""
    try:
        with open("/proc/cpuinfo") as f:
            flags = set(next(line for line in f if line.startswith("flags")).split())
    except (OSError, StopIteration):
        return False
    need = {
        "x86-64": set(),
        "x86-64-v2": {"sse4_2", "popcnt", "ssse3"},
        "x86-64-v3": {"avx2", "fma", "bmi2", "movbe"},
        "x86-64-v4": {"avx512f", "avx512bw", "avx512cd", "avx512dq", "avx512vl"},
    }[march]
    return need <= flags


ISAS = ["x86-64", "x86-64-v2", "x86-64-v3", "x86-64-v4"]


def _run_for(march: str | None, tmp_path, monkeypatch) -> list[str]:
    """hawk.sum and Param cotangents, built for -march=`march` (None: the default flags)."""
    if march is not None:
        monkeypatch.setenv("RAPTOR_CXXFLAGS", re.sub(r"-march=\S+", "-march=" + march, _core.default_host_flags()))
    else:
        monkeypatch.delenv("RAPTOR_CXXFLAGS", raising=False)
    adj = model.adjoint(["a", "b", "c"])
    plans = plan_kernels([stats, adj], str(tmp_path / (march or "default")))
    out = []
    for dtype in (np.float64, np.float32):
        for n in (1000, 70_001):
            x, done = _values(n, dtype)
            out += [v.hex() for v in _launch(plans["stats"], x, done)]
            arrays = {"x": x, "a": 0.3, "b": -1.1, "c": 2.0}
            for s in adj.slots:
                if s.name in arrays:
                    continue
                if s.kind == "param_sum":
                    arrays[s.name] = np.zeros(1, dtype)
                elif s.kind == "param":
                    arrays[s.name] = 0.5
                else:  # the output's cotangent, a plane
                    arrays[s.name] = np.random.default_rng(n).standard_normal(n).astype(dtype)
            plans[adj.name].bind(**arrays).launch()
            out += [float(arrays[s.name][0]).hex() for s in adj.slots if s.kind == "param_sum"]
    return out


def test_same_bits_on_every_isa(tmp_path, monkeypatch):
    if not _can_run("x86-64"):
        pytest.skip("builds for x86-64 ISAs need an x86-64 machine")
    ran = {"default flags": _run_for(None, tmp_path, monkeypatch)}
    assert len(ran["default flags"]) == 2 * 2 * (2 + 3)
    for march in ISAS:
        if _can_run(march):
            ran[march] = _run_for(march, tmp_path, monkeypatch)
    assert len(ran) >= 3, sorted(ran)  # SSE2 and x86-64-v2 run on every x86-64 machine we use
    first = ran["default flags"]
    for march, bits in ran.items():
        assert bits == first, (march, bits, first)


@pytest.mark.parametrize("dtype", [np.float64, np.float32])
def test_active_set_launch_equals_the_masked_launch(tmp_path, dtype):
    plans = plan_kernels([stats, stats_active], str(tmp_path))
    x, done = _values(3000, dtype)
    assert 0 < done.sum() < len(done)
    got = _launch(plans["stats_active"], x, done)
    want = _launch(plans["stats"], x, done)
    assert [v.hex() for v in got] == [v.hex() for v in want]
    assert [v.hex() for v in want] == [v.hex() for v in _expected(x, done)]


@pytest.mark.parametrize("n", [17, 70_001])
def test_interpreter_follows_the_documented_order(n):
    """The reference interpreter (ir/interp.cpp, which the differential fuzzer compares launches
    with bit for bit) adds in the same order: its float64 sums equal ``lane_sum``'s."""
    x, done = _values(n, np.float64)
    outs = stats._core.interpret(n, {"x": list(x), "k": [K]}, list(done.astype(np.uint8)))[0]
    got = float(outs["e"][0]), float(outs["pos"][0])
    assert [v.hex() for v in got] == [v.hex() for v in _expected(x, done)]


def test_many_sums_in_smaller_blocks_equal_the_interpreter(tmp_path):
    """An adjoint with 40 Param cotangents stores 48 samples' terms per block (the buffers stay
    within 16 KB of stack; codegen/host_driver.cpp sum_block), and still equals the reference
    interpreter bit for bit, both dtypes, at three chunks."""
    import importlib.util

    names = [f"p{i}" for i in range(40)]
    terms = " + ".join(f"{p} * {('x', 'x * x', 'hm.sin(x)')[i % 3]}" for i, p in enumerate(names))
    src = (
        "import hawk\nimport hawk.math as hm\nfrom hawk import Mutable, Param, Scalar\n\n\n"
        f"@hawk.kernel\ndef many(x: Scalar, {', '.join(n + ': Param' for n in names)}, f: Mutable[Scalar]):\n"
        f"    f = {terms}\n"
    )
    path = tmp_path / "many_params.py"
    path.write_text(src)
    spec = importlib.util.spec_from_file_location("many_params", path)
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    adj = mod.many.adjoint(names)
    assert "constexpr int64_t sum_block = 48;" in adj.cpp("float64")
    plan = plan_kernels([adj], str(tmp_path / "c"))[adj.name]
    n = 10_001
    rng = np.random.default_rng(7)
    x, ct = rng.standard_normal(n), rng.standard_normal(n)
    pvals = {p: float(v) for p, v in zip(names, rng.standard_normal(40))}
    sums = [s.name for s in adj.slots if s.kind == "param_sum"]
    assert len(sums) == 40
    ct_name = next(s.name for s in adj.slots if s.kind == "plane" and s.name != "x")
    want = adj._core.interpret(n, {"x": list(x), ct_name: list(ct), **{p: [v] for p, v in pvals.items()}})[0]
    f32 = adj._core.interpret(n, {"x": list(x.astype(np.float32)), ct_name: list(ct.astype(np.float32)),
                                  **{p: [v] for p, v in pvals.items()}}, float32=True)[0]
    for dtype, ref in ((np.float64, want), (np.float32, f32)):
        arrays = {"x": x.astype(dtype), ct_name: ct.astype(dtype), **pvals, **{s: np.zeros(1, dtype) for s in sums}}
        plan.bind(**arrays).launch()
        for s in sums:
            assert float(arrays[s][0]).hex() == float(dtype(ref[s][0])).hex(), (s, np.dtype(dtype).name)
