// Tests of the front end (ir/lower.hpp): kernels written as Python source are lowered to IR
// and run with the reference interpreter on small inputs, against values computed by hand
// (arithmetic and broadcasting, vectors, if/elif/else, conditional expressions, unrolled
// loops with break/continue, helpers, in-out detection, stepping with a mask, tables, the
// locals kernel.trace records), and every refusal of a
// construct outside the language is a raptor::SourceError at the exact line and column of
// the offending construct, with a message saying what is allowed instead.
#include <gtest/gtest.h>

#include <cmath>
#include <string>
#include <vector>

#include "common/error.hpp"
#include "ir/interp.hpp"
#include "ir/ir.hpp"
#include "ir/lower.hpp"
#include "runtime/abi.h"
#include "test_util_spec.hpp"

namespace raptor::testing {
namespace {

using ir::Op;
using ir::SlotKind;
// Whether `text` contains `part` (gtest only: no gmock matchers).
::testing::AssertionResult Contains(const std::string& text, const std::string& part) {
  if (text.find(part) != std::string::npos) return ::testing::AssertionSuccess();
  return ::testing::AssertionFailure() << "'" << text << "' does not contain '" << part << "'";
}

int count_ops(const ir::Kernel& k, Op op) {
  int n = 0;
  for (const ir::Value& v : k.values) n += v.op == op;
  return n;
}

const ir::Slot& slot(const ir::Kernel& k, const std::string& name) {
  const int s = k.find_slot(name);
  EXPECT_GE(s, 0) << name;
  return k.slots.at(s);
}

// ---------------------------------------------------------------------------------------------
// Meaning: lowered kernels run by the interpreter
// ---------------------------------------------------------------------------------------------

TEST(LowerRun, ArithmeticAndBroadcasting) {
  const ir::Kernel k = lower_source(
      R"(def k(x: Scalar, v: Vector[3], a: Param, y: Mutable[Scalar], w: Mutable[Vector[3]], u: Mutable[Vector[3]]):
    y = (x * a + 2) / 4 - x ** 2 + x // 2 + x % 3
    w = v * x + a - 1
    u = 2 ** 3 - 1 / v + -x
)",
      {Scalar("x"), Vector("v", 3), Param("a"), MutScalar("y"), MutVector("w", 3),
       MutVector("u", 3)});
  EXPECT_EQ(k.name, "k");
  EXPECT_FALSE(slot(k, "y").inout);
  EXPECT_FALSE(slot(k, "w").inout);
  EXPECT_EQ(count_ops(k, Op::PowI), 1);  // x ** 2 with a literal integer exponent
  ir::InterpBinding b = ir::make_binding(k, 2);
  set_in(k, b, "x", {7.5, -7.5});
  set_in(k, b, "v", {1, 0, 2, -1, 3, 0.5});  // layout (3, N)
  set_in(k, b, "a", {2.0});
  ir::interpret(k, b);
  // (15 + 2) / 4 - 56.25 + floor(3.75) + (7.5 - floor(2.5) * 3)
  EXPECT_EQ(out_of(k, b, "y")[0], 4.25 - 56.25 + 3 + 1.5);
  // (-15 + 2) / 4 - 56.25 + floor(-3.75) + (-7.5 - floor(-2.5) * 3): Python's // and %
  EXPECT_EQ(out_of(k, b, "y")[1], -3.25 - 56.25 - 4 + 1.5);
  EXPECT_EQ(out_of(k, b, "w"), (std::vector<double>{8.5, 1, 16, 8.5, 23.5, -2.75}));
  // 8 - 1 / v - x
  EXPECT_EQ(out_of(k, b, "u"),
            (std::vector<double>{8 - 1.0 - 7.5, 8 - 1.0 / 0.0 + 7.5, 8 - 0.5 - 7.5, 8 + 1.0 + 7.5,
                                 8 - 1.0 / 3.0 - 7.5, 8 - 2.0 + 7.5}));
}

TEST(LowerRun, GlobalsNumbersAndMathModule) {
  // As python/hawk/source.py resolves `import hawk` and `import math`.
  Globals g = {{"G", number(9.81)},
               {"K", integer(3)},
               {"math", module("math")},
               {"hawk", module("hawk")},
               {"FLAG", boolean(true)}};
  const ir::Kernel k = lower_source(R"(def k(x: Scalar, y: Mutable[Scalar]):
    z = 0.0
    for i in range(K):
        z = z + G
    if FLAG:
        z = z + math.sqrt(x) + hawk.math.abs(-x)
    y = z
)",
                                    {Scalar("x"), MutScalar("y")}, g);
  EXPECT_EQ(count_ops(k, Op::Select), 0);  // `if FLAG` is decided when the kernel is defined
  ir::InterpBinding b = ir::make_binding(k, 1);
  set_in(k, b, "x", {4.0});
  ir::interpret(k, b);
  EXPECT_EQ(out_of(k, b, "y")[0], ((0.0 + 9.81) + 9.81) + 9.81 + 2.0 + 4.0);
}

// Product bug: a module global is matched by the *variable's* name, not by the module the
// Python side resolved it to (Symbol::name), so an alias of hawk.math (`import hawk.math as
// hm`, resolved to Module "hawk.math") is refused although spec.hpp documents aliases.
TEST(LowerRun, HawkMathModuleAlias) {
  const Globals g = {{"hm", module("hawk.math")}, {"m", module("math")}};
  const ir::Kernel k = lower_source(R"(def k(x: Scalar, y: Mutable[Scalar]):
    y = hm.sqrt(x) + m.floor(x)
)",
                                    {Scalar("x"), MutScalar("y")}, g);
  ir::InterpBinding b = ir::make_binding(k, 1);
  set_in(k, b, "x", {6.25});
  ir::interpret(k, b);
  EXPECT_EQ(out_of(k, b, "y")[0], 2.5 + 6.0);
}

TEST(LowerRun, Vectors) {
  const ir::Kernel k = lower_source(
      R"(def k(a: Vector[3], b: Vector[3], out: Mutable[Vector[3]], s: Mutable[Scalar]):
    c = cross(a, b)
    n = normalize(c)
    u = vec(norm(a), dot(a, b), n[2])
    u[0] = u[0] + c[-1]
    out = u
    s = a[1] + n[0]
)",
      {Vector("a", 3), Vector("b", 3), MutVector("out", 3), MutScalar("s")});
  ir::InterpBinding b = ir::make_binding(k, 1);
  set_in(k, b, "a", {1, 2, 2});
  set_in(k, b, "b", {0, 1, 3});
  ir::interpret(k, b);
  // cross((1,2,2), (0,1,3)) = (2*3 - 2*1, 2*0 - 1*3, 1*1 - 2*0) = (4, -3, 1); |c|^2 = 26
  const double len = std::sqrt(26.0);
  EXPECT_EQ(out_of(k, b, "out"), (std::vector<double>{3.0 + 1.0, 8.0, 1.0 / len}));
  EXPECT_EQ(out_of(k, b, "s")[0], 2.0 + 4.0 / len);
}

TEST(LowerRun, VectorComponentWritesAndTupleUnpacking) {
  const ir::Kernel k =
      lower_source(R"(def k(v: Vector[2], w: Mutable[Vector[3]], y: Mutable[Scalar]):
    w[1] = v[0] * 10
    p, q = v
    r, t = q, p
    y = r - t
)",
                   {Vector("v", 2), MutVector("w", 3), MutScalar("y")});
  // w[0] and w[2] keep their old values: w is read before it is (fully) written.
  EXPECT_TRUE(slot(k, "w").inout);
  EXPECT_FALSE(slot(k, "y").inout);
  ir::InterpBinding b = ir::make_binding(k, 2);
  set_in(k, b, "v", {1, 2, 5, 7});
  set_in(k, b, "w", {-1, -2, -3, -4, -5, -6});
  ir::interpret(k, b);
  EXPECT_EQ(out_of(k, b, "w"), (std::vector<double>{-1, -2, 10, 20, -5, -6}));
  EXPECT_EQ(out_of(k, b, "y"), (std::vector<double>{5 - 1, 7 - 2}));
}

TEST(LowerRun, IfElifElseMergesIntoSelects) {
  const ir::Kernel k = lower_source(R"(def k(x: Scalar, y: Mutable[Scalar], v: Mutable[Vector[2]]):
    s = vec(0.0, 0.0)
    if x < 0:
        r = -x
        s = vec(1.0, x)
    elif x < 1:
        r = x * 10
    else:
        r = x + 100
        s[1] = 7.0
    y = r
    v = s
)",
                                    {Scalar("x"), MutScalar("y"), MutVector("v", 2)});
  EXPECT_GT(count_ops(k, Op::Select), 0);
  EXPECT_FALSE(slot(k, "y").inout);
  ir::InterpBinding b = ir::make_binding(k, 3);
  set_in(k, b, "x", {-2.0, 0.5, 3.0});
  ir::interpret(k, b);
  EXPECT_EQ(out_of(k, b, "y"), (std::vector<double>{2.0, 5.0, 103.0}));
  EXPECT_EQ(out_of(k, b, "v"), (std::vector<double>{1.0, 0.0, 0.0, -2.0, 0.0, 7.0}));
}

TEST(LowerRun, NestedIfUsesCombinedPredicates) {
  const ir::Kernel k = lower_source(R"(def k(x: Scalar, t: Table[Scalar], y: Mutable[Scalar]):
    y = 0.0
    if x >= 0:
        if x < 2:
            y = t.at(x)
)",
                                    {Scalar("x"), TableScalar("t"), MutScalar("y")});
  // The table read is used only when both conditions hold: its predicate is their `and`.
  int load = -1;
  for (size_t i = 0; i < k.values.size(); ++i)
    if (k.values[i].op == Op::LoadTable) load = static_cast<int>(i);
  ASSERT_GE(load, 0);
  ASSERT_GE(k.values[load].pred, 0);
  EXPECT_EQ(k.values[k.values[load].pred].op, Op::And);
  ir::InterpBinding b = ir::make_binding(k, 4, 2);
  set_in(k, b, "x", {-5.0, 0.5, 1.5, 9.0});
  set_in(k, b, "t", {10.0, 20.0});
  ir::interpret(k, b);
  EXPECT_EQ(out_of(k, b, "y"), (std::vector<double>{0.0, 10.0, 20.0, 0.0}));
  EXPECT_EQ(b.error[0], RAPTOR_OK);  // out-of-range indices only under false predicates
}

TEST(LowerRun, ConditionalExpressionsAndBoolOps) {
  const ir::Kernel k =
      lower_source(R"(def k(x: Scalar, y: Mutable[Scalar], z: Mutable[Scalar], w: Mutable[Scalar]):
    y = x * 2 if x > 1 else x - 1
    z = where(0 < x < 2 or not x != 5, 1.0, -1.0)
    w = clamp(x, 0.0, 1.0) + minimum(x, 3) + maximum(x, -1)
)",
                   {Scalar("x"), MutScalar("y"), MutScalar("z"), MutScalar("w")});
  ir::InterpBinding b = ir::make_binding(k, 4);
  set_in(k, b, "x", {-2.0, 1.0, 5.0, 3.0});
  ir::interpret(k, b);
  EXPECT_EQ(out_of(k, b, "y"), (std::vector<double>{-3.0, 0.0, 10.0, 6.0}));
  EXPECT_EQ(out_of(k, b, "z"), (std::vector<double>{-1.0, 1.0, 1.0, -1.0}));
  EXPECT_EQ(out_of(k, b, "w"), (std::vector<double>{0.0 - 2.0 - 1.0, 1.0 + 1.0 + 1.0,
                                                    1.0 + 3.0 + 5.0, 1.0 + 3.0 + 3.0}));
}

TEST(LowerRun, ForRangeIsUnrolled) {
  const ir::Kernel k =
      lower_source(R"(def k(x: Scalar, v: Vector[3], y: Mutable[Scalar], w: Mutable[Vector[3]]):
    acc = 0.0
    for i in range(4):
        acc = acc + x * i
    for j in range(10, 4, -3):
        acc = acc + j
    for i in range(1, 3):
        w[i] = v[i - 1] * i
    w[0] = v[2]
    y = acc
)",
                   {Scalar("x"), Vector("v", 3), MutScalar("y"), MutVector("w", 3)});
  EXPECT_EQ(count_ops(k, Op::Select), 0);
  ir::InterpBinding b = ir::make_binding(k, 1);
  set_in(k, b, "x", {2.0});
  set_in(k, b, "v", {1.0, 2.0, 3.0});
  ir::interpret(k, b);
  // 2 * (0 + 1 + 2 + 3) + 10 + 7
  EXPECT_EQ(out_of(k, b, "y")[0], 29.0);
  EXPECT_EQ(out_of(k, b, "w"), (std::vector<double>{3.0, 1.0, 4.0}));
}

// break/continue (lower_loop.cpp): a liveness predicate per loop, assignments guarded by it.
TEST(LowerLoopExits, BreakKeepsTheValuesOfTheIterationItLeftAt) {
  const ir::Kernel k = lower_source(R"(def k(x: Scalar, y: Mutable[Scalar], n: Mutable[Scalar]):
    y = x
    n = 0.0
    for i in range(10):
        y = y * 2.0
        n = n + 1.0
        if y > 20.0:
            break
)",
                                    {Scalar("x"), MutScalar("y"), MutScalar("n")});
  EXPECT_GT(count_ops(k, Op::Select), 0);
  ir::InterpBinding b = ir::make_binding(k, 4);
  set_in(k, b, "x", {1.0, 3.0, 25.0, 0.001});
  ir::interpret(k, b);
  // 1 -> 32 after 5; 3 -> 24 after 3; 25 -> 50 after 1; 0.001 -> 1.024 after all 10
  EXPECT_EQ(out_of(k, b, "y"), (std::vector<double>{32.0, 24.0, 50.0, 1.024}));
  EXPECT_EQ(out_of(k, b, "n"), (std::vector<double>{5.0, 3.0, 1.0, 10.0}));
}

TEST(LowerLoopExits, ContinueSkipsTheRestOfTheIterationOnly) {
  const ir::Kernel k = lower_source(R"(def k(x: Scalar, y: Mutable[Scalar]):
    y = 0.0
    for i in range(6):
        if x * i > 4.0:
            continue
        y = y + i
)",
                                    {Scalar("x"), MutScalar("y")});
  ir::InterpBinding b = ir::make_binding(k, 3);
  set_in(k, b, "x", {0.5, 1.0, 2.0});
  ir::interpret(k, b);
  // x=0.5: 0..5 all (2.5 <= 4); x=1: 0..4; x=2: 0..2
  EXPECT_EQ(out_of(k, b, "y"), (std::vector<double>{15.0, 10.0, 3.0}));
}

TEST(LowerLoopExits, ValuesAfterAnExitCarryTheLivenessInTheirPredicate) {
  // A table read after a `break` is not bounds-checked for a sample that left the loop.
  const ir::Kernel k = lower_source(R"(def k(w: Table[Scalar], x: Scalar, y: Mutable[Scalar]):
    y = 0.0
    for i in range(3):
        if x + i >= 2.0:
            break
        y = y + w.at(x + i)
)",
                                    {TableScalar("w"), Scalar("x"), MutScalar("y")});
  ir::InterpBinding b = ir::make_binding(k, 2, 2);
  set_in(k, b, "w", {10.0, 20.0});
  set_in(k, b, "x", {0.0, 1.0});
  ir::interpret(k, b);
  EXPECT_EQ(b.error[0], RAPTOR_OK);
  EXPECT_EQ(out_of(k, b, "y"), (std::vector<double>{30.0, 20.0}));
}

TEST(LowerLoopExits, UnconditionalBreakStopsUnrolling) {
  const ir::Kernel k = lower_source(R"(def k(x: Scalar, y: Mutable[Scalar]):
    y = x
    for i in range(100000):
        y = y + 1.0
        break
)",
                                    {Scalar("x"), MutScalar("y")});
  EXPECT_EQ(count_ops(k, Op::Add), 1);
  EXPECT_EQ(count_ops(k, Op::Select), 0);
}

// Loops longer than a kernel unrolls are one loop region (Op::LoopBegin .. LoopResult).
TEST(LowerRealLoops, OneRegionWhoseInterpreterRunMatchesTheLoop) {
  const ir::Kernel k = lower_source(R"(def k(x: Scalar, y: Mutable[Scalar], n: Mutable[Scalar]):
    s = x
    c = 0.0
    for i in range(100000):
        if i % 2 == 1:
            continue
        s = s * 0.5 + 1.0
        c = c + 1.0
        if s > 1.9999:
            break
    y = s
    n = c
)",
                                    {Scalar("x"), MutScalar("y"), MutScalar("n")});
  ir::verify(k);
  EXPECT_EQ(count_ops(k, Op::LoopBegin), 1);
  EXPECT_EQ(count_ops(k, Op::LoopEnd), 1);
  EXPECT_LT(k.values.size(), 60u);
  ir::InterpBinding b = ir::make_binding(k, 3, 0);
  set_in(k, b, "x", {0.0, 1.9, 5.0});
  ir::interpret(k, b);
  std::vector<double> ys, ns;
  for (const double x0 : {0.0, 1.9, 5.0}) {
    double s = x0, c = 0;
    for (int64_t i = 0; i < 100000; ++i) {
      if (i % 2 == 1) continue;
      s = s * 0.5 + 1.0;
      c = c + 1.0;
      if (s > 1.9999) break;
    }
    ys.push_back(s);
    ns.push_back(c);
  }
  EXPECT_EQ(out_of(k, b, "y"), ys);
  EXPECT_EQ(out_of(k, b, "n"), ns);
}

TEST(LowerRealLoops, PassesKeepValuesInsideTheirLoop) {
  // x * 2.0 inside the loop and after it: CSE must not let the second read the first.
  ir::Kernel k = lower_source(R"(def k(x: Scalar, y: Mutable[Scalar], z: Mutable[Scalar]):
    s = x
    for i in range(5000):
        s = s + x * 2.0
    y = s
    z = x * 2.0
)",
                              {Scalar("x"), MutScalar("y"), MutScalar("z")});
  passes::optimize(k);
  EXPECT_NO_THROW(ir::verify(k));
  EXPECT_EQ(count_ops(k, Op::LoopBegin), 1);
  ir::InterpBinding b = ir::make_binding(k, 1, 0);
  set_in(k, b, "x", {0.25});
  ir::interpret(k, b);
  EXPECT_EQ(out_of(k, b, "y"), (std::vector<double>{0.25 + 5000 * 0.5}));
  EXPECT_EQ(out_of(k, b, "z"), (std::vector<double>{0.5}));
}

TEST(LowerRealLoops, TheVerifierRefusesALoopValueUsedAfterTheLoop) {
  ir::Kernel k = lower_source(R"(def k(x: Scalar, y: Mutable[Scalar]):
    s = x
    for i in range(5000):
        s = s * 0.5
    y = s
)",
                              {Scalar("x"), MutScalar("y")});
  int inside = -1;
  for (size_t i = 0; i < k.values.size(); ++i)
    if (k.values[i].op == Op::Mul) inside = static_cast<int>(i);
  ASSERT_GE(inside, 0);
  k.stores[0].value = inside;  // y = the body's product, outside the loop
  try {
    ir::verify(k);
    FAIL() << "verify accepted a loop value stored after the loop";
  } catch (const std::logic_error& e) {
    EXPECT_NE(std::string(e.what()).find("defined inside a loop"), std::string::npos) << e.what();
  }
}

// kernel.trace's half in C++: lower_traced keeps the locals' end-of-step values, and the
// interpreter records them per step (NaN for the steps a sample did not run).
TEST(LowerTrace, LocalsPerStepAndNaNAfterTheSampleFinished) {
  SpecOptions opt;
  opt.steps = 3;
  const ir::TracedKernel t =
      ir::lower_traced(make_spec(R"(def k(terminated: Terminated, x: Mutable[Scalar]):
    d = x * 0.5
    x = x - d
    big = x > 1.0
    terminated = x < 1.0
)",
                                 {Terminated("terminated"), MutScalar("x")}, math_globals(), opt));
  ASSERT_EQ(t.locals.size(), 2u);  // by name: big, d
  EXPECT_EQ(t.locals[0].name, "big");
  EXPECT_TRUE(t.locals[0].is_bool);
  EXPECT_EQ(t.locals[1].name, "d");
  ir::InterpBinding b = ir::make_binding(t.kernel, 2);
  set_in(t.kernel, b, "x", {8.0, 1.5});
  for (const ir::TracedLocal& l : t.locals) b.trace_values.push_back(l.values[0]);
  ir::interpret(t.kernel, b);
  ASSERT_EQ(b.trace_out.size(), 2u * 3u * 2u);  // (sample, step, value)
  // sample 0: d = 4, 2, 1; x = 4, 2, 1; big = 1, 1, 0
  EXPECT_EQ(b.trace_out[0], 1.0);
  EXPECT_EQ(b.trace_out[1], 4.0);
  EXPECT_EQ(b.trace_out[3], 2.0);
  EXPECT_EQ(b.trace_out[4], 0.0);
  EXPECT_EQ(b.trace_out[5], 1.0);
  // sample 1: d = 0.75, x = 0.75 < 1: finished after its first step
  EXPECT_EQ(b.trace_out[6], 0.0);
  EXPECT_EQ(b.trace_out[7], 0.75);
  for (int j = 8; j < 12; ++j) EXPECT_TRUE(std::isnan(b.trace_out[j])) << j;
}

TEST(LowerRun, HelpersAreInlinedAndCallHelpers) {
  SpecOptions opt;
  opt.helpers.push_back(function_source(R"(@hawk.func
def sq(a):
    return a * a
)",
                                        math_globals(), 30, "helpers.py"));
  opt.helpers.push_back(function_source(R"(@hawk.func
def hyp(a, b):
    s = sq(a) + sq(b)
    return sqrt(s)
)",
                                        with_math({{"sq", helper(0)}}), 40, "helpers.py"));
  opt.helpers.push_back(function_source(R"(def scale(v, f):
    return v * f, norm(v)
)",
                                        math_globals(), 50, "helpers.py"));
  const ir::Kernel k = lower_source(
      R"(def k(x: Scalar, y: Scalar, v: Vector[2], h: Mutable[Scalar], w: Mutable[Vector[2]]):
    h = hyp(x, y) + sq(2.0)
    w, n = scale(v, h)
    w = w + n
)",
      {Scalar("x"), Scalar("y"), Vector("v", 2), MutScalar("h"), MutVector("w", 2)},
      with_math({{"hyp", helper(1)}, {"sq", helper(0)}, {"scale", helper(2)}}), opt);
  // Inlined: helpers' source lines are registered for comments.
  EXPECT_EQ(k.files, (std::vector<std::string>{"test.py", "helpers.py"}));
  EXPECT_EQ(k.source_text.at({1, 42}), "    s = sq(a) + sq(b)");
  ir::InterpBinding b = ir::make_binding(k, 2);
  set_in(k, b, "x", {3.0, 5.0});
  set_in(k, b, "y", {4.0, 12.0});
  set_in(k, b, "v", {3.0, 1.0, 4.0, 0.0});
  ir::interpret(k, b);
  EXPECT_EQ(out_of(k, b, "h"), (std::vector<double>{9.0, 17.0}));
  // w = v * h + |v|
  EXPECT_EQ(out_of(k, b, "w"),
            (std::vector<double>{27.0 + 5.0, 17.0 + 1.0, 36.0 + 5.0, 0.0 + 1.0}));
}

// ---------------------------------------------------------------------------------------------
// In-out detection
// ---------------------------------------------------------------------------------------------

TEST(LowerInout, PureOutputIsNotInout) {
  const ir::Kernel k = lower_source(R"(def k(x: Scalar, y: Mutable[Scalar]):
    y = x + 1
    y = y * 2
)",
                                    {Scalar("x"), MutScalar("y")});
  EXPECT_FALSE(slot(k, "y").inout);
  EXPECT_EQ(count_ops(k, Op::LoadState), 0);
  ir::InterpBinding b = ir::make_binding(k, 1);
  set_in(k, b, "x", {3.0});
  ir::interpret(k, b);
  EXPECT_EQ(out_of(k, b, "y")[0], 8.0);
}

TEST(LowerInout, ReadBeforeWrittenIsInout) {
  const ir::Kernel k = lower_source(R"(def k(x: Scalar, y: Mutable[Scalar]):
    y = y + x
)",
                                    {Scalar("x"), MutScalar("y")});
  EXPECT_TRUE(slot(k, "y").inout);
  EXPECT_EQ(count_ops(k, Op::LoadState), 1);
  ir::InterpBinding b = ir::make_binding(k, 2);
  set_in(k, b, "x", {3.0, 4.0});
  set_in(k, b, "y", {10.0, 20.0});
  ir::interpret(k, b);
  EXPECT_EQ(out_of(k, b, "y"), (std::vector<double>{13.0, 24.0}));
}

TEST(LowerInout, AssignedInOneBranchOnlyIsInout) {
  const ir::Kernel k = lower_source(R"(def k(x: Scalar, y: Mutable[Scalar], z: Mutable[Scalar]):
    z = 0.0
    if x > 0:
        y = 1.0
        z = 2.0
)",
                                    {Scalar("x"), MutScalar("y"), MutScalar("z")});
  EXPECT_TRUE(slot(k, "y").inout);
  EXPECT_FALSE(slot(k, "z").inout);  // assigned before the `if`
  ir::InterpBinding b = ir::make_binding(k, 2);
  set_in(k, b, "x", {1.0, -1.0});
  set_in(k, b, "y", {5.0, 6.0});
  ir::interpret(k, b);
  EXPECT_EQ(out_of(k, b, "y"), (std::vector<double>{1.0, 6.0}));
  EXPECT_EQ(out_of(k, b, "z"), (std::vector<double>{2.0, 0.0}));
}

// Product bug: assigning a component v[i] of a Mutable vector materializes (loads) all of
// its components first, which marks the slot in-out even when every component is written
// before any is read: w is a pure output here, but slot.inout comes out true.
TEST(LowerInout, ComponentWritesOnlyAreNotInout) {
  const ir::Kernel k = lower_source(R"(def k(v: Vector[2], w: Mutable[Vector[2]]):
    w[0] = v[1]
    w[1] = v[0]
)",
                                    {Vector("v", 2), MutVector("w", 2)});
  EXPECT_FALSE(slot(k, "w").inout);
  ir::InterpBinding b = ir::make_binding(k, 1);
  set_in(k, b, "v", {1.0, 2.0});
  ir::interpret(k, b);
  EXPECT_EQ(out_of(k, b, "w"), (std::vector<double>{2.0, 1.0}));
}

TEST(LowerInout, AugmentedAssignmentReads) {
  const ir::Kernel k = lower_source(R"(def k(x: Scalar, y: Mutable[Vector[2]]):
    y += x
)",
                                    {Scalar("x"), MutVector("y", 2)});
  EXPECT_TRUE(slot(k, "y").inout);
}

// ---------------------------------------------------------------------------------------------
// Stepping with a mask, tables
// ---------------------------------------------------------------------------------------------

TEST(LowerRun, StepsWithTerminatedMask) {
  SpecOptions opt;
  opt.steps = 3;
  const ir::Kernel k = lower_source(
      R"(def k(dt: Param, x: Mutable[Scalar], n: Mutable[Scalar], done: Terminated):
    x = x + dt
    n = n + 1
    done = x >= 1.0
)",
      {Param("dt"), MutScalar("x"), MutScalar("n"), Terminated("done")}, math_globals(), opt);
  EXPECT_EQ(k.steps, 3);
  EXPECT_TRUE(k.has_mask());
  ASSERT_GE(k.terminate, 0);
  EXPECT_EQ(k.values[k.terminate].op, Op::Ge);
  EXPECT_TRUE(slot(k, "x").inout);
  EXPECT_TRUE(slot(k, "n").inout);
  ir::InterpBinding b = ir::make_binding(k, 4);
  set_in(k, b, "dt", {0.25});
  set_in(k, b, "x", {0.0, 0.75, 0.5, 2.0});
  set_in(k, b, "n", {0.0, 0.0, 0.0, 7.0});
  b.mask = {0, 0, 0, 1};
  ir::interpret(k, b);
  EXPECT_EQ(out_of(k, b, "x"), (std::vector<double>{0.75, 1.0, 1.0, 2.0}));
  EXPECT_EQ(out_of(k, b, "n"), (std::vector<double>{3.0, 1.0, 2.0, 7.0}));
  EXPECT_EQ(b.mask, (std::vector<uint8_t>{0, 1, 1, 1}));
  EXPECT_EQ(b.finished, 2u);
}

TEST(LowerRun, MaskNeverSetHasNoTerminate) {
  const ir::Kernel k = lower_source(R"(def k(x: Mutable[Scalar], done: Terminated):
    x = x + 1
)",
                                    {MutScalar("x"), Terminated("done")});
  EXPECT_TRUE(k.has_mask());
  EXPECT_EQ(k.terminate, -1);
}

TEST(LowerRun, Tables) {
  const ir::Kernel k = lower_source(
      R"(def k(i: Scalar, w: Table[Scalar], p: Table[Vector[2]], y: Mutable[Scalar], z: Mutable[Vector[2]]):
    y = w.at(i) + w.at(0)
    z = p.at(i) * 2
)",
      {Scalar("i"), TableScalar("w"), TableVector("p", 2), MutScalar("y"), MutVector("z", 2)});
  EXPECT_GE(count_ops(k, Op::ToIndex), 1);
  ir::InterpBinding b = ir::make_binding(k, 2, 3);
  set_in(k, b, "i", {1.7, 2.0});
  set_in(k, b, "w", {10.0, 20.0, 30.0});
  set_in(k, b, "p", {1, 2, 3, 4, 5, 6});  // layout (M, width)
  ir::interpret(k, b);
  EXPECT_EQ(b.error[0], RAPTOR_OK);
  EXPECT_EQ(out_of(k, b, "y"), (std::vector<double>{30.0, 40.0}));
  EXPECT_EQ(out_of(k, b, "z"), (std::vector<double>{6.0, 10.0, 8.0, 12.0}));

  // An index past the end is an error naming the table and the sample.
  ir::InterpBinding bad = ir::make_binding(k, 2, 3);
  set_in(k, bad, "i", {0.0, 3.0});
  ir::interpret(k, bad);
  EXPECT_EQ(bad.error[0], RAPTOR_ERR_TABLE_INDEX);
  EXPECT_EQ(bad.error[2], 3);
  EXPECT_EQ(bad.error[3], 1);
}

TEST(LowerRun, DocstringIsSkippedAndSourceLinesKept) {
  SpecOptions opt;
  opt.first_line = 100;
  opt.file = "/home/u/drag.py";
  const ir::Kernel k = lower_source(R"(@hawk.kernel
def k(x: Scalar, y: Mutable[Scalar]):
    """Doubles x."""
    y = x * 2
)",
                                    {Scalar("x"), MutScalar("y")}, math_globals(), opt);
  EXPECT_EQ(k.file, "/home/u/drag.py");
  EXPECT_EQ(k.source_text.at({0, 103}), "    y = x * 2");
  for (const ir::Value& v : k.values)
    if (v.op == Op::Mul) {
      EXPECT_EQ(v.loc.line, 103);
      EXPECT_EQ(v.loc.col, 5);
      EXPECT_EQ(v.name, "y");
    }
}

// ---------------------------------------------------------------------------------------------
// Refusals: SourceError at the offending construct
// ---------------------------------------------------------------------------------------------

struct Refusal {
  int line = 0;
  int col = 0;
  std::string file;
  std::string message;
};

// Lowers `source` (starting at file line 20 of "user.py") and returns the SourceError.
template <class Fn>
Refusal refusal_of(Fn&& lower_it) {
  try {
    lower_it();
  } catch (const SourceError& e) {
    EXPECT_EQ(e.kernel, "k");
    EXPECT_TRUE(Contains(e.what(), "hawk: kernel 'k'"));
    return {e.line, e.col, e.file, e.message};
  } catch (const std::exception& e) {
    ADD_FAILURE() << "expected raptor::SourceError, got: " << e.what();
    return {};
  }
  ADD_FAILURE() << "expected raptor::SourceError, nothing was thrown";
  return {};
}

Refusal refuse(const std::string& body, std::vector<ir::ParamSpec> params = {},
               Globals globals = math_globals()) {
  if (params.empty())
    params = {Scalar("x"), Vector("v", 3), Param("a"), MutScalar("y"), MutVector("w", 3)};
  // line 20: decorator, 21: def, 22...: body
  const std::string source =
      "@hawk.kernel\ndef k(x: Scalar, v: Vector[3], a: Param, y: Mutable[Scalar], "
      "w: Mutable[Vector[3]]):\n" +
      body;
  SpecOptions opt;
  opt.first_line = 20;
  opt.file = "user.py";
  return refusal_of([&] { lower_source(source, params, globals, opt); });
}

#define EXPECT_REFUSAL(r, line_, col_, ...)                                   \
  do {                                                                        \
    const Refusal rr = (r);                                                   \
    EXPECT_EQ(rr.line, line_) << rr.message;                                  \
    EXPECT_EQ(rr.col, col_) << rr.message;                                    \
    for (const char* s : {__VA_ARGS__}) EXPECT_TRUE(Contains(rr.message, s)); \
  } while (0)

TEST(LowerError, While) {
  const Refusal r = refuse("    y = x\n    while x > 0:\n        y = y + 1\n");
  EXPECT_REFUSAL(r, 23, 5, "`while` loops are not allowed", "for i in range(K)");
  EXPECT_EQ(r.file, "user.py");
}

TEST(LowerError, PrintStatementAndPrintName) {
  EXPECT_REFUSAL(refuse("    y = x\n    print(x)\n"), 23, 5, "`print` is not allowed",
                 "write the value to a Mutable plane");
  EXPECT_REFUSAL(refuse("    y = x + print(x)\n"), 22, 13, "`print` is not allowed",
                 "write the value to a Mutable plane");
}

TEST(LowerError, Strings) {
  EXPECT_REFUSAL(refuse("    y = x\n    s = 'abc'\n"), 23, 9, "strings are not allowed");
  // A string statement that is not the docstring.
  EXPECT_REFUSAL(refuse("    y = x\n    'not a docstring'\n"), 23, 5, "strings are not allowed",
                 "only a docstring as the first statement");
}

TEST(LowerError, Lists) {
  EXPECT_REFUSAL(refuse("    w = [x, x, x]\n"), 22, 9, "lists are not allowed", "vec(a, b, c)");
}

TEST(LowerError, AttributeAccess) {
  EXPECT_REFUSAL(refuse("    y = x + v.real\n"), 22, 13,
                 "attribute access is only allowed on hawk.math", "w.at(i)", "'.real'");
}

TEST(LowerError, UnknownName) {
  EXPECT_REFUSAL(refuse("    y = x + zz\n"), 22, 13, "unknown name 'zz'",
                 "numbers from the enclosing scope", "@hawk.func helpers");
}

TEST(LowerError, UnsupportedGlobal) {
  EXPECT_REFUSAL(refuse("    y = np\n", {}, with_math({{"np", unsupported("the module numpy")}})),
                 22, 9, "'np' is the module numpy", "hawk.math functions");
}

TEST(LowerError, Recursion) {
  SpecOptions opt;
  opt.first_line = 20;
  opt.file = "user.py";
  opt.helpers.push_back(function_source("@hawk.func\ndef f(a):\n    return f(a) + 1\n",
                                        with_math({{"f", helper(0)}}), 40, "helpers.py"));
  const Refusal r = refusal_of([&] {
    lower_source("def k(x: Scalar, y: Mutable[Scalar]):\n    y = f(x)\n",
                 {Scalar("x"), MutScalar("y")}, with_math({{"f", helper(0)}}), opt);
  });
  EXPECT_REFUSAL(r, 42, 12, "recursive call to helper 'f'", "write the recursion as a loop",
                 "in helper 'f', inlined into the kernel");
  EXPECT_EQ(r.file, "helpers.py");
}

TEST(LowerError, AssignToParamOrInputPlane) {
  EXPECT_REFUSAL(refuse("    y = x\n    a = x\n"), 23, 5, "cannot assign to Param 'a'",
                 "use a local variable");
  EXPECT_REFUSAL(refuse("    y = x\n    x = 1.0\n"), 23, 5, "cannot assign to input plane 'x'",
                 "declare it Mutable[...]");
  EXPECT_REFUSAL(refuse("    y = x\n    v[0] = 1.0\n"), 23, 5, "cannot assign to input plane 'v'");
}

TEST(LowerError, VectorIndexOutOfRange) {
  EXPECT_REFUSAL(refuse("    y = v[3]\n"), 22, 11, "index 3 is out of range for a Vector[3]",
                 "components 0..2");
  EXPECT_REFUSAL(refuse("    y = v[-4]\n"), 22, 11, "index -4 is out of range", "components 0..2");
  EXPECT_REFUSAL(refuse("    y = x\n    w[5] = x\n"), 23, 7,
                 "index 5 is out of range for a Vector[3]", "components 0..2");
  EXPECT_REFUSAL(refuse("    y = v[x]\n"), 22, 11,
                 "an index must be an integer known when the kernel is defined");
}

// Product bug: an out-of-range negative index in an assignment target is reported after
// wrapping (w[-4] says "index -1"), unlike the same index in a read (v[-4] says "index -4").
TEST(LowerError, NegativeIndexOutOfRangeInAssignmentNamesTheUsersIndex) {
  EXPECT_REFUSAL(refuse("    y = x\n    w[-4] = x\n"), 23, 7, "index -4 is out of range",
                 "components 0..2");
}

TEST(LowerError, VectorAndBool) {
  EXPECT_REFUSAL(refuse("    w = v + (x > 0)\n"), 22, 9, "cannot mix a Vector and a bool",
                 "where(cond, a, b)");
  EXPECT_REFUSAL(refuse("    y = x * (x > 0)\n"), 22, 9, "bools cannot be used in arithmetic",
                 "where(cond, a, b)");
}

TEST(LowerError, VectorComparison) {
  EXPECT_REFUSAL(refuse("    y = where(v < x, 1.0, 0.0)\n"), 22, 15,
                 "cannot compare a Vector[3] with a Scalar",
                 "compare a component v[i] or a length norm(v)");
}

TEST(LowerError, DifferentTypesInIfBranches) {
  EXPECT_REFUSAL(
      refuse("    y = x\n    if x > 0:\n        r = x\n    else:\n        r = v\n    y = r\n"), 23,
      5, "'r' is a Scalar in one branch of this `if` and a Vector[3] in the other",
      "give it the same type in every branch");
}

TEST(LowerError, VariableAssignedInOneBranchThenRead) {
  EXPECT_REFUSAL(refuse("    if x > 0:\n        r = x\n    y = r\n"), 24, 9,
                 "'r' is assigned in only one branch of the `if` at line 22",
                 "assign it before the `if` or in every branch");
}

TEST(LowerError, ReturnInKernel) {
  EXPECT_REFUSAL(refuse("    y = x\n    return y\n"), 23, 5, "a kernel returns nothing",
                 "assign results to its Mutable parameters");
}

TEST(LowerError, NoOutputs) {
  SpecOptions opt;
  opt.first_line = 20;
  const Refusal r = refusal_of([&] {
    lower_source("@hawk.kernel\ndef k(x: Scalar, a: Param):\n    z = x * a\n",
                 {Scalar("x"), Param("a")}, math_globals(), opt);
  });
  EXPECT_REFUSAL(r, 21, 1, "writes nothing", "declare an output as Mutable[Scalar]", "Terminated");
}

TEST(LowerError, DefaultValues) {
  SpecOptions opt;
  opt.first_line = 20;
  const Refusal r = refusal_of([&] {
    lower_source("@hawk.kernel\ndef k(x: Scalar, y: Mutable[Scalar] = None):\n    y = x\n",
                 {Scalar("x"), MutScalar("y")}, math_globals(), opt);
  });
  EXPECT_REFUSAL(r, 21, 18, "parameter 'y' has a default value", "pass every value when binding");
}

TEST(LowerError, WrongAnnotationFromParamSpec) {
  SpecOptions opt;
  opt.first_line = 20;
  ir::ParamSpec bad = Scalar("x");
  bad.error =
      "parameter 'x' is annotated int; use Scalar, Vector[k], Param, Mutable[...], Terminated or "
      "Table[...]";
  const Refusal r = refusal_of([&] {
    lower_source("@hawk.kernel\ndef k(x: int, y: Mutable[Scalar]):\n    y = x\n",
                 {bad, MutScalar("y")}, math_globals(), opt);
  });
  EXPECT_REFUSAL(r, 21, 7, "parameter 'x' is annotated int", "use Scalar, Vector[k]");
}

TEST(LowerError, IndentedSourceKeepsRealColumns) {
  // inspect.getsource of a method or a nested def keeps its indentation.
  SpecOptions opt;
  opt.first_line = 7;
  const Refusal r = refusal_of([&] {
    lower_source(
        "    @hawk.kernel\n    def k(x: Scalar, y: Mutable[Scalar]):\n        y = x + zz\n",
        {Scalar("x"), MutScalar("y")}, math_globals(), opt);
  });
  EXPECT_REFUSAL(r, 9, 17, "unknown name 'zz'");
}

TEST(LowerError, OtherRefusals) {
  EXPECT_REFUSAL(refuse("    y = x\n    break\n"), 23, 5, "`break` outside a loop",
                 "inside `for i in range(K)`");
  EXPECT_REFUSAL(refuse("    import math\n    y = x\n"), 22, 5, "imports are not allowed",
                 "import at module level");
  EXPECT_REFUSAL(refuse("    y = x\n    for e in v:\n        y = e\n"), 23, 5, "for i in range(K)");
  EXPECT_REFUSAL(refuse("    y = x\n    for i in range(x):\n        y = y + 1\n"), 23, 20,
                 "a range bound must be an integer known when the kernel is defined");
  EXPECT_REFUSAL(refuse("    y = x @ x\n"), 22, 9, "'@' multiplies matrices and vectors");
  EXPECT_REFUSAL(refuse("    y = x\n    w = cross(v, vec(1.0, 2.0))\n"), 23, 9,
                 "cross() takes two Vector[3]");
  EXPECT_REFUSAL(refuse("    y = sqrt(x, x)\n"), 22, 9, "sqrt() takes 1 argument, got 2");
  EXPECT_REFUSAL(refuse("    y = v\n"), 22, 5,
                 "'y' is a Mutable[Scalar] but the value assigned is a Vector[3]");
}

// `c = 0` then `c = c + x` in a loop that runs as a loop: Python's c is a float from the
// first iteration on. The front end lowers the body, finds the int made of constants turned
// into a float (FloatCarry), and lowers the kernel again with that carry a float from the
// loop's entry; under a `break` the same holds where the assignment merges with the old value.
// A runtime int carried into a float update is still refused, with the fix.
TEST(LowerLoops, AnIntOfConstantsCarriedIntoAFloatUpdateIsAFloat) {
  const ir::Kernel k = lower_source(
      R"(def k(x: Scalar, y: Mutable[Scalar], z: Mutable[Scalar]):
    c = 0
    n = 0
    for i in range(5000):
        c = c + x
        n = n + 2
        if c > 10.0:
            break
    y = c
    z = float(n)
)",
      {Scalar("x"), MutScalar("y"), MutScalar("z")});
  ir::InterpBinding b = ir::make_binding(k, 3);
  set_in(k, b, "x", {0.5, 3.0, -1.0});
  ir::interpret(k, b);
  std::vector<double> y, z;
  for (const double x : {0.5, 3.0, -1.0}) {
    double c = 0.0;
    long n = 0;
    for (int i = 0; i < 5000; ++i) {
      c = c + x;
      n = n + 2;
      if (c > 10.0) break;
    }
    y.push_back(c);
    z.push_back(static_cast<double>(n));
  }
  EXPECT_EQ(out_of(k, b, "y"), y);
  EXPECT_EQ(out_of(k, b, "z"), z);
  // Carried through an inner long loop too, with and without a `break` there: the outer
  // loop's carry is the one that turns float.
  for (const char* exit : {"", "            if c > 1.0:\n                break\n"}) {
    const ir::Kernel nested = lower_source(std::string(R"(def k(x: Scalar, y: Mutable[Scalar]):
    c = 0
    for i in range(4100):
        for j in range(4100):
            c = c + x
)") + exit + "    y = c\n",
                                           {Scalar("x"), MutScalar("y")});
    int float_carries = 0;
    for (const ir::Value& v : nested.values)
      if (v.op == Op::LoopCarry && v.name == "c") float_carries += v.type == ir::Type::F ? 1 : -100;
    EXPECT_EQ(float_carries, 2) << "c is a float carry of both loops";
  }
  EXPECT_REFUSAL(
      refuse("    c = int(x)\n    for i in range(5000):\n        c = c + 0.5\n    y = c\n", {},
             with_math({{"int", math("int")}})),
      23, 5, "'c' is an int before the loop at line 23", "write c = float(c) before the loop");
}

TEST(LowerLoopExits, Refusals) {
  EXPECT_REFUSAL(refuse("    y = x\n    if x > 0:\n        continue\n"), 24, 9,
                 "`continue` outside a loop", "inside `for i in range(K)`");
  EXPECT_REFUSAL(refuse("    y = x\n    for i in range(3):\n        break\n        y = x\n"), 25, 9,
                 "statements after `break`/`continue`", "never run");
  EXPECT_REFUSAL(
      refuse("    y = x\n    for i in range(3):\n        if y > 1:\n            break\n        y = "
             "y * 2\n    y = y + i\n"),
      27, 13, "the loop variable 'i'", "count the iterations");
  EXPECT_REFUSAL(
      refuse("    y = x\n    for i in range(3):\n        if y > 1:\n            continue\n        "
             "z = y\n        y = z * 2\n    y = z\n"),
      28, 9, "'z' is first assigned after a `break`/`continue`", "assign it before the loop");
  // a loop longer than a kernel unrolls runs as a loop: its own locals stay inside it
  EXPECT_REFUSAL(
      refuse(
          "    y = x\n    for i in range(5000):\n        z = y * 0.5\n        y = z\n    y = z\n"),
      26, 9, "'z' is first assigned inside the loop at line 23", "assign 'z' before the loop");
  EXPECT_REFUSAL(
      refuse("    y = x\n    for i in range(5000):\n        y = y * 0.5\n    y = y + i\n"), 25, 13,
      "the loop variable 'i' after the loop at line 23", "count the iterations");
  // a helper's break leaves only the helper's own loops
  SpecOptions opt;
  opt.first_line = 20;
  opt.file = "user.py";
  opt.helpers.push_back(
      function_source("@hawk.func\ndef f(a):\n    if a > 1:\n        break\n    return a\n",
                      math_globals(), 40, "helpers.py"));
  const Refusal r = refusal_of([&] {
    lower_source(
        "def k(x: Scalar, y: Mutable[Scalar]):\n    y = x\n    for i in range(3):\n        y = "
        "f(y)\n",
        {Scalar("x"), MutScalar("y")}, with_math({{"f", helper(0)}}), opt);
  });
  EXPECT_REFUSAL(r, 43, 9, "`break` outside a loop", "return a flag from the helper",
                 "in helper 'f', inlined into the kernel");
  EXPECT_EQ(r.file, "helpers.py");
}

}  // namespace
}  // namespace raptor::testing
