"""Random draws per second per core: hawk kernels (`rng: Random`) against jax.random on the CPU,
side by side, for every distribution of a Random parameter (uniform, normal, exponential,
bernoulli, lognormal, gamma, poisson, randint, truncated_normal) in float32 and float64.

    python benchmarks/random_draws.py            # prints a table, writes benchmarks/results/random_draws.json
    python benchmarks/random_draws.py --quick    # a small N, for a smoke run (no JSON unless --json)

Both sides make the same numbers (checked before timing: the bit-exact distributions bit for
bit, the others to the documented tolerance): draw j of sample i is jax.random's value of
fold_in(fold_in(fold_in(key, step), i), j). The hawk side runs one launch of a kernel making
DRAWS draws per sample on one thread (N below the launcher's serial threshold is split off by
setting the bound kernel's threshold above N), the jax side the same draws as one jitted
vmap over the samples (XLA's CPU backend: one thread for this elementwise work). Not a timed
test: it prints and records what it measured.
"""

from __future__ import annotations

import os
import sys

# One thread on the jax side too (XLA's CPU backend may split elementwise work otherwise).
os.environ.setdefault("XLA_FLAGS", "--xla_cpu_multi_thread_eigen=false intra_op_parallelism_threads=1")

import argparse  # noqa: E402
import json  # noqa: E402
import platform  # noqa: E402
import time  # noqa: E402
from pathlib import Path  # noqa: E402

import jax  # noqa: E402
import jax.numpy as jnp  # noqa: E402
import numpy as np  # noqa: E402

import eagle.plan  # noqa: E402
import hawk  # noqa: E402
from hawk import Mutable, Random, Scalar  # noqa: E402

jax.config.update("jax_enable_x64", True)

DRAWS = 4  # draws per sample per launch (summed, so none is dropped)

# name: (the kernel's expression of one draw, jax's value of one draw from subkey k in dtype dt,
# whether the two are equal bit for bit)
DISTS = {
    "uniform": ("rng.uniform()", lambda k, dt: jax.random.uniform(k, (), dt), True),
    "normal": ("rng.normal()", lambda k, dt: jax.random.normal(k, (), dt), False),
    "exponential": ("rng.exponential()", lambda k, dt: jax.random.exponential(k, (), dt), False),
    "bernoulli": ("(1.0 if rng.bernoulli(0.3) else 0.0)",
                  lambda k, dt: jax.random.bernoulli(k, jnp.asarray(0.3, dt)).astype(dt), True),
    "lognormal": ("rng.lognormal(0.5)", lambda k, dt: jax.random.lognormal(k, 0.5, (), dt), False),
    "gamma": ("rng.gamma(2.5)", lambda k, dt: jax.random.gamma(k, 2.5, (), dt), False),
    "poisson": ("float(rng.poisson(4.0))", lambda k, dt: jax.random.poisson(k, 4.0, ()).astype(dt), True),
    "randint": ("float(rng.randint(0, 100))",
                lambda k, dt: jax.random.randint(k, (), 0, 100, jnp.int32).astype(dt), True),
    "truncated_normal": ("rng.truncated_normal(-1.0, 2.0)",
                         lambda k, dt: jax.random.truncated_normal(k, -1.0, 2.0, (), dt), False),
}


def make_kernel(name: str):
    """The hawk kernel summing DRAWS draws of distribution `name` per sample."""
    expr = DISTS[name][0]
    src = (f"@hawk.kernel\ndef draws_{name}(rng: Random, y: Mutable[Scalar]):\n"
           f"    y = {' + '.join([expr] * DRAWS)}\n")
    ns = {"hawk": hawk, "Random": Random, "Mutable": Mutable, "Scalar": Scalar}
    exec(compile(src, f"<random_draws {name}>", "exec"), ns)
    return ns[f"draws_{name}"]


def best(fn, repeat: int = 7) -> float:
    fn()
    times = []
    for _ in range(repeat):
        t0 = time.perf_counter()
        fn()
        times.append(time.perf_counter() - t0)
    return min(times)


def jax_draws(name: str, dtype, n: int):
    f = DISTS[name][1]
    dt = jnp.dtype(dtype)

    @jax.jit
    def run(key):
        ks = jax.random.fold_in(key, 0)  # eagle's launch 0; step 0 below

        def one(i):
            ki = jax.random.fold_in(jax.random.fold_in(ks, 0), i)
            total = f(jax.random.fold_in(ki, 0), dt)
            for j in range(1, DRAWS):
                total = total + f(jax.random.fold_in(ki, j), dt)
            return total

        return jax.vmap(one)(jnp.arange(n, dtype=jnp.uint32))

    return run


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--quick", action="store_true")
    ap.add_argument("--json", default=None, help="where to write the results (default: "
                    "benchmarks/results/random_draws.json for a full run, none for --quick)")
    ap.add_argument("--march", default=None, help="compile raptor's kernels for this -march (x86-64-v3: AVX2) "
                    "instead of the host's: raptor's default flags with -march=native replaced")
    args = ap.parse_args()
    sys.path.insert(0, str(Path(__file__).resolve().parent))
    import perf_card  # noqa: E402  (the card's flags: the same -march replacement)

    if args.march:
        if os.environ.get("RAPTOR_CXXFLAGS"):
            raise SystemExit("random_draws: --march with RAPTOR_CXXFLAGS set: unset one of them")
        os.environ["RAPTOR_CXXFLAGS"] = " ".join(
            perf_card.with_march(perf_card.raptor_default_flags(dict(os.environ)).split(), args.march))
    flags = os.environ.get("RAPTOR_CXXFLAGS") or perf_card.raptor_default_flags(dict(os.environ))
    n = 1 << 10 if args.quick else 1 << 16
    names = list(DISTS)
    plans = dict(zip(names, eagle.plan.auto([make_kernel(nm) for nm in names])))
    key = jax.random.key(0)
    rows = []
    print(f"N = {n} samples x {DRAWS} draws, one thread each side")
    print(f"{'draw':17} {'dtype':8} {'hawk Mdraws/s':>14} {'jax Mdraws/s':>13} {'hawk / jax':>11}")
    for name in names:
        for dtype in (np.float32, np.float64):
            y = np.zeros(n, dtype)
            bound = plans[name].bind(rng=0, y=y)
            bound._core.serial_threshold = n + 1  # one thread: draws per second per core
            ref = jax_draws(name, dtype, n)
            bound.launch()  # launch 0: key fold_in(key, 0), as ref draws
            want = np.asarray(ref(key))
            if DISTS[name][2]:  # sums of bit-exact draws in the same order: bit for bit
                np.testing.assert_array_equal(y, want)
            else:
                np.testing.assert_allclose(y, want, rtol=1e-5 if dtype == np.float32 else 1e-11, atol=1e-5)
            t_hawk = best(bound.launch)
            t_jax = best(lambda: ref(key).block_until_ready())
            rate = lambda t: n * DRAWS / t  # noqa: E731
            rows.append({"dist": name, "dtype": np.dtype(dtype).name, "n": n, "draws_per_sample": DRAWS,
                         "raptor_draws_per_s": rate(t_hawk), "jax_draws_per_s": rate(t_jax),
                         "ratio": t_jax / t_hawk})
            print(f"{name:17} {np.dtype(dtype).name:8} {rate(t_hawk) / 1e6:14.1f} {rate(t_jax) / 1e6:13.1f} "
                  f"{t_jax / t_hawk:10.2f}x")
    out = args.json or (None if args.quick else str(Path(__file__).resolve().parent / "results" / "random_draws.json"))
    if out:
        from machine_info import cpu_info  # the CPU model and its vector ISA, as the card records them

        meta = {"machine": platform.machine(), **cpu_info(), "jax": jax.__version__, "date": time.strftime("%Y-%m-%d"),
                "march": args.march or "native", "flags": flags,
                "threads": 1, "protocol": "best of 7 after one warm-up; one launch of N samples x DRAWS draws"}
        Path(out).write_text(json.dumps({"meta": meta, "rows": rows}, indent=1) + "\n")
        print(f"wrote {out}")


if __name__ == "__main__":
    main()
