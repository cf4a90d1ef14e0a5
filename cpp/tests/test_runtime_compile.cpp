// Tests for runtime/compiler and runtime/module: compile, cache hits, corrupt files, compiler
// errors, and processes and threads racing to compile the same key.
#include <gtest/gtest.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <fstream>
#include <random>
#include <thread>
#include <vector>

#include "runtime/compiler.hpp"
#include "tests/test_runtime_util.hpp"

namespace raptor::runtime {
namespace {
namespace fs = std::filesystem;
using testing::TempDir;

// A unique source, so concurrent tests never share a cache entry by accident.
std::string unique_kernels() {
  std::random_device rd;
  return testing::kernels_source("// nonce " + std::to_string(rd()) + std::to_string(rd()) + "\n");
}

// Runs axpy_f64 from `m` on a few samples and checks the result.
void check_axpy(const Module& m) {
  const raptor_kernel_fn fn = m.symbol("axpy_f64");
  const int64_t n = 5;
  std::vector<double> x(2 * n), y(2 * n, -1.0);
  for (int i = 0; i < 2 * n; ++i) x[i] = i;
  const void* in[4] = {nullptr, x.data(), nullptr, nullptr};
  void* out[4] = {nullptr, nullptr, nullptr, y.data()};
  const double params[4] = {2.0, 0.0, 0.5, 0.0};
  const int64_t ts[4] = {0, 0, 0, 0};
  raptor_args a{};
  a.n = n;
  a.begin = 0;
  a.end = n;
  a.in = in;
  a.out = out;
  a.params = params;
  a.table_size = ts;
  fn(&a);
  for (int i = 0; i < 2 * n; ++i) EXPECT_EQ(y[i], 2.0 * i + 0.5);
}

TEST(RuntimeCompile, CompileRunAndCacheHit) {
  TempDir tmp;
  const std::string src = unique_kernels();
  CompileResult first;
  {
    Compiler c(open_cache_dir(tmp.path().string()));
    first = c.compile(src);
    EXPECT_FALSE(first.cache_hit);
    EXPECT_GT(first.compile_seconds, 0.0);
    check_axpy(*first.module);
    EXPECT_TRUE(fs::exists(first.so_path));
    EXPECT_EQ(first.so_path.parent_path().filename(), first.key.substr(0, 2));
    std::ifstream saved(first.source_path);
    const std::string text((std::istreambuf_iterator<char>(saved)), {});
    EXPECT_EQ(text, src);
    std::printf(
        "[ measure ] compile of a tiny TU (6 functions, -O3): %.3f s (in compiler %.3f s)\n",
        first.total_seconds, first.compile_seconds);
  }
  first.module.reset();
  // A new Compiler object (as in a new process) finds it.
  Compiler c2(open_cache_dir(tmp.path().string()));
  const auto t0 = std::chrono::steady_clock::now();
  const CompileResult hit = c2.compile(src);
  const double cold = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  EXPECT_TRUE(hit.cache_hit);
  EXPECT_EQ(hit.key, first.key);
  EXPECT_EQ(hit.compile_seconds, 0.0);
  check_axpy(*hit.module);
  const CompileResult hit2 = c2.compile(src);  // compiler identity now known
  EXPECT_TRUE(hit2.cache_hit);
  std::printf(
      "[ measure ] cache hit: %.2f ms with a new Compiler (the process knows the compiler), "
      "%.3f ms with a warm one\n",
      cold * 1e3, hit2.total_seconds * 1e3);
  EXPECT_EQ(testing::count_temp_files(tmp.path()), 0);
  // Different flags or compiler give a different key.
  CompileOptions o;
  o.flags = "-O1 -fPIC -shared -std=c++17 -fvisibility=hidden";
  EXPECT_NE(c2.key(src, o), hit.key);
}

TEST(RuntimeCompile, ACompilersIdentityIsAskedOncePerProcess) {
  // A stand-in compiler that logs each run: two Compilers (as two eagle.plan.auto calls make)
  // ask it once for its version; -march=native flags add one run for their macros, once per
  // distinct flags.
  TempDir tmp;
  const fs::path log = tmp.path() / "runs.txt";
  const fs::path cxx = tmp.path() / "fake-cxx";
  {
    std::ofstream script(cxx);
    script << "#!/bin/sh\necho \"$*\" >> '" << log.string() << "'\n"
           << "case \"$*\" in --version) echo 'fake c++ 1.0';; *) echo '#define __FAKE__ 1';; esac\n";
  }
  fs::permissions(cxx, fs::perms::owner_all);
  const auto runs = [&] {
    std::ifstream in(log);
    int n = 0;
    for (std::string line; std::getline(in, line);) ++n;
    return n;
  };
  CompileOptions plain;
  plain.compiler = cxx.string();
  plain.flags = "-O2";
  Compiler a(open_cache_dir((tmp.path() / "c1").string()));
  Compiler b(open_cache_dir((tmp.path() / "c2").string()));
  const std::string ka = a.key("int f();", plain);
  EXPECT_EQ(runs(), 1);
  EXPECT_EQ(b.key("int f();", plain), ka);
  EXPECT_EQ(runs(), 1);
  CompileOptions native = plain;
  native.flags = "-O2 -march=native";
  EXPECT_NE(a.key("int f();", native), ka);
  EXPECT_EQ(runs(), 3);  // --version again (another key) and the macros
  b.key("int f();", native);
  EXPECT_EQ(runs(), 3);
}

TEST(RuntimeCompile, CorruptSharedObjectIsRebuilt) {
  TempDir tmp;
  const std::string src = unique_kernels();
  Compiler c(open_cache_dir(tmp.path().string()));
  CompileResult r = c.compile(src);
  const fs::path so = r.so_path;
  const std::string key = r.key;
  r.module.reset();
  {  // Replace the file with garbage of a plausible size (a new inode, as a bad copy would be).
    fs::remove(so);
    std::ofstream(so, std::ios::binary) << std::string(4096, 'Z');
  }
  CompileResult again = c.compile(src);
  EXPECT_FALSE(again.cache_hit);
  EXPECT_EQ(again.key, key);
  check_axpy(*again.module);
  again.module.reset();
  // A missing sidecar also means "not ours": rebuilt.
  fs::remove(fs::path(so.string().substr(0, so.string().size() - 3) + ".sha256"));
  CompileResult third = c.compile(src);
  EXPECT_FALSE(third.cache_hit);
  check_axpy(*third.module);
  EXPECT_TRUE(c.compile(src).cache_hit);
  EXPECT_EQ(testing::count_temp_files(tmp.path()), 0);
}

TEST(RuntimeCompile, CompilerErrorReportsLineAndSource) {
  TempDir tmp;
  Compiler c(open_cache_dir(tmp.path().string()));
  const std::string src = "int ok() { return 1; }\n\nint bad() { return undefined_name; }\n";
  try {
    c.compile(src);
    FAIL() << "expected CompileFailure";
  } catch (const CompileFailure& e) {
    EXPECT_EQ(e.line, 3);
    EXPECT_EQ(e.source, src);
    EXPECT_NE(e.compiler_output.find("undefined_name"), std::string::npos);
    EXPECT_NE(std::string(e.what()).find("line 3"), std::string::npos) << e.what();
    EXPECT_NE(e.exit_status, 0);
  }
  EXPECT_EQ(testing::count_temp_files(tmp.path()), 0);
  EXPECT_EQ(first_error_line("a.cpp:7:2: warning: x\na.cpp:9:1: error: y\n", "a.cpp"), 9);
  EXPECT_EQ(first_error_line("b.cpp:9:1: error: y\n", "a.cpp"), -1);
  EXPECT_EQ(first_error_line("a.cpp:4:1: fatal error: z.h: No such file\n", "a.cpp"), 4);
}

TEST(RuntimeCompile, MissingSymbolAndMissingCompiler) {
  TempDir tmp;
  Compiler c(open_cache_dir(tmp.path().string()));
  const CompileResult r = c.compile(unique_kernels());
  try {
    r.module->symbol("no_such_kernel");
    FAIL();
  } catch (const std::runtime_error& e) {
    EXPECT_NE(std::string(e.what()).find("no_such_kernel"), std::string::npos);
  }
  EXPECT_EQ(r.module->find("no_such_kernel"), nullptr);
  CompileOptions o;
  o.compiler = "/nonexistent/raptor-cxx";
  try {
    c.compile("int x;", o);
    FAIL();
  } catch (const std::runtime_error& e) {
    EXPECT_NE(std::string(e.what()).find("RAPTOR_CXX"), std::string::npos) << e.what();
  }
  o = {};
  o.target = "cuda";
  EXPECT_THROW(c.compile("int x;", o), std::invalid_argument);
}

TEST(RuntimeCompile, ThreadsRaceOnOneKey) {
  TempDir tmp;
  const std::string src = unique_kernels();
  std::vector<CompileResult> results(4);
  {
    std::vector<std::jthread> threads;
    for (int t = 0; t < 4; ++t) {
      threads.emplace_back([&, t] {
        Compiler c(open_cache_dir(tmp.path().string()));  // each its own, like processes
        results[t] = c.compile(src);
      });
    }
  }
  int compiled = 0;
  for (const auto& r : results) {
    ASSERT_TRUE(r.module);
    check_axpy(*r.module);
    compiled += r.cache_hit ? 0 : 1;
  }
  EXPECT_GE(compiled, 1);
  EXPECT_EQ(testing::count_temp_files(tmp.path()), 0);
}

TEST(RuntimeCompile, ProcessesRaceOnOneKey) {
  TempDir tmp;
  const std::string src = unique_kernels();
  const CacheDir dir = open_cache_dir(tmp.path().string());
  std::vector<pid_t> kids;
  for (int k = 0; k < 3; ++k) {
    const pid_t pid = ::fork();
    ASSERT_GE(pid, 0);
    if (pid == 0) {
      int rc = 1;
      try {
        Compiler c(dir);
        const CompileResult r = c.compile(src);
        rc = r.module->find("axpy_f64") != nullptr ? 0 : 2;
      } catch (...) {
        rc = 3;
      }
      ::_exit(rc);
    }
    kids.push_back(pid);
  }
  for (const pid_t pid : kids) {
    int status = 0;
    ASSERT_EQ(::waitpid(pid, &status, 0), pid);
    ASSERT_TRUE(WIFEXITED(status));
    EXPECT_EQ(WEXITSTATUS(status), 0);
  }
  Compiler c(dir);
  const CompileResult r = c.compile(src);
  EXPECT_TRUE(r.cache_hit);
  check_axpy(*r.module);
  EXPECT_EQ(testing::count_temp_files(tmp.path()), 0);
}

}  // namespace
}  // namespace raptor::runtime

namespace raptor::runtime {
namespace {

void touch(const std::filesystem::path& p) { std::ofstream(p) << "x"; }

// What a process killed while it held an entry's lock leaves: temporaries of that entry.
// The next holder removes them, and only them; a cache hit tidies them only when the lock is
// free (a live builder's temporaries are never touched).
TEST(RuntimeCompile, EntryLockRemovesStaleTemporariesOfItsEntryOnly) {
  testing::TempDir dir;
  const auto stem = dir.path() / "abcd";
  for (const char* f : {"abcd.so.tmp-111111", "abcd.cpp.tmp-222222", "abcd.so", "abcd.sha256",
                        "abce.so.tmp-333333", "abcdx.so.tmp-444444"})
    touch(dir.path() / f);
  { const CacheEntryLock lock(stem); }
  EXPECT_FALSE(std::filesystem::exists(dir.path() / "abcd.so.tmp-111111"));
  EXPECT_FALSE(std::filesystem::exists(dir.path() / "abcd.cpp.tmp-222222"));
  for (const char* kept : {"abcd.so", "abcd.sha256", "abce.so.tmp-333333", "abcdx.so.tmp-444444"})
    EXPECT_TRUE(std::filesystem::exists(dir.path() / kept)) << kept;

  touch(dir.path() / "abcd.so.tmp-555555");
  {
    const CacheEntryLock builder(stem);  // a live builder's temporary: tidy leaves it
    touch(dir.path() / "abcd.so.tmp-666666");
    CacheEntryLock::tidy(stem);
    EXPECT_TRUE(std::filesystem::exists(dir.path() / "abcd.so.tmp-666666"));
  }
  CacheEntryLock::tidy(stem);  // free: removed
  EXPECT_FALSE(std::filesystem::exists(dir.path() / "abcd.so.tmp-666666"));
}

}  // namespace
}  // namespace raptor::runtime
