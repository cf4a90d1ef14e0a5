// The hand-written C++ baseline of benchmarks/stepping.py (issue 12 item 3): the oscillator
// step of benchmarks/kernels.py::osc, stepped until every sample is done, in blocks of 64
// samples whose state lives in local arrays, the blocks shared out to threads. This is what
// eagle.until_done's fused loop should be within 1.5x of.
//
//   g++ -O3 -march=native -std=c++17 -pthread osc_loop.cpp -o osc_loop
//   ./osc_loop <dir> <threads> <repeats>
//
// <dir> holds n.txt (N, dt, c, max_steps) and x, v, t, corr, t_final as raw float64 files
// (written by stepping.py); the program writes x.out, v.out, t.out and prints
// "best_seconds steps" on one line. Each repeat starts from the same inputs.
#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdint>
#include <cstdio>
#include <fstream>
#include <string>
#include <thread>
#include <vector>

namespace {

std::vector<double> read_raw(const std::string& path, int64_t n) {
  std::vector<double> out(static_cast<size_t>(n));
  std::ifstream in(path, std::ios::binary);
  in.read(reinterpret_cast<char*>(out.data()), static_cast<std::streamsize>(n * 8));
  if (!in) {
    std::fprintf(stderr, "osc_loop: cannot read %s\n", path.c_str());
    std::exit(2);
  }
  return out;
}

void write_raw(const std::string& path, const std::vector<double>& v) {
  std::ofstream(path, std::ios::binary)
      .write(reinterpret_cast<const char*>(v.data()), static_cast<std::streamsize>(v.size() * 8));
}

constexpr int kBlock = 64;

// Steps samples [b, b + kBlock) until each is done or max_steps; returns the steps taken.
int step_block(int64_t b, int64_t n, double dt, double c, int max_steps, double* x, double* v,
               double* t, const double* corr, const double* tf) {
  const int m = static_cast<int>(std::min<int64_t>(kBlock, n - b));
  double lx[kBlock], lv[kBlock], lt[kBlock], lc[kBlock], lf[kBlock];
  unsigned char done[kBlock];
  for (int j = 0; j < m; ++j) {
    lx[j] = x[b + j], lv[j] = v[b + j], lt[j] = t[b + j], lc[j] = corr[b + j], lf[j] = tf[b + j];
    done[j] = 0;
  }
  int steps = 0;
  for (; steps < max_steps; ++steps) {
    int live = 0;
    for (int j = 0; j < m; ++j) live += done[j] == 0;
    if (live == 0) break;
#pragma GCC ivdep
    for (int j = 0; j < m; ++j) {
      const double vn = lv[j] + dt * (-lx[j] - c * lv[j] + lc[j] * lv[j]);
      const double xn = lx[j] + dt * lv[j];
      const double tn = lt[j] + dt;
      const bool keep = done[j] != 0;
      lx[j] = keep ? lx[j] : xn;
      lv[j] = keep ? lv[j] : vn;
      lt[j] = keep ? lt[j] : tn;
      done[j] = keep | (tn >= lf[j]);
    }
  }
  for (int j = 0; j < m; ++j) x[b + j] = lx[j], v[b + j] = lv[j], t[b + j] = lt[j];
  return steps;
}

}  // namespace

int main(int argc, char** argv) {
  if (argc != 4) {
    std::fprintf(stderr, "usage: osc_loop <dir> <threads> <repeats>\n");
    return 2;
  }
  const std::string dir = argv[1];
  const int threads = std::max(1, std::atoi(argv[2]));
  const int repeats = std::max(1, std::atoi(argv[3]));
  int64_t n = 0;
  double dt = 0, c = 0;
  int max_steps = 0;
  std::ifstream(dir + "/n.txt") >> n >> dt >> c >> max_steps;
  const auto x0 = read_raw(dir + "/x", n), v0 = read_raw(dir + "/v", n),
             t0 = read_raw(dir + "/t", n);
  const auto corr = read_raw(dir + "/corr", n), tf = read_raw(dir + "/t_final", n);
  std::vector<double> x, v, t;
  double best = 1e300;
  int steps_run = 0;
  for (int r = 0; r < repeats; ++r) {
    x = x0, v = v0, t = t0;
    std::atomic<int64_t> next{0};
    std::atomic<int> most{0};
    const auto start = std::chrono::steady_clock::now();
    auto work = [&] {
      int mine = 0;
      for (int64_t b; (b = next.fetch_add(kBlock)) < n;)
        mine = std::max(mine, step_block(b, n, dt, c, max_steps, x.data(), v.data(), t.data(),
                                         corr.data(), tf.data()));
      int seen = most.load();
      while (mine > seen && !most.compare_exchange_weak(seen, mine)) {
      }
    };
    std::vector<std::thread> pool;
    for (int i = 1; i < threads; ++i) pool.emplace_back(work);
    work();
    for (auto& th : pool) th.join();
    const double s =
        std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
    best = std::min(best, s);
    steps_run = most.load();
  }
  write_raw(dir + "/x.out", x);
  write_raw(dir + "/v.out", v);
  write_raw(dir + "/t.out", t);
  std::printf("%.9f %d\n", best, steps_run);
  return 0;
}
