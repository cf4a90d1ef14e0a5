// raptor_core._core, CUDA half: the device probe, pointer ordinals, CUDA plan builds, bound
// CUDA launches on streams, captured graph segments, and the few stream operations eagle's
// GPU graphs need around foreign (JAX) nodes: an async device copy and events. Streams and
// device pointers cross as integers (CuPy's `stream.ptr`, `__cuda_array_interface__` data).
// Everything but the probe, cuda_pointer_device and the builds needs a CUDA driver; without
// one they raise RuntimeError saying so. Start at bind_cuda.
#include <nanobind/stl/shared_ptr.h>
#include <nanobind/stl/string.h>
#include <nanobind/stl/tuple.h>
#include <nanobind/stl/vector.h>

#include <stdexcept>

#include "bindings/bindings.hpp"
#include "runtime/build.hpp"
#include "runtime/cuda_bound.hpp"
#include "runtime/cuda_build.hpp"
#include "runtime/cuda_device.hpp"
#include "runtime/cuda_driver.hpp"
#include "runtime/cuda_graph.hpp"
#include "runtime/cuda_loop.hpp"
#include "runtime/nvrtc.hpp"

namespace nb = nanobind;

namespace raptor::bindings {

namespace {

namespace cuda = runtime::cuda;

struct CudaEntryHandle {
  std::shared_ptr<const runtime::CudaKernel> kernel;
};

const cuda::Driver& driver() {
  const cuda::Driver* d = cuda::Driver::get();
  if (!d)
    throw std::runtime_error(
        "raptor: no CUDA driver (libcuda.so.1) in this process; eagle.cuda.probe() says why");
  return *d;
}

cuda::CUstream stream_of(uintptr_t s) { return reinterpret_cast<cuda::CUstream>(s); }

nb::dict probe_dict(const cuda::Probe& p) {
  nb::dict d;
  d["usable"] = p.usable;
  d["reason"] = p.reason;
  d["driver_version"] = p.driver_version;
  nb::list devices;
  for (const cuda::DeviceInfo& dev : p.devices) {
    nb::dict x;
    x["ordinal"] = dev.ordinal;
    x["name"] = dev.name;
    x["compute_capability"] = nb::make_tuple(dev.major, dev.minor);
    x["arch"] = cuda::cuda_arch(dev.major, dev.minor);
    devices.append(x);
  }
  d["devices"] = devices;
  return d;
}

std::shared_ptr<runtime::CudaBound> make_cuda_bound(
    const CudaEntryHandle& e, int64_t n, const std::vector<uintptr_t>& ins,
    const std::vector<uintptr_t>& outs, const std::vector<double>& params,
    const std::vector<uintptr_t>& param_ptrs, const std::vector<int64_t>& table_sizes,
    uintptr_t mask_in, uintptr_t mask_out, uintptr_t finished_count, bool zero_finished,
    int device) {
  const size_t ns = e.kernel->slots().num_slots();
  if (ins.size() != ns || outs.size() != ns || params.size() != ns || param_ptrs.size() != ns ||
      table_sizes.size() != ns)
    throw nb::value_error("CudaBound: one value per kernel slot is needed in each list");
  runtime::Binding b;
  b.n = n;
  b.slots.resize(ns);
  std::vector<const void*> pp(ns, nullptr);
  for (size_t s = 0; s < ns; ++s) {
    b.slots[s].in = reinterpret_cast<const void*>(ins[s]);
    b.slots[s].out = reinterpret_cast<void*>(outs[s]);
    b.slots[s].param = params[s];
    b.slots[s].table_size = table_sizes[s];
    pp[s] = reinterpret_cast<const void*>(param_ptrs[s]);
  }
  b.mask_in = reinterpret_cast<const uint8_t*>(mask_in);
  b.mask_out = reinterpret_cast<uint8_t*>(mask_out);
  b.finished_count = reinterpret_cast<uint32_t*>(finished_count);
  b.zero_finished = zero_finished;
  return std::make_shared<runtime::CudaBound>(e.kernel, std::move(b), std::move(pp), device);
}

// A CUDA event (timing disabled) owned by Python.
class Event {
 public:
  Event() : e_(driver().event_create()) {}
  ~Event() { driver().event_destroy(e_); }
  Event(const Event&) = delete;
  Event& operator=(const Event&) = delete;
  void record(uintptr_t stream) const { driver().event_record(e_, stream_of(stream)); }
  bool done() const { return driver().event_done(e_); }
  void wait(uintptr_t stream) const { driver().stream_wait(stream_of(stream), e_); }

 private:
  cuda::CUevent e_;
};

}  // namespace

void bind_cuda(nb::module_& m) {
  m.def(
      "cuda_probe", []() { return probe_dict(cuda::cuda_probe()); },
      "Whether a CUDA device is usable and, if not, why: {usable, reason, driver_version,\n"
      "devices: [{ordinal, name, compute_capability, arch}]}. Never raises.");
  m.def(
      "cuda_pointer_device",
      [](uintptr_t p) {
        const cuda::Driver* d = cuda::Driver::get();
        return d ? d->pointer_device(static_cast<cuda::CUdeviceptr>(p)) : -1;
      },
      nb::arg("ptr"),
      "The device ordinal of a device pointer; -1 without a driver or when unknown.");
  m.def("nvrtc_candidates", &cuda::nvrtc_candidates, nb::arg("site_packages"),
        "Files an NVRTC library may be (toolkit, nvidia wheels), in the order to try.");
  m.def("nvrtc_version", []() -> std::string {
    const auto n = runtime::Nvrtc::open();
    return n ? n->version() : std::string();
  });

  nb::class_<CudaEntryHandle>(m, "CudaEntry", "A kernel built for CUDA, for one dtype.")
      .def_prop_ro("name", [](const CudaEntryHandle& e) { return e.kernel->slots().name; })
      .def_prop_ro("digest", [](const CudaEntryHandle& e) { return e.kernel->slots().digest; })
      .def_prop_ro("symbol", [](const CudaEntryHandle& e) { return e.kernel->symbol(); })
      .def_prop_ro("dtype_size",
                   [](const CudaEntryHandle& e) { return e.kernel->slots().dtype_size; });

  m.def(
      "build_cuda_plan",
      [](const std::vector<const KernelHandle*>& kernels, runtime::Compiler& compiler,
         const std::string& arch) {
        std::vector<const ir::Kernel*> ks;
        for (const KernelHandle* k : kernels) ks.push_back(k->kernel.get());
        runtime::CudaBinary bin;
        std::string fallback;
        {
          nb::gil_scoped_release release;
          try {
            bin = runtime::compile_cuda(ks, compiler, arch);
          } catch (const std::exception& e) {
            if (arch == runtime::kCudaArch) throw;
            // An NVRTC older than the device does not know its arch: PTX for the oldest
            // supported virtual arch, which the driver JIT-compiles for the device.
            fallback = e.what();
            bin = runtime::compile_cuda(ks, compiler, runtime::kCudaArch);
          }
        }
        nb::list entries;
        for (size_t i = 0; i + 1 < bin.kernels.size(); i += 2) {
          nb::list pair;
          for (size_t j = i; j < i + 2; ++j) {
            runtime::CudaBinary::Kernel& k = bin.kernels[j];
            const std::string digest = k.entry.digest, symbol = k.entry.symbol;
            auto kernel = std::make_shared<const runtime::CudaKernel>(std::move(k.entry), bin.bytes,
                                                                      symbol, std::move(k.finish));
            runtime::cuda_registry().add(digest, kernel);  // the JAX handler finds it too
            pair.append(CudaEntryHandle{kernel});
          }
          entries.append(nb::make_tuple(pair[0], pair[1]));
        }
        nb::dict info;
        const auto nvrtc = runtime::Nvrtc::open();
        info["arch"] = bin.arch;
        info["format"] = bin.format == runtime::CudaFormat::Cubin ? "cubin" : "ptx";
        info["nvrtc_version"] = nvrtc ? nvrtc->version() : std::string();
        info["cache_dir"] = compiler.cache().path.string();
        info["key"] = bin.key;
        info["cache_hit"] = bin.cache_hit;
        info["fallback"] = fallback;  // why the requested arch was not built ("" when it was)
        return nb::make_tuple(entries, info);
      },
      nb::arg("kernels"), nb::arg("compiler"), nb::arg("arch") = std::string(runtime::kCudaArch),
      "Builds kernels for CUDA (both dtypes) for `arch` (sm_XY: cubin; PTX for compute_75 when\n"
      "NVRTC does not know it), cached, registered; returns ([(f32, f64)], info).");

  nb::class_<runtime::CudaBound>(m, "CudaBound",
                                 "A CUDA kernel bound to device buffers, launched on a stream.")
      .def_static("make", &make_cuda_bound, nb::arg("entry"), nb::arg("n"), nb::arg("ins"),
                  nb::arg("outs"), nb::arg("params"), nb::arg("param_ptrs"), nb::arg("table_sizes"),
                  nb::arg("mask_in"), nb::arg("mask_out"), nb::arg("finished_count"),
                  nb::arg("zero_finished"), nb::arg("device"))
      .def(
          "launch",
          [](const runtime::CudaBound& b, uintptr_t stream) { b.launch(stream_of(stream)); },
          nb::arg("stream"), "Enqueues one launch on the stream; never waits.")
      .def(
          "synchronize",
          [](const runtime::CudaBound& b, uintptr_t stream) {
            nb::gil_scoped_release release;
            b.synchronize(stream_of(stream));
          },
          nb::arg("stream"), "Waits for the stream; raises the first pending kernel error.")
      .def(
          "set_rng",
          [](runtime::CudaBound& b, uint32_t k0, uint32_t k1, uint64_t next_launch,
             uintptr_t stream) {
            nb::gil_scoped_release release;
            b.set_rng(k0, k1, next_launch, stream_of(stream));
          },
          nb::arg("k0"), nb::arg("k1"), nb::arg("next_launch") = 0, nb::arg("stream") = 0,
          "The Random key (launch n draws with fold_in(key, n)), after the stream's launches.")
      .def(
          "launches",
          [](const runtime::CudaBound& b, uintptr_t stream) {
            nb::gil_scoped_release release;
            return b.launches(stream_of(stream));
          },
          nb::arg("stream") = 0, "The next launch's number n, read from the device.")
      .def_prop_ro("device", &runtime::CudaBound::device);

  nb::class_<runtime::CudaSegment>(m, "CudaSegment",
                                   "Consecutive CUDA launches captured once into a CUDA graph.")
      .def(nb::init<std::vector<std::shared_ptr<const runtime::CudaBound>>>(), nb::arg("nodes"))
      .def(
          "launch",
          [](runtime::CudaSegment& s, uintptr_t stream, int64_t times) {
            s.launch(stream_of(stream), times);
          },
          nb::arg("stream"), nb::arg("times") = 1)
      .def(
          "synchronize",
          [](const runtime::CudaSegment& s, uintptr_t stream) {
            nb::gil_scoped_release release;
            s.synchronize(stream_of(stream));
          },
          nb::arg("stream"))
      .def_prop_ro("captured", &runtime::CudaSegment::captured);

  nb::class_<runtime::CudaLoop>(
      m, "CudaLoop",
      "A stepping loop on the GPU: a WHILE graph (CUDA >= 12.4) or "
      "captured batches, with a device stop test (runtime/cuda_loop.hpp).")
      .def(
          "__init__",
          [](runtime::CudaLoop* self, std::vector<std::shared_ptr<const runtime::CudaBound>> steps,
             uintptr_t mask, int64_t n, nb::object overshoot_ok, const std::string& variant) {
            const bool ok = overshoot_ok.is_none() ? runtime::cuda_overshoot_ok(steps, mask)
                                                   : nb::cast<bool>(overshoot_ok);
            new (self) runtime::CudaLoop(std::move(steps), mask, n, ok, variant);
          },
          nb::arg("steps"), nb::arg("mask"), nb::arg("n"),
          nb::arg("overshoot_ok").none() = nb::none(), nb::arg("variant") = "auto",
          "overshoot_ok None: computed from the steps (cuda_overshoot_ok); variant 'auto',\n"
          "'while' or 'batched'.")
      .def(
          "run",
          [](runtime::CudaLoop& l, int64_t budget, uintptr_t stream) {
            runtime::LoopResult r;
            {
              nb::gil_scoped_release release;
              r = l.run(budget, stream_of(stream));
            }
            return nb::make_tuple(r.launches, r.done, r.live);
          },
          nb::arg("budget"), nb::arg("stream"),
          "At most `budget` launches; returns (launches, done, live) as the host loop does.")
      .def_prop_ro("variant", [](const runtime::CudaLoop& l) {
        return l.variant() == runtime::LoopStopVariant::While ? "while" : "batched";
      });

  nb::class_<Event>(m, "CudaEvent", "A CUDA event: record on a stream, query, wait on a stream.")
      .def(nb::init<>())
      .def("record", &Event::record, nb::arg("stream"))
      .def("done", &Event::done)
      .def("wait", &Event::wait, nb::arg("stream"));

  m.def(
      "cuda_copy_async",
      [](uintptr_t dst, uintptr_t src, size_t bytes, uintptr_t stream) {
        driver().copy_async(dst, src, bytes, stream_of(stream));
      },
      nb::arg("dst"), nb::arg("src"), nb::arg("bytes"), nb::arg("stream"),
      "Device-to-device copy enqueued on the stream (cuMemcpyDtoDAsync).");
}

}  // namespace raptor::bindings
