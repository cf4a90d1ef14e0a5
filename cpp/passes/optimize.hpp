// IR-to-IR clean-ups run on every kernel before code generation and on derived kernels:
// constant folding with IEEE-exact identities, common-subexpression elimination (values
// with different predicates are never merged) and dead-code elimination. Implementation in
// optimize.cpp; operator semantics in eval.hpp.
#pragma once

#include "ir/ir.hpp"

namespace raptor::passes {

// Folds constants and exact identities (x*1, x/1, x-0, --x, select of a constant, ...) and
// merges identical values, in one forward sweep. Never changes a result bit.
void fold_and_cse(ir::Kernel& k);

// Removes values no store, predicate or the terminate condition depends on, and renumbers.
void dce(ir::Kernel& k);

// fold_and_cse, then dce.
void optimize(ir::Kernel& k);

}  // namespace raptor::passes
