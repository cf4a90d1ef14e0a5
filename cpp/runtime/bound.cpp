// Bound launches (see bound.hpp).
#include "runtime/bound.hpp"

#include <stdexcept>

namespace raptor::runtime {

BoundLaunch::BoundLaunch(std::shared_ptr<const KernelEntry> entry, Binding binding,
                         std::vector<ParamSource> param_sources)
    : entry_(std::move(entry)), binding_(std::move(binding)), params_(std::move(param_sources)) {
  if (!entry_) throw std::invalid_argument("raptor: BoundLaunch without a kernel");
  if (entry_->active_set && binding_.mask_in == nullptr)
    throw std::invalid_argument("kernel '" + entry_->name +
                                "' keeps an active set (Guard(active_set=True)) but has no "
                                "Terminated mask bound");
}

void BoundLaunch::reset_active() { active_count_ = -1; }

void BoundLaunch::build_active() {
  index_.resize(static_cast<size_t>(binding_.n));
  active_count_ = init_active(binding_.mask_in, index_.data(), binding_.n);
}

int64_t BoundLaunch::live() {
  if (!entry_->active_set) return binding_.n;
  if (active_count_ < 0) build_active();
  return active_count_;
}

LaunchResult BoundLaunch::run(ThreadPool* pool) {
  for (const ParamSource& p : params_) {
    binding_.slots[p.slot].param = p.is_f32 ? static_cast<double>(*static_cast<const float*>(p.ptr))
                                            : *static_cast<const double*>(p.ptr);
  }
  if (entry_->active_set) {
    if (active_count_ < 0) build_active();
    binding_.index = index_.data();
    binding_.count = active_count_;
  }
  const LaunchResult r = launch(*entry_, binding_, pool, serial_threshold);
  if (entry_->active_set && r.finished > 0)
    active_count_ = compact_active(binding_.mask_in, index_.data(), active_count_);
  if (!r.ok()) throw std::runtime_error(describe_error(*entry_, binding_, r));
  return r;
}

}  // namespace raptor::runtime
