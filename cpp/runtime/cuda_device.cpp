// The CUDA device probe (see cuda_device.hpp). Start at probe_with: every reason a device is
// not usable is decided there, from the entry points it is given.
#include "runtime/cuda_device.hpp"

#include <dlfcn.h>

#include <cstdlib>

namespace raptor::runtime::cuda {

namespace {

constexpr int kErrorNoDevice = 100;  // CUDA_ERROR_NO_DEVICE
constexpr int kAttrMajor = 75;       // CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR
constexpr int kAttrMinor = 76;       // CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MINOR

std::string error_text(const ProbeApi& api, int rc) {
  const char* text = nullptr;
  if (api.get_error_string) api.get_error_string(rc, &text);
  return std::string(text ? text : "unknown error") + " (CUresult " + std::to_string(rc) + ")";
}

Probe refuse(std::string reason, int driver_version = 0) {
  Probe p;
  p.reason = std::move(reason);
  p.driver_version = driver_version;
  return p;
}

template <class F>
void resolve(void* handle, const char* name, F& out) {
  out = reinterpret_cast<F>(dlsym(handle, name));
}

}  // namespace

Probe probe_with(const ProbeApi* api, std::string_view load_error, const char* visible_devices) {
  if (!api)
    return refuse("no CUDA driver: libcuda.so.1 could not be loaded (" + std::string(load_error) +
                  "); install the NVIDIA driver on a machine with an NVIDIA GPU");
  if (!api->init || !api->device_get_count || !api->device_get || !api->device_get_name ||
      !api->device_get_attribute)
    return refuse(
        "no usable CUDA driver: libcuda.so.1 lacks the device entry points "
        "(cuInit, cuDeviceGetCount, cuDeviceGet, cuDeviceGetName, "
        "cuDeviceGetAttribute); update the NVIDIA driver");
  int version = 0;
  if (api->driver_get_version) api->driver_get_version(&version);
  const bool hidden = visible_devices != nullptr;
  const std::string shown =
      hidden ? "CUDA_VISIBLE_DEVICES='" + std::string(visible_devices) + "'" : std::string();
  if (const int rc = api->init(0); rc != 0) {
    if (rc == kErrorNoDevice && hidden)
      return refuse(shown + " hides every CUDA device (cuInit: " + error_text(*api, rc) +
                        "); unset it or name a device that exists",
                    version);
    return refuse("cuInit failed: " + error_text(*api, rc), version);
  }
  int count = 0;
  if (const int rc = api->device_get_count(&count); rc != 0)
    return refuse("cuDeviceGetCount failed: " + error_text(*api, rc), version);
  if (count <= 0) {
    if (hidden)
      return refuse(shown + " hides every CUDA device; unset it or name a device that exists",
                    version);
    return refuse("the CUDA driver sees no device", version);
  }
  Probe p;
  p.usable = true;
  p.driver_version = version;
  for (int i = 0; i < count; ++i) {
    int dev = 0;
    if (const int rc = api->device_get(&dev, i); rc != 0)
      return refuse("cuDeviceGet(" + std::to_string(i) + ") failed: " + error_text(*api, rc),
                    version);
    DeviceInfo d;
    d.ordinal = i;
    char name[256] = {};
    if (api->device_get_name(name, sizeof name - 1, dev) == 0) d.name = name;
    api->device_get_attribute(&d.major, kAttrMajor, dev);
    api->device_get_attribute(&d.minor, kAttrMinor, dev);
    p.devices.push_back(std::move(d));
  }
  return p;
}

Probe cuda_probe() {
  // The handle stays open (RTLD_NODELETE), as Driver::get keeps its own.
  void* h = dlopen("libcuda.so.1", RTLD_NOW | RTLD_LOCAL | RTLD_NODELETE);
  const char* visible = std::getenv("CUDA_VISIBLE_DEVICES");
  if (!h) {
    const char* err = dlerror();
    return probe_with(nullptr, err ? err : "not found", visible);
  }
  ProbeApi api;
  resolve(h, "cuInit", api.init);
  resolve(h, "cuDriverGetVersion", api.driver_get_version);
  resolve(h, "cuDeviceGetCount", api.device_get_count);
  resolve(h, "cuDeviceGet", api.device_get);
  resolve(h, "cuDeviceGetName", api.device_get_name);
  resolve(h, "cuDeviceGetAttribute", api.device_get_attribute);
  resolve(h, "cuGetErrorString", api.get_error_string);
  return probe_with(&api, {}, visible);
}

std::string cuda_arch(int major, int minor) {
  return "sm_" + std::to_string(major) + std::to_string(minor);
}

std::vector<std::string> nvrtc_candidates(const std::vector<std::string>& site_packages) {
  std::vector<std::string> dirs;
  for (const char* var : {"CUDA_PATH", "CUDA_HOME"})
    if (const char* v = std::getenv(var); v && *v) dirs.push_back(std::string(v) + "/lib64");
  dirs.emplace_back("/usr/local/cuda/lib64");
  for (const std::string& sp : site_packages) {
    dirs.push_back(sp + "/nvidia/cuda_nvrtc/lib");
    dirs.push_back(sp + "/nvidia/cu13/lib");
  }
  std::vector<std::string> files;
  for (const std::string& d : dirs)
    for (const char* name : {"libnvrtc.so.13", "libnvrtc.so.12", "libnvrtc.so"})
      files.push_back(d + "/" + name);
  return files;
}

}  // namespace raptor::runtime::cuda
