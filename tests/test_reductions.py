"""Sums over samples inside a kernel: `total = hawk.sum(x, where=c)` into a `Mutable[Param]`
output (docs/language.md "Sums over samples"), against math.fsum and NumPy:

  1. values in float64 (within 1e-12 of math.fsum) and float32, with and without where=, on
     eagle plans, one value per launch bound as a 1-element array;
  2. the same bits whatever the thread count (processes with RAPTOR_NUM_THREADS = 1, 2, 3 and
     a launch split over the pool or run serially) and run to run;
  3. the JAX bridge on both lowerings: a 0-d result, jax.grad (a sum's adjoint is a broadcast)
     and jax.jvp against jax.numpy, check_grads at order 2;
  4. the reference interpreter, NVRTC compilation, and the refusals pinned (a stage
     boundary, also of hawk.max, a second assignment, steps > 1, inside `if`); hawk.mean has
     tests/test_reductions_mean.py, hawk.min / hawk.max tests/test_reductions_minmax.py.
"""

from __future__ import annotations

import math

import numpy as np
import pytest

import hawk
import hawk.math as hm
from hawk import Mutable, Param, Scalar

from conftest import nvrtc_missing, plan_kernels, run_on_host_devices, same_output_over_thread_counts

jax = pytest.importorskip("jax")
import jax.numpy as jnp  # noqa: E402
from jax.test_util import check_grads  # noqa: E402

from eagle.frameworks import jax as eagle_jax  # noqa: E402

jax.config.update("jax_enable_x64", True)


@hawk.kernel
def energy(x: Scalar, k: Param, e: Mutable[Param], npos: Mutable[Param], y: Mutable[Scalar]):
    y = k * x
    e = hawk.sum(0.5 * k * x * x)
    npos = hawk.sum(1.0, where=x > 0.0)


@hawk.kernel
def moments(x: Scalar, a: Param, s1: Mutable[Param], s2: Mutable[Param]):
    s1 = hawk.sum(hm.sin(a * x), where=x < 1.0)
    s2 = hawk.sum(a * x * x * x)


def _terms(x: np.ndarray, k: float) -> np.ndarray:
    return 0.5 * k * x.astype(np.float64) * x.astype(np.float64)


@pytest.mark.parametrize("dtype", [np.float64, np.float32])
@pytest.mark.parametrize("n", [0, 1, 1000, 70_000])
def test_plan_sum_matches_fsum(tmp_path, dtype, n):
    """The sum equals math.fsum of the samples' terms (1e-12 relative in float64; in float32 the
    terms are float products added in double and rounded once), where= counts exactly."""
    plans = plan_kernels([energy], str(tmp_path))
    x = np.random.default_rng(3).standard_normal(n).astype(dtype)
    e = np.full(1, 7.0, dtype)  # overwritten: one value per launch
    npos = np.zeros(1, dtype)
    y = np.zeros(n, dtype)
    plans["energy"].bind(x=x, k=2.0, e=e, npos=npos, y=y).launch()
    if dtype == np.float64:
        want = math.fsum(_terms(x, 2.0))
        assert abs(e[0] - want) <= 1e-12 * max(abs(want), 1e-300)
    else:
        terms = (np.float32(0.5) * np.float32(2.0) * x * x).astype(np.float32)
        want = math.fsum(terms.astype(np.float64))
        assert abs(float(e[0]) - want) <= 1e-6 * max(abs(want), 1e-30) + 1e-30
    assert npos[0] == np.count_nonzero(x > 0)
    np.testing.assert_array_equal(y, (dtype(2.0) * x).astype(dtype))


def _bits(tmp_path, threshold: int) -> list[str]:
    from conftest import plan_kernels as pk

    plans = pk([moments], str(tmp_path))
    out = []
    for n in (5000, 70_000, 300_000):
        x = np.random.default_rng(n).standard_normal(n)
        s1, s2 = np.zeros(1), np.zeros(1)
        b = plans["moments"].bind(x=x, a=1.3, s1=s1, s2=s2)
        b._core.serial_threshold = threshold
        b.launch()
        out += [float(s1[0]).hex(), float(s2[0]).hex()]
    return out


def test_same_bits_serial_split_and_run_to_run(tmp_path):
    """A launch run on the calling thread and one split over the pool give the same bits, and a
    second run the same again."""
    serial = _bits(tmp_path, 1 << 40)
    assert _bits(tmp_path, 64) == serial
    assert _bits(tmp_path, 64) == serial


THREADS_SRC = '''
import sys, numpy as np, hawk, hawk.math as hm, eagle.plan
from hawk import Mutable, Param, Scalar

@hawk.kernel
def moments(x: Scalar, a: Param, s1: Mutable[Param], s2: Mutable[Param]):
    s1 = hawk.sum(hm.sin(a * x), where=x < 1.0)
    s2 = hawk.sum(a * x * x * x)

(plan,) = eagle.plan.auto([moments], targets=("host",), cache_dir=sys.argv[1])
out = []
for n in (5000, 70000, 300000):
    x = np.random.default_rng(n).standard_normal(n)
    s1, s2 = np.zeros(1), np.zeros(1)
    b = plan.bind(x=x, a=1.3, s1=s1, s2=s2)
    b._core.serial_threshold = 64
    b.launch()
    out += [float(s1[0]).hex(), float(s2[0]).hex()]
print(" ".join(out))
'''


def test_same_bits_whatever_the_thread_count(tmp_path):
    """Processes with 1, 2 and 3 threads (RAPTOR_NUM_THREADS) give the same bits, within 1e-12 of
    math.fsum."""
    out = same_output_over_thread_counts(tmp_path, THREADS_SRC)
    got = [float.fromhex(h) for h in out.split()]
    for j, n in enumerate((5000, 70_000, 300_000)):
        x = np.random.default_rng(n).standard_normal(n)
        w1 = math.fsum(np.where(x < 1.0, np.sin(1.3 * x), 0.0))
        w2 = math.fsum(1.3 * x * x * x)
        scale1, scale2 = math.fsum(np.abs(np.sin(1.3 * x))), math.fsum(np.abs(1.3 * x**3))
        assert abs(got[2 * j] - w1) <= 1e-12 * scale1
        assert abs(got[2 * j + 1] - w2) <= 1e-12 * scale2


def _ref(x, a):
    return jnp.sum(jnp.where(x < 1.0, jnp.sin(a * x), 0.0)), jnp.sum(a * x * x * x)


@pytest.mark.parametrize("lowering", ["ffi", "xla"])
@pytest.mark.parametrize("dtype", [np.float64, np.float32])
def test_jax_values_and_derivatives(lowering, dtype):
    """Both lowerings: 0-d results equal to jax.numpy's sums; grad (the adjoint broadcasts the
    output's cotangent to every sample) and jvp against jax.numpy's."""
    f = eagle_jax.function(moments, wrt=("x", "a"), lowering=lowering)
    x = jnp.asarray(np.random.default_rng(4).uniform(-2, 2, 501).astype(dtype))
    a = dtype(0.7)
    s1, s2 = f(x, a)
    assert np.shape(s1) == () and np.shape(s2) == ()
    w1, w2 = _ref(x, a)
    tol = 1e-5 if dtype == np.float32 else 1e-12
    np.testing.assert_allclose(float(s1), float(w1), rtol=tol, atol=tol)
    np.testing.assert_allclose(float(s2), float(w2), rtol=tol, atol=tol)

    def loss(fn):
        return lambda x, a: 3.0 * fn(x, a)[0] - 0.5 * fn(x, a)[1]

    got = jax.grad(loss(f), argnums=(0, 1))(x, a)
    want = jax.grad(loss(_ref), argnums=(0, 1))(x, a)
    for g, w in zip(got, want):
        np.testing.assert_allclose(np.asarray(g), np.asarray(w), rtol=tol * 10, atol=tol * 10)
    tx = jnp.asarray(np.random.default_rng(5).standard_normal(501).astype(dtype))
    _, t = jax.jvp(lambda x, a: f(x, a), (x, a), (tx, dtype(0.3)))
    _, tw = jax.jvp(_ref, (x, a), (tx, dtype(0.3)))
    for g, w in zip(t, tw):
        np.testing.assert_allclose(float(g), float(w), rtol=tol * 10, atol=tol * 10)


@pytest.mark.parametrize("lowering", ["ffi", "xla"])
def test_check_grads_order_2(lowering):
    f = eagle_jax.function(moments, wrt=("x", "a"), lowering=lowering)
    x = jnp.asarray(np.random.default_rng(6).uniform(-2, 2, 33))
    check_grads(lambda x, a: f(x, a)[0] + 0.1 * f(x, a)[1], (x, 0.7), order=2, modes=("fwd", "rev"))


def test_interpreter_sums():
    """The reference interpreter adds the stores of every sample (where= included)."""
    x = np.linspace(-2, 2, 9)
    outs = moments._core.interpret(len(x), {"x": list(x), "a": [0.7]})[0]
    assert abs(outs["s1"][0] - math.fsum(np.where(x < 1.0, np.sin(0.7 * x), 0.0))) < 1e-14
    assert abs(outs["s2"][0] - math.fsum(0.7 * x**3)) < 1e-14


@pytest.mark.skipif(nvrtc_missing(), reason="NVRTC not found")
def test_cuda_compiles():
    """The CUDA emission (per-block partials added in block order, then _finish) compiles."""
    from raptor_core import _core

    for k in (moments, energy, moments.adjoint(["x", "a"]), moments.tangent(["x", "a"])):
        assert _core.nvrtc_check([k._core], "sm_80") == 2


def _refused(src_fn, match: str) -> None:
    with pytest.raises(hawk.KernelError, match=match):
        hawk.kernel(src_fn)._core


def test_refusals():
    def minimum(x: Scalar, m: Mutable[Param]):  # supported now (tests/test_reductions_minmax.py)
        m = hawk.min(x)

    assert "param_sum m width=1 min" in hawk.kernel(minimum).ir

    def max_boundary(x: Scalar, y: Mutable[Scalar]):  # a stage boundary (tests/test_stages.py)
        y = x - hawk.max(x)

    assert len(hawk.kernel(max_boundary).stages) == 2

    def bare(x: Scalar, y: Mutable[Scalar]):  # a reading of it is a stage boundary (tests/test_stages.py)
        f = hawk.sum
        y = x

    _refused(bare, r"hawk\.sum\(\) is a reduction over the samples of the launch: assign it directly to a Mutable\[Param\] output")

    def reads_early(x: Scalar, t: Mutable[Param], y: Mutable[Scalar]):
        y = x - t
        t = hawk.sum(x)

    _refused(reads_early, r"'t' is a Mutable\[Param\] sum output read before it is assigned")

    def twice(x: Scalar, t: Mutable[Param]):
        t = hawk.sum(x)
        t = hawk.sum(2.0 * x)

    _refused(twice, r"'t' is assigned a sum twice")

    def to_local(x: Scalar, y: Mutable[Scalar]):
        s = hawk.sum(x)
        y = x

    _refused(to_local, r"hawk\.sum\(\) is a sum over the samples of the launch: assign it to a kernel parameter declared Mutable\[Param\]")

    def in_if(x: Scalar, t: Mutable[Param], y: Mutable[Scalar]):
        y = x
        if x > 0.0:
            t = hawk.sum(x)

    _refused(in_if, r"inside `if`, `for` or a helper is not supported; .* where=")

    def stepped(x: Scalar, t: Mutable[Param]):
        t = hawk.sum(x)

    with pytest.raises(hawk.KernelError, match=r"a Mutable\[Param\] sum output in a kernel of steps=3 is not supported"):
        hawk.kernel(steps=3)(stepped)._core

    with pytest.raises(TypeError, match="hawk.sum can only be used inside a @hawk.kernel body"):
        hawk.sum(np.ones(3))


SHARD_SRC = '''
import math, jax, jax.numpy as jnp, numpy as np
from jax.sharding import Mesh, NamedSharding, PartitionSpec as P
import hawk, hawk.math as hm
from hawk import Mutable, Param, Scalar
from eagle.frameworks import jax as eagle_jax

@hawk.kernel
def moments(x: Scalar, a: Param, s1: Mutable[Param], s2: Mutable[Param]):
    s1 = hawk.sum(hm.sin(a * x), where=x < 1.0)
    s2 = hawk.sum(a * x * x * x)

assert len(jax.devices()) == 4
x = jnp.asarray(np.random.default_rng(0).standard_normal(4096))
w1 = math.fsum(np.where(np.asarray(x) < 1.0, np.sin(0.7 * np.asarray(x)), 0.0))
mesh = Mesh(np.array(jax.devices()), ("s",))
sh = NamedSharding(mesh, P("s"))
for lowering in ("ffi", "xla"):
    f = eagle_jax.function(moments, wrt=("x", "a"), lowering=lowering)
    whole = f(x, 0.7)
    g = jax.jit(lambda x, a: f(x, a), in_shardings=(sh, None))
    part = g(jax.device_put(x, sh), 0.7)
    for u, v in zip(whole, part):
        assert np.shape(v) == ()
        assert abs(float(u) - float(v)) <= 1e-12 * 4096, (lowering, float(u), float(v))
    assert abs(float(part[0]) - w1) <= 1e-12 * 4096
    gx = jax.jit(jax.grad(lambda x, a: f(x, a)[0]), in_shardings=(sh, None))(jax.device_put(x, sh), 0.7)
    want = np.where(np.asarray(x) < 1.0, 0.7 * np.cos(0.7 * np.asarray(x)), 0.0)
    np.testing.assert_allclose(np.asarray(gx), want, rtol=1e-13, atol=1e-15)
print("ok")
'''


def test_sharded_sum_is_the_whole_sum(tmp_path):
    """Under jit with the plane sharded over 4 host devices, both lowerings give the whole call's
    sums (each shard's partial psum'ed on the "ffi" path) and the broadcast adjoint per shard."""
    run_on_host_devices(tmp_path, SHARD_SRC)
