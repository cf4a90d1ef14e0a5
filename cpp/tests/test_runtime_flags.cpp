// Tests of how a host compile's flags are resolved (runtime/compiler.hpp): the shared-library
// flags are always given, first; CompileOptions::flags ($RAPTOR_CXXFLAGS) replaces only the
// optimization flags, and an unset or blank value means the defaults.
#include <gtest/gtest.h>

#include <string>

#include "runtime/compiler.hpp"

namespace raptor::runtime {
namespace {

std::string resolved(std::optional<std::string> flags) {
  CompileOptions o;
  o.flags = std::move(flags);
  return Compiler::resolve_flags(o);
}

TEST(RuntimeFlags, SharedLibraryFlagsAreAlwaysGivenFirst) {
  const std::string required = kRequiredHostFlags;
  for (const char* user : {"-O2", "-O1 -g", "-O0 -DNDEBUG"}) {
    const std::string r = resolved(std::string(user));
    EXPECT_EQ(r.rfind(required, 0), 0u) << r;  // a prefix: the user's flags can override -std
    EXPECT_NE(r.find(user), std::string::npos) << r;
    EXPECT_EQ(r.find("-march=native"), std::string::npos) << r;  // the defaults are replaced
  }
  EXPECT_NE(required.find("-shared"), std::string::npos);
  EXPECT_NE(required.find("-fPIC"), std::string::npos);
}

TEST(RuntimeFlags, UnsetOrBlankMeansTheDefaults) {
  const std::string defaults = std::string(kRequiredHostFlags) + " " + kDefaultHostFlags;
  EXPECT_EQ(resolved(std::nullopt), defaults);
  EXPECT_EQ(resolved(std::string("")), defaults);
  EXPECT_EQ(resolved(std::string(" \t ")), defaults);
  EXPECT_EQ(std::string(kDefaultHostFlags).find("-shared"), std::string::npos);
}

}  // namespace
}  // namespace raptor::runtime
