// The device half of a stepping loop on a GPU: the stop-test kernel, as CUDA C source text
// (compiled with NVRTC like generated kernels), and the counter block it keeps in device
// memory. The plan that drives it (batch sizes, reading the counters back into a LoopResult)
// is runtime/loop.hpp; start reading there, then the launch notes at loop_stop_source below.
//
// One source, two variants (LoopStopVariant): Batched (the host launches captured graphs of
// k launches and reads the counters between them) and While (the body of a CUDA conditional
// WHILE node, CUDA >= 12.4: the stop test also sets the node's condition with
// cudaGraphSetConditional). The variant is a macro, RAPTOR_LOOP_WHILE, defined in front of the
// same text.
#pragma once

#include <cstdint>
#include <string>

namespace raptor::runtime {

// The counter block's fields, written once and used both here (DeviceLoopCounters) and in the
// CUDA source (raptor_loop_counters), so host and device agree on the layout. All fields are
// 64-bit, so neither side pads.
#define RAPTOR_LOOP_COUNTERS_FIELDS                                                          \
  unsigned long long budget;      /* in: the most launches of this run */                    \
  unsigned long long launches;    /* launches counted: each ran while a sample was live */   \
  unsigned long long live;        /* live samples after the last counted launch (or at    */ \
                                  /* the start, after the init test) */                      \
  unsigned long long done_at;     /* the launch after which live reached 0; 0: not (yet) */  \
  unsigned long long stopped;     /* 1: done or budget spent; later tests count nothing */   \
  unsigned long long budget_out;  /* 1: stopped because `launches` reached `budget` */       \
  unsigned long long blocks_done; /* scratch of the reduction; 0 between launches */

struct DeviceLoopCounters {
  RAPTOR_LOOP_COUNTERS_FIELDS
};
static_assert(sizeof(DeviceLoopCounters) == 7 * 8, "the counter block is seven 64-bit words");

// What one stop test does to the counter block once it knows `live` (the live samples now):
// the counting rule of the device loop, written once. The CUDA source gets this text as a
// __device__ function and the host the same function as loop_stop_update, so tests here run
// the device's rule on the CPU.
//   init: the start of a run: nothing counted yet; stop at once when nothing is live or the
//         budget is 0.
//   else: a launch of the step kernels ran while samples were live (a test after `stopped`
//         counts nothing): count it; live 0 records done_at; reaching the budget stops.
#define RAPTOR_LOOP_UPDATE_DEFINITION                                                          \
  inline void raptor_loop_update(raptor_loop_counters* c, unsigned long long live, int init) { \
    if (init) {                                                                                \
      c->launches = 0;                                                                         \
      c->done_at = 0;                                                                          \
      c->live = live;                                                                          \
      c->budget_out = live != 0 && c->budget == 0;                                             \
      c->stopped = live == 0 || c->budget == 0;                                                \
      return;                                                                                  \
    }                                                                                          \
    if (c->stopped) return;                                                                    \
    c->launches += 1;                                                                          \
    c->live = live;                                                                            \
    if (live == 0) {                                                                           \
      c->done_at = c->launches;                                                                \
      c->stopped = 1;                                                                          \
    } else if (c->launches >= c->budget) {                                                     \
      c->budget_out = 1;                                                                       \
      c->stopped = 1;                                                                          \
    }                                                                                          \
  }

namespace loop_detail {
using raptor_loop_counters = DeviceLoopCounters;
RAPTOR_LOOP_UPDATE_DEFINITION
}  // namespace loop_detail

// The stop test's update of `c` (the device rule above, run on the host).
inline void loop_stop_update(DeviceLoopCounters& c, uint64_t live, bool init) {
  loop_detail::raptor_loop_update(&c, live, init ? 1 : 0);
}

enum class LoopStopVariant { Batched, While };

// The kernel's name in the source (extern "C").
inline constexpr const char* kLoopStopSymbol = "raptor_loop_stop";
// Threads per block of every stop-test launch (the source's reduction assumes exactly this).
inline constexpr int kLoopStopBlock = 256;
// The most blocks of a stop-test launch: the partials buffer has this many entries.
inline constexpr int kLoopStopMaxBlocks = 1024;

// Blocks for a stop test over a mask of n samples: enough that each thread reads about 16
// bytes, at least 1, at most kLoopStopMaxBlocks. Depends on n only.
int loop_stop_grid(int64_t n);

// The CUDA C source of the stop test for `variant` (no includes; NVRTC compiles it as is).
std::string loop_stop_source(LoopStopVariant variant);

// How to launch it (also in the source's own comment):
//   raptor_loop_stop(const unsigned char* mask, long long n, raptor_loop_counters* c,
//                    unsigned long long* partials, int init
//                    [, cudaGraphConditionalHandle cond])      <- While variant only
//   grid = loop_stop_grid(n) blocks of kLoopStopBlock threads; partials: kLoopStopMaxBlocks
//   unsigned long long of device memory (any contents); c: one DeviceLoopCounters in device
//   memory, set by the host to device_counters(budget) (loop.hpp) before each run.
//   init = 1 once before the first launch of a run (counts the live samples at the start and
//   stops at once when none is live or the budget is 0); init = 0 after every launch of the
//   step kernels. Within one launch all blocks read `stopped` before the last block writes
//   it, so a test after the loop has stopped returns at once (no-op launches stay cheap).
//   While variant: `cond` is the WHILE node's handle; every test (init included) sets it to
//   !stopped, so the init test goes upstream of the WHILE node and the body is
//   [step kernels..., test with init = 0].

}  // namespace raptor::runtime
