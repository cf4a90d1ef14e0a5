// Helpers for tests that build IR kernels by hand (with ad::Builder for the values): appending
// a slot and a store.
#pragma once

#include <string>

#include "ir/ir.hpp"

namespace raptor::testing {

// Appends a slot (a vector when width > 1) and returns its index.
inline int add_slot(ir::Kernel& k, const std::string& name, ir::SlotKind kind, int width = 1,
                    bool inout = false) {
  ir::Slot s;
  s.name = name;
  s.kind = kind;
  s.width = width;
  s.is_vector = width > 1;
  s.inout = inout;
  k.slots.push_back(s);
  return static_cast<int>(k.slots.size()) - 1;
}

// Appends a store of `value` into component `comp` of `slot` (`index`: a TableSum's entry).
inline void store(ir::Kernel& k, int slot, int comp, int value, int pred = -1, int index = -1) {
  ir::Store s;
  s.slot = slot;
  s.comp = comp;
  s.value = value;
  s.pred = pred;
  s.index = index;
  k.stores.push_back(s);
}

}  // namespace raptor::testing
