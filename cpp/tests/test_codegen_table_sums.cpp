// Tests of TableSum scatter-adds in the host code (codegen/host_driver.cpp): a Table's
// cotangent is a scatter-add of every sample's contribution into the entry it read, and
// samples that share an entry add into one place. So the loops over samples of a kernel
// with a TableSum carry no `#pragma GCC ivdep` / `#pragma omp simd` (a promise that the
// iterations are independent, which AVX-512 code would exploit with gather-add-scatter and
// lose colliding lanes), while kernels without one keep them.
// 1. Emit: the pragmas, per kernel.
// 2. Run: the adjoint of `y = w.at(i) * x` (steps == 1) and of a steps == 3 kernel, built
//    with the default host flags and launched on a thread pool for N around the pool's
//    serial threshold, with every sample on one entry and on a few entries, against the
//    entries' sums in sample order (float64: 1e-12 relative; float32: the float32 products
//    summed in double, rounded once).
#include <gtest/gtest.h>

#include <cmath>
#include <cstdint>
#include <string>
#include <vector>

#include "ad/adjoint.hpp"
#include "codegen/cpp_emitter.hpp"
#include "runtime/build.hpp"
#include "runtime/cache.hpp"
#include "runtime/compiler.hpp"
#include "runtime/launch.hpp"
#include "runtime/thread_pool.hpp"
#include "test_runtime_util.hpp"
#include "test_util_spec.hpp"

namespace raptor::testing {
namespace {

using codegen::DType;

ir::Kernel hit_kernel() {
  return lowered(R"(def hit(w: Table[Scalar], i: Scalar, x: Scalar, y: Mutable[Scalar]):
    y = w.at(i) * x
)",
                 {TableScalar("w"), Scalar("i"), Scalar("x"), MutScalar("y")}, 1, "hit.py", 1);
}

ir::Kernel stepped_hit_kernel() {
  return lowered(R"(def stepped_hit(w: Table[Scalar], i: Scalar, p: Param, y: Mutable[Scalar]):
    y = y * p + w.at(i)
)",
                 {TableScalar("w"), Scalar("i"), Param("p"), MutScalar("y")}, 3, "hit.py", 10);
}

ir::Kernel drag_kernel() {
  return lowered(R"(def drag(v: Vector[3], cd: Param, v_next: Mutable[Vector[3]]):
    v_next = v - cd * norm(v) * v
)",
                 {Vector("v", 3), Param("cd"), MutVector("v_next", 3)}, 1, "drag.py", 1);
}

bool has_table_sum(const ir::Kernel& k) {
  for (const ir::Slot& s : k.slots)
    if (s.kind == ir::SlotKind::TableSum) return true;
  return false;
}

size_t count(const std::string& text, const std::string& what) {
  size_t n = 0;
  for (size_t at = text.find(what); at != std::string::npos; at = text.find(what, at + 1)) ++n;
  return n;
}

// ---------------------------------------------------------------------------------------------
// 1. Emit
// ---------------------------------------------------------------------------------------------

TEST(CodegenTableSums, NoIndependencePromiseAroundScatterAdds) {
  const ir::Kernel adj = optimized(ad::adjoint(hit_kernel(), {"w", "x"}));
  const ir::Kernel sadj = optimized(ad::adjoint(stepped_hit_kernel(), {"w", "y", "p"}));
  ASSERT_TRUE(has_table_sum(adj));
  ASSERT_TRUE(has_table_sum(sadj));
  for (const ir::Kernel* k : {&adj, &sadj}) {
    const std::string code = codegen::emit_cpp({{k, DType::F64, "raptor_k_f64"}});
    EXPECT_EQ(count(code, "#pragma GCC ivdep"), 0u) << code;
    EXPECT_EQ(count(code, "#pragma omp simd"), 0u) << code;
    EXPECT_GE(count(code, "// no ivdep / omp simd: table sums scatter-add"), 1u) << code;
  }
}

TEST(CodegenTableSums, KernelsWithoutTableSumsKeepThePragmas) {
  const ir::Kernel primal = hit_kernel();  // reads a Table, scatters nothing
  const ir::Kernel drag = drag_kernel();
  const ir::Kernel drag_adj = optimized(ad::adjoint(drag_kernel(), {"v", "cd"}));  // a ParamSum
  ASSERT_FALSE(has_table_sum(primal));
  ASSERT_FALSE(has_table_sum(drag_adj));
  EXPECT_EQ(count(codegen::emit_cpp({{&primal, DType::F64, "a"}}), "#pragma GCC ivdep"), 1u);
  EXPECT_EQ(count(codegen::emit_cpp({{&drag, DType::F64, "b"}}), "#pragma GCC ivdep"), 1u);
  // its sums add in fixed lanes (rp_lanes_add), not by an OpenMP SIMD reduction
  const std::string adj_code = codegen::emit_cpp({{&drag_adj, DType::F64, "c"}});
  EXPECT_EQ(count(adj_code, "#pragma GCC ivdep"), 1u);
  EXPECT_EQ(count(adj_code, "#pragma omp simd"), 0u);
  EXPECT_GE(count(adj_code, "rp_lanes_add(ln_"), 1u);
  const ir::Kernel stepped = stepped_hit_kernel();
  EXPECT_EQ(count(codegen::emit_cpp({{&stepped, DType::F64, "d"}}), "#pragma GCC ivdep"), 1u);
}

// ---------------------------------------------------------------------------------------------
// 2. Run
// ---------------------------------------------------------------------------------------------

class CodegenTableSumsRun : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    dir_ = std::make_unique<runtime::testing::TempDir>();
    kernels_ = std::make_unique<std::vector<ir::Kernel>>();
    kernels_->push_back(optimized(ad::adjoint(hit_kernel(), {"w"})));
    kernels_->push_back(optimized(ad::adjoint(stepped_hit_kernel(), {"w", "y"})));
    compiler_ = std::make_unique<runtime::Compiler>(runtime::open_cache_dir(dir_->path().string()));
    std::vector<const ir::Kernel*> ptrs;
    for (const ir::Kernel& k : *kernels_) ptrs.push_back(&k);
    built_ = std::make_unique<runtime::BuildResult>(runtime::build_host(ptrs, *compiler_));
    pool_ = std::make_unique<runtime::ThreadPool>(2);
  }
  static void TearDownTestSuite() {
    pool_.reset();
    built_.reset();
    compiler_.reset();
    kernels_.reset();
    dir_.reset();
  }

  static inline std::unique_ptr<runtime::testing::TempDir> dir_;
  static inline std::unique_ptr<std::vector<ir::Kernel>> kernels_;
  static inline std::unique_ptr<runtime::Compiler> compiler_;
  static inline std::unique_ptr<runtime::BuildResult> built_;
  static inline std::unique_ptr<runtime::ThreadPool> pool_;
};

constexpr int64_t kEntries = 5;

// Entry of sample s: every sample on entry 2, or entries 0, 1, 3 in a scrambled order.
int64_t entry_of(int64_t s, bool one) {
  return one ? 2 : std::vector<int64_t>{0, 1, 3}[(s * 7 + s / 3) % 3];
}

// A positive value in [0.5, 1.5) (no cancellation: relative tolerances mean something).
double value_of(int64_t s, double phase) { return 1.0 + 0.5 * std::sin(0.7 * double(s) + phase); }

// Launches adjoint `k` (of hit, or of stepped_hit with p = 0.5) over n samples in T and
// checks its Table cotangent against the sums in sample order of the contributions: x * y_bar
// (factor 0) or y_bar * factor (factor = 1 + p + p^2).
template <class T>
void check_run(const runtime::KernelEntry& e, const ir::Kernel& k, runtime::ThreadPool& pool,
               int64_t n, bool one, double factor) {
  std::vector<T> ix(n), a(n), b(n), w(kEntries, T(0)), wbar(kEntries, T(NAN));
  for (int64_t s = 0; s < n; ++s) {
    ix[s] = T(entry_of(s, one));
    a[s] = T(value_of(s, 0.0));
    b[s] = T(value_of(s, 1.0));
  }
  std::vector<T> y(n, T(0));
  runtime::Binding bd;
  bd.n = n;
  bd.slots.resize(k.slots.size());
  std::vector<double> want(kEntries, 0.0);
  for (int64_t s = 0; s < n; ++s) {
    // hit: x * y_bar in T; stepped: y_bar * (1 + p + p^2), each step's term in T
    want[entry_of(s, one)] += factor == 0.0 ? double(T(a[s] * b[s])) : double(b[s]) * factor;
  }
  for (size_t s = 0; s < k.slots.size(); ++s) {
    const ir::Slot& sl = k.slots[s];
    runtime::SlotBinding& sb = bd.slots[s];
    if (sl.name == "w") {
      sb.in = w.data();
      sb.table_size = kEntries;
    } else if (sl.name == "i") {
      sb.in = ix.data();
    } else if (sl.name == "x") {
      sb.in = a.data();
    } else if (sl.name == "y_bar") {
      sb.in = b.data();
      if (sl.kind == ir::SlotKind::Mutable) sb.out = b.data();
    } else if (sl.name == "y") {
      sb.in = y.data();
    } else if (sl.name == "p") {
      sb.param = 0.5;
    } else if (sl.name == "w_bar") {
      sb.out = wbar.data();
    } else {
      FAIL() << "unexpected slot " << sl.name << " of " << k.name;
    }
  }
  const runtime::LaunchResult r = runtime::launch(e, bd, &pool);
  ASSERT_TRUE(r.ok()) << r.error;
  for (int64_t j = 0; j < kEntries; ++j) {
    const std::string what = k.name + " n=" + std::to_string(n) + (one ? " one" : " few") +
                             " entry " + std::to_string(j) + (sizeof(T) == 4 ? " f32" : " f64");
    if (sizeof(T) == 8)
      EXPECT_NEAR(double(wbar[j]), want[j], 1e-12 * std::fabs(want[j])) << what;
    else
      EXPECT_NEAR(double(wbar[j]), double(float(want[j])), 1e-6 * std::fabs(want[j])) << what;
  }
}

TEST_F(CodegenTableSumsRun, CotangentIsTheSumOfEveryContribution) {
  const std::vector<int64_t> ns = {1, 3, 17, 64, 65, 1000, 32767, 32768, 32769, 70000};
  for (size_t ki = 0; ki < kernels_->size(); ++ki) {
    const ir::Kernel& k = (*kernels_)[ki];
    for (const int64_t n : ns)
      for (const bool one : {true, false}) {
        check_run<double>(*built_->kernels.at(ki).get(DType::F64), k, *pool_, n, one,
                          ki == 0 ? 0.0 : 1.75);
        check_run<float>(*built_->kernels.at(ki).get(DType::F32), k, *pool_, n, one,
                         ki == 0 ? 0.0 : 1.75);
      }
  }
}

}  // namespace
}  // namespace raptor::testing
