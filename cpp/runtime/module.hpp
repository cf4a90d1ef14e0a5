// A loaded shared object of compiled kernels: an RAII handle around dlopen/dlclose.
#pragma once

#include <filesystem>
#include <string>

#include "runtime/abi.h"

namespace raptor::runtime {

class Module {
 public:
  // dlopen(path, RTLD_NOW | RTLD_LOCAL); throws std::runtime_error with dlerror() on failure.
  explicit Module(const std::filesystem::path& path);
  ~Module();
  Module(Module&& other) noexcept;
  Module& operator=(Module&& other) noexcept;
  Module(const Module&) = delete;
  Module& operator=(const Module&) = delete;

  // The kernel entry point `name`; throws std::runtime_error naming the symbol and the file
  // when it is missing (e.g. not exported: generated kernels must be extern "C" with default
  // visibility, since the TU is compiled with -fvisibility=hidden).
  raptor_kernel_fn symbol(const std::string& name) const;
  // Any symbol's address, or nullptr when missing.
  void* find(const std::string& name) const;

  const std::filesystem::path& path() const { return path_; }

 private:
  void* handle_ = nullptr;
  std::filesystem::path path_;
};

}  // namespace raptor::runtime
