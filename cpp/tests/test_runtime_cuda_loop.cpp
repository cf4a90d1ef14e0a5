// The GPU stepping loop (runtime/cuda_loop.hpp) on a machine without a GPU: it refuses to be
// made without the driver, and the stop test it compiles is accepted by NVRTC for the
// architecture CudaLoop builds it for. Running it needs a GPU (tests/test_gpu.py).
#include <gtest/gtest.h>

#include <stdexcept>
#include <string>

#include "runtime/cuda_build.hpp"
#include "runtime/cuda_driver.hpp"
#include "runtime/cuda_loop.hpp"
#include "runtime/cuda_loop_kernels.hpp"
#include "runtime/nvrtc.hpp"

namespace {

using namespace raptor::runtime;

TEST(RuntimeCudaLoop, NeedsTheDriver) {
  if (cuda::Driver::get()) GTEST_SKIP() << "a CUDA driver is loaded here";
  try {
    CudaLoop loop({}, 0, 16, true);
    FAIL() << "made without a driver";
  } catch (const std::runtime_error& e) {
    EXPECT_NE(std::string(e.what()).find("CUDA driver"), std::string::npos) << e.what();
  }
}

TEST(RuntimeCudaLoop, StopTestCompilesForTheLoopsArch) {
  const auto nvrtc = Nvrtc::open();
  if (!nvrtc) GTEST_SKIP() << "NVRTC not found";
  const std::string ptx =
      nvrtc->compile_ptx(loop_stop_source(LoopStopVariant::Batched), "stop.cu", kCudaArch);
  EXPECT_NE(ptx.find(kLoopStopSymbol), std::string::npos);
}

}  // namespace
