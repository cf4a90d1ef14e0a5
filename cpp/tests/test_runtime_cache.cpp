// Tests for runtime/cache: where the cache directory is, and the refusal of unsafe ones.
#include <gtest/gtest.h>
#include <pwd.h>
#include <stdlib.h>
#include <sys/stat.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <functional>
#include <optional>
#include <string>

#include "runtime/cache.hpp"
#include "tests/test_runtime_util.hpp"

namespace raptor::runtime {
namespace {
namespace fs = std::filesystem;
using testing::TempDir;

mode_t mode_of(const fs::path& p) {
  struct stat st {};
  EXPECT_EQ(::stat(p.c_str(), &st), 0);
  return st.st_mode & 07777;
}

// Sets an environment variable for the scope, restoring the old value.
class ScopedEnv {
 public:
  ScopedEnv(const char* name, const std::optional<std::string>& value) : name_(name) {
    if (const char* old = std::getenv(name)) old_ = old;
    if (value) {
      ::setenv(name, value->c_str(), 1);
    } else {
      ::unsetenv(name);
    }
  }
  ~ScopedEnv() {
    if (old_) {
      ::setenv(name_, old_->c_str(), 1);
    } else {
      ::unsetenv(name_);
    }
  }

 private:
  const char* name_;
  std::optional<std::string> old_;
};

std::string message_of(const std::function<void()>& f) {
  try {
    f();
  } catch (const std::runtime_error& e) {
    return e.what();
  }
  return "";
}

TEST(RuntimeCache, ExplicitDirCreatedPrivateWithParents) {
  TempDir tmp;
  const fs::path dir = tmp.path() / "a" / "b" / "cache";
  const CacheDir c = open_cache_dir(dir.string());
  EXPECT_EQ(c.path, fs::absolute(dir));
  EXPECT_TRUE(fs::is_directory(dir));
  EXPECT_EQ(mode_of(dir), 0700u);
  // Opening again is fine.
  EXPECT_EQ(open_cache_dir(dir.string() + "/").path, fs::absolute(dir));
}

TEST(RuntimeCache, EnvThenHome) {
  TempDir tmp;
  {
    const ScopedEnv env("RAPTOR_CACHE_DIR", (tmp.path() / "env").string());
    EXPECT_EQ(open_cache_dir(std::nullopt).path, tmp.path() / "env");
    // An explicit directory wins over the environment.
    EXPECT_EQ(open_cache_dir((tmp.path() / "arg").string()).path, tmp.path() / "arg");
  }
  {
    const ScopedEnv env("RAPTOR_CACHE_DIR", std::nullopt);
    const ScopedEnv home("HOME", (tmp.path() / "home").string());
    EXPECT_EQ(open_cache_dir(std::nullopt).path, tmp.path() / "home" / ".cache" / "raptor");
    EXPECT_EQ(mode_of(tmp.path() / "home" / ".cache" / "raptor"), 0700u);
  }
}

TEST(RuntimeCache, RefusesWorldWritable) {
  TempDir tmp;
  const fs::path dir = tmp.path() / "open";
  ASSERT_EQ(::mkdir(dir.c_str(), 0700), 0);
  ASSERT_EQ(::chmod(dir.c_str(), 0777), 0);
  const std::string msg = message_of([&] { open_cache_dir(dir.string()); });
  EXPECT_NE(msg.find(dir.string()), std::string::npos) << msg;
  EXPECT_NE(msg.find("chmod 700"), std::string::npos) << msg;
  ASSERT_EQ(::chmod(dir.c_str(), 0720), 0);  // group-writable is refused too
  EXPECT_THROW(open_cache_dir(dir.string()), std::runtime_error);
  ASSERT_EQ(::chmod(dir.c_str(), 0755), 0);  // readable by others is fine
  EXPECT_NO_THROW(open_cache_dir(dir.string()));
}

TEST(RuntimeCache, RefusesOtherOwner) {
  if (::geteuid() != 0) GTEST_SKIP() << "needs root to chown a directory to nobody";
  const passwd* nobody = ::getpwnam("nobody");
  ASSERT_NE(nobody, nullptr);
  TempDir tmp;
  const fs::path dir = tmp.path() / "theirs";
  ASSERT_EQ(::mkdir(dir.c_str(), 0700), 0);
  ASSERT_EQ(::chown(dir.c_str(), nobody->pw_uid, nobody->pw_gid), 0);
  const std::string msg = message_of([&] { open_cache_dir(dir.string()); });
  EXPECT_NE(msg.find(dir.string()), std::string::npos) << msg;
  EXPECT_NE(msg.find("owned by uid " + std::to_string(nobody->pw_uid)), std::string::npos) << msg;
  // A subdirectory of a good cache owned by someone else is refused as well.
  const fs::path good = tmp.path() / "good";
  open_cache_dir(good.string());
  const fs::path shard = good / "ab";
  ASSERT_EQ(::mkdir(shard.c_str(), 0700), 0);
  ASSERT_EQ(::chown(shard.c_str(), nobody->pw_uid, nobody->pw_gid), 0);
  EXPECT_THROW(ensure_private_dir(shard, false), std::runtime_error);
}

TEST(RuntimeCache, SymlinkFollowedOnlyToSafeTarget) {
  TempDir tmp;
  const fs::path good = tmp.path() / "good";
  const fs::path bad = tmp.path() / "bad";
  ASSERT_EQ(::mkdir(good.c_str(), 0700), 0);
  ASSERT_EQ(::mkdir(bad.c_str(), 0700), 0);
  ASSERT_EQ(::chmod(bad.c_str(), 0777), 0);
  fs::create_directory_symlink(good, tmp.path() / "to_good");
  fs::create_directory_symlink(bad, tmp.path() / "to_bad");
  EXPECT_NO_THROW(open_cache_dir((tmp.path() / "to_good").string()));
  EXPECT_THROW(open_cache_dir((tmp.path() / "to_bad").string()), std::runtime_error);
  // Inside a cache, a symlinked subdirectory is refused even to a safe target.
  fs::create_directory_symlink(good, good / "cd");
  EXPECT_THROW(ensure_private_dir(good / "cd", false), std::runtime_error);
  // A plain file where the directory should be.
  { std::ofstream(tmp.path() / "file") << "x"; }
  EXPECT_THROW(open_cache_dir((tmp.path() / "file").string()), std::runtime_error);
}

}  // namespace
}  // namespace raptor::runtime
