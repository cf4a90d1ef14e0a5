// Unrolling a kernel's steps into one body (see unroll.hpp). `unroll` copies the body once
// per step; `StepCopier` holds what one copy needs.
#include "ad/unroll.hpp"

#include <bit>
#include <map>
#include <stdexcept>
#include <string>
#include <tuple>

#include "ad/common.hpp"
#include "passes/optimize.hpp"

namespace raptor::ad {

using ir::Op;
using ir::SlotKind;
using ir::Value;

namespace {

// Loads and constants shared by all steps, keyed by what defines them.
class Leaves {
 public:
  explicit Leaves(Builder& b) : b_(b) {}

  int get(const Value& v) {
    if (v.op == Op::Const && v.type == ir::Type::F) return b_.constant(v.imm);
    const auto key = std::make_tuple(static_cast<int>(v.op), static_cast<int>(v.type), v.slot,
                                     v.comp, std::bit_cast<uint64_t>(v.imm), v.iimm);
    if (auto it = map_.find(key); it != map_.end()) return it->second;
    Value c = v;
    c.pred = -1;
    const int id = b_.copy(std::move(c));
    map_[key] = id;
    return id;
  }

 private:
  Builder& b_;
  std::map<std::tuple<int, int, int, int, uint64_t, int64_t>, int> map_;
};

}  // namespace

ir::Kernel unroll(const ir::Kernel& k) {
  ir::Kernel u = derived_kernel(k, k.name);
  u.slots = k.slots;
  Builder b(u);
  Leaves leaves(b);

  const int ns = static_cast<int>(k.slots.size());
  std::vector<std::vector<int>> state(ns);  // Mutable slot -> component -> value
  for (int s = 0; s < ns; ++s)
    if (k.slots[s].kind == SlotKind::Mutable) state[s].assign(k.slots[s].width, -1);

  int alive = -1;  // -1: true
  std::vector<ir::Store> sums;
  int last_term = -1;
  for (int step = 0; step < k.steps; ++step) {
    std::vector<int> map(k.values.size(), -1);
    // A predicate of this step -> it AND alive; one map per open loop (innermost last), since
    // an And made inside a loop is out of scope after it.
    std::vector<std::map<int, int>> preds(1);
    auto pred_of = [&](int p) {
      const int mp = p == -1 ? -1 : map[p];
      if (alive == -1) return mp;
      if (mp == -1) return alive;
      for (const auto& level : preds)
        if (auto it = level.find(mp); it != level.end()) return it->second;
      const int both = b.op(Op::And, {mp, alive});
      preds.back()[mp] = both;
      return both;
    };
    // Loads and constants are shared by all steps only outside loops: inside one (a long
    // loop, ir.hpp's LoopBegin) a shared value would be out of scope after it.
    auto leaf = [&](const Value& v) {
      if (preds.size() == 1 || (v.op == Op::Const && v.type == ir::Type::F)) return leaves.get(v);
      Value c = v;
      c.pred = -1;
      return b.copy(std::move(c));
    };
    for (size_t i = 0; i < k.values.size(); ++i) {
      const Value& v = k.values[i];
      switch (v.op) {
        case Op::Const:
        case Op::LoadParam:
        case Op::LoadPlane:
        case Op::LoadMask:
          map[i] = leaf(v);
          break;
        case Op::LoadState:
          if (step > 0) {
            map[i] = state[v.slot][v.comp];
          } else if (k.slots[v.slot].inout) {
            Value load = v;
            load.op = Op::LoadPlane;
            map[i] = leaf(load);
          } else {  // a pure output starts at 0 of its type
            const ir::Type t = ir::value_type(k.slots[v.slot].dtype);
            Value zero;
            zero.op = Op::Const;
            zero.type = t;
            map[i] = t == ir::Type::F   ? b.constant(0.0)
                     : t == ir::Type::B ? b.boolean(false)
                                        : leaf(zero);
          }
          break;
        default: {
          Value c = v;
          // A draw keeps its numbering: step `step` of the launch becomes a step offset.
          if (ir::is_draw(v.op))
            c.iimm += step;
          for (int a = 0; a < ir::op_arity(v.op); ++a) c.args[a] = map[v.args[a]];
          // A loop's markers and carries keep no predicate of their own.
          c.pred = ir::is_loop_op(v.op) ? (v.pred == -1 ? -1 : map[v.pred]) : pred_of(v.pred);
          map[i] = b.copy(std::move(c));
          if (v.op == Op::LoopBegin) preds.emplace_back();
          if (v.op == Op::LoopEnd) preds.pop_back();
        }
      }
    }
    for (const ir::Store& st : k.stores) {
      if (k.slots[st.slot].kind == SlotKind::Mutable) continue;
      ir::Store c = st;
      c.value = map[st.value];
      if (st.index != -1) c.index = map[st.index];
      c.pred = pred_of(st.pred);
      sums.push_back(c);
    }
    const int term = k.terminate == -1 ? -1 : map[k.terminate];
    for (const ir::Store& st : k.stores) {
      if (k.slots[st.slot].kind != SlotKind::Mutable) continue;
      int& cur = state[st.slot][st.comp];
      const int next = map[st.value];
      cur = (alive == -1 || cur == next) ? next : b.op(Op::Select, {alive, next, cur});
    }
    if (term != -1) {
      const int not_term = b.op(Op::Not, {term});
      alive = alive == -1 ? not_term : b.op(Op::And, {alive, not_term});
    }
    last_term = term;
  }
  for (const ir::Store& st : k.stores) {
    if (k.slots[st.slot].kind != SlotKind::Mutable) continue;
    ir::Store c = st;
    c.value = state[st.slot][st.comp];
    u.stores.push_back(c);
  }
  for (const ir::Store& st : sums) u.stores.push_back(st);
  if (k.terminate != -1) u.terminate = k.steps == 1 ? last_term : b.op(Op::Not, {alive});
  passes::dce(u);
  return u;
}

}  // namespace raptor::ad
