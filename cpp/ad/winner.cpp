// The winner kernel of a kernel with hawk.min / hawk.max outputs (see winner.hpp), and the
// predicate the tangent and adjoint kernels select the winning sample with.
#include "ad/winner.hpp"

#include <stdexcept>

#include "ad/unroll.hpp"
#include "passes/optimize.hpp"

namespace raptor::ad {

using ir::Op;
using ir::SlotKind;

bool has_folds(const ir::Kernel& k) {
  for (const ir::Slot& s : k.slots)
    if (s.kind == SlotKind::ParamSum && s.combine != ir::Combine::Sum) return true;
  return false;
}

std::string winner_name(const ir::Kernel& k, const std::string& slot_name) {
  const std::string name = slot_name + "_win";
  if (k.find_slot(name) >= 0)
    throw std::invalid_argument("raptor: kernel '" + k.name + "': the derivative of '" +
                                slot_name + "' (hawk.min / hawk.max) takes a Param named '" +
                                name + "', which is a parameter of the kernel; rename it");
  return name;
}

ir::Slot winner_param(const ir::Kernel& k, const ir::Slot& out) {
  ir::Slot slot = out;
  slot.name = winner_name(k, out.name);
  slot.kind = ir::SlotKind::Param;
  slot.combine = ir::Combine::Sum;
  slot.role = 'p';
  slot.primal = slot.name;
  return slot;
}

int is_winner(Builder& b, int win_slot) {
  const int index = b.op(Op::ToFloat, {b.op(Op::SampleIndex, {})});
  return b.op(Op::Eq, {index, b.load(Op::LoadParam, win_slot, 0)});
}

ir::Kernel winner(const ir::Kernel& k) {
  const ir::Kernel u = unroll(k);
  ir::Kernel w = derived_kernel(k, k.name + "_winner");
  const int ns = static_cast<int>(u.slots.size());
  std::vector<int> map(ns, -1), result(ns, -1), win(ns, -1);
  const auto add = [&](ir::Slot s) {
    s.role = 'p';
    s.primal = s.name;
    w.slots.push_back(std::move(s));
    return static_cast<int>(w.slots.size()) - 1;
  };
  for (int s = 0; s < ns; ++s) {  // the inputs
    ir::Slot slot = u.slots[s];
    if (slot.kind == SlotKind::ParamSum || slot.kind == SlotKind::TableSum) continue;
    if (slot.kind == SlotKind::Mutable) {
      if (!slot.inout) continue;
      slot.kind = SlotKind::Plane;
      slot.inout = false;
    }
    map[s] = add(slot);
  }
  for (int s = 0; s < ns; ++s) {  // per min / max slot: its result in, its winner out
    const ir::Slot& slot = u.slots[s];
    if (slot.kind != SlotKind::ParamSum || slot.combine == ir::Combine::Sum) continue;
    ir::Slot value = slot;
    value.kind = SlotKind::Param;
    value.combine = ir::Combine::Sum;
    result[s] = add(value);
    ir::Slot index = slot;
    index.name = winner_name(k, slot.name);
    index.combine = ir::Combine::Min;
    win[s] = add(index);
  }
  Builder b(w);
  std::vector<int> prim(u.values.size(), -1);
  for (size_t i = 0; i < u.values.size(); ++i) {
    ir::Value v = u.values[i];
    for (int a = 0; a < ir::op_arity(v.op); ++a) v.args[a] = prim[v.args[a]];
    if (v.pred != -1) v.pred = prim[v.pred];
    if (v.slot != -1) v.slot = map[v.slot];
    prim[i] = b.copy(std::move(v));
  }
  for (const ir::Store& st : u.stores) {
    if (win[st.slot] == -1) continue;
    b.set_origin(st.loc);
    const int x = prim[st.value];
    const int m = b.load(Op::LoadParam, result[st.slot], st.comp);
    // x == m, or both NaN (a NaN result: the first NaN wins).
    const int match = b.op(Op::Or, {b.op(Op::Eq, {x, m}), b.op(Op::And, {b.op(Op::Ne, {x, x}),
                                                                          b.op(Op::Ne, {m, m})})});
    ir::Store ws;
    ws.slot = win[st.slot];
    ws.comp = st.comp;
    ws.value = b.op(Op::ToFloat, {b.op(Op::SampleIndex, {})});
    ws.pred = st.pred == -1 ? match : b.op(Op::And, {prim[st.pred], match});
    ws.loc = st.loc;
    w.stores.push_back(ws);
  }
  w.terminate = -1;  // the mask only skips the samples finished on entry
  passes::dce(w);
  ir::verify(w);
  return w;
}

}  // namespace raptor::ad
