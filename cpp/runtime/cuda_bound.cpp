// CUDA bound launches (see cuda_bound.hpp). Start at CudaBound::launch; make_cuda_args is the
// one place the ABI struct is filled (the XLA CUDA handler uses it too).
#include "runtime/cuda_bound.hpp"

#include <cstring>
#include <stdexcept>
#include <string>

namespace raptor::runtime {

namespace {

// The key state and the launch's key block at the end of the cells (cuda_bound.hpp).
constexpr size_t kRngBytes = 32;

const cuda::Driver& require_driver() {
  const cuda::Driver* d = cuda::Driver::get();
  if (!d)
    throw std::runtime_error(
        "raptor: no CUDA driver (libcuda.so.1) in this process; eagle.cuda.probe() says why");
  return *d;
}

}  // namespace

std::vector<int64_t> table_sizes(const Binding& b) {
  std::vector<int64_t> sizes;
  for (const SlotBinding& s : b.slots) sizes.push_back(s.table_size);
  return sizes;
}

cuda_abi::raptor_cuda_args make_cuda_args(const KernelEntry& e, const Binding& b,
                                          const std::vector<const void*>& params,
                                          unsigned long long* status, const CudaGeometry& g,
                                          unsigned long long scratch) {
  const size_t ns = e.num_slots();
  if (ns > RAPTOR_CUDA_MAX_SLOTS)
    throw std::invalid_argument("kernel '" + e.name + "' has more than " +
                                std::to_string(RAPTOR_CUDA_MAX_SLOTS) +
                                " parameters, the CUDA limit");
  if (b.slots.size() != ns || params.size() != ns)
    throw std::invalid_argument("kernel '" + e.name + "': one binding and one Param address " +
                                "per slot are needed");
  cuda_abi::raptor_cuda_args a{};
  a.n = b.n;
  a.count = b.count >= 0 ? b.count : b.n;
  a.index = b.index;
  a.zero_finished = b.zero_finished ? 1 : 0;
  a.accumulate_sums = b.accumulate_sums ? 1 : 0;
  a.grid = g.grid;
  a.mask_in = b.mask_in;
  a.mask_out = b.mask_out;
  a.status = status;
  a.sample_base = b.sample_base;
  a.n_total = b.n_total;
  for (size_t s = 0; s < ns; ++s) {
    a.in[s] = b.slots[s].in;
    a.out[s] = b.slots[s].out;
    a.params[s] = params[s];
    a.table_size[s] = b.slots[s].table_size;
    if (e.iface.slot(s).is_sum()) {
      a.sums[s] = b.slots[s].out;
      a.partials[s] = reinterpret_cast<double*>(cuda_partials_address(g, scratch, s));
    }
  }
  return a;
}

LaunchResult decode_status(const unsigned long long (&words)[kCudaStatusWords]) {
  LaunchResult r;
  r.finished = static_cast<int64_t>(words[0]);
  r.error = static_cast<int64_t>(words[1]);
  r.error_slot = r.error != RAPTOR_OK ? static_cast<int64_t>(words[2]) : -1;
  r.error_index = static_cast<int64_t>(words[3]);
  r.error_sample = r.error != RAPTOR_OK ? static_cast<int64_t>(words[4]) : -1;
  r.steps_run = static_cast<uint32_t>(words[5]);
  r.chunks = 1;
  return r;
}

DeviceMemory::DeviceMemory(const cuda::Driver& driver, size_t bytes)
    : driver_(driver), ptr_(driver.alloc(bytes)) {}

DeviceMemory::~DeviceMemory() { driver_.free(ptr_); }

CudaBound::CudaBound(std::shared_ptr<const CudaKernel> kernel, Binding b,
                     std::vector<const void*> param_ptrs, int device)
    : driver_(require_driver()),
      kernel_(std::move(kernel)),
      b_(std::move(b)),
      device_(device),
      context_(driver_.use_device(device)),
      geometry_(cuda_geometry(kernel_->slots(), b_.count >= 0 ? b_.count : b_.n, table_sizes(b_))),
      cells_(driver_,
             (kCudaStatusWords + b_.slots.size()) * sizeof(unsigned long long) + kRngBytes),
      partials_(driver_, geometry_.scratch_bytes > 0 ? geometry_.scratch_bytes : 8) {
  const KernelEntry& e = kernel_->slots();
  if (param_ptrs.size() != e.num_slots())
    throw std::invalid_argument("kernel '" + e.name + "': one Param address per slot is needed");
  // Status zeroed, then each Param number in its 8-byte cell, in the kernel dtype.
  std::vector<unsigned char> host((kCudaStatusWords + e.num_slots()) * 8, 0);
  const cuda::CUdeviceptr base = cells_.get();
  for (size_t s = 0; s < e.num_slots(); ++s) {
    if (e.iface.slot(s).role != SlotRole::Param || param_ptrs[s]) continue;
    unsigned char* cell = host.data() + (kCudaStatusWords + s) * 8;
    const ElemType pt = e.iface.slot(s).dtype;  // an integer Param keeps its dtype
    if (pt == ElemType::I32 || pt == ElemType::I64 || pt == ElemType::Bool) {
      const int64_t v = static_cast<int64_t>(b_.slots[s].param);
      if (pt == ElemType::I32) {
        const int32_t w = static_cast<int32_t>(v);
        std::memcpy(cell, &w, sizeof w);
      } else if (pt == ElemType::Bool) {
        cell[0] = v != 0 ? 1 : 0;
      } else {
        std::memcpy(cell, &v, sizeof v);
      }
    } else if (e.dtype_size == 4) {
      const float v = static_cast<float>(b_.slots[s].param);
      std::memcpy(cell, &v, sizeof v);
    } else {
      const double v = b_.slots[s].param;
      std::memcpy(cell, &v, sizeof v);
    }
    param_ptrs[s] = reinterpret_cast<const void*>(base + (kCudaStatusWords + s) * 8);
  }
  // A Random slot reads the launch's key block, which each launch's key step writes.
  if (const int rs = e.iface.random_slot(); rs >= 0)
    b_.slots[static_cast<size_t>(rs)].in = reinterpret_cast<const void*>(rng_state() + 16);
  driver_.copy_to_device_sync(base, host.data(), host.size());
  driver_.synchronize(nullptr);  // the copy has landed before any stream's first launch
  args_ = make_cuda_args(e, b_, param_ptrs, reinterpret_cast<unsigned long long*>(base), geometry_,
                         partials_.get());
}

cuda::CUdeviceptr CudaBound::rng_state() const {
  return cells_.get() + (kCudaStatusWords + b_.slots.size()) * sizeof(unsigned long long);
}

void CudaBound::set_rng(uint32_t k0, uint32_t k1, uint64_t next_launch, cuda::CUstream stream) {
  const KernelEntry& e = kernel_->slots();
  if (e.iface.random_slot() < 0)
    throw std::invalid_argument("kernel '" + e.name +
                                "' has no Random parameter: it takes no rng key");
  if (driver_.current_context() != context_) driver_.set_current(context_);
  driver_.synchronize(stream);  // enqueued launches keep their keys
  const uint32_t state[4] = {k0, k1, static_cast<uint32_t>(next_launch),
                             static_cast<uint32_t>(next_launch >> 32)};
  driver_.copy_to_device_sync(rng_state(), state, sizeof state);
  driver_.synchronize(nullptr);  // landed before the next launch, on any stream
  rng_set_ = true;
}

uint64_t CudaBound::launches(cuda::CUstream stream) const {
  if (kernel_->slots().iface.random_slot() < 0) return 0;
  if (driver_.current_context() != context_) driver_.set_current(context_);
  uint32_t state[4] = {};
  driver_.copy_to_host_sync(state, rng_state(), sizeof state, stream);
  return state[2] | static_cast<uint64_t>(state[3]) << 32;
}

void CudaBound::launch(cuda::CUstream stream) const {
  if (driver_.current_context() != context_) driver_.set_current(context_);
  const KernelEntry& e = kernel_->slots();
  if (const int rs = e.iface.random_slot(); rs >= 0) {
    if (!rng_set_)
      throw std::invalid_argument("kernel '" + e.name + "' draws random numbers from '" +
                                  e.slot_name(rs) + "' but no key was bound: bind(" +
                                  e.slot_name(rs) + "=seed or key)");
    cuda::CUdeviceptr state = rng_state(), block = state + 16;
    void* key_params[] = {&state, &block};
    driver_.launch(kernel_->rng_function(driver_), 1, 1, stream, key_params);
  }
  // The count word starts at finished_count's value (the kernel adds to it), as the host's
  // `+= finished`; without one, at 0. Sums need no zeroing: the kernel writes every partial
  // and <symbol>_finish every output (runtime/abi_cuda.h).
  driver_.memset_async(cells_.get(), sizeof(unsigned long long), stream);
  if (b_.finished_count)
    driver_.copy_async(cells_.get(), reinterpret_cast<cuda::CUdeviceptr>(b_.finished_count),
                       sizeof(uint32_t), stream);
  cuda_abi::raptor_cuda_args a = args_;  // the driver copies the parameters at the call
  void* params[] = {&a};
  if (geometry_.grid > 0)
    driver_.launch(kernel_->function(driver_), geometry_.grid, geometry_.block, stream, params);
  if (geometry_.finish)
    driver_.launch(kernel_->finish_function(driver_), geometry_.finish_grid, geometry_.finish_block,
                   stream, params);
  if (b_.finished_count)  // the count's low 32 bits (little-endian), on the stream
    driver_.copy_async(reinterpret_cast<cuda::CUdeviceptr>(b_.finished_count), cells_.get(),
                       sizeof(uint32_t), stream);
}

void CudaBound::synchronize(cuda::CUstream stream) const {
  if (driver_.current_context() != context_) driver_.set_current(context_);
  unsigned long long words[kCudaStatusWords] = {};
  driver_.copy_to_host_sync(words, cells_.get(), sizeof words, stream);
  const LaunchResult r = decode_status(words);
  if (r.ok()) return;
  const unsigned long long zero[kCudaStatusWords] = {};
  driver_.copy_to_device_sync(cells_.get(), zero, sizeof zero);
  throw std::runtime_error(describe_error(kernel_->slots(), b_, r));
}

}  // namespace raptor::runtime
