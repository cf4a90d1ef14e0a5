// The front end's loops: `for i in range(K)` unrolled, with `break` and `continue` under
// data-dependent conditions, and the predicate/select bookkeeping they need. Start at
// `Lowerer::for_stmt`.
//
// Model (docs/language.md, "Loops with exits"): each loop being unrolled has a *liveness*, a
// Bool value saying which samples still run the current point of its body: alive when the
// loop started, not broken out, not continued in this iteration. A `break` (`continue`) under
// the predicate P adds P to the loop's broken (continued) samples. Afterwards:
// - every value emitted has the liveness in its predicate (pred()), so a table read after an
//   exit is not bounds-checked for a sample that left, and an adjoint contribution of such a
//   value is zero for it;
// - every assignment in the loop's function is `x = select(live, new, old)`: a sample that
//   left keeps its variables' values (so derivatives are exact for the iterations taken, at
//   any order: selects are derivable like the `if` merges). These selects, and the merges of
//   an `if`, are used by the samples that left too, so their predicate has the liveness the
//   loop started with (`choose`), and an `if`'s branch predicates do not include the
//   liveness (pred() adds the current one to each value);
// - when no sample can be alive (an unconditional `break`), the unrolling stops.
// A local first assigned after an exit is not set for every sample; reading it in a later
// iteration before assigning it, or after the loop, is refused (Python would raise there).
#include <algorithm>
#include <functional>
#include <string>
#include <vector>

#include "ir/lower_ctx.hpp"

namespace raptor::ir::front {

namespace {

constexpr int kMaxUnrolled = 4096;
// The most iterations of one loop (a real loop's counter and index are int64; this bounds a
// mistyped range() well below that).
constexpr int64_t kMaxLoopIterations = int64_t(1) << 40;

// The names a block assigns (targets of =, op=, inner loop variables), inner blocks included.
void assigned_names(const parse::Block& b, std::vector<std::string>& out) {
  auto add = [&](const std::string& n) {
    if (std::find(out.begin(), out.end(), n) == out.end()) out.push_back(n);
  };
  std::function<void(const parse::Expr&)> target = [&](const parse::Expr& e) {
    if (e.kind == parse::ExprKind::Name) add(e.name);
    if (e.kind == parse::ExprKind::Tuple)
      for (const auto& a : e.args) target(*a);
    if (e.kind == parse::ExprKind::Subscript && e.args[0]->kind == parse::ExprKind::Name)
      add(e.args[0]->name);
  };
  for (const auto& st : b) {
    if (st->kind == parse::StmtKind::Assign)
      for (const auto& t : st->targets) target(*t);
    if (st->kind == parse::StmtKind::AugAssign && st->target) target(*st->target);
    if (st->kind == parse::StmtKind::For) add(st->var);
    assigned_names(st->body, out);
    assigned_names(st->orelse, out);
  }
}

// Whether a block holds a `break` of the loop it is the body of (not of inner loops).
bool breaks(const parse::Block& b) {
  for (const auto& st : b) {
    if (st->kind == parse::StmtKind::Other && st->keyword == "break") return true;
    if (st->kind == parse::StmtKind::If && (breaks(st->body) || breaks(st->orelse))) return true;
  }
  return false;
}

}  // namespace

int Lowerer::pred() {
  const int top = pred_stack_.empty() ? -1 : pred_stack_.back();
  if (live_ < 0 || top == live_) return top;
  if (top < 0) return live_;
  const auto key = std::make_pair(top, live_);
  if (auto it = pred_cache_.find(key); it != pred_cache_.end()) return it->second;
  // Made directly (not through emit, which asks for pred()): a predicate needs none.
  Value v;
  v.op = Op::And;
  v.type = Type::B;
  v.args[0] = top;
  v.args[1] = live_;
  v.loc = cur_loc_;
  const int id = k.add(v);
  pred_cache_[key] = id;
  return id;
}

int Lowerer::unguarded(int b) {
  // The liveness is a condition, never a table read or a derivative: it needs no predicate,
  // and without one CSE merges it with the same condition made elsewhere.
  if (b >= 0 && k.values[b].op != Op::Const) k.values[b].pred = -1;
  return b;
}

bool Lowerer::is_false(int b) const {
  if (b < 0) return false;
  const auto cv = const_value(b);
  return cv && *cv == 0.0;
}

int Lowerer::and_b(int a, int b) {
  if (a < 0) return b;
  if (b < 0) return a;
  if (a == b) return a;
  if (is_false(a) || is_false(b)) return kbool(false);
  if (const auto cv = const_value(a)) return b;  // true and b
  if (const auto cv = const_value(b)) return a;
  return unguarded(emit(Op::And, Type::B, a, b));
}

int Lowerer::or_b(int a, int b) {
  if (a < 0 || b < 0) return -1;  // "always"
  if (a == b) return a;
  if (is_false(a)) return b;
  if (is_false(b)) return a;
  if (const_value(a) || const_value(b)) return kbool(true);
  return unguarded(emit(Op::Or, Type::B, a, b));
}

int Lowerer::not_b(int a) {
  if (a < 0) return kbool(false);
  return unguarded(emit(Op::Not, Type::B, a));
}

void Lowerer::update_live() {
  const LoopCtx& l = loops_.back();
  int left = l.brk;
  if (l.cnt >= 0) left = left < 0 ? l.cnt : or_b(left, l.cnt);
  live_ = left < 0 ? l.outer_live : and_b(l.outer_live, not_b(left));
}

int Lowerer::guard_live() const {
  if (loops_.empty() || loops_.back().frame_depth != frames_.size()) return -1;
  return live_;
}

void Lowerer::exit_stmt(const parse::Stmt& s) {
  const std::string& kw = s.keyword;
  if (loops_.empty() || loops_.back().frame_depth != frames_.size()) {
    if (frame().helper >= 0)
      error(s.loc, "`" + kw + "` outside a loop: a helper's `" + kw +
                       "` can only leave a `for` loop of the "
                       "helper itself; return a flag from the helper and `" +
                       kw + "` in the caller's loop (`if flag: " + kw + "`)");
    error(s.loc, "`" + kw +
                     "` outside a loop: it can only be used inside `for i in range(K)`; use "
                     "an `if` to skip statements");
  }
  LoopCtx& l = loops_.back();
  int p = pred();
  if (p < 0) p = kbool(true);
  int& left = kw == "break" ? l.brk : l.cnt;
  left = left < 0 ? p : or_b(left, p);
  update_live();
  exited_ = true;
}

void Lowerer::for_stmt(const parse::Stmt& s) {
  if (s.iter || s.range_args.empty() || s.range_args.size() > 3)
    error(s.loc,
          "a kernel loops only as `for i in range(K)` (or range(a, b[, step])) with bounds "
          "known when the kernel is defined");
  std::vector<int64_t> r;
  for (const auto& a : s.range_args) r.push_back(const_int(expr(*a), a->loc, "a range bound"));
  int64_t start = 0, stop = r[0], step = 1;
  if (r.size() >= 2) start = r[0], stop = r[1];
  if (r.size() == 3) step = r[2];
  if (step == 0) error(s.range_args[2]->loc, "range() step must not be zero");
  // Iterations of range(start, stop, step), as Python counts them (exact in 128 bits).
  const __int128 span =
      step > 0 ? static_cast<__int128>(stop) - start : static_cast<__int128>(start) - stop;
  const __int128 steps_abs = step > 0 ? step : -static_cast<__int128>(step);
  const __int128 count = span <= 0 ? 0 : (span + steps_abs - 1) / steps_abs;
  // A body that leaves unconditionally runs once: unrolled (the unrolling stops there).
  bool leaves_at_once = false;
  for (const auto& st : s.body)
    leaves_at_once |= st->kind == parse::StmtKind::Other && st->keyword == "break";
  if (count > 0 && unrolled_ + count > kMaxUnrolled && !leaves_at_once) {
    if (count > kMaxLoopIterations)
      error(s.loc, "this loop runs " + std::to_string(static_cast<long long>(count)) +
                       " iterations; a kernel's loops run at most " +
                       std::to_string(kMaxLoopIterations) +
                       " (per step); step the kernel instead (@hawk.kernel(steps=k))");
    real_loop(s, start, step, static_cast<int64_t>(count));
    return;
  }
  ++depth_;
  LoopCtx ctx;
  ctx.frame_depth = frames_.size();
  ctx.outer_live = live_;
  ctx.line = s.loc.line;
  loops_.push_back(ctx);
  for (int64_t i = start; step > 0 ? i < stop : i > stop; i += step) {
    loops_.back().cnt = -1;
    update_live();
    if (is_false(live_)) break;  // every sample has left the loop
    if (++unrolled_ > kMaxUnrolled)
      error(s.loc, "loops unroll to more than " + std::to_string(kMaxUnrolled) +
                       " iterations in this kernel, and longer loops are not compiled as "
                       "loops yet; use fewer iterations, or a stepping kernel "
                       "(@hawk.kernel(steps=k)) that sets a Terminated mask");
    Var& loop_var = frame().vars[s.var];
    loop_var.value = TV::i(i);  // the loop variable: a compile-time integer, not guarded
    loop_var.maybe_undefined = false;
    loop_var.undefined_why.clear();
    block(s.body);
    exited_ = false;
    // Locals first assigned after an exit may be unset for some samples from here on.
    for (const std::string& n : loops_.back().late_names) {
      auto it = frame().vars.find(n);
      if (it == frame().vars.end() || it->second.maybe_undefined) continue;
      it->second.maybe_undefined = true;
      it->second.undefined_line = s.loc.line;
      it->second.undefined_why =
          "'" + n + "' is first assigned after a `break`/`continue` of the loop at line " +
          std::to_string(s.loc.line) +
          ", so some samples never assign it; assign it before the loop";
    }
  }
  const LoopCtx done = loops_.back();
  loops_.pop_back();
  live_ = done.outer_live;
  --depth_;
  if (done.brk >= 0 && !const_value(done.brk)) {
    auto it = frame().vars.find(s.var);
    if (it != frame().vars.end()) {
      it->second.maybe_undefined = true;
      it->second.undefined_line = s.loc.line;
      it->second.undefined_why =
          "the loop variable '" + s.var + "' after the loop at line " + std::to_string(s.loc.line) +
          " depends on the iteration each sample broke at; count the iterations in a "
          "variable (n = n + 1 in the body)";
    }
  }
}

void Lowerer::forget_values_from(int first) {
  for (auto* cache : {&pred_cache_, &load_cache_})
    for (auto it = cache->begin(); it != cache->end();)
      it = it->second >= first ? cache->erase(it) : std::next(it);
  for (auto it = const_cache_.begin(); it != const_cache_.end();)
    it = it->second >= first ? const_cache_.erase(it) : std::next(it);
}

// A real loop (docs/language.md "Loops with exits"): the variables the body assigns that exist
// before the loop are carried (one LoopCarry per component, the value entering the loop; one
// LoopNext per component, the value at the end of the body; one LoopResult per component
// after the loop); the loop variable is start + step * LoopIndex, a runtime integer. A `break`
// adds a carried Bool, the sample's liveness: the body runs as one unrolled iteration does,
// with the liveness at its start being that carry, and the loop is left when it turns false.
// Locals first assigned in the body are the body's own: reading one after the loop is
// refused, as is a draw inside it (draws are numbered when the kernel is defined).
void Lowerer::real_loop(const parse::Stmt& s, int64_t start, int64_t step, int64_t count) {
  std::vector<std::string> names;
  assigned_names(s.body, names);
  // frame().vars is looked up at each use: a helper called in the body pushes frames, which
  // may move this one.
  struct Carried {
    std::string name;
    TV entry;            // the value entering the loop (integers as runtime values)
    std::vector<int> c;  // its LoopCarry per component
    bool weak = false;   // it entered as an int made of constants (TV::weak)
  };
  std::vector<Carried> carried;
  const int visit = loop_visits_[&s]++;
  std::vector<std::string> locals;  // assigned in the body, not defined before it
  for (const std::string& n : names) {
    if (n == s.var) continue;
    auto it = frame().vars.find(n);
    if (it == frame().vars.end() || it->second.maybe_undefined) {
      locals.push_back(n);
      continue;
    }
    Var& var = it->second;
    TV v = var.value;
    if (var.param_slot >= 0)  // a Mutable component not assigned yet: its old value
      for (size_t c = 0; c < v.comps.size(); ++c)
        if (v.comps[c] < 0) v.comps[c] = materialize(var.param_slot, static_cast<int>(c));
    const bool weak = v.weakish();
    if (weak && float_carries_.contains(CarryKey{&s, visit, n}))  // FloatCarry
      v = TV::f(to_float(v, s.loc, "a value"));
    if (v.kind == TV::Kind::Int)
      v = TV::iv(to_int_value(v, s.loc, "a variable carried by the loop"));
    const bool ok = v.kind == TV::Kind::Float || v.kind == TV::Kind::Vector ||
                    v.kind == TV::Kind::Matrix || v.kind == TV::Kind::Bool ||
                    v.kind == TV::Kind::IntVal || v.kind == TV::Kind::IVector;
    if (!ok)
      error(s.loc, "'" + n + "' is " + describe(v) + " and is assigned in the loop at line " +
                       std::to_string(s.loc.line) +
                       ", which runs as a loop (more iterations than a kernel unrolls): only "
                       "numbers, bools, vectors and matrices can change from one iteration to "
                       "the next");
    carried.push_back({n, v, {}, weak && v.kind == TV::Kind::IntVal});
  }
  const bool has_break = breaks(s.body);
  const int alive_entry = has_break ? (live_ < 0 ? kbool(true) : live_) : -1;
  const int live_before = live_;

  // The loop's own values: made directly (no predicate, never folded or cached).
  auto add_loop_value = [&](Op op, Type t, int a0, int a1, std::string name = "") {
    Value v;
    v.op = op;
    v.type = t;
    v.args[0] = a0;
    v.args[1] = a1;
    v.loc = cur_loc_;
    v.name = std::move(name);
    return k.add(v);
  };
  // In a loop region, this loop's draws are numbered from the outer iteration's base, made
  // here, before the loop, so that the outer body's later draws can read it too.
  if (real_loops_ > 0) draw_base();
  const int begin = add_loop_value(Op::LoopBegin, Type::B, -1, -1);
  k.values[begin].iimm = count;
  auto carry = [&](int entry, std::string name) {
    return add_loop_value(Op::LoopCarry, k.values[entry].type, entry, begin, std::move(name));
  };
  for (Carried& cv : carried) {
    for (size_t c = 0; c < cv.entry.comps.size(); ++c)
      cv.c.push_back(carry(cv.entry.comps[c], cv.entry.comps.size() == 1
                                                  ? cv.name
                                                  : cv.name + "[" + std::to_string(c) + "]"));
    Var& var = frame().vars[cv.name];
    var.value = cv.entry.like(cv.c);
    if (cv.entry.kind == TV::Kind::Float || cv.entry.kind == TV::Kind::Bool ||
        cv.entry.kind == TV::Kind::IntVal) {
      var.value = cv.entry;
      var.value.comps = cv.c;
    }
  }
  const int alive = has_break ? carry(alive_entry, "live") : -1;
  ++depth_;
  ++real_loops_;
  const int saved_line = real_loop_line_;
  real_loop_line_ = s.loc.line;

  int index = add_loop_value(Op::LoopIndex, Type::I, begin, -1, s.var);
  // Draws in the body are numbered from the iteration (rand_uniform_at, ir.hpp).
  const int64_t draws_before = draws_;
  const int saved_base = draw_base_;  // made above when this loop is nested in one
  const int saved_stride = draw_stride_, saved_index = draw_index_;
  const int64_t saved_outer_static = draw_outer_static_;
  const int saved_outer_base = draw_outer_base_;
  draw_outer_static_ = draws_before;
  draw_outer_base_ = saved_base;
  draw_index_ = index;
  draw_base_ = -1;
  draw_stride_ = -1;
  draws_ = 0;
  if (step != 1) index = unguarded(emit(Op::Mul, Type::I, index, kint(step)));
  if (start != 0) index = unguarded(emit(Op::Add, Type::I, index, kint(start)));
  {
    Var& loop_var = frame().vars[s.var];
    loop_var.value = TV::iv(index);
    loop_var.param_slot = -1;
    loop_var.maybe_undefined = false;
    loop_var.undefined_why.clear();
  }
  LoopCtx ctx;
  ctx.frame_depth = frames_.size();
  ctx.outer_live = has_break ? alive : live_before;
  ctx.line = s.loc.line;
  for (const Carried& cv : carried)
    if (cv.weak) ctx.weak_carries.emplace(cv.name, CarryKey{&s, visit, cv.name});
  loops_.push_back(ctx);
  update_live();
  block(s.body);
  exited_ = false;
  const LoopCtx done = loops_.back();
  loops_.pop_back();

  // The values of the next iteration, each of the kind it entered with.
  for (Carried& cv : carried) {
    TV now = read_var(cv.name, s.loc);
    if (cv.entry.kind == TV::Kind::Float && now.kind == TV::Kind::Int)
      now = TV::f(to_float(now, s.loc, "a value"));
    if (cv.entry.kind == TV::Kind::IntVal && now.kind == TV::Kind::Int)
      now = TV::iv(to_int_value(now, s.loc, "a value"));
    if (cv.weak && now.kind == TV::Kind::Float) throw FloatCarry{CarryKey{&s, visit, cv.name}};
    if (cv.entry.kind == TV::Kind::IntVal && now.kind == TV::Kind::Float)
      throw_if_weak_carry(cv.name);  // an enclosing loop's carry, carried in here too
    if (now.kind != cv.entry.kind || now.comps.size() != cv.entry.comps.size() ||
        now.rows != cv.entry.rows)
      error(s.loc, "'" + cv.name + "' is " + describe(cv.entry) + " before the loop at line " +
                       std::to_string(s.loc.line) + " and " + describe(now) +
                       " at the end of its body; a variable the loop changes keeps its kind "
                       "from one iteration to the next" +
                       (cv.entry.kind == TV::Kind::IntVal && now.kind == TV::Kind::Float
                            ? ": write " + cv.name + " = float(" + cv.name + ") before the loop"
                            : std::string()));
    for (size_t c = 0; c < cv.c.size(); ++c)
      add_loop_value(Op::LoopNext, k.values[cv.c[c]].type, cv.c[c], now.comps[c]);
  }
  int exit = -1;
  if (has_break) {
    const int next_alive = done.brk < 0 ? alive : and_b(alive, not_b(done.brk));
    add_loop_value(Op::LoopNext, Type::B, alive, next_alive);
    exit = not_b(next_alive);
  } else {
    exit = kbool(false);
  }
  const int end = add_loop_value(Op::LoopEnd, Type::B, begin, exit);
  forget_values_from(begin);
  const int64_t per_iteration = draws_;
  if (draw_stride_ >= 0) k.values[draw_stride_].iimm = per_iteration;
  draws_ = draws_before + per_iteration * count;  // as unrolling numbers them
  draw_base_ = saved_base;
  draw_stride_ = saved_stride;
  draw_index_ = saved_index;
  draw_outer_static_ = saved_outer_static;
  draw_outer_base_ = saved_outer_base;
  if (per_iteration > 0 && draws_ > 0xffffffffLL)
    error(s.loc, "the loop at line " + std::to_string(s.loc.line) + " draws " +
                     std::to_string(per_iteration) + " numbers in each of its " +
                     std::to_string(count) +
                     " iterations, more than the 2^32 a step numbers; draw fewer, or step the "
                     "kernel (@hawk.kernel(steps=k)): every step numbers its draws anew");
  --real_loops_;
  real_loop_line_ = saved_line;
  --depth_;
  live_ = live_before;

  for (Carried& cv : carried) {
    std::vector<int> out;
    for (const int c : cv.c)
      out.push_back(add_loop_value(Op::LoopResult, k.values[c].type, c, end, k.values[c].name));
    Var& var = frame().vars[cv.name];
    var.value.comps = out;
  }
  for (const std::string& n : locals) {
    Var& var = frame().vars[n];
    var.maybe_undefined = true;
    var.undefined_line = s.loc.line;
    var.undefined_why = "'" + n + "' is first assigned inside the loop at line " +
                        std::to_string(s.loc.line) +
                        ", which has more iterations than a kernel unrolls and so runs as a "
                        "loop: its values stay inside the loop; assign '" +
                        n + "' before the loop to carry it out";
  }
  Var& loop_var = frame().vars[s.var];
  loop_var.maybe_undefined = true;
  loop_var.undefined_line = s.loc.line;
  loop_var.undefined_why = "the loop variable '" + s.var + "' after the loop at line " +
                           std::to_string(s.loc.line) +
                           " (which runs as a loop): count the iterations in a variable "
                           "assigned before the loop (n = n + 1 in the body)";
}

void Lowerer::throw_if_weak_carry(const std::string& name) const {
  for (auto it = loops_.rbegin(); it != loops_.rend(); ++it)
    if (it->frame_depth == frames_.size())
      if (auto w = it->weak_carries.find(name); w != it->weak_carries.end())
        throw FloatCarry{w->second};
}

TV Lowerer::choose(int cond, TV x, TV y, int param_slot, const std::string& n, parse::Loc loc,
                   const std::string& what, const std::string& otherwise) {
  const bool same = x.kind == y.kind && x.comps == y.comps && x.ival == y.ival &&
                    x.slot == y.slot && x.helper == y.helper && x.name == y.name &&
                    x.items.empty() && y.items.empty();
  if (same) return x;
  // A float assigned to a carry that entered its loop as an int made of constants: Python's
  // variable is a float from there on, so the kernel is lowered again with that carry a
  // float from the loop's entry (FloatCarry).
  if ((x.kind == TV::Kind::Float) != (y.kind == TV::Kind::Float) &&
      (x.kind == TV::Kind::IntVal || y.kind == TV::Kind::IntVal))
    throw_if_weak_carry(n);
  const bool weak_both = x.weakish() && y.weakish();
  // A select that keeps a left sample's value is used by that sample too: its predicate has
  // the liveness the innermost loop of this function started with, not the current one.
  const int saved_live = live_;
  if (!loops_.empty() && loops_.back().frame_depth == frames_.size())
    live_ = loops_.back().outer_live;
  struct Restore {
    int& live;
    int saved;
    ~Restore() { live = saved; }
  } restore{live_, saved_live};
  // An int made of constants only (TV::weak) meeting a float becomes a float.
  if (x.weakish() && y.kind == TV::Kind::Float) x = TV::f(to_float(x, loc, "a value"));
  if (y.weakish() && x.kind == TV::Kind::Float) y = TV::f(to_float(y, loc, "a value"));
  if (x.kind == TV::Kind::Int && y.kind == TV::Kind::Int) {
    x = TV::f(to_float(x, loc, "a value"));
    y = TV::f(to_float(y, loc, "a value"));
  }
  // A compile-time int meeting a runtime int is that int; an int meeting a float is an
  // error (name the type: float(i) or int(x)), as the branches of an `if` keep one type.
  if (x.kind == TV::Kind::Int && y.kind == TV::Kind::IntVal)
    x = TV::iv(to_int_value(x, loc, "a value"));
  if (y.kind == TV::Kind::Int && x.kind == TV::Kind::IntVal)
    y = TV::iv(to_int_value(y, loc, "a value"));
  const bool numeric_or_bool = x.kind == TV::Kind::Float || x.mapped() ||
                               x.kind == TV::Kind::Bool || x.kind == TV::Kind::IntVal;
  if (x.kind != y.kind || x.comps.size() != y.comps.size() || x.rows != y.rows || !numeric_or_bool)
    error(loc,
          "'" + n + "' is " + describe(x) + " " + what + " and " + describe(y) + " " + otherwise);
  for (size_t c = 0; c < x.comps.size(); ++c) {
    if (x.comps[c] == y.comps[c]) continue;
    if (param_slot >= 0) {
      if (x.comps[c] < 0) x.comps[c] = materialize(param_slot, static_cast<int>(c));
      if (y.comps[c] < 0) y.comps[c] = materialize(param_slot, static_cast<int>(c));
    }
    const Type ty = x.kind == TV::Kind::Bool                                      ? Type::B
                    : (x.kind == TV::Kind::IntVal || x.kind == TV::Kind::IVector) ? Type::I
                                                                                  : Type::F;
    const int sel = emit(Op::Select, ty, cond, x.comps[c], y.comps[c]);
    if (k.values[sel].name.empty())
      k.values[sel].name = x.mapped() ? n + "[" + std::to_string(c) + "]" : n;
    x.comps[c] = sel;
  }
  if (x.kind == TV::Kind::IntVal) x.weak = weak_both;
  return x;
}

}  // namespace raptor::ir::front
