"""hawk.math.sample_index() and hawk.math.n_samples() (docs/language.md "Sample index"): the
sample's global index and the samples of the whole launch, against np.arange and the plane
length, through every path:

  1. eagle plans in float64 and float32, on one thread and split over the pool (a launch large
     enough to be chunked), with an active set (the index is the sample's, not its position);
  2. the reference interpreter, including a shard (sample_base, n_total);
  3. the JAX bridge on both lowerings, jax.grad through a kernel that scales by the index,
     and under jax.vmap (each entry numbered on its own);
  4. a call sharded over 4 host devices equals the unsharded call (both lowerings);
  5. the CUDA emission compiles with NVRTC; the refusal of an argument is pinned.
"""

from __future__ import annotations

import numpy as np
import pytest

import hawk
import hawk.math as hm
from hawk import Mutable, Param, Scalar, Terminated

from conftest import nvrtc_missing, plan_kernels, run_on_host_devices

jax = pytest.importorskip("jax")
import jax.numpy as jnp  # noqa: E402

from eagle.frameworks import jax as eagle_jax  # noqa: E402

jax.config.update("jax_enable_x64", True)


@hawk.kernel
def numbered(x: Scalar, y: Mutable[Scalar]):
    y = x + float(hm.sample_index()) * 0.5 + float(hm.n_samples())


@hawk.kernel
def ramp(x: Scalar, a: Param, y: Mutable[Scalar]):
    i = hm.sample_index()
    y = a * x * float(i) / float(hm.n_samples()) + float(i % 3)


def _want_numbered(x: np.ndarray) -> np.ndarray:
    n = x.shape[-1]
    return x + np.arange(n, dtype=x.dtype) * x.dtype.type(0.5) + x.dtype.type(n)


@pytest.mark.parametrize("dtype", [np.float64, np.float32])
@pytest.mark.parametrize("n", [1, 100, 70_000])
def test_plan_numbers_samples(tmp_path, dtype, n):
    """A plan's launch gives sample i the index i and every sample n, exactly, whether the
    launch runs on one thread or is split into chunks across the pool."""
    plans = plan_kernels([numbered], str(tmp_path))
    x = np.random.default_rng(1).standard_normal(n).astype(dtype)
    for threshold in (1 << 40, 64):  # one chunk; split over the pool's threads
        y = np.zeros(n, dtype)
        b = plans["numbered"].bind(x=x, y=y)
        b._core.serial_threshold = threshold
        b.launch()
        np.testing.assert_array_equal(y, _want_numbered(x))


@hawk.kernel(guard=hawk.Guard(active_set=True))
def numbered_live(x: Scalar, done: Terminated, y: Mutable[Scalar]):
    y = x + float(hm.sample_index()) * 0.5 + float(hm.n_samples())


def test_active_set_keeps_the_sample_index(tmp_path):
    """With an active set only the live samples run; each reads its own index (its place in the
    planes), not its position in the set, and n_samples() is the planes' n."""
    plans = plan_kernels([numbered_live], str(tmp_path))
    n = 50
    done = np.ones(n, dtype=bool)
    live = np.array([3, 7, 41])
    done[live] = False
    y = np.full(n, -1.0)
    b = plans["numbered_live"].bind(x=np.zeros(n), done=done, y=y)
    b.launch()
    np.testing.assert_array_equal(y[live], live * 0.5 + n)


def test_interpreter_and_shard():
    """The interpreter gives the same numbers, and a shard (base 1000 of 5000 samples) numbers
    its samples from its base."""
    n = 8
    x = np.linspace(-1, 1, n)
    outs = numbered._core.interpret(n, {"x": list(x)})[0]
    np.testing.assert_array_equal(outs["y"], _want_numbered(x))
    outs = numbered._core.interpret(n, {"x": list(x)}, sample_base=1000, n_total=5000)[0]
    np.testing.assert_array_equal(outs["y"], x + (1000 + np.arange(n)) * 0.5 + 5000)


@pytest.mark.parametrize("lowering", ["ffi", "xla"])
@pytest.mark.parametrize("dtype", [np.float64, np.float32])
def test_jax_lowerings(lowering, dtype):
    """Both JAX lowerings give np.arange and n; jax.grad of a kernel scaled by the index is the
    index (the index itself carries no derivative)."""
    f = eagle_jax.function(numbered, lowering=lowering)
    x = np.random.default_rng(2).standard_normal(300).astype(dtype)
    np.testing.assert_array_equal(np.asarray(f(jnp.asarray(x))), _want_numbered(x))

    g = eagle_jax.function(ramp, wrt=("x", "a"), lowering=lowering)
    n = 37
    xs = jnp.asarray(np.linspace(0.5, 2.0, n).astype(dtype))
    i = np.arange(n, dtype=dtype)
    want = 1.5 * np.asarray(xs) * i / n + i % 3
    np.testing.assert_allclose(np.asarray(g(xs, 1.5)), want, rtol=2e-6 if dtype == np.float32 else 1e-15)
    gx, ga = jax.grad(lambda x, a: jnp.sum(g(x, a)), argnums=(0, 1))(xs, dtype(1.5))
    tol = 2e-6 if dtype == np.float32 else 1e-14
    np.testing.assert_allclose(np.asarray(gx), 1.5 * i / n, rtol=tol, atol=tol)
    np.testing.assert_allclose(float(ga), float(np.sum(np.asarray(xs) * i / n)), rtol=tol)
    # forward mode: the tangent kernel reads the index too
    _, t = jax.jvp(lambda x: g(x, dtype(1.5)), (xs,), (jnp.ones_like(xs),))
    np.testing.assert_allclose(np.asarray(t), 1.5 * i / n, rtol=tol, atol=tol)


@pytest.mark.parametrize("lowering", ["ffi", "xla"])
@pytest.mark.parametrize("axis", [0, 1])
def test_vmap_numbers_each_entrys_samples(lowering, axis):
    """Under jax.vmap each entry is a launch of its own: sample_index() counts 0 .. N-1 and
    n_samples() is N in every entry (on "ffi" the batch is not folded into the sample axis
    for such a kernel, as it is not for draws: folded, the second entry read N + i, found by
    the differential fuzzer's vmap check); its jvp and grad too."""
    f = eagle_jax.function(numbered, lowering=lowering)
    g = eagle_jax.function(ramp, wrt=("x", "a"), lowering=lowering)
    xs = np.linspace(0.5, 2.0, 2 * 5).reshape(2, 5)
    batched = xs if axis == 0 else xs.T
    got = np.asarray(jax.vmap(f, in_axes=axis)(jnp.asarray(batched)))
    np.testing.assert_array_equal(got, np.stack([_want_numbered(x) for x in xs]))
    got = np.asarray(jax.vmap(g, in_axes=(axis, None))(jnp.asarray(batched), 1.5))
    np.testing.assert_array_equal(got, np.stack([np.asarray(g(jnp.asarray(x), 1.5)) for x in xs]))
    _, t = jax.vmap(lambda x: jax.jvp(lambda u: g(u, 1.5), (x,), (jnp.ones_like(x),)), in_axes=axis)(jnp.asarray(batched))
    i = np.arange(5.0)
    np.testing.assert_allclose(np.asarray(t), np.stack([1.5 * i / 5] * 2), rtol=1e-14, atol=1e-14)
    gx = jax.vmap(jax.grad(lambda x: jnp.sum(g(x, 1.5))), in_axes=axis)(jnp.asarray(batched))
    np.testing.assert_allclose(np.asarray(gx), np.stack([1.5 * i / 5] * 2), rtol=1e-14, atol=1e-14)


SHARD_SRC = '''
import jax, jax.numpy as jnp, numpy as np
from jax.sharding import Mesh, NamedSharding, PartitionSpec as P
import hawk, hawk.math as hm
from hawk import Mutable, Scalar
from eagle.frameworks import jax as eagle_jax

@hawk.kernel
def numbered(x: Scalar, y: Mutable[Scalar]):
    y = x + float(hm.sample_index()) * 0.5 + float(hm.n_samples())

assert len(jax.devices()) == 4
x = jnp.asarray(np.random.default_rng(0).standard_normal(1024))
want = np.asarray(x) + np.arange(1024) * 0.5 + 1024
mesh = Mesh(np.array(jax.devices()), ("s",))
sh = NamedSharding(mesh, P("s"))
for lowering in ("ffi", "xla"):
    f = eagle_jax.function(numbered, lowering=lowering)
    np.testing.assert_array_equal(np.asarray(f(x)), want)
    g = jax.jit(f, in_shardings=(sh,), out_shardings=sh)
    np.testing.assert_array_equal(np.asarray(g(jax.device_put(x, sh))), want)
print("ok")
'''


def test_sharded_equals_unsharded(tmp_path):
    """Under jit with the plane sharded over 4 host devices, both lowerings give every sample its
    global index and the whole call's n (the "ffi" path runs such a call whole, docs/jax.md)."""
    run_on_host_devices(tmp_path, SHARD_SRC)


@pytest.mark.skipif(nvrtc_missing(), reason="NVRTC not found")
def test_cuda_compiles():
    from raptor_core import _core

    for k in (numbered, ramp, ramp.adjoint(["x", "a"]), ramp.tangent(["x"])):
        assert _core.nvrtc_check([k._core], "sm_80") == 2


def test_refusals():
    """An argument to sample_index() is refused, naming the function and the line."""
    def bad(x: Scalar, y: Mutable[Scalar]):
        y = x + float(hm.sample_index(x))

    with pytest.raises(Exception, match=r"sample_index\(\) takes 0 arguments, got 1"):
        hawk.kernel(bad)._core
