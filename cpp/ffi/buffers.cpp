// Mapping XLA's buffers onto a kernel's slots (see buffers.hpp). Start at `map_buffers`: the
// operand and result positions, dtypes and shapes all come from the kernel's interface
// (runtime/interface.hpp); nothing here restates them.
#include "ffi/buffers.hpp"

#include <string>

namespace raptor::ffi {

using runtime::ElemType;
using runtime::KernelInterface;
using runtime::Layout;
using runtime::SlotInterface;
using runtime::SlotRole;

namespace {

xffi::DataType data_type(ElemType t) {
  switch (t) {
    case ElemType::F32:
      return xffi::DataType::F32;
    case ElemType::F64:
      return xffi::DataType::F64;
    case ElemType::Bool:
      return xffi::DataType::PRED;
    case ElemType::I32:
      return xffi::DataType::S32;
    case ElemType::I64:
      return xffi::DataType::S64;
    case ElemType::U32:
      return xffi::DataType::U32;
  }
  return xffi::DataType::INVALID;
}

std::string type_name(xffi::DataType t) {
  switch (t) {
    case xffi::DataType::PRED:
      return "bool";
    case xffi::DataType::S8:
      return "int8";
    case xffi::DataType::S16:
      return "int16";
    case xffi::DataType::S32:
      return "int32";
    case xffi::DataType::S64:
      return "int64";
    case xffi::DataType::U8:
      return "uint8";
    case xffi::DataType::U16:
      return "uint16";
    case xffi::DataType::U32:
      return "uint32";
    case xffi::DataType::U64:
      return "uint64";
    case xffi::DataType::F16:
      return "float16";
    case xffi::DataType::BF16:
      return "bfloat16";
    case xffi::DataType::F32:
      return "float32";
    case xffi::DataType::F64:
      return "float64";
    default:
      return "XLA type " + std::to_string(static_cast<int>(t));
  }
}

// "plane 'v'", "Param 'dt'", "Table 'w'", "mask 'done'", "sum 'w_bar'".
std::string what(const SlotInterface& s) {
  switch (s.role) {
    case SlotRole::Param:
      return "Param '" + s.name + "'";
    case SlotRole::Mask:
      return "mask '" + s.name + "'";
    case SlotRole::Table:
      return "Table '" + s.name + "'";
    case SlotRole::ParamSum:
    case SlotRole::TableSum:
      return "sum '" + s.name + "'";
    case SlotRole::Random:
      return "Random key '" + s.name + "'";
    default:
      return "plane '" + s.name + "'";
  }
}

std::string names(const KernelInterface& ifc, const std::vector<int>& slots) {
  std::string out;
  for (int s : slots) out += (out.empty() ? "" : ", ") + ifc.slot_name(s);
  return "(" + out + ")";
}

template <class Dims>
std::string dims_text(const Dims& d) {
  std::vector<int64_t> v;
  for (size_t i = 0; i < d.size(); ++i) v.push_back(static_cast<int64_t>(d[i]));
  return runtime::shape_text(v);
}

// The one check of a buffer: its dtype and its whole shape.
xffi::Error check(const runtime::KernelEntry& e, const SlotInterface& s, int slot,
                  const xffi::AnyBuffer& buf, int64_t n, int64_t m, const char* side) {
  const KernelInterface& ifc = e.iface;
  if (buf.element_type() != data_type(s.dtype))
    return bad(e, std::string(side) + what(s) + " has dtype " + type_name(buf.element_type()) +
                      ", expected " + std::string(runtime::elem_type_name(s.dtype)));
  const runtime::Shape want = ifc.shape(slot, n, m, Layout::Jax);
  const auto dims = buf.dimensions();
  if (!want.matches(dims))
    return bad(e, std::string(side) + what(s) + " has shape " + dims_text(dims) + ", expected " +
                      runtime::shape_text(want.vec()));
  return xffi::Error::Success();
}

}  // namespace

xffi::Error bad(const runtime::KernelEntry& e, const std::string& what) {
  return xffi::Error::InvalidArgument("raptor kernel '" + e.name + "': " + what);
}

xffi::Error map_buffers(const runtime::KernelEntry& e, xffi::RemainingArgs args,
                        xffi::RemainingRets rets, runtime::Binding& b,
                        std::vector<const void*>& param_ptr, bool same_kernel) {
  const KernelInterface& ifc = e.iface;
  const std::vector<int>& ops = ifc.operands();
  const std::vector<int>& res = ifc.results();
  if (args.size() != ops.size() || rets.size() != res.size())
    return bad(e, "got " + std::to_string(args.size()) + " operands and " +
                      std::to_string(rets.size()) + " results, expected " +
                      std::to_string(ops.size()) + " operands " + names(ifc, ops) + " and " +
                      std::to_string(res.size()) + " results " + names(ifc, res));
  const size_t ns = ifc.num_slots();
  if (!same_kernel || b.slots.size() != ns || param_ptr.size() != ns) {
    std::vector<runtime::SlotBinding> storage = std::move(b.slots);
    b = runtime::Binding{};
    b.slots = std::move(storage);
    b.slots.assign(ns, runtime::SlotBinding{});
    param_ptr.assign(ns, nullptr);
  }
  b.zero_finished = true;

  // N from the first plane or mask operand (else the first plane result); each Table's M
  // from its operand. Then every buffer is checked against the shape these give.
  const auto operand = [&](size_t j) -> std::optional<xffi::AnyBuffer> {
    auto a = args.get<xffi::AnyBuffer>(j);
    if (!a.has_value()) return std::nullopt;
    return *a;
  };
  const auto result = [&](size_t j) -> std::optional<xffi::AnyBuffer> {
    auto r = rets.get<xffi::AnyBuffer>(j);
    if (!r.has_value()) return std::nullopt;
    return **r;
  };
  const int n_slot = ifc.n_operand_slot() >= 0 ? ifc.n_operand_slot() : ifc.n_slot();
  b.n = 0;
  if (n_slot >= 0) {
    const SlotInterface& s = ifc.slot(n_slot);
    const auto buf = s.is_operand() ? operand(s.operand) : result(s.result);
    if (!buf) return bad(e, "cannot read the buffer of " + what(s));
    const auto dims = buf->dimensions();
    b.n = dims.size() == 0 ? 0 : static_cast<int64_t>(dims[dims.size() - 1]);
  }
  for (size_t j = 0; j < ops.size(); ++j) {
    const int s = ops[j];
    const SlotInterface& si = ifc.slot(s);
    const auto buf = operand(j);
    if (!buf) return bad(e, "cannot read the operand of " + what(si));
    runtime::SlotBinding& sb = b.slots[s];
    int64_t m = 0;
    if (si.role == SlotRole::Table || si.inout) {  // a scatter target is its own table
      const auto dims = buf->dimensions();
      m = sb.table_size = dims.size() == 0 ? -1 : static_cast<int64_t>(dims[0]);
    }
    if (xffi::Error err = check(e, si, s, *buf, b.n, m, ""); !err.success()) return err;
    switch (si.role) {
      case SlotRole::Param:
        param_ptr[s] = buf->untyped_data();
        break;
      case SlotRole::Mask:
        b.mask_in = static_cast<const uint8_t*>(buf->untyped_data());
        break;
      default:  // planes, in-out Mutables' old values, tables, a scatter target's values
        sb.in = buf->untyped_data();
    }
  }
  for (size_t j = 0; j < res.size(); ++j) {
    const int s = res[j];
    const SlotInterface& si = ifc.slot(s);
    const auto buf = result(j);
    if (!buf) return bad(e, "cannot read the result of " + what(si));
    runtime::SlotBinding& sb = b.slots[s];
    if (si.role == SlotRole::TableSum) sb.table_size = b.slots[si.table_of].table_size;
    if (xffi::Error err = check(e, si, s, *buf, b.n, sb.table_size, "output "); !err.success())
      return err;
    if (si.role == SlotRole::Mask)
      b.mask_out = static_cast<uint8_t*>(buf->untyped_data());
    else
      sb.out = buf->untyped_data();
  }
  return xffi::Error::Success();
}

}  // namespace raptor::ffi
