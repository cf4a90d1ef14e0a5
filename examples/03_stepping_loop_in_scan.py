"""A stepping loop in lax.scan: 256 balls fly until they land, each stopped where it lands.

A hawk stepping kernel (``steps=1``) with a ``Terminated`` mask decides which balls have
landed; ``eagle.frameworks.jax.function`` returns that mask as its last output, and
``lax.scan`` carries it to the next step, so a landed ball is never touched again. The same
loop runs on every platform JAX has (identical numbers), the mask is donated and updated in
place from a hand-written loop, and ``grad`` runs backward through all 360 steps. Writes the
paths of 12 balls and the landing count to ``stepping_loop.png``.

This is the user's page "A stepping loop in lax.scan" as a script; it prints the page's lines.

Run it from this folder (``bash scripts/demo.sh`` runs every example):
    python 03_stepping_loop_in_scan.py
"""

import os
import tempfile

os.environ.setdefault("XLA_PYTHON_CLIENT_PREALLOCATE", "false")  # leave GPU memory for other libraries
import jax
import jax.numpy as jnp
import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt

import hawk
from eagle.frameworks import jax as eagle_jax
from hawk import Mutable, Param, Terminated, Vector
from hawk.math import norm, vec

jax.config.update("jax_enable_x64", True)  # the kernel runs in float64

OUT = os.environ.get("RAPTOR_EXAMPLES_OUT", tempfile.mkdtemp())
os.makedirs(OUT, exist_ok=True)


# A kernel that finishes its own samples: `terminated = ...` marks a ball as landed.
@hawk.kernel(steps=1)
def flight(r: Vector[3], v: Vector[3], cd: Param, dt: Param, g: Param, terminated: Terminated,
           r_next: Mutable[Vector[3]], v_next: Mutable[Vector[3]]):
    a = vec(0.0, 0.0, -g) - cd * norm(v) * v
    v_new = v + dt * a
    v_next = v_new
    r_next = r + dt * v_new
    terminated = r_next[2] < 0.0


step = eagle_jax.function(flight, wrt=("r", "v", "cd"))
print(repr(step))  # inputs in signature order, the mask among them; outputs with the mask last

# Scan the flight. A finished ball's outputs are zero (the kernel did not write them), so
# jnp.where keeps its last position and velocity.
N, STEPS, DT, G, CD = 256, 360, 0.02, 9.81, 0.004
k = jax.random.split(jax.random.key(0), 3)
speed = 20 + 20 * jax.random.uniform(k[0], (N,))
elevation = jnp.radians(20) + jnp.radians(50) * jax.random.uniform(k[1], (N,))
heading = 2 * jnp.pi * jax.random.uniform(k[2], (N,))
v0 = jnp.stack([speed * jnp.cos(elevation) * jnp.cos(heading),
                speed * jnp.cos(elevation) * jnp.sin(heading),
                speed * jnp.sin(elevation)])
r0 = jnp.zeros((3, N)).at[2].set(1.0)


def body(carry, _, cd=CD):
    r, v, landed = carry
    r_next, v_next, landed_next = step(r, v, cd, DT, G, landed)
    r_next, v_next = jnp.where(landed, r, r_next), jnp.where(landed, v, v_next)
    return (r_next, v_next, landed_next), (r_next, landed_next.sum())


@jax.jit
def fly(r, v, landed):
    return jax.lax.scan(body, (r, v, landed), None, length=STEPS)


(r, v, landed), (path, count) = fly(r0, v0, jnp.zeros(N, dtype=bool))
print("landed after", STEPS, "steps:", int(landed.sum()), "of", N)
print("landed after every 60th step:", count[59::60].tolist())

# Left, the paths of 12 balls, each frozen where it landed; right, how many have landed.
fig, (ax, bx) = plt.subplots(1, 2, figsize=(9, 3.4))
for i, colour in zip(range(12), plt.cm.viridis([j / 11 for j in range(12)])):
    ax.plot(path[:, 0, i], path[:, 2, i], color=colour, lw=1.2)
ax.set(xlabel="x (m)", ylabel="height (m)", title="12 of the 256 balls")
bx.plot(jnp.arange(1, STEPS + 1) * DT, count)
bx.set(xlabel="time (s)", ylabel="balls landed", title="the mask grows, never shrinks")
plt.tight_layout()
figure = os.path.join(OUT, "stepping_loop.png")
fig.savefig(figure, dpi=110)

# The same loop on every platform JAX has: inline on the CPU, on XLA's stream on a GPU.
results = {}
for platform in ("cpu", "gpu"):
    try:
        device = jax.devices(platform)[0]
    except RuntimeError:
        continue  # this JAX has no such device
    inputs = [jax.device_put(x, device) for x in (r0, v0, jnp.zeros(N, dtype=bool))]
    (r_p, _, landed_p), _ = fly(*inputs)
    results[platform] = (int(landed_p.sum()), float(jnp.hypot(r_p[0], r_p[1]).mean()))
    print(f"{platform}: {results[platform][0]} landed, mean range {results[platform][1]:.6f} m")
if len(results) == 2:
    assert results["cpu"][0] == results["gpu"][0] and abs(results["cpu"][1] - results["gpu"][1]) < 1e-9
    print("identical on both")

# Your own loop instead of a scan: donate the old mask and the kernel updates it in place.
one_step = jax.jit(lambda r, v, landed: step(r, v, CD, DT, G, landed), donate_argnums=2)
mask = jnp.zeros(N, dtype=bool)
pointer = mask.unsafe_buffer_pointer()
_, _, mask_next = one_step(r0, v0, mask)
print("same buffer:", mask_next.unsafe_buffer_pointer() == pointer, "| the old handle is spent:", mask.is_deleted())


# A gradient through the whole loop: the slope of the mean range with respect to drag, with
# each ball's landing step held fixed (a landed ball contributes nothing after it lands).
def mean_range(cd):
    (r, _, _), _ = jax.lax.scan(lambda c, _: body(c, _, cd), (r0, v0, jnp.zeros(N, dtype=bool)), None, length=STEPS)
    return jnp.hypot(r[0], r[1]).mean()


range_m, slope = jax.jit(jax.value_and_grad(mean_range))(CD)
print(f"mean range {float(range_m):.3f} m; d range / d cd = {float(slope):.1f} m")
print("wrote", figure)
