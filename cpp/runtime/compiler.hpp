// Compiling a generated translation unit into a shared object through the system C++
// compiler, cached on disk by the digest of everything that defines the result, and loading it.
//
// Layout in the cache directory, for key K (64 hex digits):
//   <cache>/<K[0:2]>/K.so      the shared object
//   <cache>/<K[0:2]>/K.sha256  the SHA-256 of K.so's bytes; K.so is loaded only when it matches
//   <cache>/<K[0:2]>/K.cpp     the source that was compiled (for people to read)
//   <cache>/<K[0:2]>/K.lock    flock'ed while K is compiled, so racing processes compile once
// Files are written under unique temporary names and renamed into place.
#pragma once

#include <filesystem>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <stdexcept>
#include <string>
#include <string_view>

#include "runtime/cache.hpp"
#include "runtime/module.hpp"

namespace raptor::runtime {

// The default optimization and ISA flags of a host compile: what $RAPTOR_CXXFLAGS (and
// CompileOptions::flags) replace.
// - -fno-trapping-math: a masked sample computes its step and then selects the held value
//   where the sample had finished. GCC sinks the step's arithmetic into the unfinished arm of
//   that select, and then, with traps honoured, may not compute it for every lane again: on
//   an ISA without mask registers (AVX2, SSE) it left every masked sample loop and every sum
//   over samples scalar ("control flow in loop"). No value changes: the flag only lets the
//   compiler assume that no floating-point exception traps (nothing here unmasks one), and
//   compiled kernels still equal the IR interpreter bit for bit.
// - -frename-registers: after register allocation, GCC renames registers to break the false
//   dependences between the unrelated chains of a step loop's vector iterations, so the core
//   overlaps more of them (a stepping step is a long chain of dependent operations per sample;
//   the refilled lanes' loops run 64 samples through it). On an AMD EPYC (AVX2) the
//   performance card's dense cell (N = 1e5, RK4, 1000 steps, float64) took 215-218 ms of CPU
//   against 231-233 ms, float32 likewise; code and values are unchanged otherwise (the same
//   instructions, other registers). -funroll-loops, which turns it on too, gave the same with
//   longer builds. Clang accepts it with a warning that it ignores it.
// - -ffp-contract=off: a*b+c stays two roundings, as the interpreter computes it.
// - On x86, 512-bit vectors where the machine has them (-mprefer-vector-width=512): GCC 12's
//   tuning for recent Intel cores prefers 256 bits. Without AVX-512 it changes nothing.
#if defined(__x86_64__) || defined(__i386__)
inline constexpr const char* kDefaultHostFlags =
    "-O3 -march=native -mprefer-vector-width=512 -fno-math-errno -fno-trapping-math "
    "-ffp-contract=off -fopenmp-simd -frename-registers";
#else
inline constexpr const char* kDefaultHostFlags =
    "-O3 -march=native -fno-math-errno -fno-trapping-math -ffp-contract=off -fopenmp-simd "
    "-frename-registers";
#endif
// The flags every host compile gets before the optimization flags, whatever those are: a
// position-independent shared object of C++17 whose only exported symbols are the kernels.
inline constexpr const char* kRequiredHostFlags = "-fPIC -shared -std=c++17 -fvisibility=hidden";

struct CompileOptions {
  std::string target = "host";          // only "host" here (CUDA goes through NVRTC elsewhere)
  std::optional<std::string> compiler;  // default: $RAPTOR_CXX, else "g++"
  // Optimization/ISA flags, split on whitespace; unset or blank: kDefaultHostFlags. They
  // follow kRequiredHostFlags on the command line, which are always given.
  std::optional<std::string> flags;
};

struct CompileResult {
  std::shared_ptr<const Module> module;
  std::string key;               // the cache key (SHA-256 hex)
  bool cache_hit = false;        // loaded from the cache without running the compiler
  double compile_seconds = 0.0;  // time in the compiler (0 on a hit)
  double total_seconds = 0.0;    // the whole compile() call
  std::filesystem::path so_path;
  std::filesystem::path source_path;  // <key>.cpp
};

// The compiler rejected the translation unit.
struct CompileFailure : std::runtime_error {
  CompileFailure(const std::string& what, std::string compiler_output_, std::string source_,
                 int line_, int exit_status_, std::filesystem::path source_path_)
      : std::runtime_error(what),
        compiler_output(std::move(compiler_output_)),
        source(std::move(source_)),
        line(line_),
        exit_status(exit_status_),
        source_path(std::move(source_path_)) {}
  std::string compiler_output;        // the compiler's stderr
  std::string source;                 // the translation unit's text
  int line;                           // line (1-based) of the first error in it; -1 if unknown
  int exit_status;                    // the compiler's exit status
  std::filesystem::path source_path;  // where the source was saved (kept for inspection)
};

// Compiles translation units into one cache directory. Holds the per-compiler identity
// (its --version output, and the ISA macros when the flags say -march=native) so that a
// compiler is asked once per Compiler object. Thread-safe.
// The identities of the C++ compilers this process has asked (`--version`, and under
// -march=native the macros its flags predefine), shared by every Compiler. eagle.plan.auto
// opens a Compiler per call; running the compiler twice to learn its identity was most of a
// cache hit's time (~10 ms of a warm until_done's first call in a process, against 0.4 ms
// for the rest). Keyed by the compiler as named, the $PATH that resolves a bare name and, under
// -march=native, the flags; a compiler replaced on disk while the process runs keeps its old
// identity until the process ends.
class CompilerIdentities {
 public:
  // The identity of `compiler` under `flags`, asked of the compiler once per key.
  const std::string& get(const std::string& compiler, const std::string& flags);
  // The process's one table (what every Compiler uses).
  static CompilerIdentities& process();

 private:
  std::mutex mu_;
  std::map<std::string, std::string> ids_;
};

class Compiler {
 public:
  explicit Compiler(CacheDir cache);

  // The cache key of `source` under `options` (runs the compiler once for its identity).
  std::string key(const std::string& source, const CompileOptions& options = {});

  // Loads the cached shared object for `source`, compiling it first when it is missing or its
  // digest does not match. Throws CompileFailure when the compiler rejects the source and
  // std::runtime_error when the compiler cannot be run or the result cannot be loaded.
  CompileResult compile(const std::string& source, const CompileOptions& options = {});

  const CacheDir& cache() const { return cache_; }

  // The cached shared object for `key` when it is present, ours and intact (its digest
  // sidecar matches); null otherwise. Never compiles.
  std::shared_ptr<const Module> load_cached(const std::string& key) const;

  // The compiler and the whole command-line flags `options` resolve to (kRequiredHostFlags,
  // then the optimization flags).
  static std::string resolve_compiler(const CompileOptions& options);
  static std::string resolve_flags(const CompileOptions& options);

 private:
  const std::string& identity(const std::string& compiler, const std::string& flags);

  CacheDir cache_;
};

// Writes a file inside a cache directory under a unique temporary name, then renames it into
// place: readers see the old file or the whole new one, never a half-written one.
void write_cache_file(const std::filesystem::path& dest, std::string_view data);

// An exclusive flock on a cache entry's lock file (`<stem>.lock`), held for the object's
// lifetime; the kernel releases it when the holder dies, however it dies. Only the holder
// writes the entry's files, so while it is held every `<stem>.*.tmp-*` beside them is what a
// killed holder (or the compiler it had started, which outlives it) left: the constructor
// removes those.
class CacheEntryLock {
 public:
  explicit CacheEntryLock(const std::filesystem::path& stem);
  CacheEntryLock(const CacheEntryLock&) = delete;
  CacheEntryLock& operator=(const CacheEntryLock&) = delete;
  ~CacheEntryLock();

  // Without waiting: removes the stale temporaries of `stem` when any exist and the lock is
  // free (a cache hit's housekeeping); does nothing while another process builds the entry.
  static void tidy(const std::filesystem::path& stem);

 private:
  int fd_ = -1;
};

// The contents of a regular file owned by the current user (nullopt when missing, not a
// regular file, or someone else's: such files are never trusted).
std::optional<std::string> read_cache_file(const std::filesystem::path& path);

// The first `<file>:<line>:<col>: error:` (or `fatal error:`) in compiler output that names
// `file`; -1 when there is none.
int first_error_line(const std::string& compiler_output, const std::string& file);

}  // namespace raptor::runtime
