// The cost estimate of runtime/work_weight.hpp. Start at `sample_step_weight`.
#include "runtime/work_weight.hpp"

#include <algorithm>
#include <vector>

#include "ir/math_fns.hpp"

namespace raptor::runtime {

namespace {

// One operation's cost per sample, in units of about 10 ps: measured on one core of an AMD
// EPYC (Zen 5, AVX-512) at 8192 samples (the planes in cache), as the time per sample of a
// small kernel around the operation less y = a * x + b's (0.13 ns). Plain arithmetic 1; a
// plane or table read 4; a division or square root 4; raptor's own exp / log / expm1 / log1p
// (runtime/rp_math.h), atan (rp_atan.h) and hypot (rp_hypot.h) 80 (atan 110, hypot 110 / 45
// measured); its sin / cos (rp_trig.h, both reductions computed) 370 in float64, 140 in
// float32; its tan 450 / 270; its tanh 320 / 260; its atan2 250 in both; its pow (rp_pow.h)
// 460 / 350; a C library call per sample (sinh, asin, ...: the sample loop stays scalar) 800; a
// uniform or integer draw 100, a normal one 600; gamma and poisson (rejection loops) 5000. Other
// machines differ by a factor of two or so, which the threshold tolerates.
int64_t op_cost(const ir::Value& v, codegen::DType dtype) {
  using ir::Op;
  switch (v.op) {
    case Op::Const:
    case Op::LoadParam:
    case Op::LoopBegin:
    case Op::LoopEnd:
    case Op::LoopCarry:
    case Op::LoopIndex:
    case Op::LoopNext:
    case Op::LoopResult:
    case Op::StopGrad:
    case Op::CustomJvp:
      return 0;
    case Op::LoadPlane:
    case Op::LoadState:
    case Op::LoadTable:
    case Op::Div:
    case Op::Sqrt:
      return 4;
    case Op::Exp:
    case Op::Log:
      return 80;
    case Op::Sin:
    case Op::Cos:
      return dtype == codegen::DType::F32 ? 140 : 370;
    case Op::Tanh:
      return dtype == codegen::DType::F32 ? 260 : 320;
    case Op::Atan2:
      return 250;
    case Op::Pow:
      return dtype == codegen::DType::F32 ? 350 : 460;
    case Op::Tan:
      return dtype == codegen::DType::F32 ? 270 : 450;
    case Op::RandUniform:
    case Op::RandUniformAt:
    case Op::RandInt:
      return 100;
    case Op::RandNormal:
    case Op::RandNormalAt:
    case Op::RandNormalVec:
    case Op::RandTruncNormal:
      return 600;
    case Op::RandGamma:
    case Op::RandPoisson:
    case Op::RandGammaGrad:
      return 5000;
    default:
      break;
  }
  if (const ir::MathFn* f = ir::math_fn(v.op)) {
    switch (f->kind) {
      case ir::MathKind::Libm:
        return 800;
      case ir::MathKind::Own:
        return 80;
      case ir::MathKind::Exact:
      case ir::MathKind::Formula:
        return 1;
    }
  }
  return 1;
}

}  // namespace

int64_t sample_step_weight(const ir::Kernel& k, codegen::DType dtype) {
  // y = a * x + b: its read of x (4) and two operations (2), and 7 for what every sample
  // costs besides (its stores, the loop): 13 units
  constexpr int64_t kBase = 7, kReference = 13;
  constexpr int64_t kCap = int64_t{1} << 20;  // no product below it overflows
  std::vector<int64_t> times{1};              // how often the current region runs per step
  int64_t total = kBase;
  for (const ir::Value& v : k.values) {
    if (v.op == ir::Op::LoopBegin) {
      times.push_back(std::min(kCap, times.back() * std::max<int64_t>(v.iimm, 1)));
      continue;
    }
    if (v.op == ir::Op::LoopEnd && times.size() > 1) {
      times.pop_back();
      continue;
    }
    total = std::min(kCap * kReference, total + op_cost(v, dtype) * times.back());
  }
  return std::max<int64_t>(1, total / kReference);
}

}  // namespace raptor::runtime
