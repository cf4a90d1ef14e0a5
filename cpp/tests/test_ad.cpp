// Tests of the AD transforms (ad/tangent.hpp, ad/adjoint.hpp, ad/unroll.hpp) against the
// reference interpreter. The harness (`Harness`) runs any kernel by slot name, so the same
// checks apply to user kernels and to derived kernels:
// - `check_tangent`: tangent(K) against central finite differences of K;
// - `check_adjoint`: adjoint(K) against the transpose of tangent(K):
//   <adjoint(ct), t> == <ct, tangent(t)>;
// second derivatives apply the same checks to adjoint(K) and tangent(K).
// The numeric checks (suite ADChecks) run twice, on the derived kernels as ad/ builds them
// (ADChecks/Raw) and after passes::optimize, as the compile pipeline hands them to code
// generation (ADChecks/Optimized; the kernel derived from is optimized first too).
// Then structural checks (suite AD: dead tangents, no duplicated primal values, names,
// layouts) of ad/'s own output.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <functional>
#include <map>
#include <random>
#include <stdexcept>
#include <string>

#include "ad/adjoint.hpp"
#include "ad/common.hpp"
#include "ad/linearize.hpp"
#include "ad/tangent.hpp"
#include "ad/unroll.hpp"
#include "ir/interp.hpp"
#include "ir/ir.hpp"
#include "passes/optimize.hpp"
#include "passes/steps.hpp"
#include "runtime/abi.h"
#include "test_util_ir.hpp"

namespace raptor::ad {
namespace {

using ir::Kernel;
using ir::Op;
using ir::SlotKind;
using Data = std::map<std::string, std::vector<double>>;  // slot name -> values

using testing::add_slot;
using testing::store;

bool is_input(const ir::Slot& s) {
  return s.kind == SlotKind::Param || s.kind == SlotKind::Plane || s.kind == SlotKind::Table ||
         (s.kind == SlotKind::Mutable && s.inout);
}

bool is_output(const ir::Slot& s) {
  return s.kind == SlotKind::Mutable || s.kind == SlotKind::ParamSum ||
         s.kind == SlotKind::TableSum;
}

double dot(const std::vector<double>& a, const std::vector<double>& b) {
  double s = 0;
  for (size_t i = 0; i < a.size(); ++i) s += a[i] * b[i];
  return s;
}

double abs_dot(const std::vector<double>& a, const std::vector<double>& b) {
  double s = 0;
  for (size_t i = 0; i < a.size(); ++i) s += std::fabs(a[i] * b[i]);
  return s;
}

// Which derived kernels the checks run: ad/'s output as is, or after passes::optimize.
enum class Pipeline { Raw, Optimized };

// Runs kernels by slot name on `n` samples with `m` table entries, random inputs drawn from
// per-name ranges (default [-1, 1]), a fixed mask, zero_finished on. `pipeline`: how the
// checks below derive kernels (derive_tangent, derive_adjoint).
class Harness {
 public:
  Harness(int64_t n, int64_t m, uint64_t seed = 1, Pipeline pipeline = Pipeline::Raw)
      : n_(n), m_(m), pipeline_(pipeline), rng_(seed) {}

  void range(const std::string& name, double lo, double hi) { ranges_[name] = {lo, hi}; }
  void set(const std::string& name, std::vector<double> v) { fixed_[name] = std::move(v); }
  void mask(std::vector<uint8_t> m) { mask_ = std::move(m); }

  // The size of slot `s`'s input or output data.
  size_t size(const ir::Slot& s) const {
    const size_t w = static_cast<size_t>(s.width);
    switch (s.kind) {
      case SlotKind::Param:
      case SlotKind::ParamSum:
        return w;
      case SlotKind::Table:
      case SlotKind::TableSum:
        return w * m_;
      default:
        return w * n_;
    }
  }

  std::vector<double> random(size_t size, double lo = -1.0, double hi = 1.0) {
    std::uniform_real_distribution<double> u(lo, hi);
    std::vector<double> v(size);
    for (double& x : v) x = u(rng_);
    return v;
  }

  // Random values for every input slot of `k` (fixed ones as set).
  Data inputs(const Kernel& k) {
    Data d;
    for (const auto& s : k.slots) {
      if (!is_input(s)) continue;
      if (fixed_.count(s.name)) {
        d[s.name] = fixed_[s.name];
        continue;
      }
      const auto r = ranges_.count(s.name) ? ranges_[s.name] : std::pair{-1.0, 1.0};
      d[s.name] = random(size(s), r.first, r.second);
    }
    return d;
  }

  struct Result {
    Data out;
    std::vector<uint8_t> mask;
    uint32_t finished = 0;
    int64_t error = 0;
  };

  Result run(const Kernel& k, const Data& in) const {
    ir::InterpBinding b = ir::make_binding(k, n_, m_);
    b.zero_finished = true;
    if (k.has_mask()) b.mask = mask_.empty() ? std::vector<uint8_t>(n_, 0) : mask_;
    for (size_t s = 0; s < k.slots.size(); ++s) {
      const auto it = in.find(k.slots[s].name);
      if (is_input(k.slots[s])) {
        if (it == in.end())
          ADD_FAILURE() << "no input for " << k.slots[s].name;
        else
          b.slots[s].in = it->second;
      }
    }
    ir::interpret(k, b);
    Result r;
    for (size_t s = 0; s < k.slots.size(); ++s)
      if (is_output(k.slots[s])) r.out[k.slots[s].name] = b.slots[s].out;
    r.mask = b.mask;
    r.finished = b.finished;
    r.error = b.error[0];
    return r;
  }

  int64_t n() const { return n_; }
  Pipeline pipeline() const { return pipeline_; }

 private:
  int64_t n_, m_;
  Pipeline pipeline_;
  std::mt19937_64 rng_;
  std::map<std::string, std::pair<double, double>> ranges_;
  Data fixed_;
  std::vector<uint8_t> mask_;
};

// `k` as the pipeline hands it on: as is, or optimized and verified.
Kernel through(Kernel k, Pipeline p) {
  if (p == Pipeline::Optimized) {
    passes::optimize(k);
    ir::verify(k);
  }
  return k;
}

// The derived kernels the checks run: with Pipeline::Optimized, derived from the optimized
// kernel and optimized, as the compile pipeline does.
Kernel derive_tangent(const Kernel& k, const std::vector<std::string>& wrt, bool with_primal,
                      Pipeline p) {
  return through(tangent(through(k, p), wrt, with_primal), p);
}

Kernel derive_adjoint(const Kernel& k, const std::vector<std::string>& wrt, Pipeline p) {
  return through(adjoint(through(k, p), wrt), p);
}

// The names of the slots of tangent(k, wrt, with_primal), found by their documented
// positions (tangent.hpp), as the JAX bridge finds them: `in` maps a wrt input to its tangent
// input, `out` an output of k to its tangent output.
struct DerivedNames {
  std::map<std::string, std::string> in, out;
};

DerivedNames tangent_names(const Kernel& k, const Kernel& t, const std::vector<std::string>& wrt,
                           bool with_primal) {
  size_t a = 0;
  for (const auto& s : k.slots) a += with_primal || is_input(s) || s.kind == SlotKind::Terminated;
  DerivedNames n;
  for (size_t j = 0; j < wrt.size(); ++j) n.in[wrt[j]] = t.slots.at(a + j).name;
  size_t c = a + wrt.size();
  for (const auto& s : k.slots) {
    if (!is_output(s)) continue;
    if (s.kind == SlotKind::Mutable && n.in.count(s.name))
      n.out[s.name] = n.in[s.name];
    else
      n.out[s.name] = t.slots.at(c++).name;
  }
  EXPECT_EQ(c, t.slots.size());
  return n;
}

// The names of the slots of adjoint(k, wrt) (adjoint.hpp): `in` maps an output of k to its
// cotangent input, `out` a wrt input to its cotangent output.
DerivedNames adjoint_names(const Kernel& k, const Kernel& a, const std::vector<std::string>& wrt) {
  DerivedNames n;
  size_t pos = 0;
  for (const auto& s : k.slots) {
    if (s.kind == SlotKind::Mutable && !s.inout) continue;
    if (s.kind == SlotKind::ParamSum || s.kind == SlotKind::TableSum)
      n.in[s.name] = a.slots.at(pos).name;
    ++pos;
  }
  for (const auto& s : k.slots) {
    if (s.kind != SlotKind::Mutable) continue;
    n.in[s.name] = a.slots.at(pos++).name;
    if (s.inout && std::find(wrt.begin(), wrt.end(), s.name) != wrt.end())
      n.out[s.name] = n.in[s.name];
  }
  for (const auto& w : wrt)
    if (!n.out.count(w)) n.out[w] = a.slots.at(pos++).name;
  EXPECT_EQ(pos, a.slots.size());
  return n;
}

// Checks tangent(k, wrt) against central differences of k at random inputs along a random
// direction; also that tangent(k, wrt, true) gives k's own outputs and the same tangents.
void check_tangent(const Kernel& k, Harness& h, const std::vector<std::string>& wrt,
                   double tol = 1e-7) {
  SCOPED_TRACE("tangent of " + k.name);
  const Kernel t = derive_tangent(k, wrt, false, h.pipeline());
  const Kernel tp = derive_tangent(k, wrt, true, h.pipeline());
  const DerivedNames tn = tangent_names(k, t, wrt, false);
  const DerivedNames tpn = tangent_names(k, tp, wrt, true);
  EXPECT_EQ(t.steps, 1);
  Data in = h.inputs(k);
  Data dir;
  for (const auto& w : wrt) dir[w] = h.random(in[w].size());
  const double eps = 1e-5;
  Data plus = in, minus = in;
  for (const auto& w : wrt)
    for (size_t i = 0; i < in[w].size(); ++i) {
      plus[w][i] += eps * dir[w][i];
      minus[w][i] -= eps * dir[w][i];
    }
  const auto rp = h.run(k, plus);
  const auto rm = h.run(k, minus);
  const auto r0 = h.run(k, in);
  EXPECT_EQ(rp.mask, rm.mask) << "the direction crosses a termination";
  Data tin = in, tpin = in;
  for (const auto& w : wrt) {
    tin[tn.in.at(w)] = dir[w];
    tpin[tpn.in.at(w)] = dir[w];
  }
  const auto rt = h.run(t, tin);
  const auto rtp = h.run(tp, tpin);
  EXPECT_EQ(rt.error, RAPTOR_OK);
  EXPECT_EQ(rtp.mask, r0.mask);
  EXPECT_EQ(rtp.finished, r0.finished);
  // linearize(k): its primal kernel gives k's outputs and residuals, from which its linear
  // kernel gives tangent(k)'s tangents, bit for bit.
  const Linearized lin = linearize(through(k, h.pipeline()), wrt);
  const auto ra = h.run(lin.primal, in);
  EXPECT_EQ(ra.mask, r0.mask);
  EXPECT_EQ(ra.finished, r0.finished);
  EXPECT_EQ(ra.error, r0.error);
  Data lin_in = tpin;
  for (const auto& s : lin.primal.slots)
    if (s.role == 'r') lin_in[s.name] = ra.out.at(s.name);
  const auto rl = h.run(lin.linear, lin_in);
  EXPECT_EQ(rl.error, RAPTOR_OK);
  EXPECT_EQ(lin.linear.terminate, -1);
  for (const auto& s : k.slots) {
    if (!is_output(s)) continue;
    const auto& tan = rt.out.at(tn.out.at(s.name));
    EXPECT_EQ(rtp.out.at(tpn.out.at(s.name)), tan) << s.name;
    EXPECT_EQ(ra.out.at(s.name), r0.out.at(s.name)) << "linearize: " << s.name;
    EXPECT_EQ(rl.out.at(tpn.out.at(s.name)), tan) << "linearize: " << s.name;
    EXPECT_EQ(rtp.out.at(s.name), r0.out.at(s.name)) << s.name;
    const auto& a = rp.out.at(s.name);
    const auto& b = rm.out.at(s.name);
    for (size_t i = 0; i < tan.size(); ++i) {
      const double fd = (a[i] - b[i]) / (2 * eps);
      EXPECT_NEAR(tan[i], fd, tol * (1 + std::fabs(tan[i]) + std::fabs(r0.out.at(s.name)[i])))
          << s.name << "[" << i << "]";
    }
  }
}

// Checks adjoint(k, wrt) against tangent(k, wrt): <adjoint(ct), t> == <ct, tangent(t)>.
void check_adjoint(const Kernel& k, Harness& h, const std::vector<std::string>& wrt,
                   bool nonzero = true, double tol = 1e-12) {
  SCOPED_TRACE("adjoint of " + k.name);
  const Kernel t = derive_tangent(k, wrt, false, h.pipeline());
  const Kernel a = derive_adjoint(k, wrt, h.pipeline());
  const DerivedNames tn = tangent_names(k, t, wrt, false);
  const DerivedNames an = adjoint_names(k, a, wrt);
  EXPECT_EQ(a.steps, 1);
  EXPECT_EQ(a.terminate, -1);
  Data in = h.inputs(k);
  Data tin = in, ain = in;
  Data dir;
  for (const auto& w : wrt) tin[tn.in.at(w)] = dir[w] = h.random(in[w].size());
  Data ct;
  for (const auto& s : k.slots)
    if (is_output(s)) ain[an.in.at(s.name)] = ct[s.name] = h.random(h.size(s));
  const auto rt = h.run(t, tin);
  const auto ra = h.run(a, ain);
  EXPECT_EQ(ra.error, RAPTOR_OK);
  double lhs = 0, rhs = 0, scale = 0;
  for (const auto& w : wrt) {
    const auto& bar = ra.out.at(an.out.at(w));
    for (double x : bar) EXPECT_FALSE(std::isnan(x)) << w;
    lhs += dot(bar, dir[w]);
    scale += abs_dot(bar, dir[w]);
  }
  for (const auto& [name, c] : ct) {
    const auto& tan = rt.out.at(tn.out.at(name));
    rhs += dot(c, tan);
    scale += abs_dot(c, tan);
  }
  EXPECT_NEAR(lhs, rhs, tol * (1 + scale)) << "lhs " << lhs << " rhs " << rhs;
  if (nonzero) {
    EXPECT_GT(scale, 0.0) << "a trivial check";
  }
}

// Both first-order checks, then the second-order ones on the derived kernels.
// `nonzero`: the first derivative is not identically zero (floor, sign, x**0 are).
void check_all(const Kernel& k, Harness& h, const std::vector<std::string>& wrt,
               bool nonzero = true) {
  ir::verify(k);
  check_tangent(k, h, wrt);
  check_adjoint(k, h, wrt, nonzero);
  // Second derivatives (zero for a kernel linear in wrt: no triviality check).
  const Kernel a = derive_adjoint(k, wrt, h.pipeline());
  check_tangent(a, h, wrt, 1e-7);   // tangent of the adjoint vs differences of the adjoint
  check_adjoint(a, h, wrt, false);  // adjoint of the adjoint vs tangent of the adjoint
  const Kernel t = derive_tangent(k, wrt, false, h.pipeline());
  check_tangent(t, h, wrt, 1e-7);  // tangent of the tangent vs differences of the tangent
  check_adjoint(t, h, wrt, false);
}

int count_ops(const Kernel& k, Op op) {
  int n = 0;
  for (const auto& v : k.values) n += v.op == op;
  return n;
}

std::vector<std::string> slot_list(const Kernel& k) {
  std::vector<std::string> out;
  const char* kinds[] = {"param", "plane",     "mutable",  "terminated",
                         "table", "param_sum", "table_sum"};
  for (const auto& s : k.slots)
    out.push_back(s.name + ":" + kinds[static_cast<int>(s.kind)] + (s.inout ? ":inout" : ""));
  return out;
}

// z = op(x * p, y) (or op(x * p)): one kernel per operator.
Kernel op_kernel(Op op, int64_t iimm = 0) {
  Kernel k;
  k.name = std::string("op_") + ir::op_name(op);
  const int p = add_slot(k, "p", SlotKind::Param);
  const int x = add_slot(k, "x", SlotKind::Plane);
  const int y = add_slot(k, "y", SlotKind::Plane);
  const int z = add_slot(k, "z", SlotKind::Mutable);
  Builder b(k);
  const int a = b.op(Op::Mul, {b.load(Op::LoadPlane, x, 0), b.load(Op::LoadParam, p, 0)});
  const int ly = b.load(Op::LoadPlane, y, 0);
  const int arity = ir::op_arity(op);
  const int r = arity == 1   ? b.op(op, {a})
                : arity == 2 ? b.op(op, {a, ly})
                             : b.op(op, {a, ly, b.op(Op::Mul, {ly, b.load(Op::LoadParam, p, 0)})});
  k.values[r].iimm = iimm;
  store(k, z, 0, r);
  return k;
}

struct OpCase {
  Op op;
  double lo, hi;  // the range of x (p is near 1)
  int64_t iimm = 0;
};

// The numeric checks, once per Pipeline (see the top of the file).
class ADChecks : public ::testing::TestWithParam<Pipeline> {
 protected:
  Pipeline pipeline() const { return GetParam(); }
  Kernel derived_tangent(const Kernel& k, const std::vector<std::string>& wrt,
                         bool with_primal) const {
    return derive_tangent(k, wrt, with_primal, pipeline());
  }
  Kernel derived_adjoint(const Kernel& k, const std::vector<std::string>& wrt) const {
    return derive_adjoint(k, wrt, pipeline());
  }
};

INSTANTIATE_TEST_SUITE_P(, ADChecks, ::testing::Values(Pipeline::Raw, Pipeline::Optimized),
                         [](const ::testing::TestParamInfo<Pipeline>& i) {
                           return i.param == Pipeline::Raw ? "Raw" : "Optimized";
                         });

TEST_P(ADChecks, EveryOperatorFirstAndSecondOrder) {
  const OpCase cases[] = {
      {Op::Neg, -1, 1},      {Op::Sqrt, 0.5, 2},       {Op::Exp, -1, 1},      {Op::Log, 0.5, 2},
      {Op::Sin, -2, 2},      {Op::Cos, -2, 2},         {Op::Tan, -1, 1},      {Op::Tanh, -2, 2},
      {Op::Abs, 0.2, 1},     {Op::Abs, -1, -0.2},      {Op::Floor, 0.1, 0.9}, {Op::Sign, 0.2, 1},
      {Op::Add, -1, 1},      {Op::Sub, -1, 1},         {Op::Mul, -1, 1},      {Op::Div, -1, 1},
      {Op::Pow, 0.5, 2},     {Op::Atan2, -1, 1},       {Op::Min, -1, 1},      {Op::Max, -1, 1},
      {Op::PowI, 0.5, 2, 3}, {Op::PowI, -2, -0.5, -2}, {Op::PowI, 0.5, 2, 0}, {Op::PowI, 0.5, 2, 1},
      {Op::PowI, -1, 1, 2},
  };
  for (const OpCase& c : cases) {
    SCOPED_TRACE(std::string(ir::op_name(c.op)) + " ^" + std::to_string(c.iimm));
    Harness h(16, 1, 7, pipeline());
    h.range("x", c.lo, c.hi);
    h.range("p", 0.9, 1.1);
    if (c.op == Op::Div) h.range("y", 0.5, 2);
    if (c.op == Op::Pow) h.range("y", -1.5, 1.5);
    const Kernel k = op_kernel(c.op, c.iimm);
    const bool zero = c.op == Op::Floor || c.op == Op::Sign || (c.op == Op::PowI && c.iimm == 0);
    check_all(k, h, {"x", "y", "p"}, !zero);
  }
}

// hawk.math's NumPy-named functions (ir/math_fns.hpp; rules.cpp's table), each at first and
// second order in both modes, over ranges where the function is smooth (the quotient of
// fmod / remainder stays between two integers, copysign's y keeps its sign).
TEST_P(ADChecks, NumpyFunctionsFirstAndSecondOrder) {
  struct Case {
    Op op;
    double lo, hi;    // x
    double ylo, yhi;  // y (the second operand; the third is y * p)
  };
  const Case cases[] = {
      {Op::Asin, -0.8, 0.8, 0, 1},    {Op::Acos, -0.8, 0.8, 0, 1},    {Op::Atan, -2, 2, 0, 1},
      {Op::Sinh, -2, 2, 0, 1},        {Op::Cosh, -2, 2, 0, 1},        {Op::Asinh, -2, 2, 0, 1},
      {Op::Acosh, 1.2, 3, 0, 1},      {Op::Atanh, -0.8, 0.8, 0, 1},   {Op::Erf, -2, 2, 0, 1},
      {Op::Erfc, -2, 2, 0, 1},        {Op::Exp2, -2, 2, 0, 1},        {Op::Expm1, -2, 2, 0, 1},
      {Op::Log1p, -0.5, 2, 0, 1},     {Op::Log2, 0.5, 2, 0, 1},       {Op::Log10, 0.5, 2, 0, 1},
      {Op::Cbrt, 0.5, 2, 0, 1},       {Op::Cbrt, -2, -0.5, 0, 1},     {Op::Ceil, 0.1, 0.9, 0, 1},
      {Op::Rint, 0.1, 0.4, 0, 1},     {Op::Trunc, 0.1, 0.9, 0, 1},    {Op::Hypot, -1, 1, 0.5, 2},
      {Op::Fmod, 2.1, 2.9, 1, 1.04},  {Op::Fmod, -2.9, -2.1, 1, 1.04}, {Op::Remainder, 2.1, 2.9, 1, 1.04},
      {Op::Remainder, -2.9, -2.1, 1, 1.04}, {Op::Copysign, 0.2, 1, -2, -0.5},
      {Op::Copysign, -1, -0.2, 0.5, 2}, {Op::Fdim, 1, 2, -1, 0.5}, {Op::Fdim, -1, 0.5, 1, 2},
      {Op::Fma, -1, 1, -1, 1},
  };
  for (const Case& c : cases) {
    SCOPED_TRACE(std::string(ir::op_name(c.op)) + " on [" + std::to_string(c.lo) + ", " +
                 std::to_string(c.hi) + "]");
    Harness h(16, 1, 7, pipeline());
    h.range("x", c.lo, c.hi);
    h.range("y", c.ylo, c.yhi);
    h.range("p", 0.99, 1.01);
    const Kernel k = op_kernel(c.op);
    const bool zero = c.op == Op::Ceil || c.op == Op::Rint || c.op == Op::Trunc ||
                      (c.op == Op::Fdim && c.lo < c.ylo);
    check_all(k, h, {"x", "y", "p"}, !zero);
  }
}

TEST_P(ADChecks, NumpyFunctionsFollowJaxAtSpecialPoints) {
  Harness h(1, 1);
  auto grad = [&](Op op, double x, double y, const char* wrt) {
    const Kernel a = derived_adjoint(op_kernel(op), {wrt});
    return h.run(a, {{"p", {1.0}}, {"x", {x}}, {"y", {y}}, {"z_bar", {1.0}}})
        .out.at(std::string(wrt) + "_bar")[0];
  };
  // jax.grad(jnp.remainder / jnp.fmod, argnums=1) (JAX 0.12): -3 / 4 / -3 at these points
  EXPECT_EQ(grad(Op::Remainder, 6.0, 2.0, "y"), -3.0);
  EXPECT_EQ(grad(Op::Remainder, -7.5, 2.0, "y"), 4.0);
  EXPECT_EQ(grad(Op::Fmod, -7.5, 2.0, "y"), 3.0);
  EXPECT_EQ(grad(Op::Fmod, 7.5, -2.0, "x"), 1.0);
  // jax.grad(jnp.copysign): -1 at (0, -0), 1 at (-0, 1), -1 at (1, -2); 0 for y
  EXPECT_EQ(grad(Op::Copysign, 0.0, -0.0, "x"), -1.0);
  EXPECT_EQ(grad(Op::Copysign, -0.0, 1.0, "x"), 1.0);
  EXPECT_EQ(grad(Op::Copysign, 1.0, -2.0, "x"), -1.0);
  EXPECT_EQ(grad(Op::Copysign, 1.0, -2.0, "y"), 0.0);
  EXPECT_TRUE(std::isnan(grad(Op::Hypot, 0.0, 0.0, "x")));  // jax.grad(jnp.hypot)(0., 0.): nan
  EXPECT_DOUBLE_EQ(grad(Op::Hypot, 3.0, -4.0, "y"), -0.8);
  EXPECT_EQ(grad(Op::Fdim, 1.0, 1.0, "x"), 0.0);  // a <= b: the constant 0
  EXPECT_EQ(grad(Op::Fdim, 2.0, 1.0, "y"), -1.0);
  EXPECT_TRUE(std::isinf(grad(Op::Cbrt, 0.0, 0.0, "x")));  // inf, as JAX
  EXPECT_EQ(grad(Op::Rint, 2.5, 0.0, "x"), 0.0);
  EXPECT_EQ(grad(Op::Fma, 2.0, 3.0, "x"), 3.0);
  EXPECT_EQ(grad(Op::Fma, 2.0, 3.0, "y"), 2.0 + 1.0);  // y is also the third operand's factor
}

TEST_P(ADChecks, MinMaxTiesSplitTheDerivativeLikeJax) {
  // jax.grad(jnp.maximum)(1., 1.) == 0.5 (and for the other operand): checked with JAX 0.12.
  for (const Op op : {Op::Min, Op::Max}) {
    const Kernel k = op_kernel(op);
    const Kernel a = derived_adjoint(k, {"x", "y"});
    Harness h(1, 1);
    const auto r = h.run(a, {{"p", {1.0}}, {"x", {2.0}}, {"y", {2.0}}, {"z_bar", {1.0}}});
    EXPECT_EQ(r.out.at("x_bar")[0], 0.5);
    EXPECT_EQ(r.out.at("y_bar")[0], 0.5);
  }
}

TEST_P(ADChecks, JaxConventionsAtSpecialPoints) {
  Harness h(1, 1);
  auto grad = [&](Op op, double x, double y, int64_t iimm, const char* wrt) {
    const Kernel a = derived_adjoint(op_kernel(op, iimm), {wrt});
    return h.run(a, {{"p", {1.0}}, {"x", {x}}, {"y", {y}}, {"z_bar", {1.0}}})
        .out.at(std::string(wrt) + "_bar")[0];
  };
  EXPECT_EQ(grad(Op::Abs, 0.0, 0, 0, "x"), 1.0);  // jax.grad(jnp.abs)(0.) == 1
  EXPECT_EQ(grad(Op::Abs, -0.0, 0, 0, "x"), 1.0);
  EXPECT_TRUE(std::isinf(grad(Op::Sqrt, 0.0, 0, 0, "x")));  // inf, as JAX
  EXPECT_EQ(grad(Op::Pow, 0.0, 2.0, 0, "y"), 0.0);          // d/dy x**y at x = 0
  EXPECT_EQ(grad(Op::Pow, 0.0, 2.0, 0, "x"), 0.0);
  EXPECT_TRUE(std::isnan(grad(Op::Pow, 0.0, 0.0, 0, "x")));  // JAX: nan
  EXPECT_EQ(grad(Op::Pow, 0.0, 1.0, 0, "x"), 1.0);
  EXPECT_EQ(grad(Op::PowI, 0.0, 0, 0, "x"), 0.0);
  EXPECT_EQ(grad(Op::PowI, 0.0, 0, 3, "x"), 0.0);
  EXPECT_EQ(grad(Op::PowI, 2.0, 0, -1, "x"), -0.25);
  EXPECT_EQ(grad(Op::Sign, 1.0, 0, 0, "x"), 0.0);
  EXPECT_EQ(grad(Op::Floor, 1.5, 0, 0, "x"), 0.0);
  EXPECT_DOUBLE_EQ(grad(Op::Atan2, 1.0, 2.0, 0, "x"), 0.4);
  EXPECT_DOUBLE_EQ(grad(Op::Atan2, 1.0, 2.0, 0, "y"), -0.2);
}

// The drag step of the spec: v_next = v + dt * ((0, 0, -g) - cd * |v| * v).
Kernel drag_kernel() {
  Kernel k;
  k.name = "drag_step";
  const int v = add_slot(k, "v", SlotKind::Plane, 3);
  const int cd = add_slot(k, "cd", SlotKind::Param);
  const int dt = add_slot(k, "dt", SlotKind::Param);
  const int g = add_slot(k, "g", SlotKind::Param);
  const int vn = add_slot(k, "v_next", SlotKind::Mutable, 3);
  Builder b(k);
  int lv[3];
  for (int c = 0; c < 3; ++c) lv[c] = b.load(Op::LoadPlane, v, c);
  const int sq =
      b.op(Op::Add, {b.op(Op::Add, {b.op(Op::Mul, {lv[0], lv[0]}), b.op(Op::Mul, {lv[1], lv[1]})}),
                     b.op(Op::Mul, {lv[2], lv[2]})});
  const int norm = b.named(b.op(Op::Sqrt, {sq}), "speed");
  const int k1 = b.op(Op::Mul, {b.load(Op::LoadParam, cd, 0), norm});
  const int ldt = b.load(Op::LoadParam, dt, 0);
  const int grav[3] = {b.constant(0.0), b.constant(0.0),
                       b.op(Op::Neg, {b.load(Op::LoadParam, g, 0)})};
  for (int c = 0; c < 3; ++c) {
    const int acc = b.named(b.op(Op::Sub, {grav[c], b.op(Op::Mul, {k1, lv[c]})}), "a");
    store(k, vn, c, b.op(Op::Add, {lv[c], b.op(Op::Mul, {ldt, acc})}));
  }
  return k;
}

TEST_P(ADChecks, DragThreeVector) {
  Harness h(8, 1, 3, pipeline());
  h.range("cd", 0.1, 0.5);
  h.range("dt", 0.01, 0.1);
  h.range("g", 9, 10);
  h.range("v", -5, 5);
  check_all(drag_kernel(), h, {"v", "cd", "dt", "g"});
  check_all(drag_kernel(), h, {"cd"});
}

// The oscillator of the spec as a 3-step kernel: each sample terminates at its own step.
Kernel osc_kernel(int steps) {
  Kernel k;
  k.name = "osc";
  k.steps = steps;
  const int dt = add_slot(k, "dt", SlotKind::Param);
  const int c = add_slot(k, "c", SlotKind::Param);
  const int tf = add_slot(k, "t_final", SlotKind::Plane);
  add_slot(k, "terminated", SlotKind::Terminated);
  const int x = add_slot(k, "x", SlotKind::Mutable, 1, true);
  const int v = add_slot(k, "v", SlotKind::Mutable, 1, true);
  const int t = add_slot(k, "t", SlotKind::Mutable, 1, true);
  const int e = add_slot(k, "energy", SlotKind::Mutable);  // pure: x*x + v*v, accumulated
  Builder b(k);
  const int lx = b.load(Op::LoadState, x, 0);
  const int lv = b.load(Op::LoadState, v, 0);
  const int lt = b.load(Op::LoadState, t, 0);
  const int le = b.load(Op::LoadState, e, 0);
  const int ldt = b.load(Op::LoadParam, dt, 0);
  const int lc = b.load(Op::LoadParam, c, 0);
  const int force = b.op(Op::Sub, {b.op(Op::Neg, {b.op(Op::Sin, {lx})}), b.op(Op::Mul, {lc, lv})});
  store(k, v, 0, b.op(Op::Add, {lv, b.op(Op::Mul, {ldt, force})}));
  store(k, x, 0, b.op(Op::Add, {lx, b.op(Op::Mul, {ldt, lv})}));
  const int tn = b.op(Op::Add, {lt, ldt});
  store(k, t, 0, tn);
  store(k, e, 0,
        b.op(Op::Add, {le, b.op(Op::Add, {b.op(Op::Mul, {lx, lx}), b.op(Op::Mul, {lv, lv})})}));
  k.terminate = b.op(Op::Ge, {tn, b.load(Op::LoadPlane, tf, 0)});
  return k;
}

Harness osc_harness(Pipeline p = Pipeline::Raw) {
  Harness h(6, 1, 11, p);
  h.set("dt", {0.1});
  h.range("c", 0.2, 0.4);
  h.set("t", {0, 0, 0, 0, 0, 0});
  // finishes at step 0, 1, 2, never, never (already finished on entry), 1
  h.set("t_final", {0.05, 0.15, 0.25, 0.45, 0.05, 0.18});
  h.mask({0, 0, 0, 0, 1, 0});
  return h;
}

TEST(AD, UnrollMatchesTheStepLoop) {
  Harness h = osc_harness();
  const Kernel k = osc_kernel(3);
  const Kernel u = unroll(k);
  ir::verify(u);
  EXPECT_EQ(u.steps, 1);
  EXPECT_EQ(count_ops(u, Op::LoadState), 0);
  const Data in = h.inputs(k);
  const auto r = h.run(k, in);
  const auto ru = h.run(u, in);
  EXPECT_EQ(r.out, ru.out);
  EXPECT_EQ(r.mask, ru.mask);
  EXPECT_EQ(r.finished, ru.finished);
  EXPECT_EQ(r.finished, 4u);
  EXPECT_EQ(r.mask, (std::vector<uint8_t>{1, 1, 1, 0, 1, 1}));
}

// eagle's fused stepping passes run a kernel with more steps per launch (passes/steps.hpp).
// A derived kernel reads its in-out Mutables with LoadPlane (unroll made it one step): with
// more steps each step must read the state the last one left, as the next launch would.
TEST(AD, WithStepsOfAnUnrolledKernelStepsLikeTheKernel) {
  Harness h = osc_harness();
  const Kernel u = unroll(osc_kernel(1));
  ASSERT_GT(count_ops(u, Op::LoadPlane), 0);
  const Kernel w = passes::with_steps(u, 3);
  EXPECT_EQ(w.steps, 3);
  for (const ir::Value& v : w.values) {
    if (v.op == Op::LoadPlane) {
      EXPECT_NE(w.slots[v.slot].kind, SlotKind::Mutable) << v.name;
    }
  }
  EXPECT_GT(count_ops(w, Op::LoadState), 0);
  const Data in = h.inputs(osc_kernel(3));
  const auto want = h.run(osc_kernel(3), in);
  const auto got = h.run(w, in);
  for (const char* m : {"x", "v", "t"}) EXPECT_EQ(got.out.at(m), want.out.at(m)) << m;
  EXPECT_EQ(got.mask, want.mask);
  EXPECT_EQ(got.finished, want.finished);
  EXPECT_EQ(got.finished, 4u);
  // osc_kernel accumulates its pure output `energy` over a launch's steps (LoadState of a
  // Mutable that is not in-out starts each launch at 0): more steps per launch would carry
  // it across launches, so with_steps refuses it (the front end never makes such a read)
  EXPECT_THROW(passes::with_steps(osc_kernel(1), 3), std::invalid_argument);
  EXPECT_THROW(passes::with_steps(u, 0), std::invalid_argument);
}

TEST_P(ADChecks, StepsWithTerminationAtDifferentSteps) {
  Harness h = osc_harness(pipeline());
  check_all(osc_kernel(3), h, {"x", "v", "c", "dt"});
  check_all(osc_kernel(3), h, {"v", "c"});
  check_all(osc_kernel(1), h, {"x", "v", "t", "c"});
}

TEST_P(ADChecks, FinishedSampleHasZeroDerivative) {
  Harness h = osc_harness(pipeline());
  const Kernel k = osc_kernel(3);
  const Kernel a = derived_adjoint(k, {"c", "x"});
  Data in = h.inputs(k);
  for (const char* m : {"x", "v", "t", "energy"}) in[std::string(m) + "_bar"] = h.random(6);
  const auto r = h.run(a, in);
  EXPECT_EQ(r.out.at("x_bar")[4], in["x_bar"][4]);  // in-out: the identity
  const Kernel t = derived_tangent(k, {"c"}, false);
  in["c_dot"] = {1.0};
  const auto rt = h.run(t, in);
  EXPECT_EQ(rt.out.at("x_dot")[4], 0.0);
  EXPECT_EQ(rt.out.at("energy_dot")[4], 0.0);
}

// z = select(x > 0, sqrt(x) [if x > 0], 0) + select(x > 0, log(x) [if x > 0], 0) * p.
Kernel guarded_kernel() {
  Kernel k;
  k.name = "guarded";
  const int p = add_slot(k, "p", SlotKind::Param);
  const int x = add_slot(k, "x", SlotKind::Plane);
  const int z = add_slot(k, "z", SlotKind::Mutable);
  Builder b(k);
  const int lx = b.load(Op::LoadPlane, x, 0);
  const int pos = b.op(Op::Gt, {lx, b.constant(0.0)});
  const int s = b.op(Op::Sqrt, {lx}, pos);
  const int l = b.op(Op::Log, {lx}, pos);
  const int zero = b.constant(0.0);
  const int lp = b.load(Op::LoadParam, p, 0);
  const int r = b.op(Op::Add, {b.op(Op::Select, {pos, s, zero}),
                               b.op(Op::Mul, {b.op(Op::Select, {pos, l, zero}), lp})});
  store(k, z, 0, r);
  return k;
}

TEST_P(ADChecks, PredicatesKeepNaNOutOfBranchesNotTaken) {
  Harness h(8, 1, 5, pipeline());
  h.range("x", 0.2, 2);
  check_all(guarded_kernel(), h, {"x", "p"});
  Harness neg(8, 1, 5, pipeline());
  neg.range("x", -2, -0.2);
  check_all(guarded_kernel(), neg, {"x", "p"}, false);  // zero where x < 0
  const Kernel a = derived_adjoint(guarded_kernel(), {"x", "p"});
  const auto r =
      neg.run(a, {{"p", {2.0}}, {"x", neg.random(8, -2, -0.1)}, {"z_bar", neg.random(8)}});
  for (double g : r.out.at("x_bar")) EXPECT_EQ(g, 0.0);
  EXPECT_EQ(r.out.at("p_bar")[0], 0.0);
  const Kernel t = derived_tangent(guarded_kernel(), {"x"}, false);
  const auto rt =
      neg.run(t, {{"p", {2.0}}, {"x", neg.random(8, -2, -0.1)}, {"x_dot", neg.random(8)}});
  for (double d : rt.out.at("z_dot")) EXPECT_EQ(d, 0.0);
}

// z = w.at(i)[0] * x + w.at(i)[1]^2, the index under a predicate (i >= 0), and a table sum
// output to exercise derived kernels of derived kernels.
Kernel table_kernel() {
  Kernel k;
  k.name = "lookup";
  const int w = add_slot(k, "w", SlotKind::Table, 2);
  const int i = add_slot(k, "i", SlotKind::Plane);
  const int x = add_slot(k, "x", SlotKind::Plane);
  const int z = add_slot(k, "z", SlotKind::Mutable);
  Builder b(k);
  const int li = b.load(Op::LoadPlane, i, 0);
  const int ok = b.op(Op::Ge, {li, b.constant(0.0)});
  const int idx = b.op(Op::ToIndex, {li});
  const int e0 = b.load(Op::LoadTable, w, 0, ok, idx);
  const int e1 = b.load(Op::LoadTable, w, 1, ok, idx);
  const int r =
      b.op(Op::Add, {b.op(Op::Mul, {e0, b.load(Op::LoadPlane, x, 0)}), b.op(Op::Mul, {e1, e1})});
  store(k, z, 0, b.op(Op::Select, {ok, r, b.constant(0.0)}));
  return k;
}

TEST_P(ADChecks, TablesScatterAndGather) {
  Harness h(12, 4, 9, pipeline());
  h.set("i", {0.5, 1.5, 2.5, 3.5, 0.2, 1.2, 2.2, 3.2, -3.0, -5.0, 1.7, 1.1});
  check_all(table_kernel(), h, {"w", "x"});
  check_all(table_kernel(), h, {"w"});
  // The out-of-range indices (i < 0) are under a false predicate: no error in any kernel.
  const Kernel a = derived_adjoint(table_kernel(), {"w"});
  Data in = h.inputs(table_kernel());
  in["z_bar"] = h.random(12);
  EXPECT_EQ(h.run(a, in).error, RAPTOR_OK);
}

// m (in-out, width 2), a param, z pure: m = (m0 * a + sin(m1), m1 - m0); z = m0 * m1.
Kernel inout_kernel() {
  Kernel k;
  k.name = "inout";
  const int a = add_slot(k, "a", SlotKind::Param);
  const int m = add_slot(k, "m", SlotKind::Mutable, 2, true);
  const int z = add_slot(k, "z", SlotKind::Mutable);
  Builder b(k);
  const int m0 = b.load(Op::LoadState, m, 0);
  const int m1 = b.load(Op::LoadState, m, 1);
  store(k, m, 0,
        b.op(Op::Add, {b.op(Op::Mul, {m0, b.load(Op::LoadParam, a, 0)}), b.op(Op::Sin, {m1})}));
  store(k, m, 1, b.op(Op::Sub, {m1, m0}));
  store(k, z, 0, b.op(Op::Mul, {m0, m1}));
  return k;
}

TEST_P(ADChecks, InOutMutables) {
  Harness h(10, 1, 13, pipeline());
  check_all(inout_kernel(), h, {"m", "a"});
  check_all(inout_kernel(), h, {"a"});
}

TEST_P(ADChecks, DerivedKernelsVerifyAndDeriveAgain) {
  const Kernel k = osc_kernel(3);
  const Kernel a = derived_adjoint(k, {"x", "c"});
  const Kernel aa = derived_adjoint(a, {"x", "c", "x_bar"});
  const Kernel ta = derived_tangent(a, {"c"}, true);
  const Kernel tt = derived_tangent(derived_tangent(k, {"c"}, true), {"c", "c_dot"}, true);
  for (const Kernel* d : {&a, &aa, &ta, &tt}) EXPECT_NO_THROW(ir::verify(*d)) << d->name;
  Harness h = osc_harness(pipeline());
  check_adjoint(aa, h, {"c", "x_bar"}, false);
  check_tangent(aa, h, {"c", "x_bar"}, 1e-7);
}

TEST(AD, TangentSlotLayout) {
  const Kernel k = osc_kernel(3);
  EXPECT_EQ(slot_list(tangent(k, {"c", "x"}, false)),
            (std::vector<std::string>{"dt:param", "c:param", "t_final:plane",
                                      "terminated:terminated", "x:plane", "v:plane", "t:plane",
                                      "c_dot:param", "x_dot:mutable:inout", "v_dot:mutable",
                                      "t_dot:mutable", "energy_dot:mutable"}));
  EXPECT_EQ(slot_list(tangent(k, {"c"}, true)),
            (std::vector<std::string>{
                "dt:param", "c:param", "t_final:plane", "terminated:terminated", "x:mutable:inout",
                "v:mutable:inout", "t:mutable:inout", "energy:mutable", "c_dot:param",
                "x_dot:mutable", "v_dot:mutable", "t_dot:mutable", "energy_dot:mutable"}));
  EXPECT_EQ(tangent(k, {"c"}, false).terminate, -1);
  EXPECT_NE(tangent(k, {"c"}, true).terminate, -1);
  const Kernel t = tangent(table_kernel(), {"w"}, false);
  EXPECT_EQ(slot_list(t), (std::vector<std::string>{"w:table", "i:plane", "x:plane", "w_dot:table",
                                                    "z_dot:mutable"}));
}

TEST(AD, AdjointSlotLayout) {
  const Kernel k = osc_kernel(3);
  const Kernel a = adjoint(k, {"c", "x", "t_final"});
  EXPECT_EQ(slot_list(a),
            (std::vector<std::string>{
                "dt:param", "c:param", "t_final:plane", "terminated:terminated", "x:plane",
                "v:plane", "t:plane", "x_bar:mutable:inout", "v_bar:plane", "t_bar:plane",
                "energy_bar:plane", "c_bar:param_sum", "t_final_bar:mutable"}));
  const Kernel at = adjoint(table_kernel(), {"w", "x"});
  EXPECT_EQ(slot_list(at), (std::vector<std::string>{"w:table", "i:plane", "x:plane", "z_bar:plane",
                                                     "w_bar:table_sum", "x_bar:mutable"}));
  EXPECT_EQ(at.slots[4].table_of, 0);
  // The adjoint of an adjoint: sums become cotangent inputs.
  const Kernel aa = adjoint(at, {"w"});
  EXPECT_EQ(slot_list(aa),
            (std::vector<std::string>{"w:table", "i:plane", "x:plane", "z_bar:plane",
                                      "w_bar_bar:table", "x_bar_bar:plane", "w_bar:table_sum"}));
  // And a tangent of an adjoint: sums get tangent sums.
  const Kernel ta = tangent(at, {"w"}, false);
  EXPECT_EQ(slot_list(ta),
            (std::vector<std::string>{"w:table", "i:plane", "x:plane", "z_bar:plane", "w_dot:table",
                                      "w_bar_dot:table_sum", "x_bar_dot:mutable"}));
  EXPECT_EQ(ta.slots[5].table_of, 0);
}

TEST(AD, NamesThatCollideGetUnderscores) {
  Kernel k;
  k.name = "clash";
  const int x = add_slot(k, "x", SlotKind::Plane);
  add_slot(k, "x_dot", SlotKind::Plane);
  add_slot(k, "x_bar", SlotKind::Param);
  const int z = add_slot(k, "z", SlotKind::Mutable);
  Builder b(k);
  store(k, z, 0, b.op(Op::Sin, {b.load(Op::LoadPlane, x, 0)}));
  EXPECT_EQ(slot_list(tangent(k, {"x"}, false)),
            (std::vector<std::string>{"x:plane", "x_dot:plane", "x_bar:param", "x_dot_:plane",
                                      "z_dot:mutable"}));
  EXPECT_EQ(slot_list(adjoint(k, {"x"})),
            (std::vector<std::string>{"x:plane", "x_dot:plane", "x_bar:param", "z_bar:plane",
                                      "x_bar_:mutable"}));
}

TEST(AD, RefusesWhatCannotBeDifferentiated) {
  const Kernel k = osc_kernel(3);
  for (const char* bad : {"energy", "terminated", "nope"}) {
    try {
      tangent(k, {bad}, false);
      ADD_FAILURE() << bad;
    } catch (const std::invalid_argument& e) {
      const std::string msg = e.what();
      EXPECT_NE(msg.find("'osc'"), std::string::npos) << msg;
      EXPECT_NE(msg.find(std::string("'") + bad + "'"), std::string::npos) << msg;
      EXPECT_NE(msg.find("in-out Mutable"), std::string::npos) << msg;
    }
    EXPECT_THROW(adjoint(k, {bad}), std::invalid_argument);
  }
  EXPECT_THROW(adjoint(adjoint(k, {"c"}), {"c_bar"}), std::invalid_argument);  // a ParamSum
  EXPECT_THROW(adjoint(k, {"c", "c"}), std::invalid_argument);
}

TEST(AD, DeadTangentsAreNotEmitted) {
  // z = x * y + sin(p), y2 = cos(p): wrt x only.
  Kernel k;
  k.name = "dead";
  const int p = add_slot(k, "p", SlotKind::Param);
  const int x = add_slot(k, "x", SlotKind::Plane);
  const int y = add_slot(k, "y", SlotKind::Plane);
  const int z = add_slot(k, "z", SlotKind::Mutable);
  const int z2 = add_slot(k, "z2", SlotKind::Mutable);
  Builder b(k);
  const int lp = b.load(Op::LoadParam, p, 0);
  store(k, z, 0,
        b.op(Op::Add, {b.op(Op::Mul, {b.load(Op::LoadPlane, x, 0), b.load(Op::LoadPlane, y, 0)}),
                       b.op(Op::Sin, {lp})}));
  store(k, z2, 0, b.op(Op::Cos, {lp}));
  const Kernel t = tangent(k, {"x"}, false);
  EXPECT_EQ(count_ops(t, Op::Sin), 0);
  EXPECT_EQ(count_ops(t, Op::Cos), 0);
  EXPECT_EQ(count_ops(t, Op::LoadParam), 0);
  EXPECT_EQ(t.values.size(), 4u);  // x_dot, y, x_dot * y, const 0
  const int zd = t.find_slot("z2_dot");
  for (const auto& st : t.stores)
    if (st.slot == zd) {
      EXPECT_EQ(t.values[st.value].op, Op::Const);
      EXPECT_EQ(t.values[st.value].imm, 0.0);
    }
  const Kernel a = adjoint(k, {"x"});
  EXPECT_EQ(count_ops(a, Op::Sin), 0);
  EXPECT_EQ(count_ops(a, Op::Cos), 0);
  EXPECT_EQ(a.values.size(), 3u);  // z_bar, y, z_bar * y
}

TEST(AD, AdjointComputesEachPrimalValueOnce) {
  // z = exp(x) * tanh(x) + sqrt(x) * sin(x) + atan2(x, p)
  Kernel k;
  k.name = "once";
  const int p = add_slot(k, "p", SlotKind::Param);
  const int x = add_slot(k, "x", SlotKind::Plane);
  const int z = add_slot(k, "z", SlotKind::Mutable);
  Builder b(k);
  const int lx = b.load(Op::LoadPlane, x, 0);
  const int lp = b.load(Op::LoadParam, p, 0);
  const int r =
      b.op(Op::Add, {b.op(Op::Add, {b.op(Op::Mul, {b.op(Op::Exp, {lx}), b.op(Op::Tanh, {lx})}),
                                    b.op(Op::Mul, {b.op(Op::Sqrt, {lx}), b.op(Op::Sin, {lx})})}),
                     b.op(Op::Atan2, {lx, lp})});
  store(k, z, 0, r);
  const Kernel a = adjoint(k, {"x", "p"});
  for (const Op op : {Op::Exp, Op::Tanh, Op::Sqrt, Op::Sin, Op::LoadPlane})
    EXPECT_EQ(count_ops(a, op), op == Op::LoadPlane ? 2 : 1) << ir::op_name(op);
  EXPECT_EQ(count_ops(a, Op::Atan2), 0);      // its partials need only its operands
  EXPECT_EQ(count_ops(a, Op::LoadParam), 1);  // p
  const Kernel t = tangent(k, {"x", "p"}, true);
  for (const Op op : {Op::Exp, Op::Tanh, Op::Sqrt, Op::Sin, Op::Atan2})
    EXPECT_EQ(count_ops(t, op), 1) << ir::op_name(op);
  for (const Pipeline p : {Pipeline::Raw, Pipeline::Optimized}) {
    Harness h(8, 1, 21, p);
    h.range("x", 0.5, 2);
    check_all(k, h, {"x", "p"});
  }
}

// The Optimized pipeline is not a no-op on derived kernels, and changes no result bit: the
// raw and the optimized tangent and adjoint of each kernel agree bit for bit (NaN for NaN)
// on the same inputs.
TEST(AD, OptimizedDerivedKernelsGiveTheSameBits) {
  struct Case {
    Kernel k;
    std::vector<std::string> wrt;
    int64_t m;
  };
  const Case cases[] = {{drag_kernel(), {"v", "cd", "dt", "g"}, 1},
                        {osc_kernel(3), {"x", "v", "c", "dt"}, 1},
                        {guarded_kernel(), {"x", "p"}, 1},
                        {table_kernel(), {"w", "x"}, 4},
                        {inout_kernel(), {"m", "a"}, 1}};
  size_t smaller = 0;
  for (const Case& c : cases) {
    SCOPED_TRACE(c.k.name);
    Harness h(6, c.m, 17);
    h.range("x", -2, 2);  // guarded: both branches
    if (c.k.has_mask()) {
      h.set("dt", {0.1});
      h.set("t_final", {0.05, 0.15, 0.25, 0.45, 0.05, 0.18});
      h.mask({0, 0, 0, 0, 1, 0});
    }
    if (c.m > 1) h.set("i", {0.5, 1.5, 2.5, 3.5, -1.0, 1.2});
    const Kernel pairs[][2] = {{derive_tangent(c.k, c.wrt, true, Pipeline::Raw),
                                derive_tangent(c.k, c.wrt, true, Pipeline::Optimized)},
                               {derive_adjoint(c.k, c.wrt, Pipeline::Raw),
                                derive_adjoint(c.k, c.wrt, Pipeline::Optimized)}};
    for (const auto& [raw, opt] : pairs) {
      smaller += opt.values.size() < raw.values.size();
      const Data in = h.inputs(raw);
      const auto r = h.run(raw, in);
      const auto o = h.run(opt, in);
      EXPECT_EQ(r.error, o.error) << raw.name;
      EXPECT_EQ(r.mask, o.mask) << raw.name;
      for (const auto& [name, v] : r.out) {
        const auto& w = o.out.at(name);
        ASSERT_EQ(v.size(), w.size()) << raw.name << " " << name;
        for (size_t i = 0; i < v.size(); ++i) {
          if (std::isnan(v[i]) && std::isnan(w[i])) continue;
          EXPECT_EQ(std::signbit(v[i]), std::signbit(w[i])) << raw.name << " " << name << i;
          EXPECT_EQ(v[i], w[i]) << raw.name << " " << name << "[" << i << "]";
        }
      }
    }
  }
  EXPECT_GT(smaller, 0u) << "passes::optimize removed nothing from any derived kernel";
}

TEST(AD, LinearKernelReadsResidualsInsteadOfRecomputingThePrimal) {
  const Kernel k = through(drag_kernel(), Pipeline::Optimized);
  const Kernel t = through(tangent(k, {"v", "cd"}, false), Pipeline::Optimized);
  const Linearized lin = linearize(k, {"v", "cd"});
  EXPECT_EQ(count_ops(t, Op::Sqrt), 1);  // the tangent kernel recomputes |v|
  EXPECT_EQ(count_ops(lin.linear, Op::Sqrt), 0);
  EXPECT_EQ(count_ops(lin.primal, Op::Sqrt), 1);
  EXPECT_EQ(lin.primal.name, k.name + "_jvp_primal");
  EXPECT_EQ(lin.linear.name, k.name + "_jvp_linear");
  int residuals = 0;
  for (size_t s = 0; s < lin.primal.slots.size(); ++s) {
    const ir::Slot& slot = lin.primal.slots[s];
    if (slot.role != 'r') {
      EXPECT_EQ(slot.name, k.slots.at(s).name);  // k's slots first, in order
      continue;
    }
    ++residuals;
    EXPECT_EQ(slot.kind, SlotKind::Mutable);
    EXPECT_EQ(slot.dtype, ir::Dtype::Float);
    const int b = lin.linear.find_slot(slot.name);
    ASSERT_GE(b, 0) << slot.name;
    EXPECT_EQ(lin.linear.slots[b].kind, SlotKind::Plane);
    EXPECT_EQ(lin.linear.slots[b].role, 'r');
  }
  EXPECT_GE(residuals, 1);
  EXPECT_LE(residuals, 3);                    // |v| and what the tangent of -cd |v| v needs of it
  for (const ir::Slot& s : lin.linear.slots)  // no primal outputs in the linear kernel
    if (s.role == 'p') {
      EXPECT_NE(s.kind, SlotKind::Mutable) << s.name;
    }
}

TEST(AD, DerivedValuesKeepUserNames) {
  const Kernel t = tangent(drag_kernel(), {"cd"}, false);
  const Kernel a = adjoint(drag_kernel(), {"v"});
  auto has = [](const Kernel& k, const std::string& name) {
    for (const auto& v : k.values)
      if (v.name == name) return true;
    return false;
  };
  EXPECT_TRUE(has(t, "a_dot"));
  EXPECT_TRUE(has(a, "a_bar"));
  EXPECT_TRUE(has(a, "speed_bar"));
  EXPECT_TRUE(has(a, "speed"));
}

}  // namespace
}  // namespace raptor::ad
