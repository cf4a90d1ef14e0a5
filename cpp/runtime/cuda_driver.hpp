// The CUDA driver API, loaded with dlopen (libcuda.so.1 comes with NVIDIA's driver, not the
// toolkit): loading PTX into the current context and launching kernels on a stream. A
// machine without a driver has no CudaDriver; nothing links against CUDA.
#pragma once

#include <cstddef>
#include <memory>
#include <string>

namespace raptor::runtime::cuda {

// The driver API's handle types, declared here so no CUDA header is needed to build.
struct Context;
struct Module;
struct Function;
struct Stream;
using CUcontext = Context*;
using CUmodule = Module*;
using CUfunction = Function*;
using CUstream = Stream*;
using CUdeviceptr = unsigned long long;

class Driver {
 public:
  // The process's driver (loaded on first use), or null when libcuda.so.1 cannot be loaded.
  static const Driver* get();

  CUcontext current_context() const;                // null when none is current
  CUmodule load_ptx(const std::string& ptx) const;  // into the current context
  CUfunction function(CUmodule m, const std::string& name) const;
  void launch(CUfunction f, unsigned grid, unsigned block, CUstream stream, void** params) const;
  void memset_async(CUdeviceptr p, size_t bytes, CUstream stream) const;
  CUdeviceptr alloc_async(size_t bytes, CUstream stream) const;
  void free_async(CUdeviceptr p, CUstream stream) const;
  void copy_to_host_sync(void* dst, CUdeviceptr src, size_t bytes, CUstream stream) const;

  struct Api;

 private:
  explicit Driver(std::unique_ptr<Api> api);
  std::unique_ptr<Api> api_;
  void check(int result, const char* what) const;  // throws std::runtime_error
};

}  // namespace raptor::runtime::cuda
