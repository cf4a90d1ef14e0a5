// Tests for the kernel-source lexer and parser (parse/parser.hpp). Expressions are checked
// through `dump`, a compact S-expression rendering of the AST; start reading at the helpers.
#include <gtest/gtest.h>

#include <cmath>
#include <string>

#include "common/error.hpp"
#include "parse/parser.hpp"

namespace raptor::parse {
namespace {

std::string dump(const Expr& e) {
  const auto join = [](const Expr& x, std::string head) {
    for (const ExprPtr& a : x.args) head += " " + dump(*a);
    return "(" + head + ")";
  };
  switch (e.kind) {
    case ExprKind::Name:
      return e.name;
    case ExprKind::Number:
      if (e.is_int) return std::to_string(e.int_value);
      return std::to_string(e.number);
    case ExprKind::Bool:
      return e.bool_value ? "True" : "False";
    case ExprKind::String:
      return "'" + e.name + "'";
    case ExprKind::Unary:
      return join(e, "u" + e.op);
    case ExprKind::Not:
      return join(e, "not");
    case ExprKind::Binary:
    case ExprKind::BoolOp:
      return join(e, e.op);
    case ExprKind::Compare: {
      std::string s = "(cmp " + dump(*e.args[0]);
      for (std::size_t i = 0; i < e.ops.size(); ++i)
        s += " " + e.ops[i] + " " + dump(*e.args[i + 1]);
      return s + ")";
    }
    case ExprKind::IfExp:
      return join(e, "ifexp");
    case ExprKind::Call: {
      std::string s = "(call";
      const std::size_t positional = e.args.size() - e.keywords.size();
      for (std::size_t i = 0; i < e.args.size(); ++i) {
        s += " ";
        if (i >= positional) s += e.keywords[i - positional] + "=";
        s += dump(*e.args[i]);
      }
      return s + ")";
    }
    case ExprKind::Subscript:
      return join(e, "sub");
    case ExprKind::Attribute:
      return "(. " + dump(*e.args[0]) + " " + e.name + ")";
    case ExprKind::Tuple:
      return join(e, "tuple");
    case ExprKind::List:
      return join(e, "list");
    case ExprKind::Other:
      return "<" + e.name + ">";
  }
  return "?";
}

FunctionDef parse(std::string_view src, int first_line = 1) {
  return parse_function(src, first_line);
}

// Parses `def f():\n    <body>` and returns the function.
FunctionDef body(const std::string& text) { return parse("def f():\n    " + text + "\n"); }

// The dump of `return <expr>`.
std::string expr(const std::string& text) {
  const FunctionDef f = body("return " + text);
  EXPECT_EQ(f.body.size(), 1u);
  EXPECT_EQ(f.body[0]->kind, StmtKind::Return);
  return dump(*f.body[0]->value);
}

// Expects a ParseError at (line, col) whose message contains `needle`.
void expect_error(std::string_view src, int line, int col, const std::string& needle,
                  int first_line = 1) {
  try {
    parse(src, first_line);
    ADD_FAILURE() << "no ParseError for:\n" << src;
  } catch (const ParseError& e) {
    EXPECT_EQ(e.line, line) << e.message;
    EXPECT_EQ(e.col, col) << e.message;
    EXPECT_NE(e.message.find(needle), std::string::npos) << "message: " << e.message;
  }
}

// Expects a ParseError (anywhere) and nothing else.
void expect_some_error(std::string_view src) { EXPECT_THROW(parse(src), ParseError) << src; }

// ---------------------------------------------------------------- functions and parameters

TEST(ParseFunction, NameParamsAnnotationsDefaults) {
  const FunctionDef f =
      parse("def step(x: hawk.Field[float], dt : float = 0.1, n=3, flag: bool=True):\n    pass\n");
  EXPECT_EQ(f.name, "step");
  EXPECT_EQ(f.loc.line, 1);
  EXPECT_EQ(f.loc.col, 1);
  ASSERT_EQ(f.params.size(), 4u);
  EXPECT_EQ(f.params[0].name, "x");
  EXPECT_EQ(f.params[0].annotation, "hawk.Field[float]");
  EXPECT_FALSE(f.params[0].has_default);
  EXPECT_EQ(f.params[0].loc.col, 10);
  EXPECT_EQ(f.params[1].name, "dt");
  EXPECT_EQ(f.params[1].annotation, "float");
  EXPECT_TRUE(f.params[1].has_default);
  EXPECT_EQ(f.params[2].annotation, "");
  EXPECT_TRUE(f.params[2].has_default);
  EXPECT_EQ(f.params[3].annotation, "bool");
  ASSERT_EQ(f.body.size(), 1u);
  EXPECT_EQ(f.body[0]->kind, StmtKind::Pass);
}

TEST(ParseFunction, ReturnAnnotationTrailingCommaEmptyParams) {
  EXPECT_EQ(parse("def f(a, b,) -> float:\n  return a\n").params.size(), 2u);
  EXPECT_TRUE(parse("def f():\n  pass\n").params.empty());
  EXPECT_EQ(parse("def f(a: 'Tuple[int]'  ):\n  pass\n").params[0].annotation, "'Tuple[int]'");
  const FunctionDef g = parse("def f(a: Dict[str,\n          int]):\n  pass\n");
  EXPECT_EQ(g.params[0].annotation, "Dict[str,\n          int]");
}

TEST(ParseFunction, RefusedParameterForms) {
  expect_error("def f(a, *args):\n  pass\n", 1, 10, "*args parameters");
  expect_error("def f(a, **kw):\n  pass\n", 1, 10, "**kwargs parameters");
  expect_error("def f(a, /, b):\n  pass\n", 1, 10, "positional-only marker '/'");
  expect_error("def f(a, *, b):\n  pass\n", 1, 10, "keyword-only marker '*'");
  expect_error("def f(a=1, b):\n  pass\n", 1, 12, "without a default");
  expect_error("def f(a, a):\n  pass\n", 1, 10, "duplicate parameter 'a'");
  expect_error("def f(if):\n  pass\n", 1, 7, "'if' is a keyword");
}

TEST(ParseFunction, Decorators) {
  const FunctionDef f = parse("@hawk.kernel\ndef f(x):\n    return x\n", 10);
  EXPECT_EQ(f.loc.line, 11);
  EXPECT_EQ(f.body[0]->loc.line, 12);
  EXPECT_EQ(f.body[0]->loc.col, 5);
  const FunctionDef g = parse(
      "@hawk.kernel(steps=1, guard=Guard(active_set=True))\n"
      "@other\n"
      "def g(x):\n    return x\n");
  EXPECT_EQ(g.name, "g");
  EXPECT_EQ(g.loc.line, 3);
  const FunctionDef h = parse(
      "@hawk.kernel(\n"
      "    steps=1,\n"
      "    guard=Guard(\n"
      "        active_set=True),  # a comment\n"
      ")\n"
      "def h(x):\n    return x\n",
      100);
  EXPECT_EQ(h.loc.line, 105);
  EXPECT_EQ(h.body[0]->loc.line, 106);
}

TEST(ParseFunction, IndentedSourceKeepsRealColumns) {
  const FunctionDef f = parse(
      "    @hawk.kernel\n"
      "    def f(x):\n"
      "        y = x + 1\n"
      "        if y > 0:\n"
      "            return y\n"
      "        return -y\n",
      20);
  EXPECT_EQ(f.loc.line, 21);
  EXPECT_EQ(f.loc.col, 5);
  EXPECT_EQ(f.params[0].loc.col, 11);
  ASSERT_EQ(f.body.size(), 3u);
  EXPECT_EQ(f.body[0]->loc.line, 22);
  EXPECT_EQ(f.body[0]->loc.col, 9);
  EXPECT_EQ(f.body[0]->value->loc.col, 13);
  EXPECT_EQ(f.body[0]->value->args[1]->loc.col, 17);
  EXPECT_EQ(f.body[1]->body[0]->loc.line, 24);
  EXPECT_EQ(f.body[1]->body[0]->loc.col, 13);
  // A body line indented less than the def is refused.
  expect_error("    def f(x):\n        pass\n  x = 1\n", 3, 3, "inconsistent indentation");
}

TEST(ParseFunction, LeadingCommentsAndBlankLines) {
  const FunctionDef f =
      parse("\n# comment\n\ndef f():\n\n    # c\n    pass  # trailing\n\n# end\n");
  EXPECT_EQ(f.loc.line, 4);
  EXPECT_EQ(f.body[0]->loc.line, 7);
}

TEST(ParseFunction, TrailingCodeRefused) {
  expect_error("def f():\n  pass\nx = 1\n", 3, 1, "after the end of the function body");
}

// ---------------------------------------------------------------- statements

TEST(ParseStmt, Assignments) {
  const FunctionDef f = body("a = b = c + 1");
  const Stmt& s = *f.body[0];
  EXPECT_EQ(s.kind, StmtKind::Assign);
  ASSERT_EQ(s.targets.size(), 2u);
  EXPECT_EQ(dump(*s.targets[0]), "a");
  EXPECT_EQ(dump(*s.targets[1]), "b");
  EXPECT_EQ(dump(*s.value), "(+ c 1)");

  const FunctionDef g = body("a, b = b, a");
  EXPECT_EQ(dump(*g.body[0]->targets[0]), "(tuple a b)");
  EXPECT_EQ(dump(*g.body[0]->value), "(tuple b a)");
  EXPECT_EQ(dump(*body("(a, b), c = x").body[0]->targets[0]), "(tuple (tuple a b) c)");
  EXPECT_EQ(dump(*body("x = 1,").body[0]->value), "(tuple 1)");
  EXPECT_EQ(dump(*body("v[i] = 2").body[0]->targets[0]), "(sub v i)");
}

TEST(ParseStmt, AugmentedAssignment) {
  for (const std::string op : {"+", "-", "*", "/"}) {
    const FunctionDef f = body("x " + op + "= y * 2");
    EXPECT_EQ(f.body[0]->kind, StmtKind::AugAssign);
    EXPECT_EQ(f.body[0]->op, op);
    EXPECT_EQ(dump(*f.body[0]->target), "x");
    EXPECT_EQ(dump(*f.body[0]->value), "(* y 2)");
  }
  expect_error("def f():\n    x //= 2\n", 2, 7, "augmented assignment '//='");
  expect_error("def f():\n    x **= 2\n", 2, 7, "'**='");
  expect_error("def f():\n    x %= 2\n", 2, 7, "'%='");
  expect_error("def f():\n    x |= 2\n", 2, 7, "'|='");
}

TEST(ParseStmt, IfElifElse) {
  const FunctionDef f = parse(
      "def f(x):\n"
      "    if x < 0:\n"
      "        y = 1\n"
      "    elif x < 1:\n"
      "        y = 2\n"
      "    elif x < 2: y = 3\n"
      "    else:\n"
      "        y = 4\n"
      "    return y\n");
  ASSERT_EQ(f.body.size(), 2u);
  const Stmt& s = *f.body[0];
  EXPECT_EQ(s.kind, StmtKind::If);
  EXPECT_EQ(dump(*s.value), "(cmp x < 0)");
  ASSERT_EQ(s.body.size(), 1u);
  ASSERT_EQ(s.orelse.size(), 1u);
  const Stmt& e1 = *s.orelse[0];
  EXPECT_EQ(e1.kind, StmtKind::If);
  EXPECT_EQ(e1.loc.line, 4);
  EXPECT_EQ(e1.loc.col, 5);
  EXPECT_EQ(dump(*e1.value), "(cmp x < 1)");
  ASSERT_EQ(e1.orelse.size(), 1u);
  const Stmt& e2 = *e1.orelse[0];
  EXPECT_EQ(dump(*e2.body[0]->value), "3");
  ASSERT_EQ(e2.orelse.size(), 1u);
  EXPECT_EQ(e2.orelse[0]->kind, StmtKind::Assign);
  EXPECT_EQ(dump(*e2.orelse[0]->value), "4");

  const FunctionDef g = body("if a: pass");
  EXPECT_TRUE(g.body[0]->orelse.empty());
}

TEST(ParseStmt, ForLoops) {
  const FunctionDef f = body("for i in range(0, n, 2):\n        s += i");
  const Stmt& s = *f.body[0];
  EXPECT_EQ(s.kind, StmtKind::For);
  EXPECT_EQ(s.var, "i");
  ASSERT_EQ(s.range_args.size(), 3u);
  EXPECT_EQ(dump(*s.range_args[2]), "2");
  EXPECT_EQ(s.iter, nullptr);
  EXPECT_EQ(s.body.size(), 1u);

  const FunctionDef g = body("for x in items: pass");
  EXPECT_TRUE(g.body[0]->range_args.empty());
  ASSERT_NE(g.body[0]->iter, nullptr);
  EXPECT_EQ(dump(*g.body[0]->iter), "items");
  EXPECT_EQ(dump(*body("for x in range(n=3): pass").body[0]->iter), "(call range n=3)");
  EXPECT_TRUE(body("for i in range(): pass").body[0]->range_args.empty());

  const FunctionDef h = body("for i in range(3):\n        pass\n    else:\n        pass");
  ASSERT_EQ(h.body.size(), 1u);
  EXPECT_EQ(h.body[0]->kind, StmtKind::Other);
  EXPECT_EQ(h.body[0]->keyword, "for-else");
  EXPECT_EQ(h.body[0]->loc.col, 5);

  expect_error("def f():\n    for a, b in x:\n        pass\n", 2, 9, "single name");
}

TEST(ParseStmt, ReturnPassExprDocstring) {
  const FunctionDef f = parse(
      "def f(x):\n"
      "    \"\"\"Docstring\n    spanning lines.\"\"\"\n"
      "    g(x)\n"
      "    return\n");
  ASSERT_EQ(f.body.size(), 3u);
  EXPECT_EQ(f.body[0]->kind, StmtKind::ExprStmt);
  EXPECT_EQ(f.body[0]->value->kind, ExprKind::String);
  EXPECT_EQ(f.body[0]->value->name, "Docstring\n    spanning lines.");
  EXPECT_EQ(f.body[1]->kind, StmtKind::ExprStmt);
  EXPECT_EQ(f.body[1]->loc.line, 4);
  EXPECT_EQ(f.body[2]->kind, StmtKind::Return);
  EXPECT_EQ(f.body[2]->value, nullptr);
  EXPECT_EQ(expr("a, b"), "(tuple a b)");
}

TEST(ParseStmt, SemicolonsAndOneLineSuites) {
  const FunctionDef f = parse("def f(x): y = x; z = y; return z;\n");
  ASSERT_EQ(f.body.size(), 3u);
  EXPECT_EQ(f.body[2]->kind, StmtKind::Return);
  EXPECT_EQ(f.body[1]->loc.col, 18);
  const FunctionDef g = body("a = 1; b = 2");
  EXPECT_EQ(g.body.size(), 2u);
}

TEST(ParseStmt, RefusedStatementsBecomeOther) {
  const FunctionDef f = parse(
      "def f(x):\n"
      "    while x:\n"
      "        x -= 1\n"
      "    else:\n"
      "        pass\n"
      "    import math\n"
      "    from a import (b,\n"
      "        c)\n"
      "    with open(x) as g:\n"
      "        pass\n"
      "    try:\n"
      "        pass\n"
      "    except ValueError as e:\n"
      "        pass\n"
      "    else:\n"
      "        pass\n"
      "    finally:\n"
      "        pass\n"
      "    class A:\n"
      "        def m(self):\n"
      "            return 1\n"
      "    def g(y):\n"
      "        return y\n"
      "    @dec\n"
      "    def h(): pass\n"
      "    del x; global y\n"
      "    nonlocal z\n"
      "    assert x, 'msg'\n"
      "    raise ValueError('x')\n"
      "    break\n"
      "    continue\n"
      "    yield x\n"
      "    async def k(): pass\n"
      "    match x:\n"
      "        case 1:\n"
      "            pass\n"
      "    x: float = 1.0\n"
      "    y: int\n"
      "    return x\n");
  const std::vector<std::pair<std::string, int>> expected = {{"while", 2},
                                                             {"import", 6},
                                                             {"from", 7},
                                                             {"with", 9},
                                                             {"try", 11},
                                                             {"class", 19},
                                                             {"def", 22},
                                                             {"def", 24},
                                                             {"del", 26},
                                                             {"global", 26},
                                                             {"nonlocal", 27},
                                                             {"assert", 28},
                                                             {"raise", 29},
                                                             {"break", 30},
                                                             {"continue", 31},
                                                             {"yield", 32},
                                                             {"async", 33},
                                                             {"match", 34},
                                                             {"annotated assignment", 37},
                                                             {"annotated assignment", 38}};
  ASSERT_EQ(f.body.size(), expected.size() + 1);
  for (std::size_t i = 0; i < expected.size(); ++i) {
    EXPECT_EQ(f.body[i]->kind, StmtKind::Other) << i;
    EXPECT_EQ(f.body[i]->keyword, expected[i].first) << i;
    EXPECT_EQ(f.body[i]->loc.line, expected[i].second) << i;
  }
  EXPECT_EQ(f.body[9]->loc.col, 12);  // `global` after `del x;`
  EXPECT_EQ(f.body.back()->kind, StmtKind::Return);
  // `match` is only a keyword in front of a block.
  EXPECT_EQ(body("match = 3").body[0]->kind, StmtKind::Assign);
  EXPECT_EQ(body("match(x)").body[0]->kind, StmtKind::ExprStmt);
  // lambda at statement level is just an expression
  EXPECT_EQ(dump(*body("lambda: 0").body[0]->value), "<lambda>");
}

TEST(ParseStmt, MisplacedClauses) {
  expect_error("def f():\n    else:\n        pass\n", 2, 5, "'else' does not follow");
  expect_error("def f():\n    x = 1; if x: pass\n", 2, 12, "must start its own line");
}

// ---------------------------------------------------------------- expressions

TEST(ParseExpr, Precedence) {
  EXPECT_EQ(expr("-x**2"), "(u- (** x 2))");
  EXPECT_EQ(expr("x**-1"), "(** x (u- 1))");
  EXPECT_EQ(expr("2**3**2"), "(** 2 (** 3 2))");
  EXPECT_EQ(expr("a - b - c"), "(- (- a b) c)");
  EXPECT_EQ(expr("a / b * c // d % e @ f"), "(@ (% (// (* (/ a b) c) d) e) f)");
  EXPECT_EQ(expr("a + b * c"), "(+ a (* b c))");
  EXPECT_EQ(expr("(a + b) * c"), "(* (+ a b) c)");
  EXPECT_EQ(expr("-a * b"), "(* (u- a) b)");
  EXPECT_EQ(expr("+a"), "(u+ a)");
  EXPECT_EQ(expr("--a"), "(u- (u- a))");
  EXPECT_EQ(expr("~a"), "(u~ a)");
  EXPECT_EQ(expr("a < b <= c"), "(cmp a < b <= c)");
  EXPECT_EQ(expr("a == b != c > d >= e"), "(cmp a == b != c > d >= e)");
  EXPECT_EQ(expr("a + 1 < b * 2"), "(cmp (+ a 1) < (* b 2))");
  EXPECT_EQ(expr("a if c else b"), "(ifexp c a b)");
  EXPECT_EQ(expr("a if c else b if d else e"), "(ifexp c a (ifexp d b e))");
  EXPECT_EQ(expr("a or b or c"), "(or a b c)");
  EXPECT_EQ(expr("a and b and c or d"), "(or (and a b c) d)");
  EXPECT_EQ(expr("a or b and not c"), "(or a (and b (not c)))");
  EXPECT_EQ(expr("not a < b"), "(not (cmp a < b))");
  EXPECT_EQ(expr("not not a"), "(not (not a))");
  EXPECT_EQ(expr("a | b ^ c & d << e + f"), "(| a (^ b (& c (<< d (+ e f)))))");
  EXPECT_EQ(expr("a >> b"), "(>> a b)");
  EXPECT_EQ(expr("x if a < b else -y ** 2"), "(ifexp (cmp a < b) x (u- (** y 2)))");
}

TEST(ParseExpr, Locations) {
  const FunctionDef f = parse("def f(x):\n    return   a + (b *  c)\n", 7);
  const Expr& e = *f.body[0]->value;
  EXPECT_EQ(e.loc.line, 8);
  EXPECT_EQ(e.loc.col, 14);
  EXPECT_EQ(e.args[0]->loc.col, 14);
  EXPECT_EQ(e.args[1]->loc.col, 19);  // the inner expression starts at `b`
  EXPECT_EQ(e.args[1]->args[1]->loc.col, 24);
  const FunctionDef g = parse("def f(x):\n    return (a,\n            -b)\n");
  const Expr& t = *g.body[0]->value;
  EXPECT_EQ(t.kind, ExprKind::Tuple);
  EXPECT_EQ(t.loc.col, 12);
  EXPECT_EQ(t.args[1]->loc.line, 3);
  EXPECT_EQ(t.args[1]->loc.col, 13);
}

TEST(ParseExpr, PrimariesAndAtoms) {
  EXPECT_EQ(expr("f(a, b, k=v, m=1)"), "(call f a b k=v m=1)");
  EXPECT_EQ(expr("f()"), "(call f)");
  EXPECT_EQ(expr("f(a,)"), "(call f a)");
  EXPECT_EQ(expr("math.sin(x)"), "(call (. math sin) x)");
  EXPECT_EQ(expr("v[i]"), "(sub v i)");
  EXPECT_EQ(expr("v[i, j]"), "(sub v (tuple i j))");
  EXPECT_EQ(expr("v[i][j]"), "(sub (sub v i) j)");
  EXPECT_EQ(expr("v[1:2]"), "(sub v <slice>)");
  EXPECT_EQ(expr("v[::2]"), "(sub v <slice>)");
  EXPECT_EQ(expr("v[:, 0]"), "(sub v (tuple <slice> 0))");
  EXPECT_EQ(expr("a.b.c"), "(. (. a b) c)");
  EXPECT_EQ(expr("True"), "True");
  EXPECT_EQ(expr("False"), "False");
  EXPECT_EQ(expr("None"), "<None>");
  EXPECT_EQ(expr("'a' \"b\""), "'ab'");
  EXPECT_EQ(expr("r'\\d' b'x' f'{y}' u'z' Rb'w'"), "'\\dx{y}zw'");
  EXPECT_EQ(expr("'''a'b''' + \"x\\\"y\""), "(+ 'a'b' 'x\\\"y')");
  EXPECT_EQ(expr("()"), "(tuple)");
  EXPECT_EQ(expr("(a,)"), "(tuple a)");
  EXPECT_EQ(expr("(a, b,)"), "(tuple a b)");
  EXPECT_EQ(expr("[a, b]"), "(list a b)");
  EXPECT_EQ(expr("[]"), "(list)");
  EXPECT_EQ(expr("..."), "<Ellipsis>");
}

TEST(ParseExpr, RefusedExpressionsBecomeOther) {
  EXPECT_EQ(expr("lambda x, y=1: x + y"), "<lambda>");
  EXPECT_EQ(expr("a in b"), "<'in' operator>");
  EXPECT_EQ(expr("a not in b"), "<'not in' operator>");
  EXPECT_EQ(expr("a is b"), "<'is' operator>");
  EXPECT_EQ(expr("a is not b"), "<'is not' operator>");
  EXPECT_EQ(expr("a < b in c"), "<'in' operator>");
  EXPECT_EQ(expr("await x"), "<await>");
  EXPECT_EQ(expr("f(*a)"), "<argument unpacking '*' in a call>");
  EXPECT_EQ(expr("f(**k)"), "<keyword argument unpacking '**' in a call>");
  EXPECT_EQ(expr("f(x for x in y)"), "<generator expression>");
  EXPECT_EQ(expr("(x for x in y if x)"), "<generator expression>");
  EXPECT_EQ(expr("[x * 2 for x in y for z in w if z if x]"), "<list comprehension>");
  EXPECT_EQ(expr("{}"), "<dict>");
  EXPECT_EQ(expr("{a: 1, **b}"), "<dict>");
  EXPECT_EQ(expr("{a, b}"), "<set>");
  EXPECT_EQ(expr("{k: v for k, v in x}"), "<dict comprehension>");
  EXPECT_EQ(expr("{k for k in x}"), "<set comprehension>");
  EXPECT_EQ(expr("(y := 3)"), "<assignment expression ':='>");
  EXPECT_EQ(expr("2j"), "<complex number>");
  EXPECT_EQ(expr("1.5J + 1"), "(+ <complex number> 1)");
  EXPECT_EQ(expr("*a, b"), "(tuple <starred expression '*'> b)");
  EXPECT_EQ(expr("(yield x)"), "<yield>");
  const FunctionDef f = body("y = yield x");
  EXPECT_EQ(dump(*f.body[0]->value), "<yield>");
  // The Other node points at the refused operator.
  const FunctionDef g = body("return a  is b");
  EXPECT_EQ(g.body[0]->value->loc.col, 15);
}

TEST(ParseExpr, Numbers) {
  const auto number = [](const std::string& text) {
    const FunctionDef f = body("return " + text);
    return std::pair<bool, double>(f.body[0]->value->is_int, f.body[0]->value->number);
  };
  EXPECT_EQ(number("1_000"), std::make_pair(true, 1000.0));
  EXPECT_EQ(number("0x1F"), std::make_pair(true, 31.0));
  EXPECT_EQ(number("0o17"), std::make_pair(true, 15.0));
  EXPECT_EQ(number("0b101"), std::make_pair(true, 5.0));
  EXPECT_EQ(number("0"), std::make_pair(true, 0.0));
  EXPECT_EQ(number("00"), std::make_pair(true, 0.0));
  EXPECT_EQ(number("1e-3"), std::make_pair(false, 1e-3));
  EXPECT_EQ(number("1E3"), std::make_pair(false, 1000.0));
  EXPECT_EQ(number(".5"), std::make_pair(false, 0.5));
  EXPECT_EQ(number("1."), std::make_pair(false, 1.0));
  EXPECT_EQ(number("1_0.2_5"), std::make_pair(false, 10.25));
  EXPECT_EQ(number("2.0"), std::make_pair(false, 2.0));
  EXPECT_TRUE(std::isinf(number("1e400").second));
  EXPECT_EQ(number("1e-400").second, 0.0);
  EXPECT_EQ(body("return 9223372036854775807").body[0]->value->int_value, INT64_MAX);
  EXPECT_EQ(expr("-1"), "(u- 1)");
  // Beyond int64 the digits are kept: compile-time ints are exact (ir/lower_int.hpp).
  EXPECT_EQ(body("return 9223372036854775808").body[0]->value->int_text, "9223372036854775808");
  EXPECT_EQ(body("return 0x1_0000_0000_0000_0000").body[0]->value->int_text, "0x10000000000000000");
  EXPECT_TRUE(body("return 0x1_0000_0000_0000_0000").body[0]->value->is_int);
  expect_error("def f():\n    return 0777\n", 2, 12, "leading zeros");
  expect_error("def f():\n    return 1__0\n", 2, 12, "invalid number literal");
  expect_error("def f():\n    return 1abc\n", 2, 12, "invalid number literal");
  expect_error("def f():\n    return 1e+\n", 2, 12, "exponent");
  expect_error("def f():\n    return 0x\n", 2, 12, "no digits");
}

// ---------------------------------------------------------------- errors

TEST(ParseErrors, LocatedMessages) {
  expect_error("def f(x):\n    return x)\n", 2, 13, "unexpected ')'");
  expect_error("def f(x):\n    return (x\n", 2, 12, "'(' was never closed");
  expect_error("def f(x):\n    return [x)\n", 2, 14, "does not match");
  expect_error("def f(x):\n    s = 'abc\n", 2, 9, "unterminated string");
  expect_error("def f(x):\n    s = '''abc\n\n", 2, 9, "unterminated triple-quoted string");
  expect_error("def f(x):\n    a = 1\n      b = 2\n", 3, 7, "unexpected indentation");
  expect_error("def f(x):\n    if x:\n        a = 1\n      b = 2\n", 4, 7,
               "inconsistent indentation");
  expect_error("def f(x)\n    pass\n", 1, 9, "expected ':'");
  expect_error("def f(x):\npass\n", 2, 1, "expected an indented block");
  expect_error("def f(x):\n    if x\n        pass\n", 2, 9, "expected ':'");
  expect_error("def f(x):\n    return x +\n", 2, 15, "expected an expression, found end of line");
  expect_error("def f(x):\n    return a if b\n", 2, 18, "expected 'else'");
  expect_error("def f(x):\n    f(a=1, 2)\n", 2, 12, "positional argument follows keyword");
  expect_error("def f(x):\n    f(a=1, a=2)\n", 2, 12, "repeated");
  expect_error("def f(x):\n    x = 1 2\n", 2, 11, "unexpected '2'");
  expect_error("def f(x):\n    x = $\n", 2, 9, "unexpected character '$'");
  expect_error("def f(x):\n    x = a ! b\n", 2, 11, "'!'");
  expect_error("def f(x):\n    x = a \\ b\n", 2, 11, "line continuation");
  expect_error("x = 1\n", 1, 1, "expected 'def'");
}

TEST(ParseErrors, LinesAreOffsetByFirstLine) {
  expect_error("def f(x):\n    return x)\n", 42, 13, "unexpected ')'", 41);
  expect_error("  @k\n  def f(x):\n      return (x\n", 12, 14, "never closed", 10);
}

// ---------------------------------------------------------------- nasty inputs

TEST(ParseNasty, EmptyAndDecoratorOnly) {
  expect_error("", 1, 1, "expected a function definition");
  expect_error("   \n\n# only a comment\n", 4, 1, "expected a function definition");
  expect_error("@hawk.kernel\n", 2, 1, "expected a function definition");
  expect_error("@hawk.kernel(\n", 1, 13, "never closed");
  expect_some_error("def");
  expect_some_error("def f");
  expect_some_error("def f(");
  expect_some_error("def f():");
  expect_some_error("def f():\n");
  expect_some_error(")");
  expect_some_error("def f(]:\n  pass\n");
  expect_some_error("def f():\n  return ((((((]\n");
}

TEST(ParseNasty, DeepNesting) {
  const std::string parens =
      "def f():\n  return " + std::string(5000, '(') + "x" + std::string(5000, ')') + "\n";
  try {
    parse(parens);
    ADD_FAILURE();
  } catch (const ParseError& e) {
    EXPECT_EQ(e.line, 2);
    EXPECT_NE(e.message.find("nested too deeply"), std::string::npos);
  }
  std::string unary = "def f():\n  return ";
  for (int i = 0; i < 5000; ++i) unary += "-";
  unary += "x\n";
  EXPECT_THROW(parse(unary), ParseError);
  std::string nots = "def f():\n  return ";
  for (int i = 0; i < 5000; ++i) nots += "not ";
  EXPECT_THROW(parse(nots + "x\n"), ParseError);
  std::string pow = "def f():\n  return x";
  for (int i = 0; i < 5000; ++i) pow += "**x";
  EXPECT_THROW(parse(pow + "\n"), ParseError);
  std::string blocks = "def f():\n";
  for (int i = 1; i <= 300; ++i)
    blocks += std::string(static_cast<std::size_t>(i), ' ') + "if x:\n";
  blocks += std::string(301, ' ') + "pass\n";
  try {
    parse(blocks);
    ADD_FAILURE();
  } catch (const ParseError& e) {
    EXPECT_NE(e.message.find("nested too deeply"), std::string::npos);
  }
  std::string chain = "def f():\n  return x";
  for (int i = 0; i < 5000; ++i) chain += "+x";
  EXPECT_THROW(parse(chain + "\n"), ParseError);
  std::string calls = "def f():\n  return x";
  for (int i = 0; i < 5000; ++i) calls += "()";
  EXPECT_THROW(parse(calls + "\n"), ParseError);
  // Moderate nesting is fine.
  EXPECT_EQ(expr(std::string(50, '(') + "x" + std::string(50, ')')), "x");
  std::string elifs = "def f(x):\n  if x: pass\n";
  for (int i = 0; i < 100; ++i) elifs += "  elif x: pass\n";
  EXPECT_EQ(parse(elifs).body.size(), 1u);
}

TEST(ParseNasty, TabsCrlfNoTrailingNewline) {
  const FunctionDef f = parse("def f(x):\n\tif x:\n\t\treturn 1\n\treturn 2\n");
  ASSERT_EQ(f.body.size(), 2u);
  EXPECT_EQ(f.body[0]->body[0]->loc.col, 3);
  // Eight spaces equal one tab.
  EXPECT_EQ(parse("def f(x):\n\tif x:\n\t        return 1\n        return 2\n").body.size(), 2u);
  const FunctionDef g = parse("def f(x):\r\n    y = x\r\n    return (y +\r\n      1)\r\n");
  ASSERT_EQ(g.body.size(), 2u);
  EXPECT_EQ(g.body[1]->loc.line, 3);
  EXPECT_EQ(g.body[1]->loc.col, 5);
  EXPECT_EQ(parse("def f(x):\r    return x\r").body.size(), 1u);
  EXPECT_EQ(parse("def f(x):\n    return x").body.size(), 1u);
  EXPECT_EQ(parse("def f(x):\n    return x  # c").body.size(), 1u);
  EXPECT_EQ(parse("def f(x): return x").body.size(), 1u);
  const FunctionDef h = parse("def f(x):\n    y = 1 + \\\n        2\n    return y\n");
  EXPECT_EQ(dump(*h.body[0]->value), "(+ 1 2)");
  EXPECT_EQ(h.body[1]->loc.line, 4);
}

TEST(ParseNasty, NonAsciiAndControlBytes) {
  expect_error("def f(x):\n    \xc3\xa9 = 1\n", 2, 5, "non-ASCII");
  expect_error("def f(x):\n    a\xc3\xa9 = 1\n", 2, 6, "non-ASCII");
  expect_error("def f(x):\n    a = \xff\n", 2, 9, "non-ASCII");
  expect_error(std::string_view("def f(x):\n    a = \0\n", 20), 2, 9, "null byte");
  expect_error(std::string_view("def f(x):\n    a = '\0'\n", 22), 2, 10, "null byte");
  expect_error("def f(x):\n    a = \x01\n", 2, 9, "'\\x01'");
  // Non-ASCII inside strings and comments is fine.
  EXPECT_EQ(
      parse("def f(x):\n    '''d\xc3\xa9j\xc3\xa0'''  # \xe2\x9c\x93\n    return x\n").body.size(),
      2u);
}

}  // namespace
}  // namespace raptor::parse
