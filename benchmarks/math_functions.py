"""raptor's own math functions beside Numba and NumPy: one kernel per function,
``y = f(x[, z]) + y`` over N samples, timed in each system the way its users would write it.

    python benchmarks/math_functions.py --json benchmarks/results/math_functions.json
    python benchmarks/render_docs.py    # the table in docs/performance.md

Arms, each in processes of its own (their thread pools would disturb each other), taking turns,
``--rounds`` processes each; a process reports its best of five timings of each cell, the table
the median over processes:

- raptor: the kernel through ``eagle.plan.auto`` and ``bound.launch()`` (the default flags, two
  threads on a 2-core machine);
- Numba: ``@njit(parallel=True)`` with a ``prange`` loop calling ``math.pow`` / ``math.hypot`` /
  ``math.tan`` / ``math.asin`` / ``math.acos`` (its LLVM build of the same loop);
- NumPy: the ufunc into a preallocated buffer and an in-place add (one thread, as NumPy runs).

Every arm's ``y`` after one call is checked against NumPy's within 4 ulps of the dtype (the
functions differ in their last bits: each is within an ulp of the exact value). Start reading
at ``main``.
"""

import argparse
import importlib.util
import json
import os
import statistics
import subprocess
import sys
import time

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import machine_info  # noqa: E402

# name -> (arguments it reads, NumPy's ufunc of them: the NumPy arm and every arm's reference)
CASES = {
    "pow": (("x", "z"), np.power),
    "hypot": (("x", "z"), np.hypot),
    "tan": (("x",), np.tan),
    "asin": (("w",), np.arcsin),
    "acos": (("w",), np.arccos),
}
SYSTEMS = ("raptor", "numba", "numpy")


def inputs(n: int, dtype: type) -> dict[str, np.ndarray]:
    """The arguments: x on [0.1, 3), z on [-2, 2), w on [-1, 1), y zero."""
    rng = np.random.default_rng([20261207, n])
    return {"x": rng.uniform(0.1, 3.0, n).astype(dtype), "z": rng.uniform(-2.0, 2.0, n).astype(dtype),
            "w": rng.uniform(-1.0, 1.0, n).astype(dtype), "y": np.zeros(n, dtype)}


def raptor_runners() -> dict[str, object]:
    """Each case's kernel, planned once: name -> plan."""
    import eagle.plan
    import hawk
    import hawk.math as hm
    from hawk import Mutable, Scalar

    @hawk.kernel
    def k_pow(x: Scalar, z: Scalar, y: Mutable[Scalar]):
        y = x ** z + y

    @hawk.kernel
    def k_hypot(x: Scalar, z: Scalar, y: Mutable[Scalar]):
        y = hm.hypot(x, z) + y

    @hawk.kernel
    def k_tan(x: Scalar, y: Mutable[Scalar]):
        y = hm.tan(x) + y

    @hawk.kernel
    def k_asin(w: Scalar, y: Mutable[Scalar]):
        y = hm.asin(w) + y

    @hawk.kernel
    def k_acos(w: Scalar, y: Mutable[Scalar]):
        y = hm.acos(w) + y

    return dict(zip(CASES, eagle.plan.auto([k_pow, k_hypot, k_tan, k_asin, k_acos])))


def numba_runners() -> dict[str, object]:
    """Each case as a prange loop: name -> function(args..., y)."""
    import math

    from numba import njit, prange

    @njit(parallel=True, cache=False)
    def n_pow(x, z, y):
        for i in prange(y.size):
            y[i] = math.pow(x[i], z[i]) + y[i]

    @njit(parallel=True, cache=False)
    def n_hypot(x, z, y):
        for i in prange(y.size):
            y[i] = math.hypot(x[i], z[i]) + y[i]

    @njit(parallel=True, cache=False)
    def n_tan(x, y):
        for i in prange(y.size):
            y[i] = math.tan(x[i]) + y[i]

    @njit(parallel=True, cache=False)
    def n_asin(w, y):
        for i in prange(y.size):
            y[i] = math.asin(w[i]) + y[i]

    @njit(parallel=True, cache=False)
    def n_acos(w, y):
        for i in prange(y.size):
            y[i] = math.acos(w[i]) + y[i]

    return dict(zip(CASES, (n_pow, n_hypot, n_tan, n_asin, n_acos)))


def best_of(call) -> float:
    """The best of five timings of `call`, repeated so that each timing lasts about 20 ms."""
    call()
    t0 = time.perf_counter()
    call()
    reps = max(3, int(0.02 / max(time.perf_counter() - t0, 1e-7)))
    best = float("inf")
    for _ in range(5):
        t0 = time.perf_counter()
        for _ in range(reps):
            call()
        best = min(best, (time.perf_counter() - t0) / reps)
    return best


def worker(system: str, ns: list[int]) -> dict:
    """Times every cell in this process; returns {cell: seconds} and, per cell, how many ulps of
    the dtype y after one call is from NumPy's function of the same arguments, at most."""
    runners = raptor_runners() if system == "raptor" else numba_runners() if system == "numba" else None
    times, ulps = {}, {}
    for name, (args, ufunc) in CASES.items():
        for dtype in (np.float64, np.float32):
            for n in ns:
                d = inputs(n, dtype)
                cell = f"{name} {np.dtype(dtype).name} {n}"
                y = d["y"]
                if system == "raptor":
                    bound = runners[name].bind(**{a: d[a] for a in args}, y=y)
                    call = bound.launch
                elif system == "numba":
                    fn, arrs = runners[name], [d[a] for a in args]
                    def call(fn=fn, arrs=arrs, y=y):
                        fn(*arrs, y)
                else:
                    buf = np.empty_like(y)
                    arrs = [d[a] for a in args]
                    def call(ufunc=ufunc, arrs=arrs, buf=buf, y=y):
                        ufunc(*arrs, out=buf)
                        np.add(y, buf, out=y)
                y[:] = 0
                call()
                want = ufunc(*[d[a] for a in args]).astype(dtype)
                ulps[cell] = float(np.max(np.abs(y - want) / np.spacing(np.abs(want))))
                times[cell] = best_of(call)
    return {"times": times, "ulps": ulps}


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--ns", default="65536,1048576", help="sample counts, comma-separated")
    p.add_argument("--rounds", type=int, default=3, help="processes per system, taking turns")
    p.add_argument("--systems", default=",".join(SYSTEMS))
    p.add_argument("--json", help="write the results here")
    p.add_argument("--worker", choices=SYSTEMS, help=argparse.SUPPRESS)
    a = p.parse_args(argv)
    ns = [int(v) for v in a.ns.split(",")]
    if a.worker:
        print(json.dumps(worker(a.worker, ns)))
        return 0
    systems = [s for s in a.systems.split(",") if s]
    unknown = sorted(set(systems) - set(SYSTEMS))
    if unknown or "raptor" not in systems:
        p.error(f"--systems: {', '.join(unknown) + ' unknown; ' if unknown else ''}the systems are "
                f"{', '.join(SYSTEMS)}, raptor among them (every time is shown over raptor's)")
    if "numba" in systems:
        if importlib.util.find_spec("numba") is None:
            print("numba is not installed (pip install numba): left out", file=sys.stderr)
            systems.remove("numba")
    runs: dict[str, list[dict]] = {s: [] for s in systems}
    for r in range(a.rounds):
        for s in systems:
            out = subprocess.run([sys.executable, os.path.abspath(__file__), "--worker", s, "--ns", a.ns],
                                 capture_output=True, text=True)
            if out.returncode != 0:
                raise SystemExit(f"the {s} worker failed:\n{out.stderr[-4000:]}")
            runs[s].append(json.loads(out.stdout.strip().splitlines()[-1]))
            print(f"[math_functions] round {r + 1}/{a.rounds}: {s} done", file=sys.stderr)
    for s in systems:  # every arm's y within 4 ulps of NumPy's (each function within an ulp)
        for cell, u in runs[s][0]["ulps"].items():
            if not u <= 4:
                raise SystemExit(f"{s} {cell}: {u} ulps from NumPy's")
    cells = list(runs[systems[0]][0]["times"])
    rows = []
    for cell in cells:
        name, dtype, n = cell.split()
        med = {s: statistics.median(run["times"][cell] for run in runs[s]) for s in systems}
        spread = {s: max(run["times"][cell] for run in runs[s]) / min(run["times"][cell] for run in runs[s])
                  for s in systems}
        rows.append({"function": name, "dtype": dtype, "n": int(n),
                     "us": {s: med[s] * 1e6 for s in systems}, "spread": spread})
        line = "  ".join(f"{s} {med[s] * 1e6:9.1f} us" for s in systems)
        ratios = "  ".join(f"{s}/raptor {med[s] / med['raptor']:6.2f}" for s in systems if s != "raptor")
        print(f"{cell:28s} {line}  {ratios}")
    result = {"machine": machine_info.cpu_info(), "raptor": machine_info.raptor_revision(),
              "date": time.strftime("%Y-%m-%d"), "rounds": a.rounds, "systems": systems, "rows": rows}
    if a.json:
        with open(a.json, "w") as f:
            json.dump(result, f, indent=1)
    return 0


if __name__ == "__main__":
    sys.exit(main())
