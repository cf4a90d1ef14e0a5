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
};

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
  const bool ok = resolve(h, "cuInit", api->init) &&
                  resolve(h, "cuCtxGetCurrent", api->ctx_get_current) &&
                  resolve(h, "cuModuleLoadData", api->module_load_data) &&
                  resolve(h, "cuModuleGetFunction", api->module_get_function) &&
                  resolve(h, "cuLaunchKernel", api->launch_kernel) &&
                  resolve(h, "cuMemsetD8Async", api->memset_d8_async) &&
                  resolve(h, "cuMemAllocAsync", api->mem_alloc_async) &&
                  resolve(h, "cuMemFreeAsync", api->mem_free_async) &&
                  resolve(h, "cuMemcpyDtoHAsync_v2", api->memcpy_dtoh_async) &&
                  resolve(h, "cuStreamSynchronize", api->stream_synchronize) &&
                  resolve(h, "cuGetErrorString", api->get_error_string);
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

}  // namespace raptor::runtime::cuda
