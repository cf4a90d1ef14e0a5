// From IR kernels to loaded, launchable kernels: one translation unit per call (every
// kernel in both float dtypes), compiled and cached by runtime/compiler.hpp, each entry
// point wrapped in a KernelEntry and registered by digest (runtime/registry.hpp) for the XLA
// FFI handlers. This is what `eagle.plan.auto` calls.
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "codegen/cpp_emitter.hpp"
#include "ir/ir.hpp"
#include "runtime/compiler.hpp"
#include "runtime/launch.hpp"

namespace raptor::runtime {

// The digest that names a kernel's compiled behaviour for one dtype: SHA-256 of its
// canonical IR, the dtype and the ABI version.
std::string kernel_digest(const ir::Kernel& k, codegen::DType dtype);

// A KernelEntry's slot description for `k` (fn, module and symbol left empty).
KernelEntry describe_kernel(const ir::Kernel& k, codegen::DType dtype);

// Every kernel in float32 then float64: its KernelEntry (symbol set, not yet loaded), and the
// same in `todo` for the emitter. Host and CUDA builds both start here.
std::vector<KernelEntry> describe_build(const std::vector<const ir::Kernel*>& kernels,
                                        std::vector<codegen::KernelToEmit>& todo);

struct BuiltKernel {
  std::shared_ptr<const KernelEntry> f32;
  std::shared_ptr<const KernelEntry> f64;
  const std::shared_ptr<const KernelEntry>& get(codegen::DType d) const {
    return d == codegen::DType::F32 ? f32 : f64;
  }
};

struct BuildResult {
  std::vector<BuiltKernel> kernels;  // parallel to the input
  CompileResult compile;
};

// Emits, compiles (or loads from the cache) and registers `kernels`. A compiler failure is
// rethrown as std::runtime_error whose message names the kernel and the user's file and line
// nearest to the first error in the generated code, with the compiler's message.
BuildResult build_host(const std::vector<const ir::Kernel*>& kernels, Compiler& compiler,
                       const CompileOptions& options = {});

}  // namespace raptor::runtime
