"""Stage boundaries (docs/language.md "Stage boundaries"): a reduction over the samples of a
launch whose value the same body reads (`f = k * (x - hawk.mean(x))`, or `m = hawk.mean(x)`
then a read of `m`) runs as stages, each over every sample. Checked here:

  1. the compiler's split (cpp/passes/stages.hpp): two stages for one level of reductions, three
     when a reduction reads another's value, the random draws the same in every stage;
  2. values on eagle plans and direct calls against NumPy (math.fsum for the sums) in float64
     and float32, the reference interpreter alike, the same bits over 1, 2 and 3 threads;
  3. graphs run a staged launch as one node per stage;
  4. the refusals, pinned: a boundary in a kernel of steps > 1, with a Terminated mask, inside
     `if` / a helper; tangent/adjoint/with_steps/trace of a staged kernel; the CUDA target.
"""

from __future__ import annotations

import math

import numpy as np
import pytest

import eagle
import hawk
import hawk.math as hm
from eagle.errors import ModeError
from hawk import Mutable, Param, Random, Scalar, Table, Terminated

from conftest import nvrtc_missing, plan_kernels, run_on_host_devices, same_output_over_thread_counts

STAGED_SRC = '''
@hawk.kernel
def coupled(x: Scalar, k: Param, m: Mutable[Param], f: Mutable[Scalar]):
    m = hawk.mean(hm.sin(x))
    f = k * (hm.sin(x) - m) + hawk.sum(x, where=x > 0.5)


@hawk.kernel
def normalized(x: Scalar, v: Mutable[Param], z: Mutable[Scalar]):
    d = x - hawk.mean(x)
    v = hawk.mean(d * d)
    z = d / hm.sqrt(hawk.mean(d * d))
'''
exec(STAGED_SRC)  # noqa: S102 - the same source the thread-count processes compile
coupled = globals()["coupled"]
normalized = globals()["normalized"]


@hawk.kernel
def noisy(z: Mutable[Scalar], rng: Random):
    e = rng.normal()
    z = e - hawk.mean(e)


@hawk.kernel
def plain_draws(z: Mutable[Scalar], rng: Random):
    z = rng.normal()


def _want_coupled(x: np.ndarray, k: float) -> tuple[float, float, np.ndarray]:
    s = np.sin(x.astype(np.float64))
    m = math.fsum(s / len(x))
    p = math.fsum(np.where(x > 0.5, x.astype(np.float64), 0.0))
    return m, p, k * (s - m) + p


def test_split_into_stages():
    """One level of reductions: two stages (the first only computes the sums); a reduction of a
    reduced value: three. The stages' slots name what each reads and writes."""
    assert coupled.staged and len(coupled.stages) == 2
    assert [s.name for s in coupled.slots] == ["x", "k", "m", "f"]  # the hidden links are not the user's
    first, last = coupled.stages
    assert {s.name: s.kind for s in first.slots} == {"x": "plane", "m": "param_sum", "hawk_sum0": "param_sum"}
    assert {s.name: s.kind for s in last.slots} == {"x": "plane", "k": "param", "f": "mutable", "m_value": "param",
                                                    "hawk_sum0_value": "param"}
    assert [(l.sum, l.param, l.hidden, l.stage) for l in coupled.stage_links] == [
        ("m", "m_value", False, 0), ("hawk_sum0", "hawk_sum0_value", True, 0)]
    assert len(normalized.stages) == 3
    assert [l.stage for l in normalized.stage_links] == [0, 1]
    assert not hawk.kernel(lambda_free).staged


def lambda_free(x: Scalar, t: Mutable[Param], y: Mutable[Scalar]):
    t = hawk.sum(x)  # not read: one kernel, no stage
    y = x


@pytest.mark.parametrize("dtype", [np.float64, np.float32])
@pytest.mark.parametrize("n", [1, 1000, 70_000])
def test_plan_values_match_numpy(tmp_path, dtype, n):
    """Bound plans: m within 1e-12 of math.fsum(sin x / n) (float64; float32 within 1e-6), f as
    NumPy computes it from those sums; the three-stage kernel's variance and z-scores."""
    plans = plan_kernels([coupled, normalized], str(tmp_path))
    x = np.random.default_rng(n).uniform(-2.0, 2.0, n).astype(dtype)
    m, f = np.zeros(1, dtype), np.zeros(n, dtype)
    plans["coupled"].bind(x=x, k=1.5, m=m, f=f).launch()
    wm, wp, wf = _want_coupled(x, 1.5)
    tol = 1e-12 if dtype == np.float64 else 1e-6
    scale = math.fsum(np.abs(np.sin(x.astype(np.float64)))) / n
    assert abs(float(m[0]) - wm) <= tol * max(scale, 1e-300) + (0 if dtype == np.float64 else 1e-7)
    np.testing.assert_allclose(f, wf, rtol=tol * 10, atol=tol * (abs(wp) + 2.0) * 10)
    v, z = np.zeros(1, dtype), np.zeros(n, dtype)
    plans["normalized"].bind(x=x, v=v, z=z).launch()
    d = x.astype(np.float64) - np.mean(x.astype(np.float64))
    var = float(np.mean(d * d))
    np.testing.assert_allclose(v[0], var, rtol=tol * 10)
    if n > 1:
        np.testing.assert_allclose(z, d / math.sqrt(var), rtol=tol * 100, atol=tol * 100)


@pytest.mark.parametrize("dtype", [np.float64, np.float32])
def test_direct_call_and_interpreter(dtype):
    """kernel(x, k) runs the same stages as a bound plan; the reference interpreter (run stage
    by stage, the sums passed on rounded to the dtype) gives the same values."""
    x = np.random.default_rng(3).normal(size=4099).astype(dtype)
    m, f = coupled(x, 0.8)
    assert m.shape == (1,) and m.dtype == dtype and f.dtype == dtype
    wm, _, wf = _want_coupled(x, 0.8)
    tol = 1e-12 if dtype == np.float64 else 1e-6
    np.testing.assert_allclose(m[0], wm, rtol=tol * 10, atol=tol)
    np.testing.assert_allclose(f, wf, rtol=tol * 10, atol=tol * 10)
    outs = coupled._core.interpret(len(x), {"x": list(x.astype(np.float64)), "k": [0.8]},
                                   float32=dtype == np.float32)[0]
    np.testing.assert_allclose(outs["m"][0], m[0], rtol=tol, atol=tol * 1e-3)
    np.testing.assert_allclose(np.asarray(outs["f"]), f, rtol=tol * 10, atol=tol * 10)


def test_draws_are_the_same_in_every_stage(tmp_path):
    """z = e - mean(e) with e = rng.normal(): stage 1 sums the draws stage 2 subtracts from, so
    z + mean(e) is exactly the draws of a kernel that only draws (eagle and the interpreter)."""
    key = np.array([0, 42], np.uint32)
    n = 5000
    plans = plan_kernels([noisy, plain_draws], str(tmp_path))
    z, e = np.zeros(n), np.zeros(n)
    plans["noisy"].bind(z=z, rng=key).launch()
    plans["plain_draws"].bind(z=e, rng=key).launch()
    assert np.std(e) > 0.5  # real draws
    mean = math.fsum(e / n)
    np.testing.assert_allclose(z, e - mean, rtol=0, atol=1e-15)
    assert abs(math.fsum(z)) <= 1e-12 * math.fsum(np.abs(z))
    zi = np.asarray(noisy._core.interpret(n, {"rng": [0.0, 42.0]})[0]["z"])
    ei = np.asarray(plain_draws._core.interpret(n, {"rng": [0.0, 42.0]})[0]["z"])
    np.testing.assert_allclose(zi, ei - math.fsum(ei / n), rtol=0, atol=1e-15)


THREADS_SRC = '''
import sys
import numpy as np
import eagle, hawk, hawk.math as hm
from hawk import Mutable, Param, Scalar
''' + STAGED_SRC + '''
(p1, p2) = eagle.plan.auto([coupled, normalized], cache_dir=sys.argv[1])
out = []
for n in (5000, 70_000, 300_000):
    for dt in (np.float64, np.float32):
        x = np.random.default_rng(n).standard_normal(n).astype(dt)
        m, f, v, z = np.zeros(1, dt), np.zeros(n, dt), np.zeros(1, dt), np.zeros(n, dt)
        p1.bind(x=x, k=0.3, m=m, f=f).launch()
        p2.bind(x=x, v=v, z=z).launch()
        out += [float(m[0]).hex(), float(v[0]).hex(), str(hash(f.tobytes())), str(hash(z.tobytes()))]
print(" ".join(out))
'''


def test_same_bits_whatever_the_thread_count(tmp_path):
    """Processes with 1, 2 and 3 threads give the same bits for every stage's sums and planes."""
    same_output_over_thread_counts(tmp_path, THREADS_SRC, env={"PYTHONHASHSEED": "0"})


def test_bad_bind_changes_nothing_and_names_the_kernel(tmp_path):
    """A wrong shape or a missing value is refused before any stage runs."""
    (plan,) = eagle.plan.auto([coupled], cache_dir=str(tmp_path))
    x = np.ones(10)
    m, f = np.full(1, 7.0), np.full(10, 7.0)
    with pytest.raises(ValueError, match=r"eagle: kernel 'coupled': plane 'f' must have shape \(10,\)"):
        plan.bind(x=x, k=1.0, m=m, f=np.zeros(9))
    with pytest.raises(TypeError, match=r"eagle: kernel 'coupled': missing value\(s\) for \['m'\]"):
        plan.bind(x=x, k=1.0, f=f)
    with pytest.raises(TypeError, match=r"'m_value' is not a parameter"):
        plan.bind(x=x, k=1.0, m=m, f=f, m_value=0.0)
    assert (m == 7.0).all() and (f == 7.0).all()


def test_graph_runs_one_node_per_stage(tmp_path):
    """Graph.add of a staged binding adds its stages in order; launch(3) runs them 3 times."""
    (plan,) = eagle.plan.auto([coupled], cache_dir=str(tmp_path))
    x = np.linspace(-1.0, 1.0, 101)
    m, f = np.zeros(1), np.zeros(101)
    g = eagle.Graph().add(plan.bind(x=x, k=2.0, m=m, f=f)).build()
    assert [name for name, _ in g.nodes] == ["coupled:stage1", "coupled"]
    g.launch(3)
    wm, _, wf = _want_coupled(x, 2.0)
    np.testing.assert_allclose(m[0], wm, atol=1e-15)
    np.testing.assert_allclose(f, wf, atol=1e-14)


def _refused(fn, match: str, steps: int = 1) -> None:
    with pytest.raises(hawk.KernelError, match=match):
        hawk.kernel(fn, steps=steps)


def test_refusals_in_the_compiler():
    def stepped(x: Mutable[Scalar]):
        x = x - 0.1 * hawk.mean(x)

    _refused(stepped, r"a stage boundary \(hawk\.sum/mean/min/max read in the body\) in kernel 'stepped' of steps=4 is "
                      r"not supported: every step would need its own reduction", steps=4)

    def masked(x: Scalar, y: Mutable[Scalar], done: Terminated):
        y = x - hawk.sum(x)

    _refused(masked, r"a stage boundary \(the value of a hawk\.sum/mean/min/max read in the body\) in kernel 'masked', "
                     r"which has a Terminated parameter or active_set, is not supported")

    def in_if(x: Scalar, y: Mutable[Scalar]):
        y = x
        if x > 0.0:
            y = x - hawk.mean(x)

    _refused(in_if, r"hawk\.mean\(\) inside `if`, `for` or a helper is not supported; write it at the top level")

    @hawk.func
    def centred(v):
        return v - hawk.mean(v)

    def in_helper(x: Scalar, y: Mutable[Scalar]):
        y = centred(x)

    _refused(in_helper, r"hawk\.mean\(\) inside `if`, `for` or a helper is not supported")


def test_refusals_of_what_does_not_run_stages(monkeypatch):
    with pytest.raises(ModeError, match=r"Kernel\.tangent: kernel 'coupled' has a stage boundary \(the reduction at "
                                        r"\S+:\d+ is read in the same body, so it runs as 2 stages, each "
                                        r"over every sample\); Kernel\.tangent does not run stage boundaries: "
                                        r"differentiate it through the JAX bridge"):
        coupled.tangent(["x"])
    with pytest.raises(ModeError, match=r"Kernel\.adjoint: kernel 'coupled' has a stage boundary"):
        coupled.adjoint(["x"])
    with pytest.raises(ModeError, match=r"Kernel\.with_steps: kernel 'normalized' has a stage boundary .* 3 stages"):
        normalized.with_steps(2)
    with pytest.raises(ModeError, match=r"Kernel\.trace: kernel 'coupled' has a stage boundary"):
        coupled.trace([0], x=np.zeros(2), k=1.0)
    with pytest.raises(ValueError, match=r"the C\+\+ emitter: kernel 'coupled' has a stage boundary"):
        coupled.cpp()
    monkeypatch.setattr(eagle.plan, "_usable", lambda t: None)
    with pytest.raises(ModeError, match=r"eagle: kernel 'coupled' has a stage boundary \(line \d+\); the CUDA target "
                                        r"does not run staged kernels yet"):
        eagle.plan.auto([coupled], targets=("cuda",))


# --------------------------------------------------------------------------- the JAX bridge

def _jax():
    jax = pytest.importorskip("jax")
    jax.config.update("jax_enable_x64", True)
    from eagle.frameworks import jax as eagle_jax

    return jax, jax.numpy, eagle_jax


def _coupled_ref(jnp, x, k):
    s = jnp.sin(x)
    m = jnp.mean(s)
    return m, k * (s - m) + jnp.sum(jnp.where(x > 0.5, x, 0.0))


def _normalized_ref(jnp, x):
    d = x - jnp.mean(x)
    v = jnp.mean(d * d)
    return v, d / jnp.sqrt(v)


@pytest.mark.parametrize("lowering", ["ffi", "xla"])
@pytest.mark.parametrize("dtype", [np.float64, np.float32])
def test_jax_values_and_derivatives(lowering, dtype):
    """Both lowerings: the stages' functions composed give jax.numpy's values (m 0-d), and grad
    and jvp of a loss of both outputs equal jax.numpy's (the later stage's cotangent of the
    mean flows into the earlier stage's sum, whose adjoint broadcasts)."""
    jax, jnp, eagle_jax = _jax()
    fn = eagle_jax.function(coupled, wrt=("x", "k"), lowering=lowering)
    assert fn.inputs == ["x", "k"] and fn.outputs == ["m", "f"]
    x = jnp.asarray(np.random.default_rng(5).uniform(-2.0, 2.0, 301).astype(dtype))
    k = dtype(1.3)
    m, f = fn(x, k)
    wm, wf = _coupled_ref(jnp, x.astype(np.float64), 1.3)
    tol = 1e-12 if dtype == np.float64 else 2e-5
    assert np.shape(m) == () and m.dtype == dtype
    np.testing.assert_allclose(m, wm, rtol=tol, atol=tol)
    np.testing.assert_allclose(f, wf, rtol=tol * 10, atol=tol * 100)

    def loss(g):
        return lambda x, k: jnp.sum(g(x, k)[1] ** 2 * jnp.cos(x)) + 3.0 * g(x, k)[0]

    got = jax.grad(loss(fn), argnums=(0, 1))(x, k)
    want = jax.grad(loss(lambda x, k: _coupled_ref(jnp, x, k)), argnums=(0, 1))(x, k)
    for a, b in zip(got, want):
        np.testing.assert_allclose(a, b, rtol=tol * 100, atol=tol * 100 * float(jnp.max(jnp.abs(want[0]))))
    dx = jnp.asarray(np.random.default_rng(6).normal(size=301).astype(dtype))
    _, t = jax.jvp(fn, (x, k), (dx, dtype(0.5)))
    _, wt = jax.jvp(lambda x, k: _coupled_ref(jnp, x, k), (x, k), (dx, dtype(0.5)))
    for a, b in zip(t, wt):
        np.testing.assert_allclose(a, b, rtol=tol * 100, atol=tol * 100)


@pytest.mark.parametrize("lowering", ["ffi", "xla"])
def test_jax_check_grads_order_2(lowering):
    """check_grads at order 2 in both modes, for the two-stage and the three-stage kernel, and
    the three-stage kernel's values and gradient against jax.numpy's."""
    jax, jnp, eagle_jax = _jax()
    from jax.test_util import check_grads

    x = jnp.asarray(np.random.default_rng(7).uniform(-2.0, 2.0, 64))
    fn = eagle_jax.function(coupled, wrt=("x", "k"), lowering=lowering)
    check_grads(fn, (x, 0.7), order=2, modes=("fwd", "rev"))
    nf = eagle_jax.function(normalized, wrt=("x",), lowering=lowering)
    v, z = nf(x)
    wv, wz = _normalized_ref(jnp, x)
    np.testing.assert_allclose(v, wv, rtol=1e-12)
    np.testing.assert_allclose(z, wz, rtol=1e-11, atol=1e-12)
    check_grads(nf, (x,), order=2, modes=("fwd", "rev"))
    loss = lambda g: (lambda x: jnp.sum(jnp.sin(g(x)[1])) + g(x)[0])  # noqa: E731
    np.testing.assert_allclose(jax.grad(loss(nf))(x), jax.grad(loss(lambda x: _normalized_ref(jnp, x)))(x),
                               rtol=1e-10, atol=1e-11)
    np.testing.assert_allclose(jax.jit(fn)(x, 0.7)[1], fn(x, 0.7)[1], rtol=1e-14)


@hawk.kernel
def spread(x: Scalar, lo: Mutable[Param], f: Mutable[Scalar]):
    lo = hawk.min(x, where=x > -1.5)
    f = (x - lo) / (hawk.max(x) - lo)


def _spread_ref(jnp, x):
    lo = jnp.min(jnp.where(x > -1.5, x, jnp.inf))
    return lo, (x - lo) / (jnp.max(x) - lo)


@pytest.mark.parametrize("lowering", ["ffi", "xla"])
def test_min_and_max_are_stage_boundaries_too(lowering):
    """A min (with where=) read in the body and a max inside an expression: two stages; values
    as jax.numpy gives them, on the direct call and both lowerings, and derivatives (the winner
    of each reduction takes the later stage's cotangent) against jax.numpy's and check_grads at
    order 2 (tie-free data)."""
    jax, jnp, eagle_jax = _jax()
    from jax.test_util import check_grads

    assert len(spread.stages) == 2
    x = np.random.default_rng(11).uniform(-2.0, 2.0, 200)
    wlo, wf = _spread_ref(jnp, jnp.asarray(x))
    lo, f = spread(x)
    assert lo[0] == float(wlo)
    np.testing.assert_allclose(f, wf, rtol=1e-13, atol=1e-15)
    fn = eagle_jax.function(spread, wrt=("x",), lowering=lowering)
    glo, gf = fn(jnp.asarray(x))
    assert np.shape(glo) == () and float(glo) == float(wlo)
    np.testing.assert_allclose(gf, wf, rtol=1e-13, atol=1e-15)
    loss = lambda g: (lambda x: jnp.sum(jnp.sin(g(x)[1])) + 2.0 * g(x)[0])  # noqa: E731
    got = jax.grad(loss(fn))(jnp.asarray(x))
    want = jax.grad(loss(lambda x: _spread_ref(jnp, x)))(jnp.asarray(x))
    np.testing.assert_allclose(got, want, rtol=1e-11, atol=1e-12)
    assert np.count_nonzero(np.asarray(want)) > 100  # the broadcast part, plus both winners
    check_grads(fn, (jnp.asarray(x),), order=2, modes=("fwd", "rev"))


SHARD_SRC = '''
import math, jax, jax.numpy as jnp, numpy as np
from jax.sharding import Mesh, NamedSharding, PartitionSpec as P
import hawk, hawk.math as hm
from hawk import Mutable, Param, Scalar
from eagle.frameworks import jax as eagle_jax
''' + STAGED_SRC + '''
assert len(jax.devices()) == 4
x = jnp.asarray(np.random.default_rng(0).standard_normal(4096))
mesh = Mesh(np.array(jax.devices()), ("s",))
sh = NamedSharding(mesh, P("s"))
for lowering in ("ffi", "xla"):
    f = eagle_jax.function(coupled, wrt=("x", "k"), lowering=lowering)
    whole = f(x, 0.7)
    g = jax.jit(lambda x, k: f(x, k), in_shardings=(sh, None))
    part = g(jax.device_put(x, sh), 0.7)
    np.testing.assert_allclose(float(part[0]), float(whole[0]), rtol=1e-13)
    np.testing.assert_allclose(np.asarray(part[1]), np.asarray(whole[1]), rtol=1e-12, atol=1e-12)
    loss = lambda x, k: jnp.sum(f(x, k)[1] ** 2)
    gx = jax.jit(jax.grad(loss), in_shardings=(sh, None))(jax.device_put(x, sh), 0.7)
    want = np.asarray(jax.grad(loss)(x, 0.7))
    np.testing.assert_allclose(np.asarray(gx), want, rtol=1e-10, atol=1e-13 * np.abs(want).max())
print("ok")
'''


def test_sharded_call_is_the_whole_call(tmp_path):
    """Under jit with x sharded over 4 host devices, both lowerings give the whole call's mean
    (each stage's sum is summed over the shards before the next stage reads it), planes and
    gradient."""
    run_on_host_devices(tmp_path, SHARD_SRC)


# --------------------------------------------------------------------------- stepping loops

@hawk.kernel
def relax(x: Mutable[Scalar], k: Param):
    x = x - k * (x - hawk.mean(x))


@hawk.kernel
def clock(t: Mutable[Scalar], done: Terminated):
    t = t + 1.0
    done = t >= 5.0


def _relaxed(x: np.ndarray, k: float, steps: int) -> np.ndarray:
    x = x.copy()
    for _ in range(steps):
        x = x - k * (x - math.fsum(x / len(x)))
    return x


def test_until_done_and_simulate_run_the_stages_each_step(tmp_path):
    """A loop of a staged step and a clock: each launch runs both stages (the mean of that
    step's x), never fused into a multi-step pass; 5 steps as NumPy takes them."""
    plans = plan_kernels([relax, clock], str(tmp_path))
    x0 = np.random.default_rng(11).normal(size=777)
    x, t, done = x0.copy(), np.zeros(777), np.zeros(777, np.bool_)
    runner = eagle.until_done([plans["relax"], plans["clock"]], max_steps=100, x=x, k=0.3, t=t, done=done)
    assert [name for name, _ in runner.items] == ["relax:stage1", "relax", "clock"] and not runner.fused
    report = runner.run()
    assert report.steps == 5 and report.done
    np.testing.assert_allclose(x, _relaxed(x0, 0.3, 5), rtol=1e-13, atol=1e-15)
    res = eagle.simulate([relax, clock], max_steps=100, x=x0.copy(), k=0.3, t=np.zeros(777))
    assert res.steps == 5 and res.done
    np.testing.assert_allclose(res.state["x"], _relaxed(x0, 0.3, 5), rtol=1e-13, atol=1e-15)
    rec = eagle.simulate([relax, clock], max_steps=100, x=x0.copy(), k=0.3, t=np.zeros(777), record=True)
    assert rec.steps == 5
    np.testing.assert_allclose(rec.state["x"], _relaxed(x0, 0.3, 5), rtol=1e-13, atol=1e-15)
    with pytest.raises(ModeError, match=r"eagle\.diff\.reverse: node 'relax:stage1' is a stage of kernel 'relax'"):
        eagle.diff.reverse(rec.record, seeds={"x": np.ones(777)})


def test_diff_reverse_refuses_stages(tmp_path):
    (plan,) = eagle.plan.auto([coupled], cache_dir=str(tmp_path))
    x = np.linspace(-1.0, 1.0, 11)
    g = eagle.Graph().add(plan.bind(x=x, k=2.0, m=np.zeros(1), f=np.zeros(11))).build(record=True)
    g.launch(1)
    with pytest.raises(ModeError, match=r"eagle\.diff\.reverse: node 'coupled:stage1' is a stage of kernel 'coupled', which "
                                        r"has a stage boundary \(line \d+\); this reverse sweep does not differentiate across "
                                        r"stages: differentiate it through eagle\.frameworks\.jax"):
        eagle.diff.reverse(g.record, seeds={"f": np.ones(11)})


@pytest.mark.skipif(nvrtc_missing(), reason="NVRTC not found")
def test_stages_compile_with_nvrtc():
    """Every stage's CUDA emission (block partials of its sums, then the planes) compiles to a
    cubin for sm_80 and sm_90, in both dtypes."""
    from raptor_core import _core

    cores = [s._core for k in (coupled, normalized, noisy, relax) for s in k.stages]
    for arch in ("sm_80", "sm_90"):
        assert _core.nvrtc_check(cores, arch) == 2 * len(cores)


@hawk.kernel
def lookup(i: Scalar, w: Table[Scalar], f: Mutable[Scalar]):
    f = w.at(i) - hawk.mean(w.at(i))


def test_a_stage_error_names_the_table_and_a_call_writes_nothing():
    """A Table index out of range in the first stage: the interpreter reports the table by the
    kernel's own slot, a direct call raises naming kernel and table and leaves f unchanged."""
    w = np.array([1.0, 2.0, 4.0])
    f = np.full(4, 9.0)
    np.testing.assert_allclose(lookup(np.array([0.0, 1.0, 2.0, 2.5]), w, f), [-1.75, -0.75, 1.25, 1.25])
    f[:] = 9.0
    with pytest.raises(RuntimeError, match=r"kernel 'lookup': table 'w' index 3 is out of range \[0, 3\) at sample 2"):
        lookup(np.array([0.0, 1.0, 3.0, 0.0]), w, f)
    assert (f == 9.0).all()
    err = lookup._core.interpret(4, {"i": [0.0, 1.0, 3.0, 0.0], "w": list(w)})[4]
    assert err == (1, [s.name for s in lookup.slots].index("w"), 3, 2)


def test_a_kernel_twice_in_one_build(tmp_path):
    """A stage passed beside its staged kernel, or one kernel twice, is built once (one symbol
    per digest in the translation unit); every plan runs."""
    first, staged, again = eagle.plan.auto([coupled.stages[0], coupled, coupled], cache_dir=str(tmp_path))
    x = np.linspace(-1.0, 1.0, 33)
    m1, m2, f = np.zeros(1), np.zeros(1), np.zeros(33)
    first.bind(x=x, m=m1, hawk_sum0=np.zeros(1)).launch()
    again.bind(x=x, k=1.0, m=m2, f=f).launch()
    assert m1[0] == m2[0] and staged.digest() == again.digest()
