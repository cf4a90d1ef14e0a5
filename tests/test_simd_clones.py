"""raptor's own math functions called through their SIMD clones (codegen/host_driver.cpp,
kSimdCalls): a kernel that calls one of them 8 times or more calls a noinline vector version of
it instead of inlining its body at every call (the compile of such kernels took minutes). The
values must be the same bits as the inlined function's: each "many" kernel below calls one
function at eight scalings of x (its source calls rp_<name>_simd), each "one" kernel calls it
once at a scaling given as a Param (inlined), and the eight columns must equal the eight
launches of "one", in float64 and float32, over arguments that cross every branch of the
functions (tiny, huge, negative, zero, infinities, NaN), and also equal the reference
interpreter.
"""

from __future__ import annotations

import numpy as np
import pytest

import eagle
import hawk
from hawk import Mutable, Param, Scalar, Vector
from hawk.math import atan2, cos, exp, log, sin, tan, tanh, vec
import hawk.math as hm

SCALES = (1.0, 2.0, 3.0, -0.5, 0.25, 7.0, 1.0e-3, 1.0e3)


@hawk.kernel
def many_tanh(x: Scalar, y: Mutable[Vector[8]]):
    y = vec(tanh(1.0 * x), tanh(2.0 * x), tanh(3.0 * x), tanh(-0.5 * x), tanh(0.25 * x), tanh(7.0 * x),
            tanh(1.0e-3 * x), tanh(1.0e3 * x))


@hawk.kernel
def one_tanh(x: Scalar, c: Param, y: Mutable[Scalar]):
    y = tanh(c * x)


@hawk.kernel
def many_sin(x: Scalar, y: Mutable[Vector[8]]):
    y = vec(sin(1.0 * x), sin(2.0 * x), sin(3.0 * x), sin(-0.5 * x), sin(0.25 * x), sin(7.0 * x),
            sin(1.0e-3 * x), sin(1.0e3 * x))


@hawk.kernel
def one_sin(x: Scalar, c: Param, y: Mutable[Scalar]):
    y = sin(c * x)


@hawk.kernel
def many_cos(x: Scalar, y: Mutable[Vector[8]]):
    y = vec(cos(1.0 * x), cos(2.0 * x), cos(3.0 * x), cos(-0.5 * x), cos(0.25 * x), cos(7.0 * x),
            cos(1.0e-3 * x), cos(1.0e3 * x))


@hawk.kernel
def one_cos(x: Scalar, c: Param, y: Mutable[Scalar]):
    y = cos(c * x)


@hawk.kernel
def many_tan(x: Scalar, y: Mutable[Vector[8]]):
    y = vec(tan(1.0 * x), tan(2.0 * x), tan(3.0 * x), tan(-0.5 * x), tan(0.25 * x), tan(7.0 * x),
            tan(1.0e-3 * x), tan(1.0e3 * x))


@hawk.kernel
def one_tan(x: Scalar, c: Param, y: Mutable[Scalar]):
    y = tan(c * x)


@hawk.kernel
def many_exp(x: Scalar, y: Mutable[Vector[8]]):
    y = vec(exp(1.0 * x), exp(2.0 * x), exp(3.0 * x), exp(-0.5 * x), exp(0.25 * x), exp(7.0 * x),
            exp(1.0e-3 * x), exp(1.0e3 * x))


@hawk.kernel
def one_exp(x: Scalar, c: Param, y: Mutable[Scalar]):
    y = exp(c * x)


@hawk.kernel
def many_log(x: Scalar, y: Mutable[Vector[8]]):
    y = vec(log(1.0 * x), log(2.0 * x), log(3.0 * x), log(-0.5 * x), log(0.25 * x), log(7.0 * x),
            log(1.0e-3 * x), log(1.0e3 * x))


@hawk.kernel
def one_log(x: Scalar, c: Param, y: Mutable[Scalar]):
    y = log(c * x)


@hawk.kernel
def many_expm1(x: Scalar, y: Mutable[Vector[8]]):
    y = vec(hm.expm1(1.0 * x), hm.expm1(2.0 * x), hm.expm1(3.0 * x), hm.expm1(-0.5 * x), hm.expm1(0.25 * x),
            hm.expm1(7.0 * x), hm.expm1(1.0e-3 * x), hm.expm1(1.0e3 * x))


@hawk.kernel
def one_expm1(x: Scalar, c: Param, y: Mutable[Scalar]):
    y = hm.expm1(c * x)


@hawk.kernel
def many_log1p(x: Scalar, y: Mutable[Vector[8]]):
    y = vec(hm.log1p(1.0 * x), hm.log1p(2.0 * x), hm.log1p(3.0 * x), hm.log1p(-0.5 * x), hm.log1p(0.25 * x),
            hm.log1p(7.0 * x), hm.log1p(1.0e-3 * x), hm.log1p(1.0e3 * x))


@hawk.kernel
def one_log1p(x: Scalar, c: Param, y: Mutable[Scalar]):
    y = hm.log1p(c * x)


@hawk.kernel
def many_atan(x: Scalar, y: Mutable[Vector[8]]):
    y = vec(hm.atan(1.0 * x), hm.atan(2.0 * x), hm.atan(3.0 * x), hm.atan(-0.5 * x), hm.atan(0.25 * x),
            hm.atan(7.0 * x), hm.atan(1.0e-3 * x), hm.atan(1.0e3 * x))


@hawk.kernel
def one_atan(x: Scalar, c: Param, y: Mutable[Scalar]):
    y = hm.atan(c * x)


@hawk.kernel
def many_asin(x: Scalar, y: Mutable[Vector[8]]):
    y = vec(hm.asin(1.0 * x), hm.asin(2.0 * x), hm.asin(3.0 * x), hm.asin(-0.5 * x), hm.asin(0.25 * x),
            hm.asin(7.0 * x), hm.asin(1.0e-3 * x), hm.asin(1.0e3 * x))


@hawk.kernel
def one_asin(x: Scalar, c: Param, y: Mutable[Scalar]):
    y = hm.asin(c * x)


@hawk.kernel
def many_acos(x: Scalar, y: Mutable[Vector[8]]):
    y = vec(hm.acos(1.0 * x), hm.acos(2.0 * x), hm.acos(3.0 * x), hm.acos(-0.5 * x), hm.acos(0.25 * x),
            hm.acos(7.0 * x), hm.acos(1.0e-3 * x), hm.acos(1.0e3 * x))


@hawk.kernel
def one_acos(x: Scalar, c: Param, y: Mutable[Scalar]):
    y = hm.acos(c * x)


# Functions of two arguments: the second is z.
@hawk.kernel
def many_atan2(x: Scalar, z: Scalar, y: Mutable[Vector[8]]):
    y = vec(atan2(1.0 * x, z), atan2(2.0 * x, z), atan2(3.0 * x, z), atan2(-0.5 * x, z), atan2(0.25 * x, z),
            atan2(7.0 * x, z), atan2(1.0e-3 * x, z), atan2(1.0e3 * x, z))


@hawk.kernel
def one_atan2(x: Scalar, z: Scalar, c: Param, y: Mutable[Scalar]):
    y = atan2(c * x, z)


@hawk.kernel
def many_pow(x: Scalar, z: Scalar, y: Mutable[Vector[8]]):
    y = vec((1.0 * x) ** z, (2.0 * x) ** z, (3.0 * x) ** z, (-0.5 * x) ** z, (0.25 * x) ** z, (7.0 * x) ** z,
            (1.0e-3 * x) ** z, (1.0e3 * x) ** z)


@hawk.kernel
def one_pow(x: Scalar, z: Scalar, c: Param, y: Mutable[Scalar]):
    y = (c * x) ** z


@hawk.kernel
def many_hypot(x: Scalar, z: Scalar, y: Mutable[Vector[8]]):
    y = vec(hm.hypot(1.0 * x, z), hm.hypot(2.0 * x, z), hm.hypot(3.0 * x, z), hm.hypot(-0.5 * x, z),
            hm.hypot(0.25 * x, z), hm.hypot(7.0 * x, z), hm.hypot(1.0e-3 * x, z), hm.hypot(1.0e3 * x, z))


@hawk.kernel
def one_hypot(x: Scalar, z: Scalar, c: Param, y: Mutable[Scalar]):
    y = hm.hypot(c * x, z)


PAIRS = {
    "tanh": (many_tanh, one_tanh), "sin": (many_sin, one_sin), "cos": (many_cos, one_cos),
    "tan": (many_tan, one_tan), "exp": (many_exp, one_exp), "log": (many_log, one_log),
    "expm1": (many_expm1, one_expm1), "log1p": (many_log1p, one_log1p), "atan": (many_atan, one_atan),
    "asin": (many_asin, one_asin), "acos": (many_acos, one_acos), "atan2": (many_atan2, one_atan2),
    "pow": (many_pow, one_pow), "hypot": (many_hypot, one_hypot),
}


def arguments(dtype) -> tuple[np.ndarray, np.ndarray]:
    """x and z: a sweep over many binades of both signs, with zeros, infinities and NaN."""
    rng = np.random.default_rng(20261207)
    mags = np.concatenate([np.geomspace(1e-30, 1e30, 700), rng.uniform(0.0, 4.0, 300),
                           np.array([0.0, 1.0, 0.5, np.pi, 1e6, 1e18, np.inf, np.nan])])
    x = np.concatenate([mags, -mags]).astype(dtype)
    z = rng.permutation(np.concatenate([mags[:-3], -mags[:-3], [0.0, -0.0, 2.0, 0.5, -1.5, np.inf]]))
    return x, np.resize(z, x.size).astype(dtype)


@pytest.fixture(scope="module")
def plans(module_cache_dir):
    kernels = [k for pair in PAIRS.values() for k in pair]
    return dict(zip((k.name for k in kernels), eagle.plan.auto(kernels, targets=("host",), cache_dir=module_cache_dir)))


def _calls(plan, fn: str) -> int:
    """The calls of rp_<fn>_simd in the plan's kernel functions (its unit holds every kernel of
    the module: the functions named raptor_<kernel>_<digest>_<dtype>)."""
    parts = open(plan.source_path).read().split("RAPTOR_EXPORT void raptor_")[1:]
    return sum(p.count(f"rp_{fn}_simd(") for p in parts if p.startswith(plan.kernel.name + "_"))


def _bits(a: np.ndarray) -> np.ndarray:
    return a.view(np.uint64 if a.dtype == np.float64 else np.uint32)


@pytest.mark.parametrize("dtype", [np.float64, np.float32])
@pytest.mark.parametrize("fn", list(PAIRS))
def test_simd_clone_equals_the_inlined_function(plans, fn, dtype):
    many, one = PAIRS[fn]
    assert _calls(plans[many.name], fn) >= 8, "eight calls: the clone"
    assert _calls(plans[one.name], fn) == 0, "one call: inlined"
    x, z = arguments(dtype)
    two = "z" in [s.name for s in one.slots]
    extra = {"z": z} if two else {}
    got = np.zeros((8, x.size), dtype)  # a Vector plane: component-major
    plans[many.name].bind(x=x, y=got, **extra).launch()
    for i, c in enumerate(SCALES):
        want = np.zeros(x.size, dtype)
        plans[one.name].bind(x=x, c=c, y=want, **extra).launch()
        same = (_bits(got[i]) == _bits(want)) | (np.isnan(got[i]) & np.isnan(want))
        assert same.all(), (fn, c, x[~same][:5], got[i][~same][:5], want[~same][:5])


@pytest.mark.parametrize("fn", ["tanh", "sin", "pow"])
def test_simd_clone_equals_the_interpreter(plans, fn):
    many, _ = PAIRS[fn]
    x, z = arguments(np.float64)
    extra = {"z": z} if fn == "pow" else {}
    got = np.zeros((8, x.size))
    plans[many.name].bind(x=x, y=got, **extra).launch()
    ins = {"x": x.tolist(), **{k: v.tolist() for k, v in extra.items()}, "y": [0.0] * (8 * x.size)}
    outs = many._core.interpret(x.size, ins, [], False, False, 0)[0]
    want = np.asarray(outs["y"] if isinstance(outs, dict) else outs[0]).reshape(8, x.size)
    same = (_bits(got) == _bits(want)) | (np.isnan(got) & np.isnan(want))
    assert same.all(), (fn, got[~same][:5], want[~same][:5])
