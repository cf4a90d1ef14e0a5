// An experiment, not a benchmark arm: would a different lane layout bring the performance
// card's "spread 100" cell within 1.25x of perfect compaction? Lanes kept compacted (the live
// ones at the front, moved with AVX-512 compress after each period of R steps; the due ones
// written back; the chunk's next samples copied in contiguously, vectorized), against
// raptor's refilled lanes (fixed lanes, the due ones listed and refilled one by one).
// The card's RK4 in float64, one thread, its own masked step as the dense reference;
// inputs drawn as the card draws them but with std::mt19937_64 (the ratio depends on the
// distribution of step counts, not on the draws). AVX-512 only (the compress instructions).
//
//   g++ -O3 -march=native -mprefer-vector-width=512 -fno-math-errno -fno-trapping-math
//       -ffp-contract=off -fopenmp-simd -std=c++20 card_compacted.cpp -o card_compacted
//   ./card_compacted N S R     # e.g. 1000000 100 4: N samples spread over S steps, periods of R
//
// Measured 2026-12-05 on the Intel Xeon (AVX-512) build machine, N = 1e6, runs of this
// program on a noisy VM: spread 100 at 1.46x-1.71x of its own dense rate with R = 4 (1.52x-2.13x
// with R = 2, 1.59x-1.65x with R = 8), spread 1000 at 1.09x-1.11x (R = 8), spread 10 at 2.95x
// (R = 2). raptor's card on the same machine (two threads): 1.71x-2.05x, 1.14x-1.19x. So the
// compacted layout is not a route to 1.25x at spread 100 either: a sample of 22 steps costs
// about 22 ns of steps here and about 10 ns more to take, idle and write back, in either layout.
// On the AMD EPYC (Zen 4) build machine, 2026-12-05, N = 1e6, three runs each (within 1%):
// spread 100 at 2.03x with R = 8, 1.82x with R = 16, 2.78x with R = 4, 4.4x with R = 2;
// spread 1000 at 1.67x (R = 8): Zen 4's compress into memory is slow. raptor's card there:
// 1.57x-1.93x and 1.14x-1.19x.
// docs/performance.md says what was concluded.
#include <immintrin.h>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <random>
#include <vector>
#include <algorithm>
using T = double;
constexpr int W = 128;
struct Lanes {
  alignas(64) T x[W + 8], v[W + 8], k[W + 8], ns[W + 8], a[W + 8], b[W + 8];  // a = -2 zeta omega, b = omega^2
  alignas(64) int64_t idx[W + 8];
};
static inline void step_masked(Lanes& L, int n, T dt) {
  const T h = T(0.5) * dt, dt6 = dt / T(6.0);
#pragma omp simd
  for (int j = 0; j < n; ++j) {
    const T x = L.x[j], v = L.v[j], a = L.a[j], b = L.b[j];
    const bool live = L.k[j] < L.ns[j];
    const T k1x = v, k1v = a * v - b * x;
    const T k2x = v + h * k1v, k2v = a * (v + h * k1v) - b * (x + h * k1x);
    const T k3x = v + h * k2v, k3v = a * (v + h * k2v) - b * (x + h * k2x);
    const T k4x = v + dt * k3v, k4v = a * (v + dt * k3v) - b * (x + dt * k3x);
    const T xn = x + dt6 * (k1x + T(2) * k2x + T(2) * k3x + k4x);
    const T vn = v + dt6 * (k1v + T(2) * k2v + T(2) * k3v + k4v);
    L.x[j] = live ? xn : x;
    L.v[j] = live ? vn : v;
    L.k[j] = live ? L.k[j] + T(1) : L.k[j];
  }
}
void run(int64_t N, const T* om, const T* ze, const T* nstop, T* X, T* V, T* K, T dt, int R) {
  Lanes L;
  int n = 0;
  int64_t next = 0;
  auto fill = [&]() {
    const int take = (int)std::min<int64_t>(W - n, N - next);
#pragma omp simd
    for (int q = 0; q < take; ++q) {
      const int64_t s = next + q;
      L.x[n + q] = X[s]; L.v[n + q] = V[s]; L.k[n + q] = K[s]; L.ns[n + q] = nstop[s];
      L.a[n + q] = T(-2.0) * ze[s] * om[s]; L.b[n + q] = om[s] * om[s]; L.idx[n + q] = s;
    }
    n += take; next += take;
  };
  fill();
  while (n > 0) {
    for (int r = 0; r < R; ++r) step_masked(L, n, dt);
    // compact: done lanes write back, live ones to the front
    int to = 0;
    for (int j = 0; j < n; j += 8) {
      const int cnt = std::min(8, n - j);
      const __mmask8 valid = (__mmask8)((1u << cnt) - 1);
      const __m512d k = _mm512_loadu_pd(L.k + j), ns = _mm512_loadu_pd(L.ns + j);
      const __mmask8 live = _mm512_mask_cmp_pd_mask(valid, k, ns, _CMP_LT_OQ);
      __mmask8 done = valid & ~live;
      while (done) {
        const int q = __builtin_ctz(done); done &= done - 1;
        const int64_t s = L.idx[j + q];
        X[s] = L.x[j + q]; V[s] = L.v[j + q]; K[s] = L.k[j + q];
      }
      _mm512_mask_compressstoreu_pd(L.x + to, live, _mm512_loadu_pd(L.x + j));
      _mm512_mask_compressstoreu_pd(L.v + to, live, _mm512_loadu_pd(L.v + j));
      _mm512_mask_compressstoreu_pd(L.k + to, live, k);
      _mm512_mask_compressstoreu_pd(L.ns + to, live, ns);
      _mm512_mask_compressstoreu_pd(L.a + to, live, _mm512_loadu_pd(L.a + j));
      _mm512_mask_compressstoreu_pd(L.b + to, live, _mm512_loadu_pd(L.b + j));
      _mm512_mask_compressstoreu_epi64(L.idx + to, live, _mm512_loadu_si512(L.idx + j));
      to += __builtin_popcount(live);
    }
    n = to;
    if (next < N) fill();
  }
}
// ns per sample-step of one cell: N samples, step counts spread over S (or all S), periods of R.
double measure(int64_t N, int S, int R, bool spread) {
  std::mt19937_64 g(1);
  std::uniform_real_distribution<T> u(0, 1);
  std::vector<T> om(N), ze(N), x0(N), v0(N), ns(N), X(N), V(N), K(N);
  double steps = 0;
  for (int64_t i = 0; i < N; ++i) {
    om[i] = 1 + 9 * u(g); ze[i] = 0.01 + 0.19 * u(g); x0[i] = 2 * u(g) - 1; v0[i] = 2 * u(g) - 1;
    const T lo = std::log(S / 100.0), n = spread ? std::ceil(std::exp(lo + u(g) * (std::log((double)S) - lo))) : S;
    ns[i] = std::min<T>(std::max<T>(n, std::max(1, S / 100)), S);
    steps += ns[i];
  }
  double best = 1e9;
  for (int rep = 0; rep < 7; ++rep) {
    std::copy(x0.begin(), x0.end(), X.begin());
    std::copy(v0.begin(), v0.end(), V.begin());
    std::fill(K.begin(), K.end(), 0);
    const auto t0 = std::chrono::steady_clock::now();
    run(N, om.data(), ze.data(), ns.data(), X.data(), V.data(), K.data(), 0.01, R);
    best = std::min(best, std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count());
  }
  for (int64_t i = 0; i < N; ++i)
    if (K[i] != ns[i]) {
      std::printf("wrong step count at sample %ld\n", static_cast<long>(i));
      std::exit(1);
    }
  return best / steps * 1e9;
}

int main(int argc, char** argv) {
  const int64_t N = argc > 1 ? std::atoll(argv[1]) : 1000000;
  const int S = argc > 2 ? std::atoi(argv[2]) : 100;
  const int R = argc > 3 ? std::atoi(argv[3]) : 4;
  const double spread = measure(N, S, R, true), dense = measure(100000, 1000, 32, false);
  std::printf("N=%ld spread %d, periods of %d: %.3f ns per sample-step; dense (N=1e5, 1000 steps each): "
              "%.3f ns; compaction %.2fx\n", static_cast<long>(N), S, R, spread, dense, spread / dense);
}
