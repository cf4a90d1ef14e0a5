// Tests of matrices and quaternions in the front end (ir/lower_matrix.cpp) and of custom
// derivatives (ir/lower_jvp.cpp, Op::StopGrad / Op::CustomJvp in ad/rules.cpp):
// 1. matrix kernels lowered and run by the interpreter against values written out by hand;
//    Matrix slots' rows and the interface's (r, c, N) / (M, r, c) shapes; refusals;
// 2. stop_gradient and @defjvp rules through the tangent and adjoint transforms, first and
//    second order, against the derivatives the rules say (not the bodies').
#include <gtest/gtest.h>

#include <cmath>
#include <string>
#include <vector>

#include "ad/adjoint.hpp"
#include "ad/tangent.hpp"
#include "common/error.hpp"
#include "ir/interp.hpp"
#include "runtime/interface.hpp"
#include "test_util_spec.hpp"

namespace raptor::testing {
namespace {

// Runs `k` on `n` samples with inputs by slot name; returns the binding.
ir::InterpBinding run(const ir::Kernel& k, int64_t n,
                      const std::vector<std::pair<std::string, std::vector<double>>>& in,
                      int64_t m = 1) {
  ir::InterpBinding b = ir::make_binding(k, n, m);
  for (const auto& [name, data] : in) set_in(k, b, name, data);
  ir::interpret(k, b);
  return b;
}

std::string refusal(const std::string& source, std::vector<ir::ParamSpec> params) {
  try {
    lower_source(source, std::move(params));
  } catch (const SourceError& e) {
    return e.what();
  }
  ADD_FAILURE() << "expected a SourceError";
  return "";
}

// ---------------------------------------------------------------------------------------------
// 1. Matrices and quaternions
// ---------------------------------------------------------------------------------------------

TEST(Matrix, ProductsDetInverseAndLayout) {
  const ir::Kernel k = optimized(lower_source(
      R"(def k(A: Matrix[2, 2], v: Vector[2], B: Mutable[Matrix[2, 2]], w: Mutable[Vector[2]], d: Mutable[Scalar], T: Mutable[Matrix[2, 2]]):
    B = inverse(A) @ A
    w = A @ v
    d = det(A) + trace(A)
    T = transpose(A) + identity(2) * 10.0
)",
      {Matrix("A", 2, 2), Vector("v", 2), MutMatrix("B", 2, 2), MutVector("w", 2), MutScalar("d"),
       MutMatrix("T", 2, 2)}));
  EXPECT_EQ(k.slots[k.find_slot("A")].rows, 2);
  EXPECT_EQ(k.slots[k.find_slot("w")].rows, 0);
  // one sample: A = [[1, 2], [3, 5]] (row-major components 0..3), v = (1, -1)
  const auto b = run(k, 1, {{"A", {1, 2, 3, 5}}, {"v", {1, -1}}});
  const auto& B = out_of(k, b, "B");
  for (int c = 0; c < 4; ++c) EXPECT_NEAR(B[c], c == 0 || c == 3 ? 1.0 : 0.0, 1e-15) << c;
  EXPECT_EQ(out_of(k, b, "w"), (std::vector<double>{-1, -2}));
  EXPECT_EQ(out_of(k, b, "d"), (std::vector<double>{-1 + 6}));
  EXPECT_EQ(out_of(k, b, "T"), (std::vector<double>{11, 3, 2, 15}));
}

TEST(Matrix, FourByFourDeterminantAndQuaternions) {
  const ir::Kernel k = optimized(lower_source(
      R"(def k(A: Matrix[4, 4], q: Vector[4], v: Vector[3], d: Mutable[Scalar], r: Mutable[Vector[3]], R: Mutable[Matrix[3, 3]], p: Mutable[Vector[4]]):
    d = det(A)
    r = quat_rotate(q, v)
    R = quat_to_matrix(q)
    p = quat_mul(q, quat_conj(q))
)",
      {Matrix("A", 4, 4), Vector("q", 4), Vector("v", 3), MutScalar("d"), MutVector("r", 3),
       MutMatrix("R", 3, 3), MutVector("p", 4)}));
  // A upper triangular with diagonal 2, 3, 4, 5: det 120. q: 90 degrees about z.
  const double h = std::sqrt(0.5);
  const auto b = run(k, 1,
                     {{"A", {2, 7, 1, 1, 0, 3, 8, 2, 0, 0, 4, 9, 0, 0, 0, 5}},
                      {"q", {0, 0, h, h}},
                      {"v", {1, 0, 0}}});
  EXPECT_NEAR(out_of(k, b, "d")[0], 120.0, 1e-12);
  const auto& r = out_of(k, b, "r");
  EXPECT_NEAR(r[0], 0.0, 1e-15);
  EXPECT_NEAR(r[1], 1.0, 1e-15);
  EXPECT_NEAR(r[2], 0.0, 1e-15);
  const std::vector<double> rz = {0, -1, 0, 1, 0, 0, 0, 0, 1};
  for (int c = 0; c < 9; ++c) EXPECT_NEAR(out_of(k, b, "R")[c], rz[c], 1e-15) << c;
  const auto& p = out_of(k, b, "p");  // q q* = 1
  EXPECT_NEAR(p[3], 1.0, 1e-15);
  for (int c = 0; c < 3; ++c) EXPECT_NEAR(p[c], 0.0, 1e-15);
}

TEST(Matrix, InterfaceShapes) {
  const ir::Kernel k = lowered(
      R"(def k(A: Matrix[2, 3], W: Table[Matrix[3, 2]], i: Scalar, y: Mutable[Matrix[2, 2]]):
    y = A @ W.at(i)
)",
      {Matrix("A", 2, 3), Matrix("W", 3, 2, ir::SlotKind::Table), Scalar("i"),
       MutMatrix("y", 2, 2)});
  const auto iface = runtime::KernelInterface::of(k, runtime::ElemType::F64, "d");
  EXPECT_EQ(iface.expected_shape(0, 5, {0, 7}), (std::vector<int64_t>{2, 3, 5}));
  EXPECT_EQ(iface.expected_shape(1, 5, {0, 7}), (std::vector<int64_t>{7, 3, 2}));
  EXPECT_EQ(iface.expected_shape(3, 5, {0, 7}), (std::vector<int64_t>{2, 2, 5}));
  // the manifest's slot line keeps the rows, and a line without them is not a matrix
  const auto back = runtime::parse_slot_line(runtime::slot_line(iface.slot(1)));
  ASSERT_TRUE(back.has_value());
  EXPECT_EQ(back->rows, 3);
  const auto plain = runtime::parse_slot_line("slot plane 3 1 -1 float64 v");
  ASSERT_TRUE(plain.has_value());
  EXPECT_EQ(plain->rows, 0);
  EXPECT_FALSE(runtime::parse_slot_line("slot plane 6 1 -1 float64 m 4").has_value());
  // the adjoint's TableSum has the table's shape
  const ir::Kernel a = ad::adjoint(k, {"W"});
  const auto ai = runtime::KernelInterface::of(a, runtime::ElemType::F64, "d");
  const int w_bar = a.find_slot("W_bar");
  ASSERT_GE(w_bar, 0);
  std::vector<int64_t> sizes(a.slots.size(), 0);
  sizes[a.find_slot("W")] = 7;
  EXPECT_EQ(ai.expected_shape(w_bar, 5, sizes), (std::vector<int64_t>{7, 3, 2}));
}

TEST(Matrix, Refusals) {
  const std::string mm = refusal(R"(def k(A: Matrix[2, 3], y: Mutable[Matrix[2, 3]]):
    y = A @ A
)",
                                 {Matrix("A", 2, 3), MutMatrix("y", 2, 3)});
  EXPECT_NE(mm.find("test.py:2"), std::string::npos) << mm;
  EXPECT_NE(mm.find("3 columns but the right one has 2 rows"), std::string::npos) << mm;
  const std::string inv = refusal(R"(def k(A: Matrix[5, 5], y: Mutable[Matrix[5, 5]]):
    y = inverse(A)
)",
                                  {Matrix("A", 5, 5), MutMatrix("y", 5, 5)});
  EXPECT_NE(inv.find("sizes 1 to 4"), std::string::npos) << inv;
  const std::string mix = refusal(R"(def k(A: Matrix[2, 2], v: Vector[4], y: Mutable[Vector[4]]):
    y = A * v
)",
                                  {Matrix("A", 2, 2), Vector("v", 4), MutVector("y", 4)});
  EXPECT_NE(mix.find("write a @ b"), std::string::npos) << mix;
}

// ---------------------------------------------------------------------------------------------
// 2. stop_gradient and @defjvp rules
// ---------------------------------------------------------------------------------------------

// The tangent output `y_dot` of `k` w.r.t. x at x = xs with x_dot = 1.
std::vector<double> tangent_at(const ir::Kernel& k, const std::vector<double>& xs) {
  const ir::Kernel t = optimized(ad::tangent(k, {"x"}, false));
  std::vector<double> ones(xs.size(), 1.0);
  const auto b = run(t, static_cast<int64_t>(xs.size()), {{"x", xs}, {"x_dot", ones}});
  return out_of(t, b, "y_dot");
}

// The adjoint output `x_bar` of `k` at x = xs with y_bar = 1.
std::vector<double> adjoint_at(const ir::Kernel& k, const std::vector<double>& xs) {
  const ir::Kernel a = optimized(ad::adjoint(k, {"x"}));
  std::vector<double> ones(xs.size(), 1.0);
  const auto b = run(a, static_cast<int64_t>(xs.size()), {{"x", xs}, {"y_bar", ones}});
  return out_of(a, b, "x_bar");
}

TEST(CustomDerivatives, StopGradientIsAConstantToAD) {
  const ir::Kernel k = lowered(R"(def k(x: Scalar, y: Mutable[Scalar]):
    y = x * stop_gradient(x) + stop_gradient(x * x)
)",
                               {Scalar("x"), MutScalar("y")});
  const std::vector<double> xs = {-1.5, 0.0, 2.0};
  const auto b = run(k, 3, {{"x", xs}});
  for (size_t i = 0; i < xs.size(); ++i) EXPECT_EQ(out_of(k, b, "y")[i], 2 * xs[i] * xs[i]);
  EXPECT_EQ(tangent_at(k, xs), xs);  // d/dx = stop_gradient(x), not 2x or 4x
  EXPECT_EQ(adjoint_at(k, xs), xs);
  // second order: the derivative x has no derivative (it is stopped)
  const ir::Kernel t = optimized(ad::tangent(k, {"x"}, false));
  const ir::Kernel tt = optimized(ad::tangent(t, {"x"}, false));
  const auto b2 = run(tt, 3, {{"x", xs}, {"x_dot", {1, 1, 1}}, {"x_dot_", {1, 1, 1}}});
  for (double v : out_of(tt, b2, "y_dot_dot")) EXPECT_EQ(v, 0.0);
}

// A kernel calling helper `h` whose rule is `rule`.
ir::Kernel with_rule(const std::string& kernel, const std::string& helper,
                     const std::string& rule) {
  SpecOptions opt;
  ir::FunctionSource h = function_source(helper);
  h.jvp = 1;  // helpers[1]: the rule, which may call the helper
  ir::FunctionSource r = function_source(rule, with_math({{def_name(helper), testing::helper(0)}}));
  opt.helpers = {h, r};
  return optimized(lower_source(kernel, {Scalar("x"), MutScalar("y")},
                                with_math({{def_name(helper), testing::helper(0)}}), opt));
}

TEST(CustomDerivatives, StraightThroughRuleInTangentAndAdjoint) {
  const ir::Kernel k = with_rule(R"(def k(x: Scalar, y: Mutable[Scalar]):
    y = st(x)
)",
                                 R"(def st(x):
    return clamp(x, -1.0, 1.0)
)",
                                 R"(def st_jvp(primals, tangents):
    return st(primals[0]), tangents[0]
)");
  const std::vector<double> xs = {-3.0, -0.5, 0.25, 2.0};
  const auto b = run(k, 4, {{"x", xs}});
  EXPECT_EQ(out_of(k, b, "y"), (std::vector<double>{-1.0, -0.5, 0.25, 1.0}));
  const std::vector<double> ones(4, 1.0);
  EXPECT_EQ(tangent_at(k, xs), ones);  // the clamp's own derivative would be 0 outside
  EXPECT_EQ(adjoint_at(k, xs), ones);
}

TEST(CustomDerivatives, SecondOrderDifferentiatesTheRule) {
  // body sin(x), rule 2 cos(x) t (on purpose not the body's derivative)
  const ir::Kernel k = with_rule(R"(def k(x: Scalar, y: Mutable[Scalar]):
    y = f(x) * 3.0
)",
                                 R"(def f(x):
    return sin(x)
)",
                                 R"(def f_jvp(primals, tangents):
    x = primals[0]
    return sin(x), 2.0 * cos(x) * tangents[0]
)");
  const std::vector<double> xs = {-1.0, 0.3, 2.0};
  const auto dt = tangent_at(k, xs);
  const auto da = adjoint_at(k, xs);
  for (size_t i = 0; i < xs.size(); ++i) {
    EXPECT_DOUBLE_EQ(dt[i], 6.0 * std::cos(xs[i]));
    EXPECT_DOUBLE_EQ(da[i], 6.0 * std::cos(xs[i]));
  }
  const ir::Kernel t = optimized(ad::tangent(k, {"x"}, false));
  const ir::Kernel tt = optimized(ad::tangent(t, {"x"}, false));  // forward over forward
  const auto b = run(tt, 3, {{"x", xs}, {"x_dot", {1, 1, 1}}, {"x_dot_", {1, 1, 1}}});
  const ir::Kernel ta = optimized(ad::adjoint(t, {"x"}));  // reverse over forward
  const auto c = run(ta, 3, {{"x", xs}, {"x_dot", {1, 1, 1}}, {"y_dot_bar", {1, 1, 1}}});
  for (size_t i = 0; i < xs.size(); ++i) {
    EXPECT_NEAR(out_of(tt, b, "y_dot_dot")[i], -6.0 * std::sin(xs[i]), 1e-15);
    EXPECT_NEAR(out_of(ta, c, "x_bar")[i], -6.0 * std::sin(xs[i]), 1e-15);
  }
}

TEST(CustomDerivatives, NonLinearRulesAreRefused) {
  try {
    with_rule(R"(def k(x: Scalar, y: Mutable[Scalar]):
    y = g(x)
)",
              R"(def g(x):
    return x
)",
              R"(def g_jvp(primals, tangents):
    return primals[0], tangents[0] * tangents[0]
)");
    ADD_FAILURE() << "a rule quadratic in the tangents was accepted";
  } catch (const SourceError& e) {
    EXPECT_NE(std::string(e.what()).find("not linear in the tangents"), std::string::npos)
        << e.what();
  }
}

}  // namespace
}  // namespace raptor::testing
