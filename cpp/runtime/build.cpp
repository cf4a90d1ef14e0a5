// Building host kernels (see build.hpp). Start at `build_host`.
#include "runtime/build.hpp"

#include <sstream>

#include "runtime/manifest.hpp"
#include "runtime/registry.hpp"
#include "runtime/sha256.hpp"
#include "runtime/work_weight.hpp"

namespace raptor::runtime {

using codegen::DType;

std::string kernel_digest(const ir::Kernel& k, DType dtype) {
  return sha256_hex(ir::canonical(k) + "\ndtype=" + codegen::dtype_name(dtype) +
                    "\nabi=" + std::to_string(RAPTOR_ABI_VERSION));
}

KernelEntry describe_kernel(const ir::Kernel& k, DType dtype) {
  KernelEntry e;
  e.set_interface(KernelInterface::of(k, dtype == DType::F32 ? ElemType::F32 : ElemType::F64,
                                      kernel_digest(k, dtype)));
  e.active_set = k.active_set;
  e.steps = k.steps;
  e.weight = sample_step_weight(k, dtype);
  return e;
}

std::vector<KernelEntry> describe_build(const std::vector<const ir::Kernel*>& kernels,
                                        std::vector<codegen::KernelToEmit>& todo) {
  std::vector<KernelEntry> entries;
  for (const ir::Kernel* k : kernels) {
    for (DType d : {DType::F32, DType::F64}) {
      KernelEntry e = describe_kernel(*k, d);
      e.symbol = codegen::symbol_name(*k, d, e.digest);
      todo.push_back({k, d, e.symbol});
      entries.push_back(std::move(e));
    }
  }
  return entries;
}

namespace {

// The user's location nearest above generated line `line`: the last "// file:line  text"
// comment before it, and the kernel whose function it is in.
std::string locate(const std::string& source, int line) {
  std::istringstream in(source);
  std::string text, where, kernel;
  for (int i = 1; std::getline(in, text) && i <= line; ++i) {
    const size_t first = text.find_first_not_of(' ');
    if (first == std::string::npos) continue;
    if (text.compare(first, 15, "// ---- kernel ") == 0) {
      kernel = text.substr(first + 15);
      where.clear();
    } else if (text.compare(first, 3, "// ") == 0 && text.find(':') != std::string::npos &&
               first >= 4) {
      where = text.substr(first + 3);
    }
  }
  std::string out = kernel.empty() ? "" : "kernel " + kernel;
  if (!where.empty()) out += (out.empty() ? "" : ", at ") + where;
  return out;
}

}  // namespace

BuildResult build_host(const std::vector<const ir::Kernel*>& kernels, Compiler& compiler,
                       const CompileOptions& options) {
  std::vector<codegen::KernelToEmit> todo;
  std::vector<KernelEntry> entries = describe_build(kernels, todo);
  const std::string source = codegen::emit_cpp(todo);
  BuildResult result;
  try {
    result.compile = compiler.compile(source, options);
  } catch (const CompileFailure& f) {
    // A full disk is not a code generation bug: say where space ran out and what to do.
    if (f.compiler_output.find("No space left on device") != std::string::npos)
      throw std::runtime_error(
          "raptor: the cache directory '" + compiler.cache().path.string() +
          "' ran out of disk space while the kernels were compiled (No space left on device); "
          "free space there or choose another directory (cache_dir=, $RAPTOR_CACHE_DIR). The "
          "compiler said:\n" +
          f.compiler_output.substr(0, 2000));
    std::string msg = "hawk: the C++ compiler rejected the code generated for ";
    const std::string where = f.line > 0 ? locate(f.source, f.line) : "";
    msg += where.empty() ? "these kernels" : where;
    if (f.line > 0)
      msg += " (generated line " + std::to_string(f.line) + " of " + f.source_path.string() + ")";
    msg += ":\n" + f.compiler_output.substr(0, 4000);
    throw std::runtime_error(msg);
  }
  for (size_t i = 0; i < kernels.size(); ++i) {
    BuiltKernel bk;
    for (int j = 0; j < 2; ++j) {
      KernelEntry e = entries[2 * i + j];
      e.module = result.compile.module;
      e.fn = e.module->symbol(e.symbol);
      write_manifest(compiler, e, result.compile.key);
      const std::string digest = e.digest;
      auto shared =
          global_registry().add(digest, std::make_shared<const KernelEntry>(std::move(e)));
      (j == 0 ? bk.f32 : bk.f64) = shared;
    }
    result.kernels.push_back(std::move(bk));
  }
  return result;
}

}  // namespace raptor::runtime
