// Cached compilation of generated translation units. See compiler.hpp for the cache layout.
#include "runtime/compiler.hpp"

#include <fcntl.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cctype>
#include <cerrno>
#include <chrono>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <iterator>
#include <sstream>

#include "runtime/abi.h"
#include "runtime/process.hpp"
#include "runtime/sha256.hpp"

namespace raptor::runtime {
namespace fs = std::filesystem;

namespace {

using Clock = std::chrono::steady_clock;

double seconds_since(Clock::time_point t0) {
  return std::chrono::duration<double>(Clock::now() - t0).count();
}

[[noreturn]] void io_error(const std::string& what, const fs::path& p) {
  const int err = errno;
  throw std::runtime_error("raptor: cannot " + what + " '" + p.string() +
                           "': " + std::strerror(err));
}

// A temporary file created with mkstemp; removed on destruction unless renamed into place.
class TempFile {
 public:
  explicit TempFile(const fs::path& prefix) {
    std::string tmpl = prefix.string() + ".tmp-XXXXXX";
    fd_ = ::mkostemp(tmpl.data(), O_CLOEXEC);
    if (fd_ < 0) io_error("create a temporary file", tmpl);
    path_ = tmpl;
  }
  TempFile(const TempFile&) = delete;
  TempFile& operator=(const TempFile&) = delete;
  ~TempFile() {
    close_fd();
    if (!path_.empty()) ::unlink(path_.c_str());
  }
  const fs::path& path() const { return path_; }
  void write_all(std::string_view data) {
    while (!data.empty()) {
      const ssize_t n = ::write(fd_, data.data(), data.size());
      if (n < 0) {
        if (errno == EINTR) continue;
        io_error("write", path_);
      }
      data.remove_prefix(static_cast<size_t>(n));
    }
  }
  void close_fd() {
    if (fd_ >= 0) ::close(fd_);
    fd_ = -1;
  }
  // Atomically moves the file to `dest`; it is then no longer removed.
  void rename_to(const fs::path& dest) {
    close_fd();
    if (::rename(path_.c_str(), dest.c_str()) != 0) io_error("rename into place", dest);
    path_.clear();
  }

 private:
  int fd_ = -1;
  fs::path path_;
};

void write_atomic(const fs::path& dest, std::string_view data) {
  TempFile tmp(dest);
  tmp.write_all(data);
  tmp.rename_to(dest);
}

// Reads a regular file owned by us; nullopt when missing or not such a file.
std::optional<std::string> read_own_file(const fs::path& p) {
  const int fd = ::open(p.c_str(), O_RDONLY | O_CLOEXEC | O_NOFOLLOW);
  if (fd < 0) return std::nullopt;
  struct stat st {};
  std::optional<std::string> out;
  if (::fstat(fd, &st) == 0 && S_ISREG(st.st_mode) && st.st_uid == ::geteuid()) {
    std::string data(static_cast<size_t>(st.st_size), '\0');
    size_t got = 0;
    while (got < data.size()) {
      const ssize_t n = ::read(fd, data.data() + got, data.size() - got);
      if (n < 0 && errno == EINTR) continue;
      if (n <= 0) break;
      got += static_cast<size_t>(n);
    }
    if (got == data.size()) out = std::move(data);
  }
  ::close(fd);
  return out;
}

// The cached shared object is complete and ours: its bytes hash to the sidecar's digest.
bool cached_entry_valid(const fs::path& so, const fs::path& sidecar) {
  const auto want = read_own_file(sidecar);
  if (!want || want->size() < 64) return false;
  const auto bytes = read_own_file(so);
  if (!bytes) return false;
  return sha256_hex(*bytes) == want->substr(0, 64);
}

bool flags_use_native(const std::string& flags) {
  return flags.find("=native") != std::string::npos;
}

}  // namespace

int first_error_line(const std::string& output, const std::string& file) {
  std::istringstream in(output);
  std::string ln;
  const std::string prefix = file + ":";
  bool error_elsewhere = false;  // an error located in a macro (e.g. from a -D flag)
  while (std::getline(in, ln)) {
    if (ln.compare(0, prefix.size(), prefix) != 0) {
      if (ln.find(": error:") != std::string::npos) error_elsewhere = true;
      continue;
    }
    size_t p = prefix.size();
    int line = 0;
    size_t digits = 0;
    while (p < ln.size() && std::isdigit(static_cast<unsigned char>(ln[p]))) {
      line = line * 10 + (ln[p++] - '0');
      ++digits;
    }
    if (digits == 0) continue;
    const size_t rest = ln.find(": ", p);
    if (rest == std::string::npos) continue;
    const std::string tail = ln.substr(rest + 2);
    if (tail.rfind("error:", 0) == 0 || tail.rfind("fatal error:", 0) == 0) return line;
    // The error's own location was in a macro: its expansion in this file is the line.
    if (error_elsewhere && tail.rfind("note: in expansion of macro", 0) == 0) return line;
  }
  return -1;
}

Compiler::Compiler(CacheDir cache) : cache_(std::move(cache)) {}

std::string Compiler::resolve_compiler(const CompileOptions& options) {
  if (options.compiler && !options.compiler->empty()) return *options.compiler;
  if (const char* env = std::getenv("RAPTOR_CXX"); env != nullptr && *env != 0) return env;
  return "g++";
}

std::string Compiler::resolve_flags(const CompileOptions& options) {
  const bool blank =
      !options.flags || options.flags->find_first_not_of(" \t\n\r\f\v") == std::string::npos;
  return std::string(kRequiredHostFlags) + " " +
         (blank ? std::string(kDefaultHostFlags) : *options.flags);
}

CompilerIdentities& CompilerIdentities::process() {
  static CompilerIdentities table;
  return table;
}

const std::string& Compiler::identity(const std::string& compiler, const std::string& flags) {
  return CompilerIdentities::process().get(compiler, flags);
}

const std::string& CompilerIdentities::get(const std::string& compiler, const std::string& flags) {
  // -march=native hides the ISA in the flags: then the predefined macros (__AVX2__, ...) that
  // the flags produce are part of the identity, so a cache shared between machines stays right.
  const bool native = flags_use_native(flags);
  const char* path = std::getenv("PATH");
  const std::string map_key =
      compiler + '\0' + (path ? path : "") + (native ? '\0' + flags : std::string());
  const std::lock_guard lock(mu_);
  if (const auto it = ids_.find(map_key); it != ids_.end()) return it->second;
  const std::string fix = "Install it, or set RAPTOR_CXX to a C++ compiler";
  const ProcessResult version = run_process({compiler, "--version"}, fix);
  if (version.exit_status != 0) {
    throw std::runtime_error("raptor: '" + compiler + " --version' failed (status " +
                             std::to_string(version.exit_status) + "): " + version.err + fix);
  }
  std::string id = version.out;
  if (native) {
    std::vector<std::string> argv = {compiler};
    for (auto& f : split_flags(flags)) {
      if (f != "-shared") argv.push_back(f);
    }
    for (const char* a : {"-E", "-dM", "-x", "c++", "/dev/null"}) argv.emplace_back(a);
    const ProcessResult macros = run_process(argv, fix);
    id += "\nmacros:\n" + macros.out;
  }
  return ids_.emplace(map_key, std::move(id)).first->second;
}

std::string Compiler::key(const std::string& source, const CompileOptions& options) {
  if (options.target != "host") {
    throw std::invalid_argument("raptor: the host compiler cannot build target '" + options.target +
                                "' (only \"host\")");
  }
  const std::string compiler = resolve_compiler(options);
  const std::string flags = resolve_flags(options);
  const std::string& id = identity(compiler, flags);
  Sha256 h;
  h.update(source);
  h.update("\n");
  h.update(compiler + " " + flags + "\n");
  h.update(id);
  h.update("\ntarget=" + options.target + " abi=" + std::to_string(RAPTOR_ABI_VERSION) + "\n");
  return h.hex_digest();
}

std::shared_ptr<const Module> Compiler::load_cached(const std::string& key) const {
  if (key.size() < 3) return nullptr;
  const fs::path stem = cache_.path / key.substr(0, 2) / key;
  const fs::path so(stem.string() + ".so");
  if (!cached_entry_valid(so, fs::path(stem.string() + ".sha256"))) return nullptr;
  return std::make_shared<const Module>(so);
}

void write_cache_file(const fs::path& dest, std::string_view data) { write_atomic(dest, data); }

std::optional<std::string> read_cache_file(const fs::path& path) { return read_own_file(path); }

namespace {

int open_lock_file(const fs::path& p) {
  const int fd = ::open(p.c_str(), O_RDWR | O_CREAT | O_CLOEXEC | O_NOFOLLOW, 0600);
  if (fd < 0) io_error("open lock file", p);
  return fd;
}

// `<stem>.<anything>.tmp-XXXXXX` beside the entry (TempFile's names for its files).
std::vector<fs::path> stale_temporaries(const fs::path& stem) {
  std::vector<fs::path> out;
  const std::string prefix = stem.filename().string() + ".";
  std::error_code ec;
  for (fs::directory_iterator it(stem.parent_path(), ec), end; !ec && it != end; it.increment(ec)) {
    const std::string name = it->path().filename().string();
    if (name.compare(0, prefix.size(), prefix) == 0 && name.find(".tmp-") != std::string::npos)
      out.push_back(it->path());
  }
  return out;
}

void remove_all(const std::vector<fs::path>& files) {
  for (const auto& f : files) ::unlink(f.c_str());  // a file already gone is fine
}

}  // namespace

CacheEntryLock::CacheEntryLock(const fs::path& stem)
    : fd_(open_lock_file(stem.string() + ".lock")) {
  while (::flock(fd_, LOCK_EX) != 0) {
    if (errno != EINTR) {
      const int err = errno;
      ::close(fd_);
      errno = err;
      io_error("lock", stem.string() + ".lock");
    }
  }
  remove_all(stale_temporaries(stem));
}

CacheEntryLock::~CacheEntryLock() { ::close(fd_); }  // closing releases the lock

void CacheEntryLock::tidy(const fs::path& stem) {
  if (stale_temporaries(stem).empty()) return;
  const int fd = ::open((stem.string() + ".lock").c_str(), O_RDWR | O_CLOEXEC | O_NOFOLLOW);
  if (fd < 0) return;
  if (::flock(fd, LOCK_EX | LOCK_NB) == 0) remove_all(stale_temporaries(stem));
  ::close(fd);
}

CompileResult Compiler::compile(const std::string& source, const CompileOptions& options) {
  const auto t0 = Clock::now();
  CompileResult r;
  r.key = key(source, options);
  const fs::path shard = cache_.path / r.key.substr(0, 2);
  ensure_private_dir(shard, /*allow_symlink=*/false);
  const fs::path stem = shard / r.key;
  r.so_path = fs::path(stem.string() + ".so");
  r.source_path = fs::path(stem.string() + ".cpp");
  const fs::path sidecar = fs::path(stem.string() + ".sha256");

  if (cached_entry_valid(r.so_path, sidecar)) {
    CacheEntryLock::tidy(stem);
    r.module = std::make_shared<const Module>(r.so_path);
    r.cache_hit = true;
    r.total_seconds = seconds_since(t0);
    return r;
  }

  {
    const CacheEntryLock lock(stem);
    // Another thread or process may have built it while we waited for the lock.
    if (!cached_entry_valid(r.so_path, sidecar)) {
      write_atomic(r.source_path, source);
      const std::string compiler = resolve_compiler(options);
      TempFile out(fs::path(stem.string() + ".so"));
      out.close_fd();
      std::vector<std::string> argv = {compiler};
      for (auto& f : split_flags(resolve_flags(options))) argv.push_back(std::move(f));
      argv.insert(argv.end(), {r.source_path.string(), "-o", out.path().string()});
      const auto tc = Clock::now();
      const ProcessResult pr = run_process(argv, "Install it, or set RAPTOR_CXX to a C++ compiler");
      r.compile_seconds = seconds_since(tc);
      if (pr.exit_status != 0) {
        const int line = first_error_line(pr.err, r.source_path.string());
        std::string msg = "raptor: the C++ compiler '" + compiler + "' failed (status " +
                          std::to_string(pr.exit_status) + ") on generated source '" +
                          r.source_path.string() + "'";
        if (line > 0) msg += ", first error at line " + std::to_string(line);
        msg += ":\n" + pr.err.substr(0, 4000);
        throw CompileFailure(msg, pr.err, source, line, pr.exit_status, r.source_path);
      }
      const auto bytes = read_own_file(out.path());
      if (!bytes || bytes->empty()) {
        throw std::runtime_error("raptor: the C++ compiler '" + compiler +
                                 "' reported success but wrote no shared object for '" +
                                 r.source_path.string() + "'");
      }
      write_atomic(sidecar, sha256_hex(*bytes) + "\n");
      out.rename_to(r.so_path);
    }
  }
  r.module = std::make_shared<const Module>(r.so_path);
  r.total_seconds = seconds_since(t0);
  return r;
}

}  // namespace raptor::runtime
