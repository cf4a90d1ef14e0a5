// How a generated CUDA kernel is launched (runtime/abi_cuda.h): its grid, its block, and the
// scratch buffer of block partials its deterministic sums need, as a pure function of the
// kernel's slots, the positions the launch runs and the tables' sizes. Never of the device:
// the grid fixes the order in which sums are added, so the same call gives the same bits on
// every run and every GPU. Used by whoever launches CUDA kernels (ffi/xla_handler_cuda.cpp,
// runtime/cuda_bound). Start at `cuda_geometry`.
//
// Scratch layout (doubles, each slot's region aligned to 256 bytes, in slot order):
//  - ParamSum slot, width W:       grid x W             (block-major: [b * W + c])
//  - TableSum slot, M entries, W:  grid x M x W         (block-major: [(b * M + e) * W + c])
// Memory bound of the TableSum partials: the grid is capped so that all TableSum partials
// together take at most kCudaTableScratchBudget (256 MiB), except that one block always
// runs: a launch whose tables alone exceed the budget gets grid 1 and grid x M x W x 8 bytes
// = M x W x 8 bytes per TableSum slot (the size of the table of sums in double). ParamSum
// partials take at most kCudaMaxGrid x W x 8 bytes (8 KiB per component).
#pragma once

#include <cstddef>
#include <cstdint>
#include <vector>

#include "runtime/launch.hpp"

namespace raptor::runtime {

// The most blocks of one launch (enough to fill any current GPU with 256-thread blocks).
inline constexpr unsigned kCudaMaxGrid = 1024;
// Threads per block of the finish kernel (any value works; it strides over its work).
inline constexpr unsigned kCudaFinishBlock = 256;
// The most scratch bytes the TableSum partials of one launch take (above: see the header).
inline constexpr size_t kCudaTableScratchBudget = size_t{256} << 20;
// A slot without partials in the scratch buffer.
inline constexpr size_t kNoPartials = static_cast<size_t>(-1);

struct CudaGeometry {
  unsigned grid = 0;                   // blocks of <symbol>; 0 when there is nothing to run
  unsigned block = 0;                  // RAPTOR_CUDA_BLOCK, always
  bool finish = false;                 // the kernel has sums: launch <symbol>_finish after it
  unsigned finish_grid = 0;            // blocks of <symbol>_finish (at least 1 when finish)
  unsigned finish_block = 0;           // threads per block of <symbol>_finish
  size_t scratch_bytes = 0;            // the scratch buffer's size (0: none needed)
  std::vector<size_t> partial_offset;  // per slot: byte offset of its partials, or kNoPartials
};

// The geometry of one launch of `e` over `count` positions. `table_sizes` holds, per slot,
// the entries M of a Table slot (as SlotBinding::table_size; a TableSum has its Table's M,
// which the kernel reads too, so its own entry is not used). `max_grid` caps the blocks of
// the launch and of its finish kernel (launchers keep kCudaMaxGrid; the CUDA emulation test
// takes a small one to reach samples beyond a full grid without a quarter million OS threads'
// rounds). Throws std::invalid_argument when table_sizes does not have one entry per slot, a
// size is negative or max_grid is 0.
CudaGeometry cuda_geometry(const KernelEntry& e, int64_t count,
                           const std::vector<int64_t>& table_sizes,
                           unsigned max_grid = kCudaMaxGrid);

// The device address of slot `slot`'s partials in a scratch buffer at `scratch`, or 0.
unsigned long long cuda_partials_address(const CudaGeometry& g, unsigned long long scratch,
                                         size_t slot);

}  // namespace raptor::runtime
