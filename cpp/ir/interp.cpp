// The reference interpreter (see interp.hpp for the semantics). Start at `interpret`, which
// checks the binding's sizes and runs `run_sample` for each sample. The meaning of each
// operator is passes::eval_op, shared with constant folding.
#include "ir/interp.hpp"
#include "ir/math_fns.hpp"

#include <cmath>
#include <limits>
#include <map>
#include <stdexcept>
#include <string>

#include "ir/combine.hpp"
#include "passes/eval.hpp"
#include "runtime/abi.h"
#include "runtime/random.h"

namespace raptor::ir {

namespace {

void check_size(const Kernel& k, size_t slot, const char* what, size_t have, size_t want) {
  if (have != want)
    throw std::invalid_argument("raptor interpreter: kernel '" + k.name + "' slot '" +
                                k.slots[slot].name + "': " + what + " has " + std::to_string(have) +
                                " values, expected " + std::to_string(want));
}

// Entries M of table slot `s` (a Table, or the table of a TableSum; a scatter target, an
// in-out TableSum, is its own table: its `in` holds the bound values).
int64_t table_entries(const Kernel& k, const InterpBinding& b, int s) {
  const Slot& slot = k.slots[s];
  const int t = slot.kind == SlotKind::TableSum ? slot.table_of : s;
  return static_cast<int64_t>(b.slots[t].in.size()) / k.slots[t].width;
}

// A chunk's sums as a launch adds them (ir/combine.hpp): per sum slot, the running sample's
// parts and the chunk's lanes (a Param's sum, Combine::Sum: part[s][c], lanes[s][c * 16 + j]),
// or the chunk's partial table (a Table's: table[s][entry * width + c]).
struct ChunkSums {
  std::vector<std::vector<double>> part, lanes, table;
};

class SampleRunner {
 public:
  SampleRunner(const Kernel& k, InterpBinding& b, ChunkSums& sums)
      : k_(k), b_(b), sums_(sums), f_(k.values.size()), i_(k.values.size()) {}

  void run(int64_t n) {
    const int64_t N = b_.n;
    const bool has_mask = k_.has_mask();
    if (has_mask && b_.mask[n]) {
      for (size_t s = 0; s < k_.slots.size(); ++s) {
        const Slot& slot = k_.slots[s];
        if (slot.kind != SlotKind::Mutable) continue;
        for (int c = 0; c < slot.width; ++c) {
          double& out = b_.slots[s].out[c * N + n];
          if (slot.inout)
            out = b_.slots[s].in[c * N + n];
          else if (b_.zero_finished)
            out = 0.0;
        }
      }
      return;
    }
    for (size_t s = 0; s < k_.slots.size(); ++s)
      if (is_lane_sum(k_.slots[s])) sums_.part[s].assign(sums_.part[s].size(), -0.0);
    // state[s][c]; only Mutable slots are used.
    std::vector<std::vector<double>> state(k_.slots.size());
    for (size_t s = 0; s < k_.slots.size(); ++s) {
      const Slot& slot = k_.slots[s];
      if (slot.kind != SlotKind::Mutable) continue;
      state[s].resize(slot.width, 0.0);
      if (slot.inout)
        for (int c = 0; c < slot.width; ++c) state[s][c] = b_.slots[s].in[c * N + n];
    }
    for (int step = 0; step < k_.steps; ++step) {
      run_values(n, step, state);
      if (!b_.trace_values.empty()) {
        const size_t t = b_.trace_values.size();
        double* row = b_.trace_out.data() + (static_cast<size_t>(n) * k_.steps + step) * t;
        for (size_t j = 0; j < t; ++j) row[j] = f_[b_.trace_values[j]];
      }
      std::vector<std::vector<double>> next = state;
      for (const Store& st : k_.stores) {
        const Slot& slot = k_.slots[st.slot];
        const double x =
            value_type(slot.dtype) == Type::I ? stored_int(slot, i_[st.value]) : f_[st.value];
        const bool on = st.pred == -1 || f_[st.pred] != 0.0;
        if (slot.kind == SlotKind::Mutable) {
          next[st.slot][st.comp] = x;
        } else if (slot.kind == SlotKind::ParamSum && slot.combine != Combine::Sum) {
          if (on) fold(b_.slots[st.slot], st.comp, slot.combine, x);  // hawk.min / hawk.max
        } else if (slot.kind == SlotKind::ParamSum) {
          if (on) add(sums_.part[st.slot], b_.slots[st.slot], st.comp, x);
        } else if (slot.kind == SlotKind::TableSum && on) {
          const int64_t idx = i_[st.index];
          const int64_t m = table_entries(k_, b_, st.slot);
          if (idx < 0 || idx >= m)
            error(st.slot, idx, n);
          else
            add(sums_.table[st.slot], b_.slots[st.slot], idx * slot.width + st.comp, x);
        }
      }
      state = std::move(next);
      if (k_.terminate != -1 && f_[k_.terminate] != 0.0) {
        b_.mask[n] = 1;
        ++b_.finished;
        break;
      }
    }
    for (size_t s = 0; s < k_.slots.size(); ++s) {
      const Slot& slot = k_.slots[s];
      if (slot.kind != SlotKind::Mutable) continue;
      for (int c = 0; c < slot.width; ++c) b_.slots[s].out[c * N + n] = state[s][c];
    }
    // The sample's parts of a Param's sums into its lane (ir/combine.hpp).
    for (size_t s = 0; s < k_.slots.size(); ++s)
      if (is_lane_sum(k_.slots[s]))
        for (int c = 0; c < k_.slots[s].width; ++c)
          sums_.lanes[s][static_cast<size_t>(c) * kSumLanes + static_cast<size_t>(n % kSumLanes)] +=
              sums_.part[s][static_cast<size_t>(c)];
  }

 private:
  // x added into `acc` (a sample's parts, a chunk's partial table) at `at`, and its magnitude
  // into the slot's sum_abs.
  static void add(std::vector<double>& acc, InterpSlot& d, int64_t at, double x) {
    acc[static_cast<size_t>(at)] += x;
    if (d.sum_abs.size() != d.out.size()) d.sum_abs.assign(d.out.size(), 0.0);
    d.sum_abs[at] += std::fabs(x);
  }

  // A min / max slot's accumulator with x folded in (ir/combine.hpp): exact, so its rounding
  // scale (sum_abs) stays 0.
  static void fold(InterpSlot& d, int64_t at, Combine c, double x) {
    d.out[at] = combine_step(c, d.out[at], x);
    if (d.sum_abs.size() != d.out.size()) d.sum_abs.assign(d.out.size(), 0.0);
  }

  // `x` moved by b_.perturb_ulps units in the last place of the dtype when `op` is a library
  // function without a correct-rounding guarantee; a product (value `at`) by 1 to 16 units,
  // up or down by `at`, when b_.perturb_products.
  double nudged(Op op, double x, int at) const {
    if (op == Op::Mul && b_.perturb_products) {
      // 1 to 16 ulps, up or down, from a hash of the place and of perturb_ulps' sign, so two
      // products rarely move alike (and a run with the other sign moves them otherwise)
      const uint32_t h =
          (static_cast<uint32_t>(at) ^ (b_.perturb_ulps < 0 ? 0x9E3779B9u : 0u)) * 2654435761u;
      const double to = (h >> 20 & 1u) != 0u ? std::numeric_limits<double>::infinity()
                                             : -std::numeric_limits<double>::infinity();
      for (uint32_t j = 0; j <= (h >> 24 & 15u); ++j)
        x = b_.float32
                ? static_cast<double>(std::nextafter(static_cast<float>(x), static_cast<float>(to)))
                : std::nextafter(x, to);
      return x;
    }
    switch (op) {
      case Op::Exp:
      case Op::Log:
      case Op::Sin:
      case Op::Cos:
      case Op::Tan:
      case Op::Tanh:
      case Op::Pow:
      case Op::Atan2:
        break;
      default:
        if (const MathFn* f = math_fn(op);
            f && (f->kind == MathKind::Libm || f->kind == MathKind::Own))
          break;
        return x;
    }
    const int k = b_.perturb_ulps;
    const double to =
        k > 0 ? std::numeric_limits<double>::infinity() : -std::numeric_limits<double>::infinity();
    for (int j = 0; j < (k > 0 ? k : -k); ++j)
      x = b_.float32
              ? static_cast<double>(std::nextafter(static_cast<float>(x), static_cast<float>(to)))
              : std::nextafter(x, to);
    return x;
  }

  // An I value stored into an integer plane: int64 as it is, int32 wrapped to its low 32 bits
  // (as the generated code's conversion and NumPy's astype do).
  static double stored_int(const Slot& slot, int64_t x) {
    return slot.dtype == Dtype::Int32 ? static_cast<double>(static_cast<int32_t>(x))
                                      : static_cast<double>(x);
  }

  // A loaded value of slot `s` into f_/i_ by the value's type.
  void load(int i, double x) {
    const Value& v = k_.values[i];
    if (v.type == Type::I)
      i_[i] = static_cast<int64_t>(x);
    else if (v.type == Type::B)
      f_[i] = x != 0.0 ? 1.0 : 0.0;
    else
      f_[i] = held(x);
  }

  // The integer operators (passes::eval_int); a zero divisor or a failed int() is an error
  // when the value's predicate holds, and gives 0.
  void eval_int_value(int i, int64_t n) {
    const Value& v = k_.values[i];
    const bool on = v.pred == -1 || f_[v.pred] != 0.0;
    if (v.op == Op::ToFloat) {
      const int64_t x = i_[v.args[0]];
      f_[i] = b_.float32 ? static_cast<double>(static_cast<float>(x)) : static_cast<double>(x);
      return;
    }
    if (v.op == Op::ToInt) {
      const auto x = passes::to_int(f_[v.args[0]]);
      if (!x && on) error(RAPTOR_ERR_INT_CONVERSION, v.loc.line, 0, n);
      i_[i] = x.value_or(0);
      return;
    }
    int64_t a[3] = {0, 0, 0};
    for (int j = 0; j < op_arity(v.op); ++j) a[j] = i_[v.args[j]];
    const auto x = passes::eval_int(v.op, a);
    if (!x && on) error(RAPTOR_ERR_INT_DIV_ZERO, v.loc.line, 0, n);
    if (v.type == Type::B)
      f_[i] = x.value_or(0) != 0 ? 1.0 : 0.0;
    else
      i_[i] = x.value_or(0);
  }

  // A loaded or constant value as the build's dtype holds it.
  double held(double x) const {
    return b_.float32 ? static_cast<double>(static_cast<float>(x)) : x;
  }

  void error(int slot, int64_t index, int64_t sample) {
    error(RAPTOR_ERR_TABLE_INDEX, slot, index, sample);
  }
  void error(int64_t code, int64_t slot, int64_t index, int64_t sample) {
    if (b_.error[0] != RAPTOR_OK) return;
    b_.error[0] = code;
    b_.error[1] = slot;
    b_.error[2] = index;
    b_.error[3] = sample;
  }

  // Every value of one step in order; a loop (LoopBegin .. LoopEnd) runs its values again
  // until K iterations are done or its exit condition holds at the end of one.
  void run_values(int64_t n, int step, const std::vector<std::vector<double>>& state) {
    struct Open {
      int begin;
      int64_t iter;
    };
    std::vector<Open> open;
    const int nv = static_cast<int>(k_.values.size());
    for (int i = 0; i < nv;) {
      const Value& v = k_.values[i];
      switch (v.op) {
        case Op::LoopBegin:
          open.push_back({i, 0});
          break;
        case Op::LoopCarry:  // its entry value on the first iteration; then set by LoopEnd
          if (open.back().iter == 0) copy(i, v.args[0]);
          break;
        case Op::LoopIndex:
          i_[i] = open.back().iter;
          break;
        case Op::LoopNext:
          copy(i, v.args[1]);
          break;
        case Op::LoopEnd: {
          for (const int next : nexts_of(i)) copy(k_.values[next].args[0], next);
          Open& o = open.back();
          ++o.iter;
          if (o.iter < k_.values[o.begin].iimm && f_[v.args[1]] == 0.0) {
            i = o.begin + 1;
            continue;
          }
          open.pop_back();
          break;
        }
        case Op::LoopResult:
          copy(i, v.args[0]);
          break;
        default:
          eval_value(i, n, step, state);
      }
      ++i;
    }
  }

  void copy(int to, int from) {
    f_[to] = f_[from];
    i_[to] = i_[from];
  }

  // The LoopNext values of the loop that LoopEnd `end` closes (not those of inner loops).
  const std::vector<int>& nexts_of(int end) {
    auto [it, fresh] = nexts_.try_emplace(end);
    if (fresh) {
      const int begin = k_.values[end].args[0];
      for (int j = begin + 1; j < end; ++j)
        if (k_.values[j].op == Op::LoopNext && k_.values[k_.values[j].args[0]].args[1] == begin)
          it->second.push_back(j);
    }
    return it->second;
  }

  void eval_value(int i, int64_t n, int step, const std::vector<std::vector<double>>& state) {
    const Value& v = k_.values[i];
    const int64_t N = b_.n;
    switch (v.op) {
      case Op::Const:
        f_[i] = held(v.imm);
        i_[i] = v.iimm;
        return;
      case Op::LoadParam:
        load(i, b_.slots[v.slot].in[v.comp]);
        return;
      case Op::LoadPlane:
        load(i, b_.slots[v.slot].in[v.comp * N + n]);
        return;
      case Op::LoadState:
        load(i, state[v.slot][v.comp]);
        return;
      case Op::LoadMask:
        f_[i] = 0.0;
        return;  // only live samples are evaluated
      case Op::LoadTable: {
        const int64_t m = table_entries(k_, b_, v.slot);
        int64_t idx = i_[v.args[0]];
        if (idx < 0 || idx >= m) {
          if (v.pred == -1 || f_[v.pred] != 0.0) {
            error(v.slot, idx, n);
            f_[i] = 0.0;
            return;
          }
          if (m == 0) {
            f_[i] = 0.0;
            return;
          }
          idx = idx < 0 ? 0 : m - 1;
        }
        f_[i] = held(b_.slots[v.slot].in[idx * k_.slots[v.slot].width + v.comp]);
        return;
      }
      case Op::Select: {
        const bool c = f_[v.args[0]] != 0.0;
        f_[i] = f_[c ? v.args[1] : v.args[2]];
        i_[i] = i_[c ? v.args[1] : v.args[2]];
        return;
      }
      case Op::RandUniform:
      case Op::RandNormal:
      case Op::RandUniformAt:
      case Op::RandNormalAt: {
        const bool at = v.op == Op::RandUniformAt || v.op == Op::RandNormalAt;
        const int64_t j = v.comp + (at ? i_[v.args[0]] : 0);
        const rp_key key =
            rp_subkey(rp_key{b_.rng_key[0], b_.rng_key[1]}, static_cast<uint32_t>(step + v.iimm),
                      static_cast<uint32_t>(b_.sample_base + n), static_cast<uint32_t>(j));
        if (v.op == Op::RandUniform || v.op == Op::RandUniformAt)
          f_[i] = b_.float32 ? rp_uniform_f32(key) : rp_uniform_f64(key);
        else
          f_[i] = b_.float32 ? rp_normal_f32(key) : rp_normal_f64(key);
        return;
      }
      case Op::RandGamma:
      case Op::RandPoisson:
      case Op::RandInt:
      case Op::RandTruncNormal:
      case Op::RandNormalVec: {
        const int64_t j = v.comp + i_[v.args[0]];
        const rp_key key =
            rp_subkey(rp_key{b_.rng_key[0], b_.rng_key[1]}, static_cast<uint32_t>(step + v.iimm),
                      static_cast<uint32_t>(b_.sample_base + n), static_cast<uint32_t>(j));
        const bool f32 = b_.float32;
        switch (v.op) {
          case Op::RandGamma:
            f_[i] = f32 ? rp_gamma<float>(key, static_cast<float>(f_[v.args[1]]))
                        : rp_gamma<double>(key, f_[v.args[1]]);
            break;
          case Op::RandPoisson:
            i_[i] = rp_poisson(key, static_cast<float>(f_[v.args[1]]));
            break;
          case Op::RandInt:
            i_[i] = rp_randint_i32(key, i_[v.args[1]], i_[v.args[2]]);
            break;
          case Op::RandTruncNormal:
            f_[i] = f32 ? rp_truncated_normal<float>(key, static_cast<float>(f_[v.args[1]]),
                                                     static_cast<float>(f_[v.args[2]]))
                        : rp_truncated_normal<double>(key, f_[v.args[1]], f_[v.args[2]]);
            break;
          default:  // RandNormalVec
            f_[i] = f32 ? rp_normal_ctr_f32(key, static_cast<uint32_t>(v.imm))
                        : rp_normal_ctr_f64(key, static_cast<uint32_t>(v.imm));
            break;
        }
        return;
      }
      case Op::RandGammaGrad:
        f_[i] = b_.float32 ? rp_gamma_grad<float>(static_cast<float>(f_[v.args[0]]),
                                                  static_cast<float>(f_[v.args[1]]))
                           : rp_gamma_grad<double>(f_[v.args[0]], f_[v.args[1]]);
        return;
      case Op::SampleIndex:
        i_[i] = b_.sample_base + n;
        return;
      case Op::NSamples:
        i_[i] = b_.n_total >= 0 ? b_.n_total : N;
        return;
      case Op::ToIndex:
        i_[i] = b_.float32 ? passes::to_index_f32(static_cast<float>(f_[v.args[0]]))
                           : passes::to_index(f_[v.args[0]]);
        return;
      default: {
        const bool on_ints = v.op == Op::FloorDiv || v.op == Op::Mod || v.op == Op::ToFloat ||
                             v.op == Op::ToInt ||
                             (op_arity(v.op) > 0 && k_.values[v.args[0]].type == Type::I);
        if (on_ints) {
          eval_int_value(i, n);
          return;
        }
        if (b_.float32) {
          float a[3] = {0, 0, 0};
          for (int j = 0; j < op_arity(v.op); ++j) a[j] = static_cast<float>(f_[v.args[j]]);
          f_[i] = passes::eval_op_f32(v.op, a, v.iimm);
        } else {
          double a[3] = {0, 0, 0};
          for (int j = 0; j < op_arity(v.op); ++j) a[j] = f_[v.args[j]];
          f_[i] = passes::eval_op(v.op, a, v.iimm);  // one definition of each operator
        }
        if (b_.perturb_ulps != 0) f_[i] = nudged(v.op, f_[i], i);
        return;
      }
    }
  }

  const Kernel& k_;
  InterpBinding& b_;
  ChunkSums& sums_;
  std::vector<double> f_;                  // F and B values (bools as 0/1)
  std::vector<int64_t> i_;                 // I values
  std::map<int, std::vector<int>> nexts_;  // LoopEnd -> its loop's LoopNext values
};

}  // namespace

InterpBinding make_binding(const Kernel& k, int64_t n, int64_t table_entries) {
  InterpBinding b;
  b.n = n;
  b.slots.resize(k.slots.size());
  for (size_t s = 0; s < k.slots.size(); ++s) {
    const Slot& slot = k.slots[s];
    const size_t w = static_cast<size_t>(slot.width);
    switch (slot.kind) {
      case SlotKind::Param:
        b.slots[s].in.assign(w, 0.0);
        break;
      case SlotKind::Plane:
        b.slots[s].in.assign(w * n, 0.0);
        break;
      case SlotKind::Mutable:
        if (slot.inout) b.slots[s].in.assign(w * n, 0.0);
        b.slots[s].out.assign(w * n, 0.0);
        break;
      case SlotKind::Terminated:
        b.mask.assign(n, 0);
        break;
      case SlotKind::Table:
        b.slots[s].in.assign(w * table_entries, 0.0);
        break;
      case SlotKind::ParamSum:  // the identity of its combine: 0, or +inf / -inf (min / max)
        b.slots[s].out.assign(w, combine_identity(slot.combine));
        break;
      case SlotKind::TableSum:
        if (slot.inout) b.slots[s].in.assign(w * table_entries, 0.0);  // a scatter target
        b.slots[s].out.assign(w * table_entries, 0.0);
        break;
      case SlotKind::Random:
        break;
    }
  }
  return b;
}

void interpret(const Kernel& k, InterpBinding& b) {
  if (b.slots.size() != k.slots.size())
    throw std::invalid_argument("raptor interpreter: kernel '" + k.name + "' has " +
                                std::to_string(k.slots.size()) + " slots, the binding " +
                                std::to_string(b.slots.size()));
  const size_t N = static_cast<size_t>(b.n);
  for (size_t s = 0; s < k.slots.size(); ++s) {
    const Slot& slot = k.slots[s];
    const size_t w = static_cast<size_t>(slot.width);
    const InterpSlot& d = b.slots[s];
    switch (slot.kind) {
      case SlotKind::Param:
        check_size(k, s, "in", d.in.size(), w);
        break;
      case SlotKind::Plane:
        check_size(k, s, "in", d.in.size(), w * N);
        break;
      case SlotKind::Mutable:
        if (slot.inout) check_size(k, s, "in", d.in.size(), w * N);
        check_size(k, s, "out", d.out.size(), w * N);
        break;
      case SlotKind::Terminated:
        check_size(k, s, "mask", b.mask.size(), N);
        break;
      case SlotKind::Table:
        if (d.in.size() % w != 0) check_size(k, s, "in", d.in.size(), (d.in.size() / w + 1) * w);
        break;
      case SlotKind::ParamSum:
        check_size(k, s, "out", d.out.size(), w);
        break;
      case SlotKind::TableSum:
        if (slot.inout && d.in.size() % w != 0)  // a scatter target reads its bound values
          check_size(k, s, "in", d.in.size(), (d.in.size() / w + 1) * w);
        check_size(k, s, "out", d.out.size(),
                   static_cast<size_t>(table_entries(k, b, static_cast<int>(s))) * w);
        break;
      case SlotKind::Random:
        break;
    }
  }
  if (!b.trace_values.empty()) {
    for (const int32_t v : b.trace_values)
      if (v < 0 || v >= static_cast<int32_t>(k.values.size()) || k.values[v].type == Type::I)
        throw std::invalid_argument("raptor interpreter: kernel '" + k.name +
                                    "' cannot trace value %" + std::to_string(v));
    b.trace_out.assign(N * static_cast<size_t>(k.steps) * b.trace_values.size(),
                       std::numeric_limits<double>::quiet_NaN());
  }
  // The sums in a launch's order (ir/combine.hpp): the launch's chunks, a Param's sum in
  // lanes and a Table's in sample order within each, the chunks' partials in chunk order.
  const size_t ns = k.slots.size();
  ChunkSums sums;
  sums.part.resize(ns);
  sums.lanes.resize(ns);
  sums.table.resize(ns);
  std::vector<std::vector<double>> total(ns);
  int64_t sum_entries = 0;
  for (size_t s = 0; s < ns; ++s) {
    const Slot& slot = k.slots[s];
    if (slot.kind != SlotKind::ParamSum && slot.kind != SlotKind::TableSum) continue;
    sum_entries += static_cast<int64_t>(b.slots[s].out.size());
    if (is_lane_sum(slot)) {
      sums.part[s].assign(static_cast<size_t>(slot.width), -0.0);
      total[s].assign(static_cast<size_t>(slot.width), 0.0);
    } else if (slot.kind == SlotKind::TableSum) {
      total[s].assign(b.slots[s].out.size(), 0.0);
    }
  }
  const int64_t chunk = sum_entries > 0 ? sum_chunk_length(b.n, sum_entries) : b.n;
  SampleRunner runner(k, b, sums);
  for (int64_t c0 = 0; c0 < b.n; c0 += chunk) {
    for (size_t s = 0; s < ns; ++s) {
      if (is_lane_sum(k.slots[s]))
        sums.lanes[s].assign(static_cast<size_t>(k.slots[s].width) * kSumLanes, -0.0);
      else if (k.slots[s].kind == SlotKind::TableSum)
        sums.table[s].assign(b.slots[s].out.size(), 0.0);
    }
    for (int64_t n = c0; n < std::min(b.n, c0 + chunk); ++n) runner.run(n);
    for (size_t s = 0; s < ns; ++s) {
      if (is_lane_sum(k.slots[s]))
        for (size_t c = 0; c < total[s].size(); ++c)
          total[s][c] += 0.0 + lanes_total(sums.lanes[s].data() + c * kSumLanes);
      else if (k.slots[s].kind == SlotKind::TableSum)
        for (size_t j = 0; j < total[s].size(); ++j) total[s][j] += sums.table[s][j];
    }
  }
  // Onto the outputs: a scatter target keeps its bound values after a kernel error, as a
  // launch leaves the caller's array.
  for (size_t s = 0; s < ns; ++s) {
    const Slot& slot = k.slots[s];
    if (total[s].empty() || (slot.kind == SlotKind::TableSum && slot.inout && b.error[0] != 0))
      continue;
    for (size_t j = 0; j < total[s].size(); ++j) b.slots[s].out[j] += total[s][j];
  }
}

}  // namespace raptor::ir
