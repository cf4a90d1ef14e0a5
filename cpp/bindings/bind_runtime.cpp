// raptor_core._core, runtime half: the thread pool (Runtime), the compile cache (Compiler),
// build() of plans, bound launches, and runs of launch sequences (graphs, stepping loops)
// entirely in C++. eagle (python/eagle) checks arrays and passes raw pointers here.
#include <nanobind/stl/optional.h>
#include <nanobind/stl/pair.h>
#include <nanobind/stl/shared_ptr.h>
#include <nanobind/stl/string.h>
#include <nanobind/stl/tuple.h>
#include <nanobind/stl/vector.h>

#include "bindings/bindings.hpp"
#include "runtime/bound.hpp"
#include "runtime/build.hpp"
#include "runtime/cache.hpp"
#include "runtime/cuda_build.hpp"
#include "runtime/loop.hpp"
#include "runtime/manifest.hpp"
#include "runtime/registry.hpp"
#include "runtime/shared_pool.hpp"
#include "runtime/thread_pool.hpp"

namespace nb = nanobind;

namespace raptor::bindings {

namespace {

using runtime::BoundLaunch;
using runtime::KernelEntry;
using runtime::ThreadPool;

struct EntryHandle {
  std::shared_ptr<const KernelEntry> entry;
};

// Launches below this many samples keep the GIL: releasing it costs more than they take.
constexpr int64_t kReleaseGil = 4096;

template <class T>
T* ptr(uintptr_t p) {
  return reinterpret_cast<T*>(p);
}

std::shared_ptr<BoundLaunch> make_bound(
    const EntryHandle& e, int64_t n, const std::vector<uintptr_t>& ins,
    const std::vector<uintptr_t>& outs, const std::vector<double>& params,
    const std::vector<int64_t>& table_sizes,
    const std::vector<std::tuple<int, uintptr_t, std::string>>& param_sources, uintptr_t mask_in,
    uintptr_t mask_out, uintptr_t finished_count, bool zero_finished) {
  const size_t ns = e.entry->num_slots();
  if (ins.size() != ns || outs.size() != ns || params.size() != ns || table_sizes.size() != ns)
    throw nb::value_error("Bound: one value per kernel slot is needed in each list");
  runtime::Binding b;
  b.n = n;
  b.slots.resize(ns);
  for (size_t s = 0; s < ns; ++s) {
    b.slots[s].in = ptr<const void>(ins[s]);
    b.slots[s].out = ptr<void>(outs[s]);
    b.slots[s].param = params[s];
    b.slots[s].table_size = table_sizes[s];
  }
  b.mask_in = ptr<const uint8_t>(mask_in);
  b.mask_out = ptr<uint8_t>(mask_out);
  b.finished_count = ptr<uint32_t>(finished_count);
  b.zero_finished = zero_finished;
  std::vector<runtime::ParamSource> sources;
  for (const auto& [slot, p, code] : param_sources) {
    if (slot < 0 || static_cast<size_t>(slot) >= ns || !p)
      throw nb::value_error("Bound: a Param source needs a slot of the kernel and an address");
    sources.push_back({slot, ptr<const void>(p), runtime::param_element(code)});
  }
  return std::make_shared<BoundLaunch>(e.entry, std::move(b), std::move(sources));
}

// eagle.until_done's loop: the planner and host executor of runtime/loop.hpp. Callables in
// `items` (foreign nodes) and on_chunk run with the GIL taken back; the loop itself runs
// without it. `items` keeps the callables alive for the call.
std::tuple<int64_t, bool, int64_t> run_loop(const nb::list& items, ThreadPool& pool, uintptr_t mask,
                                            int64_t n, int64_t max_steps,
                                            std::vector<std::shared_ptr<BoundLaunch>> fused,
                                            std::vector<int64_t> fused_launches, int64_t unit,
                                            int64_t fused_min, int64_t chunk, nb::object on_chunk) {
  std::vector<runtime::HostStep> steps;
  for (nb::handle item : items) {
    runtime::HostStep step;
    if (nb::isinstance<BoundLaunch>(item)) {
      step.kernel = nb::cast<std::shared_ptr<BoundLaunch>>(item);
    } else if (PyCallable_Check(item.ptr())) {
      step.host = [item] {
        nb::gil_scoped_acquire gil;
        item();
      };
    } else {
      throw nb::type_error("run_loop: steps are bound kernels or callables");
    }
    steps.push_back(std::move(step));
  }
  runtime::LoopOptions options;
  options.budget = max_steps;
  if (fused.size() != fused_launches.size())
    throw nb::value_error("run_loop: one number of launches per fused kernel");
  options.fused_launches = std::move(fused_launches);
  options.unit_steps = unit;
  options.fused_min = fused_min;
  options.chunk = chunk;
  if (!on_chunk.is_none()) {
    const nb::handle fn = on_chunk;
    options.on_chunk = [fn](int64_t launches, int64_t live) {
      nb::gil_scoped_acquire gil;
      fn(launches, live);
    };
  }
  runtime::HostLoop executor(std::move(steps), ptr<const uint8_t>(mask), n, pool, std::move(fused));
  runtime::LoopResult r;
  {
    nb::gil_scoped_release release;
    r = runtime::run_loop(executor, options);
  }
  return {r.launches, r.done, r.live};
}

}  // namespace

void bind_runtime(nb::module_& m) {
  nb::class_<ThreadPool>(m, "Runtime", "The host thread pool every launch of this process shares.")
      .def(nb::init<int>(), nb::arg("num_threads") = 0)
      .def_prop_ro("num_threads", &ThreadPool::size);
  m.def(
      "shared_runtime", []() -> ThreadPool& { return runtime::shared_pool(); },
      nb::rv_policy::reference,
      "The process's shared host pool ($RAPTOR_NUM_THREADS threads, default all cores).");

  nb::class_<runtime::Compiler>(m, "Compiler",
                                "Compiles generated C++ into a private cache directory.")
      .def(
          "__init__",
          [](runtime::Compiler* self, std::optional<std::string> dir) {
            new (self) runtime::Compiler(runtime::open_cache_dir(dir));
          },
          nb::arg("cache_dir").none() = nb::none())
      .def_prop_ro("cache_dir", [](const runtime::Compiler& c) { return c.cache().path.string(); });

  nb::class_<EntryHandle>(m, "Entry", "A compiled kernel for one dtype.")
      .def_prop_ro("name", [](const EntryHandle& e) { return e.entry->name; })
      .def_prop_ro("digest", [](const EntryHandle& e) { return e.entry->digest; })
      .def_prop_ro("symbol", [](const EntryHandle& e) { return e.entry->symbol; })
      .def_prop_ro("dtype_size", [](const EntryHandle& e) { return e.entry->dtype_size; });

  m.def(
      "build",
      [](const std::vector<const KernelHandle*>& kernels, runtime::Compiler& compiler,
         std::optional<std::string> flags) {
        std::vector<const ir::Kernel*> ks;
        for (const KernelHandle* k : kernels) ks.push_back(k->kernel.get());
        runtime::CompileOptions options;
        options.flags = flags;
        runtime::BuildResult r;
        {
          nb::gil_scoped_release release;
          r = runtime::build_host(ks, compiler, options);
        }
        nb::list entries;
        for (const auto& bk : r.kernels)
          entries.append(nb::make_tuple(EntryHandle{bk.f32}, EntryHandle{bk.f64}));
        nb::dict info;
        info["cache_hit"] = r.compile.cache_hit;
        info["compile_seconds"] = r.compile.compile_seconds;
        info["total_seconds"] = r.compile.total_seconds;
        info["key"] = r.compile.key;
        info["so_path"] = r.compile.so_path.string();
        info["source_path"] = r.compile.source_path.string();
        return nb::make_tuple(entries, info);
      },
      nb::arg("kernels"), nb::arg("compiler"), nb::arg("flags").none() = nb::none(),
      "Emits, compiles (or loads) and registers kernels; returns ([(f32, f64) entries], info).");

  m.def(
      "preload",
      [](runtime::Compiler& compiler) {
        const runtime::PreloadResult r = runtime::preload(compiler);
        return std::make_pair(r.registered, r.skipped);
      },
      nb::arg("compiler"),
      "Registers every intact kernel of the cache; returns (registered, skipped).");

  m.def(
      "build_cuda",
      [](const std::vector<const KernelHandle*>& kernels, runtime::Compiler& compiler) {
        std::vector<const ir::Kernel*> ks;
        for (const KernelHandle* k : kernels) ks.push_back(k->kernel.get());
        nb::gil_scoped_release release;
        return runtime::build_cuda(ks, compiler);
      },
      nb::arg("kernels"), nb::arg("compiler"),
      "Builds kernels for CUDA (NVRTC, PTX cached) and registers them for the XLA CUDA handler.");

  m.def(
      "default_host_flags", []() { return std::string(runtime::kDefaultHostFlags); },
      "The flags of a host compile when $RAPTOR_CXXFLAGS is not set.");

  m.def("find_entry", [](const std::string& digest) -> std::optional<EntryHandle> {
    auto e = runtime::global_registry().find(digest);
    if (!e) return std::nullopt;
    return EntryHandle{e};
  });

  nb::class_<BoundLaunch>(m, "Bound",
                          "A kernel bound to buffers (pointers), launched by reference.")
      .def_static("make", &make_bound, nb::arg("entry"), nb::arg("n"), nb::arg("ins"),
                  nb::arg("outs"), nb::arg("params"), nb::arg("table_sizes"),
                  nb::arg("param_sources"), nb::arg("mask_in"), nb::arg("mask_out"),
                  nb::arg("finished_count"), nb::arg("zero_finished") = false)
      .def(
          "launch",
          [](BoundLaunch& b, ThreadPool& pool) {
            if (b.binding().n < kReleaseGil) return b.run(&pool).finished;
            nb::gil_scoped_release release;
            return b.run(&pool).finished;
          },
          nb::arg("runtime"), "One launch; returns the samples it finished.")
      .def("set_rng", &BoundLaunch::set_rng, nb::arg("k0"), nb::arg("k1"),
           nb::arg("next_launch") = 0,
           "The Random key (jax.random.key_data); launch n draws with fold_in(key, n), n "
           "counted from next_launch.")
      .def_prop_ro("launches", &BoundLaunch::launches)
      .def("reset_active", &BoundLaunch::reset_active)
      .def_prop_ro("live", &BoundLaunch::live)
      .def_rw("serial_threshold", &BoundLaunch::serial_threshold)
      .def_rw("stream_bytes", &BoundLaunch::stream_bytes);

  m.def(
      "run_sequence",
      [](const std::vector<std::shared_ptr<BoundLaunch>>& seq, ThreadPool& pool, int64_t times) {
        nb::gil_scoped_release release;
        runtime::run_sequence(seq, pool, times);
      },
      nb::arg("seq"), nb::arg("runtime"), nb::arg("times"),
      "Launches every bound kernel of seq in order, `times` times, without Python in between.");

  m.def("run_loop", &run_loop, nb::arg("steps"), nb::arg("runtime"), nb::arg("mask"), nb::arg("n"),
        nb::arg("max_steps"), nb::arg("fused") = std::vector<std::shared_ptr<BoundLaunch>>{},
        nb::arg("fused_launches") = std::vector<int64_t>{}, nb::arg("unit") = 1,
        nb::arg("fused_min") = 0, nb::arg("chunk") = 0, nb::arg("on_chunk").none() = nb::none(),
        "The stepping loop (runtime/loop.hpp): launches `steps` (bound kernels, or callables\n"
        "run between launches) in order until every sample of the mask is set or max_steps\n"
        "launches; with fused kernels (the loop's one kernel with fused_launches[i] times its\n"
        "steps, `unit` each, largest first) runs whole passes in one go, each pass with the\n"
        "largest that fits the budget; fused_min > 0: the first fused kernel runs any pass from\n"
        "fused_min launches up to its own, told how many (raptor_args::max_steps). chunk > 0\n"
        "calls on_chunk(launches,\n"
        "live) every `chunk` launches and at the end. Returns (launches, done, live).");

  nb::class_<runtime::HostDeviceLoop>(
      m, "HostDeviceLoop",
      "The device plan of a stepping loop run on the CPU (runtime/loop.hpp): host kernels as the\n"
      "steps, the device's stop-test rule, the launches a GPU makes. Same interface as CudaLoop.")
      .def(
          "__init__",
          [](runtime::HostDeviceLoop* self, std::vector<std::shared_ptr<BoundLaunch>> steps,
             ThreadPool& pool, uintptr_t mask, int64_t n, nb::object overshoot_ok,
             const std::string& variant) {
            if (variant != "while" && variant != "batched")
              throw nb::value_error("HostDeviceLoop: variant is 'while' or 'batched'");
            const bool ok = overshoot_ok.is_none() ? runtime::HostDeviceLoop::overshoot_ok(
                                                         steps, ptr<const uint8_t>(mask))
                                                   : nb::cast<bool>(overshoot_ok);
            new (self)
                runtime::HostDeviceLoop(std::move(steps), ptr<const uint8_t>(mask), n, pool, ok,
                                        variant == "while" ? runtime::LoopStopVariant::While
                                                           : runtime::LoopStopVariant::Batched);
          },
          nb::arg("steps"), nb::arg("runtime"), nb::arg("mask"), nb::arg("n"),
          nb::arg("overshoot_ok").none() = nb::none(), nb::arg("variant") = "batched",
          nb::keep_alive<1, 3>())
      .def(
          "run",
          [](runtime::HostDeviceLoop& l, int64_t budget, uintptr_t) {
            runtime::LoopResult r;
            {
              nb::gil_scoped_release release;
              r = l.run(budget);
            }
            return nb::make_tuple(r.launches, r.done, r.live);
          },
          nb::arg("budget"), nb::arg("stream") = 0,
          "At most `budget` launches; returns (launches, done, live).")
      .def_prop_ro("launches_made", &runtime::HostDeviceLoop::launches_made)
      .def_prop_ro("variant", [](const runtime::HostDeviceLoop& l) {
        return l.variant() == runtime::LoopStopVariant::While ? "while" : "batched";
      });
  m.def("default_stream_bytes", &runtime::default_stream_bytes,
        "From how many bytes of planes (read and written) a host launch writes its pure outputs "
        "with non-temporal stores: $RAPTOR_STREAM_BYTES, else a quarter of the last-level cache "
        "as sysconf reports it (runtime/launch.hpp).");
  m.def(
      "device_loop_variant",
      [](int driver_version, bool has_api) {
        return runtime::device_loop_variant(driver_version, has_api) ==
                       runtime::LoopStopVariant::While
                   ? "while"
                   : "batched";
      },
      nb::arg("driver_version"), nb::arg("has_conditional_api"),
      "The device loop variant a driver can run: 'while' (CUDA >= 12.4) or 'batched'.");

  m.def("count_set",
        [](uintptr_t mask, int64_t n) { return runtime::count_set(ptr<const uint8_t>(mask), n); });
}

}  // namespace raptor::bindings
