// The tokenizer (see lexer.hpp). Start reading at `Lexer::run`: it walks the source once,
// measuring indentation at the start of each logical line and dispatching on the first character
// of each token. Every error is a raptor::ParseError at the offending character.
#include "parse/lexer.hpp"

#include <algorithm>
#include <array>
#include <climits>
#include <cstdio>

#include "common/error.hpp"

namespace raptor::parse {
namespace {

constexpr int kTabSize = 8;

bool is_ident_start(char c) { return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || c == '_'; }
bool is_digit(char c) { return c >= '0' && c <= '9'; }
bool is_ident_char(char c) { return is_ident_start(c) || is_digit(c); }
bool is_newline(char c) { return c == '\n' || c == '\r'; }

std::string render_char(char c) {
  const auto u = static_cast<unsigned char>(c);
  if (u >= 0x20 && u < 0x7f) return std::string("'") + c + "'";
  std::array<char, 8> buf{};
  std::snprintf(buf.data(), buf.size(), "'\\x%02x'", u);
  return std::string(buf.data());
}

// Operators and delimiters, longest first so that the first match is the longest one.
constexpr std::array<std::string_view, 47> kOperators = {
    "**=", "//=", ">>=", "<<=", "...", "->", ":=", "**", "//", ">>", "<<", "<=",
    ">=",  "==",  "!=",  "+=",  "-=",  "*=", "/=", "%=", "&=", "|=", "^=", "@=",
    "+",   "-",   "*",   "/",   "%",   "@",  "<",  ">",  "=",  "(",  ")",  "[",
    "]",   "{",   "}",   ",",   ":",   ".",  ";",  "&",  "|",  "^",  "~"};

class Lexer {
 public:
  Lexer(std::string_view src, int first_line) : src_(src), first_line_(first_line) {}

  std::vector<Token> run() {
    bool at_line_start = true;
    while (true) {
      if (at_line_start && brackets_.empty()) {
        if (!start_logical_line()) break;
        at_line_start = false;
      }
      skip_spaces();
      if (pos_ >= src_.size()) break;
      const char c = src_[pos_];
      if (c == '#') {
        skip_comment();
      } else if (is_newline(c)) {
        const Loc loc = loc_at(pos_);
        const std::size_t begin = pos_;
        consume_newline();
        if (brackets_.empty()) {
          push(TokKind::Newline, "", loc, begin, begin);
          at_line_start = true;
        }
      } else if (c == '\\') {
        const Loc loc = loc_at(pos_);
        ++pos_;
        if (pos_ >= src_.size())
          throw ParseError(loc.line, loc.col, "unexpected end of input after '\\'");
        if (!is_newline(src_[pos_])) {
          throw ParseError(loc.line, loc.col,
                           "unexpected character after line continuation character '\\'");
        }
        consume_newline();
      } else if (is_digit(c) || (c == '.' && pos_ + 1 < src_.size() && is_digit(src_[pos_ + 1]))) {
        lex_number();
      } else if (is_ident_start(c)) {
        lex_name_or_string();
      } else if (c == '"' || c == '\'') {
        lex_string(pos_, "");
      } else {
        lex_operator();
      }
    }
    finish();
    return std::move(tokens_);
  }

 private:
  Loc loc_at(std::size_t pos) const {
    const long long line = static_cast<long long>(line_) + first_line_ - 1;
    const long long col = static_cast<long long>(pos - line_start_) + 1;
    return Loc{static_cast<int>(std::clamp<long long>(line, INT_MIN, INT_MAX)),
               static_cast<int>(std::min<long long>(col, INT_MAX))};
  }

  [[noreturn]] void fail(std::size_t pos, const std::string& message) const {
    const Loc loc = loc_at(pos);
    throw ParseError(loc.line, loc.col, message);
  }

  void push(TokKind kind, std::string text, Loc loc, std::size_t begin, std::size_t end,
            std::string prefix = "") {
    tokens_.push_back(Token{kind, std::move(text), std::move(prefix), loc, begin, end});
  }

  // Consumes "\n", "\r\n" or "\r" at pos_ and starts a new line.
  void consume_newline() {
    if (src_[pos_] == '\r' && pos_ + 1 < src_.size() && src_[pos_ + 1] == '\n') ++pos_;
    ++pos_;
    ++line_;
    line_start_ = pos_;
  }

  void skip_spaces() {
    while (pos_ < src_.size() && (src_[pos_] == ' ' || src_[pos_] == '\t' || src_[pos_] == '\f')) {
      ++pos_;
    }
  }

  void skip_comment() {
    while (pos_ < src_.size() && !is_newline(src_[pos_])) {
      if (src_[pos_] == '\0') fail(pos_, "source contains a null byte");
      ++pos_;
    }
  }

  // Measures the indentation of the next non-blank line and emits INDENT/DEDENT tokens.
  // Returns false at end of input.
  bool start_logical_line() {
    while (true) {
      int width = 0;
      while (pos_ < src_.size()) {
        const char c = src_[pos_];
        if (c == ' ') {
          ++width;
        } else if (c == '\t') {
          width = (width / kTabSize + 1) * kTabSize;
        } else if (c == '\f') {
          width = 0;
        } else {
          break;
        }
        ++pos_;
        if (width > 100000) fail(pos_, "line indented too deeply");
      }
      if (pos_ >= src_.size()) return false;
      if (src_[pos_] == '#') {
        skip_comment();
        if (pos_ >= src_.size()) return false;
      }
      if (is_newline(src_[pos_])) {
        consume_newline();
        continue;  // blank or comment-only line: no tokens, no indentation change
      }
      indent(width);
      return true;
    }
  }

  void indent(int width) {
    const Loc loc = loc_at(pos_);
    if (indents_.empty()) {
      indents_.push_back(width);  // the first line sets the base indentation
      return;
    }
    if (width > indents_.back()) {
      indents_.push_back(width);
      push(TokKind::Indent, "", loc, pos_, pos_);
      return;
    }
    while (width < indents_.back()) {
      if (indents_.size() == 1) {
        fail(pos_, "inconsistent indentation: this line is indented less than the 'def' line");
      }
      indents_.pop_back();
      push(TokKind::Dedent, "", loc, pos_, pos_);
    }
    if (width != indents_.back()) {
      fail(pos_, "inconsistent indentation: unindent does not match any outer indentation level");
    }
  }

  void lex_number() {
    const std::size_t begin = pos_;
    auto digits = [&](auto is_valid) {
      // digits with single underscores between them; returns the number of digits read
      std::size_t n = 0;
      while (pos_ < src_.size()) {
        if (is_valid(src_[pos_])) {
          ++n;
          ++pos_;
        } else if (src_[pos_] == '_' && pos_ + 1 < src_.size() && is_valid(src_[pos_ + 1])) {
          ++pos_;
        } else {
          break;
        }
      }
      return n;
    };
    auto dec = [](char c) { return is_digit(c); };
    const char c0 = src_[pos_];
    const char c1 = pos_ + 1 < src_.size() ? src_[pos_ + 1] : '\0';
    if (c0 == '0' && (c1 == 'x' || c1 == 'X' || c1 == 'o' || c1 == 'O' || c1 == 'b' || c1 == 'B')) {
      pos_ += 2;
      if (pos_ < src_.size() && src_[pos_] == '_') ++pos_;
      std::size_t n = 0;
      if (c1 == 'x' || c1 == 'X') {
        n = digits(
            [](char c) { return is_digit(c) || (c >= 'a' && c <= 'f') || (c >= 'A' && c <= 'F'); });
      } else if (c1 == 'o' || c1 == 'O') {
        n = digits([](char c) { return c >= '0' && c <= '7'; });
      } else {
        n = digits([](char c) { return c == '0' || c == '1'; });
      }
      if (n == 0) fail(begin, "invalid number literal: no digits after the base prefix");
    } else {
      const std::size_t int_digits = digits(dec);
      bool is_float = false;
      if (pos_ < src_.size() && src_[pos_] == '.') {
        is_float = true;
        ++pos_;
        digits(dec);
      }
      if (pos_ < src_.size() && (src_[pos_] == 'e' || src_[pos_] == 'E')) {
        std::size_t p = pos_ + 1;
        if (p < src_.size() && (src_[p] == '+' || src_[p] == '-')) ++p;
        if (p < src_.size() && is_digit(src_[p])) {
          is_float = true;
          pos_ = p;
          digits(dec);
        } else {
          fail(begin, "invalid number literal: missing exponent digits");
        }
      }
      if (pos_ < src_.size() && (src_[pos_] == 'j' || src_[pos_] == 'J')) {
        is_float = true;
        ++pos_;
      }
      if (!is_float && int_digits > 1 && src_[begin] == '0') {
        const bool all_zero = std::all_of(src_.begin() + static_cast<std::ptrdiff_t>(begin),
                                          src_.begin() + static_cast<std::ptrdiff_t>(pos_),
                                          [](char c) { return c == '0' || c == '_'; });
        if (!all_zero) fail(begin, "leading zeros in integer literals are not permitted");
      }
    }
    if (pos_ < src_.size() && (is_ident_char(src_[pos_]) || src_[pos_] == '.')) {
      if (src_[pos_] != '.' || (pos_ + 1 < src_.size() && is_digit(src_[pos_ + 1]))) {
        fail(begin,
             "invalid number literal '" + std::string(src_.substr(begin, pos_ + 1 - begin)) + "'");
      }
    }
    push(TokKind::Number, std::string(src_.substr(begin, pos_ - begin)), loc_at(begin), begin,
         pos_);
  }

  void lex_name_or_string() {
    const std::size_t begin = pos_;
    while (pos_ < src_.size() && is_ident_char(src_[pos_])) ++pos_;
    if (pos_ < src_.size() && static_cast<unsigned char>(src_[pos_]) >= 0x80) {
      fail(pos_, "non-ASCII character in identifier (kernel identifiers must be ASCII)");
    }
    std::string text(src_.substr(begin, pos_ - begin));
    if (pos_ < src_.size() && (src_[pos_] == '"' || src_[pos_] == '\'') && text.size() <= 2) {
      std::string prefix;
      for (const char c : text)
        prefix += static_cast<char>(c >= 'A' && c <= 'Z' ? c - 'A' + 'a' : c);
      const bool valid = prefix == "r" || prefix == "b" || prefix == "f" || prefix == "u" ||
                         prefix == "rb" || prefix == "br" || prefix == "rf" || prefix == "fr";
      if (valid) {
        lex_string(begin, prefix);
        return;
      }
    }
    push(TokKind::Name, std::move(text), loc_at(begin), begin, pos_);
  }

  // Lexes a string literal whose prefix starts at `begin` and whose quote is at pos_.
  void lex_string(std::size_t begin, std::string prefix) {
    const Loc loc = loc_at(begin);
    const char quote = src_[pos_];
    const bool triple =
        pos_ + 2 < src_.size() && src_[pos_ + 1] == quote && src_[pos_ + 2] == quote;
    pos_ += triple ? 3 : 1;
    const std::size_t body = pos_;
    while (true) {
      if (pos_ >= src_.size()) {
        throw ParseError(loc.line, loc.col,
                         triple ? "unterminated triple-quoted string" : "unterminated string");
      }
      const char c = src_[pos_];
      if (c == '\0') fail(pos_, "source contains a null byte");
      if (c == '\\') {
        ++pos_;
        if (pos_ < src_.size() && is_newline(src_[pos_])) {
          consume_newline();
        } else if (pos_ < src_.size()) {
          ++pos_;
        }
        continue;
      }
      if (is_newline(c)) {
        if (!triple) throw ParseError(loc.line, loc.col, "unterminated string");
        consume_newline();
        continue;
      }
      if (c == quote) {
        if (!triple) break;
        if (pos_ + 2 < src_.size() && src_[pos_ + 1] == quote && src_[pos_ + 2] == quote) break;
      }
      ++pos_;
    }
    std::string text(src_.substr(body, pos_ - body));
    pos_ += triple ? 3 : 1;
    tokens_.push_back(Token{TokKind::String, std::move(text), std::move(prefix), loc, begin, pos_});
  }

  void lex_operator() {
    const char c = src_[pos_];
    for (const std::string_view op : kOperators) {
      if (src_.substr(pos_, op.size()) == op) {
        const Loc loc = loc_at(pos_);
        if (op == "(" || op == "[" || op == "{") {
          brackets_.push_back(pos_);
          bracket_locs_.push_back(loc);
        } else if (op == ")" || op == "]" || op == "}") {
          if (brackets_.empty()) fail(pos_, "unexpected '" + std::string(op) + "'");
          const char open = src_[brackets_.back()];
          const char want = open == '(' ? ')' : open == '[' ? ']' : '}';
          if (want != c) {
            fail(pos_, "closing '" + std::string(op) + "' does not match opening '" +
                           std::string(1, open) + "' at line " +
                           std::to_string(bracket_locs_.back().line) + ", column " +
                           std::to_string(bracket_locs_.back().col));
          }
          brackets_.pop_back();
          bracket_locs_.pop_back();
        }
        push(TokKind::Op, std::string(op), loc, pos_, pos_ + op.size());
        pos_ += op.size();
        return;
      }
    }
    if (c == '\0') fail(pos_, "source contains a null byte");
    if (static_cast<unsigned char>(c) >= 0x80) {
      fail(pos_,
           "unexpected non-ASCII character (kernel code outside strings and comments must be "
           "ASCII)");
    }
    if (c == '!') fail(pos_, "unexpected character '!' (did you mean '!=' or 'not'?)");
    fail(pos_, "unexpected character " + render_char(c));
  }

  void finish() {
    if (!brackets_.empty()) {
      const Loc loc = bracket_locs_.back();
      throw ParseError(loc.line, loc.col,
                       "'" + std::string(1, src_[brackets_.back()]) + "' was never closed");
    }
    const Loc loc = loc_at(pos_);
    if (!tokens_.empty() && tokens_.back().kind != TokKind::Newline &&
        tokens_.back().kind != TokKind::Dedent && tokens_.back().kind != TokKind::Indent) {
      push(TokKind::Newline, "", loc, pos_, pos_);
    }
    for (std::size_t i = 1; i < indents_.size(); ++i) push(TokKind::Dedent, "", loc, pos_, pos_);
    push(TokKind::End, "", loc, pos_, pos_);
  }

  std::string_view src_;
  int first_line_;
  std::size_t pos_ = 0;
  int line_ = 1;                       // 1-based line within the source
  std::size_t line_start_ = 0;         // offset of the current line's first byte
  std::vector<int> indents_;           // indentation widths; front() is the base level
  std::vector<std::size_t> brackets_;  // offsets of the open brackets
  std::vector<Loc> bracket_locs_;
  std::vector<Token> tokens_;
};

}  // namespace

std::vector<Token> tokenize(std::string_view source, int first_line) {
  return Lexer(source, first_line).run();
}

std::string describe(const Token& tok) {
  switch (tok.kind) {
    case TokKind::Name:
    case TokKind::Number:
    case TokKind::Op:
      return "'" + tok.text + "'";
    case TokKind::String:
      return "string literal";
    case TokKind::Newline:
      return "end of line";
    case TokKind::Indent:
      return "indentation";
    case TokKind::Dedent:
      return "unindent";
    case TokKind::End:
      break;
  }
  return "end of input";
}

}  // namespace raptor::parse
