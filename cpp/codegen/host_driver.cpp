// The host driver of the code generator: emit_cpp (see cpp_emitter.hpp). It writes, per
// (kernel, dtype), one extern "C" function following runtime/abi.h around the shared step
// (step_writer.hpp). Start at `HostWriter::write`: it declares the slots' pointers, then for
// steps == 1 writes one always-inline lambda for a sample called from a plain loop
// (vectorizable) or an index loop (active sets), and for steps > 1 either 64 lanes refilled
// with the chunk's next sample as samples finish (kernels that stop samples: refill_body) or
// blocks of 64 samples whose state lives in local arrays (blocked_body).
#include <algorithm>
#include <set>
#include <sstream>
#include <string>
#include <utility>
#include <vector>

#include "codegen/cpp_emitter.hpp"
#include "codegen/step_writer.hpp"
#include "ir/combine.hpp"
#include "ir/math_fns.hpp"
#include "passes/stages.hpp"
#include "runtime/abi_source.hpp"

namespace raptor::codegen {

using ir::SlotKind;

namespace {

const char* prelude_template();

// The RP_LIBM lines of hawk.math's NumPy-named library functions (ir/math_fns.hpp: each of one
// argument), four to a line.
std::string libm_wrappers() {
  std::string out;
  int on_line = 0;
  for (const ir::MathFn& f : ir::math_fns()) {
    if (f.kind != ir::MathKind::Libm) continue;
    const std::string n = f.name;
    out += (on_line ? " " : "") + std::string("RP_LIBM(") + n + ", " + n + ")";
    if (++on_line == 4) {
      out += "\n";
      on_line = 0;
    }
  }
  return on_line ? out + "\n" : out;
}

// The C declarations of those functions, double and float, two functions to a line.
std::string libm_declarations() {
  std::string out;
  for (const ir::MathFn& f : ir::math_fns()) {
    if (f.kind != ir::MathKind::Libm) continue;
    const std::string n = f.name;
    out += "double " + n + "(double) noexcept; float " + n + "f(float) noexcept;\n";
  }
  return out;
}

std::string replaced(std::string text, const std::string& key, const std::string& with) {
  return text.replace(text.find(key), key.size(), with);
}

const std::string& prelude() {
  static const std::string text = replaced(
      replaced(replaced(prelude_template(), "@MATH@", std::string(runtime::math_header_source())),
               "@LIBM@", libm_wrappers()),
      "@LIBM_DECLS@", libm_declarations());
  return text;
}

const char* prelude_template() {
  return R"(#include <stddef.h>
#include <stdint.h>
#include <type_traits>

#define RAPTOR_EXPORT extern "C" __attribute__((visibility("default")))

// The C library's functions these units call, declared here instead of by <cmath> or <math.h>,
// whose parse took half of a small kernel's compile (0.09 s of 0.2; the same machine code):
// the sqrt, fma, log, pow, lgamma, fabsf and floorf of rp_math.h and random.h, copysign of
// hawk.min / hawk.max over samples, and the functions of the RP_LIBM wrappers below. GCC knows
// each by its name.
extern "C" {
double sqrt(double) noexcept; float sqrtf(float) noexcept;
double fma(double, double, double) noexcept; float fmaf(float, float, float) noexcept;
double log(double) noexcept; float logf(float) noexcept;
double pow(double, double) noexcept; float powf(float, float) noexcept;
double lgamma(double) noexcept; float lgammaf(float) noexcept;
float fabsf(float) noexcept; float floorf(float) noexcept;
double copysign(double, double) noexcept;
@LIBM_DECLS@}
#define RP_LIBM_DECLARED 1
#define NAN (__builtin_nanf(""))
#define INFINITY (__builtin_inff())

// <cmath>'s overloads for the operations that are exact in IEEE arithmetic, which the kernels
// call as rp_c::sqrt(x) .. for float and double alike (HostWriter::math): GCC's builtins, which
// it vectorizes and folds exactly, as std:: does.
namespace rp_c {
#define RP_C1(fn)                                                       \
  inline double fn(double x) { return __builtin_##fn(x); }              \
  inline float fn(float x) { return __builtin_##fn##f(x); }
#define RP_C2(fn)                                                       \
  inline double fn(double x, double y) { return __builtin_##fn(x, y); } \
  inline float fn(float x, float y) { return __builtin_##fn##f(x, y); }
#define RP_CB(fn)                                                       \
  inline bool fn(double x) { return __builtin_##fn(x); }                \
  inline bool fn(float x) { return __builtin_##fn(x); }
RP_C1(sqrt) RP_C1(fabs) RP_C1(floor) RP_C1(ceil) RP_C1(rint) RP_C1(trunc)
RP_C2(fmod) RP_C2(copysign)
RP_CB(isnan) RP_CB(isinf) RP_CB(isfinite) RP_CB(signbit)
inline double fma(double x, double y, double z) { return __builtin_fma(x, y, z); }
inline float fma(float x, float y, float z) { return __builtin_fmaf(x, y, z); }
#undef RP_C1
#undef RP_C2
#undef RP_CB
}  // namespace rp_c

@MATH@

namespace {
// jax.numpy semantics where C differs: NaN propagates through minimum/maximum, which order
// signed zeros (min(-0, +0) = -0, max = +0); sign keeps the sign of zero.
template <class T> inline T rp_min(T a, T b) {
  return a != a ? a : (b != b ? b : (a == b ? (rp_c::signbit(a) ? a : b) : (b < a ? b : a)));
}
template <class T> inline T rp_max(T a, T b) {
  return a != a ? a : (b != b ? b : (a == b ? (rp_c::signbit(a) ? b : a) : (b > a ? b : a)));
}
template <class T> inline T rp_sign(T a) { return (a != a || a == T(0)) ? a : T((a > T(0)) - (a < T(0))); }
// A float index for Table.at(): rounded down; non-finite or huge values become -1 (out of range).
template <class T> inline int64_t rp_index(T a) {
  const T f = rp_c::floor(a);
  return (f >= T(-9.0e18) && f <= T(9.0e18)) ? static_cast<int64_t>(f) : int64_t(-1);
}
// The C library's transcendental functions, called, never evaluated by the compiler: GCC
// evaluates a call whose argument it can prove constant (after splitting a select, say)
// correctly rounded with MPFR, which can differ by 1 ulp from glibc's result, which the IR
// interpreter, the fold pass and every other build of the kernel get. noipa keeps each call a
// call (the compiler never sees into it); const lets it still treat the call as pure.
#define RP_LIBM(name, call)                                                   \
  template <class T> __attribute__((noipa, const)) T rp_##name(T x) {         \
    if constexpr (std::is_same_v<T, float>) return ::call##f(x);               \
    else return ::call(x);                                                     \
  }
@LIBM@#undef RP_LIBM
// exp, expm1, log, log1p and tanh are raptor's own (rp_math.h, above): no call, so a sample loop
// around them vectorizes; the interpreter and the fold pass compute the same functions. sin,
// cos and tan are too (rp_trig.h), atan, atan2, asin and acos (rp_atan.h), pow (rp_pow.h) and
// hypot (rp_hypot.h), pasted with their wrappers where a kernel calls them.
// always_inline: in a large unit GCC kept rp_tanh a call, which left that unit's sample loop
// scalar where a smaller unit's build of the same kernel vectorized it, and the two summed a
// hawk.sum in different orders (a staged kernel through the JAX bridge, 2 ulps from its launch).
// (rp_sin and rp_cos, pasted below where a kernel calls them, are RP_OWN too.)
#define RP_OWN inline __attribute__((always_inline))
template <class T> RP_OWN T rp_exp(T x) { return rp_math_exp(x); }
template <class T> RP_OWN T rp_expm1(T x) { return rp_math_expm1(x); }
template <class T> RP_OWN T rp_log(T x) { return rp_math_log(x); }
template <class T> RP_OWN T rp_log1p(T x) { return rp_math_log1p(x); }
template <class T> RP_OWN T rp_tanh(T x) { return rp_math_tanh(x); }
// np.remainder (the sign of the divisor, a zero with the divisor's sign) and C's fdim: the
// formulas of ir/math_fns.hpp, exact operations only.
template <class T> inline T rp_remainder(T a, T b) {
  const T r = rp_c::fmod(a, b);
  return r != T(0) ? (((r < T(0)) != (b < T(0))) ? r + b : r) : rp_c::copysign(T(0), b);
}
template <class T> inline T rp_fdim(T a, T b) { return a > b ? a - b : ((a != a || b != b) ? a + b : T(0)); }
#if defined(__x86_64__) && defined(__GNUC__) && !defined(__clang__)
#define RP_STREAM 1
// A launch larger than the cache (raptor_args::stream) writes pure outputs a block at a time:
// rp_stream copies a block's buffer into its plane row, whole 64-byte lines with non-temporal
// stores (no read of the line first), the partial lines at either end with plain stores.
typedef long long rp_v2di __attribute__((vector_size(16)));
typedef long long rp_v8di __attribute__((vector_size(64)));
inline void rp_stream(void* dst, const void* src, int64_t bytes) {
  char* const d = static_cast<char*>(dst);
  const char* const s = static_cast<const char*>(src);
  int64_t j = static_cast<int64_t>((64 - (reinterpret_cast<uintptr_t>(d) & 63)) & 63);
  if (j > bytes) j = bytes;
  __builtin_memcpy(d, s, static_cast<size_t>(j));
  for (; j + 64 <= bytes; j += 64) {
#if defined(__AVX512F__)
    rp_v8di v;
    __builtin_memcpy(&v, s + j, 64);
    __builtin_ia32_movntdq512(reinterpret_cast<rp_v8di*>(d + j), v);
#else
    for (int k = 0; k < 4; ++k) {
      rp_v2di v;
      __builtin_memcpy(&v, s + j + 16 * k, 16);
      __builtin_ia32_movntdq(reinterpret_cast<rp_v2di*>(d + j) + k, v);
    }
#endif
  }
  __builtin_memcpy(d + j, s + j, static_cast<size_t>(bytes - j));
}
// Called after every block whether the launch streams or not: a branch on `stream` in the
// loop over blocks would have GCC unswitch that loop and compile the step twice.
__attribute__((noinline)) void rp_flush(void* dst, const void* src, int64_t bytes, bool stream) {
  if (stream) rp_stream(dst, src, bytes);
}
#endif
// The refilled lanes whose flag is set (all ones: negative), bit j for lane j < w (w a
// multiple of 8, at most 64): with AVX, one sign-bit mask per 256-bit vector of flags.
#if defined(__x86_64__) && defined(__AVX__) && defined(__GNUC__)
typedef float rp_v8sf __attribute__((vector_size(32)));
typedef double rp_v4df __attribute__((vector_size(32)));
inline uint64_t rp_lanes_set(const int32_t* f, int w) {
  uint64_t set = 0;
  for (int g = 0; g < w; g += 8) {
    rp_v8sf v;
    __builtin_memcpy(&v, f + g, 32);
    set |= static_cast<uint64_t>(__builtin_ia32_movmskps256(v)) << g;
  }
  return set;
}
inline uint64_t rp_lanes_set(const int64_t* f, int w) {
  uint64_t set = 0;
  for (int g = 0; g < w; g += 4) {
    rp_v4df v;
    __builtin_memcpy(&v, f + g, 32);
    set |= static_cast<uint64_t>(__builtin_ia32_movmskpd256(v)) << g;
  }
  return set;
}
#else
template <class M> inline uint64_t rp_lanes_set(const M* f, int w) {
  uint64_t set = 0;
  for (int j = 0; j < w; ++j) set |= static_cast<uint64_t>(f[j] < 0) << j;
  return set;
}
#endif
// A lane index the vectorizer cannot see through (an empty asm that "changes" it): keeps a
// loop over listed lanes scalar, where GCC would otherwise store through scatters.
#if defined(__GNUC__)
#define RP_OPAQUE(j) __asm__("" : "+r"(j))
#else
#define RP_OPAQUE(j) (void)0
#endif
}  // namespace
// A kernel whose float64 arithmetic waits on square roots and divisions (HostWriter::
// divider_bound) prefers 256-bit vectors whatever the flags say, except on AMD Zen cores
// (GCC's -march=native names them __znverN__), which run 512-bit vectors at full clock.
#if defined(__x86_64__) && defined(__GNUC__) && !defined(__clang__) && \
    !(defined(__znver1__) || defined(__znver2__) || defined(__znver3__) || defined(__znver4__) || \
      defined(__znver5__))
#define RP_NARROW __attribute__((target("prefer-vector-width=256")))
#else
#define RP_NARROW
#endif
)";
}

class HostWriter : public detail::StepWriter {
 public:
  // `simd`: the values of this kernel that call raptor's own functions through their SIMD
  // clones (simd_calls).
  HostWriter(const ir::Kernel& k, DType dtype, std::string symbol, std::ostringstream& os,
             std::set<int> simd)
      : StepWriter(k, dtype, std::move(symbol), os), simd_(std::move(simd)) {}

  // Whether the step's float64 arithmetic per sample is bound by square roots and divisions:
  // each is ~16 cycles per vector of 8 doubles where the other operations take 0.5 (two
  // ports), so more than one per 32 other operations. Their units give the same doubles per
  // cycle with 256-bit vectors as with 512-bit ones (Intel's dividers are 256 bits wide or
  // narrower, Zen 4 splits 512-bit operations in two), and Intel cores lower their clock
  // while they run 512-bit floating-point work: the drag step (a norm: one square root per
  // 18 operations), 2^12-2^16 samples on the AVX-512 Xeon, ran 0.91-0.96x Numba's speed with
  // 512-bit vectors and 0.97-1.04x with 256-bit ones (peers.py, same session); the float32
  // step, with its faster square roots, was not faster (0.96-1.01x against 1.05-1.06x), and
  // the stepping kernels of the performance card (no root or division) were tuned with 512.
  // On Zen 4 the same drag step ran 13-35% faster at 2^12-2^18 samples with 512-bit vectors
  // than with 256 (fewer instructions for the same divider throughput, and no clock penalty),
  // so RP_NARROW is empty where GCC targets a Zen core (the preamble's #if).
  // Only values that differ between samples count (a Param's own arithmetic is done once).
  // Not for kernels with a mask: at 256 bits on an AVX-512 target GCC 12 leaves their masked
  // float64 sample loops scalar (the byte mask is not turned into a mask of 4 doubles).
  bool divider_bound() const {
    if (dtype_ != DType::F64 || k_.has_mask()) return false;
    int dividers = 0, others = 0;
    const std::vector<char> varies = per_sample_values();
    for (size_t i = 0; i < k_.values.size(); ++i) {
      const ir::Value& v = k_.values[i];
      if (!varies[i] || v.type != ir::Type::F) continue;
      switch (v.op) {
        case ir::Op::Sqrt:
        case ir::Op::Div: ++dividers; break;
        case ir::Op::Add:
        case ir::Op::Sub:
        case ir::Op::Mul:
        case ir::Op::Neg:
        case ir::Op::Abs:
        case ir::Op::Min:
        case ir::Op::Max:
        case ir::Op::Select: ++others; break;
        default: break;
      }
    }
    return dividers > 0 && 32 * dividers > others;
  }

  // Per value, whether it can differ between samples: a read of a plane, the state, the mask
  // or a table, a draw, or an operation on such a value. (Constants, Params, loop indices and
  // what is computed from them alone are the same for every sample.)
  std::vector<char> per_sample_values() const {
    std::vector<char> varies(k_.values.size(), 0);
    for (size_t i = 0; i < k_.values.size(); ++i) {
      const ir::Value& v = k_.values[i];
      switch (v.op) {
        case ir::Op::LoadPlane: case ir::Op::LoadState: case ir::Op::LoadMask:
        case ir::Op::LoadTable: case ir::Op::RandUniform: case ir::Op::RandNormal:
        case ir::Op::RandUniformAt: case ir::Op::RandNormalAt:
          varies[i] = 1;
          break;
        default:
          for (const int32_t a : v.args)  // a LoopNext's later operand is not looked at
            if (a >= 0 && static_cast<size_t>(a) < i && varies[static_cast<size_t>(a)]) varies[i] = 1;
          break;
      }
    }
    return varies;
  }

  void write() {
    header_comment();
    os_ << "RAPTOR_EXPORT " << (divider_bound() ? "RP_NARROW " : "") << "void " << symbol_
        << "(raptor_args* a) {\n";
    os_ << "  using T = " << detail::ctype_of(dtype_) << ";\n";
    os_ << "  const int64_t n = a->n;\n";
    declare_slots();
    os_ << "  uint32_t finished = 0;\n";
    if (k_.steps > 1) {
      os_ << "  int steps_run = 0;\n";
      // The most steps a sample runs in this call: the kernel's own, or fewer when the
      // caller says so (raptor_args::max_steps: a stepping loop's last launches).
      os_ << "  const int64_t budget = a->max_steps > 0 && a->max_steps < " << k_.steps
          << " ? a->max_steps : int64_t{" << k_.steps << "};\n";
    }
    os_ << "  int64_t err[4] = {0, 0, 0, 0};\n";
    os_ << "  (void)n;\n";
    if (k_.steps == 1) {
      if (streamable()) declare_destinations();
      sample_lambda();
      sample_loops();
    } else if (refill_period() > 0) {
      refill_body();
    } else {
      blocked_body();
    }
    for (const auto& sc : sum_components())
      if (fold_fn(sc.first).empty())
        os_ << "  sum_" << name(sc.first) << "[" << sc.second << "] += acc_" << sum_name(sc)
            << ";\n";
      else
        os_ << "  sum_" << name(sc.first) << "[" << sc.second << "] = "
            << folded(sc.first, "sum_" + name(sc.first) + "[" + std::to_string(sc.second) + "]",
                      "acc_" + sum_name(sc))
            << ";\n";
    os_ << "  a->finished = finished;\n";
    if (k_.steps > 1)
      os_ << "  a->steps_run = static_cast<uint32_t>(steps_run);\n";
    else
      os_ << "  a->steps_run = a->end > a->begin ? 1u : 0u;\n";
    os_ << "  for (int e = 0; e < 4; ++e) a->error[e] = err[e];\n";
    os_ << "}\n\n";
  }

 private:
  const std::set<int> simd_;
  bool parts_ = false;    // ParamSum contributions go to the sample lambda's parts
  bool refill_ = false;   // the step reads read-only planes from the lanes' local copies
  bool flipped_ = false;  // refilled lanes: the step reads the state's second copy (pp_)
  // Refilled lanes: per value, whether it is the same in every step of a sample (computed
  // from Params, constants and read-only planes only, outside loops, by a pure operation),
  // and whether it is computed once when a lane takes its sample (`iv_` arrays) and read in
  // the steps (lane_invariants).
  std::vector<char> invariant_, hoisted_;

  bool lane_value(int i, const std::string& indent) override {
    if (!refill_ || hoisted_.empty() || !hoisted_[static_cast<size_t>(i)]) return false;
    os_ << indent << "const T " << var(i) << " = iv_" << var(i) << "[j];  // once per sample\n";
    return true;
  }

  // Which values of the step are lane invariants worth a lane array: float values that are
  // not a constant, a Param or a plane read (those cost nothing or have their ld_ copy) and
  // that some value that changes from step to step, or a store, uses. Such a value is
  // computed when a lane takes its sample, with the same operations in the same order, so
  // the results are the same bits; the step reads it (2 zeta omega and omega^2 of a damped
  // oscillator's RK4: 2 of its 18 multiplications per step).
  void lane_invariants() {
    const size_t nv = k_.values.size();
    invariant_.assign(nv, 0);
    hoisted_.assign(nv, 0);
    int depth = 0;
    for (size_t i = 0; i < nv; ++i) {
      const ir::Value& v = k_.values[i];
      if (v.op == ir::Op::LoopBegin) ++depth;
      if (v.op == ir::Op::LoopEnd) --depth;
      if (depth > 0 || ir::is_loop_op(v.op)) continue;
      bool pure = false;
      switch (v.op) {
        case ir::Op::Const: case ir::Op::LoadParam: case ir::Op::LoadPlane:
        case ir::Op::Neg: case ir::Op::Sqrt: case ir::Op::Exp: case ir::Op::Log:
        case ir::Op::Sin: case ir::Op::Cos: case ir::Op::Tan: case ir::Op::Tanh:
        case ir::Op::Abs: case ir::Op::Floor: case ir::Op::Sign: case ir::Op::Add:
        case ir::Op::Sub: case ir::Op::Mul: case ir::Op::Div: case ir::Op::Pow:
        case ir::Op::Atan2: case ir::Op::Min: case ir::Op::Max: case ir::Op::PowI:
        case ir::Op::StopGrad: case ir::Op::CustomJvp:
          pure = v.type == ir::Type::F;
          break;
        default:
          pure = ir::math_fn(v.op) != nullptr && v.type == ir::Type::F;  // asin .. fma
          break;
      }
      if (!pure) continue;
      bool args_invariant = true;
      for (const int a : v.args)
        if (a >= 0 && !invariant_[static_cast<size_t>(a)]) args_invariant = false;
      invariant_[i] = args_invariant ? 1 : 0;
    }
    // Invariants of Params and constants alone are the same for every lane: the compiler
    // hoists those out of the lanes' loops itself. Only those that read a plane are hoisted.
    const std::vector<char> per_sample = per_sample_values();
    // Used by a value that is not invariant, or by a store: hoisted when it costs something.
    std::vector<char> used_by_variant(nv, 0);
    for (size_t i = 0; i < nv; ++i) {
      if (invariant_[i]) continue;
      const ir::Value& v = k_.values[i];
      for (const int a : v.args)
        if (a >= 0) used_by_variant[static_cast<size_t>(a)] = 1;
      if (v.pred >= 0) used_by_variant[static_cast<size_t>(v.pred)] = 1;
    }
    for (const ir::Store& st : k_.stores)
      for (const int a : {st.value, st.index, st.pred})
        if (a >= 0) used_by_variant[static_cast<size_t>(a)] = 1;
    for (size_t i = 0; i < nv; ++i) {
      const ir::Op op = k_.values[i].op;
      hoisted_[i] = invariant_[i] && per_sample[i] && used_by_variant[i] &&
                            op != ir::Op::Const &&
                            op != ir::Op::LoadParam && op != ir::Op::LoadPlane
                        ? 1
                        : 0;
    }
  }

  // In take(j): the lane invariants of the new sample (every invariant value up to the last
  // hoisted one, read from the planes), stored into the lanes' iv_ arrays.
  void take_lane_invariants(const std::string& indent) {
    int last_hoisted = -1;
    for (size_t i = 0; i < hoisted_.size(); ++i)
      if (hoisted_[i]) last_hoisted = static_cast<int>(i);
    if (last_hoisted < 0) return;
    ir::Loc last;
    for (int i = 0; i <= last_hoisted; ++i)
      if (invariant_[static_cast<size_t>(i)]) value(i, indent, last);
    for (int i = 0; i <= last_hoisted; ++i)
      if (hoisted_[static_cast<size_t>(i)])
        os_ << indent << "iv_" << var(i) << "[j] = " << var(i) << ";\n";
  }

  // Exact operations (sqrt, fabs, floor) stay builtins (the prelude's rp_c overloads), which GCC
  // vectorizes and folds exactly; library functions go through the prelude's rp_ wrappers.
  std::string math(const char* fn) const override {
    const std::string f = fn;
    const bool exact = f == "sqrt" || f == "fabs" || f == "floor";
    return (exact ? "rp_c::" : "rp_") + f;
  }
  std::string math_call(const ir::MathFn& f, int value) const override {
    if (f.kind == ir::MathKind::Exact) return "rp_c::" + std::string(f.name);
    return own(f.name, value);
  }
  // raptor's own functions: inlined (rp_<name>), or through the SIMD clone (rp_<name>_simd)
  // where the kernel calls the function often (simd_calls).
  std::string own(const char* fn, int value) const override {
    return "rp_" + std::string(fn) + (simd_.count(value) ? "_simd" : "");
  }
  std::string step_index() const override {
    return k_.steps == 1 ? "0u" : "static_cast<uint32_t>(step)";
  }
  std::string state(size_t slot, int comp) const override {
    return lane_state(slot, comp, flipped_);
  }
  // Lane j's copy of a Mutable's state: st_ (blocks, and refilled lanes between periods) or
  // the refilled lanes' second copy pp_.
  std::string lane_state(size_t slot, int comp, bool second) const {
    return lane_array(slot, comp, second) + "[j]";
  }
  // The lanes' array of that state: st_<name>_<comp> or pp_<name>_<comp>.
  std::string lane_array(size_t slot, int comp, bool second) const {
    return (second ? "pp_" : "st_") + name(slot) + "_" + std::to_string(comp);
  }
  // Lane j's copy chosen at run time by the bool expression `pp`: (pp ? pp_.. : st_..)[j].
  std::string lane_state_of(size_t slot, int comp, const std::string& pp) const {
    return "(" + pp + " ? " + lane_array(slot, comp, true) + " : " + lane_array(slot, comp, false) +
           ")[j]";
  }
  std::string input(size_t slot, int comp) const override {
    if (!refill_) return plane("in_", slot, comp);
    return "ld_" + name(slot) + "_" + std::to_string(comp) + "[j]";
  }
  std::string param_sum_accumulator(size_t slot, int comp) const override {
    return (parts_ ? "part_" : "acc_") + name(slot) + "_" + std::to_string(comp);
  }
  std::string param_declaration(size_t s) const override {
    const std::string p = "a->params[" + std::to_string(s) + "]";
    if (k_.slots[s].dtype == ir::Dtype::Bool)
      return "  const bool k_" + name(s) + " = " + p + " != 0.0;\n";
    return "  const " + value_ctype(s) + " k_" + name(s) + " = static_cast<" + value_ctype(s) +
           ">(" + p + ");\n";
  }
  // The launcher's double partials for this call.
  std::string sum_declaration(size_t s) const override {
    return "  double* const sum_" + name(s) + " = a->sums[" + std::to_string(s) + "];\n";
  }
  void table_sum(const ir::Store& st, const std::string& ix, const std::string& value,
                 const std::string& guard, const std::string& indent) override {
    const ir::Slot& sl = k_.slots[st.slot];
    const std::string nm = name(st.slot);
    const std::string entry =
        "sum_" + nm + "[" +
        (sl.width == 1 ? ix
                       : ix + " * " + std::to_string(sl.width) + " + " + std::to_string(st.comp)) +
        "]";
    os_ << indent << "if (" << guard << ") {\n";
    os_ << indent << "  if (" << ix << " >= 0 && " << ix << " < size_" << nm << ") " << entry
        << " += static_cast<double>(" << value << ");\n";
    os_ << indent << "  else if (err[0] == 0) " << table_error(sl.table_of, ix) << "\n";
    os_ << indent << "}\n";
  }

  // Whether the loops over samples may promise that iterations are independent. A TableSum
  // scatter-add breaks that promise: samples that read one entry add into one place, and a
  // loop vectorized on the promise (gather, add, scatter; AVX-512 has the instructions)
  // would keep one lane's contribution of those that collide. Such a kernel's loops get no
  // ivdep / simd pragma, so the scatter-adds run in sample order, as in the plain loop.
  bool independent_samples() const { return !has_slot(SlotKind::TableSum); }
  static constexpr const char* kNoPromise =
      "// no ivdep / omp simd: table sums scatter-add, samples may share an entry\n";

  // The pragma of a vectorizable sample loop: samples are independent (ivdep). Sums over
  // samples are not reduced by the vectorizer (its lanes would be the machine's vector width):
  // the loop stores each sample's contribution and rp_lanes_add adds them in 16 fixed lanes
  // (lane_sums()). hawk.min / hawk.max fold per lane by their own reductions (rp_min / rp_max,
  // declared with rp_fold_min / rp_fold_max, whose result is the same in any order).
  std::string simd_pragma() const {
    if (!independent_samples()) return kNoPromise;
    std::string mins, maxs;
    for (const auto& sc : sum_components()) {
      const std::string f = fold_fn(sc.first);
      if (f.empty()) continue;
      std::string& list = f == "rp_fold_min" ? mins : maxs;
      list += (list.empty() ? "" : ", ") + std::string("acc_") + sum_name(sc);
    }
    if (mins.empty() && maxs.empty()) return "#pragma GCC ivdep\n";
    std::string pragma = "#pragma omp simd";
    if (!mins.empty()) pragma += " reduction(rp_min: " + mins + ")";
    if (!maxs.empty()) pragma += " reduction(rp_max: " + maxs + ")";
    return pragma + "\n";
  }

  // The samples whose contributions a sample loop stores before rp_lanes_add adds them, for
  // `components` lane sums: 256 (the loop's own overhead then is small), fewer for many sums,
  // so that their buffers (pb_, on the stack) stay within 16 KB, and a multiple of 16.
  static int64_t sum_block(size_t components) {
    const int64_t fit = static_cast<int64_t>(2048 / std::max<size_t>(components, 1)) / 16 * 16;
    return std::clamp<int64_t>(fit, 16, 256);
  }

  // The components of sums (hawk.sum, hawk.mean, Param cotangents; not hawk.min / max), which
  // add in rp_lanes: ln_<name> (16 lanes) and pb_<name> (a block's contributions).
  std::vector<std::pair<size_t, int>> lane_sums() const {
    std::vector<std::pair<size_t, int>> out;
    for (const auto& sc : sum_components())
      if (ir::is_lane_sum(k_.slots[sc.first])) out.push_back(sc);
    return out;
  }

  // steps == 1: the per-sample lambda. With a mask it reads the zero_finished flag at run
  // time (see sample_loops); with sums over samples it returns the sample's parts,
  // which the loop stores for rp_lanes_add or folds (min / max): an accumulator the lambda
  // updated by reference would keep GCC from vectorizing the loop.
  void sample_lambda() {
    const auto parts = sum_components();
    if (!parts.empty()) {
      os_ << "  struct parts_t {";
      for (const auto& sc : parts) os_ << " double " << sum_name(sc) << ";";
      os_ << " };\n";
    }
    os_ << "  auto sample = [&](const int64_t s) __attribute__((always_inline))"
        << (parts.empty() ? "" : " -> parts_t") << " {\n";
    // -0.0, the identity of +: the sample's first contribution is taken as is (GCC folds
    // -0.0 + x to x, not 0.0 + x, which differs for x = -0.0) and the loop vectorizes better.
    for (const auto& sc : parts)
      os_ << "    double part_" << sum_name(sc) << " = "
          << (fold_fn(sc.first).empty() ? "-0.0" : fold_identity(sc.first)) << ";\n";
    parts_ = !parts.empty();
    sample_body();
    parts_ = false;
    if (!parts.empty()) {
      os_ << "    return {";
      for (size_t i = 0; i < parts.size(); ++i)
        os_ << (i ? ", " : "") << "part_" << sum_name(parts[i]);
      os_ << "};\n";
    }
    os_ << "  };\n";
  }

  // steps == 1: the sample loops, contiguous (vectorized) or through the active set's index
  // map. A mask's zero_finished flag is read at run time, in the sample's select (hold_kept),
  // not written as two copies of the loops: the sample body is inlined into every loop, and a
  // kernel of a few hundred operations took twice as long to compile with the loops written
  // once per value of the flag (a unit of test_differential's fuzz kernels: 210 s of CPU
  // against 105 s, AVX2 EPYC). Only pure outputs read the flag (hold_kept): a load and a select
  // per output component.
  //
  // Sums over samples (lane_sums) add in 16 lanes, sample s into lane s % 16 in the order the
  // loop meets them, then the lanes in rp_lanes_total's fixed tree: the contiguous loop stores
  // a block of sum_block() samples' contributions (pb_, from a multiple of 16, the samples
  // before the first one padded with -0.0) and rp_lanes_add adds the block into the lanes; the
  // index loop adds each sample's into its lane. The order depends on the samples alone, not
  // on the vector width GCC picks: the same bits on AVX-512, AVX2 and SSE2 builds, and
  // through an index map as contiguously (a finished sample contributes -0.0 or 0.0).
  void sample_loops() {
    const auto parts = sum_components();
    const auto lanes = lane_sums();
    auto call = [&](const std::string& sample_index, bool indexed) {
      if (parts.empty()) return "sample(" + sample_index + ");";
      std::string body = "{ const parts_t p = sample(" + sample_index + ");";
      for (const auto& sc : parts)
        body += !fold_fn(sc.first).empty()
                    ? " acc_" + sum_name(sc) + " = " +
                          folded(sc.first, "acc_" + sum_name(sc), "p." + sum_name(sc)) + ";"
                : indexed ? " rp_lanes_add1(ln_" + sum_name(sc) + ", " + sample_index +
                                " & 15, p." + sum_name(sc) + ");"
                          : " pb_" + sum_name(sc) + "[i - base] = p." + sum_name(sc) + ";";
      return body + " }";
    };
    // Bounds in locals: stores through the planes could alias *a as far as GCC knows.
    os_ << "  const int64_t begin = a->begin, end = a->end;\n";
    if (streamable()) return stream_loops();
    if (!lanes.empty())
      os_ << "  // sums over samples in 16 lanes (rp_lanes_add), a block of samples at a time\n"
          << "  constexpr int64_t sum_block = " << sum_block(lanes.size()) << ";\n";
    for (const auto& sc : lanes)
      os_ << "  rp_lanes ln_" << sum_name(sc) << " = rp_lanes_zero();\n"
          << "  alignas(64) double pb_" << sum_name(sc) << "[sum_block + 16];\n";
    os_ << "  if (a->index) {\n"
        << "    const int64_t* const index = a->index;\n"
        << "    for (int64_t i = begin; i < end; ++i) " << call("index[i]", true) << "\n"
        << "  } else {\n";
    if (lanes.empty()) {
      os_ << simd_pragma() << "    for (int64_t i = begin; i < end; ++i) " << call("i", false)
          << "\n";
    } else {
      os_ << "    for (int64_t i0 = begin; i0 < end;) {\n"
          << "      const int64_t base = i0 & ~int64_t{15};\n"
          << "      const int64_t i1 = end - base > sum_block ? base + sum_block : end;\n";
      for (const auto& sc : lanes)
        os_ << "      for (int64_t i = base; i < i0; ++i) pb_" << sum_name(sc)
            << "[i - base] = -0.0;\n";
      os_ << simd_pragma() << "      for (int64_t i = i0; i < i1; ++i) " << call("i", false)
          << "\n";
      for (const auto& sc : lanes)
        os_ << "      rp_lanes_add(ln_" << sum_name(sc) << ", pb_" << sum_name(sc)
            << ", i1 - base);\n";
      os_ << "      i0 = i1;\n"
          << "    }\n";
    }
    os_ << "  }\n";
    for (const auto& sc : lanes)
      os_ << "  acc_" << sum_name(sc) << " = rp_lanes_total(ln_" << sum_name(sc) << ");\n";
  }

  // Whether a launch larger than the cache writes this kernel's pure outputs (Mutable planes
  // not read) with non-temporal stores (stream_loops): one step, no mask (a finished sample's
  // outputs are read back), no sums over samples, no table scatter-adds, and an output to
  // stream. In-out planes are read first anyway and keep plain stores. Only kernels that can
  // be memory-bound: no loop regions and at most 8 values per plane component read or
  // written (the drag step has 27 for 6); a longer step would pay the block copies for a
  // store cost it hides behind its arithmetic.
  bool streamable() const {
    if (k_.steps != 1 || k_.has_mask() || !sum_components().empty() || !independent_samples())
      return false;
    size_t components = 0;
    bool pure_output = false;
    for (const ir::Slot& sl : k_.slots) {
      if (sl.kind == SlotKind::Plane) components += static_cast<size_t>(sl.width);
      if (sl.kind == SlotKind::Mutable) {
        components += static_cast<size_t>(sl.width) * (sl.inout ? 2 : 1);
        pure_output = pure_output || !sl.inout;
      }
    }
    for (const ir::Value& v : k_.values)
      if (ir::is_loop_op(v.op)) return false;
    return pure_output && k_.values.size() <= 8 * components;
  }

  // The sample loops of a streamable kernel. Its pure outputs are stored through pointers
  // (dst_<plane>_<c>[s - off]) that point either at the plane rows (off 0) or, when the launch
  // streams (abi.h: raptor_args::stream), at block buffers of 256 samples (off the block's
  // first sample) which rp_stream then copies out with non-temporal stores. One sample loop
  // serves both, so the step is compiled once. A store to a line not in cache reads the line
  // first; streamed, the drag step at 2^20-2^22 on two threads took 0.6-0.8 of the time
  // (docs/performance.md).
  void stream_loops() {
    std::vector<std::pair<size_t, int>> outs;
    for_each_mutable([&](size_t s, int c) {
      if (!k_.slots[s].inout) outs.emplace_back(s, c);
    });
    os_ << "  if (a->index) {\n";
    os_ << "    const int64_t* const index = a->index;\n";
    for (const auto& [s, c] : outs)
      os_ << "    " << destination(s, c) << " = " << row(s, c) << ";\n";
    os_ << "    for (int64_t i = begin; i < end; ++i) sample(index[i]);\n";
    os_ << "  } else {\n";
    os_ << "#if defined(RP_STREAM)\n";
    os_ << "    const bool stream = a->stream != 0;  // outputs past the cache, a block at a "
           "time\n";
    os_ << "#else\n";
    os_ << "    const bool stream = false;\n";
    os_ << "#endif\n";
    os_ << "    constexpr int64_t B = 256;\n";
    for (const auto& [s, c] : outs)
      os_ << "    alignas(64) " << elem_ctype(s) << " " << block(s, c) << "[B];\n";
    // Selects, not branches, on `stream` inside the loop over blocks (see rp_flush).
    os_ << "    const int64_t step = stream ? B : end - begin;\n";
    os_ << "    for (int64_t i0 = begin; i0 < end;) {\n";
    os_ << "      const int64_t i1 = end - i0 > step ? i0 + step : end;\n";
    for (const auto& [s, c] : outs)
      os_ << "      " << destination(s, c) << " = stream ? " << block(s, c) << " : " << row(s, c)
          << ";\n";
    os_ << "      off = stream ? i0 : 0;\n";
    os_ << simd_pragma() << "      for (int64_t i = i0; i < i1; ++i) sample(i);\n";
    os_ << "#if defined(RP_STREAM)\n";
    for (const auto& [s, c] : outs)
      os_ << "      rp_flush(" << row(s, c) << " + i0, " << block(s, c) << ", (i1 - i0) * sizeof("
          << block(s, c) << "[0]), stream);\n";
    os_ << "#endif\n";
    os_ << "      i0 = i1;\n";
    os_ << "    }\n";
    os_ << "#if defined(RP_STREAM)\n";
    os_ << "    if (stream) __builtin_ia32_sfence();  // the streamed lines, before the launch "
           "ends\n";
    os_ << "#endif\n";
    os_ << "  }\n";
  }
  // The pointers a streamable kernel's pure outputs are stored through (stream_loops).
  void declare_destinations() {
    for_each_mutable([&](size_t s, int c) {
      if (!k_.slots[s].inout)
        os_ << "  " << elem_ctype(s) << "* " << destination(s, c) << " = nullptr;\n";
    });
    os_ << "  int64_t off = 0;\n";
  }
  std::string destination(size_t slot, int comp) const {
    return "dst_" + name(slot) + "_" + std::to_string(comp);
  }
  std::string row(size_t slot, int comp) const {
    return "out_" + name(slot) +
           (k_.slots[slot].width == 1 ? "" : " + " + std::to_string(comp) + " * n");
  }
  std::string block(size_t slot, int comp) const {
    return "blk_" + name(slot) + "_" + std::to_string(comp);
  }

  // steps == 1: one pass per sample, branch-free so the sample loop vectorizes. With a mask,
  // every sample is computed and a finished one's results are not kept.
  void sample_body() {
    const bool mask = k_.has_mask();
    if (mask)
      // uint8_t flags (masks hold 0 or 1): GCC vectorizes this mask logic, not the bool form.
      os_ << "    const uint8_t was = mask_in[s];  // finished on entry\n"
             "    const uint8_t live = was ^ 1;\n";
    const std::string ind = "    ";
    if (mask) hold_kept(ind);
    const bool through = streamable();  // pure outputs through dst_ pointers (stream_loops)
    step(ind, [&](const ir::Store& st, const std::string& value) {
      const std::string dest = through && !k_.slots[st.slot].inout
                                   ? destination(st.slot, st.comp) + "[s - off]"
                                   : plane("out_", st.slot, st.comp);
      os_ << ind << dest << " = " << (mask ? kept(st.slot, st.comp, value) : value) << ";\n";
    });
    if (mask) {
      os_ << ind << "const uint8_t done = "
          << (k_.terminate >= 0 ? "static_cast<uint8_t>(live & " + var(k_.terminate) + ")"
                                : std::string("0"))
          << ";\n";
      os_ << ind << "mask_out[s] = was | done;\n";
      os_ << ind << "finished += done;\n";
    }
  }

  // steps > 1, refilled lanes: 64 lanes, each holding one sample's state (and copies of its
  // read-only planes) in local arrays. Every period of R steps (8 to 32, refill_period and
  // refill_max_period; down to 2 while most lanes finish each period) a lane whose sample finished, or ran the call's budget of steps,
  // writes it back and takes the chunk's next sample, so a lane steps samples one after
  // another instead of idling until the slowest sample of a fixed block is done. A sample
  // enters a lane at a period's start (in an unmasked period also right after the step in
  // which the lane's sample finished: eager_refill); live_[j] is the number of steps lane j may
  // run in the current period, counted from the period's start (R, fewer in the last period
  // of its budget), so every sample runs exactly
  // the steps a plain loop would give it, whatever the budget and the periods. A sample that
  // finishes in step r of a period leaves
  // ~r = -(r + 1) there: negative, so it steps no more, and minus the steps it ran in the
  // period. (A per-lane counter of those steps, a load and a store per lane and step, kept
  // GCC's -frename-registers from overlapping the lanes' iterations: without it the dense
  // cell of the performance card took 217-219 ms of CPU against 227-233 ms.) Only for kernels whose samples can stop (a Terminated value) and whose step order
  // across samples does not matter: no sums over samples (their order of additions), no
  // draws (a draw's step index is the launch's step). 0: use blocked_body.
  int refill_period() const {
    if (!k_.has_mask() || k_.terminate < 0) return 0;
    if (has_slot(SlotKind::ParamSum) || has_slot(SlotKind::TableSum) || has_slot(SlotKind::Random))
      return 0;
    // 8: with 16, a sample that ran 20 steps held its lane for 12 idle ones on average, and
    // the performance card's "spread 100" cell (1e5 samples stopping after 1-100 steps) took
    // 8.4-12 ms against 7.1 ms on one AMD EPYC core; 4 made dense stepping 9% slower.
    // Periods in which few lanes are due grow from there (refill_max_period).
    return k_.steps % 8 == 0 ? 8 : 0;
  }

  // The longest period: after a period in which few lanes were due, the next one is twice
  // as long, up to this; when many are due it halves, down to refill_period(). Between
  // periods every lane's flags are scanned and its allowance set (~10 operations per lane):
  // with periods of 8 steps that scan was 15% of the time of float32 dense stepping (56
  // instructions per 8 lanes and step), where nothing is due until the budget ends.
  int refill_max_period() const {
    for (const int r : {32, 16})
      if (k_.steps % r == 0) return r;
    return refill_period();
  }

  // The (slot, comp) pairs of read-only planes the step reads.
  std::vector<std::pair<size_t, int>> plane_reads() const {
    std::set<std::pair<size_t, int>> seen;
    for (const auto& v : k_.values)
      if (v.op == ir::Op::LoadPlane) seen.emplace(static_cast<size_t>(v.slot), v.comp);
    return {seen.begin(), seen.end()};
  }

  void refill_body() {
    const int period = refill_period();
    const auto reads = plane_reads();
    os_ << "  // 64 lanes, refilled every " << period << " to " << refill_max_period()
        << " steps with the chunk's next sample\n"
           "  // (every 2, R_LOW, while at least half the lanes are due; HostWriter::refill_body).\n";
    os_ << "  constexpr int W = 64, R_LOW = 2, R_MIN = " << period << ", R_MAX = " << refill_max_period()
        << ";\n";
    os_ << "  int R = R_MIN;  // this period's steps (run in pairs st_ -> pp_ -> st_; an odd R's last one idles)\n";
    os_ << "  const int64_t begin = a->begin, end = a->end;\n";
    os_ << "  int64_t sample_[W], start_[W];\n";
    // Per-lane counters as wide as the values (int64 lanes for doubles, int32 for floats): in
    // bytes they made GCC take 32 lanes per vector iteration (the bytes' vector width), 8
    // vectors of doubles per operation, spilled to the stack: 2x slower on AVX2.
    os_ << "  using M = std::conditional_t<sizeof(T) == 8, int64_t, int32_t>;\n";
    os_ << "  M live_[W];\n";
    os_ << "  M fin_[W], any_fin = 0;  // the lanes that finished in an unmasked step; between periods, the lanes due\n";
    // Two copies of the state: the steps alternate between them (st_ -> pp_ -> st_), so that
    // each store is a whole vector; `x = live ? new : x` in place becomes a masked store that
    // the next step's load of x waits for (store forwarding fails), 2.5x slower here.
    for_each_mutable([&](size_t s, int c) {
      os_ << "  " << value_ctype(s) << " " << lane_array(s, c, false) << "[W], "
          << lane_array(s, c, true) << "[W];\n";
    });
    for (const auto& [s, c] : reads)
      os_ << "  " << elem_ctype(s) << " ld_" << name(s) << "_" << c << "[W];\n";
    lane_invariants();
    for (size_t i = 0; i < hoisted_.size(); ++i)
      if (hoisted_[i]) os_ << "  T iv_" << var(static_cast<int>(i)) << "[W];\n";
    os_ << "  int64_t next = begin, step = 0;\n";
    os_ << "  int occupied = 0;\n";
    os_ << "  const int64_t* const index = a->index;  // read once: the uint8_t stores may alias *a\n";
    os_ << "  uint8_t list_[W];  // the lanes due after a period, in order\n";
    // A sample finished on entry keeps its values (kept); when every plane is updated in
    // place and pure outputs are left alone, that writes nothing and it is only skipped.
    std::string in_place = "mask_out == mask_in";
    for_each_mutable([&](size_t s, int c) {
      if (c != 0) return;
      in_place += k_.slots[s].inout ? " && static_cast<const void*>(out_" + name(s) +
                                          ") == static_cast<const void*>(in_" + name(s) + ")"
                                    : " && !zero_finished";
    });
    os_ << "  const bool finished_stay = " << in_place << ";\n";
    // take(j, at, pp): lane j takes the chunk's next sample not finished on entry, its first
    // step being the call's step `at`, into the copy pp_ (pp) or st_.
    os_ << "  auto take = [&](const int j, const int64_t at, const bool pp) {\n";
    os_ << "    for (; next < end; ++next) {\n";
    os_ << "      const int64_t s = index ? index[next] : next;\n";
    os_ << "      if (mask_in[s] == 0) break;\n";
    os_ << "      if (finished_stay) continue;\n";
    // What `kept` gives a sample finished on entry: an in-out plane its old value, a pure
    // output 0 under zero_finished (JAX), else nothing.
    for_each_mutable([&](size_t s, int c) {
      if (k_.slots[s].inout)
        os_ << "      " << plane("out_", s, c) << " = " << plane("in_", s, c) << ";\n";
      else
        os_ << "      if (zero_finished) " << plane("out_", s, c) << " = " << zero_of(s) << ";\n";
    });
    os_ << "      mask_out[s] = 1;\n";
    os_ << "    }\n";
    os_ << "    if (next >= end) {\n";
    os_ << "      sample_[j] = -1;\n";
    os_ << "      live_[j] = 0;\n";
    os_ << "      return;\n";
    os_ << "    }\n";
    os_ << "    const int64_t s = index ? index[next] : next;\n";
    os_ << "    ++next;\n";
    load_lane("    ", "at", "pp");
    os_ << "    ++occupied;\n";
    os_ << "  };\n";
    os_ << "  for (int j = 0; j < W; ++j) take(j, 0, false);\n";
    // put_back(j, ran, pp, done): lane j's sample written back from pp_ (pp) or st_, after
    // `ran` steps in this call, finished (done) or at the end of its budget.
    os_ << "  auto put_back = [&](const int j, const int64_t ran, const bool pp, const bool done) {\n";
    os_ << "    const int64_t s = sample_[j];\n";
    os_ << "    steps_run = ran > steps_run ? static_cast<int>(ran) : steps_run;\n";
    for_each_mutable([&](size_t s, int c) {
      os_ << "    " << plane("out_", s, c) << " = " << lane_state_of(s, c, "pp") << ";\n";
    });
    os_ << "    mask_out[s] = done ? 1 : 0;\n";
    os_ << "    finished += done ? 1u : 0u;\n";
    os_ << "  };\n";
    // w: the lanes the step loops run over. When the chunk has no sample left to give and
    // at most half of them are occupied, the occupied lanes move to the front and w halves
    // (down to 8): the chunk's last, longest samples no longer step 64 lanes each (the
    // performance card's 1e3-sample cells: a chunk of 128 samples ran its slowest sample's
    // steps on 64 lanes).
    os_ << "  int w = W;\n";
    // fast: the period's steps are unmasked (refill_step) while every lane holds a sample
    // allowed the whole period, in a period after a calm one. After a quiet period (no sample
    // finished) the first step in which one finishes is run again, masked, and the period
    // goes on masked (dense stepping: no cost until the samples' common last step). After a
    // calm but not quiet one, each unmasked step stores its lanes' Terminated flags, and the
    // lanes that finished write their samples back and take the next ones at once
    // (eager_refill), so the period goes on unmasked. Listing those lanes after a step costs
    // about what the masked step's selects save on AVX2 once about one sample finishes per
    // step, and more than they cost on AVX-512, where a select is a masked operation: calm is
    // at most CALM finishes per step, 1 without AVX-512 and 0 with it (the eager steps are
    // then compiled out; the flag store alone made dense float32 stepping 3% slower there).
    // Measured, performance card at N = 1e5, raptor/C++ lanes, float64/float32, on an AVX-512
    // Xeon with x86-64-v3 code: CALM = 1: spread 1000 0.97/0.93, spread 100 1.01/1.14;
    // CALM = 0: 0.81/0.87, 1.02/1.19; always unmasked and eager: 0.97/0.94, 0.95/0.97. With
    // its native AVX-512 code CALM = 0 was ahead in every cell: spread 1000 0.96/1.09 against
    // 0.95/1.00, spread 100 1.17/1.33 against 1.10/1.31.
    os_ << "  M shortest = R;\n";
    os_ << "#if defined(__AVX512F__)\n";
    os_ << "  constexpr int CALM = 0;  // selects are masked operations\n";
    os_ << "#else\n";
    os_ << "  constexpr int CALM = 1;  // selects are blends on the arithmetic's ports\n";
    os_ << "#endif\n";
    os_ << "  bool calm = true;  // the last period's finishes per step <= CALM\n";
    os_ << "  bool quiet = true;  // no sample finished in the last period\n";
    os_ << "  int nfin = 0;  // the samples refilled at once in this period\n";
    os_ << "  for (int j = 0; j < W; ++j) shortest = live_[j] < shortest ? live_[j] : shortest;\n";
    os_ << "  while (occupied > 0) {\n";
    os_ << "    bool fast = calm && shortest >= R;\n";
    os_ << "    const bool eager = CALM > 0 && !quiet;\n";
    os_ << "    nfin = 0;\n";
    os_ << "    for (int r = 0; r < R; r += 2) {\n";
    os_ << "      const M r0 = r, r1 = r + 1;\n";
    for (const bool flipped : {false, true}) {
      const char* const which = flipped ? "r + 1: pp_ -> st_" : "r: st_ -> pp_";
      // The odd period's last step (r + 1 == R) idles: the masked step copies pp_ to st_.
      const std::string cut = flipped ? " && r + 1 < R" : "";
      os_ << "      if (fast && eager" << cut << ") {\n";
      os_ << "        // step " << which << ", unmasked, finished lanes refilled at once\n";
      refill_step(flipped, StepKind::Eager, "        ");
      eager_refill(flipped);
      os_ << "      } else {\n";
      os_ << "        if (fast" << cut << ") {\n";
      os_ << "          // step " << which << ", unmasked: no lane has finished in this period\n";
      refill_step(flipped, StepKind::Unmasked, "          ");
      // A lane finished: its later steps must idle. The step is run again, masked, from the
      // copy it read (unchanged), which records the lanes that finished; bit for bit the same.
      os_ << "          fast = any_fin == 0;\n";
      os_ << "        }\n";
      os_ << "        if (!fast" << (flipped ? " || r + 1 >= R" : "") << ") {\n";
      os_ << "          // step " << which << "\n";
      refill_step(flipped, StepKind::Masked, "          ");
      os_ << "        }\n";
      os_ << "      }\n";
    }
    os_ << "    }\n";
    os_ << "    step += R;\n";
    // The lanes due: finished, or at the end of their budget of steps. Flags as wide as the
    // counters, all ones when set (one vectorized pass; fin_ is free between periods), then
    // listed (list_set_lanes); their count nd decides the next period.
    os_ << "    for (int j = 0; j < w; ++j)\n";
    os_ << "      fin_[j] = M{0} - static_cast<M>((sample_[j] >= 0) & ((live_[j] < 0) | (step - "
           "start_[j] >= budget)));\n";
    os_ << "    int nd = 0;\n";
    list_set_lanes("    ", "nd");
    // The next period (refill_max_period), decided before the due lanes take samples: a
    // taken sample's allowance is the next period's. Twice as long when few lanes were due
    // (2 * nd * R <= w: a longer period leaves each finishing sample's lane idle about R / 2
    // more steps, which costs less than the scans it saves while few finish), half as long
    // when many were (nd * R > 2 * w), kept within [R_MIN, R_MAX]. Measured, performance
    // card at N = 1e5 on an AVX-512 Xeon: spread 1000 float32 7.3-7.8 -> 7.0 ms (against growing
    // only when no lane was due), float64 12.2 -> 11.9-12.1 ms; spread 100 and dense unchanged.
    // Below R_MIN only while at least half the lanes were due (R_LOW = 2, one pair of steps):
    // samples of one to a few steps, which a period of 8 held idle for most of it. Measured
    // (AVX-512 Xeon, N = 1e6, every sample stopping after one step): float64 6.8 -> 4.2 ms,
    // float32 4.6-5.7 -> 3.0-3.6 ms; the card's cells within noise (their periods rarely see
    // half the lanes due; with R_MIN = 4 everywhere spread 100 was no faster).
    os_ << "    const int ran_r = R;\n";
    os_ << "    calm = nfin + nd <= CALM * R;\n";
    os_ << "    quiet = nfin + nd == 0;\n";
    os_ << "    R = 2 * nd * R <= w ? 2 * R : nd * R > 2 * w ? R / 2 : R;\n";
    os_ << "    const int r_min = 2 * nd >= w ? R_LOW : R_MIN;\n";
    os_ << "    R = R < r_min ? r_min : R > R_MAX ? R_MAX : R;\n";
    // The due lanes' samples written back, then the chunk's next samples taken into them:
    // short loops, each with few values live (one loop doing all per lane kept its pointers
    // and counters on the stack, ~100 instructions a lane), and the common case of take
    // (contiguous samples, none finished on entry) without its checks. That loop stays scalar
    // (RP_OPAQUE): with AVX-512 GCC vectorized it into a scatter per lane array and 4 lanes,
    // slower than scalar stores (performance card, spread 10 float64, N = 1e6, AVX-512 Xeon:
    // 5.8-6.0 -> 5.1-5.3 ms; AVX2 has no scatters and kept it scalar anyway).
    os_ << "    for (int q = 0; q < nd; ++q) {\n";
    os_ << "      const int j = list_[q];\n";
    // The steps it ran in this period: its allowance, or -live_ when it finished.
    os_ << "      put_back(j, step - ran_r - start_[j] + (live_[j] < 0 ? -live_[j] : live_[j]), false, live_[j] < 0);\n";
    os_ << "    }\n";
    os_ << "    occupied -= nd;\n";
    os_ << "    int q = 0;\n";
    os_ << "    if (index == nullptr) {\n";
    os_ << "      const int64_t more = end - next < nd ? end - next : nd;\n";
    os_ << "      int fresh = 0;  // the next samples up to the first finished on entry\n";
    os_ << "      while (fresh < more && mask_in[next + fresh] == 0) ++fresh;\n";
    os_ << "      for (; q < fresh; ++q) {\n";
    os_ << "        int j = list_[q];\n";
    os_ << "        RP_OPAQUE(j);\n";
    os_ << "        const int64_t s = next + q;\n";
    load_lane("        ", "step", "");
    os_ << "      }\n";
    os_ << "      next += fresh;\n";
    os_ << "      occupied += fresh;\n";
    os_ << "    }\n";
    os_ << "    for (; q < nd; ++q) take(list_[q], step, false);\n";
    // The next period's allowance of the lanes that kept their samples (a lane that took one
    // got it in take): R, or what is left of the budget. The period is then cut to the
    // longest allowance: no steps where every lane idles at a budget's end. Not rounded up to
    // an even count: a lane whose allowance is R must run the whole period (the step count
    // advances by R), and the pairs of steps leave the state in st_ for any R.
    os_ << "    M longest = 0;\n";
    os_ << "    shortest = R;\n";
    os_ << "    for (int j = 0; j < w; ++j) {\n";
    os_ << "      const int64_t left = budget - (step - start_[j]);\n";
    os_ << "      if (sample_[j] >= 0 && live_[j] > 0)\n";
    os_ << "        live_[j] = static_cast<M>(left < R ? left : R);\n";
    os_ << "      longest = live_[j] > longest ? live_[j] : longest;\n";
    os_ << "      shortest = live_[j] < shortest ? live_[j] : shortest;\n";
    os_ << "    }\n";
    os_ << "    R = static_cast<int>(longest);\n";
    compact_lanes();
    os_ << "  }\n";
  }

  // Lane j takes sample s (refill_body): its state, copies of the read-only planes it reads,
  // its invariants, and the period's allowance. `start`: the call's step of its first step;
  // `pp`: an expression choosing the copy pp_ over st_ ("": st_).
  void load_lane(const std::string& at, const std::string& start, const std::string& pp) {
    os_ << at << "sample_[j] = s;\n";
    os_ << at << "start_[j] = " << start << ";\n";
    os_ << at << "live_[j] = static_cast<M>(budget < R ? budget : R);\n";
    for_each_mutable([&](size_t s, int c) {
      const std::string copy = pp.empty() ? lane_state(s, c, false) : lane_state_of(s, c, pp);
      os_ << at << copy << " = " << initial_state(s, c) << ";\n";
    });
    for (const auto& [s, c] : plane_reads())
      os_ << at << "ld_" << name(s) << "_" << c << "[j] = " << plane("in_", s, c) << ";\n";
    take_lane_invariants(at);
  }

  // After an unmasked step (refill_body): the lanes whose samples finished in it write them
  // back and take the chunk's next ones into the copy the next step reads, at once, so no
  // lane idles to the period's end (the next due check would find them) and the period goes
  // on unmasked. Once the chunk has no sample left to give, a lane stays empty and the rest
  // of the period is masked. A taken sample's allowance is the period's R; its budget is at
  // least R here (fast: every lane was allowed the whole period).
  // Emitted inline after each of the period's two unmasked eager steps, not as one lambda
  // both call: as a lambda (capturing w, occupied and next by reference) the spread 1000 cell
  // at N = 1e5 in x86-64-v3 code took 14.2 ms against 13.5 ms (float64) and 8.5 against
  // 7.9 ms (float32), spread 100 float32 1.52 against 1.39 ms (two runs of one session,
  // each alternating with the code before eager refill, which took 16.5 ms both times).
  // The finished lanes are the set bits of rp_lanes_set (AVX sign-bit masks): listing them
  // in groups of 8 (an OR of each group, a branch, a branch-free list) took ~5% of that
  // cell's time per eager step in float32 (perf annotate, N = 1e6); the masks made it 3%
  // faster at N = 1e5 (8.71 -> 8.44 ms, medians of 5 alternating processes).
  // The lanes whose flag in fin_ is set, in order, into list_[0..count) (rp_lanes_set: one
  // bit per lane, then the set bits).
  void list_set_lanes(const std::string& at, const std::string& count) {
    os_ << at << "for (uint64_t set = rp_lanes_set(fin_, w); set != 0; set &= set - 1)\n";
    os_ << at << "  list_[" << count << "++] = static_cast<uint8_t>(__builtin_ctzll(set));\n";
  }

  void eager_refill(const bool flipped) {
    const std::string pp = flipped ? "false" : "true";
    os_ << "        if (any_fin != 0) {\n";
    os_ << "          const int64_t at = step + r + " << (flipped ? 2 : 1) << ";\n";
    os_ << "          int nf = 0;\n";
    list_set_lanes("          ", "nf");
    os_ << "          for (int q = 0; q < nf; ++q) {\n";
    os_ << "            const int j = list_[q];\n";
    os_ << "            put_back(j, at - start_[j], " << pp << ", true);\n";
    os_ << "            --occupied;\n";
    os_ << "            take(j, at, " << pp << ");\n";
    os_ << "          }\n";
    os_ << "          fast = occupied == w;\n";
    os_ << "          nfin += nf;\n";
    os_ << "        }\n";
  }

  // One step of the refilled lanes (refill_body), st_ -> pp_ or (flipped) pp_ -> st_, as a
  // loop over the w lanes. Masked: lane j steps while its allowance live_[j] exceeds the
  // step's index r in the period, and one that finishes leaves ~r in live_[j]. Unmasked
  // (every lane holds a live sample): no selects, no allowance, only an OR of the lanes'
  // Terminated flags into any_fin: on AVX2, where a select is a blend on the FP ports, the
  // masked step's selects and allowance took ~10 of its ~50 vector operations. Eager: the
  // same, and each lane's flag stored in fin_ for eager_refill.
  enum class StepKind { Masked, Unmasked, Eager };
  void refill_step(const bool flipped, const StepKind kind, const std::string& at) {
    const bool fast = kind != StepKind::Masked;
    if (fast) os_ << at << "any_fin = 0;\n";
    os_ << (independent_samples() ? "#pragma GCC ivdep\n" : kNoPromise);
    os_ << at << "for (int j = 0; j < w; ++j) {\n";
    const std::string ind = at + "  ";
    os_ << ind << "const int64_t s = sample_[j];\n";
    os_ << ind << "const bool was = false;\n";
    // Unmasked, every lane is live (the step's checks read `live` too).
    if (fast)
      os_ << ind << "const bool live = true;\n";
    else
      os_ << ind << "const bool live = live_[j] > " << (flipped ? "r1" : "r0") << ";\n";
    os_ << ind << "(void)s;\n" << ind << "(void)was;\n" << ind << "(void)live;\n";
    refill_ = true;
    flipped_ = flipped;
    step(ind, [&](const ir::Store& st, const std::string& value) {
      os_ << ind << lane_state(st.slot, st.comp, !flipped) << " = ";
      if (fast)
        os_ << value << ";\n";
      else
        os_ << "live ? " << value << " : " << lane_state(st.slot, st.comp, flipped) << ";\n";
    });
    // A Mutable the step does not store keeps its value in the other copy too.
    for_each_mutable([&](size_t s, int c) {
      for (const ir::Store& st : k_.stores)
        if (st.slot == static_cast<int>(s) && st.comp == c) return;
      os_ << ind << lane_state(s, c, !flipped) << " = " << lane_state(s, c, flipped) << ";\n";
    });
    refill_ = false;
    flipped_ = false;
    if (fast) {
      // All ones when set: rp_lanes_set reads the sign bits.
      os_ << ind << "const M fin = M{0} - static_cast<M>(" << var(k_.terminate) << ");\n";
      if (kind == StepKind::Eager) os_ << ind << "fin_[j] = fin;\n";
      os_ << ind << "any_fin |= fin;\n";
    } else {
      // A sample that finishes in this step leaves ~r (-(steps it ran in the period)); one
      // whose allowance ran out keeps it (positive: not finished) until its period ends.
      // A select: with AVX-512 one masked move, with AVX2 one blend, and GCC 12 vectorizes it
      // for x86-64 to -v4 (the same loops as the arithmetic form
      // `live_[j] ^ ((live_[j] ^ ~r) & fin)`, which took 4 operations with AVX-512). Spread
      // 1000 at N = 1e5 on an AVX-512 Xeon: 10.6 -> 10.1 ms (float64), 5.84 -> 5.61 ms
      // (float32); with x86-64-v3 code 1-2% faster.
      const char* r = flipped ? "r1" : "r0";
      os_ << ind << "live_[j] = live && " << var(k_.terminate) << " ? static_cast<M>(~" << r << ") : live_[j];\n";
    }
    os_ << at << "}\n";
  }

  // The tail of a chunk (refill_body): the occupied lanes, in order, to lanes 0.., w halved
  // while at most half of it is occupied. Between periods the state is in st_ (steps run in pairs).
  void compact_lanes() {
    os_ << "    // No sample left to take: the occupied lanes to the front, fewer lanes stepped.\n";
    os_ << "    if (next >= end && w > 8 && occupied <= w / 2) {\n";
    os_ << "      int to = 0;\n";
    os_ << "      for (int j = 0; j < w; ++j) {\n";
    os_ << "        if (sample_[j] < 0) continue;\n";
    std::vector<std::string> arrays = {"sample_", "start_", "live_"};
    for_each_mutable([&](size_t s, int c) {
      arrays.push_back(lane_array(s, c, false));
    });
    for (const auto& [s, c] : plane_reads())
      arrays.push_back("ld_" + name(s) + "_" + std::to_string(c));
    for (size_t i = 0; i < hoisted_.size(); ++i)
      if (hoisted_[i]) arrays.push_back("iv_" + var(static_cast<int>(i)));
    for (const auto& arr : arrays) os_ << "        " << arr << "[to] = " << arr << "[j];\n";
    os_ << "        ++to;\n";
    os_ << "      }\n";
    os_ << "      while (w > 8 && occupied <= w / 2) w /= 2;\n";
    os_ << "      for (int j = to; j < w; ++j) {\n";
    os_ << "        sample_[j] = -1;\n";
    os_ << "        live_[j] = 0;\n";
    os_ << "      }\n";
    os_ << "    }\n";
  }

  // steps > 1: samples in blocks of 64. A block's state stays in local arrays (L1) while
  // its steps run as branch-free, vectorizable passes over the block; the block stops when
  // none of its samples is live. One pass over memory per launch, however many steps.
  void blocked_body() {
    const bool mask = k_.has_mask();
    const std::string bsz = "64";
    os_ << "  for (int64_t first = a->begin; first < a->end; first += " << bsz << ") {\n";
    os_ << "    const int64_t count = a->end - first < " << bsz << " ? a->end - first : " << bsz
        << ";\n";
    os_ << "    int64_t sample_of[" << bsz << "];\n";
    // Integers as wide as the values, not bool (GCC does not vectorize loops that load bools
    // from memory) nor bytes (32 lanes per vector iteration, spilled: refill_body).
    os_ << "    using M = std::conditional_t<sizeof(T) == 8, int64_t, int32_t>;\n";
    os_ << "    M was_[" << bsz << "], live_[" << bsz << "];\n";
    for_each_mutable([&](size_t s, int c) {
      os_ << "    " << value_ctype(s) << " " << lane_array(s, c, false) << "[" << bsz << "];\n";
    });
    os_ << "    int any = 0;\n";
    os_ << "    for (int64_t j = 0; j < count; ++j) {\n";
    os_ << "      const int64_t s = a->index ? a->index[first + j] : first + j;\n";
    os_ << "      sample_of[j] = s;\n";
    os_ << "      was_[j] = " << (mask ? "mask_in[s] != 0" : "0") << ";\n";
    os_ << "      live_[j] = was_[j] ^ 1;\n";
    os_ << "      any |= static_cast<int>(live_[j]);\n";
    for_each_mutable([&](size_t s, int c) {
      os_ << "      " << lane_state(s, c, false) << " = " << initial_state(s, c) << ";\n";
    });
    os_ << "    }\n";
    // The step pass, in two variants: samples contiguous (plain loads, vectorized) or through
    // the active set's index map (gathers).
    os_ << "    auto steps = [&](auto contiguous) {\n";
    os_ << "    int step = 0;\n";
    os_ << "    while (any != 0 && step < budget) {\n";
    os_ << "      any = 0;\n";
    os_ << (independent_samples() ? "#pragma GCC ivdep\n" : kNoPromise);
    os_ << "      for (int64_t j = 0; j < count; ++j) {\n";
    const std::string ind = "        ";
    os_ << ind << "const int64_t s = decltype(contiguous)::value ? first + j : sample_of[j];\n";
    os_ << ind << "const bool was = was_[j] != 0;\n";
    os_ << ind << "const bool live = live_[j] != 0;\n";
    os_ << ind << "(void)s;\n" << ind << "(void)was;\n";
    step(ind, [&](const ir::Store& st, const std::string& value) {
      const std::string st_var = state(st.slot, st.comp);
      os_ << ind << st_var << " = live ? " << value << " : " << st_var << ";\n";
    });
    os_ << ind << "const bool stays = live"
        << (k_.terminate >= 0 ? " & !" + var(k_.terminate) : std::string()) << ";\n";
    os_ << ind << "live_[j] = stays ? 1 : 0;\n";
    os_ << ind << "any |= stays ? 1 : 0;\n";
    os_ << "      }\n";
    os_ << "      ++step;\n";
    os_ << "    }\n";
    os_ << "    return step;\n";
    os_ << "    };\n";
    os_ << "    const int step = a->index ? steps(std::false_type{}) : steps(std::true_type{});\n";
    os_ << "    steps_run = step > steps_run ? step : steps_run;\n";
    os_ << "    for (int64_t j = 0; j < count; ++j) {\n";
    os_ << "      const int64_t s = sample_of[j];\n";
    os_ << "      const bool was = was_[j] != 0;\n";
    os_ << "      (void)was;\n";
    if (mask) hold_kept("      ");
    for_each_mutable([&](size_t s, int c) {
      const std::string st_var = lane_state(s, c, false);
      os_ << "      " << plane("out_", s, c) << " = " << (mask ? kept(s, c, st_var) : st_var)
          << ";\n";
    });
    if (mask) {
      os_ << "      const bool done = !was && live_[j] == 0;\n";
      os_ << "      mask_out[s] = (was | done) ? 1 : 0;\n";
      os_ << "      finished += done ? 1u : 0u;\n";
    }
    os_ << "    }\n";
    os_ << "  }\n";
  }
};

// Whether a kernel sums over samples with + (a ParamSum of Combine::Sum: hawk.sum, hawk.mean,
// a Param's cotangent), which HostWriter::sample_loops adds with kLaneSums' helpers.
bool uses_lane_sums(const ir::Kernel& k) {
  return std::any_of(k.slots.begin(), k.slots.end(), ir::is_lane_sum);
}
static_assert(ir::kSumLanes == 16, "kLaneSums and HostWriter::sample_loops write 16 lanes");

// The fixed lanes of sums over samples (HostWriter::sample_loops; docs/language.md "Sums over
// samples"): 16 doubles held as the target's own vectors (two of 8 with AVX-512, four of 4
// with AVX, eight of 2 with SSE2; GCC vector types, whose + adds lane by lane and is never
// reassociated), so the lanes' values and the total's are the same bits on every x86-64
// machine, and stay in registers across a sample loop's blocks.
constexpr const char* kLaneSums = R"(namespace {
#if defined(__AVX512F__)
constexpr int RP_LANE_W = 8;
#elif defined(__AVX__)
constexpr int RP_LANE_W = 4;
#else
constexpr int RP_LANE_W = 2;
#endif
constexpr int RP_LANE_V = 16 / RP_LANE_W;
typedef double rp_lane_v __attribute__((vector_size(8 * RP_LANE_W)));
// Lane j is v[j / RP_LANE_W][j % RP_LANE_W].
struct rp_lanes {
  rp_lane_v v[RP_LANE_V];
};
// Every lane -0.0, the identity of + (-0.0 + x is x for every x).
RP_OWN rp_lanes rp_lanes_zero() {
  rp_lanes l;
  for (int r = 0; r < RP_LANE_V; ++r)
    for (int j = 0; j < RP_LANE_W; ++j) l.v[r][j] = -0.0;
  return l;
}
// p[j] added into lane j % 16 for j < n, in order of j; p has room for n rounded up to 16,
// where the tail is padded with -0.0.
RP_OWN void rp_lanes_add(rp_lanes& l, double* p, int64_t n) {
  for (int64_t j = n; (j & 15) != 0; ++j) p[j] = -0.0;
  for (int64_t j = 0; j < n; j += 16)
    for (int r = 0; r < RP_LANE_V; ++r) {
      rp_lane_v x;
      __builtin_memcpy(&x, p + j + r * RP_LANE_W, sizeof x);
      l.v[r] += x;
    }
}
// x added into lane j (j < 16).
RP_OWN void rp_lanes_add1(rp_lanes& l, int64_t j, double x) {
  l.v[j / RP_LANE_W][j % RP_LANE_W] += x;
}
// The lanes' total in a fixed tree: lane j plus lane j + 8, then j + 4, j + 2, j + 1.
RP_OWN double rp_lanes_total(const rp_lanes& l) {
  double t[16];
  for (int r = 0; r < RP_LANE_V; ++r)
    for (int j = 0; j < RP_LANE_W; ++j) t[r * RP_LANE_W + j] = l.v[r][j];
  for (int w = 8; w >= 1; w /= 2)
    for (int j = 0; j < w; ++j) t[j] += t[j + w];
  return t[0];
}
}  // namespace

)";

// raptor's own functions kept in headers of their own, each pasted with its wrappers only into
// the units whose kernels call one of its ops (every other unit's source stays as small, and
// its parse as quick): sin, cos and tan (runtime/rp_trig.h, 35 KB of source, half of it the
// tables of 2/pi), atan, atan2, asin and acos (rp_atan.h), pow (rp_pow.h: x ** y but for a
// constant integer y), hypot (rp_hypot.h). The wrappers are RP_OWN (the prelude's
// always_inline): GCC would keep a call of functions that large, and the sample loop scalar.
struct OwnHeader {
  bool (*calls)(ir::Op);  // whether an op calls one of its functions
  std::string_view (*source)();
  const char* wrappers;
};
const OwnHeader kOwnHeaders[] = {
    {[](ir::Op o) { return o == ir::Op::Sin || o == ir::Op::Cos || o == ir::Op::Tan; },
     runtime::trig_header_source,
     "namespace {\n"
     "template <class T> RP_OWN T rp_sin(T x) { return rp_math_sin(x); }\n"
     "template <class T> RP_OWN T rp_cos(T x) { return rp_math_cos(x); }\n"
     "template <class T> RP_OWN T rp_tan(T x) { return rp_math_tan(x); }\n"
     "}  // namespace\n\n"},
    {[](ir::Op o) {
       return o == ir::Op::Atan || o == ir::Op::Atan2 || o == ir::Op::Asin || o == ir::Op::Acos;
     },
     runtime::atan_header_source,
     "namespace {\n"
     "template <class T> RP_OWN T rp_atan(T x) { return rp_math_atan(x); }\n"
     "template <class T> RP_OWN T rp_atan2(T y, T x) { return rp_math_atan2(y, x); }\n"
     "template <class T> RP_OWN T rp_asin(T x) { return rp_math_asin(x); }\n"
     "template <class T> RP_OWN T rp_acos(T x) { return rp_math_acos(x); }\n"
     "}  // namespace\n\n"},
    {[](ir::Op o) { return o == ir::Op::Pow; }, runtime::pow_header_source,
     "namespace {\n"
     "template <class T> RP_OWN T rp_pow(T x, T y) { return rp_math_pow(x, y); }\n"
     "}  // namespace\n\n"},
    {[](ir::Op o) { return o == ir::Op::Hypot; }, runtime::hypot_header_source,
     "namespace {\n"
     "template <class T> RP_OWN T rp_hypot(T x, T y) { return rp_math_hypot(x, y); }\n"
     "}  // namespace\n\n"},
};

// raptor's own functions (the prelude's rp_exp .. rp_tanh and the OwnHeaders' wrappers) by op:
// the name of the wrapper (rp_<name>) and the number of its arguments.
struct OwnFn {
  ir::Op op;
  const char* name;
  int arity;
};
std::vector<OwnFn> own_fns() {
  std::vector<OwnFn> out = {{ir::Op::Exp, "exp", 1},     {ir::Op::Log, "log", 1},
                            {ir::Op::Tanh, "tanh", 1},   {ir::Op::Sin, "sin", 1},
                            {ir::Op::Cos, "cos", 1},     {ir::Op::Tan, "tan", 1},
                            {ir::Op::Atan2, "atan2", 2}, {ir::Op::Pow, "pow", 2}};
  for (const ir::MathFn& f : ir::math_fns())
    if (f.kind == ir::MathKind::Own) out.push_back({f.op, f.name, f.arity});
  return out;
}

// A kernel that calls one of raptor's own functions kSimdCalls times or more calls it through
// a SIMD clone (rp_<name>_simd: the same function, `noinline` and GCC's `simd`, which gives it
// a vector version for each ISA that the kernel's vectorized loops call), instead of inlining
// its body at every call. Each inlined body is hundreds of instructions (sin's large-argument
// reduction, pow's double-double logarithm) and a steps = 1 kernel's sample body is inlined
// into four loops, so a kernel calling tanh 40 times held 160 copies, and GCC's time grows
// faster than the function's size: on an AVX2 EPYC such a masked kernel took 54 s of CPU to
// compile, 2.6 s with the clone. (The test suite's slowest units, 175-400 s there, are batches
// of fuzz kernels that each call a function 4 to 7 times: under the threshold, so unchanged.)
// The clone costs a call per vector (float64 tanh 13% slower per
// call, exp 26%, sin 36% on that EPYC; float32 within 7%) and loses what inlining shares
// between calls: the range reduction of a sin and a cos of one argument, 2.5x the time per
// call as two clones, so such pairs stay inlined and do not count. A kernel calling a function
// fewer times inlines it as before: the usual kernel's code is unchanged. The values are the
// same bits either way (the same operations; no contraction).
constexpr int kSimdCalls = 8;

// The values of `k` that call one of raptor's own functions through its SIMD clone: the calls
// of each function that `k` calls kSimdCalls times or more, but for a sin or cos whose argument
// the other of the two takes too.
std::set<int> simd_calls(const ir::Kernel& k) {
  std::set<int> sin_args, cos_args;
  for (const ir::Value& v : k.values) {
    if (v.op == ir::Op::Sin) sin_args.insert(v.args[0]);
    if (v.op == ir::Op::Cos) cos_args.insert(v.args[0]);
  }
  const auto paired = [&](const ir::Value& v) {
    return (v.op == ir::Op::Sin && cos_args.count(v.args[0])) ||
           (v.op == ir::Op::Cos && sin_args.count(v.args[0]));
  };
  std::set<int> out;
  for (const OwnFn& f : own_fns()) {
    std::vector<int> calls;
    for (size_t i = 0; i < k.values.size(); ++i)
      if (k.values[i].op == f.op && !paired(k.values[i])) calls.push_back(static_cast<int>(i));
    if (calls.size() >= static_cast<size_t>(kSimdCalls)) out.insert(calls.begin(), calls.end());
  }
  return out;
}

// The names of the functions whose clones the values `simd` of `k` call.
std::set<std::string> simd_names(const ir::Kernel& k, const std::set<int>& simd) {
  std::set<std::string> out;
  for (const OwnFn& f : own_fns())
    for (const int i : simd)
      if (k.values[static_cast<size_t>(i)].op == f.op) out.insert(f.name);
  return out;
}

// The SIMD clones of the functions `names` (simd_calls), after the wrappers they call.
std::string simd_wrappers(const std::set<std::string>& names) {
  if (names.empty()) return "";
  std::string out =
      "namespace {\n"
      "// Called where a kernel calls the function often (codegen/host_driver.cpp, kSimdCalls):\n"
      "// one body, with a vector version per ISA, instead of one inlined at every call.\n"
      "#define RP_SIMD_FN inline __attribute__((simd, noinline, pure))\n";
  for (const OwnFn& f : own_fns()) {
    if (!names.count(f.name)) continue;
    const std::string n = f.name;
    out += f.arity == 1 ? "template <class T> RP_SIMD_FN T rp_" + n + "_simd(T x) { return rp_" +
                              n + "(x); }\n"
                        : "template <class T> RP_SIMD_FN T rp_" + n +
                              "_simd(T x, T y) { return rp_" + n + "(x, y); }\n";
  }
  return out + "}  // namespace\n\n";
}

// Whether any of `kernels` calls one of `h`'s ops.
bool uses(const OwnHeader& h, const std::vector<KernelToEmit>& kernels) {
  return std::any_of(kernels.begin(), kernels.end(), [&](const KernelToEmit& k) {
    return std::any_of(k.kernel->values.begin(), k.kernel->values.end(),
                       [&](const ir::Value& v) { return h.calls(v.op); });
  });
}

}  // namespace

std::string emit_cpp(const std::vector<KernelToEmit>& kernels) {
  for (const auto& k : kernels) passes::require_unstaged(*k.kernel, "the C++ emitter");
  std::ostringstream os;
  os << "// Generated by raptor's hawk compiler (codegen/host_driver.cpp). Do not edit: it is\n"
        "// regenerated from the kernels' Python source, whose file and line each comment names.\n";
  std::set<std::string> names;
  for (const auto& k : kernels) names.insert(k.kernel->name);
  os << "// Kernels:";
  for (const auto& n : names) os << " " << n;
  os << "\n\n" << runtime::abi_header_source() << "\n" << prelude() << "\n";
  if (detail::StepWriter::any_random(kernels)) os << runtime::random_header_source() << "\n";
  for (const OwnHeader& h : kOwnHeaders)
    if (uses(h, kernels)) os << h.source() << "\n" << h.wrappers;
  bool ints = false;
  for (const auto& k : kernels) ints |= detail::uses_ints(*k.kernel);
  if (ints) os << "namespace {\n" << detail::int_helpers("inline") << "}  // namespace\n\n";
  if (std::any_of(kernels.begin(), kernels.end(),
                  [](const KernelToEmit& k) { return uses_lane_sums(*k.kernel); }))
    os << kLaneSums;
  bool minmax = false;
  for (const auto& k : kernels) minmax |= detail::uses_minmax(*k.kernel);
  if (minmax)
    os << "namespace {\n"
       << detail::minmax_helpers("inline")
       << "#pragma omp declare reduction(rp_min : double : omp_out = rp_fold_min(omp_out, omp_in)) "
          "initializer(omp_priv = double(INFINITY))\n"
          "#pragma omp declare reduction(rp_max : double : omp_out = rp_fold_max(omp_out, omp_in)) "
          "initializer(omp_priv = -double(INFINITY))\n"
       << "}  // namespace\n\n";
  std::vector<std::set<int>> simd;
  std::set<std::string> any_simd;
  for (const auto& k : kernels) {
    simd.push_back(simd_calls(*k.kernel));
    const std::set<std::string> names = simd_names(*k.kernel, simd.back());
    any_simd.insert(names.begin(), names.end());
  }
  os << simd_wrappers(any_simd);
  for (size_t i = 0; i < kernels.size(); ++i)
    HostWriter(*kernels[i].kernel, kernels[i].dtype, kernels[i].symbol, os, simd[i]).write();
  return os.str();
}

}  // namespace raptor::codegen
