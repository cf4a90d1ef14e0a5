// The linearize split (see linearize.hpp). `linearize` builds the tangent kernel with its
// primal, marks every value that depends on a tangent input (`Split::unknown`), then copies
// the known values into the primal kernel and the unknown ones into the linear kernel; a
// known operand the linear kernel needs becomes a residual (`Split::use`).
#include "ad/linearize.hpp"

#include <set>
#include <stdexcept>
#include <utility>

#include "ad/common.hpp"
#include "ad/tangent.hpp"
#include "ad/winner.hpp"
#include "passes/optimize.hpp"

namespace raptor::ad {

using ir::Op;
using ir::SlotKind;
using ir::Type;
using ir::Value;

namespace {

bool is_load(Op op) {
  return op == Op::LoadParam || op == Op::LoadPlane || op == Op::LoadTable || op == Op::LoadState ||
         op == Op::LoadMask;
}

// A known value the linear kernel recomputes rather than reading a residual for it.
bool is_leaf(Op op) {
  return op == Op::Const || op == Op::LoadParam || op == Op::LoadPlane || op == Op::LoadMask;
}

class Split {
 public:
  explicit Split(const ir::Kernel& w)
      : w_(w),
        unknown_(w.values.size(), false),
        a_val_(w.values.size(), -1),
        b_val_(w.values.size(), -1),
        a_slot_(w.slots.size(), -1),
        b_slot_(w.slots.size(), -1) {
    for (const ir::Slot& s : w.slots) taken_.insert(s.name);
  }

  Linearized run(const std::string& name) {
    Linearized out{derived_kernel(w_, name + "_jvp_primal"),
                   derived_kernel(w_, name + "_jvp_linear")};
    a_ = &out.primal;
    b_ = &out.linear;
    lay_out_slots();
    mark_unknown();
    for (size_t i = 0; i < w_.values.size(); ++i)
      if (!unknown_[i]) a_val_[i] = a_->add(remap(w_.values[i], a_val_, a_slot_));
    for (const ir::Store& st : w_.stores) {
      if (w_.slots[st.slot].role == 'p') {
        ir::Store s = st;
        s.slot = a_slot_[st.slot];
        s.value = at(a_val_, st.value);
        s.index = at(a_val_, st.index);
        s.pred = at(a_val_, st.pred);
        a_->stores.push_back(s);
      }
    }
    a_->terminate = at(a_val_, w_.terminate);
    for (size_t i = 0; i < w_.values.size(); ++i) {
      if (!unknown_[i]) continue;
      Value v = w_.values[i];
      for (int a = 0; a < ir::op_arity(v.op); ++a) v.args[a] = use(v.args[a]);
      if (v.pred >= 0) v.pred = use(v.pred);
      if (v.slot >= 0) v.slot = b_slot_[v.slot];
      b_val_[i] = b_->add(std::move(v));
    }
    for (const ir::Store& st : w_.stores) {
      if (w_.slots[st.slot].role != 't') continue;
      ir::Store s = st;
      s.slot = b_slot_[st.slot];
      s.value = use(st.value);
      if (st.index >= 0) s.index = use(st.index);
      if (st.pred >= 0) s.pred = use(st.pred);
      b_->stores.push_back(s);
    }
    b_->terminate = -1;
    // The residuals' stores last: each Mutable component is stored once.
    for (const ir::Store& st : residual_stores_) a_->stores.push_back(st);
    return out;
  }

 private:
  static int at(const std::vector<int>& m, int i) { return i < 0 ? i : m[i]; }

  static Value remap(Value v, const std::vector<int>& vals, const std::vector<int>& slots) {
    for (int a = 0; a < ir::op_arity(v.op); ++a) v.args[a] = at(vals, v.args[a]);
    v.pred = at(vals, v.pred);
    if (v.slot >= 0) v.slot = slots[v.slot];
    return v;
  }

  // The primal kernel keeps every primal slot; the linear kernel the tangent kernel's inputs
  // (an in-out Mutable's old value as a Plane; no primal outputs) and the tangent slots.
  void lay_out_slots() {
    for (size_t s = 0; s < w_.slots.size(); ++s) {
      const ir::Slot& slot = w_.slots[s];
      if (slot.role == 'p') {
        a_slot_[s] = static_cast<int>(a_->slots.size());
        a_->slots.push_back(slot);
      }
      ir::Slot bs = slot;
      if (slot.role == 'p') {
        if (slot.kind == SlotKind::ParamSum || slot.kind == SlotKind::TableSum) continue;
        if (slot.kind == SlotKind::Mutable) {
          if (!slot.inout) continue;
          bs.kind = SlotKind::Plane;
          bs.inout = false;
        }
      }
      b_slot_[s] = static_cast<int>(b_->slots.size());
      b_->slots.push_back(std::move(bs));
    }
    for (ir::Slot& s : a_->slots)
      if (s.kind == SlotKind::TableSum) s.table_of = a_slot_[s.table_of];
    for (ir::Slot& s : b_->slots)
      if (s.kind == SlotKind::TableSum) s.table_of = b_slot_[s.table_of];
  }

  void mark_unknown() {
    for (size_t i = 0; i < w_.values.size(); ++i) {
      const Value& v = w_.values[i];
      bool u = is_load(v.op) && v.slot >= 0 && w_.slots[v.slot].role == 't';
      for (int a = 0; a < ir::op_arity(v.op) && !u; ++a) u = unknown_[v.args[a]];
      if (v.pred >= 0 && unknown_[v.pred]) u = true;
      unknown_[i] = u;
    }
  }

  // Value `i` of the tangent kernel as the linear kernel reads it: its own copy of an unknown
  // value or a leaf, else a residual plane written by the primal kernel.
  int use(int i) {
    if (i < 0) return i;
    if (b_val_[i] >= 0) return b_val_[i];
    const Value& v = w_.values[i];
    // Integers (table indices, integer planes) and bools (conditions, predicates) are
    // recomputed from their operands: a residual is a float plane, which both lowerings read
    // (the xla lowering has no integer or bool planes; int64 would need JAX's x64).
    if (is_leaf(v.op) || v.type != Type::F) {
      Value c = v;
      for (int a = 0; a < ir::op_arity(c.op); ++a) c.args[a] = use(c.args[a]);
      if (c.pred >= 0) c.pred = use(c.pred);
      if (c.slot >= 0) c.slot = b_slot_[c.slot];
      return b_val_[i] = b_->add(std::move(c));
    }
    ir::Slot r;
    r.name = unique_name("res", std::to_string(residual_stores_.size()), taken_);
    r.kind = SlotKind::Mutable;
    r.role = 'r';
    r.primal = r.name;
    const int a_slot = static_cast<int>(a_->slots.size());
    a_->slots.push_back(r);
    ir::Store st;
    st.slot = a_slot;
    st.value = a_val_[i];
    st.loc = v.loc;
    residual_stores_.push_back(st);
    r.kind = SlotKind::Plane;
    const int b_slot = static_cast<int>(b_->slots.size());
    b_->slots.push_back(std::move(r));
    Value load;
    load.op = Op::LoadPlane;
    load.type = v.type;
    load.slot = b_slot;
    load.loc = v.loc;
    load.name = v.name;
    return b_val_[i] = b_->add(std::move(load));
  }

  const ir::Kernel& w_;
  std::vector<bool> unknown_;
  std::vector<int> a_val_, b_val_, a_slot_, b_slot_;
  std::vector<ir::Store> residual_stores_;
  std::set<std::string> taken_;
  ir::Kernel* a_ = nullptr;
  ir::Kernel* b_ = nullptr;
};

}  // namespace

Linearized linearize(const ir::Kernel& k, const std::vector<std::string>& wrt) {
  // Residuals are planes, one value per sample: a value inside a long loop has one per
  // iteration (and the "xla" lowering, the split's only user, refuses such loops anyway).
  refuse_long_loops(k, "linearize splits");
  // hawk.min / hawk.max: the tangent reads the winner, a result of its own kernel (winner.hpp)
  // that the split's primal would have to produce; the JAX bridge binds the tangent kernel.
  if (has_folds(k))
    throw std::invalid_argument("raptor linearize: kernel '" + k.name +
                                "' has a hawk.min / hawk.max output, which the linearize split "
                                "does not take; use the tangent kernel");
  ir::Kernel w = tangent(k, wrt, /*with_primal=*/true);
  passes::optimize(w);  // CSE first: one residual per distinct value
  Linearized out = Split(w).run(k.name);
  for (ir::Kernel* d : {&out.primal, &out.linear}) {
    passes::optimize(*d);
    ir::verify(*d);
  }
  return out;
}

}  // namespace raptor::ad
