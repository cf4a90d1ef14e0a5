// The statement half of the recursive-descent parser: the `def` line, parameters, suites and
// statements. Start reading at `Parser::parse_function`; expressions are in parse_expr.cpp.
//
// Statements the kernel language refuses (while, import, with, nested def, ...) are skipped
// whole (header, block and trailing else/except/finally clauses) and kept as StmtKind::Other
// with `keyword` naming them, so the front end can point at them.
#include "parse/parser.hpp"

#include <algorithm>
#include <array>

#include "parse/parser_impl.hpp"

namespace raptor::parse {
namespace {

std::string trim(std::string_view s) {
  const auto is_space = [](char c) { return c == ' ' || c == '\t' || c == '\n' || c == '\r'; };
  while (!s.empty() && is_space(s.front())) s.remove_prefix(1);
  while (!s.empty() && is_space(s.back())) s.remove_suffix(1);
  return std::string(s);
}

StmtPtr make_stmt(StmtKind kind, Loc loc) {
  auto s = std::make_unique<Stmt>();
  s->kind = kind;
  s->loc = loc;
  return s;
}

bool is_compound_keyword(std::string_view kw) {
  return kw == "if" || kw == "for" || kw == "while" || kw == "with" || kw == "try" ||
         kw == "class" || kw == "def" || kw == "async" || kw == "elif" || kw == "else" ||
         kw == "except" || kw == "finally";
}

}  // namespace

bool is_keyword(std::string_view name) {
  static constexpr std::array<std::string_view, 35> kKeywords = {
      "False", "None",     "True",  "and",    "as",   "assert", "async",  "await",    "break",
      "class", "continue", "def",   "del",    "elif", "else",   "except", "finally",  "for",
      "from",  "global",   "if",    "import", "in",   "is",     "lambda", "nonlocal", "not",
      "or",    "pass",     "raise", "return", "try",  "while",  "with",   "yield"};
  return std::find(kKeywords.begin(), kKeywords.end(), name) != kKeywords.end();
}

const Token& Parser::expect_op(std::string_view op, std::string_view context) {
  if (!at_op(op)) {
    std::string msg = "expected '" + std::string(op) + "'";
    if (!context.empty()) msg += " " + std::string(context);
    fail(peek(), msg + ", found " + describe(peek()));
  }
  return next();
}

std::string Parser::expect_identifier(std::string_view what) {
  const Token& t = peek();
  if (t.kind == TokKind::Name && is_keyword(t.text)) {
    fail(t, "'" + t.text + "' is a keyword and cannot be used as " + std::string(what));
  }
  if (t.kind != TokKind::Name) fail(t, "expected " + std::string(what) + ", found " + describe(t));
  return next().text;
}

void Parser::unexpected(const Token& at, std::string_view context) const {
  std::string msg = "unexpected " + describe(at);
  if (!context.empty()) msg += " " + std::string(context);
  fail(at, msg);
}

FunctionDef Parser::parse_function() {
  while (at_op("@")) {  // decorators are evaluated by Python; only their syntax matters here
    next();
    nodes_ = 0;
    parse_namedexpr();
    if (!at(TokKind::Newline)) unexpected(peek(), "after the decorator");
    next();
  }
  if (at(TokKind::End)) fail(peek(), "expected a function definition 'def name(...):'");
  if (at_name("async")) fail(peek(), "'async def' functions cannot be kernels");
  if (!at_name("def")) fail(peek(), "expected 'def', found " + describe(peek()));
  FunctionDef fn;
  fn.loc = next().loc;
  fn.name = expect_identifier("the function name");
  expect_op("(", "after the function name");
  parse_params(fn);
  if (accept_op("->")) {
    nodes_ = 0;
    parse_test();
  }
  expect_op(":", "at the end of the 'def' line");
  fn.body = parse_suite();
  if (!at(TokKind::End)) fail(peek(), "unexpected code after the end of the function body");
  return fn;
}

void Parser::parse_params(FunctionDef& fn) {
  bool seen_default = false;
  while (!at_op(")")) {
    const Token& t = peek();
    if (at_op("*")) {
      if (peek(1).kind == TokKind::Name) {
        fail(t, "*args parameters ('*" + peek(1).text + "') are not allowed in a kernel");
      }
      fail(t, "the keyword-only marker '*' is not allowed in a kernel's parameters");
    }
    if (at_op("**")) fail(t, "**kwargs parameters are not allowed in a kernel");
    if (at_op("/"))
      fail(t, "the positional-only marker '/' is not allowed in a kernel's parameters");
    Param p;
    p.loc = t.loc;
    p.name = expect_identifier("a parameter name");
    for (const Param& q : fn.params) {
      if (q.name == p.name) fail(t, "duplicate parameter '" + p.name + "'");
    }
    if (accept_op(":")) {
      nodes_ = 0;
      const Token& a = peek();
      parse_test();
      p.annotation = trim(src_.substr(a.begin, prev_end_ - a.begin));
    }
    if (accept_op("=")) {
      nodes_ = 0;
      parse_test();
      p.has_default = true;
      seen_default = true;
    } else if (seen_default) {
      fail(t, "parameter '" + p.name + "' without a default follows a parameter with a default");
    }
    fn.params.push_back(std::move(p));
    if (!accept_op(",")) break;
  }
  expect_op(")", "to close the parameter list");
}

Block Parser::parse_suite() {
  Block block;
  if (!at(TokKind::Newline)) {  // `if x: a = 1; b = 2` on one line
    parse_simple_statements(block);
    return block;
  }
  next();
  if (!at(TokKind::Indent)) fail(peek(), "expected an indented block");
  const DepthGuard guard(*this, next(), "blocks nested too deeply");
  while (!at(TokKind::Dedent) && !at(TokKind::End)) parse_statement(block);
  next();
  return block;
}

void Parser::parse_statement(Block& out) {
  const Token& t = peek();
  nodes_ = 0;
  if (t.kind == TokKind::Indent) fail(t, "unexpected indentation");
  if (at_op("@")) {  // a decorated nested def or class
    while (at_op("@")) skip_logical_line();
    if (!at_name("def") && !at_name("class") && !at_name("async")) {
      fail(peek(), "expected 'def' or 'class' after a decorator, found " + describe(peek()));
    }
    out.push_back(parse_other_compound(t, peek().text));
    return;
  }
  if (t.kind == TokKind::Name) {
    const std::string& kw = t.text;
    if (kw == "if") {
      out.push_back(parse_if());
      return;
    }
    if (kw == "for") {
      out.push_back(parse_for());
      return;
    }
    if (kw == "while" || kw == "with" || kw == "try" || kw == "class" || kw == "def" ||
        kw == "async") {
      out.push_back(parse_other_compound(t, kw));
      return;
    }
    if (kw == "elif" || kw == "else") {
      fail(t, "'" + kw + "' does not follow an 'if' block at the same indentation");
    }
    if (kw == "except" || kw == "finally") {
      fail(t, "'" + kw + "' does not follow a 'try' block at the same indentation");
    }
    if (kw == "match") {  // soft keyword: a `match x:` line followed by an indented block
      std::size_t i = 1;
      while (peek(i).kind != TokKind::Newline && peek(i).kind != TokKind::End) ++i;
      if (i > 1 && at_op(":", i - 1) && peek(i + 1).kind == TokKind::Indent) {
        out.push_back(parse_other_compound(t, "match"));
        return;
      }
    }
  }
  parse_simple_statements(out);
}

void Parser::parse_simple_statements(Block& out) {
  while (true) {
    out.push_back(parse_simple_statement());
    if (!accept_op(";")) break;
    if (at(TokKind::Newline)) break;
  }
  if (!at(TokKind::Newline)) unexpected(peek());
  next();
}

StmtPtr Parser::parse_simple_statement() {
  const Token& t = peek();
  nodes_ = 0;
  if (t.kind == TokKind::Name) {
    const std::string& kw = t.text;
    if (kw == "pass") {
      next();
      return make_stmt(StmtKind::Pass, t.loc);
    }
    if (kw == "return") {
      next();
      auto s = make_stmt(StmtKind::Return, t.loc);
      if (starts_expression()) s->value = parse_testlist();
      return s;
    }
    if (kw == "import" || kw == "from" || kw == "del" || kw == "global" || kw == "nonlocal" ||
        kw == "assert" || kw == "raise" || kw == "break" || kw == "continue" || kw == "yield") {
      return parse_other_simple(t, kw);
    }
    if (is_compound_keyword(kw)) {
      fail(t, "'" + kw + "' must start its own line (it cannot follow ':' or ';')");
    }
  }
  return parse_expression_statement();
}

StmtPtr Parser::parse_expression_statement() {
  const Token& t = peek();
  ExprPtr first = parse_testlist();
  if (at_op(":")) {  // x: float = 1.0
    next();
    parse_test();
    if (accept_op("=")) parse_testlist();
    auto s = make_stmt(StmtKind::Other, t.loc);
    s->keyword = "annotated assignment";
    return s;
  }
  if (at_op("=")) {
    auto s = make_stmt(StmtKind::Assign, t.loc);
    s->targets.push_back(std::move(first));
    while (accept_op("=")) {
      const Token& v = peek();
      if (at_name("yield")) {
        while (!at(TokKind::Newline) && !at(TokKind::End) && !at_op(";")) next();
        s->targets.push_back(other(v.loc, "yield"));
      } else {
        s->targets.push_back(parse_testlist());
      }
    }
    s->value = std::move(s->targets.back());
    s->targets.pop_back();
    return s;
  }
  const Token& op = peek();
  if (op.kind == TokKind::Op && op.text.size() >= 2 && op.text.back() == '=' && op.text != "==" &&
      op.text != "<=" && op.text != ">=" && op.text != "!=" && op.text != ":=") {
    const std::string bare = op.text.substr(0, op.text.size() - 1);
    if (bare != "+" && bare != "-" && bare != "*" && bare != "/") {
      fail(op, "augmented assignment '" + op.text +
                   "' is not supported in a kernel; write 'x = x " + bare + " y' instead");
    }
    next();
    auto s = make_stmt(StmtKind::AugAssign, t.loc);
    s->target = std::move(first);
    s->op = bare;
    s->value = parse_testlist();
    return s;
  }
  auto s = make_stmt(StmtKind::ExprStmt, t.loc);
  s->value = std::move(first);
  return s;
}

StmtPtr Parser::parse_if() {
  // elif chains are built iteratively: each elif is an If inside the previous If's orelse.
  auto head = [this]() {
    const Token& kw = next();  // 'if' or 'elif'
    auto s = make_stmt(StmtKind::If, kw.loc);
    nodes_ = 0;
    s->value = parse_namedexpr();
    expect_op(":", "after the '" + kw.text + "' condition");
    s->body = parse_suite();
    return s;
  };
  StmtPtr root = head();
  Stmt* last = root.get();
  int elifs = 0;
  while (at_name("elif")) {
    if (++elifs > kMaxElifs) fail(peek(), "too many 'elif' branches in one 'if' statement");
    StmtPtr branch = head();
    Stmt* const b = branch.get();
    last->orelse.push_back(std::move(branch));
    last = b;
  }
  if (at_name("else")) {
    next();
    expect_op(":", "after 'else'");
    last->orelse = parse_suite();
  }
  return root;
}

StmtPtr Parser::parse_for() {
  const Token& kw = next();
  auto s = make_stmt(StmtKind::For, kw.loc);
  nodes_ = 0;
  const Token& target = peek();
  if (target.kind == TokKind::Name && !is_keyword(target.text) && at_name("in", 1)) {
    s->var = next().text;
  } else {
    parse_exprlist();
    if (!at_name("in"))
      fail(peek(), "expected 'in' in the 'for' statement, found " + describe(peek()));
    fail(target, "the loop variable of a 'for' statement must be a single name");
  }
  next();  // 'in'
  ExprPtr it = parse_testlist();
  if (it->kind == ExprKind::Call && it->keywords.empty() && it->args[0]->kind == ExprKind::Name &&
      it->args[0]->name == "range") {
    for (std::size_t i = 1; i < it->args.size(); ++i)
      s->range_args.push_back(std::move(it->args[i]));
  } else {
    s->iter = std::move(it);
  }
  expect_op(":", "at the end of the 'for' line");
  s->body = parse_suite();
  if (at_name("else")) {
    next();
    expect_op(":", "after 'else'");
    parse_suite();
    auto o = make_stmt(StmtKind::Other, kw.loc);
    o->keyword = "for-else";
    return o;
  }
  return s;
}

StmtPtr Parser::parse_other_compound(const Token& start, const std::string& keyword) {
  auto s = make_stmt(StmtKind::Other, start.loc);
  s->keyword = keyword;
  skip_logical_line();
  if (at(TokKind::Indent)) skip_block();
  const bool has_clauses = keyword == "while" || keyword == "try" || keyword == "async";
  while (has_clauses && (at_name("else") || at_name("except") || at_name("finally"))) {
    skip_logical_line();
    if (at(TokKind::Indent)) skip_block();
  }
  return s;
}

StmtPtr Parser::parse_other_simple(const Token& start, const std::string& keyword) {
  auto s = make_stmt(StmtKind::Other, start.loc);
  s->keyword = keyword;
  next();
  while (!at(TokKind::Newline) && !at(TokKind::End) && !at_op(";")) next();
  return s;
}

void Parser::skip_logical_line() {
  while (!at(TokKind::Newline) && !at(TokKind::End)) next();
  if (at(TokKind::Newline)) next();
}

void Parser::skip_block() {
  int level = 0;
  do {
    if (at(TokKind::Indent)) ++level;
    if (at(TokKind::Dedent)) --level;
    next();
  } while (level > 0 && !at(TokKind::End));
}

FunctionDef parse_function(std::string_view source, int first_line) {
  return Parser(source, first_line).parse_function();
}

}  // namespace raptor::parse
