"""Loops that run until each sample is done, inside one kernel: Newton's method to a tolerance
and a random walk to a barrier, with `break` in a `for` loop far too long to unroll.

A `for` loop of more than 4096 iterations is a real loop in the compiled kernel (docs/
language.md, "Long loops"): each sample leaves it at its own iteration, derivatives go
through the iterations it took, and random draws in it are numbered as jax.random would
number them. The script:

1. solves Kepler's equation E - e sin E = M for 2048 (M, e) pairs by Newton's iteration, each
   to a tolerance of 1e-13, checks E against the equation and jax.grad of E with respect to
   e against the closed form dE/de = sin E / (1 - e cos E), and jacfwd with respect to M
   against 1 / (1 - e cos E);
2. walks 4096 simple random walks of step +-0.05 from 0 until |x| >= 1 (one rng.uniform()
   per step), checks the mean number of steps against the gambler's-ruin value (1/0.05)^2 =
   400, and the walks' step counts against the same walks written in jax.numpy with
   jax.random inside lax.while_loop, sample by sample;
3. writes E(M) with its derivative, and the distribution of the walks' lengths, to
   ``loops.png``.

Run it from this folder (``bash scripts/demo.sh`` runs every example):
    python 08_loops_until_done_per_sample.py
"""

import os
import tempfile

os.environ.setdefault("XLA_PYTHON_CLIENT_PREALLOCATE", "false")
import jax
import jax.numpy as jnp
import matplotlib
import numpy as np

matplotlib.use("Agg")
import matplotlib.pyplot as plt

import hawk
from eagle.frameworks import jax as eagle_jax
from hawk import Mutable, Param, Random, Scalar
from hawk.math import cos, sin

jax.config.update("jax_enable_x64", True)

OUT = os.environ.get("RAPTOR_EXAMPLES_OUT", tempfile.mkdtemp())
os.makedirs(OUT, exist_ok=True)


@hawk.kernel
def kepler(m: Scalar, e: Scalar, E: Mutable[Scalar], iterations: Mutable[Scalar]):
    x = m + e * sin(m)  # a start close to the root for e < 1
    n = 0.0
    for _ in range(100_000):  # a bounded while: leave at the tolerance
        f = x - e * sin(x) - m
        x = x - f / (1.0 - e * cos(x))
        n = n + 1.0
        if abs(f) < 1e-13:
            break
    E = x
    iterations = n


@hawk.kernel
def walk(x0: Scalar, step: Param, rng: Random, steps: Mutable[Scalar], end: Mutable[Scalar]):
    x = x0
    n = 0.0
    for _ in range(1_000_000):
        if rng.uniform() < 0.5:  # draw n of the sample: jax.random's number
            x = x + step
        else:
            x = x - step
        n = n + 1.0
        if abs(x) > 1.0 - 0.5 * step:
            break
    steps = n
    end = x


# 1. Kepler's equation, its derivatives through the iterations taken
N = 2048
rng = np.random.default_rng(7)
M = jnp.asarray(rng.uniform(0.0, 2 * np.pi, N))
ecc = jnp.asarray(rng.uniform(0.0, 0.9, N))
solve = eagle_jax.function(kepler, wrt=("m", "e"))
E, its = solve(M, ecc)
residual = float(jnp.abs(E - ecc * jnp.sin(E) - M).max())
print(f"Kepler: {N} solves, {int(its.min())}-{int(its.max())} Newton iterations, max |E - e sin E - M| = {residual:.2e}")
assert residual < 1e-12
dE_de = jax.grad(lambda e: solve(M, e)[0].sum())(ecc)
want = jnp.sin(E) / (1.0 - ecc * jnp.cos(E))
err = float(jnp.abs(dE_de - want).max())
print(f"jax.grad of E with respect to e against sin E / (1 - e cos E): max |difference| = {err:.2e}")
assert err < 1e-9
dE_dM = jax.jacfwd(lambda m: solve(m, ecc[:8])[0])(M[:8])
err_m = float(jnp.abs(jnp.diag(dE_dM) - 1.0 / (1.0 - ecc[:8] * jnp.cos(E[:8]))).max())
print(f"jax.jacfwd with respect to M against 1 / (1 - e cos E): max |difference| = {err_m:.2e}")
assert err_m < 1e-9

# 2. Random walks to the barrier, against jax.random in lax.while_loop
W, STEP, SEED = 4096, 0.05, 11
key = jax.random.key(SEED)
steps, end = eagle_jax.function(walk)(jnp.zeros(W), STEP, key)
mean = float(steps.mean())
se = float(steps.std()) / np.sqrt(W)
print(f"random walks: mean steps to |x| = 1: {mean:.1f} +- {se:.1f} (gambler's ruin: {(1 / STEP) ** 2:.0f})")
assert abs(mean - (1 / STEP) ** 2) < 4 * se
assert bool(jnp.all(jnp.abs(jnp.abs(end) - 1.0) < 1e-9))


@jax.jit
def reference(key):
    k0 = jax.random.fold_in(key, 0)  # step 0 of the call

    def one(i):
        ki = jax.random.fold_in(k0, i)

        def cond(c):
            x, n = c
            return jnp.abs(x) <= 1.0 - 0.5 * STEP

        def body(c):
            x, n = c
            u = jax.random.uniform(jax.random.fold_in(ki, n.astype(jnp.uint32)), dtype=jnp.float64)
            return jnp.where(u < 0.5, x + STEP, x - STEP), n + 1

        return jax.lax.while_loop(cond, body, (0.0, jnp.int32(0)))[1]

    return jax.vmap(one)(jnp.arange(W, dtype=jnp.uint32))


ref_steps = np.asarray(reference(key))
same = int((ref_steps == np.asarray(steps)).sum())
print(f"the same walks in jax.numpy + jax.random: {same} of {W} step counts equal")
assert same == W

# 3. The plot
order = np.argsort(np.asarray(M))
fig, (ax0, ax1) = plt.subplots(1, 2, figsize=(10, 4))
for lo, hi in ((0.0, 0.3), (0.6, 0.9)):
    sel = order[(np.asarray(ecc)[order] >= lo) & (np.asarray(ecc)[order] < hi)]
    ax0.plot(np.asarray(M)[sel], np.asarray(E)[sel], ".", ms=2, label=f"E, {lo} <= e < {hi}")
    ax0.plot(np.asarray(M)[sel], np.asarray(dE_de)[sel], ".", ms=2, label=f"dE/de (jax.grad), {lo} <= e < {hi}")
ax0.set_xlabel("mean anomaly M")
ax0.set_title("Kepler's equation by Newton's iteration")
ax0.legend(fontsize=7)
ax1.hist(np.asarray(steps), bins=60, color="C2")
ax1.axvline((1 / STEP) ** 2, color="k", lw=0.8, label="expected mean (1/step)^2")
ax1.set_xlabel("steps to |x| = 1")
ax1.set_title(f"{W} random walks, one long loop each")
ax1.legend()
fig.tight_layout()
path = os.path.join(OUT, "loops.png")
fig.savefig(path, dpi=110)
print("wrote", path)
