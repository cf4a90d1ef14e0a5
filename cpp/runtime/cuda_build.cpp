// CUDA builds (see cuda_build.hpp). Start at build_cuda.
#include "runtime/cuda_build.hpp"

#include <stdexcept>

#include "codegen/cpp_emitter.hpp"
#include "runtime/build.hpp"
#include "runtime/cache.hpp"
#include "runtime/sha256.hpp"

namespace raptor::runtime {

CudaKernel::CudaKernel(KernelEntry slots, std::string ptx, std::string symbol)
    : slots_(std::move(slots)), ptx_(std::move(ptx)), symbol_(std::move(symbol)) {}

bool CudaKernel::reads_tables() const {
  for (const ir::SlotKind k : slots_.kinds)
    if (k == ir::SlotKind::Table) return true;
  return false;
}

cuda::CUfunction CudaKernel::function(const cuda::Driver& driver) const {
  const cuda::CUcontext ctx = driver.current_context();
  const std::lock_guard lock(mu_);
  if (auto it = loaded_.find(ctx); it != loaded_.end()) return it->second;
  const cuda::CUfunction f = driver.function(driver.load_ptx(ptx_), symbol_);
  loaded_[ctx] = f;
  return f;
}

void CudaRegistry::add(const std::string& digest, std::shared_ptr<const CudaKernel> kernel) {
  const std::unique_lock lock(mu_);
  kernels_.try_emplace(digest, std::move(kernel));
}

std::shared_ptr<const CudaKernel> CudaRegistry::find(std::string_view digest) const {
  const std::shared_lock lock(mu_);
  const auto it = kernels_.find(digest);
  return it == kernels_.end() ? nullptr : it->second;
}

CudaRegistry& cuda_registry() {
  static CudaRegistry registry;
  return registry;
}

int build_cuda(const std::vector<const ir::Kernel*>& kernels, const Compiler& compiler) {
  const auto nvrtc = Nvrtc::open();
  if (!nvrtc)
    throw std::runtime_error(
        "raptor: building kernels for CUDA needs NVRTC (libnvrtc.so from the CUDA toolkit or the "
        "nvidia-cuda-nvrtc wheel); set RAPTOR_NVRTC to its path");
  std::vector<codegen::KernelToEmit> todo;
  std::vector<KernelEntry> entries = describe_build(kernels, todo);
  const std::string source = codegen::emit_cuda(todo);
  const std::string key =
      sha256_hex(source + "\nnvrtc " + nvrtc->version() + " " + kCudaArch + "\n");
  const auto shard = compiler.cache().path / key.substr(0, 2);
  ensure_private_dir(shard, /*allow_symlink=*/false);
  const auto ptx_path = shard / (key + ".ptx");
  std::string ptx;
  if (const auto cached = read_cache_file(ptx_path)) {
    ptx = *cached;
  } else {
    ptx = nvrtc->compile_ptx(source, key.substr(0, 16) + ".cu", kCudaArch);
    write_cache_file(ptx_path, ptx);
    write_cache_file(shard / (key + ".cu"), source);
  }
  int registered = 0;
  for (KernelEntry& e : entries) {
    const std::string digest = e.digest;
    const std::string symbol = e.symbol;
    cuda_registry().add(digest, std::make_shared<const CudaKernel>(std::move(e), ptx, symbol));
    ++registered;
  }
  return registered;
}

}  // namespace raptor::runtime
