// Tests of dropping unread inputs (passes/trim.hpp): which slots a kernel reads, that a
// derived kernel loses exactly the inputs its math does not need (the tangents of an adjoint
// of a tangent kernel, a primal input that enters linearly), that outputs, the mask and the
// table a TableSum is sized by are kept, and that the trimmed kernel computes bit-identical
// results with the reference interpreter.
#include <gtest/gtest.h>

#include <bit>
#include <cstdint>
#include <functional>
#include <random>
#include <string>
#include <vector>

#include "ad/adjoint.hpp"
#include "ad/tangent.hpp"
#include "ir/interp.hpp"
#include "ir/ir.hpp"
#include "passes/trim.hpp"
#include "test_util_spec.hpp"

namespace raptor::testing {
namespace {

using ir::SlotKind;

// The flight step of the user's page 002: r enters r_next linearly, g only as a constant.
ir::Kernel flight_kernel() {
  return lowered(R"(@hawk.kernel(steps=1)
def flight(r: Vector[3], v: Vector[3], cd: Param, dt: Param, g: Param, terminated: Terminated,
           r_next: Mutable[Vector[3]], v_next: Mutable[Vector[3]]):
    a = vec(0.0, 0.0, -g) - cd * norm(v) * v
    v_new = v + dt * a
    v_next = v_new
    r_next = r + dt * v_new
    terminated = r_next[2] < 0.0
)",
                 {Vector("r", 3), Vector("v", 3), Param("cd"), Param("dt"), Param("g"),
                  Terminated("terminated"), MutVector("r_next", 3), MutVector("v_next", 3)},
                 1, "examples/flight.py");
}

std::vector<std::string> slot_names(const ir::Kernel& k) {
  std::vector<std::string> out;
  for (const ir::Slot& s : k.slots) out.push_back(s.name);
  return out;
}

// Fills every input of `k` (by slot name, so the same data serves a kernel and its trimmed
// form) with values from a fixed seed; a few samples start finished.
ir::InterpBinding random_binding(const ir::Kernel& k, int64_t n) {
  ir::InterpBinding b = ir::make_binding(k, n);
  for (size_t s = 0; s < k.slots.size(); ++s) {
    std::mt19937_64 rng(std::hash<std::string>{}(k.slots[s].name));
    std::uniform_real_distribution<double> u(-2.0, 3.0);
    for (double& x : b.slots[s].in) x = u(rng);
  }
  for (int64_t i = 0; i < n; ++i) b.mask[i] = (i % 5 == 3) ? 1 : 0;
  b.zero_finished = true;
  return b;
}

TEST(PassesTrim, SlotsReadOfAUserKernel) {
  const ir::Kernel k = flight_kernel();
  const std::vector<bool> read = passes::slots_read(k);
  // r, v, cd, dt, g and the mask are read; the outputs are not.
  EXPECT_EQ(read, (std::vector<bool>{true, true, true, true, true, true, false, false}));
}

TEST(PassesTrim, UserKernelKeepsEverySlot) {
  ir::Kernel k = flight_kernel();
  EXPECT_EQ(passes::drop_unread_inputs(k), 0);
  EXPECT_EQ(k.slots.size(), 8u);
}

TEST(PassesTrim, TangentDropsALinearPrimalInput) {
  // d(r_next) = d(r) + dt * d(v_new): the primal r is not needed, nor g (a constant term).
  ir::Kernel t = optimized(ad::tangent(flight_kernel(), {"r", "v", "cd"}, false));
  const std::vector<std::string> before = slot_names(t);
  EXPECT_EQ(passes::drop_unread_inputs(t), 2);
  ir::verify(t);
  std::vector<std::string> want;
  for (const std::string& n : before)
    if (n != "r" && n != "g") want.push_back(n);
  EXPECT_EQ(slot_names(t), want);
}

TEST(PassesTrim, AdjointOfTangentDropsTheTangents) {
  const ir::Kernel t = optimized(ad::tangent(flight_kernel(), {"r", "v", "cd"}, false));
  ir::Kernel a = optimized(ad::adjoint(t, {"r_dot", "v_dot", "cd_dot"}));
  ir::Kernel trimmed = a;
  passes::drop_unread_inputs(trimmed);
  ir::verify(trimmed);
  for (const ir::Slot& s : trimmed.slots) {
    const bool input =
        s.kind == SlotKind::Param || s.kind == SlotKind::Plane || s.kind == SlotKind::Table;
    if (input) {
      EXPECT_NE(s.role, 't') << "tangent input " << s.name << " was kept";
    }
  }
  // Every output and the mask survive, in order.
  std::vector<std::string> outs_before, outs_after;
  for (const ir::Slot& s : a.slots)
    if (s.kind != SlotKind::Param && s.kind != SlotKind::Plane) outs_before.push_back(s.name);
  for (const ir::Slot& s : trimmed.slots)
    if (s.kind != SlotKind::Param && s.kind != SlotKind::Plane) outs_after.push_back(s.name);
  EXPECT_EQ(outs_after, outs_before);

  // Bit-identical results: the same inputs by name, compared slot by slot.
  const int64_t n = 37;
  ir::InterpBinding full = random_binding(a, n);
  ir::InterpBinding cut = random_binding(trimmed, n);
  ir::interpret(a, full);
  ir::interpret(trimmed, cut);
  for (size_t s = 0; s < trimmed.slots.size(); ++s) {
    const int f = a.find_slot(trimmed.slots[s].name);
    ASSERT_GE(f, 0);
    ASSERT_EQ(cut.slots[s].out.size(), full.slots[f].out.size()) << trimmed.slots[s].name;
    for (size_t i = 0; i < cut.slots[s].out.size(); ++i)
      EXPECT_EQ(std::bit_cast<uint64_t>(cut.slots[s].out[i]),
                std::bit_cast<uint64_t>(full.slots[f].out[i]))
          << trimmed.slots[s].name << "[" << i << "]";
  }
  EXPECT_EQ(cut.mask, full.mask);
}

TEST(PassesTrim, KeepsTheTableATableSumIsSizedBy) {
  // The adjoint with respect to a table reads the index, not the table's values... but its
  // TableSum takes the table's size, so the table stays.
  const ir::Kernel k = lowered(R"(@hawk.kernel
def lookup(x: Scalar, tab: Table[Scalar], y: Mutable[Scalar]):
    y = tab.at(x) + x
)",
                               {Scalar("x"), TableScalar("tab"), MutScalar("y")});
  ir::Kernel a = optimized(ad::adjoint(k, {"tab"}));
  const int table = a.find_slot("tab");
  ASSERT_GE(table, 0);
  ir::Kernel trimmed = a;
  passes::drop_unread_inputs(trimmed);
  ir::verify(trimmed);
  const int kept = trimmed.find_slot("tab");
  ASSERT_GE(kept, 0) << ir::print(trimmed);
  for (const ir::Slot& s : trimmed.slots)
    if (s.kind == SlotKind::TableSum) {
      EXPECT_EQ(s.table_of, kept);
    }
}

}  // namespace
}  // namespace raptor::testing
