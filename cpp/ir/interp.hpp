// The reference interpreter: the meaning of a Kernel, in double precision, one sample at a
// time. Tests of every stage (front end, passes, AD, codegen) compare against it. Start at
// `interpret`; `make_binding` sizes a binding for a kernel.
//
// Semantics (mirrors runtime/abi.h), per sample n:
// - A kernel with a Terminated slot skips a sample whose mask is set on entry: an in-out
//   Mutable's out becomes its in, a pure Mutable's out becomes 0 when `zero_finished`, else
//   it is left untouched; nothing else happens for that sample.
// - Otherwise the state of each Mutable component starts as its in value (in-out) or 0
//   (pure), and the body runs `steps` times: values in index order, then the stores (a
//   Mutable store sets the next state, a ParamSum/TableSum store adds its value when its
//   predicate holds, or folds it into `out` by min / max for a hawk.min / hawk.max slot,
//   ir/combine.hpp), then, if `terminate` is true, the mask is set, `finished` grows and
//   the sample stops stepping. At the end each Mutable's out is its final state.
// - Sums are added in a host launch's order (ir/combine.hpp): the samples in the launch's
//   chunks (sum_chunk_length of n and the sums' sizes); in a chunk a ParamSum's sample parts
//   (its contributions added from -0.0) go into lane n % 16, each lane in sample order, and a
//   TableSum's contributions into the chunk's table in sample order; the chunks' totals are
//   added in chunk order and then onto `out`. A compiled launch gives the same bits.
// - LoadMask is the mask at kernel start (false for a sample that runs). LoadPlane of an
//   in-out Mutable reads its `in`, not the state.
// - A table index outside [0, M) is an error (RAPTOR_ERR_TABLE_INDEX, the first one is
//   kept, the value read is 0, a sum store is skipped) when the value's or store's predicate
//   holds (or is -1); under a false predicate the index is clamped silently.
// - Operators follow jax.numpy: minimum/maximum propagate NaN, sign(0) = 0 (sign(-0) = -0),
//   PowI is binary exponentiation (lax.integer_pow's order), a negative exponent the
//   reciprocal; ToIndex is floor (a non-finite or huge value becomes index -1, an error).
// - RandUniform / RandNormal: runtime/random.h's draw of (rng_key, step + iimm, sample_base + n,
//   comp), step the step of the launch (0-based); in float32 mode the float32 draw.
// - SampleIndex is sample_base + n; NSamples is n_total (n when it is -1).
// - Integer and bool planes (Slot::dtype): I values are int64 (passes::eval_int: wrapping,
//   Python's floor division and modulo); an int32 store keeps the low 32 bits; a zero divisor
//   or int() of NaN/inf/beyond int64 is RAPTOR_ERR_INT_DIV_ZERO / RAPTOR_ERR_INT_CONVERSION
//   (error[1] = the value's line) when the value's predicate holds, and gives 0. The binding
//   holds their data as doubles, exact for ints within +-2**53.
// - `float32` mode computes as a float32 build does: constants, Params and loads rounded to
//   float, every operator in float arithmetic with the C library's float functions (sinf),
//   the sums still added in double. The differential tests compare builds with it bitwise.
// - `perturb_ulps` (0: off) moves the result of every operator computed without a
//   correct-rounding guarantee (exp, log, sin, cos, tan, tanh, pow, atan2, and
//   ir/math_fns.hpp's `Libm` and `Own` functions: asin .. cbrt, hypot) by that
//   many units in the last place of the dtype (toward +inf when positive): how far a kernel's
//   outputs move when those are off by that much. A build may differ there: GCC folds such a
//   call with constant arguments correctly rounded (MPFR) where the library is 1 ulp off.
//   `perturb_products` also moves every float product (Mul) by 1 to 16 ulps, up or down, by
//   a hash of the value's place in the kernel and of perturb_ulps' sign: a model of a
//   compiler that contracts a * b + c into one FMA (XLA:CPU does, so the JAX bridge's "xla"
//   lowering does): the products a*b and b*a that IEEE rounding cancels exactly move apart.
#pragma once

#include <cstdint>
#include <vector>

#include "ir/ir.hpp"

namespace raptor::ir {

// The data of one slot.
// - Param: in = `width` values (1 for user params).
// - Plane, in-out Mutable: in = width*N values, layout (width, N): component c of sample n at
//   c*N + n. Mutable: out = width*N values, same layout (separate from in, as with the JAX
//   bridge; the runtime passes in == out).
// - Table: in = M*width values, layout (M, width): entry i component c at i*width + c.
// - ParamSum: out = width values; TableSum: out = M*width values (M of its table); both are
//   accumulated (+=; min / max for a Slot::combine other than Sum, which make_binding starts
//   at +inf / -inf), never cleared. A scatter target (an in-out TableSum, a user's
//   Mutable[Table]: `hawk.scatter(t)[i] += v`) is its own table: in = its bound M*width values
//   (M read from it), out = in plus the contributions (the caller starts out as a copy of in).
// - Terminated: unused (see InterpBinding::mask). Random: unused (InterpBinding::rng_key).
// - sum_abs (ParamSum, TableSum): the sum of |contribution|, sized like out: the scale of the
//   rounding error of a sum added in another order (the JAX bridge's "xla" lowering, XLA's).
struct InterpSlot {
  std::vector<double> in;
  std::vector<double> out;
  std::vector<double> sum_abs;
};

struct InterpBinding {
  int64_t n = 0;
  std::vector<InterpSlot> slots;    // one per kernel slot
  std::vector<uint8_t> mask;        // the Terminated plane (n bytes), updated in place
  bool zero_finished = false;       // skipped samples: write 0 into pure outputs
  bool float32 = false;             // evaluate in float arithmetic (see the header comment)
  int perturb_ulps = 0;             // move inexact library results (see the header comment)
  bool perturb_products = false;    // with perturb_ulps: move products too (header comment)
  uint32_t rng_key[2] = {0, 0};     // the Random slot's key (jax.random.key_data)
  int64_t sample_base = 0;          // the global index of sample 0 (draws and SampleIndex
                                    //  use base + n)
  int64_t n_total = -1;             // NSamples: the whole launch's samples; -1: n
  uint32_t finished = 0;            // out: samples finished by this call (added to)
  int64_t error[4] = {0, 0, 0, 0};  // first error: code, slot, index, sample (runtime/abi.h)
  // Tracing (kernel.trace): when not empty, the results of these values after each step of
  // each sample go to trace_out, layout (sample, step, value) over n x steps x size; a step
  // a sample did not run (finished before, or skipped by its mask) stays NaN. Bools are 0/1.
  std::vector<int32_t> trace_values;
  std::vector<double> trace_out;
};

// A binding with every vector sized for `n` samples and `table_entries` entries per table,
// all zero (mask all false).
InterpBinding make_binding(const Kernel& k, int64_t n, int64_t table_entries = 1);

// Runs `k` on every sample of `b`. Throws std::invalid_argument when a vector of `b` has the
// wrong size for the kernel.
void interpret(const Kernel& k, InterpBinding& b);

}  // namespace raptor::ir
