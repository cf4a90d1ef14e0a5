// The front end's statements and kernel assembly (see lower.hpp). Start at `Lowerer::run`:
// it parses the source, binds parameters to slots, lowers the body statement by statement,
// and turns the final values of Mutable parameters and of the mask into stores.
#include "ir/lower.hpp"

#include <algorithm>
#include <cmath>
#include <set>

#include "ir/lower_ctx.hpp"
#include "parse/parser.hpp"

namespace raptor::ir {

namespace front {

namespace {

const char* refusal_for(const std::string& keyword) {
  if (keyword == "while")
    return "`while` loops are not allowed in a kernel; use `for i in range(K)` with K known when "
           "the kernel is defined, or a stepping kernel (@hawk.kernel(steps=k)) that sets a "
           "Terminated mask";
  if (keyword == "import" || keyword == "from")
    return "imports are not allowed inside a kernel; import at module level and use the names";
  if (keyword == "def" || keyword == "lambda")
    return "functions cannot be defined inside a kernel; define a @hawk.func helper at module "
           "level";
  return nullptr;
}

}  // namespace

std::string describe(const TV& v) {
  switch (v.kind) {
    case TV::Kind::Float:
      return "a Scalar";
    case TV::Kind::Vector:
      return "a Vector[" + std::to_string(v.comps.size()) + "]";
    case TV::Kind::Matrix:
      return "a Matrix[" + std::to_string(v.rows) + ", " + std::to_string(v.cols()) + "]";
    case TV::Kind::Bool:
      return "a bool";
    case TV::Kind::Int:
      return "an integer";
    case TV::Kind::IntVal:
      return "an int";
    case TV::Kind::IVector:
      return "a Vector[" + std::to_string(v.comps.size()) + "] of ints";
    case TV::Kind::Tuple:
      return "a tuple of " + std::to_string(v.items.size());
    case TV::Kind::Table:
      return "a Table";
    case TV::Kind::Random:
      return "the Random parameter (draw numbers from it with .uniform() or .normal())";
    case TV::Kind::Math:
      return "the function " + v.name;
    case TV::Kind::Helper:
      return "a helper function";
    case TV::Kind::Module:
      return "a module";
    case TV::Kind::SumOut:
      return "a Mutable[Param] sum output";
    case TV::Kind::Scatter:
      return "a Mutable[Table] scatter target";
  }
  return "a value";
}

Lowerer::Lowerer(const KernelSpec& spec, std::set<CarryKey> float_carries)
    : spec_(spec), float_carries_(std::move(float_carries)) {
  k.name = spec.fn.name;
  k.file = spec.fn.file;
  k.steps = spec.steps;
  k.active_set = spec.active_set;
}

void Lowerer::error(parse::Loc loc, const std::string& message) const {
  std::string msg = message;
  const FunctionSource* fn = frames_.empty() ? &spec_.fn : frames_.back().fn;
  if (!frames_.empty() && frames_.back().helper >= 0)
    msg += " (in helper '" + fn->name + "', inlined into the kernel)";
  throw SourceError(spec_.fn.name, fn->file, loc.line, loc.col, msg);
}

Kernel Lowerer::run() {
  parse::FunctionDef def;
  try {
    def = parse::parse_function(spec_.fn.source, spec_.fn.first_line);
  } catch (const ParseError& e) {
    throw SourceError(spec_.fn.name, spec_.fn.file, e.line, e.col, "syntax: " + e.message);
  }
  frames_.push_back(Frame{&spec_.fn, {}, -1});
  add_source(spec_.fn);

  if (spec_.steps < 1)
    error(def.loc, "steps must be at least 1, got " + std::to_string(spec_.steps));
  if (def.params.size() != spec_.params.size())
    error(def.loc, "the signature changed between Python and the compiler (internal error)");
  bool has_output = false;
  int masks = 0;
  std::string random_name;
  for (size_t i = 0; i < def.params.size(); ++i) {
    const parse::Param& p = def.params[i];
    const ParamSpec& ps = spec_.params[i];
    if (p.has_default)
      error(p.loc, "parameter '" + p.name +
                       "' has a default value; kernel parameters take no "
                       "defaults (pass every value when binding)");
    if (!ps.error.empty()) error(p.loc, ps.error);
    Slot slot;
    slot.name = ps.name;
    slot.kind = ps.kind;
    slot.width = ps.width;
    slot.is_vector = ps.is_vector;
    slot.rows = ps.rows;
    slot.dtype = ps.dtype;
    if (ps.dtype != Dtype::Float && ps.kind != SlotKind::Param && ps.kind != SlotKind::Plane &&
        ps.kind != SlotKind::Mutable)
      error(p.loc, "parameter '" + p.name +
                       "': only Param, Scalar, Vector[k] and Mutable planes "
                       "can be integer or bool; a " +
                       slot_kind_name(ps.kind) + " holds floats");
    if (ps.dtype == Dtype::Bool && ps.is_vector)
      error(p.loc, "parameter '" + p.name +
                       "': a bool plane is Scalar[hawk.bool_]; a Vector of "
                       "bools is not supported (use one Scalar[hawk.bool_] per component)");
    k.slots.push_back(slot);
    const int s = static_cast<int>(k.slots.size()) - 1;
    Var var;
    var.param_slot = s;
    const Type vt = value_type(ps.dtype);
    const auto scalar = [&]() {
      return vt == Type::I ? TV::iv(-1) : vt == Type::B ? TV::b(-1) : TV::f(-1);
    };
    switch (ps.kind) {
      case SlotKind::Param:
        var.value = scalar();
        break;
      case SlotKind::Plane:
      case SlotKind::Mutable:
        var.value = ps.rows > 0     ? TV::mat(std::vector<int>(ps.width, -1), ps.rows)
                    : !ps.is_vector ? scalar()
                    : vt == Type::I ? TV::ivec(std::vector<int>(ps.width, -1))
                                    : TV::vec(std::vector<int>(ps.width, -1));
        has_output |= ps.kind == SlotKind::Mutable;
        break;
      case SlotKind::Terminated:
        var.value = TV::b(kbool(false));
        has_output = true;
        if (++masks > 1) error(p.loc, "a kernel has at most one Terminated parameter");
        break;
      case SlotKind::Table: {
        TV t;
        t.kind = TV::Kind::Table;
        t.slot = s;
        var.value = t;
        break;
      }
      case SlotKind::ParamSum: {  // Mutable[Param]: `out = hawk.sum(x)` (reduce_stmt)
        if (spec_.steps > 1)
          error(p.loc, "parameter '" + p.name +
                           "': a Mutable[Param] sum output in a kernel of steps=" +
                           std::to_string(spec_.steps) +
                           " is not supported; sum over samples in a kernel of one step");
        TV t;
        t.kind = TV::Kind::SumOut;
        t.slot = s;
        var.value = t;
        has_output = true;
        break;
      }
      case SlotKind::TableSum: {  // Mutable[Table[...]]: `hawk.scatter(t)[i] += v`
        if (spec_.steps > 1)
          error(p.loc, "parameter '" + p.name +
                           "': a Mutable[Table] scatter target in a kernel of steps=" +
                           std::to_string(spec_.steps) +
                           " is not supported; scatter in a kernel of one step");
        if (ps.rows > 0)
          error(p.loc, "parameter '" + p.name +
                           "': a Mutable[Table[Matrix[r, c]]] scatter target is not supported; "
                           "use Mutable[Table[Scalar]] or Mutable[Table[Vector[k]]]");
        k.slots[s].inout = true;  // the bound values are added to
        k.slots[s].table_of = s;  // its own table: M is its bound array's
        TV t;
        t.kind = TV::Kind::Scatter;
        t.slot = s;
        var.value = t;
        has_output = true;
        break;
      }
      case SlotKind::Random: {
        if (!random_name.empty())
          error(p.loc, "kernel '" + def.name + "' has two Random parameters ('" + random_name +
                           "' and '" + p.name +
                           "'); a kernel takes at most one: draw every number from '" +
                           random_name + "' (its draws are independent)");
        random_name = p.name;
        TV t;
        t.kind = TV::Kind::Random;
        t.slot = s;
        var.value = t;
        break;
      }
      default:
        error(p.loc, "parameter '" + p.name + "' has a kind users cannot declare");
    }
    frame().vars[p.name] = var;
  }
  if (!has_output)
    error(def.loc, "kernel '" + def.name +
                       "' writes nothing: declare an output as Mutable[Scalar] "
                       "or Mutable[Vector[k]] (or a Terminated mask) and assign to it");

  block(def.body);

  // The locals' end-of-step values, for kernel.trace (compile-time integers as constants).
  for (const auto& [name, var] : frame().vars) {
    if (var.param_slot >= 0 || var.maybe_undefined) continue;
    TracedLocal t;
    t.name = name;
    const TV& v = var.value;
    if (v.kind == TV::Kind::Int) {
      try {
        t.values = {konst(v.ival.to_double())};
      } catch (const IntRangeError&) {
        continue;
      }
    } else if (v.kind == TV::Kind::Float || v.kind == TV::Kind::Vector ||
               v.kind == TV::Kind::Bool) {
      t.values.assign(v.comps.begin(), v.comps.end());
      t.is_vector = v.kind == TV::Kind::Vector;
      t.is_bool = v.kind == TV::Kind::Bool;
    } else {
      continue;
    }
    locals.push_back(std::move(t));
  }

  // Final values of the Mutable planes and the mask become the step's stores.
  for (size_t s = 0; s < k.slots.size(); ++s) {
    const Slot& slot = k.slots[s];
    if (slot.kind != SlotKind::Mutable && slot.kind != SlotKind::Terminated) continue;
    const Var& var = frame().vars.at(slot.name);
    if (slot.kind == SlotKind::Mutable) {
      for (int c = 0; c < slot.width; ++c) {
        int v = var.value.comps[c];
        if (v < 0) v = materialize(static_cast<int>(s), c);
        Store st;
        st.slot = static_cast<int>(s);
        st.comp = c;
        st.value = v;
        k.stores.push_back(st);
      }
    } else if (slot.kind == SlotKind::Terminated) {
      const int t = var.value.comps[0];
      const auto cv = const_value(t);
      if (!(cv && *cv == 0.0)) k.terminate = t;
    }
  }
  return std::move(k);
}

void Lowerer::block(const parse::Block& b) {
  for (size_t i = 0; i < b.size(); ++i) {
    const parse::Stmt& s = *b[i];
    if (return_value_) error(s.loc, "statements after `return` never run; remove them");
    if (exited_)
      error(s.loc, "statements after `break`/`continue` in the same block never run; remove them");
    // A docstring: a string as the first statement.
    if (i == 0 && s.kind == parse::StmtKind::ExprStmt && s.value &&
        s.value->kind == parse::ExprKind::String)
      continue;
    stmt(s);
  }
}

int Lowerer::add_source(const FunctionSource& fn) {
  int index = -1;
  for (size_t i = 0; i < k.files.size(); ++i)
    if (k.files[i] == fn.file) index = static_cast<int>(i);
  if (index < 0) {
    k.files.push_back(fn.file);
    index = static_cast<int>(k.files.size()) - 1;
  }
  int line = fn.first_line;
  size_t start = 0;
  while (start <= fn.source.size()) {
    size_t end = fn.source.find('\n', start);
    if (end == std::string::npos) end = fn.source.size();
    std::string text = fn.source.substr(start, end - start);
    if (!text.empty() && text.back() == '\r') text.pop_back();
    k.source_text[{index, line}] = text;
    ++line;
    start = end + 1;
  }
  return index;
}

void Lowerer::stmt(const parse::Stmt& s) {
  int file = 0;
  for (size_t i = 0; i < k.files.size(); ++i)
    if (k.files[i] == frame().fn->file) file = static_cast<int>(i);
  cur_loc_ = Loc{s.loc.line, s.loc.col, file};
  switch (s.kind) {
    case parse::StmtKind::Pass:
      return;
    case parse::StmtKind::Assign: {
      for (const auto& t : s.targets)
        if (scatter_target(*t))
          error(t->loc, "`hawk.scatter(t)[i] = v` is not supported: a scatter adds, write "
                        "`hawk.scatter(t)[i] += v`");
      if (const auto fn = reduction_call(*s.value)) {
        reduce_stmt(s, *fn);
        return;
      }
      const TV value = expr(*s.value);
      for (const auto& t : s.targets) assign(*t, value, t->loc);
      return;
    }
    case parse::StmtKind::AugAssign: {
      if (scatter_target(*s.target)) {
        scatter_stmt(s);
        return;
      }
      const TV old = expr(*s.target);
      const TV rhs = expr(*s.value);
      assign(*s.target, arith(s.op, old, rhs, s.loc), s.loc);
      return;
    }
    case parse::StmtKind::If:
      if_stmt(s);
      return;
    case parse::StmtKind::For:
      for_stmt(s);
      return;
    case parse::StmtKind::Return:
      if (frame().helper < 0)
        error(s.loc, "a kernel returns nothing: assign results to its Mutable parameters");
      if (depth_ != 0)
        error(s.loc,
              "`return` inside `if` or `for` is not supported in a helper; assign a "
              "variable in each branch and return it at the end");
      if (!s.value) error(s.loc, "a helper must return a value");
      return_value_ = expr(*s.value);
      return;
    case parse::StmtKind::ExprStmt: {
      const parse::Expr& e = *s.value;
      if (e.kind == parse::ExprKind::Call && !e.args.empty() &&
          e.args[0]->kind == parse::ExprKind::Name && e.args[0]->name == "print")
        error(s.loc,
              "`print` is not allowed in a kernel: kernels run compiled, once per sample; "
              "see every local's value per step with kernel.trace(samples=[...], **inputs), "
              "or write the value to a Mutable plane and print it from Python");
      if (e.kind == parse::ExprKind::String)
        error(s.loc,
              "strings are not allowed in a kernel (only a docstring as the first statement)");
      error(s.loc,
            "this expression's value is unused; a kernel body is made of assignments, "
            "`if` and `for range(K)`");
    }
    case parse::StmtKind::Other: {
      if (s.keyword == "break" || s.keyword == "continue") {
        exit_stmt(s);
        return;
      }
      if (const char* msg = refusal_for(s.keyword)) error(s.loc, msg);
      error(s.loc, "`" + s.keyword +
                       "` is not allowed in a kernel; a kernel body is made of "
                       "assignments, `if`/`elif`/`else` and `for i in range(K)`");
    }
  }
}

void Lowerer::assign(const parse::Expr& target, const TV& value, parse::Loc loc) {
  switch (target.kind) {
    case parse::ExprKind::Name:
      assign_name(target.name, value, loc);
      return;
    case parse::ExprKind::Tuple: {
      std::vector<TV> parts;
      if (value.kind == TV::Kind::Tuple)
        parts = value.items;
      else if (value.kind == TV::Kind::Vector)
        for (int c : value.comps) parts.push_back(TV::f(c));
      else if (value.kind == TV::Kind::IVector)
        for (int c : value.comps) parts.push_back(TV::iv(c));
      else
        error(loc, "cannot unpack " + describe(value) + " into " +
                       std::to_string(target.args.size()) + " names");
      if (parts.size() != target.args.size())
        error(loc, "cannot unpack " + describe(value) + " into " +
                       std::to_string(target.args.size()) + " names");
      for (size_t i = 0; i < parts.size(); ++i)
        assign(*target.args[i], parts[i], target.args[i]->loc);
      return;
    }
    case parse::ExprKind::Subscript: {
      const parse::Expr& base = *target.args[0];
      if (base.kind != parse::ExprKind::Name)
        error(loc, "only a component of a named vector can be assigned, as in v[0] = x");
      // A Mutable's unassigned components stay unassigned (not read), so writing one
      // component does not make the plane in-out.
      const auto& vars = frame().vars;
      const auto it = vars.find(base.name);
      TV vec = it != vars.end() && it->second.param_slot >= 0 && !it->second.maybe_undefined
                   ? it->second.value
                   : read_var(base.name, base.loc);
      if (vec.kind == TV::Kind::Matrix) {  // m[i, j] = x, or a row: m[i] = v
        const TV index = expr(*target.args[1]);
        const TV part = matrix_index(vec, index, *target.args[1]);  // checks the indices
        const int c = vec.cols();
        const auto row_of = [&](const TV& i) {
          const int64_t r = const_int(i, target.args[1]->loc, "a matrix index");
          return static_cast<int>(r < 0 ? r + vec.rows : r);
        };
        if (index.kind == TV::Kind::Tuple) {
          const int64_t j = const_int(index.items[1], target.args[1]->loc, "a matrix index");
          vec.comps[row_of(index.items[0]) * c + static_cast<int>(j < 0 ? j + c : j)] =
              to_float(value, loc, "a matrix component");
        } else {
          if (value.kind != TV::Kind::Vector || value.width() != part.width())
            error(loc, "a row of " + describe(vec) + " is a Vector[" + std::to_string(c) +
                           "], but the value assigned is " + describe(value));
          for (int j = 0; j < c; ++j) vec.comps[row_of(index) * c + j] = value.comps[j];
        }
        assign_name(base.name, vec, loc);
        return;
      }
      if (!vec.is_vector())
        error(loc, "'" + base.name + "' is " + describe(vec) +
                       "; only a Vector's or a Matrix's components can "
                       "be assigned with [i]");
      const int64_t written =
          const_int(expr(*target.args[1]), target.args[1]->loc, "a vector index");
      const int64_t n = static_cast<int64_t>(vec.comps.size());
      const int64_t i = written < 0 ? written + n : written;
      if (i < 0 || i >= n)
        error(target.args[1]->loc, "index " + std::to_string(written) +
                                       " is out of range for a Vector[" + std::to_string(n) +
                                       "] (components 0.." + std::to_string(n - 1) + ")");
      if (vec.kind == TV::Kind::IVector) {
        if (value.kind == TV::Kind::Float)
          error(loc, "'" + base.name +
                         "' is a Vector of ints and the value is a float; write "
                         "int(x) to truncate it toward zero, as Python does");
        vec.comps[i] = to_int_value(value, loc, "a component of a Vector of ints");
      } else {
        if (value.kind == TV::Kind::IntVal)
          error(loc,
                "'" + base.name + "' is a float Vector and the value is an int; write float(i)");
        vec.comps[i] = to_float(value, loc, "a vector component");
      }
      assign_name(base.name, vec, loc);
      return;
    }
    default:
      error(loc,
            "cannot assign to this expression; assign to a name, a tuple of names or a "
            "vector component v[i]");
  }
}

void Lowerer::assign_name(const std::string& name, TV value, parse::Loc loc) {
  auto& vars = frame().vars;
  auto it = vars.find(name);
  if (it != vars.end() && it->second.param_slot >= 0) {
    const Slot& slot = k.slots[it->second.param_slot];
    switch (slot.kind) {
      case SlotKind::ParamSum:
        error(loc, "'" + name +
                       "' is a Mutable[Param] output, one value per launch: assign it a sum "
                       "over the samples, `" +
                       name + " = hawk.sum(x)` (per-sample values go to a Mutable[Scalar])");
      case SlotKind::Param:
        error(loc, "cannot assign to Param '" + name +
                       "': it is one value for all samples; use "
                       "a local variable, or write results to a Mutable parameter");
      case SlotKind::Plane:
        error(loc, "cannot assign to input plane '" + name +
                       "'; declare it Mutable[...] to write "
                       "it, or use a local variable");
      case SlotKind::Table:
        error(loc, "cannot assign to Table '" + name + "': tables are read-only in a kernel");
      case SlotKind::TableSum:
        error(loc, "cannot assign to '" + name +
                       "', a Mutable[Table] scatter target: add into its entries with "
                       "`hawk.scatter(" +
                       name + ")[i] += v`");
      case SlotKind::Random:
        error(loc, "cannot assign to Random '" + name + "': draw numbers from it with " + name +
                       ".uniform() or " + name + ".normal() and assign those to a local variable");
      case SlotKind::Terminated:
        if (value.kind != TV::Kind::Bool)
          error(loc, "the Terminated mask '" + name + "' takes a condition (a bool), got " +
                         describe(value));
        break;
      case SlotKind::Mutable: {
        const Type vt = value_type(slot.dtype);
        const std::string elem =
            slot.dtype == Dtype::Float
                ? ""
                : std::string(", hawk.") +
                      (slot.dtype == Dtype::Bool ? "bool_" : dtype_name(slot.dtype));
        const std::string want = slot.rows > 0 ? "Matrix[" + std::to_string(slot.rows) + ", " +
                                                     std::to_string(slot.width / slot.rows) + "]"
                                 : slot.is_vector
                                     ? "Vector[" + std::to_string(slot.width) + elem + "]"
                                     : "Scalar" + (elem.empty() ? "" : "[" + elem.substr(2) + "]");
        if (vt == Type::F && value.kind == TV::Kind::Int)
          value = TV::f(to_float(value, loc, "a value"));
        if (vt == Type::I && value.kind == TV::Kind::Int)
          value = TV::iv(to_int_value(value, loc, "the value"));
        if (vt == Type::F && (value.kind == TV::Kind::IntVal || value.kind == TV::Kind::IVector))
          error(loc, "'" + name + "' is a float Mutable[" + want + "] but the value assigned is " +
                         describe(value) +
                         "; a float plane needs a float: write float(...) "
                         "(or declare '" +
                         name + "' Mutable[Scalar[hawk.int64]] to keep an int)");
        if (vt == Type::I && (value.kind == TV::Kind::Float || value.shaped()))
          error(loc, "'" + name + "' is an integer Mutable[" + want +
                         "] but the value assigned is " + describe(value) +
                         " (a float); write int(x) to truncate it toward zero, "
                         "as Python does");
        bool ok;
        if (vt == Type::B)
          ok = value.kind == TV::Kind::Bool;
        else if (vt == Type::I)
          ok = slot.is_vector ? value.kind == TV::Kind::IVector && value.width() == slot.width
                              : value.kind == TV::Kind::IntVal;
        else if (slot.rows > 0)
          ok = value.kind == TV::Kind::Matrix && value.width() == slot.width &&
               value.rows == slot.rows;
        else
          ok = slot.is_vector ? value.kind == TV::Kind::Vector && value.width() == slot.width
                              : value.kind == TV::Kind::Float;
        if (!ok)
          error(loc, "'" + name + "' is a Mutable[" + want + "] but the value assigned is " +
                         describe(value));
        break;
      }
      default:
        break;
    }
  }
  if (value.kind == TV::Kind::Float || value.mapped() || value.kind == TV::Kind::IntVal) {
    for (size_t c = 0; c < value.comps.size(); ++c) {
      const int v = value.comps[c];
      if (v < 0) continue;
      Value& val = k.values[v];
      if (val.name.empty() && val.op != Op::Const && val.op != Op::LoadParam &&
          val.op != Op::LoadPlane && val.op != Op::LoadState)
        val.name = value.kind == TV::Kind::Matrix ? name + "[" + std::to_string(c / value.cols()) +
                                                        "," + std::to_string(c % value.cols()) + "]"
                   : value.is_vector() ? name + "[" + std::to_string(c) + "]"
                                       : name;
    }
  }
  // In a loop after a `break`/`continue`, a sample that left keeps its value.
  const int live = guard_live();
  if (live >= 0 && is_false(live)) {  // dead code: every sample has left the loop
    if (it != vars.end()) return;     // the old value stays
    for (LoopCtx& l : loops_)         // a name first assigned here is unset after the loop
      if (l.frame_depth == frames_.size()) l.late_names.insert(name);
  } else if (live >= 0 && !const_value(live)) {
    if (it == vars.end()) {
      for (LoopCtx& l : loops_)
        if (l.frame_depth == frames_.size() && (l.brk >= 0 || l.cnt >= 0))
          l.late_names.insert(name);
    } else {
      value = choose(live, std::move(value), it->second.value, it->second.param_slot, name, loc,
                     "after this assignment",
                     "before it, and a sample that left the loop by `break`/`continue` keeps "
                     "the old value; give it the same type everywhere");
    }
  }
  Var& var = vars[name];
  var.value = std::move(value);
  var.maybe_undefined = false;
  var.undefined_why.clear();
}

int Lowerer::materialize(int slot, int comp) {
  const Slot& s = k.slots[slot];
  Op op = Op::LoadPlane;
  if (s.kind == SlotKind::Param)
    op = Op::LoadParam;
  else if (s.kind == SlotKind::Mutable)
    op = Op::LoadState;
  const auto key = std::make_pair(static_cast<int>(op) * 100000 + slot, comp);
  if (auto it = load_cache_.find(key); it != load_cache_.end()) return it->second;
  if (s.kind == SlotKind::Mutable) k.slots[slot].inout = true;
  Value v;
  v.op = op;
  v.type = value_type(s.dtype);
  v.slot = slot;
  v.comp = comp;
  v.name = s.rows > 0 ? s.name + "[" + std::to_string(comp / (s.width / s.rows)) + "," +
                            std::to_string(comp % (s.width / s.rows)) + "]"
           : s.is_vector ? s.name + "[" + std::to_string(comp) + "]"
                         : s.name;
  const int id = k.add(v);
  load_cache_[key] = id;
  return id;
}

TV Lowerer::read_var(const std::string& name, parse::Loc loc) {
  auto& vars = frame().vars;
  auto it = vars.find(name);
  if (it != vars.end()) {
    Var& var = it->second;
    if (var.maybe_undefined && !var.undefined_why.empty()) error(loc, var.undefined_why);
    if (var.maybe_undefined)
      error(loc, "'" + name + "' is assigned in only one branch of the `if` at line " +
                     std::to_string(var.undefined_line) +
                     "; assign it before the `if` or in "
                     "every branch");
    if (var.value.kind == TV::Kind::Scatter)
      error(loc, "'" + name +
                     "' is a Mutable[Table] scatter target: the body only adds to it, "
                     "`hawk.scatter(" + name +
                     ")[i] += v`; its entries (the bound values plus every sample's adds) "
                     "are known only when the launch ends: read them in the next kernel as a "
                     "Table");
    if (var.value.kind == TV::Kind::SumOut) {  // read after its hawk.sum: a stage boundary
      if (std::find(summed_.begin(), summed_.end(), var.value.slot) != summed_.end())
        return TV::f(stage_read(var.value.slot, loc, false));
      error(loc, "'" + name +
                     "' is a Mutable[Param] sum output read before it is assigned: assign it "
                     "`" + name + " = hawk.sum(...)` (or hawk.mean) first; a read after that "
                     "is a stage boundary (docs/language.md \"Stage boundaries\")");
    }
    TV v = var.value;
    if (var.param_slot >= 0)
      for (size_t c = 0; c < v.comps.size(); ++c)
        if (v.comps[c] < 0) v.comps[c] = materialize(var.param_slot, static_cast<int>(c));
    return v;
  }
  const auto& globals = frame().fn->globals;
  if (auto g = globals.find(name); g != globals.end()) return symbol(g->second, name, loc);
  if (name == "print")
    error(loc,
          "`print` is not allowed in a kernel: kernels run compiled, once per sample; see "
          "every local's value per step with kernel.trace(samples=[...], **inputs), or write "
          "the value to a Mutable plane and print it from Python");
  error(loc, "unknown name '" + name +
                 "'; a kernel can use its parameters, local variables, "
                 "numbers from the enclosing scope, hawk.math functions and @hawk.func helpers");
}

TV Lowerer::symbol(const Symbol& s, const std::string& name, parse::Loc loc) {
  switch (s.kind) {
    case Symbol::Kind::Number:
      if (s.is_int && !s.int_text.empty()) return int_literal(s.int_text, loc);  // exact
      if (s.is_int && std::fabs(s.number) < 9.0e15) return TV::i(static_cast<int64_t>(s.number));
      return TV::f(konst(s.number));
    case Symbol::Kind::Bool:
      return TV::b(kbool(s.bool_value));
    case Symbol::Kind::Math: {
      TV t;
      t.kind = TV::Kind::Math;
      t.name = s.name;
      return t;
    }
    case Symbol::Kind::Helper: {
      TV t;
      t.kind = TV::Kind::Helper;
      t.helper = s.helper;
      t.name = name;
      return t;
    }
    case Symbol::Kind::Module: {  // named by what it is (hawk.math), not by the local alias
      TV t;
      t.kind = TV::Kind::Module;
      t.name = s.name;
      return t;
    }
    case Symbol::Kind::Unsupported:
      break;
  }
  error(loc, "'" + name + "' is " + s.name +
                 ", which a kernel cannot use; a kernel can use "
                 "numbers, hawk.math functions and @hawk.func helpers from the enclosing scope");
}

void Lowerer::if_stmt(const parse::Stmt& s) {
  const TV cond_tv = expr(*s.value);
  const int cond = to_bool(cond_tv, s.value->loc, "an `if` condition");
  if (const auto cv = const_value(cond)) {  // decided when the kernel is defined
    ++depth_;
    block(*cv != 0.0 ? s.body : s.orelse);
    // `if True: continue` ends only this branch: the statements after the `if` are legal
    // Python (dead for every sample: the exit has taken them out of the loop's liveness).
    exited_ = false;
    --depth_;
    return;
  }
  const std::map<std::string, Var> before = frame().vars;
  // The enclosing conditions without the liveness of loops (pred() adds it to each value).
  const int outer = pred_stack_.empty() ? -1 : pred_stack_.back();
  ++depth_;
  pred_stack_.push_back(outer < 0 ? cond : emit(Op::And, Type::B, outer, cond));
  block(s.body);
  exited_ = false;
  std::map<std::string, Var> then_vars = frame().vars;
  pred_stack_.pop_back();
  frame().vars = before;
  const int not_cond = emit(Op::Not, Type::B, cond);
  pred_stack_.push_back(outer < 0 ? not_cond : emit(Op::And, Type::B, outer, not_cond));
  block(s.orelse);
  exited_ = false;
  std::map<std::string, Var> else_vars = frame().vars;
  pred_stack_.pop_back();
  --depth_;
  merge(before, then_vars, else_vars, cond, s.loc);
}

void Lowerer::merge(const std::map<std::string, Var>& before, std::map<std::string, Var>& then_vars,
                    std::map<std::string, Var>& else_vars, int cond, parse::Loc loc) {
  std::set<std::string> names;
  for (const auto& [n, v] : then_vars) names.insert(n);
  for (const auto& [n, v] : else_vars) names.insert(n);
  std::map<std::string, Var> merged;
  for (const std::string& n : names) {
    const auto t = then_vars.find(n);
    const auto e = else_vars.find(n);
    if (t == then_vars.end() || e == else_vars.end()) {
      Var v = t != then_vars.end() ? t->second : e->second;
      if (!before.count(n)) {
        v.maybe_undefined = true;
        v.undefined_line = loc.line;
        v.undefined_why.clear();
      }
      merged[n] = v;
      continue;
    }
    Var a = t->second;
    Var b = e->second;
    if (a.maybe_undefined || b.maybe_undefined) {
      if (!a.maybe_undefined) {
        a.undefined_line = b.undefined_line;
        a.undefined_why = b.undefined_why;
      }
      a.maybe_undefined = true;
      merged[n] = a;
      continue;
    }
    a.value = choose(cond, a.value, b.value, a.param_slot, n, loc, "in one branch of this `if`",
                     "in the other; give it the same type in every branch");
    merged[n] = a;
  }
  frame().vars = std::move(merged);
}

TV Lowerer::call_helper(int helper, std::vector<TV> args, parse::Loc loc) {
  if (helper < 0 || helper >= static_cast<int>(spec_.helpers.size()))
    error(loc, "unknown helper (internal error)");
  // A helper with a @defjvp rule takes the rule's derivative, except inside its own rule,
  // where it is its plain body (lower_jvp.cpp).
  const int rule = spec_.helpers[helper].jvp;
  bool in_own_rule = false;
  for (int h : rules_active_) in_own_rule |= h == helper;
  if (rule >= 0 && !in_own_rule) return call_custom_jvp(helper, args, loc);
  return inline_helper(helper, std::move(args), loc);
}

TV Lowerer::inline_helper(int helper, std::vector<TV> args, parse::Loc loc) {
  for (const Frame& f : frames_)
    if (f.helper == helper)
      error(loc, "recursive call to helper '" + spec_.helpers[helper].name +
                     "': kernels and "
                     "helpers cannot recurse (they are inlined); write the recursion as a loop");
  if (frames_.size() > 64) error(loc, "helpers are nested more than 64 calls deep");
  const FunctionSource& fn = spec_.helpers[helper];
  parse::FunctionDef def;
  try {
    def = parse::parse_function(fn.source, fn.first_line);
  } catch (const ParseError& e) {
    throw SourceError(spec_.fn.name, fn.file, e.line, e.col,
                      "syntax in helper '" + fn.name + "': " + e.message);
  }
  if (def.params.size() != args.size())
    error(loc, "helper '" + fn.name + "' takes " + std::to_string(def.params.size()) +
                   " argument(s), got " + std::to_string(args.size()));
  Frame f;
  f.fn = &fn;
  f.helper = helper;
  for (size_t i = 0; i < args.size(); ++i) {
    if (def.params[i].has_default)
      error(def.params[i].loc, "helper parameters take no default values");
    Var v;
    v.value = std::move(args[i]);
    f.vars[def.params[i].name] = std::move(v);
  }
  const auto saved_return = std::move(return_value_);
  const int saved_depth = depth_;
  return_value_.reset();
  depth_ = 0;
  frames_.push_back(std::move(f));
  add_source(fn);
  const Loc call_loc = cur_loc_;
  block(def.body);
  cur_loc_ = call_loc;
  if (!return_value_) error(def.loc, "helper '" + fn.name + "' must end with `return value`");
  TV result = *return_value_;
  frames_.pop_back();
  return_value_ = saved_return;
  depth_ = saved_depth;
  return result;
}

}  // namespace front

namespace {

// Lowers `spec` with a fresh Lowerer until no loop carry turns from a constant int into a
// float (front::FloatCarry): each retry lowers that carry as a float from the loop's entry.
// Each retry adds a carry, and a kernel has finitely many, so this ends.
template <class Run>
auto lower_with_float_carries(const KernelSpec& spec, Run run) {
  std::set<front::CarryKey> floats;
  for (;;) {
    try {
      front::Lowerer l(spec, floats);
      return run(l);
    } catch (const front::FloatCarry& retry) {
      if (!floats.insert(retry.key).second)
        throw std::logic_error("hawk: lowering the loop carry '" + retry.key.name +
                               "' as a float did not settle its kind");
    }
  }
}

}  // namespace

Kernel lower(const KernelSpec& spec) {
  Kernel k = lower_with_float_carries(spec, [](front::Lowerer& l) { return l.run(); });
  verify(k);
  return k;
}

TracedKernel lower_traced(const KernelSpec& spec) {
  TracedKernel t = lower_with_float_carries(spec, [](front::Lowerer& l) {
    TracedKernel r;
    r.kernel = l.run();
    r.locals = std::move(l.locals);
    return r;
  });
  verify(t.kernel);
  return t;
}

}  // namespace raptor::ir

namespace raptor::ir::front {

std::optional<std::string> Lowerer::reduction_call(const parse::Expr& e) {
  if (e.kind != parse::ExprKind::Call || e.args.empty()) return std::nullopt;
  const parse::Expr& callee = *e.args[0];
  if (callee.kind != parse::ExprKind::Attribute || callee.args[0]->kind != parse::ExprKind::Name)
    return std::nullopt;
  if (callee.name != "sum" && callee.name != "mean" && callee.name != "min" &&
      callee.name != "max")
    return std::nullopt;
  const std::string& base = callee.args[0]->name;
  if (frame().vars.count(base) != 0) return std::nullopt;
  const auto& globals = frame().fn->globals;
  const auto g = globals.find(base);
  if (g == globals.end() || g->second.kind != Symbol::Kind::Module || g->second.name != "hawk")
    return std::nullopt;
  return callee.name;
}

void Lowerer::reduce_stmt(const parse::Stmt& s, const std::string& fn) {
  const parse::Expr& call = *s.value;
  const std::string what = "hawk." + fn + "()";
  const auto& target = s.targets;
  const auto ref = [&]() -> const Var* {
    if (target.size() != 1 || target[0]->kind != parse::ExprKind::Name) return nullptr;
    const auto it = frame().vars.find(target[0]->name);
    if (it == frame().vars.end() || it->second.value.kind != TV::Kind::SumOut) return nullptr;
    return &it->second;
  }();
  if (ref == nullptr)
    error(s.loc, what + " is a sum over the samples of the launch: assign it to a kernel "
                        "parameter declared Mutable[Param] (`total: Mutable[Param]` ... "
                        "`total = hawk.sum(x)`)");
  if (frame().helper >= 0 || depth_ != 0)
    error(s.loc, what + " inside `if`, `for` or a helper is not supported; write it at the top "
                        "level of the kernel body and leave samples out with where=");
  const int slot = ref->value.slot;
  for (const int done : summed_)
    if (done == slot)
      error(s.loc, "'" + k.slots[slot].name +
                       "' is assigned a sum twice; a Mutable[Param] output takes one hawk.sum()");
  const size_t positional = call.args.size() - 1 - call.keywords.size();
  if (positional != 1)
    error(call.loc, what + " takes one value per sample (and where=), got " +
                        std::to_string(positional) + " positional arguments");
  const TV x = expr(*call.args[1]);
  if (x.kind != TV::Kind::Float && x.kind != TV::Kind::Int && x.kind != TV::Kind::IntVal)
    error(call.args[1]->loc, what + " takes a Scalar per sample, got " + describe(x));
  int value = to_float(x, call.args[1]->loc, "the value summed");
  int where = -1;
  for (size_t i = 0; i < call.keywords.size(); ++i) {
    const parse::Expr& arg = *call.args[1 + positional + i];
    if (call.keywords[i] != "where")
      error(arg.loc, what + " takes the keyword where= only, not " + call.keywords[i] + "=");
    where = to_bool(expr(arg), arg.loc, "where=");
  }
  // hawk.mean(x) over every sample: the sum of x / n_samples() (the whole launch's count, so
  // a sharded launch means as the whole one would). Each term is rounded once more than in
  // the sum; the sum's machinery (deterministic partials, psum, broadcast adjoint) does the
  // rest, and the adjoint is the broadcast divided by the count. hawk.mean(x, where=c): the
  // sum of x / count where c, the count a hidden sum of 1.0 where c of an earlier stage
  // (selected_count, lower_stage.cpp), so the launch runs as stages.
  if (fn == "mean") {
    if (k.has_mask() || k.active_set)
      error(call.loc, "hawk.mean() in kernel '" + k.name +
                          "', which has a Terminated parameter, is not supported: finished "
                          "samples add nothing, so the count is not the launch's; sum the "
                          "live samples with hawk.sum(x) and hawk.sum(1.0) into two outputs");
    const int n = where < 0 ? emit(Op::ToFloat, Type::F, emit(Op::NSamples, Type::I))
                            : selected_count(where, call.loc);
    value = emit(Op::Div, Type::F, value, n);
  }
  // hawk.min / hawk.max: the slot combines by min / max (ir.hpp Combine; +inf / -inf when
  // no sample contributes, so a store that never contributes is left out).
  const Combine combine = fn == "min" ? Combine::Min : fn == "max" ? Combine::Max : Combine::Sum;
  k.slots[slot].combine = combine;
  const int path = pred();
  Store st;
  st.slot = slot;
  st.comp = 0;
  st.value = value;
  st.pred = where < 0 ? path : path < 0 ? where : emit(Op::And, Type::B, path, where);
  st.loc = cur_loc_;
  if (const auto cv = st.pred >= 0 ? const_value(st.pred) : std::nullopt) {
    if (*cv == 0.0 && combine != Combine::Sum) {
      summed_.push_back(slot);
      return;
    }
    if (*cv == 0.0) st.value = konst(0.0);
    st.pred = -1;
  }
  k.stores.push_back(st);
  summed_.push_back(slot);
}

}  // namespace raptor::ir::front

namespace raptor::ir::front {

// `hawk.scatter(...)[...]`: a Subscript of a call of the hawk module's `scatter`.
bool Lowerer::scatter_target(const parse::Expr& e) {
  if (e.kind != parse::ExprKind::Subscript) return false;
  const parse::Expr& call = *e.args[0];
  if (call.kind != parse::ExprKind::Call || call.args.empty()) return false;
  const parse::Expr& callee = *call.args[0];
  if (callee.kind != parse::ExprKind::Attribute || callee.name != "scatter" ||
      callee.args[0]->kind != parse::ExprKind::Name)
    return false;
  const std::string& base = callee.args[0]->name;
  if (frame().vars.count(base) != 0) return false;
  const auto& globals = frame().fn->globals;
  const auto g = globals.find(base);
  return g != globals.end() && g->second.kind == Symbol::Kind::Module && g->second.name == "hawk";
}

// `hawk.scatter(t)[i] += v`: one TableSum store per component of t's entry i, under the path's
// condition (inside `if`, only the samples taking the branch add). The launcher adds the
// samples' contributions in chunk partials combined in a fixed order onto the bound values.
void Lowerer::scatter_stmt(const parse::Stmt& s) {
  const parse::Expr& sub = *s.target;
  const parse::Expr& call = *sub.args[0];
  if (s.op != "+")
    error(s.loc, "`hawk.scatter(t)[i] " + s.op +
                     "= v` is not supported: a scatter adds, write `hawk.scatter(t)[i] += v`" +
                     (s.op == "-" ? " (here: `+= -v`)" : ""));
  if (frame().helper >= 0)
    error(s.loc, "hawk.scatter inside a @hawk.func helper is not supported; scatter in the "
                 "kernel body");
  if (real_loops_ > 0)
    error(s.loc, "hawk.scatter inside a `for` loop of more than the unrolled iterations (the "
                 "loop at line " +
                     std::to_string(real_loop_line_) +
                     ") is not supported; scatter after the loop, or in a loop the compiler "
                     "unrolls");
  if (call.args.size() != 2 || !call.keywords.empty())
    error(call.loc, "hawk.scatter(t) takes one argument, a Mutable[Table] parameter");
  const parse::Expr& target = *call.args[1];
  const auto it = target.kind == parse::ExprKind::Name ? frame().vars.find(target.name)
                                                       : frame().vars.end();
  if (it == frame().vars.end() || it->second.value.kind != TV::Kind::Scatter) {
    const bool table = it != frame().vars.end() && it->second.value.kind == TV::Kind::Table;
    error(target.loc,
          table ? "hawk.scatter('" + target.name +
                      "'): the table is declared Table[...], which a kernel only reads; "
                      "declare it Mutable[Table[Scalar]] (or Mutable[Table[Vector[k]]]) to add "
                      "into it"
                : "hawk.scatter(t) takes a kernel parameter declared Mutable[Table[Scalar]] "
                  "or Mutable[Table[Vector[k]]]");
  }
  const int slot = it->second.value.slot;
  const Slot& sl = k.slots[slot];
  const TV idx = expr(*sub.args[1]);
  int index = -1;
  if (idx.kind == TV::Kind::Int) {
    index = kint(const_int(idx, sub.args[1]->loc, "a table index"));
  } else if (idx.kind == TV::Kind::IntVal) {
    index = idx.comps[0];  // an integer value, as it is
  } else if (idx.kind == TV::Kind::Float) {
    index = emit(Op::ToIndex, Type::I, idx.comps[0]);  // rounded down, as w.at(i) reads
  } else {
    error(sub.args[1]->loc,
          "hawk.scatter(" + sl.name + ")[i]: the index must be an integer or a Scalar (rounded "
          "down), got " + describe(idx));
  }
  const TV v = expr(*s.value);
  std::vector<int> comps;
  if (!sl.is_vector) {
    if (v.kind != TV::Kind::Float && v.kind != TV::Kind::Int && v.kind != TV::Kind::IntVal)
      error(s.value->loc, "hawk.scatter(" + sl.name + ")[i] += v: '" + sl.name +
                              "' holds Scalars, so v must be a Scalar, got " + describe(v));
    comps.push_back(to_float(v, s.value->loc, "the value added"));
  } else {
    if (v.kind != TV::Kind::Vector || static_cast<int>(v.comps.size()) != sl.width)
      error(s.value->loc, "hawk.scatter(" + sl.name + ")[i] += v: '" + sl.name +
                              "' holds Vector[" + std::to_string(sl.width) +
                              "] entries, so v must be a Vector[" + std::to_string(sl.width) +
                              "], got " + describe(v));
    comps = v.comps;
  }
  const int path = pred();
  for (int c = 0; c < sl.width; ++c) {
    Store st;
    st.slot = slot;
    st.comp = c;
    st.value = comps[c];
    st.index = index;
    st.pred = path;
    st.loc = cur_loc_;
    if (const auto cv = st.pred >= 0 ? const_value(st.pred) : std::nullopt) {
      if (*cv == 0.0) continue;  // a branch no sample takes adds nothing
      st.pred = -1;
    }
    k.stores.push_back(st);
  }
}

}  // namespace raptor::ir::front
