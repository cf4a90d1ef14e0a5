// Captured segments of a CUDA plan graph: consecutive bound kernel launches (runtime/
// cuda_bound.hpp) recorded once into a CUDA graph by stream capture and replayed with one
// cuGraphLaunch per graph launch. eagle.graph decides which nodes form a segment
// (python/eagle/graph.py, `schedule_of`); this file only captures and replays. Start at
// `CudaSegment::launch`.
//
// The capture happens at the first launch, on a private non-blocking stream (the legacy
// default stream cannot be captured); replays go on the caller's stream. The kernels' modules
// are loaded before the capture begins (loading is not a stream operation). Nothing here
// waits for the GPU except `synchronize`, which reads each node's status word.
#pragma once

#include <cstdint>
#include <memory>
#include <mutex>
#include <vector>

#include "runtime/cuda_bound.hpp"
#include "runtime/cuda_driver.hpp"

namespace raptor::runtime {

class CudaSegment {
 public:
  explicit CudaSegment(std::vector<std::shared_ptr<const CudaBound>> nodes);
  ~CudaSegment();
  CudaSegment(const CudaSegment&) = delete;
  CudaSegment& operator=(const CudaSegment&) = delete;

  // Enqueues the segment `times` times on `stream` (capturing it first if not yet captured).
  void launch(cuda::CUstream stream, int64_t times);
  // Waits for `stream`; throws the first pending kernel error of the segment's nodes.
  void synchronize(cuda::CUstream stream) const;
  bool captured() const { return exec_ != nullptr; }
  size_t size() const { return nodes_.size(); }

 private:
  void capture();
  const cuda::Driver& driver_;
  std::vector<std::shared_ptr<const CudaBound>> nodes_;
  std::mutex mu_;
  cuda::CUgraph graph_ = nullptr;
  cuda::CUgraphExec exec_ = nullptr;
};

}  // namespace raptor::runtime
