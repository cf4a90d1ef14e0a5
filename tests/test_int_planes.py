"""Integer and bool planes (docs/language.md "Integer and bool planes"): Scalar[hawk.int32],
Scalar[hawk.int64], Scalar[hawk.bool_], Vector[k, hawk.int32] and Param[hawk.int32] as inputs,
Mutable and in-out planes, in float32 and float64 builds, against NumPy; the error codes of a
zero divisor and of int(NaN); the refusals; the JAX bridge (jit, vmap, float0 tangents, grads
of the float part); and the CUDA emission (NVRTC).
"""

from __future__ import annotations

import jax
import jax.numpy as jnp
import numpy as np
import pytest
from jax.test_util import check_grads

import hawk
from eagle.errors import ModeError
from eagle.frameworks import jax as ejax
from hawk import Mutable, Param, Scalar, Table, Vector
from raptor_core import _core

from conftest import DTYPES, plan_kernels
from conftest import nvrtc_missing  # noqa: E402

jax.config.update("jax_enable_x64", True)

N = 257
RNG = np.random.default_rng(11)


@hawk.kernel(steps=5)
def counter(x: Scalar, thr: Param, n: Mutable[Scalar[hawk.int32]], y: Mutable[Scalar]):
    y = y * 0.5 + x
    n = n + 1 if y > thr else n


@hawk.kernel
def int_ops(a: Scalar[hawk.int64], b: Scalar[hawk.int64], k: Param[hawk.int32], x: Scalar,
            q: Mutable[Scalar[hawk.int64]], r: Mutable[Scalar[hawk.int64]], s: Mutable[Scalar[hawk.int64]],
            t: Mutable[Scalar[hawk.int64]], f: Mutable[Scalar], ge: Mutable[Scalar[hawk.bool_]]):
    q = a // b if b != 0 else 0
    r = a % b if b != 0 else 0
    s = (a - b) * k + abs(a) - max(a, b) + a ** 3
    t = int(x * 10.0)
    f = float(a) * x + a / 4
    ge = a >= b and not (a == k)


@hawk.kernel
def lookup_int(w: Table[Scalar], i: Scalar[hawk.int32], x: Scalar, y: Mutable[Scalar]):
    y = w.at(i) * x + w.at(i + 1)


@hawk.kernel
def ivec(v: Vector[3, hawk.int32], on: Scalar[hawk.bool_], s: Mutable[Scalar[hawk.int64]],
         w: Mutable[Vector[3, hawk.int32]], z: Mutable[Scalar]):
    s = v[0] + v[1] * v[2] if on else -v[0]
    w = v * 2 - 1
    z = float(v[2]) * 0.5


@hawk.kernel
def wrap32(a: Scalar[hawk.int32], b: Scalar[hawk.int32], p: Mutable[Scalar[hawk.int32]]):
    p = a * b + 7


@hawk.kernel
def divides(a: Scalar[hawk.int64], b: Scalar[hawk.int64], q: Mutable[Scalar[hawk.int64]]):
    q = a // b


@hawk.kernel
def truncates(x: Scalar, t: Mutable[Scalar[hawk.int64]]):
    t = int(x)


@hawk.kernel
def int_and_back(x: Scalar, y: Mutable[Scalar], z: Mutable[Scalar]):
    y = float(int(x))
    z = float(int(x)) * -2.0


def _bind(plans, name, **values):
    b = plans[name].bind(**values)
    b.launch()
    return b


@pytest.fixture(scope="module")
def plans(module_cache_dir):
    return plan_kernels([counter, int_ops, lookup_int, ivec, wrap32, divides, truncates, int_and_back], module_cache_dir)


@pytest.mark.parametrize("dtype", DTYPES)
def test_counter_in_out_over_steps(plans, dtype):
    x = RNG.uniform(-1, 2, N).astype(dtype)
    n = RNG.integers(-5, 5, N).astype(np.int32)
    y = RNG.uniform(-1, 1, N).astype(dtype)
    n0, y0 = n.copy(), y.copy()
    for _ in range(2):  # two launches, 5 steps each
        _bind(plans, "counter", x=x, thr=0.9, n=n, y=y)
    yr, nr = y0.astype(np.float64), n0.astype(np.int64)
    for _ in range(10):
        yr = (yr * 0.5 + x).astype(dtype).astype(np.float64)
        nr = np.where(yr > 0.9, nr + 1, nr)
    assert n.dtype == np.int32
    np.testing.assert_array_equal(n, nr.astype(np.int32))
    np.testing.assert_allclose(y, yr, rtol=1e-6 if dtype == np.float32 else 1e-15)


@pytest.mark.parametrize("dtype", DTYPES)
def test_float_of_int_is_never_minus_zero(plans, dtype):
    """float(int(x)) of x in (-1, 0] is +0.0, as in Python, NumPy and the interpreter (and so
    float(int(x)) * -2.0 is -0.0): GCC folds (double)(int64_t)x into trunc(x) under
    -fno-trapping-math where the ISA rounds (SSE4.1 up: every x86-64-v2 machine), which gave
    -0.0; the fuzzer's stepping loop check found the compiled step and its fused pass
    disagreeing on that sign (the interpreter gives +0.0)."""
    x = np.concatenate([-RNG.uniform(0.0, 1.0, N - 4), [-0.0, 0.0, -0.9999, 2.5]]).astype(dtype)
    y, z = np.full(N, np.nan, dtype), np.full(N, np.nan, dtype)
    _bind(plans, "int_and_back", x=x, y=y, z=z)
    want = np.trunc(x.astype(np.float64)).astype(np.int64).astype(dtype)
    np.testing.assert_array_equal(y, want)
    assert not np.signbit(y[:-1]).any() and np.signbit(z[:-1]).all()


@pytest.mark.parametrize("dtype", DTYPES)
def test_int_arithmetic_is_pythons(plans, dtype):
    a = RNG.integers(-1000, 1000, N).astype(np.int64)
    b = RNG.integers(-9, 9, N).astype(np.int64)
    a[:4] = [-7, 7, -7, 7]
    b[:4] = [2, -2, -2, 2]
    x = RNG.uniform(-3, 3, N).astype(dtype)
    out = {k: np.zeros(N, np.int64) for k in ("q", "r", "s", "t")}
    f = np.zeros(N, dtype)
    ge = np.zeros(N, np.bool_)
    _bind(plans, "int_ops", a=a, b=b, k=np.int32(3), x=x, f=f, ge=ge, **out)
    safe = np.where(b != 0, b, 1)
    # Python's own // and % on a few, NumPy's (the same floor semantics) on all
    assert [int(v) for v in out["q"][:4]] == [-7 // 2, 7 // -2, -7 // -2, 7 // 2]
    assert [int(v) for v in out["r"][:4]] == [-7 % 2, 7 % -2, -7 % -2, 7 % 2]
    np.testing.assert_array_equal(out["q"], np.where(b != 0, a // safe, 0))
    np.testing.assert_array_equal(out["r"], np.where(b != 0, a % safe, 0))
    np.testing.assert_array_equal(out["s"], (a - b) * 3 + np.abs(a) - np.maximum(a, b) + a**3)
    np.testing.assert_array_equal(out["t"], np.trunc(x * dtype(10.0)).astype(np.int64))
    want_f = a.astype(dtype) * x + (a / 4).astype(dtype)
    np.testing.assert_allclose(f, want_f, rtol=1e-6 if dtype == np.float32 else 1e-15)
    np.testing.assert_array_equal(ge, (a >= b) & ~(a == 3))


@pytest.mark.parametrize("dtype", DTYPES)
def test_int_table_index_and_its_range_error(plans, dtype):
    w = RNG.uniform(-1, 1, 10).astype(dtype)
    i = RNG.integers(0, 9, N).astype(np.int32)
    x = RNG.uniform(-1, 1, N).astype(dtype)
    y = np.zeros(N, dtype)
    _bind(plans, "lookup_int", w=w, i=i, x=x, y=y)
    np.testing.assert_allclose(y, w[i] * x + w[i + 1], rtol=1e-6 if dtype == np.float32 else 1e-15)
    i[5] = 9  # i + 1 == 10 is out of range
    with pytest.raises(RuntimeError, match=r"kernel 'lookup_int'.*table 'w' index 10.*sample 5"):
        _bind(plans, "lookup_int", w=w, i=i, x=x, y=y)


@pytest.mark.parametrize("dtype", DTYPES)
def test_int_vectors_and_bool_planes(plans, dtype):
    v = RNG.integers(-50, 50, (3, N)).astype(np.int32)
    on = RNG.integers(0, 2, N).astype(np.bool_)
    s = np.zeros(N, np.int64)
    w = np.zeros((3, N), np.int32)
    z = np.zeros(N, dtype)
    _bind(plans, "ivec", v=v, on=on, s=s, w=w, z=z)
    v64 = v.astype(np.int64)
    np.testing.assert_array_equal(s, np.where(on, v64[0] + v64[1] * v64[2], -v64[0]))
    np.testing.assert_array_equal(w, v * 2 - 1)
    np.testing.assert_array_equal(z, v[2].astype(dtype) * dtype(0.5))


def test_int32_overflow_wraps_as_numpy(plans):
    a = np.array([2**30, -(2**31), 46341, 3], np.int32)
    b = np.array([4, -1, 46341, -5], np.int32)
    p = np.zeros(4, np.int32)  # no float plane: the float64 build
    _bind(plans, "wrap32", a=a, b=b, p=p)
    want = ((a.astype(np.int64) * b.astype(np.int64) + 7) % 2**32).astype(np.uint32).view(np.int32)
    np.testing.assert_array_equal(p, want)


def test_division_by_zero_is_an_error_naming_kernel_and_line(plans):
    a = np.array([7, 8, 9], np.int64)
    b = np.array([2, 0, 3], np.int64)
    q = np.zeros(3, np.int64)
    with open(divides.file) as fh:
        line = 1 + fh.read().split("\n").index("    q = a // b")
    with pytest.raises(RuntimeError, match=rf"kernel 'divides': integer division or modulo by zero at line {line}, sample 1"):
        _bind(plans, "divides", a=a, b=b, q=q)


def test_int_of_nan_is_an_error(plans):
    x = np.array([1.5, -2.7, np.nan])
    t = np.zeros(3, np.int64)
    with pytest.raises(RuntimeError, match=r"kernel 'truncates': int\(\) of NaN.*sample 2"):
        _bind(plans, "truncates", x=x, t=t)
    x[2] = -1e3
    _bind(plans, "truncates", x=x, t=t)
    np.testing.assert_array_equal(t, [1, -2, -1000])


# ------------------------------------------------------------------------------- refusals


def test_int_assigned_to_a_float_plane_is_refused():
    with pytest.raises(hawk.KernelError, match=r"kernel 'bad' \(.*test_int_planes.py:\d+:\d+\): 'y' is a float Mutable\[Scalar\].*write float"):
        @hawk.kernel
        def bad(i: Scalar[hawk.int32], y: Mutable[Scalar]):
            y = i * 2


def test_float_assigned_to_an_int_plane_is_refused():
    with pytest.raises(hawk.KernelError, match=r"'n' is an integer Mutable\[Scalar\[hawk.int32\]\].*int\(x\)"):
        @hawk.kernel
        def bad2(x: Scalar, n: Mutable[Scalar[hawk.int32]]):
            n = x * 2.0


def test_int_table_is_refused():
    with pytest.raises(hawk.KernelError, match=r"Table\[\.\.\.\] holds floats"):
        @hawk.kernel
        def bad3(w: Table[Scalar[hawk.int32]], x: Scalar, y: Mutable[Scalar]):
            y = x


def test_array_dtypes_are_checked_with_the_fix(plans):
    x = np.zeros(N)
    thr = 0.5
    n = np.zeros(N, np.int32)
    y = np.zeros(N)
    with pytest.raises(ModeError, match=r"kernel 'counter'.*plane 'n' is declared Mutable\[Scalar\[hawk.int32\]\] and takes int32 arrays, got float64; pass n.astype\(np.int32\)"):
        plans["counter"].bind(x=x, thr=thr, n=n.astype(np.float64), y=y)
    with pytest.raises(ModeError, match=r"plane 'n' is declared .* takes int32 arrays, got int64"):
        plans["counter"].bind(x=x, thr=thr, n=n.astype(np.int64), y=y)
    with pytest.raises(ModeError, match=r"plane 'x' is int64, which is not supported; a kernel runs float32 or float64 planes"):
        plans["counter"].bind(x=x.astype(np.int64), thr=thr, n=n, y=y)
    with pytest.raises(TypeError, match=r"Param 'k' is an integer Param\[hawk.int32\] and takes an int"):
        plans["int_ops"].bind(a=np.zeros(N, np.int64), b=np.zeros(N, np.int64), k=1.5, x=x, q=np.zeros(N, np.int64),
                              r=np.zeros(N, np.int64), s=np.zeros(N, np.int64), t=np.zeros(N, np.int64), f=y, ge=np.zeros(N, bool))


def test_derivatives_refuse_int_planes_and_keep_them_as_inputs():
    with pytest.raises(ValueError, match=r"kernel 'counter'.*'n' is an integer plane, which carries no derivative"):
        counter.tangent(["n"])
    t = counter.tangent(["x", "y"])
    names = [s.name for s in t.slots]
    assert "n" in names and "n_dot" not in names
    a = counter.adjoint(["x", "y"])
    assert [s.dtype for s in a.slots if s.name == "n"] == ["int32"]
    assert "n_bar" not in [s.name for s in a.slots]


# ------------------------------------------------------------------------------- JAX


@hawk.kernel
def mixed(x: Scalar, k: Scalar[hawk.int32], p: Param, y: Mutable[Scalar], m: Mutable[Scalar[hawk.int32]]):
    y = p * x * float(k) + x * x * (2.0 if k > 0 else 1.0)
    m = k * 2 + int(x * 3.0)


def _mixed_ref(x, k, p):
    y = p * x * k.astype(x.dtype) + x * x * jnp.where(k > 0, 2.0, 1.0).astype(x.dtype)
    m = k * 2 + jnp.trunc(x * 3.0).astype(jnp.int32)
    return y, m


def _assert_mixed_y(y, x, k, p, dtype):
    """y against _mixed_ref within a few ulps of its terms' magnitudes: the sum of two
    products cancels, and XLA may contract or reorder it (the "xla" path)."""
    yr, _ = _mixed_ref(x, k, dtype(p))
    terms = np.abs(p * np.asarray(x, np.float64) * np.asarray(k)) + 2.0 * np.asarray(x, np.float64) ** 2
    err = np.abs(np.asarray(y, np.float64) - np.asarray(yr, np.float64))
    assert (err <= 4 * np.finfo(dtype).eps * terms).all(), (err / terms).max()


@pytest.mark.parametrize("lowering", ["ffi", "xla"])
@pytest.mark.parametrize("dtype", DTYPES)
def test_jax_jit_vmap_and_dtypes(dtype, lowering):
    f = ejax.function(mixed, lowering=lowering)
    x = jnp.asarray(RNG.uniform(-2, 2, N), dtype)
    k = jnp.asarray(RNG.integers(-3, 4, N), jnp.int32)
    y, m = jax.jit(f)(x=x, k=k, p=1.5)
    yr, mr = _mixed_ref(x, k, dtype(1.5))
    assert y.dtype == dtype and m.dtype == jnp.int32
    _assert_mixed_y(y, x, k, 1.5, dtype)
    np.testing.assert_array_equal(m, mr)
    xb = jnp.stack([x, 2 * x, -x])
    kb = jnp.stack([k, k + 1, -k])
    yb, mb = jax.vmap(lambda a, b: f(x=a, k=b, p=1.5))(xb, kb)
    for j in range(3):
        _, mr = _mixed_ref(xb[j], kb[j], dtype(1.5))
        _assert_mixed_y(yb[j], xb[j], kb[j], 1.5, dtype)
        np.testing.assert_array_equal(mb[j], mr)


@pytest.mark.parametrize("lowering", ["ffi", "xla"])
def test_jax_float0_tangents_and_grads_of_the_float_part(lowering):
    f = ejax.function(mixed, lowering=lowering)
    x = jnp.asarray(RNG.uniform(-2, 2, 33))
    k = jnp.asarray(RNG.integers(-3, 4, 33), jnp.int32)
    k_dot = np.zeros(k.shape, jax.dtypes.float0)
    (y, m), (y_dot, m_dot) = jax.jvp(lambda a, b: f(x=a, k=b, p=0.7), (x, k), (jnp.ones_like(x), k_dot))
    assert m_dot.dtype == jax.dtypes.float0
    np.testing.assert_allclose(y_dot, 0.7 * k + 2 * x * jnp.where(k > 0, 2.0, 1.0), rtol=1e-14)
    gx, gk, gp = jax.grad(lambda a, b, p: jnp.sum(f(x=a, k=b, p=p)[0]), argnums=(0, 1, 2), allow_int=True)(x, k, 0.7)
    assert gk.dtype == jax.dtypes.float0
    rx, rp = jax.grad(lambda a, p: jnp.sum(_mixed_ref(a, k, p)[0]), argnums=(0, 1))(x, 0.7)
    np.testing.assert_allclose(gx, rx, rtol=1e-14)
    np.testing.assert_allclose(gp, rp, rtol=1e-14)
    check_grads(lambda a, p: f(x=a, k=k, p=p)[0], (x, 0.7), order=2, modes=("fwd", "rev"))


@hawk.kernel(steps=4)
def climb(x: Scalar, thr: Param, n: Mutable[Scalar[hawk.int32]], y: Mutable[Scalar]):
    y = y * 0.5 + x * float(n)
    n = n + 1 if y > thr else n - 1


def _climb_ref(x, thr, n, y):
    for _ in range(4):
        y = y * 0.5 + x * n.astype(x.dtype)
        n = jnp.where(y > thr, n + 1, n - 1)
    return n, y


@pytest.mark.parametrize("lowering", ["ffi", "xla"])
def test_jax_grads_through_a_stepped_int_counter(lowering):
    f = ejax.function(climb, lowering=lowering)
    rng = np.random.default_rng(0)  # its own draws; every |y - thr| > 0.01: no FD step crosses thr
    x = jnp.asarray(rng.uniform(-1, 1, 41))
    y0 = jnp.asarray(rng.uniform(-1, 1, 41))
    n0 = jnp.asarray(rng.integers(-3, 3, 41), jnp.int32)
    n, y = jax.jit(f)(x=x, thr=0.2, n=n0, y=y0)
    nr, yr = _climb_ref(x, 0.2, n0, y0)
    np.testing.assert_array_equal(n, nr)
    np.testing.assert_allclose(y, yr, rtol=1e-14)
    g = jax.grad(lambda a, b: jnp.sum(f(x=a, thr=0.2, n=n0, y=b)[1] ** 2), argnums=(0, 1))(x, y0)
    r = jax.grad(lambda a, b: jnp.sum(_climb_ref(a, 0.2, n0, b)[1] ** 2), argnums=(0, 1))(x, y0)
    np.testing.assert_allclose(g[0], r[0], rtol=1e-13)
    np.testing.assert_allclose(g[1], r[1], rtol=1e-13)
    check_grads(lambda a, b: f(x=a, thr=0.2, n=n0, y=b)[1], (x, y0), order=2, modes=("fwd", "rev"))


def test_eagle_reverse_sweep_keeps_int_planes_as_primal_inputs(module_cache_dir):
    import eagle

    (plan,) = eagle.plan.auto([climb], targets=("host",), cache_dir=module_cache_dir)
    rng = np.random.default_rng(0)
    x, y0 = rng.uniform(-1, 1, 41), rng.uniform(-1, 1, 41)
    n0 = rng.integers(-3, 3, 41).astype(np.int32)
    y, n = y0.copy(), n0.copy()
    g = eagle.Graph().add(plan.bind(x=x, thr=0.2, n=n, y=y), name="c").build(record=True)
    g.launch(3)
    seed = rng.uniform(0.5, 1.5, 41)
    grads = eagle.diff.reverse(g.record, {"c.y": seed})

    def final_y(a, b):
        m = jnp.asarray(n0)
        for _ in range(3):
            m, b = _climb_ref(a, 0.2, m, b)
        return m, b

    m, yf = final_y(jnp.asarray(x), jnp.asarray(y0))
    np.testing.assert_array_equal(n, m)
    np.testing.assert_allclose(y, yf, rtol=1e-13)
    gx, gy = jax.grad(lambda a, b: jnp.sum(seed * final_y(a, b)[1]), argnums=(0, 1))(jnp.asarray(x), jnp.asarray(y0))
    assert "n" not in grads
    np.testing.assert_allclose(grads["x"], gx, rtol=1e-12)
    np.testing.assert_allclose(grads["y"], gy, rtol=1e-12)


@pytest.mark.parametrize("lowering", ["ffi", "xla"])
def test_jax_int_vectors_and_bool_planes_under_jit(lowering):
    f = jax.jit(ejax.function(ivec, lowering=lowering))
    v = jnp.asarray(RNG.integers(-50, 50, (3, N)), jnp.int32)
    on = jnp.asarray(RNG.integers(0, 2, N), jnp.bool_)
    s, w, z = f(v=v, on=on)
    assert (s.dtype, w.dtype, z.dtype) == (jnp.int64, jnp.int32, jnp.float64)
    v64 = np.asarray(v, np.int64)
    np.testing.assert_array_equal(s, np.where(on, v64[0] + v64[1] * v64[2], -v64[0]))
    np.testing.assert_array_equal(w, np.asarray(v) * 2 - 1)
    np.testing.assert_array_equal(z, np.asarray(v[2], np.float64) * 0.5)


@pytest.mark.parametrize("lowering", ["ffi", "xla"])
def test_jax_int_params_are_read_in_their_dtype(lowering):
    f = jax.jit(ejax.function(int_ops, lowering=lowering))
    a = jnp.asarray(RNG.integers(-1000, 1000, 64), jnp.int64)
    b = jnp.asarray(RNG.integers(1, 9, 64), jnp.int64)
    x = jnp.asarray(RNG.uniform(-3, 3, 64))
    for k in (3, -(2**31), jnp.int32(7)):
        q, r, s, t, fo, ge = f(a=a, b=b, k=k, x=x)
        kk = np.int64(k)
        a64, b64 = np.asarray(a), np.asarray(b)
        np.testing.assert_array_equal(q, a64 // b64)
        np.testing.assert_array_equal(s, (a64 - b64) * kk + np.abs(a64) - np.maximum(a64, b64) + a64**3)
        np.testing.assert_array_equal(ge, (a64 >= b64) & ~(a64 == kk))
    with pytest.raises(TypeError, match=r"Param 'k' is a Param\[hawk.int32\]; pass an int, got 1.5"):
        ejax.function(int_ops, lowering=lowering)(a=a, b=b, k=1.5, x=x)
    with pytest.raises(ModeError, match=r"Param 'k' is declared Param\[hawk.int32\] and takes int32, got float64"):
        f(a=a, b=b, k=1.5, x=x)  # under jit a Python float is a traced float64


@hawk.kernel
def shifted(w: Scalar[hawk.int64], big: Param[hawk.int64], o: Mutable[Scalar[hawk.int64]], f: Mutable[Scalar]):
    o = w + big
    f = float(big)


def test_jax_int64_params_beyond_2_53_are_exact_on_xla_and_refused_on_ffi():
    """The FFI path passes a Param through the launch's double cell: an int64 Param beyond
    +-2**53 is an error naming the kernel and the Param (eagle's bind refuses it too), never
    a rounded int, under jit as eagerly; the "xla" path holds it as the int64 it is."""
    w = jnp.asarray([0, -5, 2**60], jnp.int64)
    for big in (2**53, -(2**53), 2**53 + 1, 2**62 + 12345, -(2**63)):
        want = (np.asarray(w) + np.int64(big)).tolist()
        o, f = jax.jit(ejax.function(shifted, lowering="xla"))(w, big)
        assert np.asarray(o).tolist() == want and float(f[0]) == float(big)
        if abs(big) <= 2**53:
            o, f = jax.jit(ejax.function(shifted, lowering="ffi"))(w, big)
            assert np.asarray(o).tolist() == want
            continue
        with pytest.raises(Exception, match=rf"raptor kernel 'shifted': Param 'big' = {big} does not fit a Param\[hawk.int64\] "
                                            r"\(range \[-9007199254740992, 9007199254740992\], exact in the launch's double "
                                            r"parameter cell\); pass an int in that range, or the value as a Scalar\[hawk.int64\] plane"):
            jax.block_until_ready(jax.jit(ejax.function(shifted, lowering="ffi"))(w, big))


def test_jax_refuses_wrong_int_dtypes():
    f = ejax.function(mixed)
    x = jnp.zeros(8)
    with pytest.raises(ModeError, match=r"mixed: plane 'k' is declared Scalar\[hawk.int32\] and takes int32, got float64; pass k.astype"):
        f(x=x, k=jnp.zeros(8), p=1.0)
    with pytest.raises(ModeError, match=r"plane 'x' is int32, which is not supported; a kernel runs float32 or float64 planes"):
        f(x=jnp.zeros(8, jnp.int32), k=jnp.zeros(8, jnp.int32), p=1.0)


# ------------------------------------------------------------------------------- CUDA


class _FakeDevice:
    """GPU memory as CuPy shows it (``__cuda_array_interface__``, never dereferenced here)."""

    _next = 1 << 24

    def __init__(self, shape, dtype):
        self.shape, self.dtype = tuple(shape), np.dtype(dtype)
        ptr, _FakeDevice._next = _FakeDevice._next, _FakeDevice._next + (1 << 16)
        self.__cuda_array_interface__ = {"shape": self.shape, "typestr": self.dtype.str, "data": (ptr, False), "strides": None, "version": 3}


def test_cuda_binding_checks_int_planes_without_a_gpu():
    import eagle.cuda

    x, y = _FakeDevice((16,), np.float32), _FakeDevice((16,), np.float32)
    n = _FakeDevice((16,), np.int32)
    lay = eagle.cuda.layout(counter, dict(x=x, thr=0.5, n=n, y=y))
    names = [s.name for s in counter.slots]
    assert lay.dtype == np.float32 and lay.n == 16
    assert lay.ins[names.index("n")] == lay.outs[names.index("n")] == n.__cuda_array_interface__["data"][0]
    with pytest.raises(ModeError, match=r"plane 'n' is declared Mutable\[Scalar\[hawk.int32\]\] and takes int32 arrays, got float32"):
        eagle.cuda.layout(counter, dict(x=x, thr=0.5, n=_FakeDevice((16,), np.float32), y=y))
    lay = eagle.cuda.layout(int_ops, dict(a=_FakeDevice((16,), np.int64), b=_FakeDevice((16,), np.int64), k=7, x=x,
                                          q=_FakeDevice((16,), np.int64), r=_FakeDevice((16,), np.int64),
                                          s=_FakeDevice((16,), np.int64), t=_FakeDevice((16,), np.int64), f=y,
                                          ge=_FakeDevice((16,), np.bool_)))
    assert lay.params[[s.name for s in int_ops.slots].index("k")] == 7.0




@pytest.mark.skipif(nvrtc_missing(), reason="NVRTC not found")
@pytest.mark.parametrize("case", ["counter", "int_ops", "ivec", "counter_adjoint", "mixed_tangent"])
def test_cuda_emission_compiles(case):
    kernel = {
        "counter": lambda: counter,
        "int_ops": lambda: int_ops,
        "ivec": lambda: ivec,
        "counter_adjoint": lambda: counter.adjoint(["x", "y"]),
        "mixed_tangent": lambda: mixed.tangent(["x", "p"]),
    }[case]()
    assert _core.nvrtc_check([kernel._core], "sm_80") == 2
