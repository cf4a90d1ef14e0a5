// How a sum slot (ir::Slot::combine) folds one more contribution into its accumulator: the
// definition the interpreter and the host launcher use, and that the emitters repeat as the
// generated code's rp_fold_min / rp_fold_max (codegen/step_writer.cpp minmax_helpers). Min and max
// propagate NaN as NumPy's np.min / np.max do (the first NaN met is kept) and order -0.0 below
// +0.0, so they fold to the same bits in any order; their identities are +inf / -inf, the
// result of a launch in which no sample contributes.
#pragma once

#include <cmath>
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

}  // namespace raptor::ir
