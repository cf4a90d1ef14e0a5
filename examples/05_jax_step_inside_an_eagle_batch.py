"""Your JAX step inside an eagle batch: a jitted JAX function between eagle launches.

A JAX ``tanh`` feeds a hawk kernel ``y = w[0] * z + w[1]`` whose weights ``w`` are one array
of your own (a ``Table``, read by every sample), which an optimizer would update. The graph is
built with ``record=True``; new weights copied into ``w`` after the build are seen by the
next launch, and ``eagle.diff.reverse`` carries gradients back through the kernel's adjoint
and through your JAX step's VJP (built from ``jax.vjp``).

Run it from this folder (``bash scripts/demo.sh`` runs every example):
    python 05_jax_step_inside_an_eagle_batch.py
"""

import tempfile
import warnings

warnings.filterwarnings("ignore", category=UserWarning, message=r"(?s).*CuPy may not function correctly.*")

import jax
import jax.numpy as jnp
import numpy as np

jax.config.update("jax_enable_x64", True)  # the kernel runs in float64

import eagle
import eagle.diff
import eagle.plan
import hawk
from eagle.frameworks import jax as eagle_jax
from hawk import Mutable, Scalar, Table

gpu = jax.default_backend() == "gpu"
xp = __import__("cupy") if gpu else np
to_np = (lambda a: a.get()) if gpu else np.asarray


@hawk.kernel
def lin(w: Table[Scalar], z: Scalar, y: Mutable[Scalar]):
    y = w.at(0) * z + w.at(1)  # w is ONE buffer, read by every sample


(plan,) = eagle.plan.auto([lin], targets=("cuda" if gpu else "host",), cache_dir=tempfile.mkdtemp())
x, z, y = xp.linspace(-1, 1, 8), xp.zeros(8), xp.zeros(8)
w = xp.array([2.0, 0.5])  # JAX arrays are immutable: one array of your own holds the weights

# The JAX step reads x and writes z; the kernel reads z (and w) and writes y.
model = eagle_jax.node(jax.jit(lambda x: jnp.tanh(0.7 * x)), reads={"x": x}, writes={"z": z})
g = (eagle.Graph().add_node(model, name="model")
     .add(plan.bind(w=w, z=z, y=y), name="lin").build(record=True))

# The optimizer's new weights, copied in after the build: the next launch reads them.
w[:] = xp.from_dlpack(jnp.array([6.0, 1.5]))
g.launch()
print("a launch after the build sees the new weights:", bool(np.allclose(to_np(y), 6 * np.tanh(0.7 * to_np(x)) + 1.5)))


# Gradients: the kernel's part is derived by hawk; the JAX node's part is your VJP, built
# from jax.vjp of the same step. primals are the node's read planes as they were at that
# launch, cotangents are those of its write planes; it returns cotangents of its reads.
def vjp(primals, cotangents):
    _, pull = jax.vjp(lambda a: jnp.tanh(0.7 * a), jax.dlpack.from_dlpack(xp.asarray(primals["x"]).copy()))
    return {"x": xp.from_dlpack(pull(jax.dlpack.from_dlpack(xp.asarray(cotangents["z"]).copy()))[0])}


grads = eagle.diff.reverse(g.record, {"lin.y": xp.ones(8)}, vjps={"model": vjp})
want = 6 * 0.7 * (1 - np.tanh(0.7 * to_np(x)) ** 2)
print("d y / d x through your JAX step:", bool(np.allclose(to_np(grads["x"]), want)))
assert np.allclose(to_np(grads["x"]), want)
# The Table's cotangent is a sum over samples: d sum(y) / d w = (sum of z, number of samples).
assert np.allclose(to_np(grads["w"]), [np.tanh(0.7 * to_np(x)).sum(), 8.0])
