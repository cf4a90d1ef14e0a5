// The GPU stepping loop (see cuda_loop.hpp). Start at CudaLoop::run.
#include "runtime/cuda_loop.hpp"

#include <stdexcept>
#include <string>

#include "runtime/cuda_build.hpp"
#include "runtime/cuda_loop_kernels.hpp"
#include "runtime/nvrtc.hpp"

namespace raptor::runtime {

namespace {

const cuda::Driver& require_driver() {
  const cuda::Driver* d = cuda::Driver::get();
  if (!d) throw std::runtime_error("raptor: a stepping loop on the GPU needs the CUDA driver");
  return *d;
}

std::string stop_test_ptx() {
  const auto nvrtc = Nvrtc::open();
  if (!nvrtc)
    throw std::runtime_error("raptor: a stepping loop on the GPU needs NVRTC for its stop test");
  return nvrtc->compile_ptx(loop_stop_source(LoopStopVariant::Batched), "raptor_loop_stop.cu",
                            kCudaArch);
}

}  // namespace

CudaLoop::CudaLoop(std::vector<std::shared_ptr<const CudaBound>> steps, cuda::CUdeviceptr mask,
                   int64_t n, bool overshoot_ok)
    : driver_(require_driver()),
      steps_(std::move(steps)),
      mask_(mask),
      n_(n),
      overshoot_ok_(overshoot_ok),
      counters_(driver_, sizeof(DeviceLoopCounters)),
      partials_(driver_, kLoopStopMaxBlocks * sizeof(unsigned long long)) {
  if (steps_.empty()) throw std::invalid_argument("raptor: a stepping loop needs a kernel");
  for (const auto& s : steps_)
    if (s->device() != steps_.front()->device())
      throw std::invalid_argument("raptor: kernel '" + s->kernel().slots().name +
                                  "' is bound on another GPU than the loop's first kernel");
  // The module is loaded into the steps' context (CudaBound made it current at bind).
  test_ = driver_.function(driver_.load_ptx(stop_test_ptx()), kLoopStopSymbol);
  for (const auto& s : steps_) s->kernel().function(driver_);  // loaded before any capture
}

CudaLoop::~CudaLoop() {
  for (const auto& [k, g] : graphs_) {
    driver_.graph_exec_destroy(g.second);
    driver_.graph_destroy(g.first);
  }
}

void CudaLoop::launch_test(cuda::CUstream stream, int init) const {
  const unsigned char* mask = reinterpret_cast<const unsigned char*>(mask_);
  long long n = n_;
  auto* counters = reinterpret_cast<DeviceLoopCounters*>(counters_.get());
  auto* partials = reinterpret_cast<unsigned long long*>(partials_.get());
  void* params[] = {&mask, &n, &counters, &partials, &init};
  driver_.launch(test_, static_cast<unsigned>(loop_stop_grid(n_)), kLoopStopBlock, stream, params);
}

cuda::CUgraphExec CudaLoop::batch(int64_t k) {
  if (auto it = graphs_.find(k); it != graphs_.end()) return it->second.second;
  const cuda::CUstream side = driver_.stream_create();
  struct DestroyStream {
    const cuda::Driver& d;
    cuda::CUstream s;
    ~DestroyStream() { d.stream_destroy(s); }
  } destroy{driver_, side};
  driver_.begin_capture(side);
  try {
    for (int64_t i = 0; i < k; ++i) {
      for (const auto& s : steps_) s->launch(side);
      launch_test(side, 0);
    }
  } catch (...) {
    driver_.graph_destroy(driver_.end_capture(side));
    throw;
  }
  const cuda::CUgraph g = driver_.end_capture(side);
  const cuda::CUgraphExec e = driver_.instantiate(g);
  graphs_[k] = {g, e};
  return e;
}

LoopResult CudaLoop::run(int64_t budget, cuda::CUstream stream) {
  if (budget < 0) throw std::invalid_argument("raptor: a loop's budget must be >= 0");
  const DeviceLoopCounters start = device_counters(budget);
  driver_.copy_to_device_sync(counters_.get(), &start, sizeof start);
  launch_test(stream, 1);
  DeviceLoopCounters c{};
  driver_.copy_to_host_sync(&c, counters_.get(), sizeof c, stream);
  if (!device_stopped(c))
    for (const int64_t k : device_batches(budget, kDeviceBatchCap, overshoot_ok_)) {
      driver_.graph_launch(batch(k), stream);
      driver_.copy_to_host_sync(&c, counters_.get(), sizeof c, stream);
      if (device_stopped(c)) break;
    }
  for (const auto& s : steps_) s->synchronize(stream);  // a pending kernel error, if any
  return device_result(c, budget);
}

}  // namespace raptor::runtime
