// The device-independent parts of CUDA launches (runtime/cuda_bound.hpp): the by-value
// argument struct built from a binding, the grid size, the status word decoded, and a
// CudaBound refused when there is no driver. Launching needs a GPU (tests/test_gpu.py).
#include <gtest/gtest.h>

#include <cstdint>
#include <stdexcept>
#include <string>

#include "ad/adjoint.hpp"
#include "runtime/build.hpp"
#include "runtime/cuda_bound.hpp"
#include "runtime/cuda_driver.hpp"
#include "test_util_spec.hpp"

namespace {

using namespace raptor;
using raptor::testing::lowered;
using raptor::testing::MutScalar;
using raptor::testing::optimized;
using raptor::testing::Param;
using raptor::testing::Scalar;
using raptor::testing::TableScalar;

// A fake device address per slot and direction, distinct and recognizable.
const void* addr(uintptr_t v) { return reinterpret_cast<const void*>(v); }

TEST(RuntimeCudaBound, ArgsCarryEverySlotsPointers) {
  const ir::Kernel k =
      lowered(R"(def table(i: Scalar, a: Param, w: Table[Scalar], y: Mutable[Scalar]):
    y = w.at(i) * a + y
)",
              {Scalar("i"), Param("a"), TableScalar("w"), MutScalar("y")});
  const runtime::KernelEntry e = runtime::describe_kernel(k, codegen::DType::F32);
  ASSERT_EQ(e.num_slots(), 4u);
  runtime::Binding b;
  b.n = 1000;
  b.slots.resize(4);
  b.slots[0].in = addr(0x1000);
  b.slots[2].in = addr(0x3000);
  b.slots[2].table_size = 17;
  b.slots[3].in = addr(0x4000);
  b.slots[3].out = const_cast<void*>(addr(0x4000));
  std::vector<const void*> params = {nullptr, addr(0x2000), nullptr, nullptr};
  auto* status = reinterpret_cast<unsigned long long*>(0x9000);
  const auto a = runtime::make_cuda_args(e, b, params, status);
  EXPECT_EQ(a.n, 1000);
  EXPECT_EQ(a.count, 1000);  // count -1: every sample
  EXPECT_EQ(a.index, nullptr);
  EXPECT_EQ(a.in[0], addr(0x1000));
  EXPECT_EQ(a.params[1], addr(0x2000));
  EXPECT_EQ(a.in[2], addr(0x3000));
  EXPECT_EQ(a.table_size[2], 17);
  EXPECT_EQ(a.in[3], a.out[3]);
  EXPECT_EQ(a.status, status);
  EXPECT_EQ(a.zero_finished, 0);
  for (int s = 0; s < 4; ++s) EXPECT_EQ(a.sums[s], nullptr);

  b.count = 10;
  b.zero_finished = true;
  const auto a2 = runtime::make_cuda_args(e, b, params, status);
  EXPECT_EQ(a2.count, 10);
  EXPECT_EQ(a2.zero_finished, 1);

  params.pop_back();
  EXPECT_THROW(runtime::make_cuda_args(e, b, params, status), std::invalid_argument);
}

TEST(RuntimeCudaBound, SumOutputsAreTheSumsPointers) {
  const ir::Kernel k = lowered(R"(def table(i: Scalar, w: Table[Scalar], y: Mutable[Scalar]):
    y = w.at(i) * 2.0
)",
                               {Scalar("i"), TableScalar("w"), MutScalar("y")});
  const ir::Kernel adj = optimized(ad::adjoint(k, {"w"}));
  const runtime::KernelEntry e = runtime::describe_kernel(adj, codegen::DType::F64);
  runtime::Binding b;
  b.n = 8;
  b.slots.resize(e.num_slots());
  std::vector<const void*> params(e.num_slots(), nullptr);
  int sums = 0;
  for (size_t s = 0; s < e.num_slots(); ++s) {
    b.slots[s].out = reinterpret_cast<void*>(0x100 * (s + 1));
    b.slots[s].in = addr(0x100 * (s + 1));
  }
  const auto a = runtime::make_cuda_args(e, b, params, nullptr);
  for (size_t s = 0; s < e.num_slots(); ++s) {
    const bool sum = e.kinds[s] == ir::SlotKind::TableSum || e.kinds[s] == ir::SlotKind::ParamSum;
    EXPECT_EQ(a.sums[s], sum ? b.slots[s].out : nullptr) << e.slot_name(static_cast<int>(s));
    sums += sum;
  }
  EXPECT_EQ(sums, 1);
}

TEST(RuntimeCudaBound, GridCoversEverySampleUpToTheGridLimit) {
  EXPECT_EQ(runtime::cuda_grid(0), 0u);
  EXPECT_EQ(runtime::cuda_grid(1), 1u);
  EXPECT_EQ(runtime::cuda_grid(256), 1u);
  EXPECT_EQ(runtime::cuda_grid(257), 2u);
  for (const int64_t n : {int64_t{1000}, int64_t{1} << 20, int64_t{1} << 24}) {
    const int64_t grid = runtime::cuda_grid(n);
    EXPECT_LE(grid, runtime::kCudaMaxGrid);
    // Grid-stride: grid * block threads visit every sample in ceil(n / (grid * block)) rounds.
    const int64_t threads = grid * runtime::kCudaBlock;
    EXPECT_TRUE(threads >= n || grid == runtime::kCudaMaxGrid) << n;
    EXPECT_LT((grid - 1) * int64_t{runtime::kCudaBlock}, n) << n;
  }
}

TEST(RuntimeCudaBound, StatusDecodesIntoALaunchResult) {
  const unsigned long long ok[6] = {5, 0, 0, 0, 0, 3};
  const runtime::LaunchResult r = runtime::decode_status(ok);
  EXPECT_TRUE(r.ok());
  EXPECT_EQ(r.finished, 5);
  EXPECT_EQ(r.steps_run, 3u);
  EXPECT_EQ(r.error_sample, -1);
  const unsigned long long bad[6] = {0, RAPTOR_ERR_TABLE_INDEX, 2, 99, 41, 1};
  const runtime::LaunchResult e = runtime::decode_status(bad);
  EXPECT_FALSE(e.ok());
  EXPECT_EQ(e.error_slot, 2);
  EXPECT_EQ(e.error_index, 99);
  EXPECT_EQ(e.error_sample, 41);
}

TEST(RuntimeCudaBound, NoDriverMeansNoBinding) {
  if (runtime::cuda::Driver::get()) GTEST_SKIP() << "a CUDA driver is loaded here";
  const ir::Kernel k =
      lowered("def f(x: Scalar, y: Mutable[Scalar]):\n    y = x\n", {Scalar("x"), MutScalar("y")});
  auto e = runtime::describe_kernel(k, codegen::DType::F64);
  auto kernel = std::make_shared<const runtime::CudaKernel>(e, "", e.symbol);
  runtime::Binding b;
  b.slots.resize(2);
  try {
    runtime::CudaBound bound(kernel, b, {nullptr, nullptr}, 0);
    FAIL() << "bound without a driver";
  } catch (const std::runtime_error& err) {
    EXPECT_NE(std::string(err.what()).find("no CUDA driver"), std::string::npos) << err.what();
  }
}

}  // namespace
