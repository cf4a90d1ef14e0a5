// The process-wide table of compiled kernels by digest, for the XLA FFI handlers.
#pragma once

#include <map>
#include <memory>
#include <shared_mutex>
#include <string>
#include <string_view>

#include "runtime/launch.hpp"

namespace raptor::runtime {

// Kernels by digest (KernelEntry::digest). Thread-safe; lookups take a shared lock.
class Registry {
 public:
  // Registers `entry` under `digest`. A digest names one compiled behaviour, so when it is
  // already present the existing entry is kept; returns the entry now registered.
  std::shared_ptr<const KernelEntry> add(const std::string& digest,
                                         std::shared_ptr<const KernelEntry> entry);
  // The entry for `digest`, or null.
  std::shared_ptr<const KernelEntry> find(std::string_view digest) const;
  // Removes `digest`; returns whether it was present.
  bool remove(const std::string& digest);
  size_t size() const;

 private:
  mutable std::shared_mutex mu_;
  std::map<std::string, std::shared_ptr<const KernelEntry>, std::less<>> entries_;
};

// The one process-wide registry. It must exist because an XLA FFI handler is a plain
// function that XLA calls with only the custom call's attributes (the kernel's digest and its
// params): it has no other way to reach the compiled kernel. Python registers every kernel it
// builds (and `preload` registers cached ones) here before XLA can call it. This is the single
// intended global object of the runtime; everything else is passed explicitly.
Registry& global_registry();

}  // namespace raptor::runtime
