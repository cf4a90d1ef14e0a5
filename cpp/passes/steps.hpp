// A kernel run for more steps per launch (IR -> IR): eagle's fused stepping passes
// (python/eagle/loop.py) run a stepping kernel with 1024 times its steps. Start at
// `with_steps`.
#pragma once

#include "ir/ir.hpp"

namespace raptor::passes {

// `k` running `steps` steps per launch, each step what one launch of `k` does (a sample stops
// as soon as it is terminated). A user's kernel reads its in-out Mutables with LoadState,
// the state at the start of each step; a derived kernel (ad/unroll.hpp made it one step)
// reads them with LoadPlane, the value at the start of the launch, which in a kernel of one
// step is the same value. Those loads become LoadState, so that each step reads the state the
// last one left, as the next launch of `k` would. Throws std::invalid_argument for steps < 1,
// and for a kernel that reads a pure (not in-out) Mutable with LoadState, which each launch
// starts at 0 (neither the front end nor the AD transforms make one: a read makes a Mutable
// in-out, and unroll turns such a read into 0).
ir::Kernel with_steps(const ir::Kernel& k, int steps);

}  // namespace raptor::passes
