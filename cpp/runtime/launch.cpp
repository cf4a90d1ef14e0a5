// The host launcher. See launch.hpp.
#include "runtime/launch.hpp"

#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cstdlib>
#include <stdexcept>
#include <string>

#include "ir/combine.hpp"
#include "runtime/small_vector.hpp"

namespace raptor::runtime {
namespace {

using ir::SlotKind;

constexpr int64_t kAlign = 64;                 // chunk boundaries, in samples
constexpr int64_t kParallelCombine = 1 << 16;  // sum elements above which combining is split
// A masked kernel of several steps: up to kMaskedChunks chunks per thread, each of at least
// kMaskedChunkMin samples (see launch()).
constexpr int64_t kMaskedChunks = 4;
constexpr int64_t kMaskedChunkMin = 4096;

// Trivial on purpose: the launcher's inline array of these is left uninitialized beyond the
// chunks used (default member initializers would zero all of it on every launch).
struct ChunkOut {
  uint32_t finished;
  uint32_t steps_run;
  int64_t error[4];
};

}  // namespace

int64_t default_stream_bytes() {
  static const int64_t bytes = [] {
    if (const char* env = std::getenv("RAPTOR_STREAM_BYTES"); env != nullptr && *env != 0) {
      char* end = nullptr;
      const long long v = std::strtoll(env, &end, 10);
      if (end != env && *end == 0 && v >= 0) return static_cast<int64_t>(v);
      throw std::invalid_argument(std::string("raptor: RAPTOR_STREAM_BYTES='") + env +
                                  "' is not a byte count (an integer >= 0)");
    }
    long llc = -1;
#if defined(_SC_LEVEL3_CACHE_SIZE)
    llc = sysconf(_SC_LEVEL3_CACHE_SIZE);
    if (llc <= 0) llc = sysconf(_SC_LEVEL2_CACHE_SIZE);
#endif
    return llc > 0 ? static_cast<int64_t>(llc) / 4 : int64_t{8} << 20;
  }();
  return bytes;
}

void KernelEntry::set_interface(KernelInterface i) {
  iface = std::move(i);
  name = iface.name();
  digest = iface.digest();
  dtype_size = iface.dtype_size();
}

LaunchResult launch(const KernelEntry& e, const Binding& b, ThreadPool* pool,
                    int64_t serial_threshold) {
  const size_t ns = e.num_slots();
  const auto bad = [&](const std::string& what) {
    return std::invalid_argument("raptor: launching kernel '" + e.name + "': " + what);
  };
  if (e.fn == nullptr) throw bad("it has no compiled function");
  if (b.slots.size() != ns) {
    throw bad("the binding has " + std::to_string(b.slots.size()) + " slots, the kernel " +
              std::to_string(ns));
  }
  if (e.dtype_size != 4 && e.dtype_size != 8) throw bad("dtype_size must be 4 or 8");
  if (b.n < 0) throw bad("n must be >= 0");
  const int64_t count = b.count < 0 ? b.n : b.count;
  if (b.index == nullptr && count > b.n) throw bad("count exceeds n without an index");
  const bool has_mask = e.has_mask();
  if (has_mask && count > 0 && (b.mask_in == nullptr || b.mask_out == nullptr))
    throw bad("it has a Terminated mask, but the binding gives no mask to read and write");

  // Per-slot argument arrays shared by every chunk.
  // (On the stack for kernels of up to 24 slots: a small launch allocates nothing.)
  // (Every element of the first four is written by the loop below.)
  SmallVector<const void*, 24> in(ns, Uninitialized{});
  SmallVector<void*, 24> out(ns, Uninitialized{});
  SmallVector<double, 24> params(ns, Uninitialized{});
  SmallVector<int64_t, 24> table_size(ns, Uninitialized{});
  SmallVector<int64_t, 24> sum_offset(ns, -1);  // offset of the slot's partial in a chunk's buffer
  int64_t sum_total = 0;
  for (size_t s = 0; s < ns; ++s) {
    const SlotBinding& sb = b.slots[s];
    in[s] = sb.in;
    out[s] = sb.out;
    params[s] = sb.param;
    table_size[s] = sb.table_size;
    const SlotInterface& si = e.iface.slot(s);
    if (!si.is_sum()) continue;
    if (sb.out == nullptr)
      throw bad("sum output '" + e.slot_name(static_cast<int>(s)) + "' has no output buffer");
    int64_t entries = 1;
    if (si.role == SlotRole::TableSum) {
      const int t = si.table_of;
      if (table_size[s] <= 0 && t >= 0 && static_cast<size_t>(t) < ns) {
        table_size[s] = b.slots[t].table_size;
      }
      entries = table_size[s];
      if (entries < 0) throw bad("negative table size");
    }
    sum_offset[s] = sum_total;
    sum_total += entries * si.width;
  }

  // Non-temporal stores when the planes read and written outgrow the cache (launch.hpp).
  int64_t plane_bytes = 0;
  for (size_t s = 0; s < ns; ++s) {
    const SlotInterface& si = e.iface.slot(s);
    if (si.role != SlotRole::Plane && si.role != SlotRole::Mutable && si.role != SlotRole::InOut)
      continue;
    const int64_t copies = si.role == SlotRole::InOut && b.slots[s].in != b.slots[s].out ? 2 : 1;
    plane_bytes += copies * si.width * elem_size(si.dtype);
  }
  const int64_t stream_from = b.stream_bytes >= 0 ? b.stream_bytes : default_stream_bytes();
  const int32_t stream = count > 0 && plane_bytes * count >= stream_from ? 1 : 0;

  // Chunking: boundaries on multiples of 64 positions.
  int64_t n_chunks = count > 0 ? 1 : 0;
  int64_t chunk_len = count;
  // Back to back, a launch splits from a quarter of the threshold (launch.hpp); not one with
  // sums over samples, whose chunks fix the order of its additions: the same launch gives
  // the same bits however soon after the last it comes.
  const bool looping = pool != nullptr && pool->back_to_back() && sum_total == 0;
  // However this launch leaves (a kernel error is a result; a throw below is a bad binding),
  // the next one measures its gap from here.
  struct EndMark {
    ThreadPool* pool;
    ~EndMark() {
      if (pool != nullptr) pool->end_launch();
    }
  } const end_mark{pool};
  // The threshold is in sample-steps: a launch of many steps (a stepping loop's fused kernel)
  // is worth the threads at as many times fewer samples (1e3 oscillators for 1000 steps ran
  // on one thread before: 1.9x slower than on two). Back to back (the pool awake), a kernel
  // whose sample-step weighs more than the threshold's reference kernel's is too, once the
  // weighed work reaches the whole threshold (runtime/work_weight.hpp; about 4 us of one
  // core's work, where a split here costs 1.5-2.5 us): a driven pendulum's sin and cos, 7.5 ns
  // a sample in float64 against y = a * x + b's 0.13 ns, split from 556 samples instead of
  // 8192 (1024 samples: 8.2 us -> 4.6 us, 4096: 31 us -> 16 us, on the 2-core AMD EPYC VM). A
  // one-off launch is not weighed: waking a sleeping pool (25-40 us) costs more than such a
  // launch's work.
  const int64_t launch_steps =
      b.max_steps > 0 && b.max_steps < e.steps ? b.max_steps : std::max<int64_t>(e.steps, 1);
  const int64_t work = count > 0 ? count * launch_steps : 0;
  const int64_t weight = std::max<int64_t>(e.weight, 1);
  // work * weight >= serial_threshold, with no overflow (callers pass INT64_MAX to stay serial)
  const int64_t weighed = serial_threshold / weight + (serial_threshold % weight != 0 ? 1 : 0);
  const bool parallel =
      pool != nullptr && pool->size() > 1 &&
      (work >= serial_threshold || (looping && (work >= serial_threshold / 4 || work >= weighed)));
  if (sum_total > 0 && count > 0) {
    // Sums over samples: the chunks, whose partials are added in chunk order, depend on the
    // launch alone (its positions and the size of its sums), never on the thread count or
    // on whether it runs split: the same bits on 1 thread or 64 (docs/runtime.md "Sums over
    // samples"; ir/combine.hpp's sum_chunk_length, which the interpreter cuts too). Serial
    // launches run the same chunks in order.
    chunk_len = ir::sum_chunk_length(count, sum_total);
    n_chunks = (count + chunk_len - 1) / chunk_len;
  } else if (parallel) {
    // One contiguous chunk per thread: each thread streams one long run, as a static OpenMP
    // (or Numba) loop does; 2 chunks per thread made the drag step at 2^20 1.6x slower (1242
    // us against 769 us, benchmarks/peers.py). A masked kernel of several steps finishes its
    // chunks unevenly (samples stop at different steps): 4 per thread balances them (1 per
    // thread made until_done of 1e5 oscillators 1.4x slower), but not below 4096 samples a
    // chunk: a chunk's lanes idle at its end while its last samples run (up to the launch's
    // steps), which in chunks of 128 samples (N = 1e3) was most of the time. Performance
    // card, AVX-512 Xeon, 2 threads, spread 1000: N = 1e3 float32 0.119 -> 0.076 ms, N = 1e4
    // float64 1.15 -> 1.09 ms (4 chunks per thread against 1); N = 1e5 unchanged.
    const int64_t threads = pool->size();
    const int64_t per_thread =
        has_mask && e.steps > 1
            ? std::clamp<int64_t>(count / (threads * kMaskedChunkMin), 1, kMaskedChunks)
            : 1;
    const int64_t want = threads * per_thread;
    chunk_len = (count + want - 1) / want;
    chunk_len = std::max<int64_t>(kAlign, (chunk_len + kAlign - 1) / kAlign * kAlign);
    n_chunks = (count + chunk_len - 1) / chunk_len;
  }

  std::unique_ptr<double[]> partials;
  std::vector<double*> sum_ptrs;
  if (sum_total > 0 && n_chunks > 0) {
    partials = std::make_unique_for_overwrite<double[]>(static_cast<size_t>(n_chunks * sum_total));
    sum_ptrs.assign(static_cast<size_t>(n_chunks) * ns, nullptr);
    for (int64_t c = 0; c < n_chunks; ++c) {
      for (size_t s = 0; s < ns; ++s) {
        if (sum_offset[s] >= 0)
          sum_ptrs[c * ns + s] = partials.get() + c * sum_total + sum_offset[s];
      }
    }
  }

  // A chunk's partials start at their combine's identity: 0 for sums, +inf / -inf for the
  // hawk.min / hawk.max outputs (ParamSum slots of one element each per component).
  bool folds = false;
  for (size_t s = 0; s < ns; ++s)
    folds = folds || (sum_offset[s] >= 0 && e.iface.slot(s).combine != ir::Combine::Sum);
  const auto clear = [&](double* p) {
    std::fill_n(p, sum_total, 0.0);
    if (!folds) return;
    for (size_t s = 0; s < ns; ++s) {
      const SlotInterface& si = e.iface.slot(s);
      if (sum_offset[s] >= 0 && si.combine != ir::Combine::Sum)
        std::fill_n(p + sum_offset[s], si.width, ir::combine_identity(si.combine));
    }
  };

  SmallVector<ChunkOut, 16> outs(static_cast<size_t>(n_chunks), ChunkOut{});
  const auto run_chunk = [&](int64_t c, int /*worker*/) {
    if (sum_total > 0) clear(partials.get() + c * sum_total);
    raptor_args a{};
    a.n = b.n;
    a.begin = c * chunk_len;
    a.end = std::min(count, a.begin + chunk_len);
    a.index = b.index;
    a.in = in.data();
    a.out = out.data();
    a.params = params.data();
    a.table_size = table_size.data();
    a.mask_in = b.mask_in;
    a.mask_out = b.mask_out;
    a.finished = 0;
    a.zero_finished = b.zero_finished ? 1 : 0;
    a.sums = sum_total > 0 ? sum_ptrs.data() + c * ns : nullptr;
    a.stream = stream;
    a.max_steps = b.max_steps;
    a.sample_base = b.sample_base;
    a.n_total = b.n_total;
    e.fn(&a);
    outs[c].finished = a.finished;
    outs[c].steps_run = a.steps_run;
    std::copy_n(a.error, 4, outs[c].error);
  };
  if (n_chunks == 1 || !parallel) {
    for (int64_t c = 0; c < n_chunks; ++c) run_chunk(c, 0);  // (sums: the same chunks)
  } else {
    pool->parallel_for(n_chunks, run_chunk);
  }

  LaunchResult r;
  r.chunks = static_cast<int>(n_chunks);
  for (const ChunkOut& o : outs) {
    r.finished += o.finished;
    r.steps_run = std::max(r.steps_run, o.steps_run);
    if (o.error[0] != RAPTOR_OK && (r.error == RAPTOR_OK || o.error[3] < r.error_sample)) {
      r.error = o.error[0];
      r.error_slot = o.error[1];
      r.error_index = o.error[2];
      r.error_sample = o.error[3];
    }
  }

  // Combine partials in chunk order and write them as the kernel's dtype.
  if (sum_total > 0) {
    const auto combine = [&](int64_t lo, int64_t hi) {
      for (size_t s = 0; s < ns; ++s) {
        if (sum_offset[s] < 0) continue;
        const SlotInterface& si = e.iface.slot(s);
        const int64_t size = (si.role == SlotRole::TableSum ? table_size[s] : 1) * si.width;
        // A scatter target (Mutable[Table]) takes its bound values plus the sums, and after a
        // kernel error (an index out of range) keeps them: the caller's array is unchanged.
        if (si.inout && r.error != RAPTOR_OK) continue;
        const bool add = b.accumulate_sums || si.inout;
        const int64_t first = std::max<int64_t>(lo, sum_offset[s]);
        const int64_t last = std::min<int64_t>(hi, sum_offset[s] + size);
        if (si.combine != ir::Combine::Sum) {  // hawk.min / hawk.max: folded in chunk order
          for (int64_t g = first; g < last; ++g) {
            double acc = ir::combine_identity(si.combine);
            for (int64_t c = 0; c < n_chunks; ++c)
              acc = ir::combine_step(si.combine, acc, partials[c * sum_total + g]);
            const int64_t i = g - sum_offset[s];
            if (e.dtype_size == 8) {
              double* dst = static_cast<double*>(b.slots[s].out) + i;
              *dst = add ? ir::combine_step(si.combine, *dst, acc) : acc;
            } else {
              float* dst = static_cast<float*>(b.slots[s].out) + i;
              *dst = static_cast<float>(
                  add ? ir::combine_step(si.combine, static_cast<double>(*dst), acc) : acc);
            }
          }
          continue;
        }
        for (int64_t g = first; g < last; ++g) {
          double acc = 0.0;
          for (int64_t c = 0; c < n_chunks; ++c) acc += partials[c * sum_total + g];
          const int64_t i = g - sum_offset[s];
          if (e.dtype_size == 8) {
            double* dst = static_cast<double*>(b.slots[s].out) + i;
            *dst = add ? *dst + acc : acc;
          } else {
            float* dst = static_cast<float*>(b.slots[s].out) + i;
            *dst = static_cast<float>(add ? static_cast<double>(*dst) + acc : acc);
          }
        }
      }
    };
    if (n_chunks == 0) {
      // Nothing ran: the sums are zero (a min / max its identity, +inf / -inf).
      partials = std::make_unique<double[]>(static_cast<size_t>(sum_total));
      clear(partials.get());
      n_chunks = 1;
      combine(0, sum_total);
    } else if (parallel && sum_total >= kParallelCombine) {
      const int64_t parts = pool->size();
      const int64_t step = (sum_total + parts - 1) / parts;
      pool->parallel_for(
          parts, [&](int64_t p, int) { combine(p * step, std::min(sum_total, (p + 1) * step)); });
    } else {
      combine(0, sum_total);
    }
  }

  if (b.finished_count != nullptr && r.finished > 0 && has_mask) {
    std::atomic_ref<uint32_t>(*b.finished_count)
        .fetch_add(static_cast<uint32_t>(r.finished), std::memory_order_relaxed);
  }
  return r;
}

std::string describe_error(const KernelEntry& e, const Binding& b, const LaunchResult& r) {
  const std::string head = "kernel '" + e.name + "': ";
  if (r.ok()) return head + "no error";
  if (r.error == RAPTOR_ERR_TABLE_INDEX) {
    const int slot = static_cast<int>(r.error_slot);
    std::string m = head + "table '" + e.slot_name(slot) + "' index " +
                    std::to_string(r.error_index) + " is out of range";
    if (slot >= 0 && static_cast<size_t>(slot) < b.slots.size()) {
      m += " [0, " + std::to_string(b.slots[slot].table_size) + ")";
    }
    m += " at sample " + std::to_string(r.error_sample);
    // rp_index / the interpreter: a float index is floor(x), and one that is no usable
    // integer (NaN, an infinity, beyond +-9e18) reads as -1; say so where -1 is reported.
    if (r.error_index == -1)
      m += " (an index is floor() of the value given; NaN, infinities and values beyond +-9e18 "
           "read as -1)";
    return m;
  }
  if (r.error == RAPTOR_ERR_INT_DIV_ZERO)  // error_slot holds the user's line (abi.h)
    return head + "integer division or modulo by zero at line " + std::to_string(r.error_slot) +
           ", sample " + std::to_string(r.error_sample) +
           " (Python raises ZeroDivisionError here); guard the divisor, e.g. `a // b if b != 0 "
           "else 0`";
  if (r.error == RAPTOR_ERR_INT_CONVERSION)
    return head + "int() of NaN, an infinity or a float beyond int64 at line " +
           std::to_string(r.error_slot) + ", sample " + std::to_string(r.error_sample) +
           " (Python raises here); check the value first, e.g. `int(x) if abs(x) < 1e18 else 0`";
  return head + "error code " + std::to_string(r.error) + " at sample " +
         std::to_string(r.error_sample);
}

int64_t compact_active(const uint8_t* mask, int64_t* index, int64_t count) {
  int64_t kept = 0;
  for (int64_t i = 0; i < count; ++i) {
    const int64_t s = index[i];
    if (mask[s] == 0) index[kept++] = s;
  }
  return kept;
}

int64_t init_active(const uint8_t* mask, int64_t* index, int64_t n) {
  int64_t kept = 0;
  for (int64_t s = 0; s < n; ++s) {
    if (mask == nullptr || mask[s] == 0) index[kept++] = s;
  }
  return kept;
}

}  // namespace raptor::runtime
