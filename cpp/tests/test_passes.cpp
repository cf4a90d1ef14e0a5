// Tests of the IR clean-ups (passes/optimize.hpp): constant folding and exact identities
// (x*1 -> x, select of a constant condition), the identities that must NOT be applied because
// they change bits (x + 0.0, x - (-0.0), x * 0), CSE (identical values merged, values with
// different predicates kept apart), DCE (dead values removed, predicates of live values kept),
// and that optimize() never changes a result bit: the interpreter gives bit-identical outputs
// before and after, on lowered kernels and on random IR.
#include <gtest/gtest.h>

#include <bit>
#include <cmath>
#include <cstdint>
#include <limits>
#include <random>
#include <string>
#include <vector>

#include "ir/interp.hpp"
#include "ir/ir.hpp"
#include "passes/optimize.hpp"
#include "runtime/abi.h"
#include "test_util_spec.hpp"

namespace raptor::testing {
namespace {

using ir::Op;
using ir::SlotKind;
using ir::Type;

constexpr double kNaN = std::numeric_limits<double>::quiet_NaN();
constexpr double kInf = std::numeric_limits<double>::infinity();

// A hand-built kernel: slots x, y (Plane), p (Param), out (Mutable[Vector[width]]).
struct KB {
  ir::Kernel k;
  int x = -1, y = -1, p = -1;

  explicit KB(int width = 1, bool inout = false) {
    k.name = "hand";
    k.slots.push_back(make_slot("x", SlotKind::Plane, 1));
    k.slots.push_back(make_slot("y", SlotKind::Plane, 1));
    k.slots.push_back(make_slot("p", SlotKind::Param, 1));
    ir::Slot out = make_slot("out", SlotKind::Mutable, width);
    out.is_vector = width > 1;
    out.inout = inout;
    k.slots.push_back(out);
    x = load(Op::LoadPlane, 0);
    y = load(Op::LoadPlane, 1);
    p = load(Op::LoadParam, 2);
  }
  static ir::Slot make_slot(const std::string& n, SlotKind kind, int width) {
    ir::Slot s;
    s.name = n;
    s.kind = kind;
    s.width = width;
    return s;
  }
  int load(Op op, int slot, int comp = 0) {
    ir::Value v;
    v.op = op;
    v.type = Type::F;
    v.slot = slot;
    v.comp = comp;
    return k.add(v);
  }
  int f(double d) {
    ir::Value v;
    v.op = Op::Const;
    v.type = Type::F;
    v.imm = d;
    return k.add(v);
  }
  int b(bool c) {
    ir::Value v;
    v.op = Op::Const;
    v.type = Type::B;
    v.imm = c ? 1.0 : 0.0;
    return k.add(v);
  }
  int op(Op o, Type t, int a, int b_ = -1, int c = -1, int pred = -1, int64_t iimm = 0) {
    ir::Value v;
    v.op = o;
    v.type = t;
    v.args[0] = a;
    v.args[1] = b_;
    v.args[2] = c;
    v.pred = pred;
    v.iimm = iimm;
    return k.add(v);
  }
  int F(Op o, int a, int b_ = -1) { return op(o, Type::F, a, b_); }
  int B(Op o, int a, int b_ = -1) { return op(o, Type::B, a, b_); }
  void store(int comp, int value) {
    ir::Store s;
    s.slot = 3;
    s.comp = comp;
    s.value = value;
    k.stores.push_back(s);
  }
};

bool same_bits(double a, double b) {
  if (std::isnan(a) && std::isnan(b)) return true;
  return std::bit_cast<uint64_t>(a) == std::bit_cast<uint64_t>(b);
}

struct RunResult {
  std::vector<std::vector<double>> outs;
  std::vector<uint8_t> mask;
  uint32_t finished = 0;
  int64_t error[4] = {0, 0, 0, 0};
};

// Runs `k` on `n` samples whose inputs come from `fill` (slot, index) -> value.
template <class Fill>
RunResult run(const ir::Kernel& k, int64_t n, Fill fill, int64_t table_entries = 4) {
  ir::InterpBinding b = ir::make_binding(k, n, table_entries);
  for (size_t s = 0; s < k.slots.size(); ++s)
    for (size_t i = 0; i < b.slots[s].in.size(); ++i)
      b.slots[s].in[i] = fill(static_cast<int>(s), i);
  ir::interpret(k, b);
  RunResult r;
  for (const auto& s : b.slots) r.outs.push_back(s.out);
  r.mask = b.mask;
  r.finished = b.finished;
  for (int e = 0; e < 4; ++e) r.error[e] = b.error[e];
  return r;
}

// Expects bit-identical results (any NaN equals any NaN).
void expect_same(const RunResult& a, const RunResult& b, const std::string& what) {
  ASSERT_EQ(a.outs.size(), b.outs.size());
  for (size_t s = 0; s < a.outs.size(); ++s) {
    ASSERT_EQ(a.outs[s].size(), b.outs[s].size());
    for (size_t i = 0; i < a.outs[s].size(); ++i)
      EXPECT_TRUE(same_bits(a.outs[s][i], b.outs[s][i]))
          << what << ": slot " << s << " element " << i << ": " << a.outs[s][i] << " before, "
          << b.outs[s][i] << " after";
  }
  EXPECT_EQ(a.mask, b.mask) << what;
  EXPECT_EQ(a.finished, b.finished) << what;
  for (int e = 0; e < 4; ++e) EXPECT_EQ(a.error[e], b.error[e]) << what << ": error[" << e << "]";
}

int count_ops(const ir::Kernel& k, Op op) {
  int n = 0;
  for (const ir::Value& v : k.values) n += v.op == op;
  return n;
}

const double kSpecial[] = {0.0, -0.0, 1.0, -1.0, 2.5, -3.75, 1e-310, 1e300, kInf, -kInf, kNaN};

double special_or_random(std::mt19937_64& rng) {
  std::uniform_int_distribution<int> pick(0, 2 * static_cast<int>(std::size(kSpecial)) - 1);
  const int i = pick(rng);
  if (i < static_cast<int>(std::size(kSpecial))) return kSpecial[i];
  return std::uniform_real_distribution<double>(-4.0, 4.0)(rng);
}

// ---------------------------------------------------------------------------------------------
// Folding
// ---------------------------------------------------------------------------------------------

TEST(PassesFold, ConstantsFold) {
  KB kb;
  const int add = kb.F(Op::Add, kb.f(2.0), kb.f(3.0));
  const int sq = kb.F(Op::Sqrt, add);
  const int cmp = kb.B(Op::Lt, kb.f(1.0), sq);
  const int sel = kb.op(Op::Select, Type::F, cmp, kb.x, kb.y);
  kb.store(0, kb.F(Op::Mul, sel, kb.op(Op::PowI, Type::F, kb.f(3.0), -1, -1, -1, 3)));
  ir::verify(kb.k);
  passes::optimize(kb.k);
  ir::verify(kb.k);
  EXPECT_EQ(count_ops(kb.k, Op::Add), 0);
  EXPECT_EQ(count_ops(kb.k, Op::Sqrt), 0);
  EXPECT_EQ(count_ops(kb.k, Op::PowI), 0);
  EXPECT_EQ(count_ops(kb.k, Op::Select), 0);     // 1 < sqrt(5) folds, then the select
  EXPECT_EQ(count_ops(kb.k, Op::LoadPlane), 1);  // y is dead
  const ir::Value& st = kb.k.values.at(kb.k.stores.at(0).value);
  ASSERT_EQ(st.op, Op::Mul);
  EXPECT_EQ(kb.k.values[st.args[0]].op, Op::LoadPlane);
  EXPECT_EQ(kb.k.values[st.args[0]].slot, 0);
  EXPECT_EQ(kb.k.values[st.args[1]].op, Op::Const);
  EXPECT_EQ(kb.k.values[st.args[1]].imm, 27.0);
}

TEST(PassesFold, ExactIdentities) {
  KB kb(6);
  kb.store(0, kb.F(Op::Mul, kb.x, kb.f(1.0)));                 // x * 1
  kb.store(1, kb.F(Op::Mul, kb.f(1.0), kb.x));                 // 1 * x
  kb.store(2, kb.F(Op::Div, kb.x, kb.f(1.0)));                 // x / 1
  kb.store(3, kb.F(Op::Sub, kb.x, kb.f(0.0)));                 // x - 0
  kb.store(4, kb.F(Op::Neg, kb.F(Op::Neg, kb.x)));             // --x
  kb.store(5, kb.op(Op::PowI, Type::F, kb.x, -1, -1, -1, 1));  // x ** 1
  const RunResult before = run(kb.k, 11, [](int, size_t i) { return kSpecial[i]; });
  passes::optimize(kb.k);
  ir::verify(kb.k);
  for (int c = 0; c < 6; ++c) {
    const ir::Value& v = kb.k.values.at(kb.k.stores.at(c).value);
    EXPECT_EQ(v.op, Op::LoadPlane) << "store " << c << " is " << ir::op_name(v.op);
  }
  EXPECT_EQ(kb.k.values.size(), 1u) << ir::print(kb.k);
  expect_same(before, run(kb.k, 11, [](int, size_t i) { return kSpecial[i]; }), "identities");
}

TEST(PassesFold, SelectWithConstantCondition) {
  KB kb(3);
  kb.store(0, kb.op(Op::Select, Type::F, kb.b(true), kb.x, kb.y));
  kb.store(1, kb.op(Op::Select, Type::F, kb.b(false), kb.x, kb.y));
  const int c = kb.B(Op::Gt, kb.x, kb.y);
  kb.store(2, kb.op(Op::Select, Type::F, c, kb.p, kb.p));  // both choices equal
  passes::optimize(kb.k);
  ir::verify(kb.k);
  EXPECT_EQ(count_ops(kb.k, Op::Select), 0);
  EXPECT_EQ(count_ops(kb.k, Op::Gt), 0);
  const auto& st = kb.k.stores;
  EXPECT_EQ(kb.k.values[st[0].value].slot, 0);
  EXPECT_EQ(kb.k.values[st[1].value].slot, 1);
  EXPECT_EQ(kb.k.values[st[2].value].op, Op::LoadParam);
}

TEST(PassesFold, BoolIdentities) {
  KB kb(2);
  const int c = kb.B(Op::Lt, kb.x, kb.y);
  const int t = kb.b(true);
  const int f = kb.b(false);
  kb.store(0, kb.op(Op::Select, Type::F, kb.B(Op::And, t, c), kb.x, kb.y));  // true and c -> c
  kb.store(1, kb.op(Op::Select, Type::F, kb.B(Op::Or, c, f), kb.x, kb.p));   // c or false -> c
  kb.k.terminate = -1;
  passes::optimize(kb.k);
  ir::verify(kb.k);
  EXPECT_EQ(count_ops(kb.k, Op::And), 0);
  EXPECT_EQ(count_ops(kb.k, Op::Or), 0);
  EXPECT_EQ(count_ops(kb.k, Op::Lt), 1);
}

// Identities that hold for numbers but not for bits: never applied.
TEST(PassesFold, NeverFoldsWhatChangesBits) {
  KB kb(6);
  kb.store(0, kb.F(Op::Add, kb.x, kb.f(0.0)));   // -0 + 0 = +0
  kb.store(1, kb.F(Op::Add, kb.f(0.0), kb.x));   // 0 + -0 = +0
  kb.store(2, kb.F(Op::Sub, kb.x, kb.f(-0.0)));  // -0 - -0 = +0
  kb.store(3, kb.F(Op::Mul, kb.x, kb.f(0.0)));   // NaN * 0, -1 * 0
  kb.store(4, kb.F(Op::Mul, kb.x, kb.f(-1.0)));  // fine as -x, but not as x
  kb.store(5, kb.F(Op::Div, kb.x, kb.x));        // 0/0, inf/inf
  const auto fill = [](int, size_t i) { return kSpecial[i]; };
  const RunResult before = run(kb.k, 11, fill);
  passes::optimize(kb.k);
  ir::verify(kb.k);
  EXPECT_EQ(count_ops(kb.k, Op::Add), 2);
  EXPECT_EQ(count_ops(kb.k, Op::Sub), 1);
  EXPECT_EQ(count_ops(kb.k, Op::Mul), 2);
  EXPECT_EQ(count_ops(kb.k, Op::Div), 1);
  for (const ir::Store& s : kb.k.stores) EXPECT_NE(kb.k.values[s.value].op, Op::LoadPlane);
  expect_same(before, run(kb.k, 11, fill), "non-identities");
}

TEST(PassesFold, FoldedConstantsAreBitExact) {
  // Folding computes with the same operator meaning as the interpreter.
  const double xs[] = {-0.0, 0.0, -2.5, 3.0, 0.5, kInf, -kInf, kNaN};
  const Op unary[] = {Op::Neg,   Op::Sqrt,  Op::Exp,   Op::Log,   Op::Sin,   Op::Cos,
                      Op::Tan,   Op::Tanh,  Op::Abs,   Op::Floor, Op::Asin,  Op::Acos,
                      Op::Atan,  Op::Sinh,  Op::Cosh,  Op::Asinh, Op::Acosh, Op::Atanh,
                      Op::Erf,   Op::Erfc,  Op::Exp2,  Op::Expm1, Op::Log1p, Op::Log2,
                      Op::Log10, Op::Cbrt,  Op::Ceil,  Op::Rint,  Op::Trunc};
  const Op binary[] = {Op::Add,   Op::Sub,  Op::Mul,       Op::Div,      Op::Pow,
                       Op::Atan2, Op::Min,  Op::Max,       Op::Hypot,    Op::Fmod,
                       Op::Remainder, Op::Copysign, Op::Fdim};
  for (double a : xs) {
    KB kb(static_cast<int>(std::size(unary) + std::size(binary) * std::size(xs) + 3));
    int c = 0;
    for (Op o : unary) kb.store(c++, kb.F(o, kb.f(a)));
    for (Op o : binary)
      for (double b : xs) kb.store(c++, kb.F(o, kb.f(a), kb.f(b)));
    kb.store(c++, kb.op(Op::PowI, Type::F, kb.f(a), -1, -1, -1, 5));
    kb.store(c++, kb.op(Op::PowI, Type::F, kb.f(a), -1, -1, -1, -3));
    kb.store(c++, kb.op(Op::PowI, Type::F, kb.f(a), -1, -1, -1, 0));
    const auto fill = [](int, size_t) { return 0.0; };
    const RunResult before = run(kb.k, 1, fill);
    passes::optimize(kb.k);
    for (const ir::Store& s : kb.k.stores) EXPECT_EQ(kb.k.values[s.value].op, Op::Const);
    expect_same(before, run(kb.k, 1, fill), "fold of " + std::to_string(a));
  }
}

TEST(PassesFold, FoldedFmaAndPredicatesAreBitExact) {
  const double xs[] = {-0.0, 0.1, -2.5, 10.0, kInf, kNaN};
  KB kb(static_cast<int>(std::size(xs) * std::size(xs) * 2 + std::size(xs) * 3));
  int c = 0;
  for (double a : xs) {
    for (double b : xs) {
      kb.store(c++, kb.op(Op::Fma, Type::F, kb.f(a), kb.f(b), kb.f(-1.0)));
      kb.store(c++, kb.op(Op::Fma, Type::F, kb.f(a), kb.f(b), kb.f(-a * b)));
    }
    for (Op o : {Op::IsNan, Op::IsInf, Op::IsFinite})
      kb.store(c++, kb.op(Op::Select, Type::F, kb.B(o, kb.f(a)), kb.f(1.0), kb.f(0.0)));
  }
  const auto fill = [](int, size_t) { return 0.0; };
  const RunResult before = run(kb.k, 1, fill);
  passes::optimize(kb.k);
  for (const ir::Store& s : kb.k.stores) EXPECT_EQ(kb.k.values[s.value].op, Op::Const);
  expect_same(before, run(kb.k, 1, fill), "fold of fma and the predicates");
}

// Product bug: passes::eval_op(Sign) returns +0 for -0.0 while the interpreter (and jax.numpy)
// keep -0, so folding sign(-0.0) changes a result bit.
TEST(PassesFold, SignOfNegativeZeroKeepsItsSign) {
  KB kb(2);
  kb.store(0, kb.F(Op::Sign, kb.f(-0.0)));
  kb.store(1, kb.F(Op::Sign, kb.f(kNaN)));
  const auto fill = [](int, size_t) { return 0.0; };
  const RunResult before = run(kb.k, 1, fill);
  EXPECT_TRUE(std::signbit(before.outs[3][0]));  // the interpreter: sign(-0) = -0
  passes::optimize(kb.k);
  expect_same(before, run(kb.k, 1, fill), "sign(-0.0)");
}

// Product bug: folding ToIndex of a constant too large for int64 (or NaN) casts it straight
// to int64 (undefined behaviour; INT64_MIN on x86), while the interpreter makes it index -1.
// Reaches users as `w.at(1e30)`.
TEST(PassesFold, ToIndexOfHugeConstantMatchesInterpreter) {
  ir::Kernel k = lower_source(R"(def k(w: Table[Scalar], y: Mutable[Scalar]):
    y = w.at(1.0e30)
)",
                              {TableScalar("w"), MutScalar("y")});
  ir::InterpBinding b = ir::make_binding(k, 1, 2);
  ir::interpret(k, b);
  EXPECT_EQ(b.error[0], RAPTOR_ERR_TABLE_INDEX);
  EXPECT_EQ(b.error[2], -1) << "interp.hpp: a non-finite or huge value becomes index -1";
}

// ---------------------------------------------------------------------------------------------
// CSE and DCE
// ---------------------------------------------------------------------------------------------

TEST(PassesCse, MergesIdenticalValues) {
  KB kb(2);
  const int x2 = kb.load(Op::LoadPlane, 0);  // a second load of x
  const int a1 = kb.F(Op::Add, kb.x, kb.y);
  const int a2 = kb.F(Op::Add, x2, kb.y);
  kb.store(0, kb.F(Op::Mul, a1, kb.f(2.0)));
  kb.store(1, kb.F(Op::Mul, a2, kb.f(2.0)));
  passes::optimize(kb.k);
  ir::verify(kb.k);
  EXPECT_EQ(count_ops(kb.k, Op::LoadPlane), 2);
  EXPECT_EQ(count_ops(kb.k, Op::Add), 1);
  EXPECT_EQ(count_ops(kb.k, Op::Mul), 1);
  EXPECT_EQ(kb.k.stores[0].value, kb.k.stores[1].value);
}

TEST(PassesCse, KeepsValuesWithDifferentPredicates) {
  ir::Kernel k;
  k.name = "t";
  k.slots.push_back(KB::make_slot("x", SlotKind::Plane, 1));
  k.slots.push_back(KB::make_slot("w", SlotKind::Table, 1));
  k.slots.push_back(KB::make_slot("y", SlotKind::Mutable, 1));
  ir::Value x;
  x.op = Op::LoadPlane;
  x.slot = 0;
  const int xv = k.add(x);
  ir::Value zero;
  zero.op = Op::Const;
  const int z = k.add(zero);
  ir::Value cmp;
  cmp.op = Op::Gt;
  cmp.type = Type::B;
  cmp.args[0] = xv;
  cmp.args[1] = z;
  const int c = k.add(cmp);
  ir::Value ix;
  ix.op = Op::ToIndex;
  ix.type = Type::I;
  ix.args[0] = xv;
  const int i = k.add(ix);
  ir::Value lt;
  lt.op = Op::LoadTable;
  lt.args[0] = i;
  lt.slot = 1;
  lt.pred = c;
  const int l1 = k.add(lt);  // w.at(x) used when x > 0
  lt.pred = -1;
  const int l2 = k.add(lt);  // the same read, always used
  lt.pred = c;
  const int l3 = k.add(lt);  // identical to l1
  ir::Value add;
  add.op = Op::Add;
  add.args[0] = l1;
  add.args[1] = l2;
  const int a = k.add(add);
  add.args[0] = a;
  add.args[1] = l3;
  const int a2 = k.add(add);
  ir::Store st;
  st.slot = 2;
  st.value = a2;
  k.stores.push_back(st);
  ir::verify(k);

  passes::optimize(k);
  ir::verify(k);
  EXPECT_EQ(count_ops(k, Op::LoadTable), 2) << ir::print(k);
  int with_pred = 0;
  for (const ir::Value& v : k.values)
    if (v.op == Op::LoadTable && v.pred >= 0) {
      ++with_pred;
      EXPECT_EQ(k.values[v.pred].op, Op::Gt);  // DCE kept (and renumbered) the predicate
    }
  EXPECT_EQ(with_pred, 1);

  // The always-read load still reports an out-of-range index for x <= 0; the guarded one
  // does not, so merging them would change errors.
  ir::InterpBinding b = ir::make_binding(k, 1, 2);
  b.slots[0].in = {-1.0};
  b.slots[1].in = {10.0, 20.0};
  ir::interpret(k, b);
  EXPECT_EQ(b.error[0], RAPTOR_ERR_TABLE_INDEX);
}

TEST(PassesDce, RemovesDeadValuesAndKeepsPredicates) {
  ir::Kernel k;
  k.name = "t";
  k.slots.push_back(KB::make_slot("x", SlotKind::Plane, 1));
  k.slots.push_back(KB::make_slot("w", SlotKind::Table, 1));
  k.slots.push_back(KB::make_slot("s", SlotKind::ParamSum, 1));
  k.slots.push_back(KB::make_slot("y", SlotKind::Mutable, 1));
  ir::Value x;
  x.op = Op::LoadPlane;
  x.slot = 0;
  const int xv = k.add(x);
  ir::Value dead;
  dead.op = Op::Exp;
  dead.args[0] = xv;
  k.add(dead);  // dead
  ir::Value one;
  one.op = Op::Const;
  one.imm = 1.0;
  const int c1 = k.add(one);
  ir::Value cmp;
  cmp.op = Op::Lt;
  cmp.type = Type::B;
  cmp.args[0] = xv;
  cmp.args[1] = c1;
  const int c = k.add(cmp);  // used only as a predicate
  ir::Value cmp2 = cmp;
  cmp2.op = Op::Ge;
  const int c2 = k.add(cmp2);  // used only as a store's predicate
  dead.op = Op::Sin;
  k.add(dead);  // dead
  ir::Value ix;
  ix.op = Op::ToIndex;
  ix.type = Type::I;
  ix.args[0] = xv;
  const int i = k.add(ix);
  ir::Value lt;
  lt.op = Op::LoadTable;
  lt.args[0] = i;
  lt.slot = 1;
  lt.pred = c;
  const int l = k.add(lt);
  ir::Store st;
  st.slot = 3;
  st.value = l;
  k.stores.push_back(st);
  ir::Store sum;
  sum.slot = 2;
  sum.value = xv;
  sum.pred = c2;
  k.stores.push_back(sum);
  ir::verify(k);

  passes::dce(k);
  ir::verify(k);
  EXPECT_EQ(k.values.size(), 6u) << ir::print(k);
  EXPECT_EQ(count_ops(k, Op::Exp), 0);
  EXPECT_EQ(count_ops(k, Op::Sin), 0);
  const ir::Value& load = k.values.at(k.stores[0].value);
  ASSERT_EQ(load.op, Op::LoadTable);
  ASSERT_GE(load.pred, 0);
  EXPECT_EQ(k.values[load.pred].op, Op::Lt);
  ASSERT_GE(k.stores[1].pred, 0);
  EXPECT_EQ(k.values[k.stores[1].pred].op, Op::Ge);
}

TEST(PassesDce, KeepsTerminateCondition) {
  ir::Kernel k = lower_source(R"(def k(x: Mutable[Scalar], done: Terminated):
    unused = x * 3
    x = x + 1
    done = x > 2
)",
                              {MutScalar("x"), Terminated("done")});
  passes::optimize(k);
  ir::verify(k);
  ASSERT_GE(k.terminate, 0);
  EXPECT_EQ(k.values[k.terminate].op, Op::Gt);
  EXPECT_EQ(count_ops(k, Op::Mul), 0);
}

// ---------------------------------------------------------------------------------------------
// optimize() keeps results identical
// ---------------------------------------------------------------------------------------------

TEST(PassesOptimize, LoweredKernelsGiveIdenticalResults) {
  struct Case {
    std::string source;
    std::vector<ir::ParamSpec> params;
    int steps;
  };
  const std::vector<Case> cases = {
      {R"(def k(v: Vector[3], cd: Param, dt: Param, g: Param, v_next: Mutable[Vector[3]]):
    a = vec(0.0, 0.0, -g) - cd * norm(v) * v
    v_next = v + dt * a
)",
       {Vector("v", 3), Param("cd"), Param("dt"), Param("g"), MutVector("v_next", 3)},
       1},
      {R"(def k(x: Mutable[Scalar], v: Mutable[Scalar], t: Mutable[Scalar], c: Param, dt: Param, t_final: Param, terminated: Terminated):
    corr = 0.0 * x + 1 * v - v
    vn = v + dt * (-x - c * v + corr * v)
    x = x + dt * v
    v = vn
    t = t + dt
    terminated = t >= t_final
)",
       {MutScalar("x"), MutScalar("v"), MutScalar("t"), Param("c"), Param("dt"), Param("t_final"),
        Terminated("terminated")},
       3},
      {R"(def k(x: Scalar, w: Table[Scalar], y: Mutable[Scalar], z: Mutable[Vector[2]]):
    s = 0.0
    for i in range(3):
        if x * i > 1:
            s = s + w.at(x * i) * 1.0 - 0.0
        else:
            s = s - sign(x) + x / 1
    y = y * 1 + s if s > 0 else -(-s)
    z = vec(s + 0.0, maximum(s, x) ** 3)
)",
       {Scalar("x"), TableScalar("w"), MutScalar("y"), MutVector("z", 2)},
       2},
  };
  std::mt19937_64 rng(1234);
  for (const Case& c : cases) {
    SpecOptions opt;
    opt.steps = c.steps;
    const ir::Kernel before = lower_source(c.source, c.params, math_globals(), opt);
    ir::Kernel after = before;
    passes::optimize(after);
    ir::verify(after);
    EXPECT_LE(after.values.size(), before.values.size());
    for (int trial = 0; trial < 20; ++trial) {
      std::vector<double> data(256);
      for (double& d : data) d = special_or_random(rng);
      const auto fill = [&](int s, size_t i) { return data[(s * 37 + i) % data.size()]; };
      expect_same(run(before, 16, fill), run(after, 16, fill),
                  before.name + " trial " + std::to_string(trial));
    }
  }
}

// Random straight-line IR over every operator (Sign excepted, see
// SignOfNegativeZeroKeepsItsSign) with constants chosen to hit the edge cases of identities.
ir::Kernel random_kernel(std::mt19937_64& rng, int size) {
  ir::Kernel k;
  k.name = "rand";
  k.steps = 2;
  k.slots.push_back(KB::make_slot("x", SlotKind::Plane, 2));
  k.slots.back().is_vector = true;
  k.slots.push_back(KB::make_slot("p", SlotKind::Param, 1));
  ir::Slot out = KB::make_slot("out", SlotKind::Mutable, 3);
  out.is_vector = true;
  out.inout = true;
  k.slots.push_back(out);
  k.slots.push_back(KB::make_slot("done", SlotKind::Terminated, 1));
  std::vector<int> fs, bs;
  auto leaf = [&](Op op, int slot, int comp) {
    ir::Value v;
    v.op = op;
    v.slot = slot;
    v.comp = comp;
    fs.push_back(k.add(v));
  };
  leaf(Op::LoadPlane, 0, 0);
  leaf(Op::LoadPlane, 0, 1);
  leaf(Op::LoadParam, 1, 0);
  for (int c = 0; c < 3; ++c) leaf(Op::LoadState, 2, c);
  for (double d : {0.0, -0.0, 1.0, -1.0, 2.0, 0.5, kNaN, kInf}) {
    ir::Value v;
    v.op = Op::Const;
    v.imm = d;
    fs.push_back(k.add(v));
  }
  for (bool b : {false, true}) {
    ir::Value v;
    v.op = Op::Const;
    v.type = Type::B;
    v.imm = b;
    bs.push_back(k.add(v));
  }
  const Op unary[] = {Op::Neg, Op::Sqrt, Op::Exp,  Op::Log, Op::Sin,
                      Op::Cos, Op::Tan,  Op::Tanh, Op::Abs, Op::Floor};
  const Op binary[] = {Op::Add, Op::Sub, Op::Mul, Op::Div, Op::Pow, Op::Atan2, Op::Min, Op::Max};
  const Op cmps[] = {Op::Lt, Op::Le, Op::Gt, Op::Ge, Op::Eq, Op::Ne};
  auto pick = [&](const std::vector<int>& from) {
    // Prefer recent values so chains get deep.
    std::uniform_int_distribution<size_t> d(0, from.size() - 1);
    const size_t a = d(rng), b = d(rng);
    return from[std::max(a, b)];
  };
  std::uniform_int_distribution<int> kind(0, 9);
  for (int i = 0; i < size; ++i) {
    ir::Value v;
    const int kd = kind(rng);
    if (kd <= 2) {
      v.op = unary[std::uniform_int_distribution<size_t>(0, std::size(unary) - 1)(rng)];
      v.args[0] = pick(fs);
    } else if (kd <= 5) {
      v.op = binary[std::uniform_int_distribution<size_t>(0, std::size(binary) - 1)(rng)];
      v.args[0] = pick(fs);
      v.args[1] = pick(fs);
    } else if (kd == 6) {
      v.op = Op::PowI;
      v.args[0] = pick(fs);
      v.iimm = std::uniform_int_distribution<int>(-3, 4)(rng);
    } else if (kd == 7) {
      v.op = cmps[std::uniform_int_distribution<size_t>(0, std::size(cmps) - 1)(rng)];
      v.type = Type::B;
      v.args[0] = pick(fs);
      v.args[1] = pick(fs);
    } else if (kd == 8) {
      const int which = std::uniform_int_distribution<int>(0, 2)(rng);
      v.type = Type::B;
      v.op = which == 0 ? Op::Not : which == 1 ? Op::And : Op::Or;
      v.args[0] = pick(bs);
      if (v.op != Op::Not) v.args[1] = pick(bs);
    } else {
      v.op = Op::Select;
      v.args[0] = pick(bs);
      v.args[1] = pick(fs);
      v.args[2] = std::uniform_int_distribution<int>(0, 3)(rng) == 0 ? v.args[1] : pick(fs);
    }
    if (std::uniform_int_distribution<int>(0, 4)(rng) == 0) v.pred = pick(bs);
    const int id = k.add(v);
    (v.type == Type::B ? bs : fs).push_back(id);
  }
  for (int c = 0; c < 3; ++c) {
    ir::Store s;
    s.slot = 2;
    s.comp = c;
    s.value = pick(fs);
    k.stores.push_back(s);
  }
  k.terminate = pick(bs);
  return k;
}

TEST(PassesOptimize, RandomKernelsGiveIdenticalResults) {
  std::mt19937_64 rng(20240601);
  for (int trial = 0; trial < 300; ++trial) {
    const ir::Kernel before = random_kernel(rng, 40);
    ir::verify(before);
    ir::Kernel after = before;
    passes::optimize(after);
    ASSERT_NO_THROW(ir::verify(after)) << ir::print(before);
    std::vector<double> data(64);
    for (double& d : data) d = special_or_random(rng);
    const auto fill = [&](int s, size_t i) { return data[(s * 13 + i) % data.size()]; };
    const RunResult a = run(before, 8, fill);
    const RunResult b = run(after, 8, fill);
    expect_same(a, b, "random kernel " + std::to_string(trial));
    if (::testing::Test::HasFailure()) {
      ADD_FAILURE() << "before:\n" << ir::print(before) << "after:\n" << ir::print(after);
      break;
    }
  }
}

TEST(PassesOptimize, IsIdempotent) {
  std::mt19937_64 rng(7);
  for (int trial = 0; trial < 50; ++trial) {
    ir::Kernel k = random_kernel(rng, 30);
    passes::optimize(k);
    const std::string once = ir::canonical(k);
    passes::optimize(k);
    EXPECT_EQ(ir::canonical(k), once);
  }
}

}  // namespace
}  // namespace raptor::testing
