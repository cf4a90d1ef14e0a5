// Tests of the CUDA launch geometry (runtime/cuda_geometry.hpp), pure logic that needs no GPU:
// the grid depends only on the positions run and the table sizes, the block is the ABI's, and
// the scratch layout gives each sum slot a disjoint, aligned region big enough for one partial
// per block (ParamSum: grid x width, TableSum: grid x M x width doubles) within the bound the
// header documents.
#include <gtest/gtest.h>

#include <stdexcept>

#include "ad/adjoint.hpp"
#include "runtime/build.hpp"
#include "runtime/cuda_geometry.hpp"
#include "test_util_spec.hpp"

namespace raptor {
namespace {

using codegen::DType;
using runtime::cuda_geometry;
using runtime::CudaGeometry;
using runtime::kCudaMaxGrid;
using runtime::kNoPartials;
using namespace raptor::testing;

ir::Kernel drag() {
  return lowered(R"(def drag(v: Vector[3], cd: Param, v_next: Mutable[Vector[3]]):
    v_next = v - cd * norm(v) * v
)",
                 {Vector("v", 3), Param("cd"), MutVector("v_next", 3)}, 1);
}

ir::Kernel lookup() {
  return lowered(R"(def lookup(i: Scalar, w: Table[Vector[2]], y: Mutable[Scalar]):
    f = w.at(i)
    y = f[0] * f[1]
)",
                 {Scalar("i"), TableVector("w", 2), MutScalar("y")}, 1);
}

// Slot index of the first slot of `kind`.
size_t slot_of(const ir::Kernel& k, ir::SlotKind kind) {
  for (size_t s = 0; s < k.slots.size(); ++s)
    if (k.slots[s].kind == kind) return s;
  throw std::logic_error("no such slot");
}

TEST(RuntimeCudaGeometry, GridFollowsTheCountOnlyAndKernelsWithoutSumsNeedNoScratch) {
  const ir::Kernel k = drag();
  const auto e = runtime::describe_kernel(k, DType::F64);
  const std::vector<int64_t> sizes(k.slots.size(), 0);
  for (const auto& [count, grid] :
       std::vector<std::pair<int64_t, unsigned>>{{0, 0u},
                                                 {1, 1u},
                                                 {256, 1u},
                                                 {257, 2u},
                                                 {256 * 1024, 1024u},
                                                 {int64_t{1} << 24, 1024u}}) {
    const CudaGeometry g = cuda_geometry(e, count, sizes);
    EXPECT_EQ(g.grid, grid) << count << " positions";
    EXPECT_EQ(g.block, 256u);
    EXPECT_FALSE(g.finish);
    EXPECT_EQ(g.scratch_bytes, 0u);
    for (size_t off : g.partial_offset) EXPECT_EQ(off, kNoPartials);
  }
}

TEST(RuntimeCudaGeometry, ParamSumPartialsAreOnePerBlockAndComponent) {
  const ir::Kernel k = optimized(ad::adjoint(drag(), {"v", "cd"}));
  const auto e = runtime::describe_kernel(k, DType::F32);
  const size_t cd = slot_of(k, ir::SlotKind::ParamSum);
  const std::vector<int64_t> sizes(k.slots.size(), 0);
  const CudaGeometry g = cuda_geometry(e, 1000, sizes);
  EXPECT_EQ(g.grid, 4u);  // ceil(1000 / 256)
  EXPECT_TRUE(g.finish);
  EXPECT_GE(g.finish_grid, 1u);
  EXPECT_EQ(g.finish_block, 256u);
  EXPECT_EQ(g.partial_offset[cd], 0u);
  EXPECT_GE(g.scratch_bytes, size_t{4} * k.slots[cd].width * sizeof(double));
  EXPECT_EQ(g.scratch_bytes % 256, 0u);
  EXPECT_NE(runtime::cuda_partials_address(g, 0x10000, cd), 0u);
  EXPECT_EQ(runtime::cuda_partials_address(g, 0x10000, cd), 0x10000u + g.partial_offset[cd]);
  for (size_t s = 0; s < k.slots.size(); ++s)
    if (s != cd) EXPECT_EQ(runtime::cuda_partials_address(g, 0x10000, s), 0u) << "slot " << s;
  // Nothing to run: no launch of the kernel, but _finish still writes the (zero) sums.
  const CudaGeometry none = cuda_geometry(e, 0, sizes);
  EXPECT_EQ(none.grid, 0u);
  EXPECT_TRUE(none.finish);
  EXPECT_GE(none.finish_grid, 1u);
  // A smaller largest grid: the same rule under its cap, the partials sized by it.
  const CudaGeometry capped = cuda_geometry(e, 1 << 20, sizes, 16);
  EXPECT_EQ(capped.grid, 16u);
  EXPECT_LE(capped.finish_grid, 16u);
  EXPECT_EQ(capped.scratch_bytes, cuda_geometry(e, 16 * 256, sizes).scratch_bytes);
  EXPECT_EQ(cuda_geometry(e, 1 << 20, sizes).grid, kCudaMaxGrid);
  EXPECT_EQ(cuda_geometry(e, 1000, sizes, 16).grid, 4u);  // under the cap: the count's
  EXPECT_THROW(cuda_geometry(e, 1000, sizes, 0), std::invalid_argument);
}

TEST(RuntimeCudaGeometry, TableSumPartialsAreCappedByTheBudget) {
  const ir::Kernel k = optimized(ad::adjoint(lookup(), {"w"}));
  const auto e = runtime::describe_kernel(k, DType::F64);
  const size_t table = slot_of(k, ir::SlotKind::Table);
  const size_t sum = slot_of(k, ir::SlotKind::TableSum);
  ASSERT_EQ(k.slots[sum].width, 2);
  std::vector<int64_t> sizes(k.slots.size(), 0);
  const int64_t n = int64_t{1} << 24;

  sizes[table] = 1000;  // small: the grid is the count's
  CudaGeometry g = cuda_geometry(e, n, sizes);
  EXPECT_EQ(g.grid, kCudaMaxGrid);
  EXPECT_GE(g.scratch_bytes, size_t{kCudaMaxGrid} * 1000 * 2 * sizeof(double));

  sizes[table] = 1'000'000;  // 16 MB per block: 16 blocks fit in 256 MiB
  g = cuda_geometry(e, n, sizes);
  EXPECT_EQ(g.grid, static_cast<unsigned>(runtime::kCudaTableScratchBudget / (16'000'000)));
  EXPECT_LE(g.scratch_bytes, runtime::kCudaTableScratchBudget + 256);
  EXPECT_GE(g.scratch_bytes, size_t{g.grid} * 16'000'000);

  sizes[table] = 100'000'000;  // one block's table is over the budget: one block
  g = cuda_geometry(e, n, sizes);
  EXPECT_EQ(g.grid, 1u);
  EXPECT_GE(g.scratch_bytes, size_t{1'600'000'000});

  // A TableSum has its Table's M (the kernel reads that one): its own entry is not used.
  sizes[table] = 1'000'000;
  sizes[sum] = 10;
  EXPECT_EQ(cuda_geometry(e, n, sizes).grid, 16u);

  // Same inputs, same geometry: nothing else is read.
  EXPECT_EQ(cuda_geometry(e, n, sizes).scratch_bytes, cuda_geometry(e, n, sizes).scratch_bytes);
}

TEST(RuntimeCudaGeometry, RefusesTableSizesThatDoNotMatchTheSlots) {
  const ir::Kernel k = lookup();
  const auto e = runtime::describe_kernel(k, DType::F64);
  EXPECT_THROW(cuda_geometry(e, 10, {1, 2}), std::invalid_argument);
  std::vector<int64_t> sizes(k.slots.size(), 0);
  sizes[slot_of(k, ir::SlotKind::Table)] = -1;
  try {
    cuda_geometry(e, 10, sizes);
    FAIL() << "a negative table size was accepted";
  } catch (const std::invalid_argument& err) {
    EXPECT_NE(std::string(err.what()).find("lookup"), std::string::npos) << err.what();
    EXPECT_NE(std::string(err.what()).find("w"), std::string::npos) << err.what();
  }
}

}  // namespace
}  // namespace raptor
