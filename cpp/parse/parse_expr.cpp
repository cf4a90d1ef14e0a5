// The expression half of the recursive-descent parser, one function per Python precedence level,
// loosest first: parse_namedexpr (:=) -> parse_test (lambda, a if c else b) -> parse_or ->
// parse_and -> parse_not -> parse_comparison -> parse_binary_level (| ^ & << >> + - * / // % @)
// -> parse_factor (unary - + ~) -> parse_power (**, await) -> parse_primary (calls, subscripts,
// attributes) -> parse_atom. Constructs the language refuses become ExprKind::Other with a name.
#include <algorithm>
#include <array>
#include <cctype>
#include <charconv>
#include <cstdint>
#include <limits>

#include "parse/parser_impl.hpp"

namespace raptor::parse {

ExprPtr Parser::node(ExprKind kind, Loc loc) {
  if (++nodes_ > kMaxNodes) {
    throw ParseError(loc.line, loc.col, "statement too long: split this expression into several");
  }
  auto e = std::make_unique<Expr>();
  e->kind = kind;
  e->loc = loc;
  return e;
}

ExprPtr Parser::other(Loc loc, std::string what) {
  auto e = node(ExprKind::Other, loc);
  e->name = std::move(what);
  return e;
}

bool Parser::starts_expression() const {
  const Token& t = peek();
  switch (t.kind) {
    case TokKind::Number:
    case TokKind::String:
      return true;
    case TokKind::Name:
      return !is_keyword(t.text) || t.text == "True" || t.text == "False" || t.text == "None" ||
             t.text == "not" || t.text == "lambda" || t.text == "await" || t.text == "yield";
    case TokKind::Op:
      return t.text == "(" || t.text == "[" || t.text == "{" || t.text == "-" || t.text == "+" ||
             t.text == "~" || t.text == "..." || t.text == "*";
    default:
      return false;
  }
}

ExprPtr Parser::parse_namedexpr() {
  const Token& t = peek();
  ExprPtr e = parse_test();
  if (!at_op(":=")) return e;
  next();
  parse_test();
  return other(t.loc, "assignment expression ':='");
}

ExprPtr Parser::parse_star_or_namedexpr() {
  if (!at_op("*")) return parse_namedexpr();
  const Token& star = next();
  parse_bitor();
  return other(star.loc, "starred expression '*'");
}

ExprPtr Parser::parse_testlist(bool allow_star) {
  const Token& t = peek();
  ExprPtr first = allow_star ? parse_star_or_namedexpr() : parse_namedexpr();
  if (!at_op(",")) return first;
  auto tuple = node(ExprKind::Tuple, t.loc);
  tuple->args.push_back(std::move(first));
  while (accept_op(",")) {
    if (!starts_expression()) break;  // trailing comma: `x = 1,`
    tuple->args.push_back(allow_star ? parse_star_or_namedexpr() : parse_namedexpr());
  }
  return tuple;
}

ExprPtr Parser::parse_exprlist() {
  const Token& t = peek();
  auto element = [this]() {
    if (!at_op("*")) return parse_bitor();
    const Token& star = next();
    parse_bitor();
    return other(star.loc, "starred expression '*'");
  };
  ExprPtr first = element();
  if (!at_op(",")) return first;
  auto tuple = node(ExprKind::Tuple, t.loc);
  tuple->args.push_back(std::move(first));
  while (accept_op(",")) {
    if (at_name("in") || !starts_expression()) break;
    tuple->args.push_back(element());
  }
  return tuple;
}

ExprPtr Parser::parse_test() {
  const DepthGuard guard(*this, peek());
  if (at_name("lambda")) return parse_lambda();
  const Token& t = peek();
  ExprPtr body = parse_or();
  if (!at_name("if")) return body;
  next();
  ExprPtr cond = parse_or();
  if (!at_name("else")) {
    fail(peek(), "expected 'else' in the conditional expression 'a if condition else b', found " +
                     describe(peek()));
  }
  next();
  ExprPtr orelse = parse_test();
  auto e = node(ExprKind::IfExp, t.loc);
  e->args.push_back(std::move(cond));
  e->args.push_back(std::move(body));
  e->args.push_back(std::move(orelse));
  return e;
}

ExprPtr Parser::parse_lambda() {
  const Token& kw = next();
  while (!at_op(":")) {
    if (at_op("*") || at_op("**") || at_op("/") || at_op(",")) {
      next();
    } else if (peek().kind == TokKind::Name && !is_keyword(peek().text)) {
      next();
      if (accept_op("=")) parse_test();
    } else {
      unexpected(peek(), "in the lambda's parameters");
    }
  }
  next();
  parse_test();
  return other(kw.loc, "lambda");
}

ExprPtr Parser::parse_or() {
  const Token& t = peek();
  ExprPtr first = parse_and();
  if (!at_name("or")) return first;
  auto e = node(ExprKind::BoolOp, t.loc);
  e->op = "or";
  e->args.push_back(std::move(first));
  while (at_name("or")) {
    next();
    e->args.push_back(parse_and());
  }
  return e;
}

ExprPtr Parser::parse_and() {
  const Token& t = peek();
  ExprPtr first = parse_not();
  if (!at_name("and")) return first;
  auto e = node(ExprKind::BoolOp, t.loc);
  e->op = "and";
  e->args.push_back(std::move(first));
  while (at_name("and")) {
    next();
    e->args.push_back(parse_not());
  }
  return e;
}

ExprPtr Parser::parse_not() {
  if (!at_name("not")) return parse_comparison();
  const Token& kw = next();
  const DepthGuard guard(*this, kw);
  auto e = node(ExprKind::Not, kw.loc);
  e->args.push_back(parse_not());
  return e;
}

ExprPtr Parser::parse_comparison() {
  const Token& t = peek();
  ExprPtr first = parse_bitor();
  std::vector<std::string> ops;
  std::vector<ExprPtr> operands;
  const Token* refused = nullptr;  // the first `in`/`is` operator
  std::string refused_op;
  while (true) {
    const Token& op = peek();
    std::string text;
    if (op.kind == TokKind::Op && (op.text == "<" || op.text == ">" || op.text == "<=" ||
                                   op.text == ">=" || op.text == "==" || op.text == "!=")) {
      text = next().text;
    } else if (at_name("in")) {
      next();
      text = "in";
    } else if (at_name("not") && at_name("in", 1)) {
      next();
      next();
      text = "not in";
    } else if (at_name("is")) {
      next();
      text = accept_name("not") ? "is not" : "is";
    } else {
      break;
    }
    if ((text == "in" || text == "not in" || text == "is" || text == "is not") && !refused) {
      refused = &op;
      refused_op = text;
    }
    ops.push_back(std::move(text));
    operands.push_back(parse_bitor());
  }
  if (ops.empty()) return first;
  if (refused) return other(refused->loc, "'" + refused_op + "' operator");
  auto e = node(ExprKind::Compare, t.loc);
  e->ops = std::move(ops);
  e->args.push_back(std::move(first));
  for (ExprPtr& operand : operands) e->args.push_back(std::move(operand));
  return e;
}

ExprPtr Parser::parse_bitor() { return parse_binary_level(0); }

ExprPtr Parser::parse_binary_level(int level) {
  // Left-associative binary operators, loosest first.
  static constexpr std::array<std::array<std::string_view, 5>, 6> kLevels = {{
      {"|"},
      {"^"},
      {"&"},
      {"<<", ">>"},
      {"+", "-"},
      {"*", "/", "//", "%", "@"},
  }};
  const Token& t = peek();
  const auto operand = [&]() {
    return level + 1 < static_cast<int>(kLevels.size()) ? parse_binary_level(level + 1)
                                                        : parse_factor();
  };
  ExprPtr lhs = operand();
  while (true) {
    const Token& op = peek();
    const auto& ops = kLevels[static_cast<std::size_t>(level)];
    const bool match = op.kind == TokKind::Op &&
                       std::find(ops.begin(), ops.end(), std::string_view(op.text)) != ops.end();
    if (!match) return lhs;
    next();
    ExprPtr rhs = operand();
    auto e = node(ExprKind::Binary, t.loc);
    e->op = op.text;
    e->args.push_back(std::move(lhs));
    e->args.push_back(std::move(rhs));
    lhs = std::move(e);
  }
}

ExprPtr Parser::parse_factor() {
  if (!at_op("-") && !at_op("+") && !at_op("~")) return parse_power();
  const Token& op = next();
  const DepthGuard guard(*this, op);
  auto e = node(ExprKind::Unary, op.loc);
  e->op = op.text;
  e->args.push_back(parse_factor());
  return e;
}

ExprPtr Parser::parse_power() {
  const Token& t = peek();
  ExprPtr base;
  if (at_name("await")) {
    next();
    const DepthGuard guard(*this, t);
    parse_primary();
    base = other(t.loc, "await");
  } else {
    base = parse_primary();
  }
  if (!at_op("**")) return base;
  const Token& op = next();
  const DepthGuard guard(*this, op);
  ExprPtr exponent = parse_factor();  // right-associative, and `x ** -1` works
  auto e = node(ExprKind::Binary, t.loc);
  e->op = "**";
  e->args.push_back(std::move(base));
  e->args.push_back(std::move(exponent));
  return e;
}

ExprPtr Parser::parse_primary() {
  const Token& t = peek();
  ExprPtr e = parse_atom();
  while (true) {
    if (at_op("(")) {
      e = parse_call(std::move(e), t.loc);
    } else if (at_op("[")) {
      next();
      ExprPtr index = parse_subscript_index();
      expect_op("]", "to close the subscript");
      auto s = node(ExprKind::Subscript, t.loc);
      s->args.push_back(std::move(e));
      s->args.push_back(std::move(index));
      e = std::move(s);
    } else if (at_op(".")) {
      next();
      auto a = node(ExprKind::Attribute, t.loc);
      a->name = expect_identifier("an attribute name");
      a->args.push_back(std::move(e));
      e = std::move(a);
    } else {
      return e;
    }
  }
}

ExprPtr Parser::parse_call(ExprPtr callee, Loc loc) {
  next();  // '('
  auto call = node(ExprKind::Call, loc);
  call->args.push_back(std::move(callee));
  std::string refusal;
  while (!at_op(")")) {
    const Token& a = peek();
    if (at_op("*") || at_op("**")) {
      next();
      parse_test();
      if (refusal.empty()) {
        refusal = a.text == "*" ? "argument unpacking '*' in a call"
                                : "keyword argument unpacking '**' in a call";
      }
    } else if (a.kind == TokKind::Name && !is_keyword(a.text) && at_op("=", 1)) {
      for (const std::string& k : call->keywords) {
        if (k == a.text) fail(a, "keyword argument '" + a.text + "' repeated");
      }
      next();
      next();
      call->keywords.push_back(a.text);
      call->args.push_back(parse_test());
    } else {
      ExprPtr value = parse_namedexpr();
      if (at_name("for") || at_name("async")) {
        skip_comprehension();
        if (refusal.empty()) refusal = "generator expression";
      } else if (!call->keywords.empty()) {
        fail(a, "positional argument follows keyword argument");
      }
      call->args.push_back(std::move(value));
    }
    if (!accept_op(",")) break;
  }
  expect_op(")", "to close the call");
  if (!refusal.empty()) return other(loc, refusal);
  return call;
}

ExprPtr Parser::parse_subscript_index() {
  const Token& t = peek();
  std::vector<ExprPtr> elements;
  bool comma = false;
  while (true) {
    const Token& s = peek();
    if (at_op("*")) {
      next();
      parse_bitor();
      elements.push_back(other(s.loc, "starred expression '*'"));
    } else {
      ExprPtr e;
      if (!at_op(":")) e = parse_namedexpr();
      if (at_op(":")) {  // a slice: [lower] ':' [upper] [':' [step]]
        next();
        if (!at_op(":") && !at_op("]") && !at_op(",")) parse_test();
        if (accept_op(":") && !at_op("]") && !at_op(",")) parse_test();
        e = other(s.loc, "slice");
      }
      elements.push_back(std::move(e));
    }
    if (!accept_op(",")) break;
    comma = true;
    if (at_op("]")) break;
  }
  if (elements.size() == 1 && !comma) return std::move(elements.front());
  auto tuple = node(ExprKind::Tuple, t.loc);
  tuple->args = std::move(elements);
  return tuple;
}

ExprPtr Parser::parse_atom() {
  const Token& t = peek();
  switch (t.kind) {
    case TokKind::Name: {
      if (t.text == "True" || t.text == "False") {
        next();
        auto e = node(ExprKind::Bool, t.loc);
        e->bool_value = t.text == "True";
        return e;
      }
      if (t.text == "None") {
        next();
        return other(t.loc, "None");
      }
      if (t.text == "yield") fail(t, "'yield' is only allowed in parentheses or after '='");
      if (is_keyword(t.text)) unexpected(t);
      next();
      auto e = node(ExprKind::Name, t.loc);
      e->name = t.text;
      return e;
    }
    case TokKind::Number:
      next();
      return parse_number(t);
    case TokKind::String: {
      auto e = node(ExprKind::String, t.loc);
      while (at(TokKind::String)) e->name += next().text;  // "a" "b" concatenate
      return e;
    }
    case TokKind::Op:
      if (t.text == "(") return parse_paren(t);
      if (t.text == "[") return parse_list(t);
      if (t.text == "{") return parse_brace(t);
      if (t.text == "...") {
        next();
        return other(t.loc, "Ellipsis");
      }
      unexpected(t);
    default:
      fail(t, "expected an expression, found " + describe(t));
  }
}

ExprPtr Parser::parse_number(const Token& tok) {
  std::string text;
  for (const char c : tok.text) {
    if (c != '_') text += c;
  }
  if (text.back() == 'j' || text.back() == 'J') return other(tok.loc, "complex number");
  auto e = node(ExprKind::Number, tok.loc);
  const char* const first = text.data();
  const char* const last = text.data() + text.size();
  const bool prefixed =
      text.size() > 2 && text[0] == '0' && std::isalpha(static_cast<unsigned char>(text[1]));
  if (prefixed || text.find_first_of(".eE") == std::string::npos) {
    const int base = !prefixed                            ? 10
                     : (text[1] == 'x' || text[1] == 'X') ? 16
                     : (text[1] == 'o' || text[1] == 'O') ? 8
                                                          : 2;
    int64_t value = 0;
    const auto [ptr, ec] = std::from_chars(first + (prefixed ? 2 : 0), last, value, base);
    if (ec == std::errc::result_out_of_range) {
      // Beyond int64: Python's ints are exact, so the digits are kept for the front end's
      // arbitrary-precision constants (ir/lower_int.hpp).
      e->is_int = true;
      e->int_text = text;
      e->number = std::numeric_limits<double>::infinity();
      return e;
    }
    if (ec != std::errc() || ptr != last) fail(tok, "invalid integer literal " + tok.text);
    e->is_int = true;
    e->int_value = value;
    e->number = static_cast<double>(value);
    return e;
  }
  double value = 0.0;
  const auto [ptr, ec] = std::from_chars(first, last, value);
  if (ec == std::errc::result_out_of_range) {
    // from_chars leaves the value alone: overflow (1e400) -> inf, underflow (1e-400) -> 0.
    const auto exp = text.find_first_of("eE");
    const bool negative_exp =
        exp != std::string::npos && exp + 1 < text.size() && text[exp + 1] == '-';
    value = negative_exp ? 0.0 : std::numeric_limits<double>::infinity();
  } else if (ec != std::errc() || ptr != last) {
    fail(tok, "invalid number literal '" + tok.text + "'");
  }
  e->number = value;
  return e;
}

ExprPtr Parser::parse_paren(const Token& open) {
  next();
  if (accept_op(")")) return node(ExprKind::Tuple, open.loc);  // ()
  if (at_name("yield")) {
    const Token& kw = next();
    if (!at_name("from") && starts_expression()) parse_testlist();
    if (accept_name("from")) parse_test();
    expect_op(")", "to close the parenthesis");
    return other(kw.loc, "yield");
  }
  ExprPtr first = parse_star_or_namedexpr();
  if (at_name("for") || at_name("async")) {
    skip_comprehension();
    expect_op(")", "to close the generator expression");
    return other(open.loc, "generator expression");
  }
  if (!at_op(",")) {
    expect_op(")", "to close the parenthesis");
    return first;
  }
  auto tuple = node(ExprKind::Tuple, open.loc);
  tuple->args.push_back(std::move(first));
  while (accept_op(",")) {
    if (at_op(")")) break;
    tuple->args.push_back(parse_star_or_namedexpr());
  }
  expect_op(")", "to close the tuple");
  return tuple;
}

ExprPtr Parser::parse_list(const Token& open) {
  next();
  auto list = node(ExprKind::List, open.loc);
  if (accept_op("]")) return list;
  list->args.push_back(parse_star_or_namedexpr());
  if (at_name("for") || at_name("async")) {
    skip_comprehension();
    expect_op("]", "to close the list comprehension");
    return other(open.loc, "list comprehension");
  }
  while (accept_op(",")) {
    if (at_op("]")) break;
    list->args.push_back(parse_star_or_namedexpr());
  }
  expect_op("]", "to close the list");
  return list;
}

ExprPtr Parser::parse_brace(const Token& open) {
  next();
  if (accept_op("}")) return other(open.loc, "dict");
  bool is_dict = false;
  const auto element = [&]() {
    if (accept_op("**")) {
      parse_bitor();
      is_dict = true;
      return;
    }
    parse_star_or_namedexpr();
    if (accept_op(":")) {
      parse_test();
      is_dict = true;
    }
  };
  element();
  if (at_name("for") || at_name("async")) {
    skip_comprehension();
    expect_op("}", "to close the comprehension");
    return other(open.loc, is_dict ? "dict comprehension" : "set comprehension");
  }
  while (accept_op(",")) {
    if (at_op("}")) break;
    element();
  }
  expect_op("}", is_dict ? "to close the dict" : "to close the set");
  return other(open.loc, is_dict ? "dict" : "set");
}

void Parser::skip_comprehension() {
  while (at_name("for") || at_name("async")) {
    if (at_name("async")) next();
    if (!at_name("for")) fail(peek(), "expected 'for' after 'async', found " + describe(peek()));
    next();
    parse_exprlist();
    if (!at_name("in"))
      fail(peek(), "expected 'in' in the comprehension, found " + describe(peek()));
    next();
    parse_or();
    while (at_name("if")) {
      next();
      parse_or();
    }
  }
}

}  // namespace raptor::parse
