// What the Python side hands to the compiler for one kernel: the function's source text,
// its parameters' resolved types, its free names resolved to numbers, hawk.math functions or
// helpers, and where it came from. `lower()` (ir/lower.hpp) turns a KernelSpec into IR.
#pragma once

#include <map>
#include <string>
#include <vector>

#include "ir/ir.hpp"

namespace raptor::ir {

// A free name of the kernel's (or a helper's) body, resolved by the Python side.
struct Symbol {
  enum class Kind {
    Number,       // a Python int or float: folded in as a constant
    Bool,         // True/False held in a variable
    Math,         // a hawk.math function (or a builtin mapped to one): `name` says which
    Helper,       // a @hawk.func helper: `helper` indexes KernelSpec::helpers
    Module,       // the hawk.math module (or an alias): attributes are Math functions
    Unsupported,  // anything else: `name` describes it for the error message
  };
  Kind kind = Kind::Unsupported;
  double number = 0.0;
  bool is_int = false;
  std::string int_text;  // an int's exact decimal value (Python's str(int)); empty: `number`
  bool bool_value = false;
  std::string name;
  int helper = -1;
};

// A Python function's source as given by the Python side.
struct FunctionSource {
  std::string name;
  std::string file;
  int first_line = 1;  // file line of the first line of `source`
  std::string source;  // the whole def, decorators included
  std::map<std::string, Symbol> globals;
  int jvp = -1;  // a helper's custom derivative rule (@helper.defjvp): KernelSpec::helpers index
};

// One parameter of the kernel, with its annotation resolved.
struct ParamSpec {
  std::string name;
  SlotKind kind = SlotKind::Plane;  // Param, Plane, Mutable, Terminated, Table or Random
  int width = 1;                    // k of Vector[k], 1 for Scalar
  bool is_vector = false;
  std::string error;           // non-empty: the annotation is wrong; this says why
  int rows = 0;                // Matrix[rows, width / rows]; 0: not a matrix (after `error`:
                               //  positional initializers of the first five stay valid)
  Dtype dtype = Dtype::Float;  // Scalar[hawk.int32] etc. (Param, Plane, Mutable)
};

struct KernelSpec {
  FunctionSource fn;
  std::vector<ParamSpec> params;
  int steps = 1;
  bool active_set = false;
  std::vector<FunctionSource> helpers;
};

}  // namespace raptor::ir
