"""Overdamped Langevin dynamics: 4096 particles in a harmonic well, with ``rng.normal()``.

Each particle follows the Euler-Maruyama step of dx = -(k / gamma) x dt + sqrt(2 kT / gamma) dW,
written as a hawk stepping kernel whose noise is drawn in the kernel (``rng: Random``). eagle
binds it with a seed; launch n draws with ``fold_in(key, n)``, step s of the launch, particle i,
draw 0, exactly as ``jax.random`` would (docs/language.md, "Random numbers"). The script:

- runs 150 launches of 10 steps, and checks the ensemble's stationary variance against the
  equipartition value kT / k (and the Euler scheme's exact stationary variance);
- runs the same ensemble written in jax.numpy with jax.random, and checks that the
  trajectories are the same (max difference printed and asserted);
- writes a few trajectories and the ensemble variance over time to ``langevin.png``.

Run it from this folder (``bash scripts/demo.sh`` runs every example):
    python 06_langevin.py
"""

import os
import tempfile

os.environ.setdefault("XLA_PYTHON_CLIENT_PREALLOCATE", "false")  # leave GPU memory for other libraries
import jax
import jax.numpy as jnp
import matplotlib
import numpy as np

matplotlib.use("Agg")
import matplotlib.pyplot as plt

import eagle.plan
import hawk
from hawk import Mutable, Param, Random, Scalar
from hawk.math import sqrt

jax.config.update("jax_enable_x64", True)  # the reference runs in float64, as the kernel

OUT = os.environ.get("RAPTOR_EXAMPLES_OUT", tempfile.mkdtemp())
os.makedirs(OUT, exist_ok=True)

STEPS = 10  # steps per launch


@hawk.kernel(steps=STEPS)
def langevin(k: Param, gamma: Param, kT: Param, dt: Param, rng: Random, x: Mutable[Scalar],
             t: Mutable[Scalar]):
    x = x - dt * (k / gamma) * x + sqrt(2.0 * kT * dt / gamma) * rng.normal()
    t = t + dt


N, LAUNCHES, SEED = 4096, 150, 2026
K, GAMMA, KT, DT = 2.0, 1.0, 0.5, 0.01
(plan,) = eagle.plan.auto([langevin])
x = np.full(N, 2.0)  # every particle starts at x = 2, far from equilibrium
t = np.zeros(N)
bound = plan.bind(k=K, gamma=GAMMA, kT=KT, dt=DT, rng=SEED, x=x, t=t)
traj, var = [x.copy()], [x.var()]
for _ in range(LAUNCHES):
    bound.launch()  # launch n: key fold_in(key(SEED), n), fresh numbers every launch
    traj.append(x.copy())
    var.append(x.var())
traj = np.array(traj)

# Stationary variance: equipartition kT / k; the Euler scheme's own is slightly larger.
a = 1.0 - DT * K / GAMMA
euler_var = (2.0 * KT * DT / GAMMA) / (1.0 - a * a)
late = traj[len(traj) // 2:]
measured = late.var(axis=1).mean()
print(f"stationary variance: measured {measured:.4f}, kT/k = {KT / K:.4f}, Euler scheme {euler_var:.4f}")
# 4096 particles: the variance's relative standard error is about sqrt(2 / N) ~ 2%
assert abs(measured - euler_var) < 0.06 * euler_var, (measured, euler_var)
assert abs(measured - KT / K) < 0.08 * KT / K, (measured, KT / K)


# The same ensemble in jax.numpy: the noise of particle i in step s of launch n is
# jax.random.normal(fold_in(fold_in(fold_in(fold_in(key, n), s), i), 0)).
@jax.jit
def reference(x0):
    key = jax.random.key(SEED)
    idx = jnp.arange(N, dtype=jnp.uint32)

    def launch(x, n):
        kn = jax.random.fold_in(key, n)

        def step(x, s):
            ks = jax.random.fold_in(kn, s)
            z = jax.vmap(lambda i: jax.random.normal(jax.random.fold_in(jax.random.fold_in(ks, i), 0)))(idx)
            return x - DT * (K / GAMMA) * x + jnp.sqrt(2.0 * KT * DT / GAMMA) * z, None

        x, _ = jax.lax.scan(step, x, jnp.arange(STEPS, dtype=jnp.uint32))
        return x, x

    _, xs = jax.lax.scan(launch, x0, jnp.arange(LAUNCHES, dtype=jnp.uint32))
    return jnp.concatenate([x0[None], xs])


ref = np.asarray(reference(jnp.full(N, 2.0)))
diff = np.abs(ref - traj).max()
print(f"hawk kernel vs jax.numpy + jax.random: max |difference| over {LAUNCHES * STEPS} steps = {diff:.3g}")
assert diff < 1e-10, diff
assert np.allclose(t, LAUNCHES * STEPS * DT)

fig, (ax0, ax1) = plt.subplots(1, 2, figsize=(10, 4))
time = np.arange(LAUNCHES + 1) * STEPS * DT
for i in range(6):
    ax0.plot(time, traj[:, i], lw=0.8)
ax0.set_xlabel("t")
ax0.set_ylabel("x")
ax0.set_title("six of 4096 particles")
ax1.plot(time, var, label="ensemble variance (hawk kernel)")
ax1.plot(time, ref.var(axis=1), "--", label="jax.numpy + jax.random")
ax1.axhline(KT / K, color="k", lw=0.8, label="kT / k")
ax1.set_xlabel("t")
ax1.set_title("relaxation to equilibrium")
ax1.legend()
fig.tight_layout()
path = os.path.join(OUT, "langevin.png")
fig.savefig(path, dpi=110)
print("wrote", path)
