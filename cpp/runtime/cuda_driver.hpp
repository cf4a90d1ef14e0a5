// The CUDA driver API, loaded with dlopen (libcuda.so.1 comes with NVIDIA's driver, not the
// toolkit): contexts, loading PTX/cubin into the current context, launching kernels on a
// stream, device memory, events and stream capture into CUDA graphs. A machine without a
// driver has no Driver (Driver::get() is null); nothing links against CUDA. Why a device is
// not usable is runtime/cuda_device.hpp's job (cuda_probe); this file assumes one is.
#pragma once

#include <cstddef>
#include <memory>
#include <string>
#include <vector>

namespace raptor::runtime::cuda {

// The driver API's handle types, declared here so no CUDA header is needed to build.
struct Context;
struct Module;
struct Function;
struct Stream;
struct Event;
struct Graph;
struct GraphExec;
using CUcontext = Context*;
using CUmodule = Module*;
using CUfunction = Function*;
using CUstream = Stream*;
using CUevent = Event*;
using CUgraph = Graph*;
using CUgraphExec = GraphExec*;
using CUdeviceptr = unsigned long long;

class Driver {
 public:
  // The process's driver (loaded on first use), or null when libcuda.so.1 cannot be loaded.
  static const Driver* get();
  // The driver entry points raptor calls that the library at `path` (a libcuda.so, the CUDA
  // toolkit's stub included) does not export; {"dlopen: <why>"} when it cannot be opened.
  // Initializes nothing. The test of the entry points' names on machines without a GPU.
  static std::vector<std::string> missing_symbols(const std::string& path);

  CUcontext current_context() const;  // null when none is current
  // Makes device `ordinal`'s primary context (the one the CUDA runtime, CuPy and JAX use)
  // current on this thread, unless the current context already is on that device; returns
  // the context now current.
  CUcontext use_device(int ordinal) const;
  void set_current(CUcontext c) const;
  // The device a pointer's memory is on, or -1 when the driver does not know the pointer.
  int pointer_device(CUdeviceptr p) const;
  CUmodule load_ptx(const std::string& ptx) const;  // into the current context (PTX or cubin)
  CUfunction function(CUmodule m, const std::string& name) const;
  void launch(CUfunction f, unsigned grid, unsigned block, CUstream stream, void** params) const;
  void memset_async(CUdeviceptr p, size_t bytes, CUstream stream) const;
  CUdeviceptr alloc_async(size_t bytes, CUstream stream) const;
  void free_async(CUdeviceptr p, CUstream stream) const;
  void copy_to_host_sync(void* dst, CUdeviceptr src, size_t bytes, CUstream stream) const;
  void copy_async(CUdeviceptr dst, CUdeviceptr src, size_t bytes, CUstream stream) const;
  void copy_to_device_sync(CUdeviceptr dst, const void* src, size_t bytes) const;
  void copy_to_host_async(void* dst, CUdeviceptr src, size_t bytes, CUstream stream) const;
  // Page-locked host memory (cuMemAllocHost): async copies into it do not wait for the host.
  void* alloc_host(size_t bytes) const;
  CUdeviceptr alloc(size_t bytes) const;  // in the current context, synchronously
  void free(CUdeviceptr p) const noexcept;
  void free_host(void* p) const noexcept;  // memory from alloc_host
  void synchronize(CUstream stream) const;

  // Events (timing disabled): record on a stream, query without waiting, wait on a stream.
  CUevent event_create() const;
  void event_destroy(CUevent e) const noexcept;
  void event_record(CUevent e, CUstream stream) const;
  bool event_done(CUevent e) const;  // cuEventQuery: true when complete, false when not yet
  void stream_wait(CUstream stream, CUevent e) const;

  // A non-blocking stream of the current context (capture needs one: the legacy default
  // stream cannot be captured).
  CUstream stream_create() const;
  void stream_destroy(CUstream s) const noexcept;

  // Stream capture (thread-local mode) into a graph, instantiated once and launched often.
  void begin_capture(CUstream stream) const;
  CUgraph end_capture(CUstream stream) const;
  CUgraphExec instantiate(CUgraph g) const;
  void graph_launch(CUgraphExec g, CUstream stream) const;
  void graph_destroy(CUgraph g) const noexcept;
  void graph_exec_destroy(CUgraphExec g) const noexcept;

  struct Api;

 private:
  explicit Driver(std::unique_ptr<Api> api);
  std::unique_ptr<Api> api_;
  void check(int result, const char* what) const;  // throws std::runtime_error
};

}  // namespace raptor::runtime::cuda
