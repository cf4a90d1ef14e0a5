// Unrolling a kernel's steps into one straight-line body, the form the AD transforms work
// on. Start at `unroll`.
#pragma once

#include "ir/ir.hpp"

namespace raptor::ad {

// An equivalent kernel with steps = 1 and no LoadState (same slots, same meaning under the
// interpreter, including `terminate`, `finished` and table errors):
// - step 0's LoadState of an in-out Mutable becomes LoadPlane of it, of a pure one Const 0;
// - alive_0 = true; in step s every value's predicate becomes (its predicate AND alive_s),
//   so table checks and adjoint contributions of a step a sample never runs are off;
//   sum stores get the same predicate;
// - state_{s+1} = select(alive_s, next_s, state_s) per Mutable component;
//   alive_{s+1} = alive_s AND NOT term_s; the result's terminate is NOT alive_steps;
// - Const, LoadParam, LoadPlane and LoadMask are shared by all steps (predicate -1: their
//   derivative is 1, so no predicate is needed to keep a NaN out).
// A kernel that already has steps = 1 gets only the LoadState rewrite and the sharing.
// A loop region (ir.hpp's LoopBegin) is copied once per step like any value; the loads inside
// it are not shared (they would be out of scope after it) and its markers get no predicate.
ir::Kernel unroll(const ir::Kernel& k);

}  // namespace raptor::ad
