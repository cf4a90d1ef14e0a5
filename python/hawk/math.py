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
    # per-sample linear algebra (docs/language.md "Linear algebra")
    "eye", "diag", "diagonal", "tril", "triu", "inv", "solve", "lu", "lu_solve", "cholesky",
    "cho_solve", "lstsq", "eigh",
    # NumPy's names (docs/language.md "NumPy's elementwise functions")
    "asin", "acos", "atan", "sinh", "cosh", "asinh", "acosh", "atanh", "erf", "erfc", "exp2",
    "expm1", "log1p", "log2", "log10", "cbrt", "hypot", "pow", "power", "ceil", "round", "rint",
    "trunc", "fmod", "remainder", "copysign", "fdim", "fma", "clip", "isnan", "isinf", "isfinite",
    "rsqrt", "absolute", "nan", "inf",
    # the launch's numbering (docs/language.md "Sample index")
    "sample_index", "n_samples",
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
    "eye": "eye(n): the n x n identity Matrix (numpy.eye; same as identity).",
    "diag": "diag(x): a Vector's diagonal Matrix, or a Matrix's diagonal as a Vector (numpy.diag).",
    "diagonal": "diagonal(m): m[i, i] for i < min(rows, cols), as a Vector (numpy.diagonal).",
    "tril": "tril(m, k=0): m with the components above diagonal k set to 0 (numpy.tril).",
    "triu": "triu(m, k=0): m with the components below diagonal k set to 0 (numpy.triu).",
    "inv": "Ainv, info = inv(A): the inverse of a square Matrix (1x1 to 6x6) by LU with partial pivoting; info is 0, or the first zero pivot (1-based), and then Ainv is zeros.",
    "solve": "x, info = solve(A, b): A x = b (b a Vector[n] or a Matrix[n, k]) by LU with partial pivoting; info is 0, or the first zero pivot (1-based, LAPACK's getrf), and then x is zeros.",
    "lu": "(lu, piv), info = lu(A): P A = L U with partial pivoting, scipy.linalg.lu_factor's (lu, piv) and getrf's info.",
    "lu_solve": "lu_solve((lu, piv), b): A x = b from lu()'s factor (scipy.linalg.lu_solve); zeros when U has a zero diagonal.",
    "cholesky": "L, info = cholesky(A): the lower triangular L with L L^T = (A + A^T) / 2; info is 0, or the order of the first leading minor that is not positive definite (potrf), and then L is zeros.",
    "cho_solve": "cho_solve(L, b): L L^T x = b for cholesky()'s L; zeros when L has a zero diagonal.",
    "lstsq": "x, info = lstsq(J, r): the x minimising norm(J x - r) (J up to 6 columns) through the normal equations by Cholesky; info > 0 (and x zeros) when J^T J is not positive definite.",
    "eigh": "w, V, info = eigh(A): the eigenvalues (ascending) and eigenvectors (V's columns, each signed so its largest-magnitude component is positive) of (A + A^T) / 2, by cyclic Jacobi; info is 1 (and w, V zeros) when it did not converge (a NaN or inf in A).",
    "stop_gradient": "stop_gradient(x): x, with derivative 0 (as jax.lax.stop_gradient).",
    "asin": "asin(x): the arc sine, in [-pi/2, pi/2] (NaN outside [-1, 1]; numpy.arcsin).",
    "acos": "acos(x): the arc cosine, in [0, pi] (NaN outside [-1, 1]; numpy.arccos).",
    "atan": "atan(x): the arc tangent, in [-pi/2, pi/2] (numpy.arctan).",
    "sinh": "sinh(x): the hyperbolic sine.",
    "cosh": "cosh(x): the hyperbolic cosine.",
    "asinh": "asinh(x): the inverse hyperbolic sine (numpy.arcsinh).",
    "acosh": "acosh(x): the inverse hyperbolic cosine (NaN below 1; numpy.arccosh).",
    "atanh": "atanh(x): the inverse hyperbolic tangent (+-inf at +-1, NaN beyond; numpy.arctanh).",
    "erf": "erf(x): the error function (scipy.special.erf).",
    "erfc": "erfc(x): 1 - erf(x), accurate where erf(x) is near 1 (scipy.special.erfc).",
    "exp2": "exp2(x): 2 ** x.",
    "expm1": "expm1(x): exp(x) - 1, accurate near 0.",
    "log1p": "log1p(x): log(1 + x), accurate near 0 (NaN below -1).",
    "log2": "log2(x): the base-2 logarithm.",
    "log10": "log10(x): the base-10 logarithm.",
    "cbrt": "cbrt(x): the real cube root (negative for negative x).",
    "hypot": "hypot(x, y): sqrt(x*x + y*y) without overflow or underflow (C's hypot).",
    "pow": "pow(x, y): x ** y (an integer literal y multiplies, as jax.numpy.power).",
    "power": "power(x, y): x ** y, as numpy.power (same as pow).",
    "ceil": "ceil(x): the smallest integer >= x, as a float.",
    "round": "round(x): the nearest integer, halves to even (numpy.round: round(2.5) == 2.0), as a float.",
    "rint": "rint(x): the nearest integer, halves to even, as a float (same as round).",
    "trunc": "trunc(x): x rounded toward zero, as a float.",
    "fmod": "fmod(a, b): C's fmod, the remainder with the sign of a (numpy.fmod).",
    "remainder": "remainder(a, b): a - floor(a / b) * b exactly, with the sign of b (numpy.remainder, Python's %).",
    "copysign": "copysign(x, y): the magnitude of x with the sign of y.",
    "fdim": "fdim(a, b): a - b where a > b, else 0 (C's fdim).",
    "fma": "fma(a, b, c): a * b + c rounded once (C's fma).",
    "clip": "clip(x, lo, hi): minimum(maximum(x, lo), hi), as numpy.clip (same as clamp).",
    "isnan": "isnan(x): whether x is NaN (a bool, for where, if, Terminated).",
    "isinf": "isinf(x): whether x is +inf or -inf (a bool).",
    "isfinite": "isfinite(x): whether x is neither NaN nor infinite (a bool).",
    "rsqrt": "rsqrt(x): 1 / sqrt(x), two operations each rounded (jax.lax.rsqrt up to rounding).",
    "absolute": "absolute(x): abs(x), as numpy.absolute.",
    "sample_index": "sample_index(): this sample's global index in the launch, an int (0 .. n_samples() - 1; "
    "a shard of a sharded call numbers its samples as the whole call would).",
    "n_samples": "n_samples(): the samples of the whole launch, an int (all shards together).",
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
eye = _make("eye")
diag = _make("diag")
diagonal = _make("diagonal")
tril = _make("tril")
triu = _make("triu")
inv = _make("inv")
solve = _make("solve")
lu = _make("lu")
lu_solve = _make("lu_solve")
cholesky = _make("cholesky")
cho_solve = _make("cho_solve")
lstsq = _make("lstsq")
eigh = _make("eigh")
asin = _make("asin")
acos = _make("acos")
atan = _make("atan")
sinh = _make("sinh")
cosh = _make("cosh")
asinh = _make("asinh")
acosh = _make("acosh")
atanh = _make("atanh")
erf = _make("erf")
erfc = _make("erfc")
exp2 = _make("exp2")
expm1 = _make("expm1")
log1p = _make("log1p")
log2 = _make("log2")
log10 = _make("log10")
cbrt = _make("cbrt")
hypot = _make("hypot")
pow = _make("pow")  # noqa: A001 - the kernel language's pow
power = _make("power")
ceil = _make("ceil")
round = _make("round")  # noqa: A001 - the kernel language's round (halves to even, as NumPy)
rint = _make("rint")
trunc = _make("trunc")
fmod = _make("fmod")
remainder = _make("remainder")
copysign = _make("copysign")
fdim = _make("fdim")
fma = _make("fma")
clip = _make("clip")
isnan = _make("isnan")
isinf = _make("isinf")
isfinite = _make("isfinite")
rsqrt = _make("rsqrt")
absolute = _make("absolute")
sample_index = _make("sample_index")
n_samples = _make("n_samples")

#: NaN, a float constant in kernel bodies (``hawk.math.nan`` or ``from hawk.math import nan``).
nan: float = float("nan")
#: +infinity, a float constant in kernel bodies (``-inf`` for -infinity).
inf: float = float("inf")
