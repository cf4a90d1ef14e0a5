// Tests for runtime/loop (the stepping-loop planner, the host executor, the device plan) and
// runtime/cuda_loop_kernels (the device stop test). Start with LoopPlanner: a fake executor
// whose samples finish at chosen steps, against the count a plain loop makes (computed here
// directly from the schedule). LoopHost runs real compiled kernels; LoopDevice simulates the
// device loop on the CPU with the stop test's own counting rule and compiles the stop test
// with NVRTC (skipped only when NVRTC is missing). Nothing here runs on a GPU.
#include <gtest/gtest.h>

#include <algorithm>
#include <limits>
#include <memory>
#include <numeric>
#include <string>
#include <vector>

#include "runtime/build.hpp"
#include "runtime/compiler.hpp"
#include "runtime/cuda_loop_kernels.hpp"
#include "runtime/loop.hpp"
#include "runtime/nvrtc.hpp"
#include "tests/test_runtime_util.hpp"
#include "tests/test_util_spec.hpp"

namespace raptor::runtime {
namespace {

constexpr int64_t kNever = std::numeric_limits<int64_t>::max();

// Samples that finish after a chosen number of steps (0: finished before the loop; kNever:
// never). A launch of the sequence runs `unit` steps of every live sample; a pass of fused
// kernel i runs fused[i] * unit steps and reports the most steps a sample ran, as the
// compiled kernels do.
class FakeLoop final : public StepExecutor {
 public:
  FakeLoop(std::vector<int64_t> finish_step, int64_t unit, std::vector<int64_t> fused = {})
      : finish_(std::move(finish_step)), unit_(unit), fused_(std::move(fused)) {}
  FakeLoop(std::vector<int64_t> finish_step, int64_t unit, int64_t fused)
      : FakeLoop(std::move(finish_step), unit,
                 fused > 0 ? std::vector<int64_t>{fused} : std::vector<int64_t>{}) {}

  int64_t run_sequence_once() override {
    ++sequence_runs;
    return advance(unit_).finished;
  }
  FusedPass run_fused(size_t rung, int64_t steps) override {
    EXPECT_LT(rung, fused_.size()) << "a pass of a fused kernel the loop does not have";
    EXPECT_EQ(steps % unit_, 0) << "a pass of part of a launch";
    EXPECT_GE(steps, unit_);
    EXPECT_LE(steps, fused_.at(rung) * unit_) << "a pass longer than its kernel";
    ++fused_runs;
    ++runs_of.at(rung);
    pass_sizes.push_back(steps / unit_);
    return advance(steps);
  }
  int64_t live() override {
    return std::count_if(finish_.begin(), finish_.end(), [&](int64_t s) { return s > pos_; });
  }

  int64_t sequence_runs = 0;
  int64_t fused_runs = 0;
  std::vector<int64_t> pass_sizes;  // launches each fused pass stood for
  std::vector<int64_t> runs_of = std::vector<int64_t>(8, 0);  // passes of each fused kernel

 private:
  FusedPass advance(int64_t steps) {
    FusedPass p;
    for (int64_t s : finish_) {
      if (s <= pos_) continue;  // finished: masked out
      const int64_t ran = std::min(s, pos_ + steps) - pos_;
      p.steps_run = std::max(p.steps_run, ran);
      if (s <= pos_ + steps) ++p.finished;
    }
    pos_ += steps;  // every sample still live ran all of them
    return p;
  }
  std::vector<int64_t> finish_;
  int64_t unit_;
  std::vector<int64_t> fused_;
  int64_t pos_ = 0;
};

// What a plain loop of launches of `unit` steps makes: it stops after the launch in which the
// last live sample finishes, or at the budget.
LoopResult plain_loop(const std::vector<int64_t>& finish, int64_t unit, int64_t budget) {
  int64_t needed = 0;
  for (int64_t s : finish) {
    if (s == kNever) {
      needed = kNever;
      break;
    }
    needed = std::max(needed, (s + unit - 1) / unit);
  }
  LoopResult r;
  r.launches = std::min(needed, budget);
  r.live = std::count_if(finish.begin(), finish.end(), [&](int64_t s) {
    return s == kNever || (s + unit - 1) / unit > r.launches;
  });
  r.done = r.live == 0;
  return r;
}

LoopOptions ladder(int64_t budget, std::vector<int64_t> fused, int64_t unit = 1,
                   int64_t chunk = 0) {
  LoopOptions o;
  o.budget = budget;
  o.fused_launches = std::move(fused);
  o.unit_steps = unit;
  o.chunk = chunk;
  return o;
}

// One fused kernel of `fused` launches (0: none).
LoopOptions options(int64_t budget, int64_t fused = 0, int64_t unit = 1, int64_t chunk = 0) {
  return ladder(budget, fused > 0 ? std::vector<int64_t>{fused} : std::vector<int64_t>{}, unit,
                chunk);
}

struct Case {
  const char* what;
  std::vector<int64_t> finish;  // steps
  int64_t unit;
  int64_t budget;
};

const std::vector<Case> kCases = {
    {"budget cut", {5, 300, kNever}, 1, 100},
    {"budget cut, fused tail", {5, 300, kNever}, 2, 150},
    {"done on the last launch", {7, 100, 40}, 1, 100},
    {"done on the last launch, unit 3", {7, 300, 40}, 3, 100},
    {"done mid fused pass", {10, 3 * 150 - 1, 20}, 3, 200},
    {"done in the first fused pass", {1, 2, 3}, 1, 1000},
    {"nothing live at start", {0, 0, 0}, 1, 50},
    {"budget 0", {3, 4}, 1, 0},
    {"budget 0, nothing live", {0}, 1, 0},
    {"one live sample", {0, 0, 129}, 1, 1000},
    {"budget exactly one fused pass", {64 * 5}, 5, 64},
    {"no samples", {}, 1, 10},
};

TEST(LoopPlanner, PlainLoopCountsExactly) {
  for (const Case& c : kCases) {
    FakeLoop ex(c.finish, c.unit);
    const LoopResult r = run_loop(ex, options(c.budget, 0, c.unit));
    EXPECT_EQ(r, plain_loop(c.finish, c.unit, c.budget)) << c.what;
    EXPECT_EQ(ex.sequence_runs, r.launches) << c.what;
    EXPECT_EQ(ex.fused_runs, 0) << c.what;
  }
}

TEST(LoopPlanner, FusedPassesCountLaunchesOfTheOriginal) {
  for (const Case& c : kCases) {
    for (int64_t fused : {1, 4, 64}) {
      FakeLoop ex(c.finish, c.unit, fused);
      const LoopResult r = run_loop(ex, options(c.budget, fused, c.unit));
      const LoopResult want = plain_loop(c.finish, c.unit, c.budget);
      EXPECT_EQ(r, want) << c.what << ", fused " << fused;
      // Passes while a whole one fits in the budget, single launches for the rest.
      EXPECT_LE(ex.sequence_runs, fused - 1) << c.what << ", fused " << fused;
      EXPECT_LE(ex.fused_runs * fused + ex.sequence_runs, std::max(c.budget, int64_t{0})) << c.what;
    }
  }
}

TEST(LoopPlanner, ALadderOfFusedKernelsTakesTheLargestThatFits) {
  for (const Case& c : kCases) {
    for (const std::vector<int64_t>& fused :
         {std::vector<int64_t>{256, 16}, std::vector<int64_t>{64, 4, 1}}) {
      FakeLoop ex(c.finish, c.unit, fused);
      const LoopResult r = run_loop(ex, ladder(c.budget, fused, c.unit));
      EXPECT_EQ(r, plain_loop(c.finish, c.unit, c.budget)) << c.what << ", rungs " << fused[0];
      EXPECT_LT(ex.sequence_runs, fused.back()) << c.what;
    }
  }
  // 1000 launches of a sample that never finishes: 3 x 256, then 14 x 16, then 8 single.
  FakeLoop ex({kNever}, 1, std::vector<int64_t>{256, 16});
  const LoopResult r = run_loop(ex, ladder(1000, {256, 16}));
  EXPECT_EQ(r.launches, 1000);
  EXPECT_EQ(ex.runs_of[0], 3);
  EXPECT_EQ(ex.runs_of[1], 14);
  EXPECT_EQ(ex.sequence_runs, 8);
  EXPECT_EQ(fused_rung(ladder(0, {256, 16}), 300), 0);
  EXPECT_EQ(fused_rung(ladder(0, {256, 16}), 255), 1);
  EXPECT_EQ(fused_rung(ladder(0, {256, 16}), 15), -1);
}

// fused_min: the first fused kernel runs whatever the budget has left, from fused_min launches;
// the counts are still a plain loop's, and only the last < fused_min launches run singly.
TEST(LoopPlanner, PassesOfAnyLengthFromFusedMin) {
  for (const Case& c : kCases) {
    FakeLoop ex(c.finish, c.unit, std::vector<int64_t>{256});
    LoopOptions o = ladder(c.budget, {256}, c.unit);
    o.fused_min = 16;
    EXPECT_EQ(run_loop(ex, o), plain_loop(c.finish, c.unit, c.budget)) << c.what;
    EXPECT_LT(ex.sequence_runs, 16) << c.what;
  }
  // 1000 launches of a sample that never finishes: 3 x 256, one pass of 232, no single one.
  FakeLoop ex({kNever}, 1, std::vector<int64_t>{256});
  LoopOptions o = ladder(1000, {256});
  o.fused_min = 16;
  EXPECT_EQ(run_loop(ex, o).launches, 1000);
  EXPECT_EQ(ex.pass_sizes, (std::vector<int64_t>{256, 256, 256, 232}));
  EXPECT_EQ(ex.sequence_runs, 0);
  // 100: one pass of 100; 270: 256, then 14 single launches.
  FakeLoop ex100({kNever}, 1, std::vector<int64_t>{256});
  o.budget = 100;
  EXPECT_EQ(run_loop(ex100, o).launches, 100);
  EXPECT_EQ(ex100.pass_sizes, (std::vector<int64_t>{100}));
  FakeLoop ex270({kNever}, 1, std::vector<int64_t>{256});
  o.budget = 270;
  EXPECT_EQ(run_loop(ex270, o).launches, 270);
  EXPECT_EQ(ex270.pass_sizes, (std::vector<int64_t>{256}));
  EXPECT_EQ(ex270.sequence_runs, 14);
  EXPECT_EQ(fused_rung(o, 15), -1);
  EXPECT_EQ(fused_rung(o, 16), 0);
  EXPECT_EQ(fused_pass_size(o, 0, 40), 40);
  EXPECT_EQ(fused_pass_size(o, 0, 400), 256);
  o.fused_min = 300;  // more than the kernel's launches
  EXPECT_THROW(run_loop(ex, o), std::invalid_argument);
}

TEST(LoopPlanner, DoneMidFusedPassCountsTheLaunchOfTheLastSample) {
  // unit 3, 64 launches a pass: the last sample finishes at step 449, in launch 150, during
  // the third pass (launches 129..192).
  FakeLoop ex({10, 449, 20}, 3, 64);
  const LoopResult r = run_loop(ex, options(200, 64, 3));
  EXPECT_EQ(r.launches, 150);
  EXPECT_TRUE(r.done);
  EXPECT_EQ(ex.fused_runs, 3);
  EXPECT_EQ(ex.sequence_runs, 0);
}

TEST(LoopPlanner, BudgetTailRunsSingleLaunches) {
  FakeLoop ex({kNever}, 1, 64);
  const LoopResult r = run_loop(ex, options(150, 64, 1));
  EXPECT_EQ(r.launches, 150);
  EXPECT_FALSE(r.done);
  EXPECT_EQ(r.live, 1);
  EXPECT_EQ(ex.fused_runs, 2);
  EXPECT_EQ(ex.sequence_runs, 150 - 128);
}

TEST(LoopPlanner, ChunksReportBetweenThemAndFusionStaysInside) {
  for (int64_t fused : {0, 64}) {
    FakeLoop ex({70, 200, 300}, 1, fused);
    LoopOptions o = options(250, fused, 1, 64);
    std::vector<std::pair<int64_t, int64_t>> calls;
    o.on_chunk = [&](int64_t launches, int64_t live) { calls.emplace_back(launches, live); };
    const LoopResult r = run_loop(ex, o);
    EXPECT_EQ(r, plain_loop({70, 200, 300}, 1, 250));
    // Every 64 launches, then at the budget (250); live from the schedule at each.
    const std::vector<std::pair<int64_t, int64_t>> want = {{64, 3}, {128, 2}, {192, 2}, {250, 1}};
    EXPECT_EQ(calls, want) << "fused " << fused;
    if (fused) {
      EXPECT_EQ(ex.fused_runs, 3);
      EXPECT_EQ(ex.sequence_runs, 250 - 192);
    }
  }
  // Done mid-chunk: one last report where it stopped; nothing live at start: none.
  FakeLoop ex({100}, 1, 64);
  LoopOptions o = options(1000, 64, 1, 64);
  std::vector<int64_t> at;
  o.on_chunk = [&](int64_t launches, int64_t) { at.push_back(launches); };
  EXPECT_EQ(run_loop(ex, o).launches, 100);
  EXPECT_EQ(at, (std::vector<int64_t>{64, 100}));
  FakeLoop idle({0, 0}, 1);
  at.clear();
  EXPECT_EQ(run_loop(idle, o), (LoopResult{0, true, 0}));
  EXPECT_TRUE(at.empty());
}

TEST(LoopPlanner, RefusesNonsense) {
  FakeLoop ex({3}, 1);
  EXPECT_THROW(run_loop(ex, options(-1)), std::invalid_argument);
  EXPECT_THROW(run_loop(ex, options(10, 0, 0)), std::invalid_argument);
  EXPECT_THROW(run_loop(ex, ladder(10, {-2})), std::invalid_argument);
  EXPECT_THROW(run_loop(ex, ladder(10, {16, 64})), std::invalid_argument);  // not largest first
  EXPECT_THROW(run_loop(ex, ladder(10, {16, 16})), std::invalid_argument);
  EXPECT_EQ(ex.sequence_runs, 0);
}

TEST(LoopPlanner, NextActionAndFusedCount) {
  const LoopOptions o = options(100, 64, 2);
  EXPECT_EQ(next_action(o, 0, 100, 5), LoopAction::Fused);
  EXPECT_EQ(next_action(o, 40, 60, 5), LoopAction::Sequence);  // 60 left < 64
  EXPECT_EQ(next_action(o, 0, 63, 5), LoopAction::Sequence);   // the chunk has 63 left
  EXPECT_EQ(next_action(o, 0, 100, 0), LoopAction::Stop);
  EXPECT_EQ(next_action(o, 100, 100, 5), LoopAction::Stop);
  EXPECT_EQ(fused_pass_launches(o, 64, {1, 128}, 3), 64);
  EXPECT_EQ(fused_pass_launches(o, 64, {1, 5}, 0), 3);  // step 5 of unit 2: launch 3
  EXPECT_EQ(fused_pass_launches(o, 64, {1, 128}, 0), 64);
  EXPECT_EQ(fused_pass_launches(o, 20, {1, 40}, 2), 20);
}

TEST(LoopPlanner, CountSet) {
  const std::vector<uint8_t> m = {0, 1, 1, 0, 2, 0, 0, 1};
  EXPECT_EQ(count_set(m.data(), 8), 4);
  EXPECT_EQ(count_set(m.data(), 0), 0);
  // Every byte value counts as set when nonzero, at every length and alignment, across the
  // 255-word blocks of the word-wise count (against a bytewise reference).
  std::vector<uint8_t> big(8 * 700 + 13);
  for (size_t i = 0; i < big.size(); ++i) big[i] = static_cast<uint8_t>((i * 37 + i / 256) % 256);
  for (const size_t off : {0, 1, 3, 7}) {
    for (const size_t len : {0, 1, 7, 8, 9, 63, 2040, 2041, 8 * 255, 8 * 255 + 8, 8 * 600 + 5}) {
      int64_t ref = 0;
      for (size_t i = 0; i < len; ++i) ref += big[off + i] != 0;
      EXPECT_EQ(count_set(big.data() + off, static_cast<int64_t>(len)), ref) << off << " " << len;
    }
  }
  const std::vector<uint8_t> all(8 * 300, 0xff);
  EXPECT_EQ(count_set(all.data(), static_cast<int64_t>(all.size())), static_cast<int64_t>(all.size()));
}

TEST(LoopPlanner, CountSetOverAPool) {
  // Split over 1..5 threads (each a contiguous part of whole words, the last the rest) it
  // counts what one thread counts, below and above the size where it splits, at odd lengths
  // and offsets.
  std::vector<uint8_t> big(static_cast<size_t>(kParallelCount) * 3 + 21);
  for (size_t i = 0; i < big.size(); ++i) big[i] = static_cast<uint8_t>((i * 2654435761u) >> 29) & 3;
  for (const int threads : {1, 2, 3, 5}) {
    ThreadPool pool(threads);
    for (const size_t off : {0, 5}) {
      for (const int64_t len : {int64_t{0}, int64_t{9}, kParallelCount - 1, kParallelCount,
                                kParallelCount * 2 + 13, kParallelCount * 3 + 16}) {
        const int64_t one = count_set(big.data() + off, len);
        EXPECT_EQ(count_set(big.data() + off, len, pool), one) << threads << " " << off << " " << len;
      }
    }
  }
}

// ---------------------------------------------------------------------------------------------
// The host executor over compiled kernels

// t counts steps until it reaches the sample's limit; unit 1 and unit 2, each also with 64
// times its steps (the fused kernel), and unit 1 with 16, 8 and 48 steps (ladders; a kernel
// refills its lanes every 8 steps: codegen/host_driver.cpp).
const char* kTick = R"(def tick(limit: Scalar, terminated: Terminated, t: Mutable[Scalar]):
    t = t + 1.0
    terminated = t >= limit
)";

class LoopHost : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    using namespace raptor::testing;
    dir_ = std::make_unique<testing::TempDir>();
    for (int steps : {1, 64, 2, 128, 16, 8, 48})
      kernels_.push_back(
          lowered(kTick, {Scalar("limit"), Terminated("terminated"), MutScalar("t")}, steps));
    std::vector<const ir::Kernel*> ptrs;
    for (const ir::Kernel& k : kernels_) ptrs.push_back(&k);
    Compiler c(open_cache_dir(dir_->path().string()));
    built_ = std::make_unique<BuildResult>(build_host(ptrs, c));
    pool_ = std::make_unique<ThreadPool>(2);
  }
  static void TearDownTestSuite() {
    built_.reset();
    kernels_.clear();
    pool_.reset();
    dir_.reset();
  }
  // Samples' planes: limit, t, the mask.
  struct Planes {
    std::vector<double> limit, t;
    std::vector<uint8_t> mask;
  };
  static std::shared_ptr<BoundLaunch> bind(size_t kernel, Planes& p) {
    Binding b;
    b.n = static_cast<int64_t>(p.t.size());
    b.slots.resize(3);
    b.slots[0].in = p.limit.data();
    b.slots[2].in = p.t.data();
    b.slots[2].out = p.t.data();
    b.mask_in = p.mask.data();
    b.mask_out = p.mask.data();
    return std::make_shared<BoundLaunch>(built_->kernels.at(kernel).f64, std::move(b),
                                         std::vector<ParamSource>{});
  }
  static Planes planes(int64_t n, int64_t spread) {
    Planes p;
    for (int64_t i = 0; i < n; ++i) p.limit.push_back(static_cast<double>(1 + (i * 7919) % spread));
    p.t.assign(n, 0.0);
    p.mask.assign(n, 0);
    return p;
  }
  static std::unique_ptr<testing::TempDir> dir_;
  static std::vector<ir::Kernel> kernels_;
  static std::unique_ptr<BuildResult> built_;
  static std::unique_ptr<ThreadPool> pool_;
};
std::unique_ptr<testing::TempDir> LoopHost::dir_;
std::vector<ir::Kernel> LoopHost::kernels_;
std::unique_ptr<BuildResult> LoopHost::built_;
std::unique_ptr<ThreadPool> LoopHost::pool_;

TEST_F(LoopHost, PlainAndFusedAgreeWithTheSchedule) {
  // (unit kernel, fused kernel, unit steps); n above the serial threshold uses the pool.
  const struct {
    size_t plain, fused;
    int64_t unit;
  } kinds[] = {{0, 1, 1}, {2, 3, 2}};
  for (const auto& kind : kinds) {
    for (int64_t n : {int64_t{1}, int64_t{1000}, kDefaultSerialThreshold + 100}) {
      for (int64_t budget : {int64_t{0}, int64_t{37}, int64_t{150}, int64_t{1000}}) {
        for (bool with_fused : {false, true}) {
          Planes p = planes(n, 300);
          const std::vector<int64_t> finish(p.limit.begin(), p.limit.end());
          std::vector<std::shared_ptr<BoundLaunch>> fused;
          if (with_fused) fused.push_back(bind(kind.fused, p));
          HostLoop ex({{bind(kind.plain, p), {}}}, p.mask.data(), n, *pool_, fused);
          const LoopResult r = run_loop(ex, options(budget, with_fused ? 64 : 0, kind.unit));
          const LoopResult want = plain_loop(finish, kind.unit, budget);
          const std::string what = "unit " + std::to_string(kind.unit) + " n " + std::to_string(n) +
                                   " budget " + std::to_string(budget) +
                                   (with_fused ? " fused" : "");
          ASSERT_EQ(r, want) << what;
          for (int64_t i = 0; i < n; ++i) {
            const double steps = static_cast<double>(std::min(finish[i], r.launches * kind.unit));
            ASSERT_EQ(p.t[i], steps) << what << " sample " << i;
            ASSERT_EQ(p.mask[i] != 0, finish[i] <= r.launches * kind.unit) << what;
          }
          EXPECT_EQ(ex.live(), n - count_set(p.mask.data(), n)) << what;
        }
      }
    }
  }
}

// Fused passes of any length (LoopOptions::fused_min, the kernel told its steps through
// raptor_args::max_steps): budgets under a refill period, between periods and over several
// passes, samples finished before the loop, on one thread and on the pool.
TEST_F(LoopHost, PassesOfAnyLengthAgreeWithTheSchedule) {
  const struct {
    size_t plain, fused;
    int64_t unit, launches;
  } kinds[] = {{0, 1, 1, 64}, {2, 3, 2, 64}, {0, 6, 1, 48}};
  for (const auto& kind : kinds) {
    for (int64_t n : {int64_t{1}, int64_t{130}, kDefaultSerialThreshold + 100}) {
      for (int64_t budget : {int64_t{0}, int64_t{5}, int64_t{37}, int64_t{150}, int64_t{1000}}) {
        for (int64_t fused_min : {int64_t{1}, int64_t{16}}) {
          Planes p = planes(n, 300);
          for (int64_t i = 0; i < n; i += 7) p.mask[i] = 1;
          std::vector<int64_t> finish(p.limit.begin(), p.limit.end());
          for (int64_t i = 0; i < n; i += 7) finish[i] = 0;
          HostLoop ex({{bind(kind.plain, p), {}}}, p.mask.data(), n, *pool_,
                      {bind(kind.fused, p)});
          LoopOptions o = options(budget, kind.launches, kind.unit);
          o.fused_min = fused_min;
          const LoopResult r = run_loop(ex, o);
          const std::string what = "unit " + std::to_string(kind.unit) + " fused " +
                                   std::to_string(kind.launches) + " n " + std::to_string(n) +
                                   " budget " + std::to_string(budget) + " fused_min " +
                                   std::to_string(fused_min);
          ASSERT_EQ(r, plain_loop(finish, kind.unit, budget)) << what;
          for (int64_t i = 0; i < n; ++i) {
            const double steps = static_cast<double>(std::min(finish[i], r.launches * kind.unit));
            ASSERT_EQ(p.t[i], steps) << what << " sample " << i;
            ASSERT_EQ(p.mask[i] != 0, finish[i] <= r.launches * kind.unit) << what;
          }
        }
      }
    }
  }
}

TEST_F(LoopHost, LaddersOfFusedKernelsAgreeWithTheSchedule) {
  // Kernels (by index in SetUpTestSuite) with their launches of the unit-1 kernel, largest
  // first.
  const std::vector<std::vector<std::pair<size_t, int64_t>>> ladders = {
      {{1, 64}, {4, 16}}, {{6, 48}, {5, 8}}, {{4, 16}, {5, 8}}};
  for (const auto& rungs : ladders) {
    for (int64_t n : {int64_t{1}, int64_t{130}, kDefaultSerialThreshold + 100}) {
      for (int64_t budget : {int64_t{7}, int64_t{61}, int64_t{150}, int64_t{1000}}) {
        Planes p = planes(n, 300);
        // Some samples finished before the loop: they keep their values and take no lane.
        for (int64_t i = 0; i < n; i += 5) p.mask[i] = 1;
        std::vector<int64_t> finish(p.limit.begin(), p.limit.end());
        for (int64_t i = 0; i < n; i += 5) finish[i] = 0;
        std::vector<std::shared_ptr<BoundLaunch>> fused;
        std::vector<int64_t> launches;
        for (const auto& [kernel, k] : rungs) {
          fused.push_back(bind(kernel, p));
          launches.push_back(k);
        }
        HostLoop ex({{bind(0, p), {}}}, p.mask.data(), n, *pool_, fused);
        const LoopResult r = run_loop(ex, ladder(budget, launches, 1));
        const std::string what = "ladder " + std::to_string(launches[0]) + " n " +
                                 std::to_string(n) + " budget " + std::to_string(budget);
        ASSERT_EQ(r, plain_loop(finish, 1, budget)) << what;
        for (int64_t i = 0; i < n; ++i) {
          const double steps = static_cast<double>(std::min(finish[i], r.launches));
          ASSERT_EQ(p.t[i], steps) << what << " sample " << i;
          ASSERT_EQ(p.mask[i] != 0, finish[i] <= r.launches) << what;
        }
      }
    }
  }
}

TEST_F(LoopHost, HostStepsRunBetweenLaunchesAndTheMaskIsRecounted) {
  const int64_t n = 100;
  Planes p = planes(n, 50);
  std::vector<int64_t> calls_seen_t;
  // The callback sees sample 1's plane after each kernel launch and, at its 3rd call, finishes
  // every sample itself (as a foreign node writing the mask may).
  int calls = 0;
  const auto node = [&] {
    ++calls;
    calls_seen_t.push_back(static_cast<int64_t>(p.t[1]));  // limit 20
    if (calls == 3) std::fill(p.mask.begin(), p.mask.end(), uint8_t{1});
  };
  HostLoop ex({{bind(0, p), {}}, {nullptr, node}}, p.mask.data(), n, *pool_);
  const LoopResult r = run_loop(ex, options(1000));
  EXPECT_EQ(r, (LoopResult{3, true, 0}));
  EXPECT_EQ(calls, 3);
  EXPECT_EQ(calls_seen_t, (std::vector<int64_t>{1, 2, 3}));
}

TEST_F(LoopHost, KernelErrorsAndBadStepsAreReported) {
  Planes p = planes(4, 3);
  EXPECT_THROW(HostLoop({{nullptr, {}}}, p.mask.data(), 4, *pool_), std::invalid_argument);
  HostLoop ex({{bind(0, p), {}}}, p.mask.data(), 4, *pool_);
  EXPECT_THROW(ex.run_fused(0, 1), std::logic_error);
  const auto thrower = [] { throw std::runtime_error("foreign node failed"); };
  HostLoop failing({{bind(0, p), {}}, {nullptr, thrower}}, p.mask.data(), 4, *pool_);
  EXPECT_THROW(run_loop(failing, options(10)), std::runtime_error);
}

TEST_F(LoopHost, TheDevicePlanOnTheHostMatchesTheHostLoop) {
  // HostDeviceLoop: real kernels, the device's plan and counting; numbers and counts as the
  // host loop's, whatever the variant, with launches past the stop only in whole batches.
  for (const int64_t n : {int64_t{1}, int64_t{777}}) {
    for (const int64_t budget : {int64_t{0}, int64_t{1}, int64_t{100}, int64_t{1000}}) {
      Planes want_p = planes(n, 300);
      HostLoop host({{bind(0, want_p), {}}}, want_p.mask.data(), n, *pool_);
      const LoopResult want = run_loop(host, options(budget));
      for (const auto variant : {LoopStopVariant::While, LoopStopVariant::Batched}) {
        for (const bool overshoot_ok : {true, false}) {
          Planes p = planes(n, 300);
          HostDeviceLoop dev({bind(0, p)}, p.mask.data(), n, *pool_, overshoot_ok, variant);
          const std::string what = "n " + std::to_string(n) + " budget " + std::to_string(budget) +
                                   (variant == LoopStopVariant::While ? " while" : " batched") +
                                   (overshoot_ok ? "" : " exact");
          ASSERT_EQ(dev.run(budget), want) << what;
          ASSERT_EQ(p.t, want_p.t) << what;
          ASSERT_EQ(p.mask, want_p.mask) << what;
          if (variant == LoopStopVariant::While || !overshoot_ok)
            EXPECT_EQ(dev.launches_made(), want.launches) << what;
          else
            EXPECT_GE(dev.launches_made(), want.launches) << what;
        }
      }
    }
  }
  Planes p = planes(3, 3), other = planes(3, 3);
  EXPECT_THROW(HostDeviceLoop({}, p.mask.data(), 3, *pool_, true, LoopStopVariant::While),
               std::invalid_argument);
  // Batches may overshoot only when every step's mask is the loop's.
  EXPECT_TRUE(HostDeviceLoop::overshoot_ok({bind(0, p)}, p.mask.data()));
  EXPECT_FALSE(HostDeviceLoop::overshoot_ok({bind(0, p), bind(0, other)}, p.mask.data()));
}

// ---------------------------------------------------------------------------------------------
// The device plan

bool power_of_two(int64_t k) { return k > 0 && (k & (k - 1)) == 0; }

TEST(LoopDevice, BatchesAddUpToTheBudgetInPowersOfTwo) {
  for (int64_t cap : {1, 2, 64, 256}) {
    for (int64_t budget = 0; budget <= 2000; ++budget) {
      const std::vector<int64_t> b = device_batches(budget, cap);
      ASSERT_EQ(std::accumulate(b.begin(), b.end(), int64_t{0}), budget) << cap;
      // Doubling from 1 up to the largest batch, then never growing again.
      const size_t top = std::max_element(b.begin(), b.end()) - b.begin();
      for (size_t i = 0; i < b.size(); ++i) {
        ASSERT_TRUE(power_of_two(b[i]) && b[i] <= cap) << budget << " " << cap;
        if (i <= top) ASSERT_EQ(b[i], int64_t{1} << i) << budget << " " << cap;
        if (i > top) ASSERT_LE(b[i], b[i - 1]) << budget << " " << cap;
      }
      // Few round trips: at most the doubling start, budget / cap full batches, the tail bits.
      ASSERT_LE(static_cast<int64_t>(b.size()), 2 * 9 + budget / cap) << budget;
    }
  }
  EXPECT_EQ(device_batches(100, 64), (std::vector<int64_t>{1, 2, 4, 8, 16, 32, 32, 4, 1}));
  EXPECT_EQ(device_batches(1000, 256),
            (std::vector<int64_t>{1, 2, 4, 8, 16, 32, 64, 128, 256, 256, 128, 64, 32, 8, 1}));
  EXPECT_EQ(device_batches(5, 256, false), (std::vector<int64_t>(5, 1)));
  EXPECT_TRUE(device_batches(0).empty());
  EXPECT_THROW(device_batches(-1), std::invalid_argument);
  EXPECT_THROW(device_batches(10, 48), std::invalid_argument);
  EXPECT_THROW(device_batches(10, 0), std::invalid_argument);
}

// The device loop on the CPU: run_device_loop (the plan CudaLoop runs) over operations whose
// step kernels are FakeLoop launches and whose stop test is its own counting rule
// (loop_stop_update) over the live count. A batch runs whole, with no-op launches after the
// stop; the While loop runs the body while the test says so.
class FakeDeviceOps final : public DeviceLoopOps {
 public:
  explicit FakeDeviceOps(const std::vector<int64_t>& finish) : steps(finish, 1) {}
  void write_counters(const DeviceLoopCounters& c) override { c_ = c; }
  void init_test() override { test(true); }
  void batch(int64_t k) override {
    ++batches;
    for (int64_t j = 0; j < k; ++j) launch();
  }
  void while_loop() override {
    test(true);
    while (!device_stopped(c_)) launch();
  }
  DeviceLoopCounters read_counters() override {
    ++reads;
    return c_;
  }
  FakeLoop steps;
  int64_t batches = 0, reads = 0;

 private:
  void launch() {
    steps.run_sequence_once();
    test(false);
  }
  void test(bool init) { loop_stop_update(c_, static_cast<uint64_t>(steps.live()), init); }
  DeviceLoopCounters c_{};
};

LoopResult simulate_device(const std::vector<int64_t>& finish, int64_t budget, bool batched,
                           int64_t* launches_made, int64_t* reads = nullptr) {
  FakeDeviceOps ops(finish);
  const LoopResult r = run_device_loop(ops, budget, true,
                                       batched ? LoopStopVariant::Batched : LoopStopVariant::While);
  *launches_made = ops.steps.sequence_runs;
  if (reads) *reads = ops.reads;
  return r;
}

TEST(LoopDevice, TheWhileVariantNeedsCuda124AndTheEntryPoints) {
  EXPECT_EQ(device_loop_variant(12040, true), LoopStopVariant::While);
  EXPECT_EQ(device_loop_variant(13000, true), LoopStopVariant::While);
  EXPECT_EQ(device_loop_variant(12030, true), LoopStopVariant::Batched);
  EXPECT_EQ(device_loop_variant(13000, false), LoopStopVariant::Batched);
  EXPECT_EQ(device_loop_variant(0, false), LoopStopVariant::Batched);
}

TEST(LoopDevice, TheWhileVariantReadsTheCountersOnce) {
  int64_t made = 0, reads = 0;
  EXPECT_EQ(simulate_device({5, 70, 300}, 1000, false, &made, &reads), (LoopResult{300, true, 0}));
  EXPECT_EQ(reads, 1);
  EXPECT_EQ(made, 300);
  // Batched: one read after the init test, one per batch up to the one that stops.
  EXPECT_EQ(simulate_device({5, 70, 300}, 1000, true, &made, &reads), (LoopResult{300, true, 0}));
  EXPECT_EQ(reads, 1 + 9);  // 1+2+...+256 = 511 >= 300 after 9 batches
  EXPECT_EQ(made, 511);
  EXPECT_THROW(simulate_device({1}, -1, true, &made), std::invalid_argument);
}

TEST(LoopDevice, SimulatedDeviceLoopsCountLikeTheHost) {
  for (const Case& c : kCases) {
    if (c.unit != 1) continue;
    const LoopResult want = plain_loop(c.finish, 1, c.budget);
    for (bool batched : {false, true}) {
      int64_t made = 0;
      EXPECT_EQ(simulate_device(c.finish, c.budget, batched, &made), want)
          << c.what << (batched ? " batched" : " while");
      EXPECT_GE(made, want.launches) << c.what;
      if (!batched) EXPECT_EQ(made, want.launches) << c.what;  // a WHILE node never overshoots
    }
  }
  for (int64_t last = 1; last <= 300; ++last) {
    int64_t made = 0;
    const LoopResult r = simulate_device({last / 2, last}, 1000, true, &made);
    ASSERT_EQ(r, (LoopResult{last, true, 0})) << last;
    ASSERT_LE(made, std::max<int64_t>(2 * last, last + 15)) << "overshoot past " << last;
  }
}

TEST(LoopDevice, CounterRule) {
  DeviceLoopCounters c = device_counters(3);
  loop_stop_update(c, 5, true);
  EXPECT_FALSE(device_stopped(c));
  loop_stop_update(c, 4, false);
  loop_stop_update(c, 4, false);
  loop_stop_update(c, 2, false);
  EXPECT_TRUE(device_stopped(c));
  EXPECT_EQ(c.budget_out, 1u);
  loop_stop_update(c, 0, false);  // after the stop: counts nothing
  EXPECT_EQ(device_result(c, 3), (LoopResult{3, false, 2}));
  DeviceLoopCounters d = device_counters(10);
  loop_stop_update(d, 2, true);
  loop_stop_update(d, 0, false);
  EXPECT_EQ(d.done_at, 1u);
  EXPECT_EQ(device_result(d, 10), (LoopResult{1, true, 0}));
  DeviceLoopCounters z = device_counters(0);
  loop_stop_update(z, 7, true);
  EXPECT_TRUE(device_stopped(z));
  EXPECT_EQ(device_result(z, 0), (LoopResult{0, false, 7}));
}

TEST(LoopDevice, ResultRefusesBlocksTheTestCannotWrite) {
  DeviceLoopCounters c = device_counters(10);
  loop_stop_update(c, 4, true);
  EXPECT_THROW(device_result(c, 11), std::runtime_error);  // another budget
  DeviceLoopCounters over = c;
  over.launches = 12;
  EXPECT_THROW(device_result(over, 10), std::runtime_error);
  DeviceLoopCounters done = c;
  done.done_at = 3;
  done.launches = 4;
  done.live = 0;
  EXPECT_THROW(device_result(done, 10), std::runtime_error);
  DeviceLoopCounters busy = c;
  busy.blocks_done = 2;
  try {
    device_result(busy, 10);
    FAIL() << "no error";
  } catch (const std::runtime_error& e) {
    EXPECT_NE(std::string(e.what()).find("blocks_done 2"), std::string::npos) << e.what();
  }
  EXPECT_THROW(device_counters(-1), std::invalid_argument);
}

TEST_F(LoopHost, NoopWhenDoneNeedsAMaskAndNoSums) {
  const KernelInterface& tick = built_->kernels.at(0).f64->iface;
  EXPECT_TRUE(noop_when_done(tick, false));
  EXPECT_FALSE(noop_when_done(tick, true));
  using namespace raptor::testing;
  const ir::Kernel scale =
      lowered("def scale(a: Param, u: Scalar, w: Mutable[Scalar]):\n    w = a * u\n",
              {Param("a"), Scalar("u"), MutScalar("w")});
  EXPECT_FALSE(noop_when_done(describe_kernel(scale, codegen::DType::F64).iface, false));
}

TEST(LoopDevice, StopTestGrid) {
  EXPECT_EQ(loop_stop_grid(0), 1);
  EXPECT_EQ(loop_stop_grid(1), 1);
  EXPECT_EQ(loop_stop_grid(kLoopStopBlock * 16), 1);
  EXPECT_EQ(loop_stop_grid(kLoopStopBlock * 16 + 1), 2);
  EXPECT_EQ(loop_stop_grid(int64_t{1} << 40), kLoopStopMaxBlocks);
}

TEST(LoopDevice, StopTestCompilesWithNvrtcInBothVariants) {
  const std::optional<Nvrtc> nvrtc = Nvrtc::open();
  if (!nvrtc) GTEST_SKIP() << "NVRTC is not installed";
  for (LoopStopVariant v : {LoopStopVariant::Batched, LoopStopVariant::While}) {
    const bool is_while = v == LoopStopVariant::While;
    const std::string src = loop_stop_source(v);
    const std::string ptx = nvrtc->compile_ptx(src, "raptor_loop_stop", "compute_80");
    EXPECT_NE(ptx.find(".entry raptor_loop_stop("), std::string::npos) << ptx;
    EXPECT_EQ(ptx.find("cudaGraphSetConditional") != std::string::npos, is_while);
    EXPECT_EQ(ptx.find("raptor_loop_stop_param_5") != std::string::npos, is_while);
    EXPECT_EQ(ptx.find("raptor_loop_stop_param_6"), std::string::npos);
    // The only atomic is the integer ticket; no float atomics.
    EXPECT_NE(ptx.find("atom.global.add.u64"), std::string::npos) << ptx;
    EXPECT_EQ(ptx.find(".f32"), std::string::npos);
    EXPECT_EQ(ptx.find(".f64"), std::string::npos);
    // The counter block's layout and the counting rule come from the C++ header.
    EXPECT_NE(src.find("unsigned long long budget; unsigned long long launches;"),
              std::string::npos);
    EXPECT_NE(src.find("__device__ inline void raptor_loop_update("), std::string::npos);
  }
}

}  // namespace
}  // namespace raptor::runtime
