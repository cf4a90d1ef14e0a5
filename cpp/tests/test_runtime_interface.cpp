// Tests of a kernel's interface (runtime/interface.hpp): roles, the JAX operand and result
// positions, aliases, shape rules, and the manifest round trip (runtime/manifest.hpp),
// against kernels lowered from source and their adjoints.
#include <gtest/gtest.h>
#include <sys/stat.h>

#include <filesystem>
#include <string>
#include <vector>

#include "ad/adjoint.hpp"
#include "runtime/build.hpp"
#include "runtime/compiler.hpp"
#include "runtime/interface.hpp"
#include "runtime/manifest.hpp"
#include "tests/test_runtime_util.hpp"
#include "tests/test_util_spec.hpp"

namespace raptor::runtime {
namespace {

using namespace raptor::testing;  // NOLINT: the spec helpers (Scalar, Vector, ...)
using Shape64 = std::vector<int64_t>;

// Every role but the sums: a Param, planes, a vector Table, the mask, an in-out Mutable (set
// in one branch only) and a pure Mutable.
ir::Kernel mixed_kernel() {
  return lowered(R"(@hawk.kernel
def mixed(a: Param, x: Vector[3], i: Scalar, w: Table[Vector[2]], done: Terminated,
          y: Mutable[Scalar], z: Mutable[Scalar]):
    if x[0] > 0.0:
        y = a * x[1] + w.at(i)[1]
    z = x[2]
    done = z > a
)",
                 {Param("a"), Vector("x", 3), Scalar("i"), TableVector("w", 2), Terminated("done"),
                  MutScalar("y"), MutScalar("z")});
}

int slot_of(const KernelInterface& ifc, const std::string& name) {
  for (size_t s = 0; s < ifc.num_slots(); ++s)
    if (ifc.slot(s).name == name) return static_cast<int>(s);
  ADD_FAILURE() << "no slot " << name;
  return -1;
}

KernelInterface interface_of(const ir::Kernel& k, codegen::DType d = codegen::DType::F64) {
  return KernelInterface::of(k, d == codegen::DType::F32 ? ElemType::F32 : ElemType::F64,
                             kernel_digest(k, d));
}

TEST(RuntimeInterface, RolesAndDtypes) {
  const ir::Kernel k = mixed_kernel();
  const KernelInterface ifc = interface_of(k, codegen::DType::F32);
  const std::vector<SlotRole> want = {SlotRole::Param,  SlotRole::Plane, SlotRole::Plane,
                                      SlotRole::Table,  SlotRole::Mask,  SlotRole::InOut,
                                      SlotRole::Mutable};
  ASSERT_EQ(ifc.num_slots(), want.size());
  for (size_t s = 0; s < want.size(); ++s) {
    EXPECT_EQ(ifc.slot(s).role, want[s]) << ifc.slot(s).name;
    EXPECT_EQ(ifc.slot(s).name, k.slots[s].name);
    EXPECT_EQ(ifc.slot(s).dtype, want[s] == SlotRole::Mask ? ElemType::Bool : ElemType::F32);
  }
  EXPECT_EQ(ifc.slot(1).width, 3);
  EXPECT_TRUE(ifc.slot(1).is_vector);
  EXPECT_EQ(ifc.slot(3).width, 2);
  EXPECT_EQ(ifc.name(), "mixed");
  EXPECT_EQ(ifc.digest(), kernel_digest(k, codegen::DType::F32));
  EXPECT_EQ(ifc.dtype(), ElemType::F32);
  EXPECT_EQ(ifc.dtype_size(), 4);
  EXPECT_EQ(ifc.mask_slot(), 4);
  EXPECT_TRUE(ifc.has_table());
  for (SlotRole r : {SlotRole::Param, SlotRole::Plane, SlotRole::Mutable, SlotRole::InOut,
                     SlotRole::Mask, SlotRole::Table, SlotRole::ParamSum, SlotRole::TableSum})
    EXPECT_EQ(role_from_name(role_name(r)), r);
  EXPECT_EQ(role_from_name("terminated"), std::nullopt);
}

TEST(RuntimeInterface, BridgePositionsAndAliases) {
  const KernelInterface ifc = interface_of(mixed_kernel());
  // Operands: input slots in signature order (the pure Mutable z is not one).
  EXPECT_EQ(ifc.operands(), (std::vector<int>{0, 1, 2, 3, 4, 5}));
  // Results: Mutables in signature order, then the mask last.
  EXPECT_EQ(ifc.results(), (std::vector<int>{5, 6, 4}));
  for (size_t j = 0; j < ifc.operands().size(); ++j)
    EXPECT_EQ(ifc.slot(ifc.operands()[j]).operand, static_cast<int>(j));
  for (size_t j = 0; j < ifc.results().size(); ++j)
    EXPECT_EQ(ifc.slot(ifc.results()[j]).result, static_cast<int>(j));
  EXPECT_EQ(ifc.slot(6).operand, -1);
  EXPECT_EQ(ifc.slot(0).result, -1);
  // The in-out y's old value (operand 5) becomes result 0; the mask (operand 4) result 2.
  EXPECT_EQ(ifc.aliases(), (std::vector<Alias>{{4, 2}, {5, 0}}));
  EXPECT_EQ(ifc.n_operand_slot(), 1);
  EXPECT_EQ(ifc.n_slot(), 1);
}

TEST(RuntimeInterface, ShapesOfEveryLayout) {
  const KernelInterface ifc = interface_of(mixed_kernel());
  std::vector<int64_t> sizes(ifc.num_slots(), 0);
  sizes[3] = 5;  // w has 5 entries
  EXPECT_EQ(ifc.expected_shape(0, 16, sizes), Shape64{});
  EXPECT_EQ(ifc.expected_shape(1, 16, sizes), (Shape64{3, 16}));
  EXPECT_EQ(ifc.expected_shape(2, 16, sizes), (Shape64{16}));
  EXPECT_EQ(ifc.expected_shape(3, 16, sizes), (Shape64{5, 2}));
  EXPECT_EQ(ifc.expected_shape(4, 16, sizes), (Shape64{16}));
  EXPECT_EQ(ifc.expected_shape(5, 16, sizes), (Shape64{16}));
  EXPECT_EQ(ifc.expected_shape(6, 7, sizes, Layout::Jax), (Shape64{7}));
  EXPECT_TRUE(ifc.shape(1, 16, 0).matches(std::vector<int64_t>{3, 16}));
  EXPECT_FALSE(ifc.shape(1, 16, 0).matches(std::vector<int64_t>{3, 8}));
  EXPECT_FALSE(ifc.shape(1, 16, 0).matches(std::vector<int64_t>{48}));
  EXPECT_EQ(shape_text({3, 16}), "(3, 16)");
  EXPECT_EQ(shape_text({16}), "(16,)");
  EXPECT_EQ(shape_text({}), "()");
}

TEST(RuntimeInterface, SumsOfAnAdjoint) {
  const ir::Kernel adj = optimized(ad::adjoint(mixed_kernel(), {"a", "w", "x"}));
  const KernelInterface ifc = interface_of(adj);
  const int a_bar = slot_of(ifc, "a_bar"), w_bar = slot_of(ifc, "w_bar");
  const int w = slot_of(ifc, "w"), x_bar = slot_of(ifc, "x_bar");
  ASSERT_GE(a_bar, 0);
  ASSERT_GE(w_bar, 0);
  EXPECT_EQ(ifc.slot(a_bar).role, SlotRole::ParamSum);
  EXPECT_EQ(ifc.slot(w_bar).role, SlotRole::TableSum);
  EXPECT_EQ(ifc.slot(w_bar).table_of, w);
  EXPECT_EQ(ifc.slot(x_bar).role, SlotRole::Mutable);
  std::vector<int64_t> sizes(ifc.num_slots(), 0);
  sizes[w] = 9;
  EXPECT_EQ(ifc.expected_shape(a_bar, 4, sizes), (Shape64{1}));            // eagle: (k,)
  EXPECT_EQ(ifc.expected_shape(a_bar, 4, sizes, Layout::Jax), Shape64{});  // JAX: 0-d
  EXPECT_EQ(ifc.expected_shape(w_bar, 4, sizes), (Shape64{9, 2}));         // like its Table
  EXPECT_EQ(ifc.expected_shape(x_bar, 4, sizes), (Shape64{3, 4}));
  // Sums are results, in signature order with the Mutables; the mask stays last.
  EXPECT_TRUE(ifc.slot(a_bar).is_result());
  EXPECT_FALSE(ifc.slot(a_bar).is_operand());
  EXPECT_EQ(ifc.results().back(), ifc.mask_slot());
  for (size_t j = 1; j + 1 < ifc.results().size(); ++j)
    EXPECT_LT(ifc.results()[j - 1], ifc.results()[j]);
}

TEST(RuntimeInterface, RefusesWhatNoKernelHas) {
  SlotInterface t = testing::hand_slot("t", SlotRole::Plane);
  SlotInterface ts = testing::hand_slot("ts", SlotRole::TableSum, 1, 0);
  EXPECT_THROW(KernelInterface("k", "", ElemType::F64, {t, ts}), std::invalid_argument);
  SlotInterface m = testing::hand_slot("m", SlotRole::Mask);
  EXPECT_THROW(KernelInterface("k", "", ElemType::F64, {m, m}), std::invalid_argument);
  // A kernel whose only inputs are Params has no operand to take N from.
  const KernelInterface no_plane(
      "k", "", ElemType::F64,
      {testing::hand_slot("a", SlotRole::Param), testing::hand_slot("y", SlotRole::Mutable)});
  EXPECT_EQ(no_plane.n_operand_slot(), -1);
  EXPECT_EQ(no_plane.n_slot(), 1);
}

TEST(RuntimeInterface, SlotLinesRoundTrip) {
  const KernelInterface ifc = interface_of(mixed_kernel());
  for (const SlotInterface& s : ifc.slots()) {
    const auto back = parse_slot_line(slot_line(s));
    ASSERT_TRUE(back.has_value()) << slot_line(s);
    EXPECT_EQ(back->name, s.name);
    EXPECT_EQ(back->role, s.role);
    EXPECT_EQ(back->width, s.width);
    EXPECT_EQ(back->is_vector, s.is_vector);
    EXPECT_EQ(back->table_of, s.table_of);
    EXPECT_EQ(back->dtype, s.dtype);
  }
  EXPECT_EQ(parse_slot_line("slot 1 3 -1 0 v"), std::nullopt);  // a version-1 line
  EXPECT_EQ(parse_slot_line("slot plane 3 1 -1 float64"), std::nullopt);
  EXPECT_EQ(parse_slot_line("slot plane 3 1 -1 float64 v extra"), std::nullopt);
  EXPECT_EQ(parse_slot_line("slot planes 3 1 -1 float64 v"), std::nullopt);
}

// hawk.min / hawk.max outputs keep their combine through a manifest's slot line (the launcher
// folds their partials by it); a line without one is a sum, as before.
TEST(RuntimeInterface, SlotLinesKeepTheCombine) {
  for (const ir::Combine c : {ir::Combine::Min, ir::Combine::Max}) {
    SlotInterface s = testing::hand_slot("lo", SlotRole::ParamSum);
    s.combine = c;
    const std::string line = slot_line(s);
    EXPECT_EQ(line, std::string("slot param_sum 1 0 -1 float64 lo ") + ir::combine_name(c));
    const auto back = parse_slot_line(line);
    ASSERT_TRUE(back.has_value()) << line;
    EXPECT_EQ(back->combine, c);
    EXPECT_EQ(back->role, SlotRole::ParamSum);
  }
  const auto sum = parse_slot_line("slot param_sum 1 0 -1 float64 s");
  ASSERT_TRUE(sum.has_value());
  EXPECT_EQ(sum->combine, ir::Combine::Sum);
  const auto matrix = parse_slot_line("slot plane 6 1 -1 float64 m 2");
  ASSERT_TRUE(matrix.has_value());
  EXPECT_EQ(matrix->rows, 2);
  EXPECT_EQ(parse_slot_line("slot param_sum 1 0 -1 float64 s min max"), std::nullopt);
  EXPECT_EQ(parse_slot_line("slot param_sum 1 0 -1 float64 s 2x"), std::nullopt);
}

TEST(RuntimeInterface, ManifestRoundTripAndOldVersionSkipped) {
  testing::TempDir tmp;
  const Compiler compiler(open_cache_dir(tmp.path().string()));
  const ir::Kernel adj = optimized(ad::adjoint(mixed_kernel(), {"a", "w"}));
  KernelEntry e = describe_kernel(adj, codegen::DType::F32);
  e.symbol = "raptor_mixed_adjoint";
  const std::string so_key(64, 'a');
  write_manifest(compiler, e, so_key);
  const auto path = tmp.path() / "kernels" / (e.digest + ".kernel");
  const auto text = read_cache_file(path);
  ASSERT_TRUE(text.has_value());
  const auto parsed = parse_manifest(*text);
  ASSERT_TRUE(parsed.has_value()) << *text;
  EXPECT_EQ(parsed->so_key, so_key);
  EXPECT_EQ(parsed->entry.symbol, e.symbol);
  const KernelInterface& a = e.iface;
  const KernelInterface& b = parsed->entry.iface;
  EXPECT_EQ(b.name(), a.name());
  EXPECT_EQ(b.digest(), a.digest());
  EXPECT_EQ(b.dtype(), ElemType::F32);
  EXPECT_EQ(parsed->entry.dtype_size, 4);
  EXPECT_EQ(b.operands(), a.operands());
  EXPECT_EQ(b.results(), a.results());
  EXPECT_EQ(b.aliases(), a.aliases());
  ASSERT_EQ(b.num_slots(), a.num_slots());
  for (size_t s = 0; s < a.num_slots(); ++s) EXPECT_EQ(slot_line(b.slot(s)), slot_line(a.slot(s)));

  // A version-1 manifest (no is_vector, so no shapes to check) is skipped, never misread.
  std::string old = *text;
  old.replace(0, std::string("raptor-kernel 2").size(), "raptor-kernel 1");
  EXPECT_EQ(parse_manifest(old), std::nullopt);
  write_cache_file(path, old);
  const PreloadResult r = preload(compiler);
  EXPECT_EQ(r.registered, 0);
  EXPECT_EQ(r.skipped, 1);
}

// Every cache hit writes its kernels' manifests: one that already says the same is left as it
// is (no temporary file, no rename: the same inode); a damaged or older one is replaced.
TEST(RuntimeInterface, ManifestRewrittenOnlyWhenItDiffers) {
  testing::TempDir tmp;
  const Compiler compiler(open_cache_dir(tmp.path().string()));
  KernelEntry e = describe_kernel(mixed_kernel(), codegen::DType::F64);
  e.symbol = "raptor_mixed";
  const std::string so_key(64, 'b');
  write_manifest(compiler, e, so_key);
  const auto path = tmp.path() / "kernels" / (e.digest + ".kernel");
  const auto want = read_cache_file(path);
  ASSERT_TRUE(want.has_value());
  struct stat before {}, after {};
  ASSERT_EQ(::stat(path.c_str(), &before), 0);
  write_manifest(compiler, e, so_key);
  ASSERT_EQ(::stat(path.c_str(), &after), 0);
  EXPECT_EQ(after.st_ino, before.st_ino);
  EXPECT_EQ(read_cache_file(path), want);

  for (const std::string& damaged : {std::string("raptor-kernel 2\ndigest"), std::string()}) {
    write_cache_file(path, damaged);
    write_manifest(compiler, e, so_key);
    EXPECT_EQ(read_cache_file(path), want);
    ASSERT_TRUE(parse_manifest(*read_cache_file(path)).has_value());
  }
  write_manifest(compiler, e, std::string(64, 'c'));  // the same kernel in another library
  EXPECT_EQ(parse_manifest(*read_cache_file(path))->so_key, std::string(64, 'c'));
}

}  // namespace
}  // namespace raptor::runtime
