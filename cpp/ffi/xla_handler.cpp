// The CPU XLA FFI handler (see xla_handler.hpp). Start at `run_kernel`: it maps XLA's buffers
// onto the kernel's slots, checks them, and launches.
#include "ffi/xla_handler.hpp"

#include <string>
#include <string_view>

#include "runtime/launch.hpp"
#include "runtime/registry.hpp"
#include "runtime/shared_pool.hpp"
#include "xla/ffi/api/ffi.h"

namespace raptor::ffi {

namespace xffi = ::xla::ffi;
using ir::SlotKind;

namespace {

bool is_output(SlotKind k) {
  return k == SlotKind::Mutable || k == SlotKind::ParamSum || k == SlotKind::TableSum;
}

xffi::Error bad(const runtime::KernelEntry& e, const std::string& what) {
  return xffi::Error::InvalidArgument("raptor kernel '" + e.name + "': " + what);
}

// Outputs come in this order: Mutable planes and sums in slot order, then the mask.
xffi::Error run_kernel(xffi::RemainingArgs args, xffi::RemainingRets rets,
                       std::string_view digest) {
  // The kernel of the last call on this thread, kept so a call in a loop skips the registry's
  // lock and the shared_ptr's atomic count. Entries are never replaced once registered.
  thread_local std::string last_digest;
  thread_local std::shared_ptr<const runtime::KernelEntry> last_entry;
  if (!last_entry || digest != last_digest) {
    last_entry = runtime::global_registry().find(digest);
    last_digest.assign(digest);
  }
  const runtime::KernelEntry* entry = last_entry.get();
  if (!entry)
    return xffi::Error::Internal(
        "raptor: kernel " + std::string(digest.substr(0, 16)) +
        " is not loaded in this process; build it first (eagle.frameworks.jax.function) or, for "
        "an exported module, call eagle.frameworks.jax.preload(cache_dir)");
  const runtime::KernelEntry& e = *entry;
  const xffi::DataType want = e.dtype_size == 4 ? xffi::DataType::F32 : xffi::DataType::F64;
  // One Binding per XLA thread, reused: a call in a scan allocates nothing.
  thread_local runtime::Binding b;
  std::vector<runtime::SlotBinding> storage = std::move(b.slots);
  b = runtime::Binding{};
  b.slots = std::move(storage);
  b.slots.assign(e.num_slots(), runtime::SlotBinding{});
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
        sb.param = e.dtype_size == 4
                       ? static_cast<double>(*static_cast<const float*>(buf.untyped_data()))
                       : *static_cast<const double*>(buf.untyped_data());
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
  try {
    const runtime::LaunchResult r = runtime::launch(e, b, &runtime::shared_pool());
    if (!r.ok()) return xffi::Error::Internal(runtime::describe_error(e, b, r));
  } catch (const std::exception& ex) {
    return xffi::Error::Internal(std::string("raptor: ") + ex.what());
  }
  return xffi::Error::Success();
}

}  // namespace

XLA_FFI_DEFINE_HANDLER_SYMBOL(
    kernel_cpu_handler, run_kernel,
    xffi::Ffi::Bind().RemainingArgs().RemainingRets().Attr<std::string_view>("digest"));

XLA_FFI_Error* kernel_cpu(XLA_FFI_CallFrame* frame) { return kernel_cpu_handler(frame); }

}  // namespace raptor::ffi
