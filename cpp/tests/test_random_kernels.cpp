// Random numbers in kernels (`rng: Random`, docs/language.md "Random numbers"), stage by stage:
// 1. the front end numbers draws in source and unroll order (both branches of an `if`) and
//    refuses misuse; 2. passes never merge or renumber draws; 3. the interpreter draws
//    runtime/random.h's numbers of (key, step, base + sample, draw); 4. tangent and adjoint
//    kernels keep the Random slot and the primal's numbering (unrolled steps as offsets);
// 5. the emitted C++ (a golden, cpp/tests/golden/random_walk.cpp) and the compiled kernel
//    against the interpreter bit for bit, with chunking over a pool and bound launches'
//    fold_in(key, n). The numbers themselves against jax.random: test_runtime_random.cpp and
//    tests/test_random.py.
#include <gtest/gtest.h>

#include <algorithm>
#include <array>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>
#include <vector>

#include "ad/adjoint.hpp"
#include "ad/tangent.hpp"
#include "ad/unroll.hpp"
#include "codegen/cpp_emitter.hpp"
#include "common/error.hpp"
#include "ir/interp.hpp"
#include "ir/ir.hpp"
#include "runtime/bound.hpp"
#include "runtime/build.hpp"
#include "runtime/cache.hpp"
#include "runtime/compiler.hpp"
#include "runtime/interface.hpp"
#include "runtime/launch.hpp"
#include "runtime/random.h"
#include "runtime/thread_pool.hpp"
#include "test_runtime_util.hpp"
#include "test_util_spec.hpp"

namespace raptor::testing {
namespace {

namespace fs = std::filesystem;
using codegen::DType;
using ir::Op;

ir::ParamSpec Rng(std::string n) { return param_spec(std::move(n), ir::SlotKind::Random); }

// Draws in an if/else, an unrolled loop and after it: j = 0..5 in that order.
ir::Kernel branches_kernel() {
  return lowered(R"(def branches(x: Scalar, rng: Random, a: Mutable[Scalar], b: Mutable[Scalar]):
    if x > 0.0:
        a = rng.uniform()
    else:
        a = rng.normal()
    b = 0.0
    for k in range(3):
        b = b + (k + 1.0) * rng.uniform()
    b = b + 10.0 * rng.uniform()
)",
                 {Scalar("x"), Rng("rng"), MutScalar("a"), MutScalar("b")}, 1, "branches.py");
}

// A stepped random walk with a mask: the golden and the compiled-vs-interpreter kernel.
ir::Kernel walk_kernel() {
  return lowered(
      R"(def walk(sigma: Param, rng: Random, terminated: Terminated, x: Mutable[Scalar]):
    x = x + sigma * rng.normal() + 0.5 * rng.uniform()
    terminated = x > 3.0
)",
      {Param("sigma"), Rng("rng"), Terminated("terminated"), MutScalar("x")}, 4, "walk.py");
}

std::vector<const ir::Value*> draws_of(const ir::Kernel& k) {
  std::vector<const ir::Value*> out;
  for (const ir::Value& v : k.values)
    if (v.op == Op::RandUniform || v.op == Op::RandNormal) out.push_back(&v);
  return out;
}

rp_key key_of(const ir::InterpBinding& b) { return rp_key{b.rng_key[0], b.rng_key[1]}; }

// ---------------------------------------------------------------------------------------------
// 1. Front end

TEST(RandomLower, DrawsAreNumberedInSourceAndUnrollOrder) {
  const ir::Kernel k = branches_kernel();
  const auto d = draws_of(k);
  ASSERT_EQ(d.size(), 6u) << ir::print(k);
  const Op want[6] = {Op::RandUniform, Op::RandNormal,  Op::RandUniform,
                      Op::RandUniform, Op::RandUniform, Op::RandUniform};
  for (int j = 0; j < 6; ++j) {
    EXPECT_EQ(d[j]->comp, j);
    EXPECT_EQ(d[j]->op, want[j]);
    EXPECT_EQ(d[j]->iimm, 0);
    EXPECT_EQ(k.slots[d[j]->slot].kind, ir::SlotKind::Random);
  }
  EXPECT_NE(ir::print(k).find("rand_normal rng draw 1 step+0"), std::string::npos) << ir::print(k);
}

void expect_refused(const std::string& body, const std::string& words,
                    std::vector<ir::ParamSpec> params = {}) {
  if (params.empty()) params = {Rng("rng"), MutScalar("y")};
  std::string sig = "def bad(";
  for (size_t i = 0; i < params.size(); ++i)
    sig += (i ? ", " : "") + params[i].name + ": " +
           (params[i].kind == ir::SlotKind::Random ? "Random" : "Mutable[Scalar]");
  const std::string src = sig + "):\n    " + body + "\n";
  try {
    lower_source(src, params);
    ADD_FAILURE() << "accepted: " << body;
  } catch (const SourceError& e) {
    const std::string msg = e.what();
    EXPECT_NE(msg.find("bad"), std::string::npos) << msg;
    EXPECT_NE(msg.find(":2:"), std::string::npos) << msg;  // the line of the body
    EXPECT_NE(msg.find(words), std::string::npos) << msg;
  }
}

TEST(RandomLower, MisuseIsRefusedWithTheFix) {
  expect_refused("y = rng * 2.0", "the Random parameter");
  expect_refused("y = rng.gauss()", "the methods uniform, normal, exponential");
  expect_refused("y = rng.uniform(1.0)", "takes no arguments");
  expect_refused("rng = 1.0", "cannot assign to Random");
  expect_refused("y = rng.normal", "call normal()");
}

TEST(RandomLower, TwoRandomParametersAreRefused) {
  try {
    lower_source("def two(a: Random, b: Random, y: Mutable[Scalar]):\n    y = a.uniform()\n",
                 {Rng("a"), Rng("b"), MutScalar("y")});
    ADD_FAILURE() << "accepted two Random parameters";
  } catch (const SourceError& e) {
    EXPECT_NE(std::string(e.what()).find("two Random parameters"), std::string::npos) << e.what();
  }
}

// ---------------------------------------------------------------------------------------------
// 2. Passes

TEST(RandomPasses, TwoDrawsAreNeverMergedAndDceKeepsTheNumbers) {
  // Two uniform draws with equal operands: CSE must keep both. `unused` is dropped by DCE,
  // and the draw after it keeps its number 2.
  const ir::Kernel k = lowered(
      "def k(rng: Random, y: Mutable[Scalar]):\n"
      "    a = rng.uniform()\n    b = rng.uniform()\n    unused = rng.normal()\n"
      "    y = a - b + rng.uniform()\n",
      {Rng("rng"), MutScalar("y")});
  const auto d = draws_of(k);
  ASSERT_EQ(d.size(), 3u) << ir::print(k);
  EXPECT_EQ(d[0]->comp, 0);
  EXPECT_EQ(d[1]->comp, 1);
  EXPECT_EQ(d[2]->comp, 3);
}

// ---------------------------------------------------------------------------------------------
// 3. Interpreter

TEST(RandomInterp, DrawsAreRandomHOfKeyStepSampleDraw) {
  const ir::Kernel k = branches_kernel();
  const int64_t n = 40;
  ir::InterpBinding b = ir::make_binding(k, n);
  std::vector<double> x(n);
  for (int64_t i = 0; i < n; ++i) x[i] = i % 2 ? 1.0 : -1.0;
  set_in(k, b, "x", x);
  b.rng_key[0] = 0;
  b.rng_key[1] = 42;
  b.sample_base = 1000;  // a shard whose first sample is global sample 1000
  ir::interpret(k, b);
  const auto& a = out_of(k, b, "a");
  const auto& bb = out_of(k, b, "b");
  for (int64_t i = 0; i < n; ++i) {
    const uint32_t g = static_cast<uint32_t>(1000 + i);
    auto u = [&](uint32_t j) { return rp_uniform_f64(rp_subkey(key_of(b), 0, g, j)); };
    const double want_a = x[i] > 0 ? u(0) : rp_normal_f64(rp_subkey(key_of(b), 0, g, 1));
    EXPECT_EQ(a[i], want_a) << i;
    double want_b = 0.0 + 1.0 * u(2);
    want_b = want_b + 2.0 * u(3);
    want_b = want_b + 3.0 * u(4);
    want_b = want_b + 10.0 * u(5);
    EXPECT_EQ(bb[i], want_b) << i;
  }
}

// A loop of more iterations than a kernel unrolls numbers its draws from the run-time
// iteration as unrolling would: 1 draw before, 2 per iteration (K = 5000), then 1 + 2K.
TEST(RandomInterp, DrawsInALongLoopAreNumberedFromTheIteration) {
  const ir::Kernel k = lowered(
      R"(def walk(x: Scalar, rng: Random, y: Mutable[Scalar], c: Mutable[Scalar], w: Mutable[Scalar]):
    s = x + rng.uniform()
    n = 0.0
    for _ in range(5000):
        s = s + rng.normal()
        if rng.uniform() < 0.25:
            break
        n = n + 1.0
    y = s
    c = n
    w = rng.uniform()
)",
      {Scalar("x"), Rng("rng"), MutScalar("y"), MutScalar("c"), MutScalar("w")});
  int at = 0;
  for (const auto& v : k.values) at += v.op == Op::RandUniformAt || v.op == Op::RandNormalAt;
  EXPECT_EQ(at, 2);
  const int64_t n = 30;
  ir::InterpBinding b = ir::make_binding(k, n);
  set_in(k, b, "x", std::vector<double>(n, 0.5));
  b.rng_key[0] = 3;
  b.rng_key[1] = 4;
  ir::interpret(k, b);
  double most = 0;
  for (int64_t i = 0; i < n; ++i) {
    const uint32_t g = static_cast<uint32_t>(i);
    auto u = [&](uint32_t j) { return rp_uniform_f64(rp_subkey(key_of(b), 0, g, j)); };
    double s = 0.5 + u(0), c = 0;
    for (uint32_t t = 0; t < 5000; ++t) {
      s = s + rp_normal_f64(rp_subkey(key_of(b), 0, g, 1 + 2 * t));
      if (u(2 + 2 * t) < 0.25) break;
      c = c + 1.0;
    }
    EXPECT_EQ(out_of(k, b, "y")[i], s) << i;
    EXPECT_EQ(out_of(k, b, "c")[i], c) << i;
    EXPECT_EQ(out_of(k, b, "w")[i], u(1 + 2 * 5000)) << i;
    most = std::max(most, c);
  }
  EXPECT_GE(most, 5.0);  // some samples run several iterations
}

// ---------------------------------------------------------------------------------------------
// 4. Derived kernels

TEST(RandomAd, UnrolledStepsBecomeStepOffsets) {
  const ir::Kernel u = ad::unroll(walk_kernel());
  std::vector<int64_t> steps;
  for (const ir::Value* v : draws_of(u)) steps.push_back(v->iimm);
  ASSERT_EQ(steps.size(), 8u) << ir::print(u);  // 2 draws x 4 steps
  for (int s = 0; s < 4; ++s) {
    EXPECT_EQ(steps[2 * s], s);
    EXPECT_EQ(steps[2 * s + 1], s);
  }
}

TEST(RandomAd, DerivedKernelsDrawThePrimalNumbers) {
  const ir::Kernel p = walk_kernel();
  const ir::Kernel t = optimized(ad::tangent(p, {"sigma", "x"}, true));
  const ir::Kernel a = optimized(ad::adjoint(p, {"sigma", "x"}));
  EXPECT_GE(t.random_slot(), 0);
  EXPECT_GE(a.random_slot(), 0);
  const int64_t n = 30;
  auto bind = [&](const ir::Kernel& k) {
    ir::InterpBinding b = ir::make_binding(k, n);
    b.rng_key[0] = 7;
    b.rng_key[1] = 8;
    for (size_t s = 0; s < k.slots.size(); ++s) {
      const ir::Slot& sl = k.slots[s];
      if (sl.kind == ir::SlotKind::Param) b.slots[s].in.assign(1, 0.8);
      if (sl.kind == ir::SlotKind::Plane || (sl.kind == ir::SlotKind::Mutable && sl.inout))
        for (int64_t i = 0; i < static_cast<int64_t>(b.slots[s].in.size()); ++i)
          b.slots[s].in[i] = sl.name == "x" ? 0.1 * static_cast<double>(i % 7) : 1.0;
    }
    return b;
  };
  ir::InterpBinding bp = bind(p), bt = bind(t), ba = bind(a);
  ir::interpret(p, bp);
  ir::interpret(t, bt);
  ir::interpret(a, ba);
  EXPECT_EQ(out_of(p, bp, "x"), out_of(t, bt, "x"));  // the tangent's primal outputs
  // sum_i x_dot_i (tangent: sigma_dot = 0.8, x_dot = 1) is sum_i x_bar_i + 0.8 * sigma_bar
  // (adjoint: x_bar = 1): the same draws' contributions, two ways.
  double tangent_total = 0.0;
  for (double v : out_of(t, bt, "x_dot")) tangent_total += v;
  const auto& sbar = out_of(a, ba, "sigma_bar");
  double xbar_total = 0.0;
  for (double v : out_of(a, ba, "x_bar")) xbar_total += v;
  EXPECT_NEAR(tangent_total, 0.8 * sbar[0] + xbar_total, 1e-12 * std::fabs(tangent_total) + 1e-12);
}

TEST(RandomInterface, TheKeyIsAUint32OperandOfFourWords) {
  const ir::Kernel k = walk_kernel();
  const runtime::KernelInterface ifc = runtime::KernelInterface::of(k, runtime::ElemType::F32, "");
  const int rs = k.find_slot("rng");
  EXPECT_EQ(ifc.random_slot(), rs);
  const runtime::SlotInterface& si = ifc.slot(rs);
  EXPECT_EQ(si.role, runtime::SlotRole::Random);
  EXPECT_EQ(si.dtype, runtime::ElemType::U32);
  EXPECT_TRUE(si.is_operand());
  EXPECT_FALSE(si.is_result());
  EXPECT_FALSE(si.sized_by_n());
  EXPECT_EQ(ifc.expected_shape(rs, 100, {}, runtime::Layout::Jax), (std::vector<int64_t>{4}));
  EXPECT_EQ(runtime::role_name(si.role), "random");
  const auto back = runtime::parse_slot_line(runtime::slot_line(si));  // manifests
  ASSERT_TRUE(back.has_value());
  EXPECT_EQ(back->role, runtime::SlotRole::Random);
  EXPECT_EQ(back->dtype, runtime::ElemType::U32);
  EXPECT_THROW(runtime::KernelInterface("k", "", runtime::ElemType::F64, {si, si}),
               std::invalid_argument);  // two Random slots
}

// ---------------------------------------------------------------------------------------------
// 5. Codegen: golden, and compiled against the interpreter

constexpr const char* kFakeDigest =
    "0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef";

std::string read_file(const fs::path& p) {
  std::ifstream in(p, std::ios::binary);
  std::ostringstream os;
  os << in.rdbuf();
  return os.str();
}

TEST(RandomCodegen, GoldenRandomWalk) {
  const ir::Kernel k = walk_kernel();
  const std::string code =
      codegen::emit_cpp({{&k, DType::F64, codegen::symbol_name(k, DType::F64, kFakeDigest)}});
  const fs::path path =
      fs::path(RAPTOR_SOURCE_DIR) / "cpp" / "tests" / "golden" / "random_walk.cpp";
  const char* update = std::getenv("RAPTOR_UPDATE_GOLDEN");
  if (update != nullptr && std::string(update) == "1") {
    std::ofstream(path, std::ios::binary) << code;
    return;
  }
  ASSERT_TRUE(fs::exists(path)) << path << " is missing; run with RAPTOR_UPDATE_GOLDEN=1";
  const std::string want = read_file(path);
  if (code != want) {  // name the first differing line, not the whole unit
    std::istringstream a(code), b(want);
    std::string la, lb;
    int line = 1;
    while (std::getline(a, la) && std::getline(b, lb) && la == lb) ++line;
    ADD_FAILURE() << "generated code differs from " << path << " at line " << line
                  << ":\n  got:    " << la << "\n  golden: " << lb
                  << "\n(if intended: RAPTOR_UPDATE_GOLDEN=1 and review the diff)";
  }
  EXPECT_NE(code.find("#define RAPTOR_RANDOM_H"), std::string::npos);  // random.h pasted once
  EXPECT_NE(code.find("rp_subkey(key_rng, static_cast<uint32_t>(step)"), std::string::npos);
}

TEST(RandomCodegen, CudaUnitPastesTheDeviceFunctions) {
  const ir::Kernel k = walk_kernel();
  const std::string code =
      codegen::emit_cuda({{&k, DType::F32, codegen::symbol_name(k, DType::F32, kFakeDigest)}});
  EXPECT_NE(code.find("#define RAPTOR_RNG_FN __device__ __forceinline__"), std::string::npos);
  EXPECT_EQ(code.find("#include"), std::string::npos);  // NVRTC has no system headers
  EXPECT_NE(code.find("rp_normal_f32(rp_subkey(key_rng, static_cast<uint32_t>(rp_k)"),
            std::string::npos);
}

TEST(RandomCodegen, CompiledEqualsInterpreterAndBoundLaunchesFoldInN) {
  runtime::testing::TempDir dir;
  runtime::Compiler compiler(runtime::open_cache_dir(dir.path().string()));
  const ir::Kernel k = walk_kernel();
  const runtime::BuildResult built = runtime::build_host({&k}, compiler);
  const int64_t n = 3000;
  runtime::ThreadPool pool(3);
  for (DType d : {DType::F64, DType::F32}) {
    const auto& entry = built.kernels.at(0).get(d);
    std::vector<double> x64(n, 0.0);
    std::vector<float> x32(n, 0.0f);
    std::vector<uint8_t> mask(n, 0);
    for (int64_t i = 0; i < n; i += 5) mask[i] = 1;  // preset: skipped
    runtime::Binding b;
    b.n = n;
    b.slots.resize(k.slots.size());
    b.slots[0].param = 0.9;
    void* xp = d == DType::F64 ? static_cast<void*>(x64.data()) : static_cast<void*>(x32.data());
    b.slots[3].in = xp;
    b.slots[3].out = xp;
    b.mask_in = b.mask_out = mask.data();
    runtime::BoundLaunch bound(entry, b, {});
    bound.serial_threshold = 256;  // chunks over the pool
    bound.set_rng(0, 99);
    ir::InterpBinding ib = ir::make_binding(k, n);
    ib.slots[0].in = {0.9};
    ib.slots[3].in.assign(n, 0.0);
    ib.mask = mask;
    ib.float32 = d == DType::F32;
    for (uint32_t launch = 0; launch < 3; ++launch) {
      bound.run(&pool);
      const rp_key kn = rp_fold_in(rp_key{0, 99}, launch);
      ib.rng_key[0] = kn.k0;
      ib.rng_key[1] = kn.k1;
      ir::interpret(k, ib);
      for (int64_t i = 0; i < n; ++i) {
        const double got = d == DType::F64 ? x64[i] : static_cast<double>(x32[i]);
        ASSERT_EQ(got, ib.slots[3].out[i])
            << codegen::dtype_name(d) << " launch " << launch << " sample " << i;
      }
      EXPECT_EQ(mask, ib.mask);
      ib.slots[3].in = ib.slots[3].out;
    }
    EXPECT_EQ(bound.launches(), 3u);
  }
}

}  // namespace
}  // namespace raptor::testing
