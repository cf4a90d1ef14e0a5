"""Kernels on NumPy planes: a first tour of hawk and eagle on the CPU.

Ten thousand balls are thrown with air drag. A *map* kernel computes one velocity update
per ball; a *stepping* kernel with a ``Terminated`` mask flies every ball until it lands,
each at its own time. Both run on NumPy arrays that eagle binds by reference. We check the
map against the same update in NumPy, and plot a few trajectories to ``balls.png``.

Run it from this folder (``bash scripts/demo.sh`` runs every example):
    python 01_kernels_on_numpy.py
"""

import os
import tempfile

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt
import numpy as np

import eagle
import eagle.plan
import hawk
from hawk import Mutable, Param, Terminated, Vector
from hawk.math import norm, vec

OUT = os.environ.get("RAPTOR_EXAMPLES_OUT", tempfile.mkdtemp())
os.makedirs(OUT, exist_ok=True)
N, DT, G, CD = 10_000, 0.01, 9.81, 0.02


# A map: one pass per sample. Vector[3] planes have shape (3, N): components leading.
@hawk.kernel
def drag_step(v: Vector[3], cd: Param, dt: Param, g: Param, v_next: Mutable[Vector[3]]):
    a = vec(0.0, 0.0, -g) - cd * norm(v) * v
    v_next = v + dt * a


# A stepping kernel: each launch advances every live ball 10 steps; a landed ball is skipped.
@hawk.kernel(steps=10)
def fly(cd: Param, dt: Param, g: Param, terminated: Terminated,
        r: Mutable[Vector[3]], v: Mutable[Vector[3]]):
    a = vec(0.0, 0.0, -g) - cd * norm(v) * v
    v = v + dt * a
    r = r + dt * v
    terminated = r[2] < 0.0


# One plan per kernel, compiled together into one shared library (cached on disk).
drag_plan, fly_plan = eagle.plan.auto([drag_step, fly], targets=("host",))
print(f"compiled in {drag_plan.info['total_seconds']:.2f} s (cache hit: {drag_plan.info['cache_hit']})")

rng = np.random.default_rng(0)
speed = rng.uniform(10, 30, N)
angle = rng.uniform(0.3, 1.3, N)
heading = rng.uniform(0, 2 * np.pi, N)
v0 = np.stack([speed * np.cos(angle) * np.cos(heading), speed * np.cos(angle) * np.sin(heading), speed * np.sin(angle)])

# The map, against NumPy.
v_next = np.zeros_like(v0)
drag_plan.bind(v=v0, cd=CD, dt=DT, g=G, v_next=v_next).launch()
ref = v0 + DT * (np.array([0.0, 0.0, -G])[:, None] - CD * np.linalg.norm(v0, axis=0) * v0)
err = np.abs(v_next - ref).max()
print(f"drag_step vs NumPy: largest difference {err:.1e}")
assert err < 1e-12

# The stepping kernel: bound once, launched until every ball has landed.
r = np.zeros((3, N))
r[2] = 1.0
v = v0.copy()
landed = np.zeros(N, bool)
count = np.zeros(1, np.uint32)
flight = fly_plan.bind(cd=CD, dt=DT, g=G, terminated=landed, r=r, v=v, finished_count=count)
track = [r[:, :8].copy()]
launches = 0
while not landed.all():
    flight.launch()  # sees r, v and the mask as they are now: bound by reference
    track.append(r[:, :8].copy())
    launches += 1
print(f"all {N} balls landed after {launches} launches ({launches * 10} steps); finished_count = {int(count[0])}")
assert int(count[0]) == N

track = np.array(track)  # (launches + 1, 3, 8)
fig, ax = plt.subplots(figsize=(6.5, 3.4))
for i in range(8):
    ax.plot(np.hypot(track[:, 0, i], track[:, 1, i]), track[:, 2, i], lw=1.4)
ax.set(xlabel="distance (m)", ylabel="height (m)", title="Eight balls with air drag, each stopped where it lands")
plt.tight_layout()
path = os.path.join(OUT, "balls.png")
fig.savefig(path, dpi=110)
print("wrote", path)
