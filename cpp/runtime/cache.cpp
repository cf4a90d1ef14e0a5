// Cache directory selection and safety checks. See cache.hpp.
#include "runtime/cache.hpp"

#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <stdexcept>
#include <system_error>

namespace raptor::runtime {
namespace fs = std::filesystem;

namespace {

[[noreturn]] void refuse(const fs::path& dir, const std::string& why, const std::string& fix) {
  throw std::runtime_error("raptor: refusing to use cache directory '" + dir.string() +
                           "': " + why + ". " + fix +
                           " (or pass another cache_dir / set RAPTOR_CACHE_DIR)");
}

void check_stat(const fs::path& dir, const struct stat& st) {
  if (!S_ISDIR(st.st_mode)) refuse(dir, "it is not a directory", "Remove or rename it");
  if (st.st_uid != geteuid()) {
    refuse(dir,
           "it is owned by uid " + std::to_string(st.st_uid) + ", not by the current user (uid " +
               std::to_string(geteuid()) + ")",
           "Use a directory you own");
  }
  if ((st.st_mode & (S_IWGRP | S_IWOTH)) != 0) {
    char mode[8];
    std::snprintf(mode, sizeof mode, "%04o", static_cast<unsigned>(st.st_mode & 07777));
    refuse(dir, std::string("it is writable by group or others (mode ") + mode + ")",
           "Run: chmod 700 '" + dir.string() + "'");
  }
}

}  // namespace

void ensure_private_dir(const fs::path& dir, bool allow_symlink) {
  if (::mkdir(dir.c_str(), 0700) != 0 && errno != EEXIST) {
    const int err = errno;
    throw std::runtime_error("raptor: cannot create cache directory '" + dir.string() +
                             "': " + std::strerror(err) +
                             ". Pass another cache_dir or set RAPTOR_CACHE_DIR");
  }
  struct stat lst {};
  if (::lstat(dir.c_str(), &lst) != 0) {
    const int err = errno;
    throw std::runtime_error("raptor: cannot inspect cache directory '" + dir.string() +
                             "': " + std::strerror(err));
  }
  if (S_ISLNK(lst.st_mode)) {
    if (!allow_symlink) {
      refuse(dir, "it is a symbolic link inside the cache", "Remove it");
    }
    struct stat st {};
    if (::stat(dir.c_str(), &st) != 0) {
      refuse(dir, "it is a symbolic link to a missing target", "Remove the link");
    }
    check_stat(dir, st);
    return;
  }
  check_stat(dir, lst);
}

CacheDir open_cache_dir(std::optional<std::string> explicit_dir) {
  fs::path dir;
  if (explicit_dir && !explicit_dir->empty()) {
    dir = *explicit_dir;
  } else if (const char* env = std::getenv("RAPTOR_CACHE_DIR"); env != nullptr && *env != 0) {
    dir = env;
  } else {
    const char* home = std::getenv("HOME");
    if (home == nullptr || *home == 0) {
      throw std::runtime_error(
          "raptor: no cache directory: HOME is not set. Pass cache_dir or set "
          "RAPTOR_CACHE_DIR");
    }
    dir = fs::path(home) / ".cache" / "raptor";
  }
  dir = dir.lexically_normal();
  if (dir.has_relative_path() && !dir.has_filename()) dir = dir.parent_path();  // "a/b/" -> a/b
  if (dir.has_parent_path()) {
    std::error_code ec;
    fs::create_directories(dir.parent_path(), ec);
    if (ec) {
      throw std::runtime_error("raptor: cannot create the parents of cache directory '" +
                               dir.string() + "': " + ec.message() +
                               ". Pass another cache_dir or set RAPTOR_CACHE_DIR");
    }
  }
  ensure_private_dir(dir, /*allow_symlink=*/true);
  return CacheDir{fs::absolute(dir)};
}

}  // namespace raptor::runtime
