// ParamSource (runtime/bound.hpp): a Param bound to an array of any real NumPy element type is
// read as a double the way Python's float(value) reads it. Start at the table of cases below;
// the end-to-end check (bind, change the array in place, launch) is tests/test_params.py.
#include <gtest/gtest.h>

#include <cmath>
#include <cstdint>
#include <cstring>
#include <limits>
#include <stdexcept>

#include "runtime/bound.hpp"

namespace raptor::runtime {
namespace {

template <class T>
double read_as(std::string_view code, T value) {
  alignas(16) unsigned char buf[1 + sizeof(T)];
  std::memcpy(buf + 1, &value, sizeof value);  // misaligned on purpose: any alignment is read
  return read_param({0, buf + 1, param_element(code)});
}

double read_half(uint16_t bits) { return read_as<uint16_t>("f2", bits); }

TEST(ParamSource, IntegersReadAsDoubles) {
  EXPECT_EQ(read_as<int8_t>("i1", -128), -128.0);
  EXPECT_EQ(read_as<int16_t>("i2", 32767), 32767.0);
  EXPECT_EQ(read_as<int32_t>("i4", -7), -7.0);
  EXPECT_EQ(read_as<int64_t>("i8", -(int64_t{1} << 62)), -std::ldexp(1.0, 62));
  EXPECT_EQ(read_as<uint8_t>("u1", 255), 255.0);
  EXPECT_EQ(read_as<uint16_t>("u2", 65535), 65535.0);
  EXPECT_EQ(read_as<uint32_t>("u4", 4294967295u), 4294967295.0);
  // 2^64 - 1 rounds to the nearest double, 2^64, as float(np.uint64(2**64 - 1)) does
  EXPECT_EQ(read_as<uint64_t>("u8", std::numeric_limits<uint64_t>::max()), std::ldexp(1.0, 64));
  // 2^53 + 1 is not a double: round to nearest even, 2^53
  EXPECT_EQ(read_as<int64_t>("i8", (int64_t{1} << 53) + 1), std::ldexp(1.0, 53));
}

TEST(ParamSource, FloatsReadExactly) {
  EXPECT_EQ(read_as<float>("f4", 0.1f), static_cast<double>(0.1f));
  EXPECT_EQ(read_as<double>("f8", 0.1), 0.1);
  EXPECT_EQ(read_as<long double>("g", 1.5L), 1.5);
  EXPECT_TRUE(std::signbit(read_as<double>("f8", -0.0)));
  EXPECT_TRUE(std::isnan(read_as<float>("f4", std::numeric_limits<float>::quiet_NaN())));
}

TEST(ParamSource, HalvesReadExactly) {
  EXPECT_EQ(read_half(0x3c00), 1.0);
  EXPECT_EQ(read_half(0x3e00), 1.5);
  EXPECT_EQ(read_half(0xc000), -2.0);
  EXPECT_EQ(read_half(0x7bff), 65504.0);               // the largest half
  EXPECT_EQ(read_half(0x0400), std::ldexp(1.0, -14));  // the smallest normal
  EXPECT_EQ(read_half(0x0001), std::ldexp(1.0, -24));  // the smallest subnormal
  EXPECT_EQ(read_half(0x03ff), 1023 * std::ldexp(1.0, -24));
  EXPECT_EQ(read_half(0x3555), 1365 * std::ldexp(1.0, -12));  // 0.33325..., nearest to 1/3
  EXPECT_EQ(read_half(0x7c00), std::numeric_limits<double>::infinity());
  EXPECT_EQ(read_half(0xfc00), -std::numeric_limits<double>::infinity());
  EXPECT_TRUE(std::isnan(read_half(0x7e00)));
  EXPECT_TRUE(std::signbit(read_half(0x8000)));
  EXPECT_EQ(read_half(0x8000), 0.0);
}

TEST(ParamSource, UnknownElementTypesAreRefused) {
  for (const char* code : {"b1", "c16", "O", "f16", "", "i3"})
    EXPECT_THROW(param_element(code), std::invalid_argument) << code;
}

}  // namespace
}  // namespace raptor::runtime
