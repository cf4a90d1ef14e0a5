// The front end's expressions (see lower.hpp): typing, broadcasting of scalars over
// vectors, compile-time integers, conditional expressions under predicates, calls, and the
// refusals of constructs outside the language. Start at `Lowerer::expr`.
#include <bit>
#include <cmath>
#include <cstdint>
#include <limits>
#include <map>

#include "ir/lower.hpp"
#include "ir/lower_ctx.hpp"
#include "passes/eval.hpp"

namespace raptor::ir::front {

using parse::Expr;
using parse::ExprKind;
using parse::Loc;

int Lowerer::konst(double v) {
  // Keyed by bit pattern, so 0.0 and -0.0 stay apart and NaN finds itself.
  const auto key = std::make_pair(0, std::bit_cast<uint64_t>(v));
  if (auto it = const_cache_.find(key); it != const_cache_.end()) return it->second;
  Value c;
  c.op = Op::Const;
  c.type = Type::F;
  c.imm = v;
  const int id = k.add(c);
  const_cache_[key] = id;
  return id;
}

int Lowerer::kbool(bool v) {
  const auto key = std::make_pair(1, static_cast<uint64_t>(v));
  if (auto it = const_cache_.find(key); it != const_cache_.end()) return it->second;
  Value c;
  c.op = Op::Const;
  c.type = Type::B;
  c.imm = v ? 1.0 : 0.0;
  const int id = k.add(c);
  const_cache_[key] = id;
  return id;
}

int Lowerer::kint(int64_t v) {
  const auto key = std::make_pair(2, static_cast<uint64_t>(v));
  if (auto it = const_cache_.find(key); it != const_cache_.end()) return it->second;
  Value c;
  c.op = Op::Const;
  c.type = Type::I;
  c.iimm = v;
  const int id = k.add(c);
  const_cache_[key] = id;
  return id;
}

std::optional<double> Lowerer::const_value(int v) const {
  if (v < 0) return std::nullopt;
  const Value& val = k.values[v];
  if (val.op != Op::Const) return std::nullopt;
  return val.type == Type::I ? static_cast<double>(val.iimm) : val.imm;
}

int Lowerer::emit(Op op, Type t, int a, int b, int c, int64_t iimm) {
  const int arity = op_arity(op);
  const int args[3] = {a, b, c};
  if (passes::foldable(op)) {
    const Value* vals[3] = {nullptr, nullptr, nullptr};
    bool all_const = true;
    for (int i = 0; i < arity && all_const; ++i) {
      all_const = args[i] >= 0 && k.values[args[i]].op == Op::Const;
      if (all_const) vals[i] = &k.values[args[i]];
    }
    if (all_const) {
      if (const auto r = passes::fold_const(op, t, vals, iimm)) {
        if (t == Type::B) return kbool(r->imm != 0.0);
        if (t == Type::I) return kint(r->iimm);
        return konst(r->imm);
      }
    }
  }
  Value v;
  v.op = op;
  v.type = t;
  for (int i = 0; i < arity; ++i) v.args[i] = args[i];
  v.iimm = iimm;
  v.pred = pred();
  v.loc = cur_loc_;
  return k.add(v);
}

int Lowerer::to_float(const TV& v, Loc loc, const char* what) {
  if (v.kind == TV::Kind::Float) return v.comps[0];
  if (v.kind == TV::Kind::IntVal) return emit(Op::ToFloat, Type::F, v.comps[0]);  // float(i)
  if (v.kind == TV::Kind::Int) {  // Python's float(int): correctly rounded, or refused
    try {
      return konst(v.ival.to_double());
    } catch (const IntRangeError& err) {
      error(loc, err.what());
    }
  }
  if (v.kind == TV::Kind::Bool)
    error(loc, std::string(what) +
                   " must be a number, got a bool; bools cannot be used as numbers "
                   "in a kernel, use where(cond, a, b)");
  error(loc, std::string(what) + " must be a Scalar, got " + describe(v));
}

int Lowerer::to_bool(const TV& v, Loc loc, const char* what) {
  if (v.kind == TV::Kind::Bool) return v.comps[0];
  error(loc, std::string(what) +
                 " must be a condition (a comparison, `and`/`or`/`not` of "
                 "comparisons, or a bool), got " +
                 describe(v));
}

int Lowerer::to_int_value(const TV& v, Loc loc, const char* what) {
  if (v.kind == TV::Kind::IntVal) return v.comps[0];
  if (v.kind == TV::Kind::Int) {
    if (const auto i = v.ival.to_int64()) return kint(*i);
    error(loc, std::string(what) + " " + v.ival.to_string() +
                   " does not fit in a 64-bit integer, which integer planes compute in");
  }
  error(loc, std::string(what) + " must be an integer, got " + describe(v) +
                 "; convert a float with int(x)");
}

int Lowerer::float_comp(const TV& v, int c, Loc loc, const char* what) {
  if (v.kind == TV::Kind::Vector || v.kind == TV::Kind::Matrix) return v.comps[c];
  if (v.kind == TV::Kind::IVector) return emit(Op::ToFloat, Type::F, v.comps[c]);
  return to_float(v, loc, what);
}

TV Lowerer::int_value_arith(const std::string& op, const TV& a, const TV& b, Loc loc) {
  if (op == "**") {
    const auto n = b.kind == TV::Kind::Int ? b.ival.to_int64() : std::nullopt;
    if (!n || *n > 64)
      error(loc,
            "an integer power needs an exponent known when the kernel is defined (at most 64): "
            "write i * i, or float(i) ** y for a float power");
    // Python's int ** n, by binary exponentiation (wrapping in int64 like * does).
    std::vector<int> out;
    for (int c = 0; c < a.width(); ++c) {
      int base = a.kind == TV::Kind::IVector ? a.comps[c] : to_int_value(a, loc, "the base");
      int acc = -1;
      for (int64_t e = *n; e > 0; e >>= 1) {
        if (e & 1) acc = acc < 0 ? base : emit(Op::Mul, Type::I, acc, base);
        if (e > 1) base = emit(Op::Mul, Type::I, base, base);
      }
      out.push_back(acc < 0 ? kint(1) : acc);
    }
    if (a.kind == TV::Kind::IVector) return TV::ivec(out);
    TV r = TV::iv(out[0]);
    r.weak = a.weakish();
    return r;
  }
  const bool va = a.kind == TV::Kind::IVector, vb = b.kind == TV::Kind::IVector;
  if (va && vb && a.width() != b.width())
    error(loc, "cannot combine " + describe(a) + " and " + describe(b) + " with '" + op + "'");
  const int w = va ? a.width() : b.width();
  const Op iop = op == "+"    ? Op::Add
                 : op == "-"  ? Op::Sub
                 : op == "*"  ? Op::Mul
                 : op == "//" ? Op::FloorDiv
                              : Op::Mod;
  std::vector<int> out;
  for (int c = 0; c < w; ++c) {
    const int x = va ? a.comps[c] : to_int_value(a, loc, "an operand");
    const int y = vb ? b.comps[c] : to_int_value(b, loc, "an operand");
    out.push_back(emit(iop, Type::I, x, y));
  }
  if (va || vb) return TV::ivec(out);
  TV r = TV::iv(out[0]);
  r.weak = a.weakish() && b.weakish();
  return r;
}

int64_t Lowerer::const_int(const TV& v, Loc loc, const char* what) {
  if (v.kind == TV::Kind::Int) {
    if (const auto i = v.ival.to_int64()) return *i;
    error(loc, std::string(what) + " " + v.ival.to_string() + " does not fit in a 64-bit integer");
  }
  error(loc, std::string(what) +
                 " must be an integer known when the kernel is defined (a "
                 "literal, a loop variable or an int from the enclosing scope), got " +
                 describe(v));
}

TV Lowerer::unary_map(Op op, const TV& a, Loc loc, const char* fname) {
  if (a.mapped()) {
    std::vector<int> out;
    for (int c = 0; c < a.width(); ++c)
      out.push_back(emit(op, Type::F, float_comp(a, c, loc, fname)));
    return a.float_like(out);
  }
  if (a.kind == TV::Kind::Float || a.kind == TV::Kind::Int || a.kind == TV::Kind::IntVal)
    return TV::f(emit(op, Type::F, to_float(a, loc, fname)));
  error(loc, std::string(fname) + " takes a Scalar, a Vector or a Matrix, got " + describe(a));
}

TV Lowerer::arith(const std::string& op, const TV& a, const TV& b, Loc loc) {
  const bool a_bool = a.kind == TV::Kind::Bool, b_bool = b.kind == TV::Kind::Bool;
  if (a_bool || b_bool) {
    if (a.shaped() || b.shaped())
      error(loc, std::string("cannot mix a ") +
                     ((a.shaped() ? a : b).kind == TV::Kind::Matrix ? "Matrix" : "Vector") +
                     " and a bool with '" + op +
                     "'; choose between vectors with "
                     "where(cond, a, b)");
    error(loc, "bools cannot be used in arithmetic ('" + op + "'); use where(cond, a, b)");
  }
  if (!a.numeric() || !b.numeric())
    error(loc, "'" + op + "' needs numbers, got " + describe(a) + " and " + describe(b));
  if (op == "@") return matmul(a, b, loc);
  static const char* const kOps[] = {"+", "-", "*", "/", "**", "//", "%"};
  bool known = false;
  for (const char* o : kOps) known |= op == o;
  if (!known) error(loc, "operator '" + op + "' is not allowed in a kernel; use + - * / ** // %");

  if (a.kind == TV::Kind::Int && b.kind == TV::Kind::Int) return int_arith(op, a.ival, b.ival, loc);
  // A compile-time exponent within int64, else a value beyond +-64 (pow below).
  int64_t n = int64_t{1} << 40;
  if (b.kind == TV::Kind::Int)
    if (const auto e = b.ival.to_int64()) n = *e;
  // Runtime integers with integers: Python's int arithmetic (int / int and a negative power
  // are floats, below).
  if (a.integral() && b.integral() && op != "/" &&
      !(op == "**" && b.kind == TV::Kind::Int && n < 0))
    return int_value_arith(op, a, b, loc);
  if (op == "**" && n >= -64 && n <= 64) {
    if (a.mapped()) {
      std::vector<int> out;
      for (int c = 0; c < a.width(); ++c)
        out.push_back(emit(Op::PowI, Type::F, float_comp(a, c, loc, "the base"), -1, -1, n));
      return a.float_like(out);
    }
    return TV::f(emit(Op::PowI, Type::F, to_float(a, loc, "the base"), -1, -1, n));
  }
  const int wa = a.width(), wb = b.width();
  const bool va = a.mapped(), vb = b.mapped();
  if (va && vb && !same_shape(a, b))
    error(loc, "cannot combine " + describe(a) + " and " + describe(b) + " with '" + op + "'" +
                   (a.kind == TV::Kind::Matrix || b.kind == TV::Kind::Matrix
                        ? " (elementwise needs equal shapes; write a @ b for a matrix product)"
                        : ""));
  const int w = va ? wa : wb;
  auto comp = [&](const TV& t, int c) { return float_comp(t, c, loc, "an operand"); };
  std::vector<int> out;
  for (int c = 0; c < w; ++c) {
    const int x = comp(a, c), y = comp(b, c);
    int r;
    if (op == "+")
      r = emit(Op::Add, Type::F, x, y);
    else if (op == "-")
      r = emit(Op::Sub, Type::F, x, y);
    else if (op == "*")
      r = emit(Op::Mul, Type::F, x, y);
    else if (op == "/")
      r = emit(Op::Div, Type::F, x, y);
    else if (op == "**")
      r = emit(Op::Pow, Type::F, x, y);
    else if (op == "//")
      r = emit(Op::Floor, Type::F, emit(Op::Div, Type::F, x, y));
    else {  // "%": Python's modulo, the sign of the divisor
      const int q = emit(Op::Floor, Type::F, emit(Op::Div, Type::F, x, y));
      r = emit(Op::Sub, Type::F, x, emit(Op::Mul, Type::F, q, y));
    }
    out.push_back(r);
  }
  if (va || vb) return (va ? a : b).float_like(out);
  return TV::f(out[0]);
}

TV Lowerer::int_arith(const std::string& op, const BigInt& x, const BigInt& y, Loc loc) {
  try {
    if (op == "+") return TV::i(x + y);
    if (op == "-") return TV::i(x - y);
    if (op == "*") return TV::i(x * y);
    if ((op == "//" || op == "%" || op == "/") && y.is_zero())
      error(loc, "integer division by zero");
    if (op == "//") return TV::i(BigInt::floordiv(x, y));
    if (op == "%") return TV::i(BigInt::mod(x, y));
    if (op == "/") return TV::f(konst(BigInt::true_divide(x, y)));  // Python's int / int
    // "**"
    if (!y.negative()) {
      if (const auto e = y.to_int64()) return TV::i(BigInt::pow(x, *e));
      if (x.bit_length() > 1) return TV::i(BigInt::pow(x, int64_t{1} << 62));     // refused
      return TV::i(BigInt::pow(x, BigInt::mod(y, BigInt(2)).is_zero() ? 2 : 1));  // 0, 1, -1
    }
    // A negative power is a float in Python: float(x) ** float(y), C's pow.
    if (x.is_zero()) error(loc, "0 cannot be raised to a negative power");
    return TV::f(konst(std::pow(x.to_double(), y.to_double())));
  } catch (const IntRangeError& err) {
    error(loc, err.what());
  }
}

TV Lowerer::int_literal(const std::string& text, Loc loc) {
  try {
    if (!text.empty() && text[0] == '-') return TV::i(-BigInt::parse(text.substr(1)));
    return TV::i(BigInt::parse(text));
  } catch (const IntRangeError& err) {
    error(loc, err.what());
  } catch (const std::invalid_argument& err) {
    error(loc, err.what());
  }
}

std::optional<bool> Lowerer::const_compare(const std::string& op, const TV& x, const TV& y) {
  // Python compares ints with ints and with floats exactly (2**53 + 1 > 2.0**53).
  int c = 0;  // x <=> y: -1, 0, 1, or 2 when unordered (NaN)
  const auto constant = [&](const TV& t) {
    return t.kind == TV::Kind::Float ? const_value(t.comps[0]) : std::nullopt;
  };
  if (x.kind == TV::Kind::Int && y.kind == TV::Kind::Int) {
    c = compare(x.ival, y.ival);
  } else if (x.kind == TV::Kind::Int && constant(y)) {
    c = x.ival.compare_with(*constant(y));
  } else if (y.kind == TV::Kind::Int && constant(x)) {
    c = y.ival.compare_with(*constant(x));
    if (c != 2) c = -c;
  } else {
    return std::nullopt;
  }
  if (op == "<") return c == -1;
  if (op == "<=") return c == -1 || c == 0;
  if (op == ">") return c == 1;
  if (op == ">=") return c == 1 || c == 0;
  if (op == "==") return c == 0;
  return c != 0;
}

TV Lowerer::select(int cond, const TV& a, const TV& b, Loc loc) {
  if (a.kind == TV::Kind::Bool && b.kind == TV::Kind::Bool)
    return TV::b(emit(Op::Select, Type::B, cond, a.comps[0], b.comps[0]));
  if (a.kind == TV::Kind::Bool || b.kind == TV::Kind::Bool)
    error(loc, "both choices must be numbers or both conditions, got " + describe(a) + " and " +
                   describe(b));
  if (!a.numeric() || !b.numeric())
    error(loc, "choices must be numbers, got " + describe(a) + " and " + describe(b));
  const bool va = a.mapped(), vb = b.mapped();
  if (va && vb && !same_shape(a, b))
    error(loc, "choices have different shapes: " + describe(a) + " and " + describe(b));
  const int w = va ? a.width() : b.width();
  // Two integers (at least one a runtime value) stay integers; otherwise floats.
  const bool ints =
      a.integral() && b.integral() && !(a.kind == TV::Kind::Int && b.kind == TV::Kind::Int);
  std::vector<int> out;
  for (int c = 0; c < w; ++c) {
    if (ints) {
      const int x = a.kind == TV::Kind::IVector ? a.comps[c] : to_int_value(a, loc, "a choice");
      const int y = b.kind == TV::Kind::IVector ? b.comps[c] : to_int_value(b, loc, "a choice");
      out.push_back(emit(Op::Select, Type::I, cond, x, y));
      continue;
    }
    const int x = float_comp(a, c, loc, "a choice");
    const int y = float_comp(b, c, loc, "a choice");
    out.push_back(emit(Op::Select, Type::F, cond, x, y));
  }
  if (ints) return (va || vb) ? TV::ivec(out) : TV::iv(out[0]);
  return (va || vb) ? (va ? a : b).float_like(out) : TV::f(out[0]);
}

namespace {

Op compare_op(const std::string& s) {
  if (s == "<") return Op::Lt;
  if (s == "<=") return Op::Le;
  if (s == ">") return Op::Gt;
  if (s == ">=") return Op::Ge;
  if (s == "==") return Op::Eq;
  return Op::Ne;
}

bool is_math_module(const std::string& name) { return name == "hawk.math" || name == "math"; }

}  // namespace

TV Lowerer::expr(const Expr& e) {
  switch (e.kind) {
    case ExprKind::Name:
      return read_var(e.name, e.loc);
    case ExprKind::Number:
      if (e.is_int) return e.int_text.empty() ? TV::i(e.int_value) : int_literal(e.int_text, e.loc);
      return TV::f(konst(e.number));
    case ExprKind::Bool:
      return TV::b(kbool(e.bool_value));
    case ExprKind::String:
      error(e.loc,
            "strings are not allowed in a kernel; use numbers and conditions instead "
            "(keep labels and names in Python)");
    case ExprKind::List:
      error(e.loc, "lists are not allowed in a kernel; build a vector with vec(a, b, c)");
    case ExprKind::Other:
      error(e.loc, e.name + " is not allowed in a kernel");
    case ExprKind::Unary: {
      const TV a = expr(*e.args[0]);
      if (e.op == "~") error(e.loc, "'~' is not allowed in a kernel; use `not` for conditions");
      if (a.kind == TV::Kind::Bool) error(e.loc, "unary '" + e.op + "' on a bool; use `not`");
      if (e.op == "+") {
        if (!a.numeric()) error(e.loc, "unary '+' needs a number, got " + describe(a));
        return a;
      }
      if (a.kind == TV::Kind::Int) return TV::i(-a.ival);  // exact, as Python
      if (a.kind == TV::Kind::IntVal) {
        TV out = TV::iv(emit(Op::Neg, Type::I, a.comps[0]));
        out.weak = a.weak;
        return out;
      }
      if (a.kind == TV::Kind::IVector) {
        std::vector<int> out;
        for (int c : a.comps) out.push_back(emit(Op::Neg, Type::I, c));
        return TV::ivec(out);
      }
      return unary_map(Op::Neg, a, e.loc, "unary '-'");
    }
    case ExprKind::Not: {
      const int c = to_bool(expr(*e.args[0]), e.args[0]->loc, "the operand of `not`");
      return TV::b(emit(Op::Not, Type::B, c));
    }
    case ExprKind::Binary: {
      const TV lhs = expr(*e.args[0]);  // left to right, as Python evaluates
      const TV rhs = expr(*e.args[1]);
      return arith(e.op, lhs, rhs, e.loc);
    }
    case ExprKind::BoolOp: {
      // Python short-circuits: each operand after the first is used only when the ones
      // before it did not decide the result, so it is lowered under that predicate (a table
      // read guarded by `i < M and w.at(i) > 0` is not bounds-checked when i >= M).
      const bool is_and = e.op == "and";
      int acc = -1;
      const int outer = pred();
      for (const auto& a : e.args) {
        if (acc >= 0) {
          const int go_on = is_and ? acc : emit(Op::Not, Type::B, acc);
          pred_stack_.push_back(outer < 0 ? go_on : emit(Op::And, Type::B, outer, go_on));
        }
        const TV operand = expr(*a);
        if (acc >= 0) pred_stack_.pop_back();
        const int c = to_bool(operand, a->loc, ("an operand of `" + e.op + "`").c_str());
        acc = acc < 0 ? c : emit(is_and ? Op::And : Op::Or, Type::B, acc, c);
      }
      return TV::b(acc);
    }
    case ExprKind::Compare: {
      std::vector<TV> operands;
      for (const auto& a : e.args) operands.push_back(expr(*a));
      int acc = -1;
      for (size_t i = 0; i + 1 < operands.size(); ++i) {
        const TV& x = operands[i];
        const TV& y = operands[i + 1];
        const Loc loc = e.args[i]->loc;
        if (x.mapped() || y.mapped())
          error(loc, "cannot compare " + describe(x) + " with " + describe(y) +
                         "; compare a "
                         "component v[i] or a length norm(v)");
        if (x.kind == TV::Kind::Bool || y.kind == TV::Kind::Bool)
          error(loc, "cannot compare conditions with '" + e.ops[i] +
                         "'; combine them with "
                         "`and`, `or`, `not`");
        const auto exact = const_compare(e.ops[i], x, y);
        const bool ints = x.integral() && y.integral();  // compared exactly, as int64
        // Each side converted in a statement of its own, left first: the order of a call's
        // arguments is the compiler's choice, and the IR's numbering must not be.
        int c = -1;
        if (exact) {
          c = kbool(*exact);
        } else if (ints) {
          const int l = to_int_value(x, loc, "a compared value");
          const int r = to_int_value(y, loc, "a compared value");
          c = emit(compare_op(e.ops[i]), Type::B, l, r);
        } else {
          const int l = to_float(x, loc, "a compared value");
          const int r = to_float(y, loc, "a compared value");
          c = emit(compare_op(e.ops[i]), Type::B, l, r);
        }
        acc = acc < 0 ? c : emit(Op::And, Type::B, acc, c);
      }
      return TV::b(acc);
    }
    case ExprKind::IfExp: {
      const int cond = to_bool(expr(*e.args[0]), e.args[0]->loc, "a conditional expression's test");
      if (const auto cv = const_value(cond)) return expr(*e.args[*cv != 0.0 ? 1 : 2]);
      const int outer = pred();
      pred_stack_.push_back(outer < 0 ? cond : emit(Op::And, Type::B, outer, cond));
      const TV a = expr(*e.args[1]);
      pred_stack_.pop_back();
      const int nc = emit(Op::Not, Type::B, cond);
      pred_stack_.push_back(outer < 0 ? nc : emit(Op::And, Type::B, outer, nc));
      const TV b = expr(*e.args[2]);
      pred_stack_.pop_back();
      if (a.weakish() && b.weakish()) {  // an int either way, as in Python
        TV out = TV::iv(emit(Op::Select, Type::I, cond, to_int_value(a, e.loc, "a choice"),
                             to_int_value(b, e.loc, "a choice")));
        out.weak = true;
        return out;
      }
      return select(cond, a, b, e.loc);
    }
    case ExprKind::Call: {
      if (const auto fn = reduction_call(e)) return staged_reduction(e, *fn);  // a stage boundary
      const Expr& callee = *e.args[0];
      if (e.args.size() - 1 > 0 && !e.keywords.empty())
        error(e.loc,
              "keyword arguments are not supported in kernel calls; pass arguments by position");
      if (callee.kind == ExprKind::Attribute) {
        const TV base = expr(*callee.args[0]);
        if (base.kind == TV::Kind::Random) {
          std::vector<TV> dargs;
          for (size_t a = 1; a < e.args.size(); ++a) dargs.push_back(expr(*e.args[a]));
          return draw(base.slot, callee.name, dargs, e.loc);
        }
        if (base.kind == TV::Kind::Table) {
          if (callee.name != "at")
            error(callee.loc,
                  "a Table has one method, at(i): read entry i with " + std::string("w.at(i)"));
          if (e.args.size() != 2) error(e.loc, "w.at(i) takes one index");
          const TV idx = expr(*e.args[1]);
          int index;
          if (idx.kind == TV::Kind::Int) {
            index = kint(const_int(idx, e.args[1]->loc, "a table index"));
          } else if (idx.kind == TV::Kind::IntVal) {
            index = idx.comps[0];  // an integer plane's value, as it is
          } else if (idx.kind == TV::Kind::Float) {
            index = emit(Op::ToIndex, Type::I, idx.comps[0]);
          } else {
            error(e.args[1]->loc,
                  "a table index must be an integer or a Scalar (rounded down), got " +
                      describe(idx));
          }
          const Slot& slot = k.slots[base.slot];
          std::vector<int> comps;
          for (int c = 0; c < slot.width; ++c) {
            Value v;
            v.op = Op::LoadTable;
            v.type = Type::F;
            v.args[0] = index;
            v.slot = base.slot;
            v.comp = c;
            v.pred = pred();
            v.loc = cur_loc_;
            comps.push_back(k.add(v));
          }
          if (slot.rows > 0) return TV::mat(comps, slot.rows);
          return slot.is_vector ? TV::vec(comps) : TV::f(comps[0]);
        }
      }
      const TV f = expr(callee);
      std::vector<TV> args;
      for (size_t i = 1; i < e.args.size(); ++i) args.push_back(expr(*e.args[i]));
      if (f.kind == TV::Kind::Math) return call_math(f.name, args, e.loc);
      if (f.kind == TV::Kind::Helper) return call_helper(f.helper, std::move(args), e.loc);
      error(callee.loc, "cannot call " + describe(f) +
                            "; a kernel calls hawk.math functions and "
                            "@hawk.func helpers");
    }
    case ExprKind::Subscript: {
      const TV base = expr(*e.args[0]);
      if (base.kind == TV::Kind::Table) error(e.loc, "read a Table entry with w.at(i), not w[i]");
      const TV idx = expr(*e.args[1]);
      if (base.kind == TV::Kind::Matrix) return matrix_index(base, idx, *e.args[1]);
      if (base.is_vector() || base.kind == TV::Kind::Tuple) {
        const int64_t n = base.is_vector() ? static_cast<int64_t>(base.comps.size())
                                           : static_cast<int64_t>(base.items.size());
        int64_t i = const_int(idx, e.args[1]->loc, "an index");
        if (i < 0) i += n;
        if (i < 0 || i >= n)
          error(e.args[1]->loc, "index " + std::to_string(const_int(idx, e.loc, "an index")) +
                                    " is out of range for " + describe(base) + " (components 0.." +
                                    std::to_string(n - 1) + ")");
        if (base.kind == TV::Kind::IVector) return TV::iv(base.comps[i]);
        return base.kind == TV::Kind::Vector ? TV::f(base.comps[i]) : base.items[i];
      }
      error(e.loc, "only vectors and matrices can be indexed, and this is " + describe(base));
    }
    case ExprKind::Attribute: {
      const TV base = expr(*e.args[0]);
      if (base.kind == TV::Kind::Random)
        error(e.loc, "'." + e.name + "' of a Random parameter: call " + e.name +
                         "() (a Random has the methods uniform() and normal())");
      if (base.kind == TV::Kind::Module) {
        if (base.name == "hawk" &&
            (e.name == "sum" || e.name == "mean" || e.name == "min" || e.name == "max"))
          error(e.loc, "hawk." + e.name +
                           "() is a reduction over the samples of the launch: assign it "
                           "directly to a Mutable[Param] output (`total = hawk.sum(x)`) or "
                           "call it inside an expression (`x - hawk.mean(x)`, a stage "
                           "boundary); it is not a value of its own");
        if (base.name == "hawk" && e.name == "scatter")
          error(e.loc,
                "hawk.scatter(t) is only the target of an add, `hawk.scatter(t)[i] += v` (t a "
                "Mutable[Table] parameter); it has no value to read");
        if (base.name == "hawk" && e.name == "math") {
          TV m = base;
          m.name = "hawk.math";
          return m;
        }
        if (is_math_module(base.name)) {
          if (base.name == "math" && e.name == "remainder")
            error(e.loc,
                  "math.remainder is IEEE's remainder (rounded to the nearest multiple); "
                  "hawk.math.remainder is NumPy's (the sign of the divisor): write "
                  "hawk.math.remainder, or fmod for C's fmod");
          for (const std::string& n : math_function_names())
            if (n == e.name) {
              TV t;
              t.kind = TV::Kind::Math;
              t.name = e.name;
              return t;
            }
          for (const auto& [n, x] : math_constant_names())
            if (n == e.name) return TV::f(konst(x));
          error(e.loc, "'" + base.name + "." + e.name + "' is not a hawk.math function");
        }
      }
      error(e.loc,
            "attribute access is only allowed on hawk.math (as in hawk.math.sqrt(x)) and "
            "on tables (w.at(i)); '." +
                e.name + "' is not");
    }
    case ExprKind::Tuple: {
      TV t;
      t.kind = TV::Kind::Tuple;
      for (const auto& a : e.args) t.items.push_back(expr(*a));
      return t;
    }
  }
  error(e.loc, "unsupported expression");
}

int Lowerer::draw_base() {
  if (draw_base_ >= 0) return draw_base_;
  Value stride;  // set when the body is done (real_loop); never shared
  stride.op = Op::Const;
  stride.type = Type::I;
  stride.loc = cur_loc_;
  draw_stride_ = k.add(stride);
  int base = unguarded(emit(Op::Mul, Type::I, draw_index_, draw_stride_));
  if (draw_outer_static_ != 0)
    base = unguarded(emit(Op::Add, Type::I, base, kint(draw_outer_static_)));
  if (draw_outer_base_ >= 0) base = unguarded(emit(Op::Add, Type::I, base, draw_outer_base_));
  return draw_base_ = base;
}

namespace {

// rng.<method>'s arguments, for messages: "rng.gamma(a)".
const std::map<std::string, std::string>& draw_signatures() {
  static const std::map<std::string, std::string> sigs = {
      {"uniform", "()"},          {"normal", "()"},
      {"exponential", "()"},      {"bernoulli", "(p=0.5)"},
      {"lognormal", "(sigma=1)"}, {"randint", "(lo, hi)"},
      {"poisson", "(lam)"},       {"gamma", "(a)"},
      {"truncated_normal", "(lo, hi)"}, {"multivariate_normal", "(mean, L)"}};
  return sigs;
}

}  // namespace

int Lowerer::draw_value(Op op, Type t, int slot, std::initializer_list<int> args, double imm) {
  Value v;
  v.op = op;
  v.type = t;
  v.slot = slot;
  v.loc = cur_loc_;
  v.imm = imm;
  // j = args[0] + comp: the run-time part inside loop regions (as RandUniformAt), else 0.
  v.args[0] = real_loops_ > 0 ? draw_base() : kint(0);
  int a = 1;
  for (const int x : args) v.args[a++] = x;
  v.comp = static_cast<int32_t>(draws_);
  return k.add(v);
}

TV Lowerer::draw(int slot, const std::string& method, const std::vector<TV>& args,
                 parse::Loc loc) {
  const std::string& nm = k.slots[slot].name;
  const auto& sigs = draw_signatures();
  const auto sig = sigs.find(method);
  if (sig == sigs.end())
    error(loc, "a Random parameter has the methods uniform, normal, exponential, bernoulli, "
                   "lognormal, randint, poisson, gamma, truncated_normal and "
                   "multivariate_normal (as jax.random names them); '" +
                   nm + "." + method + "' is not one");
  const std::string call = nm + "." + method + sig->second;
  size_t min_args = 0, max_args = 0;
  if (method == "bernoulli" || method == "lognormal") max_args = 1;
  if (method == "poisson" || method == "gamma") min_args = max_args = 1;
  if (method == "randint" || method == "truncated_normal" || method == "multivariate_normal")
    min_args = max_args = 2;
  if (args.size() < min_args || args.size() > max_args) {
    if (max_args == 0)
      error(loc, nm + "." + method +
                     "() takes no arguments (it draws one number of the kernel's "
                     "dtype; scale and shift it: mu + sigma * " +
                     nm + ".normal())");
    error(loc, call + " takes " + std::to_string(min_args) +
                   (min_args == max_args ? "" : " or " + std::to_string(max_args)) + " argument" +
                   (max_args == 1 ? "" : "s") + ", got " + std::to_string(args.size()));
  }
  if (draws_ > std::numeric_limits<int32_t>::max())
    error(loc, nm + "." + method + "() is draw " + std::to_string(draws_) +
                   " of a step, and a step numbers at most 2^31 draws; draw fewer per step, or "
                   "step the kernel (@hawk.kernel(steps=k)): every step numbers its draws anew");
  const auto scalar = [&](size_t a, const char* what) {
    if (args[a].kind == TV::Kind::Vector || args[a].kind == TV::Kind::Matrix)
      error(loc, call + ": " + what + " must be a Scalar (one draw per call), got " +
                     describe(args[a]));
    return to_float(args[a], loc, (call + ": " + what).c_str());
  };
  const auto uniform_or_normal = [&](bool uniform) {
    Value v;
    v.op = uniform ? Op::RandUniform : Op::RandNormal;
    v.type = Type::F;
    v.slot = slot;
    v.loc = cur_loc_;
    if (real_loops_ > 0) {  // j = index * stride + the draws before the loop, + this one's place
      v.op = uniform ? Op::RandUniformAt : Op::RandNormalAt;
      v.args[0] = draw_base();
    }
    v.comp = static_cast<int32_t>(draws_);
    return k.add(v);
  };
  TV out;
  if (method == "uniform" || method == "normal") {
    out = TV::f(uniform_or_normal(method == "uniform"));
  } else if (method == "exponential") {  // jax: -log1p(-u)
    const int u = uniform_or_normal(true);
    out = TV::f(emit(Op::Neg, Type::F, emit(Op::Log1p, Type::F, emit(Op::Neg, Type::F, u))));
  } else if (method == "bernoulli") {  // jax: u < p, u in p's dtype
    const int p = args.empty() ? konst(0.5) : scalar(0, "p");
    out = TV::b(emit(Op::Lt, Type::B, uniform_or_normal(true), p));
  } else if (method == "lognormal") {  // jax: exp(z * sigma)
    const int sigma = args.empty() ? konst(1.0) : scalar(0, "sigma");
    out = TV::f(emit(Op::Exp, Type::F, emit(Op::Mul, Type::F, uniform_or_normal(false), sigma)));
  } else if (method == "gamma") {
    out = TV::f(draw_value(Op::RandGamma, Type::F, slot, {scalar(0, "a")}));
  } else if (method == "poisson") {
    out = TV::iv(draw_value(Op::RandPoisson, Type::I, slot, {scalar(0, "lam")}));
  } else if (method == "truncated_normal") {
    const int lo = scalar(0, "lo"), hi = scalar(1, "hi");
    out = TV::f(draw_value(Op::RandTruncNormal, Type::F, slot, {lo, hi}));
  } else if (method == "randint") {
    int b[2];
    for (int a = 0; a < 2; ++a) {
      const TV& x = args[a];
      if (x.kind != TV::Kind::Int && x.kind != TV::Kind::IntVal)
        error(loc, call + ": " + (a == 0 ? "lo" : "hi") + " must be an integer (a Python int or an "
                       "integer plane's value), got " + describe(x) +
                       "; jax.random.randint draws int32 in [lo, hi): convert with int(x)");
      b[a] = to_int_value(x, loc, a == 0 ? "randint's lo" : "randint's hi");
    }
    out = TV::iv(draw_value(Op::RandInt, Type::I, slot, {b[0], b[1]}));
  } else {  // multivariate_normal: mean + L @ z, z = jax.random.normal(subkey, (n,))
    const TV& mean = args[0];
    const TV& l = args[1];
    if (mean.kind != TV::Kind::Vector)
      error(loc, call + ": mean must be a Vector[n], got " + describe(mean));
    const int n = static_cast<int>(mean.comps.size());
    if (l.kind != TV::Kind::Matrix || l.rows != n || static_cast<int>(l.comps.size()) != n * n)
      error(loc, call + ": L must be a Matrix[" + std::to_string(n) + ", " + std::to_string(n) +
                     "] (the Cholesky factor of the covariance, lower triangular) for a Vector[" +
                     std::to_string(n) + "] mean, got " + describe(l));
    std::vector<int> z(n);
    for (int c = 0; c < n; ++c) z[c] = draw_value(Op::RandNormalVec, Type::F, slot, {}, c);
    std::vector<int> comps(n);
    for (int r = 0; r < n; ++r) {
      int acc = emit(Op::Mul, Type::F, l.comps[r * n], z[0]);
      for (int c = 1; c < n; ++c)
        acc = emit(Op::Add, Type::F, acc, emit(Op::Mul, Type::F, l.comps[r * n + c], z[c]));
      comps[r] = emit(Op::Add, Type::F, mean.comps[r], acc);
    }
    out = TV::vec(comps);
  }
  ++draws_;
  return out;
}

}  // namespace raptor::ir::front
