// Helpers shared by the AD transforms (tangent.cpp, adjoint.cpp, unroll.cpp): a `Builder`
// that appends values to a kernel (constants shared, loc taken from the value being
// differentiated), the empty derived kernel each transform starts from, derived slot names
// and the check of `wrt` (dead values are removed by passes::dce). Start at `Builder`.
#pragma once

#include <cstdint>
#include <functional>
#include <initializer_list>
#include <map>
#include <set>
#include <string>
#include <vector>

#include "ir/ir.hpp"

namespace raptor::ad {

// Appends values to a kernel. Every value it makes gets the location of the current origin
// (`set_origin`), so generated code points back at the user's line.
class Builder {
 public:
  explicit Builder(ir::Kernel& k) : k_(k) {}

  ir::Kernel& kernel() { return k_; }
  const ir::Value& value(int v) const { return k_.values[v]; }

  // Locations of the values made from now on.
  void set_origin(const ir::Loc& loc) { loc_ = loc; }

  // An F constant (one value per distinct constant in scope: a constant made inside a loop is
  // forgotten at its LoopEnd, where it goes out of scope).
  int constant(double x);
  int boolean(bool b);  // a B constant (shared as `constant` is)

  // A value of `op` over `args`; its type follows from the op (Select: its second operand).
  int op(ir::Op op, std::initializer_list<int> args, int pred = -1);
  int powi(int x, int64_t n, int pred = -1);
  // Load* values; `index` is LoadTable's I operand.
  int load(ir::Op op, int slot, int comp, int pred = -1, int index = -1);
  // Adds a copy of `v` (operands and slot already in this kernel's numbering).
  int copy(ir::Value v) { return add(std::move(v)); }

  // An I constant (not shared).
  int integer(int64_t x);
  // A value of `op` over I operands: Add, Sub, Mul, FloorDiv give I; comparisons B.
  int iop(ir::Op op, std::initializer_list<int> args);
  // Loop values (ir.hpp): LoopBegin(iterations) opens a scope; LoopCarry(entry, begin),
  // LoopIndex(begin), LoopNext(carry, next), LoopEnd(begin, exit), LoopResult(carry, end) take
  // their type from their first operand (the carry's type), as ir::verify wants.
  int loop_begin(int64_t iterations);
  int loop_value(ir::Op op, int a0, int a1 = -1);

  // select(p, x, 0): `x` where `p` holds, else 0; `x` itself when p == -1.
  int guard(int p, int x);
  // x0 + x1 + ... (an Add chain in order); Const 0 for none.
  int sum(const std::vector<int>& xs, int pred = -1);
  // Names value `v` (when `name` is not empty) and returns v.
  int named(int v, const std::string& name);

 private:
  // Every value is added here: a LoopBegin opens a scope of shared constants, its LoopEnd
  // closes it.
  int add(ir::Value v);
  // A value of `op` over `args`, its type result_type(op, declared).
  int make(ir::Op op, std::initializer_list<int> args, ir::Type declared, int pred);

  struct Scope {
    std::map<uint64_t, int> fconst;  // bits of the double -> value
    int bconst[2] = {-1, -1};
  };
  ir::Kernel& k_;
  std::vector<Scope> scopes_ = std::vector<Scope>(1);  // outermost first
  ir::Loc loc_;
};

// An empty kernel derived from `k`, named `name`: one step (AD works on unrolled kernels), the
// same active-set guard, and `k`'s file table and source text, so the locations its values
// copy from `k` name the user's lines in generated code. Slots, values and stores are empty.
ir::Kernel derived_kernel(const ir::Kernel& k, std::string name);

// `base + suffix`, with "_" appended until it differs from every name in `taken`; the result
// is added to `taken`.
std::string unique_name(const std::string& base, const std::string& suffix,
                        std::set<std::string>& taken);

// Checks `wrt` against `k` (each a Param, Plane, Table or in-out Mutable slot, no repeats)
// and returns the slot indices in wrt order; throws std::invalid_argument naming the kernel,
// the slot and what can be differentiated.
std::vector<int> wrt_slots(const ir::Kernel& k, const std::vector<std::string>& wrt,
                           const char* transform);

// Throws std::invalid_argument when `k` holds a loop region (a `for` with more iterations
// than the front end unrolls): `what` is the transform that cannot take one ("adjoint
// kernels (reverse mode, jax.grad)"); the message names the kernel, the loop's line, its
// iterations and the ways out.
// Which values of `u` can have a nonzero derivative when the loads of the slots `wrt_slot`
// accepts have one: an F load of such a slot, a Select of an active choice, an operator with
// partials (rules.hpp) of an active operand, to a fixpoint over loop carries: a LoopCarry is
// active when its entry value or its next value is, a LoopResult when its carry is. The rule
// the tangent transform follows value by value, and the adjoint's activity.
std::vector<char> active_values(const ir::Kernel& u, const std::function<bool(int slot)>& wrt_slot);

void refuse_long_loops(const ir::Kernel& k, const std::string& what);

}  // namespace raptor::ad
