// The text of runtime/abi.h as a string, for the code generator (which pastes it into every
// translation unit it writes) and for the compile cache key. A test keeps it identical to the
// header file.
#pragma once

#include <string_view>

namespace raptor::runtime {

// abi.h, byte for byte.
std::string_view abi_header_source();

// The error codes of abi.h (its `#define RAPTOR_OK` / `#define RAPTOR_ERR_*` lines, with
// their comments), which the CUDA translation units paste: the one definition of the codes.
std::string_view abi_error_codes_source();

// abi_cuda.h, byte for byte.
std::string_view abi_cuda_header_source();

// random.h, byte for byte (host units paste it when a kernel draws random numbers), and the
// same for CUDA units, after rp_math.h (the bit casts and logarithms it uses): their functions
// __device__, their #include lines dropped (NVRTC has no system headers; the CUDA prelude
// defines the integer types).
std::string_view random_header_source();
std::string_view random_device_source();

// rp_math.h, byte for byte: raptor's own exp, expm1, log, log1p and tanh, which every host unit
// pastes before its prelude (codegen/host_driver.cpp).
std::string_view math_header_source();

// rp_trig.h, byte for byte: raptor's own sin and cos, which the host units whose kernels call
// them paste after rp_math.h (codegen/host_driver.cpp).
std::string_view trig_header_source();

// rp_atan.h, byte for byte: raptor's own atan and atan2, which the host units whose kernels
// call them paste after rp_math.h (codegen/host_driver.cpp).
std::string_view atan_header_source();

// rp_pow.h, byte for byte: raptor's own pow, which the host units whose kernels call it paste
// after rp_math.h (codegen/host_driver.cpp).
std::string_view pow_header_source();

// rp_hypot.h, byte for byte: raptor's own hypot, which the host units whose kernels call it
// paste after rp_math.h (codegen/host_driver.cpp).
std::string_view hypot_header_source();

}  // namespace raptor::runtime
