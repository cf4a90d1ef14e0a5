// How a sum slot (ir::Slot::combine) folds one more contribution into its accumulator: the
// definition the interpreter and the host launcher use, and that the emitters repeat as the
// generated code's rp_fold_min / rp_fold_max (codegen/step_writer.cpp minmax_helpers). Min and max
// propagate NaN as NumPy's np.min / np.max do (the first NaN met is kept), and keep the
// accumulator on a tie, so the earliest contribution wins; their identities are +inf / -inf,
// the result of a launch in which no sample contributes.
#pragma once

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

// `acc` with `x` folded in. Min: x when x < acc or x is NaN, else acc (a NaN acc stays).
constexpr double combine_step(Combine c, double acc, double x) {
  switch (c) {
    case Combine::Min:
      return (x < acc || x != x) ? x : acc;
    case Combine::Max:
      return (x > acc || x != x) ? x : acc;
    case Combine::Sum:
      break;
  }
  return acc + x;
}

}  // namespace raptor::ir
