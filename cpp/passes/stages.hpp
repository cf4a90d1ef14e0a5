// Splitting a kernel at its stage boundaries (IR -> IR). Start at `split_stages`.
//
// A stage boundary is a reduction over the samples of a launch whose value the same body
// reads (docs/language.md "Stage boundaries"; the front end records each as a
// Kernel::StageLink: the reduction stores into ParamSum `sum`, the reads load Param `param`).
// The runtime cannot give a sample that value before every sample has added to it, so the
// kernel runs as stages, each over every sample of the launch:
// - a link's level is 0 when its reduced value reads no other link's Param, else one more
//   than the highest level among those it reads;
// - stage s < L (L = the highest level + 1) computes the reductions of level s: the kernel
//   with every other store dropped and dead code eliminated (its Mutables become read-only
//   planes or go, and so do the sums it does not compute);
// - stage L is the whole body: every store but the linked reductions', which earlier stages
//   wrote; it reads each as its Param.
// Each stage drops the inputs it does not read, but keeps one plane (unread if need be), so
// every stage takes its sample count from a plane as any call does.
// Random draws are numbered by the front end (slot, draw index, step), so a draw that two
// stages both make is the same draw. Each stage is an ordinary kernel (no links), optimized
// and verified; the caller binds stage s's Param `param` to the value stage level(link)
// wrote to `sum` (a 1-element array in eagle, a scalar in JAX).
#pragma once

#include <vector>

#include "ir/ir.hpp"

namespace raptor::passes {

struct Stages {
  std::vector<ir::Kernel> kernels;  // in the order they run; empty when `k` has no links
  std::vector<int> link_stage;      // per Kernel::StageLink of `k`: the stage that computes it
};

// Splits `k` at its stage boundaries (see above). A kernel without links gives no stages.
Stages split_stages(const ir::Kernel& k);

// Throws std::invalid_argument naming the kernel and its first stage boundary's line when
// `k` has stage links: such a kernel is never built or run as one kernel (`what` says which
// step refused it, e.g. "the C++ emitter").
void require_unstaged(const ir::Kernel& k, const char* what);

}  // namespace raptor::passes
