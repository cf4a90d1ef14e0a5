"""The JAX bridge's two lowerings side by side (docs/jax.md "Two lowerings"): "ffi" (the C++
custom call) and "xla" (the kernel's optimized IR as XLA's own operations,
eagle/frameworks/_jax_xla.py). test_jax_bridge.py runs every bridge test on both; here:

  1. the op list the C++ core exports, and the refusal of ops the XLA lowering lacks
  2. the same numbers on both paths (float64 <= 1e-12 relative, float32 <= 1e-5), stepping
     kernels with a mask, sums of derived kernels, derivatives
  3. a table index out of range: an error on "ffi", NaN for that sample on "xla"
  4. "auto" on both sides of its threshold, and RAPTOR_JAX_LOWERING
  5. an "xla" export holds no custom call and runs in a fresh process that never imports raptor
"""

from __future__ import annotations

import os
import re
import subprocess
import sys
import textwrap

import numpy as np
import pytest

jax = pytest.importorskip("jax")
import jax.numpy as jnp  # noqa: E402
from jax.test_util import check_grads  # noqa: E402

import hawk  # noqa: E402
from eagle.frameworks import _jax_lowering, _jax_xla  # noqa: E402
from eagle.frameworks import jax as eagle_jax  # noqa: E402
from eagle.frameworks._jax_call import call_for  # noqa: E402
from hawk import Mutable, Param, Scalar, Table, Terminated, Vector  # noqa: E402
from hawk.math import atan2, cos, cross, exp, floor, log, norm, sign, sin, sqrt, tan, tanh, vec  # noqa: E402

jax.config.update("jax_enable_x64", True)

N = 24
DT, G = 0.05, 9.81
rng = np.random.default_rng(12)


@hawk.kernel
def drag_step(v: Vector[3], cd: Param, dt: Param, g: Param, v_next: Mutable[Vector[3]]):
    a = vec(0.0, 0.0, -g) - cd * norm(v) * v
    v_next = v + dt * a


@hawk.kernel
def many_ops(x: Scalar, y: Scalar, p: Param, out: Mutable[Scalar], sel: Mutable[Scalar]):
    a = exp(-x * x) + log(1.0 + y * y) + sin(x * p) + tanh(y) + atan2(y, x)
    b = floor(x * 3.0) + abs(y) ** 3 + x ** -2 + min(x, y) - max(x, p) + sqrt(abs(x) + 1.0)
    c = sign(x - 0.1) * cos(y) + tan(0.5 * x) + x ** 7
    out = a * b / (1.0 + p * p) + (x ** y if x > 0.0 else -y) + c
    sel = 1.0 if (x > 0.2 and y < 0.5) or not (x < -0.7) else -1.0


@hawk.kernel(steps=12)
def fall_steps(dt: Param, terminated: Terminated, h: Mutable[Scalar], u: Mutable[Scalar], t: Mutable[Scalar]):
    u = u - dt * 9.81
    h = h + dt * u
    t = t + dt
    terminated = h < 0.0


@hawk.kernel(steps=5)
def leaky(k: Param, x: Scalar, acc: Mutable[Scalar], pure: Mutable[Scalar]):
    acc = acc * k + x
    pure = acc * x


@hawk.kernel
def lookup(w: Table[Scalar], wv: Table[Vector[3]], idx: Scalar, x: Scalar, out: Mutable[Scalar], outv: Mutable[Vector[3]]):
    out = w.at(idx) * x + w.at(0) * w.at(idx + 1.0)
    outv = wv.at(idx) * x + wv.at(1)


@hawk.kernel
def guarded_lookup(w: Table[Scalar], idx: Scalar, out: Mutable[Scalar]):
    # the read past the end is under a false predicate for idx >= 4: clamped, no error
    out = w.at(idx + 1.0) if idx < 4.0 else -1.0


def both(kernel, wrt=()):
    return [eagle_jax.function(kernel, wrt=wrt, lowering=lw) for lw in ("ffi", "xla")]


def assert_same(a, b, rtol):
    la, lb = jax.tree.leaves(a), jax.tree.leaves(b)
    assert len(la) == len(lb)
    for x, y in zip(la, lb):
        x, y = np.asarray(x), np.asarray(y)
        assert x.shape == y.shape and x.dtype == y.dtype, (x.shape, y.shape, x.dtype, y.dtype)
        if x.dtype == bool:
            assert (x == y).all()
        else:
            np.testing.assert_allclose(y, x, rtol=rtol, atol=rtol * max(1.0, float(np.abs(x).max(initial=0.0))), equal_nan=False)


# ================================================================================================
# 1. the op list and refusals


def test_op_list_is_the_ir_after_passes():
    data = drag_step._core.op_list()
    assert data["name"] == "drag_step" and data["steps"] == 1 and data["terminate"] == -1
    assert [s[:3] for s in data["slots"]] == [("v", "plane", 3), ("cd", "param", 1), ("dt", "param", 1), ("g", "param", 1), ("v_next", "mutable", 3)]
    assert len(data["values"]) == drag_step._core.num_values()
    ir_lines = [ln for ln in drag_step._core.ir().splitlines() if ln.lstrip().startswith("%")]
    assert len(ir_lines) == len(data["values"])
    for line, (op, typ, args, *_rest) in zip(ir_lines, data["values"]):
        assert f"= {op}" in line, (line, op)  # the same op, in the same order, as ir()
        for a in args:
            assert a < len(data["values"])
    assert sorted((s[0], s[1]) for s in data["stores"]) == [(4, 0), (4, 1), (4, 2)]
    ops = fall_steps._core.op_list()
    assert ops["steps"] == 12 and ops["values"][ops["terminate"]][1] == "B"


def test_unknown_op_is_refused_by_name_and_auto_falls_back():
    data = drag_step._core.op_list()
    data["values"] = list(data["values"]) + [("random_normal", "F", (), -1, 0, 0.0, 0, -1)]
    ops = _jax_xla.OpList(data)
    assert not _jax_xla.supported(ops)
    with pytest.raises(_jax_xla.UnsupportedOp, match=r"kernel 'drag_step' has op 'random_normal' \(value %\d+\), which the \"xla\" lowering does not implement"):
        _jax_xla.evaluate(ops, [0, 1, 2, 3], [jnp.ones((3, 4)), 0.1, 0.1, 0.1], 4, [4], [(3, 4)], np.float64)
    assert issubclass(_jax_xla.UnsupportedOp, NotImplementedError)
    assert _jax_lowering.choose(ops, 16, "cpu") == "ffi"
    assert _jax_lowering.choose(_jax_xla.OpList(drag_step._core.op_list()), 16, "cpu") == "xla"


def test_lowering_argument_is_checked():
    with pytest.raises(ValueError, match="lowering must be 'auto', 'ffi' or 'xla', got 'mlir'"):
        eagle_jax.function(drag_step, lowering="mlir")


# ================================================================================================
# 2. the same numbers on both paths


def _inputs(dtype):
    x = jnp.asarray(np.linspace(-1.3, 1.4, N) + 0.013, dtype)
    y = jnp.asarray(rng.normal(size=N), dtype)
    v = jnp.asarray(rng.normal(size=(3, N)) * 4.0, dtype)
    return x, y, v


@pytest.mark.parametrize("dtype,rtol", [(np.float64, 1e-12), (np.float32, 1e-5)])
def test_same_numbers_every_op(dtype, rtol):
    x, y, v = _inputs(dtype)
    f, g = both(drag_step)
    assert_same(jax.jit(f)(v, 0.07, DT, G), jax.jit(g)(v, 0.07, DT, G), rtol)
    f, g = both(many_ops)
    assert_same(f(x, y, 0.3), g(x, y, 0.3), rtol)
    assert_same(jax.jit(f)(x, y, -1.1), jax.jit(g)(x, y, -1.1), rtol)


@pytest.mark.parametrize("dtype,rtol", [(np.float64, 1e-12), (np.float32, 1e-5)])
def test_same_numbers_stepping_with_mask(dtype, rtol):
    f, g = both(fall_steps, wrt=("h", "u"))
    h = jnp.asarray(0.2 + np.abs(rng.normal(size=N)), dtype)
    u = jnp.asarray(rng.normal(size=N), dtype)
    t = jnp.zeros(N, dtype)
    mask = jnp.arange(N) % 5 == 0
    out_f, out_g = f(DT, mask, h, u, t), g(DT, mask, h, u, t)
    assert_same(out_f, out_g, rtol)
    done = np.asarray(out_g[3])
    assert done[::5].all() and 0 < done.sum() < N  # some finished in this call, some did not
    np.testing.assert_array_equal(np.asarray(out_g[0])[::5], np.asarray(h)[::5])  # a finished sample keeps its value
    a, b = both(leaky, wrt=("k", "x", "acc"))
    x, y, _ = _inputs(dtype)
    assert_same(a(0.9, x, y), b(0.9, x, y), rtol)


def test_same_derivatives_and_sums():
    x, y, v = _inputs(np.float64)
    f, g = both(fall_steps, wrt=("h", "u"))
    h, u, t = 0.3 + jnp.abs(x), y, jnp.zeros(N)
    mask = jnp.arange(N) % 4 == 0
    for tr in (jax.jacfwd, jax.jacrev):
        assert_same(tr(lambda h, u: f(DT, mask, h, u, t)[:3], argnums=(0, 1))(h, u),
                    tr(lambda h, u: g(DT, mask, h, u, t)[:3], argnums=(0, 1))(h, u), 1e-12)
    # the cotangents of Params and Tables are sums over samples (ParamSum, TableSum slots)
    a, b = both(lookup, wrt=("w", "wv", "x"))
    w, wv = jnp.arange(1.0, 7.0) ** 0.5, jnp.asarray(rng.normal(size=(6, 3)))
    idx = jnp.asarray(rng.integers(0, 5, N), dtype=jnp.float64)
    loss = lambda fn: (lambda w, wv, x: sum(jnp.sum(o ** 2) for o in fn(w, wv, idx, x)))
    assert_same(jax.grad(loss(a), argnums=(0, 1, 2))(w, wv, x), jax.grad(loss(b), argnums=(0, 1, 2))(w, wv, x), 1e-12)
    p, q = both(leaky, wrt=("k", "x", "acc"))
    assert_same(jax.hessian(lambda k: jnp.sum(p(k, x, y)[1] ** 2))(0.9), jax.hessian(lambda k: jnp.sum(q(k, x, y)[1] ** 2))(0.9), 1e-12)
    assert_same(jax.vmap(lambda k: p(k, x, y), in_axes=0)(jnp.linspace(0.5, 1.0, 3)), jax.vmap(lambda k: q(k, x, y))(jnp.linspace(0.5, 1.0, 3)), 1e-12)


def test_check_grads_order_2_on_xla_stepping_kernel():
    from jax.test_util import check_grads

    g = eagle_jax.function(leaky, wrt=("k", "x", "acc"), lowering="xla")
    x, y, _ = _inputs(np.float64)
    check_grads(lambda k, x, acc: g(k, x, acc), (0.9, x, y), order=2, modes=("fwd", "rev"))
    h = eagle_jax.function(fall_steps, wrt=("h", "u"), lowering="xla")
    mask = jnp.arange(N) % 4 == 0
    check_grads(lambda hh, u: h(DT, mask, hh, u, jnp.zeros(N))[:2], (5.0 + jnp.abs(x), y), order=2, modes=("fwd", "rev"))


def test_xla_vmap_is_jax_batching_unless_a_while_loop_could_not_transpose():
    """Under vmap, an "xla" call of a kernel whose operations have no while loop becomes those
    operations batched by JAX (no loop over batch entries, no reshape of the carry at the
    batch's edges); a stepping kernel with a mask, whose loop is a while loop, stays the
    primitive (folded or per entry), so grad of its vmap still transposes."""
    x, y, _ = _inputs(np.float64)
    ks = jnp.linspace(0.5, 1.0, 3)
    p, q = both(leaky, wrt=("k", "x", "acc"))
    jaxpr = str(jax.make_jaxpr(jax.vmap(lambda k: q(k, x, y)))(ks))
    assert "raptor_kernel" not in jaxpr and "while" not in jaxpr
    loss = lambda fn: (lambda ks, x: jnp.sum(jax.vmap(lambda k: fn(k, x, y)[1])(ks) ** 2))
    assert_same(jax.grad(loss(p), argnums=(0, 1))(ks, x), jax.grad(loss(q), argnums=(0, 1))(ks, x), 1e-12)
    # jacfwd with respect to one number through a scan: a batch of one entry
    scan = lambda fn: (lambda k: jax.lax.scan(lambda acc, _: (fn(k, x, acc)[0], None), y, None, length=20)[0])
    jaxpr = str(jax.make_jaxpr(jax.jacfwd(scan(q)))(0.9))
    assert jaxpr.count("raptor_kernel[") == 1 and "leaky_tangent" not in jaxpr  # the primal call; its tangents batched by JAX
    assert_same(jax.jit(jax.jacfwd(scan(p)))(0.9), jax.jit(jax.jacfwd(scan(q)))(0.9), 1e-12)

    f, g = both(fall_steps, wrt=("h", "u"))
    h, u, t = 0.3 + jnp.abs(x), y, jnp.zeros(N)
    mask = jnp.arange(N) % 4 == 0
    dts = jnp.asarray([0.01, 0.02, 0.05])
    assert "raptor_kernel" in str(jax.make_jaxpr(jax.vmap(lambda dt: g(dt, mask, h, u, t)))(dts))
    fall_loss = lambda fn: (lambda h: jnp.sum(jax.vmap(lambda dt: fn(dt, mask, h, u, t)[0])(dts) ** 2))
    assert_same(jax.grad(fall_loss(f))(h), jax.grad(fall_loss(g))(h), 1e-12)


# ================================================================================================
# 3. a table index out of range


def test_table_index_out_of_range_never_a_silent_number():
    f, g = both(lookup, wrt=("w", "wv", "x"))
    w, wv = jnp.arange(1.0, 7.0), jnp.ones((6, 3))
    x = jnp.ones(N)
    idx = jnp.asarray(np.arange(N) % 5, dtype=jnp.float64).at[3].set(5.0).at[7].set(-1.0).at[9].set(jnp.nan)
    with pytest.raises(Exception, match=r"kernel 'lookup': table 'w' index \S+ is out of range \[0, 6\)"):
        jax.block_until_ready(f(w, wv, idx, x))
    out, outv = g(w, wv, idx, x)
    bad = np.zeros(N, bool)
    bad[[3, 7, 9]] = True  # idx 5 reads w.at(6); -1 and NaN are out of range themselves
    assert np.isnan(np.asarray(out))[bad].all() and np.isnan(np.asarray(outv))[:, bad].all()
    assert np.isfinite(np.asarray(out))[~bad].all() and np.isfinite(np.asarray(outv))[:, ~bad].all()
    ok = jnp.asarray(np.arange(N) % 5, dtype=jnp.float64)
    np.testing.assert_allclose(np.asarray(out)[~bad], np.asarray(f(w, wv, ok, x)[0])[~bad], rtol=1e-12)
    # a sum any such sample contributes to is NaN as a whole
    gw = jax.grad(lambda w: jnp.sum(g(w, wv, idx, x)[0]))(w)
    assert np.isnan(np.asarray(gw)).all()
    # under a false predicate the read is clamped, as on the FFI path: no error, no NaN
    a, b = both(guarded_lookup)
    i = jnp.asarray(np.arange(N) % 6, dtype=jnp.float64)
    assert_same(a(w[:5], i), b(w[:5], i), 1e-12)
    # "auto" keeps the error for kernels that read tables, whatever N
    auto = eagle_jax.function(lookup)
    assert auto.lowering_for(call_for(lookup, np.float64), [w, wv, idx, x]) == "ffi"


# ================================================================================================
# 4. "auto" and RAPTOR_JAX_LOWERING


def _custom_calls(fn, *args):
    return jax.jit(fn).lower(*args).as_text().count("raptor_kernel")


def test_auto_on_both_sides_of_the_threshold(monkeypatch):
    monkeypatch.delenv(_jax_lowering.ENV, raising=False)
    step = eagle_jax.function(drag_step)
    small = _jax_lowering.XLA_MAX_WORK
    big = _jax_lowering.XLA_MAX_WORK + 1
    lo = jnp.ones((3, small))
    hi = jnp.ones((3, big))
    call = call_for(drag_step, np.float64)
    assert step.lowering_for(call, [lo, 0.1, 0.1, 0.1]) == "xla"
    assert step.lowering_for(call, [hi, 0.1, 0.1, 0.1]) == "ffi"
    assert _custom_calls(lambda v: step(v, 0.07, DT, G), lo) == 0
    assert _custom_calls(lambda v: step(v, 0.07, DT, G), hi) == 1
    # the work is N x steps: a 12-step kernel switches at a twelfth of the samples
    ops = call_for(fall_steps, np.float64).ops()
    assert _jax_lowering.choose(ops, small // 12, "cpu") == "xla"
    assert _jax_lowering.choose(ops, small // 12 + 1, "cpu") == "ffi"
    assert _jax_lowering.choose(ops, 16, "cuda") == "ffi"
    # both sides give the same numbers
    v = jnp.asarray(rng.normal(size=(3, big)))
    ref = eagle_jax.function(drag_step, lowering="xla")
    assert_same(step(v, 0.07, DT, G), ref(v, 0.07, DT, G), 1e-12)
    assert_same(step(v[:, :small], 0.07, DT, G), eagle_jax.function(drag_step, lowering="ffi")(v[:, :small], 0.07, DT, G), 1e-12)


def test_environment_forces_auto(monkeypatch):
    step = eagle_jax.function(drag_step)
    lo = jnp.ones((3, 8))
    monkeypatch.setenv(_jax_lowering.ENV, "ffi")
    assert _custom_calls(lambda v: step(v, 0.07, DT, G), lo) == 1
    monkeypatch.setenv(_jax_lowering.ENV, "xla")
    assert _custom_calls(lambda v: step(v, 0.07, DT, G), jnp.ones((3, 1 << 16))) == 0
    assert _custom_calls(lambda v: eagle_jax.function(drag_step, lowering="ffi")(v, 0.07, DT, G), lo) == 1  # an explicit lowering wins
    monkeypatch.setenv(_jax_lowering.ENV, "fast")
    with pytest.raises(ValueError, match="RAPTOR_JAX_LOWERING='fast'; set it to 'ffi', 'xla' or 'auto'"):
        step(lo, 0.07, DT, G)


# ================================================================================================
# 5. export


def test_xla_export_runs_in_a_process_without_raptor(tmp_path):
    step = eagle_jax.function(drag_step, wrt=("v", "cd"), lowering="xla")
    v = jnp.asarray(rng.normal(size=(3, 32)))

    def loss(v, cd):
        out, _ = jax.lax.scan(lambda v, _: (step(v, cd, 0.01, 9.81), None), v, None, length=20)
        return jnp.sum(out ** 2)

    f = jax.jit(jax.value_and_grad(loss, argnums=(0, 1)))
    exp = jax.export.export(f)(v, 0.05)
    text = exp.mlir_module()
    assert "stablehlo.custom_call" not in text and "@raptor_kernel" not in text and '"raptor_kernel"' not in text
    blob = tmp_path / "xla.jaxexport"
    blob.write_bytes(exp.serialize())
    np.save(tmp_path / "v.npy", np.asarray(v))
    value, (gv, gcd) = f(v, 0.05)
    np.save(tmp_path / "want.npy", np.concatenate([[float(value), float(gcd)], np.asarray(gv).ravel()]))
    script = textwrap.dedent(f'''
        import sys
        import jax, numpy as np
        jax.config.update("jax_enable_x64", True)
        from jax import export
        exp = export.deserialize(bytearray(open({str(blob)!r}, "rb").read()))
        v = np.load({str(tmp_path / "v.npy")!r})
        value, (gv, gcd) = exp.call(v, 0.05)
        got = np.concatenate([[float(value), float(gcd)], np.asarray(gv).ravel()])
        np.testing.assert_allclose(got, np.load({str(tmp_path / "want.npy")!r}), rtol=1e-12)
        loaded = [m for m in sys.modules if m.split(".")[0] in ("raptor_core", "hawk", "eagle")]
        assert not loaded, loaded
        print("ran without raptor")
    ''')
    env = {k: val for k, val in os.environ.items() if k != "PYTHONPATH"}  # raptor is not even importable there
    env.update(JAX_PLATFORMS="cpu")
    p = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, env=env, timeout=120, cwd=str(tmp_path))
    assert p.returncode == 0, p.stderr[-3000:]
    assert "ran without raptor" in p.stdout


def test_xla_sharded_jit_runs_per_shard(tmp_path):
    """Under jit with planes sharded along the sample axis, XLA partitions the "xla" operations
    itself: no gather, the output keeps the sharding, the cotangent of a Param is summed."""
    src = textwrap.dedent('''
        import jax, jax.numpy as jnp, numpy as np
        jax.config.update("jax_enable_x64", True)
        from jax.sharding import Mesh, NamedSharding, PartitionSpec as P
        import hawk
        from hawk import Mutable, Param, Scalar, Terminated, Vector
        from hawk.math import norm, vec
        from eagle.frameworks import jax as eagle_jax

        @hawk.kernel
        def drag_step(v: Vector[3], cd: Param, dt: Param, g: Param, v_next: Mutable[Vector[3]]):
            a = vec(0.0, 0.0, -g) - cd * norm(v) * v
            v_next = v + dt * a

        def jnp_drag(v, cd, dt, g):
            a = -cd * jnp.linalg.norm(v, axis=0) * v + jnp.array([0.0, 0.0, -g])[:, None]
            return v + dt * a

        assert len(jax.devices()) == 4
        step = eagle_jax.function(drag_step, wrt=("v", "cd"), lowering="xla")
        sh = NamedSharding(Mesh(np.array(jax.devices()), ("s",)), P(None, "s"))
        v = jax.device_put(jnp.asarray(np.random.default_rng(0).normal(size=(3, 1024))), sh)
        f = jax.jit(lambda v: step(v, 0.07, 0.05, 9.81), in_shardings=sh, out_shardings=sh)
        hlo = f.lower(v).compile().as_text()
        assert "all-gather" not in hlo and "custom-call" not in hlo, "a gather or a custom call in the compiled HLO"
        out = f(v)
        assert out.sharding.is_equivalent_to(sh, 2)
        np.testing.assert_allclose(out, jnp_drag(v, 0.07, 0.05, 9.81), rtol=1e-12)
        loss = lambda fn: (lambda v, cd: jnp.sum(fn(v, cd, 0.05, 9.81) ** 2))
        g = jax.jit(jax.grad(loss(step), argnums=(0, 1)), in_shardings=(sh, None))
        assert "all-gather" not in g.lower(v, 0.07).compile().as_text()
        got, want = g(v, 0.07), jax.grad(loss(jnp_drag), argnums=(0, 1))(v, 0.07)
        np.testing.assert_allclose(got[0], want[0], rtol=1e-12)
        np.testing.assert_allclose(got[1], want[1], rtol=1e-12)

        # integer and bool planes too: each shard steps its own samples' counters
        @hawk.kernel(steps=6)
        def tick(nstop: Scalar[hawk.int32], x: Scalar, terminated: Terminated, k: Mutable[Scalar[hawk.int32]],
                 y: Mutable[Scalar], odd: Mutable[Scalar[hawk.bool_]]):
            y = y + x * float(k)
            odd = k % 2 == 1
            k = k + 1
            terminated = k >= nstop

        sh1 = NamedSharding(Mesh(np.array(jax.devices()), ("s",)), P("s"))
        r = np.random.default_rng(1)
        nstop = jax.device_put(jnp.asarray(r.integers(0, 9, 1024), jnp.int32), sh1)
        x = jax.device_put(jnp.asarray(r.uniform(-1, 1, 1024)), sh1)
        mask = jax.device_put(jnp.zeros(1024, bool), sh1)
        k0 = jax.device_put(jnp.zeros(1024, jnp.int32), sh1)
        tf = jax.jit(eagle_jax.function(tick, lowering="xla"), in_shardings=(sh1,) * 5, out_shardings=sh1)
        hlo = tf.lower(nstop, x, mask, k0, x).compile().as_text()
        assert "all-gather" not in hlo and "custom-call" not in hlo, "a gather or a custom call in the compiled HLO"
        k, y, odd, done = tf(nstop, x, mask, k0, x)  # y starts at x
        runs = np.maximum(1, np.minimum(np.asarray(nstop), 6))  # one step at least, 6 at most
        assert k.sharding.is_equivalent_to(sh1, 1) and k.dtype == jnp.int32
        assert np.array_equal(np.asarray(k), runs)
        np.testing.assert_allclose(np.asarray(y), np.asarray(x) * (1 + runs * (runs - 1) / 2), rtol=1e-12)
        assert np.array_equal(np.asarray(odd), (runs - 1) % 2 == 1)
        assert np.array_equal(np.asarray(done), np.asarray(nstop) <= 6)
        print("ok")
    ''')
    _run_script(tmp_path / "sharded.py", src, XLA_FLAGS="--xla_force_host_platform_device_count=4")


def _run_script(path, src: str, **env: str) -> None:
    """Runs ``src`` from the file ``path`` (hawk reads a kernel's source from its file) in a
    fresh Python on the CPU with ``env`` added; it must exit 0 having printed "ok"."""
    path.write_text(src)
    p = subprocess.run([sys.executable, str(path)], capture_output=True, text=True,
                       env={**os.environ, "JAX_PLATFORMS": "cpu", **env}, timeout=180)
    assert p.returncode == 0, p.stderr[-3000:]
    assert "ok" in p.stdout


def test_xla_integers_are_int32_without_x64_in_a_fresh_process(tmp_path):
    """Without jax_enable_x64 (float32 only) the integers this path makes itself (a long loop's
    index, its draws' indices, int(x), `%`) are int32 and equal the FFI path's; a bool plane is
    lowered; an integer plane is refused by name, and "auto" takes "ffi" for it."""
    src = textwrap.dedent('''
        import jax, jax.numpy as jnp, numpy as np
        import hawk
        from hawk import Mutable, Scalar
        from eagle.frameworks import jax as eagle_jax
        from eagle.frameworks import _jax_xla

        assert not jax.config.jax_enable_x64

        @hawk.kernel
        def walk(x: Scalar, rng: hawk.Random, on: Scalar[hawk.bool_], y: Mutable[Scalar], c: Mutable[Scalar],
                 flag: Mutable[Scalar[hawk.bool_]]):
            s = x  # every float exact on both paths (no sum XLA could contract)
            n = 0.0
            for i in range(5000):
                s = rng.uniform()
                if int(s * 70.0) % 3 == 0:
                    n = n + 1.0
                if s < 0.002:
                    break
            y = s
            c = n
            flag = on and s > 0.001

        @hawk.kernel
        def counts(n: Scalar[hawk.int32], x: Scalar, y: Mutable[Scalar]):
            y = x * float(n)

        assert "loop_begin" in walk.ir
        x = jnp.linspace(-1.0, 2.0, 40, dtype=jnp.float32)
        on = jnp.arange(40) % 3 == 0
        key = jax.random.key(5)
        got = {lw: jax.jit(eagle_jax.function(walk, lowering=lw))(x, key, on) for lw in ("ffi", "xla")}
        assert [a.dtype for a in got["xla"]] == [jnp.float32, jnp.float32, jnp.bool_]
        for a, b in zip(got["ffi"], got["xla"]):
            np.testing.assert_array_equal(np.asarray(a), np.asarray(b))
        assert 0 < float(got["xla"][1].min()) and 50 < float(got["xla"][1].max()) and bool(got["xla"][2].any())
        try:
            eagle_jax.function(counts, lowering="xla")(jnp.arange(4, dtype=jnp.int32), jnp.ones(4))
            raise SystemExit("not refused")
        except _jax_xla.UnsupportedOp as e:
            assert "the integer plane 'n', whose integers compute in int64" in str(e), str(e)
        y = eagle_jax.function(counts)(jnp.arange(4, dtype=jnp.int32), jnp.ones(4))
        np.testing.assert_array_equal(np.asarray(y), np.arange(4.0))
        print("ok")
    ''')
    _run_script(tmp_path / "no_x64.py", src, JAX_ENABLE_X64="0")


# ---------------------------------------------------------------- the language's newer features


@hawk.kernel(steps=3)
def noisy_walk(rng: hawk.Random, s: Param, x: Mutable[Scalar], u: Mutable[Scalar]):
    x = x + s * rng.normal()
    u = rng.uniform()


@pytest.mark.parametrize("dtype", [np.float64, np.float32])
def test_random_draws_on_xla_are_jax_randoms(dtype):
    """Uniform draws equal the FFI path's bit for bit; normal ones are jax.random.normal's
    own, within the FFI path's tolerance of them (1e-13 float64, 1e-6 float32)."""
    key = jax.random.key(7)
    x0 = jnp.asarray(rng.normal(size=N), dtype)
    got = {lw: eagle_jax.function(noisy_walk, lowering=lw)(key, dtype(0.5), x0) for lw in ("ffi", "xla")}
    assert np.array_equal(np.asarray(got["ffi"][1]), np.asarray(got["xla"][1]))  # u: step 2's draw 1
    tol = 1e-13 if dtype is np.float64 else 1e-6
    np.testing.assert_allclose(np.asarray(got["xla"][0]), np.asarray(got["ffi"][0]), rtol=tol, atol=tol)
    # and against jax.random written out: x after 3 steps, draw 0 of each step
    k = key
    want = np.asarray(x0, np.float64).copy()
    for step in range(3):
        for i in range(N):
            sub = jax.random.fold_in(jax.random.fold_in(jax.random.fold_in(k, step), i), 0)
            want[i] += 0.5 * float(jax.random.normal(sub, (), dtype))
    np.testing.assert_allclose(np.asarray(got["xla"][0], np.float64), want, rtol=10 * tol, atol=10 * tol)
    assert _jax_lowering.choose(_jax_xla.op_list(noisy_walk._core), N, "cpu") == "xla"


@hawk.kernel
def turn(R: hawk.Matrix[3, 3], v: Vector[3], c: Param, w: Mutable[Vector[3]], M: Mutable[hawk.Matrix[3, 3]]):
    w = R @ v
    M = hawk.math.transpose(R) @ R * hawk.math.stop_gradient(c) + hawk.math.outer(v, v)


def test_matrix_planes_and_stop_gradient_on_xla():
    R = jnp.asarray(rng.normal(size=(3, 3, N)))
    v = jnp.asarray(rng.normal(size=(3, N)))
    outs = {lw: eagle_jax.function(turn, wrt=("R", "v", "c"), lowering=lw)(R, v, 0.7) for lw in ("ffi", "xla")}
    for a, b in zip(outs["ffi"], outs["xla"]):
        assert a.shape == b.shape
        np.testing.assert_allclose(np.asarray(b), np.asarray(a), rtol=1e-12, atol=1e-12)
    np.testing.assert_allclose(np.asarray(outs["xla"][0]), np.einsum("ijn,jn->in", np.asarray(R), np.asarray(v)), rtol=1e-12)
    # derivatives: stop_gradient(c) gives no derivative with respect to c on either path
    for lw in ("ffi", "xla"):
        f = eagle_jax.function(turn, wrt=("R", "v", "c"), lowering=lw)
        g = jax.grad(lambda c: jnp.sum(f(R, v, c)[1]))(0.7)
        assert float(g) == 0.0
        check_grads(lambda R, v: f(R, v, 0.7), (R, v), order=2, modes=("fwd", "rev"))


@hawk.kernel
def counts(n: Scalar[hawk.int32], x: Scalar, y: Mutable[Scalar]):
    y = x * float(n)


@hawk.kernel(steps=40)
def countdown(nstop: Scalar[hawk.int32], x: Scalar, big: Param[hawk.int64], terminated: Terminated,
              k: Mutable[Scalar[hawk.int32]], y: Mutable[Scalar], w: Mutable[Scalar[hawk.int64]],
              odd: Mutable[Scalar[hawk.bool_]]):
    y = y * 0.5 + x * float(k)
    w = w * 3 + big  # wraps in int64
    odd = k % 2 == 1
    k = k + 1
    terminated = k >= nstop


def _countdown_ref(nstop, x, big, mask, k, y, w):
    """NumPy's stepping of `countdown` (Python ints for w, wrapped to int64 at the end)."""
    k, y, w = k.astype(np.int64), y.copy(), [int(v) for v in w]
    odd = np.zeros(len(k), bool)
    done = mask.copy()
    for _ in range(40):
        live = ~done
        y = np.where(live, y * 0.5 + x * k.astype(y.dtype), y)
        w = [v * 3 + big if on else v for v, on in zip(w, live)]
        odd = np.where(live, k % 2 == 1, odd)
        k = np.where(live, k + 1, k)
        done = done | (live & (k >= nstop))
    wrap = [(v + 2**63) % 2**64 - 2**63 for v in w]
    return k.astype(np.int32), y, np.array(wrap, np.int64), odd, done


@pytest.mark.parametrize("dtype,rtol", [(np.float64, 1e-12), (np.float32, 1e-5)])
def test_integer_and_bool_planes_on_xla(dtype, rtol):
    """Integer and bool planes, Params and outputs, in a stepping kernel with a mask: the
    integers equal the FFI path's and NumPy's exactly (an int32 plane widened to int64 and
    stored back wrapped, int64 arithmetic wrapping), the floats within rtol; "auto" takes
    "xla" for a small call of such a kernel."""
    ops = _jax_xla.op_list(countdown._core)
    assert _jax_xla.supported(ops, dtype) and _jax_lowering.choose(ops, 8, "cpu", dtype) == "xla"  # 8 x 40 steps
    assert ops.slot_type[ops.slots.index(next(s for s in ops.slots if s[0] == "odd"))] == "B"
    nstop = jnp.asarray(rng.integers(0, 50, N), jnp.int32)
    x = jnp.asarray(rng.uniform(-1, 1, N), dtype)
    big = 2**52 + 12345  # an int64 Param within +-2**53 (the FFI path's double parameter cell)
    mask = jnp.arange(N) % 7 == 3
    k = jnp.asarray(rng.integers(-3, 3, N), jnp.int32)
    y = jnp.asarray(rng.uniform(-1, 1, N), dtype)
    w = jnp.asarray(rng.integers(-(2**40), 2**40, N), jnp.int64)
    f, g = both(countdown)
    out_f, out_g = jax.jit(f)(nstop, x, big, mask, k, y, w), jax.jit(g)(nstop, x, big, mask, k, y, w)
    assert [o.dtype for o in out_g] == [jnp.int32, dtype, jnp.int64, jnp.bool_, jnp.bool_]  # k, y, w, odd, the mask
    assert_same(out_f, out_g, rtol)
    for o_ffi, o_xla in zip(out_f, out_g):
        if not jnp.issubdtype(o_xla.dtype, jnp.floating):
            np.testing.assert_array_equal(np.asarray(o_xla), np.asarray(o_ffi))
    want = _countdown_ref(np.asarray(nstop), np.asarray(x), big, np.asarray(mask), np.asarray(k), np.asarray(y), np.asarray(w))
    for got, ref in zip(out_g, want):
        if jnp.issubdtype(got.dtype, jnp.floating):
            np.testing.assert_allclose(np.asarray(got), ref, rtol=rtol, atol=rtol)
        else:
            np.testing.assert_array_equal(np.asarray(got), ref)
    # vmap over planes and over the int64 Param: the while loop's batching rule (a launch per
    # entry) on both paths, the same integers
    batch = (jnp.stack([nstop, nstop // 2]), jnp.stack([x, -x]), jnp.stack([mask, ~mask]), jnp.stack([k, k + 1]),
             jnp.stack([y, y]), jnp.stack([w, w]))
    bf, bg = (jax.vmap(lambda ns, a, m, kk, yy, ww, h=h: h(ns, a, big, m, kk, yy, ww))(*batch) for h in (f, g))
    assert_same(bf, bg, rtol)
    pf, pg = (jax.vmap(lambda b, h=h: h(nstop, x, b, mask, k, y, w))(jnp.asarray([1, -(2**40), 2**52], jnp.int64))
              for h in (f, g))
    assert_same(pf, pg, rtol)
    for o_ffi, o_xla in zip((*bf, *pf), (*bg, *pg)):
        if not jnp.issubdtype(o_xla.dtype, jnp.floating):
            np.testing.assert_array_equal(np.asarray(o_xla), np.asarray(o_ffi))
    # the plain plane of ints as a float factor, with "auto"
    y = eagle_jax.function(counts)(jnp.arange(4, dtype=jnp.int32), jnp.ones(4))
    np.testing.assert_array_equal(np.asarray(y), np.arange(4.0))
    assert _jax_lowering.choose(_jax_xla.op_list(counts._core), 4, "cpu") == "xla"


@hawk.kernel
def int_only_lookup(w: Table[Scalar], i: Scalar[hawk.int32], hit: Mutable[Scalar[hawk.bool_]]):
    hit = w.at(i) > 0.5


def test_xla_refuses_int_planes_without_x64_and_failures_it_could_not_show():
    """Without jax_enable_x64 this path's integers are int32: an integer plane, whose integers
    compute in int64, is refused by name and "auto" takes "ffi"; bool planes and the IR's own
    integers are lowered. A kernel that can fail with no float output to hold the NaN is
    refused in either mode."""
    ops = _jax_xla.op_list(countdown._core)
    jax.config.update("jax_enable_x64", False)
    try:
        why = ops.unsupported_for(np.float32)
        assert why == ("the integer plane 'nstop', whose integers compute in int64, which JAX holds only with "
                       "jax_enable_x64 (this path's integers are int32 without it)")
        assert _jax_lowering.choose(ops, N, "cpu", np.float32) == "ffi"
        with pytest.raises(_jax_xla.UnsupportedOp, match=r"kernel 'counts' has the integer plane 'n', whose integers compute in int64"):
            eagle_jax.function(counts, lowering="xla")(jnp.arange(4, dtype=jnp.int32), jnp.ones(4, jnp.float32))
        y = eagle_jax.function(counts)(jnp.arange(4, dtype=jnp.int32), jnp.ones(4, jnp.float32))  # "auto": ffi
        np.testing.assert_array_equal(np.asarray(y), np.arange(4.0))
    finally:
        jax.config.update("jax_enable_x64", True)
    lookup_ops = _jax_xla.op_list(int_only_lookup._core)
    assert lookup_ops.unsupported == ("no float output to show a failing sample as NaN (a Table read, a // or % by a divisor "
                                      "that may be 0, or int(x)), only the integer or bool output 'hit'")
    with pytest.raises(_jax_xla.UnsupportedOp, match="kernel 'int_only_lookup' has no float output to show a failing sample"):
        eagle_jax.function(int_only_lookup, lowering="xla")(jnp.asarray([0.2, 0.9]), jnp.zeros(3, jnp.int32))
    hit = eagle_jax.function(int_only_lookup)(jnp.asarray([0.2, 0.9]), jnp.asarray([1, 0, 1], jnp.int32))
    assert np.asarray(hit).tolist() == [True, False, True]


def test_vector_stores_lower_as_whole_planes_without_concatenate():
    """The xla lowering evaluates a Vector plane's stores lane-wise (_jax_xla._Lanes): one op
    over the (k, N) plane, not k rows stacked at the end (row-by-row concatenation in XLA's CPU
    fusions made a 360-step scan of the drag step 2x slower than jax.numpy); and the numbers
    are those of the FFI path."""
    import jax
    import jax.numpy as jnp

    @hawk.kernel
    def lanes_step(v: Vector[3], w: Vector[3], cd: Param, out: Mutable[Vector[3]], rot: Mutable[Vector[3]]):
        out = v + 0.01 * (vec(0.0, 0.0, -9.81) - cd * norm(v) * v)
        rot = cross(v, w) + 2.0 * w

    f = {low: eagle_jax.function(lanes_step, wrt=("v", "cd"), lowering=low) for low in ("xla", "ffi")}
    v = jax.random.normal(jax.random.key(0), (3, 64))
    w = jax.random.normal(jax.random.key(1), (3, 64))
    hlo = jax.jit(lambda v, w: f["xla"](v, w, 0.1)).lower(v, w).as_text()
    # the `out` plane: no concatenate; `rot` (a cross product, lanes of different components)
    # may stack its permuted rows
    assert hlo.count("concatenate") <= 1, hlo
    for a, b in zip(jax.jit(lambda v, w: f["xla"](v, w, 0.1))(v, w), jax.jit(lambda v, w: f["ffi"](v, w, 0.1))(v, w)):
        np.testing.assert_allclose(np.asarray(a), np.asarray(b), rtol=1e-12, atol=1e-14)
    ref = v + 0.01 * (jnp.array([0.0, 0.0, -9.81])[:, None] - 0.1 * jnp.linalg.norm(v, axis=0) * v)
    np.testing.assert_allclose(np.asarray(f["xla"](v, w, 0.1)[0]), np.asarray(ref), rtol=1e-12)
    np.testing.assert_allclose(np.asarray(f["xla"](v, w, 0.1)[1]), np.asarray(jnp.cross(v.T, w.T).T + 2.0 * w), rtol=1e-12)


def test_xla_jvp_is_the_linearize_split_and_ffi_keeps_the_tangent_kernel():
    """On the xla path a kernel's JVP is the linearize split (cpp/ad/linearize.hpp): the primal
    with residual outputs and a linear kernel reading them, so neither the tangents nor reverse
    mode recompute the primal step; the FFI path keeps the primal call and the tangent kernel.
    Both give jax.numpy's derivatives, in forward and reverse mode, at order 2."""
    import jax

    @hawk.kernel
    def split_step(v: Vector[3], cd: Param, out: Mutable[Vector[3]], speed: Mutable[Scalar]):
        s = norm(v)
        out = v + 0.01 * (vec(0.0, 0.0, -9.81) - cd * s * v)
        speed = s if s > 1.0 else 2.0 * s

    v = jax.random.normal(jax.random.key(3), (3, 16))

    def jnp_step(v, cd):
        s = jnp.linalg.norm(v, axis=0)
        return v + 0.01 * (jnp.array([0.0, 0.0, -9.81])[:, None] - cd * s * v), jnp.where(s > 1.0, s, 2.0 * s)

    names = {}
    for low in ("xla", "ffi"):
        f = eagle_jax.function(split_step, wrt=("v", "cd"), lowering=low)
        jaxpr = str(jax.make_jaxpr(lambda v, cd: jax.jvp(lambda v, cd: f(v, cd), (v, cd), (v, 1.0)))(v, 0.1))
        names[low] = jaxpr
        got = jax.jvp(lambda v, cd: f(v, cd), (v, 0.1), (v, 1.0))
        want = jax.jvp(jnp_step, (v, 0.1), (v, 1.0))
        for a, b in zip(jax.tree.leaves(got), jax.tree.leaves(want)):
            np.testing.assert_allclose(np.asarray(a), np.asarray(b), rtol=1e-12, atol=1e-13)
        check_grads(lambda v, cd: f(v, cd)[0], (v, 0.1), order=2, modes=("fwd", "rev"))
    assert "split_step_jvp_primal" in names["xla"] and "split_step_jvp_linear" in names["xla"], names["xla"]
    assert "split_step_jvp" not in names["ffi"] and "split_step_tangent" in names["ffi"], names["ffi"]


def _reductions_over_stacked_rows(hlo: str) -> tuple[int, int]:
    """(reductions whose operand is made from a concatenate through elementwise ops, all
    reductions) in StableHLO text: XLA's CPU backend emits a reduction's operand once per
    element it reduces, a concatenate's operands once per branch, so reductions of stacked
    rows nested in each other multiply the emitted code by the lane count per level."""
    defs = {}
    for line in hlo.splitlines():
        m = re.match(r"\s*(%[\w#.]+)(?::\d+)? = \"?([\w.]+)", line)
        if m:
            defs[m.group(1)] = (m.group(2), re.findall(r"%[\w#.]+", line.split("=", 1)[1]))
    seen: dict[str, bool] = {}

    def stacked(v: str) -> bool:
        if v not in seen:
            seen[v] = False
            op, args = defs.get(v, ("argument", []))
            seen[v] = op == "stablehlo.concatenate" or (
                op not in ("stablehlo.reduce", "func.call", "argument") and any(stacked(a) for a in args))
        return seen[v]

    reduces = [args for op, args in defs.values() if op == "stablehlo.reduce"]
    return sum(1 for args in reduces if stacked(args[0])), len(reduces)


def test_lane_sums_never_reduce_stacked_rows():
    """A sum over lanes (_jax_xla._Lanes.sum) is one reduction only where its lanes are one array
    op all the way down; lanes made by stacking rows, even ones memoized by an earlier sum, make
    it the chain of adds instead. Before, a 3x3 matrix rebuilt from its eigh lowered to a
    reduction over stacked rows, a 4x4 one to 3 (with an inverse beside it, 9: XLA:CPU took 3.6 s
    to compile that against 1.9 s), and the fuzzer's kernel in the next test to 23 (more than
    8 GB to compile). The numbers are NumPy's."""
    import jax

    from hawk.math import diag, eigh, identity, outer, transpose

    @hawk.kernel
    def rebuilt(x: Scalar, v: Vector[3], y: Mutable[Scalar]):
        a = identity(3) + 0.1 * transpose(tanh(outer(v, v) + x)) @ tanh(outer(v, v) + x)
        w, q = eigh(a)[0], eigh(a)[1]
        y = (q @ diag(w) @ transpose(q))[2, 1]

    rng = np.random.default_rng(3)
    x, v = rng.normal(size=16), rng.normal(size=(3, 16))
    f = eagle_jax.function(rebuilt, lowering="xla")
    stacked, total = _reductions_over_stacked_rows(jax.jit(f).lower(x, v).as_text())
    assert stacked == 0 and total > 0, (stacked, total)
    t = np.tanh(np.einsum("is,js->sij", v, v) + x[:, None, None])
    a = np.eye(3) + 0.1 * np.einsum("sji,sjk->sik", t, t)
    np.testing.assert_allclose(np.asarray(f(x, v)), a[:, 2, 1], rtol=1e-12, atol=1e-13)


def test_the_fuzzers_nested_linear_algebra_kernel_compiles_on_xla(tmp_path):
    """The kernel in tests/found_by_fuzzing/xla_nested_linalg.py, through the "xla" lowering in
    a fresh process whose address space is capped at 8 GiB (XLA crashed compiling it before),
    against the interpreter as the fuzzer compares them."""
    tests = os.path.dirname(os.path.abspath(__file__))
    src = textwrap.dedent(f"""
        import resource, sys
        resource.setrlimit(resource.RLIMIT_AS, (8 << 30, 8 << 30))
        sys.path.insert(0, {tests!r})
        import numpy as np
        import kernelgen
        path = {os.path.join(tests, "found_by_fuzzing", "xla_nested_linalg.py")!r}
        g = kernelgen.GenKernel(seed=30000129, name="fz_30000129", source=open(path).read(), table_size=3, n=1)
        k = g.build()
        st = kernelgen.Stats()
        kernelgen.check_xla(g, k, kernelgen.make_values(k, g.n, g.table_size, np.random.default_rng(g.seed)), st)
        assert not st.mismatches, str(st.mismatches[0])[:2000]
        assert st.xla_compared == 1, st
        print("ok")
    """)
    _run_script(tmp_path / "nested_linalg.py", src)


def test_the_fuzzers_cancelling_cross_product_is_within_the_xla_rule():
    """The kernel in tests/found_by_fuzzing/xla_fma_contraction.py: its branch on an exactly
    cancelling cross product goes the other way where XLA:CPU contracts a product into an FMA
    (docs/jax.md). The interpreter's moved runs with perturb_products reach that branch, so the
    fuzzer's "xla" checks (the forward call, jax.jvp and jax.vjp on both lowerings) allow it
    and still compare the kernel."""
    sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
    import kernelgen

    path = os.path.join(os.path.dirname(os.path.abspath(__file__)), "found_by_fuzzing", "xla_fma_contraction.py")
    g = kernelgen.GenKernel(seed=40000125, name="fz_40000125", source=open(path).read(), table_size=5, n=70)
    k = g.build()
    values = kernelgen.make_values(k, g.n, g.table_size, np.random.default_rng(g.seed))
    plain = kernelgen.interpret(k, g.n, g.table_size, values, zero_finished=True)
    for u in (kernelgen.XLA_ULPS, -kernelgen.XLA_ULPS):
        lib = kernelgen.interpret(k, g.n, g.table_size, values, perturb_ulps=u, zero_finished=True)
        both = kernelgen.interpret(k, g.n, g.table_size, values, perturb_ulps=u, zero_finished=True, perturb_products=True)
        assert np.abs(lib.outs["y0"] - plain.outs["y0"]).max() < 1e-12  # the library's ulps leave it alone
        assert np.count_nonzero(np.abs(both.outs["y0"] - plain.outs["y0"]) > 0.1) >= 30  # the products flip it
    st = kernelgen.check_batch([g], None, compiled=False, checks=("xla", "jax"))
    assert not st.mismatches, str(st.mismatches[0])[:3000]
    assert st.xla_compared == 1 and st.jax_jvp_compared == st.jax_vjp_compared == 2, st.summary()


def test_the_fuzzers_big_tangent_kernel_compiles_on_xla(tmp_path):
    """The kernel in tests/found_by_fuzzing/xla_big_tangent.py (its tangent kernel: 10,116
    values per step): jax.jvp on "xla" in a fresh process whose address space is capped at
    8 GiB (compiling it needed more than 10 GB before such steps were materialized every
    _jax_xla._REGION values), against the interpreter's tangent kernel by the fuzzer's rule."""
    tests = os.path.dirname(os.path.abspath(__file__))
    src = textwrap.dedent(f"""
        import resource, sys
        resource.setrlimit(resource.RLIMIT_AS, (8 << 30, 8 << 30))
        sys.path.insert(0, {tests!r})
        import numpy as np
        import jax
        jax.config.update("jax_enable_x64", True)
        import kernelgen
        from eagle.frameworks import jax as eagle_jax
        path = {os.path.join(tests, "found_by_fuzzing", "xla_big_tangent.py")!r}
        g = kernelgen.GenKernel(seed=40000320, name="fz_40000320", source=open(path).read(), table_size=3, n=1)
        k = g.build()
        rng = np.random.default_rng(g.seed)
        values = kernelgen.make_values(k, g.n, g.table_size, rng)
        wrt = kernelgen.float_inputs(k)
        t = kernelgen.direction(k, values, wrt, rng)
        tk = k.tangent(wrt)
        tn = kernelgen.roles(tk, "t")
        tvals = {{**values, **{{tn[w]: x for w, x in t.items()}}}}
        want = kernelgen.interpret(tk, g.n, g.table_size, tvals, zero_finished=True)
        moved = [kernelgen.interpret(tk, g.n, g.table_size, tvals, perturb_ulps=u, zero_finished=True, perturb_products=True)
                 for u in (kernelgen.XLA_ULPS, -kernelgen.XLA_ULPS)]
        f = eagle_jax.function(k, lowering="xla")
        args = kernelgen._bridge_args(f, k, values)
        tans = kernelgen.bridge_tangents(f, args, t)
        text = jax.jit(lambda a, tt: jax.jvp(f, a, tt)).lower(tuple(args), tuple(tans)).as_text()
        assert text.count("optimization_barrier") >= 5, text.count("optimization_barrier")
        _, tout = jax.jvp(f, tuple(args), tuple(tans))
        compared = 0
        for name, dot in zip(f.outputs, tout):
            if name in tn and k.slot(name).dtype == "float":
                why = kernelgen._outside_moved(name, dot, want.outs[tn[name]], [r.outs[tn[name]] for r in moved],
                                               want.sum_abs.get(tn[name]), g.n)
                assert why is None, why
                compared += 1
        assert compared == 3, compared
        print("ok")
    """)
    _run_script(tmp_path / "big_tangent.py", src)


def test_steps_of_at_most_4000_values_lower_without_barriers():
    """Materializing a step's values (_jax_xla._materialize) starts above _REGIONS_ABOVE
    values: the benchmark kernels' programs, forward and derivatives, have no barrier."""
    import jax

    from eagle.frameworks import _jax_xla

    sys.path.insert(0, os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "benchmarks"))
    from kernels import card_rk4

    assert _jax_xla._REGIONS_ABOVE == 4000
    f = eagle_jax.function(card_rk4, lowering="xla")
    rng = np.random.default_rng(0)
    n = 64
    args = (rng.uniform(1, 10, n), rng.uniform(0.01, 0.2, n), np.full(n, 30.0), 0.01, np.zeros(n, bool),
            rng.uniform(-1, 1, n), rng.uniform(-1, 1, n), np.zeros(n))
    tans = tuple(np.ones_like(a) if np.asarray(a).dtype.kind == "f" else np.zeros(np.shape(a), jax.dtypes.float0)
                 for a in args)
    for text in (jax.jit(f).lower(*args).as_text(),
                 jax.jit(lambda a, t: jax.jvp(f, a, t)).lower(args, tans).as_text()):
        assert "optimization_barrier" not in text


def test_sums_over_a_vectors_components_lower_as_one_reduction():
    """An Add chain over the components of a vector (a dot product, a norm, an adjoint's sum)
    becomes one reduction over the lanes on the xla path (_jax_xla._lane_sums), which XLA
    computes once instead of copying the adds into every fusion that reads them. The numbers
    are the FFI path's within rounding (XLA:CPU may contract a multiply and an add into an FMA,
    with or without the reduction)."""
    import jax

    @hawk.kernel
    def dots(v: Vector[4], w: Vector[4], d: Mutable[Scalar], n: Mutable[Scalar]):
        d = v[0] * w[0] + v[1] * w[1] + v[2] * w[2] + v[3] * w[3]
        n = norm(v)

    ops = call_for(dots, np.float64).ops()
    assert len(ops.lane_sums) >= 2, ops.lane_sums
    f = {low: eagle_jax.function(dots, lowering=low) for low in ("xla", "ffi")}
    v = jax.random.normal(jax.random.key(4), (4, 32))
    w = jax.random.normal(jax.random.key(5), (4, 32))
    assert jax.jit(f["xla"]).lower(v, w).as_text().count("reduce(") >= 2
    for a, b in zip(f["xla"](v, w), f["ffi"](v, w)):
        np.testing.assert_allclose(np.asarray(a), np.asarray(b), rtol=1e-13, atol=1e-15)
    np.testing.assert_allclose(np.asarray(f["xla"](v, w)[0]), np.asarray(jnp.sum(v * w, axis=0)), rtol=1e-13, atol=1e-15)
    np.testing.assert_allclose(np.asarray(f["xla"](v, w)[1]), np.asarray(jnp.linalg.norm(v, axis=0)), rtol=1e-13)
