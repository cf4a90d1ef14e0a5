// The GPU executor of a stepping loop (eagle.until_done on a GPU), following the device plan
// of runtime/loop.hpp (run_device_loop over DeviceLoopOps). Two variants, chosen from the
// driver (device_loop_variant):
//   - While (CUDA >= 12.4): one graph [init stop test, WHILE {steps..., stop test}] whose
//     conditional node runs the body on the device until the stop test clears its condition;
//     one host wait per run.
//   - Batched: the steps and the stop test captured into graphs of k launches for the batch
//     sizes device_batches gives, the counter block read back between batches.
// Both end with device_result over the counter block: the run's LoopResult, exact as on the
// host. Start at `CudaLoop::run`; ops() is the DeviceLoopOps the plan drives.
//
// Written against the CUDA driver API (the conditional-node entry points are resolved here,
// from the libcuda the Driver loaded) and never run on a GPU yet (none was available).
#pragma once

#include <cstdint>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "runtime/cuda_bound.hpp"
#include "runtime/cuda_driver.hpp"
#include "runtime/loop.hpp"

namespace raptor::runtime {

// Whether every step is a no-op once all samples of the loop's mask are finished (so a batch
// may run past the launch that finished the last one): each step's mask is the loop's and
// noop_when_done holds for it.
bool cuda_overshoot_ok(const std::vector<std::shared_ptr<const CudaBound>>& steps,
                       cuda::CUdeviceptr mask);

class CudaLoop {
 public:
  // `steps` in launch order, all on one device; `mask` the loop's Terminated plane (device,
  // n bytes). `overshoot_ok`: see cuda_overshoot_ok. `variant`: "auto" (While where the driver
  // has conditional nodes, else Batched), "while" (refused where it has not) or "batched".
  // Compiles and loads the stop test.
  CudaLoop(std::vector<std::shared_ptr<const CudaBound>> steps, cuda::CUdeviceptr mask, int64_t n,
           bool overshoot_ok, const std::string& variant = "auto");
  ~CudaLoop();
  CudaLoop(const CudaLoop&) = delete;
  CudaLoop& operator=(const CudaLoop&) = delete;

  // At most `budget` launches of the sequence on `stream`; waits for the stream to read the
  // counters (Batched: between batches too). Kernel errors are the steps' own, raised by
  // their synchronize (CudaBound::synchronize), which this calls at the end.
  LoopResult run(int64_t budget, cuda::CUstream stream);
  LoopStopVariant variant() const { return variant_; }

  struct Conditional;  // the conditional-node entry points (cuda_loop.cpp)

 private:
  class Ops;
  void launch_test(cuda::CUstream stream, int init) const;
  cuda::CUgraphExec batch(int64_t k);
  cuda::CUgraphExec while_graph();
  const cuda::Driver& driver_;
  std::vector<std::shared_ptr<const CudaBound>> steps_;
  cuda::CUdeviceptr mask_;
  int64_t n_;
  bool overshoot_ok_;
  LoopStopVariant variant_ = LoopStopVariant::Batched;
  const Conditional* cond_ = nullptr;   // set for the While variant
  unsigned long long cond_handle_ = 0;  // the WHILE node's condition (While)
  cuda::CUfunction test_ = nullptr;     // the Batched stop test (or the While one)
  DeviceMemory counters_;
  DeviceMemory partials_;
  std::map<int64_t, std::pair<cuda::CUgraph, cuda::CUgraphExec>> graphs_;  // Batched, by k
  std::pair<cuda::CUgraph, cuda::CUgraphExec> while_{nullptr, nullptr};
};

}  // namespace raptor::runtime
