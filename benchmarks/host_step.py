"""Host step benchmark: a drag step (3-vector, norm, Params) at N = 2^20 float64, run side by
side in one process against the same step written by hand in C++ at -O3 (the practical
limit) and against NumPy; plus launch overhead, cold compile and warm start.

    python benchmarks/host_step.py            # prints a table of times and ratios

Targets (issue 2): one thread >= 0.8x the hand-written loop's throughput; two threads >= 1.7x
one thread; launch overhead at N = 256 <= 2 us; cold compile of a two-kernel plan <= 1.5 s;
warm start (new process, cache hit) <= 50 ms.
"""

from __future__ import annotations

import ctypes
import os
import subprocess
import sys
import tempfile
import textwrap
import time

import numpy as np

import eagle
import eagle.plan
from kernels import drag_step, osc

N = 1 << 20
CD, DT, G = 0.1, 0.01, 9.81

HAND = r"""
#include <cmath>
#include <cstdint>
extern "C" void drag(const double* __restrict v, double* __restrict out, int64_t n, double cd,
                     double dt, double g) {
#pragma GCC ivdep
  for (int64_t i = 0; i < n; ++i) {
    const double x = v[i], y = v[n + i], z = v[2 * n + i];
    const double s = cd * std::sqrt(x * x + y * y + z * z);
    out[i] = x + dt * (0.0 - s * x);
    out[n + i] = y + dt * (0.0 - s * y);
    out[2 * n + i] = z + dt * (-g - s * z);
  }
}
"""


def best(fn, repeat: int = 15, number: int = 1) -> float:
    """The best time of `repeat` runs of `number` calls, per call, in seconds."""
    fn()
    times = []
    for _ in range(repeat):
        t0 = time.perf_counter()
        for _ in range(number):
            fn()
        times.append((time.perf_counter() - t0) / number)
    return min(times)


def hand_written(tmp: str):
    src = os.path.join(tmp, "hand.cpp")
    lib = os.path.join(tmp, "hand.so")
    with open(src, "w") as f:
        f.write(HAND)
    subprocess.run(["g++", "-O3", "-march=native", "-fno-math-errno", "-ffp-contract=off", "-shared", "-fPIC", src, "-o", lib], check=True)
    fn = ctypes.CDLL(lib).drag
    fn.argtypes = [ctypes.c_void_p, ctypes.c_void_p, ctypes.c_int64, ctypes.c_double, ctypes.c_double, ctypes.c_double]
    return fn


def main() -> None:
    tmp = tempfile.mkdtemp()
    rng = np.random.default_rng(0)
    v = rng.normal(size=(3, N))
    out = np.zeros_like(v)
    rows = []

    hand = hand_written(tmp)
    t_hand = best(lambda: hand(v.ctypes.data, out.ctypes.data, N, CD, DT, G))
    ref = out.copy()

    (plan,) = eagle.plan.auto([drag_step], cache_dir=os.path.join(tmp, "cache"))
    bound = plan.bind(v=v, cd=CD, dt=DT, g=G, v_next=out)
    bound._core.serial_threshold = 1 << 62  # one thread
    t_one = best(bound.launch)
    assert np.array_equal(out, ref), "the kernel and the hand-written loop disagree"
    bound._core.serial_threshold = 32768  # split over the pool
    t_pool = best(bound.launch)
    threads = eagle.host_runtime().num_threads

    def numpy_step():
        return v + DT * (np.array([0.0, 0.0, -G])[:, None] - CD * np.linalg.norm(v, axis=0) * v)

    t_numpy = best(numpy_step, repeat=7)

    rows.append(("hand-written C++ -O3, 1 thread", t_hand, "1.00x (baseline)"))
    rows.append(("hawk kernel, 1 thread", t_one, f"{t_hand / t_one:.2f}x the hand-written loop's throughput (target >= 0.8x)"))
    rows.append((f"hawk kernel, {threads} threads", t_pool, f"{t_one / t_pool:.2f}x one thread (target >= 1.7x with 2)"))
    rows.append(("NumPy", t_numpy, f"hawk 1 thread is {t_numpy / t_one:.1f}x faster"))

    # Launch overhead at N = 256: from Python (bound.launch) and inside a graph (C++ loop).
    small = rng.normal(size=(3, 256))
    small_out = np.zeros_like(small)
    sb = plan.bind(v=small, cd=CD, dt=DT, g=G, v_next=small_out)
    t_py = best(sb.launch, repeat=7, number=20000)
    graph = eagle.Graph().add(sb, name="drag").build()
    t_graph = best(lambda: graph.launch(20000), repeat=7) / 20000
    t_work = t_hand * 256 / N  # the kernel's own work at N = 256, from the hand-written loop's rate

    # Cold compile of a two-kernel plan, and a warm start in a new process.
    cold_dir = os.path.join(tmp, "cold")
    t0 = time.perf_counter()
    eagle.plan.auto([drag_step, osc], cache_dir=cold_dir)
    t_cold = time.perf_counter() - t0
    here = os.path.dirname(os.path.abspath(__file__))
    probe = textwrap.dedent(f"""
        import sys, time
        sys.path.insert(0, {here!r})
        from kernels import drag_step, osc
        import eagle.plan
        t0 = time.perf_counter()
        (p1, p2) = eagle.plan.auto([drag_step, osc], cache_dir={cold_dir!r})
        print(time.perf_counter() - t0, p1.info["cache_hit"])
    """)
    warm = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, check=True).stdout.split()
    t_warm, hit = float(warm[0]), warm[1]

    print(f"drag step, N = 2^20 = {N} samples, float64 ({threads} threads available)")
    print(f"{'':42s} {'time':>10s}  ratio")
    for name, t, ratio in rows:
        print(f"{name:42s} {t * 1e3:8.3f} ms  {ratio}")
    print()
    print(f"launch overhead at N = 256 (kernel work {t_work * 1e6:.2f} us, measured by the hand-written loop):")
    print(f"  bound.launch() from Python   {t_py * 1e6:6.2f} us per launch, {max(t_py - t_work, 0) * 1e6:5.2f} us over the work (target <= 2 us)")
    print(f"  graph.launch(20000), C++ loop {t_graph * 1e6:6.2f} us per launch, {max(t_graph - t_work, 0) * 1e6:5.2f} us over the work")
    # Thread scaling where memory bandwidth does not cap it: N = 2^16 (fits in the caches).
    mid = rng.normal(size=(3, 1 << 16))
    mid_out = np.zeros_like(mid)
    mb = plan.bind(v=mid, cd=CD, dt=DT, g=G, v_next=mid_out)
    mb._core.serial_threshold = 1 << 62
    m_one = best(mb.launch, repeat=30, number=20)
    mb._core.serial_threshold = 4096
    m_pool = best(mb.launch, repeat=30, number=20)
    print(f"thread scaling at N = 2^16 (in cache): 1 thread {m_one * 1e6:.1f} us, {threads} threads {m_pool * 1e6:.1f} us: {m_one / m_pool:.2f}x")
    print(f"cold compile of a two-kernel plan (both dtypes): {t_cold:.2f} s (target <= 1.5 s)")
    print(f"warm start, new process, plan.auto with cache hit={hit}: {t_warm * 1e3:.1f} ms (target <= 50 ms)")


if __name__ == "__main__":
    main()
