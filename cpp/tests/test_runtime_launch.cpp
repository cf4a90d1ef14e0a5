// Tests for runtime/launch: serial and parallel launches agree, sums are reproducible,
// finished counts, active sets and kernel errors; plus a measurement of where splitting pays.
#include <gtest/gtest.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <memory>
#include <random>
#include <thread>
#include <vector>

#include "runtime/compiler.hpp"
#include "runtime/launch.hpp"
#include "runtime/registry.hpp"
#include "tests/test_runtime_util.hpp"

namespace raptor::runtime {
namespace {
using testing::TempDir;

constexpr int64_t kThreshold = kDefaultSerialThreshold;

// Compiles the test kernels once for the whole suite.
class RuntimeLaunch : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    tmp_ = std::make_unique<TempDir>();
    Compiler c(open_cache_dir(tmp_->path().string()));
    module_ = c.compile(testing::kernels_source()).module;
    pool_ = std::make_unique<ThreadPool>(4);
  }
  static void TearDownTestSuite() {
    pool_.reset();
    module_.reset();
    tmp_.reset();
  }
  static KernelEntry entry(KernelEntry (*make)(raptor_kernel_fn, int), const char* sym, int dsz) {
    KernelEntry e = make(module_->symbol(sym), dsz);
    e.module = module_;
    return e;
  }
  static std::unique_ptr<TempDir> tmp_;
  static std::shared_ptr<const Module> module_;
  static std::unique_ptr<ThreadPool> pool_;
};
std::unique_ptr<TempDir> RuntimeLaunch::tmp_;
std::shared_ptr<const Module> RuntimeLaunch::module_;
std::unique_ptr<ThreadPool> RuntimeLaunch::pool_;

const std::vector<int64_t> kSizes = {
    0, 1, 63, 64, 65, kThreshold - 1, kThreshold, kThreshold + 1, 1000000};

template <class T>
std::vector<T> random_plane(int64_t len, unsigned seed, double lo = -1.0, double hi = 1.0) {
  std::mt19937_64 rng(seed);
  std::uniform_real_distribution<double> d(lo, hi);
  std::vector<T> v(static_cast<size_t>(len));
  for (auto& x : v) x = static_cast<T>(d(rng));
  return v;
}

template <class T>
void axpy_case(const KernelEntry& e, ThreadPool* pool, int64_t n) {
  const std::vector<T> x = random_plane<T>(2 * n, 1);
  std::vector<T> y_serial(2 * n, T(-7)), y_par(2 * n, T(-7));
  for (int which = 0; which < 2; ++which) {
    Binding b;
    b.n = n;
    b.slots.resize(4);
    b.slots[0].param = 1.5;
    b.slots[1].in = x.data();
    b.slots[2].param = -0.25;
    std::vector<T>& y = which == 0 ? y_serial : y_par;
    b.slots[3].out = y.data();
    const LaunchResult r = launch(e, b, which == 0 ? nullptr : pool, kThreshold);
    EXPECT_TRUE(r.ok());
    // With the pool: split from the threshold, or from a quarter of it when launches come
    // back to back (as they may here), never below that.
    if (n == 0) {
      EXPECT_EQ(r.chunks, 0);
    } else if (which == 0 || n < kThreshold / 4) {
      EXPECT_EQ(r.chunks, 1) << "n=" << n;
    } else if (n >= kThreshold) {
      EXPECT_GT(r.chunks, 1) << "n=" << n;
    }
  }
  if (n > 0) {
    ASSERT_EQ(std::memcmp(y_serial.data(), y_par.data(), y_par.size() * sizeof(T)), 0) << "n=" << n;
  }
  for (int64_t i = 0; i < 2 * n; i += std::max<int64_t>(1, n / 7)) {
    EXPECT_EQ(y_par[i], static_cast<T>(T(1.5) * x[i] + T(-0.25)));
  }
}

TEST_F(RuntimeLaunch, SerialAndParallelAgree) {
  const KernelEntry e64 = entry(testing::axpy_entry, "axpy_f64", 8);
  const KernelEntry e32 = entry(testing::axpy_entry, "axpy_f32", 4);
  for (const int64_t n : kSizes) {
    axpy_case<double>(e64, pool_.get(), n);
    axpy_case<float>(e32, pool_.get(), n);
  }
}

// The axpy kernel (y = a * x + b over 2 components) bound with a = 1.5, b = 0.
Binding axpy_binding(int64_t n, const std::vector<double>& x, std::vector<double>& y) {
  Binding b;
  b.n = n;
  b.slots.resize(4);
  b.slots[0].param = 1.5;
  b.slots[1].in = x.data();
  b.slots[3].out = y.data();
  return b;
}

// After an idle pause, one launch and then up to 20 in a row: expects the first to run
// serially and returns the most chunks the others were split into (a few tries: this machine
// may be preempted between two launches).
int most_chunks_back_to_back(const KernelEntry& e, const Binding& b, ThreadPool& pool,
                             int64_t threshold) {
  std::this_thread::sleep_for(std::chrono::milliseconds(2));
  EXPECT_EQ(launch(e, b, &pool, threshold).chunks, 1)
      << "a launch after an idle pause runs serially";
  int most = 1;
  for (int i = 0; i < 20 && most == 1; ++i)
    most = std::max(most, launch(e, b, &pool, threshold).chunks);
  return most;
}

TEST_F(RuntimeLaunch, LaunchesBackToBackSplitFromAQuarterOfTheThreshold) {
  const KernelEntry e = entry(testing::axpy_entry, "axpy_f64", 8);
  ThreadPool pool(2);
  const int64_t threshold = 4096, n = threshold / 4;
  std::vector<double> x(2 * n, 1.0), y(2 * n);
  Binding b = axpy_binding(n, x, y);
  EXPECT_EQ(most_chunks_back_to_back(e, b, pool, threshold), 2);
  b.n = n - 64;  // below a quarter: serial even back to back
  for (int i = 0; i < 5; ++i) EXPECT_EQ(launch(e, b, &pool, threshold).chunks, 1);
  EXPECT_TRUE(std::all_of(y.begin(), y.begin() + n, [](double v) { return v == 1.5; }));
}

// A build weighs a kernel's sample-step (runtime/work_weight.hpp): back to back, one of weight
// 16 splits from a sixteenth of the threshold; a one-off launch is not weighed.
TEST_F(RuntimeLaunch, LaunchesBackToBackSplitByTheirWeight) {
  KernelEntry heavy = entry(testing::axpy_entry, "axpy_f64", 8);
  const KernelEntry light = heavy;
  heavy.weight = 16;
  ThreadPool pool(2);
  const int64_t threshold = 4096, n = threshold / 16;  // 256 samples, below a quarter of it
  std::vector<double> x(2 * n, 1.0), y(2 * n);
  Binding b = axpy_binding(n, x, y);
  EXPECT_EQ(most_chunks_back_to_back(heavy, b, pool, threshold), 2);
  for (int i = 0; i < 5; ++i)
    EXPECT_EQ(launch(light, b, &pool, threshold).chunks, 1) << "the same samples unweighed";
  b.n = n - 64;  // below the weighed threshold: serial even back to back
  for (int i = 0; i < 5; ++i) EXPECT_EQ(launch(heavy, b, &pool, threshold).chunks, 1);
  EXPECT_TRUE(std::all_of(y.begin(), y.begin() + n, [](double v) { return v == 1.5; }));
}

// Back to back is measured from the end of the last launch: launches that each run longer
// than the window (about 1 ms here, serially) still split once they follow each other, where
// measuring start to start kept them on one thread for good.
TEST_F(RuntimeLaunch, LongLaunchesBackToBackSplitToo) {
  const KernelEntry e = entry(testing::axpy_entry, "axpy_f64", 8);
  ThreadPool pool(2);
  const int64_t n = int64_t{1} << 18, threshold = 4 * n;
  std::vector<double> x(2 * n, 1.0), y(2 * n);
  const Binding b = axpy_binding(n, x, y);
  EXPECT_EQ(most_chunks_back_to_back(e, b, pool, threshold), 2);
  EXPECT_TRUE(std::all_of(y.begin(), y.end(), [](double v) { return v == 1.5; }));
}

TEST_F(RuntimeLaunch, BindingErrorsAreThrown) {
  const KernelEntry e = entry(testing::axpy_entry, "axpy_f64", 8);
  Binding b;
  b.n = 10;
  b.slots.resize(3);
  EXPECT_THROW(launch(e, b, nullptr), std::invalid_argument);
  const KernelEntry s = entry(testing::sums_entry, "sums_f64", 8);
  b.slots.assign(6, {});
  try {
    launch(s, b, nullptr);
    FAIL();
  } catch (const std::invalid_argument& ex) {
    EXPECT_NE(std::string(ex.what()).find("'ps'"), std::string::npos) << ex.what();
  }
}

struct SumsCase {
  std::vector<double> ps;
  std::vector<double> ts;
  LaunchResult r;
};

template <class T>
SumsCase run_sums(const KernelEntry& e, ThreadPool* pool, int64_t n, int64_t m,
                  const std::vector<T>& x, const std::vector<T>& idx,
                  const int64_t* index = nullptr, int64_t count = -1) {
  std::vector<T> w(2 * m);
  for (int64_t i = 0; i < 2 * m; ++i) w[i] = T(i % 5 + 1);
  std::vector<T> y(n, T(0));
  std::vector<T> ps(1, T(99)), ts(2 * m, T(99));
  Binding b;
  b.n = n;
  b.index = index;
  b.count = count;
  b.slots.resize(6);
  b.slots[0].in = x.data();
  b.slots[1].in = idx.data();
  b.slots[2].in = w.data();
  b.slots[2].table_size = m;
  b.slots[3].out = ps.data();
  b.slots[4].out = ts.data();
  b.slots[5].out = y.data();
  SumsCase out;
  out.r = launch(e, b, pool, kThreshold);
  out.ps.assign(ps.begin(), ps.end());
  out.ts.assign(ts.begin(), ts.end());
  return out;
}

TEST_F(RuntimeLaunch, SumsReproducibleAndCorrect) {
  const KernelEntry e = entry(testing::sums_entry, "sums_f64", 8);
  const int64_t m = 17;
  for (const int64_t n : kSizes) {
    const auto x = random_plane<double>(n, 3);
    auto idx = random_plane<double>(n, 4, 0.0, double(m) - 0.01);
    double want_ps = 0;
    std::vector<double> want_ts(2 * m, 0.0);
    for (int64_t s = 0; s < n; ++s) {
      want_ps += x[s];
      for (int c = 0; c < 2; ++c) want_ts[int64_t(idx[s]) * 2 + c] += x[s] * (c + 1);
    }
    const SumsCase serial = run_sums(e, nullptr, n, m, x, idx);
    const SumsCase par1 = run_sums(e, pool_.get(), n, m, x, idx);
    const SumsCase par2 = run_sums(e, pool_.get(), n, m, x, idx);
    EXPECT_TRUE(par1.r.ok());
    // Bitwise reproducible, and the same bits serially as split over the pool: the chunks
    // of a launch with sums depend on the launch alone.
    EXPECT_EQ(par1.ps, par2.ps) << n;
    EXPECT_EQ(par1.ts, par2.ts) << n;
    EXPECT_EQ(serial.ps, par1.ps) << n;
    EXPECT_EQ(serial.ts, par1.ts) << n;
    EXPECT_EQ(serial.r.chunks, par1.r.chunks) << n;
    // And equal to the serial sum up to rounding.
    const double tol = 1e-12 * (1.0 + double(n));
    EXPECT_NEAR(serial.ps[0], want_ps, tol);
    EXPECT_NEAR(par1.ps[0], want_ps, tol);
    for (int64_t i = 0; i < 2 * m; ++i) EXPECT_NEAR(par1.ts[i], want_ts[i], tol) << i;
  }
  // Launched back to back below the threshold, a kernel with sums runs the same chunks:
  // the same bits as a launch after a pause.
  {
    const int64_t n_small = kThreshold / 2;
    const auto x = random_plane<double>(n_small, 7);
    const auto idx = random_plane<double>(n_small, 8, 0.0, double(m) - 0.01);
    std::this_thread::sleep_for(std::chrono::milliseconds(2));
    const SumsCase first = run_sums(e, pool_.get(), n_small, m, x, idx);
    for (int i = 0; i < 5; ++i) {
      const SumsCase again = run_sums(e, pool_.get(), n_small, m, x, idx);
      EXPECT_EQ(again.r.chunks, first.r.chunks);
      EXPECT_EQ(again.ps, first.ps);
      EXPECT_EQ(again.ts, first.ts);
    }
  }
  // float32 outputs are written as floats.
  const KernelEntry e32 = entry(testing::sums_entry, "sums_f32", 4);
  const int64_t n = 100000;
  const auto x = random_plane<float>(n, 5);
  const auto idx = random_plane<float>(n, 6, 0.0, double(m) - 0.01);
  double want = 0;
  for (const float v : x) want += v;
  const SumsCase f = run_sums(e32, pool_.get(), n, m, x, idx);
  EXPECT_NEAR(f.ps[0], want, 1e-3);
  EXPECT_EQ(f.ps, run_sums(e32, pool_.get(), n, m, x, idx).ps);
}

// Sums have the same bits whatever the thread count (pools of 1 to 5 threads, no pool): the
// chunks and the order their partials are added in depend on the launch alone.
TEST_F(RuntimeLaunch, SumsSameBitsWhateverTheThreadCount) {
  const KernelEntry e = entry(testing::sums_entry, "sums_f64", 8);
  const int64_t m = 7;
  for (const int64_t n : {int64_t{5000}, int64_t{40000}, int64_t{250000}}) {
    const auto x = random_plane<double>(n, 11);
    const auto idx = random_plane<double>(n, 12, 0.0, double(m) - 0.01);
    const SumsCase want = run_sums(e, nullptr, n, m, x, idx);
    EXPECT_GT(want.r.chunks, 1) << n;
    for (int threads = 1; threads <= 5; ++threads) {
      ThreadPool pool(threads);
      const SumsCase got = run_sums(e, &pool, n, m, x, idx);
      EXPECT_EQ(got.ps, want.ps) << n << " on " << threads << " threads";
      EXPECT_EQ(got.ts, want.ts) << n << " on " << threads << " threads";
    }
  }
}

TEST_F(RuntimeLaunch, AccumulateSumsAndLargeTables) {
  const KernelEntry e = entry(testing::sums_entry, "sums_f64", 8);
  const int64_t n = 200000, m = 50000;  // 100k sum elements: combined in parallel
  const auto x = random_plane<double>(n, 7);
  const auto idx = random_plane<double>(n, 8, 0.0, double(m) - 0.01);
  const SumsCase a = run_sums(e, pool_.get(), n, m, x, idx);
  const SumsCase b = run_sums(e, nullptr, n, m, x, idx);
  for (int64_t i = 0; i < 2 * m; ++i) ASSERT_NEAR(a.ts[i], b.ts[i], 1e-12) << i;
  // accumulate_sums adds to what is there.
  std::vector<double> w(2 * m, 1.0), y(n), ps = {10.0}, ts(2 * m, 1.0);
  Binding bd;
  bd.n = n;
  bd.accumulate_sums = true;
  bd.slots.resize(6);
  bd.slots[0].in = x.data();
  bd.slots[1].in = idx.data();
  bd.slots[2].in = w.data();
  bd.slots[2].table_size = m;
  bd.slots[3].out = ps.data();
  bd.slots[4].out = ts.data();
  bd.slots[5].out = y.data();
  launch(e, bd, pool_.get());
  EXPECT_NEAR(ps[0], 10.0 + a.ps[0], 1e-9);
  EXPECT_NEAR(ts[5], 1.0 + a.ts[5], 1e-12);
}

TEST_F(RuntimeLaunch, FinishedCountAndMask) {
  const KernelEntry e = entry(testing::bump_entry, "bump_f64", 8);
  for (const int64_t n : kSizes) {
    for (ThreadPool* pool : {static_cast<ThreadPool*>(nullptr), pool_.get()}) {
      std::vector<double> x(n);
      for (int64_t s = 0; s < n; ++s) x[s] = double(s % 10);  // finishes after 10 - s%10 steps
      std::vector<uint8_t> mask(n, 0);
      uint32_t finished_count = 5;
      Binding b;
      b.n = n;
      b.slots.resize(3);
      b.slots[0].param = 9.5;
      b.slots[1].in = x.data();
      b.slots[1].out = x.data();
      b.mask_in = mask.data();
      b.mask_out = mask.data();
      b.finished_count = &finished_count;
      int64_t total = 0;
      for (int step = 0; step < 12; ++step) total += launch(e, b, pool, kThreshold).finished;
      EXPECT_EQ(total, n);
      EXPECT_EQ(finished_count, uint32_t(5 + n));
      for (int64_t s = 0; s < n; ++s) {
        ASSERT_EQ(mask[s], 1);
        ASSERT_EQ(x[s], 10.0) << s;
      }
    }
  }
}

TEST_F(RuntimeLaunch, ActiveSet) {
  const KernelEntry e = entry(testing::bump_entry, "bump_f64", 8);
  const int64_t n = 3 * kThreshold + 17;
  std::vector<double> x(n);
  for (int64_t s = 0; s < n; ++s) x[s] = double(s % 10);
  std::vector<uint8_t> mask(n, 0);
  for (int64_t s = 0; s < n; s += 3) mask[s] = 1;  // already finished
  std::vector<int64_t> index(n);
  int64_t count = init_active(mask.data(), index.data(), n);
  EXPECT_EQ(count, n - (n + 2) / 3);
  uint32_t fc = 0;
  int steps = 0;
  std::vector<int64_t> counts;
  while (count > 0) {
    Binding b;
    b.n = n;
    b.slots.resize(3);
    b.slots[0].param = 9.5;
    b.slots[1].in = x.data();
    b.slots[1].out = x.data();
    b.mask_in = mask.data();
    b.mask_out = mask.data();
    b.index = index.data();
    b.count = count;
    b.finished_count = &fc;
    launch(e, b, pool_.get(), kThreshold);
    count = compact_active(mask.data(), index.data(), count);
    for (int64_t i = 1; i < count; ++i) ASSERT_LT(index[i - 1], index[i]);  // order kept
    counts.push_back(count);
    ASSERT_LT(++steps, 20);
  }
  EXPECT_EQ(steps, 10);
  EXPECT_EQ(fc, uint32_t(n - (n + 2) / 3));
  for (int64_t s = 0; s < n; ++s) EXPECT_EQ(x[s], s % 3 == 0 ? double(s % 10) : 10.0);
  const uint8_t m2[4] = {0, 1, 0, 1};
  int64_t idx2[3] = {3, 2, 0};
  EXPECT_EQ(compact_active(m2, idx2, 3), 2);
  EXPECT_EQ(idx2[0], 2);
  EXPECT_EQ(idx2[1], 0);
}

TEST_F(RuntimeLaunch, TableIndexErrorsReportLowestSample) {
  const KernelEntry e = entry(testing::sums_entry, "sums_f64", 8);
  const int64_t m = 4;
  for (const int64_t n : {int64_t(100), int64_t(1000000)}) {
    const auto x = random_plane<double>(n, 9);
    std::vector<double> idx(n, 1.0);
    const int64_t bad1 = n * 3 / 4, bad2 = n / 2 + 1;  // in different chunks
    idx[bad1] = 7.0;
    idx[bad2] = -3.0;
    for (ThreadPool* pool : {static_cast<ThreadPool*>(nullptr), pool_.get()}) {
      const SumsCase r = run_sums(e, pool, n, m, x, idx);
      EXPECT_FALSE(r.r.ok());
      EXPECT_EQ(r.r.error, RAPTOR_ERR_TABLE_INDEX);
      EXPECT_EQ(r.r.error_slot, 2);
      EXPECT_EQ(r.r.error_sample, bad2);
      EXPECT_EQ(r.r.error_index, -3);
      Binding b;
      b.slots.resize(6);
      b.slots[2].table_size = m;
      const std::string msg = describe_error(e, b, r.r);
      EXPECT_EQ(msg, "kernel 'sums': table 'w' index -3 is out of range [0, 4) at sample " +
                         std::to_string(bad2));
    }
  }
}

TEST_F(RuntimeLaunch, RegistryRoundTrip) {
  Registry r;
  auto e = std::make_shared<KernelEntry>(entry(testing::axpy_entry, "axpy_f64", 8));
  e->digest = "d1";
  r.add(e->digest, e);
  const auto found = r.find("d1");
  ASSERT_TRUE(found);
  std::vector<double> x = {1, 2, 3, 4}, y(4);
  Binding b;
  b.n = 2;
  b.slots.resize(4);
  b.slots[0].param = 2;
  b.slots[1].in = x.data();
  b.slots[3].out = y.data();
  EXPECT_TRUE(launch(*found, b, nullptr).ok());
  EXPECT_EQ(y, (std::vector<double>{2, 4, 6, 8}));
}

// Where splitting pays: time the memory-bound axpy (float64, 2 components: 32 bytes/sample)
// serially and on the pool for a range of sizes.
TEST_F(RuntimeLaunch, MeasureSerialThreshold) {
  const KernelEntry e = entry(testing::axpy_entry, "axpy_f64", 8);
  ThreadPool pool(0);
  std::printf("[ measure ] axpy f64 (32 B/sample), pool of %d threads\n", pool.size());
  for (const int64_t n : {1024, 4096, 8192, 16384, 32768, 65536, 262144, 1048576}) {
    std::vector<double> x(2 * n, 1.0), y(2 * n);
    const Binding b = axpy_binding(n, x, y);
    double t[2];
    for (int par = 0; par < 2; ++par) {
      const int reps = int(std::max<int64_t>(20, 20000000 / std::max<int64_t>(n, 1)));
      for (int i = 0; i < 5; ++i) launch(e, b, par ? &pool : nullptr, par ? 0 : INT64_MAX);
      const auto t0 = std::chrono::steady_clock::now();
      for (int i = 0; i < reps; ++i) launch(e, b, par ? &pool : nullptr, par ? 0 : INT64_MAX);
      t[par] =
          std::chrono::duration<double, std::micro>(std::chrono::steady_clock::now() - t0).count() /
          reps;
    }
    std::printf("[ measure ]   n=%8lld  serial %9.2f us  parallel %9.2f us  (%.2fx)\n",
                static_cast<long long>(n), t[0], t[1], t[0] / t[1]);
  }
}

}  // namespace
}  // namespace raptor::runtime
