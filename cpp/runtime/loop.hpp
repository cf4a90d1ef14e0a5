// Stepping loops (eagle.until_done): launch a sequence of kernels until every sample of the
// loop's Terminated mask is set or the budget of launches is spent. The decisions of such a
// loop are made here, once, for the host and for a GPU:
//   - run_loop(executor, options): the planner. It asks a StepExecutor to run the sequence
//     once or, where fused kernels exist, one pass of the largest that fits, and counts
//     launches exactly;
//     HostLoop is the host's executor (BoundLaunch sequences on the shared pool).
//   - device_batches / device_counters / device_result: the plan of the same loop as one
//     device graph (runtime/cuda_loop_kernels.hpp holds the stop-test kernel it relies on).
// Start at LoopOptions and run_loop; the device plan is at the end of this file.
//
// The count a run reports is the number of launches of the original kernel(s) a plain loop
// would have made: it stops after the first launch after which no sample is live, or when the
// budget is spent. A fused pass (the same kernel with F times its steps, F one of
// `fused_launches`) that leaves samples live counts F; one after which none is live counts
// ceil(steps_run / unit_steps), the launch in which the last sample finished. Several fused
// kernels make a ladder (eagle's are 256 and 16 launches): long passes while the budget
// allows, short ones for its tail, single launches only for the last few.
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <vector>

#include "runtime/bound.hpp"
#include "runtime/cuda_loop_kernels.hpp"
#include "runtime/interface.hpp"
#include "runtime/thread_pool.hpp"

namespace raptor::runtime {

// Samples whose mask byte is set, of mask[0, n).
int64_t count_set(const uint8_t* mask, int64_t n);

// The same count split over the pool's threads when the mask is large (>= kParallelCount
// bytes: one thread reads ~23 GB/s here, so 1e6 bytes took ~45 us, a stepping loop's re-entry
// cost at N = 1e6); each thread counts a contiguous part, the parts are added.
inline constexpr int64_t kParallelCount = int64_t{1} << 18;
int64_t count_set(const uint8_t* mask, int64_t n, ThreadPool& pool);

// Launches every kernel of `seq` in order, `times` times (eagle.Graph.launch).
void run_sequence(const std::vector<std::shared_ptr<BoundLaunch>>& seq, ThreadPool& pool,
                  int64_t times);

// ---- the planner

struct LoopOptions {
  int64_t budget = 0;  // the most launches this run (>= 0)
  // Launches a pass of each fused kernel stands for, largest first; empty: no fused kernel.
  std::vector<int64_t> fused_launches;
  // > 0: a pass of the first (largest) fused kernel may stand for any number of launches from
  // fused_min up to fused_launches[0]: the kernel is told how many (raptor_args::max_steps),
  // and the other rungs are not used. 0: a pass stands for its rung's launches exactly.
  int64_t fused_min = 0;
  int64_t unit_steps = 1;  // steps of one launch of the original kernel (>= 1)
  int64_t chunk = 0;       // > 0: call on_chunk after every `chunk` launches (and at the
                           // end); a fused pass never crosses a chunk boundary
  // Called between chunks with the launches made so far in this run and the live samples.
  std::function<void(int64_t launches, int64_t live)> on_chunk;
};

struct LoopResult {
  int64_t launches = 0;  // launches of the original sequence, exact (see the file comment)
  bool done = false;     // no sample is live
  int64_t live = 0;      // live samples at the end
  bool operator==(const LoopResult&) const = default;
};

struct FusedPass {
  int64_t finished = 0;   // samples it finished
  int64_t steps_run = 0;  // the most steps a sample ran in it (LaunchResult::steps_run)
};

// What runs a loop's launches. The planner calls live() once at the start and after every
// launch or pass, so it must be cheap (HostLoop tracks it from finished counts).
class StepExecutor {
 public:
  virtual ~StepExecutor() = default;
  // One launch of the whole sequence; returns the samples it finished.
  virtual int64_t run_sequence_once() = 0;
  // One pass of fused kernel `rung` (an index into LoopOptions::fused_launches) running at most
  // `steps` steps per sample: the kernel's own, or fewer under LoopOptions::fused_min.
  virtual FusedPass run_fused(size_t rung, int64_t steps) = 0;
  // Live samples of the loop's mask now.
  virtual int64_t live() = 0;
};

// What the planner runs next: nothing (stop), the sequence once, or a fused pass.
enum class LoopAction { Stop, Sequence, Fused };
// The fused kernel a pass takes with `room` launches left: the first (largest) whose launches
// fit (under fused_min: the first, from fused_min launches left), or -1 when none does.
int fused_rung(const LoopOptions& options, int64_t room);
// The launches a pass of `rung` stands for with `room` launches left.
int64_t fused_pass_size(const LoopOptions& options, size_t rung, int64_t room);
// `launches` made so far in this run, `in_chunk` launches left before the next chunk boundary
// (the budget's remainder when options.chunk is 0).
LoopAction next_action(const LoopOptions& options, int64_t launches, int64_t in_chunk,
                       int64_t live);
// Launches a pass that stood for `pass_launches` counts: all of them while samples are still
// live after it, else ceil(steps_run / unit_steps).
int64_t fused_pass_launches(const LoopOptions& options, int64_t pass_launches,
                            const FusedPass& pass, int64_t live_after);

// Runs the loop; throws std::invalid_argument for options that make no sense (a negative
// budget, unit_steps < 1, fused_launches not positive and decreasing) and lets the
// executor's exceptions through.
LoopResult run_loop(StepExecutor& executor, const LoopOptions& options);

// ---- the host executor

// A step of a host loop: a bound kernel, or a callback run between launches (a foreign
// node, e.g. Python code; it may change any plane, the mask included).
struct HostStep {
  std::shared_ptr<BoundLaunch> kernel;  // set: launch it
  std::function<void()> host;           // else: call it
};

// The host's StepExecutor: the steps in order on `pool`, and the fused kernel (the loop's one
// kernel with more steps) when given. Live samples are counted from the mask once, then
// tracked from the finished counts of the kernels whose mask is the loop's; after a host
// callback the mask is counted again.
class HostLoop final : public StepExecutor {
 public:
  HostLoop(std::vector<HostStep> steps, const uint8_t* mask, int64_t n, ThreadPool& pool,
           std::vector<std::shared_ptr<BoundLaunch>> fused = {});
  int64_t run_sequence_once() override;
  FusedPass run_fused(size_t rung, int64_t steps) override;
  int64_t live() override { return live_; }

 private:
  std::vector<HostStep> steps_;
  const uint8_t* mask_;
  int64_t n_;
  ThreadPool& pool_;
  std::vector<std::shared_ptr<BoundLaunch>> fused_;
  int64_t live_;
  int64_t counted(const BoundLaunch& b, const LaunchResult& r) const;
};

// ---- the device plan (for a GPU executor; logic only, never run on a GPU yet)
//
// On a GPU the loop is one device graph whose launch i is [step kernels..., stop test]: the
// stop test (cuda_loop_kernels.hpp) counts live samples of the mask into a DeviceLoopCounters
// block in device memory and stops counting once none is live or the budget is spent. A run:
//   1. write device_counters(budget) to the counter block; launch the stop test with init=1;
//   2a. CUDA >= 12.4 (conditional nodes): a WHILE node whose body is [steps..., test(init=0)],
//       variant LoopStopVariant::While (the test sets the node's condition); launch it once;
//   2b. else, read the counter block back after the init test and after each batch, and
//       while !device_stopped(counters) launch the next k of device_batches(budget, cap,
//       overshoot_ok): a graph captured with k x [steps..., test(init=0)] (variant Batched);
//   3. device_result(counters, budget) is the run's LoopResult, exact as on the host: the
//      launches after the one that finished the last sample counted nothing, and (when
//      overshoot_ok) changed nothing, because every sample was already finished.
// Progress (LoopOptions::chunk) on the device: run steps 1-3 per chunk with budget = chunk.

// Batches are powers of two: 1, 2, 4, ... up to `cap` (a power of two), then `cap` each, the
// tail split into the powers of two of its binary digits, so a short loop overshoots little,
// a long one pays few host round trips, and graphs of log2(cap) + 1 sizes cover every run.
// They add up to `budget` exactly. overshoot_ok false (a kernel of the sequence is not a
// no-op once every sample is finished, see noop_when_done): every batch is 1.
inline constexpr int64_t kDeviceBatchCap = 256;
std::vector<int64_t> device_batches(int64_t budget, int64_t cap = kDeviceBatchCap,
                                    bool overshoot_ok = true);

// Whether a launch of this kernel changes nothing once every sample of the loop's mask is
// finished: it has a mask (the loop's: the caller checks that), writes no sum over samples (a
// launch would overwrite or add to it) and does not write zeros for finished samples.
bool noop_when_done(const KernelInterface& iface, bool zero_finished);
// A step of a device loop may run past the stop (in a batch) when its mask is the loop's and
// noop_when_done holds for it.
bool step_noop_when_done(const KernelInterface& iface, const Binding& b, const void* loop_mask);

// The counter block a run starts from (blocks_done 0, nothing counted).
DeviceLoopCounters device_counters(int64_t budget);
// Whether the stop test has stopped the loop (done or budget spent).
bool device_stopped(const DeviceLoopCounters& c);
// The run's result from the counter block read back after it. Throws std::runtime_error when
// the block is not one the stop test can have written for this budget (it names the field).
LoopResult device_result(const DeviceLoopCounters& c, int64_t budget);

// Which variant of the device plan a driver can run: While (one conditional WHILE node) needs
// CUDA >= 12.4 (driver_version >= 12040, as cuDriverGetVersion gives it) and the conditional
// node entry points (`has_conditional_api`: cuGraphConditionalHandleCreate, cuGraphAddNode_v2
// and cuStreamBeginCaptureToGraph resolved); else Batched.
inline constexpr int kConditionalNodeDriverVersion = 12040;
LoopStopVariant device_loop_variant(int driver_version, bool has_conditional_api);

// What a device executor provides to run the plan above (CudaLoop on a GPU; HostDeviceLoop
// below runs the same plan on the CPU, for tests). Every call is in stream order.
class DeviceLoopOps {
 public:
  virtual ~DeviceLoopOps() = default;
  virtual void write_counters(const DeviceLoopCounters& c) = 0;  // before the init test
  virtual void init_test() = 0;                                  // the stop test, init = 1
  virtual void batch(int64_t k) = 0;               // k x [steps..., stop test (init = 0)] (Batched)
  virtual void while_loop() = 0;                   // [init test, WHILE {steps..., test}] (While)
  virtual DeviceLoopCounters read_counters() = 0;  // waits for what was enqueued
};

// Steps 1-3 of the device plan over `ops` for one run of at most `budget` launches.
LoopResult run_device_loop(DeviceLoopOps& ops, int64_t budget, bool overshoot_ok,
                           LoopStopVariant variant);

// The device plan on the CPU: the steps are host BoundLaunches run in order, the stop test is
// count_set over the mask and the device's counting rule (loop_stop_update). It makes the
// launches a GPU would make (a batch runs whole, past the stop: launches_made() counts them),
// so host tests of the device path see what a GPU would do, numbers and step counts alike.
class HostDeviceLoop final : public DeviceLoopOps {
 public:
  // Whether every step may run past the stop (step_noop_when_done of each).
  static bool overshoot_ok(const std::vector<std::shared_ptr<BoundLaunch>>& steps,
                           const uint8_t* mask);
  HostDeviceLoop(std::vector<std::shared_ptr<BoundLaunch>> steps, const uint8_t* mask, int64_t n,
                 ThreadPool& pool, bool overshoot_ok, LoopStopVariant variant);
  // One run of the plan (run_device_loop over this) of at most `budget` launches.
  LoopResult run(int64_t budget) { return run_device_loop(*this, budget, overshoot_ok_, variant_); }
  LoopStopVariant variant() const { return variant_; }
  void write_counters(const DeviceLoopCounters& c) override { c_ = c; }
  void init_test() override { test(true); }
  void batch(int64_t k) override;
  void while_loop() override;
  DeviceLoopCounters read_counters() override { return c_; }
  int64_t launches_made() const { return made_; }

 private:
  void test(bool init);
  void launch_steps();
  std::vector<std::shared_ptr<BoundLaunch>> steps_;
  const uint8_t* mask_;
  int64_t n_;
  ThreadPool& pool_;
  bool overshoot_ok_;
  LoopStopVariant variant_;
  DeviceLoopCounters c_{};
  int64_t made_ = 0;
};

}  // namespace raptor::runtime
