// The host launcher: the one code path that runs a compiled kernel over bound buffers, used
// by plans, graphs, stepping loops and the XLA FFI handlers alike. Small launches run on the
// calling thread; large ones are split into 64-sample-aligned chunks across a ThreadPool.
// Reductions (ParamSum/TableSum) get per-chunk double partials combined in chunk order; their
// chunks depend on the launch alone (at most 16 of at least 4096 positions), so a sum has the
// same bits whatever the thread count and whether the launch runs split. Kernel errors come back in LaunchResult.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "ir/ir.hpp"
#include "runtime/abi.h"
#include "runtime/interface.hpp"
#include "runtime/module.hpp"
#include "runtime/thread_pool.hpp"

namespace raptor::runtime {

// A compiled kernel: its entry point and its interface (runtime/interface.hpp: every slot's
// role, width, dtype, shape rule and place among the JAX operands and results).
struct KernelEntry {
  raptor_kernel_fn fn = nullptr;
  KernelInterface iface;                 // the slots: roles, widths, shapes, JAX positions
  std::string name;                      // the kernel's name, for messages (== iface.name())
  std::string symbol;                    // the exported symbol fn was found as
  std::string digest;                    // registry key (see registry.hpp; == iface.digest())
  int dtype_size = 8;                    // 4: float32, 8: float64 (sum outputs are written so)
  bool active_set = false;               // Guard(active_set=True): callers pass an index
  int steps = 1;                         // steps per launch (builds know it; a kernel found
                                         //  through a manifest counts as 1): chunking only
  int64_t weight = 1;                    // a sample-step's cost over the serial threshold's
                                         //  reference kernel's (runtime/work_weight.hpp; 1
                                         //  when unknown: a kernel found through a manifest)
  std::shared_ptr<const Module> module;  // keeps `fn` loaded

  // Sets `iface` and the fields copied from it (name, digest, dtype_size).
  void set_interface(KernelInterface i);
  size_t num_slots() const { return iface.num_slots(); }
  bool has_mask() const { return iface.has_mask(); }
  std::string slot_name(int slot) const { return iface.slot_name(slot); }
};

// What one slot is bound to.
struct SlotBinding {
  const void* in = nullptr;  // Plane / Table / in-out Mutable: the buffer read
  void* out = nullptr;       // Mutable: the plane written (== in for in-out);
                             // ParamSum/TableSum: the output (dtype) the sum is written to
  double param = 0.0;        // Param: the value
  int64_t table_size = 0;    // Table: entries M (TableSum: 0 takes its table's M)
};

struct Binding {
  int64_t n = 0;                       // samples per plane (the component stride)
  std::vector<SlotBinding> slots;      // one per kernel slot
  const uint8_t* mask_in = nullptr;    // the Terminated plane, when the kernel has one
  uint8_t* mask_out = nullptr;         // usually == mask_in
  const int64_t* index = nullptr;      // active set: run samples index[0..count); null: 0..count
  int64_t count = -1;                  // positions to run; -1: n
  bool zero_finished = false;          // finished samples get 0 in pure outputs (JAX)
  bool accumulate_sums = false;        // add sums to the outputs instead of overwriting them
  uint32_t* finished_count = nullptr;  // if set and the kernel has a mask: += finished (atomic)
  // Non-temporal stores (raptor_args::stream) for launches whose planes, read and written,
  // take at least this many bytes; -1: default_stream_bytes().
  int64_t stream_bytes = -1;
  // The most steps a sample runs in this launch (raptor_args::max_steps); 0: the kernel's.
  int64_t max_steps = 0;
  // hawk.math.sample_index() / n_samples() (raptor_args::sample_base, n_total): the global
  // index of sample 0 and the whole launch's samples (0: n), for a shard of a larger launch.
  int64_t sample_base = 0;
  int64_t n_total = 0;
};

struct LaunchResult {
  int64_t finished = 0;       // samples finished by this launch
  int64_t error = RAPTOR_OK;  // RAPTOR_ERR_*: the error with the lowest sample index
  int64_t error_slot = -1;
  int64_t error_index = 0;
  int64_t error_sample = -1;
  int chunks = 0;          // how many calls the kernel was split into (0: nothing to run)
  uint32_t steps_run = 0;  // the most steps a sample ran (the kernel's steps, or fewer when all
                           // of its samples finished early)
  bool ok() const { return error == RAPTOR_OK; }
};

// Below this many samples a launch runs on the calling thread; a caller launching back to
// back (ThreadPool::back_to_back: a stepping loop, a benchmark) splits from a quarter of it,
// unless it has sums over samples (their chunks fix the order of the additions).
// Measured with the memory-bound y = a*x + b float64 kernel (RuntimeLaunch.
// MeasureSerialThreshold, 2 cores): with the pool awake, splitting breaks even near 8K samples
// and wins 1.4x at 16K; a sleeping pool costs another 25-40 us to wake, so 32768 keeps one-off
// launches from paying for threads.
inline constexpr int64_t kDefaultSerialThreshold = 32768;

// From how many bytes of planes (read and written) a launch asks its kernel to write pure
// outputs with non-temporal stores: $RAPTOR_STREAM_BYTES when set (0: every launch), else a
// quarter of the last-level cache (sysconf; 8 MiB where it does not say). A store to a line
// not in cache first reads it; a launch larger than the cache gains nothing from that read,
// and a streamed line skips it. On a 2-core VM with a 105 MiB L3 shared with its neighbours,
// streaming won from 48 MB of planes (the drag step at 2^20 float64) and lost below 24 MB
// (docs/performance.md); below, the lines written are worth keeping in cache for whatever
// reads them next. On an AMD EPYC VM whose cores share a 32 MiB L3, sysconf says 320 MiB (the
// socket's, not the core's) and streaming paid from 96 MB, was 0.85-1.08x at 48 MB and 2-3x
// slower below 32 MB: the sysconf figure is the one that fits there, a quarter of the real L3
// would not (benchmarks/stream_stores.py measures a machine). Read once per process.
int64_t default_stream_bytes();

// Runs `entry` over `binding`. Throws std::invalid_argument for a binding that does not fit
// the kernel (slot count, missing sum output); kernel errors are returned, never thrown.
LaunchResult launch(const KernelEntry& entry, const Binding& binding, ThreadPool* pool,
                    int64_t serial_threshold = kDefaultSerialThreshold);

// A message a user can act on for a failed launch, e.g.
// "kernel 'k': table 'w' index 12 is out of range [0, 10) at sample 7".
std::string describe_error(const KernelEntry& entry, const Binding& binding,
                           const LaunchResult& result);

// Keeps the entries of index[0..count) whose sample is live (mask[index[i]] == 0), in order;
// returns the new count.
int64_t compact_active(const uint8_t* mask, int64_t* index, int64_t count);

// Fills index with the live samples of [0, n) (mask null: all); returns their count.
int64_t init_active(const uint8_t* mask, int64_t* index, int64_t n);

}  // namespace raptor::runtime
