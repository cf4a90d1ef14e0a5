"""Stepping-loop benchmark: eagle.until_done against JAX's lax.while_loop for 100,000
oscillators stepped until each stops, each side in its own processes, and the per-node launch
overhead of a two-node host graph.

    python benchmarks/stepping.py            # prints a table of times and ratios

1. 100,000 oscillators (the ``osc`` kernel of the JAX-model page, corr = 0), each with its own
   final time so that each stops within about 200 steps. eagle: ``eagle.until_done([plan])``,
   kernels only, so the whole loop runs in C++. JAX: the same step in jax.numpy inside
   ``jax.lax.while_loop`` under ``jit``, ``jnp.where`` freezing finished samples, stopping when
   all are done. Each side runs in a process of its own (XLA's and eagle's thread pools in one
   process take cores from each other: eagle timed right after JAX measured up to 1.2x slower),
   in ``ROUNDS`` rounds that alternate the two sides; each process reports its best of
   ``REPEAT`` runs and the table keeps the best of each side. The sides' final states (steps,
   x, v, t) must agree to 1e-12 before any time is reported; compile time is not counted.
   Target (issue 12): eagle >= 8x faster in every run. Cases: final times at random (the
   target's case), sorted (neighbouring samples stop together), and the kernel built with
   ``Guard(active_set=True)``.
   Beside it, the hand-written C++ loop of ``benchmarks/baselines/osc_loop.cpp`` (blocked
   stepping: blocks of 64 samples in local arrays, shared out to as many threads as eagle's
   pool has), built with g++ -O3 -march=native and run in its own process, in rounds
   alternating with eagle's; its results must equal eagle's to 1e-12. Target: eagle within
   1.5x of it.
2. Launch overhead of a two-node graph on the host: two small map kernels at N = 256,
   ``graph.launch(10000)`` (one C++ loop). The kernels' own work is estimated from the same
   graph at a large N on one thread (its per-sample time x 256) and subtracted; the rest,
   divided by the two nodes, is the overhead per node. Target: <= 2 us per node.
"""

from __future__ import annotations

import json
import os
import platform
import shutil
import subprocess
import sys
import tempfile
import time

import numpy as np

import eagle
import eagle.plan
import hawk
from hawk import Mutable, Param, Scalar
from kernels import osc, osc_active

N = 100_000
DT, C = 0.01, 0.3
MAX_STEPS = 1000
ROUNDS = 3  # alternating rounds of one JAX process and one eagle process per case
REPEAT = 15  # timed runs in each process (its best is reported)
CASES = ("random", "sorted", "active")


@hawk.kernel
def scale(a: Param, u: Scalar, w: Mutable[Scalar]):
    w = a * u


@hawk.kernel
def shift(b: Param, w: Scalar, z: Mutable[Scalar]):
    z = w + b


def best(fn, repeat: int = 7, setup=None) -> float:
    """The best wall time of ``repeat`` calls of fn (setup, untimed, before each)."""
    times = []
    for _ in range(repeat):
        if setup is not None:
            setup()
        t0 = time.perf_counter()
        fn()
        times.append(time.perf_counter() - t0)
    return min(times)


def start_planes(case: str = "random") -> dict[str, np.ndarray]:
    """The oscillators' planes at the start: each stops within 200 steps (final times in
    [0.5, 2.0], dt 0.01); for "sorted" the final times increase with the sample index."""
    rng = np.random.default_rng(0)
    start = dict(x=rng.uniform(0.5, 1.5, N), v=rng.uniform(-0.2, 0.3, N), t=np.zeros(N),
                 corr=np.zeros(N), t_final=rng.uniform(0.5, 2.0, N))
    if case == "sorted":
        start["t_final"] = np.sort(start["t_final"])
    return start


# ------------------------------------------------------------------------------------------------
# 1. until_done against lax.while_loop, each side in its own processes


def jax_worker(case: str, out: str) -> dict:
    """The JAX side in this process: the osc step in jax.numpy inside lax.while_loop under jit,
    a where freezing finished samples, stopping when all are done. Saves the final state to
    ``out`` and returns {"best": seconds}."""
    os.environ.setdefault("XLA_PYTHON_CLIENT_PREALLOCATE", "false")
    import jax
    import jax.numpy as jnp

    jax.config.update("jax_enable_x64", True)

    @jax.jit
    def jax_loop(x, v, t, corr, tf):
        def cond(s):
            return ~jnp.all(s[3]) & (s[4] < MAX_STEPS)

        def body(s):
            x, v, t, done, k = s
            vn = v + DT * (-x - C * v + corr * v)
            xn, tn = x + DT * v, t + DT
            return (jnp.where(done, x, xn), jnp.where(done, v, vn), jnp.where(done, t, tn),
                    done | (tn >= tf), k + 1)

        return jax.lax.while_loop(cond, body, (x, v, t, jnp.zeros(x.shape, bool), 0))

    start = start_planes(case)
    args = [jnp.asarray(start[k]) for k in ("x", "v", "t", "corr", "t_final")]
    res = jax.block_until_ready(jax_loop(*args))  # also compiles
    for _ in range(3):  # untimed, as on eagle's side
        jax.block_until_ready(jax_loop(*args))
    np.savez(out, x=np.asarray(res[0]), v=np.asarray(res[1]), t=np.asarray(res[2]),
             done=np.asarray(res[3]), steps=int(res[4]))
    return {"best": best(lambda: jax.block_until_ready(jax_loop(*args)), REPEAT)}


def eagle_worker(case: str, out: str, cache_dir: str) -> dict:
    """The eagle side in this process: until_done over the osc kernel (osc_active for
    "active"), with the thread pool and on one thread. Saves the final state to ``out`` and
    returns {"pool": seconds, "one": seconds, "threads": n}."""
    (plan,) = eagle.plan.auto([osc_active if case == "active" else osc], targets=("host",), cache_dir=cache_dir)
    start = start_planes(case)
    planes = {k: a.copy() for k, a in start.items()}
    mask = np.zeros(N, bool)
    runner = eagle.until_done([plan], max_steps=MAX_STEPS, dt=DT, c=C, terminated=mask, **planes)

    def reset():
        for k, a in start.items():
            np.copyto(planes[k], a)
        mask[:] = False

    reset()
    report = runner.run(max_steps=MAX_STEPS)
    assert report.done, report
    np.savez(out, x=planes["x"], v=planes["v"], t=planes["t"], done=mask.copy(), steps=report.steps)
    run = lambda: runner.run(max_steps=MAX_STEPS)  # noqa: E731
    best(run, 3, setup=reset)  # untimed: the pool's threads and the planes' pages warm
    t_pool = best(run, REPEAT, setup=reset)
    launches = [runner.items[0][1], *runner.fused]  # the fused kernels run the loop
    for b in launches:
        b._core.serial_threshold = 1 << 62
    t_one = best(run, REPEAT, setup=reset)
    return {"pool": t_pool, "one": t_one, "threads": eagle.host_runtime().num_threads}


def spawn(side: str, case: str, out: str, cache_dir: str) -> dict:
    """Runs one worker process (``--worker side case out cache_dir``) and returns its result."""
    cmd = [sys.executable, os.path.abspath(__file__), "--worker", side, case, out, cache_dir]
    r = subprocess.run(cmd, capture_output=True, text=True)
    if r.returncode != 0:
        raise RuntimeError(f"stepping.py: the {side} worker for {case!r} failed:\n{r.stdout}{r.stderr}")
    return json.loads(r.stdout.strip().splitlines()[-1])


def check_agree(jax_out: str, eagle_out: str, case: str) -> int:
    """Asserts that both sides stopped at the same step with every sample done and the same
    x, v and t (1e-12); returns the steps."""
    a, b = np.load(jax_out), np.load(eagle_out)
    assert int(a["steps"]) == int(b["steps"]), (case, int(a["steps"]), int(b["steps"]))
    assert bool(a["done"].all()) and bool(b["done"].all()), case
    for k in ("x", "v", "t"):
        err = float(np.abs(a[k] - b[k]).max())
        assert err < 1e-12, (case, k, err)
    return int(a["steps"])


def side_by_side(cache_dir: str, work: str) -> dict[str, dict]:
    """Per case: steps, JAX's best time, eagle's best with the pool and on one thread, over
    ROUNDS alternating rounds of one process each."""
    results = {}
    for case in CASES:
        t_jax = t_pool = t_one = float("inf")
        threads = 0
        for r in range(ROUNDS):
            jo, eo = os.path.join(work, f"jax_{case}_{r}.npz"), os.path.join(work, f"eagle_{case}_{r}.npz")
            t_jax = min(t_jax, spawn("jax", case, jo, cache_dir)["best"])
            e = spawn("eagle", case, eo, cache_dir)
            t_pool, t_one, threads = min(t_pool, e["pool"]), min(t_one, e["one"]), e["threads"]
            steps = check_agree(jo, eo, case)
        results[case] = dict(steps=steps, jax=t_jax, pool=t_pool, one=t_one, threads=threads)
    return results


BASELINE = os.path.join(os.path.dirname(os.path.abspath(__file__)), "baselines", "osc_loop.cpp")


def cpp_baseline(start: dict[str, np.ndarray], threads: int, workdir: str, repeats: int = 7):
    """(best seconds, steps, {x, v, t}) of the hand-written C++ loop in its own process, or
    None with a message when no g++ is found."""
    cxx = shutil.which(os.environ.get("CXX", "g++"))
    if cxx is None:
        print("(no g++: the C++ baseline is skipped)")
        return None
    exe = os.path.join(workdir, "osc_loop")
    if not os.path.exists(exe):
        # raptor's own host flags where they differ from -O3 -march=native (x86: 512-bit
        # vectors, without which GCC 12 leaves masked float64 loops scalar on recent Intel
        # cores), so the baseline is not handicapped by its flags.
        wide = ["-mprefer-vector-width=512"] if platform.machine() in ("x86_64", "AMD64") else []
        subprocess.run([cxx, "-O3", "-march=native", *wide, "-std=c++17", "-pthread", BASELINE, "-o", exe], check=True)
    for k in ("x", "v", "t", "corr", "t_final"):
        np.ascontiguousarray(start[k], np.float64).tofile(os.path.join(workdir, k))
    with open(os.path.join(workdir, "n.txt"), "w") as f:
        f.write(f"{N} {DT!r} {C!r} {MAX_STEPS}\n")
    out = subprocess.run([exe, workdir, str(threads), str(repeats)], check=True, capture_output=True, text=True)
    secs, steps = out.stdout.split()
    res = {k: np.fromfile(os.path.join(workdir, k + ".out"), np.float64) for k in ("x", "v", "t")}
    return float(secs), int(steps), res


def against_cpp(plan, start: dict[str, np.ndarray], threads: int, workdir: str, rounds: int = 3):
    """(eagle's best time, the C++ loop's best time) over `rounds` alternating rounds, after
    checking that both give the same steps and numbers; None without g++."""
    planes = {k: a.copy() for k, a in start.items()}
    mask = np.zeros(N, bool)
    runner = eagle.until_done([plan], max_steps=MAX_STEPS, dt=DT, c=C, terminated=mask, **planes)

    def reset():
        for k, a in start.items():
            np.copyto(planes[k], a)
        mask[:] = False

    reset()
    report = runner.run(max_steps=MAX_STEPS)
    first = cpp_baseline(start, threads, workdir, repeats=1)
    if first is None:
        return None
    _, steps, res = first
    assert report.done and report.steps == steps, (report.steps, steps)
    for k in ("x", "v", "t"):
        err = float(np.abs(planes[k] - res[k]).max())
        assert err < 1e-12, (k, err)
    t_eagle, t_cpp = float("inf"), float("inf")
    for _ in range(rounds):
        t_eagle = min(t_eagle, best(lambda: runner.run(max_steps=MAX_STEPS), setup=reset))
        t_cpp = min(t_cpp, cpp_baseline(start, threads, workdir)[0])
    return t_eagle, t_cpp


def stepping(cache_dir: str) -> list[tuple[str, float, str]]:
    with tempfile.TemporaryDirectory() as work:
        res = side_by_side(cache_dir, work)
    rnd, srt, act = res["random"], res["sorted"], res["active"]
    threads = rnd["threads"]
    rows = [(f"jax.lax.while_loop under jit, {rnd['steps']} steps", rnd["jax"], "1.00x (baseline)"),
            (f"eagle.until_done (C++ loop), {threads} threads", rnd["pool"], f"{rnd['jax'] / rnd['pool']:.2f}x JAX's speed (target >= 8x)"),
            ("eagle.until_done (C++ loop), 1 thread", rnd["one"], f"{rnd['jax'] / rnd['one']:.2f}x JAX's speed")]
    (plan,) = eagle.plan.auto([osc], targets=("host",), cache_dir=cache_dir)
    with tempfile.TemporaryDirectory() as work:
        both = against_cpp(plan, start_planes(), threads, work)
    if both is not None:
        t_e, t_c = both
        rows.append((f"hand-written C++ blocked loop, {threads} threads", t_c, "1.00x (baseline)"))
        rows.append(("  eagle.until_done in alternating rounds", t_e, f"{t_e / t_c:.2f}x the C++ loop's time (target <= 1.5x)"))
    # The same loop with the final times sorted (samples stop in sample order), and the kernel
    # built with Guard(active_set=True) (launches over live samples only):
    rows.append(("  same, final times sorted: JAX", srt["jax"], "1.00x"))
    rows.append((f"  same, final times sorted: eagle, {threads} threads", srt["pool"], f"{srt['jax'] / srt['pool']:.2f}x JAX's speed"))
    rows.append(("  same, final times sorted: eagle, 1 thread", srt["one"], f"{srt['jax'] / srt['one']:.2f}x JAX's speed"))
    rows.append((f"  Guard(active_set=True), random: eagle, {threads} thr.", act["pool"], f"{act['jax'] / act['pool']:.2f}x JAX's speed"))
    rows.append(("  Guard(active_set=True), random: eagle, 1 thread", act["one"], f"{act['jax'] / act['one']:.2f}x JAX's speed"))
    return rows


# ------------------------------------------------------------------------------------------------
# 2. per-node launch overhead of a two-node graph


def overhead(cache_dir: str) -> list[str]:
    sp, hp = eagle.plan.auto([scale, shift], targets=("host",), cache_dir=cache_dir)

    def graph_at(n: int):
        u = np.linspace(-1, 1, n)
        w, z = np.zeros(n), np.zeros(n)
        b1, b2 = sp.bind(a=2.0, u=u, w=w), hp.bind(b=0.5, w=w, z=z)
        for b in (b1, b2):
            b._core.serial_threshold = 1 << 62  # one thread, as a small launch runs
        g = eagle.Graph().add(b1, name="scale").add(b2, name="shift").build()
        g.launch()
        assert np.array_equal(z, 2.0 * u + 0.5)
        return g

    small, reps = 256, 10_000
    g = graph_at(small)
    t_small = best(lambda: g.launch(reps)) / reps  # per graph launch (two nodes)
    rows = []
    big_n = 1 << 16
    gb = graph_at(big_n)
    t_big = best(lambda: gb.launch(200)) / 200
    per_sample = t_big / big_n
    work = per_sample * small
    per_node = (t_small - work) / 2
    rows.append(f"two-node graph at N = {small}, graph.launch({reps}): {t_small * 1e6:.3f} us per launch")
    rows.append(f"  kernels' own work, from N = {big_n} on one thread ({per_sample * 1e9:.3f} ns per sample "
                f"for both nodes): {work * 1e6:.3f} us")
    rows.append(f"  overhead per node: {per_node * 1e6:.3f} us (target <= 2 us)")
    huge_n = 1 << 20
    gh = graph_at(huge_n)
    t_huge = best(lambda: gh.launch(20), repeat=5) / 20
    alt = (t_small - t_huge / huge_n * small) / 2
    rows.append(f"  (with the work estimated from N = {huge_n}, memory-bound: {alt * 1e6:.3f} us per node)")
    return rows


def main() -> None:
    if len(sys.argv) > 1 and sys.argv[1] == "--worker":
        side, case, out, cache_dir = sys.argv[2:6]
        result = jax_worker(case, out) if side == "jax" else eagle_worker(case, out, cache_dir)
        print(json.dumps(result))
        return
    tmp = tempfile.mkdtemp()
    cache = os.path.join(tmp, "cache")
    rows = stepping(cache)
    print(f"{N} oscillators stepped until each stops (float64, results agree to 1e-12 before timing;")
    print(f"JAX and eagle each in their own processes, {ROUNDS} alternating rounds, best of {REPEAT} runs each)")
    print(f"{'':52s} {'time':>10s}  ratio")
    for name, t, ratio in rows:
        print(f"{name:52s} {t * 1e3:8.2f} ms  {ratio}")
    print()
    for line in overhead(cache):
        print(line)


if __name__ == "__main__":
    main()
