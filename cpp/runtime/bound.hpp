// A kernel bound to buffers: what `plan.bind(...)` makes and graphs and stepping loops run.
// It owns the Binding (pointers into the caller's arrays, taken by reference), reads Params
// given as arrays afresh at each launch, and keeps the active-set index map of a kernel built
// with Guard(active_set=True). Every launch goes through runtime::launch.
#pragma once

#include <array>
#include <cstdint>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "runtime/launch.hpp"

namespace raptor::runtime {

// The element type of an array a Param is bound to: every real NumPy number type (bool and
// complex are refused at bind, python/eagle/binding.py). `LongDouble` is the platform's C
// `long double`, which is NumPy's longdouble.
enum class ParamElement : uint8_t {
  F16,
  F32,
  F64,
  LongDouble,
  I8,
  I16,
  I32,
  I64,
  U8,
  U16,
  U32,
  U64
};

// From NumPy's spelling: "f2", "f4", "f8", "g" (longdouble), "i1".."i8", "u1".."u8".
// Throws std::invalid_argument for any other code.
ParamElement param_element(std::string_view code);

// A Param bound to a 0-d or 1-element array: read at each launch.
struct ParamSource {
  int slot = -1;
  const void* ptr = nullptr;  // any alignment
  ParamElement element = ParamElement::F64;
};

// The value at `p.ptr` as a double, rounded as Python's float(value) rounds it (nearest);
// the launcher converts it to the kernel's dtype as it does a Param given as a number.
double read_param(const ParamSource& p);

class BoundLaunch {
 public:
  BoundLaunch(std::shared_ptr<const KernelEntry> entry, Binding binding,
              std::vector<ParamSource> param_sources);

  // One launch. Throws std::runtime_error (describe_error's message) when the kernel reports
  // an error; the launch has run by then.
  LaunchResult run(ThreadPool* pool);

  // The kernel's Random key (jax.random.key_data): launch n draws with fold_in(key, n), n
  // counted by this bound launch from `next_launch` (0: a fresh binding; a reverse sweep sets
  // the number of the primal launch it differentiates). Throws std::invalid_argument for a
  // kernel without a Random parameter.
  void set_rng(uint32_t k0, uint32_t k1, uint64_t next_launch = 0);
  uint64_t launches() const { return launches_; }  // launches run so far (the next n)
  bool has_rng() const { return rng_set_; }

  // Active set: rebuild the index map from the mask (after the caller changed the mask).
  void reset_active();
  // Live samples in the active set (n when the kernel has none); builds the index map from
  // the mask when it is not built yet.
  int64_t live();

  const KernelEntry& entry() const { return *entry_; }
  const Binding& binding() const { return binding_; }
  int64_t serial_threshold = kDefaultSerialThreshold;
  int64_t stream_bytes = -1;  // Binding::stream_bytes of every launch (-1: the default)
  int64_t max_steps = 0;      // Binding::max_steps of the next launches (0: the kernel's steps)

 private:
  std::shared_ptr<const KernelEntry> entry_;
  Binding binding_;
  std::vector<ParamSource> params_;
  std::vector<int64_t> index_;
  int64_t active_count_ = -1;  // -1: not built yet
  std::array<uint32_t, 2> rng_key_{};
  std::array<uint32_t, 4> rng_block_{};  // this launch's key and sample base (SlotRole::Random)
  bool rng_set_ = false;
  uint64_t launches_ = 0;
  void build_active();
};

}  // namespace raptor::runtime
