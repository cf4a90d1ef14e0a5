// Internal to the front end (lower*.cpp): the typed values it manipulates while building IR,
// and the Lowerer class that holds the kernel under construction. Not a public header.
#pragma once

#include <map>
#include <optional>
#include <set>
#include <string>
#include <utility>
#include <vector>

#include "common/error.hpp"
#include "ir/ir.hpp"
#include "ir/lower.hpp"
#include "ir/lower_int.hpp"
#include "ir/spec.hpp"
#include "parse/ast.hpp"

namespace raptor::ir::front {

// A typed value during lowering.
struct TV {
  enum class Kind {
    Float,    // comps[0]: an F value
    Vector,   // comps: k F values
    Matrix,   // comps: rows * cols F values, row-major (comp = i * cols + j)
    Bool,     // comps[0]: a B value
    Int,      // a compile-time integer (loop variables, integer literals): `ival`, exact
    IntVal,   // comps[0]: an I value (an integer plane's value, or int arithmetic on one)
    IVector,  // comps: k I values (a Vector[k, hawk.int32/int64] plane)
    Tuple,    // `items`
    Table,    // a Table parameter: `slot`
    Random,   // the Random parameter: `slot` (draws with .uniform() / .normal())
    Math,     // a hawk.math function: `name`
    Helper,   // a @hawk.func helper: `helper`
    Module,   // the hawk.math module
    SumOut,   // a Mutable[Param] output (a ParamSum slot): `slot`; assigned `hawk.sum(...)` only
    Scatter,  // a Mutable[Table[...]] (an in-out TableSum slot): `slot`; written only as
              //  `hawk.scatter(t)[i] += v` (scatter_stmt)
  };
  Kind kind = Kind::Float;
  std::vector<int> comps;  // IR values; -1 = a Mutable component not yet assigned
  BigInt ival;
  std::vector<TV> items;
  int slot = -1;
  int helper = -1;
  int rows = 0;  // Matrix: its rows (cols = comps.size() / rows)
  std::string name;
  // An IntVal made from integer constants only (`3 if c else 4`, and int arithmetic of such):
  // an int, as in Python, that turns into a float where a merge (an `if`, a loop's exit) meets
  // a float, as Python's int would stay an int there and become a float later (docs/
  // language.md "Integer and bool planes").
  bool weak = false;
  bool weakish() const { return kind == Kind::Int || (kind == Kind::IntVal && weak); }

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
  static TV mat(std::vector<int> c, int r) {
    TV t;
    t.kind = Kind::Matrix;
    t.comps = std::move(c);
    t.rows = r;
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
    return kind == Kind::Float || kind == Kind::Vector || kind == Kind::Matrix ||
           kind == Kind::Int || kind == Kind::IntVal || kind == Kind::IVector;
  }
  // An integer: compile-time, or an I value (scalar or vector).
  bool integral() const {
    return kind == Kind::Int || kind == Kind::IntVal || kind == Kind::IVector;
  }
  // A Vector or a Matrix: components that arithmetic maps over.
  bool shaped() const { return kind == Kind::Vector || kind == Kind::Matrix; }
  bool is_vector() const { return kind == Kind::Vector || kind == Kind::IVector; }
  // Components a float operation maps over: a Vector, a Matrix or an integer vector.
  bool mapped() const { return shaped() || kind == Kind::IVector; }
  int width() const {
    return shaped() || kind == Kind::IVector ? static_cast<int>(comps.size()) : 1;
  }
  int cols() const { return rows > 0 ? static_cast<int>(comps.size()) / rows : 0; }
  // The same shape (kind, size, rows) with other components.
  TV like(std::vector<int> c) const {
    TV t;
    t.kind = kind;
    t.comps = std::move(c);
    t.rows = rows;
    return t;
  }
  // The result of a float operation over this value's components `c`: a Matrix keeps its
  // shape; a Vector, or an integer vector, gives a Vector.
  TV float_like(std::vector<int> c) const {
    if (kind == Kind::Matrix) return like(std::move(c));
    TV t;
    t.kind = Kind::Vector;
    t.comps = std::move(c);
    return t;
  }
};

std::string describe(const TV& v);
// Whether two shaped values (Vector or Matrix) have the same shape.
inline bool same_shape(const TV& a, const TV& b) {
  // an integer vector has a Vector's shape
  const auto shape = [](TV::Kind k) { return k == TV::Kind::IVector ? TV::Kind::Vector : k; };
  return shape(a.kind) == shape(b.kind) && a.comps.size() == b.comps.size() && a.rows == b.rows;
}

// A variable of the body: its value, and for kernel parameters what it is bound to.
struct Var {
  TV value;
  int param_slot = -1;           // a kernel parameter's slot, -1 for locals
  bool maybe_undefined = false;  // assigned in only one branch of an `if`, or after an exit
  int undefined_line = 0;
  std::string undefined_why;  // the refusal when it is read; empty: the `if` message
};

// A variable carried by a real loop (`real_loop`): the loop's statement, which of its
// lowerings this is (a helper's loop is lowered once per call), and the variable.
struct CarryKey {
  const parse::Stmt* loop = nullptr;
  int visit = 0;
  std::string name;
  auto operator<=>(const CarryKey&) const = default;
};

// A `for` loop being unrolled, for `break`/`continue` (see lower_loop.cpp). Its samples'
// liveness is a Bool value: `outer_live` (alive when the loop started) and not broken and not
// continued in this iteration.
struct LoopCtx {
  size_t frame_depth = 0;  // frames_.size() when the loop started: its function's frame
  int outer_live = -1;     // the liveness when the loop started (-1: every sample)
  int brk = -1;            // samples that left the loop by `break` (-1: none)
  int cnt = -1;            // samples that left this iteration by `continue` (-1: none)
  int line = 0;
  std::set<std::string> late_names;  // locals first assigned after an exit (not always set)
  // A real loop's carries that entered as ints made of constants (FloatCarry), by name.
  std::map<std::string, CarryKey> weak_carries;
};

// Thrown by real_loop when a carry entered as an int made of constants (TV::weak) and the
// body makes it a float, as `c = 0` then `c = c + x` does: Python's c is a float from the
// first iteration on, so the kernel is lowered again with that carry entering as a float
// (ir::lower retries; the body's kinds cannot be known before the body is lowered).
struct FloatCarry {
  CarryKey key;
};

class Lowerer {
 public:
  // `float_carries`: the carries that enter their loops as floats (FloatCarry).
  explicit Lowerer(const KernelSpec& spec, std::set<CarryKey> float_carries = {});
  Kernel run();

  // --- used by lower_expr.cpp / lower_math.cpp
  [[noreturn]] void error(parse::Loc loc, const std::string& message) const;
  TV expr(const parse::Expr& e);
  TV call_math(const std::string& name, const std::vector<TV>& args, parse::Loc loc);
  // hawk.math's NumPy-named functions (ir/math_fns.hpp and their aliases), or nullopt for
  // another name (lower_math.cpp).
  std::optional<TV> call_numpy_math(const std::string& name, const std::vector<TV>& args,
                                    parse::Loc loc);
  TV call_helper(int helper, std::vector<TV> args, parse::Loc loc);
  // rng.uniform(), rng.normal(), rng.gamma(a), ...: the next draw of Random slot `slot`
  // (docs/language.md "Random numbers"), with the call's arguments.
  TV draw(int slot, const std::string& method, const std::vector<TV>& args, parse::Loc loc);
  // A Rand* value (RandGamma .. RandNormalVec) of the next draw: args[0] its run-time index
  // part, then `args`; `imm` RandNormalVec's element.
  int draw_value(Op op, Type t, int slot, std::initializer_list<int> args, double imm = 0.0);
  // Matrices and quaternions (lower_matrix.cpp): `a @ b`, and the hawk.math functions on them;
  // nullopt when `name` is not one of them.
  TV matmul(const TV& a, const TV& b, parse::Loc loc);
  TV matrix_index(const TV& m, const TV& idx, const parse::Expr& at);
  std::optional<TV> call_matrix_math(const std::string& name, const std::vector<TV>& args,
                                     parse::Loc loc);
  // Per-sample linear algebra (lower_linalg.cpp): eye, diag, diagonal, tril, triu, inv, solve,
  // lu, lu_solve, cholesky, cho_solve, lstsq, eigh; nullopt for another name.
  std::optional<TV> call_linalg(const std::string& name, const std::vector<TV>& args,
                                parse::Loc loc);
  // p0 +- p1 +- ... of float products l * r (plus[k]: the sign of product k + 1; + where
  // `plus` ends), each operation emitted in a statement of its own, left to right.
  int signed_sum(const std::vector<std::pair<int, int>>& products,
                 const std::vector<bool>& plus = {});
  // A helper with a @defjvp rule (lower_jvp.cpp): its body's value with the rule's derivative.
  TV call_custom_jvp(int helper, const std::vector<TV>& args, parse::Loc loc);
  // Inlines helper `helper`'s body (spec().helpers index) at a call with `args`.
  TV inline_helper(int helper, std::vector<TV> args, parse::Loc loc);
  const KernelSpec& spec() const { return spec_; }
  std::vector<int> rules_active_;  // helpers whose @defjvp rule is being lowered

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
  std::vector<TracedLocal> locals;  // filled by run(): the body's locals at its end

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
  // A `for` loop with more iterations than are left to unroll: one LoopBegin .. LoopEnd
  // region (lower_loop.cpp), its body lowered once.
  void real_loop(const parse::Stmt& s, int64_t start, int64_t step, int64_t count);
  // Throws FloatCarry when `name` is a carry of an enclosing real loop of this function that
  // entered it as an int made of constants (it is becoming a float).
  void throw_if_weak_carry(const std::string& name) const;
  // Drops the front end's caches of values made after `first` (inside a loop now closed).
  void forget_values_from(int first);
  void exit_stmt(const parse::Stmt& s);  // `break` / `continue`
  // The value assigned to a variable that held `old`: `now` where `cond` holds, `old`
  // elsewhere (per component; ints become floats when they differ). When the kinds differ
  // the refusal reads "'x' is <now's kind> <what> and <old's kind> <otherwise>".
  TV choose(int cond, TV now, TV old, int param_slot, const std::string& name, parse::Loc loc,
            const std::string& what, const std::string& otherwise);
  // Bool helpers that fold -1 ("always") and constants.
  int and_b(int a, int b);
  int or_b(int a, int b);
  int not_b(int a);
  bool is_false(int b) const;
  int unguarded(int b);  // drops the predicate of a liveness value
  void update_live();
  int guard_live() const;  // the liveness assignments of this frame are guarded by, or -1
  int materialize(int slot, int comp);
  TV symbol(const Symbol& s, const std::string& name, parse::Loc loc);
  void merge(const std::map<std::string, Var>& before, std::map<std::string, Var>& then_vars,
             std::map<std::string, Var>& else_vars, int cond, parse::Loc loc);

  const KernelSpec& spec_;
  std::vector<Frame> frames_;
  std::vector<int> pred_stack_;
  std::vector<LoopCtx> loops_;                     // enclosing loops, innermost last
  int live_ = -1;                                  // samples still running here (-1: all)
  bool exited_ = false;                            // a `break`/`continue` ended this block
  std::map<std::pair<int, int>, int> pred_cache_;  // (if-predicate, live) -> their And
  std::map<std::pair<int, int>, int> load_cache_;  // (op*1000+slot, comp) -> value
  std::map<std::pair<int, uint64_t>, int> const_cache_;
  std::optional<TV> return_value_;
  int unrolled_ = 0;
  // Draws emitted so far: the next draw's index j (source and unroll order). Inside a loop
  // region, j = the run-time draw_base_ + draws_: draws_ counts this iteration's draws, and
  // draw_base_ (-1 until the iteration's first draw makes it) is the loop's index times
  // draw_stride_ (an I constant set when the body is done: the draws one iteration makes)
  // plus the draws before the loop (draw_outer_*: the static count and the run-time part).
  int64_t draws_ = 0;
  // draw_base_, made where the first draw of the iteration (or an inner loop region) needs it.
  int draw_base();
  int draw_base_ = -1;
  int draw_stride_ = -1;
  int draw_index_ = -1;  // the innermost loop region's LoopIndex
  int64_t draw_outer_static_ = 0;
  int draw_outer_base_ = -1;
  std::set<CarryKey> float_carries_;
  std::map<const parse::Stmt*, int> loop_visits_;  // real_loop's lowerings of each loop so far
  int real_loops_ = 0;                             // real loops (not unrolled) being lowered
  int real_loop_line_ = 0;                         // the innermost one's line
  int depth_ = 0;
  // `out = hawk.sum(x, where=c)` (docs/language.md "Sums over samples"): the sum outputs
  // assigned so far; reduce_stmt lowers the statement, reduction_call says whether an
  // expression is such a call (its name: "sum", "mean", "min", "max").
  std::vector<int> summed_;
  std::optional<std::string> reduction_call(const parse::Expr& e);
  void reduce_stmt(const parse::Stmt& s, const std::string& fn);
  // Stage boundaries (lower_stage.cpp): a reduction whose value the body reads. stage_read
  // gives the value of sum slot `slot` as a read of its stage Param (made on the first read);
  // staged_reduction lowers `hawk.mean(x)` inside an expression into a hidden sum slot.
  std::map<int, int> stage_param_;  // sum slot -> its Param slot
  int stage_read(int slot, parse::Loc loc, bool hidden);
  TV staged_reduction(const parse::Expr& call, const std::string& fn);
  // `hawk.mean(x, where=c)` divides by how many samples c selects: a hidden sum of 1.0 where c,
  // read as a stage Param (so the mean is a reduction of a later stage than the count).
  int selected_count(int where, parse::Loc loc);
  // `hawk.scatter(t)[i] += v` (docs/language.md "Scatter-adds"): whether an assignment
  // target is `hawk.scatter(...)[...]`, and the statement's lowering to TableSum stores.
  bool scatter_target(const parse::Expr& e);
  void scatter_stmt(const parse::Stmt& s);
  Loc cur_loc_;  // the statement being lowered, stamped on every value emitted

  // Registers a function's file and source lines for comments; returns the file's index.
  int add_source(const FunctionSource& fn);

  // The predicate of values emitted here: the enclosing conditions and the liveness.
  int pred();
  Frame& frame() { return frames_.back(); }
  const Frame& frame() const { return frames_.back(); }
  friend Kernel lower_impl(const KernelSpec&);
};

}  // namespace raptor::ir::front
