// The process-wide table of compiled kernels by digest, for the XLA FFI handlers. A digest
// names a kernel's behaviour (canonical IR, dtype, ABI); one digest may have several builds
// (shared objects compiled with other flags or compilers), told apart by their build identity.
#pragma once

#include <map>
#include <memory>
#include <shared_mutex>
#include <string>
#include <string_view>
#include <vector>

#include "runtime/launch.hpp"

namespace raptor::runtime {

// The build identity of an entry: the file name of its shared object, which is the compile's
// cache key (generated source, compiler identity, flags, ABI: runtime/compiler.hpp), and the
// symbol. Empty parts for entries without a module (hand-made ones, in tests).
std::string build_identity(const KernelEntry& entry);

// Kernels by digest (KernelEntry::digest), each digest with its builds in registration order.
// Thread-safe; lookups take a shared lock.
class Registry {
 public:
  // Registers `entry` under `digest` and returns the entry the caller should run: the one
  // already registered when it is the same build (same build identity), else `entry` itself,
  // kept beside the other builds of that digest. A build is never swapped for another one.
  std::shared_ptr<const KernelEntry> add(const std::string& digest,
                                         std::shared_ptr<const KernelEntry> entry);
  // The process's preferred build for `digest` (the first registered), or null.
  std::shared_ptr<const KernelEntry> find(std::string_view digest) const;
  // Every build registered for `digest`, first (preferred) first.
  std::vector<std::shared_ptr<const KernelEntry>> builds(std::string_view digest) const;
  // Removes `digest` and all its builds; returns whether it was present.
  bool remove(const std::string& digest);
  size_t size() const;  // the number of digests

 private:
  mutable std::shared_mutex mu_;
  std::map<std::string, std::vector<std::shared_ptr<const KernelEntry>>, std::less<>> entries_;
};

// The one process-wide registry. It must exist because an XLA FFI handler is a plain
// function that XLA calls with only the custom call's attributes (the kernel's digest and its
// params): it has no other way to reach the compiled kernel. Python registers every kernel it
// builds (and `preload` registers cached ones) here before XLA can call it. This is the single
// intended global object of the runtime; everything else is passed explicitly.
Registry& global_registry();

}  // namespace raptor::runtime
