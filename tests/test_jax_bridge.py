"""eagle.frameworks.jax, the bridge (docs/jax.md): every transformation against the same step in
jax.numpy, zero copy and donation, dtypes, refusals and the mask.

Sections:
  1. kernels and their jax.numpy twins
  2. derivatives: jax.test_util.check_grads (order 2, fwd and rev) for every kernel
  3. vmap in every axis layout, batched Params, nested vmap, vmap/grad in both orders
  4. lax.scan and grad through scan
  5. ownership: donation, inputs never written, finished samples
  6. float32 and float64
  7. refusals
  8. docs/jax.md beyond the pages, each in a fresh process: jax.export + preload, sharded jit
     with no gather, shard_map, two processes with jax.distributed (never skipped: they
     fail, not skip, where the bridge lacks the feature)
"""

from __future__ import annotations

import os
import subprocess
import sys
import textwrap

import numpy as np
import pytest

jax = pytest.importorskip("jax")
import jax.numpy as jnp  # noqa: E402
from jax.test_util import check_grads  # noqa: E402

import eagle  # noqa: E402
import hawk  # noqa: E402
from eagle.errors import ModeError  # noqa: E402
from eagle.frameworks import jax as eagle_jax  # noqa: E402
from hawk import Guard, Mutable, Param, Scalar, Table, Terminated, Vector  # noqa: E402
from hawk.math import exp, norm, sin, sqrt, tanh, vec  # noqa: E402

jax.config.update("jax_enable_x64", True)

N = 16
DT, G = 0.05, 9.81
RTOL = 1e-9


def close(a, b, rtol=RTOL, atol=1e-12):
    a, b = np.asarray(a), np.asarray(b)
    assert a.shape == b.shape, (a.shape, b.shape)
    np.testing.assert_allclose(a, b, rtol=rtol, atol=atol)


def tree_close(a, b, rtol=RTOL, atol=1e-12):
    la, lb = jax.tree.leaves(a), jax.tree.leaves(b)
    assert len(la) == len(lb)
    for x, y in zip(la, lb):
        close(x, y, rtol, atol)


# ================================================================================================
# 1. kernels and their jax.numpy twins


@hawk.kernel
def drag_step(v: Vector[3], cd: Param, dt: Param, g: Param, v_next: Mutable[Vector[3]]):
    a = vec(0.0, 0.0, -g) - cd * norm(v) * v
    v_next = v + dt * a


def jnp_drag(v, cd, dt, g):
    a = -cd * jnp.linalg.norm(v, axis=0) * v + jnp.array([0.0, 0.0, -g])[:, None]
    return v + dt * a


@hawk.kernel
def mixed(x: Scalar, y: Scalar, u: Vector[3], a: Param, b: Param, out: Mutable[Scalar], outv: Mutable[Vector[3]]):
    out = a * x * y + sin(x) * b + norm(u)
    outv = u * (x * a) + vec(y, b, x * y)


def jnp_mixed(x, y, u, a, b):
    out = a * x * y + jnp.sin(x) * b + jnp.linalg.norm(u, axis=0)
    outv = u * (x * a) + jnp.stack([y, jnp.broadcast_to(b, x.shape), x * y])
    return out, outv


@hawk.kernel
def accumulate(k: Param, x: Scalar, acc: Mutable[Scalar], pure: Mutable[Scalar]):
    acc = acc * k + x * x  # in-out: read before it is written
    pure = acc * x  # a pure output


def jnp_accumulate(k, x, acc):
    acc = acc * k + x * x
    return acc, acc * x


@hawk.kernel(steps=1)
def flight(r: Vector[3], v: Vector[3], cd: Param, dt: Param, g: Param, terminated: Terminated,
           r_next: Mutable[Vector[3]], v_next: Mutable[Vector[3]]):
    a = vec(0.0, 0.0, -g) - cd * norm(v) * v
    v_new = v + dt * a
    v_next = v_new
    r_next = r + dt * v_new
    terminated = r_next[2] < 0.0


def jnp_flight(r, v, cd, dt, g, terminated):
    a = -cd * jnp.linalg.norm(v, axis=0) * v + jnp.array([0.0, 0.0, -g])[:, None]
    v_new = v + dt * a
    r_new = r + dt * v_new
    live = ~terminated
    return jnp.where(live, r_new, 0.0), jnp.where(live, v_new, 0.0), terminated | (live & (r_new[2] < 0.0))


@hawk.kernel(steps=1)
def fall(dt: Param, terminated: Terminated, h: Mutable[Scalar], u: Mutable[Scalar]):
    u = u - dt * 9.81  # in-out planes with a mask
    h = h + dt * u
    terminated = h < 0.0


@hawk.kernel
def lookup(w: Table[Scalar], wv: Table[Vector[3]], idx: Scalar, x: Scalar, out: Mutable[Scalar], outv: Mutable[Vector[3]]):
    out = w.at(idx) * x + w.at(0) * w.at(idx + 1.0)
    outv = wv.at(idx) * x + wv.at(1)


def jnp_lookup(w, wv, idx, x):
    i = idx.astype(int)
    out = w[i] * x + w[0] * w[i + 1]
    outv = wv[i].T * x + wv[1][:, None]
    return out, outv


@hawk.func
def softplus(z):
    return sqrt(z * z + 1.0) + z


@hawk.func
def blend(p, q, t):
    return p + (q - p) * tanh(t)


@hawk.kernel
def branchy(x: Scalar, y: Scalar, s: Param, out: Mutable[Scalar]):
    if x > 0.5:
        r = softplus(x) * y
    elif x > -0.5:
        r = blend(x, y, s) * exp(-x * x)
    else:
        r = y * y - x
    out = r * s if y > 0.0 else r


def jnp_branchy(x, y, s):
    sp = lambda z: jnp.sqrt(z * z + 1.0) + z
    bl = lambda p, q, t: p + (q - p) * jnp.tanh(t)
    r = jnp.where(x > 0.5, sp(x) * y, jnp.where(x > -0.5, bl(x, y, s) * jnp.exp(-x * x), y * y - x))
    return jnp.where(y > 0.0, r * s, r)


rng = np.random.default_rng(7)


def planes(*shape):
    return jnp.asarray(rng.normal(size=shape))


V = planes(3, N) * 4.0
X = jnp.asarray(np.linspace(-1.3, 1.4, N) + 0.013)  # away from the branch points
Y = planes(N)
U = planes(3, N)


@pytest.fixture(scope="module", params=["ffi", "xla"])
def fns(request):
    """Every kernel as a JAX function, once per lowering: each test taking ``fns`` runs on the
    C++ custom call and on XLA's own operations (docs/jax.md "Two lowerings")."""
    lw = request.param
    return {
        "drag": eagle_jax.function(drag_step, wrt=("v", "cd"), lowering=lw),
        "mixed": eagle_jax.function(mixed, wrt=("x", "y", "u", "a"), lowering=lw),
        "accumulate": eagle_jax.function(accumulate, wrt=("k", "x", "acc"), lowering=lw),
        "flight": eagle_jax.function(flight, wrt=("r", "v", "cd"), lowering=lw),
        "fall": eagle_jax.function(fall, wrt=("h", "u"), lowering=lw),
        "lookup": eagle_jax.function(lookup, wrt=("w", "wv", "x"), lowering=lw),
        "branchy": eagle_jax.function(branchy, wrt=("x", "y", "s"), lowering=lw),
    }


def test_signatures(fns):
    lw = fns["drag"].lowering
    assert repr(fns["drag"]) == f"KernelFunction('drag_step', inputs=['v', 'cd', 'dt', 'g'], outputs=['v_next'], wrt=['v', 'cd'], lowering='{lw}')"
    assert repr(eagle_jax.function(drag_step)) == "KernelFunction('drag_step', inputs=['v', 'cd', 'dt', 'g'], outputs=['v_next'], wrt=[])"
    assert fns["accumulate"].inputs == ["k", "x", "acc"]
    assert fns["accumulate"].outputs == ["acc", "pure"]
    assert fns["fall"].inputs == ["dt", "terminated", "h", "u"]
    assert fns["fall"].outputs == ["h", "u", "terminated"]
    assert fns["flight"].outputs == ["r_next", "v_next", "terminated"]


def test_values_eager_and_jit(fns):
    for f in (fns["drag"], jax.jit(fns["drag"])):
        close(f(V, 0.07, DT, G), jnp_drag(V, 0.07, DT, G))
    tree_close(fns["mixed"](X, Y, U, 0.3, -1.2), jnp_mixed(X, Y, U, 0.3, -1.2))
    tree_close(jax.jit(fns["accumulate"])(0.9, X, Y), jnp_accumulate(0.9, X, Y))
    w, wv = jnp.arange(1.0, 7.0) ** 0.5, planes(6, 3)
    idx = jnp.asarray(rng.integers(0, 5, N), dtype=jnp.float64)
    tree_close(fns["lookup"](w, wv, idx, X), jnp_lookup(w, wv, idx, X))
    close(fns["branchy"](X, Y, 0.7), jnp_branchy(X, Y, 0.7))
    r = jnp.stack([X, Y, jnp.abs(Y) * 0.1 + 0.01 * (jnp.arange(N) % 3 - 1.0)])
    mask = jnp.arange(N) % 5 == 0
    tree_close(fns["flight"](r, V, 0.01, DT, G, mask), jnp_flight(r, V, 0.01, DT, G, mask))


# ================================================================================================
# 2. derivatives at order 2, forward and reverse


def test_grads_drag(fns):
    f = fns["drag"]
    check_grads(lambda v, cd: f(v, cd, DT, G), (V, 0.07), order=2, modes=("fwd", "rev"))


def test_grads_param_and_scalar_planes(fns):
    f = fns["mixed"]
    check_grads(lambda x, y, u, a: f(x, y, u, a, -1.2), (X, Y, U, 0.3), order=2, modes=("fwd", "rev"))


def test_grads_inout_mutable(fns):
    f = fns["accumulate"]
    check_grads(lambda k, x, acc: f(k, x, acc), (0.9, X, Y), order=2, modes=("fwd", "rev"))


def test_grads_masked_stepping_kernel(fns):
    f = fns["flight"]
    r = jnp.stack([X, Y, 1.0 + jnp.abs(Y)])  # far from landing: the mask is not a switch here
    mask = jnp.arange(N) % 4 == 0  # some samples finished
    check_grads(lambda r, v, cd: f(r, v, cd, DT, G, mask)[:2], (r, V, 0.01), order=2, modes=("fwd", "rev"))
    # a finished sample's derivatives are zero
    jac = jax.jacrev(lambda r: f(r, V, 0.01, DT, G, mask)[0])(r)  # (3, N, 3, N)
    assert float(jnp.abs(jac[:, mask]).max()) == 0.0
    assert float(jnp.abs(jac[:, ~mask]).max()) > 0.0


def test_grads_masked_inout(fns):
    f = fns["fall"]
    h, u = 1.0 + jnp.abs(X), Y
    mask = jnp.arange(N) % 3 == 0
    check_grads(lambda h, u: f(DT, mask, h, u)[:2], (h, u), order=2, modes=("fwd", "rev"))


def test_grads_table(fns):
    f = fns["lookup"]
    w, wv = jnp.arange(1.0, 7.0) ** 0.5, planes(6, 3)
    idx = jnp.asarray(rng.integers(0, 5, N), dtype=jnp.float64)
    check_grads(lambda w, wv, x: f(w, wv, idx, x), (w, wv, X), order=2, modes=("fwd", "rev"))
    # the table's cotangent is a sum over samples, as in jax.numpy
    loss = lambda fn: (lambda w, wv: sum(jnp.sum(o ** 2) for o in fn(w, wv, idx, X)))
    tree_close(jax.grad(loss(f), argnums=(0, 1))(w, wv), jax.grad(loss(jnp_lookup), argnums=(0, 1))(w, wv))


def test_grads_branches_and_helpers(fns):
    f = fns["branchy"]
    check_grads(lambda x, y, s: f(x, y, s), (X, Y, 0.7), order=2, modes=("fwd", "rev"))
    loss = lambda fn: (lambda x, y, s: jnp.sum(fn(x, y, s) ** 2))
    tree_close(jax.grad(loss(f), argnums=(0, 1, 2))(X, Y, 0.7), jax.grad(loss(jnp_branchy), argnums=(0, 1, 2))(X, Y, 0.7))
    h = jax.hessian(lambda s: loss(f)(X, Y, s))(0.7)
    close(h, jax.hessian(lambda s: loss(jnp_branchy)(X, Y, s))(0.7))


def test_jacfwd_jacrev_hessian_match_jnp(fns):
    f = fns["mixed"]
    for t in (jax.jacfwd, jax.jacrev):
        tree_close(t(lambda u, a: f(X, Y, u, a, -1.2), argnums=(0, 1))(U, 0.3),
                   t(lambda u, a: jnp_mixed(X, Y, u, a, -1.2), argnums=(0, 1))(U, 0.3))
    hs = lambda fn: jax.hessian(lambda x: jnp.sum(fn(x, Y, U, 0.3, -1.2)[1] ** 2))(X)
    close(hs(f), hs(jnp_mixed))


def test_value_and_grad_under_jit(fns):
    f = fns["drag"]
    loss = lambda fn: (lambda v, cd: jnp.sum(fn(fn(v, cd, DT, G), cd, DT, G) ** 2))
    tree_close(jax.jit(jax.value_and_grad(loss(f), argnums=(0, 1)))(V, 0.07),
               jax.value_and_grad(loss(jnp_drag), argnums=(0, 1))(V, 0.07))


# ================================================================================================
# 3. vmap

B = 3


@pytest.mark.parametrize("axis", [0, 1, -1])
def test_vmap_planes_every_axis(fns, axis):
    f = fns["drag"]
    vb = jnp.stack([V * (1 + 0.1 * i) for i in range(B)], axis=axis)
    got = jax.vmap(f, in_axes=(axis, None, None, None))(vb, 0.07, DT, G)
    want = jax.vmap(jnp_drag, in_axes=(axis, None, None, None))(vb, 0.07, DT, G)
    close(got, want)
    close(jax.jit(jax.vmap(f, in_axes=(axis, None, None, None)))(vb, 0.07, DT, G), want)


@pytest.mark.parametrize("axis", [0, -1])
def test_vmap_scalar_planes_and_vectors(fns, axis):
    f = fns["mixed"]
    xb = jnp.stack([X + i for i in range(B)], axis=axis)
    ub = jnp.stack([U * i for i in range(B)], axis=0)  # a different axis for another input
    got = jax.vmap(f, in_axes=(axis, None, 0, None, None))(xb, Y, ub, 0.3, -1.2)
    want = jax.vmap(jnp_mixed, in_axes=(axis, None, 0, None, None))(xb, Y, ub, 0.3, -1.2)
    tree_close(got, want)


def test_vmap_batched_param(fns):
    f = fns["drag"]
    cds = jnp.linspace(0.02, 0.1, 5)
    close(jax.vmap(f, in_axes=(None, 0, None, None))(V, cds, DT, G),
          jax.vmap(jnp_drag, in_axes=(None, 0, None, None))(V, cds, DT, G))
    vb = jnp.stack([V + i for i in range(5)])
    close(jax.jit(jax.vmap(f, in_axes=(0, 0, None, None)))(vb, cds, DT, G),
          jax.vmap(jnp_drag, in_axes=(0, 0, None, None))(vb, cds, DT, G))


def test_vmap_batched_param_one_launch_per_entry(fns):
    f = fns["drag"]
    cds = jnp.linspace(0.02, 0.1, 5)
    jaxpr = str(jax.make_jaxpr(jax.vmap(f, in_axes=(None, 0, None, None)))(V, cds, DT, G))
    if f.lowering == "ffi":
        assert "raptor_kernel" in jaxpr and ("scan" in jaxpr or "while" in jaxpr)  # lax.map over entries
    else:  # XLA's own operations, batched by JAX: no loop over the entries, no custom call
        assert "raptor_kernel" not in jaxpr and "scan" not in jaxpr and "while" not in jaxpr
    jaxpr = str(jax.make_jaxpr(jax.vmap(f, in_axes=(-1, None, None, None)))(jnp.stack([V] * 2, -1), 0.07, DT, G))
    assert "scan" not in jaxpr and "while" not in jaxpr  # over planes: one launch


@pytest.mark.parametrize("out_axes", [0, 1, -1])
def test_vmap_out_axes(fns, out_axes):
    f = fns["accumulate"]
    xb = jnp.stack([X * i for i in range(B)])
    got = jax.vmap(f, in_axes=(None, 0, None), out_axes=out_axes)(0.9, xb, Y)
    want = jax.vmap(jnp_accumulate, in_axes=(None, 0, None), out_axes=out_axes)(0.9, xb, Y)
    tree_close(got, want)


def test_vmap_out_axes_per_output(fns):
    f = fns["mixed"]
    xb = jnp.stack([X + i for i in range(B)])
    got = jax.vmap(f, in_axes=(0, None, None, None, None), out_axes=(0, -1))(xb, Y, U, 0.3, -1.2)
    want = jax.vmap(jnp_mixed, in_axes=(0, None, None, None, None), out_axes=(0, -1))(xb, Y, U, 0.3, -1.2)
    tree_close(got, want)


def test_vmap_of_vmap(fns):
    f = fns["drag"]
    vbb = jnp.stack([jnp.stack([V * (1 + 0.1 * i) + j for i in range(B)], axis=-1) for j in range(2)])  # (2, 3, N, B)
    inner = lambda fn: jax.vmap(fn, in_axes=(-1, None, None, None), out_axes=0)
    got = jax.vmap(inner(f), in_axes=(0, None, None, None))(vbb, 0.07, DT, G)
    want = jax.vmap(inner(jnp_drag), in_axes=(0, None, None, None))(vbb, 0.07, DT, G)
    close(got, want)
    # batched Param inside, batched planes outside
    cds = jnp.linspace(0.02, 0.1, 4)
    vb = jnp.stack([V + j for j in range(2)])
    nest = lambda fn: jax.vmap(lambda v: jax.vmap(lambda cd: fn(v, cd, DT, G))(cds))
    close(nest(f)(vb), nest(jnp_drag)(vb))


def test_vmap_of_grad_and_grad_of_vmap(fns):
    f = fns["drag"]
    cds = jnp.linspace(0.02, 0.1, 5)
    loss = lambda fn: (lambda v, cd: jnp.sum(fn(v, cd, DT, G) ** 2))
    tree_close(jax.vmap(jax.grad(loss(f), argnums=(0, 1)), in_axes=(None, 0))(V, cds),
               jax.vmap(jax.grad(loss(jnp_drag), argnums=(0, 1)), in_axes=(None, 0))(V, cds))
    vb = jnp.stack([V * (1 + 0.1 * i) for i in range(B)], axis=1)
    tree_close(jax.jit(jax.vmap(jax.grad(loss(f), argnums=(0, 1)), in_axes=(1, None)))(vb, 0.07),
               jax.vmap(jax.grad(loss(jnp_drag), argnums=(0, 1)), in_axes=(1, None))(vb, 0.07))
    batch_loss = lambda fn: (lambda vb, cd: jnp.sum(jax.vmap(fn, in_axes=(1, None, None, None))(vb, cd, DT, G) ** 3))
    tree_close(jax.grad(batch_loss(f), argnums=(0, 1))(vb, 0.07), jax.grad(batch_loss(jnp_drag), argnums=(0, 1))(vb, 0.07))
    tree_close(jax.grad(lambda cds: jnp.sum(jax.vmap(f, in_axes=(None, 0, None, None))(V, cds, DT, G) ** 2))(cds),
               jax.grad(lambda cds: jnp.sum(jax.vmap(jnp_drag, in_axes=(None, 0, None, None))(V, cds, DT, G) ** 2))(cds))


def test_vmap_masked_kernel(fns):
    f = fns["flight"]
    r = jnp.stack([X, Y, 0.02 * (jnp.arange(N) % 4 - 1.0)])
    rb = jnp.stack([r + 0.01 * i for i in range(B)], axis=-1)
    mb = jnp.stack([jnp.arange(N) % (i + 2) == 0 for i in range(B)], axis=-1)
    got = jax.vmap(f, in_axes=(-1, None, None, None, None, -1))(rb, V, 0.01, DT, G, mb)
    want = jax.vmap(jnp_flight, in_axes=(-1, None, None, None, None, -1))(rb, V, 0.01, DT, G, mb)
    tree_close(got[:2], want[:2])
    assert bool((got[2] == want[2]).all())


# ================================================================================================
# 4. lax.scan


def test_scan_and_grad_through_scan(fns):
    f = fns["drag"]
    scanned = lambda fn: (lambda v, cd: jax.lax.scan(lambda v, _: (fn(v, cd, DT, G), v[2].sum()), v, None, length=30))
    tree_close(jax.jit(scanned(f))(V, 0.05), scanned(jnp_drag)(V, 0.05))
    loss = lambda fn: (lambda v, cd: jnp.sum(scanned(fn)(v, cd)[0] ** 2) + jnp.sum(scanned(fn)(v, cd)[1]))
    tree_close(jax.jit(jax.grad(loss(f), argnums=(0, 1)))(V, 0.05), jax.grad(loss(jnp_drag), argnums=(0, 1))(V, 0.05))


def test_scan_masked_stepping_loop(fns):
    f = fns["flight"]
    r0 = jnp.zeros((3, N)).at[2].set(1.0)
    v0 = jnp.stack([X * 3, Y * 3, 4.0 + jnp.abs(X) * 5])

    def body(fn):
        def b(carry, _, cd):
            r, v, landed = carry
            rn, vn, ln = fn(r, v, cd, 0.02, G, landed)
            return (jnp.where(landed, r, rn), jnp.where(landed, v, vn), ln), ln.sum()
        return b

    def fly(fn):
        def run(cd):
            (r, _, landed), counts = jax.lax.scan(lambda c, x: body(fn)(c, x, cd), (r0, v0, jnp.zeros(N, bool)), None, length=150)
            return jnp.hypot(r[0], r[1]).mean(), (landed, counts)
        return run

    (m, (landed, counts)), (mj, (landed_j, counts_j)) = jax.jit(fly(f))(0.01), fly(jnp_flight)(0.01)
    close(m, mj)
    assert int(landed.sum()) == N and (counts == counts_j).all()
    g = jax.jit(jax.grad(lambda cd: fly(f)(cd)[0]))(0.01)
    close(g, jax.grad(lambda cd: fly(jnp_flight)(cd)[0])(0.01))


def test_grad_through_scan_saves_only_what_the_derivatives_read(fns):
    """The bridge calls derived kernels without the inputs they do not read: the flight
    step's tangent does not need r (it enters r_next linearly) nor g, so a grad through a
    scan stacks v and the mask per step, not r, and the backward pass fills no zeros."""
    from eagle.frameworks._jax_call import call_for

    f = fns["flight"]
    c = call_for(flight, np.float64)
    t = c.tangent(["r", "v", "cd"])
    assert [s.name for s in t.inputs if t.role(s)[0] == "p"] == ["v", "cd", "dt", "terminated"]
    a = t.adjoint(["r_dot", "v_dot", "cd_dot"])
    assert not any(a.role(s)[0] == "t" for s in a.inputs)

    def loss(cd):
        def body(carry, _):
            r, v, landed = carry
            rn, vn, ln = f(r, v, cd, 0.02, G, landed)
            return (jnp.where(landed, r, rn), jnp.where(landed, v, vn), ln), None
        (r, _, _), _ = jax.lax.scan(body, (jnp.zeros((3, N)), jnp.ones((3, N)), jnp.zeros(N, bool)), None, length=7)
        return r.sum()

    hlo = jax.jit(jax.grad(loss)).lower(0.01).as_text()
    stacked = [ln for ln in hlo.splitlines() if "dynamic_update_slice" in ln and f"7x3x{N}xf64" in ln]
    assert len(stacked) == 1, stacked  # v only (r is not a residual)


# ================================================================================================
# 5. ownership: donation, zero copy, finished samples


def test_donated_mask_is_updated_in_place(fns):
    f = fns["flight"]
    one = jax.jit(lambda r, v, m: f(r, v, 0.01, DT, G, m), donate_argnums=2)
    r = jnp.stack([X, Y, 0.01 * jnp.arange(N) - 0.05])
    mask = jnp.zeros(N, dtype=bool)
    ptr = mask.unsafe_buffer_pointer()
    _, _, m2 = one(r, V, mask)
    assert m2.unsafe_buffer_pointer() == ptr and mask.is_deleted()
    assert int(m2.sum()) > 0


def test_donated_inout_mutable_is_updated_in_place(fns):
    f = fns["accumulate"]
    one = jax.jit(lambda x, acc: f(0.9, x, acc)[0], donate_argnums=1)
    acc = jnp.array(Y)
    want = jnp_accumulate(0.9, X, Y)[0]
    ptr = acc.unsafe_buffer_pointer()
    out = one(X, acc)
    assert out.unsafe_buffer_pointer() == ptr and acc.is_deleted()
    close(out, want)
    g = fns["fall"]
    two = jax.jit(lambda m, h, u: g(DT, m, h, u), donate_argnums=(0, 1, 2))
    m, h, u = jnp.zeros(N, bool), 1.0 + jnp.abs(X), jnp.array(Y)
    ptrs = [a.unsafe_buffer_pointer() for a in (h, u, m)]
    outs = two(m, h, u)
    assert [o.unsafe_buffer_pointer() for o in outs] == ptrs


def _aliases_of_kernel_calls(text: str) -> list[int]:
    """Per raptor custom call in a lowered module's text: how many operand -> result aliases
    it declares."""
    return [line.count("output_operand_alias<") for line in text.splitlines() if "custom_call @raptor_kernel" in line]


def test_ffi_call_aliases_only_what_it_can_update_in_place():
    # docs/jax.md "Copies and donation": an undonated parameter of the jitted function is not
    # aliased (XLA would copy it before the call); a donated one and a loop's carry are.
    g = eagle_jax.function(fall, lowering="ffi")
    m, h, u = jnp.arange(N) % 3 == 0, 1.0 + jnp.abs(X), jnp.array(Y)
    step = lambda m, h, u: g(DT, m, h, u)  # noqa: E731
    plain = jax.jit(step)
    assert _aliases_of_kernel_calls(plain.lower(m, h, u).as_text()) == [0]
    assert " copy(" not in plain.lower(m, h, u).compile().as_text()
    assert _aliases_of_kernel_calls(jax.jit(step, donate_argnums=1).lower(m, h, u).as_text()) == [1]
    assert _aliases_of_kernel_calls(jax.jit(step, donate_argnums=(0, 1, 2)).lower(m, h, u).as_text()) == [3]

    def body(c, _):
        hn, un, mn = g(DT, c[0], c[1], c[2])
        return (mn, hn, un), None

    scan = jax.jit(lambda m, h, u: jax.lax.scan(body, (m, h, u), None, length=5)[0])
    assert _aliases_of_kernel_calls(scan.lower(m, h, u).as_text()) == [3]
    # The same numbers every way, and the undonated inputs untouched.
    before = [np.array(a) for a in (m, h, u)]
    want = step(jnp.array(m), jnp.array(h), jnp.array(u))
    for fn in (plain, jax.jit(step, donate_argnums=1)):
        got = fn(jnp.array(m), jnp.array(h), jnp.array(u))
        for a, b in zip(got, want):
            assert (np.asarray(a) == np.asarray(b)).all()
    for a, b in zip((m, h, u), before):
        assert (np.asarray(a) == b).all()
    mm, hh, uu = np.array(m), np.array(h), np.array(u)
    for _ in range(5):
        hh, uu, mm = (np.asarray(a) for a in step(mm, hh, uu))
    for a, b in zip(scan(m, h, u), (mm, hh, uu)):
        assert (np.asarray(a) == b).all()


def test_inputs_are_never_written(fns):
    f = fns["accumulate"]
    x, acc = jnp.array(X), jnp.array(Y)
    x_np, acc_np = np.array(x), np.array(acc)
    for call in (f, jax.jit(f)):
        outs = call(0.9, x, acc)
        jax.block_until_ready(outs)
        assert (np.asarray(x) == x_np).all() and (np.asarray(acc) == acc_np).all()
        assert outs[0].unsafe_buffer_pointer() != acc.unsafe_buffer_pointer()
    g = fns["flight"]
    r, v, m = jnp.stack([X, Y, X - 0.2]), jnp.array(V), jnp.arange(N) % 3 == 0
    before = [np.array(a) for a in (r, v, m)]
    jax.block_until_ready(jax.jit(g)(r, v, 0.01, DT, G, m))
    for a, b in zip((r, v, m), before):
        assert (np.asarray(a) == b).all()
    # NumPy inputs too
    xn, accn = np.array(X), np.array(Y)
    f(0.9, xn, accn)
    assert (xn == x_np).all() and (accn == acc_np).all()


def test_outputs_of_finished_samples_are_zero(fns):
    f = fns["flight"]
    mask = jnp.arange(N) % 3 == 0
    r = jnp.stack([X, Y, 2.0 + X])
    for call in (f, jax.jit(f)):
        rn, vn, mn = call(r, V, 0.01, DT, G, mask)
        assert float(jnp.abs(rn[:, mask]).max()) == 0.0 and float(jnp.abs(vn[:, mask]).max()) == 0.0
        assert float(jnp.abs(rn[:, ~mask]).min()) > 0.0
        assert bool(mn[mask].all())


def test_inout_finished_sample_keeps_its_value(fns):
    g = fns["fall"]
    mask = jnp.arange(N) % 3 == 0
    h, u = 1.0 + jnp.abs(X), jnp.array(Y)
    for call in (g, jax.jit(g), jax.jit(g, donate_argnums=(1, 2, 3))):
        hn, un, mn = call(DT, jnp.array(mask), jnp.array(h), jnp.array(u))
        close(hn[mask], h[mask])
        close(un[mask], u[mask])
        close(un[~mask], u[~mask] - DT * 9.81)
        close(hn[~mask], h[~mask] + DT * (u[~mask] - DT * 9.81))


# ================================================================================================
# 6. dtypes


def test_float32_arrays(fns):
    f = fns["drag"]
    v32 = V.astype(jnp.float32)
    out = f(v32, 0.07, DT, G)
    assert out.dtype == jnp.float32
    close(out, jnp_drag(v32, jnp.float32(0.07), jnp.float32(DT), jnp.float32(G)), rtol=1e-5, atol=1e-5)
    g = jax.grad(lambda v, cd: jnp.sum(f(v, cd, DT, G) ** 2), argnums=(0, 1))(v32, jnp.float32(0.07))
    gj = jax.grad(lambda v, cd: jnp.sum(jnp_drag(v, cd, DT, G) ** 2), argnums=(0, 1))(v32, jnp.float32(0.07))
    assert g[0].dtype == jnp.float32 and g[1].dtype == jnp.float32
    tree_close(g, gj, rtol=1e-4, atol=1e-4)
    outs = fns["mixed"](X.astype(jnp.float32), Y.astype(jnp.float32), U.astype(jnp.float32), 0.3, -1.2)
    assert all(o.dtype == jnp.float32 for o in outs)


def test_float64_default_with_x64():
    f = eagle_jax.function(drag_step, wrt=("v", "cd"))
    assert f(V, 0.07, DT, G).dtype == jnp.float64


def test_float32_with_x64_off_in_a_fresh_process(tmp_path):
    script = textwrap.dedent('''
        import jax, jax.numpy as jnp, numpy as np
        import hawk
        from hawk import Mutable, Param, Vector
        from hawk.math import norm, vec
        from eagle.frameworks import jax as eagle_jax

        @hawk.kernel
        def drag_step(v: Vector[3], cd: Param, dt: Param, g: Param, v_next: Mutable[Vector[3]]):
            a = vec(0.0, 0.0, -g) - cd * norm(v) * v
            v_next = v + dt * a

        def jnp_drag(v, cd, dt, g):
            a = -cd * jnp.linalg.norm(v, axis=0) * v + jnp.array([0.0, 0.0, -g])[:, None]
            return v + dt * a

        step = eagle_jax.function(drag_step, wrt=("v", "cd"))
        v = 5.0 * jax.random.normal(jax.random.key(0), (3, 64))
        assert v.dtype == jnp.float32
        out = jax.jit(step)(v, 0.07, 0.05, 9.81)
        assert out.dtype == jnp.float32, out.dtype
        np.testing.assert_allclose(out, jnp_drag(v, 0.07, 0.05, 9.81), rtol=1e-5, atol=1e-5)
        loss = lambda s: (lambda cd: jnp.sum(jax.lax.scan(lambda v, _: (s(v, cd, 0.05, 9.81), None), v, None, length=10)[0] ** 2))
        g, gj = jax.jit(jax.grad(loss(step)))(0.07), jax.grad(loss(jnp_drag))(0.07)
        assert g.dtype == jnp.float32
        np.testing.assert_allclose(g, gj, rtol=2e-4)
        print("ok float32")
    ''')
    p = _python(script, tmp_path, env={"JAX_ENABLE_X64": "0"})
    assert p.returncode == 0, p.stderr[-3000:]
    assert p.stdout.strip().endswith("ok float32")


# ================================================================================================
# 7. refusals


def test_refusals(fns):
    f = fns["drag"]
    with pytest.raises(ModeError, match=r"mixed floating dtypes in one call \(plane 'cd' is float32, the first plane is float64\)"):
        f(V, jnp.ones(1, dtype=jnp.float32), DT, G)
    with pytest.raises(ModeError, match="mixed floating dtypes"):
        fns["mixed"](X, Y.astype(jnp.float32), U, 0.3, -1.2)
    with pytest.raises(ModeError, match=r"plane 'v' is int64, which is not supported"):
        f(V.astype(int), 0.05, DT, G)
    with pytest.raises(ModeError, match=r"plane 'x' is int32"):
        fns["mixed"](X.astype(jnp.int32), Y, U, 0.3, -1.2)
    with pytest.raises(ValueError, match=re_escape("input 'v' must have shape (3, 16) for n=16, got (2, 16)")):
        f(V[:2], 0.05, DT, G)
    with pytest.raises(ValueError, match="must have shape"):
        fns["mixed"](X, Y[:-1], U, 0.3, -1.2)
    with pytest.raises(TypeError, match=re_escape("drag_step: missing input(s) ['g']")):
        f(V, 0.05, DT)
    with pytest.raises(TypeError, match=re_escape("drag_step: 'drag' is not an input (inputs: ['v', 'cd', 'dt', 'g'])")):
        f(V, 0.05, DT, G, drag=1.0)
    # refusals hold under jit as well
    with pytest.raises(ValueError, match="must have shape"):
        jax.jit(f)(V[:2], 0.05, DT, G)
    with pytest.raises(ModeError, match="mixed floating dtypes"):
        jax.jit(f)(V, jnp.ones(1, dtype=jnp.float32), DT, G)


def re_escape(s):
    import re

    return re.escape(s)


def test_active_set_kernel_is_refused():
    @hawk.kernel(steps=2, guard=Guard(active_set=True))
    def guarded(dt: Param, terminated: Terminated, x: Mutable[Scalar]):
        x = x - dt
        terminated = x < 0.0

    with pytest.raises(ModeError, match=r"Guard\(active_set=True\)"):
        eagle_jax.function(guarded)
    assert issubclass(eagle.ModeError, TypeError)


def test_wrt_must_name_an_input():
    with pytest.raises(ValueError, match="not an input"):
        eagle_jax.function(drag_step, wrt=("v_next",))
    with pytest.raises(ValueError, match="carries no derivative"):
        eagle_jax.function(flight, wrt=("terminated",))


# ================================================================================================
# 8. docs/jax.md beyond the pages. These were written before the bridge had the features and failed
#    then, on purpose (no skip, no xfail): export refused the custom call (no compatibility
#    guarantee for "raptor_kernel") and had no preload, sharded jit compiled an all-gather,
#    and grad under shard_map failed ("Expected cotangent type float64[3,256]{V:s} but got
#    float64[3,256]"). Each runs in a fresh process, because the features need a fresh JAX
#    (device count, distributed runtime, preload before any kernel is compiled).

KERNEL_SRC = '''
import hawk
from hawk import Mutable, Param, Vector
from hawk.math import norm, vec

@hawk.kernel
def drag_step(v: Vector[3], cd: Param, dt: Param, g: Param, v_next: Mutable[Vector[3]]):
    a = vec(0.0, 0.0, -g) - cd * norm(v) * v
    v_next = v + dt * a

def jnp_drag(v, cd, dt, g):
    import jax.numpy as jnp
    a = -cd * jnp.linalg.norm(v, axis=0) * v + jnp.array([0.0, 0.0, -g])[:, None]
    return v + dt * a
'''


def _python(script: str, tmp_path, env: dict | None = None, timeout: int = 120) -> subprocess.CompletedProcess:
    """Runs a script from a file (hawk reads a kernel's source from its file)."""
    path = tmp_path / f"script_{len(list(tmp_path.glob('script_*.py')))}.py"
    path.write_text(textwrap.dedent(script))
    full = {**os.environ, "JAX_PLATFORMS": "cpu", "JAX_ENABLE_X64": "1", **(env or {})}
    return subprocess.run([sys.executable, str(path)], capture_output=True, text=True, env=full, timeout=timeout)


def test_export_round_trip_with_preload(tmp_path):
    """jax.export: the exported module carries the kernel's digest, not its code; a fresh
    process calls eagle.frameworks.jax.preload(cache_dir) and runs it."""
    cache = str(tmp_path / "cache")
    blob = tmp_path / "drag.jaxexport"
    p = _python(KERNEL_SRC + f'''
import jax, jax.numpy as jnp
from jax import export
from eagle.frameworks import jax as eagle_jax
step = eagle_jax.function(drag_step, wrt=("v", "cd"), lowering="ffi")
v = jnp.ones((3, 64))
exp = export.export(jax.jit(step))(v, 0.07, 0.05, 9.81)
data = exp.serialize()
assert drag_step.digest("float64").encode() in data  # the digest travels ...
assert b"norm(" not in data and len(data) < 20_000  # ... and the kernel's code does not
open({str(blob)!r}, "wb").write(data)
print("exported", len(data))
''', tmp_path, env={"RAPTOR_CACHE_DIR": cache})
    assert p.returncode == 0, p.stderr[-3000:]
    q = _python(f'''
import jax, jax.numpy as jnp, numpy as np
from jax import export
import eagle.frameworks.jax as eagle_jax
eagle_jax.preload({cache!r})
exp = export.deserialize(bytearray(open({str(blob)!r}, "rb").read()))
v = jnp.ones((3, 64))
out = exp.call(v, 0.07, 0.05, 9.81)
a = -0.07 * np.sqrt(3.0) * 1.0 + np.array([0.0, 0.0, -9.81])
np.testing.assert_allclose(np.asarray(out)[:, 0], 1.0 + 0.05 * a, rtol=1e-12)
print("ran")
''', tmp_path, env={"RAPTOR_CACHE_DIR": str(tmp_path / "other")})
    assert q.returncode == 0, q.stderr[-3000:]
    assert "ran" in q.stdout
    # preload(None) uses the default cache directory
    r = _python('''
import eagle.frameworks.jax as eagle_jax
eagle_jax.preload()
print("ok")
''', tmp_path, env={"RAPTOR_CACHE_DIR": cache})
    assert r.returncode == 0, r.stderr[-3000:]


def test_export_of_grad_through_scan_with_preload(tmp_path):
    """An exported value_and_grad through a scan names the derived kernels (tangent and
    adjoint, trimmed) by digest too; preload in a fresh process finds them and the numbers
    are those of the exporting process."""
    cache = str(tmp_path / "cache")
    blob = tmp_path / "grad.jaxexport"
    loss_src = KERNEL_SRC + f'''
import jax, jax.numpy as jnp
from jax import export
from eagle.frameworks import jax as eagle_jax
step = eagle_jax.function(drag_step, wrt=("v", "cd"), lowering="ffi")
def loss(cd):
    v, _ = jax.lax.scan(lambda v, _: (step(v, cd, 0.01, 9.81), None), jnp.ones((3, 16)) * 4.0, None, length=20)
    return jnp.sum(v ** 2)
f = jax.jit(jax.value_and_grad(loss))
exp = export.export(f)(0.05)
open({str(blob)!r}, "wb").write(exp.serialize())
want = jax.value_and_grad(lambda cd: jnp.sum(jax.lax.scan(lambda v, _: (jnp_drag(v, cd, 0.01, 9.81), None), jnp.ones((3, 16)) * 4.0, None, length=20)[0] ** 2))(0.05)
print(repr(float(want[0])), repr(float(want[1])))
'''
    p = _python(loss_src, tmp_path, env={"RAPTOR_CACHE_DIR": cache})
    assert p.returncode == 0, p.stderr[-3000:]
    want = [float(x) for x in p.stdout.split()]
    q = _python(f'''
import jax
from jax import export
import eagle.frameworks.jax as eagle_jax
eagle_jax.preload({cache!r})
exp = export.deserialize(bytearray(open({str(blob)!r}, "rb").read()))
value, grad = exp.call(0.05)
print(repr(float(value)), repr(float(grad)))
''', tmp_path, env={"RAPTOR_CACHE_DIR": str(tmp_path / "other")})
    assert q.returncode == 0, q.stderr[-3000:]
    got = [float(x) for x in q.stdout.split()]
    np.testing.assert_allclose(got, want, rtol=1e-12)


def test_sharded_jit_runs_per_shard_without_gather(tmp_path):
    """Under jit with inputs sharded along the sample axis, each of 4 host devices runs its own
    shard: the compiled HLO has no all-gather, and the output keeps the input's sharding."""
    p = _python(KERNEL_SRC + '''
import jax, jax.numpy as jnp, numpy as np
from jax.sharding import Mesh, NamedSharding, PartitionSpec as P
from eagle.frameworks import jax as eagle_jax
assert len(jax.devices()) == 4
step = eagle_jax.function(drag_step, wrt=("v", "cd"), lowering="ffi")
mesh = Mesh(np.array(jax.devices()), ("s",))
sh = NamedSharding(mesh, P(None, "s"))
v = jax.device_put(jnp.asarray(np.random.default_rng(0).normal(size=(3, 1024))), sh)
f = jax.jit(lambda v: step(v, 0.07, 0.05, 9.81), in_shardings=sh, out_shardings=sh)
hlo = f.lower(v).compile().as_text()
assert "all-gather" not in hlo and "all-to-all" not in hlo and "collective-permute" not in hlo, "a gather in the compiled HLO"
out = f(v)
assert out.sharding.is_equivalent_to(sh, 2)
np.testing.assert_allclose(out, jnp_drag(v, 0.07, 0.05, 9.81), rtol=1e-12)
g = jax.jit(jax.grad(lambda v: jnp.sum(step(v, 0.07, 0.05, 9.81) ** 2)), in_shardings=sh, out_shardings=sh)
ghlo = g.lower(v).compile().as_text()
assert "all-gather" not in ghlo, "a gather in the gradient's HLO"
print("ok")
''', tmp_path, env={"XLA_FLAGS": "--xla_force_host_platform_device_count=4"})
    assert p.returncode == 0, p.stderr[-3000:]
    assert "ok" in p.stdout


def test_shard_map_runs_per_shard(tmp_path):
    p = _python(KERNEL_SRC + '''
import jax, jax.numpy as jnp, numpy as np
from jax.sharding import Mesh, PartitionSpec as P
from eagle.frameworks import jax as eagle_jax
step = eagle_jax.function(drag_step, wrt=("v", "cd"))
mesh = Mesh(np.array(jax.devices()), ("s",))
v = jnp.asarray(np.random.default_rng(0).normal(size=(3, 1024)))
f = jax.jit(jax.shard_map(lambda v: step(v, 0.07, 0.05, 9.81), mesh=mesh, in_specs=P(None, "s"), out_specs=P(None, "s")))
np.testing.assert_allclose(f(v), jnp_drag(v, 0.07, 0.05, 9.81), rtol=1e-12)
hlo = f.lower(v).compile().as_text()
assert "all-gather" not in hlo
loss = lambda v: jnp.sum(f(v) ** 2)
np.testing.assert_allclose(jax.grad(loss)(v), jax.grad(lambda v: jnp.sum(jnp_drag(v, 0.07, 0.05, 9.81) ** 2))(v), rtol=1e-10)
print("ok")
''', tmp_path, env={"XLA_FLAGS": "--xla_force_host_platform_device_count=4"})
    assert p.returncode == 0, p.stderr[-3000:]
    assert "ok" in p.stdout


def test_two_processes_with_jax_distributed(tmp_path):
    """Two processes, one CPU device each, joined by jax.distributed: a jitted step over a
    global array sharded across the processes runs each process's shard locally."""
    import socket

    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    script = KERNEL_SRC + f'''
import sys
import jax, jax.numpy as jnp, numpy as np
pid = int(sys.argv[1])
jax.distributed.initialize(coordinator_address="127.0.0.1:{port}", num_processes=2, process_id=pid)
from jax.sharding import Mesh, NamedSharding, PartitionSpec as P
from eagle.frameworks import jax as eagle_jax
step = eagle_jax.function(drag_step, wrt=("v", "cd"))
mesh = Mesh(np.array(jax.devices()), ("s",))
sh = NamedSharding(mesh, P(None, "s"))
full = np.random.default_rng(0).normal(size=(3, 512))
v = jax.make_array_from_callback(full.shape, sh, lambda idx: full[idx])
f = jax.jit(lambda v: step(v, 0.07, 0.05, 9.81), out_shardings=sh)
hlo = f.lower(v).compile().as_text()
assert "all-gather" not in hlo, "a gather across the processes in the compiled HLO"
out = f(v)
want = np.asarray(jnp_drag(jnp.asarray(full), 0.07, 0.05, 9.81))
for shard in out.addressable_shards:
    np.testing.assert_allclose(np.asarray(shard.data), want[shard.index], rtol=1e-12)
print("ok", pid)
jax.distributed.shutdown()
'''
    path = tmp_path / "dist.py"
    path.write_text(script)
    env = dict(os.environ, JAX_PLATFORMS="cpu", JAX_ENABLE_X64="1")
    procs = [subprocess.Popen([sys.executable, str(path), str(i)], stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=env) for i in range(2)]
    results = []
    for p in procs:
        try:
            out, err = p.communicate(timeout=120)
        except subprocess.TimeoutExpired:
            p.kill()
            out, err = p.communicate()
        results.append((p.returncode, out, err))
    for i, (rc, out, err) in enumerate(results):
        assert rc == 0, f"process {i}: {err[-3000:]}"
        assert f"ok {i}" in out
