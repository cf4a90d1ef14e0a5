// Is a CUDA device usable here, and if not, exactly why? `cuda_probe()` answers without ever
// throwing: it loads libcuda.so.1 with dlopen (no link-time CUDA dependency), calls cuInit,
// counts the devices and describes each (name, compute capability), or gives the reason none
// can be used (no driver, cuInit's error, CUDA_VISIBLE_DEVICES hiding every device, zero
// devices). Start at `cuda_probe`; `probe_with` is the same logic over any driver entry points,
// which is how the tests cover every reason on a machine without a GPU.
//
// Also here: `cuda_arch` (the NVRTC target for a device) and `nvrtc_candidates` (where an
// NVRTC library may lie besides the loader path: the toolkit and the nvidia pip wheels).
#pragma once

#include <string>
#include <string_view>
#include <vector>

namespace raptor::runtime::cuda {

struct DeviceInfo {
  int ordinal = 0;
  std::string name;
  int major = 0;  // compute capability (CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR, 75)
  int minor = 0;  // (CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MINOR, 76)
};

struct Probe {
  bool usable = false;
  std::string reason;      // why not usable (empty when usable)
  int driver_version = 0;  // cuDriverGetVersion: 1000 * major + 10 * minor (0 when unknown)
  std::vector<DeviceInfo> devices;
};

// The driver entry points the probe needs, with the CUDA driver API's C signatures
// (CUresult and CUdevice are ints). A null member means the symbol is missing.
struct ProbeApi {
  int (*init)(unsigned) = nullptr;
  int (*driver_get_version)(int*) = nullptr;
  int (*device_get_count)(int*) = nullptr;
  int (*device_get)(int*, int) = nullptr;
  int (*device_get_name)(char*, int, int) = nullptr;
  int (*device_get_attribute)(int*, int, int) = nullptr;
  int (*get_error_string)(int, const char**) = nullptr;
};

// The probe over `api`; a null `api` means libcuda.so.1 could not be loaded, `load_error`
// says why (dlerror's text). `visible_devices` is $CUDA_VISIBLE_DEVICES (null when unset).
Probe probe_with(const ProbeApi* api, std::string_view load_error, const char* visible_devices);

// The probe of this process's driver (libcuda.so.1 through dlopen). Never throws.
Probe cuda_probe();

// "sm_XY" for a device of compute capability X.Y (the cubin target).
std::string cuda_arch(int major, int minor);

// Files an NVRTC library may be, besides the loader's own path, in the order to try:
// libnvrtc.so.13, .so.12 and .so in $CUDA_PATH/lib64, $CUDA_HOME/lib64, /usr/local/cuda/lib64,
// then for each Python site-packages directory given, in nvidia/cuda_nvrtc/lib and
// nvidia/cu13/lib (the nvidia-cuda-nvrtc wheels, where CuPy looks for them too).
std::vector<std::string> nvrtc_candidates(const std::vector<std::string>& site_packages);

}  // namespace raptor::runtime::cuda
