// Kernel manifests: how a fresh process finds a compiled kernel by its digest alone (what
// an exported JAX module carries). build_host writes one small text file per kernel and
// dtype, <cache>/kernels/<digest>.kernel, naming the shared object (by cache key), the
// symbol and the kernel's interface (runtime/interface.hpp); preload() reads them all and
// registers the kernels. A manifest of another format version is skipped, never misread.
#pragma once

#include <optional>
#include <string>

#include "runtime/compiler.hpp"
#include "runtime/launch.hpp"

namespace raptor::runtime {

// Writes the manifest of `entry`, whose code is in the shared object of cache key `so_key`.
void write_manifest(const Compiler& compiler, const KernelEntry& entry, const std::string& so_key);

// What a manifest says: the entry (interface, symbol, active_set; not loaded) and the cache
// key of its shared object.
struct ParsedManifest {
  KernelEntry entry;
  std::string so_key;
};

// nullopt for a manifest that is malformed or of another version.
std::optional<ParsedManifest> parse_manifest(const std::string& text);

struct PreloadResult {
  int registered = 0;  // kernels now in the registry
  int skipped = 0;     // manifests that were malformed, foreign, or whose code is missing
};

// Registers every kernel whose manifest and shared object in the cache are intact and ours.
PreloadResult preload(const Compiler& compiler);

}  // namespace raptor::runtime
