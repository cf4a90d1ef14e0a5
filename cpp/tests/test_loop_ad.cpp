// Derivatives of long loops (loop regions, ir.hpp's LoopBegin .. LoopResult): the tangent
// transform carries a tangent beside each primal carry that depends on a wrt input
// (ad/tangent.cpp, `active_values`), so a tangent kernel of a loop is a loop, first and second
// order, raw and optimized, against central differences of the interpreter. The adjoint
// transform reverses a loop region with a loop that recomputes each iteration from a
// checkpoint (ad/adjoint.cpp, `reverse_region`): checked as the tangent's transpose and
// against differences, and at second order both ways. Linearize splits of such loops are
// refused by name (ad/common.hpp, refuse_long_loops).
#include <gtest/gtest.h>

#include <cmath>
#include <stdexcept>
#include <string>
#include <vector>

#include "ad/adjoint.hpp"
#include "ad/linearize.hpp"
#include "ad/tangent.hpp"
#include "ir/interp.hpp"
#include "test_util_spec.hpp"

namespace raptor::testing {
namespace {

using ir::Op;

// s grows geometrically until it passes 5, skipping every third iteration; acc starts at
// a constant (no tangent on entry) and gains one from the body: the carry's fixpoint.
const char* kLoop =
    R"(def k(x: Scalar, a: Param, y: Mutable[Scalar], z: Mutable[Scalar], n: Mutable[Scalar]):
    s = x
    acc = 0.0
    c = 0.0
    for i in range(10000):
        if i % 3 == 2:
            continue
        s = s * a + 0.01 * sin(s)
        acc = acc + s * s
        c = c + 1.0
        if s > 5.0:
            break
    y = s
    z = acc
    n = c
)";

ir::Kernel loop_kernel() {
  return lower_source(kLoop,
                      {Scalar("x"), Param("a"), MutScalar("y"), MutScalar("z"), MutScalar("n")});
}

int count_ops(const ir::Kernel& k, Op op) {
  int n = 0;
  for (const auto& v : k.values) n += v.op == op;
  return n;
}

using Inputs = std::vector<std::pair<std::string, std::vector<double>>>;

ir::InterpBinding run(const ir::Kernel& k, int64_t n, const Inputs& in) {
  ir::InterpBinding b = ir::make_binding(k, n, 0);
  for (const auto& [name, data] : in) set_in(k, b, name, data);
  ir::interpret(k, b);
  return b;
}

// (no sample's count changes within the differences' steps)
const std::vector<double> kX = {0.1, 0.3, 0.5, 0.9, 1.3};
constexpr int64_t kN = 5;

// Central differences of `k`'s output `out` along x (dx per sample) and a (da).
std::vector<double> fd(const ir::Kernel& k, const Inputs& base, const std::string& out, double dx,
                       double da, const std::string& count = "n") {
  const double eps = 1e-6;
  Inputs plus = base, minus = base;
  for (auto& [name, data] : plus)
    for (double& v : data) v += eps * (name == "x" ? dx : name == "a" ? da : 0.0);
  for (auto& [name, data] : minus)
    for (double& v : data) v -= eps * (name == "x" ? dx : name == "a" ? da : 0.0);
  const auto rp = run(k, kN, plus);
  const auto rm = run(k, kN, minus);
  EXPECT_EQ(out_of(k, rp, count), out_of(k, rm, count)) << "the difference crosses a break";
  std::vector<double> d(kN);
  for (int64_t i = 0; i < kN; ++i)
    d[i] = (out_of(k, rp, out)[i] - out_of(k, rm, out)[i]) / (2 * eps);
  return d;
}

void expect_near_all(const std::vector<double>& got, const std::vector<double>& want, double tol) {
  ASSERT_EQ(got.size(), want.size());
  for (size_t i = 0; i < got.size(); ++i)
    EXPECT_NEAR(got[i], want[i], tol * (1 + std::fabs(want[i]))) << "[" << i << "]";
}

class LoopTangents : public ::testing::TestWithParam<bool> {  // optimized?
 protected:
  ir::Kernel prep(ir::Kernel k) const { return GetParam() ? optimized(std::move(k)) : k; }
};

INSTANTIATE_TEST_SUITE_P(, LoopTangents, ::testing::Values(false, true),
                         [](const ::testing::TestParamInfo<bool>& i) {
                           return i.param ? "Optimized" : "Raw";
                         });

TEST_P(LoopTangents, FirstOrderIsALoopAndMatchesDifferences) {
  const ir::Kernel k = prep(loop_kernel());
  const ir::Kernel t = prep(ad::tangent(k, {"x", "a"}, true));
  ir::verify(t);
  EXPECT_EQ(count_ops(t, Op::LoopBegin), 1);
  EXPECT_LT(t.values.size(), 120u);  // the body once
  const Inputs base = {{"x", kX}, {"a", {1.01}}};
  const auto r0 = run(k, kN, base);
  for (const auto& [dx, da] : {std::pair{1.0, 0.0}, std::pair{0.0, 1.0}, std::pair{0.5, -2.0}}) {
    Inputs in = base;
    in.push_back({"x_dot", std::vector<double>(kN, dx)});
    in.push_back({"a_dot", {da}});
    const auto rt = run(t, kN, in);
    for (const char* out : {"y", "z", "n"})
      EXPECT_EQ(out_of(t, rt, out), out_of(k, r0, out)) << "the primal is unchanged: " << out;
    expect_near_all(out_of(t, rt, "y_dot"), fd(k, base, "y", dx, da), 1e-6);
    expect_near_all(out_of(t, rt, "z_dot"), fd(k, base, "z", dx, da), 1e-6);
    EXPECT_EQ(out_of(t, rt, "n_dot"), std::vector<double>(kN, 0.0));  // a count: a switch
  }
  // the samples take different numbers of iterations, and leave before the end
  const auto& n = out_of(k, r0, "n");
  EXPECT_NE(n.front(), n.back());
  EXPECT_LT(n.front(), 6000.0);
}

TEST_P(LoopTangents, SecondOrderIsTheTangentOfTheTangentLoop) {
  const ir::Kernel k = prep(loop_kernel());
  const ir::Kernel t = prep(ad::tangent(k, {"x"}, true));
  const ir::Kernel tt = prep(ad::tangent(t, {"a"}, true));
  ir::verify(tt);
  EXPECT_EQ(count_ops(tt, Op::LoopBegin), 1);
  const Inputs base = {{"x", kX}, {"a", {1.01}}, {"x_dot", std::vector<double>(kN, 1.0)}};
  Inputs in = base;
  in.push_back({"a_dot", {1.0}});
  const auto r = run(tt, kN, in);
  // d/da of dy/dx, against differences of the first-order kernel along a
  expect_near_all(out_of(tt, r, "y_dot_dot"), fd(t, base, "y_dot", 0.0, 1.0), 1e-5);
  expect_near_all(out_of(tt, r, "z_dot_dot"), fd(t, base, "z_dot", 0.0, 1.0), 1e-5);
}

double dot(const std::vector<double>& a, const std::vector<double>& b) {
  double s = 0;
  for (size_t i = 0; i < a.size(); ++i) s += a[i] * b[i];
  return s;
}

// <adjoint(ct), dir> == <ct, tangent(dir)> over x (per sample) and a, for the cotangents
// `ybar`, `zbar` of outputs y and z; `k` has slots x, a, y, z (and others with `extra` inputs).
void expect_transpose(const ir::Kernel& k, const ir::Kernel& t, const ir::Kernel& adj,
                      const Inputs& extra, const std::string& y, const std::string& z,
                      const std::string& xdot, const std::string& adot, const std::string& ybar,
                      const std::string& zbar, const std::string& xbar, const std::string& abar) {
  const std::vector<double> dx = {0.3, -1.0, 0.7, 0.2, -0.4}, yb = {1.0, 0.5, -2.0, 0.25, 1.5},
                            zb = {-0.5, 0.1, 0.3, 2.0, -1.0};
  const double da = 0.8;
  Inputs tin = extra, ain = extra;
  tin.push_back({xdot, dx});
  tin.push_back({adot, {da}});
  ain.push_back({ybar, yb});
  ain.push_back({zbar, zb});
  const auto rt = run(t, kN, tin);
  const auto ra = run(adj, kN, ain);
  const double lhs = dot(out_of(adj, ra, xbar), dx) + out_of(adj, ra, abar)[0] * da;
  const double rhs = dot(out_of(t, rt, y), yb) + dot(out_of(t, rt, z), zb);
  EXPECT_NEAR(lhs, rhs, 1e-10 * (1 + std::fabs(rhs))) << k.name;
}

// The adjoint of `k` (outputs y, z, n) with y_bar = 1 gives dy/dx per sample: against the
// differences directly.
void expect_dy_dx(const ir::Kernel& k, const ir::Kernel& adj, const Inputs& base) {
  Inputs in = base;
  in.push_back({"y_bar", std::vector<double>(kN, 1.0)});
  in.push_back({"z_bar", std::vector<double>(kN, 0.0)});
  in.push_back({"n_bar", std::vector<double>(kN, 0.0)});
  const auto ra = run(adj, kN, in);
  expect_near_all(out_of(adj, ra, "x_bar"), fd(k, base, "y", 1.0, 0.0), 1e-6);
}

TEST_P(LoopTangents, AdjointIsTheTransposeOfTheTangent) {
  const ir::Kernel k = prep(loop_kernel());
  const ir::Kernel t = prep(ad::tangent(k, {"x", "a"}, false));
  const ir::Kernel adj = prep(ad::adjoint(k, {"x", "a"}));
  ir::verify(adj);
  // R over the iterations taken, holding loop A (to a checkpoint) and loop B (to t)
  EXPECT_EQ(count_ops(adj, Op::LoopBegin), 4);
  const Inputs base = {{"x", kX}, {"a", {1.01}}};
  expect_transpose(k, t, adj, base, "y_dot", "z_dot", "x_dot", "a_dot", "y_bar", "z_bar", "x_bar",
                   "a_bar");
  expect_dy_dx(k, adj, base);
}

TEST_P(LoopTangents, SecondOrderThroughTheAdjoint) {
  const ir::Kernel k = prep(loop_kernel());
  // the adjoint of the tangent kernel (a loop carrying tangents), and the tangent of the
  // adjoint kernel (loops in a loop)
  const ir::Kernel t = prep(ad::tangent(k, {"x"}, true));
  const ir::Kernel at = prep(ad::adjoint(t, {"a"}));
  const Inputs base = {{"x", kX}, {"a", {1.01}}, {"x_dot", std::vector<double>(kN, 1.0)}};
  Inputs in = base;
  for (const char* o : {"y", "z", "n", "z_dot", "n_dot"})
    in.push_back({std::string(o) + "_bar", std::vector<double>(kN, 0.0)});
  in.push_back({"y_dot_bar", std::vector<double>(kN, 1.0)});
  const auto r = run(at, kN, in);
  const auto want = fd(t, base, "y_dot", 0.0, 1.0);
  double sum = 0;
  for (const double w : want) sum += w;
  EXPECT_NEAR(out_of(at, r, "a_bar")[0], sum, 1e-5 * (1 + std::fabs(sum)));

  const ir::Kernel adj = prep(ad::adjoint(k, {"x"}));
  const ir::Kernel ta = prep(ad::tangent(adj, {"x"}, true));
  ir::verify(ta);
  Inputs tin = {{"x", kX},
                {"a", {1.01}},
                {"y_bar", std::vector<double>(kN, 1.0)},
                {"z_bar", std::vector<double>(kN, 0.0)},
                {"n_bar", std::vector<double>(kN, 0.0)},
                {"x_dot", std::vector<double>(kN, 1.0)}};
  const auto rt = run(ta, kN, tin);
  // d/dx (dy/dx), against differences of the adjoint along x
  Inputs abase = {{"x", kX},
                  {"a", {1.01}},
                  {"y_bar", std::vector<double>(kN, 1.0)},
                  {"z_bar", std::vector<double>(kN, 0.0)},
                  {"n_bar", std::vector<double>(kN, 0.0)}};
  const double eps = 1e-6;
  Inputs plus = abase, minus = abase;
  for (double& v : plus[0].second) v += eps;
  for (double& v : minus[0].second) v -= eps;
  const auto rp = run(adj, kN, plus), rm = run(adj, kN, minus);
  std::vector<double> d2(kN);
  for (int64_t i = 0; i < kN; ++i)
    d2[i] = (out_of(adj, rp, "x_bar")[i] - out_of(adj, rm, "x_bar")[i]) / (2 * eps);
  expect_near_all(out_of(ta, rt, "x_bar_dot"), d2, 1e-5);
  // reverse over reverse: the adjoint of the adjoint reverses R, which holds loops A and B
  const ir::Kernel aa = prep(ad::adjoint(adj, {"x"}));
  ir::verify(aa);
  Inputs ain = abase;
  ain.push_back({"x_bar_bar", std::vector<double>(kN, 1.0)});
  const auto raa = run(aa, kN, ain);
  expect_near_all(out_of(aa, raa, "x_bar"), d2, 1e-5);
}

// The adjoint's other paths: a value computed before the loop read in its body (its cotangent
// summed in a carry of the reverse loop), a vector carry, a pair of carries that swap (the
// next value of one is the other), a carry the body only reads (no next value), an int
// counter, `continue`, and a nested long loop (reversed recursively); against the tangent
// (transpose identity) and differences.
const char* kPaths =
    R"(def k(x: Scalar, a: Param, y: Mutable[Scalar], z: Mutable[Scalar], n: Mutable[Scalar]):
    ax = a * x
    v = vec(x, 0.5)
    p = x
    q = 1.0
    fixed = 0.5 * x
    m = 0
    for i in range(5000):
        m = m + 1
        if m % 4 == 3:
            continue
        p, q = q, p * 0.9 + ax * 0.05 + fixed * 0.01
        v = vec(v[1] * 0.95 + 0.1 * sin(ax), v[0] - 0.02 * v[1])
        for j in range(5000):
            q = q + 0.001 * cos(q + float(j))
            if j >= 2:
                break
        if m >= 9:
            break
    y = p + 2.0 * q + v[0] * v[1]
    z = v[0] + fixed
    n = float(m)
)";

TEST_P(LoopTangents, AdjointPathsThroughOuterValuesCarriesAndNestedLoops) {
  const ir::Kernel k = prep(lower_source(
      kPaths, {Scalar("x"), Param("a"), MutScalar("y"), MutScalar("z"), MutScalar("n")}));
  EXPECT_EQ(count_ops(k, Op::LoopBegin), 2);
  const ir::Kernel t = prep(ad::tangent(k, {"x", "a"}, false));
  const ir::Kernel adj = prep(ad::adjoint(k, {"x", "a"}));
  ir::verify(adj);
  const Inputs base = {{"x", kX}, {"a", {0.7}}};
  expect_transpose(k, t, adj, base, "y_dot", "z_dot", "x_dot", "a_dot", "y_bar", "z_bar", "x_bar",
                   "a_bar");
  expect_dy_dx(k, adj, base);
  EXPECT_EQ(out_of(k, run(k, kN, base), "n"), std::vector<double>(kN, 9.0));
}

TEST(LoopTangentsRefusals, LinearizeNamesTheLoop) {
  try {
    ad::linearize(loop_kernel(), {"x"});
    ADD_FAILURE() << "a long loop was accepted";
  } catch (const std::invalid_argument& e) {
    const std::string msg = e.what();
    EXPECT_NE(msg.find("'k'"), std::string::npos) << msg;
    EXPECT_NE(msg.find("line 5 runs 10000 iterations"), std::string::npos) << msg;
    EXPECT_NE(msg.find("not available yet"), std::string::npos) << msg;
  }
}

}  // namespace
}  // namespace raptor::testing
