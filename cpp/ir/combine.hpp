// How a sum slot (ir::Slot::combine) folds one more contribution into its accumulator: the
// definition the interpreter and the host launcher use, and that the emitters repeat as the
// generated code's rp_fold_min / rp_fold_max (codegen/step_writer.cpp minmax_helpers). Min and max
// propagate NaN as NumPy's np.min / np.max do (the first NaN met is kept) and order -0.0 below
// +0.0, so they fold to the same bits in any order; their identities are +inf / -inf, the
// result of a launch in which no sample contributes.
//
// Then the order in which a launch adds a sum (docs/language.md "Sums over samples"): its
// chunks (sum_chunk_length), in a chunk kSumLanes lanes for a Param's sum (sample s into lane
// s % 16, each lane in sample order from -0.0; lanes_total's tree) and sample order for a
// Table's, the chunks' partials (0.0 plus the chunk's) added in chunk order onto 0.0. The
// launcher cuts the chunks (runtime/launch.cpp), the generated host code adds the lanes
// (codegen/host_driver.cpp's rp_lanes, which repeats lanes_total), and the interpreter
// (ir/interp.cpp) does all of it, so it equals a launch bit for bit.
#pragma once

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <limits>

#include "ir/ir.hpp"

namespace raptor::ir {

// The value of an accumulator before any contribution.
constexpr double combine_identity(Combine c) {
  switch (c) {
    case Combine::Min:
      return std::numeric_limits<double>::infinity();
    case Combine::Max:
      return -std::numeric_limits<double>::infinity();
    case Combine::Sum:
      break;
  }
  return 0.0;
}

// `acc` with `x` folded in. Min: a NaN acc stays, else a NaN x wins, else the lesser, -0.0
// below +0.0 (as hawk.math.minimum): so a fold is the same whatever the order of its
// contributions (but for which NaN's payload), and a SIMD loop may fold lanes apart.
inline double combine_step(Combine c, double acc, double x) {
  switch (c) {
    case Combine::Min:
      return acc != acc ? acc
             : x != x   ? x
             : x == acc ? (std::signbit(x) ? x : acc)
                        : (x < acc ? x : acc);
    case Combine::Max:
      return acc != acc ? acc
             : x != x   ? x
             : x == acc ? (std::signbit(x) ? acc : x)
                        : (x > acc ? x : acc);
    case Combine::Sum:
      break;
  }
  return acc + x;
}

// The samples of each chunk of a launch of `count` samples whose sums have `sum_entries`
// elements in all: at most 16 chunks, of at least 4096 samples and at least as many samples as
// sum elements (clearing and combining a chunk's partials never costs more than running it),
// a multiple of 64. It depends on the launch alone: the same chunks on any thread count.
constexpr int64_t kSumChunks = 16;
constexpr int64_t kSumChunkMin = 4096;
constexpr int64_t kSumChunkAlign = 64;
inline int64_t sum_chunk_length(int64_t count, int64_t sum_entries) {
  const int64_t len = std::max({kSumChunkMin, (count + kSumChunks - 1) / kSumChunks, sum_entries});
  return (len + kSumChunkAlign - 1) / kSumChunkAlign * kSumChunkAlign;
}

// A Param's sum over a chunk's samples: kSumLanes lanes, sample s into lane s % kSumLanes.
constexpr int kSumLanes = 16;

// Whether slot `s` adds in those lanes: a ParamSum of Combine::Sum (hawk.sum, hawk.mean, a
// Param's cotangent); a Table's sum adds in sample order, hawk.min / hawk.max fold in any.
inline bool is_lane_sum(const Slot& s) {
  return s.kind == SlotKind::ParamSum && s.combine == Combine::Sum;
}

// The lanes' total in a fixed tree: lane j + 8 into lane j, then j + 4, j + 2, j + 1.
inline double lanes_total(const double* lanes) {
  double t[kSumLanes];
  std::copy(lanes, lanes + kSumLanes, t);
  for (int w = kSumLanes / 2; w >= 1; w /= 2)
    for (int j = 0; j < w; ++j) t[j] += t[j + w];
  return t[0];
}

}  // namespace raptor::ir
