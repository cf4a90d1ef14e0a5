"""The jax.random distributions of a `Random` parameter (issue 27 item 3; docs/language.md
"Random numbers"): rng.exponential, bernoulli, lognormal, randint, poisson, gamma,
truncated_normal and multivariate_normal.

Every number is checked against jax.random itself on the same subkey: draw j of sample i in
step s with key k is `jax.random.<name>(fold_in(fold_in(fold_in(k, s), i), j), ...)`, through
the reference interpreter, the compiled host code (the "ffi" JAX lowering) and the "xla"
lowering, in float32 and float64; the reparameterized arguments are differentiated against
jax.grad of the same formula and check_grads, gamma in a against jax.random.gamma's gradient.
"""

from __future__ import annotations

import jax
import jax.numpy as jnp
import numpy as np
import pytest
from jax.test_util import check_grads

import hawk
from eagle.frameworks import jax as ejax
from hawk import Matrix, Mutable, Param, Random, Scalar, Vector
from raptor_core import _core
from conftest import nvrtc_missing, require_jax_normal_reference  # noqa: E402

require_jax_normal_reference()

jax.config.update("jax_enable_x64", True)

DTYPES = (np.float32, np.float64)
RTOL = {np.float32: 1e-6, np.float64: 1e-12}
N = 256


def subkeys(key, n: int, j: int, step: int = 0):
    """The subkeys of draw j of samples 0..n-1 in `step` (the definition)."""
    ks = jax.random.fold_in(key, step)
    return jax.vmap(lambda i: jax.random.fold_in(jax.random.fold_in(ks, i), j))(jnp.arange(n, dtype=jnp.uint32))


def ref(fn, key, n: int, j: int, *per_sample) -> np.ndarray:
    """jax.random's `fn(subkey, *params)` for each sample's draw j."""
    return np.asarray(jax.vmap(fn)(subkeys(key, n, j), *per_sample))


def close(got, want, dtype) -> None:
    got, want = np.asarray(got, np.float64), np.asarray(want, np.float64)
    np.testing.assert_allclose(got, want, rtol=RTOL[dtype], atol=0)


# One kernel per family; planes carry the arguments so one launch covers many values.
@hawk.kernel
def floats(a: Scalar, lo: Scalar, hi: Scalar, p: Scalar, s: Scalar, rng: Random, e: Mutable[Scalar],
           g: Mutable[Scalar], b: Mutable[Scalar], ln: Mutable[Scalar], tn: Mutable[Scalar], po: Mutable[Scalar]):
    e = rng.exponential()
    g = rng.gamma(a)
    b = 1.0 if rng.bernoulli(p) else 0.0
    ln = rng.lognormal(s)
    tn = rng.truncated_normal(lo, hi)
    po = float(rng.poisson(a * 4.0))


@hawk.kernel
def ints(lam: Scalar, lo: Scalar[hawk.int64], hi: Scalar[hawk.int64], rng: Random, po: Mutable[Scalar[hawk.int32]],
         ri: Mutable[Scalar[hawk.int32]], r2: Mutable[Scalar[hawk.int32]]):
    po = rng.poisson(lam)
    ri = rng.randint(lo, hi)
    r2 = rng.randint(-7, 3)


@hawk.kernel
def mvn(mean: Vector[3], L: Matrix[3, 3], rng: Random, x: Mutable[Vector[3]], u: Mutable[Scalar]):
    u = rng.uniform()
    x = rng.multivariate_normal(mean, L)


def float_args(n: int, dtype):
    rs = np.random.default_rng(0)
    a = np.tile([0.05, 0.3, 0.9, 1.0, 2.5, 7.0, 30.0, 0.5], n // 8).astype(dtype)  # lam = 4a: 0.2 .. 120
    lo = np.tile([-1.0, 0.5, -3.0, -np.inf, 1.0, -0.2, -2.0, 0.0], n // 8).astype(dtype)
    hi = np.tile([1.0, 2.5, -1.0, 0.0, np.inf, 0.3, 2.0, 1.5], n // 8).astype(dtype)
    p = np.tile([0.0, 1.0, 0.3, 0.5, 0.9, 1e-3, 0.999, 0.25], n // 8).astype(dtype)
    s = rs.uniform(0.1, 1.5, n).astype(dtype)
    return a, lo, hi, p, s


def float_refs(key, dtype, a, lo, hi, p, s):
    dt = jnp.dtype(dtype)
    return {
        "e": ref(lambda k: jax.random.exponential(k, (), dt), key, N, 0),
        "g": ref(lambda k, x: jax.random.gamma(k, x, (), dt), key, N, 1, a),
        "b": ref(lambda k, x: jax.random.bernoulli(k, x).astype(dt), key, N, 2, p),
        "ln": ref(lambda k, x: jax.random.lognormal(k, x, (), dt), key, N, 3, s),
        "tn": ref(lambda k, x, y: jax.random.truncated_normal(k, x, y, (), dt), key, N, 4, lo, hi),
        "po": ref(lambda k, x: jax.random.poisson(k, x * dtype(4.0), ()), key, N, 5, a),
    }


def check_floats(outs: dict, refs: dict, dtype) -> None:
    for name in ("e", "ln"):
        close(outs[name], refs[name], dtype)
    # gamma cubes v = 1 + c x of a normal draw, whose float32 value is within ~2e-7 of jax's
    # (runtime/random.h's erfinv): within 3e-6 in float32 (docs/language.md).
    np.testing.assert_allclose(np.asarray(outs["g"], np.float64), np.asarray(refs["g"], np.float64),
                               rtol=RTOL[dtype] if dtype == np.float64 else 3e-6, atol=0)
    np.testing.assert_array_equal(np.asarray(outs["b"]), refs["b"])  # exact: u < p on the same bits
    np.testing.assert_array_equal(np.asarray(outs["po"]), refs["po"].astype(np.float64))
    # truncated_normal: erf of the bounds is the C library's (float32: erff) where jax uses
    # XLA's; in float32 they differ by an ulp now and then, which moves the draw by ~1 ulp of
    # erf's value (an absolute error near 0, relative in the tails): see docs/language.md.
    tn, want = np.asarray(outs["tn"], np.float64), np.asarray(refs["tn"], np.float64)
    if dtype == np.float64:
        close(tn, want, dtype)
    else:
        np.testing.assert_allclose(tn, want, rtol=1e-5, atol=1e-7)
        assert np.mean(np.isclose(tn, want, rtol=1e-6, atol=0)) > 0.95


@pytest.mark.parametrize("dtype", DTYPES, ids=["f32", "f64"])
@pytest.mark.parametrize("lowering", ["ffi", "xla"])
def test_float_distributions_equal_jax_random(dtype, lowering):
    key = jax.random.key(11)
    args = float_args(N, dtype)
    outs = ejax.function(floats, lowering=lowering)(*args, key)
    names = ("e", "g", "b", "ln", "tn", "po")
    assert all(o.dtype == dtype for o in outs)
    check_floats(dict(zip(names, outs)), float_refs(key, dtype, *args), dtype)


def test_interpreter_draws_the_distributions_as_jax():
    key = jax.random.key(11)
    kd = [float(w) for w in np.asarray(jax.random.key_data(key))]
    args = float_args(N, np.float64)
    ins = dict(zip(("a", "lo", "hi", "p", "s"), (list(map(float, x)) for x in args)))
    outs = floats._core.interpret(N, {**ins, "rng": kd})[0]
    check_floats(outs, float_refs(key, np.float64, *args), np.float64)


def test_bernoulli_edges_and_poisson_branches_are_covered():
    a, lo, hi, p, s = float_args(N, np.float64)
    assert {0.0, 1.0} <= set(p.tolist())
    lam = 4 * a
    assert lam.min() < 10 <= lam.max() and (lam < 10).sum() and (lam >= 10).sum()
    assert (a < 1).any() and (a > 1).any()


@pytest.mark.parametrize("dtype", DTYPES, ids=["f32", "f64"])
def test_integer_draws_equal_jax_random_bit_for_bit(dtype):
    key = jax.random.key(5)
    lam = np.tile([0.0, 0.5, 3.0, 9.99, 10.0, 25.0, 1000.0, 1e5], N // 8).astype(dtype)
    lo = np.tile([0, -5, -(2**31), -(2**31), 7, 10, -10**9, -(2**40)], N // 8).astype(np.int64)
    hi = np.tile([10, 3, 2**31 - 1, 2**31, 7, 3, 2 * 10**9, 2**40], N // 8).astype(np.int64)
    po, ri, r2 = ejax.function(ints)(lam, lo, hi, key)
    want_po = ref(lambda k, x: jax.random.poisson(k, x, ()), key, N, 0, lam)
    want_ri = ref(lambda k, x, y: jax.random.randint(k, (), x, y, jnp.int32), key, N, 1, lo, hi)
    want_r2 = ref(lambda k: jax.random.randint(k, (), -7, 3, jnp.int32), key, N, 2)
    np.testing.assert_array_equal(np.asarray(po), want_po)
    np.testing.assert_array_equal(np.asarray(ri), want_ri)
    np.testing.assert_array_equal(np.asarray(r2), want_r2)
    assert np.asarray(po).dtype == np.int32 and np.asarray(ri).dtype == np.int32
    kd = [float(w) for w in np.asarray(jax.random.key_data(key))]
    outs = ints._core.interpret(N, {"lam": list(map(float, lam)), "lo": list(map(float, lo)),
                                    "hi": list(map(float, hi)), "rng": kd})[0]
    np.testing.assert_array_equal(np.asarray(outs["ri"]), want_ri)
    np.testing.assert_array_equal(np.asarray(outs["po"]), want_po)


@pytest.mark.parametrize("dtype", DTYPES, ids=["f32", "f64"])
@pytest.mark.parametrize("lowering", ["ffi", "xla"])
def test_multivariate_normal_equals_jax_random(dtype, lowering):
    key = jax.random.key(2)
    rs = np.random.default_rng(3)
    mean = rs.normal(size=(3, N)).astype(dtype)
    L = np.array([[1.0, 0.0, 0.0], [0.5, 0.8, 0.0], [-0.3, 0.2, 0.6]], dtype)
    Ls = np.broadcast_to(L[:, :, None], (3, 3, N)).copy()
    x, u = ejax.function(mvn, lowering=lowering)(mean, Ls, key)
    np.testing.assert_array_equal(np.asarray(u), ref(lambda k: jax.random.uniform(k, (), jnp.dtype(dtype)), key, N, 0))
    cov = (L.astype(np.float64) @ L.T.astype(np.float64)).astype(dtype)
    want = ref(lambda k, m: jax.random.multivariate_normal(k, m, cov, dtype=jnp.dtype(dtype)), key, N, 1, mean.T)
    np.testing.assert_allclose(np.asarray(x).T, want, rtol=RTOL[dtype] * (10 if dtype == np.float64 else 3),
                               atol=RTOL[dtype] * 10)
    # and exactly the formula mean + L @ normal(subkey, (3,)) with jax's vector draw
    z = ref(lambda k: jax.random.normal(k, (3,), jnp.dtype(dtype)), key, N, 1)
    np.testing.assert_allclose(np.asarray(x).T, mean.T + z @ L.T, rtol=RTOL[dtype], atol=RTOL[dtype])


# ------------------------------------------------------------------------- derivatives


@hawk.kernel
def reparam(mu: Scalar, sigma: Param, lo: Param, rng: Random, y: Mutable[Scalar]):
    y = mu + sigma * rng.normal() + rng.lognormal(sigma) + rng.exponential() * mu + rng.truncated_normal(lo, 2.0)


def test_reparameterized_arguments_differentiate_as_jax():
    n = 32
    key = jax.random.key(4)
    mu = jnp.linspace(-1.0, 1.0, n)
    f = ejax.function(reparam, wrt=["mu", "sigma", "lo"])

    def loss(mu, sigma, lo):
        return jnp.sum(f(mu, sigma, lo, key) ** 2)

    def jax_loss(mu, sigma, lo):
        z = jax.vmap(lambda k: jax.random.normal(k, ()))(subkeys(key, n, 0))
        ln = jax.vmap(lambda k: jax.random.lognormal(k, sigma, ()))(subkeys(key, n, 1))
        e = jax.vmap(lambda k: jax.random.exponential(k, ()))(subkeys(key, n, 2))
        tn = jax.vmap(lambda k: jax.random.truncated_normal(k, lo, 2.0, ()))(subkeys(key, n, 3))
        return jnp.sum((mu + sigma * z + ln + e * mu + tn) ** 2)

    args = (mu, 0.7, -0.5)
    np.testing.assert_allclose(loss(*args), jax_loss(*args), rtol=1e-12)
    for i in range(3):
        np.testing.assert_allclose(jax.grad(loss, i)(*args), jax.grad(jax_loss, i)(*args), rtol=1e-9)
    check_grads(loss, args, order=2, modes=("fwd", "rev"))


@hawk.kernel
def gamma_poisson(a: Scalar, rng: Random, g: Mutable[Scalar], k: Mutable[Scalar]):
    g = rng.gamma(a)
    k = float(rng.poisson(a))


@pytest.mark.parametrize("dtype", DTYPES, ids=["f32", "f64"])
@pytest.mark.parametrize("lowering", ["ffi", "xla"])
def test_gamma_differentiates_in_a_as_jax_and_poisson_not_at_all(dtype, lowering):
    """jax.random.gamma's implicit reparameterization gradient (lax.random_gamma_grad) in
    both modes; a poisson draw carries no derivative in lam (jax's has none either)."""
    n = 64
    key = jax.random.key(9)
    a = jnp.asarray(np.tile([0.05, 0.3, 0.9, 1.0, 2.5, 7.0, 30.0, 0.5], n // 8), dtype)
    f = ejax.function(gamma_poisson, wrt=["a"], lowering=lowering)
    want = jax.vmap(jax.grad(lambda a, k: jax.random.gamma(k, a, (), jnp.dtype(dtype))))(a, subkeys(key, n, 0))
    got_fwd = jax.jvp(lambda a: f(a, key)[0], (a,), (jnp.ones_like(a),))[1]
    got_rev = jax.grad(lambda a: jnp.sum(f(a, key)[0]))(a)
    tol = 1e-10 if dtype == np.float64 else 2e-4
    np.testing.assert_allclose(np.asarray(got_fwd, np.float64), np.asarray(want, np.float64), rtol=tol)
    np.testing.assert_allclose(np.asarray(got_rev, np.float64), np.asarray(want, np.float64), rtol=tol)
    g = jax.grad(lambda a: jnp.sum(f(a, key)[1]))(a)
    np.testing.assert_array_equal(np.asarray(g), 0.0)


def test_gamma_grad_equals_lax_random_gamma_grad_in_the_interpreter():
    """The derivative kernel's RandGammaGrad against lax.random_gamma_grad at draws across
    both of its branches (series: x <= 1 or x <= a; continued fraction beyond)."""
    n = 64
    key = jax.random.key(9)
    kd = [float(w) for w in np.asarray(jax.random.key_data(key))]
    a = np.tile([0.05, 0.3, 0.9, 1.0, 2.5, 7.0, 30.0, 0.5], n // 8)
    t = gamma_poisson.tangent(["a"], with_primal=True)
    outs = t._core.interpret(n, {"a": list(a), "a_dot": [1.0] * n, "rng": kd})[0]
    dot = [k for k in outs if k.startswith("g") and k != "g"]
    x = np.asarray(outs["g"])
    want = np.asarray(jax.lax.random_gamma_grad(jnp.asarray(a), jnp.asarray(x)))
    assert (x > 1).any() and (x <= 1).any()
    np.testing.assert_allclose(np.asarray(outs[dot[0]]), want, rtol=1e-12)


# ------------------------------------------------------------------------- loops, steps


@hawk.kernel(steps=2)
def looped(a: Scalar, rng: Random, acc: Mutable[Scalar]):
    for i in range(5000):  # a loop region: the draw index is computed at run time
        acc = acc + rng.gamma(a) + float(rng.randint(0, 10))


def test_draws_in_loop_regions_and_steps_are_numbered_as_unrolled():
    n = 4
    key = jax.random.key(1)
    a = np.full(n, 1.5)
    acc = ejax.function(looped)(a, key, np.zeros(n))
    want = np.zeros(n)
    for step in range(2):
        ks = jax.random.fold_in(key, step)
        for i in range(n):
            ki = jax.random.fold_in(ks, i)
            js = jnp.arange(10000, dtype=jnp.uint32)
            sk = jax.vmap(lambda j: jax.random.fold_in(ki, j))(js)
            g = jax.vmap(lambda k: jax.random.gamma(k, 1.5))(sk[0::2])
            r = jax.vmap(lambda k: jax.random.randint(k, (), 0, 10, jnp.int32))(sk[1::2])
            s = want[i]
            for t in range(5000):
                s = s + float(g[t]) + float(r[t])
            want[i] = s
    np.testing.assert_allclose(np.asarray(acc), want, rtol=1e-12)


# ------------------------------------------------------------------------- refusals


def _source_error(src: str) -> str:
    ns = {"hawk": hawk, "Random": Random, "Scalar": Scalar, "Mutable": Mutable, "Param": Param,
          "Vector": Vector, "Matrix": Matrix}
    with pytest.raises(hawk.KernelError) as err:
        exec(compile(src, "<rng-test>", "exec"), ns)
    return str(err.value)


@pytest.mark.parametrize("body, words", [
    ("y = float(rng.randint(0.0, 5))", "rng.randint(lo, hi): lo must be an integer (a Python int or an integer "
                                       "plane's value), got a Scalar"),
    ("y = float(rng.randint(0, x))", "rng.randint(lo, hi): hi must be an integer"),
    ("y = rng.gamma()", "rng.gamma(a) takes 1 argument, got 0"),
    ("y = rng.truncated_normal(0.0)", "rng.truncated_normal(lo, hi) takes 2 arguments, got 1"),
    ("y = rng.bernoulli(0.5, 0.5)", "rng.bernoulli(p=0.5) takes 0 or 1 argument, got 2"),
    ("y = rng.exponential(2.0)", "rng.exponential() takes no arguments"),
    ("y = rng.gumbel()", "a Random parameter has the methods uniform, normal, exponential, bernoulli"),
    ("y = rng.gamma(v)", "rng.gamma(a): a must be a Scalar (one draw per call), got a Vector[2]"),
    ("w = rng.multivariate_normal(v, M3)", "rng.multivariate_normal(mean, L): L must be a Matrix[2, 2]"),
])
def test_misuse_is_refused_with_the_fix(body, words):
    src = ("@hawk.kernel\ndef bad(x: Scalar, v: Vector[2], M3: Matrix[3, 3], rng: Random, y: Mutable[Scalar],"
           f" w: Mutable[Vector[2]]):\n    y = 0.0\n    w = v\n    {body}\n")
    msg = _source_error(src)
    assert "bad" in msg and words in msg, msg


# ------------------------------------------------------------------------- CUDA


@pytest.mark.skipif(nvrtc_missing(), reason="NVRTC not found")
@pytest.mark.parametrize("make", [lambda: floats, lambda: ints, lambda: mvn, lambda: looped,
                                  lambda: reparam.adjoint(["mu", "sigma", "lo"]), lambda: reparam.tangent(["sigma"]),
                                  lambda: gamma_poisson.adjoint(["a"])],
                         ids=["floats", "ints", "mvn", "loop", "adjoint", "tangent", "gamma_adjoint"])
def test_cuda_emission_compiles_with_nvrtc(make):
    k = make()
    src = k.cuda("float32")
    assert "rp_subkey(" in src
    assert _core.nvrtc_check([k._core], "sm_80") == 2


@hawk.kernel
def constant_bounds(rng: Random, t1: Mutable[Scalar], t2: Mutable[Scalar], g: Mutable[Scalar],
                    k: Mutable[Scalar]):
    t1 = rng.truncated_normal(-0.125, 2.0)
    t2 = rng.truncated_normal(0.25, 1.741)
    g = rng.gamma(2.5)
    k = float(rng.poisson(25.0))


@pytest.mark.parametrize("dtype", DTYPES, ids=["f32", "f64"])
def test_draws_with_constant_arguments_equal_the_interpreter_bit_for_bit(dtype):
    """A draw whose arguments are constants calls the C library as the interpreter does: GCC
    would evaluate erf(-0.125 / sqrt 2) (double) and erff(0.25f / sqrt 2) (float) itself,
    correctly rounded, 1 ulp from glibc's, and 1769 of 4096 float64 draws of the first
    truncated_normal were a few ulps from the interpreter's (runtime/random.h
    RAPTOR_RNG_LIBM)."""
    import eagle.plan
    import kernelgen

    n = 4096
    key = np.array([7, 2026], np.uint32)
    outs = {name: np.zeros(n, dtype) for name in ("t1", "t2", "g", "k")}
    (plan,) = eagle.plan.auto([constant_bounds])
    plan.bind(rng=key, **outs).launch()
    want = kernelgen.interpret(constant_bounds, n, 0, {"rng": key, **{k: np.zeros(n) for k in outs}},
                               float32=dtype == np.float32).outs
    for name, got in outs.items():
        np.testing.assert_array_equal(got.astype(np.float64), want[name], err_msg=f"{name} ({dtype.__name__})")
    assert np.unique(outs["t1"]).size > n // 2 and (outs["t1"] > -0.125).all() and (outs["t1"] < 2.0).all()
