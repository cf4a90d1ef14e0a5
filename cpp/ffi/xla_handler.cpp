// The CPU XLA FFI handler (see xla_handler.hpp). Start at `run_kernel`: it maps XLA's buffers
// onto the kernel's slots, checks them, and launches.
#include "ffi/xla_handler.hpp"

#include <cstring>
#include <string>
#include <string_view>

#include "ffi/buffers.hpp"
#include "runtime/launch.hpp"
#include "runtime/registry.hpp"
#include "runtime/shared_pool.hpp"
#include "xla/ffi/api/ffi.h"

namespace raptor::ffi {

namespace xffi = ::xla::ffi;
using ir::SlotKind;

namespace {

// What a call on one XLA thread keeps for the next: the kernel of the last call (so a call in
// a loop skips the registry's lock and the shared_ptr's atomic count; entries are never
// replaced once registered) and the binding it reuses (so a call in a scan allocates
// nothing). One thread_local object: one TLS lookup per call.
struct ThreadState {
  std::string digest;
  std::shared_ptr<const runtime::KernelEntry> entry;
  runtime::Binding binding;
  std::vector<const void*> params;
};

xffi::Error run_kernel(xffi::RemainingArgs args, xffi::RemainingRets rets,
                       std::string_view digest) {
  thread_local ThreadState t;
  const bool same_kernel = t.entry && digest == t.digest;
  if (!same_kernel) {
    t.entry = runtime::global_registry().find(digest);
    t.digest.assign(digest);
  }
  const runtime::KernelEntry* entry = t.entry.get();
  if (!entry)
    return xffi::Error::Internal(
        "raptor: kernel " + std::string(digest.substr(0, 16)) +
        " is not loaded in this process; build it first (eagle.frameworks.jax.function) or, for "
        "an exported module, call eagle.frameworks.jax.preload(cache_dir)");
  const runtime::KernelEntry& e = *entry;
  runtime::Binding& b = t.binding;
  if (xffi::Error err = map_buffers(e, args, rets, b, t.params, same_kernel); !err.success())
    return err;
  for (size_t s = 0; s < e.num_slots(); ++s)  // on the CPU, XLA's buffers are host memory
    if (const void* p = t.params[s]) {
      switch (e.iface.slot(s).dtype) {  // an integer Param's buffer keeps its dtype
        case runtime::ElemType::I32:
          b.slots[s].param = static_cast<double>(*static_cast<const int32_t*>(p));
          break;
        case runtime::ElemType::I64: {
          // The launch's parameter cell is a double: exact within +-2**53 (eagle's bind refuses
          // beyond it too, eagle/binding.py int_param_number); never a rounded int.
          const int64_t v = *static_cast<const int64_t*>(p);
          constexpr int64_t kExact = int64_t{1} << 53;
          if (v < -kExact || v > kExact)
            return bad(
                e,
                "Param '" + e.iface.slot(s).name + "' = " + std::to_string(v) +
                    " does not fit a Param[hawk.int64] (range [-9007199254740992, "
                    "9007199254740992], exact in the launch's double parameter cell); pass an int "
                    "in that range, or the value as a Scalar[hawk.int64] plane (the full range)");
          b.slots[s].param = static_cast<double>(v);
          break;
        }
        case runtime::ElemType::Bool:
          b.slots[s].param = *static_cast<const uint8_t*>(p) != 0 ? 1.0 : 0.0;
          break;
        default:
          b.slots[s].param = e.dtype_size == 4 ? static_cast<double>(*static_cast<const float*>(p))
                                               : *static_cast<const double*>(p);
      }
    }
  // A scatter target (Mutable[Table]) is added to in its result buffer: start it as the bound
  // values when XLA gave the result a buffer of its own (no alias).
  for (size_t s = 0; s < e.num_slots(); ++s) {
    const runtime::SlotInterface& si = e.iface.slot(s);
    runtime::SlotBinding& sb = b.slots[s];
    if (si.inout && sb.in != nullptr && sb.out != nullptr && sb.in != sb.out)
      std::memcpy(sb.out, sb.in, static_cast<size_t>(sb.table_size * si.width * e.dtype_size));
  }
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
