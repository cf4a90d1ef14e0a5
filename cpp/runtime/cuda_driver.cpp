// The CUDA driver API through dlopen (see cuda_driver.hpp). Start at Driver::get.
#include "runtime/cuda_driver.hpp"

#include <dlfcn.h>

#include <stdexcept>

namespace raptor::runtime::cuda {

struct Driver::Api {
  void* handle = nullptr;
  int (*init)(unsigned) = nullptr;
  int (*ctx_get_current)(CUcontext*) = nullptr;
  int (*module_load_data)(CUmodule*, const void*) = nullptr;
  int (*module_get_function)(CUfunction*, CUmodule, const char*) = nullptr;
  int (*launch_kernel)(CUfunction, unsigned, unsigned, unsigned, unsigned, unsigned, unsigned,
                       unsigned, CUstream, void**, void**) = nullptr;
  int (*memset_d8_async)(CUdeviceptr, unsigned char, size_t, CUstream) = nullptr;
  int (*mem_alloc_async)(CUdeviceptr*, size_t, CUstream) = nullptr;
  int (*mem_free_async)(CUdeviceptr, CUstream) = nullptr;
  int (*memcpy_dtoh_async)(void*, CUdeviceptr, size_t, CUstream) = nullptr;
  int (*stream_synchronize)(CUstream) = nullptr;
  int (*get_error_string)(int, const char**) = nullptr;
  int (*ctx_set_current)(CUcontext) = nullptr;
  int (*ctx_get_device)(int*) = nullptr;
  int (*device_get)(int*, int) = nullptr;
  int (*primary_ctx_retain)(CUcontext*, int) = nullptr;
  int (*pointer_get_attribute)(void*, int, CUdeviceptr) = nullptr;
  int (*memcpy_dtod_async)(CUdeviceptr, CUdeviceptr, size_t, CUstream) = nullptr;
  int (*memcpy_htod)(CUdeviceptr, const void*, size_t) = nullptr;
  int (*mem_alloc)(CUdeviceptr*, size_t) = nullptr;
  int (*mem_free)(CUdeviceptr) = nullptr;
  int (*event_create)(CUevent*, unsigned) = nullptr;
  int (*event_destroy)(CUevent) = nullptr;
  int (*event_record)(CUevent, CUstream) = nullptr;
  int (*event_query)(CUevent) = nullptr;
  int (*stream_wait_event)(CUstream, CUevent, unsigned) = nullptr;
  int (*stream_begin_capture)(CUstream, int) = nullptr;
  int (*stream_end_capture)(CUstream, CUgraph*) = nullptr;
  int (*graph_instantiate)(CUgraphExec*, CUgraph, unsigned long long) = nullptr;
  int (*graph_launch)(CUgraphExec, CUstream) = nullptr;
  int (*graph_destroy)(CUgraph) = nullptr;
  int (*graph_exec_destroy)(CUgraphExec) = nullptr;
  int (*stream_create)(CUstream*, unsigned) = nullptr;
  int (*stream_destroy)(CUstream) = nullptr;
  int (*mem_alloc_host)(void**, size_t) = nullptr;
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

std::unique_ptr<Driver::Api> load() {
  // RTLD_NODELETE: the driver stays mapped for the process, as a linked library would.
  void* h = dlopen("libcuda.so.1", RTLD_NOW | RTLD_LOCAL | RTLD_NODELETE);
  if (!h) return nullptr;
  auto api = std::make_unique<Driver::Api>();
  api->handle = h;
  const bool ok =
      resolve(h, "cuInit", api->init) && resolve(h, "cuCtxGetCurrent", api->ctx_get_current) &&
      resolve(h, "cuModuleLoadData", api->module_load_data) &&
      resolve(h, "cuModuleGetFunction", api->module_get_function) &&
      resolve(h, "cuLaunchKernel", api->launch_kernel) &&
      resolve(h, "cuMemsetD8Async", api->memset_d8_async) &&
      resolve(h, "cuMemAllocAsync", api->mem_alloc_async) &&
      resolve(h, "cuMemFreeAsync", api->mem_free_async) &&
      resolve(h, "cuMemcpyDtoHAsync_v2", api->memcpy_dtoh_async) &&
      resolve(h, "cuStreamSynchronize", api->stream_synchronize) &&
      resolve(h, "cuGetErrorString", api->get_error_string) &&
      resolve(h, "cuCtxSetCurrent", api->ctx_set_current) &&
      resolve(h, "cuCtxGetDevice", api->ctx_get_device) &&
      resolve(h, "cuDeviceGet", api->device_get) &&
      resolve(h, "cuDevicePrimaryCtxRetain", api->primary_ctx_retain) &&
      resolve(h, "cuPointerGetAttribute", api->pointer_get_attribute) &&
      resolve(h, "cuMemcpyDtoDAsync_v2", api->memcpy_dtod_async) &&
      resolve(h, "cuMemcpyHtoD_v2", api->memcpy_htod) &&
      resolve(h, "cuMemAlloc_v2", api->mem_alloc) && resolve(h, "cuMemFree_v2", api->mem_free) &&
      resolve(h, "cuEventCreate", api->event_create) &&
      resolve(h, "cuEventDestroy_v2", api->event_destroy) &&
      resolve(h, "cuEventRecord", api->event_record) &&
      resolve(h, "cuEventQuery", api->event_query) &&
      resolve(h, "cuStreamWaitEvent", api->stream_wait_event) &&
      resolve(h, "cuStreamBeginCapture_v2", api->stream_begin_capture) &&
      resolve(h, "cuStreamEndCapture", api->stream_end_capture) &&
      resolve(h, "cuGraphInstantiateWithFlags", api->graph_instantiate) &&
      resolve(h, "cuGraphLaunch", api->graph_launch) &&
      resolve(h, "cuGraphDestroy", api->graph_destroy) &&
      resolve(h, "cuGraphExecDestroy", api->graph_exec_destroy) &&
      resolve(h, "cuStreamCreate", api->stream_create) &&
      resolve(h, "cuStreamDestroy_v2", api->stream_destroy);
  if (!ok || api->init(0) != 0) return nullptr;
  return api;
}

}  // namespace

Driver::Driver(std::unique_ptr<Api> api) : api_(std::move(api)) {}

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
