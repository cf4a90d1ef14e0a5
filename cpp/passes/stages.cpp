// Splitting a kernel at its stage boundaries (see stages.hpp).
#include "passes/stages.hpp"

#include <algorithm>
#include <stdexcept>
#include <string>

#include "passes/optimize.hpp"
#include "passes/trim.hpp"  // slots_read

namespace raptor::passes {

using ir::Op;
using ir::SlotKind;

namespace {

// Removes the slots not kept and renumbers values, stores and table_of.
void remove_slots(ir::Kernel& k, const std::vector<bool>& keep) {
  std::vector<int> new_index(k.slots.size(), -1);
  std::vector<ir::Slot> slots;
  for (size_t s = 0; s < k.slots.size(); ++s) {
    if (!keep[s]) continue;
    new_index[s] = static_cast<int>(slots.size());
    slots.push_back(k.slots[s]);
  }
  for (ir::Slot& sl : slots)
    if (sl.table_of >= 0) sl.table_of = new_index[static_cast<size_t>(sl.table_of)];
  for (ir::Value& v : k.values)
    if (v.slot >= 0) {
      if (new_index[static_cast<size_t>(v.slot)] < 0)
        throw std::logic_error("split_stages: kernel '" + k.name + "' still reads removed slot '" +
                               k.slots[static_cast<size_t>(v.slot)].name + "'");
      v.slot = new_index[static_cast<size_t>(v.slot)];
    }
  for (ir::Store& st : k.stores) st.slot = new_index[static_cast<size_t>(st.slot)];
  k.slots = std::move(slots);
}

// The level of every link (stages.hpp): the reductions' dependences on other links' Params,
// to a fixed point (a reduction cannot read its own value, so it converges).
std::vector<int> link_levels(const ir::Kernel& k) {
  const size_t nl = k.stage_links.size();
  std::vector<int> param_link(k.slots.size(), -1), sum_link(k.slots.size(), -1);
  for (size_t l = 0; l < nl; ++l) {
    const int p = k.find_slot(k.stage_links[l].param), s = k.find_slot(k.stage_links[l].sum);
    if (p < 0 || s < 0)
      throw std::logic_error("split_stages: kernel '" + k.name + "' links missing slots");
    param_link[static_cast<size_t>(p)] = static_cast<int>(l);
    sum_link[static_cast<size_t>(s)] = static_cast<int>(l);
  }
  std::vector<int> level(nl, 0);
  for (size_t round = 0; round <= nl + 1; ++round) {
    // Per value: 1 + the highest level of the links it reads (0: none).
    std::vector<int> dep(k.values.size(), 0);
    for (size_t i = 0; i < k.values.size(); ++i) {
      const ir::Value& v = k.values[i];
      int d = 0;
      if (v.op == Op::LoadParam && v.slot >= 0 && param_link[static_cast<size_t>(v.slot)] >= 0)
        d = level[static_cast<size_t>(param_link[static_cast<size_t>(v.slot)])] + 1;
      for (const int a : v.args)
        if (a >= 0) d = std::max(d, dep[static_cast<size_t>(a)]);
      if (v.pred >= 0) d = std::max(d, dep[static_cast<size_t>(v.pred)]);
      dep[i] = d;
    }
    std::vector<int> next(nl, 0);
    for (const ir::Store& st : k.stores) {
      const int l = sum_link[static_cast<size_t>(st.slot)];
      if (l < 0) continue;
      int d = dep[static_cast<size_t>(st.value)];
      if (st.pred >= 0) d = std::max(d, dep[static_cast<size_t>(st.pred)]);
      next[static_cast<size_t>(l)] = std::max(next[static_cast<size_t>(l)], d);
    }
    if (next == level) return level;
    level = std::move(next);
  }
  throw std::logic_error("split_stages: kernel '" + k.name + "' has a reduction reading itself");
}

}  // namespace

Stages split_stages(const ir::Kernel& k) {
  Stages out;
  if (k.stage_links.empty()) return out;
  out.link_stage = link_levels(k);
  const int last = *std::max_element(out.link_stage.begin(), out.link_stage.end()) + 1;
  std::vector<int> sum_stage(k.slots.size(), -1);  // per slot: the stage computing that sum
  for (size_t l = 0; l < k.stage_links.size(); ++l)
    sum_stage[static_cast<size_t>(k.find_slot(k.stage_links[l].sum))] = out.link_stage[l];
  for (int s = 0; s <= last; ++s) {
    ir::Kernel st = k;
    st.stage_links.clear();
    std::vector<ir::Store> stores;
    for (const ir::Store& x : k.stores) {
      const int at = sum_stage[static_cast<size_t>(x.slot)];
      if (s < last ? at == s : at < 0) stores.push_back(x);
    }
    st.stores = std::move(stores);
    if (s < last) st.terminate = -1;
    optimize(st);
    // The slots this stage neither writes nor reads go; an earlier stage's Mutables that it
    // reads (in-out planes' old values) become read-only planes.
    std::vector<bool> stored(st.slots.size(), false);
    for (const ir::Store& x : st.stores) stored[static_cast<size_t>(x.slot)] = true;
    const std::vector<bool> read = slots_read(st);
    std::vector<bool> keep(st.slots.size(), true);
    for (size_t i = 0; i < st.slots.size(); ++i) {
      ir::Slot& sl = st.slots[i];
      if (sl.kind == SlotKind::ParamSum || sl.kind == SlotKind::TableSum) {
        keep[i] = stored[i];
      } else if (sl.kind == SlotKind::Mutable && !stored[i]) {
        keep[i] = read[i];
        sl.kind = SlotKind::Plane;
        sl.inout = false;
      }
    }
    for (ir::Value& v : st.values)
      if (v.op == Op::LoadState && v.slot >= 0 && st.slots[static_cast<size_t>(v.slot)].kind == SlotKind::Plane)
        v.op = Op::LoadPlane;
    remove_slots(st, keep);
    // Unread inputs go too, but a stage keeps one plane (unread if need be): a call takes its
    // sample count from its planes (a stage summing Params or draws alone reads none).
    const std::vector<bool> now_read = slots_read(st);
    int plane = -1;
    for (size_t i = 0; i < st.slots.size(); ++i)
      if (st.slots[i].kind == SlotKind::Plane && (plane < 0 || now_read[i]))
        if (plane < 0 || !now_read[static_cast<size_t>(plane)]) plane = static_cast<int>(i);
    std::vector<bool> keep_in(st.slots.size(), true);
    for (size_t i = 0; i < st.slots.size(); ++i) {
      const SlotKind kind = st.slots[i].kind;
      if ((kind == SlotKind::Param || kind == SlotKind::Plane || kind == SlotKind::Table) &&
          !now_read[i] && static_cast<int>(i) != plane)
        keep_in[i] = false;
    }
    for (const ir::Slot& sl : st.slots)
      if (sl.kind == SlotKind::TableSum && sl.table_of >= 0)
        keep_in[static_cast<size_t>(sl.table_of)] = true;
    remove_slots(st, keep_in);
    ir::verify(st);
    out.kernels.push_back(std::move(st));
  }
  return out;
}

void require_unstaged(const ir::Kernel& k, const char* what) {
  if (k.stage_links.empty()) return;
  throw std::invalid_argument(
      std::string(what) + ": kernel '" + k.name + "' has a stage boundary (the reduction at line " +
      std::to_string(k.stage_links.front().line) +
      " is read in the same body), so it runs as stages (passes/stages.hpp), never as one kernel; "
      "build and run its stages (hawk Kernel.stages)");
}

}  // namespace raptor::passes
