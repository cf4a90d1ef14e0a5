"""Custom derivatives (docs/language.md "Custom derivatives"): ``@helper.defjvp`` with
jax.custom_jvp's convention and ``hawk.math.stop_gradient``, through the JAX bridge (whose
jvp binds the tangent kernel and whose transpose binds the adjoint kernel), against
jax.custom_jvp / jax.lax.stop_gradient of the same functions in jax.numpy: values, first and
second derivatives in both modes, float32 and float64; check_grads at order 2 where the rule is
the true derivative; refusals of rules that are not linear in the tangents or have the wrong
shape; the CUDA emission with NVRTC.
"""

from __future__ import annotations

import numpy as np
import pytest

jax = pytest.importorskip("jax")
import jax.numpy as jnp  # noqa: E402
from jax.test_util import check_grads  # noqa: E402

import hawk  # noqa: E402
from eagle.frameworks import jax as eagle_jax  # noqa: E402
from hawk import Mutable, Param, Scalar, Vector  # noqa: E402
from hawk.math import atan2, clamp, dot, exp, log, norm, sin, sqrt, stop_gradient, vec, where  # noqa: E402

jax.config.update("jax_enable_x64", True)

N = 12
TOL = {"float32": dict(rtol=3e-5, atol=3e-6), "float64": dict(rtol=1e-12, atol=1e-13)}


# ---------------------------------------------------------------- helpers with rules, and their JAX twins


@hawk.func
def st_clip(x, lo, hi):
    return clamp(x, lo, hi)


@st_clip.defjvp
def st_clip_jvp(primals, tangents):
    x, lo, hi = primals
    dx, dlo, dhi = tangents
    return st_clip(x, lo, hi), dx  # straight through: the clip's derivative is 1


@hawk.kernel
def clip_k(x: Scalar, a: Param, y: Mutable[Scalar]):
    c = st_clip(a * x, -0.5, 0.5)
    y = c * c + sin(x) * c


@jax.custom_jvp
def j_clip(x, lo, hi):
    return jnp.clip(x, lo, hi)


@j_clip.defjvp
def _j_clip_jvp(primals, tangents):
    x, lo, hi = primals
    return j_clip(x, lo, hi), tangents[0]


def ref_clip(x, a):
    c = j_clip(a * x, -0.5, 0.5)
    return c * c + jnp.sin(x) * c


@hawk.func
def safe_norm(v):
    return norm(v)


@safe_norm.defjvp
def safe_norm_jvp(primals, tangents):
    v = primals[0]
    t = tangents[0]
    n = norm(v)
    return n, dot(v, t) / where(n > 0.0, n, 1.0)


@hawk.kernel
def norm_k(u: Vector[3], s: Param, y: Mutable[Scalar]):
    y = safe_norm(u * s) ** 2 + s * safe_norm(u)


@jax.custom_jvp
def j_safe_norm(v):
    return jnp.sqrt(jnp.sum(v * v, axis=0))


@j_safe_norm.defjvp
def _j_safe_norm_jvp(primals, tangents):
    (v,), (t,) = primals, tangents
    n = jnp.sqrt(jnp.sum(v * v, axis=0))
    return n, jnp.sum(v * t, axis=0) / jnp.where(n > 0.0, n, 1.0)


def ref_norm(u, s):
    return j_safe_norm(u * s) ** 2 + s * j_safe_norm(u)


@hawk.func
def log1pexp(x):
    return log(1.0 + exp(x))


@log1pexp.defjvp
def log1pexp_jvp(primals, tangents):
    x = primals[0]
    ans = log1pexp(x)  # inside its own rule, the helper is its plain body
    return ans, (1.0 - 1.0 / (1.0 + exp(x))) * tangents[0]


@hawk.kernel
def softplus_k(x: Scalar, y: Mutable[Scalar]):
    y = log1pexp(x)


@jax.custom_jvp
def j_log1pexp(x):
    return jnp.log(1.0 + jnp.exp(x))


@j_log1pexp.defjvp
def _j_log1pexp_jvp(primals, tangents):
    (x,), (t,) = primals, tangents
    return j_log1pexp(x), (1.0 - 1.0 / (1.0 + jnp.exp(x))) * t


@hawk.func
def polar(x, y):
    return sqrt(x * x + y * y), atan2(y, x)


@polar.defjvp
def polar_jvp(primals, tangents):
    x, y = primals
    dx, dy = tangents
    r = sqrt(x * x + y * y)
    return (r, atan2(y, x)), ((x * dx + y * dy) / r, (x * dy - y * dx) / (r * r))


@hawk.kernel
def polar_k(x: Scalar, y: Scalar, r: Mutable[Scalar], th: Mutable[Scalar]):
    rr, t = polar(x, y)
    r = rr * t
    th = t + rr


def ref_polar(x, y):
    rr, t = jnp.sqrt(x * x + y * y), jnp.arctan2(y, x)
    return rr * t, t + rr


@hawk.kernel
def sg_k(x: Scalar, y: Mutable[Scalar]):
    y = x * stop_gradient(x) + stop_gradient(sin(x)) * x ** 3


def ref_sg(x):
    sg = jax.lax.stop_gradient
    return x * sg(x) + sg(jnp.sin(x)) * x ** 3


# ---------------------------------------------------------------- comparisons


def close(a, b, dtype):
    for x, y in zip(jax.tree.leaves(a), jax.tree.leaves(b)):
        np.testing.assert_allclose(np.asarray(x, np.float64), np.asarray(y, np.float64), **TOL[dtype])


def compare_all_orders(f, ref, args, dtype):
    """Values, jvp (tangent kernel), vjp (adjoint kernel), and second derivatives in the four
    compositions (fwd-over-fwd, fwd-over-rev, rev-over-fwd, rev-over-rev) against `ref`."""
    args = tuple(jnp.asarray(a, dtype) for a in args)
    rng = np.random.default_rng(3)
    ts = tuple(jnp.asarray(rng.normal(size=np.shape(a)), dtype) for a in args)
    close(f(*args), ref(*args), dtype)
    close(jax.jvp(f, args, ts), jax.jvp(ref, args, ts), dtype)

    def loss(g):
        return lambda *a: sum(jnp.sum(o * (i + 1.0)) for i, o in enumerate(jax.tree.leaves(g(*a))))

    lf, lr = loss(f), loss(ref)
    argnums = tuple(range(len(args)))
    close(jax.grad(lf, argnums)(*args), jax.grad(lr, argnums)(*args), dtype)
    jf = lambda *a: jax.jvp(lf, a, ts)[1]  # noqa: E731
    jr = lambda *a: jax.jvp(lr, a, ts)[1]  # noqa: E731
    close(jax.jvp(jf, args, ts), jax.jvp(jr, args, ts), dtype)  # fwd over fwd
    close(jax.grad(jf, argnums)(*args), jax.grad(jr, argnums)(*args), dtype)  # rev over fwd
    gf = lambda *a: jax.grad(lf, argnums)(*a)  # noqa: E731
    gr = lambda *a: jax.grad(lr, argnums)(*a)  # noqa: E731
    close(jax.jvp(gf, args, ts), jax.jvp(gr, args, ts), dtype)  # fwd over rev
    wf = lambda *a: sum(jnp.vdot(g, t) for g, t in zip(gf(*a), ts))  # noqa: E731
    wr = lambda *a: sum(jnp.vdot(g, t) for g, t in zip(gr(*a), ts))  # noqa: E731
    close(jax.grad(wf, argnums)(*args), jax.grad(wr, argnums)(*args), dtype)  # rev over rev


DTYPES = ["float32", "float64"]


@pytest.mark.parametrize("dtype", DTYPES)
def test_straight_through_clip_matches_jax_custom_jvp(dtype):
    x = np.linspace(-2.0, 2.0, N) + 0.01  # most samples outside the clip, where its derivative is 0
    f = eagle_jax.function(clip_k, wrt=("x", "a"))
    compare_all_orders(f, ref_clip, (x, 1.3), dtype)
    # the straight-through derivative is not the clip's: outside [-0.5, 0.5] it is not 0
    g = np.asarray(jax.grad(lambda a: jnp.sum(f(jnp.asarray(x, dtype), a)))(jnp.asarray(1.3, dtype)))
    plain = jax.grad(lambda a: jnp.sum((lambda c: c * c + jnp.sin(x) * c)(jnp.clip(a * x, -0.5, 0.5))))(1.3)
    assert abs(float(g) - float(plain)) > 0.1


@pytest.mark.parametrize("dtype", DTYPES)
def test_safe_norm_matches_jax_custom_jvp_and_is_finite_at_zero(dtype):
    rng = np.random.default_rng(5)
    u = rng.normal(size=(3, N))
    f = eagle_jax.function(norm_k, wrt=("u", "s"))
    compare_all_orders(f, ref_norm, (u, 0.7), dtype)
    u0 = u.copy()
    u0[:, ::3] = 0.0  # first derivatives at 0: finite (0), as the rule says
    gu = jax.grad(lambda u: jnp.sum(f(u, 0.7)))(jnp.asarray(u0, dtype))
    close(gu, jax.grad(lambda u: jnp.sum(ref_norm(u, 0.7)))(jnp.asarray(u0, dtype)), dtype)
    assert np.all(np.isfinite(np.asarray(gu)))
    check_grads(lambda u, s: f(u, s), (jnp.asarray(u), 0.7), order=2, modes=("fwd", "rev"))


@pytest.mark.parametrize("dtype", DTYPES)
def test_log1pexp_rule_calling_its_helper(dtype):
    x = np.array([-30.0, -3.0, -0.5, 0.0, 0.25, 2.0, 8.0, 20.0, 50.0, 80.0])
    f = eagle_jax.function(softplus_k, wrt=("x",))
    compare_all_orders(f, j_log1pexp, (x,), dtype)
    if dtype == "float32":  # exp(100) overflows float32: the rule's derivative is still 1
        g = jax.grad(lambda x: jnp.sum(f(x)))(jnp.asarray([100.0], jnp.float32))
        assert float(g[0]) == 1.0


@pytest.mark.parametrize("dtype", DTYPES)
def test_rule_of_a_helper_returning_a_tuple(dtype):
    rng = np.random.default_rng(9)
    x, y = rng.uniform(0.5, 2.0, N), rng.normal(size=N)
    f = eagle_jax.function(polar_k, wrt=("x", "y"))
    compare_all_orders(f, ref_polar, (x, y), dtype)
    if dtype == "float64":
        check_grads(f, (jnp.asarray(x), jnp.asarray(y)), order=2, modes=("fwd", "rev"))


@pytest.mark.parametrize("dtype", DTYPES)
def test_stop_gradient_matches_lax_stop_gradient(dtype):
    x = np.linspace(-1.5, 1.7, N)
    f = eagle_jax.function(sg_k, wrt=("x",))
    compare_all_orders(f, ref_sg, (x,), dtype)


def test_the_tangent_and_adjoint_kernels_carry_the_rule():
    # derived kernels are kernels: the rule's coefficient appears in them as ordinary values,
    # and differentiating them again differentiates it
    t = clip_k.tangent(["x"])
    a = clip_k.adjoint(["x"])
    assert "custom_jvp" in clip_k.ir and "stop_grad" in clip_k.ir
    assert "custom_jvp" in t.ir and "custom_jvp" in a.ir  # the primal part, derivable again
    assert sg_k.tangent(["x"]).interface("float64").digest != sg_k.interface("float64").digest


# ---------------------------------------------------------------- refusals


def rule_error(rule_body):
    """Defines a helper with the given rule (a function) and a kernel using it; returns the
    KernelError's message."""

    @hawk.func
    def h(x):
        return x * x

    h.defjvp(rule_body)
    with pytest.raises(hawk.KernelError) as e:

        @hawk.kernel
        def uses_rule(x: Scalar, y: Mutable[Scalar]):
            y = h(x)

    return str(e.value)


def test_a_rule_not_linear_in_the_tangents_is_refused():
    def squared(primals, tangents):
        return primals[0] * primals[0], tangents[0] * tangents[0]

    msg = rule_error(squared)
    assert "uses_rule" in msg and "'squared'" in msg and "not linear in the tangents" in msg
    assert "doubling a tangent" in msg

    def shifted(primals, tangents):
        return primals[0] * primals[0], tangents[0] + 1.0

    msg = rule_error(shifted)
    assert "not linear in the tangents" in msg and "when every tangent is 0" in msg


def test_a_rule_of_the_wrong_shape_is_refused():
    def no_tuple(primals, tangents):
        return tangents[0]

    assert "must return (primal_out, tangent_out)" in rule_error(no_tuple)

    def vector_tangent(primals, tangents):
        return primals[0], vec(tangents[0], tangents[0])

    msg = rule_error(vector_tangent)
    assert "tangent_out of shape a Vector[2]" in msg and "the helper returns a Scalar" in msg


def test_defjvp_takes_a_function():
    @hawk.func
    def h(x):
        return x

    with pytest.raises(TypeError, match="defjvp takes a function"):
        h.defjvp(3)


# ---------------------------------------------------------------- CUDA emission


def test_cuda_emission_compiles_with_nvrtc():
    from raptor_core import _core

    try:
        _core.nvrtc_check([], "sm_80")
    except RuntimeError as err:
        pytest.fail(f"NVRTC is needed for this check: {err}")
    ks = [clip_k, norm_k, sg_k, clip_k.tangent(["x", "a"]), norm_k.adjoint(["u"]), polar_k.adjoint(["x"]).tangent(["x"])]
    assert _core.nvrtc_check([k._core for k in ks], "sm_80") == 2 * len(ks)
