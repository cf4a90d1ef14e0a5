// The GPU executor of a stepping loop (eagle.until_done on a GPU), following the device plan
// of runtime/loop.hpp (its Batched variant): the loop's bound CUDA kernels and the stop test
// (runtime/cuda_loop_kernels.hpp, compiled by NVRTC) are captured into CUDA graphs of k
// launches for the batch sizes device_batches gives, launched one batch at a time, with the
// counter block read back between batches; device_result turns the block into the run's
// LoopResult, exact as on the host. Start at `CudaLoop::run`.
//
// Written against the CUDA driver API and never run on a GPU yet (none was available).
#pragma once

#include <cstdint>
#include <map>
#include <memory>
#include <vector>

#include "runtime/cuda_bound.hpp"
#include "runtime/cuda_driver.hpp"
#include "runtime/loop.hpp"

namespace raptor::runtime {

class CudaLoop {
 public:
  // `steps` in launch order, all on one device; `mask` the loop's Terminated plane (device,
  // n bytes). `overshoot_ok`: every step is a no-op once all samples are finished
  // (noop_when_done), so batches may run past the last needed launch. Compiles the stop test.
  CudaLoop(std::vector<std::shared_ptr<const CudaBound>> steps, cuda::CUdeviceptr mask, int64_t n,
           bool overshoot_ok);
  ~CudaLoop();
  CudaLoop(const CudaLoop&) = delete;
  CudaLoop& operator=(const CudaLoop&) = delete;

  // At most `budget` launches of the sequence on `stream`; waits for the stream between
  // batches (to read the counters) and at the end. Kernel errors are the steps' own, raised by
  // their synchronize (CudaBound::synchronize), which this calls at the end.
  LoopResult run(int64_t budget, cuda::CUstream stream);

 private:
  void launch_test(cuda::CUstream stream, int init) const;
  cuda::CUgraphExec batch(int64_t k);
  const cuda::Driver& driver_;
  std::vector<std::shared_ptr<const CudaBound>> steps_;
  cuda::CUdeviceptr mask_;
  int64_t n_;
  bool overshoot_ok_;
  cuda::CUfunction test_ = nullptr;
  DeviceMemory counters_;
  DeviceMemory partials_;
  std::map<int64_t, std::pair<cuda::CUgraph, cuda::CUgraphExec>> graphs_;
};

}  // namespace raptor::runtime
