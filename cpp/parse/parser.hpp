// The public entry point of the kernel-source parser: text of one Python function -> AST
// (parse/ast.hpp). The implementation is split over parser.cpp (functions and statements) and
// parse_expr.cpp (expressions), sharing the class in parser_impl.hpp; tokens come from lexer.hpp.
#pragma once

#include <string_view>

#include "parse/ast.hpp"

namespace raptor::parse {

// Parses the text of ONE Python function, as inspect.getsource returns it: optional decorator
// lines, then `def name(params): body`, possibly indented as a whole. `first_line` is the file
// line number of the first line of `source`; every Loc is in the file's numbering and columns are
// the user's real 1-based (byte) columns. Throws raptor::ParseError (common/error.hpp) on any
// syntax error; never anything else.
FunctionDef parse_function(std::string_view source, int first_line);

}  // namespace raptor::parse
