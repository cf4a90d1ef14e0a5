// IR utilities: operator tables, the verifier, the printer and the canonical text used
// for digests. The data structures are in ir.hpp.
#include "ir/ir.hpp"
#include "ir/math_fns.hpp"

#include <cmath>
#include <cstdio>
#include <set>
#include <sstream>
#include <stdexcept>
#include <utility>

namespace raptor::ir {

namespace {

struct OpInfo {
  const char* name;
  int arity;
};

OpInfo info(Op op) {
  switch (op) {
    case Op::Const:
      return {"const", 0};
    case Op::LoadParam:
      return {"load_param", 0};
    case Op::LoadPlane:
      return {"load_plane", 0};
    case Op::LoadState:
      return {"load_state", 0};
    case Op::LoadMask:
      return {"load_mask", 0};
    case Op::LoadTable:
      return {"load_table", 1};
    case Op::Neg:
      return {"neg", 1};
    case Op::Sqrt:
      return {"sqrt", 1};
    case Op::Exp:
      return {"exp", 1};
    case Op::Log:
      return {"log", 1};
    case Op::Sin:
      return {"sin", 1};
    case Op::Cos:
      return {"cos", 1};
    case Op::Tan:
      return {"tan", 1};
    case Op::Tanh:
      return {"tanh", 1};
    case Op::Abs:
      return {"abs", 1};
    case Op::Floor:
      return {"floor", 1};
    case Op::Sign:
      return {"sign", 1};
    case Op::Add:
      return {"add", 2};
    case Op::Sub:
      return {"sub", 2};
    case Op::Mul:
      return {"mul", 2};
    case Op::Div:
      return {"div", 2};
    case Op::Pow:
      return {"pow", 2};
    case Op::Atan2:
      return {"atan2", 2};
    case Op::Min:
      return {"min", 2};
    case Op::Max:
      return {"max", 2};
    case Op::PowI:
      return {"powi", 1};
    case Op::Lt:
      return {"lt", 2};
    case Op::Le:
      return {"le", 2};
    case Op::Gt:
      return {"gt", 2};
    case Op::Ge:
      return {"ge", 2};
    case Op::Eq:
      return {"eq", 2};
    case Op::Ne:
      return {"ne", 2};
    case Op::Not:
      return {"not", 1};
    case Op::And:
      return {"and", 2};
    case Op::Or:
      return {"or", 2};
    case Op::Select:
      return {"select", 3};
    case Op::ToIndex:
      return {"to_index", 1};
    case Op::SampleIndex:
      return {"sample_index", 0};
    case Op::NSamples:
      return {"n_samples", 0};
    case Op::RandUniform:
      return {"rand_uniform", 0};
    case Op::RandNormal:
      return {"rand_normal", 0};
    case Op::StopGrad:
      return {"stop_grad", 1};
    case Op::CustomJvp:
      return {"custom_jvp", 3};
    case Op::FloorDiv:
      return {"floordiv", 2};
    case Op::Mod:
      return {"mod", 2};
    case Op::ToFloat:
      return {"to_float", 1};
    case Op::ToInt:
      return {"to_int", 1};
    case Op::LoopBegin:
      return {"loop_begin", 0};
    case Op::LoopCarry:
      return {"loop_carry", 2};
    case Op::LoopIndex:
      return {"loop_index", 1};
    case Op::LoopNext:
      return {"loop_next", 2};
    case Op::LoopEnd:
      return {"loop_end", 2};
    case Op::LoopResult:
      return {"loop_result", 2};
    case Op::RandUniformAt:
      return {"rand_uniform_at", 1};
    case Op::RandNormalAt:
      return {"rand_normal_at", 1};
    case Op::RandGamma:
      return {"rand_gamma", 2};
    case Op::RandPoisson:
      return {"rand_poisson", 2};
    case Op::RandInt:
      return {"rand_int", 3};
    case Op::RandTruncNormal:
      return {"rand_truncated_normal", 3};
    case Op::RandNormalVec:
      return {"rand_normal_vec", 1};
    case Op::RandGammaGrad:
      return {"random_gamma_grad", 2};
    default:
      break;
  }
  if (const MathFn* f = math_fn(op)) return {f->name, f->arity};
  return {"?", 0};
}

const char* type_name(Type t) {
  switch (t) {
    case Type::F:
      return "f";
    case Type::B:
      return "b";
    case Type::I:
      return "i";
  }
  return "?";
}

// The type each operand of `op` must have, given the value's own type (comparisons: the
// type of their first operand, F or I, checked in verify).
Type operand_type(Op op, int i, Type result) {
  switch (op) {
    case Op::LoadTable:
    case Op::FloorDiv:
    case Op::Mod:
    case Op::ToFloat:
    case Op::RandUniformAt:
    case Op::RandNormalAt:
    case Op::RandNormalVec:
    case Op::RandInt:
      return Type::I;  // the draw index; a RandInt's bounds
    case Op::RandGamma:
    case Op::RandPoisson:
    case Op::RandTruncNormal:
      return i == 0 ? Type::I : Type::F;
    case Op::ToInt:
      return Type::F;
    case Op::Add:
    case Op::Sub:
    case Op::Mul:
    case Op::Neg:
    case Op::Abs:
    case Op::Min:
    case Op::Max:
      return result == Type::I ? Type::I : Type::F;
    case Op::Not:
    case Op::And:
    case Op::Or:
      return Type::B;
    case Op::Select:
      return i == 0 ? Type::B : result;
    case Op::ToIndex:
      return Type::F;
    case Op::LoopCarry:
    case Op::LoopResult:
      return i == 0 ? result : Type::B;
    case Op::LoopIndex:
    case Op::LoopEnd:
      return Type::B;
    case Op::LoopNext:
      return result;
    default:
      return Type::F;
  }
}

[[noreturn]] void fail(const Kernel& k, int v, const std::string& why) {
  throw std::logic_error("raptor IR verifier: kernel '" + k.name + "' value %" + std::to_string(v) +
                         ": " + why);
}

std::string number(double d) {
  char buf[40];
  std::snprintf(buf, sizeof buf, "%.17g", d);
  return buf;
}

}  // namespace

const char* op_name(Op op) { return info(op).name; }

const char* dtype_name(Dtype d) {
  switch (d) {
    case Dtype::Float:
      return "float";
    case Dtype::Int32:
      return "int32";
    case Dtype::Int64:
      return "int64";
    case Dtype::Bool:
      return "bool";
  }
  return "?";
}

Type value_type(Dtype d) {
  switch (d) {
    case Dtype::Int32:
    case Dtype::Int64:
      return Type::I;
    case Dtype::Bool:
      return Type::B;
    default:
      return Type::F;
  }
}
int op_arity(Op op) { return info(op).arity; }

const char* combine_name(Combine c) {
  switch (c) {
    case Combine::Sum:
      return "sum";
    case Combine::Min:
      return "min";
    case Combine::Max:
      return "max";
  }
  return "?";
}

const char* slot_kind_name(SlotKind k) {
  switch (k) {
    case SlotKind::Param:
      return "param";
    case SlotKind::Plane:
      return "plane";
    case SlotKind::Mutable:
      return "mutable";
    case SlotKind::Terminated:
      return "terminated";
    case SlotKind::Table:
      return "table";
    case SlotKind::ParamSum:
      return "param_sum";
    case SlotKind::TableSum:
      return "table_sum";
    case SlotKind::Random:
      return "random";
  }
  return "?";
}

bool is_loop_op(Op op) {
  return op == Op::LoopBegin || op == Op::LoopCarry || op == Op::LoopIndex || op == Op::LoopNext ||
         op == Op::LoopEnd || op == Op::LoopResult;
}

bool is_draw(Op op) {
  switch (op) {
    case Op::RandUniform:
    case Op::RandNormal:
    case Op::RandUniformAt:
    case Op::RandNormalAt:
    case Op::RandGamma:
    case Op::RandPoisson:
    case Op::RandInt:
    case Op::RandTruncNormal:
    case Op::RandNormalVec:
      return true;
    default:
      return false;
  }
}

Type result_type(Op op, Type declared) {
  switch (op) {
    case Op::LoopCarry:
    case Op::LoopNext:
    case Op::LoopResult:
    case Op::Const:
    case Op::Select:
    case Op::LoadParam:
    case Op::LoadPlane:
    case Op::LoadState:
      return declared;
    case Op::Add:
    case Op::Sub:
    case Op::Mul:
    case Op::Neg:
    case Op::Abs:
    case Op::Min:
    case Op::Max:
      return declared == Type::I ? Type::I : Type::F;
    case Op::FloorDiv:
    case Op::Mod:
    case Op::ToInt:
    case Op::RandPoisson:
    case Op::RandInt:
      return Type::I;
    case Op::LoadMask:
      return Type::B;
    case Op::Lt:
    case Op::Le:
    case Op::Gt:
    case Op::Ge:
    case Op::Eq:
    case Op::Ne:
    case Op::Not:
    case Op::And:
    case Op::Or:
      return Type::B;
    case Op::ToIndex:
    case Op::LoopIndex:
    case Op::SampleIndex:
    case Op::NSamples:
      return Type::I;
    case Op::LoopBegin:
    case Op::LoopEnd:
      return Type::B;
    default:
      if (const MathFn* f = math_fn(op)) return f->result;
      return Type::F;
  }
}

int Kernel::find_slot(const std::string& slot_name) const {
  for (size_t i = 0; i < slots.size(); ++i)
    if (slots[i].name == slot_name) return static_cast<int>(i);
  return -1;
}

int Kernel::random_slot() const {
  for (size_t i = 0; i < slots.size(); ++i)
    if (slots[i].kind == SlotKind::Random) return static_cast<int>(i);
  return -1;
}

bool Kernel::has_mask() const {
  for (const auto& s : slots)
    if (s.kind == SlotKind::Terminated) return true;
  return false;
}

void verify(const Kernel& k) {
  const int nv = static_cast<int>(k.values.size());
  const int ns = static_cast<int>(k.slots.size());
  auto check_ref = [&](int user, int ref, Type want, const char* what) {
    if (ref < 0 || ref >= nv) fail(k, user, std::string(what) + " refers to a missing value");
    if (ref >= user && user >= 0) fail(k, user, std::string(what) + " is defined after its use");
    if (k.values[ref].type != want)
      fail(k, user,
           std::string(what) + " %" + std::to_string(ref) + " has type " +
               type_name(k.values[ref].type) + ", expected " + type_name(want));
  };
  // Loops: scope[i] is the innermost LoopBegin holding value i (-1: none), parent[b] the
  // loop holding loop b; a value may be used where its scope encloses the user's.
  std::vector<int> scope(nv, -1), parent(nv, -1), end_of(nv, -1);
  std::vector<int> open;
  auto encloses = [&](int outer, int inner) {
    for (int s = inner;; s = parent[s]) {
      if (s == outer) return true;
      if (s < 0) return false;
    }
  };
  for (int i = 0; i < nv; ++i) {
    const Value& v = k.values[i];
    scope[i] = open.empty() ? -1 : open.back();
    auto in_loop = [&](int ref, const char* what) {
      if (ref < 0 || ref >= i || k.values[ref].op != Op::LoopBegin || open.empty() ||
          open.back() != ref)
        fail(k, i, std::string(what) + " does not name the innermost open loop_begin");
    };
    auto carry_of = [&](int ref, int begin) {
      if (ref < 0 || ref >= i || k.values[ref].op != Op::LoopCarry ||
          k.values[ref].args[1] != begin)
        fail(k, i, "loop value does not name a loop_carry of its loop");
    };
    switch (v.op) {
      case Op::LoopBegin:
        if (v.iimm < 1) fail(k, i, "a loop of fewer than 1 iteration");
        parent[i] = scope[i];
        open.push_back(i);
        break;
      case Op::LoopCarry:
        in_loop(v.args[1], "loop_carry");
        if (v.args[0] >= v.args[1])
          fail(k, i, "a loop_carry's entry value is defined inside its loop");
        break;
      case Op::LoopIndex:
        in_loop(v.args[0], "loop_index");
        break;
      case Op::LoopNext:
        if (open.empty()) fail(k, i, "loop_next outside a loop");
        carry_of(v.args[0], open.back());
        break;
      case Op::LoopEnd:
        in_loop(v.args[0], "loop_end");
        end_of[v.args[0]] = i;
        open.pop_back();  // the loop_end itself is the loop's last value
        break;
      case Op::LoopResult: {
        const int c = v.args[0];
        if (c < 0 || c >= i || k.values[c].op != Op::LoopCarry)
          fail(k, i, "loop_result of a value that is not a loop_carry");
        const int b = k.values[c].args[1];
        if (end_of[b] < 0 || v.args[1] != end_of[b])
          fail(k, i, "loop_result does not name its loop's loop_end");
        break;
      }
      default:
        break;
    }
    const int here = scope[i];
    for (int a = 0; a < op_arity(v.op); ++a) {
      const int ref = v.args[a];
      if (ref < 0 || ref >= i) continue;                // reported below
      const bool closed_loop = v.op == Op::LoopResult;  // names its carry and loop_end
      const bool loop_link = (v.op == Op::LoopCarry && a == 1) || (v.op == Op::LoopIndex) ||
                             (v.op == Op::LoopEnd && a == 0);
      if (closed_loop || loop_link) continue;
      if (!encloses(scope[ref], here))
        fail(k, i,
             "operand %" + std::to_string(ref) + " is defined inside a loop this value is not in");
    }
    if (v.pred >= 0 && v.pred < i && !encloses(scope[v.pred], here))
      fail(k, i,
           "predicate %" + std::to_string(v.pred) +
               " is defined inside a loop this value is not in");
  }
  if (!open.empty()) fail(k, open.back(), "loop_begin without its loop_end");
  auto outside = [&](int ref, const char* what) {
    if (ref >= 0 && ref < nv && scope[ref] != -1)
      fail(k, -1, std::string(what) + " %" + std::to_string(ref) + " is defined inside a loop");
  };
  for (const Store& s : k.stores) {
    outside(s.value, "stored value");
    outside(s.index, "table_sum index");
    outside(s.pred, "store predicate");
  }
  outside(k.terminate, "terminate");
  for (int i = 0; i < nv; ++i) {
    const Value& v = k.values[i];
    if (v.type != result_type(v.op, v.type))
      fail(k, i, "wrong result type for " + std::string(op_name(v.op)));
    const int arity = op_arity(v.op);
    const bool compare = v.op == Op::Lt || v.op == Op::Le || v.op == Op::Gt || v.op == Op::Ge ||
                         v.op == Op::Eq || v.op == Op::Ne;
    Type compared = Type::F;
    if (compare && v.args[0] >= 0 && v.args[0] < i) compared = k.values[v.args[0]].type;
    if (compare && compared == Type::B) fail(k, i, "comparison of bools");
    for (int a = 0; a < 3; ++a) {
      if (a < arity)
        check_ref(i, v.args[a], compare ? compared : operand_type(v.op, a, v.type), "operand");
      else if (v.args[a] != -1)
        fail(k, i, "extra operand");
    }
    if (v.pred != -1) check_ref(i, v.pred, Type::B, "predicate");
    switch (v.op) {
      case Op::LoadParam:
      case Op::LoadPlane:
      case Op::LoadState:
      case Op::LoadTable: {
        if (v.slot < 0 || v.slot >= ns) fail(k, i, "load from a missing slot");
        const Slot& s = k.slots[v.slot];
        const SlotKind want = v.op == Op::LoadParam   ? SlotKind::Param
                              : v.op == Op::LoadTable ? SlotKind::Table
                              : v.op == Op::LoadState ? SlotKind::Mutable
                                                      : s.kind;
        if (s.kind != want) fail(k, i, "load of the wrong slot kind");
        if (v.op == Op::LoadPlane && s.kind != SlotKind::Plane &&
            !(s.kind == SlotKind::Mutable && s.inout))
          fail(k, i, "load_plane of a slot that is not read");
        if (v.comp < 0 || v.comp >= s.width) fail(k, i, "component out of range");
        const Type want_type = v.op == Op::LoadTable ? Type::F : value_type(s.dtype);
        if (v.type != want_type) fail(k, i, "load of the wrong type for slot '" + s.name + "'");
        break;
      }
      case Op::LoadMask:
        if (!k.has_mask()) fail(k, i, "load_mask in a kernel without a Terminated slot");
        break;
      case Op::RandUniform:
      case Op::RandNormal:
      case Op::RandUniformAt:
      case Op::RandNormalAt:
      case Op::RandGamma:
      case Op::RandPoisson:
      case Op::RandInt:
      case Op::RandTruncNormal:
      case Op::RandNormalVec:
        if (v.op == Op::RandNormalVec &&
            !(v.imm >= 0 && v.imm < 4294967296.0 && v.imm == std::floor(v.imm)))
          fail(k, i, "a vector draw's element is not an integer in uint32");
        if (v.slot < 0 || v.slot >= ns || k.slots[v.slot].kind != SlotKind::Random)
          fail(k, i, "a draw from a slot that is not Random");
        if (v.comp < 0) fail(k, i, "a negative draw index");
        if (v.iimm < 0 || v.iimm > 0xffffffffLL) fail(k, i, "a step offset outside uint32");
        break;
      case Op::Const:
        if (v.type == Type::I && v.imm != 0.0) fail(k, i, "index constant with a float value");
        break;
      default:
        break;
    }
  }
  std::set<std::pair<int, int>> stored;
  for (const Store& s : k.stores) {
    if (s.slot < 0 || s.slot >= ns) fail(k, -1, "store to a missing slot");
    const Slot& slot = k.slots[s.slot];
    if (s.comp < 0 || s.comp >= slot.width) fail(k, -1, "store component out of range");
    check_ref(-1, s.value, value_type(slot.dtype), "stored value");
    if (s.pred != -1) check_ref(-1, s.pred, Type::B, "store predicate");
    if (slot.kind == SlotKind::Mutable) {
      if (!stored.insert({s.slot, s.comp}).second)
        fail(k, -1, "two stores to " + slot.name + "[" + std::to_string(s.comp) + "]");
      if (s.pred != -1) fail(k, -1, "a Mutable store has a predicate");
    } else if (slot.kind == SlotKind::TableSum) {
      check_ref(-1, s.index, Type::I, "table_sum index");
    } else if (slot.kind != SlotKind::ParamSum) {
      fail(k, -1,
           "store to " + std::string(slot_kind_name(slot.kind)) + " slot '" + slot.name + "'");
    }
  }
  int randoms = 0;
  for (int s = 0; s < ns; ++s) {
    const Slot& slot = k.slots[s];
    if (slot.kind == SlotKind::Random && ++randoms > 1) fail(k, -1, "two Random slots");
    if (slot.combine != Combine::Sum && slot.kind != SlotKind::ParamSum)
      fail(k, -1, "slot '" + slot.name + "' combines by " + combine_name(slot.combine) +
                      " but is no param_sum");
    if (slot.kind == SlotKind::Mutable)
      for (int c = 0; c < slot.width; ++c)
        if (!stored.count({s, c}))
          fail(k, -1,
               "Mutable '" + slot.name + "' component " + std::to_string(c) + " is never stored");
    // A scatter target (inout) is its own table; a Table's cotangent names the Table.
    if (slot.kind == SlotKind::TableSum &&
        (slot.inout ? slot.table_of != s
                    : (slot.table_of < 0 || slot.table_of >= ns ||
                       k.slots[slot.table_of].kind != SlotKind::Table)))
      fail(k, -1, "table_sum '" + slot.name + "' does not name a table");
  }
  if (k.terminate != -1) {
    check_ref(-1, k.terminate, Type::B, "terminate");
    if (!k.has_mask()) fail(k, -1, "terminate in a kernel without a Terminated slot");
  }
  if (k.steps < 1) fail(k, -1, "steps must be >= 1");
}

namespace {

void print_value(std::ostringstream& os, const Kernel& k, int i, bool with_names) {
  const Value& v = k.values[i];
  os << "%" << i << ":" << type_name(v.type) << " = " << op_name(v.op);
  switch (v.op) {
    case Op::Const:
      if (v.type == Type::I)
        os << " " << v.iimm;
      else if (v.type == Type::B)
        os << (v.imm != 0.0 ? " true" : " false");
      else
        os << " " << number(v.imm);
      break;
    case Op::LoadParam:
    case Op::LoadPlane:
    case Op::LoadState:
    case Op::LoadTable:
      os << " " << (with_names ? k.slots[v.slot].name : "$" + std::to_string(v.slot)) << "["
         << v.comp << "]";
      break;
    case Op::PowI:
      os << " ^" << v.iimm;
      break;
    case Op::LoopBegin:
      os << " x" << v.iimm;
      break;
    case Op::RandUniformAt:
    case Op::RandNormalAt:
    case Op::RandUniform:
    case Op::RandNormal:
    case Op::RandGamma:
    case Op::RandPoisson:
    case Op::RandInt:
    case Op::RandTruncNormal:
    case Op::RandNormalVec:
      if (v.op == Op::RandNormalVec) os << " element " << number(v.imm);
      os << " " << (with_names ? k.slots[v.slot].name : "$" + std::to_string(v.slot)) << " draw "
         << v.comp << " step+" << v.iimm;
      break;
    default:
      break;
  }
  for (int a = 0; a < op_arity(v.op); ++a)
    os << (a == 0 && v.op != Op::LoadTable ? " %" : ", %") << v.args[a];
  if (v.pred != -1) os << " if %" << v.pred;
}

}  // namespace

std::string print(const Kernel& k) {
  std::ostringstream os;
  os << "kernel " << k.name << " steps=" << k.steps << (k.active_set ? " active_set" : "") << "\n";
  for (size_t s = 0; s < k.slots.size(); ++s) {
    const Slot& slot = k.slots[s];
    os << "  $" << s << " " << slot_kind_name(slot.kind) << " " << slot.name
       << " width=" << slot.width << (slot.inout ? " inout" : "");
    if (slot.dtype != Dtype::Float) os << " " << dtype_name(slot.dtype);
    if (slot.kind == SlotKind::TableSum) os << " of $" << slot.table_of;
    if (slot.combine != Combine::Sum) os << " " << combine_name(slot.combine);
    os << "\n";
  }
  for (size_t i = 0; i < k.values.size(); ++i) {
    std::ostringstream line;
    print_value(line, k, static_cast<int>(i), true);
    os << "  " << line.str();
    const Value& v = k.values[i];
    if (!v.name.empty() || v.loc.line > 0) {
      os << "  ;";
      if (!v.name.empty()) os << " " << v.name;
      if (v.loc.line > 0) os << " (line " << v.loc.line << ")";
    }
    os << "\n";
  }
  for (const Store& s : k.stores) {
    os << "  store " << k.slots[s.slot].name << "[" << s.comp << "]";
    if (s.index != -1) os << " at %" << s.index;
    os << " = %" << s.value;
    if (s.pred != -1) os << " if %" << s.pred;
    os << "\n";
  }
  if (k.terminate != -1) os << "  terminate if %" << k.terminate << "\n";
  return os.str();
}

std::string canonical(const Kernel& k) {
  std::ostringstream os;
  os << "raptor-ir-1 " << k.name << " steps=" << k.steps << " active=" << k.active_set << "\n";
  for (const Slot& slot : k.slots)
    os << static_cast<int>(slot.kind) << " " << slot.name << " " << slot.width << " "
       << slot.is_vector << " " << slot.inout << " " << slot.table_of
       << (slot.rows ? " rows=" + std::to_string(slot.rows) : std::string())
       << (slot.dtype != Dtype::Float ? std::string(" ") + dtype_name(slot.dtype) : "")
       << (slot.combine != Combine::Sum ? std::string(" ") + combine_name(slot.combine) : "")
       << "\n";
  for (size_t i = 0; i < k.values.size(); ++i) {
    std::ostringstream line;
    print_value(line, k, static_cast<int>(i), false);
    os << line.str() << "\n";
  }
  for (const Store& s : k.stores)
    os << "st " << s.slot << " " << s.comp << " " << s.value << " " << s.index << " " << s.pred
       << "\n";
  os << "term " << k.terminate << "\n";
  for (const Kernel::StageLink& l : k.stage_links) os << "stage " << l.sum << " " << l.param << "\n";
  return os.str();
}

}  // namespace raptor::ir
