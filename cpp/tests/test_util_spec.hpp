// Shared helpers for the front-end, pass and codegen tests: build an ir::KernelSpec from a
// Python source string, a list of parameter specs and resolved globals (what the Python side
// hands over, see python/hawk/source.py), lower and optimize it, and run it with the reference
// interpreter.
#pragma once

#include <cctype>
#include <cstdint>
#include <initializer_list>
#include <map>
#include <stdexcept>
#include <string>
#include <utility>
#include <vector>

#include "ir/interp.hpp"
#include "ir/ir.hpp"
#include "ir/lower.hpp"
#include "ir/spec.hpp"
#include "passes/optimize.hpp"

namespace raptor::testing {

// ---- parameters (what hawk.types.param_kind resolves an annotation to)

inline ir::ParamSpec param_spec(std::string name, ir::SlotKind kind, int width = 1,
                                bool is_vector = false) {
  ir::ParamSpec p;
  p.name = std::move(name);
  p.kind = kind;
  p.width = width;
  p.is_vector = is_vector;
  return p;
}
inline ir::ParamSpec Param(std::string n) { return param_spec(std::move(n), ir::SlotKind::Param); }
inline ir::ParamSpec Scalar(std::string n) { return param_spec(std::move(n), ir::SlotKind::Plane); }
inline ir::ParamSpec Vector(std::string n, int k) {
  return param_spec(std::move(n), ir::SlotKind::Plane, k, true);
}
inline ir::ParamSpec MutScalar(std::string n) {
  return param_spec(std::move(n), ir::SlotKind::Mutable);
}
inline ir::ParamSpec MutVector(std::string n, int k) {
  return param_spec(std::move(n), ir::SlotKind::Mutable, k, true);
}
inline ir::ParamSpec Terminated(std::string n) {
  return param_spec(std::move(n), ir::SlotKind::Terminated);
}
inline ir::ParamSpec TableScalar(std::string n) {
  return param_spec(std::move(n), ir::SlotKind::Table);
}
inline ir::ParamSpec TableVector(std::string n, int k) {
  return param_spec(std::move(n), ir::SlotKind::Table, k, true);
}
// Matrix[r, c] as a plane, a Mutable or a Table entry (kind).
inline ir::ParamSpec Matrix(std::string n, int r, int c, ir::SlotKind kind = ir::SlotKind::Plane) {
  ir::ParamSpec p = param_spec(std::move(n), kind, r * c, true);
  p.rows = r;
  return p;
}
inline ir::ParamSpec MutMatrix(std::string n, int r, int c) {
  return Matrix(std::move(n), r, c, ir::SlotKind::Mutable);
}
// An integer or bool plane (Scalar[hawk.int32] ...): `p` with element type `d`.
inline ir::ParamSpec with_dtype(ir::ParamSpec p, ir::Dtype d) {
  p.dtype = d;
  return p;
}

// ---- resolved globals

inline ir::Symbol number(double v) {
  ir::Symbol s;
  s.kind = ir::Symbol::Kind::Number;
  s.number = v;
  return s;
}
inline ir::Symbol integer(int64_t v) {
  ir::Symbol s = number(static_cast<double>(v));
  s.is_int = true;
  return s;
}
inline ir::Symbol boolean(bool v) {
  ir::Symbol s;
  s.kind = ir::Symbol::Kind::Bool;
  s.bool_value = v;
  return s;
}
inline ir::Symbol math(std::string name) {
  ir::Symbol s;
  s.kind = ir::Symbol::Kind::Math;
  s.name = std::move(name);
  return s;
}
inline ir::Symbol module(std::string name) {
  ir::Symbol s;
  s.kind = ir::Symbol::Kind::Module;
  s.name = std::move(name);
  return s;
}
inline ir::Symbol helper(int index) {
  ir::Symbol s;
  s.kind = ir::Symbol::Kind::Helper;
  s.helper = index;
  return s;
}
inline ir::Symbol unsupported(std::string description) {
  ir::Symbol s;
  s.kind = ir::Symbol::Kind::Unsupported;
  s.name = std::move(description);
  return s;
}

using Globals = std::map<std::string, ir::Symbol>;

// Every hawk.math function under its own name (as `from hawk.math import *` would give).
inline Globals math_globals() {
  Globals g;
  for (const std::string& n : ir::math_function_names()) g[n] = math(n);
  return g;
}

// `extra` added to (and overriding) math_globals().
inline Globals with_math(std::initializer_list<std::pair<const std::string, ir::Symbol>> extra) {
  Globals g = math_globals();
  for (const auto& [k, v] : extra) g[k] = v;
  return g;
}

// The function's name: the identifier after the first "def ".
inline std::string def_name(const std::string& source) {
  const size_t d = source.find("def ");
  if (d == std::string::npos) return "kernel";
  size_t b = d + 4;
  size_t e = b;
  while (e < source.size() &&
         (std::isalnum(static_cast<unsigned char>(source[e])) || source[e] == '_'))
    ++e;
  return source.substr(b, e - b);
}

inline ir::FunctionSource function_source(std::string source, Globals globals = math_globals(),
                                          int first_line = 1, std::string file = "test.py") {
  ir::FunctionSource fn;
  fn.name = def_name(source);
  fn.file = std::move(file);
  fn.first_line = first_line;
  fn.source = std::move(source);
  fn.globals = std::move(globals);
  return fn;
}

struct SpecOptions {
  int steps = 1;
  int first_line = 1;
  std::string file = "test.py";
  bool active_set = false;
  std::vector<ir::FunctionSource> helpers;
};

inline ir::KernelSpec make_spec(std::string source, std::vector<ir::ParamSpec> params,
                                Globals globals = math_globals(), SpecOptions opt = {}) {
  ir::KernelSpec spec;
  spec.fn = function_source(std::move(source), std::move(globals), opt.first_line, opt.file);
  spec.params = std::move(params);
  spec.steps = opt.steps;
  spec.active_set = opt.active_set;
  spec.helpers = std::move(opt.helpers);
  return spec;
}

inline ir::Kernel lower_source(std::string source, std::vector<ir::ParamSpec> params,
                               Globals globals = math_globals(), SpecOptions opt = {}) {
  return ir::lower(
      make_spec(std::move(source), std::move(params), std::move(globals), std::move(opt)));
}

// Optimizes and verifies `k` (a lowered kernel, or one derived by ad/): the kernel as the
// compiler hands it to code generation.
inline ir::Kernel optimized(ir::Kernel k) {
  passes::optimize(k);
  ir::verify(k);
  return k;
}

// Lowers `source` with `params` and optimizes it.
inline ir::Kernel lowered(const std::string& source, std::vector<ir::ParamSpec> params,
                          int steps = 1, const std::string& file = "test.py", int first_line = 1) {
  SpecOptions opt;
  opt.steps = steps;
  opt.file = file;
  opt.first_line = first_line;
  return optimized(lower_source(source, std::move(params), math_globals(), opt));
}

// The damped oscillator of page 000 with its Terminated mask, stepped `steps` times per launch
// (the stepped masked kernel several test files use).
inline ir::Kernel stepped_oscillator(int steps = 8) {
  return lowered(
      R"(def osc(dt: Param, c: Param, t_final: Scalar, terminated: Terminated, x: Mutable[Scalar], v: Mutable[Scalar], t: Mutable[Scalar]):
    vn = v + dt * (-x - c * v)
    x = x + dt * v
    v = vn
    t = t + dt
    terminated = t >= t_final
)",
      {Param("dt"), Param("c"), Scalar("t_final"), Terminated("terminated"), MutScalar("x"),
       MutScalar("v"), MutScalar("t")},
      steps);
}

// ---- running with the interpreter

// Sets the binding's data for the slot named `name` (Param: one value; Plane / in-out Mutable:
// layout (width, n); Table: layout (M, width)).
inline void set_in(const ir::Kernel& k, ir::InterpBinding& b, const std::string& name,
                   std::vector<double> data) {
  const int s = k.find_slot(name);
  if (s < 0) throw std::invalid_argument("no slot named " + name);
  b.slots[s].in = std::move(data);
}

inline const std::vector<double>& out_of(const ir::Kernel& k, const ir::InterpBinding& b,
                                         const std::string& name) {
  const int s = k.find_slot(name);
  if (s < 0) throw std::invalid_argument("no slot named " + name);
  return b.slots[s].out;
}

}  // namespace raptor::testing
