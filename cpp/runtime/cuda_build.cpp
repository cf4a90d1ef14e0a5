// CUDA builds (see cuda_build.hpp). Start at compile_cuda, then build_cuda.
#include "runtime/cuda_build.hpp"

#include <cerrno>
#include <cstring>
#include <stdexcept>

#include "codegen/cpp_emitter.hpp"
#include "runtime/build.hpp"
#include "runtime/cache.hpp"
#include "runtime/sha256.hpp"

namespace raptor::runtime {

namespace fs = std::filesystem;

namespace {

// The cached binary when it is ours and its bytes match the digest sidecar.
std::optional<std::string> read_verified(const fs::path& bin, const fs::path& sidecar) {
  const auto want = read_cache_file(sidecar);
  if (!want || want->size() < 64) return std::nullopt;
  auto bytes = read_cache_file(bin);
  if (!bytes || sha256_hex(*bytes) != want->substr(0, 64)) return std::nullopt;
  return bytes;
}

CudaFormat format_of(const std::string& arch) {
  auto digits_after = [&](const char* prefix) {
    const size_t n = std::strlen(prefix);
    if (arch.compare(0, n, prefix) != 0 || arch.size() == n) return false;
    for (size_t i = n; i < arch.size(); ++i)
      if (!(std::isdigit(static_cast<unsigned char>(arch[i])) ||
            (i + 1 == arch.size() && (arch[i] == 'a' || arch[i] == 'f'))))
        return false;
    return true;
  };
  if (digits_after("sm_")) return CudaFormat::Cubin;
  if (digits_after("compute_")) return CudaFormat::Ptx;
  throw std::invalid_argument(
      "raptor: a CUDA architecture is sm_XX (cubin) or compute_XX (PTX), "
      "not '" +
      arch + "'");
}

std::string kernel_names(const std::vector<const ir::Kernel*>& kernels) {
  std::string out;
  for (const ir::Kernel* k : kernels) out += (out.empty() ? "" : ", ") + k->name;
  return out;
}

bool sums_over_samples(const ir::Kernel& k) {
  for (const ir::Slot& s : k.slots)
    if (s.kind == ir::SlotKind::ParamSum || s.kind == ir::SlotKind::TableSum) return true;
  return false;
}

}  // namespace

CudaBinary compile_cuda(const std::vector<const ir::Kernel*>& kernels, const Compiler& compiler,
                        const std::string& arch) {
  CudaBinary b;
  b.arch = arch;
  b.format = format_of(arch);
  const auto nvrtc = Nvrtc::open();
  if (!nvrtc)
    throw std::runtime_error(
        "raptor: building kernels for CUDA needs NVRTC (libnvrtc.so from the CUDA toolkit or the "
        "nvidia-cuda-nvrtc wheel); set RAPTOR_NVRTC to its path");
  std::vector<codegen::KernelToEmit> todo;
  std::vector<KernelEntry> entries = describe_build(kernels, todo);
  for (size_t i = 0; i < entries.size(); ++i) {
    CudaBinary::Kernel k;
    k.finish = sums_over_samples(*todo[i].kernel) ? todo[i].symbol + "_finish" : "";
    k.entry = std::move(entries[i]);
    b.kernels.push_back(std::move(k));
  }
  b.source = codegen::emit_cuda(todo);
  b.key = sha256_hex(b.source + "\nnvrtc " + nvrtc->version() + " " + arch + "\n");
  const fs::path shard = compiler.cache().path / b.key.substr(0, 2);
  ensure_private_dir(shard, /*allow_symlink=*/false);
  const std::string stem = (shard / b.key).string();
  const fs::path bin = stem + (b.format == CudaFormat::Cubin ? ".cubin" : ".ptx");
  const fs::path sidecar = stem + ".sha256";
  if (auto cached = read_verified(bin, sidecar)) {
    CacheEntryLock::tidy(stem);
    b.bytes = std::move(*cached);
    b.cache_hit = true;
    return b;
  }
  const CacheEntryLock lock(stem);
  if (auto cached = read_verified(bin, sidecar)) {  // another process built it meanwhile
    b.bytes = std::move(*cached);
    b.cache_hit = true;
    return b;
  }
  const std::string name = b.key.substr(0, 16) + ".cu";
  try {
    b.bytes = b.format == CudaFormat::Cubin ? nvrtc->compile_cubin(b.source, name, arch)
                                            : nvrtc->compile_ptx(b.source, name, arch);
  } catch (const std::runtime_error& e) {
    write_cache_file(stem + ".cu", b.source);
    throw std::runtime_error("raptor: NVRTC could not compile kernels " + kernel_names(kernels) +
                             " for " + arch + " (source: " + stem + ".cu): " + e.what());
  }
  write_cache_file(stem + ".cu", b.source);
  write_cache_file(bin, b.bytes);
  write_cache_file(sidecar, sha256_hex(b.bytes) + "\n");
  return b;
}

CudaKernel::CudaKernel(KernelEntry slots, std::string image, std::string symbol, std::string finish)
    : slots_(std::move(slots)),
      image_(std::move(image)),
      symbol_(std::move(symbol)),
      finish_(std::move(finish)) {}

bool CudaKernel::reads_tables() const { return slots_.iface.has_table(); }

const CudaKernel::Loaded& CudaKernel::load(const cuda::Driver& driver) const {
  const cuda::CUcontext ctx = driver.current_context();
  const std::lock_guard lock(mu_);
  if (auto it = loaded_.find(ctx); it != loaded_.end()) return it->second;
  const cuda::CUmodule m = driver.load_ptx(image_);
  Loaded l;
  l.kernel = driver.function(m, symbol_);
  if (!finish_.empty()) l.finish = driver.function(m, finish_);
  if (slots_.iface.random_slot() >= 0) l.rng = driver.function(m, codegen::kCudaRngAdvanceSymbol);
  return loaded_[ctx] = l;
}

cuda::CUfunction CudaKernel::function(const cuda::Driver& driver) const {
  return load(driver).kernel;
}

cuda::CUfunction CudaKernel::finish_function(const cuda::Driver& driver) const {
  return load(driver).finish;
}

cuda::CUfunction CudaKernel::rng_function(const cuda::Driver& driver) const {
  return load(driver).rng;
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
  CudaBinary b = compile_cuda(kernels, compiler, kCudaArch);
  int registered = 0;
  for (CudaBinary::Kernel& k : b.kernels) {
    const std::string digest = k.entry.digest;
    const std::string symbol = k.entry.symbol;
    cuda_registry().add(digest, std::make_shared<const CudaKernel>(std::move(k.entry), b.bytes,
                                                                   symbol, std::move(k.finish)));
    ++registered;
  }
  return registered;
}

}  // namespace raptor::runtime
