// Derivatives of hawk.min / hawk.max over samples (a ParamSum whose Slot::combine is Min or
// Max): the output's derivative is the winning sample's, the winner being the sample of the
// lowest global index (hawk.math.sample_index()) among the selected live samples whose value
// is the result (a NaN result: the first NaN). Finding it takes the result, known only when a
// launch ends, so it is a kernel of its own, `winner`, run after the primal; the tangent and
// adjoint kernels read its result as a Param "<s>_win" per min / max slot s and let the
// winner's tangent through (tangent.cpp) / route the cotangent to it (adjoint.cpp).
// docs/derivatives.md "Minimum and maximum over samples".
#pragma once

#include <string>

#include "ad/common.hpp"
#include "ir/ir.hpp"

namespace raptor::ad {

// Whether `k` has a hawk.min / hawk.max output.
bool has_folds(const ir::Kernel& k);

// The name of the winner Param of min / max slot `slot_name` ("lo" -> "lo_win"); throws
// std::invalid_argument naming the kernel when `k` already has a slot of that name.
std::string winner_name(const ir::Kernel& k, const std::string& slot_name);

// The winner Param the tangent and adjoint kernels of `k` take for its min / max slot `out`:
// a Param named winner_name(k, out.name), role 'p', its own name as its primal name (an input
// by the name of the winner kernel's output).
ir::Slot winner_param(const ir::Kernel& k, const ir::Slot& out);

// The winner kernel of `k` (which has_folds), named k.name + "_winner": k's inputs (Params,
// planes, Tables, the mask as a skip mask (terminate = -1), Random; an in-out Mutable as the
// Plane of its old value), then per min / max slot s in order a Param "s" (the primal
// result) and a ParamSum "s_win" folded by Min: the global index, as a float of the kernel's
// dtype (exact up to 2^24 samples in float32), of the first selected sample whose value is
// the result. No other outputs. Slots have role 'p' and their own names as primal names.
ir::Kernel winner(const ir::Kernel& k);

// In a derived kernel being built by `b`: the B value "this sample is the winner" given the
// winner Param slot `win_slot`: float(sample_index()) == win.
int is_winner(Builder& b, int win_slot);

}  // namespace raptor::ad
