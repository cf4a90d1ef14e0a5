// Forward mode (see tangent.hpp). `tangent` unrolls the kernel, lays out the slots
// (`TangentSlots`), copies the primal values and, value by value, emits the tangent of each
// one that depends on a `wrt` input (`TangentPass::tangent_of`); a value whose tangent is
// structurally zero gets none.
#include "ad/tangent.hpp"

#include <set>
#include <stdexcept>

#include "ad/common.hpp"
#include "ad/rules.hpp"
#include "ad/unroll.hpp"
#include "ad/winner.hpp"
#include "passes/optimize.hpp"

namespace raptor::ad {

using ir::Op;
using ir::SlotKind;
using ir::Type;
using ir::Value;

namespace {

struct TangentSlots {
  std::vector<int> primal;   // k's slot -> the new kernel's slot holding it, -1: dropped
  std::vector<int> dot_in;   // a wrt input -> its tangent slot ("w_dot"), else -1
  std::vector<int> dot_out;  // an output -> its tangent slot ("m_dot", "s_dot"), else -1
  std::vector<int> win;      // a hawk.min / hawk.max output -> its winner Param ("s_win")
};

TangentSlots lay_out(const ir::Kernel& k, const std::vector<int>& wrt, bool with_primal,
                     ir::Kernel& t) {
  const int ns = static_cast<int>(k.slots.size());
  TangentSlots m{std::vector<int>(ns, -1), std::vector<int>(ns, -1), std::vector<int>(ns, -1),
                 std::vector<int>(ns, -1)};
  std::set<std::string> taken;
  auto add = [&](ir::Slot s) {
    taken.insert(s.name);
    t.slots.push_back(std::move(s));
    return static_cast<int>(t.slots.size()) - 1;
  };
  for (int s = 0; s < ns; ++s) {  // a) k's slots
    ir::Slot slot = k.slots[s];
    switch (slot.kind) {
      case SlotKind::Mutable:
        if (with_primal) {
          m.primal[s] = add(slot);
        } else if (slot.inout) {
          slot.kind = SlotKind::Plane;
          slot.inout = false;
          m.primal[s] = add(slot);
        }
        break;
      case SlotKind::ParamSum:
      case SlotKind::TableSum:
        if (with_primal) m.primal[s] = add(slot);
        break;
      default:
        m.primal[s] = add(slot);
    }
  }
  for (ir::Slot& slot : t.slots)
    if (slot.kind == SlotKind::TableSum) slot.table_of = m.primal[slot.table_of];
  for (const int s : wrt) {  // b) tangents of the inputs
    ir::Slot slot = k.slots[s];
    slot.name = unique_name(slot.name, "_dot", taken);
    m.dot_in[s] = static_cast<int>(t.slots.size());
    if (slot.kind == SlotKind::Mutable) m.dot_out[s] = m.dot_in[s];
    t.slots.push_back(std::move(slot));
  }
  for (int s = 0; s < ns; ++s) {  // c) tangents of the other outputs
    ir::Slot slot = k.slots[s];
    const bool out = slot.kind == SlotKind::Mutable || slot.kind == SlotKind::ParamSum ||
                     slot.kind == SlotKind::TableSum;
    // An integer or bool output has no tangent (float0 in JAX).
    if (!out || m.dot_out[s] != -1 || slot.dtype != ir::Dtype::Float) continue;
    slot.name = unique_name(slot.name, "_dot", taken);
    if (slot.kind == SlotKind::TableSum && slot.inout) {
      // A scatter target's tangent is one too: the input tangent plus the scattered tangents.
      slot.table_of = static_cast<int>(t.slots.size());
    } else {
      slot.inout = false;
      if (slot.kind == SlotKind::TableSum) slot.table_of = m.primal[slot.table_of];
    }
    slot.combine = ir::Combine::Sum;  // a min / max's tangent: the winner's, added (winner.hpp)
    m.dot_out[s] = static_cast<int>(t.slots.size());
    t.slots.push_back(std::move(slot));
  }
  for (int s = 0; s < ns; ++s) {  // d) the winners of the min / max outputs (winner.hpp)
    const ir::Slot& out = k.slots[s];
    if (out.kind != SlotKind::ParamSum || out.combine == ir::Combine::Sum) continue;
    ir::Slot slot = winner_param(k, out);
    taken.insert(slot.name);
    m.win[s] = static_cast<int>(t.slots.size());
    t.slots.push_back(std::move(slot));
  }
  for (int s = 0; s < ns; ++s) {  // roles, for callers that map slots back (the JAX bridge)
    if (m.primal[s] >= 0) t.slots[m.primal[s]].role = 'p';
    for (const int d : {m.dot_in[s], m.dot_out[s]})
      if (d >= 0) t.slots[d].role = 't';
    for (const int d : {m.primal[s], m.dot_in[s], m.dot_out[s]})
      if (d >= 0) t.slots[d].primal = k.slots[s].name;
  }
  return m;
}

class TangentPass {
 public:
  TangentPass(const ir::Kernel& u, const TangentSlots& slots, ir::Kernel& t)
      : u_(u),
        slots_(slots),
        b_(t),
        active_(active_values(u, [&](int slot) { return slots.dot_in[slot] != -1; })),
        prim_(u.values.size(), -1),
        dot_(u.values.size(), -1) {}

  void run() {
    for (size_t i = 0; i < u_.values.size(); ++i) {
      Value v = u_.values[i];
      for (int a = 0; a < ir::op_arity(v.op); ++a) v.args[a] = prim_[v.args[a]];
      if (v.pred != -1) v.pred = prim_[v.pred];
      if (v.slot != -1) v.slot = slots_.primal[v.slot];
      // The entry value of the loop's tangent carries that start at 0, before the loop.
      if (v.op == Op::LoopBegin) b_.constant(0.0);
      prim_[i] = b_.copy(std::move(v));
      dot_[i] = tangent_of(static_cast<int>(i));
    }
  }

  int prim(int i) const { return i < 0 ? i : prim_[i]; }
  int dot(int i) const { return dot_[i]; }
  Builder& builder() { return b_; }

 private:
  int tangent_of(int i) {
    const Value& v = u_.values[i];
    if (v.type != Type::F) return -1;
    const int p = b_.value(prim_[i]).pred;
    const int before = static_cast<int>(b_.kernel().values.size());
    b_.set_origin(v.loc);
    int d = -1;
    switch (v.op) {
      case Op::LoadParam:
      case Op::LoadPlane:
        if (slots_.dot_in[v.slot] != -1) d = b_.load(v.op, slots_.dot_in[v.slot], v.comp, p);
        break;
      case Op::LoadTable:
        if (slots_.dot_in[v.slot] != -1)
          d = b_.load(v.op, slots_.dot_in[v.slot], v.comp, p, prim_[v.args[0]]);
        break;
      case Op::LoopCarry:  // a tangent carried beside the primal one (a long loop)
        if (active_[i]) {
          const int entry = dot_[v.args[0]];
          d = b_.loop_value(Op::LoopCarry, entry == -1 ? b_.constant(0.0) : entry,
                            prim_[v.args[1]]);
        }
        break;
      case Op::LoopNext: {
        const int carry = dot_[v.args[0]];
        const int next = dot_[v.args[1]];
        if (carry == -1 && next != -1)
          throw std::logic_error(
              "raptor: tangent: a loop carry's next value has a tangent the "
              "carry was not given");
        if (carry != -1) b_.loop_value(Op::LoopNext, carry, next == -1 ? b_.constant(0.0) : next);
        break;
      }
      case Op::LoopResult:
        if (dot_[v.args[0]] != -1)
          d = b_.loop_value(Op::LoopResult, dot_[v.args[0]], prim_[v.args[1]]);
        break;
      case Op::Select: {
        const int da = dot_[v.args[1]];
        const int db = dot_[v.args[2]];
        if (da == -1 && db == -1) break;
        const int zero = b_.constant(0.0);
        b_.set_origin(v.loc);
        d = b_.op(Op::Select, {prim_[v.args[0]], da == -1 ? zero : da, db == -1 ? zero : db}, p);
        break;
      }
      default: {
        if (!has_partials(v.op)) break;
        const auto ps = partials(b_, prim_[i], [&](int arg) { return dot_[v.args[arg]] != -1; });
        for (const Partial& part : ps) {
          const int da = dot_[v.args[part.arg]];
          if (d == -1)
            d = apply(b_, part, da, p);
          else if (part.kind == Partial::Kind::MinusOne)
            d = b_.op(Op::Sub, {d, da}, p);
          else
            d = b_.op(Op::Add, {d, apply(b_, part, da, p)}, p);
        }
      }
    }
    if (d >= before && !v.name.empty() && b_.value(d).name.empty()) b_.named(d, v.name + "_dot");
    return d;
  }

  const ir::Kernel& u_;
  const TangentSlots& slots_;
  Builder b_;
  std::vector<char> active_;
  std::vector<int> prim_;
  std::vector<int> dot_;
};

}  // namespace

ir::Kernel tangent(const ir::Kernel& k, const std::vector<std::string>& wrt, bool with_primal) {
  const std::vector<int> w = wrt_slots(k, wrt, "tangent");
  const ir::Kernel u = unroll(k);
  ir::Kernel t = derived_kernel(k, k.name + "_tangent");
  const TangentSlots slots = lay_out(u, w, with_primal, t);
  TangentPass pass(u, slots, t);
  pass.run();
  Builder& b = pass.builder();
  for (const ir::Store& st : u.stores) {
    ir::Store ps = st;
    ps.slot = slots.primal[st.slot];
    ps.value = pass.prim(st.value);
    ps.index = pass.prim(st.index);
    ps.pred = pass.prim(st.pred);
    if (with_primal) t.stores.push_back(ps);
    const bool mutable_out = u.slots[st.slot].kind == SlotKind::Mutable;
    if (slots.dot_out[st.slot] == -1) continue;  // an integer or bool output: no tangent
    const int d = pass.dot(st.value);
    if (d == -1 && !mutable_out) continue;  // a zero contribution to a sum
    ir::Store ds = ps;
    ds.slot = slots.dot_out[st.slot];
    ds.value = d == -1 ? b.constant(0.0) : d;
    if (slots.win[st.slot] != -1) {  // hawk.min / hawk.max: the winning sample's tangent only
      b.set_origin(st.loc);
      const int mine = is_winner(b, slots.win[st.slot]);
      ds.pred = ps.pred == -1 ? mine : b.op(Op::And, {ps.pred, mine});
    }
    t.stores.push_back(ds);
  }
  t.terminate = with_primal ? pass.prim(u.terminate) : -1;
  passes::dce(t);
  ir::verify(t);
  return t;
}

}  // namespace raptor::ad
