// Tests for runtime/registry: add, find, the same build registered twice is kept once, two
// builds of one digest coexist (find gives the first), concurrent use.
#include <gtest/gtest.h>

#include <thread>
#include <vector>

#include "runtime/registry.hpp"

namespace raptor::runtime {
namespace {

TEST(RuntimeRegistry, AddFindRemove) {
  Registry r;
  EXPECT_EQ(r.find("abc"), nullptr);
  auto e1 = std::make_shared<KernelEntry>();
  e1->name = "one";
  auto e2 = std::make_shared<KernelEntry>();
  e2->name = "two";
  EXPECT_EQ(r.add("abc", e1), e1);
  EXPECT_EQ(r.add("abc", e2), e1);  // the first registration is kept
  EXPECT_EQ(r.find("abc")->name, "one");
  EXPECT_EQ(r.size(), 1u);
  EXPECT_TRUE(r.remove("abc"));
  EXPECT_FALSE(r.remove("abc"));
  EXPECT_THROW(r.add("x", nullptr), std::invalid_argument);
}

TEST(RuntimeRegistry, BuildsOfOneDigestCoexist) {
  // Two builds of one kernel (another shared object, here told apart by the symbol found in
  // it): each caller runs the build it registered; find(digest) gives the first.
  Registry r;
  auto first = std::make_shared<KernelEntry>();
  first->symbol = "k_abc";
  first->name = "first";
  auto second = std::make_shared<KernelEntry>();
  second->symbol = "k_abc_other_build";
  second->name = "second";
  EXPECT_EQ(r.add("abc", first), first);
  EXPECT_EQ(r.add("abc", second), second);  // not swapped for the first build
  EXPECT_EQ(r.find("abc"), first);
  EXPECT_EQ(r.builds("abc").size(), 2u);
  auto again = std::make_shared<KernelEntry>(*second);
  EXPECT_EQ(r.add("abc", again), second);  // the same build: the registered entry
  EXPECT_EQ(r.builds("abc").size(), 2u);
  EXPECT_EQ(r.size(), 1u);
  EXPECT_NE(build_identity(*first), build_identity(*second));
}

TEST(RuntimeRegistry, ConcurrentAddAndFind) {
  Registry r;
  std::vector<std::jthread> threads;
  for (int t = 0; t < 4; ++t) {
    threads.emplace_back([&r, t] {
      for (int i = 0; i < 500; ++i) {
        auto e = std::make_shared<KernelEntry>();
        e->name = std::to_string(i);
        r.add("k" + std::to_string(i), e);
        auto f = r.find("k" + std::to_string((i * 7 + t) % 500));
        if (f) {
          EXPECT_EQ(f->name, std::to_string((i * 7 + t) % 500));
        }
      }
    });
  }
  threads.clear();
  EXPECT_EQ(r.size(), 500u);
}

TEST(RuntimeRegistry, GlobalIsOneObject) { EXPECT_EQ(&global_registry(), &global_registry()); }

}  // namespace
}  // namespace raptor::runtime
