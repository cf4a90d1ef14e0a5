"""Reverse-mode gradients through recorded graph launches (docs/runtime.md ``eagle.diff.reverse``;
/work/shared/seeds/001 section 6).

Page 001 section 6 runs cell by cell, as printed. Then gradients through 200 recorded
launches of in-place stepping kernels, with and without a Terminated mask, are compared
with ``jax.grad`` of the same loop written in jax.numpy (float64), for the initial planes
and for the Params (``"node.param"``); and the record's memory and the user's arrays.
"""

from __future__ import annotations

import numpy as np
import pytest

jax = pytest.importorskip("jax")

import jax.numpy as jnp  # noqa: E402

import eagle  # noqa: E402
import eagle.diff  # noqa: E402
import eagle.plan  # noqa: E402
import hawk  # noqa: E402
from eagle.frameworks import jax as eagle_jax  # noqa: E402
from eagle.graph import opaque  # noqa: E402
from eagle.record import Record  # noqa: E402
from hawk import Mutable, Param, Scalar, Terminated  # noqa: E402

from conftest import Page, assert_sum_close, plan_kernels  # noqa: E402

jax.config.update("jax_enable_x64", True)


# ------------------------------------------------------------------------------------------------
# page 001, section 6: your JAX step inside an eagle batch (cells as printed). Cell 0 is what
# sections 1 to 5 of the page leave in the namespace that section 6 uses.

P001S6 = [
    # 0: from the page's earlier sections
    '''
    import jax, jax.numpy as jnp
    jax.config.update("jax_enable_x64", True)
    from eagle.frameworks import jax as eagle_jax
    ''',
    # 1
    '''
    import tempfile
    import warnings

    warnings.filterwarnings("ignore", category=UserWarning, message=r"(?s).*CuPy may not function correctly.*")

    import numpy as np

    import eagle, eagle.diff, eagle.plan
    import hawk
    from eagle.graph import opaque
    from eagle.interop import import_buffer
    from hawk import Mutable, Scalar, Table
    gpu = jax.default_backend() == "gpu"
    xp = __import__("cupy") if gpu else np
    @hawk.kernel
    def lin(w: Table[Scalar], z: Scalar, y: Mutable[Scalar]):
        y = w.at(0) * z + w.at(1)       # w is ONE buffer, read by every sample
    ''',
    # 2
    '''
    (plan,) = eagle.plan.auto([lin], targets=("cuda" if gpu else "host",), cache_dir=tempfile.mkdtemp())
    x, z, y = xp.linspace(-1, 1, 8), xp.zeros(8), xp.zeros(8)
    w = xp.array([2.0, 0.5])                           # JAX arrays are immutable: one array of your own holds the weights

    to_np = (lambda a: a.get()) if gpu else np.asarray
    model = eagle_jax.node(jax.jit(lambda x: jnp.tanh(0.7 * x)), reads={"x": x}, writes={"z": z})
    g = (eagle.Graph().add_node(model, name="model")
         .add(plan.bind(w=w, z=z, y=y), name="lin").build(record=True))
    w[:] = xp.from_dlpack(jnp.array([6.0, 1.5]))       # the optimizer's new weights, copied in: the next launch reads them
    g.launch()
    print("a launch after the build sees the new weights:", bool(np.allclose(to_np(y), 6 * np.tanh(0.7 * to_np(x)) + 1.5)))
    ''',
    # 3
    '''
    def vjp(primals, cotangents):
        _, pull = jax.vjp(lambda a: jnp.tanh(0.7 * a), jax.dlpack.from_dlpack(xp.asarray(primals["x"]).copy()))
        return {"x": xp.from_dlpack(pull(jax.dlpack.from_dlpack(xp.asarray(cotangents["z"]).copy()))[0])}


    grads = eagle.diff.reverse(g.record, {"lin.y": xp.ones(8)}, vjps={"model": vjp})
    want = 6 * 0.7 * (1 - np.tanh(0.7 * to_np(x)) ** 2)
    print("d y / d x through your JAX step:", bool(np.allclose(to_np(grads["x"]), want)))
    ''',
]


@pytest.fixture(scope="module")
def p001s6():
    return Page("p001s6", P001S6)


def test_001_s6_definitions(p001s6):
    assert p001s6.run(0) == []
    assert p001s6.run(1) == []


def test_001_s6_weights_after_build(p001s6):
    assert p001s6.run(2) == ["a launch after the build sees the new weights: True"]
    ns = p001s6.ns
    to_np = ns["to_np"]  # on a GPU the page's planes are CuPy arrays
    np.testing.assert_allclose(to_np(ns["y"]), 6 * np.tanh(0.7 * to_np(ns["x"])) + 1.5, rtol=1e-15)
    assert len(ns["g"].record) == 1


def test_001_s6_gradient_through_the_jax_node(p001s6):
    assert p001s6.run(3) == ["d y / d x through your JAX step: True"]
    ns = p001s6.ns
    to_np = ns["to_np"]  # on a GPU the page's planes and gradients are CuPy arrays
    x = to_np(ns["x"])
    want = 6 * 0.7 * (1 - np.tanh(0.7 * x) ** 2)
    np.testing.assert_allclose(to_np(ns["grads"]["x"]), want, rtol=1e-14, atol=0)
    # the table's cotangent is a sum over samples: d sum(y) / d w = (sum z, n)
    assert_sum_close(to_np(ns["grads"]["w"]), [np.tanh(0.7 * x), np.ones(8)], rtol=1e-14, axis=1)
    if ns["gpu"]:  # the record and the sweep stayed on the device
        assert ns["g"].schedule == ("eager_stream", "record_stream")
        assert all(hasattr(a, "__cuda_array_interface__") for launch in ns["g"].record.launches for nl in launch for a in nl.saved.values())


# ------------------------------------------------------------------------------------------------
# a damped, slightly nonlinear oscillator stepped in place, and the same with a stop mask

STEPS = 200


@hawk.kernel(steps=1)
def damped(dt: Param, c: Param, x: Mutable[Scalar], v: Mutable[Scalar]):
    vn = v + dt * (-x - c * v - 0.1 * x * x * x)
    x = x + dt * v
    v = vn


@hawk.kernel(steps=1)
def osc(dt: Param, c: Param, t_final: Scalar, corr: Scalar, terminated: Terminated,
        x: Mutable[Scalar], v: Mutable[Scalar], t: Mutable[Scalar]):
    vn = v + dt * (-x - c * v + corr * v)
    x = x + dt * v
    v = vn
    tn = t + dt
    t = tn
    terminated = tn >= t_final


@hawk.kernel(steps=1, guard=hawk.Guard(active_set=True))
def osc_active(dt: Param, c: Param, t_final: Scalar, corr: Scalar, terminated: Terminated,
               x: Mutable[Scalar], v: Mutable[Scalar], t: Mutable[Scalar]):
    vn = v + dt * (-x - c * v + corr * v)
    x = x + dt * v
    v = vn
    tn = t + dt
    t = tn
    terminated = tn >= t_final


@hawk.kernel(steps=1)
def osc_energy(dt: Param, c: Param, ticks: Param[hawk.int32], t_final: Scalar, terminated: Terminated, x: Mutable[Scalar],
               v: Mutable[Scalar], t: Mutable[Scalar], e: Mutable[Scalar], k: Mutable[Scalar[hawk.int32]]):
    vn = v + dt * (-x - c * v)
    x = x + dt * v
    v = vn
    t = t + dt * float(ticks)  # an integer Param: recorded as an int, no cotangent
    e = x * x + vn * vn  # pure: written in each launch the sample is live
    k = int(t * 100.0)  # a pure integer output: no cotangent
    terminated = t >= t_final


@hawk.kernel
def lin(w: Param, z: Scalar, y: Mutable[Scalar]):
    y = w * z


@pytest.fixture(scope="module")
def plans(module_cache_dir):
    return plan_kernels([damped, osc, osc_active, lin, osc_energy], module_cache_dir)


def jax_damped(x, v, dt, c, steps=STEPS):
    def body(_, s):
        x, v = s
        vn = v + dt * (-x - c * v - 0.1 * x * x * x)
        return x + dt * v, vn

    return jax.lax.fori_loop(0, steps, body, (x, v))


def test_reverse_damped_oscillator_against_jax_grad(plans):
    n = 64
    rng = np.random.default_rng(0)
    x0, v0 = rng.uniform(-1, 1, n), rng.uniform(-1, 1, n)
    sx, sv = rng.uniform(0.5, 1.5, n), rng.uniform(-1, 1, n)
    dt, c = 0.02, 0.4
    x, v = x0.copy(), v0.copy()
    g = eagle.Graph().add(plans["damped"].bind(dt=dt, c=c, x=x, v=v), name="osc").build(record=True)
    g.launch(STEPS)
    assert len(g.record) == STEPS

    xf, vf = jax_damped(jnp.asarray(x0), jnp.asarray(v0), dt, c)
    np.testing.assert_allclose(x, np.asarray(xf), rtol=0, atol=1e-12)

    # seed on the final x only
    grads = eagle.diff.reverse(g.record, {"osc.x": sx})
    loss = lambda x0, v0, dt, c: jnp.sum(jnp.asarray(sx) * jax_damped(x0, v0, dt, c)[0])  # noqa: E731
    gx, gv, gdt, gc = jax.grad(loss, argnums=(0, 1, 2, 3))(jnp.asarray(x0), jnp.asarray(v0), dt, c)
    assert set(grads) >= {"x", "v", "osc.dt", "osc.c"}
    np.testing.assert_allclose(grads["x"], np.asarray(gx), rtol=1e-10, atol=1e-12)
    np.testing.assert_allclose(grads["v"], np.asarray(gv), rtol=1e-10, atol=1e-12)
    np.testing.assert_allclose(grads["osc.dt"], float(gdt), rtol=1e-10)
    np.testing.assert_allclose(grads["osc.c"], float(gc), rtol=1e-10)

    # seeds on both final planes
    grads2 = eagle.diff.reverse(g.record, {"osc.x": sx, "osc.v": sv})
    loss2 = lambda x0, v0, dt, c: (lambda s: jnp.sum(sx * s[0]) + jnp.sum(sv * s[1]))(jax_damped(x0, v0, dt, c))  # noqa: E731
    gx, gv, gdt, gc = jax.grad(loss2, argnums=(0, 1, 2, 3))(jnp.asarray(x0), jnp.asarray(v0), dt, c)
    np.testing.assert_allclose(grads2["x"], np.asarray(gx), rtol=1e-10, atol=1e-12)
    np.testing.assert_allclose(grads2["v"], np.asarray(gv), rtol=1e-10, atol=1e-12)
    np.testing.assert_allclose(grads2["osc.dt"], float(gdt), rtol=1e-10)
    np.testing.assert_allclose(grads2["osc.c"], float(gc), rtol=1e-10)


def test_reverse_sees_params_changed_between_launches(plans):
    """A Param bound to a 0-d array is read at each launch; the record keeps each launch's value."""
    n = 16
    rng = np.random.default_rng(1)
    x0, v0 = rng.uniform(-1, 1, n), rng.uniform(-1, 1, n)
    c_arr = np.array(0.1)
    x, v = x0.copy(), v0.copy()
    g = eagle.Graph().add(plans["damped"].bind(dt=0.05, c=c_arr, x=x, v=v), name="osc").build(record=True)
    cs = [0.1, 0.5, 0.9, 0.3]
    for cval in cs:
        c_arr[()] = cval
        g.launch(10)
    grads = eagle.diff.reverse(g.record, {"osc.x": np.ones(n)})

    def loss(x0, v0):
        x, v = x0, v0
        for cval in cs:
            x, v = jax_damped(x, v, 0.05, cval, steps=10)
        return jnp.sum(x)

    gx, gv = jax.grad(loss, argnums=(0, 1))(jnp.asarray(x0), jnp.asarray(v0))
    assert [nl.params["c"] for launch in g.record.launches[::10] for nl in launch] == cs
    np.testing.assert_allclose(grads["x"], np.asarray(gx), rtol=1e-10, atol=1e-12)
    np.testing.assert_allclose(grads["v"], np.asarray(gv), rtol=1e-10, atol=1e-12)


def jax_masked(x, v, corr, dt, c, t_final, steps=STEPS):
    n = x.shape[0]

    def body(_, s):
        x, v, t, done = s
        vn = v + dt * (-x - c * v + corr * v)
        xn, tn = x + dt * v, t + dt
        return (jnp.where(done, x, xn), jnp.where(done, v, vn), jnp.where(done, t, tn),
                done | (tn >= t_final))

    return jax.lax.fori_loop(0, steps, body, (x, v, jnp.zeros(n), jnp.zeros(n, bool)))


def test_reverse_masked_stepping_kernel_against_jax_where(plans):
    """Samples stop at different steps; a finished sample's state, and so its gradient, is
    frozen from the step it stopped."""
    n = 96
    rng = np.random.default_rng(2)
    start = dict(x=rng.uniform(0.5, 1.5, n), v=rng.uniform(-0.2, 0.3, n), t=np.zeros(n),
                 corr=rng.uniform(-0.2, 0.2, n), t_final=rng.uniform(0.2, 2.5, n))  # some never stop
    start["t_final"][0] = 0.005  # stops after its first step
    planes = {k: a.copy() for k, a in start.items()}
    mask = np.zeros(n, bool)
    dt, c = 0.01, 0.3
    g = (eagle.Graph()
         .add(plans["osc"].bind(dt=dt, c=c, terminated=mask, finished_count=np.zeros(1, np.uint32), **planes), name="osc")
         .build(record=True))
    g.launch(STEPS)
    assert 0 < mask.sum() < n  # some stopped along the way, some ran to the end

    tf = jnp.asarray(start["t_final"])
    xf, vf, _, done = jax_masked(jnp.asarray(start["x"]), jnp.asarray(start["v"]), jnp.asarray(start["corr"]), dt, c, tf)
    assert np.array_equal(mask, np.asarray(done))
    np.testing.assert_allclose(planes["x"], np.asarray(xf), rtol=0, atol=1e-12)

    sx, sv = rng.uniform(0.5, 1.5, n), rng.uniform(-1, 1, n)
    grads = eagle.diff.reverse(g.record, {"osc.x": sx, "osc.v": sv})

    def loss(x0, v0, corr, dt, c):
        x, v, _, _ = jax_masked(x0, v0, corr, dt, c, tf)
        return jnp.sum(sx * x) + jnp.sum(sv * v)

    gx, gv, gcorr, gdt, gc = jax.grad(loss, argnums=(0, 1, 2, 3, 4))(
        jnp.asarray(start["x"]), jnp.asarray(start["v"]), jnp.asarray(start["corr"]), dt, c)
    np.testing.assert_allclose(grads["x"], np.asarray(gx), rtol=1e-10, atol=1e-12)
    np.testing.assert_allclose(grads["v"], np.asarray(gv), rtol=1e-10, atol=1e-12)
    np.testing.assert_allclose(grads["corr"], np.asarray(gcorr), rtol=1e-10, atol=1e-12)
    np.testing.assert_allclose(grads["osc.dt"], float(gdt), rtol=1e-10)
    np.testing.assert_allclose(grads["osc.c"], float(gc), rtol=1e-10)
    # the stop decision carries no derivative
    assert np.all(grads.get("t_final", np.zeros(n)) == 0)
    assert "terminated" not in grads or not np.any(grads["terminated"])
    # sample 0 stopped after its first step: its gradient is that of one step, nothing more
    j0 = sx[0] * np.array([1.0, dt]) + sv[0] * np.array([-dt, 1 + dt * (-c + start["corr"][0])])
    np.testing.assert_allclose([grads["x"][0], grads["v"][0]], j0, rtol=1e-12)


def test_reverse_through_samples_that_finish_at_different_launches(plans):
    """A pure output (``e``) of a masked stepping kernel keeps, for a finished sample, the
    value of the last launch it was live in: its cotangent goes back to that launch. The
    sweep zeroed it after every launch for every sample, so the gradient of the final ``e``
    was that of the samples still live at the end only (the fuzzer's reverse check found it,
    tests/found_by_fuzzing/reverse_pure_output.py); and it raised numpy's TypeError on the
    integer pure output ``k``, which has no cotangent, and on the integer Param ``ticks``
    (recorded as a float, which its int32 buffer refused). Against jax.grad of the loop in
    jax.numpy."""
    n = 80
    rng = np.random.default_rng(12)
    x0, v0, tf = rng.uniform(0.5, 1.5, n), rng.uniform(-0.2, 0.3, n), rng.uniform(0.1, 3.0, n)  # some never stop
    dt, c = 0.01, 0.3
    res = eagle.simulate(plans["osc_energy"], dt=dt, c=c, ticks=1, t_final=tf, x=x0.copy(), v=v0.copy(), t=0.0,
                         max_steps=STEPS, record=True)
    assert res.steps == STEPS and 0 < res.finished.sum() < n
    se = rng.uniform(0.5, 1.5, n)
    grads = eagle.diff.reverse(res.record, {"e": se})

    def final_e(x0, v0, dt, c):
        def body(_, s):
            x, v, t, e, done = s
            vn = v + dt * (-x - c * v)
            xn, tn = x + dt * v, t + dt
            live = ~done
            return (jnp.where(live, xn, x), jnp.where(live, vn, v), jnp.where(live, tn, t),
                    jnp.where(live, xn * xn + vn * vn, e), done | (live & (tn >= tf)))

        return jax.lax.fori_loop(0, STEPS, body, (x0, v0, jnp.zeros(n), jnp.zeros(n), jnp.zeros(n, bool)))[3]

    np.testing.assert_allclose(np.asarray(final_e(jnp.asarray(x0), jnp.asarray(v0), dt, c)), res.e, rtol=1e-12)
    gx, gv, gdt, gc = jax.grad(lambda *a: jnp.sum(se * final_e(*a)), argnums=(0, 1, 2, 3))(jnp.asarray(x0), jnp.asarray(v0), dt, c)
    np.testing.assert_allclose(grads["x"], np.asarray(gx), rtol=1e-10, atol=1e-12)
    np.testing.assert_allclose(grads["v"], np.asarray(gv), rtol=1e-10, atol=1e-12)
    np.testing.assert_allclose(grads["osc_energy.dt"], float(gdt), rtol=1e-10)
    np.testing.assert_allclose(grads["osc_energy.c"], float(gc), rtol=1e-10)
    assert "k" not in grads or not np.any(grads["k"])
    assert "osc_energy.ticks" not in grads


@pytest.mark.parametrize("variant", ["active_set", "float32"])
def test_reverse_masked_variants_agree(plans, variant):
    """The active-set launcher (only live samples launched) and the float32 build give the
    gradients of the plain float64 kernel."""
    n = 64
    rng = np.random.default_rng(5)
    start = dict(x=rng.uniform(0.5, 1.5, n), v=rng.uniform(-0.2, 0.3, n), t=np.zeros(n),
                 corr=rng.uniform(-0.1, 0.1, n), t_final=rng.uniform(0.2, 2.5, n))

    def grads_of(kernel: str, dtype):
        planes = {k: a.astype(dtype) for k, a in start.items()}
        g = (eagle.Graph().add(plans[kernel].bind(dt=0.01, c=0.3, terminated=np.zeros(n, bool), **planes), name="osc")
             .build(record=True))
        g.launch(STEPS)
        out = eagle.diff.reverse(g.record, {"osc.x": np.ones(n, dtype)})
        return out, planes

    want, _ = grads_of("osc", np.float64)
    got, planes = grads_of("osc_active" if variant == "active_set" else "osc", np.float64 if variant == "active_set" else np.float32)
    tol = dict(rtol=0, atol=0) if variant == "active_set" else dict(rtol=1e-4, atol=1e-5)
    for k in ("x", "v", "corr"):
        assert np.asarray(got[k]).dtype == planes[k].dtype
        np.testing.assert_allclose(got[k], want[k], **tol)
    for k in ("osc.dt", "osc.c"):
        np.testing.assert_allclose(got[k], want[k], rtol=1e-4 if variant == "float32" else 0)


def test_reverse_through_a_jax_node_and_a_stepping_kernel(plans):
    """A JAX model between launches of the masked step, gradients via the node's VJP."""
    n = 32
    rng = np.random.default_rng(3)
    start = dict(x=rng.uniform(0.5, 1.5, n), v=rng.uniform(-0.2, 0.3, n), t=np.zeros(n),
                 corr=np.zeros(n), t_final=rng.uniform(0.1, 0.5, n))
    W = jnp.asarray(rng.normal(size=(2, 4)) * 0.5)
    model = jax.jit(lambda x, v: jnp.tanh(jnp.stack([x, v], 1) @ W).sum(1) * 0.3)
    planes = {k: a.copy() for k, a in start.items()}
    mask = np.zeros(n, bool)
    dt, c = 0.01, 0.3
    node = eagle_jax.node(model, reads={"x": planes["x"], "v": planes["v"]}, writes={"corr": planes["corr"]})
    g = (eagle.Graph().add_node(node, name="model")
         .add(plans["osc"].bind(dt=dt, c=c, terminated=mask, **planes), name="osc").build(record=True))
    g.launch(60)

    def vjp(primals, cotangents):
        _, pull = jax.vjp(model, jnp.asarray(primals["x"]), jnp.asarray(primals["v"]))
        gx, gv = pull(jnp.asarray(cotangents["corr"]))
        return {"x": np.asarray(gx), "v": np.asarray(gv)}

    grads = eagle.diff.reverse(g.record, {"osc.x": np.ones(n)}, vjps={"model": vjp})
    tf = jnp.asarray(start["t_final"])

    def loss(x0, v0):
        def body(_, s):
            x, v, t, done = s
            corr = model(x, v)
            vn = v + dt * (-x - c * v + corr * v)
            xn, tn = x + dt * v, t + dt
            return (jnp.where(done, x, xn), jnp.where(done, v, vn), jnp.where(done, t, tn), done | (tn >= tf))

        x, *_ = jax.lax.fori_loop(0, 60, body, (x0, v0, jnp.zeros(n), jnp.zeros(n, bool)))
        return jnp.sum(x)

    gx, gv = jax.grad(loss, argnums=(0, 1))(jnp.asarray(start["x"]), jnp.asarray(start["v"]))
    np.testing.assert_allclose(grads["x"], np.asarray(gx), rtol=1e-10, atol=1e-12)
    np.testing.assert_allclose(grads["v"], np.asarray(gv), rtol=1e-10, atol=1e-12)


# ------------------------------------------------------------------------------------------------
# refusals, memory, the user's arrays


def test_missing_vjp_names_the_foreign_node(plans):
    n = 8
    x, z, y = np.linspace(-1, 1, n), np.zeros(n), np.zeros(n)
    g = (eagle.Graph().add_node(opaque(lambda a: np.tanh(a), reads={"x": x}, writes={"z": z}), name="squash")
         .add(plans["lin"].bind(w=2.0, z=z, y=y), name="lin").build(record=True))
    g.launch()
    with pytest.raises(ValueError) as err:
        eagle.diff.reverse(g.record, {"lin.y": np.ones(n)})
    assert "'squash'" in str(err.value) and "vjp" in str(err.value).lower()
    with pytest.raises(ValueError, match="'squash'"):
        eagle.diff.reverse(g.record, {"lin.y": np.ones(n)}, vjps={"other": lambda p, c: {}})
    # with its VJP it goes through
    grads = eagle.diff.reverse(g.record, {"lin.y": np.ones(n)},
                               vjps={"squash": lambda p, c: {"x": c["z"] * (1 - np.tanh(p["x"]) ** 2)}})
    np.testing.assert_allclose(grads["x"], 2.0 * (1 - np.tanh(x) ** 2), rtol=1e-14)
    assert_sum_close(grads["lin.w"], np.tanh(x), rtol=1e-14)


def test_reverse_refusals(plans):
    n = 4
    g = eagle.Graph().add(plans["lin"].bind(w=2.0, z=np.ones(n), y=np.zeros(n)), name="lin").build()
    assert g.record is None
    with pytest.raises(TypeError, match="record=True"):
        eagle.diff.reverse(g.record, {"lin.y": np.ones(n)})
    g = eagle.Graph().add(plans["lin"].bind(w=2.0, z=np.ones(n), y=np.zeros(n)), name="lin").build(record=True)
    g.launch()
    with pytest.raises(KeyError, match="names no node"):
        eagle.diff.reverse(g.record, {"nope.y": np.ones(n)})
    with pytest.raises(KeyError, match="no plane 'q'"):
        eagle.diff.reverse(g.record, {"lin.q": np.ones(n)})


def test_record_memory_grows_linearly(plans):
    n = 1000
    x, v = np.ones(n), np.zeros(n)
    g = eagle.Graph().add(plans["damped"].bind(dt=0.01, c=0.1, x=x, v=v), name="osc").build(record=True)
    assert isinstance(g.record, Record) and len(g.record) == 0 and g.record.nbytes == 0
    per_launch = 2 * n * 8  # x and v, float64, copied before each launch
    sizes = []
    for k in (10, 20, 40, 80):
        g.launch(k - len(g.record))
        assert len(g.record) == k
        sizes.append(g.record.nbytes)
    assert sizes == [k * per_launch for k in (10, 20, 40, 80)]
    g.record.clear()
    assert len(g.record) == 0 and g.record.nbytes == 0
    g.launch(3)
    assert g.record.nbytes == 3 * per_launch


def test_record_memory_of_the_masked_step(plans):
    n = 500
    planes = dict(x=np.ones(n), v=np.zeros(n), t=np.zeros(n), corr=np.zeros(n), t_final=np.full(n, 10.0))
    g = eagle.Graph().add(plans["osc"].bind(dt=0.01, c=0.1, terminated=np.zeros(n, bool), **planes), name="osc").build(record=True)
    g.launch(7)
    assert g.record.nbytes == 7 * (3 * n * 8 + n)  # x, v, t and the mask


def test_reverse_leaves_user_arrays_alone(plans):
    n = 50
    rng = np.random.default_rng(4)
    planes = dict(x=rng.uniform(0.5, 1.5, n), v=rng.uniform(-0.2, 0.3, n), t=np.zeros(n),
                  corr=rng.uniform(-0.1, 0.1, n), t_final=rng.uniform(0.1, 1.0, n))
    mask = np.zeros(n, bool)
    count = np.zeros(1, np.uint32)
    g = (eagle.Graph().add(plans["osc"].bind(dt=0.01, c=0.3, terminated=mask, finished_count=count, **planes), name="osc")
         .build(record=True))
    g.launch(80)
    before = {k: a.copy() for k, a in planes.items()}
    mask_before, count_before = mask.copy(), count.copy()
    seed = np.ones(n)
    seed_before = seed.copy()
    saved = [{k: a.copy() for k, a in nl.saved.items()} for launch in g.record.launches for nl in launch]
    grads = eagle.diff.reverse(g.record, {"osc.x": seed})
    for k in planes:
        assert np.array_equal(planes[k], before[k]), k
    assert np.array_equal(mask, mask_before) and np.array_equal(count, count_before)
    assert np.array_equal(seed, seed_before)
    after = [nl.saved for launch in g.record.launches for nl in launch]
    assert all(np.array_equal(a[k], b[k]) for a, b in zip(saved, after) for k in a)
    # the result arrays are not the user's arrays
    assert not any(np.shares_memory(grads[k], a) for k in ("x", "v", "corr") for a in list(planes.values()) + [seed])
    # and a second sweep gives the same numbers
    again = eagle.diff.reverse(g.record, {"osc.x": seed})
    for k in ("x", "v", "corr", "osc.dt", "osc.c"):
        np.testing.assert_array_equal(again[k], grads[k])


def test_adjoint_plans_are_cached_per_cache_directory(tmp_path):
    """Two cache directories in one process never share an adjoint plan: each sweep's adjoint
    is built into (and loaded from) its primal plan's directory; a second sweep reuses it."""
    n = 4
    found = []
    for d in (tmp_path / "a", tmp_path / "b"):
        (plan,) = eagle.plan.auto([lin], cache_dir=d)
        g = eagle.Graph().add(plan.bind(w=2.0, z=np.full(n, 3.0), y=np.zeros(n)), name="lin").build(record=True)
        g.launch()
        for _ in range(2):
            grads = eagle.diff.reverse(g.record, {"lin.y": np.ones(n)})
            np.testing.assert_array_equal(grads["z"], np.full(n, 2.0))
            assert grads["lin.w"] == 3.0 * n
        mine = [(key, p) for key, p in eagle.diff._adjoint_plans.items() if key[3] == str(d)]
        assert len(mine) == 1
        key, adj = mine[0]
        assert key[:3] == (plan.kernel.digest("float64"), ("w", "z"), "host")
        assert adj.cache_dir == str(d) and adj.info["so_path"].startswith(str(d))
        found.append(key)
    assert found[0][:3] == found[1][:3] and found[0] != found[1]


def test_seed_and_vjp_results_of_the_wrong_size_name_the_plane(plans):
    n = 8
    x, z, y = np.linspace(-1, 1, n), np.zeros(n), np.zeros(n)
    g = (eagle.Graph().add_node(opaque(np.tanh, reads={"x": x}, writes={"z": z}), name="squash")
         .add(plans["lin"].bind(w=2.0, z=z, y=y), name="lin").build(record=True))
    g.launch()
    with pytest.raises(ValueError, match=r"seed 'lin.y' has shape \(7,\); the plane has shape \(8,\)"):
        eagle.diff.reverse(g.record, {"lin.y": np.ones(7)}, vjps={"squash": lambda p, c: {}})
    with pytest.raises(ValueError, match=r"the VJP of node 'squash': the cotangent of 'x' has shape \(9,\)"):
        eagle.diff.reverse(g.record, {"lin.y": np.ones(n)}, vjps={"squash": lambda p, c: {"x": np.ones(9)}})
    with pytest.raises(KeyError, match="returned a cotangent for 'q', which it does not read"):
        eagle.diff.reverse(g.record, {"lin.y": np.ones(n)}, vjps={"squash": lambda p, c: {"q": np.ones(n)}})
    # a (1, n) result of the right size is taken as the plane's shape
    grads = eagle.diff.reverse(g.record, {"lin.y": np.ones(n)}, vjps={"squash": lambda p, c: {"x": (c["z"] * (1 - np.tanh(p["x"]) ** 2)).reshape(1, n)}})
    np.testing.assert_allclose(grads["x"], 2.0 * (1 - np.tanh(x) ** 2), rtol=1e-15)


def test_a_vjp_may_return_jax_arrays(plans):
    """On the host a VJP's results may be JAX arrays as they come from jax.vjp."""
    n = 8
    x, z, y = np.linspace(-1, 1, n), np.zeros(n), np.zeros(n)
    f = jax.jit(lambda a: jnp.tanh(0.7 * a))
    g = (eagle.Graph().add_node(eagle_jax.node(f, reads={"x": x}, writes={"z": z}), name="model")
         .add(plans["lin"].bind(w=2.0, z=z, y=y), name="lin").build(record=True))
    g.launch(2)

    def vjp(primals, cotangents):
        assert all(isinstance(a, np.ndarray) for a in list(primals.values()) + list(cotangents.values()))
        _, pull = jax.vjp(f, jnp.asarray(primals["x"]))
        return {"x": pull(jnp.asarray(cotangents["z"]))[0]}

    grads = eagle.diff.reverse(g.record, {"lin.y": np.ones(n)}, vjps={"model": vjp})
    assert isinstance(grads["x"], np.ndarray)
    np.testing.assert_allclose(grads["x"], 2.0 * 0.7 * (1 - np.tanh(0.7 * x) ** 2), rtol=1e-14)
