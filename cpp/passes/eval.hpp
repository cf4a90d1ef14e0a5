// The scalar meaning of each IR operator, in double precision: one definition shared by
// constant folding (passes/optimize.cpp), the front end's folding of constant operands and the
// reference interpreter (which also has a float32 mode, `eval_op_f32`).
// Follows jax.numpy where C and NumPy differ: minimum/maximum propagate NaN and order signed
// zeros (min(-0, +0) = -0, max = +0), sign keeps the sign of zero.
#pragma once

#include <cstdint>

#include "ir/ir.hpp"

namespace raptor::passes {

// Applies `op` to `args` (bools as 0/1, indices as doubles). `iimm` is PowI's exponent.
double eval_op(ir::Op op, const double* args, int64_t iimm);

// The same in float arithmetic, as a float32 build computes it (the C library's float
// functions, e.g. sinf): the reference interpreter's float32 mode.
float eval_op_f32(ir::Op op, const float* args, int64_t iimm);

// A float table index as an entry number: rounded down; NaN, infinities and values beyond
// +-9e18 become -1 (out of range), never an undefined conversion.
int64_t to_index(double x);
int64_t to_index_f32(float x);  // the same, floor in float (a float32 build's rp_index)

// Whether eval_op can compute `op` from its operands alone (no loads).
bool foldable(ir::Op op);

}  // namespace raptor::passes
