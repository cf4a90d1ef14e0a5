"""Loops longer than a kernel unrolls (docs/language.md, "Long loops"): `for i in range(K)`
with more than 4096 iterations is a loop in the IR and in the generated C++ and CUDA, its
body lowered once, with `break` and `continue` under data-dependent conditions. Numbers
against plain NumPy references run sample by sample in the same dtype; the definition stays
small and fast at K = 100,000; tangent kernels carry the tangents through the iterations
each sample takes and adjoint kernels reverse them from checkpoints, at any order, checked
against closed forms and `check_grads`; both JAX lowerings run them; refusals (its own
locals after it, an adjoint through a table read in it, what the "xla" lowering does not
lower yet) name the kernel, the line and the fix. Draws
inside such loops: tests/test_long_loop_draws.py.
"""

from __future__ import annotations

import time

import numpy as np
import pytest

import eagle.plan
import hawk
from hawk import Mutable, Param, Scalar, Table, Terminated, Vector
from hawk.math import vec

from conftest import assert_sum_close, outputs_for

K = 100_000
N = 12
DTYPES = [np.float64, np.float32]


@hawk.kernel
def harmonic_until(x: Scalar, a: Param, limit: Param, total: Mutable[Scalar], count: Mutable[Scalar]):
    s = 0.0
    c = 0.0
    for i in range(K):
        s = s + a * x / (1.0 + float(i))
        if s > limit:
            break
        c = c + 1.0
    total = s
    count = c


@hawk.kernel
def skips(x: Scalar, r: Mutable[Vector[2]], kept: Mutable[Scalar[hawk.int64]]):
    v = vec(x, 1.0)
    n = 0
    for i in range(3, 3 + 2 * 6000, 2):
        if i % 3 == 0:
            continue
        for j in range(2):  # an inner loop short enough to unroll
            v = vec(v[1], 0.5 * v[0] + 0.25 * float(j))
        n = n + 1
    r = v
    kept = n


@hawk.kernel(steps=3)
def settle(dt: Param, terminated: Terminated, y: Mutable[Scalar], t: Mutable[Scalar]):
    for _ in range(5000):
        y = y - dt * y
        if y < 0.5:
            break
    t = t + 1.0
    terminated = y < 0.5


@hawk.kernel
def newton_sqrt(c: Scalar, y: Mutable[Scalar], iters: Mutable[Scalar[hawk.int64]]):
    r = 1.0 + 0.5 * c
    n = 0
    for _ in range(10000):  # a bounded while: Newton's iteration to a tolerance
        r = 0.5 * (r + c / r)
        n = n + 1
        if abs(r * r - c) < 1e-6 * c:
            break
    y = r
    iters = n


def ref_harmonic(x, a, limit, dtype):
    f = dtype
    total, count = np.zeros(len(x), dtype), np.zeros(len(x), dtype)
    for k, xk in enumerate(x):
        s, c = f(0.0), f(0.0)
        for i in range(K):
            s = f(s + f(f(a) * xk) / f(f(1.0) + f(i)))
            if s > f(limit):
                break
            c = f(c + f(1.0))
        total[k], count[k] = s, c
    return total, count


@pytest.fixture(scope="module")
def plans(module_cache_dir):
    ks = [harmonic_until, skips, settle, newton_sqrt, harmonic_until.tangent(["x", "a"]),
          harmonic_until.tangent(["x", "a"]).tangent(["a"]), settle.tangent(["y", "dt"]),
          newton_sqrt.tangent(["c"]), harmonic_until.adjoint(["x", "a"]), settle.adjoint(["y", "dt"])]
    ps = eagle.plan.auto(ks, targets=("host",), cache_dir=module_cache_dir)
    return {p.kernel.name: p for p in ps}


def test_a_loop_of_100000_iterations_is_one_loop_and_defines_in_well_under_2_s(tmp_path):
    src = (
        "import hawk\nfrom hawk import Scalar, Param, Mutable\n"
        "@hawk.kernel\n"
        "def fresh(x: Scalar, a: Param, y: Mutable[Scalar]):\n"
        "    s = x\n"
        "    for i in range(100000):\n"
        "        s = s * a + 1.0 / (1.0 + float(i))\n"
        "        if s > 1e6:\n"
        "            break\n"
        "    y = s\n"
    )
    path = tmp_path / "fresh_loop.py"
    path.write_text(src)
    ns: dict = {}
    t0 = time.perf_counter()
    exec(compile(src, str(path), "exec"), ns)
    k = ns["fresh"]
    t1 = time.perf_counter()
    (plan,) = eagle.plan.auto([k], targets=("host",), cache_dir=tmp_path / "cache")
    t2 = time.perf_counter()
    assert k.ir.count("loop_begin x100000") == 1
    assert k._core.num_values() < 40  # the body once, not 100,000 times
    assert t1 - t0 < 2.0, t1 - t0
    assert t2 - t0 < 10.0, (t1 - t0, t2 - t1)  # the C++ build of a small unit (2 s when idle)
    y = np.zeros(3)
    plan.bind(x=np.array([0.0, 0.5, 2.0]), a=0.999, y=y).launch()
    for xk, yk in zip([0.0, 0.5, 2.0], y):
        s = xk
        for i in range(100000):
            s = s * 0.999 + 1.0 / (1.0 + float(i))
            if s > 1e6:
                break
        assert yk == s


@pytest.mark.parametrize("dtype", DTYPES)
def test_break_at_a_data_dependent_iteration(plans, dtype):
    x = np.array([0.0, 0.01, 0.05, 0.1, 0.3, 0.5, 1.0, 2.0, 3.0, 5.0, 8.0, 13.0], dtype)[:N]
    out = outputs_for(harmonic_until, N, dtype)
    plans["harmonic_until"].bind(x=x, a=0.5, limit=3.0, **out).launch()
    total, count = ref_harmonic(x, 0.5, 3.0, dtype)
    np.testing.assert_array_equal(out["count"], count)
    np.testing.assert_allclose(out["total"], total, rtol=1e-12 if dtype == np.float64 else 1e-6)
    assert count[0] == K and len(set(count.tolist())) > 5  # some run all K, the others break at their own iteration


@pytest.mark.parametrize("dtype", DTYPES)
def test_continue_a_runtime_loop_variable_vectors_ints_and_an_inner_unrolled_loop(plans, dtype):
    x = np.linspace(-1.0, 1.0, N).astype(dtype)
    r = np.zeros((2, N), dtype)
    kept = np.zeros(N, np.int64)
    plans["skips"].bind(x=x, r=r, kept=kept).launch()
    f = dtype
    for k in range(N):
        v = [f(x[k]), f(1.0)]
        n = 0
        for i in range(3, 3 + 2 * 6000, 2):
            if i % 3 == 0:
                continue
            for j in range(2):
                v = [v[1], f(f(f(0.5) * v[0]) + f(f(0.25) * f(j)))]
            n += 1
        np.testing.assert_allclose(r[:, k], v, rtol=1e-12 if dtype == np.float64 else 1e-6)
        assert kept[k] == n == 4000


@pytest.mark.parametrize("dtype", DTYPES)
def test_a_stepping_kernel_with_a_long_loop_and_a_mask(plans, dtype):
    y = np.array([0.4, 0.6, 1.0, 2.0, 10.0, 1e3], dtype)
    t = np.zeros(6, dtype)
    mask = np.array([True, False, False, False, False, False])
    b = plans["settle"].bind(dt=1e-4, terminated=mask, y=y, t=t)
    finished = b.launch()
    f = dtype
    want_y, want_t, want_mask = [], [], []
    for k, y0 in enumerate([0.4, 0.6, 1.0, 2.0, 10.0, 1e3]):
        yk, tk, done = f(y0), f(0.0), k == 0
        for _ in range(3):
            if done:
                break
            for _ in range(5000):
                yk = f(yk - f(f(1e-4) * yk))
                if yk < f(0.5):
                    break
            tk = f(tk + f(1.0))
            done = bool(yk < f(0.5))
        want_y.append(yk), want_t.append(tk), want_mask.append(done)
    np.testing.assert_allclose(y, want_y, rtol=1e-12 if dtype == np.float64 else 1e-6)
    np.testing.assert_array_equal(t, want_t)
    np.testing.assert_array_equal(mask, want_mask)
    assert finished == sum(want_mask) - 1 and len(set(t.tolist())) >= 3  # each stops at its own step


def test_the_interpreter_and_the_build_agree_bit_for_bit(plans):
    x = np.linspace(0.0, 4.0, N)
    out = outputs_for(harmonic_until, N, np.float64)
    plans["harmonic_until"].bind(x=x, a=0.5, limit=3.0, **out).launch()
    got = harmonic_until._core.interpret(N, {"x": list(x), "a": [0.5], "limit": [3.0]})[0]
    np.testing.assert_array_equal(out["total"], got["total"])
    np.testing.assert_array_equal(out["count"], got["count"])


def test_cuda_emission_of_long_loops_compiles_with_nvrtc():
    from raptor_core import _core

    try:
        _core.nvrtc_check([], "sm_80")
    except RuntimeError as e:
        pytest.fail(f"NVRTC is needed for this check: {e}")
    ks = [harmonic_until, skips, settle, harmonic_until.tangent(["x", "a"]).tangent(["a"]),
          settle.tangent(["y", "dt"], with_primal=False), harmonic_until.adjoint(["x", "a"]),
          settle.adjoint(["y", "dt"])]
    assert "for (int64_t lp" in harmonic_until._core.cuda("float64")
    assert _core.nvrtc_check([k._core for k in ks], "sm_80") == 2 * len(ks)


@pytest.mark.parametrize("lowering", ["ffi", "xla", "auto"])
def test_the_jax_bridge_runs_them_on_both_lowerings(lowering):
    jax = pytest.importorskip("jax")
    from eagle.frameworks import jax as eagle_jax

    jax.config.update("jax_enable_x64", True)
    x = np.linspace(0.0, 4.0, N)
    want = harmonic_until._core.interpret(N, {"x": list(x), "a": [0.5], "limit": [3.0]})[0]
    total, count = eagle_jax.function(harmonic_until, lowering=lowering)(x, 0.5, 3.0)
    np.testing.assert_array_equal(np.asarray(count), want["count"])
    np.testing.assert_allclose(np.asarray(total), want["total"], rtol=1e-12)  # XLA may contract to FMAs
    # a stepping kernel with a mask: the loop runs for the samples still live
    y0 = np.array([0.4, 0.6, 1.0, 2.0, 10.0, 1e3])
    mask = np.array([True, False, False, False, False, False])
    got = eagle_jax.function(settle, lowering=lowering)(1e-4, mask, y0, np.zeros(6))
    ref = eagle_jax.function(settle, lowering="ffi")(1e-4, mask, y0, np.zeros(6))
    for g, r in zip(got, ref):
        np.testing.assert_allclose(np.asarray(g, float), np.asarray(r, float), rtol=1e-12)


def test_the_xla_lowering_of_long_loops_and_its_limits():
    jax = pytest.importorskip("jax")
    from eagle.frameworks import _jax_lowering, _jax_xla
    from eagle.frameworks import jax as eagle_jax

    jax.config.update("jax_enable_x64", True)
    ops = _jax_xla.op_list(harmonic_until._core)
    assert _jax_xla.supported(ops) and _jax_xla.supported(ops, np.float32)
    assert _jax_lowering.choose(ops, N, "cpu", np.float64) == "xla"
    x = np.linspace(0.0, 4.0, N)
    f32 = eagle_jax.function(harmonic_until, lowering="xla")(x.astype(np.float32), np.float32(0.5), np.float32(3.0))
    want = ref_harmonic(x.astype(np.float32), 0.5, 3.0, np.float32)
    np.testing.assert_array_equal(np.asarray(f32[1]), want[1])
    # an int output made in a loop (its `%` by a constant cannot fail): the same on both paths,
    # and "auto" takes "xla" for so small a call
    r_xla, kept_xla = eagle_jax.function(skips, lowering="xla")(x)
    r_ffi, kept_ffi = eagle_jax.function(skips, lowering="ffi")(x)
    assert kept_xla.dtype == kept_ffi.dtype == np.int64
    np.testing.assert_array_equal(np.asarray(kept_xla), np.asarray(kept_ffi))
    assert int(kept_xla[0]) == sum(1 for i in range(3, 3 + 2 * 6000, 2) if i % 3 != 0)
    np.testing.assert_allclose(np.asarray(r_xla), np.asarray(r_ffi), rtol=1e-12)
    assert _jax_lowering.choose(_jax_xla.op_list(skips._core), N, "cpu") == "xla"
    # forward mode on "xla" is the tangent kernel (a loop has no residual planes); reverse mode
    # the adjoint kernel, whose checkpoint spacing uses // and int(x): both lowerings agree
    f = eagle_jax.function(harmonic_until, wrt=("x", "a"), lowering="xla")
    g = eagle_jax.function(harmonic_until, wrt=("x", "a"), lowering="ffi")
    total = np.asarray(f(x, 0.5, 3.0)[0])
    _, t = jax.jvp(lambda x: f(x, 0.5, 3.0)[0], (x,), (np.ones(N),))
    np.testing.assert_allclose(np.asarray(t)[1:], total[1:] / x[1:], rtol=1e-12)
    loss = lambda h: lambda x, a: h(x, a, 3.0)[0].sum()  # noqa: E731
    gx, ga = jax.grad(loss(f), argnums=(0, 1))(x, 0.5)
    wx, wa = jax.grad(loss(g), argnums=(0, 1))(x, 0.5)
    np.testing.assert_allclose(np.asarray(gx), np.asarray(wx), rtol=1e-12)
    np.testing.assert_allclose(float(ga), float(wa), rtol=1e-12)
    # "auto" keeps kernels that can fail at run time (int(x), the adjoint's) on "ffi"
    adj = _jax_xla.op_list(harmonic_until.adjoint(["x"])._core)
    assert adj.can_fail and _jax_lowering.choose(adj, N, "cpu", np.float64) == "ffi"


def test_the_xla_paths_int_ops_are_pythons():
    from eagle.frameworks._jax_xla import _int_op

    jax = pytest.importorskip("jax")
    jnp = jax.numpy
    jax.config.update("jax_enable_x64", True)
    lo = -(2**63)
    xs = [-9, -7, -2, -1, 0, 1, 2, 7, 9, 10**6 + 3, -(10**9) - 1, 2**62 + 5, lo, lo + 1, 2**63 - 1]
    ys = [-7, -3, -2, -1, 0, 1, 2, 3, 7, 2**40 + 1, lo]
    a = jnp.array([x for x in xs for _ in ys], jnp.int64)
    b = jnp.array([y for _ in xs for y in ys], jnp.int64)
    q, qf = _int_op("floordiv", [a, b], jnp.int64)
    r, rf = _int_op("mod", [a, b], jnp.int64)
    # Python's // and %, wrapped to int64 as C++ (and NumPy) do: only INT64_MIN // -1 wraps
    wrap = lambda v: (v - lo) % 2**64 + lo  # noqa: E731
    want_q = [wrap(x // y) if y else 0 for x in xs for y in ys]
    want_r = [x % y if y else 0 for x in xs for y in ys]
    assert [int(v) for v in q] == want_q and [int(v) for v in r] == want_r
    assert q.dtype == r.dtype == jnp.int64
    assert [bool(v) for v in qf] == [y == 0 for _ in xs for y in ys] == [bool(v) for v in rf]
    t, tf = _int_op("to_int", [jnp.array([1.7, -1.7, 0.0, float("nan"), float("inf"), 1e19, -3e18, 2.0**62])], jnp.int64)
    assert [int(v) for v in t] == [1, -1, 0, 0, 0, 0, -3 * 10**18, 2**62]
    assert [bool(v) for v in tf] == [False, False, False, True, True, True, False, False]
    # int32 (the I values without jax_enable_x64): int(x) beyond it fails rather than wrap
    t, tf = _int_op("to_int", [jnp.array([2.0**31 - 1, -(2.0**31), 2.0**31, -(2.0**31) - 1, 7.9])], jnp.int32)
    assert t.dtype == jnp.int32 and [int(v) for v in t] == [2**31 - 1, -(2**31), 0, 0, 7]
    assert [bool(v) for v in tf] == [False, False, True, True, False]


# ---------------------------------------------------------------- refusals


@pytest.mark.parametrize("dtype", DTYPES)
def test_adjoints_of_a_long_loop_recompute_from_checkpoints(plans, dtype):
    # total = a x H_n: x_bar = total_bar * total / x, a_bar = sum(total_bar * total) / a, through
    # up to 91,000 iterations reversed (each recomputed from a checkpoint).
    x = np.array([0.3, 0.5, 1.0, 2.0, 3.0, 5.0, 8.0, 13.0, 0.7, 1.5, 2.5, 4.0], dtype)[:N]
    a, limit = dtype(0.5), dtype(3.0)
    ak = harmonic_until.adjoint(["x", "a"])
    assert ak.ir.count("loop_begin x100000") == 4  # the forward loop, R, and R's loops A and B
    want_total, _ = ref_harmonic(x, a, limit, dtype)
    tb = np.linspace(-1.0, 2.0, N).astype(dtype)
    x_bar, a_bar = np.zeros(N, dtype), np.full(1, np.nan, dtype)
    plans[ak.name].bind(x=x, a=a, limit=limit, total_bar=tb, count_bar=np.zeros(N, dtype), x_bar=x_bar,
                        a_bar=a_bar).launch()
    rtol = 1e-12 if dtype == np.float64 else 1e-4
    np.testing.assert_allclose(x_bar, tb * want_total / x, rtol=rtol)
    assert_sum_close(a_bar[0], tb.astype(float) * want_total / 0.5, rtol=rtol)


def test_an_adjoint_through_a_table_read_in_a_long_loop_is_refused():
    @hawk.kernel
    def looked_up(x: Scalar, w: Table[Scalar], y: Mutable[Scalar]):
        s = x
        for _ in range(5000):
            s = s * 0.5 + w.at(0)
        y = s

    with pytest.raises(ValueError) as e:
        looked_up.adjoint(["w"])
    msg = str(e.value)
    assert "'looked_up'" in msg and "table 'w'" in msg and "not available yet" in msg and "jacfwd" in msg
    looked_up.adjoint(["x"])  # with respect to the other inputs it is


def test_a_local_of_the_loop_body_read_after_it_is_refused():
    with pytest.raises(hawk.KernelError) as e:
        @hawk.kernel
        def leaky(x: Scalar, y: Mutable[Scalar]):
            s = x
            for _ in range(10000):
                d = 0.5 * s
                s = s - d
            y = d
    msg = str(e.value)
    assert "'leaky'" in msg and "'d' is first assigned inside the loop" in msg and "assign 'd' before the loop" in msg


def test_a_variable_that_changes_kind_in_a_long_loop_is_refused():
    with pytest.raises(hawk.KernelError) as e:
        @hawk.kernel
        def kinds(x: Scalar, y: Mutable[Scalar]):
            s = x
            for _ in range(10000):
                s = vec(s, s)
            y = x
    assert "'s' is a Scalar before the loop" in str(e.value) and "keeps its kind" in str(e.value)


_WEAK = """
import hawk
from hawk import Mutable, Scalar


@hawk.func
def total(a):
    c = 0
    for i in range(5000):
        c = c + a
    return c


@hawk.kernel
def weak(x: Scalar, y: Mutable[Scalar], z: Mutable[Scalar], w: Mutable[Scalar]):
    c = 0
    n = 0
    for i in range(6000):
        c = c + x * 0.5
        n = n + 1
        if c > 3.0:
            break
    y = c
    z = float(n) + total(2)
    w = total(x)
"""


def test_a_constant_int_carried_into_a_float_update_is_a_float_as_in_python(tmp_path):
    """`c = 0` then `c = c + x` in a long loop: c is a float from the first iteration, as in
    Python (an int made of constants is weak, docs/language.md). A helper's loop is decided per
    call: total(x) carries a float, total(2) an int. Against the same Python loops, through the
    interpreter, a host build and jax.grad; a runtime int carried into a float update is
    still refused, with the fix."""
    jax = pytest.importorskip("jax")
    from eagle.frameworks import jax as eagle_jax

    jax.config.update("jax_enable_x64", True)
    path = tmp_path / "weak_carry.py"
    path.write_text(_WEAK)
    ns: dict = {}
    exec(compile(_WEAK, str(path), "exec"), ns)
    k = ns["weak"]
    assert k.ir.count("loop_begin") == 3  # the kernel's loop and the two calls' loops
    x = np.array([0.2, 1.0, 2.0, -1.0, 7.0])
    want = {"y": [], "z": [], "w": [], "n": []}
    for xk in x:
        c, n = 0, 0
        for _ in range(6000):
            c = c + xk * 0.5
            n = n + 1
            if c > 3.0:
                break
        t2, tx = 0, 0
        for _ in range(5000):
            t2, tx = t2 + 2, tx + xk
        want["y"].append(c)
        want["z"].append(float(n) + t2)
        want["w"].append(tx)
        want["n"].append(n)
    got = k._core.interpret(len(x), {"x": list(x)})[0]
    (plan,) = eagle.plan.auto([k], targets=("host",), cache_dir=tmp_path / "cache")
    outs = {name: np.zeros(len(x)) for name in ("y", "z", "w")}
    plan.bind(x=x, **outs).launch()
    for name in ("y", "z", "w"):
        np.testing.assert_array_equal(got[name], want[name])
        np.testing.assert_array_equal(outs[name], want[name])
    f = eagle_jax.function(k, wrt=("x",))
    dy, dw = (jax.grad(lambda v, i=i: f(v)[i].sum())(x) for i in (0, 2))
    np.testing.assert_array_equal(np.asarray(dy), 0.5 * np.array(want["n"], float))
    np.testing.assert_array_equal(np.asarray(dw), np.full(len(x), 5000.0))
    with pytest.raises(hawk.KernelError) as e:
        @hawk.kernel
        def strong(x: Scalar, y: Mutable[Scalar]):
            c = int(x)
            for _ in range(6000):
                c = c + 0.5
            y = c
    msg = str(e.value)
    assert "'c' is an int before the loop" in msg and "write c = float(c) before the loop" in msg, msg


def test_a_loop_beyond_2_to_the_40_iterations_is_refused():
    with pytest.raises(hawk.KernelError, match="at most 1099511627776"):
        @hawk.kernel
        def forever(x: Scalar, y: Mutable[Scalar]):
            s = x
            for _ in range(2 ** 41):
                s = s * 0.5
            y = s


@pytest.fixture()
def harmonic_jax():
    """(jax, check_grads, eagle_jax, f, x, total): the harmonic kernel as a JAX function with
    "auto" (at N = 6 its calls take "xla", its adjoint, which can fail, "ffi")."""
    jax = pytest.importorskip("jax")
    from jax.test_util import check_grads

    from eagle.frameworks import jax as eagle_jax

    jax.config.update("jax_enable_x64", True)
    f = eagle_jax.function(harmonic_until, wrt=("x", "a"))
    x = jax.numpy.array([0.3, 0.5, 1.0, 2.0, 3.0, 5.0])
    return jax, check_grads, eagle_jax, f, x, f(x, 0.5, 3.0)[0]


def test_jax_grad_through_a_long_loop(harmonic_jax):
    jax, check_grads, eagle_jax, f, x, total = harmonic_jax
    jnp = jax.numpy
    gx, ga = jax.grad(lambda x, a: f(x, a, 3.0)[0].sum(), argnums=(0, 1))(x, 0.5)
    np.testing.assert_allclose(gx, total / x, rtol=1e-12)
    np.testing.assert_allclose(ga, total.sum() / 0.5, rtol=1e-12)
    g = eagle_jax.function(newton_sqrt, wrt=("c",))
    c = jnp.linspace(0.5, 100.0, 7)
    np.testing.assert_allclose(jax.grad(lambda c: g(c)[0].sum())(c), 0.5 / jnp.sqrt(c), rtol=1e-5)
    check_grads(lambda c: g(c)[0], (c,), order=2, modes=["fwd", "rev"])
    h = jax.hessian(lambda c: g(c)[0].sum())(c)
    np.testing.assert_allclose(h, jnp.diag(-0.25 * c ** -1.5), rtol=1e-4, atol=1e-12)


# ---------------------------------------------------------------- forward mode


def tangent_outputs(kernel: hawk.Kernel, n: int, dtype) -> dict[str, np.ndarray]:
    """outputs_for, with integer planes in their declared dtype."""
    out = outputs_for(kernel, n, dtype)
    for s in kernel.slots:
        if s.name in out and not s.is_float:
            out[s.name] = out[s.name].astype(np.int64)
    return out


@pytest.mark.parametrize("dtype", DTYPES)
def test_tangents_of_a_long_loop_are_exact_for_the_iterations_taken(plans, dtype):
    # total = a x (1 + 1/2 + ... + 1/n) with n the iterations taken (a switch, like the mask):
    # d total/dx = total/x, d total/da = total/a, d2 total/(dx da) = total/(x a).
    x = np.array([0.3, 0.5, 1.0, 2.0, 3.0, 5.0, 8.0, 13.0, 0.7, 1.5, 2.5, 4.0], dtype)[:N]
    a, limit = dtype(0.5), dtype(3.0)
    # float32: the tangent and the primal sums round separately over up to 91,000 terms
    rtol = 1e-12 if dtype == np.float64 else 1e-4
    tk = harmonic_until.tangent(["x", "a"])
    for x_dot, a_dot, want_of in ((1.0, 0.0, lambda tot: tot / x), (0.0, 1.0, lambda tot: tot / a)):
        out = outputs_for(tk, N, dtype)
        plans[tk.name].bind(x=x, a=a, limit=limit, x_dot=np.full(N, x_dot, dtype), a_dot=a_dot, **out).launch()
        want_total, _ = ref_harmonic(x, a, limit, dtype)
        np.testing.assert_array_equal(out["total"], want_total)  # the primal is unchanged
        np.testing.assert_allclose(out["total_dot"], want_of(want_total), rtol=rtol)
        got = tk._core.interpret(N, {"x": list(x.astype(float)), "a": [float(a)], "limit": [3.0],
                                     "x_dot": [x_dot] * N, "a_dot": [a_dot]})[0]
        np.testing.assert_allclose(got["total_dot"], want_of(ref_harmonic(x, a, limit, np.float64)[0]),
                                   rtol=1e-12 if dtype == np.float64 else 1e-5)
    # order 2: the tangent kernel of the tangent kernel is a loop too
    t2 = tk.tangent(["a"])
    assert t2.ir.count("loop_begin x100000") == 1
    ones = np.ones(N, dtype)
    out = outputs_for(t2, N, dtype)
    plans[t2.name].bind(x=x, a=a, limit=limit, x_dot=ones, a_dot=0.0, a_dot_=1.0, **out).launch()
    want_total, _ = ref_harmonic(x, a, limit, dtype)
    np.testing.assert_allclose(out["total_dot_dot"], want_total / (x * a), rtol=rtol)


@pytest.mark.parametrize("dtype", DTYPES)
def test_tangents_through_a_stepping_kernel_with_a_long_loop_and_a_mask(plans, dtype):
    # y is multiplied by (1 - dt) once per iteration taken, over every step, so dy/dy0 = y/y0.
    y0 = np.linspace(0.6, 3.0, N).astype(dtype)
    tk = settle.tangent(["y", "dt"])
    dt = dtype(1e-4)
    y, t = y0.copy(), np.zeros(N, dtype)
    y_dot, t_dot = np.ones(N, dtype), np.zeros(N, dtype)
    mask, maskp = np.zeros(N, bool), np.zeros(N, bool)
    args = {"dt": dt, "terminated": mask, "y": y, "t": t, "y_dot": y_dot, "dt_dot": 0.0,
            **outputs_for(tk, N, dtype)}
    plans[tk.name].bind(**args).launch()
    yp, tp = y0.copy(), np.zeros(N, dtype)
    plans["settle"].bind(dt=dt, terminated=maskp, y=yp, t=tp).launch()
    np.testing.assert_array_equal(y, yp)
    np.testing.assert_array_equal(t, tp)
    np.testing.assert_array_equal(mask, maskp)
    assert len(set(t.tolist())) == 3 and not mask.all()  # samples stop at different steps, or not
    # float32: y and its tangent round separately over up to 15,000 iterations
    np.testing.assert_allclose(y_dot, yp / y0, rtol=1e-12 if dtype == np.float64 else 2e-3)
    # the adjoint: three steps, each a long loop reversed from its checkpoints
    ak = settle.adjoint(["y", "dt"])
    y_bar, t_bar, dt_bar = np.ones(N, dtype), np.zeros(N, dtype), np.zeros(1, dtype)
    plans[ak.name].bind(dt=dt, terminated=np.zeros(N, bool), y=y0.copy(), t=np.zeros(N, dtype), y_bar=y_bar,
                        t_bar=t_bar, dt_bar=dt_bar).launch()
    np.testing.assert_allclose(y_bar, yp / y0, rtol=1e-12 if dtype == np.float64 else 2e-3)


@pytest.mark.parametrize("dtype", DTYPES)
def test_newton_to_a_tolerance_differentiates_as_the_square_root(plans, dtype):
    c = np.linspace(0.5, 100.0, N).astype(dtype)
    tk = newton_sqrt.tangent(["c"])
    out = tangent_outputs(tk, N, dtype)
    plans[tk.name].bind(c=c, c_dot=np.ones(N, dtype), **out).launch()
    assert 3 <= out["iters"].min() and out["iters"].max() < 50  # it left the loop early
    np.testing.assert_allclose(out["y"], np.sqrt(c.astype(float)), rtol=1e-6)
    np.testing.assert_allclose(out["y_dot"], 0.5 / np.sqrt(c.astype(float)), rtol=1e-5)


def test_jax_forward_mode_through_a_long_loop(harmonic_jax):
    jax, check_grads, eagle_jax, f, x, total = harmonic_jax
    jnp = jax.numpy
    _, t_x = jax.jvp(lambda x: f(x, 0.5, 3.0)[0], (x,), (jnp.ones_like(x),))
    np.testing.assert_allclose(t_x, total / x, rtol=1e-12)
    jac = jax.jacfwd(lambda a: f(x, a, 3.0)[0])(0.5)
    np.testing.assert_allclose(jac, total / 0.5, rtol=1e-12)
    g = eagle_jax.function(newton_sqrt, wrt=("c",))
    c = jnp.linspace(0.5, 100.0, 7)
    np.testing.assert_allclose(jax.jacfwd(lambda c: g(c)[0])(c), jnp.diag(0.5 / jnp.sqrt(c)), rtol=1e-5, atol=1e-15)
    check_grads(lambda c: g(c)[0], (c,), order=2, modes=["fwd"])


# ---------------------------------------------------------------- helpers in long loops


_HELPERS = '''import hawk
from hawk import Mutable, Random, Scalar
from hawk.math import exp, sin


@hawk.func
def h(q):
    return q


@hawk.func
def g(q, w):
    t = sin(q) * w
    for j in range(3):
        t = t + 0.1 * float(j) * q
    return exp(-t * t) + h(w)


@hawk.kernel
def k(x: Scalar, rng: Random, y: Mutable[Scalar], z: Mutable[Scalar]):
    a = 0.5
    b = x
    for i in range(ITERATIONS):
        a = a + g(x, a) * 0.01 + 0.001 * rng.uniform()
        b = h(b) * 0.99 + g(a, b) * 0.001
        if a > 2.0 or i >= 40:
            break
    y = a
    z = b
'''


def test_helpers_called_in_a_long_loop_equal_the_unrolled_loop(tmp_path):
    """Found by the fuzzer's long loops (seed 113, a helper call in the body): defining such a
    kernel crashed the front end (a reference to the frame's variables, held across the body,
    dangled when a helper call pushed a frame). Now a long loop calling helpers (with their
    own unrolled loops, calling helpers) equals the same loop unrolled, draws included, and
    derives."""
    outs = []
    for iterations in (41, 5000):  # every sample leaves by iteration 40: the same iterations
        path = tmp_path / f"helpers_{iterations}.py"
        path.write_text(_HELPERS.replace("ITERATIONS", str(iterations)))
        ns: dict = {}
        exec(compile(path.read_text(), str(path), "exec"), ns)
        k = ns["k"]
        assert (k.ir.count("loop_begin") == 1) == (iterations > 4096)
        outs.append(k._core.interpret(4, {"x": [0.2, 1.0, 2.0, -1.0], "rng": [1.0, 2.0]})[0])
        k.adjoint(["x"])
        k.tangent(["x"])
    for name in ("y", "z"):
        np.testing.assert_array_equal(outs[0][name], outs[1][name])
