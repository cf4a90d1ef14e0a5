// The launch geometry of generated CUDA kernels (see cuda_geometry.hpp).
#include "runtime/cuda_geometry.hpp"

#include <algorithm>
#include <stdexcept>
#include <string>

#include "runtime/abi_cuda.h"

namespace raptor::runtime {

namespace {

constexpr size_t kAlign = 256;

size_t align_up(size_t x) { return (x + kAlign - 1) / kAlign * kAlign; }

// Entries M of TableSum slot s: its Table's, which is what the kernel reads
// (a->table_size[table_of], codegen/cuda_driver.cpp); its own only when it has no Table.
int64_t table_entries(const KernelEntry& e, const std::vector<int64_t>& sizes, size_t s) {
  const int t = e.iface.slot(s).table_of;
  return t >= 0 ? sizes[static_cast<size_t>(t)] : sizes[s];
}

}  // namespace

CudaGeometry cuda_geometry(const KernelEntry& e, int64_t count,
                           const std::vector<int64_t>& table_sizes, const unsigned max_grid) {
  if (max_grid == 0)
    throw std::invalid_argument("raptor: kernel '" + e.name + "': a launch needs max_grid >= 1");
  if (table_sizes.size() != e.num_slots())
    throw std::invalid_argument("raptor: kernel '" + e.name + "' has " +
                                std::to_string(e.num_slots()) + " slots but " +
                                std::to_string(table_sizes.size()) + " table sizes were given");
  for (size_t s = 0; s < table_sizes.size(); ++s)
    if (table_sizes[s] < 0)
      throw std::invalid_argument("raptor: kernel '" + e.name + "': table " +
                                  e.slot_name(static_cast<int>(s)) + " has a negative size");
  CudaGeometry g;
  g.block = RAPTOR_CUDA_BLOCK;
  g.finish_block = kCudaFinishBlock;
  g.partial_offset.assign(e.num_slots(), kNoPartials);

  // Doubles per block of each sum slot, and of all TableSum slots together.
  std::vector<size_t> per_block(e.num_slots(), 0);
  size_t table_per_block = 0, finish_items = 0;
  for (size_t s = 0; s < e.num_slots(); ++s) {
    const SlotInterface& slot = e.iface.slot(s);
    const size_t w = static_cast<size_t>(slot.width);
    if (slot.role == SlotRole::ParamSum) {
      per_block[s] = w;
      g.finish = true;
    } else if (slot.role == SlotRole::TableSum) {
      per_block[s] = static_cast<size_t>(table_entries(e, table_sizes, s)) * w;
      table_per_block += per_block[s];
      g.finish = true;
    }
    finish_items += per_block[s];
  }

  if (count > 0) {
    const int64_t blocks = (count + RAPTOR_CUDA_BLOCK - 1) / RAPTOR_CUDA_BLOCK;
    int64_t grid = std::min<int64_t>(blocks, max_grid);
    if (table_per_block > 0) {
      const int64_t fit = static_cast<int64_t>(kCudaTableScratchBudget / (table_per_block * 8));
      grid = std::max<int64_t>(1, std::min(grid, fit));
    }
    g.grid = static_cast<unsigned>(grid);
  }
  if (g.finish) {
    const size_t blocks = (finish_items + kCudaFinishBlock - 1) / kCudaFinishBlock;
    g.finish_grid = static_cast<unsigned>(std::clamp<size_t>(blocks, 1, max_grid));
  }
  // Partials for max(grid, 1) blocks: a slot's pointer is valid even when nothing runs.
  const size_t blocks = std::max<size_t>(g.grid, 1);
  size_t offset = 0;
  for (size_t s = 0; s < e.num_slots(); ++s) {
    if (!e.iface.slot(s).is_sum()) continue;
    g.partial_offset[s] = offset;
    offset = align_up(offset + blocks * per_block[s] * sizeof(double));
  }
  g.scratch_bytes = offset;
  return g;
}

unsigned long long cuda_partials_address(const CudaGeometry& g, unsigned long long scratch,
                                         size_t slot) {
  if (slot >= g.partial_offset.size() || g.partial_offset[slot] == kNoPartials || scratch == 0)
    return 0;
  return scratch + g.partial_offset[slot];
}

}  // namespace raptor::runtime
