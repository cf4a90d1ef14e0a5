// Tests for runtime/thread_pool: every chunk once, exceptions, nesting, and dispatch overhead.
#include <gtest/gtest.h>
#include <stdlib.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdio>
#include <stdexcept>
#include <thread>
#include <vector>

#include "runtime/thread_pool.hpp"

namespace raptor::runtime {
namespace {

TEST(RuntimePool, RunsEveryChunkOnce) {
  for (const int threads : {1, 2, 3, 8}) {
    ThreadPool pool(threads);
    EXPECT_EQ(pool.size(), threads);
    for (const int64_t n : {0, 1, 2, 7, 100, 1000}) {
      std::vector<std::atomic<int>> hits(static_cast<size_t>(n));
      std::vector<std::atomic<int>> busy(static_cast<size_t>(threads));
      pool.parallel_for(n, [&](int64_t c, int w) {
        ASSERT_GE(w, 0);
        ASSERT_LT(w, threads);
        EXPECT_EQ(busy[w].fetch_add(1), 0) << "two chunks at once on worker " << w;
        hits[c].fetch_add(1);
        busy[w].fetch_sub(1);
      });
      for (auto& h : hits) EXPECT_EQ(h.load(), 1);
    }
  }
}

TEST(RuntimePool, UsesWorkers) {
  ThreadPool pool(2);
  std::atomic<int> by_worker{0};
  for (int rep = 0; rep < 50 && by_worker.load() == 0; ++rep) {
    pool.parallel_for(64, [&](int64_t, int w) {
      if (w != 0) by_worker.fetch_add(1);
      std::this_thread::sleep_for(std::chrono::microseconds(50));
    });
  }
  EXPECT_GT(by_worker.load(), 0);
}

TEST(RuntimePool, BackToBackMeansALaunchRightAfterTheLastEnded) {
  ThreadPool pool(2);
  EXPECT_FALSE(pool.back_to_back()) << "no launch has ended yet";
  // A call right after a launch ended is back to back; this machine may be preempted between
  // the two, so one of several tries is enough.
  bool quick = false;
  for (int i = 0; i < 20 && !quick; ++i) {
    pool.end_launch();
    quick = pool.back_to_back();
  }
  EXPECT_TRUE(quick);
  std::this_thread::sleep_for(std::chrono::milliseconds(2));
  EXPECT_FALSE(pool.back_to_back()) << "a call 2 ms after the last launch ended is not";
  // Measured from the end: a long launch (2 ms here) followed at once by the next is back to
  // back, however long ago the long one started.
  quick = false;
  for (int i = 0; i < 20 && !quick; ++i) {
    std::this_thread::sleep_for(std::chrono::milliseconds(2));
    pool.end_launch();
    quick = pool.back_to_back();
  }
  EXPECT_TRUE(quick);
}

TEST(RuntimePool, RethrowsLowestFailingChunk) {
  ThreadPool pool(4);
  try {
    pool.parallel_for(1, [](int64_t, int) { throw std::runtime_error("only"); });
    FAIL();
  } catch (const std::runtime_error& e) {
    EXPECT_STREQ(e.what(), "only");
  }
  try {
    pool.parallel_for(4, [](int64_t c, int) {
      if (c == 2 || c == 3) throw std::runtime_error("chunk " + std::to_string(c));
      std::this_thread::sleep_for(std::chrono::milliseconds(5));
    });
    FAIL();
  } catch (const std::runtime_error& e) {
    // Both start (4 chunks, 4 threads); the lowest failing chunk's error is the one reported.
    EXPECT_STREQ(e.what(), "chunk 2");
  }
  // The pool still works afterwards.
  std::atomic<int> n{0};
  pool.parallel_for(10, [&](int64_t, int) { n.fetch_add(1); });
  EXPECT_EQ(n.load(), 10);
}

TEST(RuntimePool, NestedAndConcurrentCallsRunInline) {
  ThreadPool pool(3);
  std::atomic<int> inner{0};
  pool.parallel_for(
      6, [&](int64_t, int) { pool.parallel_for(5, [&](int64_t, int) { inner.fetch_add(1); }); });
  EXPECT_EQ(inner.load(), 30);
  std::atomic<int> total{0};
  {
    std::vector<std::jthread> callers;
    for (int t = 0; t < 3; ++t) {
      callers.emplace_back([&] {
        for (int i = 0; i < 200; ++i) pool.parallel_for(4, [&](int64_t, int) { total++; });
      });
    }
  }
  EXPECT_EQ(total.load(), 3 * 200 * 4);
}

TEST(RuntimePool, ThreadCountFromEnvironment) {
  const char* old = std::getenv("RAPTOR_NUM_THREADS");
  const std::string saved = old ? old : "";
  ::setenv("RAPTOR_NUM_THREADS", "3", 1);
  EXPECT_EQ(ThreadPool().size(), 3);
  EXPECT_EQ(ThreadPool(2).size(), 2);  // the argument wins
  ::setenv("RAPTOR_NUM_THREADS", "lots", 1);
  EXPECT_THROW(ThreadPool(), std::invalid_argument);
  if (old) {
    ::setenv("RAPTOR_NUM_THREADS", saved.c_str(), 1);
  } else {
    ::unsetenv("RAPTOR_NUM_THREADS");
  }
}

// Dispatch overhead: a tiny job (2 chunks) on 2 threads, back to back.
TEST(RuntimePool, DispatchOverhead) {
  ThreadPool pool(2);
  std::atomic<int64_t> sink{0}, by_worker{0}, total{0};
  const auto job = [&](int64_t c, int w) {
    sink.fetch_add(c, std::memory_order_relaxed);
    total.fetch_add(1, std::memory_order_relaxed);
    if (w != 0) by_worker.fetch_add(1, std::memory_order_relaxed);
  };
  for (int i = 0; i < 1000; ++i) pool.parallel_for(2, job);  // warm up
  const int reps = 20000;
  std::vector<double> samples;
  for (int round = 0; round < 5; ++round) {
    const auto t0 = std::chrono::steady_clock::now();
    for (int i = 0; i < reps; ++i) pool.parallel_for(2, job);
    samples.push_back(
        std::chrono::duration<double, std::micro>(std::chrono::steady_clock::now() - t0).count() /
        reps);
  }
  std::sort(samples.begin(), samples.end());
  // After an idle period (workers asleep on the futex).
  double cold = 0;
  for (int i = 0; i < 20; ++i) {
    std::this_thread::sleep_for(std::chrono::milliseconds(2));
    const auto t0 = std::chrono::steady_clock::now();
    pool.parallel_for(2, job);
    cold +=
        std::chrono::duration<double, std::micro>(std::chrono::steady_clock::now() - t0).count();
  }
  std::printf(
      "[ measure ] pool dispatch, 2 threads, 2 tiny chunks: median %.2f us back to back, "
      "%.2f us after 2 ms idle\n",
      samples[samples.size() / 2], cold / 20);
  std::printf("[ measure ]   (chunks run by the worker thread: %.1f%%)\n",
              100.0 * double(by_worker.load()) / double(total.load()));
  EXPECT_LT(samples[0], 1000.0);  // generous: sanitizer builds and loaded machines
}

}  // namespace
}  // namespace raptor::runtime
