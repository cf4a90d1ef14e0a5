"""hawk.math's NumPy-named elementwise functions (docs/language.md "NumPy's elementwise
functions", cpp/ir/math_fns.hpp) against independent references:

  1. values: a kernel per function, compiled in float64 and float32, over a grid of arguments
     with the edge values (0, -0, +-inf, NaN, domain edges, halves for round, subnormals, huge
     values) and random ones, against NumPy (SciPy for erf / erfc; math.fma and exact
     fractions for fma) in the same dtype: bit for bit for the exact functions (ceil, rint,
     trunc, fmod, remainder, copysign, fdim, fma, clip, the predicates, rsqrt as 1 / sqrt);
     the C library's others within LIBM_ULPS of an accurate reference, NumPy's function in a
     wider type rounded to the dtype (see `accurate`);
  2. derivatives through the JAX bridge (jax.grad, jacfwd) against jax.numpy's derivative of the
     same function, with check_grads at order 2 for the smooth ones;
  3. the "xla" lowering against the "ffi" lowering;
  4. the names: hawk.math's __all__ and the refusals (math.remainder, a Vector to isnan).
"""

from __future__ import annotations

import math
from fractions import Fraction
from typing import Callable

import numpy as np
import pytest
import scipy.special

import hawk
import hawk.math as hm
from hawk import Mutable, Scalar, Terminated, Vector
from hawk.math import (
    absolute, acos, acosh, asin, asinh, atan, atanh, cbrt, ceil, clip, copysign, cosh, erf, erfc, exp, exp2, expm1,
    fdim, fma, fmod, hypot, inf, isfinite, isinf, isnan, log, log1p, log2, log10, nan, pow, power, remainder, rint,
    round, rsqrt, sin, cos, sinh, trunc, where,
)

from conftest import plan_kernels

jax = pytest.importorskip("jax")
import jax.numpy as jnp  # noqa: E402
from jax.test_util import check_grads  # noqa: E402

from eagle.frameworks import jax as eagle_jax  # noqa: E402

jax.config.update("jax_enable_x64", True)

# How far (units in the last place) a C library function may be from the accurate reference
# (`accurate`): glibc's functions are faithful (within 1 ulp of the exact value) except where
# glibc documents more, which the two exceptions below measured on glibc 2.36: cbrt(-e) is
# 2 ulps from the correctly rounded double (checked in exact rational arithmetic), log10f(0.75)
# 2 ulps from the correctly rounded float. NumPy's own functions in the same dtype are no
# reference: NumPy 2.5.5's float32 asin, sinh, cosh, log10, cbrt and its float64 cbrt are up
# to 2 ulps from glibc's (with the NumPy before it this test passed within 1 ulp of NumPy).
LIBM_ULPS = {np.float64: 1, np.float32: 1}
LIBM_ULPS_OF = {"cbrt": {np.float64: 2, np.float32: 1}, "log10": {np.float64: 1, np.float32: 2}}
# SciPy's erf is Cephes', compared in the dtype.
ERF_ULPS = {np.float64: 4, np.float32: 2}
# Below this an erfc result is subnormal, where the reference keeps few bits: compared within
# this absolute tolerance instead.
TINY = 1e-300


# ---------------------------------------------------------------- the kernels


@hawk.kernel
def k_asin(x: Scalar, o: Mutable[Scalar]):
    o = asin(x)


@hawk.kernel
def k_acos(x: Scalar, o: Mutable[Scalar]):
    o = acos(x)


@hawk.kernel
def k_atan(x: Scalar, o: Mutable[Scalar]):
    o = atan(x)


@hawk.kernel
def k_sinh(x: Scalar, o: Mutable[Scalar]):
    o = sinh(x)


@hawk.kernel
def k_cosh(x: Scalar, o: Mutable[Scalar]):
    o = cosh(x)


@hawk.kernel
def k_asinh(x: Scalar, o: Mutable[Scalar]):
    o = asinh(x)


@hawk.kernel
def k_acosh(x: Scalar, o: Mutable[Scalar]):
    o = acosh(x)


@hawk.kernel
def k_atanh(x: Scalar, o: Mutable[Scalar]):
    o = atanh(x)


@hawk.kernel
def k_erf(x: Scalar, o: Mutable[Scalar]):
    o = erf(x)


@hawk.kernel
def k_erfc(x: Scalar, o: Mutable[Scalar]):
    o = erfc(x)


@hawk.kernel
def k_exp2(x: Scalar, o: Mutable[Scalar]):
    o = exp2(x)


@hawk.kernel
def k_expm1(x: Scalar, o: Mutable[Scalar]):
    o = expm1(x)


@hawk.kernel
def k_log1p(x: Scalar, o: Mutable[Scalar]):
    o = log1p(x)


@hawk.kernel
def k_exp(x: Scalar, o: Mutable[Scalar]):
    o = exp(x)


@hawk.kernel
def k_log(x: Scalar, o: Mutable[Scalar]):
    o = log(x)


@hawk.kernel
def k_sin(x: Scalar, o: Mutable[Scalar]):
    o = sin(x)


@hawk.kernel
def k_cos(x: Scalar, o: Mutable[Scalar]):
    o = cos(x)


@hawk.kernel
def k_log2(x: Scalar, o: Mutable[Scalar]):
    o = log2(x)


@hawk.kernel
def k_log10(x: Scalar, o: Mutable[Scalar]):
    o = log10(x)


@hawk.kernel
def k_cbrt(x: Scalar, o: Mutable[Scalar]):
    o = cbrt(x)


@hawk.kernel
def k_ceil(x: Scalar, o: Mutable[Scalar]):
    o = ceil(x)


@hawk.kernel
def k_round(x: Scalar, o: Mutable[Scalar]):
    o = round(x)


@hawk.kernel
def k_rint(x: Scalar, o: Mutable[Scalar]):
    o = rint(x)


@hawk.kernel
def k_trunc(x: Scalar, o: Mutable[Scalar]):
    o = trunc(x)


@hawk.kernel
def k_rsqrt(x: Scalar, o: Mutable[Scalar]):
    o = rsqrt(x)


@hawk.kernel
def k_absolute(x: Scalar, o: Mutable[Scalar]):
    o = absolute(x)


@hawk.kernel
def k_hypot(x: Scalar, y: Scalar, o: Mutable[Scalar]):
    o = hypot(x, y)


@hawk.kernel
def k_pow(x: Scalar, y: Scalar, o: Mutable[Scalar]):
    o = pow(x, y)


@hawk.kernel
def k_power(x: Scalar, y: Scalar, o: Mutable[Scalar]):
    o = power(x, y)


@hawk.kernel
def k_fmod(x: Scalar, y: Scalar, o: Mutable[Scalar]):
    o = fmod(x, y)


@hawk.kernel
def k_remainder(x: Scalar, y: Scalar, o: Mutable[Scalar]):
    o = remainder(x, y)


@hawk.kernel
def k_copysign(x: Scalar, y: Scalar, o: Mutable[Scalar]):
    o = copysign(x, y)


@hawk.kernel
def k_fdim(x: Scalar, y: Scalar, o: Mutable[Scalar]):
    o = fdim(x, y)


@hawk.kernel
def k_fma(x: Scalar, y: Scalar, z: Scalar, o: Mutable[Scalar]):
    o = fma(x, y, z)


@hawk.kernel
def k_clip(x: Scalar, y: Scalar, z: Scalar, o: Mutable[Scalar]):
    o = clip(x, y, z)


@hawk.kernel
def k_isnan(x: Scalar, o: Mutable[Scalar]):
    o = where(isnan(x), 1.0, 0.0)


@hawk.kernel
def k_isinf(x: Scalar, o: Mutable[Scalar]):
    o = 1.0 if isinf(x) else 0.0


@hawk.kernel
def k_isfinite(x: Scalar, o: Mutable[Scalar]):
    o = where(isfinite(x), 1.0, 0.0)


@hawk.kernel
def k_constants(x: Scalar, o: Mutable[Scalar], p: Mutable[Scalar]):
    o = inf if x > 0.0 else -hm.inf
    p = nan if x > 0.0 else hm.nan * x


@hawk.kernel
def k_vector(v: Vector[3], w: Vector[3], o: Mutable[Vector[3]], q: Mutable[Vector[3]]):
    o = hm.fmod(v, 0.75) + hm.copysign(1.0, w) + hm.asinh(v)
    q = hm.fma(v, w, 0.5) + hm.clip(v, -0.25, w)


def _fma_exact(a: float, b: float, c: float, dtype) -> float:
    """fma(a, b, c) correctly rounded to `dtype` from exact fractions (float64: math.fma)."""
    if not all(map(math.isfinite, (a, b, c))) or a == 0 or b == 0:
        with np.errstate(all="ignore"):  # inf, NaN, zeros: a * b + c is exact there
            return float(dtype(dtype(a) * dtype(b) + dtype(c)))
    if dtype == np.float64:
        try:
            return math.fma(a, b, c)
        except OverflowError:
            return a * b + c
    exact = Fraction(a) * Fraction(b) + Fraction(c)
    f = np.float32(float(exact))  # within one float32 ulp of the exact value
    best = None
    for cand in (np.nextafter(f, np.float32(-np.inf)), f, np.nextafter(f, np.float32(np.inf))):
        if not np.isfinite(cand):
            continue
        d = abs(Fraction(float(cand)) - exact)
        even = (int(np.asarray(cand).view(np.uint32)) & 1) == 0
        if best is None or d < best[0] or (d == best[0] and even):
            best = (d, cand)
    r = float(best[1])
    return math.copysign(0.0, a * b + c) if r == 0.0 and exact == 0 else r


def _erfc(x: np.ndarray) -> np.ndarray:
    """erfc, independent of the C library: SciPy's below 0.5, and above it erfcx(x) exp(-x^2)
    with x^2 = hi + lo split exactly (SciPy's own erfc, Cephes', is hundreds of ulps off in the
    tail, where exp(-x^2) loses x^2's rounding)."""
    if x.dtype != np.float64:
        return scipy.special.erfc(x)
    out = scipy.special.erfc(x)
    big = (x >= 0.5) & (x < 30.0)  # erfc(30) is 0 in float64
    out[x >= 30.0] = 0.0
    xb = x[big]
    hi = xb * xb
    lo = np.array([math.fma(v, v, -h) for v, h in zip(xb, hi)])
    with np.errstate(under="ignore"):
        out[big] = scipy.special.erfcx(xb) * np.exp(-hi) * (1.0 - lo)
    return out


def _fdim(a, b):
    with np.errstate(all="ignore"):
        return np.where(np.isnan(a) | np.isnan(b), np.nan, np.where(a > b, a - b, 0.0)).astype(a.dtype)


# name -> (kernel, reference over dtype-typed arrays, tolerance: "exact", "zeros" (exact but
# +0 == -0), or a dict of ulps by dtype)
UNARY = {
    "asin": (k_asin, np.arcsin, LIBM_ULPS),
    "acos": (k_acos, np.arccos, LIBM_ULPS),
    "atan": (k_atan, np.arctan, LIBM_ULPS),
    "sinh": (k_sinh, np.sinh, LIBM_ULPS),
    "cosh": (k_cosh, np.cosh, LIBM_ULPS),
    "asinh": (k_asinh, np.arcsinh, LIBM_ULPS),
    "acosh": (k_acosh, np.arccosh, LIBM_ULPS),
    "atanh": (k_atanh, np.arctanh, LIBM_ULPS),
    "erf": (k_erf, scipy.special.erf, ERF_ULPS),
    "erfc": (k_erfc, _erfc, ERF_ULPS),
    "exp2": (k_exp2, np.exp2, LIBM_ULPS),
    "expm1": (k_expm1, np.expm1, LIBM_ULPS),
    "log1p": (k_log1p, np.log1p, LIBM_ULPS),
    "exp": (k_exp, np.exp, LIBM_ULPS),
    "log": (k_log, np.log, LIBM_ULPS),
    "sin": (k_sin, np.sin, LIBM_ULPS),
    "cos": (k_cos, np.cos, LIBM_ULPS),
    "log2": (k_log2, np.log2, LIBM_ULPS),
    "log10": (k_log10, np.log10, LIBM_ULPS),
    "cbrt": (k_cbrt, np.cbrt, LIBM_ULPS),
    "ceil": (k_ceil, np.ceil, "exact"),
    "round": (k_round, np.round, "exact"),
    "rint": (k_rint, np.rint, "exact"),
    "trunc": (k_trunc, np.trunc, "exact"),
    "rsqrt": (k_rsqrt, lambda x: x.dtype.type(1) / np.sqrt(x), "exact"),
    "absolute": (k_absolute, np.absolute, "exact"),
    "isnan": (k_isnan, lambda x: np.isnan(x).astype(x.dtype), "exact"),
    "isinf": (k_isinf, lambda x: np.isinf(x).astype(x.dtype), "exact"),
    "isfinite": (k_isfinite, lambda x: np.isfinite(x).astype(x.dtype), "exact"),
}
BINARY = {
    "hypot": (k_hypot, np.hypot, LIBM_ULPS),
    "pow": (k_pow, np.power, LIBM_ULPS),
    "power": (k_power, np.power, LIBM_ULPS),
    "fmod": (k_fmod, np.fmod, "exact"),
    "remainder": (k_remainder, np.remainder, "exact"),
    "copysign": (k_copysign, np.copysign, "exact"),
    "fdim": (k_fdim, _fdim, "exact"),
}
TERNARY = {
    "fma": (k_fma, None, "exact"),
    "clip": (k_clip, np.clip, "zeros"),  # NumPy's maximum keeps its first zero, jax.numpy's +0
}

EDGES = [0.0, -0.0, 1.0, -1.0, 0.5, -0.5, 1.5, -1.5, 2.5, -2.5, 3.5, 0.49999999999999994, -0.49999999999999994,
         4503599627370495.5, 2.0**52, 2.0**53 + 2, 1e-300, -1e-300, 5e-324, -5e-324, 1e-30, 1e-8, -1e-8, 1e300,
         -1e300, 0.1, -0.1, 0.9999999, -0.9999999, 1.0000001, 0.75, 3.0, -3.0, 7.25, -7.25, 20.0, -20.0, 27.0,
         -27.0, 88.5, 100.0, 710.0, -745.5, 1e10, math.pi, -math.e, np.inf, -np.inf, np.nan]


def grid(dtype, n_random: int = 300, seed: int = 5) -> np.ndarray:
    """The edge values and random ones (uniform on [-6, 6] and log-uniform magnitudes), in `dtype`."""
    rng = np.random.default_rng(seed)
    rand = np.concatenate([rng.uniform(-6.0, 6.0, n_random),
                           rng.choice([-1.0, 1.0], n_random) * 10.0 ** rng.uniform(-12, 12, n_random)])
    with np.errstate(over="ignore"):
        return np.concatenate([np.asarray(EDGES), rand]).astype(dtype)


def pairs(dtype) -> tuple[np.ndarray, np.ndarray]:
    """Every pair of the edge values, and random pairs."""
    e = np.asarray(EDGES)
    x, y = np.meshgrid(e, e, indexing="ij")
    rng = np.random.default_rng(9)
    rx, ry = rng.uniform(-8.0, 8.0, 400), rng.uniform(-4.0, 4.0, 400)
    with np.errstate(over="ignore"):
        return (np.concatenate([x.ravel(), rx]).astype(dtype), np.concatenate([y.ravel(), ry]).astype(dtype))


def triples(dtype) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Triples of edge values (a sample of them), random triples, and products that cancel."""
    rng = np.random.default_rng(13)
    e = np.asarray(EDGES[:20] + [np.inf, -np.inf, np.nan, 1e300, 1e-300])
    x, y, z = (a.ravel() for a in np.meshgrid(e, e[::3], e[::2], indexing="ij"))
    a, b = rng.uniform(-4.0, 4.0, 500), rng.uniform(-4.0, 4.0, 500)
    a, b = a.astype(dtype).astype(np.float64), b.astype(dtype).astype(np.float64)
    c = -(a * b).astype(dtype).astype(np.float64)  # a * b + c is the product's rounding error
    c[::5] = rng.uniform(-4.0, 4.0, 100)
    with np.errstate(over="ignore"):
        return tuple(np.concatenate([u, v]).astype(dtype) for u, v in ((x, a), (y, b), (z, c)))


@pytest.fixture(scope="module")
def plans(module_cache_dir):
    kernels = [k for table in (UNARY, BINARY, TERNARY) for k, *_ in table.values()] + [k_constants, k_vector]
    return plan_kernels(kernels, module_cache_dir)


def run(plan, dtype, **inputs) -> np.ndarray:
    n = len(next(iter(inputs.values())))
    out = np.full(n, -12345.0, dtype=dtype)
    plan.bind(**inputs, o=out).launch()
    return out


def ulps_apart(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """How many representable numbers lie between a and b (0: the same bits, or both NaN;
    +0 and -0 are 1 apart)."""
    it = np.int64 if a.dtype == np.float64 else np.int32
    ia, ib = a.view(it).astype(np.int64), b.view(it).astype(np.int64)
    top = np.int64(np.iinfo(it).min)
    oa = np.where(ia < 0, top - ia, ia)  # a monotone integer order of the floats
    ob = np.where(ib < 0, top - ib, ib)
    d = np.abs(oa - ob)
    both_nan = np.isnan(a) & np.isnan(b)
    one_nan = np.isnan(a) != np.isnan(b)
    return np.where(both_nan, 0, np.where(one_nan, np.iinfo(np.int64).max, d))


def accurate(ref: Callable[..., np.ndarray], dtype, *args: np.ndarray) -> np.ndarray:
    """`ref` (a NumPy function) evaluated in a wider type and rounded to `dtype`: float32 through
    float64, float64 through x86's 80-bit long double (NumPy calls the C library's long double
    functions, asinl .. cbrtl: code apart from the double ones raptor calls). Within about half
    an ulp of the exact value, so a result more than LIBM_ULPS from it is the library's error,
    not the reference's."""
    wide = np.longdouble if dtype == np.float64 else np.float64
    assert np.finfo(wide).nmant > np.finfo(dtype).nmant + 8, "no wider type here"
    with np.errstate(all="ignore"):
        return np.asarray(ref(*(a.astype(wide) for a in args))).astype(dtype)


def check(got: np.ndarray, want: np.ndarray, tol, dtype, what: str, *args: np.ndarray) -> None:
    want = np.asarray(want).astype(dtype)
    assert got.dtype == want.dtype
    if tol == "zeros":
        bad = ~((got == want) | (np.isnan(got) & np.isnan(want)))
    else:
        limit = 0 if tol == "exact" else tol[dtype]
        bad = ulps_apart(got, want) > limit
        if tol is ERF_ULPS and dtype == np.float64:
            bad &= ~((np.abs(want) < TINY) & (np.abs(got - want) < TINY * 1e-3))
    if bad.any():
        i = np.flatnonzero(bad)[:8]
        cols = " ".join(f"{a[i]!r}" for a in args)
        pytest.fail(f"{what}: {bad.sum()} of {bad.size} differ at args {cols}: got {got[i]!r}, want {want[i]!r}")


DTYPES = pytest.mark.parametrize("dtype", [np.float64, np.float32], ids=["f64", "f32"])


@DTYPES
@pytest.mark.parametrize("name", list(UNARY))
def test_unary_values(plans, name, dtype):
    kernel, ref, tol = UNARY[name]
    x = grid(dtype)
    got = run(plans[kernel.name], dtype, x=x)
    if tol is LIBM_ULPS:
        want, tol = accurate(ref, dtype, x), LIBM_ULPS_OF.get(name, LIBM_ULPS)
    else:
        with np.errstate(all="ignore"):
            want = ref(x)
    check(got, want, tol, dtype, name, x)


@DTYPES
@pytest.mark.parametrize("name", ["exp", "expm1", "log", "log1p", "sin", "cos"])
def test_raptors_own_functions_equal_the_interpreter_bit_for_bit(plans, name, dtype):
    """exp, expm1, log, log1p, sin and cos are raptor's own (cpp/runtime/rp_math.h,
    rp_trig.h): the generated kernel, the reference interpreter and the fold pass
    compute them with the same code, so a build equals the interpreter bit for bit over the edges
    and 20000 arguments log-uniform over every binade of the dtype, both signs (the fuzzer's
    comparison allows library functions a few ulps; these are held to none)."""
    import kernelgen

    kernel = UNARY[name][0]
    rng = np.random.default_rng(17)
    fin = np.finfo(dtype)
    mag = 2.0 ** rng.uniform(np.log2(float(fin.smallest_subnormal)), np.log2(float(fin.max)), 20000)
    with np.errstate(over="ignore"):
        x = np.concatenate([grid(dtype), rng.choice([-1.0, 1.0], mag.size) * mag,
                            rng.uniform(-1.0, 1.0, 2000)]).astype(dtype)
    got = run(plans[kernel.name], dtype, x=x)
    want = kernelgen.interpret(kernel, x.size, 1, {"x": x.astype(np.float64)}, float32=dtype == np.float32).outs["o"]
    check(got, want.astype(dtype), "exact", dtype, name, x)


@DTYPES
@pytest.mark.parametrize("name", list(BINARY))
def test_binary_values(plans, name, dtype):
    kernel, ref, tol = BINARY[name]
    x, y = pairs(dtype)
    got = run(plans[kernel.name], dtype, x=x, y=y)
    if tol is LIBM_ULPS:
        want, tol = accurate(ref, dtype, x, y), LIBM_ULPS_OF.get(name, LIBM_ULPS)
    else:
        with np.errstate(all="ignore"):
            want = ref(x, y)
    check(got, want, tol, dtype, name, x, y)


@DTYPES
def test_fma_is_rounded_once(plans, dtype):
    x, y, z = triples(dtype)
    got = run(plans["k_fma"], dtype, x=x, y=y, z=z)
    want = np.array([_fma_exact(float(a), float(b), float(c), dtype) for a, b, c in zip(x, y, z)])
    check(got, want, "exact", dtype, "fma", x, y, z)
    # the cancelling products: fma keeps the rounding error that a * b + c loses
    with np.errstate(all="ignore"):
        plain = x * y + z
    assert (got != plain).sum() > 100


@DTYPES
def test_clip_is_numpy_clip(plans, dtype):
    x, y, z = triples(dtype)
    got = run(plans["k_clip"], dtype, x=x, y=y, z=z)
    with np.errstate(all="ignore"):
        want = np.clip(x, y, z)
    check(got, want, "zeros", dtype, "clip", x, y, z)


def test_round_is_half_to_even(plans):
    x = np.array([0.5, 1.5, 2.5, -0.5, -1.5, -2.5, 3.5, 4.5, 0.49999999999999994, -0.0, 1e300, np.nan])
    got = run(plans["k_round"], np.float64, x=x)
    np.testing.assert_array_equal(got, [0.0, 2.0, 2.0, -0.0, -2.0, -2.0, 4.0, 4.0, 0.0, -0.0, 1e300, np.nan])
    assert np.signbit(got[3]) and np.signbit(got[9])


def test_remainder_signs_follow_numpy(plans):
    """Python's modulo, as np.remainder: the sign of the divisor; a zero result has the
    divisor's sign; NaN for an infinite dividend or a zero divisor."""
    x = np.array([7.5, -7.5, 7.5, -7.5, 6.0, -6.0, 0.0, -0.0, -1.0, 1.0, np.inf, 3.0, 1e-30])
    y = np.array([2.0, 2.0, -2.0, -2.0, -2.0, 2.0, -3.0, 3.0, np.inf, -np.inf, 2.0, 0.0, -1.0])
    got = run(plans["k_remainder"], np.float64, x=x, y=y)
    with np.errstate(all="ignore"):
        want = np.remainder(x, y)
    check(got, want, "exact", np.float64, "remainder", x, y)
    assert list(np.signbit(got[4:8])) == [True, False, True, False]


def test_constants(plans):
    x = np.array([1.0, -2.0, 0.0])
    o, p = np.zeros(3), np.zeros(3)
    plans["k_constants"].bind(x=x, o=o, p=p).launch()
    np.testing.assert_array_equal(o, [np.inf, -np.inf, -np.inf])
    assert np.isnan(p).all()
    assert math.isnan(hm.nan) and hm.inf == math.inf


@DTYPES
def test_vectors_broadcast(plans, dtype):
    rng = np.random.default_rng(3)
    v, w = rng.uniform(-2, 2, (3, 50)).astype(dtype), rng.uniform(-2, 2, (3, 50)).astype(dtype)
    o, q = np.zeros((3, 50), dtype), np.zeros((3, 50), dtype)
    plans["k_vector"].bind(v=v, w=w, o=o, q=q).launch()
    one = dtype(1)
    want_o = np.fmod(v, dtype(0.75)) + np.copysign(one, w) + np.arcsinh(v)
    np.testing.assert_allclose(o, want_o, rtol=4 * np.finfo(dtype).eps, atol=4 * np.finfo(dtype).eps)
    fmas = np.array([[_fma_exact(float(a), float(b), 0.5, dtype) for a, b in zip(r, s)] for r, s in zip(v, w)])
    np.testing.assert_allclose(q, fmas + np.clip(v, dtype(-0.25), w), rtol=4 * np.finfo(dtype).eps)


# ---------------------------------------------------------------- derivatives

# name -> (kernel, jax.numpy function, points inside the domain, smooth there)
UNARY_D = {
    "asin": (k_asin, jnp.arcsin, [-0.9, -0.3, 0.0, 0.4, 0.8], True),
    "acos": (k_acos, jnp.arccos, [-0.9, -0.3, 0.0, 0.4, 0.8], True),
    "atan": (k_atan, jnp.arctan, [-3.0, -0.3, 0.0, 0.4, 5.0], True),
    "sinh": (k_sinh, jnp.sinh, [-3.0, -0.3, 0.0, 0.4, 2.0], True),
    "cosh": (k_cosh, jnp.cosh, [-3.0, -0.3, 0.0, 0.4, 2.0], True),
    "asinh": (k_asinh, jnp.arcsinh, [-3.0, -0.3, 0.0, 0.4, 5.0], True),
    "acosh": (k_acosh, jnp.arccosh, [1.1, 1.5, 2.0, 4.0, 10.0], True),
    "atanh": (k_atanh, jnp.arctanh, [-0.9, -0.3, 0.0, 0.4, 0.8], True),
    "erf": (k_erf, jax.scipy.special.erf, [-2.0, -0.3, 0.0, 0.4, 1.5], True),
    "erfc": (k_erfc, jax.scipy.special.erfc, [-2.0, -0.3, 0.0, 0.4, 1.5], True),
    "exp2": (k_exp2, jnp.exp2, [-3.0, -0.3, 0.0, 0.4, 2.0], True),
    "expm1": (k_expm1, jnp.expm1, [-3.0, -0.3, 0.0, 0.4, 2.0], True),
    "log1p": (k_log1p, jnp.log1p, [-0.9, -0.3, 0.0, 0.4, 5.0], True),
    "log2": (k_log2, jnp.log2, [0.1, 0.5, 1.0, 3.0, 50.0], True),
    "log10": (k_log10, jnp.log10, [0.1, 0.5, 1.0, 3.0, 50.0], True),
    "cbrt": (k_cbrt, jnp.cbrt, [-8.0, -0.3, 0.4, 2.0, 27.0], True),
    "rsqrt": (k_rsqrt, jax.lax.rsqrt, [0.1, 0.5, 1.0, 3.0, 50.0], True),
    "ceil": (k_ceil, jnp.ceil, [-2.5, -1.0, 0.0, 0.3, 2.0], False),
    "round": (k_round, jnp.round, [-2.5, -1.0, 0.5, 0.3, 2.7], False),
    "rint": (k_rint, jnp.rint, [-2.5, -1.0, 0.5, 0.3, 2.7], False),
    "trunc": (k_trunc, jnp.trunc, [-2.5, -1.0, 0.0, 0.3, 2.7], False),
    "absolute": (k_absolute, jnp.absolute, [-2.5, -1.0, 0.0, 0.3, 2.7], False),
}
BINARY_D = {
    "hypot": (k_hypot, jnp.hypot, ([3.0, -1.0, 0.5, 2.0, -0.1], [-4.0, 2.0, 0.0, 2.0, 1e-3]), True),
    "pow": (k_pow, jnp.power, ([0.5, 1.5, 2.0, 3.0, 0.1], [2.5, -1.3, 0.5, 3.0, 1.0]), True),
    "power": (k_power, jnp.power, ([0.5, 1.5, 2.0, 3.0, 0.1], [2.5, -1.3, 0.5, 3.0, 1.0]), True),
    "fmod": (k_fmod, jnp.fmod, ([7.5, -7.5, 7.5, -7.5, 0.3, 6.0], [2.0, 2.0, -2.0, -2.0, 0.7, 2.0]), False),
    "remainder": (k_remainder, jnp.remainder, ([7.5, -7.5, 7.5, -7.5, 0.3, 6.0, -6.0], [2.0, 2.0, -2.0, -2.0, 0.7, 2.0, 2.0]), False),
    "copysign": (k_copysign, jnp.copysign, ([1.0, -1.0, 0.0, 0.0, -0.0, 2.5], [-2.0, -2.0, 3.0, -0.0, 1.0, 1.0]), False),
    # jax has no fdim: the derivative of the branch taken, a > b ? a - b : 0 (docs/language.md)
    "fdim": (k_fdim, lambda a, b: jnp.where(a > b, a - b, 0.0), ([2.0, 1.0, -1.0, 0.5], [1.0, 2.0, -1.0, -3.0]), False),
}


def _grads(f, args):
    """d f / d each argument at every point: jax.grad of the sum over samples."""
    return jax.grad(lambda *a: jnp.sum(f(*a)), argnums=tuple(range(len(args))))(*args)


@pytest.mark.parametrize("name", list(UNARY_D))
def test_unary_derivatives_are_jax_numpy(name):
    kernel, ref, pts, smooth = UNARY_D[name]
    x = jnp.asarray(pts, jnp.float64)
    f = eagle_jax.function(kernel, wrt=("x",), lowering="ffi")
    (g,) = _grads(f, (x,))
    (want,) = _grads(jax.vmap(ref), (x,))
    np.testing.assert_allclose(g, want, rtol=1e-14, atol=1e-15, err_msg=name)
    np.testing.assert_allclose(jax.jacfwd(f)(x), jax.jacfwd(jax.vmap(ref))(x), rtol=1e-14, atol=1e-15, err_msg=name)
    if smooth:  # second order, both modes, against finite differences
        check_grads(f, (x,), order=2, modes=("fwd", "rev"), eps=1e-5, atol=5e-5, rtol=5e-5)
        h = jax.grad(lambda x: jnp.sum(jax.grad(lambda y: jnp.sum(f(y)))(x)))(x)
        h_ref = jax.grad(lambda x: jnp.sum(jax.grad(lambda y: jnp.sum(jax.vmap(ref)(y)))(x)))(x)
        np.testing.assert_allclose(h, h_ref, rtol=1e-12, atol=1e-12, err_msg=name)


@pytest.mark.parametrize("name", list(BINARY_D))
def test_binary_derivatives_are_jax_numpy(name):
    kernel, ref, (xs, ys), smooth = BINARY_D[name]
    x, y = jnp.asarray(xs, jnp.float64), jnp.asarray(ys, jnp.float64)
    f = eagle_jax.function(kernel, wrt=("x", "y"), lowering="ffi")
    got = _grads(f, (x, y))
    want = _grads(jax.vmap(ref), (x, y))
    for g, w, arg in zip(got, want, "xy"):
        np.testing.assert_allclose(g, w, rtol=1e-14, atol=1e-15, err_msg=f"{name} d/d{arg}")
    fwd = jax.jacfwd(f, argnums=(0, 1))(x, y)
    for g, w in zip(fwd, (jnp.diag(want[0]), jnp.diag(want[1]))):
        np.testing.assert_allclose(g, w, rtol=1e-14, atol=1e-15, err_msg=name)
    if smooth:
        check_grads(f, (x, y), order=2, modes=("fwd", "rev"), eps=1e-5, atol=5e-5, rtol=5e-5)


def test_fma_derivatives():
    rng = np.random.default_rng(1)
    x, y, z = (jnp.asarray(rng.uniform(-2, 2, 6)) for _ in range(3))
    f = eagle_jax.function(k_fma, wrt=("x", "y", "z"), lowering="ffi")
    gx, gy, gz = _grads(f, (x, y, z))
    np.testing.assert_array_equal(gx, y)
    np.testing.assert_array_equal(gy, x)
    np.testing.assert_array_equal(gz, np.ones(6))
    check_grads(f, (x, y, z), order=2, modes=("fwd", "rev"), eps=1e-5, atol=5e-5, rtol=5e-5)


def test_clip_derivatives_are_jnp_clip_at_the_boundaries():
    x = jnp.asarray([-1.0, 1.0, 0.0, 2.0, -3.0, 0.5])
    lo = jnp.asarray([-1.0, -1.0, -1.0, -1.0, -1.0, 0.5])
    hi = jnp.asarray([1.0, 1.0, 1.0, 1.0, 1.0, 0.5])
    f = eagle_jax.function(k_clip, wrt=("x", "y", "z"), lowering="ffi")
    got = _grads(f, (x, lo, hi))
    want = _grads(jax.vmap(jnp.clip), (x, lo, hi))
    for g, w in zip(got, want):
        np.testing.assert_array_equal(g, w)


def test_third_order_of_a_composition():
    """Tangents of adjoints of tangents: every rule is written in ops that have rules."""

    @hawk.kernel
    def k_mix(x: Scalar, y: Scalar, o: Mutable[Scalar]):
        o = asinh(x) * erf(y) + hypot(x, y) + log1p(x * x) * cbrt(y + 3.0) + fma(x, y, atanh(0.3 * y))

    def ref(x, y):
        return (jnp.arcsinh(x) * jax.scipy.special.erf(y) + jnp.hypot(x, y)
                + jnp.log1p(x * x) * jnp.cbrt(y + 3.0) + x * y + jnp.arctanh(0.3 * y))

    f = eagle_jax.function(k_mix, wrt=("x", "y"), lowering="ffi")
    x, y = jnp.asarray([0.3, -1.2, 2.0]), jnp.asarray([0.7, 0.4, -1.5])
    def third_of(g):  # forward over reverse over forward
        return jax.jacfwd(jax.jacrev(jax.jacfwd(lambda a, b: jnp.sum(g(a, b)), argnums=0), argnums=1), argnums=0)

    third, third_ref = third_of(f), third_of(jax.vmap(ref))
    np.testing.assert_allclose(third(x, y), third_ref(x, y), rtol=1e-10, atol=1e-12)


# ---------------------------------------------------------------- the "xla" lowering


def _finite(a: np.ndarray) -> np.ndarray:
    return a[np.isfinite(a) & (np.abs(a) < 1e200) & (np.abs(a) > 1e-200) | (a == 0)]


@DTYPES
@pytest.mark.parametrize("name", list(UNARY) + list(BINARY) + list(TERNARY))
def test_xla_lowering_equals_ffi(name, dtype):
    kernel, _, tol = {**UNARY, **BINARY, **TERNARY}[name]
    arity = 1 if name in UNARY else 2 if name in BINARY else 3
    if arity == 1:
        args = (grid(dtype, 100),)
    elif arity == 2:
        args = pairs(dtype)
    else:
        args = triples(dtype)
    got = {lw: np.asarray(eagle_jax.function(kernel, lowering=lw)(*map(jnp.asarray, args))) for lw in ("ffi", "xla")}
    # XLA has its own asin, erf, cbrt, exp2 (exp(x ln 2)), ...: within test_jax_lowerings.py's
    # relative tolerance of glibc's; the exact ones are the same bits
    x, f = got["xla"], got["ffi"]
    if tol in ("exact", "zeros") and name != "rsqrt":  # XLA turns 1 / sqrt(x) into its rsqrt
        d = ulps_apart(x, f)
        bad = (d > 0) & ~((tol == "zeros") & (x == f))
    else:
        rtol = {np.float64: 1e-12, np.float32: 1e-5}[dtype]
        with np.errstate(all="ignore"):
            rel = np.abs(x.astype(np.float64) - f) / np.maximum(np.abs(f.astype(np.float64)), np.finfo(dtype).tiny)
        bad = ~((x == f) | (np.isnan(x) & np.isnan(f)) | (rel <= rtol))
    for a in args:  # XLA flushes subnormals, and its pow / hypot lose more at the extremes
        bad &= ((np.abs(a) < 1e30) & ((np.abs(a) > 1e-30) | (a == 0))) | ~np.isfinite(a)
    bad &= (np.abs(f) > 1e-290) | (f == 0) | ~np.isfinite(f)  # results XLA flushes to zero
    assert not bad.any(), (name, [a[bad][:6] for a in args], got["xla"][bad][:6], got["ffi"][bad][:6])


# ---------------------------------------------------------------- names and refusals


def test_hawk_math_all_is_pinned():
    assert hm.__all__ == [
        "vec", "norm", "dot", "cross", "normalize", "sqrt", "exp", "log", "sin", "cos", "tan",
        "tanh", "atan2", "abs", "minimum", "maximum", "clamp", "floor", "where", "sign",
        "mat", "transpose", "det", "inverse", "outer", "trace", "identity",
        "quat_mul", "quat_conj", "quat_rotate", "quat_to_matrix", "quat_from_axis_angle",
        "stop_gradient",
        "eye", "diag", "diagonal", "tril", "triu", "inv", "solve", "lu", "lu_solve", "cholesky",
        "cho_solve", "lstsq", "eigh",
        "asin", "acos", "atan", "sinh", "cosh", "asinh", "acosh", "atanh", "erf", "erfc", "exp2",
        "expm1", "log1p", "log2", "log10", "cbrt", "hypot", "pow", "power", "ceil", "round", "rint",
        "trunc", "fmod", "remainder", "copysign", "fdim", "fma", "clip", "isnan", "isinf", "isfinite",
        "rsqrt", "absolute", "nan", "inf",
        "sample_index", "n_samples",
    ]
    from raptor_core import _core

    known = set(_core.math_functions())
    for name in hm.__all__:
        if callable(getattr(hm, name)):
            assert name in known, name
            assert getattr(hm, name).__doc__, name


def test_python_math_remainder_is_refused():
    with pytest.raises(hawk.KernelError, match="IEEE"):

        @hawk.kernel
        def k_bad(x: Scalar, o: Mutable[Scalar]):
            o = math.remainder(x, 2.0)


def test_predicates_of_vectors_are_refused():
    with pytest.raises(hawk.KernelError, match=r"isnan\(\) takes a Scalar"):

        @hawk.kernel
        def k_bad(v: Vector[3], o: Mutable[Scalar]):
            o = 1.0 if isnan(v) else 0.0


def test_python_math_names_map_to_hawk_math(run_kernel):
    @hawk.kernel
    def k_pymath(x: Scalar, o: Mutable[Scalar]):
        o = math.asinh(x) + math.fmod(x, 0.7) + math.copysign(1.0, x) + math.ceil(x) + (1.0 if math.isfinite(x) else 0.0)

    x = np.array([0.3, -1.7, 2.5])
    out = np.zeros(3)
    run_kernel(k_pymath, x=x, o=out)
    want = np.arcsinh(x) + np.fmod(x, 0.7) + np.copysign(1.0, x) + np.ceil(x) + 1.0
    np.testing.assert_allclose(out, want, rtol=1e-15)


def test_a_predicate_terminates_a_sample(run_kernel):
    """isinf(h) as the Terminated condition of a stepping kernel: a sample whose value overflows
    stops there; the others run every step."""

    @hawk.kernel(steps=4)
    def k_stop(x: Scalar, terminated: Terminated, h: Mutable[Scalar]):
        h = h * x
        terminated = isinf(h) or hm.isnan(h)

    x = np.array([1e200, 2.0, 1e300, np.nan])
    h = np.array([1e200, 1.0, 1e300, 1.0])
    mask = np.zeros(4, bool)
    run_kernel(k_stop, x=x, terminated=mask, h=h)
    np.testing.assert_array_equal(h[:3], [np.inf, 16.0, np.inf])
    assert np.isnan(h[3])
    np.testing.assert_array_equal(mask, [True, False, True, True])


@pytest.mark.parametrize("name", list(UNARY_D) + list(BINARY_D))
def test_xla_derivatives_equal_ffi(name):
    """The "xla" lowering's derivatives (the linearize split, cpp/ad/linearize.hpp, as XLA
    operations) against the "ffi" path's, first and second order."""
    if name in UNARY_D:
        kernel, _, pts, _ = UNARY_D[name]
        args, wrt = (jnp.asarray(pts, jnp.float64),), ("x",)
    else:
        kernel, _, (xs, ys), _ = BINARY_D[name]
        args, wrt = (jnp.asarray(xs, jnp.float64), jnp.asarray(ys, jnp.float64)), ("x", "y")
    got = {}
    for lw in ("ffi", "xla"):
        f = eagle_jax.function(kernel, wrt=wrt, lowering=lw)
        first = _grads(f, args)
        second = jax.jacfwd(lambda *a: _grads(f, a)[0], argnums=0)(*args)
        got[lw] = (first, second)
    for a, b in zip(jax.tree.leaves(got["ffi"]), jax.tree.leaves(got["xla"])):
        np.testing.assert_allclose(np.asarray(b), np.asarray(a), rtol=1e-12, atol=1e-13, err_msg=name)


def test_the_tables_of_two_over_pi_are_two_over_pi():
    """sin and cos reduce their arguments with 2/pi's bits from two tables in
    cpp/runtime/rp_trig.h (double's large arguments: the bits; float's: per exponent, 2^E 2/pi
    modulo 4); both recomputed here from pi by Machin's formula (pi/4 = 4 atan(1/5) -
    atan(1/239)) in exact integers, 2176 bits, and compared exactly."""
    import re
    from fractions import Fraction
    from pathlib import Path

    text = (Path(__file__).resolve().parents[1] / "cpp" / "runtime" / "rp_trig.h").read_text()
    body = re.search(r"rp_two_over_pi\[(\d+)\] = \{(.*?)\};", text, re.S)
    words = [int(w, 16) for w in re.findall(r"0x([0-9A-F]{16})ull", body.group(2))]
    assert len(words) == int(body.group(1)) == 35
    bits = 64 * (len(words) - 1)
    prec = bits + 128
    one = 1 << prec

    def atan_inv(n: int) -> int:
        total, term, k, sign = 0, one // n, 1, 1
        while term:
            total += sign * (term // k)
            term //= n * n
            k, sign = k + 2, -sign
        return total

    pi = 4 * (4 * atan_inv(5) - atan_inv(239))
    two_over_pi = (2 * one * one // pi) >> (prec - bits)  # bits fraction bits, truncated
    want = [0] + [(two_over_pi >> (bits - 64 * (j + 1))) & (2**64 - 1) for j in range(len(words) - 1)]
    assert words == want
    assert math.isclose(two_over_pi / 2**bits, 2 / math.pi, rel_tol=1e-15)

    # float's table: per biased exponent e = 1 .. 254, (2^(e - 150) 2/pi) mod 4 in three
    # doubles, each the top 29 bits (truncated) of what the ones before leave
    body = re.search(r"rp_two_over_pi_f32\[254 \* 3\] = \{(.*?)\};", text, re.S)
    parts = [float.fromhex(h) for h in re.findall(r"-?0x[0-9a-f.]+p[-+]?\d+", body.group(1))]
    assert len(parts) == 254 * 3
    for e in range(1, 255):
        c = Fraction(two_over_pi, 2**bits) * Fraction(2) ** (e - 150)
        c -= 4 * math.floor(c / 4)
        for part in parts[3 * (e - 1):3 * e]:
            top = c.numerator.bit_length() - c.denominator.bit_length()  # 2^top <= c < 2^(top + 1)
            top -= Fraction(2) ** top > c
            want_part = math.floor(c / Fraction(2) ** (top - 28)) * Fraction(2) ** (top - 28)
            assert Fraction(part) == want_part, (e, part)
            c -= want_part
