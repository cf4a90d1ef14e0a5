// The host code generator: IR kernels -> one readable C++ translation unit, with one
// extern "C" function per (kernel, dtype) following runtime/abi.h. Comments map every group
// of statements back to the user's file and line. The loops over samples are written so GCC
// vectorizes them (no per-sample branches in kernels without a mask or table checks).
// emit_cuda writes the same kernels as CUDA C++ (runtime/abi_cuda.h) from the same writer.
#pragma once

#include <string>
#include <vector>

#include "ir/ir.hpp"

namespace raptor::codegen {

enum class DType { F32, F64 };

const char* dtype_name(DType d);    // "float32" / "float64"
const char* dtype_suffix(DType d);  // "f32" / "f64"

struct KernelToEmit {
  const ir::Kernel* kernel = nullptr;
  DType dtype = DType::F64;
  std::string symbol;  // the extern "C" name to define
};

// A valid C identifier for a kernel's symbol: raptor_<name>_<digest prefix>_<dtype>.
std::string symbol_name(const ir::Kernel& k, DType dtype, const std::string& digest);

// The whole translation unit for these kernels.
std::string emit_cpp(const std::vector<KernelToEmit>& kernels);

// The same kernels as one CUDA C++ translation unit for NVRTC: `extern "C" __global__`
// functions following runtime/abi_cuda.h, the per-sample code shared with the host emitter.
std::string emit_cuda(const std::vector<KernelToEmit>& kernels);

}  // namespace raptor::codegen
