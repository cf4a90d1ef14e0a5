// The CUDA driver API through dlopen (see cuda_driver.hpp). Start at Driver::get.
#include "runtime/cuda_driver.hpp"

#include <dlfcn.h>

#include <stdexcept>
#include <string>
#include <type_traits>
#include <vector>

namespace raptor::runtime::cuda {

// Every driver entry point raptor calls: (member, symbol, type), in one list, so that each
// member is resolved by construction (an entry point declared but never resolved was a null
// function pointer: cuMemAllocHost, which the CUDA XLA handler's first call crashed on).
// Versioned symbols (_v2) are the ones cuda.h maps the plain names to.
#define RAPTOR_CUDA_DRIVER_API(X)                                                              \
  X(init, "cuInit", int (*)(unsigned))                                                         \
  X(ctx_get_current, "cuCtxGetCurrent", int (*)(CUcontext*))                                   \
  X(module_load_data, "cuModuleLoadData", int (*)(CUmodule*, const void*))                     \
  X(module_get_function, "cuModuleGetFunction", int (*)(CUfunction*, CUmodule, const char*))   \
  X(launch_kernel, "cuLaunchKernel",                                                           \
    int (*)(CUfunction, unsigned, unsigned, unsigned, unsigned, unsigned, unsigned, unsigned,  \
            CUstream, void**, void**))                                                         \
  X(memset_d8_async, "cuMemsetD8Async", int (*)(CUdeviceptr, unsigned char, size_t, CUstream)) \
  X(mem_alloc_async, "cuMemAllocAsync", int (*)(CUdeviceptr*, size_t, CUstream))               \
  X(mem_free_async, "cuMemFreeAsync", int (*)(CUdeviceptr, CUstream))                          \
  X(memcpy_dtoh_async, "cuMemcpyDtoHAsync_v2", int (*)(void*, CUdeviceptr, size_t, CUstream))  \
  X(stream_synchronize, "cuStreamSynchronize", int (*)(CUstream))                              \
  X(get_error_string, "cuGetErrorString", int (*)(int, const char**))                          \
  X(ctx_set_current, "cuCtxSetCurrent", int (*)(CUcontext))                                    \
  X(ctx_get_device, "cuCtxGetDevice", int (*)(int*))                                           \
  X(device_get, "cuDeviceGet", int (*)(int*, int))                                             \
  X(primary_ctx_retain, "cuDevicePrimaryCtxRetain", int (*)(CUcontext*, int))                  \
  X(pointer_get_attribute, "cuPointerGetAttribute", int (*)(void*, int, CUdeviceptr))          \
  X(memcpy_dtod_async, "cuMemcpyDtoDAsync_v2",                                                 \
    int (*)(CUdeviceptr, CUdeviceptr, size_t, CUstream))                                       \
  X(memcpy_htod, "cuMemcpyHtoD_v2", int (*)(CUdeviceptr, const void*, size_t))                 \
  X(mem_alloc, "cuMemAlloc_v2", int (*)(CUdeviceptr*, size_t))                                 \
  X(mem_free, "cuMemFree_v2", int (*)(CUdeviceptr))                                            \
  X(event_create, "cuEventCreate", int (*)(CUevent*, unsigned))                                \
  X(event_destroy, "cuEventDestroy_v2", int (*)(CUevent))                                      \
  X(event_record, "cuEventRecord", int (*)(CUevent, CUstream))                                 \
  X(event_query, "cuEventQuery", int (*)(CUevent))                                             \
  X(stream_wait_event, "cuStreamWaitEvent", int (*)(CUstream, CUevent, unsigned))              \
  X(stream_begin_capture, "cuStreamBeginCapture_v2", int (*)(CUstream, int))                   \
  X(stream_end_capture, "cuStreamEndCapture", int (*)(CUstream, CUgraph*))                     \
  X(graph_instantiate, "cuGraphInstantiateWithFlags",                                          \
    int (*)(CUgraphExec*, CUgraph, unsigned long long))                                        \
  X(graph_launch, "cuGraphLaunch", int (*)(CUgraphExec, CUstream))                             \
  X(graph_destroy, "cuGraphDestroy", int (*)(CUgraph))                                         \
  X(graph_exec_destroy, "cuGraphExecDestroy", int (*)(CUgraphExec))                            \
  X(stream_create, "cuStreamCreate", int (*)(CUstream*, unsigned))                             \
  X(stream_destroy, "cuStreamDestroy_v2", int (*)(CUstream))                                   \
  X(mem_alloc_host, "cuMemAllocHost_v2", int (*)(void**, size_t))                              \
  X(mem_free_host, "cuMemFreeHost", int (*)(void*))

struct Driver::Api {
  void* handle = nullptr;
#define RAPTOR_CUDA_MEMBER(member, symbol, type) std::type_identity_t<type> member = nullptr;
  RAPTOR_CUDA_DRIVER_API(RAPTOR_CUDA_MEMBER)
#undef RAPTOR_CUDA_MEMBER
};

namespace {
constexpr int kPointerDeviceOrdinal = 9;  // CU_POINTER_ATTRIBUTE_DEVICE_ORDINAL
constexpr int kNotReady = 600;            // CUDA_ERROR_NOT_READY
constexpr unsigned kEventDisableTiming = 2;
constexpr int kCaptureThreadLocal = 1;      // CU_STREAM_CAPTURE_MODE_THREAD_LOCAL
constexpr unsigned kStreamNonBlocking = 1;  // CU_STREAM_NON_BLOCKING
}  // namespace

namespace {

template <class F>
bool resolve(void* handle, const char* name, F& out) {
  out = reinterpret_cast<F>(dlsym(handle, name));
  return out != nullptr;
}

// Resolves every entry point of RAPTOR_CUDA_DRIVER_API from `handle`; the symbols missing.
std::vector<std::string> resolve_all(void* handle, Driver::Api& api) {
  std::vector<std::string> missing;
#define RAPTOR_CUDA_RESOLVE(member, symbol, type) \
  if (!resolve(handle, symbol, api.member)) missing.emplace_back(symbol);
  RAPTOR_CUDA_DRIVER_API(RAPTOR_CUDA_RESOLVE)
#undef RAPTOR_CUDA_RESOLVE
  return missing;
}

std::unique_ptr<Driver::Api> load() {
  // RTLD_NODELETE: the driver stays mapped for the process, as a linked library would.
  void* h = dlopen("libcuda.so.1", RTLD_NOW | RTLD_LOCAL | RTLD_NODELETE);
  if (!h) return nullptr;
  auto api = std::make_unique<Driver::Api>();
  api->handle = h;
  const bool ok = resolve_all(h, *api).empty();
  if (!ok || api->init(0) != 0) return nullptr;
  return api;
}

}  // namespace

Driver::Driver(std::unique_ptr<Api> api) : api_(std::move(api)) {}

std::vector<std::string> Driver::missing_symbols(const std::string& path) {
  void* h = dlopen(path.c_str(), RTLD_LAZY | RTLD_LOCAL);
  if (!h) {
    const char* why = dlerror();
    return {std::string("dlopen: ") + (why ? why : path)};
  }
  Api api;
  std::vector<std::string> missing = resolve_all(h, api);
  dlclose(h);
  return missing;
}

const Driver* Driver::get() {
  // Process-wide like the driver itself; created once, thread-safe (magic statics).
  static const std::unique_ptr<const Driver> driver = []() -> std::unique_ptr<const Driver> {
    auto api = load();
    if (!api) return nullptr;
    return std::unique_ptr<const Driver>(new Driver(std::move(api)));
  }();
  return driver.get();
}

void Driver::check(int result, const char* what) const {
  if (result == 0) return;
  const char* text = nullptr;
  api_->get_error_string(result, &text);
  throw std::runtime_error(std::string("CUDA ") + what +
                           " failed: " + (text ? text : "unknown error"));
}

CUcontext Driver::current_context() const {
  CUcontext c = nullptr;
  check(api_->ctx_get_current(&c), "cuCtxGetCurrent");
  return c;
}

CUcontext Driver::use_device(int ordinal) const {
  if (CUcontext c = current_context()) {
    int dev = -1;
    if (api_->ctx_get_device(&dev) == 0 && dev == ordinal) return c;
  }
  int dev = 0;
  check(api_->device_get(&dev, ordinal), "cuDeviceGet");
  CUcontext c = nullptr;
  // Retained for the process: the primary context is shared with the CUDA runtime's users.
  check(api_->primary_ctx_retain(&c, dev), "cuDevicePrimaryCtxRetain");
  set_current(c);
  return c;
}

void Driver::set_current(CUcontext c) const { check(api_->ctx_set_current(c), "cuCtxSetCurrent"); }

int Driver::pointer_device(CUdeviceptr p) const {
  int ordinal = -1;
  if (api_->pointer_get_attribute(&ordinal, kPointerDeviceOrdinal, p) != 0) return -1;
  return ordinal;
}

CUmodule Driver::load_ptx(const std::string& ptx) const {
  CUmodule m = nullptr;
  check(api_->module_load_data(&m, ptx.c_str()), "cuModuleLoadData");
  return m;
}

CUfunction Driver::function(CUmodule m, const std::string& name) const {
  CUfunction f = nullptr;
  check(api_->module_get_function(&f, m, name.c_str()), "cuModuleGetFunction");
  return f;
}

void Driver::launch(CUfunction f, unsigned grid, unsigned block, CUstream stream,
                    void** params) const {
  check(api_->launch_kernel(f, grid, 1, 1, block, 1, 1, 0, stream, params, nullptr),
        "cuLaunchKernel");
}

void Driver::memset_async(CUdeviceptr p, size_t bytes, CUstream stream) const {
  check(api_->memset_d8_async(p, 0, bytes, stream), "cuMemsetD8Async");
}

CUdeviceptr Driver::alloc_async(size_t bytes, CUstream stream) const {
  CUdeviceptr p = 0;
  check(api_->mem_alloc_async(&p, bytes, stream), "cuMemAllocAsync");
  return p;
}

void Driver::free_async(CUdeviceptr p, CUstream stream) const {
  check(api_->mem_free_async(p, stream), "cuMemFreeAsync");
}

void Driver::copy_to_host_sync(void* dst, CUdeviceptr src, size_t bytes, CUstream stream) const {
  check(api_->memcpy_dtoh_async(dst, src, bytes, stream), "cuMemcpyDtoHAsync");
  check(api_->stream_synchronize(stream), "cuStreamSynchronize");
}

void Driver::copy_async(CUdeviceptr dst, CUdeviceptr src, size_t bytes, CUstream stream) const {
  check(api_->memcpy_dtod_async(dst, src, bytes, stream), "cuMemcpyDtoDAsync");
}

void Driver::copy_to_device_sync(CUdeviceptr dst, const void* src, size_t bytes) const {
  check(api_->memcpy_htod(dst, src, bytes), "cuMemcpyHtoD");
}

void Driver::copy_to_host_async(void* dst, CUdeviceptr src, size_t bytes, CUstream stream) const {
  check(api_->memcpy_dtoh_async(dst, src, bytes, stream), "cuMemcpyDtoHAsync");
}

void* Driver::alloc_host(size_t bytes) const {
  void* p = nullptr;
  check(api_->mem_alloc_host(&p, bytes), "cuMemAllocHost");
  return p;
}

CUdeviceptr Driver::alloc(size_t bytes) const {
  CUdeviceptr p = 0;
  check(api_->mem_alloc(&p, bytes), "cuMemAlloc");
  return p;
}

void Driver::free(CUdeviceptr p) const noexcept {
  if (p) api_->mem_free(p);
}

void Driver::free_host(void* p) const noexcept {
  if (p) api_->mem_free_host(p);
}

void Driver::synchronize(CUstream stream) const {
  check(api_->stream_synchronize(stream), "cuStreamSynchronize");
}

CUevent Driver::event_create() const {
  CUevent e = nullptr;
  check(api_->event_create(&e, kEventDisableTiming), "cuEventCreate");
  return e;
}

void Driver::event_destroy(CUevent e) const noexcept {
  if (e) api_->event_destroy(e);
}

void Driver::event_record(CUevent e, CUstream stream) const {
  check(api_->event_record(e, stream), "cuEventRecord");
}

bool Driver::event_done(CUevent e) const {
  const int rc = api_->event_query(e);
  if (rc == kNotReady) return false;
  check(rc, "cuEventQuery");
  return true;
}

void Driver::stream_wait(CUstream stream, CUevent e) const {
  check(api_->stream_wait_event(stream, e, 0), "cuStreamWaitEvent");
}

CUstream Driver::stream_create() const {
  CUstream s = nullptr;
  check(api_->stream_create(&s, kStreamNonBlocking), "cuStreamCreate");
  return s;
}

void Driver::stream_destroy(CUstream s) const noexcept {
  if (s) api_->stream_destroy(s);
}

void Driver::begin_capture(CUstream stream) const {
  check(api_->stream_begin_capture(stream, kCaptureThreadLocal), "cuStreamBeginCapture");
}

CUgraph Driver::end_capture(CUstream stream) const {
  CUgraph g = nullptr;
  check(api_->stream_end_capture(stream, &g), "cuStreamEndCapture");
  return g;
}

CUgraphExec Driver::instantiate(CUgraph g) const {
  CUgraphExec e = nullptr;
  check(api_->graph_instantiate(&e, g, 0), "cuGraphInstantiate");
  return e;
}

void Driver::graph_launch(CUgraphExec g, CUstream stream) const {
  check(api_->graph_launch(g, stream), "cuGraphLaunch");
}

void Driver::graph_destroy(CUgraph g) const noexcept {
  if (g) api_->graph_destroy(g);
}

void Driver::graph_exec_destroy(CUgraphExec g) const noexcept {
  if (g) api_->graph_exec_destroy(g);
}

}  // namespace raptor::runtime::cuda
