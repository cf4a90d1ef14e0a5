// The CUDA driver of the code generator: emit_cuda (see cpp_emitter.hpp). Per (kernel, dtype)
// it writes `<symbol>`, the kernel proper, and, when the kernel sums over samples,
// `<symbol>_finish`, following runtime/abi_cuda.h. Start at `CudaWriter::write`.
//
// `<symbol>` runs positions in rounds of grid x RAPTOR_CUDA_BLOCK, one thread per sample, the
// shared step (step_writer.hpp) in registers, looped when steps > 1. Control flow is uniform
// per block (a thread past the end runs the step on a valid sample with `live` false, and the
// step loop runs while any thread of the block is live) so the block can synchronize inside
// the step: that is what makes the sums deterministic without atomics in the kernel's dtype.
//  - ParamSum: per-thread double accumulators, combined per block in a fixed tree order
//    (rp_block_sum) into the block's partial.
//  - TableSum: at each store, the block's (index, value) pairs go to shared memory and the
//    thread that owns entry e (e % RAPTOR_CUDA_BLOCK) adds them in thread order into the
//    block's partial table (rp_table_add); no two threads write one entry.
//  - `<symbol>_finish` adds the block partials in block order and writes the outputs.
// Finished counts, steps and the first error are combined per block in shared memory and
// merged with one integer atomic per block (rp_merge_status).
#include <sstream>

#include "codegen/cpp_emitter.hpp"
#include "codegen/step_writer.hpp"
#include "passes/stages.hpp"
#include "runtime/abi_source.hpp"

namespace raptor::codegen {

using ir::SlotKind;

namespace {

const char* cuda_prelude() {
  return R"(// NVRTC compiles this without system headers: the fixed-width types and constants it uses.
typedef long long int64_t;
typedef unsigned int uint32_t;
typedef int int32_t;
typedef unsigned char uint8_t;
#define NAN __int_as_float(0x7fc00000)
#define INFINITY __int_as_float(0x7f800000)
)";
}

const char* cuda_helpers() {
  return R"(namespace {
// jax.numpy semantics where C differs (see the host prelude).
template <class T> __device__ __forceinline__ T rp_min(T a, T b) {
  return a != a ? a : (b != b ? b : (a == b ? (signbit(a) ? a : b) : (b < a ? b : a)));
}
template <class T> __device__ __forceinline__ T rp_max(T a, T b) {
  return a != a ? a : (b != b ? b : (a == b ? (signbit(a) ? b : a) : (b > a ? b : a)));
}
template <class T> __device__ __forceinline__ T rp_sign(T a) { return (a != a || a == T(0)) ? a : T((a > T(0)) - (a < T(0))); }
// np.remainder and C's fdim, as the host prelude writes them (ir/math_fns.hpp).
template <class T> __device__ __forceinline__ T rp_remainder(T a, T b) {
  const T r = fmod(a, b);
  return r != T(0) ? (((r < T(0)) != (b < T(0))) ? r + b : r) : copysign(T(0), b);
}
template <class T> __device__ __forceinline__ T rp_fdim(T a, T b) {
  return a > b ? a - b : ((a != a || b != b) ? a + b : T(0));
}
template <class T> __device__ __forceinline__ int64_t rp_index(T a) {
  const T f = floor(a);
  return (f >= T(-9.0e18) && f <= T(9.0e18)) ? static_cast<int64_t>(f) : int64_t(-1);
}
// The block's total of x, every thread's x added in a fixed tree order (the same bits on
// every run); every thread of the block must call it.
__device__ __forceinline__ double rp_block_sum(double x) {
  __shared__ double red[RAPTOR_CUDA_BLOCK];
  red[threadIdx.x] = x;
  __syncthreads();
  for (unsigned h = RAPTOR_CUDA_BLOCK / 2; h > 0; h >>= 1) {
    if (threadIdx.x < h) red[threadIdx.x] += red[threadIdx.x + h];
    __syncthreads();
  }
  const double total = red[0];
  __syncthreads();
  return total;
}
// One TableSum store of the block: each thread's (entry ix, value), ix = -1 for none. The
// thread owning entry e (e % RAPTOR_CUDA_BLOCK) adds the block's pairs for e in thread order
// into the block's partial table `part` (M x width, double). Every thread must call it.
__device__ __forceinline__ void rp_table_add(double* part, int64_t width, int64_t comp,
                                             int64_t ix, double value) {
  __shared__ int64_t ixs[RAPTOR_CUDA_BLOCK];
  __shared__ double vals[RAPTOR_CUDA_BLOCK];
  ixs[threadIdx.x] = ix;
  vals[threadIdx.x] = value;
  __syncthreads();
  for (int t = 0; t < RAPTOR_CUDA_BLOCK; ++t) {
    const int64_t e = ixs[t];
    if (e >= 0 && (static_cast<unsigned long long>(e) & (RAPTOR_CUDA_BLOCK - 1)) == threadIdx.x)
      part[e * width + comp] += vals[t];
  }
  __syncthreads();
}
// Zeroes the entries of the block's partial table that this thread owns (see rp_table_add).
__device__ __forceinline__ void rp_table_zero(double* part, int64_t entries, int64_t width) {
  for (int64_t e = threadIdx.x; e < entries; e += RAPTOR_CUDA_BLOCK)
    for (int64_t c = 0; c < width; ++c) part[e * width + c] = 0.0;
}
// What the block's threads finished, the most steps one ran and the error of its lowest
// thread that has one, merged into a->status with one integer atomic each per block.
__device__ __forceinline__ void rp_merge_status(const raptor_cuda_args* a, uint32_t finished,
                                                int steps_run, const int64_t* err) {
  __shared__ unsigned long long fin;
  __shared__ unsigned int steps;
  __shared__ int first_error;
  if (threadIdx.x == 0) {
    fin = 0;
    steps = 0;
    first_error = RAPTOR_CUDA_BLOCK;
  }
  __syncthreads();
  if (finished) atomicAdd(&fin, static_cast<unsigned long long>(finished));
  if (steps_run > 0) atomicMax(&steps, static_cast<unsigned int>(steps_run));
  if (err[0] != 0) atomicMin(&first_error, static_cast<int>(threadIdx.x));
  __syncthreads();
  if (threadIdx.x == 0) {
    if (fin) atomicAdd(&a->status[0], fin);
    if (steps) atomicMax(&a->status[5], static_cast<unsigned long long>(steps));
  }
  if (static_cast<int>(threadIdx.x) == first_error &&
      atomicCAS(&a->status[1], 0ull, static_cast<unsigned long long>(err[0])) == 0ull) {
    a->status[2] = static_cast<unsigned long long>(err[1]);
    a->status[3] = static_cast<unsigned long long>(err[2]);
    a->status[4] = static_cast<unsigned long long>(err[3]);
  }
}
// Output r of a sum slot: its block partials (block-major, `items` per block) added in block
// order, written in the kernel's dtype.
// `add`: a scatter target (Mutable[Table]), whose bound values the sums are added to.
template <class T> __device__ __forceinline__ void rp_finish(const raptor_cuda_args* a, int slot,
                                                             int64_t r, int64_t items,
                                                             bool add) {
  // A scatter target keeps its bound values after a kernel error (an index out of range).
  if (add && a->status[1] != 0ull) return;
  const double* const part = a->partials[slot];
  double total = 0.0;
  for (uint32_t b = 0; b < a->grid; ++b) total += part[static_cast<int64_t>(b) * items + r];
  T* const out = static_cast<T*>(a->sums[slot]);
  out[r] = a->accumulate_sums || add ? static_cast<T>(static_cast<double>(out[r]) + total)
                              : static_cast<T>(total);
}
}  // namespace
)";
}

class CudaWriter : public detail::StepWriter {
 public:
  using StepWriter::StepWriter;

  void write() {
    header_comment();
    os_ << "extern \"C\" __global__ void " << symbol_ << "(const raptor_cuda_args args) {\n";
    os_ << "  const raptor_cuda_args* const a = &args;\n";
    os_ << "  using T = " << detail::ctype_of(dtype_) << ";\n";
    os_ << "  const int64_t n = a->n;\n";
    declare_slots();
    os_ << "  uint32_t finished = 0;\n";
    os_ << "  int steps_run = 0;\n";
    os_ << "  int64_t err[4] = {0, 0, 0, 0};\n";
    os_ << "  (void)n;\n";
    for (size_t s = 0; s < k_.slots.size(); ++s)
      if (k_.slots[s].kind == SlotKind::TableSum)
        os_ << "  rp_table_zero(part_" << name(s) << ", size_" << name(s) << ", "
            << k_.slots[s].width << ");\n";
    os_ << "  auto sample = [&](const int64_t s, const bool active) {\n";
    if (k_.steps == 1)
      sample_body();
    else
      steps_body();
    os_ << "  };\n";
    // Rounds of grid x block positions: `first` is the same for the whole block, so every
    // thread runs every round (those past the end on a valid sample, inactive).
    os_ << "  const int64_t stride = static_cast<int64_t>(gridDim.x) * RAPTOR_CUDA_BLOCK;\n";
    os_ << "  for (int64_t first = static_cast<int64_t>(blockIdx.x) * RAPTOR_CUDA_BLOCK; "
           "first < a->count; first += stride) {\n";
    os_ << "    const int64_t i = first + threadIdx.x;\n";
    os_ << "    const bool active = i < a->count;\n";
    os_ << "    const int64_t p = active ? i : first;\n";
    os_ << "    sample(a->index ? a->index[p] : p, active);\n";
    os_ << "  }\n";
    for (const auto& sc : sum_components()) {
      const std::string fold = fold_fn(sc.first);  // hawk.min / hawk.max: rp_block_fold
      os_ << "  {\n";
      if (fold.empty())
        os_ << "    const double total = rp_block_sum(acc_" << sum_name(sc) << ");\n";
      else
        os_ << "    const double total = rp_block_fold(acc_" << sum_name(sc) << ", "
            << (fold == "rp_fold_min" ? "false" : "true") << ");\n";
      os_ << "    if (threadIdx.x == 0) part_" << name(sc.first)
          << "[static_cast<int64_t>(blockIdx.x) * " << k_.slots[sc.first].width << " + "
          << sc.second << "] = total;\n";
      os_ << "  }\n";
    }
    os_ << "  rp_merge_status(a, finished, steps_run, err);\n";
    os_ << "}\n\n";
    if (has_slot(SlotKind::ParamSum) || has_slot(SlotKind::TableSum)) finish();
  }

 private:
  std::string math(const char* fn) const override { return fn; }
  std::string math_call(const ir::MathFn& f, int) const override { return f.cuda; }
  std::string step_index() const override {
    return k_.steps == 1 ? "0u" : "static_cast<uint32_t>(rp_k)";
  }
  std::string state(size_t slot, int comp) const override {
    return "st_" + name(slot) + "_" + std::to_string(comp);
  }
  bool guard_with_live() const override { return true; }
  std::string param_declaration(size_t s) const override {  // device memory: traced under XLA
    const std::string e = elem_ctype(s);  // an integer Param keeps its dtype there
    const std::string p = "*static_cast<const " + e + "*>(a->params[" + std::to_string(s) + "])";
    if (k_.slots[s].dtype == ir::Dtype::Bool)
      return "  const bool k_" + name(s) + " = " + p + " != 0;\n";
    return "  const " + value_ctype(s) + " k_" + name(s) + " = " + p + ";\n";
  }
  // This block's partials in the scratch buffer (abi_cuda.h).
  std::string sum_declaration(size_t s) const override {
    const ir::Slot& sl = k_.slots[s];
    const std::string head =
        "  double* const part_" + name(s) + " = a->partials[" + std::to_string(s) + "]";
    if (sl.kind == SlotKind::ParamSum) return head + ";\n";
    return head + " + static_cast<int64_t>(blockIdx.x) * a->table_size[" +
           std::to_string(sl.table_of) + "] * " + std::to_string(sl.width) + ";\n";
  }
  void table_sum(const ir::Store& st, const std::string& ix, const std::string& value,
                 const std::string& guard, const std::string& indent) override {
    const ir::Slot& sl = k_.slots[st.slot];
    const std::string nm = name(st.slot);
    os_ << indent << "{\n";
    os_ << indent << "  const bool take = " << guard << ";\n";
    os_ << indent << "  const bool in_range = " << ix << " >= 0 && " << ix << " < size_" << nm
        << ";\n";
    os_ << indent << "  if (take && !in_range && err[0] == 0) " << table_error(sl.table_of, ix)
        << "\n";
    os_ << indent << "  rp_table_add(part_" << nm << ", " << sl.width << ", " << st.comp
        << ", take && in_range ? " << ix << " : int64_t(-1), static_cast<double>(" << value
        << "));\n";
    os_ << indent << "}\n";
  }

  // steps == 1: one pass per sample; an inactive thread's results are not kept.
  void sample_body() {
    const bool mask = k_.has_mask();
    const std::string ind = "    ";
    if (mask) {
      os_ << ind << "const uint8_t was = mask_in[s];  // finished on entry\n"
          << ind << "const uint8_t live = static_cast<uint8_t>(active) & (was ^ 1);\n";
      hold_kept(ind);
    } else {
      os_ << ind << "const uint8_t live = static_cast<uint8_t>(active);\n";
    }
    step(ind, [&](const ir::Store& st, const std::string& value) {
      os_ << ind << "if (active) " << plane("out_", st.slot, st.comp) << " = "
          << (mask ? kept(st.slot, st.comp, value) : value) << ";\n";
    });
    if (mask) {
      os_ << ind << "const uint8_t done = "
          << (k_.terminate >= 0 ? "static_cast<uint8_t>(live & " + var(k_.terminate) + ")"
                                : std::string("0"))
          << ";\n";
      os_ << ind << "if (active) mask_out[s] = was | done;\n";
      os_ << ind << "finished += done;\n";
    }
    os_ << ind << "if (active) steps_run = 1;\n";
  }

  // steps > 1: the sample's state in registers; the step loop runs while any thread of the
  // block is live (__syncthreads_or), a sample that is not keeps its state.
  void steps_body() {
    const bool mask = k_.has_mask();
    const std::string ind = "      ";
    os_ << "    const uint8_t was = " << (mask ? "mask_in[s]" : "0") << ";\n";
    os_ << "    uint8_t live = static_cast<uint8_t>(active) & (was ^ 1);\n";
    for_each_mutable([&](size_t s, int c) {
      os_ << "    " << value_ctype(s) << " " << state(s, c) << " = " << initial_state(s, c)
          << ";\n";
    });
    os_ << "    int step = 0;\n";
    os_ << "    for (int rp_k = 0; rp_k < " << k_.steps
        << " && __syncthreads_or(live); ++rp_k) {\n";
    step(ind, [&](const ir::Store& st, const std::string& value) {
      const std::string st_var = state(st.slot, st.comp);
      os_ << ind << st_var << " = live ? " << value << " : " << st_var << ";\n";
    });
    os_ << ind << "step += live;\n";
    if (k_.terminate >= 0)
      os_ << ind << "live = static_cast<uint8_t>(live & !" << var(k_.terminate) << ");\n";
    os_ << "    }\n";
    os_ << "    if (step > steps_run) steps_run = step;\n";
    if (mask) hold_kept("    ");
    for_each_mutable([&](size_t s, int c) {
      const std::string st_var = state(s, c);
      os_ << "    if (active) " << plane("out_", s, c) << " = "
          << (mask ? kept(s, c, st_var) : st_var) << ";\n";
    });
    if (mask) {
      os_ << "    const uint8_t done = static_cast<uint8_t>(active) & (was ^ 1) & (live ^ 1);\n";
      os_ << "    if (active) mask_out[s] = was | done;\n";
      os_ << "    finished += done;\n";
    }
  }

  // <symbol>_finish: every output of every sum slot, its block partials added in block order.
  void finish() {
    os_ << "// The sums of '" << k_.name << "' (" << dtype_name(dtype_)
        << "): block partials added in block order.\n";
    os_ << "extern \"C\" __global__ void " << symbol_ << "_finish(const raptor_cuda_args args) {\n";
    os_ << "  const raptor_cuda_args* const a = &args;\n";
    os_ << "  using T = " << detail::ctype_of(dtype_) << ";\n";
    std::string total;
    for (size_t s = 0; s < k_.slots.size(); ++s) {
      const ir::Slot& sl = k_.slots[s];
      if (sl.kind != SlotKind::ParamSum && sl.kind != SlotKind::TableSum) continue;
      os_ << "  const int64_t items_" << name(s) << " = "
          << (sl.kind == SlotKind::ParamSum ? std::to_string(sl.width)
                                            : "a->table_size[" + std::to_string(sl.table_of) +
                                                  "] * " + std::to_string(sl.width))
          << ";\n";
      total += (total.empty() ? "" : " + ") + std::string("items_") + name(s);
    }
    os_ << "  const int64_t total = " << total << ";\n";
    os_ << "  const int64_t stride = static_cast<int64_t>(gridDim.x) * blockDim.x;\n";
    os_ << "  for (int64_t i = static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x; "
           "i < total; i += stride) {\n";
    os_ << "    int64_t r = i;\n";
    for (size_t s = 0; s < k_.slots.size(); ++s) {
      const ir::Slot& sl = k_.slots[s];
      if (sl.kind != SlotKind::ParamSum && sl.kind != SlotKind::TableSum) continue;
      const std::string items = "items_" + name(s);
      os_ << "    if (r < " << items << ") {\n";
      if (sl.kind == SlotKind::ParamSum && sl.combine != ir::Combine::Sum)
        os_ << "      rp_finish_fold<T>(a, " << s << ", r, " << items << ", "
            << (sl.combine == ir::Combine::Max ? "true" : "false") << ");\n";
      else
        os_ << "      rp_finish<T>(a, " << s << ", r, " << items << ", "
            << (sl.kind == SlotKind::TableSum && sl.inout ? "true" : "false") << ");\n";
      os_ << "      continue;\n";
      os_ << "    }\n";
      os_ << "    r -= " << items << ";\n";
    }
    os_ << "  }\n";
    os_ << "}\n\n";
  }
};

// hawk.min / hawk.max over samples (a ParamSum whose combine is Min or Max): the block's
// threads folded in a fixed tree order, and the block partials folded in block order, as
// rp_block_sum and rp_finish add them. `max` chooses rp_fold_max over rp_fold_min.
std::string minmax_block_source() {
  return R"(__device__ __forceinline__ double rp_block_fold(double x, bool max) {
  __shared__ double red[RAPTOR_CUDA_BLOCK];
  red[threadIdx.x] = x;
  __syncthreads();
  for (unsigned h = RAPTOR_CUDA_BLOCK / 2; h > 0; h >>= 1) {
    if (threadIdx.x < h)
      red[threadIdx.x] = max ? rp_fold_max(red[threadIdx.x], red[threadIdx.x + h])
                             : rp_fold_min(red[threadIdx.x], red[threadIdx.x + h]);
    __syncthreads();
  }
  const double total = red[0];
  __syncthreads();
  return total;
}
template <class T> __device__ __forceinline__ void rp_finish_fold(const raptor_cuda_args* a,
                                                                  int slot, int64_t r,
                                                                  int64_t items, bool max) {
  const double* const part = a->partials[slot];
  double total = max ? -double(INFINITY) : double(INFINITY);
  for (uint32_t b = 0; b < a->grid; ++b) {
    const double x = part[static_cast<int64_t>(b) * items + r];
    total = max ? rp_fold_max(total, x) : rp_fold_min(total, x);
  }
  T* const out = static_cast<T*>(a->sums[slot]);
  const double old = static_cast<double>(out[r]);
  out[r] = static_cast<T>(!a->accumulate_sums ? total
                          : max              ? rp_fold_max(old, total)
                                             : rp_fold_min(old, total));
}
)";
}

// The per-launch key step of bound launches (runtime/abi_cuda.h).
std::string rng_advance_source() {
  return std::string(
             "// Launch n of a bound kernel draws with fold_in(key, n) (runtime/abi_cuda.h): run "
             "on one\n"
             "// thread before each launch, it writes launch n's key where the kernel reads it.\n"
             "extern \"C\" __global__ void ") +
         kCudaRngAdvanceSymbol +
         "(unsigned int* state, unsigned int* block) {\n"
         "  if (blockIdx.x != 0 || threadIdx.x != 0) return;\n"
         "  const rp_key k = rp_fold_in(rp_key{state[0], state[1]}, state[2]);\n"
         "  block[0] = k.k0;\n"
         "  block[1] = k.k1;\n"
         "  block[2] = 0u;\n"
         "  block[3] = 0u;\n"
         "  const unsigned long long n = (state[2] | (unsigned long long)state[3] << 32) + 1ull;\n"
         "  state[2] = (unsigned int)n;\n"
         "  state[3] = (unsigned int)(n >> 32);\n"
         "}\n";
}

}  // namespace

std::string emit_cuda(const std::vector<KernelToEmit>& kernels) {
  for (const auto& k : kernels) passes::require_unstaged(*k.kernel, "the CUDA emitter");
  std::ostringstream os;
  os << "// Generated by raptor's hawk compiler (codegen/cuda_driver.cpp) as CUDA C++ for NVRTC. "
        "Do\n"
        "// not edit: it is regenerated from the kernels' Python source, whose file and line each\n"
        "// comment names.\n\n"
     << cuda_prelude() << runtime::abi_error_codes_source() << "\n"
     << runtime::abi_cuda_header_source() << "\n"
     << cuda_helpers() << "\n";
  if (detail::StepWriter::any_random(kernels))
    os << runtime::random_device_source() << "\n" << rng_advance_source() << "\n";
  bool ints = false;
  for (const auto& k : kernels) ints |= detail::uses_ints(*k.kernel);
  if (ints)
    os << "namespace {\n"
       << detail::int_helpers("__device__ __forceinline__") << "}  // namespace\n\n";
  bool minmax = false;
  for (const auto& k : kernels) minmax |= detail::uses_minmax(*k.kernel);
  if (minmax)
    os << "namespace {\n"
       << detail::minmax_helpers("__device__ __forceinline__") << minmax_block_source()
       << "}  // namespace\n\n";
  for (const auto& k : kernels) CudaWriter(*k.kernel, k.dtype, k.symbol, os).write();
  return os.str();
}

}  // namespace raptor::codegen
