"""Loops with exits (docs/language.md, "Loops with exits"): `break` and `continue` under
data-dependent conditions in `for i in range(K)`, against plain-Python references computed
sample by sample in the same dtype; derivatives through the JAX bridge against jax.numpy
twins written with selects and check_grads at order 2 in both modes; stepping kernels with a
mask; refusals naming kernel, line and fix.
"""

from __future__ import annotations

import numpy as np
import pytest

import eagle.plan
import hawk
from hawk import Mutable, Param, Scalar, Table, Terminated, Vector
from hawk.math import abs as habs, vec

from conftest import outputs_for

jax = pytest.importorskip("jax")
import jax.numpy as jnp  # noqa: E402
from jax.test_util import check_grads  # noqa: E402

from eagle.frameworks import jax as eagle_jax  # noqa: E402

jax.config.update("jax_enable_x64", True)

N = 40
K_NEWTON = 30
TOL = 1e-10


# ---------------------------------------------------------------- kernels


@hawk.kernel
def newton_sqrt(a: Scalar, tol: Param, root: Mutable[Scalar], iters: Mutable[Scalar]):
    x = a
    n = 0.0
    for _ in range(K_NEWTON):
        dx = (x * x - a) / (2.0 * x)
        x = x - dx
        n = n + 1.0
        if abs(dx) < tol * x:
            break
    root = x
    iters = n


@hawk.kernel
def skip_and_stop(w: Table[Scalar], x: Scalar, c: Param, limit: Param, s: Mutable[Scalar], m: Mutable[Scalar]):
    s = 0.0
    m = 0.0
    for i in range(8):
        if x * i > c:
            continue
        s = s + w.at(i) * x
        m = m + 1.0
        if s > limit:
            break


@hawk.kernel
def nested(x: Scalar, out: Mutable[Scalar], count: Mutable[Scalar]):
    out = 0.0
    count = 0.0
    for i in range(4):
        y = x + i
        for j in range(5):
            y = y * 0.5
            if y < 0.3:
                break  # leaves the inner loop only
            count = count + 1.0
        out = out + y


@hawk.func
def halve_until(y, floor):
    for _ in range(20):
        if y < floor:
            break
        y = y * 0.5
    return y


@hawk.kernel
def helper_loop(x: Scalar, v: Vector[2], out: Mutable[Scalar], vo: Mutable[Vector[2]]):
    out = halve_until(x, 1.0)
    vo = v
    for i in range(6):
        if vo[0] * vo[0] + vo[1] * vo[1] > 4.0:
            break
        vo = vo * 1.5


@hawk.kernel(steps=5)
def stepped(dt: Param, terminated: Terminated, x: Mutable[Scalar], t: Mutable[Scalar]):
    # each step: up to 10 sub-steps of an explicit decay until the sub-step time passes 1
    tau = 0.0
    for _ in range(10):
        x = x - dt * x * x
        tau = tau + dt
        t = t + dt
        if tau >= 0.25:
            break
    terminated = t >= 0.9


# ---------------------------------------------------------------- plain-Python references


def ref_newton(a, tol, dtype):
    a = np.asarray(a, dtype)
    root = np.zeros_like(a)
    iters = np.zeros_like(a)
    for i, ai in enumerate(a):
        x, n = ai, dtype(0.0)
        for _ in range(K_NEWTON):
            dx = (x * x - ai) / (dtype(2.0) * x)
            x = x - dx
            n = n + dtype(1.0)
            if abs(dx) < dtype(tol) * x:
                break
        root[i], iters[i] = x, n
    return root, iters


def ref_skip(w, x, c, limit, dtype):
    s_out, m_out = np.zeros_like(x), np.zeros_like(x)
    for k, xk in enumerate(x):
        s, m = dtype(0.0), dtype(0.0)
        for i in range(8):
            if xk * dtype(i) > dtype(c):
                continue
            s = s + w[i] * xk
            m = m + dtype(1.0)
            if s > dtype(limit):
                break
        s_out[k], m_out[k] = s, m
    return s_out, m_out


def ref_nested(x, dtype):
    out, count = np.zeros_like(x), np.zeros_like(x)
    for k, xk in enumerate(x):
        o, c = dtype(0.0), dtype(0.0)
        for i in range(4):
            y = xk + dtype(i)
            for j in range(5):
                y = y * dtype(0.5)
                if y < dtype(0.3):
                    break
                c = c + dtype(1.0)
            o = o + y
        out[k], count[k] = o, c
    return out, count


def ref_helper(x, v, dtype):
    out, vo = np.zeros_like(x), np.zeros_like(v)
    for k in range(x.size):
        y = x[k]
        for _ in range(20):
            if y < dtype(1.0):
                break
            y = y * dtype(0.5)
        out[k] = y
        a, b = v[0, k], v[1, k]
        for i in range(6):
            if a * a + b * b > dtype(4.0):
                break
            a, b = a * dtype(1.5), b * dtype(1.5)
        vo[:, k] = a, b
    return out, vo


def ref_stepped(dt, x, t, mask, dtype, steps=5):
    x, t, mask = x.copy(), t.copy(), mask.copy()
    for k in range(x.size):
        if mask[k]:
            continue
        for _ in range(steps):
            tau = dtype(0.0)
            for _ in range(10):
                x[k] = x[k] - dtype(dt) * x[k] * x[k]
                tau = tau + dtype(dt)
                t[k] = t[k] + dtype(dt)
                if tau >= dtype(0.25):
                    break
            if t[k] >= dtype(0.9):
                mask[k] = True
                break
    return x, t, mask


@pytest.fixture(scope="module")
def plans(module_cache_dir):
    ks = [newton_sqrt, skip_and_stop, nested, helper_loop, stepped]
    ps = eagle.plan.auto(ks, targets=("host",), cache_dir=module_cache_dir)
    return {p.kernel.name: p for p in ps}


DTYPES = [np.float64, np.float32]


def tol_of(dtype):
    return 1e-12 if dtype == np.float64 else 1e-5


# ---------------------------------------------------------------- values


@pytest.mark.parametrize("dtype", DTYPES)
def test_newton_to_a_tolerance(plans, dtype):
    rng = np.random.default_rng(0)
    a = rng.uniform(0.01, 100.0, N).astype(dtype)
    tol = 1e-10 if dtype == np.float64 else 1e-5
    out = outputs_for(newton_sqrt, N, dtype)
    plans["newton_sqrt"].bind(a=a, tol=tol, **out).launch()
    root, iters = ref_newton(a, tol, dtype)
    np.testing.assert_allclose(out["root"], root, rtol=tol_of(dtype))
    np.testing.assert_array_equal(out["iters"], iters)
    np.testing.assert_allclose(out["root"], np.sqrt(a.astype(np.float64)), rtol=10 * tol)
    assert len(set(iters.tolist())) > 2  # the samples stop at different iterations
    assert iters.max() < K_NEWTON


@pytest.mark.parametrize("dtype", DTYPES)
def test_continue_and_break(plans, dtype):
    rng = np.random.default_rng(1)
    w = rng.uniform(0.0, 1.0, 8).astype(dtype)
    x = rng.uniform(0.1, 2.0, N).astype(dtype)
    out = outputs_for(skip_and_stop, N, dtype)
    plans["skip_and_stop"].bind(w=w, x=x, c=3.0, limit=2.0, **out).launch()
    s, m = ref_skip(w, x, 3.0, 2.0, dtype)
    np.testing.assert_allclose(out["s"], s, rtol=tol_of(dtype))
    np.testing.assert_array_equal(out["m"], m)
    assert 0 < m.min() < m.max() <= 8 and (s > 2.0).any()  # some samples skip, some break


@pytest.mark.parametrize("dtype", DTYPES)
def test_nested_break_leaves_the_inner_loop(plans, dtype):
    x = np.linspace(0.0, 5.0, N).astype(dtype)
    out = outputs_for(nested, N, dtype)
    plans["nested"].bind(x=x, **out).launch()
    o, c = ref_nested(x, dtype)
    np.testing.assert_allclose(out["out"], o, rtol=tol_of(dtype))
    np.testing.assert_array_equal(out["count"], c)


@pytest.mark.parametrize("dtype", DTYPES)
def test_break_in_a_helper_loop_and_vectors(plans, dtype):
    rng = np.random.default_rng(2)
    x = rng.uniform(0.0, 50.0, N).astype(dtype)
    v = rng.uniform(-1.0, 1.0, (2, N)).astype(dtype)
    out = outputs_for(helper_loop, N, dtype)
    plans["helper_loop"].bind(x=x, v=v, **out).launch()
    o, vo = ref_helper(x, v, dtype)
    np.testing.assert_allclose(out["out"], o, rtol=tol_of(dtype))
    np.testing.assert_allclose(out["vo"], vo, rtol=tol_of(dtype))


@pytest.mark.parametrize("dtype", DTYPES)
def test_stepping_kernel_with_a_loop_and_a_mask(plans, dtype):
    rng = np.random.default_rng(3)
    x = rng.uniform(0.5, 2.0, N).astype(dtype)
    t = rng.uniform(0.0, 0.6, N).astype(dtype)
    mask = np.zeros(N, bool)
    mask[::7] = True
    rx, rt, rmask = ref_stepped(0.03, x, t, mask, dtype)
    b = plans["stepped"].bind(dt=0.03, terminated=mask, x=x, t=t)
    b.launch()
    np.testing.assert_allclose(x, rx, rtol=tol_of(dtype))
    np.testing.assert_allclose(t, rt, rtol=tol_of(dtype))
    np.testing.assert_array_equal(mask, rmask)


def test_unconditional_break_stops_unrolling():
    @hawk.kernel
    def once(x: Scalar, y: Mutable[Scalar]):
        y = x
        for i in range(1000):
            y = y + 1.0
            break
    assert once.ir.count("add") == 1


def test_a_loop_longer_than_the_unrolling_limit_is_a_loop():
    """Beyond 4096 iterations a loop is kept as a loop (tests/test_long_loops.py)."""
    @hawk.kernel
    def long_one(x: Scalar, y: Mutable[Scalar]):
        y = x
        for i in range(5000):
            y = y * 0.999
            if y < 0.1:
                break
    assert "loop_begin x5000" in long_one.ir and long_one.ir.count("mul") == 1


# ---------------------------------------------------------------- derivatives


def jnp_newton(a, tol):
    """The Newton kernel as selects in jax.numpy: an independent reference whose derivatives
    are jax's own, exact for the iterations each sample takes."""
    x, n, alive = a, jnp.zeros_like(a), jnp.ones(a.shape, bool)
    for _ in range(K_NEWTON):
        dx = (x * x - a) / (2.0 * x)
        x = jnp.where(alive, x - dx, x)
        n = jnp.where(alive, n + 1.0, n)
        alive = alive & ~(jnp.abs(dx) < tol * x)
    return x, n


def test_newton_derivatives_match_jax_numpy():
    f = eagle_jax.function(newton_sqrt, wrt=("a",))
    a = jnp.asarray(np.random.default_rng(4).uniform(0.5, 9.0, 12))
    root, iters = f(a, 1e-6)
    r_ref, n_ref = jnp_newton(a, 1e-6)
    np.testing.assert_allclose(root, r_ref, rtol=1e-14)
    np.testing.assert_array_equal(iters, n_ref)
    for d in (jax.jacfwd, jax.jacrev):
        np.testing.assert_allclose(d(lambda a: f(a, 1e-6)[0])(a), d(lambda a: jnp_newton(a, 1e-6)[0])(a), rtol=1e-10, atol=1e-14)
    # second derivative, both ways
    h = jax.hessian(lambda a: f(a, 1e-6)[0].sum())(a)
    h_ref = jax.hessian(lambda a: jnp_newton(a, 1e-6)[0].sum())(a)
    np.testing.assert_allclose(h, h_ref, rtol=1e-8, atol=1e-12)
    # converged: the derivative is sqrt's
    np.testing.assert_allclose(jnp.diag(jax.jacrev(lambda a: f(a, 1e-6)[0])(a)), 0.5 / jnp.sqrt(a), rtol=1e-5)


@pytest.mark.parametrize("dtype", DTYPES)
def test_adjoint_and_tangent_kernels_match_jax_numpy(module_cache_dir, dtype):
    """eagle's own adjoint and tangent kernels (not through the bridge) of Newton's loop,
    for samples that stop at different iterations, against jax.vjp / jax.jvp of the twin."""
    adj, tan = newton_sqrt.adjoint(["a"]), newton_sqrt.tangent(["a"])
    plans = {p.kernel.name: p for p in eagle.plan.auto([adj, tan], targets=("host",), cache_dir=module_cache_dir)}
    a = np.random.default_rng(6).uniform(0.5, 9.0, 12).astype(dtype)
    tol = 1e-6 if dtype == np.float64 else 1e-3
    bar = np.linspace(0.5, 1.5, 12).astype(dtype)
    out = outputs_for(adj, 12, dtype)
    plans[adj.name].bind(a=a, tol=tol, root_bar=bar, iters_bar=np.ones(12, dtype), **out).launch()
    _, vjp = jax.vjp(lambda a: jnp_newton(a, dtype(tol))[0], jnp.asarray(a))  # in the planes' dtype
    want = np.asarray(vjp(jnp.asarray(bar))[0])
    _, jvp = jax.jvp(lambda a: jnp_newton(a, dtype(tol))[0], (jnp.asarray(a),), (jnp.asarray(bar),))
    rtol = 1e-12 if dtype == np.float64 else 2e-4
    np.testing.assert_allclose(out["a_bar"], want, rtol=rtol)
    out = outputs_for(tan, 12, dtype)
    plans[tan.name].bind(a=a, tol=tol, a_dot=bar, **out).launch()
    np.testing.assert_allclose(out["root_dot"], np.asarray(jvp), rtol=rtol)
    iters = ref_newton(a, tol, dtype)[1]
    assert len(set(iters.tolist())) > 2


def test_check_grads_continue_and_break():
    f = eagle_jax.function(skip_and_stop, wrt=("w", "x", "c", "limit"))
    rng = np.random.default_rng(5)
    w = jnp.asarray(rng.uniform(0.0, 1.0, 8))
    # samples far from every switch (x * i == c, s == limit), so finite differences see the same path
    x = jnp.asarray([0.21, 0.37, 0.52, 0.71, 0.93, 1.13, 1.31, 1.63])
    check_grads(lambda w, x: f(w, x, 3.05, 2.0)[0], (w, x), order=2, modes=("fwd", "rev"))


def test_check_grads_nested_and_helper():
    f = eagle_jax.function(helper_loop, wrt=("x", "v"))
    x = jnp.asarray([0.7, 3.3, 10.1, 41.0])
    v = jnp.asarray([[0.3, -0.5, 0.9, 0.05], [0.2, 0.4, -0.2, 0.1]])
    check_grads(lambda x, v: f(x, v), (x, v), order=2, modes=("fwd", "rev"))
    g = eagle_jax.function(nested, wrt=("x",))
    check_grads(lambda x: g(x)[0], (jnp.asarray([0.11, 1.37, 2.52, 4.05]),), order=2, modes=("fwd", "rev"))


def test_check_grads_stepping_kernel_with_a_loop_and_a_mask():
    f = eagle_jax.function(stepped, wrt=("x",))
    x = jnp.asarray([0.7, 1.1, 1.6, 0.9, 1.3])
    t = jnp.asarray([0.0, 0.1, 0.33, 0.52, 0.2])
    mask = jnp.asarray([False, False, True, False, False])
    check_grads(lambda x: f(0.03, mask, x, t)[0], (x,), order=2, modes=("fwd", "rev"))


# ---------------------------------------------------------------- CUDA


def test_cuda_emission_compiles_with_nvrtc():
    from raptor_core import _core

    try:
        _core.nvrtc_check([], "sm_80")
    except RuntimeError as e:
        pytest.fail(f"NVRTC is needed for this check: {e}")
    ks = [newton_sqrt, newton_sqrt.tangent(["a"]), newton_sqrt.adjoint(["a"]), skip_and_stop.adjoint(["w", "x"]),
          stepped, stepped.adjoint(["x"]), helper_loop.tangent(["v"])]
    assert _core.nvrtc_check([k._core for k in ks], "sm_80") == 2 * len(ks)


# ---------------------------------------------------------------- refusals

_LINES = open(__file__).read().splitlines()


def line_of(tag: str) -> int:
    hits = [i + 1 for i, line in enumerate(_LINES) if line.rstrip().endswith(f"# E:{tag}")]
    assert len(hits) == 1, (tag, hits)
    return hits[0]


def check(excinfo, kernel: str, tag: str, *hints: str) -> None:
    msg = str(excinfo.value)
    assert isinstance(excinfo.value, hawk.KernelError), type(excinfo.value)
    assert f"'{kernel}'" in msg, msg
    assert f"test_loops.py:{line_of(tag)}:" in msg, (line_of(tag), msg)
    for h in hints:
        assert h in msg, (h, msg)


# `break`/`continue` outside a loop (also in a helper outside its own loop) are Python syntax
# errors, so Python refuses them before hawk sees them; the front end's own refusals of them
# are tested in cpp/tests/test_lower.cpp (LoopExits).


def test_statements_after_break():
    with pytest.raises(hawk.KernelError) as e:
        @hawk.kernel
        def k_dead(x: Scalar, y: Mutable[Scalar]):
            y = x
            for i in range(3):
                if y > 1.0:
                    break
                    y = 0.0  # E:dead
    check(e, "k_dead", "dead", "never run")


def test_loop_variable_after_a_break():
    with pytest.raises(hawk.KernelError) as e:
        @hawk.kernel
        def k_var(x: Scalar, y: Mutable[Scalar]):
            y = x
            for i in range(3):
                if y > 1.0:
                    break
                y = y * 2.0
            y = y + i  # E:loopvar
    check(e, "k_var", "loopvar", "loop variable 'i'", "count the iterations")


def test_local_first_assigned_after_an_exit():
    with pytest.raises(hawk.KernelError) as e:
        @hawk.kernel
        def k_late(x: Scalar, y: Mutable[Scalar]):
            y = x
            for i in range(3):
                if y > 1.0:
                    continue
                z = y * 2.0
                y = z
            y = z  # E:late
    check(e, "k_late", "late", "'z' is first assigned after a `break`/`continue`", "assign it before the loop")


def test_an_exit_decided_when_the_kernel_is_defined_leaves_later_statements_legal(tmp_path):
    """`if 0.5 < 1.0: continue` followed by statements is Python (dead code for every sample),
    not the "statements after break/continue" refusal, which is for an exit in the same
    block (found by the differential fuzzer, tests/kernelgen.py)."""

    @hawk.kernel
    def dead_tail(x: Scalar, y: Mutable[Scalar]):
        a = x
        for j in range(3):
            a = a + 1.0
            if 0.5 < 1.0:
                continue
            a = a * 0.75
        y = a

    (plan,) = eagle.plan.auto([dead_tail], cache_dir=tmp_path / "c")
    x = np.linspace(-1.0, 1.0, 7)
    y = np.zeros(7)
    plan.bind(x=x, y=y).launch()

    def ref(v):
        a = v
        for _ in range(3):
            a = a + 1.0
            if 0.5 < 1.0:
                continue
            a = a * 0.75  # noqa: unreachable in Python too
        return a

    np.testing.assert_array_equal(y, [ref(v) for v in x])
