// Helpers shared by the AD transforms (see common.hpp).
#include "ad/common.hpp"

#include <bit>
#include <stdexcept>
#include <utility>

#include "ad/rules.hpp"
#include "passes/optimize.hpp"

namespace raptor::ad {

using ir::Op;
using ir::SlotKind;
using ir::Type;
using ir::Value;

int Builder::add(Value v) {
  const Op op = v.op;
  const int id = k_.add(std::move(v));
  if (op == Op::LoopBegin) scopes_.emplace_back();
  if (op == Op::LoopEnd && scopes_.size() > 1) scopes_.pop_back();
  return id;
}

int Builder::constant(double x) {
  const uint64_t bits = std::bit_cast<uint64_t>(x);
  for (const Scope& s : scopes_)
    if (auto it = s.fconst.find(bits); it != s.fconst.end()) return it->second;
  Value v;
  v.op = Op::Const;
  v.type = Type::F;
  v.imm = x;
  const int id = add(std::move(v));
  scopes_.back().fconst[bits] = id;
  return id;
}

int Builder::boolean(bool b) {
  for (const Scope& s : scopes_)
    if (s.bconst[b ? 1 : 0] != -1) return s.bconst[b ? 1 : 0];
  Value v;
  v.op = Op::Const;
  v.type = Type::B;
  v.imm = b ? 1.0 : 0.0;
  const int id = add(std::move(v));
  scopes_.back().bconst[b ? 1 : 0] = id;
  return id;
}

int Builder::make(Op op, std::initializer_list<int> args, ir::Type declared, int pred) {
  Value v;
  v.op = op;
  int a = 0;
  for (const int x : args) v.args[a++] = x;
  v.type = ir::result_type(op, declared);
  v.pred = pred;
  v.loc = loc_;
  return add(std::move(v));
}

int Builder::op(Op op, std::initializer_list<int> args, int pred) {
  const int second = args.size() > 1 ? *(args.begin() + 1) : -1;
  return make(op, args, op == Op::Select ? k_.values[second].type : Type::F, pred);
}

int Builder::powi(int x, int64_t n, int pred) {
  const int v = op(Op::PowI, {x}, pred);
  k_.values[v].iimm = n;
  return v;
}

int Builder::load(Op op, int slot, int comp, int pred, int index) {
  Value v;
  v.op = op;
  v.type = op == Op::LoadMask ? Type::B : Type::F;
  v.slot = slot;
  v.comp = comp;
  v.pred = pred;
  v.args[0] = index;
  v.loc = loc_;
  return add(std::move(v));
}

int Builder::integer(int64_t x) {
  Value v;
  v.op = Op::Const;
  v.type = Type::I;
  v.iimm = x;
  return add(std::move(v));
}

int Builder::iop(Op op, std::initializer_list<int> args) { return make(op, args, Type::I, -1); }

int Builder::loop_begin(int64_t iterations) {
  Value v;
  v.op = Op::LoopBegin;
  v.type = Type::B;
  v.iimm = iterations;
  v.loc = loc_;
  return add(std::move(v));
}

int Builder::loop_value(Op op, int a0, int a1) {
  Value v;
  v.op = op;
  v.args[0] = a0;
  v.args[1] = a1;
  v.type = op == Op::LoopIndex ? Type::I : op == Op::LoopEnd ? Type::B : k_.values[a0].type;
  v.loc = loc_;
  return add(std::move(v));
}

int Builder::guard(int p, int x) { return p == -1 ? x : op(Op::Select, {p, x, constant(0.0)}); }

int Builder::sum(const std::vector<int>& xs, int pred) {
  if (xs.empty()) return constant(0.0);
  int acc = xs[0];
  for (size_t i = 1; i < xs.size(); ++i) acc = op(Op::Add, {acc, xs[i]}, pred);
  return acc;
}

int Builder::named(int v, const std::string& name) {
  if (!name.empty()) k_.values[v].name = name;
  return v;
}

ir::Kernel derived_kernel(const ir::Kernel& k, std::string name) {
  ir::Kernel d;
  d.name = std::move(name);
  d.file = k.file;
  d.files = k.files;
  d.source_text = k.source_text;
  d.steps = 1;
  d.active_set = k.active_set;
  return d;
}

std::string unique_name(const std::string& base, const std::string& suffix,
                        std::set<std::string>& taken) {
  std::string name = base + suffix;
  while (taken.count(name)) name += "_";
  taken.insert(name);
  return name;
}

std::vector<int> wrt_slots(const ir::Kernel& k, const std::vector<std::string>& wrt,
                           const char* transform) {
  std::string allowed;
  for (const auto& s : k.slots) {
    const bool ok = (s.kind == SlotKind::Param || s.kind == SlotKind::Plane ||
                     s.kind == SlotKind::Table || (s.kind == SlotKind::Mutable && s.inout)) &&
                    s.dtype == ir::Dtype::Float;
    if (ok) allowed += (allowed.empty() ? "" : ", ") + ("'" + s.name + "'");
  }
  if (allowed.empty()) allowed = "none";
  const std::string head = std::string("raptor ") + transform + ": kernel '" + k.name + "': ";
  const std::string tail =
      "; a derivative can be taken with respect to a Param, a Scalar or Vector plane, a Table "
      "or an in-out Mutable (one that is read before it is written): here " +
      allowed;
  std::vector<int> out;
  for (const std::string& name : wrt) {
    const int s = k.find_slot(name);
    if (s < 0) throw std::invalid_argument(head + "no parameter named '" + name + "'" + tail);
    const ir::Slot& slot = k.slots[s];
    const char* why = nullptr;
    if (slot.dtype != ir::Dtype::Float)
      why = slot.dtype == ir::Dtype::Bool ? "is a bool plane, which carries no derivative"
                                          : "is an integer plane, which carries no derivative "
                                            "(its tangent is float0 in JAX)";
    else
      switch (slot.kind) {
        case SlotKind::Mutable:
          if (!slot.inout) why = "is a pure output (a Mutable that is written but never read)";
          break;
        case SlotKind::Terminated:
          why = "is the Terminated mask, which carries no derivative";
          break;
        case SlotKind::ParamSum:
        case SlotKind::TableSum:
          why = slot.inout ? "is a scatter target (Mutable[Table]): its result is its bound "
                             "values plus the adds, so its input's tangent passes to the "
                             "output and its output's cotangent back to the input unchanged "
                             "(the JAX bridge does this; name the values added instead)"
                           : "is a summed output of a derived kernel";
          break;
        case SlotKind::Random:
          why = "is a Random parameter, whose draws carry no derivative";
          break;
        default:
          break;
      }
    if (why) throw std::invalid_argument(head + "'" + name + "' " + why + tail);
    for (const int prev : out)
      if (prev == s) throw std::invalid_argument(head + "'" + name + "' is named twice in wrt");
    out.push_back(s);
  }
  return out;
}

std::vector<char> active_values(const ir::Kernel& u,
                                const std::function<bool(int slot)>& wrt_slot) {
  const size_t n = u.values.size();
  std::vector<char> act(n, 0);
  std::vector<char> by_next(n, 0);  // a LoopCarry whose next value is active
  for (bool changed = true; changed;) {
    changed = false;
    for (size_t i = 0; i < n; ++i) {
      const Value& v = u.values[i];
      bool a = false;
      if (v.type == Type::F) {
        switch (v.op) {
          case Op::LoadParam:
          case Op::LoadPlane:
          case Op::LoadTable:
            a = wrt_slot(v.slot);
            break;
          case Op::Select:
            a = act[v.args[1]] || act[v.args[2]];
            break;
          case Op::LoopCarry:
            a = act[v.args[0]] || by_next[i];
            break;
          case Op::LoopNext:
            if (act[v.args[1]] && !by_next[v.args[0]]) by_next[v.args[0]] = changed = true;
            break;
          case Op::LoopResult:
            a = act[v.args[0]];
            break;
          default:
            if (has_partials(v.op))
              for (int j = 0; j < ir::op_arity(v.op); ++j) a = a || act[v.args[j]];
        }
      }
      act[i] = a;
    }
  }
  return act;
}

void refuse_long_loops(const ir::Kernel& k, const std::string& what) {
  for (const Value& v : k.values)
    if (v.op == Op::LoopBegin)
      throw std::invalid_argument(
          "raptor: kernel '" + k.name + "': its `for` loop at line " + std::to_string(v.loc.line) +
          " runs " + std::to_string(v.iimm) +
          " iterations, more than the 4096 a kernel unrolls, so it is compiled as a loop; " + what +
          " of such loops are not available yet (tangent and adjoint kernels are). "
          "Differentiate a kernel whose loops have 4096 iterations in all or fewer, or carry "
          "the loop over steps (@hawk.kernel(steps=k) with a Terminated mask)");
}

}  // namespace raptor::ad
