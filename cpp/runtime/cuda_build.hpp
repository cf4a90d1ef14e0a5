// Kernels built for NVIDIA GPUs: the CUDA C++ of codegen's emit_cuda compiled by NVRTC to PTX
// (cached on disk like host code), registered by the same digest as the host build so the
// XLA CUDA handler (ffi/xla_handler_cuda.cpp) finds them from the custom call's attribute,
// and loaded into each CUDA context on first use.
#pragma once

#include <map>
#include <memory>
#include <mutex>
#include <shared_mutex>
#include <string>
#include <vector>

#include "ir/ir.hpp"
#include "runtime/compiler.hpp"
#include "runtime/cuda_driver.hpp"
#include "runtime/launch.hpp"
#include "runtime/nvrtc.hpp"

namespace raptor::runtime {

// The virtual architecture PTX is compiled for; the driver JIT-compiles it for the GPU.
inline constexpr const char* kCudaArch = "compute_75";

class CudaKernel {
 public:
  CudaKernel(KernelEntry slots, std::string ptx, std::string symbol);
  const KernelEntry& slots() const { return slots_; }  // kinds, widths, names, dtype, digest
  const std::string& ptx() const { return ptx_; }
  const std::string& symbol() const { return symbol_; }
  bool reads_tables() const;
  // The kernel in the current CUDA context, loaded there on first use.
  cuda::CUfunction function(const cuda::Driver& driver) const;

 private:
  KernelEntry slots_;
  std::string ptx_;
  std::string symbol_;
  mutable std::mutex mu_;
  mutable std::map<cuda::CUcontext, cuda::CUfunction> loaded_;
};

// CUDA kernels by digest, like global_registry() for host kernels (see registry.hpp for why
// such a process-wide table must exist).
class CudaRegistry {
 public:
  void add(const std::string& digest, std::shared_ptr<const CudaKernel> kernel);
  std::shared_ptr<const CudaKernel> find(std::string_view digest) const;

 private:
  mutable std::shared_mutex mu_;
  std::map<std::string, std::shared_ptr<const CudaKernel>, std::less<>> kernels_;
};
CudaRegistry& cuda_registry();

// Emits the kernels as CUDA C++ (both dtypes), compiles them with NVRTC (or reads the PTX
// from the cache) and registers them. Throws std::runtime_error when NVRTC is missing or
// rejects the code. Returns how many (kernel, dtype) pairs were registered.
int build_cuda(const std::vector<const ir::Kernel*>& kernels, const Compiler& compiler);

}  // namespace raptor::runtime
