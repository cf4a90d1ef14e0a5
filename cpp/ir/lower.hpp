// The front end: from a KernelSpec (source text + resolved names and types) to typed IR.
// It parses the source (parse/parser.hpp), checks every construct against the language of
// docs/language.md, splits vectors into components, turns `if` into selects under predicates,
// unrolls `for range(K)` (with `break`/`continue`), inlines @hawk.func helpers and builds one
// step of the kernel. Every refusal is a raptor::SourceError naming the kernel, file, line and
// column and saying what is allowed instead. Implementation: lower.cpp (statements and the
// kernel), lower_loop.cpp (loops and their exits), lower_expr.cpp (expressions),
// lower_math.cpp (hawk.math), lower_ctx.hpp (shared state). `lower_traced` is kernel.trace's.
#pragma once

#include "ir/ir.hpp"
#include "ir/spec.hpp"

namespace raptor::ir {

Kernel lower(const KernelSpec& spec);

// A named local of the kernel body at the end of its step: its IR values, one per component
// (bools as B values). What `kernel.trace` reports.
struct TracedLocal {
  std::string name;
  bool is_vector = false;
  bool is_bool = false;
  std::vector<int32_t> values;
};

// The kernel as the front end made it, before any pass (values are not renumbered), and its
// locals' end-of-step values: for the reference interpreter's trace (ir/interp.hpp).
struct TracedKernel {
  Kernel kernel;
  std::vector<TracedLocal> locals;
};
TracedKernel lower_traced(const KernelSpec& spec);

// The names of the hawk.math functions the front end knows, for the Python side's checks.
const std::vector<std::string>& math_function_names();
// hawk.math's constants (`hawk.math.nan`, `hawk.math.inf`) by name, as float constants in a
// kernel body.
const std::vector<std::pair<std::string, double>>& math_constant_names();

}  // namespace raptor::ir
