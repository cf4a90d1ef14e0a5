"""hawk.math: the functions a kernel body may call.

They exist so that names resolve and editors can complete them; the compiler gives them
their meaning (cpp/ir/lower_math.cpp). Called from plain Python they raise, because a
kernel body runs compiled, once per sample.
"""

from __future__ import annotations

from typing import Any, Callable

__all__ = [
    "vec", "norm", "dot", "cross", "normalize", "sqrt", "exp", "log", "sin", "cos", "tan",
    "tanh", "atan2", "abs", "minimum", "maximum", "clamp", "floor", "where", "sign",
    "mat", "transpose", "det", "inverse", "outer", "trace", "identity",
    "quat_mul", "quat_conj", "quat_rotate", "quat_to_matrix", "quat_from_axis_angle",
    "stop_gradient",
]

_DOCS = {
    "vec": "vec(a, b, ...): a Vector[k] from k Scalars.",
    "norm": "norm(v): the Euclidean length of a Vector.",
    "dot": "dot(a, b): the dot product of two Vectors of the same size.",
    "cross": "cross(a, b): the cross product of two Vector[3].",
    "normalize": "normalize(v): v / norm(v).",
    "sqrt": "sqrt(x): square root (per component for a Vector).",
    "exp": "exp(x): exponential (per component for a Vector).",
    "log": "log(x): natural logarithm (per component for a Vector).",
    "sin": "sin(x) (per component for a Vector).",
    "cos": "cos(x) (per component for a Vector).",
    "tan": "tan(x) (per component for a Vector).",
    "tanh": "tanh(x) (per component for a Vector).",
    "atan2": "atan2(y, x): the angle of (x, y).",
    "abs": "abs(x): absolute value (per component for a Vector).",
    "minimum": "minimum(a, b): the smaller, NaN if either is NaN (as jax.numpy.minimum).",
    "maximum": "maximum(a, b): the larger, NaN if either is NaN (as jax.numpy.maximum).",
    "clamp": "clamp(x, lo, hi): minimum(maximum(x, lo), hi).",
    "floor": "floor(x): the largest integer <= x, as a float.",
    "where": "where(cond, a, b): a where cond holds, else b (both are computed).",
    "sign": "sign(x): -1, 0 or 1 (NaN for NaN).",
    "mat": "mat(row, row, ...): a Matrix[r, c] from r rows, each a Vector[c] or a tuple of c numbers.",
    "transpose": "transpose(m): the transpose of a Matrix.",
    "det": "det(m): the determinant of a square Matrix (1x1 to 4x4).",
    "inverse": "inverse(m): the inverse of a square Matrix (1x1 to 4x4), adjugate over determinant.",
    "outer": "outer(a, b): the Matrix a[i] * b[j] of two Vectors.",
    "trace": "trace(m): the sum of a square Matrix's diagonal.",
    "identity": "identity(n): the n x n identity Matrix (n known when the kernel is defined).",
    "quat_mul": "quat_mul(a, b): the Hamilton product of quaternions (x, y, z, w).",
    "quat_conj": "quat_conj(q): (-x, -y, -z, w).",
    "quat_rotate": "quat_rotate(q, v): Vector[3] v rotated by the unit quaternion q.",
    "quat_to_matrix": "quat_to_matrix(q): the 3x3 rotation Matrix of the unit quaternion q.",
    "quat_from_axis_angle": "quat_from_axis_angle(axis, angle): the unit quaternion turning by angle about axis.",
    "stop_gradient": "stop_gradient(x): x, with derivative 0 (as jax.lax.stop_gradient).",
}


def _make(name: str) -> Callable[..., Any]:
    def fn(*args: Any) -> Any:
        raise TypeError(
            f"hawk.math.{name} can only be called inside a @hawk.kernel or @hawk.func body, "
            "which hawk compiles; use numpy or jax.numpy in plain Python"
        )

    fn.__name__ = name
    fn.__qualname__ = name
    fn.__doc__ = _DOCS[name]
    fn.__hawk_math__ = name  # type: ignore[attr-defined]
    return fn


vec = _make("vec")
norm = _make("norm")
dot = _make("dot")
cross = _make("cross")
normalize = _make("normalize")
sqrt = _make("sqrt")
exp = _make("exp")
log = _make("log")
sin = _make("sin")
cos = _make("cos")
tan = _make("tan")
tanh = _make("tanh")
atan2 = _make("atan2")
abs = _make("abs")  # noqa: A001 - the kernel language's abs
minimum = _make("minimum")
maximum = _make("maximum")
clamp = _make("clamp")
floor = _make("floor")
where = _make("where")
sign = _make("sign")
mat = _make("mat")
transpose = _make("transpose")
det = _make("det")
inverse = _make("inverse")
outer = _make("outer")
trace = _make("trace")
identity = _make("identity")
quat_mul = _make("quat_mul")
quat_conj = _make("quat_conj")
quat_rotate = _make("quat_rotate")
quat_to_matrix = _make("quat_to_matrix")
quat_from_axis_angle = _make("quat_from_axis_angle")
stop_gradient = _make("stop_gradient")
