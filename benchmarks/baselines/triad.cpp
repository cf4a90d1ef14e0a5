// A STREAM-like triad, a[i] = b[i] + s * c[i] over float64 arrays, on every core (OpenMP,
// static schedule: each thread always touches the same part, first touch included): the
// memory bandwidth the host launch of a streaming kernel is measured against
// (benchmarks/triad.py, issue 12). Prints the best time of `rounds` calls, in seconds.
//
//   g++ -O3 -march=native -fopenmp triad.cpp -o triad && ./triad 4194304 30
#include <omp.h>

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <memory>

int main(int argc, char** argv) {
  const long n = argc > 1 ? std::atol(argv[1]) : 1L << 22;
  const int rounds = argc > 2 ? std::atoi(argv[2]) : 30;
  auto a = std::make_unique<double[]>(n), b = std::make_unique<double[]>(n),
       c = std::make_unique<double[]>(n);
  const double s = 3.0;
#pragma omp parallel for schedule(static)
  for (long i = 0; i < n; ++i) {
    a[i] = 0.0;
    b[i] = 1.0 + 1e-9 * static_cast<double>(i);
    c[i] = 2.0;
  }
  double best = 1e30;
  for (int r = 0; r < rounds; ++r) {
    const auto t0 = std::chrono::steady_clock::now();
#pragma omp parallel for schedule(static)
    for (long i = 0; i < n; ++i) a[i] = b[i] + s * c[i];
    const double t = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    if (t < best) best = t;
  }
  double check = 0.0;
  for (long i = 0; i < n; i += n / 7 + 1) check += a[i];
  std::printf("%.9f %d %.6f\n", best, omp_get_max_threads(), check);
  return 0;
}
