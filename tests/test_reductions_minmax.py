"""hawk.min(x, where=c) / hawk.max(x, where=c) into `Mutable[Param]` outputs (docs/language.md
"Minimum and maximum over samples"), against NumPy, bit for bit (a minimum is exact):

  1. values in float64 and float32 on eagle plans and direct calls, with and without where=,
     NaN propagating as in np.min, +inf / -inf when no sample is selected (no samples, every
     where= false, every sample finished), finished (Terminated) samples taking no part;
  2. the same bits whatever the thread count (processes with RAPTOR_NUM_THREADS = 1, 2, 3) and
     serial or split;
  3. the JAX bridge on both lowerings (a 0-d result equal to jnp.min(x, where=c, initial=inf)),
     and a call sharded over 4 host devices (pmin / pmax across the shards);
  4. derivatives: grad / jvp against jax.numpy on tie-free data and check_grads at order 2 on
     both lowerings; the tie rule (everything to the lowest sample index) against a NumPy
     reference; the winner, tangent and adjoint kernels through the interpreter;
  5. the reference interpreter, NVRTC compilation, and the refusals pinned (eagle.diff, a
     stage boundary, a Vector, a second assignment, plain Python).
"""

from __future__ import annotations


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

KERNELS_SRC = '''
@hawk.kernel
def extremes(x: Scalar, c: Scalar, a: Param, lo: Mutable[Param], hi: Mutable[Param], s: Mutable[Param],
             y: Mutable[Scalar]):
    y = a * x
    lo = hawk.min(hm.sin(a * x) + x, where=c > 0.0)
    hi = hawk.max(a * x * x)
    s = hawk.sum(x)


@hawk.kernel
def live(x: Scalar, lo: Mutable[Param], hi: Mutable[Param], done: Terminated):
    lo = hawk.min(x)
    hi = hawk.max(x, where=x < 1.0)
'''
exec(KERNELS_SRC)  # noqa: S102 - the kernels, also written into the subprocess scripts below


def _lo(x: np.ndarray, c: np.ndarray, a: float) -> np.ndarray:
    """NumPy's least selected value (the kernel's expression in the array's dtype)."""
    dt = x.dtype.type
    return np.min(np.sin(dt(a) * x) + x, initial=np.inf, where=c > 0)


def _hi(x: np.ndarray, a: float) -> np.ndarray:
    dt = x.dtype.type
    return np.max(dt(a) * x * x, initial=-np.inf)


def _same(got, want) -> None:
    """Equal bits (NaN equal to NaN)."""
    g, w = np.asarray(got).astype(np.float64), np.asarray(want).astype(np.float64)
    assert (np.isnan(g) and np.isnan(w)) or g.tobytes() == w.tobytes(), (float(g), float(w))


def _data(n: int, dtype) -> tuple[np.ndarray, np.ndarray]:
    rng = np.random.default_rng(n + 11)
    return rng.standard_normal(n).astype(dtype), rng.standard_normal(n).astype(dtype)


@pytest.mark.parametrize("dtype", [np.float64, np.float32])
@pytest.mark.parametrize("n", [0, 1, 1000, 70_000])
def test_plan_values_equal_numpy(tmp_path, dtype, n):
    """Plans: the min of the selected samples and the max of all equal NumPy's bit for bit, in
    the dtype (a transcendental term included: the interpreter's float64 sin differs from
    the build's by an ulp at most, so the NumPy reference is the kernel's own y = a * x only
    for the max; the min's is checked to 2 ulp); the sum beside them is unchanged."""
    plans = plan_kernels([extremes], str(tmp_path))
    x, c = _data(n, dtype)
    lo, hi, s = np.full(1, 5.0, dtype), np.full(1, 5.0, dtype), np.zeros(1, dtype)
    y = np.zeros(n, dtype)
    plans["extremes"].bind(x=x, c=c, a=0.7, lo=lo, hi=hi, s=s, y=y).launch()
    _same(hi[0], _hi(x, 0.7))
    want = _lo(x, c, 0.7)
    if np.isinf(want):
        assert lo[0] == np.inf
    else:
        assert abs(float(lo[0]) - float(want)) <= 2 * np.spacing(np.abs(want)), (lo[0], want)
    np.testing.assert_array_equal(y, (dtype(0.7) * x).astype(dtype))
    if n == 0:
        assert lo[0] == np.inf and hi[0] == -np.inf and s[0] == 0.0


@hawk.kernel
def plain(x: Scalar, c: Scalar, lo: Mutable[Param], hi: Mutable[Param]):
    lo = hawk.min(x, where=c > 0.0)
    hi = hawk.max(x, where=c > 0.0)


@pytest.mark.parametrize("dtype", [np.float64, np.float32])
def test_exact_and_where(tmp_path, dtype):
    """Without arithmetic the result is one of the inputs: exactly np.min / np.max of the selected
    samples; every where= false gives +inf / -inf (jnp.min(initial=inf)'s convention)."""
    plans = plan_kernels([plain], str(tmp_path))
    for n in (1, 63, 64, 65, 5000, 100_003):
        x, c = _data(n, dtype)
        lo, hi = np.zeros(1, dtype), np.zeros(1, dtype)
        plans["plain"].bind(x=x, c=c, lo=lo, hi=hi).launch()
        _same(lo[0], np.min(x, initial=np.inf, where=c > 0))
        _same(hi[0], np.max(x, initial=-np.inf, where=c > 0))
        plans["plain"].bind(x=x, c=np.full(n, -1.0, dtype), lo=lo, hi=hi).launch()
        assert lo[0] == np.inf and hi[0] == -np.inf


@pytest.mark.parametrize("dtype", [np.float64, np.float32])
def test_nan_propagates(tmp_path, dtype):
    """A NaN among the selected samples gives NaN (np.min's rule), wherever it is (first, last,
    inside a later chunk of the launch); a NaN in an unselected sample is ignored."""
    plans = plan_kernels([plain], str(tmp_path))
    n = 70_000
    x, _ = _data(n, dtype)
    for at in (0, 1, 4095, 40_000, n - 1):
        xs = x.copy()
        xs[at] = np.nan
        lo, hi = np.zeros(1, dtype), np.zeros(1, dtype)
        plans["plain"].bind(x=xs, c=np.ones(n, dtype), lo=lo, hi=hi).launch()
        assert np.isnan(lo[0]) and np.isnan(hi[0]) and np.isnan(np.min(xs)), at
        c = np.ones(n, dtype)
        c[at] = -1.0
        plans["plain"].bind(x=xs, c=c, lo=lo, hi=hi).launch()
        _same(lo[0], np.min(xs, initial=np.inf, where=c > 0))
        _same(hi[0], np.max(xs, initial=-np.inf, where=c > 0))
    # infinities are values like any other
    xs = x.copy()
    xs[7], xs[9] = -np.inf, np.inf
    lo, hi = np.zeros(1, dtype), np.zeros(1, dtype)
    plans["plain"].bind(x=xs, c=np.ones(n, dtype), lo=lo, hi=hi).launch()
    assert lo[0] == -np.inf and hi[0] == np.inf


@pytest.mark.parametrize("dtype", [np.float64, np.float32])
def test_finished_samples_take_no_part(tmp_path, dtype):
    """Samples finished on entry (the Terminated mask) contribute nothing; every sample finished
    gives +inf / -inf."""
    plans = plan_kernels([live], str(tmp_path))
    n = 9000
    x, c = _data(n, dtype)
    done = c > 0.5
    lo, hi = np.zeros(1, dtype), np.zeros(1, dtype)
    plans["live"].bind(x=x, lo=lo, hi=hi, done=done.copy()).launch()
    _same(lo[0], np.min(x, initial=np.inf, where=~done))
    _same(hi[0], np.max(x, initial=-np.inf, where=~done & (x < 1.0)))
    plans["live"].bind(x=x, lo=lo, hi=hi, done=np.ones(n, bool)).launch()
    assert lo[0] == np.inf and hi[0] == -np.inf


def test_signed_zeros_fold_in_any_order(tmp_path):
    """-0.0 is below +0.0 (as hawk.math.minimum), so the result does not depend on where the
    zeros fall (lanes, chunks): min of zeros of both signs is -0.0, max +0.0, compiled and
    interpreted; NumPy's own choice between them depends on its order."""
    plans = plan_kernels([plain], str(tmp_path))
    for n in (3, 70_000):
        x = np.zeros(n)
        x[1::3] = -0.0  # +0.0 first, then both signs throughout
        lo, hi = np.zeros(1), np.zeros(1)
        plans["plain"].bind(x=x, c=np.ones(n), lo=lo, hi=hi).launch()
        assert lo[0] == 0.0 and np.signbit(lo[0]) and hi[0] == 0.0 and not np.signbit(hi[0])
        outs = plain._core.interpret(n, {"x": list(x), "c": [1.0] * n})[0]
        assert np.signbit(outs["lo"][0]) and not np.signbit(outs["hi"][0])


def test_direct_call():
    """A direct call (kernel(x, ...)) returns the 1-element outputs like hawk.sum's."""
    x, c = _data(3000, np.float64)
    out = plain(x, c)
    got = {k: np.asarray(v) for k, v in out.items()} if isinstance(out, dict) else dict(zip(("lo", "hi"), out))
    _same(np.ravel(got["lo"])[0], np.min(x, initial=np.inf, where=c > 0))
    _same(np.ravel(got["hi"])[0], np.max(x, initial=-np.inf, where=c > 0))


def _bits(tmp_path, threshold: int) -> list[str]:
    plans = plan_kernels([plain], str(tmp_path))
    out = []
    for n in (5000, 70_000, 300_000):
        x, c = _data(n, np.float64)
        lo, hi = np.zeros(1), np.zeros(1)
        b = plans["plain"].bind(x=x, c=c, lo=lo, hi=hi)
        b._core.serial_threshold = threshold
        b.launch()
        out += [float(lo[0]).hex(), float(hi[0]).hex()]
    return out


def test_same_bits_serial_and_split(tmp_path):
    serial = _bits(tmp_path, 1 << 40)
    assert _bits(tmp_path, 64) == serial


THREADS_SRC = '''
import sys, numpy as np, hawk, hawk.math as hm, eagle.plan
from hawk import Mutable, Param, Scalar, Terminated
''' + KERNELS_SRC + '''
(plan,) = eagle.plan.auto([extremes], targets=("host",), cache_dir=sys.argv[1])
out = []
for n in (5000, 70000, 300000):
    rng = np.random.default_rng(n)
    x, c = rng.standard_normal(n), rng.standard_normal(n)
    x[n // 3] = x[n // 5]  # a tie
    lo, hi, s = np.zeros(1), np.zeros(1), np.zeros(1)
    b = plan.bind(x=x, c=c, a=0.7, lo=lo, hi=hi, s=s, y=np.zeros(n))
    b._core.serial_threshold = 64
    b.launch()
    out += [float(lo[0]).hex(), float(hi[0]).hex()]
print(" ".join(out))
'''


def test_same_bits_whatever_the_thread_count(tmp_path):
    """Processes with 1, 2 and 3 threads (RAPTOR_NUM_THREADS) give the same bits, NumPy's max."""
    out = same_output_over_thread_counts(tmp_path, THREADS_SRC)
    got = [float.fromhex(h) for h in out.split()]
    for j, n in enumerate((5000, 70_000, 300_000)):
        rng = np.random.default_rng(n)
        x, c = rng.standard_normal(n), rng.standard_normal(n)
        x[n // 3] = x[n // 5]
        _same(got[2 * j + 1], np.max(0.7 * x * x))
        assert abs(got[2 * j] - float(np.min(np.sin(0.7 * x) + x, where=c > 0, initial=np.inf))) <= 4e-16 * 4


def test_interpreter():
    """The reference interpreter folds the stores of every live, selected sample."""
    x = np.linspace(-2, 2, 9)
    c = np.array([1, -1, 1, -1, 1, -1, 1, -1, -1], float)
    outs = plain._core.interpret(len(x), {"x": list(x), "c": list(c)})[0]
    assert outs["lo"][0] == -2.0 and outs["hi"][0] == 1.0
    xs = x.copy()
    xs[4] = np.nan
    outs = plain._core.interpret(len(x), {"x": list(xs), "c": list(c)})[0]
    assert np.isnan(outs["lo"][0]) and np.isnan(outs["hi"][0])
    outs = plain._core.interpret(0, {"x": [], "c": []})[0]
    assert outs["lo"][0] == np.inf and outs["hi"][0] == -np.inf
    mask = [1, 0, 0, 0, 0, 0, 0, 0, 1]
    outs = live._core.interpret(len(x), {"x": list(x)}, mask=mask)[0]
    assert outs["lo"][0] == -1.5 and outs["hi"][0] == 0.5


def test_ir_and_interface_name_the_combine():
    """The IR prints the combine, the interface and SlotInfo carry it, the op list lists it."""
    text = plain.ir
    assert "param_sum lo width=1 min" in text and "param_sum hi width=1 max" in text
    kinds = {s.name: s.combine for s in plain.slots}
    assert kinds["lo"] == "min" and kinds["hi"] == "max" and kinds["x"] == "sum"
    ops = plain._core.op_list()
    assert sorted(ops["combine"].values()) == ["max", "min"]


@pytest.mark.parametrize("lowering", ["ffi", "xla"])
@pytest.mark.parametrize("dtype", [np.float64, np.float32])
def test_jax_values(lowering, dtype):
    """Both lowerings: 0-d results equal to jnp.min(x, where=c, initial=inf) / jnp.max bit for
    bit, NaN propagating, and +inf / -inf when nothing is selected."""
    f = eagle_jax.function(plain, lowering=lowering)
    x, c = _data(501, dtype)
    lo, hi = f(jnp.asarray(x), jnp.asarray(c))
    assert np.shape(lo) == () and np.shape(hi) == ()
    assert lo.dtype == dtype
    _same(lo, jnp.min(jnp.asarray(x), where=jnp.asarray(c) > 0, initial=np.inf))
    _same(hi, jnp.max(jnp.asarray(x), where=jnp.asarray(c) > 0, initial=-np.inf))
    xs = x.copy()
    xs[100] = np.nan
    lo, hi = jax.jit(f)(jnp.asarray(xs), jnp.asarray(np.abs(c) + 1))
    assert np.isnan(lo) and np.isnan(hi)
    lo, hi = f(jnp.asarray(x), jnp.asarray(-np.abs(c) - 1))
    assert float(lo) == np.inf and float(hi) == -np.inf


@pytest.mark.parametrize("lowering", ["ffi", "xla"])
def test_jax_vmap(lowering):
    """jax.vmap over a batch of planes: one min / max per batch entry, and its gradient."""
    f = eagle_jax.function(plain, wrt=("x",), lowering=lowering)
    rng = np.random.default_rng(31)
    x, c = rng.standard_normal((3, 200)), rng.standard_normal((3, 200))
    lo, hi = jax.vmap(f)(jnp.asarray(x), jnp.asarray(c))
    np.testing.assert_array_equal(np.asarray(lo), np.min(x, axis=1, initial=np.inf, where=c > 0))
    np.testing.assert_array_equal(np.asarray(hi), np.max(x, axis=1, initial=-np.inf, where=c > 0))
    g = jax.vmap(jax.grad(lambda x, c: f(x, c)[0]))(jnp.asarray(x), jnp.asarray(c))
    want = np.zeros_like(x)
    for b in range(3):
        want[b, int(np.argmin(np.where(c[b] > 0, x[b], np.inf)))] = 1.0
    np.testing.assert_array_equal(np.asarray(g), want)


@pytest.mark.parametrize("lowering", ["ffi", "xla"])
def test_jax_terminated(lowering):
    """Finished samples take no part through the bridge either."""
    f = eagle_jax.function(live, lowering=lowering)
    x, c = _data(300, np.float64)
    done = c > 0.5
    lo, hi, mask = f(jnp.asarray(x), jnp.asarray(done))
    _same(lo, np.min(x, initial=np.inf, where=~done))
    _same(hi, np.max(x, initial=-np.inf, where=~done & (x < 1.0)))


SHARD_SRC = '''
import jax, jax.numpy as jnp, numpy as np
from jax.sharding import Mesh, NamedSharding, PartitionSpec as P
import hawk, hawk.math as hm
from hawk import Mutable, Param, Scalar, Terminated
from eagle.frameworks import jax as eagle_jax
''' + KERNELS_SRC + '''
assert len(jax.devices()) == 4
rng = np.random.default_rng(0)
x = rng.standard_normal(4096)
c = rng.standard_normal(4096)
mesh = Mesh(np.array(jax.devices()), ("s",))
sh = NamedSharding(mesh, P("s"))
want_hi = np.max(0.7 * x * x)
for lowering in ("ffi", "xla"):
    f = eagle_jax.function(extremes, lowering=lowering)
    g = jax.jit(lambda x, c, a: f(x, c, a)[:2], in_shardings=(sh, sh, None))
    lo, hi = g(jax.device_put(jnp.asarray(x), sh), jax.device_put(jnp.asarray(c), sh), 0.7)
    whole = f(jnp.asarray(x), jnp.asarray(c), 0.7)
    assert np.shape(lo) == () and np.shape(hi) == ()
    assert float(hi) == want_hi, (lowering, float(hi), want_hi)
    assert float(lo) == float(whole[0]) and float(hi) == float(whole[1]), lowering
    # one shard holds no selected sample: its +inf does not win
    cs = c.copy()
    cs[:1024] = -1.0
    lo, hi = g(jax.device_put(jnp.asarray(x), sh), jax.device_put(jnp.asarray(cs), sh), 0.7)
    assert float(lo) == float(f(jnp.asarray(x), jnp.asarray(cs), 0.7)[0])
    # a NaN in one shard wins everywhere
    xs = x.copy()
    xs[3000] = np.nan
    lo, hi = g(jax.device_put(jnp.asarray(xs), sh), jax.device_put(jnp.asarray(np.abs(c)), sh), 0.7)
    assert np.isnan(float(lo)) and np.isnan(float(hi)), lowering
    # the cotangent goes to the one winning sample, numbered globally
    fd = eagle_jax.function(extremes, wrt=("x",), lowering=lowering)
    loss = lambda x, c: fd(x, c, 0.7)[0] + 2.0 * fd(x, c, 0.7)[1]
    gx = jax.jit(jax.grad(loss), in_shardings=(sh, sh))(jax.device_put(jnp.asarray(x), sh), jax.device_put(jnp.asarray(c), sh))
    whole = jax.grad(loss)(jnp.asarray(x), jnp.asarray(c))
    np.testing.assert_array_equal(np.asarray(gx), np.asarray(whole))
    assert 1 <= np.count_nonzero(np.asarray(whole)) <= 2
print("ok")
'''


def test_sharded_is_the_whole_call(tmp_path):
    """Under jit with the planes sharded over 4 host devices, both lowerings give the whole call's
    min / max (pmin / pmax of the shards' results) and its gradient (the winner numbered
    globally)."""
    run_on_host_devices(tmp_path, SHARD_SRC)


@pytest.mark.skipif(nvrtc_missing(), reason="NVRTC not found")
def test_cuda_compiles():
    """The CUDA emission (per-block folds combined in block order by _finish) compiles, and so
    do the winner, tangent and adjoint kernels."""
    from raptor_core import _core

    for k in (plain, extremes, live, plain.winner(), extremes.tangent(["x", "a"]), extremes.adjoint(["x", "a"]),
              live.winner()):
        assert _core.nvrtc_check([k._core], "sm_80") == 2


def _refused(src_fn, match: str) -> None:
    with pytest.raises(hawk.KernelError, match=match):
        hawk.kernel(src_fn)._core


def _ref(x, c, a):
    """jax.numpy's hawk.min / hawk.max of the `extremes` kernel."""
    return (jnp.min(jnp.sin(a * x) + x, where=c > 0, initial=jnp.inf), jnp.max(a * x * x))


def _fx(f):
    return lambda x, c, a: f(x, c, a)[:2]


@pytest.mark.parametrize("lowering", ["ffi", "xla"])
@pytest.mark.parametrize("dtype", [np.float64, np.float32])
def test_jax_derivatives_match_jnp(lowering, dtype):
    """On tie-free data: grad (the output's cotangent goes to the winning sample only, the same as
    jax.numpy's there) and jvp (the winner's tangent) against jax.numpy, w.r.t. the plane and a
    Param."""
    f = eagle_jax.function(extremes, wrt=("x", "a"), lowering=lowering)
    rng = np.random.default_rng(21)
    x = jnp.asarray(rng.uniform(-2, 2, 501).astype(dtype))
    c = jnp.asarray(rng.standard_normal(501).astype(dtype))
    a = dtype(0.7)
    tol = 1e-5 if dtype == np.float32 else 1e-13

    def loss(fn):
        return lambda x, a: 3.0 * fn(x, c, a)[0] - 0.5 * fn(x, c, a)[1]

    got = jax.grad(loss(_fx(f)), argnums=(0, 1))(x, a)
    want = jax.grad(loss(_ref), argnums=(0, 1))(x, a)
    for g, w in zip(got, want):
        np.testing.assert_allclose(np.asarray(g), np.asarray(w), rtol=tol, atol=tol)
    assert 1 <= np.count_nonzero(np.asarray(got[0])) <= 2  # the winners only (one may win both)
    tx = jnp.asarray(rng.standard_normal(501).astype(dtype))
    _, t = jax.jvp(lambda x, a: _fx(f)(x, c, a), (x, a), (tx, dtype(0.3)))
    _, tw = jax.jvp(lambda x, a: _ref(x, c, a), (x, a), (tx, dtype(0.3)))
    for g, w in zip(t, tw):
        np.testing.assert_allclose(float(g), float(w), rtol=tol, atol=tol)


@pytest.mark.parametrize("lowering", ["ffi", "xla"])
def test_check_grads_order_2(lowering):
    f = eagle_jax.function(extremes, wrt=("x", "a"), lowering=lowering)
    rng = np.random.default_rng(22)
    x = jnp.asarray(rng.uniform(-2, 2, 33))
    c = jnp.asarray(rng.standard_normal(33))
    check_grads(lambda x, a: f(x, c, a)[0] + 0.1 * f(x, c, a)[1], (x, 0.7), order=2, modes=("fwd", "rev"))


def _tie_reference(v: np.ndarray, sel: np.ndarray, least: bool) -> np.ndarray:
    """NumPy's account of the tie rule: d out / d v is 1 at the lowest index among the selected
    samples holding the result, 0 elsewhere."""
    vals = np.where(sel, v, np.inf if least else -np.inf)
    win = int(np.argmin(vals) if least else np.argmax(vals))  # argmin/argmax take the first
    grad = np.zeros_like(v)
    grad[win] = 1.0
    return grad


@pytest.mark.parametrize("lowering", ["ffi", "xla"])
def test_tie_goes_to_the_lowest_sample_index(lowering):
    """Ties: the whole cotangent goes to the lowest global sample index (jax.numpy splits it
    equally among the tied samples instead: docs/derivatives.md), and so does the tangent."""
    f = eagle_jax.function(plain, wrt=("x",), lowering=lowering)
    rng = np.random.default_rng(23)
    x = np.round(rng.uniform(-3, 3, 400))  # integers: many ties at the min and the max
    c = rng.standard_normal(400)
    sel = c > 0
    gl = jax.grad(lambda x: f(x, jnp.asarray(c))[0])(jnp.asarray(x))
    gh = jax.grad(lambda x: f(x, jnp.asarray(c))[1])(jnp.asarray(x))
    np.testing.assert_array_equal(np.asarray(gl), _tie_reference(x, sel, True))
    np.testing.assert_array_equal(np.asarray(gh), _tie_reference(x, sel, False))
    assert np.count_nonzero(np.where(sel, x, np.inf) == np.min(x, where=sel, initial=np.inf)) > 1  # a real tie
    jg = jax.grad(lambda x: jnp.min(x, where=jnp.asarray(sel), initial=jnp.inf))(jnp.asarray(x))
    assert np.count_nonzero(np.asarray(jg)) > 1  # jax.numpy splits it
    tx = rng.standard_normal(400)
    _, (tl, th) = jax.jvp(lambda x: f(x, jnp.asarray(c)), (jnp.asarray(x),), (jnp.asarray(tx),))
    assert float(tl) == tx[int(np.argmin(np.where(sel, x, np.inf)))]
    assert float(th) == tx[int(np.argmax(np.where(sel, x, -np.inf)))]


@pytest.mark.parametrize("lowering", ["ffi", "xla"])
def test_derivatives_skip_finished_samples(lowering):
    """A finished sample holding a smaller value takes no cotangent."""
    f = eagle_jax.function(live, wrt=("x",), lowering=lowering)
    x = np.array([3.0, -5.0, 1.0, -2.0, 0.5, 4.0])
    done = np.array([False, True, False, False, False, True])
    g = jax.grad(lambda x: f(x, jnp.asarray(done))[0] + 10.0 * f(x, jnp.asarray(done))[1])(jnp.asarray(x))
    np.testing.assert_array_equal(np.asarray(g), [0.0, 0.0, 0.0, 1.0, 10.0, 0.0])


def test_float32_derivative_beyond_2_24_samples_refused():
    """The winner's index is a float of the kernel's dtype: a float32 call's derivative over more
    than 2^24 samples is refused by name (float64 is exact to 2^53)."""
    from eagle.frameworks import _jax_rules
    from eagle.frameworks._jax_call import KernelCall

    call = KernelCall(plain, np.float32, None)
    _jax_rules.winner_range_check(call, 2**24)
    with pytest.raises(ValueError, match=r"kernel 'plain': the derivative of hawk\.min / hawk\.max \(lo, hi\) over 16777217 "
                                         r"samples in float32, where the winning sample's index is exact up to 2\^24 only"):
        _jax_rules.winner_range_check(call, 2**24 + 1)
    _jax_rules.winner_range_check(KernelCall(plain, np.float64, None), 2**24 + 1)


def test_winner_kernel_and_derived_kernels():
    """The winner kernel (the lowest index holding the result), and the tangent / adjoint kernels'
    winner Params, through the reference interpreter."""
    x = np.array([2.0, -1.0, 3.0, -1.0, 3.0, 0.0])
    c = np.array([1.0, -1.0, 1.0, 1.0, 1.0, 1.0])
    wk = plain.winner()
    outs = wk._core.interpret(len(x), {"x": list(x), "c": list(c), "lo": [-1.0], "hi": [3.0]})[0]
    assert outs["lo_win"][0] == 3.0 and outs["hi_win"][0] == 2.0
    adj = plain.adjoint(["x"])
    names = [s.name for s in adj.slots]
    assert "lo_win" in names and "hi_win" in names
    outs = adj._core.interpret(len(x), {"x": list(x), "c": list(c), "lo_bar": [2.0], "hi_bar": [5.0],
                                        "lo_win": [3.0], "hi_win": [2.0]})[0]
    np.testing.assert_array_equal(outs["x_bar"], [0, 0, 5, 2, 0, 0])
    tan = plain.tangent(["x"], with_primal=False)
    outs = tan._core.interpret(len(x), {"x": list(x), "c": list(c), "x_dot": list(np.arange(6.0) + 1),
                                        "lo_win": [3.0], "hi_win": [2.0]})[0]
    assert outs["lo_dot"][0] == 4.0 and outs["hi_dot"][0] == 3.0


def test_eagle_diff_refuses():
    import eagle
    import eagle.diff

    plans = plan_kernels([plain], str(pytest.importorskip("tempfile").mkdtemp()))
    x, c = np.array([0.5, 2.5]), np.ones(2)
    lo, hi = np.zeros(1), np.zeros(1)
    g = eagle.Graph().add(plans["plain"].bind(x=x, c=c, lo=lo, hi=hi), name="pm").build(record=True)
    g.launch(1)
    assert lo[0] == 0.5 and hi[0] == 2.5
    with pytest.raises(ValueError, match=r"eagle\.diff\.reverse: node 'pm' \(kernel 'plain'\) takes hawk\.min\(\) into 'lo', "
                                         r"which this reverse sweep does not differentiate yet"):
        eagle.diff.reverse(g.record, {"pm.lo": np.ones(1)})


def test_refusals():
    def boundary(x: Scalar, y: Mutable[Scalar]):  # stage boundaries (tests/test_stages.py)
        y = x - hawk.min(x)

    def reads(x: Scalar, t: Mutable[Param], y: Mutable[Scalar]):
        t = hawk.max(x)
        y = x - t

    assert len(hawk.kernel(boundary).stages) == 2 and len(hawk.kernel(reads).stages) == 2

    def twice(x: Scalar, t: Mutable[Param]):
        t = hawk.min(x)
        t = hawk.max(x)

    _refused(twice, r"'t' is assigned a sum twice")

    def vector(x: Vector[3], m: Mutable[Param]):
        m = hawk.max(x)

    _refused(vector, r"hawk\.max\(\) takes a Scalar per sample, got a Vector")

    def keyword(x: Scalar, m: Mutable[Param]):
        m = hawk.min(x, initial=0.0)

    _refused(keyword, r"hawk\.min\(\) takes the keyword where= only, not initial=")

    def inside(x: Scalar, m: Mutable[Param]):
        if x > 0.0:
            m = hawk.min(x)

    _refused(inside, r"hawk\.min\(\) inside `if`, `for` or a helper is not supported")

    for fn in (hawk.min, hawk.max):
        with pytest.raises(TypeError, match=rf"hawk.{fn.__name__} can only be used inside a @hawk.kernel body"):
            fn(np.ones(3))
    assert "min" not in hawk.__all__ and "max" not in hawk.__all__
