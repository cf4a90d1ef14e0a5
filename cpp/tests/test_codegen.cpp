// Tests of the host C++ emitter (codegen/cpp_emitter.hpp) and of building its output
// (runtime/build.hpp):
// 1. Golden files: emit_cpp() of four kernels (a drag step, an oscillator with a Terminated
//    mask, a steps=4 kernel with a Table read and an if/else, and Newton's iteration with a
//    `break`), float64, with a fixed fake
//    digest, compared with cpp/tests/golden/<name>.cpp.
//    To regenerate the goldens after an intended change to the emitter, run
//        RAPTOR_UPDATE_GOLDEN=1 ./raptor_tests --gtest_filter='*Golden*'
//        (RandomCodegen.GoldenRandomWalk too)
//    which rewrites the files instead of comparing, then review the diff.
// 2. Compile and run: build_host() of a few kernels into a temporary cache directory, launched
//    through runtime::launch, compared with the reference interpreter (float64: exact or 1e-15
//    relative; float32: 1e-6 relative).
// 3. Vectorization: a drag step, a masked kernel and an adjoint with sums over samples compiled
//    with the host flags and -fopt-info-vec-optimized; GCC must report every contiguous
//    sample loop as vectorized.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <memory>
#include <sstream>
#include <string>
#include <vector>

#include "ad/adjoint.hpp"
#include "codegen/cpp_emitter.hpp"
#include "ir/interp.hpp"
#include "ir/ir.hpp"
#include "runtime/build.hpp"
#include "runtime/cache.hpp"
#include "runtime/compiler.hpp"
#include "runtime/launch.hpp"
#include "test_runtime_util.hpp"
#include "test_util_spec.hpp"

#ifndef RAPTOR_SOURCE_DIR
#error "RAPTOR_SOURCE_DIR must be defined for the tests (see CMakeLists.txt)"
#endif

namespace raptor::testing {
namespace {

namespace fs = std::filesystem;
using codegen::DType;

constexpr const char* kFakeDigest =
    "0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef";

// ---------------------------------------------------------------------------------------------
// The kernels
// ---------------------------------------------------------------------------------------------

ir::Kernel drag_kernel() {
  return lowered(R"(@hawk.kernel
def drag(v: Vector[3], cd: Param, dt: Param, g: Param, v_next: Mutable[Vector[3]]):
    a = vec(0.0, 0.0, -g) - cd * norm(v) * v
    v_next = v + dt * a
)",
                 {Vector("v", 3), Param("cd"), Param("dt"), Param("g"), MutVector("v_next", 3)}, 1,
                 "examples/drag.py", 10);
}

ir::Kernel oscillator_kernel() {
  return lowered(R"(@hawk.kernel(steps=1)
def oscillator(x: Mutable[Scalar], v: Mutable[Scalar], t: Mutable[Scalar], c: Param, corr: Param,
               dt: Param, t_final: Param, terminated: Terminated):
    vn = v + dt * (-x - c * v + corr * v)
    x = x + dt * v
    v = vn
    t = t + dt
    terminated = t >= t_final
)",
                 {MutScalar("x"), MutScalar("v"), MutScalar("t"), Param("c"), Param("corr"),
                  Param("dt"), Param("t_final"), Terminated("terminated")},
                 1, "examples/oscillator.py", 20);
}

ir::Kernel stepped_table_kernel() {
  return lowered(R"(@hawk.kernel(steps=4)
def stepped(i: Scalar, w: Table[Scalar], rate: Param, y: Mutable[Scalar]):
    f = w.at(i)
    if y > f:
        y = y - rate * f
    else:
        y = y + rate
)",
                 {Scalar("i"), TableScalar("w"), Param("rate"), MutScalar("y")}, 4,
                 "examples/stepped.py", 30);
}

// Matrices and quaternions (docs/language.md): a rigid-body pose, Matrix planes (r, c, N).
ir::Kernel rigid_pose_kernel() {
  return lowered(R"(@hawk.kernel
def rigid_pose(q: Vector[4], w: Vector[3], p: Vector[3], inertia: Matrix[3, 3], dt: Param,
               q_next: Mutable[Vector[4]], x: Mutable[Vector[3]], iw: Mutable[Matrix[3, 3]]):
    q_next = normalize(q + (0.5 * dt) * quat_mul(vec(w[0], w[1], w[2], 0.0), q))
    x = quat_rotate(q_next, p)
    R = quat_to_matrix(q_next)
    iw = R @ inertia @ transpose(R)
)",
                 {Vector("q", 4), Vector("w", 3), Vector("p", 3), Matrix("inertia", 3, 3),
                  Param("dt"), MutVector("q_next", 4), MutVector("x", 3), MutMatrix("iw", 3, 3)},
                 1, "examples/rigid_pose.py", 40);
}

// Newton's iteration to a tolerance: a loop with a data-dependent `break` (unrolled, the
// exit a liveness predicate the assignments select on).
ir::Kernel newton_kernel() {
  return lowered(R"(@hawk.kernel
def newton(a: Scalar, tol: Param, root: Mutable[Scalar]):
    x = a
    for _ in range(3):
        dx = (x * x - a) / (2.0 * x)
        x = x - dx
        if abs(dx) < tol:
            break
    root = x
)",
                 {Scalar("a"), Param("tol"), MutScalar("root")}, 1, "examples/newton.py", 10);
}

// Operators whose conventions differ between C and jax.numpy, for the compile-and-run tests.
ir::Kernel conventions_kernel() {
  return lowered(
      R"(def conventions(x: Scalar, y: Scalar, s: Mutable[Scalar], m: Mutable[Scalar], p: Mutable[Vector[3]]):
    s = sign(x)
    m = minimum(x, y) + maximum(x, y)
    p = vec(x ** 3, x ** -2, x // y + x % y)
)",
      {Scalar("x"), Scalar("y"), MutScalar("s"), MutScalar("m"), MutVector("p", 3)}, 1,
      "conventions.py", 1);
}

// ---------------------------------------------------------------------------------------------
// 1. Golden files
// ---------------------------------------------------------------------------------------------

std::string read_file(const fs::path& p) {
  std::ifstream in(p, std::ios::binary);
  std::ostringstream os;
  os << in.rdbuf();
  return os.str();
}

void check_golden(const std::string& name, const ir::Kernel& k) {
  const std::string symbol = codegen::symbol_name(k, DType::F64, kFakeDigest);
  const std::string code = codegen::emit_cpp({{&k, DType::F64, symbol}});
  const fs::path path = fs::path(RAPTOR_SOURCE_DIR) / "cpp" / "tests" / "golden" / (name + ".cpp");
  const char* update = std::getenv("RAPTOR_UPDATE_GOLDEN");
  if (update != nullptr && std::string(update) == "1") {
    fs::create_directories(path.parent_path());
    std::ofstream(path, std::ios::binary) << code;
    std::printf("rewrote %s\n", path.c_str());
    return;
  }
  ASSERT_TRUE(fs::exists(path)) << path
                                << " is missing; run with RAPTOR_UPDATE_GOLDEN=1 to create it";
  const std::string want = read_file(path);
  if (code == want) return;
  // Point at the first differing line.
  std::istringstream a(code), b(want);
  std::string la, lb;
  int line = 1;
  while (true) {
    const bool ga = static_cast<bool>(std::getline(a, la));
    const bool gb = static_cast<bool>(std::getline(b, lb));
    if (!ga && !gb) break;
    if (!ga || !gb || la != lb) {
      ADD_FAILURE() << "generated code differs from " << path << " at line " << line
                    << ":\n  got:    " << (ga ? la : "<end>")
                    << "\n  golden: " << (gb ? lb : "<end>")
                    << "\n(if the change is intended: RAPTOR_UPDATE_GOLDEN=1 and review the diff)";
      return;
    }
    ++line;
  }
  ADD_FAILURE() << "generated code differs from " << path << " (line endings?)";
}

TEST(CodegenGolden, Drag) { check_golden("drag", drag_kernel()); }
TEST(CodegenGolden, Oscillator) { check_golden("oscillator", oscillator_kernel()); }
TEST(CodegenGolden, SteppedTable) { check_golden("stepped_table", stepped_table_kernel()); }
// A stepping kernel whose samples stop, with 16 steps a launch: 64 lanes refilled every 8
// to 16 steps with the chunk's next sample, its read-only planes copied into the lane, and w * w
// (the same in every step of a sample) computed once when a lane takes its sample
// (codegen/host_driver.cpp, refill_body and lane_invariants).
ir::Kernel refilled_kernel() {
  return lowered(R"(@hawk.kernel(steps=16)
def refilled(t_final: Scalar, w: Scalar, dt: Param, c: Param, terminated: Terminated,
             x: Mutable[Scalar], v: Mutable[Scalar], t: Mutable[Scalar]):
    vn = v + dt * (-(w * w) * x - c * v)
    x = x + dt * v
    v = vn
    t = t + dt
    terminated = t >= t_final
)",
                 {Scalar("t_final"), Scalar("w"), Param("dt"), Param("c"),
                  Terminated("terminated"), MutScalar("x"), MutScalar("v"), MutScalar("t")},
                 16, "examples/refilled.py", 40);
}
TEST(CodegenGolden, RefilledLanes) { check_golden("refilled", refilled_kernel()); }
TEST(CodegenGolden, RigidPose) { check_golden("rigid_pose", rigid_pose_kernel()); }
TEST(CodegenGolden, NewtonWithBreak) { check_golden("newton_break", newton_kernel()); }

// A loop longer than a kernel unrolls: a C++ `for` with its carried values declared before it
// and a `break` on the sample's liveness (ir/lower_loop.cpp, Lowerer::real_loop).
ir::Kernel long_newton_kernel() {
  return lowered(R"(@hawk.kernel
def long_newton(a: Scalar, tol: Param, root: Mutable[Scalar], iters: Mutable[Scalar]):
    x = a
    n = 0.0
    for _ in range(100000):
        dx = (x * x - a) / (2.0 * x)
        x = x - dx
        n = n + 1.0
        if abs(dx) < tol:
            break
    root = x
    iters = n
)",
                 {Scalar("a"), Param("tol"), MutScalar("root"), MutScalar("iters")}, 1,
                 "examples/long_newton.py", 10);
}

TEST(CodegenGolden, LongLoop) { check_golden("long_loop", long_newton_kernel()); }

// Integer planes: an int32 counter (in-out), an int Param, an int table index, `//` with its
// zero-divisor check and int(x) with its conversion check (docs/language.md).
ir::Kernel int_counter_kernel() {
  SpecOptions opt;
  opt.file = "examples/int_counter.py";
  opt.first_line = 30;
  return optimized(
      lower_source(R"(@hawk.kernel(steps=1)
def int_counter(x: Scalar, w: Table[Scalar], m: Param[hawk.int32], n: Mutable[Scalar[hawk.int32]], y: Mutable[Scalar]):
    i = int(x * 4.0) % m
    n = n + 1 if x > w.at(i) else n // 2
    y = float(n) * x
)",
                   {Scalar("x"), TableScalar("w"), with_dtype(Param("m"), ir::Dtype::Int32),
                    with_dtype(MutScalar("n"), ir::Dtype::Int32), MutScalar("y")},
                   with_math({{"int", math("int")}}), opt));  // the builtin int()
}

TEST(CodegenGolden, IntCounter) { check_golden("int_counter", int_counter_kernel()); }

// Per-sample linear algebra (docs/language.md "Linear algebra", ir/lower_linalg.cpp): a 2x2
// solve by LU with partial pivoting (the pivot search and row swap as selects, getrf's int
// info) and a Cholesky factor of A A^T, all straight-line scalar code.
ir::Kernel linalg_kernel() {
  return lowered(R"(@hawk.kernel
def small_solve(A: Matrix[2, 2], b: Vector[2], x: Mutable[Vector[2]], info: Mutable[Scalar[hawk.int32]],
                L: Mutable[Matrix[2, 2]]):
    x, info = solve(A, b)
    L, _ = cholesky(A @ transpose(A))
)",
                 {Matrix("A", 2, 2), Vector("b", 2), MutVector("x", 2),
                  with_dtype(MutScalar("info"), ir::Dtype::Int32), MutMatrix("L", 2, 2)},
                 1, "examples/small_solve.py", 20);
}

TEST(CodegenGolden, SmallSolve) { check_golden("small_solve", linalg_kernel()); }

// Scatter-adds (docs/language.md "Scatter-adds"): each Mutable[Table] an in-out TableSum sized
// by itself; each add a bounds-checked store into the chunk's double partial table (the
// launcher adds the partials onto the bound values), the second under its `if`.
ir::Kernel scatter_kernel() {
  SpecOptions opt;
  opt.file = "examples/hist.py";
  opt.first_line = 10;
  ir::ParamSpec h = TableScalar("h");
  h.kind = ir::SlotKind::TableSum;
  ir::ParamSpec f = TableVector("f", 2);
  f.kind = ir::SlotKind::TableSum;
  return optimized(lower_source(R"(@hawk.kernel
def hist(x: Scalar, w: Scalar, v: Vector[2], h: Mutable[Table[Scalar]], f: Mutable[Table[Vector[2]]]):
    hawk.scatter(h)[x] += w * w
    if w > 0.0:
        hawk.scatter(f)[x] += w * v
)",
                                {Scalar("x"), Scalar("w"), Vector("v", 2), h, f},
                                with_math({{"hawk", module("hawk")}}), opt));
}

TEST(CodegenGolden, Scatter) { check_golden("scatter", scatter_kernel()); }

// hawk.min / hawk.max beside a hawk.sum, one under where= in a kernel with a mask: each an
// accumulator started at +inf / -inf and folded by rp_fold_min / rp_fold_max (pasted once,
// ir/combine.hpp's rule), the live guard and where= choosing the identity for a sample left
// out; the sample loop an OpenMP SIMD reduction of the two (their result is the same in any
// order), the sum added in rp_lanes; the chunk's partials folded at the end.
ir::Kernel extremes_kernel() {
  SpecOptions opt;
  opt.file = "examples/extremes.py";
  opt.first_line = 20;
  return optimized(lower_source(R"(@hawk.kernel
def extremes(x: Scalar, lo: Mutable[Param], hi: Mutable[Param], s: Mutable[Param], done: Terminated):
    lo = hawk.min(x, where=x > 0.0)
    hi = hawk.max(x * x)
    s = hawk.sum(x)
)",
                                {Scalar("x"), param_spec("lo", ir::SlotKind::ParamSum),
                                 param_spec("hi", ir::SlotKind::ParamSum),
                                 param_spec("s", ir::SlotKind::ParamSum), Terminated("done")},
                                with_math({{"hawk", module("hawk")}}), opt));
}

TEST(CodegenGolden, MinMax) { check_golden("minmax", extremes_kernel()); }

TEST(CodegenEmit, SymbolNameAndComments) {
  const ir::Kernel k = drag_kernel();
  EXPECT_EQ(codegen::symbol_name(k, DType::F32, kFakeDigest), "raptor_drag_0123456789abcdef_f32");
  const std::string code = codegen::emit_cpp(
      {{&k, DType::F32, "raptor_drag_x_f32"}, {&k, DType::F64, "raptor_drag_x_f64"}});
  EXPECT_NE(code.find("RAPTOR_EXPORT void raptor_drag_x_f32(raptor_args* a)"), std::string::npos);
  // RP_NARROW: the float64 drag step is bound by its square root (HostWriter::divider_bound).
  EXPECT_NE(code.find("RAPTOR_EXPORT RP_NARROW void raptor_drag_x_f64(raptor_args* a)"),
            std::string::npos);
  EXPECT_NE(code.find("using T = float;"), std::string::npos);
  EXPECT_NE(code.find("// drag.py:12  a = vec(0.0, 0.0, -g) - cd * norm(v) * v"), std::string::npos)
      << code;
  EXPECT_NE(code.find("// drag.py:13  v_next = v + dt * a"), std::string::npos);
}

// ---------------------------------------------------------------------------------------------
// 2. Compile and run against the interpreter
// ---------------------------------------------------------------------------------------------

class CodegenRun : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    dir_ = new runtime::testing::TempDir();
    kernels_ = new std::vector<ir::Kernel>{drag_kernel(), oscillator_kernel(),
                                           stepped_table_kernel(), conventions_kernel(),
                                           refilled_kernel()};
    compiler_ = new runtime::Compiler(runtime::open_cache_dir(dir_->path().string()));
    std::vector<const ir::Kernel*> ptrs;
    for (const ir::Kernel& k : *kernels_) ptrs.push_back(&k);
    try {
      built_ = new runtime::BuildResult(runtime::build_host(ptrs, *compiler_));
    } catch (const std::exception& e) {
      build_error_ = new std::string(e.what());
    }
  }
  static void TearDownTestSuite() {
    delete built_;
    delete build_error_;
    delete compiler_;
    delete kernels_;
    delete dir_;
    built_ = nullptr;
    build_error_ = nullptr;
  }
  void SetUp() override {
    if (build_error_) FAIL() << "build_host failed: " << *build_error_;
    ASSERT_NE(built_, nullptr);
  }

  static const ir::Kernel& kernel(size_t i) { return (*kernels_)[i]; }
  static const runtime::KernelEntry& entry(size_t i, DType d) {
    return *built_->kernels.at(i).get(d);
  }

  static runtime::testing::TempDir* dir_;
  static std::vector<ir::Kernel>* kernels_;
  static runtime::Compiler* compiler_;
  static runtime::BuildResult* built_;
  static std::string* build_error_;
};

runtime::testing::TempDir* CodegenRun::dir_ = nullptr;
std::vector<ir::Kernel>* CodegenRun::kernels_ = nullptr;
runtime::Compiler* CodegenRun::compiler_ = nullptr;
runtime::BuildResult* CodegenRun::built_ = nullptr;
std::string* CodegenRun::build_error_ = nullptr;

// The compiled kernel's results for the inputs of `ib` (interpreter binding, double), in T.
struct Compiled {
  std::vector<std::vector<double>> outs;  // per slot
  std::vector<uint8_t> mask;
  int64_t finished = 0;
  runtime::LaunchResult result;
};

template <class T>
Compiled run_compiled(const ir::Kernel& k, const runtime::KernelEntry& e,
                      const ir::InterpBinding& ib, int64_t stream_bytes = -1,
                      int64_t max_steps = 0) {
  const int64_t n = ib.n;
  std::vector<std::vector<T>> bufs(k.slots.size());
  runtime::Binding b;
  b.n = n;
  b.stream_bytes = stream_bytes;
  b.max_steps = max_steps;
  b.slots.resize(k.slots.size());
  std::vector<uint8_t> mask = ib.mask;
  uint32_t finished = 0;
  for (size_t s = 0; s < k.slots.size(); ++s) {
    const ir::Slot& sl = k.slots[s];
    const ir::InterpSlot& d = ib.slots[s];
    switch (sl.kind) {
      case ir::SlotKind::Param:
        b.slots[s].param = d.in.at(0);
        break;
      case ir::SlotKind::Plane:
        bufs[s].assign(d.in.begin(), d.in.end());
        b.slots[s].in = bufs[s].data();
        break;
      case ir::SlotKind::Mutable:
        bufs[s].assign(static_cast<size_t>(sl.width * n), T(0));
        if (sl.inout) std::copy(d.in.begin(), d.in.end(), bufs[s].begin());
        b.slots[s].out = bufs[s].data();
        if (sl.inout) b.slots[s].in = bufs[s].data();  // in place, as the runtime does
        break;
      case ir::SlotKind::Table:
        bufs[s].assign(d.in.begin(), d.in.end());
        b.slots[s].in = bufs[s].data();
        b.slots[s].table_size = static_cast<int64_t>(d.in.size()) / sl.width;
        break;
      case ir::SlotKind::Terminated:
        b.mask_in = mask.data();
        b.mask_out = mask.data();
        b.finished_count = &finished;
        break;
      default:
        break;
    }
  }
  Compiled c;
  c.result = runtime::launch(e, b, nullptr);
  c.outs.resize(k.slots.size());
  for (size_t s = 0; s < k.slots.size(); ++s)
    if (k.slots[s].kind == ir::SlotKind::Mutable) c.outs[s].assign(bufs[s].begin(), bufs[s].end());
  c.mask = mask;
  c.finished = finished;
  return c;
}

// Rounds every input of `ib` to float (the float32 kernel sees those values).
void round_inputs_to_float(ir::InterpBinding& ib) {
  for (auto& s : ib.slots)
    for (double& v : s.in) v = static_cast<double>(static_cast<float>(v));
}

void compare(const ir::Kernel& k, const ir::InterpBinding& ref, const Compiled& got, double rel,
             const std::string& what) {
  ASSERT_TRUE(got.result.ok()) << what << ": kernel error " << got.result.error;
  for (size_t s = 0; s < k.slots.size(); ++s) {
    if (k.slots[s].kind != ir::SlotKind::Mutable) continue;
    const auto& want = ref.slots[s].out;
    ASSERT_EQ(got.outs[s].size(), want.size());
    for (size_t i = 0; i < want.size(); ++i) {
      const double a = got.outs[s][i], b = want[i];
      if (std::isnan(b)) {
        EXPECT_TRUE(std::isnan(a)) << what << " " << k.slots[s].name << "[" << i << "]";
        continue;
      }
      if (a == b) continue;
      EXPECT_LE(std::fabs(a - b), rel * std::max(std::fabs(b), 1.0))
          << what << ": " << k.slots[s].name << "[" << i << "] compiled " << a << ", interpreter "
          << b;
    }
  }
  EXPECT_EQ(got.mask, ref.mask) << what;
  if (k.has_mask()) {
    EXPECT_EQ(got.finished, static_cast<int64_t>(ref.finished)) << what;
  }
}

// Runs kernel `k` compiled (both dtypes) and interpreted on inputs made by `fill`.
template <class Fill>
void check_kernel(const ir::Kernel& k, const runtime::BuiltKernel& built, int64_t n,
                  int64_t table_entries, Fill fill) {
  for (DType d : {DType::F64, DType::F32}) {
    ir::InterpBinding ib = ir::make_binding(k, n, table_entries);
    fill(k, ib);
    if (d == DType::F32) round_inputs_to_float(ib);
    const ir::InterpBinding inputs = ib;
    ir::interpret(k, ib);
    const Compiled c = d == DType::F64 ? run_compiled<double>(k, *built.get(d), inputs)
                                       : run_compiled<float>(k, *built.get(d), inputs);
    compare(k, ib, c, d == DType::F64 ? 1e-15 : 1e-6, k.name + " " + codegen::dtype_name(d));
  }
}

// Refilled lanes (16 steps a launch) against the interpreter (float64: the same bits): samples that
// finish in the first period, in a later one, in no period (the launch's budget ends them),
// samples finished on entry, and budgets of the launch (raptor_args::max_steps) that the
// refill period (8) does not divide. The lane invariant w * w is computed once per sample.
TEST_F(CodegenRun, RefilledLanesMatchTheInterpreterAtAnyBudget) {
  const ir::Kernel& k = kernel(4);
  EXPECT_NE(codegen::emit_cpp({{&k, DType::F64, "raptor_refilled_f64"}}).find("iv_"),
            std::string::npos)
      << "w * w is a lane invariant: computed when a lane takes its sample";
  // 300 samples keep all 64 lanes busy; 40 run out of samples to take after the first
  // period, so the lanes still stepping move to the front and the lanes' width halves.
  for (const int64_t n : {int64_t{300}, int64_t{40}})
  for (const int64_t budget : {int64_t{0}, int64_t{1}, int64_t{7}, int64_t{16}, int64_t{13}}) {
    for (DType d : {DType::F64, DType::F32}) {
      // The interpreter runs the kernel with `budget` steps (its own 16 when 0).
      ir::Kernel ref = k;
      if (budget > 0) ref.steps = static_cast<int>(budget);
      ir::InterpBinding ib = ir::make_binding(ref, n, 1);
      std::vector<double> tf(n), w(n), x(n), v(n);
      for (int64_t i = 0; i < n; ++i) {
        // 1..40 steps; half a step off the crossing, so float32 sums stop where doubles do
        tf[i] = 0.01 * static_cast<double>(1 + (i * 37) % 40) - 0.005;
        w[i] = 1.0 + 0.1 * static_cast<double>(i % 13);
        x[i] = std::sin(0.3 * static_cast<double>(i));
        v[i] = std::cos(0.7 * static_cast<double>(i));
      }
      set_in(ref, ib, "t_final", tf);
      set_in(ref, ib, "w", w);
      set_in(ref, ib, "x", x);
      set_in(ref, ib, "v", v);
      set_in(ref, ib, "t", std::vector<double>(n, 0.0));
      set_in(ref, ib, "dt", {0.01});
      set_in(ref, ib, "c", {0.3});
      for (int64_t i = 0; i < n; i += 9) ib.mask[i] = 1;  // finished on entry
      if (d == DType::F32) round_inputs_to_float(ib);
      const ir::InterpBinding inputs = ib;
      ir::interpret(ref, ib);
      const Compiled c = d == DType::F64
                             ? run_compiled<double>(k, entry(4, d), inputs, -1, budget)
                             : run_compiled<float>(k, entry(4, d), inputs, -1, budget);
      // float64: the same bits; float32 against the interpreter's doubles (as check_kernel).
      compare(k, ib, c, d == DType::F64 ? 0.0 : 1e-6,
              "refilled, n " + std::to_string(n) + ", budget " + std::to_string(budget) + " " +
                  codegen::dtype_name(d));
    }
  }
}

TEST_F(CodegenRun, Drag) {
  check_kernel(kernel(0), built_->kernels.at(0), 37, 1,
               [](const ir::Kernel& k, ir::InterpBinding& b) {
                 std::vector<double> v(3 * 37);
                 for (size_t j = 0; j < v.size(); ++j)
                   v[j] = std::sin(0.37 * static_cast<double>(j)) * 20.0;
                 set_in(k, b, "v", v);
                 set_in(k, b, "cd", {0.047});
                 set_in(k, b, "dt", {0.01});
                 set_in(k, b, "g", {9.81});
               });
}

// A launch larger than the cache writes pure outputs with non-temporal stores, a block of
// 256 samples at a time (HostWriter::stream_loop); forced here at every size (stream_bytes 0).
// Sizes that leave a partial block, rows that start off a 64-byte line (n odd), and a range
// that starts mid-plane (the thread pool's second chunk): the same bits as the plain loop, and
// the interpreter's numbers.
TEST_F(CodegenRun, DragStreamedMatchesPlainStores) {
  EXPECT_NE(
      codegen::emit_cpp({{&kernel(0), DType::F64, "raptor_drag_s_f64"}}).find("a->stream != 0"),
      std::string::npos)
      << "the drag step has a pure output: it streams";
  EXPECT_EQ(
      codegen::emit_cpp({{&kernel(1), DType::F64, "raptor_osc_s_f64"}}).find("a->stream != 0"),
      std::string::npos)
      << "a masked kernel reads its outputs back: it never streams";
  for (const int64_t n : {1, 37, 256, 777, 4099}) {
    ir::InterpBinding ib = ir::make_binding(kernel(0), n, 1);
    std::vector<double> v(static_cast<size_t>(3 * n));
    for (size_t j = 0; j < v.size(); ++j) v[j] = std::sin(0.37 * static_cast<double>(j)) * 20.0;
    set_in(kernel(0), ib, "v", v);
    set_in(kernel(0), ib, "cd", {0.047});
    set_in(kernel(0), ib, "dt", {0.01});
    set_in(kernel(0), ib, "g", {9.81});
    const ir::InterpBinding inputs = ib;
    ir::interpret(kernel(0), ib);
    const std::string what = "drag streamed, n = " + std::to_string(n);
    const Compiled streamed = run_compiled<double>(kernel(0), entry(0, DType::F64), inputs, 0);
    const Compiled plain =
        run_compiled<double>(kernel(0), entry(0, DType::F64), inputs, int64_t{1} << 60);
    compare(kernel(0), ib, streamed, 1e-15, what);
    EXPECT_EQ(streamed.outs, plain.outs) << what;
    ir::InterpBinding ib32 = inputs;
    round_inputs_to_float(ib32);
    EXPECT_EQ(run_compiled<float>(kernel(0), entry(0, DType::F32), ib32, 0).outs,
              run_compiled<float>(kernel(0), entry(0, DType::F32), ib32, int64_t{1} << 60).outs)
        << what << " float32";
  }
  // Two chunks over a pool: the second starts at sample 2048 + 64 * k, mid-plane.
  const int64_t n = 4099;
  std::vector<double> v(3 * n), out_s(3 * n, -1.0), out_p(3 * n, -1.0);
  for (size_t j = 0; j < v.size(); ++j) v[j] = std::cos(0.11 * static_cast<double>(j)) * 7.0;
  runtime::ThreadPool pool(2);
  for (const bool stream : {true, false}) {
    runtime::Binding b;
    b.n = n;
    b.slots.resize(kernel(0).slots.size());
    for (size_t s = 0; s < kernel(0).slots.size(); ++s) {
      const std::string& nm = kernel(0).slots[s].name;
      if (nm == "v") b.slots[s].in = v.data();
      if (nm == "v_next") b.slots[s].out = stream ? out_s.data() : out_p.data();
      if (nm == "cd") b.slots[s].param = 0.047;
      if (nm == "dt") b.slots[s].param = 0.01;
      if (nm == "g") b.slots[s].param = 9.81;
    }
    b.stream_bytes = stream ? 0 : int64_t{1} << 60;
    const runtime::LaunchResult r = runtime::launch(entry(0, DType::F64), b, &pool, 1024);
    EXPECT_TRUE(r.ok());
    EXPECT_EQ(r.chunks, 2);
  }
  EXPECT_EQ(out_s, out_p);
}

TEST_F(CodegenRun, OscillatorWithMask) {
  check_kernel(
      kernel(1), built_->kernels.at(1), 21, 1, [](const ir::Kernel& k, ir::InterpBinding& b) {
        std::vector<double> x(21), v(21), t(21);
        for (int j = 0; j < 21; ++j) {
          x[j] = std::cos(0.5 * j);
          v[j] = std::sin(0.3 * j) * 2.0;
          t[j] = 0.1 * j;  // t + dt crosses t_final = 1 for j >= 10, never within 0.04 of it
        }
        set_in(k, b, "x", x);
        set_in(k, b, "v", v);
        set_in(k, b, "t", t);
        set_in(k, b, "c", {0.3});
        set_in(k, b, "corr", {0.01});
        set_in(k, b, "dt", {0.05});
        set_in(k, b, "t_final", {1.0});
        b.mask.assign(21, 0);
        b.mask[3] = 1;  // already finished: left as it is
        b.mask[15] = 1;
      });
}

TEST_F(CodegenRun, SteppedTableIfElse) {
  check_kernel(kernel(2), built_->kernels.at(2), 19, 5,
               [](const ir::Kernel& k, ir::InterpBinding& b) {
                 std::vector<double> idx(19), y(19);
                 for (int j = 0; j < 19; ++j) {
                   idx[j] = 0.25 + (j % 5) + 0.5 * ((j / 5) % 2);  // within [0, 5)
                   y[j] = 3.0 * std::sin(1.7 * j);
                 }
                 set_in(k, b, "i", idx);
                 set_in(k, b, "y", y);
                 set_in(k, b, "w", {-1.0, 0.5, 2.0, -0.25, 1.125});
                 set_in(k, b, "rate", {0.375});
               });
}

TEST_F(CodegenRun, SteppedTableIndexOutOfRange) {
  const ir::Kernel& k = kernel(2);
  ir::InterpBinding ib = ir::make_binding(k, 4, 2);
  set_in(k, ib, "i", {0.0, 1.5, 7.0, -1.0});
  set_in(k, ib, "w", {1.0, 2.0});
  set_in(k, ib, "rate", {1.0});
  const ir::InterpBinding inputs = ib;
  ir::interpret(k, ib);
  const Compiled c = run_compiled<double>(k, entry(2, DType::F64), inputs);
  EXPECT_EQ(c.result.error, ib.error[0]);
  EXPECT_EQ(c.result.error, RAPTOR_ERR_TABLE_INDEX);
  EXPECT_EQ(c.result.error_index, ib.error[2]);
  EXPECT_EQ(c.result.error_sample, ib.error[3]);
}

TEST_F(CodegenRun, OperatorConventions) {
  check_kernel(
      kernel(3), built_->kernels.at(3), 11, 1, [](const ir::Kernel& k, ir::InterpBinding& b) {
        set_in(k, b, "x", {-2.5, 0.0, -0.0, 3.0, 7.25, -7.25, 1e-3, 0.5, -1.0, 2.0, 100.0});
        set_in(k, b, "y", {2.0, 1.0, 1.0, -2.0, 3.0, 3.0, -0.5, 0.25, 4.0, -3.0, 7.0});
      });
}

// Product bug: the emitted rp_sign() returns +0 for -0.0 while the interpreter (and jax.numpy)
// return -0; the numeric comparisons above cannot see it (-0 == +0).
TEST_F(CodegenRun, SignOfNegativeZeroMatchesInterpreter) {
  const ir::Kernel& k = kernel(3);
  ir::InterpBinding ib = ir::make_binding(k, 1);
  set_in(k, ib, "x", {-0.0});
  set_in(k, ib, "y", {1.0});
  const ir::InterpBinding inputs = ib;
  ir::interpret(k, ib);
  const Compiled c = run_compiled<double>(k, entry(3, DType::F64), inputs);
  const int s = k.find_slot("s");
  EXPECT_TRUE(std::signbit(ib.slots[s].out[0]));
  EXPECT_EQ(std::signbit(c.outs[s][0]), std::signbit(ib.slots[s].out[0]))
      << "sign(-0.0): compiled " << c.outs[s][0] << ", interpreter " << ib.slots[s].out[0];
}

// Discrepancy (reported): for equal operands of different sign the emitted rp_min/rp_max
// return the first operand while the interpreter (and passes::eval_op) return the second, so
// minimum(-0.0, 0.0) is -0 compiled and +0 interpreted.
TEST_F(CodegenRun, MinMaxOfSignedZerosMatchInterpreter) {
  const ir::Kernel& k = kernel(3);
  ir::InterpBinding ib = ir::make_binding(k, 2);
  set_in(k, ib, "x", {-0.0, 0.0});
  set_in(k, ib, "y", {0.0, -0.0});
  const ir::InterpBinding inputs = ib;
  ir::interpret(k, ib);
  const Compiled c = run_compiled<double>(k, entry(3, DType::F64), inputs);
  const int m = k.find_slot("m");
  for (int j = 0; j < 2; ++j)
    EXPECT_EQ(std::signbit(c.outs[m][j]), std::signbit(ib.slots[m].out[j]))
        << "minimum(x, y) + maximum(x, y) at sample " << j << ": compiled " << c.outs[m][j]
        << ", interpreter " << ib.slots[m].out[j];
}

TEST_F(CodegenRun, SecondBuildIsACacheHit) {
  std::vector<const ir::Kernel*> ptrs;
  for (const ir::Kernel& k : *kernels_) ptrs.push_back(&k);
  EXPECT_FALSE(built_->compile.cache_hit);  // a fresh cache directory
  EXPECT_GT(built_->compile.compile_seconds, 0.0);
  const runtime::BuildResult again = runtime::build_host(ptrs, *compiler_);
  EXPECT_TRUE(again.compile.cache_hit);
  EXPECT_EQ(again.compile.key, built_->compile.key);
}

// ---------------------------------------------------------------------------------------------
// 3. Vectorization of the sample loop
// ---------------------------------------------------------------------------------------------

// The vector ISA of the machine these tests run on (what -march=native compiles for), named in
// the vectorization tests' output: GCC vectorizes masked loops differently with and without
// mask registers (AVX-512 against AVX2), and both must pass.
std::string host_vector_isa() {
#if defined(__x86_64__) && (defined(__GNUC__) || defined(__clang__))
  __builtin_cpu_init();
  if (__builtin_cpu_supports("avx512f")) return "x86-64 AVX-512";
  if (__builtin_cpu_supports("avx2")) return "x86-64 AVX2 (no AVX-512)";
  if (__builtin_cpu_supports("avx")) return "x86-64 AVX (no AVX2)";
  return "x86-64 SSE2";
#elif defined(__aarch64__)
  return "AArch64";
#else
  return "unknown";
#endif
}

// The targets the vectorization tests compile for: this machine (-march=native, what a launch
// compiles with) and, on x86, both vector ISAs whatever this machine has: x86-64-v3 (AVX2, no
// mask registers) and x86-64-v4 (AVX-512), so a change that leaves a loop scalar on either
// fails on every CI machine, not only on one of that kind. Compiling needs no such CPU.
struct VecTarget {
  std::string name;   // what the output calls it
  std::string march;  // replaces -march=native in the default flags
};
std::vector<VecTarget> vec_targets() {
  std::vector<VecTarget> t{{"this machine: " + host_vector_isa(), "native"}};
#if defined(__x86_64__)
  t.push_back({"x86-64-v3 (AVX2)", "x86-64-v3"});
  t.push_back({"x86-64-v4 (AVX-512)", "x86-64-v4"});
#endif
  return t;
}

// The runtime's default flags (kDefaultHostFlags) with -march=native replaced for `target`.
std::string host_flags_for(const VecTarget& target) {
  std::string flags = runtime::kDefaultHostFlags;
  const std::string native = "-march=native";
  const size_t at = flags.find(native);
  if (at != std::string::npos) flags.replace(at, native.size(), "-march=" + target.march);
  return flags;
}

// GCC's -fopt-info-vec-optimized report of `code` compiled for `target`.
std::string vectorization_report(const std::string& code, const VecTarget& target) {
  runtime::testing::TempDir dir;
  std::ofstream(dir.path() / "k.cpp") << code;
  const std::string cmd = "cd '" + dir.path().string() + "' && g++ " + host_flags_for(target) +
                          " -std=c++17 -fopt-info-vec-optimized -c k.cpp -o k.o > report.txt 2>&1";
  EXPECT_EQ(std::system(cmd.c_str()), 0) << read_file(dir.path() / "report.txt");
  return read_file(dir.path() / "report.txt");
}

// Whether `target` has AVX-512F (the compiler's __AVX512F__ for its flags).
bool target_has_avx512f(const VecTarget& target) {
  const std::string cmd = "g++ " + host_flags_for(target) +
                          " -dM -E -x c++ /dev/null 2>/dev/null | grep -q __AVX512F__";
  return std::system(cmd.c_str()) == 0;
}

// Whether the report says the loop whose `for` is at `line` was vectorized.
bool loop_vectorized_at(const std::string& report, size_t line) {
  std::istringstream rep(report);
  for (std::string text; std::getline(rep, text);)
    if (text.rfind("k.cpp:" + std::to_string(line) + ":", 0) == 0 &&
        text.find("loop vectorized") != std::string::npos)
      return true;
  return false;
}

const char* dtype_word(DType dtype) { return dtype == DType::F64 ? "float64" : "float32"; }

// Compiles `k` in `dtype` for each target; the contiguous sample loop (one, with or without a
// mask: the zero_finished flag is read at run time) must be vectorized. GCC reports a loop at the
// line of its `for`, or, for an OpenMP SIMD loop (hawk.min / hawk.max reductions), at a line
// of the inlined sample lambda: a `#pragma GCC ivdep` loop must be reported at its own line,
// and there must be as many reports inside the lambda as OpenMP SIMD loops. Other loops (the
// lanes of sums over samples, rp_lanes_add; the reduction's combine, reported at its pragma)
// do not count.
void expect_sample_loops_vectorized(const ir::Kernel& k, const std::string& symbol, DType dtype) {
  if (std::system("g++ --version > /dev/null 2>&1") != 0) GTEST_SKIP() << "g++ is not available";
  const std::string code = codegen::emit_cpp({{&k, dtype, symbol}});
  std::vector<std::string> lines{""};  // 1-based
  std::vector<size_t> ivdep_loops;     // lines of the contiguous loops under #pragma GCC ivdep
  size_t simd_loops = 0, lambda_first = 0, lambda_last = 0;
  std::istringstream in(code);
  for (std::string text; std::getline(in, text);) {
    lines.push_back(text);
    const size_t line = lines.size() - 1;
    if (text.find("auto sample = [&]") != std::string::npos) lambda_first = line;
    if (lambda_first != 0 && lambda_last == 0 && text == "  };") lambda_last = line;
    if ((text.find("for (int64_t i = begin; i < end; ++i)") != std::string::npos &&
         text.find("index[i]") == std::string::npos) ||
        text.find("for (int64_t i = i0; i < i1; ++i)") != std::string::npos) {  // blocks
      if (lines[line - 1].find("#pragma omp simd") != std::string::npos)
        ++simd_loops;
      else
        ivdep_loops.push_back(line);
    }
  }
  ASSERT_EQ(ivdep_loops.size() + simd_loops, 1u) << "sample loops in:\n" << code;
  for (const VecTarget& target : vec_targets()) {
    std::printf("[ vector ISA ] %s, %s: %s\n", symbol.c_str(), dtype_word(dtype),
                target.name.c_str());
    const std::string out = vectorization_report(code, target);
    for (const size_t line : ivdep_loops)
      EXPECT_TRUE(loop_vectorized_at(out, line)) << "GCC did not vectorize the sample loop at line "
                                                 << line << " for " << target.name << " of:\n"
                                                 << code << "\nreport:\n"
                                                 << out;
    size_t in_lambda = 0;
    std::istringstream rep(out);
    for (std::string text; std::getline(rep, text);) {
      if (text.rfind("k.cpp:", 0) != 0 || text.find("loop vectorized") == std::string::npos)
        continue;
      const size_t line = std::stoul(text.substr(6));
      if (line > lambda_first && line < lambda_last) ++in_lambda;
    }
    EXPECT_GE(in_lambda, simd_loops)
        << "GCC did not vectorize every OpenMP SIMD sample loop for " << target.name << " of:\n"
        << code << "\nreport:\n"
        << out;
  }
}

TEST(CodegenVectorize, DragSampleLoopIsVectorized) {  // one loop, plain or streamed
  expect_sample_loops_vectorized(drag_kernel(), "raptor_drag_vec_f64", DType::F64);
  expect_sample_loops_vectorized(drag_kernel(), "raptor_drag_vec_f32", DType::F32);
}

// The drag step's adjoint with respect to its Params: sums over samples (rp_lanes) in a kernel
// bound by its square root and divisions, so its float64 build prefers 256-bit vectors (RP_NARROW):
// vectorized at that width too.
TEST(CodegenVectorize, NarrowSumsOverSamplesAreVectorized) {
  const ir::Kernel adj = optimized(ad::adjoint(drag_kernel(), {"v", "cd", "dt"}));
  ASSERT_NE(codegen::emit_cpp({{&adj, DType::F64, "raptor_drag_adjoint_vec_f64"}})
                .find("RP_NARROW void raptor_drag_adjoint_vec_f64"),
            std::string::npos);
  expect_sample_loops_vectorized(adj, "raptor_drag_adjoint_vec_f64", DType::F64);
}

TEST(CodegenVectorize, MaskedSampleLoopsAreVectorized) {
  expect_sample_loops_vectorized(oscillator_kernel(), "raptor_oscillator_vec_f64", DType::F64);
  expect_sample_loops_vectorized(oscillator_kernel(), "raptor_oscillator_vec_f32", DType::F32);
}

// Draws whose arithmetic is the RNG's own (runtime/random.h): the threefry bits, the uniform,
// the normal (jax's erfinv over raptor's logarithm) and the truncated normal with bounds the
// same for every sample, whose two erf calls are hoisted out of the loop: no call is left in
// it, so it vectorizes on every target (the truncated normal ran at 0.44x jax.random's rate
// in float32 while it was a call per sample).
TEST(CodegenVectorize, RandomDrawSampleLoopsAreVectorized) {
  const ir::Kernel k =
      lowered(R"(@hawk.kernel
def draws(rng: Random, lo: Param, y: Mutable[Scalar]):
    y = rng.uniform() + rng.normal() + rng.truncated_normal(-0.125, 2.0) + rng.truncated_normal(lo, 3.0)
)",
              {param_spec("rng", ir::SlotKind::Random), Param("lo"), MutScalar("y")});
  expect_sample_loops_vectorized(k, "raptor_draws_vec_f64", DType::F64);
  expect_sample_loops_vectorized(k, "raptor_draws_vec_f32", DType::F32);
}

// exp, expm1, log and log1p are raptor's own (runtime/rp_math.h, no library call), so a sample loop
// around them vectorizes; so do the exponential and lognormal draws made of them.
TEST(CodegenVectorize, ExpLogLog1pSampleLoopsAreVectorized) {
  const ir::Kernel k = lowered(R"(@hawk.kernel
def el(x: Scalar, y: Mutable[Scalar]):
    y = exp(x) + log(y) + log1p(x * y) + expm1(y)
)",
                               {Scalar("x"), MutScalar("y")});
  expect_sample_loops_vectorized(k, "raptor_el_vec_f64", DType::F64);
  expect_sample_loops_vectorized(k, "raptor_el_vec_f32", DType::F32);
  const ir::Kernel d =
      lowered(R"(@hawk.kernel
def draws(rng: Random, s: Param, y: Mutable[Scalar]):
    y = rng.exponential() + rng.lognormal(s)
)",
              {param_spec("rng", ir::SlotKind::Random), Param("s"), MutScalar("y")});
  expect_sample_loops_vectorized(d, "raptor_el_draws_vec_f64", DType::F64);
  expect_sample_loops_vectorized(d, "raptor_el_draws_vec_f32", DType::F32);
}

// tanh is raptor's own (its Taylor series and expm1, both computed; runtime/rp_math.h), with
// the division's exact residual an fma or, without FMA, Dekker's product: vectorized for every
// target vec_targets() lists (the noipa call of glibc's tanh kept this loop scalar).
TEST(CodegenVectorize, TanhSampleLoopsAreVectorized) {
  const ir::Kernel k = lowered(R"(@hawk.kernel
def th(x: Scalar, y: Mutable[Scalar]):
    y = tanh(x * y) + y
)",
                               {Scalar("x"), MutScalar("y")});
  expect_sample_loops_vectorized(k, "raptor_th_vec_f64", DType::F64);
  expect_sample_loops_vectorized(k, "raptor_th_vec_f32", DType::F32);
}

// atan, atan2, asin and acos are raptor's own (fdlibm's forms selected, one division; atan2's
// quotient residual an fma or Dekker's product; runtime/rp_atan.h): vectorized for every target
// vec_targets() lists (glibc's, a call per sample, kept these loops scalar).
TEST(CodegenVectorize, AtanAtan2SampleLoopsAreVectorized) {
  const ir::Kernel k = lowered(R"(@hawk.kernel
def angles(x: Scalar, z: Scalar, y: Mutable[Scalar]):
    y = atan2(x * y, z) + atan(x) + asin(0.25 * z) + acos(0.25 * x) + y
)",
                               {Scalar("x"), Scalar("z"), MutScalar("y")});
  expect_sample_loops_vectorized(k, "raptor_angles_vec_f64", DType::F64);
  expect_sample_loops_vectorized(k, "raptor_angles_vec_f32", DType::F32);
}

// pow (x ** y, y not a constant integer) is raptor's own (rp_pow.h): branch-free, vectorized in
// both dtypes, with the kernel's other arithmetic around it.
TEST(CodegenVectorize, PowSampleLoopsAreVectorized) {
  const ir::Kernel k = lowered(R"(@hawk.kernel
def powers(x: Scalar, z: Scalar, y: Mutable[Scalar]):
    y = x ** z + (x * y) ** 0.75 + y
)",
                               {Scalar("x"), Scalar("z"), MutScalar("y")});
  expect_sample_loops_vectorized(k, "raptor_powers_vec_f64", DType::F64);
  expect_sample_loops_vectorized(k, "raptor_powers_vec_f32", DType::F32);
}

// hypot is raptor's own (rp_hypot.h: exact squares by fma or Dekker's product, one correction):
// vectorized in both dtypes.
TEST(CodegenVectorize, HypotSampleLoopsAreVectorized) {
  const ir::Kernel k = lowered(R"(@hawk.kernel
def dist(x: Scalar, z: Scalar, y: Mutable[Scalar]):
    y = hypot(x - y, z) + y
)",
                               {Scalar("x"), Scalar("z"), MutScalar("y")});
  expect_sample_loops_vectorized(k, "raptor_dist_vec_f64", DType::F64);
  expect_sample_loops_vectorized(k, "raptor_dist_vec_f32", DType::F32);
}

// sin, cos and tan are raptor's own too (an exact range reduction with a table read, the gather):
// vectorized where the ISA has the gather (and, for double, FMA): x86-64-v3 and up, every
// target vec_targets() lists.
TEST(CodegenVectorize, SinCosSampleLoopsAreVectorized) {
  const ir::Kernel k = lowered(R"(@hawk.kernel
def sc(x: Scalar, y: Mutable[Scalar]):
    y = sin(x) * y + cos(x + y) + tan(0.5 * x)
)",
                               {Scalar("x"), MutScalar("y")});
  expect_sample_loops_vectorized(k, "raptor_sc_vec_f64", DType::F64);
  expect_sample_loops_vectorized(k, "raptor_sc_vec_f32", DType::F32);
}

// A kernel that calls one of raptor's own functions 8 times or more (kSimdCalls) calls its SIMD
// clone (rp_<name>_simd: noinline, GCC's simd) instead of inlining it at every call, which made
// such kernels take minutes to compile: its sample loops still vectorize, calling the clone's
// vector version, plain and masked, in both dtypes, for every target; a kernel with fewer calls
// inlines the function as before. (tests/test_simd_clones.py checks the values: the same bits.)
TEST(CodegenVectorize, SimdClonesOfOftenCalledFunctionsAreVectorized) {
  const ir::Kernel k = lowered(R"(@hawk.kernel
def many(x: Scalar, y: Mutable[Scalar]):
    a = tanh(x) + tanh(2.0 * x) + tanh(3.0 * x) + tanh(4.0 * x) + tanh(5.0 * x) + tanh(6.0 * x)
    b = tanh(7.0 * x) + tanh(8.0 * x) + sin(x) * cos(x)
    y = a + b + x ** y
)",
                               {Scalar("x"), MutScalar("y")});
  const std::string code = codegen::emit_cpp({{&k, DType::F64, "raptor_many_vec_f64"}});
  EXPECT_NE(code.find("= rp_tanh_simd(v0_x);"), std::string::npos) << code;
  EXPECT_NE(code.find("template <class T> RP_SIMD_FN T rp_tanh_simd(T x)"), std::string::npos);
  EXPECT_EQ(code.find("rp_sin_simd"), std::string::npos) << "one call of sin: inlined";
  EXPECT_EQ(code.find("rp_pow_simd"), std::string::npos) << "one call of pow: inlined";
  expect_sample_loops_vectorized(k, "raptor_many_vec_f64", DType::F64);
  expect_sample_loops_vectorized(k, "raptor_many_vec_f32", DType::F32);
  const ir::Kernel m = lowered(R"(@hawk.kernel(steps=1)
def many_masked(x: Scalar, y: Mutable[Scalar], terminated: Terminated):
    a = sin(x * y) + sin(2.0 * y) + sin(3.0 * y) + sin(4.0 * y) + sin(5.0 * y) + sin(6.0 * y)
    y = a + sin(7.0 * y) + sin(8.0 * y)
    terminated = y > 4.0
)",
                               {Scalar("x"), MutScalar("y"), Terminated("terminated")});
  ASSERT_TRUE(m.has_mask());
  EXPECT_NE(
      codegen::emit_cpp({{&m, DType::F32, "raptor_many_masked_vec_f32"}}).find("rp_sin_simd("),
      std::string::npos);
  expect_sample_loops_vectorized(m, "raptor_many_masked_vec_f64", DType::F64);
  expect_sample_loops_vectorized(m, "raptor_many_masked_vec_f32", DType::F32);
  // A sin and a cos of one argument share their range reduction when inlined (2.5x the time as
  // two clones): eight such pairs stay inlined, and only the unpaired sin calls count.
  const ir::Kernel p = lowered(R"(@hawk.kernel
def pairs(x: Scalar, y: Mutable[Scalar]):
    a = sin(x) * cos(x) + sin(2.0 * x) * cos(2.0 * x) + sin(3.0 * x) * cos(3.0 * x)
    b = sin(4.0 * x) * cos(4.0 * x) + sin(5.0 * x) * cos(5.0 * x) + sin(6.0 * x) * cos(6.0 * x)
    y = a + b + sin(7.0 * x) * cos(7.0 * x) + sin(8.0 * x) * cos(8.0 * x) + sin(y) + sin(2.0 * y)
)",
                               {Scalar("x"), MutScalar("y")});
  EXPECT_EQ(codegen::emit_cpp({{&p, DType::F64, "raptor_pairs_f64"}}).find("_simd("),
            std::string::npos);
}

// A fused stepping kernel (64 lanes refilled as samples finish, HostWriter::refill_body): the
// six step loops of a period (st_ -> pp_ and pp_ -> st_, each unmasked with eager refill,
// unmasked and masked) in each dtype, for each target. With AVX-512 the eager loops are dead
// code (CALM = 0) and must be gone, not merely left scalar.
TEST(CodegenVectorize, RefilledLaneStepsAreVectorized) {
  if (std::system("g++ --version > /dev/null 2>&1") != 0) GTEST_SKIP() << "g++ is not available";
  const ir::Kernel k = refilled_kernel();
  for (const DType dtype : {DType::F64, DType::F32}) {
    const std::string code = codegen::emit_cpp({{&k, dtype, "raptor_refilled_vec"}});
    std::vector<size_t> step_loops;  // the `for` line after each "// step r..." comment
    std::vector<bool> eager;          // whether that step refills finished lanes at once
    std::istringstream in(code);
    size_t line = 0;
    bool after_step = false;
    for (std::string text; std::getline(in, text);) {
      ++line;
      if (text.find("// step r") != std::string::npos) {
        after_step = true;
        eager.push_back(text.find("refilled at once") != std::string::npos);
      }
      if (after_step && text.find("for (int j = 0; j < w; ++j) {") != std::string::npos) {
        step_loops.push_back(line);
        after_step = false;
      }
    }
    ASSERT_EQ(step_loops.size(), 6u) << code;  // r and r + 1: eager, unmasked, masked
    ASSERT_EQ(std::count(eager.begin(), eager.end(), true), 2) << code;
    for (const VecTarget& target : vec_targets()) {
      const bool avx512 = target_has_avx512f(target);
      std::printf("[ vector ISA ] refilled lanes, %s: %s%s\n", dtype_word(dtype),
                  target.name.c_str(), avx512 ? " (eager steps compiled out)" : "");
      const std::string report = vectorization_report(code, target);
      for (size_t i = 0; i < step_loops.size(); ++i) {
        const size_t l = step_loops[i];
        if (avx512 && eager[i]) {
          EXPECT_EQ(report.find("k.cpp:" + std::to_string(l) + ":"), std::string::npos)
              << "the eager step loop at line " << l << " is in the report for "
              << target.name << ", but CALM = 0 there should remove it:\n" << report;
          continue;
        }
        EXPECT_TRUE(loop_vectorized_at(report, l))
            << "the step loop at line " << l << " was not vectorized for " << target.name
            << ":\n"
            << code << "\nreport:\n"
            << report;
      }
    }
  }
}

// hawk.min / hawk.max (OpenMP SIMD reductions) beside a hawk.sum (rp_lanes), with a mask.
TEST(CodegenVectorize, MinMaxBesideSumsAreVectorized) {
  expect_sample_loops_vectorized(extremes_kernel(), "raptor_extremes_vec_f64", DType::F64);
  expect_sample_loops_vectorized(extremes_kernel(), "raptor_extremes_vec_f32", DType::F32);
}

// An adjoint with respect to Params: a mask and sums over samples (rp_lanes).
TEST(CodegenVectorize, SumsOverSamplesAreVectorized) {
  const ir::Kernel adj = optimized(ad::adjoint(oscillator_kernel(), {"x", "v", "c", "dt"}));
  expect_sample_loops_vectorized(adj, "raptor_oscillator_adjoint_vec_f64", DType::F64);
  expect_sample_loops_vectorized(adj, "raptor_oscillator_adjoint_vec_f32", DType::F32);
}

// The vector registers the sqrt/add/mul instructions of `symbol` in `code` use, compiled for
// `target`: "z", "y" or "x" characters, one per instruction (GCC's assembly, -S).
std::string fp_registers_of(const std::string& code, const std::string& symbol,
                            const VecTarget& target) {
  runtime::testing::TempDir dir;
  std::ofstream(dir.path() / "k.cpp") << code;
  const std::string cmd = "cd '" + dir.path().string() + "' && g++ " + host_flags_for(target) +
                          " -std=c++17 -S k.cpp -o k.s > out.txt 2>&1";
  EXPECT_EQ(std::system(cmd.c_str()), 0) << read_file(dir.path() / "out.txt");
  std::istringstream in(read_file(dir.path() / "k.s"));
  std::string regs;
  bool inside = false;
  for (std::string text; std::getline(in, text);) {
    if (text == symbol + ":") inside = true;
    else if (inside && text.find(".cfi_endproc") != std::string::npos) break;
    if (!inside) continue;
    for (const char* op : {"vsqrtp", "vaddp", "vmulp"}) {
      const size_t at = text.find(op);
      const size_t reg = text.find("%", at == std::string::npos ? text.size() : at);
      if (at != std::string::npos && reg != std::string::npos && reg + 1 < text.size())
        regs.push_back(text[reg + 1]);
    }
  }
  return regs;
}

// A float64 kernel bound by square roots and divisions (HostWriter::divider_bound: the drag
// step's norm) is compiled with 256-bit vectors even where the flags prefer 512 (x86-64-v4);
// its float32 build, and a float64 kernel without roots or divisions (the oscillator), keep
// 512-bit vectors. The decision is in the generated source (RP_NARROW), checked everywhere;
// the preamble empties RP_NARROW for AMD Zen targets.
TEST(CodegenVectorize, DividerBoundFloat64KernelsUse256BitVectors) {
  const ir::Kernel drag = drag_kernel();
  const ir::Kernel osc = oscillator_kernel();
  const std::string drag64 = codegen::emit_cpp({{&drag, DType::F64, "raptor_drag_w_f64"}});
  const std::string drag32 = codegen::emit_cpp({{&drag, DType::F32, "raptor_drag_w_f32"}});
  const std::string osc64 = codegen::emit_cpp({{&osc, DType::F64, "raptor_osc_w_f64"}});
  EXPECT_NE(drag64.find("RAPTOR_EXPORT RP_NARROW void raptor_drag_w_f64("), std::string::npos);
  EXPECT_NE(drag32.find("RAPTOR_EXPORT void raptor_drag_w_f32("), std::string::npos);
  EXPECT_NE(osc64.find("RAPTOR_EXPORT void raptor_osc_w_f64("), std::string::npos);
#if defined(__x86_64__)
  if (std::system("g++ --version > /dev/null 2>&1") != 0) GTEST_SKIP() << "g++ is not available";
  const VecTarget v4{"x86-64-v4 (AVX-512)", "x86-64-v4"};
  const std::string narrow = fp_registers_of(drag64, "raptor_drag_w_f64", v4);
  EXPECT_NE(narrow.find('y'), std::string::npos) << narrow;
  EXPECT_EQ(narrow.find('z'), std::string::npos) << narrow;
  EXPECT_NE(fp_registers_of(drag32, "raptor_drag_w_f32", v4).find('z'), std::string::npos);
  EXPECT_NE(fp_registers_of(osc64, "raptor_osc_w_f64", v4).find('z'), std::string::npos);
  // On an AMD Zen core RP_NARROW is empty (Zen 4 ran the drag step 13-35% faster at 512 bits):
  // GCC 12 compiles -march=native there as znver3 with the AVX-512 extensions.
  const VecTarget zen4{"znver3 with AVX-512 (GCC 12's Zen 4)",
                       "znver3 -mavx512f -mavx512vl -mavx512bw -mavx512dq"};
  EXPECT_NE(fp_registers_of(drag64, "raptor_drag_w_f64", zen4).find('z'), std::string::npos);
#endif
}

}  // namespace
}  // namespace raptor::testing
