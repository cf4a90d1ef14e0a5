"""hawk.mean(x, where=c) (docs/language.md "Sums over samples"): the mean over the samples c
selects, lowered as the sum of x / count where c, the count a hidden sum of 1.0 where c of an
earlier stage (docs/language.md "Stage boundaries"), against math.fsum and jax.numpy:

  1. values in float64 (within 1e-12 of math.fsum(x[c]) / count) and float32 on eagle plans and
     the direct call, 0 when c selects no sample, the two stages it runs as;
  2. the same bits whatever the thread count, serial or split;
  3. the JAX bridge on both lowerings: grad and jvp against ``jnp.mean(x, where=c)``,
     check_grads at order 2 (as an output and read in the body), and a sharded call equal to
     the whole call (the count is the whole launch's);
  4. a Terminated kernel still refused (finished samples would not be counted).
"""

from __future__ import annotations

import math

import numpy as np
import pytest

import hawk
from hawk import Mutable, Param, Scalar, Terminated

from conftest import nvrtc_missing, plan_kernels, run_on_host_devices, same_output_over_thread_counts

jax = pytest.importorskip("jax")
import jax.numpy as jnp  # noqa: E402
from jax.test_util import check_grads  # noqa: E402

from eagle.frameworks import jax as eagle_jax  # noqa: E402

jax.config.update("jax_enable_x64", True)

MW_SRC = '''
@hawk.kernel
def positive_mean(x: Scalar, a: Param, m: Mutable[Param], y: Mutable[Scalar]):
    m = hawk.mean(a * x * x + x, where=x > 0.25)
    y = x - hawk.mean(x, where=x < 0.0)
'''
exec(MW_SRC)  # noqa: S102 - the kernel the subprocess scripts below also define


def _want(x: np.ndarray, a: float) -> tuple[float, np.ndarray]:
    sel = x > 0.25
    m = math.fsum((a * x * x + x)[sel]) / max(np.count_nonzero(sel), 1)
    neg = x < 0.0
    mneg = math.fsum(x[neg]) / max(np.count_nonzero(neg), 1)
    return m, x - mneg


def test_stages_count_then_mean():
    """The counts are hidden sums of the first stage; the mean read in the body (x - its mean)
    is a hidden sum of the second, which reads its count; the whole body is the third."""
    k = positive_mean  # noqa: F821 - defined by exec above
    assert len(k.stages) == 3
    links = [(link.sum, link.hidden, link.stage) for link in k.stage_links]
    assert links == [("hawk_count0", True, 0), ("hawk_count1", True, 0), ("hawk_mean1", True, 1)]


@pytest.mark.parametrize("dtype", [np.float64, np.float32])
@pytest.mark.parametrize("n", [1, 7, 1000, 70_000])
def test_plan_values_match_fsum(tmp_path, dtype, n):
    k = positive_mean  # noqa: F821
    plan = plan_kernels([k], str(tmp_path))["positive_mean"]
    x = np.random.default_rng(n).uniform(-1.0, 1.0, n).astype(dtype)
    m, y = np.zeros(1, dtype), np.zeros(n, dtype)
    plan.bind(x=x, a=1.3, m=m, y=y).launch()
    wm, wy = _want(x.astype(np.float64), float(dtype(1.3)))
    tol = 1e-12 if dtype == np.float64 else 2e-6
    assert abs(float(m[0]) - wm) <= tol * max(1.0, abs(wm)), (float(m[0]), wm)
    np.testing.assert_allclose(y, wy, rtol=tol, atol=tol * 4)
    dm, dy = k(x, dtype(1.3))  # the direct call: the same stages, the same bits
    assert float(dm[0]) == float(m[0]) and np.array_equal(dy, y)


def test_nothing_selected_gives_zero():
    """c selects no sample: 0, the sum's identity (NumPy's mean of nothing is NaN, with a
    warning; docs/language.md says which)."""
    m, y = positive_mean(np.full(5, 0.125), 1.0)  # noqa: F821 - none > 0.25, none < 0
    assert m[0] == 0.0 and np.array_equal(y, np.full(5, 0.125))


THREADS_SRC = '''
import sys, numpy as np, hawk, eagle.plan
from hawk import Mutable, Param, Scalar
''' + MW_SRC + '''
(plan,) = eagle.plan.auto([positive_mean], targets=("host",), cache_dir=sys.argv[1])
out = []
for n in (5000, 300000):
    x = np.random.default_rng(n).uniform(-1.0, 1.0, n)
    m, y = np.zeros(1), np.zeros(n)
    plan.bind(x=x, a=1.3, m=m, y=y).launch()
    out.append(float(m[0]).hex() + ":" + float(y.sum()).hex())
print(" ".join(out))
'''


def test_same_bits_whatever_the_thread_count(tmp_path):
    """Processes with 1, 2 and 3 threads (RAPTOR_NUM_THREADS) give the same bits."""
    same_output_over_thread_counts(tmp_path, THREADS_SRC)


def _ref(x, a):
    m = jnp.mean(a * x * x + x, where=x > 0.25)
    return m, x - jnp.mean(x, where=x < 0.0)


@pytest.mark.parametrize("lowering", ["ffi", "xla"])
@pytest.mark.parametrize("dtype", [np.float64, np.float32])
def test_jax_values_and_derivatives(lowering, dtype):
    fn = eagle_jax.function(positive_mean, wrt=("x", "a"), lowering=lowering)  # noqa: F821
    x = jnp.asarray(np.random.default_rng(3).uniform(-1.0, 1.0, 501).astype(dtype))
    a = dtype(1.3)
    m, y = fn(x, a)
    wm, wy = _ref(x.astype(np.float64), 1.3)
    tol = 1e-12 if dtype == np.float64 else 2e-5
    assert np.shape(m) == () and m.dtype == dtype
    np.testing.assert_allclose(m, wm, rtol=tol)
    np.testing.assert_allclose(y, wy, rtol=tol, atol=tol)

    def loss(g):
        return lambda x, a: jnp.sum(jnp.sin(g(x, a)[1])) + 2.0 * g(x, a)[0]

    got = jax.grad(loss(fn), argnums=(0, 1))(x, a)
    want = jax.grad(loss(lambda x, a: _ref(x, a)), argnums=(0, 1))(x, a)
    for g_, w_ in zip(got, want):
        np.testing.assert_allclose(g_, w_, rtol=tol * 100, atol=tol * 100)
    dx = jnp.asarray(np.random.default_rng(4).normal(size=501).astype(dtype))
    _, t = jax.jvp(fn, (x, a), (dx, dtype(0.5)))
    _, wt = jax.jvp(_ref, (x, a), (dx, dtype(0.5)))
    for g_, w_ in zip(t, wt):
        np.testing.assert_allclose(g_, w_, rtol=tol * 100, atol=tol * 100)


@pytest.mark.parametrize("lowering", ["ffi", "xla"])
def test_check_grads_order_2(lowering):
    fn = eagle_jax.function(positive_mean, wrt=("x", "a"), lowering=lowering)  # noqa: F821
    x = jnp.asarray(np.random.default_rng(5).uniform(-1.0, 1.0, 64))
    check_grads(fn, (x, 0.7), order=2, modes=("fwd", "rev"))


SHARD_SRC = '''
import math, jax, jax.numpy as jnp, numpy as np
from jax.sharding import Mesh, NamedSharding, PartitionSpec as P
import hawk
from hawk import Mutable, Param, Scalar
from eagle.frameworks import jax as eagle_jax
''' + MW_SRC + '''
assert len(jax.devices()) == 4
x = jnp.asarray(np.random.default_rng(0).uniform(-1.0, 1.0, 4096))
mesh = Mesh(np.array(jax.devices()), ("s",))
sh = NamedSharding(mesh, P("s"))
for lowering in ("ffi", "xla"):
    f = eagle_jax.function(positive_mean, wrt=("x", "a"), lowering=lowering)
    whole = f(x, 0.7)
    part = jax.jit(lambda x, a: f(x, a), in_shardings=(sh, None))(jax.device_put(x, sh), 0.7)
    np.testing.assert_allclose(float(part[0]), float(whole[0]), rtol=1e-13)
    np.testing.assert_allclose(np.asarray(part[1]), np.asarray(whole[1]), rtol=1e-13, atol=1e-15)
    want = float(jnp.mean(0.7 * x * x + x, where=x > 0.25))
    assert abs(float(part[0]) - want) <= 1e-12 * abs(want)
print("ok")
'''


def test_sharded_mean_is_the_whole_mean(tmp_path):
    """Under jit with the plane sharded over 4 host devices, both lowerings give the whole call's
    values: the count is summed over every shard before any shard divides by it."""
    run_on_host_devices(tmp_path, SHARD_SRC)


def test_terminated_kernel_refused():
    def masked(x: Scalar, m: Mutable[Param], done: Terminated):
        m = hawk.mean(x, where=x > 0.0)

    with pytest.raises(hawk.KernelError, match=r"hawk\.mean\(\) in kernel 'masked', which has a Terminated parameter, "
                                               r"is not supported"):
        hawk.kernel(masked)._core


@pytest.mark.skipif(nvrtc_missing(), reason="NVRTC not found")
def test_stages_compile_with_nvrtc():
    """Each of the three stages' CUDA emission (the counts, the mean, the body) compiles to a
    cubin for sm_80 and sm_90."""
    from raptor_core import _core

    cores = [s._core for s in positive_mean.stages]  # noqa: F821
    for arch in ("sm_80", "sm_90"):
        assert _core.nvrtc_check(cores, arch) == 2 * len(cores)
