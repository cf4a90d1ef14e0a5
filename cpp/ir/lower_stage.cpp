// The front end's stage boundaries (docs/language.md "Stage boundaries"): a reduction over
// the samples of a launch whose value the same body reads, as in `f = k * (x - hawk.mean(x))`
// or `m = hawk.mean(x)` followed by a read of `m`. The kernel is lowered as one kernel in
// which the reduction stores into a ParamSum slot and every read of its value loads a Param
// slot; Kernel::stage_links pairs the two. passes/stages.hpp then splits it into stages that
// the runtime runs in order, binding each Param to the 1-element array its sum was written to.
#include <string>

#include "ir/lower_ctx.hpp"

namespace raptor::ir::front {

namespace {

// A deep copy of an expression (the synthesized assignment of a hidden sum owns its call).
parse::ExprPtr clone(const parse::Expr& e) {
  auto out = std::make_unique<parse::Expr>();
  out->kind = e.kind;
  out->loc = e.loc;
  out->name = e.name;
  out->op = e.op;
  out->ops = e.ops;
  out->number = e.number;
  out->is_int = e.is_int;
  out->int_value = e.int_value;
  out->int_text = e.int_text;
  out->bool_value = e.bool_value;
  out->keywords = e.keywords;
  for (const auto& a : e.args) out->args.push_back(a ? clone(*a) : nullptr);
  return out;
}

// `base`, or `base_`, `base__`, ... : a slot name no parameter of `k` has.
std::string unused_slot_name(const Kernel& k, std::string base) {
  while (k.find_slot(base) >= 0) base += "_";
  return base;
}

}  // namespace

int Lowerer::stage_read(int slot, parse::Loc loc, bool hidden) {
  if (const auto it = stage_param_.find(slot); it != stage_param_.end())
    return materialize(it->second, 0);
  const std::string sum = k.slots[slot].name;
  if (k.has_mask() || k.active_set)
    error(loc, "a stage boundary (the value of " +
                   (hidden ? std::string("a hawk.sum/mean/min/max") : "'" + sum + "'") +
                   " read in the body) in kernel '" + k.name +
                   "', which has a Terminated parameter or active_set, is not supported: the "
                   "stages would disagree on which samples are live; reduce in one kernel and "
                   "pass the result to the next as a Param");
  if (spec_.steps > 1)
    error(loc, "a stage boundary (hawk.sum/mean/min/max read in the body) in kernel '" + k.name +
                   "' of steps=" + std::to_string(spec_.steps) +
                   " is not supported: every step would need its own reduction; use a kernel "
                   "of one step (eagle runs it once per step)");
  Slot p;
  p.name = unused_slot_name(k, sum + "_value");
  p.kind = SlotKind::Param;
  p.width = 1;
  k.slots.push_back(p);
  const int pslot = static_cast<int>(k.slots.size()) - 1;
  stage_param_[slot] = pslot;
  int line = loc.line;  // the reduction's own line (its store), else the read's
  for (const Store& st : k.stores)
    if (st.slot == slot) line = st.loc.line;
  k.stage_links.push_back(Kernel::StageLink{sum, p.name, hidden, line});
  return materialize(pslot, 0);
}

TV Lowerer::staged_reduction(const parse::Expr& call, const std::string& fn) {
  // A hidden ParamSum output, assigned by a synthesized `<hidden> = hawk.<fn>(...)` that
  // reduce_stmt lowers as the user's own statement would be (its checks included).
  int hidden = 0;
  for (const auto& l : k.stage_links) hidden += l.hidden ? 1 : 0;
  Slot s;
  s.name = unused_slot_name(k, "hawk_" + fn + std::to_string(hidden));
  s.kind = SlotKind::ParamSum;
  s.width = 1;
  k.slots.push_back(s);
  const int slot = static_cast<int>(k.slots.size()) - 1;
  const std::string var = "hawk." + fn + "()@" + std::to_string(slot);  // not an identifier
  TV t;
  t.kind = TV::Kind::SumOut;
  t.slot = slot;
  frame().vars[var].value = t;
  parse::Stmt st;
  st.kind = parse::StmtKind::Assign;
  st.loc = call.loc;
  auto target = std::make_unique<parse::Expr>();
  target->kind = parse::ExprKind::Name;
  target->loc = call.loc;
  target->name = var;
  st.targets.push_back(std::move(target));
  st.value = clone(call);
  const Loc saved = cur_loc_;
  reduce_stmt(st, fn);
  cur_loc_ = saved;
  frame().vars.erase(var);
  return TV::f(stage_read(slot, call.loc, true));
}

int Lowerer::selected_count(int where, parse::Loc loc) {
  // A hidden ParamSum output `hawk_count<k>` summing 1.0 over the samples where `where` holds
  // (no derivative: a constant), read back as the Param of a stage boundary.
  int hidden = 0;
  for (const auto& l : k.stage_links) hidden += l.hidden ? 1 : 0;
  Slot s;
  s.name = unused_slot_name(k, "hawk_count" + std::to_string(hidden));
  s.kind = SlotKind::ParamSum;
  s.width = 1;
  k.slots.push_back(s);
  const int slot = static_cast<int>(k.slots.size()) - 1;
  Store st;
  st.slot = slot;
  st.comp = 0;
  st.value = konst(1.0);
  st.pred = where;
  st.loc = cur_loc_;
  k.stores.push_back(st);
  return stage_read(slot, loc, true);
}

}  // namespace raptor::ir::front
