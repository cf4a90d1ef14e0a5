// Mapping the operands and results XLA hands a custom call onto a kernel's slots, shared by
// the CPU and CUDA handlers. Their order, dtypes and shapes are the kernel's interface
// (runtime/interface.hpp, KernelEntry::iface): every buffer's dtype and whole shape is checked
// (N from the first plane or mask, each Table's M from its operand) before anything runs, and
// a mismatch is an InvalidArgument naming the kernel and the plane.
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "runtime/launch.hpp"
#include "xla/ffi/api/ffi.h"

namespace raptor::ffi {

namespace xffi = ::xla::ffi;

// Fills `b` (planes, tables, mask, n; zero_finished set) and `param_ptr` (per slot: where a
// Param's one element is, in the memory of XLA's device; null for other slots).
// `same_kernel`: `b` and `param_ptr` were last filled for this same kernel, so they are not
// reset first (a call in a loop rewrites exactly the fields the previous one wrote).
xffi::Error map_buffers(const runtime::KernelEntry& e, xffi::RemainingArgs args,
                        xffi::RemainingRets rets, runtime::Binding& b,
                        std::vector<const void*>& param_ptr, bool same_kernel = false);

// An InvalidArgument error naming the kernel.
xffi::Error bad(const runtime::KernelEntry& e, const std::string& what);

}  // namespace raptor::ffi
