// Dropping unread input slots (see trim.hpp).
#include "passes/trim.hpp"

namespace raptor::passes {

using ir::Op;
using ir::SlotKind;

std::vector<bool> slots_read(const ir::Kernel& k) {
  std::vector<bool> read(k.slots.size(), false);
  for (const ir::Value& v : k.values) {
    switch (v.op) {
      case Op::LoadParam:
      case Op::LoadPlane:
      case Op::LoadState:
      case Op::LoadTable:
        if (v.slot >= 0 && static_cast<size_t>(v.slot) < read.size()) read[v.slot] = true;
        break;
      default:
        break;
    }
  }
  for (size_t s = 0; s < k.slots.size(); ++s)
    if (k.slots[s].kind == SlotKind::Terminated) read[s] = true;  // masked samples are skipped
  return read;
}

int drop_unread_inputs(ir::Kernel& k) {
  std::vector<bool> keep = slots_read(k);
  for (size_t s = 0; s < k.slots.size(); ++s) {
    const SlotKind kind = k.slots[s].kind;
    if (kind != SlotKind::Param && kind != SlotKind::Plane && kind != SlotKind::Table)
      keep[s] = true;
    if (kind == SlotKind::TableSum && k.slots[s].table_of >= 0) keep[k.slots[s].table_of] = true;
  }
  std::vector<int> new_index(k.slots.size(), -1);
  std::vector<ir::Slot> slots;
  for (size_t s = 0; s < k.slots.size(); ++s) {
    if (!keep[s]) continue;
    new_index[s] = static_cast<int>(slots.size());
    slots.push_back(k.slots[s]);
  }
  const int removed = static_cast<int>(k.slots.size() - slots.size());
  if (removed == 0) return 0;
  for (ir::Slot& sl : slots)
    if (sl.table_of >= 0) sl.table_of = new_index[sl.table_of];
  for (ir::Value& v : k.values)
    if (v.slot >= 0) v.slot = new_index[v.slot];
  for (ir::Store& st : k.stores) st.slot = new_index[st.slot];
  k.slots = std::move(slots);
  return removed;
}

}  // namespace raptor::passes
