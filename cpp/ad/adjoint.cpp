// Reverse mode (see adjoint.hpp). `adjoint` unrolls the kernel, lays out the slots
// (`lay_out`), then `AdjointPass` copies the primal values once (the forward sweep), marks
// the values that depend on a `wrt` input (`active`), seeds the cotangents of the stored
// values and walks the values backwards (the reverse sweep), adding each value's
// contributions to its operands' cotangents. Only active values that reach an output get a
// cotangent. A contribution whose partial is not a constant is wrapped as
// select(pred, ct * partial, 0) when the value has a predicate, so a branch not taken adds
// exactly 0 even where its partial is inf or NaN.
#include "ad/adjoint.hpp"

#include <set>

#include "ad/common.hpp"
#include "ad/rules.hpp"
#include "ad/unroll.hpp"
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
};

AdjointSlots lay_out(const ir::Kernel& k, const std::vector<int>& wrt, ir::Kernel& a) {
  const int ns = static_cast<int>(k.slots.size());
  AdjointSlots m{std::vector<int>(ns, -1), std::vector<int>(ns, -1)};
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
      copy.table_of = -1;
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
  for (int s = 0; s < ns; ++s) {  // roles, for callers that map slots back (the JAX bridge)
    if (m.primal[s] >= 0) a.slots[m.primal[s]].role = 'p';
    if (m.bar[s] >= 0) a.slots[m.bar[s]].role = 'c';
    for (const int d : {m.primal[s], m.bar[s]})
      if (d >= 0) a.slots[d].primal = k.slots[s].name;
  }
  return m;
}

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
        active_(u.values.size(), 0),
        contrib_(u.values.size()),
        leaf_(u.slots.size()) {
    for (const int s : wrt) in_wrt_[s] = 1;
  }

  void run() {
    forward();
    seed();
    for (int i = static_cast<int>(u_.values.size()) - 1; i >= 0; --i) reverse(i);
    store_leaves();
  }

 private:
  int prim(int i) const { return i < 0 ? i : prim_[i]; }

  // The forward sweep: the primal values, once; and which of them depend on a wrt input.
  void forward() {
    for (size_t i = 0; i < u_.values.size(); ++i) {
      const Value& v = u_.values[i];
      Value c = v;
      for (int a = 0; a < ir::op_arity(v.op); ++a) c.args[a] = prim_[v.args[a]];
      if (c.pred != -1) c.pred = prim_[c.pred];
      if (c.slot != -1) c.slot = slots_.primal[c.slot];
      prim_[i] = b_.copy(std::move(c));
      bool act = false;
      if (v.type == Type::F) {
        switch (v.op) {
          case Op::LoadParam:
          case Op::LoadPlane:
          case Op::LoadTable:
            act = in_wrt_[v.slot];
            break;
          case Op::Select:
            act = active_[v.args[1]] || active_[v.args[2]];
            break;
          default:
            if (has_partials(v.op))
              for (int a = 0; a < ir::op_arity(v.op); ++a) act = act || active_[v.args[a]];
        }
      }
      active_[i] = act;
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
      } else if (slot.kind == SlotKind::ParamSum) {
        ct = b_.guard(prim(st.pred), b_.load(Op::LoadParam, bar, st.comp));
      } else {
        ct = b_.guard(prim(st.pred),
                      b_.load(Op::LoadTable, bar, st.comp, prim(st.pred), prim(st.index)));
      }
      contrib_[st.value].push_back(ct);
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
  std::vector<int> prim_;
  std::vector<char> active_;
  std::vector<std::vector<int>> contrib_;            // value -> its cotangent's terms
  std::vector<std::vector<std::vector<int>>> leaf_;  // slot -> component -> terms
};

}  // namespace

ir::Kernel adjoint(const ir::Kernel& k, const std::vector<std::string>& wrt) {
  const std::vector<int> w = wrt_slots(k, wrt, "adjoint");
  refuse_long_loops(k, "adjoint kernels (reverse mode: adjoint, jax.grad, jax.vjp, jacrev)");
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
