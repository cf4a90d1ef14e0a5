// NVRTC through dlopen (see nvrtc.hpp). The few entry points used are declared here with
// NVRTC's C ABI (nvrtcResult is an int enum, nvrtcProgram an opaque pointer).
#include "runtime/nvrtc.hpp"

#include <dlfcn.h>

#include <cstdlib>
#include <stdexcept>
#include <vector>

namespace raptor::runtime {

struct Nvrtc::Api {
  using Program = void*;
  void* handle = nullptr;
  int (*version)(int*, int*) = nullptr;
  int (*create)(Program*, const char*, const char*, int, const char* const*,
                const char* const*) = nullptr;
  int (*compile)(Program, int, const char* const*) = nullptr;
  int (*ptx_size)(Program, size_t*) = nullptr;
  int (*ptx)(Program, char*) = nullptr;
  int (*cubin_size)(Program, size_t*) = nullptr;
  int (*cubin)(Program, char*) = nullptr;
  int (*log_size)(Program, size_t*) = nullptr;
  int (*log)(Program, char*) = nullptr;
  int (*destroy)(Program*) = nullptr;
  const char* (*error_string)(int) = nullptr;

  ~Api() {
    if (handle) dlclose(handle);
  }
};

namespace {

template <class F>
bool resolve(void* handle, const char* name, F& out) {
  out = reinterpret_cast<F>(dlsym(handle, name));
  return out != nullptr;
}

}  // namespace

std::optional<Nvrtc> Nvrtc::open() {
  std::vector<std::string> candidates;
  if (const char* env = std::getenv("RAPTOR_NVRTC"); env && *env) candidates.push_back(env);
  for (const char* name :
       {"libnvrtc.so", "libnvrtc.so.13", "libnvrtc.so.12", "/usr/local/cuda/lib64/libnvrtc.so"})
    candidates.push_back(name);
  for (const std::string& c : candidates) {
    // RTLD_NODELETE: NVRTC stays mapped once opened (its own allocations live as long).
    void* h = dlopen(c.c_str(), RTLD_NOW | RTLD_LOCAL | RTLD_NODELETE);
    if (!h) continue;
    auto api = std::make_shared<Api>();
    api->handle = h;
    const bool ok =
        resolve(h, "nvrtcVersion", api->version) && resolve(h, "nvrtcCreateProgram", api->create) &&
        resolve(h, "nvrtcCompileProgram", api->compile) &&
        resolve(h, "nvrtcGetPTXSize", api->ptx_size) && resolve(h, "nvrtcGetPTX", api->ptx) &&
        resolve(h, "nvrtcGetCUBINSize", api->cubin_size) &&
        resolve(h, "nvrtcGetCUBIN", api->cubin) &&
        resolve(h, "nvrtcGetProgramLogSize", api->log_size) &&
        resolve(h, "nvrtcGetProgramLog", api->log) &&
        resolve(h, "nvrtcDestroyProgram", api->destroy) &&
        resolve(h, "nvrtcGetErrorString", api->error_string);
    if (ok) return Nvrtc(std::move(api));
  }
  return std::nullopt;
}

std::string Nvrtc::version() const {
  int major = 0, minor = 0;
  api_->version(&major, &minor);
  return std::to_string(major) + "." + std::to_string(minor);
}

std::string Nvrtc::compile_ptx(const std::string& source, const std::string& name,
                               const std::string& arch) const {
  return compile(source, name, arch, /*cubin=*/false, /*fast_compile=*/false);
}

std::string Nvrtc::compile_cubin(const std::string& source, const std::string& name,
                                 const std::string& arch, bool fast_compile) const {
  return compile(source, name, arch, /*cubin=*/true, fast_compile);
}

std::string Nvrtc::compile(const std::string& source, const std::string& name,
                           const std::string& arch, bool cubin, bool fast_compile) const {
  const Api& a = *api_;
  Api::Program prog = nullptr;
  if (const int rc = a.create(&prog, source.c_str(), name.c_str(), 0, nullptr, nullptr); rc != 0)
    throw std::runtime_error(std::string("NVRTC could not create a program: ") +
                             a.error_string(rc));
  struct Destroy {
    const Api& a;
    Api::Program* p;
    ~Destroy() { a.destroy(p); }
  } destroy{a, &prog};
  const std::string arch_flag = "--gpu-architecture=" + arch;
  std::vector<const char*> options = {arch_flag.c_str(), "--std=c++17", "-default-device",
                                      "--fmad=false"};
  int major = 0, minor = 0;
  a.version(&major, &minor);
  if (fast_compile && (major > 12 || (major == 12 && minor >= 8)))
    options.push_back("--Ofast-compile=max");
  const int rc = a.compile(prog, static_cast<int>(options.size()), options.data());
  size_t log_size = 0;
  a.log_size(prog, &log_size);
  std::string log(log_size, '\0');
  if (log_size > 1) a.log(prog, log.data());
  if (rc != 0)
    throw std::runtime_error("NVRTC rejected the CUDA code generated for " + name + " (" +
                             a.error_string(rc) + "):\n" + log);
  size_t size = 0;
  if (cubin) {
    if (const int r = a.cubin_size(prog, &size); r != 0 || size == 0)
      throw std::runtime_error("NVRTC made no cubin for " + name + " (" + arch +
                               " must be a real architecture such as sm_90)");
    std::string bin(size, '\0');
    a.cubin(prog, bin.data());
    return bin;
  }
  a.ptx_size(prog, &size);
  std::string ptx(size, '\0');
  a.ptx(prog, ptx.data());
  while (!ptx.empty() && ptx.back() == '\0') ptx.pop_back();
  return ptx;
}

}  // namespace raptor::runtime
