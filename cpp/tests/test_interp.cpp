// Tests of the reference interpreter (ir/interp.hpp): the mask skip, zero_finished, steps
// with termination, table bounds under true and false predicates, sums, and operator
// conventions. Kernels are built by hand with ad::Builder.
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <limits>
#include <stdexcept>

#include "ad/common.hpp"
#include "ir/interp.hpp"
#include "ir/ir.hpp"
#include "passes/eval.hpp"
#include "runtime/abi.h"
#include "test_util_ir.hpp"

namespace raptor::ir {
namespace {

using testing::add_slot;
using testing::store;

// x: in-out Mutable, y: pure Mutable, m: mask; y = x * 2, x = x + p.
struct SkipKernel {
  Kernel k;
  int p, x, y, m;
  SkipKernel() {
    k.name = "skip";
    p = add_slot(k, "p", SlotKind::Param);
    m = add_slot(k, "done", SlotKind::Terminated);
    x = add_slot(k, "x", SlotKind::Mutable, 1, true);
    y = add_slot(k, "y", SlotKind::Mutable);
    ad::Builder b(k);
    const int lx = b.load(Op::LoadState, x, 0);
    const int lp = b.load(Op::LoadParam, p, 0);
    store(k, y, 0, b.op(Op::Mul, {lx, b.constant(2.0)}));
    store(k, x, 0, b.op(Op::Add, {lx, lp}));
    verify(k);
  }
};

TEST(Interp, MaskSkipsSamples) {
  SkipKernel s;
  for (const bool zero : {false, true}) {
    InterpBinding b = make_binding(s.k, 3);
    b.zero_finished = zero;
    b.slots[s.p].in = {10.0};
    b.slots[s.x].in = {1.0, 2.0, 3.0};
    b.slots[s.x].out = {-1.0, -1.0, -1.0};
    b.slots[s.y].out = {-7.0, -7.0, -7.0};
    b.mask = {0, 1, 0};
    interpret(s.k, b);
    EXPECT_EQ(b.slots[s.x].out, (std::vector<double>{11.0, 2.0, 13.0}));
    EXPECT_EQ(b.slots[s.y].out, (std::vector<double>{2.0, zero ? 0.0 : -7.0, 6.0}));
    EXPECT_EQ(b.mask, (std::vector<uint8_t>{0, 1, 0}));
    EXPECT_EQ(b.finished, 0u);
    EXPECT_EQ(b.error[0], RAPTOR_OK);
  }
}

TEST(Interp, StepsWithTerminationMidLoop) {
  // t += 1 each step; terminated when t >= t_final; x counts steps run; y = 0 + 1 (pure).
  Kernel k;
  k.name = "count";
  k.steps = 4;
  const int tf = add_slot(k, "t_final", SlotKind::Plane);
  add_slot(k, "done", SlotKind::Terminated);
  const int t = add_slot(k, "t", SlotKind::Mutable, 1, true);
  const int y = add_slot(k, "y", SlotKind::Mutable);
  ad::Builder b(k);
  const int lt = b.load(Op::LoadState, t, 0);
  const int ly = b.load(Op::LoadState, y, 0);
  const int nt = b.op(Op::Add, {lt, b.constant(1.0)});
  store(k, t, 0, nt);
  store(k, y, 0, b.op(Op::Add, {ly, b.constant(1.0)}));
  k.terminate = b.op(Op::Ge, {nt, b.load(Op::LoadPlane, tf, 0)});
  verify(k);
  InterpBinding bd = make_binding(k, 4);
  bd.slots[tf].in = {1.0, 2.5, 10.0, 0.0};
  bd.slots[t].in = {0.0, 0.0, 0.0, 0.0};
  bd.mask = {0, 0, 0, 1};
  interpret(k, bd);
  EXPECT_EQ(bd.slots[t].out, (std::vector<double>{1.0, 3.0, 4.0, 0.0}));
  EXPECT_EQ(bd.slots[y].out, (std::vector<double>{1.0, 3.0, 4.0, 0.0}));
  EXPECT_EQ(bd.mask, (std::vector<uint8_t>{1, 1, 0, 1}));
  EXPECT_EQ(bd.finished, 2u);
  // A second launch continues from the outputs; finished samples are skipped.
  bd.slots[t].in = bd.slots[t].out;
  bd.finished = 0;
  interpret(k, bd);
  EXPECT_EQ(bd.slots[t].out, (std::vector<double>{1.0, 3.0, 8.0, 0.0}));
  EXPECT_EQ(bd.finished, 0u);
}

// z = w.at(to_index(i))[1] with the load's predicate `c` (a plane > 0 test) or none.
struct TableKernel {
  Kernel k;
  int w, i, c, z;
  explicit TableKernel(bool with_pred) {
    k.name = "lookup";
    w = add_slot(k, "w", SlotKind::Table, 2);
    i = add_slot(k, "i", SlotKind::Plane);
    c = add_slot(k, "c", SlotKind::Plane);
    z = add_slot(k, "z", SlotKind::Mutable);
    ad::Builder b(k);
    const int idx = b.op(Op::ToIndex, {b.load(Op::LoadPlane, i, 0)});
    const int pred = with_pred ? b.op(Op::Gt, {b.load(Op::LoadPlane, c, 0), b.constant(0.0)}) : -1;
    const int e = b.load(Op::LoadTable, w, 1, pred, idx);
    store(k, z, 0, e);
    verify(k);
  }
};

TEST(Interp, TableIndexErrorUnderTruePredicate) {
  TableKernel t(true);
  InterpBinding b = make_binding(t.k, 3, 3);
  b.slots[t.w].in = {0, 10, 0, 11, 0, 12};
  b.slots[t.i].in = {1.5, 7.0, -0.5};
  b.slots[t.c].in = {1.0, 1.0, 1.0};
  interpret(t.k, b);
  EXPECT_EQ(b.error[0], RAPTOR_ERR_TABLE_INDEX);
  EXPECT_EQ(b.error[1], t.w);
  EXPECT_EQ(b.error[2], 7);  // the first error is kept
  EXPECT_EQ(b.error[3], 1);
  EXPECT_EQ(b.slots[t.z].out, (std::vector<double>{11.0, 0.0, 0.0}));
}

TEST(Interp, TableIndexClampedUnderFalsePredicate) {
  TableKernel t(true);
  InterpBinding b = make_binding(t.k, 3, 3);
  b.slots[t.w].in = {0, 10, 0, 11, 0, 12};
  b.slots[t.i].in = {1.5, 7.0, -0.5};
  b.slots[t.c].in = {1.0, -1.0, -1.0};
  interpret(t.k, b);
  EXPECT_EQ(b.error[0], RAPTOR_OK);
  EXPECT_EQ(b.slots[t.z].out, (std::vector<double>{11.0, 12.0, 10.0}));
}

TEST(Interp, TableIndexWithoutPredicateIsChecked) {
  TableKernel t(false);
  InterpBinding b = make_binding(t.k, 2, 3);
  b.slots[t.i].in = {0.0, 3.0};
  interpret(t.k, b);
  EXPECT_EQ(b.error[0], RAPTOR_ERR_TABLE_INDEX);
  EXPECT_EQ(b.error[2], 3);
  EXPECT_EQ(b.error[3], 1);
}

TEST(Interp, SumsAccumulateUnderPredicates) {
  Kernel k;
  k.name = "sums";
  const int x = add_slot(k, "x", SlotKind::Plane);
  const int i = add_slot(k, "i", SlotKind::Plane);
  const int t = add_slot(k, "t", SlotKind::Table, 2);
  const int ps = add_slot(k, "s", SlotKind::ParamSum);
  const int ts = add_slot(k, "ts", SlotKind::TableSum, 2);
  k.slots[ts].table_of = t;
  ad::Builder b(k);
  const int lx = b.load(Op::LoadPlane, x, 0);
  const int pos = b.op(Op::Gt, {lx, b.constant(0.0)});
  const int idx = b.op(Op::ToIndex, {b.load(Op::LoadPlane, i, 0)});
  store(k, ps, 0, lx, pos);
  store(k, ps, 0, lx);  // two stores to one sum add up
  store(k, ts, 1, lx, pos, idx);
  verify(k);
  InterpBinding bd = make_binding(k, 4, 2);
  bd.slots[x].in = {1.0, -2.0, 3.0, 4.0};
  bd.slots[i].in = {0.0, 9.0, 1.0, 1.0};  // sample 1's index is out of range but pred false
  bd.slots[ps].out = {100.0};
  interpret(k, bd);
  EXPECT_EQ(bd.error[0], RAPTOR_OK);
  EXPECT_DOUBLE_EQ(bd.slots[ps].out[0], 100.0 + 8.0 + 6.0);
  EXPECT_EQ(bd.slots[ts].out, (std::vector<double>{0.0, 1.0, 0.0, 7.0}));
  // Out of range under a true predicate: an error, nothing added.
  bd.slots[x].in = {1.0, 2.0, 3.0, 4.0};
  bd.slots[ts].out.assign(4, 0.0);
  interpret(k, bd);
  EXPECT_EQ(bd.error[0], RAPTOR_ERR_TABLE_INDEX);
  EXPECT_EQ(bd.error[1], ts);
  EXPECT_EQ(bd.error[2], 9);
  EXPECT_EQ(bd.slots[ts].out, (std::vector<double>{0.0, 1.0, 0.0, 7.0}));
}

double eval1(Op op, double a, double c = 0.0, int64_t iimm = 0) {
  Kernel k;
  k.name = "op";
  const int x = add_slot(k, "x", SlotKind::Plane);
  const int y = add_slot(k, "y", SlotKind::Plane);
  const int z = add_slot(k, "z", SlotKind::Mutable);
  ad::Builder b(k);
  const int lx = b.load(Op::LoadPlane, x, 0);
  const int ly = b.load(Op::LoadPlane, y, 0);
  const int arity = op_arity(op);
  int r = arity == 1   ? b.op(op, {lx})
          : arity == 2 ? b.op(op, {lx, ly})
                       : b.op(op, {lx, ly, b.constant(static_cast<double>(iimm))});
  k.values[r].iimm = iimm;
  if (k.values[r].type == Type::B) r = b.op(Op::Select, {r, b.constant(1.0), b.constant(0.0)});
  store(k, z, 0, r);
  verify(k);
  InterpBinding bd = make_binding(k, 1);
  bd.slots[x].in = {a};
  bd.slots[y].in = {c};
  interpret(k, bd);
  return bd.slots[z].out[0];
}

TEST(Interp, OperatorConventions) {
  const double nan = std::numeric_limits<double>::quiet_NaN();
  EXPECT_TRUE(std::isnan(eval1(Op::Max, nan, 1.0)));
  EXPECT_TRUE(std::isnan(eval1(Op::Min, 1.0, nan)));
  EXPECT_EQ(eval1(Op::Max, 1.0, 2.0), 2.0);
  EXPECT_EQ(eval1(Op::Min, 1.0, 2.0), 1.0);
  EXPECT_EQ(eval1(Op::Sign, 0.0), 0.0);
  EXPECT_EQ(eval1(Op::Sign, -3.0), -1.0);
  EXPECT_TRUE(std::isnan(eval1(Op::Sign, nan)));
  EXPECT_EQ(eval1(Op::PowI, 2.0, 0, 3), 8.0);
  EXPECT_EQ(eval1(Op::PowI, 2.0, 0, -2), 0.25);
  EXPECT_EQ(eval1(Op::PowI, 0.0, 0, 0), 1.0);
  EXPECT_EQ(eval1(Op::Pow, 2.0, 0.5), std::pow(2.0, 0.5));
  EXPECT_EQ(eval1(Op::Atan2, 1.0, -1.0), std::atan2(1.0, -1.0));
  EXPECT_EQ(eval1(Op::Floor, -1.5), -2.0);
  EXPECT_EQ(eval1(Op::Le, 1.0, 1.0), 1.0);
  EXPECT_EQ(eval1(Op::Ne, 1.0, 1.0), 0.0);
}

// hawk.math's NumPy-named functions (ir/math_fns.hpp): values NumPy gives (np.remainder's
// signs, np.round's halves to even), exact results of the C library, the predicates as 0/1.
TEST(Interp, NumpyFunctions) {
  const double nan = std::numeric_limits<double>::quiet_NaN();
  const double inf = std::numeric_limits<double>::infinity();
  EXPECT_EQ(eval1(Op::Rint, 2.5), 2.0);
  EXPECT_EQ(eval1(Op::Rint, 3.5), 4.0);
  EXPECT_EQ(eval1(Op::Rint, -2.5), -2.0);
  EXPECT_TRUE(std::signbit(eval1(Op::Rint, -0.5)));
  EXPECT_EQ(eval1(Op::Ceil, 1.25), 2.0);
  EXPECT_TRUE(std::signbit(eval1(Op::Ceil, -0.5)));
  EXPECT_EQ(eval1(Op::Trunc, -1.75), -1.0);
  EXPECT_EQ(eval1(Op::Remainder, -7.5, 2.0), 0.5);  // np.remainder: the sign of the divisor
  EXPECT_EQ(eval1(Op::Remainder, 7.5, -2.0), -0.5);
  EXPECT_TRUE(std::signbit(eval1(Op::Remainder, 6.0, -2.0)));  // -0.0, as NumPy
  EXPECT_FALSE(std::signbit(eval1(Op::Remainder, -6.0, 2.0)));
  EXPECT_EQ(eval1(Op::Remainder, -1.0, inf), inf);
  EXPECT_TRUE(std::isnan(eval1(Op::Remainder, 3.0, 0.0)));
  EXPECT_TRUE(std::isnan(eval1(Op::Remainder, inf, 2.0)));
  EXPECT_EQ(eval1(Op::Fmod, -7.5, 2.0), -1.5);  // np.fmod: the sign of the dividend
  EXPECT_EQ(eval1(Op::Copysign, 3.0, -0.0), -3.0);
  EXPECT_EQ(eval1(Op::Fdim, 3.0, 1.0), 2.0);
  EXPECT_EQ(eval1(Op::Fdim, 1.0, 3.0), 0.0);
  EXPECT_TRUE(std::isnan(eval1(Op::Fdim, nan, 3.0)));
  EXPECT_EQ(eval1(Op::Hypot, 3.0, 4.0), 5.0);
  EXPECT_EQ(eval1(Op::Hypot, inf, nan), inf);
  EXPECT_DOUBLE_EQ(eval1(Op::Cbrt, -27.0), -3.0);  // glibc's cbrt(-27) is 1 ulp from -3
  EXPECT_EQ(eval1(Op::Exp2, 10.0), 1024.0);
  EXPECT_EQ(eval1(Op::Log2, 8.0), 3.0);
  EXPECT_EQ(eval1(Op::Log10, 1000.0), 3.0);
  EXPECT_EQ(eval1(Op::Log1p, -1.0), -inf);
  EXPECT_EQ(eval1(Op::Atanh, 1.0), inf);
  EXPECT_EQ(eval1(Op::Acosh, 1.0), 0.0);
  EXPECT_TRUE(std::isnan(eval1(Op::Acosh, 0.5)));
  EXPECT_EQ(eval1(Op::Erf, inf), 1.0);
  EXPECT_EQ(eval1(Op::Erfc, -inf), 2.0);
  EXPECT_EQ(eval1(Op::IsNan, nan), 1.0);
  EXPECT_EQ(eval1(Op::IsNan, inf), 0.0);
  EXPECT_EQ(eval1(Op::IsInf, -inf), 1.0);
  EXPECT_EQ(eval1(Op::IsFinite, 1e308), 1.0);
  EXPECT_EQ(eval1(Op::IsFinite, nan), 0.0);
  // fma rounds once: 0.1 * 10 - 1 keeps the product's rounding error, 2^-54 + 2^-56
  EXPECT_EQ(eval1(Op::Fma, 0.1, 10.0, -1), 5.551115123125783e-17);
}

TEST(Interp, NumpyFunctionsInFloat32CallTheFloatLibrary) {
  const float x = 0.3f;
  float a[3] = {x, 0, 0};
  const auto bits = [](float f) {
    uint32_t u;
    std::memcpy(&u, &f, 4);
    return u;
  };
  EXPECT_EQ(bits(passes::eval_op_f32(Op::Asin, a, 0)), bits(::asinf(x)));
  EXPECT_EQ(bits(passes::eval_op_f32(Op::Erfc, a, 0)), bits(::erfcf(x)));
  EXPECT_EQ(bits(passes::eval_op_f32(Op::Cbrt, a, 0)), bits(::cbrtf(x)));
  a[1] = 2.0f;
  EXPECT_EQ(bits(passes::eval_op_f32(Op::Hypot, a, 0)), bits(::hypotf(x, 2.0f)));
}

TEST(Interp, ToIndexFloorsAndLoadMaskIsFalse) {
  TableKernel t(false);
  InterpBinding b = make_binding(t.k, 1, 3);
  b.slots[t.i].in = {-0.5};  // floor: -1, out of range (truncation would give 0)
  interpret(t.k, b);
  EXPECT_EQ(b.error[0], RAPTOR_ERR_TABLE_INDEX);
  EXPECT_EQ(b.error[2], -1);

  Kernel k;
  k.name = "mask";
  add_slot(k, "done", SlotKind::Terminated);
  const int z = add_slot(k, "z", SlotKind::Mutable);
  ad::Builder bd(k);
  const int m = bd.load(Op::LoadMask, -1, 0);
  store(k, z, 0, bd.op(Op::Select, {m, bd.constant(5.0), bd.constant(6.0)}));
  verify(k);
  InterpBinding b2 = make_binding(k, 2);
  b2.mask = {0, 1};
  b2.slots[z].out = {0.0, 9.0};
  interpret(k, b2);
  EXPECT_EQ(b2.slots[z].out, (std::vector<double>{6.0, 9.0}));
}

TEST(Interp, RejectsWrongSizes) {
  SkipKernel s;
  InterpBinding b = make_binding(s.k, 3);
  b.slots[s.x].in.resize(2);
  EXPECT_THROW(interpret(s.k, b), std::invalid_argument);
}

}  // namespace
}  // namespace raptor::ir
