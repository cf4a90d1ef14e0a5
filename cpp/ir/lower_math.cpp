// hawk.math in the front end: each function's argument checks and its expansion into scalar
// IR (vectors are components by now). The Python module hawk/math.py only names these.
#include <algorithm>
#include <limits>

#include "ir/lower.hpp"
#include "ir/lower_ctx.hpp"
#include "ir/math_fns.hpp"

namespace raptor::ir {

const std::vector<std::string>& math_function_names() {
  static const std::vector<std::string> names = {
      "vec", "norm", "dot", "cross", "normalize", "sqrt", "exp", "log", "sin", "cos", "tan", "tanh",
      "atan2", "abs", "minimum", "maximum", "clamp", "floor", "where", "sign", "float",
      // matrices and quaternions (lower_matrix.cpp)
      "mat", "transpose", "det", "inverse", "outer", "trace", "identity", "quat_mul", "quat_conj",
      "quat_rotate", "quat_to_matrix", "quat_from_axis_angle",
      // per-sample linear algebra (lower_linalg.cpp)
      "eye", "diag", "diagonal", "tril", "triu", "inv", "solve", "lu", "lu_solve", "cholesky",
      "cho_solve", "lstsq", "eigh",
      // custom derivatives
      "stop_gradient",
      // NumPy-named elementwise functions (ir/math_fns.hpp; docs/language.md)
      "asin", "acos", "atan", "sinh", "cosh", "asinh", "acosh", "atanh", "erf", "erfc", "exp2",
      "expm1", "log1p", "log2", "log10", "cbrt", "hypot", "pow", "power", "ceil", "round", "rint",
      "trunc", "fmod", "remainder", "copysign", "fdim", "fma", "clip", "isnan", "isinf",
      "isfinite", "rsqrt", "absolute",
      // the launch's numbering: the sample's global index and the launch's samples
      "sample_index", "n_samples"};
  return names;
}

const std::vector<std::pair<std::string, double>>& math_constant_names() {
  static const std::vector<std::pair<std::string, double>> names = {
      {"nan", std::numeric_limits<double>::quiet_NaN()},
      {"inf", std::numeric_limits<double>::infinity()}};
  return names;
}

namespace front {

namespace {

void arity(const Lowerer& l, const std::string& name, const std::vector<TV>& args, size_t n,
           parse::Loc loc) {
  if (args.size() != n)
    l.error(loc, name + "() takes " + std::to_string(n) + " argument" + (n == 1 ? "" : "s") +
                     ", got " + std::to_string(args.size()));
}

}  // namespace

std::optional<TV> Lowerer::call_numpy_math(const std::string& name, const std::vector<TV>& args,
                                           parse::Loc loc) {
  // Aliases, as NumPy names them: the same lowering (int arguments included).
  if (name == "absolute") return call_math("abs", args, loc);
  if (name == "clip") return call_math("clamp", args, loc);  // np.clip: minimum(maximum(x, lo), hi)
  if (name == "round") return call_math("rint", args, loc);  // half to even, as np.round
  if (name == "pow" || name == "power") {  // x ** y (PowI for an integer literal, as jnp.power)
    arity(*this, name, args, 2, loc);
    return arith("**", args[0], args[1], loc);
  }
  if (name == "rsqrt") {  // 1 / sqrt(x): two operations, each rounded
    arity(*this, name, args, 1, loc);
    return arith("/", TV::f(konst(1.0)), unary_map(Op::Sqrt, args[0], loc, "rsqrt()"), loc);
  }
  const MathFn* fn = nullptr;
  for (const MathFn& f : math_fns())
    if (name == f.name) fn = &f;
  if (!fn) return std::nullopt;
  arity(*this, name, args, static_cast<size_t>(fn->arity), loc);
  if (fn->result == Type::B) {  // isnan, isinf, isfinite: one bool per sample
    const TV& a = args[0];
    if (!a.numeric() || a.mapped())
      error(loc, name + "() takes a Scalar (one condition per sample), got " + describe(a) +
                     (a.mapped() ? "; test components, " + name + "(v[i])" : ""));
    return TV::b(emit(fn->op, Type::B, to_float(a, loc, "the argument")));
  }
  if (fn->arity == 1) return unary_map(fn->op, args[0], loc, fn->name);
  // Two or three arguments, broadcast as arithmetic: Scalars over Vectors and Matrices.
  const TV* shaped = nullptr;
  for (const TV& a : args) {
    if (!a.numeric()) error(loc, name + "() takes numbers, got " + describe(a));
    if (!a.mapped()) continue;
    if (shaped && !same_shape(*shaped, a))
      error(loc, name + "() of " + describe(*shaped) + " and " + describe(a));
    shaped = &a;
  }
  const int w = shaped ? shaped->width() : 1;
  std::vector<int> out;
  for (int c = 0; c < w; ++c) {
    int x[3] = {-1, -1, -1};
    for (size_t i = 0; i < args.size(); ++i) x[i] = float_comp(args[i], c, loc, "an argument");
    out.push_back(emit(fn->op, Type::F, x[0], x[1], x[2]));
  }
  return shaped ? shaped->float_like(out) : TV::f(out[0]);
}

TV Lowerer::call_math(const std::string& name, const std::vector<TV>& args, parse::Loc loc) {
  static const std::pair<const char*, Op> unary[] = {
      {"sqrt", Op::Sqrt},   {"exp", Op::Exp},  {"log", Op::Log},   {"sin", Op::Sin},
      {"cos", Op::Cos},     {"tan", Op::Tan},  {"tanh", Op::Tanh}, {"abs", Op::Abs},
      {"floor", Op::Floor}, {"sign", Op::Sign}};
  if (name == "sample_index" || name == "n_samples") {  // the launch's numbering (ir.hpp)
    arity(*this, name, args, 0, loc);
    return TV::iv(emit(name == "sample_index" ? Op::SampleIndex : Op::NSamples, Type::I));
  }
  if (name == "int") {  // Python's int(): truncation toward zero (an int stays itself)
    arity(*this, name, args, 1, loc);
    const TV& a = args[0];
    if (a.integral() && !a.is_vector()) return a;
    if (a.kind == TV::Kind::Bool) {
      // One constant per statement: arguments' order of evaluation is the compiler's choice.
      const int one = kint(1);
      const int zero = kint(0);
      return TV::iv(emit(Op::Select, Type::I, a.comps[0], one, zero));
    }
    if (a.kind == TV::Kind::Float) return TV::iv(emit(Op::ToInt, Type::I, a.comps[0]));
    error(loc, "int() takes a Scalar, an int or a bool, got " + describe(a) +
                   "; convert a vector's components one at a time, int(v[i])");
  }
  // Python's abs/min/max of integer constants are integer constants, exact.
  const bool const_ints = !args.empty() && std::all_of(args.begin(), args.end(), [](const TV& a) {
    return a.kind == TV::Kind::Int;
  });
  if (const_ints && (name == "abs" || name == "minimum" || name == "maximum" || name == "clamp")) {
    arity(*this, name, args, name == "abs" ? 1 : name == "clamp" ? 3 : 2, loc);
    auto lo = [](const BigInt& a, const BigInt& b) { return compare(a, b) <= 0 ? a : b; };
    auto hi = [](const BigInt& a, const BigInt& b) { return compare(a, b) >= 0 ? a : b; };
    if (name == "abs") return TV::i(args[0].ival.negative() ? -args[0].ival : args[0].ival);
    if (name == "minimum") return TV::i(lo(args[0].ival, args[1].ival));
    if (name == "maximum") return TV::i(hi(args[0].ival, args[1].ival));
    return TV::i(lo(hi(args[0].ival, args[1].ival), args[2].ival));
  }
  const bool int_args = !args.empty() && [&] {
    bool runtime = false;
    for (const TV& a : args) {
      if (!a.integral()) return false;
      runtime |= a.kind != TV::Kind::Int;
    }
    return runtime;
  }();
  if (int_args && (name == "abs" || name == "minimum" || name == "maximum" || name == "clamp")) {
    // Python's abs/min/max of ints are ints (wrapping at the int64 limits for abs).
    if (name == "clamp") {
      arity(*this, name, args, 3, loc);
      return call_math("minimum", {call_math("maximum", {args[0], args[1]}, loc), args[2]}, loc);
    }
    arity(*this, name, args, name == "abs" ? 1 : 2, loc);
    const Op op = name == "abs" ? Op::Abs : name == "minimum" ? Op::Min : Op::Max;
    const TV& a = args[0];
    const TV& b = args.size() > 1 ? args[1] : args[0];
    if (a.is_vector() && b.is_vector() && a.width() != b.width())
      error(loc, name + "() of " + describe(a) + " and " + describe(b));
    const int w = a.is_vector() ? a.width() : b.width();
    std::vector<int> out;
    for (int c = 0; c < w; ++c) {
      const int x = a.is_vector() ? a.comps[c] : to_int_value(a, loc, "an argument");
      const int y = b.is_vector() ? b.comps[c] : to_int_value(b, loc, "an argument");
      out.push_back(op == Op::Abs ? emit(op, Type::I, x) : emit(op, Type::I, x, y));
    }
    return (a.is_vector() || b.is_vector()) ? TV::ivec(out) : TV::iv(out[0]);
  }
  for (const auto& [n, op] : unary)
    if (name == n) {
      arity(*this, name, args, 1, loc);
      return unary_map(op, args[0], loc, n);
    }
  if (auto r = call_numpy_math(name, args, loc)) return *r;
  if (auto m = call_matrix_math(name, args, loc)) return *m;
  if (name == "stop_gradient") {
    arity(*this, name, args, 1, loc);
    if (args[0].kind == TV::Kind::Int) return args[0];  // a constant: no derivative anyway
    return unary_map(Op::StopGrad, args[0], loc, "stop_gradient()");
  }
  auto vector_arg = [&](const TV& v, const char* what) {
    if (!v.is_vector()) error(loc, name + "() takes " + what + ", got " + describe(v));
    if (v.kind == TV::Kind::IVector) {  // float(i) per component
      std::vector<int> out;
      for (int c = 0; c < v.width(); ++c) out.push_back(float_comp(v, c, loc, what));
      return out;
    }
    return v.comps;
  };
  if (name == "float") {
    arity(*this, name, args, 1, loc);
    if (args[0].kind == TV::Kind::IVector) {
      std::vector<int> out;
      for (int c = 0; c < args[0].width(); ++c)
        out.push_back(float_comp(args[0], c, loc, "float()"));
      return TV::vec(out);
    }
    return TV::f(to_float(args[0], loc, "float()'s argument"));
  }
  if (name == "vec") {
    if (args.empty()) error(loc, "vec() needs at least one component");
    std::vector<int> comps;
    for (const TV& a : args) comps.push_back(to_float(a, loc, "each component of vec()"));
    return TV::vec(comps);
  }
  if (name == "dot" || name == "norm" || name == "normalize") {
    const bool is_dot = name == "dot";
    arity(*this, name, args, is_dot ? 2 : 1, loc);
    const std::vector<int> a = vector_arg(args[0], "a Vector");
    const std::vector<int> b = is_dot ? vector_arg(args[1], "two Vectors") : a;
    if (a.size() != b.size())
      error(loc, "dot() of a Vector[" + std::to_string(a.size()) + "] and a Vector[" +
                     std::to_string(b.size()) + "]");
    int acc = emit(Op::Mul, Type::F, a[0], b[0]);
    for (size_t c = 1; c < a.size(); ++c)
      acc = emit(Op::Add, Type::F, acc, emit(Op::Mul, Type::F, a[c], b[c]));
    if (is_dot) return TV::f(acc);
    const int len = emit(Op::Sqrt, Type::F, acc);
    if (name == "norm") return TV::f(len);
    std::vector<int> out;
    for (int c : a) out.push_back(emit(Op::Div, Type::F, c, len));
    return TV::vec(out);
  }
  if (name == "cross") {
    arity(*this, name, args, 2, loc);
    const std::vector<int> a = vector_arg(args[0], "two Vector[3]");
    const std::vector<int> b = vector_arg(args[1], "two Vector[3]");
    if (a.size() != 3 || b.size() != 3) error(loc, "cross() takes two Vector[3]");
    auto term = [&](int i, int j) {
      return emit(Op::Sub, Type::F, emit(Op::Mul, Type::F, a[i], b[j]),
                  emit(Op::Mul, Type::F, a[j], b[i]));
    };
    return TV::vec({term(1, 2), term(2, 0), term(0, 1)});
  }
  if (name == "atan2" || name == "minimum" || name == "maximum") {
    arity(*this, name, args, 2, loc);
    const Op op = name == "atan2" ? Op::Atan2 : name == "minimum" ? Op::Min : Op::Max;
    // Broadcast like arithmetic: reuse arith's shape checks by mapping components here.
    const TV& a = args[0];
    const TV& b = args[1];
    if (!a.numeric() || !b.numeric())
      error(loc, name + "() takes numbers, got " + describe(a) + " and " + describe(b));
    const bool va = a.mapped(), vb = b.mapped();
    if (va && vb && !same_shape(a, b))
      error(loc, name + "() of " + describe(a) + " and " + describe(b));
    const int w = va ? a.width() : b.width();
    std::vector<int> out;
    for (int c = 0; c < w; ++c)
      out.push_back(emit(op, Type::F, float_comp(a, c, loc, "an argument"),
                         float_comp(b, c, loc, "an argument")));
    return (va || vb) ? (va ? a : b).float_like(out) : TV::f(out[0]);
  }
  if (name == "clamp") {
    arity(*this, name, args, 3, loc);
    const TV lo = call_math("maximum", {args[0], args[1]}, loc);
    return call_math("minimum", {lo, args[2]}, loc);
  }
  if (name == "where") {
    arity(*this, name, args, 3, loc);
    if (args[0].mapped())
      error(loc, "where() takes one condition per sample, not " + describe(args[0]) +
                     "; compare components");
    const int cond = to_bool(args[0], loc, "where()'s first argument");
    if (const auto cv = const_value(cond)) return *cv != 0.0 ? args[1] : args[2];
    return select(cond, args[1], args[2], loc);
  }
  error(loc, "'" + name + "' is not a hawk.math function");
}

}  // namespace front

}  // namespace raptor::ir
