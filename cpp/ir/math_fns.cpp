// The table of hawk.math's NumPy-named elementwise functions (see math_fns.hpp).
#include "ir/math_fns.hpp"

#include <iterator>

namespace raptor::ir {

namespace {

constexpr MathKind L = MathKind::Libm;
constexpr MathKind E = MathKind::Exact;
constexpr MathKind X = MathKind::Formula;
constexpr MathKind O = MathKind::Own;

constexpr MathFn kFns[] = {
    {Op::Asin, "asin", 1, Type::F, O, "asin"},
    {Op::Acos, "acos", 1, Type::F, O, "acos"},
    {Op::Atan, "atan", 1, Type::F, O, "atan"},
    {Op::Sinh, "sinh", 1, Type::F, L, "sinh"},
    {Op::Cosh, "cosh", 1, Type::F, L, "cosh"},
    {Op::Asinh, "asinh", 1, Type::F, L, "asinh"},
    {Op::Acosh, "acosh", 1, Type::F, L, "acosh"},
    {Op::Atanh, "atanh", 1, Type::F, L, "atanh"},
    {Op::Erf, "erf", 1, Type::F, L, "erf"},
    {Op::Erfc, "erfc", 1, Type::F, L, "erfc"},
    {Op::Exp2, "exp2", 1, Type::F, L, "exp2"},
    {Op::Expm1, "expm1", 1, Type::F, O, "expm1"},
    {Op::Log1p, "log1p", 1, Type::F, O, "log1p"},
    {Op::Log2, "log2", 1, Type::F, L, "log2"},
    {Op::Log10, "log10", 1, Type::F, L, "log10"},
    {Op::Cbrt, "cbrt", 1, Type::F, L, "cbrt"},
    {Op::Ceil, "ceil", 1, Type::F, E, "ceil"},
    {Op::Rint, "rint", 1, Type::F, E, "rint"},
    {Op::Trunc, "trunc", 1, Type::F, E, "trunc"},
    {Op::IsNan, "isnan", 1, Type::B, E, "isnan"},
    {Op::IsInf, "isinf", 1, Type::B, E, "isinf"},
    {Op::IsFinite, "isfinite", 1, Type::B, E, "isfinite"},
    {Op::Hypot, "hypot", 2, Type::F, O, "hypot"},
    {Op::Fmod, "fmod", 2, Type::F, E, "fmod"},
    {Op::Remainder, "remainder", 2, Type::F, X, "rp_remainder"},
    {Op::Copysign, "copysign", 2, Type::F, E, "copysign"},
    {Op::Fdim, "fdim", 2, Type::F, X, "rp_fdim"},
    {Op::Fma, "fma", 3, Type::F, E, "fma"},
};

}  // namespace

std::span<const MathFn> math_fns() { return kFns; }

// The table follows the enum from Asin to Fma, so an op's entry is at op - Asin.
static_assert(static_cast<int>(Op::Fma) - static_cast<int>(Op::Asin) + 1 ==
              static_cast<int>(std::size(kFns)));
constexpr bool in_enum_order() {
  for (size_t i = 0; i < std::size(kFns); ++i)
    if (static_cast<int>(kFns[i].op) != static_cast<int>(Op::Asin) + static_cast<int>(i))
      return false;
  return true;
}
static_assert(in_enum_order(), "math_fns() must list the ops in ir.hpp's order");
// The host prelude wraps the C library's functions of one argument only (codegen/host_driver.cpp,
// RP_LIBM): a Libm function of two would need its wrapper back.
constexpr bool libm_unary() {
  for (const MathFn& f : kFns)
    if (f.kind == MathKind::Libm && f.arity != 1) return false;
  return true;
}
static_assert(libm_unary(), "a Libm function of more than one argument has no host wrapper");

const MathFn* math_fn(Op op) {
  const int i = static_cast<int>(op) - static_cast<int>(Op::Asin);
  return i >= 0 && i < static_cast<int>(std::size(kFns)) ? &kFns[i] : nullptr;
}

}  // namespace raptor::ir
