// Internal to the parser: the recursive-descent Parser class shared by parser.cpp (function,
// statements) and parse_expr.cpp (expressions). Not part of the public API; use parser.hpp.
// Recursion is bounded by `kMaxDepth` through DepthGuard.
#pragma once

#include <string>
#include <string_view>
#include <vector>

#include "common/error.hpp"
#include "parse/ast.hpp"
#include "parse/lexer.hpp"

namespace raptor::parse {

inline constexpr int kMaxDepth = 200;   // nesting of brackets, unary operators and blocks
inline constexpr int kMaxNodes = 2000;  // expression nodes in one statement (bounds AST height)
inline constexpr int kMaxElifs = 500;   // elif branches in one if statement

class Parser {
 public:
  Parser(std::string_view source, int first_line)
      : src_(source), toks_(tokenize(source, first_line)) {}

  FunctionDef parse_function();

  // ---- expressions (parse_expr.cpp) ----
  ExprPtr parse_namedexpr();                       // test [':=' test]
  ExprPtr parse_test();                            // lambda | or_test ['if' or_test 'else' test]
  ExprPtr parse_or();                              // and_test ('or' and_test)*
  ExprPtr parse_bitor();                           // the operand level of comparisons
  ExprPtr parse_testlist(bool allow_star = true);  // test (',' test)* [','] -> Tuple if commas
  ExprPtr parse_exprlist();                        // targets of `for`: bitor (',' bitor)*

 private:
  // ---- token access ----
  const Token& peek(std::size_t ahead = 0) const {
    const std::size_t i = pos_ + ahead;
    return i < toks_.size() ? toks_[i] : toks_.back();
  }
  const Token& next() {
    const Token& t = peek();
    if (pos_ < toks_.size() - 1) ++pos_;
    prev_end_ = t.end;
    return t;
  }
  bool at_op(std::string_view op, std::size_t ahead = 0) const {
    const Token& t = peek(ahead);
    return t.kind == TokKind::Op && t.text == op;
  }
  bool at_name(std::string_view name, std::size_t ahead = 0) const {
    const Token& t = peek(ahead);
    return t.kind == TokKind::Name && t.text == name;
  }
  bool at(TokKind kind) const { return peek().kind == kind; }
  bool accept_op(std::string_view op) {
    if (!at_op(op)) return false;
    next();
    return true;
  }
  bool accept_name(std::string_view name) {
    if (!at_name(name)) return false;
    next();
    return true;
  }
  const Token& expect_op(std::string_view op, std::string_view context = "");
  std::string expect_identifier(std::string_view what);
  [[noreturn]] void fail(const Token& at, const std::string& message) const {
    throw ParseError(at.loc.line, at.loc.col, message);
  }
  [[noreturn]] void unexpected(const Token& at, std::string_view context = "") const;
  bool starts_expression() const;

  // Bounds recursion: each guarded level counts once towards kMaxDepth.
  class DepthGuard {
   public:
    DepthGuard(Parser& p, const Token& at, const char* message = "expression nested too deeply")
        : p_(p) {
      if (p_.depth_ >= kMaxDepth) p_.fail(at, message);
      ++p_.depth_;
    }
    ~DepthGuard() { --p_.depth_; }
    DepthGuard(const DepthGuard&) = delete;
    DepthGuard& operator=(const DepthGuard&) = delete;

   private:
    Parser& p_;
  };

  // ---- statements (parser.cpp) ----
  void parse_params(FunctionDef& fn);
  Block parse_suite();
  void parse_statement(Block& out);
  void parse_simple_statements(Block& out);
  StmtPtr parse_simple_statement();
  StmtPtr parse_expression_statement();
  StmtPtr parse_if();
  StmtPtr parse_for();
  StmtPtr parse_other_compound(const Token& start, const std::string& keyword);
  StmtPtr parse_other_simple(const Token& start, const std::string& keyword);
  void skip_logical_line();
  void skip_block();

  // ---- expression helpers (parse_expr.cpp) ----
  ExprPtr parse_lambda();
  ExprPtr parse_and();
  ExprPtr parse_not();
  ExprPtr parse_comparison();
  ExprPtr parse_binary_level(int level);
  ExprPtr parse_factor();
  ExprPtr parse_power();
  ExprPtr parse_primary();
  ExprPtr parse_atom();
  ExprPtr parse_call(ExprPtr callee, Loc loc);
  ExprPtr parse_subscript_index();
  ExprPtr parse_paren(const Token& open);
  ExprPtr parse_list(const Token& open);
  ExprPtr parse_brace(const Token& open);
  ExprPtr parse_star_or_namedexpr();
  void skip_comprehension();

  // Every expression node is created here, so that one statement's tree stays bounded.
  ExprPtr node(ExprKind kind, Loc loc);
  ExprPtr other(Loc loc, std::string what);
  ExprPtr parse_number(const Token& tok);

  std::string_view src_;
  std::vector<Token> toks_;
  std::size_t pos_ = 0;
  std::size_t prev_end_ = 0;  // source offset just past the last consumed token
  int depth_ = 0;
  int nodes_ = 0;  // expression nodes created since the current statement started
};

// Python's hard keywords (True, False and None included).
bool is_keyword(std::string_view name);

}  // namespace raptor::parse
