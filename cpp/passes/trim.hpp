// Dropping the input slots a kernel never reads (IR -> IR). Start at `drop_unread_inputs`.
//
// Derived kernels take every input of the kernel they came from, but their math often needs
// fewer: a tangent kernel does not read a primal input that enters its kernel linearly, and
// the adjoint of a tangent kernel never reads the tangents (it is linear in them). The JAX
// bridge calls trimmed kernels, so what a kernel does not read is neither saved as a residual
// of a scan nor filled with zeros in the backward pass.
#pragma once

#include <vector>

#include "ir/ir.hpp"

namespace raptor::passes {

// Per slot: whether some value of `k` reads it (Load* of the slot; the mask of a kernel with
// one counts as read, and so does an in-out Mutable's old value when LoadState reads it).
std::vector<bool> slots_read(const ir::Kernel& k);

// Removes the Param, Plane and Table slots of `k` that no value reads (a Table that a
// TableSum takes its size from is kept) and renumbers the slot indices of values, stores and
// TableSums. Outputs, the mask and in-out Mutables are never removed. Returns how many slots
// it removed.
int drop_unread_inputs(ir::Kernel& k);

}  // namespace raptor::passes
