// The scalar meaning of each IR operator, in double precision: one definition shared by
// constant folding (passes/optimize.cpp), the front end's folding of constant operands and the
// reference interpreter (which also has a float32 mode, `eval_op_f32`).
// Follows jax.numpy where C and NumPy differ: minimum/maximum propagate NaN and order signed
// zeros (min(-0, +0) = -0, max = +0), sign keeps the sign of zero. The NumPy-named functions
// (asin .. fma) are ir/math_fns.hpp's `eval_math`: the C library's, and remainder is NumPy's.
#pragma once

#include <cstdint>
#include <optional>

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

// The integer operators on I values (Add, Sub, Mul, Neg, Abs, Min, Max wrap around in two's
// complement as int64; FloorDiv and Mod floor as Python does; comparisons give 0/1).
// nullopt: a zero divisor (RAPTOR_ERR_INT_DIV_ZERO at run time) or an op with no int meaning.
std::optional<int64_t> eval_int(ir::Op op, const int64_t* args);
int64_t floordiv_i64(int64_t a, int64_t b);  // b != 0; INT64_MIN // -1 wraps to INT64_MIN
int64_t mod_i64(int64_t a, int64_t b);       // b != 0; the sign of b, as Python's %
// int(x): truncated toward zero; nullopt for NaN, infinities and values beyond int64
// (RAPTOR_ERR_INT_CONVERSION at run time).
std::optional<int64_t> to_int(double x);

// `op` (result type `t`, PowI exponent `iimm`) over constant operands `args` (Const values) as
// a Const value; nullopt when it cannot be folded exactly: a zero divisor or int() of NaN
// (left for run time, which reports it), float() of an int beyond 2**53 (the build's dtype
// rounds it once), int() of a float whose float32 value truncates differently.
// The one folding rule of the front end and of passes/optimize.
std::optional<ir::Value> fold_const(ir::Op op, ir::Type t, const ir::Value* const* args,
                                    int64_t iimm);

// Whether eval_op can compute `op` from its operands alone (no loads).
bool foldable(ir::Op op);

}  // namespace raptor::passes
