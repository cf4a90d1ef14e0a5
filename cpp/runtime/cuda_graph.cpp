// Captured CUDA segments (see cuda_graph.hpp). Start at CudaSegment::capture.
#include "runtime/cuda_graph.hpp"

#include <stdexcept>

namespace raptor::runtime {

namespace {

const cuda::Driver& require_driver() {
  const cuda::Driver* d = cuda::Driver::get();
  if (!d) throw std::runtime_error("raptor: a CUDA graph needs the CUDA driver (libcuda.so.1)");
  return *d;
}

}  // namespace

CudaSegment::CudaSegment(std::vector<std::shared_ptr<const CudaBound>> nodes)
    : driver_(require_driver()), nodes_(std::move(nodes)) {
  if (nodes_.empty()) throw std::invalid_argument("raptor: a CUDA segment needs a kernel node");
  for (const auto& n : nodes_)
    if (n->device() != nodes_.front()->device())
      throw std::invalid_argument("raptor: kernel '" + n->kernel().slots().name +
                                  "' is bound on device " + std::to_string(n->device()) +
                                  ", the segment's first kernel on device " +
                                  std::to_string(nodes_.front()->device()));
}

CudaSegment::~CudaSegment() {
  driver_.graph_exec_destroy(exec_);
  driver_.graph_destroy(graph_);
}

void CudaSegment::capture() {
  for (const auto& n : nodes_) n->kernel().function(driver_);  // load before capturing
  const cuda::CUstream side = driver_.stream_create();
  struct DestroyStream {
    const cuda::Driver& d;
    cuda::CUstream s;
    ~DestroyStream() { d.stream_destroy(s); }
  } destroy{driver_, side};
  driver_.begin_capture(side);
  try {
    for (const auto& n : nodes_) n->launch(side);
  } catch (...) {
    driver_.graph_destroy(driver_.end_capture(side));  // ends the capture before rethrowing
    throw;
  }
  graph_ = driver_.end_capture(side);
  exec_ = driver_.instantiate(graph_);
}

void CudaSegment::launch(cuda::CUstream stream, int64_t times) {
  const std::lock_guard lock(mu_);
  if (!exec_) capture();
  for (int64_t t = 0; t < times; ++t) driver_.graph_launch(exec_, stream);
}

void CudaSegment::synchronize(cuda::CUstream stream) const {
  for (const auto& n : nodes_) n->synchronize(stream);
}

}  // namespace raptor::runtime
