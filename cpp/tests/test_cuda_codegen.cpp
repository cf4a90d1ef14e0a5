// The CUDA code generator (codegen emit_cuda): the CUDA C++ of several kernels, primal and
// derived, in float32 and float64, compiles with NVRTC to PTX that exports every kernel.
// NVRTC needs no GPU; on a machine without the CUDA toolkit these tests are skipped, saying so.
#include <gtest/gtest.h>

#include "ad/adjoint.hpp"
#include "ad/tangent.hpp"
#include "codegen/cpp_emitter.hpp"
#include "runtime/nvrtc.hpp"
#include "test_util_spec.hpp"

namespace raptor {
namespace {

using codegen::DType;
using namespace raptor::testing;

std::vector<ir::Kernel> kernels() {
  std::vector<ir::Kernel> ks;
  ks.push_back(
      lowered(R"(def drag(v: Vector[3], cd: Param, dt: Param, g: Param, v_next: Mutable[Vector[3]]):
    a = vec(0.0, 0.0, -g) - cd * norm(v) * v
    v_next = v + dt * a
)",
              {Vector("v", 3), Param("cd"), Param("dt"), Param("g"), MutVector("v_next", 3)}, 1));
  ks.push_back(lowered(
      R"(def osc(dt: Param, c: Param, t_final: Scalar, terminated: Terminated, x: Mutable[Scalar], v: Mutable[Scalar], t: Mutable[Scalar]):
    vn = v + dt * (-x - c * v)
    x = x + dt * v
    v = vn
    t = t + dt
    terminated = t >= t_final
)",
      {Param("dt"), Param("c"), Scalar("t_final"), Terminated("terminated"), MutScalar("x"),
       MutScalar("v"), MutScalar("t")},
      8));
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
  return ks;
}

TEST(CudaCodegen, CompilesWithNvrtcToPtxForEveryKernelAndDtype) {
  const auto nvrtc = runtime::Nvrtc::open();
  if (!nvrtc) GTEST_SKIP() << "no NVRTC on this machine (set RAPTOR_NVRTC to its path)";
  const std::vector<ir::Kernel> ks = kernels();
  std::vector<codegen::KernelToEmit> todo;
  for (const ir::Kernel& k : ks)
    for (DType d : {DType::F32, DType::F64})
      todo.push_back({&k, d, codegen::symbol_name(k, d, "0123456789abcdef")});
  const std::string cuda = codegen::emit_cuda(todo);
  EXPECT_NE(
      cuda.find("__global__ void raptor_drag_0123456789abcdef_f64(const raptor_cuda_args args)"),
      std::string::npos);
  EXPECT_NE(cuda.find("atomicAdd"), std::string::npos);
  EXPECT_NE(cuda.find("a = vec(0.0, 0.0, -g) - cd * norm(v) * v"), std::string::npos)
      << "comments map generated code to the user's lines";
  const std::string ptx = nvrtc->compile_ptx(cuda, "kernels.cu", "compute_75");
  for (const auto& t : todo)
    EXPECT_NE(ptx.find(".entry " + t.symbol), std::string::npos)
        << t.symbol << " missing from the PTX";
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
