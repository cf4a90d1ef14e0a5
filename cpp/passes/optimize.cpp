// Folding, CSE and DCE over the straight-line IR (see optimize.hpp). Start at `fold_and_cse`.
#include "passes/optimize.hpp"

#include <bit>
#include <cmath>
#include <map>
#include <optional>
#include <tuple>
#include <vector>

#include "passes/eval.hpp"

namespace raptor::passes {

using ir::Kernel;
using ir::Op;
using ir::Type;
using ir::Value;

namespace {

bool is_const(const Kernel& k, int v, double want) {
  const Value& x = k.values[v];
  return x.op == Op::Const && x.type == Type::F && x.imm == want && !std::signbit(x.imm);
}

bool const_bool(const Kernel& k, int v, bool& out) {
  const Value& x = k.values[v];
  if (x.op != Op::Const || x.type != Type::B) return false;
  out = x.imm != 0.0;
  return true;
}

// An identity that replaces value `i` by one of its operands, or -1.
int identity(const Kernel& k, int i) {
  const Value& v = k.values[i];
  const int a = v.args[0], b = v.args[1];
  bool c = false;
  switch (v.op) {
    case Op::Mul:
      if (is_const(k, b, 1.0)) return a;
      if (is_const(k, a, 1.0)) return b;
      return -1;
    case Op::Div:
      return is_const(k, b, 1.0) ? a : -1;
    case Op::Sub:
      return is_const(k, b, 0.0) ? a : -1;
    case Op::Neg:
      return k.values[a].op == Op::Neg ? k.values[a].args[0] : -1;
    case Op::Not:
      return k.values[a].op == Op::Not ? k.values[a].args[0] : -1;
    case Op::PowI:
      return v.iimm == 1 ? a : -1;
    case Op::StopGrad:  // a constant has no derivative to stop
      return k.values[a].op == Op::Const ? a : -1;
    case Op::CustomJvp:  // no derivative term: d args[1] is 0 or its factor is
      return k.values[b].op == Op::Const || is_const(k, v.args[2], 0.0) ? a : -1;
    case Op::Select:
      if (v.args[1] == v.args[2]) return v.args[1];
      if (const_bool(k, a, c)) return c ? v.args[1] : v.args[2];
      return -1;
    case Op::And:
      if (const_bool(k, a, c)) return c ? b : a;
      if (const_bool(k, b, c)) return c ? a : b;
      return a == b ? a : -1;
    case Op::Or:
      if (const_bool(k, a, c)) return c ? a : b;
      if (const_bool(k, b, c)) return c ? b : a;
      return a == b ? a : -1;
    default:
      return -1;
  }
}

using Key = std::tuple<int, int, int, int, int, int, int, uint64_t, int64_t, int>;

Key key_of(const Value& v) {
  return {static_cast<int>(v.op),
          static_cast<int>(v.type),
          v.args[0],
          v.args[1],
          v.args[2],
          v.slot,
          v.comp,
          std::bit_cast<uint64_t>(v.imm),
          v.iimm,
          v.pred};
}

}  // namespace

void fold_and_cse(Kernel& k) {
  const int n = static_cast<int>(k.values.size());
  std::vector<int> repl(n);
  std::map<Key, int> seen;
  // The keys each open loop added: a value inside a loop is not visible after it.
  std::vector<std::vector<Key>> scopes;
  auto map = [&](int v) { return v < 0 ? v : repl[v]; };
  for (int i = 0; i < n; ++i) {
    Value& v = k.values[i];
    for (int& a : v.args) a = map(a);
    v.pred = map(v.pred);
    if (v.pred >= 0) {  // a constant-true predicate is no predicate
      bool c = false;
      if (const_bool(k, v.pred, c) && c) v.pred = -1;
    }
    repl[i] = i;
    if (ir::is_loop_op(v.op)) {  // never merged: each is its own loop's
      if (v.op == Op::LoopBegin) scopes.emplace_back();
      if (v.op == Op::LoopEnd) {
        for (const Key& key : scopes.back()) seen.erase(key);
        scopes.pop_back();
      }
      continue;
    }
    if (foldable(v.op) && v.op != Op::Const) {
      const int arity = ir::op_arity(v.op);
      const Value* args[3] = {nullptr, nullptr, nullptr};
      bool all = true;
      for (int a = 0; a < arity && all; ++a) {
        args[a] = &k.values[v.args[a]];
        all = args[a]->op == Op::Const;
      }
      std::optional<Value> folded;
      if (all) folded = fold_const(v.op, v.type, args, v.iimm);
      if (folded) {
        v = *folded;
      } else if (const int id = identity(k, i); id >= 0) {
        repl[i] = id;
        continue;
      }
    }
    if (v.op == Op::Const) v.pred = -1;
    const auto [it, inserted] = seen.emplace(key_of(v), i);
    if (inserted && !scopes.empty()) scopes.back().push_back(it->first);
    if (!inserted) {
      // Keep the user's variable name on the surviving value when it has none.
      if (k.values[it->second].name.empty()) k.values[it->second].name = v.name;
      repl[i] = it->second;
    }
  }
  for (ir::Store& s : k.stores) {
    s.value = map(s.value);
    s.index = map(s.index);
    s.pred = map(s.pred);
    if (s.pred >= 0) {
      bool c = false;
      if (const_bool(k, s.pred, c) && c) s.pred = -1;
    }
  }
  k.terminate = map(k.terminate);
}

void dce(Kernel& k) {
  const int n = static_cast<int>(k.values.size());
  std::vector<char> live(n, 0);
  auto mark = [&](int v) {
    if (v >= 0) live[v] = 1;
  };
  for (const ir::Store& s : k.stores) {
    mark(s.value);
    mark(s.index);
    mark(s.pred);
  }
  mark(k.terminate);
  // A loop keeps its structure and what it carries (a loop whose results are unused still
  // runs; its body's dead values go).
  for (int i = 0; i < n; ++i) {
    const Op op = k.values[i].op;
    if (op == Op::LoopBegin || op == Op::LoopCarry || op == Op::LoopNext || op == Op::LoopEnd)
      live[i] = 1;
  }
  for (int i = n - 1; i >= 0; --i) {
    if (!live[i]) continue;
    const Value& v = k.values[i];
    for (int a = 0; a < ir::op_arity(v.op); ++a) mark(v.args[a]);
    mark(v.pred);
  }
  std::vector<int> remap(n, -1);
  std::vector<Value> kept;
  kept.reserve(n);
  for (int i = 0; i < n; ++i) {
    if (!live[i]) continue;
    Value v = k.values[i];
    for (int& a : v.args)
      if (a >= 0) a = remap[a];
    if (v.pred >= 0) v.pred = remap[v.pred];
    remap[i] = static_cast<int>(kept.size());
    kept.push_back(std::move(v));
  }
  auto map = [&](int v) { return v < 0 ? v : remap[v]; };
  for (ir::Store& s : k.stores) {
    s.value = map(s.value);
    s.index = map(s.index);
    s.pred = map(s.pred);
  }
  k.terminate = map(k.terminate);
  k.values = std::move(kept);
}

void optimize(Kernel& k) {
  fold_and_cse(k);
  dce(k);
}

}  // namespace raptor::passes
