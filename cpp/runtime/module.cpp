// Module: dlopen'ed shared object. See module.hpp.
#include "runtime/module.hpp"

#include <dlfcn.h>

#include <stdexcept>
#include <utility>

namespace raptor::runtime {

Module::Module(const std::filesystem::path& path) : path_(path) {
  handle_ = ::dlopen(path.c_str(), RTLD_NOW | RTLD_LOCAL);
  if (handle_ == nullptr) {
    const char* err = ::dlerror();
    throw std::runtime_error("raptor: cannot load compiled kernels '" + path.string() +
                             "': " + (err ? err : "unknown dlopen error") +
                             ". Delete the file to have it rebuilt");
  }
}

Module::~Module() {
  if (handle_ != nullptr) ::dlclose(handle_);
}

Module::Module(Module&& other) noexcept
    : handle_(std::exchange(other.handle_, nullptr)), path_(std::move(other.path_)) {}

Module& Module::operator=(Module&& other) noexcept {
  if (this != &other) {
    if (handle_ != nullptr) ::dlclose(handle_);
    handle_ = std::exchange(other.handle_, nullptr);
    path_ = std::move(other.path_);
  }
  return *this;
}

void* Module::find(const std::string& name) const {
  if (handle_ == nullptr) return nullptr;
  ::dlerror();
  return ::dlsym(handle_, name.c_str());
}

raptor_kernel_fn Module::symbol(const std::string& name) const {
  void* p = find(name);
  if (p == nullptr) {
    throw std::runtime_error("raptor: kernel symbol '" + name + "' not found in '" +
                             path_.string() +
                             "' (generated kernels must be extern \"C\" with "
                             "__attribute__((visibility(\"default\"))))");
  }
  return reinterpret_cast<raptor_kernel_fn>(p);
}

}  // namespace raptor::runtime
