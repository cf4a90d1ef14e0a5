// The CUDA code generator (codegen emit_cuda) and CUDA builds (runtime/cuda_build.hpp): the
// CUDA C++ of several kernels, primal and derived, in float32 and float64, compiles with NVRTC
// to PTX and to cubins for sm_80 and sm_90 that export every kernel and every `_finish`; the
// sums over samples use no atomics in the kernel's dtype (checked in the PTX); the error codes
// come from abi.h only; compile_cuda caches by source, arch and NVRTC version.
// NVRTC needs no GPU; on a machine without the CUDA toolkit these tests are skipped, saying so.
// The kernels are compiled, never run here (no GPU): see tests/test_cuda_compile.py.
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <regex>

#include "ad/adjoint.hpp"
#include "ad/tangent.hpp"
#include "codegen/cpp_emitter.hpp"
#include "runtime/abi_source.hpp"
#include "runtime/cache.hpp"
#include "runtime/compiler.hpp"
#include "runtime/cuda_build.hpp"
#include "runtime/nvrtc.hpp"
#include "test_runtime_util.hpp"
#include "test_util_spec.hpp"

namespace raptor {
namespace {

using codegen::DType;
using namespace raptor::testing;

// Every NumPy-named function of hawk.math (ir/math_fns.hpp) in one kernel.
ir::Kernel numpy_functions() {
  return lowered(R"(def numpy_fns(x: Scalar, y: Scalar, z: Mutable[Scalar]):
    a = asin(tanh(x)) + acos(tanh(y)) + atan(x) + sinh(x) + cosh(y) + asinh(x) + acosh(y * y + 1.0)
    b = atanh(tanh(x) * 0.5) + erf(x) + erfc(y) + exp2(x) + expm1(y) + log1p(y * y) + log2(y * y + 1.0)
    c = log10(x * x + 1.0) + cbrt(x) + ceil(x) + round(y) + trunc(x) + hypot(x, y) + fmod(x, y)
    d = remainder(x, y) + copysign(x, y) + fdim(x, y) + fma(x, y, a) + rsqrt(x * x + 1.0)
    z = where(isnan(a) or isinf(b) or not isfinite(c), 0.0, a + b + c + d + clip(x, -1.0, y))
)",
                 {Scalar("x"), Scalar("y"), MutScalar("z")}, 1);
}

std::vector<ir::Kernel> kernels() {
  std::vector<ir::Kernel> ks;
  ks.push_back(
      lowered(R"(def drag(v: Vector[3], cd: Param, dt: Param, g: Param, v_next: Mutable[Vector[3]]):
    a = vec(0.0, 0.0, -g) - cd * norm(v) * v
    v_next = v + dt * a
)",
              {Vector("v", 3), Param("cd"), Param("dt"), Param("g"), MutVector("v_next", 3)}, 1));
  ks.push_back(stepped_oscillator(8));
  ks.push_back(lowered(R"(def table(i: Scalar, w: Table[Scalar], y: Mutable[Scalar]):
    f = w.at(i)
    if f > 0.0:
        y = sqrt(f) + minimum(f, 1.0) + sign(f) + atan2(f, 2.0) + f ** 2.5
    else:
        y = tanh(f) + exp(f) + abs(f)
)",
                       {Scalar("i"), TableScalar("w"), MutScalar("y")}, 1));
  ks.push_back(optimized(ad::adjoint(ks[0], {"v", "cd"})));       // a ParamSum
  ks.push_back(optimized(ad::adjoint(ks[2], {"w"})));             // a TableSum
  ks.push_back(optimized(ad::tangent(ks[1], {"x", "c"}, true)));  // unrolled steps, a mask
  ks.push_back(optimized(ad::adjoint(numpy_functions(), {"x", "y"})));  // hawk.math's NumPy names
  return ks;
}

bool sums(const ir::Kernel& k) {
  for (const ir::Slot& s : k.slots)
    if (s.kind == ir::SlotKind::ParamSum || s.kind == ir::SlotKind::TableSum) return true;
  return false;
}

std::vector<codegen::KernelToEmit> both_dtypes(const std::vector<ir::Kernel>& ks) {
  std::vector<codegen::KernelToEmit> todo;
  for (const ir::Kernel& k : ks)
    for (DType d : {DType::F32, DType::F64})
      todo.push_back({&k, d, codegen::symbol_name(k, d, "0123456789abcdef")});
  return todo;
}

TEST(CudaCodegen, CompilesWithNvrtcToPtxForEveryKernelAndDtype) {
  const auto nvrtc = runtime::Nvrtc::open();
  if (!nvrtc) GTEST_SKIP() << "no NVRTC on this machine (set RAPTOR_NVRTC to its path)";
  const std::vector<ir::Kernel> ks = kernels();
  const std::vector<codegen::KernelToEmit> todo = both_dtypes(ks);
  const std::string cuda = codegen::emit_cuda(todo);
  EXPECT_NE(
      cuda.find("__global__ void raptor_drag_0123456789abcdef_f64(const raptor_cuda_args args)"),
      std::string::npos);
  EXPECT_NE(cuda.find("a = vec(0.0, 0.0, -g) - cd * norm(v) * v"), std::string::npos)
      << "comments map generated code to the user's lines";
  const std::string ptx = nvrtc->compile_ptx(cuda, "kernels.cu", "compute_75");
  for (const auto& t : todo) {
    EXPECT_NE(ptx.find(".entry " + t.symbol + "("), std::string::npos)
        << t.symbol << " missing from the PTX";
    EXPECT_EQ(ptx.find(".entry " + t.symbol + "_finish(") != std::string::npos, sums(*t.kernel))
        << t.symbol << ": a _finish kernel exactly when the kernel sums over samples";
  }
}

// A unit with a Random kernel has the key step of bound launches (runtime/abi_cuda.h) as its
// own entry, once, however many Random kernels it holds; a unit without one has none.
TEST(CudaCodegen, RandomUnitsHaveOneKeyStepEntry) {
  const auto nvrtc = runtime::Nvrtc::open();
  if (!nvrtc) GTEST_SKIP() << "no NVRTC on this machine (set RAPTOR_NVRTC to its path)";
  std::vector<ir::Kernel> ks;
  ks.push_back(lowered(R"(def walk(s: Param, rng: Random, x: Mutable[Scalar]):
    x = x + s * rng.normal()
)",
                       {Param("s"), param_spec("rng", ir::SlotKind::Random), MutScalar("x")}, 1));
  const std::string entry = std::string(".entry ") + codegen::kCudaRngAdvanceSymbol + "(";
  const std::string ptx =
      nvrtc->compile_ptx(codegen::emit_cuda(both_dtypes(ks)), "r.cu", "compute_75");
  const size_t at = ptx.find(entry);
  EXPECT_NE(at, std::string::npos) << ptx.substr(0, 2000);
  EXPECT_EQ(ptx.find(entry, at + 1), std::string::npos) << "one key step per unit";
  const std::string plain =
      nvrtc->compile_ptx(codegen::emit_cuda(both_dtypes(kernels())), "p.cu", "compute_75");
  EXPECT_EQ(plain.find(entry), std::string::npos);
}

// Issue 9 item 6: no per-thread global atomics in the kernel's dtype. In PTX a float atomic
// add is atom/red ... add.f32 / add.f64; the integer ones that merge counts stay.
TEST(CudaCodegen, SumsUseNoFloatAtomics) {
  const auto nvrtc = runtime::Nvrtc::open();
  if (!nvrtc) GTEST_SKIP() << "no NVRTC on this machine (set RAPTOR_NVRTC to its path)";
  const std::vector<ir::Kernel> ks = kernels();
  const std::string cuda = codegen::emit_cuda(both_dtypes(ks));
  const std::string ptx = nvrtc->compile_ptx(cuda, "kernels.cu", "compute_80");
  EXPECT_FALSE(std::regex_search(ptx, std::regex(R"((atom|red)\.[a-z.]*add\.f(16|32|64))")))
      << "a float atomic add in the PTX";
  EXPECT_NE(cuda.find("rp_table_add(part_w"), std::string::npos) << "TableSum: block partials";
  EXPECT_NE(cuda.find("rp_block_sum(acc_cd"), std::string::npos) << "ParamSum: block partials";
  // Outside the shared helpers, the kernels call no atomics at all.
  const std::string kernels_part = cuda.substr(cuda.find("// ---- kernel"));
  EXPECT_EQ(kernels_part.find("atomic"), std::string::npos);
}

TEST(CudaCodegen, ErrorCodesComeOnlyFromAbiH) {
  const std::vector<ir::Kernel> ks = kernels();
  const std::string cuda = codegen::emit_cuda(both_dtypes(ks));
  const std::string codes(runtime::abi_error_codes_source());
  ASSERT_NE(codes.find("#define RAPTOR_ERR_TABLE_INDEX 1"), std::string::npos) << codes;
  EXPECT_NE(cuda.find(codes), std::string::npos) << "abi.h's error codes, pasted";
  const size_t first = cuda.find("#define RAPTOR_ERR_TABLE_INDEX");
  EXPECT_EQ(cuda.find("#define RAPTOR_ERR_TABLE_INDEX", first + 1), std::string::npos)
      << "one definition of the code";
  EXPECT_NE(std::string(runtime::abi_header_source()).find(codes.substr(0, codes.find('\n'))),
            std::string::npos);
}

TEST(CudaCodegen, CompilesToCubinForSm80AndSm90) {
  const auto nvrtc = runtime::Nvrtc::open();
  if (!nvrtc) GTEST_SKIP() << "no NVRTC on this machine (set RAPTOR_NVRTC to its path)";
  const std::vector<ir::Kernel> ks = kernels();
  const std::string cuda = codegen::emit_cuda(both_dtypes(ks));
  for (const char* arch : {"sm_80", "sm_90"}) {
    const std::string cubin = nvrtc->compile_cubin(cuda, "kernels.cu", arch);
    ASSERT_GT(cubin.size(), 4u) << arch;
    EXPECT_EQ(cubin.substr(0, 4), std::string("\x7f"
                                              "ELF"))
        << arch << ": a cubin is an ELF file";
    for (const auto& t : both_dtypes(ks))
      EXPECT_NE(cubin.find(t.symbol), std::string::npos)
          << t.symbol << " not in the " << arch << " cubin";
  }
}

TEST(CudaBuild, CompileCudaCachesByArchAndVerifiesTheCachedBytes) {
  if (!runtime::Nvrtc::open()) GTEST_SKIP() << "no NVRTC on this machine";
  runtime::testing::TempDir dir;
  const runtime::Compiler compiler(runtime::open_cache_dir(dir.path().string()));
  const std::vector<ir::Kernel> ks = kernels();
  const std::vector<const ir::Kernel*> ptrs = {&ks[3], &ks[4]};  // a ParamSum, a TableSum
  const runtime::CudaBinary first = runtime::compile_cuda(ptrs, compiler, "sm_90");
  EXPECT_EQ(first.format, runtime::CudaFormat::Cubin);
  EXPECT_FALSE(first.cache_hit);
  ASSERT_EQ(first.kernels.size(), 4u);  // two kernels in two dtypes
  for (const auto& k : first.kernels) {
    EXPECT_EQ(k.finish, k.entry.symbol + "_finish");
    EXPECT_NE(first.bytes.find(k.finish), std::string::npos);
  }
  const runtime::CudaBinary again = runtime::compile_cuda(ptrs, compiler, "sm_90");
  EXPECT_TRUE(again.cache_hit);
  EXPECT_EQ(again.bytes, first.bytes);
  EXPECT_EQ(again.key, first.key);

  const runtime::CudaBinary ptx = runtime::compile_cuda(ptrs, compiler, "compute_80");
  EXPECT_EQ(ptx.format, runtime::CudaFormat::Ptx);
  EXPECT_NE(ptx.key, first.key) << "the arch is part of the key";
  EXPECT_NE(ptx.bytes.find(".entry"), std::string::npos);

  // A cached cubin whose bytes no longer match its digest is not loaded but rebuilt.
  const auto path = compiler.cache().path / first.key.substr(0, 2) / (first.key + ".cubin");
  ASSERT_TRUE(std::filesystem::exists(path));
  std::ofstream(path, std::ios::binary | std::ios::trunc) << "not a cubin";
  const runtime::CudaBinary rebuilt = runtime::compile_cuda(ptrs, compiler, "sm_90");
  EXPECT_FALSE(rebuilt.cache_hit);
  EXPECT_EQ(rebuilt.bytes, first.bytes);
  EXPECT_EQ(runtime::testing::count_temp_files(compiler.cache().path), 0);

  EXPECT_THROW(runtime::compile_cuda(ptrs, compiler, "volta"), std::invalid_argument);
}

TEST(CudaCodegen, NvrtcReportsErrorsWithItsLog) {
  const auto nvrtc = runtime::Nvrtc::open();
  if (!nvrtc) GTEST_SKIP() << "no NVRTC on this machine (set RAPTOR_NVRTC to its path)";
  try {
    nvrtc->compile_ptx("extern \"C\" __global__ void f() { undeclared = 1; }", "bad.cu",
                       "compute_75");
    FAIL() << "NVRTC accepted invalid code";
  } catch (const std::runtime_error& e) {
    EXPECT_NE(std::string(e.what()).find("bad.cu"), std::string::npos);
    EXPECT_NE(std::string(e.what()).find("undeclared"), std::string::npos);
  }
}

}  // namespace
}  // namespace raptor
