// The code generator's public interface: IR kernels -> one readable translation unit, host
// C++ (emit_cpp: one extern "C" function per (kernel, dtype) following runtime/abi.h) or CUDA
// C++ for NVRTC (emit_cuda, runtime/abi_cuda.h). Comments map every group of statements back
// to the user's file and line. Where to read on: step_writer.hpp (what both targets share:
// expressions, table reads, the step written once), host_driver.cpp (loops GCC vectorizes),
// cuda_driver.cpp (one thread per sample, deterministic block sums, `<symbol>_finish`).
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
// functions following runtime/abi_cuda.h (`<symbol>`, and `<symbol>_finish` for a kernel
// that sums over samples), the step shared with the host driver. A unit with a Random kernel
// also has kCudaRngAdvanceSymbol (runtime/abi_cuda.h says what it does).
std::string emit_cuda(const std::vector<KernelToEmit>& kernels);
inline constexpr const char* kCudaRngAdvanceSymbol = "raptor_rng_advance";

}  // namespace raptor::codegen
