"""Host launches against the memory bandwidth: the drag step's host launch at N = 2^22
(float64, every core) against a STREAM-like triad (benchmarks/baselines/triad.cpp, OpenMP,
every core) on the same machine, each in its own process, the two alternating for several
rounds (best of each). Issue 12's target: the launch at least 85% of the triad's bandwidth.

    python benchmarks/triad.py            # prints both bandwidths and their ratio
    python benchmarks/triad.py --log2n 16 # another N (the smoke test's)

Bandwidth counts the bytes a kernel names, as STREAM does (no write-allocate traffic): the
triad 24 bytes per element (two loads, one store), the drag step 48 per sample (a (3, N)
plane in, a (3, N) plane out). A store to a line not in cache also reads it first, so the
drag step moves 72 bytes for its 48 and the triad 32 for its 24: at equal real traffic the
drag step shows 89% of the triad's counted bandwidth.
"""

from __future__ import annotations

import os
import subprocess
import sys
import tempfile
import textwrap

HERE = os.path.dirname(os.path.abspath(__file__))
N = 1 << 22

LAUNCH = textwrap.dedent(f"""
    import sys, time
    import numpy as np
    sys.path.insert(0, {HERE!r})
    import eagle.plan
    from kernels import drag_step
    from _peers.host import aligned_copy
    n = int(sys.argv[1]); rounds = int(sys.argv[2])
    (plan,) = eagle.plan.auto([drag_step], targets=("host",), cache_dir=sys.argv[3])
    v = aligned_copy(np.random.default_rng(0).normal(size=(3, n)), place=0)
    out = aligned_copy(np.zeros((3, n)), place=1)
    b = plan.bind(v=v, cd=0.1, dt=0.01, g=9.81, v_next=out)
    b.launch()
    ref = v + 0.01 * (np.array([0.0, 0.0, -9.81])[:, None] - 0.1 * np.sqrt((v * v).sum(axis=0)) * v)
    assert np.allclose(out, ref, rtol=1e-12, atol=1e-14), "the launch and NumPy disagree"
    for _ in range(5):
        b.launch()
    best = 1e30
    for _ in range(rounds):
        t0 = time.perf_counter(); b.launch(); best = min(best, time.perf_counter() - t0)
    print(best)
""")


def main() -> None:
    n = 1 << int(sys.argv[sys.argv.index("--log2n") + 1]) if "--log2n" in sys.argv else N
    tmp = tempfile.mkdtemp()
    exe = os.path.join(tmp, "triad")
    subprocess.run(["g++", "-O3", "-march=native", "-fopenmp", os.path.join(HERE, "baselines", "triad.cpp"), "-o", exe], check=True)
    cache = os.path.join(tmp, "cache")
    subprocess.run([sys.executable, "-c", LAUNCH, "1024", "1", cache], check=True, capture_output=True)  # compile once
    triad, launch = [], []
    threads = "?"
    for _ in range(3):
        out = subprocess.run([exe, str(n), "30"], check=True, capture_output=True, text=True).stdout.split()
        triad.append(float(out[0]))
        threads = out[1]
        launch.append(float(subprocess.run([sys.executable, "-c", LAUNCH, str(n), "30", cache], check=True, capture_output=True, text=True).stdout))
    t_triad, t_launch = min(triad), min(launch)
    bw_triad = 24 * n / t_triad / 1e9
    bw_launch = 48 * n / t_launch / 1e9
    print(f"N = 2^{n.bit_length() - 1} float64, {threads} threads, {os.cpu_count()} cores, load average {os.getloadavg()[0]:.2f}")
    print(f"STREAM-like triad (OpenMP)        {t_triad * 1e3:8.3f} ms  {bw_triad:6.1f} GB/s (24 B per element)")
    print(f"drag step, plan.bind().launch()   {t_launch * 1e3:8.3f} ms  {bw_launch:6.1f} GB/s (48 B per sample)")
    print(f"launch / triad bandwidth: {bw_launch / bw_triad:.2f} (target >= 0.85)")


if __name__ == "__main__":
    main()
