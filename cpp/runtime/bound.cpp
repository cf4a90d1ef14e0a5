// Bound launches (see bound.hpp).
#include "runtime/bound.hpp"

#include <cmath>
#include <cstring>
#include <limits>
#include <stdexcept>

#include "runtime/random.h"

namespace raptor::runtime {

namespace {

template <class T>
double load_as_double(const void* p) {
  T v;
  std::memcpy(&v, p, sizeof v);
  return static_cast<double>(v);
}

// IEEE binary16 to double, exactly (every half is a double).
double half_to_double(uint16_t h) {
  const bool negative = (h >> 15) != 0;
  const int exponent = (h >> 10) & 0x1f;
  const int mantissa = h & 0x3ff;
  double v = 0.0;
  if (exponent == 0)
    v = std::ldexp(static_cast<double>(mantissa), -24);  // zero and subnormals
  else if (exponent == 0x1f)
    v = mantissa ? std::numeric_limits<double>::quiet_NaN()
                 : std::numeric_limits<double>::infinity();
  else
    v = std::ldexp(static_cast<double>(mantissa + 1024), exponent - 25);
  return negative ? -v : v;
}

}  // namespace

ParamElement param_element(std::string_view code) {
  struct Code {
    std::string_view code;
    ParamElement element;
  };
  static constexpr Code kCodes[] = {
      {"f2", ParamElement::F16},       {"f4", ParamElement::F32}, {"f8", ParamElement::F64},
      {"g", ParamElement::LongDouble}, {"i1", ParamElement::I8},  {"i2", ParamElement::I16},
      {"i4", ParamElement::I32},       {"i8", ParamElement::I64}, {"u1", ParamElement::U8},
      {"u2", ParamElement::U16},       {"u4", ParamElement::U32}, {"u8", ParamElement::U64}};
  for (const Code& c : kCodes)
    if (c.code == code) return c.element;
  throw std::invalid_argument("raptor: a Param array of element type '" + std::string(code) +
                              "' cannot be read (real numbers only: f2 f4 f8 g i1..i8 u1..u8)");
}

double read_param(const ParamSource& p) {
  switch (p.element) {
    case ParamElement::F16: {
      uint16_t h;
      std::memcpy(&h, p.ptr, sizeof h);
      return half_to_double(h);
    }
    case ParamElement::F32:
      return load_as_double<float>(p.ptr);
    case ParamElement::F64:
      return load_as_double<double>(p.ptr);
    case ParamElement::LongDouble:
      return load_as_double<long double>(p.ptr);
    case ParamElement::I8:
      return load_as_double<int8_t>(p.ptr);
    case ParamElement::I16:
      return load_as_double<int16_t>(p.ptr);
    case ParamElement::I32:
      return load_as_double<int32_t>(p.ptr);
    case ParamElement::I64:
      return load_as_double<int64_t>(p.ptr);
    case ParamElement::U8:
      return load_as_double<uint8_t>(p.ptr);
    case ParamElement::U16:
      return load_as_double<uint16_t>(p.ptr);
    case ParamElement::U32:
      return load_as_double<uint32_t>(p.ptr);
    case ParamElement::U64:
      return load_as_double<uint64_t>(p.ptr);
  }
  throw std::logic_error("raptor: read_param: unknown element type");
}

BoundLaunch::BoundLaunch(std::shared_ptr<const KernelEntry> entry, Binding binding,
                         std::vector<ParamSource> param_sources)
    : entry_(std::move(entry)), binding_(std::move(binding)), params_(std::move(param_sources)) {
  if (!entry_) throw std::invalid_argument("raptor: BoundLaunch without a kernel");
  if (entry_->active_set && binding_.mask_in == nullptr)
    throw std::invalid_argument("kernel '" + entry_->name +
                                "' keeps an active set (Guard(active_set=True)) but has no "
                                "Terminated mask bound");
}

void BoundLaunch::set_rng(uint32_t k0, uint32_t k1, uint64_t next_launch) {
  if (entry_->iface.random_slot() < 0)
    throw std::invalid_argument("kernel '" + entry_->name +
                                "' has no Random parameter: it takes no rng key");
  rng_key_ = {k0, k1};
  rng_set_ = true;
  launches_ = next_launch;
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
  for (const ParamSource& p : params_) binding_.slots[p.slot].param = read_param(p);
  if (const int rs = entry_->iface.random_slot(); rs >= 0) {
    if (!rng_set_)
      throw std::invalid_argument("kernel '" + entry_->name + "' draws random numbers from '" +
                                  entry_->slot_name(rs) + "' but no key was bound: bind(" +
                                  entry_->slot_name(rs) + "=seed or key)");
    // Launch n draws with fold_in(key, n) (eagle's numbering, docs/language.md).
    const rp_key k = rp_fold_in(rp_key{rng_key_[0], rng_key_[1]}, static_cast<uint32_t>(launches_));
    rng_block_ = {k.k0, k.k1, 0u, 0u};
    binding_.slots[rs].in = rng_block_.data();
    ++launches_;
  }
  if (entry_->active_set) {
    if (active_count_ < 0) build_active();
    binding_.index = index_.data();
    binding_.count = active_count_;
  }
  binding_.stream_bytes = stream_bytes;
  binding_.max_steps = max_steps;
  const LaunchResult r = launch(*entry_, binding_, pool, serial_threshold);
  if (entry_->active_set && r.finished > 0)
    active_count_ = compact_active(binding_.mask_in, index_.data(), active_count_);
  if (!r.ok()) throw std::runtime_error(describe_error(*entry_, binding_, r));
  return r;
}

}  // namespace raptor::runtime
