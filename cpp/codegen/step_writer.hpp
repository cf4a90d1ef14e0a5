// The part of code generation that host C++ and CUDA C++ share: names, numbers, expressions,
// table reads with their bounds checks, comments naming the user's file and line, the slots'
// declarations and the kernel's step written once (`StepWriter::step`). What differs between
// the targets is a small policy of virtual hooks: how a math function is spelled, where a
// Mutable's state lives, and how a sample's contribution to a sum over samples is stored.
// The drivers derive from it: host_driver.cpp (emit_cpp) and cuda_driver.cpp (emit_cuda).
// Start at `step`.
#pragma once

#include <functional>
#include <sstream>
#include <string>
#include <utility>
#include <vector>

#include "codegen/cpp_emitter.hpp"
#include "ir/ir.hpp"
#include "ir/math_fns.hpp"

namespace raptor::codegen::detail {

// A valid C identifier made of s's characters (others become '_').
std::string ident(const std::string& s);

// A literal of the kernel's float type T, exact (17 significant digits, NAN, INFINITY).
std::string number(double d);

// "float" / "double".
const char* ctype_of(DType d);

// Whether a kernel computes with integers (integer planes' values, int(), float(i)): then its
// translation unit needs `int_helpers`.
bool uses_ints(const ir::Kernel& k);
// The integer operators' helpers (wrapping int64 arithmetic, Python's floor division and
// modulo, int() of a float), each function declared with `qual` ("inline" on the host,
// "__device__ __forceinline__" in CUDA). Written once for both targets.
std::string int_helpers(const std::string& qual);
// Whether a kernel has a hawk.min / hawk.max output (a ParamSum whose Slot::combine is Min or
// Max): then its unit needs `minmax_helpers`, rp_fold_min / rp_fold_max as ir/combine.hpp defines them.
bool uses_minmax(const ir::Kernel& k);
std::string minmax_helpers(const std::string& qual);

class StepWriter {
 public:
  StepWriter(const ir::Kernel& k, DType dtype, std::string symbol, std::ostringstream& os)
      : k_(k), dtype_(dtype), symbol_(std::move(symbol)), os_(os) {}
  virtual ~StepWriter() = default;
  StepWriter(const StepWriter&) = delete;
  StepWriter& operator=(const StepWriter&) = delete;

  // Whether one of `kernels` draws random numbers (its unit needs runtime/random.h).
  static bool any_random(const std::vector<KernelToEmit>& kernels);

 protected:
  // ---- the policy: what a driver decides ----
  // A math function's name in expressions ("std::sqrt" on the host, "sqrt" on the device).
  virtual std::string math(const char* name) const = 0;
  // The function called for one of hawk.math's NumPy-named functions (ir/math_fns.hpp) by the
  // value `value`: on the host the prelude's rp_ wrapper (or its SIMD clone) or an rp_c::
  // builtin, in CUDA the math library's name.
  virtual std::string math_call(const ir::MathFn& f, int value) const = 0;
  // The function called for exp, log, sin, cos, tan, tanh, pow or atan2 by the value `value`:
  // math(name), but where the host writer calls raptor's own function through its SIMD clone.
  virtual std::string own(const char* name, int value) const {
    (void)value;
    return math(name);
  }
  // A Mutable's state between steps when steps > 1 ("st_x_0[j]" on the host's blocks).
  virtual std::string state(size_t slot, int comp) const = 0;
  // A read-only plane's value for the sample (LoadPlane): the plane's element by default;
  // the host's refilled lanes read a local copy instead.
  virtual std::string input(size_t slot, int comp) const { return plane("in_", slot, comp); }
  // A driver may write value i itself (return true after writing it): the host's refilled
  // lanes read a value computed once per sample from a lane's array. Default: no.
  virtual bool lane_value(int /*i*/, const std::string& /*indent*/) { return false; }
  // Whether guard() always includes the sample's `live` flag (CUDA: threads past the end
  // run the step too and must add nothing); otherwise only kernels with a mask need it.
  virtual bool guard_with_live() const { return k_.has_mask(); }
  // The accumulator a ParamSum contribution is added to (a double variable).
  virtual std::string param_sum_accumulator(size_t slot, int comp) const;
  // The statements that add `value` at table index `ix` of TableSum `st.slot`, under
  // `guard`, reporting an out-of-range index (table_error) when the guard holds.
  virtual void table_sum(const ir::Store& st, const std::string& ix, const std::string& value,
                         const std::string& guard, const std::string& indent) = 0;
  // The step of the launch a draw is in (0-based, a uint32_t expression): "0u" when steps == 1.
  virtual std::string step_index() const = 0;
  // A Param's declaration and the pointers a sum writes through.
  virtual std::string param_declaration(size_t slot) const = 0;
  virtual std::string sum_declaration(size_t slot) const = 0;

  // ---- shared ----
  // The comment block naming the kernel, its file and its slots.
  void header_comment();
  // One declaration per slot: pointers to planes and tables, Params, sum accumulators.
  void declare_slots();
  // The kernel's step, written once for every driver: each value (a comment at each new line
  // of the user's source), then each contribution to a sum over samples (through the policy),
  // then each Mutable store as `store_mutable` writes it (to the plane or to the state).
  void step(const std::string& indent,
            const std::function<void(const ir::Store&, const std::string& value)>& store_mutable);

  std::string name(size_t slot) const;  // the slot's identifier
  // The C type of a slot's buffer elements ("T", "int32_t", "int64_t", "uint8_t"), of its
  // values in the step ("T", "int64_t", "bool") and that type's zero.
  std::string elem_ctype(size_t slot) const;
  std::string value_ctype(size_t slot) const;
  std::string zero_of(size_t slot) const;
  // f(slot, comp) for each component of each Mutable, in slot order.
  void for_each_mutable(const std::function<void(size_t, int)>& f) const;
  // The state a sample starts a launch with: an in-out plane's value, else zero.
  std::string initial_state(size_t slot, int comp) const;
  std::string var(int v) const;  // a value's variable
  // A plane's element for sample s: prefix + name + [s] or [comp * n + s].
  std::string plane(const std::string& prefix, size_t slot, int comp) const;
  // A predicate that also holds only for live samples (see guard_with_live).
  std::string guard(int pred) const;
  // What a sample finished on entry keeps in each Mutable plane: an in-out plane its old
  // value, a pure output its old value or 0 (JAX: the kernel's zero_finished flag, read at run
  // time). Written as one `held_<plane>_<comp>` per component, read before the sample's first
  // store: a store through one plane could alias another as far as the compiler knows, so a plane
  // read after the stores is reloaded (and on x86 waits on the masked store before it).
  void hold_kept(const std::string& indent);
  // The stored value of a Mutable component: `value`, or the held one when the sample was
  // finished on entry (hold_kept must have been written before).
  std::string kept(size_t slot, int comp, const std::string& value) const;
  // The error statement of an out-of-range table index (RAPTOR_ERR_TABLE_INDEX of abi.h).
  std::string table_error(int table_slot, const std::string& ix) const;
  // The error statement of an integer error (RAPTOR_ERR_INT_DIV_ZERO, RAPTOR_ERR_INT_CONVERSION)
  // at the user's `line`.
  std::string int_error(const char* code, int line) const;
  // The sums over samples (ParamSum components) of this kernel, one (slot, comp) each.
  std::vector<std::pair<size_t, int>> sum_components() const;
  std::string sum_name(const std::pair<size_t, int>& sc) const;
  // A sum component's fold: "" for a sum (added), "rp_fold_min" / "rp_fold_max" for hawk.min / max;
  // and its accumulators' starting value ("0.0", "double(INFINITY)", "-double(INFINITY)").
  std::string fold_fn(size_t slot) const;
  std::string fold_identity(size_t slot) const;
  // `acc` with `x` folded in, as a statement's right-hand side: "acc + x" or "rp_fold_min(acc, x)".
  std::string folded(size_t slot, const std::string& acc, const std::string& x) const;
  bool has_slot(ir::SlotKind kind) const;

  const ir::Kernel& k_;
  const DType dtype_;
  const std::string symbol_;
  std::ostringstream& os_;

  // One value of the step as a statement (a comment first at a new line of the user's
  // source); `step` writes every value with it, a driver may write some elsewhere too.
  void value(int i, const std::string& indent, ir::Loc& last);

 private:
  std::string expr(int i) const;
  // LoopBegin .. LoopResult: a C++ `for` whose carried values are declared before it.
  void loop_value(int i, const std::string& indent);
  int loop_depth_ = 0;  // loops open while writing the step
  void source_comment(const ir::Loc& loc, ir::Loc& last, const std::string& indent);
};

}  // namespace raptor::codegen::detail
