"""Many rigid bodies turned by quaternions, with a gradient through the JAX bridge.

4096 rigid bodies each spin at their own angular velocity omega (world frame). A stepping
kernel integrates each body's orientation quaternion q (x, y, z, w) for 40 steps,
q <- normalize(q + dt/2 * (omega, 0) * q); a second kernel rotates a body point with
``quat_rotate`` and the body's inertia tensor with ``quat_to_matrix``: I_world = R I R^T, a
``Matrix[3, 3]`` plane. The loss is how far the rotated points land from target points; its
gradient with respect to omega (through both kernels, the stepping one unrolled by the adjoint)
is checked against the same computation in jax.numpy, and 40 steps of gradient descent fit the
angular velocities. The PNG shows the loss and a few bodies' point paths before and after.

Run it from this folder (``bash scripts/demo.sh`` runs every example):
    python 07_rigid_bodies.py
"""

import os
import tempfile

import jax
import jax.numpy as jnp
import matplotlib
import numpy as np

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402

import hawk  # noqa: E402
from eagle.frameworks import jax as eagle_jax  # noqa: E402
from hawk import Matrix, Mutable, Param, Vector  # noqa: E402
from hawk.math import normalize, quat_mul, quat_rotate, quat_to_matrix, transpose, vec  # noqa: E402

jax.config.update("jax_enable_x64", True)
OUT = os.environ.get("RAPTOR_EXAMPLES_OUT", tempfile.mkdtemp())

N, STEPS, DT = 4096, 40, 0.025


@hawk.kernel(steps=STEPS)
def spin(omega: Vector[3], dt: Param, q: Mutable[Vector[4]]):
    w = vec(omega[0], omega[1], omega[2], 0.0)
    q = normalize(q + (0.5 * dt) * quat_mul(w, q))


@hawk.kernel
def pose(q: Vector[4], p: Vector[3], inertia: Matrix[3, 3], x: Mutable[Vector[3]], inertia_world: Mutable[Matrix[3, 3]]):
    x = quat_rotate(q, p)
    R = quat_to_matrix(q)
    inertia_world = R @ inertia @ transpose(R)


spin_f = eagle_jax.function(spin, wrt=("omega", "q"))
pose_f = eagle_jax.function(pose, wrt=("q", "p", "inertia"))

# ---------------------------------------------------------------- the same in jax.numpy


def j_quat_mul(a, b):
    ax, ay, az, aw = a
    bx, by, bz, bw = b
    return jnp.stack([aw * bx + ax * bw + ay * bz - az * by, aw * by - ax * bz + ay * bw + az * bx,
                      aw * bz + ax * by - ay * bx + az * bw, aw * bw - ax * bx - ay * by - az * bz])


def j_spin(omega, dt, q):
    w = jnp.concatenate([omega, jnp.zeros_like(omega[:1])])
    for _ in range(STEPS):
        q = q + (0.5 * dt) * j_quat_mul(w, q)
        q = q / jnp.linalg.norm(q, axis=0)
    return q


def j_pose(q, p, inertia):
    x, y, z, w = q
    R = jnp.stack([jnp.stack([1 - 2 * (y * y + z * z), 2 * (x * y - z * w), 2 * (x * z + y * w)]),
                   jnp.stack([2 * (x * y + z * w), 1 - 2 * (x * x + z * z), 2 * (y * z - x * w)]),
                   jnp.stack([2 * (x * z - y * w), 2 * (y * z + x * w), 1 - 2 * (x * x + y * y)])])
    xr = jnp.einsum("ijn,jn->in", R, p)
    return xr, jnp.einsum("ijn,jkn,lkn->iln", R, inertia, R)


# ---------------------------------------------------------------- bodies, targets, loss

key = jax.random.key(7)
k1, k2, k3, k4 = jax.random.split(key, 4)
q0 = jax.random.normal(k1, (4, N))
q0 = q0 / jnp.linalg.norm(q0, axis=0)
p = jax.random.normal(k2, (3, N))
diag = 1.0 + jax.random.uniform(k3, (3, N))
inertia = jnp.einsum("ij,jn->ijn", jnp.eye(3), diag)
omega_true = 2.0 * jax.random.normal(k4, (3, N))
target = j_pose(j_spin(omega_true, DT, q0), p, inertia)[0]


def loss_hawk(omega):
    q = spin_f(omega, DT, q0)
    x, _ = pose_f(q, p, inertia)
    return jnp.mean(jnp.sum((x - target) ** 2, axis=0))


def loss_jnp(omega):
    x, _ = j_pose(j_spin(omega, DT, q0), p, inertia)
    return jnp.mean(jnp.sum((x - target) ** 2, axis=0))


omega = omega_true + 0.8 * jax.random.normal(jax.random.key(8), (3, N))
q_end = spin_f(omega, DT, q0)
x_end, inertia_end = pose_f(q_end, p, inertia)
x_ref, inertia_ref = j_pose(j_spin(omega, DT, q0), p, inertia)
print(f"final points vs jax.numpy:       max |diff| = {float(jnp.max(jnp.abs(x_end - x_ref))):.2e}")
print(f"world inertia vs jax.numpy:      max |diff| = {float(jnp.max(jnp.abs(inertia_end - inertia_ref))):.2e}")
trace_drift = float(jnp.max(jnp.abs(jnp.trace(inertia_end) - jnp.sum(diag, axis=0))))
print(f"trace(R I R^T) - trace(I):       max = {trace_drift:.2e} (a rotation keeps the trace)")
assert float(jnp.max(jnp.abs(x_end - x_ref))) < 1e-12 and trace_drift < 1e-12

g_hawk = jax.grad(loss_hawk)(omega)
g_jnp = jax.grad(loss_jnp)(omega)
rel = float(jnp.max(jnp.abs(g_hawk - g_jnp)) / jnp.max(jnp.abs(g_jnp)))
print(f"d loss / d omega vs jax.numpy:   max relative diff = {rel:.2e}")
assert rel < 1e-10

# the loss is a mean over bodies: scale the step by N so each body moves by its own gradient
step = jax.jit(lambda w: (w - 0.05 * N * jax.grad(loss_hawk)(w), loss_hawk(w)))
losses, omega_fit = [], omega
for _ in range(40):
    omega_fit, value = step(omega_fit)
    losses.append(float(value))
print(f"fit of omega by gradient descent: loss {losses[0]:.4f} -> {losses[-1]:.2e}")


def path(omega_bodies, bodies):
    """The rotated point of some bodies after each step (kernel stepped one step at a time)."""
    one = eagle_jax.function(spin.with_steps(1))
    pts, q = [], q0
    for _ in range(STEPS):
        q = one(omega_bodies, DT, q)
        pts.append(np.asarray(pose_f(q, p, inertia)[0])[:, bodies])
    return np.stack(pts)  # (steps, 3, bodies)


bodies = np.arange(4)
before, after = path(omega, bodies), path(omega_fit, bodies)
fig, (ax0, ax1) = plt.subplots(1, 2, figsize=(10, 4))
ax0.semilogy(losses)
ax0.set_xlabel("gradient step")
ax0.set_ylabel("mean squared distance to target")
ax0.set_title(f"fitting the angular velocities of {N} bodies", fontsize=10)
for b in bodies:
    color = f"C{b}"
    ax1.plot(before[:, 0, b], before[:, 1, b], ":", color=color)
    ax1.plot(after[:, 0, b], after[:, 1, b], "-", color=color)
    ax1.plot(*np.asarray(target)[:2, b], "x", color=color, ms=9)
ax1.set_title("body points (x, y): dotted before the fit,\nsolid after, x the targets", fontsize=10)
ax1.set_aspect("equal")
fig.tight_layout()
figure = os.path.join(OUT, "07_rigid_bodies.png")
fig.savefig(figure, dpi=110)
print(f"wrote {figure}")
