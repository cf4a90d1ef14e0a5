"""A JAX model between eagle launches: your model decides, eagle steps.

512 damped oscillators each get a correction from a small network written in jax.numpy; a
hawk stepping kernel moves them, each stopping at its own final time. ``eagle_jax.node``
makes the jitted model a graph node, so one ``graph.launch()`` is one model call and one
step. We check the result against the same loop written entirely in JAX (a ``where``
freezes each oscillator once it has stopped), run the same node and kernel inside
``eagle.until_done``, and draw a few trajectories to ``oscillators.png``.

On a GPU (CuPy planes) the JAX node runs stream-ordered between launches, and ``until_done``
refuses it, because a stepping loop there is one device graph; this script prints whichever
of the two lines applies.

Run it from this folder (``bash scripts/demo.sh`` runs every example):
    python 04_jax_model_between_launches.py
"""

import os
import tempfile

os.environ.setdefault("XLA_PYTHON_CLIENT_PREALLOCATE", "false")  # leave GPU memory for other libraries
try:  # CUDA 13: CuPy loads NVRTC before JAX does
    import cupy

    cupy.cuda.nvrtc.getVersion()
except Exception:  # no CuPy or no CUDA here
    pass

import jax
import jax.numpy as jnp
import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt
import numpy as np

jax.config.update("jax_enable_x64", True)  # the kernel and the model agree in float64

import eagle
import eagle.plan
import hawk
from eagle.frameworks import jax as eagle_jax
from hawk import Mutable, Param, Scalar, Terminated

OUT = os.environ.get("RAPTOR_EXAMPLES_OUT", tempfile.mkdtemp())
os.makedirs(OUT, exist_ok=True)
N, DT, C = 512, 0.01, 0.3

# Your model: an ordinary jitted JAX function, (x, v) -> one correction per oscillator.
k1, k2 = jax.random.split(jax.random.key(0))
W1, W2 = 0.5 * jax.random.normal(k1, (2, 8)), 0.5 * jax.random.normal(k2, (8,))


@jax.jit
def model(x, v):
    return jnp.tanh(jnp.stack([x, v], 1) @ W1) @ W2


# The step: a hawk kernel that reads the correction as an input plane.
@hawk.kernel(steps=1)
def osc(dt: Param, c: Param, t_final: Scalar, corr: Scalar, terminated: Terminated,
        x: Mutable[Scalar], v: Mutable[Scalar], t: Mutable[Scalar]):
    vn = v + dt * (-x - c * v + corr * v)
    x = x + dt * v  # reads the old v: statements run in order
    v = vn
    tn = t + dt
    t = tn
    terminated = tn >= t_final  # each oscillator stops at its own final time


# Where the planes live decides where the step runs: NumPy for the CPU, CuPy for a GPU.
gpu = jax.default_backend() == "gpu"
if gpu:
    import cupy as xp
else:
    xp = np


def host(a):
    return a.get() if hasattr(a, "get") else np.asarray(a)


(plan,) = eagle.plan.auto([osc], targets=("cuda" if gpu else "host",))
start = dict(x=np.linspace(0.5, 1.5, N), v=np.linspace(-0.2, 0.3, N), t=np.zeros(N),
             corr=np.zeros(N), t_final=np.linspace(0.5, 2.0, N))
planes = {name: xp.asarray(a).copy() for name, a in start.items()}
mask = xp.zeros(N, bool)

# One graph, two owners: the JAX node first (it writes corr), then the kernel (it reads corr).
node = eagle_jax.node(model, reads={"x": planes["x"], "v": planes["v"]}, writes={"corr": planes["corr"]})
graph = (eagle.Graph()
         .add_node(node, name="model")
         .add(plan.bind(dt=DT, c=C, terminated=mask, finished_count=xp.zeros(1, np.uint32), **planes), name="osc")
         .build())
print(graph.schedule)  # ('host',) on the CPU: one host schedule

# Launch one step at a time, keeping four oscillators' positions to draw.
track = [host(planes["x"])[::128].copy()]
for _ in range(200):  # 200 steps of 0.01 reach the longest final time, 2.0
    graph.launch()
    track.append(host(planes["x"])[::128].copy())
graph.synchronize()


# The reference: the same loop entirely in jax.numpy, a where freezing finished oscillators.
@jax.jit
def reference_step(x, v, t, done):
    vn = v + DT * (-x - C * v + model(x, v) * v)
    xn, tn = x + DT * v, t + DT
    return (jnp.where(done, x, xn), jnp.where(done, v, vn), jnp.where(done, t, tn),
            done | (tn >= jnp.asarray(start["t_final"])))


state = (jnp.asarray(start["x"]), jnp.asarray(start["v"]), jnp.zeros(N), jnp.zeros(N, bool))
ref_track = [np.asarray(state[0])[::128]]
for _ in range(200):
    state = reference_step(*state)
    ref_track.append(np.asarray(state[0])[::128])
err = float(np.abs(host(planes["x"]) - np.asarray(state[0])).max())
print(f"all stopped: {bool(host(mask).all())}; largest difference from plain JAX: {err:.1e}")
assert err < 1e-12

time = np.arange(201) * DT
fig, ax = plt.subplots(figsize=(6.5, 3.4))
ax.plot(time, np.array(track), lw=1.8)
ref_lines = ax.plot(time, np.array(ref_track), "k--", lw=0.8)
ref_lines[0].set_label("plain JAX")  # one legend entry for the dashed references
ax.set(xlabel="time", ylabel="position", title="Four oscillators, each frozen at its own final time")
ax.legend(loc="upper right")
plt.tight_layout()
path = os.path.join(OUT, "oscillators.png")
fig.savefig(path, dpi=110)
print("wrote", path)

# The same node and kernel inside until_done, which stops each sample as it finishes. On the
# CPU it runs; on a GPU the loop is one device graph, and the JAX node is refused by name.
try:
    again = {name: xp.asarray(a).copy() for name, a in start.items()}
    inner = eagle_jax.node(model, reads={"x": again["x"], "v": again["v"]}, writes={"corr": again["corr"]})
    report = eagle.until_done([inner, plan], max_steps=400, dt=DT, c=C, terminated=xp.zeros(N, bool), **again).run()
    print("until_done:", report.steps, "steps,", "done" if report.done else "not done")
    assert np.array_equal(host(again["x"]), host(planes["x"]))
except ValueError as refusal:
    print(str(refusal).split(": run host")[0])
