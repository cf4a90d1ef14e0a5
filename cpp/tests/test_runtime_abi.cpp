// Tests that abi_header_source() is runtime/abi.h byte for byte.
#include <gtest/gtest.h>

#include <fstream>
#include <sstream>

#include "runtime/abi_source.hpp"

#ifndef RAPTOR_SOURCE_DIR
#error "compile the tests with -DRAPTOR_SOURCE_DIR=\"<repository root>\""
#endif

namespace raptor::runtime {
namespace {

TEST(RuntimeAbi, SourceMatchesHeader) {
  const std::string path = std::string(RAPTOR_SOURCE_DIR) + "/cpp/runtime/abi.h";
  std::ifstream in(path, std::ios::binary);
  ASSERT_TRUE(in) << "cannot read " << path;
  std::stringstream ss;
  ss << in.rdbuf();
  EXPECT_EQ(std::string(abi_header_source()), ss.str())
      << "cpp/runtime/abi_source.cpp is out of date with abi.h: regenerate it";
}

}  // namespace
}  // namespace raptor::runtime
