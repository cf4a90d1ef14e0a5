// The reference interpreter's float32 mode (ir/interp.hpp): every value as a float32 build
// holds it (constants, Params and loads rounded to float, each operator in float arithmetic
// with the C library's float functions) and sums added in double, with sum_abs, the scale of
// a sum's rounding error. tests/test_differential.py compares float32 builds with it bitwise.
#include <gtest/gtest.h>

#include <cmath>
#include <vector>

#include "test_util_spec.hpp"

namespace raptor {
namespace {

using namespace raptor::testing;

TEST(InterpFloat32, RoundsEveryValueAndUsesFloatFunctions) {
  const ir::Kernel k =
      lowered(R"(def k(x: Scalar, p: Param, y: Mutable[Scalar], z: Mutable[Scalar]):
    y = x * p + 0.1
    z = sin(x) ** 3 + exp(x / 3.0)
)",
              {Scalar("x"), Param("p"), MutScalar("y"), MutScalar("z")});
  const std::vector<double> xs = {0.3, -1.7, 2.9};
  ir::InterpBinding b = ir::make_binding(k, 3);
  b.float32 = true;
  std::vector<double> xin;
  for (const double x : xs) xin.push_back(static_cast<float>(x));
  set_in(k, b, "x", xin);
  set_in(k, b, "p", {1.1});  // a double Param: a float32 build rounds it
  ir::interpret(k, b);
  for (size_t i = 0; i < xs.size(); ++i) {
    const float x = static_cast<float>(xs[i]);
    const float y = x * static_cast<float>(1.1) + static_cast<float>(0.1);
    const float s = std::sin(x);
    const float z = s * (s * s) + std::exp(x / 3.0f);  // lax.integer_pow's order
    EXPECT_EQ(out_of(k, b, "y")[i], static_cast<double>(y)) << i;
    EXPECT_EQ(out_of(k, b, "z")[i], static_cast<double>(z)) << i;
  }
  // The double mode differs from the float one (so the test above is not vacuous).
  ir::InterpBinding d = ir::make_binding(k, 3);
  set_in(k, d, "x", xin);
  set_in(k, d, "p", {1.1});
  ir::interpret(k, d);
  EXPECT_NE(out_of(k, d, "y")[0], out_of(k, b, "y")[0]);
}

TEST(InterpFloat32, TableIndexIsTheFloorInFloat) {
  // 2.9999999 rounds to 3.0f: entry 3 in float32, entry 2 in double.
  const ir::Kernel k = lowered(R"(def k(x: Scalar, t: Table[Scalar], y: Mutable[Scalar]):
    y = t.at(x)
)",
                               {Scalar("x"), TableScalar("t"), MutScalar("y")});
  for (const bool f32 : {false, true}) {
    ir::InterpBinding b = ir::make_binding(k, 1, 4);
    b.float32 = f32;
    set_in(k, b, "x", {2.9999999});
    set_in(k, b, "t", {10, 11, 12, 13});
    ir::interpret(k, b);
    EXPECT_EQ(out_of(k, b, "y")[0], f32 ? 13.0 : 12.0);
  }
}

TEST(InterpPerturb, MovesOnlyInexactLibraryResults) {
  const ir::Kernel k = lowered(R"(def k(x: Scalar, y: Mutable[Scalar], z: Mutable[Scalar]):
    y = tanh(x)
    z = sqrt(x) * x + 0.5
)",
                               {Scalar("x"), MutScalar("y"), MutScalar("z")});
  for (const bool f32 : {false, true}) {
    for (const int ulps : {2, -2}) {
      ir::InterpBinding b = ir::make_binding(k, 1);
      b.float32 = f32;
      b.perturb_ulps = ulps;
      set_in(k, b, "x", {0.75});
      ir::interpret(k, b);
      const double inf = ulps > 0 ? INFINITY : -INFINITY;
      if (f32) {
        const float want = std::nextafter(std::nextafter(std::tanh(0.75f), float(inf)), float(inf));
        EXPECT_EQ(out_of(k, b, "y")[0], static_cast<double>(want));
        // Two statements: in one expression Clang may fuse (and constant-fold) a * b + c.
        const float prod = std::sqrt(0.75f) * 0.75f;
        EXPECT_EQ(out_of(k, b, "z")[0], static_cast<double>(prod + 0.5f));
      } else {
        EXPECT_EQ(out_of(k, b, "y")[0], std::nextafter(std::nextafter(std::tanh(0.75), inf), inf));
        const double prod = std::sqrt(0.75) * 0.75;
        EXPECT_EQ(out_of(k, b, "z")[0], prod + 0.5);  // exact chain: unmoved
      }
    }
  }
}

}  // namespace
}  // namespace raptor
