// The hand-written C++ baseline of benchmarks/perf_card.py: the compute limit of the
// performance card's workload on this machine. Damped oscillators, one classical RK4 step at
// a time (benchmarks/kernels.py::card_rk4), each sample stepped until its own step count.
//
//   g++ -O3 -march=native -ffp-contract=off -fno-math-errno -fno-trapping-math -std=c++17
//       -pthread -shared -fPIC card_lanes.cpp -o libcard_lanes.so       (one command line)
//
// and called through ctypes (perf_card.py builds and loads it; see card_lanes_f64 below).
//
// How it runs:
// - SIMD lanes: each thread holds kVectors vectors of the widest the compiler targets
//   (GCC vector extensions: 64 bytes with __AVX512F__, 32 with __AVX2__/__AVX__, else 16),
//   so 4 x kVectors = 16 float64 lanes on AVX2 and 32 on AVX-512 (twice as many float32
//   lanes). Each lane steps one sample; when a sample is done its state is written back and
//   the lane takes the next unfinished sample at once (refill), so no lane steps a finished
//   sample while unfinished ones wait. Several independent vectors per thread hide the
//   latency of the step's dependency chain.
// - Threads: a persistent pool (the calling thread plus threads - 1 workers that spin
//   briefly between calls, then sleep; the call never waits for a worker still asleep),
//   guided dynamic chunking: a thread refilling its lanes takes the next chunk of samples
//   from one shared atomic counter, a 1/(kGuide x threads) share of those left but at least
//   kMinChunk. Each chunk boundary is a cache line of x, v, k that two threads write, and
//   each take moves the counter's line between cores: with fixed chunks of 64 samples two
//   threads ran spread100 at N = 1e5 only 1.15x faster than one (2x with guided chunks). The
//   counter has a cache line of its own; each thread keeps its own copy of the pointers.
// - Arithmetic: the same IEEE operations in the same order as the hawk kernel, with
//   -ffp-contract=off (no FMA), so x and v agree with raptor's bit for bit. Per sample,
//   (-2 zeta) omega and omega omega are computed once at refill (the kernel computes them each
//   step; the values are the same).
//
// Semantics: a sample is stepped at least once and then until k >= nstop (the Terminated
// mask's rule, starting from an unset mask), at most max_steps steps per call; k counts
// steps in the floating-point type, exact below 2^24 in float32.
#include <algorithm>
#include <atomic>
#include <condition_variable>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <functional>
#include <limits>
#include <mutex>
#include <thread>
#include <vector>

namespace {

#if defined(__AVX512F__)
constexpr int kVecBytes = 64;
constexpr const char* kIsa = "avx512f";
#elif defined(__AVX2__)
constexpr int kVecBytes = 32;
constexpr const char* kIsa = "avx2";
#elif defined(__AVX__)
constexpr int kVecBytes = 32;
constexpr const char* kIsa = "avx";
#else
constexpr int kVecBytes = 16;
constexpr const char* kIsa = "sse/neon (16-byte vectors)";
#endif

// Vectors per thread: 4 measured best on a 2-core AVX2 EPYC, one thread, N = 5e4 .. 2e5,
// uniform and spread step counts (2: the step's dependency chain shows, 1.1x slower; 8 and
// 16: 1.05x-1.15x slower, more lane state to load and store, a wider scan at each refill).
constexpr int kVectors = 4;
// Chunks: a 1/(kGuide x threads) share of the samples left, at least kMinChunk samples.
constexpr int64_t kGuide = 4;
constexpr int64_t kMinChunk = 64;

// ------------------------------------------------------------------------------------------
// The persistent pool: run(threads, job) calls job() on the calling thread and offers
// threads - 1 tickets to the workers; a worker that takes one calls job() too. When the
// caller's own job() returns, it withdraws the tickets not taken (a worker asleep does not
// hold the call up: the dynamic chunks leave it nothing to do by then) and waits only for the
// workers that took one. Workers spin about a millisecond after each call, then sleep.

class Pool {
 public:
  ~Pool() {
    {
      std::lock_guard<std::mutex> lock(mutex_);
      stop_.store(true);
      generation_.fetch_add(1);
    }
    wake_.notify_all();
    for (auto& t : workers_) t.join();
  }

  void run(int threads, const std::function<void()>& job) {
    grow(threads - 1);
    if (threads <= 1) {
      job();
      return;
    }
    job_ = &job;
    state_.store(static_cast<uint64_t>(threads - 1), std::memory_order_release);  // tickets
    {
      std::lock_guard<std::mutex> lock(mutex_);
      generation_.fetch_add(1);
    }
    wake_.notify_all();
    job();
    state_.fetch_and(~kTickets, std::memory_order_acq_rel);  // withdraw the tickets left
    while ((state_.load(std::memory_order_acquire) >> 32) != 0) pause();  // workers in job()
  }

 private:
  // state_: the tickets on offer in the low 32 bits, the workers inside job() in the high 32.
  static constexpr uint64_t kTickets = 0xffffffffu;
  static constexpr uint64_t kRunner = uint64_t{1} << 32;

  static void pause() {
#if defined(__x86_64__) || defined(__i386__)
    __builtin_ia32_pause();
#else
    std::this_thread::yield();
#endif
  }

  void grow(int want) {
    while (static_cast<int>(workers_.size()) < want) {
      const uint64_t now = generation_.load();  // before this call's offer
      workers_.emplace_back([this, now] { loop(now); });
    }
  }

  // Takes a ticket when one is on offer (and counts this worker in); false when none is.
  bool take() {
    uint64_t s = state_.load(std::memory_order_acquire);
    while ((s & kTickets) != 0) {
      if (state_.compare_exchange_weak(s, s - 1 + kRunner, std::memory_order_acq_rel)) return true;
    }
    return false;
  }

  void loop(uint64_t seen) {
    for (;;) {
      for (int i = 0; i < 20000 && generation_.load(std::memory_order_acquire) == seen; ++i) pause();
      if (generation_.load(std::memory_order_acquire) == seen) {
        std::unique_lock<std::mutex> lock(mutex_);
        wake_.wait(lock, [&] { return generation_.load() != seen; });
      }
      seen = generation_.load();
      if (stop_.load()) return;
      if (take()) {
        (*job_)();
        state_.fetch_sub(kRunner, std::memory_order_release);
      }
    }
  }

  std::vector<std::thread> workers_;
  std::mutex mutex_;
  std::condition_variable wake_;
  std::atomic<uint64_t> generation_{0};
  std::atomic<uint64_t> state_{0};
  const std::function<void()>* job_ = nullptr;
  std::atomic<bool> stop_{false};
};

Pool& pool() {
  static Pool p;
  return p;
}

// ------------------------------------------------------------------------------------------
// The lanes of one thread.

template <class T>
struct Problem {
  int64_t n;
  const T* omega;
  const T* zeta;
  const T* nstop;
  T* x;
  T* v;
  T* k;
  T dt;
  int64_t max_steps;
  int64_t threads;
  std::atomic<int64_t>* next;
};

// 64-byte aligned and padded: two threads' lanes never share a cache line (the state is
// written every step).
template <class T>
class alignas(64) Lanes {
 public:
  static constexpr int kWidth = kVecBytes / static_cast<int>(sizeof(T));
  static constexpr int kLanes = kWidth * kVectors;
  typedef T V __attribute__((vector_size(kVecBytes)));

  explicit Lanes(const Problem<T>& p) : p_(p) {}  // a copy: no line shared with the counter

  void run() {
    int live = 0;
    for (int lane = 0; lane < kLanes; ++lane) live += refill(lane);
    const T dt = p_.dt;
    const T h = T(0.5) * dt;
    const T dt6 = dt / T(6.0);
    const V hv = V{} + h, dtv = V{} + dt, dt6v = V{} + dt6, two = V{} + T(2.0), one = V{} + T(1.0);
    typedef decltype(X_[0] >= NS_[0]) M;  // a lane: all bits set where true
    while (live > 0) {
      M done[kVectors];
      M any = M{};
      for (int u = 0; u < kVectors; ++u) {
        const V X = X_[u], Vv = V_[u], C1 = C1_[u], C2 = C2_[u];
        // accel(x, v) = ((-2 zeta) omega) v - (omega omega) x, as card_accel computes it.
        const V a1 = C1 * Vv - C2 * X;    // k1v (k1x = v)
        const V v2 = Vv + hv * a1;         // k2x = v + h k1v
        const V x2 = X + hv * Vv;          // x + h k1x
        const V a2 = C1 * v2 - C2 * x2;    // k2v
        const V v3 = Vv + hv * a2;         // k3x = v + h k2v
        const V x3 = X + hv * v2;          // x + h k2x
        const V a3 = C1 * v3 - C2 * x3;    // k3v
        const V v4 = Vv + dtv * a3;        // k4x = v + dt k3v
        const V x4 = X + dtv * v3;         // x + dt k3x
        const V a4 = C1 * v4 - C2 * x4;    // k4v
        X_[u] = X + dt6v * (((Vv + two * v2) + two * v3) + v4);
        V_[u] = Vv + dt6v * (((a1 + two * a2) + two * a3) + a4);
        const V K = K_[u] + one;
        K_[u] = K;
        done[u] = K >= NS_[u];
        any |= done[u];
      }
      if (!any_set(any)) continue;
      // Only the lanes that finished: the set bits of each vector's mask.
      for (int u = 0; u < kVectors; ++u) {
        for (unsigned bits = lane_bits(done[u]); bits != 0; bits &= bits - 1) {
          live -= finish(u * kWidth + __builtin_ctz(bits));
        }
      }
    }
  }

 private:
  template <class M>
  static bool any_set(const M& m) {
    uint64_t bits[sizeof(M) / 8];
    std::memcpy(bits, &m, sizeof(M));
    uint64_t r = 0;
    for (uint64_t b : bits) r |= b;
    return r != 0;
  }

  // Bit j set where lane j of the mask is.
  template <class M>
  static unsigned lane_bits(const M& m) {
    unsigned bits = 0;
    for (int j = 0; j < kWidth; ++j) bits |= static_cast<unsigned>(m[j] != 0) << j;
    return bits;
  }

  // Writes a done lane's sample back and refills the lane; returns 1 when the lane went idle.
  int finish(int lane) {
    const int u = lane / kWidth, j = lane % kWidth;
    const int64_t i = idx_[lane];
    p_.x[i] = X_[u][j];
    p_.v[i] = V_[u][j];
    p_.k[i] = K_[u][j];
    return 1 - refill(lane);
  }

  // Takes the next unfinished sample into `lane`; returns 1 when it got one, 0 when none is
  // left (the lane idles: zero state, an unreachable stop).
  int refill(int lane) {
    const int u = lane / kWidth, j = lane % kWidth;
    if (mine_ == end_) {
      int64_t start = p_.next->load(std::memory_order_relaxed), size = 0;
      do {
        size = std::max(kMinChunk, (p_.n - start) / (kGuide * p_.threads));
      } while (start < p_.n &&
               !p_.next->compare_exchange_weak(start, start + size, std::memory_order_relaxed));
      mine_ = start;
      end_ = std::min(start + size, p_.n);
      if (mine_ >= p_.n) {
        mine_ = end_ = p_.n;
        idx_[lane] = -1;
        X_[u][j] = V_[u][j] = K_[u][j] = C1_[u][j] = C2_[u][j] = T(0);
        NS_[u][j] = std::numeric_limits<T>::infinity();
        return 0;
      }
    }
    const int64_t i = mine_++;
    idx_[lane] = i;
    const T om = p_.omega[i], ze = p_.zeta[i], k0 = p_.k[i];
    X_[u][j] = p_.x[i];
    V_[u][j] = p_.v[i];
    K_[u][j] = k0;
    C1_[u][j] = (T(-2.0) * ze) * om;
    C2_[u][j] = om * om;
    // k counts steps exactly, so "at most max_steps steps" is k >= k0 + max_steps.
    NS_[u][j] = std::min(p_.nstop[i], k0 + static_cast<T>(p_.max_steps));
    return 1;
  }

  const Problem<T> p_;
  V X_[kVectors], V_[kVectors], K_[kVectors], C1_[kVectors], C2_[kVectors], NS_[kVectors];
  int64_t idx_[kLanes];
  int64_t mine_ = 0, end_ = 0;
  char pad_[64] = {};
};

template <class T>
int run_card(int64_t n, const T* omega, const T* zeta, const T* nstop, T* x, T* v, T* k, T dt,
             int64_t max_steps, int threads) {
  if (n <= 0) return 0;
  if (max_steps <= 0) return 0;
  threads = std::max(1, threads);
  alignas(64) std::atomic<int64_t> next{0};  // on a cache line of its own
  alignas(64) const Problem<T> p{n, omega, zeta, nstop, x, v, k, dt, max_steps, threads, &next};
  pool().run(threads, [&] {
    Lanes<T>* lanes = new Lanes<T>(p);  // aligned new (C++17)
    lanes->run();
    delete lanes;
  });
  return 0;
}

}  // namespace

extern "C" {

// Steps every sample as described at the top, in place (x, v, k); returns 0.
int card_lanes_f64(int64_t n, const double* omega, const double* zeta, const double* nstop,
                   double* x, double* v, double* k, double dt, int64_t max_steps, int threads) {
  return run_card<double>(n, omega, zeta, nstop, x, v, k, dt, max_steps, threads);
}

// The same in float32; dt is rounded to float32 first, as the float32 kernel takes its Param.
int card_lanes_f32(int64_t n, const float* omega, const float* zeta, const float* nstop,
                   float* x, float* v, float* k, double dt, int64_t max_steps, int threads) {
  return run_card<float>(n, omega, zeta, nstop, x, v, k, static_cast<float>(dt), max_steps,
                         threads);
}

// The vector ISA and the lanes per thread of each type, e.g. "avx2 f64x16 f32x32".
const char* card_lanes_info() {
  static char buf[96];
  std::snprintf(buf, sizeof buf, "%s f64x%d f32x%d", kIsa, Lanes<double>::kLanes,
                Lanes<float>::kLanes);
  return buf;
}

}  // extern "C"
