// A kernel's interface (see interface.hpp). Start at the KernelInterface constructor: the
// bridge's operand and result positions and the aliases are derived there, once.
#include "runtime/interface.hpp"

#include <array>
#include <sstream>
#include <stdexcept>

namespace raptor::runtime {

namespace {

constexpr std::array<std::string_view, 9> kRoleNames = {
    "param", "plane", "mutable", "inout", "mask", "table", "param_sum", "table_sum", "random"};
constexpr std::array<std::string_view, 6> kTypeNames = {"float32", "float64", "bool",
                                                        "int32",   "int64",   "uint32"};

SlotRole role_of(const ir::Slot& s) {
  switch (s.kind) {
    case ir::SlotKind::Param:
      return SlotRole::Param;
    case ir::SlotKind::Plane:
      return SlotRole::Plane;
    case ir::SlotKind::Mutable:
      return s.inout ? SlotRole::InOut : SlotRole::Mutable;
    case ir::SlotKind::Terminated:
      return SlotRole::Mask;
    case ir::SlotKind::Table:
      return SlotRole::Table;
    case ir::SlotKind::ParamSum:
      return SlotRole::ParamSum;
    case ir::SlotKind::TableSum:
      return SlotRole::TableSum;
    case ir::SlotKind::Random:
      return SlotRole::Random;
  }
  throw std::invalid_argument("unknown slot kind");
}

bool is_operand_role(SlotRole r) {
  return r == SlotRole::Param || r == SlotRole::Plane || r == SlotRole::InOut ||
         r == SlotRole::Mask || r == SlotRole::Table || r == SlotRole::Random;
}

bool is_result_role(SlotRole r) {  // the mask too, but it is placed last
  return r == SlotRole::Mutable || r == SlotRole::InOut || r == SlotRole::ParamSum ||
         r == SlotRole::TableSum;
}

}  // namespace

std::string_view role_name(SlotRole r) { return kRoleNames.at(static_cast<size_t>(r)); }

std::optional<SlotRole> role_from_name(std::string_view name) {
  for (size_t i = 0; i < kRoleNames.size(); ++i)
    if (kRoleNames[i] == name) return static_cast<SlotRole>(i);
  return std::nullopt;
}

std::string_view elem_type_name(ElemType t) { return kTypeNames.at(static_cast<size_t>(t)); }

std::optional<ElemType> elem_type_from_name(std::string_view name) {
  for (size_t i = 0; i < kTypeNames.size(); ++i)
    if (kTypeNames[i] == name) return static_cast<ElemType>(i);
  return std::nullopt;
}

int elem_size(ElemType t) {
  switch (t) {
    case ElemType::F32:
    case ElemType::I32:
    case ElemType::U32:
      return 4;
    case ElemType::F64:
    case ElemType::I64:
      return 8;
    case ElemType::Bool:
      return 1;
  }
  return 0;
}

bool SlotInterface::sized_by_n() const {
  return role == SlotRole::Plane || role == SlotRole::Mutable || role == SlotRole::InOut ||
         role == SlotRole::Mask;
}

KernelInterface::KernelInterface(std::string name, std::string digest, ElemType float_dtype,
                                 std::vector<SlotInterface> slots)
    : name_(std::move(name)),
      digest_(std::move(digest)),
      dtype_(float_dtype),
      slots_(std::move(slots)) {
  const auto bad = [&](const std::string& what) {
    return std::invalid_argument("kernel '" + name_ + "': " + what);
  };
  for (size_t s = 0; s < slots_.size(); ++s) {
    SlotInterface& si = slots_[s];
    si.operand = si.result = -1;
    if (si.role == SlotRole::Mask) {
      if (mask_ >= 0) throw bad("has two Terminated masks");
      mask_ = static_cast<int>(s);
    }
    if (si.role == SlotRole::Random) {
      if (random_ >= 0) throw bad("has two Random parameters");
      random_ = static_cast<int>(s);
    }
    // A scatter target is the TableSum that is its own table (manifests keep table_of only).
    si.inout = si.role == SlotRole::TableSum && si.table_of == static_cast<int>(s);
    if (si.role == SlotRole::TableSum &&
        (si.inout ? si.table_of != static_cast<int>(s)
                  : (si.table_of < 0 || static_cast<size_t>(si.table_of) >= slots_.size() ||
                     slots_[si.table_of].role != SlotRole::Table)))
      throw bad("sum '" + si.name + "' does not name a Table");
    if (si.role != SlotRole::TableSum) si.table_of = -1;
    // A scatter target's bound values are an operand, aliased to its result (as an InOut's).
    if (is_operand_role(si.role) || si.inout) {
      si.operand = static_cast<int>(operands_.size());
      operands_.push_back(static_cast<int>(s));
      if (n_operand_ < 0 && si.sized_by_n()) n_operand_ = static_cast<int>(s);
    }
    if (is_result_role(si.role)) {
      si.result = static_cast<int>(results_.size());
      results_.push_back(static_cast<int>(s));
    }
    if (n_slot_ < 0 && si.sized_by_n()) n_slot_ = static_cast<int>(s);
  }
  if (mask_ >= 0) {
    slots_[mask_].result = static_cast<int>(results_.size());
    results_.push_back(mask_);
  }
  for (const SlotInterface& si : slots_)
    if (si.is_operand() && si.is_result()) aliases_.push_back({si.operand, si.result});
}

KernelInterface KernelInterface::of(const ir::Kernel& k, ElemType float_dtype, std::string digest) {
  std::vector<SlotInterface> slots;
  slots.reserve(k.slots.size());
  for (const ir::Slot& s : k.slots) {
    SlotInterface si;
    si.name = s.name;
    si.role = role_of(s);
    si.width = s.width;
    si.is_vector = s.is_vector;
    si.rows = s.rows;
    si.table_of = s.table_of;
    si.combine = s.combine;
    switch (s.dtype) {  // integer and bool planes keep their declared type in every build
      case ir::Dtype::Int32:
        si.dtype = ElemType::I32;
        break;
      case ir::Dtype::Int64:
        si.dtype = ElemType::I64;
        break;
      case ir::Dtype::Bool:
        si.dtype = ElemType::Bool;
        break;
      default:
        si.dtype = si.role == SlotRole::Mask     ? ElemType::Bool
                   : si.role == SlotRole::Random ? ElemType::U32
                                                 : float_dtype;
    }
    slots.push_back(std::move(si));
  }
  return KernelInterface(k.name, std::move(digest), float_dtype, std::move(slots));
}

std::string KernelInterface::slot_name(int slot) const {
  if (slot >= 0 && static_cast<size_t>(slot) < slots_.size() && !slots_[slot].name.empty())
    return slots_[slot].name;
  return "slot " + std::to_string(slot);
}

bool KernelInterface::has_table() const {
  for (const SlotInterface& s : slots_)
    if (s.role == SlotRole::Table) return true;
  return false;
}

std::vector<int64_t> KernelInterface::expected_shape(int slot, int64_t n,
                                                     const std::vector<int64_t>& table_sizes,
                                                     Layout layout) const {
  const SlotInterface& s = slots_.at(static_cast<size_t>(slot));
  const int t = s.role == SlotRole::Table ? slot : s.table_of;
  const int64_t m = t >= 0 && static_cast<size_t>(t) < table_sizes.size() ? table_sizes[t] : -1;
  return shape(slot, n, m, layout).vec();
}

Shape KernelInterface::shape(int slot, int64_t n, int64_t m, Layout layout) const {
  const SlotInterface& s = slots_[static_cast<size_t>(slot)];
  const int64_t k = s.width;
  switch (s.role) {
    case SlotRole::Param:
      return {};
    case SlotRole::Plane:
    case SlotRole::Mutable:
    case SlotRole::InOut:
      if (s.rows > 0) return Shape{3, {s.rows, k / s.rows, n}};
      return s.is_vector ? Shape{2, {k, n}} : Shape{1, {n}};
    case SlotRole::Mask:
      return Shape{1, {n}};
    case SlotRole::ParamSum:
      if (layout == Layout::Jax && k == 1 && !s.is_vector) return {};
      return Shape{1, {k}};
    case SlotRole::Table:
    case SlotRole::TableSum:
      if (s.rows > 0) return Shape{3, {m, s.rows, k / s.rows}};
      return s.is_vector ? Shape{2, {m, k}} : Shape{1, {m}};
    case SlotRole::Random:
      return Shape{1, {kRandomWords}};
  }
  return {};
}

std::string shape_text(const std::vector<int64_t>& shape) {
  std::string out = "(";
  for (size_t i = 0; i < shape.size(); ++i) {
    if (i) out += ", ";
    out += std::to_string(shape[i]);
  }
  if (shape.size() == 1) out += ",";
  return out + ")";
}

std::string slot_line(const SlotInterface& s) {
  std::ostringstream os;
  os << "slot " << role_name(s.role) << " " << s.width << " " << (s.is_vector ? 1 : 0) << " "
     << s.table_of << " " << elem_type_name(s.dtype) << " " << s.name;
  if (s.rows > 0) os << " " << s.rows;  // a Matrix's rows (absent: not a matrix)
  if (s.combine != ir::Combine::Sum) os << " " << ir::combine_name(s.combine);  // min / max
  return os.str();
}

std::optional<SlotInterface> parse_slot_line(std::string_view line) {
  std::istringstream in{std::string(line)};
  std::string word, role, dtype, extra;
  SlotInterface s;
  int is_vector = 0;
  if (!(in >> word >> role >> s.width >> is_vector >> s.table_of >> dtype >> s.name) ||
      word != "slot")
    return std::nullopt;
  // Then a Matrix's rows (dividing its width), then a hawk.min / hawk.max output's combine.
  std::vector<std::string> tail;
  while (in >> extra) tail.push_back(extra);
  if (!tail.empty() && (tail.back() == "min" || tail.back() == "max")) {
    s.combine = tail.back() == "min" ? ir::Combine::Min : ir::Combine::Max;
    tail.pop_back();
  }
  if (tail.size() > 1) return std::nullopt;
  if (tail.size() == 1) {
    try {
      size_t used = 0;
      s.rows = std::stoi(tail[0], &used);
      if (used != tail[0].size()) return std::nullopt;
    } catch (const std::exception&) {
      return std::nullopt;
    }
    if (s.rows < 1 || s.width % s.rows != 0) return std::nullopt;
  }
  const auto r = role_from_name(role);
  const auto t = elem_type_from_name(dtype);
  if (!r || !t || s.width < 1 || (is_vector != 0 && is_vector != 1)) return std::nullopt;
  s.role = *r;
  s.dtype = *t;
  s.is_vector = is_vector == 1;
  return s;
}

}  // namespace raptor::runtime
