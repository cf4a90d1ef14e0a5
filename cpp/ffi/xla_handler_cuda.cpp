// The CUDA XLA FFI handler (see xla_handler.hpp): runs a hawk kernel's CUDA build on XLA's
// stream. Start at `run_kernel_cuda`: it maps XLA's device buffers onto the kernel's slots
// (ffi/buffers.hpp), zeroes the sums, and launches the PTX loaded into the current context
// (runtime/cuda_build.hpp) with the arguments by value (runtime/abi_cuda.h). It never waits
// for the GPU, except for a kernel that reads Tables: then it reads the launch's status back
// to report an out-of-range index as an error, which needs the stream to finish.
// Built with every XLA FFI build; it needs a CUDA driver at run time (none on a CPU machine).
#include <cstdint>
#include <string>
#include <string_view>

#include "ffi/buffers.hpp"
#include "ffi/xla_handler.hpp"
#include "runtime/cuda_build.hpp"

namespace raptor::ffi {

using ir::SlotKind;
namespace cuda = runtime::cuda;

namespace {

#include "runtime/abi_cuda.h"

constexpr unsigned kBlock = 256;
constexpr unsigned kMaxGrid = 65535;

xffi::Error run_kernel_cuda(cuda::CUstream stream, xffi::RemainingArgs args,
                            xffi::RemainingRets rets, std::string_view digest) {
  const auto kernel = runtime::cuda_registry().find(digest);
  if (!kernel)
    return xffi::Error::Internal("raptor: kernel " + std::string(digest.substr(0, 16)) +
                                 " has no CUDA build in this process; call it through "
                                 "eagle.frameworks.jax.function, which builds it for the GPU");
  const runtime::KernelEntry& e = kernel->slots();
  const cuda::Driver* driver = cuda::Driver::get();
  if (!driver)
    return xffi::Error::Internal("raptor: no CUDA driver (libcuda.so.1) in this process");
  if (e.num_slots() > RAPTOR_CUDA_MAX_SLOTS)
    return bad(e, "has more than " + std::to_string(RAPTOR_CUDA_MAX_SLOTS) +
                      " parameters, the CUDA limit");
  runtime::Binding b;
  std::vector<const void*> params;
  if (xffi::Error err = map_buffers(e, args, rets, b, params); !err.success()) return err;

  raptor_cuda_args a{};
  a.n = b.n;
  a.count = b.n;
  a.zero_finished = 1;
  a.mask_in = b.mask_in;
  a.mask_out = b.mask_out;
  const size_t dtype = static_cast<size_t>(e.dtype_size);
  try {
    for (size_t s = 0; s < e.num_slots(); ++s) {
      a.in[s] = b.slots[s].in;
      a.out[s] = b.slots[s].out;
      a.params[s] = params[s];
      a.table_size[s] = b.slots[s].table_size;
      const SlotKind k = e.kinds[s];
      if (k == SlotKind::ParamSum || k == SlotKind::TableSum) {  // added to atomically
        a.sums[s] = b.slots[s].out;
        const int64_t entries = k == SlotKind::TableSum ? b.slots[s].table_size : 1;
        driver->memset_async(reinterpret_cast<cuda::CUdeviceptr>(b.slots[s].out),
                             static_cast<size_t>(entries * e.widths[s]) * dtype, stream);
      }
    }
    const cuda::CUdeviceptr status = driver->alloc_async(6 * sizeof(unsigned long long), stream);
    driver->memset_async(status, 6 * sizeof(unsigned long long), stream);
    a.status = reinterpret_cast<unsigned long long*>(status);
    if (a.count > 0) {
      const int64_t blocks = (a.count + kBlock - 1) / kBlock;
      void* launch_params[] = {&a};
      driver->launch(kernel->function(*driver),
                     static_cast<unsigned>(blocks < kMaxGrid ? blocks : kMaxGrid), kBlock, stream,
                     launch_params);
    }
    unsigned long long host[6] = {0, 0, 0, 0, 0, 0};
    if (kernel->reads_tables()) driver->copy_to_host_sync(host, status, sizeof host, stream);
    driver->free_async(status, stream);
    if (host[1] != 0) {
      runtime::LaunchResult r;
      r.error = static_cast<int64_t>(host[1]);
      r.error_slot = static_cast<int64_t>(host[2]);
      r.error_index = static_cast<int64_t>(host[3]);
      r.error_sample = static_cast<int64_t>(host[4]);
      return xffi::Error::Internal(runtime::describe_error(e, b, r));
    }
  } catch (const std::exception& ex) {
    return xffi::Error::Internal(std::string("raptor: ") + ex.what());
  }
  return xffi::Error::Success();
}

}  // namespace

XLA_FFI_DEFINE_HANDLER_SYMBOL(kernel_cuda_handler, run_kernel_cuda,
                              xffi::Ffi::Bind()
                                  .Ctx<xffi::PlatformStream<cuda::CUstream>>()
                                  .RemainingArgs()
                                  .RemainingRets()
                                  .Attr<std::string_view>("digest"));

XLA_FFI_Error* kernel_cuda(XLA_FFI_CallFrame* frame) { return kernel_cuda_handler(frame); }

}  // namespace raptor::ffi
