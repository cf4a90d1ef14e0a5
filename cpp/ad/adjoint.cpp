// Reverse mode (see adjoint.hpp). `adjoint` unrolls the kernel, lays out the slots
// (`lay_out`), then `AdjointPass` copies the primal values once (the forward sweep), marks
// the values that depend on a `wrt` input (`active`), seeds the cotangents of the stored
// values and walks the values backwards (the reverse sweep), adding each value's
// contributions to its operands' cotangents. Only active values that reach an output get a
// cotangent. A contribution whose partial is not a constant is wrapped as
// select(pred, ct * partial, 0) when the value has a predicate, so a branch not taken adds
// exactly 0 even where its partial is inf or NaN.
#include "ad/adjoint.hpp"

#include <map>
#include <set>
#include <stdexcept>
#include <utility>

#include "ad/common.hpp"
#include "ad/rules.hpp"
#include "ad/unroll.hpp"
#include "ad/winner.hpp"
#include "passes/optimize.hpp"

namespace raptor::ad {

using ir::Op;
using ir::SlotKind;
using ir::Type;
using ir::Value;

namespace {

struct AdjointSlots {
  std::vector<int> primal;  // k's slot -> the new kernel's slot holding its input, or -1
  std::vector<int> bar;     // k's slot -> its cotangent slot ("m_bar", "s_bar", "w_bar"), or -1
  std::vector<int> win;     // a hawk.min / hawk.max output -> its winner Param ("s_win")
};

AdjointSlots lay_out(const ir::Kernel& k, const std::vector<int>& wrt, ir::Kernel& a) {
  const int ns = static_cast<int>(k.slots.size());
  AdjointSlots m{std::vector<int>(ns, -1), std::vector<int>(ns, -1), std::vector<int>(ns, -1)};
  std::set<std::string> taken;
  std::vector<char> in_wrt(ns, 0);
  for (const int s : wrt) in_wrt[s] = 1;
  // a) inputs: kept names first, so a derived name never takes a kept one.
  for (int s = 0; s < ns; ++s) {
    const ir::Slot& slot = k.slots[s];
    const bool derived = slot.kind == SlotKind::ParamSum || slot.kind == SlotKind::TableSum;
    if (slot.kind == SlotKind::Mutable && !slot.inout) continue;
    if (!derived) taken.insert(slot.name);
    ir::Slot copy = slot;
    if (slot.kind == SlotKind::Mutable) {
      copy.kind = SlotKind::Plane;
      copy.inout = false;
    } else if (derived) {
      copy.kind = slot.kind == SlotKind::ParamSum ? SlotKind::Param : SlotKind::Table;
      copy.combine = ir::Combine::Sum;
      copy.table_of = -1;
      copy.inout = false;  // a scatter target's cotangent is read like any Table's
    }
    (derived ? m.bar : m.primal)[s] = static_cast<int>(a.slots.size());
    a.slots.push_back(std::move(copy));
  }
  for (int s = 0; s < ns; ++s)
    if (m.bar[s] != -1) a.slots[m.bar[s]].name = unique_name(k.slots[s].name, "_bar", taken);
  for (int s = 0; s < ns; ++s) {  // b) cotangents of the Mutable outputs
    const ir::Slot& slot = k.slots[s];
    if (slot.kind != SlotKind::Mutable) continue;
    if (slot.dtype != ir::Dtype::Float) continue;  // integer and bool outputs have none
    ir::Slot copy = slot;
    copy.name = unique_name(slot.name, "_bar", taken);
    if (!(slot.inout && in_wrt[s])) {
      copy.kind = SlotKind::Plane;
      copy.inout = false;
    }
    m.bar[s] = static_cast<int>(a.slots.size());
    a.slots.push_back(std::move(copy));
  }
  for (const int s : wrt) {  // c) cotangents of the other inputs
    const ir::Slot& slot = k.slots[s];
    if (slot.kind == SlotKind::Mutable) continue;
    ir::Slot copy = slot;
    copy.name = unique_name(slot.name, "_bar", taken);
    copy.inout = false;
    if (slot.kind == SlotKind::Plane) copy.kind = SlotKind::Mutable;
    if (slot.kind == SlotKind::Param) copy.kind = SlotKind::ParamSum;
    if (slot.kind == SlotKind::Table) {
      copy.kind = SlotKind::TableSum;
      copy.table_of = m.primal[s];
    }
    m.bar[s] = static_cast<int>(a.slots.size());
    a.slots.push_back(std::move(copy));
  }
  for (int s = 0; s < ns; ++s) {  // d) the winners of the min / max outputs (winner.hpp)
    const ir::Slot& out = k.slots[s];
    if (out.kind != SlotKind::ParamSum || out.combine == ir::Combine::Sum) continue;
    m.win[s] = static_cast<int>(a.slots.size());
    a.slots.push_back(winner_param(k, out));
  }
  for (int s = 0; s < ns; ++s) {  // roles, for callers that map slots back (the JAX bridge)
    if (m.primal[s] >= 0) a.slots[m.primal[s]].role = 'p';
    if (m.bar[s] >= 0) a.slots[m.bar[s]].role = 'c';
    for (const int d : {m.primal[s], m.bar[s]})
      if (d >= 0) a.slots[d].primal = k.slots[s].name;
  }
  return m;
}

bool is_load(Op op) { return op == Op::LoadParam || op == Op::LoadPlane || op == Op::LoadTable; }

class AdjointPass {
 public:
  AdjointPass(const ir::Kernel& u, const std::vector<int>& wrt, const AdjointSlots& slots,
              ir::Kernel& a)
      : u_(u),
        slots_(slots),
        a_(a),
        b_(a),
        in_wrt_(u.slots.size(), 0),
        prim_(u.values.size(), -1),
        count_(u.values.size(), -1),
        contrib_(u.values.size()),
        leaf_(u.slots.size()) {
    for (const int s : wrt) in_wrt_[s] = 1;
    active_ = active_values(u, [&](int slot) { return in_wrt_[slot] != 0; });
  }

  void run() {
    refuse_what_loops_cannot_take();
    copy_range(0, static_cast<int>(u_.values.size()), -1);  // the forward sweep
    seed();
    reverse_range(0, static_cast<int>(u_.values.size()), 0);
    store_leaves();
  }

 private:
  int prim(int i) const { return i < 0 ? i : prim_[i]; }

  // A loop region's body reads of a Table the adjoint differentiates would scatter one
  // cotangent per iteration at that iteration's index.
  void refuse_what_loops_cannot_take() const {
    int depth = 0;
    for (const Value& v : u_.values) {
      if (v.op == Op::LoopBegin) ++depth;
      if (v.op == Op::LoopEnd) --depth;
      if (depth > 0 && v.op == Op::LoadTable && in_wrt_[v.slot])
        throw std::invalid_argument(
            "raptor: kernel '" + u_.name + "': table '" + u_.slots[v.slot].name +
            "' is read at line " + std::to_string(v.loc.line) +
            " inside a loop of more than 4096 iterations, and adjoint kernels (jax.grad) with "
            "respect to a table read inside such a loop are not available yet; differentiate "
            "with respect to the other inputs, use forward mode (tangent kernels, jax.jvp, "
            "jacfwd), or a loop of 4096 iterations or fewer");
    }
  }

  // Copies u's values [lo, hi) into the adjoint kernel, prim_ mapping each to its copy. Every
  // loop region copied gets an iteration counter (count_[its LoopBegin]: the iterations the
  // copy takes). skip >= 0: [lo, hi) is the body of the loop region whose LoopBegin is `skip`,
  // whose LoopCarry and LoopIndex values the caller mapped; its LoopNext values are not copied
  // (the caller reads prim_ of their next values, `next_value`).
  void copy_range(int lo, int hi, int skip) {
    std::vector<int> counters;  // the counter carries of the loops open in this range
    for (int i = lo; i < hi; ++i) {
      const Value& v = u_.values[i];
      if (skip >= 0 && ((v.op == Op::LoopCarry && v.args[1] == skip) ||
                        (v.op == Op::LoopIndex && v.args[0] == skip)))
        continue;
      if (skip >= 0 && v.op == Op::LoopNext && u_.values[v.args[0]].args[1] == skip) continue;
      b_.set_origin(v.loc);
      int zero = -1;
      if (v.op == Op::LoopBegin) zero = b_.integer(0);
      if (v.op == Op::LoopEnd) {
        const int c = counters.back();
        b_.loop_value(Op::LoopNext, c, b_.iop(Op::Add, {c, b_.integer(1)}));
      }
      Value c = v;
      for (int a = 0; a < ir::op_arity(v.op); ++a) c.args[a] = prim_[v.args[a]];
      if (c.pred != -1) c.pred = prim_[c.pred];
      if (c.slot != -1) c.slot = slots_.primal[c.slot];
      prim_[i] = b_.copy(std::move(c));
      if (v.op == Op::LoopBegin) counters.push_back(b_.loop_value(Op::LoopCarry, zero, prim_[i]));
      if (v.op == Op::LoopEnd) {
        count_[v.args[0]] = b_.loop_value(Op::LoopResult, counters.back(), prim_[i]);
        counters.pop_back();
      }
    }
  }

  // The cotangents of the stored values, read from the cotangent slots.
  void seed() {
    for (const ir::Store& st : u_.stores) {
      if (!active_[st.value] || slots_.bar[st.slot] == -1) continue;
      const ir::Slot& slot = u_.slots[st.slot];
      const int bar = slots_.bar[st.slot];
      b_.set_origin(st.loc);
      int ct = -1;
      if (slot.kind == SlotKind::Mutable) {
        ct = b_.load(Op::LoadPlane, bar, st.comp);
      } else if (slot.kind == SlotKind::ParamSum && slots_.win[st.slot] != -1) {
        // hawk.min / hawk.max: the whole cotangent to the winning sample (winner.hpp).
        const int mine = is_winner(b_, slots_.win[st.slot]);
        const int p = prim(st.pred);
        ct = b_.guard(p == -1 ? mine : b_.op(Op::And, {p, mine}),
                      b_.load(Op::LoadParam, bar, st.comp));
      } else if (slot.kind == SlotKind::ParamSum) {
        ct = b_.guard(prim(st.pred), b_.load(Op::LoadParam, bar, st.comp));
      } else {
        ct = b_.guard(prim(st.pred),
                      b_.load(Op::LoadTable, bar, st.comp, prim(st.pred), prim(st.index)));
      }
      contrib_[st.value].push_back(ct);
    }
  }

  // The reverse sweep over u's values [lo, hi), last first. depth > 0: the body of a loop
  // region, whose loads and own loop values the region handles (reverse_region).
  void reverse_range(int lo, int hi, int depth) {
    for (int i = hi - 1; i >= lo; --i) {
      const Value& v = u_.values[i];
      if (v.op == Op::LoopEnd) {
        reverse_region(v.args[0], i);
        if (depth == 0) loads_after_region(v.args[0], i);
        i = v.args[0];  // on before its LoopBegin
        continue;
      }
      if (ir::is_loop_op(v.op)) continue;  // this body's carries and index, results of loops
      if (depth > 0 && is_load(v.op)) continue;
      reverse(i);
    }
  }

  void reverse(int i) {
    if (contrib_[i].empty()) return;
    const Value& v = u_.values[i];
    const int p = a_.values[prim_[i]].pred;
    b_.set_origin(v.loc);
    const int ct = b_.sum(contrib_[i], p);
    if (!v.name.empty() && a_.values[ct].name.empty()) b_.named(ct, v.name + "_bar");
    switch (v.op) {
      case Op::LoadParam:
        a_.stores.push_back({slots_.bar[v.slot], v.comp, ct, -1, p, v.loc});
        return;
      case Op::LoadTable:
        a_.stores.push_back({slots_.bar[v.slot], v.comp, ct, prim_[v.args[0]], p, v.loc});
        return;
      case Op::LoadPlane:
        leaf_[v.slot].resize(u_.slots[v.slot].width);
        leaf_[v.slot][v.comp].push_back(b_.guard(p, ct));
        return;
      case Op::Select: {
        const int c = prim_[v.args[0]];
        const int zero = b_.constant(0.0);
        b_.set_origin(v.loc);
        if (active_[v.args[1]]) contrib_[v.args[1]].push_back(b_.op(Op::Select, {c, ct, zero}, p));
        if (active_[v.args[2]]) contrib_[v.args[2]].push_back(b_.op(Op::Select, {c, zero, ct}, p));
        return;
      }
      default: {
        const auto ps = partials(b_, prim_[i], [&](int arg) { return active_[v.args[arg]] != 0; });
        for (const Partial& part : ps) {
          int x = apply(b_, part, ct, p);
          if (part.kind == Partial::Kind::Mul || part.kind == Partial::Kind::Div)
            x = b_.guard(p, x);
          contrib_[v.args[part.arg]].push_back(x);
        }
      }
    }
  }

  // The reverse of the loop region [begin, end] (docs/language.md "Long loops", derivatives):
  // a loop R over the iterations the forward copy took, last first. Iteration t of the
  // primal is recomputed in R from a checkpoint, the carried values at iteration m, a
  // multiple of C = floor(sqrt(n)) + 1 (n: iterations taken): when t falls below m, a loop
  // from the loop's entry values makes the checkpoint at the multiple of C below t (loop
  // "A"), then a loop from the checkpoint runs to t (loop "B"); then the body at t is copied
  // once more and reversed value by value, turning the cotangents of the iteration's next
  // values into those of its carried values. R carries those cotangents, the checkpoint,
  // and one sum per value outside the body (and load inside it) the body contributes to.
  // Memory per sample: three copies of the carried state and the sums, nothing per
  // iteration; time about 2 n sqrt(n) body evaluations besides the n reverse ones.
  void reverse_region(int begin, int end) {
    std::vector<int> carries;
    for (int i = begin + 1; i < end; ++i)
      if (u_.values[i].op == Op::LoopCarry && u_.values[i].args[1] == begin) carries.push_back(i);
    int index = -1;
    for (int i = begin + 1; i < end; ++i)
      if (u_.values[i].op == Op::LoopIndex && u_.values[i].args[0] == begin) index = i;
    // The cotangents of the loop's results: R's cotangent carries enter with them.
    std::map<int, std::vector<int>> seeds;  // active F carry -> its results' cotangents
    for (size_t i = end + 1; i < u_.values.size(); ++i) {
      const Value& v = u_.values[i];
      if (v.op != Op::LoopResult || v.args[1] != end) continue;
      for (const int x : contrib_[i]) seeds[v.args[0]].push_back(x);
      contrib_[i].clear();
    }
    bool any = false;
    for (const auto& [c, xs] : seeds) any = any || (!xs.empty() && active_[c]);
    if (!any) return;
    const Value& lb = u_.values[begin];
    b_.set_origin(lb.loc);
    const int64_t K = lb.iimm;
    const int n = count_[begin];
    std::vector<int> act;  // the active F carries, with their seeds
    std::map<int, int> seed_of;
    for (const int c : carries)
      if (active_[c] && u_.values[c].type == Type::F) {
        act.push_back(c);
        seed_of[c] = b_.sum(seeds[c]);
      }
    const int one = b_.integer(1);
    const int spacing = b_.iop(
        Op::Add, {b_.op(Op::ToInt, {b_.op(Op::Sqrt, {b_.op(Op::ToFloat, {n})})}), b_.integer(1)});
    std::vector<int> entry(carries.size());
    for (size_t j = 0; j < carries.size(); ++j) entry[j] = prim_[u_.values[carries[j]].args[0]];
    const int fzero = b_.constant(0.0);

    // R: iteration r reverses the primal's iteration t = n - 1 - r.
    const int R = b_.loop_begin(K);
    const int r = b_.loop_value(Op::LoopIndex, R);
    std::map<int, int> ct;  // active carry -> R's cotangent carry
    for (const int c : act) ct[c] = b_.loop_value(Op::LoopCarry, seed_of[c], R);
    const int m = b_.loop_value(Op::LoopCarry, n, R);
    std::vector<int> cp(carries.size());
    for (size_t j = 0; j < carries.size(); ++j) cp[j] = b_.loop_value(Op::LoopCarry, entry[j], R);
    const int t = b_.iop(Op::Sub, {b_.iop(Op::Sub, {n, one}), r});
    const int need = b_.iop(Op::Lt, {t, m});
    const int m_new = b_.op(
        Op::Select, {need, b_.iop(Op::Mul, {b_.iop(Op::FloorDiv, {t, spacing}), spacing}), m});
    // A: the checkpoint at m_new, from the entry values (a first iteration that keeps them
    // when there is nothing to run).
    const std::vector<int> at_m = replay(
        begin, end, carries, index, entry, K,
        [&](int it) {
          return std::pair{
              b_.op(Op::And, {need, b_.iop(Op::Lt, {it, m_new})}),
              b_.op(Op::Not,
                    {b_.op(Op::And, {need, b_.iop(Op::Lt, {b_.iop(Op::Add, {it, one}), m_new})})})};
        },
        -1);
    std::vector<int> cp2(carries.size());
    for (size_t j = 0; j < carries.size(); ++j) cp2[j] = b_.op(Op::Select, {need, at_m[j], cp[j]});
    // B: from the checkpoint to iteration t.
    const std::vector<int> at_t = replay(
        begin, end, carries, index, cp2, K,
        [&](int it) {
          return std::pair{b_.iop(Op::Lt, {it, t}),
                           b_.op(Op::Not, {b_.iop(Op::Lt, {b_.iop(Op::Add, {it, one}), t})})};
        },
        m_new);
    // The body at t, reversed.
    for (size_t j = 0; j < carries.size(); ++j) prim_[carries[j]] = at_t[j];
    if (index >= 0) prim_[index] = t;
    copy_range(begin + 1, end, begin);
    std::vector<size_t> before(u_.values.size());  // what escapes the body: sizes on entry
    for (size_t i = 0; i < u_.values.size(); ++i) before[i] = contrib_[i].size();
    for (const int c : act) {
      const int nx = next_value(begin, end, c);
      contrib_[nx >= 0 ? nx : c].push_back(ct[c]);
    }
    reverse_range(begin + 1, end, 1);
    for (const int c : act) {  // the cotangents of iteration t's carried values
      const int sum = b_.sum(contrib_[c]);
      b_.loop_value(Op::LoopNext, ct[c], sum);
    }
    std::vector<std::pair<int, int>> sums;  // escaping value -> R's sum carry
    for (size_t i = 0; i < u_.values.size(); ++i) {
      const bool inside = static_cast<int>(i) > begin && static_cast<int>(i) < end;
      const bool escapes = !inside || is_load(u_.values[i].op);
      if (!escapes) {
        contrib_[i].clear();
        continue;
      }
      if (contrib_[i].size() == before[i]) continue;
      const std::vector<int> fresh(contrib_[i].begin() + before[i], contrib_[i].end());
      contrib_[i].resize(before[i]);
      const int acc = b_.loop_value(Op::LoopCarry, fzero, R);
      b_.loop_value(Op::LoopNext, acc, b_.op(Op::Add, {acc, b_.sum(fresh)}));
      sums.emplace_back(static_cast<int>(i), acc);
    }
    b_.loop_value(Op::LoopNext, m, m_new);
    for (size_t j = 0; j < carries.size(); ++j) b_.loop_value(Op::LoopNext, cp[j], cp2[j]);
    const int exit = b_.op(Op::Not, {b_.iop(Op::Lt, {b_.iop(Op::Add, {r, one}), n})});
    b_.set_origin(lb.loc);
    const int endR = b_.loop_value(Op::LoopEnd, R, exit);
    for (const int c : act) {
      const int e = u_.values[c].args[0];
      if (active_[e]) contrib_[e].push_back(b_.loop_value(Op::LoopResult, ct[c], endR));
    }
    for (const auto& [i, acc] : sums)
      contrib_[i].push_back(b_.loop_value(Op::LoopResult, acc, endR));
  }

  // The value carry `c` of the loop region [begin, end] takes into the next iteration (its
  // LoopNext's operand), or -1: it keeps its entry value.
  int next_value(int begin, int end, int c) const {
    for (int i = begin + 1; i < end; ++i)
      if (u_.values[i].op == Op::LoopNext && u_.values[i].args[0] == c) return u_.values[i].args[1];
    return -1;
  }

  // A loop of K iterations re-running the body of [begin, end] from `from` (one value per
  // carry); `control(it)` gives (whether iteration `it` runs, whether the loop leaves after
  // it), `it` being offset + the loop's index (offset -1: the index itself). Returns the
  // carried values after it.
  template <typename Control>
  std::vector<int> replay(int begin, int end, const std::vector<int>& carries, int index,
                          const std::vector<int>& from, int64_t K, Control control, int offset) {
    const int L = b_.loop_begin(K);
    std::vector<int> w(carries.size());
    for (size_t j = 0; j < carries.size(); ++j) w[j] = b_.loop_value(Op::LoopCarry, from[j], L);
    const int idx = b_.loop_value(Op::LoopIndex, L);
    const int it = offset < 0 ? idx : b_.iop(Op::Add, {offset, idx});
    const auto [go, leave] = control(it);
    for (size_t j = 0; j < carries.size(); ++j) prim_[carries[j]] = w[j];
    if (index >= 0) prim_[index] = it;
    copy_range(begin + 1, end, begin);
    for (size_t j = 0; j < carries.size(); ++j) {
      const int nx = next_value(begin, end, carries[j]);
      if (nx >= 0) b_.loop_value(Op::LoopNext, w[j], b_.op(Op::Select, {go, prim_[nx], w[j]}));
    }
    const int e = b_.loop_value(Op::LoopEnd, L, leave);
    std::vector<int> out(carries.size());
    for (size_t j = 0; j < carries.size(); ++j) out[j] = b_.loop_value(Op::LoopResult, w[j], e);
    return out;
  }

  // After the outermost region: the cotangents R summed for the loads inside its body.
  void loads_after_region(int begin, int end) {
    for (int i = begin + 1; i < end; ++i) {
      const Value& v = u_.values[i];
      if (!is_load(v.op) || contrib_[i].empty()) continue;
      b_.set_origin(v.loc);
      const int ct = b_.sum(contrib_[i]);
      contrib_[i].clear();
      if (v.op == Op::LoadParam) {
        a_.stores.push_back({slots_.bar[v.slot], v.comp, ct, -1, -1, v.loc});
      } else {  // LoadPlane (an active LoadTable was refused)
        leaf_[v.slot].resize(u_.slots[v.slot].width);
        leaf_[v.slot][v.comp].push_back(ct);
      }
    }
  }

  // The cotangents of the wrt planes and in-out Mutables: one store per component.
  void store_leaves() {
    b_.set_origin({});
    for (size_t s = 0; s < u_.slots.size(); ++s) {
      const ir::Slot& slot = u_.slots[s];
      if (!in_wrt_[s] || (slot.kind != SlotKind::Plane && slot.kind != SlotKind::Mutable)) continue;
      leaf_[s].resize(slot.width);
      for (int c = 0; c < slot.width; ++c)
        a_.stores.push_back({slots_.bar[s], c, b_.sum(leaf_[s][c]), -1, -1, {}});
    }
  }

  const ir::Kernel& u_;
  const AdjointSlots& slots_;
  ir::Kernel& a_;
  Builder b_;
  std::vector<char> in_wrt_;
  std::vector<int> prim_;   // u's value -> its latest copy in the adjoint kernel
  std::vector<int> count_;  // a LoopBegin of u -> the iterations its latest copy took (I)
  std::vector<char> active_;
  std::vector<std::vector<int>> contrib_;            // value -> its cotangent's terms
  std::vector<std::vector<std::vector<int>>> leaf_;  // slot -> component -> terms
};

}  // namespace

ir::Kernel adjoint(const ir::Kernel& k, const std::vector<std::string>& wrt) {
  const std::vector<int> w = wrt_slots(k, wrt, "adjoint");
  const ir::Kernel u = unroll(k);
  ir::Kernel a = derived_kernel(k, k.name + "_adjoint");
  const AdjointSlots slots = lay_out(u, w, a);
  AdjointPass pass(u, w, slots, a);
  pass.run();
  passes::dce(a);
  ir::verify(a);
  return a;
}

}  // namespace raptor::ad
