"""Performance card: damped oscillators stepped with classical RK4 until each reaches its own
step count, in raptor's ``eagle.until_done`` beside the published eagle 0.7.1, Numba, JAX and a
hand-written C++ baseline (the compute limit of this machine).

    python benchmarks/perf_card.py                      # every cell: N = 1e3 .. 1e6, both dtypes
    python benchmarks/perf_card.py --quick              # N = 1e3, one round, 3 repeats (a smoke run)
    python benchmarks/perf_card.py --ns 100000 --dtypes float64
    python benchmarks/perf_card.py --arms raptor,cpp --cells uniform1000 --json /tmp/card.json
    python benchmarks/perf_card.py --arms raptor,cpp --march x86-64-v3  # AVX2 code on any x86-64-v3 machine

The workload: x'' + 2 zeta omega x' + omega^2 x = 0, one classical RK4 step of dt = 0.01 at a
time (``card_rk4`` of benchmarks/kernels.py), each sample counting its steps in k and done when
k >= nstop. Inputs per sample, from ``numpy.random.default_rng([SEED, N, S, dist == "spread"])``
in this order: omega ~ U(1, 10), zeta ~ U(0.01, 0.2), x0 ~ U(-1, 1), v0 ~ U(-1, 1); for
"spread S" nstop = ceil(exp(U(ln(S/100), ln(S)))) clipped to [max(1, S//100), S], for
"uniform S" nstop = S; in both nstop[0] = S. Cells: spread100, spread1000, uniform1000 at
N = 1e3, 1e4, 1e5, 1e6, float64 and float32 (the float32 cells cast every input to float32),
as on the published card, and spread10, which it does not have: samples of 1 to 10 steps (half
of them one, 2.7 on average), where taking each sample and writing it back costs more than
its steps.

Arms, each host system in worker processes of its own (``--worker``), so no two thread pools
share a process:

- ``raptor``: ``eagle.plan.auto([card_rk4])`` and ``eagle.until_done([plan], max_steps=S, ...)``;
  ``runner.run()`` is timed. Also measured: the wall of the ``until_done(...)`` call (set-up;
  the first in the process, and a repeat over the same arrays) and of ``runner.run(max_steps=1)``
  on a finished runner (re-entry, microseconds per call).
- ``published``: the published raptor-eagle/raptor-hawk 0.7.1 in .venv-published (skipped when
  that venv is absent): the same kernel written in its hawk as its users do, ``@hawk.kernel``
  with no ``steps=`` (its automatic kernel, k steps per launch; no ``hawk.func`` there: the
  acceleration is a plain Python helper the tracer inlines), built with
  ``eagle.deploy(kernel, targets=("host",), scalar_type=dtype)`` and run by its own
  ``eagle.until_done(plan, max_steps=S, **planes)``; ``runner.run()`` is timed (after warm-up
  runs until its RunReport is neither ``probe`` nor ``timed``, as its docs advise).
- ``numba``: ``@njit(parallel=True, fastmath=False)``, ``prange`` over samples, a loop per
  sample running RK4 to its own nstop (the hawk kernel's operations in its order).
- ``jax``: ``jax.jit(jax.vmap(per-sample lax.while_loop))``, jax_enable_x64 on (float32 inputs
  stay float32); N <= 1e5 unless ``--all-jax`` (a run at 1e6, uniform1000, takes about 4 s).
- ``cpp``: benchmarks/baselines/card_lanes.cpp, built with g++ at start (skipped without g++):
  SIMD lanes refilled from the next unfinished sample, as many threads as raptor's pool,
  dynamic chunks, the kernel's IEEE operations in its order (no FMA), through ctypes.

Protocol: for each cell, ``ROUNDS`` rounds; in each round every arm, in an order rotating from
round to round, runs one fresh process that builds (untimed), warms up (``WARMUP`` untimed
runs, and more until they have taken ``WARM_MIN_S``: a fresh process's threads may share a
core at first), times ``REPEAT`` runs (the planes reset, untimed, before each) and reports the median.
A process whose runs are long stops early (``--budget``): one warm-up once they take a
quarter of the budget, ``MIN_TIMED`` timed runs once they take the budget. Workers run with
OPENBLAS_NUM_THREADS=1 (no arm calls BLAS; NumPy's OpenBLAS thread otherwise spins for 0.1 s
after import, beside the first runs). An arm's figure for the cell is the median over its
processes. Every process's final state is checked: k ==
min(nstop, S) exactly, and x, v against the first raptor process's (the first arm's when
raptor is not run): |a - b| <= tol * max(1, max |b|) over the plane, tol 1e-12 in float64
(the same operations in the same order: the C++ lanes and Numba agree bit for bit, JAX and
the published eagle within a few ulps, 5e-14 here) and 1e-5 in float32. A disagreement or a
failed worker is printed and makes the exit status 1.

Prints one table (ms per arm, each other system's time over raptor's, raptor's throughput over
the C++ baseline's, and for spread cells the "compaction" ratio: raptor's time over the time
its dense throughput, from the uniform1000 cell at the same N and dtype, would take for the
cell's sample-steps; 1.0 means that finished samples cost nothing; and "other CPU", the share
of the machine's CPU time that other processes, or the hypervisor, took while the cell ran: a
cell with much of it is not a clean measurement), then raptor's set-up and re-entry costs. Writes every figure (per-process medians and runs too), the machine and the
versions to ``--json`` (default benchmarks/results/perf_card.json) and a log-scale chart to
``--png`` (default benchmarks/results/perf_card.png). A default run took 12 minutes on an idle
2-core machine (342 worker processes; Numba's runs at N = 1e6 take a third of it), more when
other work shares the cores: the load average is printed and kept in the JSON. Do not edit
this file during a run: the published hawk re-reads a kernel's source from disk.
Start reading at ``main``.
"""

from __future__ import annotations

import argparse
import ctypes
import datetime
import functools
import importlib.util
import json
import os
import platform
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))
if HERE not in sys.path:  # machine_info, beside this file
    sys.path.insert(0, HERE)
from machine_info import cpu_info, raptor_revision  # noqa: E402
ROOT = os.path.dirname(HERE)
BASELINE = os.path.join(HERE, "baselines", "card_lanes.cpp")
PUBLISHED_PYTHON = os.path.join(ROOT, ".venv-published", "bin", "python")
RESULTS = os.path.join(HERE, "results")

SEED = 20261001
DT = 0.01
NS = (1_000, 10_000, 100_000, 1_000_000)
CELLS: dict[str, tuple[str, int]] = {"spread10": ("spread", 10), "spread100": ("spread", 100),
                                     "spread1000": ("spread", 1000), "uniform1000": ("uniform", 1000)}
DTYPES = ("float64", "float32")
ARMS = ("raptor", "published", "numba", "jax", "cpp")
ROUNDS = 3  # fresh processes per arm and cell
REPEAT = 5  # timed runs per process (its median is reported)
WARMUP = 2  # untimed runs per process before the timed ones
# A process whose runs are long stops early: it warms up once when its warm-up runs have taken
# BUDGET_S / 4, and times MIN_TIMED runs at least, no more once they have taken BUDGET_S (at
# N = 1e6, uniform1000, a numba run takes about 8 s and the published eagle's about 2 s).
BUDGET_S = 4.0
MIN_TIMED = 3
EXTRA_WARMUP = 10  # more warm-up runs, at most, while an arm says its last run was not steady
# Warm-up runs go on until they have taken WARM_MIN_S at least: in its first milliseconds a
# fresh process's threads may share one core (on the 2-vCPU build machine some processes of a
# cell ran every one of 40 runs of 0.15 ms at the one-thread time, 0.27 ms, others none; with
# 400 runs none did; after 0.1 s of warm-up runs 1 process in 22 still did), and a run that
# short would time that instead of the arm.
WARM_MIN_S = 0.2
JAX_MAX_N = 100_000  # jax runs N <= this unless --all-jax
REENTRY_CALLS = 200  # run(max_steps=1) calls per batch on a finished runner (5 batches)
TOLERANCE = {"float64": 1e-12, "float32": 1e-5}
CXXFLAGS = ["-O3", "-march=native", "-ffp-contract=off", "-fno-math-errno", "-fno-trapping-math",
            "-std=c++17", "-pthread", "-shared", "-fPIC"]
WORKER_TIMEOUT_S = 3600


# ------------------------------------------------------------------------------------------------
# The inputs


def sample_steps_cap(cell: str) -> int:
    """S of the cell: every sample stops within S steps (max_steps of every arm)."""
    return CELLS[cell][1]


def make_inputs(n: int, cell: str) -> dict[str, np.ndarray]:
    """The cell's float64 inputs (module docstring): omega, zeta, x0, v0, nstop."""
    dist, s = CELLS[cell]
    rng = np.random.default_rng([SEED, n, s, dist == "spread"])
    out = {"omega": rng.uniform(1.0, 10.0, n), "zeta": rng.uniform(0.01, 0.2, n),
           "x0": rng.uniform(-1.0, 1.0, n), "v0": rng.uniform(-1.0, 1.0, n)}
    if dist == "spread":
        nstop = np.ceil(np.exp(rng.uniform(np.log(s / 100), np.log(s), n)))
        nstop = np.clip(nstop, max(1, s // 100), s)
    else:
        nstop = np.full(n, float(s))
    nstop[0] = s
    out["nstop"] = nstop
    return out


def cast_inputs(data: dict[str, np.ndarray], dtype: str) -> dict[str, np.ndarray]:
    """The inputs in ``dtype``, C-contiguous (the float32 cells cast every input)."""
    return {k: np.ascontiguousarray(a, dtype=dtype) for k, a in data.items()}


# ------------------------------------------------------------------------------------------------
# The arms, as run inside a worker process: build(), then reset()/run() pairs, then result()


@dataclass
class Arm:
    """One system ready to run a cell: ``run`` is what is timed, ``reset`` (untimed) puts the
    start state back, ``result`` reads x, v, k after a run; ``extras`` adds arm-specific
    measurements to the worker's reply."""

    run: Callable[[], Any]
    reset: Callable[[], None]
    result: Callable[[], dict[str, np.ndarray]]
    extras: Callable[[], dict[str, Any]] = field(default=lambda: {})
    settled: Callable[[], bool] = field(default=lambda: True)  # the last run was a steady one


def _state(start: dict[str, np.ndarray]) -> tuple[dict[str, np.ndarray], Callable[[], None]]:
    """Planes x, v, k and a Terminated mask beside the read-only inputs, and their reset."""
    planes = {"omega": start["omega"], "zeta": start["zeta"], "nstop": start["nstop"],
              "x": start["x0"].copy(), "v": start["v0"].copy(), "k": np.zeros_like(start["x0"])}
    mask = np.zeros(start["x0"].shape[0], bool)

    def reset() -> None:
        np.copyto(planes["x"], start["x0"])
        np.copyto(planes["v"], start["v0"])
        planes["k"][:] = 0
        mask[:] = False

    planes["terminated"] = mask
    return planes, reset


def _reentry_us(call: Callable[[], Any], batches: int = 5) -> float:
    """Median over ``batches`` of the per-call wall of ``REENTRY_CALLS`` calls, microseconds."""
    per = []
    for _ in range(batches):
        t0 = time.perf_counter()
        for _ in range(REENTRY_CALLS):
            call()
        per.append((time.perf_counter() - t0) / REENTRY_CALLS * 1e6)
    return statistics.median(per)


def raptor_arm(start: dict[str, np.ndarray], s: int, dtype: str) -> Arm:
    """raptor: until_done over benchmarks/kernels.py::card_rk4 (both builds in one plan)."""
    import eagle
    import eagle.plan
    from kernels import card_rk4

    (plan,) = eagle.plan.auto([card_rk4])
    planes, reset = _state(start)
    walls = []
    for _ in range(2):  # the first in the process, then a repeat over the same arrays
        t0 = time.perf_counter()
        runner = eagle.until_done([plan], max_steps=s, dt=DT, **planes)
        walls.append(time.perf_counter() - t0)

    def run() -> None:
        report = runner.run()
        if not report.done or report.steps != s:
            raise RuntimeError(f"raptor: the run ended with {report}, expected {s} steps, done")

    def extras() -> dict[str, Any]:
        return {"setup_first_ms": walls[0] * 1e3, "setup_ms": walls[1] * 1e3,
                "reentry_us": _reentry_us(lambda: runner.run(max_steps=1)),
                "threads": eagle.host_runtime().num_threads}

    return Arm(run, reset, lambda: {k: planes[k] for k in ("x", "v", "k")}, extras)


def published_kernel():
    """The card's step in the published hawk 0.7.1 (this process runs .venv-published), as its
    users write it: ``@hawk.kernel`` with no ``steps=`` builds the automatic kernel (its
    until_done picks the steps per launch; ``steps=1``, the explicit opt-out, launches once
    per step and ran 3x slower at N = 1e5, uniform1000)."""
    import hawk
    from hawk import Mutable, Param, Scalar, Terminated

    def accel(omega, zeta, x, v):  # inlined by the tracer, as card_accel is by hawk.func
        return -2.0 * zeta * omega * v - omega * omega * x

    @hawk.kernel  # its default: the automatic kernel (k steps per launch, paced by until_done)
    def card_rk4(omega: Scalar, zeta: Scalar, nstop: Scalar, dt: Param, terminated: Terminated,
                 x: Mutable[Scalar], v: Mutable[Scalar], k: Mutable[Scalar]):
        h = 0.5 * dt
        k1x = v
        k1v = accel(omega, zeta, x, v)
        k2x = v + h * k1v
        k2v = accel(omega, zeta, x + h * k1x, v + h * k1v)
        k3x = v + h * k2v
        k3v = accel(omega, zeta, x + h * k2x, v + h * k2v)
        k4x = v + dt * k3v
        k4v = accel(omega, zeta, x + dt * k3x, v + dt * k3v)
        x = x + (dt / 6.0) * (k1x + 2.0 * k2x + 2.0 * k3x + k4x)
        v = v + (dt / 6.0) * (k1v + 2.0 * k2v + 2.0 * k3v + k4v)
        k = k + 1.0
        terminated = k >= nstop

    return card_rk4


def published_arm(start: dict[str, np.ndarray], s: int, dtype: str) -> Arm:
    """The published eagle 0.7.1: eagle.deploy (its host build in ``dtype``), its until_done."""
    import eagle

    plan = eagle.deploy(published_kernel(), targets=("host",), scalar_type=dtype)
    planes, reset = _state(start)
    walls = []
    for _ in range(2):
        t0 = time.perf_counter()
        runner = eagle.until_done(plan, max_steps=s, dt=DT, **planes)
        walls.append(time.perf_counter() - t0)

    last: dict[str, Any] = {}

    def run() -> None:
        report = runner.run()
        if not report.done:
            raise RuntimeError(f"published: the run ended with {report}")
        last["report"] = report

    def settled() -> bool:
        # Its RunReport: a run that timed an entry (probe) or carried the timing events is
        # not a steady one; its docs say to warm until a run is neither.
        report = last.get("report")
        return report is not None and not report.probe and not report.timed

    def extras() -> dict[str, Any]:
        # Its Runner.run takes no max_steps: re-entry is run() on a finished runner.
        report = last["report"]
        return {"setup_first_ms": walls[0] * 1e3, "setup_ms": walls[1] * 1e3,
                "reentry_us": _reentry_us(runner.run), "version": eagle.__version__,
                "mode": report.mode, "launches_by_k": {str(k): v for k, v in report.launches_by_k.items()}}

    return Arm(run, reset, lambda: {k: planes[k] for k in ("x", "v", "k")}, extras, settled)


def numba_kernel():
    """The card in Numba: prange over samples, each stepped to its own nstop (at least one
    step, at most max_steps), the hawk kernel's operations in its order. The constants come
    in as arguments of the planes' dtype, so float32 stays float32."""
    from numba import njit, prange

    @njit(parallel=True, fastmath=False, cache=True)
    def card(omega, zeta, nstop, x, v, k, dt, h, dt6, m2, two, one, max_steps):
        for i in prange(x.shape[0]):
            om, ze, ns = omega[i], zeta[i], nstop[i]
            xi, vi, ki = x[i], v[i], k[i]
            for _ in range(max_steps):
                k1x = vi
                k1v = m2 * ze * om * vi - om * om * xi
                k2x = vi + h * k1v
                k2v = m2 * ze * om * (vi + h * k1v) - om * om * (xi + h * k1x)
                k3x = vi + h * k2v
                k3v = m2 * ze * om * (vi + h * k2v) - om * om * (xi + h * k2x)
                k4x = vi + dt * k3v
                k4v = m2 * ze * om * (vi + dt * k3v) - om * om * (xi + dt * k3x)
                xi = xi + dt6 * (k1x + two * k2x + two * k3x + k4x)
                vi = vi + dt6 * (k1v + two * k2v + two * k3v + k4v)
                ki = ki + one
                if ki >= ns:
                    break
            x[i], v[i], k[i] = xi, vi, ki

    return card


def _constants(dtype: str) -> dict[str, Any]:
    """dt, h = 0.5 dt, dt / 6 and the literals, in ``dtype`` (as the kernel's build computes
    them from its Param dt)."""
    t = np.dtype(dtype).type
    dt = t(DT)
    return {"dt": dt, "h": t(0.5) * dt, "dt6": dt / t(6.0), "m2": t(-2.0), "two": t(2.0), "one": t(1.0)}


def numba_arm(start: dict[str, np.ndarray], s: int, dtype: str) -> Arm:
    """Numba: the parallel loop above, in place."""
    card = numba_kernel()
    planes, reset = _state(start)
    c = _constants(dtype)
    arrays = [planes[k] for k in ("omega", "zeta", "nstop", "x", "v", "k")]
    consts = (c["dt"], c["h"], c["dt6"], c["m2"], c["two"], c["one"], s)
    card(*(a[:1].copy() for a in arrays), *consts)  # compiles (or loads from $NUMBA_CACHE_DIR), same types
    return Arm(lambda: card(*arrays, *consts), reset, lambda: {k: planes[k] for k in ("x", "v", "k")})


def jax_arm(start: dict[str, np.ndarray], s: int, dtype: str) -> Arm:
    """JAX: jit(vmap(one sample's lax.while_loop)); a run is the call and block_until_ready."""
    import jax

    jax.config.update("jax_enable_x64", True)
    import jax.numpy as jnp

    c = _constants(dtype)
    dt, h, dt6, m2, two, one = (c[k] for k in ("dt", "h", "dt6", "m2", "two", "one"))

    def accel(om, ze, x, v):
        return m2 * ze * om * v - om * om * x

    def one_sample(om, ze, ns, x, v, k):
        def cond(st):
            return ~st[3] & (st[4] < s)

        def body(st):
            x, v, k, _, j = st
            k1x = v
            k1v = accel(om, ze, x, v)
            k2x = v + h * k1v
            k2v = accel(om, ze, x + h * k1x, v + h * k1v)
            k3x = v + h * k2v
            k3v = accel(om, ze, x + h * k2x, v + h * k2v)
            k4x = v + dt * k3v
            k4v = accel(om, ze, x + dt * k3x, v + dt * k3v)
            x = x + dt6 * (k1x + two * k2x + two * k3x + k4x)
            v = v + dt6 * (k1v + two * k2v + two * k3v + k4v)
            k = k + one
            return x, v, k, k >= ns, j + 1

        x, v, k, _, _ = jax.lax.while_loop(cond, body, (x, v, k, jnp.bool_(False), jnp.int32(0)))
        return x, v, k

    args = [jnp.asarray(start[k]) for k in ("omega", "zeta", "nstop", "x0", "v0")]
    args.append(jnp.zeros_like(args[-1]))
    fn = jax.jit(jax.vmap(one_sample)).lower(*args).compile()  # compiled ahead, nothing run
    out: dict[str, Any] = {}

    def run() -> None:
        out["xvk"] = jax.block_until_ready(fn(*args))

    return Arm(run, lambda: None, lambda: dict(zip(("x", "v", "k"), (np.asarray(a) for a in out["xvk"]))))


def load_cpp(lib_path: str, dtype: str) -> Callable[..., int]:
    """card_lanes_f64 / card_lanes_f32 of the built baseline, with its argument types."""
    lib = ctypes.CDLL(lib_path)
    fn = lib.card_lanes_f64 if dtype == "float64" else lib.card_lanes_f32
    fn.argtypes = [ctypes.c_int64] + [ctypes.c_void_p] * 6 + [ctypes.c_double, ctypes.c_int64, ctypes.c_int]
    fn.restype = ctypes.c_int
    return fn


def cpp_arm(start: dict[str, np.ndarray], s: int, dtype: str, lib_path: str, threads: int) -> Arm:
    """The hand-written C++ lanes (benchmarks/baselines/card_lanes.cpp) through ctypes."""
    fn = load_cpp(lib_path, dtype)
    planes, reset = _state(start)
    ptr = {k: planes[k].ctypes.data for k in ("omega", "zeta", "nstop", "x", "v", "k")}
    n = planes["x"].shape[0]

    def run() -> None:
        fn(n, ptr["omega"], ptr["zeta"], ptr["nstop"], ptr["x"], ptr["v"], ptr["k"], DT, s, threads)

    return Arm(run, reset, lambda: {k: planes[k] for k in ("x", "v", "k")}, lambda: {"threads": threads})


# ------------------------------------------------------------------------------------------------
# The worker process: one arm, one cell


def worker(a: argparse.Namespace) -> int:
    """Builds the arm (untimed), warms up (``a.warmup`` runs, only one once they take a
    quarter of ``a.budget`` seconds; more while the arm says its last run was not steady, and
    until they have taken ``WARM_MIN_S``),
    times ``a.repeat`` runs (fewer, but ``MIN_TIMED``, once
    they take ``a.budget`` seconds), saves the final x, v, k to ``a.out`` and prints the reply
    as one JSON line (the last line of stdout)."""
    start = cast_inputs(make_inputs(a.n, a.cell), a.dtype)
    s = sample_steps_cap(a.cell)
    t0 = time.perf_counter()
    if a.worker == "raptor":
        arm = raptor_arm(start, s, a.dtype)
    elif a.worker == "published":
        arm = published_arm(start, s, a.dtype)
    elif a.worker == "numba":
        arm = numba_arm(start, s, a.dtype)
    elif a.worker == "jax":
        arm = jax_arm(start, s, a.dtype)
    else:
        arm = cpp_arm(start, s, a.dtype, a.lib, a.threads)
    build_s = time.perf_counter() - t0
    warm = 0.0
    warmups = 0
    while (warmups < a.warmup + EXTRA_WARMUP and (warmups == 0 or not arm.settled() or (
            warmups < a.warmup and (warm < a.budget / 4 or a.budget <= 0)))) or warm < WARM_MIN_S:
        arm.reset()
        t0 = time.perf_counter()
        arm.run()
        warm += time.perf_counter() - t0
        warmups += 1
    times: list[float] = []
    while len(times) < a.repeat and (len(times) < MIN_TIMED or sum(times) < a.budget or a.budget <= 0):
        arm.reset()
        t0 = time.perf_counter()
        arm.run()
        times.append(time.perf_counter() - t0)
    np.savez(a.out, **arm.result())
    reply = {"arm": a.worker, "median_s": statistics.median(times), "times_s": times, "warmups": warmups,
             "build_s": build_s, **arm.extras()}
    print(json.dumps(reply), flush=True)
    return 0


# ------------------------------------------------------------------------------------------------
# The driver: which arms can run, the worker processes, the checks


def published_python() -> str | None:
    """The published venv's python, or None when .venv-published is absent."""
    return PUBLISHED_PYTHON if os.path.exists(PUBLISHED_PYTHON) else None


@functools.lru_cache(maxsize=None)
def _has_module(python: str, module: str) -> bool:
    if python == sys.executable:
        return importlib.util.find_spec(module) is not None
    r = subprocess.run([python, "-c", f"import {module}"], capture_output=True, env=env_for(python, dict(os.environ)))
    return r.returncode == 0


@functools.lru_cache(maxsize=None)
def arm_python(arm: str) -> str | None:
    """The interpreter a worker of ``arm`` runs under, or None when it cannot run here.
    Numba runs under this venv's python, else under .venv-published's (which has it)."""
    if arm == "published":
        return published_python()
    if arm == "numba":
        for py in (sys.executable, published_python()):
            if py is not None and _has_module(py, "numba"):
                return py
        return None
    if arm == "jax":
        return sys.executable if importlib.util.find_spec("jax") is not None else None
    return sys.executable


def why_not(arm: str) -> str | None:
    """Why ``arm`` cannot run here, or None when it can."""
    if arm == "cpp":
        return None if shutil.which(os.environ.get("CXX", "g++")) else "no g++ on PATH"
    if arm_python(arm) is not None:
        return None
    return {"published": f"{PUBLISHED_PYTHON} not found (the published raptor-eagle 0.7.1 venv)",
            "numba": "numba is not installed (pip install numba)",
            "jax": "jax is not installed (pip install 'raptor[jax]')"}.get(arm, "unavailable")


def with_march(flags: list[str], march: str) -> list[str]:
    """``flags`` with ``-march=native`` replaced by ``-march=<march>`` (unchanged for "native")."""
    return [f"-march={march}" if f == "-march=native" else f for f in flags]


def march_wrapper(tmp: str, march: str) -> str:
    """A C++ compiler command in ``tmp`` that runs $CXX (or g++) with ``-march=native`` replaced
    by ``-march=<march>``, logging each call's arguments to ``tmp``/march_wrapper.log."""
    cxx = shutil.which(os.environ.get("CXX", "g++"))
    path = os.path.join(tmp, "march-cxx")
    log = os.path.join(tmp, "march_wrapper.log")
    with open(path, "w") as f:
        f.write("#!/bin/sh\n"
                "for arg do\n"
                "  shift\n"
                f'  case "$arg" in -march=native) arg="-march={march}" ;; esac\n'
                '  set -- "$@" "$arg"\n'
                "done\n"
                f'echo "$*" >> "{log}"\n'
                f'exec "{cxx}" "$@"\n')
    os.chmod(path, 0o755)
    return path


def march_wrapper_calls(tmp: str, march: str) -> tuple[int, int]:
    """(compiles through the wrapper, those with -march=<march>), from its log."""
    try:
        with open(os.path.join(tmp, "march_wrapper.log")) as f:
            calls = [line for line in f if " -c " in f" {line} " or " -o " in f" {line} "]
    except FileNotFoundError:
        return 0, 0
    return len(calls), sum(f"-march={march}" in line for line in calls)


def build_cpp(tmp: str, march: str = "native") -> tuple[str, str]:
    """Builds benchmarks/baselines/card_lanes.cpp into ``tmp`` for ``-march=<march>``; (library
    path, its lanes info)."""
    cxx = shutil.which(os.environ.get("CXX", "g++"))
    lib = os.path.join(tmp, "libcard_lanes.so")
    subprocess.run([cxx, *with_march(CXXFLAGS, march), BASELINE, "-o", lib], check=True)
    handle = ctypes.CDLL(lib)
    handle.card_lanes_info.restype = ctypes.c_char_p
    return lib, handle.card_lanes_info().decode()


def raptor_default_flags(env: dict[str, str]) -> str:
    """raptor's host compile flags when RAPTOR_CXXFLAGS is not set, asked of a fresh process."""
    r = subprocess.run([sys.executable, "-c", "from raptor_core import _core; print(_core.default_host_flags())"],
                       capture_output=True, text=True, env=env, check=True)
    return r.stdout.strip()


def raptor_threads(env: dict[str, str]) -> int:
    """The host pool's thread count raptor uses (eagle.host_runtime().num_threads), asked of a
    fresh process; 2 when that fails."""
    r = subprocess.run([sys.executable, "-c", "import eagle; print(eagle.host_runtime().num_threads)"],
                       capture_output=True, text=True, env=env)
    try:
        return int(r.stdout.strip().splitlines()[-1])
    except (ValueError, IndexError):
        return 2


@dataclass
class Context:
    """What every worker of this run shares."""

    tmp: str
    env: dict[str, str]
    repeat: int
    warmup: int
    budget: float
    threads: int
    lib: str | None = None


def env_for(python: str | None, env: dict[str, str]) -> dict[str, str]:
    """``env`` for a process of ``python``: without PYTHONPATH when that is another venv's
    interpreter (a path that puts this checkout's hawk and eagle first would shadow the
    published ones in .venv-published, and its raptor_core is built for this Python)."""
    if python is None or python == sys.executable:
        return env
    return {k: v for k, v in env.items() if k != "PYTHONPATH"}


def spawn(arm: str, n: int, cell: str, dtype: str, ctx: Context, tag: str) -> tuple[dict | None, str]:
    """Runs one worker process; (its reply, the path of its saved state), or (None, error)."""
    out = os.path.join(ctx.tmp, f"{arm}-{tag}.npz")
    cmd = [arm_python(arm), os.path.abspath(__file__), "--worker", arm, "--n", str(n), "--cell", cell,
           "--dtype", dtype, "--repeat", str(ctx.repeat), "--warmup", str(ctx.warmup), "--budget", str(ctx.budget),
           "--out", out, "--threads", str(ctx.threads)]
    if ctx.lib:
        cmd += ["--lib", ctx.lib]
    try:
        r = subprocess.run(cmd, capture_output=True, text=True, env=env_for(cmd[0], ctx.env), timeout=WORKER_TIMEOUT_S)
    except subprocess.TimeoutExpired:
        return None, f"timed out after {WORKER_TIMEOUT_S} s"
    if r.returncode != 0:
        tail = " | ".join((r.stderr or r.stdout).strip().splitlines()[-4:])
        return None, f"exit {r.returncode}: {tail}"
    try:
        return json.loads(r.stdout.strip().splitlines()[-1]), out
    except (ValueError, IndexError):
        return None, f"no reply: {r.stdout[-300:]!r}"


def compare(state: dict[str, np.ndarray], ref: dict[str, np.ndarray] | None, nstop: np.ndarray, s: int,
            dtype: str) -> dict[str, Any]:
    """The checks of one process's final state: k == min(nstop, S) exactly, and x, v against
    the reference state: |a - b| <= tol * max(1, max |b|) over the plane (TOLERANCE; the
    plane's scale, as a rounding difference early in a sample's steps shifts its phase, so
    it shows wherever the trajectory is, also near a zero crossing); with the largest
    differences and whether the planes are equal bit for bit."""
    expect_k = np.minimum(nstop.astype(dtype), s)
    k_ok = bool(np.array_equal(state["k"], expect_k))
    out: dict[str, Any] = {"k_exact": k_ok}
    ok = k_ok
    if ref is not None:
        tol = TOLERANCE[dtype]
        for name in ("x", "v"):
            a, b = state[name].astype(np.float64), ref[name].astype(np.float64)
            diff = float(np.abs(a - b).max()) if a.size else 0.0
            scale = max(1.0, float(np.abs(b).max()) if b.size else 0.0)
            out[f"max_abs_{name}"] = diff
            out[f"bitwise_{name}"] = bool(np.array_equal(state[name], ref[name]))
            ok = ok and diff <= tol * scale
    out["ok"] = ok
    return out


class OtherLoad:
    """How much of the machine's CPU time went to other work (other processes, or time the
    hypervisor stole) between ``__init__`` and ``fraction()``: the busy time /proc/stat counts
    on every core, less this process's and its finished workers' own, over wall x cores.
    None where there is no /proc/stat."""

    def __init__(self) -> None:
        self.t0 = time.perf_counter()
        self.busy0 = self._busy()
        self.own0 = self._own()

    @staticmethod
    def _busy() -> float | None:
        try:
            with open("/proc/stat") as f:
                fields = [int(x) for x in f.readline().split()[1:]]
        except (OSError, ValueError):
            return None
        idle = fields[3] + (fields[4] if len(fields) > 4 else 0)  # idle, iowait
        return (sum(fields[:8]) - idle) / os.sysconf("SC_CLK_TCK")  # up to steal; guest is in user

    @staticmethod
    def _own() -> float:
        t = os.times()
        return t.user + t.system + t.children_user + t.children_system

    def fraction(self) -> float | None:
        busy = self._busy()
        if busy is None or self.busy0 is None:
            return None
        wall = time.perf_counter() - self.t0
        other = (busy - self.busy0) - (self._own() - self.own0)
        return max(0.0, other) / (wall * (os.cpu_count() or 1)) if wall > 0 else None


def rotate(items: list[str], r: int) -> list[str]:
    """``items`` starting at index r (mod len): each round a different arm goes first."""
    if not items:
        return items
    r %= len(items)
    return items[r:] + items[:r]


def run_cell(n: int, cell: str, dtype: str, arms: list[str], rounds: int, ctx: Context) -> dict[str, Any]:
    """Every arm at one cell: ``rounds`` rounds of one fresh process per arm, in an order
    rotating from round to round; the cell's record with each arm's figure (the median of its
    process medians) and the checks of every process's final state (after the last round,
    against the reference arm's first process)."""
    data = make_inputs(n, cell)
    s = sample_steps_cap(cell)
    rec: dict[str, Any] = {"n": n, "cell": cell, "dist": CELLS[cell][0], "S": s, "dtype": dtype,
                           "sample_steps": int(np.minimum(data["nstop"], s).sum()), "arms": {}, "failures": []}
    procs: dict[str, list[tuple[dict, str]]] = {a: [] for a in arms}
    other = OtherLoad()
    for r in range(rounds):
        for arm in rotate(list(arms), r):
            reply, where = spawn(arm, n, cell, dtype, ctx, f"{n}-{cell}-{dtype}-{r}")
            if reply is None:
                rec["failures"].append({"arm": arm, "round": r, "error": where})
                print(f"  {arm} failed at N={n} {cell} {dtype} (round {r}): {where}", flush=True)
            else:
                procs[arm].append((reply, where))
    rec["other_cpu"] = other.fraction()
    ref_arm = next((a for a in ("raptor", *arms) if procs.get(a)), None)
    ref = load_state(procs[ref_arm][0][1]) if ref_arm else None
    for arm in arms:
        if not procs[arm]:
            continue
        checks = []
        for i, (_, where) in enumerate(procs[arm]):
            first_ref = arm == ref_arm and i == 0
            check = compare(load_state(where), None if first_ref else ref, data["nstop"], s, dtype)
            if not check["ok"]:
                print(f"  {arm} DISAGREES with {ref_arm} at N={n} {cell} {dtype} (process {i}): {check}", flush=True)
            checks.append(check)
        replies = [reply for reply, _ in procs[arm]]
        medians = [p["median_s"] for p in replies]
        entry = {"ms": statistics.median(medians) * 1e3, "process_ms": [m * 1e3 for m in medians],
                 "runs_ms": [[t * 1e3 for t in p["times_s"]] for p in replies],
                 "warmups": [p["warmups"] for p in replies], "build_s": [p["build_s"] for p in replies],
                 "reference": ref_arm, "checks": checks, "agree": all(c["ok"] for c in checks)}
        for key in ("setup_first_ms", "setup_ms", "reentry_us"):
            if key in replies[0]:
                entry[key] = statistics.median(p[key] for p in replies)
        for key in ("threads", "version", "mode", "launches_by_k"):
            if key in replies[0]:
                entry[key] = replies[0][key]
        rec["arms"][arm] = entry
    for arm in arms:
        for _, where in procs[arm]:
            os.unlink(where)
    return rec


def load_state(path: str) -> dict[str, np.ndarray]:
    """x, v, k as a worker saved them."""
    with np.load(path) as f:
        return {k: f[k] for k in ("x", "v", "k")}


def ratios(records: list[dict]) -> None:
    """Adds each record's ratios: other arms over raptor, raptor's throughput over the C++
    baseline's, and for spread cells the compaction ratio (module docstring)."""
    dense = {(r["n"], r["dtype"]): r for r in records if r["cell"] == "uniform1000"}
    for r in records:
        arms = r["arms"]
        out: dict[str, float | None] = {}
        rap = arms.get("raptor", {}).get("ms")
        for other in ("published", "numba", "jax"):
            t = arms.get(other, {}).get("ms")
            out[f"{other}/raptor"] = t / rap if rap and t else None
        cpp = arms.get("cpp", {}).get("ms")
        out["raptor/cpp throughput"] = cpp / rap if rap and cpp else None
        out["compaction"] = None
        d = dense.get((r["n"], r["dtype"]))
        if r["dist"] == "spread" and rap and d is not None and d["arms"].get("raptor", {}).get("ms"):
            throughput = d["sample_steps"] / d["arms"]["raptor"]["ms"]  # sample-steps per ms
            out["compaction"] = rap / (r["sample_steps"] / throughput)
        r["ratios"] = out


# ------------------------------------------------------------------------------------------------
# Report: the table, the costs, the JSON and the chart


def _fmt_ms(t: float | None) -> str:
    if t is None:
        return "-"
    return f"{t:.3f}" if t < 10 else f"{t:.1f}"


def _fmt_ratio(x: float | None) -> str:
    return "-" if x is None else f"{x:.2f}"


def table(records: list[dict], arms: list[str]) -> str:
    """One row per cell: ms per arm, then the ratios."""
    ratio_cols = ["published/raptor", "numba/raptor", "jax/raptor", "raptor/cpp throughput", "compaction"]
    shown = [c for c in ratio_cols if any(r["ratios"].get(c) is not None for r in records)]
    head = (["N", "cell", "dtype"] + [f"{a} ms" for a in arms] + [c.replace(" throughput", " thr.") for c in shown]
            + ["other CPU"])
    rows = []
    for r in records:
        row = [f"{r['n']:.0e}".replace("e+0", "e"), r["cell"], r["dtype"]]
        for a in arms:
            e = r["arms"].get(a)
            mark = "" if e is None or e["agree"] else "!"
            row.append(_fmt_ms(e["ms"] if e else None) + mark)
        row += [_fmt_ratio(r["ratios"].get(c)) for c in shown]
        row.append("-" if r.get("other_cpu") is None else f"{100 * r['other_cpu']:.0f}%")
        rows.append(row)
    widths = [max(len(str(x)) for x in col) for col in zip(head, *rows)]
    lines = ["  ".join(str(x).rjust(w) for x, w in zip(line, widths)) for line in [head, *rows]]
    return "\n".join(lines)


def agreement_summary(records: list[dict]) -> str:
    """Per arm and dtype: the largest |x - ref| and |v - ref| over every cell and process, or
    "bit for bit" when every plane was equal to the reference's."""
    worst: dict[tuple[str, str], list[float | bool]] = {}
    for r in records:
        for arm, e in r["arms"].items():
            for c in e["checks"]:
                if "max_abs_x" not in c:
                    continue
                w = worst.setdefault((arm, r["dtype"]), [0.0, 0.0, True])
                w[0] = max(w[0], c["max_abs_x"])
                w[1] = max(w[1], c["max_abs_v"])
                w[2] = w[2] and c["bitwise_x"] and c["bitwise_v"]
    parts = []
    for (arm, dtype), (dx, dv, bits) in sorted(worst.items()):
        parts.append(f"{arm} {dtype}: " + ("bit for bit" if bits else f"max |dx| {dx:.1e}, |dv| {dv:.1e}"))
    return "  largest differences from the reference (raptor when it ran): " + "; ".join(parts) if parts else ""


def costs(records: list[dict]) -> str:
    """raptor's (and the published eagle's) until_done set-up and re-entry costs per N, dtype:
    medians over the cells' processes."""
    lines = []
    for arm, reentry in (("raptor", "run(max_steps=1)"), ("published", "run()")):
        rows = {}
        for r in records:
            e = r["arms"].get(arm)
            if e and "setup_ms" in e:
                rows.setdefault((r["n"], r["dtype"]), []).append(e)
        if not rows:
            continue
        lines.append(f"{arm}: until_done(...) set-up (first call in the process / a repeat) and re-entry "
                     f"({reentry} on a finished runner)")
        for (n, dtype), es in sorted(rows.items()):
            first = statistics.median(e["setup_first_ms"] for e in es)
            again = statistics.median(e["setup_ms"] for e in es)
            re_us = statistics.median(e["reentry_us"] for e in es)
            lines.append(f"  N={n:<8d} {dtype}: set-up {first:8.3f} ms / {again:8.3f} ms   re-entry {re_us:8.2f} us")
    return "\n".join(lines)


def load_average() -> tuple[float, float, float] | None:
    """The 1, 5 and 15 minute load averages, or None where the platform has none."""
    try:
        return os.getloadavg()
    except (AttributeError, OSError):
        return None


def fmt_load(load: tuple[float, float, float]) -> str:
    return ", ".join(f"{x:.2f}" for x in load)


def versions() -> dict[str, str | None]:
    """python, numpy, jax, numba, raptor here, and the published eagle/hawk (and its numba)."""
    from importlib import metadata

    def ver(name: str) -> str | None:
        try:
            return metadata.version(name)
        except metadata.PackageNotFoundError:
            return None

    out = {"python": platform.python_version(), "numpy": np.__version__, "jax": ver("jax"),
           "numba": ver("numba"), "raptor": ver("raptor"), "published_eagle": None, "published_hawk": None}
    pub = published_python()
    if pub is not None:
        code = ("import importlib.metadata as m, json; print(json.dumps([m.version(p) for p in "
                "('raptor-eagle', 'raptor-hawk', 'numba', 'numpy')]))")
        r = subprocess.run([pub, "-c", code], capture_output=True, text=True, env=env_for(pub, dict(os.environ)))
        if r.returncode == 0:
            eagle_v, hawk_v, numba_v, numpy_v = json.loads(r.stdout)
            out.update(published_eagle=eagle_v, published_hawk=hawk_v, published_numba=numba_v,
                       published_numpy=numpy_v)
    return out


def plot(records: list[dict], arms: list[str], path: str) -> str | None:
    """A grouped bar chart, log scale: ms per run of each arm at each (cell, N), one panel
    per dtype; None without matplotlib."""
    if importlib.util.find_spec("matplotlib") is None:
        print("(matplotlib not installed: no chart)")
        return None
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    dtypes = list(dict.fromkeys(r["dtype"] for r in records))
    cell_order = {c: i for i, c in enumerate(CELLS)}
    groups = sorted({(r["cell"], r["n"]) for r in records}, key=lambda g: (cell_order[g[0]], g[1]))
    width = 0.8 / max(1, len(arms))
    fig, axes = plt.subplots(len(dtypes), 1, figsize=(max(6.0, 1.1 * len(groups) + 2), 3.8 * len(dtypes)),
                             squeeze=False)
    for ax, dtype in zip(axes[:, 0], dtypes):
        by = {(r["cell"], r["n"]): r for r in records if r["dtype"] == dtype}
        shown: list[float] = []
        for i, arm in enumerate(arms):
            xs, ys = [], []
            for j, g in enumerate(groups):
                e = by.get(g, {}).get("arms", {}).get(arm)
                if e:
                    xs.append(j + (i - (len(arms) - 1) / 2) * width)
                    ys.append(e["ms"])
            ax.bar(xs, ys, width, label=arm)
            shown += ys
        ax.set_xticks(range(len(groups)))
        ax.set_xticklabels([f"{c}\nN={n:.0e}".replace("e+0", "e") for c, n in groups], fontsize="small")
        ax.set_yscale("log")
        if shown:
            ax.set_ylim(min(shown) / 2, max(shown) * 12)  # room for the legend above the bars
        ax.set_ylabel("ms per run")
        ax.set_title(dtype)
        ax.grid(True, axis="y", which="both", alpha=0.3)
        ax.legend(fontsize="small", ncol=len(arms))
    fig.suptitle("performance card: RK4 oscillators until done (median of process medians)")
    fig.tight_layout()
    os.makedirs(os.path.dirname(os.path.abspath(path)), exist_ok=True)
    fig.savefig(path, dpi=110)
    plt.close(fig)
    return path


# ------------------------------------------------------------------------------------------------
# Main


def parse(argv: list[str] | None) -> argparse.Namespace:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0],
                                formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--ns", default=None, help="comma-separated N (default 1000,10000,100000,1000000)")
    p.add_argument("--cells", default=",".join(CELLS), help=f"comma-separated, of {','.join(CELLS)}")
    p.add_argument("--dtypes", default=",".join(DTYPES))
    p.add_argument("--arms", default=",".join(ARMS), help=f"comma-separated, of {','.join(ARMS)}")
    p.add_argument("--rounds", type=int, default=None, help=f"processes per arm and cell (default {ROUNDS})")
    p.add_argument("--repeat", type=int, default=None, help=f"timed runs per process (default {REPEAT})")
    p.add_argument("--budget", type=float, default=BUDGET_S,
                   help=f"seconds of timed runs after which a process stops at {MIN_TIMED} runs (default "
                        f"{BUDGET_S:g}; 0: always --repeat)")
    p.add_argument("--quick", action="store_true", help="N = 1e3 only, 1 round, 3 repeats")
    p.add_argument("--all-jax", action="store_true", help=f"run jax above N = {JAX_MAX_N:.0e} too")
    p.add_argument("--march", default="native",
                   help="the ISA of raptor's kernels, the C++ lanes and Numba's code, e.g. x86-64-v3 "
                        "(AVX2) on an AVX-512 machine; the published eagle and JAX are not changed "
                        "(default native)")
    p.add_argument("--json", default=os.path.join(RESULTS, "perf_card.json"))
    p.add_argument("--png", default=os.path.join(RESULTS, "perf_card.png"))
    # A worker's arguments (the driver passes them).
    p.add_argument("--worker", choices=ARMS, help=argparse.SUPPRESS)
    p.add_argument("--n", type=int, help=argparse.SUPPRESS)
    p.add_argument("--cell", choices=tuple(CELLS), help=argparse.SUPPRESS)
    p.add_argument("--dtype", choices=DTYPES, help=argparse.SUPPRESS)
    p.add_argument("--warmup", type=int, default=WARMUP, help=argparse.SUPPRESS)
    p.add_argument("--out", help=argparse.SUPPRESS)
    p.add_argument("--lib", help=argparse.SUPPRESS)
    p.add_argument("--threads", type=int, default=2, help=argparse.SUPPRESS)
    a = p.parse_args(argv)
    a.ns = [int(float(x)) for x in a.ns.split(",") if x] if a.ns else ([1000] if a.quick else list(NS))
    a.rounds = a.rounds if a.rounds is not None else (1 if a.quick else ROUNDS)
    a.repeat = a.repeat if a.repeat is not None else (3 if a.quick else REPEAT)
    if a.rounds < 1 or a.repeat < 1:
        p.error("--rounds and --repeat: at least 1")
    for name, allowed in (("cells", tuple(CELLS)), ("dtypes", DTYPES), ("arms", ARMS)):
        values = [v for v in getattr(a, name).split(",") if v]
        bad = [v for v in values if v not in allowed]
        if bad:
            p.error(f"--{name}: unknown {', '.join(bad)} (choose from {', '.join(allowed)})")
        setattr(a, name, values)
    return a


def available(requested: list[str]) -> tuple[list[str], dict[str, str]]:
    """The requested arms that can run here, and {arm: why not} for the others (printed)."""
    arms, skipped = [], {}
    for arm in requested:
        why = why_not(arm)
        if why:
            print(f"skipped {arm}: {why}", flush=True)
            skipped[arm] = why
        else:
            arms.append(arm)
    return arms, skipped


def jax_capped(a: argparse.Namespace, arms: list[str]) -> bool:
    """Whether jax is in the run but left out of some N (above JAX_MAX_N, without --all-jax)."""
    return "jax" in arms and not a.all_jax and any(n > JAX_MAX_N for n in a.ns)


def run_all(a: argparse.Namespace, arms: list[str]) -> tuple[list[dict], dict[str, Any]]:
    """Every cell, in a temporary directory with fresh build caches (unless the caller set
    RAPTOR_CACHE_DIR, NUMBA_CACHE_DIR or HAWK_CACHE_DIR); the records and the run's settings."""
    records: list[dict] = []
    with tempfile.TemporaryDirectory(prefix="raptor-perf-card-") as tmp:
        env = dict(os.environ, XLA_PYTHON_CLIENT_PREALLOCATE="false")
        # No arm calls BLAS, but NumPy's OpenBLAS starts a thread at import that spins for about
        # 0.1 s: a worker whose runs come soon after (the C++ lanes at N = 1e5, spread100) had
        # one core of two for them and measured up to 2x slow.
        env.setdefault("OPENBLAS_NUM_THREADS", "1")
        for var, sub in (("RAPTOR_CACHE_DIR", "raptor"), ("NUMBA_CACHE_DIR", "numba"), ("HAWK_CACHE_DIR", "hawk")):
            env.setdefault(var, os.path.join(tmp, sub))
        if a.march != "native":
            # raptor's default host flags for that ISA (a caller's RAPTOR_CXXFLAGS is refused:
            # the run would not say which flags it measured).
            if "RAPTOR_CXXFLAGS" in os.environ:
                raise SystemExit("perf_card: --march with RAPTOR_CXXFLAGS set: unset one of them")
            env["RAPTOR_CXXFLAGS"] = " ".join(with_march(raptor_default_flags(env).split(), a.march))
            # LLVM knows the x86-64-v2/v3/v4 levels by name too; without NUMBA_CPU_FEATURES set
            # (empty: the CPU's own) Numba adds the host's features, AVX-512 included.
            env["NUMBA_CPU_NAME"] = a.march
            env["NUMBA_CPU_FEATURES"] = ""
            # The published hawk compiles with -march=native (its "native" host profile, the
            # default): its compiler, through $HAWK_CXX, is a wrapper that says -march=<march>
            # instead and logs each call, so the run can tell that it took effect.
            env["HAWK_CXX"] = march_wrapper(tmp, a.march)
        ctx = Context(tmp, env, a.repeat, a.warmup, a.budget, raptor_threads(env))
        cpp_info = None
        if "cpp" in arms:
            ctx.lib, cpp_info = build_cpp(tmp, a.march)
        print(f"perf_card: arms {', '.join(arms)}; N = {', '.join(str(n) for n in a.ns)}; cells "
              f"{', '.join(a.cells)}; {', '.join(a.dtypes)}; {a.rounds} round(s) of one process per arm, each "
              f"{a.warmup} warm-up + {a.repeat} timed runs; {ctx.threads} threads"
              + (f"; cpp lanes: {cpp_info}" if cpp_info else ""), flush=True)
        for n in a.ns:
            for cell in a.cells:
                for dtype in a.dtypes:
                    here = [arm for arm in arms if arm != "jax" or a.all_jax or n <= JAX_MAX_N]
                    rec = run_cell(n, cell, dtype, here, a.rounds, ctx)
                    records.append(rec)
                    done = ", ".join(f"{arm} {e['ms']:.3f} ms" for arm, e in rec["arms"].items())
                    print(f"  N={n} {cell} {dtype}: {done}", flush=True)
        if a.march != "native" and "published" in arms:
            calls, marched = march_wrapper_calls(tmp, a.march)
            if calls == 0 or marched != calls:
                raise SystemExit(f"perf_card: the published eagle compiled {calls} time(s) through the "
                                 f"$HAWK_CXX wrapper, {marched} with -march={a.march}: its ISA is not known")
            published_compiles = calls
        else:
            published_compiles = None
    settings = {"threads": ctx.threads, "cpp_lanes": cpp_info, "march": a.march,
                "published_compiles_through_wrapper": published_compiles,
                "raptor_cxxflags": env.get("RAPTOR_CXXFLAGS"),
                "worker_env": {k: env[k] for k in ("OPENBLAS_NUM_THREADS", "XLA_PYTHON_CLIENT_PREALLOCATE")}}
    return records, settings


def report(a: argparse.Namespace, records: list[dict], arms: list[str], ok: bool) -> None:
    """Prints the table, the agreement and raptor's set-up and re-entry costs."""
    print()
    print(f"performance card (ms per run: median over {a.rounds} process(es) of each one's median of "
          f"up to {a.repeat} runs; ratios are times over raptor's; raptor/cpp thr. = raptor's throughput "
          f"over the C++ lanes'; compaction = raptor's time over its dense time for the cell's "
          f"sample-steps; other CPU = the machine's CPU time other work took during the cell; "
          f"'!' marks an arm that disagreed)")
    print(table(records, arms))
    if jax_capped(a, arms):
        print(f"(jax: N <= {JAX_MAX_N:.0e} only; --all-jax runs it at every N)")
    print(f"agreement: k == min(nstop, S) exactly in every arm; x, v within tol * max(1, max |ref|) of "
          f"raptor's, tol {TOLERANCE['float64']:g} (float64), {TOLERANCE['float32']:g} (float32): "
          f"{'all agree' if ok else 'DISAGREEMENT OR FAILURE (see above)'}")
    print(agreement_summary(records))
    print(costs(records))


def main(argv: list[str] | None = None) -> int:
    a = parse(argv)
    if a.worker:
        if HERE not in sys.path:
            sys.path.insert(0, HERE)
        return worker(a)
    arms, skipped = available(a.arms)
    if jax_capped(a, arms):
        print(f"jax runs N <= {JAX_MAX_N:.0e} only (a run at 1e6 takes seconds; --all-jax runs every N)",
              flush=True)
    started = time.perf_counter()
    load_start = load_average()
    if load_start is not None and load_start[0] > 1.0:
        print(f"note: load average {load_start[0]:.2f} at the start: other work on this machine slows "
              "every arm (the rounds spread it over all of them)", flush=True)
    records, settings = run_all(a, arms)
    ratios(records)
    ok = all(not r["failures"] and all(e["agree"] for e in r["arms"].values()) for r in records)
    report(a, records, arms, ok)
    load_end = load_average()
    if load_start is not None and load_end is not None:
        print(f"load average (1, 5, 15 min) at the start {fmt_load(load_start)}, at the end {fmt_load(load_end)}")
    result = {"benchmark": "perf_card", "date": datetime.datetime.now().astimezone().isoformat(timespec="seconds"),
              "machine": cpu_info(), "versions": {**versions(), "raptor_checkout": raptor_revision()},
              "protocol": {"rounds": a.rounds, "repeat": a.repeat, "warmup": a.warmup, "budget_s": a.budget,
                           "min_timed": MIN_TIMED, "extra_warmup": EXTRA_WARMUP, "warm_min_s": WARM_MIN_S, "dt": DT, "seed": SEED,
                           "cells": {c: CELLS[c] for c in a.cells}, "ns": a.ns, "dtypes": a.dtypes,
                           "jax_max_n": None if a.all_jax else JAX_MAX_N, "tolerance": TOLERANCE,
                           "reentry_calls": REENTRY_CALLS, "cpp_flags": with_march(CXXFLAGS, a.march), **settings},
              "arms": arms, "skipped": skipped, "ok": ok, "wall_s": time.perf_counter() - started,
              "load_average": {"start": load_start, "end": load_end}, "records": records}
    os.makedirs(os.path.dirname(os.path.abspath(a.json)), exist_ok=True)
    with open(a.json, "w") as f:
        json.dump(result, f, indent=1)
    print(f"wrote {a.json}")
    if records:
        png = plot(records, arms, a.png)
        if png:
            print(f"wrote {png}")
    return 0 if ok and records else 1


if __name__ == "__main__":
    sys.exit(main())
