// Kernels built for NVIDIA GPUs. Two halves: `compile_cuda` turns a set of kernels into one
// binary for one architecture (the CUDA C++ of codegen's emit_cuda compiled by NVRTC to a
// cubin for a real architecture `sm_XX`, or to PTX for a virtual one `compute_XX`, the
// fallback for devices newer than the NVRTC), cached on disk; `build_cuda` compiles and
// registers the kernels by the same digest as the host build so the XLA CUDA handler
// (ffi/xla_handler_cuda.cpp) finds them from the custom call's attribute, and loads them into
// each CUDA context on first use (CudaKernel).
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

// The virtual architecture build_cuda compiles PTX for; the driver JIT-compiles it for the GPU.
inline constexpr const char* kCudaArch = "compute_75";

enum class CudaFormat { Cubin, Ptx };

// One compiled CUDA translation unit: every kernel of a compile_cuda call in both dtypes.
struct CudaBinary {
  struct Kernel {
    KernelEntry entry;   // slots, name, dtype, digest; entry.symbol: the kernel's function
    std::string finish;  // its `<symbol>_finish` (runtime/abi_cuda.h), "" when it has no sums
  };
  CudaFormat format = CudaFormat::Ptx;
  std::string arch;             // as given: "sm_90" (cubin) or "compute_75" (PTX)
  std::string bytes;            // the cubin or the PTX text, for cuModuleLoadData
  std::vector<Kernel> kernels;  // per (kernel, dtype): each kernel in float32, then float64
  std::string source;           // the CUDA C++ compiled
  std::string key;              // the cache key: sha256 of source, arch and NVRTC version
  bool cache_hit = false;
};

// Emits `kernels` as one CUDA unit (both dtypes) and compiles it for `arch` ("sm_XX": cubin,
// "compute_XX": PTX), or reads it from compiler's cache directory under the host builds'
// rules: a private shard directory, files written to a temporary name and renamed, loaded
// only when their sha256 sidecar matches, and an flock so racing processes compile once.
// Throws std::runtime_error when NVRTC is missing or rejects the code (with its log and the
// kernels' names), std::invalid_argument for an arch of neither form.
CudaBinary compile_cuda(const std::vector<const ir::Kernel*>& kernels, const Compiler& compiler,
                        const std::string& arch);

class CudaKernel {
 public:
  // `image`: the cubin or PTX holding `symbol` (and `finish`, when the kernel sums).
  CudaKernel(KernelEntry slots, std::string image, std::string symbol, std::string finish = "");
  const KernelEntry& slots() const { return slots_; }  // kinds, widths, names, dtype, digest
  const std::string& ptx() const { return image_; }    // the module image (PTX or cubin)
  const std::string& symbol() const { return symbol_; }
  const std::string& finish_symbol() const { return finish_; }
  bool reads_tables() const;
  // The kernel in the current CUDA context, loaded there on first use.
  cuda::CUfunction function(const cuda::Driver& driver) const;
  // Its `<symbol>_finish` in the current context; null when the kernel has no sums.
  cuda::CUfunction finish_function(const cuda::Driver& driver) const;
  // Its unit's key step (codegen::kCudaRngAdvanceSymbol, runtime/abi_cuda.h) in the current
  // context; null when the kernel has no Random parameter.
  cuda::CUfunction rng_function(const cuda::Driver& driver) const;

 private:
  struct Loaded {
    cuda::CUfunction kernel = nullptr, finish = nullptr, rng = nullptr;
  };
  const Loaded& load(const cuda::Driver& driver) const;

  KernelEntry slots_;
  std::string image_;
  std::string symbol_;
  std::string finish_;
  mutable std::mutex mu_;
  mutable std::map<cuda::CUcontext, Loaded> loaded_;
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

// compile_cuda for kCudaArch (PTX), then registers every (kernel, dtype). Throws std::runtime_error
// when NVRTC is missing or rejects the code. Returns how many (kernel, dtype) pairs were
// registered.
int build_cuda(const std::vector<const ir::Kernel*>& kernels, const Compiler& compiler);

}  // namespace raptor::runtime
