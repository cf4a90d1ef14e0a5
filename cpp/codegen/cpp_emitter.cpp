// The host C++ emitter (see cpp_emitter.hpp). Start at `emit_cpp`, then `KernelWriter::write`:
// it declares the slots' pointers, writes one always-inline lambda for a sample (the kernel's
// step, looped when steps > 1) and calls it from a plain loop (vectorizable) or an index loop
// (active sets).
#include "codegen/cpp_emitter.hpp"

#include <cmath>
#include <cstdio>
#include <set>
#include <sstream>
#include <utility>
#include <vector>

#include "runtime/abi_source.hpp"

namespace raptor::codegen {

using ir::Op;
using ir::SlotKind;
using ir::Type;
using ir::Value;

const char* dtype_name(DType d) { return d == DType::F32 ? "float32" : "float64"; }
const char* dtype_suffix(DType d) { return d == DType::F32 ? "f32" : "f64"; }

namespace {

std::string ident(const std::string& s) {
  std::string out;
  for (char c : s) {
    const bool ok =
        (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '_';
    out += ok ? c : '_';
  }
  while (!out.empty() && out.back() == '_') out.pop_back();
  return out;
}

std::string number(double d) {
  if (std::isnan(d)) return "T(NAN)";
  if (std::isinf(d)) return d > 0 ? "T(INFINITY)" : "T(-INFINITY)";
  char buf[48];
  std::snprintf(buf, sizeof buf, "%.17g", d);
  std::string s = buf;
  if (s.find_first_of(".en") == std::string::npos) s += ".0";
  return "T(" + s + ")";
}

// x ** n by binary exponentiation in lax.integer_pow's order (see passes/eval.cpp).
std::string powi_expr(const std::string& x, int64_t n) {
  if (n == 0) return "T(1)";
  const bool neg = n < 0;
  if (neg) n = -n;
  std::string base = x, acc;
  while (n > 0) {
    if (n & 1) acc = acc.empty() ? base : "(" + acc + " * " + base + ")";
    n >>= 1;
    if (n) base = "(" + base + " * " + base + ")";
  }
  return neg ? "(T(1) / " + acc + ")" : acc;
}

const char* prelude() {
  return R"(#include <cmath>
#include <cstdint>
#include <type_traits>

#define RAPTOR_EXPORT extern "C" __attribute__((visibility("default")))

namespace {
// jax.numpy semantics where C differs: NaN propagates through minimum/maximum, which order
// signed zeros (min(-0, +0) = -0, max = +0); sign keeps the sign of zero.
template <class T> inline T rp_min(T a, T b) {
  return a != a ? a : (b != b ? b : (a == b ? (std::signbit(a) ? a : b) : (b < a ? b : a)));
}
template <class T> inline T rp_max(T a, T b) {
  return a != a ? a : (b != b ? b : (a == b ? (std::signbit(a) ? b : a) : (b > a ? b : a)));
}
template <class T> inline T rp_sign(T a) { return (a != a || a == T(0)) ? a : T((a > T(0)) - (a < T(0))); }
// A float index for Table.at(): rounded down; non-finite or huge values become -1 (out of range).
template <class T> inline int64_t rp_index(T a) {
  const T f = std::floor(a);
  return (f >= T(-9.0e18) && f <= T(9.0e18)) ? static_cast<int64_t>(f) : int64_t(-1);
}
}  // namespace
)";
}

class KernelWriter {
 public:
  KernelWriter(const ir::Kernel& k, DType dtype, std::string symbol, std::ostringstream& os,
               bool cuda = false)
      : k_(k), dtype_(dtype), symbol_(std::move(symbol)), os_(os), cuda_(cuda) {}

  void write() {
    if (cuda_) return write_cuda();
    header_comment();
    os_ << "RAPTOR_EXPORT void " << symbol_ << "(raptor_args* a) {\n";
    os_ << "  using T = " << (dtype_ == DType::F32 ? "float" : "double") << ";\n";
    os_ << "  const int64_t n = a->n;\n";
    declare_slots();
    os_ << "  uint32_t finished = 0;\n";
    if (k_.steps > 1) os_ << "  int steps_run = 0;\n";
    os_ << "  int64_t err[4] = {0, 0, 0, 0};\n";
    os_ << "  (void)n;\n";
    if (k_.steps == 1) {
      sample_lambda();
      sample_loops();
    } else {
      blocked_body();
    }
    for (size_t s = 0; s < k_.slots.size(); ++s)
      if (k_.slots[s].kind == SlotKind::ParamSum)
        for (int c = 0; c < k_.slots[s].width; ++c)
          os_ << "  sum_" << name(s) << "[" << c << "] += acc_" << name(s) << "_" << c << ";\n";
    os_ << "  a->finished = finished;\n";
    if (k_.steps > 1)
      os_ << "  a->steps_run = static_cast<uint32_t>(steps_run);\n";
    else
      os_ << "  a->steps_run = a->end > a->begin ? 1u : 0u;\n";
    os_ << "  for (int e = 0; e < 4; ++e) a->error[e] = err[e];\n";
    os_ << "}\n\n";
  }

  // The CUDA kernel: one thread per sample (grid-stride), the same per-sample code as the
  // host (a step loop in registers when steps > 1), then what the thread finished, summed
  // and found wrong merged into the launch's results with atomics (abi_cuda.h).
  void write_cuda() {
    header_comment();
    os_ << "extern \"C\" __global__ void " << symbol_ << "(const raptor_cuda_args args) {\n";
    os_ << "  const raptor_cuda_args* const a = &args;\n";
    os_ << "  using T = " << (dtype_ == DType::F32 ? "float" : "double") << ";\n";
    os_ << "  const int64_t n = a->n;\n";
    declare_slots();
    os_ << "  uint32_t finished = 0;\n";
    os_ << "  int steps_run = 0;\n";
    os_ << "  int64_t err[4] = {0, 0, 0, 0};\n";
    os_ << "  (void)n;\n";
    os_ << "  auto sample = [&](const int64_t s) {\n";
    if (k_.steps == 1) {
      sample_body();
      os_ << "    steps_run = 1;\n";
    } else {
      cuda_steps_body();
    }
    os_ << "  };\n";
    os_ << "  const int64_t stride = static_cast<int64_t>(gridDim.x) * blockDim.x;\n";
    os_ << "  for (int64_t i = static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x; i < "
           "a->count;"
           " i += stride)\n";
    os_ << "    sample(a->index ? a->index[i] : i);\n";
    for (size_t s = 0; s < k_.slots.size(); ++s)
      if (k_.slots[s].kind == SlotKind::ParamSum)
        for (int c = 0; c < k_.slots[s].width; ++c)
          os_ << "  atomicAdd(&sum_" << name(s) << "[" << c << "], static_cast<T>(acc_" << name(s)
              << "_" << c << "));\n";
    os_ << "  if (finished) atomicAdd(&a->status[0], static_cast<unsigned long long>(finished));\n";
    os_ << "  if (steps_run) atomicMax(&a->status[5], static_cast<unsigned long "
           "long>(steps_run));\n";
    os_ << "  if (err[0] != 0 && atomicCAS(&a->status[1], 0ull, static_cast<unsigned long "
           "long>(err[0])) == 0ull) {\n"
           "    a->status[2] = static_cast<unsigned long long>(err[1]);\n"
           "    a->status[3] = static_cast<unsigned long long>(err[2]);\n"
           "    a->status[4] = static_cast<unsigned long long>(err[3]);\n"
           "  }\n";
    os_ << "}\n\n";
  }

  // CUDA, steps > 1: one thread runs its sample's steps with the state in registers and stops
  // when the sample is done.
  void cuda_steps_body() {
    const bool mask = k_.has_mask();
    const std::string ind = "      ";
    os_ << "    const uint8_t was = " << (mask ? "mask_in[s]" : "0") << ";\n";
    os_ << "    uint8_t live = was ^ 1;\n";
    for (size_t s = 0; s < k_.slots.size(); ++s) {
      const ir::Slot& sl = k_.slots[s];
      if (sl.kind != SlotKind::Mutable) continue;
      for (int c = 0; c < sl.width; ++c)
        os_ << "    T st_" << name(s) << "_" << c << " = "
            << (sl.inout ? plane("in_", s, c) : std::string("T(0)")) << ";\n";
    }
    os_ << "    int step = 0;\n";
    os_ << "    for (; step < " << k_.steps << " && live; ++step) {\n";
    ir::Loc last;
    for (int i = 0; i < static_cast<int>(k_.values.size()); ++i) value(i, ind, last);
    sums(ind);
    for (const ir::Store& st : k_.stores)
      if (k_.slots[st.slot].kind == SlotKind::Mutable)
        os_ << ind << "st_" << name(st.slot) << "_" << st.comp << " = " << var(st.value) << ";\n";
    if (k_.terminate >= 0) os_ << ind << "if (" << var(k_.terminate) << ") live = 0;\n";
    os_ << "    }\n";
    os_ << "    if (step > steps_run) steps_run = step;\n";
    for (size_t s = 0; s < k_.slots.size(); ++s) {
      const ir::Slot& sl = k_.slots[s];
      if (sl.kind != SlotKind::Mutable) continue;
      for (int c = 0; c < sl.width; ++c) {
        const std::string state = "st_" + name(s) + "_" + std::to_string(c);
        os_ << "    " << plane("out_", s, c) << " = " << (mask ? kept(s, c, state) : state)
            << ";\n";
      }
    }
    if (mask) {
      os_ << "    const uint8_t done = static_cast<uint8_t>((was ^ 1) & (live ^ 1));\n";
      os_ << "    mask_out[s] = was | done;\n";
      os_ << "    finished += done;\n";
    }
  }

 private:
  const ir::Kernel& k_;
  DType dtype_;
  std::string symbol_;
  std::ostringstream& os_;
  bool cuda_;           // CUDA C++ for NVRTC (a grid-stride loop, atomics) instead of host C++
  bool parts_ = false;  // sums() adds into the sample lambda's parts, not the accumulators

  // A math function: std:: on the host, CUDA's overloads on the device.
  std::string fn(const char* name) const {
    return (cuda_ ? std::string() : std::string("std::")) + name;
  }

  std::string name(size_t slot) const {
    const std::string id = ident(k_.slots[slot].name);
    if (id == k_.slots[slot].name && !id.empty()) return id;
    return (id.empty() ? "slot" : id) + "_" + std::to_string(slot);
  }

  std::string var(int v) const {
    const Value& x = k_.values[v];
    std::string n = ident(x.name);
    if (n.size() > 24) n.resize(24);
    return "v" + std::to_string(v) + (n.empty() ? "" : "_" + n);
  }

  static const char* kind_text(SlotKind kind) {
    switch (kind) {
      case SlotKind::Param:
        return "Param";
      case SlotKind::Plane:
        return "plane";
      case SlotKind::Mutable:
        return "Mutable";
      case SlotKind::Terminated:
        return "Terminated";
      case SlotKind::Table:
        return "Table";
      case SlotKind::ParamSum:
        return "sum over samples";
      case SlotKind::TableSum:
        return "table of sums over samples";
    }
    return "?";
  }

  void header_comment() {
    os_ << "// ---- kernel '" << k_.name << "' from " << (k_.file.empty() ? "<unknown>" : k_.file)
        << ", " << dtype_name(dtype_) << ", steps=" << k_.steps
        << (k_.active_set ? ", active set" : "") << "\n";
    for (size_t s = 0; s < k_.slots.size(); ++s) {
      const ir::Slot& sl = k_.slots[s];
      os_ << "//   slot " << s << ": " << sl.name << " (" << kind_text(sl.kind);
      if (sl.width > 1 || sl.is_vector) os_ << ", " << sl.width << " components";
      if (sl.inout) os_ << ", read and written";
      os_ << ")\n";
    }
  }

  void declare_slots() {
    for (size_t s = 0; s < k_.slots.size(); ++s) {
      const ir::Slot& sl = k_.slots[s];
      const std::string nm = name(s);
      switch (sl.kind) {
        case SlotKind::Param:
          if (cuda_)  // device memory: a traced value under XLA
            os_ << "  const T k_" << nm << " = *static_cast<const T*>(a->params[" << s << "]);\n";
          else
            os_ << "  const T k_" << nm << " = static_cast<T>(a->params[" << s << "]);\n";
          break;
        case SlotKind::Plane:
          os_ << "  const T* const in_" << nm << " = static_cast<const T*>(a->in[" << s << "]);\n";
          break;
        case SlotKind::Mutable:
          if (sl.inout)
            os_ << "  const T* const in_" << nm << " = static_cast<const T*>(a->in[" << s
                << "]);\n";
          os_ << "  T* const out_" << nm << " = static_cast<T*>(a->out[" << s << "]);\n";
          break;
        case SlotKind::Terminated:  // the launcher guarantees both (abi.h)
          os_ << "  const uint8_t* const mask_in = a->mask_in;\n"
                 "  uint8_t* const mask_out = a->mask_out;\n"
                 "  const bool zero_finished = a->zero_finished != 0;\n";
          break;
        case SlotKind::Table:
          os_ << "  const T* const tab_" << nm << " = static_cast<const T*>(a->in[" << s << "]);\n";
          os_ << "  const int64_t size_" << nm << " = a->table_size[" << s << "];\n";
          break;
        case SlotKind::ParamSum:
          os_ << sum_pointer(nm, s);
          for (int c = 0; c < sl.width; ++c)
            os_ << "  double acc_" << nm << "_" << c << " = 0.0;\n";
          break;
        case SlotKind::TableSum:
          os_ << sum_pointer(nm, s);
          os_ << "  const int64_t size_" << nm << " = a->table_size[" << sl.table_of << "];\n";
          break;
      }
    }
  }

  // Host: the launcher's double partials for this call; CUDA: the output in the kernel dtype.
  std::string sum_pointer(const std::string& nm, size_t s) const {
    if (cuda_)
      return "  T* const sum_" + nm + " = static_cast<T*>(a->sums[" + std::to_string(s) + "]);\n";
    return "  double* const sum_" + nm + " = a->sums[" + std::to_string(s) + "];\n";
  }

  std::string plane(const std::string& prefix, size_t slot, int comp) const {
    const std::string p = prefix + name(slot);
    if (k_.slots[slot].width == 1) return p + "[s]";
    return p + "[" + std::to_string(comp) + " * n + s]";
  }

  std::string pred_text(int pred) const { return pred < 0 ? "true" : var(pred); }

  // The pragma of a vectorizable sample loop: samples are independent (ivdep); sums over
  // samples become per-lane partial sums (an OpenMP SIMD reduction, -fopenmp-simd), which
  // vectorizes them with a fixed order of additions for a given machine.
  std::string simd_pragma() const {
    std::string accs;
    for (size_t s = 0; s < k_.slots.size(); ++s)
      if (k_.slots[s].kind == SlotKind::ParamSum)
        for (int c = 0; c < k_.slots[s].width; ++c)
          accs +=
              (accs.empty() ? "" : ", ") + std::string("acc_") + name(s) + "_" + std::to_string(c);
    if (accs.empty()) return "#pragma GCC ivdep\n";
    return "#pragma omp simd reduction(+: " + accs + ")\n";
  }

  // A predicate that also holds only for live samples (kernels with a mask compute every
  // sample branch-free and keep the results of live ones).
  std::string guard(int pred) const {
    if (!k_.has_mask()) return pred_text(pred);
    return pred < 0 ? "live" : "(live & " + var(pred) + ")";
  }

  std::string expr(int i) const {
    const Value& v = k_.values[i];
    auto a = [&](int j) { return var(v.args[j]); };
    switch (v.op) {
      case Op::Const:
        if (v.type == Type::B) return v.imm != 0.0 ? "true" : "false";
        if (v.type == Type::I) return "int64_t(" + std::to_string(v.iimm) + ")";
        return number(v.imm);
      case Op::LoadParam:
        return "k_" + name(v.slot);
      case Op::LoadPlane:
        return plane("in_", v.slot, v.comp);
      case Op::LoadState:
        if (k_.steps == 1) {
          if (!k_.slots[v.slot].inout) return "T(0)";
          return plane("in_", v.slot, v.comp);
        }
        return "st_" + name(v.slot) + "_" + std::to_string(v.comp) + (cuda_ ? "" : "[j]");
      case Op::LoadMask:
        return k_.has_mask() ? "was" : "false";
      case Op::LoadTable:
        return "";  // written as statements
      case Op::Neg:
        return "-" + a(0);
      case Op::Sqrt:
        return fn("sqrt") + "(" + a(0) + ")";
      case Op::Exp:
        return fn("exp") + "(" + a(0) + ")";
      case Op::Log:
        return fn("log") + "(" + a(0) + ")";
      case Op::Sin:
        return fn("sin") + "(" + a(0) + ")";
      case Op::Cos:
        return fn("cos") + "(" + a(0) + ")";
      case Op::Tan:
        return fn("tan") + "(" + a(0) + ")";
      case Op::Tanh:
        return fn("tanh") + "(" + a(0) + ")";
      case Op::Abs:
        return fn("fabs") + "(" + a(0) + ")";
      case Op::Floor:
        return fn("floor") + "(" + a(0) + ")";
      case Op::Sign:
        return "rp_sign(" + a(0) + ")";
      case Op::Add:
        return a(0) + " + " + a(1);
      case Op::Sub:
        return a(0) + " - " + a(1);
      case Op::Mul:
        return a(0) + " * " + a(1);
      case Op::Div:
        return a(0) + " / " + a(1);
      case Op::Pow:
        return fn("pow") + "(" + a(0) + ", " + a(1) + ")";
      case Op::Atan2:
        return fn("atan2") + "(" + a(0) + ", " + a(1) + ")";
      case Op::Min:
        return "rp_min(" + a(0) + ", " + a(1) + ")";
      case Op::Max:
        return "rp_max(" + a(0) + ", " + a(1) + ")";
      case Op::PowI:
        return powi_expr(a(0), v.iimm);
      case Op::Lt:
        return a(0) + " < " + a(1);
      case Op::Le:
        return a(0) + " <= " + a(1);
      case Op::Gt:
        return a(0) + " > " + a(1);
      case Op::Ge:
        return a(0) + " >= " + a(1);
      case Op::Eq:
        return a(0) + " == " + a(1);
      case Op::Ne:
        return a(0) + " != " + a(1);
      case Op::Not:
        return "!" + a(0);
      case Op::And:
        return a(0) + " & " + a(1);  // bitwise on bools: no branches, vectorizes
      case Op::Or:
        return a(0) + " | " + a(1);
      case Op::Select:
        return a(0) + " ? " + a(1) + " : " + a(2);
      case Op::ToIndex:
        return "rp_index(" + a(0) + ")";
    }
    return "/* ? */";
  }

  static const char* ctype(Type t) {
    return t == Type::F ? "T" : t == Type::B ? "bool" : "int64_t";
  }

  void source_comment(const ir::Loc& loc, ir::Loc& last, const std::string& indent) {
    if (loc.line <= 0 || (loc.line == last.line && loc.file == last.file)) return;
    last = loc;
    const std::string file = loc.file < static_cast<int>(k_.files.size()) ? k_.files[loc.file] : "";
    std::string base = file;
    if (const size_t slash = base.find_last_of('/'); slash != std::string::npos)
      base = base.substr(slash + 1);
    os_ << indent << "// " << base << ":" << loc.line;
    if (auto it = k_.source_text.find({loc.file, loc.line}); it != k_.source_text.end()) {
      std::string text = it->second;
      const size_t first = text.find_first_not_of(" \t");
      text = first == std::string::npos ? "" : text.substr(first);
      os_ << "  " << text;
    }
    os_ << "\n";
  }

  void value(int i, const std::string& indent, ir::Loc& last) {
    const Value& v = k_.values[i];
    source_comment(v.loc, last, indent);
    if (v.op == Op::LoadTable) {
      const std::string nm = name(v.slot);
      const std::string ix = "ix" + std::to_string(i);
      const int width = k_.slots[v.slot].width;
      os_ << indent << "const int64_t " << ix << " = " << var(v.args[0]) << ";\n";
      os_ << indent << "const bool ok" << i << " = " << ix << " >= 0 && " << ix << " < size_" << nm
          << ";\n";
      os_ << indent << "if (!ok" << i << " && " << guard(v.pred) << " && err[0] == 0) { err[0] = "
          << "RAPTOR_ERR_TABLE_INDEX; err[1] = " << v.slot << "; err[2] = " << ix
          << "; err[3] = s; }\n";
      os_ << indent << "const T " << var(i) << " = ok" << i << " ? tab_" << nm << "["
          << (width == 1 ? ix : ix + " * " + std::to_string(width) + " + " + std::to_string(v.comp))
          << "] : T(0);\n";
      return;
    }
    os_ << indent << "const " << ctype(v.type) << " " << var(i) << " = " << expr(i) << ";\n";
  }

  void sums(const std::string& indent) {
    for (const ir::Store& st : k_.stores) {
      const ir::Slot& sl = k_.slots[st.slot];
      const std::string nm = name(st.slot);
      if (sl.kind == SlotKind::ParamSum) {
        os_ << indent << (parts_ ? "part_" : "acc_") << nm << "_" << st.comp << " += "
            << (st.pred < 0 && !k_.has_mask()
                    ? "static_cast<double>(" + var(st.value) + ")"
                    : guard(st.pred) + " ? static_cast<double>(" + var(st.value) + ") : 0.0")
            << ";\n";
      } else if (sl.kind == SlotKind::TableSum) {
        const std::string ix = var(st.index);
        os_ << indent << "if (" << guard(st.pred) << ") {\n";
        const std::string entry = "sum_" + nm + "[" +
                                  (sl.width == 1 ? ix
                                                 : ix + " * " + std::to_string(sl.width) + " + " +
                                                       std::to_string(st.comp)) +
                                  "]";
        os_ << indent << "  if (" << ix << " >= 0 && " << ix << " < size_" << nm << ") "
            << (cuda_ ? "atomicAdd(&" + entry + ", static_cast<T>(" + var(st.value) + "))"
                      : entry + " += static_cast<double>(" + var(st.value) + ")")
            << ";\n";
        os_ << indent
            << "  else if (err[0] == 0) { err[0] = RAPTOR_ERR_TABLE_INDEX; err[1] = " << sl.table_of
            << "; err[2] = " << ix << "; err[3] = s; }\n";
        os_ << indent << "}\n";
      }
    }
  }

  // The stores of a finished-on-entry sample: an in-out plane keeps its old value (copied
  // when the output is another buffer), a pure output is left alone or zeroed (JAX).
  // `zero` is the flag's expression: the run-time flag, or the sample lambda's compile-time
  // one (which lets GCC drop the read of the old output).
  std::string kept(size_t slot, int comp, const std::string& value,
                   const std::string& zero = "zero_finished") const {
    const ir::Slot& sl = k_.slots[slot];
    if (sl.inout) return "was ? " + plane("in_", slot, comp) + " : " + value;
    return "was ? (" + zero + " ? T(0) : " + plane("out_", slot, comp) + ") : " + value;
  }

  // The sums over samples of this kernel, one (slot, component) per entry.
  std::vector<std::pair<size_t, int>> sum_components() const {
    std::vector<std::pair<size_t, int>> out;
    for (size_t s = 0; s < k_.slots.size(); ++s)
      if (k_.slots[s].kind == SlotKind::ParamSum)
        for (int c = 0; c < k_.slots[s].width; ++c) out.emplace_back(s, c);
    return out;
  }

  std::string sum_name(const std::pair<size_t, int>& sc) const {
    return name(sc.first) + "_" + std::to_string(sc.second);
  }

  // Host, steps == 1: the per-sample lambda. With a mask it takes the zero_finished flag as a
  // type (std::true_type / std::false_type); with sums over samples it returns the sample's
  // parts, which the loop adds into its accumulators: an accumulator the lambda updated by
  // reference would keep GCC from vectorizing the loop's OpenMP SIMD reduction.
  void sample_lambda() {
    const auto parts = sum_components();
    if (!parts.empty()) {
      os_ << "  struct parts_t {";
      for (const auto& sc : parts) os_ << " double " << sum_name(sc) << ";";
      os_ << " };\n";
    }
    os_ << "  auto sample = [&](const int64_t s" << (k_.has_mask() ? ", auto zero" : "")
        << ") __attribute__((always_inline))" << (parts.empty() ? "" : " -> parts_t") << " {\n";
    // -0.0, the identity of +: the sample's first contribution is taken as is (GCC folds
    // -0.0 + x to x, not 0.0 + x, which differs for x = -0.0) and the loop vectorizes better.
    for (const auto& sc : parts) os_ << "    double part_" << sum_name(sc) << " = -0.0;\n";
    parts_ = !parts.empty();
    sample_body("decltype(zero)::value");
    parts_ = false;
    if (!parts.empty()) {
      os_ << "    return {";
      for (size_t i = 0; i < parts.size(); ++i)
        os_ << (i ? ", " : "") << "part_" << sum_name(parts[i]);
      os_ << "};\n";
    }
    os_ << "  };\n";
  }

  // Host, steps == 1: the sample loops, contiguous (vectorized) or through the active set's
  // index map, each once per value of the zero_finished flag when the kernel has a mask.
  void sample_loops() {
    const auto parts = sum_components();
    auto call = [&](const std::string& sample_index, const std::string& zero) {
      std::string args = sample_index + (zero.empty() ? "" : ", " + zero);
      if (parts.empty()) return "sample(" + args + ");";
      std::string body = "{ const parts_t p = sample(" + args + ");";
      for (const auto& sc : parts) body += " acc_" + sum_name(sc) + " += p." + sum_name(sc) + ";";
      return body + " }";
    };
    auto loops = [&](const std::string& zero, const std::string& indent) {
      os_ << indent << "if (a->index) {\n"
          << indent << "  const int64_t* const index = a->index;\n"
          << indent << "  for (int64_t i = begin; i < end; ++i) " << call("index[i]", zero) << "\n"
          << indent << "} else {\n"
          << simd_pragma() << indent << "  for (int64_t i = begin; i < end; ++i) "
          << call("i", zero) << "\n"
          << indent << "}\n";
    };
    // Bounds in locals: stores through the planes could alias *a as far as GCC knows.
    os_ << "  const int64_t begin = a->begin, end = a->end;\n";
    if (!k_.has_mask()) return loops("", "  ");
    os_ << "  if (zero_finished) {\n";
    loops("std::true_type{}", "    ");
    os_ << "  } else {\n";
    loops("std::false_type{}", "    ");
    os_ << "  }\n";
  }

  // steps == 1: one pass per sample, branch-free so the sample loop vectorizes. With a mask,
  // every sample is computed and a finished one's results are not kept.
  void sample_body(const std::string& zero = "zero_finished") {
    const bool mask = k_.has_mask();
    if (mask)
      // uint8_t flags (masks hold 0 or 1): GCC vectorizes this mask logic, not the bool form.
      os_ << "    const uint8_t was = mask_in[s];  // finished on entry\n"
             "    const uint8_t live = was ^ 1;\n";
    ir::Loc last;
    const std::string ind = "    ";
    for (int i = 0; i < static_cast<int>(k_.values.size()); ++i) value(i, ind, last);
    sums(ind);
    for (const ir::Store& st : k_.stores)
      if (k_.slots[st.slot].kind == SlotKind::Mutable)
        os_ << ind << plane("out_", st.slot, st.comp) << " = "
            << (mask ? kept(st.slot, st.comp, var(st.value), zero) : var(st.value)) << ";\n";
    if (mask) {
      os_ << ind << "const uint8_t done = "
          << (k_.terminate >= 0 ? "static_cast<uint8_t>(live & " + var(k_.terminate) + ")"
                                : std::string("0"))
          << ";\n";
      os_ << ind << "mask_out[s] = was | done;\n";
      os_ << ind << "finished += done;\n";
    }
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
    // uint8_t, not bool: GCC does not vectorize loops that load bools from memory.
    os_ << "    uint8_t was_[" << bsz << "], live_[" << bsz << "];\n";
    for (size_t s = 0; s < k_.slots.size(); ++s)
      if (k_.slots[s].kind == SlotKind::Mutable)
        for (int c = 0; c < k_.slots[s].width; ++c)
          os_ << "    T st_" << name(s) << "_" << c << "[" << bsz << "];\n";
    os_ << "    int any = 0;\n";
    os_ << "    for (int64_t j = 0; j < count; ++j) {\n";
    os_ << "      const int64_t s = a->index ? a->index[first + j] : first + j;\n";
    os_ << "      sample_of[j] = s;\n";
    os_ << "      was_[j] = " << (mask ? "mask_in[s] != 0" : "0") << ";\n";
    os_ << "      live_[j] = was_[j] ^ 1;\n";
    os_ << "      any |= live_[j];\n";
    for (size_t s = 0; s < k_.slots.size(); ++s) {
      const ir::Slot& sl = k_.slots[s];
      if (sl.kind != SlotKind::Mutable) continue;
      for (int c = 0; c < sl.width; ++c)
        os_ << "      st_" << name(s) << "_" << c
            << "[j] = " << (sl.inout ? plane("in_", s, c) : std::string("T(0)")) << ";\n";
    }
    os_ << "    }\n";
    // The step pass, in two variants: samples contiguous (plain loads, vectorized) or through
    // the active set's index map (gathers).
    os_ << "    auto steps = [&](auto contiguous) {\n";
    os_ << "    int step = 0;\n";
    os_ << "    while (any != 0 && step < " << k_.steps << ") {\n";
    os_ << "      any = 0;\n";
    os_ << "#pragma GCC ivdep\n";
    os_ << "      for (int64_t j = 0; j < count; ++j) {\n";
    const std::string ind = "        ";
    os_ << ind << "const int64_t s = decltype(contiguous)::value ? first + j : sample_of[j];\n";
    os_ << ind << "const bool was = was_[j] != 0;\n";
    os_ << ind << "const bool live = live_[j] != 0;\n";
    os_ << ind << "(void)s;\n" << ind << "(void)was;\n";
    ir::Loc last;
    for (int i = 0; i < static_cast<int>(k_.values.size()); ++i) value(i, ind, last);
    sums(ind);
    for (const ir::Store& st : k_.stores)
      if (k_.slots[st.slot].kind == SlotKind::Mutable) {
        const std::string state = "st_" + name(st.slot) + "_" + std::to_string(st.comp) + "[j]";
        os_ << ind << state << " = live ? " << var(st.value) << " : " << state << ";\n";
      }
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
    for (size_t s = 0; s < k_.slots.size(); ++s) {
      const ir::Slot& sl = k_.slots[s];
      if (sl.kind != SlotKind::Mutable) continue;
      for (int c = 0; c < sl.width; ++c) {
        const std::string state = "st_" + name(s) + "_" + std::to_string(c) + "[j]";
        os_ << "      " << plane("out_", s, c) << " = " << (mask ? kept(s, c, state) : state)
            << ";\n";
      }
    }
    if (mask) {
      os_ << "      const bool done = !was && live_[j] == 0;\n";
      os_ << "      mask_out[s] = (was | done) ? 1 : 0;\n";
      os_ << "      finished += done ? 1u : 0u;\n";
    }
    os_ << "    }\n";
    os_ << "  }\n";
  }
};

const char* cuda_prelude() {
  return R"(// NVRTC compiles this without system headers: the fixed-width types and constants it uses.
typedef long long int64_t;
typedef unsigned int uint32_t;
typedef int int32_t;
typedef unsigned char uint8_t;
#define NAN __int_as_float(0x7fc00000)
#define INFINITY __int_as_float(0x7f800000)
#define RAPTOR_ERR_TABLE_INDEX 1
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
template <class T> __device__ __forceinline__ int64_t rp_index(T a) {
  const T f = floor(a);
  return (f >= T(-9.0e18) && f <= T(9.0e18)) ? static_cast<int64_t>(f) : int64_t(-1);
}
}  // namespace
)";
}

}  // namespace

std::string emit_cuda(const std::vector<KernelToEmit>& kernels) {
  std::ostringstream os;
  os << "// Generated by raptor's hawk compiler (codegen/cpp_emitter.cpp) as CUDA C++ for NVRTC. "
        "Do\n"
        "// not edit: it is regenerated from the kernels' Python source, whose file and line each\n"
        "// comment names.\n\n"
     << cuda_prelude() << "\n"
     << runtime::abi_cuda_header_source() << "\n"
     << cuda_helpers() << "\n";
  for (const auto& k : kernels) KernelWriter(*k.kernel, k.dtype, k.symbol, os, true).write();
  return os.str();
}

std::string symbol_name(const ir::Kernel& k, DType dtype, const std::string& digest) {
  std::string base = ident(k.name);
  if (base.size() > 40) base.resize(40);
  return "raptor_" + base + "_" + digest.substr(0, 16) + "_" + dtype_suffix(dtype);
}

std::string emit_cpp(const std::vector<KernelToEmit>& kernels) {
  std::ostringstream os;
  os << "// Generated by raptor's hawk compiler (codegen/cpp_emitter.cpp). Do not edit: it is\n"
        "// regenerated from the kernels' Python source, whose file and line each comment names.\n";
  std::set<std::string> names;
  for (const auto& k : kernels) names.insert(k.kernel->name);
  os << "// Kernels:";
  for (const auto& n : names) os << " " << n;
  os << "\n\n" << runtime::abi_header_source() << "\n" << prelude() << "\n";
  for (const auto& k : kernels) KernelWriter(*k.kernel, k.dtype, k.symbol, os).write();
  return os.str();
}

}  // namespace raptor::codegen
