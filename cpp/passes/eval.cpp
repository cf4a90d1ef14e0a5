// Scalar semantics of IR operators (see eval.hpp).
#include "passes/eval.hpp"

#include <cmath>
#include <limits>

#include "ir/math_fns.hpp"
#include "runtime/rp_atan.h"
#include "runtime/rp_math.h"
#include "runtime/rp_pow.h"
#include "runtime/rp_trig.h"

namespace raptor::passes {

using ir::Op;

namespace {

// Binary exponentiation in the order lax.integer_pow uses, so folded constants and generated
// code agree with jax.numpy bit for bit; a negative exponent is the reciprocal of the positive.
template <class T>
T powi(T x, int64_t n) {
  if (n < 0) return T(1) / powi(x, -n);
  if (n == 0) return T(1);
  T acc = 0;
  bool have = false;
  while (n > 0) {
    if (n & 1) {
      acc = have ? acc * x : x;
      have = true;
    }
    n >>= 1;
    if (n) x = x * x;
  }
  return acc;
}

template <class T>
T nan_min(T a, T b) {
  if (std::isnan(a) || std::isnan(b)) return std::numeric_limits<T>::quiet_NaN();
  if (a == b) return std::signbit(a) ? a : b;  // min(-0, +0) = -0 in either order, as XLA
  return a < b ? a : b;
}

template <class T>
T nan_max(T a, T b) {
  if (std::isnan(a) || std::isnan(b)) return std::numeric_limits<T>::quiet_NaN();
  if (a == b) return std::signbit(a) ? b : a;  // max(-0, +0) = +0 in either order, as XLA
  return a > b ? a : b;
}

template <class T>
int64_t index_of(T x) {
  const T f = std::floor(x);
  return (f >= T(-9.0e18) && f <= T(9.0e18)) ? static_cast<int64_t>(f) : int64_t{-1};
}

// Every operator in the arithmetic of T: the math functions are the C library's for T
// (std::sin(float) is sinf), as in the generated code.
template <class T>
T eval_in(Op op, const T* a, int64_t iimm) {
  switch (op) {
    case Op::Neg:
      return -a[0];
    case Op::Sqrt:
      return std::sqrt(a[0]);
    case Op::Exp:  // raptor's own, as the generated code (rp_math.h; sin, cos, tan: rp_trig.h)
      return rp_math_exp(a[0]);
    case Op::Log:
      return rp_math_log(a[0]);
    case Op::Sin:
      return rp_math_sin(a[0]);
    case Op::Cos:
      return rp_math_cos(a[0]);
    case Op::Tan:
      return rp_math_tan(a[0]);
    case Op::Tanh:
      return rp_math_tanh(a[0]);
    case Op::Abs:
      return std::fabs(a[0]);
    case Op::Floor:
      return std::floor(a[0]);
    case Op::Sign:
      return (std::isnan(a[0]) || a[0] == T(0)) ? a[0] : T((a[0] > 0) - (a[0] < 0));
    case Op::Add:
      return a[0] + a[1];
    case Op::Sub:
      return a[0] - a[1];
    case Op::Mul:
      return a[0] * a[1];
    case Op::Div:
      return a[0] / a[1];
    case Op::Pow:
      return rp_math_pow(a[0], a[1]);  // raptor's own (runtime/rp_pow.h)
    case Op::Atan2:
      return rp_math_atan2(a[0], a[1]);  // raptor's own (runtime/rp_atan.h)
    case Op::Min:
      return nan_min(a[0], a[1]);
    case Op::Max:
      return nan_max(a[0], a[1]);
    case Op::PowI:
      return powi(a[0], iimm);
    case Op::Lt:
      return a[0] < a[1];
    case Op::Le:
      return a[0] <= a[1];
    case Op::Gt:
      return a[0] > a[1];
    case Op::Ge:
      return a[0] >= a[1];
    case Op::Eq:
      return a[0] == a[1];
    case Op::Ne:
      return a[0] != a[1];
    case Op::Not:
      return a[0] == T(0);
    case Op::And:
      return (a[0] != T(0)) && (a[1] != T(0));
    case Op::Or:
      return (a[0] != T(0)) || (a[1] != T(0));
    case Op::Select:
      return a[0] != T(0) ? a[1] : a[2];
    case Op::ToIndex:
      return static_cast<T>(index_of(a[0]));
    case Op::StopGrad:
    case Op::CustomJvp:
      return a[0];
    default:
      if (ir::math_fn(op)) return ir::eval_math(op, a);  // asin .. fma (ir/math_fns.hpp)
      return std::numeric_limits<T>::quiet_NaN();
  }
}

}  // namespace

int64_t to_index(double x) { return index_of(x); }

int64_t floordiv_i64(int64_t a, int64_t b) {
  if (b == -1) return static_cast<int64_t>(0ULL - static_cast<uint64_t>(a));  // no overflow trap
  const int64_t q = a / b;
  return (a % b != 0 && ((a < 0) != (b < 0))) ? q - 1 : q;
}

int64_t mod_i64(int64_t a, int64_t b) {
  if (b == -1) return 0;
  const int64_t r = a % b;
  return (r != 0 && ((r < 0) != (b < 0))) ? r + b : r;
}

std::optional<int64_t> to_int(double x) {
  if (!std::isfinite(x)) return std::nullopt;
  const double t = std::trunc(x);
  if (t < -9223372036854775808.0 || t >= 9223372036854775808.0) return std::nullopt;
  return static_cast<int64_t>(t);
}

std::optional<int64_t> eval_int(Op op, const int64_t* a) {
  const auto u = [](int64_t x) { return static_cast<uint64_t>(x); };
  switch (op) {
    case Op::Add:
      return static_cast<int64_t>(u(a[0]) + u(a[1]));
    case Op::Sub:
      return static_cast<int64_t>(u(a[0]) - u(a[1]));
    case Op::Mul:
      return static_cast<int64_t>(u(a[0]) * u(a[1]));
    case Op::Neg:
      return static_cast<int64_t>(0ULL - u(a[0]));
    case Op::Abs:
      return a[0] < 0 ? static_cast<int64_t>(0ULL - u(a[0])) : a[0];
    case Op::Min:
      return a[0] < a[1] ? a[0] : a[1];
    case Op::Max:
      return a[0] > a[1] ? a[0] : a[1];
    case Op::FloorDiv:
      if (a[1] == 0) return std::nullopt;
      return floordiv_i64(a[0], a[1]);
    case Op::Mod:
      if (a[1] == 0) return std::nullopt;
      return mod_i64(a[0], a[1]);
    case Op::Lt:
      return a[0] < a[1];
    case Op::Le:
      return a[0] <= a[1];
    case Op::Gt:
      return a[0] > a[1];
    case Op::Ge:
      return a[0] >= a[1];
    case Op::Eq:
      return a[0] == a[1];
    case Op::Ne:
      return a[0] != a[1];
    default:
      return std::nullopt;
  }
}

int64_t to_index_f32(float x) { return index_of(x); }

std::optional<ir::Value> fold_const(Op op, ir::Type t, const ir::Value* const* a, int64_t iimm) {
  using ir::Type;
  ir::Value r;
  r.op = Op::Const;
  r.type = t;
  const int arity = ir::op_arity(op);
  if (op == Op::Select) {
    const ir::Value& pick = *a[a[0]->imm != 0.0 ? 1 : 2];
    r.imm = pick.imm;
    r.iimm = pick.iimm;
    return r;
  }
  if (op == Op::ToFloat) {
    const int64_t x = a[0]->iimm;
    if (x > (int64_t{1} << 53) || x < -(int64_t{1} << 53)) return std::nullopt;
    r.imm = static_cast<double>(x);
    return r;
  }
  if (op == Op::ToInt) {
    const auto x = to_int(a[0]->imm);
    if (!x) return std::nullopt;  // (within int64, so the float below is in float's range)
    const auto x32 = to_int(static_cast<double>(static_cast<float>(a[0]->imm)));
    if (x != x32) return std::nullopt;
    r.iimm = *x;
    return r;
  }
  const bool int_op = arity > 0 && a[0]->type == Type::I && op != Op::LoadTable;
  if (int_op || op == Op::FloorDiv || op == Op::Mod) {
    int64_t v[3] = {0, 0, 0};
    for (int i = 0; i < arity; ++i) v[i] = a[i]->iimm;
    const auto x = eval_int(op, v);
    if (!x) return std::nullopt;
    if (t == Type::B)
      r.imm = *x != 0 ? 1.0 : 0.0;
    else
      r.iimm = *x;
    return r;
  }
  double v[3] = {0, 0, 0};
  for (int i = 0; i < arity; ++i)
    v[i] = a[i]->type == Type::I ? static_cast<double>(a[i]->iimm) : a[i]->imm;
  const double x = eval_op(op, v, iimm);
  if (t == Type::I)
    r.iimm = static_cast<int64_t>(x);  // from to_index: in range
  else
    r.imm = t == Type::B ? (x != 0.0 ? 1.0 : 0.0) : x;
  return r;
}

bool foldable(Op op) {
  switch (op) {
    case Op::Const:
    case Op::LoadParam:
    case Op::LoadPlane:
    case Op::LoadState:
    case Op::LoadMask:
    case Op::LoadTable:
    case Op::RandUniform:  // a draw depends on the key, step and sample: never a constant
    case Op::RandNormal:
    case Op::RandUniformAt:
    case Op::RandNormalAt:
    case Op::RandGamma:
    case Op::RandPoisson:
    case Op::RandInt:
    case Op::RandTruncNormal:
    case Op::RandNormalVec:
    case Op::RandGammaGrad:  // runtime/random.h's, not folded (derived kernels only)
    case Op::SampleIndex:  // per sample and per launch
    case Op::NSamples:
    case Op::LoopBegin:
    case Op::LoopCarry:
    case Op::LoopIndex:
    case Op::LoopNext:
    case Op::LoopEnd:
    case Op::LoopResult:
      return false;
    default:
      return true;
  }
}

double eval_op(Op op, const double* a, int64_t iimm) { return eval_in(op, a, iimm); }

float eval_op_f32(Op op, const float* a, int64_t iimm) { return eval_in(op, a, iimm); }

}  // namespace raptor::passes
