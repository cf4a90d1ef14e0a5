// A CUDA kernel bound to device buffers and launched on a stream, eagle's GPU counterpart of
// runtime/bound.hpp. Start at `CudaBound`: made once per plan.bind (the device memory it needs
// beside the user's planes — the status word and the Params' device copies — is allocated
// there, never per launch), then `launch(stream)` enqueues one launch and returns at once.
//
// Errors without a sync per launch: the kernel records the first Table index error in its
// status word (first error wins, atomically), which stays set across launches; `synchronize`
// waits for the stream, reads the word, clears it, and throws the error naming the kernel,
// table, index and sample. Finished counts: when a finished_count buffer (uint32, device) is
// bound, each launch copies it into the word's count, the kernel adds what it finished, and the
// count is copied back, all on the stream (no host wait): `+= finished`, as on the host.
//
// Grid, block and the scratch of deterministic sums come from runtime/cuda_geometry.hpp: they
// depend only on N and the table sizes, so they are computed and the scratch allocated at bind.
//
// The pure parts (`make_cuda_args`, `decode_status`) need no GPU and are unit tested on the
// CPU; the rest needs libcuda (runtime/cuda_driver.hpp).
#pragma once

#include <cstdint>
#include <memory>
#include <vector>

#include "runtime/cuda_build.hpp"
#include "runtime/cuda_driver.hpp"
#include "runtime/cuda_geometry.hpp"
#include "runtime/launch.hpp"

namespace raptor::runtime {

namespace cuda_abi {
#include "runtime/abi_cuda.h"
}  // namespace cuda_abi

// Words of the status block a CUDA kernel merges into (runtime/abi_cuda.h).
inline constexpr size_t kCudaStatusWords = 6;

// The per-slot table sizes of a binding, as cuda_geometry takes them.
std::vector<int64_t> table_sizes(const Binding& b);

// The by-value argument struct of one launch of `e` over `b`, whose pointers are device
// addresses: `params[s]` is the device address of Param slot s's value (one element of the
// kernel dtype), `status` the kernel's status block, `g` the launch's geometry and `scratch`
// the device buffer of g.scratch_bytes holding the sums' block partials. Throws
// std::invalid_argument when the kernel has more slots than the CUDA ABI carries or the lists
// do not match its slots.
cuda_abi::raptor_cuda_args make_cuda_args(const KernelEntry& e, const Binding& b,
                                          const std::vector<const void*>& params,
                                          unsigned long long* status, const CudaGeometry& g,
                                          unsigned long long scratch);

// A status block read back to the host, as a LaunchResult (error, slot, index, sample).
LaunchResult decode_status(const unsigned long long (&words)[kCudaStatusWords]);

// Device memory, freed when the owner goes.
class DeviceMemory {
 public:
  DeviceMemory(const cuda::Driver& driver, size_t bytes);
  ~DeviceMemory();
  DeviceMemory(const DeviceMemory&) = delete;
  DeviceMemory& operator=(const DeviceMemory&) = delete;
  cuda::CUdeviceptr get() const { return ptr_; }

 private:
  const cuda::Driver& driver_;
  cuda::CUdeviceptr ptr_ = 0;
};

class CudaBound {
 public:
  // `b` holds device pointers (planes, tables, mask, finished_count) and the Params' values;
  // `param_ptrs[s]` is non-null for a Param bound to a 1-element device array (read at each
  // launch), null for a number (copied to the device here, once). `device` is the ordinal
  // every buffer lives on; its primary context is made current. Needs a CUDA driver.
  CudaBound(std::shared_ptr<const CudaKernel> kernel, Binding b,
            std::vector<const void*> param_ptrs, int device);

  // Enqueues one launch on `stream`; never waits for the GPU. A kernel with a Random
  // parameter first gets launch n's key on the device (runtime/abi_cuda.h), so captured
  // graphs and device loops draw fresh numbers at every launch; it throws
  // std::invalid_argument when no key was set.
  void launch(cuda::CUstream stream) const;
  // The Random parameter's key and the number of the next launch (eagle.binding's rule:
  // launch n draws with fold_in(key, n)). Waits for `stream` first, so launches already
  // enqueued keep the keys they were given. Throws std::invalid_argument for a kernel
  // without a Random parameter.
  void set_rng(uint32_t k0, uint32_t k1, uint64_t next_launch, cuda::CUstream stream);
  // The number of the next launch, read from the device after waiting for `stream` (0 for a
  // kernel without a Random parameter: nothing else counts launches on the GPU).
  uint64_t launches(cuda::CUstream stream) const;
  // Waits for `stream`; throws std::runtime_error for the first kernel error since the last
  // synchronize (and clears it).
  void synchronize(cuda::CUstream stream) const;

  const CudaKernel& kernel() const { return *kernel_; }
  const Binding& binding() const { return b_; }
  int device() const { return device_; }

 private:
  const cuda::Driver& driver_;
  std::shared_ptr<const CudaKernel> kernel_;
  Binding b_;
  int device_;
  cuda::CUcontext context_;
  CudaGeometry geometry_;
  // Status words, one 8-byte cell per slot for Param numbers, then (kernels with a Random
  // parameter) the key state {k0, k1, next launch} and the launch's key block, 16 bytes each.
  DeviceMemory cells_;
  DeviceMemory partials_;  // the sums' block partials (geometry_.scratch_bytes, at least 8)
  cuda_abi::raptor_cuda_args args_{};
  bool rng_set_ = false;

  cuda::CUdeviceptr rng_state() const;  // the key state's device address
};

}  // namespace raptor::runtime
