// libFuzzer entry point for the whole front end and the passes: arbitrary text as the body of
// a kernel with a fixed signature (a Param, a Scalar, a Vector[3], a Table and three outputs
// including a mask), lowered to IR, optimized, verified, differentiated and emitted. A
// raptor::SourceError is the expected refusal; any other exception, crash, sanitizer report,
// hang or verifier failure is a bug.
#include <cstddef>
#include <cstdint>
#include <string>

#include "ad/adjoint.hpp"
#include "ad/tangent.hpp"
#include "codegen/cpp_emitter.hpp"
#include "common/error.hpp"
#include "ir/lower.hpp"
#include "passes/optimize.hpp"

namespace {

raptor::ir::KernelSpec spec_for(const std::string& body) {
  using raptor::ir::SlotKind;
  using raptor::ir::Symbol;
  raptor::ir::KernelSpec spec;
  spec.fn.name = "fuzzed";
  spec.fn.file = "fuzz.py";
  spec.fn.first_line = 1;
  spec.fn.source =
      "def fuzzed(p: Param, x: Scalar, v: Vector[3], w: Table[Scalar], terminated: Terminated,\n"
      "           y: Mutable[Scalar], u: Mutable[Vector[3]]):\n" +
      body;
  for (const char* name : {"vec", "norm", "dot", "cross", "sqrt", "exp", "log", "sin", "tanh",
                           "atan2", "abs", "minimum", "maximum", "clamp", "floor", "where"})
    spec.fn.globals[name] = Symbol{Symbol::Kind::Math, 0.0, false, "", false, name, -1};
  spec.fn.globals["K"] = Symbol{Symbol::Kind::Number, 3.0, true, "3", false, "", -1};
  spec.fn.globals["h"] = Symbol{Symbol::Kind::Helper, 0.0, false, "", false, "", 0};
  raptor::ir::FunctionSource helper;
  helper.name = "h";
  helper.file = "fuzz.py";
  helper.source = "def h(a, b):\n    return a * b + 1.0\n";
  spec.helpers.push_back(helper);
  spec.params = {{"p", SlotKind::Param, 1, false, ""},
                 {"x", SlotKind::Plane, 1, false, ""},
                 {"v", SlotKind::Plane, 3, true, ""},
                 {"w", SlotKind::Table, 1, false, ""},
                 {"terminated", SlotKind::Terminated, 1, false, ""},
                 {"y", SlotKind::Mutable, 1, false, ""},
                 {"u", SlotKind::Mutable, 3, true, ""}};
  spec.steps = 2;
  return spec;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  if (size > 4096) return 0;  // keep runs fast: bodies are short
  const std::string body(reinterpret_cast<const char*>(data), size);
  try {
    raptor::ir::Kernel k = raptor::ir::lower(spec_for(body));
    raptor::passes::optimize(k);
    raptor::ir::verify(k);
    const raptor::ir::Kernel t = raptor::ad::tangent(k, {"x", "v", "p"}, true);
    const raptor::ir::Kernel a = raptor::ad::adjoint(k, {"x", "v", "p", "w"});
    (void)raptor::codegen::emit_cpp(
        {{&k, raptor::codegen::DType::F64, "f"}, {&a, raptor::codegen::DType::F32, "g"}});
    (void)t;
  } catch (const raptor::SourceError&) {
  }
  return 0;
}
