// The device-independent parts of CUDA launches (runtime/cuda_bound.hpp): the by-value
// argument struct built from a binding and its geometry (runtime/cuda_geometry.hpp), the
// status word decoded, and a CudaBound refused when there is no driver. Launching needs a GPU
// (tests/test_gpu.py).
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
  const runtime::CudaGeometry g = runtime::cuda_geometry(e, b.n, runtime::table_sizes(b));
  const auto a = runtime::make_cuda_args(e, b, params, status, g, 0);
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
  EXPECT_EQ(a.grid, g.grid);
  EXPECT_GT(a.grid, 0u);
  for (int s = 0; s < 4; ++s) EXPECT_EQ(a.sums[s], nullptr);
  for (int s = 0; s < 4; ++s) EXPECT_EQ(a.partials[s], nullptr);

  b.count = 10;
  b.zero_finished = true;
  const auto a2 = runtime::make_cuda_args(e, b, params, status, g, 0);
  EXPECT_EQ(a2.count, 10);
  EXPECT_EQ(a2.zero_finished, 1);

  params.pop_back();
  EXPECT_THROW(runtime::make_cuda_args(e, b, params, status, g, 0), std::invalid_argument);
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
  for (size_t s = 0; s < e.num_slots(); ++s)
    if (e.iface.slot(s).role == runtime::SlotRole::Table) b.slots[s].table_size = 6;
  const runtime::CudaGeometry g = runtime::cuda_geometry(e, b.n, runtime::table_sizes(b));
  ASSERT_TRUE(g.finish);
  ASSERT_GT(g.scratch_bytes, 0u);
  const unsigned long long scratch = 0x100000;
  const auto a = runtime::make_cuda_args(e, b, params, nullptr, g, scratch);
  for (size_t s = 0; s < e.num_slots(); ++s) {
    const bool sum = e.iface.slot(s).is_sum();
    EXPECT_EQ(a.sums[s], sum ? b.slots[s].out : nullptr) << e.slot_name(static_cast<int>(s));
    // Each sum's partials lie inside the scratch buffer, at the geometry's offset.
    const auto p = reinterpret_cast<uintptr_t>(a.partials[s]);
    if (sum) {
      EXPECT_EQ(p, scratch + g.partial_offset[s]);
      EXPECT_LT(p, scratch + g.scratch_bytes);
    } else {
      EXPECT_EQ(p, 0u);
    }
    sums += sum;
  }
  EXPECT_EQ(sums, 1);
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
  auto kernel = std::make_shared<const runtime::CudaKernel>(e, "", e.symbol, "");
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
