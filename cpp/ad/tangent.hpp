// Forward mode: the tangent kernel of a kernel (IR -> IR). Start at `tangent`.
#pragma once

#include <string>
#include <vector>

#include "ir/ir.hpp"

namespace raptor::ad {

// The kernel that computes the tangents of `k`'s outputs (and, with `with_primal`, its
// outputs too) given tangents of the inputs named in `wrt`. steps = 1 (k's steps are
// unrolled, see unroll.hpp); name: k.name + "_tangent". Slots, in this order:
//  a) k's slots in order: Params, Planes, Tables kept; a Mutable m: with_primal: kept;
//     else an in-out m becomes a Plane "m" (its old value) and a pure m is dropped;
//     Terminated kept (with_primal: it finishes samples as k does; else only the skip mask,
//     terminate = -1); ParamSum/TableSum kept with_primal, else dropped.
//  b) for each w of wrt in order, "w_dot": Param -> Param, Plane -> Plane, Table -> Table
//     (same M), in-out Mutable -> in-out Mutable (in: the input tangent, out: the output
//     tangent; a finished sample copies in to out, the identity).
//  c) for each Mutable m of k not in wrt, a pure Mutable "m_dot"; for each ParamSum/TableSum
//     s of k, "s_dot" of the same kind (a TableSum's table_of renumbered; a scatter target,
//     an in-out TableSum, gives an in-out "s_dot" of its own: in the input tangent, out that
//     plus the scattered tangents).
//  d) for each hawk.min / hawk.max output s, a Param "s_win" (role 'p', its own name as primal
//     name): the winner kernel's result (winner.hpp); "s_dot" (added, not folded) takes the
//     tangent of the sample whose float(sample_index()) equals it.
// A loop region stays a loop: each of its carries that can have a tangent gets a tangent
// carry (entering with the entry value's tangent, or 0) beside it.
// A derived name that is taken gets "_" appended until it is unique. Throws
// std::invalid_argument for a `wrt` entry that is not a Param, Plane, Table or in-out Mutable.
ir::Kernel tangent(const ir::Kernel& k, const std::vector<std::string>& wrt, bool with_primal);

}  // namespace raptor::ad
