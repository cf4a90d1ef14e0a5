// The generated CUDA kernels RUN here, without a GPU: the CUDA unit of emit_cuda is compiled
// as host C++ against a small emulation of the CUDA built-ins (`kCudaShim`: one std::thread
// per CUDA thread, std::barrier for __syncthreads, std::atomic_ref for the atomics; blocks run
// one after another), and launched with the grid, block and scratch of runtime/cuda_geometry.
// This checks the logic of the CUDA driver (codegen/cuda_driver.cpp) against the reference
// interpreter: the deterministic block sums (ParamSum, TableSum with entries hit by many
// samples, `_finish`), the uniform rounds past the end of the samples, stepping with a mask,
// finished counts, steps_run, a table index error, a loop with `break`/`continue`, and integer
// and bool planes (each slot's buffer in its own element type) with a zero divisor's error,
// long loops (loop regions) with draws and their tangent and adjoint kernels.
// Threads race freely here, so equal bits on repeated runs also say the sums do not depend on
// thread timing. What it does not check: NVRTC's and the GPU's floating-point behaviour (see
// test_cuda_codegen.cpp and the GPU check of issue 9).
#include <gtest/gtest.h>

#include <algorithm>
#include <array>
#include <cmath>
#include <cstring>
#include <string>
#include <vector>

#include "ad/adjoint.hpp"
#include "ad/tangent.hpp"
#include "codegen/cpp_emitter.hpp"
#include "ir/interp.hpp"
#include "runtime/build.hpp"
#include "runtime/cache.hpp"
#include "runtime/compiler.hpp"
#include "runtime/cuda_geometry.hpp"
#include "runtime/random.h"
#include "test_runtime_util.hpp"
#include "test_util_spec.hpp"

namespace raptor {
namespace {

using codegen::DType;
using namespace raptor::testing;

// CUDA's built-ins, emulated on the host, pasted before the generated unit.
constexpr const char* kCudaShim = R"(#include <atomic>
#include <barrier>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <thread>
#include <vector>
#define __global__ __attribute__((visibility("default")))
#define __device__
#define __forceinline__ inline
#define __shared__ static
using std::atan2; using std::cos; using std::exp; using std::fabs; using std::floor;
using std::log; using std::pow; using std::signbit; using std::sin; using std::sqrt;
using std::tan; using std::tanh;
using std::acos; using std::acosh; using std::asin; using std::asinh; using std::atan;
using std::atanh; using std::cbrt; using std::ceil; using std::copysign; using std::cosh;
using std::erf; using std::erfc; using std::exp2; using std::expm1; using std::fma;
using std::fmod; using std::hypot; using std::isfinite; using std::isinf; using std::isnan;
using std::log10; using std::log1p; using std::log2; using std::rint; using std::sinh;
using std::trunc;
struct rp_dim3 { unsigned x = 0, y = 1, z = 1; };
thread_local rp_dim3 threadIdx, blockIdx;
rp_dim3 blockDim, gridDim;
std::barrier<>* rp_bar = nullptr;
std::atomic<int> rp_or[2];
thread_local int rp_or_gen = 0;
inline void __syncthreads() { rp_bar->arrive_and_wait(); }
inline int __syncthreads_or(int p) {
  const int g = rp_or_gen;
  rp_or_gen ^= 1;
  if (p) rp_or[g].fetch_or(1);
  __syncthreads();
  const int r = rp_or[g].load();
  __syncthreads();
  if (threadIdx.x == 0) rp_or[g].store(0);
  return r;
}
inline float __int_as_float(int i) { float f; std::memcpy(&f, &i, 4); return f; }
template <class T, class U> T atomicAdd(T* p, U v) { return std::atomic_ref<T>(*p).fetch_add(static_cast<T>(v)); }
template <class T, class U> T atomicMax(T* p, U v) {
  std::atomic_ref<T> r(*p);
  T old = r.load();
  while (old < static_cast<T>(v) && !r.compare_exchange_weak(old, static_cast<T>(v))) {}
  return old;
}
template <class T, class U> T atomicMin(T* p, U v) {
  std::atomic_ref<T> r(*p);
  T old = r.load();
  while (old > static_cast<T>(v) && !r.compare_exchange_weak(old, static_cast<T>(v))) {}
  return old;
}
inline unsigned long long atomicCAS(unsigned long long* p, unsigned long long cmp, unsigned long long v) {
  std::atomic_ref<unsigned long long>(*p).compare_exchange_strong(cmp, v);
  return cmp;
}
)";

// Runs a kernel over `grid` blocks of `block` threads (appended to the unit): `block` threads
// run the blocks one after another, a barrier between two blocks.
constexpr const char* kCudaLaunch = R"(
extern "C" __attribute__((visibility("default"))) void rp_emu_launch(
    void (*fn)(const raptor_cuda_args), const raptor_cuda_args* a, unsigned grid, unsigned block) {
  gridDim.x = grid;
  blockDim.x = block;
  std::barrier<> bar(block);
  rp_bar = &bar;
  std::vector<std::thread> threads;
  for (unsigned t = 0; t < block; ++t)
    threads.emplace_back([=, &bar] {
      threadIdx.x = t;
      rp_or_gen = 0;
      for (unsigned b = 0; b < grid; ++b) {
        blockIdx.x = b;
        fn(*a);
        bar.arrive_and_wait();
      }
    });
  for (auto& th : threads) th.join();
}
)";

// The generated unit without the NVRTC prelude's typedefs and constants (<cstdint> and
// <cmath> have them).
std::string host_compilable(std::string cuda) {
  for (const char* line :
       {"typedef long long int64_t;\n", "typedef unsigned int uint32_t;\n",
        "typedef int int32_t;\n", "typedef unsigned char uint8_t;\n",
        "typedef unsigned long long uint64_t;\n", "#define NAN __int_as_float(0x7fc00000)\n",
        "#define INFINITY __int_as_float(0x7f800000)\n"}) {
    const size_t at = cuda.find(line);
    if (at != std::string::npos) cuda.erase(at, std::strlen(line));
  }
  return std::string(kCudaShim) + cuda + kCudaLaunch;
}

#include "runtime/abi_cuda.h"

using LaunchFn = void (*)(void (*)(const raptor_cuda_args), const raptor_cuda_args*, unsigned,
                          unsigned);
using KernelFn = void (*)(const raptor_cuda_args);

// One kernel in one dtype, compiled as emulated CUDA and run like a launcher would.
template <class T>
class Emulated {
 public:
  Emulated(const ir::Kernel& k, runtime::Compiler& compiler) : k_(k) {
    const DType d = sizeof(T) == 4 ? DType::F32 : DType::F64;
    entry_ = runtime::describe_kernel(k, d);
    entry_.symbol = codegen::symbol_name(k, d, entry_.digest);
    const std::string cuda = codegen::emit_cuda({{&k, d, entry_.symbol}});
    runtime::CompileOptions opt;
    opt.flags = "-O1 -std=c++20 -pthread";
    module_ = compiler.compile(host_compilable(cuda), opt).module;
    launch_ = reinterpret_cast<LaunchFn>(module_->find("rp_emu_launch"));
    kernel_ = reinterpret_cast<KernelFn>(module_->find(entry_.symbol));
    finish_ = reinterpret_cast<KernelFn>(module_->find(entry_.symbol + "_finish"));
  }

  // A function of the unit by name (null when it has none).
  void* find(const std::string& name) const { return module_->find(name); }

  // Runs the kernel on `b` (the interpreter's layout, which is the ABI's) and writes the
  // results back into it; returns the status words.
  // `max_grid` caps the grid as runtime::cuda_geometry does (a small one reaches samples
  // beyond a full grid cheaply: each emulated block is 256 OS threads meeting at barriers).
  std::vector<unsigned long long> run(ir::InterpBinding& b, int64_t table_entries,
                                      unsigned max_grid = runtime::kCudaMaxGrid) {
    const size_t ns = k_.slots.size();
    // Each slot's buffer in its element type: T, or an integer or bool plane's own.
    std::vector<std::vector<unsigned char>> in(ns), out(ns);
    std::vector<std::array<unsigned char, 8>> params(ns);
    std::vector<int64_t> sizes(ns, 0);
    // A Random slot's 4 words (runtime/interface.hpp): the key and the global index of sample 0.
    const uint32_t rng[4] = {b.rng_key[0], b.rng_key[1], static_cast<uint32_t>(b.sample_base),
                             static_cast<uint32_t>(static_cast<uint64_t>(b.sample_base) >> 32)};
    raptor_cuda_args a{};
    a.n = a.count = b.n;
    a.zero_finished = b.zero_finished ? 1 : 0;
    for (size_t s = 0; s < ns; ++s) {
      const ir::Slot& sl = k_.slots[s];
      in[s] = pack(sl.dtype, b.slots[s].in);
      out[s] = pack(sl.dtype, b.slots[s].out);
      a.in[s] = sl.kind == ir::SlotKind::Random ? static_cast<const void*>(rng) : in[s].data();
      a.out[s] = out[s].data();
      if (sl.kind == ir::SlotKind::Param) {
        const std::vector<unsigned char> cell = pack(sl.dtype, {b.slots[s].in.at(0)});
        std::copy(cell.begin(), cell.end(), params[s].begin());
        a.params[s] = params[s].data();
      }
      // (a scatter target, an in-out TableSum, is its own table)
      if (sl.kind == ir::SlotKind::Table || (sl.kind == ir::SlotKind::TableSum && sl.inout))
        sizes[s] = table_entries;
      a.table_size[s] = sizes[s];
      if (sl.kind == ir::SlotKind::ParamSum || sl.kind == ir::SlotKind::TableSum)
        a.sums[s] = out[s].data();
    }
    const runtime::CudaGeometry g = runtime::cuda_geometry(entry_, a.count, sizes, max_grid);
    std::vector<double> scratch(g.scratch_bytes / sizeof(double) + 1, std::nan(""));
    const auto base = reinterpret_cast<unsigned long long>(scratch.data());
    for (size_t s = 0; s < ns; ++s)
      a.partials[s] = reinterpret_cast<double*>(runtime::cuda_partials_address(g, base, s));
    std::vector<uint8_t> mask = b.mask;
    a.mask_in = mask.data();
    a.mask_out = mask.data();
    std::vector<unsigned long long> status(6, 0);
    a.status = status.data();
    a.grid = g.grid;
    if (g.grid > 0) launch_(kernel_, &a, g.grid, g.block);
    EXPECT_EQ(g.finish, finish_ != nullptr);
    if (g.finish) launch_(finish_, &a, g.finish_grid, g.finish_block);
    for (size_t s = 0; s < ns; ++s) b.slots[s].out = unpack(k_.slots[s].dtype, out[s]);
    b.mask = mask;
    b.finished += static_cast<uint32_t>(status[0]);
    return status;
  }

  // Doubles (the interpreter's layout) as a buffer of `d`'s elements, and back.
  static std::vector<unsigned char> pack(ir::Dtype d, const std::vector<double>& v) {
    std::vector<unsigned char> bytes;
    const auto put = [&](auto x) {
      const auto* p = reinterpret_cast<const unsigned char*>(&x);
      bytes.insert(bytes.end(), p, p + sizeof x);
    };
    for (const double x : v) {
      if (d == ir::Dtype::Int32)
        put(static_cast<int32_t>(x));
      else if (d == ir::Dtype::Int64)
        put(static_cast<int64_t>(x));
      else if (d == ir::Dtype::Bool)
        put(static_cast<uint8_t>(x != 0.0));
      else
        put(static_cast<T>(x));
    }
    return bytes;
  }
  static std::vector<double> unpack(ir::Dtype d, const std::vector<unsigned char>& bytes) {
    std::vector<double> v;
    const auto get = [&](auto zero) {
      for (size_t at = 0; at + sizeof zero <= bytes.size(); at += sizeof zero) {
        decltype(zero) x;
        std::memcpy(&x, bytes.data() + at, sizeof x);
        v.push_back(static_cast<double>(x));
      }
    };
    if (d == ir::Dtype::Int32)
      get(int32_t{});
    else if (d == ir::Dtype::Int64)
      get(int64_t{});
    else if (d == ir::Dtype::Bool)
      get(uint8_t{});
    else
      get(T{});
    return v;
  }

 private:
  const ir::Kernel& k_;
  runtime::KernelEntry entry_;
  std::shared_ptr<const runtime::Module> module_;
  LaunchFn launch_ = nullptr;
  KernelFn kernel_ = nullptr, finish_ = nullptr;
};

// Deterministic pseudo-random values in [lo, hi).
double uniform(uint64_t& state, double lo, double hi) {
  state = state * 6364136223846793005ULL + 1442695040888963407ULL;
  return lo + (hi - lo) * static_cast<double>(state >> 11) / 9007199254740992.0;
}

ir::InterpBinding random_binding(const ir::Kernel& k, int64_t n, int64_t m, uint64_t seed) {
  ir::InterpBinding b = ir::make_binding(k, n, m);
  for (size_t s = 0; s < k.slots.size(); ++s)
    for (double& x : b.slots[s].in) x = uniform(seed, -1.0, 1.0);
  return b;
}

void expect_close(const std::vector<double>& got, const std::vector<double>& want, double tol,
                  const std::string& what) {
  ASSERT_EQ(got.size(), want.size()) << what;
  for (size_t i = 0; i < got.size(); ++i)
    EXPECT_NEAR(got[i], want[i], tol * (1.0 + std::fabs(want[i]))) << what << " [" << i << "]";
}

class CudaEmulated : public ::testing::Test {
 protected:
  runtime::testing::TempDir dir_;
  runtime::Compiler compiler_{runtime::open_cache_dir(dir_.path().string())};
};

ir::Kernel drag() {
  return lowered(R"(def drag(v: Vector[3], cd: Param, v_next: Mutable[Vector[3]]):
    v_next = v - cd * norm(v) * v
)",
                 {Vector("v", 3), Param("cd"), MutVector("v_next", 3)}, 1);
}

template <class T>
void check_param_sum(runtime::Compiler& compiler, double tol) {
  const ir::Kernel k = optimized(ad::adjoint(drag(), {"v", "cd"}));
  Emulated<T> emu(k, compiler);
  // The last count is every block of a full grid and some threads in a second round: a grid
  // capped at kSmallGrid blocks (runtime::cuda_geometry's max_grid), so that the emulation,
  // 256 OS threads meeting at each barrier of each block, runs 17 blocks' rounds and not the
  // 1025 of a full 1024-block grid (16 s alone, about a minute beside other tests).
  constexpr unsigned kSmallGrid = 16;
  const std::vector<int64_t> counts = {0, 1, 1000, kSmallGrid * 256 + 300};
  for (const int64_t n : counts) {
    ir::InterpBinding want = random_binding(k, n, 1, 7);
    ir::InterpBinding got = want, again = want;
    ir::interpret(k, want);
    emu.run(got, 1, kSmallGrid);
    emu.run(again, 1, kSmallGrid);
    for (size_t s = 0; s < k.slots.size(); ++s) {
      expect_close(got.slots[s].out, want.slots[s].out, tol,
                   k.slots[s].name + " n=" + std::to_string(n));
      EXPECT_EQ(got.slots[s].out, again.slots[s].out) << "not the same bits run to run";
    }
  }
}

TEST_F(CudaEmulated, ParamSumMatchesTheInterpreterAndIsTheSameBitsEachRun) {
  check_param_sum<double>(compiler_, 1e-12);
  check_param_sum<float>(compiler_, 1e-5);
}

// hawk.min / hawk.max (a ParamSum whose combine is Min / Max): the block folds and _finish's
// fold in block order against the interpreter, bit for bit (a minimum is exact), with where=,
// finished samples, a NaN, and no sample selected (+inf / -inf).
ir::Kernel extremes() {
  SpecOptions opt;
  return optimized(lower_source(
      R"(def extremes(x: Scalar, c: Scalar, lo: Mutable[Param], hi: Mutable[Param], done: Terminated):
    lo = hawk.min(x * c, where=c > 0.0)
    hi = hawk.max(x)
)",
      {Scalar("x"), Scalar("c"), param_spec("lo", ir::SlotKind::ParamSum),
       param_spec("hi", ir::SlotKind::ParamSum), Terminated("done")},
      with_math({{"hawk", module("hawk")}}), opt));
}

template <class T>
void check_minmax(runtime::Compiler& compiler) {
  const ir::Kernel k = extremes();
  Emulated<T> emu(k, compiler);
  constexpr unsigned kSmallGrid = 16;  // as check_param_sum
  for (const int64_t n : std::vector<int64_t>{0, 1, 1000, kSmallGrid * 256 + 300}) {
    for (const int variant : {0, 1, 2}) {  // plain, a NaN selected, nothing selected
      ir::InterpBinding want = random_binding(k, n, 1, 13);
      want.float32 = std::is_same_v<T, float>;  // the interpreter in the build's arithmetic
      for (int64_t i = 0; i < n; i += 7) want.mask[i] = 1;
      if (variant == 1 && n > 600) want.slots[k.find_slot("x")].in[n - 5] = std::nan("");
      if (variant == 2)
        for (double& c : want.slots[k.find_slot("c")].in) c = -1.0;
      ir::InterpBinding got = want, again = want;
      ir::interpret(k, want);
      emu.run(got, 1, kSmallGrid);
      emu.run(again, 1, kSmallGrid);
      for (const char* name : {"lo", "hi"}) {
        const double w = want.slots[k.find_slot(name)].out.at(0);
        const double g = got.slots[k.find_slot(name)].out.at(0);
        const std::string what = std::string(name) + " n=" + std::to_string(n) + " variant " +
                                 std::to_string(variant);
        if (std::isnan(w))
          EXPECT_TRUE(std::isnan(g)) << what;
        else
          EXPECT_EQ(g, static_cast<double>(static_cast<T>(w))) << what;
        const double a = again.slots[k.find_slot(name)].out.at(0);
        EXPECT_TRUE(std::memcmp(&a, &g, sizeof a) == 0) << what << ": not the same bits";
      }
      if (variant == 2) {
        EXPECT_EQ(got.slots[k.find_slot("lo")].out.at(0), INFINITY);
        if (n == 0) EXPECT_EQ(got.slots[k.find_slot("hi")].out.at(0), -INFINITY);
      }
      if (variant == 1 && n > 600) EXPECT_TRUE(std::isnan(got.slots[k.find_slot("hi")].out.at(0)));
    }
  }
}

TEST_F(CudaEmulated, MinMaxMatchTheInterpreterBitForBit) {
  check_minmax<double>(compiler_);
  check_minmax<float>(compiler_);
}

ir::Kernel lookup() {
  return lowered(R"(def lookup(w: Table[Vector[2]], idx: Scalar, x: Scalar, y: Mutable[Scalar]):
    f = w.at(idx)
    y = f[0] * x + f[1] * w.at(idx + 1.0)[0]
)",
                 {TableVector("w", 2), Scalar("idx"), Scalar("x"), MutScalar("y")}, 1);
}

template <class T>
void check_table_sum(runtime::Compiler& compiler, double tol) {
  const ir::Kernel k = optimized(ad::adjoint(lookup(), {"w", "x"}));
  Emulated<T> emu(k, compiler);
  const int64_t m = 37, n = 5000;  // entries hit by many samples, in many blocks
  ir::InterpBinding want = random_binding(k, n, m, 11);
  size_t idx = 0;
  for (size_t s = 0; s < k.slots.size(); ++s)
    if (k.slots[s].name == "idx") idx = s;
  uint64_t seed = 3;
  for (double& i : want.slots[idx].in) i = std::floor(uniform(seed, 0.0, m - 1));
  ir::InterpBinding got = want, again = want;
  ir::interpret(k, want);
  const auto status = emu.run(got, m);
  emu.run(again, m);
  EXPECT_EQ(status[1], 0u) << "no error";
  for (size_t s = 0; s < k.slots.size(); ++s) {
    expect_close(got.slots[s].out, want.slots[s].out, tol, k.slots[s].name);
    EXPECT_EQ(got.slots[s].out, again.slots[s].out) << "not the same bits run to run";
  }

  // One index out of range: the error names the table, the index and the sample.
  ir::InterpBinding bad = random_binding(k, n, m, 11);
  for (double& i : bad.slots[idx].in) i = 1.0;
  bad.slots[idx].in[4321] = 99.0;
  const auto err = emu.run(bad, m);
  EXPECT_EQ(err[1], static_cast<unsigned long long>(RAPTOR_ERR_TABLE_INDEX));
  EXPECT_EQ(err[3], 99u);
  EXPECT_EQ(err[4], 4321u);
}

TEST_F(CudaEmulated, TableSumMatchesTheInterpreterAndIsTheSameBitsEachRun) {
  check_table_sum<double>(compiler_, 1e-12);
  check_table_sum<float>(compiler_, 1e-5);
}

// hawk.scatter(h)[i] += v (docs/language.md "Scatter-adds"): per-block partial tables added in
// block order onto the bound values by _finish; a Vector target under an `if`.
ir::Kernel scatter_hist() {
  ir::ParamSpec h = TableScalar("h");
  h.kind = ir::SlotKind::TableSum;
  ir::ParamSpec f = TableVector("f", 2);
  f.kind = ir::SlotKind::TableSum;
  return optimized(lower_source(R"(def hist(x: Scalar, w: Scalar, h: Mutable[Table[Scalar]], f: Mutable[Table[Vector[2]]]):
    hawk.scatter(h)[x] += w * w + sin(w)
    if w > 0.0:
        hawk.scatter(f)[x] += vec(w, 2.0 * x)
)",
                                {Scalar("x"), Scalar("w"), h, f},
                                with_math({{"hawk", module("hawk")}}), SpecOptions{}));
}

template <class T>
void check_scatter(runtime::Compiler& compiler, double tol) {
  const ir::Kernel k = scatter_hist();
  Emulated<T> emu(k, compiler);
  const int64_t m = 23, n = 7000;  // entries hit by many samples, in many blocks
  ir::InterpBinding want = random_binding(k, n, m, 5);
  uint64_t seed = 9;
  for (double& i : want.slots[0].in) i = uniform(seed, 0.0, m);  // x: rounded down to 0..m-1
  for (const size_t s : {size_t{2}, size_t{3}}) want.slots[s].out = want.slots[s].in;  // bound values
  ir::InterpBinding got = want, again = want;
  ir::interpret(k, want);
  const auto status = emu.run(got, m);
  emu.run(again, m);
  EXPECT_EQ(status[1], 0u) << "no error";
  for (const size_t s : {size_t{2}, size_t{3}}) {
    expect_close(got.slots[s].out, want.slots[s].out, tol * 1e2, k.slots[s].name);
    EXPECT_EQ(got.slots[s].out, again.slots[s].out) << "not the same bits run to run";
  }
  // An index out of range: the error names the target, the index and the sample.
  ir::InterpBinding bad = want;
  bad.slots[0].in[4321] = 23.5;
  std::vector<double> before = bad.slots[2].out;
  for (double& x : before) x = static_cast<double>(static_cast<T>(x));  // as bound in T
  const auto err = emu.run(bad, m);
  EXPECT_EQ(bad.slots[2].out, before) << "a scatter target is unchanged after an error";
  EXPECT_EQ(err[1], static_cast<unsigned long long>(RAPTOR_ERR_TABLE_INDEX));
  EXPECT_EQ(err[2], 2u);
  EXPECT_EQ(err[3], 23u);
  EXPECT_EQ(err[4], 4321u);
}

TEST_F(CudaEmulated, ScatterMatchesTheInterpreterAndIsTheSameBitsEachRun) {
  check_scatter<double>(compiler_, 1e-12);
  check_scatter<float>(compiler_, 1e-5);
}

TEST_F(CudaEmulated, SteppedMaskedKernelsMatchTheInterpreter) {
  const ir::Kernel osc = stepped_oscillator(8);
  const ir::Kernel tangent = optimized(ad::tangent(osc, {"x", "c"}, true));  // steps unrolled
  for (const ir::Kernel* k : {&osc, &tangent}) {
    Emulated<double> emu(*k, compiler_);
    const int64_t n = 700;
    ir::InterpBinding want = random_binding(*k, n, 1, 5);
    for (size_t s = 0; s < k->slots.size(); ++s) {
      std::vector<double>& in = want.slots[s].in;
      if (k->slots[s].name == "dt") in[0] = 0.1;
      if (k->slots[s].name == "t_final")
        for (int64_t i = 0; i < n; ++i) in[i] = 0.05 + 0.1 * (i % 11);  // 1 to 11 steps
      if (k->slots[s].name == "t") std::fill(in.begin(), in.end(), 0.0);
    }
    for (int64_t i = 0; i < n; i += 13) want.mask[i] = 1;  // finished before the launch
    want.zero_finished = true;
    ir::InterpBinding got = want;
    ir::interpret(*k, want);
    const auto status = emu.run(got, 1);
    for (size_t s = 0; s < k->slots.size(); ++s)
      expect_close(got.slots[s].out, want.slots[s].out, 1e-12, k->name + " " + k->slots[s].name);
    EXPECT_EQ(got.mask, want.mask) << k->name;
    EXPECT_EQ(got.finished, want.finished) << k->name;
    EXPECT_GT(got.finished, 0u) << k->name;
    EXPECT_EQ(status[5], static_cast<unsigned long long>(k->steps))
        << k->name << ": some sample ran all its steps";
  }
}

// A loop with data-dependent `break` and `continue` (unrolled, ir/lower_loop.cpp), a table
// read after the exits, and its adjoint (a TableSum whose contributions stop where a sample
// left the loop): the CUDA unit agrees with the interpreter.
TEST_F(CudaEmulated, LoopWithExitsAndItsAdjointMatchTheInterpreter) {
  const ir::Kernel loop =
      lowered(R"(def walk(w: Table[Scalar], x: Scalar, c: Param, s: Mutable[Scalar]):
    s = 0.0
    for i in range(6):
        if x * i > c:
            continue
        s = s + w.at(i) * x
        if s > 0.5:
            break
)",
              {TableScalar("w"), Scalar("x"), Param("c"), MutScalar("s")}, 1);
  const ir::Kernel adjoint = optimized(ad::adjoint(loop, {"w", "x", "c"}));
  for (const ir::Kernel* k : {&loop, &adjoint}) {
    Emulated<double> emu(*k, compiler_);
    const int64_t n = 900, m = 6;
    ir::InterpBinding want = random_binding(*k, n, m, 17);
    for (size_t s = 0; s < k->slots.size(); ++s)
      if (k->slots[s].name == "c") want.slots[s].in[0] = 0.8;
    ir::InterpBinding got = want;
    ir::interpret(*k, want);
    const auto status = emu.run(got, m);
    EXPECT_EQ(status[1], 0u) << k->name << ": no error";
    for (size_t s = 0; s < k->slots.size(); ++s)
      expect_close(got.slots[s].out, want.slots[s].out, 1e-12, k->name + " " + k->slots[s].name);
  }
}

// Integer and bool planes: an int32 counter carried over steps, an int table index, `//`, `%`
// and int(x), a bool plane; then a zero divisor's error (line and sample in the status).
TEST_F(CudaEmulated, IntPlanesMatchTheInterpreter) {
  SpecOptions opt;
  opt.steps = 3;
  const ir::Kernel k = optimized(lower_source(
      R"(def ints(x: Scalar, w: Table[Scalar], d: Scalar[hawk.int64], on: Scalar[hawk.bool_], m: Param[hawk.int32], n: Mutable[Scalar[hawk.int32]], q: Mutable[Scalar[hawk.int64]], y: Mutable[Scalar]):
    i = int(x * 4.0) % m
    n = n + i if on else n - 1
    q = n // d
    y = w.at(i) * float(q) + x
)",
      {Scalar("x"), TableScalar("w"), with_dtype(Scalar("d"), ir::Dtype::Int64),
       with_dtype(Scalar("on"), ir::Dtype::Bool), with_dtype(Param("m"), ir::Dtype::Int32),
       with_dtype(MutScalar("n"), ir::Dtype::Int32), with_dtype(MutScalar("q"), ir::Dtype::Int64),
       MutScalar("y")},
      with_math({{"int", math("int")}}), opt));
  const int64_t n = 600, m = 5;
  ir::InterpBinding want = random_binding(k, n, m, 9);
  uint64_t seed = 4;
  for (size_t s = 0; s < k.slots.size(); ++s) {
    std::vector<double>& in = want.slots[s].in;
    const std::string& nm = k.slots[s].name;
    if (nm == "m") in[0] = m;
    for (double& v : in) {
      if (nm == "x") v = uniform(seed, 0.0, 5.0);
      if (nm == "d") v = std::floor(uniform(seed, -4.0, 4.0)) + 0.0;
      if (nm == "on") v = uniform(seed, 0.0, 1.0) < 0.5;
      if (nm == "n") v = std::floor(uniform(seed, -20.0, 20.0));
    }
    if (nm == "d")
      for (double& v : in)
        if (v == 0.0) v = 3.0;
  }
  for (const bool f32 : {false, true}) {
    ir::InterpBinding ref = want, got = want;
    ref.float32 = f32;
    ir::interpret(k, ref);
    ASSERT_EQ(ref.error[0], RAPTOR_OK);
    std::vector<unsigned long long> status;
    if (f32) {
      Emulated<float> emu(k, compiler_);
      status = emu.run(got, m);
    } else {
      Emulated<double> emu(k, compiler_);
      status = emu.run(got, m);
    }
    EXPECT_EQ(status[1], 0u);
    for (const char* name : {"n", "q", "y"}) {
      const int s = k.find_slot(name);
      expect_close(got.slots[s].out, ref.slots[s].out, f32 ? 1e-6 : 1e-15, name);
    }
  }
  ir::InterpBinding bad = want;
  bad.slots[k.find_slot("d")].in[123] = 0.0;
  Emulated<double> emu(k, compiler_);
  const auto err = emu.run(bad, m);
  EXPECT_EQ(err[1], static_cast<unsigned long long>(RAPTOR_ERR_INT_DIV_ZERO));
  EXPECT_EQ(err[2], 4u);  // the line of `q = n // d`
  EXPECT_EQ(err[4], 123u);
}

// Draws on the CUDA path: a stepped, masked random walk (the step index of each draw, samples
// past the end of the last round, a sample base as a shard has) and its tangent (the steps
// unrolled into step offsets), against the interpreter: uniform draws bit for bit.
TEST_F(CudaEmulated, RandomDrawsMatchTheInterpreter) {
  const ir::Kernel walk = lowered(
      R"(def walk(sigma: Param, rng: Random, terminated: Terminated, x: Mutable[Scalar], u: Mutable[Scalar]):
    x = x + sigma * rng.normal()
    u = rng.uniform()
    terminated = x > 2.0
)",
      {Param("sigma"), param_spec("rng", ir::SlotKind::Random), Terminated("terminated"),
       MutScalar("x"), MutScalar("u")},
      5);
  const ir::Kernel tangent = optimized(ad::tangent(walk, {"x", "sigma"}, true));
  for (const ir::Kernel* k : {&walk, &tangent}) {
    const int64_t n = 600;
    ir::InterpBinding want = random_binding(*k, n, 1, 9);
    want.rng_key[0] = 3;
    want.rng_key[1] = 0xdeadbeefu;
    want.sample_base = 5000;
    for (int64_t i = 0; i < n; i += 11) want.mask[i] = 1;
    want.zero_finished = true;
    {
      ir::InterpBinding got = want;
      ir::InterpBinding ref = want;
      ir::interpret(*k, ref);
      Emulated<double> emu(*k, compiler_);
      emu.run(got, 1);
      for (size_t s = 0; s < k->slots.size(); ++s)
        expect_close(got.slots[s].out, ref.slots[s].out, 1e-13, k->name + " " + k->slots[s].name);
      EXPECT_EQ(got.slots[k->find_slot("u")].out, ref.slots[k->find_slot("u")].out) << k->name;
      EXPECT_EQ(got.mask, ref.mask) << k->name;
    }
    {
      ir::InterpBinding got = want;
      ir::InterpBinding ref = want;
      ref.float32 = true;
      for (auto& sl : ref.slots)
        for (double& v : sl.in) v = static_cast<double>(static_cast<float>(v));
      got.slots = ref.slots;
      ir::interpret(*k, ref);
      Emulated<float> emu(*k, compiler_);
      emu.run(got, 1);
      EXPECT_EQ(got.slots[k->find_slot("u")].out, ref.slots[k->find_slot("u")].out) << k->name;
      for (size_t s = 0; s < k->slots.size(); ++s)
        expect_close(got.slots[s].out, ref.slots[s].out, 1e-5,
                     k->name + " f32 " + k->slots[s].name);
    }
  }
}

// Long loops (loop regions, ir.hpp's LoopBegin): the CUDA emission's per-thread `for`, with a
// data-dependent break, draws numbered from the iteration, and the derivative kernels (the
// tangent's carried tangents, the adjoint's reverse loop with its checkpoint loops).
TEST_F(CudaEmulated, LongLoopsTheirDrawsAndDerivativesMatchTheInterpreter) {
  const ir::Kernel loop = lowered(
      R"(def grow(x: Scalar, a: Param, rng: Random, y: Mutable[Scalar], n: Mutable[Scalar]):
    s = x
    c = 0.0
    for i in range(6000):
        s = s * a + 0.01 * rng.uniform()
        c = c + 1.0
        if s > 3.0:
            break
    y = s
    n = c
)",
      {Scalar("x"), Param("a"), param_spec("rng", ir::SlotKind::Random), MutScalar("y"),
       MutScalar("n")},
      1);
  const ir::Kernel tangent = optimized(ad::tangent(loop, {"x", "a"}, true));
  const ir::Kernel adjoint = optimized(ad::adjoint(loop, {"x", "a"}));
  for (const ir::Kernel* k : {&loop, &tangent, &adjoint}) {
    const int64_t n = 300;
    ir::InterpBinding want = random_binding(*k, n, 1, 23);
    for (size_t s = 0; s < k->slots.size(); ++s) {
      if (k->slots[s].name == "a") want.slots[s].in[0] = 1.05;
      if (k->slots[s].name == "x")
        for (double& v : want.slots[s].in) v = 1.0 + 0.5 * v;  // 0.5 .. 1.5: 15-40 iterations
    }
    want.rng_key[0] = 11;
    want.rng_key[1] = 12;
    want.sample_base = 40;
    ir::InterpBinding got = want;
    ir::interpret(*k, want);
    Emulated<double> emu(*k, compiler_);
    const auto status = emu.run(got, 1);
    EXPECT_EQ(status[1], 0u) << k->name << ": no error";
    for (size_t s = 0; s < k->slots.size(); ++s)
      expect_close(got.slots[s].out, want.slots[s].out, 1e-12, k->name + " " + k->slots[s].name);
  }
}

// The key step eagle's CUDA bound launches enqueue before each launch of a Random kernel
// (runtime/abi_cuda.h, codegen::kCudaRngAdvanceSymbol): launch n's key block is
// fold_in(key, uint32(n)) with a sample base of 0, as the host's BoundLaunch::run makes it,
// the count carries past 2^32, and the kernel reading that block draws what the interpreter
// draws with launch n's key.
TEST_F(CudaEmulated, RandomKeyStepGivesLaunchNTheHostsKey) {
  const ir::Kernel walk = lowered(
      R"(def walk(sigma: Param, rng: Random, x: Mutable[Scalar]):
    x = x + sigma * rng.normal()
)",
      {Param("sigma"), param_spec("rng", ir::SlotKind::Random), MutScalar("x")}, 1);
  Emulated<double> emu(walk, compiler_);
  using StepFn = void (*)(unsigned int*, unsigned int*);
  const auto step = reinterpret_cast<StepFn>(emu.find(codegen::kCudaRngAdvanceSymbol));
  ASSERT_NE(step, nullptr) << "a unit with a Random kernel defines the key step";
  const rp_key key{7u, 0x9e3779b9u};
  const uint64_t first = 0xFFFFFFFEull;  // the launch count passes 2^32 here
  unsigned int state[4] = {key.k0, key.k1, static_cast<unsigned>(first),
                           static_cast<unsigned>(first >> 32)};
  for (uint64_t n = first; n < first + 4; ++n) {
    unsigned int block[4] = {1u, 2u, 3u, 4u};
    step(state, block);  // blockIdx and threadIdx are 0 here: the one working thread
    const rp_key want = rp_fold_in(key, static_cast<uint32_t>(n));
    EXPECT_EQ(block[0], want.k0) << "launch " << n;
    EXPECT_EQ(block[1], want.k1) << "launch " << n;
    EXPECT_EQ(block[2], 0u);
    EXPECT_EQ(block[3], 0u);
    const uint64_t next = state[2] | static_cast<uint64_t>(state[3]) << 32;
    EXPECT_EQ(next, n + 1);
    EXPECT_EQ(state[0], key.k0);
    EXPECT_EQ(state[1], key.k1);
    // The kernel with this block draws as the interpreter does with launch n's key.
    ir::InterpBinding ref = random_binding(walk, 200, 1, 31);
    ref.rng_key[0] = want.k0;
    ref.rng_key[1] = want.k1;
    ref.sample_base = 0;
    ir::InterpBinding got = ref;
    got.rng_key[0] = block[0];
    got.rng_key[1] = block[1];
    ir::interpret(walk, ref);
    emu.run(got, 1);
    expect_close(got.slots[walk.find_slot("x")].out, ref.slots[walk.find_slot("x")].out, 1e-13,
                 "launch " + std::to_string(n));
  }
  // A unit without a Random kernel has no key step.
  const ir::Kernel plain = lowered(R"(def plain(a: Param, x: Mutable[Scalar]):
    x = a * x
)",
                                   {Param("a"), MutScalar("x")}, 1);
  Emulated<double> none(plain, compiler_);
  EXPECT_EQ(none.find(codegen::kCudaRngAdvanceSymbol), nullptr);
}

}  // namespace
}  // namespace raptor
