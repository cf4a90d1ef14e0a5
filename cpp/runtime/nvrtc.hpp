// NVRTC, NVIDIA's runtime CUDA compiler, loaded with dlopen: generated CUDA C++ (codegen
// emit_cuda) to PTX or to a cubin. Loading at run time keeps raptor free of a link-time CUDA
// dependency: a machine without the CUDA toolkit simply has no NVRTC. NVRTC compiles without a GPU.
#pragma once

#include <memory>
#include <optional>
#include <string>

namespace raptor::runtime {

class Nvrtc {
 public:
  // The NVRTC library of this machine: $RAPTOR_NVRTC, else libnvrtc.so(.13/.12) on the loader
  // path, else the CUDA toolkit's (/usr/local/cuda/lib64); nullopt when there is none.
  static std::optional<Nvrtc> open();

  // PTX for `source` (a program named `name`) for the virtual architecture `arch`, e.g.
  // "compute_75". Throws std::runtime_error with NVRTC's log when compilation fails.
  std::string compile_ptx(const std::string& source, const std::string& name,
                          const std::string& arch) const;

  // A cubin (device code for one real architecture, loaded without JIT) for `source` and
  // `arch`, e.g. "sm_90". Throws std::runtime_error with NVRTC's log when compilation fails.
  // `fast_compile`: --Ofast-compile=max where NVRTC has it (12.8 on), about 3x faster and
  // less optimized code, for checks that only need to know the code compiles.
  std::string compile_cubin(const std::string& source, const std::string& name,
                            const std::string& arch, bool fast_compile = false) const;

  // "major.minor" of the library.
  std::string version() const;

 private:
  struct Api;
  std::string compile(const std::string& source, const std::string& name, const std::string& arch,
                      bool cubin, bool fast_compile) const;
  explicit Nvrtc(std::shared_ptr<const Api> api) : api_(std::move(api)) {}
  std::shared_ptr<const Api> api_;
};

}  // namespace raptor::runtime
