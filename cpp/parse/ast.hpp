// The syntax tree of a hawk kernel body: what the parser (parse/parser.hpp) produces and
// the front end (ir/lower.hpp) consumes. Start reading at `FunctionDef`.
//
// The tree keeps every construct the parser recognises, including ones the language refuses
// (strings, lists, attribute access), so that the front end can name them in its errors with
// the user's line and column. Nothing here knows about types or planes.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

namespace raptor::parse {

// A position in the user's file: 1-based line (already offset to the file's numbering) and
// 1-based column.
struct Loc {
  int line = 0;
  int col = 0;
};

struct Expr;
using ExprPtr = std::unique_ptr<Expr>;

enum class ExprKind {
  Name,       // `name`
  Number,     // `1.5`, `2`, `1e-3`  (is_int tells whether it was written as an integer)
  Bool,       // `True`, `False`
  String,     // a string literal (refused in kernels except as a docstring)
  Unary,      // op in {"-", "+"} applied to args[0]
  Not,        // `not args[0]`
  Binary,     // op in {"+","-","*","/","**","//","%","@"} on args[0], args[1]
  BoolOp,     // op in {"and","or"}, args has two or more operands
  Compare,    // chained comparison: args[0] ops[0] args[1] ops[1] args[2] ...
  IfExp,      // `args[1] if args[0] else args[2]`  (condition first)
  Call,       // args[0] is the callee, args[1..] the positional arguments
  Subscript,  // `args[0][args[1]]`
  Attribute,  // `args[0].name`
  Tuple,      // `(a, b)` or `a, b`
  List,       // `[a, b]` (refused)
  Other,      // anything else the parser recognised only to refuse (lambda, dict, ...); `name` says
              // what
};

struct Expr {
  ExprKind kind = ExprKind::Name;
  Loc loc;
  std::string name;              // Name: identifier; Attribute: attribute name; Other: description
  std::string op;                // Unary/Binary/BoolOp operator
  std::vector<std::string> ops;  // Compare: operators "<","<=",">",">=","==","!="
  double number = 0.0;           // Number
  bool is_int = false;           // Number written without '.', 'e' or 'j'
  int64_t int_value = 0;         // Number when is_int and it fits in int64
  std::string int_text;          // Number when is_int and it does not fit: the literal's digits
                                 // (underscores removed, base prefix kept), exact in lowering
  bool bool_value = false;       // Bool
  std::vector<ExprPtr> args;     // children, meaning by kind (see ExprKind)
  std::vector<std::string> keywords;  // Call: keyword argument names, parallel to the tail of args
};

struct Stmt;
using StmtPtr = std::unique_ptr<Stmt>;
using Block = std::vector<StmtPtr>;

enum class StmtKind {
  Assign,     // targets[0] = targets[1] = ... = value   (each target may be a Tuple)
  AugAssign,  // target op= value, op in {"+","-","*","/"}
  If,         // if cond: body  else: orelse   (elif is an If inside orelse)
  For,        // for var in range(args...): body
  Return,     // return value (value may be null)
  Pass,
  ExprStmt,  // a bare expression (a docstring, or something the front end refuses)
  Other,     // a statement the language refuses (while, import, def, ...); `keyword` names it
};

struct Stmt {
  StmtKind kind = StmtKind::Pass;
  Loc loc;
  std::vector<ExprPtr> targets;     // Assign
  ExprPtr target;                   // AugAssign
  std::string op;                   // AugAssign operator without '='
  ExprPtr value;                    // Assign/AugAssign/Return/ExprStmt value; If condition
  std::string var;                  // For loop variable
  std::vector<ExprPtr> range_args;  // For: the arguments of range(...)
  ExprPtr iter;                     // For: the iterable when it is not range(...) (refused)
  Block body;                       // If/For body
  Block orelse;                     // If else-branch
  std::string keyword;              // Other: "while", "import", "with", ...
};

// One formal parameter as written: name, and its annotation's source text (the Python side
// resolves annotations; the text is kept for messages).
struct Param {
  std::string name;
  Loc loc;
  std::string annotation;  // empty when missing
  bool has_default = false;
};

// The whole `def` as parsed: decorators are skipped, the body is kept.
struct FunctionDef {
  std::string name;
  Loc loc;
  std::vector<Param> params;
  Block body;
};

}  // namespace raptor::parse
