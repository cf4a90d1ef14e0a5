// The NumPy-named elementwise functions of hawk.math (asin .. fma, docs/language.md "NumPy's
// elementwise functions"): one table, `math_fns()`, of each IR op's name, arity, result type
// and how it is computed, which every stage reads:
// - the IR's op names and arities (ir.cpp), the front end's hawk.math names (lower_math.cpp);
// - the meaning, `eval_math` below: the C library's function of the same name in the
//   arithmetic of T (std::asin(float) is asinf), or raptor's own (`Own`: expm1, log1p, asin,
//   acos, atan, hypot, from runtime/rp_math.h, rp_atan.h and rp_hypot.h), shared by constant
//   folding and the reference interpreter (passes/eval.cpp), so compiled code equals interpreted
//   code bit for bit;
// - the generated code: `Libm` functions through the host prelude's noipa `rp_` wrappers
//   (written from this table, codegen/host_driver.cpp), `Exact` ones as `std::` builtins GCC
//   may inline and vectorize (exact, so folding them cannot change a bit), `Formula` ones as
//   prelude helpers written once per target from the same formula as `eval_math`, `Own` ones
//   as the prelude's `rp_` functions over rp_math.h (inlined: loops vectorize); CUDA calls
//   the CUDA math library's function `cuda` (overloaded for float and double);
// - the interpreter's perturbation of inexact results (`Libm` and `Own`: interp.hpp);
// - the JAX bridge's "xla" lowering maps each `name` to jax.numpy (eagle/frameworks/_jax_xla.py);
// - derivative rules: cpp/ad/rules.cpp, its header table.
#pragma once

#include <cmath>
#include <span>

#include "ir/ir.hpp"
#include "runtime/rp_atan.h"
#include "runtime/rp_hypot.h"
#include "runtime/rp_math.h"

namespace raptor::ir {

enum class MathKind : uint8_t {
  Libm,     // the C library's function, not correctly rounded everywhere: host code calls it
            //  through a noipa wrapper so GCC never folds it (correctly rounded) itself
  Exact,    // exact by definition (ceil, rint, fmod, fma, copysign, predicates): a builtin
  Formula,  // a short formula of exact operations, written once per target's prelude
  Own,      // raptor's own function (runtime/rp_math.h: expm1, log1p; rp_atan.h: asin, acos,
            //  atan; rp_hypot.h: hypot), not correctly rounded but the same bits wherever the
            //  host computes it; vectorizable
};

struct MathFn {
  Op op;
  const char* name;  // the IR op name, the C function (host wrapper rp_<name>), the jnp key
  int arity;
  Type result;       // F, or B for the predicates isnan / isinf / isfinite
  MathKind kind;
  const char* cuda;  // the CUDA device function (rp_<name>: the CUDA prelude's formula)
};

// Every entry, in the order of ir.hpp's enum.
std::span<const MathFn> math_fns();
// The entry of `op`, or nullptr when `op` is not one of these functions.
const MathFn* math_fn(Op op);

// np.remainder: the sign of the divisor (Python's %): C's fmod, plus the divisor where the
// signs differ; a zero result has the divisor's sign (NumPy's npy_divmod). The host and CUDA
// preludes write the same formula (rp_remainder).
template <class T>
T py_remainder(T a, T b) {
  const T r = std::fmod(a, b);
  if (r != T(0)) return ((r < T(0)) != (b < T(0))) ? r + b : r;
  return std::copysign(T(0), b);
}

// C's fdim: a - b where a > b, +0 where a <= b, NaN where either is NaN (rp_fdim).
template <class T>
T fdim_of(T a, T b) {
  return a > b ? a - b : ((a != a || b != b) ? a + b : T(0));
}

// The value of function `op` (one of math_fns()) of `a` in the arithmetic of T; predicates
// give 1 or 0. Not defined for other ops (returns NaN).
template <class T>
T eval_math(Op op, const T* a) {
  switch (op) {
    case Op::Asin:
      return rp_math_asin(a[0]);  // raptor's own (Own)
    case Op::Acos:
      return rp_math_acos(a[0]);  // raptor's own (Own)
    case Op::Atan:
      return rp_math_atan(a[0]);  // raptor's own (Own)
    case Op::Sinh: return std::sinh(a[0]);
    case Op::Cosh: return std::cosh(a[0]);
    case Op::Asinh: return std::asinh(a[0]);
    case Op::Acosh: return std::acosh(a[0]);
    case Op::Atanh: return std::atanh(a[0]);
    case Op::Erf: return std::erf(a[0]);
    case Op::Erfc: return std::erfc(a[0]);
    case Op::Exp2: return std::exp2(a[0]);
    case Op::Expm1:
      return rp_math_expm1(a[0]);  // raptor's own (Own)
    case Op::Log1p:
      return rp_math_log1p(a[0]);  // raptor's own (Own)
    case Op::Log2: return std::log2(a[0]);
    case Op::Log10: return std::log10(a[0]);
    case Op::Cbrt: return std::cbrt(a[0]);
    case Op::Ceil: return std::ceil(a[0]);
    case Op::Rint: return std::rint(a[0]);  // the default rounding mode: half to even
    case Op::Trunc: return std::trunc(a[0]);
    case Op::IsNan: return std::isnan(a[0]) ? T(1) : T(0);
    case Op::IsInf: return std::isinf(a[0]) ? T(1) : T(0);
    case Op::IsFinite: return std::isfinite(a[0]) ? T(1) : T(0);
    case Op::Hypot:
      return rp_math_hypot(a[0], a[1]);  // raptor's own (Own)
    case Op::Fmod: return std::fmod(a[0], a[1]);
    case Op::Remainder: return py_remainder(a[0], a[1]);
    case Op::Copysign: return std::copysign(a[0], a[1]);
    case Op::Fdim: return fdim_of(a[0], a[1]);
    case Op::Fma: return std::fma(a[0], a[1], a[2]);
    default: return T(NAN);
  }
}

}  // namespace raptor::ir
