// The XLA FFI handlers that run hawk kernels inside XLA programs (the JAX bridge's lowering
// target "raptor_kernel"). XLA calls a handler with the custom call's operands (the kernel's
// input slots in order), its results (the outputs: Mutable planes, sums, then the mask) and
// one attribute, the kernel's digest; the handler finds the compiled kernel in
// runtime::global_registry(), checks every buffer's dtype and shape against the kernel's
// interface (ffi/buffers.hpp, runtime/interface.hpp) and launches it through runtime::launch
// on XLA's buffers, with no copy. Compiled only when the XLA FFI headers are available
// (RAPTOR_HAVE_XLA_FFI).
#pragma once

#include "xla/ffi/api/c_api.h"

namespace raptor::ffi {

// The CPU handler: runs inline on XLA's thread, splitting large launches over the shared pool.
XLA_FFI_Error* kernel_cpu(XLA_FFI_CallFrame* frame);

// The CUDA handler: launches the kernel's CUDA build on XLA's stream (xla_handler_cuda.cpp).
XLA_FFI_Error* kernel_cuda(XLA_FFI_CallFrame* frame);

}  // namespace raptor::ffi
