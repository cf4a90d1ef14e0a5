// Forward mode split as JAX linearizes: the primal kernel that also stores the intermediate
// values the tangents need (residuals), and a linear kernel that computes the tangents from
// those residuals and the input tangents without recomputing the primal. Start at
// `linearize`.
//
// The JAX bridge's "xla" lowering uses it for a kernel's JVP (eagle/frameworks/_jax_rules.py):
// the primal call then computes every primal value once, and reverse mode transposes only the
// linear kernel, whose adjoint is a few multiplies and adds per residual instead of the whole
// primal step again (docs/jax.md, "Derivatives on the xla path").
#pragma once

#include <string>
#include <vector>

#include "ir/ir.hpp"

namespace raptor::ad {

struct Linearized {
  // k unrolled (steps = 1: same slots, outputs, mask and table errors as k), then one pure
  // float Mutable of width 1 per residual, role 'r', named "res<j>" (with "_" appended while
  // taken). Name: k.name + "_jvp_primal".
  ir::Kernel primal;
  // The slots of tangent(k, wrt, with_primal = false), then one float Plane per residual (the
  // primal kernel's names, role 'r'): tangent(k, wrt, false)'s outputs, linear in
  // the "_dot" inputs. terminate = -1 (the mask only skips). Name: k.name + "_jvp_linear".
  ir::Kernel linear;
};

// Splits tangent(k, wrt, with_primal = true) into the two kernels above: a value that does not
// depend on a tangent input is *known* and computed by `primal`; a known value that a tangent
// value or a tangent store reads is a residual, unless it is a leaf the linear kernel reads
// itself (a constant, a Param, a plane, the mask) or an integer or bool, which the linear
// kernel recomputes from its operands (so every residual is a float). Both kernels are
// optimized and verified.
// Throws std::invalid_argument for a `wrt` that tangent() refuses.
Linearized linearize(const ir::Kernel& k, const std::vector<std::string>& wrt);

}  // namespace raptor::ad
