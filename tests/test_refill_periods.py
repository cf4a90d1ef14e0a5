"""The refilled lanes' periods (cpp/codegen/host_driver.cpp, HostWriter::refill_body): a fused
stepping pass steps 64 lanes in periods of 8 to 32 steps, doubled after a period in which few
lanes were due, halved after one in which many were (down to 2 while at least half were), and cut to the longest allowance at a
budget's end; without AVX-512 a lane whose sample finishes in an unmasked step may be
refilled at once. Whatever the periods, every
sample must run exactly the steps a plain loop gives it. Checked here against NumPy running
the same operations one step at a time (bit for bit): samples that all run long (the periods
grow), samples that stop after 1-40 steps (they stay short), after 1-3 (periods shorter than
8, while at least half the lanes are due after each), the first two mixed, some finished on
entry, and `runner.run(max_steps=b)` called again and again with budgets that end periods
anywhere (1, 3, 7, 9, 17, 31, 33, 50, 200, 256 launches; from 8 up a run is fused passes, eagle.loop.FUSED_MIN).
Each with the machine's own code and, on an x86-64 machine with AVX2, with AVX2 code
(-march=x86-64-v3): the generated pass decides when a period is unmasked by whether the target
has AVX-512 (its CALM), so an AVX-512 machine checks both choices. The eager refill lists the
lanes that finished with AVX's sign-bit masks where the target has AVX, portably elsewhere:
its test also runs with -march=x86-64 (SSE2 only)."""

from __future__ import annotations

import platform
import re

import numpy as np
import pytest

import eagle
import eagle.loop
import eagle.plan
import hawk
from hawk import Mutable, Param, Scalar, Terminated
from raptor_core import _core

DT = 0.01


def _has_avx2() -> bool:
    if platform.machine() not in ("x86_64", "AMD64"):
        return False
    try:
        with open("/proc/cpuinfo") as f:
            return " avx2" in f.read()
    except OSError:
        return False


@pytest.fixture(params=["native", "x86-64-v3"])
def isa(request, monkeypatch):
    """The kernels' ISA: the default flags, or the same with -march=x86-64-v3 (AVX2), or
    -march=x86-64 (SSE2 only: the portable rp_lanes_set of the eager refill)."""
    if request.param != "native":
        if request.param == "x86-64-v3" and not _has_avx2():
            pytest.skip("AVX2 code needs an x86-64 machine with AVX2")
        if platform.machine() not in ("x86_64", "AMD64"):
            pytest.skip("x86-64 code needs an x86-64 machine")
        flags = re.sub(r"-march=\S+", "-march=" + request.param, _core.default_host_flags())
        monkeypatch.setenv("RAPTOR_CXXFLAGS", flags)
    return request.param


@pytest.fixture(scope="module")
def plan_cache(tmp_path_factory) -> str:
    """One kernel cache for the module: every test builds the same kernel, once per ISA (the
    flags are part of a unit's cache key), instead of compiling it again in each test's own."""
    return str(tmp_path_factory.mktemp("refill-cache"))


@hawk.kernel(steps=1)
def counted(omega: Scalar, nstop: Scalar, dt: Param, terminated: Terminated, x: Mutable[Scalar],
            v: Mutable[Scalar], k: Mutable[Scalar]):
    a = -(omega * omega) * x
    x = x + dt * v
    v = v + dt * a
    k = k + 1.0
    terminated = k >= nstop


def reference(omega, nstop, x, v, k, done, launches, dtype):
    """NumPy, one launch at a time, the kernel's operations in its order: the state after
    `launches` launches (a sample stops stepping once terminated)."""
    x, v, k, done = x.copy(), v.copy(), k.copy(), done.copy()
    dt = dtype(DT)
    for _ in range(launches):
        live = ~done
        if not live.any():
            break
        a = -(omega * omega) * x
        xn, vn, kn = x + dt * v, v + dt * a, k + dtype(1)
        x, v, k = np.where(live, xn, x), np.where(live, vn, v), np.where(live, kn, k)
        done = done | (live & (kn >= nstop))
    return x, v, k, done


def assert_state(state: dict[str, np.ndarray], want: tuple, where: str) -> None:
    """The planes x, v, k and the mask equal NumPy's ``want`` (reference's tuple), bit for bit."""
    for name, ref in zip(("x", "v", "k", "terminated"), want):
        assert np.array_equal(state[name], ref), f"{where}: {name} differs"


def fresh_samples(n: int, rng: np.random.Generator, dtype) -> tuple:
    """omega, x, v, k, done (none finished) and the state dict bound to until_done (copies)."""
    omega = rng.uniform(1.0, 3.0, n).astype(dtype)
    x = rng.uniform(-1.0, 1.0, n).astype(dtype)
    v = rng.uniform(-1.0, 1.0, n).astype(dtype)
    k = np.zeros(n, dtype)
    done = np.zeros(n, bool)
    return omega, x, v, k, done, {"x": x.copy(), "v": v.copy(), "k": k.copy(), "terminated": done.copy()}


def cases(n: int, rng: np.random.Generator) -> dict[str, np.ndarray]:
    long_ = np.full(n, 90.0)
    short = rng.integers(1, 41, n).astype(np.float64)
    mixed = np.where(rng.random(n) < 0.7, 90.0, short)
    # 1-3 steps: most lanes are due after every period, so the periods shrink below 8 (R_LOW)
    tiny = np.where(rng.random(n) < 0.9, rng.integers(1, 4, n), short).astype(np.float64)
    return {"long": long_, "short": short, "mixed": mixed, "tiny": tiny}


@pytest.mark.parametrize("dtype", [np.float64, np.float32], ids=["f64", "f32"])
@pytest.mark.parametrize("budget", [1, 3, 7, 9, 17, 31, 33, 50, 200, 256])
def test_every_budget_gives_each_sample_its_plain_loop_steps(plan_cache, isa, budget, dtype):
    (plan,) = eagle.plan.auto([counted], cache_dir=plan_cache)
    rng = np.random.default_rng(20261204 + budget)
    n = 300  # more than the 64 lanes of each of two threads' chunks
    for name, nstop in cases(n, rng).items():
        omega = rng.uniform(1.0, 3.0, n).astype(dtype)
        nstop = nstop.astype(dtype)
        x = rng.uniform(-1.0, 1.0, n).astype(dtype)
        v = rng.uniform(-1.0, 1.0, n).astype(dtype)
        k = np.zeros(n, dtype)
        done = rng.random(n) < 0.1  # finished on entry: left alone
        state = {"x": x.copy(), "v": v.copy(), "k": k.copy(), "terminated": done.copy()}
        runner = eagle.until_done([plan], max_steps=budget, omega=omega, nstop=nstop, dt=DT, **state)
        ran = 0
        while not state["terminated"].all() and ran < 200:
            runner.run(max_steps=budget)
            ran += budget
            want = reference(omega, nstop, x, v, k, done, ran, dtype)
            assert_state(state, want, f"{name}, {ran} launches in runs of {budget}")
        assert state["terminated"].all() and np.array_equal(state["k"][~done], np.minimum(nstop, 90)[~done])
        assert np.array_equal(state["k"][done], k[done])


@pytest.mark.parametrize("dtype", [np.float64, np.float32], ids=["f64", "f32"])
def test_samples_longer_than_a_pass_run_their_plain_loop_steps(plan_cache, isa, dtype):
    """Samples of up to 2.5 passes (eagle.loop.FUSED launches each): a run to the end is several
    passes, each taking every live sample again; half the samples run equally long, so most
    periods are quiet and run unmasked steps (HostWriter::refill_step) until they all finish
    in the same step, which then runs again, masked."""
    (plan,) = eagle.plan.auto([counted], cache_dir=plan_cache)
    rng = np.random.default_rng(20261205)
    n = 300
    longest = int(2.5 * eagle.loop.FUSED[-1])
    nstop = np.where(rng.random(n) < 0.5, float(longest), rng.integers(1, longest, n)).astype(dtype)
    omega, x, v, k, done, state = fresh_samples(n, rng, dtype)
    report = eagle.until_done([plan], max_steps=longest + 100, omega=omega, nstop=nstop, dt=DT, **state).run()
    assert report.done and report.steps == longest
    want = reference(omega, nstop, x, v, k, done, longest, dtype)
    assert_state(state, want, "at the end")
    assert np.array_equal(state["k"], nstop)


@pytest.mark.parametrize("isa", ["native", "x86-64-v3", "x86-64"], indirect=True)
@pytest.mark.parametrize("dtype", [np.float64, np.float32], ids=["f64", "f32"])
def test_lanes_finishing_inside_unmasked_periods(plan_cache, isa, dtype):
    """Enough samples to keep every lane full, each running 200-400 steps: about one lane in
    five finishes per step, so periods run unmasked and lanes finish while the others go on:
    the step runs again, masked (after a quiet period), or, in AVX2 code after a calm one,
    the finished lanes write their samples back and take the next ones at once
    (HostWriter::eager_refill). Bit for bit against NumPy, with budgets that end passes
    anywhere."""
    (plan,) = eagle.plan.auto([counted], cache_dir=plan_cache)
    rng = np.random.default_rng(20261206)
    n = 20_000
    nstop = rng.integers(200, 401, n).astype(dtype)
    omega, x, v, k, done, state = fresh_samples(n, rng, dtype)
    runner = eagle.until_done([plan], max_steps=500, omega=omega, nstop=nstop, dt=DT, **state)
    ran = 0
    for budget in (137, 263):  # then the rest
        runner.run(max_steps=budget)
        ran += budget
        want = reference(omega, nstop, x, v, k, done, ran, dtype)
        assert_state(state, want, f"after {ran} launches")
    assert runner.run().done
    want = reference(omega, nstop, x, v, k, done, 400, dtype)
    assert_state(state, want, "at the end")


def test_the_generated_pass_says_its_periods():
    """A pass of 256 steps grows its periods to 32, one of 16 steps to 16, one of 8 stays at 8;
    each shrinks to 2 while most lanes are due."""
    for steps, longest in ((256, 32), (16, 16), (8, 8)):
        src = counted.with_steps(steps).cpp()
        assert f"64 lanes, refilled every 8 to {longest} steps" in src, steps
        assert f"R_LOW = 2, R_MIN = 8, R_MAX = {longest};" in src
        assert "constexpr int CALM = 0;" in src and "constexpr int CALM = 1;" in src
