// Tests of stage boundaries (passes/stages.hpp; docs/language.md "Stage boundaries"): a
// reduction whose value the same body reads is lowered as a ParamSum store plus reads of a
// linked Param, and split into stages:
// 1. the split: two stages for one level of reductions, three for a reduction of a reduced
//    value; what each stage's slots are; both stages run by the interpreter, the first's sum
//    passed to the second, against the arithmetic written out;
// 2. a golden file of the host C++ of both stages of a mean-field kernel (cpp/tests/golden/
//    stage_boundary.cpp; RAPTOR_UPDATE_GOLDEN=1 ./raptor_tests --gtest_filter='CodegenGolden*'
//    rewrites it), and the CUDA emission of both stages;
// 3. the emitters refuse the unsplit kernel, naming it and the reduction's line;
// 4. hawk.mean(x, where=c): its count is a first stage.
#include <gtest/gtest.h>

#include <cmath>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>
#include <vector>

#include "codegen/cpp_emitter.hpp"
#include "ir/interp.hpp"
#include "passes/stages.hpp"
#include "test_util_spec.hpp"

#ifndef RAPTOR_SOURCE_DIR
#error "RAPTOR_SOURCE_DIR must be defined for the tests (see CMakeLists.txt)"
#endif

namespace raptor::testing {
namespace {

namespace fs = std::filesystem;
using codegen::DType;

ir::ParamSpec SumOut(std::string n) {
  ir::ParamSpec p = Param(std::move(n));
  p.kind = ir::SlotKind::ParamSum;
  return p;
}

// The mean-field coupling: m = mean(sin x) read back, and a sum inside an expression.
ir::Kernel mean_field_kernel() {
  SpecOptions opt;
  opt.file = "examples/mean_field.py";
  opt.first_line = 10;
  return optimized(lower_source(R"(@hawk.kernel
def mean_field(x: Scalar, k: Param, m: Mutable[Param], f: Mutable[Scalar]):
    m = hawk.mean(sin(x))
    f = k * (sin(x) - m) + hawk.sum(x, where=x > 0.5)
)",
                                {Scalar("x"), Param("k"), SumOut("m"), MutScalar("f")},
                                with_math({{"hawk", module("hawk")}}), opt));
}

std::vector<std::string> slot_names(const ir::Kernel& k) {
  std::vector<std::string> out;
  for (const ir::Slot& s : k.slots) out.push_back(s.name + ":" + ir::slot_kind_name(s.kind));
  return out;
}

TEST(Stages, SplitsAtTheBoundaryAndRunsInOrder) {
  const ir::Kernel k = mean_field_kernel();
  ASSERT_EQ(k.stage_links.size(), 2u);
  const passes::Stages st = passes::split_stages(k);
  ASSERT_EQ(st.kernels.size(), 2u);
  EXPECT_EQ(st.link_stage, (std::vector<int>{0, 0}));
  EXPECT_EQ(slot_names(st.kernels[0]),
            (std::vector<std::string>{"x:plane", "m:param_sum", "hawk_sum0:param_sum"}));
  EXPECT_EQ(slot_names(st.kernels[1]),
            (std::vector<std::string>{"x:plane", "k:param", "f:mutable", "m_value:param",
                                      "hawk_sum0_value:param"}));
  for (const ir::Kernel& s : st.kernels) EXPECT_TRUE(s.stage_links.empty());

  const std::vector<double> x = {-1.0, 0.25, 0.75, 2.0, 0.5};
  const int64_t n = static_cast<int64_t>(x.size());
  ir::InterpBinding b1 = ir::make_binding(st.kernels[0], n);
  set_in(st.kernels[0], b1, "x", x);
  ir::interpret(st.kernels[0], b1);
  double m = 0.0, p = 0.0;
  for (const double v : x) {
    m += std::sin(v) / static_cast<double>(n);
    if (v > 0.5) p += v;
  }
  EXPECT_NEAR(out_of(st.kernels[0], b1, "m")[0], m, 1e-15);
  EXPECT_EQ(out_of(st.kernels[0], b1, "hawk_sum0")[0], p);
  ir::InterpBinding b2 = ir::make_binding(st.kernels[1], n);
  set_in(st.kernels[1], b2, "x", x);
  set_in(st.kernels[1], b2, "k", {1.5});
  set_in(st.kernels[1], b2, "m_value", out_of(st.kernels[0], b1, "m"));
  set_in(st.kernels[1], b2, "hawk_sum0_value", out_of(st.kernels[0], b1, "hawk_sum0"));
  ir::interpret(st.kernels[1], b2);
  for (int64_t i = 0; i < n; ++i)
    EXPECT_NEAR(out_of(st.kernels[1], b2, "f")[i], 1.5 * (std::sin(x[i]) - m) + p, 1e-14);
}

TEST(Stages, AReductionOfAReducedValueIsAThirdStage) {
  const ir::Kernel k = optimized(lower_source(R"(@hawk.kernel
def zscore(x: Scalar, v: Mutable[Param], z: Mutable[Scalar]):
    d = x - hawk.mean(x)
    v = hawk.mean(d * d)
    z = d / sqrt(v)
)",
                                              {Scalar("x"), SumOut("v"), MutScalar("z")},
                                              with_math({{"hawk", module("hawk")}})));
  const passes::Stages st = passes::split_stages(k);
  ASSERT_EQ(st.kernels.size(), 3u);
  EXPECT_EQ(st.link_stage, (std::vector<int>{0, 1}));
  EXPECT_EQ(slot_names(st.kernels[1]),
            (std::vector<std::string>{"x:plane", "v:param_sum", "hawk_mean0_value:param"}));
}

// hawk.mean(x, where=c): the count of the selected samples is a hidden sum of 1.0 of the first
// stage, the mean (the sum of x / count where c) is in the body's stage; run by the interpreter.
TEST(Stages, AMeanWithWhereCountsFirst) {
  const ir::Kernel k = optimized(lower_source(R"(@hawk.kernel
def pmean(x: Scalar, m: Mutable[Param]):
    m = hawk.mean(x, where=x > 0.0)
)",
                                              {Scalar("x"), SumOut("m")},
                                              with_math({{"hawk", module("hawk")}})));
  const passes::Stages st = passes::split_stages(k);
  ASSERT_EQ(st.kernels.size(), 2u);
  EXPECT_EQ(slot_names(st.kernels[0]),
            (std::vector<std::string>{"x:plane", "hawk_count0:param_sum"}));
  EXPECT_EQ(slot_names(st.kernels[1]),
            (std::vector<std::string>{"x:plane", "m:param_sum", "hawk_count0_value:param"}));
  const std::vector<double> x = {-1.0, 0.25, 0.75, 2.0, -0.5};
  const int64_t n = static_cast<int64_t>(x.size());
  ir::InterpBinding b1 = ir::make_binding(st.kernels[0], n);
  set_in(st.kernels[0], b1, "x", x);
  ir::interpret(st.kernels[0], b1);
  EXPECT_EQ(out_of(st.kernels[0], b1, "hawk_count0")[0], 3.0);
  ir::InterpBinding b2 = ir::make_binding(st.kernels[1], n);
  set_in(st.kernels[1], b2, "x", x);
  set_in(st.kernels[1], b2, "hawk_count0_value", out_of(st.kernels[0], b1, "hawk_count0"));
  ir::interpret(st.kernels[1], b2);
  EXPECT_NEAR(out_of(st.kernels[1], b2, "m")[0], 3.0 / 3.0, 1e-15);
}

TEST(Stages, EmittersRefuseTheUnsplitKernel) {
  const ir::Kernel k = mean_field_kernel();
  try {
    codegen::emit_cpp({{&k, DType::F64, "raptor_mean_field_f64"}});
    FAIL() << "emit_cpp accepted a kernel with a stage boundary";
  } catch (const std::invalid_argument& e) {
    EXPECT_NE(std::string(e.what()).find("the C++ emitter: kernel 'mean_field' has a stage boundary "
                                         "(the reduction at line 12 is read in the same body)"),
              std::string::npos)
        << e.what();
  }
  EXPECT_THROW(codegen::emit_cuda({{&k, DType::F64, "raptor_mean_field_f64"}}),
               std::invalid_argument);
}

TEST(Stages, CudaEmissionOfBothStages) {
  const passes::Stages st = passes::split_stages(mean_field_kernel());
  const std::string cuda = codegen::emit_cuda({{&st.kernels[0], DType::F64, "raptor_mf_s1_f64"},
                                               {&st.kernels[1], DType::F32, "raptor_mf_s2_f32"}});
  EXPECT_NE(cuda.find("raptor_mf_s1_f64"), std::string::npos);
  EXPECT_NE(cuda.find("rp_block_sum(acc_m"), std::string::npos) << "stage 1: block partials of m";
  EXPECT_NE(cuda.find("raptor_mf_s2_f32"), std::string::npos);
}

std::string read_file(const fs::path& p) {
  std::ifstream in(p, std::ios::binary);
  std::ostringstream os;
  os << in.rdbuf();
  return os.str();
}

// The host C++ of both stages in one unit, as eagle builds them (each with its own symbol).
TEST(CodegenGolden, StageBoundary) {
  const passes::Stages st = passes::split_stages(mean_field_kernel());
  const std::string code = codegen::emit_cpp(
      {{&st.kernels[0], DType::F64, "raptor_mean_field_stage1_0123456789abcdef_f64"},
       {&st.kernels[1], DType::F64, "raptor_mean_field_stage2_0123456789abcdef_f64"}});
  const fs::path path =
      fs::path(RAPTOR_SOURCE_DIR) / "cpp" / "tests" / "golden" / "stage_boundary.cpp";
  const char* update = std::getenv("RAPTOR_UPDATE_GOLDEN");
  if (update != nullptr && std::string(update) == "1") {
    std::ofstream(path, std::ios::binary) << code;
    return;
  }
  ASSERT_TRUE(fs::exists(path)) << path << " is missing; run with RAPTOR_UPDATE_GOLDEN=1";
  EXPECT_EQ(code, read_file(path)) << "generated code differs from " << path
                                   << " (if intended: RAPTOR_UPDATE_GOLDEN=1, review the diff)";
}

}  // namespace
}  // namespace raptor::testing
