// raptor_core._core, interface half: a kernel's interface (runtime/interface.hpp) as Python
// reads it. eagle's binding checks, the JAX bridge's operand and result order, its abstract
// evaluation and aliases, and hawk's SlotInfo all come from here, so the interface is written
// once, in C++. Start at `kernel_interface`.
#include <nanobind/stl/map.h>
#include <nanobind/stl/string.h>
#include <nanobind/stl/vector.h>

#include <map>

#include "bindings/bindings.hpp"
#include "runtime/build.hpp"
#include "runtime/interface.hpp"

namespace nb = nanobind;

namespace raptor::bindings {

namespace {

using runtime::KernelInterface;
using runtime::SlotInterface;

KernelInterface kernel_interface(const KernelHandle& h, const std::string& dtype,
                                 bool with_digest) {
  if (dtype != "float32" && dtype != "float64")
    throw nb::value_error(("a kernel is built for float32 or float64, not " + dtype).c_str());
  const bool f32 = dtype == "float32";
  const codegen::DType d = f32 ? codegen::DType::F32 : codegen::DType::F64;
  return KernelInterface::of(*h.kernel, f32 ? runtime::ElemType::F32 : runtime::ElemType::F64,
                             with_digest ? runtime::kernel_digest(*h.kernel, d) : "");
}

nb::tuple to_tuple(const std::vector<int64_t>& v) {
  nb::list l;
  for (int64_t x : v) l.append(x);
  return nb::tuple(l);
}

}  // namespace

void bind_interface(nb::module_& m) {
  nb::class_<SlotInterface>(m, "SlotInterface", "One slot of a kernel's interface.")
      .def_ro("name", &SlotInterface::name)
      .def_prop_ro(
          "role", [](const SlotInterface& s) { return std::string(runtime::role_name(s.role)); },
          "'param', 'plane', 'mutable', 'inout', 'mask', 'table', 'param_sum' or "
          "'table_sum'")
      .def_ro("width", &SlotInterface::width)
      .def_ro("is_vector", &SlotInterface::is_vector)
      .def_ro("rows", &SlotInterface::rows)
      .def_ro("table_of", &SlotInterface::table_of, "a TableSum's Table slot; else -1")
      .def_ro("inout", &SlotInterface::inout,
              "a TableSum that is a scatter target (Mutable[Table]): an operand too, its "
              "result the bound values plus the sums")
      .def_prop_ro(
          "dtype",
          [](const SlotInterface& s) { return std::string(runtime::elem_type_name(s.dtype)); },
          "the element type's NumPy name")
      .def_prop_ro(
          "combine", [](const SlotInterface& s) { return std::string(ir::combine_name(s.combine)); },
          "a ParamSum's: 'sum', or 'min' / 'max' for a hawk.min / hawk.max output")
      .def_ro("operand", &SlotInterface::operand, "position among the JAX operands; -1: none")
      .def_ro("result", &SlotInterface::result, "position among the JAX results; -1: none")
      .def_prop_ro("sized_by_n", &SlotInterface::sized_by_n)
      .def("__repr__", [](const SlotInterface& s) { return runtime::slot_line(s); });

  nb::class_<KernelInterface>(m, "Interface",
                              "A compiled kernel's interface: slots, shapes, JAX positions.")
      .def_prop_ro("name", &KernelInterface::name)
      .def_prop_ro("digest", &KernelInterface::digest)
      .def_prop_ro(
          "dtype",
          [](const KernelInterface& i) { return std::string(runtime::elem_type_name(i.dtype())); })
      .def_prop_ro("slots", &KernelInterface::slots, "per slot, in signature order")
      .def_prop_ro("operands", &KernelInterface::operands, "the slot of each JAX operand")
      .def_prop_ro("results", &KernelInterface::results, "the slot of each JAX result")
      .def_prop_ro(
          "aliases",
          [](const KernelInterface& i) {
            std::map<int, int> out;
            for (const runtime::Alias& a : i.aliases()) out[a.operand] = a.result;
            return out;
          },
          "operand -> result whose buffer it may become (in-out Mutables, the mask)")
      .def_prop_ro("mask_slot", &KernelInterface::mask_slot)
      .def_prop_ro("n_operand_slot", &KernelInterface::n_operand_slot,
                   "the first operand sized by N; -1: none")
      .def_prop_ro("n_slot", &KernelInterface::n_slot, "the first slot sized by N; -1: none")
      .def(
          "expected_shape",
          [](const KernelInterface& i, int slot, int64_t n, const std::vector<int64_t>& sizes,
             bool jax) {
            if (slot < 0 || static_cast<size_t>(slot) >= i.num_slots())
              throw nb::index_error(("no slot " + std::to_string(slot)).c_str());
            return to_tuple(i.expected_shape(slot, n, sizes,
                                             jax ? runtime::Layout::Jax : runtime::Layout::Eagle));
          },
          nb::arg("slot"), nb::arg("n"), nb::arg("table_sizes"), nb::arg("jax") = false,
          "The shape of slot's buffer for n samples; table_sizes[t] is Table slot t's M. jax: "
          "the bridge's layout (a ParamSum of width 1 is 0-d).");

  m.def("kernel_interface", &kernel_interface, nb::arg("kernel"), nb::arg("dtype"),
        nb::arg("with_digest") = true,
        "The interface of a kernel built for dtype ('float32' or 'float64'); without its digest\n"
        "(empty: hashing the IR is the costly part) when with_digest is False.");
}

}  // namespace raptor::bindings
