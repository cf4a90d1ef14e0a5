// Errors the compiler and runtime raise, with the context a user needs to act on them.
// `SourceError` points at the user's kernel, file, line and column; the bindings turn it
// into `hawk.KernelError`. `RuntimeError` carries a kernel or node name for launch-time
// failures (the bindings raise it as RuntimeError, or ValueError when `bad_value` is set).
#pragma once

#include <stdexcept>
#include <string>

namespace raptor {

struct SourceError : std::runtime_error {
  SourceError(std::string kernel_, std::string file_, int line_, int col_, std::string message_)
      : std::runtime_error(format(kernel_, file_, line_, col_, message_)),
        kernel(std::move(kernel_)),
        file(std::move(file_)),
        line(line_),
        col(col_),
        message(std::move(message_)) {}

  static std::string format(const std::string& kernel, const std::string& file, int line, int col,
                            const std::string& message) {
    std::string where = file.empty() ? std::string("<unknown>") : file;
    if (line > 0) where += ":" + std::to_string(line);
    if (col > 0) where += ":" + std::to_string(col);
    return "hawk: kernel '" + kernel + "' (" + where + "): " + message;
  }

  std::string kernel;
  std::string file;
  int line;
  int col;
  std::string message;
};

// A syntax error found before the kernel's name is known to the parser's caller; the
// front end rethrows it as a SourceError with the kernel's name.
struct ParseError : std::runtime_error {
  ParseError(int line_, int col_, std::string message_)
      : std::runtime_error(message_), line(line_), col(col_), message(std::move(message_)) {}
  int line;
  int col;
  std::string message;
};

}  // namespace raptor
