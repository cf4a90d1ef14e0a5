// The CUDA device probe (runtime/cuda_device.hpp) over fake driver entry points: every reason a
// device is unusable, and the description of usable devices. The real probe runs too: on a
// machine without the NVIDIA driver it must say so. And the driver's entry points
// (runtime/cuda_driver.hpp) against the CUDA toolkit's stub libcuda.so, which exports them all.
#include <gtest/gtest.h>

#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <string>
#include <vector>

#include "runtime/cuda_device.hpp"
#include "runtime/cuda_driver.hpp"

namespace {

using raptor::runtime::cuda::Probe;
using raptor::runtime::cuda::probe_with;
using raptor::runtime::cuda::ProbeApi;

// What the fake driver answers (one test at a time; reset by each test's Fake).
struct FakeState {
  int init_rc = 0;
  int count = 0;
  int version = 13000;
};
FakeState fake;

int fake_init(unsigned) { return fake.init_rc; }
int fake_version(int* v) {
  *v = fake.version;
  return 0;
}
int fake_count(int* c) {
  *c = fake.count;
  return 0;
}
int fake_get(int* d, int i) {
  *d = 10 + i;
  return 0;
}
int fake_name(char* out, int len, int dev) {
  const std::string name = "Fake GPU " + std::to_string(dev);
  std::strncpy(out, name.c_str(), static_cast<size_t>(len));
  return 0;
}
int fake_attr(int* v, int attr, int dev) {
  *v = attr == 75 ? 8 + (dev - 10) : attr == 76 ? 6 : -1;
  return 0;
}
int fake_error(int rc, const char** text) {
  *text = rc == 100 ? "no CUDA-capable device is detected" : "an error";
  return 0;
}

ProbeApi fake_api(FakeState state) {
  fake = state;
  ProbeApi api;
  api.init = fake_init;
  api.driver_get_version = fake_version;
  api.device_get_count = fake_count;
  api.device_get = fake_get;
  api.device_get_name = fake_name;
  api.device_get_attribute = fake_attr;
  api.get_error_string = fake_error;
  return api;
}

TEST(RuntimeCudaDevice, NoDriverNamesLibcuda) {
  const Probe p = probe_with(nullptr, "libcuda.so.1: cannot open shared object file", nullptr);
  EXPECT_FALSE(p.usable);
  EXPECT_NE(p.reason.find("no CUDA driver"), std::string::npos) << p.reason;
  EXPECT_NE(p.reason.find("libcuda.so.1: cannot open shared object file"), std::string::npos);
  EXPECT_TRUE(p.devices.empty());
}

TEST(RuntimeCudaDevice, InitFailureGivesItsErrorText) {
  const ProbeApi api = fake_api({.init_rc = 999, .count = 1});
  const Probe p = probe_with(&api, {}, nullptr);
  EXPECT_FALSE(p.usable);
  EXPECT_NE(p.reason.find("cuInit failed: an error (CUresult 999)"), std::string::npos) << p.reason;
  EXPECT_EQ(p.driver_version, 13000);
}

TEST(RuntimeCudaDevice, VisibleDevicesHidingEveryDeviceIsShown) {
  const ProbeApi api = fake_api({.init_rc = 100, .count = 0});
  const Probe p = probe_with(&api, {}, "");
  EXPECT_FALSE(p.usable);
  EXPECT_NE(p.reason.find("CUDA_VISIBLE_DEVICES='' hides every CUDA device"), std::string::npos)
      << p.reason;
  const ProbeApi api2 = fake_api({.init_rc = 0, .count = 0});
  const Probe p2 = probe_with(&api2, {}, "7");
  EXPECT_NE(p2.reason.find("CUDA_VISIBLE_DEVICES='7' hides every CUDA device"), std::string::npos)
      << p2.reason;
}

TEST(RuntimeCudaDevice, NoDeviceWithoutVisibleDevicesIsCuInitsError) {
  const ProbeApi api = fake_api({.init_rc = 100, .count = 0});
  const Probe p = probe_with(&api, {}, nullptr);
  EXPECT_NE(p.reason.find("cuInit failed: no CUDA-capable device is detected"), std::string::npos)
      << p.reason;
  const ProbeApi api2 = fake_api({.init_rc = 0, .count = 0});
  EXPECT_EQ(probe_with(&api2, {}, nullptr).reason, "the CUDA driver sees no device");
}

TEST(RuntimeCudaDevice, UsableDevicesAreDescribed) {
  const ProbeApi api = fake_api({.init_rc = 0, .count = 2, .version = 13010});
  const Probe p = probe_with(&api, {}, "0,1");
  ASSERT_TRUE(p.usable) << p.reason;
  EXPECT_TRUE(p.reason.empty());
  EXPECT_EQ(p.driver_version, 13010);
  ASSERT_EQ(p.devices.size(), 2u);
  EXPECT_EQ(p.devices[0].name, "Fake GPU 10");
  EXPECT_EQ(p.devices[1].name, "Fake GPU 11");
  EXPECT_EQ(p.devices[0].major, 8);
  EXPECT_EQ(p.devices[1].major, 9);
  EXPECT_EQ(p.devices[1].minor, 6);
  EXPECT_EQ(p.devices[1].ordinal, 1);
}

TEST(RuntimeCudaDevice, MissingEntryPointsAreRefused) {
  ProbeApi api = fake_api({.count = 1});
  api.device_get_attribute = nullptr;
  const Probe p = probe_with(&api, {}, nullptr);
  EXPECT_FALSE(p.usable);
  EXPECT_NE(p.reason.find("cuDeviceGetAttribute"), std::string::npos) << p.reason;
}

TEST(RuntimeCudaDevice, RealProbeNeverThrowsAndExplainsItself) {
  const Probe p = raptor::runtime::cuda::cuda_probe();
  if (p.usable) {
    EXPECT_FALSE(p.devices.empty());
  } else {
    EXPECT_FALSE(p.reason.empty());
    EXPECT_TRUE(p.devices.empty());
  }
}

TEST(RuntimeCudaDevice, ArchAndNvrtcCandidates) {
  EXPECT_EQ(raptor::runtime::cuda::cuda_arch(9, 0), "sm_90");
  EXPECT_EQ(raptor::runtime::cuda::cuda_arch(12, 0), "sm_120");
  const auto c = raptor::runtime::cuda::nvrtc_candidates({"/sp"});
  ASSERT_GE(c.size(), 6u);
  EXPECT_EQ(c[c.size() - 6], "/sp/nvidia/cuda_nvrtc/lib/libnvrtc.so.13");
  EXPECT_EQ(c.back(), "/sp/nvidia/cu13/lib/libnvrtc.so");
}

// Every entry point the driver wrapper calls is exported under the name it resolves (a name
// it never resolved was a null function pointer on the GPU: cuMemAllocHost, whose first call
// from the CUDA XLA handler crashed). Checked against the toolkit's stub library: no GPU needed.
TEST(CudaDriver, EveryEntryPointIsExportedByLibcuda) {
  std::vector<std::string> stubs;
  if (const char* home = std::getenv("CUDA_HOME")) stubs.push_back(std::string(home) + "/lib64/stubs/libcuda.so");
  stubs.push_back("/usr/local/cuda/lib64/stubs/libcuda.so");
  for (const std::string& stub : stubs) {
    if (!std::filesystem::exists(stub)) continue;
    const std::vector<std::string> missing = raptor::runtime::cuda::Driver::missing_symbols(stub);
    std::string names;
    for (const std::string& m : missing) names += " " + m;
    EXPECT_TRUE(missing.empty()) << stub << " lacks:" << names;
    return;
  }
  GTEST_SKIP() << "no CUDA toolkit stub libcuda.so (CUDA_HOME, /usr/local/cuda)";
}

TEST(CudaDriver, AMissingLibraryIsSaid) {
  const auto missing = raptor::runtime::cuda::Driver::missing_symbols("/nonexistent/libcuda.so");
  ASSERT_EQ(missing.size(), 1u);
  EXPECT_EQ(missing[0].rfind("dlopen: ", 0), 0u) << missing[0];
}

}  // namespace
