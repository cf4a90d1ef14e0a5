// The typed, per-sample IR every stage after the parser works on. Start at `Kernel`.
//
// Shape of the IR (see docs/architecture.md):
// - A kernel runs once per sample. Its `body` is one *step*: straight-line SSA over scalar
//   values (vectors are split into components by the front end; `if` becomes `Select`;
//   `for range(K)` is unrolled up to 4096 iterations, longer loops are loop regions, see
//   Op::LoopBegin). Values are indices into `Kernel::values`; an operand always has a
//   smaller index than its user.
// - The interface is explicit: `slots` are the kernel's parameters (params, planes, mutable
//   planes, the mask, tables, and, for derived kernels, reduction outputs). Loads read a
//   slot; `Kernel::stores` say which value each output component ends the step with.
// - State carried across steps (`steps > 1`): a Mutable slot's components are read in the
//   body with `Op::LoadState`; at the end of a step the state becomes the stored value.
//   For the first step `LoadState` is the plane's old value (in-out planes) or 0.
// - The mask: a kernel with a Terminated slot skips samples whose mask is set;
//   `Kernel::terminate` is the bool value that, when true at the end of a step, finishes
//   the sample (the mask is set, `finished_count` grows, no further steps run).
// - Every value has a predicate `pred` (a Bool value, or -1 for "always"): the condition
//   under which its result is used. Selects make unused results harmless for the primal;
//   the predicate makes table bounds checks and adjoint contributions exact under `if`.
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <utility>
#include <vector>

namespace raptor::ir {

enum class Type : uint8_t {
  F,  // a float of the kernel's dtype (float or double)
  B,  // a bool
  I,  // an int64: a table index, or an integer plane's value (Add/Sub/Mul/Neg/Abs/Min/Max,
      // FloorDiv/Mod, comparisons and Select on I wrap around in two's complement)
};

enum class Op : uint8_t {
  // leaves
  Const,      // F: `imm`;  B: imm != 0;  I: `iimm`
  LoadParam,  // the slot's value_type (F, I or B): the value of param slot `slot`
  LoadPlane,  // (as LoadParam) component `comp` of input plane slot `slot` (Plane, or Mutable read
              // as input)
  LoadState,  // (as LoadParam) component `comp` of Mutable slot `slot` at the start of this step
  LoadMask,   // B: the mask's value at the start of the kernel (derived kernels read it)
  LoadTable,  // F: component `comp` of entry args[0] (I) of table slot `slot`; bounds-checked
              //    when `pred` holds
  // F -> F
  Neg,
  Sqrt,
  Exp,
  Log,
  Sin,
  Cos,
  Tan,
  Tanh,
  Abs,
  Floor,
  Sign,
  // F, F -> F
  Add,
  Sub,
  Mul,
  Div,
  Pow,
  Atan2,
  Min,
  Max,
  PowI,  // args[0] ** iimm, iimm a small integer (may be negative)
  // F, F -> B; also I, I -> B (exact int64 comparison)
  Lt,
  Le,
  Gt,
  Ge,
  Eq,
  Ne,
  // B -> B, B, B -> B
  Not,
  And,
  Or,
  // B, T, T -> T  (T any type)
  Select,
  // F -> I: a float table index rounded down (NaN, inf, huge: -1, out of range)
  ToIndex,
  // F: draw `comp` (j) of Random slot `slot` in step (the driver's step + iimm) of this
  //    sample: jax.random.uniform / normal of fold_in(fold_in(fold_in(key, s), i), j)
  //    (runtime/random.h). Pure: two draws are equal exactly when (slot, comp, iimm) are.
  RandUniform,
  RandNormal,
  // Custom derivatives (hawk.math.stop_gradient, @helper.defjvp; docs/language.md "Custom
  // derivatives"). Both are the identity on args[0] in every evaluation; only AD sees them.
  StopGrad,   // F -> F: args[0], derivative 0
  CustomJvp,  // F, F, F -> F: args[0], derivative d args[0] + args[2] * d args[1] (args[2]
              //  an ordinary value: a higher order differentiates it)
  // Integer planes (docs/language.md "Integer and bool planes"):
  // I, I -> I: Python's floor division and modulo (the sign of the divisor); a zero divisor
  //   is RAPTOR_ERR_INT_DIV_ZERO (abi.h) when `pred` holds, and gives 0
  FloorDiv,
  Mod,
  // I -> F: float(i), correctly rounded to the build's dtype
  ToFloat,
  // F -> I: int(x), truncated toward zero; NaN, inf or beyond int64 is
  //   RAPTOR_ERR_INT_CONVERSION when `pred` holds, and gives 0
  ToInt,
  // Loops (`for i in range(K)` with more iterations than the front end unrolls; docs/
  // architecture.md "Loops"). A loop is the values from a LoopBegin to its LoopEnd, run in
  // order up to K times per sample. Its values are visible only inside it (and in loops it
  // holds); what leaves it is a LoopResult.
  LoopBegin,   // B (a marker, no value): iimm = K >= 1, the most iterations
  LoopCarry,   // T: a value carried across iterations: args[0] its value entering the loop
               //    (defined before the LoopBegin), args[1] the LoopBegin
  LoopIndex,   // I: the iteration, 0 .. K-1; args[0] the LoopBegin
  LoopNext,    // T (a marker): args[0] a LoopCarry of this loop, args[1] its value in the next
               //    iteration (at most one LoopNext per carry; none: it keeps its entry value)
  LoopEnd,     // B (a marker): args[0] the LoopBegin, args[1] a B value: when it holds at the
               //    end of an iteration the loop is left (`break`)
  LoopResult,  // T: args[0] a LoopCarry, args[1] its LoopEnd: the carry's value after the loop
  // F: a draw inside a loop region, as RandUniform / RandNormal with j = args[0] + comp:
  //    args[0] (I) the run-time part of the index (the iteration times the draws one
  //    iteration makes, plus the draws before the loop), comp the draws before it in the
  //    iteration (lower_loop.cpp numbers them as unrolling would).
  RandUniformAt,
  RandNormalAt,
  // NumPy-named elementwise functions of hawk.math (ir/math_fns.hpp is their one table: name,
  // arity, how each target computes it; docs/language.md "NumPy's elementwise functions").
  // F -> F: the C library's function of the same name (Rint: nearbyint, round half to even)
  Asin,
  Acos,
  Atan,
  Sinh,
  Cosh,
  Asinh,
  Acosh,
  Atanh,
  Erf,
  Erfc,
  Exp2,
  Expm1,
  Log1p,
  Log2,
  Log10,
  Cbrt,
  Ceil,
  Rint,
  Trunc,
  // F -> B
  IsNan,
  IsInf,
  IsFinite,
  // F, F -> F: C's hypot, fmod, copysign, fdim; Remainder is np.remainder (the sign of the
  // divisor: fmod, plus the divisor where the signs differ, +-0 with the divisor's sign)
  Hypot,
  Fmod,
  Remainder,
  Copysign,
  Fdim,
  // F, F, F -> F: C's fma, a * b + c rounded once
  Fma,
  // The other jax.random distributions of a Random slot (docs/language.md "Random numbers";
  // runtime/random.h): draw j = args[0] (I, the run-time part: a Const 0 outside loop
  // regions, as RandUniformAt's inside) + comp of `slot` in step (the driver's step + iimm),
  // on that draw's subkey. The draw carries no derivative in its parameters except where
  // rules.cpp says (truncated_normal's bounds).
  RandGamma,        // F: jax.random.gamma(subkey, args[1])
  RandPoisson,      // I: jax.random.poisson(subkey, args[1] (F, as float32))
  RandInt,          // I: jax.random.randint(subkey, (), args[1], args[2], int32) (I bounds)
  RandTruncNormal,  // F: jax.random.truncated_normal(subkey, args[1], args[2])
  RandNormalVec,    // F: element `imm` (an integer >= 0) of jax.random.normal(subkey, (n,))
  // F, F -> F: d x / d a of a gamma sample x = args[1] of shape a = args[0] (jax's
  // lax.random_gamma_grad, runtime/random.h rp_gamma_grad): RandGamma's derivative in a.
  // Its own derivative is not defined (a second derivative in a treats it as a constant).
  RandGammaGrad,
  // I: hawk.math.sample_index(), the sample's global index (the launch's sample base plus its
  //    sample: a sharded launch numbers its samples as the whole launch would), and
  //    hawk.math.n_samples(), the samples of the whole launch (raptor_args::sample_base,
  //    n_total; docs/language.md "Sample index"). No operands, no derivative.
  SampleIndex,
  NSamples,
};

// The element type of a slot's buffer. Float slots have the build's dtype (float32 or
// float64); integer and bool planes keep their declared type in every build. Their values
// are I (int32 widened to int64; stores wrap to 32 bits) and B.
enum class Dtype : uint8_t { Float, Int32, Int64, Bool };

// "float", "int32", "int64", "bool".
const char* dtype_name(Dtype d);
// The IR type of a slot's values: F, I (Int32, Int64) or B.
Type value_type(Dtype d);

const char* op_name(Op op);
int op_arity(Op op);
// LoopBegin .. LoopResult.
bool is_loop_op(Op op);
// A draw from a Random slot (RandUniform .. RandNormalVec): numbered by (slot, comp, iimm).
bool is_draw(Op op);
// The type of an `op` value; `declared` is the type of a Const, or of a Select's choices.
Type result_type(Op op, Type declared);

struct Loc {
  int line = 0;  // in the user's file, 0 when unknown (generated)
  int col = 0;
  int file = 0;  // index into Kernel::files (0: the kernel's own file)
};

struct Value {
  Op op = Op::Const;
  Type type = Type::F;
  int32_t args[3] = {-1, -1, -1};
  int32_t slot = -1;  // Load*: the slot index
  int32_t comp = 0;   // Load*: the component
  double imm = 0.0;   // Const F/B
  int64_t iimm = 0;   // Const I, PowI exponent
  int32_t pred = -1;  // Bool value under which this value is used; -1: always
  Loc loc;
  std::string name;  // the user's variable name, when this value was assigned to one
};

enum class SlotKind : uint8_t {
  Param,       // one float for all samples
  Plane,       // read-only plane, `width` components of N samples, layout (width, N)
  Mutable,     // written plane; `inout` when the old value is read
  Terminated,  // the bool mask plane (N,)
  Table,       // M entries of `width` components, shared by all samples, layout (M, width)
  ParamSum,    // a float output summed over samples: a Param's cotangent (derived kernels) or
               //  a user's Mutable[Param] assigned hawk.sum(x, where=c) (its store's pred)
  TableSum,    // M x width floats summed over samples, the same M as table slot `table_of`:
               //  a Table's cotangent (derived kernels), or a user's scatter target
               //  `t: Mutable[Table[...]]` written `hawk.scatter(t)[i] += v`: then `inout`,
               //  `table_of` is the slot itself and the result is the bound values plus the sums
  Random,      // `rng: Random`: a key (uint32[2]) and the launch's sample base; read by
               //  the Rand* ops only; carries no derivative
};

// "param", "plane", "mutable", "terminated", "table", "param_sum", "table_sum" or "random".
const char* slot_kind_name(SlotKind k);

// How a ParamSum slot combines its samples' contributions (Slot::combine): added (hawk.sum,
// hawk.mean and every derived kernel's sums), or their minimum / maximum (hawk.min, hawk.max:
// NaN wins, as in NumPy; no contribution leaves +inf / -inf, the identities;
// docs/language.md "Minimum and maximum over samples"). ir/combine.hpp defines the step;
// the emitters write the same expression (rp_fold_min / rp_fold_max in the generated code).
enum class Combine : uint8_t { Sum, Min, Max };
const char* combine_name(Combine c);  // "sum", "min", "max"

struct Slot {
  std::string name;
  SlotKind kind = SlotKind::Plane;
  int width = 1;               // components: 1 for Scalar/Param, k for Vector[k]
  bool is_vector = false;      // written as Vector[k] (a (k, N) plane) rather than Scalar
  int rows = 0;                // Matrix[rows, width / rows] (a (r, c, N) plane, row-major
                               //  components comp = i * c + j); 0: not a matrix
  bool inout = false;          // Mutable: the kernel reads its old value; TableSum: a scatter
                               //  target, its bound values are added to (table_of = itself)
  int table_of = -1;           // TableSum: the Table slot whose size it has
  Dtype dtype = Dtype::Float;  // Param, Plane, Mutable: integer and bool planes
  Combine combine = Combine::Sum;  // ParamSum: added, or hawk.min / hawk.max (see Combine)
  // Derived kernels (ad/): what this slot is relative to the kernel it was derived from:
  // 'p' a primal slot, 't' a tangent, 'c' a cotangent, of that kernel's slot `primal`.
  // User kernels: 'p' and their own name. Not part of the kernel's meaning (nor its digest).
  char role = 'p';
  std::string primal;
};

// A value an output component ends the step with.
struct Store {
  int32_t slot = -1;  // Mutable, ParamSum or TableSum slot
  int32_t comp = 0;
  int32_t value = -1;  // value stored (added, for sums): of the slot's value_type
  int32_t index = -1;  // TableSum: the I value of the entry
  int32_t pred = -1;   // sums only: contribute only when this Bool value holds
  Loc loc;
};

struct Kernel {
  std::string name;
  std::string file;         // the user's file, for comments and messages
  int steps = 1;            // body runs this many times per sample per launch
  bool active_set = false;  // Guard(active_set=True)
  std::vector<Slot> slots;
  std::vector<Value> values;
  std::vector<Store> stores;  // each Mutable component exactly once; sums any number of times
  int32_t terminate = -1;     // Bool value: finish the sample at the end of this step; -1: never
  // Stage boundaries (docs/architecture.md "Stage boundaries"): each reduction whose value
  // the body reads. The body reads it as Param `param`, the value of ParamSum `sum` (a user's
  // Mutable[Param], or a hidden slot for `hawk.mean(x)` inside an expression). A kernel with
  // links is not built as one kernel: passes/stages.hpp splits it into stages run in order.
  struct StageLink {
    std::string sum;    // the ParamSum slot's name
    std::string param;  // the Param slot's name the later stage reads it as
    bool hidden = false;  // the sum is not a user's parameter (an expression's hawk.mean(x))
    int line = 0;         // where the reduction is, for messages
  };
  std::vector<StageLink> stage_links;

  // Where values came from, for comments in generated code: files[loc.file] and the text of
  // each (file, line) the front end lowered. Not part of the kernel's meaning or digest.
  std::vector<std::string> files;
  std::map<std::pair<int, int>, std::string> source_text;

  int add(Value v) {
    values.push_back(std::move(v));
    return static_cast<int>(values.size()) - 1;
  }
  int find_slot(const std::string& slot_name) const;
  bool has_mask() const;
  int random_slot() const;  // the Random slot, -1 when the kernel draws none
};

// Structural checks (operand order, types, slots, one store per Mutable component);
// throws std::logic_error naming the value: a failed check is a compiler bug.
void verify(const Kernel& k);

// Human-readable listing, one value per line: `%7 = mul %3, %5  ; v (drag.py:12)`.
std::string print(const Kernel& k);

// A stable text of everything that defines the kernel's behaviour (no locations or names),
// for digests.
std::string canonical(const Kernel& k);

}  // namespace raptor::ir
