// The tokenizer for kernel source: turns the text of one Python function into a flat list of
// tokens (names, numbers, strings, operators, NEWLINE/INDENT/DEDENT) that parser.cpp reads.
// Start reading at `tokenize`.
//
// Indentation: the first logical line's indentation is the base level (a function nested in a
// class or another function keeps its indentation), so columns are the user's real columns.
// Tabs advance to the next multiple of 8. Columns are 1-based byte offsets in the line.
#pragma once

#include <cstddef>
#include <string>
#include <string_view>
#include <vector>

#include "parse/ast.hpp"

namespace raptor::parse {

enum class TokKind {
  Name,     // identifier or keyword; text is the identifier
  Number,   // numeric literal; text is the literal as written
  String,   // string literal; text is the body between the quotes, prefix kept in `prefix`
  Op,       // operator or delimiter; text is the operator ("+", "**=", "(", "->", ...)
  Newline,  // end of a logical line
  Indent,
  Dedent,
  End,  // end of input (always the last token)
};

struct Token {
  TokKind kind = TokKind::End;
  std::string text;
  std::string prefix;  // String: the lower-cased prefix ("", "r", "b", "f", "rb", ...)
  Loc loc;
  std::size_t begin = 0;  // byte offsets of the token in the source (end exclusive)
  std::size_t end = 0;
};

// Tokenizes `source`, whose first line is line `first_line` of the user's file. Throws
// raptor::ParseError on malformed input (unterminated string, bad indentation, unbalanced
// brackets, characters Python does not accept). The result always ends with an End token.
std::vector<Token> tokenize(std::string_view source, int first_line);

// A printable rendering of a token for error messages: "'foo'", "'('", "end of line", ...
std::string describe(const Token& tok);

}  // namespace raptor::parse
