// Tests of runtime/work_weight.hpp: how much a kernel's sample-step weighs against the serial
// threshold's reference kernel, y = a * x + b (the launcher's use of it:
// test_runtime_launch.cpp, LaunchesBackToBackSplitByTheirWeight).
#include <gtest/gtest.h>

#include <vector>

#include "runtime/work_weight.hpp"
#include "test_util_spec.hpp"

namespace raptor::runtime {
namespace {

using codegen::DType;
using namespace raptor::testing;

int64_t weight_of(const std::string& source, std::vector<ir::ParamSpec> params, DType d) {
  return sample_step_weight(lowered(source, std::move(params)), d);
}

TEST(SampleStepWeight, FollowsWhatTheKernelComputes) {
  const int64_t reference =
      weight_of(R"(def k(x: Scalar, a: Param, b: Param, y: Mutable[Scalar]):
    y = a * x + b
)",
                {Scalar("x"), Param("a"), Param("b"), MutScalar("y")}, DType::F64);
  EXPECT_EQ(reference, 1);
  // a norm, three products and a square root: a few times the reference, not more
  const int64_t drag = weight_of(
      R"(def k(v: Vector[3], cd: Param, dt: Param, g: Param, w: Mutable[Vector[3]]):
    w = v + dt * (vec(0.0, 0.0, -g) - cd * norm(v) * v)
)",
      {Vector("v", 3), Param("cd"), Param("dt"), Param("g"), MutVector("w", 3)}, DType::F64);
  EXPECT_GE(drag, 1);
  EXPECT_LE(drag, 4);
  // sin: its exact range reduction costs about 30 references in float64 (3.8 ns against
  // 0.13 ns measured), less in float32
  const char* sine = R"(def k(x: Scalar, y: Mutable[Scalar]):
    y = sin(x) + y
)";
  const int64_t sin64 = weight_of(sine, {Scalar("x"), MutScalar("y")}, DType::F64);
  const int64_t sin32 = weight_of(sine, {Scalar("x"), MutScalar("y")}, DType::F32);
  EXPECT_GE(sin64, 20);
  EXPECT_LE(sin64, 40);
  EXPECT_LT(sin32, sin64);
  EXPECT_GT(sin32, 4);
  // a loop counts its body as often as its most iterations
  const int64_t looped = weight_of(R"(def k(x: Scalar, y: Mutable[Scalar]):
    s = 0.0
    for i in range(300):
        s = s + sin(x + i)
    y = s
)",
                                   {Scalar("x"), MutScalar("y")}, DType::F64);
  EXPECT_GE(looped, 200 * sin64);
  // a loop of 10^9 iterations: large, and no overflow
  const int64_t huge = weight_of(R"(def k(x: Scalar, y: Mutable[Scalar]):
    s = 0.0
    for i in range(1000000000):
        s = s + sin(x + i)
    y = s
)",
                                 {Scalar("x"), MutScalar("y")}, DType::F64);
  EXPECT_GT(huge, looped);
}

}  // namespace
}  // namespace raptor::runtime
