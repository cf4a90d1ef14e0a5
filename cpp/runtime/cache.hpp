// The on-disk cache directory for compiled kernels: where it is, and the checks that make it
// safe to load code from it. A directory that another user could write into is refused:
// loading a shared object from it would run their code in our process.
#pragma once

#include <filesystem>
#include <optional>
#include <string>

namespace raptor::runtime {

// A cache directory that passed the safety checks. Obtain one from open_cache_dir().
struct CacheDir {
  std::filesystem::path path;
};

// Opens the cache directory: `explicit_dir` if given, else $RAPTOR_CACHE_DIR, else
// $HOME/.cache/raptor. Creates it (and missing parents) if needed; the directory itself is
// created with mode 0700. Throws std::runtime_error, naming the directory and the fix, when
// it (or the symlink's target) is not a directory, is not owned by the current user, or is
// writable by group or others.
CacheDir open_cache_dir(std::optional<std::string> explicit_dir = std::nullopt);

// Creates `dir` with mode 0700 if missing and applies the same checks; for the per-key
// subdirectories inside a cache directory (which must not be symlinks at all).
void ensure_private_dir(const std::filesystem::path& dir, bool allow_symlink);

}  // namespace raptor::runtime
