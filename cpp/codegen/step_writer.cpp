// The shared writer (see step_writer.hpp). Start at `StepWriter::step`; `expr` is the one
// place an operator's spelling lives.
#include "codegen/step_writer.hpp"

#include <cmath>
#include <cstdio>

namespace raptor::codegen {

const char* dtype_name(DType d) { return d == DType::F32 ? "float32" : "float64"; }
const char* dtype_suffix(DType d) { return d == DType::F32 ? "f32" : "f64"; }

namespace detail {

using ir::Op;
using ir::SlotKind;
using ir::Type;
using ir::Value;

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

const char* ctype_of(DType d) { return d == DType::F32 ? "float" : "double"; }

bool uses_ints(const ir::Kernel& k) {
  for (const Value& v : k.values) {
    if (v.op == Op::FloorDiv || v.op == Op::Mod || v.op == Op::ToInt || v.op == Op::ToFloat)
      return true;
    if (v.type == Type::I && v.op != Op::Const && v.op != Op::ToIndex && v.op != Op::Select)
      return true;
  }
  return false;
}

bool uses_minmax(const ir::Kernel& k) {
  for (const ir::Slot& sl : k.slots)
    if (sl.kind == SlotKind::ParamSum && sl.combine != ir::Combine::Sum) return true;
  return false;
}

std::string minmax_helpers(const std::string& q) {
  return "// hawk.min / hawk.max over samples (ir/combine.hpp): NaN wins (the first met is kept),\n"
         "// -0.0 is below +0.0, so any order of folding gives the same bits; +inf / -inf when\n"
         "// no sample contributes.\n" +
         q +
         " double rp_fold_min(double acc, double x) {\n"
         "  return acc != acc ? acc : x != x ? x : x == acc ? (copysign(1.0, x) < 0.0 ? x : acc) "
         ": (x < acc ? x : acc);\n"
         "}\n" +
         q +
         " double rp_fold_max(double acc, double x) {\n"
         "  return acc != acc ? acc : x != x ? x : x == acc ? (copysign(1.0, x) < 0.0 ? acc : x) "
         ": (x > acc ? x : acc);\n"
         "}\n";
}

std::string int_helpers(const std::string& q) {
  return "// Integer planes (docs/language.md): int64 arithmetic wraps around (two's complement),\n"
         "// `//` and `%` floor as Python's do (0 for a zero divisor, which the step reports), "
         "int(x)\n"
         "// truncates toward zero (0 for NaN, infinities and values beyond int64, reported).\n" +
         q +
         " int64_t rp_iadd(int64_t a, int64_t b) { return "
         "static_cast<int64_t>(static_cast<unsigned long long>(a) + static_cast<unsigned long "
         "long>(b)); }\n" +
         q +
         " int64_t rp_isub(int64_t a, int64_t b) { return "
         "static_cast<int64_t>(static_cast<unsigned long long>(a) - static_cast<unsigned long "
         "long>(b)); }\n" +
         q +
         " int64_t rp_imul(int64_t a, int64_t b) { return "
         "static_cast<int64_t>(static_cast<unsigned long long>(a) * static_cast<unsigned long "
         "long>(b)); }\n" +
         q +
         " int64_t rp_ineg(int64_t a) { return static_cast<int64_t>(0ULL - static_cast<unsigned "
         "long long>(a)); }\n" +
         q + " int64_t rp_iabs(int64_t a) { return a < 0 ? rp_ineg(a) : a; }\n" + q +
         " int64_t rp_imin(int64_t a, int64_t b) { return a < b ? a : b; }\n" + q +
         " int64_t rp_imax(int64_t a, int64_t b) { return a > b ? a : b; }\n" + q +
         " int64_t rp_floordiv(int64_t a, int64_t b) {\n"
         "  if (b == 0) return 0;\n"
         "  if (b == -1) return rp_ineg(a);\n"
         "  const int64_t q = a / b;\n"
         "  return (a % b != 0 && ((a < 0) != (b < 0))) ? q - 1 : q;\n"
         "}\n" +
         q +
         " int64_t rp_mod(int64_t a, int64_t b) {\n"
         "  if (b == 0 || b == -1) return 0;\n"
         "  const int64_t r = a % b;\n"
         "  return (r != 0 && ((r < 0) != (b < 0))) ? r + b : r;\n"
         "}\n"
         "template <class T> " +
         q +
         " bool rp_int_ok(T x) { return x >= T(-9223372036854775808.0) && x < "
         "T(9223372036854775808.0); }\n"
         "template <class T> " +
         q +
         " int64_t rp_toint(T x) { return rp_int_ok(x) ? static_cast<int64_t>(x) : int64_t(0); }\n"
         "// float(i), never -0.0: GCC folds (T)(int64_t)x into trunc(x) under -fno-trapping-math\n"
         "// where the ISA rounds (SSE4.1 and up), which gives -0.0 for x in (-1, 0); the compare\n"
         "// gives float(0) its +0.0 back.\n"
         "template <class T> " +
         q + " T rp_tofloat(int64_t i) { const T r = static_cast<T>(i); return r == T(0) ? T(0) : r; }\n";
}

namespace {

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

const char* kind_text(SlotKind kind) {
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
    case SlotKind::Random:
      return "Random key";
  }
  return "?";
}

const char* ctype(Type t) { return t == Type::F ? "T" : t == Type::B ? "bool" : "int64_t"; }

const char* zero(Type t) { return t == Type::F ? "T(0)" : t == Type::B ? "false" : "int64_t(0)"; }

// The spelling of an integer operator (Type::I results).
std::string int_expr(Op op, const std::string& a, const std::string& b) {
  switch (op) {
    case Op::Add:
      return "rp_iadd(" + a + ", " + b + ")";
    case Op::Sub:
      return "rp_isub(" + a + ", " + b + ")";
    case Op::Mul:
      return "rp_imul(" + a + ", " + b + ")";
    case Op::Neg:
      return "rp_ineg(" + a + ")";
    case Op::Abs:
      return "rp_iabs(" + a + ")";
    case Op::Min:
      return "rp_imin(" + a + ", " + b + ")";
    case Op::Max:
      return "rp_imax(" + a + ", " + b + ")";
    case Op::FloorDiv:
      return "rp_floordiv(" + a + ", " + b + ")";
    case Op::Mod:
      return "rp_mod(" + a + ", " + b + ")";
    default:
      return "";
  }
}

}  // namespace

std::string StepWriter::elem_ctype(size_t slot) const {
  switch (k_.slots[slot].dtype) {
    case ir::Dtype::Int32:
      return "int32_t";
    case ir::Dtype::Int64:
      return "int64_t";
    case ir::Dtype::Bool:
      return "uint8_t";
    default:
      return "T";
  }
}

std::string StepWriter::value_ctype(size_t slot) const {
  return ctype(ir::value_type(k_.slots[slot].dtype));
}

std::string StepWriter::zero_of(size_t slot) const {
  return zero(ir::value_type(k_.slots[slot].dtype));
}

std::string StepWriter::int_error(const char* code, int line) const {
  return std::string("{ err[0] = ") + code + "; err[1] = " + std::to_string(line) +
         "; err[2] = 0; err[3] = s; }";
}

std::string StepWriter::param_sum_accumulator(size_t slot, int comp) const {
  return "acc_" + name(slot) + "_" + std::to_string(comp);
}

void StepWriter::header_comment() {
  os_ << "// ---- kernel '" << k_.name << "' from " << (k_.file.empty() ? "<unknown>" : k_.file)
      << ", " << dtype_name(dtype_) << ", steps=" << k_.steps
      << (k_.active_set ? ", active set" : "") << "\n";
  for (size_t s = 0; s < k_.slots.size(); ++s) {
    const ir::Slot& sl = k_.slots[s];
    os_ << "//   slot " << s << ": " << sl.name << " ("
        << (sl.combine == ir::Combine::Min   ? "minimum over samples"
            : sl.combine == ir::Combine::Max ? "maximum over samples"
                                             : kind_text(sl.kind));
    if (sl.width > 1 || sl.is_vector) os_ << ", " << sl.width << " components";
    if (sl.inout) os_ << ", read and written";
    if (sl.dtype != ir::Dtype::Float) os_ << ", " << ir::dtype_name(sl.dtype);
    os_ << ")\n";
  }
}

void StepWriter::declare_slots() {
  // hawk.math.sample_index() / n_samples(): the launch's global numbering (abi.h).
  bool numbered = false;
  for (const ir::Value& v : k_.values)
    numbered = numbered || v.op == Op::SampleIndex || v.op == Op::NSamples;
  if (numbered)
    os_ << "  const int64_t rp_sample_base = a->sample_base;\n"
           "  const int64_t rp_n_total = a->n_total > 0 ? a->n_total : n;\n";
  for (size_t s = 0; s < k_.slots.size(); ++s) {
    const ir::Slot& sl = k_.slots[s];
    const std::string nm = name(s);
    switch (sl.kind) {
      case SlotKind::Param:
        os_ << param_declaration(s);
        break;
      case SlotKind::Plane:
      case SlotKind::Mutable: {
        const std::string e = elem_ctype(s);
        if (sl.kind == SlotKind::Plane || sl.inout)
          os_ << "  const " << e << "* const in_" << nm << " = static_cast<const " << e
              << "*>(a->in[" << s << "]);\n";
        if (sl.kind == SlotKind::Mutable)
          os_ << "  " << e << "* const out_" << nm << " = static_cast<" << e << "*>(a->out[" << s
              << "]);\n";
        break;
      }
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
        os_ << sum_declaration(s);
        for (int c = 0; c < sl.width; ++c)
          os_ << "  double acc_" << nm << "_" << c << " = " << fold_identity(s) << ";\n";
        break;
      case SlotKind::TableSum:
        os_ << sum_declaration(s);
        os_ << "  const int64_t size_" << nm << " = a->table_size[" << sl.table_of << "];\n";
        break;
      case SlotKind::Random:  // 4 words (interface.hpp): the key, the global index of sample 0
        os_ << "  const uint32_t* const rng_" << nm << " = static_cast<const uint32_t*>(a->in[" << s
            << "]);\n";
        os_ << "  const rp_key key_" << nm << " = {rng_" << nm << "[0], rng_" << nm << "[1]};\n";
        os_ << "  const int64_t base_" << nm << " = static_cast<int64_t>(rng_" << nm
            << "[2] | static_cast<uint64_t>(rng_" << nm << "[3]) << 32);\n";
        break;
    }
  }
}

void StepWriter::step(
    const std::string& indent,
    const std::function<void(const ir::Store&, const std::string& value)>& store_mutable) {
  ir::Loc last;
  for (int i = 0; i < static_cast<int>(k_.values.size()); ++i) value(i, indent, last);
  for (const ir::Store& st : k_.stores) {
    const ir::Slot& sl = k_.slots[st.slot];
    if (sl.kind == SlotKind::ParamSum && sl.combine != ir::Combine::Sum) {
      // hawk.min / hawk.max: a sample left out contributes the identity (+inf / -inf).
      const std::string acc = param_sum_accumulator(st.slot, st.comp);
      const std::string x = "static_cast<double>(" + var(st.value) + ")";
      os_ << indent << acc << " = "
          << folded(st.slot, acc,
                    st.pred < 0 && !guard_with_live()
                        ? x
                        : "(" + guard(st.pred) + " ? " + x + " : " + fold_identity(st.slot) + ")")
          << ";\n";
    } else if (sl.kind == SlotKind::ParamSum) {
      os_ << indent << param_sum_accumulator(st.slot, st.comp) << " += "
          << (st.pred < 0 && !guard_with_live()
                  ? "static_cast<double>(" + var(st.value) + ")"
                  : guard(st.pred) + " ? static_cast<double>(" + var(st.value) + ") : 0.0")
          << ";\n";
    } else if (sl.kind == SlotKind::TableSum) {
      table_sum(st, var(st.index), var(st.value), guard(st.pred), indent);
    }
  }
  for (const ir::Store& st : k_.stores)
    if (k_.slots[st.slot].kind == SlotKind::Mutable) store_mutable(st, var(st.value));
}

std::string StepWriter::name(size_t slot) const {
  const std::string id = ident(k_.slots[slot].name);
  if (id == k_.slots[slot].name && !id.empty()) return id;
  return (id.empty() ? "slot" : id) + "_" + std::to_string(slot);
}

std::string StepWriter::var(int v) const {
  const Value& x = k_.values[v];
  std::string n = ident(x.name);
  if (n.size() > 24) n.resize(24);
  return "v" + std::to_string(v) + (n.empty() ? "" : "_" + n);
}

std::string StepWriter::plane(const std::string& prefix, size_t slot, int comp) const {
  const std::string p = prefix + name(slot);
  if (k_.slots[slot].width == 1) return p + "[s]";
  return p + "[" + std::to_string(comp) + " * n + s]";
}

std::string StepWriter::guard(int pred) const {
  if (!guard_with_live()) return pred < 0 ? "true" : var(pred);
  return pred < 0 ? "live" : "(live & " + var(pred) + ")";
}

void StepWriter::for_each_mutable(const std::function<void(size_t, int)>& f) const {
  for (size_t s = 0; s < k_.slots.size(); ++s)
    if (k_.slots[s].kind == SlotKind::Mutable)
      for (int c = 0; c < k_.slots[s].width; ++c) f(s, c);
}

std::string StepWriter::initial_state(size_t slot, int comp) const {
  return k_.slots[slot].inout ? plane("in_", slot, comp) : zero_of(slot);
}

void StepWriter::hold_kept(const std::string& indent) {
  os_ << indent << "// kept by a sample finished on entry (read before any store)\n";
  for_each_mutable([&](size_t s, int c) {
    const std::string type = value_ctype(s);
    os_ << indent << "const " << type << " held_" << name(s) << "_" << c << " = ";
    if (k_.slots[s].inout)
      os_ << plane("in_", s, c);
    else  // one type throughout: an integer plane makes no trip through a float
      os_ << "zero_finished ? " << type << "(0) : " << type << "(" << plane("out_", s, c) << ")";
    os_ << ";\n";
  });
}

std::string StepWriter::kept(size_t slot, int comp, const std::string& value) const {
  return "was ? held_" + name(slot) + "_" + std::to_string(comp) + " : " + value;
}

std::string StepWriter::table_error(int table_slot, const std::string& ix) const {
  return "{ err[0] = RAPTOR_ERR_TABLE_INDEX; err[1] = " + std::to_string(table_slot) +
         "; err[2] = " + ix + "; err[3] = s; }";
}

std::vector<std::pair<size_t, int>> StepWriter::sum_components() const {
  std::vector<std::pair<size_t, int>> out;
  for (size_t s = 0; s < k_.slots.size(); ++s)
    if (k_.slots[s].kind == SlotKind::ParamSum)
      for (int c = 0; c < k_.slots[s].width; ++c) out.emplace_back(s, c);
  return out;
}

std::string StepWriter::sum_name(const std::pair<size_t, int>& sc) const {
  return name(sc.first) + "_" + std::to_string(sc.second);
}

std::string StepWriter::fold_fn(size_t slot) const {
  switch (k_.slots[slot].combine) {
    case ir::Combine::Min:
      return "rp_fold_min";
    case ir::Combine::Max:
      return "rp_fold_max";
    case ir::Combine::Sum:
      break;
  }
  return "";
}

std::string StepWriter::fold_identity(size_t slot) const {
  switch (k_.slots[slot].combine) {
    case ir::Combine::Min:
      return "double(INFINITY)";
    case ir::Combine::Max:
      return "-double(INFINITY)";
    case ir::Combine::Sum:
      break;
  }
  return "0.0";
}

std::string StepWriter::folded(size_t slot, const std::string& acc, const std::string& x) const {
  const std::string f = fold_fn(slot);
  return f.empty() ? acc + " + " + x : f + "(" + acc + ", " + x + ")";
}

bool StepWriter::any_random(const std::vector<KernelToEmit>& kernels) {
  for (const auto& k : kernels)
    if (k.kernel->random_slot() >= 0) return true;
  return false;
}

bool StepWriter::has_slot(SlotKind kind) const {
  for (const ir::Slot& s : k_.slots)
    if (s.kind == kind) return true;
  return false;
}

std::string StepWriter::expr(int i) const {
  const Value& v = k_.values[i];
  auto a = [&](int j) { return var(v.args[j]); };
  if (v.type == Type::I && v.op != Op::Const && v.op != Op::Select && v.op != Op::ToIndex &&
      v.op != Op::LoadParam && v.op != Op::LoadPlane && v.op != Op::LoadState &&
      v.op != Op::RandPoisson && v.op != Op::RandInt && v.op != Op::SampleIndex &&
      v.op != Op::NSamples)
    return int_expr(v.op, a(0), op_arity(v.op) > 1 ? a(1) : "");
  switch (v.op) {
    case Op::Const:
      if (v.type == Type::B) return v.imm != 0.0 ? "true" : "false";
      if (v.type == Type::I) return "int64_t(" + std::to_string(v.iimm) + ")";
      return number(v.imm);
    case Op::LoadParam:
      return "k_" + name(v.slot);
    case Op::LoadPlane:
      return input(v.slot, v.comp);
    case Op::LoadState:
      if (k_.steps == 1) {
        if (!k_.slots[v.slot].inout) return zero_of(v.slot);
        return plane("in_", v.slot, v.comp);
      }
      return state(v.slot, v.comp);
    case Op::LoadMask:
      return k_.has_mask() ? "was" : "false";
    case Op::LoadTable:
      return "";  // written as statements (value())
    case Op::Neg:
      return "-" + a(0);
    case Op::Sqrt:
      return math("sqrt") + "(" + a(0) + ")";
    case Op::Exp:
      return own("exp", i) + "(" + a(0) + ")";
    case Op::Log:
      return own("log", i) + "(" + a(0) + ")";
    case Op::Sin:
      return own("sin", i) + "(" + a(0) + ")";
    case Op::Cos:
      return own("cos", i) + "(" + a(0) + ")";
    case Op::Tan:
      return own("tan", i) + "(" + a(0) + ")";
    case Op::Tanh:
      return own("tanh", i) + "(" + a(0) + ")";
    case Op::Abs:
      return math("fabs") + "(" + a(0) + ")";
    case Op::Floor:
      return math("floor") + "(" + a(0) + ")";
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
      return own("pow", i) + "(" + a(0) + ", " + a(1) + ")";
    case Op::Atan2:
      return own("atan2", i) + "(" + a(0) + ", " + a(1) + ")";
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
    case Op::SampleIndex:  // the sample's global index (a shard's base + its sample)
      return "rp_sample_base + s";
    case Op::NSamples:
      return "rp_n_total";
    case Op::RandUniform:
    case Op::RandNormal:
    case Op::RandUniformAt:
    case Op::RandNormalAt: {
      // Draw j of this sample in this step: jax.random's value of fold_in^3(key, step, i, j);
      // inside a loop region j is computed at run time.
      const std::string nm = name(v.slot);
      const std::string step =
          v.iimm == 0 ? step_index() : step_index() + " + " + std::to_string(v.iimm) + "u";
      const bool at = v.op == Op::RandUniformAt || v.op == Op::RandNormalAt;
      const std::string j =
          at ? "static_cast<uint32_t>(" + a(0) + " + " + std::to_string(v.comp) + ")"
             : std::to_string(v.comp) + "u";
      const bool uniform = v.op == Op::RandUniform || v.op == Op::RandUniformAt;
      return std::string(uniform ? "rp_uniform_" : "rp_normal_") + dtype_suffix(dtype_) +
             "(rp_subkey(key_" + nm + ", " + step + ", static_cast<uint32_t>(base_" + nm +
             " + s), " + j + "))";
    }
    case Op::RandGamma:
    case Op::RandPoisson:
    case Op::RandInt:
    case Op::RandTruncNormal:
    case Op::RandNormalVec: {
      // jax.random's distribution on draw j's subkey (runtime/random.h); j = args[0] + comp,
      // args[0] a constant outside loop regions.
      const std::string nm = name(v.slot);
      const std::string step =
          v.iimm == 0 ? step_index() : step_index() + " + " + std::to_string(v.iimm) + "u";
      const ir::Value& base = k_.values[v.args[0]];
      const std::string j =
          base.op == Op::Const
              ? std::to_string(base.iimm + v.comp) + "u"
              : "static_cast<uint32_t>(" + a(0) + " + " + std::to_string(v.comp) + ")";
      const std::string key = "rp_subkey(key_" + nm + ", " + step + ", static_cast<uint32_t>(base_" +
                              nm + " + s), " + j + ")";
      switch (v.op) {
        case Op::RandGamma:
          return "rp_gamma<T>(" + key + ", " + a(1) + ")";
        case Op::RandPoisson:
          return "rp_poisson(" + key + ", static_cast<float>(" + a(1) + "))";
        case Op::RandInt:
          return "rp_randint_i32(" + key + ", " + a(1) + ", " + a(2) + ")";
        case Op::RandTruncNormal:
          return "rp_truncated_normal<T>(" + key + ", " + a(1) + ", " + a(2) + ")";
        default:
          return std::string("rp_normal_ctr_") + dtype_suffix(dtype_) + "(" + key + ", " +
                 std::to_string(static_cast<int64_t>(v.imm)) + "u)";
      }
    }
    case Op::RandGammaGrad:  // runtime/random.h: jax's lax.random_gamma_grad
      return "rp_gamma_grad<T>(" + a(0) + ", " + a(1) + ")";
    case Op::StopGrad:
    case Op::CustomJvp:  // derivatives only: the value is args[0]
      return a(0);
    case Op::ToFloat:
      return "rp_tofloat<T>(" + a(0) + ")";
    case Op::FloorDiv:
    case Op::Mod:
    case Op::ToInt:
      return "";  // written as statements (value())
    case Op::LoopBegin:
    case Op::LoopCarry:
    case Op::LoopIndex:
    case Op::LoopNext:
    case Op::LoopEnd:
    case Op::LoopResult:
      return "";  // written as statements (loop_value())
    default:
      break;
  }
  if (const ir::MathFn* f = ir::math_fn(v.op)) {  // asin .. fma: one call (ir/math_fns.hpp)
    std::string call = math_call(*f, i) + "(";
    for (int j = 0; j < f->arity; ++j) call += (j ? ", " : "") + a(j);
    return call + ")";
  }
  return "/* ? */";
}

void StepWriter::source_comment(const ir::Loc& loc, ir::Loc& last, const std::string& indent) {
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
    // A line comment ending in a backslash (a Python line continuation) would splice the next
    // line of generated code into the comment: trailing backslashes and blanks are dropped.
    while (!text.empty() && (text.back() == '\\' || text.back() == ' ' || text.back() == '\t' ||
                             text.back() == '\r'))
      text.pop_back();
    os_ << "  " << text;
  }
  os_ << "\n";
}

void StepWriter::loop_value(int i, const std::string& indent) {
  const Value& v = k_.values[i];
  const std::string counter = "lp" + std::to_string(v.op == Op::LoopBegin ? i : v.args[0]);
  switch (v.op) {
    case Op::LoopBegin: {
      // The carried values live across iterations: declared before the loop.
      for (int j = i + 1; j < static_cast<int>(k_.values.size()); ++j) {
        const Value& c = k_.values[j];
        if (c.op == Op::LoopEnd && c.args[0] == i) break;
        if (c.op == Op::LoopCarry && c.args[1] == i)
          os_ << indent << ctype(c.type) << " " << var(j) << " = " << var(c.args[0]) << ";\n";
      }
      os_ << indent << "for (int64_t " << counter << " = 0; " << counter << " < " << v.iimm
          << "; ++" << counter << ") {\n";
      ++loop_depth_;
      return;
    }
    case Op::LoopCarry:
      return;  // declared before the loop, assigned at its end
    case Op::LoopIndex:
      os_ << indent << "const int64_t " << var(i) << " = " << counter << ";\n";
      return;
    case Op::LoopNext:
      os_ << indent << "const " << ctype(v.type) << " " << var(i) << " = " << var(v.args[1])
          << ";\n";
      return;
    case Op::LoopEnd: {
      const int begin = v.args[0];
      for (int j = begin + 1; j < i; ++j) {
        const Value& x = k_.values[j];
        if (x.op == Op::LoopNext && k_.values[x.args[0]].args[1] == begin)
          os_ << indent << var(x.args[0]) << " = " << var(j) << ";\n";
      }
      const Value& exit = k_.values[v.args[1]];
      if (!(exit.op == Op::Const && exit.imm == 0.0))
        os_ << indent << "if (" << var(v.args[1]) << ") break;\n";
      --loop_depth_;
      os_ << indent.substr(0, indent.size() >= 2 ? indent.size() - 2 : 0) << "}\n";
      return;
    }
    case Op::LoopResult:
      os_ << indent << "const " << ctype(v.type) << " " << var(i) << " = " << var(v.args[0])
          << ";\n";
      return;
    default:
      return;
  }
}

void StepWriter::value(int i, const std::string& base_indent, ir::Loc& last) {
  const Value& v = k_.values[i];
  const std::string indent = base_indent + std::string(2 * static_cast<size_t>(loop_depth_), ' ');
  source_comment(v.loc, last, indent);
  if (ir::is_loop_op(v.op)) {
    loop_value(i, indent);
    return;
  }
  if (loop_depth_ == 0 && lane_value(i, indent)) return;
  if (v.op == Op::LoadTable) {
    const std::string nm = name(v.slot);
    const std::string ix = "ix" + std::to_string(i);
    const int width = k_.slots[v.slot].width;
    os_ << indent << "const int64_t " << ix << " = " << var(v.args[0]) << ";\n";
    os_ << indent << "const bool ok" << i << " = " << ix << " >= 0 && " << ix << " < size_" << nm
        << ";\n";
    os_ << indent << "if (!ok" << i << " && " << guard(v.pred) << " && err[0] == 0) "
        << table_error(v.slot, ix) << "\n";
    os_ << indent << "const T " << var(i) << " = ok" << i << " ? tab_" << nm << "["
        << (width == 1 ? ix : ix + " * " + std::to_string(width) + " + " + std::to_string(v.comp))
        << "] : T(0);\n";
    return;
  }
  if (v.op == Op::FloorDiv || v.op == Op::Mod || v.op == Op::ToInt) {
    // A zero divisor, or int() of NaN/inf/beyond int64: reported where the value is used
    // (its predicate holds), as Python raises; the value is 0.
    const std::string ok = "ok" + std::to_string(i);
    const bool div = v.op != Op::ToInt;
    const Value& divisor = k_.values[v.args[div ? 1 : 0]];
    if (div && divisor.op == Op::Const && divisor.iimm != 0) {  // a nonzero constant: no check
      os_ << indent << "const int64_t " << var(i) << " = "
          << int_expr(v.op, var(v.args[0]), var(v.args[1])) << ";\n";
      return;
    }
    os_ << indent << "const bool " << ok << " = "
        << (div ? var(v.args[1]) + " != 0" : "rp_int_ok(" + var(v.args[0]) + ")") << ";\n";
    os_ << indent << "if (!" << ok << " && " << guard(v.pred) << " && err[0] == 0) "
        << int_error(div ? "RAPTOR_ERR_INT_DIV_ZERO" : "RAPTOR_ERR_INT_CONVERSION", v.loc.line)
        << "\n";
    os_ << indent << "const int64_t " << var(i) << " = "
        << (div ? int_expr(v.op, var(v.args[0]), var(v.args[1]))
                : "rp_toint(" + var(v.args[0]) + ")")
        << ";\n";
    return;
  }
  os_ << indent << "const " << ctype(v.type) << " " << var(i) << " = " << expr(i) << ";\n";
}

}  // namespace detail

std::string symbol_name(const ir::Kernel& k, DType dtype, const std::string& digest) {
  std::string base = detail::ident(k.name);
  if (base.size() > 40) base.resize(40);
  return "raptor_" + base + "_" + digest.substr(0, 16) + "_" + dtype_suffix(dtype);
}

}  // namespace raptor::codegen
