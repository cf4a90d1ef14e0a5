// The CUDA XLA FFI handler (see xla_handler.hpp): runs a hawk kernel's CUDA build on XLA's
// stream. Start at `run_kernel_cuda`: it maps XLA's device buffers onto the kernel's slots
// (ffi/buffers.hpp) and launches the kernel loaded into the current context, then its
// `_finish` for the sums (runtime/cuda_build.hpp, cuda_geometry.hpp), with the arguments by
// value (runtime/abi_cuda.h, filled by runtime/cuda_bound.hpp's make_cuda_args).
//
// No host sync and no device allocation per call, so the handler is declared compatible with
// XLA's command buffers (CUDA graphs). What a call needs beyond XLA's buffers lives in one
// block per (context, kernel), allocated at its first call and kept for the process
// (`ContextBlocks`): the kernel's status words, a page-locked host mirror of them, and the
// sums' scratch (grown when a larger launch needs more; a smaller one never reallocates,
// and a replaced buffer is kept, since a command buffer may still point at it).
//
// Table index errors: a kernel that reads Tables records the first bad index in its status
// words; the call then enqueues an async copy of the words into the host mirror. The NEXT
// call of that kernel on that context reads the mirror (no wait: it sees what the copy has
// delivered) and returns the error, naming kernel, table, index and sample; the words are then
// cleared. So an error is reported one call late, and an error of a process's last call is
// not reported. Under command buffers the host part runs only when XLA records the buffer,
// so an error inside a replay is reported at the next recording.
// Built with every XLA FFI build; it needs a CUDA driver at run time (none on a CPU machine).
#include <cstdint>
#include <cstring>
#include <map>
#include <mutex>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "ffi/buffers.hpp"
#include "ffi/xla_handler.hpp"
#include "runtime/cuda_bound.hpp"
#include "runtime/cuda_build.hpp"
#include "runtime/cuda_geometry.hpp"

namespace raptor::ffi {

using ir::SlotKind;
namespace cuda = runtime::cuda;

namespace {

constexpr size_t kStatusBytes = runtime::kCudaStatusWords * sizeof(unsigned long long);

// Per (context, kernel): the memory a call needs beside XLA's buffers (see the file header).
// Process-wide because an XLA handler can reach nothing else (as the kernel registry); its
// memory is never freed: the driver may be gone by the time static objects are destroyed.
class ContextBlocks {
 public:
  struct Block {
    cuda::CUdeviceptr status = 0;
    unsigned long long* mirror = nullptr;  // page-locked; written by async copies
    cuda::CUdeviceptr scratch = 0;
    size_t scratch_bytes = 0;
    std::vector<cuda::CUdeviceptr> retired;  // replaced scratch, still valid for old graphs
  };

  // The block of `kernel` in the current context, with at least `scratch_bytes` of scratch.
  Block& get(const cuda::Driver& d, const runtime::CudaKernel* kernel, size_t scratch_bytes,
             cuda::CUstream stream) {
    const std::lock_guard lock(mu_);
    Block& b = blocks_[{d.current_context(), kernel}];
    if (!b.status) {
      // Made whole or not at all: a block with status words but no mirror would be read
      // through a null mirror by the next call (take_earlier_error).
      const cuda::CUdeviceptr status = d.alloc(kStatusBytes);
      void* mirror = nullptr;
      try {
        mirror = d.alloc_host(kStatusBytes);
        std::memset(mirror, 0, kStatusBytes);
        d.memset_async(status, kStatusBytes, stream);
      } catch (...) {
        d.free_host(mirror);
        d.free(status);
        throw;
      }
      b.mirror = static_cast<unsigned long long*>(mirror);
      b.status = status;
    }
    if (scratch_bytes > b.scratch_bytes) {
      if (b.scratch) b.retired.push_back(b.scratch);
      const size_t bytes =
          scratch_bytes > 2 * b.scratch_bytes ? scratch_bytes : 2 * b.scratch_bytes;
      b.scratch = d.alloc(bytes);
      b.scratch_bytes = bytes;
    }
    return b;
  }

 private:
  std::mutex mu_;
  std::map<std::pair<cuda::CUcontext, const runtime::CudaKernel*>, Block> blocks_;
};

ContextBlocks& context_blocks() {
  static ContextBlocks blocks;
  return blocks;
}

// The error an earlier call recorded, read from the mirror without waiting; clears it.
runtime::LaunchResult take_earlier_error(const cuda::Driver& d, ContextBlocks::Block& blk,
                                         cuda::CUstream stream) {
  unsigned long long words[runtime::kCudaStatusWords];
  std::memcpy(words, blk.mirror, sizeof words);
  const runtime::LaunchResult r = runtime::decode_status(words);
  if (!r.ok()) {
    std::memset(blk.mirror, 0, kStatusBytes);
    d.memset_async(blk.status, kStatusBytes, stream);
  }
  return r;
}

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
  // A scatter target (Mutable[Table]) is added to in place: its operand must be its result's
  // buffer (an alias); this handler copies no device memory (docs/language.md "Scatter-adds").
  for (size_t s = 0; s < e.num_slots(); ++s)
    if (e.iface.slot(s).inout && b.slots[s].in != b.slots[s].out)
      return bad(e, "the scatter target '" + e.iface.slot(s).name +
                        "' needs its operand aliased to its result on the GPU; donate it "
                        "(jax.jit(..., donate_argnums=...)) or use lowering='xla'");
  b.count = b.n;
  b.zero_finished = true;
  try {
    // Grid and scratch from N and the table sizes only (deterministic sums, cuda_geometry.hpp).
    const runtime::CudaGeometry g = runtime::cuda_geometry(e, b.n, runtime::table_sizes(b));
    ContextBlocks::Block& blk =
        context_blocks().get(*driver, kernel.get(), g.scratch_bytes, stream);
    const bool tables = kernel->reads_tables();
    if (tables) {
      const runtime::LaunchResult earlier = take_earlier_error(*driver, blk, stream);
      if (!earlier.ok())
        return xffi::Error::Internal(runtime::describe_error(e, b, earlier) +
                                     " (in an earlier call of this kernel on this GPU)");
    }
    auto a = runtime::make_cuda_args(
        e, b, params, reinterpret_cast<unsigned long long*>(blk.status), g, blk.scratch);
    void* launch_params[] = {&a};
    if (g.grid > 0)
      driver->launch(kernel->function(*driver), g.grid, g.block, stream, launch_params);
    if (g.finish)
      driver->launch(kernel->finish_function(*driver), g.finish_grid, g.finish_block, stream,
                     launch_params);
    if (tables) driver->copy_to_host_async(blk.mirror, blk.status, kStatusBytes, stream);
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
                                  .Attr<std::string_view>("digest"),
                              {xffi::Traits::kCmdBufferCompatible});

XLA_FFI_Error* kernel_cuda(XLA_FFI_CallFrame* frame) { return kernel_cuda_handler(frame); }

}  // namespace raptor::ffi
