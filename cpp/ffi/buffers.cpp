// Mapping XLA's buffers onto a kernel's slots (see buffers.hpp).
#include "ffi/buffers.hpp"

#include <string>

namespace raptor::ffi {

using ir::SlotKind;

namespace {

bool is_output(SlotKind k) {
  return k == SlotKind::Mutable || k == SlotKind::ParamSum || k == SlotKind::TableSum;
}

}  // namespace

xffi::Error bad(const runtime::KernelEntry& e, const std::string& what) {
  return xffi::Error::InvalidArgument("raptor kernel '" + e.name + "': " + what);
}

xffi::Error map_buffers(const runtime::KernelEntry& e, xffi::RemainingArgs args,
                        xffi::RemainingRets rets, runtime::Binding& b,
                        std::vector<const void*>& param_ptr, bool same_kernel) {
  const xffi::DataType want = e.dtype_size == 4 ? xffi::DataType::F32 : xffi::DataType::F64;
  if (!same_kernel || b.slots.size() != e.num_slots() || param_ptr.size() != e.num_slots()) {
    std::vector<runtime::SlotBinding> storage = std::move(b.slots);
    b = runtime::Binding{};
    b.slots = std::move(storage);
    b.slots.assign(e.num_slots(), runtime::SlotBinding{});
    param_ptr.assign(e.num_slots(), nullptr);
  }
  b.zero_finished = true;
  b.n = -1;
  size_t ai = 0, ri = 0;
  for (size_t s = 0; s < e.num_slots(); ++s) {
    const SlotKind k = e.kinds[s];
    runtime::SlotBinding& sb = b.slots[s];
    // Operands are the input slots in order: everything but pure outputs and sums (an in-out
    // Mutable's old value is an operand, and its new value a result).
    if (k == SlotKind::Param || k == SlotKind::Plane || k == SlotKind::Table ||
        k == SlotKind::Terminated || (k == SlotKind::Mutable && e.inout[s])) {
      auto arg = args.get<xffi::AnyBuffer>(ai++);
      if (!arg.has_value())
        return bad(e, "too few operands for input '" + e.slot_name(int(s)) + "'");
      const xffi::AnyBuffer buf = *arg;
      if (k == SlotKind::Terminated) {
        if (buf.element_type() != xffi::DataType::PRED) return bad(e, "the mask must be bool");
        b.mask_in = static_cast<const uint8_t*>(buf.untyped_data());
        if (b.n < 0) b.n = static_cast<int64_t>(buf.element_count());
        continue;
      }
      if (buf.element_type() != want)
        return bad(e, "input '" + e.slot_name(int(s)) + "' has the wrong float dtype");
      if (k == SlotKind::Param) {
        if (buf.element_count() != 1)
          return bad(e, "Param '" + e.slot_name(int(s)) + "' must have one element");
        param_ptr[s] = buf.untyped_data();
        continue;
      }
      sb.in = buf.untyped_data();
      const auto dims = buf.dimensions();
      if (k == SlotKind::Table) {
        sb.table_size = dims.size() == 0 ? 0 : dims[0];
      } else if (b.n < 0) {
        b.n = dims.size() == 0 ? 1 : dims[dims.size() - 1];
      }
    }
  }
  if (b.n < 0) b.n = 0;
  for (size_t s = 0; s < e.num_slots(); ++s) {
    if (!is_output(e.kinds[s])) continue;
    auto ret = rets.get<xffi::AnyBuffer>(ri++);
    if (!ret.has_value()) return bad(e, "too few results for output '" + e.slot_name(int(s)) + "'");
    xffi::AnyBuffer buf = **ret;
    if (buf.element_type() != want)
      return bad(e, "output '" + e.slot_name(int(s)) + "' has the wrong dtype");
    b.slots[s].out = buf.untyped_data();
    if (e.kinds[s] == SlotKind::TableSum) b.slots[s].table_size = b.slots[e.table_of[s]].table_size;
  }
  if (e.has_mask()) {
    auto ret = rets.get<xffi::AnyBuffer>(ri++);
    if (!ret.has_value()) return bad(e, "too few results for the mask");
    b.mask_out = static_cast<uint8_t*>((**ret).untyped_data());
  }
  if (ai != args.size() || ri != rets.size())
    return bad(e, "got " + std::to_string(args.size()) + " operands and " +
                      std::to_string(rets.size()) + " results, expected " + std::to_string(ai) +
                      " and " + std::to_string(ri));
  return xffi::Error::Success();
}

}  // namespace raptor::ffi
