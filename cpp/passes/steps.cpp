// A kernel run for more steps per launch. See steps.hpp.
#include "passes/steps.hpp"

#include <stdexcept>

namespace raptor::passes {

ir::Kernel with_steps(const ir::Kernel& k, int steps) {
  if (steps < 1) throw std::invalid_argument("steps must be >= 1");
  ir::Kernel out = k;
  out.steps = steps;
  for (ir::Value& v : out.values) {
    if (v.op != ir::Op::LoadPlane && v.op != ir::Op::LoadState) continue;
    const ir::Slot& s = out.slots[static_cast<size_t>(v.slot)];
    if (v.op == ir::Op::LoadState && !s.inout)
      throw std::invalid_argument("with_steps: kernel '" + k.name + "' reads its pure output '" +
                                  s.name +
                                  "' (LoadState), which starts every launch at 0: more steps per "
                                  "launch would carry it from step to step instead");
    if (v.op == ir::Op::LoadPlane && s.kind == ir::SlotKind::Mutable && s.inout)
      v.op = ir::Op::LoadState;
  }
  ir::verify(out);
  return out;
}

}  // namespace raptor::passes
