// Internal to the front end (lower*.cpp): the typed values it manipulates while building IR,
// and the Lowerer class that holds the kernel under construction. Not a public header.
#pragma once

#include <map>
#include <optional>
#include <string>
#include <vector>

#include "common/error.hpp"
#include "ir/ir.hpp"
#include "ir/lower_int.hpp"
#include "ir/spec.hpp"
#include "parse/ast.hpp"

namespace raptor::ir::front {

// A typed value during lowering.
struct TV {
  enum class Kind {
    Float,    // comps[0]: an F value
    Vector,   // comps: k F values
    Bool,     // comps[0]: a B value
    Int,      // a compile-time integer (loop variables, integer literals): `ival`, exact
    IntVal,   // comps[0]: an I value (an integer plane's value, or int arithmetic on one)
    IVector,  // comps: k I values (a Vector[k, hawk.int32/int64] plane)
    Tuple,    // `items`
    Table,    // a Table parameter: `slot`
    Math,     // a hawk.math function: `name`
    Helper,   // a @hawk.func helper: `helper`
    Module,   // the hawk.math module
  };
  Kind kind = Kind::Float;
  std::vector<int> comps;  // IR values; -1 = a Mutable component not yet assigned
  BigInt ival;
  std::vector<TV> items;
  int slot = -1;
  int helper = -1;
  std::string name;

  static TV f(int v) {
    TV t;
    t.kind = Kind::Float;
    t.comps = {v};
    return t;
  }
  static TV b(int v) {
    TV t;
    t.kind = Kind::Bool;
    t.comps = {v};
    return t;
  }
  static TV vec(std::vector<int> c) {
    TV t;
    t.kind = Kind::Vector;
    t.comps = std::move(c);
    return t;
  }
  static TV i(BigInt v) {
    TV t;
    t.kind = Kind::Int;
    t.ival = std::move(v);
    return t;
  }
  static TV iv(int v) {
    TV t;
    t.kind = Kind::IntVal;
    t.comps = {v};
    return t;
  }
  static TV ivec(std::vector<int> c) {
    TV t;
    t.kind = Kind::IVector;
    t.comps = std::move(c);
    return t;
  }
  bool numeric() const {
    return kind == Kind::Float || kind == Kind::Vector || kind == Kind::Int ||
           kind == Kind::IntVal || kind == Kind::IVector;
  }
  // An integer: compile-time, or an I value (scalar or vector).
  bool integral() const {
    return kind == Kind::Int || kind == Kind::IntVal || kind == Kind::IVector;
  }
  bool is_vector() const { return kind == Kind::Vector || kind == Kind::IVector; }
  int width() const { return is_vector() ? static_cast<int>(comps.size()) : 1; }
};

std::string describe(const TV& v);

// A variable of the body: its value, and for kernel parameters what it is bound to.
struct Var {
  TV value;
  int param_slot = -1;           // a kernel parameter's slot, -1 for locals
  bool maybe_undefined = false;  // assigned in only one branch of an `if`
  int undefined_line = 0;
};

class Lowerer {
 public:
  explicit Lowerer(const KernelSpec& spec);
  Kernel run();

  // --- used by lower_expr.cpp / lower_math.cpp
  [[noreturn]] void error(parse::Loc loc, const std::string& message) const;
  TV expr(const parse::Expr& e);
  TV call_math(const std::string& name, const std::vector<TV>& args, parse::Loc loc);
  TV call_helper(int helper, std::vector<TV> args, parse::Loc loc);

  // Emitting IR values (with constant folding of constant operands).
  int konst(double v);
  int kbool(bool v);
  int kint(int64_t v);  // an I constant
  int emit(Op op, Type t, int a = -1, int b = -1, int c = -1, int64_t iimm = 0);
  int to_float(const TV& v, parse::Loc loc, const char* what);  // Float or Int -> F value
  int to_bool(const TV& v, parse::Loc loc, const char* what);
  // An integer (compile-time, within int64, or an I value) as an I value.
  int to_int_value(const TV& v, parse::Loc loc, const char* what);
  // Component c of a numeric value as an F value (scalars broadcast; ints become float(i)).
  int float_comp(const TV& v, int c, parse::Loc loc, const char* what);
  // Python's int arithmetic on runtime integers (+ - * // % **), wrapping in int64.
  TV int_value_arith(const std::string& op, const TV& a, const TV& b, parse::Loc loc);
  std::optional<double> const_value(int v) const;
  // Binary arithmetic with broadcasting of scalars over vectors.
  TV arith(const std::string& op, const TV& a, const TV& b, parse::Loc loc);
  TV unary_map(Op op, const TV& a, parse::Loc loc, const char* fname);
  TV select(int cond, const TV& a, const TV& b, parse::Loc loc);
  int64_t const_int(const TV& v, parse::Loc loc, const char* what);
  // Python's int `op` int, exact; a float for "/" and negative powers. Errors name `loc`.
  TV int_arith(const std::string& op, const BigInt& x, const BigInt& y, parse::Loc loc);
  // A compile-time integer literal or scope value, refused with `loc` when beyond BigInt.
  TV int_literal(const std::string& text, parse::Loc loc);
  // Python's exact comparison of an int with an int or a float constant; nullopt otherwise.
  std::optional<bool> const_compare(const std::string& op, const TV& x, const TV& y);
  TV read_var(const std::string& name, parse::Loc loc);

  Kernel k;

 private:
  struct Frame {  // one function being lowered: the kernel, or an inlined helper
    const FunctionSource* fn = nullptr;
    std::map<std::string, Var> vars;
    int helper = -1;
  };

  void block(const parse::Block& b);
  void stmt(const parse::Stmt& s);
  void assign(const parse::Expr& target, const TV& value, parse::Loc loc);
  void assign_name(const std::string& name, TV value, parse::Loc loc);
  void if_stmt(const parse::Stmt& s);
  void for_stmt(const parse::Stmt& s);
  int materialize(int slot, int comp);
  TV symbol(const Symbol& s, const std::string& name, parse::Loc loc);
  void merge(const std::map<std::string, Var>& before, std::map<std::string, Var>& then_vars,
             std::map<std::string, Var>& else_vars, int cond, parse::Loc loc);

  const KernelSpec& spec_;
  std::vector<Frame> frames_;
  std::vector<int> pred_stack_;
  std::map<std::pair<int, int>, int> load_cache_;  // (op*1000+slot, comp) -> value
  std::map<std::pair<int, uint64_t>, int> const_cache_;
  std::optional<TV> return_value_;
  int unrolled_ = 0;
  int depth_ = 0;
  Loc cur_loc_;  // the statement being lowered, stamped on every value emitted

  // Registers a function's file and source lines for comments; returns the file's index.
  int add_source(const FunctionSource& fn);

  int pred() const { return pred_stack_.empty() ? -1 : pred_stack_.back(); }
  Frame& frame() { return frames_.back(); }
  const Frame& frame() const { return frames_.back(); }
  friend Kernel lower_impl(const KernelSpec&);
};

}  // namespace raptor::ir::front
