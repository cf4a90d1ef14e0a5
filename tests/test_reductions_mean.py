"""hawk.mean(x) into a `Mutable[Param]` output (docs/language.md "Sums over samples"): the mean
over every sample of the launch, lowered as the sum of x / n_samples(), against math.fsum / n
and jax.numpy:

  1. values in float64 (within 1e-12 of math.fsum / n) and float32 on eagle plans, 0 for a
     launch of no samples;
  2. the same bits whatever the thread count and serial or split;
  3. the JAX bridge on both lowerings: a 0-d result, grad (the adjoint is the output's
     cotangent / n on every sample) and jvp against jnp.mean, check_grads at order 2, and a
     sharded call equal to the whole call's mean (n_samples() is the whole launch's count);
  4. the reference interpreter, NVRTC, and the refusals pinned (a Terminated kernel; where=:
     tests/test_reductions_mean_where.py;
     hawk.min / hawk.max are supported: tests/test_reductions_minmax.py).
"""

from __future__ import annotations

import math

import numpy as np
import pytest

import hawk
import hawk.math as hm
from hawk import Mutable, Param, Scalar, Terminated, Vector

from conftest import nvrtc_missing, plan_kernels, run_on_host_devices, same_output_over_thread_counts

jax = pytest.importorskip("jax")
import jax.numpy as jnp  # noqa: E402
from jax.test_util import check_grads  # noqa: E402

from eagle.frameworks import jax as eagle_jax  # noqa: E402

jax.config.update("jax_enable_x64", True)

MEAN_SRC = '''
@hawk.kernel
def centre(x: Scalar, a: Param, m: Mutable[Param], s: Mutable[Param], y: Mutable[Scalar]):
    y = a * x
    m = hawk.mean(a * x * x + hm.sin(x))
    s = hawk.sum(x, where=x > 0.0)
'''
exec(MEAN_SRC)  # noqa: S102 - the same source the thread-count processes compile
centre = globals()["centre"]


def _terms(x: np.ndarray, a: float) -> np.ndarray:
    x = x.astype(np.float64)
    return a * x * x + np.sin(x)


@pytest.mark.parametrize("dtype", [np.float64, np.float32])
@pytest.mark.parametrize("n", [0, 1, 1000, 70_000])
def test_plan_mean_matches_fsum(tmp_path, dtype, n):
    """The mean equals math.fsum(terms) / n (1e-12 of the terms' mean magnitude in float64,
    1e-6 in float32); a launch of no samples gives 0; the sum beside it is unchanged."""
    plans = plan_kernels([centre], str(tmp_path))
    x = np.random.default_rng(7).standard_normal(n).astype(dtype)
    m = np.full(1, 7.0, dtype)  # overwritten: one value per launch
    s = np.full(1, 7.0, dtype)
    y = np.zeros(n, dtype)
    plans["centre"].bind(x=x, a=1.5, m=m, s=s, y=y).launch()
    if n == 0:
        assert m[0] == 0.0 and s[0] == 0.0
        return
    terms = _terms(x, 1.5)
    want = math.fsum(terms) / n
    scale = math.fsum(np.abs(terms)) / n
    tol = 1e-12 if dtype == np.float64 else 1e-6
    assert abs(float(m[0]) - want) <= tol * scale
    assert abs(float(s[0]) - math.fsum(np.where(x > 0, x, 0).astype(np.float64))) <= tol * math.fsum(np.abs(x.astype(np.float64)))
    np.testing.assert_array_equal(y, (dtype(1.5) * x).astype(dtype))


THREADS_SRC = '''
import sys, numpy as np, hawk, hawk.math as hm, eagle.plan
from hawk import Mutable, Param, Scalar
''' + MEAN_SRC + '''
(plan,) = eagle.plan.auto([centre], targets=("host",), cache_dir=sys.argv[1])
out = []
for n in (5000, 70000, 300000):
    x = np.random.default_rng(n).standard_normal(n)
    m, s, y = np.zeros(1), np.zeros(1), np.zeros(n)
    b = plan.bind(x=x, a=1.3, m=m, s=s, y=y)
    b._core.serial_threshold = int(sys.argv[2])
    b.launch()
    out.append(float(m[0]).hex())
print(" ".join(out))
'''


def test_same_bits_whatever_the_thread_count(tmp_path):
    """Processes with 1, 2 and 3 threads (RAPTOR_NUM_THREADS), and a launch run serially, give
    the same bits, within 1e-12 of math.fsum / n."""
    out = same_output_over_thread_counts(tmp_path, THREADS_SRC, runs=((1, ("64",)), (2, ("64",)), (3, ("64",)), (3, (str(1 << 40),))))
    got = [float.fromhex(h) for h in out.split()]
    for j, n in enumerate((5000, 70_000, 300_000)):
        terms = _terms(np.random.default_rng(n).standard_normal(n), 1.3)
        assert abs(got[j] - math.fsum(terms) / n) <= 1e-12 * math.fsum(np.abs(terms)) / n


def _ref(x, a):
    return jnp.mean(a * x * x + jnp.sin(x)), jnp.sum(jnp.where(x > 0.0, x, 0.0))


@pytest.mark.parametrize("lowering", ["ffi", "xla"])
@pytest.mark.parametrize("dtype", [np.float64, np.float32])
def test_jax_values_and_derivatives(lowering, dtype):
    """Both lowerings: a 0-d mean equal to jnp.mean; grad (each sample gets the cotangent / n)
    and jvp against jax.numpy's."""
    f = eagle_jax.function(centre, wrt=("x", "a"), lowering=lowering)
    x = jnp.asarray(np.random.default_rng(4).uniform(-2, 2, 501).astype(dtype))
    a = dtype(0.7)
    m, s, _ = f(x, a)
    assert np.shape(m) == () and np.shape(s) == ()
    wm, ws = _ref(x, a)
    tol = 1e-5 if dtype == np.float32 else 1e-12
    np.testing.assert_allclose(float(m), float(wm), rtol=tol, atol=tol)
    np.testing.assert_allclose(float(s), float(ws), rtol=tol, atol=tol)

    def loss(fn):
        return lambda x, a: 3.0 * fn(x, a)[0] - 0.5 * fn(x, a)[1]

    got = jax.grad(loss(f), argnums=(0, 1))(x, a)
    want = jax.grad(loss(_ref), argnums=(0, 1))(x, a)
    for g, w in zip(got, want):
        np.testing.assert_allclose(np.asarray(g), np.asarray(w), rtol=tol * 10, atol=tol * 10)
    tx = jnp.asarray(np.random.default_rng(5).standard_normal(501).astype(dtype))
    _, t = jax.jvp(lambda x, a: f(x, a)[:2], (x, a), (tx, dtype(0.3)))
    _, tw = jax.jvp(_ref, (x, a), (tx, dtype(0.3)))
    for g, w in zip(t, tw):
        np.testing.assert_allclose(float(g), float(w), rtol=tol * 10, atol=tol * 10)


@pytest.mark.parametrize("lowering", ["ffi", "xla"])
def test_check_grads_order_2(lowering):
    f = eagle_jax.function(centre, wrt=("x", "a"), lowering=lowering)
    x = jnp.asarray(np.random.default_rng(6).uniform(-2, 2, 33))
    check_grads(lambda x, a: f(x, a)[0] + 0.1 * jnp.sum(f(x, a)[2]), (x, 0.7), order=2, modes=("fwd", "rev"))


def test_interpreter_mean():
    """The reference interpreter divides each term by the launch's count and adds them."""
    x = np.linspace(-2, 2, 9)
    outs = centre._core.interpret(len(x), {"x": list(x), "a": [0.7]})[0]
    assert abs(outs["m"][0] - math.fsum(_terms(x, 0.7)) / 9) < 1e-14


@pytest.mark.skipif(nvrtc_missing(), reason="NVRTC not found")
def test_cuda_compiles():
    """The CUDA emission of the mean, its adjoint and tangent compile with NVRTC."""
    from raptor_core import _core

    for k in (centre, centre.adjoint(["x", "a"]), centre.tangent(["x", "a"])):
        assert _core.nvrtc_check([k._core], "sm_80") == 2


def _refused(src_fn, match: str) -> None:
    with pytest.raises(hawk.KernelError, match=match):
        hawk.kernel(src_fn)._core


def test_refusals():
    def masked(x: Scalar, m: Mutable[Param], done: Terminated):
        m = hawk.mean(x)

    _refused(masked, r"hawk\.mean\(\) in kernel 'masked', which has a Terminated parameter, is not supported")

    def vector(x: Vector[3], m: Mutable[Param]):
        m = hawk.mean(x)

    _refused(vector, r"hawk\.mean\(\) takes a Scalar per sample, got a Vector")

    def boundary(x: Scalar, y: Mutable[Scalar]):  # called, it is a stage boundary (tests/test_stages.py)
        y = x - hawk.mean

    _refused(boundary, r"hawk\.mean\(\) is a reduction over the samples of the launch: assign it directly")

    with pytest.raises(TypeError, match="hawk.mean can only be used inside a @hawk.kernel body"):
        hawk.mean(np.ones(3))


SHARD_SRC = '''
import math, jax, jax.numpy as jnp, numpy as np
from jax.sharding import Mesh, NamedSharding, PartitionSpec as P
import hawk, hawk.math as hm
from hawk import Mutable, Param, Scalar
from eagle.frameworks import jax as eagle_jax
''' + MEAN_SRC + '''
assert len(jax.devices()) == 4
x = jnp.asarray(np.random.default_rng(0).standard_normal(4096))
xn = np.asarray(x)
want = math.fsum(0.7 * xn * xn + np.sin(xn)) / 4096
mesh = Mesh(np.array(jax.devices()), ("s",))
sh = NamedSharding(mesh, P("s"))
for lowering in ("ffi", "xla"):
    f = eagle_jax.function(centre, wrt=("x", "a"), lowering=lowering)
    g = jax.jit(lambda x, a: f(x, a)[0], in_shardings=(sh, None))
    part = g(jax.device_put(x, sh), 0.7)
    assert np.shape(part) == ()
    assert abs(float(part) - want) <= 1e-12 * 4, (lowering, float(part), want)
    gx = jax.jit(jax.grad(lambda x, a: f(x, a)[0]), in_shardings=(sh, None))(jax.device_put(x, sh), 0.7)
    np.testing.assert_allclose(np.asarray(gx), (1.4 * xn + np.cos(xn)) / 4096, rtol=1e-13, atol=1e-18)
print("ok")
'''


def test_sharded_mean_is_the_whole_mean(tmp_path):
    """Under jit with the plane sharded over 4 host devices, both lowerings give the whole call's
    mean (each shard divides by the whole launch's n_samples()) and the adjoint cotangent / n."""
    run_on_host_devices(tmp_path, SHARD_SRC)
