"""Random draws per second per core: hawk kernels (`rng: Random`) against jax.random on the CPU,
side by side, for uniform and normal draws in float32 and float64.

    python benchmarks/random_draws.py            # prints a table: draws/s per core and the ratio
    python benchmarks/random_draws.py --quick    # a small N, for a smoke run

Both sides make the same numbers (checked before timing: uniform bit for bit, normal to the
documented tolerance): draw j of sample i is jax.random's value of
fold_in(fold_in(fold_in(key, step), i), j). The hawk side runs one launch of a kernel making
DRAWS draws per sample on one thread (N below the launcher's serial threshold is split off by
setting the bound kernel's threshold above N), the jax side the same draws as one jitted
vmap over the samples (XLA's CPU backend: one thread for this elementwise work). Not a timed
test: it prints what it measured.
"""

from __future__ import annotations

import os
import sys

# One thread on the jax side too (XLA's CPU backend may split elementwise work otherwise).
os.environ.setdefault("XLA_FLAGS", "--xla_cpu_multi_thread_eigen=false intra_op_parallelism_threads=1")

import argparse  # noqa: E402
import time  # noqa: E402

import jax  # noqa: E402
import jax.numpy as jnp  # noqa: E402
import numpy as np  # noqa: E402

import eagle.plan  # noqa: E402
import hawk  # noqa: E402
from hawk import Mutable, Random, Scalar  # noqa: E402

jax.config.update("jax_enable_x64", True)

DRAWS = 4  # draws per sample per launch (summed, so none is dropped)


@hawk.kernel
def uniforms(rng: Random, y: Mutable[Scalar]):
    y = rng.uniform() + rng.uniform() + rng.uniform() + rng.uniform()


@hawk.kernel
def normals(rng: Random, y: Mutable[Scalar]):
    y = rng.normal() + rng.normal() + rng.normal() + rng.normal()


def best(fn, repeat: int = 7) -> float:
    fn()
    times = []
    for _ in range(repeat):
        t0 = time.perf_counter()
        fn()
        times.append(time.perf_counter() - t0)
    return min(times)


def jax_draws(kind: str, dtype, n: int):
    f = jax.random.uniform if kind == "uniform" else jax.random.normal

    @jax.jit
    def run(key):
        ks = jax.random.fold_in(key, 0)  # eagle's launch 0; step 0 below

        def one(i):
            ki = jax.random.fold_in(jax.random.fold_in(ks, 0), i)
            total = f(jax.random.fold_in(ki, 0), (), dtype)
            for j in range(1, DRAWS):
                total = total + f(jax.random.fold_in(ki, j), (), dtype)
            return total

        return jax.vmap(one)(jnp.arange(n, dtype=jnp.uint32))

    return run


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--quick", action="store_true")
    args = ap.parse_args()
    n = 1 << 12 if args.quick else 1 << 20
    plans = dict(zip(("uniform", "normal"), eagle.plan.auto([uniforms, normals])))
    key = jax.random.key(0)
    print(f"N = {n} samples x {DRAWS} draws, one thread each side")
    print(f"{'draw':8} {'dtype':8} {'hawk Mdraws/s':>14} {'jax Mdraws/s':>13} {'hawk / jax':>11}")
    for kind in ("uniform", "normal"):
        for dtype in (np.float32, np.float64):
            y = np.zeros(n, dtype)
            bound = plans[kind].bind(rng=0, y=y)
            bound._core.serial_threshold = n + 1  # one thread: draws per second per core
            ref = jax_draws(kind, dtype, n)
            bound.launch()  # launch 0: key fold_in(key, 0), as ref draws
            want = np.asarray(ref(key))
            if kind == "uniform":
                # the sum of bit-exact draws in the same order: bit for bit
                np.testing.assert_array_equal(y, want)
            else:
                np.testing.assert_allclose(y, want, rtol=1e-5 if dtype == np.float32 else 1e-12, atol=1e-5)
            t_hawk = best(bound.launch)
            t_jax = best(lambda: ref(key).block_until_ready())
            rate = lambda t: n * DRAWS / t / 1e6  # noqa: E731
            print(f"{kind:8} {np.dtype(dtype).name:8} {rate(t_hawk):14.1f} {rate(t_jax):13.1f} {t_jax / t_hawk:10.2f}x")


if __name__ == "__main__":
    main()
