// A kernel bound to buffers: what `plan.bind(...)` makes and graphs and stepping loops run.
// It owns the Binding (pointers into the caller's arrays, taken by reference), reads Params
// given as arrays afresh at each launch, and keeps the active-set index map of a kernel built
// with Guard(active_set=True). Every launch goes through runtime::launch.
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "runtime/launch.hpp"

namespace raptor::runtime {

// A Param bound to a 0-d or 1-element array: read at each launch.
struct ParamSource {
  int slot = -1;
  const void* ptr = nullptr;
  bool is_f32 = false;
};

class BoundLaunch {
 public:
  BoundLaunch(std::shared_ptr<const KernelEntry> entry, Binding binding,
              std::vector<ParamSource> param_sources);

  // One launch. Throws std::runtime_error (describe_error's message) when the kernel reports
  // an error; the launch has run by then.
  LaunchResult run(ThreadPool* pool);

  // Active set: rebuild the index map from the mask (after the caller changed the mask).
  void reset_active();
  // Live samples in the active set (n when the kernel has none); builds the index map from
  // the mask when it is not built yet.
  int64_t live();

  const KernelEntry& entry() const { return *entry_; }
  const Binding& binding() const { return binding_; }
  int64_t serial_threshold = kDefaultSerialThreshold;

 private:
  std::shared_ptr<const KernelEntry> entry_;
  Binding binding_;
  std::vector<ParamSource> params_;
  std::vector<int64_t> index_;
  int64_t active_count_ = -1;  // -1: not built yet
  void build_active();
};

}  // namespace raptor::runtime
