// raptor_core._core, compiler half: `lower(spec)` (hawk's kernel definition), the Kernel
// handle (IR text, digests, emitted C++, tangent/adjoint), and KernelError.
#include <nanobind/stl/map.h>
#include <nanobind/stl/pair.h>
#include <nanobind/stl/string.h>
#include <nanobind/stl/tuple.h>
#include <nanobind/stl/vector.h>

#include <cmath>
#include <set>

#include "ad/adjoint.hpp"
#include "ad/linearize.hpp"
#include "ad/tangent.hpp"
#include "ad/winner.hpp"
#include "bindings/bindings.hpp"
#include "codegen/cpp_emitter.hpp"
#include "common/error.hpp"
#include "ir/combine.hpp"
#include "ir/interp.hpp"
#include "ir/lower.hpp"
#include "passes/optimize.hpp"
#include "passes/stages.hpp"
#include "passes/steps.hpp"
#include "passes/trim.hpp"
#include "runtime/build.hpp"
#include "runtime/nvrtc.hpp"

namespace nb = nanobind;

namespace raptor::bindings {

namespace {

ir::SlotKind kind_from(const std::string& s) {
  if (s == "param") return ir::SlotKind::Param;
  if (s == "plane") return ir::SlotKind::Plane;
  if (s == "mutable") return ir::SlotKind::Mutable;
  if (s == "terminated") return ir::SlotKind::Terminated;
  if (s == "table") return ir::SlotKind::Table;
  if (s == "random") return ir::SlotKind::Random;
  if (s == "param_sum") return ir::SlotKind::ParamSum;  // Mutable[Param]: `out = hawk.sum(x)`
  // Mutable[Table[...]]: `hawk.scatter(t)[i] += v` (an in-out TableSum, its own table)
  if (s == "table_scatter") return ir::SlotKind::TableSum;
  throw std::invalid_argument("unknown parameter kind '" + s + "'");
}

codegen::DType dtype_from(const std::string& s) {
  if (s == "float32") return codegen::DType::F32;
  if (s == "float64") return codegen::DType::F64;
  throw nb::value_error(("a kernel is built for float32 or float64, not " + s).c_str());
}

ir::FunctionSource function_from(nb::handle d) {
  ir::FunctionSource f;
  f.name = nb::cast<std::string>(d["name"]);
  f.file = nb::cast<std::string>(d["file"]);
  f.first_line = nb::cast<int>(d["first_line"]);
  f.source = nb::cast<std::string>(d["source"]);
  for (auto [key, value] : nb::cast<nb::dict>(d["globals"])) {
    const std::string name = nb::cast<std::string>(key);
    nb::tuple t = nb::cast<nb::tuple>(value);
    const std::string kind = nb::cast<std::string>(t[0]);
    ir::Symbol s;
    if (kind == "number") {
      s.kind = ir::Symbol::Kind::Number;
      s.number = nb::cast<double>(t[1]);
      s.is_int = nb::cast<bool>(t[2]);
      if (t.size() > 3) s.int_text = nb::cast<std::string>(t[3]);  // the int, exact
    } else if (kind == "bool") {
      s.kind = ir::Symbol::Kind::Bool;
      s.bool_value = nb::cast<bool>(t[1]);
    } else if (kind == "math") {
      s.kind = ir::Symbol::Kind::Math;
      s.name = nb::cast<std::string>(t[1]);
    } else if (kind == "helper") {
      s.kind = ir::Symbol::Kind::Helper;
      s.helper = nb::cast<int>(t[1]);
    } else if (kind == "module") {
      s.kind = ir::Symbol::Kind::Module;
      s.name = nb::cast<std::string>(t[1]);
    } else {
      s.kind = ir::Symbol::Kind::Unsupported;
      s.name = nb::cast<std::string>(t[1]);
    }
    f.globals[name] = s;
  }
  if (nb::cast<nb::dict>(d).contains("jvp"))
    f.jvp = nb::cast<int>(d["jvp"]);  // @helper.defjvp rule
  return f;
}

ir::KernelSpec spec_from(nb::dict spec_dict) {
  ir::KernelSpec spec;
  spec.fn = function_from(spec_dict["fn"]);
  for (nb::handle p : nb::cast<nb::list>(spec_dict["params"])) {
    nb::tuple t = nb::cast<nb::tuple>(p);
    ir::ParamSpec ps;
    ps.name = nb::cast<std::string>(t[0]);
    ps.kind = kind_from(nb::cast<std::string>(t[1]));
    ps.width = nb::cast<int>(t[2]);
    ps.is_vector = nb::cast<bool>(t[3]);
    ps.error = nb::cast<std::string>(t[4]);
    if (t.size() > 5) ps.rows = nb::cast<int>(t[5]);  // Matrix[rows, width / rows]
    if (t.size() > 6) {  // the element type of an integer or bool plane (hawk.int32, ...)
      const std::string d = nb::cast<std::string>(t[6]);
      ps.dtype = d == "int32"   ? ir::Dtype::Int32
                 : d == "int64" ? ir::Dtype::Int64
                 : d == "bool"  ? ir::Dtype::Bool
                                : ir::Dtype::Float;
    }
    spec.params.push_back(ps);
  }
  spec.steps = nb::cast<int>(spec_dict["steps"]);
  spec.active_set = nb::cast<bool>(spec_dict["active_set"]);
  for (nb::handle h : nb::cast<nb::list>(spec_dict["helpers"]))
    spec.helpers.push_back(function_from(h));
  return spec;
}

KernelHandle lower(nb::dict spec_dict) {
  const ir::KernelSpec spec = spec_from(spec_dict);
  ir::Kernel k;
  {
    nb::gil_scoped_release release;
    k = ir::lower(spec);
    passes::optimize(k);
    ir::verify(k);
  }
  return KernelHandle{std::make_shared<const ir::Kernel>(std::move(k))};
}

using SlotTuple = std::tuple<std::string, std::string, int, bool, bool, int>;

std::vector<SlotTuple> slots(const KernelHandle& h) {
  std::vector<SlotTuple> out;
  for (const ir::Slot& s : h.kernel->slots)
    out.emplace_back(s.name, ir::slot_kind_name(s.kind), s.width, s.is_vector, s.inout, s.table_of);
  return out;
}

using Named = std::map<std::string, std::vector<double>>;
using InterpResult = std::tuple<Named, Named, std::vector<uint8_t>, uint32_t,
                                std::tuple<int64_t, int64_t, int64_t, int64_t>>;

// The reference interpreter (ir/interp.hpp) over values given by slot name, flattened in C
// order as eagle binds them: planes (width, N), tables (M, width). Mutable outs and sums
// start at 0. Returns (outs by name, sums' |contributions| by name, mask, finished, error).
ir::InterpBinding binding_for(const ir::Kernel& k, int64_t n,
                              const std::map<std::string, std::vector<double>>& inputs,
                              const std::vector<uint8_t>& mask) {
  ir::InterpBinding b;
  b.n = n;
  b.slots.resize(k.slots.size());
  auto input = [&](const ir::Slot& s) -> const std::vector<double>& {
    const auto it = inputs.find(s.name);
    if (it == inputs.end())
      throw nb::key_error(
          ("interpret: kernel '" + k.name + "' needs a value for '" + s.name + "'").c_str());
    return it->second;
  };
  for (size_t i = 0; i < k.slots.size(); ++i) {
    const ir::Slot& s = k.slots[i];
    const size_t w = static_cast<size_t>(s.width);
    switch (s.kind) {
      case ir::SlotKind::Param:
      case ir::SlotKind::Plane:
      case ir::SlotKind::Table:
        b.slots[i].in = input(s);
        break;
      case ir::SlotKind::Mutable:
        if (s.inout) b.slots[i].in = input(s);
        b.slots[i].out.assign(w * static_cast<size_t>(n), 0.0);
        break;
      case ir::SlotKind::Terminated:
        b.mask = mask.empty() ? std::vector<uint8_t>(static_cast<size_t>(n), 0) : mask;
        break;
      case ir::SlotKind::ParamSum:  // 0, or +inf / -inf for hawk.min / hawk.max
        b.slots[i].out.assign(w, ir::combine_identity(s.combine));
        break;
      case ir::SlotKind::TableSum: {
        if (s.inout) {  // a scatter target (Mutable[Table]): its bound values plus the sums
          b.slots[i].in = input(s);
          b.slots[i].out = b.slots[i].in;
          // the scale of a sum added in another order includes the values added to
          b.slots[i].sum_abs.resize(b.slots[i].in.size());
          for (size_t j = 0; j < b.slots[i].in.size(); ++j)
            b.slots[i].sum_abs[j] = std::fabs(b.slots[i].in[j]);
          break;
        }
        const ir::Slot& t = k.slots[static_cast<size_t>(s.table_of)];
        const size_t m = input(t).size() / static_cast<size_t>(t.width);
        b.slots[i].out.assign(m * w, 0.0);
        break;
      }
      case ir::SlotKind::Random: {  // [k0, k1] (jax.random.key_data), optional third: base
        const std::vector<double>& key = input(s);
        if (key.size() != 2 && key.size() != 3)
          throw nb::value_error(("interpret: kernel '" + k.name + "': Random '" + s.name +
                                 "' takes [k0, k1] or [k0, k1, sample_base]")
                                    .c_str());
        b.rng_key[0] = static_cast<uint32_t>(key[0]);
        b.rng_key[1] = static_cast<uint32_t>(key[1]);
        if (key.size() == 3) b.sample_base = static_cast<int64_t>(key[2]);
        break;
      }
    }
  }
  return b;
}

InterpResult interpret_one(const ir::Kernel& k, int64_t n,
                           const std::map<std::string, std::vector<double>>& inputs,
                           const std::vector<uint8_t>& mask, bool zero_finished, bool float32,
                           int perturb_ulps, int64_t sample_base, int64_t n_total,
                           bool perturb_products) {
  ir::InterpBinding b = binding_for(k, n, inputs, mask);
  if (sample_base != 0) b.sample_base = sample_base;
  b.n_total = n_total;
  b.zero_finished = zero_finished;
  b.float32 = float32;
  b.perturb_ulps = perturb_ulps;
  b.perturb_products = perturb_products;
  {
    nb::gil_scoped_release release;
    ir::interpret(k, b);
  }
  Named outs, sum_abs;
  for (size_t i = 0; i < k.slots.size(); ++i) {
    const ir::SlotKind kind = k.slots[i].kind;
    if (kind == ir::SlotKind::ParamSum || kind == ir::SlotKind::TableSum) {
      std::vector<double>& a = b.slots[i].sum_abs;
      if (a.empty()) a.assign(b.slots[i].out.size(), 0.0);
      sum_abs[k.slots[i].name] = std::move(a);
    }
    if (kind == ir::SlotKind::Mutable || kind == ir::SlotKind::ParamSum ||
        kind == ir::SlotKind::TableSum)
      outs[k.slots[i].name] = std::move(b.slots[i].out);
  }
  return {std::move(outs),
          std::move(sum_abs),
          std::move(b.mask),
          b.finished,
          {b.error[0], b.error[1], b.error[2], b.error[3]}};
}

// The reference interpreter over a kernel's stages (passes/stages.hpp) in order: each stage's
// sums are its outputs and the later stages' Params (rounded to float in a float32 run, as a
// float32 build writes them); outputs of every stage, the hidden sums included. A stage that
// reports an error ends the run with it.
InterpResult interpret(const KernelHandle& h, int64_t n,
                       const std::map<std::string, std::vector<double>>& inputs,
                       const std::vector<uint8_t>& mask, bool zero_finished, bool float32,
                       int perturb_ulps, int64_t sample_base, int64_t n_total,
                       bool perturb_products) {
  const ir::Kernel& k = *h.kernel;
  if (k.stage_links.empty())
    return interpret_one(k, n, inputs, mask, zero_finished, float32, perturb_ulps, sample_base,
                         n_total, perturb_products);
  const passes::Stages stages = passes::split_stages(k);
  std::map<std::string, std::vector<double>> ins = inputs;
  InterpResult all;
  for (const ir::Kernel& st : stages.kernels) {
    InterpResult r = interpret_one(st, n, ins, mask, zero_finished, float32, perturb_ulps,
                                   sample_base, n_total, perturb_products);
    for (auto& [name, v] : std::get<0>(r)) std::get<0>(all)[name] = v;
    for (auto& [name, v] : std::get<1>(r)) std::get<1>(all)[name] = v;
    std::get<2>(all) = std::get<2>(r);
    std::get<3>(all) += std::get<3>(r);
    std::get<4>(all) = std::get<4>(r);
    if (std::get<0>(std::get<4>(r)) != 0) {  // a table error's slot as the kernel's own index
      int64_t& slot = std::get<1>(std::get<4>(all));
      if (std::get<0>(std::get<4>(r)) == 1 && slot >= 0 &&
          static_cast<size_t>(slot) < st.slots.size())
        slot = k.find_slot(st.slots[static_cast<size_t>(slot)].name);
      break;
    }
    for (const ir::Kernel::StageLink& l : k.stage_links) {
      const auto it = std::get<0>(r).find(l.sum);
      if (it == std::get<0>(r).end()) continue;
      std::vector<double> v = it->second;
      if (float32)
        for (double& x : v) x = static_cast<double>(static_cast<float>(x));
      ins[l.param] = v;
    }
  }
  return all;
}

// The optimized IR as plain tuples, for lowerings written outside C++ (the JAX bridge's XLA
// lowering, eagle/frameworks/_jax_xla.py): everything `ir::Kernel` says about one step, by
// op and slot-kind name so that a reader refuses what it does not know (docs/jax.md).
nb::dict op_list(const KernelHandle& h) {
  const ir::Kernel& k = *h.kernel;
  // A type added to ir::Type later reads "?" here, which the Python side refuses by name.
  const auto type_name = [](ir::Type t) -> const char* {
    switch (t) {
      case ir::Type::F:
        return "F";
      case ir::Type::B:
        return "B";
      case ir::Type::I:
        return "I";
    }
    return "?";
  };
  nb::list values, stores, slot_list;
  nb::dict combine;  // hawk.min / hawk.max slots: slot -> "min" / "max" (sums are absent)
  for (size_t s = 0; s < k.slots.size(); ++s)
    if (k.slots[s].combine != ir::Combine::Sum)
      combine[nb::int_(s)] = ir::combine_name(k.slots[s].combine);
  for (const ir::Value& v : k.values) {
    nb::list args;
    for (int a = 0; a < ir::op_arity(v.op); ++a) args.append(v.args[a]);
    values.append(nb::make_tuple(ir::op_name(v.op), type_name(v.type), nb::tuple(args), v.slot,
                                 v.comp, v.imm, v.iimm, v.pred));
  }
  for (const ir::Store& s : k.stores)
    stores.append(nb::make_tuple(s.slot, s.comp, s.value, s.index, s.pred));
  for (const ir::Slot& s : k.slots)
    slot_list.append(
        nb::make_tuple(s.name, ir::slot_kind_name(s.kind), s.width, s.inout, s.table_of));
  nb::dict d;
  d["name"] = k.name;
  d["steps"] = k.steps;
  d["slots"] = slot_list;
  d["values"] = values;
  d["stores"] = stores;
  d["terminate"] = k.terminate;
  d["combine"] = combine;
  return d;
}

// kernel.trace: (name, is_vector, is_bool, values (n, steps, width) flattened) per local,
// in name order, and the mask after the run.
using TraceResult =
    std::tuple<std::vector<std::tuple<std::string, bool, bool, int, std::vector<double>>>,
               std::vector<uint8_t>>;

// Lowers the spec without passes and runs the reference interpreter on n samples (inputs as
// for `interpret`), recording every named local at the end of each step (ir/interp.hpp).
TraceResult trace(nb::dict spec_dict, int64_t n,
                  const std::map<std::string, std::vector<double>>& inputs,
                  const std::vector<uint8_t>& mask, bool float32) {
  const ir::KernelSpec spec = spec_from(spec_dict);
  ir::TracedKernel t;
  ir::InterpBinding b;
  {
    nb::gil_scoped_release release;
    t = ir::lower_traced(spec);
  }
  b = binding_for(t.kernel, n, inputs, mask);
  b.float32 = float32;
  for (const ir::TracedLocal& l : t.locals)
    for (const int32_t v : l.values) b.trace_values.push_back(v);
  if (!b.trace_values.empty()) {
    nb::gil_scoped_release release;
    ir::interpret(t.kernel, b);
  }
  std::vector<std::tuple<std::string, bool, bool, int, std::vector<double>>> out;
  const size_t total = b.trace_values.size();
  const size_t steps = static_cast<size_t>(t.kernel.steps);
  size_t at = 0;
  for (const ir::TracedLocal& l : t.locals) {
    const size_t w = l.values.size();
    std::vector<double> data(static_cast<size_t>(n) * steps * w);
    for (size_t r = 0; r < static_cast<size_t>(n) * steps; ++r)
      for (size_t c = 0; c < w; ++c) data[r * w + c] = b.trace_out[r * total + at + c];
    out.emplace_back(l.name, l.is_vector, l.is_bool, static_cast<int>(w), std::move(data));
    at += w;
  }
  return {std::move(out), std::move(b.mask)};
}

KernelHandle derived(ir::Kernel k) {
  passes::optimize(k);
  ir::verify(k);
  return KernelHandle{std::make_shared<const ir::Kernel>(std::move(k))};
}

}  // namespace

void bind_compiler(nb::module_& m) {
  static nb::exception<SourceError> kernel_error(m, "KernelError", PyExc_Exception);
  nb::register_exception_translator([](const std::exception_ptr& p, void*) {
    try {
      std::rethrow_exception(p);
    } catch (const SourceError& e) {
      PyErr_SetString(kernel_error.ptr(), e.what());
    }
  });

  nb::class_<KernelHandle>(m, "Kernel", "A kernel's IR, made by lower() or derived from another.")
      .def_prop_ro("name", [](const KernelHandle& h) { return h.kernel->name; })
      .def_prop_ro("file", [](const KernelHandle& h) { return h.kernel->file; })
      .def_prop_ro("steps", [](const KernelHandle& h) { return h.kernel->steps; })
      .def_prop_ro("active_set", [](const KernelHandle& h) { return h.kernel->active_set; })
      .def("slots", &slots, "(name, kind, width, is_vector, inout, table_of) per parameter")
      .def(
          "ir", [](const KernelHandle& h) { return ir::print(*h.kernel); }, "The IR as text.")
      .def(
          "slot_roles",
          [](const KernelHandle& h) {
            std::vector<std::pair<std::string, std::string>> out;
            for (const ir::Slot& s : h.kernel->slots)
              out.emplace_back(std::string(1, s.role), s.primal.empty() ? s.name : s.primal);
            return out;
          },
          "(role, primal name) per slot: 'p' primal, 't' tangent, 'c' cotangent of that slot, 'r' "
          "a "
          "residual of linearize.")
      .def("op_list", &op_list,
           "The optimized IR as plain data: {name, steps, slots: (name, kind, width, inout, "
           "table_of), values: (op, type 'F'|'B'|'I', args, slot, comp, imm, iimm, pred), "
           "stores: (slot, comp, value, index, pred), terminate, combine: {slot: 'min' | 'max'} "
           "for hawk.min / hawk.max outputs}.")
      .def("num_values", [](const KernelHandle& h) { return h.kernel->values.size(); })
      .def("digest",
           [](const KernelHandle& h, const std::string& dtype) {
             return runtime::kernel_digest(*h.kernel, dtype_from(dtype));
           })
      .def("cpp",
           [](const KernelHandle& h, const std::string& dtype) {
             const codegen::DType d = dtype_from(dtype);
             const std::string digest = runtime::kernel_digest(*h.kernel, d);
             return codegen::emit_cpp(
                 {{h.kernel.get(), d, codegen::symbol_name(*h.kernel, d, digest)}});
           })
      .def(
          "cuda",
          [](const KernelHandle& h, const std::string& dtype) {
            const codegen::DType d = dtype_from(dtype);
            const std::string digest = runtime::kernel_digest(*h.kernel, d);
            return codegen::emit_cuda(
                {{h.kernel.get(), d, codegen::symbol_name(*h.kernel, d, digest)}});
          },
          "The CUDA C++ translation unit (runtime/abi_cuda.h) for this kernel.")
      .def(
          "with_steps",
          [](const KernelHandle& h, int steps) {
            if (steps < 1) throw nb::value_error("steps must be >= 1");
            return KernelHandle{
                std::make_shared<const ir::Kernel>(passes::with_steps(*h.kernel, steps))};
          },
          "The same kernel running `steps` steps per launch (passes/steps.hpp).")
      .def("tangent",
           [](const KernelHandle& h, const std::vector<std::string>& wrt, bool with_primal) {
             return derived(ad::tangent(*h.kernel, wrt, with_primal));
           })
      .def(
          "winner", [](const KernelHandle& h) { return derived(ad::winner(*h.kernel)); },
          "The winner kernel of a kernel with hawk.min / hawk.max outputs (ad/winner.hpp): per "
          "such output s, the global index of the sample whose value it is, 's_win', given its "
          "result as Param 's'.")
      .def("adjoint",
           [](const KernelHandle& h, const std::vector<std::string>& wrt) {
             return derived(ad::adjoint(*h.kernel, wrt));
           })
      .def(
          "linearize",
          [](const KernelHandle& h, const std::vector<std::string>& wrt) {
            ad::Linearized l = ad::linearize(*h.kernel, wrt);
            return std::make_pair(derived(std::move(l.primal)), derived(std::move(l.linear)));
          },
          "(primal, linear): the JVP split as JAX linearizes (ad/linearize.hpp): the primal "
          "kernel also writes residual planes (role 'r'), which the linear kernel reads with the "
          "input tangents instead of recomputing the primal.")
      .def(
          "without_unread_inputs",
          [](const KernelHandle& h) {
            ir::Kernel k = *h.kernel;
            passes::drop_unread_inputs(k);
            ir::verify(k);
            return KernelHandle{std::make_shared<const ir::Kernel>(std::move(k))};
          },
          "The same kernel without the Param, plane and Table inputs no value reads.")
      .def_prop_ro("staged", [](const KernelHandle& h) { return !h.kernel->stage_links.empty(); })
      .def(
          "stage_links",
          [](const KernelHandle& h) {
            std::vector<std::tuple<std::string, std::string, bool, int, int>> out;
            const passes::Stages st = passes::split_stages(*h.kernel);
            for (size_t l = 0; l < h.kernel->stage_links.size(); ++l) {
              const auto& x = h.kernel->stage_links[l];
              out.emplace_back(x.sum, x.param, x.hidden, x.line, st.link_stage[l]);
            }
            return out;
          },
          "(sum, param, hidden, line, stage) per stage boundary: the stage that writes ParamSum "
          "`sum`, which later stages read as Param `param`; hidden: not a user's parameter.")
      .def(
          "stages",
          [](const KernelHandle& h) {
            passes::Stages st;
            {
              nb::gil_scoped_release release;
              st = passes::split_stages(*h.kernel);
            }
            std::vector<KernelHandle> out;
            for (ir::Kernel& k : st.kernels)
              out.push_back(KernelHandle{std::make_shared<const ir::Kernel>(std::move(k))});
            return out;
          },
          "The kernel's stages in the order they run (passes/stages.hpp); [] without a stage "
          "boundary.")
      .def("interpret", &interpret, nb::arg("n"), nb::arg("inputs"),
           nb::arg("mask") = std::vector<uint8_t>(), nb::arg("zero_finished") = false,
           nb::arg("float32") = false, nb::arg("perturb_ulps") = 0, nb::arg("sample_base") = 0,
           nb::arg("n_total") = -1, nb::arg("perturb_products") = false,
           "Runs the reference interpreter (ir/interp.hpp) on n samples: inputs by slot name, "
           "flattened in C order (planes (width, n), tables (M, width)); sample_base, n_total: "
           "a shard's hawk.math.sample_index() base and n_samples() (-1: n); float32: in float "
           "arithmetic, as a float32 build; perturb_ulps: move inexact library results (exp, log, "
           "sin, cos, tan, tanh, pow, atan2 and ir/math_fns.hpp's Libm ones: asin .. cbrt, "
           "hypot) by that many ulps; perturb_products: with perturb_ulps, also move each "
           "product by 1 to 16 ulps, up or down by its place (a model of FMA contraction). "
           "Returns (outputs by name, sums' |contributions| by name, mask, finished, (error "
           "code, slot, index, sample)).");

  m.def("trace", &trace, nb::arg("spec"), nb::arg("n"), nb::arg("inputs"),
        nb::arg("mask") = std::vector<uint8_t>(), nb::arg("float32") = false,
        "kernel.trace: lowers `spec` (no passes) and runs the reference interpreter on n "
        "samples, recording each named local at the end of every step. Returns ([(name, "
        "is_vector, is_bool, width, values (n, steps, width) flattened)], mask).");

  m.def(
      "nvrtc_check",
      [](const std::vector<KernelHandle>& handles, const std::string& arch, bool fast_compile) {
        // One CUDA unit for all the kernels (each once, by digest) in both dtypes, compiled to
        // a cubin for `arch`: the CI check that everything the tests define compiles.
        std::vector<const ir::Kernel*> ks;
        std::set<std::string> seen;
        for (const KernelHandle& h : handles)
          if (seen.insert(runtime::kernel_digest(*h.kernel, codegen::DType::F64)).second)
            ks.push_back(h.kernel.get());
        nb::gil_scoped_release release;
        const auto nvrtc = runtime::Nvrtc::open();
        if (!nvrtc) throw std::runtime_error("raptor: NVRTC not found (set RAPTOR_NVRTC)");
        std::vector<codegen::KernelToEmit> todo;
        runtime::describe_build(ks, todo);
        std::string names;
        for (const ir::Kernel* k : ks) names += (names.empty() ? "" : ", ") + k->name;
        try {
          nvrtc->compile_cubin(codegen::emit_cuda(todo), "nvrtc_check.cu", arch, fast_compile);
        } catch (const std::runtime_error& e) {
          throw std::runtime_error("raptor: NVRTC could not compile the CUDA code of kernels " +
                                   names + " for " + arch + ": " + e.what());
        }
        return static_cast<int>(todo.size());
      },
      nb::arg("kernels"), nb::arg("arch"), nb::arg("fast_compile") = false,
      "Compiles the kernels (both dtypes) with NVRTC to a cubin for `arch` (e.g. 'sm_90'); "
      "returns how many (kernel, dtype) pairs; raises RuntimeError with NVRTC's log. "
      "fast_compile: --Ofast-compile=max (NVRTC 12.8+), for checks that the code compiles.");
  m.def("lower", &lower, nb::arg("spec"),
        "Compiles a kernel spec (see hawk/source.py) to optimized IR; raises KernelError.");
  m.def("math_functions", []() { return ir::math_function_names(); });
}

}  // namespace raptor::bindings
