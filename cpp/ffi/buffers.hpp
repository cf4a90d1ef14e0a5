// Mapping the operands and results XLA hands a custom call onto a kernel's slots, shared by
// the CPU and CUDA handlers. Operands are the kernel's input slots in order (Params, planes,
// in-out Mutables' old values, the mask, tables); results are the Mutable planes and sums in
// slot order, then the mask. Checks counts and dtypes and says what is wrong.
#pragma once

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
