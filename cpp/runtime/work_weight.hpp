// How much one sample-step of a kernel weighs, for the launcher's choice between running a
// launch on the calling thread and splitting it over the pool (runtime/launch.cpp). The serial
// threshold (kDefaultSerialThreshold) was measured in samples of y = a * x + b, whose sample
// costs about as much as reading and writing its planes; a kernel whose sample costs sixty
// times that (a driven pendulum's sin and cos) gains from the threads at far fewer samples,
// where the pool is awake. The weight is an estimate from the IR alone (no timing, so the same
// launch always splits the same way), in units of that reference kernel's sample-step; start
// at `sample_step_weight`.
#pragma once

#include <cstdint>

#include "codegen/cpp_emitter.hpp"
#include "ir/ir.hpp"

namespace raptor::runtime {

// At least 1: the estimated cost of one sample-step of `k` in `dtype` on the host over that of
// y = a * x + b's. Loops count each operation inside them as many times as their most
// iterations (nested loops: the product).
int64_t sample_step_weight(const ir::Kernel& k, codegen::DType dtype);

}  // namespace raptor::runtime
