"""eagle inside your JAX program: one line turns a jax.numpy step into a compiled hawk kernel.

A ball-flight step with air drag is rolled out 20 steps for 256 balls, and its drag
coefficient is fitted by gradient descent in one jitted training step. Then the step is
replaced by a hawk kernel through ``eagle.frameworks.jax.function`` and nothing else
changes: the fit, grad under jit, vmap of grad, lax.scan, jacfwd, jacrev and hessian give the
same numbers as the jax.numpy step. Last, what crosses between JAX and the kernel (zero copy,
a donated mask updated in place) and what is refused, with the messages users read.

This is the user's page "eagle inside your JAX program", sections 1 to 5, as a script; it
prints the page's lines. The stream check (section 4) needs a CUDA build of JAX; on the CPU it
prints one line saying so.

Run it from this folder (``bash scripts/demo.sh`` runs every example):
    python 02_jax_inside_your_program.py
"""

import os
import time

os.environ.setdefault("XLA_PYTHON_CLIENT_PREALLOCATE", "false")  # leave GPU memory for other libraries
try:  # CUDA 13: CuPy loads NVRTC before JAX does
    import cupy

    cupy.cuda.nvrtc.getVersion()
except Exception:  # no CuPy or no CUDA here
    pass
import jax
import jax.numpy as jnp

import hawk
from eagle.frameworks import jax as eagle_jax
from hawk import Mutable, Param, Terminated, Vector
from hawk.math import norm, vec

jax.config.update("jax_enable_x64", True)  # the kernel runs in float64 here; float32 planes run the float32 build

# -------------------------------------------------------------------------------------------
# 1. The program as it is: plain JAX.

N, STEPS, DT, G = 256, 20, 0.05, 9.81
v0 = 5.0 * jax.random.normal(jax.random.key(0), (3, N))


def jax_step(v, cd, dt, g):
    a = -cd * jnp.linalg.norm(v, axis=0) * v + jnp.array([0.0, 0.0, -g])[:, None]
    return v + dt * a


def rollout(step, cd):
    v = v0
    for _ in range(STEPS):
        v = step(v, cd, DT, G)
    return v


target = rollout(jax_step, 0.07)


def fit(step):
    """Sixty steps of gradient descent on cd, each one jitted value_and_grad."""
    loss = lambda cd: ((rollout(step, cd) - target) ** 2).mean()

    @jax.jit
    def train_step(cd):
        value, grad = jax.value_and_grad(loss)(cd)
        return cd - 2e-4 * grad, value

    cd, losses = 0.01, []
    for _ in range(60):
        cd, value = train_step(cd)
        losses.append(float(value))
    return float(cd), losses


cd_jax, losses_jax = fit(jax_step)
print(f"jax step:   cd = {cd_jax:.6f}, loss {losses_jax[0]:.4f} -> {losses_jax[-1]:.2e}")


# -------------------------------------------------------------------------------------------
# 2. The same step as a hawk kernel. Vector[3] planes have shape (3, N), as v0 does.


@hawk.kernel
def drag_step(v: Vector[3], cd: Param, dt: Param, g: Param, v_next: Mutable[Vector[3]]):
    a = vec(0.0, 0.0, -g) - cd * norm(v) * v
    v_next = v + dt * a


step = eagle_jax.function(drag_step, wrt=("v", "cd"))  # the one changed line

cd_eagle, losses_eagle = fit(step)
print(f"eagle step: cd = {cd_eagle:.6f}, loss {losses_eagle[0]:.4f} -> {losses_eagle[-1]:.2e}")
assert abs(cd_eagle - cd_jax) < 1e-9 and abs(losses_eagle[-1] - losses_jax[-1]) < 1e-9
print("same numbers as the jax step")


# -------------------------------------------------------------------------------------------
# 3. Transformations still work on the changed program, with the same numbers.


def loss_of(s):
    return lambda cd: ((rollout(s, cd) - target) ** 2).mean()


def scanned(s):
    return lambda cd: jax.lax.scan(lambda v, _: (s(v, cd, DT, G), None), v0, None, length=STEPS)[0]


cds = jnp.linspace(0.02, 0.1, 5)
for name, make in {
    "jit(grad)": lambda s: jax.jit(jax.grad(loss_of(s))),
    "vmap(grad)": lambda s: jax.vmap(jax.grad(loss_of(s))),  # a batched Param: one launch per entry
    "lax.scan": scanned,
}.items():
    arg = cds if name == "vmap(grad)" else 0.05
    assert jnp.allclose(make(step)(arg), make(jax_step)(arg), rtol=1e-9, atol=1e-12)
    print(f"{name:<11} matches the jax step")

# Jacobians and second derivatives: the kernel's derived tangent and adjoint kernels, at any order.
final = lambda s: (lambda cd: rollout(s, cd)[:, 0])  # the first ball's final velocity
for name, transform in {"jacfwd": jax.jacfwd, "jacrev": jax.jacrev}.items():
    assert jnp.allclose(transform(final(step))(0.05), transform(final(jax_step))(0.05), rtol=1e-9)
    print(f"{name:<8} d velocity / d cd =", jnp.round(transform(final(step))(0.05), 4))
h_eagle, h_jax = jax.hessian(loss_of(step))(0.05), jax.hessian(loss_of(jax_step))(0.05)
assert jnp.allclose(h_eagle, h_jax, rtol=1e-9)
print(f"hessian  d2 loss / d cd2 = {h_eagle:.4f} (jax step: {h_jax:.4f})")


# -------------------------------------------------------------------------------------------
# 4. What crosses, and who owns it. The kernel reads JAX's buffers in place and writes into a
#    buffer XLA allocated; inputs are never written. A kernel that finishes samples returns the
#    updated Terminated mask last: donate the old mask and the update happens in place.


@hawk.kernel(steps=1)
def land(r: Vector[3], terminated: Terminated, r_next: Mutable[Vector[3]]):
    r_next = r - vec(0.0, 0.0, 1.0)
    terminated = r_next[2] < 0.0


landing = eagle_jax.function(land, wrt=())
r = jnp.stack([jnp.zeros(8), jnp.zeros(8), jnp.arange(8.0) / 2])
done = jnp.zeros(8, dtype=bool)
r_in = jnp.array(r)

step_land = jax.jit(landing, donate_argnums=1)
mask_ptr = done.unsafe_buffer_pointer()
r_next, done_next = step_land(r, done)
print("result is a jax.Array:", isinstance(r_next, jax.Array), r_next.dtype, "| input untouched:", bool((r == r_in).all()))
print("mask updated in place:", done_next.unsafe_buffer_pointer() == mask_ptr, "| samples landed:", int(done_next.sum()))

# On a GPU the launch rides XLA's own stream: the call returns before a heavy matrix product
# ahead of it has finished, and the kernel still reads that product's result.
if jax.default_backend() == "gpu":
    a = jnp.ones((4096, 4096), dtype=jnp.float32)

    def heavy_then_step(a, v):
        for _ in range(6):
            a = a @ a / 4096.0
        return step(v * a[0, 0], 0.05, DT, G)  # a[0, 0] is 1.0 after the products

    run = jax.jit(heavy_then_step)
    run(a, v0).block_until_ready()  # compile once
    t0 = time.perf_counter()
    out = run(a, v0)
    t_dispatch = time.perf_counter() - t0
    out.block_until_ready()
    t_total = time.perf_counter() - t0
    assert t_dispatch < 0.2 * t_total and jnp.allclose(out, jax_step(v0, 0.05, DT, G))
    print("the call returned before the GPU finished; the result is still right")
else:
    print("this JAX has no CUDA device: the stream check runs on a CUDA build")


# -------------------------------------------------------------------------------------------
# 5. What is refused: a kernel reads and writes exact buffers, so anything it cannot use as it
#    is gets a named refusal (first line shown, cut at 150 characters).


def refused(label, call):
    try:
        call()
    except Exception as err:
        msg = str(err).splitlines()[0]
        print(f"{label}: {type(err).__name__}: {msg if len(msg) <= 150 else msg[:147] + '...'}")
    else:
        raise AssertionError(f"{label}: not refused")


refused("mixed dtypes", lambda: step(v0, jnp.ones(1, dtype=jnp.float32), DT, G))
refused("integer plane", lambda: step(v0.astype(int), 0.05, DT, G))
refused("wrong shape", lambda: step(v0[:2], 0.05, DT, G))
refused("missing input", lambda: step(v0, 0.05, DT))
refused("not an input", lambda: step(v0, 0.05, DT, G, drag=1.0))
