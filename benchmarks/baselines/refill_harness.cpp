// A standalone driver for one generated stepping kernel (benchmarks/refill_cost.py builds it):
// the kernel's translation unit is included as it is, called over the samples in `chunks`
// contiguous chunks on one thread as the host runtime calls it (runtime/launch.cpp), timed,
// and, when the source was instrumented with counters (RAPTOR_REFILL_COUNT), its lane-steps,
// periods and samples due are printed too. Start at main().
//
// Build: g++ <raptor's host flags> -std=c++20 -DRAPTOR_KERNEL_TU='"k.cpp"' \
//            -DRAPTOR_KERNEL_FN=raptor_..._f64 -DRAPTOR_T=double [-DRAPTOR_REFILL_COUNT]
// Run:   harness <inputs> <n> <max_steps> <chunks> <warmup> <repeat> <outputs>
// <inputs>: omega, zeta, nstop, x0, v0 as raw RAPTOR_T arrays of n each (perf_card.py's
// make_inputs); <outputs>: x, v, k after the last run, raw. Prints one line of JSON.

#include <algorithm>
#include <chrono>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <vector>

#if defined(RAPTOR_REFILL_COUNT)
// The instrumented source adds to these (refill_cost.py inserts the statements): lane-steps,
// periods, samples due, and clock ticks in the step loops and between periods.
static long long rc_lane_steps = 0, rc_periods = 0, rc_due = 0;
static unsigned long long rc_stepping = 0, rc_between = 0, rc_mark = 0;
#if defined(__x86_64__)
static inline unsigned long long rc_now() { return __builtin_ia32_rdtsc(); }
#else
static inline unsigned long long rc_now() {
  return static_cast<unsigned long long>(std::chrono::steady_clock::now().time_since_epoch().count());
}
#endif
#endif

#include RAPTOR_KERNEL_TU

namespace {

using T = RAPTOR_T;

bool read_all(const char* path, std::vector<T>& into) {
  FILE* f = std::fopen(path, "rb");
  if (f == nullptr) return false;
  const size_t got = std::fread(into.data(), sizeof(T), into.size(), f);
  std::fclose(f);
  return got == into.size();
}

}  // namespace

int main(int argc, char** argv) {
  if (argc != 8) {
    std::fprintf(stderr, "usage: %s <inputs> <n> <max_steps> <chunks> <warmup> <repeat> <outputs>\n", argv[0]);
    return 2;
  }
  const int64_t n = std::atoll(argv[2]);
  const int64_t max_steps = std::atoll(argv[3]);
  const int64_t chunks = std::max<int64_t>(1, std::atoll(argv[4]));
  const int warmup = std::atoi(argv[5]);
  const int repeat = std::max(1, std::atoi(argv[6]));
  std::vector<T> in(static_cast<size_t>(5 * n));
  if (n <= 0 || !read_all(argv[1], in)) {
    std::fprintf(stderr, "%s: cannot read %lld samples of 5 arrays\n", argv[1], static_cast<long long>(n));
    return 2;
  }
  const T* const omega = in.data();
  const T* const zeta = omega + n;
  const T* const nstop = zeta + n;
  const T* const x0 = nstop + n;
  const T* const v0 = x0 + n;
  std::vector<T> x(static_cast<size_t>(n)), v(static_cast<size_t>(n)), k(static_cast<size_t>(n));
  std::vector<uint8_t> mask(static_cast<size_t>(n));
  // The card kernel's slots: omega, zeta, nstop, dt (Param), terminated, x, v, k.
  const double params[8] = {0, 0, 0, 0.01, 0, 0, 0, 0};
  const void* ins[8] = {omega, zeta, nstop, nullptr, nullptr, x.data(), v.data(), k.data()};
  void* outs[8] = {nullptr, nullptr, nullptr, nullptr, nullptr, x.data(), v.data(), k.data()};
  const int64_t len = (n + chunks - 1) / chunks;
  std::vector<double> ms;
  long long finished = 0;
  for (int run = 0; run < warmup + repeat; ++run) {
    std::copy(x0, x0 + n, x.begin());
    std::copy(v0, v0 + n, v.begin());
    std::fill(k.begin(), k.end(), T(0));
    std::fill(mask.begin(), mask.end(), uint8_t{0});
#if defined(RAPTOR_REFILL_COUNT)
    rc_lane_steps = rc_periods = rc_due = 0;
    rc_stepping = rc_between = 0;
#endif
    finished = 0;
    const auto t0 = std::chrono::steady_clock::now();
    for (int64_t b = 0; b < n; b += len) {
      raptor_args a{};
      a.n = n;
      a.begin = b;
      a.end = std::min(n, b + len);
      a.in = ins;
      a.out = outs;
      a.params = params;
      a.mask_in = mask.data();
      a.mask_out = mask.data();
      a.max_steps = max_steps;
      a.n_total = n;
      RAPTOR_KERNEL_FN(&a);
      if (a.error[0] != 0) {
        std::fprintf(stderr, "the kernel reported error %lld\n", static_cast<long long>(a.error[0]));
        return 1;
      }
      finished += a.finished;
    }
    const double took = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    if (run >= warmup) ms.push_back(took * 1e3);
  }
  double sample_steps = 0;
  for (const T s : k) sample_steps += static_cast<double>(s);
  FILE* f = std::fopen(argv[7], "wb");
  if (f == nullptr) return 2;
  std::fwrite(x.data(), sizeof(T), x.size(), f);
  std::fwrite(v.data(), sizeof(T), v.size(), f);
  std::fwrite(k.data(), sizeof(T), k.size(), f);
  std::fclose(f);
  std::string list;
  for (const double t : ms) list += (list.empty() ? "" : ", ") + std::to_string(t);
  std::printf("{\"ms\": [%s], \"sample_steps\": %.0f, \"finished\": %lld", list.c_str(), sample_steps, finished);
#if defined(RAPTOR_REFILL_COUNT)
  std::printf(", \"lane_steps\": %lld, \"periods\": %lld, \"due\": %lld, \"ticks_stepping\": %llu, \"ticks_between\": %llu",
              rc_lane_steps, rc_periods, rc_due, rc_stepping, rc_between);
#endif
  std::printf("}\n");
  return 0;
}
