"""hawk.math functions and the kernel language's operators and statements, in float32 and
float64, against plain NumPy on seeded random planes (docs/language.md).

All kernels of this module are compiled once (one plan.auto call, module-scoped cache dir).
A kernel that fails to compile is recorded and its test fails with the compiler's message.
"""

from __future__ import annotations

import math

import numpy as np
import pytest

import hawk
from hawk import Mutable, Param, Scalar, Vector
from hawk.math import (
    atan2, clamp, cos, cross, dot, exp, floor, log, maximum, minimum, norm, normalize, sign, sin,
    sqrt, tan, tanh, vec, where,
)
import hawk.math as hm

from conftest import plan_kernels

N = 1000
SEED = 20240611

# Module-level constants that kernels fold in.
SCALE = 2.5
OFFSET = -0.125
K = 4
KI = 3

CASES: list[tuple[str, object, object, str]] = []  # (id, kernel or KernelError, ref, tol)
_FAILED: dict[str, BaseException] = {}


def case(ref, tol: str = "exact"):
    """Registers a kernel with its NumPy reference ``ref(d)`` (d: inputs in the test's dtype).
    tol: "exact" (bit-for-bit), "close" (1e-12 / ~1e-6 relative), "loose" (for results that
    amplify input rounding, e.g. % near the divisor)."""

    def deco(fn):
        try:
            k = hawk.kernel(fn)
        except hawk.KernelError as err:  # a product bug: the case fails, the module loads
            k = err
        CASES.append((fn.__name__, k, ref, tol))
        return k

    return deco


# ---------------------------------------------------------------- inputs


def make_inputs(dtype) -> dict[str, np.ndarray]:
    rng = np.random.default_rng(SEED)
    x = rng.uniform(-3.0, 3.0, N)
    y = rng.uniform(-3.0, 3.0, N)
    y[::7] = x[::7]  # equal pairs so == / <= / >= see both outcomes
    x[::97] = 0.0
    y[5::101] = 0.0
    p = rng.uniform(0.1, 4.0, N)
    a = rng.uniform(-2.0, 2.0, (3, N))
    b = rng.uniform(-2.0, 2.0, (3, N))
    a[:, ::89] = 0.0  # sign(0) and equal components
    q = rng.uniform(0.1, 3.0, (3, N))
    d = {k: np.ascontiguousarray(v, dtype=dtype) for k, v in dict(x=x, y=y, p=p, a=a, b=b, q=q).items()}
    d["s"] = 0.75  # a Param
    return d


def make_nan_inputs(dtype) -> dict[str, np.ndarray]:
    d = make_inputs(dtype)
    d["x"][::3] = np.nan
    d["y"][1::4] = np.nan
    d["x"][::12] = np.nan
    d["y"][::12] = np.nan  # both NaN at multiples of 12; only x or only y elsewhere
    d["a"][0, ::5] = np.nan
    d["b"][1, ::3] = np.nan
    return d


def typed(d, dtype):
    """The reference's view: Params as NumPy scalars of the dtype (the kernel rounds them)."""
    out = dict(d)
    out["s"] = dtype(d["s"])
    return out


# ---------------------------------------------------------------- arithmetic operators


@case(lambda d: d["x"] + d["y"])
def op_add(x: Scalar, y: Scalar, out: Mutable[Scalar]):
    out = x + y


@case(lambda d: d["x"] - d["y"])
def op_sub(x: Scalar, y: Scalar, out: Mutable[Scalar]):
    out = x - y


@case(lambda d: d["x"] * d["y"])
def op_mul(x: Scalar, y: Scalar, out: Mutable[Scalar]):
    out = x * y


@case(lambda d: d["x"] / d["p"])
def op_div(x: Scalar, p: Scalar, out: Mutable[Scalar]):
    out = x / p


@case(lambda d: d["x"] * d["x"], "exact")
def op_pow2(x: Scalar, out: Mutable[Scalar]):
    out = x ** 2


@case(lambda d: d["x"] ** 3, "close")
def op_pow3(x: Scalar, out: Mutable[Scalar]):
    out = x ** 3


@case(lambda d: d["p"] ** -2, "close")
def op_pow_neg_int(p: Scalar, out: Mutable[Scalar]):
    out = p ** -2


@case(lambda d: np.ones_like(d["x"]))
def op_pow0(x: Scalar, out: Mutable[Scalar]):
    out = x ** 0


@case(lambda d: d["p"] ** 0.5, "close")
def op_pow_float_const(p: Scalar, out: Mutable[Scalar]):
    out = p ** 0.5


@case(lambda d: d["p"] ** d["y"], "close")
def op_pow_float_plane(p: Scalar, y: Scalar, out: Mutable[Scalar]):
    out = p ** y


@case(lambda d: d["p"] ** 1.5 * 2.0, "close")
def op_pow_precedence(p: Scalar, out: Mutable[Scalar]):
    out = 2.0 * p ** 1.5  # ** binds tighter than *


@case(lambda d: np.floor_divide(d["x"], d["y"]), "exact_floor")
def op_floordiv(x: Scalar, y: Scalar, out: Mutable[Scalar]):
    out = x // y


@case(lambda d: np.mod(d["x"], d["y"]), "mod")
def op_mod(x: Scalar, y: Scalar, out: Mutable[Scalar]):
    out = x % y


@case(lambda d: np.mod(d["x"], 1.5), "mod")
def op_mod_const(x: Scalar, out: Mutable[Scalar]):
    out = x % 1.5


@case(lambda d: -d["x"])
def op_neg(x: Scalar, out: Mutable[Scalar]):
    out = -x


@case(lambda d: +d["x"] - (-d["y"]))
def op_unary_plus(x: Scalar, y: Scalar, out: Mutable[Scalar]):
    out = +x - -y


@case(lambda d: (d["x"] + d["y"]) * (d["x"] - d["p"]) / d["p"] - d["s"] * d["x"])
def op_compound(x: Scalar, y: Scalar, p: Scalar, s: Param, out: Mutable[Scalar]):
    out = (x + y) * (x - p) / p - s * x


@case(lambda d: d["x"] - d["y"] - d["p"])
def op_left_assoc(x: Scalar, y: Scalar, p: Scalar, out: Mutable[Scalar]):
    out = x - y - p  # (x - y) - p


@case(lambda d: d["x"] * 7.0 + 3.0 / 2.0 + 1.0)
def op_int_literals(x: Scalar, out: Mutable[Scalar]):
    out = x * 7 + 3 / 2 + 1  # Python ints become floats; 3 / 2 is 1.5, not 1


@case(lambda d: d["x"] - 2.0)
def op_int_const_folding(x: Scalar, out: Mutable[Scalar]):
    out = x + (7 // 2 - 5 % 3 + (-7) // 2 - (-7) % 2 + 2 ** 3 - 6)  # 3 - 2 - 4 - 1 + 8 - 6 = -2


# ---------------------------------------------------------------- comparisons and logic


@case(lambda d: np.where(d["x"] < d["y"], 1.0, 0.0) + np.where(d["x"] <= d["y"], 2.0, 0.0)
      + np.where(d["x"] > d["y"], 4.0, 0.0) + np.where(d["x"] >= d["y"], 8.0, 0.0)
      + np.where(d["x"] == d["y"], 16.0, 0.0) + np.where(d["x"] != d["y"], 32.0, 0.0))
def cmp_all(x: Scalar, y: Scalar, out: Mutable[Scalar]):
    out = (where(x < y, 1.0, 0.0) + where(x <= y, 2.0, 0.0) + where(x > y, 4.0, 0.0)
           + where(x >= y, 8.0, 0.0) + where(x == y, 16.0, 0.0) + where(x != y, 32.0, 0.0))


@case(lambda d: np.where((-1.0 < d["x"]) & (d["x"] < d["y"]) & (d["y"] <= 2.0), d["x"], d["y"]))
def cmp_chained(x: Scalar, y: Scalar, out: Mutable[Scalar]):
    out = where(-1.0 < x < y <= 2.0, x, y)


@case(lambda d: np.where(((d["x"] > 0) & (d["y"] > 0)) | ~(d["p"] < 2.0), d["x"] + d["y"], d["x"] - d["y"]))
def logic_and_or_not(x: Scalar, y: Scalar, p: Scalar, out: Mutable[Scalar]):
    out = where((x > 0 and y > 0) or not p < 2.0, x + y, x - y)


@case(lambda d: np.where(d["x"] > d["y"], d["x"] * 2.0, d["y"] - 1.0))
def cond_expr(x: Scalar, y: Scalar, out: Mutable[Scalar]):
    out = x * 2.0 if x > y else y - 1.0


@case(lambda d: np.where(d["x"] > 1.0, d["x"], np.where(d["x"] > -1.0, d["x"] * d["y"], np.where(d["y"] > 0.0, -d["x"], 5.0))))
def if_elif_else(x: Scalar, y: Scalar, out: Mutable[Scalar]):
    if x > 1.0:
        r = x
    elif x > -1.0:
        r = x * y
    elif y > 0.0:
        r = -x
    else:
        r = 5.0
    out = r


@case(lambda d: np.where(d["x"] > 0.0, d["x"] + 1.0, d["x"]))
def if_without_else(x: Scalar, out: Mutable[Scalar]):
    r = x
    if x > 0.0:
        r = r + 1.0
    out = r


@case(lambda d: np.where((d["x"] > 0) & (d["y"] > 0), 1.0, np.where(d["x"] > 0, 2.0, np.where(d["y"] > 0, 3.0, 4.0))))
def if_nested(x: Scalar, y: Scalar, out: Mutable[Scalar]):
    if x > 0:
        if y > 0:
            out = 1.0
        else:
            out = 2.0
    else:
        if y > 0:
            out = 3.0
        else:
            out = 4.0


# ---------------------------------------------------------------- loops, constants, assignment forms


@case(lambda d: sum(d["x"] * float(i) for i in range(K)), "close")
def for_range_const(x: Scalar, out: Mutable[Scalar]):
    acc = 0.0
    for i in range(K):
        acc = acc + x * i
    out = acc


@case(lambda d: d["x"] * SCALE + OFFSET + KI)
def module_constants(x: Scalar, out: Mutable[Scalar]):
    out = x * SCALE + OFFSET + KI


def _aug_ref(d):
    acc = d["x"] + d["y"]
    acc = acc * d["p"]
    acc = acc - 1.0
    acc = acc / d["p"]
    acc = acc ** 2
    return acc


@case(_aug_ref, "close")
def augmented_assign(x: Scalar, y: Scalar, p: Scalar, out: Mutable[Scalar]):
    acc = x
    acc += y
    acc *= p
    acc -= 1.0
    acc /= p
    acc = acc ** 2
    out = acc


@case(lambda d: d["y"] * 2.0 - d["x"])
def tuple_unpack(x: Scalar, y: Scalar, out: Mutable[Scalar]):
    u, w = x, y
    u, w = w, u  # a swap reads both before writing
    out = u * 2.0 - w


@case(lambda d: d["x"] + 1.0)
def docstring_ok(x: Scalar, out: Mutable[Scalar]):
    """A docstring is allowed as the first statement."""
    out = x + 1.0


@case(lambda d: (d["x"] * 3.0) * 2.0)
def reassign_output(x: Scalar, out: Mutable[Scalar]):
    out = x * 3.0
    out = out * 2.0  # reads what this sample just wrote


# ---------------------------------------------------------------- helpers and builtins


@hawk.func
def sq(u):
    return u * u


@hawk.func
def hyp(u, w):
    return sqrt(sq(u) + sq(w))


@hawk.func
def lerp(u, w, t):
    m = u + (w - u) * t
    return m


@case(lambda d: np.sqrt(d["x"] * d["x"] + d["y"] * d["y"]), "close")
def helper_calls_helper(x: Scalar, y: Scalar, out: Mutable[Scalar]):
    out = hyp(x, y)


@case(lambda d: d["x"] + (d["y"] - d["x"]) * d["s"])
def helper_with_param(x: Scalar, y: Scalar, s: Param, out: Mutable[Scalar]):
    out = lerp(x, y, s)


@case(lambda d: np.abs(d["x"]) + np.minimum(d["x"], d["y"]) * np.maximum(d["x"], d["p"]))
def python_builtins(x: Scalar, y: Scalar, p: Scalar, out: Mutable[Scalar]):
    out = abs(x) + min(x, y) * max(x, p)


@case(lambda d: np.sqrt(d["p"]) + np.sin(d["x"]), "close")
def hawk_math_attribute(x: Scalar, p: Scalar, out: Mutable[Scalar]):
    out = hawk.math.sqrt(p) + hawk.math.sin(x)


@case(lambda d: np.sqrt(d["p"]) + np.sin(d["x"]), "close")
def hawk_math_module_alias(x: Scalar, p: Scalar, out: Mutable[Scalar]):
    out = hm.sqrt(p) + hm.sin(x)  # `import hawk.math as hm`


@case(lambda d: np.sqrt(d["p"]) + np.cos(d["x"]), "close")
def python_math_module(x: Scalar, p: Scalar, out: Mutable[Scalar]):
    out = math.sqrt(p) + math.cos(x)


# ---------------------------------------------------------------- hawk.math on Scalars


@case(lambda d: np.sqrt(d["p"]))
def m_sqrt(p: Scalar, out: Mutable[Scalar]):
    out = sqrt(p)


@case(lambda d: np.exp(d["x"]), "close")
def m_exp(x: Scalar, out: Mutable[Scalar]):
    out = exp(x)


@case(lambda d: np.log(d["p"]), "close")
def m_log(p: Scalar, out: Mutable[Scalar]):
    out = log(p)


@case(lambda d: np.sin(d["x"]), "close")
def m_sin(x: Scalar, out: Mutable[Scalar]):
    out = sin(x)


@case(lambda d: np.cos(d["x"]), "close")
def m_cos(x: Scalar, out: Mutable[Scalar]):
    out = cos(x)


@case(lambda d: np.tan(d["x"] * 0.4), "close")
def m_tan(x: Scalar, out: Mutable[Scalar]):
    out = tan(x * 0.4)


@case(lambda d: np.tanh(d["x"]), "close")
def m_tanh(x: Scalar, out: Mutable[Scalar]):
    out = tanh(x)


@case(lambda d: np.arctan2(d["y"], d["x"]), "close")
def m_atan2(x: Scalar, y: Scalar, out: Mutable[Scalar]):
    out = atan2(y, x)


@case(lambda d: np.abs(d["x"]))
def m_abs(x: Scalar, out: Mutable[Scalar]):
    out = hawk.math.abs(x)


@case(lambda d: np.minimum(d["x"], d["y"]))
def m_minimum(x: Scalar, y: Scalar, out: Mutable[Scalar]):
    out = minimum(x, y)


@case(lambda d: np.maximum(d["x"], d["y"]))
def m_maximum(x: Scalar, y: Scalar, out: Mutable[Scalar]):
    out = maximum(x, y)


@case(lambda d: np.minimum(np.maximum(d["x"], -1.25), 0.5))
def m_clamp(x: Scalar, out: Mutable[Scalar]):
    out = clamp(x, -1.25, 0.5)


@case(lambda d: np.minimum(np.maximum(d["x"], -d["p"]), d["p"]))
def m_clamp_planes(x: Scalar, p: Scalar, out: Mutable[Scalar]):
    out = clamp(x, -p, p)


@case(lambda d: np.floor(d["x"] * 2.0))
def m_floor(x: Scalar, out: Mutable[Scalar]):
    out = floor(x * 2.0)


@case(lambda d: np.where(d["x"] > d["y"], d["x"], d["p"]))
def m_where(x: Scalar, y: Scalar, p: Scalar, out: Mutable[Scalar]):
    out = where(x > y, x, p)


@case(lambda d: np.sign(d["x"]))
def m_sign(x: Scalar, out: Mutable[Scalar]):
    out = sign(x)


@case(lambda d: np.minimum(d["x"], d["y"]))
def nan_minimum(x: Scalar, y: Scalar, out: Mutable[Scalar]):
    out = minimum(x, y)


@case(lambda d: np.maximum(d["x"], d["y"]))
def nan_maximum(x: Scalar, y: Scalar, out: Mutable[Scalar]):
    out = maximum(x, y)


@case(lambda d: np.minimum(np.maximum(d["x"], -1.0), 1.0))
def nan_clamp(x: Scalar, out: Mutable[Scalar]):
    out = clamp(x, -1.0, 1.0)


@case(lambda d: np.sign(d["x"]))
def nan_sign(x: Scalar, out: Mutable[Scalar]):
    out = sign(x)


@case(lambda d: np.minimum(d["a"], d["b"]))
def nan_minimum_vec(a: Vector[3], b: Vector[3], out: Mutable[Vector[3]]):
    out = minimum(a, b)


@case(lambda d: np.maximum(d["a"], d["b"]))
def nan_maximum_vec(a: Vector[3], b: Vector[3], out: Mutable[Vector[3]]):
    out = maximum(a, b)


# ---------------------------------------------------------------- Vector[3] planes


def _norm(v):
    return np.sqrt(v[0] * v[0] + v[1] * v[1] + v[2] * v[2])


@case(lambda d: np.stack([d["x"], d["y"] * 2.0, d["x"] - d["y"]]))
def v_vec(x: Scalar, y: Scalar, out: Mutable[Vector[3]]):
    out = vec(x, y * 2.0, x - y)


@case(lambda d: _norm(d["a"]), "close")
def v_norm(a: Vector[3], out: Mutable[Scalar]):
    out = norm(a)


@case(lambda d: d["a"][0] * d["b"][0] + d["a"][1] * d["b"][1] + d["a"][2] * d["b"][2], "close")
def v_dot(a: Vector[3], b: Vector[3], out: Mutable[Scalar]):
    out = dot(a, b)


@case(lambda d: np.cross(d["a"], d["b"], axis=0), "close")
def v_cross(a: Vector[3], b: Vector[3], out: Mutable[Vector[3]]):
    out = cross(a, b)


@case(lambda d: d["q"] / _norm(d["q"]), "close")
def v_normalize(q: Vector[3], out: Mutable[Vector[3]]):
    out = normalize(q)


@case(lambda d: np.sqrt(d["q"]), "close")
def v_sqrt(q: Vector[3], out: Mutable[Vector[3]]):
    out = sqrt(q)


@case(lambda d: np.exp(d["a"]), "close")
def v_exp(a: Vector[3], out: Mutable[Vector[3]]):
    out = exp(a)


@case(lambda d: np.log(d["q"]), "close")
def v_log(q: Vector[3], out: Mutable[Vector[3]]):
    out = log(q)


@case(lambda d: np.sin(d["a"]), "close")
def v_sin(a: Vector[3], out: Mutable[Vector[3]]):
    out = sin(a)


@case(lambda d: np.cos(d["a"]), "close")
def v_cos(a: Vector[3], out: Mutable[Vector[3]]):
    out = cos(a)


@case(lambda d: np.tan(d["a"] * 0.5), "close")
def v_tan(a: Vector[3], out: Mutable[Vector[3]]):
    out = tan(a * 0.5)


@case(lambda d: np.tanh(d["a"]), "close")
def v_tanh(a: Vector[3], out: Mutable[Vector[3]]):
    out = tanh(a)


@case(lambda d: np.arctan2(d["a"], d["b"]), "close")
def v_atan2(a: Vector[3], b: Vector[3], out: Mutable[Vector[3]]):
    out = atan2(a, b)


@case(lambda d: np.abs(d["a"]))
def v_abs(a: Vector[3], out: Mutable[Vector[3]]):
    out = hawk.math.abs(a)


@case(lambda d: np.minimum(d["a"], d["b"]))
def v_minimum(a: Vector[3], b: Vector[3], out: Mutable[Vector[3]]):
    out = minimum(a, b)


@case(lambda d: np.maximum(d["a"], d["x"][None, :]))
def v_maximum_broadcast(a: Vector[3], x: Scalar, out: Mutable[Vector[3]]):
    out = maximum(a, x)


@case(lambda d: np.minimum(np.maximum(d["a"], -0.5), 0.75))
def v_clamp(a: Vector[3], out: Mutable[Vector[3]]):
    out = clamp(a, -0.5, 0.75)


@case(lambda d: np.floor(d["a"] * 3.0))
def v_floor(a: Vector[3], out: Mutable[Vector[3]]):
    out = floor(a * 3.0)


@case(lambda d: np.where(d["x"][None, :] > 0.0, d["a"], d["b"]))
def v_where(x: Scalar, a: Vector[3], b: Vector[3], out: Mutable[Vector[3]]):
    out = where(x > 0.0, a, b)


@case(lambda d: np.sign(d["a"]))
def v_sign(a: Vector[3], out: Mutable[Vector[3]]):
    out = sign(a)


@case(lambda d: d["a"] + d["b"] * d["x"][None, :] - d["s"] * d["a"] / d["q"])
def v_arith_broadcast(a: Vector[3], b: Vector[3], q: Vector[3], x: Scalar, s: Param, out: Mutable[Vector[3]]):
    out = a + b * x - s * a / q


@case(lambda d: -d["a"] * 2.0)
def v_neg(a: Vector[3], out: Mutable[Vector[3]]):
    out = -a * 2


@case(lambda d: d["a"] * d["a"])
def v_pow2(a: Vector[3], out: Mutable[Vector[3]]):
    out = a ** 2


@case(lambda d: d["q"] ** -1.0, "close")
def v_pow_neg(q: Vector[3], out: Mutable[Vector[3]]):
    out = q ** -1


@case(lambda d: d["q"] ** 0.25, "close")
def v_pow_float(q: Vector[3], out: Mutable[Vector[3]]):
    out = q ** 0.25


@case(lambda d: np.floor_divide(d["a"], d["q"]), "exact_floor")
def v_floordiv(a: Vector[3], q: Vector[3], out: Mutable[Vector[3]]):
    out = a // q


@case(lambda d: np.mod(d["a"], d["q"]), "mod")
def v_mod(a: Vector[3], q: Vector[3], out: Mutable[Vector[3]]):
    out = a % q


@case(lambda d: d["a"][0] * 1.0 + d["a"][1] * 10.0 + d["a"][2] * 100.0)
def v_component_read(a: Vector[3], out: Mutable[Scalar]):
    out = a[0] * 1.0 + a[1] * 10.0 + a[2] * 100.0


@case(lambda d: d["a"][0] + d["a"][2] - d["a"][1])
def v_negative_index(a: Vector[3], out: Mutable[Scalar]):
    out = a[-3] + a[-1] - a[-2]


@case(lambda d: np.stack([d["a"][0], d["x"], d["a"][2] * 2.0]))
def v_component_write(a: Vector[3], x: Scalar, out: Mutable[Vector[3]]):
    w = a
    w[1] = x
    w[2] = w[2] * 2.0
    out = w


@case(lambda d: np.stack([d["a"][0] * 2.0 - d["a"][0], 0.0 * d["a"][1], 0.0 * d["a"][2]]))
def v_component_write_copy_semantics(a: Vector[3], out: Mutable[Vector[3]]):
    w = a
    u = w  # a value copy: writing w[0] does not change u
    w[0] = w[0] * 2.0
    out = w - u


@case(lambda d: np.stack([d["x"], d["x"] + 1.0, d["x"] + 2.0]))
def v_output_component_write(x: Scalar, out: Mutable[Vector[3]]):
    out = vec(x, x, x)
    out[1] = x + 1.0
    out[2] = x + 2.0


@case(lambda d: 0.0 + d["a"][0] * 1.0 + d["a"][1] * 1.0 + d["a"][2] * 2.0)
def v_loop_index(a: Vector[3], out: Mutable[Scalar]):
    acc = 0.0
    for i in range(3):
        acc = acc + a[i] * max(i, 1)
    out = acc


@case(lambda d: np.stack([d["a"][2], d["a"][0], d["a"][1]]))
def v_unpack(a: Vector[3], out: Mutable[Vector[3]]):
    c0, c1, c2 = a[0], a[1], a[2]
    out = vec(c2, c0, c1)


@case(lambda d: np.where(d["x"][None, :] > 0.0, d["a"] * 2.0, d["b"]))
def v_if_else(x: Scalar, a: Vector[3], b: Vector[3], out: Mutable[Vector[3]]):
    if x > 0.0:
        r = a * 2.0
    else:
        r = b
    out = r


@case(lambda d: np.stack([d["a"][0] + d["b"][0], d["a"][1] + d["b"][1], d["a"][2] + d["b"][2]]) * SCALE)
def v_augmented(a: Vector[3], b: Vector[3], out: Mutable[Vector[3]]):
    w = a
    w += b
    w *= SCALE
    out = w


@case(lambda d: np.sqrt(_norm(d["a"]) ** 2 + _norm(d["b"]) ** 2), "close")
def v_helper(a: Vector[3], b: Vector[3], out: Mutable[Scalar]):
    out = hyp(norm(a), norm(b))


# ---------------------------------------------------------------- the harness

IDS = [c[0] for c in CASES]
NAN_CASES = {c[0] for c in CASES if c[0].startswith("nan_")}


@pytest.fixture(scope="module")
def plans(module_cache_dir):
    kernels = [c[1] for c in CASES if isinstance(c[1], hawk.Kernel)]
    return plan_kernels(kernels, module_cache_dir)


def _run(plan, d, dtype):
    k = plan.kernel
    values = {}
    for s in k.slots:
        if s.kind == "mutable":
            values[s.name] = np.full((s.width, N) if s.is_vector else (N,), -12345.0, dtype=dtype)
        else:
            values[s.name] = d[s.name]
    plan.bind(**values).launch()
    outs = [s.name for s in k.slots if s.kind == "mutable"]
    assert len(outs) == 1
    return values[outs[0]]


def _check(got, want, tol, dtype, name):
    want = np.asarray(want)
    assert got.dtype == np.dtype(dtype)
    assert got.shape == want.shape, (name, got.shape, want.shape)
    want = want.astype(dtype)
    f64 = np.dtype(dtype) == np.float64
    if tol == "exact":
        np.testing.assert_array_equal(got, want, err_msg=name)
    elif tol == "close":
        if f64:
            np.testing.assert_allclose(got, want, rtol=1e-12, atol=1e-14, err_msg=name)
        else:
            np.testing.assert_allclose(got, want, rtol=2e-6, atol=1e-6, err_msg=name)
    elif tol == "exact_floor":
        # floor(x / y): exact except where x / y rounds onto an integer (rare)
        bad = got != want
        assert bad.mean() < 0.005, (name, np.flatnonzero(bad)[:10])
        np.testing.assert_allclose(got[~bad], want[~bad], err_msg=name)
    elif tol == "mod":
        # Python modulo: the sign of the divisor, |r| < |y|; ulps of x from NumPy's fmod route
        atol = 1e-12 if f64 else 2e-6
        diff = np.abs(got.astype(np.float64) - want.astype(np.float64))
        ok = (diff <= atol * 4) | (np.isnan(got) & np.isnan(want))
        assert ok.mean() > 0.995, (name, np.flatnonzero(~ok)[:10])
    else:  # pragma: no cover
        raise AssertionError(tol)


@pytest.mark.parametrize("dtype", [np.float32, np.float64], ids=["f32", "f64"])
@pytest.mark.parametrize("cid", IDS)
def test_case(cid, dtype, plans):
    name, k, ref, tol = next(c for c in CASES if c[0] == cid)
    if not isinstance(k, hawk.Kernel):
        pytest.fail(f"kernel {name} was refused at definition: {k}")
    d = make_nan_inputs(dtype) if cid in NAN_CASES else make_inputs(dtype)
    inputs_before = {key: np.copy(v) for key, v in d.items() if isinstance(v, np.ndarray)}
    got = _run(plans[name], d, dtype)
    with np.errstate(all="ignore"):
        want = ref(typed(d, dtype))
    _check(got, want, tol, dtype, name)
    for key, v in inputs_before.items():  # inputs are read, never written
        np.testing.assert_array_equal(d[key], v)


def test_every_hawk_math_function_is_exercised():
    import inspect

    import pathlib

    src = inspect.getsource(inspect.getmodule(test_case))
    here = pathlib.Path(__file__).parent  # matrices, quaternions and stop_gradient are tested there
    src += (here / "test_matrix.py").read_text() + (here / "test_custom_jvp.py").read_text()
    src += (here / "test_math_numpy.py").read_text()  # the NumPy-named functions
    src += (here / "test_linalg.py").read_text()  # per-sample linear algebra
    src += (here / "test_sample_index.py").read_text()  # sample_index(), n_samples()
    for fname in hm.__all__:
        if callable(getattr(hm, fname)):  # not the constants nan, inf
            assert f"{fname}(" in src, fname
    assert set(hm.__all__) >= {"vec", "norm", "dot", "cross", "normalize", "sqrt", "exp", "log", "sin", "cos",
                               "tan", "tanh", "atan2", "abs", "minimum", "maximum", "clamp", "floor", "where",
                               "sign"}


def test_math_functions_refuse_plain_python_calls():
    with pytest.raises(TypeError, match="inside a @hawk.kernel"):
        hm.sqrt(4.0)
    with pytest.raises(TypeError, match="only be called inside a kernel"):
        sq(2.0)
