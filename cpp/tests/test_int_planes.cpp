// Tests of integer and bool planes (docs/language.md "Integer and bool planes") in the front
// end, the passes' integer semantics, the reference interpreter and AD:
// 1. Typing: int op int stays I, int op float becomes float(i) op x, loads take the slot's type.
// 2. Python's floor division and modulo for negative operands (against floor(a / b) in double,
//    an independent formula for small operands), wrapping in int64 and int32 stores.
// 3. Error codes: a zero divisor and int(NaN) report RAPTOR_ERR_* with the line and sample;
//    under a branch not taken they do not.
// 4. Refusals name the kernel, line and fix; AD refuses int planes and keeps them as inputs.
// The emitted C++ of an int kernel is a golden in test_codegen.cpp (CodegenGolden.IntCounter);
// the host build against NumPy and the NVRTC build are tests/test_int_planes.py.
#include <gtest/gtest.h>

#include <cmath>
#include <cstdint>
#include <limits>
#include <string>

#include "ad/adjoint.hpp"
#include "ad/tangent.hpp"
#include "common/error.hpp"
#include "passes/eval.hpp"
#include "runtime/abi.h"
#include "test_util_spec.hpp"

namespace raptor::testing {
namespace {

ir::ParamSpec typed(ir::ParamSpec p, ir::Dtype d) { return with_dtype(std::move(p), d); }
ir::ParamSpec I64(std::string n) { return typed(Scalar(std::move(n)), ir::Dtype::Int64); }
ir::ParamSpec MutI64(std::string n) { return typed(MutScalar(std::move(n)), ir::Dtype::Int64); }
ir::ParamSpec MutI32(std::string n) { return typed(MutScalar(std::move(n)), ir::Dtype::Int32); }

bool Contains(const std::string& s, const std::string& part) {
  return s.find(part) != std::string::npos;
}

int count_ops(const ir::Kernel& k, ir::Op op, ir::Type t) {
  int n = 0;
  for (const ir::Value& v : k.values) n += v.op == op && v.type == t;
  return n;
}

const char* kDivmod =
    R"(def divmod_k(a: Scalar[hawk.int64], b: Scalar[hawk.int64], x: Scalar, q: Mutable[Scalar[hawk.int64]], r: Mutable[Scalar[hawk.int64]], f: Mutable[Scalar]):
    q = a // b
    r = a % b
    f = a * x + float(b)
)";

ir::Kernel divmod_kernel() {
  return lowered(kDivmod,
                 {I64("a"), I64("b"), Scalar("x"), MutI64("q"), MutI64("r"), MutScalar("f")});
}

TEST(IntLower, IntOpsStayIntAndMixWithFloatsAsPython) {
  const ir::Kernel k = divmod_kernel();
  EXPECT_EQ(count_ops(k, ir::Op::FloorDiv, ir::Type::I), 1);
  EXPECT_EQ(count_ops(k, ir::Op::Mod, ir::Type::I), 1);
  EXPECT_EQ(count_ops(k, ir::Op::ToFloat, ir::Type::F), 2);  // a in a * x, and float(b)
  EXPECT_EQ(count_ops(k, ir::Op::Mul, ir::Type::F), 1);
  EXPECT_EQ(count_ops(k, ir::Op::LoadPlane, ir::Type::I), 2);
  EXPECT_EQ(k.slots[k.find_slot("q")].dtype, ir::Dtype::Int64);
  EXPECT_TRUE(Contains(ir::print(k), "mutable q width=1 int64"));
  EXPECT_TRUE(Contains(ir::canonical(k), " int64\n"));
}

TEST(IntInterp, FloorDivisionAndModuloOfNegativeOperandsArePythons) {
  const ir::Kernel k = divmod_kernel();
  std::vector<double> a, b;
  for (int x = -9; x <= 9; ++x)
    for (int y = -4; y <= 4; ++y)
      if (y != 0) a.push_back(x), b.push_back(y);
  const int64_t n = static_cast<int64_t>(a.size());
  ir::InterpBinding ib = ir::make_binding(k, n);
  set_in(k, ib, "a", a);
  set_in(k, ib, "b", b);
  set_in(k, ib, "x", std::vector<double>(n, 0.5));
  ir::interpret(k, ib);
  EXPECT_EQ(ib.error[0], RAPTOR_OK);
  for (int64_t i = 0; i < n; ++i) {
    const double fq = std::floor(a[i] / b[i]);  // exact for these small operands
    EXPECT_EQ(out_of(k, ib, "q")[i], fq) << a[i] << " // " << b[i];
    EXPECT_EQ(out_of(k, ib, "r")[i], a[i] - b[i] * fq) << a[i] << " % " << b[i];
    EXPECT_EQ(out_of(k, ib, "f")[i], a[i] * 0.5 + b[i]);
  }
}

TEST(IntEval, WrapsInInt64AndFloorsAtTheLimits) {
  constexpr int64_t kMax = std::numeric_limits<int64_t>::max();
  constexpr int64_t kMin = std::numeric_limits<int64_t>::min();
  const int64_t add[2] = {kMax, 1};
  EXPECT_EQ(passes::eval_int(ir::Op::Add, add), kMin);
  const int64_t mul[2] = {int64_t{1} << 62, 4};
  EXPECT_EQ(passes::eval_int(ir::Op::Mul, mul), 0);
  const int64_t div[2] = {kMin, -1};
  EXPECT_EQ(passes::eval_int(ir::Op::FloorDiv, div), kMin);
  EXPECT_EQ(passes::eval_int(ir::Op::Mod, div), 0);
  const int64_t zero[2] = {5, 0};
  EXPECT_FALSE(passes::eval_int(ir::Op::FloorDiv, zero).has_value());
  EXPECT_FALSE(passes::to_int(std::nan("")).has_value());
  EXPECT_FALSE(passes::to_int(9.3e18).has_value());
  EXPECT_EQ(passes::to_int(-2.9), std::trunc(-2.9));
}

TEST(IntInterp, Int32StoresKeepTheLow32Bits) {
  const ir::Kernel k = lowered(R"(def wrap(a: Scalar[hawk.int64], p: Mutable[Scalar[hawk.int32]]):
    p = a * 3
)",
                               {I64("a"), MutI32("p")});
  const std::vector<double> a = {1e9, -1e9, 7, 3e9};
  ir::InterpBinding ib = ir::make_binding(k, 4);
  set_in(k, ib, "a", a);
  ir::interpret(k, ib);
  for (int i = 0; i < 4; ++i) {
    const int64_t full = static_cast<int64_t>(a[i]) * 3;
    int64_t low = full % (int64_t{1} << 32);  // the two's complement low word, independently
    if (low >= (int64_t{1} << 31)) low -= int64_t{1} << 32;
    if (low < -(int64_t{1} << 31)) low += int64_t{1} << 32;
    EXPECT_EQ(out_of(k, ib, "p")[i], static_cast<double>(low));
  }
}

TEST(IntInterp, ZeroDivisorIsAnErrorWithLineAndSampleUnlessTheBranchIsNotTaken) {
  const ir::Kernel k = lowered(
      R"(def d(a: Scalar[hawk.int64], b: Scalar[hawk.int64], q: Mutable[Scalar[hawk.int64]], g: Mutable[Scalar[hawk.int64]]):
    g = a // b if b != 0 else 0
    q = a // b
)",
      {I64("a"), I64("b"), MutI64("q"), MutI64("g")}, 1, "user.py", 20);
  ir::InterpBinding ib = ir::make_binding(k, 3);
  set_in(k, ib, "a", {7, 8, 9});
  set_in(k, ib, "b", {2, 0, 0});
  ir::interpret(k, ib);
  EXPECT_EQ(ib.error[0], RAPTOR_ERR_INT_DIV_ZERO);
  EXPECT_EQ(ib.error[1], 22);  // the line of `q = a // b`
  EXPECT_EQ(ib.error[3], 1);   // the first sample
  EXPECT_EQ(out_of(k, ib, "q")[1], 0.0);
  EXPECT_EQ(out_of(k, ib, "g")[1], 0.0);

  const ir::Kernel guarded = lowered(
      R"(def d(a: Scalar[hawk.int64], b: Scalar[hawk.int64], g: Mutable[Scalar[hawk.int64]]):
    g = a // b if b != 0 else 0
)",
      {I64("a"), I64("b"), MutI64("g")});
  ir::InterpBinding gb = ir::make_binding(guarded, 2);
  set_in(guarded, gb, "a", {7, 8});
  set_in(guarded, gb, "b", {2, 0});
  ir::interpret(guarded, gb);
  EXPECT_EQ(gb.error[0], RAPTOR_OK);
  EXPECT_EQ(out_of(guarded, gb, "g")[0], std::floor(7.0 / 2.0));
}

TEST(IntInterp, IntOfNanIsAConversionError) {
  const ir::Kernel k =
      optimized(lower_source(R"(def t(x: Scalar, i: Mutable[Scalar[hawk.int64]]):
    i = int(x)
)",
                             {Scalar("x"), MutI64("i")}, with_math({{"int", math("int")}})));
  ir::InterpBinding ib = ir::make_binding(k, 3);
  set_in(k, ib, "x", {2.7, -2.7, std::nan("")});
  ir::interpret(k, ib);
  EXPECT_EQ(ib.error[0], RAPTOR_ERR_INT_CONVERSION);
  EXPECT_EQ(ib.error[3], 2);
  EXPECT_EQ(out_of(k, ib, "i")[0], std::trunc(2.7));
  EXPECT_EQ(out_of(k, ib, "i")[1], std::trunc(-2.7));
}

TEST(IntInterp, IntTableIndexAndBoolPlanes) {
  ir::ParamSpec on = Scalar("on");
  on.dtype = ir::Dtype::Bool;
  ir::ParamSpec hit = MutScalar("hit");
  hit.dtype = ir::Dtype::Bool;
  const ir::Kernel k = lowered(
      R"(def look(w: Table[Scalar], i: Scalar[hawk.int32], on: Scalar[hawk.bool_], y: Mutable[Scalar], hit: Mutable[Scalar[hawk.bool_]]):
    y = w.at(i) if on else -1.0
    hit = on and i > 1
)",
      {TableScalar("w"), typed(Scalar("i"), ir::Dtype::Int32), on, MutScalar("y"), hit});
  EXPECT_EQ(count_ops(k, ir::Op::ToIndex, ir::Type::I), 0);  // the int is the index as it is
  ir::InterpBinding ib = ir::make_binding(k, 4, 5);
  set_in(k, ib, "w", {10, 11, 12, 13, 14});
  set_in(k, ib, "i", {0, 4, 2, 99});
  set_in(k, ib, "on", {1, 1, 0, 0});
  ir::interpret(k, ib);
  EXPECT_EQ(ib.error[0], RAPTOR_OK);  // index 99 is read only where `on` is false
  EXPECT_EQ(out_of(k, ib, "y"), (std::vector<double>{10, 14, -1, -1}));
  EXPECT_EQ(out_of(k, ib, "hit"), (std::vector<double>{0, 1, 0, 0}));
}

SourceError refusal(const std::string& source, std::vector<ir::ParamSpec> params) {
  try {
    lower_source(source, std::move(params));
  } catch (const SourceError& e) {
    return e;
  }
  ADD_FAILURE() << "expected a SourceError";
  return SourceError("", "", 0, 0, "");
}

TEST(IntRefusals, NameTheLineAndTheFix) {
  const SourceError a = refusal(R"(def k(i: Scalar[hawk.int64], y: Mutable[Scalar]):
    y = i * 2
)",
                                {I64("i"), MutScalar("y")});
  EXPECT_EQ(a.kernel, "k");
  EXPECT_EQ(a.line, 2);
  EXPECT_TRUE(Contains(a.message, "write float(...)")) << a.message;
  const SourceError b = refusal(R"(def k(x: Scalar, n: Mutable[Scalar[hawk.int32]]):
    n = x + 1.0
)",
                                {Scalar("x"), MutI32("n")});
  EXPECT_EQ(b.line, 2);
  EXPECT_TRUE(Contains(b.message, "write int(x)")) << b.message;
  const SourceError c = refusal(R"(def k(i: Scalar[hawk.int64], y: Mutable[Scalar[hawk.int64]]):
    y = i ** i
)",
                                {I64("i"), MutI64("y")});
  EXPECT_TRUE(Contains(c.message, "float(i) ** y")) << c.message;
  ir::ParamSpec t = TableScalar("w");
  t.dtype = ir::Dtype::Int32;
  const SourceError d = refusal(R"(def k(w: Table[Scalar], y: Mutable[Scalar]):
    y = w.at(0)
)",
                                {t, MutScalar("y")});
  EXPECT_TRUE(Contains(d.message, "holds floats")) << d.message;
}

TEST(IntAd, IntPlanesCarryNoDerivativeAndStayPrimalInputs) {
  const ir::Kernel k = lowered(
      R"(def c(x: Scalar, k: Scalar[hawk.int64], n: Mutable[Scalar[hawk.int32]], y: Mutable[Scalar]):
    y = y * float(k) + x
    n = n + k if y > 0.0 else n
)",
      {Scalar("x"), I64("k"), MutI32("n"), MutScalar("y")}, 3);
  EXPECT_THROW(ad::tangent(k, {"k"}, true), std::invalid_argument);
  EXPECT_THROW(ad::adjoint(k, {"n"}), std::invalid_argument);
  const ir::Kernel t = ad::tangent(k, {"x", "y"}, true);
  EXPECT_GE(t.find_slot("k"), 0);
  EXPECT_LT(t.find_slot("n_dot"), 0);
  EXPECT_GE(t.find_slot("y_dot"), 0);
  const ir::Kernel a = ad::adjoint(k, {"x", "y"});
  EXPECT_EQ(a.slots[a.find_slot("n")].dtype, ir::Dtype::Int32);
  EXPECT_EQ(a.slots[a.find_slot("n")].kind, ir::SlotKind::Plane);
  EXPECT_LT(a.find_slot("n_bar"), 0);
  // The adjoint's y_bar against finite differences of the interpreter, through the int branch.
  const ir::Kernel ao = optimized(a);
  ir::InterpBinding ab = ir::make_binding(ao, 2);
  set_in(ao, ab, "x", {0.3, -0.2});
  set_in(ao, ab, "k", {2, -1});
  set_in(ao, ab, "n", {0, 5});
  set_in(ao, ab, "y", {0.1, 0.4});
  set_in(ao, ab, "y_bar", {1.0, 1.0});
  ir::interpret(ao, ab);
  const auto primal_y = [&](double x, double y0, double kk) {
    double y = y0;
    for (int s = 0; s < 3; ++s) y = y * kk + x;
    return y;
  };
  const double h = 1e-6;
  const double fd = (primal_y(0.3 + h, 0.1, 2) - primal_y(0.3 - h, 0.1, 2)) / (2 * h);
  EXPECT_NEAR(out_of(ao, ab, "x_bar")[0], fd, 1e-8);
}

}  // namespace
}  // namespace raptor::testing
