// Reverse mode: the adjoint kernel of a kernel (IR -> IR). Start at `adjoint`.
#pragma once

#include <string>
#include <vector>

#include "ir/ir.hpp"

namespace raptor::ad {

// The kernel that, given cotangents of `k`'s outputs, computes the cotangents of the inputs
// named in `wrt` (vector-Jacobian product). steps = 1 (k's steps are unrolled, see
// unroll.hpp), terminate = -1; name: k.name + "_adjoint". Slots, in this order:
//  a) k's input slots in k's order: Params, Planes, Tables kept; an in-out Mutable m ->
//     Plane "m" (its old value); pure Mutables dropped; Terminated kept (only the skip mask);
//     a ParamSum s -> Param "s_bar" (its cotangent); a TableSum s -> Table "s_bar" (M x width
//     cotangent, M of s's table).
//  b) for each Mutable m of k in order, "m_bar": an in-out Mutable when m is in-out and in
//     wrt (in: the output cotangent, out: the input cotangent; a finished sample copies in to
//     out, the identity), else a Plane (the output cotangent, read only).
//  c) for each w of wrt in order that is not a Mutable: Plane -> pure Mutable "w_bar",
//     Param -> ParamSum "w_bar", Table -> TableSum "w_bar" (table_of = w's new slot).
//  d) for each hawk.min / hawk.max output s, a Param "s_win" (role 'p', its own name as primal
//     name): the winner kernel's result (winner.hpp); s's cotangent goes to that sample only.
// A loop region (ir.hpp's LoopBegin) is reversed by a loop that recomputes each iteration from
// a checkpoint, storing nothing per iteration (adjoint.cpp, `reverse_region`); an active Table
// read inside one is refused (std::invalid_argument).
// A derived name that is taken gets "_" appended until it is unique. A sample skipped by the
// mask contributes nothing (pure outputs: 0 under zero_finished). Throws
// std::invalid_argument for a `wrt` entry that is not a Param, Plane, Table or in-out Mutable.
ir::Kernel adjoint(const ir::Kernel& k, const std::vector<std::string>& wrt);

}  // namespace raptor::ad
