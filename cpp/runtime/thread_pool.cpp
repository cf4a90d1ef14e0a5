// ThreadPool: generation counter + spin-then-futex-wait dispatch. See thread_pool.hpp.
#include "runtime/thread_pool.hpp"

#include <chrono>
#include <cstdlib>
#include <stdexcept>
#include <string>
#include <utility>

#if defined(__x86_64__) || defined(__i386__)
#include <immintrin.h>
#endif

namespace raptor::runtime {
namespace {

// How long a waiting thread spins before it sleeps on the futex: long enough to catch the next
// launch of a stepping loop (or the end of a short job), short enough not to hold a core when
// the caller goes away. Spinning yields now and then so an oversubscribed machine still runs.
constexpr auto kSpinTime = std::chrono::microseconds(50);

inline void cpu_relax() {
#if defined(__x86_64__) || defined(__i386__)
  _mm_pause();
#elif defined(__aarch64__)
  asm volatile("yield");
#endif
}

// Waits until `a` differs from `old`: spin, then futex wait. Returns the new value.
uint32_t wait_change(const std::atomic<uint32_t>& a, uint32_t old) {
  const auto deadline = std::chrono::steady_clock::now() + kSpinTime;
  for (int i = 1;; ++i) {
    const uint32_t v = a.load(std::memory_order_acquire);
    if (v != old) return v;
    cpu_relax();
    if (i % 64 == 0) {
      if (std::chrono::steady_clock::now() > deadline) break;
      std::this_thread::yield();
    }
  }
  for (;;) {
    a.wait(old, std::memory_order_acquire);
    const uint32_t v = a.load(std::memory_order_acquire);
    if (v != old) return v;
  }
}

}  // namespace

int ThreadPool::default_threads() {
  if (const char* env = std::getenv("RAPTOR_NUM_THREADS"); env != nullptr && *env != 0) {
    char* end = nullptr;
    const long v = std::strtol(env, &end, 10);
    if (end != env && *end == 0 && v >= 1 && v <= 4096) return static_cast<int>(v);
    throw std::invalid_argument(std::string("raptor: RAPTOR_NUM_THREADS='") + env +
                                "' is not a thread count (an integer from 1 to 4096)");
  }
  const unsigned hc = std::thread::hardware_concurrency();
  return hc == 0 ? 1 : static_cast<int>(hc);
}

ThreadPool::ThreadPool(int num_threads) {
  if (num_threads < 0) {
    throw std::invalid_argument("raptor: ThreadPool needs a thread count >= 0 (0: default)");
  }
  const int n = num_threads == 0 ? default_threads() : num_threads;
  workers_.reserve(static_cast<size_t>(n - 1));
  for (int w = 1; w < n; ++w) {
    workers_.emplace_back([this, w](const std::stop_token& st) { worker_loop(st, w); });
  }
}

ThreadPool::~ThreadPool() {
  stopping_.store(true, std::memory_order_release);
  generation_.fetch_add(1, std::memory_order_acq_rel);
  generation_.notify_all();
  workers_.clear();  // joins
}

void ThreadPool::run_chunks(int worker) {
  for (;;) {
    if (cancel_.load(std::memory_order_relaxed)) return;
    const int64_t c = next_.fetch_add(1, std::memory_order_relaxed);
    if (c >= n_chunks_) return;
    try {
      (*fn_)(c, worker);
    } catch (...) {
      const std::lock_guard lock(error_mu_);
      if (!error_ || c < error_chunk_) {
        error_ = std::current_exception();
        error_chunk_ = c;
      }
      cancel_.store(true, std::memory_order_relaxed);
    }
  }
}

void ThreadPool::worker_loop(const std::stop_token& stop, int worker) {
  // Jobs are only published after construction, when generation_ was 0: a worker that starts
  // late must still run the first job.
  uint32_t seen = 0;
  for (;;) {
    seen = wait_change(generation_, seen);
    if (stopping_.load(std::memory_order_acquire) || stop.stop_requested()) return;
    run_chunks(worker);
    if (pending_.fetch_sub(1, std::memory_order_acq_rel) == 1) pending_.notify_one();
  }
}

namespace {
int64_t steady_ns() {
  return std::chrono::duration_cast<std::chrono::nanoseconds>(
             std::chrono::steady_clock::now().time_since_epoch())
      .count();
}
}  // namespace

bool ThreadPool::back_to_back() const {
  const int64_t last = last_end_ns_.load(std::memory_order_relaxed);
  const int64_t half_spin = std::chrono::nanoseconds(kSpinTime).count() / 2;
  return last != 0 && steady_ns() - last < half_spin;
}

void ThreadPool::end_launch() { last_end_ns_.store(steady_ns(), std::memory_order_relaxed); }

void ThreadPool::parallel_for(int64_t n_chunks, const ChunkFn& fn) {
  if (n_chunks <= 0) return;
  std::unique_lock lock(dispatch_, std::try_to_lock);
  if (!lock.owns_lock() || workers_.empty() || n_chunks == 1) {
    // Busy (nested or concurrent use) or nothing to share: run here, in order.
    for (int64_t c = 0; c < n_chunks; ++c) fn(c, 0);
    return;
  }
  fn_ = &fn;
  n_chunks_ = n_chunks;
  next_.store(0, std::memory_order_relaxed);
  cancel_.store(false, std::memory_order_relaxed);
  error_ = nullptr;
  pending_.store(static_cast<uint32_t>(workers_.size()), std::memory_order_relaxed);
  generation_.fetch_add(1, std::memory_order_acq_rel);  // publishes the job
  generation_.notify_all();
  run_chunks(0);
  for (uint32_t p = pending_.load(std::memory_order_acquire); p != 0;
       p = pending_.load(std::memory_order_acquire)) {
    wait_change(pending_, p);
  }
  fn_ = nullptr;
  if (error_) std::rethrow_exception(std::exchange(error_, nullptr));
}

}  // namespace raptor::runtime
