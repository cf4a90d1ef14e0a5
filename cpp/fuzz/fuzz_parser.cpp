// libFuzzer entry point for the kernel-source parser (parse/parser.hpp): feeds arbitrary bytes
// to parse_function. A raptor::ParseError is the expected way to refuse input; any other
// exception, crash, sanitizer report or hang is a bug.
#include <cstddef>
#include <cstdint>
#include <string_view>

#include "common/error.hpp"
#include "parse/parser.hpp"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string_view source(reinterpret_cast<const char*>(data), size);
  try {
    const raptor::parse::FunctionDef fn = raptor::parse::parse_function(source, 1);
    (void)fn;
  } catch (const raptor::ParseError&) {
  }
  return 0;
}
