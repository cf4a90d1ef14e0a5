// The GPU stepping loop (see cuda_loop.hpp). Start at CudaLoop::run; the While graph is built
// in CudaLoop::while_graph.
#include "runtime/cuda_loop.hpp"

#include <dlfcn.h>

#include <stdexcept>
#include <string>
#include <type_traits>

#include "runtime/cuda_build.hpp"
#include "runtime/cuda_loop_kernels.hpp"
#include "runtime/nvrtc.hpp"

namespace raptor::runtime {

namespace {

struct GraphNode;
using CUgraphNode = GraphNode*;

// The driver API's CUgraphNodeParams (cuda.h, CUDA >= 12.3) with the one member used here,
// CUDA_CONDITIONAL_NODE_PARAMS; the union is 29 long longs, so the struct is 256 bytes.
struct ConditionalNodeParams {
  unsigned long long handle;
  int type;  // CUgraphConditionalNodeType
  unsigned size;
  cuda::CUgraph* graph_out;
  cuda::CUcontext ctx;
};
struct GraphNodeParams {
  int type;  // CUgraphNodeType
  int reserved0[3];
  union {
    long long reserved1[29];
    ConditionalNodeParams conditional;
  };
  long long reserved2;
};
static_assert(sizeof(GraphNodeParams) == 256, "CUgraphNodeParams is 256 bytes");
constexpr int kNodeTypeConditional = 13;  // CU_GRAPH_NODE_TYPE_CONDITIONAL
constexpr int kCondTypeWhile = 1;         // CU_GRAPH_COND_TYPE_WHILE
constexpr int kCaptureThreadLocal = 1;    // CU_STREAM_CAPTURE_MODE_THREAD_LOCAL

const cuda::Driver& require_driver() {
  const cuda::Driver* d = cuda::Driver::get();
  if (!d) throw std::runtime_error("raptor: a stepping loop on the GPU needs the CUDA driver");
  return *d;
}

std::string stop_test_ptx(LoopStopVariant variant) {
  const auto nvrtc = Nvrtc::open();
  if (!nvrtc)
    throw std::runtime_error("raptor: a stepping loop on the GPU needs NVRTC for its stop test");
  return nvrtc->compile_ptx(loop_stop_source(variant), "raptor_loop_stop.cu", kCudaArch);
}

void check(int result, const char* what) {
  if (result != 0)
    throw std::runtime_error(std::string("raptor: CUDA ") + what + " failed (CUresult " +
                             std::to_string(result) + ") building a stepping loop's WHILE graph");
}

}  // namespace

// The conditional-node entry points, from the libcuda the Driver loaded; null members when
// the driver has not got them. Process-wide like the driver (a magic static).
struct CudaLoop::Conditional {
  int driver_version = 0;
  int (*handle_create)(unsigned long long*, cuda::CUgraph, cuda::CUcontext, unsigned,
                       unsigned) = nullptr;
  int (*add_node)(CUgraphNode*, cuda::CUgraph, const CUgraphNode*, const void*, size_t,
                  GraphNodeParams*) = nullptr;
  int (*begin_capture_to_graph)(cuda::CUstream, cuda::CUgraph, const CUgraphNode*, const void*,
                                size_t, int) = nullptr;
  int (*graph_create)(cuda::CUgraph*, unsigned) = nullptr;
  int (*graph_get_nodes)(cuda::CUgraph, CUgraphNode*, size_t*) = nullptr;

  bool complete() const {
    return handle_create && add_node && begin_capture_to_graph && graph_create && graph_get_nodes;
  }

  static const Conditional& get() {
    static const Conditional api = [] {
      Conditional a;
      void* h = dlopen("libcuda.so.1", RTLD_NOW | RTLD_LOCAL | RTLD_NOLOAD);
      if (!h) return a;
      const auto sym = [h](const char* name, auto& out) {
        out = reinterpret_cast<std::remove_reference_t<decltype(out)>>(dlsym(h, name));
      };
      int (*version)(int*) = nullptr;
      sym("cuDriverGetVersion", version);
      if (version && version(&a.driver_version) != 0) a.driver_version = 0;
      sym("cuGraphConditionalHandleCreate", a.handle_create);
      sym("cuGraphAddNode_v2", a.add_node);  // with edge data (CUDA >= 12.3)
      sym("cuStreamBeginCaptureToGraph", a.begin_capture_to_graph);
      sym("cuGraphCreate", a.graph_create);
      sym("cuGraphGetNodes", a.graph_get_nodes);
      return a;
    }();
    return api;
  }
};

bool cuda_overshoot_ok(const std::vector<std::shared_ptr<const CudaBound>>& steps,
                       cuda::CUdeviceptr mask) {
  for (const auto& s : steps)
    if (!step_noop_when_done(s->kernel().slots().iface, s->binding(),
                             reinterpret_cast<const void*>(mask)))
      return false;
  return true;
}

// The plan's operations on this loop's device and stream (run_device_loop drives them).
class CudaLoop::Ops final : public DeviceLoopOps {
 public:
  Ops(CudaLoop& loop, cuda::CUstream stream) : l_(loop), s_(stream) {}
  void write_counters(const DeviceLoopCounters& c) override {
    l_.driver_.copy_to_device_sync(l_.counters_.get(), &c, sizeof c);
  }
  void init_test() override { l_.launch_test(s_, 1); }
  void batch(int64_t k) override { l_.driver_.graph_launch(l_.batch(k), s_); }
  void while_loop() override { l_.driver_.graph_launch(l_.while_graph(), s_); }
  DeviceLoopCounters read_counters() override {
    DeviceLoopCounters c{};
    l_.driver_.copy_to_host_sync(&c, l_.counters_.get(), sizeof c, s_);
    return c;
  }

 private:
  CudaLoop& l_;
  cuda::CUstream s_;
};

CudaLoop::CudaLoop(std::vector<std::shared_ptr<const CudaBound>> steps, cuda::CUdeviceptr mask,
                   int64_t n, bool overshoot_ok, const std::string& variant)
    : driver_(require_driver()),
      steps_(std::move(steps)),
      mask_(mask),
      n_(n),
      overshoot_ok_(overshoot_ok),
      counters_(driver_, sizeof(DeviceLoopCounters)),
      partials_(driver_, kLoopStopMaxBlocks * sizeof(unsigned long long)) {
  if (variant != "auto" && variant != "while" && variant != "batched")
    throw std::invalid_argument(
        "raptor: a stepping loop's variant is 'auto', 'while' or 'batched', not '" + variant + "'");
  if (steps_.empty()) throw std::invalid_argument("raptor: a stepping loop needs a kernel");
  for (const auto& s : steps_)
    if (s->device() != steps_.front()->device())
      throw std::invalid_argument("raptor: kernel '" + s->kernel().slots().name +
                                  "' is bound on another GPU than the loop's first kernel");
  const Conditional& c = Conditional::get();
  const LoopStopVariant can = device_loop_variant(c.driver_version, c.complete());
  if (variant == "while" && can != LoopStopVariant::While)
    throw std::runtime_error(
        "raptor: a WHILE stepping loop needs CUDA >= 12.4 conditional nodes; this driver is " +
        std::to_string(c.driver_version) + (c.complete() ? "" : " without their entry points"));
  variant_ = variant == "batched" ? LoopStopVariant::Batched : can;
  // The stop test's module goes into the steps' context: their device's primary context
  // (CudaBound binds there), made current on this thread unless one on that device is.
  driver_.use_device(steps_.front()->device());
  if (variant_ == LoopStopVariant::While) {
    try {
      test_ = driver_.function(driver_.load_ptx(stop_test_ptx(LoopStopVariant::While)),
                               kLoopStopSymbol);
      cond_ = &c;
    } catch (const std::runtime_error&) {
      if (variant == "while") throw;
      variant_ = LoopStopVariant::Batched;  // the driver could not load cudaGraphSetConditional
    }
  }
  if (variant_ == LoopStopVariant::Batched)
    test_ = driver_.function(driver_.load_ptx(stop_test_ptx(LoopStopVariant::Batched)),
                             kLoopStopSymbol);
  for (const auto& s : steps_) s->kernel().function(driver_);  // loaded before any capture
}

CudaLoop::~CudaLoop() {
  for (const auto& [k, g] : graphs_) {
    driver_.graph_exec_destroy(g.second);
    driver_.graph_destroy(g.first);
  }
  if (while_.second) driver_.graph_exec_destroy(while_.second);
  if (while_.first) driver_.graph_destroy(while_.first);
}

void CudaLoop::launch_test(cuda::CUstream stream, int init) const {
  const unsigned char* mask = reinterpret_cast<const unsigned char*>(mask_);
  long long n = n_;
  auto* counters = reinterpret_cast<DeviceLoopCounters*>(counters_.get());
  auto* partials = reinterpret_cast<unsigned long long*>(partials_.get());
  unsigned long long handle = cond_handle_;
  void* batched[] = {&mask, &n, &counters, &partials, &init};
  void* with_cond[] = {&mask, &n, &counters, &partials, &init, &handle};
  driver_.launch(test_, static_cast<unsigned>(loop_stop_grid(n_)), kLoopStopBlock, stream,
                 variant_ == LoopStopVariant::While ? with_cond : batched);
}

namespace {

// A non-blocking stream for capture, destroyed on scope exit.
struct SideStream {
  const cuda::Driver& d;
  cuda::CUstream s;
  explicit SideStream(const cuda::Driver& driver) : d(driver), s(driver.stream_create()) {}
  ~SideStream() { d.stream_destroy(s); }
  SideStream(const SideStream&) = delete;
  SideStream& operator=(const SideStream&) = delete;
};

}  // namespace

cuda::CUgraphExec CudaLoop::batch(int64_t k) {
  if (auto it = graphs_.find(k); it != graphs_.end()) return it->second.second;
  const SideStream side(driver_);
  driver_.begin_capture(side.s);
  try {
    for (int64_t i = 0; i < k; ++i) {
      for (const auto& s : steps_) s->launch(side.s);
      launch_test(side.s, 0);
    }
  } catch (...) {
    driver_.graph_destroy(driver_.end_capture(side.s));
    throw;
  }
  const cuda::CUgraph g = driver_.end_capture(side.s);
  const cuda::CUgraphExec e = driver_.instantiate(g);
  graphs_[k] = {g, e};
  return e;
}

cuda::CUgraphExec CudaLoop::while_graph() {
  if (while_.second) return while_.second;
  const Conditional& c = *cond_;
  const SideStream side(driver_);
  cuda::CUgraph g = nullptr;
  check(c.graph_create(&g, 0), "cuGraphCreate");
  while_.first = g;  // destroyed with the loop, also when a step below fails
  const cuda::CUcontext ctx = driver_.use_device(steps_.front()->device());
  check(c.handle_create(&cond_handle_, g, ctx, 0, 0), "cuGraphConditionalHandleCreate");
  // [init test] upstream of the WHILE node: it sets the condition to !stopped.
  check(c.begin_capture_to_graph(side.s, g, nullptr, nullptr, 0, kCaptureThreadLocal),
        "cuStreamBeginCaptureToGraph");
  try {
    launch_test(side.s, 1);
  } catch (...) {
    driver_.end_capture(side.s);
    throw;
  }
  driver_.end_capture(side.s);
  CUgraphNode init = nullptr;
  size_t count = 1;
  check(c.graph_get_nodes(g, &init, &count), "cuGraphGetNodes");
  if (count != 1) throw std::runtime_error("raptor: the WHILE graph's init test is not one node");
  GraphNodeParams p{};
  p.type = kNodeTypeConditional;
  p.conditional.handle = cond_handle_;
  p.conditional.type = kCondTypeWhile;
  p.conditional.size = 1;
  p.conditional.ctx = ctx;
  CUgraphNode node = nullptr;
  check(c.add_node(&node, g, &init, nullptr, 1, &p), "cuGraphAddNode (WHILE)");
  const cuda::CUgraph body = p.conditional.graph_out[0];
  // The body: [steps..., test(init = 0)], the test setting the condition to !stopped.
  check(c.begin_capture_to_graph(side.s, body, nullptr, nullptr, 0, kCaptureThreadLocal),
        "cuStreamBeginCaptureToGraph (WHILE body)");
  try {
    for (const auto& s : steps_) s->launch(side.s);
    launch_test(side.s, 0);
  } catch (...) {
    driver_.end_capture(side.s);
    throw;
  }
  driver_.end_capture(side.s);
  while_.second = driver_.instantiate(g);
  return while_.second;
}

LoopResult CudaLoop::run(int64_t budget, cuda::CUstream stream) {
  if (budget < 0) throw std::invalid_argument("raptor: a loop's budget must be >= 0");
  Ops ops(*this, stream);
  const LoopResult r = run_device_loop(ops, budget, overshoot_ok_, variant_);
  for (const auto& s : steps_) s->synchronize(stream);  // a pending kernel error, if any
  return r;
}

}  // namespace raptor::runtime
