// The text of runtime/abi.h as a string, for the code generator (which pastes it into every
// translation unit it writes) and for the compile cache key. A test keeps it identical to the
// header file.
#pragma once

#include <string_view>

namespace raptor::runtime {

// abi.h, byte for byte.
std::string_view abi_header_source();

// abi_cuda.h, byte for byte.
std::string_view abi_cuda_header_source();

}  // namespace raptor::runtime
